// board_top - the accelerator on an iCEBreaker-class board (iCE40 UP5K, FT2232H, 12 MHz).
//
//   pin 35 12 MHz -> board_pll -> clk (ClkHz)        button/PLL lock -> board_rst_sync
//   pin 6 (FTDI TXD) -> board_uart_rx -> board_frame_rx -> cmd words -> host port
//   pin 9 (FTDI RXD) <- board_uart_tx <- board_frame_tx <- rsp words <- host port
//   LEDs: green = link activity, red = a dropped frame (CRC, truncation, sequence)
//
// The host port is the mesh (mesh_top, rtl/mesh/, 32-bit command words in and response words
// out, valid/ready). Defining BOARD_ECHO_DOUBLE puts the link test double
// verif/board/board_echo_double.v in its place (ECHO/NOP only) so the link layer and the FPGA
// flow can be tested without the mesh. Framing: docs/architecture.md section 6.
`default_nettype none

module board_top #(
  parameter integer Rows = 2,              // mesh shape (mesh_top)
  parameter integer Cols = 2,
  parameter integer AWords = 1024,         // per-PE activation SRAM, bf16 elements
  parameter integer BWords = 256,          // per-PE accumulator SRAM, 32-bit words
  parameter integer NumQueues = 4,         // PE input queues (mesh_top)
  parameter integer QueueDepth = 8,        // PE input queue depth: 2 on the board (area)
  parameter integer FifoDepth = 2,         // router input FIFO depth
  parameter [63:0] Impl = "full",          // mesh_top's implementation: "full"; the board's
                                           // "lite" (1x1) or "micro_mt" (2x2)
  // link receive buffer, words (board_frame_rx BufWords, a power of two >= 256): 1024 (8 EBR,
  // the host's whole window of 4 frames) up to 2 PEs, whose EBR are not short; 512 (4 EBR)
  // from 3 PEs on, where the tiles need them (256 made the 1x1 pe_lite streams overrun it;
  // with 512 the 1x1 and 2x2 training-step benches resend no frame)
  parameter integer RxWords = (Rows * Cols > 2) ? 512 : 1024,
  // link error counters (STAT err_crc, err_trunc, err_seq), bits: saturating at 255, read
  // zero-extended (informational only: the driver prints them)
  parameter integer LinkErrW = 8,
  parameter integer ClkHz = 21000000,      // design clock: must match the PLL settings
  parameter integer Baud = 3000000,        // UART rate: ClkHz / Baud must be an integer >= 6
  parameter [3:0] PllDivr = 4'd0,          // PLL settings for ClkHz (icepll -i 12 -o MHz)
  parameter [6:0] PllDivf = 7'd55,
  parameter [2:0] PllDivq = 3'd5,
  parameter [2:0] PllFilterRange = 3'd1
) (
  input  wire clk_12m_i,     // board oscillator
  input  wire btn_ni,        // user button: reset while pressed
  input  wire uart_rx_i,     // from the FT2232H channel B TXD
  output wire uart_tx_o,     // to the FT2232H channel B RXD
  output wire led_red_no,
  output wire led_green_no
);
  localparam integer ClksPerBit = ClkHz / Baud;
  localparam integer TimeoutClks = 1024 * ClksPerBit;  // 1024 bit times (docs/link.md)

  wire clk, locked, rst_n;

  board_pll #(.Divr(PllDivr), .Divf(PllDivf), .Divq(PllDivq), .FilterRange(PllFilterRange))
    u_pll (.clk_i(clk_12m_i), .clk_o(clk), .locked_o(locked));

  board_rst_sync u_rst (.clk_i(clk), .arst_ni(locked & btn_ni), .rst_no(rst_n));

  wire       rx_valid;
  wire [7:0] rx_data;
  wire       tx_valid, tx_ready;
  wire [7:0] tx_data;

  board_uart_rx #(.ClksPerBit(ClksPerBit)) u_uart_rx (
    .clk_i(clk), .rst_ni(rst_n), .rx_i(uart_rx_i),
    .byte_valid_o(rx_valid), .byte_data_o(rx_data)
  );

  board_uart_tx #(.ClksPerBit(ClksPerBit)) u_uart_tx (
    .clk_i(clk), .rst_ni(rst_n),
    .byte_valid_i(tx_valid), .byte_ready_o(tx_ready), .byte_data_i(tx_data),
    .tx_o(uart_tx_o)
  );

  wire        cmd_valid, cmd_ready, rsp_valid, rsp_ready;
  wire [31:0] cmd_data, rsp_data;
  wire        ans_valid, ans_nak, stat_req, link_err;
  wire [7:0]  ans_seq, expect_seq;
  wire [15:0] err_crc, err_trunc, err_seq;

  board_frame_rx #(.BufWords(RxWords), .TimeoutClks(TimeoutClks), .ErrW(LinkErrW)) u_frame_rx (
    .clk_i(clk), .rst_ni(rst_n),
    .byte_valid_i(rx_valid), .byte_data_i(rx_data),
    .cmd_valid_o(cmd_valid), .cmd_ready_i(cmd_ready), .cmd_data_o(cmd_data),
    .ans_valid_o(ans_valid), .ans_nak_o(ans_nak), .ans_seq_o(ans_seq),
    .stat_req_o(stat_req), .expect_o(expect_seq),
    .err_crc_o(err_crc), .err_trunc_o(err_trunc), .err_seq_o(err_seq), .err_o(link_err)
  );

  board_frame_tx #(.ErrW(LinkErrW)) u_frame_tx (
    .clk_i(clk), .rst_ni(rst_n),
    .rsp_valid_i(rsp_valid), .rsp_ready_o(rsp_ready), .rsp_data_i(rsp_data),
    .ans_valid_i(ans_valid), .ans_nak_i(ans_nak), .ans_seq_i(ans_seq),
    .stat_req_i(stat_req), .stat_expect_i(expect_seq),
    .stat_crc_i(err_crc), .stat_trunc_i(err_trunc), .stat_seq_i(err_seq),
    .byte_valid_o(tx_valid), .byte_ready_i(tx_ready), .byte_data_o(tx_data)
  );

`ifdef BOARD_ECHO_DOUBLE
  board_echo_double u_port (
    .clk_i(clk), .rst_ni(rst_n),
    .cmd_valid_i(cmd_valid), .cmd_ready_o(cmd_ready), .cmd_data_i(cmd_data),
    .rsp_valid_o(rsp_valid), .rsp_ready_i(rsp_ready), .rsp_data_o(rsp_data)
  );
  wire unused_ok = &{1'b0, Rows[0], Cols[0], AWords[0], BWords[0], NumQueues[0],
                     QueueDepth[0], FifoDepth[0], Impl[0]};
`else
  wire [Rows*Cols-1:0] mac_busy;  // utilization probes: for the simulator, not the board
  wire                 mesh_idle, mesh_stream;
  mesh_top #(
    .Rows(Rows), .Cols(Cols), .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues),
    .QueueDepth(QueueDepth), .FifoDepth(FifoDepth), .Impl(Impl)
  ) u_mesh (
    .clk_i(clk), .rst_ni(rst_n),
    .cmd_valid_i(cmd_valid), .cmd_ready_o(cmd_ready), .cmd_data_i(cmd_data),
    .rsp_valid_o(rsp_valid), .rsp_ready_i(rsp_ready), .rsp_data_o(rsp_data),
    .mac_busy_o(mac_busy), .stream_o(mesh_stream), .idle_o(mesh_idle)
  );
  wire unused_ok = &{1'b0, mac_busy, mesh_stream, mesh_idle};
`endif

  // LED time base: a strobe every 2^20 cycles (50 ms at 21 MHz), the counter's carry out
  // (no 20-bit compare)
  logic  [19:0] led_div_q;
  logic         led_tick_q;
  wire [19:0] led_div_d;
  wire        led_wrap;
  assign {led_wrap, led_div_d} = {1'b0, led_div_q} + 21'd1;
  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      led_div_q  <= 20'd0;
      led_tick_q <= 1'b0;
    end else begin
      led_div_q  <= led_div_d;
      led_tick_q <= led_wrap;
    end
  end

  board_led u_led_act (
    .clk_i(clk), .rst_ni(rst_n), .tick_i(led_tick_q),
    .event_i(rx_valid | (tx_valid & tx_ready)), .led_no(led_green_no)
  );
  board_led u_led_err (
    .clk_i(clk), .rst_ni(rst_n), .tick_i(led_tick_q), .event_i(link_err),
    .led_no(led_red_no)
  );
endmodule

`default_nettype wire
