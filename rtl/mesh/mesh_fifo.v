// mesh_fifo: the router's input FIFO (and the config chain's stage buffer).
//
// Handshake: a beat moves on in_* when in_valid_i && in_ready_o, on out_* when
// out_valid_o && out_ready_i. in_ready_o = !full depends only on state (no combinational
// path from out_ready_i), so chains of FIFOs never build long ready paths.
// With Bypass = 1 an empty FIFO passes its input straight to its output in the same cycle
// (out_valid_o follows in_valid_i), which is what lets a wavelet cross an idle router in one
// cycle; a bypassed beat that is not taken is stored. With Bypass = 0 the output is
// registered. Not for clock crossing; no almost-full.
// Storage: flip-flops with an asynchronous read for small depths; from 16 entries on
// (UseRam) a block RAM with a registered read of the next head (the host port's COLLECT
// buffer: 256 x 32 bits in flip-flops was 6,900 LUT4 + 8,200 FF on the iCE40, in EBR it is
// 2 EBR). Both give the same outputs in every cycle (the RAM variant forwards a word written
// into the head slot in the cycle it is read).
`default_nettype none

module mesh_fifo #(
  parameter int unsigned Width = 37,  // beat width (a wavelet is 37 bits)
  parameter int unsigned Depth = 2,   // entries; 2 sustains one beat per cycle with in_ready = !full
  parameter bit Bypass = 1'b1,        // 1: an empty FIFO is combinationally transparent
  parameter bit UseRam = (Depth >= 16)  // block RAM storage (same cycle behaviour)
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
  logic [Width-1:0] head;

  assign empty = (cnt_q == '0);
  assign bypass = Bypass && empty;
  assign in_ready_o = (cnt_q != Full);
  assign out_valid_o = bypass ? in_valid_i : !empty;
  assign out_data_o = bypass ? in_data_i : head;
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

  // Storage has no reset (it is qualified by cnt_q) so it can map to RAM. One registered
  // entry loads its input in every cycle it is empty, whether a beat comes or not: its
  // enable is then a register's (no path from in_valid_i into the 37 enables, the end of a
  // router's bus path in mesh_router_lean); what it holds while empty is never shown.
  localparam bit LoadEmpty = (Depth == 1) && !Bypass && !UseRam;
  wire load = LoadEmpty ? empty : push;
  always_ff @(posedge clk_i) begin
    if (load) mem_q[wr_q] <= in_data_i;
  end

  if (UseRam) begin : g_ram
    // head = the word in slot rd_q after the previous cycle's write: read slot rd_d this
    // cycle (registered read, old data on a same-slot write) and forward a word written
    // into that slot in the same cycle.
    logic [Width-1:0] rdata_q, fwd_data_q;
    logic             fwd_q;
    always_ff @(posedge clk_i) begin
      rdata_q <= mem_q[rd_d];
      fwd_data_q <= in_data_i;
    end
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) fwd_q <= 1'b0;
      else fwd_q <= push && (wr_q == rd_d);
    end
    assign head = fwd_q ? fwd_data_q : rdata_q;
  end else begin : g_ff
    assign head = mem_q[rd_q];
  end

`ifdef FORMAL
  // No loss, duplication, corruption or reordering. The environment tags one accepted beat
  // of its choice (f_pick, a free input); the proof tracks the tag's distance from the head
  // (f_pos) and requires: it sits in the slot f_pos after rd_q while stored, it leaves
  // exactly once, unchanged, and only after every beat accepted before it (f_pos == 0).
  logic f_past_valid = 1'b0;
  always_ff @(posedge clk_i) f_past_valid <= 1'b1;
  always_comb if (!f_past_valid) assume (!rst_ni);

  wire f_pick;                       // unconstrained: which beat to tag
  logic f_in, f_out;                 // tag accepted / tag delivered
  logic [CntW-1:0] f_pos;            // beats ahead of the tag while it is stored
  logic [Width-1:0] f_data;
  wire f_acc = in_valid_i && in_ready_o;
  wire f_ret = out_valid_o && out_ready_i;
  wire f_tag_now = f_acc && f_pick && !f_in;
  wire [PtrW:0] f_slot_w = (PtrW+1)'(32'(rd_q) + 32'(f_pos));
  wire [PtrW-1:0] f_slot = (f_slot_w >= (PtrW+1)'(Depth)) ? PtrW'(f_slot_w - Depth) : f_slot_w[PtrW-1:0];
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      f_in <= 1'b0; f_out <= 1'b0; f_pos <= '0; f_data <= '0;
    end else begin
      if (f_tag_now) begin
        f_in <= 1'b1;
        f_data <= in_data_i;
        // position among stored beats after this cycle's pop; bypassed and taken: gone
        f_pos <= cnt_q - (pop ? 1'b1 : 1'b0);
        if (bypass && out_ready_i) f_out <= 1'b1;
      end else if (f_in && !f_out && f_ret) begin
        if (f_pos == '0) f_out <= 1'b1;
        else f_pos <= f_pos - 1'b1;
      end
    end
  end
  always_comb if (rst_ni && f_past_valid) begin
    assert (cnt_q <= Full);
    assert (rd_q <= LastPtr);
    assert (wr_q == ((32'(rd_q) + 32'(cnt_q) >= Depth) ? PtrW'(32'(rd_q) + 32'(cnt_q) - Depth)
                                                         : PtrW'(32'(rd_q) + 32'(cnt_q))));
    if (!f_in) assert (!f_out);
    if (f_in && !f_out) begin
      assert (f_pos < cnt_q);                 // still stored: not lost
      assert (mem_q[f_slot] == f_data);       // and unchanged
    end
    // it leaves only from the head, with its own data; a bypassed tag leaves at once
    if (f_in && !f_out && f_ret && f_pos == '0) assert (out_data_o == f_data);
    if (f_tag_now && bypass && out_ready_i) assert (out_data_o == in_data_i);
  end
  // after delivery no later output can be the tag again: guaranteed by f_out being final
  // and f_pos counting only beats ahead of it (a duplicate would need f_pos to go below 0).
  // Reachability (make formal checks every cover is hit, so the assertions above are not
  // vacuous): the FIFO fills, a stored tag leaves the head of a full FIFO, and,
  // deeper than one entry, it takes and gives a beat in one cycle.
  always_comb if (rst_ni && f_past_valid) begin
    cover (cnt_q == Full);
    cover (f_in && !f_out && f_ret && f_pos == '0 && cnt_q == Full);
    if (Depth > 1) cover (push && pop);
  end
`ifdef FORMAL_BROKEN
  // Deliberately false: claims the FIFO can never be full. Must fail.
  always_comb if (rst_ni && f_past_valid) assert (cnt_q != Full);
`endif
`endif
endmodule

`default_nettype wire
