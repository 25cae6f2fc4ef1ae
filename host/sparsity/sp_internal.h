/*
 * sp_internal.h - data structures shared by the files of host/sparsity (not installed, not
 * for the trainer: it uses the opaque API of sparsity.h).
 */
#ifndef CS_SP_INTERNAL_H
#define CS_SP_INTERNAL_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sparsity/sparsity.h"

enum sp_algo { SP_STATIC = 0, SP_GMP, SP_SET, SP_RIGL, SP_GRANET, SP_NALGO };
enum sp_init { SP_INIT_DEFAULT = 0, SP_INIT_RANDOM, SP_INIT_TOPK, SP_INIT_FROM_ZEROS };
enum sp_dist { SP_DIST_UNIFORM = 0, SP_DIST_ER, SP_DIST_ERK };
enum sp_scope { SP_SCOPE_PER_TENSOR = 0, SP_SCOPE_GLOBAL };
enum sp_tiebreak { SP_TB_NONE = 0, SP_TB_FIRST, SP_TB_RANDOM };

/* Hyperparameter schedule (sparsity, drop fraction): value as a function of t. */
enum sp_sched_type {
	SP_SCHED_NONE = 0, /* not given */
	SP_SCHED_CONSTANT, /* value */
	SP_SCHED_LINEAR,   /* init + slope*t */
	SP_SCHED_EXP,      /* final + (init-final)*exp(gamma*t) */
	SP_SCHED_POWER,    /* init*beta^t */
	SP_SCHED_COSINE,   /* o + a*cos(pi*t/half_period), o = (init+minimum)/2, a = init-o */
	SP_SCHED_CYCLING,  /* values[idx], idx advances on every update step */
	SP_SCHED_POLY,     /* final + (initial-final)*(1-p)^power, p = clip((t-begin)/(end-begin)) */
};

typedef struct sp_sched {
	int type;
	double value, init, slope, gamma, final, beta, half_period, minimum;
	double initial, begin, end, power;
	int n_values;
	double *values;
	int line, col; /* where it was given (1-based), for messages */
} sp_sched;

/* Update schedule: explicit steps, or every freq steps in [start, stop) (stop < 0: none). */
typedef struct sp_update {
	int given;
	long freq, start, stop;
	int n_steps;
	long *steps;
} sp_update;

typedef struct sp_pattern {
	char *text;
	int is_glob; /* param_filter glob (fnmatch, full name) vs regex (regexec, substring) */
	regex_t re;
	int line, col;
} sp_pattern;

typedef struct sp_group {
	char path[96]; /* "sparsity", "sparsity[1]", "sparsity.param_name_patterns['x']" */
	int line, col;
	int disabled; /* sparsity: null */
	int algo;
	int init_method;
	sp_sched sparsity;
	sp_sched drop;
	sp_update update;
	int tiebreak;
	double tiebreak_eps;
	int balance_out, balance_in;
	int distribution;
	double erk_power;
	int n_dense;
	char **dense_layers; /* globs forced dense */
	int scope;
	int has_seed;
	uint64_t seed;
	int skip_opt;
	double death_rate, death_rate_min;
	int n_patterns; /* 0: the default heuristic */
	sp_pattern *patterns;
} sp_group;

struct sp_config {
	char *file;
	int dense;
	int n_groups;
	sp_group *groups;
};

/* flags of a tensor (saved in checkpoints) */
#define SP_TF_FROZEN 1u  /* sp_prune_remaining / sp_set_mask: no more algorithm updates */
#define SP_TF_REMOVED 2u /* sp_remove_masks: dense from now on */

typedef struct sp_tensor {
	int idx; /* trainer index */
	char *name;
	int ndim, shape[4];
	size_t numel;
	float *w, *g, *m, *v;
	int group;        /* -1: not sparsified */
	int forced_dense; /* in dense_layers: part of the group's budget, mask NULL */
	uint8_t *mask;    /* [numel] or NULL */
	uint8_t *scratch; /* [numel] work mask */
	float *dense_grad; /* RigL/GraNet: copy of the dense gradient of the update step */
	int have_dense_grad;
	int grad_clean;   /* g is zero outside the mask already (sp_set_grad_clean) */
	uint64_t name_hash;
	double target, final_target;
	int changed;
	size_t flips;     /* entries the last update changed (sp_mask_commit) */
	unsigned flags;
	int rows; /* balanced groups: G rows, else 1 */
	int rows_in; /* 1: rows are input-column groups (transpose view) */
} sp_tensor;

/* a[k] = +0 unless it is +0 already. Reading a page nothing has written maps no memory,
 * writing it would: a dense range the trainer never uses (packed gradients and moments)
 * stays out of the resident set. */
static inline void sp_zero_f(float *a, size_t k)
{
	uint32_t u;
	if (!a)
		return;
	memcpy(&u, &a[k], sizeof u);
	if (u)
		a[k] = 0.0f;
}

typedef struct sp_gstate {
	int n;      /* tensors of the group (sorted by name) */
	int *tix;   /* indices into st->t */
	int cyc_sparsity, cyc_drop;
} sp_gstate;

struct sp_state {
	const sp_config *cfg;
	int n;
	sp_tensor *t; /* in trainer order */
	sp_gstate *gs;
	uint64_t seed;
	long step;
	long total_steps;
	long grads_masked; /* the step whose gradients sp_mask_grads masked, else -1 */
	int zero_preserving; /* sp_set_zero_preserving_optimizer */
	int plan_only;
	double flops_train_dense, flops_train_sparse;
};

/* ---- select.c: hashing, counter-based random numbers, top-k ---- */
uint64_t sp_fnv1a(const char *s);
uint64_t sp_mix64(uint64_t z);
enum { SP_TAG_INIT = 1, SP_TAG_GROW = 2, SP_TAG_TIEBREAK = 3 };
uint64_t sp_stream_key(uint64_t seed, uint64_t name_hash, uint32_t tag, uint64_t t);
/* U[0,1) number i of the stream */
double sp_uniform(uint64_t key, uint64_t i);
/* kept count for sparsity s on n elements: n - floor(s*n + 0.5), in double */
size_t sp_keep_count(double s, size_t n);

typedef struct sp_cand {
	double score;
	size_t flat; /* flat index (tie-break: lower wins) */
	int tensor;  /* for global ranking: position in the name-sorted group (lower wins) */
} sp_cand;
/* Sort by score descending, then tensor ascending, then flat ascending; stable and total. */
void sp_cand_sort(sp_cand *c, size_t n);

/* ---- schedule.c ---- */
/* value at t; cycling uses *idx (not advanced) */
double sp_sched_value(const sp_sched *s, long t, int idx);
int sp_update_at(const sp_update *u, long t);
void sp_sched_free(sp_sched *s);

/* ---- distribution.c ---- */
/* Per-tensor sparsity for group target s. n tensors with shapes; forced[i] = in dense_layers.
 * out[i] = sparsity of tensor i. */
int sp_distribute(int dist, double power, double s, int n, const int *ndim, const int (*shape)[4],
		  const size_t *numel, const int *forced, double *out);

/* ---- masks.c: per-tensor mask algorithms ---- */
size_t sp_row_len(const sp_tensor *t);
size_t sp_row_flat(const sp_tensor *t, int row, size_t j);
size_t sp_mask_count(const sp_tensor *t);
/* tie-break addition to a magnitude score */
double sp_tb(const sp_group *g, const sp_tensor *t, uint64_t seed, long tstep, size_t flat);
/* Build an initial mask at sparsity s (into t->scratch). */
int sp_mask_init(const sp_group *g, sp_tensor *t, uint64_t seed, double s);
/* Magnitude prune to sparsity s keeping current-mask entries first (into scratch). */
int sp_mask_magnitude(const sp_group *g, sp_tensor *t, uint64_t seed, long tstep, double s);
/* Drop and grow (into scratch): per row, drop n_drop of the kept (smallest |w|), keep at most
 * the target, grow to the target among non-kept by random (SET) or |dense grad| (RigL).
 * ceil_drop: GraNet's ceil(r*nnz) and nnz preserved (target ignored). */
int sp_mask_drop_grow(const sp_group *g, sp_tensor *t, uint64_t seed, long tstep, double s,
		      double f, int by_grad, int granet);
/* Make scratch the mask: zero w, m, v where the mask changed; returns 1 if it changed. */
int sp_mask_commit(sp_tensor *t);
/* Global magnitude ranking over a group (GMP/GraNet scope global), into scratch. */
int sp_mask_global_magnitude(const sp_group *g, sp_state *st, const sp_gstate *gs, long tstep,
			     double s);

#endif /* CS_SP_INTERNAL_H */
