// board_frame_tx - device side of the host link framing, device -> host direction
// (docs/link.md).
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
  parameter integer MaxWords = 64,   // DATA frame payload limit: bounds the ACK latency (a
                                     // power of two, 2..128)
  parameter integer ErrW = 16        // bits of the stat_* error counters that can be nonzero
                                     // (board_frame_rx ErrW): the rest is not multiplexed
) (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        rsp_valid_i,
  output wire        rsp_ready_o,
  input  wire [31:0] rsp_data_i,
  input  wire        ans_valid_i,   // from board_frame_rx
  input  wire        ans_nak_i,     // the answer is a NAK (else an ACK)
  input  wire [7:0]  ans_seq_i,
  input  wire        stat_req_i,
  input  wire [7:0]  stat_expect_i, // link state reported in STAT frames
  input  wire [15:0] stat_crc_i,
  input  wire [15:0] stat_trunc_i,
  input  wire [15:0] stat_seq_i,
  output logic       byte_valid_o,
  input  wire        byte_ready_i,
  output logic [7:0] byte_data_o
);
  localparam [7:0] Sof = 8'h7e;
  localparam [3:0] SIdle = 4'd0, SSof = 4'd1, SType = 4'd2, SSeq = 4'd3, SLen0 = 4'd4,
                   SLen1 = 4'd5, SPay = 4'd6, SCrc0 = 4'd7, SCrc1 = 4'd8;
  localparam [1:0] KAns = 2'd0, KStat = 2'd1, KData = 2'd2;
  localparam integer FreeW = $clog2(BufWords) + 1;
  localparam integer MaxWordsI = MaxWords;
  localparam [FreeW-1:0] MaxW = MaxWordsI[FreeW-1:0];
  localparam integer MaxLog = $clog2(MaxWords);

  logic [3:0]   state_d, state_q;
  logic [1:0]   kind_d, kind_q;
  logic         nak_d, nak_q;       // an answer frame: NAK (TYPE 0x03, else ACK 0x02)
  logic [7:0]   left_d, left_q;     // payload words still to send (LEN until the payload)
  logic [1:0]   bidx_d, bidx_q;
  logic [15:0]  crc_d, crc_q;
  logic [7:0]   txseq_d, txseq_q;   // SEQ of the next DATA frame
  logic         ans_d, ans_q;       // an answer is pending
  logic         ansn_d, ansn_q;
  logic [7:0]   anss_d, anss_q;
  logic         stat_d, stat_q;     // a STAT frame is pending
  logic [7:0]   sseq_d, sseq_q;     // SEQ of an ACK/NAK or STAT frame (STAT: expected, also
                                  // its word 1 byte 2)
  logic [7:0]   shi_d, shi_q;       // STAT: high byte of the counter whose low byte just went
                                  // out (each 16-bit counter is sampled whole, no snapshot)
  logic         pop;

  wire [FreeW-1:0] free_unused, count;  // the queue's ready is full_o
  wire             full;
  wire             q_valid;
  wire [31:0]      q_data;
  wire [15:0]      crc_next;
  wire             count_big = |count[FreeW-1:MaxLog];   // count >= MaxWords
  wire [7:0]       count_lo = {{(8-MaxLog){1'b0}}, count[MaxLog-1:0]};
  // STAT payload, byte by byte: {trunc, crc}, then {txseq, expected, err_seq}
  localparam [15:0] ErrMask = 16'((32'd1 << ErrW) - 1);
  wire [15:0]      s_crc = stat_crc_i & ErrMask, s_trunc = stat_trunc_i & ErrMask,
                   s_seq = stat_seq_i & ErrMask;
  wire             stat_w1 = !left_q[1];  // a STAT frame's LEN is 2: word 0 while left is 2
  wire [7:0]       stat_lo = stat_w1 ? s_seq[7:0] : (bidx_q[1] ? s_trunc[7:0] : s_crc[7:0]);
  // a SEQ byte: the DATA frame's own, or (answers, STAT) sseq_q; STAT's word 1 ends with
  // expected (sseq_q) and the next DATA SEQ: one multiplexer serves SSeq and those bytes
  wire             stat_seqb = (kind_q == KStat) && stat_w1 && bidx_q[1];
  wire [7:0]       seq_byte = ((kind_q == KData) || (stat_seqb && bidx_q[0])) ? txseq_q : sseq_q;
  wire [7:0]       stat_byte = bidx_q[0] ? shi_q : stat_lo;
  wire [7:0]       stat_hi = stat_w1 ? s_seq[15:8] : (bidx_q[1] ? s_trunc[15:8] : s_crc[15:8]);

  assign rsp_ready_o = !full;

  board_fifo #(.Width(32), .Depth(BufWords), .Plain(1'b1)) u_q (
    .clk_i, .rst_ni,
    .wr_valid_i(rsp_valid_i), .wr_data_i(rsp_data_i), .wr_lane_i(2'd0), .commit_i(1'b1),
    .rollback_i(1'b0),
    .free_o(free_unused), .full_o(full), .count_o(count),
    .rd_valid_o(q_valid), .rd_ready_i(pop), .rd_data_o(q_data)
  );

  board_crc16 u_crc (.crc_i(crc_q), .data_i(byte_data_o), .crc_o(crc_next));

  always_comb begin
    state_d = state_q;
    kind_d  = kind_q;
    nak_d   = nak_q;
    left_d  = left_q;
    bidx_d  = bidx_q;
    crc_d   = crc_q;
    txseq_d = txseq_q;
    ans_d   = ans_q;
    ansn_d  = ansn_q;
    anss_d  = anss_q;
    stat_d  = stat_q || stat_req_i;
    sseq_d  = sseq_q;
    shi_d   = shi_q;
    pop     = 1'b0;
    byte_valid_o = 1'b0;
    byte_data_o  = 8'h00;

    case (state_q)
      SIdle: begin
        if (ans_q) begin
          kind_d  = KAns;
          nak_d   = ansn_q;
          sseq_d  = anss_q;
          left_d  = 8'd0;
          ans_d   = 1'b0;
          state_d = SSof;
        end else if (stat_q) begin
          kind_d  = KStat;
          left_d  = 8'd2;
          stat_d  = stat_req_i;
          sseq_d  = stat_expect_i;
          state_d = SSof;
        end else if (count != '0) begin
          kind_d  = KData;
          // min(count, MaxWords): MaxWords is a power of two, so count >= MaxWords is an
          // OR of count's bits from log2(MaxWords) up (no comparator)
          left_d  = count_big ? MaxW[7:0] : count_lo;
          state_d = SSof;
        end
        bidx_d = 2'd0;
      end
      SSof:  begin byte_valid_o = 1'b1; byte_data_o = Sof; end
      SType: begin  // 0x01 DATA, 0x02 ACK, 0x03 NAK, 0x04 STAT
        byte_valid_o = 1'b1;
        byte_data_o  = {5'b0, kind_q == KStat, kind_q == KAns, 
                        kind_q == KData || (kind_q == KAns && nak_q)};
      end
      SSeq: begin
        byte_valid_o = 1'b1;
        byte_data_o  = seq_byte;
      end
      SLen0: begin byte_valid_o = 1'b1; byte_data_o = left_q; end
      SLen1: begin byte_valid_o = 1'b1; byte_data_o = 8'h00; end
      SPay: begin
        byte_valid_o = (kind_q != KData) || q_valid;
        byte_data_o  = (kind_q == KData) ? q_data[8*bidx_q +: 8] :
                       (stat_seqb ? seq_byte : stat_byte);
      end
      SCrc0: begin byte_valid_o = 1'b1; byte_data_o = crc_q[7:0]; end
      SCrc1: begin byte_valid_o = 1'b1; byte_data_o = crc_q[15:8]; end
      default: state_d = SIdle;
    endcase

    if (byte_valid_o && byte_ready_i) begin
      crc_d = crc_next;
      case (state_q)
        SSof:  begin crc_d = crc_q; state_d = SType; end
        SType: state_d = SSeq;
        SSeq:  state_d = SLen0;
        SLen0: state_d = SLen1;
        SLen1: state_d = (left_q == 8'd0) ? SCrc0 : SPay;
        SPay: begin
          bidx_d = bidx_q + 1'b1;
          shi_d  = stat_hi;
          if (bidx_q == 2'd3) begin
            pop    = (kind_q == KData);
            left_d = left_q - 1'b1;
            if (left_q == 8'd1) state_d = SCrc0;
          end
        end
        SCrc0: begin crc_d = crc_q; state_d = SCrc1; end
        SCrc1: begin  // a DATA frame's SEQ counts on once it is sent
          crc_d = crc_q;
          state_d = SIdle;
          if (kind_q == KData) txseq_d = txseq_q + 1'b1;
        end
        default: state_d = SIdle;
      endcase
    end

    // the CRC starts at 0xffff with TYPE (no reset: a synchronous set while idle)
    if (state_q == SIdle) crc_d = 16'hffff;

    // a new answer replaces a pending one (ACK/NAK are cumulative)
    if (ans_valid_i) begin
      ans_d  = 1'b1;
      ansn_d = ans_nak_i;
      anss_d = ans_seq_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= SIdle;
      txseq_q <= 8'h00;
      ans_q   <= 1'b0;
      stat_q  <= 1'b0;
    end else begin
      state_q <= state_d;
      txseq_q <= txseq_d;
      ans_q   <= ans_d;
      stat_q  <= stat_d;
    end
  end
  always_ff @(posedge clk_i) begin
    crc_q <= crc_d;
    kind_q <= kind_d;
    nak_q <= nak_d;
    left_q <= left_d;
    bidx_q <= bidx_d;
    sseq_q <= sseq_d;
    shi_q <= shi_d;
    anss_q <= anss_d;
    ansn_q <= ansn_d;
  end
endmodule

`default_nettype wire
