// mesh_xbar: crossbar, NOut AND-OR multiplexers driven by one-hot selects.
//
// sel_i[o*NIn + i] selects input i for output o (the arbiters' grants). An output with no
// select reads zero. Multicast is several outputs selecting the same input.
`default_nettype none

module mesh_xbar #(
  parameter int unsigned NIn = 5,     // inputs
  parameter int unsigned NOut = 5,    // outputs
  parameter int unsigned Width = 37   // beat width
) (
  input  wire  [NIn*Width-1:0]  data_i,
  input  wire  [NOut*NIn-1:0]   sel_i,
  output logic [NOut*Width-1:0] data_o
);
  always_comb begin
    data_o = '0;
    for (int unsigned o = 0; o < NOut; o++) begin
      for (int unsigned i = 0; i < NIn; i++) begin
        data_o[o*Width +: Width] = data_o[o*Width +: Width]
            | (data_i[i*Width +: Width] & {Width{sel_i[o*NIn + i]}});
      end
    end
  end
endmodule

`default_nettype wire
