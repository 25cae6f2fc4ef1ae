// pe - one processing element (docs/architecture.md section 4): input queues with the
// color -> queue map, task table and picker, sequencer with IMEM and registers, the engine
// (FMAC pipeline, vector instructions, transmit FIFO), SRAM A (activations, one read + one
// write port), SRAM B (accumulators, two banks, each of an even-word and an odd-word
// sub-bank of one read + one write port: two consecutive words of a bank are read, and two
// written, in one cycle at either alignment), the config slave and the counters.
//
// Config slave: a request (cfg_req_i) is accepted in the cycle cfg_gnt_o is high; a read's
// data comes exactly one cycle later on cfg_rvalid_o/cfg_rdata_o (so responses keep request
// order). The engine has priority on each port of A and of each B sub-bank: a config access
// to a port the engine uses in this cycle waits; so a config write of A proceeds while a
// kernel reads A (kernels never write it), and the other B bank is always free for config. IMEM
// reads and register writes wait until no task runs. Targets: 0 A (32-bit words), 1 B,
// 2 B read-and-clear (a read returns the word and zeroes it in the same cycle, using both
// ports of its sub-bank: it waits while the engine uses either; writes are ignored), 3 IMEM,
// 4 task table, 6 queue map, 7 registers, 8 counters (a write clears the addressed counter;
// ctr_clear_i, the host port's CLEAR, clears all five); other targets are accepted, writes
// ignored, reads return 0. Addresses are taken modulo the target's size (the host port
// checks ranges).
`default_nettype none

module pe #(
  parameter int unsigned AWords = 16384,  // bf16 elements; A is AWords/2 x 32 physically
  parameter int unsigned BWords = 8192,   // 32-bit words, two banks
  parameter int unsigned NumQueues = 4,   // input queues
  parameter int unsigned QueueDepth = 8   // wavelets per input queue
) (
`include "pe_ports.vh"
);
  localparam int unsigned QW = (NumQueues > 1) ? $clog2(NumQueues) : 1;
  localparam int unsigned PtrW = $clog2(QueueDepth);
  localparam int unsigned CntW = $clog2(QueueDepth + 1);
  localparam int unsigned AAW = $clog2(AWords / 2);
  localparam int unsigned BAW = $clog2(BWords);
  localparam int unsigned FmacLatency = 4;

  // ------------------------------------------------------------------ config decode
  wire c_a = cfg_req_i && (cfg_target_i == 4'd0);
  wire c_b = cfg_req_i && (cfg_target_i == 4'd1);
  wire c_bc = cfg_req_i && (cfg_target_i == 4'd2) && !cfg_we_i;  // B read-and-clear
  wire c_i = cfg_req_i && (cfg_target_i == 4'd3);
  wire c_t = cfg_req_i && (cfg_target_i == 4'd4);
  wire c_m = cfg_req_i && (cfg_target_i == 4'd6);
  wire c_r = cfg_req_i && (cfg_target_i == 4'd7);
  wire c_n = cfg_req_i && (cfg_target_i == 4'd8);

  // ------------------------------------------------------------------ input queues
  logic [NumQueues-1:0]    head_valid;
  logic [NumQueues*37-1:0] head_data;
  logic [QW-1:0]           map_rdata;
  logic                    q_empty;
  logic                    pick, drop, eng_pop;
  logic [QW-1:0]           pick_q, eng_q;
  wire                     map_we = c_m && cfg_we_i;
  // slot pointers and fills: for a PE that keeps payloads outside pe_queue (pe_lite)
  logic [QW-1:0]             q_push;
  logic [PtrW-1:0]           q_push_ptr;
  logic [NumQueues*PtrW-1:0] q_hptr;
  logic [NumQueues*CntW-1:0] q_cnt;
  wire                       unused_qslots = ^{q_push, q_push_ptr, q_hptr, q_cnt};

  pe_queue #(.NumQueues(NumQueues), .QueueDepth(QueueDepth)) u_queue (
    .clk_i        (clk_i),
    .rst_ni       (rst_ni),
    .rx_valid_i   (rx_valid_i),
    .rx_data_i    (rx_data_i),
    .rx_ready_o   (rx_ready_o),
    .color_ready_o(color_ready_o),
    .hold_i       (1'b0),
    .next_color_i (4'd0),
    .push_i       (1'b0),
    .push_q_i     ('0),
    .push_q_o     (q_push),
    .push_ptr_o   (q_push_ptr),
    .map_we_i     (map_we),
    .map_addr_i   (cfg_addr_i[3:0]),
    .map_wdata_i  (cfg_wdata_i[QW-1:0]),
    .map_rdata_o  (map_rdata),
    .head_valid_o (head_valid),
    .head_data_o  (head_data),
    .head_ptr_o   (q_hptr),
    .count_o      (q_cnt),
    .pop_i        (pick || drop || eng_pop),
    .pop_q_i      (eng_pop ? eng_q : pick_q),
    .empty_o      (q_empty)
  );

  // ------------------------------------------------------------------ task table, picker
  logic [NumQueues*5-1:0] head_tid;
  always_comb begin
    for (int hq = 0; hq < NumQueues; hq = hq + 1) head_tid[hq*5 +: 5] = head_data[hq*37 + 32 +: 5];
  end
  logic       pick_en, blk_we, blk_set;
  logic [4:0] blk_tid;
  logic [7:0] pick_pc;
  logic [9:0] task_rdata;

  pe_tasktab #(.NumQueues(NumQueues)) u_tasktab (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .cfg_we_i    (c_t && cfg_we_i),
    .cfg_addr_i  (cfg_addr_i[4:0]),
    .cfg_wdata_i (cfg_wdata_i[9:0]),
    .cfg_rdata_o (task_rdata),
    .blk_we_i    (blk_we),
    .blk_set_i   (blk_set),
    .blk_tid_i   (blk_tid),
    .head_valid_i(head_valid),
    .head_tid_i  (head_tid),
    .pick_en_i   (pick_en),
    .pick_o      (pick),
    .drop_o      (drop),
    .pick_q_o    (pick_q),
    .pick_pc_o   (pick_pc)
  );

  // ------------------------------------------------------------------ sequencer
  logic         imem_cgnt, reg_gnt, running;
  logic [15:0]  imem_rdata, reg_rdata;
  logic         eng_start, eng_done, eng_ld, eng_r6_we, eng_w_we, eng_r1_we;
  logic [15:0]  eng_instr, eng_ld_data, eng_r6, eng_r1;
  logic [127:0] eng_regs;
  logic [15:0]  eng_opa, eng_opb, eng_opd;
  logic [31:0]  eng_w, eng_w_new;
  logic [4:0]   eng_tid;
  logic [QW-1:0] seq_q;

  pe_seq #(.NumQueues(NumQueues)) u_seq (
    .clk_i        (clk_i),
    .rst_ni       (rst_ni),
    .imem_we_i    (c_i && cfg_we_i),
    .imem_waddr_i (cfg_addr_i[7:0]),
    .imem_wdata_i (cfg_wdata_i[15:0]),
    .imem_cre_i   (c_i && !cfg_we_i),
    .imem_craddr_i(cfg_addr_i[7:0]),
    .imem_cgnt_o  (imem_cgnt),
    .imem_rdata_o (imem_rdata),
    .reg_we_i     (c_r && cfg_we_i),
    .reg_addr_i   (cfg_addr_i[2:0]),
    .reg_wdata_i  (cfg_wdata_i[15:0]),
    .reg_gnt_o    (reg_gnt),
    .reg_rdata_o  (reg_rdata),
    .pick_en_o    (pick_en),
    .pick_i       (pick),
    .pick_pc_i    (pick_pc),
    .pick_q_i     (pick_q),
    .pick_data_i  (head_data[pick_q*37 +: 37]),
    .blk_we_o     (blk_we),
    .blk_set_o    (blk_set),
    .blk_tid_o    (blk_tid),
    .eng_start_o  (eng_start),
    .eng_instr_o  (eng_instr),
    .eng_regs_o   (eng_regs),
    .eng_opa_o    (eng_opa),
    .eng_opb_o    (eng_opb),
    .eng_opd_o    (eng_opd),
    .eng_w_o      (eng_w),
    .eng_tid_o    (eng_tid),
    .eng_q_o      (seq_q),
    .eng_done_i   (eng_done),
    .eng_ld_i     (eng_ld),
    .eng_ld_data_i(eng_ld_data),
    .eng_r6_we_i  (eng_r6_we),
    .eng_r6_i     (eng_r6),
    .eng_r1_we_i  (eng_r1_we),
    .eng_r1_i     (eng_r1),
    .eng_w_we_i   (eng_w_we),
    .eng_w_i      (eng_w_new),
    .running_o    (running)
  );

  // ------------------------------------------------------------------ engine
  logic           e_a_en, e_a_we, e_b_re, e_b_re2, e_b_re3, e_b_re4, e_b_we, e_b_we2;
  logic           eng_idle, mac, mac2;
  logic [AAW-1:0] e_a_addr, e_a_raddr2;
  logic           e_a_re2;
  logic [31:0]    e_a_wdata, a_rdata, e_b_wdata, e_b_wdata2;
  logic [BAW-1:0] e_b_raddr, e_b_raddr2, e_b_raddr3, e_b_raddr4, e_b_waddr, e_b_waddr2;
  logic [127:0]   b_rdata;
  wire            b_cfg_we;  // a config write (or read-and-clear) of B lands this cycle

  pe_vec #(
    .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues), .FmacLatency(FmacLatency)
  ) u_vec (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .start_i     (eng_start),
    .instr_i     (eng_instr),
    .regs_i      (eng_regs),
    .opa_i       (eng_opa),
    .opb_i       (eng_opb),
    .opd_i       (eng_opd),
    .w_i         (eng_w),
    .tid_i       (eng_tid),
    .q_i         (seq_q),
    .done_o      (eng_done),
    .ld_o        (eng_ld),
    .ld_data_o   (eng_ld_data),
    .r6_we_o     (eng_r6_we),
    .r6_o        (eng_r6),
    .r1_we_o     (eng_r1_we),
    .r1_o        (eng_r1),
    .w_we_o      (eng_w_we),
    .w_o         (eng_w_new),
    .q_o         (eng_q),
    .head_valid_i(head_valid[eng_q]),
    .head_data_i (head_data[eng_q*37 +: 37]),
    .pop_o       (eng_pop),
    .a_en_o      (e_a_en),
    .a_we_o      (e_a_we),
    .a_addr_o    (e_a_addr),
    .a_wdata_o   (e_a_wdata),
    .a_rdata_i   (a_rdata),
    .a_re2_o     (e_a_re2),
    .a_raddr2_o  (e_a_raddr2),
    .b_re_o      (e_b_re),
    .b_raddr_o   (e_b_raddr),
    .b_re2_o     (e_b_re2),
    .b_raddr2_o  (e_b_raddr2),
    .b_re3_o     (e_b_re3),
    .b_raddr3_o  (e_b_raddr3),
    .b_re4_o     (e_b_re4),
    .b_raddr4_o  (e_b_raddr4),
    .b_rdata_i   (b_rdata),
    .b_we_o      (e_b_we),
    .b_waddr_o   (e_b_waddr),
    .b_wdata_o   (e_b_wdata),
    .b_we2_o     (e_b_we2),
    .b_waddr2_o  (e_b_waddr2),
    .b_wdata2_o  (e_b_wdata2),
    .cfg_bwe_i   (b_cfg_we),
    .cfg_bwaddr_i(cfg_addr_i[BAW-1:0]),
    .tx_valid_o  (tx_valid_o),
    .tx_data_o   (tx_data_o),
    .tx_ready_i  (tx_ready_i),
    .mac_o       (mac),
    .mac2_o      (mac2),
    .idle_o      (eng_idle)
  );

  // ------------------------------------------------------------------ SRAM A
  // one read and one write port: a config write waits only for an engine write (cvt.bf,
  // vlut.bf, vlut.a, sta), a config read only for an engine read (vlut.a reads on the second
  // read request while it writes on the first); the host never writes a word a running
  // kernel reads, and vlut.a never reads a word with its write pending, so a collision's
  // old word (OldOnCollide) is never used
  wire a_e_re = (e_a_en && !e_a_we) || e_a_re2;
  wire a_e_we = e_a_en && e_a_we;
  wire a_cfg = c_a && (cfg_we_i ? !a_e_we : !a_e_re);
  wire [AAW-1:0] a_e_raddr = e_a_re2 ? e_a_raddr2 : e_a_addr;
  sram_1r1w #(.Depth(AWords / 2), .Width(32)) u_sram_a (
    .clk_i  (clk_i),
    .we_i   (a_e_we || (a_cfg && cfg_we_i)),
    .waddr_i(a_e_we ? e_a_addr : cfg_addr_i[AAW-1:0]),
    .wdata_i(a_e_we ? e_a_wdata : cfg_wdata_i),
    .re_i   (a_e_re || (a_cfg && !cfg_we_i)),
    .raddr_i(a_e_re ? a_e_raddr : cfg_addr_i[AAW-1:0]),
    .rdata_o(a_rdata)
  );

  // ------------------------------------------------------------------ SRAM B, two banks
  // Sub-bank {bank, word lsb} of 2 bits. pe_vec never sends two reads, or two writes, to one
  // sub-bank in a cycle (vlut's table and vmac's c: the other bank; a lane's second word:
  // the next word, the other parity), so each sub-bank takes its port's address and every
  // read port's data comes from the sub-bank it read.
  localparam int unsigned SAW = BAW - 2;
  wire [1:0] c_sb = {cfg_addr_i[BAW-1], cfg_addr_i[0]};
  logic [3:0]     e_rd_sb, e_wr_sb;
  logic [SAW-1:0] sb_raddr [0:3];
  logic [SAW-1:0] sb_waddr [0:3];
  logic [31:0]    sb_wdata [0:3];
  logic [31:0]    sb_rdata [0:3];
  logic [1:0]     port_sb_q [0:3];
  logic [1:0]     port_sb_d [0:3];
  wire  [3:0]     e_re = {e_b_re4, e_b_re3, e_b_re2, e_b_re};
  wire  [BAW-1:0] e_ra [0:3];
  assign e_ra[0] = e_b_raddr;
  assign e_ra[1] = e_b_raddr2;
  assign e_ra[2] = e_b_raddr3;
  assign e_ra[3] = e_b_raddr4;
  always_comb begin
    e_rd_sb = '0; e_wr_sb = '0;
    for (int s = 0; s < 4; s = s + 1) begin
      sb_raddr[s] = cfg_addr_i[BAW-2:1]; sb_waddr[s] = cfg_addr_i[BAW-2:1];
      sb_wdata[s] = c_bc ? 32'd0 : cfg_wdata_i;
    end
    for (int p = 0; p < 4; p = p + 1) begin
      port_sb_d[p] = port_sb_q[p];
      if (e_re[p]) begin
        e_rd_sb[{e_ra[p][BAW-1], e_ra[p][0]}] = 1'b1;
        sb_raddr[{e_ra[p][BAW-1], e_ra[p][0]}] = e_ra[p][BAW-2:1];
        port_sb_d[p] = {e_ra[p][BAW-1], e_ra[p][0]};
      end
    end
    if (e_b_we) begin
      e_wr_sb[{e_b_waddr[BAW-1], e_b_waddr[0]}] = 1'b1;
      sb_waddr[{e_b_waddr[BAW-1], e_b_waddr[0]}] = e_b_waddr[BAW-2:1];
      sb_wdata[{e_b_waddr[BAW-1], e_b_waddr[0]}] = e_b_wdata;
    end
    if (e_b_we2) begin
      e_wr_sb[{e_b_waddr2[BAW-1], e_b_waddr2[0]}] = 1'b1;
      sb_waddr[{e_b_waddr2[BAW-1], e_b_waddr2[0]}] = e_b_waddr2[BAW-2:1];
      sb_wdata[{e_b_waddr2[BAW-1], e_b_waddr2[0]}] = e_b_wdata2;
    end
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int p = 0; p < 4; p = p + 1) port_sb_q[p] <= '0;
    end else begin
      for (int p = 0; p < 4; p = p + 1) port_sb_q[p] <= port_sb_d[p];
    end
  end
  for (genvar p = 0; p < 4; p = p + 1) begin : g_port
    assign b_rdata[p*32 +: 32] = sb_rdata[port_sb_q[p]];
  end
  wire       b_cfg_ok = c_bc ? (!e_wr_sb[c_sb] && !e_rd_sb[c_sb])
                      : cfg_we_i ? !e_wr_sb[c_sb] : !e_rd_sb[c_sb];
  wire       b_cfg = (c_b || c_bc) && b_cfg_ok;
  assign b_cfg_we = b_cfg && (cfg_we_i || c_bc);
  for (genvar sb = 0; sb < 4; sb = sb + 1) begin : g_bank
    wire cfg_here = b_cfg && (c_sb == sb[1:0]);
    sram_1r1w #(.Depth(BWords / 4), .Width(32)) u_sram_b (
      .clk_i  (clk_i),
      .we_i   (e_wr_sb[sb] || (cfg_here && (cfg_we_i || c_bc))),
      .waddr_i(sb_waddr[sb]),
      .wdata_i(sb_wdata[sb]),
      .re_i   (e_rd_sb[sb] || (cfg_here && !cfg_we_i)),
      .raddr_i(sb_raddr[sb]),
      .rdata_o(sb_rdata[sb])
    );
  end

  // ------------------------------------------------------------------ counters
  logic [31:0] cnt_q [0:4];
  logic [31:0] cnt_d [0:4];
  wire   [4:0] cnt_inc = {tx_valid_o && tx_ready_i, rx_valid_i && rx_ready_o, drop, running, mac};
  // counter 0 counts MAC issues: two in a cycle when the vector group's second lane issues
  always_comb begin
    for (int ci = 0; ci < 5; ci = ci + 1) begin
      cnt_d[ci] = cnt_q[ci] + 32'(cnt_inc[ci]) + ((ci == 0) ? 32'(mac2) : 32'd0);
      if ((c_n && cfg_we_i && cfg_addr_i == 16'(ci)) || ctr_clear_i) cnt_d[ci] = '0;
    end
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int ci = 0; ci < 5; ci = ci + 1) cnt_q[ci] <= '0;
    end else begin
      for (int ci = 0; ci < 5; ci = ci + 1) cnt_q[ci] <= cnt_d[ci];
    end
  end

  // ------------------------------------------------------------------ config responses
  logic [31:0] rreg_d, rreg_q;
  logic        rvalid_q;
  logic [1:0]  rsb_q;
  logic [1:0]  rsrc_q, rsrc_d;  // 0 register value, 1 A, 2 B, 3 IMEM
  always_comb begin
    cfg_gnt_o = cfg_req_i;
    rsrc_d = 2'd0;
    rreg_d = '0;
    case (cfg_target_i)
      4'd0: begin cfg_gnt_o = a_cfg; rsrc_d = 2'd1; end
      4'd1: begin cfg_gnt_o = b_cfg; rsrc_d = 2'd2; end
      4'd2: begin cfg_gnt_o = cfg_we_i ? cfg_req_i : b_cfg; rsrc_d = 2'd2; end
      4'd3: begin cfg_gnt_o = c_i && (cfg_we_i || imem_cgnt); rsrc_d = 2'd3; end
      4'd4: rreg_d = {22'd0, task_rdata};
      4'd6: rreg_d = 32'(map_rdata);
      4'd7: begin cfg_gnt_o = c_r && (!cfg_we_i || reg_gnt); rreg_d = {16'd0, reg_rdata}; end
      4'd8: rreg_d = (cfg_addr_i < 16'd5) ? cnt_q[cfg_addr_i[2:0]] : 32'd0;
      default: ;
    endcase
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rvalid_q <= 1'b0;
      rsrc_q   <= '0;
      rsb_q    <= '0;
      rreg_q   <= '0;
    end else begin
      rvalid_q <= cfg_gnt_o && !cfg_we_i;
      rsrc_q   <= rsrc_d;
      rsb_q    <= c_sb;
      rreg_q   <= rreg_d;
    end
  end
  always_comb begin
    case (rsrc_q)
      2'd1: cfg_rdata_o = a_rdata;
      2'd2: cfg_rdata_o = sb_rdata[rsb_q];
      2'd3: cfg_rdata_o = {16'd0, imem_rdata};
      default: cfg_rdata_o = rreg_q;
    endcase
  end
  assign cfg_rvalid_o = rvalid_q;

  assign idle_o = !running && q_empty && eng_idle;
  assign mac_busy_o = mac;

`ifdef FORMAL
  // B's sub-banks take one engine read and one engine write a cycle: pe_vec never sends two
  // reads, or two writes, to one sub-bank (g_bank takes one address per port)
  always_comb begin
    for (int p = 0; p < 4; p = p + 1)
      for (int q = p + 1; q < 4; q = q + 1)
        assert (!(e_re[p] && e_re[q] && e_ra[p][BAW-1] == e_ra[q][BAW-1] &&
                  e_ra[p][0] == e_ra[q][0]));
    assert (!(e_b_we && e_b_we2 && e_b_waddr[BAW-1] == e_b_waddr2[BAW-1] &&
              e_b_waddr[0] == e_b_waddr2[0]));
  end
`endif
endmodule

`default_nettype wire
