// sram_sp - single-port memory (one read or one write per cycle) with a registered read.
//
// When UseSpram is set the array is built from 16-bit slices declared 16384 deep with the
// read in the else branch of the write: the only shape Yosys 0.23 maps to the iCE40 UP5K
// SB_SPRAM256KA (16Kx16), so a 32-bit memory of up to 16K words costs two SPRAMs and no EBR.
// Otherwise it is a plain array (EBR or flip-flops).
// Read: en_i & !we_i samples addr_i, rdata_o holds the word from the next cycle on and keeps
// it while no read happens (also during writes).
`default_nettype none

module sram_sp #(
  parameter int unsigned Depth = 16384,  // words
  parameter int unsigned Width = 16,     // bits per word; a multiple of 16 when UseSpram
  parameter bit UseSpram = (Depth > 4096) && (Depth <= 16384) && (Width % 16 == 0),  // map to SPRAM
  localparam int unsigned AddrW = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  wire             clk_i,
  input  wire             en_i,
  input  wire             we_i,
  input  wire [AddrW-1:0] addr_i,
  input  wire [Width-1:0] wdata_i,
  output wire [Width-1:0] rdata_o
);
  generate
    if (UseSpram) begin : g_spram
      localparam int unsigned Slices = Width / 16;
      genvar s;
      for (s = 0; s < Slices; s = s + 1) begin : g_slice
        logic [15:0] mem_q [0:16383];
        logic [15:0] rdata_q;
        wire [13:0] addr14 = 14'(addr_i);
        always_ff @(posedge clk_i) begin
          if (en_i) begin
            if (we_i) mem_q[addr14] <= wdata_i[s*16 +: 16];
            else rdata_q <= mem_q[addr14];
          end
        end
        assign rdata_o[s*16 +: 16] = rdata_q;
      end
    end else begin : g_array
      logic [Width-1:0] mem_q [0:Depth-1];
      logic [Width-1:0] rdata_q;
      always_ff @(posedge clk_i) begin
        if (en_i) begin
          if (we_i) mem_q[addr_i] <= wdata_i;
          else rdata_q <= mem_q[addr_i];
        end
      end
      assign rdata_o = rdata_q;
    end
  endgenerate
endmodule

`default_nettype wire
