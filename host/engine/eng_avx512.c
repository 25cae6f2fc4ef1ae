/*
 * eng_avx512.c - the engine's kernels with AVX-512F (compiled with -mavx512f -mfma; called
 * only when the CPU has them, see eng.c).
 *
 * spmm: the ENG_TB tokens of an output row are accumulated in four registers over the row
 * (or its column chunk); each nonzero is one broadcast and four fused multiply-adds on a row
 * of the packed input block.
 * sddmm: the output-gradient row's block (up to 256 tokens) sits in registers; each nonzero
 * of the row costs NV loads and NV FMAs into four chains, and one horizontal sum.
 */
#include <immintrin.h>
#include <math.h>

#include "engine/eng_impl.h"

#define AI static inline __attribute__((always_inline))
/* The products prefetch the input row of the entry SP_PF ahead when they read the strided
 * token-minor input itself (make bench: 8 best of 0-16); the packed block needs none. */
#ifndef SP_PF
#define SP_PF 8
#endif
/* The weight gradient may prefetch the activation row of the nonzero SD_PF ahead, every
 * other line (the L2 brings the line pairs); 0: none. On the Intel Xeon of
 * docs/measurements.md (48 KB L1, 2 MB L2) none is 4-12 % faster at every shape of the
 * training step than 2-12 (the hardware prefetchers follow the 256-byte pieces); on Zen 4
 * 4 was best among 2-8. */
#ifndef SD_PF
#define SD_PF 0
#endif

AI __m512 bcast_w(const void *val, int64_t k, int bf16)
{
	if (bf16)
		return _mm512_set1_ps(eng_bf16_to_f32(((const uint16_t *)val)[k]));
	return _mm512_set1_ps(((const float *)val)[k]);
}

/* Rows over a block of 16 * NV tokens (NV <= 4): the block's NV accumulators stay in
 * registers for the row's entries; each entry is one broadcast and NV fused multiply-adds
 * on a row of the input block, packed (contiguous, L2-resident: no prefetch, which only
 * costs issue slots there) or strided (PF: its lines prefetched SP_PF entries ahead).
 * CH: the row's entries of one column chunk (cur, cend, acc). */
AI void spmm_rows_t(float *y, size_t ly, const float *mul, const int64_t *ptr, int64_t *cur,
		    int32_t cend, int acc, const int32_t *idx, const void *val, const int bf16,
		    const float *x, size_t ld, int nrows, const int NV, const int CH, const int PF)
{
	const int64_t kend = ptr[nrows];
	for (int r = 0; r < nrows; r++) {
		float *o = y + (size_t)r * ly;
		__m512 a[4];
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			a[v] = CH && acc ? _mm512_loadu_ps(o + 16 * v) : _mm512_setzero_ps();
		int64_t k = CH ? cur[r] : ptr[r];
		const int64_t ke = ptr[r + 1];
		for (; k < ke && (!CH || idx[k] < cend); k++) {
			if (PF && SP_PF && k + SP_PF < kend) {
				const float *q = x + (size_t)idx[k + SP_PF] * ld;
#pragma GCC unroll 4
				for (int v = 0; v < NV; v++)
					_mm_prefetch((const char *)(q + 16 * v), _MM_HINT_T0);
			}
			__m512 w = bcast_w(val, k, bf16);
			const float *p = x + (size_t)idx[k] * ld;
#pragma GCC unroll 4
			for (int v = 0; v < NV; v++)
				a[v] = _mm512_fmadd_ps(w, _mm512_loadu_ps(p + 16 * v), a[v]);
		}
		if (CH)
			cur[r] = k;
		if (mul) {
			const float *mr = mul + (size_t)r * ly;
#pragma GCC unroll 4
			for (int v = 0; v < NV; v++)
				a[v] = _mm512_mul_ps(a[v], _mm512_loadu_ps(mr + 16 * v));
		}
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			_mm512_storeu_ps(o + 16 * v, a[v]);
	}
}

static void spmm_rows_avx512(float *y, size_t ly, const float *mul, const int64_t *ptr,
			     int64_t *cur, int32_t cend, int acc, const int32_t *idx,
			     const void *val, int bf16, const float *x, size_t ld, int tl,
			     int nrows)
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
	switch (tl / 16) {
		SP_CASE(4)
		SP_CASE(3)
		SP_CASE(2)
		SP_CASE(1)
	default:
		break;
	}
#undef SP_CASE
#undef SP_CALL
}

AI void pack_t(float *dst, const float *src, size_t lds, int n, const int NV)
{
	for (int c = 0; c < n; c++)
#pragma GCC unroll 4
		for (int v = 0; v < NV; v++)
			_mm512_store_ps(dst + (size_t)c * ENG_TB + 16 * v,
					_mm512_loadu_ps(src + (size_t)c * lds + 16 * v));
}

static void pack_avx512(float *dst, const float *src, size_t lds, int n, int tl)
{
	switch (tl / 16) {
	case 4:
		pack_t(dst, src, lds, n, 4);
		break;
	case 3:
		pack_t(dst, src, lds, n, 3);
		break;
	case 2:
		pack_t(dst, src, lds, n, 2);
		break;
	case 1:
		pack_t(dst, src, lds, n, 1);
		break;
	default:
		break;
	}
}

/* Token u of a row sits at (u / 64) * s + u % 64 from the row's start (s = 64: rows of ld
 * floats; s = rows * 64: blocked); a block's vector v at SD_AT(v, s) from its first token
 * (t0 % 64 is 0, or 32 when nv is 1). */
#define SD_AT(v, s) ((size_t)((v) / 4) * (s) + 16 * ((v) % 4))

AI void sddmm_block(float *dw, const int64_t *ptr, const int32_t *idx, const float *dy,
		    size_t dyr, size_t dys, const float *x, size_t xr, size_t xs, int r0, int r1,
		    int t0, float *lanes, const int nv)
{
	const float *dyb = dy + (size_t)(t0 / 64) * dys + t0 % 64;
	const float *xb = x + (size_t)(t0 / 64) * xs + t0 % 64;
	for (int r = r0; r < r1; r++) {
		__m512 d[16];
		const float *dp = dyb + (size_t)r * dyr;
#pragma GCC unroll 16
		for (int v = 0; v < nv; v++)
			d[v] = _mm512_loadu_ps(dp + SD_AT(v, dys));
		if (lanes) { /* the row's 16 lane-wise sums, in token order */
			float *lp = lanes + (size_t)r * 16;
			__m512 l = t0 ? _mm512_loadu_ps(lp) : _mm512_setzero_ps();
#pragma GCC unroll 16
			for (int v = 0; v < nv; v++)
				l = _mm512_add_ps(l, d[v]);
			_mm512_storeu_ps(lp, l);
		}
		for (int64_t k = ptr[r]; k < ptr[r + 1]; k++) {
			const float *xp = xb + (size_t)idx[k] * xr;
			if (SD_PF && k + SD_PF < ptr[r1]) { /* a later row: its lines come from L2 */
				const float *pf = xb + (size_t)idx[k + SD_PF] * xr;
#pragma GCC unroll 8
				for (int v = 0; v < nv; v += 2)
					_mm_prefetch((const char *)(pf + SD_AT(v, xs)), _MM_HINT_T0);
			}
			__m512 a[4];
#pragma GCC unroll 4
			for (int v = 0; v < 4; v++)
				a[v] = v < nv ? _mm512_mul_ps(d[v], _mm512_loadu_ps(xp + SD_AT(v, xs)))
					      : _mm512_setzero_ps();
#pragma GCC unroll 16
			for (int v = 4; v < nv; v++)
				a[v & 3] = _mm512_fmadd_ps(d[v], _mm512_loadu_ps(xp + SD_AT(v, xs)),
							   a[v & 3]);
			__m512 s = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
			/* the first chunk's store is 0 + its sum: the bits of += on zeroed memory */
			dw[k] = (t0 ? dw[k] : 0.0f) + _mm512_reduce_add_ps(s);
		}
	}
}

static void sddmm_avx512(float *dw, const int64_t *ptr, const int32_t *idx, const float *dy,
			 size_t dyr, size_t dys, const float *x, size_t xr, size_t xs, int tl,
			 int r0, int r1, float *lanes)
{
#define SD_CALL(nv) sddmm_block(dw, ptr, idx, dy, dyr, dys, x, xr, xs, r0, r1, t0, lanes, nv)
	int t0 = 0;
	for (; t0 + 256 <= tl; t0 += 256)
		SD_CALL(16);
	if (t0 + 128 <= tl) {
		SD_CALL(8);
		t0 += 128;
	}
	if (t0 + 64 <= tl) {
		SD_CALL(4);
		t0 += 64;
	}
	if (t0 + 32 <= tl) {
		SD_CALL(2);
		t0 += 32;
	}
	if (t0 + 16 <= tl)
		SD_CALL(1);
#undef SD_CALL
}

/* 16x16 tile transpose in registers: dst[c][r] = src[r][c] */
AI void tile16(float *dst, size_t ldd, const float *src, size_t lds)
{
	__m512 r[16], t[16];
#pragma GCC unroll 16
	for (int i = 0; i < 16; i++)
		r[i] = _mm512_loadu_ps(src + i * lds);
#pragma GCC unroll 8
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
#pragma GCC unroll 4
	for (int i = 0; i < 16; i += 4) {
		r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
		r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
		r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
		r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
	}
	/* r[4g+m], 128-bit lane L: column 4L+m of source rows 4g..4g+3; gather the four
	 * lanes L of r[m], r[4+m], r[8+m], r[12+m] into output row 4L+m */
#pragma GCC unroll 4
	for (int m = 0; m < 4; m++) {
		__m512 s0 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88);  /* lanes 0, 2 */
		__m512 s1 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xdd);  /* lanes 1, 3 */
		__m512 q0 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88);
		__m512 q1 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xdd);
		t[m] = _mm512_shuffle_f32x4(s0, q0, 0x88);
		t[8 + m] = _mm512_shuffle_f32x4(s0, q0, 0xdd);
		t[4 + m] = _mm512_shuffle_f32x4(s1, q1, 0x88);
		t[12 + m] = _mm512_shuffle_f32x4(s1, q1, 0xdd);
	}
#pragma GCC unroll 16
	for (int i = 0; i < 16; i++)
		_mm512_storeu_ps(dst + i * ldd, t[i]);
}

static void transpose_avx512(float *dst, size_t ldd, const float *src, size_t lds, int rows,
			     int cols)
{
	int r0 = 0;
	for (; r0 + 16 <= rows; r0 += 16) {
		int c0 = 0;
		for (; c0 + 16 <= cols; c0 += 16)
			tile16(dst + (size_t)c0 * ldd + r0, ldd, src + (size_t)r0 * lds + c0, lds);
		for (int c = c0; c < cols; c++)
			for (int r = r0; r < r0 + 16; r++)
				dst[(size_t)c * ldd + r] = src[(size_t)r * lds + c];
	}
	for (int r = r0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			dst[(size_t)c * ldd + r] = src[(size_t)r * lds + c];
}

/* ---- causal attention (eng_attn_body.h) ---- */

typedef __m512 vf;
#define VL 16
#define MR 4
#define NVMAX 4
#define vzero() _mm512_setzero_ps()
#define vset1(x) _mm512_set1_ps(x)
#define vloadu(p) _mm512_loadu_ps(p)
#define vstoreu(p, v) _mm512_storeu_ps(p, v)
#define vfmadd(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vmul(a, b) _mm512_mul_ps(a, b)
#define vadd(a, b) _mm512_add_ps(a, b)
#define vsub(a, b) _mm512_sub_ps(a, b)
#define vmax(a, b) _mm512_max_ps(a, b)
#define vhsum(v) _mm512_reduce_add_ps(v)
#define vhmax(v) _mm512_reduce_max_ps(v)
#define lanes(n) ((__mmask16)((1u << (n)) - 1u))
#define vload_n(p, n, fill) _mm512_mask_loadu_ps(_mm512_set1_ps(fill), lanes(n), p)
#define vstore_n(p, v, n) _mm512_mask_storeu_ps(p, lanes(n), v)
#define vkeep_n(v, n) _mm512_maskz_mov_ps(lanes(n), v)
#define ATT_NAME(name) name##_avx512

/* exp(x) for x <= 0 as gpt.c's exp_nonpos: x = n ln2 + r, degree-6 Taylor for exp(r) */
AI __m512 vexp_nonpos(__m512 x)
{
	x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
	const __m512 shifter = _mm512_set1_ps(12582912.0f);
	__m512 kf = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f),
						  shifter), shifter);
	__m512 r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(0.693145751953125f), x);
	r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(1.42860682030941723e-6f), r);
	__m512 p = _mm512_set1_ps(1.0f / 720.0f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	__m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(kf),
						       _mm512_set1_epi32(127)), 23);
	return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

#include "engine/eng_attn_body.h"

const eng_kern eng_kern_avx512 = {
	.spmm_rows = spmm_rows_avx512,
	.sddmm = sddmm_avx512,
	.pack = pack_avx512,
	.transpose = transpose_avx512,
	.res_bias = eng_res_bias_rows,
	.res_bias_blk = eng_res_bias_blk,
	.bias_tm = eng_bias_tm,
	.attn_fwd = attn_fwd_avx512,
	.attn_bwd = attn_bwd_avx512,
};
