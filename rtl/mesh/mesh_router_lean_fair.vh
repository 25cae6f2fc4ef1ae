// mesh_router_lean_fair.vh: bounded waiting of mesh_router_lean's bus (included under
// `ifdef FORMAL, and under `ifdef MESH_FAIRNESS in the Verilator benches, which build with
// --assert). Bounded liveness written as safety: per input j that exists, f_wait counts
// the cycles the bus is granted to another input while j holds a head without interruption
// (reset when j gets the bus or has no head). The round robin moves past every grant, so
// a head waits for at most NA - 1 others (NA: the arbiter's requesters, all inputs but the
// local one with LocalFirst). With RegGnt the grant decided a cycle ahead, before j's head
// was there, goes to another input k, but the pointer has then moved past k, so the bound
// is the same. A LocalFirst local input's own bus cycles are not counted: they
// hold the FIFO grant and the pointer (its source offers in its turns only). A pointer that
// does not move (fixed priority) lets one busy input pass a waiting one without bound.
// Only registers are asserted on, so a simulator checks settled values.
  localparam int unsigned FairNA = LocalFirst ? NP - 1 : NP;
  localparam int unsigned FairBound = FairNA - 1;
  logic [2:0] f_wait_q [NP];  // saturates at FairBound + 1
  wire [NP-1:0] f_gnt_arb = steal ? '0 : gnt;  // grants the round robin decided
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int unsigned j = 0; j < NP; j++) f_wait_q[j] <= '0;
    end else begin
      for (int unsigned j = 0; j < NP; j++) begin
        if (!hv[j] || gnt[j]) f_wait_q[j] <= '0;
        else if (f_gnt_arb != '0 && f_wait_q[j] <= 3'(FairBound))
          f_wait_q[j] <= f_wait_q[j] + 3'd1;
      end
    end
  end
  always @(*) begin
    for (int unsigned j = 0; j < NP; j++)
      if (rst_ni) assert (f_wait_q[j] <= 3'(FairBound));
  end
  // the bound is reached (it is exact, and the assertion is not vacuous)
  always @(*) begin
    logic f_at;
    f_at = 1'b0;
    for (int unsigned j = 0; j < NP; j++) if (f_wait_q[j] == 3'(FairBound)) f_at = 1'b1;
    if (rst_ni) cover (f_at);
  end
