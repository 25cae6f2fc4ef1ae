// pe_micro - the smallest PE: pe_lite's ports, ISA, config targets and results (bit-exact with
// verif/models/pe_model.c), run by a 16-bit accumulator micro-machine from a micro-program
// ROM of up to 768 words (rtl/pe/pe_micro.us, assembled into pe_micro_rom.v), with the floating
// point in a unit shared with other PEs (pe_fpu_share: one FMAC for the mesh).
// docs/architecture.md 4.7 describes it; verif/ucode/uasm.c's header is the reference for the
// micro-machine (formats, operations, sources, side effects, hazards).
//
// Two stages: stage 1 (the cycle an instruction is the ROM's output, uir) forms the S-RAM read
// address and the next micro-pc; stage 2 (the next cycle, uir2) runs the ALU on Y and does the
// side effects. Everything the PE holds is in RAM: IMEM (256 x 16), S (256 x 16: registers,
// task table, queued wavelets, the micro-program's variables and constants, the five
// counters), and A and B in one single-port memory M of 16-bit halfwords (A element e at e,
// B word w at AWords + 2w and + 2w + 1; AWords = 2 * BWords, so on the board A and B fill one
// 16K x 16 SPRAM). Flip-flops: X, H, AR, MA, upc, RA, the outside operand e_q, a 16-bit
// count of task-busy cycles, the queue pointers and counts, the color -> queue map, a ready
// bit per queue, and a one-wavelet receive stage that hardware drains into S (payload low,
// high, header: three writes in cycles the micro-program does not store). A queued wavelet
// is visible at its queue's head only once all three words are written.
//
// Config: every target is served by the micro-program, which polls where it may (A and B at
// any time, between elements of a vector instruction too; the rest when no task runs) and
// answers {H, X} one cycle after its grant. A request must stay presented until granted.
`default_nettype none

module pe_micro #(
  parameter int unsigned AWords = 16384,  // bf16 elements; must be 2 * BWords
  parameter int unsigned BWords = 8192,   // 32-bit words
  parameter int unsigned NumQueues = 4,   // input queues
  parameter int unsigned QueueDepth = 8   // wavelets per input queue (a power of two)
) (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        rx_valid_i,
  input  wire [36:0] rx_data_i,
  output wire        rx_ready_o,
  output wire [15:0] color_ready_o,
  output wire        tx_valid_o,
  output wire [36:0] tx_data_o,
  input  wire        tx_ready_i,
  input  wire        cfg_req_i,
  input  wire        cfg_we_i,
  input  wire [3:0]  cfg_target_i,
  input  wire [15:0] cfg_addr_i,
  input  wire [31:0] cfg_wdata_i,
  output wire        cfg_gnt_o,
  output wire        cfg_rvalid_o,
  output wire [31:0] cfg_rdata_o,
  output wire        idle_o,
  output wire        mac_busy_o,
  input  wire        ctr_clear_i,   // zero the counters (CLEAR)
  // the shared floating-point unit (pe_fpu_share)
  output reg         fpu_req_o,     // held from acquiring the unit until releasing it
  input  wire        fpu_gnt_i,     // the unit is this PE's
  output wire        fpu_we_o,      // write operand part fpu_sel_o (0 a low, 1 a high, 2 b,
  output wire [2:0]  fpu_sel_o,     //   3 c low, 4 c high) with fpu_d_o
  output wire [15:0] fpu_d_o,
  output wire        fpu_start_o,   // start: fmac (c + a * b), or add (a + c) with fpu_add_o
  output wire        fpu_add_o,
  input  wire        fpu_done_i,    // the result is ready (until the next start)
  output wire        fpu_hsel_o,    // result half on fpu_y_i
  input  wire [15:0] fpu_y_i
);
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1;
  localparam int unsigned PtrW = (QueueDepth > 1) ? $clog2(QueueDepth) : 1;
  localparam int unsigned CntW = $clog2(QueueDepth + 1);
  localparam int unsigned SlotW = QW + PtrW;       // slot = queue * QueueDepth + pointer
  localparam int unsigned AW = $clog2(AWords);     // A element address bits
  localparam int unsigned BW = $clog2(BWords);     // B word address bits (AW = BW + 1)
  localparam int unsigned MW = AW + 1;             // M halfword address bits

  // ------------------------------------------------------------------ encodings (uasm.c)
  localparam [3:0] OpLd = 4'd0, OpAdd = 4'd1, OpAdc = 4'd2, OpSub = 4'd3, OpSbc = 4'd4,
                   OpAnd = 4'd5, OpOr = 4'd6, OpXor = 4'd7, OpCmp = 4'd8, OpTst = 4'd9,
                   OpSt = 4'd10;  // 12 (X format): no ALU operation
  localparam [3:0] CTxnr = 4'd7, CDcfg = 4'd14;  // condition codes (uasm.c)
  // side effects (uasm.c fx_code): 1_0 cfg we hi: M access; 0100 sel: FPU operand part;
  // 0110 0 add: FPU start; 0x10-0x1f and 0x38-0x3f: the rest
  localparam [6:0] FxSetar = 7'h10, FxSeth = 7'h11, FxMaa = 7'h12, FxMab = 7'h13,
                   FxMabh = 7'h14, FxFetch = 7'h15, FxIcrd = 7'h16, FxIwr = 7'h17,
                   FxGnt = 7'h18, FxPop = 7'h19, FxNextq = 7'h1a, FxRun1 = 7'h1b,
                   FxRun0 = 7'h1c, FxMacev = 7'h1d, FxLink = 7'h1f,
                   FxFreq = 7'h38, FxFrel = 7'h39, FxBclr = 7'h3a, FxCclr = 7'h3b,
                   FxMapw = 7'h3c;

  // ------------------------------------------------------------------ state
  reg  [9:0]  upc_q, ra_q;
  reg         boot_q;         // the first cycle after reset: the ROM is reading word 0
  wire [15:0] uir;            // stage 1: ROM output, the instruction at upc_q
  reg  [15:0] uir2_q;         // stage 2
  reg         v2_q;           // uir2_q is an S- or X-format instruction
  reg  [7:0]  ea2_q;          // its S address
  reg  [15:0] x_q, h_q;
  reg         z_q, c_q;
  reg  [7:0]  ar_q;
  reg  [MW-1:0] ma_q;
  reg  [15:0] busy_q;        // task-busy cycles not yet added to counter 1
  reg         clr_q;         // CLEAR seen, counters not yet zeroed
  reg         run_q;

  wire [15:0] ird;            // IMEM read data: the PE instruction
  wire [15:0] srd;            // S read data
  wire [15:0] mrd;            // M read data

  // ------------------------------------------------------------------ queues
  reg  [QW-1:0]   map_q [0:15];
  reg  [PtrW-1:0] rdp_q [0:NumQueues-1];
  reg  [PtrW-1:0] wrp_q [0:NumQueues-1];
  reg  [CntW-1:0] qc_q  [0:NumQueues-1];
  reg  [QW-1:0]   qs_q;       // the picker's queue, the running task's queue
  wire [SlotW-1:0] hs = {qs_q, rdp_q[qs_q]};
  wire            hv = (qc_q[qs_q] != '0);

  // ------------------------------------------------------------------ stage 1
  // the micro-program serves every config target; A and B (0, 1, 2) also between elements
  wire        c_ab = (cfg_target_i <= 4'd2);
  wire        j_fmt;
  wire [3:0]  cond;
  wire [7:0]  ea;
  wire [9:0]  upc_d;
  pe_micro_seq #(.SlotW(SlotW)) u_seq (
    .uir_i       (uir),
    .ird_i       (ird),
    .ar_i        (ar_q),
    .cfg_addr_i  (cfg_addr_i[4:0]),
    .hs_i        (hs),
    .upc_i       (upc_q),
    .ra_i        (ra_q),
    .boot_i      (boot_q),
    .cfg_we_i,
    .cfg_target_i,
    .cond_i      ({!fpu_done_i, !fpu_gnt_i, cfg_req_i && c_ab, cfg_req_i, !tx_ready_i, clr_q,
                   hv, !c_q, c_q, !z_q, z_q}),
    .j_fmt_o     (j_fmt),
    .cond_o      (cond),
    .ea_o        (ea),
    .upc_d_o     (upc_d)
  );


  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      boot_q <= 1'b1;
      upc_q <= 10'd0;
      v2_q <= 1'b0;
    end else begin
      boot_q <= 1'b0;
      upc_q <= upc_d;
      v2_q <= !boot_q && !j_fmt;
    end
  end
  always @(posedge clk_i) begin
    uir2_q <= uir;
    ea2_q <= ea;
    // link (stage 1): the return address is past the jump that follows
    if (!boot_q && uir[15:14] == 2'b11 && uir[6:0] == FxLink) ra_q <= upc_q + 10'd2;
  end

  // ------------------------------------------------------------------ stage 2
  wire        s2 = v2_q && !uir2_q[15];
  wire        x2 = v2_q && uir2_q[15];
  wire [3:0]  op2 = s2 ? uir2_q[14:11] : uir2_q[13:10];
  wire [2:0]  src2 = uir2_q[9:7];
  wire [6:0]  fx = x2 ? uir2_q[6:0] : 7'd0;
  // the operands from outside the PE (the queue map at the config address, the config write
  // data, the FPU result) are stable a cycle ahead: selected in stage 1 into e_q (timing: no
  // path from the config chain or the FPU through the ALU)
  reg  [15:0] e_q;
  always @(posedge clk_i) begin
    case (uir[9:7])
      3'd3: e_q <= 16'(map_q[cfg_addr_i[3:0]]);
      3'd4: e_q <= cfg_wdata_i[15:0];
      3'd5: e_q <= cfg_wdata_i[31:16];
      default: e_q <= fpu_y_i;
    endcase
  end
  reg  [15:0] y;
  always @(*) begin
    if (s2) y = srd;
    else begin
      case (src2)
        3'd0: y = mrd;
        3'd1: y = ird;
        3'd2: y = busy_q;
        default: y = e_q;
      endcase
    end
  end
  wire        alu_v = v2_q && (op2 < OpSt);  // X format: OpNone is no ALU operation
  wire        sub = (op2 == OpSub) || (op2 == OpSbc) || (op2 == OpCmp);
  wire        cin = (op2 == OpAdc || op2 == OpSbc) ? c_q : (op2 == OpSub || op2 == OpCmp);
  wire [16:0] sum = {1'b0, x_q} + {1'b0, sub ? ~y : y} + 17'(cin);
  reg  [15:0] res;
  always @(*) begin
    case (op2)
      OpLd: res = y;
      OpAnd, OpTst: res = x_q & y;
      OpOr: res = x_q | y;
      OpXor: res = x_q ^ y;
      default: res = sum[15:0];
    endcase
  end
  wire arith = (op2 >= OpAdd && op2 <= OpSbc) || op2 == OpCmp;
  always @(posedge clk_i) begin
    if (alu_v) begin
      if (op2 != OpCmp && op2 != OpTst) x_q <= res;
      z_q <= (res == 16'd0);
      if (arith) c_q <= sum[16];
    end
    if (fx == FxSetar) ar_q <= x_q[7:0];
    if (fx == FxSeth) h_q <= x_q;
    if (fx == FxMaa) ma_q <= {1'b0, x_q[AW-1:0]};
    if (fx == FxMab) ma_q <= {1'b1, x_q[BW-1:0], 1'b0};
    if (fx == FxMabh) ma_q <= {1'b1, x_q[BW:0]};
  end
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      run_q <= 1'b0;
      fpu_req_o <= 1'b0;
      busy_q <= 16'd0;
      clr_q <= 1'b0;
    end else begin
      if (fx == FxBclr) busy_q <= 16'(run_q);
      else if (run_q) busy_q <= busy_q + 16'd1;
      if (ctr_clear_i) clr_q <= 1'b1;
      else if (fx == FxCclr) clr_q <= 1'b0;
      if (fx == FxRun1) run_q <= 1'b1;
      if (fx == FxRun0) run_q <= 1'b0;
      if (fx == FxFreq) fpu_req_o <= 1'b1;
      if (fx == FxFrel) fpu_req_o <= 1'b0;
    end
  end

  // ------------------------------------------------------------------ FPU port
  assign fpu_we_o = (fx[6:3] == 4'b0100);
  assign fpu_sel_o = fx[2:0];
  assign fpu_d_o = x_q;
  assign fpu_start_o = (fx[6:1] == 6'b011000);
  assign fpu_add_o = fx[0];
  assign fpu_hsel_o = uir[7];  // stage 1: e_q takes the half

  // ------------------------------------------------------------------ IMEM
  sram_1r1w #(.Depth(256), .Width(16), .OldOnCollide(1'b0)) u_imem (
    .clk_i  (clk_i),
    .we_i   (fx == FxIwr),
    .waddr_i(cfg_addr_i[7:0]),
    .wdata_i(cfg_wdata_i[15:0]),
    .re_i   ((fx == FxFetch) || (fx == FxIcrd)),
    .raddr_i((fx == FxFetch) ? x_q[7:0] : cfg_addr_i[7:0]),
    .rdata_o(ird)
  );

  // ------------------------------------------------------------------ M (A and B)
  wire m_en = fx[6];
  wire m_cfg = fx[2];
  wire m_we = fx[1];
  wire m_hi = fx[0];
  wire [MW-1:0] m_cfga = (cfg_target_i == 4'd0) ? {1'b0, cfg_addr_i[AW-2:0], 1'b0}
                                                 : {1'b1, cfg_addr_i[BW-1:0], 1'b0};
  wire [MW-1:0] m_addr = (m_cfg ? m_cfga : ma_q) | MW'(m_hi);
  sram_sp #(.Depth(2 * AWords), .Width(16)) u_m (
    .clk_i  (clk_i),
    .en_i   (m_en),
    .we_i   (m_we),
    .addr_i (m_addr),
    .wdata_i(x_q),
    .rdata_o(mrd)
  );

  // ------------------------------------------------------------------ S and the rx stage
  // the stage holds one wavelet {header, payload}; it drains low half, high half, header
  // (shifting right by 16 after each write) into its slot in cycles without a store
  reg             stg_v_q;
  reg  [1:0]      stg_k_q;    // words written
  reg  [36:0]     stg_q;
  reg  [QW-1:0]   stg_qn_q;
  reg  [PtrW-1:0] stg_p_q;
  wire            st2 = s2 && op2 == OpSt;
  wire            drain = stg_v_q && !st2;
  wire            drained = drain && stg_k_q == 2'd2;  // the header's write: entry complete
  wire [SlotW-1:0] stg_slot = {stg_qn_q, stg_p_q};
  wire [7:0]      d_addr = (stg_k_q == 2'd2) ? (8'd128 | 8'(stg_slot))
                                             : (8'd64 | 8'({stg_slot, stg_k_q[0]}));
  // the micro-program ROM and the S RAM (the generated module holds their contents)
  pe_micro_rom u_mem (
    .clk_i   (clk_i),
    .uaddr_i (upc_d),
    .udata_o (uir),
    .swe_i   (st2 || drain),
    .swaddr_i(st2 ? ea2_q : d_addr),
    .swdata_i(st2 ? x_q : stg_q[15:0]),
    .sraddr_i(ea),
    .srdata_o(srd)
  );

  // per queue: the stage is empty and the queue not full (registered); per color through the
  // map (a 4:1 select of flip-flops)
  reg  [NumQueues-1:0] qr_q;
  genvar gcr;
  generate
    for (gcr = 0; gcr < 16; gcr = gcr + 1) begin : g_cr
      assign color_ready_o[gcr] = qr_q[map_q[gcr]];
    end
  endgenerate
  assign rx_ready_o = color_ready_o[rx_data_i[35:32]];
  wire          push = rx_valid_i && rx_ready_o;
  wire [QW-1:0] rx_q = map_q[rx_data_i[35:32]];
  wire          pop = (fx == FxPop);
  wire          stg_v_d = push || (stg_v_q && !drained);

  // a grant needs the request that was dispatched (dcfg) to have stayed up since: a request
  // withdrawn meanwhile (and another presented) is not granted data read for the first one
  reg  cfg_live_q;
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) cfg_live_q <= 1'b0;
    else if (!cfg_req_i) cfg_live_q <= 1'b0;
    else if (!boot_q && j_fmt && cond == CDcfg) cfg_live_q <= 1'b1;
  end
  wire u_gnt = (fx == FxGnt) && cfg_req_i && cfg_live_q;
  assign cfg_gnt_o = u_gnt;
  wire map_we = (fx == FxMapw);

  wire [CntW-1:0] qc_d [0:NumQueues-1];
  wire [NumQueues-1:0] qfull_d;
  genvar g;
  generate
    for (g = 0; g < NumQueues; g = g + 1) begin : g_q
      assign qc_d[g] = qc_q[g] + CntW'(drained && stg_qn_q == QW'(g))
                       - CntW'(pop && qs_q == QW'(g));
      assign qfull_d[g] = (qc_d[g] == CntW'(QueueDepth));
    end
  endgenerate
  reg  [NumQueues-1:0] qr_d;
  integer q;
  always @(*) begin
    for (q = 0; q < NumQueues; q = q + 1) qr_d[q] = !stg_v_d && !map_we && !qfull_d[q];
  end
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (q = 0; q < NumQueues; q = q + 1) begin
        rdp_q[q] <= '0;
        wrp_q[q] <= '0;
        qc_q[q] <= '0;
      end
      for (q = 0; q < 16; q = q + 1)
        map_q[q] <= QW'(((q == 0) ? 0 : (q <= 2) ? 1 : (q <= 4) ? 2 : 3) % NumQueues);
      qs_q <= '0;
      stg_v_q <= 1'b0;
      stg_k_q <= 2'd0;
      qr_q <= '1;
    end else begin
      for (q = 0; q < NumQueues; q = q + 1) begin
        if (drained && stg_qn_q == QW'(q)) wrp_q[q] <= wrp_q[q] + 1'b1;
        if (pop && qs_q == QW'(q)) rdp_q[q] <= rdp_q[q] + 1'b1;
        qc_q[q] <= qc_d[q];
      end
      if (fx == FxNextq) qs_q <= (32'(qs_q) == NumQueues - 1) ? '0 : qs_q + 1'b1;
      if (map_we) map_q[cfg_addr_i[3:0]] <= cfg_wdata_i[QW-1:0];
      stg_v_q <= stg_v_d;
      if (push) stg_k_q <= 2'd0;
      else if (drain) stg_k_q <= stg_k_q + 2'd1;
      qr_q <= qr_d;
    end
  end
  always @(posedge clk_i) begin
    if (push) begin
      stg_q <= rx_data_i;
      stg_qn_q <= rx_q;
      stg_p_q <= wrp_q[rx_q];
    end else if (drain) begin
      stg_q <= {16'd0, stg_q[36:16]};
    end
  end

  // ------------------------------------------------------------------ transmit
  wire [3:0] uop = ird[15:12];
  assign tx_valid_o = !boot_q && j_fmt && (cond == CTxnr);
  assign tx_data_o = {(uop == 4'h8) && ird[7], ird[11:8], h_q, x_q};

  // ------------------------------------------------------------------ config responses
  // the counters live in S (the micro-program counts MACs, drops, sends, wavelets taken from
  // the queues, and adds busy_q); every read answers {H, X} one cycle after its grant
  reg rvalid_q;
  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) rvalid_q <= 1'b0;
    else rvalid_q <= u_gnt && !cfg_we_i;
  end
  assign cfg_rvalid_o = rvalid_q;
  assign cfg_rdata_o = {h_q, x_q};

  reg qall0;
  always @(*) begin
    qall0 = 1'b1;
    for (q = 0; q < NumQueues; q = q + 1) if (qc_q[q] != '0) qall0 = 1'b0;
  end
  assign idle_o = !run_q && !stg_v_q && qall0;
  assign mac_busy_o = (fx == FxMacev);

// debug: a bench built with -DPE_MICRO_TRACE prints M writes, fetches, register writes
`ifdef PE_MICRO_TRACE
  always @(posedge clk_i) begin
    if (m_en && m_we) $display("%0t M[%0h] <= %04h", $time, m_addr, x_q);
    if (fx == FxFetch) $display("%0t fetch pc %0d", $time, x_q[7:0]);
    if (j_fmt && cond == 4'd12 && !boot_q) $display("  ins %04h", ird);  // dop
    if (st2 && ea2_q < 8) $display("%0t r%0d <= %04h", $time, ea2_q, x_q);
  end
`endif
  wire unused = ^{cfg_addr_i};  // the bits above M's address
endmodule

`default_nettype wire
