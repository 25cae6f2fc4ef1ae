/*
 * test_cmd_train.c - host/cli/cmd_train.c through the built binary (build/bin/cshost next to
 * this test's directory): exit codes (0 ok, 1 failure, 2 usage, 130 after SIGINT), one-line
 * errors on stderr, a full tiny run with sample and eval, --resume / --force, and SIGINT
 * leaving a checkpoint to resume from.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../train/train_test_util.h"

static char cshost[1024], dir[64], cfg[256];
static char out[65536];

/* Run a shell command in the test directory, output captured into out; exit status. */
static int run_sh(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Run "cshost ARGS" with stdout+stderr captured into out; returns the exit status. */
static int run(const char *args)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "cd %s && %s %s 2>&1", dir, cshost, args);
	return run_sh(cmd);
}

static int setup(void **state)
{
	(void)state;
	char self[1024];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	/* build/tests/cli/test_cmd_train -> build/bin/cshost */
	snprintf(cshost, sizeof cshost, "%s/../../bin/cshost", dirname(self));
	if (access(cshost, X_OK) != 0) {
		fprintf(stderr, "%s not built\n", cshost);
		return -1;
	}
	snprintf(dir, sizeof dir, "%s", tt_mkdtemp());
	char p[128];
	snprintf(p, sizeof p, "%s/corpus.txt", dir);
	tt_corpus(p, 60000);
	snprintf(cfg, sizeof cfg, "%s/cfg.yaml", dir);
	tt_write(cfg, "run: {name: r, out_dir: runs, seed: 3}\n"
		      "device: {kind: cpu, dense_on_host: true}\n"
		      "model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 16, vocab_size: 256}\n"
		      "data: {path: corpus.txt, val_fraction: 0.1}\n"
		      "train: {steps: 30, batch_size: 4, eval_every: 10, ckpt_every: 10, "
		      "sample_tokens: 20}\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tt_rmdir(dir);
	return 0;
}

static void test_usage_and_config_errors(void **state)
{
	(void)state;
	assert_int_equal(run("train --help"), 0);
	assert_non_null(strstr(out, "usage: cshost train"));
	assert_int_equal(run("train"), 2);
	assert_int_equal(run("train cfg.yaml --bogus"), 2);
	assert_int_equal(run("train cfg.yaml extra"), 2);
	assert_int_equal(run("train cfg.yaml model.n_embed=3"), 1);
	assert_string_equal(out, "cshost train: override 'model.n_embed=3': model.n_embed: unknown "
				 "key (did you mean 'n_embd'?); allowed: n_layer, n_head, n_embd, "
				 "block_size, vocab_size, init_from\n");
	assert_int_equal(run("train nonexistent.yaml"), 1);
	assert_non_null(strstr(out, "nonexistent.yaml: cannot open"));
	assert_int_equal(run("train cfg.yaml data.path=/nonexistent"), 1);
	assert_non_null(strstr(out, "data.path: /nonexistent: No such file or directory"));
	assert_int_equal(run("train cfg.yaml --resume"), 1);
	assert_non_null(strstr(out, "no checkpoint to resume from"));
	/* nothing was created by the failed runs */
	struct stat st;
	char p[256];
	snprintf(p, sizeof p, "%s/runs/r/metrics.jsonl", dir);
	assert_int_equal(stat(p, &st), -1);
	assert_int_equal(run("sample"), 2);
	assert_int_equal(run("sample x.bin --tokens abc"), 2);
	assert_int_equal(run("eval"), 2);
	assert_int_equal(run("eval missing.bin"), 1);
	assert_non_null(strstr(out, "missing.bin: cannot open checkpoint"));
}

static void test_run_sample_eval_resume(void **state)
{
	(void)state;
	assert_int_equal(run("train cfg.yaml --no-progress"), 0);
	assert_non_null(strstr(out, "val_loss"));
	assert_non_null(strstr(out, "unigram entropy"));
	struct stat st;
	char p[256];
	const char *files[] = { "config.yaml", "metrics.jsonl", "sample.txt", "summary.json",
				"ckpt-00000030.bin", "ckpt-00000020.bin" };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(p, sizeof p, "%s/runs/r/%s", dir, files[i]);
		assert_int_equal(stat(p, &st), 0);
	}
	snprintf(p, sizeof p, "%s/runs/r/ckpt-00000010.bin", dir); /* keep_ckpts 2 */
	assert_int_equal(stat(p, &st), -1);
	assert_int_equal(run("train cfg.yaml"), 1);
	assert_non_null(strstr(out, "run directory exists"));
	assert_int_equal(run("sample runs/r/ckpt-00000030.bin --prompt 'the ' --tokens 12 "
			     "--temperature 0.5 --seed 1"), 0);
	assert_true(strncmp(out, "the ", 4) == 0 && strlen(out) == 4 + 12 + 1);
	char first[64];
	snprintf(first, sizeof first, "%.60s", out);
	assert_int_equal(run("sample runs/r/ckpt-00000030.bin --prompt 'the ' --tokens 12 "
			     "--temperature 0.5 --seed 1"), 0);
	assert_string_equal(first, out);
	assert_int_equal(run("eval runs/r/ckpt-00000030.bin"), 0);
	assert_non_null(strstr(out, "step 30 val_loss"));
	assert_int_equal(run("train cfg.yaml --resume train.steps=40"), 0);
	assert_non_null(strstr(out, "resuming from runs/r/ckpt-00000030.bin (step 30)"));
	assert_int_equal(run("train cfg.yaml --force"), 0);
	/* the NaN export of a dense run round-trips */
	assert_int_equal(run("train --export-nan runs/r/ckpt-00000030.bin nan.bin"), 0);
	assert_int_equal(run("train --import-nan nan.bin back.bin"), 0);
	assert_int_equal(run("eval back.bin"), 0);
}

static void test_sigint_saves_checkpoint(void **state)
{
	(void)state;
	char cmd[2048];
	/* a run long enough to be interrupted; SIGINT once it has written a step */
	snprintf(cmd, sizeof cmd,
		 "cd %s && exec %s train cfg.yaml --force run.name=long train.steps=100000 "
		 "train.ckpt_every=0 >/dev/null 2>&1",
		 dir, cshost);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	char p[256];
	snprintf(p, sizeof p, "%s/runs/long/metrics.jsonl", dir);
	struct stat st;
	for (int i = 0; i < 400 && (stat(p, &st) != 0 || st.st_size == 0); i++)
		usleep(25000);
	kill(pid, SIGINT);
	int status;
	waitpid(pid, &status, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 130);
	assert_int_equal(run("train cfg.yaml --resume run.name=long train.steps=1"), 1);
	assert_non_null(strstr(out, "past train.steps 1"));
	snprintf(cmd, sizeof cmd,
		 "cd %s && m=runs/long/metrics.jsonl && s=$(ls runs/long | sed -n "
		 "'s/ckpt-0*\\([0-9]*\\).bin/\\1/p' | tail -1) && "
		 "{ %s train cfg.yaml --resume run.name=long train.steps=100000 "
		 "train.ckpt_every=0 --no-progress 2>&1 & pid=$!; "
		 "while ! grep -q \"\\\"step\\\": $((s + 2)),\" $m; do sleep 0.05; done; "
		 "kill -INT $pid; wait $pid; }",
		 dir, cshost);
	assert_int_equal(run_sh(cmd), 130);
	assert_non_null(strstr(out, "resuming from"));
	assert_non_null(strstr(out, "checkpoint saved"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usage_and_config_errors),
		cmocka_unit_test(test_run_sample_eval_resume),
		cmocka_unit_test(test_sigint_saves_checkpoint),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
