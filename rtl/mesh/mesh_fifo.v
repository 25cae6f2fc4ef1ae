// mesh_fifo: the router's input FIFO (and the config chain's stage buffer).
//
// Handshake: a beat moves on in_* when in_valid_i && in_ready_o, on out_* when
// out_valid_o && out_ready_i. in_ready_o = !full depends only on state (no combinational
// path from out_ready_i), so chains of FIFOs never build long ready paths.
// With Bypass = 1 an empty FIFO passes its input straight to its output in the same cycle
// (out_valid_o follows in_valid_i), which is what lets a wavelet cross an idle router in one
// cycle; a bypassed beat that is not taken is stored. With Bypass = 0 the output is
// registered. Not for clock crossing; no almost-full.
`default_nettype none

module mesh_fifo #(
  parameter int unsigned Width = 37,  // beat width (a wavelet is 37 bits)
  parameter int unsigned Depth = 2,   // entries; 2 sustains one beat per cycle with in_ready = !full
  parameter bit Bypass = 1'b1         // 1: an empty FIFO is combinationally transparent
) (
  input  wire              clk_i,
  input  wire              rst_ni,
  input  wire              in_valid_i,
  input  wire [Width-1:0]  in_data_i,
  output wire              in_ready_o,
  output wire              out_valid_o,
  output wire [Width-1:0]  out_data_o,
  input  wire              out_ready_i,
  output wire              empty_o     // nothing stored (a bypassing beat is not stored)
);
  localparam int unsigned PtrW = (Depth > 1) ? $clog2(Depth) : 1;
  localparam int unsigned CntW = $clog2(Depth + 1);
  localparam logic [PtrW-1:0] LastPtr = PtrW'(Depth - 1);
  localparam logic [CntW-1:0] Full = CntW'(Depth);

  logic [Width-1:0] mem_q [Depth];
  logic [PtrW-1:0]  rd_q, rd_d, wr_q, wr_d;
  logic [CntW-1:0]  cnt_q, cnt_d;
  logic             push, pop, empty, bypass;

  assign empty = (cnt_q == '0);
  assign bypass = Bypass && empty;
  assign in_ready_o = (cnt_q != Full);
  assign out_valid_o = bypass ? in_valid_i : !empty;
  assign out_data_o = bypass ? in_data_i : mem_q[rd_q];
  assign empty_o = empty;

  always_comb begin
    push = in_valid_i && in_ready_o && !(bypass && out_ready_i);
    pop = !empty && out_ready_i;
    rd_d = rd_q;
    wr_d = wr_q;
    cnt_d = cnt_q;
    if (push) wr_d = (wr_q == LastPtr) ? '0 : wr_q + 1'b1;
    if (pop) rd_d = (rd_q == LastPtr) ? '0 : rd_q + 1'b1;
    if (push && !pop) cnt_d = cnt_q + 1'b1;
    else if (pop && !push) cnt_d = cnt_q - 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_q <= '0;
      wr_q <= '0;
      cnt_q <= '0;
    end else begin
      rd_q <= rd_d;
      wr_q <= wr_d;
      cnt_q <= cnt_d;
    end
  end

  // Storage has no reset (it is qualified by cnt_q) so it can map to LUT RAM.
  always_ff @(posedge clk_i) begin
    if (push) mem_q[wr_q] <= in_data_i;
  end

`ifdef FORMAL
  // No loss, duplication or reordering: pick any input beat number f_n (anyconst); when
  // it enters remember its data; the f_n-th beat to leave must carry the same data.
  // Beat numbers are counted mod 2^8; the FIFO holds far fewer, so no aliasing.
  reg f_past_valid = 1'b0;
  always @(posedge clk_i) f_past_valid <= 1'b1;
  always @(*) if (!f_past_valid) assume (!rst_ni);

  (* anyconst *) reg [7:0] f_n;
  reg [7:0] f_in_cnt, f_out_cnt;
  reg [Width-1:0] f_data;
  reg f_in, f_out;
  wire f_acc = in_valid_i && in_ready_o;
  wire f_ret = out_valid_o && out_ready_i;
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_in_cnt <= 0; f_out_cnt <= 0; f_in <= 0; f_out <= 0; f_data <= 0;
    end else begin
      if (f_acc) f_in_cnt <= f_in_cnt + 1;
      if (f_ret) f_out_cnt <= f_out_cnt + 1;
      if (f_acc && f_in_cnt == f_n && !f_in) begin f_in <= 1; f_data <= in_data_i; end
      if (f_ret && f_out_cnt == f_n && !f_out) f_out <= 1;
    end
  end
  // bound the run so the 8-bit beat counters never wrap (2^8 beats is far past any depth)
  always @(*) if (rst_ni) assume (f_in_cnt != 8'hff);
  wire [7:0] f_occ = f_in_cnt - f_out_cnt;
  wire [7:0] f_pos = f_n - f_out_cnt;             // tag's distance from the head
  wire [PtrW:0] f_slot_w = {1'b0, rd_q} + f_pos[PtrW:0];
  wire [PtrW-1:0] f_slot = (f_slot_w >= Depth) ? PtrW'(f_slot_w - Depth) : f_slot_w[PtrW-1:0];
  always @(*) if (rst_ni && f_past_valid) begin
    // structural invariants
    assert (cnt_q <= Full);
    assert (f_occ == {{(8-CntW){1'b0}}, cnt_q});
    assert (wr_q == ((rd_q + cnt_q >= Depth) ? PtrW'(rd_q + cnt_q - Depth) : PtrW'(rd_q + cnt_q)));
    assert (f_out_cnt <= f_in_cnt);
    // the tag: it enters once, leaves once, in order, unchanged
    assert (f_in == (f_in_cnt > f_n));
    assert (f_out == (f_out_cnt > f_n));
    if (f_in && !f_out) assert (mem_q[f_slot] == f_data);
    if (f_ret && f_out_cnt == f_n) begin
      if (f_in) assert (out_data_o == f_data);
      else assert (f_acc && in_data_i == out_data_o);  // bypassing in this very cycle
    end
    if (!f_in) assert (!f_out);
  end
`ifdef FORMAL_BROKEN
  // Deliberately false: claims the FIFO can never be full. Must fail.
  always @(*) if (rst_ni) assert (cnt_q != Full);
`endif
`endif
endmodule

`default_nettype wire
