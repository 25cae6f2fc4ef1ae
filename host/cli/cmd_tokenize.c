/*
 * cmd_tokenize.c - `cshost tokenize`: text to token ids and back, with the byte tokenizer
 * or GPT-2's BPE (the same tokenizers `data.tokenizer` selects for training).
 *
 *   cshost tokenize [--tokenizer gpt2|bytes] [--bpe-dir DIR] [--json] [FILE|-]
 *   cshost tokenize --decode [--tokenizer ...] [FILE|-]
 *   cshost tokenize --stats [...] [FILE|-]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/cs_error.h"
#include "interop/bpe.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cshost tokenize [--tokenizer gpt2|bytes] [--bpe-dir DIR] [--json] [FILE|-]\n"
		"       cshost tokenize --decode [--tokenizer gpt2|bytes] [--bpe-dir DIR] [FILE|-]\n"
		"  encodes UTF-8 text (FILE or standard input) into token ids, one line of\n"
		"  space-separated ids (--json: a JSON array); --decode turns ids (separated by\n"
		"  spaces, commas or newlines; brackets ignored) back into text.\n"
		"  --stats      print only counts and the encoding speed (one core, without loading\n"
		"               the vocabulary or writing ids) as JSON\n"
		"  --tokenizer  gpt2 (default): GPT-2's byte-level BPE; bytes: one token per byte\n"
		"  --bpe-dir    the directory holding encoder.json and vocab.bpe (default\n"
		"               $CSHOST_GPT2_DIR, else %s)\n",
		BPE_DEFAULT_DIR);
}

static int read_all(const char *path, uint8_t **buf, size_t *n)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f) {
		fprintf(stderr, "cshost tokenize: %s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16;
	*n = 0;
	*buf = malloc(cap);
	for (;;) {
		if (!*buf) {
			fprintf(stderr, "cshost tokenize: out of memory\n");
			break;
		}
		*n += fread(*buf + *n, 1, cap - *n, f);
		if (*n < cap)
			break;
		cap *= 2;
		uint8_t *nb = realloc(*buf, cap);
		if (!nb)
			free(*buf);
		*buf = nb;
	}
	int bad = !*buf || ferror(f);
	if (ferror(f))
		fprintf(stderr, "cshost tokenize: %s: read error\n", path);
	if (f != stdin)
		fclose(f);
	return bad ? -1 : 0;
}

int cmd_tokenize(int argc, char **argv)
{
	const char *tokenizer = "gpt2", *dir = NULL, *path = "-";
	int decode = 0, json = 0, stats = 0, have_path = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--decode")) {
			decode = 1;
		} else if (!strcmp(argv[i], "--stats")) {
			stats = 1;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
			tokenizer = argv[++i];
		} else if (!strcmp(argv[i], "--bpe-dir") && i + 1 < argc) {
			dir = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "cshost tokenize: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (!have_path) {
			path = argv[i];
			have_path = 1;
		} else {
			fprintf(stderr, "cshost tokenize: one input file at most ('%s')\n", argv[i]);
			return 2;
		}
	}
	int bytes = !strcmp(tokenizer, "bytes");
	if (!bytes && strcmp(tokenizer, "gpt2")) {
		fprintf(stderr, "cshost tokenize: --tokenizer '%s': expected gpt2 or bytes\n",
			tokenizer);
		return 2;
	}
	char err[1024];
	bpe *b = NULL;
	if (!bytes) {
		if (!dir)
			dir = bpe_default_dir();
		if (bpe_load_dir(&b, dir, err, sizeof err)) {
			fprintf(stderr, "cshost tokenize: %s\n", err);
			return 1;
		}
	}
	uint8_t *in;
	size_t n;
	if (read_all(path, &in, &n)) {
		bpe_free(b);
		return 1;
	}
	int rc = 0;
	if (!decode) {
		int32_t *ids = NULL;
		size_t n_ids = 0, cap = 0;
		struct timespec t0, t1, c0, c1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
		if (bytes) {
			ids = malloc((n ? n : 1) * sizeof *ids);
			for (size_t i = 0; ids && i < n; i++)
				ids[i] = in[i];
			n_ids = ids ? n : 0;
		} else if (bpe_encode(b, in, n, &ids, &n_ids, &cap, err, sizeof err)) {
			fprintf(stderr, "cshost tokenize: %s: %s\n", path, err);
			rc = 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
		double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
		double cs = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
		if (!rc && stats) {
			printf("{\"tokenizer\": \"%s\", \"bytes\": %zu, \"tokens\": %zu, "
			       "\"bytes_per_token\": %.4f, \"cpu_seconds\": %.6f, \"seconds\": %.6f, "
			       "\"mb_per_s\": %.3f}\n",
			       tokenizer, n, n_ids, n_ids ? (double)n / (double)n_ids : 0.0, cs, s,
			       s > 0 ? (double)n / s / 1e6 : 0.0);
		} else if (!rc) {
			fputs(json ? "[" : "", stdout);
			for (size_t i = 0; i < n_ids; i++)
				printf("%s%d", i ? (json ? "," : " ") : "", ids[i]);
			fputs(json ? "]\n" : "\n", stdout);
		}
		free(ids);
	} else {
		int vocab = bytes ? 256 : bpe_vocab_size(b);
		size_t i = 0, k = 0;
		while (i < n && !rc) {
			uint8_t c = in[i];
			if (c == ' ' || c == ',' || c == '\n' || c == '\r' || c == '\t' || c == '[' ||
			    c == ']') {
				i++;
				continue;
			}
			long v = 0;
			size_t d0 = i;
			while (i < n && in[i] >= '0' && in[i] <= '9' && v < 1L << 30)
				v = v * 10 + (in[i++] - '0');
			if (i == d0 || v >= vocab) {
				fprintf(stderr, "cshost tokenize: %s: token %zu (byte %zu): %s\n", path, k,
					d0, i == d0 ? "not a number" : "outside the vocabulary");
				rc = 1;
				break;
			}
			if (bytes) {
				putchar((int)v);
			} else {
				size_t len;
				const uint8_t *t = bpe_token_bytes(b, (int)v, &len);
				if (!t) {
					fprintf(stderr, "cshost tokenize: %s: token %zu: id %ld has no text\n",
						path, k, v);
					rc = 1;
					break;
				}
				fwrite(t, 1, len, stdout);
			}
			k++;
		}
	}
	free(in);
	bpe_free(b);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "cshost tokenize: cannot write the output\n");
		rc = 1;
	}
	return rc;
}
