// pe_fifo - a small synchronous FIFO (flip-flops), used for the PE's transmit queue.
//
// Push: in_valid_i & in_ready_o (in_ready_o = not full; a push into a full FIFO is refused
// even when a pop happens in the same cycle, which keeps in_ready_o free of combinational
// paths from out_ready_i). Pop: out_valid_o & out_ready_i. count_o is the registered number of
// entries (callers reserve space with it).
`default_nettype none

module pe_fifo #(
  parameter int unsigned Width = 37,  // bits per entry
  parameter int unsigned Depth = 8,   // entries, >= 2
  localparam int unsigned PtrW = $clog2(Depth),
  localparam int unsigned CntW = $clog2(Depth + 1)
) (
  input  wire             clk_i,
  input  wire             rst_ni,
  input  wire             in_valid_i,
  output wire             in_ready_o,
  input  wire [Width-1:0] in_data_i,
  output wire             out_valid_o,
  input  wire             out_ready_i,
  output wire [Width-1:0] out_data_o,
  output wire [CntW-1:0]  count_o
);
  logic [Width-1:0] mem_q [Depth];
  logic [PtrW-1:0]  rd_q, rd_d, wr_q, wr_d;
  logic [CntW-1:0]  cnt_q, cnt_d;

  wire push = in_valid_i && (cnt_q != CntW'(Depth));
  wire pop  = out_ready_i && (cnt_q != '0);

  always_comb begin
    rd_d  = rd_q;
    wr_d  = wr_q;
    cnt_d = cnt_q;
    if (push) wr_d = (wr_q == PtrW'(Depth - 1)) ? '0 : wr_q + 1'b1;
    if (pop) rd_d = (rd_q == PtrW'(Depth - 1)) ? '0 : rd_q + 1'b1;
    if (push && !pop) cnt_d = cnt_q + 1'b1;
    else if (pop && !push) cnt_d = cnt_q - 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_q  <= '0;
      wr_q  <= '0;
      cnt_q <= '0;
    end else begin
      rd_q  <= rd_d;
      wr_q  <= wr_d;
      cnt_q <= cnt_d;
    end
  end

  always_ff @(posedge clk_i) begin
    if (push) mem_q[wr_q] <= in_data_i;
  end

  assign in_ready_o  = (cnt_q != CntW'(Depth));
  assign out_valid_o = (cnt_q != '0);
  assign out_data_o  = mem_q[rd_q];
  assign count_o     = cnt_q;
endmodule

`default_nettype wire
