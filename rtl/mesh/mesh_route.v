// mesh_route: route decoder, color -> 5-bit output mask {local, W, S, E, N} (bits 4..0).
//
// Pure lookup into the router's route table (16 colors x 5 bits, color c at bits
// [5c+4:5c]); the table registers live in mesh_router, which has one decoder per input.
// Mask 0 means "unrouted": the router drops the wavelet and counts it.
`default_nettype none

module mesh_route #(
  parameter bit [4:0] Used = 5'b11111  // mask bits the caller can need (others read 0)
) (
  input  wire [79:0] table_i,  // route table, 16 x 5-bit masks
  input  wire [3:0]  color_i,
  output wire [4:0]  mask_o
);
  // A 16:1 mux per mask bit, written as two levels of 4:1 muxes, each in the form that fits
  // two 4-input LUTs (the first passes s[0] through when s[1] is set: 10 LUT4 per bit where
  // ABC maps an array read to ~15; 59 instead of 71 LUT4 on the iCE40). (A bit-select at
  // color*5 is the same function but yosys builds it as an 80-bit shifter: 218 LUT4.)
  function automatic logic mux4(input logic [3:0] d, input logic [1:0] s);
    logic l;
    l = s[1] ? s[0] : (s[0] ? d[1] : d[0]);
    mux4 = s[1] ? (l ? d[3] : d[2]) : l;
  endfunction
  for (genvar b = 0; b < 5; b++) begin : g_bit
    logic [15:0] col;  // bit b of every entry
    logic [3:0]  grp;
    for (genvar c = 0; c < 16; c++) begin : g_col
      assign col[c] = table_i[c*5 + b];
    end
    for (genvar g = 0; g < 4; g++) begin : g_grp
      assign grp[g] = mux4(col[4*g +: 4], color_i[1:0]);
    end
    assign mask_o[b] = Used[b] && mux4(grp, color_i[3:2]);
  end
endmodule

`default_nettype wire
