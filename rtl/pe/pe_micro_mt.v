// pe_micro_mt - N micro-coded PEs run by one micro-machine, a barrel: the machine takes the PEs
// in turn, one micro-instruction each per cycle, so PE p issues every N-th cycle (a CDC 6600
// peripheral-processor barrel). Each PE keeps everything that makes it a PE: its own IMEM, S
// RAM, A and B (one single-port memory M each), input queues, receive stage, colour map,
// counters, config slave, router port and FPU request. What the PEs share is the logic that
// only one of them uses at a time: the micro-program ROM, the sequencer, the address and
// operand multiplexers and the ALU. The micro-program (rtl/pe/pe_micro.us, assembled into
// pe_micro_rom.v) is written for one PE on a 16-bit accumulator machine and every PE runs it
// unchanged: bit-exact with verif/models/pe_model.c. docs/architecture.md 4.7.
//
// Each PE's machine registers live in block RAMs of N words indexed by PE (pe_micro_ctx):
// the micro-pc (written by stage 1, read two cycles before the PE's next stage 1 as the
// ROM's address), RA and AR (read for stage 1), X, H and MA (read for stage 2) and the
// task-busy count (counted N cycles at a time in the PE's stage 2). Z and C travel round a
// ring of N flip-flops. N >= 3: a word is never read in the cycle it is written. A PE's
// next instruction starts only after its last one has finished, so the stage-1/stage-2
// hazards of a single-PE machine do not arise (the micro-program's hazard NOPs still cost a
// turn each).
// A PE's first turn after reset writes its micro-pc 0.
//
// Per PE, a stage only ever sees its own PE's memories: the S RAMs all read at the stage-1
// address (only the stage-1 PE's output is used, in its stage 2), and IMEM and M keep their
// read data until their own PE's next read. No S RAM needs the old word on a
// collision (so none has a bypass): PE p's S is written by p's stage 2, whose read in that
// cycle is another PE's and unused, or by p's receive stage, which writes a slot that is not
// yet at its queue's head, the only slot the micro-program reads.
//
// Differences from N single-PE machines, all in timing: a PE runs at 1/N of the clock; its router sees
// tx_valid in the cycles the PE is in stage 2 (the router gives its local input priority,
// mesh_router_lean LocalFirst, so the pulses cannot be starved by other inputs); rx_ready_o
// is the PE's room for the wavelet on rx_data (the router's bus head), not 16 colour-ready
// bits; cfg_rdata_o is common to all PEs and valid in the cycle of a read's grant. The FPU
// port is common too: only the PE that owns pe_fpu_share writes to it.
//
// Each PE's input queues are a pe_queue keeping no part of the wavelet (Width 0: the receive
// stage moves it into S) with pe_queue's Lookahead and StagedPush. rx_ready_o is a register:
// the router tells the colour of its next bus head a cycle ahead (rx_next_color_i,
// mesh_router_lean RegGnt), or, behind a LocalFirst router, that head is the PE's own jtx
// wavelet, whose colour the PE knows. pe_queue looks the colour up in its map then, and
// ready is that queue's room bit, so no path runs from the router's bus through the map into
// the router's take logic. A taken wavelet enters its queue when the receive stage has
// drained it into S.
`default_nettype none

module pe_micro_mt #(
  parameter int unsigned N = 4,           // PEs (threads), at least 3
  parameter int unsigned AWords = 16384,  // bf16 elements; must be 2 * BWords
  parameter int unsigned BWords = 8192,   // 32-bit words
  parameter int unsigned NumQueues = 4,   // input queues per PE
  parameter int unsigned QueueDepth = 8,  // wavelets per input queue (a power of two, >= 2)
  parameter bit [N-1:0] LocalFirst = '0   // PEs whose router gives their tx the bus at once
                                          // (mesh_router_lean LocalFirst): their rx head
                                          // next cycle is then their own wavelet
) (
  input  wire            clk_i,
  input  wire            rst_ni,
  // per PE: its router's local port
  input  wire [N-1:0]    rx_valid_i,
  input  wire [N*37-1:0] rx_data_i,
  output wire [N-1:0]    rx_ready_o,    // for the wavelet on rx_data, valid or not
  input  wire [N*4-1:0]  rx_next_color_i,  // the colour on rx_data next cycle (a router FIFO's)
  output wire [N-1:0]    tx_valid_o,
  output wire [36:0]     tx_data_o,     // common: the wavelet of the PE whose valid is up
  input  wire [N-1:0]    tx_ready_i,
  // config: one request per PE, the rest common (mesh_cfgbus_lean)
  input  wire [N-1:0]    cfg_req_i,
  input  wire            cfg_we_i,
  input  wire [3:0]      cfg_target_i,
  input  wire [15:0]     cfg_addr_i,
  input  wire [31:0]     cfg_wdata_i,
  output wire [N-1:0]    cfg_gnt_o,
  output wire [31:0]     cfg_rdata_o,   // a read's word, in the cycle of its grant (common)
  output wire [N-1:0]    idle_o,
  output wire [N-1:0]    mac_busy_o,
  input  wire            ctr_clear_i,
  // the shared FPU (pe_fpu_share): a request per PE, the rest common
  output wire [N-1:0]    fpu_req_o,
  input  wire [N-1:0]    fpu_gnt_i,
  output wire            fpu_we_o,
  output wire [2:0]      fpu_sel_o,
  output wire [15:0]     fpu_d_o,
  output wire            fpu_start_o,
  output wire            fpu_add_o,
  input  wire            fpu_done_i,
  output wire            fpu_hsel_o,
  input  wire [15:0]     fpu_y_i
);
  localparam int unsigned TW = $clog2(N);
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1;
  localparam int unsigned PtrW = $clog2(QueueDepth);
  localparam int unsigned CntW = $clog2(QueueDepth + 1);  // pe_queue's count_o, per queue
  if (N < 3) begin : g_bad_n
    $error("pe_micro_mt: N must be at least 3 (a context word is never read as it is written)");
  end
  localparam int unsigned SlotW = QW + PtrW;
  localparam int unsigned AW = $clog2(AWords);
  localparam int unsigned BW = $clog2(BWords);
  localparam int unsigned MW = AW + 1;
  localparam int unsigned S2 = 2 % N;  // the slot stage 2 writes (Z, C)

  // encodings: verif/ucode/uasm.c's
  localparam [3:0] OpLd = 4'd0, OpAdd = 4'd1, OpAdc = 4'd2, OpSub = 4'd3, OpSbc = 4'd4,
                   OpAnd = 4'd5, OpOr = 4'd6, OpXor = 4'd7, OpCmp = 4'd8, OpTst = 4'd9,
                   OpSt = 4'd10;
  localparam [3:0] CTxnr = 4'd7, CDcfg = 4'd14;  // condition codes (uasm.c)
  localparam [6:0] FxSetar = 7'h10, FxSeth = 7'h11, FxMaa = 7'h12, FxMab = 7'h13,
                   FxMabh = 7'h14, FxFetch = 7'h15, FxIcrd = 7'h16, FxIwr = 7'h17,
                   FxGnt = 7'h18, FxPop = 7'h19, FxNextq = 7'h1a, FxRun1 = 7'h1b,
                   FxRun0 = 7'h1c, FxMacev = 7'h1d, FxLink = 7'h1f,
                   FxFreq = 7'h38, FxFrel = 7'h39, FxBclr = 7'h3a, FxCclr = 7'h3b,
                   FxMapw = 7'h3c;

  // ------------------------------------------------------------------ the ring
  logic          z_q   [0:N-1];
  logic          c_q   [0:N-1];
  logic [TW-1:0] t0_q, t1_q, t2_q;  // the PE in stage 1 next cycle, in stage 1, in stage 2
  // the rest of a PE's machine registers, in block RAMs indexed by PE (ctx): AR and RA read
  // for stage 1 (ar0, ra0), X, H and MA for stage 2 (x1, h1, ma1; stage 1 needs neither X
  // nor H: a jtx offers its wavelet in stage 2)
  logic [15:0]   x1, h1;
  logic [7:0]    ar0;
  logic [9:0]    ra0;
  logic [MW-1:0] ma1;
  logic [TW:0]   bcnt_q;       // cycles since reset, up to N: each PE's first turn is boot
  wire           boot_q = (32'(bcnt_q) != N);  // it sets the PE's micro-pc to 0
  logic [9:0]    upc0_q;       // the stage-1 PE's micro-pc (the ROM's address a cycle ago)
  logic [TW-1:0] tm_q;         // the PE in stage 1 two cycles on (the micro-pc RAM's read)

  logic [15:0] uir;            // stage 1: the ROM's output
  logic [15:0] uir2_q;
  logic        v2_q;
  logic [7:0]  ea2_q;

  // per PE (indexed by PE): what the stages read of it
  logic [15:0]      ird_p  [0:N-1];  // IMEM read data
  logic [15:0]      srd_p  [0:N-1];  // S read data
  logic [15:0]      mrd_p  [0:N-1];  // M read data
  logic [N-1:0]     run_p;           // a task runs
  logic [N-1:0]     txd_p;           // its wavelet was taken in its last turn (jtx goes on)
  logic [N-1:0]     clr_p;           // CLEAR seen, counters not yet zeroed
  logic [SlotW-1:0] hs_p   [0:N-1];  // the head slot of the picker's queue
  logic [N-1:0]     hv_p;            // ... holds a wavelet
  logic [QW-1:0]    mapr_p [0:N-1];  // the colour map at the config address

  // IMEM and M keep their read data until their PE's next read (in its stage 2), so the
  // word a stage will use is taken from its PE's memory a cycle early, into one register:
  // IMEM's for stage 1 (read by the last stage 2 at least N - 2 >= 1 cycles before) and M's
  // for stage 2. No path then runs from the memories, spread over the part, into the ALU.
  logic [15:0] ird_q, mrd_q;
  always_ff @(posedge clk_i) begin
    ird_q <= ird_p[t0_q];
    mrd_q <= mrd_p[t1_q];
  end

  // ------------------------------------------------------------------ stage 1 (PE t1_q)
  wire [15:0] ird = ird_q;
  wire [SlotW-1:0] hs = hs_p[t1_q];
  wire        hv = hv_p[t1_q];
  wire        c_ab = (cfg_target_i <= 4'd2);
  logic       j_fmt;
  logic [3:0] cond;
  logic [7:0] ea;
  logic [9:0] upc_d;
  pe_micro_seq #(.SlotW(SlotW)) u_seq (
    .uir_i       (uir),
    .ird_i       (ird),
    .ar_i        (ar0),
    .cfg_addr_i  (cfg_addr_i[4:0]),
    .hs_i        (hs),
    .upc_i       (upc0_q),
    .ra_i        (ra0),
    .boot_i      (boot_q),
    .cfg_we_i,
    .cfg_target_i,
    .cond_i      ({!fpu_done_i, !fpu_gnt_i[t1_q], cfg_req_i[t1_q] && c_ab, cfg_req_i[t1_q],
                   !txd_p[t1_q], clr_p[t1_q], hv, !c_q[0], c_q[0], !z_q[0], z_q[0]}),
    .j_fmt_o     (j_fmt),
    .cond_o      (cond),
    .ea_o        (ea),
    .upc_d_o     (upc_d)
  );
  wire link = !boot_q && uir[15:14] == 2'b11 && uir[6:0] == FxLink;

  // ------------------------------------------------------------------ stage 2 (PE t2_q)
  wire        s2 = v2_q && !uir2_q[15];
  wire        x2 = v2_q && uir2_q[15];
  wire [3:0]  op2 = s2 ? uir2_q[14:11] : uir2_q[13:10];
  wire [2:0]  src2 = uir2_q[9:7];
  wire [6:0]  fx = x2 ? uir2_q[6:0] : 7'd0;
  // the side effects a PE takes when it is in stage 2, decoded once
  wire          pop = (fx == FxPop);
  wire          map_we = (fx == FxMapw);
  wire          fx_iwr = (fx == FxIwr), fx_ird = (fx == FxFetch) || (fx == FxIcrd);
  wire          fx_gnt = (fx == FxGnt), fx_nextq = (fx == FxNextq), fx_bclr = (fx == FxBclr);
  wire          fx_cclr = (fx == FxCclr), fx_run1 = (fx == FxRun1), fx_run0 = (fx == FxRun0);
  wire          fx_freq = (fx == FxFreq), fx_frel = (fx == FxFrel), fx_macev = (fx == FxMacev);
  wire [15:0] x2v = x1;
  logic [15:0] e_q;
  logic [15:0] ird2_q;  // the stage-1 PE's instruction word, for its stage 2
  always_ff @(posedge clk_i) begin
    case (uir[9:7])
      3'd3: e_q <= 16'(mapr_p[t1_q]);
      3'd4: e_q <= cfg_wdata_i[15:0];
      3'd5: e_q <= cfg_wdata_i[31:16];
      default: e_q <= fpu_y_i;
    endcase
    ird2_q <= ird;
  end
  logic [15:0] y;
  always_comb begin
    if (s2) y = srd_p[t2_q];
    else begin
      case (src2)
        3'd0: y = mrd_q;
        3'd1: y = ird2_q;
        3'd2: y = busy2;
        default: y = e_q;
      endcase
    end
  end
  wire        alu_v = v2_q && (op2 < OpSt);
  wire        sub = (op2 == OpSub) || (op2 == OpSbc) || (op2 == OpCmp);
  wire        cin = (op2 == OpAdc || op2 == OpSbc) ? c_q[1] : (op2 == OpSub || op2 == OpCmp);
  wire [16:0] sum = {1'b0, x2v} + {1'b0, sub ? ~y : y} + 17'(cin);
  logic [15:0] res;
  always_comb begin
    case (op2)
      OpLd: res = y;
      OpAnd, OpTst: res = x2v & y;
      OpOr: res = x2v | y;
      OpXor: res = x2v ^ y;
      default: res = sum[15:0];
    endcase
  end
  wire arith = (op2 >= OpAdd && op2 <= OpSbc) || op2 == OpCmp;

  // the ring moves on; stage 1 writes slot 1, stage 2 slot 2 mod N
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      bcnt_q <= '0;
      tm_q <= TW'(2 % N);
      t0_q <= TW'(1);
      t1_q <= '0;
      t2_q <= TW'(N - 1);
      v2_q <= 1'b0;
    end else begin
      if (boot_q) bcnt_q <= bcnt_q + 1'b1;
      tm_q <= (32'(tm_q) == N - 1) ? '0 : tm_q + 1'b1;
      t0_q <= (32'(t0_q) == N - 1) ? '0 : t0_q + 1'b1;
      t1_q <= t0_q;
      t2_q <= t1_q;
      v2_q <= !boot_q && !j_fmt;
    end
  end
  always_ff @(posedge clk_i) begin
    for (int k = 0; k < N; k++) begin
      z_q[(k + 1) % N] <= z_q[k];
      c_q[(k + 1) % N] <= c_q[k];
    end
    if (alu_v) begin
      z_q[S2] <= (res == 16'd0);
      if (arith) c_q[S2] <= sum[16];
    end
    uir2_q <= uir;
    ea2_q <= ea;
  end

  // the context RAMs: written by a PE's stage (RA by stage 1, the rest by stage 2) and read
  // for its next instruction's, at least a cycle later when N >= 3 (no collision)
  wire x_we = alu_v && op2 != OpCmp && op2 != OpTst;
  logic [MW-1:0] ma_new;
  always_comb begin
    ma_new = {1'b0, x2v[AW-1:0]};                           // maa
    if (fx == FxMab) ma_new = {1'b1, x2v[BW-1:0], 1'b0};
    if (fx == FxMabh) ma_new = {1'b1, x2v[BW:0]};
  end
  pe_micro_ctx #(.N(N), .Width(16)) u_ctx_x1 (
    .clk_i, .we_i(x_we), .waddr_i(t2_q), .wdata_i(res), .raddr_i(t1_q), .rdata_o(x1));
  pe_micro_ctx #(.N(N), .Width(16)) u_ctx_h1 (
    .clk_i, .we_i(fx == FxSeth), .waddr_i(t2_q), .wdata_i(x2v), .raddr_i(t1_q), .rdata_o(h1));
  pe_micro_ctx #(.N(N), .Width(8)) u_ctx_ar (
    .clk_i, .we_i(fx == FxSetar), .waddr_i(t2_q), .wdata_i(x2v[7:0]), .raddr_i(t0_q),
    .rdata_o(ar0));
  pe_micro_ctx #(.N(N), .Width(MW)) u_ctx_ma (
    .clk_i, .we_i(fx == FxMaa || fx == FxMab || fx == FxMabh), .waddr_i(t2_q),
    .wdata_i(ma_new), .raddr_i(t1_q), .rdata_o(ma1));
  // a PE's task-busy cycles (its run flag) are counted N at a time, in its stage 2: its
  // run flag changes only there, so the cycles up to its next stage 2 are known. The count
  // read there is the count up to that cycle; what is written, the count N cycles on.
  logic [15:0] busy2;
  wire        run_old = run_p[t2_q];
  wire        run_new = fx_run1 || (run_old && !fx_run0);
  wire [15:0] busy_new = (fx_bclr ? 16'd0 : busy2) + 16'(run_old) + 16'(N - 1) * 16'(run_new);
  pe_micro_ctx #(.N(N), .Width(16)) u_ctx_busy (
    .clk_i, .we_i(1'b1), .waddr_i(t2_q), .wdata_i(busy_new), .raddr_i(t1_q), .rdata_o(busy2));
  pe_micro_ctx #(.N(N), .Width(10)) u_ctx_ra (
    .clk_i, .we_i(link), .waddr_i(t1_q), .wdata_i(upc0_q + 10'd2), .raddr_i(t0_q),
    .rdata_o(ra0));

  // ------------------------------------------------------------------ the ROM (PE 0's
  // pe_micro_rom) reads at the micro-pc of the PE that is in stage 1 next cycle
  wire          st2 = s2 && op2 == OpSt;
  // the micro-pcs: written by stage 1, read two cycles before the PE's next stage 1 (the
  // ROM's address, then upc0_q); in its boot turn a PE writes 0
  logic [9:0]   uaddr;
  pe_micro_ctx #(.N(N), .Width(10)) u_ctx_upc (
    .clk_i, .we_i(1'b1), .waddr_i(t1_q), .wdata_i(upc_d), .raddr_i(tm_q), .rdata_o(uaddr));
  always_ff @(posedge clk_i) upc0_q <= uaddr;

  // ------------------------------------------------------------------ common outputs
  assign fpu_we_o = (fx[6:3] == 4'b0100);
  assign fpu_sel_o = fx[2:0];
  assign fpu_d_o = x2v;
  assign fpu_start_o = (fx[6:1] == 6'b011000);
  assign fpu_add_o = fx[0];
  assign fpu_hsel_o = uir[7];
  // a jtx offers its wavelet in the PE's stage 2 (from registers: no path from the ROM
  // through the decode into the router), with the X, H and instruction of that stage
  wire [3:0] uop = ird2_q[15:12];
  assign tx_data_o = {(uop == 4'h8) && ird2_q[7], ird2_q[11:8], h1, x1};
  logic      jtx2_q;  // stage 2 holds a jtx
  wire       jtx2_d = !boot_q && j_fmt && (cond == CTxnr);
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) jtx2_q <= 1'b0;
    else jtx2_q <= jtx2_d;
  end
  assign cfg_rdata_o = {h1, x1};  // a read's grant: stage 2, whose gnt changes neither

  wire          m_en = fx[6];
  wire          m_cfg = fx[2];
  wire          m_we = fx[1];
  wire          m_hi = fx[0];
  wire [MW-1:0] m_cfga = (cfg_target_i == 4'd0) ? {1'b0, cfg_addr_i[AW-2:0], 1'b0}
                                                 : {1'b1, cfg_addr_i[BW-1:0], 1'b0};
  wire [MW-1:0] m_addr = (m_cfg ? m_cfga : ma1) | MW'(m_hi);
  wire          dcfg = !boot_q && j_fmt && cond == CDcfg;

  // ------------------------------------------------------------------ per PE
  for (genvar gp = 0; gp < N; gp++) begin : g_pe
    logic            clr_q, run_q, fpu_req_q;
    logic [QW-1:0]   qs_q;                    // the picker's queue
    logic [NumQueues-1:0]      qv;            // each queue holds a wavelet
    logic [NumQueues*PtrW-1:0] qptr;          // each head's pointer
    logic                      qempty;        // all queues empty
    logic [15:0]               q_cr;          // (Lookahead: 0)
    logic                      q_hd;          // (Width 0: 0)
    logic [NumQueues*CntW-1:0] q_cnt;
    wire                       unused_q = ^{q_cr, q_hd, q_cnt};
    assign run_p[gp] = run_q;
    assign clr_p[gp] = clr_q;
    assign hs_p[gp] = {qs_q, qptr[32'(qs_q) * PtrW +: PtrW]};
    assign hv_p[gp] = qv[qs_q];
    assign fpu_req_o[gp] = fpu_req_q;
    wire me1 = (t1_q == TW'(gp));  // in stage 1
    wire me2 = (t2_q == TW'(gp));  // in stage 2

    sram_1r1w #(.Depth(256), .Width(16), .OldOnCollide(1'b0)) u_imem (
      .clk_i  (clk_i),
      .we_i   (me2 && fx_iwr),
      .waddr_i(cfg_addr_i[7:0]),
      .wdata_i(cfg_wdata_i[15:0]),
      .re_i   (me2 && fx_ird),
      .raddr_i((fx == FxFetch) ? x2v[7:0] : cfg_addr_i[7:0]),
      .rdata_o(ird_p[gp])
    );
    sram_sp #(.Depth(2 * AWords), .Width(16)) u_m (
      .clk_i  (clk_i),
      .en_i   (me2 && m_en),
      .we_i   (m_we),
      .addr_i (m_addr),
      .wdata_i(x2v),
      .rdata_o(mrd_p[gp])
    );

    // the receive stage, drained into S in cycles this PE does not store
    logic            stg_v_q;
    logic [1:0]      stg_k_q;
    logic [36:0]     stg_q;
    logic [QW-1:0]   stg_qn_q;
    logic [PtrW-1:0] stg_p_q;
    wire            pst = me2 && st2;
    wire            drain = stg_v_q && !pst;
    wire            drained = drain && stg_k_q == 2'd2;
    wire [SlotW-1:0] stg_slot = {stg_qn_q, stg_p_q};
    wire [7:0]      d_addr = (stg_k_q == 2'd2) ? (8'd128 | 8'(stg_slot))
                                               : (8'd64 | 8'({stg_slot, stg_k_q[0]}));
    logic [15:0]    udata;
    pe_micro_rom #(.Rom(gp == 0), .OldOnCollide(1'b0)) u_mem (
      .clk_i   (clk_i),
      .uaddr_i (uaddr),
      .udata_o (udata),
      .swe_i   (pst || drain),
      .swaddr_i(pst ? ea2_q : d_addr),
      .swdata_i(pst ? x2v : stg_q[15:0]),
      .sraddr_i(ea),
      .srdata_o(srd_p[gp])
    );
    if (gp == 0) begin : g_rom
      assign uir = udata;
    end else begin : g_norom
      wire unused_udata = ^udata;
    end

    // ready for the wavelet on rx_data (the router's bus head, offered or not): its
    // colour's queue has room; the router looks at no other colour (LocalReadyBus). The
    // colour is known a cycle ahead (see the header): the router's next FIFO head, or this
    // PE's jtx wavelet if it offers one next cycle (it is in stage 1 now, and its tx is not
    // marked taken: that changes only in its stage 2) behind a LocalFirst router.
    logic          txd_q;  // (jtx, below) its wavelet was taken
    wire [36:0]    rxd = rx_data_i[gp * 37 +: 37];
    wire           tx_next = LocalFirst[gp] && me1 && jtx2_d && !txd_q;
    // (keep: abc otherwise copies this multiplexer into the map read's first LUTs, ~7 LUT4
    // more per PE)
    (* keep *) wire [3:0] rx_color_d = tx_next ? ird[11:8] : rx_next_color_i[gp * 4 +: 4];
    logic [QW-1:0]   rx_q;    // the queue of the colour on rx_data
    logic [PtrW-1:0] rx_ptr;  // its slot there
    wire          push = rx_valid_i[gp] && rx_ready_o[gp];
    wire          ppop = me2 && pop;
    wire          pmapw = me2 && map_we;
    wire          stg_v_d = push || (stg_v_q && !drained);

    logic cfg_live_q;
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) cfg_live_q <= 1'b0;
      else if (!cfg_req_i[gp]) cfg_live_q <= 1'b0;
      else if (me1 && dcfg) cfg_live_q <= 1'b1;
    end
    assign cfg_gnt_o[gp] = me2 && fx_gnt && cfg_req_i[gp] && cfg_live_q;

    // the queues: ready (registered) drops while the stage is full and after a map write
    pe_queue #(
      .NumQueues (NumQueues),
      .QueueDepth(QueueDepth),
      .Width     (0),
      .RegReady  (1'b1),
      .Lookahead (1'b1),
      .StagedPush(1'b1)
    ) u_queue (
      .clk_i        (clk_i),
      .rst_ni       (rst_ni),
      .rx_valid_i   (rx_valid_i[gp]),
      .rx_data_i    (rxd),
      .rx_ready_o   (rx_ready_o[gp]),
      .color_ready_o(q_cr),
      .hold_i       (stg_v_d),
      .next_color_i (rx_color_d),
      .push_i       (drained),
      .push_q_i     (stg_qn_q),
      .push_q_o     (rx_q),
      .push_ptr_o   (rx_ptr),
      .map_we_i     (pmapw),
      .map_addr_i   (cfg_addr_i[3:0]),
      .map_wdata_i  (cfg_wdata_i[QW-1:0]),
      .map_rdata_o  (mapr_p[gp]),
      .head_valid_o (qv),
      .head_data_o  (q_hd),
      .head_ptr_o   (qptr),
      .count_o      (q_cnt),
      .pop_i        (ppop),
      .pop_q_i      (qs_q),
      .empty_o      (qempty)
    );
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        qs_q <= '0;
        stg_v_q <= 1'b0;
        stg_k_q <= 2'd0;
        run_q <= 1'b0;
        fpu_req_q <= 1'b0;
        clr_q <= 1'b0;
      end else begin
        if (me2 && fx_nextq) qs_q <= (32'(qs_q) == NumQueues - 1) ? '0 : qs_q + 1'b1;
        stg_v_q <= stg_v_d;
        if (!stg_v_q) stg_k_q <= 2'd0;
        else if (drain) stg_k_q <= stg_k_q + 2'd1;
        if (ctr_clear_i) clr_q <= 1'b1;
        else if (me2 && fx_cclr) clr_q <= 1'b0;
        if (me2 && fx_run1) run_q <= 1'b1;
        if (me2 && fx_run0) run_q <= 1'b0;
        if (me2 && fx_freq) fpu_req_q <= 1'b1;
        if (me2 && fx_frel) fpu_req_q <= 1'b0;
      end
    end
    // the empty stage loads whatever the router's bus shows (rx_ready is low while it is
    // full, so a push finds it empty and stops the loading): its enables do not wait for
    // the push, which is at the end of the router's bus and this PE's map lookup
    always_ff @(posedge clk_i) begin
      if (!stg_v_q) begin
        stg_q <= rxd;
        stg_qn_q <= rx_q;
        stg_p_q <= rx_ptr;
      end else if (drain) begin
        stg_q <= {16'd0, stg_q[36:16]};
      end
    end

    // jtx (which jumps to itself) offers the wavelet in the PE's stage 2 until the router
    // takes it; then txd_q is set and the PE's next turn goes on (clearing it): no path
    // from tx_ready into the micro-pc
    wire jtx = me2 && jtx2_q;
    assign tx_valid_o[gp] = jtx && !txd_q;
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) txd_q <= 1'b0;
      else if (tx_valid_o[gp] && tx_ready_i[gp]) txd_q <= 1'b1;
      else if (jtx) txd_q <= 1'b0;
    end
    assign txd_p[gp] = txd_q;
    assign idle_o[gp] = !run_q && !stg_v_q && qempty;
    assign mac_busy_o[gp] = me2 && fx_macev;
  end

  wire unused = ^{cfg_addr_i};  // the bits above M's address

`ifdef FORMAL
  // The registered ready's claim (pe_queue checks the map lookup and the room): a wavelet
  // taken finds the receive stage empty. Checked at the clock edge (tb_pe_micro_mt builds
  // with --assert -DFORMAL).
  for (genvar a = 0; a < N; a++) begin : g_chk
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (rst_ni && g_pe[a].push) assert (!g_pe[a].stg_v_q);
    end
  end
`endif
endmodule

`default_nettype wire
