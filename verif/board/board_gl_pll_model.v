// board_gl_pll_model - behaviour for the SB_PLL40_PAD cell in the gate-level bench.
// yosys's ice40 cells_sim.v declares SB_PLL40_PAD without behaviour; the gate-level bench
// drops that declaration and compiles this one, which passes the pad clock through (the
// bench drives the pad at the PLL output frequency, as the RTL bench does with
// board_pll's behavioural model) and locks after 16 cycles. Simulation only.
`default_nettype none

module SB_PLL40_PAD (
  input  wire       PACKAGEPIN,
  output wire       PLLOUTCORE,
  output wire       PLLOUTGLOBAL,
  input  wire       EXTFEEDBACK,
  input  wire [7:0] DYNAMICDELAY,
  output wire       LOCK,
  input  wire       BYPASS,
  input  wire       RESETB,
  input  wire       LATCHINPUTVALUE,
  output wire       SDO,
  input  wire       SDI,
  input  wire       SCLK
);
  parameter FEEDBACK_PATH = "SIMPLE";
  parameter DELAY_ADJUSTMENT_MODE_FEEDBACK = "FIXED";
  parameter DELAY_ADJUSTMENT_MODE_RELATIVE = "FIXED";
  parameter SHIFTREG_DIV_MODE = 1'b0;
  parameter FDA_FEEDBACK = 4'b0000;
  parameter FDA_RELATIVE = 4'b0000;
  parameter PLLOUT_SELECT = "GENCLK";
  parameter DIVR = 4'b0000;
  parameter DIVF = 7'b0000000;
  parameter DIVQ = 3'b000;
  parameter FILTER_RANGE = 3'b000;
  parameter ENABLE_ICEGATE = 1'b0;
  parameter TEST_MODE = 1'b0;
  parameter EXTERNAL_DIVIDE_FACTOR = 1;

  reg [4:0] cnt_q = 5'd0;
  always @(posedge PACKAGEPIN) begin
    if (cnt_q != 5'd16) cnt_q <= cnt_q + 5'd1;
  end
  assign PLLOUTCORE = PACKAGEPIN;
  assign PLLOUTGLOBAL = PACKAGEPIN;
  assign LOCK = (cnt_q == 5'd16);
  assign SDO = 1'b0;
  wire unused_ok = &{1'b0, EXTFEEDBACK, DYNAMICDELAY, BYPASS, RESETB, LATCHINPUTVALUE, SDI,
                     SCLK};
endmodule

`default_nettype wire
