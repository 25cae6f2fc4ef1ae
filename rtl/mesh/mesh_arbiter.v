// mesh_arbiter: round-robin arbiter, one per router output.
//
// gnt_o is combinational and one-hot (or zero): the first requester at or after the
// priority pointer wins. The pointer moves past the winner only when advance_i says the
// grant was used (the output accepted the beat), so a stalled output keeps its winner and
// no requester starves: every requester is served within N uses of the output.
`default_nettype none

module mesh_arbiter #(
  parameter int unsigned N = 5  // requesters (router inputs)
) (
  input  wire          clk_i,
  input  wire          rst_ni,
  input  wire  [N-1:0] req_i,
  input  wire          advance_i,  // the granted beat moved this cycle
  output logic [N-1:0] gnt_o
);
  localparam int unsigned IdxW = (N > 1) ? $clog2(N) : 1;
  localparam logic [IdxW-1:0] Last = IdxW'(N - 1);

  logic [IdxW-1:0] ptr_q, ptr_d;
  logic [IdxW-1:0] nxt;   // the index after the winner
  logic            found;

  // gnt_o[i]: i requests and nobody from the pointer up to i (cyclically) does. Written per
  // pointer value as a flat sum of products rather than a scan from the pointer (a chain of
  // N index muxes): the same function, 8 instead of 23 LUT4 at N = 3 on the iCE40.
  always_comb begin
    gnt_o = '0;
    for (int unsigned p = 0; p < N; p++) begin
      for (int unsigned i = 0; i < N; i++) begin
        logic none_before;
        none_before = 1'b1;
        for (int unsigned k = p; k != i; k = (k + 1 == N) ? 0 : k + 1)
          none_before = none_before && !req_i[k];
        if (ptr_q == IdxW'(p) && req_i[i] && none_before) gnt_o[i] = 1'b1;
      end
    end
    found = (req_i != '0);
    // the winner's successor, from the one-hot grant (an OR of grant bits per index bit)
    nxt = '0;
    for (int unsigned i = 0; i < N; i++)
      if (gnt_o[i]) nxt = nxt | ((IdxW'(i) == Last) ? '0 : IdxW'(i + 1));
  end

  // A block of its own: advance_i depends on gnt_o through the output's ready (the local
  // port's ready follows the color of the granted wavelet), so computing ptr_d in the
  // grant's block would make a combinational loop at block level (Verilator UNOPTFLAT,
  // which it resolves by re-evaluating the router every cycle until it settles).
  always_comb begin
    ptr_d = ptr_q;
    if (found && advance_i) ptr_d = nxt;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) ptr_q <= '0;
    else ptr_q <= ptr_d;
  end

`ifdef FORMAL
  always_comb begin
    assert ((gnt_o & (gnt_o - 1'b1)) == '0);   // at most one grant
    assert ((gnt_o & ~req_i) == '0);           // only to requesters
    assert ((req_i == '0) == (gnt_o == '0));   // work conserving
    if (rst_ni) assert (ptr_q <= Last);        // in range (an induction invariant)
  end
`endif
endmodule

`default_nettype wire
