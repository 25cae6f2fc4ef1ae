/*
 * train_sparsity.c - the trainer's adapter to host/sparsity (see train_sparsity.h).
 *
 * The sparsity layer sees q, k and v of every block as three tensors (sp_split_qkv), the
 * trainer one fused qkv weight: model tensor i maps to views vfirst[i] .. vfirst[i] +
 * vcount[i] - 1, and a split tensor's mask is assembled from its parts into fused[i]
 * whenever masks may have changed (refresh_fused), so the trainer, the native engine and
 * the device path keep reading one mask per model tensor.
 */
#include "train/train_sparsity.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"

#include "sparsity/sparsity.h"

struct train_sparsity {
	gpt *m;
	const sp_config *cfg;  /* the train_config's (tc_load parsed it), borrowed */
	sp_state *st;
	sp_param *params;
	/* the sparsity layer's tensors (q/k/v split) and the model tensor of each */
	int nv;
	sp_param *views;
	int *vsrc;
	size_t *voff;
	sp_part_name *vnames;
	int *vfirst, *vcount;  /* [num_tensors] */
	uint8_t **fused;       /* [num_tensors]: assembled mask of a split tensor, or NULL */
	sp_gpt_dims dims;
	int enabled;
	/* sparsity figures for the metrics, recomputed only when masks change */
	int stats_valid;
	double sp_sparse, sp_all;
	/* the last step's FLOPs and what they depend on; valid while the masks stay (counting
	 * the masks' kept entries every step took about 1% of a step at 90%) */
	int flops_valid, flops_dense, flops_seq, flops_n;
	sp_flops flops;
};

/* Assemble the masks of split tensors (a dense part contributes ones). */
static int refresh_fused(train_sparsity *ts)
{
	for (int i = 0; i < ts->m->num_tensors; i++) {
		if (ts->vcount[i] < 2)
			continue;
		int any = 0;
		for (int k = 0; k < ts->vcount[i]; k++)
			any |= sp_mask(ts->st, ts->vfirst[i] + k) != NULL;
		if (!any) {
			free(ts->fused[i]);
			ts->fused[i] = NULL;
			continue;
		}
		if (!ts->fused[i]) {
			ts->fused[i] = malloc(ts->m->tensors[i].numel);
			if (!ts->fused[i])
				return CS_ERR_NO_MEM;
		}
		for (int k = 0; k < ts->vcount[i]; k++) {
			int j = ts->vfirst[i] + k;
			const uint8_t *pm = sp_mask(ts->st, j);
			if (pm)
				memcpy(ts->fused[i] + ts->voff[j], pm, ts->views[j].numel);
			else
				memset(ts->fused[i] + ts->voff[j], 1, ts->views[j].numel);
		}
	}
	return CS_OK;
}

int ts_create(train_sparsity **out, train_config *cfg, gpt *m, float *adam_m, float *adam_v,
	      long total_steps, char *err, size_t errlen)
{
	train_sparsity *ts = calloc(1, sizeof *ts);
	if (!ts)
		return CS_ERR_NO_MEM;
	ts->m = m;
	*out = ts;
	ts->cfg = cfg->sparsity;
	if (sp_config_is_dense(ts->cfg))
		return CS_OK;
	int rc;
	ts->params = calloc(m->num_tensors, sizeof *ts->params);
	if (!ts->params) {
		rc = CS_ERR_NO_MEM;
		goto out_free;
	}
	for (int i = 0; i < m->num_tensors; i++) {
		const gpt_tensor *t = &m->tensors[i];
		sp_param *p = &ts->params[i];
		p->name = t->name;
		p->ndim = t->ndim;
		p->shape[0] = t->shape[0];
		p->shape[1] = t->ndim > 1 ? t->shape[1] : 0;
		p->numel = t->numel;
		p->w = m->params_memory + t->offset;
		p->grad = m->grads_memory + t->offset;
		p->adam_m = adam_m ? adam_m + t->offset : NULL;
		p->adam_v = adam_v ? adam_v + t->offset : NULL;
	}
	ts->nv = sp_split_qkv_count(ts->params, m->num_tensors);
	ts->views = calloc((size_t)ts->nv, sizeof *ts->views);
	ts->vsrc = calloc((size_t)ts->nv, sizeof *ts->vsrc);
	ts->voff = calloc((size_t)ts->nv, sizeof *ts->voff);
	ts->vnames = calloc((size_t)ts->nv, sizeof *ts->vnames);
	ts->vfirst = calloc(m->num_tensors, sizeof *ts->vfirst);
	ts->vcount = calloc(m->num_tensors, sizeof *ts->vcount);
	ts->fused = calloc(m->num_tensors, sizeof *ts->fused);
	if (!ts->views || !ts->vsrc || !ts->voff || !ts->vnames || !ts->vfirst || !ts->vcount ||
	    !ts->fused) {
		rc = CS_ERR_NO_MEM;
		goto out_free;
	}
	sp_split_qkv(ts->params, m->num_tensors, ts->views, ts->vsrc, ts->voff, ts->vnames);
	for (int j = ts->nv - 1; j >= 0; j--) {
		ts->vfirst[ts->vsrc[j]] = j;
		ts->vcount[ts->vsrc[j]]++;
	}
	rc = sp_create(&ts->st, ts->cfg, ts->views, ts->nv, cfg->seed, total_steps, err,
		       errlen);
	if (rc)
		goto out_free;
	rc = refresh_fused(ts);
	if (rc)
		goto out_free;
	/* the trainer's optimizer is AdamW (optim.h): zero weight, moments and gradient stay
	 * zero */
	sp_set_zero_preserving_optimizer(ts->st, 1);
	ts->dims = (sp_gpt_dims){ m->cfg.n_layer, m->cfg.n_head, m->cfg.n_embd,
				  m->cfg.block_size, m->cfg.vocab_size };
	ts->enabled = 1;
	return CS_OK;
out_free:
	ts_free(ts);
	*out = NULL;
	return rc;
}

void ts_free(train_sparsity *ts)
{
	if (!ts)
		return;
	sp_free(ts->st);
	free(ts->params);
	for (int i = 0; ts->fused && i < ts->m->num_tensors; i++)
		free(ts->fused[i]);
	free(ts->fused);
	free(ts->views);
	free(ts->vsrc);
	free(ts->voff);
	free(ts->vnames);
	free(ts->vfirst);
	free(ts->vcount);
	free(ts);
}

int ts_enabled(const train_sparsity *ts)
{
	return ts && ts->enabled;
}

#define ON(ts) ((ts) && (ts)->enabled)

int ts_wants_dense_grad(const train_sparsity *ts, long step)
{
	return ON(ts) ? sp_wants_dense_grad(ts->st, step) : 0;
}

int ts_mask_grads(train_sparsity *ts, long step)
{
	return ON(ts) ? sp_mask_grads(ts->st, step) : CS_OK;
}

void ts_set_grad_clean(train_sparsity *ts, int idx)
{
	if (ON(ts))
		for (int k = 0; k < ts->vcount[idx]; k++)
			sp_set_grad_clean(ts->st, ts->vfirst[idx] + k);
}

int ts_skip_optimizer(const train_sparsity *ts, long step)
{
	return ON(ts) ? sp_skip_optimizer(ts->st, step) : 0;
}

int ts_after_optimizer(train_sparsity *ts, long step)
{
	if (!ON(ts))
		return 0;
	int rc = sp_after_optimizer(ts->st, step);
	if (rc != 0)
		ts->stats_valid = ts->flops_valid = 0;
	if (rc > 0 && refresh_fused(ts))
		return CS_ERR_NO_MEM;
	return rc;
}

static void update_stats(train_sparsity *ts)
{
	sp_stats s;
	sp_get_stats(ts->st, &s);
	ts->sp_sparse = s.sparsity;
	ts->sp_all = s.overall;
	ts->stats_valid = 1;
}

int ts_apply(train_sparsity *ts)
{
	return ON(ts) ? sp_apply(ts->st) : CS_OK;
}

const uint8_t *ts_mask(const train_sparsity *ts, int idx)
{
	if (!ON(ts))
		return NULL;
	return ts->vcount[idx] > 1 ? ts->fused[idx] : sp_mask(ts->st, ts->vfirst[idx]);
}

double ts_mask_churn(const train_sparsity *ts)
{
	return ON(ts) ? sp_mask_churn(ts->st) : 0.0;
}

int ts_mask_changed(const train_sparsity *ts, int idx)
{
	int c = 0;
	for (int k = 0; ON(ts) && k < ts->vcount[idx]; k++)
		c |= sp_mask_changed(ts->st, ts->vfirst[idx] + k);
	return c;
}

double ts_tensor_sparsity(const train_sparsity *ts, int idx)
{
	if (!ON(ts))
		return 0.0;
	size_t nnz = 0;
	for (int k = 0; k < ts->vcount[idx]; k++)
		nnz += sp_tensor_nnz(ts->st, ts->vfirst[idx] + k);
	return 1.0 - (double)nnz / (double)ts->m->tensors[idx].numel;
}

int ts_num_views(const train_sparsity *ts)
{
	return ON(ts) ? ts->nv : 0;
}

const char *ts_view_name(const train_sparsity *ts, int v)
{
	return ts->views[v].name;
}

int ts_view_masked(const train_sparsity *ts, int v)
{
	return ON(ts) && sp_mask(ts->st, v) != NULL;
}

double ts_view_sparsity(const train_sparsity *ts, int v)
{
	return ON(ts) ? sp_tensor_sparsity(ts->st, v) : 0.0;
}

double ts_sparsity(const train_sparsity *ts)
{
	if (!ON(ts))
		return 0.0;
	if (!ts->stats_valid)
		update_stats((train_sparsity *)ts);
	return ts->sp_sparse;
}

double ts_sparsity_all(const train_sparsity *ts)
{
	if (!ON(ts))
		return 0.0;
	if (!ts->stats_valid)
		update_stats((train_sparsity *)ts);
	return ts->sp_all;
}

int ts_flops_step(train_sparsity *ts, long step, int seq_len, int n_seqs)
{
	if (!ON(ts))
		return CS_OK;
	int dense = sp_wants_dense_grad(ts->st, step);
	if (ts->flops_valid && ts->flops_dense == dense && ts->flops_seq == seq_len &&
	    ts->flops_n == n_seqs) {
		sp_flops_account(ts->st, &ts->flops);
		return CS_OK;
	}
	int rc = sp_flops_step(ts->st, step, &ts->dims, seq_len, n_seqs, &ts->flops);
	ts->flops_valid = !rc;
	ts->flops_dense = dense;
	ts->flops_seq = seq_len;
	ts->flops_n = n_seqs;
	return rc;
}

int ts_write_flops_json(const train_sparsity *ts, FILE *f)
{
	return ON(ts) ? sp_flops_write_json(ts->st, &ts->dims, ts->dims.block_size, f) : CS_OK;
}

void ts_print(const train_sparsity *ts, FILE *f)
{
	if (ON(ts))
		sp_print(ts->st, f);
}

int ts_save(const train_sparsity *ts, uint8_t **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	return ON(ts) ? sp_state_save_buf(ts->st, buf, len) : CS_OK;
}

int ts_load(train_sparsity *ts, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	if (!ON(ts))
		return len ? (snprintf(err, errlen, "the checkpoint has sparsity state but the "
						    "config has no sparsity block"),
			      CS_ERR_INVALID)
			   : CS_OK;
	ts->stats_valid = ts->flops_valid = 0;
	int rc = sp_state_load_buf(ts->st, buf, len, err, errlen);
	if (!rc && refresh_fused(ts))
		rc = CS_ERR_NO_MEM;
	return rc;
}

int ts_prune_remaining(train_sparsity *ts, double fraction, int global)
{
	if (!ON(ts))
		return CS_ERR_INVALID;
	int rc = sp_prune_remaining_scope(ts->st, fraction,
					  global ? SP_PRUNE_GLOBAL : SP_PRUNE_PER_TENSOR);
	ts->stats_valid = ts->flops_valid = 0;
	if (rc >= 0 && refresh_fused(ts))
		return CS_ERR_NO_MEM;
	return rc;
}

void ts_nnz(const train_sparsity *ts, size_t *nnz, size_t *numel)
{
	*nnz = *numel = 0;
	if (!ON(ts))
		return;
	sp_stats s;
	sp_get_stats(ts->st, &s);
	*nnz = s.sparse_nnz;
	*numel = s.sparse_numel;
}

size_t ts_nan_export(const train_sparsity *ts, int idx, float *w)
{
	const uint8_t *mask = ts_mask(ts, idx);
	return mask ? sp_nan_export(w, mask, ts->m->tensors[idx].numel) : 0;
}

int ts_nan_import(train_sparsity *ts, int idx, float *w)
{
	size_t n = ts->m->tensors[idx].numel;
	if (!ts_mask(ts, idx)) {
		for (size_t i = 0; i < n; i++)
			if (!isfinite(w[i]))
				w[i] = 0.0f;
		return CS_OK;
	}
	int rc = CS_OK;
	for (int k = 0; k < ts->vcount[idx] && !rc; k++) {
		int j = ts->vfirst[idx] + k;
		size_t pn = ts->views[j].numel;
		float *pw = w + ts->voff[j];
		if (!sp_mask(ts->st, j)) {
			for (size_t i = 0; i < pn; i++)
				if (!isfinite(pw[i]))
					pw[i] = 0.0f;
			continue;
		}
		uint8_t *mask = malloc(pn);
		if (!mask)
			return CS_ERR_NO_MEM;
		sp_nan_import(pw, mask, pn);
		rc = sp_set_mask(ts->st, j, mask);
		free(mask);
	}
	ts->stats_valid = ts->flops_valid = 0;
	if (!rc)
		rc = refresh_fused(ts);
	return rc;
}
