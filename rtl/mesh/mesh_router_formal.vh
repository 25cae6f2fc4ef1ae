// mesh_router_formal.vh: properties of mesh_router (included under `ifdef FORMAL).
// No loss and no duplication, per output: the environment picks any wavelet value f_data
// and sends it at most once (on any input); then for every output o of its route it leaves
// on o exactly once, on no other output, and until it has left it is held either in an
// input FIFO head that has not yet served o, or in output register o. Route tables change
// only while the router is idle (as the host does). Run with FifoDepth = 1 (every stored
// wavelet is a FIFO head) and a small PayloadW; the FIFOs' own properties are included.
  reg f_rv = 1'b0;
  always @(posedge clk_i) f_rv <= 1'b1;
  always @(*) if (!f_rv) assume (!rst_ni);

  (* anyconst *) reg [W-1:0] f_data;
  reg f_in;
  reg [9:0] f_cnt;  // 2 bits per output
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
  always @(posedge clk_i) begin
    if (!rst_ni) begin
      f_in <= 1'b0;
      f_cnt <= '0;
    end else begin
      if (f_acc != 5'b0) f_in <= 1'b1;
      for (int unsigned o = 0; o < 5; o++) if (f_hs[o] && f_cnt[o*2 +: 2] != 2'd3) f_cnt[o*2 +: 2] <= f_cnt[o*2 +: 2] + 2'd1;
    end
  end
  // where the tag can be: an input FIFO head (stored or bypassing) not yet sent to o,
  // or output register o
  logic [4:0] f_held, f_outreg;
  always @(*) begin
    for (int unsigned o = 0; o < 5; o++) begin
      f_held[o] = 1'b0;
      for (int unsigned i = 0; i < 5; i++)
        if (!fifo_empty[i] && head_data[i*W +: W] == f_data && !sent_q[i*5 + o]) f_held[o] = 1'b1;
    end
    for (int unsigned o = 0; o < 4; o++) f_outreg[o] = outv_q[o] && (outd_q[o*W +: W] == f_data);
    f_outreg[4] = 1'b0;
    f_held = f_held | f_outreg;
  end
  always @(*) if (rst_ni && f_rv) begin
    for (int unsigned o = 0; o < 5; o++) begin
      assert (f_cnt[o*2 +: 2] <= 2'd1);                                // never duplicated
      if (!f_in) assert (f_cnt[o*2 +: 2] == 2'd0 && !f_held[o]);       // never invented
      else if (f_mask[o]) assert ((f_cnt[o*2 +: 2] == 2'd1) != f_held[o]);  // never lost
      else assert (f_cnt[o*2 +: 2] == 2'd0 && !f_outreg[o]);
    end
  end
`ifdef FORMAL_BROKEN
  // Deliberately false: claims a routed wavelet can never reach the E output. Must fail.
  always @(*) if (rst_ni && f_rv && f_in && f_mask[1]) assert (f_cnt[1] == 2'd0);
`endif
