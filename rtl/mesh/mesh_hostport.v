// mesh_hostport: the host's way into the mesh (docs/architecture.md section 6).
//
// Reads 32-bit command words (cmd_*), writes 32-bit response words (rsp_*), injects
// wavelets into the W port of router (0, 0) (inj_*), takes wavelets leaving it (ej_*, the
// OUT color) and drives the config chain (cfg_out_* -> tiles in PE order -> cfg_in_*).
// All links are valid/ready; inj_*, cfg_out_* and rsp_* are registered.
// Errors never hang the port: each bad command answers a header with its status (data words
// of a bad WRITE/RUN/INJECT are consumed and dropped) and increments the error counter;
// COLLECT and SYNC end at their timeout.
// One command at a time, except READ: a READ is handed to the read engine (below), which
// streams its words from the config chain to rsp_* while the decoder goes on with RUN,
// INJECT, NOP and SYNC commands (none of them answers before the READ is done: a SYNC
// answers only then, errors wait). Any other command waits until the READ is done. So the
// host can read one output tile from a B bank while the next one computes in the other.
// The board (mesh_top Lean) uses mesh_hostport_lean instead: same protocol, less logic.
`default_nettype none

module mesh_hostport #(
  parameter int unsigned NumPes = 4,        // PEs on the config chain (Rows * Cols)
  parameter int unsigned AWords = 16384,    // PE SRAM A elements (A holds AWords/2 words)
  parameter int unsigned BWords = 8192,     // PE SRAM B words
  parameter int unsigned CollectDepth = 256  // COLLECT buffers up to this many words
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
  // opcodes and status codes (architecture.md section 6)
  localparam logic [3:0] OpNop = 4'h0, OpEcho = 4'h1, OpWrite = 4'h2, OpRead = 4'h3,
                         OpRun = 4'h4, OpInject = 4'h5, OpCollect = 4'h6, OpSync = 4'h7,
                         OpCounters = 4'h8, OpClear = 4'h9;
  localparam logic [7:0] StOk = 8'd0, StBadOp = 8'd1, StBadAddr = 8'd2, StBadPe = 8'd3,
                         StTimeout = 8'd4, StBadArg = 8'd5;
  localparam logic [1:0] KindWrite = 2'd0, KindRead = 2'd1, KindRsp = 2'd2;

  typedef enum logic [4:0] {
    SCmd, SHold, SEcho, SWAddr, SWData, SRAddr, SRun, SInj, SStep, SDrop, SErr,
    SCTmo, SCollect, SCHdr, SCDrain, SSTmo, SSync, SCntPre, SCntRd, SCntPost
  } state_e;

  state_e      st_q, st_d;
  logic [3:0]  op_q, op_d, target_q, target_d, color_q, color_d;
  logic [7:0]  pe_q, pe_d, status_q, status_d;
  logic        ctrl_q, ctrl_d;
  logic [15:0] major_q, major_d;
  logic [16:0] n_q, n_d;          // words to move (WRITE/READ/RUN/INJECT/ECHO/DROP)
  logic [16:0] k_q, k_d;          // words moved / responses received
  logic [16:0] iss_q, iss_d;      // read beats issued
  logic [31:0] addr_q, addr_d, tmo_q, tmo_d, timer_q, timer_d, err_q, err_d;
  logic [63:0] cycles_q, cycles_d;
  logic [31:0] hold_q, hold_d;    // a header taken while the read engine is busy (SHold)
  logic [30:0] stepw_q, stepw_d;  // a RUN nonzero waiting behind its SET_MAJOR (SStep)

  // Read engine: one READ (pe 0xff: every PE in turn, each answering as a READ of its own):
  // per PE a header, then n words, issued one beat per cycle into the config chain and
  // forwarded in order as they return. Owns cfg_out_* and the responses on cfg_in_* while
  // busy (nothing else that uses them is decoded then).
  logic        re_busy_q, re_busy_d, re_all_q, re_all_d, re_hdr_q, re_hdr_d;
  logic [7:0]  re_pe_q, re_pe_d;
  logic [3:0]  re_tgt_q, re_tgt_d;
  logic [15:0] re_addr_q, re_addr_d;
  logic [16:0] re_n_q, re_n_d, re_iss_q, re_iss_d, re_k_q, re_k_d;
  logic        rsp_v_q, rsp_v_d, inj_v_q, inj_v_d, cfg_v_q, cfg_v_d;
  logic [31:0] rsp_q, rsp_d;
  logic [36:0] inj_q, inj_d;
  logic [61:0] cfg_q, cfg_d;
  logic        rsp_free, inj_free, cfg_free;
  // Streaming phase (for utilization measurements, section 6): set when a RUN or INJECT
  // starts injecting, cleared when a SYNC or COLLECT sees the mesh idle with nothing left
  // to inject. A SYNC's further wait (for the config chain) is not part of it; a host that
  // starves the mesh between its RUNs is (the phase stays open until the SYNC).
  logic        stream_q, stream_d;

  // collect buffer
  logic        cb_in_valid, cb_in_ready, cb_out_valid, cb_out_ready, cb_empty;
  logic [31:0] cb_out_data;
  mesh_fifo #(.Width(32), .Depth(CollectDepth), .Bypass(1'b0)) u_collect (
    .clk_i, .rst_ni,
    .in_valid_i (cb_in_valid),
    .in_data_i  (ej_data_i[31:0]),
    .in_ready_o (cb_in_ready),
    .out_valid_o(cb_out_valid),
    .out_data_o (cb_out_data),
    .out_ready_i(cb_out_ready),
    .empty_o    (cb_empty)
  );

  assign rsp_free = !rsp_v_q || rsp_ready_i;
  assign inj_free = !inj_v_q || inj_ready_i;
  assign cfg_free = !cfg_v_q || cfg_out_ready_i;
  assign rsp_valid_o = rsp_v_q;
  assign rsp_data_o = rsp_q;
  assign inj_valid_o = inj_v_q;
  assign inj_data_o = inj_q;
  assign cfg_out_valid_o = cfg_v_q;
  assign cfg_out_data_o = cfg_q;
  assign stream_o = stream_q;

  function automatic logic [31:0] hdr(input logic [3:0] op, input logic [7:0] st,
                                      input logic [15:0] n);
    hdr = {4'hA, op, st, n};
  endfunction

  // the header being decoded: the command word (SCmd) or the one held (SHold); its fields
  // and checks, and the size of the target being accessed (shared with mesh_hostport_lean)
  wire [31:0] c_hdr = (st_q == SHold) ? hold_q : cmd_data_i;
  wire [3:0]  c_op, c_tgt;
  wire [7:0]  c_pe;
  wire [15:0] c_n;
  wire        c_pe_ok, c_pe_all, c_unrouted, c_rd_bad, c_wr_bad;
  wire        unused_collect_ok;  // COLLECT's length is checked where it is decoded
  wire [31:0] t_size;
  mesh_hostport_dec #(
    .NumPes(NumPes), .AWords(AWords), .BWords(BWords), .CollectDepth(CollectDepth)
  ) u_dec (
    .hdr_i       (c_hdr),
    .route0_i,
    .size_tgt_i  (target_q),
    .op_o        (c_op),
    .tgt_o       (c_tgt),
    .pe_o        (c_pe),
    .n_o         (c_n),
    .pe_ok_o     (c_pe_ok),
    .pe_all_o    (c_pe_all),
    .unrouted_o  (c_unrouted),
    .rd_bad_tgt_o(c_rd_bad),
    .wr_bad_tgt_o(c_wr_bad),
    .collect_ok_o(unused_collect_ok),
    .size_o      (t_size)
  );
  // while the read engine is busy only commands that neither answer (on success) nor use
  // the config chain are decoded: RUN, INJECT, NOP, SYNC (whose answer waits)
  wire        c_nowait = (c_op == OpRun) || (c_op == OpInject) || (c_op == OpNop) ||
                         (c_op == OpSync);
  wire        cfg_rsp = cfg_in_valid_i && (cfg_in_data_i[61:60] == KindRsp);
  wire [31:0] range_end = cmd_data_i + {15'b0, n_q};  // address word + n

  logic unused_bits;  // payload only: the OUT color and the ctrl bit are not returned
  assign unused_bits = ^{ej_data_i[36:32], cfg_in_data_i[59:32]};

  always_comb begin
    st_d = st_q; op_d = op_q; target_d = target_q; color_d = color_q; pe_d = pe_q;
    status_d = status_q; ctrl_d = ctrl_q; major_d = major_q; n_d = n_q; k_d = k_q;
    iss_d = iss_q; addr_d = addr_q; tmo_d = tmo_q; timer_d = timer_q; err_d = err_q;
    cycles_d = cycles_q + 64'd1;
    stream_d = stream_q;
    hold_d = hold_q; stepw_d = stepw_q;
    re_busy_d = re_busy_q; re_all_d = re_all_q; re_hdr_d = re_hdr_q; re_pe_d = re_pe_q;
    re_tgt_d = re_tgt_q; re_addr_d = re_addr_q; re_n_d = re_n_q; re_iss_d = re_iss_q;
    re_k_d = re_k_q;
    rsp_v_d = rsp_v_q && !rsp_ready_i; rsp_d = rsp_q;
    inj_v_d = inj_v_q && !inj_ready_i; inj_d = inj_q;
    cfg_v_d = cfg_v_q && !cfg_out_ready_i; cfg_d = cfg_q;
    cmd_ready_o = 1'b0;
    ej_ready_o = 1'b0;
    cb_in_valid = 1'b0;
    cb_out_ready = 1'b0;
    cfg_in_ready_o = !cfg_rsp;  // returning writes are dropped; responses wait for a state
    clear_o = 1'b0;

    case (st_q)
      SCmd, SHold: begin
        // SCmd takes a header when it can be decoded now, or (read engine busy) any header,
        // holding one that must wait for the engine in SHold
        cmd_ready_o = (st_q == SCmd) && (re_busy_q || rsp_free);
        if (cmd_valid_i && cmd_ready_o && re_busy_q && !c_nowait) begin
          hold_d = cmd_data_i;
          st_d = SHold;
        end else if ((st_q == SHold || cmd_valid_i) && (re_busy_q ? c_nowait : rsp_free)) begin
          st_d = SCmd;
          op_d = c_op; target_d = c_tgt; color_d = c_tgt; pe_d = c_pe; ctrl_d = c_hdr[23];
          major_d = c_n; n_d = {1'b0, c_n}; k_d = '0; iss_d = '0; status_d = StOk;
          case (c_op)
            OpNop: ;
            OpEcho: begin
              rsp_v_d = 1'b1; rsp_d = hdr(OpEcho, StOk, c_n);
              if (c_n != 16'd0) st_d = SEcho;
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
              n_d = {9'b0, c_pe};
              if (c_pe == 8'd0) begin status_d = StBadArg; st_d = SErr; end
              else if (c_unrouted) begin status_d = StBadArg; st_d = SDrop; end
              else begin st_d = SRun; stream_d = 1'b1; end
            end
            OpInject: begin
              if (c_unrouted) begin status_d = StBadArg; st_d = SDrop; end
              else if (c_n != 16'd0) begin st_d = SInj; stream_d = 1'b1; end
            end
            OpCollect: begin
              st_d = SCTmo;
              if (32'(c_n) > CollectDepth) status_d = StBadArg;
            end
            OpSync: st_d = SSTmo;
            OpCounters: begin
              if (!c_pe_ok) begin status_d = StBadPe; st_d = SErr; end
              else st_d = SCntPre;
            end
            OpClear: begin
              clear_o = 1'b1;
              err_d = '0;
              cycles_d = '0;
            end
            default: begin status_d = StBadOp; st_d = SErr; end
          endcase
        end
      end

      SEcho: begin
        cmd_ready_o = rsp_free;
        if (cmd_valid_i && rsp_free) begin
          rsp_v_d = 1'b1; rsp_d = cmd_data_i;
          k_d = k_q + 1'b1;
          if (k_d == n_q) st_d = SCmd;
        end
      end

      SWAddr: begin
        cmd_ready_o = 1'b1;
        if (cmd_valid_i) begin
          addr_d = cmd_data_i;
          if (status_q == StOk && range_end > t_size) status_d = StBadAddr;
          st_d = (status_d != StOk) ? SDrop : (n_q == '0 ? SCmd : SWData);
        end
      end

      SWData: begin
        cmd_ready_o = cfg_free;
        if (cmd_valid_i && cfg_free) begin
          cfg_v_d = 1'b1;
          cfg_d = {KindWrite, pe_q, target_q, addr_q[15:0] + k_q[15:0], cmd_data_i};
          k_d = k_q + 1'b1;
          if (k_d == n_q) st_d = SCmd;
        end
      end

      SRAddr: begin  // the READ goes to the read engine (idle: READ waits for it)
        cmd_ready_o = 1'b1;
        if (cmd_valid_i) begin
          addr_d = cmd_data_i;
          if (status_q == StOk && range_end > t_size) status_d = StBadAddr;
          if (status_d != StOk) st_d = SErr;
          else begin
            re_busy_d = 1'b1; re_all_d = (pe_q == 8'hff); re_pe_d = (pe_q == 8'hff) ? 8'd0 : pe_q;
            re_tgt_d = target_q; re_addr_d = cmd_data_i[15:0]; re_n_d = n_q;
            re_iss_d = '0; re_k_d = '0; re_hdr_d = 1'b1;
            st_d = SCmd;
          end
        end
      end

      SCntRd: begin
        // issue the counter reads, forward responses in order
        if (iss_q != n_q && cfg_free) begin
          cfg_v_d = 1'b1;
          if (iss_q < 17'd5) cfg_d = {KindRead, pe_q, 4'd8, iss_q[15:0], 32'b0};
          else cfg_d = {KindRead, pe_q, 4'd9, iss_q[15:0] - 16'd5, 32'b0};
          iss_d = iss_q + 1'b1;
        end
        if (cfg_rsp) begin
          cfg_in_ready_o = rsp_free;
          if (rsp_free) begin
            rsp_v_d = 1'b1; rsp_d = cfg_in_data_i[31:0];
            k_d = k_q + 1'b1;
            if (k_d == n_q) begin
              k_d = '0;
              st_d = SCntPost;
            end
          end
        end
      end

      SRun: begin  // the SET_MAJOR control wavelet, then the n data words
        if (inj_free) begin
          inj_v_d = 1'b1; inj_d = {1'b1, color_q, 4'h0, 12'h000, major_q};
          st_d = SInj;
          ctrl_d = 1'b0;
        end
      end

      SInj: begin
        cmd_ready_o = inj_free;
        if (cmd_valid_i && inj_free) begin
          k_d = k_q + 1'b1;
          inj_v_d = 1'b1;
          if (op_q == OpRun && cmd_data_i[31]) begin
            // a step: SET_MAJOR major+1 now, the nonzero (bit 31 cleared) next
            inj_d = {1'b1, color_q, 4'h0, 12'h000, major_q + 16'd1};
            major_d = major_q + 16'd1;
            stepw_d = cmd_data_i[30:0];
            st_d = SStep;
          end else begin
            inj_d = {ctrl_q, color_q, cmd_data_i};
            if (k_d == n_q) st_d = SCmd;
          end
        end
      end

      SStep: begin
        if (inj_free) begin
          inj_v_d = 1'b1; inj_d = {1'b0, color_q, 1'b0, stepw_q};
          st_d = (k_q == n_q) ? SCmd : SInj;
        end
      end

      SDrop: begin  // consume n_q words of a bad command, then answer
        cmd_ready_o = (k_q != n_q);
        if (k_q == n_q) st_d = SErr;
        else if (cmd_valid_i) k_d = k_q + 1'b1;
      end

      SErr: begin
        if (rsp_free && !re_busy_q) begin
          rsp_v_d = 1'b1; rsp_d = hdr(op_q, status_q, 16'd0);
          err_d = err_q + 32'd1;
          st_d = SCmd;
        end
      end

      SCTmo: begin
        cmd_ready_o = 1'b1;
        if (cmd_valid_i) begin
          tmo_d = cmd_data_i; timer_d = '0;
          st_d = (status_q != StOk) ? SErr : SCollect;
        end
      end

      SCollect: begin
        if (fabric_idle_i && !inj_v_q) stream_d = 1'b0;
        ej_ready_o = (k_q != n_q) && cb_in_ready;
        cb_in_valid = ej_valid_i && ej_ready_o;
        timer_d = timer_q + 32'd1;
        if (cb_in_valid) k_d = k_q + 1'b1;
        if (k_q == n_q) st_d = SCHdr;
        else if (timer_q >= tmo_q && !cb_in_valid) begin status_d = StTimeout; st_d = SCHdr; end
      end

      SCHdr: begin
        if (rsp_free) begin
          rsp_v_d = 1'b1; rsp_d = hdr(OpCollect, status_q, k_q[15:0]);
          if (status_q != StOk) err_d = err_q + 32'd1;
          st_d = cb_empty ? SCmd : SCDrain;
        end
      end

      SCDrain: begin
        cb_out_ready = rsp_free;
        if (cb_out_valid && rsp_free) begin
          rsp_v_d = 1'b1; rsp_d = cb_out_data;
        end
        if (cb_empty || (cb_out_valid && rsp_free && k_q == 17'd1)) st_d = SCmd;
        if (cb_out_valid && rsp_free) k_d = k_q - 1'b1;
      end

      SSTmo: begin
        cmd_ready_o = 1'b1;
        if (cmd_valid_i) begin tmo_d = cmd_data_i; timer_d = '0; st_d = SSync; end
      end

      SSync: begin
        timer_d = timer_q + 32'd1;
        if (fabric_idle_i && !inj_v_q) stream_d = 1'b0;
        if (rsp_free && !re_busy_q) begin
          if (mesh_idle_i && !inj_v_q && !cfg_v_q) begin
            rsp_v_d = 1'b1; rsp_d = hdr(OpSync, StOk, err_q[15:0]);
            st_d = SCmd;
          end else if (timer_q >= tmo_q) begin
            rsp_v_d = 1'b1; rsp_d = hdr(OpSync, StTimeout, err_q[15:0] + 16'd1);
            err_d = err_q + 32'd1;
            st_d = SCmd;
          end
        end
      end

      SCntPre: begin  // header, cycles low, cycles high
        if (rsp_free) begin
          rsp_v_d = 1'b1;
          case (k_q[1:0])
            2'd0: rsp_d = hdr(OpCounters, StOk, 16'd14);
            2'd1: rsp_d = cycles_q[31:0];
            default: rsp_d = cycles_q[63:32];
          endcase
          k_d = k_q + 1'b1;
          if (k_q == 17'd2) begin k_d = '0; n_d = 17'd11; iss_d = '0; st_d = SCntRd; end
        end
      end

      SCntPost: begin
        if (rsp_free) begin
          rsp_v_d = 1'b1; rsp_d = err_q;
          st_d = SCmd;
        end
      end

      default: st_d = SCmd;
    endcase

    // read engine (owns rsp_* only while busy; the decoder answers nothing then)
    if (re_busy_q) begin
      if (re_iss_q != re_n_q && cfg_free) begin
        cfg_v_d = 1'b1;
        cfg_d = {KindRead, re_pe_q, re_tgt_q, re_addr_q + re_iss_q[15:0], 32'b0};
        re_iss_d = re_iss_q + 1'b1;
      end
      if (re_hdr_q) begin
        if (rsp_free) begin
          rsp_v_d = 1'b1; rsp_d = hdr(OpRead, StOk, re_n_q[15:0]);
          re_hdr_d = 1'b0;
          if (re_n_q == '0) begin
            if (re_all_q && 32'(re_pe_q) != NumPes - 1) begin
              re_pe_d = re_pe_q + 8'd1; re_hdr_d = 1'b1;
            end else re_busy_d = 1'b0;
          end
        end
      end else if (cfg_rsp) begin
        cfg_in_ready_o = rsp_free;
        if (rsp_free) begin
          rsp_v_d = 1'b1; rsp_d = cfg_in_data_i[31:0];
          re_k_d = re_k_q + 1'b1;
          if (re_k_d == re_n_q) begin  // this PE done: the next one, or the end
            if (re_all_q && 32'(re_pe_q) != NumPes - 1) begin
              re_pe_d = re_pe_q + 8'd1; re_hdr_d = 1'b1; re_iss_d = '0; re_k_d = '0;
            end else re_busy_d = 1'b0;
          end
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_q <= SCmd;
      op_q <= '0; target_q <= '0; color_q <= '0; pe_q <= '0; status_q <= '0; ctrl_q <= '0;
      major_q <= '0; n_q <= '0; k_q <= '0; iss_q <= '0; addr_q <= '0; tmo_q <= '0;
      timer_q <= '0; err_q <= '0; cycles_q <= '0; stream_q <= 1'b0;
      hold_q <= '0; stepw_q <= '0;
      re_busy_q <= 1'b0; re_all_q <= 1'b0; re_hdr_q <= 1'b0; re_pe_q <= '0; re_tgt_q <= '0;
      re_addr_q <= '0; re_n_q <= '0; re_iss_q <= '0; re_k_q <= '0;
      rsp_v_q <= 1'b0; rsp_q <= '0; inj_v_q <= 1'b0; inj_q <= '0; cfg_v_q <= 1'b0; cfg_q <= '0;
    end else begin
      st_q <= st_d;
      op_q <= op_d; target_q <= target_d; color_q <= color_d; pe_q <= pe_d;
      status_q <= status_d; ctrl_q <= ctrl_d; major_q <= major_d; n_q <= n_d; k_q <= k_d;
      iss_q <= iss_d; addr_q <= addr_d; tmo_q <= tmo_d; timer_q <= timer_d; err_q <= err_d;
      cycles_q <= cycles_d; stream_q <= stream_d;
      hold_q <= hold_d; stepw_q <= stepw_d;
      re_busy_q <= re_busy_d; re_all_q <= re_all_d; re_hdr_q <= re_hdr_d; re_pe_q <= re_pe_d;
      re_tgt_q <= re_tgt_d; re_addr_q <= re_addr_d; re_n_q <= re_n_d; re_iss_q <= re_iss_d;
      re_k_q <= re_k_d;
      rsp_v_q <= rsp_v_d; rsp_q <= rsp_d; inj_v_q <= inj_v_d; inj_q <= inj_d;
      cfg_v_q <= cfg_v_d; cfg_q <= cfg_d;
    end
  end

`ifdef FORMAL
`include "mesh_hostport_formal.vh"
`endif
endmodule

`default_nettype wire
