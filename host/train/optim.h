/*
 * optim.h - AdamW with decoupled weight decay, global-norm gradient clipping and the
 * warm-up + cosine learning-rate schedule, over fp32 master weights.
 * Not here: which tensors decay (the trainer passes wd = 0 for vectors) and masks.
 */
#ifndef CS_TRAIN_OPTIM_H
#define CS_TRAIN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "common/cs_pool.h"

/* Learning rate of 0-based step s of `steps`: linear warm-up over warmup steps to lr (step
 * s uses lr * (s+1) / warmup), then cosine decay from lr to min_lr at the last step. */
double lr_schedule(long s, long steps, long warmup, double lr, double min_lr);
/* sqrt(sum g^2), accumulated in double over fixed chunks of GRAD_NORM_CHUNK elements
 * (eight interleaved partial sums in each) whose sums are added in order: the same bits
 * for every thread count. */
#define GRAD_NORM_CHUNK 16384
double grad_global_norm(const float *g, size_t n);
double grad_global_norm_pool(cs_pool *pool, const float *g, size_t n);
/* The same over a gradient held in pieces (dense tensors and the packed nonzeros of sparse
 * ones), seg[i] of len[i] elements: each piece in chunks of GRAD_NORM_CHUNK, their sums
 * added in piece and chunk order (the same bits for every thread count). */
double grad_global_norm_segs_pool(cs_pool *pool, const float *const *seg, const size_t *len,
				  int nseg);
/* The same in parts, for ranks that each hold some of the chunks (the sharded optimizer):
 * the chunks of the pieces numbered in piece and chunk order, how many; the sum of
 * squares of chunks [c0, c1) into partial[c0..c1) (0, or -1 when out of memory); the norm
 * from every chunk's partial (added in order: the bits of grad_global_norm_segs_pool). */
size_t grad_norm_chunks(const size_t *len, int nseg);
int grad_norm_partials_segs_pool(cs_pool *pool, const float *const *seg, const size_t *len,
				 int nseg, size_t c0, size_t c1, double *partial);
double grad_norm_from_partials(const double *partial, size_t nchunks);
/* seg[i][0..len[i]) *= scale */
void grad_scale_segs_pool(cs_pool *pool, float *const *seg, const size_t *len, int nseg,
			  float scale);
/* g *= scale */
void grad_scale(float *g, size_t n, float scale);
void grad_scale_pool(cs_pool *pool, float *g, size_t n, float scale);
/* One AdamW step (t >= 1 is the count of steps including this one):
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   w -= lr * (m / (1-b1^t) / (sqrt(v / (1-b2^t)) + eps) + wd * w)           */
void adamw_update(float *w, float *m, float *v, const float *g, size_t n, float lr,
		  float beta1, float beta2, float eps, float wd, long t);
/* The same update at positions idx[0..nidx) only (sorted kept entries of a masked tensor:
 * pruned entries have zero weight, gradient and moments, which the full update leaves at
 * zero, so both give the same bits). */
/* AdamW on the entries idx[k] of w and g, with their moments packed: m[k], v[k]. */
void adamw_update_packed(float *w, float *m, float *v, const float *g, const uint32_t *idx,
			 size_t nidx, float lr, float beta1, float beta2, float eps, float wd,
			 long t);
/* As adamw_update_packed with the gradient packed too: g[k] belongs to entry idx[k]; wnz,
 * when not NULL, gets the new w[idx[k]] at k too (the native engine's compressed values,
 * so that it need not gather them from w). */
void adamw_update_nz(float *w, float *m, float *v, const float *g, const uint32_t *idx,
		     size_t nidx, float lr, float beta1, float beta2, float eps, float wd,
		     long t, float *wnz);
void adamw_update_idx(float *w, float *m, float *v, const float *g, const uint32_t *idx,
		      size_t nidx, float lr, float beta1, float beta2, float eps, float wd,
		      long t);

#endif /* CS_TRAIN_OPTIM_H */
