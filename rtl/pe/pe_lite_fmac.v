// pe_lite_fmac - pe_lite's multi-cycle multiply-add, bit-exact with host/common/numerics.c
// (the same function as pe_fmac, one operation at a time, for area).
//
//   add_i = 0: y = c + a*b with a = a_i[15:0], b = b_i (bf16), c = c_i (fp32)  (nm_fmac_bits)
//   add_i = 1: y = a + c with a = a_i, c = c_i (fp32)                           (nm_add_bits)
//
// Handshake: start_i is taken while ready_o is high (operands are sampled in that cycle
// only); done_o is high for one cycle with the result on y_o (combinational from the state
// registers, valid only while done_o). Rules (docs/architecture.md section 8): exact
// product, one RNE rounding to 24 bits with an unbounded exponent, flush below 2^-126 to a
// signed zero, >= 2^128 to infinity, subnormal inputs read as zero, NaN is 0x7fc00000, an
// exact zero sum is +0 unless both terms are -0.
//
// Steps: unpack, order by magnitude and load (1 cycle), align the smaller operand one bit
// per cycle with a sticky bit (min(exponent difference, 26) cycles, fewer when it is all
// sticky), add/subtract (1), normalize one bit per cycle (1 + leading zeros), round (1),
// done (1). Specials and zero + zero go straight to done. The same single shift register
// serves alignment and normalization; one 28-bit adder, one 24-bit incrementer.
// Exponents inside are E = unbiased exponent of the msb + 383, so the packed fp32 exponent is
// E[7:0] when 257 <= E <= 510; 0 means a zero operand.
`default_nettype none

module pe_lite_fmac (
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
  localparam [2:0] SIdle = 3'd0, SAlign = 3'd1, SAdd = 3'd2, SNorm = 3'd3, SRound = 3'd4,
                   SDone = 3'd5;

  // ---------------------------------------------------------------- unpack (start cycle)
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
  // 8x8 mantissa product: one SB_MAC16 with synth_ice40 -dsp
  wire [15:0] prod     = {8'd0, 1'b1, a_i[6:0]} * {8'd0, 1'b1, b_i[6:0]};

  wire        p_sign = add_i ? a_i[31] : (a_i[15] ^ b_i[15]);
  wire        p_zero = add_i ? (ea32 == 8'd0) : p16_zero;
  wire        p_inf  = add_i ? a32_inf : p16_inf;
  wire        p_nan  = add_i ? a32_nan : p16_nan;
  // normalized product mantissa (msb at 23) and its exponent
  wire        p_top  = add_i || prod[15];
  wire [23:0] p_man  = p_zero ? 24'd0 : add_i ? {1'b1, a_i[22:0]}
                     : prod[15] ? {prod, 8'd0} : {prod[14:0], 9'd0};
  wire [9:0]  p_e    = p_zero ? 10'd0 : add_i ? (10'(ea32) + 10'd256)
                     : (10'(ea16) + 10'(eb16) + 10'(p_top) + 10'd129);
  wire [23:0] c_man  = c_zero ? 24'd0 : {1'b1, c_i[22:0]};
  wire [9:0]  c_e    = c_zero ? 10'd0 : (10'(ec32) + 10'd256);

  wire        nan_d  = p_nan || c_nan || (p_inf && c_inf && (p_sign != c_i[31]));
  wire        inf_d  = p_inf || c_inf;
  wire        isgn_d = p_inf ? p_sign : c_i[31];

  wire        p_big  = {p_e, p_man} >= {c_e, c_man};
  wire [23:0] x_man  = p_big ? p_man : c_man;
  wire [9:0]  x_e    = p_big ? p_e : c_e;
  wire [23:0] y_man  = p_big ? c_man : p_man;
  wire [9:0]  dexp   = x_e - (p_big ? c_e : p_e);

  // ---------------------------------------------------------------- state
  reg [2:0]  st_q, st_d;
  reg [23:0] x_q, x_d;      // larger mantissa
  reg [27:0] m_q, m_d;      // aligned smaller operand, then the sum, then the rounded sum
  reg [9:0]  e_q, e_d;      // exponent of the result's msb (E)
  reg [4:0]  sh_q, sh_d;    // alignment shifts left
  reg        nan_q, nan_d2, inf_q, inf_d2, isgn_q, isgn_d2;
  reg        sign_q, sign_d, sub_q, sub_d, zero_q, zero_d, zsign_q, zsign_d;
  reg        carry_q, carry_d;

  wire [27:0] sum    = sub_q ? ({1'b0, x_q, 3'd0} - m_q) : ({1'b0, x_q, 3'd0} + m_q);
  wire        rnd_up = m_q[3] && ((m_q[2:0] != 3'd0) || m_q[4]);
  wire [24:0] m_rnd  = {1'b0, m_q[27:4]} + 25'(rnd_up);

  always @(*) begin
    st_d = st_q;
    x_d = x_q;
    m_d = m_q;
    e_d = e_q;
    sh_d = sh_q;
    nan_d2 = nan_q;
    inf_d2 = inf_q;
    isgn_d2 = isgn_q;
    sign_d = sign_q;
    sub_d = sub_q;
    zero_d = zero_q;
    zsign_d = zsign_q;
    carry_d = carry_q;
    case (st_q)
      SIdle: begin
        if (start_i) begin
          x_d = x_man;
          m_d = {1'b0, y_man, 3'd0};
          e_d = x_e + 10'd1;
          sh_d = (dexp > 10'd26) ? 5'd26 : dexp[4:0];
          nan_d2 = nan_d;
          inf_d2 = inf_d;
          isgn_d2 = isgn_d;
          sign_d = p_big ? p_sign : c_i[31];
          sub_d = p_sign ^ c_i[31];
          zero_d = (x_man == 24'd0);
          zsign_d = p_sign & c_i[31];
          carry_d = 1'b0;
          st_d = (nan_d || inf_d || (x_man == 24'd0)) ? SDone : SAlign;
        end
      end
      SAlign: begin
        // {0, y, 000} >> 1 with the shifted-out bit jammed into the sticky lsb
        if (sh_q == 5'd0 || m_q[26:1] == 26'd0) st_d = SAdd;
        else begin
          m_d = {2'b00, m_q[26:2], m_q[1] | m_q[0]};
          sh_d = sh_q - 5'd1;
        end
      end
      SAdd: begin
        m_d = sum;
        st_d = SNorm;
      end
      SNorm: begin
        if (m_q == 28'd0) begin  // exact cancellation: +0
          zero_d = 1'b1;
          zsign_d = 1'b0;
          st_d = SDone;
        end else if (m_q[27]) st_d = SRound;
        else begin
          m_d = {m_q[26:0], 1'b0};
          e_d = e_q - 10'd1;
        end
      end
      SRound: begin
        m_d = {m_rnd[23:0], 4'd0};
        carry_d = m_rnd[24];
        st_d = SDone;
      end
      SDone: st_d = SIdle;
      default: st_d = SIdle;
    endcase
  end

  always @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) st_q <= SIdle;
    else st_q <= st_d;
  end
  always @(posedge clk_i) begin
    x_q <= x_d;
    m_q <= m_d;
    e_q <= e_d;
    sh_q <= sh_d;
    nan_q <= nan_d2;
    inf_q <= inf_d2;
    isgn_q <= isgn_d2;
    sign_q <= sign_d;
    sub_q <= sub_d;
    zero_q <= zero_d;
    zsign_q <= zsign_d;
    carry_q <= carry_d;
  end

  // ---------------------------------------------------------------- pack
  // a rounding carry makes the mantissa 1.0 (fraction bits already zero) one exponent up
  wire [9:0] e_fin = e_q + 10'(carry_q);
  always @(*) begin
    if (nan_q) y_o = 32'h7fc00000;
    else if (inf_q) y_o = {isgn_q, 31'h7f800000};
    else if (zero_q) y_o = {zsign_q, 31'd0};
    else if (e_fin >= 10'd511) y_o = {sign_q, 31'h7f800000};
    else if (e_fin <= 10'd256) y_o = {sign_q, 31'd0};
    else y_o = {sign_q, e_fin[7:0], m_q[26:4]};
  end

  assign ready_o = (st_q == SIdle);
  assign done_o = (st_q == SDone);
endmodule

`default_nettype wire
