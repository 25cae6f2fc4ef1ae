// pe_fpu_share - one floating-point unit (pe_tiny_fmac) shared by the N PEs of a
// pe_micro_mt, as a cluster shares an FPU: a PE acquires it (req_i, held), writes the
// operand parts over a 16-bit port, starts an fmac or an add, waits for done, reads the two
// result halves and releases it. The PEs drive the operand port in turn (only the owner
// writes or starts), so it is one common port; only the requests and grants are per PE.
// Requests are granted round-robin from the last owner, one owner at a time (a PE holds it
// for one operation: about 48 to 62 cycles of the FMAC plus ~10 of its own).
//
// Operand parts (sel): 0 a[15:0], 1 a[31:16] (add only), 2 b (bf16), 3 c[15:0], 4 c[31:16].
// The FMAC samples the staged operands at start; its result stays on y_o from done until the
// next start (its registers do not change while idle), so no result register is needed.
`default_nettype none

module pe_fpu_share #(
  parameter int unsigned N = 4,  // PEs sharing the unit
  parameter bit Tiny = 1'b1      // pe_tiny_fmac (~290 LUT4, ~48 cycles an fmac);
                                 // 0: pe_lite_fmac (~490 LUT4, ~12 cycles)
) (
  input  wire          clk_i,
  input  wire          rst_ni,
  input  wire [N-1:0]  req_i,
  output wire [N-1:0]  gnt_o,
  input  wire          we_i,
  input  wire [2:0]    sel_i,
  input  wire [15:0]   d_i,
  input  wire          start_i,
  input  wire          add_i,
  output wire          done_o,   // to every PE: only the owner looks at it
  input  wire          hsel_i,
  output wire [15:0]   y_o
);
  localparam int unsigned IW = (N > 1) ? $clog2(N) : 1;

  logic  [IW-1:0] own_q, own_d;
  logic           busy_q, busy_d;
  logic           done_q, done_d;
  logic  [IW-1:0] nxt;  // round robin: the first requester after the last owner
  logic           any;
  wire            start = busy_q && start_i;
  wire            wr = busy_q && we_i;
  logic           f_done;
  logic           f_ready;
  logic [31:0]    f_y;

  always_comb begin
    nxt = own_q;
    any = 1'b0;
    for (int unsigned k = N; k >= 1; k--) begin
      if (req_i[(32'(own_q) + k) % N]) begin
        nxt = IW'((32'(own_q) + k) % N);
        any = 1'b1;
      end
    end
    own_d = own_q;
    busy_d = busy_q;
    if (!busy_q) begin
      if (any) begin
        own_d = nxt;
        busy_d = 1'b1;
      end
    end else if (!req_i[own_q]) begin
      busy_d = 1'b0;
    end
    done_d = done_q;
    if (start || !busy_q) done_d = 1'b0;
    else if (f_done) done_d = 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      own_q <= '0;
      busy_q <= 1'b0;
      done_q <= 1'b0;
    end else begin
      own_q <= own_d;
      busy_q <= busy_d;
      done_q <= done_d;
    end
  end

  if (Tiny) begin : g_tiny
    // the parts go straight into the FMAC's registers (its Port): no staging registers here
    pe_tiny_fmac #(.Port(1'b1)) u_fmac (
      .clk_i  (clk_i),
      .rst_ni (rst_ni),
      .start_i(start),
      .add_i  (add_i),
      .a_i    (32'd0),
      .b_i    (16'd0),
      .c_i    (32'd0),
      .we_i   (wr),
      .sel_i  (sel_i),
      .d_i    (d_i),
      .ready_o(f_ready),
      .done_o (f_done),
      .y_o    (f_y)
    );
  end else begin : g_lite
    // the operands staged here (no reset: the owner writes every part it uses first)
    logic [31:0] a_q, a_d, c_q, c_d;
    logic [15:0] b_q, b_d;
    always_comb begin
      a_d = a_q;
      b_d = b_q;
      c_d = c_q;
      if (wr) begin
        case (sel_i)
          3'd0: a_d[15:0] = d_i;
          3'd1: a_d[31:16] = d_i;
          3'd2: b_d = d_i;
          3'd3: c_d[15:0] = d_i;
          default: c_d[31:16] = d_i;
        endcase
      end
    end
    always_ff @(posedge clk_i) begin
      a_q <= a_d;
      b_q <= b_d;
      c_q <= c_d;
    end
    pe_lite_fmac u_fmac (
      .clk_i  (clk_i),
      .rst_ni (rst_ni),
      .start_i(start),
      .add_i  (add_i),
      .a_i    (a_q),
      .b_i    (b_q),
      .c_i    (c_q),
      .ready_o(f_ready),
      .done_o (f_done),
      .y_o    (f_y)
    );
  end
  wire unused_ready = f_ready;

  for (genvar g = 0; g < N; g++) begin : g_gnt
    assign gnt_o[g] = busy_q && own_q == IW'(g);
  end
  assign done_o = done_q;
  assign y_o = hsel_i ? f_y[31:16] : f_y[15:0];
endmodule

`default_nettype wire
