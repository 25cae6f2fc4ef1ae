// board_fifo - word FIFO in block RAM with commit/rollback on the write side.
// The frame receiver writes a frame's payload as it arrives and commits it only when the
// CRC is good (rollback otherwise), so the host port never sees a word of a bad frame. The
// frame transmitter uses it as a plain FIFO (commit_i tied high).
// Write side: wr_valid_i writes wr_data_i (no ready: the caller checks free_o first; a
// write when full is ignored). commit_i makes everything written so far, including this
// cycle's write, visible to the read side; rollback_i forgets the uncommitted words (it
// wins over a write in the same cycle).
// Read side: stream rd_valid_o / rd_ready_i / rd_data_o of committed words, one per cycle;
// the memory has a registered read port (maps to iCE40 EBR, read enable = fetch).
`default_nettype none

module board_fifo #(
  parameter integer Width = 32,   // word width
  parameter integer Depth = 256   // words, power of two (256 x 32 = 2 UP5K EBRs)
) (
  input  wire             clk_i,
  input  wire             rst_ni,
  input  wire             wr_valid_i,
  input  wire [Width-1:0] wr_data_i,
  input  wire             commit_i,
  input  wire             rollback_i,
  output wire [$clog2(Depth):0] free_o,      // words that can still be written
  output wire [$clog2(Depth):0] count_o,    // committed words not yet read out (incl. rd_data_o)
  output reg              rd_valid_o,
  input  wire             rd_ready_i,
  output reg  [Width-1:0] rd_data_o
);
  localparam integer AW = $clog2(Depth);
  localparam integer DepthI = Depth;
  localparam [AW:0] DepthW = DepthI[AW:0];

  reg [Width-1:0] mem [0:Depth-1];
  reg [AW:0] wr_d, wr_q;   // next write (uncommitted words between cm_q and wr_q)
  reg [AW:0] cm_d, cm_q;   // commit pointer: words before it are readable
  reg [AW:0] rd_d, rd_q;   // next word to fetch into rd_data_o
  reg        valid_d;
  wire [AW:0] used = wr_q - rd_q;
  wire        we = wr_valid_i && !rollback_i && (used != DepthW);
  wire        re = (!rd_valid_o || rd_ready_i) && (rd_q != cm_q);

  assign free_o  = DepthW - used;
  assign count_o = (cm_q - rd_q) + {{AW{1'b0}}, rd_valid_o};

  always @* begin
    wr_d = we ? wr_q + 1'b1 : wr_q;
    if (rollback_i) wr_d = cm_q;
    cm_d = commit_i ? wr_d : cm_q;
    rd_d = re ? rd_q + 1'b1 : rd_q;
    valid_d = re ? 1'b1 : (rd_ready_i ? 1'b0 : rd_valid_o);
  end

  always @(posedge clk_i) begin
    if (we) mem[wr_q[AW-1:0]] <= wr_data_i;
    if (re) rd_data_o <= mem[rd_q[AW-1:0]];
  end

  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wr_q       <= '0;
      cm_q       <= '0;
      rd_q       <= '0;
      rd_valid_o <= 1'b0;
    end else begin
      wr_q       <= wr_d;
      cm_q       <= cm_d;
      rd_q       <= rd_d;
      rd_valid_o <= valid_d;
    end
  end

`ifdef FORMAL
  always @(posedge clk_i) begin
    if (rst_ni) begin
      assert (cm_q - rd_q <= wr_q - rd_q);
      assert (wr_q - rd_q <= DepthW);
    end
  end
`endif
endmodule

`default_nettype wire
