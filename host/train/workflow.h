/*
 * workflow.h - the sparse-training workflows of `cshost train` that span more than one
 * schedule: iterative magnitude pruning with rewinding (the `imp:` keys) and starting from
 * another run's weights (`model.init_from` with a cshost checkpoint: dense fine-tuning of
 * a sparse pre-training run, or a one-shot prune of a dense one by the run's own sparsity
 * block). docs/sparsity.md ("Workflows") is the user's description.
 *
 * IMP: round 0 trains imp.steps_per_round = S steps (with the sparsity block as given,
 * usually static at 0.0: dense); each round r = 1..imp.rounds first prunes imp.fraction of
 * the remaining nonzeros of every sparsified tensor by magnitude (per tensor or over each
 * group, imp.scope), then rewinds to step k = imp.rewind_step of round 0 (rewind: lr, the
 * learning-rate schedule; rewind: weights, also the weights and AdamW state saved there,
 * masked by the new masks) and trains S - k steps. Step s of the run is position
 * pos(s) = s (round 0) or k + (s - S) mod (S - k) of a round of S steps: the learning rate
 * is the run's warmup+cosine schedule over S steps at pos(s), and under rewind: weights
 * AdamW's bias correction counts pos(s) + 1 steps. The prune of round r happens at the
 * start of its first step, so a checkpoint saved at the round boundary is the state
 * before it, and a resumed run prunes exactly as an uninterrupted one.
 *
 * Not here: the mask arithmetic (host/sparsity), the training loop (train.c).
 */
#ifndef CS_TRAIN_WORKFLOW_H
#define CS_TRAIN_WORKFLOW_H

#include <stdio.h>

#include "train/config.h"

struct trainer;

/* The learning rate of step s (0-based) and the step count AdamW's bias correction uses. */
double wf_lr(const train_config *c, long s);
long wf_adam_step(const train_config *c, long s);
/* IMP round of step s (0-based); 0 when imp is off. */
int wf_round(const train_config *c, long s);
/* The first step of round r (r <= rounds + 1; rounds + 1 gives train.steps). */
long wf_round_start(const train_config *c, int r);
/* The pruning fraction per round (imp.fraction, or derived from imp.sparsity). */
double wf_imp_fraction(const train_config *c);

/* model.init_from: load weights from a GPT-2 safetensors file, a cshost checkpoint, or a
 * run directory (its newest ckpt-*.bin). Only weights: a source's optimizer state, step
 * and sparsity state are not taken, and NaN-marked pruned weights (Cerebras sideband) are
 * read as zeros. Called before the run's masks are built, so a sparsity block with
 * init_method topk prunes the loaded weights one-shot. */
int wf_init_from(struct trainer *t, const char *path, char *err, size_t errlen);

/* Before step t->step of a run in dir: save the rewind point (lead: the rank that writes
 * the run directory; every rank of a data-parallel run reads it back from there), or
 * prune and rewind at a round boundary. Lines for the user go to out. */
int wf_before_step(struct trainer *t, const char *dir, int lead, FILE *out, char *err,
		   size_t errlen);
/* After a step: at the end of a round, evaluate (on every rank), and where mf is not NULL
 * (the rank that writes the run directory) write its checkpoint round-RR.bin and a line
 * to metrics (mf) and to dir/rounds.jsonl. */
int wf_after_step(struct trainer *t, const char *dir, FILE *mf, FILE *out, char *err,
		  size_t errlen);

#endif /* CS_TRAIN_WORKFLOW_H */
