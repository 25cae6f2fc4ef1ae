// pe_queue - the PE's input queues: NumQueues FIFOs of QueueDepth wavelets and the 16-entry
// color -> queue map (docs/architecture.md 4.1). Every PE keeps its input queues here.
//
// Input: rx_valid_i & rx_ready_o pushes rx_data_i into the queue its color maps to;
// color_ready_o[c] says that color c's queue has space (the router requests the local
// output only for ready colors, so one full queue does not block the others). Ready depends
// only on registered state. Output: every queue's head is visible (head_valid_o,
// head_data_o); pop_i removes the head of queue pop_q_i (at most one pop per cycle).
// The map resets to the firmware convention: color 0 -> queue 0 (BCAST), 1-2 -> 1 (RR),
// 3-4 -> 2 (CR), others -> 3, each modulo NumQueues.
//
// A PE that keeps the payloads elsewhere (pe_lite: in its DRAM) stores only the top Width
// bits of a wavelet here and addresses its payload by slot, queue * QueueDepth + pointer:
// push_q_o/push_ptr_o name the slot rx_data_i goes to, head_ptr_o each head's slot,
// count_o each queue's fill. RegReady makes color_ready_o a register, computed from the next
// cycle's fill, the map and hold_i (the caller takes no wavelet in the next cycle).
`default_nettype none

module pe_queue #(
  parameter int unsigned NumQueues = 4,   // input queues, 1..16
  parameter int unsigned QueueDepth = 8,  // wavelets per queue, >= 2
  parameter int unsigned Width = 37,      // top bits of a wavelet kept, 5..37 (pe_lite: 5)
  parameter bit RegReady = 1'b0,          // color_ready_o registered (pe_lite's timing)
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1,
  localparam int unsigned PtrW = $clog2(QueueDepth),
  localparam int unsigned CntW = $clog2(QueueDepth + 1)
) (
  input  wire                       clk_i,
  input  wire                       rst_ni,
  input  wire                       rx_valid_i,
  input  wire [36:0]                rx_data_i,
  output wire                       rx_ready_o,
  output wire [15:0]                color_ready_o,
  input  wire                       hold_i,        // RegReady only
  output wire [QW-1:0]              push_q_o,
  output wire [PtrW-1:0]            push_ptr_o,
  input  wire                       map_we_i,
  input  wire [3:0]                 map_addr_i,
  input  wire [QW-1:0]              map_wdata_i,
  output wire [QW-1:0]              map_rdata_o,
  output wire [NumQueues-1:0]       head_valid_o,
  output wire [NumQueues*Width-1:0] head_data_o,
  output wire [NumQueues*PtrW-1:0]  head_ptr_o,
  output wire [NumQueues*CntW-1:0]  count_o,
  input  wire                       pop_i,
  input  wire [QW-1:0]              pop_q_i,
  output wire                       empty_o
);
  logic [QW-1:0]    map_q [0:15];
  logic [Width-1:0] mem_q [0:NumQueues*QueueDepth-1];
  logic [PtrW-1:0]  rd_q [0:NumQueues-1];
  logic [PtrW-1:0]  wr_q [0:NumQueues-1];
  logic [CntW-1:0]  cnt_q [0:NumQueues-1];

  wire [QW-1:0] rx_q = map_q[rx_data_i[35:32]];
  for (genvar g = 0; g < NumQueues; g = g + 1) begin : g_q
    assign head_valid_o[g] = (cnt_q[g] != '0);
    assign head_data_o[g*Width +: Width] = mem_q[g*QueueDepth + 32'(rd_q[g])];
    assign head_ptr_o[g*PtrW +: PtrW] = rd_q[g];
    assign count_o[g*CntW +: CntW] = cnt_q[g];
  end

  assign rx_ready_o = color_ready_o[rx_data_i[35:32]];
  assign map_rdata_o = map_q[map_addr_i];
  assign empty_o = (head_valid_o == '0);
  assign push_q_o = rx_q;
  assign push_ptr_o = wr_q[rx_q];

  wire push = rx_valid_i && rx_ready_o;
  if (Width < 37) begin : g_narrow
    wire unused_payload = ^rx_data_i[36-Width:0];  // kept by the caller
  end

  if (RegReady) begin : g_regready
    // color_ready_o[c] = the caller takes a wavelet and queue map[c] is not full, both in the
    // next cycle; all colors wait one cycle after a map write (timing: the router's ready
    // path sees one 16:1 select of flip-flops, not the map and the counts behind it). Full
    // next cycle: full and not popped, or one short and pushed and not popped.
    logic [NumQueues-1:0] full_d;
    logic [15:0]          cr_q, cr_d;
    for (genvar g = 0; g < NumQueues; g = g + 1) begin : g_full
      assign full_d[g] = !(pop_i && pop_q_i == QW'(g))
                         && (cnt_q[g] == CntW'(QueueDepth)
                             || (cnt_q[g] == CntW'(QueueDepth - 1) && push && rx_q == QW'(g)));
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

  logic [PtrW-1:0] rd_d [0:NumQueues-1];
  logic [PtrW-1:0] wr_d [0:NumQueues-1];
  logic [CntW-1:0] cnt_d [0:NumQueues-1];
  logic [QW-1:0]   map_d [0:15];
  always_comb begin
    for (int q = 0; q < NumQueues; q = q + 1) begin
      wr_d[q] = wr_q[q];
      rd_d[q] = rd_q[q];
      if (push && rx_q == QW'(q))
        wr_d[q] = (wr_q[q] == PtrW'(QueueDepth - 1)) ? '0 : wr_q[q] + 1'b1;
      if (pop_i && pop_q_i == QW'(q) && cnt_q[q] != '0)
        rd_d[q] = (rd_q[q] == PtrW'(QueueDepth - 1)) ? '0 : rd_q[q] + 1'b1;
      cnt_d[q] = cnt_q[q] + CntW'(push && rx_q == QW'(q))
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

  always_ff @(posedge clk_i) begin
    if (push) mem_q[32'(rx_q) * QueueDepth + 32'(wr_q[rx_q])] <= rx_data_i[36 -: Width];
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
`endif
endmodule

`default_nettype wire
