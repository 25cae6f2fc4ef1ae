// pe_fpu_share - one floating-point unit (pe_tiny_fmac) shared by the N PEs of a
// pe_micro_mt, as a cluster shares an FPU: a PE acquires it (fpu_req, held), writes the
// operand parts over a 16-bit port, starts an fmac or an add, waits for done, reads the two
// result halves and releases it. The PEs drive the operand port in turn (only the owner
// writes or starts), so it is one common port; only the requests and grants are per PE. Requests are granted round-robin from the last owner, one owner at a time
// (a PE holds it for one operation: about 48 to 62 cycles of the FMAC plus ~10 of its own).
//
// Operand parts (sel): 0 a[15:0], 1 a[31:16] (add only), 2 b (bf16), 3 c[15:0], 4 c[31:16].
// The FMAC samples the staged operands at start; its result stays on y_o from done until the
// next start (its registers do not change while idle), so no result register is needed.
`default_nettype none

module pe_fpu_share #(
  parameter int unsigned N = 4,
  parameter bit Tiny = 1'b1  // pe_tiny_fmac (~290 LUT4, ~48 cycles an fmac); 0: pe_lite_fmac (~490, ~12)
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

  reg  [IW-1:0] own_q;
  reg           busy_q;
  reg           done_q;
  reg  [31:0]   a_q, c_q;
  reg  [15:0]   b_q;

  // round-robin: the first requester after the last owner
  reg  [IW-1:0] nxt;
  reg           any;
  integer k;
  always @(*) begin
    nxt = own_q;
    any = 1'b0;
    for (k = N; k >= 1; k = k - 1) begin
      if (req_i[(32'(own_q) + k) % N]) begin
        nxt = IW'((32'(own_q) + k) % N);
        any = 1'b1;
      end
    end
  end

  wire        o_we = we_i;
  wire [2:0]  o_sel = sel_i;
  wire [15:0] o_d = d_i;
  wire        o_start = busy_q && start_i;
  wire        f_done;
  wire        f_ready;
  wire [31:0] f_y;

  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      own_q <= '0;
      busy_q <= 1'b0;
      done_q <= 1'b0;
    end else begin
      if (!busy_q) begin
        if (any) begin
          own_q <= nxt;
          busy_q <= 1'b1;
        end
      end else if (!req_i[own_q]) begin
        busy_q <= 1'b0;
      end
      if (o_start || !busy_q) done_q <= 1'b0;
      else if (f_done) done_q <= 1'b1;
    end
  end
  // pe_tiny_fmac: the parts go straight into the FMAC's registers (its Port), no staging
  // registers here (80 flip-flops)
  localparam bit Direct = Tiny;
  if (Direct) begin : g_direct
    always @(*) begin
      a_q = '0;
      b_q = '0;
      c_q = '0;
    end
  end else begin : g_stage
    always @(posedge clk_i) begin
      if (busy_q && o_we) begin
        case (o_sel)
          3'd0: a_q[15:0] <= o_d;
          3'd1: a_q[31:16] <= o_d;
          3'd2: b_q <= o_d;
          3'd3: c_q[15:0] <= o_d;
          default: c_q[31:16] <= o_d;
        endcase
      end
    end
  end

  if (Tiny) begin : g_tiny
    pe_tiny_fmac #(.Port(Direct)) u_fmac (
      .clk_i  (clk_i),
      .rst_ni (rst_ni),
      .start_i(o_start),
      .add_i  (add_i),
      .a_i    (a_q),
      .b_i    (b_q),
      .c_i    (c_q),
      .we_i   (busy_q && o_we),
      .sel_i  (o_sel),
      .d_i    (o_d),
      .ready_o(f_ready),
      .done_o (f_done),
      .y_o    (f_y)
    );
  end else begin : g_lite
    pe_lite_fmac u_fmac (
      .clk_i  (clk_i),
      .rst_ni (rst_ni),
      .start_i(o_start),
      .add_i  (add_i),
      .a_i    (a_q),
      .b_i    (b_q),
      .c_i    (c_q),
      .ready_o(f_ready),
      .done_o (f_done),
      .y_o    (f_y)
    );
  end
  wire unused = f_ready;

  genvar g;
  generate
    for (g = 0; g < N; g = g + 1) begin : g_gnt
      assign gnt_o[g] = busy_q && own_q == IW'(g);
    end
  endgenerate
  assign done_o = done_q;
  assign y_o = hsel_i ? f_y[31:16] : f_y[15:0];
endmodule

`default_nettype wire
