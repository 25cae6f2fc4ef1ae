/*
 * train_sparsity.h - the trainer's one door to host/sparsity: builds the sp_param table
 * from the model and the AdamW buffers, and forwards the per-step calls. Everything
 * sparsity-specific the trainer does goes through here, so that train.c reads the same
 * whether sparsity is on or off (ts_enabled() is 0 for a dense run).
 */
#ifndef CS_TRAIN_TRAIN_SPARSITY_H
#define CS_TRAIN_TRAIN_SPARSITY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "train/config.h"
#include "train/gpt.h"

typedef struct train_sparsity train_sparsity;

/* Build the t = 0 masks of cfg's sparsity block (parsed by tc_load; cfg must outlive the
 * state) and apply them to the model's weights and to adam_m / adam_v, which may be NULL.
 * A config without sparsity gives a disabled state. Errors (a pattern matching no tensor,
 * a distribution that cannot be realised) name the config location. */
int ts_create(train_sparsity **out, train_config *cfg, gpt *m, float *adam_m, float *adam_v,
	      long total_steps, char *err, size_t errlen);
void ts_free(train_sparsity *ts);
int ts_enabled(const train_sparsity *ts);

int ts_wants_dense_grad(const train_sparsity *ts, long step);
int ts_mask_grads(train_sparsity *ts, long step);
/* Model tensor idx's gradient of this step is zero outside its mask already. */
void ts_set_grad_clean(train_sparsity *ts, int idx);
int ts_skip_optimizer(const train_sparsity *ts, long step);
/* >= 0: number of tensors whose mask changed */
int ts_after_optimizer(train_sparsity *ts, long step);
/* Zero everything outside the masks (after loading weights). */
int ts_apply(train_sparsity *ts);
/* Byte mask of model tensor idx (1 = kept), or NULL when it is dense. */
const uint8_t *ts_mask(const train_sparsity *ts, int idx);
int ts_mask_changed(const train_sparsity *ts, int idx);
/* sp_mask_churn of the last update (0 when sparsity is off). */
double ts_mask_churn(const train_sparsity *ts);
/* Sparsity of model tensor idx's mask (0 when dense; a fused tensor over its parts). */
double ts_tensor_sparsity(const train_sparsity *ts, int idx);
/* The sparsity layer's tensors ("views": q, k and v of a fused qkv weight apart, every other
 * tensor as it is): how many, the name of view v, whether it has a mask, its sparsity. */
int ts_num_views(const train_sparsity *ts);
const char *ts_view_name(const train_sparsity *ts, int v);
int ts_view_masked(const train_sparsity *ts, int v);
double ts_view_sparsity(const train_sparsity *ts, int v);
/* Sparsity over the sparsified tensors (0 when dense). */
double ts_sparsity(const train_sparsity *ts);
/* Share of zeros forced by masks over all parameters (0 when dense). */
double ts_sparsity_all(const train_sparsity *ts);
/* FLOPs of one iteration (call before ts_after_optimizer); NULL-safe when disabled. */
int ts_flops_step(train_sparsity *ts, long step, int seq_len, int n_seqs);
int ts_write_flops_json(const train_sparsity *ts, FILE *f);
void ts_print(const train_sparsity *ts, FILE *f);
/* Algorithm state for checkpoints (*buf malloc'ed; *len 0 when disabled). */
int ts_save(const train_sparsity *ts, uint8_t **buf, size_t *len);
int ts_load(train_sparsity *ts, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* Prune `fraction` of the remaining nonzeros of every sparsified tensor by magnitude,
 * per tensor (global 0) or over each group's tensors (1); the masks stay fixed from then
 * on (iterative pruning). >= 0: masks changed. */
int ts_prune_remaining(train_sparsity *ts, double fraction, int global);
/* Nonzeros and elements of the sparsified tensors. */
void ts_nnz(const train_sparsity *ts, size_t *nnz, size_t *numel);
/* Cerebras NaN convention on the model's weights. */
size_t ts_nan_export(const train_sparsity *ts, int idx, float *w);
int ts_nan_import(train_sparsity *ts, int idx, float *w);

#endif /* CS_TRAIN_TRAIN_SPARSITY_H */
