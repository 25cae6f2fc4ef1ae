// board_led - pulse stretcher for a status LED: any event_i pulse lights the LED for
// StretchClks cycles (a single byte or error at 24 MHz would be invisible otherwise).
`default_nettype none

module board_led #(
  parameter integer StretchClks = 2400000  // on-time after the last event (0.1 s at 24 MHz)
) (
  input  wire clk_i,
  input  wire rst_ni,
  input  wire event_i,
  output wire led_no    // active low, as on the iCEBreaker
);
  localparam integer CntW = $clog2(StretchClks + 1);
  localparam integer StretchI = StretchClks;
  localparam [CntW-1:0] StretchW = StretchI[CntW-1:0];
  reg [CntW-1:0] cnt_d, cnt_q;
  always @* begin
    cnt_d = cnt_q;
    if (event_i) cnt_d = StretchW;
    else if (cnt_q != '0) cnt_d = cnt_q - 1'b1;
  end
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) cnt_q <= '0;
    else cnt_q <= cnt_d;
  end
  assign led_no = (cnt_q == '0);
endmodule

`default_nettype wire
