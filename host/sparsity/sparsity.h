/*
 * sparsity.h - weight sparsity for training: the Cerebras-style `sparsity:` config and the
 * mask algorithms (static topk/random, GMP, SET, RigL, GraNet).
 *
 * The module owns one byte mask per sparsified tensor (1 = kept) and enforces it on the
 * trainer's own buffers (weights, gradients, AdamW moments). It does not run the model or
 * the optimizer. Spec: docs/sparsity.md (config reference, how the trainer drives the
 * calls, checkpoint format) and shared/reference/sparsity-algorithms.md.
 *
 * Step numbering: t counts completed optimizer steps. t = 0 is sp_create (the init masks).
 * The per-step calls take `step` = the 0-based index of the training iteration, i.e. the
 * number of optimizer steps completed BEFORE it; the mask update at the end of iteration
 * `step` happens at t = step + 1 (update iff start <= t < stop and (t-start) % freq == 0).
 *
 * One training iteration (section 7 of the spec):
 *
 *     dense = sp_wants_dense_grad(st, step);     // RigL/GraNet update at t = step+1
 *     forward; backward (dense dW on the host if `dense`, else sparse dW is enough)
 *     sp_mask_grads(st, step);                   // keeps a dense copy if needed, masks grads
 *     if (!sp_skip_optimizer(st, step))
 *         adamw_step(...);
 *     n = sp_after_optimizer(st, step);          // re-mask w, m, v; update masks if due
 *     if (n > 0) rebuild the device nonzero lists of the n changed tensors (sp_mask_changed)
 *
 * All functions return enum cs_error (0 or a count >= 0 on success, < 0 on error) unless
 * they return a pointer or a value. Nothing here exits or prints (except the *_print
 * helpers, which print to the FILE given).
 */
#ifndef CS_SPARSITY_H
#define CS_SPARSITY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <yaml.h>

#include "common/cs_error.h"

/* One parameter tensor as the trainer describes it. All buffers fp32, dense, row-major
 * ([out, in] for matrices), numel elements each; grad, adam_m, adam_v may be NULL (not
 * allocated yet / no optimizer). w may be NULL for every parameter: "plan only" (see
 * sp_create). The module keeps the pointers: they must stay valid until sp_free. */
typedef struct sp_param {
	const char *name;  /* "h.0.attn.qkv.weight" (copied) */
	int ndim;          /* 1..4 */
	int shape[4];
	size_t numel;      /* product of shape[0..ndim-1] */
	float *w;          /* [numel] weights */
	float *grad;       /* [numel] gradient of the loss w.r.t. w */
	float *adam_m;     /* [numel] AdamW first moment */
	float *adam_v;     /* [numel] AdamW second moment */
	/* Another name patterns may select the tensor by (NULL: none), for parts of a fused
	 * tensor: "h.0.attn.qkv.weight" for h.0.attn.{q,k,v}.weight. A pattern (or
	 * dense_layers glob) selects a part by its alias only when it matches none of the
	 * names of the parts sharing that alias, so "attn.qkv.weight" selects all three
	 * and "attn.[qk].weight" only q and k. */
	const char *alias;
} sp_param;

typedef struct sp_config sp_config; /* parsed `sparsity:` block (immutable) */
typedef struct sp_state sp_state;   /* masks + algorithm state of one training run */

/* ---- configuration ------------------------------------------------------------------- */

/*
 * Parse the `sparsity:` node of a training YAML already loaded with libyaml. node NULL (key
 * absent) or a null scalar means dense training: *out is a config for which sp_config_is_dense
 * is true. `file` is only used in messages. On error returns CS_ERR_CONFIG (or NO_MEM) and
 * writes "file:line:col: sparsity.key: message" to err.
 */
int sp_config_parse(sp_config **out, const char *file, yaml_document_t *doc, yaml_node_t *node,
		    char *err, size_t errlen);
/* Same, with `where` naming a node's origin in messages (e.g. a command-line override)
 * instead of file:line:col. */
typedef void (*sp_where_fn)(void *ctx, const yaml_node_t *n, char *buf, size_t len);
int sp_config_parse_where(sp_config **out, const char *file, yaml_document_t *doc,
			  yaml_node_t *node, sp_where_fn where, void *where_ctx, char *err,
			  size_t errlen);
/* Load a YAML file and parse its top-level `sparsity:` key (absent = dense). */
int sp_config_load_file(sp_config **out, const char *path, char *err, size_t errlen);
/* Same from a string (tests); `name` stands for the file name in messages. */
int sp_config_load_string(sp_config **out, const char *name, const char *yaml, char *err,
			  size_t errlen);
void sp_config_free(sp_config *cfg);
int sp_config_is_dense(const sp_config *cfg);
/* docs/sparsity.md's key table, generated from the schema tables of config.c (`cshost
 * config doc sparsity`, make config-doc). Returns how many keys have no doc line (0 when
 * every key is documented). */
int sp_config_write_doc(FILE *f);

/* ---- lifecycle ----------------------------------------------------------------------- */

/*
 * Select the sparsified tensors, solve the layer-wise distribution, build the t = 0 masks and
 * apply them to w, adam_m, adam_v (and grad). `seed` is used when the config has no `seed`.
 * total_steps is the length of training (GraNet's death-rate decay, `show`); 0 if unknown.
 * cfg must outlive st. If every params[i].w is NULL the state is "plan only": selection and
 * target sparsities are resolved (for `cshost sparsity show`) but there are no masks and the
 * per-step calls return CS_ERR_INVALID. Errors (pattern matching no tensor, group count not
 * dividing a shape, ...) return CS_ERR_CONFIG with a message naming the config location.
 */
int sp_create(sp_state **out, const sp_config *cfg, const sp_param *params, int n_params,
	      uint64_t seed, long total_steps, char *err, size_t errlen);
void sp_free(sp_state *st);

/* ---- per training iteration (see the top of this file) ------------------------------- */

/* 1 if the mask update at t = step+1 needs the dense gradient (RigL or GraNet grows). */
int sp_wants_dense_grad(const sp_state *st, long step);
/* After backward: copy the dense gradient of RigL/GraNet tensors if sp_wants_dense_grad,
 * then zero the gradient outside the mask (a select, so NaN cannot leak). */
int sp_mask_grads(sp_state *st, long step);
/* Tell sp_mask_grads that tensor idx's gradient of this step is zero outside the mask
 * already (a sparse weight gradient wrote only the kept positions), so it need not pass
 * over the tensor; ignored on steps that want the dense gradient. */
void sp_set_grad_clean(sp_state *st, int idx);
/* Declare that the caller's optimizer leaves a weight and its moments at zero when its
 * gradient and moments are zero (AdamW with decoupled weight decay does): then
 * sp_after_optimizer skips re-masking weights and moments on steps whose gradients
 * sp_mask_grads masked, since nothing outside the masks can have moved. */
void sp_set_zero_preserving_optimizer(sp_state *st, int on);
/* 1 if a group with skip_optimizer_on_update updates its masks at t = step+1. */
int sp_skip_optimizer(const sp_state *st, long step);
/* After the optimizer step (or its skip): re-mask weights and moments; at an update step
 * compute the new masks and zero weights and moments at dropped and newly grown positions.
 * Returns the number of tensors whose mask changed (>= 0). */
int sp_after_optimizer(sp_state *st, long step);
/* Zero w, grad, adam_m, adam_v outside the masks (e.g. after loading weights). */
int sp_apply(sp_state *st);
/* 1 if t (completed steps) is a mask-update step of any group. */
int sp_is_update_step(const sp_state *st, long t);
/* Last t processed (0 after sp_create). */
long sp_step(const sp_state *st);

/* ---- queries ------------------------------------------------------------------------- */

int sp_num_params(const sp_state *st);
/* Byte mask [numel] of params[idx] (idx in the trainer's order), or NULL if dense. */
const uint8_t *sp_mask(const sp_state *st, int idx);
/* 1 if the mask of params[idx] changed in the last sp_after_optimizer / sp_prune_remaining. */
int sp_mask_changed(const sp_state *st, int idx);
/* Mask churn of the last update: entries that changed (dropped or grown) over the entries of
 * the masked tensors. */
double sp_mask_churn(const sp_state *st);
/* Nonzeros kept by the mask of params[idx] (numel if dense). */
size_t sp_tensor_nnz(const sp_state *st, int idx);
/* Actual sparsity of the mask (0 if dense), and the current target of the algorithm. */
double sp_tensor_sparsity(const sp_state *st, int idx);
double sp_tensor_target(const sp_state *st, int idx);
/* "static", "gmp", "set", "rigl", "granet", or "dense" */
const char *sp_tensor_algorithm(const sp_state *st, int idx);
/* Target sparsity at the end of training (plan) and the nonzeros it implies. */
double sp_tensor_final_target(const sp_state *st, int idx);
size_t sp_tensor_final_nnz(const sp_state *st, int idx);

typedef struct sp_stats {
	size_t sparse_numel; /* elements of sparsified tensors */
	size_t sparse_nnz;   /* their kept elements */
	size_t total_numel;  /* elements of all parameters */
	size_t total_nnz;    /* kept elements of all parameters (dense ones count whole) */
	double sparsity;     /* 1 - sparse_nnz / sparse_numel (0 if none) */
	double overall;      /* 1 - total_nnz / total_numel */
} sp_stats;
void sp_get_stats(const sp_state *st, sp_stats *out);

/* One line per parameter: name, shape, algorithm, target, actual sparsity, nnz. */
void sp_print(const sp_state *st, FILE *f);

/* ---- FLOPs (Chinchilla, Hoffmann et al. 2022, appendix F, with per-layer density) --------
 * Counted per sequence of seq_len tokens for the GPT of gpt_params.h; the densities of
 * h.L.attn.qkv.weight, h.L.attn.proj.weight, h.L.mlp.fc.weight, h.L.mlp.proj.weight and
 * wte.weight (embedding and tied logits) are taken from st (st NULL = dense). Training =
 * forward + backward (2x forward); on a dense-gradient step the weight gradients of the
 * sparsified matrices are counted dense. */
typedef struct sp_gpt_dims {
	int n_layer, n_head, n_embd, block_size, vocab_size;
} sp_gpt_dims;

/* The parameter table of that GPT (GPT-2 style, LM head tied to wte), in model order:
 * wte [V, C], wpe [T, C], per layer h.L.ln_1.{weight,bias} [C], h.L.attn.qkv.{weight
 * [3C, C], bias [3C]}, h.L.attn.proj.{weight [C, C], bias [C]}, h.L.ln_2.{weight,bias} [C],
 * h.L.mlp.fc.{weight [4C, C], bias [4C]}, h.L.mlp.proj.{weight [C, 4C], bias [C]}, then
 * ln_f.{weight,bias} [C]. Writes up to cap entries; returns the total count (call with
 * out NULL to size), or CS_ERR_INVALID for bad dims. (host/sparsity/gpt_params.c) */
typedef struct sp_gpt_tensor {
	char name[48];
	int ndim;
	int shape[2];
	size_t numel;
} sp_gpt_tensor;
int sp_gpt_tensors(const sp_gpt_dims *d, sp_gpt_tensor *out, int cap);

/* The tensors the sparsity layer sees for a model's parameter table: every
 * "<prefix>attn.qkv.weight" of shape [3C, C] becomes three [C, C] parts
 * "<prefix>attn.q.weight", ".k.", ".v." (rows [0,C), [C,2C), [2C,3C), contiguous in the
 * row-major fused buffer) with the fused name as alias, each with its own selection,
 * budget, distribution share and mask updates; compute stays fused. Buffers of a part
 * point into the fused ones. out needs room for sp_split_qkv_count(in, n) entries;
 * src[j] is the index in `in` of out[j] and off[j] the element offset of the part in it;
 * names holds the part names (out[j].name points into it; keep it alive with out).
 * Returns the count written. */
typedef char sp_part_name[64];
int sp_split_qkv_count(const sp_param *in, int n);
int sp_split_qkv(const sp_param *in, int n, sp_param *out, int *src, size_t *off,
		 sp_part_name *names);

typedef struct sp_flops {
	double fwd_dense, fwd_sparse;     /* forward FLOPs per sequence */
	double train_dense, train_sparse; /* forward + backward per sequence */
} sp_flops;

int sp_flops_gpt(const sp_state *st, const sp_gpt_dims *d, int seq_len, int dense_grad,
		 sp_flops *out);
/* Account one training iteration of n_seqs sequences (uses sp_wants_dense_grad(step) and
 * the current masks; call before sp_after_optimizer). Cumulative sums live in st and its
 * checkpoint. out (may be NULL) receives this step's totals. */
int sp_flops_step(sp_state *st, long step, const sp_gpt_dims *d, int seq_len, int n_seqs,
		  sp_flops *out);
/* Add a step's totals (sp_flops_step's out) to the cumulative sums again: for a caller
 * that knows the masks and the step's kind are those of that step, without recounting
 * the masks. */
void sp_flops_account(sp_state *st, const sp_flops *f);

typedef struct sp_flops_summary {
	double train_dense, train_sparse; /* cumulative over the run (sp_flops_step) */
	double infer_dense, infer_sparse; /* forward per sequence with the current masks */
	double infer_reduction;           /* infer_dense / infer_sparse */
	double train_reduction;           /* train_dense / train_sparse */
} sp_flops_summary;
int sp_flops_summarize(const sp_state *st, const sp_gpt_dims *d, int seq_len,
		       sp_flops_summary *out);
/* Write the summary as a small JSON object (the run directory's sparsity_flops.json). */
int sp_flops_write_json(const sp_state *st, const sp_gpt_dims *d, int seq_len, FILE *f);

/* ---- checkpoints --------------------------------------------------------------------
 * Format (docs/sparsity.md): magic "CSSPMASK", version, step, seed, schedule states, FLOPs
 * counters, then per tensor: name, numel, target, packed bit mask (LSB first); CRC-32 at
 * the end. Loading requires a state created from the same config and parameter names; it
 * replaces masks and algorithm state and re-applies the masks to the buffers. */
int sp_state_save(const sp_state *st, FILE *f);
int sp_state_load(sp_state *st, FILE *f, char *err, size_t errlen);
/* Buffer variants; *buf is malloc'ed, free() it. */
int sp_state_save_buf(const sp_state *st, uint8_t **buf, size_t *len);
int sp_state_load_buf(sp_state *st, const uint8_t *buf, size_t len, char *err, size_t errlen);

/* Cerebras NaN sideband: export sets w[i] = NaN where mask[i] == 0 (returns the count);
 * import sets mask[i] = isfinite(w[i]) and zeroes non-finite w[i] (returns the kept count). */
size_t sp_nan_export(float *w, const uint8_t *mask, size_t n);
size_t sp_nan_import(float *w, uint8_t *mask, size_t n);
/* Replace the mask of params[idx] (e.g. from sp_nan_import); the target becomes its
 * sparsity; applies it to the buffers. */
int sp_set_mask(sp_state *st, int idx, const uint8_t *mask);

/* ---- iterative pruning, dense fine-tuning -------------------------------------------- */

/* Prune `fraction` of the remaining nonzeros of every sparsified tensor by magnitude (per
 * tensor, or globally if the group's scope is global); targets follow; later updates keep
 * the new level (static). Returns the number of masks changed. */
int sp_prune_remaining(sp_state *st, double fraction);
/* Same with the scope given (SP_PRUNE_PER_TENSOR or SP_PRUNE_GLOBAL over each group's
 * tensors; SP_PRUNE_GROUP_SCOPE: the group's `scope`). */
enum { SP_PRUNE_GROUP_SCOPE = -1, SP_PRUNE_PER_TENSOR = 0, SP_PRUNE_GLOBAL = 1 };
int sp_prune_remaining_scope(sp_state *st, double fraction, int scope);
/* Drop every mask: all tensors dense from now on, no more updates (dense fine-tuning). */
int sp_remove_masks(sp_state *st);

#endif /* CS_SPARSITY_H */
