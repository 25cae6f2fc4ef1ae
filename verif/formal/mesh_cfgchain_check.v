// mesh_cfgchain_check: the framing of one config chain stage, mesh_cfgchain (Lean 0) or
// mesh_cfgchain_lean (Lean 1), checked at its ports (verif/formal/mesh_formal.sh). Formal
// only; the stage is used unchanged.
//
// Every beat taken on in_* is answered exactly once, in order: a beat not for this tile and
// a broadcast write leave unchanged, a read for this tile leaves as one response beat
// {2 (response), pe, target, addr, the word read}, a unicast write for this tile leaves
// nothing. The environment tags one taken beat of its choice (f_pick); the check counts the
// beats owed ahead of it (f_owed: answers owed and not yet delivered) and requires the
// tagged beat's answer to be the output beat at that position, with the expected content.
// Nothing leaves while nothing is owed (no answer without a request), and at most 3 (the
// buffer's 3 entries, or 2 and a PE read in flight; lean: 1) are ever owed. So a read
// granted without room for its response (the read-room condition) fails the check: the
// bound, or the answer missing at its place.
// Each access is performed exactly once: a route-table write only in the cycle its beat is
// taken, a PE access granted only for a beat taken in that cycle (lean: a read the cycle
// before, its word arriving with the beat taken), and never twice.
// Assumed, of the environment: the PE returns a granted read's word exactly one cycle later
// (cfg_rvalid_i), the lean router's read word is 0 unless it was read the cycle before, a
// beat offered on in_* stays until taken (the host port and the stages drive registers),
// and (lean) a read beat's data field is 0 (mesh_hostport_lean sends it so; the word read is
// ORed into it). The data fields the stage does not decode are kept at 0 (data-independent).
`default_nettype none

module mesh_cfgchain_check #(
  parameter bit Lean = 1'b0,
  parameter int unsigned PeIndex = 1
) (
  input wire clk_i,
  input wire rst_ni
);
  localparam logic [1:0] KindWrite = 2'd0, KindRead = 2'd1, KindRsp = 2'd2;
  localparam logic [7:0] Me = 8'(PeIndex);

  (* anyseq *) wire        in_valid_i;
  (* anyseq *) wire [61:0] in_data_i;
  (* anyseq *) wire        out_ready_i;
  (* anyseq *) wire        cfg_gnt_i;
  (* anyseq *) wire [31:0] cfg_rdata_i;
  (* anyseq *) wire [79:0] rt_i;
  (* anyseq *) wire [31:0] ctr_rdata_i;
  (* anyseq *) wire [15:0] rt_rdata_any;
  (* anyseq *) wire        f_pick;
  wire        in_ready_o, out_valid_o, rt_we_o, cfg_req_o, cfg_we_o, idle_o;
  wire [61:0] out_data_o;
  wire [3:0]  rt_addr_o, cfg_target_o;
  wire [4:0]  rt_wdata_o;
  wire [15:0] cfg_addr_o;
  wire [31:0] cfg_wdata_o;
  wire        rt_re_o;     // lean: a router read (its word next cycle)
  wire [2:0]  ctr_addr_o;  // full: the counter read
  reg         f_rv = 1'b0;
  reg         f_rd_q;      // a read was granted (PE) or requested (lean router) last cycle
  reg         f_rtrd_q;    // lean: the router was read last cycle
  wire        cfg_rvalid_i = f_rd_q && !f_rtrd_q;
  wire [15:0] rt_rdata_i = f_rtrd_q ? rt_rdata_any : 16'h0;

  if (Lean) begin : g_lean
    wire rt_route_o;
    mesh_cfgchain_lean #(.PeIndex(PeIndex)) dut (
      .clk_i, .rst_ni, .in_valid_i, .in_data_i, .in_ready_o, .out_valid_o, .out_data_o,
      .out_ready_i, .rt_we_o, .rt_re_o, .rt_route_o, .rt_addr_o, .rt_wdata_o, .rt_rdata_i,
      .cfg_req_o, .cfg_we_o, .cfg_target_o, .cfg_addr_o, .cfg_wdata_o, .cfg_gnt_i,
      .cfg_rvalid_i, .cfg_rdata_i, .idle_o);
    assign ctr_addr_o = 3'd0;
    always @(*) if (rst_ni && f_rv && (rt_we_o || rt_re_o))
      assert (rt_route_o == (in_data_i[51:48] == 4'd5));
  end else begin : g_full
    mesh_cfgchain #(.PeIndex(PeIndex)) dut (
      .clk_i, .rst_ni, .in_valid_i, .in_data_i, .in_ready_o, .out_valid_o, .out_data_o,
      .out_ready_i, .rt_we_o, .rt_addr_o, .rt_wdata_o, .rt_i, .ctr_addr_o, .ctr_rdata_i,
      .cfg_req_o, .cfg_we_o, .cfg_target_o, .cfg_addr_o, .cfg_wdata_o, .cfg_gnt_i,
      .cfg_rvalid_i, .cfg_rdata_i, .idle_o);
    assign rt_re_o = 1'b0;
  end

  always @(posedge clk_i) f_rv <= 1'b1;
  always @(*) if (!f_rv) assume (!rst_ni);

  // the beat on in_* and what it asks of this tile
  wire [1:0]  kind = in_data_i[61:60];
  wire [7:0]  pe = in_data_i[59:52];
  wire [3:0]  target = in_data_i[51:48];
  wire [15:0] addr = in_data_i[47:32];
  wire        bcast = (pe == 8'hff) && (kind == KindWrite);
  wire        mine = (kind == KindWrite || kind == KindRead) && (pe == Me || bcast);
  wire        rd = mine && (kind == KindRead);
  wire        to_router = (target == 4'd5) || (target == 4'd9);
  wire        take = in_valid_i && in_ready_o;
  wire        pop = out_valid_o && out_ready_i;
  wire        answers = !mine || bcast || rd;   // a beat taken now is owed one output beat
  wire        pe_grant = cfg_req_o && cfg_gnt_i;
  wire        pe_rd_grant = pe_grant && !cfg_we_o;
  wire [4:0]  rt_entry [16];
  for (genvar c = 0; c < 16; c++) begin : g_rt
    assign rt_entry[c] = rt_i[c*5 +: 5];
  end

  // the environment
  reg         f_in_v_q;
  reg  [61:0] f_in_d_q;
  always @(posedge clk_i) begin
    f_in_v_q <= rst_ni && in_valid_i && !in_ready_o;
    f_in_d_q <= in_data_i;
    f_rd_q <= rst_ni && (pe_rd_grant || rt_re_o);
    f_rtrd_q <= rst_ni && rt_re_o;
  end
  always @(*) if (rst_ni && f_rv) begin
    if (f_in_v_q) assume (in_valid_i && in_data_i == f_in_d_q);
    if (Lean && in_valid_i && rd) assume (in_data_i[31:0] == 32'h0);
    // data-independent: the stage decodes kind, pe, target, addr[3:0] and moves the rest
    // unread (the route-table write takes data[4:0]), so the other bits are kept at 0
    assume (in_data_i[47:36] == 12'h0 && in_data_i[31:5] == 27'h0);
    assume (cfg_rdata_i[31:1] == 31'h0 && ctr_rdata_i[31:1] == 31'h0);
    assume (rt_rdata_any[15:1] == 15'h0);
  end

  // answers owed, the tagged beat and its expected answer
  reg  [2:0]  f_owed;
  reg         f_tag, f_out, f_late;   // tagged / its answer delivered / word next cycle
  reg  [2:0]  f_pos;                  // answers owed ahead of the tagged one
  reg  [61:0] f_exp;
  wire        f_tag_now = take && f_pick && !f_tag && answers;
  wire [31:0] f_word = Lean ? (to_router ? {16'h0, rt_rdata_i} : cfg_rdata_i)
                            : ((target == 4'd5) ? {27'h0, rt_entry[addr[3:0]]} : ctr_rdata_i);
  always @(posedge clk_i) begin
    if (!rst_ni) begin
      f_owed <= 3'd0; f_tag <= 1'b0; f_out <= 1'b0; f_late <= 1'b0; f_pos <= 3'd0;
      f_exp <= 62'h0;
    end else begin
      f_owed <= f_owed + ((take && answers) ? 3'd1 : 3'd0) - (pop ? 3'd1 : 3'd0);
      f_late <= 1'b0;
      if (f_tag_now) begin
        f_tag <= 1'b1;
        f_pos <= f_owed - (pop ? 3'd1 : 3'd0);
        f_exp <= rd ? {KindRsp, in_data_i[59:32], (Lean || to_router) ? f_word : 32'h0}
                    : in_data_i;
        f_late <= rd && !Lean && !to_router;
      end else if (f_tag && !f_out && pop) begin
        if (f_pos == 3'd0) f_out <= 1'b1;
        else f_pos <= f_pos - 3'd1;
      end
      if (f_late) f_exp[31:0] <= cfg_rdata_i;
    end
  end

  always @(*) if (rst_ni && f_rv) begin
    // no answer without a request; bounded
    if (pop) assert (f_owed != 3'd0);
    assert (f_owed <= (Lean ? 3'd1 : 3'd3));
    // the tagged beat's answer at its position, unchanged / as the response of its read
    if (f_tag && !f_out) assert (f_pos < f_owed);
    if (f_tag && !f_out && !f_late && pop && f_pos == 3'd0) assert (out_data_o == f_exp);
    // each access once, for the beat taken now (lean reads: requested the cycle before)
    assert (rt_we_o == (take && mine && kind == KindWrite && target == 4'd5));
    if (rt_we_o) assert (rt_addr_o == addr[3:0] && rt_wdata_o == in_data_i[4:0]);
    if (!Lean && take && rd && to_router && target == 4'd9) assert (ctr_addr_o == addr[2:0]);
    if (pe_grant) begin
      assert (mine && !to_router && cfg_we_o == (kind == KindWrite));
      assert (cfg_target_o == target && cfg_addr_o == addr && cfg_wdata_o == in_data_i[31:0]);
    end
    if (Lean) begin
      if (pe_rd_grant || rt_re_o) assert (!take && !f_rd_q);
      if (rt_re_o) assert (in_valid_i && rd && to_router);
      if (take && rd) assert (f_rd_q);
      if (f_rd_q) assert (take);
      if (pe_grant && cfg_we_o) assert (take);
      if (take && mine && !rd && !to_router) assert (pe_grant);
    end else begin
      if (pe_grant) assert (take);
      if (take && mine && !to_router) assert (pe_grant);
    end
  end

  // reachability: each kind of answer reaches its place; the bound with a read in flight (the
  // read-room condition; lean: a full buffer with a beat for this tile waiting); a write
  // performed and consumed; PE reads back to back
  always @(*) if (rst_ni && f_rv) begin
    cover (f_tag && !f_out && pop && f_pos == 3'd0 && f_exp[61:60] == KindRsp && f_exp[51:48] == 4'd5);
    cover (f_tag && !f_out && pop && f_pos == 3'd0 && f_exp[61:60] == KindRsp && f_exp[51:48] == 4'd0);
    cover (f_tag && !f_out && pop && f_pos == 3'd0 && f_exp[61:60] == KindWrite && f_exp[59:52] == 8'hff);
    cover (f_tag && !f_out && pop && f_pos == 3'd0 && f_exp[59:52] != Me && f_exp[59:52] != 8'hff && f_pos == 3'd0);
    cover (Lean ? (f_owed == 3'd1 && in_valid_i && mine) : (f_owed == 3'd3 && f_rd_q));
    cover (take && mine && kind == KindWrite && !bcast && !to_router);
    cover (rt_we_o);
    if (!Lean) cover (f_rd_q && pe_rd_grant);
  end
`ifdef FORMAL_BROKEN
  // Deliberately false: claims a read is never answered. Must fail.
  always @(*) if (rst_ni && f_rv && pop) assert (out_data_o[61:60] != KindRsp);
`endif
endmodule

`default_nettype wire
