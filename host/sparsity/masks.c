/*
 * masks.c - the mask algorithms on one tensor (or one group for global scope): initial masks
 * (topk, random, from_zeros), magnitude pruning (static topk, GMP, GraNet's prune), drop and
 * grow (SET random growth, RigL and GraNet gradient growth), and the commit that zeroes
 * weights and AdamW moments wherever the mask changed. Every selection is an exact top-k
 * under one total order: score descending, then lower flat index (sp_cand_sort); balanced
 * groups (balance_out_groups / balance_in_groups) run the top-k once per row.
 * New masks are built in t->scratch and only become t->mask in sp_mask_commit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparsity/sp_internal.h"

size_t sp_row_len(const sp_tensor *t)
{
	return t->numel / (size_t)t->rows;
}

size_t sp_row_flat(const sp_tensor *t, int row, size_t j)
{
	size_t R = sp_row_len(t);
	if (t->rows == 1)
		return j;
	if (!t->rows_in)
		return (size_t)row * R + j;
	/* W [out, in] seen transposed: row g holds input columns [g*ipg, (g+1)*ipg) */
	size_t in = (size_t)t->shape[t->ndim - 1];
	size_t ipg = in / (size_t)t->rows;
	size_t o = j / ipg, c = j % ipg;
	return o * in + (size_t)row * ipg + c;
}

size_t sp_mask_count(const sp_tensor *t)
{
	if (!t->mask)
		return t->numel;
	/* 32-bit partial sums over blocks (masks hold 0 or 1): they vectorize */
	size_t n = 0;
	for (size_t b = 0; b < t->numel; b += 1u << 20) {
		size_t e = b + (1u << 20) < t->numel ? b + (1u << 20) : t->numel;
		uint32_t part = 0;
		for (size_t i = b; i < e; i++)
			part += t->mask[i];
		n += part;
	}
	return n;
}

double sp_tb(const sp_group *g, const sp_tensor *t, uint64_t seed, long tstep, size_t flat)
{
	switch (g->tiebreak) {
	case SP_TB_FIRST:
		/* Cerebras "first": eps*idx/N, the higher flat index wins a tie */
		return g->tiebreak_eps * (double)flat / (double)t->numel;
	case SP_TB_RANDOM:
		return g->tiebreak_eps *
		       sp_uniform(sp_stream_key(seed, t->name_hash, SP_TAG_TIEBREAK, (uint64_t)tstep),
				  flat);
	default:
		return 0;
	}
}

static double mag(float x)
{
	/* NaN/inf (sideband leftovers) rank below every finite kept weight */
	return isfinite(x) ? fabs((double)x) : -0.5;
}

/* Mark in out[] the k best of c[0..n) (sorted in place). */
static void mark_top(sp_cand *c, size_t n, size_t k, uint8_t *out)
{
	sp_cand_sort(c, n);
	if (k > n)
		k = n;
	for (size_t i = 0; i < k; i++)
		out[c[i].flat] = 1;
}

int sp_mask_init(const sp_group *g, sp_tensor *t, uint64_t seed, double s)
{
	memset(t->scratch, 0, t->numel);
	if (g->init_method == SP_INIT_FROM_ZEROS) {
		for (size_t i = 0; i < t->numel; i++)
			t->scratch[i] = t->w[i] != 0 && !isnan(t->w[i]);
		return 0;
	}
	size_t R = sp_row_len(t);
	sp_cand *c = malloc(R * sizeof *c);
	if (!c)
		return CS_ERR_NO_MEM;
	uint64_t key = sp_stream_key(seed, t->name_hash, SP_TAG_INIT, 0);
	for (int r = 0; r < t->rows; r++) {
		for (size_t j = 0; j < R; j++) {
			size_t f = sp_row_flat(t, r, j);
			c[j].flat = f;
			c[j].tensor = 0;
			if (g->init_method == SP_INIT_TOPK)
				c[j].score = mag(t->w[f]) + sp_tb(g, t, seed, 0, f);
			else
				c[j].score = sp_uniform(key, f);
		}
		mark_top(c, R, sp_keep_count(s, R), t->scratch);
	}
	free(c);
	return 0;
}

int sp_mask_magnitude(const sp_group *g, sp_tensor *t, uint64_t seed, long tstep, double s)
{
	memset(t->scratch, 0, t->numel);
	size_t R = sp_row_len(t);
	sp_cand *c = malloc(R * sizeof *c);
	if (!c)
		return CS_ERR_NO_MEM;
	for (int r = 0; r < t->rows; r++) {
		size_t k = sp_keep_count(s, R), n = 0;
		/* kept entries by |w|; pruned entries all rank below them, lower index first */
		for (size_t j = 0; j < R; j++) {
			size_t f = sp_row_flat(t, r, j);
			if (!t->mask[f])
				continue;
			c[n].flat = f;
			c[n].tensor = 0;
			c[n].score = mag(t->w[f]) + sp_tb(g, t, seed, tstep, f);
			n++;
		}
		mark_top(c, n, k, t->scratch);
		for (size_t j = 0; j < R && n < k; j++) {
			size_t f = sp_row_flat(t, r, j);
			if (!t->mask[f]) {
				t->scratch[f] = 1;
				n++;
			}
		}
	}
	free(c);
	return 0;
}

int sp_mask_drop_grow(const sp_group *g, sp_tensor *t, uint64_t seed, long tstep, double s,
		      double f, int by_grad, int granet)
{
	if (by_grad && !t->have_dense_grad)
		return CS_ERR_INVALID;
	memset(t->scratch, 0, t->numel);
	size_t R = sp_row_len(t);
	sp_cand *c = malloc(R * sizeof *c);
	if (!c)
		return CS_ERR_NO_MEM;
	uint64_t gkey = sp_stream_key(seed, t->name_hash, SP_TAG_GROW, (uint64_t)tstep);
	for (int r = 0; r < t->rows; r++) {
		size_t n = 0;
		for (size_t j = 0; j < R; j++) {
			size_t fl = sp_row_flat(t, r, j);
			if (!t->mask[fl])
				continue;
			c[n].flat = fl;
			c[n].tensor = 0;
			c[n].score = mag(t->w[fl]) + sp_tb(g, t, seed, tstep, fl);
			n++;
		}
		size_t target, keep;
		if (granet) {
			/* GraNet regeneration: remove ceil(r*nnz), regrow the same count */
			size_t nd = (size_t)ceil(f * (double)n);
			if (nd > n)
				nd = n;
			target = n;
			keep = n - nd;
		} else {
			size_t nd = (size_t)floor(f * (double)n + 0.5);
			if (nd > n)
				nd = n;
			target = sp_keep_count(s, R);
			keep = n - nd < target ? n - nd : target;
		}
		mark_top(c, n, keep, t->scratch);
		/* grow among everything not kept (just-dropped positions are eligible) */
		size_t m = 0;
		for (size_t j = 0; j < R; j++) {
			size_t fl = sp_row_flat(t, r, j);
			if (t->scratch[fl])
				continue;
			c[m].flat = fl;
			c[m].tensor = 0;
			if (by_grad) {
				float gv = t->dense_grad[fl];
				c[m].score = isfinite(gv) ? fabs((double)gv) : 0.0;
			} else {
				c[m].score = sp_uniform(gkey, fl);
			}
			m++;
		}
		mark_top(c, m, target - keep, t->scratch);
	}
	free(c);
	return 0;
}

int sp_mask_commit(sp_tensor *t)
{
	int changed = 0;
	for (size_t i = 0; i < t->numel; i++) {
		if (t->scratch[i] == t->mask[i])
			continue;
		changed = 1;
		t->flips++;
		t->mask[i] = t->scratch[i];
		/* dropped: value and moments go; grown: start at zero with zero moments */
		if (t->w)
			t->w[i] = 0;
		/* gradient and moments: written only where not zero already, so that a range
		 * nothing has written yet (fresh calloc'ed pages) stays unmapped: the trainer
		 * keeps the gradients and moments of masked tensors packed and never maps
		 * their dense ranges */
		sp_zero_f(t->g, i);
		sp_zero_f(t->m, i);
		sp_zero_f(t->v, i);
	}
	return changed;
}

int sp_mask_global_magnitude(const sp_group *g, sp_state *st, const sp_gstate *gs, long tstep,
			     double s)
{
	size_t ntot = 0, nkept = 0;
	for (int i = 0; i < gs->n; i++) {
		sp_tensor *t = &st->t[gs->tix[i]];
		if (!t->mask)
			continue;
		ntot += t->numel;
		nkept += sp_mask_count(t);
		memset(t->scratch, 0, t->numel);
	}
	size_t k = sp_keep_count(s, ntot);
	sp_cand *c = malloc((nkept ? nkept : 1) * sizeof *c);
	if (!c)
		return CS_ERR_NO_MEM;
	size_t n = 0;
	for (int i = 0; i < gs->n; i++) {
		sp_tensor *t = &st->t[gs->tix[i]];
		if (!t->mask)
			continue;
		for (size_t f = 0; f < t->numel; f++) {
			if (!t->mask[f])
				continue;
			c[n].flat = f;
			c[n].tensor = i;
			c[n].score = mag(t->w[f]) + sp_tb(g, t, st->seed, tstep, f);
			n++;
		}
	}
	sp_cand_sort(c, n);
	for (size_t j = 0; j < n && j < k; j++)
		st->t[gs->tix[c[j].tensor]].scratch[c[j].flat] = 1;
	/* sparsity went down: pruned entries come back in (tensor, index) order */
	for (int i = 0; i < gs->n && n < k; i++) {
		sp_tensor *t = &st->t[gs->tix[i]];
		if (!t->mask)
			continue;
		for (size_t f = 0; f < t->numel && n < k; f++) {
			if (!t->mask[f]) {
				t->scratch[f] = 1;
				n++;
			}
		}
	}
	free(c);
	return 0;
}
