// board_pll - the design clock from the board's 12 MHz oscillator through the UP5K PLL.
// f_out = 12 MHz * (DIVF + 1) / ((DIVR + 1) * 2^DIVQ), VCO 533..1066 MHz; values from
// `icepll -i 12 -o <MHz>` (21 MHz, the board's clock: DIVR 0, DIVF 55, DIVQ 5, FILTER_RANGE 1;
// 24 MHz: DIVF 63).
// Synthesis instantiates SB_PLL40_PAD (the iCEBreaker's oscillator drives pin 35, a PLL
// input pad). Simulation (Verilator, iverilog; SYNTHESIS undefined) uses a behavioural
// stand-in: the design clock is the input clock itself (the bench drives clk_i at the PLL
// output frequency) and lock rises after LockCycles cycles. The gate-level bench keeps the
// SB_PLL40_PAD cell of the netlist and gives it the same behaviour
// (verif/board/board_gl_pll_model.v). BOARD_NO_ICE40_PLL selects the behavioural model in
// synthesis too: resource estimates for other FPGA families (make synth-estimate).
`default_nettype none

`ifdef SYNTHESIS
`ifndef BOARD_NO_ICE40_PLL
`define BOARD_PLL_SB_PLL40
`endif
`endif

module board_pll #(
  parameter [3:0] Divr = 4'd0,          // reference divider
  parameter [6:0] Divf = 7'd55,         // feedback divider
  parameter [2:0] Divq = 3'd5,          // VCO output divider (power of two)
  parameter [2:0] FilterRange = 3'd1,   // loop filter for the PFD frequency (icepll)
  parameter integer LockCycles = 16     // behavioural model only: cycles until lock
) (
  input  wire clk_i,    // 12 MHz pad
  output wire clk_o,    // design clock (global buffer)
  output wire locked_o  // asynchronous; high while the PLL is locked
);
`ifdef BOARD_PLL_SB_PLL40
  SB_PLL40_PAD #(
    .FEEDBACK_PATH("SIMPLE"),
    .DIVR(Divr),
    .DIVF(Divf),
    .DIVQ(Divq),
    .FILTER_RANGE(FilterRange)
  ) u_pll (
    .PACKAGEPIN(clk_i),
    .PLLOUTCORE(),
    .PLLOUTGLOBAL(clk_o),
    .EXTFEEDBACK(1'b0),
    .DYNAMICDELAY(8'h00),
    .LOCK(locked_o),
    .BYPASS(1'b0),
    .RESETB(1'b1),
    .LATCHINPUTVALUE(1'b0),
    .SDO(),
    .SDI(1'b0),
    .SCLK(1'b0)
  );
`else
  localparam integer CntW = $clog2(LockCycles + 1);
  localparam integer LockI = LockCycles;
  localparam [CntW-1:0] LockW = LockI[CntW-1:0];
  logic [CntW-1:0] cnt_q = '0;
  always_ff @(posedge clk_i) begin
    if (cnt_q != LockW) cnt_q <= cnt_q + 1'b1;
  end
  assign clk_o = clk_i;
  assign locked_o = (cnt_q == LockW);
  wire unused_ok = &{1'b0, Divr, Divf, Divq, FilterRange};
`endif
endmodule

`undef BOARD_PLL_SB_PLL40
`default_nettype wire
