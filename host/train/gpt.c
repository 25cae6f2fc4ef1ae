/*
 * gpt.c - forward and backward of the GPT decoder, llm.c-style, dense products through
 * OpenBLAS. Each layer has a <layer>_forward / <layer>_backward pair in data-flow order;
 * the matmul and attention kernels keep a plain-loop *_ref beside the sgemm version
 * (tests/train/test_gpt.c compares them). The backward pass reuses one block's worth of
 * gradient buffers, layer by layer.
 *
 * Threads: every layer has a *_pool form that splits its work over a cs_pool by a fixed
 * rule (the plain form is the same code on one thread). Elementwise layers, rows of
 * layernorm / softmax / bias adds and (b, h) pairs of attention give each output to one
 * thread, and the reductions over rows (layernorm dweight / dbias, bias gradients, the
 * encoder's dwte / dwpe) are split by columns and summed in row order: those give the same
 * bits for every thread count. The products split their rows over the threads, each thread
 * calling a one-thread OpenBLAS sgemm on its block (OpenBLAS 0.3.21's pthread build may be
 * called from several threads at once; the trainer sets its own threads to 1, see
 * cs_cpu.h): bit-identical from run to run for a fixed thread count, and across thread
 * counts only where the sgemm kernel does not depend on the block shape.
 */
#include "train/gpt.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "common/cs_exp.h"
#include "engine/eng.h"

/* [lo, hi) of n items for thread tid, boundaries on multiples of align (SIMD blocks) */
static void split_aligned(size_t n, size_t align, int tid, int nth, size_t *lo, size_t *hi)
{
	size_t blocks = (n + align - 1) / align;
	cs_split(blocks, tid, nth, lo, hi);
	*lo *= align;
	*hi *= align;
	if (*lo > n)
		*lo = n;
	if (*hi > n)
		*hi = n;
}

/* ---- encoder ------------------------------------------------------------------------ */

struct enc_job {
	float *out, *dwte, *dwpe;
	const float *dout, *wte, *wpe;
	const int *inp;
	int B, T, C;
};

static void encoder_forward_job(void *va, int tid, int nth)
{
	struct enc_job *a = va;
	size_t lo, hi;
	cs_split((size_t)a->B * a->T, tid, nth, &lo, &hi);
	int C = a->C;
	for (size_t bt = lo; bt < hi; bt++) {
		int t = (int)(bt % (size_t)a->T);
		float *o = a->out + bt * C;
		const float *we = a->wte + (size_t)a->inp[bt] * C;
		const float *pe = a->wpe + (size_t)t * C;
		for (int i = 0; i < C; i++)
			o[i] = we[i] + pe[i];
	}
}

void encoder_forward_pool(cs_pool *pool, float *out, const int *inp, const float *wte,
			  const float *wpe, int B, int T, int C)
{
	struct enc_job a = { .out = out, .inp = inp, .wte = wte, .wpe = wpe, .B = B, .T = T,
			     .C = C };
	cs_pool_run(pool, encoder_forward_job, &a);
}

void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B,
		     int T, int C)
{
	encoder_forward_pool(NULL, out, inp, wte, wpe, B, T, C);
}

/* Columns split: two positions with the same token add into the same dwte row, in order. */
static void encoder_backward_job(void *va, int tid, int nth)
{
	struct enc_job *a = va;
	size_t lo, hi;
	split_aligned((size_t)a->C, 16, tid, nth, &lo, &hi);
	int C = a->C;
	for (int b = 0; b < a->B; b++)
		for (int t = 0; t < a->T; t++) {
			const float *d = a->dout + ((size_t)b * a->T + t) * C;
			float *dwe = a->dwte + (size_t)a->inp[b * a->T + t] * C;
			float *dpe = a->dwpe + (size_t)t * C;
			for (size_t i = lo; i < hi; i++) {
				dwe[i] += d[i];
				dpe[i] += d[i];
			}
		}
}

void encoder_backward_pool(cs_pool *pool, float *dwte, float *dwpe, const float *dout,
			   const int *inp, int B, int T, int C)
{
	struct enc_job a = { .dwte = dwte, .dwpe = dwpe, .dout = dout, .inp = inp, .B = B,
			     .T = T, .C = C };
	cs_pool_run(pool, encoder_backward_job, &a);
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B,
		      int T, int C)
{
	encoder_backward_pool(NULL, dwte, dwpe, dout, inp, B, T, C);
}

/* ---- layernorm ---------------------------------------------------------------------- */

struct ln_job {
	float *out, *mean, *rstd, *dinp, *dweight, *dbias;
	const float *inp, *weight, *bias, *dout, *cmean, *crstd;
	float *tile;  /* [threads][LN_TB][C]: the token-minor forward's blocks */
	int N, C, ld;
};

/* Row sums in 16 lane-wise partial sums added in a fixed order: one latency-bound chain
 * per row was most of LayerNorm's time. They vectorize without reassociation, so every
 * clone (and every thread count) gives the same bits. */
#define LANES 16

static inline __attribute__((always_inline)) float lane_total(const float *l)
{
	float s = 0.0f;
	for (int v = 0; v < LANES; v++)
		s += l[v];
	return s;
}

#define ROW_CLONES \
	__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

/* The mean and 1/sqrt(var + eps) of one row of C */
static inline __attribute__((always_inline)) void ln_stats(const float *x, int C, float *mean,
							   float *rstd)
{
	const float eps = 1e-5f;
	int Cv = C / LANES * LANES;
	float l[LANES] = { 0 };
	for (int i = 0; i < Cv; i += LANES)
		for (int v = 0; v < LANES; v++)
			l[v] += x[i + v];
	for (int i = Cv; i < C; i++)
		l[i - Cv] += x[i];
	float m = lane_total(l) / C;
	for (int v = 0; v < LANES; v++)
		l[v] = 0.0f;
	for (int i = 0; i < Cv; i += LANES)
		for (int v = 0; v < LANES; v++) {
			float d = x[i + v] - m;
			l[v] += d * d;
		}
	for (int i = Cv; i < C; i++) {
		float d = x[i] - m;
		l[i - Cv] += d * d;
	}
	float var = lane_total(l) / C;
	*mean = m;
	*rstd = 1.0f / sqrtf(var + eps);
}

static ROW_CLONES void layernorm_forward_rows(struct ln_job *a, size_t lo, size_t hi)
{
	int C = a->C;
	for (size_t n = lo; n < hi; n++) {
		const float *x = a->inp + n * C;
		float m, s;
		ln_stats(x, C, &m, &s);
		float *o = a->out + n * C;
		for (int i = 0; i < C; i++)
			o[i] = (s * (x[i] - m)) * a->weight[i] + a->bias[i];
		a->mean[n] = m;
		a->rstd[n] = s;
	}
}

/*
 * The same into a token-minor out [C][ld], 16 tokens at a time: the block is normalized
 * as above into a token-major tile that stays in L1 (16 C floats; same expressions, so the
 * same bits), which the engine's transpose then writes a 64-byte line per feature. The
 * thread holding the last tokens zeroes the padding N..ld-1. (Writing each feature's 16
 * outputs straight from the rows, a gather per feature, took twice the time of the
 * token-major pass.)
 */
#define LN_TB 16
static ROW_CLONES void layernorm_forward_tm_rows(struct ln_job *a, float *tile, size_t lo,
						 size_t hi)
{
	int C = a->C;
	size_t ld = (size_t)a->ld;
	for (size_t n0 = lo; n0 < hi; n0 += LN_TB) {
		size_t nb = hi - n0 < LN_TB ? hi - n0 : LN_TB;
		for (size_t t = 0; t < nb; t++) {
			const float *x = a->inp + (n0 + t) * C;
			float m, s;
			ln_stats(x, C, &m, &s);
			float *o = tile + t * C;
			for (int i = 0; i < C; i++)
				o[i] = (s * (x[i] - m)) * a->weight[i] + a->bias[i];
			a->mean[n0 + t] = m;
			a->rstd[n0 + t] = s;
		}
		eng_transpose_block(a->out + n0, ld, tile, (size_t)C, (int)nb, C);
	}
	if (hi == (size_t)a->N && ld > hi)
		for (int i = 0; i < C; i++)
			memset(a->out + i * ld + hi, 0, (ld - hi) * sizeof(float));
}

static void layernorm_forward_tm_job(void *va, int tid, int nth)
{
	struct ln_job *a = va;
	size_t lo, hi;
	split_aligned((size_t)a->N, LN_TB, tid, nth, &lo, &hi);
	if (lo < hi)
		layernorm_forward_tm_rows(a, a->tile + (size_t)tid * LN_TB * a->C, lo, hi);
}

int layernorm_forward_tm_pool(cs_pool *pool, float *out, float *mean, float *rstd,
			      const float *inp, const float *weight, const float *bias, int N,
			      int C, int ld)
{
	float *tile = aligned_alloc(64, sizeof(float) * LN_TB * (size_t)C *
						(size_t)cs_pool_threads(pool));
	if (!tile)
		return CS_ERR_NO_MEM;
	struct ln_job a = { .out = out, .mean = mean, .rstd = rstd, .inp = inp, .weight = weight,
			    .bias = bias, .tile = tile, .N = N, .C = C, .ld = ld };
	cs_pool_run(pool, layernorm_forward_tm_job, &a);
	free(tile);
	return CS_OK;
}

static void layernorm_forward_job(void *va, int tid, int nth)
{
	struct ln_job *a = va;
	size_t lo, hi;
	cs_split((size_t)a->N, tid, nth, &lo, &hi);
	layernorm_forward_rows(a, lo, hi);
}

void layernorm_forward_pool(cs_pool *pool, float *out, float *mean, float *rstd,
			    const float *inp, const float *weight, const float *bias, int N,
			    int C)
{
	struct ln_job a = { .out = out, .mean = mean, .rstd = rstd, .inp = inp, .weight = weight,
			    .bias = bias, .N = N, .C = C };
	cs_pool_run(pool, layernorm_forward_job, &a);
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
		       const float *weight, const float *bias, int N, int C)
{
	layernorm_forward_pool(NULL, out, mean, rstd, inp, weight, bias, N, C);
}

static ROW_CLONES void layernorm_backward_rows(struct ln_job *a, size_t lo, size_t hi)
{
	int C = a->C, Cv = C / LANES * LANES;
	const float *weight = a->weight;
	for (size_t n = lo; n < hi; n++) {
		const float *d = a->dout + n * C;
		const float *x = a->inp + n * C;
		float *dx = a->dinp + n * C;
		float m = a->cmean[n], s = a->crstd[n];
		float l1[LANES] = { 0 }, l2[LANES] = { 0 };
		/* two passes, one partial-sum array each: one loop over both vectorized into
		 * lane permutes */
		for (int i = 0; i < Cv; i += LANES)
			for (int v = 0; v < LANES; v++)
				l1[v] += weight[i + v] * d[i + v];
		for (int i = 0; i < Cv; i += LANES)
			for (int v = 0; v < LANES; v++)
				l2[v] += (weight[i + v] * d[i + v]) * ((x[i + v] - m) * s);
		for (int i = Cv; i < C; i++) {
			float norm = (x[i] - m) * s;
			float dnorm = weight[i] * d[i];
			l1[i - Cv] += dnorm;
			l2[i - Cv] += dnorm * norm;
		}
		float dnorm_mean = lane_total(l1) / C;
		float dnorm_norm_mean = lane_total(l2) / C;
		for (int i = 0; i < C; i++) {
			float norm = (x[i] - m) * s;
			float dnorm = weight[i] * d[i];
			dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
		}
	}
}

static ROW_CLONES void layernorm_backward_cols(struct ln_job *a, size_t lo, size_t hi)
{
	int C = a->C;
	for (int n = 0; n < a->N; n++) {
		const float *d = a->dout + (size_t)n * C;
		const float *x = a->inp + (size_t)n * C;
		float m = a->cmean[n], s = a->crstd[n];
		for (size_t i = lo; i < hi; i++) {
			float norm = (x[i] - m) * s;
			a->dbias[i] += d[i];
			a->dweight[i] += norm * d[i];
		}
	}
}

/*
 * dinp by rows, then dweight / dbias by columns (each column summed over the rows in
 * order, as one thread would): the two parts write different buffers, so one job does both.
 */
static void layernorm_backward_job(void *va, int tid, int nth)
{
	struct ln_job *a = va;
	size_t lo, hi;
	cs_split((size_t)a->N, tid, nth, &lo, &hi);
	layernorm_backward_rows(a, lo, hi);
	split_aligned((size_t)a->C, 16, tid, nth, &lo, &hi);
	layernorm_backward_cols(a, lo, hi);
}

/* dinp += ..., dweight += ..., dbias += ... */
void layernorm_backward_pool(cs_pool *pool, float *dinp, float *dweight, float *dbias,
			     const float *dout, const float *inp, const float *weight,
			     const float *mean, const float *rstd, int N, int C)
{
	struct ln_job a = { .dinp = dinp, .dweight = dweight, .dbias = dbias, .dout = dout,
			    .inp = inp, .weight = weight, .cmean = mean, .crstd = rstd, .N = N,
			    .C = C };
	cs_pool_run(pool, layernorm_backward_job, &a);
}

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
			const float *inp, const float *weight, const float *mean,
			const float *rstd, int N, int C)
{
	layernorm_backward_pool(NULL, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

/*
 * LayerNorm over the blocked token-minor residual stream ([nblk][C][ENG_TB], engine.h's
 * ENG_TM_BLOCKED): a block's 64 tokens are the vector lanes, so a token's 16 lane-wise
 * partial sums over the features (l [v] sums features v, v + 16, ... in order) are 16
 * accumulators over the block's rows, added in the same order: the same expressions as
 * the token-major rows above, the same bits, with no transpose. dweight and dbias sum
 * each feature over the tokens in 16 lane-wise sums instead (lane v the tokens v, v + 16,
 * ... in order, then the lanes in order: bias_grad_tm_pool's order), the rows of a block
 * being contiguous tokens. Tokens past N are zero in and out.
 */
struct lnb_job {
	float *out, *mean, *rstd, *dinp, *dweight, *dbias;
	const float *inp, *weight, *bias, *dout, *cmean, *crstd;
	int N, C;
};

#define TB ENG_TB

static ROW_CLONES void lnb_forward_block(float *restrict o, float *restrict mean,
					  float *restrict rstd, const float *restrict x,
					  const float *restrict w, const float *restrict b, int C,
					  int nt)
{
	const float eps = 1e-5f;
	int Cv = C / LANES * LANES;
	float l[LANES][TB], m[TB], s[TB];
	memset(l, 0, sizeof l);
	for (int i = 0; i < Cv; i += LANES)
		for (int v = 0; v < LANES; v++)
			for (int t = 0; t < TB; t++)
				l[v][t] += x[(size_t)(i + v) * TB + t];
	for (int i = Cv; i < C; i++)
		for (int t = 0; t < TB; t++)
			l[i - Cv][t] += x[(size_t)i * TB + t];
	for (int t = 0; t < TB; t++) {
		float tot = 0.0f;
		for (int v = 0; v < LANES; v++)
			tot += l[v][t];
		m[t] = tot / C;
	}
	memset(l, 0, sizeof l);
	for (int i = 0; i < Cv; i += LANES)
		for (int v = 0; v < LANES; v++)
			for (int t = 0; t < TB; t++) {
				float d = x[(size_t)(i + v) * TB + t] - m[t];
				l[v][t] += d * d;
			}
	for (int i = Cv; i < C; i++)
		for (int t = 0; t < TB; t++) {
			float d = x[(size_t)i * TB + t] - m[t];
			l[i - Cv][t] += d * d;
		}
	for (int t = 0; t < TB; t++) {
		float tot = 0.0f;
		for (int v = 0; v < LANES; v++)
			tot += l[v][t];
		float var = tot / C;
		s[t] = 1.0f / sqrtf(var + eps);
	}
	for (int i = 0; i < C; i++) {
		float wi = w[i], bi = b[i];
		float *restrict oi = o + (size_t)i * TB;
		const float *restrict xi = x + (size_t)i * TB;
		for (int t = 0; t < TB; t++)
			oi[t] = (s[t] * (xi[t] - m[t])) * wi + bi;
		for (int t = nt; t < TB; t++)
			oi[t] = 0.0f;
	}
	for (int t = 0; t < nt; t++) {
		mean[t] = m[t];
		rstd[t] = s[t];
	}
}

static void lnb_forward_job(void *va, int tid, int nth)
{
	struct lnb_job *a = va;
	size_t nblk = ((size_t)a->N + TB - 1) / TB, b0, b1, C = (size_t)a->C;
	cs_split(nblk, tid, nth, &b0, &b1);
	for (size_t b = b0; b < b1; b++) {
		int nt = a->N - (int)b * TB < TB ? a->N - (int)b * TB : TB;
		lnb_forward_block(a->out + b * C * TB, a->mean + b * TB, a->rstd + b * TB,
				  a->inp + b * C * TB, a->weight, a->bias, a->C, nt);
	}
}

void layernorm_forward_blk_pool(cs_pool *pool, float *out, float *mean, float *rstd,
				const float *inp, const float *weight, const float *bias, int N,
				int C)
{
	struct lnb_job a = { .out = out, .mean = mean, .rstd = rstd, .inp = inp, .weight = weight,
			     .bias = bias, .N = N, .C = C };
	cs_pool_run(pool, lnb_forward_job, &a);
}

static ROW_CLONES void lnb_backward_block(float *restrict dx, const float *restrict d,
					   const float *restrict x, const float *restrict w,
					   const float *restrict mean, const float *restrict rstd,
					   int C, int nt)
{
	int Cv = C / LANES * LANES;
	float l1[LANES][TB], l2[LANES][TB], m[TB], s[TB], dm[TB], dnm[TB];
	for (int t = 0; t < TB; t++) { /* padding tokens: d is zero, so is what they add */
		m[t] = t < nt ? mean[t] : 0.0f;
		s[t] = t < nt ? rstd[t] : 0.0f;
	}
	memset(l1, 0, sizeof l1);
	memset(l2, 0, sizeof l2);
	/* both sums in one pass over the block (each its own expressions, in order) */
	for (int i = 0; i < Cv; i += LANES)
		for (int v = 0; v < LANES; v++)
			for (int t = 0; t < TB; t++) {
				size_t q = (size_t)(i + v) * TB + t;
				float dnorm = w[i + v] * d[q];
				l1[v][t] += dnorm;
				l2[v][t] += dnorm * ((x[q] - m[t]) * s[t]);
			}
	for (int i = Cv; i < C; i++)
		for (int t = 0; t < TB; t++) {
			size_t q = (size_t)i * TB + t;
			float norm = (x[q] - m[t]) * s[t];
			float dnorm = w[i] * d[q];
			l1[i - Cv][t] += dnorm;
			l2[i - Cv][t] += dnorm * norm;
		}
	for (int t = 0; t < TB; t++) {
		float t1 = 0.0f, t2 = 0.0f;
		for (int v = 0; v < LANES; v++) {
			t1 += l1[v][t];
			t2 += l2[v][t];
		}
		dm[t] = t1 / C;
		dnm[t] = t2 / C;
	}
	for (int i = 0; i < C; i++) {
		float wi = w[i];
		float *restrict dxi = dx + (size_t)i * TB;
		const float *restrict xi = x + (size_t)i * TB, *restrict di = d + (size_t)i * TB;
		for (int t = 0; t < nt; t++) {
			float norm = (xi[t] - m[t]) * s[t];
			float dnorm = wi * di[t];
			dxi[t] += (dnorm - dm[t] - norm * dnm[t]) * s[t];
		}
	}
}

static ROW_CLONES void lnb_backward_cols(struct lnb_job *a, size_t lo, size_t hi)
{
	size_t C = (size_t)a->C, nblk = ((size_t)a->N + TB - 1) / TB;
	for (size_t i = lo; i < hi; i++) {
		float lb[LANES] = { 0 }, lw[LANES] = { 0 };
		for (size_t b = 0; b < nblk; b++) {
			const float *d = a->dout + (b * C + i) * TB, *x = a->inp + (b * C + i) * TB;
			const float *m = a->cmean + b * TB, *s = a->crstd + b * TB;
			int nt = a->N - (int)b * TB < TB ? a->N - (int)b * TB : TB;
			int nv = nt / LANES * LANES;
			for (int t = 0; t < nv; t += LANES)
				for (int v = 0; v < LANES; v++) {
					float norm = (x[t + v] - m[t + v]) * s[t + v];
					lb[v] += d[t + v];
					lw[v] += norm * d[t + v];
				}
			for (int t = nv; t < nt; t++) {
				float norm = (x[t] - m[t]) * s[t];
				lb[t - nv] += d[t];
				lw[t - nv] += norm * d[t];
			}
		}
		a->dbias[i] += lane_total(lb);
		a->dweight[i] += lane_total(lw);
	}
}

/* dinp by token blocks, then dweight / dbias by features: one job, as the token-major one */
static void lnb_backward_job(void *va, int tid, int nth)
{
	struct lnb_job *a = va;
	size_t nblk = ((size_t)a->N + TB - 1) / TB, b0, b1, C = (size_t)a->C, lo, hi;
	cs_split(nblk, tid, nth, &b0, &b1);
	for (size_t b = b0; b < b1; b++) {
		int nt = a->N - (int)b * TB < TB ? a->N - (int)b * TB : TB;
		lnb_backward_block(a->dinp + b * C * TB, a->dout + b * C * TB,
				   a->inp + b * C * TB, a->weight, a->cmean + b * TB,
				   a->crstd + b * TB, a->C, nt);
	}
	split_aligned(C, 16, tid, nth, &lo, &hi);
	lnb_backward_cols(a, lo, hi);
}

void layernorm_backward_blk_pool(cs_pool *pool, float *dinp, float *dweight, float *dbias,
				 const float *dout, const float *inp, const float *weight,
				 const float *mean, const float *rstd, int N, int C)
{
	struct lnb_job a = { .dinp = dinp, .dweight = dweight, .dbias = dbias, .dout = dout,
			     .inp = inp, .weight = weight, .cmean = mean, .crstd = rstd, .N = N,
			     .C = C };
	cs_pool_run(pool, lnb_backward_job, &a);
}

/* Token-major [N][C] and blocked [nblk][C][ENG_TB] (padding tokens zero), by token blocks */
struct blk_job {
	float *dst;
	const float *src;
	int N, C, to_blk;
};

static void blk_job_run(void *va, int tid, int nth)
{
	struct blk_job *a = va;
	size_t nblk = ((size_t)a->N + TB - 1) / TB, b0, b1, C = (size_t)a->C;
	cs_split(nblk, tid, nth, &b0, &b1);
	for (size_t b = b0; b < b1; b++) {
		int nt = a->N - (int)b * TB < TB ? a->N - (int)b * TB : TB;
		if (a->to_blk) {
			float *d = a->dst + b * C * TB;
			eng_transpose_block(d, TB, a->src + b * TB * C, C, nt, a->C);
			for (size_t i = 0; nt < TB && i < C; i++)
				memset(d + i * TB + nt, 0, sizeof(float) * (size_t)(TB - nt));
		} else {
			eng_transpose_block(a->dst + b * TB * C, C, a->src + b * C * TB, TB, a->C,
					    nt);
		}
	}
}

void tm_block_pool(cs_pool *pool, float *dst, const float *src, int N, int C)
{
	struct blk_job a = { .dst = dst, .src = src, .N = N, .C = C, .to_blk = 1 };
	cs_pool_run(pool, blk_job_run, &a);
}

void tm_unblock_pool(cs_pool *pool, float *dst, const float *src, int N, int C)
{
	struct blk_job a = { .dst = dst, .src = src, .N = N, .C = C, .to_blk = 0 };
	cs_pool_run(pool, blk_job_run, &a);
}

#undef TB

/* ---- matmul ------------------------------------------------------------------------- */

/*
 * One job for the three products of a linear layer. Forward and dinp split the N rows;
 * dweight (and dbias) split the OC output rows, so each thread's sgemm writes its own rows
 * of dweight and each dbias element is summed over n in order.
 */
enum { MM_FWD, MM_DINP, MM_DW, MM_BIAS };

struct mm_job {
	int op;
	float *out;           /* MM_FWD, MM_BIAS: [N, OC]; MM_DINP: dinp [N, C];
				 MM_DW: dweight [OC, C] or NULL (dbias only) */
	float *dbias;         /* MM_DW, may be NULL */
	const float *inp;     /* [N, C] (MM_FWD, MM_DW) */
	const float *weight;  /* [OC, C] (MM_FWD, MM_DINP) */
	const float *bias;    /* MM_FWD (may be NULL), MM_BIAS */
	const float *dout;    /* [N, OC] (MM_DINP, MM_DW) */
	float beta;           /* MM_DINP: 0 overwrites, 1 accumulates */
	int N, C, OC;
};

static void matmul_job(void *va, int tid, int nth)
{
	struct mm_job *a = va;
	int N = a->N, C = a->C, OC = a->OC;
	size_t lo, hi;
	switch (a->op) {
	case MM_FWD:
		cs_split((size_t)N, tid, nth, &lo, &hi);
		if (hi == lo)
			return;
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(hi - lo), OC, C, 1.0f,
			    a->inp + lo * C, C, a->weight, C, 0.0f, a->out + lo * OC, OC);
		if (a->bias)
			for (size_t n = lo; n < hi; n++) {
				float *o = a->out + n * OC;
				for (int j = 0; j < OC; j++)
					o[j] += a->bias[j];
			}
		break;
	case MM_DINP:
		cs_split((size_t)N, tid, nth, &lo, &hi);
		if (hi == lo)
			return;
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(hi - lo), C, OC, 1.0f,
			    a->dout + lo * OC, OC, a->weight, C, a->beta, a->out + lo * C, C);
		break;
	case MM_DW:
		split_aligned((size_t)OC, 16, tid, nth, &lo, &hi);
		if (hi == lo)
			return;
		if (a->out)
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)(hi - lo), C, N,
				    1.0f, a->dout + lo, OC, a->inp, C, 1.0f, a->out + lo * C, C);
		if (a->dbias)
			for (int n = 0; n < N; n++) {
				const float *d = a->dout + (size_t)n * OC;
				for (size_t j = lo; j < hi; j++)
					a->dbias[j] += d[j];
			}
		break;
	case MM_BIAS:
		cs_split((size_t)N, tid, nth, &lo, &hi);
		for (size_t n = lo; n < hi; n++) {
			float *o = a->out + n * OC;
			for (int j = 0; j < OC; j++)
				o[j] += a->bias[j];
		}
		break;
	}
}

void matmul_forward_pool(cs_pool *pool, float *out, const float *inp, const float *weight,
			 const float *bias, int N, int C, int OC)
{
	struct mm_job a = { .op = MM_FWD, .out = out, .inp = inp, .weight = weight, .bias = bias,
			    .N = N, .C = C, .OC = OC };
	cs_pool_run(pool, matmul_job, &a);
}

void matmul_forward(float *out, const float *inp, const float *weight, const float *bias,
		    int N, int C, int OC)
{
	matmul_forward_pool(NULL, out, inp, weight, bias, N, C, OC);
}

/* dinp += dout weight, dweight += dout^T inp, dbias += sum_n dout (dbias may be NULL) */
void matmul_backward_pool(cs_pool *pool, float *dinp, float *dweight, float *dbias,
			  const float *dout, const float *inp, const float *weight, int N, int C,
			  int OC)
{
	struct mm_job a = { .op = MM_DINP, .out = dinp, .weight = weight, .dout = dout,
			    .beta = 1.0f, .N = N, .C = C, .OC = OC };
	cs_pool_run(pool, matmul_job, &a);
	a = (struct mm_job){ .op = MM_DW, .out = dweight, .dbias = dbias, .inp = inp,
			     .dout = dout, .N = N, .C = C, .OC = OC };
	cs_pool_run(pool, matmul_job, &a);
}

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
		     const float *inp, const float *weight, int N, int C, int OC)
{
	matmul_backward_pool(NULL, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

/* Bias gradient alone (the projections' hook leaves the bias to the model). */
static void bias_grad_pool(cs_pool *pool, float *dbias, const float *dout, int N, int OC)
{
	struct mm_job a = { .op = MM_DW, .out = NULL, .dbias = dbias, .dout = dout, .N = N,
			    .OC = OC };
	cs_pool_run(pool, matmul_job, &a);
}

static void bias_add_pool(cs_pool *pool, float *out, const float *bias, int N, int OC)
{
	struct mm_job a = { .op = MM_BIAS, .out = out, .bias = bias, .N = N, .OC = OC };
	cs_pool_run(pool, matmul_job, &a);
}

/* out [N, C] = res + (y + bias): a projection's bias and the residual add in one pass (the
 * same expressions as the bias add followed by the residual add: the same bits); y keeps
 * no bias, which nothing reads */
struct bres_job {
	float *out;
	const float *res, *y, *bias;
	int N, C;
};

static ROW_CLONES void bias_residual_rows(struct bres_job *a, size_t lo, size_t hi)
{
	size_t C = (size_t)a->C;
	for (size_t n = lo; n < hi; n++) {
		float *o = a->out + n * C;
		const float *r = a->res + n * C, *y = a->y + n * C;
		for (size_t i = 0; i < C; i++)
			o[i] = r[i] + (y[i] + a->bias[i]);
	}
}

static void bias_residual_job(void *va, int tid, int nth)
{
	struct bres_job *a = va;
	size_t lo, hi;
	cs_split((size_t)a->N, tid, nth, &lo, &hi);
	bias_residual_rows(a, lo, hi);
}

static void bias_residual_pool(cs_pool *pool, float *out, const float *res, const float *y,
			       const float *bias, int N, int C)
{
	struct bres_job a = { .out = out, .res = res, .y = y, .bias = bias, .N = N, .C = C };
	cs_pool_run(pool, bias_residual_job, &a);
}

void matmul_forward_ref(float *out, const float *inp, const float *weight, const float *bias,
			int N, int C, int OC)
{
	for (int n = 0; n < N; n++)
		for (int o = 0; o < OC; o++) {
			float v = bias ? bias[o] : 0.0f;
			for (int i = 0; i < C; i++)
				v += inp[(size_t)n * C + i] * weight[(size_t)o * C + i];
			out[(size_t)n * OC + o] = v;
		}
}

void matmul_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
			 const float *inp, const float *weight, int N, int C, int OC)
{
	for (int n = 0; n < N; n++)
		for (int o = 0; o < OC; o++) {
			float d = dout[(size_t)n * OC + o];
			for (int i = 0; i < C; i++) {
				dinp[(size_t)n * C + i] += weight[(size_t)o * C + i] * d;
				dweight[(size_t)o * C + i] += inp[(size_t)n * C + i] * d;
			}
			if (dbias)
				dbias[o] += d;
		}
}

/* ---- attention ---------------------------------------------------------------------- */

/* Causal softmax of row t of a [T, T] score matrix, in place; zero above the diagonal.
 * Lane-wise max and sum (fixed order, the same bits in every clone) and the vectorizable
 * cs_exp_nonpos: libm's scalar expf was most of the softmax's time. */
static ROW_CLONES void causal_softmax_row(float *row, int t, int T)
{
	int n = t + 1, nv = n / LANES * LANES;
	float l[LANES];
	for (int v = 0; v < LANES; v++)
		l[v] = -INFINITY;
	for (int j = 0; j < nv; j += LANES)
		for (int v = 0; v < LANES; v++)
			l[v] = row[j + v] > l[v] ? row[j + v] : l[v];
	for (int j = nv; j < n; j++)
		l[j - nv] = row[j] > l[j - nv] ? row[j] : l[j - nv];
	float maxv = l[0];
	for (int v = 1; v < LANES; v++)
		maxv = l[v] > maxv ? l[v] : maxv;
	for (int v = 0; v < LANES; v++)
		l[v] = 0.0f;
	for (int j = 0; j < nv; j += LANES)
		for (int v = 0; v < LANES; v++) {
			float e = cs_exp_nonpos(row[j + v] - maxv);
			row[j + v] = e;
			l[v] += e;
		}
	for (int j = nv; j < n; j++) {
		float e = cs_exp_nonpos(row[j] - maxv);
		row[j] = e;
		l[j - nv] += e;
	}
	float inv = 1.0f / lane_total(l);
	for (int j = 0; j < n; j++)
		row[j] *= inv;
	for (int j = n; j < T; j++)
		row[j] = 0.0f;
}

/*
 * Attention runs on the native engine's causal kernel (host/engine/eng_attn.c): per
 * (sequence, head), blocks of a few query rows take only the keys up to their last row,
 * with the scores' rows in L1, the softmax between the two products, and dk, dv summed
 * over the query rows at or after each key only. It keeps the engine's ISA dispatch
 * (CSHOST_ISA) and its bits do not depend on the thread count.
 */
size_t attention_scratch_floats(int T, int C, int NH)
{
	return eng_attention_scratch(T, C / NH);
}

void attention_forward_pool(cs_pool *pool, float *out, float *att, const float *qkv,
			    float *scratch, int B, int T, int C, int NH)
{
	eng_attention_forward(pool, out, att, qkv, 0, scratch, B, T, C, NH);
}

void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH)
{
	float *scratch = malloc(sizeof(float) * attention_scratch_floats(T, C, NH));
	if (!scratch)
		abort();
	attention_forward_pool(NULL, out, att, qkv, scratch, B, T, C, NH);
	free(scratch);
}

void attention_backward_pool(cs_pool *pool, float *dqkv, const float *dout, const float *qkv,
			     const float *att, float *scratch, int B, int T, int C, int NH)
{
	eng_attention_backward(pool, dqkv, dout, qkv, 0, att, scratch, B, T, C, NH);
}

void attention_forward_tm_pool(cs_pool *pool, float *out, float *att, const float *qkvt,
			       int ld, float *scratch, int B, int T, int C, int NH)
{
	eng_attention_forward(pool, out, att, qkvt, ld, scratch, B, T, C, NH);
}

void attention_forward_tmo_pool(cs_pool *pool, float *outt, float *att, const float *qkvt,
				int ld, float *scratch, int B, int T, int C, int NH)
{
	eng_attention_forward_tmo(pool, outt, att, qkvt, ld, scratch, B, T, C, NH);
}

void attention_backward_tm_pool(cs_pool *pool, float *dqkvt, const float *dout,
				const float *qkvt, int ld, const float *att, float *scratch,
				int B, int T, int C, int NH)
{
	eng_attention_backward(pool, dqkvt, dout, qkvt, ld, att, scratch, B, T, C, NH);
}

void attention_backward_tmd_pool(cs_pool *pool, float *dqkvt, const float *doutt,
				 const float *qkvt, int ld, const float *att, float *scratch,
				 int B, int T, int C, int NH)
{
	eng_attention_backward_tmd(pool, dqkvt, doutt, qkvt, ld, att, scratch, B, T, C, NH);
}

void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att,
			float *scratch, int B, int T, int C, int NH)
{
	attention_backward_pool(NULL, dqkv, dout, qkv, att, scratch, B, T, C, NH);
}

void attention_forward_ref(float *out, float *att, const float *qkv, int B, int T, int C,
			   int NH)
{
	int hs = C / NH, C3 = 3 * C;
	float scale = 1.0f / sqrtf((float)hs);
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			for (int h = 0; h < NH; h++) {
				const float *q = qkv + ((size_t)b * T + t) * C3 + h * hs;
				float *a = att + (((size_t)b * NH + h) * T + t) * T;
				for (int j = 0; j <= t; j++) {
					const float *k = qkv + ((size_t)b * T + j) * C3 + C + h * hs;
					float s = 0.0f;
					for (int i = 0; i < hs; i++)
						s += q[i] * k[i];
					a[j] = s * scale;
				}
				causal_softmax_row(a, t, T);
				float *o = out + ((size_t)b * T + t) * C + h * hs;
				for (int i = 0; i < hs; i++)
					o[i] = 0.0f;
				for (int j = 0; j <= t; j++) {
					const float *v =
						qkv + ((size_t)b * T + j) * C3 + 2 * C + h * hs;
					for (int i = 0; i < hs; i++)
						o[i] += a[j] * v[i];
				}
			}
}

void attention_backward_ref(float *dqkv, const float *dout, const float *qkv,
			    const float *att, int B, int T, int C, int NH)
{
	int hs = C / NH, C3 = 3 * C;
	float scale = 1.0f / sqrtf((float)hs);
	memset(dqkv, 0, sizeof(float) * (size_t)B * T * C3);
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			for (int h = 0; h < NH; h++) {
				const float *a = att + (((size_t)b * NH + h) * T + t) * T;
				const float *d = dout + ((size_t)b * T + t) * C + h * hs;
				const float *q = qkv + ((size_t)b * T + t) * C3 + h * hs;
				float *dq = dqkv + ((size_t)b * T + t) * C3 + h * hs;
				float da[t + 1];
				for (int j = 0; j <= t; j++) {
					const float *v =
						qkv + ((size_t)b * T + j) * C3 + 2 * C + h * hs;
					float *dv = dqkv + ((size_t)b * T + j) * C3 + 2 * C + h * hs;
					float s = 0.0f;
					for (int i = 0; i < hs; i++) {
						s += d[i] * v[i];
						dv[i] += a[j] * d[i];
					}
					da[j] = s;
				}
				float dot = 0.0f;
				for (int j = 0; j <= t; j++)
					dot += a[j] * da[j];
				for (int j = 0; j <= t; j++) {
					float dpre = a[j] * (da[j] - dot) * scale;
					const float *k = qkv + ((size_t)b * T + j) * C3 + C + h * hs;
					float *dk = dqkv + ((size_t)b * T + j) * C3 + C + h * hs;
					for (int i = 0; i < hs; i++) {
						dq[i] += dpre * k[i];
						dk[i] += dpre * q[i];
					}
				}
			}
}


/* ---- gelu (tanh approximation) ------------------------------------------------------ */

/*
 * GELU(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), is computed as
 * x s with s = 1 / (1 + exp(-2u)), the same function, and its derivative as
 * s + x s (1 - s) 2u'(x): one exp and one division for both (glibc's tanhf is scalar and
 * was a third of a training step). With e = exp(-|2u|) and r = 1 / (1 + e), s is r or e r
 * and s (1 - s) = e r r for either sign. Branch-free, so it vectorizes (an AVX-512 and an
 * AVX2 clone are picked at run time); the sums are explicit fmaf (correctly rounded, so
 * every clone gives identical bits; -std=c11 sets -ffp-contract=off, nothing else is
 * fused). x is clamped to [-9, 9] inside s (s is 1 in fp32 above 9; below -9 GELU and its
 * derivative are below 1e-27). tests/train/test_gpt.c checks both against double.
 */
#define GELU_K0 1.5957691216057308f  /* 2 sqrt(2/pi) */
#define GELU_K1 0.071354816272736f   /* 2 sqrt(2/pi) 0.044715 */
#define GELU_K3 0.214064448818208f   /* 3 GELU_K1 */

/* exp(x) for -87 <= x <= 0: cs_exp_neg's reduction and polynomial with fused steps */
static inline __attribute__((always_inline)) float gelu_exp_neg(float x)
{
	const float log2e = 1.44269504088896341f;
	const float ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
	const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
	float kf = fmaf(x, log2e, shifter) - shifter;
	float r = fmaf(-kf, ln2_lo, fmaf(-kf, ln2_hi, x));
	float p = 1.0f / 720.0f;
	p = fmaf(p, r, 1.0f / 120.0f);
	p = fmaf(p, r, 1.0f / 24.0f);
	p = fmaf(p, r, 1.0f / 6.0f);
	p = fmaf(p, r, 0.5f);
	p = fmaf(p, r, 1.0f);
	p = fmaf(p, r, 1.0f);
	uint32_t bits = (uint32_t)((int32_t)kf + 127) << 23;
	float scale;
	memcpy(&scale, &bits, sizeof scale);
	return p * scale;
}

/* *g = GELU(x), *d = GELU'(x) */
static inline __attribute__((always_inline)) void gelu_gd(float x, float *g, float *d)
{
	float xl = x > -9.0f ? x : -9.0f;
	float xc = xl < 9.0f ? xl : 9.0f;
	float x2 = xc * xc;
	float z = xc * fmaf(GELU_K1, x2, GELU_K0); /* 2u */
	float az = fabsf(z);
	float e = gelu_exp_neg(-az);
	float r = 1.0f / (1.0f + e);
	float er = e * r;
	float s = z < 0.0f ? er : r;
	*g = xl * s;
	*d = fmaf(xc * er * r, fmaf(GELU_K3, x2, GELU_K0), s);
}

float gelu_of(float x)
{
	float g, d;
	gelu_gd(x, &g, &d);
	return g;
}

float gelu_grad(float x)
{
	float g, d;
	gelu_gd(x, &g, &d);
	return d;
}

#define GELU_CLONES \
	__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

static GELU_CLONES void gelu_forward_range(float *out, const float *inp, size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++) {
		float g, d;
		gelu_gd(inp[i], &g, &d);
		out[i] = g;
	}
}

/* dinp = gelu'(inp) * dout (overwrites) */
static GELU_CLONES void gelu_backward_range(float *dinp, const float *inp, const float *dout,
					    size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++) {
		float g, d;
		gelu_gd(inp[i], &g, &d);
		dinp[i] = d * dout[i];
	}
}

/* out = GELU(xd), and xd = GELU'(xd) in place: the model's forward keeps the derivative
 * instead of the pre-activation, which only the backward read, so the backward is one
 * product. The same expressions as gelu_backward_range: the same bits. */
static GELU_CLONES void gelu_forward_d_range(float *restrict out, float *restrict xd, size_t lo,
					     size_t hi)
{
	for (size_t i = lo; i < hi; i++) {
		float g, d;
		gelu_gd(xd[i], &g, &d);
		out[i] = g;
		xd[i] = d;
	}
}

/* ---- elementwise jobs: GELU, residual ----------------------------------------------- */

enum { EW_GELU_FWD, EW_GELU_BWD, EW_GELU_FWD_D, EW_MUL, EW_RES_FWD, EW_RES_BWD, EW_ZERO };

struct ew_job {
	int op;
	float *out, *out2;
	const float *in1, *in2;
	size_t n;
};

/* Every element is computed the same way whatever the split (no FMA contraction, the
 * vector and scalar paths of a clone round alike): the bits do not depend on threads. */
static void ew_job(void *va, int tid, int nth)
{
	struct ew_job *a = va;
	size_t lo, hi;
	split_aligned(a->n, 64, tid, nth, &lo, &hi);
	switch (a->op) {
	case EW_GELU_FWD:
		gelu_forward_range(a->out, a->in1, lo, hi);
		break;
	case EW_GELU_BWD:
		gelu_backward_range(a->out, a->in1, a->in2, lo, hi);
		break;
	case EW_GELU_FWD_D:
		gelu_forward_d_range(a->out, a->out2, lo, hi);
		break;
	case EW_MUL:
		for (size_t i = lo; i < hi; i++)
			a->out[i] = a->in1[i] * a->in2[i];
		break;
	case EW_RES_FWD:
		for (size_t i = lo; i < hi; i++)
			a->out[i] = a->in1[i] + a->in2[i];
		break;
	case EW_RES_BWD:
		for (size_t i = lo; i < hi; i++) {
			a->out[i] += a->in1[i];
			a->out2[i] += a->in1[i];
		}
		break;
	case EW_ZERO:
		if (hi > lo)
			memset(a->out + lo, 0, (hi - lo) * sizeof(float));
		break;
	}
}

void gelu_forward_pool(cs_pool *pool, float *out, const float *inp, int N)
{
	struct ew_job a = { .op = EW_GELU_FWD, .out = out, .in1 = inp, .n = (size_t)N };
	cs_pool_run(pool, ew_job, &a);
}

void gelu_forward(float *out, const float *inp, int N)
{
	gelu_forward_pool(NULL, out, inp, N);
}

/* out = GELU(xd); xd = GELU'(xd) */
static void gelu_forward_d_pool(cs_pool *pool, float *out, float *xd, size_t n)
{
	struct ew_job a = { .op = EW_GELU_FWD_D, .out = out, .out2 = xd, .n = n };
	cs_pool_run(pool, ew_job, &a);
}

/* dinp = GELU'(x) dout from the derivative gelu_forward_d_pool left */
static void gelu_backward_d_pool(cs_pool *pool, float *dinp, const float *d, const float *dout,
				 size_t n)
{
	struct ew_job a = { .op = EW_MUL, .out = dinp, .in1 = d, .in2 = dout, .n = n };
	cs_pool_run(pool, ew_job, &a);
}

void gelu_backward_pool(cs_pool *pool, float *dinp, const float *inp, const float *dout, int N)
{
	struct ew_job a = { .op = EW_GELU_BWD, .out = dinp, .in1 = inp, .in2 = dout,
			    .n = (size_t)N };
	cs_pool_run(pool, ew_job, &a);
}

void gelu_backward(float *dinp, const float *inp, const float *dout, int N)
{
	gelu_backward_pool(NULL, dinp, inp, dout, N);
}

/* ---- residual ----------------------------------------------------------------------- */

void residual_forward_pool(cs_pool *pool, float *out, const float *inp1, const float *inp2,
			   int N)
{
	struct ew_job a = { .op = EW_RES_FWD, .out = out, .in1 = inp1, .in2 = inp2,
			    .n = (size_t)N };
	cs_pool_run(pool, ew_job, &a);
}

void residual_forward(float *out, const float *inp1, const float *inp2, int N)
{
	residual_forward_pool(NULL, out, inp1, inp2, N);
}

void residual_backward_pool(cs_pool *pool, float *dinp1, float *dinp2, const float *dout,
			    int N)
{
	struct ew_job a = { .op = EW_RES_BWD, .out = dinp1, .out2 = dinp2, .in1 = dout,
			    .n = (size_t)N };
	cs_pool_run(pool, ew_job, &a);
}

void residual_backward(float *dinp1, float *dinp2, const float *dout, int N)
{
	residual_backward_pool(NULL, dinp1, dinp2, dout, N);
}

static void zero_pool(cs_pool *pool, float *out, size_t n)
{
	struct ew_job a = { .op = EW_ZERO, .out = out, .n = n };
	cs_pool_run(pool, ew_job, &a);
}

/* ---- softmax + cross-entropy -------------------------------------------------------- */

struct sce_job {
	float *probs, *losses, *dlogits;
	const float *logits, *cprobs;
	const int *targets;
	float dloss;
	int N, V;
};

/* p [V] = softmax(l [V]) as the attention's rows: lane-wise max and sum (fixed order, the
 * same bits in every clone) and the vectorizable cs_exp_nonpos (libm's scalar expf was most
 * of it); cs_exp_nonpos takes arguments below -87 at -87, which no sum >= 1 can tell from
 * the exact value. */
static ROW_CLONES void softmax_row(float *p, const float *l, int V)
{
	int nv = V / LANES * LANES;
	float m[LANES];
	for (int v = 0; v < LANES; v++)
		m[v] = -INFINITY;
	for (int i = 0; i < nv; i += LANES)
		for (int v = 0; v < LANES; v++)
			m[v] = l[i + v] > m[v] ? l[i + v] : m[v];
	for (int i = nv; i < V; i++)
		m[i - nv] = l[i] > m[i - nv] ? l[i] : m[i - nv];
	float maxv = m[0];
	for (int v = 1; v < LANES; v++)
		maxv = m[v] > maxv ? m[v] : maxv;
	float s[LANES] = { 0 };
	for (int i = 0; i < nv; i += LANES)
		for (int v = 0; v < LANES; v++) {
			float e = cs_exp_nonpos(l[i + v] - maxv);
			p[i + v] = e;
			s[v] += e;
		}
	for (int i = nv; i < V; i++) {
		float e = cs_exp_nonpos(l[i] - maxv);
		p[i] = e;
		s[i - nv] += e;
	}
	float inv = 1.0f / lane_total(s);
	for (int i = 0; i < V; i++)
		p[i] *= inv;
}

static void sce_forward_job(void *va, int tid, int nth)
{
	struct sce_job *a = va;
	int V = a->V;
	size_t lo, hi;
	cs_split((size_t)a->N, tid, nth, &lo, &hi);
	for (size_t n = lo; n < hi; n++) {
		float *p = a->probs + n * V;
		softmax_row(p, a->logits + n * V, V);
		if (a->losses && a->targets)
			a->losses[n] = -logf(p[a->targets[n]]);
	}
}

void softmax_crossentropy_forward_pool(cs_pool *pool, float *probs, float *losses,
				       const float *logits, const int *targets, int N, int V)
{
	struct sce_job a = { .probs = probs, .losses = losses, .logits = logits,
			     .targets = targets, .N = N, .V = V };
	cs_pool_run(pool, sce_forward_job, &a);
}

void softmax_crossentropy_forward(float *probs, float *losses, const float *logits,
				  const int *targets, int N, int V)
{
	softmax_crossentropy_forward_pool(NULL, probs, losses, logits, targets, N, V);
}

static void sce_backward_job(void *va, int tid, int nth)
{
	struct sce_job *a = va;
	int V = a->V;
	float dloss = a->dloss;
	size_t lo, hi;
	cs_split((size_t)a->N, tid, nth, &lo, &hi);
	for (size_t n = lo; n < hi; n++) {
		const float *p = a->cprobs + n * V;
		float *d = a->dlogits + n * V;
		for (int i = 0; i < V; i++)
			d[i] = p[i] * dloss;
		d[a->targets[n]] -= dloss;
	}
}

void softmax_crossentropy_backward_pool(cs_pool *pool, float *dlogits, const float *probs,
					const int *targets, float dloss, int N, int V)
{
	struct sce_job a = { .dlogits = dlogits, .cprobs = probs, .targets = targets,
			     .dloss = dloss, .N = N, .V = V };
	cs_pool_run(pool, sce_backward_job, &a);
}

void softmax_crossentropy_backward(float *dlogits, const float *probs, const int *targets,
				   float dloss, int N, int V)
{
	softmax_crossentropy_backward_pool(NULL, dlogits, probs, targets, dloss, N, V);
}

/* ---- token-minor MLP activations ------------------------------------------------------ */

struct tm_job {
	float *y, *g;
	float *db;
	const float *b, *d;
	int rows, BT, ld;
};

/* g = GELU(y + b) and y = GELU'(y + b) on the BT tokens of y and g, blocked token-minor
 * [nblk][rows][ENG_TB] (engine.h, ENG_TM_BLOCKED), b [rows] (padding tokens stay zero in
 * both; y keeps the derivative, as gelu_forward_d_range): one pass over rows lo..hi-1 of
 * every block */
static GELU_CLONES void tm_bias_gelu_rows(struct tm_job *a, size_t lo, size_t hi)
{
	size_t rows = (size_t)a->rows;
	for (int t0 = 0; t0 < a->BT; t0 += ENG_TB) {
		int nt = a->BT - t0 < ENG_TB ? a->BT - t0 : ENG_TB;
		size_t blk = (size_t)t0 / ENG_TB * rows;
		for (size_t i = lo; i < hi; i++) {
			float *restrict y = a->y + (blk + i) * ENG_TB;
			float *restrict g = a->g + (blk + i) * ENG_TB;
			float b = a->b[i];
			for (int t = 0; t < nt; t++) {
				float gv, dv;
				gelu_gd(y[t] + b, &gv, &dv);
				y[t] = dv;
				g[t] = gv;
			}
			for (int t = nt; t < ENG_TB; t++)
				g[t] = 0.0f;
		}
	}
}

/* rows split */
static void tm_bias_gelu_job(void *va, int tid, int nth)
{
	struct tm_job *a = va;
	size_t lo, hi;
	cs_split((size_t)a->rows, tid, nth, &lo, &hi);
	tm_bias_gelu_rows(a, lo, hi);
}

static ROW_CLONES void tm_bias_grad_rows(struct tm_job *a, size_t lo, size_t hi)
{
	int BT = a->BT, nv = BT / LANES * LANES;
	for (size_t i = lo; i < hi; i++) {
		const float *d = a->d + i * a->ld;
		float l[LANES] = { 0 };
		for (int t = 0; t < nv; t += LANES)
			for (int v = 0; v < LANES; v++)
				l[v] += d[t + v];
		for (int t = nv; t < BT; t++)
			l[t - nv] += d[t];
		a->db[i] += lane_total(l);
	}
}

/* db [rows] += the sum over the BT tokens of each row of d [rows][ld]; rows split */
static void tm_bias_grad_job(void *va, int tid, int nth)
{
	struct tm_job *a = va;
	size_t lo, hi;
	cs_split((size_t)a->rows, tid, nth, &lo, &hi);
	tm_bias_grad_rows(a, lo, hi);
}

void bias_grad_tm_pool(cs_pool *pool, float *db, const float *d, int rows, int BT, int ld)
{
	struct tm_job tj = { .db = db, .d = d, .rows = rows, .BT = BT, .ld = ld };
	cs_pool_run(pool, tm_bias_grad_job, &tj);
}

/* The floats of each block's LayerNorm output when token-minor: [C][ld] rows, or blocked
 * with the blocked residual stream, whichever is larger. */
static size_t tm_ln_size(const gpt *m, int ld, size_t BT)
{
	size_t C1 = (size_t)m->cfg.n_embd, rows = C1 * (size_t)ld;
	size_t blk = eng_blk_size((int)C1, (int)BT);
	return rows > blk ? rows : blk;
}

/* Room for the token-minor activations of BT tokens (rows of ld, the MLP's hidden ones
 * blocked), and with res the blocked residual stream; fresh memory is zeroed, the padding
 * tokens of every row stay so. */
static int tm_reserve(gpt *m, int ld, size_t BT, int res)
{
	size_t L = m->cfg.n_layer, C4 = 4 * (size_t)m->cfg.n_embd, C3 = 3 * (size_t)m->cfg.n_embd;
	size_t C1 = (size_t)m->cfg.n_embd, hsz = eng_blk_size((int)C4, (int)BT);
	size_t lnsz = tm_ln_size(m, ld, BT), rsz = eng_blk_size((int)C1, (int)BT);
	size_t need = (2 * L + 1) * hsz + ((L + 1) * C3 + L * C1) * (size_t)ld + 2 * L * lnsz;
	if (res)
		need += (2 * L + 3) * rsz + C1 * (size_t)ld;
	if (need > m->tm_cap) {
		/* rows start on cache lines (ld is a multiple of 16), so threads writing
		 * different token blocks of a row never share a line */
		float *p = aligned_alloc(64, need * sizeof(float));
		if (!p)
			return CS_ERR_NO_MEM;
		memset(p, 0, need * sizeof(float));
		free(m->tm_memory);
		m->tm_memory = p;
		m->tm_cap = need;
	}
	m->tm_fch = m->tm_memory;
	m->tm_fch_gelu = m->tm_fch + L * hsz;
	m->tm_dfch = m->tm_fch_gelu + L * hsz;
	m->tm_qkv = m->tm_dfch + hsz;
	m->tm_dqkv = m->tm_qkv + L * C3 * (size_t)ld;
	m->tm_ln1 = m->tm_dqkv + C3 * (size_t)ld;
	m->tm_ln2 = m->tm_ln1 + L * lnsz;
	m->tm_atty = m->tm_ln2 + L * lnsz;
	m->tm_res = res ? m->tm_atty + L * C1 * (size_t)ld : NULL;
	m->tm_res2 = res ? m->tm_res + (L + 1) * rsz : NULL;
	m->tm_dres = res ? m->tm_res2 + L * rsz : NULL;
	m->tm_dln = res ? m->tm_dres + rsz : NULL;
	m->tm_datt = res ? m->tm_dln + rsz : NULL;
	return CS_OK;
}

/* ---- the host linear hook ----------------------------------------------------------- */

/* ctx is the cs_pool to split over (NULL: the caller's thread). */
static int host_lin_forward(void *ctx, float *y, const float *x, const float *w, int layer,
			    int proj, int BT, int IC, int OC)
{
	(void)layer, (void)proj;
	matmul_forward_pool(ctx, y, x, w, NULL, BT, IC, OC);
	return CS_OK;
}

static int host_lin_backward(void *ctx, float *dx, float *dw, const float *dy, const float *x,
			     const float *w, int layer, int proj, int BT, int IC, int OC,
			     int want_dense_dw)
{
	(void)layer, (void)proj, (void)want_dense_dw;
	struct mm_job a = { .op = MM_DINP, .out = dx, .weight = w, .dout = dy, .beta = 0.0f,
			    .N = BT, .C = IC, .OC = OC };
	cs_pool_run(ctx, matmul_job, &a);
	a = (struct mm_job){ .op = MM_DW, .out = dw, .inp = x, .dout = dy, .N = BT, .C = IC,
			     .OC = OC };
	cs_pool_run(ctx, matmul_job, &a);
	return CS_OK;
}

const gpt_linear_ops gpt_linear_host = {
	.forward = host_lin_forward,
	.backward = host_lin_backward,
};

/* ---- the model ---------------------------------------------------------------------- */

int gpt_config_check(const gpt_config *c, char *err, size_t errlen)
{
	if (c->n_layer < 1 || c->n_layer > 256) {
		snprintf(err, errlen, "model.n_layer: %d is not in [1, 256]", c->n_layer);
		return CS_ERR_CONFIG;
	}
	if (c->n_head < 1 || c->n_embd < 1 || c->n_embd > 65536 || c->n_embd % c->n_head) {
		snprintf(err, errlen, "model.n_head: n_embd %d is not divisible by n_head %d",
			 c->n_embd, c->n_head);
		return CS_ERR_CONFIG;
	}
	if (c->block_size < 1 || c->block_size > 65536) {
		snprintf(err, errlen, "model.block_size: %d is not in [1, 65536]", c->block_size);
		return CS_ERR_CONFIG;
	}
	if (c->vocab_size < 256 || c->vocab_size > 65536) {
		snprintf(err, errlen,
			 "model.vocab_size: %d is not in [256, 65536] (tokens are bytes)",
			 c->vocab_size);
		return CS_ERR_CONFIG;
	}
	return CS_OK;
}

static void add_tensor(gpt *m, const char *name, int ndim, int s0, int s1, size_t *off,
		       int layer, int proj)
{
	gpt_tensor *t = &m->tensors[m->num_tensors++];
	snprintf(t->name, sizeof t->name, "%s", name);
	t->ndim = ndim;
	t->shape[0] = s0;
	t->shape[1] = ndim > 1 ? s1 : 1;
	t->numel = (size_t)s0 * (ndim > 1 ? (size_t)s1 : 1);
	t->offset = *off;
	t->layer = layer;
	t->proj = proj;
	*off += t->numel;
}

/* Names each slice of the llm.c parameter arrays, in a fixed order. */
static void build_tensors(gpt *m)
{
	const gpt_config *c = &m->cfg;
	size_t L = c->n_layer, C = c->n_embd, V = c->vocab_size, maxT = c->block_size;
	size_t kind_size[P_NKINDS] = {
		V * C, maxT * C, L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C,
		L * C, L * C, L * 4 * C * C, L * 4 * C, L * 4 * C * C, L * C, C, C,
	};
	size_t kind_off[P_NKINDS], off = 0;
	for (int k = 0; k < P_NKINDS; k++) {
		kind_off[k] = off;
		off += kind_size[k];
	}
	m->num_params = off;
	m->num_tensors = 0;
	char name[40];
	size_t o;
	o = kind_off[P_WTE];
	add_tensor(m, "wte.weight", 2, (int)V, (int)C, &o, -1, -1);
	o = kind_off[P_WPE];
	add_tensor(m, "wpe.weight", 2, (int)maxT, (int)C, &o, -1, -1);
	for (int l = 0; l < (int)L; l++) {
		struct {
			int kind;
			const char *fmt;
			int ndim, s0, s1, proj;
		} per[] = {
			{ P_LN1W, "h.%d.ln_1.weight", 1, (int)C, 0, -1 },
			{ P_LN1B, "h.%d.ln_1.bias", 1, (int)C, 0, -1 },
			{ P_QKVW, "h.%d.attn.qkv.weight", 2, (int)(3 * C), (int)C, GPT_QKV },
			{ P_QKVB, "h.%d.attn.qkv.bias", 1, (int)(3 * C), 0, -1 },
			{ P_ATTPROJW, "h.%d.attn.proj.weight", 2, (int)C, (int)C, GPT_ATTN_PROJ },
			{ P_ATTPROJB, "h.%d.attn.proj.bias", 1, (int)C, 0, -1 },
			{ P_LN2W, "h.%d.ln_2.weight", 1, (int)C, 0, -1 },
			{ P_LN2B, "h.%d.ln_2.bias", 1, (int)C, 0, -1 },
			{ P_FCW, "h.%d.mlp.fc.weight", 2, (int)(4 * C), (int)C, GPT_FC },
			{ P_FCB, "h.%d.mlp.fc.bias", 1, (int)(4 * C), 0, -1 },
			{ P_FCPROJW, "h.%d.mlp.proj.weight", 2, (int)C, (int)(4 * C), GPT_FC_PROJ },
			{ P_FCPROJB, "h.%d.mlp.proj.bias", 1, (int)C, 0, -1 },
		};
		for (size_t i = 0; i < sizeof per / sizeof per[0]; i++) {
			size_t n = (size_t)per[i].s0 * (per[i].ndim > 1 ? (size_t)per[i].s1 : 1);
			o = kind_off[per[i].kind] + (size_t)l * n;
			snprintf(name, sizeof name, per[i].fmt, l);
			add_tensor(m, name, per[i].ndim, per[i].s0, per[i].s1, &o, l,
				   per[i].proj);
		}
	}
	o = kind_off[P_LNFW];
	add_tensor(m, "ln_f.weight", 1, (int)C, 0, &o, -1, -1);
	o = kind_off[P_LNFB];
	add_tensor(m, "ln_f.bias", 1, (int)C, 0, &o, -1, -1);

	float **pp[P_NKINDS] = {
		&m->params.wte, &m->params.wpe, &m->params.ln1w, &m->params.ln1b,
		&m->params.qkvw, &m->params.qkvb, &m->params.attprojw, &m->params.attprojb,
		&m->params.ln2w, &m->params.ln2b, &m->params.fcw, &m->params.fcb,
		&m->params.fcprojw, &m->params.fcprojb, &m->params.lnfw, &m->params.lnfb,
	};
	float **gp[P_NKINDS] = {
		&m->grads.wte, &m->grads.wpe, &m->grads.ln1w, &m->grads.ln1b,
		&m->grads.qkvw, &m->grads.qkvb, &m->grads.attprojw, &m->grads.attprojb,
		&m->grads.ln2w, &m->grads.ln2b, &m->grads.fcw, &m->grads.fcb,
		&m->grads.fcprojw, &m->grads.fcprojb, &m->grads.lnfw, &m->grads.lnfb,
	};
	for (int k = 0; k < P_NKINDS; k++) {
		*pp[k] = m->params_memory + kind_off[k];
		*gp[k] = m->grads_memory + kind_off[k];
	}
}

int gpt_create(gpt *m, const gpt_config *cfg, int B, int T)
{
	char err[128];
	memset(m, 0, sizeof *m);
	if (gpt_config_check(cfg, err, sizeof err) || B < 1 || T < 1 || T > cfg->block_size)
		return CS_ERR_INVALID;
	m->cfg = *cfg;
	m->B = B;
	m->T = T;
	m->mean_loss = -1.0f;
	m->lin = &gpt_linear_host;
	size_t L = cfg->n_layer, C = cfg->n_embd, V = cfg->vocab_size, NH = cfg->n_head;
	size_t BT = (size_t)B * T;
	m->tensors = calloc(4 + 12 * L, sizeof *m->tensors);
	if (!m->tensors)
		return CS_ERR_NO_MEM;
	m->params_memory = NULL;
	/* sizes first (build_tensors needs the buffers only to set pointers) */
	{
		size_t maxT = cfg->block_size;
		m->num_params = V * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C;
	}
	m->params_memory = calloc(m->num_params, sizeof(float));
	m->grads_memory = calloc(m->num_params, sizeof(float));
	size_t act_sizes[] = {
		BT * C, L * BT * C, L * BT, L * BT, L * BT * 3 * C, L * BT * C,
		L * B * NH * T * T, L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT,
		L * BT * 4 * C, L * BT * 4 * C, L * BT * C, L * BT * C, BT * C, BT, BT,
		BT * V, BT * V, BT,
	};
	size_t n_acts = 0;
	for (size_t i = 0; i < sizeof act_sizes / sizeof act_sizes[0]; i++)
		n_acts += act_sizes[i];
	m->acts_memory = malloc(n_acts * sizeof(float));
	size_t n_bwd = BT * C * 3 + BT * 3 * C + BT * 4 * C * 2 + BT * V + (size_t)T * T;
	m->bwd_memory = malloc(n_bwd * sizeof(float));
	m->inputs = malloc(BT * sizeof(int));
	m->targets = malloc(BT * sizeof(int));
	m->tm_ld = calloc(3 * L, sizeof(int));
	if (!m->params_memory || !m->grads_memory || !m->acts_memory || !m->bwd_memory ||
	    !m->inputs || !m->targets || !m->tm_ld) {
		gpt_free(m);
		return CS_ERR_NO_MEM;
	}
	build_tensors(m);
	float **ap[] = {
		&m->acts.encoded, &m->acts.ln1, &m->acts.ln1_mean, &m->acts.ln1_rstd,
		&m->acts.qkv, &m->acts.atty, &m->acts.att, &m->acts.attproj,
		&m->acts.residual2, &m->acts.ln2, &m->acts.ln2_mean, &m->acts.ln2_rstd,
		&m->acts.fch, &m->acts.fch_gelu, &m->acts.fcproj, &m->acts.residual3,
		&m->acts.lnf, &m->acts.lnf_mean, &m->acts.lnf_rstd, &m->acts.logits,
		&m->acts.probs, &m->acts.losses,
	};
	float *p = m->acts_memory;
	for (size_t i = 0; i < sizeof ap / sizeof ap[0]; i++) {
		*ap[i] = p;
		p += act_sizes[i];
	}
	p = m->bwd_memory;
	m->dresidual = p, p += BT * C;
	m->dln = p, p += BT * C;
	m->datty = p, p += BT * C;
	m->dqkv = p, p += BT * 3 * C;
	m->dfch = p, p += BT * 4 * C;
	m->dfch_gelu = p, p += BT * 4 * C;
	m->dlogits = p, p += BT * V;
	m->datt = p;
	return CS_OK;
}

void gpt_free(gpt *m)
{
	free(m->tensors);
	free(m->params_memory);
	free(m->grads_memory);
	free(m->acts_memory);
	free(m->bwd_memory);
	free(m->inputs);
	free(m->targets);
	free(m->att_scratch);
	free(m->tm_ld);
	free(m->tm_memory);
	memset(m, 0, sizeof *m);
}

int gpt_find_tensor(const gpt *m, const char *name)
{
	for (int i = 0; i < m->num_tensors; i++)
		if (!strcmp(m->tensors[i].name, name))
			return i;
	return -1;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Standard normal from a counter-based stream (Box-Muller, both halves used). */
static void fill_normal(float *out, size_t n, float std, uint64_t key)
{
	uint64_t s = key;
	for (size_t i = 0; i < n; i += 2) {
		double u1 = ((splitmix64(&s) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
		double u2 = (splitmix64(&s) >> 11) * (1.0 / 9007199254740992.0);
		double r = sqrt(-2.0 * log(u1));
		out[i] = (float)(std * r * cos(2.0 * M_PI * u2));
		if (i + 1 < n)
			out[i + 1] = (float)(std * r * sin(2.0 * M_PI * u2));
	}
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

void gpt_init_params(gpt *m, uint64_t seed)
{
	float resid_std = 0.02f / sqrtf(2.0f * m->cfg.n_layer);
	for (int i = 0; i < m->num_tensors; i++) {
		const gpt_tensor *t = &m->tensors[i];
		float *w = m->params_memory + t->offset;
		size_t len = strlen(t->name);
		int is_bias = len > 5 && !strcmp(t->name + len - 5, ".bias");
		if (strstr(t->name, "ln_") && !is_bias) {
			for (size_t j = 0; j < t->numel; j++)
				w[j] = 1.0f;
		} else if (is_bias) {
			memset(w, 0, t->numel * sizeof(float));
		} else {
			float std = (t->proj == GPT_ATTN_PROJ || t->proj == GPT_FC_PROJ) ? resid_std
											  : 0.02f;
			fill_normal(w, t->numel, std, seed * 0x2545f4914f6cdd1dull ^ name_hash(t->name));
		}
	}
}


/* Attention needs attention_scratch_floats per thread; grown when the pool grows. */
static int att_scratch(gpt *m, float **out)
{
	int n = cs_pool_threads(m->pool);
	if (n > m->att_scratch_threads) {
		size_t per = attention_scratch_floats(m->T, m->cfg.n_embd, m->cfg.n_head);
		float *s = malloc((size_t)n * per * sizeof(float));
		if (!s)
			return CS_ERR_NO_MEM;
		free(m->att_scratch);
		m->att_scratch = s;
		m->att_scratch_threads = n;
	}
	*out = m->att_scratch;
	return CS_OK;
}

/* The projection hook, with the host's own one run on the model's pool. */
static int lin_forward(gpt *m, float *y, const float *x, const float *w, int layer, int proj,
		       int BT, int IC, int OC)
{
	void *ctx = m->lin == &gpt_linear_host ? (void *)m->pool : m->lin_ctx;
	return m->lin->forward(ctx, y, x, w, layer, proj, BT, IC, OC);
}

static int lin_backward(gpt *m, float *dx, float *dw, const float *dy, const float *x,
			const float *w, int layer, int proj, int BT, int IC, int OC)
{
	void *ctx = m->lin == &gpt_linear_host ? (void *)m->pool : m->lin_ctx;
	return m->lin->backward(ctx, dx, dw, dy, x, w, layer, proj, BT, IC, OC,
				m->want_dense_dw);
}

int gpt_set_batch(gpt *m, const int *inputs, const int *targets, int B, int T)
{
	int V = m->cfg.vocab_size;
	if (B < 1 || T < 1 || B * T > m->B * m->T || T > m->T)
		return CS_ERR_INVALID;
	for (int i = 0; i < B * T; i++)
		if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V)))
			return CS_ERR_INVALID;
	m->cur_B = B;
	m->cur_T = T;
	memcpy(m->inputs, inputs, sizeof(int) * B * T);
	if (targets)
		memcpy(m->targets, targets, sizeof(int) * B * T);
	return CS_OK;
}

/* The ld of the blocked residual stream (gpt_linear_ops.res_blocked) for BT tokens: every
 * block's four projections token-minor with one ld; else 0. */
static int res_blocked_ld(gpt *m, int BT)
{
	const gpt_linear_ops *o = m->lin;
	if (!o->res_blocked || !o->qkv_ld || !o->attn_ld || !o->mlp_ld)
		return 0;
	int ld = 0;
	for (int l = 0; l < m->cfg.n_layer; l++) {
		int q = o->qkv_ld(m->lin_ctx, l, BT);
		if (q <= 0 || (ld && q != ld) || o->attn_ld(m->lin_ctx, l, BT) != q ||
		    o->mlp_ld(m->lin_ctx, l, BT) != q)
			return 0;
		ld = q;
	}
	return ld;
}

/*
 * The blocks with the blocked residual stream (res_blocked_ld): the embeddings are blocked
 * once, each LayerNorm reads the stream and writes its output blocked, attn.proj and
 * mlp.proj add the bias and the residual into it as they write their blocks, and the last
 * block's output is made token-major once for the final LayerNorm. The expressions are the
 * token-major path's, so the bits are too.
 */
static int forward_blocks_blk(gpt *m, int B, int T, int ld, float *scratch)
{
	const gpt_config *c = &m->cfg;
	int L = c->n_layer, C = c->n_embd, NH = c->n_head;
	size_t BT = (size_t)B * T, C1 = C, C3 = 3 * (size_t)C, C4 = 4 * (size_t)C;
	gpt_params *p = &m->params;
	gpt_acts *a = &m->acts;
	cs_pool *pool = m->pool;
	int rc = tm_reserve(m, ld, BT, 1);
	if (rc)
		return rc;
	size_t rsz = eng_blk_size(C, (int)BT), lnsz = tm_ln_size(m, ld, BT);
	size_t hsz = eng_blk_size((int)C4, (int)BT);
	tm_block_pool(pool, m->tm_res, a->encoded, (int)BT, C);
	for (int l = 0; l < L; l++) {
		m->tm_ld[l] = m->tm_ld[L + l] = m->tm_ld[2 * L + l] = ld;
		float *resin = m->tm_res + l * rsz, *res2 = m->tm_res2 + l * rsz;
		float *res3 = m->tm_res + (l + 1) * rsz;
		float *ln1t = m->tm_ln1 + l * lnsz, *ln2t = m->tm_ln2 + l * lnsz;
		float *qkvt = m->tm_qkv + l * C3 * ld, *attyt = m->tm_atty + l * C1 * ld;
		float *fcht = m->tm_fch + l * hsz, *gelut = m->tm_fch_gelu + l * hsz;
		float *att = a->att + (size_t)l * B * NH * T * T;
		layernorm_forward_blk_pool(pool, ln1t, a->ln1_mean + l * BT, a->ln1_rstd + l * BT,
					   resin, p->ln1w + l * C1, p->ln1b + l * C1, (int)BT, C);
		/* qkv's bias in its output pass */
		rc = m->lin->forward_tm(m->lin_ctx, qkvt, NULL, p->qkvb + l * C3, ln1t,
					p->qkvw + l * C3 * C, l, GPT_QKV, (int)BT, C, 3 * C, ld, 1);
		if (rc)
			return rc;
		attention_forward_tmo_pool(pool, attyt, att, qkvt, ld, scratch, B, T, C, NH);
		rc = m->lin->forward_tm(m->lin_ctx, res2, resin, p->attprojb + l * C1, attyt,
					p->attprojw + l * C1 * C, l, GPT_ATTN_PROJ, (int)BT, C, C,
					ld, 1);
		if (rc)
			return rc;
		layernorm_forward_blk_pool(pool, ln2t, a->ln2_mean + l * BT, a->ln2_rstd + l * BT,
					   res2, p->ln2w + l * C1, p->ln2b + l * C1, (int)BT, C);
		rc = m->lin->forward_tm(m->lin_ctx, fcht, NULL, NULL, ln2t, p->fcw + l * C4 * C, l,
					GPT_FC, (int)BT, C, 4 * C, ld, 1);
		if (rc)
			return rc;
		struct tm_job tj = { .y = fcht, .g = gelut, .b = p->fcb + l * C4, .rows = (int)C4,
				      .BT = (int)BT, .ld = ld };
		cs_pool_run(pool, tm_bias_gelu_job, &tj);
		rc = m->lin->forward_tm(m->lin_ctx, res3, res2, p->fcprojb + l * C1, gelut,
					p->fcprojw + l * C1 * C4, l, GPT_FC_PROJ, (int)BT, 4 * C, C,
					ld, 1);
		if (rc)
			return rc;
	}
	tm_unblock_pool(pool, a->residual3 + (L - 1) * BT * C, m->tm_res + L * rsz, (int)BT, C);
	return CS_OK;
}

/* The blocks' backward with the blocked residual stream: dresidual (token-major, from the
 * final LayerNorm) is blocked once and made token-major again for the embeddings. */
static int backward_blocks_blk(gpt *m, float *scratch)
{
	const gpt_config *c = &m->cfg;
	int L = c->n_layer, C = c->n_embd, NH = c->n_head;
	int B = m->cur_B, T = m->cur_T, ld = m->tm_ld[0], rc;
	size_t BT = (size_t)B * T, C1 = C, C3 = 3 * (size_t)C, C4 = 4 * (size_t)C;
	gpt_params *p = &m->params, *g = &m->grads;
	gpt_acts *a = &m->acts;
	cs_pool *pool = m->pool;
	size_t rsz = eng_blk_size(C, (int)BT), lnsz = tm_ln_size(m, ld, BT);
	size_t hsz = eng_blk_size((int)C4, (int)BT);
	int dd = m->want_dense_dw;
	tm_block_pool(pool, m->tm_dres, m->dresidual, (int)BT, C);
	for (int l = L - 1; l >= 0; l--) {
		const float *resin = m->tm_res + l * rsz, *res2 = m->tm_res2 + l * rsz;
		const float *ln1t = m->tm_ln1 + l * lnsz, *ln2t = m->tm_ln2 + l * lnsz;
		const float *qkvt = m->tm_qkv + l * C3 * ld, *attyt = m->tm_atty + l * C1 * ld;
		const float *fcht = m->tm_fch + l * hsz, *gelut = m->tm_fch_gelu + l * hsz;
		const float *att = a->att + (size_t)l * B * NH * T * T;
		/* mlp.proj's backward gives GELU's (dfch = GELU' dfch_gelu) and its bias
		 * gradient, fc's its own */
		rc = m->lin->backward_tm(m->lin_ctx, m->tm_dfch, fcht, g->fcprojw + l * C1 * C4,
					 g->fcprojb + l * C1, m->tm_dres, gelut,
					 p->fcprojw + l * C1 * C4, l, GPT_FC_PROJ, (int)BT, (int)C4,
					 C, ld, 1, dd);
		if (rc)
			return rc;
		rc = m->lin->backward_tm(m->lin_ctx, m->tm_dln, NULL, g->fcw + l * C4 * C,
					 g->fcb + l * C4, m->tm_dfch, ln2t, p->fcw + l * C4 * C, l,
					 GPT_FC, (int)BT, C, (int)C4, ld, 1, dd);
		if (rc)
			return rc;
		layernorm_backward_blk_pool(pool, m->tm_dres, g->ln2w + l * C1, g->ln2b + l * C1,
					    m->tm_dln, res2, p->ln2w + l * C1, a->ln2_mean + l * BT,
					    a->ln2_rstd + l * BT, (int)BT, C);
		/* attention's dout token-minor, read in place */
		rc = m->lin->backward_tm(m->lin_ctx, m->tm_datt, NULL, g->attprojw + l * C1 * C,
					 g->attprojb + l * C1, m->tm_dres, attyt,
					 p->attprojw + l * C1 * C, l, GPT_ATTN_PROJ, (int)BT, C, C,
					 ld, 1, dd);
		if (rc)
			return rc;
		attention_backward_tmd_pool(pool, m->tm_dqkv, m->tm_datt, qkvt, ld, att, scratch, B,
					    T, C, NH);
		rc = m->lin->backward_tm(m->lin_ctx, m->tm_dln, NULL, g->qkvw + l * C3 * C,
					 g->qkvb + l * C3, m->tm_dqkv, ln1t, p->qkvw + l * C3 * C,
					 l, GPT_QKV, (int)BT, C, (int)C3, ld, 1, dd);
		if (rc)
			return rc;
		layernorm_backward_blk_pool(pool, m->tm_dres, g->ln1w + l * C1, g->ln1b + l * C1,
					    m->tm_dln, resin, p->ln1w + l * C1, a->ln1_mean + l * BT,
					    a->ln1_rstd + l * BT, (int)BT, C);
		if (m->grads_ready && (rc = m->grads_ready(m->grads_ready_ctx, l)))
			return rc;
	}
	tm_unblock_pool(pool, m->dresidual, m->tm_dres, (int)BT, C);
	return CS_OK;
}

int gpt_forward(gpt *m, const int *inputs, const int *targets, int B, int T, float *loss)
{
	const gpt_config *c = &m->cfg;
	int L = c->n_layer, C = c->n_embd, NH = c->n_head, V = c->vocab_size;
	int rc0 = gpt_set_batch(m, inputs, targets, B, T);
	if (rc0)
		return rc0;
	size_t BT = (size_t)B * T;
	gpt_params *p = &m->params;
	gpt_acts *a = &m->acts;
	cs_pool *pool = m->pool;
	float *scratch;
	int rc = att_scratch(m, &scratch);
	if (rc)
		return rc;

	encoder_forward_pool(pool, a->encoded, inputs, p->wte, p->wpe, B, T, C);
	int rld = res_blocked_ld(m, (int)BT);
	m->tm_res_on = rld > 0;
	if (rld > 0) {
		rc = forward_blocks_blk(m, B, T, rld, scratch);
		if (rc)
			return rc;
	}
	for (int l = 0; l < L && rld == 0; l++) {
		const float *residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BT * C;
		float *ln1 = a->ln1 + l * BT * C;
		float *ln1_mean = a->ln1_mean + l * BT, *ln1_rstd = a->ln1_rstd + l * BT;
		float *qkv = a->qkv + l * BT * 3 * C;
		float *atty = a->atty + l * BT * C;
		float *att = a->att + (size_t)l * B * NH * T * T;
		float *attproj = a->attproj + l * BT * C;
		float *residual2 = a->residual2 + l * BT * C;
		float *ln2 = a->ln2 + l * BT * C;
		float *ln2_mean = a->ln2_mean + l * BT, *ln2_rstd = a->ln2_rstd + l * BT;
		float *fch = a->fch + l * BT * 4 * C;
		float *fch_gelu = a->fch_gelu + l * BT * 4 * C;
		float *fcproj = a->fcproj + l * BT * C;
		float *residual3 = a->residual3 + l * BT * C;
		size_t C1 = C, C3 = 3 * (size_t)C, C4 = 4 * (size_t)C;

		int qld = m->lin->qkv_ld ? m->lin->qkv_ld(m->lin_ctx, l, (int)BT) : 0;
		m->tm_ld[L + l] = 0;
		if (qld > 0) { /* ln1, q, k, v token-minor */
			rc = tm_reserve(m, qld, BT, 0);
			if (rc)
				return rc;
			m->tm_ld[L + l] = qld;
			float *qkvt = m->tm_qkv + l * C3 * qld;
			float *ln1t = m->tm_ln1 + l * tm_ln_size(m, qld, BT);
			rc = layernorm_forward_tm_pool(pool, ln1t, ln1_mean, ln1_rstd, residual,
						       p->ln1w + l * C1, p->ln1b + l * C1, (int)BT, C,
						       qld);
			if (rc)
				return rc;
			/* qkv's bias in its output pass */
			rc = m->lin->forward_tm(m->lin_ctx, qkvt, NULL, p->qkvb + l * C3, ln1t,
						p->qkvw + l * C3 * C, l, GPT_QKV, (int)BT, C,
						3 * C, qld, 0);
			if (rc)
				return rc;
			int old = m->lin->attn_ld ? m->lin->attn_ld(m->lin_ctx, l, (int)BT) : 0;
			m->tm_ld[2 * L + l] = old == qld ? qld : 0;
		} else {
			m->tm_ld[2 * L + l] = 0;
			layernorm_forward_pool(pool, ln1, ln1_mean, ln1_rstd, residual,
					       p->ln1w + l * C1, p->ln1b + l * C1, (int)BT, C);
			rc = lin_forward(m, qkv, ln1, p->qkvw + l * C3 * C, l, GPT_QKV, (int)BT, C,
					 3 * C);
			if (rc)
				return rc;
			bias_add_pool(pool, qkv, p->qkvb + l * C3, (int)BT, (int)C3);
			attention_forward_pool(pool, atty, att, qkv, scratch, B, T, C, NH);
		}
		int ald = m->tm_ld[2 * L + l];
		if (ald > 0) { /* attention's output token-minor */
			float *attyt = m->tm_atty + l * C1 * ald;
			attention_forward_tmo_pool(pool, attyt, att, m->tm_qkv + l * C3 * ald, ald,
						   scratch, B, T, C, NH);
			/* the bias and the residual add in attn.proj's output pass */
			rc = m->lin->forward_tm(m->lin_ctx, residual2, residual, p->attprojb + l * C1,
						attyt, p->attprojw + l * C1 * C, l, GPT_ATTN_PROJ,
						(int)BT, C, C, ald, 0);
			if (rc)
				return rc;
		} else {
			if (qld > 0)
				attention_forward_tm_pool(pool, atty, att, m->tm_qkv + l * C3 * qld,
							  qld, scratch, B, T, C, NH);
			rc = lin_forward(m, attproj, atty, p->attprojw + l * C1 * C, l,
					 GPT_ATTN_PROJ, (int)BT, C, C);
			if (rc)
				return rc;
			bias_residual_pool(pool, residual2, residual, attproj,
					   p->attprojb + l * C1, (int)BT, C);
		}
		int tld = m->lin->mlp_ld ? m->lin->mlp_ld(m->lin_ctx, l, (int)BT) : 0;
		m->tm_ld[l] = 0;
		if (tld > 0) { /* ln2 and the hidden activations token-minor */
			rc = tm_reserve(m, tld, BT, 0);
			if (rc)
				return rc;
			m->tm_ld[l] = tld;
			size_t hsz = eng_blk_size((int)C4, (int)BT); /* blocked */
			float *fcht = m->tm_fch + l * hsz;
			float *gelut = m->tm_fch_gelu + l * hsz;
			float *ln2t = m->tm_ln2 + l * tm_ln_size(m, tld, BT);
			rc = layernorm_forward_tm_pool(pool, ln2t, ln2_mean, ln2_rstd, residual2,
						       p->ln2w + l * C1, p->ln2b + l * C1, (int)BT, C,
						       tld);
			if (rc)
				return rc;
			rc = m->lin->forward_tm(m->lin_ctx, fcht, NULL, NULL, ln2t,
						p->fcw + l * C4 * C, l, GPT_FC, (int)BT, C, 4 * C,
						tld, 0);
			if (rc)
				return rc;
			struct tm_job tj = { .y = fcht, .g = gelut, .b = p->fcb + l * C4,
					     .rows = (int)C4, .BT = (int)BT, .ld = tld };
			cs_pool_run(pool, tm_bias_gelu_job, &tj);
			/* the bias and the residual add in mlp.proj's output pass */
			rc = m->lin->forward_tm(m->lin_ctx, residual3, residual2,
						p->fcprojb + l * C1, gelut, p->fcprojw + l * C1 * C4,
						l, GPT_FC_PROJ, (int)BT, 4 * C, C, tld, 0);
			if (rc)
				return rc;
		} else {
			layernorm_forward_pool(pool, ln2, ln2_mean, ln2_rstd, residual2,
					       p->ln2w + l * C1, p->ln2b + l * C1, (int)BT, C);
			rc = lin_forward(m, fch, ln2, p->fcw + l * C4 * C, l, GPT_FC, (int)BT, C,
					 4 * C);
			if (rc)
				return rc;
			bias_add_pool(pool, fch, p->fcb + l * C4, (int)BT, (int)C4);
			gelu_forward_d_pool(pool, fch_gelu, fch, BT * C4); /* fch: GELU' */
			rc = lin_forward(m, fcproj, fch_gelu, p->fcprojw + l * C1 * C4, l,
					 GPT_FC_PROJ, (int)BT, 4 * C, C);
			if (rc)
				return rc;
			bias_residual_pool(pool, residual3, residual2, fcproj,
					   p->fcprojb + l * C1, (int)BT, C);
		}
	}
	const float *residual = a->residual3 + (L - 1) * BT * C;
	layernorm_forward_pool(pool, a->lnf, a->lnf_mean, a->lnf_rstd, residual, p->lnfw, p->lnfb,
			       (int)BT, C);
	matmul_forward_pool(pool, a->logits, a->lnf, p->wte, NULL, (int)BT, C, V);
	softmax_crossentropy_forward_pool(pool, a->probs, targets ? a->losses : NULL, a->logits,
					  targets, (int)BT, V);
	if (targets) {
		double sum = 0.0;
		for (size_t i = 0; i < BT; i++)
			sum += a->losses[i];
		m->mean_loss = (float)(sum / BT);
		if (loss)
			*loss = m->mean_loss;
	} else {
		m->mean_loss = -1.0f;
	}
	return CS_OK;
}

void gpt_zero_grad(gpt *m)
{
	zero_pool(m->pool, m->grads_memory, m->num_params);
}

int gpt_backward(gpt *m, float loss_scale)
{
	const gpt_config *c = &m->cfg;
	int L = c->n_layer, C = c->n_embd, NH = c->n_head, V = c->vocab_size;
	int B = m->cur_B, T = m->cur_T;
	if (m->mean_loss < 0.0f)
		return CS_ERR_INVALID; /* no forward with targets */
	size_t BT = (size_t)B * T, C1 = C, C3 = 3 * (size_t)C, C4 = 4 * (size_t)C;
	gpt_params *p = &m->params, *g = &m->grads;
	gpt_acts *a = &m->acts;
	cs_pool *pool = m->pool;
	float *scratch;
	int rc = att_scratch(m, &scratch);
	if (rc)
		return rc;

	softmax_crossentropy_backward_pool(pool, m->dlogits, a->probs, m->targets,
					   loss_scale / (float)BT, (int)BT, V);
	/* the LM head: dln overwritten (sgemm's beta 0: the bits of adding onto zeros, with no
	 * zeroing pass), dwte accumulated */
	struct mm_job lm = { .op = MM_DINP, .out = m->dln, .weight = p->wte, .dout = m->dlogits,
			     .beta = 0.0f, .N = (int)BT, .C = C, .OC = V };
	cs_pool_run(pool, matmul_job, &lm);
	lm = (struct mm_job){ .op = MM_DW, .out = g->wte, .inp = a->lnf, .dout = m->dlogits,
			      .N = (int)BT, .C = C, .OC = V };
	cs_pool_run(pool, matmul_job, &lm);
	zero_pool(pool, m->dresidual, BT * C);
	const float *residual = a->residual3 + (L - 1) * BT * C;
	layernorm_backward_pool(pool, m->dresidual, g->lnfw, g->lnfb, m->dln, residual, p->lnfw,
				a->lnf_mean, a->lnf_rstd, (int)BT, C);

	if (m->tm_res_on) {
		rc = backward_blocks_blk(m, scratch);
		if (rc)
			return rc;
	}
	for (int l = L - 1; l >= 0 && !m->tm_res_on; l--) {
		residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BT * C;
		const float *ln1 = a->ln1 + l * BT * C;
		const float *qkv = a->qkv + l * BT * C3;
		const float *atty = a->atty + l * BT * C;
		const float *att = a->att + (size_t)l * B * NH * T * T;
		const float *residual2 = a->residual2 + l * BT * C;
		const float *ln2 = a->ln2 + l * BT * C;
		const float *fch = a->fch + l * BT * C4;
		const float *fch_gelu = a->fch_gelu + l * BT * C4;

		/* residual3 = residual2 + fcproj: dfcproj is dresidual itself */
		const float *dfcproj = m->dresidual;
		bias_grad_pool(pool, g->fcprojb + l * C1, dfcproj, (int)BT, C);
		int tld = m->tm_ld[l];
		if (tld > 0) { /* the hidden activations token-minor */
			size_t hsz = eng_blk_size((int)C4, (int)BT); /* blocked */
			const float *fcht = m->tm_fch + l * hsz;
			const float *gelut = m->tm_fch_gelu + l * hsz;
			/* GELU's backward (dfch = GELU' dfch_gelu) comes out of mlp.proj's */
			rc = m->lin->backward_tm(m->lin_ctx, m->tm_dfch, fcht,
						 g->fcprojw + l * C1 * C4, NULL, dfcproj, gelut,
						 p->fcprojw + l * C1 * C4, l, GPT_FC_PROJ, (int)BT,
						 (int)C4, C, tld, 0, m->want_dense_dw);
			if (rc)
				return rc;
			/* fc's bias gradient comes out of its weight gradient */
			rc = m->lin->backward_tm(m->lin_ctx, m->dln, NULL, g->fcw + l * C4 * C,
						 g->fcb + l * C4, m->tm_dfch,
						 m->tm_ln2 + l * tm_ln_size(m, tld, BT),
						 p->fcw + l * C4 * C, l, GPT_FC, (int)BT, C,
						 (int)C4, tld, 0, m->want_dense_dw);
		} else {
			rc = lin_backward(m, m->dfch_gelu, g->fcprojw + l * C1 * C4, dfcproj,
					  fch_gelu, p->fcprojw + l * C1 * C4, l, GPT_FC_PROJ,
					  (int)BT, (int)C4, C);
			if (rc)
				return rc;
			gelu_backward_d_pool(pool, m->dfch, fch, m->dfch_gelu, BT * C4);
			bias_grad_pool(pool, g->fcb + l * C4, m->dfch, (int)BT, (int)C4);
			rc = lin_backward(m, m->dln, g->fcw + l * C4 * C, m->dfch, ln2,
					  p->fcw + l * C4 * C, l, GPT_FC, (int)BT, C, (int)C4);
		}
		if (rc)
			return rc;
		/* dresidual now accumulates the gradient of residual2 */
		layernorm_backward_pool(pool, m->dresidual, g->ln2w + l * C1, g->ln2b + l * C1,
					m->dln, residual2, p->ln2w + l * C1, a->ln2_mean + l * BT,
					a->ln2_rstd + l * BT, (int)BT, C);
		/* residual2 = residual + attproj: dattproj is dresidual */
		const float *dattproj = m->dresidual;
		bias_grad_pool(pool, g->attprojb + l * C1, dattproj, (int)BT, C);
		int ald = m->tm_ld[2 * L + l];
		if (ald > 0)
			rc = m->lin->backward_tm(m->lin_ctx, m->datty, NULL,
						 g->attprojw + l * C1 * C, NULL, dattproj,
						 m->tm_atty + l * C1 * ald, p->attprojw + l * C1 * C,
						 l, GPT_ATTN_PROJ, (int)BT, C, C, ald, 0,
						 m->want_dense_dw);
		else
			rc = lin_backward(m, m->datty, g->attprojw + l * C1 * C, dattproj, atty,
					  p->attprojw + l * C1 * C, l, GPT_ATTN_PROJ, (int)BT, C,
					  C);
		if (rc)
			return rc;
		int qld = m->tm_ld[L + l];
		if (qld > 0) { /* q, k, v token-minor */
			const float *qkvt = m->tm_qkv + l * C3 * qld;
			attention_backward_tm_pool(pool, m->tm_dqkv, m->datty, qkvt, qld, att,
						   scratch, B, T, C, NH);
			rc = m->lin->backward_tm(m->lin_ctx, m->dln, NULL, g->qkvw + l * C3 * C,
						 g->qkvb + l * C3, m->tm_dqkv,
						 m->tm_ln1 + l * tm_ln_size(m, qld, BT),
						 p->qkvw + l * C3 * C, l, GPT_QKV, (int)BT, C,
						 (int)C3, qld, 0, m->want_dense_dw);
		} else {
			attention_backward_pool(pool, m->dqkv, m->datty, qkv, att, scratch, B, T, C,
						NH);
			bias_grad_pool(pool, g->qkvb + l * C3, m->dqkv, (int)BT, (int)C3);
			rc = lin_backward(m, m->dln, g->qkvw + l * C3 * C, m->dqkv, ln1,
					  p->qkvw + l * C3 * C, l, GPT_QKV, (int)BT, C, (int)C3);
		}
		if (rc)
			return rc;
		layernorm_backward_pool(pool, m->dresidual, g->ln1w + l * C1, g->ln1b + l * C1,
					m->dln, residual, p->ln1w + l * C1, a->ln1_mean + l * BT,
					a->ln1_rstd + l * BT, (int)BT, C);
		if (m->grads_ready && (rc = m->grads_ready(m->grads_ready_ctx, l)))
			return rc;
	}
	encoder_backward_pool(pool, g->wte, g->wpe, m->dresidual, m->inputs, B, T, C);
	if (m->grads_ready)
		return m->grads_ready(m->grads_ready_ctx, -1);
	return CS_OK;
}
