/*
 * train.h - the training loop of `cshost train`: a trainer object (model, AdamW state,
 * sparsity, device, data) that steps, evaluates, checkpoints and resumes, and train_run,
 * which drives a whole run in its run directory (<out_dir>/<name>: config.yaml,
 * metrics.jsonl, ckpt-NNNNNNNN.bin, sample.txt, summary.json).
 *
 * Determinism: the batch of step s is a function of (seed, s); init and masks of the seed;
 * everything else of the checkpointed state. A resumed run is bit-identical to an
 * uninterrupted one on the same backend and thread count.
 *
 * Data parallelism (train_opts.dp, docs/scaling.md): under mpirun each rank runs its share
 * of a step's micro-batches and the gradients are summed in rank order, so N ranks with
 * one micro-batch each give the bits of one process with grad_accum N; a run resumes with
 * any rank count. With train.shard_optimizer each rank receives the sum of its shard of
 * the gradient only, clips and updates that shard (ZeRO-1) and the ranks gather the
 * updated weights: the same bits.
 */
#ifndef CS_TRAIN_TRAIN_H
#define CS_TRAIN_TRAIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "train/config.h"
#include "train/data.h"
#include "train/dp.h"
#include "train/gpt.h"
#include "train/train_device.h"
#include "train/train_native.h"
#include "train/train_resident.h"
#include "train/train_sparsity.h"

typedef struct trainer {
	train_config cfg;        /* owned (tc_free at trainer_free) */
	gpt model;
	float *adam_m, *adam_v;  /* [num_params] */
	train_sparsity *ts;
	train_device *dev;       /* NULL when the projections run on the host */
	train_resident *res;     /* device.resident: the blocks resident on dev, else NULL */
	train_native *nat;       /* the native engine (device.kind: native), else NULL */
	cs_pool *pool;           /* train.threads host threads */
	td_data data;
	int have_data;
	bpe *tok;                /* data.tokenizer gpt2, else NULL (byte tokens) */
	long step;               /* optimizer steps completed */
	uint64_t rng;            /* sampling RNG state */
	int *inputs, *targets;   /* [B, T] */
	/* AdamW over the kept entries of masked tensors: sorted positions per tensor, NULL
	 * where the full update runs (dense tensors, or masks denser than
	 * TRAINER_KEPT_MAX_DENSITY); rebuilt when masks change and after a load */
	uint32_t **kept;         /* [num_tensors] */
	size_t *nkept;           /* [num_tensors] */
	/* Where a kept list exists the tensor's Adam moments are packed, aligned with it
	 * ([nkept], the moments of pruned entries are zero), so optimizer memory falls with
	 * density; adam_m/adam_v hold the other tensors' (the packed tensors' ranges stay
	 * zero and untouched). trainer_moments gives the dense view. */
	float **pm, **pv;        /* [num_tensors] */
	int adamw_dense;         /* 1: the full update everywhere (trainer_set_full_adamw) */
	/* The step's gradient, one piece per tensor: its range of the dense grad buffer, or
	 * the engine's packed dW of a sparse projection (gpk[i] = 1; the dense range is then
	 * neither written, zeroed nor read, so its pages stay unmapped) */
	float **gseg;            /* [num_tensors] */
	size_t *glen;            /* [num_tensors] */
	uint8_t *gpk;            /* [num_tensors] */
	float **wnz;             /* [num_tensors] the engine's values AdamW writes, or NULL */
	int grads_dirty;         /* the dense ranges of packed tensors may be nonzero */
	/* Data parallelism (trainer_set_dp): rank r of N takes micro-batches
	 * [r A/N, (r+1) A/N) of the step's A = grad_accum; the gradients are summed over
	 * the ranks in rank order, so the result is that of one process running all A. */
	dp_comm *dp;             /* not owned; NULL: one process */
	float *micro_loss;       /* [grad_accum] */
	/* A micro-batch after the first starts from zero and is added to the sum so far
	 * (acc), gradient by gradient in micro-batch order: the same adds as the ranks' */
	float *acc;              /* [acc_cap] */
	size_t acc_cap;
	float *stage;            /* [stage_cap] the reduced gradient, block by block */
	size_t stage_cap;
	size_t *aoff, *soff;     /* [num_tensors] offsets into acc and stage */
	uint8_t *smode;          /* [num_tensors] enum: what of tensor i is reduced */
	int *grp;                /* [num_tensors] tensors in posting order (blocks L-1..0, then
				    the rest) */
	int *grp_start;          /* [n_layer + 2] group g's tensors: grp[grp_start[g]..
				    grp_start[g+1]); g = layer, n_layer for the rest */
	int cur_micro;           /* local index of the micro-batch in its backward */
	int cur_last;            /* it is this rank's last of the step */
	/* The sharded optimizer (train.shard_optimizer, ordered sums on N > 1 ranks): the
	 * step's gradient pieces in the order of the clipping norm's chunks, cut at chunk
	 * boundaries into N contiguous shards of about equal length; rank p sums, clips and
	 * runs AdamW on shard p only, and the ranks then gather the updated weights. */
	int shard_step;          /* this step is sharded */
	size_t *own;             /* [num_tensors x (N+1)] rank p's range of tensor i's
				    gradient piece: [own[i(N+1)+p], own[i(N+1)+p+1]) */
	size_t *bcut;            /* [(n_layer+1) x (N+1)] the same in group g's stage range,
				    from its start */
	size_t *ccut;            /* [N+1] rank p's norm chunks [ccut[p], ccut[p+1]) */
	size_t nchunks;
	double *npart;           /* [nchunks] the norm's chunk partials */
	size_t npart_cap;
	/* Each rank's moments are current on its own shard only, after a sharded AdamW
	 * (mstale): mown and mkidx say whose shard was what (mkidx[i]: the range counts kept
	 * entries, else dense positions), so that trainer_sync_moments can gather them
	 * before anything reads them all (a save, a mask change, another cut). */
	int mstale;
	size_t *mown;            /* [num_tensors x (N+1)] */
	uint8_t *mkidx, *skidx;  /* [num_tensors] for mown, and for own */
} trainer;

/* Above this share of kept entries the vectorized full update is faster than the gathered
 * one (host/train/bench/train_bench.c measures both); the two give the same bits. */
#define TRAINER_KEPT_MAX_DENSITY 0.6

typedef struct train_step_stats {
	float loss;              /* mean over the micro-batches */
	double lr, grad_norm;
	double ms;               /* wall time of the step */
	double cpu_ms;           /* CPU time of this process in the step (all its threads) */
	int masks_changed;
	uint64_t device_cycles;
	double device_utilization;
	uint64_t link_bytes_out, link_bytes_in; /* host <-> device, framing included on byte links */
	uint64_t comm_bytes;     /* gradient bytes this rank sent to the others */
	double comm_ms;          /* wall time inside the reduction (posting, progress, waits) */
	double comm_wait_ms;     /* of which waiting after the backward (not overlapped) */
} train_step_stats;

/* Take ownership of cfg (loaded with tc_load). need_data 0 skips the corpus (sample). */
int trainer_init(trainer *t, train_config *cfg, int need_data, char *err, size_t errlen);
void trainer_free(trainer *t);
/* Train as one of dp_size(dp) ranks (every rank calls trainer_step together); the
 * config's grad_accum must be a multiple of the rank count. */
int trainer_set_dp(trainer *t, dp_comm *dp, char *err, size_t errlen);
/* The AdamW moments as dense arrays [num_params] (packed ones expanded). */
void trainer_moments(const trainer *t, float *m, float *v);
/* Run the full AdamW update everywhere from now on, with dense moments (tests compare it
 * with the kept-entry update). */
void trainer_set_full_adamw(trainer *t);
/* With the sharded optimizer each rank's AdamW moments are current on its own shard
 * only: gather them on every rank (a collective: every rank calls it at the same point,
 * e.g. before rank 0 saves). A no-op when they are whole. */
int trainer_sync_moments(trainer *t, char *err, size_t errlen);
/* One optimizer step (grad_accum micro-batches). */
int trainer_step(trainer *t, train_step_stats *s, char *err, size_t errlen);
/* Mean validation loss over eval_batches fixed batches. */
int trainer_eval(trainer *t, float *val_loss, char *err, size_t errlen);
int trainer_save(trainer *t, const char *path, char *err, size_t errlen);
/* Load weights, optimizer, sparsity state, step and RNG (the model shape must match). */
int trainer_load(trainer *t, const char *path, char *err, size_t errlen);
/* Generate n tokens after prompt (UTF-8 text, tokenized as in training) at temperature
 * (0 = greedy), sampling among the tokenizer's tokens only (not the vocabulary's padding);
 * *out (malloc'd, *out_len bytes) receives the generated tokens' text. */
int trainer_sample(trainer *t, const uint8_t *prompt, size_t plen, int n, float temperature,
		   uint8_t **out, size_t *out_len, char *err, size_t errlen);
/* Load only the weights and AdamW moments of a checkpoint (the same model), under the
 * current masks: step, RNG and sparsity state stay (IMP's weight rewinding). */
int trainer_load_weights(trainer *t, const char *path, char *err, size_t errlen);
/* After masks changed outside trainer_step (ts_prune_remaining): repack the kept-entry
 * optimizer state and rebuild the engine's or device's weights of the changed tensors. */
int trainer_masks_changed(trainer *t, char *err, size_t errlen);
/* Read the config stored in a checkpoint (for sample / eval). */
int trainer_config_from_ckpt(train_config *cfg, const char *ckpt, char *const *overrides,
			     int n_overrides, char *err, size_t errlen);
/* Cerebras convention: write ckpt_in's weights with pruned entries as NaN (no optimizer
 * or sparsity state) to out; import does the reverse (masks from the NaNs). */
int train_export_nan(const char *ckpt_in, const char *out, char *err, size_t errlen);
int train_import_nan(const char *ckpt_in, const char *out, char *err, size_t errlen);

typedef struct train_opts {
	const char *config_path;
	char *const *overrides;
	int n_overrides;
	int resume, force;
	int allow_config_change;         /* --resume with other model/data/sparsity/optimizer */
	int progress;                    /* 1 progress line, 0 plain lines, -1 auto (isatty) */
	volatile sig_atomic_t *stop;     /* set asynchronously (Ctrl-C): checkpoint and stop */
	long stop_after;                 /* tests: behave as if stopped after this many steps */
	FILE *out;                       /* progress and summary (stderr when NULL) */
	dp_comm *dp;                     /* data parallelism over MPI ranks; NULL: one process.
					    Rank 0 alone writes the run directory */
} train_opts;

typedef struct train_result {
	long steps;                      /* completed optimizer steps */
	float last_loss, val_loss;
	double unigram_entropy;          /* nats per byte */
	double ms_per_step, tokens_per_s;
	int interrupted;
	int started;                     /* every rank got through the setup (after it, one
					    rank's error must end the others: dp_abort) */
	char run_dir[TC_PATH_MAX + 160];
} train_result;

int train_run(const train_opts *o, train_result *r, char *err, size_t errlen);

#endif /* CS_TRAIN_TRAIN_H */
