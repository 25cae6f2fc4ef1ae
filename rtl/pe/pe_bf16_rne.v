// pe_bf16_rne - fp32 -> bf16 by round to nearest even (docs/architecture.md section 8,
// nm_bf16_from_bits): a subnormal or zero becomes a zero of its sign, every NaN 0x7fc0, an
// overflow infinity. Combinational; the vector group's operand rounding in pe and pe_lite.
`default_nettype none

module pe_bf16_rne (
  input  wire [31:0] x_i,
  output wire [15:0] y_o
);
  wire        zero = (x_i[30:23] == 8'd0);
  wire        nan  = (x_i[30:23] == 8'hff) && (x_i[22:0] != 23'd0);
  // x + 0x7fff + lsb carries into the kept half iff the dropped half is above one half, or
  // exactly one half with an odd kept half
  wire        up   = x_i[15] && ((x_i[14:0] != 15'd0) || x_i[16]);
  assign y_o = nan ? 16'h7fc0 : zero ? {x_i[31], 15'd0} : x_i[31:16] + {15'd0, up};
endmodule

`default_nettype wire
