// board_echo_double - TEST DOUBLE for the host port (mesh_top), used by the board benches
// and the link-only FPGA flow until the mesh is in main (board_top with BOARD_ECHO_DOUBLE).
// Same ports as mesh_top. It implements only:
//   NOP (op 0): consumed;
//   ECHO (op 1, [15:0] n, n words): response header 0xA1_00_nnnn and the n words;
//   RUN (op 4, [23:16] n, n words): consumed without a response, like the real RUN; the
//     words are folded into a checksum, acc = rotl(acc, 1) ^ word, from 0 after reset;
//   READ (op 3, [15:0] n, one address word a): response header 0xA3_00_nnnn and the n
//     words a, a+1, ..., a+n-1 (a stand-in for memory contents);
//   COUNTERS (op 8): response header 0xA8_00_0001 and acc (not the real counter block);
// any other op answers BAD_OP (0xA, op, status 1, n 0) and consumes one word, as the real
// port does. One word per cycle in and out.
`default_nettype none

module board_echo_double (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        cmd_valid_i,
  output wire        cmd_ready_o,
  input  wire [31:0] cmd_data_i,
  output reg         rsp_valid_o,
  input  wire        rsp_ready_i,
  output reg  [31:0] rsp_data_o
);
  reg        body_d, body_q;   // inside an ECHO or RUN payload
  reg        sink_d, sink_q;   // the payload is a RUN's: fold into acc, no response
  reg [15:0] left_d, left_q;   // payload words still to come
  reg [31:0] acc_d, acc_q;
  reg        accp_d, accp_q;   // COUNTERS: acc still to send after the header
  reg        raddr_d, raddr_q; // READ: the address word comes next
  reg        gen_d, gen_q;     // READ: generating left_q words from gaddr_q
  reg [31:0] gaddr_d, gaddr_q;
  reg        valid_d;
  reg [31:0] data_d;

  assign cmd_ready_o = (!rsp_valid_o || rsp_ready_i) && !accp_q && !gen_q;

  always @* begin
    body_d  = body_q;
    sink_d  = sink_q;
    left_d  = left_q;
    acc_d   = acc_q;
    accp_d  = accp_q;
    raddr_d = raddr_q;
    gen_d   = gen_q;
    gaddr_d = gaddr_q;
    valid_d = rsp_valid_o && !rsp_ready_i;
    data_d  = rsp_data_o;
    if (accp_q && (!rsp_valid_o || rsp_ready_i)) begin
      valid_d = 1'b1;
      data_d  = acc_q;
      accp_d  = 1'b0;
    end
    if (gen_q && (!rsp_valid_o || rsp_ready_i)) begin
      valid_d = 1'b1;
      data_d  = gaddr_q;
      gaddr_d = gaddr_q + 32'd1;
      left_d  = left_q - 1'b1;
      gen_d   = (left_q != 16'd1);
    end
    if (cmd_valid_i && cmd_ready_o) begin
      if (raddr_q) begin
        raddr_d = 1'b0;
        gaddr_d = cmd_data_i;
        gen_d   = (left_q != 16'd0);
      end else if (body_q) begin
        if (sink_q) begin
          acc_d = {acc_q[30:0], acc_q[31]} ^ cmd_data_i;
        end else begin
          valid_d = 1'b1;
          data_d  = cmd_data_i;
        end
        left_d  = left_q - 1'b1;
        body_d  = (left_q != 16'd1);
      end else begin
        case (cmd_data_i[31:28])
          4'h0: ;  // NOP
          4'h1: begin
            valid_d = 1'b1;
            data_d  = {8'hA1, 8'h00, cmd_data_i[15:0]};
            left_d  = cmd_data_i[15:0];
            body_d  = (cmd_data_i[15:0] != 16'd0);
            sink_d  = 1'b0;
          end
          4'h3: begin
            valid_d = 1'b1;
            data_d  = {8'hA3, 8'h00, cmd_data_i[15:0]};
            left_d  = cmd_data_i[15:0];
            raddr_d = 1'b1;
          end
          4'h4: begin
            left_d  = {8'h00, cmd_data_i[23:16]};
            body_d  = (cmd_data_i[23:16] != 8'd0);
            sink_d  = 1'b1;
          end
          4'h8: begin
            valid_d = 1'b1;
            data_d  = 32'hA800_0001;
            accp_d  = 1'b1;
          end
          default: begin
            valid_d = 1'b1;
            data_d  = {4'hA, cmd_data_i[31:28], 8'h01, 16'h0000};
          end
        endcase
      end
    end
  end

  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      body_q      <= 1'b0;
      sink_q      <= 1'b0;
      left_q      <= 16'h0;
      acc_q       <= 32'h0;
      accp_q      <= 1'b0;
      raddr_q     <= 1'b0;
      gen_q       <= 1'b0;
      gaddr_q     <= 32'h0;
      rsp_valid_o <= 1'b0;
      rsp_data_o  <= 32'h0;
    end else begin
      body_q      <= body_d;
      sink_q      <= sink_d;
      left_q      <= left_d;
      acc_q       <= acc_d;
      accp_q      <= accp_d;
      raddr_q     <= raddr_d;
      gen_q       <= gen_d;
      gaddr_q     <= gaddr_d;
      rsp_valid_o <= valid_d;
      rsp_data_o  <= data_d;
    end
  end
endmodule

`default_nettype wire
