/*
 * resident.c - command streams of the resident tensors and vector programs (resident.h),
 * and the registry of the vector programs with their C definitions. Kernels on resident
 * regions are checked here; their stream is plan.c's (plan_exec_resident).
 */
#include "driver/resident.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numerics.h"
#include "driver/proto.h"
#include "driver/vec_timing.h"
#include "driver/wstream.h"

/* ---- the vector programs' C definitions (the firmware computes exactly these) ---------- */

/* fw/vec_ln_fwd.s: per token nm_ln_fwd_bits, and the scratch its last token leaves;
 * chains 4: fw/vec_ln_fwd_d.s (vsum4). */
static int ln_fwd_chains(uint16_t *a, uint32_t *b, const uint16_t *p, int chains)
{
	unsigned C = p[0], G = p[1], BE = p[2], S = p[3], T = p[4], AM = p[5], X = p[8], Y = p[9],
		 Z = p[10], R = p[11], N = p[12];
	struct nm_ln_scratch sc = { .s = b + S };
	for (unsigned t = 0; t < N; t++)
		nm_ln_fwd_chains_bits(a + Y + t * C, a + Z + t * C, a + R + t, &sc, b + X + t * C,
				      a + G, b + BE, C, p[6], p[7], chains);
	if (N) {
		memcpy(b + T, sc.t, 3 * sizeof sc.t[0]);
		a[AM] = sc.am[0];
	}
	return CS_OK;
}

static int model_ln_fwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	return ln_fwd_chains(a, b, p, 2);
}

static int model_ln_fwd4(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	return ln_fwd_chains(a, b, p, 4);
}

/* fw/vec_ln_bwd.s: zeroes its C zeros, then per token nm_ln_bwd_bits, which takes the
 * ones vector the firmware reads from A as exactly 1.0; chains 4: fw/vec_ln_bwd_d.s
 * (vdot4). */
static int ln_bwd_chains(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen,
			 int chains)
{
	unsigned C = p[0], G = p[1], ONES = p[2], S = p[3], T = p[4], AM = p[5], ZERO = p[7],
		 DY = p[8], Z = p[9], R = p[10], DX = p[11], DG = p[12], DB = p[13], N = p[14];
	for (unsigned j = 0; j < C; j++)
		if (a[ONES + j] != 0x3f80) {
			snprintf(err, errlen, "ln_bwd: A[%u] of the ones vector is 0x%04x, not 1.0",
				 ONES + j, a[ONES + j]);
			return CS_ERR_INVALID;
		}
	memset(b + ZERO, 0, C * sizeof *b);
	struct nm_ln_scratch sc = { .s = b + S };
	for (unsigned t = 0; t < N; t++)
		nm_ln_bwd_chains_bits(b + DX + t * C, b + DG, b + DB, &sc, b + DY + t * C,
				      a + Z + t * C, a[R + t], a + G, C, p[6], chains);
	if (N) {
		memcpy(b + T, sc.t, 2 * sizeof sc.t[0]);
		memcpy(a + AM, sc.am, 2 * sizeof sc.am[0]);
	}
	return CS_OK;
}

static int model_ln_bwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return ln_bwd_chains(a, b, p, err, errlen, 2);
}

static int model_ln_bwd4(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return ln_bwd_chains(a, b, p, err, errlen, 4);
}

/* fw/vec_gelu.s gelu_fwd: per token nm_gelu_fwd_bits; pre becomes GELU(pre) (fp32), the
 * scratch GELU'(pre) of the last token. */
static int model_gelu_fwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	unsigned W = p[0], N = p[1], TG = p[2], TD = p[3], S = p[4], IN = p[5], OUT = p[6],
		 D = p[7];
	for (unsigned t = 0; t < N; t++) {
		uint32_t *pre = b + IN + t * W;
		nm_gelu_fwd_bits(a + OUT + t * W, a + D + t * W, pre, W, b + TG, b + TD);
		for (unsigned j = 0; j < W; j++) {
			b[S + j] = nm_lut_bits(b + TD, pre[j]);
			pre[j] = nm_lut_bits(b + TG, pre[j]);
		}
	}
	return CS_OK;
}

/* fw/vec_gelu.s gelu_h: per token nm_gelu_fwd_bits of h only; pre becomes lut_gelu(pre). */
static int model_gelu_h(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	unsigned W = p[0], N = p[1], TG = p[2], IN = p[5], OUT = p[6];
	for (unsigned t = 0; t < N; t++) {
		uint32_t *pre = b + IN + t * W;
		nm_gelu_fwd_bits(a + OUT + t * W, NULL, pre, W, b + TG, NULL);
		for (unsigned j = 0; j < W; j++)
			pre[j] = nm_lut_bits(b + TG, pre[j]);
	}
	return CS_OK;
}

/* fw/vec_gelu.s gelu_bwd: zeroes W words, then per token nm_gelu_bwd_bits; dh becomes
 * the product before rounding. */
static int model_gelu_bwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	unsigned W = p[0], N = p[1], S = p[4], IN = p[5], OUT = p[6], D = p[7];
	memset(b + S, 0, W * sizeof *b);
	for (unsigned t = 0; t < N; t++) {
		uint32_t *dh = b + IN + t * W;
		const uint16_t *d = a + D + t * W;
		nm_gelu_bwd_bits(a + OUT + t * W, dh, d, W);
		for (unsigned j = 0; j < W; j++)
			dh[j] = nm_fmac_bits(d[j], nm_bf16_from_bits(dh[j]), b[S + j]);
	}
	return CS_OK;
}

/* fw/vec_cvt.s: the rows, in the firmware's order (cvt_bh may convert in place). */
static int model_cvt(uint16_t *a, uint32_t *b, const uint16_t *p, int bh)
{
	unsigned W = p[0], N = p[1], SRC = p[2], SS = p[3], DST = p[4], DS = p[5];
	uint16_t *h = bh ? (uint16_t *)(void *)b : a; /* Bh: element 2w the low half of w */
	for (unsigned t = 0; t < N; t++)
		for (unsigned j = 0; j < W; j++)
			h[DST + t * DS + j] = nm_bf16_from_bits(b[SRC + t * SS + j]);
	return CS_OK;
}

static int model_cvt_a(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	return model_cvt(a, b, p, 0);
}

static int model_cvt_bh(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	return model_cvt(a, b, p, 1);
}

/* bias_fwd (fwd = 1) / bias_bwd: per token nm_bias_add_bits, which takes the ones the
 * firmware multiplies by as exactly 1.0. */
static int model_bias(uint16_t *a, uint32_t *b, const uint16_t *p, int fwd, char *err,
		      size_t errlen)
{
	unsigned W = p[0], N = p[1], SRC = p[2], SS = p[3], DST = p[4], ONES = p[6];
	for (unsigned j = 0; j < W; j++)
		if (a[ONES + j] != 0x3f80) {
			snprintf(err, errlen, "%s: A[%u] of the ones vector is 0x%04x, not 1.0",
				 fwd ? "bias_fwd" : "bias_bwd", ONES + j, a[ONES + j]);
			return CS_ERR_INVALID;
		}
	for (unsigned t = 0; t < N; t++) {
		if (fwd)
			nm_bias_add_bits(b + SRC + t * SS, b + DST, W);
		else
			nm_bias_add_bits(b + DST, b + SRC + t * SS, W);
	}
	return CS_OK;
}

static int model_bias_fwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return model_bias(a, b, p, 1, err, errlen);
}

static int model_bias_bwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return model_bias(a, b, p, 0, err, errlen);
}

/* cvt_f: per token nm_fmac_row_bits against the rows at ONES and ZERO (1.0 and +0: the
 * widening, nm_widen_bits; gamma and beta: a layernorm's y rebuilt from z). */
static int model_cvt_f(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	unsigned W = p[0], N = p[1], SRC = p[2], SS = p[3], DST = p[4], ONES = p[6], ZERO = p[7];
	for (unsigned t = 0; t < N; t++)
		nm_fmac_row_bits(b + DST + t * SS, a + SRC + t * SS, b + ONES, b + ZERO, W);
	return CS_OK;
}

/* The programs that pass over all N*W elements at once count them in 16 bits. */
static int check_count(unsigned N, unsigned W, const char *what, char *err, size_t errlen)
{
	if ((uint64_t)N * W <= 0xffff)
		return CS_OK;
	snprintf(err, errlen, "%s: %u tokens of %u elements are past a 16-bit count", what, N, W);
	return CS_ERR_INVALID;
}

/* cvt_fbh: cvt_f with the rows W apart, then the N*W words packed into Bh at OUT. */
static int model_cvt_fbh(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	unsigned W = p[0], N = p[1], SRC = p[2], DST = p[4], ONES = p[6], ZERO = p[7], OUT = p[8];
	if (check_count(N, W, "cvt_fbh", err, errlen))
		return CS_ERR_INVALID;
	uint16_t *bh = (uint16_t *)(void *)b;
	for (unsigned t = 0; t < N; t++)
		nm_fmac_row_bits(b + DST + t * W, a + SRC + t * W, b + ONES, b + ZERO, W);
	for (unsigned i = 0; i < N * W; i++)
		bh[OUT + i] = nm_bf16_from_bits(b[DST + i]);
	return CS_OK;
}

/* fw/vec_cvt_bf.s takes 1.0 and +0 for the rows at ONES and ZERO without reading them:
 * they must hold them (vec_cvt.s's vmac takes bf16 of the ones). */
static int check_one_zero(const uint32_t *b, const uint16_t *p, const char *what, char *err,
			  size_t errlen)
{
	unsigned W = p[0], ONES = p[6], ZERO = p[7];
	for (unsigned j = 0; j < W; j++)
		if (nm_bf16_from_bits(b[ONES + j]) != 0x3f80 || b[ZERO + j] != 0) {
			snprintf(err, errlen, "%s: B[%u] of the ones row is 0x%08x and B[%u] of "
				 "the zeros row 0x%08x, not 1.0 (as bf16) and +0", what, ONES + j,
				 b[ONES + j], ZERO + j, b[ZERO + j]);
			return CS_ERR_INVALID;
		}
	return CS_OK;
}

/* fw/vec_cvt_bf.s's cvt_fbh: with SRC, OUT and N*W even the A words copied into Bh (cpa),
 * B[DST ..] untouched; otherwise widened by vmul, then model_cvt_fbh's bits. */
static int model_cvt_fbh_bf(uint16_t *a, uint32_t *b, const uint16_t *p, char *err,
			    size_t errlen)
{
	unsigned W = p[0], N = p[1], SRC = p[2], OUT = p[8];
	if (check_one_zero(b, p, "cvt_fbh", err, errlen) ||
	    check_count(N, W, "cvt_fbh", err, errlen))
		return CS_ERR_INVALID;
	if ((SRC | OUT | N * W) & 1)
		return model_cvt_fbh(a, b, p, err, errlen);
	uint16_t *bh = (uint16_t *)(void *)b;
	memcpy(bh + OUT, a + SRC, sizeof *a * N * W);
	return CS_OK;
}

static int check_ones(const uint16_t *a, unsigned ones, unsigned W, const char *what,
		      char *err, size_t errlen);

/* dy_abh (a = 1) / dy_bh: the rows' bias gradient (nm_bias_add_bits, tokens in order), then
 * the N*W words as bf16 into A at DST (dy_abh; dy_bh takes DST 0xffff) and packed into Bh at
 * OUT. */
static int model_dy(uint16_t *a, uint32_t *b, const uint16_t *p, int ta, char *err,
		    size_t errlen)
{
	unsigned W = p[0], N = p[1], SRC = p[2], DST = p[4], ONES = p[6], OUT = p[8], DB = p[9];
	const char *what = ta ? "dy_abh" : "dy_bh";
	if ((DST != 0xffff) != ta) {
		snprintf(err, errlen, "%s: block DST 0x%04x: the entry takes %s", what, DST,
			 ta ? "an A element" : "0xffff");
		return CS_ERR_INVALID;
	}
	if (check_count(N, W, what, err, errlen))
		return CS_ERR_INVALID;
	int rc = check_ones(a, ONES, W, what, err, errlen);
	if (rc)
		return rc;
	uint16_t *bh = (uint16_t *)(void *)b;
	for (unsigned t = 0; t < N; t++)
		nm_bias_add_bits(b + DB, b + SRC + t * W, W);
	for (unsigned i = 0; i < N * W; i++) {
		uint16_t v = nm_bf16_from_bits(b[SRC + i]);
		if (ta)
			a[DST + i] = v;
		bh[OUT + i] = v;
	}
	return CS_OK;
}

static int model_dy_abh(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return model_dy(a, b, p, 1, err, errlen);
}

static int model_dy_bh(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return model_dy(a, b, p, 0, err, errlen);
}

/* the W ones a program multiplies by (bias_fwd, bias_bwd, fw/vec_fc.s) */
static int check_ones(const uint16_t *a, unsigned ones, unsigned W, const char *what,
		      char *err, size_t errlen)
{
	for (unsigned j = 0; j < W; j++)
		if (a[ones + j] != 0x3f80) {
			snprintf(err, errlen, "%s: A[%u] of the ones vector is 0x%04x, not 1.0", what,
				 ones + j, a[ones + j]);
			return CS_ERR_INVALID;
		}
	return CS_OK;
}

/* fw/vec_fc.s fc_gelu_*: per token the bias (MODE 0, nm_bias_add_bits) and the stash, or
 * the stash widened (MODE 1, nm_fmac_row_bits), then nm_gelu_fwd_bits (GELU' unless
 * D = 0xffff); pre becomes lut_gelu(pre), the scratch the last token's GELU'. The entry
 * names the block's MODE, stash (MODE 0) and D (the estimate's steps): mode, st, d.
 * fw/vec_fc_bf.s (bf): the same A; pre stays (MODE 1: the rows are not written), the
 * scratch is not written. */
static int model_fc_gelu(uint16_t *a, uint32_t *b, const uint16_t *p, const char *what,
			 unsigned mode, int st, int d, int bf, char *err, size_t errlen)
{
	unsigned W = p[0], N = p[1], TG = p[2], TD = p[3], S = p[4], IN = p[5], OUT = p[6],
		 D = p[7], MODE = p[8], ONES = p[9], BV = p[10], ZERO = p[11], ST = p[12];
	int has_st = ST != 0xffff, has_d = D != 0xffff;
	if (MODE != mode || (!mode && has_st != st) || (mode && !has_st) || has_d != d) {
		snprintf(err, errlen, "%s: block MODE %u, ST 0x%04x, D 0x%04x: the entry takes MODE %u, "
			 "%s and %s", what, MODE, ST, D, mode, st ? "a stash" : "ST 0xffff",
			 d ? "a D" : "D 0xffff");
		return CS_ERR_INVALID;
	}
	if (check_count(N, W, what, err, errlen))
		return CS_ERR_INVALID;
	if (!mode) {
		int rc = check_ones(a, ONES, W, what, err, errlen);
		if (rc)
			return rc;
	}
	/* vec_fc_bf's vlut.a reads the stash as fmac(x, 1.0, +0), not reading the rows: they
	 * must hold them (vec_fc's vmac takes bf16 of the ones); it writes h before GELU', so
	 * h must not overlap the stash or D */
	for (unsigned j = 0; j < W && mode && bf; j++)
		if (nm_bf16_from_bits(b[BV + j]) != 0x3f80 || b[ZERO + j] != 0) {
			snprintf(err, errlen, "%s: B[%u] of the ones row is 0x%08x and B[%u] of the "
				 "zeros row 0x%08x, not 1.0 (as bf16) and +0", what, BV + j,
				 b[BV + j], ZERO + j, b[ZERO + j]);
			return CS_ERR_INVALID;
		}
	for (int k = 0; k < 2 && mode && bf; k++) {
		unsigned o = k ? D : ST;
		if ((k && !has_d) || !(OUT < o + N * W && o < OUT + N * W))
			continue;
		snprintf(err, errlen, "%s: OUT 0x%04x overlaps %s 0x%04x (%u elements)", what,
			 OUT, k ? "D" : "the stash ST", o, N * W);
		return CS_ERR_INVALID;
	}
	/* per token (the firmware's rows, then its passes over all N*W: the same bits and
	 * the same scratch, the last row's GELU'); vec_fc_bf's MODE 1 leaves the rows */
	for (unsigned t = 0; t < N; t++) {
		uint32_t *pre = b + IN + t * W, x;
		if (!mode) {
			nm_bias_add_bits(pre, b + BV, W);
			if (st)
				for (unsigned j = 0; j < W; j++)
					a[ST + t * W + j] = nm_bf16_from_bits(pre[j]);
		} else if (bf) {
			for (unsigned j = 0; j < W; j++) {
				unsigned i = t * W + j;
				nm_fmac_row_bits(&x, a + ST + i, b + BV + j, b + ZERO + j, 1);
				nm_gelu_fwd_bits(a + OUT + i, d ? a + D + i : NULL, &x, 1, b + TG,
						 d ? b + TD : NULL);
			}
			continue;
		} else {
			nm_fmac_row_bits(pre, a + ST + t * W, b + BV, b + ZERO, W);
		}
		nm_gelu_fwd_bits(a + OUT + t * W, d ? a + D + t * W : NULL, pre, W, b + TG,
				 d ? b + TD : NULL);
		for (unsigned j = 0; j < W && !bf; j++) {
			if (d)
				b[S + j] = nm_lut_bits(b + TD, pre[j]);
			pre[j] = nm_lut_bits(b + TG, pre[j]);
		}
	}
	return CS_OK;
}

static int model_fc_gelu_sh(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return model_fc_gelu(a, b, p, "fc_gelu_sh", 0, 1, 0, 0, err, errlen);
}

static int model_fc_gelu_sh_bf(uint16_t *a, uint32_t *b, const uint16_t *p, char *err,
			       size_t errlen)
{
	return model_fc_gelu(a, b, p, "fc_gelu_sh", 0, 1, 0, 1, err, errlen);
}

static int model_fc_gelu_hd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return model_fc_gelu(a, b, p, "fc_gelu_hd", 0, 0, 1, 0, err, errlen);
}

static int model_fc_gelu_hd_bf(uint16_t *a, uint32_t *b, const uint16_t *p, char *err,
			       size_t errlen)
{
	return model_fc_gelu(a, b, p, "fc_gelu_hd", 0, 0, 1, 1, err, errlen);
}

static int model_fc_gelu_h(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return model_fc_gelu(a, b, p, "fc_gelu_h", 0, 0, 0, 0, err, errlen);
}

static int model_fc_gelu_h_bf(uint16_t *a, uint32_t *b, const uint16_t *p, char *err,
			       size_t errlen)
{
	return model_fc_gelu(a, b, p, "fc_gelu_h", 0, 0, 0, 1, err, errlen);
}

static int model_fc_gelu_wd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	return model_fc_gelu(a, b, p, "fc_gelu_wd", 1, 1, 1, 0, err, errlen);
}

static int model_fc_gelu_wd_bf(uint16_t *a, uint32_t *b, const uint16_t *p, char *err,
			       size_t errlen)
{
	return model_fc_gelu(a, b, p, "fc_gelu_wd", 1, 1, 1, 1, err, errlen);
}

/* fw/vec_fc.s fc_gelu_bwd: zeroes W words, then per token nm_gelu_bwd_bits (dh becomes the
 * product before rounding) and nm_bias_add_bits of it into the bias gradient, then the
 * N*W products' bf16 packed into Bh (in place when ST = 2 IN: each word is read before it
 * is written). */
static int model_fc_gelu_bwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err,
			     size_t errlen)
{
	unsigned W = p[0], N = p[1], S = p[4], IN = p[5], OUT = p[6], D = p[7], ONES = p[9],
		 DB = p[10], ST = p[12];
	if ((uint64_t)N * W > 0xffff) {
		snprintf(err, errlen, "fc_gelu_bwd: %u tokens of %u elements are past a 16-bit "
			 "count", N, W);
		return CS_ERR_INVALID;
	}
	int rc = check_ones(a, ONES, W, "fc_gelu_bwd", err, errlen);
	if (rc)
		return rc;
	uint16_t *bh = (uint16_t *)(void *)b; /* Bh: element 2w the low half of w */
	memset(b + S, 0, W * sizeof *b);
	for (unsigned t = 0; t < N; t++) {
		uint32_t *dh = b + IN + t * W;
		const uint16_t *d = a + D + t * W;
		nm_gelu_bwd_bits(a + OUT + t * W, dh, d, W);
		for (unsigned j = 0; j < W; j++)
			dh[j] = nm_fmac_bits(d[j], nm_bf16_from_bits(dh[j]), b[S + j]);
		nm_bias_add_bits(b + DB, dh, W);
	}
	for (unsigned i = 0; i < N * W; i++)
		bh[ST + i] = nm_bf16_from_bits(b[IN + i]);
	return CS_OK;
}

/* fw/vec_fc_bf.s's fc_gelu_bwd: model_fc_gelu_bwd's bits; with S = ZERO it takes that row's
 * +0 without writing it, so the row must hold +0. */
static int model_fc_gelu_bwd_bf(uint16_t *a, uint32_t *b, const uint16_t *p, char *err,
				size_t errlen)
{
	unsigned W = p[0], S = p[4], ZERO = p[11];
	for (unsigned j = 0; S == ZERO && j < W; j++)
		if (b[ZERO + j]) {
			snprintf(err, errlen, "fc_gelu_bwd: B[%u] of the zeros row (S = ZERO) is "
				 "0x%08x, not +0", ZERO + j, b[ZERO + j]);
			return CS_ERR_INVALID;
		}
	return model_fc_gelu_bwd(a, b, p, err, errlen);
}

/* fw/vec_fc.s fc_cvt: N*W elements at once (the firmware's 16-bit count). */
static int model_fc_cvt(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	unsigned W = p[0], N = p[1], IN = p[5], OUT = p[6];
	if (check_count(N, W, "fc_cvt", err, errlen))
		return CS_ERR_INVALID;
	for (unsigned i = 0; i < N * W; i++)
		a[OUT + i] = nm_bf16_from_bits(b[IN + i]);
	return CS_OK;
}

/* The programs (their sources' .equ P_ names give the block). */
#define A_ CSD_MEM_A
#define B_ CSD_MEM_B
static const struct res_prog progs[] = {
	{ "vec_ln_fwd", "ln_fwd", 13, 0, 12,
	  { { 1, A_, RES_W, 0 }, { 2, B_, RES_W, 0 }, { 3, B_, RES_W, 0 }, { 4, B_, RES_K, 3 },
	    { 5, A_, RES_K, 1 }, { 8, B_, RES_NW, 0 }, { 9, A_, RES_NW, 0 },
	    { 10, A_, RES_NW, 0 }, { 11, A_, RES_N, 0 } }, 9, model_ln_fwd, 0, NULL },
	/* vec_ln_fwd on pe: fw/vec_ln_fwd_d.s, the sums by one vsum4 */
	{ "vec_ln_fwd", "ln_fwd", 13, 0, 12,
	  { { 1, A_, RES_W, 0 }, { 2, B_, RES_W, 0 }, { 3, B_, RES_W, 0 }, { 4, B_, RES_K, 3 },
	    { 5, A_, RES_K, 1 }, { 8, B_, RES_NW, 0 }, { 9, A_, RES_NW, 0 },
	    { 10, A_, RES_NW, 0 }, { 11, A_, RES_N, 0 } }, 9, model_ln_fwd4, 1, "vec_ln_fwd_d" },
	{ "vec_ln_bwd", "ln_bwd", 15, 0, 14,
	  { { 1, A_, RES_W, 0 }, { 2, A_, RES_W, 0 }, { 3, B_, RES_W, 0 }, { 4, B_, RES_K, 2 },
	    { 5, A_, RES_K, 2 }, { 7, B_, RES_W, 0 }, { 8, B_, RES_NW, 0 },
	    { 9, A_, RES_NW, 0 }, { 10, A_, RES_N, 0 }, { 11, B_, RES_NW, 0 },
	    { 12, B_, RES_W, 0 }, { 13, B_, RES_W, 0 } }, 12, model_ln_bwd, 0, NULL },
	/* vec_ln_bwd on pe: fw/vec_ln_bwd_d.s, the two sums by one vdot4 */
	{ "vec_ln_bwd", "ln_bwd", 15, 0, 14,
	  { { 1, A_, RES_W, 0 }, { 2, A_, RES_W, 0 }, { 3, B_, RES_W, 0 }, { 4, B_, RES_K, 2 },
	    { 5, A_, RES_K, 2 }, { 7, B_, RES_W, 0 }, { 8, B_, RES_NW, 0 },
	    { 9, A_, RES_NW, 0 }, { 10, A_, RES_N, 0 }, { 11, B_, RES_NW, 0 },
	    { 12, B_, RES_W, 0 }, { 13, B_, RES_W, 0 } }, 12, model_ln_bwd4, 1, "vec_ln_bwd_d" },
	{ "vec_gelu", "gelu_fwd", 8, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 3, B_, RES_K, 256 }, { 4, B_, RES_W, 0 },
	    { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 }, { 7, A_, RES_NW, 0 } }, 6,
	  model_gelu_fwd, 0, NULL },
	{ "vec_gelu", "gelu_h", 8, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 } }, 3, model_gelu_h, 0, NULL },
	{ "vec_gelu", "gelu_bwd", 8, 0, 1,
	  { { 4, B_, RES_W, 0 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 },
	    { 7, A_, RES_NW, 0 } }, 4, model_gelu_bwd, 0, NULL },
	{ "vec_cvt", "cvt_a", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, A_, RES_NS, 5 } }, 2, model_cvt_a, 0, NULL },
	{ "vec_cvt", "cvt_bh", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, CSD_MEM_BH, RES_NS, 5 } }, 2, model_cvt_bh, 0, NULL },
	{ "vec_cvt", "bias_fwd", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, B_, RES_W, 0 }, { 6, A_, RES_W, 0 } }, 3, model_bias_fwd, 0, NULL },
	{ "vec_cvt", "bias_bwd", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, B_, RES_W, 0 }, { 6, A_, RES_W, 0 } }, 3, model_bias_bwd, 0, NULL },
	{ "vec_cvt", "cvt_f", 8, 0, 1,
	  { { 2, A_, RES_NS, 3 }, { 4, B_, RES_NS, 3 }, { 6, B_, RES_W, 0 }, { 7, B_, RES_W, 0 } },
	  4, model_cvt_f, 0, NULL },
	{ "vec_cvt", "cvt_fbh", 9, 0, 1,
	  { { 2, A_, RES_NW, 0 }, { 4, B_, RES_NW, 0 }, { 6, B_, RES_W, 0 }, { 7, B_, RES_W, 0 },
	    { 8, CSD_MEM_BH, RES_NW, 0 } }, 5, model_cvt_fbh, 0, NULL },
	{ "vec_cvt", "dy_abh", 10, 0, 1,
	  { { 2, B_, RES_NW, 0 }, { 4, A_, RES_NW, 0 }, { 6, A_, RES_W, 0 },
	    { 8, CSD_MEM_BH, RES_NW, 0 }, { 9, B_, RES_W, 0 } }, 5, model_dy_abh, 0, NULL },
	{ "vec_cvt", "dy_bh", 10, 0, 1,
	  { { 2, B_, RES_NW, 0 }, { 6, A_, RES_W, 0 }, { 8, CSD_MEM_BH, RES_NW, 0 },
	    { 9, B_, RES_W, 0 } }, 4, model_dy_bh, 0, NULL },
	/* vec_cvt on pe: fw/vec_cvt_bf.s, cvt_fbh's packing by cpa (every entry, so that the
	 * calls share one overlay) */
	{ "vec_cvt", "cvt_a", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, A_, RES_NS, 5 } }, 2, model_cvt_a, 1, "vec_cvt_bf" },
	{ "vec_cvt", "cvt_bh", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, CSD_MEM_BH, RES_NS, 5 } }, 2, model_cvt_bh, 1,
	  "vec_cvt_bf" },
	{ "vec_cvt", "bias_fwd", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, B_, RES_W, 0 }, { 6, A_, RES_W, 0 } }, 3, model_bias_fwd, 1,
	  "vec_cvt_bf" },
	{ "vec_cvt", "bias_bwd", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, B_, RES_W, 0 }, { 6, A_, RES_W, 0 } }, 3, model_bias_bwd, 1,
	  "vec_cvt_bf" },
	{ "vec_cvt", "cvt_f", 8, 0, 1,
	  { { 2, A_, RES_NS, 3 }, { 4, B_, RES_NS, 3 }, { 6, B_, RES_W, 0 }, { 7, B_, RES_W, 0 } },
	  4, model_cvt_f, 1, "vec_cvt_bf" },
	{ "vec_cvt", "cvt_fbh", 9, 0, 1,
	  { { 2, A_, RES_NW, 0 }, { 4, B_, RES_NW, 0 }, { 6, B_, RES_W, 0 }, { 7, B_, RES_W, 0 },
	    { 8, CSD_MEM_BH, RES_NW, 0 } }, 5, model_cvt_fbh_bf, 1, "vec_cvt_bf" },
	{ "vec_cvt", "dy_abh", 10, 0, 1,
	  { { 2, B_, RES_NW, 0 }, { 4, A_, RES_NW, 0 }, { 6, A_, RES_W, 0 },
	    { 8, CSD_MEM_BH, RES_NW, 0 }, { 9, B_, RES_W, 0 } }, 5, model_dy_abh, 1, "vec_cvt_bf" },
	{ "vec_cvt", "dy_bh", 10, 0, 1,
	  { { 2, B_, RES_NW, 0 }, { 6, A_, RES_W, 0 }, { 8, CSD_MEM_BH, RES_NW, 0 },
	    { 9, B_, RES_W, 0 } }, 4, model_dy_bh, 1, "vec_cvt_bf" },
	/* vec_fc: block W N TG TD S IN OUT D MODE ONES B ZERO ST */
	{ "vec_fc", "fc_gelu_sh", 13, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 },
	    { 9, A_, RES_W, 0 }, { 10, B_, RES_W, 0 }, { 12, A_, RES_NW, 0 } }, 6,
	  model_fc_gelu_sh, 0, NULL },
	{ "vec_fc", "fc_gelu_hd", 13, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 3, B_, RES_K, 256 }, { 4, B_, RES_W, 0 },
	    { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 }, { 7, A_, RES_NW, 0 },
	    { 9, A_, RES_W, 0 }, { 10, B_, RES_W, 0 } }, 8, model_fc_gelu_hd, 0, NULL },
	{ "vec_fc", "fc_gelu_h", 13, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 },
	    { 9, A_, RES_W, 0 }, { 10, B_, RES_W, 0 } }, 5, model_fc_gelu_h, 0, NULL },
	{ "vec_fc", "fc_gelu_wd", 13, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 3, B_, RES_K, 256 }, { 4, B_, RES_W, 0 },
	    { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 }, { 7, A_, RES_NW, 0 },
	    { 10, B_, RES_W, 0 }, { 11, B_, RES_W, 0 }, { 12, A_, RES_NW, 0 } }, 9,
	  model_fc_gelu_wd, 0, NULL },
	{ "vec_fc", "fc_gelu_bwd", 13, 0, 1,
	  { { 4, B_, RES_W, 0 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 },
	    { 7, A_, RES_NW, 0 }, { 9, A_, RES_W, 0 }, { 10, B_, RES_W, 0 },
	    { 12, CSD_MEM_BH, RES_NW, 0 } }, 7, model_fc_gelu_bwd, 0, NULL },
	{ "vec_fc", "fc_cvt", 13, 0, 1,
	  { { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 } }, 2, model_fc_cvt, 0, NULL },
	/* vec_fc on pe: fw/vec_fc_bf.s, GELU by vlut.bf */
	{ "vec_fc", "fc_gelu_sh", 13, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 },
	    { 9, A_, RES_W, 0 }, { 10, B_, RES_W, 0 }, { 12, A_, RES_NW, 0 } }, 6,
	  model_fc_gelu_sh_bf, 1, "vec_fc_bf" },
	{ "vec_fc", "fc_gelu_hd", 13, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 3, B_, RES_K, 256 }, { 4, B_, RES_W, 0 },
	    { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 }, { 7, A_, RES_NW, 0 },
	    { 9, A_, RES_W, 0 }, { 10, B_, RES_W, 0 } }, 8, model_fc_gelu_hd_bf, 1, "vec_fc_bf" },
	{ "vec_fc", "fc_gelu_h", 13, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 },
	    { 9, A_, RES_W, 0 }, { 10, B_, RES_W, 0 } }, 5, model_fc_gelu_h_bf, 1, "vec_fc_bf" },
	{ "vec_fc", "fc_gelu_wd", 13, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 3, B_, RES_K, 256 }, { 4, B_, RES_W, 0 },
	    { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 }, { 7, A_, RES_NW, 0 },
	    { 10, B_, RES_W, 0 }, { 11, B_, RES_W, 0 }, { 12, A_, RES_NW, 0 } }, 9,
	  model_fc_gelu_wd_bf, 1, "vec_fc_bf" },
	{ "vec_fc", "fc_gelu_bwd", 13, 0, 1,
	  { { 4, B_, RES_W, 0 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 },
	    { 7, A_, RES_NW, 0 }, { 9, A_, RES_W, 0 }, { 10, B_, RES_W, 0 },
	    { 12, CSD_MEM_BH, RES_NW, 0 } }, 7, model_fc_gelu_bwd_bf, 1, "vec_fc_bf" },
	{ "vec_fc", "fc_cvt", 13, 0, 1,
	  { { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 } }, 2, model_fc_cvt, 1, "vec_fc_bf" },
};
#undef A_
#undef B_

const struct res_prog *res_prog_find(const char *image, const char *entry, int full)
{
	const struct res_prog *any = NULL;
	for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
		if (!strcmp(progs[i].image, image) && !strcmp(progs[i].entry, entry)) {
			if (progs[i].pe_only == full)
				return &progs[i];
			if (!progs[i].pe_only)
				any = &progs[i];
		}
	return any;
}

int res_prog_check(const struct res_prog *pr, const struct plan_geom *g, uint32_t block,
		   const uint16_t *params, char *err, size_t errlen)
{
	uint64_t W = params[pr->p_width], N = params[pr->p_tokens];
	if (!W) {
		snprintf(err, errlen, "%s: width 0 (block word %d)", pr->entry, pr->p_width);
		return CS_ERR_INVALID;
	}
	for (int i = 0; i < pr->n_use; i++) {
		const struct res_use *u = &pr->use[i];
		uint64_t n = u->kind == RES_W ? W : u->kind == RES_NW ? N * W
					 : u->kind == RES_N ? N
					 : u->kind == RES_NS ? (N ? (N - 1) * params[u->k] + W : 0)
							     : u->k;
		uint64_t size = res_mem_size(g, u->mem);
		if (params[u->param] + n > size) {
			snprintf(err, errlen,
				 "%s: block word %u: %s[%u .. %llu) is past the end of SRAM %s (%llu)",
				 pr->entry, u->param, res_mem_name(u->mem), params[u->param],
				 (unsigned long long)(params[u->param] + n), res_mem_name(u->mem),
				 (unsigned long long)size);
			return CS_ERR_RANGE;
		}
	}
	if (block + (uint32_t)pr->n_params > g->b_words || block > 0xffff) {
		snprintf(err, errlen, "%s: parameter block B[%u .. %u) is past the end of SRAM B (%u)",
			 pr->entry, block, block + pr->n_params, g->b_words);
		return CS_ERR_RANGE;
	}
	return CS_OK;
}

/* ---- regions ---------------------------------------------------------------------------- */

uint64_t res_mem_size(const struct plan_geom *g, int mem)
{
	return mem == CSD_MEM_A ? g->a_words : mem == CSD_MEM_BH ? 2ull * g->b_words : g->b_words;
}

const char *res_mem_name(int mem)
{
	return mem == CSD_MEM_A ? "A" : mem == CSD_MEM_BH ? "Bh" : "B";
}

int res_tp(const struct plan_geom *g, int T)
{
	int P = g->rows * g->cols;
	return (T + P - 1) / P;
}

int res_check_region(const struct plan_geom *g, const char *what, const csd_region *r, int T,
		     int write, char *err, size_t errlen)
{
	if (T <= 0 || (r->mem != CSD_MEM_A && r->mem != CSD_MEM_B && r->mem != CSD_MEM_BH) ||
	    !r->width) {
		snprintf(err, errlen, "%s: bad region (mem %d, width %u) or T=%d", what, r->mem,
			 r->width, T);
		return CS_ERR_INVALID;
	}
	uint64_t tp = (uint64_t)res_tp(g, T), size = res_mem_size(g, r->mem);
	if (tp > 1 && r->stride < r->width) {
		snprintf(err, errlen, "%s: stride %u is less than the width %u", what, r->stride,
			 r->width);
		return CS_ERR_INVALID;
	}
	uint64_t end = r->base + (tp - 1) * r->stride + r->width;
	if (end > size) {
		snprintf(err, errlen,
			 "%s: %llu tokens a PE at %s[%u], stride %u, width %u end at %llu, past the "
			 "end of SRAM %s (%llu)",
			 what, (unsigned long long)tp, res_mem_name(r->mem), r->base,
			 r->stride, r->width, (unsigned long long)end, res_mem_name(r->mem),
			 (unsigned long long)size);
		return CS_ERR_RANGE;
	}
	int contiguous = r->stride == r->width || tp == 1;
	if (write && r->mem != CSD_MEM_B &&
	    ((r->base & 1) || (contiguous ? (tp * r->width) & 1 : (r->stride | r->width) & 1))) {
		snprintf(err, errlen,
			 "%s: a write to %s covers whole words: base %u, stride %u and width %u "
			 "(tokens %llu a PE) must be even",
			 what, res_mem_name(r->mem), r->base, r->stride, r->width, (unsigned long long)tp);
		return CS_ERR_INVALID;
	}
	return CS_OK;
}

/* ---- kernels on regions ----------------------------------------------------------------- */

int res_kernel_plan(const struct plan_geom *g, const struct res_op *op, struct plan *pl,
		    struct plan_regions *rg, char *err, size_t errlen)
{
	static const char *const kname[] = { "forward_region", "backward_region", "wgrad_region" };
	const char *what = kname[op->kernel];
	const csd_sparse *w = op->w;
	const csd_region *in = &op->in, *out = &op->r;
	int wg = op->kernel == PLAN_WGRAD, bwd = op->kernel == PLAN_BWD, rc;
	uint32_t din = (uint32_t)(bwd ? w->n_out : w->n_in);
	uint32_t dout = (uint32_t)(bwd ? w->n_in : w->n_out);
	int want = wg ? CSD_MEM_BH : CSD_MEM_B;
	if (in->mem != CSD_MEM_A || out->mem != want) {
		snprintf(err, errlen, "%s: the input must be an A region and the %s a %s region "
			 "(got %s and %s)", what, wg ? "dy" : "output", res_mem_name(want),
			 res_mem_name(in->mem), res_mem_name(out->mem));
		return CS_ERR_INVALID;
	}
	if (in->width != din || out->width != dout) {
		snprintf(err, errlen, "%s: region widths %u (input) and %u (%s) do not match the "
			 "layer's %u and %u", what, in->width, out->width, wg ? "dy" : "output", din,
			 dout);
		return CS_ERR_INVALID;
	}
	if ((rc = res_check_region(g, what, in, op->T, 0, err, errlen)) ||
	    (rc = res_check_region(g, what, out, op->T, 0, err, errlen)))
		return rc;
	int tp = res_tp(g, op->T);
	/* r2 .. r5 are 16 bits, and so is every address the engine forms */
	uint64_t ospan = out->base + (uint64_t)(tp - 1) * out->stride + out->width;
	if (tp > 65535 || (tp > 1 && (in->stride > 0xffff || out->stride > 0xffff)) ||
	    ospan > 0x10000) {
		snprintf(err, errlen, "%s: %d tokens a PE, strides %u and %u, %s end %llu: past the "
			 "16-bit registers", what, tp, in->stride, out->stride,
			 res_mem_name(out->mem), (unsigned long long)ospan);
		return CS_ERR_RANGE;
	}
	*rg = (struct plan_regions){ .abase = in->base, .astride = tp > 1 ? in->stride : din,
				     .bbase = out->base, .bstride = tp > 1 ? out->stride : dout,
				     .tp = tp, .accumulate = op->accumulate, .pb = op->scratch };
	if (!wg && !op->accumulate) {
		/* START fills r5 * r4 words from r2 (a 16-bit product) */
		uint64_t fill = (uint64_t)tp * rg->bstride;
		if (fill > 0xffff || out->base + fill > g->b_words) {
			snprintf(err, errlen, "%s: the START fill of B[%u .. %llu) (%d tokens x stride "
				 "%u) is past the end of SRAM B (%u) or 65535 words", what,
				 out->base, (unsigned long long)(out->base + fill), tp, rg->bstride,
				 g->b_words);
			return CS_ERR_RANGE;
		}
	}
	if ((rc = plan_make_resident(pl, g, op->kernel, op->T, w->n_out, w->n_in, rg, err,
				     errlen))) {
		char e2[256];
		snprintf(e2, sizeof e2, "%s", err);
		snprintf(err, errlen, "%s: %s", what, e2);
		return rc;
	}
	if (wg) {
		/* the partial sums: batch_cap B words, not over the dY words the dots read */
		uint64_t s0 = op->scratch, s1 = s0 + pl->batch_cap;
		uint64_t d0 = out->base / 2, d1 = (ospan + 1) / 2;
		if (s1 > g->b_words || s0 > 0xffff) {
			snprintf(err, errlen, "%s: partial sums B[%llu .. %llu) past the end of SRAM B "
				 "(%u)", what, (unsigned long long)s0, (unsigned long long)s1,
				 g->b_words);
			return CS_ERR_RANGE;
		}
		if (s0 < d1 && d0 < s1) {
			snprintf(err, errlen, "%s: partial sums B[%llu .. %llu) overlap dy's words "
				 "B[%llu .. %llu)", what, (unsigned long long)s0,
				 (unsigned long long)s1, (unsigned long long)d0,
				 (unsigned long long)d1);
			return CS_ERR_INVALID;
		}
	}
	return CS_OK;
}

/* ---- streams ---------------------------------------------------------------------------- */

/* nrows rows of src [T, width] from token `first` as the words of memory mem (zeros past
 * T). Returns the words. */
static size_t pack_rows(uint32_t *dst, const csd_region *r, const void *src, int T, int first,
			int nrows)
{
	if (r->mem != CSD_MEM_B)
		return ws_pack_bf16_rows(dst, src, T, (int)r->width, 0, (int)r->width, first, nrows);
	size_t n = (size_t)nrows * r->width;
	memset(dst, 0, n * sizeof *dst);
	for (int u = 0; u < nrows && first + u < T; u++)
		memcpy(dst + (size_t)u * r->width, (const uint32_t *)src + (size_t)(first + u) * r->width,
		       r->width * sizeof *dst);
	return n;
}

/* Rows of every PE: one WRITE a PE (contiguous) or a row. */
static void write_tokens(struct wstream *ws, const struct plan_geom *g, const struct res_op *op,
			 uint32_t *tmp)
{
	const csd_region *r = &op->r;
	int P = g->rows * g->cols, tp = res_tp(g, op->T), a = r->mem != CSD_MEM_B;
	int rows = r->stride == r->width || tp == 1 ? tp : 1;
	unsigned target = r->mem == CSD_MEM_A ? PROTO_T_A : PROTO_T_B;
	for (int q = 0; q < P; q++)
		for (int u = 0; u < tp; u += rows) {
			uint32_t addr = r->base + (uint32_t)u * r->stride;
			size_t n = ((size_t)rows * r->width + (size_t)a) >> a;
			if (ws->buf)
				pack_rows(tmp, r, op->src, op->T, q * tp + u, rows);
			ws_write(ws, target, (unsigned)q, a ? addr / 2 : addr, tmp, n);
		}
}

/*
 * A token write a kernel carries (plan_wside): the words of write_tokens' WRITEs one after
 * the other (PE 0's spans, then PE 1's, ...), issued from any word on as WRITEs of parts of
 * spans, the same words at the same addresses.
 */
struct twrite {
	const struct plan_geom *g;
	const struct res_op *op;
	int P, tp, rows, nspan, a;
	uint64_t n;    /* words a PE */
	uint64_t span; /* words a span */
	uint32_t *tmp; /* the packed span `have` (PE q, span s: q * nspan + s); NULL counting */
	int64_t have;
};

static int twrite_init(struct twrite *t, const struct plan_geom *g, const struct res_op *op,
		       int real)
{
	const csd_region *r = &op->r;
	memset(t, 0, sizeof *t);
	t->g = g;
	t->op = op;
	t->P = g->rows * g->cols;
	t->tp = res_tp(g, op->T);
	t->a = r->mem != CSD_MEM_B;
	t->rows = r->stride == r->width || t->tp == 1 ? t->tp : 1;
	t->nspan = t->tp / t->rows;
	t->span = ((uint64_t)t->rows * r->width + (uint64_t)t->a) >> t->a;
	t->n = t->span * (uint64_t)t->nspan;
	t->have = -1;
	if (real && !(t->tmp = malloc(((size_t)t->rows * r->width + 2) * sizeof *t->tmp)))
		return CS_ERR_NO_MEM;
	return CS_OK;
}

static uint64_t twrite_issue(void *ctx, struct wstream *ws, uint64_t lo, uint64_t budget,
			     uint64_t *hi)
{
	struct twrite *t = ctx;
	const csd_region *r = &t->op->r;
	unsigned target = r->mem == CSD_MEM_A ? PROTO_T_A : PROTO_T_B;
	uint64_t c = 0, end = (uint64_t)t->P * t->n;
	while (lo < end && budget - c >= 3) {
		uint64_t q = lo / t->n, s = (lo % t->n) / t->span, off = lo % t->span;
		uint64_t m = t->span - off;
		if (m + 2 > budget - c)
			m = budget - c - 2;
		int64_t id = (int64_t)(q * (uint64_t)t->nspan + s);
		if (t->tmp && t->have != id) {
			pack_rows(t->tmp, r, t->op->src, t->op->T, (int)q * t->tp + (int)s * t->rows,
				  t->rows);
			t->have = id;
		}
		uint32_t addr = r->base + (uint32_t)s * (uint32_t)t->rows * r->stride;
		ws_put(ws, proto_hdr_write(target, (unsigned)q, (unsigned)m));
		ws_put(ws, (t->a ? addr / 2 : addr) + (uint32_t)off);
		if (t->tmp)
			for (uint64_t k = 0; k < m; k++)
				ws_put(ws, t->tmp[off + k]);
		else
			ws->st->words_out += m;
		ws->st->act_words_out += m + 2;
		c += m + 2;
		lo += m;
	}
	*hi = lo;
	return c;
}

/*
 * A token read: one READ of every PE a PE-span (contiguous) or a row. Its words a PE, in
 * read order, are the spans' words one after the other; a READ a kernel carries
 * (plan_side) issues them in chunks [lo, hi), each span's part of a chunk one READ. The
 * answers go to img [P][n] (real link), then the real tokens to dst.
 */
struct tread {
	const struct plan_geom *g;
	const struct res_op *op;
	int P, tp, rows, nspan, a;
	uint64_t n;    /* words a PE */
	uint32_t *img; /* [P][n]; NULL when counting */
};

/* Span s (rows u = s * rows ..): its first element and word, its words. */
static void tread_span(const struct tread *t, int s, uint32_t *e0, uint32_t *w0, uint32_t *n)
{
	const csd_region *r = &t->op->r;
	uint32_t a0 = r->base + (uint32_t)(s * t->rows) * r->stride;
	uint32_t a1 = a0 + (uint32_t)t->rows * r->width;
	*e0 = a0;
	*w0 = t->a ? a0 / 2 : a0;
	*n = t->a ? (a1 + 1) / 2 - *w0 : a1 - a0;
}

static int tread_init(struct tread *t, const struct plan_geom *g, const struct res_op *op,
		      int real)
{
	const csd_region *r = &op->r;
	memset(t, 0, sizeof *t);
	t->g = g;
	t->op = op;
	t->P = g->rows * g->cols;
	t->tp = res_tp(g, op->T);
	t->a = r->mem != CSD_MEM_B;
	t->rows = r->stride == r->width || t->tp == 1 ? t->tp : 1;
	t->nspan = t->tp / t->rows;
	for (int s = 0; s < t->nspan; s++) {
		uint32_t e0, w0, n;
		tread_span(t, s, &e0, &w0, &n);
		t->n += n;
	}
	if (real && !(t->img = malloc((size_t)t->P * t->n * sizeof *t->img + 1)))
		return CS_ERR_NO_MEM;
	return CS_OK;
}

/* Visit the READs of words [lo, hi): issue them (recv 0) or read their answers (recv 1). */
static int tread_walk(struct tread *t, struct wstream *ws, uint64_t lo, uint64_t hi, int recv,
		      uint64_t *cycles, char *err, size_t errlen)
{
	const csd_region *r = &t->op->r;
	uint64_t at = 0;
	int rc;
	for (int s = 0; s < t->nspan && at < hi; s++) {
		uint32_t e0, w0, n;
		tread_span(t, s, &e0, &w0, &n);
		uint64_t b0 = lo > at ? lo : at, b1 = hi < at + n ? hi : at + n;
		if (b0 < b1) {
			uint32_t m = (uint32_t)(b1 - b0), off = (uint32_t)(b0 - at);
			if (!recv) {
				ws_put(ws, proto_hdr_read(r->mem == CSD_MEM_A ? PROTO_T_A : PROTO_T_B,
							  PROTO_PE_ALL, m));
				ws_put(ws, w0 + off);
				ws->st->act_words_in += (uint64_t)t->P * (1 + m);
				*cycles += ws_read_cycles(t->P, m);
			} else {
				for (int q = 0; q < t->P; q++)
					if ((rc = ws_recv(ws, t->img ? t->img + (size_t)q * t->n + b0 : NULL,
							  m, PROTO_READ, m, err, errlen)))
						return rc;
			}
		}
		at += n;
	}
	return CS_OK;
}

static uint64_t tread_issue(void *ctx, struct wstream *ws, uint64_t lo, uint64_t hi)
{
	uint64_t c = 0;
	tread_walk(ctx, ws, lo, hi, 0, &c, NULL, 0);
	return c;
}

static int tread_recv(void *ctx, struct wstream *ws, uint64_t lo, uint64_t hi, char *err,
		      size_t errlen)
{
	return tread_walk(ctx, ws, lo, hi, 1, NULL, err, errlen);
}

/* The real tokens from img to dst. */
static void tread_finish(struct tread *t)
{
	const csd_region *r = &t->op->r;
	if (!t->img)
		return;
	for (int q = 0; q < t->P; q++) {
		const uint32_t *w = t->img + (size_t)q * t->n;
		for (int s = 0; s < t->nspan; s++) {
			uint32_t e0, w0, n;
			tread_span(t, s, &e0, &w0, &n);
			for (int v = 0; v < t->rows; v++) {
				int tok = q * t->tp + s * t->rows + v;
				if (tok >= t->op->T)
					break;
				if (t->a)
					memcpy((uint16_t *)t->op->dst + (size_t)tok * r->width,
					       (const uint16_t *)(const void *)w + (e0 & 1) +
						       (size_t)v * r->width,
					       r->width * 2);
				else
					memcpy((uint32_t *)t->op->dst + (size_t)tok * r->width,
					       w + (size_t)v * r->width, r->width * 4);
			}
			w += n;
		}
	}
}

/* A READ that nothing overlaps: its header and address take the host port 2 cycles, the
 * engine its first beat a cycle later (measured on pe, 1x1 .. 4x4) */
#define RES_READ_ISSUE 3

/* A read on its own: every READ, then the answers. */
static int read_tokens(struct wstream *ws, const struct plan_geom *g, const struct res_op *op,
		       char *err, size_t errlen)
{
	struct tread t;
	uint64_t c = 0;
	int rc = tread_init(&t, g, op, ws->buf != NULL);
	if (rc) {
		snprintf(err, errlen, "read_tokens: out of memory");
		return rc;
	}
	/* one READ at a time: each answer before the next READ (the same words and cycles) */
	for (int s = 0, at = 0; s < t.nspan && !rc; s++) {
		uint32_t e0, w0, n;
		tread_span(&t, s, &e0, &w0, &n);
		tread_walk(&t, ws, (uint64_t)at, (uint64_t)at + n, 0, &c, NULL, 0);
		c += RES_READ_ISSUE;
		rc = tread_walk(&t, ws, (uint64_t)at, (uint64_t)at + n, 1, NULL, err, errlen);
		at += (int)n;
	}
	ws->st->act_cycles += c;
	ws->st->cycles += c;
	if (!rc)
		tread_finish(&t);
	free(t.img);
	return rc;
}

/* The words [lo, hi) of B a region covers (Bh: the words holding its elements). */
static void b_words(const csd_region *r, int tp, uint64_t *lo, uint64_t *hi)
{
	uint64_t e0 = r->base, e1 = r->base + (uint64_t)(tp - 1) * r->stride + r->width;
	if (r->mem == CSD_MEM_BH) {
		e0 /= 2;
		e1 = (e1 + 1) / 2;
	}
	*lo = e0;
	*hi = e1;
}

/* The words [lo, hi) of A a region covers (its elements' words). */
static void region_a_words(const csd_region *r, int tp, uint64_t *lo, uint64_t *hi)
{
	*lo = r->base / 2;
	*hi = (r->base + (uint64_t)(tp - 1) * r->stride + r->width + 1) / 2;
}

/* Kernel k's words of B: its output or dY and the START fill's gaps. */
static void k_b_words(const struct res_op *k, int tp, uint64_t *klo, uint64_t *khi)
{
	b_words(&k->r, tp, klo, khi);
	if (k->kernel != PLAN_WGRAD && !k->accumulate && tp > 1 &&
	    k->r.base + (uint64_t)tp * k->r.stride > *khi)
		*khi = k->r.base + (uint64_t)tp * k->r.stride; /* START fills the gaps too */
}

/* Whether two A regions of one even stride, each row's elements within a stride, share no
 * word: their rows or their columns' words apart (a write of some columns of the rows a
 * kernel reads other columns of: heads of the attention output). */
static int a_strided_apart(const csd_region *x, int xtp, const csd_region *y, int ytp)
{
	uint32_t s = x->stride;
	if (s == 0 || (s & 1) || y->stride != s || (xtp > 1) != (ytp > 1) || xtp <= 1)
		return 0;
	/* rows from the lower base o: element o + row s + column */
	uint64_t o = x->base < y->base ? x->base : y->base;
	uint64_t xc = (x->base - o) % s, yc = (y->base - o) % s;
	if (xc + x->width > s || yc + y->width > s)
		return 0;
	uint64_t xr = (x->base - o) / s, yr = (y->base - o) / s;
	if (xr + (uint64_t)xtp <= yr || yr + (uint64_t)ytp <= xr)
		return 1;
	/* a row's words: (o + row s + column) / 2, s even */
	xc += o & 1;
	yc += o & 1;
	uint64_t x0 = xc / 2, x1 = (xc + x->width + 1) / 2, y0 = yc / 2, y1 = (yc + y->width + 1) / 2;
	return x1 <= y0 || y1 <= x0;
}

int res_side_conflict(const struct plan_geom *g, const struct res_op *k, const struct res_op *wr,
		      char *err, size_t errlen)
{
	static const char *const kname[] = { "forward", "backward", "wgrad" };
	int tp = res_tp(g, k->T), wtp = res_tp(g, wr->T), n = 1;
	uint64_t lo, hi, klo[2], khi[2];
	const char *what[2] = { "its input", "its partial sums" };
	if (wr->r.mem == CSD_MEM_A) {
		region_a_words(&wr->r, wtp, &lo, &hi);
		region_a_words(&k->in, tp, &klo[0], &khi[0]);
	} else {
		b_words(&wr->r, wtp, &lo, &hi);
		k_b_words(k, tp, &klo[0], &khi[0]);
		what[0] = k->kernel == PLAN_WGRAD ? "its dy" : "its output";
		if (k->kernel == PLAN_WGRAD) {
			klo[1] = k->scratch;
			khi[1] = k->scratch + (g->b_words / 2 < 256 ? g->b_words / 2 : 256);
			n = 2;
		}
	}
	if (wr->r.mem == CSD_MEM_A && a_strided_apart(&wr->r, wtp, &k->in, tp))
		return CS_OK;
	for (int i = 0; i < n; i++)
		if (lo < khi[i] && klo[i] < hi) {
			snprintf(err, errlen,
				 "the write left by write_tokens_next (%s words [%llu, %llu)) overlaps "
				 "what the %s kernel reads or writes (%s: words [%llu, %llu))",
				 res_mem_name(wr->r.mem), (unsigned long long)lo,
				 (unsigned long long)hi, kname[k->kernel], what[i],
				 (unsigned long long)klo[i], (unsigned long long)khi[i]);
			return CS_ERR_INVALID;
		}
	return CS_OK;
}

int res_side_fits(const struct plan_geom *g, const struct res_op *k, const struct res_op *rd)
{
	if (k->kind != RES_KERNEL)
		return 0;
	if (rd->kind == RES_WRITE) /* res_side_conflict checked it */
		return g->a_wport && rd->r.mem == CSD_MEM_A;
	if (rd->kind != RES_READ || rd->r.mem == CSD_MEM_A)
		return 0;
	uint64_t half = g->b_words / 2, lo, hi, klo, khi;
	b_words(&rd->r, res_tp(g, rd->T), &lo, &hi);
	if (hi <= lo || lo / half != (hi - 1) / half)
		return 0;
	uint64_t bank = lo / half, b0 = bank * half, b1 = b0 + half;
	int tp = res_tp(g, k->T);
	k_b_words(k, tp, &klo, &khi);
	if (klo < b1 && b0 < khi)
		return 0;
	if (k->kernel == PLAN_WGRAD) {
		uint64_t cap = g->b_words / 2 < 256 ? g->b_words / 2 : 256;
		if (k->scratch < b1 && b0 < k->scratch + cap)
			return 0;
	}
	return 1;
}

#define TID_CTRL_BCAST (16 + PROTO_C_BCAST)
/* the streaming cycles of a program call beyond its task, its last writes and the mesh's
 * span (Rows + Cols): the control wavelet's pick and the SYNC seeing the mesh idle
 * (measured on the Verilated pe meshes 1x1 .. 4x4: tests/driver/test_estimate.c) */
#define RES_PROG_FIXED 2

/* A program call: overlay, task entry, r0, block, SYNC, the control wavelet, SYNC. */
static int run_program(struct wstream *ws, const struct plan_geom *g, const struct res_op *op,
		       struct vt_lut *lut, char *err, size_t errlen)
{
	const struct res_prog *pr = op->prog;
	uint64_t *pw = &ws->st->prog_words_out;
	uint32_t w[CSD_FW_IMEM];
	int P = g->rows * g->cols, rc;
	if (op->ovl) {
		for (int i = 0; i < op->ovl->n_instr; i++)
			w[i] = op->ovl->imem[i];
		ws_write_to(ws, pw, PROTO_T_IMEM, PROTO_PE_ALL, (unsigned)op->base, w,
			    (size_t)op->ovl->n_instr);
	}
	w[0] = 1u << 9 | (uint32_t)(op->pc & 0xff); /* valid, not blocked */
	ws_write_to(ws, pw, PROTO_T_TASK, PROTO_PE_ALL, TID_CTRL_BCAST, w, 1);
	w[0] = 0; /* the programs' zero register */
	ws_write_to(ws, pw, PROTO_T_REG, PROTO_PE_ALL, 0, w, 1);
	for (int i = 0; i < pr->n_params; i++)
		w[i] = op->params[i];
	ws_write_to(ws, pw, PROTO_T_B, PROTO_PE_ALL, op->block, w, (size_t)pr->n_params);
	/* the config chain and the fabric are not ordered: the writes land first */
	if ((rc = ws_sync(ws, P, pr->entry, err, errlen)))
		return rc;
	ws_put(ws, proto_hdr_inject(PROTO_C_BCAST, 1, 1));
	ws_put(ws, op->block);
	*pw += 2;
	if (ws->buf) /* a device: it counts its own cycles */
		return ws_sync(ws, P, pr->entry, err, errlen);
	/* the task's cycles on pe (every PE runs the same addresses), its last writes, and the
	 * wavelet's way to the far corner and the mesh's idle back */
	struct vt_task vt = { op->img->imem, op->base, op->img->n_instr, op->pc, op->block,
			      op->block, op->params, pr->n_params, g->a_words, g->b_words,
			      { { 0, 0 }, { 0, 0 }, 0 } };
	if (lut)
		vt.lut = *lut;
	struct vt_result vr;
	char e2[160];
	if ((rc = vt_run(&vt, &vr, e2, sizeof e2))) {
		snprintf(err, errlen, "%s: %s", pr->entry, e2);
		return rc;
	}
	if (lut)
		*lut = vr.lut;
	uint64_t c = vr.cycles + vr.drain + (uint64_t)(g->rows + g->cols) + RES_PROG_FIXED;
	ws->st->stream_cycles += c;
	/* the SYNC answers a cycle later; its own P + 4 (ws_sync's) overlap the task */
	c += 1;
	ws->st->cycles += c > (uint64_t)P + 4 ? c - ((uint64_t)P + 4) : 0;
	ws->st->mac_busy += (uint64_t)P * vr.macs;
	return ws_sync(ws, P, pr->entry, err, errlen);
}

/* The B words op writes (its parameter block, rows, kernel outputs and partial sums; a
 * vector program's own writes: vt_run), against the lookup RAM's table. */
static void lut_op_writes(const struct plan_geom *g, const struct res_op *op, struct vt_lut *lut)
{
	uint64_t lo = 0, hi = 0;
	switch (op->kind) {
	case RES_WRITE:
		if (op->r.mem != CSD_MEM_A)
			b_words(&op->r, res_tp(g, op->T), &lo, &hi);
		break;
	case RES_WRITE_ALL:
		if (op->r.mem != CSD_MEM_A) {
			int h = op->r.mem != CSD_MEM_B;
			lo = h ? op->r.base / 2 : op->r.base;
			hi = lo + (op->r.width >> h);
		}
		break;
	case RES_PROGRAM:
		lo = op->block;
		hi = lo + (uint64_t)op->prog->n_params;
		break;
	case RES_KERNEL:
		k_b_words(op, res_tp(g, op->T), &lo, &hi);
		if (op->kernel == PLAN_WGRAD)
			vt_lut_write(lut, g->b_words, op->scratch,
				     g->b_words / 2 < 256 ? g->b_words / 2 : 256);
		break;
	case RES_REDUCE:
		lo = op->r.base;
		hi = lo + op->r.width;
		break;
	default: /* RES_READ */
		break;
	}
	vt_lut_write(lut, g->b_words, lo, hi - lo);
}

int res_exec(const struct plan_geom *g, const struct res_op *op, struct plan_link *link,
	     struct plan_stats *st, struct vt_lut *lut, char *err, size_t errlen)
{
	static const char *const what[] = { "write_tokens", "read_tokens", "write_all", "program",
					    "kernel", "reduce" };
	struct wstream ws = { link, st, NULL, 0, 4096, 0 };
	uint32_t *tmp = NULL;
	int P = g->rows * g->cols, rc = CS_OK;
	if (lut)
		lut_op_writes(g, op, lut);
	if (link->send) {
		/* a PE's rows (A: their words plus one for an odd start) */
		size_t tw = (size_t)res_tp(g, op->T) * op->r.width + 2;
		ws.buf = malloc(ws.cap * sizeof *ws.buf);
		tmp = malloc(tw * sizeof *tmp);
		if (!ws.buf || !tmp) {
			snprintf(err, errlen, "%s: out of memory", what[op->kind]);
			rc = CS_ERR_NO_MEM;
			goto out_free;
		}
	}
	switch (op->kind) {
	case RES_WRITE:
		write_tokens(&ws, g, op, tmp);
		rc = ws_sync_writes(&ws, P, 0, what[op->kind], err, errlen);
		break;
	case RES_READ:
		rc = read_tokens(&ws, g, op, err, errlen);
		break;
	case RES_WRITE_ALL: {
		int a = op->r.mem != CSD_MEM_B;
		if (ws.buf)
			pack_rows(tmp, &op->r, op->src, 1, 0, 1);
		ws_write_to(&ws, &st->prog_words_out,
			    op->r.mem == CSD_MEM_A ? PROTO_T_A : PROTO_T_B, PROTO_PE_ALL,
			    a ? op->r.base / 2 : op->r.base, tmp, op->r.width >> a);
		rc = ws_sync_writes(&ws, P, 1, what[op->kind], err, errlen);
		break;
	}
	case RES_PROGRAM:
		rc = run_program(&ws, g, op, lut, err, errlen);
		break;
	case RES_REDUCE:
		free(ws.buf);
		ws.buf = NULL;
		rc = plan_exec_reduce(g, op->fw, op->r.base, op->r.width, op->dst, link, st, err,
				      errlen);
		goto out_free;
	case RES_KERNEL: {
		struct plan pl;
		struct plan_regions rg;
		struct plan_io io = { .w = op->w, .out = op->dw };
		struct tread t = { 0 };
		struct twrite tw = { 0 };
		struct plan_side side = { &t, 0, tread_issue, tread_recv };
		struct plan_wside wside = { &tw, 0, twrite_issue };
		int rd = op->side && op->side->kind == RES_READ;
		int wr = op->side && op->side->kind == RES_WRITE;
		free(ws.buf);
		ws.buf = NULL;
		if ((rd && (rc = tread_init(&t, g, op->side, link->send != NULL))) ||
		    (wr && (rc = twrite_init(&tw, g, op->side, link->send != NULL)))) {
			snprintf(err, errlen, "kernel: out of memory");
			goto out_kernel;
		}
		side.n_words = t.n;
		wside.n_words = (uint64_t)tw.P * tw.n;
		if (!(rc = res_kernel_plan(g, op, &pl, &rg, err, errlen)))
			rc = plan_exec_resident(&pl, op->fw, &rg, &io, rd ? &side : NULL,
						wr ? &wside : NULL, link, st, err, errlen);
		if (!rc && rd)
			tread_finish(&t);
	out_kernel:
		free(t.img);
		free(tw.tmp);
		goto out_free;
	}
	}
	if (!rc)
		rc = ws_flush(&ws);
	if (rc && !err[0])
		snprintf(err, errlen, "%s: link: %s", what[op->kind], cs_strerror(rc));
out_free:
	free(tmp);
	free(ws.buf);
	return rc;
}
