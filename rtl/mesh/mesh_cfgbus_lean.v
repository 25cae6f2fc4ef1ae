// mesh_cfgbus_lean: the config chain of a pe_micro_mt board (mesh_top Micro 2) as one stage
// for all tiles: the PEs share one micro-machine, so one request bus reaches them all, and
// the stages of a chain (mesh_cfgchain_lean: a 62-bit buffer and a decoder per tile) would
// only carry beats between tiles that sit side by side. architecture.md section 6.
//
// Beats {kind[1:0] (0 write, 1 read, 2 response), pe[7:0], target[3:0], addr[15:0],
// data[31:0]} come from the host port one at a time (mesh_hostport_lean holds one read in
// flight). A write or read for PE q < P (or a write for 0xff, every PE) is performed: targets
// 5 (route table) and 9 (router counters) by tile q's mesh_router_lean, the rest by PE q's
// config slave (req/gnt; the address, data, target and direction are common to all PEs). A
// broadcast write is done when every PE has granted it (each PE's request drops at its own
// grant, so a request is never withdrawn before it is granted); the routers take theirs at
// once. A PE's read word is on the common cfg_rdata_i in the cycle of its grant; a router's
// arrives the cycle after it is taken (rt_rdata_i, zero unless read). It leaves as a response
// beat {2, 0, word}: the host port looks at nothing else of a response. Beats for no PE here are dropped
// (the host port checks the PE number before it sends, and drops returning writes anyway).
`default_nettype none

module mesh_cfgbus_lean #(
  parameter int unsigned P = 4  // PEs (tiles)
) (
  input  wire            clk_i,
  input  wire            rst_ni,
  input  wire            in_valid_i,
  input  wire  [61:0]    in_data_i,
  output logic           in_ready_o,
  output wire            out_valid_o,
  output wire  [61:0]    out_data_o,
  input  wire            out_ready_i,
  // the routers (mesh_router_lean), one enable each
  output wire  [P-1:0]   rt_we_o,
  output wire  [P-1:0]   rt_re_o,      // read: data on rt_rdata_i next cycle
  output wire            rt_route_o,   // the access is to the route table (else counters)
  output wire  [3:0]     rt_addr_o,
  output wire  [4:0]     rt_wdata_o,
  input  wire  [P*16-1:0] rt_rdata_i,  // last cycle's read, 0 after none
  // the PEs' config slaves (pe_micro_mt)
  output wire  [P-1:0]   cfg_req_o,
  output wire            cfg_we_o,
  output wire  [3:0]     cfg_target_o,
  output wire  [15:0]    cfg_addr_o,
  output wire  [31:0]    cfg_wdata_o,
  input  wire  [P-1:0]   cfg_gnt_i,
  input  wire  [31:0]    cfg_rdata_i,   // a read's word, in the cycle of its grant
  output wire            idle_o
);
  localparam logic [1:0] KindRsp = 2'd2;

  wire [3:0]   target;
  wire [15:0]  addr;
  wire         rd, hit, to_router, route;
  logic [P-1:0] sel;
  // hit and sel say all the bus needs of pe; a hit that is no read writes
  wire [7:0]   unused_pe;
  wire         unused_wr, unused_bcast;
  mesh_cfg_dec #(.NumPes(P)) u_dec (
    .hdr_i      (in_data_i[61:32]),
    .pe_o       (unused_pe),
    .target_o   (target),
    .addr_o     (addr),
    .wr_o       (unused_wr),
    .rd_o       (rd),
    .bcast_o    (unused_bcast),
    .sel_o      (sel),
    .match_o    (hit),
    .to_router_o(to_router),
    .route_o    (route)
  );

  logic         rsp_v_q;
  logic [31:0]  rsp_q;                        // no reset: qualified by rsp_v_q
  logic         rd_inflight_q, rd_inflight_d;  // a router read was taken last cycle
  logic [P-1:0] bd_q, bd_d;                    // a broadcast write's PEs that have granted it

  // a read is requested only with no response waiting and no read in flight
  wire read_room = !rsp_v_q && !rd_inflight_q;
  wire mine = in_valid_i && hit;
  assign rt_re_o = {P{mine && to_router && rd && read_room}} & sel;
  assign rt_route_o = route;
  assign rt_we_o = {P{mine && to_router && !rd && rt_route_o}} & sel;
  assign rt_addr_o = addr[3:0];
  assign rt_wdata_o = in_data_i[4:0];
  assign cfg_req_o = {P{mine && !to_router && !rd_inflight_q && (!rd || !rsp_v_q)}} & sel & ~bd_q;
  assign cfg_we_o = !rd;
  assign cfg_target_o = target;
  assign cfg_addr_o = addr;
  assign cfg_wdata_o = in_data_i[31:0];
  assign idle_o = !rsp_v_q && !rd_inflight_q && !in_valid_i;

  // the word read: the routers' are zero unless read (OR them), the PEs' is common
  logic [15:0] rt_word;
  always_comb begin
    rt_word = '0;
    for (int unsigned q = 0; q < P; q++) rt_word = rt_word | rt_rdata_i[q*16 +: 16];
  end
  wire pe_word = in_valid_i && rd && !rd_inflight_q && (cfg_req_o & cfg_gnt_i) != '0;
  wire word_v = rd_inflight_q || pe_word;

  always_comb begin
    in_ready_o = 1'b0;
    rd_inflight_d = 1'b0;
    bd_d = bd_q;
    if (rd_inflight_q) begin
      in_ready_o = 1'b1;             // the router's word: the beat is done
    end else if (in_valid_i && !hit) begin
      in_ready_o = 1'b1;             // for no PE here: dropped
    end else if (in_valid_i && to_router) begin
      if (rd) rd_inflight_d = read_room;
      else in_ready_o = 1'b1;
    end else if (in_valid_i && rd) begin
      in_ready_o = pe_word;          // granted: the word is here
    end else if (in_valid_i) begin
      // a write: done when every PE it is for has granted it
      bd_d = bd_q | (cfg_req_o & cfg_gnt_i);
      if ((bd_d | ~sel) == '1) begin
        in_ready_o = 1'b1;
        bd_d = '0;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rsp_v_q <= 1'b0;
      rd_inflight_q <= 1'b0;
      bd_q <= '0;
    end else begin
      if (word_v) rsp_v_q <= 1'b1;
      else if (out_ready_i) rsp_v_q <= 1'b0;
      rd_inflight_q <= rd_inflight_d;
      bd_q <= bd_d;
    end
  end
  always_ff @(posedge clk_i) begin
    if (word_v) rsp_q <= rd_inflight_q ? {16'b0, rt_word} : cfg_rdata_i;
  end
  assign out_valid_o = rsp_v_q;
  assign out_data_o = {KindRsp, 28'b0, rsp_q};
endmodule

`default_nettype wire
