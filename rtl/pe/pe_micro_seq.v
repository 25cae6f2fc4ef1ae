// pe_micro_seq - stage 1 of pe_micro_mt's micro-machine:
// from the instruction on the ROM's output (uir) it forms the S read address (ea: the
// instruction's address ORed with its mode's offset: AR, a field of the PE instruction, the
// config address, the queue head's slot) and the next micro-pc (upc + 1, or a taken jump's
// target: a direct address, a dispatch on the opcode, the ALU function or {we, config
// target}, or RA). The conditions come in decoded (cond_i[k] for condition code k: Z, NZ,
// C, NC, head valid, CLEAR pending, transmit not done, config request, config request for
// A or B, FPU not granted, FPU not done); the encodings are verif/ucode/uasm.c's.
`default_nettype none

module pe_micro_seq #(
  parameter int unsigned SlotW = 3  // queue head slot bits
) (
  input  wire  [15:0]      uir_i,
  input  wire  [15:0]      ird_i,        // the PE instruction
  input  wire  [7:0]       ar_i,
  input  wire  [4:0]       cfg_addr_i,
  input  wire  [SlotW-1:0] hs_i,         // the picker's queue head slot
  input  wire  [9:0]       upc_i,        // the micro-pc of uir_i
  input  wire  [9:0]       ra_i,
  input  wire              boot_i,       // reset's first turn: the next micro-pc is 0
  input  wire              cfg_we_i,
  input  wire  [3:0]       cfg_target_i,
  input  wire  [11:1]      cond_i,       // condition codes 1-11 (uasm.c), true when taken
  output wire              j_fmt_o,
  output wire  [3:0]       cond_o,
  output wire  [7:0]       ea_o,
  output logic [9:0]       upc_d_o
);
  localparam [3:0] CDop = 4'd12, CDfn = 4'd13, CDcfg = 4'd14, CRet = 4'd15;
  wire  [2:0] am = uir_i[10:8];
  wire  [7:0] ua = uir_i[7:0];
  logic [2:0] fld;
  always_comb begin
    case (ua[2:0])
      3'd0: fld = ird_i[11:9];
      3'd1: fld = ird_i[8:6];
      3'd2: fld = ird_i[5:3];
      3'd3: fld = ird_i[10:8];
      3'd4: fld = ird_i[7:5];
      3'd5: fld = ird_i[6:4];
      default: fld = ird_i[3:1];
    endcase
  end
  // ea = a | the mode's offset (fld: the field alone, a selects it)
  logic [7:0] eo;
  always_comb begin
    case (am)
      3'd1: eo = ar_i;
      3'd2: eo = 8'(fld);
      3'd3: eo = 8'(cfg_addr_i[2:0]);
      3'd4: eo = 8'(cfg_addr_i[4:0]);
      3'd5: eo = 8'({hs_i, 1'b0});
      3'd6: eo = 8'(hs_i);
      3'd7: eo = 8'({cfg_addr_i[2:0], 1'b0});
      default: eo = 8'd0;
    endcase
  end
  assign ea_o = ((am == 3'd2) ? 8'd0 : ua) | eo;

  assign j_fmt_o = (uir_i[15:14] == 2'b10);
  assign cond_o = uir_i[13:10];
  // 0 always; 12-15 (dispatches, ret) always
  wire taken = (cond_o == 4'd0 || cond_o >= 4'd12) ? 1'b1 : cond_i[cond_o];
  always_comb begin
    upc_d_o = upc_i + 10'd1;
    if (j_fmt_o && taken) begin
      case (cond_o)
        CDop: upc_d_o = {uir_i[9:4], ird_i[15:12]};
        CDfn: upc_d_o = {uir_i[9:3], ird_i[2:0]};
        CDcfg: upc_d_o = {uir_i[9:5], cfg_we_i, cfg_target_i};
        CRet: upc_d_o = ra_i;
        default: upc_d_o = uir_i[9:0];
      endcase
    end
    if (boot_i) upc_d_o = 10'd0;
  end
endmodule

`default_nettype wire
