/*
 * test_train_native.c - host/train/train_native.c: the projections on the native engine.
 *   - the hook against a double reference at the mask's nonzeros (forward, backward data,
 *     the weight gradient scattered into the dense buffer with the pruned positions left
 *     untouched), with fp32 and bf16 weight storage, the dense-gradient mode, and packed
 *     gradients (dW at the kept entries in the engine's own array, accumulated);
 *   - training: the native engine against the dense host path (OpenBLAS) with the same
 *     masks: per-step losses within fp32 noise (1e-4 relative over 6 steps), the engine's
 *     steps with the blocked residual stream (gpt_linear_ops.res_blocked);
 *   - bit-identical reruns for a fixed thread count (2 threads), and a resumed run equal
 *     bit for bit to an uninterrupted one;
 *   - after every step of SET, RigL, GraNet and GMP runs (masks updated every 2 steps), the
 *     engine's compressed weights equal a build from scratch of the current weights and
 *     masks.
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
#include "common/numerics.h"
#include "engine/eng.h"
#include "train/train.h"
#include "train_test_util.h"

static uint64_t rs = 77;
static float frand(void)
{
	rs = rs * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(rs >> 11) / 4503599627370496.0 - 1.0);
}

static char dir[64], cfgp[256], err[1024];

static int make_trainer(trainer *t, char *const *ov, int nov)
{
	return tt_make_trainer(t, cfgp, ov, nov, err, sizeof err);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s", tt_mkdtemp());
	char p[128];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 30000);
	snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
	char text[1024];
	snprintf(text, sizeof text,
		 "run: {name: t, out_dir: %s/runs, seed: 5}\n"
		 "device: {kind: native}\n"
		 "model: {n_layer: 2, n_head: 2, n_embd: 32, block_size: 24, vocab_size: 256}\n"
		 "data: {path: %s, val_fraction: 0.1}\n"
		 "train: {steps: 6, batch_size: 3, lr: 1.0e-2, min_lr: 1.0e-3, warmup_steps: 1,\n"
		 "        eval_every: 0, ckpt_every: 0, sample_tokens: 0, threads: 2}\n"
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

static void check_hook(const char *weights)
{
	char ov[64];
	snprintf(ov, sizeof ov, "device.weights=%s", weights);
	char *const ovs[] = { ov };
	trainer t;
	assert_int_equal(make_trainer(&t, ovs, 1), CS_OK);
	assert_non_null(t.nat);
	int bf16 = !strcmp(weights, "bf16");
	gpt *m = &t.model;
	tn_set_packed_grads(t.nat, 0); /* the hook's own contract: dW into the dense buffer */
	int C = m->cfg.n_embd, OC = 4 * C, BT = 37; /* not a multiple of a vector */
	int ti = gpt_find_tensor(m, "h.1.mlp.fc.weight");
	const uint8_t *mask = ts_mask(t.ts, ti);
	assert_non_null(mask);
	const float *W = m->params_memory + m->tensors[ti].offset;
	float *x = malloc(sizeof(float) * BT * C), *y = malloc(sizeof(float) * BT * OC);
	float *dy = malloc(sizeof(float) * BT * OC), *dx = malloc(sizeof(float) * BT * C);
	float *dw = malloc(sizeof(float) * OC * C);
	for (int i = 0; i < BT * C; i++)
		x[i] = frand();
	for (int i = 0; i < BT * OC; i++)
		dy[i] = frand();
	for (int i = 0; i < OC * C; i++)
		dw[i] = 0.25f; /* the hook accumulates into it */
	double wv[4 * 32 * 32];
	for (int i = 0; i < OC * C; i++)
		wv[i] = mask[i] ? (bf16 ? nm_bf16_to_f32(nm_bf16_from_f32(W[i])) : W[i]) : 0.0;
	assert_int_equal(m->lin->forward(m->lin_ctx, y, x, W, 1, GPT_FC, BT, C, OC), CS_OK);
	for (int n = 0; n < BT; n++)
		for (int o = 0; o < OC; o++) {
			double s = 0, a = 0;
			for (int i = 0; i < C; i++) {
				s += x[n * C + i] * wv[o * C + i];
				a += fabs(x[n * C + i] * wv[o * C + i]);
			}
			assert_true(fabs(y[n * OC + o] - s) <= 1e-6 * (1 + a));
		}
	assert_int_equal(m->lin->backward(m->lin_ctx, dx, dw, dy, x, W, 1, GPT_FC, BT, C, OC, 0),
			 CS_OK);
	for (int n = 0; n < BT; n++)
		for (int i = 0; i < C; i++) {
			double s = 0, a = 0;
			for (int o = 0; o < OC; o++) {
				s += dy[n * OC + o] * wv[o * C + i];
				a += fabs(dy[n * OC + o] * wv[o * C + i]);
			}
			assert_true(fabs(dx[n * C + i] - s) <= 1e-6 * (1 + a));
		}
	for (int o = 0; o < OC; o++)
		for (int i = 0; i < C; i++) {
			if (!mask[o * C + i]) {
				assert_true(dw[o * C + i] == 0.25f); /* untouched */
				continue;
			}
			double s = 0.25, a = 0.25;
			for (int n = 0; n < BT; n++) {
				s += (double)dy[n * OC + o] * x[n * C + i];
				a += fabs((double)dy[n * OC + o] * x[n * C + i]);
			}
			assert_true(fabs(dw[o * C + i] - s) <= 1e-6 * (1 + a));
		}
	/* dense-gradient mode: every position */
	for (int i = 0; i < OC * C; i++)
		dw[i] = 0.0f;
	assert_int_equal(m->lin->backward(m->lin_ctx, dx, dw, dy, x, W, 1, GPT_FC, BT, C, OC, 1),
			 CS_OK);
	for (int o = 0; o < OC; o++)
		for (int i = 0; i < C; i++) {
			double s = 0, a = 0;
			for (int n = 0; n < BT; n++) {
				s += (double)dy[n * OC + o] * x[n * C + i];
				a += fabs((double)dy[n * OC + o] * x[n * C + i]);
			}
			assert_true(fabs(dw[o * C + i] - s) <= 1e-6 * (1 + a));
		}
	/* packed gradients: dW at the kept entries in their order, the dense buffer untouched,
	 * a second backward accumulating */
	tn_set_packed_grads(t.nat, 1);
	for (int rep = 1; rep <= 2; rep++) {
		if (rep == 1)
			tn_zero_grads(t.nat);
		for (int i = 0; i < OC * C; i++)
			dw[i] = 0.5f;
		assert_int_equal(m->lin->backward(m->lin_ctx, dx, dw, dy, x, W, 1, GPT_FC, BT, C,
						  OC, 0),
				 CS_OK);
		size_t nnz = 0, q = 0;
		const float *g = tn_packed_grad(t.nat, ti, &nnz);
		assert_non_null(g);
		for (int o = 0; o < OC; o++)
			for (int i = 0; i < C; i++) {
				assert_true(dw[o * C + i] == 0.5f);
				if (!mask[o * C + i])
					continue;
				double s = 0, a = 0;
				for (int n = 0; n < BT; n++) {
					s += (double)dy[n * OC + o] * x[n * C + i];
					a += fabs((double)dy[n * OC + o] * x[n * C + i]);
				}
				assert_true(q < nnz);
				assert_true(fabs(g[q++] - rep * s) <= 2e-6 * (1 + rep * a));
			}
		assert_true(q == nnz);
	}
	free(x);
	free(y);
	free(dy);
	free(dx);
	free(dw);
	trainer_free(&t);
}

static void test_hook_against_reference(void **state)
{
	(void)state;
	check_hook("fp32");
	check_hook("bf16");
}

/* res_on, when not NULL, gets how many steps ran with the blocked residual stream */
static void run_losses(char *const *ov, int nov, int steps, float *loss, int *res_on)
{
	trainer t;
	assert_int_equal(make_trainer(&t, ov, nov), CS_OK);
	if (res_on)
		*res_on = 0;
	for (int s = 0; s < steps; s++) {
		train_step_stats st;
		assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
		loss[s] = st.loss;
		if (res_on)
			*res_on += t.model.tm_res_on;
	}
	trainer_free(&t);
}

static void test_native_vs_dense_host(void **state)
{
	(void)state;
	/* one micro-batch, two (the packed gradients accumulate over them), and RigL (its
	 * growth steps take the dense gradient, through the token-minor MLP too) */
	for (int run = 1; run <= 3; run++) {
		float a[6], b[6];
		char ga[32];
		snprintf(ga, sizeof ga, "train.grad_accum=%d", run == 2 ? 2 : 1);
		char *const nat[] = { "device.kind=native", ga, "sparsity.algorithm=rigl",
				      "sparsity.update.freq=2", "sparsity.update.start=0" };
		char *const host[] = { "device.kind=cpu", "device.dense_on_host=true", ga,
				       "sparsity.algorithm=rigl", "sparsity.update.freq=2",
				       "sparsity.update.start=0" };
		int nov = run == 3 ? 3 : 0;
		int res_on;
		run_losses(nat, 2 + nov, 6, a, &res_on);
		run_losses(host, 3 + nov, 6, b, NULL);
		/* 80% everywhere: every block's projections on the engine, so the residual
		 * stream and LayerNorms run blocked (72 tokens: a partial last block) */
		assert_int_equal(res_on, 6);
		for (int s = 0; s < 6; s++) {
			printf("run %d step %d: native %.7f host %.7f\n", run, s + 1, a[s], b[s]);
			assert_true(fabsf(a[s] - b[s]) <= 1e-4f * fabsf(b[s]));
		}
		/* the first step's loss does not depend on how the projections run but for
		 * rounding */
		assert_true(a[0] != 0.0f);
	}
}

/* Parameters and optimizer state after `steps` steps, optionally through a checkpoint. */
static float *run_state(int steps, int save_at, size_t *n)
{
	trainer t;
	assert_int_equal(make_trainer(&t, NULL, 0), CS_OK);
	char ck[160];
	snprintf(ck, sizeof ck, "%s/resume.bin", dir);
	for (int s = 0; s < steps; s++) {
		if (s == save_at) {
			assert_int_equal(trainer_save(&t, ck, err, sizeof err), CS_OK);
			trainer_free(&t);
			assert_int_equal(make_trainer(&t, NULL, 0), CS_OK);
			assert_int_equal(trainer_load(&t, ck, err, sizeof err), CS_OK);
		}
		train_step_stats st;
		assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
	}
	size_t P = t.model.num_params;
	float *out = malloc(sizeof(float) * 3 * P);
	memcpy(out, t.model.params_memory, sizeof(float) * P);
	trainer_moments(&t, out + P, out + 2 * P);
	*n = 3 * P;
	trainer_free(&t);
	return out;
}

static void test_rerun_and_resume_bit_identical(void **state)
{
	(void)state;
	size_t n1, n2, n3;
	float *a = run_state(5, -1, &n1);
	float *b = run_state(5, -1, &n2);
	float *c = run_state(5, 2, &n3);
	assert_int_equal(n1, n2);
	assert_int_equal(n1, n3);
	assert_memory_equal(a, b, sizeof(float) * n1);
	assert_memory_equal(a, c, sizeof(float) * n1);
	free(a);
	free(b);
	free(c);
}

static void test_layout_after_mask_updates(void **state)
{
	(void)state;
	static const char *const algos[] = {
		"{algorithm: set, sparsity: 0.8, init_method: random,"
		" update: {freq: 2, start: 0, stop: 10}, drop_fraction: 0.3}",
		"{algorithm: rigl, sparsity: 0.8, init_method: random,"
		" update: {freq: 2, start: 0, stop: 10}, drop_fraction: 0.3}",
		"{algorithm: granet, init_density: 0.5, final_density: 0.2, prune_start: 0,"
		" prune_end: 6, update: {freq: 2, start: 0, stop: 10}}",
		"{algorithm: gmp, sparsity: {type: cubic, initial: 0.0, final: 0.8, begin: 0, end: 6},"
		" update: {freq: 2, start: 0, end: 6}}",
	};
	for (int a = 0; a < 4; a++) {
		trainer t;
		char p[128], text[1024], corpus[128];
		snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
		snprintf(p, sizeof p, "%s/alg.yaml", dir);
		snprintf(text, sizeof text,
			 "run: {name: a, out_dir: %s/runs, seed: 9}\n"
			 "device: {kind: native}\n"
			 "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 16, vocab_size: 256}\n"
			 "data: {path: %s, val_fraction: 0.1}\n"
			 "train: {steps: 8, batch_size: 2, lr: 1.0e-2, min_lr: 1.0e-3, warmup_steps: 1,\n"
			 "        eval_every: 0, ckpt_every: 0, sample_tokens: 0, threads: 2}\n"
			 "sparsity: %s\n",
			 dir, corpus, algos[a]);
		tt_write(p, text);
		train_config cfg;
		int rc = tc_load(&cfg, p, NULL, NULL, 0, err, sizeof err);
		if (rc)
			printf("config: %s\n", err);
		assert_int_equal(rc, CS_OK);
		assert_int_equal(trainer_init(&t, &cfg, 1, err, sizeof err), CS_OK);
		assert_non_null(t.nat);
		int changes = 0, sparse_seen = 0;
		for (int s = 0; s < 8; s++) {
			train_step_stats st;
			assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
			changes += st.masks_changed;
			for (int l = 0; l < t.model.cfg.n_layer; l++)
				for (int pj = 0; pj < GPT_NPROJ; pj++) {
					const eng_spmat *sp = tn_spmat(t.nat, l, pj);
					int ti = -1;
					for (int i = 0; i < t.model.num_tensors; i++)
						if (t.model.tensors[i].layer == l &&
						    t.model.tensors[i].proj == pj)
							ti = i;
					const uint8_t *mask = ts_mask(t.ts, ti);
					const gpt_tensor *gt = &t.model.tensors[ti];
					size_t kept = 0;
					for (size_t q = 0; mask && q < gt->numel; q++)
						kept += mask[q];
					if (!mask ||
					    kept > TN_SPARSE_MAX_DENSITY * (double)gt->numel) {
						assert_null(sp); /* runs dense */
						continue;
					}
					assert_non_null(sp);
					sparse_seen++;
					eng_spmat fresh = { 0 };
					assert_int_equal(eng_spmat_build(&fresh,
									 t.model.params_memory + gt->offset,
									 mask, gt->shape[0], gt->shape[1],
									 ENG_F32),
							 CS_OK);
					assert_true(eng_spmat_equal(sp, &fresh));
					eng_spmat_free(&fresh);
				}
		}
		printf("%s: %d mask changes in 8 steps, layout equal to a fresh build after each\n",
		       algos[a], changes);
		assert_true(changes > 0);
		assert_true(sparse_seen > 0);
		trainer_free(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hook_against_reference),
		cmocka_unit_test(test_native_vs_dense_host),
		cmocka_unit_test(test_rerun_and_resume_bit_identical),
		cmocka_unit_test(test_layout_after_mask_updates),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
