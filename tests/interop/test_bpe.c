/*
 * test_bpe.c - host/interop/bpe.c on hand-built vocabularies: the pre-tokenizer's pieces,
 * merge order and the reference's "first,second" pair keys (against a direct transcription
 * of the reference encoder's loop, on random vocabularies and words), long pieces, decoding,
 * the loaders' errors, GPT-2 tokens in the training corpus and its cache, and a training
 * run with data.tokenizer gpt2 (config checks, steps, a sample decoded to text).
 * tests/interop/bpe_reference.sh compares with the reference encoder itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "interop/bpe.h"
#include "train/data.h"
#include "../train/train_test_util.h"

static char err[1024];
static char dir[64];

/* GPT-2's byte -> character map */
static int byte_char(int b)
{
	static int map[256], init;
	if (!init) {
		int n = 0;
		for (int c = 0; c < 256; c++) {
			int printable = (c >= '!' && c <= '~') || (c >= 0xa1 && c <= 0xac) ||
					(c >= 0xae && c <= 0xff);
			map[c] = printable ? c : 256 + n++;
		}
		init = 1;
	}
	return map[b];
}

/* append the token string of bytes s[0..n) as JSON-escaped UTF-8 (\u escapes when esc) */
static void put_token(FILE *f, const uint8_t *s, size_t n, int esc)
{
	for (size_t i = 0; i < n; i++) {
		int c = byte_char(s[i]);
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (esc || c < 0x20)
			fprintf(f, "\\u%04x", c);
		else if (c < 0x80)
			fputc(c, f);
		else
			fprintf(f, "%c%c", 0xc0 | (c >> 6), 0x80 | (c & 0x3f));
	}
}

/* A vocabulary: the 256 bytes (ids 0..255 in byte order), then each merge's result in
 * order (ids 256..), then <|endoftext|>; merges given as pairs of byte strings. */
typedef struct {
	char a[16], b[16];
} merge;

static void write_vocab(const merge *m, int nm, char *enc, char *voc)
{
	snprintf(enc, 128, "%s/encoder.json", dir);
	snprintf(voc, 128, "%s/vocab.bpe", dir);
	FILE *f = fopen(enc, "w");
	fputs("{", f);
	int id = 0;
	for (int c = 0; c < 256; c++, id++) {
		uint8_t by = (uint8_t)c;
		fputs(c ? ", \"" : "\"", f);
		put_token(f, &by, 1, c % 7 == 0); /* some as \u escapes */
		fprintf(f, "\": %d", id);
	}
	/* merge results, skipping ones already present (a result can repeat) */
	char seen[512][40];
	int nseen = 0;
	for (int i = 0; i < nm; i++) {
		char r[40];
		snprintf(r, sizeof r, "%s%s", m[i].a, m[i].b);
		int dup = 0;
		for (int k = 0; k < nseen; k++)
			dup |= !strcmp(seen[k], r);
		if (dup || strlen(r) == 1)
			continue;
		strcpy(seen[nseen++], r);
		fputs(", \"", f);
		put_token(f, (const uint8_t *)r, strlen(r), 0);
		fprintf(f, "\": %d", id++);
	}
	fprintf(f, ", \"<|endoftext|>\": %d}\n", id);
	fclose(f);
	f = fopen(voc, "w");
	fputs("#version: 0.2\n", f);
	for (int i = 0; i < nm; i++) {
		put_token(f, (const uint8_t *)m[i].a, strlen(m[i].a), 0);
		fputc(' ', f);
		put_token(f, (const uint8_t *)m[i].b, strlen(m[i].b), 0);
		fputc('\n', f);
	}
	fclose(f);
}

static bpe *load(const merge *m, int nm)
{
	char enc[128], voc[128];
	write_vocab(m, nm, enc, voc);
	bpe *b = NULL;
	int rc = bpe_load(&b, enc, voc, err, sizeof err);
	if (rc)
		printf("load: %s\n", err);
	assert_int_equal(rc, CS_OK);
	return b;
}

/* the tokens of text as their strings joined by '|' */
static void encode_str(bpe *b, const char *text, char *out, size_t outlen)
{
	int32_t *ids = NULL;
	size_t n = 0, cap = 0, o = 0;
	assert_int_equal(bpe_encode(b, (const uint8_t *)text, strlen(text), &ids, &n, &cap, err,
				    sizeof err), CS_OK);
	out[0] = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l;
		const uint8_t *t = bpe_token_bytes(b, ids[i], &l);
		assert_non_null(t);
		o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", i ? "|" : "", (int)l,
				      (const char *)t);
	}
	free(ids);
}

static void pieces_str(bpe *b, const char *text, char *out, size_t outlen)
{
	size_t n = strlen(text), o = 0;
	out[0] = 0;
	for (size_t i = 0; i < n;) {
		size_t e = bpe_piece_end(b, (const uint8_t *)text, n, i);
		assert_true(e > i && e <= n);
		o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", i ? "|" : "", (int)(e - i),
				      text + i);
		i = e;
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/test_bpe.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd);
}

static void test_pieces(void **state)
{
	(void)state;
	bpe *b = load(NULL, 0);
	char out[512];
	static const char *const cases[][2] = {
		{ "Hello world", "Hello| world" },
		{ "it's they're we've I'm we'll he'd 'x", "it|'s| they|'re| we|'ve| I|'m| we|'ll| he|'d| '|x" },
		{ "IT'S", "IT|'|S" }, /* contractions are lower case only */
		{ "a  b", "a| | b" },  /* \s+(?!\S) leaves the last space to " ?\p{L}+" */
		{ "a   \n  b", "a|   \n | b" },
		{ "x\n\ny", "x|\n|\n|y" }, /* "\n" is not " ": no " ?" prefix */
		{ "end  ", "end|  " },  /* trailing whitespace is one piece */
		{ "12 345x", "12| 345|x" },
		{ "a!?  (b)", "a|!?| | (|b|)" },
		{ " !!", " !!" },
		{ "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac 42\xc2\xbd", "caf\xc3\xa9| \xe6\x97\xa5\xe6\x9c\xac| 42\xc2\xbd" },
		{ "a\xc2\xa0" "b", "a|\xc2\xa0|b" }, /* U+00A0 is \s but not " " */
		{ "\xf0\x9f\x98\x80\xf0\x9f\x98\x80 x", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80| x" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		pieces_str(b, cases[i][0], out, sizeof out);
		if (strcmp(out, cases[i][1]))
			printf("'%s': got '%s', want '%s'\n", cases[i][0], out, cases[i][1]);
		assert_string_equal(out, cases[i][1]);
	}
	/* " \n" then a letter: the run "\s+(?!\S)" backs off to " ", then "\n" alone */
	pieces_str(b, "a \nb", out, sizeof out);
	assert_string_equal(out, "a| |\n|b");
	bpe_free(b);
}

static void test_merges_and_order(void **state)
{
	(void)state;
	char out[512];
	/* merges do not cross pieces */
	merge m1[] = { { " ", "b" }, { "a", " " } };
	bpe *b = load(m1, 2);
	encode_str(b, "a b", out, sizeof out);
	assert_string_equal(out, "a| b");
	bpe_free(b);
	/* lower rank first */
	merge m2[] = { { "a", "b" }, { "b", "c" } };
	b = load(m2, 2);
	encode_str(b, "abc", out, sizeof out);
	assert_string_equal(out, "ab|c");
	bpe_free(b);
	merge m3[] = { { "b", "c" }, { "a", "b" } };
	b = load(m3, 2);
	encode_str(b, "abc", out, sizeof out);
	assert_string_equal(out, "a|bc");
	/* the id of <|endoftext|> and decoding */
	assert_int_equal(bpe_eot(b), 258);
	assert_int_equal(bpe_vocab_size(b), 259);
	size_t l;
	const uint8_t *t = bpe_token_bytes(b, 256, &l);
	assert_int_equal(l, 2);
	assert_memory_equal(t, "bc", 2);
	assert_null(bpe_token_bytes(b, 259, &l));
	assert_null(bpe_token_bytes(b, -1, &l));
	/* merges apply left to right without overlap, then again */
	bpe_free(b);
	merge m4[] = { { "a", "a" }, { "aa", "aa" } };
	b = load(m4, 2);
	encode_str(b, "aaaaa", out, sizeof out);
	assert_string_equal(out, "aaaa|a");
	/* a long piece: 200,000 letters in O(n log n) */
	size_t n = 200000;
	char *big = malloc(n + 1);
	memset(big, 'a', n);
	big[n] = 0;
	int32_t *ids = NULL;
	size_t nid = 0, cap = 0;
	assert_int_equal(bpe_encode(b, (const uint8_t *)big, n, &ids, &nid, &cap, err, sizeof err),
			 CS_OK);
	assert_int_equal(nid, n / 4);
	free(ids);
	free(big);
	/* invalid UTF-8 is an error with its offset */
	ids = NULL;
	nid = cap = 0;
	assert_int_equal(bpe_encode(b, (const uint8_t *)"ok \xff", 4, &ids, &nid, &cap, err,
				    sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "offset 3"));
	free(ids);
	bpe_free(b);
}

/* ---- the reference encoder's loop, transcribed (O(n^2), pair keys "first,second") ---- */

/* dst = a sep b (sep 0: none); dst holds 128 bytes, the inputs are short */
static void join(char *dst, const char *a, char sep, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	assert_true(la + lb + 2 <= 128);
	memcpy(dst, a, la);
	if (sep)
		dst[la++] = sep;
	memcpy(dst + la, b, lb + 1);
}

static int ref_rank(const merge *m, int nm, const char *a, const char *b)
{
	char key[128], k2[128];
	join(key, a, ',', b);
	int r = -1;
	for (int i = 0; i < nm; i++) { /* a repeated key keeps its last rank */
		join(k2, m[i].a, ',', m[i].b);
		if (!strcmp(k2, key))
			r = i;
	}
	return r;
}

static int ref_bpe(const merge *m, int nm, const char *piece, char word[][128])
{
	int n = 0;
	for (const char *p = piece; *p; p++) {
		word[n][0] = *p;
		word[n++][1] = 0;
	}
	while (n > 1) {
		int best = -1, bi = -1;
		for (int i = 0; i + 1 < n; i++) {
			int r = ref_rank(m, nm, word[i], word[i + 1]);
			if (r >= 0 && (best < 0 || r <= best)) /* the last of equal ranks */
				best = r, bi = i;
		}
		if (best < 0)
			break;
		char first[128], second[128];
		strcpy(first, word[bi]);
		strcpy(second, word[bi + 1]);
		char nw[64][128];
		int k = 0;
		for (int i = 0; i < n;) {
			if (!strcmp(word[i], first) && i + 1 < n && !strcmp(word[i + 1], second)) {
				join(nw[k++], first, 0, second);
				i += 2;
			} else {
				strcpy(nw[k++], word[i++]);
			}
		}
		memcpy(word, nw, sizeof nw[0] * (size_t)k);
		n = k;
	}
	return n;
}

static uint64_t rs = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (unsigned)(rs % n);
}

static void random_case(const char *alpha)
{
	/* tokens: the alphabet, then merges of two random existing tokens */
	char toks[80][16];
	int nt = 0;
	for (const char *p = alpha; *p; p++) {
		toks[nt][0] = *p;
		toks[nt++][1] = 0;
	}
	merge m[60];
	int nm = 0;
	while (nm < 40) {
		const char *a = toks[rnd((unsigned)nt)], *b = toks[rnd((unsigned)nt)];
		if (strlen(a) + strlen(b) > 8)
			continue;
		snprintf(m[nm].a, sizeof m[nm].a, "%s", a);
		snprintf(m[nm].b, sizeof m[nm].b, "%s", b);
		char t[128];
		join(t, a, 0, b);
		memcpy(toks[nt++], t, strlen(t) + 1);
		nm++;
	}
	bpe *b = load(m, nm);
	for (int w = 0; w < 200; w++) {
		char piece[48];
		int len = 1 + (int)rnd(40);
		for (int i = 0; i < len; i++)
			piece[i] = alpha[rnd((unsigned)strlen(alpha))];
		piece[len] = 0;
		char word[64][128];
		int n = ref_bpe(m, nm, piece, word);
		/* a pair keyed like another merge ("a,b" + "c" vs "a" + "b,c") can make a string
		 * that is no token: the reference then emits no valid id, the encoder an error */
		int valid = 1;
		for (int i = 0; i < n; i++) {
			int found = 0;
			for (int k = 0; k < nt; k++)
				found |= !strcmp(toks[k], word[i]);
			valid &= found;
		}
		int32_t *ids = NULL;
		size_t nid = 0, cap = 0;
		int rc = bpe_encode(b, (const uint8_t *)piece, (size_t)len, &ids, &nid, &cap, err,
				    sizeof err);
		if (rc != (valid ? CS_OK : CS_ERR_FORMAT))
			printf("piece '%s': %s\n", piece, err);
		assert_int_equal(rc, valid ? CS_OK : CS_ERR_FORMAT);
		if (!valid) {
			free(ids);
			continue;
		}
		int ok = (int)nid == n;
		for (int i = 0; ok && i < n; i++) {
			size_t l;
			const uint8_t *t = bpe_token_bytes(b, ids[i], &l);
			ok = t && l == strlen(word[i]) && !memcmp(t, word[i], l);
		}
		if (!ok)
			printf("piece '%s': %zu tokens, reference %d\n", piece, nid, n);
		assert_true(ok);
		free(ids);
	}
	bpe_free(b);
}

static void test_against_reference_loop(void **state)
{
	(void)state;
	for (int k = 0; k < 20; k++) {
		random_case("abc");   /* letters: one piece */
		random_case(",.;:");  /* punctuation, commas in the pair keys: one piece */
	}
}

static void test_load_errors(void **state)
{
	(void)state;
	char enc[128], voc[128], p[160];
	write_vocab(NULL, 0, enc, voc);
	bpe *b = NULL;
	snprintf(p, sizeof p, "%s/none.json", dir);
	assert_int_equal(bpe_load(&b, p, voc, err, sizeof err), CS_ERR_NOT_FOUND);
	assert_non_null(strstr(err, "none.json"));
	/* a malformed encoder.json names its line */
	snprintf(p, sizeof p, "%s/bad.json", dir);
	FILE *f = fopen(p, "w");
	fputs("{\"a\": 1,\n \"b\" 2}\n", f);
	fclose(f);
	assert_int_equal(bpe_load(&b, p, voc, err, sizeof err), CS_ERR_FORMAT);
	printf("%s\n", err);
	assert_non_null(strstr(err, "bad.json:2:"));
	/* a vocabulary without every byte cannot encode all text */
	f = fopen(p, "w");
	fputs("{\"a\": 0, \"b\": 1}", f);
	fclose(f);
	assert_int_equal(bpe_load(&b, p, voc, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "no token for byte"));
	/* a merge line with three tokens names its line */
	snprintf(p, sizeof p, "%s/bad.bpe", dir);
	f = fopen(p, "w");
	fputs("#version: 0.2\na b\nb c d\n", f);
	fclose(f);
	assert_int_equal(bpe_load(&b, enc, p, err, sizeof err), CS_ERR_FORMAT);
	printf("%s\n", err);
	assert_non_null(strstr(err, "bad.bpe:3:"));
	assert_null(b);
}

static void test_corpus_tokens(void **state)
{
	(void)state;
	merge m[] = { { "a", "b" } };
	bpe *b = load(m, 1);
	char corpus[128], cache[128], p[192];
	snprintf(corpus, sizeof corpus, "%s/corpus", dir);
	snprintf(cache, sizeof cache, "%s/cache", dir);
	mkdir(corpus, 0755);
	snprintf(p, sizeof p, "%s/1", corpus);
	FILE *f = fopen(p, "w");
	for (int i = 0; i < 40; i++)
		fputs("ab ab\n", f);
	fclose(f);
	snprintf(p, sizeof p, "%s/2", corpus);
	f = fopen(p, "w");
	for (int i = 0; i < 40; i++)
		fputs("ba\n", f);
	fclose(f);
	td_data d;
	assert_int_equal(td_load(&d, corpus, cache, 0.25, 4, b, err, sizeof err), CS_OK);
	/* <|endoftext|> (257) before each file; "ab" is 256: "ab", " ", "ab", "\n" a line */
	assert_int_equal(d.n_tokens, 1 + 40 * 4 + 1 + 40 * 3);
	assert_int_equal(d.tokens[0], 257);
	assert_int_equal(d.tokens[1], 256);
	assert_int_equal(d.tokens[2], ' ');
	assert_int_equal(d.tokens[3], 256);
	assert_int_equal(d.tokens[4], '\n');
	assert_int_equal(d.tokens[1 + 40 * 4], 257);
	assert_int_equal(d.tokens[2 + 40 * 4], 'b');
	assert_false(d.cache_hit);
	uint16_t first[8];
	memcpy(first, d.tokens, sizeof first);
	td_free(&d);
	assert_int_equal(td_load(&d, corpus, cache, 0.25, 4, b, err, sizeof err), CS_OK);
	assert_true(d.cache_hit);
	assert_memory_equal(d.tokens, first, sizeof first);
	td_free(&d);
	/* byte tokens have their own cache */
	assert_int_equal(td_load(&d, corpus, cache, 0.25, 4, NULL, err, sizeof err), CS_OK);
	assert_false(d.cache_hit);
	assert_int_equal(d.n_tokens, 40 * 6 + 40 * 3);
	assert_int_equal(d.tokens[0], 'a');
	td_free(&d);
	bpe_free(b);
}

static void test_training_with_bpe(void **state)
{
	(void)state;
	merge m[] = { { "t", "h" }, { "th", "e" }, { " ", "the" }, { "a", "t" } };
	char enc[128], voc[128];
	write_vocab(m, 4, enc, voc); /* 256 bytes + 4 merges + <|endoftext|>: 261 tokens */
	char corpus[128], cfgp[128], ov_dir[192], ov_out[192];
	snprintf(corpus, sizeof corpus, "%s/text", dir);
	tt_corpus(corpus, 60000);
	snprintf(cfgp, sizeof cfgp, "%s/cfg.yaml", dir);
	char text[1024];
	snprintf(text, sizeof text,
		 "run: {name: bpe, seed: 5}\n"
		 "device: {kind: native}\n"
		 "model: {n_layer: 1, n_head: 2, n_embd: 16, block_size: 16, vocab_size: 256}\n"
		 "data: {path: %s, val_fraction: 0.1, tokenizer: gpt2}\n"
		 "train: {steps: 3, batch_size: 2, eval_every: 0, ckpt_every: 0, sample_tokens: 0}\n"
		 "sparsity: {algorithm: static, init_method: random, sparsity: 0.5}\n",
		 corpus);
	tt_write(cfgp, text);
	snprintf(ov_dir, sizeof ov_dir, "data.bpe_dir=%s", dir);
	snprintf(ov_out, sizeof ov_out, "run.out_dir=%s/runs", dir);
	char *ov[] = { ov_dir, ov_out, "model.vocab_size=264" };
	trainer t;
	/* the vocabulary must hold the tokenizer's tokens */
	assert_int_not_equal(tt_make_trainer(&t, cfgp, ov, 2, err, sizeof err), CS_OK);
	assert_non_null(strstr(err, "model.vocab_size 256"));
	/* a tokenizer directory without the files is named */
	char *ov_missing[] = { "data.bpe_dir=/nonexistent/gpt2", ov_out, "model.vocab_size=264" };
	assert_int_not_equal(tt_make_trainer(&t, cfgp, ov_missing, 3, err, sizeof err), CS_OK);
	assert_non_null(strstr(err, "/nonexistent/gpt2/encoder.json"));
	assert_int_equal(tt_make_trainer(&t, cfgp, ov, 3, err, sizeof err), CS_OK);
	assert_int_equal(t.data.tokens[0], 260); /* <|endoftext|> opens the document */
	int merged = 0;
	for (size_t i = 0; i < t.data.n_tokens; i++)
		merged += t.data.tokens[i] == 258; /* " the" */
	assert_true(merged > 100);
	for (int s = 0; s < 3; s++) {
		train_step_stats st;
		assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
		assert_true(st.loss > 0.0f && st.loss < 10.0f);
	}
	uint8_t *out = NULL;
	size_t nout = 0;
	assert_int_equal(trainer_sample(&t, (const uint8_t *)"the", 3, 20, 1.0f, &out, &nout, err,
					sizeof err), CS_OK);
	assert_true(nout >= 20); /* tokens of one or more bytes; never padding ids */
	free(out);
	trainer_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_merges_and_order),
		cmocka_unit_test(test_against_reference_loop),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_corpus_tokens),
		cmocka_unit_test(test_training_with_bpe),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
