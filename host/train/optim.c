/* optim.c - AdamW, clipping, schedule (see optim.h). */
#include "train/optim.h"

#include <math.h>
#include <stdlib.h>

double lr_schedule(long s, long steps, long warmup, double lr, double min_lr)
{
	if (s < warmup)
		return lr * (double)(s + 1) / (double)warmup;
	long decay = steps - warmup;
	if (decay <= 1)
		return lr;
	double frac = (double)(s - warmup) / (double)(decay - 1);
	if (frac > 1.0)
		frac = 1.0;
	double coeff = 0.5 * (1.0 + cos(M_PI * frac));
	return min_lr + coeff * (lr - min_lr);
}

/* sum of g[i]^2 over [i0, i1) in double: eight interleaved partial sums (they vectorize
 * and are not one latency-bound chain), added in a fixed order */
static double chunk_sumsq(const float *g, size_t i0, size_t i1)
{
	double p[8] = { 0 };
	size_t i = i0;
	for (; i + 8 <= i1; i += 8)
		for (int j = 0; j < 8; j++)
			p[j] += (double)g[i + j] * g[i + j];
	for (int j = 0; i < i1; i++, j++)
		p[j] += (double)g[i] * g[i];
	return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

struct norm_job {
	const float *g;
	float *gs;
	size_t n;
	double *partial; /* [chunks] */
	float scale;
};

static void norm_job(void *va, int tid, int nth)
{
	struct norm_job *a = va;
	size_t chunks = (a->n + GRAD_NORM_CHUNK - 1) / GRAD_NORM_CHUNK, lo, hi;
	cs_split(chunks, tid, nth, &lo, &hi);
	for (size_t c = lo; c < hi; c++) {
		size_t i0 = c * GRAD_NORM_CHUNK, i1 = i0 + GRAD_NORM_CHUNK;
		if (i1 > a->n)
			i1 = a->n;
		a->partial[c] = chunk_sumsq(a->g, i0, i1);
	}
}

double grad_global_norm_pool(cs_pool *pool, const float *g, size_t n)
{
	size_t chunks = (n + GRAD_NORM_CHUNK - 1) / GRAD_NORM_CHUNK;
	double one[1], *partial = chunks <= 1 ? one : malloc(chunks * sizeof(double));
	struct norm_job a = { .g = g, .n = n, .partial = partial };
	if (!partial) { /* no memory: the same sums on this thread */
		double s = 0.0;
		for (size_t c = 0; c < chunks; c++)
			s += chunk_sumsq(g, c * GRAD_NORM_CHUNK,
					 (c + 1) * GRAD_NORM_CHUNK < n ? (c + 1) * GRAD_NORM_CHUNK : n);
		return sqrt(s);
	}
	if (chunks)
		cs_pool_run(chunks > 1 ? pool : NULL, norm_job, &a);
	double s = 0.0;
	for (size_t c = 0; c < chunks; c++)
		s += partial[c];
	if (partial != one)
		free(partial);
	return sqrt(s);
}

double grad_global_norm(const float *g, size_t n)
{
	return grad_global_norm_pool(NULL, g, n);
}

static void scale_job(void *va, int tid, int nth)
{
	struct norm_job *a = va;
	size_t lo, hi;
	cs_split(a->n, tid, nth, &lo, &hi);
	for (size_t i = lo; i < hi; i++)
		a->gs[i] *= a->scale;
}

void grad_scale_pool(cs_pool *pool, float *g, size_t n, float scale)
{
	struct norm_job a = { .gs = g, .n = n, .scale = scale };
	cs_pool_run(pool, scale_job, &a);
}

void grad_scale(float *g, size_t n, float scale)
{
	grad_scale_pool(NULL, g, n, scale);
}

struct segs_job {
	const float *const *seg;
	float *const *sseg;
	const size_t *len;
	const size_t *first; /* [nseg + 1] first chunk of each piece */
	int nseg;
	double *partial;
	size_t c0, c1; /* the chunks to sum */
	float scale;
};

static void segs_norm_job(void *va, int tid, int nth)
{
	struct segs_job *a = va;
	size_t lo, hi;
	cs_split(a->c1 - a->c0, tid, nth, &lo, &hi);
	lo += a->c0;
	hi += a->c0;
	int s = 0;
	for (size_t c = lo; c < hi; c++) {
		while (a->first[s + 1] <= c)
			s++;
		size_t i0 = (c - a->first[s]) * GRAD_NORM_CHUNK, i1 = i0 + GRAD_NORM_CHUNK;
		if (i1 > a->len[s])
			i1 = a->len[s];
		a->partial[c] = chunk_sumsq(a->seg[s], i0, i1);
	}
}

size_t grad_norm_chunks(const size_t *len, int nseg)
{
	size_t c = 0;
	for (int s = 0; s < nseg; s++)
		c += (len[s] + GRAD_NORM_CHUNK - 1) / GRAD_NORM_CHUNK;
	return c;
}

int grad_norm_partials_segs_pool(cs_pool *pool, const float *const *seg, const size_t *len,
				 int nseg, size_t c0, size_t c1, double *partial)
{
	size_t *first = malloc(sizeof(size_t) * ((size_t)nseg + 1));
	if (!first)
		return -1;
	first[0] = 0;
	for (int s = 0; s < nseg; s++)
		first[s + 1] = first[s] + (len[s] + GRAD_NORM_CHUNK - 1) / GRAD_NORM_CHUNK;
	if (c1 > first[nseg])
		c1 = first[nseg];
	struct segs_job a = { .seg = seg, .len = len, .first = first, .nseg = nseg,
			      .partial = partial, .c0 = c0, .c1 = c1 };
	if (c1 > c0)
		cs_pool_run(pool, segs_norm_job, &a);
	free(first);
	return 0;
}

double grad_norm_from_partials(const double *partial, size_t nchunks)
{
	double sum = 0.0;
	for (size_t c = 0; c < nchunks; c++)
		sum += partial[c];
	return sqrt(sum);
}

double grad_global_norm_segs_pool(cs_pool *pool, const float *const *seg, const size_t *len,
				  int nseg)
{
	size_t nc = grad_norm_chunks(len, nseg);
	double *partial = malloc(sizeof(double) * (nc ? nc : 1)), sum = 0.0;
	if (!partial || grad_norm_partials_segs_pool(pool, seg, len, nseg, 0, nc, partial)) {
		/* no memory: the same sums on this thread */
		for (int s = 0; s < nseg; s++)
			for (size_t i0 = 0; i0 < len[s]; i0 += GRAD_NORM_CHUNK)
				sum += chunk_sumsq(seg[s], i0,
						   i0 + GRAD_NORM_CHUNK < len[s] ? i0 + GRAD_NORM_CHUNK
										 : len[s]);
		free(partial);
		return sqrt(sum);
	}
	sum = grad_norm_from_partials(partial, nc);
	free(partial);
	return sum;
}

static void segs_scale_job(void *va, int tid, int nth)
{
	struct segs_job *a = va;
	for (int s = 0; s < a->nseg; s++) {
		size_t lo, hi;
		cs_split(a->len[s], tid, nth, &lo, &hi);
		float *g = a->sseg[s];
		for (size_t i = lo; i < hi; i++)
			g[i] *= a->scale;
	}
}

void grad_scale_segs_pool(cs_pool *pool, float *const *seg, const size_t *len, int nseg,
			  float scale)
{
	struct segs_job a = { .sseg = seg, .len = len, .nseg = nseg, .scale = scale };
	cs_pool_run(pool, segs_scale_job, &a);
}

void adamw_update(float *w, float *m, float *v, const float *g, size_t n, float lr,
		  float beta1, float beta2, float eps, float wd, long t)
{
	float c1 = 1.0f / (1.0f - powf(beta1, (float)t));
	float c2 = 1.0f / (1.0f - powf(beta2, (float)t));
	for (size_t i = 0; i < n; i++) {
		float mi = beta1 * m[i] + (1.0f - beta1) * g[i];
		float vi = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
		m[i] = mi;
		v[i] = vi;
		float mhat = mi * c1, vhat = vi * c2;
		w[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * w[i]);
	}
}

void adamw_update_packed(float *w, float *m, float *v, const float *g, const uint32_t *idx,
			 size_t nidx, float lr, float beta1, float beta2, float eps, float wd,
			 long t)
{
	float c1 = 1.0f / (1.0f - powf(beta1, (float)t));
	float c2 = 1.0f / (1.0f - powf(beta2, (float)t));
	for (size_t k = 0; k < nidx; k++) {
		size_t i = idx[k];
		float gi = g[i];
		float mi = beta1 * m[k] + (1.0f - beta1) * gi;
		float vi = beta2 * v[k] + (1.0f - beta2) * gi * gi;
		m[k] = mi;
		v[k] = vi;
		float mhat = mi * c1, vhat = vi * c2;
		w[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * w[i]);
	}
}

/* How many kept entries ahead adamw_update_nz prefetches its weight: 32-64 measured best
 * on Zen 4 (a third less time than none at 90-95 %). */
#define ADAMW_PF 32
/* adamw_update_nz's chunk of entries: the moments' step over the chunk (contiguous: it
 * vectorizes, the square root and the division with it), then the scattered weights */
#define ADAMW_CHUNK 256

static __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void
adamw_moments(float *restrict u, float *restrict m, float *restrict v, const float *restrict g,
	      size_t n, float beta1, float beta2, float eps, float c1, float c2)
{
	for (size_t k = 0; k < n; k++) {
		float gi = g[k];
		float mi = beta1 * m[k] + (1.0f - beta1) * gi;
		float vi = beta2 * v[k] + (1.0f - beta2) * gi * gi;
		m[k] = mi;
		v[k] = vi;
		float mhat = mi * c1, vhat = vi * c2;
		u[k] = mhat / (sqrtf(vhat) + eps);
	}
}

/* The same expressions as adamw_update_idx, in two passes per chunk (identical bits: no
 * operation is fused or reordered, -ffp-contract=off). */
void adamw_update_nz(float *w, float *m, float *v, const float *g, const uint32_t *idx,
		     size_t nidx, float lr, float beta1, float beta2, float eps, float wd, long t,
		     float *wnz)
{
	float c1 = 1.0f / (1.0f - powf(beta1, (float)t));
	float c2 = 1.0f / (1.0f - powf(beta2, (float)t));
	float u[ADAMW_CHUNK];
	for (size_t k0 = 0; k0 < nidx; k0 += ADAMW_CHUNK) {
		size_t n = nidx - k0 < ADAMW_CHUNK ? nidx - k0 : ADAMW_CHUNK;
		adamw_moments(u, m + k0, v + k0, g + k0, n, beta1, beta2, eps, c1, c2);
		for (size_t q = 0; q < n; q++) {
			size_t k = k0 + q;
			/* the kept weights are scattered over the dense tensor (a line each at
			 * 95 %), which the step has evicted: fetch them ahead */
			if (k + ADAMW_PF < nidx)
				__builtin_prefetch(w + idx[k + ADAMW_PF], 1);
			size_t i = idx[k];
			float wi = w[i] - lr * (u[q] + wd * w[i]);
			w[i] = wi;
			if (wnz)
				wnz[k] = wi;
		}
	}
}

void adamw_update_idx(float *w, float *m, float *v, const float *g, const uint32_t *idx,
		      size_t nidx, float lr, float beta1, float beta2, float eps, float wd,
		      long t)
{
	float c1 = 1.0f / (1.0f - powf(beta1, (float)t));
	float c2 = 1.0f / (1.0f - powf(beta2, (float)t));
	for (size_t k = 0; k < nidx; k++) {
		size_t i = idx[k];
		float mi = beta1 * m[i] + (1.0f - beta1) * g[i];
		float vi = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
		m[i] = mi;
		v[i] = vi;
		float mhat = mi * c1, vhat = vi * c2;
		w[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * w[i]);
	}
}
