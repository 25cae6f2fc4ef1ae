// mesh_route_ref: the reference of rtl/mesh/mesh_route.v for the miter in mesh_formal.sh:
// the route lookup as a plain array read, which mesh_route writes as 4:1 muxes that fit two
// LUT4 each. Formal only (never synthesized into the design).
`default_nettype none

module mesh_route_ref #(
  parameter bit [4:0] Used = 5'b11111  // mask bits the caller can need (others read 0)
) (
  input  wire [79:0] table_i,
  input  wire [3:0]  color_i,
  output wire [4:0]  mask_o
);
  wire [4:0] entry [16];
  for (genvar c = 0; c < 16; c++) begin : g_entry
    assign entry[c] = table_i[c*5 +: 5];
  end
  assign mask_o = entry[color_i] & Used;
endmodule

`default_nettype wire
