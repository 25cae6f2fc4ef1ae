/*
 * eng_impl.h - what the engine's front end (eng.c) and its per-ISA kernel files share;
 * not public. Each kernel works on a contiguous range of rows [r0, r1) of its output and
 * on every token block; the front end splits the rows between threads.
 */
#ifndef CS_ENGINE_ENG_IMPL_H
#define CS_ENGINE_ENG_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/eng.h"

/* One (sequence, head) of causal attention for the kernels (eng_attn_body.h): T tokens, hs
 * features. Every matrix is addressed with its own strides, so the front end
 * (eng_attn.c) passes token-major q, k, v, o and their gradients in place and the
 * token-minor ones through small transposes. */
typedef struct eng_attn_head {
	int T, hs;
	float scale;                    /* 1 / sqrt(hs) */
	const float *q;                 /* q (t, i) at q [t * q_rs + i * q_is] */
	size_t q_rs, q_is;
	const float *kt;                /* k^T [hs][ldkt] (forward) */
	size_t ldkt;
	const float *v;                 /* v [T][ldv] (forward) */
	size_t ldv;
	float *att;                     /* P [T][ldatt]: softmax rows, zero above the diagonal */
	size_t ldatt;
	float *o;                       /* o [T][ldo] (forward) */
	size_t ldo;
	/* backward */
	const float *d;                 /* dout [T][ldd]; dout (t, i) at d [t * d_rs + i * d_is] */
	size_t ldd, d_rs, d_is;         /* (d_rs, d_is other than ldd, 1 only with dkt) */
	const float *k;                 /* k [T][ldk] */
	size_t ldk;
	const float *vt;                /* v^T [hs][ldvt] */
	size_t ldvt;
	const float *qb;                /* q [T][ldqb] */
	size_t ldqb;
	float *ds;                      /* scratch [T][ldds]: the scores' gradient */
	size_t ldds;
	float *dq, *dk, *dv;            /* [T][ldg] each, overwritten */
	size_t lddq, lddk, lddv;
	/* dkt, dvt not NULL: dk and dv are made token-minor in place of dk, dv
	 * (dk^T [hs][lddkt], dv^T [hs][lddvt]), q read through q_rs, q_is (qb unused) */
	float *dkt, *dvt;
	size_t lddkt, lddvt;
} eng_attn_head;

typedef struct eng_kern {
	/* One token block of a product, for the rows r in [0, nrows):
	 *   y [r][0..tl) = sum_{k in ptr[r]..ptr[r+1]} val[k] * x [idx[k]][0..tl)
	 * x is the block's first token in the token-minor input, or its packed copy (rows ld
	 * floats apart), y the block's first token of the output (rows ly apart); tl a
	 * multiple of 16, at most ENG_TB. Each output vector sums its row's entries in order,
	 * in one chain: the bits do not depend on the block's place or width. mul, when not
	 * NULL, is addressed as y (rows ly apart) and each sum is stored times its element of
	 * mul.
	 * A row's entries can be taken in column chunks (cur not NULL): the entries from
	 * cur[r] on whose column is below cend, cur[r] left past them; acc adds them to the
	 * sums already in y (a later chunk). Storing and reloading a sum rounds nothing, so
	 * the chunks give the bits of the whole row. */
	void (*spmm_rows)(float *y, size_t ly, const float *mul, const int64_t *ptr,
			  int64_t *cur, int32_t cend, int acc, const int32_t *idx,
			  const void *val, int bf16, const float *x, size_t ld, int tl, int nrows);
	/* dw[k] = <dy [r][0..tl), x [idx[k]][0..tl)> for the entries k of rows [r0, r1); tl a
	 * multiple of 16 (the padding past the tokens is not visited). Token t of row r of dy
	 * is at dy [r * dyr + (t / 64) * dys + t % 64] (rows ld apart: dyr = ld, dys = 64), x
	 * likewise with xr, xs. lanes,
	 * when not NULL, gets each row's 16 lane-wise sums of dy: lanes [r][v] = the sum of
	 * dy [r][t] over t = v, v + 16, ... < tl in that order, from +0 (the bias gradient's
	 * order, read while the row is in registers) */
	void (*sddmm)(float *dw, const int64_t *ptr, const int32_t *idx, const float *dy,
		      size_t dyr, size_t dys, const float *x, size_t xr, size_t xs, int tl, int r0,
		      int r1, float *lanes);
	/* dst [c][0..tl) = src [c * lds + 0..tl) for c < n: a token block packed, rows ENG_TB
	 * floats apart; tl a multiple of 16, at most ENG_TB */
	void (*pack)(float *dst, const float *src, size_t lds, int n, int tl);
	/* dst [c][r] = src [r][c] for r < rows, c < cols (leading dimensions ldd, lds) */
	void (*transpose)(float *dst, size_t ldd, const float *src, size_t lds, int rows,
			  int cols);
	/* y [t][r] = res [t][r] + (y [t][r] + bias [r]) for t < nt, r < nr (rows n apart): a
	 * token-major output block's bias and residual add (eng_res_bias_rows) */
	void (*res_bias)(float *y, const float *res, const float *bias, size_t n, int nt,
			 int nr);
	/* y [r][t] = res [r][t] + (y [r][t] + bias [r]) for r < nr, t < tl, rows ENG_TB
	 * apart: a blocked output's bias and residual add (eng_res_bias_blk) */
	void (*res_bias_blk)(float *y, const float *res, const float *bias, int nr, int tl);
	/* y [r][t] += bias [r] for r < nr, t < nt, rows ly apart: a token-minor output's
	 * bias (eng_bias_tm) */
	void (*bias_tm)(float *y, size_t ly, const float *bias, int nr, int nt);
	/* causal attention of one head: forward writes att and o, backward dq, dk, dv */
	void (*attn_fwd)(const eng_attn_head *h);
	void (*attn_bwd)(const eng_attn_head *h);
} eng_kern;

/* The kernels of the ISA in use (eng_isa). */
const eng_kern *eng_kern_cur(void);

extern const eng_kern eng_kern_portable;
extern const eng_kern eng_kern_avx2;
extern const eng_kern eng_kern_avx512;

/* The residual add and the bias on a token-major output block just transposed, still in
 * L1: plain adds in the order of the model's pass (bias_residual_pool), so the same bits on
 * every ISA; each ISA file compiles its own copy, vectorized for it. */
static inline void eng_res_bias_rows(float *restrict y, const float *restrict res,
				     const float *restrict bias, size_t n, int nt, int nr)
{
	for (int t = 0; t < nt; t++) {
		float *yr = y + (size_t)t * n;
		const float *rr = res + (size_t)t * n;
		for (int r = 0; r < nr; r++)
			yr[r] = rr[r] + (yr[r] + bias[r]);
	}
}

/* The same on a blocked output's row group (rows ENG_TB apart), and a token-minor
 * output's bias alone on its real tokens (its padding stays zero): the model's separate
 * passes' expressions, so the same bits. */
static inline void eng_res_bias_blk(float *restrict y, const float *restrict res,
				    const float *restrict bias, int nr, int tl)
{
	for (int r = 0; r < nr; r++) {
		float b = bias[r];
		float *restrict yr = y + (size_t)r * ENG_TB;
		const float *restrict rr = res + (size_t)r * ENG_TB;
		for (int t = 0; t < tl; t++)
			yr[t] = rr[t] + (yr[t] + b);
	}
}

static inline void eng_bias_tm(float *restrict y, size_t ly, const float *restrict bias, int nr,
			       int nt)
{
	for (int r = 0; r < nr; r++) {
		float b = bias[r];
		float *restrict yr = y + (size_t)r * ly;
		for (int t = 0; t < nt; t++)
			yr[t] += b;
	}
}

static inline float eng_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

#endif /* CS_ENGINE_ENG_IMPL_H */
