// pe_queue - the PE's input queues: NumQueues FIFOs of QueueDepth wavelets and the 16-entry
// color -> queue map (docs/architecture.md 4.1). Every PE keeps its input queues here.
//
// Input: rx_valid_i & rx_ready_o takes rx_data_i for the queue its color maps to;
// color_ready_o[c] says that color c's queue has space (the router requests the local
// output only for ready colors, so one full queue does not block the others). Ready depends
// only on registered state. Output: every queue's head is visible (head_valid_o,
// head_data_o); pop_i removes the head of queue pop_q_i (at most one pop per cycle).
// The map resets to the firmware convention: color 0 -> queue 0 (BCAST), 1-2 -> 1 (RR),
// 3-4 -> 2 (CR), others -> 3, each modulo NumQueues.
//
// A PE that keeps the payloads elsewhere (pe_lite: in its DRAM; pe_micro_mt: all of the
// wavelet, in its S RAM, Width 0) stores only the top Width bits of a wavelet here and
// addresses its payload by slot, queue * QueueDepth + pointer: push_q_o/push_ptr_o name the
// slot rx_data_i goes to, head_ptr_o each head's slot, count_o each queue's fill. RegReady
// makes color_ready_o a register, computed from the next cycle's fill, the map and hold_i
// (the caller takes no wavelet in the next cycle).
// pe_micro_mt's timing, for the iCE40 board: Lookahead reads the map a cycle ahead, at the
// color the router shows next (next_color_i), so rx_ready_o is that queue's registered room
// bit and no path runs from the router's bus through the map into its take logic (only
// rx_ready_o, for the wavelet on rx_data: color_ready_o is 0). StagedPush: a taken wavelet
// enters its queue only when the caller has moved it into its memory (push_i, into queue
// push_q_i: the push_q_o of its take); hold_i keeps ready low meanwhile.
`default_nettype none

module pe_queue #(
  parameter int unsigned NumQueues = 4,   // input queues, 1..16
  parameter int unsigned QueueDepth = 8,  // wavelets per queue, >= 2
  parameter int unsigned Width = 37,      // top bits of a wavelet kept, 0..37 (pe_lite: 5)
  parameter bit RegReady = 1'b0,          // color_ready_o registered (pe_lite's timing)
  parameter bit Lookahead = 1'b0,         // the map read a cycle ahead (pe_micro_mt's timing;
                                          // needs RegReady)
  parameter bit StagedPush = 1'b0,        // taken wavelets enter at push_i (pe_micro_mt's S)
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1,
  localparam int unsigned PtrW = $clog2(QueueDepth),
  localparam int unsigned CntW = $clog2(QueueDepth + 1),
  localparam int unsigned HeadW = (Width > 0) ? NumQueues * Width : 1
) (
  input  wire                       clk_i,
  input  wire                       rst_ni,
  input  wire                       rx_valid_i,
  input  wire [36:0]                rx_data_i,
  output wire                       rx_ready_o,
  output wire [15:0]                color_ready_o,
  input  wire                       hold_i,        // RegReady only
  input  wire [3:0]                 next_color_i,  // Lookahead only
  input  wire                       push_i,        // StagedPush only
  input  wire [QW-1:0]              push_q_i,      // StagedPush only
  output wire [QW-1:0]              push_q_o,
  output wire [PtrW-1:0]            push_ptr_o,
  input  wire                       map_we_i,
  input  wire [3:0]                 map_addr_i,
  input  wire [QW-1:0]              map_wdata_i,
  output wire [QW-1:0]              map_rdata_o,
  output wire [NumQueues-1:0]       head_valid_o,
  output wire [HeadW-1:0]           head_data_o,
  output wire [NumQueues*PtrW-1:0]  head_ptr_o,
  output wire [NumQueues*CntW-1:0]  count_o,
  input  wire                       pop_i,
  input  wire [QW-1:0]              pop_q_i,
  output wire                       empty_o
);
  // a 4:1 multiplexer in the form that fits two 4-input LUTs, a 16:1 of five (mesh_route's),
  // and the map's read with them (Lookahead)
  function automatic logic mux4(input logic [3:0] d, input logic [1:0] s);
    logic l;
    l = s[1] ? s[0] : (s[0] ? d[1] : d[0]);
    mux4 = s[1] ? (l ? d[3] : d[2]) : l;
  endfunction
  function automatic logic mux16(input logic [15:0] d, input logic [3:0] s);
    mux16 = mux4({mux4(d[15:12], s[1:0]), mux4(d[11:8], s[1:0]), mux4(d[7:4], s[1:0]),
                  mux4(d[3:0], s[1:0])}, s[3:2]);
  endfunction
  function automatic logic [QW-1:0] map_rd(input logic [16*QW-1:0] m, input logic [3:0] c);
    logic [15:0] d;
    for (int unsigned b = 0; b < QW; b++) begin
      for (int unsigned k = 0; k < 16; k++) d[k] = m[k*QW + b];
      map_rd[b] = mux16(d, c);
    end
  endfunction

  logic [QW-1:0]    map_q [0:15];
  logic [PtrW-1:0]  rd_q [0:NumQueues-1];
  logic [PtrW-1:0]  wr_q [0:NumQueues-1];
  logic [CntW-1:0]  cnt_q [0:NumQueues-1];

  if (Lookahead && !RegReady) begin : g_bad_ahead
    $error("pe_queue: Lookahead needs RegReady (its ready is a register)");
  end

  logic [QW-1:0] rx_q;  // the queue of the wavelet at rx
  logic [CntW-1:0] cnt_d [0:NumQueues-1];  // the next cycle's fills
  for (genvar g = 0; g < NumQueues; g = g + 1) begin : g_q
    assign head_valid_o[g] = (cnt_q[g] != '0);
    assign head_ptr_o[g*PtrW +: PtrW] = rd_q[g];
    assign count_o[g*CntW +: CntW] = cnt_q[g];
  end

  assign empty_o = (head_valid_o == '0);
  assign push_q_o = rx_q;
  assign push_ptr_o = wr_q[rx_q];

  // take: a wavelet leaves the router; push: one enters queue push_q (at its take unless
  // StagedPush)
  wire          take = rx_valid_i && rx_ready_o;
  wire          push = StagedPush ? push_i : take;
  wire [QW-1:0] push_q = StagedPush ? push_q_i : rx_q;
  if (Width < 37) begin : g_narrow
    wire unused_payload = ^rx_data_i[(Width > 0 ? 36 - Width : 36):0];  // kept by the caller
  end
  if (!StagedPush) begin : g_nostage
    wire unused_push = ^{push_i, push_q_i};
  end

  if (Lookahead) begin : g_ahead
    // the map read in the form that fits two LUT4s per 4:1 (about 2/3 of the LUT4s yosys
    // maps an array read to); rx_q is looked up at the color the router shows next, and
    // ready is that queue's room bit: the caller takes a wavelet and the queue is not full,
    // both in the next cycle, so low for a cycle after a map write (the map a taken wavelet
    // was looked up in is the one it arrives under)
    logic [16*QW-1:0] map_v;
    for (genvar c = 0; c < 16; c = c + 1) begin : g_map
      assign map_v[c*QW +: QW] = map_q[c];
    end
    logic [QW-1:0]        rxq_q;
    logic [NumQueues-1:0] qr_q, qr_d;
    always_ff @(posedge clk_i) rxq_q <= map_rd(map_v, next_color_i);
    always_comb begin
      for (int q = 0; q < NumQueues; q = q + 1)
        qr_d[q] = !hold_i && !map_we_i && cnt_d[q] != CntW'(QueueDepth);
    end
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) qr_q <= '1;
      else qr_q <= qr_d;
    end
    assign rx_q = rxq_q;
    assign rx_ready_o = qr_q[rxq_q];
    assign color_ready_o = '0;
    assign map_rdata_o = map_rd(map_v, map_addr_i);
    wire unused_color = ^rx_data_i[35:32];
  end else begin : g_now
    assign rx_q = map_q[rx_data_i[35:32]];
    assign rx_ready_o = color_ready_o[rx_data_i[35:32]];
    assign map_rdata_o = map_q[map_addr_i];
    wire unused_next = ^next_color_i;
    if (RegReady) begin : g_regready
      // color_ready_o[c] = the caller takes a wavelet and queue map[c] is not full, both in
      // the next cycle; all colors wait one cycle after a map write (timing: the router's
      // ready path sees one 16:1 select of flip-flops, not the map and the counts behind it).
      // Full next cycle: full and not popped, or one short and pushed and not popped.
      logic [NumQueues-1:0] full_d;
      logic [15:0]          cr_q, cr_d;
      for (genvar g = 0; g < NumQueues; g = g + 1) begin : g_full
        assign full_d[g] = !(pop_i && pop_q_i == QW'(g))
                           && (cnt_q[g] == CntW'(QueueDepth)
                               || (cnt_q[g] == CntW'(QueueDepth - 1) && push
                                   && push_q == QW'(g)));
      end
      always_comb begin
        for (int c = 0; c < 16; c = c + 1) cr_d[c] = !hold_i && !map_we_i && !full_d[map_q[c]];
      end
      always_ff @(posedge clk_i or negedge rst_ni) begin
        if (!rst_ni) cr_q <= '1;
        else cr_q <= cr_d;
      end
      assign color_ready_o = cr_q;
    end else begin : g_combready
      logic [NumQueues-1:0] full;
      for (genvar g = 0; g < NumQueues; g = g + 1) begin : g_full
        assign full[g] = (cnt_q[g] == CntW'(QueueDepth));
      end
      for (genvar g = 0; g < 16; g = g + 1) begin : g_c
        assign color_ready_o[g] = !full[map_q[g]];
      end
      wire unused_hold = hold_i;
    end
  end

  logic [PtrW-1:0] rd_d [0:NumQueues-1];
  logic [PtrW-1:0] wr_d [0:NumQueues-1];
  logic [QW-1:0]   map_d [0:15];
  always_comb begin
    for (int q = 0; q < NumQueues; q = q + 1) begin
      wr_d[q] = wr_q[q];
      rd_d[q] = rd_q[q];
      if (push && push_q == QW'(q))
        wr_d[q] = (wr_q[q] == PtrW'(QueueDepth - 1)) ? '0 : wr_q[q] + 1'b1;
      if (pop_i && pop_q_i == QW'(q) && cnt_q[q] != '0)
        rd_d[q] = (rd_q[q] == PtrW'(QueueDepth - 1)) ? '0 : rd_q[q] + 1'b1;
      cnt_d[q] = cnt_q[q] + CntW'(push && push_q == QW'(q))
                 - CntW'(pop_i && pop_q_i == QW'(q) && cnt_q[q] != '0);
    end
    for (int q = 0; q < 16; q = q + 1) map_d[q] = map_q[q];
    if (map_we_i) map_d[map_addr_i] = map_wdata_i;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int q = 0; q < NumQueues; q = q + 1) begin
        rd_q[q]  <= '0;
        wr_q[q]  <= '0;
        cnt_q[q] <= '0;
      end
      for (int q = 0; q < 16; q = q + 1) begin
        map_q[q] <= QW'(((q == 0) ? 0 : (q <= 2) ? 1 : (q <= 4) ? 2 : 3) % NumQueues);
      end
    end else begin
      for (int q = 0; q < NumQueues; q = q + 1) begin
        rd_q[q]  <= rd_d[q];
        wr_q[q]  <= wr_d[q];
        cnt_q[q] <= cnt_d[q];
      end
      for (int q = 0; q < 16; q = q + 1) map_q[q] <= map_d[q];
    end
  end

  // the kept bits go to their slot at the take (its pointer moves at the push)
  if (Width > 0) begin : g_keep
    logic [Width-1:0] mem_q [0:NumQueues*QueueDepth-1];
    for (genvar g = 0; g < NumQueues; g = g + 1) begin : g_q
      assign head_data_o[g*Width +: Width] = mem_q[g*QueueDepth + 32'(rd_q[g])];
    end
    always_ff @(posedge clk_i) begin
      if (take) mem_q[32'(rx_q) * QueueDepth + 32'(wr_q[rx_q])] <= rx_data_i[36 -: Width];
    end
  end else begin : g_nokeep
    assign head_data_o = '0;
  end

`ifdef FORMAL
  // Invariants (not yet proven: see the PE report; tb_pe_queue checks the queue against a
  // C model in simulation). Callers never pop an empty queue.
  always_comb begin
    if (pop_i) assume (head_valid_o[pop_q_i]);
    if (rst_ni) begin
      for (int q = 0; q < NumQueues; q = q + 1) begin
        assert (cnt_q[q] <= CntW'(QueueDepth));
        if (QueueDepth == (1 << PtrW)) assert (wr_q[q] == PtrW'(rd_q[q] + PtrW'(cnt_q[q])));
      end
    end
  end
  // Lookahead's claim: a wavelet taken was looked up (a cycle ahead) under its own color in
  // the map it arrives under, and its queue has room (checked at the clock edge:
  // tb_pe_micro_mt builds with --assert -DFORMAL)
  if (Lookahead) begin : g_chk_ahead
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (rst_ni && take) begin
        assert (rx_q == map_q[rx_data_i[35:32]]);
        assert (32'(cnt_q[rx_q]) < QueueDepth);
      end
    end
  end
`endif
endmodule

`default_nettype wire
