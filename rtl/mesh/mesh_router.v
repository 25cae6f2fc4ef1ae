// mesh_router: 5-port wavelet router (ports 0 N, 1 E, 2 S, 3 W, 4 local), per-color static
// routes with multicast, built from mesh_fifo, mesh_route, mesh_arbiter and mesh_xbar.
//
// Every link is valid/ready. The local output has its own ports (loc_*), so the N/E/S/W
// outputs are purely registered and meshes have no combinational loops. Per input: a bypass FIFO; its head's color selects an output
// mask from the route table; the head requests every output in the mask it has not yet
// reached (per-head "sent" mask) and leaves the FIFO when all have taken it, so a busy
// branch neither loses nor duplicates a copy. A head whose mask is 0 is dropped and counted
// (err_unrouted). Each output has a round-robin arbiter.
// N/E/S/W outputs are registered (one cycle per hop: input bypass + output register).
// The local output is NOT registered: it requests a head only when local_color_ready_i of
// its color is set, and the PE's input queue is the register. A registered local output
// could hold a wavelet whose PE queue is full and so block every other color at the local
// port (deadlock with blocked reduction tasks). The local valid may therefore drop without a
// handshake; the PE takes a wavelet when rx_valid && rx_ready, and its rx_ready must not
// depend on rx_valid.
// Counters (32 bit, wrapping): wavelets out per port N, E, S, W, local, then err_unrouted.
// The board's area-lean variant (mesh_tile Lean) is mesh_router_lean.
// Ports: a router on a mesh edge (mesh_top with TrimEdges) leaves out the links that lead
// off the mesh: such an input has no FIFO (it is idle anyway) and such an output no
// register (it is always ready anyway: a wavelet routed there is dropped and counted, in
// the same cycle as with the register). The host-visible behaviour is unchanged; only the
// edge output's valid/data (which nobody reads) and the cycle in which idle_o rises after
// an off-mesh wavelet differ.
`default_nettype none

module mesh_router #(
  parameter int unsigned FifoDepth = 2,  // input FIFO entries (2 sustains 1 wavelet/cycle)
  parameter int unsigned PayloadW = 32,  // payload bits; only formal shrinks it
  parameter bit [3:0] Ports = 4'b1111    // N, E, S, W links that exist (bit 0 N .. 3 W)
) (
  input  wire                 clk_i,
  input  wire                 rst_ni,
  input  wire  [4:0]          in_valid_i,
  input  wire  [5*(PayloadW+5)-1:0] in_data_i,
  output wire  [4:0]          in_ready_o,
  output wire  [3:0]          out_valid_o,          // N, E, S, W (registered)
  output wire  [4*(PayloadW+5)-1:0] out_data_o,
  input  wire  [3:0]          out_ready_i,
  output wire                 loc_valid_o,          // local output (to the PE, unregistered)
  output wire  [PayloadW+4:0] loc_data_o,
  input  wire                 loc_ready_i,
  input  wire  [15:0]         local_color_ready_i,  // PE queue of that color has space
  input  wire                 rt_we_i,              // route table write
  input  wire  [3:0]          rt_addr_i,            // color
  input  wire  [4:0]          rt_wdata_i,           // mask {local, W, S, E, N}
  output wire  [79:0]         rt_o,                 // the table (the host port checks colors)
  input  wire  [2:0]          ctr_addr_i,           // 0-4 wavelets out per port, 5 err_unrouted
  output logic [31:0]         ctr_rdata_o,
  input  wire                 ctr_clear_i,
  output wire                 idle_o                // no wavelet stored anywhere in the router
);
  localparam int unsigned W = PayloadW + 5;
  localparam int unsigned L = 4;  // local port index

  // ---- input FIFOs and route decoders
  logic [4:0]     head_valid, fifo_empty, pop;
  logic [5*W-1:0] head_data;
  logic [24:0]    mask;        // mask[i*5 +: 5]
  logic [79:0]    rt_q, rt_d;

  localparam bit [4:0] Present = {1'b1, Ports};

  for (genvar i = 0; i < 5; i++) begin : g_in
    if (Present[i]) begin : g_port
      mesh_fifo #(.Width(W), .Depth(FifoDepth), .Bypass(1'b1)) u_fifo (
        .clk_i, .rst_ni,
        .in_valid_i (in_valid_i[i]),
        .in_data_i  (in_data_i[i*W +: W]),
        .in_ready_o (in_ready_o[i]),
        .out_valid_o(head_valid[i]),
        .out_data_o (head_data[i*W +: W]),
        .out_ready_i(pop[i]),
        .empty_o    (fifo_empty[i])
      );
      mesh_route u_route (
        .table_i(rt_q),
        .color_i(head_data[i*W + PayloadW +: 4]),
        .mask_o (mask[i*5 +: 5])
      );
    end else begin : g_tie
      // off the mesh: nothing ever arrives (the input is idle), so nothing is stored
      assign in_ready_o[i] = 1'b1;
      assign head_valid[i] = 1'b0;
      assign head_data[i*W +: W] = '0;
      assign fifo_empty[i] = 1'b1;
      assign mask[i*5 +: 5] = 5'b0;
      wire unused_in = &{1'b0, in_valid_i[i], in_data_i[i*W +: W], pop[i]};
    end
  end

  // ---- requests, arbitration, crossbar
  logic [24:0]    sent_q, sent_d;  // per input: outputs that already took the head
  logic [24:0]    req;             // req[o*5 + i]
  logic [24:0]    gnt;             // gnt[o*5 + i]
  logic [24:0]    take;            // granted and the output accepts
  logic [4:0]     free;            // output o can accept a wavelet this cycle
  logic [4:0]     drop;
  logic [5*W-1:0] xbar_data;
  logic [3:0]     outv_q, outv_d;
  logic [4*W-1:0] outd_q, outd_d;

  for (genvar o = 0; o < 5; o++) begin : g_out
    mesh_arbiter #(.N(5)) u_arb (
      .clk_i, .rst_ni,
      .req_i    (req[o*5 +: 5]),
      .advance_i(free[o]),
      .gnt_o    (gnt[o*5 +: 5])
    );
  end

  mesh_xbar #(.NIn(5), .NOut(5), .Width(W)) u_xbar (
    .data_i(head_data),
    .sel_i (gnt),
    .data_o(xbar_data)
  );

  assign free = {loc_ready_i, ~outv_q | out_ready_i};

  always_comb begin
    req = '0;
    for (int unsigned i = 0; i < 5; i++) begin
      drop[i] = head_valid[i] && (mask[i*5 +: 5] == 5'b0);
      for (int unsigned o = 0; o < 5; o++) begin
        req[o*5 + i] = head_valid[i] && mask[i*5 + o] && !sent_q[i*5 + o];
      end
      if (!local_color_ready_i[head_data[i*W + PayloadW +: 4]]) req[L*5 + i] = 1'b0;
    end
  end

  always_comb begin
    for (int unsigned o = 0; o < 5; o++) take[o*5 +: 5] = gnt[o*5 +: 5] & {5{free[o]}};
    for (int unsigned i = 0; i < 5; i++) begin
      logic [4:0] took, left;
      for (int unsigned o = 0; o < 5; o++) took[o] = take[o*5 + i];
      left = mask[i*5 +: 5] & ~sent_q[i*5 +: 5] & ~took;
      pop[i] = head_valid[i] && (drop[i] || left == 5'b0);
      sent_d[i*5 +: 5] = (head_valid[i] && !pop[i]) ? (sent_q[i*5 +: 5] | took) : 5'b0;
    end
    for (int unsigned o = 0; o < 4; o++) begin
      outv_d[o] = Present[o] && (free[o] ? (gnt[o*5 +: 5] != 5'b0) : outv_q[o]);
      outd_d[o*W +: W] = !Present[o] ? '0
                       : (free[o] && gnt[o*5 +: 5] != 5'b0) ? xbar_data[o*W +: W]
                                                            : outd_q[o*W +: W];
    end
  end

  assign out_valid_o = outv_q;
  assign out_data_o = outd_q;
  assign loc_valid_o = (gnt[L*5 +: 5] != 5'b0);
  assign loc_data_o = xbar_data[L*W +: W];

  // ---- route table
  always_comb begin
    rt_d = rt_q;
    for (int unsigned k = 0; k < 16; k++) begin  // a decoded write, not a shifter
      if (rt_we_i && rt_addr_i == 4'(k)) rt_d[k*5 +: 5] = rt_wdata_i;
    end
  end
  assign rt_o = rt_q;

  // ---- counters
  logic [31:0] cnt_q [6];
  logic [31:0] cnt_d [6];
  always_comb begin
    logic [2:0] ndrop;
    ndrop = '0;
    for (int unsigned i = 0; i < 5; i++) ndrop = ndrop + {2'b00, drop[i]};
    for (int unsigned o = 0; o < 5; o++) begin
      cnt_d[o] = cnt_q[o] + {31'b0, (take[o*5 +: 5] != 5'b0)};
    end
    cnt_d[5] = cnt_q[5] + {29'b0, ndrop};
    if (ctr_clear_i) for (int unsigned k = 0; k < 6; k++) cnt_d[k] = '0;
    ctr_rdata_o = (ctr_addr_i < 3'd6) ? cnt_q[ctr_addr_i] : 32'b0;
  end

  assign idle_o = (fifo_empty == 5'b11111) && (outv_q == 4'b0);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      sent_q <= '0;
      outv_q <= '0;
      outd_q <= '0;
      rt_q <= '0;
      for (int unsigned k = 0; k < 6; k++) cnt_q[k] <= '0;
    end else begin
      sent_q <= sent_d;
      outv_q <= outv_d;
      outd_q <= outd_d;
      rt_q <= rt_d;
      for (int unsigned k = 0; k < 6; k++) cnt_q[k] <= cnt_d[k];
    end
  end

`ifdef FORMAL
`include "mesh_router_formal.vh"
`endif
`ifdef FORMAL
`include "mesh_router_fair.vh"
`elsif MESH_FAIRNESS
`include "mesh_router_fair.vh"
`endif
endmodule

`default_nettype wire
