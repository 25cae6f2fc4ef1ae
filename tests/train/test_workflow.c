/*
 * test_workflow.c - host/train/workflow.c through train_run: iterative magnitude pruning
 * (exact nonzeros per round, the learning rate rewinds, resume mid-round and across a
 * round boundary bit-identical to an uninterrupted run), dense fine-tuning from a sparse
 * run's checkpoint (masks gone, every weight trainable, loss continuous, NaN sideband
 * too) and a one-shot prune of a dense checkpoint (exact counts, largest magnitudes).
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
#include <sys/stat.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "sparsity/sparsity.h"
#include "train/ckpt.h"
#include "train/train.h"
#include "train/workflow.h"
#include "train_test_util.h"

static void make_config(const char *dir, const char *name, const char *extra)
{
	char text[4096], p[300];
	snprintf(text, sizeof text,
		 "run: {name: t, out_dir: %s/runs, seed: 7}\n"
		 "device: {kind: native}\n"
		 "model: {n_layer: 2, n_head: 2, n_embd: 16, block_size: 8, vocab_size: 256}\n"
		 "data: {path: %s/corpus.txt, val_fraction: 0.1, cache_dir: %s/cache}\n"
		 "train: {steps: 16, batch_size: 2, lr: 1.0e-2, min_lr: 1.0e-3, warmup_steps: 2, "
		 "eval_every: 0, eval_batches: 2, ckpt_every: 0, sample_tokens: 0, threads: 2}\n"
		 "%s",
		 dir, dir, dir, extra);
	snprintf(p, sizeof p, "%s/%s", dir, name);
	tt_write(p, text);
}

static int run(const char *cfg, char *const *ov, int nov, int resume, long stop_after)
{
	char err[1024];
	train_opts o = { .config_path = cfg, .overrides = ov, .n_overrides = nov,
			 .resume = resume, .force = !resume, .progress = 0,
			 .stop_after = stop_after };
	FILE *devnull = fopen("/dev/null", "w");
	o.out = devnull;
	train_result r;
	int rc = train_run(&o, &r, err, sizeof err);
	fclose(devnull);
	if (rc && rc != CS_ERR_INTERRUPTED)
		printf("train_run: %s\n", err);
	return rc;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = calloc((size_t)n + 1, 1);
	if (fread(b, 1, (size_t)n, f) != (size_t)n)
		b[0] = 0;
	fclose(f);
	return b;
}

/* A trainer holding a checkpoint (its own config, on the host). */
static void open_ckpt(trainer *t, const char *path)
{
	char err[1024];
	train_config cfg;
	char *const ov[] = { "device.kind=cpu", "device.dense_on_host=true" };
	if (trainer_config_from_ckpt(&cfg, path, ov, 2, err, sizeof err))
		fail_msg("%s", err);
	if (trainer_init(t, &cfg, 1, err, sizeof err))
		fail_msg("%s", err);
	if (trainer_load(t, path, err, sizeof err))
		fail_msg("%s", err);
}

static size_t count_nz(const uint8_t *m, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += m[i] != 0;
	return c;
}

/* The "lr" of the training line of `step` in a metrics file. */
static double lr_at(const char *metrics, long step)
{
	char key[64];
	snprintf(key, sizeof key, "{\"step\": %ld, \"loss\"", step);
	const char *l = strstr(metrics, key);
	assert_non_null(l);
	const char *p = strstr(l, "\"lr\": ");
	assert_non_null(p);
	return strtod(p + 6, NULL);
}

#define IMP "imp: {rounds: 3, fraction: 0.4, steps_per_round: 6, rewind_step: 2, rewind: %s}\n" \
	    "sparsity: {algorithm: static, sparsity: 0.0}\n"

static void test_imp_counts_and_rewind(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[300], cfgp[300], extra[512];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 30000);
	snprintf(extra, sizeof extra, IMP, "lr");
	make_config(dir, "cfg.yaml", extra);
	snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
	/* 6 + 3 * (6 - 2) steps */
	char *ov[] = { "train.steps=18" };
	assert_int_equal(run(cfgp, ov, 1, 0, 0), CS_OK);
	/* the nonzeros of every pruned tensor follow the schedule exactly: per q, k and v
	 * part of the fused weight, and per other projection */
	for (int r = 0; r <= 3; r++) {
		trainer t;
		snprintf(p, sizeof p, "%s/runs/t/round-%02d.bin", dir, r);
		open_ckpt(&t, p);
		assert_int_equal(t.step, 6 + 4 * r);
		for (int i = 0; i < t.model.num_tensors; i++) {
			const gpt_tensor *g = &t.model.tensors[i];
			if (g->ndim != 2 || !strncmp(g->name, "w", 1))
				continue;
			const uint8_t *mk = ts_mask(t.ts, i);
			assert_non_null(mk);
			int parts = strstr(g->name, "qkv") ? 3 : 1;
			size_t n = g->numel / (size_t)parts;
			for (int k = 0; k < parts; k++) {
				size_t want = n;
				for (int q = 0; q < r; q++)
					want -= (size_t)floor(0.4 * (double)want + 0.5);
				size_t got = count_nz(mk + (size_t)k * n, n);
				if (got != want)
					fail_msg("round %d %s part %d: %zu nonzeros, schedule %zu", r,
						 g->name, k, got, want);
				/* pruned weights are zero */
				const float *w = t.model.params_memory + g->offset + (size_t)k * n;
				for (size_t j = 0; j < n; j++)
					if (!mk[k * n + j])
						assert_true(w[j] == 0.0f);
			}
		}
		trainer_free(&t);
	}
	/* the learning rate rewinds to step 2 of round 0 at every round */
	snprintf(p, sizeof p, "%s/runs/t/metrics.jsonl", dir);
	char *mt = read_all(p);
	assert_non_null(mt);
	/* layer_sparsity names the parts of the fused weight, not the fused tensor */
	assert_non_null(strstr(mt, "\"h.0.attn.v.weight\": "));
	assert_null(strstr(mt, "\"h.0.attn.qkv.weight\": "));
	for (int r = 1; r <= 3; r++) {
		long first = 6 + 4 * (r - 1) + 1; /* metrics count completed steps */
		assert_true(lr_at(mt, first) == lr_at(mt, 3));
		assert_true(lr_at(mt, first + 3) == lr_at(mt, 6));
	}
	assert_true(lr_at(mt, 3) > lr_at(mt, 6));
	assert_non_null(strstr(mt, "\"round\": 3, \"round_val_loss\""));
	free(mt);
	snprintf(p, sizeof p, "%s/runs/t/rounds.jsonl", dir);
	mt = read_all(p);
	int lines = 0;
	for (char *c = mt; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 4);
	free(mt);
	/* a train.steps that does not fit the rounds is refused, naming the key */
	char *bad[] = { "train.steps=17" };
	char err[1024];
	train_config cfg;
	assert_int_equal(tc_load(&cfg, cfgp, NULL, bad, 1, err, sizeof err), CS_ERR_CONFIG);
	assert_non_null(strstr(err, "imp.steps_per_round"));
	assert_non_null(strstr(err, "train.steps: 18"));
	tt_rmdir(dir);
}

static void test_imp_resume(void **state)
{
	(void)state;
	const char *rewind[2] = { "lr", "weights" };
	for (int w = 0; w < 2; w++) {
		char *dir = tt_mkdtemp(), p[300], q[300], cfgp[300], extra[512];
		snprintf(p, sizeof p, "%s/corpus.txt", dir);
		tt_corpus(p, 30000);
		snprintf(extra, sizeof extra, IMP, rewind[w]);
		make_config(dir, "cfg.yaml", extra);
		snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
		char *ova[] = { "train.steps=18", "run.name=a" };
		char *ovb[] = { "train.steps=18", "run.name=b" };
		assert_int_equal(run(cfgp, ova, 2, 0, 0), CS_OK);
		/* b: stopped mid-round 0 (step 4), at the round 0/1 boundary (step 6, before the
		 * prune), mid-round 1 (step 9), at the 2/3 boundary (step 14), then to the end */
		assert_int_equal(run(cfgp, ovb, 2, 0, 4), CS_ERR_INTERRUPTED);
		assert_int_equal(run(cfgp, ovb, 2, 1, 2), CS_ERR_INTERRUPTED);
		assert_int_equal(run(cfgp, ovb, 2, 1, 3), CS_ERR_INTERRUPTED);
		assert_int_equal(run(cfgp, ovb, 2, 1, 5), CS_ERR_INTERRUPTED);
		assert_int_equal(run(cfgp, ovb, 2, 1, 0), CS_OK);
		snprintf(p, sizeof p, "%s/runs/a/ckpt-00000018.bin", dir);
		snprintf(q, sizeof q, "%s/runs/b/ckpt-00000018.bin", dir);
		tt_assert_same_ckpt(p, q);
		for (int r = 0; r <= 3; r++) {
			snprintf(p, sizeof p, "%s/runs/a/round-%02d.bin", dir, r);
			snprintf(q, sizeof q, "%s/runs/b/round-%02d.bin", dir, r);
			tt_assert_same_ckpt(p, q);
		}
		snprintf(p, sizeof p, "%s/runs/a/rounds.jsonl", dir);
		snprintf(q, sizeof q, "%s/runs/b/rounds.jsonl", dir);
		char *ra = read_all(p), *rb = read_all(q);
		assert_string_equal(ra, rb);
		free(ra);
		free(rb);
		tt_rmdir(dir);
	}
}

static void test_finetune_dense_and_oneshot(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[300], src[300], cfgp[300], err[1024];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 30000);
	/* sparse pre-training at 75% */
	make_config(dir, "pre.yaml",
		    "sparsity: {algorithm: static, init_method: random, sparsity: 0.75}\n");
	snprintf(cfgp, sizeof cfgp, "%s/pre.yaml", dir);
	char *ovp[] = { "run.name=pre", "train.steps=6" };
	assert_int_equal(run(cfgp, ovp, 2, 0, 0), CS_OK);
	snprintf(src, sizeof src, "%s/runs/pre/ckpt-00000006.bin", dir);
	trainer s;
	open_ckpt(&s, src);
	float src_val;
	assert_int_equal(trainer_eval(&s, &src_val, err, sizeof err), CS_OK);

	/* dense fine-tuning from the run directory (its newest checkpoint), NaN sideband too */
	char nanp[300];
	snprintf(nanp, sizeof nanp, "%s/pre-nan.bin", dir);
	assert_int_equal(train_export_nan(src, nanp, err, sizeof err), CS_OK);
	const char *froms[2] = { "runs/pre", "pre-nan.bin" };
	for (int k = 0; k < 2; k++) {
		make_config(dir, "ft.yaml", "");
		snprintf(cfgp, sizeof cfgp, "%s/ft.yaml", dir);
		char from[400];
		snprintf(from, sizeof from, "model.init_from=%s/%s", dir, froms[k]);
		char *ov[] = { from, "device.kind=cpu", "device.dense_on_host=true" };
		trainer t;
		assert_int_equal(tt_make_trainer(&t, cfgp, ov, 3, err, sizeof err), CS_OK);
		assert_false(ts_enabled(t.ts));
		assert_int_equal(t.step, 0);
		for (int i = 0; i < t.model.num_tensors; i++)
			assert_null(ts_mask(t.ts, i));
		assert_memory_equal(t.model.params_memory, s.model.params_memory,
				    t.model.num_params * sizeof(float));
		/* the loss carries over the switch */
		float val;
		assert_int_equal(trainer_eval(&t, &val, err, sizeof err), CS_OK);
		assert_true(fabsf(val - src_val) <= 1e-6f * src_val);
		/* every weight trains: the pruned zeros of a projection move */
		int qkv = -1;
		for (int i = 0; i < t.model.num_tensors; i++)
			if (!strcmp(t.model.tensors[i].name, "h.0.attn.qkv.weight"))
				qkv = i;
		const gpt_tensor *g = &t.model.tensors[qkv];
		const uint8_t *mk = ts_mask(s.ts, qkv);
		assert_non_null(mk);
		train_step_stats st;
		assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
		assert_true(fabsf(st.loss - src_val) < 0.5f);
		/* (an entry whose gradient happens to be exactly zero stays put) */
		size_t moved = 0, pruned = 0, graded = 0;
		for (size_t j = 0; j < g->numel; j++)
			if (!mk[j]) {
				pruned++;
				int gr = t.model.grads_memory[g->offset + j] != 0.0f;
				int mv = t.model.params_memory[g->offset + j] != 0.0f;
				graded += gr;
				moved += mv;
				if (gr)
					assert_true(mv);
			}
		assert_true(pruned > 0);
		assert_true(moved >= graded && graded > pruned * 9 / 10);
		trainer_free(&t);
	}
	trainer_free(&s);

	/* the reverse: a dense run pruned one-shot by magnitude to exact counts */
	make_config(dir, "dense.yaml", "");
	snprintf(cfgp, sizeof cfgp, "%s/dense.yaml", dir);
	char *ovd[] = { "run.name=dense", "train.steps=4" };
	assert_int_equal(run(cfgp, ovd, 2, 0, 0), CS_OK);
	snprintf(src, sizeof src, "%s/runs/dense/ckpt-00000004.bin", dir);
	open_ckpt(&s, src);
	make_config(dir, "sp.yaml",
		    "sparsity: {algorithm: static, init_method: topk, sparsity: 0.8}\n");
	snprintf(cfgp, sizeof cfgp, "%s/sp.yaml", dir);
	char from[400];
	snprintf(from, sizeof from, "model.init_from=%s", src);
	char *ov[] = { from };
	trainer t;
	assert_int_equal(tt_make_trainer(&t, cfgp, ov, 1, err, sizeof err), CS_OK);
	int checked = 0;
	for (int i = 0; i < t.model.num_tensors; i++) {
		const uint8_t *mk = ts_mask(t.ts, i);
		const gpt_tensor *g = &t.model.tensors[i];
		if (!mk)
			continue;
		int parts = strstr(g->name, "qkv") ? 3 : 1;
		size_t n = g->numel / (size_t)parts;
		for (int k = 0; k < parts; k++) {
			assert_int_equal(count_nz(mk + (size_t)k * n, n), n - (size_t)floor(0.8 * (double)n + 0.5));
			/* the kept are the largest magnitudes of the dense weights */
			const float *w = s.model.params_memory + g->offset + (size_t)k * n;
			float min_kept = INFINITY, max_pruned = 0;
			for (size_t j = 0; j < n; j++) {
				float a = fabsf(w[j]);
				if (mk[k * n + j])
					min_kept = a < min_kept ? a : min_kept;
				else
					max_pruned = a > max_pruned ? a : max_pruned;
			}
			assert_true(min_kept >= max_pruned);
			checked++;
		}
	}
	assert_int_equal(checked, 2 * 6);
	trainer_free(&t);
	trainer_free(&s);
	tt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_imp_counts_and_rewind),
		cmocka_unit_test(test_imp_resume),
		cmocka_unit_test(test_finetune_dense_and_oneshot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
