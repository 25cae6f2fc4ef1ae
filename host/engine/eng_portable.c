/*
 * eng_portable.c - the engine's kernels in plain C, for any CPU: the reference the SIMD
 * paths are checked against, and the path when the CPU has neither AVX2 nor AVX-512.
 * The loops are written so that the compiler can vectorize them for the base ISA.
 */
#include <math.h>

#include "common/cs_exp.h"
#include "engine/eng_impl.h"

static void spmm_rows_portable(float *y, size_t ly, const float *mul, const int64_t *ptr,
			       int64_t *cur, int32_t cend, int acc, const int32_t *idx,
			       const void *val, int bf16, const float *x, size_t ld, int tl,
			       int nrows)
{
	const float *vf = val;
	const uint16_t *vh = val;
	for (int r = 0; r < nrows; r++) {
		float *o = y + (size_t)r * ly;
		float a[ENG_TB] = { 0 };
		if (cur && acc)
			memcpy(a, o, sizeof(float) * (size_t)tl);
		int64_t k = cur ? cur[r] : ptr[r];
		for (; k < ptr[r + 1] && (!cur || idx[k] < cend); k++) {
			float w = bf16 ? eng_bf16_to_f32(vh[k]) : vf[k];
			const float *xr = x + (size_t)idx[k] * ld;
			for (int t = 0; t < tl; t++)
				a[t] += w * xr[t];
		}
		if (cur)
			cur[r] = k;
		if (mul)
			for (int t = 0; t < tl; t++)
				a[t] *= mul[(size_t)r * ly + t];
		memcpy(o, a, sizeof(float) * (size_t)tl);
	}
}

static void pack_portable(float *dst, const float *src, size_t lds, int n, int tl)
{
	for (int c = 0; c < n; c++)
		memcpy(dst + (size_t)c * ENG_TB, src + (size_t)c * lds, sizeof(float) * (size_t)tl);
}

/* Token t of a row at (t / 64) * s + t % 64 from its start (s = 64: rows of ld floats) */
static void sddmm_portable(float *dw, const int64_t *ptr, const int32_t *idx, const float *dy,
			   size_t dyr, size_t dys, const float *x, size_t xr, size_t xs, int tl,
			   int r0, int r1, float *lanes)
{
	for (int r = r0; r < r1; r++) {
		const float *d = dy + (size_t)r * dyr;
		if (lanes) { /* the row's 16 lane-wise sums, in token order */
			float *lp = lanes + (size_t)r * 16;
			for (int v = 0; v < 16; v++)
				lp[v] = 0.0f;
			for (int t = 0; t < tl; t += 16) {
				const float *dt = d + (size_t)(t / 64) * dys + t % 64;
				for (int v = 0; v < 16; v++)
					lp[v] += dt[v];
			}
		}
		for (int64_t k = ptr[r]; k < ptr[r + 1]; k++) {
			const float *xr0 = x + (size_t)idx[k] * xr;
			/* ENG_TPAD lane-wise partial sums (ld is a multiple): they vectorize
			 * without reassociation, and sum in the SIMD paths' lane order */
			float lane[16] = { 0 };
			for (int t = 0; t < tl; t += 16) {
				const float *dt = d + (size_t)(t / 64) * dys + t % 64;
				const float *xt = xr0 + (size_t)(t / 64) * xs + t % 64;
				for (int v = 0; v < 16; v++)
					lane[v] += dt[v] * xt[v];
			}
			float s = 0.0f;
			for (int v = 0; v < 16; v++)
				s += lane[v];
			dw[k] = s;
		}
	}
}

/* in 16x16 tiles, so that both sides stay in cache */
static void transpose_portable(float *dst, size_t ldd, const float *src, size_t lds, int rows,
			       int cols)
{
	for (int r0 = 0; r0 < rows; r0 += 16) {
		int r1 = r0 + 16 < rows ? r0 + 16 : rows;
		for (int c0 = 0; c0 < cols; c0 += 16) {
			int c1 = c0 + 16 < cols ? c0 + 16 : cols;
			for (int c = c0; c < c1; c++)
				for (int r = r0; r < r1; r++)
					dst[(size_t)c * ldd + r] = src[(size_t)r * lds + c];
		}
	}
}

/* ---- causal attention (eng_attn_body.h): one float per "vector" ---- */

#define AI static inline __attribute__((always_inline))
#define ATT_SCALAR 1
typedef float vf;
#define VL 1
#define vzero() 0.0f
#define vset1(x) (x)
#define vloadu(p) (*(p))
#define vstoreu(p, v) (*(p) = (v))
#define vfmadd(a, b, c) ((a) * (b) + (c))
#define vmul(a, b) ((a) * (b))
#define vadd(a, b) ((a) + (b))
#define vsub(a, b) ((a) - (b))
#define vmax(a, b) ((a) > (b) ? (a) : (b))
#define vhsum(v) (v)
#define vhmax(v) (v)
/* never reached with one lane (n < VL) */
#define vload_n(p, n, fill) ((void)(n), (fill))
#define vstore_n(p, v, n) ((void)(p), (void)(v), (void)(n))
#define vkeep_n(v, n) ((void)(n), (v))
#define ATT_NAME(name) name##_portable

/* exp(x) for x <= 0, the same bits as the model's scalar loops */
AI float vexp_nonpos(float x)
{
	return cs_exp_nonpos(x);
}

#include "engine/eng_attn_body.h"

const eng_kern eng_kern_portable = {
	.spmm_rows = spmm_rows_portable,
	.sddmm = sddmm_portable,
	.pack = pack_portable,
	.transpose = transpose_portable,
	.res_bias = eng_res_bias_rows,
	.res_bias_blk = eng_res_bias_blk,
	.bias_tm = eng_bias_tm,
	.attn_fwd = attn_fwd_portable,
	.attn_bwd = attn_bwd_portable,
};
