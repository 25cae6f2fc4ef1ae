// sram_1r1w - one-read-one-write memory with a registered read, the shape Yosys maps to
// iCE40 EBR (SB_RAM40_4K) and Verilator simulates as a plain array.
//
// Read: raddr_i sampled when re_i is high; rdata_o holds the word from the next cycle on and
// keeps it while re_i is low. A read and a write of the same address in one cycle return the
// old word (read before write); callers that need the new word must interlock. EBR does not
// promise the old word, so Yosys keeps it with a bypass (the write delayed a cycle: about
// Width+AddrW flip-flops and Width LUTs); a caller that never reads the address it writes in
// the same cycle sets OldOnCollide = 0, and such a read then returns X.
// Not for: byte enables or reset of the contents (EBR has neither cheaply).
`default_nettype none

module sram_1r1w #(
  parameter int unsigned Depth = 256,  // words; any value, rounded up to a power of 2 in EBR
  parameter int unsigned Width = 32,   // bits per word
  parameter bit OldOnCollide = 1'b1,   // 0: no read-during-write bypass (caller never collides)
  localparam int unsigned AddrW = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  wire             clk_i,
  input  wire             we_i,
  input  wire [AddrW-1:0] waddr_i,
  input  wire [Width-1:0] wdata_i,
  input  wire             re_i,
  input  wire [AddrW-1:0] raddr_i,
  output wire [Width-1:0] rdata_o
);
  logic [Width-1:0] mem_q [0:Depth-1];
  logic [Width-1:0] rdata_q;

  // One block, no reset: the template Yosys recognises as a 1R1W block RAM.
  always_ff @(posedge clk_i) begin
    if (we_i) mem_q[waddr_i] <= wdata_i;
    // the X on a collision is what lets Yosys drop the bypass ("don't care on collision")
    if (re_i) rdata_q <= (!OldOnCollide && we_i && waddr_i == raddr_i) ? {Width{1'bx}}
                                                                      : mem_q[raddr_i];
  end

  assign rdata_o = rdata_q;

`ifdef FORMAL
  always_comb assert (Depth >= 1);
  always_comb if (!OldOnCollide) assert (!(we_i && re_i && waddr_i == raddr_i));
`endif
endmodule

`default_nettype wire
