// board_uart_tx - 8N1 UART transmitter.
// Input stream byte_valid_i / byte_ready_o / byte_data_i: a byte moves when both are high;
// ready rises in the last cycle of the stop bit, so back-to-back bytes leave with no idle
// cycle (10 bit times per byte). tx_o comes straight from a flop (no glitches on the pin).
`default_nettype none

module board_uart_tx #(
  parameter integer ClksPerBit = 8  // design clock cycles per bit: ClkHz / Baud, exact
) (
  input  wire       clk_i,
  input  wire       rst_ni,
  input  wire       byte_valid_i,
  output wire       byte_ready_o,
  input  wire [7:0] byte_data_i,
  output wire       tx_o          // line to the FT2232H RXD, idle high
);
  localparam integer CntW = $clog2(ClksPerBit);
  localparam integer BitLastI = ClksPerBit - 1;
  localparam [CntW-1:0] BitLast = BitLastI[CntW-1:0];

  logic [9:0]      shift_d, shift_q;  // LSB on the line; shifts in 1s (idle/stop level)
  logic [3:0]      bits_d, bits_q;    // bit periods left in the current byte
  logic [CntW-1:0] cnt_d, cnt_q;

  assign byte_ready_o = (bits_q == 4'd0) || (bits_q == 4'd1 && cnt_q == '0);
  assign tx_o = shift_q[0];

  always_comb begin
    shift_d = shift_q;
    bits_d  = bits_q;
    cnt_d   = cnt_q;
    if (bits_q != 4'd0) begin
      if (cnt_q == '0) begin
        shift_d = {1'b1, shift_q[9:1]};
        bits_d  = bits_q - 1'b1;
        cnt_d   = BitLast;
      end else begin
        cnt_d = cnt_q - 1'b1;
      end
    end
    if (byte_valid_i && byte_ready_o) begin
      shift_d = {1'b1, byte_data_i, 1'b0};
      bits_d  = 4'd10;
      cnt_d   = BitLast;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      shift_q <= 10'h3ff;
      bits_q  <= 4'd0;
      cnt_q   <= '0;
    end else begin
      shift_q <= shift_d;
      bits_q  <= bits_d;
      cnt_q   <= cnt_d;
    end
  end
endmodule

`default_nettype wire
