// pe_lite - an area-minimal implementation of the PE (docs/architecture.md section 4): the
// same ports, parameters, ISA, config slave, counters and results as pe (bit-exact with
// verif/models/pe_model.c); only the timing differs. It does one thing at a time: a
// microcoded state machine fetches an instruction, reads its operands one per cycle from
// block RAM, and runs vector instructions one element (one multi-cycle MAC, pe_lite_fmac)
// at a time. Not for throughput: an axpy element takes about 14 cycles (measured on the
// board's forward kernel), a scalar instruction 3 to 6.
// The 0xF vector group: vsum2 and cvt.bf on one loop (SVe1 read B, SVe2 round and start the
// FMAC or write A, SVeW wait, SVeS step): vsum2 as four passes over the range, one per
// chain (s0, q0, s1, q1: the elements of one parity), each chain kept in DRAM word 8 + pass,
// then the two combining adds through the result words of B; rsqrt through pe_rsqrt's ROM.
// vfma, vlut, vmac, vdot, vaxpy and cvt.bh on a second loop (SW1 .. SWf, SVeW, SVeS) that
// keeps only the element index k: each element re-reads its operands' base registers from
// DRAM and adds k on the shared adder (B[r[rt]+k], B[r[rd]+k], A[r[rs]+k]; the destination
// B[r6+k] is ba), so the completed group costs states, not pointer registers; vdot swaps its
// two chains through DRAM words 8 and 9 each element, cvt.bh writes one half of a B word.
//
// Storage: IMEM is a 256x16 RAM; the registers r0-r7, the task table and the payloads of
// the queued wavelets share one 32-bit RAM ("DRAM": words 0-7 registers, 32-63 task
// entries, 64.. one per queue slot); flip-flops hold only the queues, in pe_queue as in pe
// but keeping just the headers ({ctrl, color} per slot, which the picker and the chaining
// test read), the pointers and the color -> queue map. The five counters are ten halfwords in a small RAM of their own
// that rotate past one 16-bit adder. A received wavelet's payload waits in a one-entry
// stage register until the DRAM write port is free (the core's writes come first); a queue's
// newest entry is not visible at its head before it is written.
// SRAM A is single port (SPRAM-shaped), SRAM B one bank with one read and one write port;
// both are built as two 16-bit halves so a 16-bit store writes one half.
//
// Config slave: a request is accepted in the cycle cfg_gnt_o is high; a read's data comes
// exactly one cycle later. The core has priority on every memory port: a config access
// waits while the core is in a state that may use that port (the grants depend on the state
// only, for timing), so IMEM and DRAM are never read and written in one cycle and need no
// read-during-write bypass. IMEM reads and register writes wait until
// no task runs; register and task-table writes also wait for the stage register to drain.
// A counter access waits until that counter's low half passes the counters' shared adder (at
// most 9 cycles); the value read counts every event up to the cycle before the grant. Targets
// as pe: 0 A, 1 B, 2 B read-and-clear (both B ports), 3 IMEM, 4 task table, 6 queue map,
// 7 registers, 8 counters; others are accepted, writes ignored, reads return 0.
// After reset the core clears the registers and the task table (64 cycles, config waits).
`default_nettype none

module pe_lite #(
  parameter int unsigned AWords = 16384,  // bf16 elements; A is AWords/2 x 32 physically
  parameter int unsigned BWords = 8192,   // 32-bit words (one bank here)
  parameter int unsigned NumQueues = 4,   // input queues
  parameter int unsigned QueueDepth = 8   // wavelets per input queue
) (
`include "pe_ports.vh"
);
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1;
  localparam int unsigned PtrW = (QueueDepth > 1) ? $clog2(QueueDepth) : 1;
  localparam int unsigned CntW = $clog2(QueueDepth + 1);
  localparam int unsigned Slots = NumQueues * QueueDepth;
  localparam int unsigned DWords = 64 + Slots;
  localparam int unsigned DAW = $clog2(DWords);
  localparam int unsigned AAW = $clog2(AWords / 2);
  localparam int unsigned BAW = $clog2(BWords);

  // ------------------------------------------------------------------ states
  localparam [6:0] SRst = 7'd0, SPick = 7'd1, SPick2 = 7'd2, SPick3 = 7'd3, SFetch = 7'd4,
                   SDec = 7'd5, SLi2 = 7'd6, SAddi2 = 7'd7, SOpB = 7'd8, SAlu3 = 7'd9,
                   SShift = 7'd10, SBr3 = 7'd11, SSend3 = 7'd12, STx = 7'd13, SDj2 = 7'd14,
                   SBlk2 = 7'd15, SMem2 = 7'd16, SLda3 = 7'd17, SSta3 = 7'd18, SLdb3 = 7'd19,
                   SStb3 = 7'd20, SDt0 = 7'd21, SVx1 = 7'd22, SVx2 = 7'd23, SVx3 = 7'd24,
                   SMac = 7'd25, SMacF = 7'd26, SMacW = 7'd27, SStep1 = 7'd28,
                   SStep2 = 7'd29, SAxN = 7'd30, SAxP = 7'd31, SDtE = 7'd32, SDtN = 7'd33,
                   SDtP = 7'd34, SVn1 = 7'd35, SVn2 = 7'd36, SVL = 7'd37, SSv2 = 7'd38,
                   SRvP = 7'd39, SRv2 = 7'd40, SRv3 = 7'd41, SRv4 = 7'd42, SRv5 = 7'd43,
                   SLi1 = 7'd44, SLd3 = 7'd45, SStbA = 7'd46, SVg1 = 7'd47, SVg2 = 7'd48,
                   SVg3 = 7'd49, SVe1 = 7'd50, SVe2 = 7'd51, SVlA = 7'd52, SVlT = 7'd53,
                   SVeW = 7'd54, SVeS = 7'd55, SCa = 7'd56, SCb = 7'd57, SCc = 7'd58,
                   SCd = 7'd59, SCg = 7'd60, SRq2 = 7'd61, SRq3 = 7'd62,
                   // the completed group's element loop (vfma, vlut, vmac, vdot, vaxpy,
                   // cvt.bh) and vdot's combining add
                   SW1 = 7'd63, SW2 = 7'd64, SW3 = 7'd65, SWc1 = 7'd66, SWc2 = 7'd67,
                   SWa = 7'd68, SWf = 7'd69, SWh = 7'd70, SDf1 = 7'd71, SDf2 = 7'd72,
                   SDf3 = 7'd73;

  // one-hot in synthesis (~70 LUT4 fewer: the state decodes in every next-state mux become
  // single bits); Yosys would not re-encode it by itself because of the default -> SRst
  // recovery branch, which one-hot codes lose
  (* fsm_encoding = "one-hot" *) logic [6:0] st_q;
  logic [6:0]  st_d;
  logic [7:0]  pc_q, pc_d;
  logic [31:0] w_q, w_d;        // W
  logic [4:0]  tid_q, tid_d;    // task id of the running task
  logic [QW-1:0] qs_q, qs_d;    // picker scan position; the running task's queue
  logic [15:0] t_q, t_d;        // scratch: first operand, address, dot output pointer
  // addresses are 16-bit sums taken modulo the memory size: only their low bits are kept
  logic [15:0] aa_d, ba_d;
  logic [AAW:0] aa_q;           // A element address
  logic [BAW:0] ba_q;           // B word (element for dot) address
  wire          unused_ad = ^{aa_d, ba_d};  // the bits above the kept ones
  logic [15:0] n_q, n_d;        // elements left
  logic [31:0] acc_q, acc_d;    // dot accumulator, redv payload, transmit payload
  logic        acc_clr;         // acc = 0: a synchronous reset of the flip-flops, not a mux input
  logic        first_q, first_d;  // redv: element 0 takes W; vsum2's combine: the q pair
  logic [15:0] vr_q, vr_d;      // the vector group's element index k (SW1 .. SVeS)
  logic [1:0]  vp_q, vp_d;      // vsum2: the pass (chain {parity, square})
  logic        skip_q, skip_d;  // vsum2: the next element is the other parity's

  // ------------------------------------------------------------------ memories
  logic [15:0] ird;            // IMEM read data = the current instruction
  logic [31:0] drd;            // DRAM read data
  logic [31:0] ard, brd;       // SRAM A, B read data
  wire  [15:0] rv = drd[15:0]; // a register value read from DRAM

  // core requests (combinational from the state)
  logic             i_re;
  logic [7:0]       i_ra;
  logic             d_re, d_we;
  logic [DAW-1:0]   d_ra, d_wa;
  logic [15:0]      d_wd;         // registers and task entries are 16 bits wide
  logic             a_en, a_we;
  logic [AAW-1:0]   a_ad;
  logic [1:0]       a_wm, b_wm;   // halves written (sta, stb write one: no read-modify-write)
  logic             b_re, b_we;
  logic [BAW-1:0]   b_ra, b_wa;
  logic [31:0]      b_wd;

  // ------------------------------------------------------------------ queues
  // pe_queue keeps each wavelet's header ({ctrl, color}, which the picker and the chaining
  // test read); its payload goes to DRAM slot 64 + queue * QueueDepth + pointer
  logic [NumQueues-1:0]      qne;      // queue not empty
  logic [NumQueues*5-1:0]    q_hdr;    // each head's header
  logic [NumQueues*PtrW-1:0] q_hptr;   // each head's pointer
  logic [NumQueues*CntW-1:0] q_cnt;    // each queue's fill
  logic [QW-1:0]             rx_q;     // the queue of the wavelet at rx
  logic [PtrW-1:0]           rx_ptr;   // its pointer there
  logic [QW-1:0]             map_rdata;
  logic                      q_empty;
  wire                       unused_q = q_empty;
  logic            stg_v_q;
  logic [DAW-1:0]  stg_a_q;      // DRAM word of the staged payload
  logic [QW-1:0]   stg_qn_q;     // its queue
  logic [31:0]     stg_d_q;

  logic [NumQueues-1:0] hvalid;
  for (genvar g = 0; g < NumQueues; g = g + 1) begin : g_q
    // the staged entry is its queue's newest: the head only when it is alone
    assign hvalid[g] = qne[g] &&
                       !(stg_v_q && stg_qn_q == QW'(g) && q_cnt[g*CntW +: CntW] == CntW'(1));
  end

  // the stage drains whenever the core does not write DRAM; it accepts a new wavelet when it
  // is empty or draining (state only: rx_ready_o does not depend on rx_valid_i)
  wire drain = stg_v_q && !d_we;
  // accept only into an empty stage: color_ready_o/rx_ready_o then depend on registers only,
  // not on the core's write enable (timing; at most one wavelet every other cycle).
  // color_ready_o[c] = stage empty and queue map[c] not full, registered in pe_queue
  // (RegReady: computed from the next stage, hold_i, and the next counts)
  wire          push = rx_valid_i && rx_ready_o;

  function automatic [DAW-1:0] slot_addr(input [QW-1:0] q, input [PtrW-1:0] p);
    slot_addr = DAW'(64 + 32'(q) * QueueDepth + 32'(p));
  endfunction

  // the head of queue qs_q (the picker's candidate, or the running task's queue)
  wire [PtrW-1:0] h_ptr = q_hptr[32'(qs_q) * PtrW +: PtrW];
  wire [4:0]      h_tid = q_hdr[32'(qs_q) * 5 +: 5];
  wire [DAW-1:0]  h_addr = slot_addr(qs_q, h_ptr);
  wire            h_valid = hvalid[qs_q];
  // the head is a data wavelet of the running task (chaining, redv)
  wire            h_same = h_valid && (h_tid == tid_q) && !h_tid[4];
  logic           pop;

  // ------------------------------------------------------------------ FMAC
  logic        f_start, f_add;
  logic [31:0] f_a, f_c;
  logic [15:0] f_b;
  logic        f_done;
  logic [31:0] f_y;
  logic        f_ready;
  pe_lite_fmac u_fmac (
    .clk_i  (clk_i),
    .rst_ni (rst_ni),
    .start_i(f_start),
    .add_i  (f_add),
    .a_i    (f_a),
    .b_i    (f_b),
    .c_i    (f_c),
    .ready_o(f_ready),
    .done_o (f_done),
    .y_o    (f_y)
  );
  wire unused_f = f_ready;

  // ------------------------------------------------------------------ vector group helpers
  wire  [2:0]  xop = ird[5:3];
  // the element loop SW1 .. SVeS: every operand address is a register (re-read from DRAM
  // each element) plus k, through the shared adder; the destination B[r6 + k] is ba
  wire         v_x0 = (xop == 3'd0);  // (here) vaxpy: [0] = 0, cvt.bh: [0] = 1
  wire         v_vax = v_x0 && !ird[0];
  wire         v_new = (xop == 3'd1) || (xop == 3'd4) || (xop[2:1] == 2'b11) || v_x0;
  wire         v_k0 = (vr_q == 16'd0);
  wire  [15:0] xb;              // bf16(the B word read)
  pe_bf16_rne u_xb (.x_i(brd), .y_o(xb));
  wire  [7:0]  lut_idx;         // vlut: index of x (held in acc[15:0])
  pe_lut_index u_lut (.x_i(acc_q[15:0]), .idx_o(lut_idx));
  wire  [15:0] rsq_y;           // rsqrt of the B word read the cycle before
  pe_rsqrt u_rsqrt (.clk_i(clk_i), .rst_ni(rst_ni), .en_i(1'b1), .x_i(brd), .y_o(rsq_y));

  // ------------------------------------------------------------------ decode
  wire [3:0]  op = ird[15:12];
  wire [2:0]  f_rd = ird[11:9];
  wire [2:0]  f_rs = ird[8:6];
  wire [2:0]  f_rt = ird[5:3];
  wire        is_axpy = (op == 4'hA);
  wire        b_hi = ird[2];
  wire [15:0] a_half = aa_q[0] ? ard[31:16] : ard[15:0];   // A element aa_q
  // Bh element ba_q (dot), or the half ird[2] of a B word (ldb)
  wire        bh_sel = (st_q == SLdb3) ? b_hi : ba_q[0];
  wire [15:0] bh_half = bh_sel ? brd[31:16] : brd[15:0];

  // one 16-bit adder for addresses and arithmetic, one 8-bit adder for the pc
  logic [15:0] ad_x, ad_y;
  logic        ad_ci;
  wire  [15:0] ad_s = ad_x + ad_y + 16'(ad_ci);
  logic [7:0]  pc_off;
  wire  [7:0]  pc_next = pc_q + 8'd1 + pc_off;
  wire  [15:0] n_dec = n_q - 16'd1;
  wire  [15:0] mul_y = t_q * rv;  // low 16 bits: SB_MAC16 with synth_ice40 -dsp
  // and (2), or (3), xor (4) as one function of (t, rv, ird[2], ird[0]): one LUT4 a bit
  wire [15:0] logic_y = ird[2] ? (t_q ^ rv) : ird[0] ? (t_q | rv) : (t_q & rv);

  function automatic [DAW-1:0] reg_addr(input [2:0] r);
    reg_addr = DAW'(r);
  endfunction
  function automatic [DAW-1:0] task_addr(input [4:0] t);
    task_addr = DAW'(32 + 32'(t));
  endfunction

  logic drop, mac;
  // ad_x = t (SAlu3, SShift, SDtE, SDtN), ba (STx, SVL, SRv5, SStep2, SVx3), aa (SStep1),
  // k (SWc1, SW2, SW3, SWh), else rv; carry in 1 in STx, SVL, SRv5, SDtE (increments);
  // registered from the next state
  logic xs_t_q, xs_b_q, xs_a_q, xs_k_q, ci_q;
  // ad_y's selects, and wd_ad_q: DRAM's write data is ad_s (SAddi2, add and sub, SShift,
  // SDj2, SDtN), muxed last into dm_wd (timing: no state decode between the adder and DRAM)
  logic ys_rv_q, ys_inv_q, ys_imm_q, ys_ones_q, ys_lut_q, wd_ad_q;
  wire  alu_addsub = ird[2:1] == 2'b00;  // SAlu3's add (0) and sub (1), decided in SOpB

  always_comb begin
    st_d = st_q;
    pc_d = pc_q;
    w_d = w_q;
    tid_d = tid_q;
    qs_d = qs_q;
    t_d = t_q;
    aa_d = 16'(aa_q);
    ba_d = 16'(ba_q);
    n_d = n_q;
    acc_d = acc_q;
    acc_clr = 1'b0;
    first_d = first_q;
    vr_d = vr_q;
    vp_d = vp_q;
    skip_d = skip_q;
    i_re = 1'b0;
    i_ra = pc_q;
    d_re = 1'b0;
    d_ra = reg_addr(f_rs);
    d_we = 1'b0;
    d_wa = reg_addr(f_rd);
    d_wd = acc_q[15:0];  // vsum2's and vdot's chains (SVe1, SW3); SRst writes 0
    a_en = 1'b0;
    a_we = 1'b0;
    a_ad = aa_q[AAW:1];
    a_wm = 2'b11;
    b_wm = 2'b11;
    b_re = 1'b0;
    b_ra = ba_q[BAW-1:0];
    b_we = 1'b0;
    b_wa = ba_q[BAW-1:0];
    b_wd = acc_q;  // FMAC results and fill's zeros go through acc
    // the adder's first operand and carry from select registers set with the state
    // (timing: no state decode in front of the adder)
    ad_x = xs_t_q ? t_q : xs_b_q ? 16'(ba_q) : xs_a_q ? 16'(aa_q) : xs_k_q ? vr_q : rv;
    // the second operand from select registers too: rv (SAlu3's add, the element and
    // stream address steps), ~rv (sub), addi's immediate, -1 (djnz), the LUT index (SVlA)
    ad_y = ({16{ys_rv_q}} & (ys_inv_q ? ~rv : rv)) | ({16{ys_imm_q}} & {{10{ird[5]}}, ird[5:0]})
           | {16{ys_ones_q}} | ({16{ys_lut_q}} & {8'd0, lut_idx});
    ad_ci = ci_q;
    pc_off = 8'd0;
    f_start = 1'b0;
    f_add = 1'b0;
    f_a = {brd[31:16], a_half};  // [31:16] only read by an add (redv: brd + acc)
    f_b = w_q[15:0];
    f_c = is_axpy ? brd : acc_q;
    pop = 1'b0;
    drop = 1'b0;
    mac = 1'b0;
    case (st_q)
      // clear the registers and the task table (DRAM words 0, 63, 62, .. 1: n counts down)
      SRst: begin
        d_we = 1'b1;
        d_wd = 16'd0;
        d_wa = DAW'(n_q[5:0]);
        n_d = n_dec;
        if (n_q[5:0] == 6'd1) begin
          st_d = SPick;
          qs_d = '0;
        end
      end
      // ---------------------------------------------------------------- picker
      SPick: begin  // look up the task of queue qs_q's head
        // memory addresses and adder operands follow the state only (timing); read enables
        // stay conditional where a state can wait (a config read of DRAM waits on them)
        d_re = h_valid;
        d_ra = task_addr(h_tid);
        if (h_valid) begin
          st_d = SPick2;
        end else qs_d = (32'(qs_q) == NumQueues - 1) ? '0 : qs_q + 1'b1;
      end
      SPick2: begin
        d_re = 1'b1;
        d_ra = h_addr;
        if (!drd[9]) begin  // no task: drop
          pop = 1'b1;
          drop = 1'b1;
          qs_d = (32'(qs_q) == NumQueues - 1) ? '0 : qs_q + 1'b1;
          st_d = SPick;
        end else if (drd[8]) begin  // blocked: try the next queue
          qs_d = (32'(qs_q) == NumQueues - 1) ? '0 : qs_q + 1'b1;
          st_d = SPick;
        end else begin
          pc_d = drd[7:0];
          tid_d = h_tid;
          st_d = SPick3;
        end
      end
      SPick3: begin  // W = the head's payload
        w_d = drd;
        pop = 1'b1;
        st_d = SFetch;
      end
      SFetch: begin
        i_re = 1'b1;
        st_d = SDec;
      end
      // ---------------------------------------------------------------- decode, first step
      SDec: begin
        pc_d = pc_next;
        st_d = SFetch;
        case (op)
          4'h0: begin
            if (!ird[0]) begin  // ret: the picker goes on after this queue
              qs_d = (32'(qs_q) == NumQueues - 1) ? '0 : qs_q + 1'b1;
              st_d = SPick;
            end
          end
          4'h1: begin  // li: the next word (pc + 1) is fetched next
            t_d = 16'(f_rd);
            st_d = SLi1;
          end
          4'h2: begin
            d_re = 1'b1;
            pc_d = pc_q;
            st_d = SAddi2;
          end
          4'h3, 4'h8: begin  // first operand rs ([8:6]; send [6:4])
            d_re = 1'b1;
            d_ra = reg_addr(op[3] ? ird[6:4] : f_rs);
            pc_d = pc_q;
            st_d = SOpB;
          end
          4'h4: begin
            d_we = 1'b1;
            case (ird[1:0])
              2'd0: d_wd = w_q[31:16];
              2'd1: d_wd = w_q[15:0];
              2'd2: d_wd = {11'd0, tid_q};
              default: d_wd = 16'd0;
            endcase
          end
          4'h5: begin
            d_re = 1'b1;
            d_ra = reg_addr(ird[10:8]);
            pc_d = pc_q;
            st_d = SOpB;
          end
          4'h6: begin
            d_re = 1'b1;
            d_ra = reg_addr(f_rd);
            pc_d = pc_q;
            st_d = SDj2;
          end
          4'h7: pc_off = ird[7:0];
          4'h9: begin
            d_re = 1'b1;
            d_ra = task_addr(ird[4:0]);
            pc_d = pc_q;
            st_d = SBlk2;
          end
          4'hA: begin  // axpy: r5, then r1, r2
            d_re = 1'b1;
            d_ra = reg_addr(3'd5);
            ba_d = w_q[31:16];
            pc_d = pc_q;
            st_d = SVx1;
          end
          4'hB: begin  // dot: r6 (output pointer), then r5, r1, r2
            d_re = 1'b1;
            d_ra = reg_addr(3'd6);
            ba_d = w_q[31:16];
            pc_d = pc_q;
            st_d = SDt0;
          end
          4'hC, 4'hD, 4'hE: begin  // redv, sendv, fill: r7 then r6
            d_re = 1'b1;
            d_ra = reg_addr(3'd7);
            first_d = 1'b1;
            pc_d = pc_q;
            st_d = SVn1;
          end
          4'hF: begin
            d_re = 1'b1;
            pc_d = pc_q;
            st_d = SMem2;
          end
          default: ;
        endcase
      end
      SLi1: begin
        i_re = 1'b1;
        st_d = SLi2;
      end
      SLi2: begin
        d_we = 1'b1;
        d_wa = reg_addr(t_q[2:0]);
        d_wd = ird;
        pc_d = pc_next;
        st_d = SFetch;
      end
      SAddi2: begin
        d_we = 1'b1;
        pc_d = pc_next;
        st_d = SFetch;
      end
      SOpB: begin  // t = first operand, read the second: rt ([5:3]; beq [7:5]; send [3:1])
        t_d = rv;
        d_re = 1'b1;
        d_ra = reg_addr(op[3] ? ird[3:1] : op[2] ? ird[7:5] : f_rt);
        st_d = op[3] ? SSend3 : op[2] ? SBr3 : SAlu3;
      end
      SAlu3: begin
        d_we = 1'b1;
        pc_d = pc_next;
        st_d = SFetch;
        case (ird[2:0])
          3'd0, 3'd1: ;  // add, sub: ad_s (ad_y and the carry from the selects)
          3'd2, 3'd3, 3'd4: d_wd = logic_y;
          3'd7: d_wd = mul_y;
          default: begin  // shifts: one bit per cycle
            d_we = 1'b0;
            n_d = rv;  // SShift looks at n[3:0] only
            pc_d = pc_q;
            st_d = SShift;
          end
        endcase
      end
      SShift: begin
        if (n_q[3:0] == 4'd0) begin
          d_we = 1'b1;
          pc_d = pc_next;
          st_d = SFetch;
        end else begin
          t_d = ird[0] ? {t_q[14:0], 1'b0} : {1'b0, t_q[15:1]};  // 5 shl, 6 shr
          n_d = n_dec;
        end
      end
      SBr3: begin
        if ((t_q == rv) != ird[11]) pc_off = {{3{ird[4]}}, ird[4:0]};
        pc_d = pc_next;
        st_d = SFetch;
      end
      SSend3: begin  // send: acc = {rs, rt}; stb: acc = {rd, rd}, B's write data
        // halves assigned apart: the low half's source (drd) is then the same as SRvP's
        acc_d[31:16] = t_q;
        acc_d[15:0] = drd[15:0];
        st_d = op[2] ? SStb3 : STx;
      end
      STx: begin
        if (tx_ready_i) begin
          if (op == 4'h8) begin
            pc_d = pc_next;
            st_d = SFetch;
          end else begin  // sendv, redv: next element
            ba_d = ad_s;
            n_d = n_dec;
            st_d = SVL;
          end
        end
      end
      SDj2: begin
        d_we = 1'b1;
        if (rv != 16'd1) pc_off = ird[7:0];  // rv - 1 != 0, without the adder (timing)
        pc_d = pc_next;
        st_d = SFetch;
      end
      SBlk2: begin
        d_we = 1'b1;
        d_wa = task_addr(ird[4:0]);
        d_wd = {6'd0, drd[9], !ird[11], drd[7:0]};
        pc_d = pc_next;
        st_d = SFetch;
      end
      // ---------------------------------------------------------------- loads, stores
      SMem2: begin  // rv = address (vector group: r[rs])
        t_d = rv;
        aa_d = rv;
        ba_d = rv;
        if (xop == 3'd5) begin  // rsqrt (rt, [2:0], ignored)
          st_d = SLd3;
        end else if (xop == 3'd0 && !(ird[2] && !ird[1])) begin
          case (ird[1:0])
            2'd1: begin d_re = 1'b1; d_ra = reg_addr(f_rd); st_d = SSta3; end
            2'd3: begin d_re = 1'b1; d_ra = reg_addr(f_rd); st_d = SStbA; end
            default: st_d = SLd3;  // loads, rsqrt: the address comes from aa, ba next cycle
          endcase
        end else begin  // the vector group (vaxpy, cvt.bh too): r[rd], r7, r6
          d_re = 1'b1;
          d_ra = reg_addr(f_rd);
          st_d = SVg1;
        end
      end
      SLd3: begin
        if (ird[1] || xop[2]) b_re = 1'b1;
        else a_en = 1'b1;
        st_d = xop[2] ? SRq2 : ird[1] ? SLdb3 : SLda3;
      end
      // ---------------------------------------------------------------- rsqrt
      SRq2: st_d = SRq3;  // pe_rsqrt's ROM reads the word
      SRq3: begin
        d_we = 1'b1;
        d_wd = rsq_y;
        pc_d = pc_next;
        st_d = SFetch;
      end
      // ---------------------------------------------------------------- vector group
      SVg1: begin  // t = r[rd] (base), k = 0
        vr_d = 16'd0;
        t_d = rv;
        aa_d = rv;
        vp_d = 2'd0;
        d_re = 1'b1;
        d_ra = reg_addr(3'd7);
        st_d = SVg2;
      end
      SVg2: begin
        n_d = rv;
        d_re = 1'b1;
        d_ra = reg_addr(3'd6);
        st_d = SVg3;
      end
      SVg3: begin  // a vsum2 pass over the odd elements starts by skipping element 0
        ba_d = rv;
        acc_clr = 1'b1;
        skip_d = vp_q[1];
        st_d = v_new ? SW1 : SVe1;
      end
      SVe1: begin  // read element ba (ad_s = t + 1: vsum2's second result word)
        if (n_q == 16'd0) begin
          if (xop != 3'd2) begin
            pc_d = pc_next;
            st_d = SFetch;
          end else if (vp_q != 2'd3) begin  // vsum2: chain vp to DRAM, the next pass
            d_we = 1'b1;
            d_wa = DAW'(8 + 32'(vp_q));
            vp_d = vp_q + 2'd1;
            d_re = 1'b1;
            d_ra = reg_addr(3'd7);
            st_d = SVg2;
          end else begin  // acc = q1: combine the q pair into B[t + 1], then the s pair
            vp_d = 2'd0;
            first_d = 1'b1;
            ba_d = ad_s;
            st_d = SCc;
          end
        end else if (skip_q) begin
          st_d = SVeS;
        end else begin
          b_re = 1'b1;
          st_d = SVe2;
        end
      end
      SVe2: begin  // ad_s = aa + 1
        case (xop)
          3'd2: begin  // vsum2 (and its combining adds): add(x, acc) or fmac(x, x, acc)
            f_start = 1'b1;
            mac = 1'b1;
            f_add = !vp_q[0];
            f_a = vp_q[0] ? {brd[31:16], xb} : brd;
            f_b = xb;
            st_d = SVeW;
          end
          3'd3: begin  // cvt.bf: A element aa = bf16(x)
            a_en = 1'b1;
            a_we = 1'b1;
            a_wm = aa_q[0] ? 2'b10 : 2'b01;
            aa_d = ad_s;
            st_d = SVeS;
          end
          default: ;  // (vfma and vlut run in the element loop)
        endcase
      end
      SVlA: begin  // read the table word t + idx(x) (ad_x = t)
        b_re = 1'b1;
        b_ra = ad_s[BAW-1:0];
        st_d = SVlT;
      end
      SVlT: begin  // fmac(slope, x, intercept << 16)
        f_start = 1'b1;
        mac = 1'b1;
        f_a = {brd[31:16], brd[31:16]};
        f_b = acc_q[15:0];
        f_c = {brd[15:0], 16'd0};
        st_d = SVeW;
      end
      SVeW: begin  // n = 0 only in vsum2's combine
        if (f_done) begin
          acc_d = f_y;
          st_d = (n_q == 16'd0) ? SCg : SVeS;
        end
      end
      SVeS: begin  // write the result (vfma, vlut, vmac, vaxpy), step (ad_s = ba + 1)
        if (xop == 3'd1 || xop == 3'd4 || xop == 3'd6 || v_vax) b_we = 1'b1;
        skip_d = (xop == 3'd2) && !skip_q;
        ba_d = ad_s;
        n_d = n_dec;
        vr_d = vr_q + 16'd1;
        st_d = v_new ? SW1 : SVe1;
      end
      // ---------------------------------------------------------------- the element loop
      SW1: begin  // element k: read the B source's register (vmac: c's, r[rd], first)
        d_ra = (xop == 3'd6) ? reg_addr(f_rd) : v_x0 ? reg_addr(3'd6) : reg_addr(ird[2:0]);
        if (n_q == 16'd0) begin
          if (xop == 3'd7) st_d = SDf1;
          else begin
            pc_d = pc_next;
            st_d = SFetch;
          end
        end else begin
          d_re = 1'b1;
          st_d = (xop == 3'd6) ? SWc1 : SW2;
        end
      end
      SWc1: begin  // vmac: read c = B[r[rd] + k] (ad_x = k)
        b_re = 1'b1;
        b_ra = ad_s[BAW-1:0];
        st_d = SWc2;
      end
      SWc2: begin  // vmac: acc = c; r[rt]
        acc_d = brd;
        d_re = 1'b1;
        d_ra = reg_addr(ird[2:0]);
        st_d = SW2;
      end
      SW2: begin  // read x = B[r[src] + k] (ad_x = k); r[rs] (A base; vfma's shift)
        b_re = 1'b1;
        b_ra = ad_s[BAW-1:0];
        d_re = 1'b1;
        st_d = SW3;
      end
      SW3: begin  // x in brd; aa = r[rs] + k (ad_x = k)
        aa_d = ad_s;
        st_d = SWa;
        case (xop)
          3'd1: begin  // vfma: fmac(r[rd], bf16(x), r[rs] << 16)
            f_start = 1'b1;
            mac = 1'b1;
            f_a = {brd[31:16], t_q};
            f_b = xb;
            f_c = {rv, 16'd0};
            st_d = SVeW;
          end
          3'd4: begin  // vlut: x to acc, then the table word
            acc_d = {xb, xb};
            st_d = SVlA;
          end
          3'd7: begin  // vdot: chain !k[0] to DRAM 8 + !k[0], read chain k[0]
            d_we = 1'b1;
            d_wa = DAW'(8 + 32'(!vr_q[0]));
            d_re = 1'b1;
            d_ra = DAW'(8 + 32'(vr_q[0]));
          end
          3'd0: begin
            if (ird[0]) begin  // cvt.bh: the half-word write next, at r[rd] + k
              acc_d = {xb, xb};
              d_re = 1'b1;
              d_ra = reg_addr(f_rd);
              st_d = SWh;
            end else begin  // vaxpy: r[rd]
              d_re = 1'b1;
              d_ra = reg_addr(f_rd);
            end
          end
          default: ;
        endcase
      end
      SWa: begin  // read A; vdot: acc = chain k[0] (+0 for k = 0); vaxpy: acc = r[rd]
        a_en = 1'b1;
        if (xop == 3'd7 || v_x0) begin
          acc_d = drd;
          if (xop == 3'd7 && v_k0) acc_clr = 1'b1;
        end
        st_d = SWf;
      end
      SWf: begin  // vmac, vdot: fmac(A, bf16(x), acc); vaxpy: fmac(A, r[rd], B)
        f_start = 1'b1;
        mac = 1'b1;
        if (v_vax) begin
          f_b = acc_q[15:0];
          f_c = brd;
        end else begin
          f_b = xb;
        end
        st_d = SVeW;
      end
      SWh: begin  // cvt.bh: Bh[r[rd] + k] = bf16(x) (ad_x = k)
        b_we = 1'b1;
        b_wa = ad_s[BAW:1];
        b_wm = ad_s[0] ? 2'b10 : 2'b01;
        st_d = SVeS;
      end
      // vdot's combine: B[r[rd]] = acc (one chain), acc = the other (DRAM 8 + k[0], +0 when
      // r7 = 0), add, then SCg writes the sum to B[ba = r[rd]] (ad_x = t)
      SDf1: begin
        b_we = 1'b1;
        b_wa = t_q[BAW-1:0];
        ba_d = ad_s;
        first_d = 1'b0;
        d_re = 1'b1;
        d_ra = DAW'(8 + 32'(vr_q[0]));
        st_d = SDf2;
      end
      SDf2: begin
        acc_d = drd;
        if (v_k0) acc_clr = 1'b1;
        b_re = 1'b1;
        st_d = SDf3;
      end
      SDf3: begin
        f_start = 1'b1;
        f_add = 1'b1;
        f_a = brd;
        mac = 1'b1;
        st_d = SVeW;
      end
      // vsum2's combine: B[ba] = one chain (acc), acc = the other (DRAM), add, B[ba] = sum
      SCa: begin  // the s pair: s1
        d_re = 1'b1;
        d_ra = DAW'(10);
        st_d = SCb;
      end
      SCb: begin
        acc_d = drd;
        st_d = SCc;
      end
      SCc: begin  // B[ba] = acc (q1 or s1); read q0 or s0
        b_we = 1'b1;
        d_re = 1'b1;
        d_ra = first_q ? DAW'(9) : DAW'(8);
        st_d = SCd;
      end
      SCd: begin
        acc_d = drd;
        b_re = 1'b1;
        st_d = SVe2;  // vp = 0: the add
      end
      SCg: begin  // B[ba] = the sum; after the q pair the s pair at ba = t (ad_x = t)
        b_we = 1'b1;
        if (first_q) begin
          first_d = 1'b0;
          ba_d = ad_s;
          st_d = SCa;
        end else begin
          pc_d = pc_next;
          st_d = SFetch;
        end
      end
      SLda3: begin
        d_we = 1'b1;
        d_wd = a_half;
        pc_d = pc_next;
        st_d = SFetch;
      end
      SSta3: begin
        a_en = 1'b1;
        a_we = 1'b1;
        a_wm = aa_q[0] ? 2'b10 : 2'b01;
        pc_d = pc_next;
        st_d = SFetch;
      end
      SLdb3: begin
        d_we = 1'b1;
        d_wd = bh_half;
        pc_d = pc_next;
        st_d = SFetch;
      end
      SStbA: begin  // t = rd, read rd again: SSend3 makes acc = {rd, rd}
        t_d = rv;
        d_re = 1'b1;
        d_ra = reg_addr(f_rd);
        st_d = SSend3;
      end
      SStb3: begin  // B's write data is acc (its half b_hi written)
        b_we = 1'b1;
        b_wm = b_hi ? 2'b10 : 2'b01;
        pc_d = pc_next;
        st_d = SFetch;
      end
      // ---------------------------------------------------------------- axpy, dot
      SDt0: begin  // t = r6: the output pointer
        t_d = rv;
        d_re = 1'b1;
        d_ra = reg_addr(3'd5);
        st_d = SVx1;
      end
      SVx1: begin  // rv = r5
        n_d = rv;
        d_re = 1'b1;
        d_ra = reg_addr(3'd1);
        if (is_axpy && rv == 16'd0) begin
          pc_d = pc_next;
          st_d = SFetch;
        end else begin
          st_d = SVx2;
        end
      end
      SVx2: begin
        aa_d = rv;
        acc_clr = 1'b1;
        d_re = 1'b1;
        d_ra = reg_addr(3'd2);
        st_d = SVx3;
      end
      SVx3: begin  // ba = idx + r2 (ad_x = ba)
        ba_d = ad_s;
        st_d = (n_q == 16'd0) ? SDtE : SMac;
      end
      SMac: begin
        a_en = 1'b1;
        b_re = 1'b1;
        if (!is_axpy) b_ra = ba_q[BAW:1];
        st_d = SMacF;
      end
      SMacF: begin
        f_start = 1'b1;
        mac = 1'b1;
        if (!is_axpy) f_b = bh_half;
        st_d = SMacW;
      end
      SMacW: begin
        d_re = 1'b1;
        d_ra = reg_addr(3'd3);
        if (f_done) begin
          acc_d = f_y;
          n_d = n_dec;
          st_d = SStep1;
        end
      end
      SStep1: begin  // axpy: B[ba] = the result
        if (is_axpy) b_we = 1'b1;
        aa_d = ad_s;
        d_re = 1'b1;
        d_ra = reg_addr(3'd4);
        st_d = SStep2;
      end
      SStep2: begin
        ba_d = ad_s;
        st_d = (n_q != 16'd0) ? SMac : is_axpy ? SAxN : SDtE;
      end
      SAxN: begin  // chain the next data wavelet of this task
        d_re = h_same;
        d_ra = h_addr;
        if (h_same) begin
          st_d = SAxP;
        end else begin
          pc_d = pc_next;
          st_d = SFetch;
        end
      end
      SAxP: begin
        w_d = drd;
        ba_d = drd[31:16];
        pop = 1'b1;
        d_re = 1'b1;
        d_ra = reg_addr(3'd5);
        st_d = SVx1;
      end
      SDtE: begin  // B[t] = acc, t++
        b_we = 1'b1;
        b_wa = t_q[BAW-1:0];
        t_d = ad_s;
        st_d = SDtN;
      end
      SDtN: begin
        d_re = h_same;
        d_ra = h_addr;
        if (h_same) begin
          st_d = SDtP;
        end else begin  // r6 = t
          d_we = 1'b1;
          d_wa = reg_addr(3'd6);
          pc_d = pc_next;
          st_d = SFetch;
        end
      end
      SDtP: begin
        ba_d = drd[31:16];
        pop = 1'b1;
        d_re = 1'b1;
        d_ra = reg_addr(3'd5);
        st_d = SVx1;
      end
      // ---------------------------------------------------------------- redv, sendv, fill
      SVn1: begin  // rv = r7
        n_d = rv;
        d_re = 1'b1;
        d_ra = reg_addr(3'd6);
        st_d = SVn2;
      end
      SVn2: begin
        ba_d = rv;
        acc_clr = 1'b1;  // fill writes acc; sendv and redv load it before use
        st_d = SVL;
      end
      SVL: begin
        d_ra = h_addr;
        if (n_q == 16'd0) begin
          pc_d = pc_next;
          st_d = SFetch;
        end else begin
          case (op)
            4'hE: begin  // fill
              b_we = 1'b1;
              ba_d = ad_s;
              n_d = n_dec;
            end
            4'hD: begin
              b_re = 1'b1;
              st_d = SSv2;
            end
            default: begin  // redv: W, then the next data wavelets of this task
              if (first_q) begin
                acc_d = w_q;
                first_d = 1'b0;
                st_d = SRv2;
              end else if (h_same) begin
                d_re = 1'b1;
                st_d = SRvP;
              end
            end
          endcase
        end
      end
      SSv2: begin
        acc_d = brd;
        st_d = STx;
      end
      SRvP: begin
        acc_d = drd;
        pop = 1'b1;
        st_d = SRv2;
      end
      SRv2: begin
        b_re = 1'b1;
        st_d = SRv3;
      end
      SRv3: begin
        f_start = 1'b1;
        f_add = 1'b1;  // brd + acc
        f_a = brd;
        mac = 1'b1;
        st_d = SRv4;
      end
      SRv4: begin
        if (f_done) begin
          acc_d = f_y;
          st_d = ird[7] ? SRv5 : STx;
        end
      end
      SRv5: begin  // redv.st: B[ba] = acc, next element
        b_we = 1'b1;
        ba_d = ad_s;
        n_d = n_dec;
        st_d = SVL;
      end
      default: st_d = SRst;
    endcase
  end

  always_ff @(posedge clk_i) begin
    xs_t_q <= (st_d == SAlu3) || (st_d == SShift) || (st_d == SDtE) || (st_d == SDtN)
              || (st_d == SVe1) || (st_d == SVlA) || (st_d == SCg) || (st_d == SDf1);
    // k on the adder's first operand (the register on the second: rv through ad_y's
    // existing input, so the element loop adds no input to ad_y's mux)
    xs_k_q <= (st_d == SWc1) || (st_d == SW2) || (st_d == SW3) || (st_d == SWh);
    xs_b_q <= (st_d == STx) || (st_d == SVL) || (st_d == SRv5) || (st_d == SStep2)
              || (st_d == SVx3) || (st_d == SVeS);
    xs_a_q <= (st_d == SStep1) || (st_d == SVe2);
    ci_q <= (st_d == STx) || (st_d == SVL) || (st_d == SRv5) || (st_d == SDtE)
            || (st_d == SVe1) || (st_d == SVeS) || (st_d == SVe2)
            || ((st_d == SAlu3) && ird[2:0] == 3'd1);
    ys_rv_q <= ((st_d == SAlu3) && alu_addsub) || (st_d == SWc1) || (st_d == SW2)
               || (st_d == SW3) || (st_d == SWh) || (st_d == SVx3) || (st_d == SStep1)
               || (st_d == SStep2);
    ys_inv_q <= (st_d == SAlu3) && ird[2:0] == 3'd1;
    ys_imm_q <= st_d == SAddi2;
    ys_ones_q <= st_d == SDj2;
    ys_lut_q <= st_d == SVlA;
    wd_ad_q <= (st_d == SAddi2) || ((st_d == SAlu3) && alu_addsub) || (st_d == SShift)
               || (st_d == SDj2) || (st_d == SDtN);
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_q <= SRst;
      n_q <= '0;
      qs_q <= '0;
    end else begin
      st_q <= st_d;
      n_q <= n_d;
      qs_q <= qs_d;
    end
  end
  always_ff @(posedge clk_i) begin
    pc_q <= pc_d;
    w_q <= w_d;
    tid_q <= tid_d;
    t_q <= t_d;
    aa_q <= aa_d[AAW:0];
    ba_q <= ba_d[BAW:0];
    acc_q <= acc_clr ? 32'd0 : acc_d;
    first_q <= first_d;
    vr_q <= vr_d;
    vp_q <= vp_d;
    skip_q <= skip_d;
  end

  wire running = (st_q != SRst) && (st_q != SPick) && (st_q != SPick2) && (st_q != SPick3);
  assign tx_valid_o = (st_q == STx);
  assign tx_data_o = {(op == 4'h8) && ird[7], ird[11:8], acc_q};

  // ------------------------------------------------------------------ queue state
  wire stg_v_d = push || (stg_v_q && !drain);
  wire map_we = cfg_gnt_o && cfg_we_i && cfg_target_i == 4'd6;
  pe_queue #(
    .NumQueues (NumQueues),
    .QueueDepth(QueueDepth),
    .Width     (5),
    .RegReady  (1'b1)
  ) u_queue (
    .clk_i        (clk_i),
    .rst_ni       (rst_ni),
    .rx_valid_i   (rx_valid_i),
    .rx_data_i    (rx_data_i),
    .rx_ready_o   (rx_ready_o),
    .color_ready_o(color_ready_o),
    .hold_i       (stg_v_d),     // a stage that stays full takes nothing next cycle
    .next_color_i (4'd0),
    .push_i       (1'b0),
    .push_q_i     ('0),
    .push_q_o     (rx_q),
    .push_ptr_o   (rx_ptr),
    .map_we_i     (map_we),
    .map_addr_i   (cfg_addr_i[3:0]),
    .map_wdata_i  (cfg_wdata_i[QW-1:0]),
    .map_rdata_o  (map_rdata),
    .head_valid_o (qne),
    .head_data_o  (q_hdr),
    .head_ptr_o   (q_hptr),
    .count_o      (q_cnt),
    .pop_i        (pop),
    .pop_q_i      (qs_q),
    .empty_o      (q_empty)
  );
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) stg_v_q <= 1'b0;
    else stg_v_q <= stg_v_d;
  end
  always_ff @(posedge clk_i) begin
    if (push) begin
      stg_a_q <= slot_addr(rx_q, rx_ptr);
      stg_qn_q <= rx_q;
      stg_d_q <= rx_data_i[31:0];
    end
  end

  // ------------------------------------------------------------------ config decode, grants
  wire  c_a = (cfg_target_i == 4'd0);
  wire  c_b = (cfg_target_i == 4'd1);
  wire  c_bc = (cfg_target_i == 4'd2);
  wire  c_i = (cfg_target_i == 4'd3);
  wire  c_t = (cfg_target_i == 4'd4);
  wire  c_r = (cfg_target_i == 4'd7);
  wire  c_n = (cfg_target_i == 4'd8);
  wire  c_d = c_t || c_r;  // DRAM targets
  logic g_a, g_b, g_bc, g_i, g_d;
  logic [3:0] cpos_q;      // the counter halfword at the counters' adder (see counters)
  wire  [2:0] cid = cpos_q[3:1];
  wire        chi = cpos_q[0];
  // The grants follow the state only (timing: no path from the core's data-dependent
  // decisions through cfg_gnt_o into the config chain and the host port): a port is busy
  // in every state in which the core may use it (a superset of the cycles it does; SPick
  // uses DRAM only when a head waits, so an idle PE still takes config accesses).
  wire st_fetch = (st_q == SFetch) || (st_q == SDec) || (st_q == SLi1);
  wire d_busy = (st_q == SPick) ? h_valid
              : (st_q == SRst) || (st_q == SPick2) || (st_q == SDec) || (st_q == SLi2)
                || (st_q == SAddi2) || (st_q == SOpB) || (st_q == SAlu3) || (st_q == SShift)
                || (st_q == SDj2) || (st_q == SBlk2) || (st_q == SMem2) || (st_q == SLda3)
                || (st_q == SLdb3) || (st_q == SStbA) || (st_q == SDt0) || (st_q == SVx1)
                || (st_q == SVx2)
                || (st_q == SMacW) || (st_q == SStep1) || (st_q == SAxN) || (st_q == SAxP)
                || (st_q == SDtN) || (st_q == SDtP) || (st_q == SVn1) || (st_q == SVL)
                || (st_q == SRq3) || (st_q == SVg1) || (st_q == SVg2) || (st_q == SVe1)
                || (st_q == SCa) || (st_q == SCc) || (st_q == SW1) || (st_q == SW2)
                || (st_q == SWc2) || (st_q == SW3) || (st_q == SDf1);
  wire a_busy = (st_q == SLd3) || (st_q == SSta3) || (st_q == SMac) || (st_q == SVe2)
                || (st_q == SWa);
  wire br_busy = (st_q == SLd3) || (st_q == SMac) || (st_q == SVL) || (st_q == SRv2)
                 || (st_q == SVe1) || (st_q == SVlA) || (st_q == SCd) || (st_q == SWc1)
                 || (st_q == SW2) || (st_q == SDf2)
                 // x (and vaxpy's B word) stays in brd until SWf: no config read before
                 || (st_q == SW3) || (st_q == SWa);
  wire bw_busy = (st_q == SStb3) || (st_q == SStep1) || (st_q == SDtE) || (st_q == SVL)
                 || (st_q == SRv5) || (st_q == SVeS) || (st_q == SCc) || (st_q == SCg)
                 || (st_q == SWh) || (st_q == SDf1);
`ifdef FORMAL
  // the grants' busy flags cover every cycle in which the core uses a port (checked in the
  // benches: tb_pe_lite builds with --assert -DFORMAL)
  always_comb if (rst_ni) begin
    assert (!(d_re || d_we) || d_busy);
    assert (!a_en || a_busy);
    assert (!b_re || br_busy);
    assert (!b_we || bw_busy);
    assert (!i_re || st_fetch);
  end
`endif
  always_comb begin
    g_a = !a_busy;
    g_b = cfg_we_i ? !bw_busy : !br_busy;
    g_bc = !bw_busy && !br_busy;
    // IMEM and DRAM never see a read and a write of one word in a cycle (no bypass)
    g_i = cfg_we_i ? !st_fetch : !running;
    g_d = !d_busy && (!cfg_we_i || (!stg_v_q && (c_t || !running)));
    cfg_gnt_o = cfg_req_i;
    if (c_a) cfg_gnt_o = cfg_req_i && g_a;
    if (c_b) cfg_gnt_o = cfg_req_i && g_b;
    if (c_bc && !cfg_we_i) cfg_gnt_o = cfg_req_i && g_bc;
    if (c_i) cfg_gnt_o = cfg_req_i && g_i;
    if (c_d) cfg_gnt_o = cfg_req_i && g_d;
    if (c_n && cfg_addr_i < 16'd5) cfg_gnt_o = cfg_req_i && (cfg_addr_i[2:0] == cid) && !chi;
  end
  wire cg = cfg_req_i && cfg_gnt_o;
  wire cfg_a = cg && c_a;
  wire cfg_bw = cg && c_b && cfg_we_i;
  wire cfg_br = cg && (c_b || c_bc) && !cfg_we_i;
  wire cfg_bc = cg && c_bc && !cfg_we_i;
  wire cfg_dw = cg && c_d && cfg_we_i;
  wire cfg_dr = cg && c_d && !cfg_we_i;
  wire cfg_iw = cg && c_i && cfg_we_i;
  wire cfg_ir = cg && c_i && !cfg_we_i;
  wire [DAW-1:0] cfg_da = c_t ? task_addr(cfg_addr_i[4:0]) : reg_addr(cfg_addr_i[2:0]);

  // ------------------------------------------------------------------ memories
  sram_1r1w #(.Depth(256), .Width(16), .OldOnCollide(1'b0)) u_imem (
    .clk_i  (clk_i),
    .we_i   (cfg_iw),
    .waddr_i(cfg_addr_i[7:0]),
    .wdata_i(cfg_wdata_i[15:0]),
    .re_i   (i_re || cfg_ir),
    .raddr_i(i_re ? i_ra : cfg_addr_i[7:0]),
    .rdata_o(ird)
  );

  logic           dm_we;
  logic [DAW-1:0] dm_wa;
  logic [31:0]    dm_wd;
  always_comb begin
    // DRAM's high half matters only in payload slots (the core and the config port read
    // registers and task entries from the low half): it always takes the staged payload's
    dm_we = 1'b1;
    dm_wa = d_wa;
    // (vsum2 stores a whole chain in SVe1, vdot in SW3)
    dm_wd = {(st_q == SVe1 || st_q == SW3) ? acc_q[31:16] : stg_d_q[31:16], d_wd};
    if (d_we && wd_ad_q) dm_wd[15:0] = ad_s;
    if (!d_we) begin
      if (drain) begin
        dm_wa = stg_a_q;
        dm_wd = stg_d_q;
      end else begin
        dm_we = cfg_dw;
        dm_wa = cfg_da;
        dm_wd = {stg_d_q[31:16], c_t ? {6'd0, cfg_wdata_i[9:0]} : cfg_wdata_i[15:0]};
      end
    end
  end
  sram_1r1w #(.Depth(DWords), .Width(32), .OldOnCollide(1'b0)) u_dram (
    .clk_i  (clk_i),
    .we_i   (dm_we),
    .waddr_i(dm_wa),
    .wdata_i(dm_wd),
    .re_i   (d_re || cfg_dr),
    .raddr_i(d_re ? d_ra : cfg_da),
    .rdata_o(drd)
  );

  // A and B as two 16-bit halves each (the same SPRAMs and EBRs a 32-bit instance uses), so
  // sta and stb write one half instead of merging it into the word read back
  for (genvar g = 0; g < 2; g = g + 1) begin : g_half
    sram_sp #(.Depth(AWords / 2), .Width(16)) u_sram_a (
      .clk_i  (clk_i),
      .en_i   ((a_en && (!a_we || a_wm[g])) || cfg_a),
      .we_i   (a_en ? a_we : cfg_we_i),
      .addr_i (a_en ? a_ad : cfg_addr_i[AAW-1:0]),
      .wdata_i(a_en ? ((st_q == SVe2) ? xb : rv) : cfg_wdata_i[g*16 +: 16]),
      .rdata_o(ard[g*16 +: 16])
    );

    sram_1r1w #(.Depth(BWords), .Width(16)) u_sram_b (
      .clk_i  (clk_i),
      .we_i   ((b_we && b_wm[g]) || cfg_bw || cfg_bc),
      .waddr_i(b_we ? b_wa : cfg_addr_i[BAW-1:0]),
      .wdata_i(b_we ? b_wd[g*16 +: 16] : (cfg_bc ? 16'd0 : cfg_wdata_i[g*16 +: 16])),
      .re_i   (b_re || cfg_br),
      .raddr_i(b_re ? b_ra : cfg_addr_i[BAW-1:0]),
      .rdata_o(brd[g*16 +: 16])
    );
  end

  // ------------------------------------------------------------------ counters
  // The five 32-bit counters live in a RAM as ten halfwords (counter i: low half at 2i, high
  // at 2i + 1) that rotate past one 16-bit adder, one halfword per cycle: the low half of
  // counter i adds the increments gathered in a 4-bit pending count since its last visit (at
  // most 10), the high half the carry. The sum is written back one cycle later (registered
  // write data; the ring reads one ahead, so a read and a write never meet). A config access
  // to counter i is granted while its low half is at the adder (it waits at most 9 cycles);
  // a read returns {the high half's sum, the low half's} in the next cycle: exact up to the
  // cycle before the grant. A clear (ctr_clear_i, and reset) marks every halfword zero: its
  // next visit adds to 0 instead of the RAM word; a config write clears one counter.
  wire  [4:0] cnt_inc = {tx_valid_o && tx_ready_i, push, drop, running, mac};
  logic [3:0]  cwa_q;          // the halfword written this cycle (cpos one cycle ago)
  logic        cwe_q;          // cwa_q/cs_q hold a sum (not right after reset)
  logic [15:0] cs_q;           // that sum
  logic        cc_q;           // its carry (into the high half)
  logic [3:0]  czn_q;          // the next czn_q visits read 0 (a clear of all counters)
  logic        cz1_q;          // the next visit reads 0 (the high half of a cleared counter)
  logic [3:0]  pend_q [0:4];   // increments of counter i not yet in the RAM
  logic [15:0] crd;            // RAM read data: halfword cpos_q
  wire  [3:0]  cnext = (cpos_q == 4'd9) ? 4'd0 : cpos_q + 4'd1;
  logic [4:0]  cvis;           // counter i's low half is at the adder
  for (genvar gc = 0; gc < 5; gc = gc + 1) begin : g_cvis
    assign cvis[gc] = (cpos_q == 4'(2 * gc));
  end
  wire        cnt_clr1 = cg && c_n && cfg_we_i && (cfg_addr_i < 16'd5);  // counter cid, low
  // the addend: the visited low half's pending count (AND-OR over the one-hot visit), or the
  // carry into a high half
  wire [3:0]  cadd = ({4{cvis[0]}} & pend_q[0]) | ({4{cvis[1]}} & pend_q[1])
                   | ({4{cvis[2]}} & pend_q[2]) | ({4{cvis[3]}} & pend_q[3])
                   | ({4{cvis[4]}} & pend_q[4]) | {3'd0, chi && cc_q};
  wire [16:0] csum = {1'b0, (czn_q != 4'd0 || cz1_q) ? 16'd0 : crd} + {13'd0, cadd};
  sram_1r1w #(.Depth(10), .Width(16), .OldOnCollide(1'b0)) u_cnt (
    .clk_i  (clk_i),
    .we_i   (cwe_q),
    .waddr_i(cwa_q),
    .wdata_i(cs_q),
    .re_i   (1'b1),
    .raddr_i(cnext),
    .rdata_o(crd)
  );
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cpos_q <= 4'd0;
      cwe_q <= 1'b0;
      czn_q <= 4'd10;
      cz1_q <= 1'b0;
      cc_q <= 1'b0;
      for (int ci = 0; ci < 5; ci = ci + 1) pend_q[ci] <= '0;
    end else begin
      cpos_q <= cnext;
      cwe_q <= 1'b1;
      czn_q <= ctr_clear_i ? 4'd10 : (czn_q != 4'd0) ? czn_q - 4'd1 : 4'd0;
      cz1_q <= cnt_clr1;
      cc_q <= csum[16] && !cnt_clr1 && !ctr_clear_i;
      // the low half's visit takes the pending count; this cycle's increment starts the next
      for (int ci = 0; ci < 5; ci = ci + 1) begin
        if (ctr_clear_i || (cvis[ci] && (cnt_clr1 || !cnt_inc[ci]))) pend_q[ci] <= 4'd0;
        else if (cvis[ci]) pend_q[ci] <= 4'd1;
        else if (cnt_inc[ci]) pend_q[ci] <= pend_q[ci] + 4'd1;
      end
    end
  end
  always_ff @(posedge clk_i) begin
    cwa_q <= cpos_q;
    cs_q <= cnt_clr1 ? 16'd0 : csum[15:0];
  end

  // ------------------------------------------------------------------ config responses
  // rsrc: 0 zero, 1 A, 2 B, 3 IMEM, 4 DRAM, 5 queue map, 6 counter
  logic [2:0] rsrc_q, rsrc_d;
  logic [QW-1:0] mrd_q;     // the queue map entry read (the map does not change in between)
  logic       rvalid_q;
  always_comb begin
    rsrc_d = 3'd0;
    case (cfg_target_i)
      4'd0: rsrc_d = 3'd1;
      4'd1, 4'd2: rsrc_d = 3'd2;
      4'd3: rsrc_d = 3'd3;
      4'd4, 4'd7: rsrc_d = 3'd4;
      4'd6: rsrc_d = 3'd5;
      4'd8: rsrc_d = (cfg_addr_i < 16'd5) ? 3'd6 : 3'd0;
      default: ;
    endcase
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rvalid_q <= 1'b0;
      rsrc_q <= '0;
      mrd_q <= '0;
    end else begin
      rvalid_q <= cg && !cfg_we_i;
      rsrc_q <= rsrc_d;
      mrd_q <= map_rdata;
    end
  end
  always_comb begin
    case (rsrc_q)
      3'd1: cfg_rdata_o = ard;
      3'd2: cfg_rdata_o = brd;
      3'd3: cfg_rdata_o = {16'd0, ird};
      3'd4: cfg_rdata_o = {16'd0, drd[15:0]};
      3'd5: cfg_rdata_o = 32'(mrd_q);
      3'd6: cfg_rdata_o = {csum[15:0], cs_q};
      default: cfg_rdata_o = 32'd0;
    endcase
  end
  assign cfg_rvalid_o = rvalid_q;

  assign idle_o = (st_q == SPick) && (qne == '0) && !stg_v_q;
  assign mac_busy_o = mac;
endmodule

`default_nettype wire
