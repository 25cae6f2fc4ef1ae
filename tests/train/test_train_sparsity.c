/*
 * test_train_sparsity.c - host/train/train_sparsity.c and the sparse training path:
 *   - static random 80% on the cpu backend: after every step no weight or AdamW moment is
 *     nonzero outside the mask, the device holds exactly the mask's nonzeros, and the
 *     metrics' sparsity is the mask's;
 *   - RigL (dense gradients on update steps, masks change, device lists rebuilt) keeps the
 *     same invariants, and a stopped-and-resumed RigL run equals an uninterrupted one bit for
 *     bit (sparsity state in the checkpoint);
 *   - the Cerebras NaN export marks exactly the pruned weights and import restores the
 *     masks and weights.
 * Skips when host/sparsity or the driver's cpu backend are not in this build.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "train/ckpt.h"
#include "train/train.h"
#include "train_test_util.h"

static char dir[64], cfgp[256], err[1024];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s", tt_mkdtemp());
	char p[128];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 30000);
	snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
	char text[1200];
	snprintf(text, sizeof text,
		 "run: {name: s, out_dir: %s/runs, seed: 11}\n"
		 "device: {kind: cpu, mesh: 2x2}\n"
		 "model: {n_layer: 2, n_head: 2, n_embd: 16, block_size: 8, vocab_size: 256}\n"
		 "data: {path: %s, val_fraction: 0.1}\n"
		 "train: {steps: 8, batch_size: 2, lr: 1.0e-2, min_lr: 1.0e-3, warmup_steps: 1,\n"
		 "        eval_every: 4, ckpt_every: 3, sample_tokens: 0}\n"
		 "sparsity: {algorithm: static, init_method: random, sparsity: 0.8}\n",
		 dir, p);
	tt_write(cfgp, text);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tt_rmdir(dir);
	return 0;
}

static int make_trainer(trainer *t, char *const *ov, int nov)
{
	return tt_make_trainer(t, cfgp, ov, nov, err, sizeof err);
}

/* Weights and moments vanish outside the masks; the device holds the masks' nonzeros. */
static void check_invariants(trainer *t)
{
	gpt *m = &t->model;
	int sparse = 0;
	float *am = malloc(2 * m->num_params * sizeof(float)), *av = am + m->num_params;
	assert_non_null(am);
	trainer_moments(t, am, av); /* packed moments expanded */
	for (int i = 0; i < m->num_tensors; i++) {
		const uint8_t *mask = ts_mask(t->ts, i);
		if (!mask)
			continue;
		sparse++;
		const gpt_tensor *g = &m->tensors[i];
		int64_t kept = 0;
		for (size_t k = 0; k < g->numel; k++) {
			size_t j = g->offset + k;
			kept += mask[k] != 0;
			if (!mask[k] && (m->params_memory[j] != 0.0f || am[j] != 0.0f ||
					 av[j] != 0.0f)) {
				fprintf(stderr, "%s[%zu]: pruned but w %g m %g v %g\n", g->name, k,
					m->params_memory[j], am[j], av[j]);
				fail();
			}
		}
		if (t->dev && g->proj >= 0)
			assert_int_equal(td_dev_nnz(t->dev, g->layer, g->proj), kept);
		double sp = 1.0 - (double)kept / g->numel;
		assert_true(fabs(sp - ts_tensor_sparsity(t->ts, i)) < 1e-9);
		if (!(sp > 0.79 && sp < 0.81)) {
			fprintf(stderr, "%s: sparsity %.4f (%lld of %zu kept)\n", g->name, sp, (long long)kept, g->numel);
			fail();
		}
	}
	free(am);
	assert_int_equal(sparse, 4 * m->cfg.n_layer); /* the projections, not wte/wpe */
}

static int skip_if_missing(int rc)
{
	return rc == CS_ERR_NOT_SUPPORTED;
}

static void test_static_on_cpu_backend(void **state)
{
	(void)state;
	trainer t;
	int rc = make_trainer(&t, NULL, 0);
	if (skip_if_missing(rc))
		skip();
	assert_int_equal(rc, CS_OK);
	assert_non_null(t.dev);
	assert_true(ts_enabled(t.ts));
	check_invariants(&t);
	for (int i = 0; i < 3; i++) {
		train_step_stats s;
		assert_int_equal(trainer_step(&t, &s, err, sizeof err), CS_OK);
		assert_int_equal(s.masks_changed, 0);
		assert_true(s.device_cycles > 0);
		check_invariants(&t);
	}
	trainer_free(&t);
}

static char *const rigl[] = { "sparsity.algorithm=rigl", "sparsity.update.freq=2",
			      "sparsity.update.start=0", "sparsity.update.stop=7",
			      "sparsity.drop_fraction=0.3" };

static void test_rigl_masks_change_and_resume(void **state)
{
	(void)state;
	trainer t;
	int rc = make_trainer(&t, rigl, 5);
	if (skip_if_missing(rc))
		skip();
	assert_int_equal(rc, CS_OK);
	int changed = 0, dense_steps = 0;
	for (int i = 0; i < 8; i++) {
		dense_steps += ts_wants_dense_grad(t.ts, t.step);
		train_step_stats s;
		assert_int_equal(trainer_step(&t, &s, err, sizeof err), CS_OK);
		changed += s.masks_changed;
		check_invariants(&t);
	}
	printf("%d dense-gradient steps, %d mask changes\n", dense_steps, changed);
	assert_true(dense_steps >= 2);
	assert_true(changed > 0);
	trainer_free(&t);

	/* stopped after 3 and after 2 more, resumed, against uninterrupted */
	train_result r;
	train_opts o = { .config_path = cfgp, .overrides = rigl, .n_overrides = 5, .progress = 0 };
	o.out = fopen("/dev/null", "w");
	char *ova[6], *ovb[6];
	for (int i = 0; i < 5; i++)
		ova[i] = ovb[i] = rigl[i];
	ova[5] = "run.name=a";
	ovb[5] = "run.name=b";
	o.overrides = ova;
	o.n_overrides = 6;
	assert_int_equal(train_run(&o, &r, err, sizeof err), CS_OK);
	o.overrides = ovb;
	o.stop_after = 3;
	assert_int_equal(train_run(&o, &r, err, sizeof err), CS_ERR_INTERRUPTED);
	o.resume = 1;
	o.stop_after = 2;
	assert_int_equal(train_run(&o, &r, err, sizeof err), CS_ERR_INTERRUPTED);
	o.stop_after = 0;
	assert_int_equal(train_run(&o, &r, err, sizeof err), CS_OK);
	fclose(o.out);
	char pa[256], pb[256];
	snprintf(pa, sizeof pa, "%s/runs/a/ckpt-00000008.bin", dir);
	snprintf(pb, sizeof pb, "%s/runs/b/ckpt-00000008.bin", dir);
	ck_file fa, fb;
	assert_int_equal(ck_load(pa, &fa, err, sizeof err), CS_OK);
	assert_int_equal(ck_load(pb, &fb, err, sizeof err), CS_OK);
	assert_non_null(ck_find(&fa, "sparsity/state"));
	for (int i = 0; i < fa.n; i++) {
		if (!strcmp(fa.rec[i].name, "config"))
			continue;
		const ck_record *x = ck_find(&fb, fa.rec[i].name);
		assert_non_null(x);
		assert_int_equal(x->nbytes, fa.rec[i].nbytes);
		if (memcmp(x->data, fa.rec[i].data, x->nbytes)) {
			fprintf(stderr, "%s differs after resume\n", x->name);
			fail();
		}
	}
	ck_free(&fa);
	ck_free(&fb);
}

static void test_nan_export_import(void **state)
{
	(void)state;
	char p[256], q[256], q2[256];
	snprintf(p, sizeof p, "%s/runs/a/ckpt-00000008.bin", dir);
	ck_file f;
	if (ck_load(p, &f, err, sizeof err))
		skip(); /* the RigL run did not happen (skipped) */
	ck_free(&f);
	snprintf(q, sizeof q, "%s/nan.bin", dir);
	snprintf(q2, sizeof q2, "%s/back.bin", dir);
	assert_int_equal(train_export_nan(p, q, err, sizeof err), CS_OK);
	/* the original, loaded as a trainer: its masks */
	train_config cfg;
	trainer t;
	assert_int_equal(trainer_config_from_ckpt(&cfg, p, NULL, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_init(&t, &cfg, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_load(&t, p, err, sizeof err), CS_OK);
	ck_file nf;
	assert_int_equal(ck_load(q, &nf, err, sizeof err), CS_OK);
	assert_true(nf.hdr.flags & CK_FLAG_NAN_PRUNED);
	assert_null(ck_find(&nf, "adam_m/wte.weight"));
	size_t nans = 0, pruned = 0;
	for (int i = 0; i < t.model.num_tensors; i++) {
		const gpt_tensor *g = &t.model.tensors[i];
		char name[96];
		snprintf(name, sizeof name, "param/%s", g->name);
		const ck_record *r = ck_find(&nf, name);
		assert_non_null(r);
		const float *w = r->data;
		const uint8_t *mask = ts_mask(t.ts, i);
		for (size_t k = 0; k < g->numel; k++) {
			assert_int_equal(isnan(w[k]) != 0, mask && !mask[k]);
			nans += isnan(w[k]) != 0;
			pruned += mask && !mask[k];
			if (!isnan(w[k]))
				assert_true(w[k] == t.model.params_memory[g->offset + k]);
		}
	}
	printf("%zu NaN weights, %zu pruned\n", nans, pruned);
	assert_true(nans > 0 && nans == pruned);
	ck_free(&nf);
	/* import: a trainer from the NaN file has the same masks and weights */
	assert_int_equal(train_import_nan(q, q2, err, sizeof err), CS_OK);
	trainer t2;
	assert_int_equal(trainer_config_from_ckpt(&cfg, q2, NULL, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_init(&t2, &cfg, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_load(&t2, q2, err, sizeof err), CS_OK);
	assert_memory_equal(t2.model.params_memory, t.model.params_memory,
			    t.model.num_params * sizeof(float));
	for (int i = 0; i < t.model.num_tensors; i++) {
		const uint8_t *a = ts_mask(t.ts, i), *b = ts_mask(t2.ts, i);
		assert_true((a == NULL) == (b == NULL));
		if (a)
			assert_memory_equal(a, b, t.model.tensors[i].numel);
	}
	trainer_free(&t2);
	trainer_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_on_cpu_backend),
		cmocka_unit_test(test_rigl_masks_change_and_resume),
		cmocka_unit_test(test_nan_export_import),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
