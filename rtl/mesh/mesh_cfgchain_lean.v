// mesh_cfgchain_lean: one tile's stage of the config chain on the board (mesh_tile Lean;
// architecture.md section 6). The same beats and rules as mesh_cfgchain, for a chain that
// carries one read at a time (mesh_hostport_lean) and a link far slower than the fabric.
//
// Beats {kind[1:0] (0 write, 1 read, 2 response), pe[7:0], target[3:0], addr[15:0],
// data[31:0]} arrive in PE order and leave through a registered 1-entry buffer (ready only
// when it is empty: one beat every other cycle, no ready path along the chain). A write or
// read whose pe is this tile's PeIndex (or 0xff for writes) is performed here: targets 5
// (route table) and 9 (router counters) by mesh_router_lean, the rest by the PE's cfg slave
// (req/gnt). A matching unicast write is consumed; a broadcast write is performed and
// passed on; everything else is passed on unchanged.
// Reads, from the PE or the router alike: the request is taken in one cycle (the router
// always takes it), its word arrives the next cycle (PE: cfg_rvalid_i; router: rt_rdata_i,
// which is zero in any other cycle) and is pushed with the read's own beat, which stays on
// in_* until then, turned into the response. So the beat is its own response header, and
// the word is ORed into its data field, which is 0 in a read beat (mesh_hostport_lean sends
// it so): one LUT4 per data bit and no multiplexer (the router's word is 0 unless it was
// read, the PE's is masked unless the PE was; no route-table or counter multiplexer here:
// the router reads those through its own decoder). A read is only requested when the
// buffer is empty, so its response is sure to fit.
`default_nettype none

module mesh_cfgchain_lean #(
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
  // router slave (mesh_router_lean)
  output wire         rt_we_o,
  output wire         rt_re_o,      // read: data on rt_rdata_i next cycle
  output wire         rt_route_o,   // the access is to the route table (else counters)
  output wire  [3:0]  rt_addr_o,
  output wire  [4:0]  rt_wdata_o,
  input  wire  [15:0] rt_rdata_i,   // last cycle's read, 0 after none
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

  wire [3:0]  target;
  wire [15:0] addr;
  wire        rd, bcast, match, to_router, route;
  // match says all this stage needs of pe and sel; a matching beat that is no read writes
  wire [7:0]  unused_pe;
  wire        unused_wr, unused_sel;
  mesh_cfg_dec #(.PeIndex(PeIndex)) u_dec (
    .hdr_i      (in_data_i[61:32]),
    .pe_o       (unused_pe),
    .target_o   (target),
    .addr_o     (addr),
    .wr_o       (unused_wr),
    .rd_o       (rd),
    .bcast_o    (bcast),
    .sel_o      (unused_sel),
    .match_o    (match),
    .to_router_o(to_router),
    .route_o    (route)
  );

  logic        fifo_valid, fifo_ready, fifo_empty;
  logic [61:0] fifo_data;
  logic        rd_inflight_q, rd_inflight_d;  // a read was taken last cycle: its word is here
  logic        rd_rt_q, rd_pe_q;              // ... from the router, from the PE

  mesh_fifo #(.Width(62), .Depth(1), .Bypass(1'b0)) u_out (
    .clk_i, .rst_ni,
    .in_valid_i (fifo_valid),
    .in_data_i  (fifo_data),
    .in_ready_o (fifo_ready),
    .out_valid_o,
    .out_data_o,
    .out_ready_i,
    .empty_o    (fifo_empty)
  );

  // a read is requested only with the buffer empty and no read in flight (its response is
  // pushed next cycle without back-pressure); fifo_empty and rd_inflight_q are registers
  wire read_room = fifo_empty && !rd_inflight_q;
  wire mine = in_valid_i && match;
  assign rt_re_o = mine && to_router && rd && read_room;
  assign rt_route_o = route;
  assign rt_we_o = mine && to_router && !rd && rt_route_o && (!bcast || fifo_ready);
  assign rt_addr_o = addr[3:0];
  assign rt_wdata_o = in_data_i[4:0];
  // outside the big block: the PE may grant combinationally from cfg_req_o
  assign cfg_req_o = mine && !to_router && !rd_inflight_q
                     && (rd ? fifo_empty : (!bcast || fifo_ready));
  assign cfg_we_o = !rd;
  assign cfg_target_o = target;
  assign cfg_addr_o = addr;
  assign cfg_wdata_o = in_data_i[31:0];
  assign idle_o = fifo_empty && !rd_inflight_q && !in_valid_i;

  always_comb begin
    in_ready_o = 1'b0;
    fifo_valid = 1'b0;
    // a read beat's data is 0: the word read is ORed in (rt_rdata_i is 0 unless read)
    fifo_data = {in_data_i[61:32],
                 in_data_i[31:0] | ({32{rd_pe_q}} & cfg_rdata_i) | {16'b0, rt_rdata_i}};
    rd_inflight_d = 1'b0;
    if (rd_inflight_q) begin
      // the read's word: its beat leaves as the response (the buffer is empty, see read_room)
      fifo_valid = rd_rt_q || cfg_rvalid_i;
      fifo_data[61:60] = KindRsp;
      in_ready_o = fifo_ready;
    end else if (in_valid_i && !match) begin
      fifo_valid = 1'b1;
      in_ready_o = fifo_ready;
    end else if (in_valid_i && to_router) begin
      if (rd) rd_inflight_d = read_room;
      else begin
        in_ready_o = !bcast || fifo_ready;
        fifo_valid = bcast;
      end
    end else if (cfg_req_o && cfg_gnt_i) begin
      if (rd) rd_inflight_d = 1'b1;
      else begin
        in_ready_o = 1'b1;
        fifo_valid = bcast;  // cfg_req_o checked fifo_ready for a broadcast
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_inflight_q <= 1'b0;
      rd_rt_q <= 1'b0;
      rd_pe_q <= 1'b0;
    end else begin
      rd_inflight_q <= rd_inflight_d;
      rd_rt_q <= rt_re_o;
      rd_pe_q <= rd_inflight_d && !rt_re_o;
    end
  end
endmodule

`default_nettype wire
