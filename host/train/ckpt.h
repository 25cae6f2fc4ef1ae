/*
 * ckpt.h - checkpoint files: a header (magic, version, model sizes, step, seed, RNG state)
 * and a list of named records (weights, masks, AdamW moments, sparsity state, the resolved
 * config), each with its size and an FNV-1a 64 checksum (of name, kind, size and data),
 * then an end marker. Written
 * atomically (atomic_file.h); read whole and verified before anything uses it.
 *
 * Record names used by the trainer: "config" (resolved YAML), "param/<tensor>",
 * "adam_m/<tensor>", "adam_v/<tensor>", "sparsity/state" (host/sparsity's own format).
 * A checkpoint in the Cerebras convention (CK_FLAG_NAN_PRUNED) stores pruned weights as
 * NaN and has no optimizer or sparsity state (train.h: train_export_nan / import).
 */
#ifndef CS_TRAIN_CKPT_H
#define CS_TRAIN_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "train/gpt.h"

#define CK_VERSION 1u
#define CK_FLAG_NAN_PRUNED 1u /* pruned weights are NaN (Cerebras convention) */

enum ck_kind { CK_F32 = 1, CK_U8 = 2, CK_BYTES = 3 };

typedef struct ck_header {
	uint32_t version;
	uint32_t flags;
	gpt_config model;
	int64_t step;       /* optimizer steps completed */
	uint64_t seed;
	uint64_t rng_state; /* the trainer's sampling RNG */
} ck_header;

typedef struct ck_record {
	char name[96];
	uint32_t kind;      /* enum ck_kind */
	uint64_t nbytes;
	uint64_t checksum;  /* FNV-1a 64 of name, kind, nbytes and data */
	void *data;         /* owned by the ck_file after ck_load; borrowed by ck_save */
	/* ck_save only: when data is NULL and fill is set, fill(fill_ctx, buf) writes the
	 * record's nbytes into a buffer of its own (a record made on the fly, one at a time) */
	void (*fill)(const void *fill_ctx, void *buf);
	const void *fill_ctx;
} ck_record;

typedef struct ck_file {
	ck_header hdr;
	int n;
	ck_record *rec;
} ck_file;

/* Write atomically; on error nothing at path changes. */
int ck_save(const char *path, const ck_header *h, const ck_record *recs, int n, char *err,
	    size_t errlen);
/* Read and verify magic, version, record sizes and checksums, end marker. */
int ck_load(const char *path, ck_file *out, char *err, size_t errlen);
const ck_record *ck_find(const ck_file *f, const char *name);
void ck_free(ck_file *f);
/* Model sizes equal? If not, err says which differs ("n_embd 64 vs 128"). */
int ck_check_model(const ck_file *f, const gpt_config *c, const char *path, char *err,
		   size_t errlen);
uint64_t ck_checksum(const void *p, size_t n);
/* A record's checksum: over its name, kind and size as well as its data. */
uint64_t ck_record_checksum(const char *name, uint32_t kind, uint64_t nbytes, const void *data);

#endif /* CS_TRAIN_CKPT_H */
