// pe_tasktab - the task table (32 entries {valid, blocked, pc[7:0]} indexed by
// tid = {ctrl, color}) and the task picker (docs/architecture.md 4.2).
//
// Each queue head is looked up; a head whose entry is valid and not blocked is runnable, a
// head whose entry is not valid is to be dropped (err_notask). When pick_en_i is high the
// picker chooses round-robin among queues with a runnable or droppable head (starting after
// the queue chosen last) and reports it in the same cycle: pick_o starts a task (pc pick_pc_o,
// queue pick_q_o), drop_o discards the head. Both pop the head (the caller does the pop).
// A blocked entry leaves its wavelet in the queue.
// Writes: the config port (cfg_we_i, data {valid[9], blocked[8], pc[7:0]}) and the
// sequencer's block/unblock (blk_we_i); both may write in one cycle, block/unblock applies
// last (to the blocked bit only).
`default_nettype none

module pe_tasktab #(
  parameter int unsigned NumQueues = 4,  // input queues looked up in parallel
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1
) (
  input  wire                    clk_i,
  input  wire                    rst_ni,
  input  wire                    cfg_we_i,
  input  wire  [4:0]             cfg_addr_i,
  input  wire  [9:0]             cfg_wdata_i,
  output wire  [9:0]             cfg_rdata_o,
  input  wire                    blk_we_i,
  input  wire                    blk_set_i,   // 1 block, 0 unblock
  input  wire  [4:0]             blk_tid_i,
  input  wire  [NumQueues-1:0]   head_valid_i,
  input  wire  [NumQueues*5-1:0] head_tid_i,
  input  wire                    pick_en_i,
  output logic                   pick_o,
  output logic                   drop_o,
  output logic [QW-1:0]          pick_q_o,
  output wire  [7:0]             pick_pc_o
);
  logic [9:0]    ent_q [0:31];
  logic [9:0]    ent_d [0:31];
  logic [QW-1:0] last_q, last_d;

  assign cfg_rdata_o = ent_q[cfg_addr_i];

  // candidates
  logic [NumQueues-1:0] run, drop;
  always_comb begin
    for (int q = 0; q < NumQueues; q = q + 1) begin
      run[q]  = head_valid_i[q] && ent_q[head_tid_i[q*5 +: 5]][9] && !ent_q[head_tid_i[q*5 +: 5]][8];
      drop[q] = head_valid_i[q] && !ent_q[head_tid_i[q*5 +: 5]][9];
    end
  end

  // round-robin: the first candidate after last_q
  logic [QW-1:0] cand;
  always_comb begin
    pick_o   = 1'b0;
    drop_o   = 1'b0;
    pick_q_o = '0;
    for (int k = NumQueues; k >= 1; k = k - 1) begin
      cand = QW'((32'(last_q) + k) % NumQueues);
      if (run[cand] || drop[cand]) begin
        pick_q_o = cand;
        pick_o   = pick_en_i && run[cand];
        drop_o   = pick_en_i && drop[cand];
      end
    end
  end
  assign pick_pc_o = ent_q[head_tid_i[pick_q_o*5 +: 5]][7:0];
  always_comb begin
    for (int e = 0; e < 32; e = e + 1) ent_d[e] = ent_q[e];
    if (cfg_we_i) ent_d[cfg_addr_i] = cfg_wdata_i;
    if (blk_we_i) ent_d[blk_tid_i][8] = blk_set_i;
    last_d = (pick_o || drop_o) ? pick_q_o : last_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int e = 0; e < 32; e = e + 1) ent_q[e] <= '0;
      last_q <= QW'(NumQueues - 1);
    end else begin
      for (int e = 0; e < 32; e = e + 1) ent_q[e] <= ent_d[e];
      last_q <= last_d;
    end
  end
endmodule

`default_nettype wire
