/* train.c - the trainer and a whole training run (see train.h). */
#include "train/train.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cs_cpu.h"
#include "common/cs_error.h"
#include "train/atomic_file.h"
#include "train/ckpt.h"
#include "train/optim.h"
#include "engine/eng.h"
#include "interop/bpe.h"
#include "interop/hf_gpt2.h"
#include "interop/safetensors.h"
#include "train/workflow.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- trainer ------------------------------------------------------------------------ */

/* Zero a[0..n) if it is not zero already: reading a fresh calloc'ed range maps no memory,
 * writing it would, so a packed tensor's unused dense moments stay out of the RSS. */
static void zero_if_nonzero(float *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != 0.0f) {
			memset(a, 0, n * sizeof *a);
			return;
		}
}

/* Index lists of the kept entries of the masked tensors, and their packed moments (all
 * tensors after init or a load, when the dense arrays hold the moments; else those whose
 * mask changed in the last ts_after_optimizer, whose packed moments carry over where an
 * entry stays kept). Masks change only by dropping and growing entries, and a grown or
 * dropped entry's moments are zero, as host/sparsity's mask commit defines. */
static int kept_rebuild(trainer *t, int all)
{
	gpt *m = &t->model;
	for (int i = 0; i < m->num_tensors; i++) {
		if (!all && !ts_mask_changed(t->ts, i))
			continue;
		const uint8_t *mask = ts_mask(t->ts, i);
		size_t n = m->tensors[i].numel, k = 0;
		float *dm = t->adam_m + m->tensors[i].offset, *dv = t->adam_v + m->tensors[i].offset;
		uint32_t *oidx = t->kept[i], *idx = NULL;
		size_t on = t->nkept[i];
		float *opm = t->pm[i], *opv = t->pv[i], *pm = NULL, *pv = NULL;
		for (size_t j = 0; mask && j < n; j++)
			k += mask[j] != 0;
		if (mask && n <= UINT32_MAX && (double)k <= TRAINER_KEPT_MAX_DENSITY * (double)n) {
			idx = malloc((k ? k : 1) * sizeof *idx);
			if (!idx)
				return CS_ERR_NO_MEM;
			k = 0;
			for (size_t j = 0; j < n; j++)
				if (mask[j])
					idx[k++] = (uint32_t)j;
		}
		if (idx && !t->adamw_dense) {
			pm = malloc((k ? k : 1) * sizeof *pm);
			pv = malloc((k ? k : 1) * sizeof *pv);
			if (!pm || !pv) {
				free(idx);
				free(pm);
				free(pv);
				return CS_ERR_NO_MEM;
			}
			if (all || !opm) {
				for (size_t q = 0; q < k; q++) {
					pm[q] = dm[idx[q]];
					pv[q] = dv[idx[q]];
				}
			} else { /* carry over the entries kept before and now */
				for (size_t q = 0, o = 0; q < k; q++) {
					while (o < on && oidx[o] < idx[q])
						o++;
					int same = o < on && oidx[o] == idx[q];
					pm[q] = same ? opm[o] : 0.0f;
					pv[q] = same ? opv[o] : 0.0f;
				}
			}
		} else if (mask) { /* dense moments: bring back packed ones, zero the pruned */
			if (!all && opm) {
				memset(dm, 0, n * sizeof *dm);
				memset(dv, 0, n * sizeof *dv);
				for (size_t o = 0; o < on; o++) {
					dm[oidx[o]] = opm[o];
					dv[oidx[o]] = opv[o];
				}
			}
			for (size_t j = 0; j < n; j++) {
				dm[j] = mask[j] ? dm[j] : 0.0f;
				dv[j] = mask[j] ? dv[j] : 0.0f;
			}
		}
		if (pm && (all || !opm)) { /* the dense copy is no longer the moments */
			zero_if_nonzero(dm, n);
			zero_if_nonzero(dv, n);
		}
		free(oidx);
		free(opm);
		free(opv);
		t->kept[i] = idx;
		t->nkept[i] = idx ? k : 0;
		t->pm[i] = pm;
		t->pv[i] = pv;
	}
	return CS_OK;
}

void trainer_moments(const trainer *t, float *m, float *v)
{
	const gpt *g = &t->model;
	memcpy(m, t->adam_m, g->num_params * sizeof *m);
	memcpy(v, t->adam_v, g->num_params * sizeof *v);
	for (int i = 0; i < g->num_tensors; i++)
		for (size_t q = 0; t->pm[i] && q < t->nkept[i]; q++) {
			m[g->tensors[i].offset + t->kept[i][q]] = t->pm[i][q];
			v[g->tensors[i].offset + t->kept[i][q]] = t->pv[i][q];
		}
}

void trainer_set_full_adamw(trainer *t)
{
	const gpt *g = &t->model;
	for (int i = 0; i < g->num_tensors; i++) {
		for (size_t q = 0; t->pm[i] && q < t->nkept[i]; q++) {
			t->adam_m[g->tensors[i].offset + t->kept[i][q]] = t->pm[i][q];
			t->adam_v[g->tensors[i].offset + t->kept[i][q]] = t->pv[i][q];
		}
		free(t->pm[i]);
		free(t->pv[i]);
		t->pm[i] = t->pv[i] = NULL;
	}
	t->adamw_dense = 1;
	if (t->nat)
		tn_set_packed_grads(t->nat, 0);
}

struct zero_job {
	trainer *t;
};

/* The dense ranges of the tensors whose gradient is not packed, each split over the
 * threads. */
static void zero_job(void *va, int tid, int nth)
{
	trainer *t = ((struct zero_job *)va)->t;
	const gpt *m = &t->model;
	for (int i = 0; i < m->num_tensors; i++) {
		size_t lo, hi;
		if (t->nat && tn_packed_grad(t->nat, i, &lo))
			continue;
		cs_split(m->tensors[i].numel, tid, nth, &lo, &hi);
		if (hi > lo)
			memset(m->grads_memory + m->tensors[i].offset + lo, 0,
			       (hi - lo) * sizeof(float));
	}
}

static void zero_grads_dense(trainer *t)
{
	struct zero_job a = { t };
	cs_pool_run(t->pool, zero_job, &a);
}

struct adamw_job {
	trainer *t;
	float lr;
	long step;
	float **wnz;    /* [num_tensors] the engine's fp32 values in kept order, or NULL */
	int shard;      /* only this rank's shard of every tensor (t->own) */
};

/* First q with idx[q] >= x (idx sorted). */
static size_t kept_lb(const uint32_t *idx, size_t n, size_t x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (idx[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Rank p's range [*a, *b) of tensor i's gradient piece this step: kept entries for the
 * engine's packed dW, dense positions otherwise. */
static void shard_range(const trainer *t, int i, int p, size_t *a, size_t *b)
{
	int N = dp_size(t->dp);
	*a = t->own[(size_t)i * (N + 1) + p];
	*b = t->own[(size_t)i * (N + 1) + p + 1];
}

/* The same range [a, b) in tensor i's kept list, [*qa, *qb): as it is when it counts kept
 * entries already (kidx), else the kept entries at dense positions in [a, b). */
static void shard_kept(const trainer *t, int i, int kidx, size_t a, size_t b, size_t *qa,
		       size_t *qb)
{
	if (kidx) {
		*qa = a;
		*qb = b;
	} else {
		*qa = kept_lb(t->kept[i], t->nkept[i], a);
		*qb = kept_lb(t->kept[i], t->nkept[i], b);
	}
}

/* Every tensor split over the threads (entries are independent: the same bits for every
 * thread count, and the kept-entry update gives those of the full one). */
static void adamw_job(void *va, int tid, int nth)
{
	struct adamw_job *a = va;
	trainer *t = a->t;
	const train_config *c = &t->cfg;
	gpt *m = &t->model;
	for (int i = 0; i < m->num_tensors; i++) {
		const gpt_tensor *g = &m->tensors[i];
		float wd = g->ndim >= 2 ? (float)c->weight_decay : 0.0f;
		float *w = m->params_memory + g->offset, *am = t->adam_m + g->offset;
		float *av = t->adam_v + g->offset;
		const float *gr = m->grads_memory + g->offset;
		size_t lo, hi, a0 = 0, a1 = g->numel, q0 = 0, q1 = t->nkept[i];
		if (a->shard) {
			shard_range(t, i, dp_rank(t->dp), &a0, &a1);
			if (t->kept[i])
				shard_kept(t, i, t->gpk[i], a0, a1, &q0, &q1);
		}
#define SPLIT(n0, n1)                                         \
	do {                                                  \
		cs_split((n1) - (n0), tid, nth, &lo, &hi);    \
		lo += (n0);                                   \
		hi += (n0);                                   \
	} while (0)
		if (t->gpk[i]) { /* packed gradient: kept entries in the same order */
			SPLIT(q0, q1);
			float *wnz = a->wnz ? a->wnz[i] : NULL; /* the engine's values */
			adamw_update_nz(w, t->pm[i] + lo, t->pv[i] + lo, t->gseg[i] + lo,
					t->kept[i] + lo, hi - lo, a->lr, (float)c->beta1,
					(float)c->beta2, (float)c->eps, wd, a->step,
					wnz ? wnz + lo : NULL);
		} else if (t->pm[i]) {
			SPLIT(q0, q1);
			adamw_update_packed(w, t->pm[i] + lo, t->pv[i] + lo, gr, t->kept[i] + lo,
					    hi - lo, a->lr, (float)c->beta1, (float)c->beta2,
					    (float)c->eps, wd, a->step);
		} else if (t->kept[i] && !t->adamw_dense) {
			SPLIT(q0, q1);
			adamw_update_idx(w, am, av, gr, t->kept[i] + lo, hi - lo, a->lr,
					 (float)c->beta1, (float)c->beta2, (float)c->eps, wd,
					 a->step);
		} else {
			SPLIT(a0, a1);
			adamw_update(w + lo, am + lo, av + lo, gr + lo, hi - lo, a->lr,
				     (float)c->beta1, (float)c->beta2, (float)c->eps, wd, a->step);
		}
#undef SPLIT
	}
}

/* ---- gradients over micro-batches and ranks ----------------------------------------- */

/* What of a tensor's gradient the ranks sum: all of its dense range, the kept entries of
 * its dense range (a masked tensor on a step without the dense gradient: the pruned ones
 * are zeroed after), or the engine's packed array (its kept entries already). */
enum { SM_FULL, SM_KEPT, SM_PACKED };

static int groups_init(trainer *t)
{
	const gpt *m = &t->model;
	int L = m->cfg.n_layer, n = m->num_tensors;
	t->micro_loss = calloc((size_t)t->cfg.grad_accum, sizeof *t->micro_loss);
	t->aoff = calloc((size_t)n, sizeof *t->aoff);
	t->soff = calloc((size_t)n, sizeof *t->soff);
	t->smode = calloc((size_t)n, sizeof *t->smode);
	t->grp = calloc((size_t)n, sizeof *t->grp);
	t->grp_start = calloc((size_t)L + 2, sizeof *t->grp_start);
	if (!t->micro_loss || !t->aoff || !t->soff || !t->smode || !t->grp || !t->grp_start)
		return CS_ERR_NO_MEM;
	int k = 0;
	for (int g = 0; g <= L; g++) { /* group L: the tensors of no block */
		t->grp_start[g] = k;
		for (int i = 0; i < n; i++)
			if (m->tensors[i].layer == (g < L ? g : -1))
				t->grp[k++] = i;
	}
	t->grp_start[L + 1] = k;
	return k == n ? CS_OK : CS_ERR_INVALID;
}

int trainer_set_dp(trainer *t, dp_comm *dp, char *err, size_t errlen)
{
	int N = dp_size(dp);
	if (t->cfg.grad_accum % N) {
		snprintf(err, errlen, "%s: train.grad_accum %d is not a multiple of the %d MPI "
			 "ranks: each rank takes whole micro-batches of the step (e.g. "
			 "train.grad_accum=%d, with train.batch_size lowered to keep the global "
			 "batch of batch_size x grad_accum sequences)", t->cfg.file,
			 t->cfg.grad_accum, N, N * ((t->cfg.grad_accum + N - 1) / N));
		return CS_ERR_CONFIG;
	}
	t->dp = dp;
	return CS_OK;
}

static int dp_multi(const trainer *t)
{
	return dp_size(t->dp) > 1;
}

/* The step's gradient pieces (gseg, glen) and where each goes in acc and stage. */
static int grads_plan(trainer *t, int packed, int multi)
{
	gpt *m = &t->model;
	size_t na = 0, ns = 0;
	for (int i = 0; i < m->num_tensors; i++) {
		size_t nnz;
		float *g = packed ? tn_packed_grad(t->nat, i, &nnz) : NULL;
		t->gseg[i] = g ? g : m->grads_memory + m->tensors[i].offset;
		t->glen[i] = g ? nnz : m->tensors[i].numel;
		t->smode[i] = g ? SM_PACKED
				: multi && t->kept[i] && !m->want_dense_dw ? SM_KEPT : SM_FULL;
		t->aoff[i] = na;
		na += t->glen[i];
	}
	for (int k = 0; k < m->num_tensors; k++) { /* the stage in posting order */
		int i = t->grp[k];
		t->soff[i] = ns;
		ns += t->smode[i] == SM_KEPT ? t->nkept[i] : t->glen[i];
	}
	if (t->cfg.grad_accum / dp_size(t->dp) > 1 && na > t->acc_cap) {
		free(t->acc);
		t->acc_cap = 0;
		if (!(t->acc = malloc(na * sizeof *t->acc)))
			return CS_ERR_NO_MEM;
		t->acc_cap = na;
	}
	if (multi && ns > t->stage_cap) {
		free(t->stage);
		t->stage_cap = 0;
		if (!(t->stage = malloc(ns * sizeof *t->stage)))
			return CS_ERR_NO_MEM;
		t->stage_cap = ns;
	}
	return CS_OK;
}

/* ---- the sharded optimizer (ZeRO-1) ------------------------------------------------- */

/* Cut the step's gradient into the ranks' shards (t->own, t->bcut, t->ccut). The pieces
 * are taken in the clipping norm's order: one flat piece of num_params on a step with the
 * dense gradient in grads_memory, else the tensors' pieces (the engine's packed dW or the
 * dense range) in tensor order. Cuts fall on the norm's chunk boundaries, so that every
 * chunk's partial sum is one rank's and the norm keeps its bits; the shards are
 * contiguous in tensor order, so each group's share is in rank order in the stage. */
static int shard_plan(trainer *t, int packed)
{
	const gpt *m = &t->model;
	int N = dp_size(t->dp), nt = m->num_tensors, L = m->cfg.n_layer;
	size_t nc = packed ? grad_norm_chunks(t->glen, nt)
			   : grad_norm_chunks(&m->num_params, 1);
	if (!t->own) {
		t->own = calloc((size_t)nt * (N + 1), sizeof *t->own);
		t->mown = calloc((size_t)nt * (N + 1), sizeof *t->mown);
		t->bcut = calloc((size_t)(L + 1) * (N + 1), sizeof *t->bcut);
		t->ccut = calloc((size_t)N + 1, sizeof *t->ccut);
		t->mkidx = calloc((size_t)nt, 1);
		t->skidx = calloc((size_t)nt, 1);
		if (!t->own || !t->mown || !t->bcut || !t->ccut || !t->mkidx || !t->skidx)
			return CS_ERR_NO_MEM;
	}
	if (nc > t->npart_cap) {
		free(t->npart);
		t->npart_cap = 0;
		if (!(t->npart = malloc(nc * sizeof *t->npart)))
			return CS_ERR_NO_MEM;
		t->npart_cap = nc;
	}
	t->nchunks = nc;
	/* E[p]: where shard p starts, in the pieces laid end to end (X) */
	size_t X = 0, E[N + 1];
	for (int i = 0; i < nt; i++)
		X += t->glen[i];
	E[0] = 0;
	E[N] = X;
	t->ccut[0] = 0;
	t->ccut[N] = nc;
	size_t c = 0, x = 0; /* chunk c starts at x */
	int seg = 0;
	size_t segx = 0; /* where the current piece starts */
	if (packed)
		while (seg < nt && !t->glen[seg])
			seg++;
	size_t seglen = packed ? (seg < nt ? t->glen[seg] : 0) : X;
	for (int p = 1; p < N; p++) {
		size_t target = X / (size_t)N * (size_t)p + X % (size_t)N * (size_t)p / (size_t)N;
		/* walk the chunk starts up to the first one at or after target */
		for (;;) {
			if (x >= target || c >= nc)
				break;
			/* the start of chunk c+1 */
			size_t nx = x + GRAD_NORM_CHUNK;
			if (nx >= segx + seglen) {
				nx = segx + seglen;
				if (packed) { /* next non-empty piece */
					segx = nx;
					while (++seg < nt && !t->glen[seg])
						;
					seglen = seg < nt ? t->glen[seg] : 0;
				}
			}
			if (nx >= target && nx - target > target - x)
				break; /* x is the nearer boundary */
			x = nx;
			c++;
		}
		E[p] = x;
		t->ccut[p] = c;
	}
	/* where each piece starts in X: the tensors laid end to end in index order, or
	 * (the flat gradient) their offsets, which follow llm.c's parameter arrays */
	size_t lo = 0;
	for (int i = 0; i < nt; lo += t->glen[i], i++)
		t->own[(size_t)i * (N + 1)] = packed ? lo : m->tensors[i].offset;
	/* a group's shards must be in rank order along its stage range (its tensors in X
	 * order): otherwise this step runs unsharded */
	for (int g = 0; g <= L; g++)
		for (int k = t->grp_start[g] + 1; k < t->grp_start[g + 1]; k++) {
			int i0 = t->grp[k - 1], i1 = t->grp[k];
			if (t->own[(size_t)i0 * (N + 1)] + t->glen[i0] > t->own[(size_t)i1 * (N + 1)])
				return 1;
		}
	for (int i = 0; i < nt; i++) {
		lo = t->own[(size_t)i * (N + 1)];
		for (int p = 0; p <= N; p++) {
			size_t e = E[p] < lo ? 0 : E[p] - lo;
			t->own[(size_t)i * (N + 1) + p] = e < t->glen[i] ? e : t->glen[i];
		}
		t->skidx[i] = t->smode[i] == SM_PACKED;
	}
	for (int g = 0; g <= L; g++) {
		size_t *bc = t->bcut + (size_t)g * (N + 1);
		for (int p = 0; p <= N; p++) {
			size_t v = 0;
			for (int k = t->grp_start[g]; k < t->grp_start[g + 1]; k++) {
				int i = t->grp[k];
				size_t a = t->own[(size_t)i * (N + 1) + p];
				v += t->smode[i] == SM_KEPT ? kept_lb(t->kept[i], t->nkept[i], a) : a;
			}
			bc[p] = v;
		}
	}
	return CS_OK;
}

/* Gather the moments of the shards that plan own (kept-list coordinates where kidx) gave
 * each rank: afterwards every rank's are whole. The kept lists must be those of that
 * step (masks change after this runs, never between). */
static int moments_gather(trainer *t, const size_t *own, const uint8_t *kidx, char *err,
			  size_t errlen)
{
	const gpt *m = &t->model;
	int N = dp_size(t->dp), me = dp_rank(t->dp), nt = m->num_tensors, rc = CS_OK;
	size_t cnt[N], bytes[N], tot = 0, mycnt = 0;
	for (int p = 0; p < N; p++) {
		cnt[p] = 0;
		for (int i = 0; i < nt; i++) {
			size_t a = own[(size_t)i * (N + 1) + p], b = own[(size_t)i * (N + 1) + p + 1];
			if (t->pm[i])
				shard_kept(t, i, kidx[i], a, b, &a, &b);
			cnt[p] += 2 * (b - a);
		}
		tot += cnt[p];
		if (p == me)
			mycnt = cnt[p];
	}
	float *mine = malloc((mycnt ? mycnt : 1) * sizeof *mine);
	float *all = malloc((tot ? tot : 1) * sizeof *all);
	if (!mine || !all) {
		rc = CS_ERR_NO_MEM;
		goto out_free;
	}
	size_t o = 0;
	for (int i = 0; i < nt; i++) {
		size_t a = own[(size_t)i * (N + 1) + me], b = own[(size_t)i * (N + 1) + me + 1];
		const float *am = t->adam_m + m->tensors[i].offset;
		const float *av = t->adam_v + m->tensors[i].offset;
		if (t->pm[i]) {
			shard_kept(t, i, kidx[i], a, b, &a, &b);
			am = t->pm[i];
			av = t->pv[i];
		}
		memcpy(mine + o, am + a, (b - a) * sizeof *mine);
		memcpy(mine + o + (b - a), av + a, (b - a) * sizeof *mine);
		o += 2 * (b - a);
	}
	for (int p = 0; p < N; p++)
		bytes[p] = cnt[p] * sizeof(float);
	rc = dp_allgather(t->dp, mine, mycnt * sizeof(float), all, bytes);
	if (rc)
		goto out_free;
	o = 0;
	for (int p = 0; p < N; p++)
		for (int i = 0; i < nt; i++) {
			size_t a = own[(size_t)i * (N + 1) + p], b = own[(size_t)i * (N + 1) + p + 1];
			float *am = t->adam_m + m->tensors[i].offset;
			float *av = t->adam_v + m->tensors[i].offset;
			if (t->pm[i]) {
				shard_kept(t, i, kidx[i], a, b, &a, &b);
				am = t->pm[i];
				av = t->pv[i];
			}
			if (p != me) {
				memcpy(am + a, all + o, (b - a) * sizeof *am);
				memcpy(av + a, all + o + (b - a), (b - a) * sizeof *av);
			}
			o += 2 * (b - a);
		}
out_free:
	free(mine);
	free(all);
	if (rc)
		snprintf(err, errlen, "gathering the optimizer state over %d ranks failed: %s", N,
			 cs_strerror(rc));
	return rc;
}

int trainer_sync_moments(trainer *t, char *err, size_t errlen)
{
	if (!t->mstale)
		return CS_OK;
	int rc = moments_gather(t, t->mown, t->mkidx, err, errlen);
	if (!rc)
		t->mstale = 0;
	return rc;
}

/* After the sharded AdamW: every rank's updated shard of the weights to every rank,
 * tensor by tensor, in place where the shard's entries are contiguous (a dense tensor's
 * weights; a packed tensor's fp32 engine values, in kept order, then copied into the
 * weights), else through the tensor's stage range (the kept entries of a host-masked
 * tensor; the gradient sums are spent by then). */
static int weights_gather(trainer *t, float **wnz)
{
	gpt *m = &t->model;
	int N = dp_size(t->dp), me = dp_rank(t->dp), nt = m->num_tensors;
	size_t cut[N + 1];
	dp_begin(t->dp, DP_ORDERED);
	for (int k = 0; k < nt; k++) {
		int i = t->grp[k];
		float *w = m->params_memory + m->tensors[i].offset, *st = t->stage + t->soff[i];
		const uint32_t *idx = t->kept[i];
		int kidx = t->smode[i] != SM_FULL, staged = kidx && !(wnz && wnz[i]);
		float *buf = !kidx ? w : staged ? st : wnz[i];
		for (int p = 0; p <= N; p++) {
			cut[p] = t->own[(size_t)i * (N + 1) + p];
			if (t->smode[i] == SM_KEPT)
				cut[p] = kept_lb(idx, t->nkept[i], cut[p]);
		}
		for (size_t q = cut[me]; staged && q < cut[me + 1]; q++)
			st[q] = w[idx[q]];
		int rc = dp_post_gather(t->dp, buf, cut[N], cut);
		if (rc)
			return rc;
	}
	int rc = dp_finish(t->dp);
	if (rc)
		return rc;
	for (int k = 0; k < nt; k++) {
		int i = t->grp[k];
		if (t->smode[i] == SM_FULL)
			continue;
		float *w = m->params_memory + m->tensors[i].offset;
		const float *src = wnz && wnz[i] ? wnz[i] : t->stage + t->soff[i];
		const uint32_t *idx = t->kept[i];
		for (int p = 0; p < N; p++) {
			if (p == me)
				continue;
			size_t a, b;
			shard_range(t, i, p, &a, &b);
			if (t->smode[i] == SM_KEPT)
				shard_kept(t, i, 0, a, b, &a, &b);
			for (size_t q = a; q < b; q++)
				w[idx[q]] = src[q];
		}
	}
	return CS_OK;
}

/* The clipping norm of the summed gradient when each rank holds its shard of it: each
 * rank sums its own chunks, the ranks exchange the partial sums and add all of them in
 * chunk order (the bits of the whole-gradient norm); then each rank clips its shard. */
static int shard_clip(trainer *t, int packed, double *norm)
{
	const train_config *c = &t->cfg;
	gpt *m = &t->model;
	int N = dp_size(t->dp), me = dp_rank(t->dp), nt = m->num_tensors;
	size_t c0 = t->ccut[me], c1 = t->ccut[me + 1];
	int rc = packed ? grad_norm_partials_segs_pool(t->pool, (const float *const *)t->gseg,
							 t->glen, nt, c0, c1, t->npart)
			: grad_norm_partials_segs_pool(t->pool,
							 (const float *const *)&m->grads_memory,
							 &m->num_params, 1, c0, c1, t->npart);
	if (rc)
		return CS_ERR_NO_MEM;
	size_t bytes[N];
	for (int p = 0; p < N; p++)
		bytes[p] = (t->ccut[p + 1] - t->ccut[p]) * sizeof(double);
	double *mine = malloc(bytes[me] ? bytes[me] : 1);
	if (!mine)
		return CS_ERR_NO_MEM;
	memcpy(mine, t->npart + c0, bytes[me]);
	rc = dp_allgather(t->dp, mine, bytes[me], t->npart, bytes);
	free(mine);
	if (rc)
		return rc;
	*norm = grad_norm_from_partials(t->npart, t->nchunks);
	if (!(c->grad_clip > 0.0 && *norm > c->grad_clip))
		return CS_OK;
	float *seg[nt];
	size_t len[nt];
	for (int i = 0; i < nt; i++) {
		size_t a, b;
		shard_range(t, i, me, &a, &b);
		seg[i] = t->gseg[i] + a;
		len[i] = b - a;
	}
	grad_scale_segs_pool(t->pool, seg, len, nt, (float)(c->grad_clip / *norm));
	return CS_OK;
}

/* gpt_backward's grads_ready: group g's gradients of this micro-batch are final. Add the
 * sum of the earlier micro-batches (acc + new, in micro-batch order), and on the rank's
 * last micro-batch copy what is reduced into the stage and start its sum over the ranks,
 * while the backward goes on with the next block. */
static int grads_ready(void *ctx, int layer)
{
	trainer *t = ctx;
	int L = t->model.cfg.n_layer, g = layer < 0 ? L : layer;
	size_t s0 = SIZE_MAX, s1 = 0;
	for (int k = t->grp_start[g]; k < t->grp_start[g + 1]; k++) {
		int i = t->grp[k];
		float *seg = t->gseg[i];
		size_t n = t->glen[i];
		if (t->cur_micro > 0) {
			const float *a = t->acc + t->aoff[i];
			for (size_t j = 0; j < n; j++)
				seg[j] = a[j] + seg[j];
		}
		if (!t->cur_last || !dp_multi(t))
			continue;
		float *st = t->stage + t->soff[i];
		if (t->smode[i] == SM_KEPT) {
			const uint32_t *idx = t->kept[i];
			for (size_t q = 0; q < t->nkept[i]; q++)
				st[q] = seg[idx[q]];
			n = t->nkept[i];
		} else {
			memcpy(st, seg, n * sizeof *st);
		}
		if (t->soff[i] < s0)
			s0 = t->soff[i];
		if (t->soff[i] + n > s1)
			s1 = t->soff[i] + n;
	}
	if (!t->cur_last || !dp_multi(t) || s0 >= s1)
		return CS_OK;
	int rc;
	if (t->shard_step) { /* this rank's share of the group: the sum of its chunk only,
				unless the mask update needs the whole dense gradient */
		const size_t *bc = t->bcut + (size_t)g * (dp_size(t->dp) + 1);
		rc = t->model.want_dense_dw ? dp_post_reduce(t->dp, t->stage + s0, s1 - s0, bc)
					    : dp_post_scatter(t->dp, t->stage + s0, s1 - s0, bc);
	} else {
		rc = dp_post(t->dp, t->stage + s0, s1 - s0);
	}
	return rc ? rc : dp_progress(t->dp);
}

/* After dp_finish: the sums back into the gradient pieces (only this rank's shard of
 * them when only that was summed). */
static void grads_unstage(trainer *t)
{
	const gpt *m = &t->model;
	int part = t->shard_step && !m->want_dense_dw;
	for (int i = 0; i < m->num_tensors; i++) {
		const float *st = t->stage + t->soff[i];
		size_t a = 0, b = t->glen[i];
		if (part)
			shard_range(t, i, dp_rank(t->dp), &a, &b);
		if (t->smode[i] == SM_KEPT) {
			size_t qa = 0, qb = t->nkept[i];
			if (part)
				shard_kept(t, i, 0, a, b, &qa, &qb);
			for (size_t q = qa; q < qb; q++)
				t->gseg[i][t->kept[i][q]] = st[q];
		} else {
			memcpy(t->gseg[i] + a, st + a, (b - a) * sizeof *st);
		}
	}
}

int trainer_init(trainer *t, train_config *cfg, int need_data, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	t->cfg = *cfg; /* takes the document */
	memset(cfg, 0, sizeof *cfg);
	train_config *c = &t->cfg;
	int rc;
	if (!strcmp(c->data_tokenizer, "gpt2")) {
		const char *dir = c->data_bpe_dir[0] ? c->data_bpe_dir : bpe_default_dir();
		char e2[1024];
		rc = bpe_load_dir(&t->tok, dir, e2, sizeof e2);
		if (rc) {
			snprintf(err, errlen, "%s: data.tokenizer gpt2: %s%s", c->file, e2,
				 rc == CS_ERR_NOT_FOUND ? " (set data.bpe_dir, or run `make deps` "
				 "with the npm registry reachable)" : "");
			goto out_free;
		}
		if (c->model.vocab_size < bpe_vocab_size(t->tok)) {
			snprintf(err, errlen, "%s: model.vocab_size %d is smaller than the gpt2 "
				 "tokenizer's %d tokens (50304 is the usual padded size)", c->file,
				 c->model.vocab_size, bpe_vocab_size(t->tok));
			rc = CS_ERR_CONFIG;
			goto out_free;
		}
	}
	if (need_data) {
		char cache[TC_PATH_MAX + 16];
		if (c->data_cache_dir[0])
			snprintf(cache, sizeof cache, "%s", c->data_cache_dir);
		else
			snprintf(cache, sizeof cache, "%s/cache", c->out_dir);
		int llmc = !strcmp(c->data_format, "llmc") ||
			   (!strcmp(c->data_format, "auto") && td_is_llmc(c->data_path));
		if (llmc && !c->data_val_path[0]) {
			snprintf(err, errlen, "%s: data.val_path: required with llm.c token files "
				 "(data.path %s), e.g. the matching *_val.bin", c->file, c->data_path);
			rc = CS_ERR_CONFIG;
			goto out_free;
		}
		if (llmc)
			rc = td_load_llmc(&t->data, c->data_path, c->data_val_path,
					  c->model.vocab_size, c->model.block_size, err, errlen);
		else
			rc = td_load(&t->data, c->data_path, cache, c->val_fraction,
				     c->model.block_size, t->tok, err, errlen);
		if (rc)
			goto out_free;
		t->have_data = 1;
	}
	rc = gpt_create(&t->model, &c->model, c->batch_size, c->model.block_size);
	if (rc) {
		snprintf(err, errlen, "%s: model: cannot allocate %s (n_layer %d, n_embd %d)",
			 c->file, cs_strerror(rc), c->model.n_layer, c->model.n_embd);
		goto out_free;
	}
	gpt_init_params(&t->model, c->seed);
	if (c->init_from[0]) { /* before the masks: they may be chosen from these weights */
		rc = wf_init_from(t, c->init_from, err, errlen);
		if (rc)
			goto out_free;
	}
	rc = cs_pool_create(&t->pool, c->threads ? c->threads : cs_default_threads());
	if (rc) {
		snprintf(err, errlen, "%s: train.threads: cannot start %d threads: %s", c->file,
			 c->threads, cs_strerror(rc));
		goto out_free;
	}
	t->model.pool = t->pool;
	/* the pool splits the products' rows over its threads, each calling a one-thread
	 * sgemm: OpenBLAS's own threads would only compete with it */
	cs_blas_set_threads(1);
	size_t P = t->model.num_params;
	t->adam_m = calloc(P, sizeof(float));
	t->adam_v = calloc(P, sizeof(float));
	size_t BT = (size_t)c->batch_size * c->model.block_size;
	t->inputs = malloc(BT * sizeof(int));
	t->targets = malloc(BT * sizeof(int));
	if (!t->adam_m || !t->adam_v || !t->inputs || !t->targets) {
		rc = CS_ERR_NO_MEM;
		snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	/* the moments are the trainer's (kept_rebuild zeroes those of dropped entries) */
	rc = ts_create(&t->ts, c, &t->model, NULL, NULL, c->steps, err, errlen);
	if (rc)
		goto out_free;
	if (c->imp_rounds > 0 && !ts_enabled(t->ts)) {
		snprintf(err, errlen, "%s: imp.rounds: the sparsity block selects nothing to prune "
			 "(e.g. sparsity: {algorithm: static, sparsity: 0.0} for a dense start)",
			 c->file);
		rc = CS_ERR_CONFIG;
		goto out_free;
	}
	t->kept = calloc(t->model.num_tensors, sizeof *t->kept);
	t->nkept = calloc(t->model.num_tensors, sizeof *t->nkept);
	t->pm = calloc(t->model.num_tensors, sizeof *t->pm);
	t->pv = calloc(t->model.num_tensors, sizeof *t->pv);
	t->gseg = calloc(t->model.num_tensors, sizeof *t->gseg);
	t->glen = calloc(t->model.num_tensors, sizeof *t->glen);
	t->gpk = calloc(t->model.num_tensors, sizeof *t->gpk);
	t->wnz = calloc(t->model.num_tensors, sizeof *t->wnz);
	rc = !t->kept || !t->nkept || !t->pm || !t->pv || !t->gseg || !t->glen || !t->gpk ||
		     !t->wnz
		     ? CS_ERR_NO_MEM
		     : kept_rebuild(t, 1);
	if (!rc)
		rc = groups_init(t);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	if (!tc_dense_on_host(c, ts_enabled(t->ts)) && tc_native(c)) {
		rc = tn_open(&t->nat, &t->model, t->ts, t->pool,
			     !strcmp(c->weights, "bf16") ? ENG_BF16 : ENG_F32, err, errlen);
		if (rc)
			goto out_free;
		t->model.lin = &train_native_linear_ops;
		t->model.lin_ctx = t->nat;
		tn_set_packed_grads(t->nat, 1);
	} else if (!tc_dense_on_host(c, ts_enabled(t->ts))) {
		char uri[96];
		tc_device_uri(c, uri, sizeof uri);
		rc = td_dev_open(&t->dev, uri, &t->model, t->ts, err, errlen);
		if (rc)
			goto out_free;
		t->model.lin = &train_device_linear_ops;
		t->model.lin_ctx = t->dev;
		if (c->resident && (rc = tr_open(&t->res, t->dev, &t->model, err, errlen)))
			goto out_free;
	}
	t->rng = c->seed ^ 0x5851f42d4c957f2dull;
	return CS_OK;
out_free:
	trainer_free(t);
	return rc;
}

void trainer_free(trainer *t)
{
	tr_close(t->res);
	td_dev_close(t->dev);
	tn_close(t->nat);
	ts_free(t->ts);
	for (int i = 0; t->kept && i < t->model.num_tensors; i++)
		free(t->kept[i]);
	for (int i = 0; t->pm && i < t->model.num_tensors; i++) {
		free(t->pm[i]);
		free(t->pv[i]);
	}
	free(t->pm);
	free(t->pv);
	free(t->gseg);
	free(t->glen);
	free(t->gpk);
	free(t->wnz);
	free(t->micro_loss);
	free(t->acc);
	free(t->stage);
	free(t->aoff);
	free(t->soff);
	free(t->smode);
	free(t->grp);
	free(t->grp_start);
	free(t->own);
	free(t->mown);
	free(t->bcut);
	free(t->ccut);
	free(t->mkidx);
	free(t->skidx);
	free(t->npart);
	gpt_free(&t->model);
	cs_pool_free(t->pool);
	free(t->kept);
	free(t->nkept);
	if (t->have_data)
		td_free(&t->data);
	bpe_free(t->tok);
	free(t->adam_m);
	free(t->adam_v);
	free(t->inputs);
	free(t->targets);
	tc_free(&t->cfg);
	memset(t, 0, sizeof *t);
}

static int lin_error(trainer *t, int rc, const char *what, char *err, size_t errlen)
{
	if (t->res && tr_last_error(t->res)[0])
		snprintf(err, errlen, "device: %s failed at step %ld: %s (%s)", what, t->step + 1,
			 cs_strerror(rc), tr_last_error(t->res));
	else if (t->dev)
		snprintf(err, errlen, "device: %s failed at step %ld: %s (%s)", what, t->step + 1,
			 cs_strerror(rc), td_dev_last_error(t->dev));
	else
		snprintf(err, errlen, "%s failed at step %ld: %s", what, t->step + 1,
			 cs_strerror(rc));
	return rc;
}

int trainer_step(trainer *t, train_step_stats *s, char *err, size_t errlen)
{
	const train_config *c = &t->cfg;
	gpt *m = &t->model;
	int B = c->batch_size, T = c->model.block_size;
	long step = t->step;
	double t0 = now_s(), c0 = cpu_s();
	memset(s, 0, sizeof *s);
	s->lr = wf_lr(c, step); /* an IMP round rewinds the schedule */
	m->want_dense_dw = ts_wants_dense_grad(t->ts, step);
	/* packed: the sparse projections' dW stays in the engine's arrays */
	int packed = t->nat && tn_packed_grads(t->nat) && !m->want_dense_dw;
	if (packed) {
		tn_zero_grads(t->nat);
		if (t->grads_dirty)
			gpt_zero_grad(m);
		else
			zero_grads_dense(t);
		t->grads_dirty = 0;
	} else {
		gpt_zero_grad(m);
		t->grads_dirty = t->nat != NULL;
	}
	int multi = dp_multi(t), N = dp_size(t->dp), per = c->grad_accum / N;
	int first = dp_rank(t->dp) * per;
	if (grads_plan(t, packed, multi)) {
		snprintf(err, errlen, "out of memory at step %ld", step + 1);
		return CS_ERR_NO_MEM;
	}
	t->shard_step = multi && c->shard_optimizer && strcmp(c->reduce, "fast");
	if (t->shard_step) {
		int rc = shard_plan(t, packed);
		if (rc < 0) {
			snprintf(err, errlen, "out of memory at step %ld", step + 1);
			return rc;
		}
		t->shard_step = rc == CS_OK;
	}
	/* moments left in shards of another cut (the step before had the dense gradient, or
	 * the kept counts moved): whole again first */
	if (t->mstale && (!t->shard_step ||
			  memcmp(t->own, t->mown, (size_t)m->num_tensors * (N + 1) * sizeof *t->own) ||
			  memcmp(t->skidx, t->mkidx, (size_t)m->num_tensors))) {
		int rc = trainer_sync_moments(t, err, errlen);
		if (rc)
			return rc;
	}
	dp_begin(t->dp, !strcmp(c->reduce, "fast") ? DP_FAST : DP_ORDERED);
	dp_stats_reset(t->dp);
	memset(t->micro_loss, 0, (size_t)c->grad_accum * sizeof *t->micro_loss);
	for (int k = 0; k < per; k++) {
		float loss;
		if (k > 0) { /* this micro-batch's gradient starts from zero */
			for (int i = 0; i < m->num_tensors; i++)
				memcpy(t->acc + t->aoff[i], t->gseg[i], t->glen[i] * sizeof(float));
			if (packed) {
				tn_zero_grads(t->nat);
				zero_grads_dense(t);
			} else {
				gpt_zero_grad(m);
			}
		}
		t->cur_micro = k;
		t->cur_last = k == per - 1;
		td_train_batch(&t->data, c->seed, step, first + k, B, T, t->inputs, t->targets);
		/* resident: the blocks on the device, but a step that wants the dense dW (growth)
		 * takes the per-projection path */
		int res = t->res && !m->want_dense_dw;
		int rc = res ? tr_forward(t->res, t->inputs, t->targets, B, T, &loss)
			     : gpt_forward(m, t->inputs, t->targets, B, T, &loss);
		if (rc)
			return lin_error(t, rc, "forward", err, errlen);
		m->grads_ready = k > 0 || multi ? grads_ready : NULL;
		m->grads_ready_ctx = t;
		rc = res ? tr_backward(t->res, 1.0f / (float)c->grad_accum)
			 : gpt_backward(m, 1.0f / (float)c->grad_accum);
		m->grads_ready = NULL;
		if (rc)
			return lin_error(t, rc, "backward", err, errlen);
		t->micro_loss[first + k] = loss;
	}
	if (multi) {
		int rc = dp_finish(t->dp);
		if (!rc)
			rc = dp_sum(t->dp, t->micro_loss, (size_t)c->grad_accum);
		if (rc) {
			snprintf(err, errlen, "gradient sum over %d ranks failed at step %ld: %s", N,
				 step + 1, cs_strerror(rc));
			return rc;
		}
		grads_unstage(t);
	}
	for (int i = 0; i < m->num_tensors; i++) {
		t->gseg[i] = m->grads_memory + m->tensors[i].offset;
		t->glen[i] = m->tensors[i].numel;
		t->gpk[i] = 0;
	}
	double loss_sum = 0.0;
	for (int micro = 0; micro < c->grad_accum; micro++)
		loss_sum += t->micro_loss[micro];
	s->loss = (float)(loss_sum / c->grad_accum);
	if (!isfinite(s->loss)) {
		snprintf(err, errlen, "training diverged at step %ld (loss %g): lower train.lr "
			 "(%g)", step + 1, s->loss, c->lr);
		return CS_ERR_RANGE;
	}
	if (t->nat && !m->want_dense_dw)
		tn_mark_grads_clean(t->nat, t->ts);
	int rc = ts_mask_grads(t->ts, step);
	if (rc < 0)
		return rc;
	if (packed) {
		for (int i = 0; i < m->num_tensors; i++) {
			size_t nnz;
			float *g = tn_packed_grad(t->nat, i, &nnz);
			if (!g)
				continue;
			if (!t->pm[i] || t->nkept[i] != nnz) {
				snprintf(err, errlen, "native: %s: %zu packed gradients for %zu kept "
					 "entries", m->tensors[i].name, nnz, t->nkept[i]);
				return CS_ERR_INVALID;
			}
			t->gseg[i] = g;
			t->glen[i] = nnz;
			t->gpk[i] = 1;
		}
		if (!t->shard_step)
			s->grad_norm = grad_global_norm_segs_pool(
				t->pool, (const float *const *)t->gseg, t->glen, m->num_tensors);
	} else if (!t->shard_step) {
		s->grad_norm = grad_global_norm_pool(t->pool, m->grads_memory, m->num_params);
		if (c->grad_clip > 0.0 && s->grad_norm > c->grad_clip)
			grad_scale_pool(t->pool, m->grads_memory, m->num_params,
					(float)(c->grad_clip / s->grad_norm));
	}
	if (t->shard_step) {
		rc = shard_clip(t, packed, &s->grad_norm);
		if (rc) {
			snprintf(err, errlen, "gradient norm over %d ranks failed at step %ld: %s", N,
				 step + 1, cs_strerror(rc));
			return rc;
		}
	} else if (packed && c->grad_clip > 0.0 && s->grad_norm > c->grad_clip) {
		grad_scale_segs_pool(t->pool, t->gseg, t->glen, m->num_tensors,
				     (float)(c->grad_clip / s->grad_norm));
	}
	ts_flops_step(t->ts, step, T, B * c->grad_accum);
	if (!ts_skip_optimizer(t->ts, step)) {
		struct adamw_job a = { .t = t, .lr = (float)s->lr, .step = wf_adam_step(c, step),
				       .shard = t->shard_step };
		if (t->nat && packed) { /* AdamW writes the engine's values of packed tensors */
			a.wnz = t->wnz;
			for (int i = 0; i < m->num_tensors; i++)
				t->wnz[i] = t->gpk[i] ? tn_take_values(t->nat, i, t->nkept[i]) : NULL;
		}
		cs_pool_run(t->pool, adamw_job, &a);
		if (t->shard_step) {
			rc = weights_gather(t, a.wnz);
			if (rc) {
				snprintf(err, errlen, "weight gather over %d ranks failed at step "
					 "%ld: %s", N, step + 1, cs_strerror(rc));
				return rc;
			}
			memcpy(t->mown, t->own, (size_t)m->num_tensors * (N + 1) * sizeof *t->own);
			memcpy(t->mkidx, t->skidx, (size_t)m->num_tensors);
			t->mstale = 1;
		}
	}
	if (multi) {
		double sec, wait;
		dp_stats(t->dp, &s->comm_bytes, &sec, &wait);
		s->comm_ms = sec * 1e3;
		s->comm_wait_ms = wait * 1e3;
	}
	rc = ts_after_optimizer(t->ts, step);
	if (rc < 0) {
		snprintf(err, errlen, "sparsity: mask update failed at step %ld: %s", step + 1,
			 cs_strerror(rc));
		return rc;
	}
	s->masks_changed = rc;
	if (rc > 0) { /* kept_rebuild carries the moments over: whole ones */
		int r2 = trainer_sync_moments(t, err, errlen);
		if (r2)
			return r2;
	}
	if (rc > 0 && kept_rebuild(t, 0)) {
		snprintf(err, errlen, "out of memory at step %ld", step + 1);
		return CS_ERR_NO_MEM;
	}
	if (t->nat) {
		rc = tn_sync(t->nat, s->masks_changed, err, errlen);
		if (rc)
			return rc;
	}
	if (t->dev) {
		rc = td_dev_sync(t->dev, s->masks_changed, err, errlen);
		if (rc)
			return rc;
		td_dev_counters(t->dev, &s->device_cycles, &s->device_utilization, &s->link_bytes_out,
				&s->link_bytes_in);
	}
	t->step++;
	s->ms = (now_s() - t0) * 1e3;
	s->cpu_ms = (cpu_s() - c0) * 1e3;
	return CS_OK;
}

int trainer_eval(trainer *t, float *val_loss, char *err, size_t errlen)
{
	const train_config *c = &t->cfg;
	int B = c->batch_size, T = c->model.block_size;
	int E = c->eval_batches, N = dp_size(t->dp), r = dp_rank(t->dp);
	float *loss = calloc((size_t)E, sizeof *loss);
	if (!loss)
		return CS_ERR_NO_MEM;
	/* rank r takes batches [r E/N, (r+1) E/N); the others' losses arrive as exact sums
	 * with zeros, then add up in batch order as on one process */
	for (int i = (int)((long)E * r / N); i < (int)((long)E * (r + 1) / N); i++) {
		td_val_batch(&t->data, i, E, B, T, t->inputs, t->targets);
		int rc = gpt_forward(&t->model, t->inputs, t->targets, B, T, &loss[i]);
		if (rc) {
			free(loss);
			return lin_error(t, rc, "eval forward", err, errlen);
		}
	}
	int rc = dp_sum(t->dp, loss, (size_t)E);
	double sum = 0.0;
	for (int i = 0; i < E; i++)
		sum += loss[i];
	free(loss);
	if (rc) {
		snprintf(err, errlen, "validation loss sum over %d ranks failed: %s", N,
			 cs_strerror(rc));
		return rc;
	}
	*val_loss = (float)(sum / E);
	return CS_OK;
}

/* ---- checkpoints -------------------------------------------------------------------- */

static char *resolved_text(const train_config *c, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	tc_write_resolved(c, f);
	fclose(f);
	return buf;
}

/* One tensor's packed moments expanded to its dense record (zero where pruned). */
struct moments_src {
	const trainer *t;
	int tensor, v;
};

static void moments_fill(const void *ctx, void *buf)
{
	const struct moments_src *s = ctx;
	const trainer *t = s->t;
	const float *p = s->v ? t->pv[s->tensor] : t->pm[s->tensor];
	float *d = buf;
	memset(d, 0, t->model.tensors[s->tensor].numel * sizeof *d);
	for (size_t q = 0; q < t->nkept[s->tensor]; q++)
		d[t->kept[s->tensor][q]] = p[q];
}

int trainer_save(trainer *t, const char *path, char *err, size_t errlen)
{
	gpt *m = &t->model;
	if (t->mstale) { /* every rank calls trainer_sync_moments before rank 0 saves */
		snprintf(err, errlen, "%s: the optimizer state is in shards over the ranks "
			 "(trainer_sync_moments first)", path);
		return CS_ERR_INVALID;
	}
	int n = 0, cap = 3 * m->num_tensors + 2, rc;
	ck_record *r = calloc(cap, sizeof *r);
	struct moments_src *msrc = calloc(2 * (size_t)m->num_tensors, sizeof *msrc);
	size_t cfg_len = 0, sp_len = 0;
	char *cfg_text = resolved_text(&t->cfg, &cfg_len);
	uint8_t *sp_buf = NULL;
	if (!r || !msrc || !cfg_text) {
		rc = CS_ERR_NO_MEM;
		goto out_free;
	}
	rc = ts_save(t->ts, &sp_buf, &sp_len);
	if (rc) {
		snprintf(err, errlen, "sparsity: cannot save state: %s", cs_strerror(rc));
		goto out_free;
	}
	r[n++] = (ck_record){ .name = "config", .kind = CK_BYTES, .nbytes = cfg_len,
			      .data = cfg_text };
	const char *pre[3] = { "param/", "adam_m/", "adam_v/" };
	float *base[3] = { m->params_memory, t->adam_m, t->adam_v };
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < m->num_tensors; i++) {
			ck_record *x = &r[n++];
			snprintf(x->name, sizeof x->name, "%s%s", pre[k], m->tensors[i].name);
			x->kind = CK_F32;
			x->nbytes = m->tensors[i].numel * sizeof(float);
			x->data = base[k] + m->tensors[i].offset;
			if (k && t->pm[i]) { /* packed moments go to the file as dense tensors */
				msrc[2 * i + k - 1] = (struct moments_src){ t, i, k - 1 };
				x->data = NULL;
				x->fill = moments_fill;
				x->fill_ctx = &msrc[2 * i + k - 1];
			}
		}
	if (sp_len)
		r[n++] = (ck_record){ .name = "sparsity/state", .kind = CK_BYTES, .nbytes = sp_len,
				      .data = sp_buf };
	ck_header h = { .version = CK_VERSION, .model = m->cfg, .step = t->step,
			.seed = t->cfg.seed, .rng_state = t->rng };
	rc = ck_save(path, &h, r, n, err, errlen);
out_free:
	free(msrc);
	free(r);
	free(cfg_text);
	free(sp_buf);
	return rc;
}

static int load_tensor(const ck_file *f, const char *pre, const gpt_tensor *g, float *dst,
		       int required, const char *path, char *err, size_t errlen)
{
	char name[128];
	snprintf(name, sizeof name, "%s%s", pre, g->name);
	const ck_record *r = ck_find(f, name);
	if (!r) {
		if (!required) {
			memset(dst, 0, g->numel * sizeof(float));
			return CS_OK;
		}
		snprintf(err, errlen, "%s: checkpoint has no %s", path, name);
		return CS_ERR_FORMAT;
	}
	if (r->kind != CK_F32 || r->nbytes != g->numel * sizeof(float)) {
		snprintf(err, errlen, "%s: %s has %llu bytes, the model needs %zu", path, name,
			 (unsigned long long)r->nbytes, g->numel * sizeof(float));
		return CS_ERR_FORMAT;
	}
	memcpy(dst, r->data, r->nbytes);
	return CS_OK;
}

int trainer_load(trainer *t, const char *path, char *err, size_t errlen)
{
	if (st_is_safetensors(path)) /* weights only */
		return hf_gpt2_import(t, path, err, errlen);
	ck_file f;
	int rc = ck_load(path, &f, err, errlen);
	if (rc)
		return rc;
	gpt *m = &t->model;
	rc = ck_check_model(&f, &m->cfg, path, err, errlen);
	if (rc)
		goto out_free;
	int nan = (f.hdr.flags & CK_FLAG_NAN_PRUNED) != 0;
	for (int i = 0; i < m->num_tensors && !rc; i++) {
		const gpt_tensor *g = &m->tensors[i];
		rc = load_tensor(&f, "param/", g, m->params_memory + g->offset, 1, path, err,
				 errlen);
		if (!rc)
			rc = load_tensor(&f, "adam_m/", g, t->adam_m + g->offset, !nan, path, err,
					 errlen);
		if (!rc)
			rc = load_tensor(&f, "adam_v/", g, t->adam_v + g->offset, !nan, path, err,
					 errlen);
	}
	if (rc)
		goto out_free;
	const ck_record *sp = ck_find(&f, "sparsity/state");
	if (sp) {
		char e2[400];
		rc = ts_load(t->ts, sp->data, sp->nbytes, e2, sizeof e2);
		if (rc) {
			snprintf(err, errlen, "%s: %s", path, e2);
			goto out_free;
		}
	}
	if (nan) {
		/* setting one tensor's mask may re-apply the others' (still the init masks) to
		 * the model's buffers: read every mask from a pristine copy, then put the
		 * finite weights back */
		float *copy = malloc(m->num_params * sizeof(float));
		if (!copy) {
			rc = CS_ERR_NO_MEM;
			goto out_free;
		}
		memcpy(copy, m->params_memory, m->num_params * sizeof(float));
		for (int i = 0; i < m->num_tensors && !rc; i++)
			rc = ts_nan_import(t->ts, i, copy + m->tensors[i].offset);
		for (size_t j = 0; j < m->num_params; j++)
			m->params_memory[j] = isfinite(copy[j]) ? copy[j] : 0.0f;
		free(copy);
	}
	if (rc) {
		snprintf(err, errlen, "%s: cannot import NaN-pruned weights", path);
		goto out_free;
	}
	ts_apply(t->ts);
	rc = kept_rebuild(t, 1);
	if (rc) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out_free;
	}
	t->mstale = 0; /* every rank read the whole state */
	t->step = (long)f.hdr.step;
	t->rng = f.hdr.rng_state;
	if (t->dev)
		rc = td_dev_sync(t->dev, -1, err, errlen);
	if (t->nat && !rc)
		rc = tn_sync(t->nat, -1, err, errlen);
out_free:
	ck_free(&f);
	return rc;
}

int trainer_load_weights(trainer *t, const char *path, char *err, size_t errlen)
{
	ck_file f;
	int rc = ck_load(path, &f, err, errlen);
	if (rc)
		return rc;
	gpt *m = &t->model;
	rc = ck_check_model(&f, &m->cfg, path, err, errlen);
	for (int i = 0; i < m->num_tensors && !rc; i++) {
		const gpt_tensor *g = &m->tensors[i];
		rc = load_tensor(&f, "param/", g, m->params_memory + g->offset, 1, path, err,
				 errlen);
		if (!rc)
			rc = load_tensor(&f, "adam_m/", g, t->adam_m + g->offset, 1, path, err,
					 errlen);
		if (!rc)
			rc = load_tensor(&f, "adam_v/", g, t->adam_v + g->offset, 1, path, err,
					 errlen);
	}
	ck_free(&f);
	if (rc)
		return rc;
	/* the current masks over the loaded values; kept_rebuild repacks and masks the
	 * moments from the dense arrays */
	t->mstale = 0;
	ts_apply(t->ts);
	if (kept_rebuild(t, 1)) {
		snprintf(err, errlen, "%s: out of memory", path);
		return CS_ERR_NO_MEM;
	}
	if (t->dev)
		rc = td_dev_sync(t->dev, -1, err, errlen);
	if (t->nat && !rc)
		rc = tn_sync(t->nat, -1, err, errlen);
	return rc;
}

int trainer_masks_changed(trainer *t, char *err, size_t errlen)
{
	int rc = trainer_sync_moments(t, err, errlen);
	if (rc)
		return rc;
	rc = kept_rebuild(t, 0);
	if (rc) {
		snprintf(err, errlen, "out of memory");
		return rc;
	}
	if (t->nat)
		rc = tn_sync(t->nat, 1, err, errlen);
	if (t->dev && !rc)
		rc = td_dev_sync(t->dev, 1, err, errlen);
	return rc;
}

/* The config of a safetensors file: the run's own (cshost.config metadata), else GPT-2's
 * shape read off the tensors (head size 64, GPT-2 tokens when wte has 50257 rows) on the
 * native engine. */
static int config_from_safetensors(train_config *cfg, const char *path, char *const *overrides,
				   int n_overrides, char *err, size_t errlen)
{
	st_file f;
	int rc = st_open(&f, path, err, errlen);
	if (rc)
		return rc;
	char name[TC_PATH_MAX + 16], text[512];
	const char *own = st_meta(&f, "cshost.config");
	snprintf(name, sizeof name, "%s[%s]", path, own && *own ? "cshost.config" : "shapes");
	if (!own || !*own) {
		const st_entry *wte = hf_gpt2_find(&f, "transformer.wte.weight");
		const st_entry *wpe = hf_gpt2_find(&f, "transformer.wpe.weight");
		int layers = hf_gpt2_layers(&f);
		if (!wte || !wpe || wte->ndim != 2 || wpe->ndim != 2 || !layers) {
			snprintf(err, errlen, "%s: not a GPT-2 model (needs wte, wpe and h.N tensors)",
				 path);
			st_close(&f);
			return CS_ERR_FORMAT;
		}
		long C = (long)wte->shape[1], V = (long)wte->shape[0];
		const char *nh = st_meta(&f, "n_head");
		char nhs[32];
		snprintf(nhs, sizeof nhs, "%s", nh ? nh : "");
		if (!nh)
			snprintf(nhs, sizeof nhs, "%ld", C % 64 ? 1L : C / 64);
		snprintf(text, sizeof text,
			 "model: {n_layer: %d, n_head: %s, n_embd: %ld, block_size: %ld, "
			 "vocab_size: %ld}\ndata: {tokenizer: %s}\ndevice: {kind: native}\n",
			 layers, nhs, C, (long)wpe->shape[0], V, V == 50257 ? "gpt2" : "bytes");
		own = text;
	}
	rc = tc_load(cfg, name, own, overrides, n_overrides, err, errlen);
	st_close(&f);
	return rc;
}

int trainer_config_from_ckpt(train_config *cfg, const char *ckpt, char *const *overrides,
			     int n_overrides, char *err, size_t errlen)
{
	if (st_is_safetensors(ckpt))
		return config_from_safetensors(cfg, ckpt, overrides, n_overrides, err, errlen);
	ck_file f;
	int rc = ck_load(ckpt, &f, err, errlen);
	if (rc)
		return rc;
	const ck_record *r = ck_find(&f, "config");
	if (!r) {
		snprintf(err, errlen, "%s: checkpoint has no config record", ckpt);
		ck_free(&f);
		return CS_ERR_FORMAT;
	}
	char *text = malloc(r->nbytes + 1);
	if (!text) {
		ck_free(&f);
		return CS_ERR_NO_MEM;
	}
	memcpy(text, r->data, r->nbytes);
	text[r->nbytes] = 0;
	char name[TC_PATH_MAX + 16];
	snprintf(name, sizeof name, "%s[config]", ckpt);
	rc = tc_load(cfg, name, text, overrides, n_overrides, err, errlen);
	free(text);
	if (!rc)
		rc = ck_check_model(&f, &cfg->model, ckpt, err, errlen);
	if (rc && cfg->doc_loaded)
		tc_free(cfg);
	ck_free(&f);
	return rc;
}

/* Export / import go through a trainer so that masks come from the sparsity state. */
static int nan_convert(const char *in, const char *out, int to_nan, char *err, size_t errlen)
{
	train_config cfg;
	char *const ov[] = { "device.kind=cpu", "device.dense_on_host=true" };
	int rc = trainer_config_from_ckpt(&cfg, in, ov, 2, err, errlen);
	if (rc)
		return rc;
	trainer t;
	rc = trainer_init(&t, &cfg, 0, err, errlen);
	if (rc)
		return rc;
	rc = trainer_load(&t, in, err, errlen);
	if (rc)
		goto out_free;
	if (!to_nan) {
		rc = trainer_save(&t, out, err, errlen);
		goto out_free;
	}
	gpt *m = &t.model;
	ck_record *r = calloc(m->num_tensors + 1, sizeof *r);
	size_t cfg_len;
	char *cfg_text = resolved_text(&t.cfg, &cfg_len);
	float *w = malloc(m->num_params * sizeof(float));
	if (!r || !cfg_text || !w) {
		free(r);
		free(cfg_text);
		free(w);
		rc = CS_ERR_NO_MEM;
		goto out_free;
	}
	memcpy(w, m->params_memory, m->num_params * sizeof(float));
	int n = 0;
	r[n++] = (ck_record){ .name = "config", .kind = CK_BYTES, .nbytes = cfg_len,
			      .data = cfg_text };
	for (int i = 0; i < m->num_tensors; i++) {
		ts_nan_export(t.ts, i, w + m->tensors[i].offset);
		ck_record *x = &r[n++];
		snprintf(x->name, sizeof x->name, "param/%s", m->tensors[i].name);
		x->kind = CK_F32;
		x->nbytes = m->tensors[i].numel * sizeof(float);
		x->data = w + m->tensors[i].offset;
	}
	ck_header h = { .version = CK_VERSION, .flags = CK_FLAG_NAN_PRUNED, .model = m->cfg,
			.step = t.step, .seed = t.cfg.seed, .rng_state = t.rng };
	rc = ck_save(out, &h, r, n, err, errlen);
	free(r);
	free(cfg_text);
	free(w);
out_free:
	trainer_free(&t);
	return rc;
}

int train_export_nan(const char *ckpt_in, const char *out, char *err, size_t errlen)
{
	return nan_convert(ckpt_in, out, 1, err, errlen);
}

int train_import_nan(const char *ckpt_in, const char *out, char *err, size_t errlen)
{
	return nan_convert(ckpt_in, out, 0, err, errlen);
}

/* ---- sampling ----------------------------------------------------------------------- */

int trainer_sample(trainer *t, const uint8_t *prompt, size_t plen, int n, float temperature,
		   uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
	gpt *m = &t->model;
	int maxT = m->T, V = m->cfg.vocab_size;
	int nv = t->tok ? bpe_vocab_size(t->tok) : 256; /* the tokenizer's tokens */
	if (nv > V)
		nv = V;
	*out = NULL;
	*out_len = 0;
	int32_t *ctx = NULL;
	size_t len = 0, cap = 0;
	int rc = CS_OK;
	if (t->tok) {
		if (bpe_eot(t->tok) >= 0) { /* a document starts after <|endoftext|> */
			ctx = malloc((cap = 1024) * sizeof *ctx);
			if (!ctx)
				return CS_ERR_NO_MEM;
			ctx[len++] = bpe_eot(t->tok);
		}
		char e2[256];
		rc = bpe_encode(t->tok, prompt, plen, &ctx, &len, &cap, e2, sizeof e2);
		if (rc) {
			snprintf(err, errlen, "prompt: %s", e2);
			free(ctx);
			return rc;
		}
	} else {
		cap = plen + 1;
		ctx = malloc(cap * sizeof *ctx);
		if (!ctx)
			return CS_ERR_NO_MEM;
		for (size_t i = 0; i < plen; i++)
			ctx[len++] = prompt[i];
		if (len == 0)
			ctx[len++] = '\n';
	}
	int32_t *nc = realloc(ctx, (len + (size_t)n) * sizeof *ctx);
	double *p = malloc((size_t)nv * sizeof *p);
	int *win = malloc((size_t)maxT * sizeof *win);
	if (!nc || !p || !win) {
		free(nc ? nc : ctx);
		free(p);
		free(win);
		return CS_ERR_NO_MEM;
	}
	ctx = nc;
	size_t first = len;
	for (int k = 0; k < n; k++) {
		int T = len < (size_t)maxT ? (int)len : maxT;
		for (int i = 0; i < T; i++)
			win[i] = ctx[len - (size_t)T + (size_t)i];
		rc = gpt_forward(m, win, NULL, 1, T, NULL);
		if (rc) {
			rc = lin_error(t, rc, "sampling forward", err, errlen);
			break;
		}
		const float *logits = m->acts.logits + (size_t)(T - 1) * V;
		int next = 0;
		if (temperature <= 0.0f) {
			for (int i = 1; i < nv; i++)
				if (logits[i] > logits[next])
					next = i;
		} else {
			/* softmax over the tokenizer's tokens at this temperature */
			double maxv = -INFINITY, sum = 0.0;
			for (int i = 0; i < nv; i++)
				if (logits[i] > maxv)
					maxv = logits[i];
			for (int i = 0; i < nv; i++)
				sum += p[i] = exp((logits[i] - maxv) / temperature);
			double u = (double)(rng_next(&t->rng) >> 11) / 9007199254740992.0 * sum;
			double acc = 0.0;
			next = nv - 1;
			for (int i = 0; i < nv; i++) {
				acc += p[i];
				if (u < acc) {
					next = i;
					break;
				}
			}
		}
		ctx[len++] = next;
	}
	free(p);
	free(win);
	/* the generated tokens' text */
	size_t bytes = 0;
	for (size_t i = first; !rc && i < len; i++) {
		size_t l = 1;
		if (t->tok && !bpe_token_bytes(t->tok, ctx[i], &l))
			l = 0;
		bytes += l;
	}
	if (!rc && !(*out = malloc(bytes ? bytes : 1)))
		rc = CS_ERR_NO_MEM;
	for (size_t i = first; !rc && i < len; i++) {
		size_t l = 1;
		const uint8_t *b = NULL;
		if (t->tok)
			b = bpe_token_bytes(t->tok, ctx[i], &l);
		else
			(*out)[(*out_len)++] = (uint8_t)ctx[i];
		if (b) {
			memcpy(*out + *out_len, b, l);
			*out_len += l;
		}
	}
	free(ctx);
	return rc;
}

/* ---- a run -------------------------------------------------------------------------- */

static int is_ckpt_name(const char *nm, long *step)
{
	char tail;
	return sscanf(nm, "ckpt-%ld.bi%c", step, &tail) == 2 && tail == 'n' &&
	       strlen(nm) == strlen("ckpt-00000000.bin");
}

/* Checkpoints of a run directory, newest first (the newest cap of them in steps[]). */
static int list_ckpts(const char *dir, long *steps, int cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		long s;
		if (!is_ckpt_name(e->d_name, &s))
			continue;
		/* insert in descending order, dropping what falls past cap */
		int i = n < cap ? n++ : cap;
		while (i > 0 && steps[i - 1] < s) {
			if (i < cap)
				steps[i] = steps[i - 1];
			i--;
		}
		if (i < cap)
			steps[i] = s;
	}
	closedir(d);
	return n;
}

static void ckpt_path(char *buf, size_t len, const char *dir, long step)
{
	snprintf(buf, len, "%s/ckpt-%08ld.bin", dir, step);
}

static const char *const run_files[] = { "config.yaml", "metrics.jsonl", "sample.txt",
					 "summary.json", "sparsity_flops.json",
					 "config-changes.log" };

static int run_dir_used(const char *dir)
{
	long s[1];
	if (list_ckpts(dir, s, 1))
		return 1;
	for (size_t i = 0; i < sizeof run_files / sizeof run_files[0]; i++) {
		char p[TC_PATH_MAX + 200];
		snprintf(p, sizeof p, "%s/%s", dir, run_files[i]);
		if (access(p, F_OK) == 0)
			return 1;
	}
	return 0;
}

/* --force: remove what an earlier run wrote (only our own files). */
static void clear_run_dir(const char *dir)
{
	long steps[4096];
	int n = list_ckpts(dir, steps, 4096);
	char p[TC_PATH_MAX + 200];
	for (int i = 0; i < n; i++) {
		ckpt_path(p, sizeof p, dir, steps[i]);
		unlink(p);
	}
	for (size_t i = 0; i < sizeof run_files / sizeof run_files[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, run_files[i]);
		unlink(p);
	}
}

/* On resume: keep only metrics lines up to the checkpoint's step (atomically). */
static int trim_metrics(const char *path, long step)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return CS_OK;
	af_file a;
	if (af_open(&a, path)) {
		fclose(f);
		return CS_ERR_IO;
	}
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		const char *s = strstr(line, "\"step\":");
		long v = s ? strtol(s + 7, NULL, 10) : 0;
		if (v <= step)
			fputs(line, a.f);
	}
	free(line);
	fclose(f);
	return af_commit(&a);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void write_metrics(FILE *f, trainer *t, const train_step_stats *s, double tok_s)
{
	fprintf(f, "{\"step\": %ld, \"loss\": %.6f, \"lr\": %.6g, \"grad_norm\": %.6g, "
		   "\"sparsity\": %.6f, \"sparsity_all_params\": %.6f, \"layer_sparsity\": {",
		t->step, s->loss, s->lr, s->grad_norm, ts_sparsity(t->ts), ts_sparsity_all(t->ts));
	int first = 1;
	for (int v = 0; v < ts_num_views(t->ts); v++) {
		if (!ts_view_masked(t->ts, v))
			continue;
		fprintf(f, "%s\"%s\": %.6f", first ? "" : ", ", ts_view_name(t->ts, v),
			ts_view_sparsity(t->ts, v));
		first = 0;
	}
	fprintf(f, "}, \"tokens_per_s\": %.1f, \"ms_per_step\": %.3f, \"cpu_ms\": %.3f, \"device_cycles\": %llu, "
		   "\"device_utilization\": %.4f, \"link_bytes_out\": %llu, \"link_bytes_in\": %llu, "
		   "\"masks_changed\": %d, \"mask_churn\": %.6f, \"ranks\": %d, \"comm_bytes\": %llu, "
		   "\"comm_ms\": %.3f, \"comm_wait_ms\": %.3f}\n",
		tok_s, s->ms, s->cpu_ms, (unsigned long long)s->device_cycles, s->device_utilization,
		(unsigned long long)s->link_bytes_out, (unsigned long long)s->link_bytes_in,
		s->masks_changed, s->masks_changed ? ts_mask_churn(t->ts) : 0.0, dp_size(t->dp),
		(unsigned long long)s->comm_bytes, s->comm_ms, s->comm_wait_ms);
	fflush(f);
}

static int save_ckpt(trainer *t, const char *dir, char *err, size_t errlen)
{
	char p[TC_PATH_MAX + 200];
	ckpt_path(p, sizeof p, dir, t->step);
	int rc = trainer_save(t, p, err, errlen);
	if (rc)
		return rc;
	long steps[4096];
	int n = list_ckpts(dir, steps, 4096);
	for (int i = t->cfg.keep_ckpts; i < n; i++) {
		ckpt_path(p, sizeof p, dir, steps[i]);
		unlink(p);
	}
	return CS_OK;
}

/* A run directory belongs to one run at a time: an flock on <dir>/lock, which holds the
 * owner's pid. The kernel drops the flock when its process dies, so a lock file that
 * still names a pid but can be locked was left by a run that crashed or was killed. */
static int lock_run_dir(const char *dir, int *fd_out, FILE *out, char *err, size_t errlen)
{
	char p[TC_PATH_MAX + 200], old[32] = "";
	snprintf(p, sizeof p, "%s/lock", dir);
	*fd_out = -1;
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot create: %s", p, strerror(errno));
		return CS_ERR_IO;
	}
	int locked = flock(fd, LOCK_EX | LOCK_NB) == 0, e = errno;
	ssize_t n = pread(fd, old, sizeof old - 1, 0);
	old[n > 0 ? n : 0] = 0;
	long pid = strtol(old, NULL, 10);
	if (!locked) {
		close(fd);
		if (e == EWOULDBLOCK && pid > 0)
			snprintf(err, errlen, "%s: run directory is in use by process %ld (%s); "
				 "wait for that run to end or stop it", dir, pid, p);
		else if (e == EWOULDBLOCK)
			snprintf(err, errlen, "%s: run directory is in use by another process (%s)",
				 dir, p);
		else
			snprintf(err, errlen, "%s: cannot lock: %s", p, strerror(e));
		return e == EWOULDBLOCK ? CS_ERR_EXISTS : CS_ERR_IO;
	}
	if (pid > 0 && pid != (long)getpid())
		fprintf(out, "train: %s: process %ld did not release the run directory (it "
			     "crashed or was killed); taking it over\n", dir, pid);
	char me[32];
	int len = snprintf(me, sizeof me, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, me, (size_t)len, 0) != len) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(errno));
		close(fd);
		return CS_ERR_IO;
	}
	*fd_out = fd;
	return CS_OK;
}

/* Released cleanly: the pid goes, so the next run does not take it for a crash. */
static void unlock_run_dir(int fd)
{
	if (fd < 0)
		return;
	if (ftruncate(fd, 0)) {
		/* the kernel drops the flock anyway; the next run reports a takeover */
	}
	close(fd);
}

/* --resume: the newest checkpoint that reads back intact (all checksums), and its
 * config; a damaged newer one is named in a warning, not silently skipped. */
static int pick_ckpt(const char *dir, char *ck, size_t cklen, train_config *old, FILE *out,
		     char *err, size_t errlen)
{
	long steps[64];
	int n = list_ckpts(dir, steps, 64);
	if (!n) {
		snprintf(err, errlen, "%s: no checkpoint to resume from", dir);
		return CS_ERR_NOT_FOUND;
	}
	if (n > 64)
		n = 64;
	char first_err[768] = "";
	int first_rc = CS_OK;
	for (int i = 0; i < n; i++) {
		char e2[768];
		ckpt_path(ck, cklen, dir, steps[i]);
		int rc = trainer_config_from_ckpt(old, ck, NULL, 0, e2, sizeof e2);
		if (!rc) {
			if (i)
				fprintf(out, "train: warning: %s; resuming from %s (step %ld), "
					     "the newest intact checkpoint\n", first_err, ck, steps[i]);
			return CS_OK;
		}
		if (!i) {
			snprintf(first_err, sizeof first_err, "%s", e2);
			first_rc = rc;
		}
	}
	snprintf(err, errlen, "%s%s", first_err,
		 n > 1 ? " (and no older checkpoint is intact either)" : "");
	return first_rc;
}

/* --allow-config-change: what changed, when, from which checkpoint. */
static int log_config_change(const char *dir, const char *ck, const char *diff)
{
	char p[TC_PATH_MAX + 200], when[32];
	snprintf(p, sizeof p, "%s/config-changes.log", dir);
	time_t now = time(NULL);
	struct tm tm;
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	FILE *f = fopen(p, "a");
	if (!f)
		return CS_ERR_IO;
	fprintf(f, "%s resumed from %s with --allow-config-change (checkpoint -> now):\n%s\n",
		when, ck, diff);
	int bad = ferror(f);
	bad |= fflush(f) || fsync(fileno(f));
	bad |= fclose(f);
	return bad ? CS_ERR_IO : CS_OK;
}

static void fmt_eta(char *buf, size_t len, double s)
{
	long x = (long)(s + 0.5);
	if (x >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", x / 3600, x / 60 % 60, x % 60);
	else
		snprintf(buf, len, "%ld:%02ld", x / 60, x % 60);
}

static long peak_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Every rank learns whether every rank got this far. A rank that did not keeps its own
 * error; when rank 0 failed, the others return with an empty message (rank 0 says why,
 * usually the same thing); when only others failed, rank 0 and the rest that did not
 * return CS_ERR_INVALID with an empty message too. */
static int agree(dp_comm *dp, int rc, char *err, size_t errlen)
{
	if (dp_size(dp) < 2)
		return rc;
	int ok0 = rc == CS_OK;
	dp_bcast(dp, &ok0, sizeof ok0);
	if (dp_all_ok(dp, rc == CS_OK))
		return CS_OK;
	if (rc == CS_OK || (!ok0 && dp_rank(dp) != 0)) {
		if (errlen)
			err[0] = 0;
		return rc ? rc : CS_ERR_INVALID;
	}
	return rc;
}

/* Rank 0 (or the one process): take the run directory and check everything about it
 * before a file is written; *ck the checkpoint to resume from. */
static int lead_prepare(const train_opts *o, const train_config *cfg, const char *dir,
			int *existed, int *lock_fd, int *used, char *ck, size_t cklen,
			char **diff, FILE *out, char *err, size_t errlen)
{
	if (o->resume && o->force) {
		snprintf(err, errlen, "--resume and --force exclude each other");
		return CS_ERR_INVALID;
	}
	/* the directory is ours before anything in it is looked at */
	struct stat st;
	*existed = stat(dir, &st) == 0;
	if (!*existed && af_mkdirs(dir)) {
		snprintf(err, errlen, "%s: cannot create run directory: %s", dir, strerror(errno));
		*existed = 1; /* nothing of ours to remove */
		return CS_ERR_IO;
	}
	int rc = lock_run_dir(dir, lock_fd, out, err, errlen);
	if (rc)
		return rc;
	/* everything that can be wrong with the input is checked before a file is written */
	*used = run_dir_used(dir);
	if (*used && !o->resume && !o->force) {
		snprintf(err, errlen, "%s: run directory exists; use --resume to continue it or "
			 "--force to start over", dir);
		return CS_ERR_EXISTS;
	}
	if (!o->resume)
		return CS_OK;
	train_config old;
	rc = pick_ckpt(dir, ck, cklen, &old, out, err, errlen);
	if (rc)
		return rc;
	int nd = tc_diff_training(&old, cfg, diff);
	tc_free(&old);
	if (nd < 0)
		return nd;
	if (nd > 0 && !o->allow_config_change) {
		snprintf(err, errlen, "%s: the config changes what this run was training "
			 "(checkpoint -> now):\n%s\nstart a new run (run.name) or --force "
			 "to start over; --allow-config-change continues with the change "
			 "and records it in %s/config-changes.log", ck, *diff, dir);
		return CS_ERR_CONFIG;
	}
	if (nd > 0)
		fprintf(out, "train: continuing with a changed config "
			     "(--allow-config-change; checkpoint -> now):\n%s\n", *diff);
	return CS_OK;
}

/* trainer_init (taking cfg), the ranks, and the checkpoint ck when not empty; on failure
 * the trainer is freed. */
static int start_trainer(trainer *t, train_config *cfg, dp_comm *dp, const char *ck,
			 char *err, size_t errlen)
{
	int rc = trainer_init(t, cfg, 1, err, errlen);
	if (rc) {
		memset(t, 0, sizeof *t);
		return rc;
	}
	rc = trainer_set_dp(t, dp, err, errlen);
	if (!rc && ck[0])
		rc = trainer_load(t, ck, err, errlen);
	if (!rc && t->step > t->cfg.steps) {
		snprintf(err, errlen, "%s: checkpoint is at step %ld, past train.steps %d "
			 "(raise it with train.steps=N)", ck, t->step, t->cfg.steps);
		rc = CS_ERR_INVALID;
	}
	if (rc)
		trainer_free(t);
	return rc;
}

int train_run(const train_opts *o, train_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	dp_comm *dp = o->dp;
	int lead = dp_rank(dp) == 0, multi = dp_size(dp) > 1;
	/* the other ranks say nothing: rank 0 speaks for the run */
	FILE *out = o->out ? o->out : stderr, *quiet = NULL;
	if (!lead && (quiet = fopen("/dev/null", "w")))
		out = quiet;
	train_config cfg;
	int rc = tc_load(&cfg, o->config_path, NULL, o->overrides, o->n_overrides, err, errlen);
	if (rc)
		memset(&cfg, 0, sizeof cfg);
	if (multi && !rc && !cfg.threads) /* the node's CPUs shared among its ranks */
		cfg.threads = cs_default_threads() / dp_local_size(dp) > 1
				      ? cs_default_threads() / dp_local_size(dp)
				      : 1;
	if (multi && !rc && !strcmp(cfg.device_kind, "usb")) {
		/* one board per rank of this node, by serial */
		int n = 0;
		for (const char *q = cfg.serials; *q; q++)
			n += *q == ',';
		n += cfg.serials[0] != 0;
		cfg.device_index = dp_local_rank(dp);
		if (n < dp_local_size(dp)) {
			snprintf(err, errlen, "%s: device.serials: %d board%s listed for the %d ranks "
				 "on this node: list one serial per rank (\"A,B\"; `cshost board "
				 "info` names a board's)", cfg.file, n, n == 1 ? "" : "s",
				 dp_local_size(dp));
			rc = CS_ERR_CONFIG;
		}
	}
	if (multi && !rc && cfg.grad_accum % dp_size(dp)) {
		int N = dp_size(dp);
		snprintf(err, errlen, "%s: train.grad_accum %d is not a multiple of the %d MPI "
			 "ranks: each rank takes whole micro-batches of the step (e.g. "
			 "train.grad_accum=%d, with train.batch_size lowered to keep the global "
			 "batch of batch_size x grad_accum sequences)", cfg.file, cfg.grad_accum,
			 N, N * ((cfg.grad_accum + N - 1) / N));
		rc = CS_ERR_CONFIG;
	}
	if (multi) { /* one model: every rank must train the same config */
		uint64_t h = 0;
		if (!rc) {
			train_config same = cfg; /* shares the document; what may differ cleared */
			same.threads = 0;
			same.serials[0] = 0;
			same.device_index = 0;
			size_t len = 0;
			char *text = resolved_text(&same, &len);
			h = 0xcbf29ce484222325ull;
			for (size_t i = 0; text && i < len; i++)
				h = (h ^ (unsigned char)text[i]) * 0x100000001b3ull;
			free(text);
		}
		uint64_t h0 = h;
		dp_bcast(dp, &h0, sizeof h0);
		if (!rc && h != h0) {
			snprintf(err, errlen, "%s: the config (file and overrides) differs from rank "
				 "0's: every rank of a data-parallel run must train the same one",
				 cfg.file);
			rc = CS_ERR_CONFIG;
		}
	}
	char dir[TC_PATH_MAX + 160] = "", ck[TC_PATH_MAX + 200] = "";
	int existed = 1, lock_fd = -1, used = 0;
	char *diff = NULL;
	FILE *mf = NULL;
	if (!rc) {
		snprintf(dir, sizeof dir, "%s/%s", cfg.out_dir, cfg.name);
		snprintf(res->run_dir, sizeof res->run_dir, "%s", dir);
	}
	if (!rc && lead)
		rc = lead_prepare(o, &cfg, dir, &existed, &lock_fd, &used, ck, sizeof ck, &diff,
				  out, err, errlen);
	rc = agree(dp, rc, err, errlen);
	if (!rc && multi && dp_bcast(dp, ck, sizeof ck))
		rc = CS_ERR_IO;
	if (rc) {
		tc_free(&cfg);
		goto out_unlock;
	}
	/* rank 0 first: it may write the token cache, which the others then read */
	trainer t;
	if (lead) {
		int rs = start_trainer(&t, &cfg, dp, ck, err, errlen);
		rc = agree(dp, rs, err, errlen);
		if (!rc) /* the others' start */
			rc = agree(dp, CS_OK, err, errlen);
		if (rc && !rs)
			trainer_free(&t);
	} else {
		rc = agree(dp, CS_OK, err, errlen);
		if (rc)
			tc_free(&cfg);
		else
			rc = agree(dp, start_trainer(&t, &cfg, dp, ck, err, errlen), err, errlen);
	}
	if (rc)
		goto out_unlock;
	const train_config *c = &t.cfg;
	res->started = 1;
	if (!lead)
		goto started;
	if (o->force && used)
		clear_run_dir(dir);
	if (diff && log_config_change(dir, ck, diff)) {
		snprintf(err, errlen, "%s/config-changes.log: cannot write: %s", dir,
			 strerror(errno));
		rc = CS_ERR_IO;
		goto out_free;
	}
	char p[TC_PATH_MAX + 200];
	snprintf(p, sizeof p, "%s/config.yaml", dir);
	af_file a;
	if (af_open(&a, p) || tc_write_resolved(c, a.f) || af_commit(&a)) {
		snprintf(err, errlen, "%s: cannot write", p);
		rc = CS_ERR_IO;
		goto out_free;
	}
	snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
	if (ck[0] && trim_metrics(p, t.step)) {
		snprintf(err, errlen, "%s: cannot rewrite", p);
		rc = CS_ERR_IO;
		goto out_free;
	}
	char rp[TC_PATH_MAX + 200];
	snprintf(rp, sizeof rp, "%s/rounds.jsonl", dir);
	if (!ck[0])
		unlink(rp);
	else if (trim_metrics(rp, t.step)) {
		snprintf(err, errlen, "%s: cannot rewrite", rp);
		rc = CS_ERR_IO;
		goto out_free;
	}
	mf = fopen(p, ck[0] ? "a" : "w");
	if (!mf) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(errno));
		rc = CS_ERR_IO;
		goto out_free;
	}
started:;
	int tty = o->progress >= 0 ? o->progress : isatty(fileno(out));
	res->unigram_entropy = t.data.unigram_entropy;
	char uri[96];
	tc_device_uri(c, uri, sizeof uri);
	if (t.nat)
		snprintf(uri, sizeof uri, "native");
	char where[192];
	if (t.nat)
		snprintf(where, sizeof where,
			 "sparse projections on the native engine (%s kernels, %s weights, %d "
			 "threads, %.1f MB of nonzeros)",
			 eng_isa_name(eng_isa()), c->weights, cs_pool_threads(t.pool),
			 tn_weight_bytes(t.nat) / 1e6);
	else if (t.dev)
		snprintf(where, sizeof where, "%s", uri);
	else
		snprintf(where, sizeof where, "projections on the host (OpenBLAS, %d threads)",
			 cs_pool_threads(t.pool));
	fprintf(out, "train: %s: %d layers, %d heads, %d channels, context %d, %zu parameters; "
		     "%s\n", dir, c->model.n_layer, c->model.n_head, c->model.n_embd,
		c->model.block_size, t.model.num_params, where);
	char blas[320];
	cs_blas_describe(blas, sizeof blas);
	fprintf(out, "train: %d host thread%s (train.threads); %s\n", cs_pool_threads(t.pool),
		cs_pool_threads(t.pool) == 1 ? "" : "s", blas);
	fprintf(out, "train: data %s: %d files, %zu tokens (%zu train, %zu val)%s; unigram "
		     "entropy %.4f nats/token\n", c->data_path, t.data.n_files, t.data.n_tokens,
		t.data.n_train, t.data.n_val, t.data.cache_hit ? ", cached" : "",
		t.data.unigram_entropy);
	if (ts_enabled(t.ts))
		fprintf(out, "train: sparsity %.1f%% over the sparsified tensors\n",
			100.0 * ts_sparsity(t.ts));
	if (multi)
		fprintf(out, "train: %d MPI ranks (this node: %d), each %d of the %d micro-batches "
			     "of a step; gradients summed %s%s\n", dp_size(dp), dp_local_size(dp),
			c->grad_accum / dp_size(dp), c->grad_accum,
			strcmp(c->reduce, "fast") ? "in rank order (bit-identical to one process)"
						  : "by MPI_Allreduce (train.reduce fast)",
			strcmp(c->reduce, "fast") && c->shard_optimizer
				? "; optimizer sharded over the ranks (train.shard_optimizer)"
				: "");
	if (ck[0])
		fprintf(out, "train: resuming from %s (step %ld)\n", ck, t.step);

	double run_t0 = now_s(), ms_sum = 0.0;
	long start_step = t.step, steps_here = 0;
	float val = NAN;
	size_t tok_per_step = (size_t)c->batch_size * c->model.block_size * c->grad_accum;
	while (t.step < c->steps) {
		train_step_stats s;
		rc = wf_before_step(&t, dir, lead, out, err, errlen);
		if (rc)
			goto out_close;
		rc = trainer_step(&t, &s, err, errlen);
		if (rc) {
			/* a device error (unplugged board, link failure) ends the run here: say
			 * where it can continue from (checkpoints are written atomically, so the
			 * last one is whole) */
			long last[1];
			if (tty)
				fputc('\n', out);
			if (list_ckpts(dir, last, 1)) {
				char p[TC_PATH_MAX + 200];
				ckpt_path(p, sizeof p, dir, last[0]);
				fprintf(out, "train: stopped by an error in step %ld; the last checkpoint "
					     "is %s (step %ld): fix the cause, then continue with "
					     "--resume\n",
					t.step + 1, p, last[0]);
			} else {
				fprintf(out, "train: stopped by an error in step %ld, before the first "
					     "checkpoint (train.ckpt_every %d)\n",
					t.step + 1, c->ckpt_every);
			}
			goto out_close;
		}
		steps_here++;
		ms_sum += s.ms;
		double tok_s = tok_per_step / (s.ms * 1e-3);
		res->last_loss = s.loss;
		if (mf)
			write_metrics(mf, &t, &s, tok_s);
		if (c->eval_every > 0 && t.step % c->eval_every == 0 && t.step < c->steps) {
			rc = trainer_eval(&t, &val, err, errlen);
			if (rc)
				goto out_close;
			if (mf) {
				fprintf(mf, "{\"step\": %ld, \"val_loss\": %.6f, \"val_ppl\": "
					    "%.4f}\n", t.step, val, exp(val));
				fflush(mf);
			}	fprintf(out, "%sstep %ld/%d val_loss %.4f (unigram entropy %.4f)\n",
				tty ? "\r\033[K" : "", t.step, c->steps, val,
				t.data.unigram_entropy);
		}
		double avg_ms = (now_s() - run_t0) * 1e3 / steps_here;
		char eta[32];
		fmt_eta(eta, sizeof eta, avg_ms * 1e-3 * (c->steps - t.step));
		if (tty) {
			/* tokens/s averaged over this run: a steadier number to watch */
			fprintf(out, "\rstep %ld/%d loss %.4f lr %.2e sparsity %.1f%% %.0f tok/s "
				     "ETA %s\033[K", t.step, c->steps, s.loss, s.lr,
				100.0 * ts_sparsity(t.ts), tok_per_step / (avg_ms * 1e-3), eta);
			fflush(out);
		} else if (t.step % c->log_every == 0 || t.step == c->steps || t.step == 1) {
			fprintf(out, "step %ld/%d loss %.4f lr %.2e grad_norm %.3f sparsity %.1f%% "
				     "%.0f tok/s %.1f ms/step ETA %s\n",
				t.step, c->steps, s.loss, s.lr, s.grad_norm,
				100.0 * ts_sparsity(t.ts), tok_s, s.ms, eta);
		}
		rc = wf_after_step(&t, dir, lead ? mf : NULL, out, err, errlen);
		if (rc)
			goto out_close;
		int stopping = (o->stop && *o->stop) ||
			       (o->stop_after > 0 && steps_here >= o->stop_after);
		if (multi) /* Ctrl-C reaches the ranks at different moments: stop together */
			stopping = dp_any(dp, stopping);
		if ((c->ckpt_every > 0 && t.step % c->ckpt_every == 0) || stopping ||
		    t.step == c->steps) {
			/* every rank: the moments' shards to rank 0 (and the others) */
			rc = trainer_sync_moments(&t, err, errlen);
			if (!rc && lead)
				rc = save_ckpt(&t, dir, err, errlen);
			if (rc)
				goto out_close;
		}
		if (stopping && t.step < c->steps) {
			if (tty)
				fputc('\n', out);
			fprintf(out, "train: stopped at step %ld; checkpoint saved, continue with "
				     "--resume\n", t.step);
			res->interrupted = 1;
			res->steps = t.step;
			res->ms_per_step = ms_sum / steps_here;
			rc = CS_ERR_INTERRUPTED;
			goto out_close;
		}
	}
	if (tty && steps_here)
		fputc('\n', out);
	res->steps = t.step;
	res->ms_per_step = steps_here ? ms_sum / steps_here : 0.0;
	res->tokens_per_s = steps_here ? tok_per_step / (res->ms_per_step * 1e-3) : 0.0;
	rc = trainer_eval(&t, &val, err, errlen);
	if (rc)
		goto out_close;
	res->val_loss = val;
	if (!lead) {
		rc = CS_OK;
		goto out_close;
	}
	fprintf(mf, "{\"step\": %ld, \"val_loss\": %.6f, \"val_ppl\": %.4f}\n", t.step, val,
		exp(val));
	fclose(mf);
	mf = NULL;

	/* the final sample, on the host (masked weights are exact zeros there too) */
	if (c->sample_tokens > 0) {
		const gpt_linear_ops *lin = t.model.lin;
		t.model.lin = &gpt_linear_host;
		uint8_t *buf = NULL;
		size_t nbuf = 0;
		const char *prompt = "\n";
		if (trainer_sample(&t, (const uint8_t *)prompt, strlen(prompt), c->sample_tokens,
				   (float)c->sample_temperature, &buf, &nbuf, err, errlen) == CS_OK) {
			snprintf(p, sizeof p, "%s/sample.txt", dir);
			if (af_open(&a, p) == CS_OK) {
				fwrite(buf, 1, nbuf, a.f);
				fputc('\n', a.f);
				af_commit(&a);
			}
		}
		free(buf);
		t.model.lin = lin;
	}
	if (ts_enabled(t.ts)) {
		snprintf(p, sizeof p, "%s/sparsity_flops.json", dir);
		if (af_open(&a, p) == CS_OK) {
			ts_write_flops_json(t.ts, a.f);
			af_commit(&a);
		}
	}
	snprintf(p, sizeof p, "%s/summary.json", dir);
	if (af_open(&a, p) == CS_OK) {
		fprintf(a.f, "{\"steps\": %ld, \"loss\": %.6f, \"val_loss\": %.6f, \"val_ppl\": "
			     "%.4f, \"unigram_entropy\": %.6f, \"below_unigram\": %s, "
			     "\"ms_per_step\": %.3f, \"tokens_per_s\": %.1f, \"sparsity\": %.6f, "
			     "\"wall_s\": %.2f, \"peak_rss_kb\": %ld, \"device\": ",
			t.step, res->last_loss, val, exp(val), t.data.unigram_entropy,
			val < t.data.unigram_entropy ? "true" : "false", res->ms_per_step,
			res->tokens_per_s, ts_sparsity(t.ts), now_s() - run_t0, peak_rss_kb());
		json_str(a.f, t.dev || t.nat ? uri : "host");
		fputs("}\n", a.f);
		af_commit(&a);
	}
	fprintf(out, "train: done, %ld steps (%ld this run) in %.1f s, %.1f ms/step, %.0f "
		     "tokens/s\n", t.step, t.step - start_step, now_s() - run_t0,
		res->ms_per_step, res->tokens_per_s);
	fprintf(out, "train: val_loss %.4f nats (ppl %.2f) %s unigram entropy %.4f nats/token\n",
		val, exp(val), val < t.data.unigram_entropy ? "<" : ">=",
		t.data.unigram_entropy);
	if (c->sample_tokens > 0)
		fprintf(out, "train: sample in %s/sample.txt\n", dir);
	rc = CS_OK;
out_close:
	if (mf)
		fclose(mf);
out_free:
	trainer_free(&t);
out_unlock:
	if (quiet)
		fclose(quiet);
	free(diff);
	/* a directory made for a run that never started goes again */
	if (!existed && lock_fd >= 0 && !run_dir_used(dir)) {
		char p[TC_PATH_MAX + 200];
		snprintf(p, sizeof p, "%s/lock", dir);
		unlink(p);
		rmdir(dir);
	}
	unlock_run_dir(lock_fd);
	return rc;
}
