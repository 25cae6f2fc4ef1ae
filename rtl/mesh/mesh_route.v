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
  // An array read: a 16:1 mux per mask bit. (A bit-select at color*5 is the same function
  // but yosys builds it as an 80-bit shifter: 218 instead of ~50 LUT4 on the iCE40.)
  wire [4:0] entry [16];
  for (genvar c = 0; c < 16; c++) begin : g_entry
    assign entry[c] = table_i[c*5 +: 5];
  end
  assign mask_o = entry[color_i] & Used;
endmodule

`default_nettype wire
