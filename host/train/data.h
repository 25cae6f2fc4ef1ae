/*
 * data.h - the training corpus: UTF-8 text to byte-level tokens, a cached token file, a
 * deterministic train/validation split and the batches drawn from it.
 *
 * A corpus is a file or a directory; in a directory the regular files are read in sorted
 * name order, skipping hidden files, symlinks (fortune's *.u8), *.dat index files and
 * files that are not UTF-8. Tokens are bytes, or GPT-2 BPE ids (interop/bpe.h) with
 * <|endoftext|> before each file. They are cached in <cache_dir>/tokens-<hash>.bin
 * (magic, version, count, checksum, 16-bit tokens), keyed by the sources' names, sizes and
 * times and the tokenizer's identity.
 * The split cuts the corpus into 4 KiB chunks (smaller for corpora under 2/val_fraction
 * chunks) and sends an evenly spread val_fraction of them to validation. Training batches are a pure function of (seed, step, micro-step),
 * so a resumed run reads exactly what an uninterrupted one would.
 */
#ifndef CS_TRAIN_DATA_H
#define CS_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

typedef struct bpe bpe;

#define TD_CHUNK 4096

typedef struct td_data {
	uint16_t *tokens;         /* all tokens, in corpus order */
	size_t n_tokens;
	uint16_t *train, *val;    /* the two splits (concatenated chunks) */
	size_t n_train, n_val;
	int n_files;              /* source files read */
	double unigram_entropy;   /* unigram entropy of the corpus' tokens, nats per token */
	char cache_path[1100];    /* the token cache used ("" when none) */
	int cache_hit;            /* 1 when the tokens came from the cache */
} td_data;

/* Load (from the cache when it is valid, else from the text, then write the cache).
 * cache_dir NULL or "" disables the cache; tok NULL: byte tokens. Needs at least
 * block_size + 2 tokens in each split. On error, err holds one line naming the path. */
int td_load(td_data *d, const char *path, const char *cache_dir, double val_fraction,
	    int block_size, bpe *tok, char *err, size_t errlen);
/* llm.c token shards (the .bin files of llm.c's dev/data scripts): a 256 x int32 header
 * (magic 20240520, version 1, token count), then the uint16 GPT-2 tokens. train and val are
 * a file or a glob each (shards concatenated in sorted order); every token must be below
 * vocab_size. Errors name the key (data.path / data.val_path), the file and the fault. */
#define TD_LLMC_MAGIC 20240520
int td_load_llmc(td_data *d, const char *train, const char *val, int vocab_size,
		 int block_size, char *err, size_t errlen);
/* Whether pattern names (first) an llm.c token file (its magic). */
int td_is_llmc(const char *pattern);
void td_free(td_data *d);
/* Training batch: B rows of T tokens at offsets drawn from (seed, step, micro). */
void td_train_batch(const td_data *d, uint64_t seed, int64_t step, int micro, int B, int T,
		    int *inputs, int *targets);
/* Validation batch i of n_batches: rows evenly spread over the validation split. */
void td_val_batch(const td_data *d, int i, int n_batches, int B, int T, int *inputs,
		  int *targets);
/* Token cache file I/O (exposed for tests). */
int td_cache_write(const char *path, const uint16_t *tokens, size_t n, uint64_t source_key,
		   int n_files, char *err, size_t errlen);
/* Returns CS_ERR_NOT_FOUND when absent, CS_ERR_FORMAT when corrupt, 1 when stale
 * (another source key or format version: rebuilt), 0 when loaded. */
int td_cache_read(const char *path, uint64_t source_key, uint16_t **tokens, size_t *n,
		  int *n_files, char *err, size_t errlen);
/* Whether buf is valid UTF-8; on failure *bad is the offset of the first bad byte. */
int td_is_utf8(const uint8_t *buf, size_t n, size_t *bad);
uint64_t td_fnv1a(const void *p, size_t n, uint64_t h);

#endif /* CS_TRAIN_DATA_H */
