// pe_lut_index - the table index of `vlut` (docs/architecture.md 4.4, nm_lut_index):
// {sign, binade, mantissa[6:4]} of a bf16 x; binade 0 for |x| < 2^-12, e + 13 for |x| in
// [2^e, 2^(e+1)) (e = -12..1), 15 for |x| >= 4, NaN and infinity. Combinational.
`default_nettype none

module pe_lut_index (
  input  wire [15:0] x_i,
  output wire [7:0]  idx_o
);
  wire [7:0] e = x_i[14:7];               // biased exponent: e - 127 = -12 is 115
  wire [7:0] eb = e - 8'd114;
  wire [3:0] b = (e < 8'd115) ? 4'd0 : (e > 8'd128) ? 4'd15 : eb[3:0];
  assign idx_o = {x_i[15], b, x_i[6:4]};

  wire unused = &{1'b0, x_i[3:0], eb[7:4]};
endmodule

`default_nettype wire
