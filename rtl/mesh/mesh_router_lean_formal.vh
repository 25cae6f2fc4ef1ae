// mesh_router_lean_formal.vh: properties of mesh_router_lean (included under `ifdef FORMAL).
// The property of mesh_router_formal.vh, on the lean router's outputs plus one virtual
// output, err_unrouted. The environment picks any wavelet value f_data and sends it at most
// once (on any input that exists); let R be the route its color had when it was accepted.
// Then it leaves exactly once on every existing output in R, never on another output, and
// err_unrouted counts it exactly once iff R is 0 (dropped unrouted) or R names an absent
// output (dropped at the sink, once however many absent outputs R names), else never. Until
// it has left on an output it is held in an input FIFO head that has not yet served that
// output (for err_unrouted: any head; it is counted when it leaves), or in that output's
// register. "Counts" is the
// counter's own increment (err_d != err_q); in a cycle that clears the counters, the
// increment term the clear discards. And the local output offers only colors whose
// local_color_ready_i is set.
// Assumed: route tables are written only while the router is idle and no input is valid or
// holds a wavelet (as for mesh_router); nothing arrives on an input that does not exist
// (Ports); without LocalFifo, the local input's source holds valid and data until ready
// (the router's contract with the PE), or with LocalFirst offers the same wavelet whenever
// its valid is up until it is taken. Run with PayloadW = 1 (the router never reads the payload). The
// input FIFOs are 1 deep, so every stored wavelet is a FIFO head, which the invariants below
// rely on; without LocalFifo a wavelet offered on the local input counts as accepted in the
// first cycle it is offered, and as held there (a head) from the next cycle until ready.
// verif/formal/mesh_formal.sh proves these with ABC (bmc3 + 2-induction).
  reg f_rv = 1'b0;
  always @(posedge clk_i) f_rv <= 1'b1;
  always @(*) if (!f_rv) assume (!rst_ni);

  // the tagged value: any value, fixed after the first cycle (loaded from a free input while
  // f_rv is low rather than an $anyconst cell, so that write_aiger takes it)
  (* anyseq *) wire [W-1:0] f_any;
  reg [W-1:0] f_data;
  always @(posedge clk_i) if (!f_rv) f_data <= f_any;

  // a raw route as the router uses it: absent outputs folded into the sink
  function automatic logic [4:0] f_eff(input logic [4:0] m);
    f_eff = m;
    if (HasSink) begin
      f_eff = m & Present;
      if ((m & ~Present) != 5'b0) f_eff[Sink] = 1'b1;
    end
  endfunction
  function automatic logic [4:0] f_rt(input logic [79:0] t, input logic [3:0] c);
    f_rt = t[{c, 2'b00} + {3'b000, c} +: 5];
  endfunction

  // the local input's source: offered and not yet taken, so still offered, unchanged, in
  // this cycle; with LocalFirst (valid in the source's turns only) offered again, unchanged,
  // whenever its valid is up
  reg f_lhold;
  reg [W-1:0] f_ldata;
  always @(posedge clk_i) begin
    if (!rst_ni) f_lhold <= 1'b0;
    else if (in_valid_i[L]) f_lhold <= !in_ready_o[L];
    else if (!LocalFirst) f_lhold <= 1'b0;
    if (in_valid_i[L] && !f_lhold) f_ldata <= in_data_i[L*W +: W];
  end
  // ErrLate: the tag left in the last cycle and its err_unrouted count is due in this one
  reg f_errdue, f_lastbus;  // (and the tag was the bus head in the last cycle)

  reg f_in;
  reg [11:0] f_cnt;   // 2 bits per output: N, E, S, W, local, err_unrouted
  reg [4:0] f_route;  // f_data's raw route when it was accepted (the table may change later)
  logic [4:0] f_acc;
  logic [5:0] f_hs, f_exp;
  logic [4:0] f_mask;
  logic f_errinc;
  always @(*) begin
    for (int unsigned i = 0; i < 5; i++)
      f_acc[i] = in_valid_i[i] && ((i == L && !LocalFifo) ? !f_lhold : in_ready_o[i])
                 && (in_data_i[i*W +: W] == f_data);
    for (int unsigned o = 0; o < 4; o++)
      f_hs[o] = out_valid_o[o] && out_ready_i[o] && (out_data_o[o*W +: W] == f_data);
    f_hs[4] = loc_valid_o && loc_ready_i && (loc_data_o == f_data);
    // err_unrouted counts the bus head (one head per cycle); ErrLate: in the next cycle,
    // unless a clear in its own cycle discards it
    f_errinc = ctr_clear_i ? err_inc : (err_d != err_q);
    // (any increment in the cycle after the tag was the bus head is the tag's: it catches a
    // late count that should not be, as well as one that is)
    if (ErrLate)
      f_hs[5] = (f_lastbus && (ctr_clear_i ? err_add : (err_d != err_q)))
                || (ctr_clear_i && bus_valid && (bus == f_data) && err_inc);
    else f_hs[5] = bus_valid && (bus == f_data) && f_errinc;
    f_mask = f_rt(rt_q, f_data[PayloadW +: 4]);
    for (int unsigned o = 0; o < 5; o++) f_exp[o] = Present[o] && f_route[o];
    f_exp[5] = (f_route == 5'b0) || ((f_route & ~Present) != 5'b0);
  end
  // the environment: f_data sent at most once; routes written only when idle; nothing
  // arrives off the mesh
  always @(*) begin
    assume ((f_acc & (f_acc - 1'b1)) == 5'b0);
    if (f_in) assume (f_acc == 5'b0);
    // (idle: a LocalFirst PE holding a wavelet it offers only in its turns is not idle)
    if (rt_we_i) assume (idle_o && in_valid_i == 5'b0 && !f_lhold);
    assume ((in_valid_i & ~Present) == 5'b0);
    if (!LocalFifo && f_lhold) begin
      if (!LocalFirst) assume (in_valid_i[L]);
      if (in_valid_i[L]) assume (in_data_i[L*W +: W] == f_ldata);
    end
  end
  always @(posedge clk_i) begin
    if (!rst_ni) begin
      f_in <= 1'b0;
      f_cnt <= '0;
      f_route <= '0;
      f_errdue <= 1'b0;
      f_lastbus <= 1'b0;
    end else begin
      f_lastbus <= bus_valid && (bus == f_data);
      f_errdue <= ErrLate && bus_valid && (bus == f_data) && err_inc && !ctr_clear_i;
      if (f_acc != 5'b0) begin
        f_in <= 1'b1;
        f_route <= f_mask;
      end
      for (int unsigned o = 0; o < 6; o++) if (f_hs[o] && f_cnt[o*2 +: 2] != 2'd3) f_cnt[o*2 +: 2] <= f_cnt[o*2 +: 2] + 2'd1;
    end
  end
  // where the tag can be: a stored input FIFO head (every stored wavelet is a head) not yet
  // sent to o (for err_unrouted: any, it counts when the head leaves), or output register o
  logic [NP-1:0] f_full;    // a head is held: a FIFO's stored wavelet, the local input's
  logic [NP-1:0] f_stored;
  logic [NP*5-1:0] f_hmask;  // each stored head's effective route
  logic [NP*W-1:0] f_head;   // each stored head
  logic [5:0] f_held, f_outreg;
  always @(*) begin
    for (int unsigned j = 0; j < NP; j++) begin
      // the local input is the last
      f_full[j] = (j == NP - 1 && !LocalFifo) ? f_lhold : !empty[j];
      // (a LocalFirst source's valid may be down: its wavelet is the one it offered)
      f_head[j*W +: W] = (j == NP - 1 && !LocalFifo) ? f_ldata : hd[j*W +: W];
      f_stored[j] = f_full[j] && f_head[j*W +: W] == f_data;
      f_hmask[j*5 +: 5] = f_eff(f_rt(rt_q, f_head[j*W + PayloadW +: 4]));
    end
    f_held = '0;
    for (int unsigned j = 0; j < NP; j++) if (f_stored[j]) begin
      for (int unsigned o = 0; o < 5; o++)
        if (Present[o] && !sent_q[j*5 + o]) f_held[o] = 1'b1;
      f_held[5] = 1'b1;  // err_unrouted counts a wavelet when it leaves its input
    end
    f_outreg = '0;
    for (int unsigned o = 0; o < 4; o++) f_outreg[o] = outv_q[o] && (outd_q[o*W +: W] == f_data);
    f_held = f_held | f_outreg;
    f_held[5] = f_held[5] || f_errdue;
  end
  always @(*) if (rst_ni && f_rv) begin
    for (int unsigned o = 0; o < 6; o++) begin
      assert (f_cnt[o*2 +: 2] <= 2'd1);                                // never duplicated
      if (!f_in) assert (f_cnt[o*2 +: 2] == 2'd0 && !f_held[o]);       // never invented
      else if (f_exp[o]) assert ((f_cnt[o*2 +: 2] == 2'd1) != f_held[o]);  // never lost
      else assert (f_cnt[o*2 +: 2] == 2'd0 && !f_outreg[o]);            // never misrouted
    end
    // the local output offers only a color whose PE queue has space
    // (LocalReadyBus: the one ready bit is the PE's room for the bus head's colour)
    if (loc_valid_o)
      assert (LocalReadyBus ? local_color_ready_i[0]
                            : local_color_ready_i[loc_data_o[PayloadW +: 4]]);
  end
  // Strengthening invariants (true in every reachable state, proved with the rest): they
  // make the property inductive.
  always @(*) if (rst_ni && f_rv) begin
    // the table holds folded routes: no bit of an absent output but the sink's
    for (int unsigned c = 0; c < 16; c++) assert ((rt_q[c*5 +: 5] & ~RouteUsed) == 5'b0);
    for (int unsigned j = 0; j < NP; j++) begin
      // a head's sent mask is empty when nothing is stored, else a subset of its effective
      // route's existing outputs, and a strict one unless that is empty: a head whose route
      // is complete has left (the sink takes a head last, with the rest: no bit for it)
      if (!f_full[j]) assert (sent_q[j*5 +: 5] == 5'b0);
      else begin
        assert ((sent_q[j*5 +: 5] & ~f_hmask[j*5 +: 5]) == 5'b0);
        if ((f_hmask[j*5 +: 5] & Present) != 5'b0)
          assert (sent_q[j*5 +: 5] != (f_hmask[j*5 +: 5] & Present));
        if (HasSink) assert (!sent_q[j*5 + Sink]);  // the sink's bit is never in it
      end
      // the tag is stored at most once, only after it was accepted, with the route it was
      // accepted with, and an output has taken it iff it sent it or holds it
      if (f_stored[j]) begin
        assert (f_in);
        assert (f_mask == f_route);
        for (int unsigned k = j + 1; k < NP; k++) assert (!f_stored[k]);
        for (int unsigned o = 0; o < 5; o++)
          if (Present[o]) assert (sent_q[j*5 + o] == (f_cnt[o*2 +: 2] == 2'd1 || f_outreg[o]));
        assert (f_cnt[10 +: 2] == 2'd0 && !f_errdue);  // not counted before it leaves
      end
    end
    // RegGnt: the registered grant names at most one FIFO input (LocalFirst: never the local
    // input, which takes the bus by itself); it stays put while the local input steals
    if (RegGnt) begin
      assert ((gnt_q & (gnt_q - 1'b1)) == '0);
      if (LocalFirst) assert (!gnt_q[NP-1]);
    end
    for (int unsigned o = 0; o < 4; o++)
      if (f_outreg[o]) assert (f_in && f_exp[o] && f_cnt[o*2 +: 2] == 2'd0 && f_mask == f_route);
  end
  // RegGnt: a FIFO input's head on the bus has the color loc_next_color_o told a cycle
  // before (a PE registers its room for that color: it must be the head it is offered)
  reg f_nv;
  reg [3:0] f_ncolor;
  always @(posedge clk_i) begin
    f_nv <= rst_ni;
    f_ncolor <= loc_next_color_o;
  end
  always @(*) if (RegGnt && rst_ni && f_rv && f_nv && bus_valid && !steal)
    assert (bus[PayloadW +: 4] == f_ncolor);
  // Reachability (make formal checks every cover is hit, so the properties above are not
  // vacuous): the tag reaches every destination of a route with two or more (outputs or
  // err_unrouted); a tag routed nowhere or off the mesh is counted in err_unrouted.
  logic [5:0] f_done;
  always @(*) for (int unsigned o = 0; o < 6; o++) f_done[o] = (f_cnt[o*2 +: 2] == 2'd1);
  always @(*) if (rst_ni && f_rv) begin
    cover (f_in && f_done == f_exp && (f_exp & (f_exp - 6'd1)) != 6'b0);
    cover (f_in && f_exp[5] && f_done[5]);
  end
`ifdef FORMAL_BROKEN
  // Deliberately false: claims a wavelet routed to the local output never reaches it. Must
  // fail.
  always @(*) if (rst_ni && f_rv && f_in && f_route[4]) assert (f_cnt[8 +: 2] == 2'd0);
`endif
