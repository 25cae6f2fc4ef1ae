// mesh_router_fair.vh: bounded waiting of mesh_router's arbiters (included under `ifdef
// FORMAL, and under `ifdef MESH_FAIRNESS in the Verilator benches, which build with
// --assert). Bounded liveness written as safety: per output o and input i, f_wait counts
// the wavelets output o takes from other inputs while i's head requests o without
// interruption (reset when i is served or stops requesting). Round robin with the pointer
// moved past each used grant serves i before N - 1 = 4 others: every use by another input
// brings the pointer strictly closer to i. A pointer that does not move (fixed priority)
// lets one busy input pass a waiting one without bound.
// Only registers are asserted on, so a simulator checks settled values.
  localparam int unsigned FairBound = 4;  // inputs other than the waiting one
  logic [2:0] f_wait_q [25];  // f_wait_q[o*5 + i], saturates at FairBound + 1
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int unsigned k = 0; k < 25; k++) f_wait_q[k] <= '0;
    end else begin
      for (int unsigned o = 0; o < 5; o++) begin
        for (int unsigned i = 0; i < 5; i++) begin
          if (!req[o*5 + i] || take[o*5 + i]) f_wait_q[o*5 + i] <= '0;
          else if (take[o*5 +: 5] != 5'b0 && f_wait_q[o*5 + i] <= 3'(FairBound))
            f_wait_q[o*5 + i] <= f_wait_q[o*5 + i] + 3'd1;
        end
      end
    end
  end
  always @(*) begin
    for (int unsigned k = 0; k < 25; k++)
      if (rst_ni) assert (f_wait_q[k] <= 3'(FairBound));
  end
  // the bound is reached (it is exact, and the assertion is not vacuous)
  always @(*) begin
    logic f_at;
    f_at = 1'b0;
    for (int unsigned k = 0; k < 25; k++) if (f_wait_q[k] == 3'(FairBound)) f_at = 1'b1;
    if (rst_ni) cover (f_at);
  end
