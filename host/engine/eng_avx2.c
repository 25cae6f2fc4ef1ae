/*
 * eng_avx2.c - the engine's kernels with AVX2 and FMA (compiled with -mavx2 -mfma; called
 * only when the CPU has them, see eng.c). The same blocking as eng_avx512.c with 8-float
 * vectors and 16 registers: spmm keeps 64 tokens of an output row in 8 accumulators,
 * sddmm 64 tokens of an output-gradient row in 8 registers.
 */
#include <immintrin.h>
#include <math.h>

#include "engine/eng_impl.h"

#define AI static inline __attribute__((always_inline))

AI __m256 bcast_w(const void *val, int64_t k, int bf16)
{
	if (bf16)
		return _mm256_set1_ps(eng_bf16_to_f32(((const uint16_t *)val)[k]));
	return _mm256_set1_ps(((const float *)val)[k]);
}

/* Rows over a block of 8 * NV tokens (NV <= 8): eight accumulators are the eight FMA chains
 * two 256-bit pipes need; packed or strided input (PF) and CH as in eng_avx512.c */
AI void spmm_rows_t(float *y, size_t ly, const float *mul, const int64_t *ptr, int64_t *cur,
		    int32_t cend, int acc, const int32_t *idx, const void *val, const int bf16,
		    const float *x, size_t ld, int nrows, const int NV, const int CH, const int PF)
{
	const int64_t kend = ptr[nrows];
	for (int r = 0; r < nrows; r++) {
		float *o = y + (size_t)r * ly;
		__m256 a[8];
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			a[v] = CH && acc ? _mm256_loadu_ps(o + 8 * v) : _mm256_setzero_ps();
		int64_t k = CH ? cur[r] : ptr[r];
		const int64_t ke = ptr[r + 1];
		for (; k < ke && (!CH || idx[k] < cend); k++) {
			if (PF && k + 8 < kend) {
				const float *q = x + (size_t)idx[k + 8] * ld;
#pragma GCC unroll 4
				for (int v = 0; v < NV; v += 2)
					_mm_prefetch((const char *)(q + 8 * v), _MM_HINT_T0);
			}
			__m256 w = bcast_w(val, k, bf16);
			const float *p = x + (size_t)idx[k] * ld;
#pragma GCC unroll 8
			for (int v = 0; v < NV; v++)
				a[v] = _mm256_fmadd_ps(w, _mm256_loadu_ps(p + 8 * v), a[v]);
		}
		if (CH)
			cur[r] = k;
		if (mul) {
			const float *mr = mul + (size_t)r * ly;
#pragma GCC unroll 8
			for (int v = 0; v < NV; v++)
				a[v] = _mm256_mul_ps(a[v], _mm256_loadu_ps(mr + 8 * v));
		}
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			_mm256_storeu_ps(o + 8 * v, a[v]);
	}
}

static void spmm_rows_avx2(float *y, size_t ly, const float *mul, const int64_t *ptr,
			   int64_t *cur, int32_t cend, int acc, const int32_t *idx, const void *val,
			   int bf16, const float *x, size_t ld, int tl, int nrows)
{
#define SP_CALL(nv, b, ch, pf)                                                               \
	spmm_rows_t(y, ly, mul, ptr, cur, cend, acc, idx, val, b, x, ld, nrows, nv, ch, pf)
#define SP_CASE(nv)                                                                          \
	case nv:                                                                             \
		if (cur)                                                                     \
			bf16 ? SP_CALL(nv, 1, 1, 0) : SP_CALL(nv, 0, 1, 0);                   \
		else if (ld == ENG_TB)                                                       \
			bf16 ? SP_CALL(nv, 1, 0, 0) : SP_CALL(nv, 0, 0, 0);                   \
		else                                                                         \
			bf16 ? SP_CALL(nv, 1, 0, 1) : SP_CALL(nv, 0, 0, 1);                   \
		break;
	switch (tl / 8) {
		SP_CASE(8)
		SP_CASE(6)
		SP_CASE(4)
		SP_CASE(2)
	default:
		break;
	}
#undef SP_CASE
#undef SP_CALL
}

AI void pack_t(float *dst, const float *src, size_t lds, int n, const int NV)
{
	for (int c = 0; c < n; c++)
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			_mm256_store_ps(dst + (size_t)c * ENG_TB + 8 * v,
					_mm256_loadu_ps(src + (size_t)c * lds + 8 * v));
}

static void pack_avx2(float *dst, const float *src, size_t lds, int n, int tl)
{
	switch (tl / 16) {
	case 4:
		pack_t(dst, src, lds, n, 8);
		break;
	case 3:
		pack_t(dst, src, lds, n, 6);
		break;
	case 2:
		pack_t(dst, src, lds, n, 4);
		break;
	case 1:
		pack_t(dst, src, lds, n, 2);
		break;
	default:
		break;
	}
}

AI float hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* Token u of a row sits at (u / 64) * s + u % 64 from the row's start (s = 64: rows of ld
 * floats; s = rows * 64: blocked); a block of at most 64 tokens lies in one such piece. */
AI void sddmm_block(float *dw, const int64_t *ptr, const int32_t *idx, const float *dy,
		    size_t dyr, size_t dys, const float *x, size_t xr, size_t xs, int r0, int r1,
		    int t0, float *lanes, const int nv)
{
	const float *dyb = dy + (size_t)(t0 / 64) * dys + t0 % 64;
	for (int r = r0; r < r1; r++) {
		__m256 d[8];
		const float *dp = dyb + (size_t)r * dyr;
#pragma GCC unroll 8
		for (int v = 0; v < nv; v++)
			d[v] = _mm256_loadu_ps(dp + 8 * v);
		if (lanes) { /* the row's 16 lane-wise sums in token order: lanes 0-7, 8-15 */
			float *lp = lanes + (size_t)r * 16;
			__m256 lo = t0 ? _mm256_loadu_ps(lp) : _mm256_setzero_ps();
			__m256 hi = t0 ? _mm256_loadu_ps(lp + 8) : _mm256_setzero_ps();
#pragma GCC unroll 8
			for (int v = 0; v < nv; v += 2) {
				lo = _mm256_add_ps(lo, d[v]);
				hi = _mm256_add_ps(hi, d[v + 1]);
			}
			_mm256_storeu_ps(lp, lo);
			_mm256_storeu_ps(lp + 8, hi);
		}
		const float *xb = x + (size_t)(t0 / 64) * xs + t0 % 64;
		for (int64_t k = ptr[r]; k < ptr[r + 1]; k++) {
			const float *xp = xb + (size_t)idx[k] * xr;
			if (k + 4 < ptr[r1]) { /* as eng_avx512.c: a later row, every other line */
				const float *pf = xb + (size_t)idx[k + 4] * xr;
#pragma GCC unroll 4
				for (int v = 0; v < nv; v += 4)
					_mm_prefetch((const char *)(pf + 8 * v), _MM_HINT_T0);
			}
			__m256 a[4];
#pragma GCC unroll 4
			for (int v = 0; v < 4; v++)
				a[v] = v < nv ? _mm256_mul_ps(d[v], _mm256_loadu_ps(xp + 8 * v))
					      : _mm256_setzero_ps();
#pragma GCC unroll 8
			for (int v = 4; v < nv; v++)
				a[v & 3] = _mm256_fmadd_ps(d[v], _mm256_loadu_ps(xp + 8 * v), a[v & 3]);
			__m256 s = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
			/* the first chunk's store is 0 + its sum: the bits of += on zeroed memory */
			dw[k] = (t0 ? dw[k] : 0.0f) + hsum256(s);
		}
	}
}

static void sddmm_avx2(float *dw, const int64_t *ptr, const int32_t *idx, const float *dy,
		       size_t dyr, size_t dys, const float *x, size_t xr, size_t xs, int tl, int r0,
		       int r1, float *lanes)
{
	int t0 = 0;
	for (; t0 + 64 <= tl; t0 += 64)
		sddmm_block(dw, ptr, idx, dy, dyr, dys, x, xr, xs, r0, r1, t0, lanes, 8);
	if (t0 + 32 <= tl) {
		sddmm_block(dw, ptr, idx, dy, dyr, dys, x, xr, xs, r0, r1, t0, lanes, 4);
		t0 += 32;
	}
	if (t0 + 16 <= tl)
		sddmm_block(dw, ptr, idx, dy, dyr, dys, x, xr, xs, r0, r1, t0, lanes, 2);
}

/* 8x8 tile transpose in registers: dst[c][r] = src[r][c] */
AI void tile8(float *dst, size_t ldd, const float *src, size_t lds)
{
	__m256 r[8], t[8];
#pragma GCC unroll 8
	for (int i = 0; i < 8; i++)
		r[i] = _mm256_loadu_ps(src + i * lds);
#pragma GCC unroll 4
	for (int i = 0; i < 8; i += 2) {
		t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
	}
#pragma GCC unroll 2
	for (int i = 0; i < 8; i += 4) {
		r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
		r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
		r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
		r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
	}
	/* r[4g+m], 128-bit lane L: column 4L+m of source rows 4g..4g+3 */
#pragma GCC unroll 4
	for (int m = 0; m < 4; m++) {
		t[m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x20);
		t[4 + m] = _mm256_permute2f128_ps(r[m], r[4 + m], 0x31);
	}
#pragma GCC unroll 8
	for (int i = 0; i < 8; i++)
		_mm256_storeu_ps(dst + i * ldd, t[i]);
}

static void transpose_avx2(float *dst, size_t ldd, const float *src, size_t lds, int rows,
			   int cols)
{
	int r0 = 0;
	for (; r0 + 8 <= rows; r0 += 8) {
		int c0 = 0;
		for (; c0 + 8 <= cols; c0 += 8)
			tile8(dst + (size_t)c0 * ldd + r0, ldd, src + (size_t)r0 * lds + c0, lds);
		for (int c = c0; c < cols; c++)
			for (int r = r0; r < r0 + 8; r++)
				dst[(size_t)c * ldd + r] = src[(size_t)r * lds + c];
	}
	for (int r = r0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			dst[(size_t)c * ldd + r] = src[(size_t)r * lds + c];
}

/* ---- causal attention (eng_attn_body.h) ---- */

typedef __m256 vf;
#define VL 8
#define MR 6
#define NVMAX 2
#define vzero() _mm256_setzero_ps()
#define vset1(x) _mm256_set1_ps(x)
#define vloadu(p) _mm256_loadu_ps(p)
#define vstoreu(p, v) _mm256_storeu_ps(p, v)
#define vfmadd(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vmul(a, b) _mm256_mul_ps(a, b)
#define vadd(a, b) _mm256_add_ps(a, b)
#define vsub(a, b) _mm256_sub_ps(a, b)
#define vmax(a, b) _mm256_max_ps(a, b)
#define vhsum(v) hsum256(v)
#define ATT_NAME(name) name##_avx2

/* the first n of 8 lanes set */
AI __m256i lanes(int n)
{
	static const int32_t tab[16] = { -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0 };
	return _mm256_loadu_si256((const __m256i *)(tab + 8 - n));
}

AI __m256 vload_n(const float *p, int n, float fill)
{
	__m256i m = lanes(n);
	return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m),
				_mm256_castsi256_ps(m));
}

AI void vstore_n(float *p, __m256 v, int n)
{
	_mm256_maskstore_ps(p, lanes(n), v);
}

AI __m256 vkeep_n(__m256 v, int n)
{
	return _mm256_and_ps(v, _mm256_castsi256_ps(lanes(n)));
}

AI float vhmax(__m256 v)
{
	__m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_max_ps(s, _mm_movehl_ps(s, s));
	s = _mm_max_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* exp(x) for x <= 0 as gpt.c's exp_nonpos: x = n ln2 + r, degree-6 Taylor for exp(r) */
AI __m256 vexp_nonpos(__m256 x)
{
	x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
	const __m256 shifter = _mm256_set1_ps(12582912.0f);
	__m256 kf = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f),
						  shifter), shifter);
	__m256 r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(0.693145751953125f), x);
	r = _mm256_fnmadd_ps(kf, _mm256_set1_ps(1.42860682030941723e-6f), r);
	__m256 p = _mm256_set1_ps(1.0f / 720.0f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(kf),
						       _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#include "engine/eng_attn_body.h"

const eng_kern eng_kern_avx2 = {
	.spmm_rows = spmm_rows_avx2,
	.sddmm = sddmm_avx2,
	.pack = pack_avx2,
	.transpose = transpose_avx2,
	.res_bias = eng_res_bias_rows,
	.res_bias_blk = eng_res_bias_blk,
	.bias_tm = eng_bias_tm,
	.attn_fwd = attn_fwd_avx2,
	.attn_bwd = attn_bwd_avx2,
};
