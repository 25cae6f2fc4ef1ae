// mesh_fabric: Rows x Cols mesh_routers wired N/E/S/W, every router's local port exposed.
//
// Router (r, c) has index q = r*Cols + c (row-major, the PE order). Its N output feeds the
// S input of (r-1, c), E feeds W of (r, c+1), S feeds N of (r+1, c), W feeds E of (r, c-1).
// The W port of router (0, 0) is the host link (host_*). Every other edge input is idle and
// every other edge output is always ready: a route that points off the mesh drops the
// wavelet (it is still counted in that port's counter). This is what the traffic benches
// drive; mesh_top wires tiles (router + PE) the same way.
`default_nettype none

module mesh_fabric #(
  parameter int unsigned Rows = 2,       // mesh rows
  parameter int unsigned Cols = 2,       // mesh columns
  parameter int unsigned FifoDepth = 2,  // router input FIFO entries
  localparam int unsigned P = Rows * Cols,
  localparam int unsigned W = 37
) (
  input  wire            clk_i,
  input  wire            rst_ni,
  // host link on the W port of router (0, 0)
  input  wire            host_in_valid_i,
  input  wire  [W-1:0]   host_in_data_i,
  output wire            host_in_ready_o,
  output wire            host_out_valid_o,
  output wire  [W-1:0]   host_out_data_o,
  input  wire            host_out_ready_i,
  // local ports: loc_in_* into router q (from PE q), loc_out_* from router q (to PE q)
  input  wire  [P-1:0]   loc_in_valid_i,
  input  wire  [P*W-1:0] loc_in_data_i,
  output wire  [P-1:0]   loc_in_ready_o,
  output wire  [P-1:0]   loc_out_valid_o,
  output wire  [P*W-1:0] loc_out_data_o,
  input  wire  [P-1:0]   loc_out_ready_i,
  input  wire  [P*16-1:0] loc_color_ready_i,
  // route tables: write color rt_addr_i of every router q with rt_we_i[q]
  input  wire  [P-1:0]   rt_we_i,
  input  wire  [3:0]     rt_addr_i,
  input  wire  [4:0]     rt_wdata_i,
  // counters: word ctr_addr_i of every router
  input  wire  [2:0]     ctr_addr_i,
  output wire  [P*32-1:0] ctr_rdata_o,
  input  wire            ctr_clear_i,
  output wire            idle_o
);
  // per router q, port p (0 N, 1 E, 2 S, 3 W, 4 local): flat index q*5 + p
  wire [P*5-1:0]   in_valid, in_ready;
  wire [P*5*W-1:0] in_data;
  // outputs: flat index q*5 + p for p = 0..3; slot 4 of each router is unused
  wire [P*5-1:0]   out_valid, out_ready;
  wire [P*5*W-1:0] out_data;
  wire [P-1:0]     idle;
  wire [P*80-1:0]  unused_rt;  // route tables are written through rt_we_i, not read here

  for (genvar r = 0; r < Rows; r++) begin : g_row
    for (genvar c = 0; c < Cols; c++) begin : g_col
      localparam int unsigned Q = r * Cols + c;
      // N input <- S output of (r-1, c)
      if (r > 0) begin : g_n
        assign in_valid[Q*5+0] = out_valid[(Q-Cols)*5+2];
        assign in_data[(Q*5+0)*W +: W] = out_data[((Q-Cols)*5+2)*W +: W];
        assign out_ready[(Q-Cols)*5+2] = in_ready[Q*5+0];
      end else begin : g_n_edge
        assign in_valid[Q*5+0] = 1'b0;
        assign in_data[(Q*5+0)*W +: W] = '0;
        assign out_ready[Q*5+0] = 1'b1;
      end
      // S edge
      if (r == Rows - 1) begin : g_s_edge
        assign in_valid[Q*5+2] = 1'b0;
        assign in_data[(Q*5+2)*W +: W] = '0;
        assign out_ready[Q*5+2] = 1'b1;
      end
      // S input <- N output of (r+1, c)
      if (r < Rows - 1) begin : g_s
        assign in_valid[Q*5+2] = out_valid[(Q+Cols)*5+0];
        assign in_data[(Q*5+2)*W +: W] = out_data[((Q+Cols)*5+0)*W +: W];
        assign out_ready[(Q+Cols)*5+0] = in_ready[Q*5+2];
      end
      // W input <- E output of (r, c-1)
      if (c > 0) begin : g_w
        assign in_valid[Q*5+3] = out_valid[(Q-1)*5+1];
        assign in_data[(Q*5+3)*W +: W] = out_data[((Q-1)*5+1)*W +: W];
        assign out_ready[(Q-1)*5+1] = in_ready[Q*5+3];
      end else if (r == 0) begin : g_w_host
        assign in_valid[Q*5+3] = host_in_valid_i;
        assign in_data[(Q*5+3)*W +: W] = host_in_data_i;
        assign host_in_ready_o = in_ready[Q*5+3];
        assign host_out_valid_o = out_valid[Q*5+3];
        assign host_out_data_o = out_data[(Q*5+3)*W +: W];
        assign out_ready[Q*5+3] = host_out_ready_i;
      end else begin : g_w_edge
        assign in_valid[Q*5+3] = 1'b0;
        assign in_data[(Q*5+3)*W +: W] = '0;
        assign out_ready[Q*5+3] = 1'b1;
      end
      // E input <- W output of (r, c+1)
      if (c < Cols - 1) begin : g_e
        assign in_valid[Q*5+1] = out_valid[(Q+1)*5+3];
        assign in_data[(Q*5+1)*W +: W] = out_data[((Q+1)*5+3)*W +: W];
        assign out_ready[(Q+1)*5+3] = in_ready[Q*5+1];
      end else begin : g_e_edge
        assign in_valid[Q*5+1] = 1'b0;
        assign in_data[(Q*5+1)*W +: W] = '0;
        assign out_ready[Q*5+1] = 1'b1;
      end
      // local port
      assign in_valid[Q*5+4] = loc_in_valid_i[Q];
      assign in_data[(Q*5+4)*W +: W] = loc_in_data_i[Q*W +: W];
      assign loc_in_ready_o[Q] = in_ready[Q*5+4];
      assign out_valid[Q*5+4] = 1'b0;
      assign out_data[(Q*5+4)*W +: W] = '0;

      mesh_router #(.FifoDepth(FifoDepth)) u_router (
        .clk_i, .rst_ni,
        .in_valid_i         (in_valid[Q*5 +: 5]),
        .in_data_i          (in_data[Q*5*W +: 5*W]),
        .in_ready_o         (in_ready[Q*5 +: 5]),
        .out_valid_o        (out_valid[Q*5 +: 4]),
        .out_data_o         (out_data[Q*5*W +: 4*W]),
        .out_ready_i        (out_ready[Q*5 +: 4]),
        .loc_valid_o        (loc_out_valid_o[Q]),
        .loc_data_o         (loc_out_data_o[Q*W +: W]),
        .loc_ready_i        (loc_out_ready_i[Q]),
        .local_color_ready_i(loc_color_ready_i[Q*16 +: 16]),
        .rt_we_i            (rt_we_i[Q]),
        .rt_addr_i,
        .rt_wdata_i,
        .rt_o               (unused_rt[Q*80 +: 80]),
        .ctr_addr_i,
        .ctr_rdata_o        (ctr_rdata_o[Q*32 +: 32]),
        .ctr_clear_i,
        .idle_o             (idle[Q])
      );
    end
  end

  assign idle_o = &idle;
endmodule

`default_nettype wire
