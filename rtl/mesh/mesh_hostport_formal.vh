// mesh_hostport_formal.vh: framing properties of mesh_hostport (included at the bottom of the
// module under `ifdef FORMAL; checked by verif/formal/mesh_formal.sh, `hostport`: unbounded,
// by 2-induction with the strengthening invariants below and a base case from power-up).
// Command framing: a parser of the command stream that knows only each opcode's word count
// (docs/architecture.md section 6: ECHO n, WRITE 1 + n, READ 1, RUN pe, INJECT n, COLLECT 1,
// SYNC 1, the others 0 after the header) says which words are headers; the port takes a
// word as a header exactly when the parser does, whatever the command's status (the words
// of a bad command are consumed too). Response framing: a parser of the response stream
// (a header {0xA, op, status, n}, then n words; SYNC's n is its error count, no words)
// finds a header at every frame boundary, so the host never loses the frame. Before the
// first command no response. Under back-pressure a response word, an injected wavelet and
// a config beat stay, unchanged, until taken.
// Assumed, of the environment: the config chain answers each read beat with one response
// beat, in order, and a response offered stays until taken. Counts (n, a RUN's pe) and the
// data words (addresses, timeouts) below 4, and data bits that are only moved held at 0, keep
// the model small: the framing logic compares counters and does not depend on their width.
  reg f_rv = 1'b0;
  always @(posedge clk_i) f_rv <= 1'b1;
  always @(*) if (!f_rv) assume (!rst_ni);

  // the words that follow header h in the command stream
  function automatic [17:0] f_cmd_words(input [31:0] h);
    case (h[31:28])
      OpEcho, OpInject: f_cmd_words = {2'b0, h[15:0]};
      OpWrite: f_cmd_words = {2'b0, h[15:0]} + 18'd1;
      OpRun: f_cmd_words = {10'b0, h[23:16]};
      OpRead, OpCollect, OpSync: f_cmd_words = 18'd1;
      default: f_cmd_words = '0;
    endcase
  endfunction
  wire        f_ctake = cmd_valid_i && cmd_ready_o;
  wire        f_rtake = rsp_valid_o && rsp_ready_i;
  wire [3:0]  f_op = cmd_data_i[31:28];
  reg  [17:0] f_cleft;   // command words still to come after the current header
  reg  [16:0] f_rleft;   // response words still to come in the current frame
  reg  [3:0]  f_rop;     // the current frame's opcode
  reg         f_cmd_seen;
  reg  [3:0]  f_cfg_out; // read beats sent into the chain, not yet answered
  reg         f_cin_v_q;
  reg  [61:0] f_cin_d_q;
  reg         f_rsp_v_q, f_inj_v_q, f_cfg_v_q;
  reg  [31:0] f_rsp_d_q;
  reg  [36:0] f_inj_d_q;
  reg  [61:0] f_cfg_d_q;
  wire        f_cin_rsp = cfg_in_valid_i && cfg_in_data_i[61:60] == KindRsp;
  wire        f_cin_take = f_cin_rsp && cfg_in_ready_o;
  wire        f_cout_rd = cfg_out_valid_o && cfg_out_ready_i && cfg_out_data_o[61:60] == KindRead;
  always @(posedge clk_i) begin
    if (!rst_ni) begin
      f_cleft <= '0; f_rleft <= '0; f_rop <= '0; f_cmd_seen <= 1'b0; f_cfg_out <= '0;
    end else begin
      if (f_ctake) begin
        if (f_cleft != '0) f_cleft <= f_cleft - 1'b1;
        else begin
          f_cmd_seen <= 1'b1;
          f_cleft <= f_cmd_words(cmd_data_i);
        end
      end
      if (f_rtake) begin
        if (f_rleft != '0) f_rleft <= f_rleft - 1'b1;
        else begin
          f_rleft <= (rsp_data_o[27:24] == OpSync) ? '0 : {1'b0, rsp_data_o[15:0]};
          f_rop <= rsp_data_o[27:24];
        end
      end
      f_cfg_out <= f_cfg_out + (f_cout_rd ? 4'd1 : 4'd0) - (f_cin_take ? 4'd1 : 4'd0);
    end
    f_cin_v_q <= rst_ni && cfg_in_valid_i && !cfg_in_ready_o;
    f_cin_d_q <= cfg_in_data_i;
    f_rsp_v_q <= rst_ni && rsp_valid_o && !rsp_ready_i;
    f_rsp_d_q <= rsp_data_o;
    f_inj_v_q <= rst_ni && inj_valid_o && !inj_ready_i;
    f_inj_d_q <= inj_data_o;
    f_cfg_v_q <= rst_ni && cfg_out_valid_o && !cfg_out_ready_i;
    f_cfg_d_q <= cfg_out_data_o;
  end

  // the environment: the chain answers reads only, in order; small counts
  always @(*) if (rst_ni && f_rv) begin
    if (f_cin_rsp) assume (f_cfg_out != 4'd0);
    if (f_cin_v_q) assume (cfg_in_valid_i && cfg_in_data_i == f_cin_d_q);
    if (cmd_valid_i && f_cleft == '0) begin
      assume (cmd_data_i[15:2] == 14'd0);
      if (f_op == OpRun) assume (cmd_data_i[23:18] == 6'd0);
    end
    // data-independent: the port moves data words without decoding them beyond a step's
    // bit 31, an address's range and a timeout (kept below 4)
    if (cmd_valid_i && f_cleft != '0) assume (cmd_data_i[30:2] == 29'd0);
    assume (ej_data_i[36:1] == 36'd0 && cfg_in_data_i[59:1] == 59'd0);
  end

  always @(*) if (rst_ni && f_rv) begin
    // commands: a word is taken as a header exactly when the parser expects one
    if (f_ctake) assert ((st_q == SCmd) == (f_cleft == '0));
    // responses: a header at every frame boundary, none before the first command
    if (f_rtake && f_rleft == '0) assert (rsp_data_o[31:28] == 4'hA);
    if (!f_cmd_seen) assert (!rsp_valid_o);
    // back-pressure: an offered word stays, unchanged, until taken
    if (f_rsp_v_q) assert (rsp_valid_o && rsp_data_o == f_rsp_d_q);
    if (f_inj_v_q) assert (inj_valid_o && inj_data_o == f_inj_d_q);
    if (f_cfg_v_q) assert (cfg_out_valid_o && cfg_out_data_o == f_cfg_d_q);
  end

  // Strengthening invariants: with them the properties above are k-inductive, so the proof
  // is unbounded (mesh_formal.sh: ind). They say what the parsers' counts are in terms of the
  // port's state. f_cexp: the words the port still takes as part of the current command.
  // f_left: the words it still answers in the current response frame, not counting the one
  // offered (the read engine's frame while it is busy: the decoder answers nothing then);
  // an offered word is a header exactly when the response parser is at a frame boundary,
  // and that header announces f_left words. The COLLECT buffer holds the k_q words counted.
  logic [17:0] f_cexp;
  logic [16:0] f_dleft;
  always @(*) begin
    case (st_q)
      SHold: f_cexp = f_cmd_words(hold_q);
      SEcho, SWData, SInj, SStep, SDrop, SRun: f_cexp = {1'b0, n_q - k_q};
      SWAddr: f_cexp = {1'b0, n_q} + 18'd1;
      SRAddr, SCTmo, SSTmo: f_cexp = 18'd1;
      default: f_cexp = '0;
    endcase
    case (st_q)
      SEcho: f_dleft = n_q - k_q;
      SCDrain: f_dleft = k_q;
      SCntPre: f_dleft = (k_q == '0) ? '0 : 17'd15 - k_q;  // header, 2 cycle words, 11, 1
      SCntRd: f_dleft = 17'd12 - k_q;
      SCntPost: f_dleft = 17'd1;
      default: f_dleft = '0;
    endcase
  end
  wire [16:0] f_left = !re_busy_q ? f_dleft : re_hdr_q ? '0 : re_n_q - re_k_q;
  wire [16:0] f_hlen = (rsp_q[27:24] == OpSync) ? '0 : {1'b0, rsp_q[15:0]};
  wire        f_collecting = (st_q == SCollect) || (st_q == SCHdr) || (st_q == SCDrain);
  always @(*) if (rst_ni && f_rv) begin
    assert (st_q <= SCntPost);
    assert (!n_q[16] && !re_n_q[16]);  // counts come from 16-bit fields
    assert (f_cleft == f_cexp);
    if (st_q == SHold) begin
      assert (hold_q[15:2] == 14'd0);
      if (hold_q[31:28] == OpRun) assert (hold_q[23:18] == 6'd0);
    end
    if (st_q == SEcho || st_q == SWData || st_q == SInj) assert (k_q < n_q);
    if (st_q == SStep || st_q == SDrop) assert (k_q <= n_q);
    if (st_q == SRun || st_q == SWAddr || st_q == SCTmo) assert (k_q == '0);
    if (st_q == SRun) assert (n_q != '0);
    if (st_q == SCTmo && status_q == StOk) assert (32'(n_q) <= CollectDepth);
    if (st_q == SCollect) assert (k_q <= n_q && 32'(n_q) <= CollectDepth);
    if (st_q == SCHdr || st_q == SCDrain) assert (32'(k_q) <= CollectDepth);
    if (st_q == SCntPre) assert (k_q <= 17'd2);
    if (st_q == SCntRd) assert (n_q == 17'd11 && k_q < 17'd11);
    if (re_busy_q) begin
      assert (st_q == SCmd || st_q == SHold || st_q == SRun || st_q == SInj || st_q == SStep
              || st_q == SDrop || st_q == SErr || st_q == SSTmo || st_q == SSync);
      if (re_hdr_q) assert (re_k_q == '0);
      else assert (re_k_q < re_n_q);
    end
    if (!rsp_v_q) assert (f_rleft == f_left);
    else if (f_rleft != '0) assert (f_rleft == f_left + 17'd1);
    else assert (rsp_q[31:28] == 4'hA && f_hlen == f_left);
    if (!f_cmd_seen) assert (st_q == SCmd && !re_busy_q && !rsp_v_q);
    assert (cb_empty == (!f_collecting || k_q == '0));
    assert (cb_in_ready == (!f_collecting || 32'(k_q) != CollectDepth));
  end

  // reachability: frames of ECHO, READ, COLLECT (with words) end, a COUNTERS frame and an
  // error answer begin; a
  // WRITE's data beat and a RUN's wavelet leave; a header held behind a READ
  always @(*) if (rst_ni && f_rv) begin
    cover (f_rtake && f_rleft == 17'd1 && f_rop == OpEcho);
    cover (f_rtake && f_rleft == 17'd1 && f_rop == OpRead);
    cover (f_rtake && f_rleft == 17'd1 && f_rop == OpCollect);
    cover (f_rtake && f_rleft == '0 && rsp_data_o[27:24] == OpCounters);
    cover (f_rtake && f_rleft == '0 && rsp_data_o[23:16] != StOk);
    cover (cfg_out_valid_o && cfg_out_ready_i && cfg_out_data_o[61:60] == KindWrite);
    cover (inj_valid_o && inj_ready_i && op_q == OpRun && !inj_data_o[36]);
    cover (st_q == SHold);
  end
`ifdef FORMAL_BROKEN
  // Deliberately false: claims an ECHO's words never come back. Must fail.
  always @(*) if (rst_ni && f_rv) assert (!(f_rtake && f_rleft != '0 && f_rop == OpEcho));
`endif
