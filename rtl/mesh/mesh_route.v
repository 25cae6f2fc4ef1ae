// mesh_route: route decoder, color -> 5-bit output mask {local, W, S, E, N} (bits 4..0).
//
// Pure lookup into the router's route table (16 colors x 5 bits, color c at bits
// [5c+4:5c]); the table registers live in mesh_router, which has one decoder per input.
// Mask 0 means "unrouted": the router drops the wavelet and counts it.
`default_nettype none

module mesh_route (
  input  wire [79:0] table_i,  // route table, 16 x 5-bit masks
  input  wire [3:0]  color_i,
  output wire [4:0]  mask_o
);
  assign mask_o = table_i[{color_i, 2'b00} + {3'b000, color_i} +: 5];
endmodule

`default_nettype wire
