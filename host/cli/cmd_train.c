/*
 * cmd_train.c - `cshost train`, `cshost sample`, `cshost eval`: argument parsing and exit
 * codes around host/train (train.h). Ctrl-C during training saves a checkpoint and exits
 * with 130; a second Ctrl-C kills at once.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_num.h"
#include "common/cs_error.h"
#include "driver/csd.h"
#include "train/dp.h"
#include "train/train.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = 1;
	signal(sig, SIG_DFL); /* a second Ctrl-C stops at once */
}

static void train_usage(FILE *f)
{
	fprintf(f,
		"usage: cshost train CONFIG.yaml [section.key=value ...] [--resume | --force]\n"
		"                    [--allow-config-change] [--progress | --no-progress]\n"
		"       cshost train CONFIG.yaml [section.key=value ...] --sim-model\n"
		"       cshost train --export-nan CKPT OUT   (pruned weights as NaN, Cerebras)\n"
		"       cshost train --import-nan CKPT OUT   (masks from NaN weights)\n"
		"\n"
		"Trains a GPT as CONFIG describes (docs/config.md) in <run.out_dir>/<run.name>.\n"
		"  --resume     continue that run from its latest intact checkpoint; refused\n"
		"               when the config changes the model, data, sparsity or optimizer\n"
		"  --allow-config-change\n"
		"               resume anyway, recording the change in config-changes.log\n"
		"  --force      start over, deleting the run's checkpoints and metrics\n"
		"  --sim-model  print the make arguments of the Verilated model the run needs\n"
		"               (`make sim-model ARGS` builds it; nothing when it needs none)\n"
		"Overrides use dotted keys: train.steps=50 device.kind=cpu.\n");
}

/* --sim-model: what make must build before this run (make train) */
static int print_sim_model(const train_opts *o, char *err, size_t errlen)
{
	train_config c;
	int rc = tc_load(&c, o->config_path, NULL, o->overrides, o->n_overrides, err, errlen);
	if (rc)
		return rc;
	char uri[128], path[1024], args[256];
	tc_device_uri(&c, uri, sizeof uri);
	if (!strcmp(c.device_kind, "sim")) {
		rc = csd_sim_model(uri, 0, path, sizeof path, args, sizeof args, err, errlen);
		if (!rc && args[0])
			printf("%s\n", args);
	}
	tc_free(&c);
	return rc;
}

int cmd_train(int argc, char **argv)
{
	train_opts o = { .progress = -1, .stop = &stop_flag };
	int sim_model = 0;
	char **ov = calloc(argc, sizeof *ov);
	int nov = 0;
	char err[8192]; /* a refused resume lists every changed key */
	if (!ov)
		return 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			train_usage(stdout);
			free(ov);
			return 0;
		} else if (!strcmp(a, "--resume")) {
			o.resume = 1;
		} else if (!strcmp(a, "--force")) {
			o.force = 1;
		} else if (!strcmp(a, "--allow-config-change")) {
			o.allow_config_change = 1;
		} else if (!strcmp(a, "--progress")) {
			o.progress = 1;
		} else if (!strcmp(a, "--no-progress")) {
			o.progress = 0;
		} else if (!strcmp(a, "--sim-model")) {
			sim_model = 1;
		} else if (!strcmp(a, "--export-nan") || !strcmp(a, "--import-nan")) {
			free(ov);
			if (i + 2 >= argc) {
				train_usage(stderr);
				return 2;
			}
			int rc = !strcmp(a, "--export-nan")
					 ? train_export_nan(argv[i + 1], argv[i + 2], err, sizeof err)
					 : train_import_nan(argv[i + 1], argv[i + 2], err, sizeof err);
			if (rc) {
				fprintf(stderr, "cshost train: %s\n", err);
				return 1;
			}
			printf("wrote %s\n", argv[i + 2]);
			return 0;
		} else if (a[0] == '-') {
			fprintf(stderr, "cshost train: unknown option '%s'\n", a);
			train_usage(stderr);
			free(ov);
			return 2;
		} else if (strchr(a, '=')) {
			ov[nov++] = argv[i];
		} else if (!o.config_path) {
			o.config_path = a;
		} else {
			fprintf(stderr, "cshost train: unexpected argument '%s' (overrides look like "
					"train.steps=50)\n", a);
			free(ov);
			return 2;
		}
	}
	if (!o.config_path) {
		train_usage(stderr);
		free(ov);
		return 2;
	}
	o.overrides = ov;
	o.n_overrides = nov;
	if (sim_model) {
		int rc = print_sim_model(&o, err, sizeof err);
		free(ov);
		if (rc)
			fprintf(stderr, "cshost train: %s\n", err);
		return rc ? 1 : 0;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* under mpirun: one rank of a data-parallel run (docs/scaling.md) */
	dp_comm *dp;
	if (dp_open(&dp, err, sizeof err)) {
		fprintf(stderr, "cshost train: %s\n", err);
		free(ov);
		return 1;
	}
	o.dp = dp;
	train_result r;
	int rc = train_run(&o, &r, err, sizeof err);
	free(ov);
	int N = dp_size(dp);
	if (rc && rc != CS_ERR_INTERRUPTED) {
		if (err[0] && N > 1)
			fprintf(stderr, "cshost train: rank %d of %d: %s\n", dp_rank(dp), N, err);
		else if (err[0])
			fprintf(stderr, "cshost train: %s\n", err);
		/* the others are waiting for this rank in the gradient sum: end them too
		 * (before the start every rank returned on its own) */
		if (N > 1 && r.started)
			dp_abort(dp, 1);
	}
	dp_close(dp);
	if (rc == CS_ERR_INTERRUPTED)
		return 130;
	return rc ? 1 : 0;
}

int cmd_sample(int argc, char **argv)
{
	const char *ckpt = NULL, *prompt = "\n";
	long long tokens = 200;
	double temperature = 0.8;
	uint64_t seed = 0;
	int have_seed = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: cshost sample CKPT [--prompt TEXT] [--tokens N] "
			       "[--temperature T] [--seed S]\n");
			return 0;
		} else if (!strcmp(a, "--prompt") && i + 1 < argc) {
			prompt = argv[++i];
		} else if (!strcmp(a, "--tokens") && i + 1 < argc) {
			if (cli_int("sample", a, argv[++i], 1, 1000000, &tokens))
				return 2;
		} else if (!strcmp(a, "--temperature") && i + 1 < argc) {
			if (cli_double("sample", a, argv[++i], 0, 100, &temperature))
				return 2;
		} else if (!strcmp(a, "--seed") && i + 1 < argc) {
			if (cli_u64("sample", a, argv[++i], &seed))
				return 2;
			have_seed = 1;
		} else if (a[0] != '-' && !ckpt) {
			ckpt = a;
		} else {
			fprintf(stderr, "cshost sample: unexpected argument '%s'\n", a);
			return 2;
		}
	}
	if (!ckpt) {
		fprintf(stderr, "usage: cshost sample CKPT [--prompt TEXT] [--tokens N] "
				"[--temperature T] [--seed S]\n");
		return 2;
	}
	char err[1024];
	train_config cfg;
	char *const ov[] = { "device.kind=cpu", "device.dense_on_host=true", "train.batch_size=1" };
	trainer t;
	int rc = trainer_config_from_ckpt(&cfg, ckpt, ov, 3, err, sizeof err);
	if (!rc)
		rc = trainer_init(&t, &cfg, 0, err, sizeof err);
	if (rc) {
		fprintf(stderr, "cshost sample: %s\n", err);
		return 1;
	}
	rc = trainer_load(&t, ckpt, err, sizeof err);
	if (have_seed)
		t.rng = seed;
	uint8_t *out = NULL;
	size_t nout = 0;
	if (!rc)
		rc = trainer_sample(&t, (const uint8_t *)prompt, strlen(prompt), (int)tokens,
				    (float)temperature, &out, &nout, err, sizeof err);
	if (!rc) {
		fputs(prompt, stdout);
		fwrite(out, 1, nout, stdout);
		fputc('\n', stdout);
	} else {
		fprintf(stderr, "cshost sample: %s\n", err);
	}
	free(out);
	trainer_free(&t);
	return rc ? 1 : 0;
}

int cmd_eval(int argc, char **argv)
{
	const char *ckpt = NULL;
	char **ov = calloc(argc + 3, sizeof *ov);
	int nov = 0;
	if (!ov)
		return 1;
	ov[nov++] = "device.kind=cpu";
	ov[nov++] = "device.dense_on_host=true";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: cshost eval CKPT [section.key=value ...]\n"
			       "Validation loss and perplexity of a checkpoint on the validation "
			       "split of its config's corpus (override data.path, "
			       "train.eval_batches, ...).\n");
			free(ov);
			return 0;
		} else if (strchr(argv[i], '=')) {
			ov[nov++] = argv[i];
		} else if (argv[i][0] != '-' && !ckpt) {
			ckpt = argv[i];
		} else {
			fprintf(stderr, "cshost eval: unexpected argument '%s'\n", argv[i]);
			free(ov);
			return 2;
		}
	}
	if (!ckpt) {
		fprintf(stderr, "usage: cshost eval CKPT [section.key=value ...]\n");
		free(ov);
		return 2;
	}
	char err[1024];
	train_config cfg;
	trainer t;
	int rc = trainer_config_from_ckpt(&cfg, ckpt, ov, nov, err, sizeof err);
	free(ov);
	if (!rc)
		rc = trainer_init(&t, &cfg, 1, err, sizeof err);
	if (rc) {
		fprintf(stderr, "cshost eval: %s\n", err);
		return 1;
	}
	float val;
	rc = trainer_load(&t, ckpt, err, sizeof err);
	if (!rc)
		rc = trainer_eval(&t, &val, err, sizeof err);
	if (rc) {
		fprintf(stderr, "cshost eval: %s\n", err);
	} else {
		printf("step %ld val_loss %.4f ppl %.3f (%d batches of %dx%d tokens; unigram "
		       "entropy %.4f)\n",
		       t.step, val, exp(val), t.cfg.eval_batches, t.cfg.batch_size,
		       t.cfg.model.block_size, t.data.unigram_entropy);
	}
	trainer_free(&t);
	return rc ? 1 : 0;
}
