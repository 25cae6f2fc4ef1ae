/*
 * config.h - the YAML run configuration of `cshost train` (docs/config.md lists every key).
 *
 * One file (libyaml, walked by the schema-driven front end host/common/cs_config.h) plus
 * dotted command-line overrides ("train.steps=50"), validated in one walk: every section,
 * the `sparsity:` block included (its tables are host/sparsity's; the result is the typed
 * sp_config in `sparsity`). Every error names where the value came from, the key and what
 * is allowed:
 *   cfg.yaml:14:3: train.lr: -1 is not in [0, 10]
 *   cfg.yaml:3:3: model.n_embed: unknown key (did you mean 'n_embd'?)
 *   override 'sparsity.sparsity=1.5': sparsity.sparsity: 1.5 is not in [0, 1)
 * The YAML document stays alive for the resolved config (the sparsity block is written as
 * given) and for messages about positions. Not here: what the values do.
 */
#ifndef CS_TRAIN_CONFIG_H
#define CS_TRAIN_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include <yaml.h>

#include "train/gpt.h"

#define TC_PATH_MAX 1024

typedef struct train_config {
	char file[TC_PATH_MAX];        /* where it came from (for messages) */
	/* run */
	char name[128];
	char out_dir[TC_PATH_MAX];
	uint64_t seed;
	/* device */
	char device_kind[8];           /* native | model (= cpu) | sim | usb */
	char serials[256];             /* usb boards by serial, one per rank of a node: "A,B" */
	int device_index;              /* not a key: this process's place in serials (the
					  MPI local rank) */
	char weights[8];               /* native engine's weight storage: fp32 | bf16 */
	char mesh[16];                 /* "4x4" */
	char pe[16];                   /* PE implementation: full | lite | micro_mt (csd.h) */
	int mesh_rows, mesh_cols;
	int awords, bwords;            /* per-PE SRAM sizes; 0: the backend's default */
	int dense_on_host;             /* -1 auto, 0 false, 1 true (see tc_dense_on_host) */
	int resident;                  /* the resident training step (train_resident.h) */
	/* model */
	gpt_config model;
	char init_from[TC_PATH_MAX];   /* model.init_from: GPT-2 safetensors to start from */
	/* data */
	char data_path[TC_PATH_MAX];
	double val_fraction;
	char data_cache_dir[TC_PATH_MAX]; /* "" = <out_dir>/cache */
	char data_tokenizer[8];        /* bytes | gpt2 */
	char data_format[8];           /* auto | text | llmc */
	char data_val_path[TC_PATH_MAX]; /* llmc: the validation shards */
	char data_bpe_dir[TC_PATH_MAX]; /* gpt2: encoder.json + vocab.bpe; "" = bpe_default_dir() */
	/* train */
	int steps, batch_size, grad_accum;
	int threads;                   /* 0: cs_default_threads() */
	char reduce[8];                /* gradient sum over MPI ranks: ordered | fast */
	int shard_optimizer;           /* ZeRO-1: each rank updates its shard (ordered only) */
	double lr, min_lr;
	int warmup_steps;
	double weight_decay, beta1, beta2, eps, grad_clip;
	int eval_every, eval_batches, ckpt_every, keep_ckpts, log_every, sample_tokens;
	double sample_temperature;
	/* imp: iterative magnitude pruning with rewinding (host/train/workflow.h) */
	int imp_rounds;                /* 0: off */
	double imp_fraction;           /* of the remaining weights pruned per round */
	double imp_sparsity;           /* or: the final sparsity (fraction derived) */
	char imp_scope[16];            /* per_tensor | global */
	int imp_steps_per_round;       /* 0: from train.steps */
	char imp_rewind[8];            /* lr | weights */
	int imp_rewind_step;
	/* where each key's value came from: its node in the document (0: the default), by
	 * the key's place in the schema; filled by the walk, read by the checks after it */
#define TC_MAX_KEYS 64
	int key_node[TC_MAX_KEYS];
	/* the document and its sparsity: node (0 when absent) */
	yaml_document_t doc;
	int doc_loaded;
	int sparsity_node;
	struct sp_config *sparsity;    /* the block parsed (sparsity.h); absent: a dense
					  one. Owned: tc_free frees it, an sp_state borrows it */
	/* command-line overrides: node ids they created, and their text (for messages) */
	int n_override_nodes, n_overrides;
	int override_node[256];        /* node id ... */
	int override_of[256];          /* ... and the override (index into override_text) */
	char override_text[32][160];
} train_config;

/* Defaults of every key (the values docs/config.md lists). */
void tc_defaults(train_config *c);
/* Load file `path` (or, when text != NULL, parse text and call it `path` in messages),
 * apply overrides ("section.key=value", n of them), validate. On error, err holds one
 * line naming file:line:col, key and what is allowed; the config is freed. */
int tc_load(train_config *c, const char *path, const char *text, char *const *overrides,
	    int n_overrides, char *err, size_t errlen);
void tc_free(train_config *c);
/* Where a node came from: "cfg.yaml:3:5" or "override 'train.steps=x'". */
void tc_where(const train_config *c, int node_id, char *buf, size_t len);
/* Write the resolved configuration (every key, sparsity block as given) as YAML. */
int tc_write_resolved(const train_config *c, FILE *f);
/* What differs between a (a checkpoint's config) and b in keys that change what is trained
 * (model, data, seed, batch, optimizer, the sparsity block): the count, and in *text
 * (free() it; NULL when 0) one "  key: old -> new" line each. < 0 on error. */
int tc_diff_training(const train_config *a, const train_config *b, char **text);
/* Whether projections run as dense sgemm on the host (dense_on_host resolved). */
int tc_dense_on_host(const train_config *c, int sparsity_on);
/* Whether the sparse projections run on the native engine (device.kind: native). */
int tc_native(const train_config *c);
/* Device URI for csd_open ("cpu:4x4", "sim:4x4", "usb"); not for native. */
void tc_device_uri(const train_config *c, char *buf, size_t len);
/* docs/config.md's key table, generated from the schema (`cshost config doc`, make
 * config-doc; make test fails while the committed table differs). Returns how many keys
 * lack a doc line or a default (0: every row is complete). */
int tc_write_doc(FILE *f);
/* imp: the steps of round 0 (S); the later rounds have S - imp.rewind_step each, and
 * train.steps = S + rounds*(S - rewind_step). train.steps when imp is off. */
long tc_imp_round_steps(const train_config *c);
/* Levenshtein distance (exposed for tests). */
int tc_edit_distance(const char *a, const char *b);

#endif /* CS_TRAIN_CONFIG_H */
