// mesh_router_lean: the area-lean router of the board (mesh_tile Lean): the ports, route
// table, multicast and counter semantics of mesh_router with one shared bus instead of a
// crossbar, for links that are far slower than the fabric (the board's UART).
//
// Same ports and handshakes as mesh_router (valid/ready on every link; the local output
// offers a wavelet only when local_color_ready_i of its color is set). Differences, all in
// timing or in counting:
// - Input FIFOs are 1 deep and registered (mesh_fifo Bypass 0): a link moves at most one
//   wavelet every other cycle. The outputs are not registered: every output, N/E/S/W as
//   the local one, offers the bus head (and may drop its valid without a handshake when
//   the bus moves on); the next router's input FIFO is the register, and its ready depends
//   only on its fill level, so no combinational path runs from one router's inputs to
//   another's (no loop in a mesh). A hop takes one cycle; no output register per link
//   (37 flip-flops each). A link's consumer must take a beat when valid and ready are high
//   in the same cycle and must not make its ready depend on valid (mesh_fifo). RegOut
//   links do have a registered output (held while stalled): mesh_top sets it on the host
//   port's link, where an INJECT whose echoes wait for the COLLECT behind it needs the
//   output register's slot (tb_mesh_hostport_lean's INJECT of 5 words).
// - The local input (the PE's tx) has no FIFO unless LocalFifo: its source must hold valid
//   and data from the cycle it raises valid until the cycle ready is high (pe_lite's tx is
//   its STx state over registers; 38 flip-flops less per tile), or, with LocalFirst, raise
//   valid with the same wavelet again in later cycles until ready is high (pe_micro_mt's
//   PEs, valid in their turn only; a multicast's sent mask waits for them meanwhile). The head goes on the bus in
//   the cycle it is offered, and in_ready_o[4] is the cycle it has reached every output of
//   its route (combinational from in_valid_i[4]; the PE's tx_valid does not depend on its
//   tx_ready). mesh_top keeps the FIFO (LocalFifo) on the host port's tile: an INJECT whose
//   echoes to the host wait for the COLLECT behind it needs that slot too (as RegOut).
// - One input head per cycle goes on the bus (round robin over the inputs with a wavelet,
//   the pointer moving on every cycle, so a head that waits for a busy output cannot hold
//   the bus); it is offered to every output of its route it has not reached yet (per-head
//   "sent" mask, as in mesh_router) and leaves its FIFO when all have taken it. So one
//   decoder, one local-ready lookup and one bus multiplexer instead of one decoder per
//   input and an N x N crossbar.
// - RegGnt: the FIFO head that goes on the bus next cycle is chosen a cycle ahead, and
//   loc_next_color_o tells its color then, so a PE can register its room for it
//   (LocalReadyBus, pe_micro_mt: no path from the bus through the PE's colour map into the
//   take logic).
// - Outputs that do not exist (Ports) are one always-ready sink: a wavelet with any route
//   off the mesh is dropped there once and counted in err_unrouted when it leaves its input
//   (mesh_router counts each such copy in the absent port's counter). The route table stores each route so folded
//   (absent outputs as the sink's bit), and a route read returns it so.
// - One counter: err_unrouted, 16 bits, read zero-extended. The wavelets-out-per-port
//   counters of mesh_router (counters 0-4) are not kept and read 0: a debugging aid that the
//   driver never reads, and 8-bit counters of them cost 41 LUT4 and 24 FF per 3-port tile.
// - Config reads are registered: rt_re_i asks for a route table entry (rt_route_i) or a
//   counter (rt_addr_i is the color or the counter number); the word is on rt_rdata_o the
//   next cycle (0 in a cycle after no read). A route entry is read through the bus's route
//   decoder, so that cycle no head goes on the bus (the config chain's reads are rare and
//   one cycle each). The stage needs no 16:1 table multiplexer of its own.
// make formal proves it (mesh_router_lean_formal.vh: mesh_router's no loss / duplication /
// misrouting, plus one err_unrouted count per wavelet routed to 0 or off the mesh) for all
// links and the board's 1x1 Ports; the board benches (tb_board_lean) and tb_mesh_router built
// for it (tb_mesh_router_lean) check its timing and counters.
`default_nettype none

module mesh_router_lean #(
  parameter int unsigned PayloadW = 32,  // payload bits
  parameter bit [3:0] Ports = 4'b1111,   // N, E, S, W links that exist (bit 0 N .. 3 W)
  parameter bit [3:0] RegOut = 4'b0000,  // links with an output register: the host port's
  parameter bit LocalFifo = 1'b0,        // a FIFO on the local input: the host port's tile
  parameter bit LocalFirst = 1'b0,       // the local input wins the bus whenever it is valid
  parameter bit LocalReadyBus = 1'b0,    // local_color_ready_i[0]: the PE's room for the bus
                                         // head's colour (pe_micro_mt), the rest unused
  parameter bit ErrLate = 1'b0,          // err_unrouted counts a cycle after the wavelet leaves
                                         // (timing: no path from the bus into its adder)
  parameter bit RegOutEmpty = 1'b0,      // a RegOut register takes a wavelet only when empty
                                         // (timing: its consumer's ready is not on the bus's
                                         // path; the link then moves one every other cycle)
  parameter bit RegGnt = 1'b0            // the FIFO inputs' round robin grants a cycle ahead,
                                         // from registers (timing: no arbiter on the bus's
                                         // path); a LocalFirst local input takes the bus at
                                         // once and the FIFO grant waits a cycle (kept only
                                         // if its head is there)
) (
  input  wire                 clk_i,
  input  wire                 rst_ni,
  input  wire  [4:0]          in_valid_i,
  input  wire  [5*(PayloadW+5)-1:0] in_data_i,
  output wire  [4:0]          in_ready_o,
  output wire  [3:0]          out_valid_o,          // N, E, S, W (from the bus, see above)
  output wire  [4*(PayloadW+5)-1:0] out_data_o,
  input  wire  [3:0]          out_ready_i,
  output wire                 loc_valid_o,          // local output (to the PE, unregistered)
  output wire  [PayloadW+4:0] loc_data_o,
  input  wire                 loc_ready_i,
  input  wire  [15:0]         local_color_ready_i,  // PE queue of that color has space
  output logic [3:0]          loc_next_color_o,     // RegGnt: the color on the bus next cycle
                                                    // if a FIFO input's head is on it then
  input  wire                 rt_we_i,              // route table write
  input  wire                 rt_re_i,              // read: route entry or counter, data next cycle
  input  wire                 rt_route_i,           // a route table read (else counters)
  input  wire  [3:0]          rt_addr_i,            // color; counter 5 err_unrouted (others read 0)
  input  wire  [4:0]          rt_wdata_i,           // mask {local, W, S, E, N}
  output wire  [79:0]         rt_o,                 // the table (the host port checks colors)
  output logic [15:0]         rt_rdata_o,           // last cycle's read (0 after no read)
  input  wire                 ctr_clear_i,
  output wire                 idle_o                // no wavelet stored anywhere in the router
);
  localparam int unsigned W = PayloadW + 5;
  localparam int unsigned L = 4;  // local port index
  localparam int unsigned CtrW = 16;     // err_unrouted (what a host checks for errors)
  localparam bit [4:0] Present = {1'b1, Ports};

  // ports that exist: how many, the j-th of them
  function automatic int unsigned f_count(input bit [4:0] p);
    f_count = 0;
    for (int unsigned k = 0; k < 5; k++) f_count = f_count + (p[k] ? 1 : 0);
  endfunction
  function automatic int unsigned f_nth(input bit [4:0] p, input int unsigned j);
    int unsigned n;
    n = 0;
    f_nth = 0;
    for (int unsigned k = 0; k < 5; k++) begin
      if (p[k] && n == j) f_nth = k;
      if (p[k]) n = n + 1;
    end
  endfunction
  // a 4:1 mux in the form that fits two 4-input LUTs (see mesh_route), and a 16:1 of five
  function automatic logic mux4(input logic [3:0] d, input logic [1:0] s);
    logic l;
    l = s[1] ? s[0] : (s[0] ? d[1] : d[0]);
    mux4 = s[1] ? (l ? d[3] : d[2]) : l;
  endfunction
  function automatic logic mux16(input logic [15:0] d, input logic [3:0] s);
    mux16 = mux4({mux4(d[15:12], s[1:0]), mux4(d[11:8], s[1:0]), mux4(d[7:4], s[1:0]),
                  mux4(d[3:0], s[1:0])}, s[3:2]);
  endfunction
  localparam int unsigned NP = f_count(Present);
  // the sink: the first absent output (none absent: 0, then unused as a sink)
  localparam int unsigned Sink = f_nth(~Present, 0);
  localparam bit HasSink = (Present != 5'b11111);

  // ---- input FIFOs, compacted to the NP ports that exist (index j: port f_nth(Present, j))
  logic [NP-1:0]   hv, pop, empty;
  logic [NP*W-1:0] hd;
  logic [NP*5-1:0] sent_q, sent_d;
  for (genvar i = 0; i < 5; i++) begin : g_tie
    if (!Present[i]) begin : g_absent
      assign in_ready_o[i] = 1'b1;  // off the mesh: nothing ever arrives
      wire unused_in = &{1'b0, in_valid_i[i], in_data_i[i*W +: W]};
    end
  end
  for (genvar j = 0; j < NP; j++) begin : g_in
    localparam int unsigned I = f_nth(Present, j);
    if (I == L && !LocalFifo) begin : g_direct
      // the local input has no FIFO: the PE holds its wavelet until it is taken (see the
      // header), so its head is the PE's own register; ready is the pop
      assign hv[j] = in_valid_i[I];
      assign hd[j*W +: W] = in_data_i[I*W +: W];
      assign in_ready_o[I] = pop[j];
      assign empty[j] = 1'b1;  // nothing stored here
    end else begin : g_fifo
      mesh_fifo #(.Width(W), .Depth(1), .Bypass(1'b0)) u_fifo (
        .clk_i, .rst_ni,
        .in_valid_i (in_valid_i[I]),
        .in_data_i  (in_data_i[I*W +: W]),
        .in_ready_o (in_ready_o[I]),
        .out_valid_o(hv[j]),
        .out_data_o (hd[j*W +: W]),
        .out_ready_i(pop[j]),
        .empty_o    (empty[j])
      );
    end
  end

  // ---- the bus: one head per cycle
  logic [NP-1:0] gnt;
  logic [W-1:0]  bus;
  // LocalFirst: a PE of pe_micro_mt raises tx_valid only in its turn (one cycle in N), which
  // a round robin moving every cycle could miss for ever while other heads wait; so its
  // valid takes the bus (the local input is the last present one). It cannot starve the
  // others: its valid is down in the other N - 1 cycles.
  if (LocalReadyBus) begin : g_ready_bus
    wire unused_ready = ^local_color_ready_i[15:1];
  end
  logic [NP-1:0] req, gnt_arb, gnt_q, gnt_d;
  logic          rd_err_q, rd_route_q;  // config reads (see rt_re_i)
  logic [3:0]    rd_addr_q;
  wire steal = LocalFirst && hv[NP-1];
  localparam logic [NP-1:0] LocBit = NP'(1) << (NP - 1);
  if (RegGnt) begin : g_reg_gnt
    // RegGnt: the arbiter picks among the FIFO heads present now for the next cycle; a head
    // popped meanwhile leaves that cycle idle. While the local input takes the bus the FIFO
    // grant and the pointer wait, so no FIFO input loses its turn to it.
    assign req = LocalFirst ? (hv & ~LocBit) : hv;
    assign gnt = steal ? LocBit : (gnt_q & hv);
    // (a steal keeps the grant only for a head that is there: a FIFO emptied meanwhile could
    // load a new head, whose color loc_next_color_o would not have told)
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) gnt_q <= '0;
      else gnt_q <= gnt_d;
    end
    assign gnt_d = steal ? (gnt_q & hv) : gnt_arb;
  end else begin : g_comb_gnt
    assign gnt_q = '0;
    assign gnt_d = '0;
    assign req = steal ? LocBit : hv;
    assign gnt = gnt_arb;
  end
  mesh_arbiter #(.N(NP)) u_arb (
    .clk_i, .rst_ni,
    .req_i    (req),
    // move on every cycle: a waiting head does not hold the bus (RegGnt: but for a steal)
    .advance_i(!(RegGnt && steal)),
    .gnt_o    (gnt_arb)
  );
  // the bus multiplexer selects by the grant's index (mesh_bus: cheaper than mesh_xbar's
  // one-hot AND-OR for 4 inputs). CfgOnBus (RegGnt with at most 4 inputs): the select is
  // the registered grant's index or the local input's (steal), never a FIFO's valid (a head
  // that is not there is not valid on the bus either), or CfgIdx in a route read's cycle.
  // With at most 3 inputs the read's colour is the bus's fourth input, which a 4:1
  // multiplexer takes at no extra depth, so no colour multiplexer sits between the bus and
  // the route decoder; with 4 (select 4: the bus shows input 0, not valid) it is selected
  // after the bus, for the decoder only (a fifth bus input would cost every bit a level).
  localparam bit CfgOnBus = RegGnt && (NP <= 4);
  localparam int unsigned CfgIdx = (NP <= 3) ? 3 : 4;
  localparam bit CfgIn4 = CfgOnBus && (NP <= 3);
  localparam int unsigned NBus = CfgIn4 ? 4 : NP;
  logic [2:0] gidx;
  always_comb begin
    gidx = '0;
    if (CfgOnBus) begin
      if (rd_route_q) gidx = 3'(CfgIdx);
      else if (steal) gidx = 3'(NP - 1);
      else for (int unsigned j = 0; j < NP; j++) if (gnt_q[j]) gidx = gidx | 3'(j);
    end else begin
      for (int unsigned j = 0; j < NP; j++) if (gnt[j]) gidx = gidx | 3'(j);
    end
  end
  wire [NBus*W-1:0] bus_in;
  if (CfgIn4) begin : g_cfg_bus
    // inputs past NP up to CfgIdx repeat the last (never selected); then the route read
    for (genvar j = 0; j < CfgIdx; j++) begin : g_in
      assign bus_in[j*W +: W] = hd[((j < NP) ? j : NP - 1)*W +: W];
    end
    assign bus_in[CfgIdx*W +: W] = W'(rd_addr_q) << PayloadW;
  end else begin : g_plain_bus
    assign bus_in = hd;
  end
  mesh_bus #(.NIn(NBus), .Width(W)) u_bus (
    .data_i(bus_in),
    .sel_i (gidx),
    .data_o(bus)
  );

  // RegGnt: the head the registered grant puts on the bus next cycle is one that is stored
  // now (a FIFO cannot load while it holds a head, and a steal keeps only a grant whose head
  // is there), so its color is known a cycle ahead: a PE can look its room for it up then
  // and register the answer (pe_micro_mt). Not told: a LocalFirst local input's own wavelet
  // (its PE knows it) and a cycle with no head.
  // (input 0's color unless another is granted: any color will do when none is; a
  // LocalFirst local input is never granted by the round robin)
  always_comb begin
    loc_next_color_o = hd[PayloadW +: 4];
    for (int unsigned j = 1; j < NP; j++)
      if (RegGnt && gnt_d[j] && !(LocalFirst && j == NP - 1))
        loc_next_color_o = hd[j*W + PayloadW +: 4];
  end

  // route of the bus head. The table holds each route as the router uses it: the bits of
  // existing outputs, and every absent output folded into the sink's bit when it is written
  // (fewer flip-flops and a narrower decoder; a route read returns it so). A config read of
  // the table borrows the decoder for a cycle (see rd_route_q).
  localparam bit [4:0] RouteUsed = HasSink ? (Present | (5'b1 << Sink)) : 5'b11111;
  logic [79:0] rt_q, rt_d;
  logic [4:0]  bmask, wmask;
  mesh_route #(.Used(RouteUsed)) u_route (
    .table_i(rt_q),
    .color_i((rd_route_q && !CfgIn4) ? rd_addr_q : bus[PayloadW +: 4]),
    .mask_o (bmask)
  );
  always_comb begin
    wmask = rt_wdata_i;
    if (HasSink) begin
      wmask = rt_wdata_i & Present;
      if ((rt_wdata_i & ~Present) != 5'b0) wmask[Sink] = 1'b1;
    end
  end

  localparam bit [3:0] Reg = RegOut & Ports;
  logic [3:0]     outv_q, outv_d;
  logic [4*W-1:0] outd_q, outd_d;
  logic        bus_valid, drop, done, loc_offer, err_inc;
  logic [4:0]  bus_sent, left, take;

  always_comb begin
    bus_valid = (gnt != '0) && !rd_route_q;  // a route read has the decoder this cycle
    bus_sent = '0;
    for (int unsigned j = 0; j < NP; j++) if (gnt[j]) bus_sent = sent_q[j*5 +: 5];
    left = bus_valid ? (bmask & ~bus_sent) : 5'b0;
    drop = bus_valid && (bmask == 5'b0);
    loc_offer = left[L] && (LocalReadyBus ? local_color_ready_i[0]
                                          : mux16(local_color_ready_i, bus[PayloadW +: 4]));
    for (int unsigned o = 0; o < 4; o++)
      take[o] = left[o] && (!Present[o]
                            || (Reg[o] ? (!outv_q[o] || (!RegOutEmpty && out_ready_i[o]))
                                       : out_ready_i[o]));
    take[L] = loc_offer && loc_ready_i;
    done = bus_valid && (drop || (left & ~take) == 5'b0);
    // err_unrouted: a wavelet dropped unrouted, or routed off the mesh, counted once when it
    // leaves its input (the sink always takes it, so its bit needs no place in the sent mask)
    err_inc = done && (drop || (HasSink && bmask[Sink]));
    for (int unsigned o = 0; o < 4; o++) begin
      outv_d[o] = Reg[o] && (take[o] || (outv_q[o] && !out_ready_i[o]));
      outd_d[o*W +: W] = !Reg[o] ? '0 : take[o] ? bus : outd_q[o*W +: W];
    end
    for (int unsigned j = 0; j < NP; j++) begin
      pop[j] = gnt[j] && done;
      sent_d[j*5 +: 5] = !gnt[j] ? sent_q[j*5 +: 5] : done ? 5'b0 : (bus_sent | (take & Present));
    end
  end

  // A link is offered the bus head directly: the next router's input FIFO is the register
  // (its ready depends only on its fill level, so no path runs back). RegOut links keep an
  // output register (the host port's link: the host port's COLLECT input and its INJECT
  // stream wait on each other through the mesh, see the header).
  for (genvar o = 0; o < 4; o++) begin : g_out
    assign out_valid_o[o] = Reg[o] ? outv_q[o] : (Present[o] && left[o]);
    assign out_data_o[o*W +: W] = Reg[o] ? outd_q[o*W +: W] : Present[o] ? bus : '0;
  end
  assign loc_valid_o = loc_offer;
  assign loc_data_o = bus;

  // ---- route table
  always_comb begin
    rt_d = rt_q;
    for (int unsigned k = 0; k < 16; k++) begin
      if (rt_we_i && rt_addr_i == 4'(k)) rt_d[k*5 +: 5] = wmask;
    end
  end
  assign rt_o = rt_q;

  // ---- err_unrouted (+ the sink's drops); no per-port counters (they read 0)
  logic [CtrW-1:0] err_q, err_d;
  logic            err_inc_q, err_add;
  assign err_add = ErrLate ? err_inc_q : err_inc;
  always_comb begin
    err_d = err_q + {{(CtrW-1){1'b0}}, err_add};
    if (ctr_clear_i) err_d = '0;
    rt_rdata_o = '0;
    if (rd_route_q) rt_rdata_o = {11'b0, bmask};
    else if (rd_err_q) rt_rdata_o = err_q;
  end

  assign idle_o = (empty == '1) && (outv_q == 4'b0);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      sent_q <= '0;
      rt_q <= '0;
      outv_q <= '0;
      outd_q <= '0;
      rd_err_q <= 1'b0;
      rd_route_q <= 1'b0;
      rd_addr_q <= '0;
      err_q <= '0;
      err_inc_q <= 1'b0;
    end else begin
      sent_q <= sent_d;
      rt_q <= rt_d;
      outv_q <= outv_d;
      outd_q <= outd_d;
      rd_err_q <= rt_re_i && !rt_route_i && rt_addr_i == 4'd5;
      rd_route_q <= rt_re_i && rt_route_i;
      rd_addr_q <= rt_addr_i;
      err_q <= err_d;
      err_inc_q <= ErrLate && err_inc && !ctr_clear_i;
    end
  end

`ifdef FORMAL
`include "mesh_router_lean_formal.vh"
`endif
`ifdef FORMAL
`include "mesh_router_lean_fair.vh"
`elsif MESH_FAIRNESS
`include "mesh_router_lean_fair.vh"
`endif
endmodule

`default_nettype wire
