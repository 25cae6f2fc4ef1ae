// pe_lite_stub: TEST DOUBLE for pe_lite (rtl/pe/pe_lite.v), the board's PE: the PE test
// double verif/mesh/pe_stub.v under pe_lite's name, so that the host-port bench can run
// mesh_top Lean (mesh_hostport_lean, mesh_router_lean) with a PE whose replies it controls
// (tb_mesh_hostport_lean). Same module name, parameters and ports as pe_lite.
`default_nettype none

module pe_lite #(
  parameter int unsigned AWords = 16384,  // passed to the stub (which ignores it)
  parameter int unsigned BWords = 8192,   // passed to the stub (which ignores it)
  parameter int unsigned NumQueues = 4,   // passed to the stub (which ignores it)
  parameter int unsigned QueueDepth = 8   // passed to the stub (which ignores it)
) (
  input  wire         clk_i,
  input  wire         rst_ni,
  input  wire         rx_valid_i,
  input  wire  [36:0] rx_data_i,
  output wire         rx_ready_o,
  output wire  [15:0] color_ready_o,
  output wire         tx_valid_o,
  output wire  [36:0] tx_data_o,
  input  wire         tx_ready_i,
  input  wire         cfg_req_i,
  input  wire         cfg_we_i,
  input  wire  [3:0]  cfg_target_i,
  input  wire  [15:0] cfg_addr_i,
  input  wire  [31:0] cfg_wdata_i,
  output wire         cfg_gnt_o,
  output wire         cfg_rvalid_o,
  output wire  [31:0] cfg_rdata_o,
  output wire         idle_o,
  output wire         mac_busy_o,
  input  wire         ctr_clear_i
);
  pe #(
    .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues), .QueueDepth(QueueDepth)
  ) u_stub (
    .clk_i, .rst_ni, .rx_valid_i, .rx_data_i, .rx_ready_o, .color_ready_o, .tx_valid_o,
    .tx_data_o, .tx_ready_i, .cfg_req_i, .cfg_we_i, .cfg_target_i, .cfg_addr_i, .cfg_wdata_i,
    .cfg_gnt_o, .cfg_rvalid_o, .cfg_rdata_o, .idle_o, .mac_busy_o, .ctr_clear_i
  );
endmodule

`default_nettype wire
