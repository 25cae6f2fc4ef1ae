/*
 * numerics.h - the accelerator's arithmetic, bit for bit.
 *
 * This is the one C model of the PE datapath numerics (docs/architecture.md, "Numerics").
 * The cpu backend, the RTL testbenches and the training code all call it; nothing else
 * may re-derive these rules.
 *
 *   - operands are bf16, produced from fp32 by round-to-nearest-even (RNE);
 *   - a bf16 x bf16 product is exact (no rounding, unbounded exponent);
 *   - accumulation is fp32: one RNE rounding of the exact sum c + a*b, with the
 *     exponent unbounded during rounding; a rounded result below 2^-126 in magnitude
 *     is flushed to a zero of the same sign, at or above 2^128 it becomes infinity;
 *   - subnormal inputs (bf16 or fp32) read as zeros of the same sign;
 *   - NaN and infinity follow IEEE 754 (inf*0, inf-inf give NaN); every NaN result is
 *     the canonical quiet NaN: 0x7fc00000 (fp32) / 0x7fc0 (bf16);
 *   - the sign of an exact zero sum follows IEEE RNE: -0 only when both terms are -0.
 *
 * Two formulations live here: the *_bits functions are integer soft-float (the reference
 * the RTL mirrors), nm_fmac / nm_add / nm_axpy are the fast paths on the host FPU that
 * fall back to the reference near underflow; tests prove them identical.
 */
#ifndef CS_NUMERICS_H
#define CS_NUMERICS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NM_F32_QNAN  0x7fc00000u
#define NM_BF16_QNAN 0x7fc0u

static inline uint32_t nm_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float nm_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* fp32 bits to bf16 bits: RNE, subnormals to signed zero, NaN to canonical NaN. */
static inline uint16_t nm_bf16_from_bits(uint32_t u)
{
	uint32_t e = (u >> 23) & 0xffu;
	if (e == 0xffu && (u & 0x7fffffu))
		return NM_BF16_QNAN;
	if (e == 0)
		return (uint16_t)((u >> 16) & 0x8000u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static inline uint16_t nm_bf16_from_f32(float f)
{
	return nm_bf16_from_bits(nm_f32_bits(f));
}

/* bf16 bits to fp32 (exact; a subnormal bf16 reads as a signed zero). */
static inline float nm_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	if ((u & 0x7f800000u) == 0)
		u &= 0x80000000u;
	return nm_bits_f32(u);
}

/* Canonical operand view of an fp32 accumulator: subnormals to signed zero. */
static inline uint32_t nm_f32_ftz_bits(uint32_t u)
{
	if ((u & 0x7f800000u) == 0)
		return u & 0x80000000u;
	return u;
}

/* Reference (integer) formulations. */
uint32_t nm_fmac_bits(uint16_t a, uint16_t b, uint32_t c); /* c + a*b */
uint32_t nm_add_bits(uint32_t a, uint32_t b);              /* a + b   */

/* Fast formulations, identical results. */
float nm_fmac(uint16_t a, uint16_t b, float c);
float nm_add(float a, float b);

/* y[t] = nm_fmac(w, x[t], y[t]) for t < n: the PE's AXPY. */
void nm_axpy(float *y, uint16_t w, const uint16_t *x, size_t n);
/* Strided form: y[t*sy] = nm_fmac(w, x[t*sx], y[t*sy]). */
void nm_axpy_strided(float *y, size_t sy, uint16_t w, const uint16_t *x, size_t sx, size_t n);
/* The same AXPY on operands already widened to fp32 (w and every x[t] must be values of
 * bf16 numbers, e.g. from nm_bf16_to_f32): the fast path of the cpu backend, vectorized
 * with AVX-512 or AVX2+FMA when the CPU has them. y and x must not overlap. */
void nm_axpy_f32(float *y, float w, const float *x, size_t n);
/* Force the vector path (2 AVX-512, 1 AVX2+FMA, 0 scalar; tests only) when force >= 0;
 * returns the level in use (-1 before the first call). */
int nm_simd_level(int force);
/* acc = nm_fmac(a[t*sa], b[t*sb], acc) for t < n in order, starting from acc0. */
float nm_dot_strided(float acc0, const uint16_t *a, size_t sa, const uint16_t *b, size_t sb,
		     size_t n);

/* Round an fp32 array to bf16 (dst may not alias src). */
void nm_bf16_from_f32_array(uint16_t *dst, const float *src, size_t n);
void nm_bf16_to_f32_array(float *dst, const uint16_t *src, size_t n);

/*
 * Vector-engine functions (docs/architecture.md 4.4, extended 0xF group). Each is defined
 * on the primitives above, so the PE model, the cpu backend and the RTL agree bit for bit.
 */

/* `vsum2` over x[0..n): two chains per result by the parity of the element index,
 * s_j = add(s_j, x[i]) (fp32, exact input) and q_j = fmac(bf16(x[i]), bf16(x[i]), q_j),
 * j = i & 1, each from +0 in index order; out[0] = add(s_0, s_1), out[1] = add(q_0, q_1).
 * Two chains keep a 4-stage FMAC pipeline full (4 independent accumulators). */
void nm_vsum2_bits(uint32_t out[2], const uint32_t *x, size_t n);
/* `vsum4` (pe): four chains per result, j = i & 3, each from +0 in index order (the two
 * FMACs of `pe` one element a cycle); out = add(add(c_0, c_1), add(c_2, c_3)) for s and q. */
void nm_vsum4_bits(uint32_t out[2], const uint32_t *x, size_t n);

/* rsqrt of a B word, as the `rsqrt` instruction computes it: x is rounded to bf16 (RNE,
 * as every operand) and the result is the bf16 nearest to 1/sqrt(x), read from a
 * 256-entry ROM (nm_rsqrt_table) indexed by {exponent parity, 7 mantissa bits} with the
 * exponent halved beside it. Exact (correctly rounded) for every bf16 input; no range
 * check is needed (the result exponent is within [-64, 63]). Specials: NaN and negative
 * nonzero x give 0x7fc0, +-0 (and subnormals) +-inf, +inf +0. */
uint16_t nm_rsqrt_bits(uint32_t x);
/* The ROM: entry {p, m} is bf16(1/sqrt((1 + m/128) * 2^p)), in (0.5, 1]. */
extern const uint16_t nm_rsqrt_table[256];

/* `vlut`: piecewise-linear function by a 256-word table t (in B). x is rounded to bf16
 * (xb), its segment i = nm_lut_index(xb), and with t[i] = {slope bf16 [31:16], intercept
 * bf16 [15:0]} the result is nm_fmac_bits(slope, xb, intercept << 16): one fmac. NaN
 * and infinities go through the fmac (a slope of 0 on -inf gives NaN). */
uint32_t nm_lut_bits(const uint32_t *t, uint32_t x);
/* Segment of a bf16 value: {sign, 4-bit binade b, top 3 mantissa bits}, where b = 0 for
 * |x| < 2^-12 (zeros and subnormals included), b = e + 13 for |x| in [2^e, 2^(e+1)),
 * e = -12..1, and b = 15 for |x| >= 4 (infinities and NaN included). */
unsigned nm_lut_index(uint16_t xb);
/* The standard tables: GELU (tanh-free, x * Phi(x)) and its derivative (deriv = 1). Each
 * segment's line has the slope of its chord rounded to bf16 and the intercept that
 * balances the error at the ends and the middle, rounded to bf16; the saturated binade is
 * the asymptote (slope 1 or 0). Built once from double arithmetic; the host uploads it. */
void nm_gelu_table(uint32_t t[256], int deriv);
/* nm_lut_bits on the standard GELU / GELU-derivative table. */
uint32_t nm_gelu_lut_bits(uint32_t x);
uint32_t nm_gelu_grad_lut_bits(uint32_t x);

/*
 * The resident step's vector phases (fw/vec_*.s), one token at a time, each step one
 * vector instruction of 4.4; the firmware computes exactly these.
 *
 * nm_ln_fwd_bits: with s, q = vsum2(x[0..c)), m = fmac(inv_c, bf16(s), 0),
 * e2 = fmac(inv_c, bf16(q), 0), mb = bf16(m), r = rsqrt(fmac(1, bf16(fmac(-mb, mb, e2)),
 * eps)), sh = -bf16(fmac(r, mb, 0)): z[j] = bf16(fmac(r, bf16(x[j]), sh)),
 * y[j] = bf16(fmac(gamma[j], z[j], beta[j])); *r_out = r. inv_c and eps are bf16.
 */
void nm_ln_fwd_bits(uint16_t *y, uint16_t *z, uint16_t *r_out, const uint32_t *x,
		    const uint16_t *gamma, const uint32_t *beta, size_t c, uint16_t inv_c,
		    uint16_t eps);
/*
 * nm_ln_bwd_bits: dgamma[j] = fmac(z[j], bf16(dy[j]), dgamma[j]), dbeta[j] =
 * fmac(1, bf16(dy[j]), dbeta[j]); g[j] = fmac(gamma[j], bf16(dy[j]), 0), s1 = vdot(1, g),
 * s2 = vdot(z, g) (two chains by parity, then their sum), a = -bf16(fmac(r,
 * bf16(fmac(inv_c, bf16(s1), 0)), 0)), b likewise from s2; u = fmac(b, z[j], fmac(r,
 * bf16(g[j]), a)), dx[j] = fmac(1, bf16(u), dx[j]).
 */
void nm_ln_bwd_bits(uint32_t *dx, uint32_t *dgamma, uint32_t *dbeta, const uint32_t *dy,
		    const uint16_t *z, uint16_t r, const uint16_t *gamma, size_t c, uint16_t inv_c);
/*
 * The same, also giving what the firmware leaves in its scratch after the token (the cpu
 * backend reproduces the programs' SRAM to the bit): s [c] (may be NULL) the last vector
 * pass (ln_fwd: y before rounding; ln_bwd: u), t the statistics words (ln_fwd: m,
 * fmac(1, bf16(var), eps), fmac(r, mb, 0); ln_bwd: fmac(r, bf16(fmac(inv_c, bf16(s), 0)),
 * 0) for s1 and s2) and am their bf16 (ln_fwd: of t[2]; ln_bwd: of t[0], t[1]).
 */
struct nm_ln_scratch {
	uint32_t *s;
	uint32_t t[3];
	uint16_t am[2];
};
void nm_ln_fwd_scratch_bits(uint16_t *y, uint16_t *z, uint16_t *r_out, struct nm_ln_scratch *sc,
			    const uint32_t *x, const uint16_t *gamma, const uint32_t *beta, size_t c,
			    uint16_t inv_c, uint16_t eps);
void nm_ln_bwd_scratch_bits(uint32_t *dx, uint32_t *dgamma, uint32_t *dbeta,
			    struct nm_ln_scratch *sc, const uint32_t *dy, const uint16_t *z, uint16_t r,
			    const uint16_t *gamma, size_t c, uint16_t inv_c);
/* The same with the sums on `chains` (2 or 4) chains: 4 is `pe`'s build (fw/vec_ln_fwd_d.s,
 * fw/vec_ln_bwd_d.s: vsum4, vdot4), s, q and s1, s2 as nm_vsum4_bits sums them. */
void nm_ln_fwd_chains_bits(uint16_t *y, uint16_t *z, uint16_t *r_out, struct nm_ln_scratch *sc,
			   const uint32_t *x, const uint16_t *gamma, const uint32_t *beta, size_t c,
			   uint16_t inv_c, uint16_t eps, int chains);
void nm_ln_bwd_chains_bits(uint32_t *dx, uint32_t *dgamma, uint32_t *dbeta,
			   struct nm_ln_scratch *sc, const uint32_t *dy, const uint16_t *z, uint16_t r,
			   const uint16_t *gamma, size_t c, uint16_t inv_c, int chains);
/* nm_gelu_fwd_bits: h[j] = bf16(lut(tg, pre[j])), d[j] = bf16(lut(td, pre[j])) with the
 * tables tg, td (nm_gelu_table; d NULL: h only, gelu_h, td unused); nm_gelu_bwd_bits: dp[j] = bf16(fmac(d[j], bf16(dh[j]), 0)). */
void nm_gelu_fwd_bits(uint16_t *h, uint16_t *d, const uint32_t *pre, size_t n, const uint32_t *tg,
		      const uint32_t *td);
void nm_gelu_bwd_bits(uint16_t *dp, const uint32_t *dh, const uint16_t *d, size_t n);

/*
 * The conversions between kernels (fw/vec_cvt.s), one row: cvt_a and cvt_bh are
 * nm_bf16_from_bits per element; nm_bias_add_bits: y[j] = fmac(1, bf16(b[j]), y[j]), j
 * ascending (bias_fwd: y a token's output row, b the fp32 bias; bias_bwd: y the bias
 * gradient, b a token's fp32 dy row, tokens in order): one vmac against a row of ones.
 */
void nm_bias_add_bits(uint32_t *y, const uint32_t *b, size_t n);
/* cvt_f: a bf16 row back to fp32, y[j] = fmac(x[j], 1, +0) (one vmac against a row of
 * ones and a row of zeros): x's value, except that -0 becomes +0. */
void nm_widen_bits(uint32_t *y, const uint16_t *x, size_t n);
/* cvt_f on any rows: y[j] = fmac(x[j], bf16(g[j]), c[j]). With g gamma (bf16 values) and c
 * beta it rebuilds nm_ln_fwd_bits's y before rounding from the stashed z (the product is
 * exact, so the operands' order does not matter): y = bf16 of it. */
void nm_fmac_row_bits(uint32_t *y, const uint16_t *x, const uint32_t *g, const uint32_t *c,
		      size_t n);

#endif /* CS_NUMERICS_H */
