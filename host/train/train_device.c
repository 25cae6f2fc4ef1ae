/* train_device.c - GPT projections through the device API (see train_device.h). */
#include "train/train_device.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "common/numerics.h"
#include "driver/csd.h"
#include "driver/plan.h"

struct train_device {
	csd_dev *dev;
	gpt *m;
	const train_sparsity *ts;
	int n;                 /* L * 4 projections */
	csd_sparse *sp;        /* [L * 4] */
	int *tensor;           /* [L * 4] model tensor index */
	uint8_t *ones;         /* all-ones mask for dense projections */
	uint16_t *dyb;         /* [BT, 4C] bf16 scratch */
	/* each projection's bf16 input from its forward, reused by its weight gradient */
	uint16_t **xb;         /* [L * 4][BT, IC] */
	const float **xb_src;  /* the fp32 input it was rounded from */
	int *xb_bt;            /* and its BT (0: none) */
	float *dwnz;           /* [max nnz] */
	csd_counters last;     /* what td_dev_counters read last */
	size_t dwnz_cap;
	char err[256];
};

static int build_one_mask(train_device *d, int k, const uint8_t *mask)
{
	const gpt_tensor *t = &d->m->tensors[d->tensor[k]];
	csd_sparse_free(&d->sp[k]);
	int rc = csd_sparse_from_dense(&d->sp[k], d->m->params_memory + t->offset,
				       mask ? mask : d->ones, t->shape[0], t->shape[1]);
	if (rc)
		return rc;
	if ((size_t)d->sp[k].nnz > d->dwnz_cap) {
		float *nb = realloc(d->dwnz, sizeof(float) * (size_t)d->sp[k].nnz);
		if (!nb)
			return CS_ERR_NO_MEM;
		d->dwnz = nb;
		d->dwnz_cap = (size_t)d->sp[k].nnz;
	}
	return CS_OK;
}

static int build_one(train_device *d, int k)
{
	return build_one_mask(d, k, ts_mask(d->ts, d->tensor[k]));
}

int td_dev_use_mask(train_device *d, int layer, int proj, const uint8_t *mask)
{
	return build_one_mask(d, layer * GPT_NPROJ + proj, mask);
}

int td_dev_open(train_device **out, const char *uri, gpt *m, const train_sparsity *ts,
		char *err, size_t errlen)
{
	train_device *d = calloc(1, sizeof *d);
	if (!d)
		return CS_ERR_NO_MEM;
	d->m = m;
	d->ts = ts;
	int L = m->cfg.n_layer, C = m->cfg.n_embd;
	size_t BT = (size_t)m->B * m->T;
	d->n = L * GPT_NPROJ;
	d->sp = calloc(d->n, sizeof *d->sp);
	d->tensor = calloc(d->n, sizeof *d->tensor);
	d->ones = malloc((size_t)4 * C * C);
	d->dyb = malloc(sizeof(uint16_t) * BT * 4 * C);
	d->xb = calloc(d->n, sizeof *d->xb);
	d->xb_src = calloc(d->n, sizeof *d->xb_src);
	d->xb_bt = calloc(d->n, sizeof *d->xb_bt);
	int rc = CS_ERR_NO_MEM;
	if (!d->sp || !d->tensor || !d->ones || !d->dyb || !d->xb || !d->xb_src || !d->xb_bt)
		goto out_free;
	for (int k = 0; k < d->n; k++) {
		size_t ic = k % GPT_NPROJ == GPT_FC_PROJ ? 4 * (size_t)C : (size_t)C;
		if (!(d->xb[k] = malloc(sizeof(uint16_t) * BT * ic)))
			goto out_free;
	}
	memset(d->ones, 1, (size_t)4 * C * C);
	for (int i = 0; i < m->num_tensors; i++)
		if (m->tensors[i].proj >= 0)
			d->tensor[m->tensors[i].layer * GPT_NPROJ + m->tensors[i].proj] = i;
	rc = csd_open(&d->dev, uri);
	if (rc) {
		snprintf(err, errlen, "device.kind: cannot open device '%s': %s", uri,
			 cs_strerror(rc));
		goto out_free;
	}
	for (int k = 0; k < d->n; k++) {
		rc = build_one(d, k);
		if (rc) {
			snprintf(err, errlen, "device: cannot build nonzero list of %s: %s",
				 m->tensors[d->tensor[k]].name, cs_strerror(rc));
			goto out_free;
		}
	}
	csd_reset_counters(d->dev);
	*out = d;
	return CS_OK;
out_free:
	td_dev_close(d);
	return rc;
}

void td_dev_close(train_device *d)
{
	if (!d)
		return;
	for (int k = 0; d->sp && k < d->n; k++)
		csd_sparse_free(&d->sp[k]);
	if (d->dev)
		csd_close(d->dev);
	free(d->sp);
	free(d->tensor);
	free(d->ones);
	for (int k = 0; d->xb && k < d->n; k++)
		free(d->xb[k]);
	free(d->xb);
	free(d->xb_src);
	free(d->xb_bt);
	free(d->dyb);
	free(d->dwnz);
	free(d);
}

int td_dev_sync(train_device *d, int masks_changed, char *err, size_t errlen)
{
	for (int k = 0; k < d->n; k++) {
		int rc;
		const gpt_tensor *t = &d->m->tensors[d->tensor[k]];
		if (masks_changed < 0 || (masks_changed && ts_mask_changed(d->ts, d->tensor[k])))
			rc = build_one(d, k);
		else
			rc = csd_sparse_update_values(&d->sp[k], d->m->params_memory + t->offset);
		if (rc) {
			snprintf(err, errlen, "device: cannot refresh %s: %s", t->name,
				 cs_strerror(rc));
			return rc;
		}
	}
	return CS_OK;
}

void td_dev_counters(train_device *d, uint64_t *cycles, double *utilization, uint64_t *bytes_out,
		     uint64_t *bytes_in)
{
	csd_counters c;
	*cycles = 0;
	*utilization = 0.0;
	*bytes_out = *bytes_in = 0;
	if (csd_get_counters(d->dev, &c) == CS_OK) {
		d->last = c;
		*cycles = c.cycles;
		*utilization = c.pe_cycles ? (double)c.mac_busy / (double)c.pe_cycles : 0.0;
		*bytes_out = c.link_bytes_out;
		*bytes_in = c.link_bytes_in;
	}
	csd_reset_counters(d->dev);
}

void td_dev_last_counters(const train_device *d, csd_counters *c)
{
	*c = d->last;
}

const char *td_dev_last_error(train_device *d)
{
	return d->dev ? csd_last_error(d->dev) : d->err;
}

int64_t td_dev_nnz(const train_device *d, int layer, int proj)
{
	return d->sp[layer * GPT_NPROJ + proj].nnz;
}

csd_dev *td_dev_csd(train_device *d)
{
	return d->dev;
}

const csd_sparse *td_dev_sparse(const train_device *d, int layer, int proj)
{
	return &d->sp[layer * GPT_NPROJ + proj];
}

static int dev_forward(void *ctx, float *y, const float *x, const float *w, int layer,
		       int proj, int BT, int IC, int OC)
{
	train_device *d = ctx;
	int k = layer * GPT_NPROJ + proj;
	(void)w, (void)OC;
	if (BT > d->m->B * d->m->T)
		return CS_ERR_INVALID;
	nm_bf16_from_f32_array(d->xb[k], x, (size_t)BT * IC);
	d->xb_src[k] = x;
	d->xb_bt[k] = BT;
	return csd_forward(d->dev, y, d->xb[k], &d->sp[k], BT);
}

/* Estimated cycles of kernel k on the device's mesh (plan.c counting mode); 0 on error. */
static uint64_t est_cycles(const struct plan_geom *g, enum plan_kernel k, const csd_sparse *sp,
			   int BT)
{
	struct plan pl;
	struct plan_stats st = { 0 };
	struct plan_link count = { 0 };
	struct plan_io io = { .w = sp };
	char err[160];
	if (plan_make(&pl, g, k, BT, sp->n_out, sp->n_in, err, sizeof err))
		return 0;
	plan_tune(&pl, sp);
	if (plan_exec(&pl, NULL, &io, &count, &st, err, sizeof err))
		return 0;
	return st.cycles;
}

/*
 * Whether a projection's backward runs as one csd_backward_wgrad call (dY resident for the
 * wgrad) or as csd_backward and csd_wgrad: whichever the schedule model estimates faster.
 * Fused saves dY's second upload, but its token tiles are the backward's (A holds n_out
 * features a token), and every token tile streams all positions again: on small SRAMs
 * with wide outputs (the boards' fc) at low sparsity the separate calls win. Depends only
 * on the mesh, the layer's shape and its nonzeros, so every backend of one mesh decides
 * alike (and so computes the same bits); every PE implementation too: the estimate takes
 * the boards' wgrad stream (dot_by_major) whatever the device's.
 */
static int fuse_backward_wgrad(train_device *d, const csd_sparse *sp, int BT)
{
	csd_info info;
	if (csd_get_info(d->dev, &info))
		return 0;
	struct plan_geom g = { .rows = info.rows, .cols = info.cols, .a_words = info.a_words,
			       .b_words = info.b_words, .hazard_cycles = 4, .ctl_cycles = 6,
			       .major_cycles = 6, .dot_by_major = 1 };
	uint64_t fused = est_cycles(&g, PLAN_BWG, sp, BT);
	uint64_t two = est_cycles(&g, PLAN_BWD, sp, BT) + est_cycles(&g, PLAN_WGRAD, sp, BT);
	return fused && fused <= two;
}

static int dev_backward(void *ctx, float *dx, float *dw, const float *dy, const float *x,
			const float *w, int layer, int proj, int BT, int IC, int OC,
			int want_dense_dw)
{
	train_device *d = ctx;
	int k = layer * GPT_NPROJ + proj;
	(void)w;
	const csd_sparse *sp = &d->sp[k];
	nm_bf16_from_f32_array(d->dyb, dy, (size_t)BT * OC);
	int rc;
	if (want_dense_dw) {
		rc = csd_backward(d->dev, dx, d->dyb, sp, BT);
		if (rc)
			return rc;
		/* growth steps: the dense gradient on the host, fp32 */
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, BT, 1.0f, dy, OC, x,
			    IC, 1.0f, dw, IC);
		return CS_OK;
	}
	if (d->xb_src[k] != x || d->xb_bt[k] != BT) { /* not the last forward's input */
		nm_bf16_from_f32_array(d->xb[k], x, (size_t)BT * IC);
		d->xb_src[k] = x;
		d->xb_bt[k] = BT;
	}
	if (fuse_backward_wgrad(d, sp, BT)) {
		/* both kernels in one call: dY goes up once and stays in the PEs for the wgrad */
		rc = csd_backward_wgrad(d->dev, dx, d->dwnz, d->dyb, d->xb[k], sp, BT);
	} else {
		rc = csd_backward(d->dev, dx, d->dyb, sp, BT);
		if (!rc)
			rc = csd_wgrad(d->dev, d->dwnz, d->dyb, d->xb[k], sp, BT);
	}
	if (rc)
		return rc;
	for (int i = 0; i < sp->n_out; i++)
		for (int64_t j = sp->row_ptr[i]; j < sp->row_ptr[i + 1]; j++)
			dw[(size_t)i * IC + sp->col[j]] += d->dwnz[j];
	return CS_OK;
}

const gpt_linear_ops train_device_linear_ops = {
	.forward = dev_forward,
	.backward = dev_backward,
};

/*
 * The resident step's costs (docs/resident-step.md; keep the constants there and
 * here in step). Per token and layer the PEs do, at one element per cycle on the FMAC
 * pipeline: forward 2 layernorms (3 passes over C: sum and sum of squares, normalize) and
 * GELU over 4C (table lookup and interpolation, 2 passes): 14 C; backward 2 layernorm
 * backwards (5 passes), GELU backward (2 passes over 4C) and GELU again for fc2's weight
 * gradient input (1 pass over 4C): 22 C. Each layernorm also spends 24 scalar cycles a
 * token on its statistics (rsqrt by table and one Newton step).
 */
#define TD_VEC_FWD_PER_C 14
#define TD_VEC_BWD_PER_C 22
#define TD_LN_SCALAR 24
#define TD_RES_AWORDS 65536 /* bf16 elements of A per PE: the stash of docs/resident-step.md */
#define TD_RES_BWORDS 16384 /* 32-bit words of B per PE */

int td_dev_project_resident(train_device *d, int link_words, struct td_projection *p)
{
	csd_info info;
	char err[256];
	memset(p, 0, sizeof *p);
	if (link_words < 1)
		return CS_ERR_INVALID;
	int rc = csd_get_info(d->dev, &info);
	if (rc)
		return rc;
	/* the device's wgrad stream: across majors on pe ("full"), by majors on the boards */
	struct plan_geom g = { .rows = info.rows, .cols = info.cols, .a_words = TD_RES_AWORDS,
			       .b_words = TD_RES_BWORDS, .hazard_cycles = 4, .ctl_cycles = 6,
			       .major_cycles = strcmp(info.pe, "full") ? 6 : 0,
			       .dot_by_major = strcmp(info.pe, "full") != 0 };
	int L = d->m->cfg.n_layer;
	uint64_t C = (uint64_t)d->m->cfg.n_embd, BT = (uint64_t)d->m->B * (uint64_t)d->m->T;
	uint64_t P = (uint64_t)info.pes, tp = (BT + P - 1) / P, W = (uint64_t)link_words;
	uint64_t other_words = 0;
	for (int k = 0; k < d->n; k++) {
		const csd_sparse *sp = &d->sp[k];
		for (int kern = PLAN_FWD; kern <= PLAN_WGRAD; kern++) {
			struct plan pl;
			struct plan_stats st = { 0 };
			struct plan_link count = { 0 };
			struct plan_io io = { .w = sp };
			rc = plan_make(&pl, &g, (enum plan_kernel)kern, (int)BT, sp->n_out, sp->n_in,
				       err, sizeof err);
			if (!rc)
				rc = plan_exec(&pl, NULL, &io, &count, &st, err, sizeof err);
			if (rc)
				return rc;
			p->kernel_cycles += st.cycles - st.act_cycles;
			p->weight_bytes += 4 * st.weight_words;
			p->grad_bytes += 4 * st.grad_words_in;
			other_words += st.words_out + st.words_in - st.weight_words -
				       st.act_words_out - st.act_words_in - st.grad_words_in;
		}
	}
	/* vector work, every PE in parallel on its tp tokens */
	p->vector_cycles = (uint64_t)L * tp *
			   (C * (TD_VEC_FWD_PER_C + TD_VEC_BWD_PER_C) + 4 * TD_LN_SCALAR);
	/* Link words per step (bf16 activations, two a word):
	 * per layer q, k, v up (3C) and the attention output down (C) in the forward, its
	 * gradient up (C) and dq, dk, dv down (3C) in the backward: 4 C BT words; per step the
	 * embeddings down and the last layer's output up, and their gradients: 2 C BT words;
	 * per layer the 4 C layernorm parameter gradients (fp32, one COLLECT each). */
	uint64_t act_words = (uint64_t)L * 4 * C * BT + 2 * C * BT;
	uint64_t ln_words = (uint64_t)L * (4 * C + 4);
	p->act_bytes = 4 * act_words;
	p->grad_bytes += 4 * ln_words;
	p->other_bytes = 4 * other_words;
	/* Exposed link cycles: per layer, of each of the four attention transfers only its
	 * first (or last) output tile of C features: the rest streams while a kernel computes
	 * (docs/resident-step.md); the four embedding transfers of the step are exposed whole; the
	 * layernorm gradients' reduction and COLLECT as a wgrad batch's. */
	p->link_cycles = ((uint64_t)L * 4 * (C * BT / 2) + 4 * (C * BT / 2)) / W +
			 (uint64_t)L * 2 * (3 * (2 * C) + (uint64_t)(info.rows + info.cols) * 6 + 4);
	p->cycles = p->kernel_cycles + p->vector_cycles + p->link_cycles;
	return CS_OK;
}
