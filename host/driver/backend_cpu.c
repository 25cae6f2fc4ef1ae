/*
 * backend_cpu.c - the "cpu" device: the bit-exact C model of a Rows x Cols mesh, and the
 * fast path for training.
 *
 * Results follow docs/architecture.md section 5 exactly:
 *   forward  Y[t,i]  = fmac chain over the nonzeros of row i, j ascending, from +0;
 *   backward dX[t,j] = fmac chain over the nonzeros of column j, i ascending, from +0;
 *   wgrad    per token tile (the plan's partition), per PE a chain over its tp_k tokens
 *            (padding reads zeros), then the row reduction east -> west, the column
 *            reduction south -> north, and the host's in-order sum of token tiles.
 * Only the order of operations per output element is fixed; the loops are free. Forward
 * and backward vectorize across tokens (transposed activations, one AXPY per nonzero);
 * wgrad vectorizes across PEs and nonzeros (tokens laid out [u][q] so that the PE chains
 * of one nonzero are adjacent lanes), and drops the per-step range checks for chains whose
 * input exponents prove them unnecessary (chain_safe).
 *
 * Link bytes and cycles come from running the shared planner (plan.c) in counting mode:
 * the words the real protocol sends, not a formula kept beside it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "common/numerics.h"
#include "driver/csd_impl.h"

struct cpu_priv {
	int simd;   /* 1: AVX2+FMA kernels */
	int avx512; /* and AVX-512F for the unchecked AXPY */
	/* workspace, kept between calls (a training step calls every kernel per layer) */
	float *xr, *dr;        /* wgrad tiles */
	float *xt, *yt, *wv;   /* forward/backward chunks and weights */
	size_t xr_cap, dr_cap, xt_cap, yt_cap, wv_cap; /* floats */
	uint16_t *rng;
	size_t rng_cap; /* uint16_t */
	/* the PEs' SRAM for resident tensors and vector programs, allocated at their first
	 * use: PE q's A at a + q * a_words, B at b + q * b_words. Kernel calls do not model
	 * what they leave in SRAM (A from 0, both B banks). */
	uint16_t *a;
	uint32_t *b;
	/* every PE's lookup RAM (pe_vec.v) for the vector programs' cycles; a kernel call's
	 * SRAM images clear it */
	struct vt_lut lut;
};

/* Grow a workspace buffer to at least n elements of size sz (contents not kept). */
static int ws_grow(void **p, size_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return 0;
	void *q = realloc(*p, n * sz);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

static int cpu_open(csd_dev *dev, const char *arg)
{
	char err[256] = "";
	int rc = csd_parse_geom(dev, arg);
	if (rc)
		return rc;
	struct cpu_priv *cp = calloc(1, sizeof *cp);
	if (!cp)
		return csd_fail(dev, CS_ERR_NO_MEM, "cpu: out of memory");
#if defined(__x86_64__)
	__builtin_cpu_init();
	cp->simd = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	cp->avx512 = cp->simd && __builtin_cpu_supports("avx512f");
	const char *e = getenv("CSD_CPU_SIMD"); /* tests: force the scalar path */
	if (e && *e == '0')
		cp->simd = 0;
#endif
	dev->priv = cp;
	/* The program load the device would get: counted like any other traffic. */
	dev->have_fw = csd_fw_get(&dev->fw, "kernels", err, sizeof err) == CS_OK;
	struct plan_link count = { 0 };
	struct plan_stats st = { 0 };
	rc = plan_load(&dev->geom, dev->have_fw ? &dev->fw : NULL, &count, &st, err, sizeof err);
	if (rc) {
		free(cp);
		dev->priv = NULL;
		return csd_fail(dev, rc, "cpu: %s", err);
	}
	csd_count(dev, &st);
	return CS_OK;
}

static void cpu_close(csd_dev *dev)
{
	struct cpu_priv *cp = dev->priv;
	if (cp) {
		free(cp->xr);
		free(cp->dr);
		free(cp->xt);
		free(cp->yt);
		free(cp->wv);
		free(cp->rng);
		free(cp->a);
		free(cp->b);
	}
	free(cp);
	dev->priv = NULL;
}

/* Plan the call and count what the protocol would move. */
static int cpu_plan(csd_dev *dev, struct plan *pl, enum plan_kernel k, const csd_sparse *w,
		    int T)
{
	char err[256] = "";
	struct plan_stats st = { 0 };
	struct plan_link count = { 0 };
	struct plan_io io = { .w = w };
	struct cpu_priv *cp = dev->priv;
	cp->lut.valid[0] = cp->lut.valid[1] = 0;
	int rc = plan_make(pl, &dev->geom, k, T, w->n_out, w->n_in, err, sizeof err);
	if (!rc)
		plan_tune(pl, w);
	if (!rc)
		rc = plan_exec(pl, dev->have_fw ? &dev->fw : NULL, &io, &count, &st, err,
			       sizeof err);
	if (rc)
		return csd_fail(dev, rc, "cpu: %s", err);
	csd_count(dev, &st);
	return CS_OK;
}

/* ---- shared: range proofs, AVX2 conversion and transposes ------------------------------ */

/*
 * When the per-step range checks can go. Take the biased exponents of the two operand sets
 * of a chain (lo: smallest over the nonzero values, 255 when all are zero; hi: largest, 255
 * when one is infinite or NaN). Every product of a bf16 with exponent >= ex and a bf16 with
 * exponent >= ed is a multiple of 2^(ex + ed - 14) (8 significant bits each); sums of
 * multiples of a power of two stay multiples of it, and rounding to 24 bits keeps that, so
 * every partial sum is zero or at least 2^(ex + ed - 14) in magnitude: never subnormal when
 * ex + ed - 14 >= -126. With n products below 2^(hx + hd + 2) each, no partial sum exceeds
 * 2 * n * 2^(hx + hd + 2) (rounding grows a sum by at most a factor (1 + 2^-24)^n < 2):
 * never infinite when that is <= 2^127. Then the FPU's fma and add give the model's bits
 * without a check (numerics.h). A subnormal bf16 reads as zero and counts as one.
 * wgrad takes the ranges per feature over a token tile (padding tokens are zeros: they
 * change nothing), n = P * tp (a chain and the mesh reduction of a tile); forward and
 * backward over a token chunk and over all weights, n = din (the longest chain).
 * lg = ceil(log2(n)).
 */
static int chain_safe(unsigned xlo, unsigned xhi, unsigned dlo, unsigned dhi, int lg)
{
	if (xhi == 255 || dhi == 255)
		return 0;
	/* biased: (xlo - 127) + (dlo - 127) - 14 >= -126; (xhi - 127) + (dhi - 127) + 3 + lg <= 127 */
	return xlo + dlo >= 142 && (int)(xhi + dhi) + 3 + lg <= 381;
}

static int ceil_log2(size_t n)
{
	int lg = 0;
	while (((size_t)1 << lg) < n)
		lg++;
	return lg;
}

#if defined(__x86_64__)
/* 8x8 transpose: r[i] lane j -> r[j] lane i */
__attribute__((target("avx2"))) static inline void tr8(__m256 r[8])
{
	__m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
	__m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
	__m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
	__m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
	__m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
	__m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
	__m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
	__m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
	r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
	r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
	r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
	r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
	r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
	r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
	r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
	r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* eight bf16 to fp32, a subnormal bf16 reading as a signed zero (nm_bf16_to_f32) */
__attribute__((target("avx2"))) static inline __m256 bf16x8_to_f32(const uint16_t *p)
{
	__m256i u = _mm256_slli_epi32(
		_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)), 16);
	__m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7f800000)),
				       _mm256_setzero_si256());
	u = _mm256_blendv_epi8(u, _mm256_and_si256(u, _mm256_set1_epi32((int)0x80000000u)), z);
	return _mm256_castsi256_ps(u);
}


/* chain_safe's range (lo, hi) of n contiguous bf16 values */
__attribute__((target("avx2"))) static void range_bf16_avx2(const uint16_t *v, size_t n,
							     unsigned *lo, unsigned *hi)
{
	const __m256i ff = _mm256_set1_epi16(0xff), zero = _mm256_setzero_si256();
	__m256i l = ff, h = zero;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(v + i));
		__m256i e = _mm256_and_si256(_mm256_srli_epi16(w, 7), ff);
		__m256i ez = _mm256_or_si256(e, _mm256_and_si256(_mm256_cmpeq_epi16(e, zero), ff));
		l = _mm256_min_epu16(l, ez);
		h = _mm256_max_epu16(h, e);
	}
	uint16_t ll[16], hh[16];
	_mm256_storeu_si256((__m256i *)(void *)ll, l);
	_mm256_storeu_si256((__m256i *)(void *)hh, h);
	unsigned a = 255, b = 0;
	for (int k = 0; k < 16; k++) {
		a = ll[k] < a ? ll[k] : a;
		b = hh[k] > b ? hh[k] : b;
	}
	for (; i < n; i++) {
		unsigned e = (v[i] >> 7) & 0xffu, ez = e ? e : 255u;
		a = ez < a ? ez : a;
		b = e > b ? e : b;
	}
	*lo = a;
	*hi = b;
}

/* y += w * x with no check, for chunks chain_safe proved (fmaf = the model there) */
__attribute__((target("avx512f"))) static void axpy_fma_avx512(float *y, float w,
								const float *x, size_t n)
{
	const __m512 vw = _mm512_set1_ps(w);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(vw, _mm512_loadu_ps(x + i),
							_mm512_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] = fmaf(w, x[i], y[i]);
}

__attribute__((target("avx2,fma"))) static void axpy_fma_avx2(float *y, float w, const float *x,
							       size_t n)
{
	const __m256 vw = _mm256_set1_ps(w);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(vw, _mm256_loadu_ps(x + i),
							_mm256_loadu_ps(y + i)));
	for (; i < n; i++)
		y[i] = fmaf(w, x[i], y[i]);
}

/* xt [din][tc] = in rows [0, n) (bf16 [n][din]) transposed, 8 tokens x 8 features at once */
__attribute__((target("avx2"))) static void transpose_in_avx2(float *xt, size_t tc,
							       const uint16_t *in, int n, int din)
{
	int n8 = n & ~7, d8 = din & ~7;
	for (int t0 = 0; t0 < n8; t0 += 8) {
		for (int m0 = 0; m0 < d8; m0 += 8) {
			__m256 v[8];
			for (int i = 0; i < 8; i++)
				v[i] = bf16x8_to_f32(in + (size_t)(t0 + i) * din + m0);
			tr8(v);
			for (int j = 0; j < 8; j++)
				_mm256_storeu_ps(xt + (size_t)(m0 + j) * tc + t0, v[j]);
		}
		for (int t = t0; t < t0 + 8; t++)
			for (int m = d8; m < din; m++)
				xt[(size_t)m * tc + t] = nm_bf16_to_f32(in[(size_t)t * din + m]);
	}
	for (int t = n8; t < n; t++)
		for (int m = 0; m < din; m++)
			xt[(size_t)m * tc + t] = nm_bf16_to_f32(in[(size_t)t * din + m]);
}

/* out rows [0, n) ([n][dout]) = yt [dout][tc] transposed */
__attribute__((target("avx2"))) static void transpose_out_avx2(float *out, const float *yt,
								size_t tc, int n, int dout)
{
	int n8 = n & ~7, d8 = dout & ~7;
	for (int t0 = 0; t0 < n8; t0 += 8) {
		for (int o0 = 0; o0 < d8; o0 += 8) {
			__m256 v[8];
			for (int j = 0; j < 8; j++)
				v[j] = _mm256_loadu_ps(yt + (size_t)(o0 + j) * tc + t0);
			tr8(v);
			for (int i = 0; i < 8; i++)
				_mm256_storeu_ps(out + (size_t)(t0 + i) * dout + o0, v[i]);
		}
		for (int t = t0; t < t0 + 8; t++)
			for (int o = d8; o < dout; o++)
				out[(size_t)t * dout + o] = yt[(size_t)o * tc + t];
	}
	for (int t = n8; t < n; t++)
		for (int o = 0; o < dout; o++)
			out[(size_t)t * dout + o] = yt[(size_t)o * tc + t];
}
#endif

/* ---- forward / backward: one AXPY per nonzero over a chunk of tokens -------------------- */

/*
 * out [T, dout] = chains over majors m ascending of fmac(val, in[t, m], .), for the nonzeros
 * (minor, val) of major m, with in [T, din] bf16. ptr/minor/val: CSC for forward, CSR for
 * backward. A chunk whose inputs and the weights pass chain_safe runs plain fused
 * multiply-adds; any other goes through nm_axpy_f32 (checked per vector).
 */
static int cpu_stream_kernel(struct cpu_priv *cp, float *out, const uint16_t *in, int T,
			     int din, int dout, const int64_t *ptr, const int32_t *minor,
			     const uint16_t *val, int64_t nnz, const float *init)
{
	/* token chunk: keep the chunk's inputs and accumulators near 1 MB */
	long tc = (256L * 1024) / (din + dout);
	tc = tc < 16 ? 16 : tc > 1024 ? 1024 : tc;
	tc &= ~15L;
	if (tc > T)
		tc = T;
	if (ws_grow((void **)&cp->xt, &cp->xt_cap, (size_t)din * tc, sizeof *cp->xt) ||
	    ws_grow((void **)&cp->yt, &cp->yt_cap, (size_t)dout * tc, sizeof *cp->yt) ||
	    ws_grow((void **)&cp->wv, &cp->wv_cap, (size_t)(nnz ? nnz : 1), sizeof *cp->wv))
		return CS_ERR_NO_MEM;
	float *xt = cp->xt, *yt = cp->yt, *wv = cp->wv;
	for (int64_t k = 0; k < nnz; k++)
		wv[k] = nm_bf16_to_f32(val[k]);
	int simd = 0, lg = ceil_log2((size_t)din);
	unsigned wlo = 255, whi = 255;
	void (*axpy)(float *, float, const float *, size_t) = NULL;
#if defined(__x86_64__)
	simd = cp->simd;
	if (simd) {
		range_bf16_avx2(val, (size_t)nnz, &wlo, &whi);
		axpy = cp->avx512 ? axpy_fma_avx512 : axpy_fma_avx2;
	}
#else
	(void)cp;
#endif
	for (int c0 = 0; c0 < T; c0 += (int)tc) {
		int n = T - c0 < tc ? T - c0 : (int)tc;
		const uint16_t *ic = in + (size_t)c0 * din;
		int safe = 0;
		/* transpose the chunk: xt[m][t] */
#if defined(__x86_64__)
		if (simd) {
			unsigned xlo, xhi;
			range_bf16_avx2(ic, (size_t)n * din, &xlo, &xhi);
			/* chains from any other start than +0 lose chain_safe's proof */
			safe = !init && chain_safe(xlo, xhi, wlo, whi, lg);
			transpose_in_avx2(xt, (size_t)tc, ic, n, din);
		} else
#endif
		{
			for (int t = 0; t < n; t++)
				for (int m = 0; m < din; m++)
					xt[(size_t)m * tc + t] = nm_bf16_to_f32(ic[(size_t)t * din + m]);
		}
		if (init) /* the chains start from the values in B (resident accumulate) */
			for (int t = 0; t < n; t++)
				for (int o = 0; o < dout; o++)
					yt[(size_t)o * tc + t] = init[(size_t)(c0 + t) * dout + o];
		else
			memset(yt, 0, (size_t)dout * tc * sizeof *yt);
		for (int m = 0; m < din; m++) {
			const float *xm = xt + (size_t)m * tc;
			if (safe)
				for (int64_t k = ptr[m]; k < ptr[m + 1]; k++)
					axpy(yt + (size_t)minor[k] * tc, wv[k], xm, (size_t)n);
			else
				for (int64_t k = ptr[m]; k < ptr[m + 1]; k++)
					nm_axpy_f32(yt + (size_t)minor[k] * tc, wv[k], xm, (size_t)n);
		}
#if defined(__x86_64__)
		if (simd) {
			transpose_out_avx2(out + (size_t)c0 * dout, yt, (size_t)tc, n, dout);
			continue;
		}
#endif
		for (int t = 0; t < n; t++) {
			float *row = out + (size_t)(c0 + t) * dout;
			for (int o = 0; o < dout; o++)
				row[o] = yt[(size_t)o * tc + t];
		}
	}
	return CS_OK;
}

static int cpu_forward(csd_dev *dev, float *y, const uint16_t *x, const csd_sparse *w, int T)
{
	struct plan pl;
	int rc = csd_check_args(dev, "forward", y, x, w, T);
	if (rc || (rc = cpu_plan(dev, &pl, PLAN_FWD, w, T)))
		return rc;
	rc = cpu_stream_kernel(dev->priv, y, x, T, w->n_in, w->n_out, w->col_ptr, w->row, w->cval,
			       w->nnz, NULL);
	return rc ? csd_fail(dev, rc, "cpu: forward: out of memory") : CS_OK;
}

static int cpu_backward(csd_dev *dev, float *dx, const uint16_t *dy, const csd_sparse *w, int T)
{
	struct plan pl;
	int rc = csd_check_args(dev, "backward", dx, dy, w, T);
	if (rc || (rc = cpu_plan(dev, &pl, PLAN_BWD, w, T)))
		return rc;
	rc = cpu_stream_kernel(dev->priv, dx, dy, T, w->n_out, w->n_in, w->row_ptr, w->col, w->val,
			       w->nnz, NULL);
	return rc ? csd_fail(dev, rc, "cpu: backward: out of memory") : CS_OK;
}

/* ---- wgrad: PE chains across lanes --------------------------------------------------- */

#define NM_TINY_F 1.1754943508222875e-38f
#define WG_GROUP 64 /* nonzeros reduced together (lanes of accT) */

/* One chain step redone by the reference (the FPU disagreed or might). */
static float step_ref(float x, float d, float acc)
{
	return nm_bits_f32(nm_fmac_bits(nm_bf16_from_f32(x), nm_bf16_from_f32(d), nm_f32_bits(acc)));
}

/*
 * acc[b][q] = chain over u < steps of fmac(x[u*P + q], d_b[u*P + q], .) from +0, for the nb
 * nonzeros b (lanes q < P). The FPU's fused multiply-add equals the model whenever the
 * result is a normal number or an exact zero (the accumulator is always a model value, so
 * never subnormal; a nonzero exact result that the FPU rounds to zero is below 2^-150 and
 * the model flushes it to the same signed zero); any other lane is redone by reference.
 */
static void chains_scalar(float *acc, const float *x, const float *const *d, int nb, int P,
			  int steps)
{
	for (int b = 0; b < nb; b++)
		for (int q = 0; q < P; q++) {
			float a = 0.0f;
			for (int u = 0; u < steps; u++)
				a = nm_fmac(nm_bf16_from_f32(x[(size_t)u * P + q]),
					    nm_bf16_from_f32(d[b][(size_t)u * P + q]), a);
			acc[(size_t)b * P + q] = a;
		}
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static inline __m256 step8(__m256 xv, __m256 dv, __m256 a,
								const float *x, const float *d)
{
	const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	const __m256 tiny = _mm256_set1_ps(NM_TINY_F), inf = _mm256_set1_ps(INFINITY);
	const __m256 zero = _mm256_setzero_ps();
	__m256 r = _mm256_fmadd_ps(xv, dv, a);
	__m256 ar = _mm256_and_ps(r, absm);
	/* bad: subnormal result, or inf/NaN (not < inf) */
	__m256 bad = _mm256_or_ps(_mm256_and_ps(_mm256_cmp_ps(ar, tiny, _CMP_LT_OQ),
						_mm256_cmp_ps(ar, zero, _CMP_NEQ_OQ)),
				  _mm256_cmp_ps(ar, inf, _CMP_NLT_UQ));
	if (__builtin_expect(_mm256_movemask_ps(bad), 0)) {
		float rr[8], aa[8];
		int m = _mm256_movemask_ps(bad);
		_mm256_storeu_ps(rr, r);
		_mm256_storeu_ps(aa, a);
		for (int l = 0; l < 8; l++)
			if (m >> l & 1)
				rr[l] = step_ref(x[l], d[l], aa[l]);
		r = _mm256_loadu_ps(rr);
	}
	return r;
}

/* P a multiple of 8; nb nonzeros in groups of 8 sharing the x loads (8 independent
 * chains hide the FMA latency). safe = 0: every step checked against the model (step8),
 * partials stored to acc [nb][P]. safe = 1: for nonzeros whose chains provably stay
 * normal or zero and finite (see chain_safe), the FPU's fused multiply-add is the model's
 * fmac, lane for lane; the partials go straight to acc as accT [P][WG_GROUP] (lanes past
 * nb hold copies of lane 0's chain: finite, never read back as results). Always inlined
 * with a constant safe, so each caller gets its own loop. */
__attribute__((target("avx2,fma"), always_inline)) static inline void
chains_avx2_body(float *acc, const float *x, const float *const *d, int nb, int P, int steps,
		 const int safe)
{
	for (int b0 = 0; b0 < nb; b0 += 8) {
		const float *dd[8];
		for (int b = 0; b < 8; b++)
			dd[b] = d[b0 + b < nb ? b0 + b : b0];
		for (int q = 0; q < P; q += 8) {
			__m256 a[8];
#pragma GCC unroll 8
			for (int b = 0; b < 8; b++)
				a[b] = _mm256_setzero_ps();
			for (int u = 0; u < steps; u++) {
				size_t o = (size_t)u * P + q;
				__m256 xv = _mm256_loadu_ps(x + o);
#pragma GCC unroll 8
				for (int b = 0; b < 8; b++) {
					__m256 dv = _mm256_loadu_ps(dd[b] + o);
					a[b] = safe ? _mm256_fmadd_ps(xv, dv, a[b])
						    : step8(xv, dv, a[b], x + o, dd[b] + o);
				}
			}
			if (safe) {
				tr8(a);
				for (int j = 0; j < 8; j++)
					_mm256_storeu_ps(acc + (size_t)(q + j) * WG_GROUP + b0, a[j]);
			} else {
				for (int b = 0; b < 8 && b0 + b < nb; b++)
					_mm256_storeu_ps(acc + (size_t)(b0 + b) * P + q, a[b]);
			}
		}
	}
}

__attribute__((target("avx2,fma"))) static void chains_avx2(float *acc, const float *x,
							     const float *const *d, int nb, int P,
							     int steps)
{
	chains_avx2_body(acc, x, d, nb, P, steps, 0);
}

__attribute__((target("avx2,fma"))) static void chains_avx2_safe(float *accT, const float *x,
								  const float *const *d, int nb,
								  int P, int steps)
{
	chains_avx2_body(accT, x, d, nb, P, steps, 1);
}

/* layout_tile for P a multiple of 8: 8 PEs x 8 features at a time, transposed in registers */
__attribute__((target("avx2"))) static void layout_tile_avx2(float *dst, const uint16_t *src,
							      int T, int nf, int t0, int tp, int P)
{
	size_t L = (size_t)tp * P;
	int nf8 = nf & ~7;
	for (int u = 0; u < tp; u++)
		for (int q0 = 0; q0 < P; q0 += 8) {
			const uint16_t *rows[8];
			for (int i = 0; i < 8; i++) {
				int t = t0 + (q0 + i) * tp + u;
				rows[i] = t < T ? src + (size_t)t * nf : NULL;
			}
			float *o = dst + (size_t)u * P + q0;
			for (int f0 = 0; f0 < nf8; f0 += 8) {
				__m256 v[8];
				for (int i = 0; i < 8; i++)
					v[i] = rows[i] ? bf16x8_to_f32(rows[i] + f0) : _mm256_setzero_ps();
				tr8(v);
				for (int j = 0; j < 8; j++)
					_mm256_storeu_ps(o + (size_t)(f0 + j) * L, v[j]);
			}
			for (int f = nf8; f < nf; f++)
				for (int i = 0; i < 8; i++)
					o[(size_t)f * L + i] = rows[i] ? nm_bf16_to_f32(rows[i][f]) : 0.0f;
		}
}

/* feat_range (below) over the bf16 source rows [t0, t1): 16 features at a time */
__attribute__((target("avx2"))) static void feat_range_avx2(uint16_t *lo, uint16_t *hi,
							     const uint16_t *src, int nf, int t0,
							     int t1)
{
	int nf16 = nf & ~15;
	const __m256i ff = _mm256_set1_epi16(0xff), zero = _mm256_setzero_si256();
	for (int f = 0; f < nf; f++) {
		lo[f] = 255;
		hi[f] = 0;
	}
	for (int t = t0; t < t1; t++) {
		const uint16_t *row = src + (size_t)t * nf;
		for (int f = 0; f < nf16; f += 16) {
			__m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(row + f));
			__m256i e = _mm256_and_si256(_mm256_srli_epi16(w, 7), ff);
			__m256i ez = _mm256_or_si256(e, _mm256_and_si256(_mm256_cmpeq_epi16(e, zero), ff));
			__m256i *pl = (__m256i *)(void *)(lo + f), *ph = (__m256i *)(void *)(hi + f);
			_mm256_storeu_si256(pl, _mm256_min_epu16(_mm256_loadu_si256(pl), ez));
			_mm256_storeu_si256(ph, _mm256_max_epu16(_mm256_loadu_si256(ph), e));
		}
		for (int f = nf16; f < nf; f++) {
			unsigned e = (row[f] >> 7) & 0xffu, ez = e ? e : 255u;
			lo[f] = (uint16_t)(ez < lo[f] ? ez : lo[f]);
			hi[f] = (uint16_t)(e > hi[f] ? e : hi[f]);
		}
	}
}
#endif

/* Lay tokens of a tile out as [u][q] (token t0 + q*tp + u), zero padded, for features
 * [0, nf) of src [T, nf]: dst[f][u*P + q]. */
static void layout_tile(float *dst, const uint16_t *src, int T, int nf, int t0, int tp, int P)
{
	size_t L = (size_t)tp * P;
	memset(dst, 0, (size_t)nf * L * sizeof *dst);
	for (int q = 0; q < P; q++)
		for (int u = 0; u < tp; u++) {
			int t = t0 + q * tp + u;
			if (t >= T)
				continue;
			const uint16_t *row = src + (size_t)t * nf;
			float *o = dst + (size_t)u * P + q;
			for (int f = 0; f < nf; f++)
				o[(size_t)f * L] = nm_bf16_to_f32(row[f]);
		}
}


/*
 * The mesh reduction for a group of nb nonzeros at once: accT [P][WG_GROUP] holds the
 * partials lane-major (nonzero b in lane b), so every add of the fixed order is a vector
 * add across nonzeros. An add of two model values equals the FPU's unless the result is
 * subnormal, infinite or NaN (an exact zero gets the same sign under RNE); such lanes are
 * redone with the reference.
 */
static void reduce_group_scalar(float *d, float *rsum, const float *accT, int nb, int rows,
				int cols)
{
	for (int b = 0; b < nb; b++) {
		float s = 0.0f;
		for (int r = rows - 1; r >= 0; r--) {
			const float *pr = accT + (size_t)r * cols * WG_GROUP + b;
			float v = pr[(size_t)(cols - 1) * WG_GROUP];
			for (int c = cols - 2; c >= 0; c--)
				v = nm_add(v, pr[(size_t)c * WG_GROUP]);
			if (rsum) /* row r's sum s_r, what PE(r, 0) stores (redv.st) */
				rsum[(size_t)r * WG_GROUP + b] = v;
			s = r == rows - 1 ? v : nm_add(s, v);
		}
		d[b] = s;
	}
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static inline __m256 add8(__m256 a, __m256 b)
{
	const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	const __m256 tiny = _mm256_set1_ps(NM_TINY_F), inf = _mm256_set1_ps(INFINITY);
	const __m256 zero = _mm256_setzero_ps();
	__m256 r = _mm256_add_ps(a, b);
	__m256 ar = _mm256_and_ps(r, absm);
	__m256 bad = _mm256_or_ps(_mm256_and_ps(_mm256_cmp_ps(ar, tiny, _CMP_LT_OQ),
						_mm256_cmp_ps(ar, zero, _CMP_NEQ_OQ)),
				  _mm256_cmp_ps(ar, inf, _CMP_NLT_UQ));
	int m = _mm256_movemask_ps(bad);
	if (__builtin_expect(m, 0)) {
		float rr[8], aa[8], bb[8];
		_mm256_storeu_ps(rr, r);
		_mm256_storeu_ps(aa, a);
		_mm256_storeu_ps(bb, b);
		for (int l = 0; l < 8; l++)
			if (m >> l & 1)
				rr[l] = nm_bits_f32(nm_add_bits(nm_f32_bits(aa[l]), nm_f32_bits(bb[l])));
		r = _mm256_loadu_ps(rr);
	}
	return r;
}

__attribute__((target("avx2,fma"))) static void reduce_group_avx2(float *d, const float *accT,
								   int nb, int rows, int cols)
{
	for (int b = 0; b < nb; b += 8) {
		__m256 s = _mm256_setzero_ps();
		for (int r = rows - 1; r >= 0; r--) {
			const float *pr = accT + (size_t)r * cols * WG_GROUP + b;
			__m256 v = _mm256_loadu_ps(pr + (size_t)(cols - 1) * WG_GROUP);
			for (int c = cols - 2; c >= 0; c--)
				v = add8(v, _mm256_loadu_ps(pr + (size_t)c * WG_GROUP));
			s = r == rows - 1 ? v : add8(s, v);
		}
		_mm256_storeu_ps(d + b, s);
	}
}

/* reduce_group_avx2 for a group that chain_safe proved normal or zero and finite */
__attribute__((target("avx2,fma"))) static void reduce_group_avx2_safe(float *d,
									const float *accT, int nb,
									int rows, int cols)
{
	for (int b = 0; b < nb; b += 8) {
		__m256 s = _mm256_setzero_ps();
		for (int r = rows - 1; r >= 0; r--) {
			const float *pr = accT + (size_t)r * cols * WG_GROUP + b;
			__m256 v = _mm256_loadu_ps(pr + (size_t)(cols - 1) * WG_GROUP);
			for (int c = cols - 2; c >= 0; c--)
				v = _mm256_add_ps(v, _mm256_loadu_ps(pr + (size_t)c * WG_GROUP));
			s = r == rows - 1 ? v : _mm256_add_ps(s, v);
		}
		_mm256_storeu_ps(d + b, s);
	}
}
#endif

/* What a resident wgrad leaves in the PEs' SRAM: the partial sums of the last batch_cap
 * nonzeros (CSC order; nonzero c in slot c % batch_cap of every PE), column 0's row sums
 * over them where the mesh has more than one column (docs/architecture.md 5). */
struct wg_scratch {
	uint32_t *b;       /* PE q's B at b + q * b_words */
	uint32_t b_words, pb, cap;
};

/* The weight gradient over the token partition of plan pl (PLAN_WGRAD, or PLAN_BWG whose
 * tiles are the backward's): section 5's order for that partition. scr: also the SRAM
 * scratch (one token tile). */
static int cpu_wgrad_run(csd_dev *dev, float *dw, const uint16_t *dy, const uint16_t *x,
			 const csd_sparse *w, int T, const struct plan *plp,
			 const struct wg_scratch *scr)
{
	const struct plan pl = *plp;
	struct cpu_priv *cp = dev->priv;
	int rc = CS_OK;
	int P = pl.P, K = w->n_in, N = w->n_out;
	size_t L = (size_t)pl.tp * P;
	float *acc = malloc((size_t)WG_GROUP * P * sizeof *acc);
	float *accT = calloc((size_t)WG_GROUP * P, sizeof *accT);
	float d[WG_GROUP];
	float *rsum = scr ? malloc((size_t)pl.g.rows * WG_GROUP * sizeof *rsum) : NULL;
	int64_t keep = scr && w->nnz > (int64_t)scr->cap ? w->nnz - (int64_t)scr->cap : 0;
	if (ws_grow((void **)&cp->xr, &cp->xr_cap, (size_t)K * L, sizeof *cp->xr) ||
	    ws_grow((void **)&cp->dr, &cp->dr_cap, (size_t)N * L, sizeof *cp->dr) ||
	    ws_grow((void **)&cp->rng, &cp->rng_cap, 2 * ((size_t)K + N), sizeof *cp->rng) ||
	    !acc || !accT || (scr && !rsum)) {
		rc = csd_fail(dev, CS_ERR_NO_MEM, "cpu: wgrad: out of memory");
		goto out_free;
	}
	float *xr = cp->xr, *dr = cp->dr;
	uint16_t *xlo = cp->rng, *xhi = xlo + K, *dlo = xhi + K, *dhi = dlo + N;
	int vec = 0;
#if defined(__x86_64__)
	vec = cp->simd && P % 8 == 0;
#endif
	for (int k = 0; k < pl.n_ttiles; k++) {
		int t0, tp, ntok;
		plan_ttile(&pl, k, &t0, &tp, &ntok);
		size_t Lk = (size_t)tp * P;
		int lg = ceil_log2(Lk);
#if defined(__x86_64__)
		if (vec) {
			int t1 = t0 + ntok < T ? t0 + ntok : T;
			layout_tile_avx2(xr, x, T, K, t0, tp, P);
			layout_tile_avx2(dr, dy, T, N, t0, tp, P);
			feat_range_avx2(xlo, xhi, x, K, t0, t1);
			feat_range_avx2(dlo, dhi, dy, N, t0, t1);
		} else
#endif
		{
			layout_tile(xr, x, T, K, t0, tp, P);
			layout_tile(dr, dy, T, N, t0, tp, P);
		}
		for (int j = 0; j < K; j++) {
			const float *xj = xr + (size_t)j * Lk;
			for (int64_t c0 = w->col_ptr[j]; c0 < w->col_ptr[j + 1]; c0 += WG_GROUP) {
				int nb = (int)(w->col_ptr[j + 1] - c0 < WG_GROUP ? w->col_ptr[j + 1] - c0
										 : WG_GROUP);
				const float *dptr[WG_GROUP];
				int safe = vec;
				for (int b = 0; b < nb; b++) {
					int i = w->row[c0 + b];
					dptr[b] = dr + (size_t)i * Lk;
					safe = safe && chain_safe(xlo[j], xhi[j], dlo[i], dhi[i], lg);
				}
#if defined(__x86_64__)
				if (safe) {
					chains_avx2_safe(accT, xj, dptr, nb, P, tp);
				} else
#endif
				{
#if defined(__x86_64__)
					if (vec)
						chains_avx2(acc, xj, dptr, nb, P, tp);
					else
#endif
						chains_scalar(acc, xj, dptr, nb, P, tp);
					for (int b = 0; b < nb; b++)
						for (int q = 0; q < P; q++)
							accT[(size_t)q * WG_GROUP + b] =
								acc[(size_t)b * P + q];
				}
				int rows_kept = scr && c0 + nb > keep;
#if defined(__x86_64__)
				if (rows_kept)
					reduce_group_scalar(d, rsum, accT, nb, pl.g.rows, pl.g.cols);
				else if (safe)
					reduce_group_avx2_safe(d, accT, nb, pl.g.rows, pl.g.cols);
				else if (cp->simd)
					reduce_group_avx2(d, accT, nb, pl.g.rows, pl.g.cols);
				else
#endif
					reduce_group_scalar(d, rows_kept ? rsum : NULL, accT, nb,
							    pl.g.rows, pl.g.cols);
				for (int b = 0; rows_kept && b < nb; b++) {
					int64_t c = c0 + b;
					if (c < keep)
						continue;
					uint32_t slot = scr->pb + (uint32_t)(c % scr->cap);
					for (int q = 0; q < P; q++)
						scr->b[(size_t)q * scr->b_words + slot] =
							nm_f32_bits(accT[(size_t)q * WG_GROUP + b]);
					for (int r = 0; pl.g.cols > 1 && r < pl.g.rows; r++)
						scr->b[(size_t)r * pl.g.cols * scr->b_words + slot] =
							nm_f32_bits(rsum[(size_t)r * WG_GROUP + b]);
				}
				for (int b = 0; b < nb; b++) {
					int64_t pos = w->csr_pos[c0 + b];
					dw[pos] = k == 0 ? d[b] : nm_add(dw[pos], d[b]);
				}
			}
		}
	}
out_free:
	free(rsum);
	free(acc);
	free(accT);
	return rc;
}

static int cpu_wgrad(csd_dev *dev, float *dw, const uint16_t *dy, const uint16_t *x,
		     const csd_sparse *w, int T)
{
	struct plan pl;
	int rc = csd_check_args(dev, "wgrad", dw, x, w, T);
	if (!rc && !dy)
		rc = csd_fail(dev, CS_ERR_INVALID, "wgrad: NULL argument");
	if (rc || (rc = cpu_plan(dev, &pl, PLAN_WGRAD, w, T)))
		return rc;
	return cpu_wgrad_run(dev, dw, dy, x, w, T, &pl, NULL);
}

static int cpu_backward_wgrad(csd_dev *dev, float *dx, float *dw, const uint16_t *dy,
			      const uint16_t *x, const csd_sparse *w, int T)
{
	struct plan pl;
	int rc = csd_check_args(dev, "backward_wgrad", dx, dy, w, T);
	if (!rc && (!dw || !x))
		rc = csd_fail(dev, CS_ERR_INVALID, "backward_wgrad: NULL argument");
	if (rc || (rc = cpu_plan(dev, &pl, PLAN_BWG, w, T)))
		return rc;
	rc = cpu_stream_kernel(dev->priv, dx, dy, T, w->n_out, w->n_in, w->row_ptr, w->col, w->val,
			       w->nnz, NULL);
	if (rc)
		return csd_fail(dev, rc, "cpu: backward_wgrad: out of memory");
	return cpu_wgrad_run(dev, dw, dy, x, w, T, &pl, NULL);
}

/* ---- resident tensors and vector programs: SRAM per PE ------------------------------- */

/* Element / word addr of memory mem of PE q. */
static void *cpu_sram(csd_dev *dev, int mem, int q, size_t addr)
{
	struct cpu_priv *cp = dev->priv;
	if (mem == CSD_MEM_A)
		return cp->a + (size_t)q * dev->geom.a_words + addr;
	if (mem == CSD_MEM_BH) /* element 2w the low half of word w (a little-endian host) */
		return (uint16_t *)(void *)(cp->b + (size_t)q * dev->geom.b_words) + addr;
	return cp->b + (size_t)q * dev->geom.b_words + addr;
}

/* Every PE's tp rows of region r into rows [P tp][width] (dir 0), or back (dir 1). */
static void cpu_rows(csd_dev *dev, void *rows, const csd_region *r, int tp, int dir)
{
	int P = dev->geom.rows * dev->geom.cols;
	size_t row = r->width * (r->mem == CSD_MEM_B ? 4 : 2);
	for (int q = 0; q < P; q++)
		for (int u = 0; u < tp; u++) {
			char *m = cpu_sram(dev, r->mem, q, r->base + (size_t)u * r->stride);
			char *h = (char *)rows + ((size_t)q * tp + u) * row;
			if (dir)
				memcpy(m, h, row);
			else
				memcpy(h, m, row);
		}
}

/*
 * A kernel on regions, on the SRAM model: the same C kernels as csd_forward / csd_wgrad
 * (cpu_stream_kernel, cpu_wgrad_run) over all P * tp rows the PEs hold, padding included,
 * as one token tile. fwd/bwd: overwrite zeroes what START fills (tp * stride words; with
 * first touch, plan_first_touch, only the outputs, which the kernel writes anyway),
 * accumulate starts the chains from B; wgrad also leaves its partial sums in the scratch.
 */
static int cpu_kernel(csd_dev *dev, const struct res_op *op)
{
	struct cpu_priv *cp = dev->priv;
	struct plan pl;
	struct plan_regions rg;
	char err[256] = "";
	int rc = res_kernel_plan(&dev->geom, op, &pl, &rg, err, sizeof err);
	if (rc)
		return csd_fail(dev, rc, "cpu: %s", err);
	const csd_sparse *w = op->w;
	int P = pl.P, tp = rg.tp, n = P * tp;
	const csd_region *in = &op->in, *out = &op->r;
	uint16_t *xin = malloc((size_t)n * in->width * sizeof *xin);
	void *o = malloc((size_t)n * out->width * 4);
	float *init = NULL;
	if (!xin || !o) {
		rc = csd_fail(dev, CS_ERR_NO_MEM, "cpu: kernel: out of memory");
		goto out_free;
	}
	cpu_rows(dev, xin, in, tp, 0);
	if (op->kernel == PLAN_WGRAD) {
		struct wg_scratch scr = { cp->b, dev->geom.b_words, rg.pb, pl.batch_cap };
		cpu_rows(dev, o, out, tp, 0); /* dy, packed bf16 */
		pl.T = n; /* the padding rows are tokens of the tile too */
		rc = cpu_wgrad_run(dev, op->dw, o, xin, w, n, &pl, &scr);
		goto out_free;
	}
	int fwd = op->kernel == PLAN_FWD;
	if (op->accumulate) {
		init = o;
		cpu_rows(dev, init, out, tp, 0);
	} else if (!plan_first_touch(&pl, &rg, w, &(uint32_t){ 0 })) {
		/* START; first touch (pe) writes the output words only */
		for (int q = 0; q < P; q++)
			memset(cpu_sram(dev, CSD_MEM_B, q, out->base), 0,
			       (size_t)tp * rg.bstride * sizeof(uint32_t));
	}
	rc = fwd ? cpu_stream_kernel(cp, o, xin, n, w->n_in, w->n_out, w->col_ptr, w->row,
				     w->cval, w->nnz, init)
		 : cpu_stream_kernel(cp, o, xin, n, w->n_out, w->n_in, w->row_ptr, w->col, w->val,
				     w->nnz, init);
	if (rc) {
		rc = csd_fail(dev, rc, "cpu: kernel: out of memory");
		goto out_free;
	}
	cpu_rows(dev, o, out, tp, 1);
out_free:
	free(xin);
	free(o);
	return rc;
}

/* What op's stream does to the PEs' SRAM, or what it reads back. */
static int cpu_apply(csd_dev *dev, const struct res_op *op)
{
	const csd_region *r = &op->r;
	int P = dev->geom.rows * dev->geom.cols, tp = res_tp(&dev->geom, op->T), rc;
	size_t esz = r->mem == CSD_MEM_B ? 4 : 2, row = r->width * esz;
	/* a carried read or write touches nothing the kernel does: it goes first */
	if (op->side && (rc = cpu_apply(dev, op->side)))
		return rc;
	if (op->kind == RES_KERNEL)
		return cpu_kernel(dev, op);
	if (op->kind == RES_REDUCE) {
		/* a wgrad batch's reduction (reduce_group_scalar's order); column 0 keeps its
		 * row's sums (redv.st) on a mesh of more than one column */
		int R = dev->geom.rows, Cc = dev->geom.cols;
		for (uint32_t i = 0; i < r->width; i++) {
			uint32_t s = 0;
			for (int rr = R - 1; rr >= 0; rr--) {
				uint32_t v = *(uint32_t *)cpu_sram(dev, CSD_MEM_B, rr * Cc + Cc - 1,
								   r->base + i);
				for (int c = Cc - 2; c >= 0; c--)
					v = nm_add_bits(v, *(uint32_t *)cpu_sram(dev, CSD_MEM_B,
										 rr * Cc + c, r->base + i));
				if (Cc > 1)
					*(uint32_t *)cpu_sram(dev, CSD_MEM_B, rr * Cc, r->base + i) = v;
				s = rr == R - 1 ? v : nm_add_bits(s, v);
			}
			((float *)op->dst)[i] = nm_bits_f32(s);
		}
		return CS_OK;
	}
	char err[256] = "";
	for (int q = 0; q < P; q++) {
		switch (op->kind) {
		case RES_WRITE:
		case RES_READ:
			for (int u = 0; u < tp; u++) {
				int t = q * tp + u;
				char *m = cpu_sram(dev, r->mem, q, r->base + (size_t)u * r->stride);
				if (op->kind == RES_READ && t < op->T)
					memcpy((char *)op->dst + (size_t)t * row, m, row);
				else if (op->kind == RES_WRITE && t < op->T)
					memcpy(m, (const char *)op->src + (size_t)t * row, row);
				else if (op->kind == RES_WRITE)
					memset(m, 0, row);
			}
			break;
		case RES_WRITE_ALL:
			memcpy(cpu_sram(dev, r->mem, q, r->base), op->src, row);
			break;
		case RES_PROGRAM: {
			uint32_t *b = cpu_sram(dev, CSD_MEM_B, q, 0);
			for (int i = 0; i < op->prog->n_params; i++)
				b[op->block + (uint32_t)i] = op->params[i];
			if ((rc = op->prog->model(cpu_sram(dev, CSD_MEM_A, q, 0), b, op->params, err,
						  sizeof err)))
				return csd_fail(dev, rc, "cpu: PE %d: %s", q, err);
			break;
		}
		case RES_KERNEL: /* cpu_kernel */
		case RES_REDUCE: /* above */
			break;
		}
	}
	return CS_OK;
}

static int cpu_resident(csd_dev *dev, const struct res_op *op)
{
	struct cpu_priv *cp = dev->priv;
	const struct plan_geom *g = &dev->geom;
	size_t P = (size_t)(g->rows * g->cols);
	char err[256] = "";
	if (!cp->a) {
		cp->a = calloc(P * g->a_words, sizeof *cp->a);
		cp->b = calloc(P * g->b_words, sizeof *cp->b);
		if (!cp->a || !cp->b) {
			free(cp->a);
			free(cp->b);
			cp->a = NULL;
			cp->b = NULL;
			return csd_fail(dev, CS_ERR_NO_MEM, "cpu: out of memory for the PEs' SRAM");
		}
	}
	/* the stream's words and cycles, counted */
	struct plan_link count = { 0 };
	struct plan_stats st = { 0 };
	int rc = res_exec(g, op, &count, &st, &cp->lut, err, sizeof err);
	if (rc)
		return csd_fail(dev, rc, "cpu: %s", err);
	if ((rc = cpu_apply(dev, op)))
		return rc;
	csd_count(dev, &st);
	return CS_OK;
}

const struct csd_backend csd_backend_cpu = {
	.name = "cpu",
	.open = cpu_open,
	.close = cpu_close,
	.forward = cpu_forward,
	.backward = cpu_backward,
	.wgrad = cpu_wgrad,
	.backward_wgrad = cpu_backward_wgrad,
	.resident = cpu_resident,
};
