/* workflow.c - iterative magnitude pruning and init_from (see workflow.h). */
#include "train/workflow.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cs_error.h"
#include "interop/hf_gpt2.h"
#include "interop/safetensors.h"
#include "train/atomic_file.h"
#include "train/ckpt.h"
#include "train/optim.h"
#include "train/train.h"

static int imp_on(const train_config *c)
{
	return c->imp_rounds > 0;
}

/* position of step s in a schedule of S steps (workflow.h) */
static long position(const train_config *c, long s)
{
	long S = tc_imp_round_steps(c), k = c->imp_rewind_step;
	if (!imp_on(c) || s < S)
		return s;
	return k + (s - S) % (S - k);
}

int wf_round(const train_config *c, long s)
{
	long S = tc_imp_round_steps(c), k = c->imp_rewind_step;
	if (!imp_on(c) || s < S)
		return 0;
	long r = 1 + (s - S) / (S - k);
	return (int)(r > c->imp_rounds ? c->imp_rounds : r);
}

long wf_round_start(const train_config *c, int r)
{
	long S = tc_imp_round_steps(c), k = c->imp_rewind_step;
	if (!imp_on(c))
		return r <= 0 ? 0 : c->steps;
	return r <= 0 ? 0 : S + (long)(r - 1) * (S - k);
}

double wf_lr(const train_config *c, long s)
{
	if (!imp_on(c))
		return lr_schedule(s, c->steps, c->warmup_steps, c->lr, c->min_lr);
	return lr_schedule(position(c, s), tc_imp_round_steps(c), c->warmup_steps, c->lr,
			   c->min_lr);
}

long wf_adam_step(const train_config *c, long s)
{
	if (imp_on(c) && !strcmp(c->imp_rewind, "weights"))
		return position(c, s) + 1;
	return s + 1;
}

double wf_imp_fraction(const train_config *c)
{
	if (c->imp_fraction > 0)
		return c->imp_fraction;
	if (c->imp_rounds <= 0)
		return 0;
	return 1.0 - pow(1.0 - c->imp_sparsity, 1.0 / (double)c->imp_rounds);
}

/* ---- init_from ---------------------------------------------------------------------- */

/* The newest ckpt-NNNNNNNN.bin of a run directory. */
static int newest_ckpt(const char *dir, char *out, size_t len)
{
	DIR *d = opendir(dir);
	if (!d)
		return CS_ERR_NOT_FOUND;
	long best = -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		long s;
		char tail[8];
		if (sscanf(e->d_name, "ckpt-%ld.bi%1s", &s, tail) == 2 && !strcmp(tail, "n") &&
		    strlen(e->d_name) == 17 && s > best)
			best = s;
	}
	closedir(d);
	if (best < 0)
		return CS_ERR_NOT_FOUND;
	snprintf(out, len, "%s/ckpt-%08ld.bin", dir, best);
	return CS_OK;
}

int wf_init_from(trainer *t, const char *path, char *err, size_t errlen)
{
	char file[TC_PATH_MAX + 32];
	struct stat sb;
	snprintf(file, sizeof file, "%s", path);
	if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode) &&
	    newest_ckpt(path, file, sizeof file)) {
		snprintf(err, errlen, "%s: model.init_from: a directory without checkpoints "
			 "(ckpt-NNNNNNNN.bin)", path);
		return CS_ERR_NOT_FOUND;
	}
	if (st_is_safetensors(file))
		return hf_gpt2_import_flags(t, file, HF_NAN, err, errlen);
	ck_file f;
	char e2[512];
	int rc = ck_load(file, &f, e2, sizeof e2);
	if (rc) {
		snprintf(err, errlen, "model.init_from: %s", e2);
		return rc;
	}
	gpt *m = &t->model;
	rc = ck_check_model(&f, &m->cfg, file, e2, sizeof e2);
	if (rc) {
		snprintf(err, errlen, "model.init_from: %s (the model keys must match the "
			 "source run's)", e2);
		goto out_free;
	}
	for (int i = 0; i < m->num_tensors; i++) {
		const gpt_tensor *g = &m->tensors[i];
		char name[160];
		snprintf(name, sizeof name, "param/%s", g->name);
		const ck_record *r = ck_find(&f, name);
		if (!r || r->kind != CK_F32 || r->nbytes != g->numel * sizeof(float)) {
			snprintf(err, errlen, "model.init_from: %s: %s missing or of another size",
				 file, name);
			rc = CS_ERR_FORMAT;
			goto out_free;
		}
		float *w = m->params_memory + g->offset;
		memcpy(w, r->data, r->nbytes);
		/* the source's masks are only zeros here: NaN-marked (sideband) entries too */
		for (size_t j = 0; j < g->numel; j++)
			if (!isfinite(w[j]))
				w[j] = 0.0f;
	}
out_free:
	ck_free(&f);
	return rc;
}

/* ---- IMP ---------------------------------------------------------------------------- */

static void rewind_path(char *buf, size_t len, const char *dir)
{
	snprintf(buf, len, "%s/rewind.bin", dir);
}

int wf_before_step(trainer *t, const char *dir, int lead, FILE *out, char *err, size_t errlen)
{
	const train_config *c = &t->cfg;
	if (!imp_on(c))
		return CS_OK;
	char p[TC_PATH_MAX + 200];
	rewind_path(p, sizeof p, dir);
	int weights = !strcmp(c->imp_rewind, "weights");
	if (weights && t->step == c->imp_rewind_step) {
		/* every rank gathers the optimizer state's shards, rank 0 saves */
		int rc = trainer_sync_moments(t, err, errlen);
		if (!rc && lead)
			rc = trainer_save(t, p, err, errlen);
		if (rc)
			return rc;
	}
	int r = wf_round(c, t->step);
	if (r < 1 || t->step != wf_round_start(c, r))
		return CS_OK;
	double f = wf_imp_fraction(c);
	int scope = !strcmp(c->imp_scope, "global");
	int n = ts_prune_remaining(t->ts, f, scope);
	if (n < 0) {
		snprintf(err, errlen, "imp: round %d: pruning failed: %s", r, cs_strerror(n));
		return n;
	}
	int rc;
	if (weights) {
		rc = trainer_load_weights(t, p, err, errlen);
		if (rc)
			return rc;
	}
	rc = trainer_masks_changed(t, err, errlen);
	if (rc)
		return rc;
	fprintf(out, "imp: round %d/%d at step %ld: pruned %.4f of the remaining weights "
		     "(%s), sparsity %.2f%%; %s rewound to step %d of round 0\n",
		r, c->imp_rounds, t->step, f, c->imp_scope, 100.0 * ts_sparsity(t->ts),
		weights ? "weights, AdamW state and learning rate" : "learning rate",
		c->imp_rewind_step);
	return CS_OK;
}

int wf_after_step(trainer *t, const char *dir, FILE *mf, FILE *out, char *err, size_t errlen)
{
	const train_config *c = &t->cfg;
	if (!imp_on(c))
		return CS_OK;
	int r = wf_round(c, t->step - 1);
	if (t->step != wf_round_start(c, r + 1))
		return CS_OK;
	float val;
	int rc = trainer_eval(t, &val, err, errlen);
	if (!rc) /* every rank: the optimizer state's shards for rank 0's save */
		rc = trainer_sync_moments(t, err, errlen);
	if (rc || !mf)
		return rc;
	char p[TC_PATH_MAX + 200];
	snprintf(p, sizeof p, "%s/round-%02d.bin", dir, r);
	rc = trainer_save(t, p, err, errlen);
	if (rc)
		return rc;
	size_t nnz = 0, numel = 0;
	ts_nnz(t->ts, &nnz, &numel);
	char line[512];
	snprintf(line, sizeof line,
		 "{\"step\": %ld, \"round\": %d, \"round_val_loss\": %.6f, \"sparsity\": %.6f, "
		 "\"nnz\": %zu, \"numel\": %zu, \"ckpt\": \"round-%02d.bin\"}\n",
		 t->step, r, val, ts_sparsity(t->ts), nnz, numel, r);
	fputs(line, mf);
	fflush(mf);
	snprintf(p, sizeof p, "%s/rounds.jsonl", dir);
	FILE *rf = fopen(p, "a");
	if (!rf || fputs(line, rf) < 0 || fclose(rf)) {
		snprintf(err, errlen, "%s: cannot write: %s", p, strerror(errno));
		return CS_ERR_IO;
	}
	fprintf(out, "imp: round %d/%d done at step %ld: val_loss %.4f, sparsity %.2f%% "
		     "(%s/round-%02d.bin)\n",
		r, c->imp_rounds, t->step, val, 100.0 * ts_sparsity(t->ts), dir, r);
	return CS_OK;
}
