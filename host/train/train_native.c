/* train_native.c - GPT projections on the native sparse engine (see train_native.h). */
#include "train/train_native.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "engine/eng.h"

struct train_native {
	gpt *m;
	const train_sparsity *ts;
	cs_pool *pool;
	eng_ctx *e;
	int vtype;
	int n;                 /* L * 4 projections */
	eng_spmat *sp;         /* [L * 4]; nnz-less (row_ptr NULL) for dense projections */
	int *tensor;           /* [L * 4] model tensor index */
	/* each sparse projection's input from its forward, token-minor, for its wgrad */
	float **xt;            /* [L * 4][IC][ld] */
	const float **xt_src;  /* the token-major input it was made from */
	int *xt_bt;            /* and its BT (0: none) */
	float *dyt;            /* token-minor output gradient [4C][ld] */
	float *dbl;            /* [4C][16]: the bias gradient's lane-wise sums (eng_sddmm_db) */
	float *dwnz;           /* [max nnz] */
	float *dwcsc;          /* [max nnz]: eng_sddmm_csc_ex's scratch */
	size_t dwnz_cap;
	/* packed gradients (tn_set_packed_grads): each sparse projection's dW at its nonzeros,
	 * CSR order, accumulated over the backwards since tn_zero_grads */
	int packed;
	float **gnz;           /* [L * 4][nnz] */
	size_t *gnz_cap;       /* [L * 4] */
	uint8_t *gfresh;       /* [L * 4] 1: the next backward overwrites gnz */
	int *proj_of;          /* [num_tensors] L * 4 index, or -1 */
	uint8_t *vfresh;       /* [L * 4] 1: the CSR values were written (tn_take_values) */
	eng_spmat **csc_due;  /* [L * 4] tn_sync's list of CSC refreshes */
};


/* TN_SPARSE_MAX_DENSITY: OpenBLAS's dense product is faster than the sparse kernels above
 * about 50% density (make bench: bench-engine). */
static int build_one(train_native *n, int k)
{
	const gpt_tensor *t = &n->m->tensors[n->tensor[k]];
	const uint8_t *mask = ts_mask(n->ts, n->tensor[k]);
	size_t kept = 0;
	for (size_t i = 0; mask && i < t->numel; i++)
		kept += mask[i] != 0;
	if (!mask || (double)kept > TN_SPARSE_MAX_DENSITY * (double)t->numel) {
		eng_spmat_free(&n->sp[k]);
		return CS_OK;
	}
	int rc = eng_spmat_build(&n->sp[k], n->m->params_memory + t->offset, mask, t->shape[0],
				 t->shape[1], n->vtype);
	if (rc)
		return rc;
	if ((size_t)n->sp[k].nnz > n->gnz_cap[k]) {
		float *nb = realloc(n->gnz[k], sizeof(float) * (size_t)n->sp[k].nnz);
		if (!nb)
			return CS_ERR_NO_MEM;
		n->gnz[k] = nb;
		n->gnz_cap[k] = (size_t)n->sp[k].nnz;
	}
	n->gfresh[k] = 1;
	if ((size_t)n->sp[k].nnz > n->dwnz_cap) {
		float *nb = realloc(n->dwnz, sizeof(float) * (size_t)n->sp[k].nnz);
		if (!nb)
			return CS_ERR_NO_MEM;
		n->dwnz = nb;
		nb = realloc(n->dwcsc, sizeof(float) * (size_t)n->sp[k].nnz);
		if (!nb)
			return CS_ERR_NO_MEM;
		n->dwcsc = nb;
		n->dwnz_cap = (size_t)n->sp[k].nnz;
	}
	return CS_OK;
}

int tn_open(train_native **out, gpt *m, const train_sparsity *ts, cs_pool *pool, int vtype,
	    char *err, size_t errlen)
{
	train_native *n = calloc(1, sizeof *n);
	if (!n)
		return CS_ERR_NO_MEM;
	n->m = m;
	n->ts = ts;
	n->pool = pool;
	n->vtype = vtype;
	int L = m->cfg.n_layer, C = m->cfg.n_embd;
	size_t ld = (size_t)eng_ld(m->B * m->T);
	n->n = L * GPT_NPROJ;
	n->sp = calloc(n->n, sizeof *n->sp);
	n->tensor = calloc(n->n, sizeof *n->tensor);
	n->xt = calloc(n->n, sizeof *n->xt);
	n->xt_src = calloc(n->n, sizeof *n->xt_src);
	n->xt_bt = calloc(n->n, sizeof *n->xt_bt);
	n->dyt = aligned_alloc(64, sizeof(float) * ld * 4 * C);
	n->dbl = aligned_alloc(64, sizeof(float) * 16 * 4 * C);
	n->gnz = calloc(n->n, sizeof *n->gnz);
	n->gnz_cap = calloc(n->n, sizeof *n->gnz_cap);
	n->gfresh = calloc(n->n, sizeof *n->gfresh);
	n->proj_of = malloc(sizeof *n->proj_of * (size_t)m->num_tensors);
	n->vfresh = calloc(n->n, sizeof *n->vfresh);
	n->csc_due = calloc(n->n, sizeof *n->csc_due);
	int rc = CS_ERR_NO_MEM;
	if (!n->sp || !n->tensor || !n->xt || !n->xt_src || !n->xt_bt || !n->dyt || !n->dbl ||
	    !n->gnz || !n->gnz_cap || !n->gfresh || !n->proj_of || !n->vfresh || !n->csc_due ||
	    eng_ctx_create(&n->e, pool))
		goto out_nomem;
	for (int i = 0; i < m->num_tensors; i++) {
		n->proj_of[i] = -1;
		if (m->tensors[i].proj >= 0) {
			n->proj_of[i] = m->tensors[i].layer * GPT_NPROJ + m->tensors[i].proj;
			n->tensor[n->proj_of[i]] = i;
		}
	}
	for (int k = 0; k < n->n; k++) {
		if (!ts_mask(n->ts, n->tensor[k]))
			continue;
		rc = build_one(n, k);
		if (rc) {
			snprintf(err, errlen, "native: cannot build the nonzeros of %s: %s",
				 m->tensors[n->tensor[k]].name, cs_strerror(rc));
			goto out_free;
		}
	}
	*out = n;
	return CS_OK;
out_nomem:
	snprintf(err, errlen, "native: out of memory for the sparse engine's buffers");
out_free:
	tn_close(n);
	return rc;
}

void tn_close(train_native *n)
{
	if (!n)
		return;
	for (int k = 0; n->sp && k < n->n; k++)
		eng_spmat_free(&n->sp[k]);
	eng_ctx_free(n->e);
	for (int k = 0; n->xt && k < n->n; k++)
		free(n->xt[k]);
	for (int k = 0; n->gnz && k < n->n; k++)
		free(n->gnz[k]);
	free(n->gnz);
	free(n->gnz_cap);
	free(n->gfresh);
	free(n->proj_of);
	free(n->vfresh);
	free(n->csc_due);
	free(n->sp);
	free(n->tensor);
	free(n->xt);
	free(n->xt_src);
	free(n->xt_bt);
	free(n->dyt);
	free(n->dbl);
	free(n->dwnz);
	free(n->dwcsc);
	free(n);
}

/* The projections whose CSR values the optimizer wrote (tn_take_values) get their CSC
 * values in one pool job after the loop: a fork/join per projection cost more than the copy
 * itself at 95% sparsity. */
int tn_sync(train_native *n, int masks_changed, char *err, size_t errlen)
{
	int ncsc = 0, rc = CS_OK;
	for (int k = 0; k < n->n; k++) {
		const gpt_tensor *t = &n->m->tensors[n->tensor[k]];
		if (masks_changed < 0 || (masks_changed && ts_mask_changed(n->ts, n->tensor[k])))
			rc = build_one(n, k);
		else if (n->sp[k].row_ptr && n->vfresh[k])
			n->csc_due[ncsc++] = &n->sp[k];
		else if (n->sp[k].row_ptr)
			eng_spmat_update_values(&n->sp[k], n->m->params_memory + t->offset, n->pool);
		n->vfresh[k] = 0;
		if (rc) {
			snprintf(err, errlen, "native: cannot rebuild the nonzeros of %s: %s",
				 t->name, cs_strerror(rc));
			break;
		}
	}
	eng_spmat_update_csc_many(n->csc_due, ncsc, n->pool);
	return rc;
}

void tn_mark_grads_clean(const train_native *n, train_sparsity *ts)
{
	for (int k = 0; k < n->n; k++)
		if (n->sp[k].row_ptr)
			ts_set_grad_clean(ts, n->tensor[k]);
}

void tn_set_packed_grads(train_native *n, int on)
{
	n->packed = on;
}

int tn_packed_grads(const train_native *n)
{
	return n->packed;
}

void tn_zero_grads(train_native *n)
{
	memset(n->gfresh, 1, (size_t)n->n);
}

float *tn_packed_grad(const train_native *n, int tensor, size_t *nnz)
{
	int k = tensor >= 0 && tensor < n->m->num_tensors ? n->proj_of[tensor] : -1;
	if (!n->packed || k < 0 || !n->sp[k].row_ptr)
		return NULL;
	*nnz = (size_t)n->sp[k].nnz;
	return n->gnz[k];
}

float *tn_take_values(train_native *n, int tensor, size_t nkept)
{
	int k = tensor >= 0 && tensor < n->m->num_tensors ? n->proj_of[tensor] : -1;
	if (k < 0 || !n->sp[k].row_ptr || n->sp[k].vtype != ENG_F32 ||
	    (size_t)n->sp[k].nnz != nkept)
		return NULL;
	n->vfresh[k] = 1;
	return n->sp[k].val;
}

size_t tn_weight_bytes(const train_native *n)
{
	size_t b = 0;
	for (int k = 0; k < n->n; k++)
		if (n->sp[k].row_ptr)
			b += eng_spmat_bytes(&n->sp[k]);
	return b;
}

const struct eng_spmat *tn_spmat(const train_native *n, int layer, int proj)
{
	const eng_spmat *s = &n->sp[layer * GPT_NPROJ + proj];
	return s->row_ptr ? s : NULL;
}

/* The token-minor copy of projection k's input, allocated at first use (none when the input
 * is token-minor itself: attn.qkv's and the MLP's when they run so). */
static float *xt_buf(train_native *n, int k)
{
	if (!n->xt[k]) {
		size_t ic = k % GPT_NPROJ == GPT_FC_PROJ ? 4 * (size_t)n->m->cfg.n_embd
							  : (size_t)n->m->cfg.n_embd;
		n->xt[k] = aligned_alloc(64, sizeof(float) * (size_t)eng_ld(n->m->B * n->m->T) * ic);
	}
	return n->xt[k];
}

static int nat_forward(void *ctx, float *y, const float *x, const float *w, int layer,
		       int proj, int BT, int IC, int OC)
{
	train_native *n = ctx;
	int k = layer * GPT_NPROJ + proj;
	if (!n->sp[k].row_ptr)
		return gpt_linear_host.forward(NULL, y, x, w, layer, proj, BT, IC, OC);
	if (BT > n->m->B * n->m->T)
		return CS_ERR_INVALID;
	if (!xt_buf(n, k))
		return CS_ERR_NO_MEM;
	n->xt_src[k] = x;
	n->xt_bt[k] = BT;
	return eng_spmm(n->e, y, &n->sp[k], 0, x, BT, n->xt[k]);
}

struct scatter_job {
	float *dw;
	const float *dwnz;
	const eng_spmat *s;
};

static void scatter_part(void *arg, int tid, int nth)
{
	struct scatter_job *j = arg;
	const eng_spmat *s = j->s;
	size_t lo, hi;
	cs_split((size_t)s->n_out, tid, nth, &lo, &hi);
	for (size_t i = lo; i < hi; i++) {
		float *d = j->dw + i * (size_t)s->n_in;
		for (int64_t q = s->row_ptr[i]; q < s->row_ptr[i + 1]; q++)
			d[s->col[q]] += j->dwnz[q];
	}
}

struct acc_job {
	float *g;
	const float *d;
	size_t n;
};

/* g += d, entries split (each sum is one thread's, so the bits do not depend on the split) */
static void acc_part(void *arg, int tid, int nth)
{
	struct acc_job *a = arg;
	size_t lo, hi;
	cs_split(a->n, tid, nth, &lo, &hi);
	for (size_t q = lo; q < hi; q++)
		a->g[q] += a->d[q];
}

/* dW at the nonzeros of projection k from token-minor dy and x (enum eng_tm layouts dy_tm,
 * x_tm): into its packed array, or scattered into the dense buffer dw; db, when not NULL,
 * += dy's row sums (eng_sddmm_ex) */
static void wgrad_into(train_native *n, const eng_spmat *s, float *out, float *db,
		       const float *dyt, int dy_tm, const float *xt, int x_tm, int BT)
{
	/* more inputs than outputs (mlp.proj): by column, streaming the fewer rows of dY^T
	 * past each row of X^T (the same bits) */
	if (s->n_in > s->n_out)
		eng_sddmm_csc_ex(n->pool, out, db, n->dwcsc, s, dyt, dy_tm, xt, x_tm, BT);
	else
		eng_sddmm_ex(n->pool, out, db, n->dbl, s, dyt, dy_tm, xt, x_tm, BT);
}

static int wgrad(train_native *n, int k, float *dw, float *db, const float *dyt, int dy_tm,
		 const float *xt, int x_tm, int BT)
{
	const eng_spmat *s = &n->sp[k];
	if (n->packed && n->gfresh[k]) {
		wgrad_into(n, s, n->gnz[k], db, dyt, dy_tm, xt, x_tm, BT);
		n->gfresh[k] = 0;
		return CS_OK;
	}
	wgrad_into(n, s, n->dwnz, db, dyt, dy_tm, xt, x_tm, BT);
	if (n->packed) { /* a later micro-batch: accumulate */
		struct acc_job a = { n->gnz[k], n->dwnz, (size_t)s->nnz };
		cs_pool_run(n->pool, acc_part, &a);
		return CS_OK;
	}
	struct scatter_job j = { dw, n->dwnz, s };
	cs_pool_run(n->pool, scatter_part, &j);
	return CS_OK;
}

static int nat_backward(void *ctx, float *dx, float *dw, const float *dy, const float *x,
			const float *w, int layer, int proj, int BT, int IC, int OC,
			int want_dense_dw)
{
	train_native *n = ctx;
	int k = layer * GPT_NPROJ + proj;
	const eng_spmat *s = &n->sp[k];
	if (!s->row_ptr)
		return gpt_linear_host.backward(NULL, dx, dw, dy, x, w, layer, proj, BT, IC, OC,
						want_dense_dw);
	if (BT > n->m->B * n->m->T)
		return CS_ERR_INVALID;
	/* dY^T for the weight gradient; on growth steps only the product's scratch */
	int rc = eng_spmm(n->e, dx, s, 1, dy, BT, n->dyt);
	if (rc)
		return rc;
	if (want_dense_dw) {
		/* growth steps: the dense gradient, fp32 */
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, BT, 1.0f, dy, OC, x,
			    IC, 1.0f, dw, IC);
		return CS_OK;
	}
	if (n->xt_src[k] != x || n->xt_bt[k] != BT) { /* not the last forward's input */
		if (!xt_buf(n, k))
			return CS_ERR_NO_MEM;
		eng_transpose_in(n->pool, n->xt[k], x, BT, IC, eng_ld(BT));
		n->xt_src[k] = x;
		n->xt_bt[k] = BT;
	}
	return wgrad(n, k, dw, NULL, n->dyt, ENG_TM_ROWS, n->xt[k], ENG_TM_ROWS, BT);
}

/* The MLP's hidden activations token-minor when both of its projections run here. */
static int nat_mlp_ld(void *ctx, int layer, int BT)
{
	train_native *n = ctx;
	if (BT < 1 || BT > n->m->B * n->m->T)
		return 0;
	return n->sp[layer * GPT_NPROJ + GPT_FC].row_ptr &&
			       n->sp[layer * GPT_NPROJ + GPT_FC_PROJ].row_ptr
		       ? eng_ld(BT)
		       : 0;
}

/* attention's output token-minor when attn.proj runs here (and attn.qkv: qkv_ld). */
static int nat_attn_ld(void *ctx, int layer, int BT)
{
	train_native *n = ctx;
	if (BT < 1 || BT > n->m->B * n->m->T)
		return 0;
	return n->sp[layer * GPT_NPROJ + GPT_ATTN_PROJ].row_ptr ? eng_ld(BT) : 0;
}

/* q, k, v token-minor when attn.qkv runs here. */
static int nat_qkv_ld(void *ctx, int layer, int BT)
{
	train_native *n = ctx;
	if (BT < 1 || BT > n->m->B * n->m->T)
		return 0;
	return n->sp[layer * GPT_NPROJ + GPT_QKV].row_ptr ? eng_ld(BT) : 0;
}

static int nat_forward_tm(void *ctx, float *y, const float *res, const float *bias,
			  const float *x, const float *w, int layer, int proj, int BT, int IC,
			  int OC, int ld, int blk)
{
	(void)w, (void)IC, (void)OC;
	train_native *n = ctx;
	int k = layer * GPT_NPROJ + proj;
	int y_minor = proj == GPT_QKV || proj == GPT_FC;
	if (!n->sp[k].row_ptr || ld != eng_ld(BT) || (res && y_minor) || (blk && !y_minor && !res))
		return CS_ERR_INVALID;
	/* x token-minor (qkv, fc: the LayerNorm's output; attn.proj: attention's; mlp.proj:
	 * GELU's), the wgrad's input itself; y token-minor for qkv and fc */
	n->xt_src[k] = NULL;
	n->xt_bt[k] = 0;
	/* the MLP's hidden activations (fc's output, mlp.proj's input) blocked, and with blk
	 * the LayerNorm outputs (qkv's and fc's input) and the residual stream */
	int x_tm = proj == GPT_FC_PROJ || (blk && y_minor) ? ENG_TM_BLOCKED : ENG_TM_ROWS;
	if (res) /* attn.proj, mlp.proj: the bias and residual add in the output pass */
		return eng_spmm_res_ex(n->e, y, blk ? ENG_TM_BLOCKED : 0, res, bias, &n->sp[k], x,
				       x_tm, BT, NULL);
	if (bias) /* qkv: its bias in the output pass */
		return eng_spmm_bias(n->e, y, proj == GPT_FC ? ENG_TM_BLOCKED : ENG_TM_ROWS, bias,
				     &n->sp[k], x, x_tm, BT);
	return eng_spmm_ex(n->e, y, proj == GPT_FC ? ENG_TM_BLOCKED : ENG_TM_ROWS, &n->sp[k], 0,
			   x, x_tm, BT, NULL);
}

/* a blocked [IC] x BT operand as rows in the projection's xt (which then caches no
 * packed copy); NULL when xt cannot be allocated */
static const float *x_rows(train_native *n, int k, const float *x, int IC, int BT)
{
	if (!xt_buf(n, k))
		return NULL;
	eng_tm_unblock(n->xt[k], x, IC, BT);
	n->xt_src[k] = NULL;
	n->xt_bt[k] = 0;
	return n->xt[k];
}

/* dW += dy^T x on a growth step by sgemm, which wants rows: a blocked operand is made rows
 * first (dy into dyt, x into the projection's xt); db += dy's row sums */
static int dense_dw_tm(train_native *n, int k, float *dw, float *db, const float *dy,
		       int dy_tm, const float *x, int x_tm, int BT, int IC, int OC)
{
	int ld = eng_ld(BT);
	if (dy_tm == ENG_TM_BLOCKED) {
		eng_tm_unblock(n->dyt, dy, OC, BT);
		dy = n->dyt;
	}
	if (x_tm == ENG_TM_BLOCKED && !(x = x_rows(n, k, x, IC, BT)))
		return CS_ERR_NO_MEM;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, OC, IC, BT, 1.0f, dy, ld, x, ld,
		    1.0f, dw, IC);
	if (db)
		bias_grad_tm_pool(n->pool, db, dy, OC, BT, ld);
	return CS_OK;
}

static int nat_backward_tm(void *ctx, float *dx, const float *dx_mul, float *dw, float *db,
			   const float *dy, const float *x, const float *w, int layer, int proj,
			   int BT, int IC, int OC, int ld, int blk, int want_dense_dw)
{
	(void)w;
	train_native *n = ctx;
	int k = layer * GPT_NPROJ + proj;
	const eng_spmat *s = &n->sp[k];
	int dy_minor = proj == GPT_QKV || proj == GPT_FC || blk;
	if (!s->row_ptr || ld != eng_ld(BT) || (dx_mul && proj != GPT_FC_PROJ) ||
	    (db && !dy_minor))
		return CS_ERR_INVALID;
	int rc;
	if (blk) { /* the blocked residual stream (gpt_linear_ops.res_blocked) */
		int dy_tm = proj == GPT_QKV ? ENG_TM_ROWS : ENG_TM_BLOCKED;
		int x_tm = proj == GPT_ATTN_PROJ ? ENG_TM_ROWS : ENG_TM_BLOCKED;
		/* dx: attention's gradient as rows (attn.proj: attention reads it per head in
		 * place), else blocked (fc's dY times GELU' for mlp.proj; the LayerNorm's dY
		 * for qkv and fc) */
		int dx_tm = proj == GPT_ATTN_PROJ ? ENG_TM_ROWS : ENG_TM_BLOCKED;
		rc = dx_mul ? eng_spmm_mul(n->e, dx, dx_tm, dx_mul, s, 1, dy, dy_tm, BT, NULL)
			    : eng_spmm_ex(n->e, dx, dx_tm, s, 1, dy, dy_tm, BT, NULL);
		if (rc)
			return rc;
		if (want_dense_dw)
			return dense_dw_tm(n, k, dw, db, dy, dy_tm, x, x_tm, BT, IC, OC);
		return wgrad(n, k, dw, db, dy, dy_tm, x, x_tm, BT);
	}
	if (proj == GPT_FC_PROJ || proj == GPT_ATTN_PROJ) { /* dy token-major, x token-minor
							     * (mlp.proj's blocked), dx too for
							     * mlp.proj (blocked) */
		int x_tm = proj == GPT_FC_PROJ ? ENG_TM_BLOCKED : ENG_TM_ROWS;
		rc = dx_mul ? eng_spmm_mul(n->e, dx, ENG_TM_BLOCKED, dx_mul, s, 1, dy, 0, BT,
					   n->dyt)
			    : eng_spmm_ex(n->e, dx, proj == GPT_FC_PROJ ? ENG_TM_BLOCKED : 0, s, 1,
					  dy, 0, BT, n->dyt);
		if (rc)
			return rc;
		if (want_dense_dw) { /* dW += dy^T x */
			/* sgemm wants rows */
			const float *xr = x_tm == ENG_TM_BLOCKED ? x_rows(n, k, x, IC, BT) : x;
			if (!xr)
				return CS_ERR_NO_MEM;
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasTrans, OC, IC, BT, 1.0f, dy, OC,
				    xr, ld, 1.0f, dw, IC);
			return CS_OK;
		}
		return wgrad(n, k, dw, NULL, n->dyt, ENG_TM_ROWS, x, x_tm, BT);
	}
	/* qkv, fc: dy (fc's blocked) and x token-minor, dx token-major */
	int dy_tm = proj == GPT_FC ? ENG_TM_BLOCKED : ENG_TM_ROWS;
	rc = eng_spmm_ex(n->e, dx, 0, s, 1, dy, dy_tm, BT, NULL);
	if (rc)
		return rc;
	if (want_dense_dw)
		return dense_dw_tm(n, k, dw, db, dy, dy_tm, x, ENG_TM_ROWS, BT, IC, OC);
	/* the bias gradient read with dy's rows in the weight gradient (the padding tokens of
	 * dy, which it sums, are zero: the model's token-minor arrays keep them so) */
	return wgrad(n, k, dw, db, dy, dy_tm, x, ENG_TM_ROWS, BT);
}

const gpt_linear_ops train_native_linear_ops = {
	.forward = nat_forward,
	.backward = nat_backward,
	.mlp_ld = nat_mlp_ld,
	.qkv_ld = nat_qkv_ld,
	.attn_ld = nat_attn_ld,
	.forward_tm = nat_forward_tm,
	.backward_tm = nat_backward_tm,
	.res_blocked = 1,
};
