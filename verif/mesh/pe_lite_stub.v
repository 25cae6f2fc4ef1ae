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
`include "pe_ports.vh"
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
