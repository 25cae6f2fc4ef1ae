// board_fifo - word FIFO in block RAM with commit/rollback on the write side.
// The frame receiver writes a frame's payload as it arrives and commits it only when the
// CRC is good (rollback otherwise), so the host port never sees a word of a bad frame. The
// frame transmitter uses it as a plain FIFO (Plain: every write committed at once, the
// same cycle behaviour as commit_i tied high, without the commit/rollback logic).
// Write side: wr_valid_i writes wr_data_i (no ready: the caller checks free_o or full_o
// first; a write when full is ignored). commit_i makes everything written so far, including this
// cycle's write, visible to the read side; rollback_i forgets the uncommitted words (it
// wins over a write in the same cycle).
// Read side: stream rd_valid_o / rd_ready_i / rd_data_o of committed words (Plain: one per cycle,
// else one every other cycle); a registered read port (iCE40 EBR, read enable = fetch).
// Bytes (the receiver's buffer): the memory is four byte lanes, and a write puts the byte
// wr_data_i[7:0] into lane wr_lane_i of the next word; writing lane 3 completes the word
// (the write pointer moves on). So the receiver needs no register to assemble a word.
`default_nettype none

module board_fifo #(
  parameter integer Width = 32,   // word width
  parameter integer Depth = 256,  // words, power of two (256 x 32 = 2 UP5K EBRs)
  parameter bit Plain = 1'b0,     // no commit/rollback (commit_i, rollback_i unused): the
                                  // transmitter's queue, without their logic
  parameter bit Bytes = 1'b0      // byte-lane writes (Width 32): see above
) (
  input  wire              clk_i,
  input  wire              rst_ni,
  input  wire              wr_valid_i,
  input  wire  [Width-1:0] wr_data_i,
  input  wire  [1:0]       wr_lane_i,   // Bytes: the lane wr_data_i[7:0] goes to
  input  wire              commit_i,
  input  wire              rollback_i,
  output wire  [$clog2(Depth):0] free_o,   // words that can still be written (not Plain)
  output wire              full_o,      // no word can be written
  output wire  [$clog2(Depth):0] count_o,  // committed words not yet read out (Plain only)
  output logic             rd_valid_o,
  input  wire              rd_ready_i,
  output logic [Width-1:0] rd_data_o
);
  localparam integer AW = $clog2(Depth);
  localparam integer DepthI = Depth;
  localparam [AW:0] DepthW = DepthI[AW:0];

  // The FIFO never reads and writes one address in the same cycle (rd_q == wr_q means empty,
  // then nothing is fetched, or full, then nothing is written), so yosys need not build its
  // read-during-write bypass around the EBR (a registered copy of the write data and
  // address, a comparator and a 32-bit multiplexer: 39 LUT4 and 74 flip-flops per FIFO).
  // Pointers carry a wrap bit (AW+1 bits): equal pointers are empty, pointers Depth apart
  // full, so the receiver's buffer needs no counts at all.
  logic  [AW:0] wr_d, wr_q;   // next write
  logic  [AW:0] rd_d, rd_q;   // next word to fetch into rd_data_o
  logic         valid_d;
  wire [AW:0] cm;           // commit point: words before it are readable
  // full: pointers Depth apart (an equality, no subtraction)
  wire        full = ((wr_q ^ rd_q) == DepthW);
  assign full_o = full;
  wire        we, unfetched;
  // Plain: a word is fetched as one leaves (one per cycle). The receiver's buffer fetches
  // only into an empty output register (one word every other cycle, far above the link's
  // rate), so rd_ready_i (the host port's decoder: mesh_top has no slice in front of it)
  // reaches only rd_valid_o, not the pointers or the block RAM's read enable.
  wire        re = (!rd_valid_o || (Plain && rd_ready_i)) && unfetched;

  if (Plain) begin : g_plain
    // The transmitter's queue: its count lives in its own register so that its LEN decision
    // starts at a flop instead of a pointer subtraction; its ready (full_o) is an equality
    // of the pointers, as shallow as a test of a free counter for zero.
    logic [AW:0] cnt_d, cnt_q;    // words not yet popped (incl. rd_data_o)
    wire       pop = rd_valid_o && rd_ready_i;
    wire       unused_commit = commit_i;  // every write is committed
    assign cm = wr_q;
    assign we = wr_valid_i && !full;
    // words not yet fetched: cnt_q minus the one in rd_data_o
    assign unfetched = (cnt_q != '0) && !(cnt_q == {{AW{1'b0}}, 1'b1} && rd_valid_o);
    assign count_o = cnt_q;
    assign free_o  = '0;  // not built: the transmitter tests full_o, and it reads 0
    always_comb begin  // +1, -1 or 0 as one addend: one carry chain
      cnt_d = cnt_q + {{AW{pop && !we}}, pop != we};
    end
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) cnt_q <= '0;
      else cnt_q <= cnt_d;
    end
`ifdef FORMAL
    always_ff @(posedge clk_i) if (rst_ni) begin
      assert (cnt_q == wr_q - rd_q + {{AW{1'b0}}, rd_valid_o});
    end
`endif
  end else begin : g_commit
    // The receiver's buffer: pointers only. free_o is their subtraction: written and not
    // yet fetched is wr_q - rd_q, so Depth - that is (rd_q - wr_q) with its Depth bit
    // flipped. count_o is not built: the receiver leaves it open, and it reads 0.
    logic [AW:0] cm_d, cm_q;
    assign cm = cm_q;
    assign we = wr_valid_i && !rollback_i && !full;
    assign unfetched = (cm_q != rd_q);
    assign count_o = '0;
    assign free_o  = (rd_q - wr_q) ^ DepthW;
    always_comb begin
      cm_d = cm_q;
      if (commit_i && !rollback_i) cm_d = wr_d;
    end
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) cm_q <= '0;
      else cm_q <= cm_d;
    end
`ifdef FORMAL
    always_ff @(posedge clk_i) if (rst_ni) begin
      assert (wr_q - rd_q <= DepthW);
      assert (cm_q - rd_q <= wr_q - rd_q);
    end
`endif
  end

  // a write moves the pointer on: a word, or (Bytes) the last lane of one
  wire wr_next = we && (!Bytes || wr_lane_i == 2'd3);

  always_comb begin
    wr_d = wr_next ? wr_q + 1'b1 : wr_q;
    if (!Plain && rollback_i) wr_d = cm;
    rd_d = re ? rd_q + 1'b1 : rd_q;
    valid_d = re ? 1'b1 : (rd_ready_i ? 1'b0 : rd_valid_o);
  end

  if (Bytes) begin : g_bytes
    // four memories of bytes (yosys maps each to its own block RAMs with its own write enable)
    for (genvar l = 0; l < 4; l++) begin : g_lane
      (* no_rw_check *)
      logic [7:0] mem [0:Depth-1];
      always_ff @(posedge clk_i) begin
        if (we && wr_lane_i == 2'(l)) mem[wr_q[AW-1:0]] <= wr_data_i[7:0];
        if (re) rd_data_o[8*l +: 8] <= mem[rd_q[AW-1:0]];
      end
    end
    wire unused_data = ^{wr_data_i[Width-1:8]};
  end else begin : g_words
    (* no_rw_check *)
    logic [Width-1:0] mem [0:Depth-1];
    wire unused_lane = ^wr_lane_i;
    always_ff @(posedge clk_i) begin
      if (we) mem[wr_q[AW-1:0]] <= wr_data_i;
      if (re) rd_data_o <= mem[rd_q[AW-1:0]];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wr_q       <= '0;
      rd_q       <= '0;
      rd_valid_o <= 1'b0;
    end else begin
      wr_q       <= wr_d;
      rd_q       <= rd_d;
      rd_valid_o <= valid_d;
    end
  end
endmodule

`default_nettype wire
