// mesh_top: the accelerator: Rows x Cols mesh_tiles (router + PE + config stage) and the
// host port on the W port of tile (0, 0) and at both ends of the config chain.
//
// Tiles are wired exactly like mesh_fabric (N of (r, c) to S of (r-1, c), E to W of
// (r, c+1)); edge inputs are idle and edge outputs always ready (off-mesh routes drop).
// The host talks 32-bit command and response words (architecture.md section 6).
//
// Impl names the implementation (docs/implementations.md); everything else that differs
// between them follows from it here:
//   "full"     pe, mesh_router, mesh_hostport, a mesh_cfgchain stage per tile: the sim
//              backend, make sim, make train
//   "lite"     pe_lite, mesh_router_lean, mesh_hostport_lean, a mesh_cfgchain_lean stage per
//              tile, routers without off-mesh links: the 1x1 board (default bitstream)
//   "micro_mt" one pe_micro_mt for all PEs (N >= 3), mesh_router_lean without off-mesh links
//              (LocalFirst, LocalReadyBus, RegGnt, ...), mesh_hostport_lean, one
//              mesh_cfgbus_lean stage: the 2x2 board
`default_nettype none

module mesh_top #(
  parameter int unsigned Rows = 2,            // mesh rows (1..8 tested)
  parameter int unsigned Cols = 2,            // mesh columns (1..8 tested)
  parameter int unsigned AWords = 16384,      // PE SRAM A elements
  parameter int unsigned BWords = 8192,       // PE SRAM B words
  parameter int unsigned NumQueues = 4,       // PE input queues
  parameter int unsigned QueueDepth = 8,      // PE input queue depth
  parameter int unsigned CollectDepth = 256,  // host port COLLECT buffer words
  parameter int unsigned FifoDepth = 2,       // router input FIFO depth
  parameter bit [63:0] Impl = "full",         // the implementation: "full", "lite", "micro_mt"
  localparam int unsigned P = Rows * Cols
) (
  input  wire         clk_i,
  input  wire         rst_ni,
  input  wire         cmd_valid_i,
  input  wire  [31:0] cmd_data_i,
  output wire         cmd_ready_o,
  output wire         rsp_valid_o,
  output wire  [31:0] rsp_data_o,
  input  wire         rsp_ready_i,
  output wire [P-1:0] mac_busy_o,  // per PE, for utilization measurements
  output wire         stream_o,    // streaming phase in progress (host port), likewise
  output wire         idle_o
);
  localparam int unsigned W = 37;
  localparam bit [63:0] ImplFull = "full", ImplLite = "lite", ImplMicroMt = "micro_mt";
  // the board's implementations: area-lean router, host port and config stages, and routers
  // without their off-mesh links
  localparam bit Lean = (Impl != ImplFull);
  localparam bit TrimEdges = Lean;
  localparam bit MicroMt = (Impl == ImplMicroMt);
  if (Impl != ImplFull && Impl != ImplLite && Impl != ImplMicroMt) begin : g_bad_impl
    $error("mesh_top: Impl must be \"full\", \"lite\" or \"micro_mt\"");
  end

  // per tile q, port p (0 N, 1 E, 2 S, 3 W): flat index q*4 + p
  wire [P*4-1:0]   in_valid, in_ready, out_valid, out_ready;
  wire [P*4*W-1:0] in_data, out_data;
  wire [P:0]       cv, cr;       // config chain: link k enters tile k; link P returns
  wire [62*(P+1)-1:0] cd;
  wire [P-1:0]     tile_idle, tile_fabric_idle;
  wire [P*80-1:0]  rt;
  wire             clear;
  wire             host_in_valid, host_in_ready, host_out_valid, host_out_ready;
  wire [W-1:0]     host_in_data, host_out_data;
  // micro_mt: the routers' local ports to pe_micro_mt, their config ports to the bus
  wire [P-1:0]     mt_rx_valid, mt_rx_ready, mt_tx_valid, mt_tx_ready;
  wire [P*W-1:0]   mt_rx_data;
  wire [P*4-1:0]   mt_rx_next_color;
  wire [W-1:0]     mt_tx_data;
  wire [P-1:0]     mt_rt_we, mt_rt_re, mt_router_idle, mt_pe_idle;
  wire             mt_rt_route;
  wire [3:0]       mt_rt_addr;
  wire [4:0]       mt_rt_wdata;
  wire [P*16-1:0]  mt_rt_rdata;
  wire [P-1:0]     mt_cfg_req, mt_cfg_gnt;
  wire             mt_cfg_we, mt_cfg_idle, mt_cfg_out_valid;
  wire [3:0]       mt_cfg_target;
  wire [15:0]      mt_cfg_addr;
  wire [31:0]      mt_cfg_wdata, mt_cfg_rdata;
  wire [61:0]      mt_cfg_out_data;
  wire [P-1:0]     mt_f_req, mt_f_gnt;
  wire             mt_f_we, mt_f_start, mt_f_add, mt_f_hsel;
  wire [2:0]       mt_f_sel;
  wire [15:0]      mt_f_d;
  wire             mt_f_done;
  wire [15:0]      mt_f_y;

  for (genvar r = 0; r < Rows; r++) begin : g_row
    for (genvar c = 0; c < Cols; c++) begin : g_col
      localparam int unsigned Q = r * Cols + c;
      if (r > 0) begin : g_n
        assign in_valid[Q*4+0] = out_valid[(Q-Cols)*4+2];
        assign in_data[(Q*4+0)*W +: W] = out_data[((Q-Cols)*4+2)*W +: W];
        assign out_ready[(Q-Cols)*4+2] = in_ready[Q*4+0];
      end else begin : g_n_edge
        assign in_valid[Q*4+0] = 1'b0;
        assign in_data[(Q*4+0)*W +: W] = '0;
        assign out_ready[Q*4+0] = 1'b1;
      end
      if (r == Rows - 1) begin : g_s_edge
        assign in_valid[Q*4+2] = 1'b0;
        assign in_data[(Q*4+2)*W +: W] = '0;
        assign out_ready[Q*4+2] = 1'b1;
      end else begin : g_s
        assign in_valid[Q*4+2] = out_valid[(Q+Cols)*4+0];
        assign in_data[(Q*4+2)*W +: W] = out_data[((Q+Cols)*4+0)*W +: W];
        assign out_ready[(Q+Cols)*4+0] = in_ready[Q*4+2];
      end
      if (c > 0) begin : g_w
        assign in_valid[Q*4+3] = out_valid[(Q-1)*4+1];
        assign in_data[(Q*4+3)*W +: W] = out_data[((Q-1)*4+1)*W +: W];
        assign out_ready[(Q-1)*4+1] = in_ready[Q*4+3];
      end else if (r == 0) begin : g_w_host
        assign in_valid[Q*4+3] = host_in_valid;
        assign in_data[(Q*4+3)*W +: W] = host_in_data;
        assign host_in_ready = in_ready[Q*4+3];
        assign host_out_valid = out_valid[Q*4+3];
        assign host_out_data = out_data[(Q*4+3)*W +: W];
        assign out_ready[Q*4+3] = host_out_ready;
      end else begin : g_w_edge
        assign in_valid[Q*4+3] = 1'b0;
        assign in_data[(Q*4+3)*W +: W] = '0;
        assign out_ready[Q*4+3] = 1'b1;
      end
      if (c == Cols - 1) begin : g_e_edge
        assign in_valid[Q*4+1] = 1'b0;
        assign in_data[(Q*4+1)*W +: W] = '0;
        assign out_ready[Q*4+1] = 1'b1;
      end else begin : g_e
        assign in_valid[Q*4+1] = out_valid[(Q+1)*4+3];
        assign in_data[(Q*4+1)*W +: W] = out_data[((Q+1)*4+3)*W +: W];
        assign out_ready[(Q+1)*4+3] = in_ready[Q*4+1];
      end

      // links that exist: N unless row 0, E unless the last column, S unless the last row,
      // W unless column 0 (except tile (0, 0), whose W port is the host port)
      // Lean: the router's links are not registered (the next router's input FIFO is),
      // except the host port's (W of tile (0, 0)), and only tile (0, 0)'s router has a FIFO
      // on its local input (the PE holds its tx), see mesh_router_lean
      localparam bit [3:0] Ports = TrimEdges
          ? {c > 0 || r == 0, r < Rows - 1, c < Cols - 1, r > 0} : 4'b1111;
      if (MicroMt) begin : g_mt
        // the tile is its router; the PE is pe_micro_mt's PE Q, the config stage the bus
        wire unused_fifo = ^{FifoDepth, AWords, BWords, NumQueues, QueueDepth};
        mesh_router_lean #(
          .Ports(Ports), .RegOut((Q == 0) ? 4'b1000 : 4'b0000), .LocalFifo(Q == 0),
          .LocalFirst(Q != 0), .LocalReadyBus(1'b1),
          .ErrLate(1'b1), .RegOutEmpty(1'b1), .RegGnt(1'b1)
        ) u_router (
          .clk_i, .rst_ni,
          .in_valid_i         ({mt_tx_valid[Q], in_valid[Q*4 +: 4]}),
          .in_data_i          ({mt_tx_data, in_data[Q*4*W +: 4*W]}),
          .in_ready_o         ({mt_tx_ready[Q], in_ready[Q*4 +: 4]}),
          .out_valid_o        (out_valid[Q*4 +: 4]),
          .out_data_o         (out_data[Q*4*W +: 4*W]),
          .out_ready_i        (out_ready[Q*4 +: 4]),
          .loc_valid_o        (mt_rx_valid[Q]),
          .loc_data_o         (mt_rx_data[Q*W +: W]),
          .loc_ready_i        (mt_rx_ready[Q]),
          .local_color_ready_i({15'b0, mt_rx_ready[Q]}),
          .loc_next_color_o   (mt_rx_next_color[Q*4 +: 4]),
          .rt_we_i            (mt_rt_we[Q]),
          .rt_re_i            (mt_rt_re[Q]),
          .rt_route_i         (mt_rt_route),
          .rt_addr_i          (mt_rt_addr),
          .rt_wdata_i         (mt_rt_wdata),
          .rt_o               (rt[Q*80 +: 80]),
          .rt_rdata_o         (mt_rt_rdata[Q*16 +: 16]),
          .ctr_clear_i        (clear),
          .idle_o             (mt_router_idle[Q])
        );
        assign tile_idle[Q] = mt_router_idle[Q] && mt_pe_idle[Q] && (Q != 0 || mt_cfg_idle);
        assign tile_fabric_idle[Q] = mt_router_idle[Q] && mt_pe_idle[Q];
        if (Q + 1 < P) begin : g_nolink  // the chain's inner links are unused
          assign cv[Q+1] = 1'b0;
          assign cd[(Q+1)*62 +: 62] = '0;
          assign cr[Q+1] = 1'b0;
        end
      end else begin : g_tile
      mesh_tile #(
        .PeIndex(Q), .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues),
        .QueueDepth(QueueDepth), .FifoDepth(FifoDepth), .Ports(Ports),
        .RegOut((Q == 0) ? 4'b1000 : 4'b0000), .LocalFifo(Q == 0), .Impl(Impl)
      ) u_tile (
        .clk_i, .rst_ni,
        .in_valid_i     (in_valid[Q*4 +: 4]),
        .in_data_i      (in_data[Q*4*W +: 4*W]),
        .in_ready_o     (in_ready[Q*4 +: 4]),
        .out_valid_o    (out_valid[Q*4 +: 4]),
        .out_data_o     (out_data[Q*4*W +: 4*W]),
        .out_ready_i    (out_ready[Q*4 +: 4]),
        .cfg_in_valid_i (cv[Q]),
        .cfg_in_data_i  (cd[Q*62 +: 62]),
        .cfg_in_ready_o (cr[Q]),
        .cfg_out_valid_o(cv[Q+1]),
        .cfg_out_data_o (cd[(Q+1)*62 +: 62]),
        .cfg_out_ready_i(cr[Q+1]),
        .ctr_clear_i    (clear),
        .rt_o           (rt[Q*80 +: 80]),
        .idle_o         (tile_idle[Q]),
        .fabric_idle_o  (tile_fabric_idle[Q]),
        .mac_busy_o     (mac_busy_o[Q])
      );
      end
    end
  end

  if (MicroMt) begin : g_mt
    // one micro-machine runs the P PEs (pe_micro_mt); one FPU with common operand ports; the
    // config bus (mesh_cfgbus_lean) is the chain's one stage, between its links 0 and P
    pe_micro_mt #(
      .N(P), .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues), .QueueDepth(QueueDepth),
      .LocalFirst(P'({P{1'b1}} << 1))  // the routers' (all but tile (0, 0)'s)
    ) u_pes (
      .clk_i, .rst_ni,
      .rx_valid_i   (mt_rx_valid),
      .rx_data_i    (mt_rx_data),
      .rx_ready_o   (mt_rx_ready),
      .rx_next_color_i(mt_rx_next_color),
      .tx_valid_o   (mt_tx_valid),
      .tx_data_o    (mt_tx_data),
      .tx_ready_i   (mt_tx_ready),
      .cfg_req_i    (mt_cfg_req),
      .cfg_we_i     (mt_cfg_we),
      .cfg_target_i (mt_cfg_target),
      .cfg_addr_i   (mt_cfg_addr),
      .cfg_wdata_i  (mt_cfg_wdata),
      .cfg_gnt_o    (mt_cfg_gnt),
      .cfg_rdata_o  (mt_cfg_rdata),
      .idle_o       (mt_pe_idle),
      .mac_busy_o,
      .ctr_clear_i  (clear),
      .fpu_req_o    (mt_f_req),
      .fpu_gnt_i    (mt_f_gnt),
      .fpu_we_o     (mt_f_we),
      .fpu_sel_o    (mt_f_sel),
      .fpu_d_o      (mt_f_d),
      .fpu_start_o  (mt_f_start),
      .fpu_add_o    (mt_f_add),
      .fpu_done_i   (mt_f_done),
      .fpu_hsel_o   (mt_f_hsel),
      .fpu_y_i      (mt_f_y)
    );
    pe_fpu_share #(.N(P)) u_fpu (
      .clk_i, .rst_ni,
      .req_i  (mt_f_req),
      .gnt_o  (mt_f_gnt),
      .we_i   (mt_f_we),
      .sel_i  (mt_f_sel),
      .d_i    (mt_f_d),
      .start_i(mt_f_start),
      .add_i  (mt_f_add),
      .done_o (mt_f_done),
      .hsel_i (mt_f_hsel),
      .y_o    (mt_f_y)
    );
    mesh_cfgbus_lean #(.P(P)) u_cfgbus (
      .clk_i, .rst_ni,
      .in_valid_i  (cv[0]),
      .in_data_i   (cd[0 +: 62]),
      .in_ready_o  (cr[0]),
      .out_valid_o (mt_cfg_out_valid),
      .out_data_o  (mt_cfg_out_data),
      .out_ready_i (cr[P]),
      .rt_we_o     (mt_rt_we),
      .rt_re_o     (mt_rt_re),
      .rt_route_o  (mt_rt_route),
      .rt_addr_o   (mt_rt_addr),
      .rt_wdata_o  (mt_rt_wdata),
      .rt_rdata_i  (mt_rt_rdata),
      .cfg_req_o   (mt_cfg_req),
      .cfg_we_o    (mt_cfg_we),
      .cfg_target_o(mt_cfg_target),
      .cfg_addr_o  (mt_cfg_addr),
      .cfg_wdata_o (mt_cfg_wdata),
      .cfg_gnt_i   (mt_cfg_gnt),
      .cfg_rdata_i (mt_cfg_rdata),
      .idle_o      (mt_cfg_idle)
    );
    assign cv[P] = mt_cfg_out_valid;
    assign cd[P*62 +: 62] = mt_cfg_out_data;
    wire unused_mt = ^{cv[P-1:1], cd[62*P-1:62], cr[P-1:1]};
  end else begin : g_no_mt
    // not a pe_micro_mt mesh: its wires are idle
    assign mt_rx_ready = '0;
    assign mt_tx_valid = '0;
    assign mt_tx_data = '0;
    assign mt_pe_idle = '0;
    assign mt_rt_we = '0;
    assign mt_rt_re = '0;
    assign mt_rt_route = 1'b0;
    assign mt_rt_addr = '0;
    assign mt_rt_wdata = '0;
    assign mt_cfg_req = '0;
    assign mt_cfg_gnt = '0;
    assign mt_cfg_we = 1'b0;
    assign mt_cfg_idle = 1'b1;
    assign mt_cfg_out_valid = 1'b0;
    assign mt_cfg_target = '0;
    assign mt_cfg_addr = '0;
    assign mt_cfg_wdata = '0;
    assign mt_cfg_rdata = '0;
    assign mt_cfg_out_data = '0;
    assign mt_f_req = '0;
    assign mt_f_gnt = '0;
    assign mt_f_we = 1'b0;
    assign mt_f_start = 1'b0;
    assign mt_f_add = 1'b0;
    assign mt_f_hsel = 1'b0;
    assign mt_f_sel = '0;
    assign mt_f_d = '0;
    assign mt_f_done = 1'b0;
    assign mt_f_y = '0;
    assign mt_router_idle = '0;
    assign mt_rx_valid = '0;
    assign mt_rx_data = '0;
    assign mt_rx_next_color = '0;
    assign mt_tx_ready = '0;
    assign mt_rt_rdata = '0;
    wire unused_mt = ^{mt_rx_ready, mt_tx_valid, mt_tx_data, mt_pe_idle, mt_rt_we, mt_rt_re,
                       mt_rt_route, mt_rt_addr, mt_rt_wdata, mt_cfg_req, mt_cfg_gnt, mt_cfg_we,
                       mt_cfg_idle, mt_cfg_out_valid, mt_cfg_target, mt_cfg_addr, mt_cfg_wdata,
                       mt_cfg_rdata, mt_cfg_out_data, mt_f_req, mt_f_gnt, mt_f_we, mt_f_start,
                       mt_f_add, mt_f_hsel, mt_f_sel, mt_f_d, mt_f_done, mt_f_y, mt_router_idle,
                       mt_rx_valid, mt_rx_data, mt_rx_next_color, mt_tx_ready, mt_rt_rdata};
  end

  // the host port; Lean (board): mesh_hostport_lean (same protocol, narrower counters,
  // one config read in flight)
  if (Lean) begin : g_host_lean
    // a registered 1-entry slice between the host port and the config chain (timing: no
    // combinational path from the chain and the PEs' grants back into the host port and
    // the link; it passes a beat every other cycle, far above the link's rate). It is a
    // 1-entry mesh_fifo without bypass written out, because it also zeroes a read beat's
    // data field (the host port leaves its command word there; the chain stage ORs the word
    // read into it): the flip-flops' synchronous reset does that for free, where the
    // host port spent 32 LUT4 on it.
    wire        cs_valid, cs_ready, cs_empty;
    // The command words go to the host port as they come: on the board they come from the
    // link's receive buffer (board_fifo), whose output register refills only when empty, so
    // the decoder's cmd_ready_o reaches no pointer or block RAM enable there.
    wire [61:0] cs_data;
    localparam logic [1:0] KindRead = 2'd1;  // config beat kinds (architecture.md section 6)
    // micro_mt: the bus (mesh_cfgbus_lean) builds a read's response from its own register and
    // the PEs' read handlers never look at the beat's data, so the slice neither zeroes nor
    // holds it: the host port keeps a WRITE's word on cmd_* until its beat has left the
    // slice (HoldWrite), and the beat's data field is that word. Its pe and target fields
    // are the host port's walker registers, which change only with no beat in the slice
    // (a new command is decoded only after the last WRITE word was taken, or after the read
    // engine got its last word back). The slice keeps the kind and the address (the walker
    // counts on as a beat goes out); 44 flip-flops without logic of their own are saved.
    localparam bit HoldWrite = MicroMt;
    logic       cs_full_q;
    logic [61:0] cs_q;  // no reset: qualified by cs_full_q
    wire        cs_push = cs_valid && !cs_full_q;
    assign cs_ready = !cs_full_q;
    assign cs_empty = !cs_full_q;
    assign cv[0] = cs_full_q;
    assign cd[0 +: 62] = HoldWrite ? {cs_q[61:60], cs_data[59:48], cs_q[47:32], cs_data[31:0]}
                                   : cs_q;
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) cs_full_q <= 1'b0;
      else cs_full_q <= cs_full_q ? !cr[0] : cs_valid;
    end
    always_ff @(posedge clk_i) begin
      if (cs_push) begin
        cs_q[61:32] <= cs_data[61:32];
        if (cs_data[61:60] == KindRead) cs_q[31:0] <= 32'b0;  // a read beat: data 0
        else cs_q[31:0] <= cs_data[31:0];
      end
    end
    mesh_hostport_lean #(
      .NumPes(P), .AWords(AWords), .BWords(BWords), .CollectDepth(CollectDepth),
      .HoldWrite(HoldWrite)
    ) u_host (
      .clk_i, .rst_ni,
      .cmd_valid_i, .cmd_data_i, .cmd_ready_o,
      .rsp_valid_o, .rsp_data_o, .rsp_ready_i,
      .inj_valid_o    (host_in_valid),
      .inj_data_o     (host_in_data),
      .inj_ready_i    (host_in_ready),
      .ej_valid_i     (host_out_valid),
      .ej_data_i      (host_out_data),
      .ej_ready_o     (host_out_ready),
      .cfg_out_valid_o(cs_valid),
      .cfg_out_data_o (cs_data),
      .cfg_out_ready_i(cs_ready),
      .cfg_in_valid_i (cv[P]),
      .cfg_in_data_i  (cd[P*62 +: 62]),
      .cfg_in_ready_o (cr[P]),
      .route0_i       (rt[0 +: 80]),
      .mesh_idle_i    (idle_o && cs_empty),
      .fabric_idle_i  (&tile_fabric_idle),
      .clear_o        (clear),
      .stream_o       (stream_o)
    );
  end else begin : g_host
    mesh_hostport #(
      .NumPes(P), .AWords(AWords), .BWords(BWords), .CollectDepth(CollectDepth)
    ) u_host (
      .clk_i, .rst_ni,
      .cmd_valid_i, .cmd_data_i, .cmd_ready_o,
      .rsp_valid_o, .rsp_data_o, .rsp_ready_i,
      .inj_valid_o    (host_in_valid),
      .inj_data_o     (host_in_data),
      .inj_ready_i    (host_in_ready),
      .ej_valid_i     (host_out_valid),
      .ej_data_i      (host_out_data),
      .ej_ready_o     (host_out_ready),
      .cfg_out_valid_o(cv[0]),
      .cfg_out_data_o (cd[0 +: 62]),
      .cfg_out_ready_i(cr[0]),
      .cfg_in_valid_i (cv[P]),
      .cfg_in_data_i  (cd[P*62 +: 62]),
      .cfg_in_ready_o (cr[P]),
      .route0_i       (rt[0 +: 80]),
      .mesh_idle_i    (idle_o),
      .fabric_idle_i  (&tile_fabric_idle),
      .clear_o        (clear),
      .stream_o       (stream_o)
    );
  end

  assign idle_o = &tile_idle;
endmodule

`default_nettype wire
