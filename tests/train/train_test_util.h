/* train_test_util.h - temporary corpora and configs for the host/train tests. */
#ifndef TESTS_TRAIN_UTIL_H
#define TESTS_TRAIN_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/cs_error.h"
#include "train/ckpt.h"
#include "train/train.h"

/* A fresh directory under /tmp (removed by tt_rmdir). */
static inline char *tt_mkdtemp(void)
{
	static char buf[8][64];
	static int k;
	char *p = buf[k++ % 8];
	snprintf(p, 64, "/tmp/cshost-train-test-XXXXXX");
	if (!mkdtemp(p)) {
		perror("mkdtemp");
		abort();
	}
	return p;
}

static inline void tt_rmdir(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
}

static inline void tt_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		abort();
	}
	fputs(text, f);
	fclose(f);
}

/* A deterministic English-like corpus of about `bytes` bytes. */
static inline void tt_corpus(const char *path, size_t bytes)
{
	static const char *words[] = { "the", "cat", "sat", "on", "a", "mat", "and", "dog",
				       "ran", "to", "tree", "while", "bird", "sang", "softly",
				       "in", "morning", "light", "every", "day" };
	FILE *f = fopen(path, "w");
	uint64_t s = 12345;
	size_t n = 0;
	while (n < bytes) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		const char *w = words[(s >> 33) % 20];
		n += (size_t)fprintf(f, "%s%s", w, (s >> 20) % 9 == 0 ? ".\n" : " ");
	}
	fclose(f);
}

/* Load the config at cfgp with the overrides and start a trainer; say what failed. */
static inline int tt_make_trainer(trainer *t, const char *cfgp, char *const *ov, int nov,
				  char *err, size_t errlen)
{
	train_config cfg;
	int rc = tc_load(&cfg, cfgp, NULL, ov, nov, err, errlen);
	if (rc) {
		printf("config: %s\n", err);
		return rc;
	}
	rc = trainer_init(t, &cfg, 1, err, errlen);
	if (rc)
		printf("trainer_init: %s\n", err);
	return rc;
}

/* Two checkpoints hold the same training state, bit for bit: step, RNG state, and every
 * record (parameters, moments, masks, sparsity state) but the stored config. */
static inline void tt_assert_same_ckpt(const char *a, const char *b)
{
	ck_file fa, fb;
	char err[512];
	assert_int_equal(ck_load(a, &fa, err, sizeof err), CS_OK);
	assert_int_equal(ck_load(b, &fb, err, sizeof err), CS_OK);
	assert_int_equal(fa.hdr.step, fb.hdr.step);
	assert_true(fa.hdr.rng_state == fb.hdr.rng_state);
	assert_int_equal(fa.n, fb.n);
	int compared = 0;
	for (int i = 0; i < fa.n; i++) {
		if (!strcmp(fa.rec[i].name, "config"))
			continue;
		const ck_record *rb = ck_find(&fb, fa.rec[i].name);
		assert_non_null(rb);
		assert_int_equal(fa.rec[i].nbytes, rb->nbytes);
		if (memcmp(fa.rec[i].data, rb->data, rb->nbytes))
			fail_msg("%s differs between %s and %s", fa.rec[i].name, a, b);
		compared++;
	}
	assert_true(compared > 10);
	ck_free(&fa);
	ck_free(&fb);
}

#endif
