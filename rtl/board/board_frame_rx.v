// board_frame_rx - device side of the host link framing, host -> device direction
// (docs/link.md).
// Bytes from the UART in, command words to the host port out. A DATA frame's payload is
// written to a block-RAM buffer as it arrives and released to the host port only after its
// CRC checked good and its SEQ is the expected one (go-back-N receiver): a corrupted
// command never reaches the mesh. Answers (ACK/NAK with a SEQ) go to board_frame_tx as
// one-cycle pulses. A gap of TimeoutClks between two bytes inside a frame drops the frame
// (err_trunc); a bad header or CRC drops it (err_crc) and the receiver hunts for the next
// 0x7e. A DATA frame whose SEQ is expected but whose payload does not fit in the free buffer
// (the host port back-pressures) is dropped without an answer; so are the out-of-order frames
// behind it; once the buffer has room for a full frame again the receiver sends one
// NAK expected, and the host resends from there (flow control without a credit scheme).
// Streams: byte_valid_i pulses (no back-pressure, as from board_uart_rx);
// cmd_valid_o / cmd_ready_i / cmd_data_o to the host port (a word moves when both are high).
`default_nettype none

module board_frame_rx #(
  // receive buffer, words (a power of two >= 256: one full frame; board_top sets it). 1024
  // (8 EBR) holds the host's window of 4 frames: with 256, a 1x1 pe_lite stream fell behind
  // the link, overran it and each dropped frame cost a NAK and a resend (a tiny-GPT step
  // moved 2.1x the bytes); 512 (4 EBR) is what the 2x2 board affords
  parameter integer BufWords = 1024,
  parameter integer TimeoutClks = 8192,    // byte timeout: 1024 bit times of the UART
  parameter integer Window = 4,            // host go-back-N window: older SEQs are duplicates
                                           // (a power of two)
  parameter integer ErrW = 16              // error counters' width (<= 16, saturating; the
                                           // outputs and STAT zero-extend them): area
) (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        byte_valid_i,
  input  wire [7:0]  byte_data_i,
  output wire        cmd_valid_o,
  input  wire        cmd_ready_i,
  output wire [31:0] cmd_data_o,
  output logic       ans_valid_o,   // pulse: send an answer frame
  output logic       ans_nak_o,     // the answer is a NAK (else an ACK)
  output wire [7:0]  ans_seq_o,     // with ans_valid_o: NAK expected, ACK expected - 1
  output logic       stat_req_o,    // pulse: the host asked for a STAT frame
  output wire [7:0]  expect_o,      // SEQ of the next DATA frame accepted
  output wire [15:0] err_crc_o,     // saturating ErrW-bit counters, cleared by reset only
  output wire [15:0] err_trunc_o,
  output wire [15:0] err_seq_o,
  output logic       err_o          // pulse: a frame was dropped (status LED)
);
  localparam [7:0] Sof = 8'h7e, TData = 8'h01, TStat = 8'h04;
  localparam [2:0] SHunt = 3'd0, SType = 3'd1, SSeq = 3'd2, SLen0 = 3'd3, SLen1 = 3'd4,
                   SPay = 3'd5, SCrc0 = 3'd6, SCrc1 = 3'd7;
  localparam integer TmoW = $clog2(TimeoutClks + 1);
  localparam integer WindowI = Window;
  localparam [7:0] WindowW = WindowI[7:0];
  localparam integer TimeoutI = TimeoutClks;
  localparam [TmoW-1:0] TimeoutW = TimeoutI[TmoW-1:0];
  localparam integer FreeW = $clog2(BufWords) + 1;
  localparam integer RoomI = 255;  // words of the largest frame
  localparam [FreeW-1:0] RoomW = RoomI[FreeW-1:0];

  logic [2:0]      state_d, state_q;
  logic            stat_d, stat_q;       // TYPE is STAT (else DATA: the only two accepted)
  logic            seq_ok_d, seq_ok_q;   // SEQ is the expected one
  logic            seq_dup_d, seq_dup_q; // SEQ is 1..Window behind it (a duplicate)
  logic [7:0]      len_d, len_q;         // words left in the payload
  logic [1:0]      bidx_d, bidx_q;       // byte within the word
  logic [15:0]     crc_d, crc_q;
  logic            crclo_d, crclo_q;     // the CRC's low byte matched
  logic            store_d, store_q;     // this frame's payload goes to the buffer
  logic            dropped_d, dropped_q; // a frame was dropped for lack of room, no NAK yet
  logic            recover_d, recover_q; // since such a drop, no frame accepted yet
  logic [7:0]      expect_d, expect_q;
  logic [TmoW-1:0] tmo_d, tmo_q;
  wire [ErrW-1:0] ecrc_d, etrunc_d, eseq_d;
  logic [ErrW-1:0] ecrc_q, etrunc_q, eseq_q;
  logic            ecrc_inc, etrunc_inc, eseq_inc;  // count one error of that kind

  logic            wr_valid, commit, rollback;
  logic            ans_valid_d, stat_req_d, err_d;
  logic            ans_nak_d;
  wire [15:0]    crc_next;
  wire [FreeW-1:0] free;
  wire [FreeW-1:0] count_unused;
  wire           full_unused;  // the room checks use free
  wire [7:0]     behind = expect_q - byte_data_i;  // in SSeq: how far SEQ is behind
  // behind <= Window without a comparator (Window = 2^WLog): no bit above WLog set, and not
  // bit WLog with a bit below it
  localparam integer WLog = $clog2(Window);
  wire           behind_in = ((behind >> (WLog + 1)) == 8'd0) &&
                             !(behind[WLog] && ((behind & (WindowW - 8'd1)) != 8'd0));

  board_crc16 u_crc (.crc_i(crc_q), .data_i(byte_data_i),
                     .crc_o(crc_next));

  board_fifo #(.Width(32), .Depth(BufWords), .Bytes(1'b1)) u_buf (
    .clk_i, .rst_ni,
    .wr_valid_i(wr_valid), .wr_data_i({24'h0, byte_data_i}), .wr_lane_i(bidx_q),
    .commit_i(commit), .rollback_i(rollback),
    .free_o(free), .full_o(full_unused), .count_o(count_unused),
    .rd_valid_o(cmd_valid_o), .rd_ready_i(cmd_ready_i), .rd_data_o(cmd_data_o)
  );

  assign expect_o    = expect_q;
  // An answer's SEQ is read in its pulse's cycle, when expect_q already counts the frame it
  // ACKs: an ACK (of a new frame or of a duplicate) names expect_q - 1, a NAK expect_q. One
  // carry chain subtracts the ACK bit (board_frame_tx registers the result): cheaper than a
  // register for expect_q - 1 (8 flip-flops with no logic of their own) and a multiplexer.
  assign ans_seq_o   = expect_q - {7'b0, !ans_nak_o};
  assign err_crc_o   = 16'(ecrc_q);
  assign err_trunc_o = 16'(etrunc_q);
  assign err_seq_o   = 16'(eseq_q);

  // The error counters saturate: the carry out of v + 1 (v all ones) holds them, so the
  // saturation costs no comparator
  wire [ErrW-1:0] ecrc_p1, etrunc_p1, eseq_p1;
  wire        ecrc_co, etrunc_co, eseq_co;
  assign {ecrc_co, ecrc_p1}     = {1'b0, ecrc_q} + 1'b1;
  assign {etrunc_co, etrunc_p1} = {1'b0, etrunc_q} + 1'b1;
  assign {eseq_co, eseq_p1}     = {1'b0, eseq_q} + 1'b1;
  assign ecrc_d   = (ecrc_inc && !ecrc_co) ? ecrc_p1 : ecrc_q;
  assign etrunc_d = (etrunc_inc && !etrunc_co) ? etrunc_p1 : etrunc_q;
  assign eseq_d   = (eseq_inc && !eseq_co) ? eseq_p1 : eseq_q;

  always_comb begin
    state_d    = state_q;
    stat_d     = stat_q;
    seq_ok_d   = seq_ok_q;
    seq_dup_d  = seq_dup_q;
    len_d      = len_q;
    bidx_d     = bidx_q;
    crc_d      = crc_q;
    crclo_d    = crclo_q;
    store_d    = store_q;
    dropped_d  = dropped_q;
    recover_d  = recover_q;
    expect_d   = expect_q;
    ecrc_inc   = 1'b0;
    etrunc_inc = 1'b0;
    eseq_inc   = 1'b0;
    tmo_d      = tmo_q;
    wr_valid   = 1'b0;
    commit     = 1'b0;
    rollback   = 1'b0;
    ans_valid_d = 1'b0;
    ans_nak_d  = 1'b0;
    stat_req_d = 1'b0;
    err_d      = 1'b0;

    if (byte_valid_i) begin
      tmo_d = '0;
      case (state_q)
        SHunt: if (byte_data_i == Sof) state_d = SType;
        SType: begin
          if (byte_data_i == TData || byte_data_i == TStat) begin
            stat_d  = (byte_data_i == TStat);
            crc_d   = crc_next;
            state_d = SSeq;
          end else begin
            // a bad TYPE; a 0x7e here may start the real frame
            ecrc_inc = 1'b1;
            err_d   = 1'b1;
            state_d = (byte_data_i == Sof) ? SType : SHunt;
          end
        end
        SSeq: begin
          seq_ok_d  = (behind == 8'd0);  // expect_q holds still until SCrc1
          seq_dup_d = (behind != 8'd0) && behind_in;
          crc_d   = crc_next;
          state_d = SLen0;
        end
        SLen0: begin
          len_d   = byte_data_i;
          crc_d   = crc_next;
          state_d = SLen1;
        end
        SLen1: begin
          crc_d  = crc_next;
          bidx_d = 2'd0;
          if (byte_data_i != 8'h00 || (stat_q && len_q != 8'h00)) begin
            ecrc_inc = 1'b1;   // LEN > 255, or a STAT with payload
            err_d   = 1'b1;
            state_d = (byte_data_i == Sof) ? SType : SHunt;
          end else begin
            store_d = !stat_q && seq_ok_q &&
                      ({{(FreeW-8){1'b0}}, len_q} <= free);
            state_d = (len_q == 8'h00) ? SCrc0 : SPay;
          end
        end
        SPay: begin
          crc_d  = crc_next;
          bidx_d = bidx_q + 1'b1;
          wr_valid = store_q;  // the byte goes to lane bidx_q of the word
          if (bidx_q == 2'd3) begin
            len_d    = len_q - 1'b1;
            if (len_q == 8'd1) state_d = SCrc0;
          end
        end
        SCrc0: begin
          crclo_d = (byte_data_i == crc_q[7:0]);
          state_d = SCrc1;
        end
        SCrc1: begin
          state_d = SHunt;
          if (!crclo_q || byte_data_i != crc_q[15:8]) begin
            rollback    = 1'b1;
            ecrc_inc    = 1'b1;
            err_d       = 1'b1;
            ans_valid_d = 1'b1;
            ans_nak_d   = 1'b1;
          end else if (stat_q) begin
            stat_req_d = 1'b1;
          end else if (seq_ok_q) begin
            if (store_q) begin
              commit      = 1'b1;
              expect_d    = expect_q + 1'b1;
              dropped_d   = 1'b0;
              recover_d   = 1'b0;
              ans_valid_d = 1'b1;        // ACK SEQ (= expect_q)
            end else begin
              dropped_d = 1'b1;      // no room: no answer until there is room
              recover_d = 1'b1;
            end
          end else if (seq_dup_q) begin
            ans_valid_d = 1'b1;      // duplicate of an accepted frame: ACK again, drop
          end else if (!dropped_q) begin
            // out of order: a frame before it was lost (or dropped by us: not an error)
            if (!recover_q) begin
              eseq_inc = 1'b1;
              err_d  = 1'b1;
            end
            ans_valid_d = 1'b1;
            ans_nak_d   = 1'b1;
          end
          // else: behind a frame we dropped for lack of room: silence until there is room
        end
        default: state_d = SHunt;
      endcase
    end else if (dropped_q && state_q == SHunt && free >= RoomW) begin
      // room again after a drop: ask for a resend from the dropped frame
      dropped_d   = 1'b0;
      ans_valid_d = 1'b1;
      ans_nak_d   = 1'b1;
    end else if (state_q != SHunt) begin
      if (tmo_q == TimeoutW) begin
        rollback = 1'b1;
        etrunc_inc = 1'b1;
        err_d    = 1'b1;
        state_d  = SHunt;
        tmo_d    = '0;
      end else begin
        tmo_d = tmo_q + 1'b1;
      end
    end
    // the CRC starts at 0xffff with TYPE (no reset: a synchronous set)
    if (state_d == SType) crc_d = 16'hffff;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q     <= SHunt;
      stat_q      <= 1'b0;
      seq_ok_q    <= 1'b0;
      seq_dup_q   <= 1'b0;
      len_q       <= 8'h00;
      bidx_q      <= 2'd0;
      crclo_q     <= 1'b0;
      store_q     <= 1'b0;
      dropped_q   <= 1'b0;
      recover_q   <= 1'b0;
      expect_q    <= 8'h00;
      tmo_q       <= '0;
      ans_valid_o <= 1'b0;
      ans_nak_o   <= 1'b0;
      stat_req_o  <= 1'b0;
      err_o       <= 1'b0;
    end else begin
      state_q     <= state_d;
      stat_q      <= stat_d;
      seq_ok_q    <= seq_ok_d;
      seq_dup_q   <= seq_dup_d;
      len_q       <= len_d;
      bidx_q      <= bidx_d;
      crclo_q     <= crclo_d;
      store_q     <= store_d;
      dropped_q   <= dropped_d;
      recover_q   <= recover_d;
      expect_q    <= expect_d;
      tmo_q       <= tmo_d;
      ans_valid_o <= ans_valid_d;
      ans_nak_o   <= ans_nak_d;
      stat_req_o  <= stat_req_d;
      err_o       <= err_d;
    end
  end
  always_ff @(posedge clk_i) crc_q <= crc_d;

  // the error counters (next values above: each is its +1 into a flip-flop with an enable)
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ecrc_q   <= '0;
      etrunc_q <= '0;
      eseq_q   <= '0;
    end else begin
      ecrc_q   <= ecrc_d;
      etrunc_q <= etrunc_d;
      eseq_q   <= eseq_d;
    end
  end
endmodule

`default_nettype wire
