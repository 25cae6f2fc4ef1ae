/*
 * fuzz_config.c - libFuzzer target: the config front end (host/common/cs_yaml.c, cs_config.c,
 * host/train/config.c, host/sparsity/config.c) with command-line overrides.
 *
 * Input: YAML text, optionally followed by a line "%%" and one override per line
 * ("train.steps=5"). A config that loads (its sparsity block parsed by the same walk)
 * must also write a resolved config that loads back with no training change; one that
 * does not gets a one-line message.
 * Built by `make fuzz` (clang, -fsanitize=fuzzer); test_fuzz_replay.c runs the same
 * function over the seed corpus and every input that once failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "sparsity/sparsity.h"
#include "train/config.h"

#define FUZZ_MAX_OVERRIDES 8

static void fuzz_fail(const char *what, const char *err)
{
	fprintf(stderr, "fuzz_config: %s: %s\n", what, err);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	char *ov[FUZZ_MAX_OVERRIDES];
	int nov = 0;
	char *sep = strstr(text, "\n%%\n");
	if (sep) {
		*sep = 0;
		for (char *line = strtok(sep + 4, "\n"); line && nov < FUZZ_MAX_OVERRIDES;
		     line = strtok(NULL, "\n"))
			ov[nov++] = line;
	}
	char err[2048];
	train_config c;
	if (tc_load(&c, "fuzz.yaml", text, ov, nov, err, sizeof err) == CS_OK) {
		/* the sparsity block is validated by the same walk: loaded means parsed */
		if (!c.sparsity)
			fuzz_fail("config loaded without its sparsity config", "");
		if (!c.sparsity_node && !sp_config_is_dense(c.sparsity))
			fuzz_fail("sparsity groups without a sparsity block", "");
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f || tc_write_resolved(&c, f))
			fuzz_fail("resolved config", "cannot write");
		fclose(f);
		train_config back;
		if (tc_load(&back, "resolved.yaml", buf, NULL, 0, err, sizeof err))
			fuzz_fail("resolved config does not load back", err);
		char *diff = NULL;
		int nd = tc_diff_training(&c, &back, &diff);
		if (nd != 0)
			fuzz_fail("resolved config trains something else", diff ? diff : "error");
		tc_free(&back);
		free(buf);
		tc_free(&c);
	} else if (!err[0] || strchr(err, '\n')) {
		fuzz_fail("error message is empty or not one line", err);
	}
	free(text);
	return 0;
}
