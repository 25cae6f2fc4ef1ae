/*
 * sparsity.c - the life of a sparse training run: selecting tensors from the config,
 * building the t = 0 masks, the per-iteration calls of sparsity.h (gradient masking, the
 * dense-gradient copy, optimizer skip, re-masking and mask updates per algorithm), queries
 * for logging, iterative pruning and mask removal. Mask arithmetic lives in masks.c, config
 * parsing in config.c, checkpoints in checkpoint.c, FLOPs in flops.c.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparsity/sp_internal.h"

static const char *const algo_names[SP_NALGO] = { "static", "gmp", "set", "rigl", "granet" };

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Default rule (spec 3.3) plus our GPT's embedding names (docs/sparsity.md, deviations). */
static int default_selected(const sp_param *p)
{
	static const char *const excl[] = { "embedding", "norm", "lm_head", "pe_helper", "wte",
					    "wpe" };
	if (p->ndim <= 1)
		return 0;
	char low[256];
	size_t i = 0;
	for (; p->name[i] && i < sizeof low - 1; i++)
		low[i] = (char)tolower((unsigned char)p->name[i]);
	low[i] = 0;
	for (size_t k = 0; k < sizeof excl / sizeof excl[0]; k++)
		if (strstr(low, excl[k]))
			return 0;
	return 1;
}

static int pattern_match(const sp_pattern *pt, const char *name)
{
	if (pt->is_glob)
		return fnmatch(pt->text, name, 0) == 0;
	return regexec(&pt->re, name, 0, NULL, 0) == 0;
}

/* Whether `match` selects params[i]: by its name, or by its alias when it selects none of
 * the names of the parameters sharing that alias (sp_param.alias). */
static int selects(int (*match)(const void *ctx, const char *name), const void *ctx,
		   const sp_param *params, int n, int i)
{
	const sp_param *p = &params[i];
	if (match(ctx, p->name))
		return 1;
	if (!p->alias || !match(ctx, p->alias))
		return 0;
	for (int j = 0; j < n; j++)
		if (params[j].alias && !strcmp(params[j].alias, p->alias) &&
		    match(ctx, params[j].name))
			return 0;
	return 1;
}

static int match_pattern(const void *ctx, const char *name)
{
	return pattern_match(ctx, name);
}

static int match_glob(const void *ctx, const char *name)
{
	return fnmatch(ctx, name, 0) == 0;
}

static int group_matches(const sp_group *g, const sp_param *params, int n, int i)
{
	if (g->n_patterns == 0)
		return default_selected(&params[i]);
	for (int k = 0; k < g->n_patterns; k++)
		if (selects(match_pattern, &g->patterns[k], params, n, i))
			return 1;
	return 0;
}

static uint64_t group_seed(const sp_state *st, const sp_group *g)
{
	return g->has_seed ? g->seed : st->seed;
}

static int is_dynamic(int algo)
{
	return algo != SP_STATIC;
}

/* The GraNet pruning window [begin, end] (inclusive) when its sparsity is a cubic ramp. */
static int granet_prunes(const sp_group *g, long t)
{
	if (g->sparsity.type != SP_SCHED_POLY)
		return 1;
	return t >= (long)g->sparsity.begin && t <= (long)g->sparsity.end;
}

static int granet_regrows(const sp_group *g, long t)
{
	if (g->sparsity.type != SP_SCHED_POLY)
		return 1;
	return t >= (long)g->sparsity.begin;
}

static int group_updates(const sp_group *g, long t)
{
	if (g->disabled || !is_dynamic(g->algo) || t < 1 || !sp_update_at(&g->update, t))
		return 0;
	if (g->algo == SP_GRANET)
		return granet_prunes(g, t) || granet_regrows(g, t);
	return 1;
}

/* Per-tensor sparsities of group gi for group target s (into out, indexed like gs->tix). */
static int group_distribute(const sp_state *st, int gi, double s, double *out)
{
	const sp_group *g = &st->cfg->groups[gi];
	const sp_gstate *gs = &st->gs[gi];
	int n = gs->n, rc = CS_ERR_NO_MEM;
	int *nd = malloc(sizeof(int) * (size_t)(n + 1));
	int(*sh)[4] = malloc(sizeof(*sh) * (size_t)(n + 1));
	size_t *ne = malloc(sizeof(size_t) * (size_t)(n + 1));
	int *forced = malloc(sizeof(int) * (size_t)(n + 1));
	if (nd && sh && ne && forced) {
		for (int i = 0; i < n; i++) {
			const sp_tensor *t = &st->t[gs->tix[i]];
			nd[i] = t->ndim;
			memcpy(sh[i], t->shape, sizeof sh[i]);
			ne[i] = t->numel;
			forced[i] = t->forced_dense;
		}
		rc = sp_distribute(g->distribution, g->erk_power, s, n, nd, (const int(*)[4])sh, ne,
				   forced, out);
	}
	free(nd);
	free(sh);
	free(ne);
	free(forced);
	return rc;
}

static double drop_fraction(const sp_group *g, long t, int idx)
{
	double f = sp_sched_value(&g->drop, t, idx);
	return f < 0 ? 0 : f > 1 ? 1 : f;
}

static double death_rate(const sp_state *st, const sp_group *g, long t)
{
	double T = (double)st->total_steps;
	if (T <= 0)
		return g->death_rate;
	if ((double)t >= T)
		return g->death_rate_min;
	return g->death_rate_min +
	       (g->death_rate - g->death_rate_min) * (1 + cos(M_PI * (double)t / T)) / 2;
}

/* Last update step of the group at or before the horizon (-1 if unknown). */
static long last_update(const sp_state *st, const sp_group *g, long *count)
{
	const sp_update *u = &g->update;
	long horizon = st->total_steps > 0 ? st->total_steps : -1;
	*count = 0;
	if (u->n_steps > 0) {
		long last = -1;
		for (int i = 0; i < u->n_steps; i++)
			if (horizon < 0 || u->steps[i] <= horizon) {
				(*count)++;
				if (u->steps[i] > last)
					last = u->steps[i];
			}
		return last;
	}
	long end = u->stop >= 0 ? u->stop - 1 : horizon;
	if (horizon >= 0 && end > horizon)
		end = horizon;
	if (end < u->start || u->freq <= 0)
		return end < 0 ? -1 : (*count = 0, -1);
	*count = (end - u->start) / u->freq + 1;
	return u->start + ((end - u->start) / u->freq) * u->freq;
}

static double group_final_s(const sp_state *st, int gi, double s0)
{
	const sp_group *g = &st->cfg->groups[gi];
	const sp_sched *s = &g->sparsity;
	if (g->disabled)
		return 0;
	if (g->algo == SP_STATIC || s->type == SP_SCHED_CONSTANT)
		return s->value;
	if (s->type == SP_SCHED_POLY)
		return s->final;
	long count;
	long last = last_update(st, g, &count);
	if (s->type == SP_SCHED_CYCLING)
		return count > 0 ? sp_sched_value(s, last, (int)(count - 1)) : s0;
	if (last < 0)
		return s->type == SP_SCHED_EXP ? s->final : s0;
	return sp_sched_value(s, last, 0);
}

/* Commit scratch -> mask for every tensor of the group; count changes. */
static int commit_group(sp_state *st, int gi)
{
	const sp_gstate *gs = &st->gs[gi];
	int n = 0;
	for (int i = 0; i < gs->n; i++) {
		sp_tensor *t = &st->t[gs->tix[i]];
		if (!t->mask || (t->flags & SP_TF_FROZEN))
			continue;
		if (sp_mask_commit(t)) {
			t->changed = 1;
			n++;
		}
	}
	return n;
}

static void set_targets_actual(sp_state *st, int gi)
{
	const sp_gstate *gs = &st->gs[gi];
	for (int i = 0; i < gs->n; i++) {
		sp_tensor *t = &st->t[gs->tix[i]];
		if (t->mask)
			t->target = 1.0 - (double)sp_mask_count(t) / (double)t->numel;
	}
}

/* Magnitude pruning of a whole group to group target s, into the scratch masks. */
static int group_magnitude_scratch(sp_state *st, int gi, long t, double s)
{
	const sp_group *g = &st->cfg->groups[gi];
	const sp_gstate *gs = &st->gs[gi];
	uint64_t seed = group_seed(st, g);
	if (g->scope == SP_SCOPE_GLOBAL)
		return sp_mask_global_magnitude(g, st, gs, t, s);
	double *sl = malloc(sizeof(double) * (size_t)(gs->n + 1));
	if (!sl)
		return CS_ERR_NO_MEM;
	int rc = group_distribute(st, gi, s, sl);
	for (int i = 0; rc >= 0 && i < gs->n; i++) {
		sp_tensor *tt = &st->t[gs->tix[i]];
		if (!tt->mask || (tt->flags & SP_TF_FROZEN))
			continue;
		rc = sp_mask_magnitude(g, tt, seed, t, sl[i]);
		tt->target = sl[i];
	}
	free(sl);
	return rc;
}

/* GMP update, GraNet prune: magnitude pruning of a whole group, committed. */
static int group_magnitude(sp_state *st, int gi, long t, double s)
{
	int rc = group_magnitude_scratch(st, gi, t, s);
	if (rc < 0)
		return rc;
	rc = commit_group(st, gi);
	if (st->cfg->groups[gi].scope == SP_SCOPE_GLOBAL)
		set_targets_actual(st, gi);
	return rc;
}

/* ER/ERK give each tensor a density proportional to raw_l; where that is over 1 the tensor
 * is made dense and the rest carry its share. A large erk_power_scale (or dense_layers
 * holding most of the weights) can leave nothing to carry it: the group would realise
 * another sparsity than asked, or prune whole tensors. Refuse that, saying what would
 * happen, instead of training it. */
static int check_distribution(const sp_state *st, int gi, double s, const double *sl,
			      char *err, size_t errlen)
{
	const sp_group *g = &st->cfg->groups[gi];
	const sp_gstate *gs = &st->gs[gi];
	if (g->distribution == SP_DIST_UNIFORM || g->scope == SP_SCOPE_GLOBAL || s <= 0)
		return 0;
	double zeros = 0, total = 0;
	const char *empty = NULL;
	for (int i = 0; i < gs->n; i++) {
		const sp_tensor *t = &st->t[gs->tix[i]];
		double x = sl[i];
		if (!isfinite(x))
			x = 0;
		zeros += x * (double)t->numel;
		total += (double)t->numel;
		if (!t->forced_dense && floor(x * (double)t->numel + 0.5) >= (double)t->numel &&
		    s < 1.0 && !empty)
			empty = t->name;
	}
	double got = total > 0 ? zeros / total : 0;
	const char *dist = g->distribution == SP_DIST_ERK ? "erk" : "er";
	if (fabs(got - s) > 0.005 || !isfinite(got)) {
		set_err(err, errlen,
			"%s:%d:%d: %s: sparsity_distribution %s (erk_power_scale %g) cannot reach "
			"sparsity %g over these tensors: they would train at %.4f; lower "
			"erk_power_scale, use fewer dense_layers or sparsity_distribution: uniform",
			st->cfg->file, g->line, g->col, g->path, dist, g->erk_power, s, got);
		return CS_ERR_CONFIG;
	}
	if (empty) {
		set_err(err, errlen,
			"%s:%d:%d: %s: sparsity_distribution %s (erk_power_scale %g) at sparsity %g "
			"would prune every weight of %s; lower erk_power_scale or use "
			"sparsity_distribution: uniform",
			st->cfg->file, g->line, g->col, g->path, dist, g->erk_power, s, empty);
		return CS_ERR_CONFIG;
	}
	return 0;
}

/* t = 0: masks from init_method at sparsity s0 (or all ones when not an update step). */
static int group_init(sp_state *st, int gi, char *err, size_t errlen)
{
	const sp_group *g = &st->cfg->groups[gi];
	sp_gstate *gs = &st->gs[gi];
	if (g->disabled || gs->n == 0)
		return 0;
	int starts_sparse = g->algo == SP_STATIC || g->algo == SP_GRANET || sp_update_at(&g->update, 0);
	double s0 = 0;
	if (starts_sparse) {
		s0 = sp_sched_value(&g->sparsity, 0, 0);
		if (sp_update_at(&g->update, 0) && is_dynamic(g->algo)) {
			gs->cyc_sparsity = 1;
			if (g->drop.type == SP_SCHED_CYCLING)
				gs->cyc_drop = 1;
		}
	}
	double *sl = malloc(sizeof(double) * (size_t)(gs->n + 1));
	if (!sl)
		return CS_ERR_NO_MEM;
	int rc = group_distribute(st, gi, s0, sl);
	double sf = group_final_s(st, gi, s0);
	double *fl = malloc(sizeof(double) * (size_t)(gs->n + 1));
	if (rc >= 0 && !fl)
		rc = CS_ERR_NO_MEM;
	if (rc >= 0)
		rc = group_distribute(st, gi, sf, fl);
	if (rc >= 0)
		rc = check_distribution(st, gi, s0, sl, err, errlen);
	if (rc >= 0)
		rc = check_distribution(st, gi, sf, fl, err, errlen);
	for (int i = 0; rc >= 0 && i < gs->n; i++) {
		sp_tensor *t = &st->t[gs->tix[i]];
		t->target = sl[i];
		t->final_target = fl[i];
	}
	free(fl);
	if (rc < 0 || st->plan_only || !starts_sparse) {
		free(sl);
		return rc;
	}
	uint64_t seed = group_seed(st, g);
	if (g->scope == SP_SCOPE_GLOBAL && g->init_method == SP_INIT_TOPK) {
		free(sl);
		return group_magnitude(st, gi, 0, s0);
	}
	for (int i = 0; rc >= 0 && i < gs->n; i++) {
		sp_tensor *t = &st->t[gs->tix[i]];
		if (!t->mask)
			continue;
		if (g->init_method == SP_INIT_FROM_ZEROS && !t->w) {
			set_err(err, errlen, "%s: init_method from_zeros needs weights", g->path);
			rc = CS_ERR_INVALID;
			break;
		}
		rc = sp_mask_init(g, t, seed, sl[i]);
		if (rc >= 0 && sp_mask_commit(t))
			t->changed = 1;
		if (g->init_method == SP_INIT_FROM_ZEROS)
			t->target = 1.0 - (double)sp_mask_count(t) / (double)t->numel;
	}
	free(sl);
	return rc;
}

static int name_cmp_idx(const void *a, const void *b, void *ctx)
{
	const sp_state *st = ctx;
	return strcmp(st->t[*(const int *)a].name, st->t[*(const int *)b].name);
}

void sp_free(sp_state *st)
{
	if (!st)
		return;
	for (int i = 0; i < st->n; i++) {
		free(st->t[i].name);
		free(st->t[i].mask);
		free(st->t[i].scratch);
		free(st->t[i].dense_grad);
	}
	if (st->gs && st->cfg)
		for (int g = 0; g < st->cfg->n_groups; g++)
			free(st->gs[g].tix);
	free(st->gs);
	free(st->t);
	free(st);
}

int sp_create(sp_state **out, const sp_config *cfg, const sp_param *params, int n_params,
	      uint64_t seed, long total_steps, char *err, size_t errlen)
{
	*out = NULL;
	if (!cfg || (n_params > 0 && !params) || n_params < 0) {
		set_err(err, errlen, "sp_create: invalid arguments");
		return CS_ERR_INVALID;
	}
	sp_state *st = calloc(1, sizeof *st);
	if (!st)
		return CS_ERR_NO_MEM;
	st->grads_masked = -1;
	st->cfg = cfg;
	st->seed = seed;
	st->total_steps = total_steps;
	st->n = n_params;
	st->t = calloc((size_t)n_params + 1, sizeof *st->t);
	st->gs = calloc((size_t)cfg->n_groups + 1, sizeof *st->gs);
	int rc = CS_ERR_NO_MEM;
	if (!st->t || !st->gs)
		goto out_free;
	st->plan_only = 1;
	for (int i = 0; i < n_params; i++)
		if (params[i].w)
			st->plan_only = 0;
	for (int i = 0; i < n_params; i++) {
		const sp_param *p = &params[i];
		sp_tensor *t = &st->t[i];
		size_t numel = 1;
		if (!p->name || p->ndim < 1 || p->ndim > 4) {
			set_err(err, errlen, "sp_create: parameter %d has no name or a bad ndim", i);
			rc = CS_ERR_INVALID;
			goto out_free;
		}
		for (int d = 0; d < p->ndim; d++)
			numel *= (size_t)(p->shape[d] > 0 ? p->shape[d] : 0);
		if (numel != p->numel || numel == 0) {
			set_err(err, errlen, "sp_create: %s: numel %zu does not match its shape",
				p->name, p->numel);
			rc = CS_ERR_INVALID;
			goto out_free;
		}
		t->idx = i;
		t->name = strdup(p->name);
		if (!t->name)
			goto out_free;
		t->ndim = p->ndim;
		memcpy(t->shape, p->shape, sizeof t->shape);
		t->numel = p->numel;
		t->w = p->w;
		t->g = p->grad;
		t->m = p->adam_m;
		t->v = p->adam_v;
		t->name_hash = sp_fnv1a(p->name);
		t->rows = 1;
		t->group = -1;
		if (!st->plan_only && !p->w) {
			set_err(err, errlen, "sp_create: %s has no weight buffer", p->name);
			rc = CS_ERR_INVALID;
			goto out_free;
		}
		for (int g = 0; g < cfg->n_groups; g++)
			if (group_matches(&cfg->groups[g], params, n_params, i)) {
				t->group = g;
				break;
			}
	}
	/* every pattern must match some parameter (2.0 semantics; catches typos) */
	for (int g = 0; g < cfg->n_groups; g++) {
		const sp_group *gr = &cfg->groups[g];
		for (int k = 0; k < gr->n_patterns; k++) {
			int hit = 0;
			for (int i = 0; i < n_params && !hit; i++)
				hit = selects(match_pattern, &gr->patterns[k], params, n_params, i);
			if (!hit) {
				set_err(err, errlen, "%s:%d:%d: %s.%s: '%s' matches no parameter",
					cfg->file, gr->patterns[k].line, gr->patterns[k].col, gr->path,
					gr->patterns[k].is_glob ? "param_filter" : "param_name_patterns",
					gr->patterns[k].text);
				rc = CS_ERR_CONFIG;
				goto out_free;
			}
		}
	}
	for (int i = 0; i < n_params; i++) {
		sp_tensor *t = &st->t[i];
		if (t->group < 0)
			continue;
		const sp_group *g = &cfg->groups[t->group];
		if (g->disabled) {
			t->group = -1;
			continue;
		}
		for (int k = 0; k < g->n_dense; k++)
			if (selects(match_glob, g->dense_layers[k], params, n_params, i))
				t->forced_dense = 1;
		int G = g->balance_out ? g->balance_out : g->balance_in;
		if (G > 1) {
			int dim = g->balance_out ? 0 : t->ndim - 1;
			if (t->ndim < 2 || t->shape[dim] % G) {
				set_err(err, errlen,
					"%s:%d:%d: %s.%s: %d does not divide dimension %d of %s", cfg->file,
					g->line, g->col, g->path,
					g->balance_out ? "balance_out_groups" : "balance_in_groups", G, dim,
					t->name);
				rc = CS_ERR_CONFIG;
				goto out_free;
			}
			t->rows = G;
			t->rows_in = !g->balance_out;
		}
		sp_gstate *gs = &st->gs[t->group];
		int *nt = realloc(gs->tix, sizeof(int) * (size_t)(gs->n + 1));
		if (!nt)
			goto out_free;
		gs->tix = nt;
		gs->tix[gs->n++] = i;
		if (!st->plan_only && !t->forced_dense) {
			t->mask = malloc(t->numel);
			t->scratch = malloc(t->numel);
			if (!t->mask || !t->scratch)
				goto out_free;
			memset(t->mask, 1, t->numel);
			if (g->algo == SP_RIGL || g->algo == SP_GRANET) {
				t->dense_grad = calloc(t->numel, sizeof(float));
				if (!t->dense_grad)
					goto out_free;
			}
		}
	}
	for (int g = 0; g < cfg->n_groups; g++)
		if (st->gs[g].n > 1)
			qsort_r(st->gs[g].tix, (size_t)st->gs[g].n, sizeof(int), name_cmp_idx, st);
	for (int g = 0; g < cfg->n_groups; g++) {
		rc = group_init(st, g, err, errlen);
		if (rc < 0)
			goto out_free;
	}
	if (!st->plan_only)
		sp_apply(st);
	*out = st;
	return 0;
out_free:
	if (rc == CS_ERR_NO_MEM)
		set_err(err, errlen, "sp_create: out of memory");
	sp_free(st);
	return rc;
}

int sp_apply(sp_state *st)
{
	if (!st || st->plan_only)
		return CS_ERR_INVALID;
	for (int i = 0; i < st->n; i++) {
		sp_tensor *t = &st->t[i];
		if (!t->mask)
			continue;
		const uint8_t *mk = t->mask;
		for (size_t k = 0; k < t->numel; k++)
			t->w[k] = mk[k] ? t->w[k] : 0.0f;
		/* only where not zero already (sp_zero_f): an unwritten range stays unmapped */
		float *const other[3] = { t->g, t->m, t->v };
		for (int o = 0; o < 3; o++)
			if (other[o])
				for (size_t k = 0; k < t->numel; k++)
					if (!mk[k])
						sp_zero_f(other[o], k);
	}
	return 0;
}

int sp_is_update_step(const sp_state *st, long t)
{
	if (!st)
		return 0;
	for (int g = 0; g < st->cfg->n_groups; g++)
		if (st->gs[g].n > 0 && group_updates(&st->cfg->groups[g], t))
			return 1;
	return 0;
}

long sp_step(const sp_state *st)
{
	return st ? st->step : 0;
}

int sp_wants_dense_grad(const sp_state *st, long step)
{
	if (!st || st->plan_only)
		return 0;
	for (int g = 0; g < st->cfg->n_groups; g++) {
		const sp_group *gr = &st->cfg->groups[g];
		if (st->gs[g].n == 0 || (gr->algo != SP_RIGL && gr->algo != SP_GRANET))
			continue;
		if (gr->algo == SP_GRANET && !granet_regrows(gr, step + 1))
			continue;
		if (!group_updates(gr, step + 1))
			continue;
		for (int i = 0; i < st->gs[g].n; i++) {
			const sp_tensor *t = &st->t[st->gs[g].tix[i]];
			if (t->mask && !(t->flags & SP_TF_FROZEN))
				return 1;
		}
	}
	return 0;
}

int sp_mask_grads(sp_state *st, long step)
{
	if (!st || st->plan_only)
		return CS_ERR_INVALID;
	int dense = sp_wants_dense_grad(st, step);
	for (int i = 0; i < st->n; i++) {
		sp_tensor *t = &st->t[i];
		int clean = t->grad_clean && !dense;
		t->grad_clean = 0;
		if (!t->mask)
			continue;
		if (!t->g)
			return CS_ERR_INVALID;
		if (dense && t->dense_grad) {
			memcpy(t->dense_grad, t->g, t->numel * sizeof(float));
			t->have_dense_grad = 1;
		}
		if (clean)
			continue;
		const uint8_t *mk = t->mask;
		float *g = t->g;
		for (size_t k = 0; k < t->numel; k++)
			g[k] = mk[k] ? g[k] : 0.0f;
	}
	st->grads_masked = step;
	return 0;
}

void sp_set_zero_preserving_optimizer(sp_state *st, int on)
{
	if (st)
		st->zero_preserving = on;
}

void sp_set_grad_clean(sp_state *st, int idx)
{
	if (st && idx >= 0 && idx < st->n)
		st->t[idx].grad_clean = 1;
}

int sp_skip_optimizer(const sp_state *st, long step)
{
	if (!st || st->plan_only)
		return 0;
	for (int g = 0; g < st->cfg->n_groups; g++) {
		const sp_group *gr = &st->cfg->groups[g];
		if (st->gs[g].n > 0 && gr->skip_opt && group_updates(gr, step + 1))
			return 1;
	}
	return 0;
}

static int group_update(sp_state *st, int gi, long t)
{
	const sp_group *g = &st->cfg->groups[gi];
	sp_gstate *gs = &st->gs[gi];
	uint64_t seed = group_seed(st, g);
	int changed = 0, rc = 0;
	if (g->algo == SP_GMP) {
		double s = sp_sched_value(&g->sparsity, t, gs->cyc_sparsity);
		if (g->sparsity.type == SP_SCHED_CYCLING)
			gs->cyc_sparsity++;
		return group_magnitude(st, gi, t, s);
	}
	if (g->algo == SP_SET || g->algo == SP_RIGL) {
		double s = sp_sched_value(&g->sparsity, t, gs->cyc_sparsity);
		double f = drop_fraction(g, t, gs->cyc_drop);
		if (g->sparsity.type == SP_SCHED_CYCLING)
			gs->cyc_sparsity++;
		if (g->drop.type == SP_SCHED_CYCLING)
			gs->cyc_drop++;
		double *sl = malloc(sizeof(double) * (size_t)(gs->n + 1));
		if (!sl)
			return CS_ERR_NO_MEM;
		rc = group_distribute(st, gi, s, sl);
		for (int i = 0; rc >= 0 && i < gs->n; i++) {
			sp_tensor *tt = &st->t[gs->tix[i]];
			if (!tt->mask || (tt->flags & SP_TF_FROZEN))
				continue;
			rc = sp_mask_drop_grow(g, tt, seed, t, sl[i], f, g->algo == SP_RIGL, 0);
			tt->target = sl[i];
		}
		free(sl);
		return rc < 0 ? rc : commit_group(st, gi);
	}
	if (g->algo == SP_GRANET) {
		/* prune then regrow, committed once: a weight pruned and regrown in the same
		 * update keeps its value and moments, like any dropped-then-regrown entry */
		if (granet_prunes(g, t)) {
			double s = sp_sched_value(&g->sparsity, t, gs->cyc_sparsity);
			if (g->sparsity.type == SP_SCHED_CYCLING)
				gs->cyc_sparsity++;
			rc = group_magnitude_scratch(st, gi, t, s);
		} else {
			for (int i = 0; i < gs->n; i++) {
				sp_tensor *tt = &st->t[gs->tix[i]];
				if (tt->mask)
					memcpy(tt->scratch, tt->mask, tt->numel);
			}
		}
		if (rc >= 0 && granet_regrows(g, t)) {
			double r = death_rate(st, g, t);
			for (int i = 0; rc >= 0 && i < gs->n; i++) {
				sp_tensor *tt = &st->t[gs->tix[i]];
				if (!tt->mask || (tt->flags & SP_TF_FROZEN))
					continue;
				uint8_t *pruned = malloc(tt->numel), *old = tt->mask;
				if (!pruned)
					return CS_ERR_NO_MEM;
				memcpy(pruned, tt->scratch, tt->numel);
				tt->mask = pruned;
				rc = sp_mask_drop_grow(g, tt, seed, t, 0, r, 1, 1);
				tt->mask = old;
				free(pruned);
			}
		}
		if (rc < 0)
			return rc;
		changed = commit_group(st, gi);
		if (g->scope == SP_SCOPE_GLOBAL)
			set_targets_actual(st, gi);
		return changed;
	}
	return 0;
}

int sp_after_optimizer(sp_state *st, long step)
{
	if (!st || st->plan_only || step < 0)
		return CS_ERR_INVALID;
	long t = step + 1;
	for (int i = 0; i < st->n; i++)
		st->t[i].changed = 0, st->t[i].flips = 0;
	/* Weights and moments outside the masks are zero (masks change only through
	 * sp_mask_commit, sp_set_mask and sp_apply, which zero them) and a zero-preserving
	 * optimizer keeps them so where the gradient is zero: then re-mask only when
	 * sp_mask_grads did not run on this step's gradients. */
	if (!st->zero_preserving || st->grads_masked != step)
		sp_apply(st);
	int changed = 0;
	for (int g = 0; g < st->cfg->n_groups; g++) {
		if (st->gs[g].n == 0 || !group_updates(&st->cfg->groups[g], t))
			continue;
		int rc = group_update(st, g, t);
		if (rc < 0)
			return rc;
		changed += rc;
	}
	for (int i = 0; i < st->n; i++)
		st->t[i].have_dense_grad = 0;
	st->step = t;
	return changed;
}

/* ---- queries ---- */

int sp_num_params(const sp_state *st)
{
	return st ? st->n : 0;
}

static const sp_tensor *tensor(const sp_state *st, int idx)
{
	if (!st || idx < 0 || idx >= st->n)
		return NULL;
	return &st->t[idx];
}

const uint8_t *sp_mask(const sp_state *st, int idx)
{
	const sp_tensor *t = tensor(st, idx);
	return t ? t->mask : NULL;
}

double sp_mask_churn(const sp_state *st)
{
	size_t flips = 0, n = 0;
	for (int i = 0; st && i < st->n; i++)
		if (st->t[i].mask) {
			flips += st->t[i].flips;
			n += st->t[i].numel;
		}
	return n ? (double)flips / (double)n : 0.0;
}

int sp_mask_changed(const sp_state *st, int idx)
{
	const sp_tensor *t = tensor(st, idx);
	return t ? t->changed : 0;
}

size_t sp_tensor_nnz(const sp_state *st, int idx)
{
	const sp_tensor *t = tensor(st, idx);
	if (!t)
		return 0;
	if (st->plan_only && t->group >= 0 && !t->forced_dense)
		return sp_keep_count(t->target, t->numel);
	return sp_mask_count(t);
}

double sp_tensor_sparsity(const sp_state *st, int idx)
{
	const sp_tensor *t = tensor(st, idx);
	if (!t)
		return 0;
	return 1.0 - (double)sp_tensor_nnz(st, idx) / (double)t->numel;
}

static int tensor_sparse(const sp_tensor *t)
{
	return t->group >= 0 && !(t->flags & SP_TF_REMOVED);
}

double sp_tensor_target(const sp_state *st, int idx)
{
	const sp_tensor *t = tensor(st, idx);
	return t && tensor_sparse(t) ? t->target : 0;
}

double sp_tensor_final_target(const sp_state *st, int idx)
{
	const sp_tensor *t = tensor(st, idx);
	if (!t || !tensor_sparse(t))
		return 0;
	return (t->flags & SP_TF_FROZEN) ? t->target : t->final_target;
}

size_t sp_tensor_final_nnz(const sp_state *st, int idx)
{
	const sp_tensor *t = tensor(st, idx);
	if (!t)
		return 0;
	return sp_keep_count(sp_tensor_final_target(st, idx), t->numel);
}

const char *sp_tensor_algorithm(const sp_state *st, int idx)
{
	const sp_tensor *t = tensor(st, idx);
	if (!t || !tensor_sparse(t) || t->forced_dense)
		return "dense";
	return algo_names[st->cfg->groups[t->group].algo];
}

void sp_get_stats(const sp_state *st, sp_stats *out)
{
	memset(out, 0, sizeof *out);
	for (int i = 0; st && i < st->n; i++) {
		const sp_tensor *t = &st->t[i];
		size_t nnz = sp_tensor_nnz(st, i);
		out->total_numel += t->numel;
		out->total_nnz += nnz;
		if (tensor_sparse(t) && !t->forced_dense) {
			out->sparse_numel += t->numel;
			out->sparse_nnz += nnz;
		}
	}
	out->sparsity = out->sparse_numel ?
				1.0 - (double)out->sparse_nnz / (double)out->sparse_numel : 0;
	out->overall = out->total_numel ? 1.0 - (double)out->total_nnz / (double)out->total_numel : 0;
}

void sp_print(const sp_state *st, FILE *f)
{
	for (int i = 0; st && i < st->n; i++) {
		const sp_tensor *t = &st->t[i];
		char shape[64];
		int o = 0;
		for (int d = 0; d < t->ndim; d++)
			o += snprintf(shape + o, sizeof shape - (size_t)o, "%s%d", d ? "x" : "",
				      t->shape[d]);
		fprintf(f, "%-28s %-12s %-7s target %.4f actual %.4f nnz %zu/%zu\n", t->name, shape,
			sp_tensor_algorithm(st, i), sp_tensor_target(st, i),
			sp_tensor_sparsity(st, i), sp_tensor_nnz(st, i), t->numel);
	}
}

/* ---- external masks, iterative pruning, dense fine-tuning ---- */

size_t sp_nan_export(float *w, const uint8_t *mask, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (!mask[i]) {
			w[i] = NAN;
			c++;
		}
	return c;
}

size_t sp_nan_import(float *w, uint8_t *mask, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++) {
		mask[i] = isfinite(w[i]) ? 1 : 0;
		if (!mask[i])
			w[i] = 0;
		c += mask[i];
	}
	return c;
}

int sp_set_mask(sp_state *st, int idx, const uint8_t *mask)
{
	if (!st || st->plan_only || idx < 0 || idx >= st->n || !mask)
		return CS_ERR_INVALID;
	sp_tensor *t = &st->t[idx];
	if (!t->mask)
		return CS_ERR_INVALID;
	for (size_t i = 0; i < t->numel; i++)
		t->scratch[i] = mask[i] ? 1 : 0;
	t->changed = sp_mask_commit(t);
	t->target = 1.0 - (double)sp_mask_count(t) / (double)t->numel;
	t->flags |= SP_TF_FROZEN;
	return sp_apply(st);
}

int sp_prune_remaining(sp_state *st, double fraction)
{
	return sp_prune_remaining_scope(st, fraction, SP_PRUNE_GROUP_SCOPE);
}

int sp_prune_remaining_scope(sp_state *st, double fraction, int scope)
{
	if (!st || st->plan_only || !(fraction >= 0 && fraction <= 1) ||
	    scope < SP_PRUNE_GROUP_SCOPE || scope > SP_PRUNE_GLOBAL)
		return CS_ERR_INVALID;
	int changed = 0;
	for (int i = 0; i < st->n; i++)
		st->t[i].changed = 0, st->t[i].flips = 0;
	for (int gi = 0; gi < st->cfg->n_groups; gi++) {
		const sp_group *g = &st->cfg->groups[gi];
		sp_gstate *gs = &st->gs[gi];
		if (gs->n == 0)
			continue;
		int global = scope == SP_PRUNE_GROUP_SCOPE ? g->scope == SP_SCOPE_GLOBAL
							   : scope == SP_PRUNE_GLOBAL;
		if (global) {
			size_t ntot = 0, nnz = 0;
			for (int i = 0; i < gs->n; i++) {
				sp_tensor *t = &st->t[gs->tix[i]];
				if (t->mask) {
					ntot += t->numel;
					nnz += sp_mask_count(t);
				}
			}
			size_t keep = nnz - (size_t)floor(fraction * (double)nnz + 0.5);
			double s = ntot ? 1.0 - (double)keep / (double)ntot : 0;
			/* s reproduces keep exactly: sp_keep_count(s, ntot) == keep */
			int rc = sp_mask_global_magnitude(g, st, gs, st->step, s);
			if (rc < 0)
				return rc;
			for (int i = 0; i < gs->n; i++) {
				sp_tensor *t = &st->t[gs->tix[i]];
				if (t->mask && sp_mask_commit(t)) {
					t->changed = 1;
					changed++;
				}
			}
		} else {
			for (int i = 0; i < gs->n; i++) {
				sp_tensor *t = &st->t[gs->tix[i]];
				if (!t->mask)
					continue;
				size_t nnz = sp_mask_count(t);
				size_t keep = nnz - (size_t)floor(fraction * (double)nnz + 0.5);
				/* prune per row when balanced: same fraction of each row */
				double s = 1.0 - (double)keep / (double)t->numel;
				int rc = sp_mask_magnitude(g, t, group_seed(st, g), st->step, s);
				if (rc < 0)
					return rc;
				if (sp_mask_commit(t)) {
					t->changed = 1;
					changed++;
				}
			}
		}
		for (int i = 0; i < gs->n; i++) {
			sp_tensor *t = &st->t[gs->tix[i]];
			if (t->mask) {
				t->flags |= SP_TF_FROZEN;
				t->target = 1.0 - (double)sp_mask_count(t) / (double)t->numel;
			}
		}
	}
	return changed;
}

int sp_remove_masks(sp_state *st)
{
	if (!st || st->plan_only)
		return CS_ERR_INVALID;
	int n = 0;
	for (int i = 0; i < st->n; i++) {
		sp_tensor *t = &st->t[i];
		if (t->group < 0)
			continue;
		t->flags |= SP_TF_REMOVED | SP_TF_FROZEN;
		if (t->mask) {
			free(t->mask);
			t->mask = NULL;
			t->changed = 1;
			n++;
		}
	}
	return n;
}
