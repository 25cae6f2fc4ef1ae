// pe_vec - the PE's engine: every instruction that touches SRAM or the transmit queue
// (send, axpy, dot, redv, sendv, fill, lda/sta/ldb/stb and the 0xF vector group vfma, vsum2,
// vdot2, cvt.bf, cpa, vlut, vlut.bf, rsqrt, vmac, vdot, vaxpy, cvt.bh; docs/architecture.md 4.3-4.4),
// the FMAC pipeline and the transmit FIFO.
//
// Pipeline of a MAC: issue (cycle k: A and B read addresses to the SRAMs), R (k+1: read data
// in the SRAM output registers, FMAC stage 1), FMAC stages, out (k+1+FmacLatency: result
// written to B or pushed to the transmit FIFO). All B writes of MACs leave in issue order
// through the "out" stage. A B read whose word has a write in flight (in R or in the FMAC)
// waits (interlock), so any program is computed exactly as the instruction-level model does;
// the kernels never wait because consecutive MACs touch different words.
//  - axpy: one MAC per cycle; on the last MAC of a nonzero a data wavelet of the same task at
//    the queue head is popped into W and the next nonzero issues the next cycle. A nonzero
//    with payload bit 30 (first touch) reads no B and adds onto +0 (with val +0: +0 too). On
//    another MAC a SET_MAJOR of the data task's color at the head (control, payload[31:16] =
//    0) is popped into r1 (ra, and the sequencer's r1), which only the next nonzero reads: a
//    chain crosses majors with no dead cycle (Tp >= 2; with Tp = 1 the task takes it).
//  - dot: lanes take slots round-robin (DotLanes = FmacLatency slots), each lane's running
//    sum comes back from the FMAC (bypass) or from its accumulator register; a group's lanes
//    are gathered from the queue head while lane 0 already issues, so a full group issues
//    one MAC per cycle. Each lane reads A at its own offset (its wavelet's val: lanes of
//    different majors), one A read a MAC.
//  - redv: one add per cycle, payload from W then from the queue head (waiting for it).
//  - Two lanes (vfma, vaxpy, vmac, cvt.bf, cvt.bh): elements n and n + 1 issue in one cycle
//    (a pair) when two are left, the A element (vaxpy, vmac) or A/Bh destination (cvt.bf,
//    cvt.bh) of n is even (the pair's halves are one word), element n + 1's B words have no
//    write in flight and are not element n's destination, and vmac's x and c pairs stay in
//    their banks; otherwise n issues alone. Element n + 1 reads the word after element n's
//    on read port 3 (vmac's c: port 4), always the other sub-bank (pe.v), runs on a second
//    FMAC (u_fmac2, tags rv2/p2v) and writes on the second write port.
//  - vmul (cvt.bh's code with rs != 0): as vaxpy with no B read (c = +0, x = r[rd] in
//    vmac's operand places): a pair every cycle from an even A element.
//  - vfma, vaxpy: a MAC (or a pair) a cycle (vfma: source B[r[rt]+n], destination B[r6+n]; a
//    source word with its write in flight waits, so an overlap is sequential).
//  - vmac: x = B[r[rt]+n] on the first read port and c = B[r[rd]+n] on the second, a pair a
//    cycle when they are in different banks; in one bank c (c's pair) is read a cycle ahead
//    (kind KPre, held in cw and cw2), 2 cycles an issue.
//  - vdot: one MAC every other cycle on chains 0 and 2 (a chain's period is FmacLatency),
//    then, drained, vsum2's combining add into B[r[rd]].
//  - cvt.bh: as cvt.bf, into B's packed halves; the words are written at R (it starts once
//    no MAC write is in flight, so the write port is free), the destination word is read
//    for an odd first or even last element on the second port (in the source's bank: a
//    cycle ahead, KPre); a source word being assembled takes its low half from lo, one
//    written in R is read a cycle later.
//  - vsum2: two FMAC ops per element (add, then square) on four chains {s0, q0, s1, q1}
//    taken round-robin like dot lanes (bypass or accumulator register), so 2 cycles per
//    element; then, with the pipeline drained, the two combining adds (store to r[rd] and
//    r[rd] + 1). Needs FmacLatency = 4 (= the period of a chain). vdot2 (vsum2 with rs !=
//    0) is the same flow with the ops fmac(1.0, bf16(x), s) and fmac(A[r[rs]+n], bf16(x),
//    q), the A read issued with the q op: two vdots sharing x in the cycles of one.
//  - vsum4 / vdot4 (vsum2 / vdot2 with rt != 0): the same ops on eight chains, an even
//    element n on u_fmac (chains {s, q} of j = n & 3 in acc) and n + 1 on u_fmac2 (acc2) in
//    one cycle, so 1 cycle an element (vdot4: at an even A element; otherwise, and for an
//    odd count's last element, one element on u_fmac, its chain's accumulator by n[0]);
//    drained, four adds acc[k] = add(acc[k], acc2[k]) (chains 0 + 1, 2 + 3), drained,
//    vsum2's two combining adds.
//  - cpa (cvt.bf's code with rs != 0): an A word read a cycle, written whole into B at R
//    (it starts once no MAC write is in flight, so the write port is free); ends in the last
//    word's R.
//  - cvt.bf: one B read per element; A words are written whole, two elements a write (a
//    pair's, or an even element held in lo with the next), with an A read only for an odd
//    first or even last element (read-modify-write); ends in the last element's R cycle.
//  - vlut: a side stage X after the x read of B[r[rt]+n] (bf16 round, table index, table
//    address; a read of the word the element in X will write waits); the
//    table read on the second B read port is the MAC's issue, and the next x read goes out
//    in the same cycle when its bank differs from the table word's (1 element a cycle),
//    otherwise in the next (2 cycles an element).
//  - vlut.bf (vlut with rs != 0; B is not written, so its table cannot change): first the A
//    words of the first and the last element are read (2 cycles: their halves outside the
//    range), then, once no B write is in flight, the table is copied into a slot of the
//    lookup RAM unless a slot holds it (g_lt_*: two copies, each an even- and an odd-index
//    half of 128 words a slot; a row, two table words on ports 1 and 3, a cycle: 128 cycles;
//    two slots, so GELU's and GELU''s tables both stay), then elements n and n + 1 (a pair: two
//    left, the A destination of n even) have their x read on ports 1 and 3 (cycle k), their
//    table words read from the two copies (k+1, the MACs' issue), and go through u_fmac and
//    u_fmac2 (R at k+2); a pair's results leave as one A word, a single element's as before
//    (an odd one with its word's low half, the last even one with its high half). One pair a
//    cycle; the instruction ends when the last A write leaves, so the next one finds A free.
//  - vlut.a (cvt.bf's code with rs != 0): vlut.bf's flow with x read from A[r[rt]+n] on the
//    second A read request (a_re2_o: pe.v's read port, beside the results' writes), a pair
//    when the source and destination elements are both even, x = the element with zeros and
//    subnormals as +0 and NaN as 0x7fc0 (bf16(fmac(a, 1.0, +0))); a read of a word an
//    element still in flight (X to out) will write waits for that write.
//  - rsqrt: B read, then the ROM read (pe_rsqrt), then the register write: 3 cycles.
// Transmit: a FIFO of TxDepth; an instruction that sends reserves space for its in-flight
// wavelets (no stall of the pipeline is ever needed). Sources (scalar send, sendv at R,
// redv at out) never push in the same cycle: send waits until no send is in flight, sendv
// until no redv send is in flight.
// Scalar B loads/stores and fill wait until no B write is in flight; fill then writes two
// words a cycle (the second on the second write port).
// Handshakes: start_i is taken when the engine is not busy (the sequencer waits for done_o
// before it starts the next instruction); done_o is a one-cycle pulse.
`default_nettype none

module pe_vec #(
  parameter int unsigned AWords = 16384,   // bf16 elements of A (power of 2)
  parameter int unsigned BWords = 8192,    // 32-bit words of B, two banks (power of 2)
  parameter int unsigned NumQueues = 4,    // width of the task queue index
  parameter int unsigned FmacLatency = 4,  // FMAC stages; also the number of dot lanes
  parameter int unsigned TxDepth = 8,      // transmit FIFO entries (> FmacLatency + 1)
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1,
  localparam int unsigned AAW = $clog2(AWords / 2),
  localparam int unsigned BAW = $clog2(BWords),
  localparam int unsigned DotLanes = FmacLatency,
  localparam int unsigned LW = (DotLanes > 1) ? $clog2(DotLanes) : 1,
  localparam int unsigned TxCW = $clog2(TxDepth + 1)
) (
  input  wire             clk_i,
  input  wire             rst_ni,
  // from the sequencer
  input  wire             start_i,
  input  wire  [15:0]     instr_i,
  input  wire  [127:0]    regs_i,
  input  wire  [15:0]     opa_i,      // register operands of instr_i (pe_seq's read ports):
  input  wire  [15:0]     opb_i,      // send {rs, rt}, memory ops rs (address) and rd (data)
  input  wire  [15:0]     opd_i,
  input  wire  [31:0]     w_i,
  input  wire  [4:0]      tid_i,
  input  wire  [QW-1:0]   q_i,
  output logic            done_o,
  output logic            ld_o,
  output logic [15:0]     ld_data_o,
  output logic            r6_we_o,
  output wire  [15:0]     r6_o,
  output logic            r1_we_o,    // axpy took a SET_MAJOR: r1 = r1_o
  output wire  [15:0]     r1_o,
  output logic            w_we_o,
  output wire  [31:0]     w_o,
  // head of the task's queue
  output wire  [QW-1:0]   q_o,
  input  wire             head_valid_i,
  input  wire  [36:0]     head_data_i,
  output logic            pop_o,
  // SRAM A (single port, 32-bit words of two bf16)
  output logic            a_en_o,
  output logic            a_we_o,
  output logic [AAW-1:0]  a_addr_o,
  output logic [31:0]     a_wdata_o,
  input  wire  [31:0]     a_rdata_i,
  output logic            a_re2_o,    // vlut.a: a read beside the write of a_addr_o
  output logic [AAW-1:0]  a_raddr2_o,
  // SRAM B (the bank is the address msb; each bank is an even-word and an odd-word sub-bank
  // of one read and one write port: no two reads, and no two writes, of one cycle go to one
  // sub-bank)
  output logic            b_re_o,
  output logic [BAW-1:0]  b_raddr_o,
  output logic            b_re2_o,    // second read port (vlut's table, vmac's c, cvt.bh's
  output logic [BAW-1:0]  b_raddr2_o, // destination): never in b_raddr_o's bank
  output logic            b_re3_o,    // the second lane's word: b_raddr_o + 1
  output logic [BAW-1:0]  b_raddr3_o,
  output logic            b_re4_o,    // the second lane's vmac c: b_raddr2_o + 1
  output logic [BAW-1:0]  b_raddr4_o,
  input  wire  [127:0]    b_rdata_i,  // {port 4, 3, 2, 1}: each port's word, read a cycle ago
  output logic            b_we_o,
  output logic [BAW-1:0]  b_waddr_o,
  output logic [31:0]     b_wdata_o,
  output logic            b_we2_o,    // the second lane's write: the word after b_waddr_o's
  output logic [BAW-1:0]  b_waddr2_o,
  output logic [31:0]     b_wdata2_o,
  input  wire             cfg_bwe_i,  // a config write of B word cfg_bwaddr_i (it may hit the
  input  wire  [BAW-1:0]  cfg_bwaddr_i, // lookup RAM's table)
  // transmit
  output wire             tx_valid_o,
  output wire  [36:0]     tx_data_o,
  input  wire             tx_ready_i,
  output logic            mac_o,
  output logic            mac2_o,     // the second lane issues a MAC too (counter 0 adds 2)
  output wire             idle_o
);
  localparam [4:0] KNone = 5'd0, KAxpy = 5'd1, KDot = 5'd2, KRedv = 5'd3, KSendv = 5'd4,
                   KLda = 5'd5, KSta = 5'd6, KLdb = 5'd7, KStb = 5'd8, KVfma = 5'd9,
                   KVs = 5'd10, KVsF = 5'd11, KCvt = 5'd12, KLut = 5'd13, KRsq = 5'd14,
                   KVmac = 5'd15, KVdot = 5'd16, KCbh = 5'd17, KPre = 5'd18,
                   KVmul = 5'd19, KVsC = 5'd20, KTld = 5'd21, KCpa = 5'd22;
  localparam int unsigned L = FmacLatency;

  // ------------------------------------------------------------------ instruction state
  logic          busy_q, busy_d;
  logic [15:0]   ins_q, ins_d;
  logic [15:0]   ra_q, ra_d;      // r1: A address of token 0
  logic [15:0]   rb_q, rb_d;      // r2: B base
  logic [15:0]   sa_q, sa_d;      // r3: A stride
  logic [15:0]   sb_q, sb_d;      // r4: B stride
  logic [15:0]   len_q, len_d;    // r5: tokens
  logic [15:0]   ptr_q, ptr_d;    // r6: pointer
  logic [15:0]   cnt_q, cnt_d;    // r7: count
  logic [4:0]    tid_q, tid_d;
  logic [QW-1:0] q_q, q_d;
  logic [31:0]   w_q, w_d;
  logic [31:0]   dat_q, dat_d;    // store data / send payload
  logic [15:0]   adr_q, adr_d;    // scalar address
  logic [15:0]   t_q, t_d;        // token
  logic [15:0]   n_q, n_d;        // element of redv/sendv/fill
  logic [15:0]   aa_q, aa_d;      // A element address of token t
  logic [15:0]   ba_q, ba_d;      // axpy: B word address; dot: B element base of token t
  logic          ph_q, ph_d;      // scalar memory op: read issued
  logic [LW-1:0] slot_q, slot_d;  // dot slot
  logic [LW:0]   lanes_q, lanes_d;
  logic          gath_q, gath_d;  // dot: gathering lanes of a group
  logic          first_q, first_d;// dot: first group (lane 0 is W)
  logic [15:0]   idx_q [0:DotLanes-1];
  logic [15:0]   idx_d [0:DotLanes-1];
  logic [15:0]   off_q [0:DotLanes-1];  // dot: the lane's A offset (its wavelet's val)
  logic [15:0]   off_d [0:DotLanes-1];
  logic          fin_q, fin_d;    // vsum2: combining adds (the first issued); rsqrt: ROM read
  logic [2:0]    cph_q, cph_d;    // vsum4: the chain pairs' adds issued (4: done)
  logic [15:0]   lo_q, lo_d;      // cvt.bf/cvt.bh: the even element of the word being assembled
  logic [31:0]   cw_q, cw_d;      // vmac's c / cvt.bh's destination word, read a cycle ahead;
                                  // vlut.bf: {last word's high half, first word's low half}
  logic [15:0]   on_q, on_d;      // vlut.bf: elements written to A
  logic [31:0]   cw2_q, cw2_d;    // vmac: the second lane's c, read a cycle ahead with cw
  logic          ph2_q, ph2_d;    // vmac: the read ahead was a pair (c of n and n + 1)
  // vlut's X stage: the x read's data (bf16 kept while the table read waits)
  logic          xv_q, xv_d;
  logic          xheld_q, xheld_d;
  logic [15:0]   xb_q, xb_d;
  logic [BAW-1:0] xwa_q, xwa_d;
  // vlut.bf: table rows copied (128: done), the X stage holds a pair
  logic [7:0]    tl_q, tl_d;
  logic          xp_q, xp_d;
  logic          xh_q, xh_d;      // vlut.a: a single element's x is the word's high half
  // the lookup RAM's two slots: slot k holds the table at B word ltag[k] (lv[k]); a vlut.bf
  // or vlut.a of a table a slot holds skips the copy, else it copies into the slot used
  // less recently (lru); any B write (engine or config) into [ltag[k], ltag[k] + 256)
  // clears lv[k]
  logic [1:0]    lv_q, lv_d;
  logic [BAW-1:0] ltag_q [0:1];
  logic [BAW-1:0] ltag_d [0:1];
  logic          lru_q, lru_d;
  logic          ls_q, ls_d;      // the slot this instruction uses
  logic          lt_pick;         // the slot is chosen (a copy starts unless lt_skip)

  // ------------------------------------------------------------------ pipeline tags
  // R stage
  logic          rv_q, rv_d;
  logic [4:0]    rk_q, rk_d;
  logic          rwen_q, rwen_d;
  logic [BAW-1:0] rwa_q, rwa_d;
  logic          rtx_q, rtx_d;
  logic [3:0]    rcol_q, rcol_d;
  logic          rah_q, rah_d;    // A half
  logic          rp_q, rp_d;      // cvt.bf/cvt.bh: a pair (the second word on port 3)
  logic          rv2_q, rv2_d;    // the second lane's MAC (element n + 1)
  logic [BAW-1:0] rwa2_q, rwa2_d;
  logic          rbh_q, rbh_d;    // B half (dot, scalar)
  logic [31:0]   rval_q, rval_d;
  logic [LW-1:0] rln_q, rln_d;
  logic          rbk_q, rbk_d;    // vsum4's one-element issue: the chain is acc2's (odd n)
  logic          rfirst_q, rfirst_d;
  logic          rzf_q, rzf_d;
  logic          rfw_q, rfw_d;    // cvt.bh: the source word is the one being assembled
  logic [AAW-1:0] raw_q, raw_d;   // cvt.bf: A word
  logic          rab_q, rab_d;    // vlut.bf: the result goes to A as bf16
  logic          rts_q, rts_d;    // vlut.bf: the table words' halves (index bit 0) of n ...
  logic          rts2_q, rts2_d;  // ... and of n + 1
  logic          rlast_q, rlast_d; // vlut.bf, vlut.a: the last element (its word re-read)
  // FMAC stages
  logic          pv_q [0:L-1];
  logic          pdot_q [0:L-1];
  logic          pwen_q [0:L-1];
  logic          pab_q [0:L-1];   // vlut.bf: writes A at out
  logic          plast_q [0:L-1]; // vlut.bf, vlut.a: the last element
  logic [BAW-1:0] pwa_q [0:L-1];
  logic          ptx_q [0:L-1];
  logic [3:0]    pcol_q [0:L-1];
  logic [LW-1:0] pln_q [0:L-1];
  logic [31:0]   acc_q [0:DotLanes-1];
  logic          pbk_q [0:L-1];
  logic [31:0]   acc2_q [0:DotLanes-1];  // vsum4: the odd elements' chains (u_fmac2)
  logic          p2dot_q [0:L-1]; // vsum4: u_fmac2's result goes to acc2 (slot pln), not B
  logic          p2v_q [0:L-1];   // the second lane's FMAC stages (every op writes B)
  logic [BAW-1:0] p2wa_q [0:L-1];
  logic          p2ab_q [0:L-1];  // vlut.bf: the second lane writes A (with lane 1: one word)

  // ------------------------------------------------------------------ FMAC
  wire  [31:0] b_word = b_rdata_i[31:0];
  wire  [31:0] b_other = b_rdata_i[63:32];   // second read port
  wire  [31:0] b_word2 = b_rdata_i[95:64];   // the second lane's x (port 3), c (port 4)
  wire  [31:0] b_other2 = b_rdata_i[127:96];
  // cvt.bh: a source word whose low half is the held even element reads it from lo
  wire  [31:0] b_src = rfw_q ? {b_word[31:16], lo_q} : b_word;
  wire  [31:0] b_dw = rbh_q ? b_other : cw_q;  // cvt.bh: the destination word's old value
  wire  [15:0] b_elem = rbh_q ? b_word[31:16] : b_word[15:0];
  wire  [15:0] a_elem = rah_q ? a_rdata_i[31:16] : a_rdata_i[15:0];
  wire         f_valid = rv_q && (rk_q == KAxpy || rk_q == KDot || rk_q == KRedv ||
                                  rk_q == KVfma || rk_q == KVs || rk_q == KVsF || rk_q == KLut ||
                                  rk_q == KVmac || rk_q == KVdot || rk_q == KVmul ||
                                  rk_q == KVsC);
  // result goes to a lane accumulator
  wire         r_acc = (rk_q == KDot) || (rk_q == KVs) || (rk_q == KVdot) || (rk_q == KVsC);
  wire  [15:0] bw_bf;  // bf16(the B word read), for vfma, vsum2, cvt.bf, cvt.bh, vmac, vdot
  pe_bf16_rne u_bw_bf (.x_i(b_src), .y_o(bw_bf));
  wire  [15:0] bw2_bf; // the second lane's bf16(B word)
  pe_bf16_rne u_bw2_bf (.x_i(b_word2), .y_o(bw2_bf));
  wire  [LW-1:0] ln_s = {1'b0, rln_q[0]};   // vsum2's combining add: chains s0/q0 ...
  wire  [LW-1:0] ln_t = {1'b1, rln_q[0]};   // ... and s1/q1
  logic [31:0] y;
  logic        y_valid;
  wire  [15:0] y_bf;   // vlut.bf: bf16(the FMAC result)
  pe_bf16_rne u_y_bf (.x_i(y), .y_o(y_bf));
  wire  [15:0] y2_bf;  // vlut.bf: bf16(the second lane's result)
  // vlut.bf's lookup RAM: copy k (k = 0: element n, 1: n + 1) of the table in an even-index
  // half (h = 0) and an odd-index half (h = 1), row = {slot, index >> 1}; written by the
  // copy's R (KTld: the even word on port 1, the odd one on port 3), read in the X stage
  logic        lt_we, lt_re;
  logic [7:0]  lt_wrow, lt_row0, lt_row1;
  wire  [127:0] lt_rd;  // {copy 1 odd, copy 1 even, copy 0 odd, copy 0 even}
  for (genvar k = 0; k < 2; k = k + 1) begin : g_lt_copy
    for (genvar h = 0; h < 2; h = h + 1) begin : g_lt_half
      sram_1r1w #(.Depth(256), .Width(32), .OldOnCollide(1'b0)) u_lt (
        .clk_i(clk_i), .we_i(lt_we), .waddr_i(lt_wrow), .wdata_i((h == 0) ? b_word : b_word2),
        .re_i(lt_re), .raddr_i((k == 0) ? lt_row0 : lt_row1),
        .rdata_o(lt_rd[(2*k + h)*32 +: 32]));
    end
  end
  wire  [31:0] lt_e0 = lt_rd[31:0], lt_o0 = lt_rd[63:32];
  wire  [31:0] lt_e1 = lt_rd[95:64], lt_o1 = lt_rd[127:96];
  assign lt_we = rv_q && rk_q == KTld;
  assign lt_wrow = {ls_q, rwa_q[6:0]};
  // the table word of the element in R: vlut's from port 2, vlut.bf's from the lookup RAM
  wire  [31:0] lt_t = rab_q ? (rts_q ? lt_o0 : lt_e0) : b_other;
  wire  [31:0] lt_t2 = rts2_q ? lt_o1 : lt_e1;
  wire         byp = pv_q[L-1] && pdot_q[L-1] && (pln_q[L-1] == rln_q) && (pbk_q[L-1] == rbk_q);
  wire         byp2 = p2v_q[L-1] && p2dot_q[L-1] && (pln_q[L-1] == rln_q);  // vsum4's lane 2
  wire         r2acc = rv2_q && rk_q == KVs;  // vsum4: u_fmac2 accumulates
  // rsqrt: the ROM stage (B word sampled in the read's R cycle)
  wire  [15:0] rsq_y;
  pe_rsqrt u_rsqrt (
    .clk_i (clk_i),
    .rst_ni(rst_ni),
    .en_i  (rv_q && rk_q == KRsq),
    .x_i   (b_word),
    .y_o   (rsq_y)
  );
  wire         vd2 = ins_q[8:6] != 3'd0;  // rs != 0: vsum2's vdot2, cvt.bh's vmul
  wire         v4 = ins_q[2:0] != 3'd0;   // rt != 0: vsum2's vsum4 (vdot2's vdot4)
  logic        f_add;
  logic [31:0] f_a, f_c;
  logic [15:0] f_b;
  always_comb begin
    f_add = 1'b0;
    f_a = {16'd0, rval_q[15:0]};
    f_b = a_elem;
    f_c = b_word;
    case (rk_q)
      KDot: begin
        f_a = rzf_q ? 32'd0 : {16'd0, a_elem};
        f_b = rzf_q ? 16'd0 : b_elem;
        f_c = rfirst_q ? 32'd0 : (byp ? y : acc_q[rln_q]);
      end
      KAxpy: begin  // vaxpy: rfirst, rzf 0
        f_b = rzf_q ? 16'd0 : a_elem;
        f_c = rfirst_q ? 32'd0 : b_word;
      end
      KRedv: begin
        f_add = 1'b1;
        f_a = rval_q;
      end
      KVfma: begin  // fmac(r[rd], bf16(B), r[rs] << 16), r[rs] and r[rd] carried in rval
        f_a = {16'd0, rval_q[15:0]};
        f_b = bw_bf;
        f_c = {rval_q[31:16], 16'd0};
      end
      KVs: begin  // chain rln: add(s, x) (even lane) or fmac(bf16(x), bf16(x), q) (odd lane);
                  // vdot2 (rs != 0): fmac(1.0, bf16(x), s) and fmac(A, bf16(x), q)
        f_add = !rln_q[0] && !vd2;
        f_a = rln_q[0] ? {16'd0, vd2 ? a_elem : bw_bf} : vd2 ? 32'h3f80 : b_word;
        f_b = bw_bf;
        f_c = rfirst_q ? 32'd0 : (byp ? y : rbk_q ? acc2_q[rln_q] : acc_q[rln_q]);
      end
      KVsC: begin  // vsum4: add(chain 2k, chain 2k + 1) of slot rln; an unused chain is +0
        f_add = 1'b1;
        f_a = rzf_q ? 32'd0 : acc_q[rln_q];
        f_c = rfirst_q ? 32'd0 : acc2_q[rln_q];
      end
      KVmul: begin  // fmac(A, r[rd], +0): vmac's operand places (x = r[rd], c = +0)
        f_a = {16'd0, a_elem};
        f_b = rval_q[15:0];
        f_c = 32'd0;
      end
      KVmac: begin  // fmac(A, bf16(x), c); c from the other bank or read a cycle ahead
        f_a = {16'd0, a_elem};
        f_b = bw_bf;
        f_c = rzf_q ? cw_q : b_other;
      end
      KVdot: begin  // chain rln (0 or 2): fmac(A, bf16(x), c)
        f_a = {16'd0, a_elem};
        f_b = bw_bf;
        f_c = rfirst_q ? 32'd0 : (byp ? y : acc_q[rln_q]);
      end
      KVsF: begin  // add(chain 0, chain 1); a chain never used is +0 (vsum2, vdot)
        f_add = 1'b1;
        f_a = rzf_q ? 32'd0 : acc_q[ln_s];
        f_c = rfirst_q ? 32'd0 : acc_q[ln_t];
      end
      KLut: begin  // fmac(t[31:16], x, t[15:0] << 16), x carried in rval, t on port 2
        f_a = {16'd0, lt_t[31:16]};  // (vlut.bf: t from the lookup RAM)
        f_b = rval_q[15:0];
        f_c = {lt_t[15:0], 16'd0};
      end
      default: ;
    endcase
  end

  pe_fmac #(.FmacLatency(L)) u_fmac (
    .clk_i  (clk_i),
    .rst_ni (rst_ni),
    .valid_i(f_valid),
    .add_i  (f_add),
    .a_i    (f_a),
    .b_i    (f_b),
    .c_i    (f_c),
    .valid_o(y_valid),
    .y_o    (y)
  );

  // the second lane (vfma, vaxpy, vmac on element n + 1; A's high half: the pair's A word
  // is aligned)
  logic [31:0] f2_a, f2_c, y2;
  logic [15:0] f2_b;
  logic        y2_valid, f2_add;
  always_comb begin
    f2_add = 1'b0;
    f2_a = {16'd0, a_rdata_i[31:16]};
    f2_b = bw2_bf;
    f2_c = b_other2;
    case (rk_q)
      KVs: begin  // vsum4 / vdot4: element n + 1's op on its chain in acc2
        f2_add = !rln_q[0] && !vd2;
        f2_a = rln_q[0] ? {16'd0, vd2 ? a_rdata_i[31:16] : bw2_bf} : vd2 ? 32'h3f80 : b_word2;
        f2_c = rfirst_q ? 32'd0 : (byp2 ? y2 : acc2_q[rln_q]);
      end
      KAxpy: begin f2_a = rval_q; f2_b = a_rdata_i[31:16]; f2_c = b_word2; end
      KVfma: begin f2_a = {16'd0, rval_q[15:0]}; f2_c = {rval_q[31:16], 16'd0}; end
      KVmac: f2_c = rzf_q ? cw2_q : b_other2;
      KVmul: begin f2_b = rval_q[15:0]; f2_c = 32'd0; end
      KLut: begin  // vlut.bf: element n + 1, x in rval[31:16], t from the lookup RAM's copy 1
        f2_a = {16'd0, lt_t2[31:16]}; f2_b = rval_q[31:16]; f2_c = {lt_t2[15:0], 16'd0};
      end
      default: ;
    endcase
  end
  pe_bf16_rne u_y2_bf (.x_i(y2), .y_o(y2_bf));
  pe_fmac #(.FmacLatency(L)) u_fmac2 (
    .clk_i  (clk_i),
    .rst_ni (rst_ni),
    .valid_i(rv2_q),
    .add_i  (f2_add),
    .a_i    (f2_a),
    .b_i    (f2_b),
    .c_i    (f2_c),
    .valid_o(y2_valid),
    .y_o    (y2)
  );

  // ------------------------------------------------------------------ transmit FIFO
  logic        txp_valid;
  logic [36:0] txp_data;
  logic [TxCW-1:0] tx_count;
  logic        txp_ready;
  pe_fifo #(.Width(37), .Depth(TxDepth)) u_txq (
    .clk_i      (clk_i),
    .rst_ni     (rst_ni),
    .in_valid_i (txp_valid),
    .in_ready_o (txp_ready),
    .in_data_i  (txp_data),
    .out_valid_o(tx_valid_o),
    .out_ready_i(tx_ready_i),
    .out_data_o (tx_data_o),
    .count_o    (tx_count)
  );

  // ------------------------------------------------------------------ in-flight summary
  logic         infl_wb, infl_tx, infl_ftx, pipe_busy;
  logic [3:0]   infl_txn;
  always_comb begin
    pipe_busy = rv_q || rv2_q;
    infl_wb  = (rv_q && rwen_q) || (rv2_q && !r2acc && !rab_q);
    infl_tx  = rv_q && rtx_q;
    infl_ftx = rv_q && rtx_q && (rk_q == KRedv);
    infl_txn = {3'd0, rv_q && rtx_q};
    for (int k = 0; k < L; k = k + 1) begin
      pipe_busy = pipe_busy || pv_q[k] || p2v_q[k];
      infl_wb  = infl_wb || (pv_q[k] && pwen_q[k]) || (p2v_q[k] && !p2dot_q[k] && !p2ab_q[k]);
      infl_tx  = infl_tx || (pv_q[k] && ptx_q[k]);
      infl_ftx = infl_ftx || (pv_q[k] && ptx_q[k]);
      infl_txn = infl_txn + {3'd0, pv_q[k] && ptx_q[k]};
    end
  end
  wire credit = (32'(tx_count) + 32'(infl_txn)) < TxDepth;
  // vlut.bf: an A write still to come after this cycle (R or an FMAC stage before out)
  logic a_infl;
  always_comb begin
    a_infl = rv_q && rab_q;
    for (int k = 0; k < L - 1; k = k + 1) a_infl = a_infl || (pv_q[k] && pab_q[k]);
  end

  function automatic hz(input [BAW-1:0] addr);
    begin
      hz = (rv_q && rwen_q && (rwa_q == addr)) ||
           (rv2_q && !r2acc && !rab_q && (rwa2_q == addr));
      for (int j = 0; j < L; j = j + 1)
        hz = hz || (pv_q[j] && pwen_q[j] && (pwa_q[j] == addr)) ||
             (p2v_q[j] && !p2dot_q[j] && !p2ab_q[j] && (p2wa_q[j] == addr));
    end
  endfunction

  // ------------------------------------------------------------------ issue
  wire [3:0]  op        = ins_q[15:12];
  wire        same_task = head_valid_i && !head_data_i[36] && (head_data_i[36:32] == tid_q);
  // a SET_MAJOR (control, payload[31:16] = 0) of the running data task's color
  wire        same_major = head_valid_i && head_data_i[36] && !tid_q[4] &&
                           (head_data_i[35:32] == tid_q[3:0]) && (head_data_i[31:16] == 16'd0);
  wire [15:0] dot_t_n   = (len_q == 16'd0) ? 16'd1 : len_q;
  wire        t_last    = (t_q == len_q - 16'd1);
  wire        dot_tlast = (t_q == dot_t_n - 16'd1);
  wire [15:0] n_ptr     = ptr_q + n_q;
  wire        n_last    = (n_q == cnt_q - 16'd1);
  wire        n_all     = (n_q == cnt_q);           // vector group: every element issued
  wire [2:0]  xop       = ins_q[5:3];
  // cvt.bf: A element of this element, whether its A word must be read (odd first, even last)
  wire [15:0] cv_e      = dat_q[15:0] + n_q;
  wire        cv_rd     = cv_e[0] ? (n_q == 16'd0) : n_last;
  wire        r_awr     = rv_q && rk_q == KCvt && (rah_q || rzf_q || rp_q);  // R writes A
  // vector-group operand addresses of element n: B[r[rt]+n], B[r[rd]+n], A[r[rs]+n]
  wire [15:0] n_src     = ba_q + n_q;
  wire [15:0] n_rd      = dat_q[15:0] + n_q;
  wire [15:0] n_a       = adr_q + n_q;
  // vmac: x and c in different banks (both read ports in one cycle)
  wire        vm_split  = n_src[BAW-1] != n_rd[BAW-1];
  // cvt.bh: the destination word, its read (cv_rd) in the other bank than the source,
  // a source or destination read of the word written by the element in R
  wire [15:0] bh_w      = {1'b0, cv_e[15:1]};
  wire        bh_split  = n_ptr[BAW-1] != bh_w[BAW-1];
  wire        bh_wr     = rv_q && rk_q == KCbh && (rah_q || rzf_q || rp_q);
  wire        bh_hz     = bh_wr && (rwa_q == BAW'(n_ptr) || (cv_rd && rwa_q == BAW'(bh_w)));
  // two lanes: elements n and n + 1 issue together when two are left, the A element (vaxpy,
  // vmac) or A/Bh destination (cvt.bf, cvt.bh) of n is even (one aligned A word or Bh word),
  // element n + 1's B words have no write in flight and are not element n's destination
  // (the element read before it is written), and vmac's x and c pairs stay in their banks
  wire        n_two     = !n_all && !n_last;
  wire        n_end2    = (n_q + 16'd2 == cnt_q);
  wire [BAW-1:0] n_src1 = BAW'(n_src) + 1'b1;
  wire [BAW-1:0] n_ptr1 = BAW'(n_ptr) + 1'b1;
  wire [BAW-1:0] n_rd1  = BAW'(n_rd) + 1'b1;
  wire        vf_pair   = n_two && !hz(BAW'(n_src1)) && BAW'(n_src1) != BAW'(n_ptr);
  wire        vx_pair   = n_two && !n_a[0] && !hz(BAW'(n_ptr1));
  wire        vm_pair   = n_two && !n_a[0] && !hz(BAW'(n_src1)) && !hz(BAW'(n_rd1)) &&
                          n_src1[BAW-1] == n_src[BAW-1] && n_rd1[BAW-1] == n_rd[BAW-1] &&
                          BAW'(n_src1) != BAW'(n_ptr) && BAW'(n_rd1) != BAW'(n_ptr);
  // vsum4 / vdot4: an even element and the next (vdot4: an even A element)
  wire        s4_pair   = n_two && !n_q[0] && (!vd2 || !n_a[0]);
  wire        vp_pair   = n_two && !n_a[0] && !hz(n_rd1) && n_rd1 != BAW'(n_ptr) &&
                          n_src1 != BAW'(n_ptr);  // vmac, one bank: c's pair read ahead
  wire        cv_pair   = n_two && !cv_e[0] && !hz(BAW'(n_ptr1));
  wire        bh_pair   = n_two && !cv_e[0] && BAW'(n_ptr1) != BAW'(bh_w) &&
                          !(bh_wr && rwa_q == BAW'(n_ptr1));
  // vlut X stage: x, its table word
  wire [15:0] x_fresh;
  pe_bf16_rne u_x_bf (.x_i(b_word), .y_o(x_fresh));
  wire [15:0] x_bf      = xheld_q ? xb_q : x_fresh;
  // vlut.a: x from A (the element's half; a pair: both), as bf16(fmac(x, 1.0, +0))
  function automatic [15:0] widen1(input [15:0] h);
    widen1 = (h[14:7] == 8'd0) ? 16'h0000 : (h[14:7] == 8'hff && h[6:0] != 7'd0) ? 16'h7fc0 : h;
  endfunction
  wire [15:0] lx0       = la ? widen1(xh_q ? a_rdata_i[31:16] : a_rdata_i[15:0]) : x_bf;
  wire [15:0] lx1       = la ? widen1(a_rdata_i[31:16]) : bw2_bf;
  wire [7:0]  x_idx;
  pe_lut_index u_lut_idx (.x_i(lx0), .idx_o(x_idx));
  wire [15:0] t_adr     = dat_q[15:0] + {8'd0, x_idx};
  wire        x_go      = xv_q && !hz(BAW'(t_adr));  // the X stage issues the table read
  // vlut.bf: A destination r[rs] (adr), its last element, the element leaving the FMAC
  wire        lb        = ins_q[8:6] != 3'd0;
  wire [15:0] lb_last   = adr_q + cnt_q - 16'd1;
  wire [15:0] lb_e      = adr_q + on_q;
  wire [15:0] lb_n      = adr_q + n_q;               // the A destination of element n
  // cvt.bf's code with rs != 0: cpa (rd = 0) or vlut.a (rd != 0, its table's register)
  wire        la        = xop == 3'd3 && lb && ins_q[11:9] != 3'd0;  // vlut.a
  wire        cpa       = xop == 3'd3 && lb && ins_q[11:9] == 3'd0;
  wire        lx        = la || (xop == 3'd4 && lb);          // the lookup RAM's flow
  wire        lb_pair   = n_two && !lb_n[0] && !(la && n_src[0]);
  // vlut.a: the words of the elements in flight (on .. n - 1), x's word among them
  wire [15:0] la_hi     = lb_n - 16'd1;
  wire [AAW-1:0] la_off = AAW'(n_src[15:1]) - AAW'(lb_e[15:1]);
  wire [AAW-1:0] la_span = AAW'(la_hi[15:1]) - AAW'(lb_e[15:1]);
  wire        la_hz     = (on_q != n_q) && la_off <= la_span;
  wire [15:0] tl_a      = dat_q[15:0] + {7'd0, tl_q[6:0], 1'b0};  // the row's even word
  // the first row's cycle with no B write in flight finds the table in a slot of the
  // lookup RAM (lt_skip), or copies it into the one used less recently
  wire        lt_h0     = lv_q[0] && ltag_q[0] == BAW'(dat_q[15:0]);
  wire        lt_h1     = lv_q[1] && ltag_q[1] == BAW'(dat_q[15:0]);
  wire        lt_skip   = tl_q == 8'd0 && !infl_wb && (lt_h0 || lt_h1);
  wire [7:0]  x2_idx;   // vlut.bf: the index of element n + 1's x (port 3)
  pe_lut_index u_lut_idx2 (.x_i(lx1), .idx_o(x2_idx));

  // dot lane of this slot
  logic         d_act, d_end, d_gath;
  logic [15:0]  d_idx, d_e, d_off, d_a;
  logic [LW:0]  d_lanes;
  logic         step, step2;  // an element (step2: a pair) issued: the shared advance
  always_comb begin
    step = 1'b0; step2 = 1'b0;
    busy_d = busy_q; ins_d = ins_q; ra_d = ra_q; rb_d = rb_q; sa_d = sa_q; sb_d = sb_q;
    len_d = len_q; ptr_d = ptr_q; cnt_d = cnt_q; tid_d = tid_q; q_d = q_q; w_d = w_q;
    dat_d = dat_q; adr_d = adr_q; t_d = t_q; n_d = n_q; aa_d = aa_q; ba_d = ba_q; ph_d = ph_q;
    slot_d = slot_q; lanes_d = lanes_q; gath_d = gath_q; first_d = first_q;
    for (int m = 0; m < DotLanes; m = m + 1) begin
      idx_d[m] = idx_q[m]; off_d[m] = off_q[m];
    end
    rv_d = 1'b0; rk_d = KNone; rwen_d = 1'b0; rwa_d = '0; rtx_d = 1'b0; rcol_d = ins_q[11:8];
    rah_d = 1'b0; rbh_d = 1'b0; rval_d = '0; rln_d = '0; rfirst_d = 1'b0;
    rzf_d = 1'b0; raw_d = '0; rp_d = 1'b0; rv2_d = 1'b0; rwa2_d = '0; rbk_d = 1'b0;
    fin_d = fin_q; cph_d = cph_q; lo_d = lo_q; cw_d = cw_q; cw2_d = cw2_q; ph2_d = ph2_q; rfw_d = 1'b0;
    rab_d = 1'b0; on_d = on_q;
    xv_d = xv_q; xheld_d = 1'b0; xb_d = x_bf; xwa_d = xwa_q;
    tl_d = tl_q; xp_d = xp_q; xh_d = xh_q; rts_d = 1'b0; rts2_d = 1'b0; rlast_d = 1'b0;
    a_re2_o = 1'b0; a_raddr2_o = '0;
    lt_re = 1'b0; lt_row0 = {ls_q, x_idx[7:1]}; lt_row1 = {ls_q, x2_idx[7:1]}; lt_pick = 1'b0;
    b_re2_o = 1'b0; b_raddr2_o = '0; b_re3_o = 1'b0; b_raddr3_o = '0;
    b_re4_o = 1'b0; b_raddr4_o = '0;
    b_we2_o = p2v_q[L-1] && !p2dot_q[L-1] && !p2ab_q[L-1]; b_waddr2_o = p2wa_q[L-1]; b_wdata2_o = y2;
    done_o = 1'b0; ld_o = 1'b0; ld_data_o = '0; r6_we_o = 1'b0; r1_we_o = 1'b0; w_we_o = 1'b0;
    pop_o = 1'b0;
    a_en_o = 1'b0; a_we_o = 1'b0; a_addr_o = '0; a_wdata_o = '0;
    b_re_o = 1'b0; b_raddr_o = '0;
    b_we_o = pv_q[L-1] && pwen_q[L-1]; b_waddr_o = pwa_q[L-1]; b_wdata_o = y;
    txp_valid = 1'b0; txp_data = '0;
    mac_o = 1'b0; mac2_o = 1'b0;
    d_act = 1'b0; d_end = 1'b0; d_gath = 1'b0; d_idx = '0; d_e = '0; d_lanes = lanes_q;
    d_off = '0; d_a = '0;

    // pushes to the transmit FIFO from the pipeline (space was reserved at issue)
    if (rv_q && rk_q == KSendv) begin
      txp_valid = 1'b1;
      txp_data = {1'b0, rcol_q, b_word};
    end
    if (pv_q[L-1] && ptx_q[L-1]) begin
      txp_valid = 1'b1;
      txp_data = {1'b0, pcol_q[L-1], y};
    end
    // vlut.bf's and vlut.a's results into A: a pair its word, an odd element {it, the even
    // one}, the last even one {the word's high half, read a cycle before, it}, another even
    // one {it, it} (the odd one rewrites the high half; vlut.a's interlock keeps reads of
    // the word waiting)
    if (pv_q[L-2] && pab_q[L-2] && plast_q[L-2]) begin
      a_re2_o = 1'b1; a_raddr2_o = AAW'(lb_last[15:1]);
    end
    if (pv_q[L-1] && pab_q[L-1] && p2v_q[L-1] && p2ab_q[L-1]) begin  // a pair: its word
      on_d = on_q + 16'd2;
      a_en_o = 1'b1; a_we_o = 1'b1; a_addr_o = AAW'(lb_e[15:1]);
      a_wdata_o = {y2_bf, y_bf};
    end else if (pv_q[L-1] && pab_q[L-1]) begin
      on_d = on_q + 16'd1;
      if (lb_e[0]) begin
        a_en_o = 1'b1; a_we_o = 1'b1; a_addr_o = AAW'(lb_e[15:1]);
        a_wdata_o = {y_bf, (on_q == 16'd0) ? cw_q[15:0] : lo_q};
      end else if (on_q == cnt_q - 16'd1) begin  // the high half read a cycle ago
        a_en_o = 1'b1; a_we_o = 1'b1; a_addr_o = AAW'(lb_e[15:1]);
        a_wdata_o = {a_rdata_i[31:16], y_bf};
      end else begin  // (vlut.a's singles) written now too, the odd one's half to come
        a_en_o = 1'b1; a_we_o = 1'b1; a_addr_o = AAW'(lb_e[15:1]);
        a_wdata_o = {y_bf, y_bf};
        lo_d = y_bf;
      end
    end

    // scalar memory ops complete in their R cycle
    if (rv_q) begin
      case (rk_q)
        KLda: begin ld_o = 1'b1; ld_data_o = a_elem; done_o = 1'b1; busy_d = 1'b0; end
        KLdb: begin ld_o = 1'b1; ld_data_o = b_elem; done_o = 1'b1; busy_d = 1'b0; end
        KSta: begin
          a_en_o = 1'b1; a_we_o = 1'b1; a_addr_o = AAW'(adr_q[15:1]);
          a_wdata_o = rah_q ? {dat_q[15:0], a_rdata_i[15:0]} : {a_rdata_i[31:16], dat_q[15:0]};
          done_o = 1'b1; busy_d = 1'b0;
        end
        KStb: begin
          b_we_o = 1'b1; b_waddr_o = BAW'(adr_q);
          b_wdata_o = rbh_q ? {dat_q[15:0], b_word[15:0]} : {b_word[31:16], dat_q[15:0]};
          done_o = 1'b1; busy_d = 1'b0;
        end
        KCvt: begin  // rp: a pair (write both); rah: odd element (write {it, even}); rzf: last
          if (rp_q) begin
            a_en_o = 1'b1; a_we_o = 1'b1; a_addr_o = raw_q;
            a_wdata_o = {bw2_bf, bw_bf};
          end else if (rah_q) begin
            a_en_o = 1'b1; a_we_o = 1'b1; a_addr_o = raw_q;
            a_wdata_o = {bw_bf, rfirst_q ? a_rdata_i[15:0] : lo_q};
          end else if (rzf_q) begin
            a_en_o = 1'b1; a_we_o = 1'b1; a_addr_o = raw_q;
            a_wdata_o = {a_rdata_i[31:16], bw_bf};
          end else begin
            lo_d = bw_bf;
          end
          if (rzf_q) begin done_o = 1'b1; busy_d = 1'b0; end
        end
        KCbh: begin  // as KCvt, into B: the word is written at R (no MAC write in flight)
          if (rp_q) begin
            b_we_o = 1'b1; b_waddr_o = rwa_q;
            b_wdata_o = {bw2_bf, bw_bf};
          end else if (rah_q) begin
            b_we_o = 1'b1; b_waddr_o = rwa_q;
            b_wdata_o = {bw_bf, rfirst_q ? b_dw[15:0] : lo_q};
          end else if (rzf_q) begin
            b_we_o = 1'b1; b_waddr_o = rwa_q;
            b_wdata_o = {b_dw[31:16], bw_bf};
          end else begin
            lo_d = bw_bf;
          end
          if (rzf_q) begin done_o = 1'b1; busy_d = 1'b0; end
        end
        KCpa: begin  // the A word read at issue, into B
          b_we_o = 1'b1; b_waddr_o = rwa_q; b_wdata_o = a_rdata_i;
          if (rzf_q) begin done_o = 1'b1; busy_d = 1'b0; end
        end
        KPre: begin cw_d = b_word; cw2_d = b_word2; end
        KRsq: fin_d = 1'b1;
        default: ;
      endcase
    end

    if (start_i && !busy_q) begin
      busy_d = 1'b1;
      ins_d = instr_i;
      ra_d = regs_i[16 +: 16]; rb_d = regs_i[32 +: 16]; sa_d = regs_i[48 +: 16];
      sb_d = regs_i[64 +: 16]; len_d = regs_i[80 +: 16]; ptr_d = regs_i[96 +: 16];
      cnt_d = regs_i[112 +: 16];
      tid_d = tid_i; q_d = q_i; w_d = w_i;
      adr_d = opa_i;
      dat_d = (instr_i[15:12] == 4'h8) ? {opa_i, opb_i} : {16'd0, opd_i};
      t_d = '0; n_d = '0; ph_d = 1'b0; slot_d = '0; lanes_d = '0; gath_d = 1'b1;
      first_d = 1'b1; fin_d = 1'b0; xv_d = 1'b0; on_d = '0; cph_d = '0; tl_d = '0;
      aa_d = regs_i[16 +: 16];
      ba_d = (instr_i[15:12] == 4'hB) ? regs_i[32 +: 16] :
             (instr_i[15:12] == 4'hF) ? regs_i[{instr_i[2:0], 4'd0} +: 16] :  // r[rt]
             regs_i[32 +: 16] + {2'd0, w_i[29:16]};  // axpy: bit 30 is first-touch
    end else if (busy_q) begin
      case (op)
        4'h8: begin  // send
          if (!infl_tx && txp_ready) begin
            txp_valid = 1'b1;
            txp_data = {ins_q[7], ins_q[11:8], dat_q};
            done_o = 1'b1; busy_d = 1'b0;
          end
        end
        4'hA: begin  // axpy
          if (len_q == 16'd0) begin
            done_o = 1'b1; busy_d = 1'b0;
          end else if (!hz(BAW'(ba_q))) begin
            mac_o = 1'b1;
            a_en_o = 1'b1; a_addr_o = AAW'(aa_q[15:1]);
            b_re_o = !w_q[30]; b_raddr_o = BAW'(ba_q);
            rv_d = 1'b1; rk_d = KAxpy; rwen_d = 1'b1; rwa_d = BAW'(ba_q); rah_d = aa_q[0];
            rval_d = {16'd0, w_q[15:0]};
            // first touch (payload bit 30): c = +0, no B read; with val +0 also x = +0
            rfirst_d = w_q[30]; rzf_d = w_q[30] && (w_q[15:0] == 16'd0);
            if (!t_last) begin
              t_d = t_q + 16'd1; aa_d = aa_q + sa_q; ba_d = ba_q + sb_q;
              if (same_major) begin  // SET_MAJOR taken: r1 for the next nonzero
                pop_o = 1'b1; ra_d = head_data_i[15:0]; r1_we_o = 1'b1;
              end
            end else if (same_task) begin
              pop_o = 1'b1; w_we_o = 1'b1; w_d = head_data_i[31:0];
              t_d = '0; aa_d = ra_q; ba_d = rb_q + {2'd0, head_data_i[29:16]};
            end else begin
              done_o = 1'b1; busy_d = 1'b0;
            end
          end
        end
        4'hB: begin  // dot
          d_gath = (t_q == 16'd0) && gath_q;
          if (d_gath && slot_q == '0) begin
            d_act = first_q || same_task;
            d_idx = first_q ? w_q[31:16] : head_data_i[31:16];
            d_off = first_q ? w_q[15:0] : head_data_i[15:0];
          end else if (d_gath) begin
            d_act = same_task;
            d_idx = head_data_i[31:16];
            d_off = head_data_i[15:0];
          end else begin
            d_act = ({1'b0, slot_q} < lanes_q);
            d_idx = idx_q[slot_q];
            d_off = off_q[slot_q];
          end
          d_e = ba_q + d_idx;
          d_a = aa_q + d_off;  // the lane's major: one A read a MAC
          d_lanes = d_gath ? (d_act ? {1'b0, slot_q} + 1'b1 : {1'b0, slot_q}) : lanes_q;
          if (d_gath && slot_q == '0 && !d_act) begin
            // no further group: the instruction ends
            done_o = 1'b1; busy_d = 1'b0; r6_we_o = 1'b1;
          end else if (!(d_act && hz(BAW'(d_e[15:1])))) begin
            if (d_act) begin
              mac_o = (len_q != 16'd0);
              a_en_o = 1'b1; a_addr_o = AAW'(d_a[15:1]);
              b_re_o = 1'b1; b_raddr_o = BAW'(d_e[15:1]);
              rv_d = 1'b1; rk_d = KDot; rah_d = d_a[0]; rbh_d = d_e[0];
              rln_d = slot_q; rfirst_d = (t_q == 16'd0); rzf_d = (len_q == 16'd0);
              rwen_d = dot_tlast; rwa_d = BAW'(ptr_q + 16'(slot_q));
              if (d_gath) begin
                idx_d[slot_q] = d_idx;
                off_d[slot_q] = d_off;
                if (!(first_q && slot_q == '0)) pop_o = 1'b1;
              end
            end
            if (d_gath) begin
              lanes_d = d_lanes;
              gath_d = d_act && (slot_q != LW'(DotLanes - 1));
            end
            d_end = (slot_q == LW'(DotLanes - 1)) ||
                    (dot_tlast && !gath_d && ({1'b0, slot_q} + 1'b1 >= d_lanes));
            if (!d_end) slot_d = slot_q + 1'b1;
            else if (dot_tlast) begin
              slot_d = '0; t_d = '0; gath_d = 1'b1; first_d = 1'b0; lanes_d = '0;
              ptr_d = ptr_q + 16'(d_lanes); aa_d = ra_q; ba_d = rb_q;
            end else begin
              slot_d = '0; t_d = t_q + 16'd1; aa_d = aa_q + sa_q; ba_d = ba_q + sb_q;
            end
          end
        end
        4'hC: begin  // redv / redv.st
          if (cnt_q == 16'd0) begin
            done_o = 1'b1; busy_d = 1'b0;
          end else if ((n_q == 16'd0 || same_task) && (ins_q[7] || credit) &&
                       !hz(BAW'(n_ptr))) begin
            mac_o = 1'b1;
            b_re_o = 1'b1; b_raddr_o = BAW'(n_ptr);
            rv_d = 1'b1; rk_d = KRedv;
            rval_d = (n_q == 16'd0) ? w_q : head_data_i[31:0];
            rwen_d = ins_q[7]; rwa_d = BAW'(n_ptr); rtx_d = !ins_q[7];
            if (n_q != 16'd0) pop_o = 1'b1;
            n_d = n_q + 16'd1;
            if (n_last) begin done_o = 1'b1; busy_d = 1'b0; end
          end
        end
        4'hD: begin  // sendv
          if (cnt_q == 16'd0) begin
            done_o = 1'b1; busy_d = 1'b0;
          end else if (credit && !infl_ftx && !hz(BAW'(n_ptr))) begin
            b_re_o = 1'b1; b_raddr_o = BAW'(n_ptr);
            rv_d = 1'b1; rk_d = KSendv; rtx_d = 1'b1;
            n_d = n_q + 16'd1;
            if (n_last) begin done_o = 1'b1; busy_d = 1'b0; end
          end
        end
        4'hE: begin  // fill: two words a cycle (the next one, the other sub-bank, on the
          if (cnt_q == 16'd0) begin   // second write port: no MAC write is in flight)
            done_o = 1'b1; busy_d = 1'b0;
          end else if (!infl_wb) begin
            b_we_o = 1'b1; b_waddr_o = BAW'(n_ptr); b_wdata_o = 32'd0;
            step = 1'b1; step2 = n_two;
            if (step2) begin
              b_we2_o = 1'b1; b_waddr2_o = n_ptr1; b_wdata2_o = 32'd0;
            end
          end
        end
        4'hF: if (xop == 3'd1) begin  // vfma rd, rs, rt
          if (n_all) begin
            done_o = 1'b1; busy_d = 1'b0;
          end else if (!hz(BAW'(n_src))) begin
            mac_o = 1'b1;
            b_re_o = 1'b1; b_raddr_o = BAW'(n_src);
            rv_d = 1'b1; rk_d = KVfma; rwen_d = 1'b1;
            rwa_d = BAW'(n_ptr); rval_d = {adr_q, dat_q[15:0]};
            step = 1'b1; step2 = vf_pair;
            if (step2) begin
              mac2_o = 1'b1;
              b_re3_o = 1'b1; b_raddr3_o = BAW'(n_src1);
              rv2_d = 1'b1; rwa2_d = BAW'(n_ptr1);
            end
          end
        end else if (xop == 3'd2) begin  // vsum2 rd / vdot2 rd, rs (rs != 0: the q op reads
          if (!n_all && v4) begin        // A[r[rs]+n]): chain {n[0], ph}, then the two adds;
            // vsum4 / vdot4 (rt != 0): chain {n[1], ph} of acc (n even) and acc2 (n odd),
            // an even n with n + 1 on u_fmac2 (vdot4: at an even A element)
            if (!hz(BAW'(n_ptr)) && !(s4_pair && hz(n_ptr1))) begin
              mac_o = 1'b1;
              b_re_o = 1'b1; b_raddr_o = BAW'(n_ptr);
              if (lb && ph_q) begin a_en_o = 1'b1; a_addr_o = AAW'(n_a[15:1]); end
              rv_d = 1'b1; rk_d = KVs; rah_d = n_a[0]; rbk_d = n_q[0];
              rln_d = LW'({n_q[1], ph_q}); rfirst_d = (n_q < 16'd4);
              if (s4_pair) begin
                mac2_o = 1'b1;
                b_re3_o = 1'b1; b_raddr3_o = n_ptr1;
                rv2_d = 1'b1;
              end
              ph_d = !ph_q;
              if (ph_q) n_d = n_q + (s4_pair ? 16'd2 : 16'd1);
            end
          end else if (v4 && cph_q != 3'd4) begin  // acc[k] = add(acc[k], acc2[k]), drained
            if (cph_q != 3'd0 || !pipe_busy) begin
              mac_o = 1'b1;
              rv_d = 1'b1; rk_d = KVsC; rln_d = LW'(cph_q[1:0]);
              rzf_d = cnt_q <= {14'd0, cph_q[1], 1'b0};
              rfirst_d = cnt_q <= {14'd0, cph_q[1], 1'b1};
              cph_d = cph_q + 3'd1;
            end
          end else if (!n_all) begin
            if (!hz(BAW'(n_ptr))) begin
              mac_o = 1'b1;
              b_re_o = 1'b1; b_raddr_o = BAW'(n_ptr);
              if (lb && ph_q) begin a_en_o = 1'b1; a_addr_o = AAW'(n_a[15:1]); end
              rv_d = 1'b1; rk_d = KVs; rah_d = n_a[0];
              rln_d = LW'({n_q[0], ph_q}); rfirst_d = (n_q < 16'd2);
              ph_d = !ph_q;
              if (ph_q) n_d = n_q + 16'd1;
            end
          end else if (fin_q || !pipe_busy) begin
            mac_o = 1'b1;
            rv_d = 1'b1; rk_d = KVsF; rln_d = LW'(fin_q); rwen_d = 1'b1;
            rwa_d = BAW'(dat_q[15:0] + {15'd0, fin_q});
            rzf_d = !v4 && (cnt_q == 16'd0); rfirst_d = !v4 && (cnt_q < 16'd2);
            fin_d = 1'b1;
            if (fin_q) begin done_o = 1'b1; busy_d = 1'b0; end
          end
        end else if (cpa) begin  // cpa rs (cvt.bf's code, rs != 0, rd = 0): B[r6+m] =
          if (cnt_q == 16'd0) begin            // A word r[rs]/2 + m, a word a cycle, written
            done_o = 1'b1; busy_d = 1'b0;      // at R once no MAC write is in flight
          end else if (!n_all && !infl_wb) begin
            a_en_o = 1'b1; a_addr_o = AAW'(16'(adr_q[15:1]) + n_q);
            rv_d = 1'b1; rk_d = KCpa; rwa_d = BAW'(n_ptr); rzf_d = n_last;
            n_d = n_q + 16'd1;
          end
        end else if (xop == 3'd3 && !la) begin  // cvt.bf rd: ends in the last element's R
          if (!n_all && !hz(BAW'(n_ptr)) && !(cv_rd && r_awr)) begin
            b_re_o = 1'b1; b_raddr_o = BAW'(n_ptr);
            if (cv_rd) begin a_en_o = 1'b1; a_addr_o = AAW'(cv_e[15:1]); end
            rv_d = 1'b1; rk_d = KCvt; raw_d = AAW'(cv_e[15:1]);
            rah_d = cv_e[0]; rzf_d = n_last; rfirst_d = (n_q == 16'd0);
            n_d = n_q + 16'd1;
            if (cv_pair) begin
              b_re3_o = 1'b1; b_raddr3_o = BAW'(n_ptr1);
              rp_d = 1'b1; rzf_d = n_end2;
              n_d = n_q + 16'd2;
            end
          end else if (cnt_q == 16'd0) begin
            done_o = 1'b1; busy_d = 1'b0;
          end
        end else if (lx && !fin_q) begin  // vlut.bf, vlut.a: the two A word reads
          a_en_o = 1'b1; a_addr_o = AAW'(ph_q ? lb_last[15:1] : adr_q[15:1]);
          if (ph_q) begin cw_d[15:0] = a_rdata_i[15:0]; fin_d = 1'b1; end
          ph_d = 1'b1;
        end else if (lx) begin  // vlut.bf, vlut.a: the table copy, then a pair a cycle
          if (ph_q) begin cw_d[31:16] = a_rdata_i[31:16]; ph_d = 1'b0; end
          if (xv_q) begin  // X stage: the table words (the MACs' issue)
            mac_o = 1'b1; mac2_o = xp_q;
            lt_re = 1'b1;
            rv_d = 1'b1; rk_d = KLut; rab_d = 1'b1; rv2_d = xp_q;
            rval_d = {lx1, lx0}; rts_d = x_idx[0]; rts2_d = x2_idx[0]; rlast_d = n_all;
            xv_d = 1'b0;
          end
          lt_pick = !n_all && tl_q == 8'd0 && !infl_wb;
          if (lt_skip) tl_d = 8'd128;  // the table is in the lookup RAM: x reads at once
          if (!n_all && !tl_q[7] && !lt_skip) begin  // a table row, once no B write is in
            if (!infl_wb) begin                       // flight
              b_re_o = 1'b1; b_raddr_o = BAW'(tl_a);
              b_re3_o = 1'b1; b_raddr3_o = BAW'(tl_a + 16'd1);
              rv_d = 1'b1; rk_d = KTld; rwa_d = BAW'(tl_q[6:0]);
              tl_d = tl_q + 8'd1;
            end
          end else if (!n_all && !(la && la_hz)) begin  // x of n (and n + 1): B ports 1
            if (la) begin                                    // and 3, or (vlut.a) A's word
              a_re2_o = 1'b1; a_raddr2_o = AAW'(n_src[15:1]);
            end else begin
              b_re_o = 1'b1; b_raddr_o = BAW'(n_src);
              if (lb_pair) begin b_re3_o = 1'b1; b_raddr3_o = n_src1; end
            end
            xv_d = 1'b1; xp_d = lb_pair; xh_d = n_src[0];
            n_d = n_q + (lb_pair ? 16'd2 : 16'd1);
          end
          if (n_all && !xv_q && !a_infl) begin
            done_o = 1'b1; busy_d = 1'b0;
          end
        end else if (xop == 3'd4) begin  // vlut rd, rt: X stage -> table read (the MAC's issue)
          if (x_go) begin
            mac_o = 1'b1;
            b_re2_o = 1'b1; b_raddr2_o = BAW'(t_adr);
            rv_d = 1'b1; rk_d = KLut; rwen_d = !lb; rwa_d = xwa_q;
            rab_d = lb;
            rval_d = {16'd0, x_bf};
            xv_d = 1'b0;
          end else if (xv_q) begin
            xheld_d = 1'b1;
          end
          // (the element in X writes its word later: a source read of it waits too)
          if (!n_all && (!xv_q || (x_go && t_adr[BAW-1] != n_src[BAW-1] &&
                                   (lb || xwa_q != BAW'(n_src)))) &&
              !hz(BAW'(n_src))) begin
            b_re_o = 1'b1; b_raddr_o = BAW'(n_src);
            xv_d = 1'b1; xwa_d = BAW'(n_ptr);
            n_d = n_q + 16'd1;
          end
          if (n_all && (lb ? (!xv_q && !a_infl) : (!xv_q || x_go))) begin
            done_o = 1'b1; busy_d = 1'b0;
          end
        end else if (xop == 3'd5) begin  // rsqrt rd, [rs]: B read, ROM (fin), register
          if (fin_q) begin
            ld_o = 1'b1; ld_data_o = rsq_y; done_o = 1'b1; busy_d = 1'b0; fin_d = 1'b0;
          end else if (!ph_q && !hz(BAW'(adr_q))) begin
            b_re_o = 1'b1; b_raddr_o = BAW'(adr_q);
            rv_d = 1'b1; rk_d = KRsq;
            ph_d = 1'b1;
          end
        end else if (xop == 3'd6) begin  // vmac rd, rs, rt: c read a cycle ahead (ph) when
          if (n_all) begin                // it shares x's bank
            done_o = 1'b1; busy_d = 1'b0;
          end else if (vm_split || ph_q) begin
            if (!hz(BAW'(n_src)) && (ph_q || !hz(BAW'(n_rd)))) begin
              mac_o = 1'b1;
              a_en_o = 1'b1; a_addr_o = AAW'(n_a[15:1]);
              b_re_o = 1'b1; b_raddr_o = BAW'(n_src);
              if (!ph_q) begin b_re2_o = 1'b1; b_raddr2_o = BAW'(n_rd); end
              rv_d = 1'b1; rk_d = KVmac; rah_d = n_a[0]; rzf_d = ph_q;
              rwen_d = 1'b1; rwa_d = BAW'(n_ptr);
              ph_d = 1'b0;
              step = 1'b1; step2 = ph_q ? (ph2_q && !hz(n_src1)) : vm_pair;
              if (step2) begin
                // split banks: x and c pairs on ports 1/3 and 2/4; one bank: x's pair, c's
                // read ahead
                mac2_o = 1'b1;
                b_re3_o = 1'b1; b_raddr3_o = BAW'(n_src1);
                if (!ph_q) begin b_re4_o = 1'b1; b_raddr4_o = BAW'(n_rd1); end
                rv2_d = 1'b1; rwa2_d = BAW'(n_ptr1);
              end
            end
          end else if (!hz(BAW'(n_rd))) begin
            b_re_o = 1'b1; b_raddr_o = BAW'(n_rd);
            rv_d = 1'b1; rk_d = KPre;
            ph_d = 1'b1; ph2_d = vp_pair;
            if (vp_pair) begin b_re3_o = 1'b1; b_raddr3_o = n_rd1; end
          end
        end else if (xop == 3'd7) begin  // vdot rd, rs, rt: chains 0/2, an issue every other
          if (!n_all) begin              // cycle (a chain's period is FmacLatency); then the add
            if (ph_q) ph_d = 1'b0;
            else if (!hz(BAW'(n_src))) begin
              mac_o = 1'b1;
              a_en_o = 1'b1; a_addr_o = AAW'(n_a[15:1]);
              b_re_o = 1'b1; b_raddr_o = BAW'(n_src);
              rv_d = 1'b1; rk_d = KVdot; rah_d = n_a[0];
              rln_d = LW'({n_q[0], 1'b0}); rfirst_d = (n_q < 16'd2);
              ph_d = 1'b1;
              n_d = n_q + 16'd1;
            end
          end else if (!pipe_busy) begin
            mac_o = 1'b1;
            rv_d = 1'b1; rk_d = KVsF; rln_d = '0; rwen_d = 1'b1; rwa_d = BAW'(dat_q[15:0]);
            rzf_d = (cnt_q == 16'd0); rfirst_d = (cnt_q < 16'd2);
            done_o = 1'b1; busy_d = 1'b0;
          end
        end else if (ins_q[2:0] == 3'd4) begin  // vaxpy rd, rs: axpy over B[r6 ..)
          if (n_all) begin
            done_o = 1'b1; busy_d = 1'b0;
          end else if (!hz(BAW'(n_ptr))) begin
            mac_o = 1'b1;
            a_en_o = 1'b1; a_addr_o = AAW'(n_a[15:1]);
            b_re_o = 1'b1; b_raddr_o = BAW'(n_ptr);
            rv_d = 1'b1; rk_d = KAxpy; rah_d = n_a[0]; rwen_d = 1'b1;
            rwa_d = BAW'(n_ptr); rval_d = {16'd0, dat_q[15:0]};
            step = 1'b1; step2 = vx_pair;
            if (step2) begin
              mac2_o = 1'b1;
              b_re3_o = 1'b1; b_raddr3_o = BAW'(n_ptr1);
              rv2_d = 1'b1; rwa2_d = BAW'(n_ptr1);
            end
          end
        end else if (ins_q[2:0] == 3'd5 && vd2) begin  // vmul rd, rs (cvt.bh's code, rs != 0):
          if (n_all) begin                             // no B read, a pair a cycle (even A)
            done_o = 1'b1; busy_d = 1'b0;
          end else begin
            mac_o = 1'b1;
            a_en_o = 1'b1; a_addr_o = AAW'(n_a[15:1]);
            rv_d = 1'b1; rk_d = KVmul; rah_d = n_a[0]; rwen_d = 1'b1;
            rwa_d = BAW'(n_ptr); rval_d = {16'd0, dat_q[15:0]};
            step = 1'b1; step2 = n_two && !n_a[0];
            if (step2) begin
              mac2_o = 1'b1;
              rv2_d = 1'b1; rwa2_d = BAW'(n_ptr1);
            end
          end
        end else if (ins_q[2:0] == 3'd5) begin  // cvt.bh rd: as cvt.bf, the words written at R
          if (cnt_q == 16'd0) begin             // (after the MAC writes drained)
            done_o = 1'b1; busy_d = 1'b0;
          end else if (!n_all && !infl_wb && !bh_hz) begin
            if (!cv_rd || bh_split || ph_q) begin
              b_re_o = 1'b1; b_raddr_o = BAW'(n_ptr);
              if (cv_rd && !ph_q) begin b_re2_o = 1'b1; b_raddr2_o = BAW'(bh_w); end
              rv_d = 1'b1; rk_d = KCbh; rwa_d = BAW'(bh_w);
              rah_d = cv_e[0]; rzf_d = n_last; rfirst_d = (n_q == 16'd0);
              rbh_d = cv_rd && !ph_q;
              rfw_d = cv_e[0] && (n_q != 16'd0) && (BAW'(n_ptr) == BAW'(bh_w));
              ph_d = 1'b0;
              n_d = n_q + 16'd1;
              if (bh_pair) begin
                b_re3_o = 1'b1; b_raddr3_o = BAW'(n_ptr1);
                rp_d = 1'b1; rzf_d = n_end2;
                n_d = n_q + 16'd2;
              end
            end else begin  // the destination word first, in the source's bank
              b_re_o = 1'b1; b_raddr_o = BAW'(bh_w);
              rv_d = 1'b1; rk_d = KPre;
              ph_d = 1'b1;
            end
          end
        end else begin  // lda / sta / ldb / stb: read now, finish in R
          if (!ph_q) begin
            if (!ins_q[1]) begin
              a_en_o = 1'b1; a_addr_o = AAW'(adr_q[15:1]);
              rv_d = 1'b1; rk_d = ins_q[0] ? KSta : KLda; rah_d = adr_q[0];
              ph_d = 1'b1;
            end else if (!infl_wb) begin
              b_re_o = 1'b1; b_raddr_o = BAW'(adr_q);
              rv_d = 1'b1; rk_d = ins_q[0] ? KStb : KLdb;
              rbh_d = ins_q[2];
              ph_d = 1'b1;
            end
          end
        end
        default: begin  // not an engine instruction: finish at once
          done_o = 1'b1; busy_d = 1'b0;
        end
      endcase
    end
    // the two lanes' advance (fill, vfma, vmac, vaxpy, vmul): by two, finishing on the
    // pair's end, or by one, finishing on the last element
    if (step) begin
      n_d = n_q + (step2 ? 16'd2 : 16'd1);
      if (step2 ? n_end2 : n_last) begin done_o = 1'b1; busy_d = 1'b0; end
    end
  end

  assign r6_o  = ptr_q;
  assign r1_o  = head_data_i[15:0];
  assign w_o   = w_d;
  assign q_o   = q_q;
  assign idle_o = !busy_q && !rv_q && !infl_wb && !infl_tx && !tx_valid_o;

  // dot lane accumulators: written by the FMAC output of a dot MAC
  logic [31:0] acc_d [0:DotLanes-1];
  always_comb begin
    for (int ad = 0; ad < DotLanes; ad = ad + 1) begin
      acc_d[ad] = acc_q[ad];
      if (pv_q[L-1] && pdot_q[L-1] && !pbk_q[L-1] && pln_q[L-1] == LW'(ad)) acc_d[ad] = y;
    end
  end
  // vsum4's odd elements' chains: u_fmac2's results, or u_fmac's one-element issues (n odd)
  logic [31:0] acc2_d [0:DotLanes-1];
  always_comb begin
    for (int ad = 0; ad < DotLanes; ad = ad + 1) begin
      acc2_d[ad] = acc2_q[ad];
      if (pv_q[L-1] && pdot_q[L-1] && pbk_q[L-1] && pln_q[L-1] == LW'(ad)) acc2_d[ad] = y;
      if (p2v_q[L-1] && p2dot_q[L-1] && pln_q[L-1] == LW'(ad)) acc2_d[ad] = y2;
    end
  end

  // the lookup RAM's slots: one is picked as a copy would start (a hit, else the one used
  // less recently, which takes the table), a slot is cleared by a B write into its table
  // (the pick itself sees no engine write in flight)
  function automatic logic lt_in(input logic [BAW-1:0] a, input logic [BAW-1:0] tag);
    logic [BAW-1:0] d;
    d = a - tag;
    lt_in = (d >> 8) == '0;
  endfunction
  always_comb begin
    lv_d = lv_q; ltag_d[0] = ltag_q[0]; ltag_d[1] = ltag_q[1]; lru_d = lru_q; ls_d = ls_q;
    if (lt_pick) begin
      ls_d = lt_h1 ? 1'b1 : lt_h0 ? 1'b0 : lru_q;
      lru_d = !ls_d;
      if (!lt_skip) begin lv_d[ls_d] = 1'b1; ltag_d[ls_d] = BAW'(dat_q[15:0]); end
    end
    for (int k = 0; k < 2; k = k + 1)
      if ((b_we_o && lt_in(b_waddr_o, ltag_d[k])) || (b_we2_o && lt_in(b_waddr2_o, ltag_d[k])) ||
          (cfg_bwe_i && lt_in(cfg_bwaddr_i, ltag_d[k])))
        lv_d[k] = 1'b0;
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      lv_q <= '0; ltag_q[0] <= '0; ltag_q[1] <= '0; lru_q <= 1'b0; ls_q <= 1'b0;
    end else begin
      lv_q <= lv_d; ltag_q[0] <= ltag_d[0]; ltag_q[1] <= ltag_d[1]; lru_q <= lru_d;
      ls_q <= ls_d;
    end
  end

  // ------------------------------------------------------------------ registers
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q <= 1'b0; ins_q <= '0; ra_q <= '0; rb_q <= '0; sa_q <= '0; sb_q <= '0;
      len_q <= '0; ptr_q <= '0; cnt_q <= '0; tid_q <= '0; q_q <= '0; w_q <= '0;
      dat_q <= '0; adr_q <= '0; t_q <= '0; n_q <= '0; aa_q <= '0; ba_q <= '0; ph_q <= 1'b0;
      slot_q <= '0; lanes_q <= '0; gath_q <= 1'b0; first_q <= 1'b0;
      for (int e = 0; e < DotLanes; e = e + 1) begin idx_q[e] <= '0; off_q[e] <= '0; end
      rv_q <= 1'b0; rk_q <= KNone; rwen_q <= 1'b0; rwa_q <= '0; rtx_q <= 1'b0; rcol_q <= '0;
      rah_q <= 1'b0; rp_q <= 1'b0; rv2_q <= 1'b0; rwa2_q <= '0; rbh_q <= 1'b0; rval_q <= '0;
      rln_q <= '0;
      rfirst_q <= 1'b0; rzf_q <= 1'b0; rfw_q <= 1'b0; raw_q <= '0; cw_q <= '0;
      rab_q <= 1'b0; on_q <= '0; cw2_q <= '0; ph2_q <= 1'b0;
      fin_q <= 1'b0; cph_q <= '0; rbk_q <= 1'b0; lo_q <= '0; xv_q <= 1'b0; xheld_q <= 1'b0; xb_q <= '0;
      xwa_q <= '0; tl_q <= '0; xp_q <= 1'b0; xh_q <= 1'b0;
      rlast_q <= 1'b0; rts_q <= 1'b0; rts2_q <= 1'b0;
      for (int e = 0; e < L; e = e + 1) begin
        p2ab_q[e] <= 1'b0; p2v_q[e] <= 1'b0; p2wa_q[e] <= '0; p2dot_q[e] <= 1'b0; pbk_q[e] <= 1'b0;
        pv_q[e] <= 1'b0; pdot_q[e] <= 1'b0; pwen_q[e] <= 1'b0; pab_q[e] <= 1'b0; pwa_q[e] <= '0;
        plast_q[e] <= 1'b0;
        ptx_q[e] <= 1'b0; pcol_q[e] <= '0; pln_q[e] <= '0;
      end
      for (int e = 0; e < DotLanes; e = e + 1) begin acc_q[e] <= '0; acc2_q[e] <= '0; end
    end else begin
      busy_q <= busy_d; ins_q <= ins_d; ra_q <= ra_d; rb_q <= rb_d; sa_q <= sa_d;
      sb_q <= sb_d; len_q <= len_d; ptr_q <= ptr_d; cnt_q <= cnt_d; tid_q <= tid_d;
      q_q <= q_d; w_q <= w_d; dat_q <= dat_d; adr_q <= adr_d; t_q <= t_d; n_q <= n_d;
      aa_q <= aa_d; ba_q <= ba_d; ph_q <= ph_d; slot_q <= slot_d; lanes_q <= lanes_d;
      gath_q <= gath_d; first_q <= first_d;
      for (int e = 0; e < DotLanes; e = e + 1) begin
        idx_q[e] <= idx_d[e]; off_q[e] <= off_d[e];
      end
      rv_q <= rv_d; rk_q <= rk_d; rwen_q <= rwen_d; rwa_q <= rwa_d; rtx_q <= rtx_d;
      rcol_q <= rcol_d; rah_q <= rah_d; rp_q <= rp_d; rv2_q <= rv2_d; rwa2_q <= rwa2_d;
      rbh_q <= rbh_d; rval_q <= rval_d;
      rln_q <= rln_d; rfirst_q <= rfirst_d; rzf_q <= rzf_d; rfw_q <= rfw_d; raw_q <= raw_d;
      cw_q <= cw_d; rab_q <= rab_d; on_q <= on_d; cw2_q <= cw2_d; ph2_q <= ph2_d;
      fin_q <= fin_d; cph_q <= cph_d; rbk_q <= rbk_d; lo_q <= lo_d; xv_q <= xv_d; xheld_q <= xheld_d;
      xb_q <= xb_d; xwa_q <= xwa_d; tl_q <= tl_d; xp_q <= xp_d; xh_q <= xh_d; rts_q <= rts_d;
      rts2_q <= rts2_d; rlast_q <= rlast_d;
      pv_q[0] <= f_valid; pdot_q[0] <= r_acc; pwen_q[0] <= f_valid && rwen_q;
      pab_q[0] <= f_valid && rab_q; plast_q[0] <= rlast_q;
      pwa_q[0] <= rwa_q; ptx_q[0] <= f_valid && rtx_q; pcol_q[0] <= rcol_q; pln_q[0] <= rln_q;
      p2v_q[0] <= rv2_q; p2wa_q[0] <= rwa2_q; p2dot_q[0] <= r2acc; pbk_q[0] <= rbk_q;
      p2ab_q[0] <= rv2_q && rab_q;
      for (int e = 1; e < L; e = e + 1) begin
        p2v_q[e] <= p2v_q[e-1]; p2wa_q[e] <= p2wa_q[e-1]; p2dot_q[e] <= p2dot_q[e-1];
        p2ab_q[e] <= p2ab_q[e-1];
        pbk_q[e] <= pbk_q[e-1];
        pv_q[e] <= pv_q[e-1]; pdot_q[e] <= pdot_q[e-1]; pwen_q[e] <= pwen_q[e-1];
        pab_q[e] <= pab_q[e-1]; plast_q[e] <= plast_q[e-1];
        pwa_q[e] <= pwa_q[e-1]; ptx_q[e] <= ptx_q[e-1]; pcol_q[e] <= pcol_q[e-1];
        pln_q[e] <= pln_q[e-1];
      end
      for (int e = 0; e < DotLanes; e = e + 1) begin
        acc_q[e] <= acc_d[e]; acc2_q[e] <= acc2_d[e];
      end
    end
  end

  // r0 is not an engine operand
  wire unused = &{1'b0, y_valid, y2_valid, regs_i[15:0], lb_last[0], la_hi[0]};

`ifdef FORMAL
  // vsum2's four chains come back through the bypass exactly one round (4 issues) later
  initial assert (FmacLatency == 4);
`endif
endmodule

`default_nettype wire
