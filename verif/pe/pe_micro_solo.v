// pe_micro_solo - pe_micro with a floating-point unit of its own (pe_fpu_share, N = 1): the
// PE as tb_pe sees it (pe_lite's ports). verif/pe/tb_pe_micro.cpp runs tb_pe's scenarios on it.
`default_nettype none

module pe_micro_solo #(
  parameter int unsigned AWords = 16384,
  parameter int unsigned BWords = 8192,
  parameter int unsigned NumQueues = 4,
  parameter int unsigned QueueDepth = 8
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
  input  wire        ctr_clear_i
);
  wire        f_req, f_gnt, f_we, f_start, f_add, f_done, f_hsel;
  wire [2:0]  f_sel;
  wire [15:0] f_d, f_y;
  pe_micro #(.AWords(AWords), .BWords(BWords), .NumQueues(NumQueues), .QueueDepth(QueueDepth))
  u_pe (
    .clk_i, .rst_ni, .rx_valid_i, .rx_data_i, .rx_ready_o, .color_ready_o, .tx_valid_o,
    .tx_data_o, .tx_ready_i, .cfg_req_i, .cfg_we_i, .cfg_target_i, .cfg_addr_i, .cfg_wdata_i,
    .cfg_gnt_o, .cfg_rvalid_o, .cfg_rdata_o, .idle_o, .mac_busy_o, .ctr_clear_i,
    .fpu_req_o(f_req), .fpu_gnt_i(f_gnt), .fpu_we_o(f_we), .fpu_sel_o(f_sel), .fpu_d_o(f_d),
    .fpu_start_o(f_start), .fpu_add_o(f_add), .fpu_done_i(f_done), .fpu_hsel_o(f_hsel),
    .fpu_y_i(f_y)
  );
  pe_fpu_share #(.N(1)) u_fpu (
    .clk_i, .rst_ni, .req_i(f_req), .gnt_o(f_gnt), .we_i(f_we), .sel_i(f_sel), .d_i(f_d),
    .start_i(f_start), .add_i(f_add), .done_o(f_done), .hsel_i(f_hsel), .y_o(f_y)
  );
endmodule

`default_nettype wire
