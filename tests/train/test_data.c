/*
 * test_data.c - host/train/data.c: UTF-8 validation, directory corpora (sorted, skipping
 * *.dat, symlinks, hidden and non-UTF-8 files), the token cache (hit, stale, corrupt), the
 * split, the batches' determinism and range, and the errors for empty or missing corpora.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "train/data.h"
#include "train_test_util.h"

static char err[1024];

/* byte tokens equal to the string's bytes */
static int tokens_are(const uint16_t *t, const char *s)
{
	for (size_t i = 0; s[i]; i++)
		if (t[i] != (uint8_t)s[i])
			return 0;
	return 1;
}

static void test_utf8(void **state)
{
	(void)state;
	size_t bad = 0;
	const char *ok = "plain ascii, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80";
	assert_true(td_is_utf8((const uint8_t *)ok, strlen(ok), &bad));
	struct {
		const char *s;
		size_t at;
	} badcases[] = {
		{ "ab\xff", 2 },          /* invalid lead byte */
		{ "a\xc3", 1 },           /* truncated */
		{ "\xc0\xaf", 0 },        /* overlong */
		{ "xy\xed\xa0\x80", 2 },  /* surrogate */
		{ "\xe2\x28\xa1", 0 },    /* bad continuation */
		{ "\xf4\x90\x80\x80", 0 } /* above U+10FFFF */
	};
	for (size_t i = 0; i < sizeof badcases / sizeof badcases[0]; i++) {
		assert_false(td_is_utf8((const uint8_t *)badcases[i].s, strlen(badcases[i].s), &bad));
		assert_int_equal(bad, badcases[i].at);
	}
}

static void test_directory_corpus_and_cache(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[128], q[256], cache[256];
	snprintf(cache, sizeof cache, "%s/cache", dir);
	snprintf(p, sizeof p, "%s/corpus", dir);
	mkdir(p, 0755);
	/* b before a on disk; the corpus reads a then b */
	snprintf(q, sizeof q, "%s/b", p);
	tt_write(q, "BBBB");
	snprintf(q, sizeof q, "%s/a", p);
	tt_write(q, "AAAA");
	snprintf(q, sizeof q, "%s/a.dat", p);
	tt_write(q, "index");
	snprintf(q, sizeof q, "%s/.hidden", p);
	tt_write(q, "hidden");
	snprintf(q, sizeof q, "%s/bin", p);
	tt_write(q, "\xff\xfe\x00binary");
	snprintf(q, sizeof q, "%s/a.u8", p);
	assert_int_equal(symlink("a", q), 0);
	td_data d;
	/* too small for block_size 8 */
	assert_int_equal(td_load(&d, p, cache, 0.25, 8, NULL, err, sizeof err), CS_ERR_INVALID);
	printf("%s\n", err);
	assert_non_null(strstr(err, "corpus too small"));
	assert_int_equal(td_load(&d, p, cache, 0.5, 1, NULL, err, sizeof err), CS_OK);
	assert_int_equal(d.n_files, 2);
	assert_int_equal(d.n_tokens, 8);
	assert_true(tokens_are(d.tokens, "AAAABBBB"));
	assert_true(d.cache_hit); /* the first (too small) load wrote it */
	/* unigram entropy of two equiprobable symbols */
	assert_true(fabs(d.unigram_entropy - log(2.0)) < 1e-12);
	assert_int_equal(d.n_train + d.n_val, 8);
	char cpath[sizeof d.cache_path];
	snprintf(cpath, sizeof cpath, "%s", d.cache_path);
	td_free(&d);
	/* second load comes from the cache */
	assert_int_equal(td_load(&d, p, cache, 0.5, 1, NULL, err, sizeof err), CS_OK);
	assert_true(d.cache_hit);
	assert_true(tokens_are(d.tokens, "AAAABBBB"));
	td_free(&d);
	/* a corrupt cache is an error that says what to do, and is not overwritten */
	FILE *f = fopen(cpath, "r+b");
	fseek(f, -1, SEEK_END);
	fputc('Z', f);
	fclose(f);
	assert_int_equal(td_load(&d, p, cache, 0.5, 1, NULL, err, sizeof err), CS_ERR_FORMAT);
	printf("%s\n", err);
	assert_non_null(strstr(err, "delete it to rebuild"));
	unlink(cpath);
	/* a changed source makes a new cache key */
	snprintf(q, sizeof q, "%s/c", p);
	tt_write(q, "CCCC");
	assert_int_equal(td_load(&d, p, cache, 0.5, 1, NULL, err, sizeof err), CS_OK);
	assert_false(d.cache_hit);
	assert_int_equal(d.n_tokens, 12);
	td_free(&d);
	/* errors: missing path, empty corpus, a single non-UTF-8 file */
	assert_int_equal(td_load(&d, "/nonexistent/x", NULL, 0.1, 8, NULL, err, sizeof err),
			 CS_ERR_NOT_FOUND);
	assert_non_null(strstr(err, "data.path: /nonexistent/x"));
	snprintf(q, sizeof q, "%s/empty", dir);
	tt_write(q, "");
	assert_int_equal(td_load(&d, q, NULL, 0.1, 8, NULL, err, sizeof err), CS_ERR_INVALID);
	assert_non_null(strstr(err, "empty corpus"));
	snprintf(q, sizeof q, "%s/corpus/bin", dir);
	assert_int_equal(td_load(&d, q, NULL, 0.1, 8, NULL, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "not UTF-8 text (bad byte at offset 0)"));
	tt_rmdir(dir);
}

static void test_split_and_batches(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[256];
	snprintf(p, sizeof p, "%s/c.txt", dir);
	tt_corpus(p, 200000);
	td_data d;
	assert_int_equal(td_load(&d, p, NULL, 0.05, 32, NULL, err, sizeof err), CS_OK);
	double frac = (double)d.n_val / d.n_tokens;
	printf("%zu tokens, val fraction %.4f\n", d.n_tokens, frac);
	assert_true(frac > 0.03 && frac < 0.07);
	int in1[4 * 32], tg1[4 * 32], in2[4 * 32], tg2[4 * 32];
	td_train_batch(&d, 5, 17, 1, 4, 32, in1, tg1);
	td_train_batch(&d, 5, 17, 1, 4, 32, in2, tg2);
	assert_memory_equal(in1, in2, sizeof in1);
	for (int i = 0; i < 4 * 32; i++)
		if (i % 32 < 31)
			assert_int_equal(tg1[i], in1[i + 1]); /* targets are inputs shifted */
	td_train_batch(&d, 5, 18, 1, 4, 32, in2, tg2);
	assert_true(memcmp(in1, in2, sizeof in1) != 0);
	td_train_batch(&d, 6, 17, 1, 4, 32, in2, tg2);
	assert_true(memcmp(in1, in2, sizeof in1) != 0);
	/* validation batches are fixed and stay inside the split */
	td_val_batch(&d, 0, 3, 4, 32, in1, tg1);
	td_val_batch(&d, 2, 3, 4, 32, in2, tg2);
	assert_int_equal(tg2[4 * 32 - 1], d.val[d.n_val - 1]);
	assert_int_equal(in1[0], d.val[0]);
	td_free(&d);
	tt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_directory_corpus_and_cache),
		cmocka_unit_test(test_split_and_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
