// mesh_cfgchain: one tile's stage of the config chain (architecture.md section 6).
//
// Beats {kind[1:0] (0 write, 1 read, 2 response), pe[7:0], target[3:0], addr[15:0],
// data[31:0]} arrive in PE order from the host port and leave through a registered FIFO
// of 3 entries (ready depends only on its fill level, so the chain has no long ready path
// and moves one beat per cycle). A write or read
// whose pe is this tile's PeIndex (or 0xff for writes) is performed here: targets 5 (route
// table) and 9 (router counters) by the router, the rest by the PE's cfg slave (req/gnt,
// reads return rvalid in order). A matching read becomes a response beat; a matching
// unicast write is consumed; a broadcast write is performed and passed on; everything else
// is passed on unchanged. PE reads are
// pipelined: one may be granted every cycle (the PE returns its data exactly one cycle
// later, which is pushed as the response beat that cycle); a read is only requested when
// the buffer is sure to have room for its response, and in the cycle a response arrives
// only accesses that push nothing may issue, so nothing overtakes a read and responses
// keep their order. The board's stage (mesh_tile Lean) is mesh_cfgchain_lean.
`default_nettype none

module mesh_cfgchain #(
  parameter int unsigned PeIndex = 0  // this tile's q = r*Cols + c
) (
  input  wire         clk_i,
  input  wire         rst_ni,
  input  wire         in_valid_i,
  input  wire  [61:0] in_data_i,
  output logic        in_ready_o,
  output wire         out_valid_o,
  output wire  [61:0] out_data_o,
  input  wire         out_ready_i,
  // router slave
  output logic        rt_we_o,
  output wire  [3:0]  rt_addr_o,
  output wire  [4:0]  rt_wdata_o,
  input  wire  [79:0] rt_i,
  output wire  [2:0]  ctr_addr_o,
  input  wire  [31:0] ctr_rdata_i,
  // PE cfg slave
  output wire         cfg_req_o,
  output wire         cfg_we_o,
  output wire  [3:0]  cfg_target_o,
  output wire  [15:0] cfg_addr_o,
  output wire  [31:0] cfg_wdata_o,
  input  wire         cfg_gnt_i,
  input  wire         cfg_rvalid_i,
  input  wire  [31:0] cfg_rdata_i,
  output wire         idle_o
);
  localparam logic [1:0] KindRsp = 2'd2;

  wire [7:0]  pe;
  wire [3:0]  target;
  wire [15:0] addr;
  wire        wr, rd, bcast, match, to_router, route;
  wire        unused_sel;   // match: its one PE
  mesh_cfg_dec #(.PeIndex(PeIndex)) u_dec (
    .hdr_i      (in_data_i[61:32]),
    .pe_o       (pe),
    .target_o   (target),
    .addr_o     (addr),
    .wr_o       (wr),
    .rd_o       (rd),
    .bcast_o    (bcast),
    .sel_o      (unused_sel),
    .match_o    (match),
    .to_router_o(to_router),
    .route_o    (route)
  );
  wire [4:0]  rt_entry [16];  // array read: a mux, not an 80-bit shifter (see mesh_route)
  for (genvar c = 0; c < 16; c++) begin : g_rt
    assign rt_entry[c] = rt_i[c*5 +: 5];
  end
  wire [4:0]  rt_mask = rt_entry[addr[3:0]];

  // 3 lets a read issue every cycle (see below)
  localparam int unsigned OutDepth = 3;

  logic        fifo_valid, fifo_ready, fifo_empty;
  logic [61:0] fifo_data;
  logic        rd_inflight_q;          // a PE read was granted last cycle: its data is here now
  logic [29:0] rsp_hdr_q, rsp_hdr_d;   // {kind, pe, target, addr} of that read
  logic [1:0]  cnt_q, cnt_d;           // beats stored in u_out (mirror of its fill level)
  logic        read_room;

  mesh_fifo #(.Width(62), .Depth(OutDepth), .Bypass(1'b0)) u_out (
    .clk_i, .rst_ni,
    .in_valid_i (fifo_valid),
    .in_data_i  (fifo_data),
    .in_ready_o (fifo_ready),
    .out_valid_o,
    .out_data_o,
    .out_ready_i,
    .empty_o    (fifo_empty)
  );

  assign rt_addr_o = addr[3:0];
  assign rt_wdata_o = in_data_i[4:0];
  assign ctr_addr_o = addr[2:0];
  assign cfg_we_o = wr;
  assign cfg_target_o = target;
  assign cfg_addr_o = addr;
  assign cfg_wdata_o = in_data_i[31:0];
  assign idle_o = fifo_empty && !rd_inflight_q && !in_valid_i;

  // A read granted now pushes its response next cycle, without back-pressure. Next cycle
  // u_out holds at most cnt_q + rd_inflight_q beats (the only push this cycle is the
  // arriving response, pops only help), so there is room iff that is below OutDepth.
  // Registered state only: no combinational path from out_ready_i to cfg_req_o/in_ready_o.
  assign read_room = ({1'b0, cnt_q} + {2'b00, rd_inflight_q}) < 3'(OutDepth);

  // outside the big block: the PE may grant combinationally from cfg_req_o. While a read's
  // data arrives (rd_inflight_q) only accesses that push nothing this cycle may issue: a
  // read (its response follows the arriving one) or a unicast write.
  assign cfg_req_o = in_valid_i && match && !to_router
                     && (rd ? read_room
                                            : (!bcast || (fifo_ready && !rd_inflight_q)));

  always_comb begin
    in_ready_o = 1'b0;
    fifo_valid = 1'b0;
    fifo_data = in_data_i;
    rt_we_o = 1'b0;
    rsp_hdr_d = rsp_hdr_q;
    if (rd_inflight_q) begin
      // the response of last cycle's read goes out first; nothing overtakes it
      fifo_valid = cfg_rvalid_i;
      fifo_data = {rsp_hdr_q, cfg_rdata_i};
    end else if (in_valid_i && !match) begin
      fifo_valid = 1'b1;
      in_ready_o = fifo_ready;
    end else if (in_valid_i && to_router) begin
      if (rd) begin
        fifo_valid = 1'b1;
        fifo_data = {KindRsp, pe, target, addr, route ? {27'b0, rt_mask} : ctr_rdata_i};
        in_ready_o = fifo_ready;
      end else begin
        in_ready_o = !bcast || fifo_ready;
        fifo_valid = bcast;
        rt_we_o = in_ready_o && route;
      end
    end
    // PE accesses (also while a response arrives: cfg_req_o only allows non-pushing ones then)
    if (in_valid_i && match && !to_router && cfg_req_o && cfg_gnt_i) begin
      in_ready_o = 1'b1;
      if (bcast) fifo_valid = 1'b1;  // bcast only when !rd_inflight_q, fifo_data = in_data_i
      if (rd) rsp_hdr_d = {KindRsp, pe, target, addr};
    end
  end

  wire rd_grant = cfg_req_o && cfg_gnt_i && rd;
  wire push = fifo_valid && fifo_ready;
  wire pop = out_valid_o && out_ready_i;

  always_comb begin
    cnt_d = cnt_q;
    if (push && !pop) cnt_d = cnt_q + 2'd1;
    else if (pop && !push) cnt_d = cnt_q - 2'd1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_inflight_q <= 1'b0;
      rsp_hdr_q <= '0;
      cnt_q <= '0;
    end else begin
      rd_inflight_q <= rd_grant;
      rsp_hdr_q <= rsp_hdr_d;
      cnt_q <= cnt_d;
    end
  end
endmodule

`default_nettype wire
