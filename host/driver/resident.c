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

/* fw/vec_ln_fwd.s: per token nm_ln_fwd_bits, and the scratch its last token leaves. */
static int model_ln_fwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	unsigned C = p[0], G = p[1], BE = p[2], S = p[3], T = p[4], AM = p[5], X = p[8], Y = p[9],
		 Z = p[10], R = p[11], N = p[12];
	struct nm_ln_scratch sc = { .s = b + S };
	for (unsigned t = 0; t < N; t++)
		nm_ln_fwd_scratch_bits(a + Y + t * C, a + Z + t * C, a + R + t, &sc, b + X + t * C,
				       a + G, b + BE, C, p[6], p[7]);
	if (N) {
		memcpy(b + T, sc.t, 3 * sizeof sc.t[0]);
		a[AM] = sc.am[0];
	}
	return CS_OK;
}

/* fw/vec_ln_bwd.s: zeroes its C zeros, then per token nm_ln_bwd_bits, which takes the
 * ones vector the firmware reads from A as exactly 1.0. */
static int model_ln_bwd(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen)
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
		nm_ln_bwd_scratch_bits(b + DX + t * C, b + DG, b + DB, &sc, b + DY + t * C,
				       a + Z + t * C, a[R + t], a + G, C, p[6]);
	if (N) {
		memcpy(b + T, sc.t, 2 * sizeof sc.t[0]);
		memcpy(a + AM, sc.am, 2 * sizeof sc.am[0]);
	}
	return CS_OK;
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

/* The programs (their sources' .equ P_ names give the block). */
#define A_ CSD_MEM_A
#define B_ CSD_MEM_B
static const struct res_prog progs[] = {
	{ "vec_ln_fwd", "ln_fwd", 13, 0, 12,
	  { { 1, A_, RES_W, 0 }, { 2, B_, RES_W, 0 }, { 3, B_, RES_W, 0 }, { 4, B_, RES_K, 3 },
	    { 5, A_, RES_K, 1 }, { 8, B_, RES_NW, 0 }, { 9, A_, RES_NW, 0 },
	    { 10, A_, RES_NW, 0 }, { 11, A_, RES_N, 0 } }, 9, model_ln_fwd },
	{ "vec_ln_bwd", "ln_bwd", 15, 0, 14,
	  { { 1, A_, RES_W, 0 }, { 2, A_, RES_W, 0 }, { 3, B_, RES_W, 0 }, { 4, B_, RES_K, 2 },
	    { 5, A_, RES_K, 2 }, { 7, B_, RES_W, 0 }, { 8, B_, RES_NW, 0 },
	    { 9, A_, RES_NW, 0 }, { 10, A_, RES_N, 0 }, { 11, B_, RES_NW, 0 },
	    { 12, B_, RES_W, 0 }, { 13, B_, RES_W, 0 } }, 12, model_ln_bwd },
	{ "vec_gelu", "gelu_fwd", 8, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 3, B_, RES_K, 256 }, { 4, B_, RES_W, 0 },
	    { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 }, { 7, A_, RES_NW, 0 } }, 6,
	  model_gelu_fwd },
	{ "vec_gelu", "gelu_h", 8, 0, 1,
	  { { 2, B_, RES_K, 256 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 } }, 3, model_gelu_h },
	{ "vec_gelu", "gelu_bwd", 8, 0, 1,
	  { { 4, B_, RES_W, 0 }, { 5, B_, RES_NW, 0 }, { 6, A_, RES_NW, 0 },
	    { 7, A_, RES_NW, 0 } }, 4, model_gelu_bwd },
	{ "vec_cvt", "cvt_a", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, A_, RES_NS, 5 } }, 2, model_cvt_a },
	{ "vec_cvt", "cvt_bh", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, CSD_MEM_BH, RES_NS, 5 } }, 2, model_cvt_bh },
	{ "vec_cvt", "bias_fwd", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, B_, RES_W, 0 }, { 6, A_, RES_W, 0 } }, 3, model_bias_fwd },
	{ "vec_cvt", "bias_bwd", 7, 0, 1,
	  { { 2, B_, RES_NS, 3 }, { 4, B_, RES_W, 0 }, { 6, A_, RES_W, 0 } }, 3, model_bias_bwd },
	{ "vec_cvt", "cvt_f", 8, 0, 1,
	  { { 2, A_, RES_NS, 3 }, { 4, B_, RES_NS, 3 }, { 6, B_, RES_W, 0 }, { 7, B_, RES_W, 0 } },
	  4, model_cvt_f },
};
#undef A_
#undef B_

const struct res_prog *res_prog_find(const char *image, const char *entry)
{
	for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++)
		if (!strcmp(progs[i].image, image) && !strcmp(progs[i].entry, entry))
			return &progs[i];
	return NULL;
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

/* A READ that nothing overlaps: its header and address take the host port 2 cycles, the
 * engine its first beat a cycle later (measured on pe, 1x1 .. 4x4) */
#define RES_READ_ISSUE 3

/* One READ of every PE a PE-span (contiguous) or a row; the real tokens to dst. */
static int read_tokens(struct wstream *ws, const struct plan_geom *g, const struct res_op *op,
		       uint32_t *tmp, char *err, size_t errlen)
{
	const csd_region *r = &op->r;
	int P = g->rows * g->cols, tp = res_tp(g, op->T), a = r->mem != CSD_MEM_B, rc;
	int rows = r->stride == r->width || tp == 1 ? tp : 1;
	for (int u = 0; u < tp; u += rows) {
		uint32_t e0 = r->base + (uint32_t)u * r->stride, e1 = e0 + (uint32_t)rows * r->width;
		uint32_t w0 = a ? e0 / 2 : e0, n = a ? (e1 + 1) / 2 - w0 : e1 - e0;
		ws_put(ws, proto_hdr_read(r->mem == CSD_MEM_A ? PROTO_T_A : PROTO_T_B, PROTO_PE_ALL, n));
		ws_put(ws, w0);
		ws->st->act_words_in += (uint64_t)P * (1 + n);
		ws->st->act_cycles += ws_read_cycles(P, n) + RES_READ_ISSUE;
		ws->st->cycles += ws_read_cycles(P, n) + RES_READ_ISSUE;
		for (int q = 0; q < P; q++) {
			if ((rc = ws_recv(ws, tmp, n, PROTO_READ, n, err, errlen)))
				return rc;
			if (!ws->buf)
				continue;
			for (int v = 0; v < rows; v++) {
				int t = q * tp + u + v;
				if (t >= op->T)
					break;
				if (a)
					memcpy((uint16_t *)op->dst + (size_t)t * r->width,
					       (const uint16_t *)tmp + (e0 & 1) + (size_t)v * r->width,
					       r->width * 2);
				else
					memcpy((uint32_t *)op->dst + (size_t)t * r->width,
					       tmp + (size_t)v * r->width, r->width * 4);
			}
		}
	}
	return CS_OK;
}

#define TID_CTRL_BCAST (16 + PROTO_C_BCAST)
/* the streaming cycles of a program call beyond its task, its last writes and the mesh's
 * span (Rows + Cols): the control wavelet's pick and the SYNC seeing the mesh idle
 * (measured on the Verilated pe meshes 1x1 .. 4x4: tests/driver/test_estimate.c) */
#define RES_PROG_FIXED 2

/* A program call: overlay, task entry, r0, block, SYNC, the control wavelet, SYNC. */
static int run_program(struct wstream *ws, const struct plan_geom *g, const struct res_op *op,
		       char *err, size_t errlen)
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
			      op->block, op->params, pr->n_params, g->a_words, g->b_words };
	struct vt_result vr;
	char e2[160];
	if ((rc = vt_run(&vt, &vr, e2, sizeof e2))) {
		snprintf(err, errlen, "%s: %s", pr->entry, e2);
		return rc;
	}
	uint64_t c = vr.cycles + vr.drain + (uint64_t)(g->rows + g->cols) + RES_PROG_FIXED;
	ws->st->stream_cycles += c;
	/* the SYNC answers a cycle later; its own P + 4 (ws_sync's) overlap the task */
	c += 1;
	ws->st->cycles += c > (uint64_t)P + 4 ? c - ((uint64_t)P + 4) : 0;
	ws->st->mac_busy += (uint64_t)P * vr.macs;
	return ws_sync(ws, P, pr->entry, err, errlen);
}

int res_exec(const struct plan_geom *g, const struct res_op *op, struct plan_link *link,
	     struct plan_stats *st, char *err, size_t errlen)
{
	static const char *const what[] = { "write_tokens", "read_tokens", "write_all", "program",
					    "kernel" };
	struct wstream ws = { link, st, NULL, 0, 4096, 0 };
	uint32_t *tmp = NULL;
	int P = g->rows * g->cols, rc = CS_OK;
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
		rc = read_tokens(&ws, g, op, tmp, err, errlen);
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
		rc = run_program(&ws, g, op, err, errlen);
		break;
	case RES_KERNEL: {
		struct plan pl;
		struct plan_regions rg;
		struct plan_io io = { .w = op->w, .out = op->dw };
		free(ws.buf);
		ws.buf = NULL;
		if (!(rc = res_kernel_plan(g, op, &pl, &rg, err, errlen)))
			rc = plan_exec_resident(&pl, op->fw, &rg, &io, link, st, err, errlen);
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
