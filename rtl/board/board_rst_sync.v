// board_rst_sync - reset synchronizer: asserts asynchronously, releases on a clock edge
// after Stages flops, so every flop of the design leaves reset in the same cycle.
`default_nettype none

module board_rst_sync #(
  parameter integer Stages = 3  // flops in the release chain (>= 2 against metastability)
) (
  input  wire clk_i,
  input  wire arst_ni,  // asynchronous reset request (PLL not locked, button pressed)
  output wire rst_no    // synchronous release, active low
);
  logic [Stages-1:0] sync_q;
  always_ff @(posedge clk_i or negedge arst_ni) begin
    if (!arst_ni) sync_q <= '0;
    else sync_q <= {sync_q[Stages-2:0], 1'b1};
  end
  assign rst_no = sync_q[Stages-1];
endmodule

`default_nettype wire
