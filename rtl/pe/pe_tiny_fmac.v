// pe_tiny_fmac - a bit-serial multiply-add for pe_lite, bit-exact with host/common/numerics.c;
// pe_lite_fmac's function, ports and handshake in about half its area, at 2-3x its latency.
//
//   add_i = 0: y = c + a*b with a = a_i[15:0], b = b_i (bf16), c = c_i (fp32)  (nm_fmac_bits)
//   add_i = 1: y = a + c with a = a_i, c = c_i (fp32)                           (nm_add_bits)
//
// Handshake (as pe_lite_fmac): start_i is taken while ready_o is high (operands are sampled in
// that cycle only); done_o is high for one cycle with the result on y_o (from the state
// registers, valid only while done_o). Rules (docs/architecture.md section 8): exact product,
// one RNE rounding to 24 bits with an unbounded exponent, flush below 2^-126 to a signed zero,
// >= 2^128 to infinity, subnormal inputs read as zero, NaN is 0x7fc00000, an exact zero sum is
// +0 unless both terms are -0.
//
// Area comes from muxes, so the mantissas live in two shift registers that only ever shift
// right (one bit per cycle, lsb first into one serial full adder) or load; exponents stay
// parallel. Steps: latch (start: a_i into x, c_i's fraction into w), load (1 cycle: the 8x8
// mantissa product of an SB_MAC16 into x, exponents, specials), align (the operand with the
// smaller exponent shifts right with a sticky bit, |exponent difference| cycles, at most 32),
// add (29 cycles, x -/+ w into w, remembering the position of the last one), negate (29 more,
// only when x - w < 0), round (position of the leading one + 1 cycles: w rotates so that the
// leading one lands in bit 28 while the rounding increment ripples in at bit 5), pack (1),
// done (1). Specials and zero + zero skip from load to pack. About 65-120 cycles an operation.
//
// Fields: x and w hold {carry, mantissa with its msb at bit 26, 3 guard bits}; the product's
// msb sits at 27 or 26 (prod[15] or not: no normalizing mux, the 29-bit sum has room). E is
// pe_lite_fmac's exponent (unbiased + 383, packed E[7:0] when 257 <= E <= 510), kept as the
// exponent of bit 26 minus 26, so that counting once per rotation step but the last ends on
// the exponent of the leading one.
`default_nettype none

module pe_tiny_fmac (
  input  wire        clk_i,
  input  wire        rst_ni,
  input  wire        start_i,
  input  wire        add_i,
  input  wire [31:0] a_i,
  input  wire [15:0] b_i,
  input  wire [31:0] c_i,
  output wire        ready_o,
  output wire        done_o,
  output reg  [31:0] y_o
);
  localparam [3:0] SIdle = 4'd0, SLoad = 4'd1, SAlign = 4'd2, SAdd = 4'd3, SNeg = 4'd4,
                   SRound = 4'd5, SPack = 4'd6, SDone = 4'd7;

  reg  [3:0]  st_q, st_d;
  reg  [27:0] x_q, x_d;     // a_i[24:0] at 27:3 after start; then the product (or a)
  reg  [28:0] w_q, w_d;     // c_i[22:0] at 25:3 after start; then c, the sum, the result
  reg  [8:0]  ah_q;         // a_i[31:23] (fp32 a: sign, exponent)
  reg  [8:0]  ch_q;         // c_i[31:23]
  reg  [15:0] b_q;
  reg         add_q;
  reg  [9:0]  e_q, e_d;     // exponent (see above)
  reg  [5:0]  sh_q, sh_d;   // exponent difference left to align (signed, clamped)
  reg  [4:0]  t_q, t_d;     // bit of the add and negate passes
  reg  [4:0]  k_q, k_d;     // position of the last one seen; counts down while rounding
  reg         cy_q, cy_d;   // the serial adder's carry
  reg         sub_q, sub_d; // x - w (the signs differ)
  reg         rb_q, rb_d;   // round bit
  reg         sb_q, sb_d;   // sticky bit
  reg         nz_q, nz_d;   // a one was seen
  reg         sign_q, sign_d, nan_q, nan_d, inf_q, inf_d, zero_q, zero_d;

  // ------------------------------------------------ load (SLoad, from the latched operands)
  wire [7:0] ea16 = x_q[17:10];
  wire [7:0] eb16 = b_q[14:7];
  wire [7:0] ea32 = ah_q[7:0];
  wire [7:0] ec32 = ch_q[7:0];
  wire       a16_f = (x_q[9:3] != 7'd0);
  wire       b16_f = (b_q[6:0] != 7'd0);
  wire       a32_f = (x_q[25:3] != 23'd0);
  wire       c_f   = (w_q[25:3] != 23'd0);
  wire       a16_x = (ea16 == 8'hff);
  wire       b16_x = (eb16 == 8'hff);
  wire       a32_x = (ea32 == 8'hff);
  wire       c_x   = (ec32 == 8'hff);
  wire       c_zero = (ec32 == 8'd0);
  wire       a32_zero = (ea32 == 8'd0);

  wire       p16_zero = (ea16 == 8'd0) || (eb16 == 8'd0);
  wire       p16_inf  = (a16_x && !a16_f) || (b16_x && !b16_f);
  wire       p16_nan  = (a16_x && a16_f) || (b16_x && b16_f) || (p16_inf && p16_zero);
  wire       p_sign = add_q ? ah_q[8] : (x_q[18] ^ b_q[15]);
  wire       p_zero = add_q ? a32_zero : p16_zero;
  wire       p_inf  = add_q ? (a32_x && !a32_f) : p16_inf;
  wire       p_nan  = add_q ? (a32_x && a32_f) : p16_nan;
  wire       c_inf  = c_x && !c_f;
  wire       c_nan  = c_x && c_f;
  wire       nan    = p_nan || c_nan || (p_inf && c_inf && (p_sign != ch_q[8]));
  wire       inf    = p_inf || c_inf;
  wire       zz     = p_zero && c_zero;
  // 8x8 mantissa product: one SB_MAC16 with synth_ice40 -dsp
  wire [15:0] prod  = {8'd0, 1'b1, x_q[9:3]} * {8'd0, 1'b1, b_q[6:0]};
  // exponents of bit 26 minus 26
  wire [9:0]  p_e   = add_q ? (10'(ea32) + 10'd230) : (10'(ea16) + 10'(eb16) + 10'd103);
  wire [9:0]  c_e   = 10'(ec32) + 10'd230;
  wire [10:0] dexp  = 11'(p_e) - 11'(c_e);      // > 0: w is aligned, < 0: x
  wire        d_sat = (dexp[10:5] != {6{dexp[10]}});
  wire [5:0]  sh_ld = (p_zero || c_zero) ? 6'd0
                    : d_sat ? {dexp[10], {5{!dexp[10]}}} : dexp[5:0];

  // ---------------------------------------------------------------- range (pack)
  wire e_big = e_q[9] || (e_q[8:0] == 9'h1ff);               // E >= 511
  wire e_small = !e_q[9] && (!e_q[8] || e_q[7:0] == 8'd0);   // E <= 256
  wire y_zero = !nan_q && !inf_q && (zero_q || e_small);
  wire y_ones = nan_q || inf_q || (e_big && !zero_q);       // exponent field all ones
  wire y_frac = !(nan_q || inf_q || zero_q || e_small || e_big);

  // ------------------------------------------------ the serial datapath
  wire        x_al  = (st_q == SAlign) && sh_q[5] && (sh_q != 6'd0);
  wire        w_al  = (st_q == SAlign) && !sh_q[5] && (sh_q != 6'd0);
  wire        last  = (t_q == 5'd28);
  // the rounding increment enters at the kept lsb (k = 23): round bit and (sticky or lsb)
  wire        inc   = (st_q == SRound) && (k_q == 5'd23) && rb_q && (sb_q || w_q[0]);
  wire        xb    = x_q[0] | inc;             // x is zero by then
  wire        wb    = w_q[0] ^ sub_q;
  wire        s     = xb ^ wb ^ cy_q;
  wire        co    = (xb & wb) | (cy_q & (xb | wb));
  wire        neg   = sub_q && s;               // bit 28 of x - w: the difference is < 0

  always @(*) begin
    st_d = st_q;
    x_d = x_q;
    w_d = w_q;
    e_d = e_q;
    sh_d = sh_q;
    t_d = t_q;
    k_d = k_q;
    cy_d = cy_q;
    sub_d = sub_q;
    rb_d = rb_q;
    sb_d = sb_q;
    nz_d = nz_q;
    sign_d = sign_q;
    nan_d = nan_q;
    inf_d = inf_q;
    zero_d = zero_q;
    case (st_q)
      SIdle: if (start_i) begin
        x_d = {a_i[24:0], 3'd0};
        w_d = {3'd0, c_i[22:0], 3'd0};
        st_d = SLoad;
      end
      SLoad: begin
        if (add_q) x_d = a32_zero ? 28'd0 : {1'b0, 1'b1, x_q[25:0]};
        else x_d = p16_zero ? 28'd0 : {prod, 12'd0};
        w_d = c_zero ? 29'd0 : {2'b00, 1'b1, w_q[25:0]};
        e_d = (c_zero || (!p_zero && !dexp[10])) ? p_e : c_e;
        sh_d = sh_ld;
        sub_d = p_sign ^ ch_q[8];
        cy_d = p_sign ^ ch_q[8];
        t_d = 5'd0;
        nz_d = 1'b0;
        nan_d = nan;
        inf_d = inf;
        zero_d = zz;
        sign_d = nan ? 1'b0 : inf ? (p_inf ? p_sign : ch_q[8]) : zz ? (p_sign & ch_q[8])
               : p_sign;
        st_d = (nan || inf || zz) ? SPack : SAlign;
      end
      SAlign: begin
        // {0, v} >> 1 with the shifted-out bit jammed into the sticky lsb
        if (x_al) begin
          x_d = {1'b0, x_q[27:2], x_q[1] | x_q[0]};
          sh_d = sh_q + 6'd1;
        end else if (w_al) begin
          w_d = {1'b0, w_q[28:2], w_q[1] | w_q[0]};
          sh_d = sh_q - 6'd1;
        end else st_d = SAdd;
      end
      SAdd, SNeg: begin
        x_d = {1'b0, x_q[27:1]};
        w_d = {s, w_q[28:1]};
        cy_d = co;
        t_d = t_q + 5'd1;
        if (s) begin
          k_d = t_q;
          nz_d = 1'b1;
        end
        rb_d = 1'b0;
        sb_d = 1'b0;
        if (last) begin
          t_d = 5'd0;
          if (st_q == SAdd && neg) begin  // negate: w = 0 - w, the sign flips
            cy_d = 1'b1;
            sign_d = !sign_q;
            st_d = SNeg;
          end else begin
            cy_d = 1'b0;
            sub_d = 1'b0;
            if (!(nz_q || s)) begin  // exact cancellation: +0
              zero_d = 1'b1;
              sign_d = 1'b0;
              st_d = SPack;
            end else st_d = SRound;
          end
        end
      end
      SRound: begin
        // rotate: bit k of the sum to bit 28 - k, rounding increment at the kept lsb
        w_d = {s, w_q[28:1]};
        cy_d = co;
        k_d = k_q - 5'd1;
        if (k_q == 5'd24) rb_d = w_q[0];
        if (k_q > 5'd24) sb_d = sb_q | w_q[0];
        // one exponent step per bit but the leading one; then the rounding carry out of it
        if (k_q != 5'd0 || co) e_d = e_q + 10'd1;
        if (k_q == 5'd0) st_d = SPack;
      end
      SPack: st_d = SDone;
      SDone: st_d = SIdle;
      default: st_d = SIdle;
    endcase
    // pack: a result other than a finite normal number has a zero fraction
    if (st_q == SPack && !y_frac) w_d = 29'd0;
  end

  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) st_q <= SIdle;
    else st_q <= st_d;
  end
  always @(posedge clk_i) begin
    if (start_i && st_q == SIdle) begin
      add_q <= add_i;
      ah_q <= a_i[31:23];
      ch_q <= c_i[31:23];
      b_q <= b_i;
    end
    x_q <= x_d;
    w_q <= w_d;
    e_q <= e_d;
    sh_q <= sh_d;
    t_q <= t_d;
    k_q <= k_d;
    cy_q <= cy_d;
    sub_q <= sub_d;
    rb_q <= rb_d;
    sb_q <= sb_d;
    nz_q <= nz_d;
    sign_q <= sign_d;
    nan_q <= nan_d;
    inf_q <= inf_d;
    zero_q <= zero_d;
  end

  // ---------------------------------------------------------------- pack
  always @(*) begin
    y_o[31] = sign_q;
    y_o[30:23] = y_ones ? 8'hff : y_zero ? 8'h00 : e_q[7:0];
    y_o[22] = w_q[27] || nan_q;
    y_o[21:0] = w_q[26:5];
  end

  assign ready_o = (st_q == SIdle);
  assign done_o = (st_q == SDone);
endmodule

`default_nettype wire
