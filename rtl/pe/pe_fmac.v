// pe_fmac - the PE's pipelined multiply-accumulate, bit-exact with host/common/numerics.c.
//
//   add_i = 0: y = c + a*b with a = a_i[15:0], b = b_i (bf16), c = c_i (fp32)  (nm_fmac_bits)
//   add_i = 1: y = a + c with a = a_i, c = c_i (fp32)                           (nm_add_bits)
//
// One operation per cycle, no stall: an operation presented with valid_i in cycle t appears on
// y_o with valid_o in cycle t + FmacLatency. Rules (docs/architecture.md section 8): the
// product is exact, the sum is rounded once to 24 bits (RNE) with an unbounded exponent,
// results below 2^-126 flush to a signed zero and at or above 2^128 become infinity,
// subnormal inputs read as signed zeros, every NaN is 0x7fc00000, an exact zero sum is +0
// unless both terms are -0.
//
// Stages (each ends in a register):
//   1 unpack, special cases, 8x8 mantissa product (one SB_MAC16 with synth_ice40 -dsp)
//   2 normalize the product, order the operands by magnitude, align the smaller one
//     (3 guard bits plus a sticky bit jammed into the lsb: enough for one correct rounding)
//   3 add/subtract, count leading zeros, normalize
//   4 round to nearest even, range check, pack
// FmacLatency > 4 appends plain delay registers.
// Exponents inside are "biased by 512": E = unbiased exponent of the msb + 512, 0 for zero.
`default_nettype none

module pe_fmac #(
  parameter int unsigned FmacLatency = 4  // cycles from valid_i to valid_o; >= 4 (datapath depth)
) (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        valid_i,
  input  wire        add_i,
  input  wire [31:0] a_i,
  input  wire [15:0] b_i,
  input  wire [31:0] c_i,
  output wire        valid_o,
  output wire [31:0] y_o
);
  // ---------------------------------------------------------------- stage 1: unpack
  wire [7:0] ea16 = a_i[14:7];
  wire [7:0] eb16 = b_i[14:7];
  wire [7:0] ea32 = a_i[30:23];
  wire [7:0] ec32 = c_i[30:23];

  wire a16_nan = (ea16 == 8'hff) && (a_i[6:0] != 7'd0);
  wire b16_nan = (eb16 == 8'hff) && (b_i[6:0] != 7'd0);
  wire a16_inf = (ea16 == 8'hff) && (a_i[6:0] == 7'd0);
  wire b16_inf = (eb16 == 8'hff) && (b_i[6:0] == 7'd0);
  wire a32_nan = (ea32 == 8'hff) && (a_i[22:0] != 23'd0);
  wire a32_inf = (ea32 == 8'hff) && (a_i[22:0] == 23'd0);
  wire c_nan   = (ec32 == 8'hff) && (c_i[22:0] != 23'd0);
  wire c_inf   = (ec32 == 8'hff) && (c_i[22:0] == 23'd0);
  wire c_zero  = (ec32 == 8'd0);

  wire        p16_zero = (ea16 == 8'd0) || (eb16 == 8'd0);
  wire        p16_inf  = a16_inf || b16_inf;
  wire        p16_nan  = a16_nan || b16_nan || (p16_inf && p16_zero);
  wire [15:0] prod     = {8'd0, 1'b1, a_i[6:0]} * {8'd0, 1'b1, b_i[6:0]};

  wire        p_sign = add_i ? a_i[31] : (a_i[15] ^ b_i[15]);
  wire        p_zero = add_i ? (ea32 == 8'd0) : p16_zero;
  wire        p_inf  = add_i ? a32_inf : p16_inf;
  wire        p_nan  = add_i ? a32_nan : p16_nan;
  wire [23:0] p_man  = add_i ? {1'b1, a_i[22:0]} : {prod, 8'd0};
  // E of the product when its top bit lands at bit 22 of p_man; stage 2 adds 1 for bit 23.
  wire [9:0]  p_base = add_i ? (10'(ea32) + 10'd384) : (10'(ea16) + 10'(eb16) + 10'd258);

  wire [23:0] c_man = {1'b1, c_i[22:0]};
  wire [9:0]  c_e   = 10'(ec32) + 10'd385;
  wire s1_nan_d = p_nan || c_nan || (p_inf && c_inf && (p_sign != c_i[31]));
  wire s1_inf_d = p_inf || c_inf;
  wire s1_isgn_d = p_inf ? p_sign : c_i[31];

  logic        s1_nan_q, s1_inf_q, s1_isgn_q;
  logic        s1_psign_q, s1_pzero_q, s1_csign_q, s1_czero_q;
  logic [23:0] s1_pman_q, s1_cman_q;
  logic [9:0]  s1_pbase_q, s1_ce_q;

  always_ff @(posedge clk_i) begin
    s1_nan_q   <= s1_nan_d;
    s1_inf_q   <= s1_inf_d;
    s1_isgn_q  <= s1_isgn_d;
    s1_psign_q <= p_sign;
    s1_pzero_q <= p_zero;
    s1_csign_q <= c_i[31];
    s1_czero_q <= c_zero;
    s1_pman_q  <= p_man;
    s1_cman_q  <= c_man;
    s1_pbase_q <= p_base;
    s1_ce_q    <= c_e;
  end

  // ---------------------------------------------------------------- stage 2: order, align
  wire [23:0] pn_man = s1_pzero_q ? 24'd0 : (s1_pman_q[23] ? s1_pman_q : {s1_pman_q[22:0], 1'b0});
  wire [9:0]  pn_e   = s1_pzero_q ? 10'd0 : (s1_pman_q[23] ? s1_pbase_q + 10'd1 : s1_pbase_q);
  wire [23:0] cn_man = s1_czero_q ? 24'd0 : s1_cman_q;
  wire [9:0]  cn_e   = s1_czero_q ? 10'd0 : s1_ce_q;

  wire        p_big  = {pn_e, pn_man} >= {cn_e, cn_man};
  wire [23:0] x_man  = p_big ? pn_man : cn_man;
  wire [9:0]  x_e    = p_big ? pn_e : cn_e;
  wire        x_sign = p_big ? s1_psign_q : s1_csign_q;
  wire [23:0] y_man  = p_big ? cn_man : pn_man;
  wire [9:0]  y_e    = p_big ? cn_e : pn_e;
  wire        y_sign = p_big ? s1_csign_q : s1_psign_q;

  wire [9:0]  d      = x_e - y_e;
  wire [4:0]  sh     = (d > 10'd31) ? 5'd31 : d[4:0];
  wire [57:0] y_wide = {y_man, 34'd0} >> sh;
  wire [26:0] y_al   = y_wide[57:31] | {26'd0, (y_wide[30:0] != 31'd0)};
  wire        sub_d   = x_sign ^ y_sign;
  wire        zero2_d = (x_man == 24'd0);  // the larger one is zero: both are
  wire        zsign_d = s1_psign_q & s1_csign_q;

  logic        s2_nan_q, s2_inf_q, s2_isgn_q;
  logic        s2_sub_q, s2_sign_q, s2_zero_q, s2_zsign_q;
  logic [23:0] s2_xman_q;
  logic [26:0] s2_yal_q;
  logic [9:0]  s2_e_q;

  always_ff @(posedge clk_i) begin
    s2_nan_q   <= s1_nan_q;
    s2_inf_q   <= s1_inf_q;
    s2_isgn_q  <= s1_isgn_q;
    s2_sub_q   <= sub_d;
    s2_sign_q  <= x_sign;
    s2_zero_q  <= zero2_d;
    s2_zsign_q <= zsign_d;
    s2_xman_q  <= x_man;
    s2_yal_q   <= y_al;
    s2_e_q     <= x_e;
  end

  // ---------------------------------------------------------------- stage 3: add, normalize
  wire [27:0] x28 = {1'b0, s2_xman_q, 3'd0};
  wire [27:0] y28 = {1'b0, s2_yal_q};
  wire [27:0] sum = s2_sub_q ? (x28 - y28) : (x28 + y28);

  logic [4:0] lz;
  always_comb begin
    lz = 5'd0;
    for (int i = 0; i < 28; i = i + 1) begin
      if (sum[i]) lz = 5'(27 - i);
    end
  end

  // both terms zero: -0 only for (-0) + (-0); exact cancellation: +0
  wire        zero3_d  = s2_zero_q || (sum == 28'd0);
  wire        zsign3_d = s2_zero_q & s2_zsign_q;
  wire [27:0] man3_d   = sum << lz;
  wire [10:0] e3_d     = 11'(s2_e_q) + 11'd1 - 11'(lz);

  logic        s3_nan_q, s3_inf_q, s3_isgn_q, s3_sign_q, s3_zero_q, s3_zsign_q;
  logic [27:0] s3_man_q;
  logic [10:0] s3_e_q;

  always_ff @(posedge clk_i) begin
    s3_nan_q   <= s2_nan_q;
    s3_inf_q   <= s2_inf_q;
    s3_isgn_q  <= s2_isgn_q;
    s3_sign_q  <= s2_sign_q;
    s3_zero_q  <= zero3_d;
    s3_zsign_q <= zsign3_d;
    s3_man_q   <= man3_d;
    s3_e_q     <= e3_d;
  end

  // ---------------------------------------------------------------- stage 4: round, pack
  wire        rnd_up = s3_man_q[3] && ((s3_man_q[2:0] != 3'd0) || s3_man_q[4]);
  wire [24:0] m_rnd  = {1'b0, s3_man_q[27:4]} + {24'd0, rnd_up};
  wire [22:0] m_frac = m_rnd[24] ? m_rnd[23:1] : m_rnd[22:0];
  wire [10:0] e_rnd  = m_rnd[24] ? s3_e_q + 11'd1 : s3_e_q;
  // biased fp32 exponent = e_rnd - 512 + 127
  wire        ovf    = e_rnd >= 11'd640;   // biased >= 255
  wire        unf    = e_rnd <= 11'd385;   // biased <= 0

  logic [31:0] y_d;
  always_comb begin
    if (s3_nan_q) y_d = 32'h7fc00000;
    else if (s3_inf_q) y_d = {s3_isgn_q, 31'h7f800000};
    else if (s3_zero_q) y_d = {s3_zsign_q, 31'd0};
    else if (ovf) y_d = {s3_sign_q, 31'h7f800000};
    else if (unf) y_d = {s3_sign_q, 31'd0};
    else y_d = {s3_sign_q, 8'(e_rnd - 11'd385), m_frac};
  end

  logic [31:0] s4_y_q;
  always_ff @(posedge clk_i) begin
    s4_y_q <= y_d;
  end

  // ---------------------------------------------------------------- valid, extra delay
  logic [FmacLatency-1:0] valid_q;
  wire  [FmacLatency-1:0] valid_d = {valid_q[FmacLatency-2:0], valid_i};
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) valid_q <= '0;
    else valid_q <= valid_d;
  end

  if (FmacLatency > 4) begin : g_delay
    logic [31:0] dly_q [0:FmacLatency-5];
    always_ff @(posedge clk_i) begin
      dly_q[0] <= s4_y_q;
      for (int k = 1; k < FmacLatency - 4; k = k + 1) dly_q[k] <= dly_q[k-1];
    end
    assign y_o = dly_q[FmacLatency-5];
  end else begin : g_nodelay
    assign y_o = s4_y_q;
  end
  assign valid_o = valid_q[FmacLatency-1];

`ifdef FORMAL
  always_comb assert (FmacLatency >= 4);
`endif
endmodule

`default_nettype wire
