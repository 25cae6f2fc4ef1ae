// board_frame_rx_check: the host link receiver's error counters saturate, never wrap
// (verif/formal/mesh_formal.sh, `link_counters`). Formal only; board_frame_rx is used
// unchanged, with 2-bit counters (ErrW 2) so that saturation is reached in a few frames, a
// short byte timeout, and its receive buffer cut out by the script (its read data become
// free inputs: the counters do not depend on them). Any bytes arrive, any back-pressure.
// Each counter (err_crc, err_trunc, err_seq), cleared by reset only, never decreases; each
// reaches its maximum (cover), so the check sees the saturating increment.
`default_nettype none

module board_frame_rx_check (
  input wire clk_i,
  input wire rst_ni
);
  (* anyseq *) wire       byte_valid_i;
  (* anyseq *) wire [7:0] byte_data_i;
  (* anyseq *) wire       cmd_ready_i;
  wire        cmd_valid_o, ans_valid_o, ans_nak_o, stat_req_o, err_o;
  wire [31:0] cmd_data_o;
  wire [7:0]  ans_seq_o, expect_o;
  wire [15:0] err_crc_o, err_trunc_o, err_seq_o;

  board_frame_rx #(.BufWords(256), .TimeoutClks(4), .Window(4), .ErrW(2)) dut (
    .clk_i, .rst_ni, .byte_valid_i, .byte_data_i, .cmd_valid_o, .cmd_ready_i, .cmd_data_o,
    .ans_valid_o, .ans_nak_o, .ans_seq_o, .stat_req_o, .expect_o, .err_crc_o,
    .err_trunc_o, .err_seq_o, .err_o);

  reg f_rv = 1'b0, f_run = 1'b0;
  reg [15:0] f_crc, f_trunc, f_seq;
  always @(posedge clk_i) begin
    f_rv <= 1'b1;
    f_run <= rst_ni;
    f_crc <= err_crc_o;
    f_trunc <= err_trunc_o;
    f_seq <= err_seq_o;
  end
  always @(*) if (!f_rv) assume (!rst_ni);
  always @(*) if (rst_ni && f_run) begin
    assert (err_crc_o >= f_crc);
    assert (err_trunc_o >= f_trunc);
    assert (err_seq_o >= f_seq);
  end
  always @(*) if (rst_ni && f_run) begin
    cover (err_crc_o == 16'd3 && f_crc == 16'd3);
    cover (err_trunc_o == 16'd3 && f_trunc == 16'd3);
    cover (err_seq_o == 16'd3 && f_seq == 16'd3);
  end
endmodule

`default_nettype wire
