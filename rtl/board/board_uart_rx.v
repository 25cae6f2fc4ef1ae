// board_uart_rx - 8N1 UART receiver, one byte per stop bit.
// Samples the middle of each bit after a 2-flop synchronizer: with ClksPerBit >= 6 it
// tolerates a few percent of baud mismatch (the FT2232H divides 12 MHz exactly for 3 Mbaud).
// Output: byte_valid_o is a one-cycle pulse with byte_data_o; there is no back-pressure (a
// UART cannot be stopped), the consumer takes every byte. byte_data_o is the shift register
// itself, valid in the pulse's cycle only (it next shifts a bit time and a half later). A byte whose stop bit reads 0
// (framing error, break) is not delivered: the frame layer's CRC or byte timeout notices.
`default_nettype none

module board_uart_rx #(
  parameter integer ClksPerBit = 8  // design clock cycles per bit: ClkHz / Baud, exact
) (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        rx_i,          // line from the FT2232H TXD, idle high, asynchronous
  output logic       byte_valid_o,  // one-cycle pulse: byte_data_o holds a received byte
  output wire  [7:0] byte_data_o
);
  localparam integer CntW = $clog2(ClksPerBit);
  localparam integer BitLastI = ClksPerBit - 1;
  localparam [CntW-1:0] BitLast = BitLastI[CntW-1:0];
  localparam integer HalfLastI = ClksPerBit / 2 - 1;
  localparam [CntW-1:0] HalfLast = HalfLastI[CntW-1:0];

  localparam [1:0] SIdle = 2'd0, SStart = 2'd1, SData = 2'd2, SStop = 2'd3;

  logic            meta_q, sync_q;
  logic [1:0]      state_d, state_q;
  logic [CntW-1:0] cnt_d, cnt_q;
  logic [2:0]      bit_d, bit_q;
  logic [7:0]      shift_d, shift_q;
  logic            valid_d;

  assign byte_data_o = shift_q;

  always_comb begin
    state_d = state_q;
    cnt_d   = cnt_q;
    bit_d   = bit_q;
    shift_d = shift_q;
    valid_d = 1'b0;
    case (state_q)
      SIdle: begin
        if (!sync_q) begin
          state_d = SStart;
          cnt_d   = HalfLast;
        end
      end
      SStart: begin
        if (cnt_q == '0) begin
          // still low in the middle of the start bit: a real start, else a glitch
          state_d = sync_q ? SIdle : SData;
          cnt_d   = BitLast;
          bit_d   = 3'd0;
        end else begin
          cnt_d = cnt_q - 1'b1;
        end
      end
      SData: begin
        if (cnt_q == '0) begin
          shift_d = {sync_q, shift_q[7:1]};
          cnt_d   = BitLast;
          bit_d   = bit_q + 1'b1;
          if (bit_q == 3'd7) state_d = SStop;
        end else begin
          cnt_d = cnt_q - 1'b1;
        end
      end
      SStop: begin
        if (cnt_q == '0) begin
          // back to idle in the middle of the stop bit: tolerates a fast sender
          valid_d = sync_q;
          state_d = SIdle;
        end else begin
          cnt_d = cnt_q - 1'b1;
        end
      end
      default: state_d = SIdle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      meta_q       <= 1'b1;
      sync_q       <= 1'b1;
      state_q      <= SIdle;
      cnt_q        <= '0;
      bit_q        <= 3'd0;
      shift_q      <= 8'h00;
      byte_valid_o <= 1'b0;
    end else begin
      meta_q       <= rx_i;
      sync_q       <= meta_q;
      state_q      <= state_d;
      cnt_q        <= cnt_d;
      bit_q        <= bit_d;
      shift_q      <= shift_d;
      byte_valid_o <= valid_d;
    end
  end
endmodule

`default_nettype wire
