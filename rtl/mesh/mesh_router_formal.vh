// mesh_router_formal.vh: properties of mesh_router (included under `ifdef FORMAL).
// No loss and no duplication, per output: the environment picks any wavelet value f_data
// and sends it at most once (on any input); then for every output o of the route its color
// had when it was accepted, it leaves on o exactly once, on no other output, and until it
// has left it is held either in an input FIFO head that has not yet served o, or in output
// register o. Assumed: route tables are written only while the router is idle and no input
// is valid (stronger than "no wavelet of that color in flight", which the host also meets).
// Any FifoDepth: the tag is held in input FIFO i from the cycle it is accepted there (unless
// it leaves in that cycle) until it leaves the FIFO's head (f_inq); behind the head it has
// served no output. PayloadW = 1 is enough: the router never reads the payload, so any trace
// that loses or duplicates one wavelet maps to one where that wavelet alone has payload 1.
// The strengthening invariants below rely on FifoDepth = 1 (every stored wavelet is a head)
// and are checked only then. verif/formal/mesh_formal.sh proves the properties with ABC:
// FifoDepth 1 by bmc3 + 2-induction, FifoDepth 2 (mesh_top's default, the sim mesh) by PDR.
  reg f_rv = 1'b0;
  always @(posedge clk_i) f_rv <= 1'b1;
  always @(*) if (!f_rv) assume (!rst_ni);

  // the tagged value: any value, fixed after the first cycle (a register loaded from a free
  // input while f_rv is low rather than an $anyconst cell, so that write_aiger takes it)
  (* anyseq *) wire [W-1:0] f_any;
  reg [W-1:0] f_data;
  always @(posedge clk_i) if (!f_rv) f_data <= f_any;
  reg f_in;
  reg [9:0] f_cnt;  // 2 bits per output
  reg [4:0] f_route;  // f_data's route when it was accepted (the table may change later)
  logic [4:0] f_acc, f_hs;
  logic [4:0] f_mask;
  always @(*) begin
    for (int unsigned i = 0; i < 5; i++)
      f_acc[i] = in_valid_i[i] && in_ready_o[i] && (in_data_i[i*W +: W] == f_data);
    for (int unsigned o = 0; o < 4; o++)
      f_hs[o] = out_valid_o[o] && out_ready_i[o] && (out_data_o[o*W +: W] == f_data);
    f_hs[4] = loc_valid_o && loc_ready_i && (loc_data_o == f_data);
    f_mask = rt_q[{f_data[PayloadW +: 4], 2'b00} + {3'b000, f_data[PayloadW +: 4]} +: 5];
  end
  // the environment: f_data sent at most once; routes written only when idle
  always @(*) begin
    assume ((f_acc & (f_acc - 1'b1)) == 5'b0);
    if (f_in) assume (f_acc == 5'b0);
    if (rt_we_i) assume (idle_o && in_valid_i == 5'b0);
  end
  // the tag is stored in input FIFO i (accepted there, not yet popped from the head)
  reg [4:0] f_inq;
  logic [4:0] f_headtag;
  always @(*)
    for (int unsigned i = 0; i < 5; i++)
      f_headtag[i] = head_valid[i] && (head_data[i*W +: W] == f_data);
  always @(posedge clk_i) begin
    if (!rst_ni) f_inq <= '0;
    else f_inq <= (f_inq | f_acc) & ~(pop & f_headtag);
  end
  always @(posedge clk_i) begin
    if (!rst_ni) begin
      f_in <= 1'b0;
      f_cnt <= '0;
      f_route <= '0;
    end else begin
      if (f_acc != 5'b0) begin
        f_in <= 1'b1;
        f_route <= f_mask;
      end
      for (int unsigned o = 0; o < 5; o++) if (f_hs[o] && f_cnt[o*2 +: 2] != 2'd3) f_cnt[o*2 +: 2] <= f_cnt[o*2 +: 2] + 2'd1;
    end
  end
  // where the tag can be: stored in an input FIFO, at its head not yet sent to o or behind
  // the head, or in output register o
  logic [4:0] f_held, f_outreg, f_stored;
  always @(*) begin
    for (int unsigned i = 0; i < 5; i++)
      f_stored[i] = !fifo_empty[i] && head_data[i*W +: W] == f_data;
    for (int unsigned o = 0; o < 5; o++) begin
      f_held[o] = 1'b0;
      for (int unsigned i = 0; i < 5; i++)
        if (f_inq[i] && !(f_stored[i] && sent_q[i*5 + o])) f_held[o] = 1'b1;
    end
    for (int unsigned o = 0; o < 4; o++) f_outreg[o] = outv_q[o] && (outd_q[o*W +: W] == f_data);
    f_outreg[4] = 1'b0;
    f_held = f_held | f_outreg;
  end
  always @(*) if (rst_ni && f_rv) begin
    for (int unsigned o = 0; o < 5; o++) begin
      assert (f_cnt[o*2 +: 2] <= 2'd1);                                // never duplicated
      if (!f_in) assert (f_cnt[o*2 +: 2] == 2'd0 && !f_held[o]);       // never invented
      else if (f_route[o]) assert ((f_cnt[o*2 +: 2] == 2'd1) != f_held[o]);  // never lost
      else assert (f_cnt[o*2 +: 2] == 2'd0 && !f_outreg[o]);            // never misrouted
    end
  end
  // Strengthening invariants (true in every reachable state, proved with the rest): they
  // make the property inductive, so PDR closes it in seconds instead of exploring.
  // FifoDepth 1 only (they describe every stored wavelet as a head).
  always @(*) if (rst_ni && f_rv && FifoDepth == 1) begin
    assert (f_inq == f_stored);  // stored means at the head
    for (int unsigned i = 0; i < 5; i++) begin
      // a head's sent mask is empty when nothing is stored, else a strict subset of its
      // (nonzero) route: a head whose route is complete or empty has left
      if (fifo_empty[i]) assert (sent_q[i*5 +: 5] == 5'b0);
      else begin
        assert (mask[i*5 +: 5] != 5'b0);
        assert ((sent_q[i*5 +: 5] & ~mask[i*5 +: 5]) == 5'b0);
        assert (sent_q[i*5 +: 5] != mask[i*5 +: 5]);
      end
      // the tag is stored at most once, only after it was accepted, with the route it was
      // accepted with, and an output has taken it iff it sent it or holds it
      if (f_stored[i]) begin
        assert (f_in);
        assert (mask[i*5 +: 5] == f_route);
        for (int unsigned j = i + 1; j < 5; j++) assert (!f_stored[j]);
        for (int unsigned o = 0; o < 5; o++)
          assert (sent_q[i*5 + o] == (f_cnt[o*2 +: 2] == 2'd1 || f_outreg[o]));
      end
    end
    for (int unsigned o = 0; o < 4; o++)
      if (f_outreg[o]) assert (f_in && f_route[o] && f_cnt[o*2 +: 2] == 2'd0 && f_mask == f_route);
  end
  // Reachability (make formal checks every cover is hit, so the properties above are not
  // vacuous): a wavelet multicast to all five outputs leaves on every one; one waits in a
  // stalled output register; a multicast head waits with some copies sent; an unrouted
  // head is dropped.
  always @(*) if (rst_ni && f_rv) begin
    cover (f_in && f_route == 5'b11111 && f_cnt == {5{2'd1}});
    cover (f_in && f_outreg[1] && !out_ready_i[1]);
    cover ((f_stored & {|sent_q[20 +: 5], |sent_q[15 +: 5], |sent_q[10 +: 5], |sent_q[5 +: 5],
                        |sent_q[0 +: 5]}) != 5'b0);
    cover (drop != 5'b0);
  end
`ifdef FORMAL_BROKEN
  // Deliberately false: claims a routed wavelet can never reach the E output. Must fail.
  always @(*) if (rst_ni && f_rv && f_in && f_route[1]) assert (f_cnt[2 +: 2] == 2'd0);
`endif
