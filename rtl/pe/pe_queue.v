// pe_queue - the PE's input queues: NumQueues FIFOs of QueueDepth wavelets and the 16-entry
// color -> queue map (docs/architecture.md 4.1).
//
// Input: rx_valid_i & rx_ready_o pushes rx_data_i into the queue its color maps to;
// color_ready_o[c] says that color c's queue has space (the router requests the local
// output only for ready colors, so one full queue does not block the others). Ready depends
// only on registered state. Output: every queue's head is visible (head_valid_o,
// head_data_o); pop_i removes the head of queue pop_q_i (at most one pop per cycle).
// The map resets to the firmware convention: color 0 -> queue 0 (BCAST), 1-2 -> 1 (RR),
// 3-4 -> 2 (CR), others -> 3, each modulo NumQueues.
`default_nettype none

module pe_queue #(
  parameter int unsigned NumQueues = 4,   // input queues, 1..16
  parameter int unsigned QueueDepth = 8,  // wavelets per queue, >= 2
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1,
  localparam int unsigned PtrW = $clog2(QueueDepth),
  localparam int unsigned CntW = $clog2(QueueDepth + 1)
) (
  input  wire                    clk_i,
  input  wire                    rst_ni,
  input  wire                    rx_valid_i,
  input  wire [36:0]             rx_data_i,
  output wire                    rx_ready_o,
  output wire [15:0]             color_ready_o,
  input  wire                    map_we_i,
  input  wire [3:0]              map_addr_i,
  input  wire [QW-1:0]           map_wdata_i,
  output wire [QW-1:0]           map_rdata_o,
  output wire [NumQueues-1:0]    head_valid_o,
  output wire [NumQueues*37-1:0] head_data_o,
  input  wire                    pop_i,
  input  wire [QW-1:0]           pop_q_i,
  output wire                    empty_o
);
  logic [QW-1:0]   map_q [0:15];
  logic [36:0]     mem_q [0:NumQueues*QueueDepth-1];
  logic [PtrW-1:0] rd_q [0:NumQueues-1];
  logic [PtrW-1:0] wr_q [0:NumQueues-1];
  logic [CntW-1:0] cnt_q [0:NumQueues-1];

  wire  [QW-1:0] rx_q = map_q[rx_data_i[35:32]];
  logic [NumQueues-1:0] full;
  for (genvar g = 0; g < NumQueues; g = g + 1) begin : g_q
    assign full[g] = (cnt_q[g] == CntW'(QueueDepth));
    assign head_valid_o[g] = (cnt_q[g] != '0);
    assign head_data_o[g*37 +: 37] = mem_q[g*QueueDepth + 32'(rd_q[g])];
  end
  for (genvar g = 0; g < 16; g = g + 1) begin : g_c
    assign color_ready_o[g] = !full[map_q[g]];
  end

  assign rx_ready_o = color_ready_o[rx_data_i[35:32]];
  assign map_rdata_o = map_q[map_addr_i];
  assign empty_o = (head_valid_o == '0);

  wire push = rx_valid_i && rx_ready_o;

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
    if (push) mem_q[32'(rx_q) * QueueDepth + 32'(wr_q[rx_q])] <= rx_data_i;
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
