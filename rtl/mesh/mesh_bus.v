// mesh_bus: the lean router's bus multiplexer, NIn heads -> one, selected by index.
//
// mesh_router_lean puts one input head per cycle on its bus (the arbiter's grant). Selecting
// by the grant's index rather than by its one-hot bits (mesh_xbar) lets a 4:1 mux take two
// LUT4 a bit (the form of mesh_route's mux4) instead of three: 74 instead of 111 LUT4 for
// the 4 inputs of tile (0, 0) of the 2x2 board. 2 and 3 inputs cost the same either way.
// sel_i must be below NIn; the output is then exactly data_i's entry sel_i.
`default_nettype none

module mesh_bus #(
  parameter int unsigned NIn = 3,    // inputs (1..5)
  parameter int unsigned Width = 37  // beat width
) (
  input  wire [NIn*Width-1:0] data_i,
  input  wire [2:0]           sel_i,
  output wire [Width-1:0]     data_o
);
  function automatic logic mux4(input logic [3:0] d, input logic [1:0] s);
    logic l;
    l = s[1] ? s[0] : (s[0] ? d[1] : d[0]);
    mux4 = s[1] ? (l ? d[3] : d[2]) : l;
  endfunction
  for (genvar b = 0; b < Width; b++) begin : g_bit
    wire [4:0] col;  // bit b of every input (past NIn: the last input's, never selected)
    for (genvar j = 0; j < 5; j++) begin : g_col
      assign col[j] = data_i[((j < NIn) ? j : NIn - 1)*Width + b];
    end
    assign data_o[b] = (NIn > 4 && sel_i[2]) ? col[4] : mux4(col[3:0], sel_i[1:0]);
  end
  wire unused_sel = &{1'b0, sel_i[2]};
endmodule

`default_nettype wire
