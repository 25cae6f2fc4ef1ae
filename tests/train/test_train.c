/*
 * test_train.c - host/train/train.c: a few dense training steps against an independent
 * float64 implementation (gpt64.h forward, finite-difference gradients, its own AdamW,
 * clipping and schedule), resume == uninterrupted bit for bit, the run directory rules
 * (no overwrite without --force / --resume; a resume that changes the training refused
 * with a diff or recorded; a corrupt newest checkpoint skipped with a warning; the run
 * directory's lock), Ctrl-C, sampling and the NaN export round trip.
 *
 * Stated tolerances (fp32 trainer vs float64 reference, 3 steps of AdamW, eps 1e-6):
 *   loss of each step: relative 2e-6;  every parameter: |w32 - w64| <= 0.005 * lr.
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
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "gpt64.h"
#include "train/ckpt.h"
#include "train/train.h"
#include "train_test_util.h"

static char cfg_text[4096];

/* extra: more train keys (", ckpt_every: 2"), each replacing the default of that key */
static void make_config(const char *dir, const char *extra)
{
	static const char *const train_keys[] = {
		"steps: 3", "batch_size: 1", "grad_accum: 2", "lr: 1.0e-2", "min_lr: 1.0e-3",
		"warmup_steps: 1", "weight_decay: 0.1", "beta1: 0.9", "beta2: 0.95",
		"eps: 1.0e-6", "grad_clip: 0.5", "eval_every: 0", "eval_batches: 2",
		"ckpt_every: 0", "sample_tokens: 0", NULL
	};
	char train[1024] = "";
	for (int i = 0; train_keys[i]; i++) {
		char key[40];
		snprintf(key, sizeof key, " %.*s:", (int)(strchr(train_keys[i], ':') - train_keys[i]),
			 train_keys[i]);
		if (extra && strstr(extra, key))
			continue;
		size_t l = strlen(train);
		snprintf(train + l, sizeof train - l, "%s%s", l ? ", " : "", train_keys[i]);
	}
	snprintf(cfg_text, sizeof cfg_text,
		 "run: {name: t, out_dir: %s/runs, seed: 99}\n"
		 "device: {kind: cpu, dense_on_host: true}\n"
		 "model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 8, vocab_size: 256}\n"
		 "data: {path: %s/corpus.txt, val_fraction: 0.1, cache_dir: %s/cache}\n"
		 "train: {%s%s}\n",
		 dir, dir, dir, train, extra ? extra : "");
	char p[256];
	snprintf(p, sizeof p, "%s/cfg.yaml", dir);
	tt_write(p, cfg_text);
}

static void test_steps_match_float64(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[256], err[512];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 20000);
	make_config(dir, NULL);
	train_config cfg;
	snprintf(p, sizeof p, "%s/cfg.yaml", dir);
	assert_int_equal(tc_load(&cfg, p, NULL, NULL, 0, err, sizeof err), CS_OK);
	trainer t;
	int rc = trainer_init(&t, &cfg, 1, err, sizeof err);
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, CS_OK);
	assert_null(t.dev);
	size_t P = t.model.num_params;
	g64 g = { &t.model, malloc(P * 8) };
	double *m = calloc(P, 8), *v = calloc(P, 8);
	for (size_t i = 0; i < P; i++)
		g.p[i] = t.model.params_memory[i];
	for (long s = 0; s < t.cfg.steps; s++) {
		double norm, lr;
		double loss64 = g64_train_step(&g, m, v, &t, s, &norm, &lr);
		train_step_stats st;
		assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
		double worst = g64_max_diff(t.model.params_memory, g.p, P);
		printf("step %ld: loss fp32 %.8f fp64 %.8f, grad norm fp32 %.6f fp64 %.6f, lr %.6g "
		       "%.6g, worst parameter difference %.3g (%.4f lr)\n", s + 1, st.loss, loss64,
		       st.grad_norm, norm, st.lr, lr, worst, worst / t.cfg.lr);
		assert_true(fabs(st.loss - loss64) <= 2e-6 * loss64);
		assert_true(fabs(st.grad_norm - norm) <= 1e-4 * norm);
		assert_true(fabs(st.lr - lr) <= 1e-12);
		assert_true(worst <= 0.005 * t.cfg.lr);
	}
	free(g.p), free(m), free(v);
	trainer_free(&t);
	tt_rmdir(dir);
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = calloc(n + 1, 1);
	if (fread(b, 1, n, f) != (size_t)n)
		n = 0;
	fclose(f);
	return b;
}

/* the "loss" fields of the training lines of a metrics file, concatenated */
static void losses_of(const char *path, char *out, size_t len)
{
	char *s = read_all(path);
	assert_non_null(s);
	out[0] = 0;
	for (char *l = strtok(s, "\n"); l; l = strtok(NULL, "\n")) {
		char *p = strstr(l, "\"loss\":");
		if (!p)
			p = strstr(l, "\"val_loss\":");
		if (p) {
			char *e = strchr(p, ',');
			size_t k = strlen(out);
			snprintf(out + k, len - k, "%.*s;", (int)(e ? e - p : 20), p);
		}
	}
	free(s);
}

static int run(const char *cfg, char *const *ov, int nov, int resume, int force,
	       long stop_after, char *err, size_t errlen)
{
	train_opts o = { .config_path = cfg, .overrides = ov, .n_overrides = nov,
			 .resume = resume, .force = force, .progress = 0, .stop_after = stop_after };
	FILE *devnull = fopen("/dev/null", "w");
	o.out = devnull;
	train_result r;
	int rc = train_run(&o, &r, err, errlen);
	fclose(devnull);
	if (rc && rc != CS_ERR_INTERRUPTED)
		printf("train_run: %s\n", err);
	return rc;
}

static void test_resume_is_bit_identical(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[256], q[256], cfgp[256], err[1024];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 30000);
	make_config(dir, ", eval_every: 3, ckpt_every: 2");
	snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
	char *ova[] = { "train.steps=7", "run.name=a", "model.n_layer=2", "train.batch_size=2" };
	char *ovb[] = { "train.steps=7", "run.name=b", "model.n_layer=2", "train.batch_size=2" };
	assert_int_equal(run(cfgp, ova, 4, 0, 0, 0, err, sizeof err), CS_OK);
	/* b: stopped after 3 steps (a Ctrl-C), resumed, stopped after 2 more, resumed */
	assert_int_equal(run(cfgp, ovb, 4, 0, 0, 3, err, sizeof err), CS_ERR_INTERRUPTED);
	assert_int_equal(run(cfgp, ovb, 4, 1, 0, 2, err, sizeof err), CS_ERR_INTERRUPTED);
	assert_int_equal(run(cfgp, ovb, 4, 1, 0, 0, err, sizeof err), CS_OK);
	snprintf(p, sizeof p, "%s/runs/a/ckpt-00000007.bin", dir);
	snprintf(q, sizeof q, "%s/runs/b/ckpt-00000007.bin", dir);
	tt_assert_same_ckpt(p, q);
	char la[4096], lb[4096];
	snprintf(p, sizeof p, "%s/runs/a/metrics.jsonl", dir);
	snprintf(q, sizeof q, "%s/runs/b/metrics.jsonl", dir);
	losses_of(p, la, sizeof la);
	losses_of(q, lb, sizeof lb);
	printf("losses: %s\n", la);
	assert_string_equal(la, lb);
	/* validation lines were written too */
	assert_non_null(strstr(la, "val_loss"));

	/* an existing run is not overwritten without --force / --resume */
	struct stat st0, st1;
	assert_int_equal(stat(p, &st0), 0);
	assert_int_equal(run(cfgp, ova, 4, 0, 0, 0, err, sizeof err), CS_ERR_EXISTS);
	assert_non_null(strstr(err, "--resume"));
	/* extending a finished run with train.steps=N continues it */
	char *ova9[] = { "train.steps=9", "run.name=a", "model.n_layer=2", "train.batch_size=2" };
	assert_int_equal(run(cfgp, ova9, 4, 1, 0, 0, err, sizeof err), CS_OK);
	snprintf(q, sizeof q, "%s/runs/a/ckpt-00000009.bin", dir);
	assert_int_equal(stat(q, &st1), 0);
	/* a corrupt latest checkpoint: the newest intact one is used, with a warning naming
	 * both (tests below); a model of another shape is a change of config, refused */
	char *ovs[] = { "train.steps=11", "run.name=a", "model.n_layer=3", "train.batch_size=2" };
	assert_int_equal(run(cfgp, ovs, 4, 1, 0, 0, err, sizeof err), CS_ERR_CONFIG);
	printf("shape: %s\n", err);
	assert_non_null(strstr(err, "model.n_layer: 2 -> 3"));
	/* --force starts over */
	assert_int_equal(run(cfgp, ova, 4, 0, 1, 0, err, sizeof err), CS_OK);
	snprintf(q, sizeof q, "%s/runs/b/ckpt-00000007.bin", dir);
	snprintf(p, sizeof p, "%s/runs/a/ckpt-00000007.bin", dir);
	tt_assert_same_ckpt(p, q);
	tt_rmdir(dir);
}

/* train_run with its progress output kept in `log` */
static int run_log(const char *cfg, char *const *ov, int nov, int resume, int allow, char *log,
		   size_t loglen, char *err, size_t errlen)
{
	train_opts o = { .config_path = cfg, .overrides = ov, .n_overrides = nov,
			 .resume = resume, .allow_config_change = allow, .progress = 0 };
	char *buf = NULL;
	size_t len = 0;
	o.out = open_memstream(&buf, &len);
	train_result r;
	int rc = train_run(&o, &r, err, errlen);
	fclose(o.out);
	snprintf(log, loglen, "%s", buf ? buf : "");
	free(buf);
	if (rc)
		printf("train_run: %s\n", err);
	return rc;
}

static void flip_byte(const char *path, long at)
{
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, at, SEEK_SET);
	int ch = fgetc(f);
	fseek(f, at, SEEK_SET);
	fputc(ch ^ 0x40, f);
	fclose(f);
}

static void test_resume_guards(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[256], q[256], cfgp[256], err[4096], log[8192];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 20000);
	snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
	/* a key given twice is refused, not "the last one wins" */
	tt_write(cfgp, "train: {steps: 6, ckpt_every: 0, lr: 0.01, ckpt_every: 2}\n");
	char *ov6[] = { "train.steps=6" };
	assert_int_equal(run_log(cfgp, ov6, 1, 0, 0, log, sizeof log, err, sizeof err),
			 CS_ERR_CONFIG);
	assert_non_null(strstr(err, "duplicate key 'ckpt_every'"));
	make_config(dir, "");
	char *ov[] = { "train.steps=6", "train.ckpt_every=2", "train.keep_ckpts=3",
		       "sparsity.sparsity=0.5", "sparsity.type=static" };
	assert_int_equal(run_log(cfgp, ov, 5, 0, 0, log, sizeof log, err, sizeof err), CS_OK);

	/* another sparsity target and learning rate: refused, with the diff */
	char *ovc[] = { "train.steps=8", "train.ckpt_every=2", "train.keep_ckpts=3",
			"sparsity.sparsity=0.8", "sparsity.type=static", "train.lr=0.02" };
	assert_int_equal(run_log(cfgp, ovc, 6, 1, 0, log, sizeof log, err, sizeof err),
			 CS_ERR_CONFIG);
	assert_non_null(strstr(err, "ckpt-00000006.bin: the config changes what this run"));
	assert_non_null(strstr(err, "\n  train.lr: 0.01 -> 0.02\n"));
	assert_non_null(strstr(err, "\n  sparsity.sparsity: 0.5 -> 0.8\n"));
	assert_non_null(strstr(err, "--allow-config-change"));
	/* train.steps, logging and the device are not changes of the training */
	char *ovs[] = { "train.steps=8", "train.ckpt_every=2", "train.keep_ckpts=3",
			"sparsity.sparsity=0.5", "sparsity.type=static", "train.log_every=3",
			"device.kind=model" };
	snprintf(q, sizeof q, "%s/runs/t/ckpt-00000006.bin", dir);
	char *ck6 = read_all(q);
	assert_int_equal(run_log(cfgp, ovs, 7, 1, 0, log, sizeof log, err, sizeof err), CS_OK);
	/* with the flag: continues and records the change */
	char *ova[] = { "train.steps=10", "train.ckpt_every=2", "train.keep_ckpts=3",
			"sparsity.sparsity=0.8", "sparsity.type=static" };
	assert_int_equal(run_log(cfgp, ova, 5, 1, 1, log, sizeof log, err, sizeof err), CS_OK);
	assert_non_null(strstr(log, "sparsity.sparsity: 0.5 -> 0.8"));
	snprintf(p, sizeof p, "%s/runs/t/config-changes.log", dir);
	char *cl = read_all(p);
	printf("config-changes.log: %s", cl);
	assert_non_null(strstr(cl, "ckpt-00000008.bin with --allow-config-change"));
	assert_non_null(strstr(cl, "  sparsity.sparsity: 0.5 -> 0.8\n"));
	free(cl);
	/* the new checkpoints carry the new config: resuming with it is no change */
	char *ovb[] = { "train.steps=12", "train.ckpt_every=2", "train.keep_ckpts=3",
			"sparsity.sparsity=0.8", "sparsity.type=static" };
	assert_int_equal(run_log(cfgp, ovb, 5, 1, 0, log, sizeof log, err, sizeof err), CS_OK);

	/* a damaged newest checkpoint: the one before it, with a warning naming both */
	snprintf(p, sizeof p, "%s/runs/t/ckpt-00000012.bin", dir);
	flip_byte(p, 3000);
	char *ovd[] = { "train.steps=14", "train.ckpt_every=2", "train.keep_ckpts=3",
			"sparsity.sparsity=0.8", "sparsity.type=static" };
	assert_int_equal(run_log(cfgp, ovd, 5, 1, 0, log, sizeof log, err, sizeof err), CS_OK);
	printf("%s", log);
	assert_non_null(strstr(log, "ckpt-00000012.bin: corrupt checkpoint"));
	assert_non_null(strstr(log, "resuming from "));
	assert_non_null(strstr(log, "ckpt-00000010.bin (step 10)"));
	/* all of them damaged: the newest's error */
	char *ove[] = { "train.steps=16", "train.ckpt_every=2", "train.keep_ckpts=3",
			"sparsity.sparsity=0.8", "sparsity.type=static" };
	for (int s = 10; s <= 14; s += 2) {
		snprintf(p, sizeof p, "%s/runs/t/ckpt-%08d.bin", dir, s);
		flip_byte(p, 3000);
	}
	assert_int_equal(run_log(cfgp, ove, 5, 1, 0, log, sizeof log, err, sizeof err),
			 CS_ERR_FORMAT);
	assert_non_null(strstr(err, "ckpt-00000014.bin"));
	assert_non_null(strstr(err, "no older checkpoint is intact"));
	free(ck6);

	/* the lock: held by a live process, an error naming it */
	snprintf(p, sizeof p, "%s/runs/t/lock", dir);
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(ftruncate(fd, 0), 0);
	dprintf(fd, "%ld\n", (long)getpid());
	assert_int_equal(run_log(cfgp, ove, 5, 1, 0, log, sizeof log, err, sizeof err),
			 CS_ERR_EXISTS);
	char want[64];
	snprintf(want, sizeof want, "in use by process %ld", (long)getpid());
	assert_non_null(strstr(err, want));
	/* left by a process that died: taken over, with a note */
	close(fd);
	pid_t child = fork();
	if (!child)
		_exit(0);
	waitpid(child, NULL, 0);
	fd = open(p, O_RDWR | O_TRUNC);
	dprintf(fd, "%ld\n", (long)child);
	close(fd);
	make_config(dir, "");
	snprintf(p, sizeof p, "%s/runs/t", dir);
	char *ovf[] = { "train.steps=6", "train.ckpt_every=2" };
	train_opts o = { .config_path = cfgp, .overrides = ovf, .n_overrides = 2, .force = 1 };
	char *buf = NULL;
	size_t len = 0;
	o.out = open_memstream(&buf, &len);
	train_result r;
	assert_int_equal(train_run(&o, &r, err, sizeof err), CS_OK);
	fclose(o.out);
	snprintf(want, sizeof want, "process %ld did not release the run directory", (long)child);
	assert_non_null(strstr(buf, want));
	free(buf);
	/* released cleanly: no pid left behind */
	snprintf(p, sizeof p, "%s/runs/t/lock", dir);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 0);
	/* a run that fails before starting leaves no directory behind */
	char *ovn[] = { "run.name=never", "data.path=/nonexistent" };
	assert_int_not_equal(run_log(cfgp, ovn, 2, 0, 0, log, sizeof log, err, sizeof err), CS_OK);
	snprintf(p, sizeof p, "%s/runs/never", dir);
	assert_int_not_equal(stat(p, &st), 0);
	tt_rmdir(dir);
}

static void test_stop_flag_and_sample(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[256], cfgp[256], err[1024];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 20000);
	make_config(dir, ", sample_tokens: 50");
	snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
	volatile sig_atomic_t stop = 1; /* Ctrl-C already pressed: stop after one step */
	train_opts o = { .config_path = cfgp, .progress = 0, .stop = &stop };
	o.out = fopen("/dev/null", "w");
	char *ov[] = { "train.steps=5" };
	o.overrides = ov;
	o.n_overrides = 1;
	train_result r;
	assert_int_equal(train_run(&o, &r, err, sizeof err), CS_ERR_INTERRUPTED);
	assert_int_equal(r.steps, 1);
	snprintf(p, sizeof p, "%s/runs/t/ckpt-00000001.bin", dir);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	stop = 0;
	o.resume = 1;
	assert_int_equal(train_run(&o, &r, err, sizeof err), CS_OK);
	fclose(o.out);
	assert_int_equal(r.steps, 5);
	assert_true(isfinite(r.val_loss) && r.val_loss > 0);
	snprintf(p, sizeof p, "%s/runs/t/sample.txt", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 51);

	/* sampling is deterministic in the RNG state; greedy needs no RNG */
	snprintf(p, sizeof p, "%s/runs/t/ckpt-00000005.bin", dir);
	train_config cfg;
	char *sov[] = { "train.batch_size=1" };
	assert_int_equal(trainer_config_from_ckpt(&cfg, p, sov, 1, err, sizeof err), CS_OK);
	trainer t;
	assert_int_equal(trainer_init(&t, &cfg, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_load(&t, p, err, sizeof err), CS_OK);
	uint8_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	uint64_t rng = t.rng;
	assert_int_equal(trainer_sample(&t, (const uint8_t *)"the ", 4, 40, 1.0f, &a, &na, err,
					sizeof err), CS_OK);
	t.rng = rng;
	assert_int_equal(trainer_sample(&t, (const uint8_t *)"the ", 4, 40, 1.0f, &b, &nb, err,
					sizeof err), CS_OK);
	assert_int_equal(na, 40); /* byte tokens: one byte each */
	assert_int_equal(nb, 40);
	assert_memory_equal(a, b, 40);
	free(a);
	free(b);
	/* a long prompt slides the context window */
	char longp[100];
	memset(longp, 'a', sizeof longp);
	assert_int_equal(trainer_sample(&t, (const uint8_t *)longp, 100, 5, 0.0f, &a, &na, err,
					sizeof err), CS_OK);
	assert_int_equal(na, 5);
	free(a);
	trainer_free(&t);

	/* Cerebras NaN export / import round trip (dense: no NaN, same weights) */
	char q[256], q2[256];
	snprintf(q, sizeof q, "%s/nan.bin", dir);
	snprintf(q2, sizeof q2, "%s/back.bin", dir);
	assert_int_equal(train_export_nan(p, q, err, sizeof err), CS_OK);
	assert_int_equal(train_import_nan(q, q2, err, sizeof err), CS_OK);
	ck_file fa, fb;
	assert_int_equal(ck_load(p, &fa, err, sizeof err), CS_OK);
	assert_int_equal(ck_load(q2, &fb, err, sizeof err), CS_OK);
	assert_true(fb.hdr.flags == 0);
	for (int i = 0; i < fa.n; i++)
		if (!strncmp(fa.rec[i].name, "param/", 6)) {
			const ck_record *x = ck_find(&fb, fa.rec[i].name);
			assert_non_null(x);
			assert_memory_equal(x->data, fa.rec[i].data, x->nbytes);
		}
	ck_free(&fa);
	ck_free(&fb);
	tt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps_match_float64),
		cmocka_unit_test(test_resume_is_bit_identical),
		cmocka_unit_test(test_resume_guards),
		cmocka_unit_test(test_stop_flag_and_sample),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
