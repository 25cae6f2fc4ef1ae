// pe_lite_fmac - pe_lite's multi-cycle multiply-add, bit-exact with host/common/numerics.c
// (the same function as pe_fmac, one operation at a time, for area).
//
//   add_i = 0: y = c + a*b with a = a_i[15:0], b = b_i (bf16), c = c_i (fp32)  (nm_fmac_bits)
//   add_i = 1: y = a + c with a = a_i, c = c_i (fp32)                           (nm_add_bits)
//
// Handshake: start_i is taken while ready_o is high (operands are sampled in that cycle only, into
// registers: the unpack runs in the next cycle); done_o is high for one cycle with the result on
// y_o (combinational from the state registers, valid only while done_o). Rules
// (docs/architecture.md section 8): exact product, one RNE rounding to 24 bits with an unbounded
// exponent, flush below 2^-126 to a signed zero, >= 2^128 to infinity, subnormal inputs read as
// zero, NaN is 0x7fc00000, an exact zero sum is +0 unless both terms are -0.
//
// Steps: latch the operands (1 cycle), unpack and load (1 cycle: the product into x, c into m, no
// ordering by magnitude), align the operand with the smaller exponent one bit per cycle with a
// sticky bit (|exponent difference| cycles, at most 32, then only the sticky bit is left; none for
// a zero operand), add/subtract (1; a negative difference, possible only with equal exponents, is
// negated in one more), normalize one bit per cycle (1 + leading zeros), round (1: the rounding
// increment goes through the same adder), done (1). Specials and zero + zero go straight to done.
// One 28-bit adder, one up/down counter for the exponent difference, one for the exponent.
// Exponents inside are E = unbiased exponent of the msb + 383, so the packed fp32 exponent is
// E[7:0] when 257 <= E <= 510; 0 means a zero operand.
`default_nettype none

module pe_lite_fmac (
  input  wire         clk_i,
  input  wire         rst_ni,
  input  wire         start_i,
  input  wire         add_i,
  input  wire  [31:0] a_i,
  input  wire  [15:0] b_i,
  input  wire  [31:0] c_i,
  output wire         ready_o,
  output wire         done_o,
  output logic [31:0] y_o
);
  localparam [2:0] SIdle = 3'd0, SAlign = 3'd1, SAdd = 3'd2, SNeg = 3'd3, SNorm = 3'd4,
                   SRound = 3'd5, SDone = 3'd6, SLoad = 3'd7;

  // ---------------------------------------------------------------- operand registers
  // start_i latches the operands; the unpack below works from the registers in the next
  // cycle (SLoad): no path from the PE's RAM outputs through the unpack (timing)
  logic        add_q;
  logic [31:0] a_q, c_q;
  logic [15:0] b_q;

  // ------------------------------------------------ unpack (SLoad, from the operand registers)
  wire [7:0] ea16 = a_q[14:7];
  wire [7:0] eb16 = b_q[14:7];
  wire [7:0] ea32 = a_q[30:23];
  wire [7:0] ec32 = c_q[30:23];

  wire a16_nan = (ea16 == 8'hff) && (a_q[6:0] != 7'd0);
  wire b16_nan = (eb16 == 8'hff) && (b_q[6:0] != 7'd0);
  wire a16_inf = (ea16 == 8'hff) && (a_q[6:0] == 7'd0);
  wire b16_inf = (eb16 == 8'hff) && (b_q[6:0] == 7'd0);
  wire a32_nan = (ea32 == 8'hff) && (a_q[22:0] != 23'd0);
  wire a32_inf = (ea32 == 8'hff) && (a_q[22:0] == 23'd0);
  wire c_nan   = (ec32 == 8'hff) && (c_q[22:0] != 23'd0);
  wire c_inf   = (ec32 == 8'hff) && (c_q[22:0] == 23'd0);
  wire c_zero  = (ec32 == 8'd0);

  wire        p16_zero = (ea16 == 8'd0) || (eb16 == 8'd0);
  wire        p16_inf  = a16_inf || b16_inf;
  wire        p16_nan  = a16_nan || b16_nan || (p16_inf && p16_zero);
  // 8x8 mantissa product: one SB_MAC16 with synth_ice40 -dsp
  wire [15:0] prod     = {8'd0, 1'b1, a_q[6:0]} * {8'd0, 1'b1, b_q[6:0]};

  wire        p_sign = add_q ? a_q[31] : (a_q[15] ^ b_q[15]);
  wire        p_zero = add_q ? (ea32 == 8'd0) : p16_zero;
  wire        p_inf  = add_q ? a32_inf : p16_inf;
  wire        p_nan  = add_q ? a32_nan : p16_nan;
  // normalized product mantissa (msb at 23) and its exponent
  wire        p_top  = add_q || prod[15];
  wire [23:0] p_man  = p_zero ? 24'd0 : add_q ? {1'b1, a_q[22:0]}
                     : prod[15] ? {prod, 8'd0} : {prod[14:0], 9'd0};
  wire [9:0]  p_e    = p_zero ? 10'd0 : add_q ? (10'(ea32) + 10'd256)
                     : (10'(ea16) + 10'(eb16) + 10'(p_top) + 10'd129);
  wire [23:0] c_man  = c_zero ? 24'd0 : {1'b1, c_q[22:0]};
  wire [9:0]  c_e    = c_zero ? 10'd0 : (10'(ec32) + 10'd256);

  wire        nan_d  = p_nan || c_nan || (p_inf && c_inf && (p_sign != c_q[31]));
  wire        inf_d  = p_inf || c_inf;
  wire        isgn_d = p_inf ? p_sign : c_q[31];
  wire        zz_d   = p_zero && c_zero;          // zero + zero: signed zero
  wire [10:0] dexp   = 11'(p_e) - 11'(c_e);       // > 0: c is aligned, < 0: the product
  // Both operands are normalized (msb at bit 26), so 26 shifts leave only the sticky bit and
  // more change nothing: a difference beyond 6 bits signed loads +-26 (27..31 and -27..-32
  // load as they are, a few idle shifts: cheaper than an exact clamp); a zero operand needs
  // none.
  wire        d_sat  = (dexp[10:5] != {6{dexp[10]}});
  wire [5:0]  sh_ld  = (p_zero || c_zero) ? 6'd0 : d_sat ? (dexp[10] ? 6'h26 : 6'd26)  // -26, 26
                                                           : dexp[5:0];

  // ---------------------------------------------------------------- state
  logic [2:0]  st_q, st_d;
  logic [27:0] x_q, x_d;      // {0, product, 000}, aligned if its exponent is the smaller
  logic [27:0] m_q, m_d;      // {0, c, 000}, aligned if its exponent is the smaller; then the
                              // sum, the normalized sum, the rounded sum
  logic [9:0]  e_q, e_d;      // E of bit 26 after the load, of bit 27 from the add on
  logic [5:0]  sh_q, sh_d;    // exponent difference left to align (signed, clamped)
  logic        nan_q, nan_d2, inf_q, inf_d2;
  logic        sign_q, sign_d, psign_q, psign_d, csign_q, csign_d, zero_q, zero_d;

  wire        sub    = psign_q ^ csign_q;
  wire [27:0] sum    = sub ? (x_q - m_q) : (x_q + m_q);
  wire        sh_neg = sh_q[5];
  // the operand being aligned has only its sticky bit left: more shifts change nothing
  wire        al_done = (sh_q == 6'd0);
  wire        rnd_up = m_q[3] && ((m_q[2:0] != 3'd0) || m_q[4]);
  // one +-1 adder for the exponent: up when the add moves it to bit 27 and on a rounding carry
  logic       e_up;
  wire [9:0]  e_step = e_q + (e_up ? 10'd1 : 10'h3ff);

  always_comb begin
    st_d = st_q;
    x_d = x_q;
    m_d = m_q;
    e_d = e_q;
    sh_d = sh_q;
    nan_d2 = nan_q;
    inf_d2 = inf_q;
    sign_d = sign_q;
    psign_d = psign_q;
    csign_d = csign_q;
    zero_d = zero_q;
    e_up = 1'b0;
    case (st_q)
      SIdle: if (start_i) st_d = SLoad;
      SLoad: begin
        begin
          x_d = {1'b0, p_man, 3'd0};
          m_d = {1'b0, c_man, 3'd0};
          e_d = dexp[10] ? c_e : p_e;
          sh_d = sh_ld;
          nan_d2 = nan_d;
          inf_d2 = inf_d;
          psign_d = p_sign;
          csign_d = c_q[31];
          zero_d = zz_d;
          // the sign of a special result; otherwise set by the add
          sign_d = nan_d ? 1'b0 : inf_d ? isgn_d : (p_sign & c_q[31]);
          st_d = (nan_d || inf_d || zz_d) ? SDone : SAlign;
        end
      end
      SAlign: begin
        // {0, v, 000} >> 1 with the shifted-out bit jammed into the sticky lsb
        if (al_done) st_d = SAdd;
        else if (sh_neg) begin
          x_d = {2'b00, x_q[26:2], x_q[1] | x_q[0]};
          sh_d = sh_q + 6'd1;
        end else begin
          m_d = {2'b00, m_q[26:2], m_q[1] | m_q[0]};
          sh_d = sh_q - 6'd1;
        end
      end
      SAdd: begin
        m_d = sum;
        e_up = 1'b1;
        e_d = e_step;
        // x - m < 0 (only with equal exponents): negate, the result takes c's sign
        sign_d = (sub && sum[27]) ? csign_q : psign_q;
        x_d = 28'd0;
        st_d = (sub && sum[27]) ? SNeg : SNorm;
      end
      SNeg: begin  // m = 0 - m (sub still set)
        m_d = sum;
        st_d = SNorm;
      end
      SNorm: begin
        if (m_q == 28'd0) begin  // exact cancellation: +0
          zero_d = 1'b1;
          sign_d = 1'b0;
          st_d = SDone;
        end else if (m_q[27]) begin
          x_d = {23'd0, rnd_up, 4'd0};  // the rounding increment, added next
          psign_d = 1'b0;
          csign_d = 1'b0;
          st_d = SRound;
        end else begin
          m_d = {m_q[26:0], 1'b0};
          e_d = e_step;
        end
      end
      SRound: begin
        // a carry out of bit 27 leaves the mantissa 1.0 (fraction bits zero) one exponent up
        m_d = sum;
        e_up = 1'b1;
        if (!sum[27]) e_d = e_step;
        st_d = SDone;
      end
      SDone: st_d = SIdle;
      default: st_d = SIdle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) st_q <= SIdle;
    else st_q <= st_d;
  end
  always_ff @(posedge clk_i) begin
    if (start_i && st_q == SIdle) begin
      add_q <= add_i;
      a_q <= a_i;
      b_q <= b_i;
      c_q <= c_i;
    end
    x_q <= x_d;
    m_q <= m_d;
    e_q <= e_d;
    sh_q <= sh_d;
    nan_q <= nan_d2;
    inf_q <= inf_d2;
    sign_q <= sign_d;
    psign_q <= psign_d;
    csign_q <= csign_d;
    zero_q <= zero_d;
  end

  // ---------------------------------------------------------------- pack
  // as flags, so each output bit is one LUT4: NaN 0x7fc00000, infinity (also >= 2^128),
  // zero (also < 2^-126), else the rounded sum
  wire e_big = e_q[9] || (e_q[8:0] == 9'h1ff);               // E >= 511
  wire e_small = !e_q[9] && (!e_q[8] || e_q[7:0] == 8'd0);   // E <= 256
  wire y_zero = !nan_q && !inf_q && (zero_q || e_small);
  wire y_ones = nan_q || inf_q || (e_big && !zero_q);       // exponent field all ones
  wire y_frac = !(nan_q || inf_q || zero_q || e_small || e_big);
  always_comb begin
    y_o[31] = sign_q;
    y_o[30:23] = y_ones ? 8'hff : y_zero ? 8'h00 : e_q[7:0];
    y_o[22] = (m_q[26] && y_frac) || nan_q;
    y_o[21:0] = m_q[25:4] & {22{y_frac}};
  end

  assign ready_o = (st_q == SIdle);
  assign done_o = (st_q == SDone);
endmodule

`default_nettype wire
