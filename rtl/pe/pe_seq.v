// pe_seq - the PE's sequencer: IMEM (256 x 16, one EBR), registers r0-r7, the wavelet
// register W, the scalar ALU, branches, block/unblock, and the hand-off of send, memory and
// vector instructions to the engine (pe_vec). ISA: docs/architecture.md 4.3.
//
// Timing: the IMEM read address is the next pc computed this cycle, so straight-line code
// and taken branches both run one instruction per cycle (li takes two, its second word is
// the immediate). A task starts the cycle after it is picked; a ret lets the picker start
// the next task in the same cycle. An engine instruction (send, axpy, dot, redv, sendv,
// fill, every 0xF: lda/sta/ldb/stb and the vector group) is handed over with eng_start_o and
// the sequencer waits on it until eng_done_i (which may come with a load or rsqrt result or a
// new r6); the engine updates W while an axpy chains.
// Config: IMEM writes at any time; IMEM reads only while no task runs (the sequencer owns
// the read port); register writes only while no task runs (reg_gnt_o).
`default_nettype none

module pe_seq #(
  parameter int unsigned NumQueues = 4,  // width of the queue index carried with a task
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1
) (
  input  wire            clk_i,
  input  wire            rst_ni,
  // config
  input  wire            imem_we_i,
  input  wire  [7:0]     imem_waddr_i,
  input  wire  [15:0]    imem_wdata_i,
  input  wire            imem_cre_i,
  input  wire  [7:0]     imem_craddr_i,
  output wire            imem_cgnt_o,
  output wire  [15:0]    imem_rdata_o,
  input  wire            reg_we_i,
  input  wire  [2:0]     reg_addr_i,
  input  wire  [15:0]    reg_wdata_i,
  output wire            reg_gnt_o,
  output wire  [15:0]    reg_rdata_o,
  // task picker
  output logic           pick_en_o,
  input  wire            pick_i,
  input  wire  [7:0]     pick_pc_i,
  input  wire  [QW-1:0]  pick_q_i,
  input  wire  [36:0]    pick_data_i,
  output logic           blk_we_o,
  output wire            blk_set_o,
  output wire  [4:0]     blk_tid_o,
  // engine
  output logic           eng_start_o,
  output wire  [15:0]    eng_instr_o,
  output wire  [127:0]   eng_regs_o,
  output wire  [15:0]    eng_opa_o,   // source operands of the instruction: send rs, lda/sta/
  output wire  [15:0]    eng_opb_o,   // ldb/stb rs (opa); send rt (opb); sta/stb rd (opd)
  output wire  [15:0]    eng_opd_o,
  output wire  [31:0]    eng_w_o,
  output wire  [4:0]     eng_tid_o,
  output wire  [QW-1:0]  eng_q_o,
  input  wire            eng_done_i,
  input  wire            eng_ld_i,
  input  wire  [15:0]    eng_ld_data_i,
  input  wire            eng_r6_we_i,
  input  wire  [15:0]    eng_r6_i,
  input  wire            eng_r1_we_i,  // axpy took a SET_MAJOR (r1 = its arg)
  input  wire  [15:0]    eng_r1_i,
  input  wire            eng_w_we_i,
  input  wire  [31:0]    eng_w_i,
  output wire            running_o
);
  logic [15:0]   r_q [0:7];
  logic [15:0]   r_d [0:7];
  logic [7:0]    pc_q, pc_d;
  logic          run_q, run_d;
  logic          li_q, li_d;
  logic [2:0]    lird_q, lird_d;
  logic          wait_q, wait_d;
  logic [31:0]   w_q, w_d;
  logic [4:0]    tid_q, tid_d;
  logic [QW-1:0] tq_q, tq_d;
  logic [7:0]    imem_raddr;

  logic [15:0] ins;
  sram_1r1w #(.Depth(256), .Width(16)) u_imem (
    .clk_i  (clk_i),
    .we_i   (imem_we_i),
    .waddr_i(imem_waddr_i),
    .wdata_i(imem_wdata_i),
    .re_i   (1'b1),
    .raddr_i(imem_raddr),
    .rdata_o(ins)
  );

  wire [3:0]  op  = ins[15:12];
  wire [2:0]  rd  = ins[11:9];
  // Two source read ports shared by every format (beq/bne and send keep their operands in
  // other fields): one 8:1 mux per port instead of one per field, and the engine takes its
  // operands from these ports too (eng_op*_o).
  wire        is_br   = (op == 4'h5);
  wire        is_send = (op == 4'h8);
  wire [2:0]  rs  = is_br ? ins[10:8] : is_send ? ins[6:4] : ins[8:6];
  wire [2:0]  rt  = is_br ? ins[7:5] : is_send ? ins[3:1] : ins[5:3];
  wire [15:0] vrd = r_q[rd];
  wire [15:0] vrs = r_q[rs];
  wire [15:0] vrt = r_q[rt];
  wire [7:0]  pc1 = pc_q + 8'd1;
  wire [15:0] dec = vrd - 16'd1;

  logic [15:0] alu;
  always_comb begin
    case (ins[2:0])
      3'd0: alu = vrs + vrt;
      3'd1: alu = vrs - vrt;
      3'd2: alu = vrs & vrt;
      3'd3: alu = vrs | vrt;
      3'd4: alu = vrs ^ vrt;
      3'd5: alu = vrs << vrt[3:0];
      3'd6: alu = vrs >> vrt[3:0];
      default: alu = 16'(vrs * vrt);
    endcase
  end

  logic [15:0] wsel;
  always_comb begin
    case (ins[1:0])
      2'd0: wsel = w_q[31:16];
      2'd1: wsel = w_q[15:0];
      2'd2: wsel = {11'd0, tid_q};
      default: wsel = 16'd0;
    endcase
  end
  logic [7:0] npc;
  always_comb begin
    for (int i = 0; i < 8; i = i + 1) r_d[i] = r_q[i];
    npc         = pc_q;
    run_d       = run_q;
    li_d        = li_q;
    lird_d      = lird_q;
    wait_d      = wait_q;
    w_d         = w_q;
    tid_d       = tid_q;
    tq_d        = tq_q;
    pick_en_o   = 1'b0;
    blk_we_o    = 1'b0;
    eng_start_o = 1'b0;
    if (!run_q) begin
      pick_en_o = 1'b1;
      if (reg_we_i) r_d[reg_addr_i] = reg_wdata_i;
    end else if (li_q) begin
      r_d[lird_q] = ins;
      li_d = 1'b0;
      npc = pc1;
    end else begin
      case (op)
        4'h0: begin
          if (ins[0]) npc = pc1;
          else begin
            run_d = 1'b0;
            pick_en_o = 1'b1;
          end
        end
        4'h1: begin
          li_d = 1'b1;
          lird_d = rd;
          npc = pc1;
        end
        4'h2: begin
          r_d[rd] = vrs + {{10{ins[5]}}, ins[5:0]};
          npc = pc1;
        end
        4'h3: begin
          r_d[rd] = alu;
          npc = pc1;
        end
        4'h4: begin
          r_d[rd] = wsel;
          npc = pc1;
        end
        4'h5: npc = ((vrs == vrt) != ins[11]) ? pc1 + {{3{ins[4]}}, ins[4:0]} : pc1;
        4'h6: begin
          r_d[rd] = dec;
          npc = (dec != 16'd0) ? pc1 + ins[7:0] : pc1;  // off9 modulo the 8-bit pc
        end
        4'h7: npc = pc1 + ins[7:0];  // off12 modulo the 8-bit pc
        4'h9: begin
          blk_we_o = 1'b1;
          npc = pc1;
        end
        default: begin  // 0x8 send, 0xA-0xF engine instructions
          if (!wait_q) begin
            eng_start_o = 1'b1;
            wait_d = 1'b1;
          end else if (eng_done_i) begin
            wait_d = 1'b0;
            npc = pc1;
            if (eng_ld_i) r_d[rd] = eng_ld_data_i;
          end
        end
      endcase
    end
    if (eng_r6_we_i) r_d[6] = eng_r6_i;
    if (eng_r1_we_i) r_d[1] = eng_r1_i;
    if (eng_w_we_i) w_d = eng_w_i;
    if (pick_i) begin
      run_d = 1'b1;
      w_d   = pick_data_i[31:0];
      tid_d = pick_data_i[36:32];
      tq_d  = pick_q_i;
    end
    pc_d = pick_i ? pick_pc_i : npc;
    imem_raddr = (pick_i || run_d) ? pc_d : imem_craddr_i;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int i = 0; i < 8; i = i + 1) r_q[i] <= '0;
      pc_q   <= '0;
      run_q  <= 1'b0;
      li_q   <= 1'b0;
      lird_q <= '0;
      wait_q <= 1'b0;
      w_q    <= '0;
      tid_q  <= '0;
      tq_q   <= '0;
    end else begin
      for (int i = 0; i < 8; i = i + 1) r_q[i] <= r_d[i];
      pc_q   <= pc_d;
      run_q  <= run_d;
      li_q   <= li_d;
      lird_q <= lird_d;
      wait_q <= wait_d;
      w_q    <= w_d;
      tid_q  <= tid_d;
      tq_q   <= tq_d;
    end
  end

  assign imem_cgnt_o  = imem_cre_i && !pick_i && !run_d;
  assign imem_rdata_o = ins;
  assign reg_gnt_o    = !run_q;
  assign reg_rdata_o  = r_q[reg_addr_i];
  assign blk_set_o    = !ins[11];
  assign blk_tid_o    = ins[4:0];
  assign eng_instr_o  = ins;
  assign eng_opa_o    = vrs;
  assign eng_opb_o    = vrt;
  assign eng_opd_o    = vrd;
  assign eng_w_o      = w_q;
  assign eng_tid_o    = tid_q;
  assign eng_q_o      = tq_q;
  assign running_o    = run_q;
  for (genvar g = 0; g < 8; g = g + 1) begin : g_regs
    assign eng_regs_o[g*16 +: 16] = r_q[g];
  end
endmodule

`default_nettype wire
