/*
 * kernel_ref.c - random sparse layers and naive reference kernels for the driver tests;
 * see kernel_ref.h. The references are deliberately slow and plain: one dense loop per
 * output element, in the order docs/architecture.md section 5 fixes.
 */
#include "kernel_ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numerics.h"

uint64_t kref_rng_state;

uint64_t kref_rng_next(void)
{
	uint64_t z = (kref_rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double kref_rng_unif(void)
{
	return (double)(kref_rng_next() >> 11) / 9007199254740992.0;
}

int kref_rng_int(int lo, int hi)
{
	return lo + (int)(kref_rng_next() % (uint64_t)(hi - lo + 1));
}

/* a random bf16: mostly moderate normals, sometimes wide exponents or specials */
uint16_t kref_rand_bf16(int specials)
{
	uint64_t r = kref_rng_next();
	if (specials && (r & 63) == 0) {
		static const uint16_t sp[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x0001,
					       0x8040, 0x0080, 0x7f7f, 0x00ff };
		return sp[(r >> 8) % (sizeof sp / sizeof sp[0])];
	}
	if (specials >= KREF_EXTREMES && (r & 63) == 1) /* near underflow or overflow */
		return (uint16_t)((r >> 8 & 0x8000) | (((r >> 16) & 1) ? 0x0080 + (r >> 20 & 0x3ff)
								       : 0x7e00 + (r >> 20 & 0x17f)));
	float f = (float)((kref_rng_unif() * 2 - 1) * ldexp(1.0, (int)(r >> 40 & 7) - 3));
	return nm_bf16_from_f32(f);
}

int kref_layer_make(struct kref_layer *L, int T, int N, int K, double sparsity, int specials,
		    int empty_lines)
{
	memset(L, 0, sizeof *L);
	L->T = T;
	L->N = N;
	L->K = K;
	L->mask = malloc((size_t)N * K);
	L->wf = malloc((size_t)N * K * sizeof *L->wf);
	L->wb = malloc((size_t)N * K * sizeof *L->wb);
	L->x = malloc((size_t)T * K * 2);
	L->dy = malloc((size_t)T * N * 2);
	if (!L->mask || !L->wf || !L->wb || !L->x || !L->dy)
		goto fail;
	for (size_t e = 0; e < (size_t)N * K; e++) {
		L->mask[e] = kref_rng_unif() >= sparsity;
		uint16_t b = kref_rand_bf16(specials);
		if ((kref_rng_next() & 31) == 0)
			b = (kref_rng_next() & 1) ? 0x8000 : 0; /* kept zeros still stream */
		L->wb[e] = b;
		L->wf[e] = nm_bf16_to_f32(b);
		if ((b & 0x7f80) == 0 && (b & 0x7f)) /* a bf16 subnormal: give its exact fp32 */
			L->wf[e] = ldexpf((float)(b & 0x7f), -133) * ((b & 0x8000) ? -1.0f : 1.0f);
		if ((b & 0x7f80) == 0x7f80 && (b & 0x7f))
			L->wf[e] = NAN;
	}
	if (empty_lines) {
		for (int i = 0; i < N; i += 3)
			memset(L->mask + (size_t)i * K, 0, (size_t)K);
		for (int j = 1; j < K; j += 4)
			for (int i = 0; i < N; i++)
				L->mask[(size_t)i * K + j] = 0;
	}
	for (size_t e = 0; e < (size_t)T * K; e++)
		L->x[e] = kref_rand_bf16(specials);
	for (size_t e = 0; e < (size_t)T * N; e++)
		L->dy[e] = kref_rand_bf16(specials);
	if (csd_sparse_from_dense(&L->sp, L->wf, L->mask, N, K) != CS_OK)
		goto fail;
	return 0;
fail:
	kref_layer_free(L);
	return -1;
}

void kref_layer_free(struct kref_layer *L)
{
	csd_sparse_free(&L->sp);
	free(L->mask);
	free(L->wf);
	free(L->wb);
	free(L->x);
	free(L->dy);
	memset(L, 0, sizeof *L);
}

uint16_t kref_wval(const struct kref_layer *L, size_t e)
{
	return nm_bf16_from_f32(L->wf[e]);
}

void kref_forward(uint32_t *y, const struct kref_layer *L)
{
	for (int t = 0; t < L->T; t++)
		for (int i = 0; i < L->N; i++) {
			uint32_t acc = 0;
			for (int j = 0; j < L->K; j++)
				if (L->mask[(size_t)i * L->K + j])
					acc = nm_fmac_bits(kref_wval(L, (size_t)i * L->K + j),
							   L->x[(size_t)t * L->K + j], acc);
			y[(size_t)t * L->N + i] = acc;
		}
}

void kref_backward(uint32_t *dx, const struct kref_layer *L)
{
	for (int t = 0; t < L->T; t++)
		for (int j = 0; j < L->K; j++) {
			uint32_t acc = 0;
			for (int i = 0; i < L->N; i++)
				if (L->mask[(size_t)i * L->K + j])
					acc = nm_fmac_bits(kref_wval(L, (size_t)i * L->K + j),
							   L->dy[(size_t)t * L->N + i], acc);
			dx[(size_t)t * L->K + j] = acc;
		}
}

int kref_tp(int T, int P, int din, int awords, int bcap)
{
	int tp = (T + P - 1) / P;
	if (tp > awords / din)
		tp = awords / din;
	if (tp > bcap)
		tp = bcap;
	return tp;
}

int kref_wgrad(uint32_t *dw, const struct kref_layer *L, int R, int C, int awords, int bwords)
{
	return kref_wgrad_tp(dw, L, R, C, kref_tp(L->T, R * C, L->K, awords, bwords));
}

int kref_wgrad_tp(uint32_t *dw, const struct kref_layer *L, int R, int C, int tp)
{
	int P = R * C;
	uint32_t *p = malloc((size_t)P * sizeof *p), *s = malloc((size_t)R * sizeof *s);
	if (!p || !s) {
		free(p);
		free(s);
		return -1;
	}
	size_t k = 0;
	for (int i = 0; i < L->N; i++)
		for (int j = 0; j < L->K; j++) {
			if (!L->mask[(size_t)i * L->K + j])
				continue;
			uint32_t total = 0;
			for (int t0 = 0, tile = 0; t0 < L->T; t0 += P * tp, tile++) {
				int n = L->T - t0 < P * tp ? L->T - t0 : P * tp;
				int tpk = (n + P - 1) / P;
				/* 1. per-PE partials over its tokens, padding reads zeros */
				for (int q = 0; q < P; q++) {
					uint32_t acc = 0;
					for (int u = 0; u < tpk; u++) {
						int t = t0 + q * tpk + u;
						uint16_t a = t < L->T ? L->x[(size_t)t * L->K + j] : 0;
						uint16_t b = t < L->T ? L->dy[(size_t)t * L->N + i] : 0;
						acc = nm_fmac_bits(a, b, acc);
					}
					p[q] = acc;
				}
				/* 2. rows east to west, 3. column south to north */
				for (int r = 0; r < R; r++) {
					uint32_t v = p[r * C + C - 1];
					for (int c = C - 2; c >= 0; c--)
						v = nm_add_bits(v, p[r * C + c]);
					s[r] = v;
				}
				uint32_t v = s[R - 1];
				for (int r = R - 2; r >= 0; r--)
					v = nm_add_bits(v, s[r]);
				/* 4. token tiles in order */
				total = tile == 0 ? v : nm_add_bits(total, v);
			}
			dw[k++] = total;
		}
	free(p);
	free(s);
	return 0;
}

size_t kref_out_len(const struct kref_layer *L, int k)
{
	return k == 0   ? (size_t)L->T * L->N
	       : k == 1 ? (size_t)L->T * L->K
	       : k == 2 ? (size_t)L->sp.nnz
			: (size_t)L->T * L->K + (size_t)L->sp.nnz;
}

int kref_run(csd_dev *dev, int k, float *out, const struct kref_layer *L)
{
	return k == 0   ? csd_forward(dev, out, L->x, &L->sp, L->T)
	       : k == 1 ? csd_backward(dev, out, L->dy, &L->sp, L->T)
	       : k == 2 ? csd_wgrad(dev, out, L->dy, L->x, &L->sp, L->T)
			: csd_backward_wgrad(dev, out, out + (size_t)L->T * L->K, L->dy, L->x,
					     &L->sp, L->T);
}

long kref_compare(csd_dev *dev, csd_dev *ref, int k, const struct kref_layer *L,
		  const char *what)
{
	size_t n = kref_out_len(L, k), m = n ? n : 1;
	float *a = malloc(m * sizeof *a), *b = malloc(m * sizeof *b);
	if (!a || !b) {
		free(a);
		free(b);
		printf("%s: out of memory\n", what);
		return CS_ERR_NO_MEM;
	}
	memset(a, 0xa5, m * sizeof *a); /* garbage: every output must be written */
	memset(b, 0x5a, m * sizeof *b);
	int ra = kref_run(dev, k, a, L), rb = kref_run(ref, k, b, L);
	long bad = 0;
	if (ra || rb) {
		printf("%s: rc %s (%s) / ref %s (%s)\n", what, cs_error_name(ra),
		       csd_last_error(dev), cs_error_name(rb), csd_last_error(ref));
		bad = ra ? ra : rb;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t ua = nm_f32_bits(a[i]), ub = nm_f32_bits(b[i]);
		if (ua != ub) {
			if (bad < 5)
				printf("%s: out[%zu] device 0x%08x model 0x%08x\n", what, i, ua, ub);
			bad++;
		}
	}
out:
	free(a);
	free(b);
	return bad;
}
