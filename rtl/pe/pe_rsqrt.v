// pe_rsqrt - the `rsqrt` instruction's function (docs/architecture.md 4.4, nm_rsqrt_bits):
// y = the bf16 nearest 1/sqrt(bf16(x)). The ROM (pe_rsqrt_rom, generated from
// nm_rsqrt_table) holds the mantissa for the exponent's parity p and the 7 mantissa bits;
// the exponent is 126 + rom[7] - floor((e - 127) / 2) = (379 + p - e) / 2 + rom[7].
// +-0 give +-inf, +inf +0, NaN and negatives NaN (0x7fc0).
// Timing: x_i is sampled when en_i is high; y_o is valid from the next cycle and held while
// en_i stays low (the ROM read is registered: one EBR in pe_lite).
`default_nettype none

module pe_rsqrt (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        en_i,
  input  wire [31:0] x_i,
  output wire [15:0] y_o
);
  wire [15:0] xb;
  pe_bf16_rne u_rne (.x_i(x_i), .y_o(xb));
  wire [7:0] e = xb[14:7];
  wire       p = !e[0];                            // (e - 127) & 1
  wire [8:0] h9 = 9'd379 + {8'd0, p} - {1'b0, e};  // even, in [126, 378] for e in 1..254
  // specials: 0 none, 1 NaN, 2 signed infinity (x = +-0), 3 +0 (x = +inf)
  logic [1:0] spec;
  always_comb begin
    if (e == 8'hff) spec = (xb[6:0] != 7'd0 || xb[15]) ? 2'd1 : 2'd3;
    else if (e == 8'd0) spec = 2'd2;
    else if (xb[15]) spec = 2'd1;
    else spec = 2'd0;
  end

  logic [1:0] spec_q, spec_d;
  logic       sgn_q, sgn_d;
  logic [7:0] h_q, h_d;
  always_comb begin
    spec_d = spec_q; sgn_d = sgn_q; h_d = h_q;
    if (en_i) begin
      spec_d = spec; sgn_d = xb[15]; h_d = h9[8:1];
    end
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      spec_q <= 2'd0; sgn_q <= 1'b0; h_q <= 8'd0;
    end else begin
      spec_q <= spec_d; sgn_q <= sgn_d; h_q <= h_d;
    end
  end

  wire [7:0] rom;
  pe_rsqrt_rom u_rom (.clk_i(clk_i), .en_i(en_i), .addr_i({p, xb[6:0]}), .data_o(rom));
  wire [7:0] ey = h_q + {7'd0, rom[7]};
  logic [15:0] y;
  always_comb begin
    case (spec_q)
      2'd1: y = 16'h7fc0;
      2'd2: y = {sgn_q, 15'h7f80};
      2'd3: y = 16'h0000;
      default: y = {1'b0, ey, rom[6:0]};
    endcase
  end
  assign y_o = y;

  wire unused = &{1'b0, h9[0]};
endmodule

`default_nettype wire
