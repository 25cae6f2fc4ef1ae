// mesh_hostport_dec: the command header decoding both host ports share (mesh_hostport and
// mesh_hostport_lean; docs/architecture.md section 6). Combinational, no state: the header's
// fields, whether its PE field names a PE or all of them, whether router (0, 0) routes its
// color, which targets a READ and a WRITE accept, a COLLECT's length check, and the size of
// a config target (for an access's range check, of the target the port is walking).
// Each host port keeps its own state machine, opcodes and status codes.
`default_nettype none

module mesh_hostport_dec #(
  parameter int unsigned NumPes = 4,          // PEs on the config chain (Rows * Cols)
  parameter int unsigned AWords = 16384,      // PE SRAM A elements (A holds AWords/2 words)
  parameter int unsigned BWords = 8192,       // PE SRAM B words
  parameter int unsigned CollectDepth = 256,  // COLLECT buffers up to this many words
  parameter int unsigned SizeW = 32           // width of size_o (the port's range compare)
) (
  input  wire  [31:0]      hdr_i,         // {op, target/color, pe, n}
  input  wire  [79:0]      route0_i,      // route table of router (0, 0)
  input  wire  [3:0]       size_tgt_i,    // the target whose size_o is wanted
  output wire  [3:0]       op_o,
  output wire  [3:0]       tgt_o,         // target (WRITE, READ) or color (RUN, INJECT)
  output wire  [7:0]       pe_o,          // PE (WRITE, READ, COUNTERS) or nonzeros (RUN)
  output wire  [15:0]      n_o,
  output wire              pe_ok_o,       // pe_o names a PE of the chain
  output wire              pe_all_o,      // pe_o is 0xff: every PE
  output wire              unrouted_o,    // router (0, 0) has no route for color tgt_o
  output wire              rd_bad_tgt_o,  // no such target
  output wire              wr_bad_tgt_o,  // no such target, or one a WRITE may not name
  output wire              collect_ok_o,  // n_o fits the COLLECT buffer
  output logic [SizeW-1:0] size_o         // size_tgt_i's size in words; 0: no such target
);
  assign op_o = hdr_i[31:28];
  assign tgt_o = hdr_i[27:24];
  assign pe_o = hdr_i[23:16];
  assign n_o = hdr_i[15:0];

  // x < k for a constant k, as the bit logic it is: yosys maps a compare with a constant
  // to a carry chain (a logic cell per bit with no LUT in it)
  function automatic logic lt_const(input logic [31:0] x, input logic [31:0] k);
    logic eq;
    lt_const = 1'b0;
    eq = 1'b1;
    for (int i = 31; i >= 0; i--) begin
      lt_const = lt_const || (eq && k[i] && !x[i]);
      eq = eq && (x[i] == k[i]);
    end
  endfunction
  assign pe_ok_o = lt_const(32'(pe_o), NumPes);
  assign pe_all_o = (pe_o == 8'hff);
  assign collect_ok_o = lt_const(32'(n_o), CollectDepth + 1);

  // router (0,0) routes the command's color: each table entry nonzero, then one 16:1 mux
  logic [15:0] routed;
  for (genvar c = 0; c < 16; c++) begin : g_routed
    assign routed[c] = (route0_i[c*5 +: 5] != 5'b0);
  end
  assign unrouted_o = !routed[tgt_o];

  // targets 0-9 (section 6); B read-and-clear (2) and the counters (8, 9) are read-only
  assign rd_bad_tgt_o = (tgt_o >= 4'd10);
  assign wr_bad_tgt_o = rd_bad_tgt_o || tgt_o == 4'd2 || tgt_o == 4'd8 || tgt_o == 4'd9;

  always_comb begin
    case (size_tgt_i)
      4'd0: size_o = SizeW'(AWords / 2);
      4'd1: size_o = SizeW'(BWords);
      4'd2: size_o = SizeW'(BWords);  // B read-and-clear (READ only)
      4'd3: size_o = SizeW'(256);
      4'd4: size_o = SizeW'(32);
      4'd5: size_o = SizeW'(16);
      4'd6: size_o = SizeW'(16);
      4'd7: size_o = SizeW'(8);
      4'd8: size_o = SizeW'(5);
      4'd9: size_o = SizeW'(6);
      default: size_o = '0;
    endcase
  end
endmodule

`default_nettype wire
