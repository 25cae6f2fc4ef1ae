// board_led - pulse stretcher for a status LED: an event_i pulse lights the LED for
// StretchTicks to StretchTicks+1 periods of tick_i (a single byte or error at 21 MHz would be
// invisible otherwise). The slow tick is shared, so each LED costs a few LUTs only.
`default_nettype none

module board_led #(
  parameter integer StretchTicks = 3  // on-time after the last event, in ticks (< 16)
) (
  input  wire clk_i,
  input  wire rst_ni,
  input  wire tick_i,   // slow strobe (board_top: every 2^20 cycles, ~50 ms at 21 MHz)
  input  wire event_i,
  output wire led_no    // active low, as on the iCEBreaker; driven from a flop
);
  localparam integer StretchI = StretchTicks;
  localparam integer CntW = $clog2(StretchTicks + 1);  // just wide enough
  localparam [CntW-1:0] StretchW = StretchI[CntW-1:0];
  logic [CntW-1:0] cnt_d, cnt_q;
  logic            led_d, led_q;
  always_comb begin
    cnt_d = cnt_q;
    if (event_i) cnt_d = StretchW;
    else if (tick_i && cnt_q != '0) cnt_d = cnt_q - 1'b1;
    led_d = (cnt_d == '0);
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cnt_q <= '0;
      led_q <= 1'b1;
    end else begin
      cnt_q <= cnt_d;
      led_q <= led_d;
    end
  end
  assign led_no = led_q;
endmodule

`default_nettype wire
