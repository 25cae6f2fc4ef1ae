// pe_micro_mt_solo - PE 0 of a pe_micro_mt (N = 3, the fewest it takes) with the shared FPU
// (pe_fpu_share), as tb_pe sees a PE (pe_lite's ports); PEs 1 and 2 run their idle
// loop with nothing to do (they get no wavelets and no config), taking their turns. The
// read word, which pe_micro_mt gives in the grant's cycle, is registered here to arrive a
// cycle later as pe_lite's does. pe_micro_mt tells readiness only for the wavelet on rx_data
// (rx_ready_o), from the colour it was told a cycle ahead (rx_next_color_i, as a router
// tells the colour of its next bus head), so the bench may offer one colour a cycle:
// color_ready_o has that colour's bit, and the bench offers a wavelet of it or none. The
// colour stays while its wavelets are taken, else moves on to the next one (every colour
// comes round within 16 cycles of refusals). The bench may offer a wavelet the PE does not
// take.
// verif/pe/tb_pe_micro_mt.cpp runs tb_pe's scenarios on it.
`default_nettype none

module pe_micro_mt_solo #(
  parameter int unsigned AWords = 16384,
  parameter int unsigned BWords = 8192,
  parameter int unsigned NumQueues = 4,
  parameter int unsigned QueueDepth = 8
) (
`include "pe_ports.vh"
);
  localparam int unsigned N = 3;
  logic [N-1:0] rx_ready, tx_valid, gnt, idle, mac_busy, f_req, f_gnt;
  logic [3:0]   color_q, color_d;  // the colour offered
  always_comb color_d = (rx_valid_i && rx_ready[0]) ? color_q : color_q + 4'd1;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) color_q <= 4'd0;
    else color_q <= color_d;
  end
  logic [31:0] rdata;
  logic        f_we, f_start, f_add, f_done, f_hsel;
  logic [2:0]  f_sel;
  logic [15:0] f_d, f_y;
  pe_micro_mt #(.N(N), .AWords(AWords), .BWords(BWords), .NumQueues(NumQueues),
                .QueueDepth(QueueDepth)) u_pes (
    .clk_i, .rst_ni,
    .rx_valid_i   ({{(N-1){1'b0}}, rx_valid_i}),
    .rx_data_i    ({{(N-1){37'd0}}, rx_data_i}),
    .rx_ready_o   (rx_ready),
    .rx_next_color_i({{(N-1){4'd0}}, color_d}),
    .tx_valid_o   (tx_valid),
    .tx_data_o,
    .tx_ready_i   ({{(N-1){1'b1}}, tx_ready_i}),
    .cfg_req_i    ({{(N-1){1'b0}}, cfg_req_i}),
    .cfg_we_i, .cfg_target_i, .cfg_addr_i, .cfg_wdata_i,
    .cfg_gnt_o    (gnt),
    .cfg_rdata_o  (rdata),
    .idle_o       (idle),
    .mac_busy_o   (mac_busy),
    .ctr_clear_i,
    .fpu_req_o(f_req), .fpu_gnt_i(f_gnt), .fpu_we_o(f_we), .fpu_sel_o(f_sel), .fpu_d_o(f_d),
    .fpu_start_o(f_start), .fpu_add_o(f_add), .fpu_done_i(f_done), .fpu_hsel_o(f_hsel),
    .fpu_y_i(f_y)
  );
  pe_fpu_share #(.N(N)) u_fpu (
    .clk_i, .rst_ni, .req_i(f_req), .gnt_o(f_gnt), .we_i(f_we), .sel_i(f_sel), .d_i(f_d),
    .start_i(f_start), .add_i(f_add), .done_o(f_done), .hsel_i(f_hsel), .y_o(f_y)
  );
  assign rx_ready_o = rx_ready[0];
  assign color_ready_o = 16'd1 << color_q;
  assign tx_valid_o = tx_valid[0];
  assign cfg_gnt_o = gnt[0];
  assign idle_o = idle[0];
  assign mac_busy_o = mac_busy[0];
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) cfg_rvalid_o <= 1'b0;
    else cfg_rvalid_o <= gnt[0] && !cfg_we_i;
  end
  always_ff @(posedge clk_i) if (gnt[0]) cfg_rdata_o <= rdata;
  wire unused = ^{rx_ready[N-1:1], tx_valid[N-1:1], gnt[N-1:1], idle[N-1:1],
                  mac_busy[N-1:1]};
endmodule

`default_nettype wire
