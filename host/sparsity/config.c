/*
 * config.c - the `sparsity:` block of a training YAML into an sp_config: the Cerebras
 * Model Zoo generations (1.7-1.9 `type: sideband`, 2.0/2.1 `type:` with `schedule:` =
 * update schedule, 2.2+ `algorithm:` with `update:` and `schedule:` = alias of
 * `sparsity:`), a bare number, a top-level list of groups, param_name_patterns dicts with
 * per-group overrides, and our keys (granet, distribution, scope, ...).
 *
 * The keys are schema tables walked by the config front end (host/common/cs_config.h):
 * a group's keys, a schedule's keys per schedule type, an update schedule's and a
 * tiebreak's; lists (update steps, cycling values, globs, patterns, [step, sparsity]
 * pairs, groups) are the front end's list walks with an item key. Values of several
 * shapes (a schedule is a number, a list or a mapping) are setters here, which pick the
 * table by the shape and the `type` key; what depends on several keys (defaults by algorithm, granet's densities,
 * which keys go with which algorithm) is checked after the walk, in finish_group. Every
 * error names file:line:col, the key path and the offending value. Reference of the keys
 * and defaults: docs/sparsity.md.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cs_config.h"
#include "common/cs_yaml.h"
#include "sparsity/sp_internal.h"

#define scalar cs_cfg_scalar
#define is_null cs_cfg_is_null
#define show cs_cfg_show
#define perr cs_cfg_error

static yaml_node_t *map_get(cs_cfg *c, yaml_node_t *map, const char *key)
{
	return cs_cfg_map_get(c->doc, map, key);
}

/* One value checked against a key of no table (list items, a bare number) into *dst. */
static int set_one(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *n, const char *path, void *dst)
{
	return cs_cfg_set(c, k, NULL, n, path, dst);
}

/* value ranges: a sparsity is in [0, 1), a fraction in [0, 1] */
enum { R_SPARSITY, R_FRACTION };
static const cs_cfg_key ranged[2] = {
	{ .key = "", .type = CS_CFG_DOUBLE, .min = 0, .max = 1, .flags = CS_CFG_MAX_OPEN },
	{ .key = "", .type = CS_CFG_DOUBLE, .min = 0, .max = 1 },
};
static const cs_cfg_key step_key = { .key = "", .type = CS_CFG_INT, .size = sizeof(long),
				     .min = 0, .flags = CS_CFG_NO_MAX };

/* ---- hyperparameter schedules ------------------------------------------------------- */

#define SO(f) offsetof(sp_sched, f)
#define REQ "required"
/* a list of values in range R: `cycling`'s values, and a bare list (= cycling) */
#define VALUES_KEY(R)                                                                        \
	{ .key = "values", .type = CS_CFG_LIST, .off = SO(values), .off_n = SO(n_values),     \
	  .size = sizeof(double), .item = &ranged[R], .allowed = "numbers", .doc_def = REQ,   \
	  .doc = "the values" }
static const cs_cfg_key values_list[2] = { VALUES_KEY(R_SPARSITY), VALUES_KEY(R_FRACTION) };
#define ANY (CS_CFG_NO_MIN | CS_CFG_NO_MAX)
/* A schedule's keys for values in range R (RF: flags of the range); `type` comes first
 * (its doc line: the formula, t = completed optimizer steps), then the required keys of
 * each type (sched_kind.nreq), then the optional ones. */
#define SCHED_KEY_RANGED(name, f, RF, DEF, DOC)                                             \
	{ .key = name, .type = CS_CFG_DOUBLE, .off = SO(f), .min = 0, .max = 1, .flags = RF,  \
	  .doc_def = DEF, .doc = DOC }
#define SCHED_KEY_ANY(name, f, DEF, DOC)                                                     \
	{ .key = name, .type = CS_CFG_DOUBLE, .off = SO(f), .flags = ANY, .doc_def = DEF,     \
	  .doc = DOC }
#define SCHED_STEP(name, f, DOC)                                                             \
	{ .key = name, .type = CS_CFG_INTD, .off = SO(f), .min = 0, .flags = CS_CFG_NO_MAX,   \
	  .doc_def = REQ, .doc = DOC }
#define SCHED_TYPE(DOC) { .key = "type", .type = CS_CFG_IGNORED, .doc = DOC }
#define SCHED_TABLES(R, RF, RANGE)                                                           \
	static const cs_cfg_key constant_##R[] = {                                           \
		SCHED_TYPE("the same value at every step (a bare number is this)"),           \
		SCHED_KEY_RANGED("value", value, RF, REQ, "the value") };                     \
	static const cs_cfg_key linear_##R[] = {                                             \
		SCHED_TYPE("init + slope·t"),                                                 \
		SCHED_KEY_RANGED("init", init, RF, REQ, "value at t = 0"),                    \
		SCHED_KEY_ANY("slope", slope, REQ, "change per step") };                      \
	static const cs_cfg_key exp_##R[] = {                                                \
		SCHED_TYPE("final + (init - final)·e^(gamma·t) (gamma < 0 approaches final)"), \
		SCHED_KEY_RANGED("init", init, RF, REQ, "value at t = 0"),                    \
		SCHED_KEY_ANY("gamma", gamma, REQ, "rate"),                                   \
		SCHED_KEY_ANY("final", final, "`1`", "the asymptote") };                      \
	static const cs_cfg_key power_##R[] = {                                              \
		SCHED_TYPE("init·beta^t"),                                                    \
		SCHED_KEY_RANGED("init", init, RF, REQ, "value at t = 0"),                    \
		SCHED_KEY_ANY("beta", beta, REQ, "factor per step") };                        \
	static const cs_cfg_key cosine_##R[] = {                                             \
		SCHED_TYPE("o + a·cos(π·t/half_period), o = (init + minimum)/2, a = init - o: " \
			   "init at t = 0, minimum at half_period, periodic after it"),      \
		SCHED_KEY_RANGED("init", init, RF, REQ, "value at t = 0"),                    \
		{ .key = "half_period", .type = CS_CFG_DOUBLE, .off = SO(half_period), .min = 0, \
		  .flags = CS_CFG_MIN_OPEN | CS_CFG_NO_MAX, .doc_def = REQ,                   \
		  .doc = "steps from init to minimum (set it to `update.stop`)" },            \
		SCHED_KEY_RANGED("minimum", minimum, RF, "`0`", "value at half_period") };    \
	static const cs_cfg_key cycling_##R[] = {                                            \
		SCHED_TYPE("values in turn (a bare list is this): t = 0 uses values[0], the " \
			   "index advances once per update step (also at t = 0 if it is one) " \
			   "and wraps"),                                                      \
		VALUES_KEY(RANGE) };                                                          \
	static const cs_cfg_key poly_##R[] = {                                               \
		SCHED_TYPE("Zhu-Gupta: final + (initial - final)·(1 - p)^power, p = "        \
			   "clip((t - begin)/(end - begin), 0, 1), evaluated at update steps " \
			   "only (hence quantised)"),                                                 \
		SCHED_KEY_RANGED("initial", initial, RF, REQ, "value up to begin"),           \
		SCHED_KEY_RANGED("final", final, RF, REQ, "value from end on"),               \
		SCHED_STEP("begin", begin, "step the change starts"),                         \
		SCHED_STEP("end", end, "step it ends (after begin)"),                         \
		SCHED_KEY_ANY("power", power, "`3`", "the exponent") };
#define TAB(a) { "schedule", "key", a, (int)(sizeof a / sizeof a[0]), 1 }

SCHED_TABLES(s, CS_CFG_MAX_OPEN, R_SPARSITY)
SCHED_TABLES(f, 0, R_FRACTION)

static const struct sched_kind {
	const char *name;
	int type;
	int nreq; /* keys 1..nreq of the table are required */
	cs_cfg_table t[2]; /* by range */
} kinds[] = {
	{ "constant", SP_SCHED_CONSTANT, 1, { TAB(constant_s), TAB(constant_f) } },
	{ "linear", SP_SCHED_LINEAR, 2, { TAB(linear_s), TAB(linear_f) } },
	{ "exp", SP_SCHED_EXP, 2, { TAB(exp_s), TAB(exp_f) } },
	{ "power", SP_SCHED_POWER, 2, { TAB(power_s), TAB(power_f) } },
	{ "cosine", SP_SCHED_COSINE, 2, { TAB(cosine_s), TAB(cosine_f) } },
	{ "cycling", SP_SCHED_CYCLING, 1, { TAB(cycling_s), TAB(cycling_f) } },
	{ "cubic", SP_SCHED_POLY, 4, { TAB(poly_s), TAB(poly_f) } },
	{ "polynomial", SP_SCHED_POLY, 4, { TAB(poly_s), TAB(poly_f) } },
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

static int parse_sched(cs_cfg *c, yaml_node_t *n, const char *path, int range, sp_sched *s)
{
	sp_sched_free(s);
	memset(s, 0, sizeof *s);
	s->line = (int)n->start_mark.line + 1;
	s->col = (int)n->start_mark.column + 1;
	if (n->type == YAML_SCALAR_NODE) {
		s->type = SP_SCHED_CONSTANT;
		return set_one(c, &ranged[range], n, path, &s->value);
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		s->type = SP_SCHED_CYCLING;
		return set_one(c, &values_list[range], n, path, s);
	}
	yaml_node_t *tn = map_get(c, n, "type");
	const char *ty = scalar(tn);
	if (!ty)
		return perr(c, n, path, "a schedule needs a type (constant, linear, exp, power, "
					"cosine, cycling, cubic, polynomial)");
	int k = -1;
	for (int i = 0; i < NKINDS; i++)
		if (!strcasecmp(ty, kinds[i].name))
			k = i;
	char p[160];
	snprintf(p, sizeof p, "%s.type", path);
	if (k < 0)
		return perr(c, tn, p, "'%s' is not one of constant, linear, exp, power, cosine, "
				      "cycling, cubic, polynomial", ty);
	s->type = kinds[k].type;
	s->final = 1.0; /* exp default */
	s->power = 3.0;
	const cs_cfg_table *t = &kinds[k].t[range];
	yaml_node_t *seen[8] = { 0 };
	int rc = cs_cfg_walk(c, t, n, path, s, seen);
	if (rc)
		return rc;
	for (int i = 1; i <= kinds[k].nreq; i++)
		if (!seen[i])
			return perr(c, n, path, "%s schedule needs '%s'", kinds[k].name,
				    t->keys[i].key);
	if (s->type == SP_SCHED_POLY && s->end <= s->begin)
		return perr(c, n, path, "end %g is not after begin %g", s->end, s->begin);
	return 0;
}

/* ---- update schedules ---------------------------------------------------------------- */

/* what one group's mappings said, before defaults (the walk's destination) */
enum gkey {
	K_TYPE, K_ALGORITHM, K_SPARSITY, K_SCHEDULE, K_INIT_METHOD, K_SEED, K_PATTERNS,
	K_FILTER, K_UPDATE, K_DROP, K_TIEBREAK, K_BAL_IN, K_BAL_OUT, K_IN, K_OUT, K_DIST,
	K_SDIST, K_ERK, K_DENSE, K_SCOPE, K_GROW, K_SKIP, K_INIT_DENSITY, K_FINAL_DENSITY,
	K_PRUNE_START, K_PRUNE_END, K_DEATH_RATE, K_DEATH_RATE_MIN, K_SPARSITY_SCHEDULE,
	K_SUMMARIES, K_DUMP, NGKEYS
};

typedef struct gparse {
	sp_group g;
	yaml_node_t *seen[NGKEYS]; /* key nodes given, over the top level and the overrides */
	int top;                   /* walking the top level (not a pattern's overrides) */
	int legacy;                /* `type:` given: `schedule` is the update schedule (2.0/2.1) */
	int is_sideband, sparsity_node, update_given;
	const yaml_node_t *sparsity_at, *schedule_at;
	double init_density, final_density;
	long prune_start, prune_end;
	int have_stop, update_type;
} gparse;

/* stop is exclusive, end inclusive; null: no end */
static int set_stop(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
		    const char *p, void *dest)
{
	gparse *gp = dest;
	sp_update *u = &gp->g.update;
	if (gp->have_stop)
		return perr(c, kn, p, "both stop and end given (stop is exclusive, end inclusive)");
	gp->have_stop = 1;
	if (is_null(vn))
		return 0;
	int rc = set_one(c, &step_key, vn, p, &u->stop);
	if (!rc && !strcmp(k->key, "end"))
		u->stop++;
	return rc;
}

#define UO(f) offsetof(gparse, g.update.f)
enum { UPDATE_STEPS = 4 }; /* the list form's key */
static const cs_cfg_key update_keys[] = {
	{ .key = "freq", .type = CS_CFG_INT, .off = UO(freq), .size = sizeof(long), .min = 1,
	  .flags = CS_CFG_NO_MAX, .doc_def = "`1`",
	  .doc = "update at t when start <= t < stop and (t - start) % freq = 0 (t = completed "
		 "optimizer steps; t = 0 is the init)" },
	{ .key = "start", .type = CS_CFG_INT, .off = UO(start), .size = sizeof(long), .min = 0,
	  .flags = CS_CFG_NO_MAX, .doc_def = "`0`", .doc = "first update step" },
	{ .key = "stop", .type = CS_CFG_CUSTOM, .set = set_stop, .doc_def = "none",
	  .doc_allowed = "integer >= 0, after `start`; `null`",
	  .doc = "exclusive end of the updates (`null`: none)" },
	{ .key = "end", .type = CS_CFG_CUSTOM, .set = set_stop, .doc_def = "none",
	  .doc_allowed = "integer >= 0; `null`",
	  .doc = "or: the inclusive end (stop = end + 1); not both" },
	{ .key = "steps", .type = CS_CFG_LIST, .off = UO(steps), .off_n = UO(n_steps),
	  .size = sizeof(long), .item = &step_key, .allowed = "update steps", .doc_def = "none",
	  .doc = "update at exactly these steps (`freq`, `start` and `stop` then do not apply)" },
	{ .key = "type", .type = CS_CFG_CHOICE, .off = offsetof(gparse, update_type),
	  .allowed = "periodic|freq|list",
	  .doc = "accepted and ignored: the keys given say which form it is" },
};
static const cs_cfg_table update_table = { "update", "key", update_keys,
					   (int)(sizeof update_keys / sizeof update_keys[0]), 1 };

static int parse_update(cs_cfg *c, yaml_node_t *n, const char *path, gparse *gp)
{
	sp_update *u = &gp->g.update;
	free(u->steps);
	memset(u, 0, sizeof *u);
	u->given = 1;
	u->freq = 1;
	u->stop = -1;
	if (n->type == YAML_SCALAR_NODE) {
		static const cs_cfg_key freq = { .key = "", .type = CS_CFG_INT,
						 .size = sizeof(long), .min = 1,
						 .flags = CS_CFG_NO_MAX };
		return set_one(c, &freq, n, path, &u->freq);
	}
	if (n->type == YAML_SEQUENCE_NODE)
		return set_one(c, &update_keys[UPDATE_STEPS], n, path, gp);
	gp->have_stop = 0;
	int rc = cs_cfg_walk(c, &update_table, n, path, gp, NULL);
	if (rc)
		return rc;
	if (u->stop >= 0 && u->stop <= u->start && u->n_steps == 0)
		return perr(c, n, path, "stop %ld is not after start %ld", u->stop, u->start);
	return 0;
}

/* ---- groups -------------------------------------------------------------------------- */

static int set_algo(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
		    const char *p, void *dest)
{
	(void)kn;
	gparse *gp = dest;
	static const char *const names[] = { "static", "gmp", "set", "rigl", "granet" };
	int allow_sideband = !strcmp(k->key, "type");
	const char *s = scalar(vn);
	if (s && allow_sideband && !strcasecmp(s, "sideband")) {
		gp->g.algo = SP_STATIC;
		gp->is_sideband = 1;
		return 0;
	}
	for (int i = 0; s && i < SP_NALGO; i++)
		if (!strcasecmp(s, names[i])) {
			gp->g.algo = i;
			return 0;
		}
	return perr(c, vn, p, "'%s' is not one of static, gmp, set, rigl, granet%s", show(vn),
		    allow_sideband ? ", sideband" : "");
}

/* sparsity (and, since 2.2, its alias schedule): null disables the group */
static int set_sparsity(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
			const char *p, void *dest)
{
	gparse *gp = dest;
	sp_group *g = &gp->g;
	const yaml_node_t **at = !strcmp(k->key, "sparsity") ? &gp->sparsity_at : &gp->schedule_at;
	*at = kn;
	if (gp->sparsity_at && gp->schedule_at)
		return perr(c, kn, p, "both sparsity and schedule given (since 2.2 schedule is an "
				      "alias of sparsity)");
	gp->sparsity_node = 1;
	if (is_null(vn)) {
		g->disabled = 1;
		sp_sched_free(&g->sparsity);
		g->sparsity.type = SP_SCHED_NONE;
		return 0;
	}
	g->disabled = 0;
	return parse_sched(c, vn, p, R_SPARSITY, &g->sparsity);
}

static int set_update(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
		      const char *p, void *dest)
{
	(void)k;
	gparse *gp = dest;
	if (gp->update_given)
		return perr(c, kn, p, "update schedule given twice (schedule and update)");
	gp->update_given = 1;
	return parse_update(c, vn, p, gp);
}

/* 2.0/2.1 (`type:` given): the update schedule; 2.2+: an alias of sparsity */
static int set_schedule(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
			const char *p, void *dest)
{
	gparse *gp = dest;
	return gp->legacy ? set_update(c, k, kn, vn, p, dest) : set_sparsity(c, k, kn, vn, p, dest);
}

/* 1.8: [[step, sparsity], ...] = listed update steps + cycling values */
typedef struct step_pair {
	long step;
	double value;
} step_pair;

static int set_pair(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
		    const char *p, void *dest)
{
	(void)k;
	(void)kn;
	step_pair *sp = dest;
	static const cs_cfg_key *const keys[2] = { &step_key, &ranged[R_SPARSITY] };
	void *const dests[2] = { &sp->step, &sp->value };
	return cs_cfg_tuple(c, keys, dests, 2, vn, p, "a [step, sparsity] pair");
}

static const cs_cfg_key pair_item = { .key = "", .type = CS_CFG_CUSTOM, .set = set_pair };

static int set_sparsity_schedule(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn,
				 yaml_node_t *vn, const char *p, void *dest)
{
	(void)k;
	gparse *gp = dest;
	sp_group *g = &gp->g;
	void *arr;
	int n;
	int rc = cs_cfg_list(c, &pair_item, sizeof(step_pair), vn, p, 0, "[step, sparsity] pairs",
			     &arr, &n);
	if (rc) {
		free(arr);
		return rc;
	}
	const step_pair *pairs = arr;
	sp_sched_free(&g->sparsity);
	free(g->update.steps);
	memset(&g->update, 0, sizeof g->update);
	g->update.given = 1;
	g->update.freq = 1;
	g->update.stop = -1;
	g->update.steps = calloc((size_t)n, sizeof(long));
	g->sparsity.values = calloc((size_t)n, sizeof(double));
	if (!g->update.steps || !g->sparsity.values) {
		free(arr);
		return CS_ERR_NO_MEM;
	}
	g->update.n_steps = n;
	g->sparsity.type = SP_SCHED_CYCLING;
	g->sparsity.n_values = n;
	for (int i = 0; i < n; i++) {
		g->update.steps[i] = pairs[i].step;
		g->sparsity.values[i] = pairs[i].value;
	}
	free(arr);
	gp->sparsity_node = gp->update_given = 1;
	gp->sparsity_at = kn;
	return 0;
}

static int set_seed(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
		    const char *p, void *dest)
{
	(void)c;
	(void)k;
	(void)kn;
	(void)vn;
	(void)p;
	((gparse *)dest)->g.has_seed = 1;
	return 0;
}

static int set_drop(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
		    const char *p, void *dest)
{
	(void)k;
	(void)kn;
	return parse_sched(c, vn, p, R_FRACTION, &((gparse *)dest)->g.drop);
}

#define GO(f) offsetof(gparse, g.f)
static const cs_cfg_key tiebreak_keys[] = {
	{ .key = "type", .type = CS_CFG_CHOICE, .off = GO(tiebreak), .allowed = "none|first|random",
	  .doc_def = "required",
	  .doc = "`none`: equal scores keep the lower flat index; `first` adds eps·idx/N to "
		 "each score (Cerebras: the higher index wins); `random` adds eps·U from the "
		 "tiebreak stream" },
	{ .key = "eps", .type = CS_CFG_DOUBLE, .off = GO(tiebreak_eps), .min = 0,
	  .flags = CS_CFG_NO_MAX, .doc_def = "`1e-8`", .doc = "size of the perturbation" },
};
static const cs_cfg_table tiebreak_table = { "tiebreak", "key", tiebreak_keys, 2, 1 };

/* a name, or {type: name, eps: x} */
static int set_tiebreak(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
			const char *p, void *dest)
{
	(void)k;
	(void)kn;
	if (vn->type != YAML_MAPPING_NODE)
		return cs_cfg_set(c, &tiebreak_keys[0], kn, vn, p, dest);
	yaml_node_t *seen[2] = { 0 };
	int rc = cs_cfg_walk(c, &tiebreak_table, vn, p, dest, seen);
	if (!rc && !seen[0])
		rc = perr(c, vn, p, "a tiebreak needs a type (none, first, random)");
	return rc;
}

static int set_balance(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
		       const char *p, void *dest)
{
	(void)k;
	(void)vn;
	sp_group *g = &((gparse *)dest)->g;
	if (g->balance_in && g->balance_out)
		return perr(c, kn, p, "balance_in_groups and balance_out_groups are mutually "
				      "exclusive");
	return 0;
}

static int set_grow_init(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
			 const char *p, void *dest)
{
	(void)k;
	(void)kn;
	(void)dest;
	const char *s = scalar(vn);
	if (!s || strcmp(s, "zeros"))
		return perr(c, vn, p, "'%s' is not supported (only zeros)", show(vn));
	return 0;
}

static int add_patterns(cs_cfg *c, sp_group *g, yaml_node_t *vn, const char *p, int is_glob);

static int set_patterns(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
			const char *p, void *dest)
{
	gparse *gp = dest;
	if (!strcmp(k->key, "param_filter"))
		return add_patterns(c, &gp->g, vn, p, 1);
	if (!gp->top)
		return perr(c, kn, p, "param_name_patterns cannot be nested");
	/* the dict form makes one group per entry (parse_mapping) */
	return vn->type == YAML_MAPPING_NODE ? 0 : add_patterns(c, &gp->g, vn, p, 0);
}

static const cs_cfg_key glob_item = { .key = "", .type = CS_CFG_STRP };

static const int init_values[] = { SP_INIT_RANDOM, SP_INIT_TOPK, SP_INIT_FROM_ZEROS };
#define DENSITY(name, f, DEF, DOC)                                                          \
	{ .key = name, .type = CS_CFG_DOUBLE, .off = offsetof(gparse, f), .min = 0, .max = 1, \
	  .flags = CS_CFG_MIN_OPEN, .doc_def = DEF, .doc = DOC }
#define BALANCE(name, f, DOC)                                                               \
	{ .key = name, .type = CS_CFG_INT, .off = GO(f), .size = sizeof(int), .min = 1,       \
	  .max = 1 << 20, .set = set_balance, .doc_def = "none", .doc = DOC }
#define GRANET_ONLY "; granet only"

/* A group's keys, in enum gkey's order. The doc lines are docs/sparsity.md's key table
 * (sp_config_write_doc; defaults that depend on other keys are set in finish_group). */
static const cs_cfg_key group_keys[NGKEYS] = {
	[K_TYPE] = { .key = "type", .type = CS_CFG_CUSTOM, .set = set_algo,
		     .doc_def = "`static`",
		     .doc_allowed = "`static`, `gmp`, `set`, `rigl`, `granet`, `sideband` (any case)",
		     .doc = "the algorithm (2.0/2.1 name; `sideband`, 1.7-1.9: static with "
			    "`init_method` topk); with `type`, `schedule` is the update schedule; "
			    "not with `algorithm`" },
	[K_ALGORITHM] = { .key = "algorithm", .type = CS_CFG_CUSTOM, .set = set_algo,
			  .doc_def = "`static`",
			  .doc_allowed = "`static`, `gmp`, `set`, `rigl`, `granet` (any case)",
			  .doc = "the algorithm (2.2+): static masks, gradual magnitude pruning, "
				 "SET, RigL or GraNet (section 2)" },
	[K_SPARSITY] = { .key = "sparsity", .type = CS_CFG_CUSTOM, .set = set_sparsity,
			 .doc_def = "required (granet: or its densities)",
			 .doc_allowed = "number in [0, 1); a schedule (`{type: ...}`, below); a list "
					"(= `cycling`); `null`",
			 .doc = "share of zeros, at every step or by schedule; `static` needs a "
				"number, `gmp` a schedule; `null`: the group's tensors stay dense" },
	[K_SCHEDULE] = { .key = "schedule", .type = CS_CFG_CUSTOM, .set = set_schedule,
			 .doc_allowed = "as `update` (with `type`), else as `sparsity`",
			 .doc = "with `type` (2.0/2.1): the update schedule; otherwise (2.2+) an "
				"alias of `sparsity` (not both)" },
	[K_INIT_METHOD] = { .key = "init_method", .type = CS_CFG_CHOICE, .off = GO(init_method),
			    .allowed = "random|topk|from_zeros", .values = init_values,
			    .doc_def = "`topk` for gmp and sideband, else `random`",
			    .doc = "the masks at t = 0: random positions, largest magnitudes, or the "
				   "weights' nonzeros" },
	[K_SEED] = { .key = "seed", .type = CS_CFG_INT, .off = GO(seed), .size = sizeof(uint64_t),
		     .min = 0, .flags = CS_CFG_NO_MAX, .set = set_seed,
		     .doc_def = "the trainer's (`run.seed`)",
		     .doc = "keys the group's random streams (init, grow, tiebreak)" },
	[K_PATTERNS] = { .key = "param_name_patterns", .type = CS_CFG_CUSTOM,
			 .set = set_patterns, .doc_def = "the default rule",
			 .doc_allowed = "regex string, list, or dict regex -> overrides (`{}` or "
					"`null`: none)",
			 .doc = "the tensors of the group: POSIX ERE, substring match (`regexec`); "
				"a dict makes one group per entry, its overrides over the keys "
				"beside it; each pattern must match a tensor. Bounded: at most 256 "
				"characters, repetition counts (`{n,m}`) multiplying to at most 1000 "
				"copies (glibc's `regcomp` copies a subexpression per count, so "
				"nested counts cost memory exponentially), groups nested at most 8 "
				"deep, at most 32 operators (`*`, `+`, `?`, `{}`, `|`) and no "
				"back-references (`\\1`: `regexec` has no step limit, and "
				"`(.*)(.*)(.*)(.*)\\4\\3\\2\\1x` took over a second per name)" },
	[K_FILTER] = { .key = "param_filter", .type = CS_CFG_CUSTOM, .set = set_patterns,
		       .doc_def = "the default rule", .doc_allowed = "glob string or list",
		       .doc = "or (2.2+): globs matching the whole name (`fnmatch`, `*` crosses "
			      "dots); not with `param_name_patterns`" },
	[K_UPDATE] = { .key = "update", .type = CS_CFG_CUSTOM, .set = set_update,
		       .doc_def = "every step (`freq` 1, `start` 0, no stop)",
		       .doc_allowed = "a mapping (`update.*`, below), a list of steps, or an "
				      "integer freq",
		       .doc = "when masks change (update steps); `static` takes none" },
	[K_DROP] = { .key = "drop_fraction", .type = CS_CFG_CUSTOM, .set = set_drop,
		     .doc_def = "cosine from 0.3 to 0 at `update.stop` when there is one (and no "
				"`update.steps`), else 0.3",
		     .doc_allowed = "number in [0, 1], or a schedule of such",
		     .doc = "share of each tensor's nonzeros dropped (and regrown) per update; "
			    "set and rigl only" },
	[K_TIEBREAK] = { .key = "tiebreak", .type = CS_CFG_CUSTOM, .set = set_tiebreak,
			 .doc_def = "`none`",
			 .doc_allowed = "`none`, `first`, `random`, or `{type, eps}` (`tiebreak.*`)",
			 .doc = "how equal scores are ordered in every top-k" },
	[K_BAL_IN] = BALANCE("balance_in_groups", balance_in,
			     "G: top-k per group of input columns (G must divide the dimension); "
			     "not with `balance_out_groups`, nor `scope: global`"),
	[K_BAL_OUT] = BALANCE("balance_out_groups", balance_out,
			      "G: top-k per group of output rows, as `balance_in_groups`"),
	[K_IN] = BALANCE("in_groups", balance_in, "alias of `balance_in_groups` (1.9)"),
	[K_OUT] = BALANCE("out_groups", balance_out, "alias of `balance_out_groups` (1.9)"),
	[K_DIST] = { .key = "distribution", .type = CS_CFG_CHOICE, .off = GO(distribution),
		     .flags = CS_CFG_NOCASE, .allowed = "uniform|er|erk", .doc_def = "`uniform`",
		     .doc = "how the group's sparsity is split over its tensors (per-tensor "
			    "scope): the same for each, Erdős-Rényi or its kernel version; with "
			    "`er`/`erk` the group must realise its target (below)" },
	[K_SDIST] = { .key = "sparsity_distribution", .type = CS_CFG_CHOICE,
		      .off = GO(distribution), .flags = CS_CFG_NOCASE,
		      .allowed = "uniform|er|erk", .doc_def = "`uniform`",
		      .doc = "alias of `distribution`" },
	[K_ERK] = { .key = "erk_power_scale", .type = CS_CFG_DOUBLE, .off = GO(erk_power),
		    .min = 0, .flags = CS_CFG_NO_MAX, .doc_def = "`1`",
		    .doc = "ERK's exponent: a tensor's raw density is (sum of its dims / their "
			   "product)^erk_power_scale; `er` ignores it" },
	[K_DENSE] = { .key = "dense_layers", .type = CS_CFG_LIST, .off = GO(dense_layers),
		      .off_n = GO(n_dense), .size = sizeof(char *), .item = &glob_item,
		      .flags = CS_CFG_ONE_OK, .allowed = "globs",
		      .doc_def = "none", .doc_allowed = "glob string or list",
		      .doc = "tensors of the group forced dense; with `er`/`erk` their zeros are "
			     "carried by the others" },
	[K_SCOPE] = { .key = "scope", .type = CS_CFG_CHOICE, .off = GO(scope),
		      .allowed = "per_tensor|global",
		      .doc_def = "`per_tensor`; `global` for granet",
		      .doc = "magnitude ranking within each tensor or over the group's tensors "
			     "(`global`: gmp and granet only)" },
	[K_GROW] = { .key = "grow_init", .type = CS_CFG_CUSTOM, .set = set_grow_init,
		     .doc_def = "`zeros`", .doc_allowed = "`zeros`",
		     .doc = "value of regrown weights (`random` is not implemented: rejected)" },
	[K_SKIP] = { .key = "skip_optimizer_on_update", .type = CS_CFG_BOOL, .off = GO(skip_opt),
		     .flags = CS_CFG_NOCASE, .doc_def = "`false`",
		     .doc = "skip the optimizer step at update steps (google rigl, jaxpruner); "
			    "the whole step when any group with it updates" },
	[K_INIT_DENSITY] = DENSITY("init_density", init_density, "`1` (dense start)",
				   "GraNet: density up to prune_start; with the next three the "
				   "sugar for `sparsity: {type: cubic, initial: 1 - init_density, "
				   "final: 1 - final_density, begin: prune_start, end: prune_end}` "
				   "(not with `sparsity`)" GRANET_ONLY),
	[K_FINAL_DENSITY] = DENSITY("final_density", final_density,
				    "required without `sparsity`",
				    "GraNet: density from prune_end on, at most init_density"
				    GRANET_ONLY),
	[K_PRUNE_START] = { .key = "prune_start", .type = CS_CFG_INT,
			    .off = offsetof(gparse, prune_start), .size = sizeof(long), .min = 0,
			    .flags = CS_CFG_NO_MAX, .doc_def = "`0`",
			    .doc = "GraNet: first pruning step; regeneration runs from here on"
				   GRANET_ONLY },
	[K_PRUNE_END] = { .key = "prune_end", .type = CS_CFG_INT,
			  .off = offsetof(gparse, prune_end), .size = sizeof(long), .min = 0,
			  .flags = CS_CFG_NO_MAX, .doc_def = "required without `sparsity`",
			  .doc = "GraNet: last pruning step (inclusive), after prune_start"
				 GRANET_ONLY },
	[K_DEATH_RATE] = { .key = "death_rate", .type = CS_CFG_DOUBLE, .off = GO(death_rate),
			   .min = 0, .max = 1, .doc_def = "`0.5`",
			   .doc = "GraNet: share of nonzeros regenerated per update (ceil(r·nnz)), "
				  "cosine-annealed to death_rate_min over training" GRANET_ONLY },
	[K_DEATH_RATE_MIN] = { .key = "death_rate_min", .type = CS_CFG_DOUBLE,
			       .off = GO(death_rate_min), .min = 0, .max = 1, .doc_def = "`0.005`",
			       .doc = "GraNet: the death rate's floor, at most death_rate"
				      GRANET_ONLY },
	[K_SPARSITY_SCHEDULE] = { .key = "sparsity_schedule", .type = CS_CFG_CUSTOM,
				  .set = set_sparsity_schedule,
				  .doc_allowed = "`[[step, sparsity], ...]`",
				  .doc = "1.8: the listed update steps with a `cycling` sparsity "
					 "of the listed values" },
	/* logging is the trainer's */
	[K_SUMMARIES] = { .key = "add_summaries", .type = CS_CFG_IGNORED,
			  .doc = "accepted and ignored (the trainer logs sparsities)" },
	[K_DUMP] = { .key = "dump_masks", .type = CS_CFG_IGNORED,
		     .doc = "accepted and ignored" },
};
static const cs_cfg_table group_table = { "sparsity", "key", group_keys, NGKEYS, 1 };

/* One row per key: the group's, then `update.*`, `tiebreak.*` and each schedule type's
 * (a type row with its formula, then `<type>.<key>`; types sharing a table share rows). */
static int doc_rows(FILE *f, const char *prefix, const cs_cfg_table *t, int from)
{
	int missing = 0;
	for (int i = from; i < t->n; i++) {
		char name[96];
		snprintf(name, sizeof name, "`%s%s%s`", prefix, *prefix ? "." : "", t->keys[i].key);
		cs_cfg_write_doc_row(f, name, &t->keys[i]);
		missing += !t->keys[i].doc;
	}
	return missing;
}

int sp_config_write_doc(FILE *f)
{
	cs_cfg_write_doc_head(f);
	int missing = doc_rows(f, "", &group_table, 0);
	missing += doc_rows(f, "update", &update_table, 0);
	missing += doc_rows(f, "tiebreak", &tiebreak_table, 0);
	for (int i = 0; i < NKINDS; i++) {
		const cs_cfg_table *ts = &kinds[i].t[R_SPARSITY], *tf = &kinds[i].t[R_FRACTION];
		if (i > 0 && kinds[i - 1].t[R_SPARSITY].keys == ts->keys)
			continue;
		fprintf(f, "| `type: %s`", kinds[i].name);
		for (int j = i + 1; j < NKINDS && kinds[j].t[R_SPARSITY].keys == ts->keys; j++)
			fprintf(f, " (or `%s`)", kinds[j].name);
		fprintf(f, " |  | a schedule of `sparsity` or `drop_fraction` | %s |\n",
			ts->keys[0].doc ? ts->keys[0].doc : "");
		missing += !ts->keys[0].doc;
		for (int j = 1; j < ts->n; j++) {
			cs_cfg_key k = ts->keys[j];
			char name[96], as[160], af[160], both[400];
			snprintf(name, sizeof name, "`%s.%s`", kinds[i].name, k.key);
			cs_cfg_doc_allowed(&ts->keys[j], as, sizeof as);
			cs_cfg_doc_allowed(&tf->keys[j], af, sizeof af);
			if (strcmp(as, af)) {
				snprintf(both, sizeof both, "`sparsity`: %s; `drop_fraction`: %s", as,
					 af);
				k.doc_allowed = both;
			}
			cs_cfg_write_doc_row(f, name, &k);
			missing += !k.doc;
		}
	}
	return missing;
}

/* glibc's regcomp copies a subexpression once per count of a bounded repetition, so
 * nested counts multiply ("((a{1,99}){1,99}){1,99}" is a million copies, gigabytes); and
 * regexec has no step limit: a back-reference makes matching search over the ways the
 * groups can split the name ("(.*)(.*)(.*)(.*)\4\3\2\1x" takes over a second per
 * 48-character name, and a pattern is tried on every tensor). Parameter names are short
 * and patterns select by name: bound the text, the product of the counts, the nesting of
 * groups and the number of operators, and refuse back-references. */
#define SP_PATTERN_MAX_LEN 256
#define SP_PATTERN_MAX_COPIES 1000
#define SP_PATTERN_MAX_DEPTH 8
#define SP_PATTERN_MAX_OPS 32

static int pattern_too_costly(const char *re, char *why, size_t len)
{
	size_t n = strlen(re);
	if (n > SP_PATTERN_MAX_LEN) {
		snprintf(why, len, "is %zu characters; at most %d", n, SP_PATTERN_MAX_LEN);
		return 1;
	}
	double copies = 1;
	int depth = 0, ops = 0;
	char quant = 0; /* the repetition operator just before, if any */
	for (const char *q = re; *q; q++) {
		char was = quant;
		quant = 0;
		if ((*q == '*' || *q == '+' || *q == '?' || (*q == '{' && isdigit((unsigned char)q[1]))) &&
		    was) {
			/* regcomp copies the operand for each stacked operator: "a++++" doubles
			 * its tree per '+' */
			snprintf(why, len, "stacks repetition operators ('%c' after '%c'), whose "
				 "compile cost doubles with each; write one", *q, was);
			return 1;
		}
		if (*q == '\\' && q[1]) {
			if (q[1] >= '1' && q[1] <= '9') {
				snprintf(why, len, "has a back-reference (\\%c), whose matching time "
					 "has no bound; select the names without one", q[1]);
				return 1;
			}
			q++;
			continue;
		}
		if (*q == '[') {
			/* a bracket expression is one character: skip it ("[]a]" and "[^]a]":
			 * a ']' first is literal; "[[:alpha:]]": a class) */
			const char *b = q + 1;
			b += *b == '^';
			b += *b == ']';
			while (*b && *b != ']') {
				if (*b == '[' && (b[1] == ':' || b[1] == '.' || b[1] == '=')) {
					char t[3] = { b[1], ']', 0 };
					const char *e = strstr(b + 2, t);
					b = e ? e + 2 : b + 1;
				} else {
					b++;
				}
			}
			q = *b ? b : b - 1;
			continue;
		}
		if (*q == '(' && ++depth > SP_PATTERN_MAX_DEPTH) {
			snprintf(why, len, "nests groups deeper than %d", SP_PATTERN_MAX_DEPTH);
			return 1;
		}
		if (*q == ')' && depth > 0)
			depth--;
		if (*q == '*' || *q == '+' || *q == '?')
			quant = *q;
		if ((*q == '*' || *q == '+' || *q == '?' || *q == '|' || *q == '{') &&
		    ++ops > SP_PATTERN_MAX_OPS) {
			snprintf(why, len, "has more than %d operators (* + ? {} |); split it into "
				 "several patterns", SP_PATTERN_MAX_OPS);
			return 1;
		}
		if (*q != '{')
			continue;
		char *end;
		long lo = strtol(q + 1, &end, 10), hi = lo;
		if (end == q + 1)
			continue; /* a literal '{': regcomp decides */
		if (*end == ',') {
			hi = isdigit((unsigned char)end[1]) ? strtol(end + 1, &end, 10)
			     : lo > SP_PATTERN_MAX_COPIES ? lo : lo + 1;
			if (*end == ',')
				end++;
		}
		if (lo > SP_PATTERN_MAX_COPIES || hi > SP_PATTERN_MAX_COPIES) {
			snprintf(why, len, "has a repetition count above %d (write the names out, or "
				 "use * and +)", SP_PATTERN_MAX_COPIES);
			return 1;
		}
		copies *= (double)(hi > lo ? hi : lo) + 1;
		if (*end == '}') {
			q = end;
			quant = '}';
		}
	}
	if (copies > SP_PATTERN_MAX_COPIES) {
		snprintf(why, len, "has repetition counts that multiply to %.0f copies; at most "
			 "%d (write the names out, or use * and +)", copies, SP_PATTERN_MAX_COPIES);
		return 1;
	}
	return 0;
}

/* One pattern (a list element: dest is its sp_pattern): a glob, or a regex within the
 * cost bounds above that compiles. On error nothing of it is left to free. */
static int set_pattern(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
		       const char *p, void *dest)
{
	(void)kn;
	sp_pattern *pt = dest;
	const char *s = scalar(vn);
	if (!s || !*s)
		return perr(c, vn, p, "%s is not a string", show(vn));
	memset(pt, 0, sizeof *pt);
	pt->is_glob = !strcmp(k->key, "glob");
	pt->line = (int)vn->start_mark.line + 1;
	pt->col = (int)vn->start_mark.column + 1;
	char why[160];
	if (!pt->is_glob && pattern_too_costly(s, why, sizeof why))
		return perr(c, vn, p, "'%.40s%s' %s", s, strlen(s) > 40 ? "..." : "", why);
	if (!pt->is_glob) {
		int e = regcomp(&pt->re, s, REG_EXTENDED | REG_NOSUB);
		if (e) {
			char msg[128];
			regerror(e, &pt->re, msg, sizeof msg);
			return perr(c, vn, p, "'%s' does not compile: %s", s, msg);
		}
	}
	pt->text = strdup(s);
	if (!pt->text) {
		if (!pt->is_glob)
			regfree(&pt->re);
		return CS_ERR_NO_MEM;
	}
	return 0;
}

static const cs_cfg_key pattern_items[2] = {
	{ .key = "regex", .type = CS_CFG_CUSTOM, .set = set_pattern },
	{ .key = "glob", .type = CS_CFG_CUSTOM, .set = set_pattern },
};

/* A pattern or a list of them, appended to g's (what was stored before an error too, so
 * that group_free releases it). */
static int add_patterns(cs_cfg *c, sp_group *g, yaml_node_t *vn, const char *p, int is_glob)
{
	void *arr;
	int n;
	int rc = cs_cfg_list(c, &pattern_items[is_glob], sizeof(sp_pattern), vn, p, 1, "patterns",
			     &arr, &n);
	sp_pattern *np = n ? realloc(g->patterns, sizeof *np * (size_t)(g->n_patterns + n)) : NULL;
	if (n && !np) {
		for (int i = 0; i < n; i++) {
			sp_pattern *pt = (sp_pattern *)arr + i;
			if (!pt->is_glob)
				regfree(&pt->re);
			free(pt->text);
		}
		rc = CS_ERR_NO_MEM;
	} else if (n) {
		g->patterns = np;
		memcpy(g->patterns + g->n_patterns, arr, sizeof *np * (size_t)n);
		g->n_patterns += n;
	}
	free(arr);
	return rc;
}

/* Apply the keys of one mapping to g. skip_patterns: the param_name_patterns key is handled
 * by the caller (dict form). */
static void group_defaults(sp_group *g, const char *path, const yaml_node_t *n)
{
	memset(g, 0, sizeof *g);
	snprintf(g->path, sizeof g->path, "%s", path);
	g->line = (int)n->start_mark.line + 1;
	g->col = (int)n->start_mark.column + 1;
	g->algo = SP_STATIC;
	g->update.freq = 1;
	g->update.stop = -1;
	g->tiebreak_eps = 1e-8;
	g->erk_power = 1.0;
	g->death_rate = 0.5;
	g->death_rate_min = 0.005;
}

static void group_free(sp_group *g)
{
	sp_sched_free(&g->sparsity);
	sp_sched_free(&g->drop);
	free(g->update.steps);
	for (int i = 0; i < g->n_dense; i++)
		free(g->dense_layers[i]);
	free(g->dense_layers);
	for (int i = 0; i < g->n_patterns; i++) {
		if (!g->patterns[i].is_glob)
			regfree(&g->patterns[i].re);
		free(g->patterns[i].text);
	}
	free(g->patterns);
}

/* Defaults that depend on the algorithm, and cross-key checks, after all keys are merged. */
static int granet_given(const gparse *gp)
{
	return gp->seen[K_INIT_DENSITY] || gp->seen[K_FINAL_DENSITY] || gp->seen[K_PRUNE_START] ||
	       gp->seen[K_PRUNE_END] || gp->seen[K_DEATH_RATE] || gp->seen[K_DEATH_RATE_MIN];
}

static int finish_group(cs_cfg *c, gparse *gp, const yaml_node_t *n)
{
	sp_group *g = &gp->g;
	const gparse *sn = gp;
	const char *path = g->path;
	char p[160];
	if (!sn->seen[K_INIT_METHOD])
		g->init_method = g->algo == SP_GMP || sn->is_sideband ? SP_INIT_TOPK : SP_INIT_RANDOM;
	if (g->disabled)
		return 0;
	if (granet_given(sn) && g->algo != SP_GRANET)
		return perr(c, n, path, "init_density, final_density, prune_start, prune_end, "
					"death_rate are granet keys (algorithm is %s)",
			    g->algo == SP_STATIC ? "static" : g->algo == SP_GMP ? "gmp" :
						      g->algo == SP_SET    ? "set" :
									     "rigl");
	if (g->algo == SP_GRANET) {
		int dens = sn->seen[K_INIT_DENSITY] || sn->seen[K_FINAL_DENSITY] || sn->seen[K_PRUNE_START] || sn->seen[K_PRUNE_END];
		if (dens && sn->sparsity_node)
			return perr(c, sn->sparsity_at, path,
				    "both sparsity and init_density/final_density given");
		if (!sn->sparsity_node) {
			if (!sn->seen[K_FINAL_DENSITY] || !sn->seen[K_PRUNE_END])
				return perr(c, n, path, "granet needs final_density and prune_end "
							"(or a sparsity schedule)");
			double di = sn->seen[K_INIT_DENSITY] ? sn->init_density : 1.0;
			sp_sched_free(&g->sparsity);
			g->sparsity.type = SP_SCHED_POLY;
			g->sparsity.initial = 1.0 - di;
			g->sparsity.final = 1.0 - sn->final_density;
			g->sparsity.begin = (double)(sn->seen[K_PRUNE_START] ? sn->prune_start : 0);
			g->sparsity.end = (double)sn->prune_end;
			g->sparsity.power = 3;
			if (g->sparsity.end <= g->sparsity.begin)
				return perr(c, n, path, "prune_end %ld is not after prune_start %ld",
					    sn->prune_end, sn->seen[K_PRUNE_START] ? sn->prune_start : 0);
			if (g->sparsity.final >= 1.0 || g->sparsity.initial > g->sparsity.final)
				return perr(c, n, path, "final_density %g must be in (0, init_density]",
					    sn->final_density);
		}
		if (!sn->seen[K_SCOPE])
			g->scope = SP_SCOPE_GLOBAL; /* GraNet ranks globally (spec 2.6) */
	}
	if (!sn->sparsity_node && g->algo != SP_GRANET)
		return perr(c, n, path, "missing key 'sparsity'");
	if (g->algo == SP_STATIC && g->sparsity.type != SP_SCHED_CONSTANT) {
		snprintf(p, sizeof p, "%s.sparsity", path);
		return perr(c, sn->sparsity_at ? sn->sparsity_at : n, p,
			    "static needs a constant sparsity (use gmp for a schedule)");
	}
	if (g->algo == SP_GMP && g->sparsity.type == SP_SCHED_CONSTANT) {
		snprintf(p, sizeof p, "%s.sparsity", path);
		return perr(c, sn->sparsity_at ? sn->sparsity_at : n, p,
			    "%g is a constant; gmp needs a schedule (use static for a constant)",
			    g->sparsity.value);
	}
	if (g->algo == SP_STATIC && sn->update_given)
		return perr(c, n, path, "static masks are never updated; remove the update "
					"schedule");
	if (sn->seen[K_DROP] && g->algo != SP_SET && g->algo != SP_RIGL)
		return perr(c, n, path, "drop_fraction is only for set and rigl");
	if ((g->algo == SP_SET || g->algo == SP_RIGL) && !sn->seen[K_DROP]) {
		/* default: 0.3, cosine-decayed to 0 at update.stop when there is one (spec 7) */
		if (g->update.stop > 0 && g->update.n_steps == 0) {
			g->drop.type = SP_SCHED_COSINE;
			g->drop.init = 0.3;
			g->drop.half_period = (double)g->update.stop;
		} else {
			g->drop.type = SP_SCHED_CONSTANT;
			g->drop.value = 0.3;
		}
	}
	if (g->scope == SP_SCOPE_GLOBAL && g->algo != SP_GMP && g->algo != SP_GRANET)
		return perr(c, n, path, "scope: global is only for gmp and granet");
	if (g->scope == SP_SCOPE_GLOBAL && (g->balance_in || g->balance_out))
		return perr(c, n, path, "balanced groups need scope: per_tensor");
	if (g->algo == SP_GRANET && g->death_rate_min > g->death_rate)
		return perr(c, n, path, "death_rate_min %g is above death_rate %g",
			    g->death_rate_min, g->death_rate);
	return 0;
}

static int push_group(sp_config *cfg, sp_group *g)
{
	sp_group *ng = realloc(cfg->groups, sizeof *ng * (size_t)(cfg->n_groups + 1));
	if (!ng) {
		group_free(g);
		return CS_ERR_NO_MEM;
	}
	cfg->groups = ng;
	cfg->groups[cfg->n_groups++] = *g;
	return 0;
}

static void gparse_init(gparse *gp, const char *path, const yaml_node_t *n, int legacy)
{
	memset(gp, 0, sizeof *gp);
	group_defaults(&gp->g, path, n);
	gp->legacy = legacy;
}

/* One mapping: one group, or one group per param_name_patterns dict entry (the top level
 * walked for each, then the entry's overrides). */
static int parse_mapping(cs_cfg *c, sp_config *cfg, yaml_node_t *map, const char *path)
{
	int legacy = map_get(c, map, "type") != NULL;
	if (legacy && map_get(c, map, "algorithm"))
		return perr(c, map_get(c, map, "algorithm"), path,
			    "both type and algorithm given");
	yaml_node_t *pats = map_get(c, map, "param_name_patterns");
	if (pats && map_get(c, map, "param_filter"))
		return perr(c, map_get(c, map, "param_filter"), path,
			    "both param_name_patterns and param_filter given");
	gparse *gp = malloc(sizeof *gp);
	if (!gp)
		return CS_ERR_NO_MEM;
	int rc = 0;
	if (!pats || pats->type != YAML_MAPPING_NODE) {
		gparse_init(gp, path, map, legacy);
		gp->top = 1;
		rc = cs_cfg_walk(c, &group_table, map, path, gp, gp->seen);
		if (!rc)
			rc = finish_group(c, gp, map);
		if (rc)
			group_free(&gp->g);
		else
			rc = push_group(cfg, &gp->g);
		free(gp);
		return rc;
	}
	for (yaml_node_pair_t *pr = pats->data.mapping.pairs.start;
	     pr < pats->data.mapping.pairs.top && !rc; pr++) {
		yaml_node_t *kn = yaml_document_get_node(c->doc, pr->key);
		yaml_node_t *vn = yaml_document_get_node(c->doc, pr->value);
		char gpath[96];
		snprintf(gpath, sizeof gpath, "%s.param_name_patterns['%s']", path,
			 scalar(kn) ? scalar(kn) : "?");
		gparse_init(gp, gpath, kn, legacy);
		gp->top = 1;
		rc = cs_cfg_walk(c, &group_table, map, path, gp, gp->seen);
		if (!rc)
			rc = add_patterns(c, &gp->g, kn, gpath, 0);
		if (!rc && !is_null(vn)) {
			gp->top = 0;
			if (vn->type != YAML_MAPPING_NODE)
				rc = perr(c, vn, gpath, "%s is not a mapping of overrides", show(vn));
			else
				rc = cs_cfg_walk(c, &group_table, vn, gpath, gp, gp->seen);
		}
		if (!rc)
			rc = finish_group(c, gp, kn);
		if (rc)
			group_free(&gp->g);
		else
			rc = push_group(cfg, &gp->g);
	}
	free(gp);
	return rc;
}

static int set_group_item(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
			  const char *p, void *dest)
{
	(void)k;
	(void)kn;
	(void)dest;
	if (vn->type != YAML_MAPPING_NODE)
		return perr(c, vn, p, "%s is not a mapping (a group)", show(vn));
	return parse_mapping(c, c->user, vn, p);
}

void sp_config_free(sp_config *cfg)
{
	if (!cfg)
		return;
	for (int i = 0; i < cfg->n_groups; i++)
		group_free(&cfg->groups[i]);
	free(cfg->groups);
	free(cfg->file);
	free(cfg);
}

int sp_config_is_dense(const sp_config *cfg)
{
	return !cfg || cfg->dense || cfg->n_groups == 0;
}

/* an element of a list of groups (c->user: the sp_config) */
static int set_group_item(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *vn,
			  const char *p, void *dest);
static const cs_cfg_key group_item = { .key = "", .type = CS_CFG_CUSTOM, .set = set_group_item };

int sp_config_parse(sp_config **out, const char *file, yaml_document_t *doc, yaml_node_t *node,
		    char *err, size_t errlen)
{
	return sp_config_parse_where(out, file, doc, node, NULL, NULL, err, errlen);
}

int sp_config_parse_where(sp_config **out, const char *file, yaml_document_t *doc,
			  yaml_node_t *node, sp_where_fn where, void *where_ctx, char *err,
			  size_t errlen)
{
	*out = NULL;
	cs_cfg c = { .file = file ? file : "<config>", .doc = doc, .err = err, .errlen = errlen,
		     .where = where, .where_ctx = where_ctx };
	sp_config *cfg = calloc(1, sizeof *cfg);
	if (!cfg)
		return CS_ERR_NO_MEM;
	cfg->file = strdup(c.file);
	if (!cfg->file) {
		free(cfg);
		return CS_ERR_NO_MEM;
	}
	int rc = 0;
	if (!node || is_null(node)) {
		cfg->dense = 1;
	} else if (node->type == YAML_SCALAR_NODE) {
		/* bare number: static at that sparsity, default selection */
		sp_group g;
		group_defaults(&g, "sparsity", node);
		g.sparsity.type = SP_SCHED_CONSTANT;
		rc = set_one(&c, &ranged[R_SPARSITY], node, "sparsity", &g.sparsity.value);
		g.init_method = SP_INIT_RANDOM;
		if (!rc)
			rc = push_group(cfg, &g);
	} else if (node->type == YAML_SEQUENCE_NODE) {
		/* a list of groups; [] is none (dense) */
		void *none;
		int n;
		c.user = cfg;
		if (node->data.sequence.items.top != node->data.sequence.items.start)
			rc = cs_cfg_list(&c, &group_item, 0, node, "sparsity", 0, "groups", &none,
					 &n);
	} else {
		rc = parse_mapping(&c, cfg, node, "sparsity");
	}
	if (rc) {
		sp_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return 0;
}

static int load_text(sp_config **out, const char *name, const char *text, size_t len,
		     char *err, size_t errlen)
{
	yaml_document_t doc;
	int rc = cs_yaml_load(&doc, name, text, len, err, errlen);
	if (rc)
		return rc;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	yaml_node_t *node = NULL;
	if (root && root->type == YAML_MAPPING_NODE) {
		cs_cfg c = { .doc = &doc };
		node = map_get(&c, root, "sparsity");
	} else if (root && !is_null(root)) {
		snprintf(err, errlen, "%s:%lu:%lu: the config is not a mapping", name,
			 (unsigned long)root->start_mark.line + 1,
			 (unsigned long)root->start_mark.column + 1);
		yaml_document_delete(&doc);
		return CS_ERR_CONFIG;
	}
	rc = sp_config_parse(out, name, &doc, node, err, errlen);
	yaml_document_delete(&doc);
	return rc;
}

int sp_config_load_string(sp_config **out, const char *name, const char *yaml, char *err,
			  size_t errlen)
{
	*out = NULL;
	return load_text(out, name, yaml, strlen(yaml), err, errlen);
}

int sp_config_load_file(sp_config **out, const char *path, char *err, size_t errlen)
{
	*out = NULL;
	char *buf;
	size_t len;
	int rc = cs_yaml_read_file(path, &buf, &len, err, errlen);
	if (rc)
		return rc;
	rc = load_text(out, path, buf, len, err, errlen);
	free(buf);
	return rc;
}
