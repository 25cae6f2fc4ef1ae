// pe_tiny_fmac - a bit-serial multiply-add for pe_lite, bit-exact with host/common/numerics.c;
// pe_lite_fmac's function, ports and handshake in 60% of its LUT4s, at about 2x its latency.
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
// Area goes into muxes, so the mantissas live in two shift registers that only load or shift right
// (lsb first into one serial full adder); exponents and special operands stay parallel (one adder
// for ea + eb - 127, one subtractor for the difference, one adder at the end: about 32 LUT4s in
// all, as an iCE40 ripple adder costs one LUT4 a bit, no more than the load mux of a serial
// exponent register would; the exponent tests for zero, infinity and NaN and what follows from them
// cost about 50). Steps: latch (start: a_i into x, c_i's fraction into w, b's mantissa into the
// free bits of both, the exponent fields into registers), load (1 cycle: specials; the exponent
// difference's sign, low 6 bits and whether it is beyond 31 into registers: two carry chains are
// enough for one cycle at 24 MHz), set (1: the 8x8 mantissa product of an SB_MAC16 into x, the
// hidden bits; an operand more than 31 places below the other becomes its sticky bit at once),
// align (the operand with the smaller exponent shifts right with a sticky bit, |difference|
// cycles), add (29 cycles: w = x +- w, remembering where the last one was), negate (29 more, only
// when x - w < 0), round (position of the leading one + 1 cycles: w rotates until the leading one
// reaches bit 28, the rounding increment rippling in at the kept lsb), pack (1), done (1). Zero +
// zero and the NaNs known at load go from load to pack; with an all-ones exponent on c (or on an
// fp32 a) the fractions of those operands alone take the add pass (a nonzero sum: NaN), then pack.
// 3 to 122 cycles an operation (random operands: fmac mean 48, add mean 62; tb_pe_tiny_fmac reports
// them).
//
// Fields: x and w hold {carry, mantissa with its msb at bit 26, 3 guard bits}; the product's
// msb sits at 27 or 26 (prod[15] or not: no normalizing mux, the 29-bit sum has room). The
// result's exponent is bit 26's (the larger operand's, packed and unbounded) + (position of
// the leading one - 26, counted while rotating) + the rounding carry.
`default_nettype none

module pe_tiny_fmac #(
  // 1: the operands come in 16-bit parts on we_i/sel_i/d_i while idle, written straight into
  // the registers that start would latch them into (pe_fpu_share Common: no staging
  // registers); parts 0 a[15:0], 1 a[31:16] (written after part 0: it sets a's exponent for
  // an add), 2 b, 3 c[15:0], 4 c[31:16]; a_i, b_i and c_i are unused. A part not written
  // keeps what the last operation left (as a staging register would keep its last part):
  // only a[31:16] of an fmac, which the fmac does not read.
  parameter bit Port = 1'b0
) (
  input  wire         clk_i,
  input  wire         rst_ni,
  input  wire         start_i,
  input  wire         add_i,
  input  wire  [31:0] a_i,
  input  wire  [15:0] b_i,
  input  wire  [31:0] c_i,
  input  wire         we_i,   // Port: an operand part
  input  wire  [2:0]  sel_i,
  input  wire  [15:0] d_i,
  output wire         ready_o,
  output wire         done_o,
  output logic [31:0] y_o
);
  localparam [3:0] SIdle = 4'd0, SLoad = 4'd1, SSet = 4'd2, SAlign = 4'd3, SAdd = 4'd4,
                   SNeg = 4'd5, SRound = 4'd6, SPack = 4'd7, SDone = 4'd8;

  // one-hot in synthesis: the state decodes feed most enables (9 LUT4 fewer than binary)
  (* fsm_encoding = "one-hot" *) logic [3:0] st_q;
  logic [3:0]  st_d;
  // until set, b_i[6:0] (b's mantissa) rides in their free bits: x[0], w[2:0], w[28:26]
  logic [27:0] x_q, x_d;     // a_i[24:0] at 27:3 after start; then the product (or a)
  logic [28:0] w_q, w_d;     // c_i[22:0] at 25:3 after start; then c, the sum, the result
  // a's sign and exponent (fp32 or bf16), b's (127 for an add: a + c = a * 1.0 + c), c's
  logic [8:0]  ah_q, bh_q, ch_q;
  logic        add_q;
  // alignment steps (counting up to 0 for x, to -1 for w: the difference or its complement),
  // then the bit of the add and negate passes, then the leading one's position - 26
  logic [5:0]  t_q, t_d;
  logic        xal_q, xal_d; // x is aligned (else w)
  logic [4:0]  k_q, k_d;     // position of the last one seen; counts down while rounding
  logic [7:0]  pe_q;         // the result's exponent field
  logic [6:0]  d_q;          // exponent difference (product - c): sign, low 6 bits
  logic        dfar_q;       // |difference| >= 32
  logic [9:0]  el_q;         // exponent of bit 26 after the alignment (packed, unbounded)
  logic        cy_q, cy_d;   // the serial adder's carry
  logic        sub_q, sub_d; // x - w (the signs differ)
  logic        rb_q, rb_d;   // round bit
  logic        sb_q, sb_d;   // sticky bit
  logic        nz_q, nz_d;   // a one was seen
  logic        sign_q, sign_d, nan_q, nan_d, inf_q, inf_d, zero_q, zero_d;

  // ------------------------------------------------ load (SLoad, from the latched operands)
  wire [7:0] ea = ah_q[7:0];
  wire [7:0] eb = bh_q[7:0];
  wire [7:0] ec = ch_q[7:0];
  // the fraction of a bf16 a (and the low 7 bits of an fp32 a's) is tested here; the rest of a
  // NaN's fraction in the add pass (a wide OR in parallel costs more than the pass)
  wire       a_f = (x_q[9:3] != 7'd0);
  // b's mantissa rides in the bits of w and x that are free until set (no register of its own)
  wire [6:0] mb = {w_q[28:26], w_q[2:0], x_q[0]};
  wire       b_f = (mb != 7'd0);
  wire       a_x = (ea == 8'hff);
  wire       b_x = (eb == 8'hff);
  wire       c_x = (ec == 8'hff);
  wire       c_zero = (ec == 8'd0);

  wire       p_sign = ah_q[8] ^ bh_q[8];
  wire       p_zero = (ea == 8'd0) || (eb == 8'd0);
  // an infinite or NaN operand: the result is NaN if any is NaN, for inf * 0, or for inf - inf;
  // else an infinity of the product's sign if it is infinite, else of c's. NaN known here: a
  // bf16 NaN, inf * 0, inf - inf; the fractions of c and of an fp32 a with an all-ones
  // exponent are summed in the add pass (a nonzero sum: NaN)
  wire       p_x    = a_x || b_x;
  wire       nan    = (a_x && a_f) || (b_x && b_f) || (p_x && p_zero)
                   || (p_x && c_x && (p_sign != ch_q[8]));
  wire       inf    = p_x || c_x;
  wire       zz     = p_zero && c_zero;
  // 8x8 mantissa product: one SB_MAC16 with synth_ice40 -dsp
  wire [15:0] prod  = {8'd0, 1'b1, x_q[9:3]} * {8'd0, 1'b1, mb};
  // packed exponents of bit 26 (signed: the product's is unbounded)
  // ea + eb - 127 as (ea + eb + 1) - 128: the -128 touches only the top three bits
  wire [9:0]  p_e1  = 10'(ea) + 10'(eb) + 10'd1;
  wire [9:0]  p_e   = {p_e1[9:7] - 3'd1, p_e1[6:0]};
  wire [10:0] dexp  = 11'($signed(p_e)) - 11'(ec);   // > 0: w is aligned, < 0: x
  // (SSet, from d_q) beyond 32 shifts only the sticky bit is left: load it at once (a zero
  // needs no shifts)
  wire        far   = dfar_q && !p_zero && !c_zero && !inf_q;
  wire        far_x = far && d_q[6];
  wire        far_w = far && !d_q[6];

  // ------------------------------------------------ range (SPack)
  // packed exponent of the rounded leading one: bit 26's, + (its position - 26), + carry
  wire [9:0]  e_r   = el_q + 10'($signed(t_q)) + 10'(cy_q);
  wire        e_big = !e_r[9] && (e_r[8] || e_r[7:0] == 8'hff);      // >= 255
  wire        e_small = e_r[9] || (e_r == 10'd0);                    // <= 0
  wire        y_ones = nan_q || inf_q || (e_big && !zero_q);
  wire        y_zero = !y_ones && (zero_q || e_small);

  // ------------------------------------------------ the serial datapath
  wire        al_done = (t_q == {6{!xal_q}});
  wire        last  = (t_q == 6'd28);
  // the rounding increment enters at the kept lsb (k = 23): round bit and (sticky or lsb)
  wire        inc   = (st_q == SRound) && (k_q == 5'd23) && rb_q && (sb_q || w_q[0]);
  wire        xb    = x_q[0] | inc;             // x is zero by then
  wire        wb    = w_q[0] ^ sub_q;
  wire        s     = xb ^ wb ^ cy_q;
  wire        co    = (xb & wb) | (cy_q & (xb | wb));
  wire        neg   = sub_q && s;               // bit 28 of x - w: the difference is < 0

  always_comb begin
    st_d = st_q;
    x_d = x_q;
    w_d = w_q;
    xal_d = xal_q;
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
      SIdle: begin
        if (Port) begin
          if (we_i) begin
            case (sel_i)
              3'd0: x_d[18:1] = {d_i, 2'd0};
              3'd1: x_d[27:19] = d_i[8:0];
              3'd2: begin
                x_d[0] = d_i[0];
                w_d[2:0] = d_i[3:1];
                w_d[28:26] = d_i[6:4];
              end
              3'd3: w_d[18:3] = d_i;
              default: w_d[25:19] = d_i[6:0];
            endcase
          end
        end else if (start_i) begin
          x_d = {a_i[24:0], 2'd0, b_i[0]};
          w_d = {b_i[6:4], c_i[22:0], b_i[3:1]};
        end
        if (start_i) st_d = SLoad;
      end
      SLoad: begin
        sub_d = (p_sign ^ ch_q[8]) && !inf;
        cy_d = (p_sign ^ ch_q[8]) && !inf;
        nz_d = 1'b0;
        nan_d = nan;
        inf_d = inf;
        zero_d = zz;
        sign_d = nan ? 1'b0 : inf ? (p_x ? p_sign : ch_q[8]) : zz ? (p_sign & ch_q[8])
               : p_sign;
        st_d = (nan || zz || (inf && !c_x && !add_q)) ? SPack : SSet;
      end
      SSet: begin
        // an infinite or NaN operand: the fractions with an all-ones exponent, no hidden bits,
        // no alignment
        x_d = (p_zero || (inf_q && !(add_q && a_x))) ? 28'd0 : far_x ? 28'd1
            : add_q ? {1'b0, !inf_q, x_q[25:3], 3'd0} : {prod, 12'd0};
        w_d = (c_zero || (inf_q && !c_x)) ? 29'd0 : far_w ? 29'd1
            : {2'b00, !inf_q, w_q[25:3], 3'd0};
        xal_d = d_q[6] && !(p_zero || c_zero || far || inf_q);
        t_d = (p_zero || c_zero || far || inf_q) ? 6'h3f : (d_q[5:0] ^ {6{!d_q[6]}});
        st_d = SAlign;
      end
      SAlign: begin
        // {0, v} >> 1 with the shifted-out bit jammed into the sticky lsb
        t_d = t_q + 6'd1;
        if (al_done) begin
          t_d = 6'd0;
          st_d = SAdd;
        end else if (xal_q) x_d = {1'b0, x_q[27:2], x_q[1] | x_q[0]};
        else w_d = {1'b0, w_q[28:2], w_q[1] | w_q[0]};
      end
      SAdd, SNeg: begin
        x_d = {1'b0, x_q[27:1]};
        w_d = {s, w_q[28:1]};
        cy_d = co;
        t_d = t_q + 6'd1;
        if (s) begin
          k_d = t_q[4:0];
          nz_d = 1'b1;
        end
        rb_d = 1'b0;
        sb_d = 1'b0;
        if (last) begin
          t_d = 6'd0;
          if (st_q == SAdd && neg) begin  // negate: w = 0 - w, the sign flips
            cy_d = 1'b1;
            sign_d = !sign_q;
            st_d = SNeg;
          end else begin
            cy_d = 1'b0;
            sub_d = 1'b0;
            t_d = 6'h26;                  // -26
            if (inf_q) begin              // a NaN's fraction: NaN, else infinity
              if (nz_q || s) begin
                nan_d = 1'b1;
                sign_d = 1'b0;
              end
              st_d = SPack;
            end else if (!(nz_q || s)) begin  // exact cancellation: +0
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
        // below the kept bits (k >= 24): the bit becomes the round bit, the last one sticky
        if (k_q[4:3] == 2'b11) begin
          rb_d = w_q[0];
          sb_d = sb_q | rb_q;
        end
        // one step per bit but the leading one: t ends on its position - 26
        if (k_q != 5'd0) t_d = t_q + 6'd1;
        else st_d = SPack;
      end
      SPack: st_d = SDone;
      SDone: st_d = SIdle;
      default: st_d = SIdle;
    endcase
    // pack: a result other than a finite normal number has a zero fraction
    if (st_q == SPack && (y_ones || y_zero)) w_d = 29'd0;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) st_q <= SIdle;
    else st_q <= st_d;
  end
  always_ff @(posedge clk_i) begin
    if (Port) begin
      if (we_i && st_q == SIdle) begin
        case (sel_i)
          3'd0, 3'd1: ah_q <= d_i[15:7];  // bf16 a's sign and exponent; then fp32 a's
          3'd2: bh_q <= d_i[15:7];
          3'd4: ch_q <= d_i[15:7];
          default: ;
        endcase
      end
      if (start_i && st_q == SIdle) begin
        add_q <= add_i;
        if (add_i) bh_q <= 9'h07f;
      end
    end else if (start_i && st_q == SIdle) begin
      add_q <= add_i;
      ah_q <= add_i ? a_i[31:23] : a_i[15:7];
      bh_q <= add_i ? 9'h07f : b_i[15:7];
      ch_q <= c_i[31:23];
    end
    // the exponent field: all ones for NaN, infinity and overflow, zero for zero and underflow
    if (st_q == SLoad) d_q <= {dexp[10], dexp[5:0]};
    if (st_q == SLoad) dfar_q <= (dexp[10:5] != {6{dexp[10]}});
    // the larger exponent: c's if the product is zero or smaller
    if (st_q == SSet) el_q <= (!c_zero && (p_zero || d_q[6])) ? 10'(ec) : p_e;
    if (st_q == SPack) pe_q <= y_ones ? 8'hff : y_zero ? 8'h00 : e_r[7:0];
    x_q <= x_d;
    w_q <= w_d;
    xal_q <= xal_d;
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
  always_comb begin
    y_o[31] = sign_q;
    y_o[30:23] = pe_q;
    y_o[22] = w_q[27] || nan_q;
    y_o[21:0] = w_q[26:5];
  end

  assign ready_o = (st_q == SIdle);
  if (Port) begin : g_port
    wire unused_ops = ^{a_i, b_i, c_i};
  end else begin : g_ops
    wire unused_port = ^{we_i, sel_i, d_i};
  end
  assign done_o = (st_q == SDone);
endmodule

`default_nettype wire
