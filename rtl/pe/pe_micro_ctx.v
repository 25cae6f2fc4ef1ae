// pe_micro_ctx - one machine register of pe_micro_mt's N PEs in a block RAM: N words, one
// write and one registered read a cycle (an iCE40 EBR, asked for by ram_style: Yosys would
// build N words in flip-flops). pe_micro_mt never reads a word in the cycle it writes it, so
// a collision returns X and no bypass is built (as sram_1r1w's OldOnCollide = 0). The read
// data holds from the cycle after the read until the next read (one every cycle here).
`default_nettype none

module pe_micro_ctx #(
  parameter int unsigned N = 4,       // words (PEs)
  parameter int unsigned Width = 16,  // bits
  localparam int unsigned AW = (N > 1) ? $clog2(N) : 1
) (
  input  wire              clk_i,
  input  wire              we_i,
  input  wire  [AW-1:0]    waddr_i,
  input  wire  [Width-1:0] wdata_i,
  input  wire  [AW-1:0]    raddr_i,
  output logic [Width-1:0] rdata_o
);
  (* ram_style = "block" *) logic [Width-1:0] mem_q [0:N-1];

  // One block, no reset: the template Yosys maps to a block RAM. The read register is the
  // port itself: a separate rdata_q with an assign maps the 2x2 board's seven contexts 19
  // LUT4 and ~50 logic cells larger (yosys 0.23, nextpnr packing), past the UP5K's 5,280.
  always_ff @(posedge clk_i) begin
    if (we_i) mem_q[waddr_i] <= wdata_i;
    rdata_o <= (we_i && waddr_i == raddr_i) ? {Width{1'bx}} : mem_q[raddr_i];
  end
endmodule

`default_nettype wire
