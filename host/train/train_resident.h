/*
 * train_resident.h - the resident training step (docs/resident-step.md): the GPT's blocks
 * run on the device with the activations in PE SRAM for the whole step.
 *
 * The residual stream x (fp32, B) and each block's backward stash (A, bf16) stay in the
 * PEs, split by token (csd_write_tokens). Per block the device runs ln1 (vec_ln_fwd), the
 * qkv kernel, q, k, v go up as bf16 (the host adds their bias), the host runs attention,
 * its output comes down into A, the proj kernel accumulates onto x, then ln2, per fc tile
 * the kernel and one vec_fc call (bias, stash, GELU), fc2 accumulating onto x. The backward
 * mirrors it with ln_bwd, vec_fc's GELU and GELU backward (with the bias gradient and the
 * packed dY), vec_cvt's conversions of the resident gradient, the kernels on regions and
 * csd_wgrad_region for every projection's dW (CSR order, scattered into the dense
 * gradient). Layernorm and bias gradients come back as per-PE partials, summed on the host
 * in PE order. The embeddings, the final layernorm, the LM head, the loss, attention's
 * core and qkv's bias (forward, and its gradient from the dq, dk, dv the host computed)
 * stay on the host. CS_TR_PROFILE=1 prints each program call site's device cycles and
 * each call site's exposed link cycles (the act_cycles counter it adds).
 *
 * Not here: the projections' nonzero lists and their refresh (train_device.h), the
 * optimizer. tr_forward / tr_backward stand in for gpt_forward / gpt_backward and leave
 * the model's host activations (encoded, qkv, att, atty, the last block's output, lnf,
 * logits, probs, losses) as those do; the other per-block activations exist only on the
 * device.
 */
#ifndef CS_TRAIN_TRAIN_RESIDENT_H
#define CS_TRAIN_TRAIN_RESIDENT_H

#include <stddef.h>
#include <stdint.h>

#include "train/gpt.h"
#include "train/train_device.h"

typedef struct train_resident train_resident;

/* The backward stash a layout keeps (docs/resident-step.md): all of it (y and z of both
 * layernorms, the attention output, GELU and GELU' of the fc tiles: 13 C a token and
 * block), the design's 7 C (z of both layernorms, the attention output, fc's bf16
 * pre-activation; y rebuilt from z, GELU from the pre-activation), or 5 C with fc's
 * forward run again in the backward. tr_open takes the first that fits; the three give
 * the same bits. */
enum tr_stash { TR_FULL, TR_SMALL, TR_RECOMPUTE };

/* Per-PE SRAM the resident step of a model of n_layer blocks and n_embd channels takes on
 * a mesh of pes PEs for `tokens` tokens a step (A: bf16 elements, B: 32-bit words): with
 * the given stash, or the least of the three. */
void tr_sram_need_stash(int n_layer, int n_embd, int pes, int tokens, enum tr_stash kind,
			uint64_t *a_words, uint64_t *b_words);
void tr_sram_need(int n_layer, int n_embd, int pes, int tokens, uint64_t *a_words,
		  uint64_t *b_words);
/* Lay out the step of m (batches up to m->B x m->T) on d's device. CS_ERR_RANGE with a
 * message naming the sizes needed when the tokens and the stash do not fit its SRAM. */
int tr_open(train_resident **out, train_device *d, gpt *m, char *err, size_t errlen);
void tr_close(train_resident *r);
/* As gpt_forward (targets may be NULL) / gpt_backward, the blocks on the device. */
int tr_forward(train_resident *r, const int *inputs, const int *targets, int B, int T,
	       float *loss);
int tr_backward(train_resident *r, float loss_scale);
const char *tr_last_error(train_resident *r);

#endif /* CS_TRAIN_TRAIN_RESIDENT_H */
