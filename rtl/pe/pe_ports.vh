// pe_ports.vh - the port list of a PE, one for every implementation that sits in a
// mesh_tile (pe, pe_lite) and every module that stands in for one (the PE test doubles,
// pe_micro_mt_solo): included between a PE module's `#(...) (` and `);`.
//
// rx: the router's local output, a beat moves when rx_valid_i and rx_ready_o are high;
// color_ready_o tells the router, per colour, that a wavelet of it would be taken (the
// router offers rx only then). tx: the router's local input, same handshake. cfg: the
// config slave of the tile's chain stage: a request (cfg_req_i with we, target, address,
// data) stays presented until cfg_gnt_o; a read's word comes with cfg_rvalid_o.
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
  output logic        cfg_gnt_o,
  output logic        cfg_rvalid_o,
  output logic [31:0] cfg_rdata_o,
  output wire         idle_o,
  output wire         mac_busy_o,  // a MAC issued this cycle (utilization counters)
  input  wire         ctr_clear_i  // CLEAR: zero the counters
