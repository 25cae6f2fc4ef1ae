// mesh_hostport_lean: the host port of the board (mesh_top Lean): the commands, answers,
// status codes and error rules of mesh_hostport (docs/architecture.md section 6) in less
// than half its logic, for a link (the board's UART) far slower than the port.
//
// Same ports and handshakes as mesh_hostport (valid/ready on every link; inj_* and rsp_*
// registered; cfg_out_* is not: it is built from registers and cmd_data_i, and the slice in
// mesh_top registers it; a read beat's data field is the command word, not 0: the slice
// zeroes it; with HoldWrite, mesh_top Micro 2, a WRITE's word is taken from cmd_* only once
// its beat has left the slice, which then keeps no data). A host gets the same words for
// every command, except:
// - The cycle counter is 32 bits: COUNTERS' "cycles high" word reads 0. The error counter
//   is 8 bits and saturates at 255 (COUNTERS' last word and SYNC's n zero-extended; the
//   driver only tests it for 0, which a wrapping counter could miss).
// - One config read in flight: the read engine (READ, and COUNTERS' counter reads) issues a
//   read beat only when the previous word has come back, so a READ streams one word per
//   config-chain round trip instead of one per cycle. It still overlaps RUN, INJECT, NOP and
//   SYNC, and responses stay in command order.
// - No held header: a command that must wait for the read engine is not taken from cmd_*
//   until it can be decoded (mesh_hostport takes it and holds it), so cmd_ready_o depends
//   on the command word (the link's FIFO keeps it stable while valid).
// - Timing only: a RUN step word (bit 31) stays on cmd_* one more cycle while its SET_MAJOR
//   goes out; a command ends one cycle after its last word (counts are compared
//   registered); a SYNC timeout counts the error, then answers a cycle later.
// The COLLECT/SYNC timeout counts exactly as in mesh_hostport, against a deadline on the
// cycle counter (no separate 32-bit down counter). The COLLECT buffer is a plain RAM written
// at the running count and read out after the header (2 EBR, no FIFO pointers). Every
// target must be below 2^16 words; WRITE and READ check the address in the cycle after the
// address word (SWChk, SRChk), and the walker's address and counts are only as wide as the
// largest target needs (TW bits).
// Checked by tb_mesh_hostport_lean (the host-port bench on mesh_top Lean with the PE test
// double) and by the board benches (tb_board_lean runs the driver through the link).
`default_nettype none

module mesh_hostport_lean #(
  parameter int unsigned NumPes = 4,         // PEs on the config chain (Rows * Cols)
  parameter int unsigned AWords = 16384,     // PE SRAM A elements (A holds AWords/2 words)
  parameter int unsigned BWords = 8192,      // PE SRAM B words
  parameter int unsigned CollectDepth = 256, // COLLECT buffers up to this many words
  // 1: a WRITE's data word stays on cmd_* until its config beat has left mesh_top's slice
  // (cfg_out_ready_i high again), so the slice needs no copy of it (mesh_top Micro 2)
  parameter bit HoldWrite = 1'b0
) (
  input  wire         clk_i,
  input  wire         rst_ni,
  input  wire         cmd_valid_i,
  input  wire  [31:0] cmd_data_i,
  output logic        cmd_ready_o,
  output wire         rsp_valid_o,
  output wire  [31:0] rsp_data_o,
  input  wire         rsp_ready_i,
  output wire         inj_valid_o,
  output wire  [36:0] inj_data_o,
  input  wire         inj_ready_i,
  input  wire         ej_valid_i,
  input  wire  [36:0] ej_data_i,
  output logic        ej_ready_o,
  output wire         cfg_out_valid_o,
  output wire  [61:0] cfg_out_data_o,  // {kind[1:0], pe[7:0], target[3:0], addr[15:0], data[31:0]}
  input  wire         cfg_out_ready_i,
  input  wire         cfg_in_valid_i,
  input  wire  [61:0] cfg_in_data_i,
  output logic        cfg_in_ready_o,
  input  wire  [79:0] route0_i,        // route table of router (0, 0): unrouted colors
  input  wire         mesh_idle_i,     // routers, PEs and config chain idle
  input  wire         fabric_idle_i,   // routers and PEs idle (the chain may be busy)
  output logic        clear_o,         // CLEAR: clear router and PE counters
  output wire         stream_o         // a wavelet stream is in progress (measurement probe)
);
  localparam logic [3:0] OpNop = 4'h0, OpEcho = 4'h1, OpWrite = 4'h2, OpRead = 4'h3,
                         OpRun = 4'h4, OpInject = 4'h5, OpCollect = 4'h6, OpSync = 4'h7,
                         OpCounters = 4'h8, OpClear = 4'h9;
  // status codes (all below 8: the header's status byte is {5'b0, status})
  localparam logic [2:0] StOk = 3'd0, StBadOp = 3'd1, StBadAddr = 3'd2, StBadPe = 3'd3,
                         StTimeout = 3'd4, StBadArg = 3'd5;
  localparam logic [1:0] KindWrite = 2'd0, KindRead = 2'd1, KindRsp = 2'd2;
  localparam int unsigned CbAw = (CollectDepth > 1) ? $clog2(CollectDepth) : 1;
  // The walker's address and counts are TW bits: enough for the largest target's size
  // (addr + n <= size once the range is checked; a larger address or n is flagged when it is
  // taken and answered BAD_ADDR), so its adders and compares are not 16 bits wide
  localparam int unsigned MaxAB = (AWords / 2 > BWords) ? AWords / 2 : BWords;
  localparam int unsigned MaxSize = (MaxAB > 256) ? MaxAB : 256;  // IMEM: 256
  localparam int unsigned TW = ($clog2(MaxSize) + 1 > 16) ? 16 : $clog2(MaxSize) + 1;

  typedef enum logic [4:0] {
    SCmd, SEcho, SWAddr, SWChk, SWData, SRAddr, SRChk, SRun, SInj, SDrop, SErr, SCTmo,
    SCollect, SCHdr, SCDrain, SSTmo, SSync, SCntPre, SCntPost
  } state_e;

  // decoder: the command being executed
  state_e      st_q, st_d;
  logic [3:0]  op_q, op_d, color_q, color_d;
  logic [2:0]  status_q, status_d;
  logic        ctrl_q, ctrl_d, stepped_q, stepped_d, stream_q, stream_d;
  logic [15:0] major_q, major_d;
  logic [15:0] n_q, n_d, k_q, k_d;  // words to move, words moved (COLLECT drain: n = got)
  logic [31:0] dl_q, dl_d;          // COLLECT/SYNC: the cycle count at the timeout
  logic        hit_q, hit_d;        // the timeout has passed
  logic [31:0] cycles_q, cycles_d;
  logic [7:0]  err_q, err_d;       // host port errors since CLEAR, saturating at 255
  // Config access walker: the read engine (READ, COUNTERS) and WRITE (run only while the
  // engine is idle) share its fields, so every config beat is {re_pe, re_tgt,
  // re_addr + re_k, data}. re_hdr: the READ header is next; rd_out: a read is in flight;
  // re_cnt: COUNTERS (target 8 words 0-4, then target 9 words 0-5).
  logic        re_busy_q, re_busy_d, re_all_q, re_all_d, re_hdr_q, re_hdr_d;
  logic        rd_out_q, rd_out_d, re_cnt_q, re_cnt_d;
  logic        wpend_q, wpend_d;  // HoldWrite: a WRITE beat is out, its word still on cmd_*
  logic [7:0]  re_pe_q, re_pe_d;
  logic [3:0]  re_tgt_q, re_tgt_d;
  logic [TW-1:0] re_addr_q, re_addr_d, re_n_q, re_n_d, re_k_q, re_k_d;
  // output registers
  logic        rsp_v_q, rsp_v_d, inj_v_q, inj_v_d;
  logic [31:0] rsp_q, rsp_d;
  logic [36:0] inj_q, inj_d;
  logic        rsp_free, inj_free;

  assign rsp_free = !rsp_v_q || rsp_ready_i;
  assign inj_free = !inj_v_q || inj_ready_i;
  assign rsp_valid_o = rsp_v_q;
  assign rsp_data_o = rsp_q;
  assign inj_valid_o = inj_v_q;
  assign inj_data_o = inj_q;
  assign stream_o = stream_q;

  // COLLECT buffer: written at k while collecting, read at k while draining (registered
  // read of the next k, so cb_rdata_q is word k_q); no reset, so it maps to block RAM
  logic [31:0] cb_mem [CollectDepth];
  logic [31:0] cb_rdata_q;
  logic        cb_we;
  always_ff @(posedge clk_i) begin
    if (cb_we) cb_mem[k_q[CbAw-1:0]] <= ej_data_i[31:0];
  end
  always_ff @(posedge clk_i) cb_rdata_q <= cb_mem[k_d[CbAw-1:0]];

  // the header's fields and checks, the walker target's size (shared with mesh_hostport)
  wire [3:0]  c_op, c_tgt;
  wire [7:0]  c_pe;
  wire [15:0] c_n;
  wire        c_pe_ok, c_pe_all, c_unrouted, c_rd_bad, c_wr_bad, c_collect_ok;
  wire [TW:0] re_size;
  mesh_hostport_dec #(
    .NumPes(NumPes), .AWords(AWords), .BWords(BWords), .CollectDepth(CollectDepth),
    .SizeW(TW + 1)
  ) u_dec (
    .hdr_i       (cmd_data_i),
    .route0_i,
    .size_tgt_i  (re_tgt_q),
    .op_o        (c_op),
    .tgt_o       (c_tgt),
    .pe_o        (c_pe),
    .n_o         (c_n),
    .pe_ok_o     (c_pe_ok),
    .pe_all_o    (c_pe_all),
    .unrouted_o  (c_unrouted),
    .rd_bad_tgt_o(c_rd_bad),
    .wr_bad_tgt_o(c_wr_bad),
    .collect_ok_o(c_collect_ok),
    .size_o      (re_size)
  );
  // while the read engine is busy only RUN, INJECT, NOP and SYNC are decoded
  wire        c_nowait = (c_op == OpRun) || (c_op == OpInject) || (c_op == OpNop) ||
                         (c_op == OpSync);
  wire [TW-1:0] cfg_addr = re_addr_q + re_k_q;
  wire        cfg_rsp = cfg_in_valid_i && (cfg_in_data_i[61:60] == KindRsp);
  // address word + n beyond the walker's target, checked in the cycle after the address
  // word was taken (SWChk, SRChk), from registers (timing): every target is at most 2^(TW-1)
  // words, so an address or n >= 2^TW is out of range, and the rest adds in TW + 1 bits
  logic       addr_hi_q, n_hi_q;  // the address, n at least 2^TW
  wire [TW:0] range_end = {1'b0, re_addr_q} + {1'b0, re_n_q};
  wire        range_bad = addr_hi_q || n_hi_q || (range_end > re_size);
  wire        k_done = (k_q == n_q);
  wire        re_done = (re_k_q == re_n_q);
  wire        tmo_hit = hit_q || (cycles_q == dl_q);
  logic [7:0] err_inc;
  logic       err_sat;  // the carry out of err_q + 1: err_q is 255 and stays there
  assign {err_sat, err_inc} = {1'b0, err_q} + 9'd1;
  // a RUN word with bit 31 set: its SET_MAJOR major+1 goes first (the word stays)
  wire        c_step = (op_q == OpRun) && cmd_data_i[31] && !stepped_q;

  logic unused_bits;  // payload only: the OUT color and the ctrl bit are not returned
  assign unused_bits = ^{ej_data_i[36:32], cfg_in_data_i[59:32]};

  // The state machine (first block) raises strobes; each register's next value (second
  // block) is then a small multiplexer of few sources, which is what keeps this port small:
  // written as defaults overridden per state, every 16- and 32-bit register became a long
  // priority chain of multiplexers.
  // Response word: the OR of the selected sources, a data word (command word, config
  // response, COLLECT buffer, cycle counter) or {hi, lo}: hi = {4'hA, op, status} for a
  // header (r_hdr) or 0, lo = the selected n (k, errors, READ length, 14, the command's n).
  logic        rsp_new, r_cmd_hi, r_cmd_lo, r_cfg, r_cb, r_cyc, r_hdr, r_k, r_err, r_ren, r_14;
  logic [3:0]  h_op;
  logic [2:0]  h_st;
  logic        dec, k_inc, n_ld_k, major_inc, timer_ld, err_clr, err_up;
  logic        re_ld, re_ld_addr, re_ld_cnt, re_inc, re_next, re_switch;
  logic        inj_new, inj_ctl, cfg_want, cfg_write;

  always_comb begin
    st_d = st_q; op_d = op_q; color_d = color_q; status_d = status_q; ctrl_d = ctrl_q;
    stepped_d = stepped_q; stream_d = stream_q;
    re_busy_d = re_busy_q; re_all_d = re_all_q; re_hdr_d = re_hdr_q; rd_out_d = rd_out_q;
    re_cnt_d = re_cnt_q; wpend_d = wpend_q;
    dec = 1'b0; k_inc = 1'b0; n_ld_k = 1'b0; major_inc = 1'b0; timer_ld = 1'b0;
    err_clr = 1'b0; err_up = 1'b0;
    re_ld = 1'b0; re_ld_addr = 1'b0; re_ld_cnt = 1'b0; re_inc = 1'b0; re_next = 1'b0;
    re_switch = 1'b0;
    inj_new = 1'b0; inj_ctl = 1'b0; cfg_want = 1'b0; cfg_write = 1'b0;
    rsp_new = 1'b0; r_cmd_hi = 1'b0; r_cmd_lo = 1'b0; r_cfg = 1'b0; r_cb = 1'b0;
    r_cyc = 1'b0; r_hdr = 1'b0; r_k = 1'b0; r_err = 1'b0; r_ren = 1'b0; r_14 = 1'b0;
    h_op = op_q; h_st = status_q;
    cmd_ready_o = 1'b0;
    ej_ready_o = 1'b0;
    cb_we = 1'b0;
    cfg_in_ready_o = !cfg_rsp;  // returning writes are dropped; responses wait for a state
    clear_o = 1'b0;

    case (st_q)
      SCmd: begin
        cmd_ready_o = re_busy_q ? c_nowait : rsp_free;
        if (cmd_valid_i && cmd_ready_o) begin
          // op, color, ctrl, major, n (RUN: the pe field), k = 0; the walker's pe, target
          // and n when it is idle (WRITE, READ and COUNTERS are decoded only then)
          dec = 1'b1; re_ld = !re_busy_q;
          if (!re_busy_q) re_all_d = c_pe_all;
          op_d = c_op; color_d = c_tgt; ctrl_d = cmd_data_i[23]; status_d = StOk;
          stepped_d = 1'b0;
          case (c_op)
            OpNop: ;
            OpEcho: begin
              rsp_new = 1'b1; r_hdr = 1'b1; r_cmd_lo = 1'b1; h_op = OpEcho; h_st = StOk;
              st_d = SEcho;
            end
            OpWrite: begin
              st_d = SWAddr;
              if (c_wr_bad) status_d = StBadArg;
              else if (!c_pe_ok && !c_pe_all) status_d = StBadPe;
            end
            OpRead: begin
              st_d = SRAddr;
              if (c_rd_bad) status_d = StBadArg;
              else if (!c_pe_ok && !c_pe_all) status_d = StBadPe;
            end
            OpRun: begin
              if (c_pe == 8'd0) begin status_d = StBadArg; st_d = SErr; end
              else if (c_unrouted) begin status_d = StBadArg; st_d = SDrop; end
              else begin st_d = SRun; stream_d = 1'b1; end
            end
            OpInject: begin
              if (c_unrouted) begin status_d = StBadArg; st_d = SDrop; end
              else begin st_d = SInj; if (c_n != 16'd0) stream_d = 1'b1; end
            end
            OpCollect: begin
              st_d = SCTmo;
              if (!c_collect_ok) status_d = StBadArg;
            end
            OpSync: st_d = SSTmo;
            OpCounters: begin
              if (!c_pe_ok) begin status_d = StBadPe; st_d = SErr; end
              else st_d = SCntPre;
            end
            OpClear: begin clear_o = 1'b1; err_clr = 1'b1; end  // and the cycle counter
            default: begin status_d = StBadOp; st_d = SErr; end
          endcase
        end
      end

      SEcho: begin
        cmd_ready_o = rsp_free && !k_done;
        if (k_done) st_d = SCmd;
        else if (cmd_valid_i && rsp_free) begin
          rsp_new = 1'b1; r_cmd_hi = 1'b1; r_cmd_lo = 1'b1;
          k_inc = 1'b1;
        end
      end

      SWAddr: begin
        cmd_ready_o = 1'b1;
        if (cmd_valid_i) begin
          re_ld_addr = 1'b1;
          st_d = SWChk;
        end
      end

      SWChk: begin
        if (status_q == StOk && range_bad) status_d = StBadAddr;
        st_d = (status_d != StOk) ? SDrop : SWData;
      end

      SWData: begin
        if (!HoldWrite) begin
          cmd_ready_o = cfg_out_ready_i && !re_done;
          if (re_done) st_d = SCmd;
          else if (cmd_valid_i) begin  // the word goes out as it is taken
            cfg_want = 1'b1; cfg_write = 1'b1;
            re_inc = cfg_out_ready_i;
          end
        end else if (wpend_q) begin
          // the word is taken once its beat has left the slice (the slice is empty again: a
          // registered signal, so no path from the chain's ready into cmd_ready_o)
          cmd_ready_o = cfg_out_ready_i;
          if (cfg_out_ready_i) wpend_d = 1'b0;
        end else if (re_done) st_d = SCmd;
        else if (cmd_valid_i) begin  // the beat goes out, the word stays on cmd_*
          cfg_want = 1'b1; cfg_write = 1'b1;
          re_inc = cfg_out_ready_i;
          wpend_d = cfg_out_ready_i;
        end
      end

      SRAddr: begin  // the READ goes to the read engine (idle: READ waits for it)
        cmd_ready_o = 1'b1;
        if (cmd_valid_i) begin
          re_ld_addr = 1'b1;
          st_d = SRChk;
        end
      end

      SRChk: begin
        if (status_q == StOk && range_bad) status_d = StBadAddr;
        if (status_d != StOk) st_d = SErr;
        else begin
          re_busy_d = 1'b1; re_hdr_d = 1'b1; re_next = re_all_q;
          st_d = SCmd;
        end
      end

      SRun: begin  // the SET_MAJOR control wavelet, then the data words
        if (inj_free) begin
          inj_new = 1'b1; inj_ctl = 1'b1;
          st_d = SInj;
          ctrl_d = 1'b0;
        end
      end

      SInj: begin
        cmd_ready_o = inj_free && !k_done && !c_step;
        if (k_done) st_d = SCmd;
        else if (cmd_valid_i && inj_free) begin
          if (c_step) begin  // SET_MAJOR major+1 first (SRun); the word is taken then
            major_inc = 1'b1;
            stepped_d = 1'b1;
            st_d = SRun;
          end else begin
            inj_new = 1'b1;
            k_inc = 1'b1;
            stepped_d = 1'b0;
          end
        end
      end

      SDrop: begin  // consume n_q words of a bad command, then answer
        cmd_ready_o = !k_done;
        if (k_done) st_d = SErr;
        else if (cmd_valid_i) k_inc = 1'b1;
      end

      SErr: begin  // {status, n = 0}; waits for a streaming READ
        if (rsp_free && !re_busy_q) begin
          rsp_new = 1'b1; r_hdr = 1'b1;
          err_up = 1'b1;
          st_d = SCmd;
        end
      end

      SCTmo: begin
        cmd_ready_o = 1'b1;
        if (cmd_valid_i) begin
          timer_ld = 1'b1;
          st_d = (status_q != StOk) ? SErr : SCollect;
        end
      end

      SCollect: begin
        if (fabric_idle_i && !inj_v_q) stream_d = 1'b0;
        ej_ready_o = !k_done;
        cb_we = ej_valid_i && ej_ready_o;
        k_inc = cb_we;
        if (k_done) st_d = SCHdr;
        else if (tmo_hit && !cb_we) begin status_d = StTimeout; st_d = SCHdr; end
      end

      SCHdr: begin  // {status, k}, then the k words: k becomes the read index, n the count
        if (rsp_free) begin
          rsp_new = 1'b1; r_hdr = 1'b1; r_k = 1'b1;
          err_up = (status_q != StOk);
          n_ld_k = 1'b1;
          st_d = SCDrain;
        end
      end

      SCDrain: begin
        if (k_done) st_d = SCmd;
        else if (rsp_free) begin
          rsp_new = 1'b1; r_cb = 1'b1;
          k_inc = 1'b1;
        end
      end

      SSTmo: begin
        cmd_ready_o = 1'b1;
        if (cmd_valid_i) begin timer_ld = 1'b1; st_d = SSync; end
      end

      SSync: begin  // {OK, errors} when idle, else at the timeout {TIMEOUT, errors + 1}
        if (fabric_idle_i && !inj_v_q) stream_d = 1'b0;
        if (rsp_free && !re_busy_q) begin
          // the timeout counts itself first, then answers (status TIMEOUT) a cycle later
          if (status_q != StOk || (mesh_idle_i && !inj_v_q)) begin
            rsp_new = 1'b1; r_hdr = 1'b1; r_err = 1'b1;
            st_d = SCmd;
          end else if (tmo_hit) begin
            status_d = StTimeout;
            err_up = 1'b1;
          end
        end
      end

      SCntPre: begin  // header, cycles low, cycles high; then the engine reads 11 counters
        if (rsp_free) begin
          rsp_new = 1'b1;
          case (k_q[1:0])
            2'd0: begin r_hdr = 1'b1; r_14 = 1'b1; end
            2'd1: r_cyc = 1'b1;
            default: ;  // cycles high: 0
          endcase
          k_inc = 1'b1;
          if (k_q[1]) begin
            re_busy_d = 1'b1; re_cnt_d = 1'b1; re_ld_cnt = 1'b1;
            st_d = SCntPost;
          end
        end
      end

      SCntPost: begin  // host port errors, after the engine's counter words
        if (rsp_free && !re_busy_q) begin
          rsp_new = 1'b1; r_err = 1'b1;
          st_d = SCmd;
        end
      end

      default: ;
    endcase

    // read engine (owns rsp_* while busy: the decoder answers nothing then)
    if (re_busy_q) begin
      if (re_hdr_q) begin
        if (rsp_free) begin
          rsp_new = 1'b1; r_hdr = 1'b1; r_ren = 1'b1; h_op = OpRead; h_st = StOk;
          re_hdr_d = 1'b0;
        end
      end else if (rd_out_q) begin
        if (cfg_rsp) begin
          cfg_in_ready_o = rsp_free;
          if (rsp_free) begin
            rsp_new = 1'b1; r_cfg = 1'b1;
            rd_out_d = 1'b0;
            re_inc = 1'b1;
            // COUNTERS: after PE counter 4, router counter 0 (address re_addr + 5)
            re_switch = re_cnt_q && (re_k_q[2:0] == 3'd4);
          end
        end
      end else if (!re_done) begin
        cfg_want = 1'b1; rd_out_d = cfg_out_ready_i;
      end else if (re_all_q && 32'(re_pe_q) != NumPes - 1) begin  // the next PE
        re_next = 1'b1; re_hdr_d = 1'b1;
      end else begin
        re_busy_d = 1'b0; re_cnt_d = 1'b0;
      end
    end
  end

  // cfg_out_* is not registered here: it is built from registers and the command word
  // (stable while valid) and the slice in mesh_top registers it (saves 62 flip-flops).
  // A read beat carries the command word as its data: the slice zeroes it (its flip-flops'
  // synchronous reset), and the chain stage ORs the word read into it (mesh_cfgchain_lean).
  assign cfg_out_valid_o = cfg_want;
  assign cfg_out_data_o = {cfg_write ? KindWrite : KindRead, re_pe_q, re_tgt_q, 16'(cfg_addr),
                           cmd_data_i};

  // datapath
  always_comb begin
    k_d = k_q;
    if (dec) k_d = '0;
    else if (n_ld_k) k_d = '0;
    else if (k_inc) k_d = k_q + 16'd1;
    n_d = n_q;
    if (dec) n_d = (c_op == OpRun) ? {8'b0, c_pe} : c_n;
    else if (n_ld_k) n_d = k_q;
    major_d = major_q;
    if (dec) major_d = c_n;
    else if (major_inc) major_d = major_q + 16'd1;
    cycles_d = clear_o ? 32'd0 : cycles_q + 32'd1;
    dl_d = dl_q; hit_d = tmo_hit;
    // deadline: cycles + timeout + 1, written as a subtraction (one carry chain) so that
    // yosys does not share cycles_d's adder (a second load keeps those flip-flops out of the
    // adder's logic cells)
    if (timer_ld) begin dl_d = cycles_q - ~cmd_data_i; hit_d = 1'b0; end
    err_d = err_q;
    if (err_clr) err_d = '0;
    else if (err_up && !err_sat) err_d = err_inc;
    // the walker (a READ of pe 0xff starts at PE 0: 0xff + 1)
    re_pe_d = re_pe_q;
    if (re_ld) re_pe_d = c_pe;
    else if (re_next) re_pe_d = re_pe_q + 8'd1;
    re_tgt_d = re_tgt_q;
    if (re_ld) re_tgt_d = c_tgt;
    else if (re_ld_cnt) re_tgt_d = 4'd8;
    else if (re_switch) re_tgt_d = 4'd9;
    re_n_d = re_n_q;
    if (re_ld) re_n_d = c_n[TW-1:0];
    else if (re_ld_cnt) re_n_d = TW'(11);
    re_addr_d = re_addr_q;
    if (re_ld_addr) re_addr_d = cmd_data_i[TW-1:0];
    else if (re_ld_cnt) re_addr_d = '0;
    else if (re_switch) re_addr_d = -TW'(5);  // target 9 word k - 5 (modulo 2^TW)
    re_k_d = re_k_q;
    if (re_ld_addr || re_ld_cnt || re_next) re_k_d = '0;
    else if (re_inc) re_k_d = re_k_q + 1'b1;

    rsp_v_d = rsp_new || (rsp_v_q && !rsp_ready_i);
    rsp_d = rsp_q;
    // (r_k: a COLLECT header, k <= CollectDepth, so only k's low CbAw + 1 bits can be set)
    if (rsp_new)
      rsp_d = ({{16{r_cmd_hi}}, {16{r_cmd_lo}}} & cmd_data_i)
            | ({32{r_cfg}} & cfg_in_data_i[31:0])
            | ({32{r_cb}} & cb_rdata_q)
            | ({32{r_cyc}} & cycles_q)
            | {r_hdr ? {4'hA, h_op, 5'b0, h_st} : 16'b0,
               ({16{r_k}} & 16'(k_q[CbAw:0])) | ({16{r_err}} & 16'(err_q))
               | ({16{r_ren}} & 16'(re_n_q)) | (r_14 ? 16'd14 : 16'd0)};
    inj_v_d = inj_new || (inj_v_q && !inj_ready_i);
    inj_d = inj_q;
    if (inj_new)
      inj_d = inj_ctl ? {1'b1, color_q, 16'h0000, major_q}
                      : {ctrl_q, color_q, cmd_data_i[31] && (op_q != OpRun), cmd_data_i[30:0]};
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_q <= SCmd;
      op_q <= '0; color_q <= '0; status_q <= '0; ctrl_q <= '0; stepped_q <= '0;
      stream_q <= 1'b0; major_q <= '0; n_q <= '0; k_q <= '0; dl_q <= '0; hit_q <= 1'b0;
      cycles_q <= '0; err_q <= '0;
      re_busy_q <= 1'b0; re_all_q <= 1'b0; re_hdr_q <= 1'b0; rd_out_q <= 1'b0;
      re_cnt_q <= 1'b0; wpend_q <= 1'b0; re_pe_q <= '0; re_tgt_q <= '0; re_addr_q <= '0;
      re_n_q <= '0; re_k_q <= '0;
      rsp_v_q <= 1'b0; inj_v_q <= 1'b0;
    end else begin
      st_q <= st_d;
      op_q <= op_d; color_q <= color_d; status_q <= status_d; ctrl_q <= ctrl_d;
      stepped_q <= stepped_d; stream_q <= stream_d; major_q <= major_d; n_q <= n_d;
      k_q <= k_d; dl_q <= dl_d; hit_q <= hit_d; cycles_q <= cycles_d; err_q <= err_d;
      re_busy_q <= re_busy_d; re_all_q <= re_all_d; re_hdr_q <= re_hdr_d; rd_out_q <= rd_out_d;
      re_cnt_q <= re_cnt_d; wpend_q <= wpend_d; re_pe_q <= re_pe_d; re_tgt_q <= re_tgt_d;
      re_addr_q <= re_addr_d; re_n_q <= re_n_d; re_k_q <= re_k_d;
      rsp_v_q <= rsp_v_d; inj_v_q <= inj_v_d;
    end
  end

  // data registers without reset (their valid bits have one): yosys may then use the
  // flip-flops' synchronous reset and enable
  always_ff @(posedge clk_i) begin
    rsp_q <= rsp_d;
    inj_q <= inj_d;
  end

  always_ff @(posedge clk_i) begin
    if (re_ld_addr) addr_hi_q <= ((cmd_data_i >> TW) != 32'b0);
    if (re_ld) n_hi_q <= ((c_n >> TW) != 16'b0);
  end

`ifdef FORMAL
  // The walker has one user at a time, and a response word is only written when free.
  always_comb if (rst_ni) begin
    if (re_busy_q) assert (st_q != SWData && st_q != SWAddr && st_q != SRAddr
                           && st_q != SWChk && st_q != SRChk);
    if (rd_out_q) assert (re_busy_q);
    if (cfg_want && cfg_write) assert (!re_busy_q);
    if (wpend_q) assert (HoldWrite && st_q == SWData);
    if (rsp_new) assert (rsp_free);
    if (cb_we) assert (32'(k_q) < CollectDepth);
  end
`include "mesh_hostport_lean_formal.vh"
`endif
endmodule

`default_nettype wire
