// mesh_pe: the PE of a mesh_tile, the implementation that Impl names: "full" the full-rate
// pe, "lite" pe_lite (the 1x1 board: same ports, ISA and results; a MAC takes about 16
// cycles instead of 1). mesh_tile instantiates the PE only here, so the tile's wiring is
// the same for every implementation. Not for "micro_mt": mesh_top builds that mesh
// without tiles (one pe_micro_mt runs all its PEs).
//
// The ports are the PE port list (rtl/pe/pe_ports.vh), passed through by name: rx is the
// router's local output (a beat moves when rx_valid_i and rx_ready_o are high; the router
// offers a colour only when color_ready_o has it), tx the router's local input (same
// handshake), cfg the config slave of the tile's chain stage (a request stays presented
// until cfg_gnt_o; a read's word follows on cfg_rvalid_o).
`default_nettype none

module mesh_pe #(
  parameter int unsigned AWords = 16384,  // PE SRAM A elements
  parameter int unsigned BWords = 8192,   // PE SRAM B words
  parameter int unsigned NumQueues = 4,   // PE input queues
  parameter int unsigned QueueDepth = 8,  // PE input queue depth
  parameter bit [63:0] Impl = "full"      // the implementation (mesh_top): "full" or "lite"
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
  output wire         mac_busy_o,  // a MAC issued this cycle (utilization counters)
  input  wire         ctr_clear_i  // CLEAR: zero the counters
);
  localparam bit [63:0] ImplLite = "lite";

  if (Impl == ImplLite) begin : g_lite
    pe_lite #(
      .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues), .QueueDepth(QueueDepth)
    ) u_pe (.*);
  end else begin : g_full
    pe #(
      .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues), .QueueDepth(QueueDepth)
    ) u_pe (.*);
  end
endmodule

`default_nettype wire
