// mesh_cfgbus_check: the framing of mesh_cfgbus_lean (the 2x2 pe_micro_mt board's config
// chain as one bus stage), checked at its ports (verif/formal/mesh_formal.sh). Formal only;
// the stage is used unchanged.
//
// Every read beat taken is answered by exactly one response beat {2, 0, the word read}, in
// order: nothing leaves while no read is owed (no answer without a request), at most one is
// owed, and the response carries the word of the PE or router read (a PE's word in the
// cycle of its grant, a router's the cycle after it was read). A write and a beat for no
// PE here leave nothing. Each access is performed once: a route-table write only in the
// cycle its beat is taken, for the routers its pe names (all for 0xff); a PE write is
// taken only once every PE it names has granted it, each exactly once; a router read is
// requested the cycle before its beat is taken; a PE request carries the beat's fields
// and, once raised, stays until granted or the beat is taken (a PE may grant late).
// Assumed, of the environment: a beat offered on in_* stays until taken (the host port's
// slice is a register), a router's read word is 0 unless it was read the cycle before. The
// PEs grant whenever they like (cfg_gnt_i is free). The data fields the stage does not
// decode are kept at 0 (data-independent).
`default_nettype none

module mesh_cfgbus_check #(
  parameter int unsigned P = 4  // PEs (the checks index a router's word by pe[1:0])
) (
  input wire clk_i,
  input wire rst_ni
);
  localparam logic [1:0] KindWrite = 2'd0, KindRead = 2'd1, KindRsp = 2'd2;

  (* anyseq *) wire          in_valid_i;
  (* anyseq *) wire [61:0]   in_data_i;
  (* anyseq *) wire          out_ready_i;
  (* anyseq *) wire [P-1:0]  cfg_gnt_i;
  (* anyseq *) wire [31:0]   cfg_rdata_i;
  (* anyseq *) wire [P*16-1:0] rt_rdata_any;
  wire          in_ready_o, out_valid_o, rt_route_o, cfg_we_o, idle_o;
  wire [61:0]   out_data_o;
  wire [P-1:0]  rt_we_o, rt_re_o, cfg_req_o;
  wire [3:0]    rt_addr_o, cfg_target_o;
  wire [4:0]    rt_wdata_o;
  wire [15:0]   cfg_addr_o;
  wire [31:0]   cfg_wdata_o;
  reg           f_rv = 1'b0;
  reg  [P-1:0]  f_rtrd_q;  // router q was read last cycle
  wire [P*16-1:0] rt_rdata_i;
  for (genvar q = 0; q < P; q++) begin : g_rt
    assign rt_rdata_i[q*16 +: 16] = f_rtrd_q[q] ? rt_rdata_any[q*16 +: 16] : 16'h0;
  end

  mesh_cfgbus_lean #(.P(P)) dut (
    .clk_i, .rst_ni, .in_valid_i, .in_data_i, .in_ready_o, .out_valid_o, .out_data_o,
    .out_ready_i, .rt_we_o, .rt_re_o, .rt_route_o, .rt_addr_o, .rt_wdata_o, .rt_rdata_i,
    .cfg_req_o, .cfg_we_o, .cfg_target_o, .cfg_addr_o, .cfg_wdata_o, .cfg_gnt_i,
    .cfg_rdata_i, .idle_o);

  always @(posedge clk_i) f_rv <= 1'b1;
  always @(*) if (!f_rv) assume (!rst_ni);

  // the beat on in_* and what it asks of the bus
  wire [1:0]  kind = in_data_i[61:60];
  wire [7:0]  pe = in_data_i[59:52];
  wire [3:0]  target = in_data_i[51:48];
  wire [15:0] addr = in_data_i[47:32];
  wire        wr = (kind == KindWrite);
  wire        rd = (kind == KindRead);
  wire        bcast = wr && (pe == 8'hff);
  wire        hit = (wr || rd) && (32'(pe) < P || bcast);
  wire        to_router = (target == 4'd5) || (target == 4'd9);
  wire [P-1:0] sel;
  for (genvar q = 0; q < P; q++) begin : g_sel
    assign sel[q] = bcast || (pe == 8'(q));
  end
  wire          take = in_valid_i && in_ready_o;
  wire          pop = out_valid_o && out_ready_i;
  wire [P-1:0]  grant = cfg_req_o & cfg_gnt_i;
  // the word a read taken now answers: the router's (read last cycle) or the granting PE's
  wire [15:0]   f_rt_word = rt_rdata_i[pe[1:0]*16 +: 16];
  wire [31:0]   f_word = to_router ? {16'h0, f_rt_word} : cfg_rdata_i;

  // the environment
  reg         f_in_v_q;
  reg  [61:0] f_in_d_q;
  always @(posedge clk_i) begin
    f_in_v_q <= rst_ni && in_valid_i && !in_ready_o;
    f_in_d_q <= in_data_i;
    f_rtrd_q <= rst_ni ? rt_re_o : '0;
  end
  always @(*) if (rst_ni && f_rv) begin
    if (f_in_v_q) assume (in_valid_i && in_data_i == f_in_d_q);
    // data-independent: the bus decodes kind, pe, target, addr[3:0] and passes data[4:0]
    // (a route write) and the rest unread
    assume (in_data_i[47:36] == 12'h0 && in_data_i[31:5] == 27'h0);
    assume (cfg_rdata_i[31:1] == 31'h0);
    for (int q = 0; q < P; q++) assume (rt_rdata_any[q*16 + 1 +: 15] == 15'h0);
  end

  // reads owed, the expected word, the PEs that granted the current beat, last cycle's
  // requests
  reg  [1:0]   f_owed;
  reg  [31:0]  f_exp;
  reg  [P-1:0] f_gr;       // PEs that granted the beat on in_* (cleared when it is taken)
  reg  [P-1:0] f_req_q;    // requests last cycle that were not granted, beat not taken
  reg  [P-1:0] f_rtre_q;   // router reads requested last cycle
  always @(posedge clk_i) begin
    if (!rst_ni) begin
      f_owed <= 2'd0; f_exp <= 32'h0; f_gr <= '0; f_req_q <= '0; f_rtre_q <= '0;
    end else begin
      f_owed <= f_owed + ((take && hit && rd) ? 2'd1 : 2'd0) - (pop ? 2'd1 : 2'd0);
      if (take && hit && rd) f_exp <= f_word;
      f_gr <= take ? '0 : (f_gr | grant);
      f_req_q <= take ? '0 : (cfg_req_o & ~cfg_gnt_i);
      f_rtre_q <= rt_re_o;
    end
  end

  always @(*) if (rst_ni && f_rv) begin
    // responses: only for a read owed, at most one, the read's word
    if (out_valid_o) assert (f_owed != 2'd0 && out_data_o == {KindRsp, 28'h0, f_exp});
    assert (f_owed <= 2'd1);
    // a route-table write for the beat taken now, on the routers its pe names
    assert (rt_we_o == ({P{take && hit && wr && target == 4'd5}} & sel));
    if (rt_we_o != '0) assert (rt_addr_o == addr[3:0] && rt_wdata_o == in_data_i[4:0]);
    // a router read: requested for the beat on in_*, its word taken with the beat next cycle
    if (rt_re_o != '0) assert (in_valid_i && hit && rd && to_router && !take
                               && rt_re_o == sel && !rt_route_o == (target == 4'd9));
    if (f_rtre_q != '0) assert (take);
    if (take && hit && rd && to_router) assert (f_rtre_q == sel);
    // PE accesses: for the beat on in_*, with its fields, each PE once, kept until granted
    if (cfg_req_o != '0) begin
      assert (in_valid_i && hit && !to_router && (cfg_req_o & ~sel) == '0);
      assert (cfg_we_o == wr && cfg_target_o == target && cfg_addr_o == addr
              && cfg_wdata_o == in_data_i[31:0]);
    end
    assert ((grant & f_gr) == '0);
    if (f_req_q != '0) assert ((cfg_req_o & f_req_q) == f_req_q);
    // a PE write leaves once every PE it names has granted it; a PE read with its word
    if (take && hit && wr && !to_router) assert (((f_gr | grant) | ~sel) == '1);
    if (take && hit && rd && !to_router) assert (grant == sel);
    if (grant != '0 && !wr) assert (take);
  end

  // reachability: a PE read and a router read answered, a broadcast write granted by the
  // PEs in different cycles, a beat for no PE dropped, a read waiting behind a response
  always @(*) if (rst_ni && f_rv) begin
    cover (take && hit && rd && !to_router && pe == 8'd2 && cfg_rdata_i[0]);
    cover (take && hit && rd && to_router && pe == 8'd3 && f_rt_word[0]);
    cover (pop && f_exp[0]);
    cover (take && bcast && !to_router && f_gr != '0 && grant != '0);
    cover (take && !hit);
    cover (in_valid_i && hit && rd && out_valid_o && !out_ready_i);
    cover (rt_we_o == '1);
  end
`ifdef FORMAL_BROKEN
  // Deliberately false: claims a read is never answered. Must fail.
  always @(*) if (rst_ni && f_rv) assert (!pop);
`endif
endmodule

`default_nettype wire
