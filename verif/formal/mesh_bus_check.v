// mesh_bus_check: rtl/mesh/mesh_bus.v (4:1 muxes shaped for two LUT4) against the plain
// array read it stands for, for every input and every select below NIn: a combinational
// assertion that mesh_formal.sh proves with yosys's SAT solver. Formal only.
`default_nettype none

module mesh_bus_check #(
  parameter int unsigned NIn = 4,    // inputs (1..5)
  parameter int unsigned Width = 37  // beat width
) (
  input wire [NIn*Width-1:0] data_i,
  input wire [2:0]           sel_i
);
  wire [Width-1:0] bus;
  mesh_bus #(.NIn(NIn), .Width(Width)) u_bus (.data_i, .sel_i, .data_o(bus));
  wire [Width-1:0] entry [NIn];
  for (genvar j = 0; j < NIn; j++) begin : g_entry
    assign entry[j] = data_i[j*Width +: Width];
  end
  always @(*) if (32'(sel_i) < NIn) assert (bus == entry[sel_i]);
endmodule

`default_nettype wire
