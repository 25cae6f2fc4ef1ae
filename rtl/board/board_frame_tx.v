// board_frame_tx - device side of the host link framing, device -> host direction
// (docs/architecture.md section 6, "Host link framing").
// Response words from the host port are queued in block RAM; whenever the UART is free the
// transmitter sends, in this priority: the pending ACK/NAK (one slot, the latest answer
// wins: answers are cumulative), a STAT frame, a DATA frame of the queued words (up to
// MaxWords; its LEN is the number queued when it starts, so a frame never waits for words).
// DATA frames carry their own SEQ, from 0 after reset. Nothing is retransmitted.
// Streams: rsp_valid_i / rsp_ready_o / rsp_data_i from the host port; byte_valid_o /
// byte_ready_i / byte_data_o to board_uart_tx; a beat moves when valid and ready are high.
`default_nettype none

module board_frame_tx #(
  parameter integer BufWords = 256,  // response queue, words (256 x 32 = 2 UP5K EBRs)
  parameter integer MaxWords = 64    // DATA frame payload limit: bounds the ACK latency
) (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        rsp_valid_i,
  output wire        rsp_ready_o,
  input  wire [31:0] rsp_data_i,
  input  wire        ans_valid_i,   // from board_frame_rx
  input  wire [7:0]  ans_type_i,
  input  wire [7:0]  ans_seq_i,
  input  wire        stat_req_i,
  input  wire [7:0]  stat_expect_i, // link state reported in STAT frames
  input  wire [15:0] stat_crc_i,
  input  wire [15:0] stat_trunc_i,
  input  wire [15:0] stat_seq_i,
  output reg         byte_valid_o,
  input  wire        byte_ready_i,
  output reg  [7:0]  byte_data_o
);
  localparam [7:0] Sof = 8'h7e, TData = 8'h01, TStat = 8'h04;
  localparam [3:0] SIdle = 4'd0, SSof = 4'd1, SType = 4'd2, SSeq = 4'd3, SLen0 = 4'd4,
                   SLen1 = 4'd5, SPay = 4'd6, SCrc0 = 4'd7, SCrc1 = 4'd8;
  localparam [1:0] KAns = 2'd0, KStat = 2'd1, KData = 2'd2;
  localparam integer FreeW = $clog2(BufWords) + 1;
  localparam integer MaxWordsI = MaxWords;
  localparam [FreeW-1:0] MaxW = MaxWordsI[FreeW-1:0];

  reg [3:0]   state_d, state_q;
  reg [1:0]   kind_d, kind_q;
  reg [7:0]   type_d, type_q;
  reg [7:0]   seq_d, seq_q;
  reg [7:0]   len_d, len_q;       // LEN of the frame being sent
  reg [7:0]   left_d, left_q;     // payload words still to send
  reg [1:0]   bidx_d, bidx_q;
  reg [15:0]  crc_d, crc_q;
  reg [7:0]   txseq_d, txseq_q;   // SEQ of the next DATA frame
  reg         ans_d, ans_q;       // an answer is pending
  reg [7:0]   anst_d, anst_q, anss_d, anss_q;
  reg         stat_d, stat_q;     // a STAT frame is pending
  reg [55:0]  statw_d, statw_q;   // STAT payload below txseq, snapshot at frame start
                                  // (txseq_q itself holds still until the next DATA frame)
  reg         pop;

  wire [FreeW-1:0] free, count;
  wire             q_valid;
  wire [31:0]      q_data;
  wire [15:0]      crc_next;
  wire [31:0]      pay_word = (kind_q == KData) ? q_data :
                              (left_q == 8'd2 ? statw_q[31:0] : {txseq_q, statw_q[55:32]});

  assign rsp_ready_o = (free != '0);

  board_fifo #(.Width(32), .Depth(BufWords), .Plain(1'b1)) u_q (
    .clk_i, .rst_ni,
    .wr_valid_i(rsp_valid_i), .wr_data_i(rsp_data_i), .commit_i(1'b1), .rollback_i(1'b0),
    .free_o(free), .count_o(count),
    .rd_valid_o(q_valid), .rd_ready_i(pop), .rd_data_o(q_data)
  );

  board_crc16 u_crc (.crc_i(crc_q), .data_i(byte_data_o), .crc_o(crc_next));

  always @* begin
    state_d = state_q;
    kind_d  = kind_q;
    type_d  = type_q;
    seq_d   = seq_q;
    len_d   = len_q;
    left_d  = left_q;
    bidx_d  = bidx_q;
    crc_d   = crc_q;
    txseq_d = txseq_q;
    ans_d   = ans_q;
    anst_d  = anst_q;
    anss_d  = anss_q;
    stat_d  = stat_q || stat_req_i;
    statw_d = statw_q;
    pop     = 1'b0;
    byte_valid_o = 1'b0;
    byte_data_o  = 8'h00;

    case (state_q)
      SIdle: begin
        if (ans_q) begin
          kind_d  = KAns;
          type_d  = anst_q;
          seq_d   = anss_q;
          len_d   = 8'd0;
          ans_d   = 1'b0;
          state_d = SSof;
        end else if (stat_q) begin
          kind_d  = KStat;
          type_d  = TStat;
          seq_d   = stat_expect_i;
          len_d   = 8'd2;
          stat_d  = stat_req_i;
          statw_d = {stat_expect_i, stat_seq_i, stat_trunc_i, stat_crc_i};
          state_d = SSof;
        end else if (count != '0) begin
          kind_d  = KData;
          type_d  = TData;
          seq_d   = txseq_q;
          txseq_d = txseq_q + 1'b1;
          len_d   = (count > MaxW) ? MaxW[7:0] : count[7:0];
          state_d = SSof;
        end
        left_d = len_d;
        bidx_d = 2'd0;
      end
      SSof:  begin byte_valid_o = 1'b1; byte_data_o = Sof; end
      SType: begin byte_valid_o = 1'b1; byte_data_o = type_q; end
      SSeq:  begin byte_valid_o = 1'b1; byte_data_o = seq_q; end
      SLen0: begin byte_valid_o = 1'b1; byte_data_o = len_q; end
      SLen1: begin byte_valid_o = 1'b1; byte_data_o = 8'h00; end
      SPay: begin
        byte_valid_o = (kind_q != KData) || q_valid;
        byte_data_o  = pay_word[8*bidx_q +: 8];
      end
      SCrc0: begin byte_valid_o = 1'b1; byte_data_o = crc_q[7:0]; end
      SCrc1: begin byte_valid_o = 1'b1; byte_data_o = crc_q[15:8]; end
      default: state_d = SIdle;
    endcase

    if (byte_valid_o && byte_ready_i) begin
      crc_d = (state_q == SSof) ? 16'hffff : crc_next;
      case (state_q)
        SSof:  state_d = SType;
        SType: state_d = SSeq;
        SSeq:  state_d = SLen0;
        SLen0: state_d = SLen1;
        SLen1: state_d = (len_q == 8'd0) ? SCrc0 : SPay;
        SPay: begin
          bidx_d = bidx_q + 1'b1;
          if (bidx_q == 2'd3) begin
            pop    = (kind_q == KData);
            left_d = left_q - 1'b1;
            if (left_q == 8'd1) state_d = SCrc0;
          end
        end
        SCrc0: begin crc_d = crc_q; state_d = SCrc1; end
        SCrc1: begin crc_d = crc_q; state_d = SIdle; end
        default: state_d = SIdle;
      endcase
    end

    // a new answer replaces a pending one (ACK/NAK are cumulative)
    if (ans_valid_i) begin
      ans_d  = 1'b1;
      anst_d = ans_type_i;
      anss_d = ans_seq_i;
    end
  end

  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= SIdle;
      kind_q  <= KAns;
      type_q  <= 8'h00;
      seq_q   <= 8'h00;
      len_q   <= 8'h00;
      left_q  <= 8'h00;
      bidx_q  <= 2'd0;
      crc_q   <= 16'hffff;
      txseq_q <= 8'h00;
      ans_q   <= 1'b0;
      anst_q  <= 8'h00;
      anss_q  <= 8'h00;
      stat_q  <= 1'b0;
      statw_q <= 56'h0;
    end else begin
      state_q <= state_d;
      kind_q  <= kind_d;
      type_q  <= type_d;
      seq_q   <= seq_d;
      len_q   <= len_d;
      left_q  <= left_d;
      bidx_q  <= bidx_d;
      crc_q   <= crc_d;
      txseq_q <= txseq_d;
      ans_q   <= ans_d;
      anst_q  <= anst_d;
      anss_q  <= anss_d;
      stat_q  <= stat_d;
      statw_q <= statw_d;
    end
  end
endmodule

`default_nettype wire
