/*
 * config.c - the `sparsity:` block of a training YAML (libyaml document API) into an
 * sp_config: the Cerebras Model Zoo generations (1.7-1.9 `type: sideband`, 2.0/2.1 `type:`
 * with `schedule:` = update schedule, 2.2+ `algorithm:` with `update:` and `schedule:` =
 * alias of `sparsity:`), a bare number, a top-level list of groups, param_name_patterns
 * dicts with per-group overrides, and our keys (granet, distribution, scope, ...).
 * Every error names file:line:col, the key path and the offending value. Reference of the
 * keys and defaults: docs/sparsity.md.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cs_yaml.h"
#include "sparsity/sp_internal.h"

/* Key paths for messages ("sparsity.update.freq"); truncation is harmless here. */
__attribute__((noinline)) static void pjoin(char *dst, size_t n, const char *a, const char *b)
{
	snprintf(dst, n, "%s.%s", a, b);
}

__attribute__((noinline)) static void pindex(char *dst, size_t n, const char *a, int i)
{
	snprintf(dst, n, "%s[%d]", a, i);
}

typedef struct pctx {
	const char *file;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
	int legacy; /* `type:` given: `schedule` is the update schedule (2.0/2.1) */
	sp_where_fn where; /* NULL: file:line:col */
	void *where_ctx;
} pctx;

static int perr(pctx *c, const yaml_node_t *n, const char *path, const char *fmt, ...)
{
	if (c->err && c->errlen) {
		int o;
		if (c->where && n) {
			char w[1200];
			c->where(c->where_ctx, n, w, sizeof w);
			o = snprintf(c->err, c->errlen, "%s: %s: ", w, path);
		} else {
			o = snprintf(c->err, c->errlen, "%s:%lu:%lu: %s: ", c->file,
				     n ? (unsigned long)n->start_mark.line + 1 : 0ul,
				     n ? (unsigned long)n->start_mark.column + 1 : 0ul, path);
		}
		if (o >= 0 && (size_t)o < c->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(c->err + o, c->errlen - (size_t)o, fmt, ap);
			va_end(ap);
		}
		cs_yaml_one_line(c->err, c->errlen);
	}
	return CS_ERR_CONFIG;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int is_null(const yaml_node_t *n)
{
	const char *s = scalar(n);
	if (!n)
		return 1;
	if (!s || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return !*s || !strcmp(s, "~") || !strcasecmp(s, "null");
}

/* shows a node's value in a message */
static const char *show(const yaml_node_t *n)
{
	const char *s = scalar(n);
	if (s)
		return s;
	return n && n->type == YAML_SEQUENCE_NODE ? "[...]" : "{...}";
}

static int get_double(pctx *c, const yaml_node_t *n, const char *path, double *out)
{
	const char *s = scalar(n);
	char *end;
	if (!s || !*s)
		return perr(c, n, path, "%s is not a number", show(n));
	errno = 0;
	double v = strtod(s, &end);
	if (*end || errno || !isfinite(v))
		return perr(c, n, path, "%s is not a number", s);
	*out = v;
	return 0;
}

static int get_long(pctx *c, const yaml_node_t *n, const char *path, long lo, long *out)
{
	const char *s = scalar(n);
	char *end;
	if (!s || !*s)
		return perr(c, n, path, "%s is not an integer", show(n));
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*end || errno)
		return perr(c, n, path, "%s is not an integer", s);
	if (v < lo)
		return perr(c, n, path, "%s is less than %ld", s, lo);
	*out = v;
	return 0;
}

static int get_bool(pctx *c, const yaml_node_t *n, const char *path, int *out)
{
	const char *s = scalar(n);
	if (s && (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))) {
		*out = 1;
		return 0;
	}
	if (s && (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))) {
		*out = 0;
		return 0;
	}
	return perr(c, n, path, "%s is not a boolean (true or false)", show(n));
}

static int levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 99;
	int d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1];
			int v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			d[i][j] = v;
		}
	return d[la][lb];
}

static int unknown_key(pctx *c, const yaml_node_t *k, const char *path, const char *const *valid)
{
	const char *key = scalar(k) ? scalar(k) : "?";
	const char *best = NULL;
	int bd = 1 << 30;
	for (int i = 0; valid[i]; i++) {
		int d = levenshtein(key, valid[i]);
		if (d < bd) {
			bd = d;
			best = valid[i];
		}
	}
	if (best && bd <= 3 && bd < (int)strlen(key))
		return perr(c, k, path, "unknown key '%s' (did you mean %s?)", key, best);
	return perr(c, k, path, "unknown key '%s'", key);
}

#define FOR_PAIRS(c, map, p)                                                           \
	for (yaml_node_pair_t *p = (map)->data.mapping.pairs.start;                    \
	     p < (map)->data.mapping.pairs.top; p++)
#define KEYN(c, p) yaml_document_get_node((c)->doc, (p)->key)
#define VALN(c, p) yaml_document_get_node((c)->doc, (p)->value)

static yaml_node_t *map_get(pctx *c, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	FOR_PAIRS(c, map, p)
	{
		const char *k = scalar(KEYN(c, p));
		if (k && !strcmp(k, key))
			return VALN(c, p);
	}
	return NULL;
}

/* ---- hyperparameter schedules ------------------------------------------------------- */

/* range kinds for values: sparsity [0,1), fraction [0,1] */
enum { R_SPARSITY, R_FRACTION };

static int check_range(pctx *c, const yaml_node_t *n, const char *path, double v, int range)
{
	if (range == R_SPARSITY && !(v >= 0 && v < 1))
		return perr(c, n, path, "%s is not in [0, 1)", show(n));
	if (range == R_FRACTION && !(v >= 0 && v <= 1))
		return perr(c, n, path, "%s is not in [0, 1]", show(n));
	return 0;
}

static int get_ranged(pctx *c, const yaml_node_t *n, const char *path, int range, double *out)
{
	int rc = get_double(c, n, path, out);
	return rc ? rc : check_range(c, n, path, *out, range);
}

static int parse_values(pctx *c, yaml_node_t *seq, const char *path, int range, double **vals,
			int *nv)
{
	int n = (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	if (n == 0)
		return perr(c, seq, path, "empty list");
	double *v = calloc((size_t)n, sizeof *v);
	if (!v)
		return CS_ERR_NO_MEM;
	for (int i = 0; i < n; i++) {
		yaml_node_t *it = yaml_document_get_node(c->doc, seq->data.sequence.items.start[i]);
		char p[160];
		pindex(p, sizeof p, path, i);
		int rc = get_ranged(c, it, p, range, &v[i]);
		if (rc) {
			free(v);
			return rc;
		}
	}
	free(*vals);
	*vals = v;
	*nv = n;
	return 0;
}

static int parse_sched(pctx *c, yaml_node_t *n, const char *path, int range, sp_sched *s)
{
	sp_sched_free(s);
	memset(s, 0, sizeof *s);
	s->line = (int)n->start_mark.line + 1;
	s->col = (int)n->start_mark.column + 1;
	if (n->type == YAML_SCALAR_NODE) {
		s->type = SP_SCHED_CONSTANT;
		return get_ranged(c, n, path, range, &s->value);
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		s->type = SP_SCHED_CYCLING;
		return parse_values(c, n, path, range, &s->values, &s->n_values);
	}
	yaml_node_t *tn = map_get(c, n, "type");
	const char *ty = scalar(tn);
	if (!ty)
		return perr(c, n, path, "a schedule needs a type (constant, linear, exp, power, "
					"cosine, cycling, cubic, polynomial)");
	static const struct {
		const char *name;
		int type;
		const char *keys[7];
		int nreq; /* the first nreq keys are required */
	} kinds[] = {
		{ "constant", SP_SCHED_CONSTANT, { "value" }, 1 },
		{ "linear", SP_SCHED_LINEAR, { "init", "slope" }, 2 },
		{ "exp", SP_SCHED_EXP, { "init", "gamma", "final" }, 2 },
		{ "power", SP_SCHED_POWER, { "init", "beta" }, 2 },
		{ "cosine", SP_SCHED_COSINE, { "init", "half_period", "minimum" }, 2 },
		{ "cycling", SP_SCHED_CYCLING, { "values" }, 1 },
		{ "cubic", SP_SCHED_POLY, { "initial", "final", "begin", "end", "power" }, 4 },
		{ "polynomial", SP_SCHED_POLY, { "initial", "final", "begin", "end", "power" }, 4 },
	};
	int k = -1;
	for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++)
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
	const char *valid[9] = { "type" };
	for (int i = 0; i < 7 && kinds[k].keys[i]; i++)
		valid[i + 1] = kinds[k].keys[i];
	FOR_PAIRS(c, n, pr)
	{
		yaml_node_t *kn = KEYN(c, pr), *vn = VALN(c, pr);
		const char *key = scalar(kn);
		int found = 0;
		for (int i = 0; valid[i]; i++)
			found |= key && !strcmp(key, valid[i]);
		pjoin(p, sizeof p, path, key ? key : "?");
		if (!found)
			return unknown_key(c, kn, p, valid);
		int rc = 0;
		if (!strcmp(key, "type"))
			continue;
		else if (!strcmp(key, "values")) {
			if (vn->type != YAML_SEQUENCE_NODE)
				return perr(c, vn, p, "%s is not a list", show(vn));
			rc = parse_values(c, vn, p, range, &s->values, &s->n_values);
		} else if (!strcmp(key, "value"))
			rc = get_ranged(c, vn, p, range, &s->value);
		else if (!strcmp(key, "init"))
			rc = get_ranged(c, vn, p, range, &s->init);
		else if (!strcmp(key, "initial"))
			rc = get_ranged(c, vn, p, range, &s->initial);
		else if (!strcmp(key, "final"))
			rc = s->type == SP_SCHED_EXP ? get_double(c, vn, p, &s->final) :
						       get_ranged(c, vn, p, range, &s->final);
		else if (!strcmp(key, "minimum"))
			rc = get_ranged(c, vn, p, range, &s->minimum);
		else if (!strcmp(key, "slope"))
			rc = get_double(c, vn, p, &s->slope);
		else if (!strcmp(key, "gamma"))
			rc = get_double(c, vn, p, &s->gamma);
		else if (!strcmp(key, "beta"))
			rc = get_double(c, vn, p, &s->beta);
		else if (!strcmp(key, "power"))
			rc = get_double(c, vn, p, &s->power);
		else if (!strcmp(key, "half_period")) {
			rc = get_double(c, vn, p, &s->half_period);
			if (!rc && s->half_period <= 0)
				rc = perr(c, vn, p, "%s is not positive", show(vn));
		} else if (!strcmp(key, "begin") || !strcmp(key, "end")) {
			long v;
			rc = get_long(c, vn, p, 0, &v);
			if (!strcmp(key, "begin"))
				s->begin = (double)v;
			else
				s->end = (double)v;
		}
		if (rc)
			return rc;
	}
	for (int i = 0; i < kinds[k].nreq; i++)
		if (!map_get(c, n, kinds[k].keys[i]))
			return perr(c, n, path, "%s schedule needs '%s'", kinds[k].name,
				    kinds[k].keys[i]);
	if (s->type == SP_SCHED_POLY && s->end <= s->begin)
		return perr(c, n, path, "end %g is not after begin %g", s->end, s->begin);
	return 0;
}

/* ---- update schedules ---------------------------------------------------------------- */

static int parse_steps(pctx *c, yaml_node_t *seq, const char *path, sp_update *u)
{
	int n = (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	if (n == 0)
		return perr(c, seq, path, "empty list of update steps");
	long *v = calloc((size_t)n, sizeof *v);
	if (!v)
		return CS_ERR_NO_MEM;
	for (int i = 0; i < n; i++) {
		char p[160];
		pindex(p, sizeof p, path, i);
		int rc = get_long(c, yaml_document_get_node(c->doc, seq->data.sequence.items.start[i]),
				  p, 0, &v[i]);
		if (rc) {
			free(v);
			return rc;
		}
	}
	free(u->steps);
	u->steps = v;
	u->n_steps = n;
	return 0;
}

static int parse_update(pctx *c, yaml_node_t *n, const char *path, sp_update *u)
{
	free(u->steps);
	memset(u, 0, sizeof *u);
	u->given = 1;
	u->freq = 1;
	u->stop = -1;
	if (n->type == YAML_SCALAR_NODE)
		return get_long(c, n, path, 1, &u->freq);
	if (n->type == YAML_SEQUENCE_NODE)
		return parse_steps(c, n, path, u);
	static const char *const valid[] = { "freq", "start", "stop", "end", "steps", "type", NULL };
	int have_stop = 0;
	FOR_PAIRS(c, n, pr)
	{
		yaml_node_t *kn = KEYN(c, pr), *vn = VALN(c, pr);
		const char *key = scalar(kn);
		char p[160];
		pjoin(p, sizeof p, path, key ? key : "?");
		int rc;
		if (!key)
			return unknown_key(c, kn, p, valid);
		if (!strcmp(key, "freq"))
			rc = get_long(c, vn, p, 1, &u->freq);
		else if (!strcmp(key, "start"))
			rc = get_long(c, vn, p, 0, &u->start);
		else if (!strcmp(key, "stop") || !strcmp(key, "end")) {
			if (have_stop)
				return perr(c, kn, p, "both stop and end given (stop is exclusive, "
						      "end inclusive)");
			have_stop = 1;
			rc = is_null(vn) ? 0 : get_long(c, vn, p, 0, &u->stop);
			if (!rc && !is_null(vn) && !strcmp(key, "end"))
				u->stop++; /* end is inclusive */
		} else if (!strcmp(key, "steps")) {
			if (vn->type != YAML_SEQUENCE_NODE)
				return perr(c, vn, p, "%s is not a list of steps", show(vn));
			rc = parse_steps(c, vn, p, u);
		} else if (!strcmp(key, "type")) {
			const char *ty = scalar(vn);
			rc = ty && (!strcmp(ty, "periodic") || !strcmp(ty, "freq") ||
				    !strcmp(ty, "list")) ?
				     0 :
				     perr(c, vn, p, "'%s' is not one of periodic, freq, list", show(vn));
		} else
			return unknown_key(c, kn, p, valid);
		if (rc)
			return rc;
	}
	if (u->stop >= 0 && u->stop <= u->start && u->n_steps == 0)
		return perr(c, n, path, "stop %ld is not after start %ld", u->stop, u->start);
	return 0;
}

/* ---- groups -------------------------------------------------------------------------- */

static const char *const group_keys[] = {
	"type", "algorithm", "sparsity", "schedule", "init_method", "seed",
	"param_name_patterns", "param_filter", "update", "drop_fraction", "tiebreak",
	"balance_in_groups", "balance_out_groups", "in_groups", "out_groups", "distribution",
	"sparsity_distribution", "erk_power_scale", "dense_layers", "scope", "grow_init",
	"skip_optimizer_on_update", "init_density", "final_density", "prune_start", "prune_end",
	"death_rate", "death_rate_min", "sparsity_schedule", "add_summaries", "dump_masks", NULL
};

/* What one mapping (top level or a pattern's overrides) said, before defaults. */
typedef struct seen {
	int algo_given, init_given, sparsity_node, update_given, drop_given, granet_given;
	int is_sideband;
	double init_density, final_density;
	long prune_start, prune_end;
	int have_id, have_fd, have_ps, have_pe;
	const yaml_node_t *sparsity_at, *schedule_at;
} seen;

static int parse_algo(pctx *c, yaml_node_t *vn, const char *p, int allow_sideband, sp_group *g,
		      seen *sn)
{
	static const char *const names[] = { "static", "gmp", "set", "rigl", "granet" };
	const char *s = scalar(vn);
	if (s && allow_sideband && !strcasecmp(s, "sideband")) {
		g->algo = SP_STATIC;
		sn->is_sideband = 1;
		sn->algo_given = 1;
		return 0;
	}
	for (int i = 0; s && i < SP_NALGO; i++)
		if (!strcasecmp(s, names[i])) {
			g->algo = i;
			sn->algo_given = 1;
			return 0;
		}
	return perr(c, vn, p, "'%s' is not one of static, gmp, set, rigl, granet%s", show(vn),
		    allow_sideband ? ", sideband" : "");
}

static int str_list(pctx *c, yaml_node_t *vn, const char *p, char ***out, int *n,
		    yaml_node_t ***nodes)
{
	int cnt = vn->type == YAML_SEQUENCE_NODE ?
			  (int)(vn->data.sequence.items.top - vn->data.sequence.items.start) :
			  1;
	if (vn->type == YAML_MAPPING_NODE || cnt == 0)
		return perr(c, vn, p, "%s is not a string or a list of strings", show(vn));
	char **v = calloc((size_t)cnt, sizeof *v);
	yaml_node_t **nd = calloc((size_t)cnt, sizeof *nd);
	if (!v || !nd) {
		free(v);
		free(nd);
		return CS_ERR_NO_MEM;
	}
	for (int i = 0; i < cnt; i++) {
		yaml_node_t *it = vn->type == YAML_SEQUENCE_NODE ?
					  yaml_document_get_node(c->doc,
								 vn->data.sequence.items.start[i]) :
					  vn;
		const char *s = scalar(it);
		if (!s || !*s) {
			for (int j = 0; j < i; j++)
				free(v[j]);
			free(v);
			free(nd);
			return perr(c, it, p, "%s is not a string", show(it));
		}
		v[i] = strdup(s);
		nd[i] = it;
	}
	*out = v;
	*n = cnt;
	if (nodes)
		*nodes = nd;
	else
		free(nd);
	return 0;
}

/* glibc's regcomp copies a subexpression once per count of a bounded repetition, so
 * nested counts multiply ("((a{1,99}){1,99}){1,99}" is a million copies, gigabytes). Parameter
 * names are short: bound the text and the product of the counts, which bounds regcomp's
 * work and memory. */
#define SP_PATTERN_MAX_LEN 256
#define SP_PATTERN_MAX_COPIES 1000

static int pattern_too_costly(const char *re, char *why, size_t len)
{
	size_t n = strlen(re);
	if (n > SP_PATTERN_MAX_LEN) {
		snprintf(why, len, "is %zu characters; at most %d", n, SP_PATTERN_MAX_LEN);
		return 1;
	}
	double copies = 1;
	for (const char *q = re; *q; q++) {
		if (*q == '\\' && q[1]) {
			q++;
			continue;
		}
		if (*q != '{')
			continue;
		char *end;
		long lo = strtol(q + 1, &end, 10), hi = lo;
		if (end == q + 1)
			continue; /* a literal '{': regcomp decides */
		if (*end == ',') {
			hi = isdigit((unsigned char)end[1]) ? strtol(end + 1, &end, 10) : lo + 1;
			if (*end == ',')
				end++;
		}
		copies *= (double)(hi > lo ? hi : lo) + 1;
	}
	if (copies > SP_PATTERN_MAX_COPIES) {
		snprintf(why, len, "has repetition counts that multiply to %.0f copies; at most "
			 "%d (write the names out, or use * and +)", copies, SP_PATTERN_MAX_COPIES);
		return 1;
	}
	return 0;
}

static int add_patterns(pctx *c, sp_group *g, yaml_node_t *vn, const char *p, int is_glob)
{
	char **strs;
	int n;
	yaml_node_t **nodes;
	int rc = str_list(c, vn, p, &strs, &n, &nodes);
	if (rc)
		return rc;
	sp_pattern *np = realloc(g->patterns, sizeof *np * (size_t)(g->n_patterns + n));
	if (!np) {
		rc = CS_ERR_NO_MEM;
		n = 0;
	} else {
		g->patterns = np;
	}
	for (int i = 0; i < n; i++) {
		sp_pattern *pt = &g->patterns[g->n_patterns];
		memset(pt, 0, sizeof *pt);
		pt->text = strs[i];
		strs[i] = NULL;
		pt->is_glob = is_glob;
		pt->line = (int)nodes[i]->start_mark.line + 1;
		pt->col = (int)nodes[i]->start_mark.column + 1;
		char why[160];
		if (!is_glob && pattern_too_costly(pt->text, why, sizeof why)) {
			rc = perr(c, nodes[i], p, "'%.40s%s' %s", pt->text,
				  strlen(pt->text) > 40 ? "..." : "", why);
			free(pt->text);
			break;
		}
		if (!is_glob) {
			int e = regcomp(&pt->re, pt->text, REG_EXTENDED | REG_NOSUB);
			if (e) {
				char msg[128];
				regerror(e, &pt->re, msg, sizeof msg);
				free(pt->text);
				rc = perr(c, nodes[i], p, "'%s' does not compile: %s", scalar(nodes[i]),
					  msg);
				break;
			}
		}
		g->n_patterns++;
	}
	for (int i = 0; i < n; i++)
		free(strs[i]);
	free(strs);
	free(nodes);
	return rc;
}

/* Apply the keys of one mapping to g. skip_patterns: the param_name_patterns key is handled
 * by the caller (dict form). */
static int apply_keys(pctx *c, yaml_node_t *map, const char *path, sp_group *g, seen *sn,
		      int top)
{
	FOR_PAIRS(c, map, pr)
	{
		yaml_node_t *kn = KEYN(c, pr), *vn = VALN(c, pr);
		const char *key = scalar(kn);
		char p[192];
		pjoin(p, sizeof p, path, key ? key : "?");
		int known = 0;
		for (int i = 0; key && group_keys[i]; i++)
			known |= !strcmp(key, group_keys[i]);
		if (!known)
			return unknown_key(c, kn, p, group_keys);
		int rc = 0;
		if (!strcmp(key, "type")) {
			rc = parse_algo(c, vn, p, 1, g, sn);
		} else if (!strcmp(key, "algorithm")) {
			rc = parse_algo(c, vn, p, 0, g, sn);
		} else if (!strcmp(key, "sparsity") ||
			   (!strcmp(key, "schedule") && !c->legacy)) {
			const yaml_node_t **at = !strcmp(key, "sparsity") ? &sn->sparsity_at :
									    &sn->schedule_at;
			*at = kn;
			if (sn->sparsity_at && sn->schedule_at)
				return perr(c, kn, p, "both sparsity and schedule given (since 2.2 "
						      "schedule is an alias of sparsity)");
			if (is_null(vn)) {
				g->disabled = 1;
				sp_sched_free(&g->sparsity);
				g->sparsity.type = SP_SCHED_NONE;
				sn->sparsity_node = 1;
				continue;
			}
			g->disabled = 0;
			rc = parse_sched(c, vn, p, R_SPARSITY, &g->sparsity);
			sn->sparsity_node = 1;
		} else if (!strcmp(key, "schedule") || !strcmp(key, "update")) {
			if (sn->update_given)
				return perr(c, kn, p, "update schedule given twice (schedule and "
						      "update)");
			rc = parse_update(c, vn, p, &g->update);
			sn->update_given = 1;
		} else if (!strcmp(key, "sparsity_schedule")) {
			/* 1.8: [[step, sparsity], ...] = listed update steps + cycling values */
			int n = vn->type == YAML_SEQUENCE_NODE ?
					(int)(vn->data.sequence.items.top -
					      vn->data.sequence.items.start) :
					0;
			if (n == 0)
				return perr(c, vn, p, "%s is not a list of [step, sparsity] pairs",
					    show(vn));
			sp_sched_free(&g->sparsity);
			free(g->update.steps);
			memset(&g->update, 0, sizeof g->update);
			g->update.given = 1;
			g->update.freq = 1;
			g->update.stop = -1;
			g->update.steps = calloc((size_t)n, sizeof(long));
			g->sparsity.values = calloc((size_t)n, sizeof(double));
			if (!g->update.steps || !g->sparsity.values)
				return CS_ERR_NO_MEM;
			g->update.n_steps = n;
			g->sparsity.type = SP_SCHED_CYCLING;
			g->sparsity.n_values = n;
			for (int i = 0; i < n; i++) {
				yaml_node_t *it = yaml_document_get_node(
					c->doc, vn->data.sequence.items.start[i]);
				char q[208];
				pindex(q, sizeof q, p, i);
				if (it->type != YAML_SEQUENCE_NODE ||
				    it->data.sequence.items.top - it->data.sequence.items.start != 2)
					return perr(c, it, q, "%s is not a [step, sparsity] pair",
						    show(it));
				rc = get_long(c, yaml_document_get_node(c->doc, it->data.sequence.items.start[0]),
					      q, 0, &g->update.steps[i]);
				if (!rc)
					rc = get_ranged(c,
							yaml_document_get_node(
								c->doc, it->data.sequence.items.start[1]),
							q, R_SPARSITY, &g->sparsity.values[i]);
				if (rc)
					return rc;
			}
			sn->sparsity_node = sn->update_given = 1;
			sn->sparsity_at = kn;
		} else if (!strcmp(key, "init_method")) {
			const char *s = scalar(vn);
			sn->init_given = 1;
			if (s && !strcmp(s, "random"))
				g->init_method = SP_INIT_RANDOM;
			else if (s && !strcmp(s, "topk"))
				g->init_method = SP_INIT_TOPK;
			else if (s && !strcmp(s, "from_zeros"))
				g->init_method = SP_INIT_FROM_ZEROS;
			else
				rc = perr(c, vn, p, "'%s' is not one of random, topk, from_zeros",
					  show(vn));
		} else if (!strcmp(key, "seed")) {
			long v;
			rc = get_long(c, vn, p, 0, &v);
			g->seed = (uint64_t)v;
			g->has_seed = 1;
		} else if (!strcmp(key, "param_name_patterns")) {
			if (!top)
				return perr(c, kn, p, "param_name_patterns cannot be nested");
			if (vn->type != YAML_MAPPING_NODE)
				rc = add_patterns(c, g, vn, p, 0);
		} else if (!strcmp(key, "param_filter")) {
			rc = add_patterns(c, g, vn, p, 1);
		} else if (!strcmp(key, "drop_fraction")) {
			rc = parse_sched(c, vn, p, R_FRACTION, &g->drop);
			sn->drop_given = 1;
		} else if (!strcmp(key, "tiebreak")) {
			yaml_node_t *tn = vn->type == YAML_MAPPING_NODE ? map_get(c, vn, "type") : vn;
			const char *s = scalar(tn);
			if (s && !strcmp(s, "none"))
				g->tiebreak = SP_TB_NONE;
			else if (s && !strcmp(s, "first"))
				g->tiebreak = SP_TB_FIRST;
			else if (s && !strcmp(s, "random"))
				g->tiebreak = SP_TB_RANDOM;
			else
				return perr(c, tn ? tn : vn, p, "'%s' is not one of none, first, random",
					    show(tn ? tn : vn));
			if (vn->type == YAML_MAPPING_NODE) {
				FOR_PAIRS(c, vn, q)
				{
					const char *k2 = scalar(KEYN(c, q));
					static const char *const tv[] = { "type", "eps", NULL };
					char pp[208];
					pjoin(pp, sizeof pp, p, k2 ? k2 : "?");
					if (k2 && !strcmp(k2, "eps")) {
						rc = get_double(c, VALN(c, q), pp, &g->tiebreak_eps);
						if (!rc && g->tiebreak_eps < 0)
							rc = perr(c, VALN(c, q), pp, "%s is negative",
								  show(VALN(c, q)));
					} else if (!k2 || strcmp(k2, "type"))
						rc = unknown_key(c, KEYN(c, q), pp, tv);
					if (rc)
						return rc;
				}
			}
		} else if (!strcmp(key, "balance_in_groups") || !strcmp(key, "in_groups") ||
			   !strcmp(key, "balance_out_groups") || !strcmp(key, "out_groups")) {
			long v;
			rc = get_long(c, vn, p, 1, &v);
			if (!rc && v > 1 << 20)
				rc = perr(c, vn, p, "%s is too large", show(vn));
			if (strstr(key, "in_"))
				g->balance_in = (int)v;
			else
				g->balance_out = (int)v;
			if (!rc && g->balance_in && g->balance_out)
				rc = perr(c, kn, p, "balance_in_groups and balance_out_groups are "
						    "mutually exclusive");
		} else if (!strcmp(key, "distribution") || !strcmp(key, "sparsity_distribution")) {
			const char *s = scalar(vn);
			if (s && !strcasecmp(s, "uniform"))
				g->distribution = SP_DIST_UNIFORM;
			else if (s && !strcasecmp(s, "er"))
				g->distribution = SP_DIST_ER;
			else if (s && !strcasecmp(s, "erk"))
				g->distribution = SP_DIST_ERK;
			else
				rc = perr(c, vn, p, "'%s' is not one of uniform, er, erk", show(vn));
		} else if (!strcmp(key, "erk_power_scale")) {
			rc = get_double(c, vn, p, &g->erk_power);
			if (!rc && g->erk_power < 0)
				rc = perr(c, vn, p, "%s is negative", show(vn));
		} else if (!strcmp(key, "dense_layers")) {
			for (int i = 0; i < g->n_dense; i++)
				free(g->dense_layers[i]);
			free(g->dense_layers);
			g->dense_layers = NULL;
			g->n_dense = 0;
			rc = str_list(c, vn, p, &g->dense_layers, &g->n_dense, NULL);
		} else if (!strcmp(key, "scope")) {
			const char *s = scalar(vn);
			if (s && !strcmp(s, "per_tensor"))
				g->scope = SP_SCOPE_PER_TENSOR;
			else if (s && !strcmp(s, "global"))
				g->scope = SP_SCOPE_GLOBAL;
			else
				rc = perr(c, vn, p, "'%s' is not one of per_tensor, global", show(vn));
		} else if (!strcmp(key, "grow_init")) {
			const char *s = scalar(vn);
			if (!s || strcmp(s, "zeros"))
				rc = perr(c, vn, p, "'%s' is not supported (only zeros)", show(vn));
		} else if (!strcmp(key, "skip_optimizer_on_update")) {
			rc = get_bool(c, vn, p, &g->skip_opt);
		} else if (!strcmp(key, "init_density") || !strcmp(key, "final_density")) {
			double v;
			rc = get_double(c, vn, p, &v);
			if (!rc && !(v > 0 && v <= 1))
				rc = perr(c, vn, p, "%s is not in (0, 1]", show(vn));
			if (!strcmp(key, "init_density")) {
				sn->init_density = v;
				sn->have_id = 1;
			} else {
				sn->final_density = v;
				sn->have_fd = 1;
			}
			sn->granet_given = 1;
		} else if (!strcmp(key, "prune_start") || !strcmp(key, "prune_end")) {
			long v;
			rc = get_long(c, vn, p, 0, &v);
			if (!strcmp(key, "prune_start")) {
				sn->prune_start = v;
				sn->have_ps = 1;
			} else {
				sn->prune_end = v;
				sn->have_pe = 1;
			}
			sn->granet_given = 1;
		} else if (!strcmp(key, "death_rate") || !strcmp(key, "death_rate_min")) {
			double v;
			rc = get_double(c, vn, p, &v);
			if (!rc && !(v >= 0 && v <= 1))
				rc = perr(c, vn, p, "%s is not in [0, 1]", show(vn));
			if (!strcmp(key, "death_rate"))
				g->death_rate = v;
			else
				g->death_rate_min = v;
			sn->granet_given = 1;
		}
		/* add_summaries, dump_masks: accepted and ignored (logging is the trainer's) */
		if (rc)
			return rc;
	}
	return 0;
}

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
static int finish_group(pctx *c, sp_group *g, const seen *sn, const yaml_node_t *n)
{
	const char *path = g->path;
	char p[160];
	if (!sn->init_given)
		g->init_method = g->algo == SP_GMP || sn->is_sideband ? SP_INIT_TOPK : SP_INIT_RANDOM;
	if (g->disabled)
		return 0;
	if (sn->granet_given && g->algo != SP_GRANET)
		return perr(c, n, path, "init_density, final_density, prune_start, prune_end, "
					"death_rate are granet keys (algorithm is %s)",
			    g->algo == SP_STATIC ? "static" : g->algo == SP_GMP ? "gmp" :
						      g->algo == SP_SET    ? "set" :
									     "rigl");
	if (g->algo == SP_GRANET) {
		int dens = sn->have_id || sn->have_fd || sn->have_ps || sn->have_pe;
		if (dens && sn->sparsity_node)
			return perr(c, sn->sparsity_at, path,
				    "both sparsity and init_density/final_density given");
		if (!sn->sparsity_node) {
			if (!sn->have_fd || !sn->have_pe)
				return perr(c, n, path, "granet needs final_density and prune_end "
							"(or a sparsity schedule)");
			double di = sn->have_id ? sn->init_density : 1.0;
			sp_sched_free(&g->sparsity);
			g->sparsity.type = SP_SCHED_POLY;
			g->sparsity.initial = 1.0 - di;
			g->sparsity.final = 1.0 - sn->final_density;
			g->sparsity.begin = (double)(sn->have_ps ? sn->prune_start : 0);
			g->sparsity.end = (double)sn->prune_end;
			g->sparsity.power = 3;
			if (g->sparsity.end <= g->sparsity.begin)
				return perr(c, n, path, "prune_end %ld is not after prune_start %ld",
					    sn->prune_end, sn->have_ps ? sn->prune_start : 0);
			if (g->sparsity.final >= 1.0 || g->sparsity.initial > g->sparsity.final)
				return perr(c, n, path, "final_density %g must be in (0, init_density]",
					    sn->final_density);
		}
		if (!map_get(c, (yaml_node_t *)n, "scope"))
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
	if (sn->drop_given && g->algo != SP_SET && g->algo != SP_RIGL)
		return perr(c, n, path, "drop_fraction is only for set and rigl");
	if ((g->algo == SP_SET || g->algo == SP_RIGL) && !sn->drop_given) {
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

/* One mapping: one group, or one group per param_name_patterns dict entry. */
static int parse_mapping(pctx *c, sp_config *cfg, yaml_node_t *map, const char *path)
{
	c->legacy = map_get(c, map, "type") != NULL;
	if (c->legacy && map_get(c, map, "algorithm"))
		return perr(c, map_get(c, map, "algorithm"), path,
			    "both type and algorithm given");
	yaml_node_t *pats = map_get(c, map, "param_name_patterns");
	if (pats && map_get(c, map, "param_filter"))
		return perr(c, map_get(c, map, "param_filter"), path,
			    "both param_name_patterns and param_filter given");
	if (!pats || pats->type != YAML_MAPPING_NODE) {
		sp_group g;
		seen sn = { 0 };
		group_defaults(&g, path, map);
		int rc = apply_keys(c, map, path, &g, &sn, 1);
		if (!rc)
			rc = finish_group(c, &g, &sn, map);
		if (rc) {
			group_free(&g);
			return rc;
		}
		return push_group(cfg, &g);
	}
	FOR_PAIRS(c, pats, pr)
	{
		yaml_node_t *kn = KEYN(c, pr), *vn = VALN(c, pr);
		char gp[96];
		snprintf(gp, sizeof gp, "%s.param_name_patterns['%s']", path,
			 scalar(kn) ? scalar(kn) : "?");
		sp_group g;
		seen sn = { 0 };
		group_defaults(&g, gp, kn);
		int rc = apply_keys(c, map, path, &g, &sn, 1);
		if (!rc)
			rc = add_patterns(c, &g, kn, gp, 0);
		if (!rc && !is_null(vn)) {
			if (vn->type != YAML_MAPPING_NODE)
				rc = perr(c, vn, gp, "%s is not a mapping of overrides", show(vn));
			else
				rc = apply_keys(c, vn, gp, &g, &sn, 0);
		}
		if (!rc)
			rc = finish_group(c, &g, &sn, kn);
		if (rc) {
			group_free(&g);
			return rc;
		}
		rc = push_group(cfg, &g);
		if (rc)
			return rc;
	}
	return 0;
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
	pctx c = { .file = file ? file : "<config>", .doc = doc, .err = err, .errlen = errlen,
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
		rc = get_ranged(&c, node, "sparsity", R_SPARSITY, &g.sparsity.value);
		g.init_method = SP_INIT_RANDOM;
		if (!rc)
			rc = push_group(cfg, &g);
	} else if (node->type == YAML_SEQUENCE_NODE) {
		int n = (int)(node->data.sequence.items.top - node->data.sequence.items.start);
		for (int i = 0; i < n && !rc; i++) {
			yaml_node_t *it = yaml_document_get_node(doc, node->data.sequence.items.start[i]);
			char path[32];
			snprintf(path, sizeof path, "sparsity[%d]", i);
			if (it->type != YAML_MAPPING_NODE)
				rc = perr(&c, it, path, "%s is not a mapping (a group)", show(it));
			else
				rc = parse_mapping(&c, cfg, it, path);
		}
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
		pctx c = { .doc = &doc };
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
