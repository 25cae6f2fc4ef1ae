// mesh_tile: one mesh tile = mesh_router + pe + mesh_cfgchain stage (Impl "full"), or
// mesh_router_lean + pe_lite + mesh_cfgchain_lean (Impl "lite", the 1x1 board); the PE of
// either is mesh_pe's. mesh_top builds the "micro_mt" mesh without tiles.
//
// Mesh links are the router's N/E/S/W ports (index 0..3); the PE sits on the local port
// (rx = router's local output, with per-color ready; tx = router's local input). The
// config stage routes targets 5 (route table) and 9 (router counters) to the router and
// everything else to the PE's cfg slave.
`default_nettype none

module mesh_tile #(
  parameter int unsigned PeIndex = 0,      // q = r*Cols + c: config chain position
  parameter int unsigned AWords = 16384,   // PE SRAM A elements
  parameter int unsigned BWords = 8192,    // PE SRAM B words
  parameter int unsigned NumQueues = 4,    // PE input queues
  parameter int unsigned QueueDepth = 8,   // PE input queue depth
  parameter int unsigned FifoDepth = 2,    // router input FIFO depth
  parameter bit [3:0] Ports = 4'b1111,     // router links that exist (N, E, S, W = bit 0..3)
  parameter bit [3:0] RegOut = 4'b0000,    // lite: router links with an output register (host)
  parameter bit LocalFifo = 1'b0,          // lite: a FIFO on the router's local input (host)
  parameter bit [63:0] Impl = "full"       // the implementation (mesh_top): "full" or "lite"
) (
  input  wire          clk_i,
  input  wire          rst_ni,
  input  wire  [3:0]   in_valid_i,   // N, E, S, W
  input  wire  [147:0] in_data_i,
  output wire  [3:0]   in_ready_o,
  output wire  [3:0]   out_valid_o,
  output wire  [147:0] out_data_o,
  input  wire  [3:0]   out_ready_i,
  input  wire          cfg_in_valid_i,
  input  wire  [61:0]  cfg_in_data_i,
  output wire          cfg_in_ready_o,
  output wire          cfg_out_valid_o,
  output wire  [61:0]  cfg_out_data_o,
  input  wire          cfg_out_ready_i,
  input  wire          ctr_clear_i,
  output wire  [79:0]  rt_o,
  output wire          idle_o,
  output wire          fabric_idle_o,  // router and PE idle (the config stage may be busy)
  output wire          mac_busy_o
);
  wire        rx_valid, rx_ready, tx_valid, tx_ready;
  wire [36:0] rx_data, tx_data;
  wire [15:0] color_ready;
  wire        rt_we;
  wire [3:0]  rt_addr;
  wire [4:0]  rt_wdata;
  wire        cfg_req, cfg_we, cfg_gnt, cfg_rvalid;
  wire [3:0]  cfg_target;
  wire [15:0] cfg_addr;
  wire [31:0] cfg_wdata, cfg_rdata;
  wire        router_idle, chain_idle, pe_idle;
  localparam bit [63:0] ImplLite = "lite";
  localparam bit Lean = (Impl == ImplLite);  // area-lean PE, router and chain stage (board)

  // lite: the shared-bus router (input FIFOs 1 deep, none on the local input unless
  // LocalFifo: pe_lite holds its tx until taken; mesh_router_lean)
  if (Lean) begin : g_lean
    wire        rt_re, rt_route;  // registered router reads (mesh_cfgchain_lean)
    wire [15:0] rt_rdata;
    wire [3:0]  loc_next_color;  // for a PE that registers its ready (pe_micro_mt), not pe_lite
    mesh_router_lean #(.Ports(Ports), .RegOut(RegOut), .LocalFifo(LocalFifo)) u_router (
      .clk_i, .rst_ni,
      .in_valid_i         ({tx_valid, in_valid_i}),
      .in_data_i          ({tx_data, in_data_i}),
      .in_ready_o         ({tx_ready, in_ready_o}),
      .out_valid_o,
      .out_data_o,
      .out_ready_i,
      .loc_valid_o        (rx_valid),
      .loc_data_o         (rx_data),
      .loc_ready_i        (rx_ready),
      .local_color_ready_i(color_ready),
      .loc_next_color_o   (loc_next_color),
      .rt_we_i            (rt_we),
      .rt_re_i            (rt_re),
      .rt_route_i         (rt_route),
      .rt_addr_i          (rt_addr),
      .rt_wdata_i         (rt_wdata),
      .rt_o,
      .rt_rdata_o         (rt_rdata),
      .ctr_clear_i,
      .idle_o             (router_idle)
    );
    wire [31:0] unused_depth = FifoDepth;  // the lean router's FIFOs are 1 deep
    wire unused_next = ^loc_next_color;
    // the board's chain stage: 1 entry, one read at a time, router reads registered
    mesh_cfgchain_lean #(.PeIndex(PeIndex)) u_cfg (
      .clk_i, .rst_ni,
      .in_valid_i  (cfg_in_valid_i),
      .in_data_i   (cfg_in_data_i),
      .in_ready_o  (cfg_in_ready_o),
      .out_valid_o (cfg_out_valid_o),
      .out_data_o  (cfg_out_data_o),
      .out_ready_i (cfg_out_ready_i),
      .rt_we_o     (rt_we),
      .rt_re_o     (rt_re),
      .rt_route_o  (rt_route),
      .rt_addr_o   (rt_addr),
      .rt_wdata_o  (rt_wdata),
      .rt_rdata_i  (rt_rdata),
      .cfg_req_o   (cfg_req),
      .cfg_we_o    (cfg_we),
      .cfg_target_o(cfg_target),
      .cfg_addr_o  (cfg_addr),
      .cfg_wdata_o (cfg_wdata),
      .cfg_gnt_i   (cfg_gnt),
      .cfg_rvalid_i(cfg_rvalid),
      .cfg_rdata_i (cfg_rdata),
      .idle_o      (chain_idle)
    );
  end else begin : g_full
    wire [2:0]  ctr_addr;  // combinational counter reads (mesh_cfgchain)
    wire [31:0] ctr_rdata;
    wire [4:0] unused_regout = {RegOut, LocalFifo};  // mesh_router: every output registered
    mesh_router #(.FifoDepth(FifoDepth), .Ports(Ports)) u_router (
      .clk_i, .rst_ni,
      .in_valid_i         ({tx_valid, in_valid_i}),
      .in_data_i          ({tx_data, in_data_i}),
      .in_ready_o         ({tx_ready, in_ready_o}),
      .out_valid_o,
      .out_data_o,
      .out_ready_i,
      .loc_valid_o        (rx_valid),
      .loc_data_o         (rx_data),
      .loc_ready_i        (rx_ready),
      .local_color_ready_i(color_ready),
      .rt_we_i            (rt_we),
      .rt_addr_i          (rt_addr),
      .rt_wdata_i         (rt_wdata),
      .rt_o,
      .ctr_addr_i         (ctr_addr),
      .ctr_rdata_o        (ctr_rdata),
      .ctr_clear_i,
      .idle_o             (router_idle)
    );
    mesh_cfgchain #(.PeIndex(PeIndex)) u_cfg (
      .clk_i, .rst_ni,
      .in_valid_i  (cfg_in_valid_i),
      .in_data_i   (cfg_in_data_i),
      .in_ready_o  (cfg_in_ready_o),
      .out_valid_o (cfg_out_valid_o),
      .out_data_o  (cfg_out_data_o),
      .out_ready_i (cfg_out_ready_i),
      .rt_we_o     (rt_we),
      .rt_addr_o   (rt_addr),
      .rt_wdata_o  (rt_wdata),
      .rt_i        (rt_o),
      .ctr_addr_o  (ctr_addr),
      .ctr_rdata_i (ctr_rdata),
      .cfg_req_o   (cfg_req),
      .cfg_we_o    (cfg_we),
      .cfg_target_o(cfg_target),
      .cfg_addr_o  (cfg_addr),
      .cfg_wdata_o (cfg_wdata),
      .cfg_gnt_i   (cfg_gnt),
      .cfg_rvalid_i(cfg_rvalid),
      .cfg_rdata_i (cfg_rdata),
      .idle_o      (chain_idle)
    );
  end

  // the PE of this Impl (mesh_pe: pe, or pe_lite on the board)
  mesh_pe #(
    .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues), .QueueDepth(QueueDepth),
    .Impl(Impl)
  ) u_pe (
    .clk_i, .rst_ni,
    .rx_valid_i   (rx_valid),
    .rx_data_i    (rx_data),
    .rx_ready_o   (rx_ready),
    .color_ready_o(color_ready),
    .tx_valid_o   (tx_valid),
    .tx_data_o    (tx_data),
    .tx_ready_i   (tx_ready),
    .cfg_req_i    (cfg_req),
    .cfg_we_i     (cfg_we),
    .cfg_target_i (cfg_target),
    .cfg_addr_i   (cfg_addr),
    .cfg_wdata_i  (cfg_wdata),
    .cfg_gnt_o    (cfg_gnt),
    .cfg_rvalid_o (cfg_rvalid),
    .cfg_rdata_o  (cfg_rdata),
    .idle_o       (pe_idle),
    .mac_busy_o,
    .ctr_clear_i
  );

  assign idle_o = router_idle && chain_idle && pe_idle;
  assign fabric_idle_o = router_idle && pe_idle;
endmodule

`default_nettype wire
