// pe_stub: TEST DOUBLE for the real PE (rtl/pe/pe.v, owned by the PE area), used only by
// the mesh benches until the PE is merged. Same module name and port list as the PE.
// Behaviour: accepts every wavelet; a data wavelet on color 6 is echoed with the same
// payload on color 5 (OUT), every other wavelet is sunk; config accesses are granted at
// once and hit a 64-word scratch memory per target (reads return one cycle later);
// target 8 reads return counters: 3 wavelets received, 4 wavelets sent, others 0; CLEAR
// (ctr_clear_i) zeroes them.
`default_nettype none

module pe #(
  parameter int unsigned AWords = 16384,  // unused by the stub
  parameter int unsigned BWords = 8192,   // unused by the stub
  parameter int unsigned NumQueues = 4,   // unused by the stub
  parameter int unsigned QueueDepth = 8   // unused by the stub
) (
`include "pe_ports.vh"
);
  logic        echo_v_q;
  logic [36:0] echo_q;
  logic [31:0] mem_q [16*64];
  logic        rv_q;
  logic [31:0] rd_q, rx_cnt_q, tx_cnt_q;
  wire         rx_hs = rx_valid_i && rx_ready_o;
  wire         tx_hs = tx_valid_o && tx_ready_i;
  wire [9:0]   idx = {cfg_target_i, cfg_addr_i[5:0]};

  assign rx_ready_o = !echo_v_q;
  assign color_ready_o = {16{!echo_v_q}};
  assign tx_valid_o = echo_v_q;
  assign tx_data_o = echo_q;
  assign cfg_gnt_o = cfg_req_i;
  assign cfg_rvalid_o = rv_q;
  assign cfg_rdata_o = rd_q;
  assign idle_o = !echo_v_q;
  assign mac_busy_o = 1'b0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      echo_v_q <= 1'b0; echo_q <= '0; rv_q <= 1'b0; rd_q <= '0; rx_cnt_q <= '0; tx_cnt_q <= '0;
    end else begin
      if (rx_hs && rx_data_i[36:32] == 5'h06) begin
        echo_v_q <= 1'b1; echo_q <= {1'b0, 4'd5, rx_data_i[31:0]};
      end else if (tx_hs) echo_v_q <= 1'b0;
      if (ctr_clear_i) begin rx_cnt_q <= '0; tx_cnt_q <= '0; end
      else begin
        if (rx_hs) rx_cnt_q <= rx_cnt_q + 1;
        if (tx_hs) tx_cnt_q <= tx_cnt_q + 1;
      end
      rv_q <= cfg_req_i && !cfg_we_i;
      if (cfg_req_i && !cfg_we_i) begin
        if (cfg_target_i == 4'd8) rd_q <= (cfg_addr_i == 16'd3) ? rx_cnt_q : (cfg_addr_i == 16'd4) ? tx_cnt_q : 32'd0;
        else rd_q <= mem_q[idx];
      end
    end
  end
  always_ff @(posedge clk_i) if (cfg_req_i && cfg_we_i) mem_q[idx] <= cfg_wdata_i;
endmodule

`default_nettype wire
