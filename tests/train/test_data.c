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

/* an llm.c shard: header (magic, version, count as given) and n tokens base + i*step mod m */
static void write_shard(const char *path, int32_t magic, int32_t version, int32_t count,
			size_t n, unsigned base, unsigned step, unsigned m)
{
	FILE *f = fopen(path, "wb");
	int32_t hdr[256] = { magic, version, count };
	fwrite(hdr, sizeof hdr, 1, f);
	for (size_t i = 0; i < n; i++) {
		uint16_t t = (uint16_t)((base + i * step) % m);
		fwrite(&t, 2, 1, f);
	}
	fclose(f);
}

static void test_llmc_shards(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), a[128], b[128], v[128], pat[128];
	snprintf(a, sizeof a, "%s/x_train_000001.bin", dir);
	snprintf(b, sizeof b, "%s/x_train_000002.bin", dir);
	snprintf(v, sizeof v, "%s/x_val_000000.bin", dir);
	snprintf(pat, sizeof pat, "%s/x_train_*.bin", dir);
	/* shard 2 is written first: the glob reads them in name order */
	write_shard(b, TD_LLMC_MAGIC, 1, 300, 300, 7, 11, 50257);
	write_shard(a, TD_LLMC_MAGIC, 1, 200, 200, 50000, 3, 50257);
	write_shard(v, TD_LLMC_MAGIC, 1, 100, 100, 1, 1, 50257);
	assert_true(td_is_llmc(pat));
	assert_false(td_is_llmc("/usr/share/games/fortunes/fortunes"));
	td_data d;
	assert_int_equal(td_load_llmc(&d, pat, v, 50304, 16, err, sizeof err), CS_OK);
	assert_int_equal(d.n_train, 500);
	assert_int_equal(d.n_val, 100);
	assert_int_equal(d.n_files, 3);
	assert_int_equal(d.train[0], 50000);
	assert_int_equal(d.train[200], 7);
	assert_int_equal(d.val[99], 100);
	assert_true(d.unigram_entropy > 0.0);
	int in[2 * 16], tg[2 * 16];
	td_train_batch(&d, 1, 0, 0, 2, 16, in, tg);
	for (int i = 0; i < 2 * 16; i++)
		assert_true(in[i] < 50257 && tg[i] < 50257);
	td_free(&d);
	/* tokens beyond the model's vocabulary: file, index and value */
	assert_int_equal(td_load_llmc(&d, pat, v, 256, 16, err, sizeof err), CS_ERR_RANGE);
	printf("%s\n", err);
	assert_non_null(strstr(err, "x_train_000001.bin: token 0 is 50000, outside model.vocab_size 256"));
	/* a count that disagrees with the size */
	write_shard(v, TD_LLMC_MAGIC, 1, 101, 100, 1, 1, 50257);
	assert_int_equal(td_load_llmc(&d, pat, v, 50304, 16, err, sizeof err), CS_ERR_FORMAT);
	printf("%s\n", err);
	assert_non_null(strstr(err, "data.val_path"));
	assert_non_null(strstr(err, "101 tokens"));
	/* another magic, another version, a short file, no match */
	write_shard(v, 12345, 1, 100, 100, 1, 1, 50257);
	assert_int_equal(td_load_llmc(&d, pat, v, 50304, 16, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "not an llm.c token file"));
	write_shard(v, TD_LLMC_MAGIC, 2, 100, 100, 1, 1, 50257);
	assert_int_equal(td_load_llmc(&d, pat, v, 50304, 16, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "version 2"));
	tt_write(v, "short");
	assert_int_equal(td_load_llmc(&d, pat, v, 50304, 16, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "shorter than"));
	snprintf(pat, sizeof pat, "%s/none_*.bin", dir);
	assert_int_equal(td_load_llmc(&d, pat, v, 50304, 16, err, sizeof err), CS_ERR_NOT_FOUND);
	assert_non_null(strstr(err, "data.path"));
	/* too few tokens for the context */
	write_shard(v, TD_LLMC_MAGIC, 1, 10, 10, 1, 1, 50257);
	assert_int_equal(td_load_llmc(&d, a, v, 50304, 16, err, sizeof err), CS_ERR_INVALID);
	tt_rmdir(dir);
}

/* a run reads llm.c shards when data.path names them (data.format auto) */
static void test_llmc_training(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), tr[128], va[128], cfgp[128], text[1024], ov[192];
	snprintf(tr, sizeof tr, "%s/d_train.bin", dir);
	snprintf(va, sizeof va, "%s/d_val.bin", dir);
	write_shard(tr, TD_LLMC_MAGIC, 1, 4000, 4000, 3, 7, 300);
	write_shard(va, TD_LLMC_MAGIC, 1, 400, 400, 5, 7, 300);
	snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
	snprintf(text, sizeof text,
		 "run: {name: l, out_dir: %s/runs}\n"
		 "device: {kind: native}\n"
		 "model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 16, vocab_size: 320}\n"
		 "data: {path: %s}\n"
		 "train: {steps: 2, batch_size: 2, eval_every: 0, ckpt_every: 0, sample_tokens: 0}\n",
		 dir, tr);
	tt_write(cfgp, text);
	trainer t;
	assert_int_not_equal(tt_make_trainer(&t, cfgp, NULL, 0, err, sizeof err), CS_OK);
	assert_non_null(strstr(err, "data.val_path: required"));
	snprintf(ov, sizeof ov, "data.val_path=%s", va);
	char *ovs[] = { ov };
	assert_int_equal(tt_make_trainer(&t, cfgp, ovs, 1, err, sizeof err), CS_OK);
	assert_int_equal(t.data.n_train, 4000);
	assert_int_equal(t.data.n_val, 400);
	train_step_stats st;
	assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
	float vl;
	assert_int_equal(trainer_eval(&t, &vl, err, sizeof err), CS_OK);
	assert_true(vl > 0.0f);
	trainer_free(&t);
	tt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_directory_corpus_and_cache),
		cmocka_unit_test(test_split_and_batches),
		cmocka_unit_test(test_llmc_shards),
		cmocka_unit_test(test_llmc_training),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
