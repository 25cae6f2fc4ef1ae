/*
 * cs_config.c - the schema-driven config walker (see cs_config.h): value checks by type
 * and range, unknown keys with the nearest valid one, defaults, resolved values and the
 * key reference, all from the same tables.
 */
#include "common/cs_config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cs_error.h"
#include "common/cs_yaml.h"

int cs_cfg_error(cs_cfg *c, const yaml_node_t *n, const char *path, const char *fmt, ...)
{
	if (!c->err || !c->errlen)
		return CS_ERR_CONFIG;
	int o;
	if (c->where && n) {
		char w[1200];
		c->where(c->where_ctx, n, w, sizeof w);
		o = snprintf(c->err, c->errlen, "%s: %s%s", w, path, *path ? ": " : "");
	} else {
		o = snprintf(c->err, c->errlen, "%s:%lu:%lu: %s%s", c->file,
			     n ? (unsigned long)n->start_mark.line + 1 : 0ul,
			     n ? (unsigned long)n->start_mark.column + 1 : 0ul, path,
			     *path ? ": " : "");
	}
	if (o >= 0 && (size_t)o < c->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err + o, c->errlen - (size_t)o, fmt, ap);
		va_end(ap);
	}
	cs_yaml_one_line(c->err, c->errlen);
	return CS_ERR_CONFIG;
}

const char *cs_cfg_scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

int cs_cfg_is_null(const yaml_node_t *n)
{
	const char *s = cs_cfg_scalar(n);
	if (!n)
		return 1;
	if (!s || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return !*s || !strcmp(s, "~") || !strcasecmp(s, "null");
}

const char *cs_cfg_show(const yaml_node_t *n)
{
	const char *s = cs_cfg_scalar(n);
	if (s)
		return s;
	return n && n->type == YAML_SEQUENCE_NODE ? "[...]" : "{...}";
}

yaml_node_t *cs_cfg_map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		const char *k = cs_cfg_scalar(yaml_document_get_node(doc, p->key));
		if (k && !strcmp(k, key))
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

int cs_cfg_edit_distance(const char *a, const char *b)
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
			int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
			int v = sub < del ? sub : del;
			d[i][j] = v < ins ? v : ins;
			/* transposition counts as one edit */
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < d[i][j])
				d[i][j] = d[i - 2][j - 2] + 1;
		}
	return d[la][lb];
}

long cs_cfg_utf8_next(const unsigned char *s, int *len)
{
	unsigned c = s[0];
	int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
	if (!n)
		return -1;
	long cp = n == 1 ? (long)c : (long)(c & (0x7f >> n));
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	static const long min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = n;
	return cp;
}

int cs_cfg_yaml_printable(long cp)
{
	return cp == 0x0a || (cp >= 0x20 && cp <= 0x7e) || cp == 0x85 ||
	       (cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd && cp != 0xfeff) ||
	       cp >= 0x10000;
}

const cs_cfg_key *cs_cfg_find(const cs_cfg_table *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->keys[i].key, name))
			return &t->keys[i];
	return NULL;
}

/* ---- names: enums, choices, booleans ------------------------------------------------- */

/* Index of v among the '|'-separated names, or -1. */
static int name_index(const char *names, const char *v, int nocase)
{
	size_t n = strlen(v);
	int i = 0;
	for (const char *p = names; *p; i++) {
		const char *e = strchr(p, '|');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && !(nocase ? strncasecmp(p, v, n) : strncmp(p, v, n)))
			return i;
		p += l + (e ? 1 : 0);
	}
	return -1;
}

/* The i-th name into buf. */
static void name_at(const char *names, int i, char *buf, size_t len)
{
	const char *p = names;
	for (; i > 0 && p; i--) {
		p = strchr(p, '|');
		p = p ? p + 1 : NULL;
	}
	if (!p) {
		snprintf(buf, len, "?");
		return;
	}
	size_t l = strcspn(p, "|");
	snprintf(buf, len, "%.*s", (int)l, p);
}

/* "a|b|c" -> "a, b, c" */
static void list_names(const char *names, char *buf, size_t len)
{
	size_t o = 0;
	for (const char *p = names; *p && o + 3 < len; p++) {
		if (*p == '|') {
			buf[o++] = ',';
			buf[o++] = ' ';
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = 0;
}

static int parse_bool(const char *v, int nocase)
{
	int t = name_index("true|yes|on", v, nocase), f = name_index("false|no|off", v, nocase);
	return t >= 0 ? 1 : f >= 0 ? 0 : -1;
}

/* ---- one value ------------------------------------------------------------------------ */

static int is_int_type(const cs_cfg_key *k)
{
	return k->type == CS_CFG_INT || k->type == CS_CFG_INTD;
}

/* The range check of a number, with the message the range's shape calls for. */
static int check_range(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *val, const char *path,
		       const char *v, double x)
{
	unsigned f = k->flags;
	int lo_bad = !(f & CS_CFG_NO_MIN) && ((f & CS_CFG_MIN_OPEN) ? !(x > k->min) : !(x >= k->min));
	int hi_bad = !(f & CS_CFG_NO_MAX) && ((f & CS_CFG_MAX_OPEN) ? !(x < k->max) : !(x <= k->max));
	if (!lo_bad && !hi_bad)
		return 0;
	if (!(f & CS_CFG_NO_MIN) && !(f & CS_CFG_NO_MAX)) {
		if (is_int_type(k))
			return cs_cfg_error(c, val, path, "%s is not in %c%.0f, %.0f%c", v,
					    f & CS_CFG_MIN_OPEN ? '(' : '[', k->min, k->max,
					    f & CS_CFG_MAX_OPEN ? ')' : ']');
		return cs_cfg_error(c, val, path, "%s is not in %c%g, %g%c", v,
				    f & CS_CFG_MIN_OPEN ? '(' : '[', k->min, k->max,
				    f & CS_CFG_MAX_OPEN ? ')' : ']');
	}
	if (hi_bad)
		return cs_cfg_error(c, val, path, "%s is more than %g", v, k->max);
	if (is_int_type(k))
		return cs_cfg_error(c, val, path, "%s is less than %.0f", v, k->min);
	if (k->min == 0)
		return cs_cfg_error(c, val, path, "%s is %s", v,
				    f & CS_CFG_MIN_OPEN ? "not positive" : "negative");
	return cs_cfg_error(c, val, path, "%s is less than %g", v, k->min);
}

static int set_scalar(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *val, const char *path,
		      void *dest)
{
	char *base = (char *)dest + k->off;
	const char *v = cs_cfg_scalar(val);
	char *end;
	if (!v)
		return cs_cfg_error(c, val, path, "expected a single value, not a %s",
				    val && val->type == YAML_MAPPING_NODE ? "mapping" : "list");
	if ((k->flags & CS_CFG_NULL_OK) && cs_cfg_is_null(val))
		return 0;
	int nocase = (k->flags & CS_CFG_NOCASE) != 0;
	switch (k->type) {
	case CS_CFG_STRP: {
		if (!*v)
			return cs_cfg_error(c, val, path, "an empty string");
		char *d = strdup(v);
		if (!d)
			return CS_ERR_NO_MEM;
		*(char **)base = d;
		return 0;
	}
	case CS_CFG_STR:
		if (strlen(v) >= k->size)
			return cs_cfg_error(c, val, path, "value is longer than %zu characters",
					    k->size - 1);
		if ((k->flags & CS_CFG_NAME) &&
		    (!*v || strchr(v, '/') || !strcmp(v, ".") || !strcmp(v, "..")))
			return cs_cfg_error(c, val, path, "'%s' is not a plain directory name", v);
		snprintf(base, k->size, "%s", v);
		return 0;
	case CS_CFG_ENUM:
	case CS_CFG_CHOICE: {
		int i = name_index(k->allowed, v, nocase);
		if (i < 0) {
			char names[256];
			list_names(k->allowed, names, sizeof names);
			return cs_cfg_error(c, val, path, "'%s' is not one of %s", v, names);
		}
		if (k->type == CS_CFG_ENUM)
			snprintf(base, k->size, "%s", v);
		else
			*(int *)base = k->values ? k->values[i] : i;
		return 0;
	}
	case CS_CFG_INT:
	case CS_CFG_INTD: {
		/* the whole text: strtoll would skip blanks and take '+' */
		if (!(isdigit((unsigned char)v[0]) ||
		      (v[0] == '-' && isdigit((unsigned char)v[1]))))
			return cs_cfg_error(c, val, path, "'%s' is not an integer", v);
		errno = 0;
		long long x = strtoll(v, &end, 10);
		if (*end || errno)
			return cs_cfg_error(c, val, path, "'%s' is not an integer", v);
		int rc = check_range(c, k, val, path, v, (double)x);
		if (rc)
			return rc;
		if (k->type == CS_CFG_INTD)
			*(double *)base = (double)x;
		else if (k->size == sizeof(int))
			*(int *)base = (int)x;
		else
			*(int64_t *)base = (int64_t)x;
		return 0;
	}
	case CS_CFG_U64: {
		/* a U64 must not wrap a '-' */
		if (!isdigit((unsigned char)v[0]))
			return cs_cfg_error(c, val, path, "'%s' is not a non-negative integer", v);
		errno = 0;
		unsigned long long u = strtoull(v, &end, 0);
		if (*end || errno)
			return cs_cfg_error(c, val, path, "'%s' is not an integer", v);
		*(uint64_t *)base = u;
		return 0;
	}
	case CS_CFG_DOUBLE: {
		errno = 0;
		double x = strtod(v, &end);
		if (!*v || *end || errno || !isfinite(x))
			return cs_cfg_error(c, val, path, "'%s' is not a number", v);
		int rc = check_range(c, k, val, path, v, x);
		if (rc)
			return rc;
		*(double *)base = x;
		return 0;
	}
	case CS_CFG_BOOL: {
		int b = parse_bool(v, nocase);
		if (b < 0)
			return cs_cfg_error(c, val, path, "'%s' is not a boolean (true or false)",
					    v);
		*(int *)base = b;
		return 0;
	}
	case CS_CFG_AUTOBOOL: {
		int b = name_index("auto", v, nocase) == 0 ? -1 : parse_bool(v, nocase);
		if (b == -1 && name_index("auto", v, nocase) != 0)
			return cs_cfg_error(c, val, path, "'%s' is not one of auto, true, false", v);
		*(int *)base = b;
		return 0;
	}
	default:
		return CS_ERR_INVALID;
	}
}

/* "path[i]" for messages about element i; truncation is harmless */
static void join_index(char *dst, size_t n, const char *path, int i)
{
	snprintf(dst, n, "%s[%d]", path, i);
}

int cs_cfg_list(cs_cfg *c, const cs_cfg_key *item, size_t elem_size, yaml_node_t *val,
		const char *path, int one_ok, const char *what, void **arr, int *n)
{
	*arr = NULL;
	*n = 0;
	int seq = val && val->type == YAML_SEQUENCE_NODE;
	int cnt = seq ? (int)(val->data.sequence.items.top - val->data.sequence.items.start) : 1;
	if (!seq && (!one_ok || !val || val->type != YAML_SCALAR_NODE))
		return cs_cfg_error(c, val, path, one_ok ? "%s is not one value or a list of %s" :
							   "%s is not a list of %s",
				    cs_cfg_show(val), what);
	if (cnt == 0)
		return cs_cfg_error(c, val, path, "empty list of %s", what);
	if (elem_size) {
		*arr = calloc((size_t)cnt, elem_size);
		if (!*arr)
			return CS_ERR_NO_MEM;
	}
	for (int i = 0; i < cnt; i++) {
		yaml_node_t *it = seq ? yaml_document_get_node(c->doc, val->data.sequence.items.start[i])
				      : val;
		char p[256];
		if (seq)
			join_index(p, sizeof p, path, i);
		else
			snprintf(p, sizeof p, "%s", path);
		int rc = cs_cfg_set(c, item, NULL, it, p, elem_size ? (char *)*arr + i * elem_size
								 : NULL);
		if (rc)
			return rc;
		*n = i + 1;
	}
	return 0;
}

int cs_cfg_tuple(cs_cfg *c, const cs_cfg_key *const *keys, void *const *dests, int n,
		 yaml_node_t *val, const char *path, const char *what)
{
	if (!val || val->type != YAML_SEQUENCE_NODE ||
	    val->data.sequence.items.top - val->data.sequence.items.start != n)
		return cs_cfg_error(c, val, path, "%s is not %s", cs_cfg_show(val), what);
	for (int i = 0; i < n; i++) {
		yaml_node_t *it = yaml_document_get_node(c->doc, val->data.sequence.items.start[i]);
		int rc = cs_cfg_set(c, keys[i], NULL, it, path, dests[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static int set_list(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *val, const char *path,
		    void *dest)
{
	char *base = (char *)dest;
	void *arr;
	int n;
	int rc = cs_cfg_list(c, k->item, k->size, val, path, (k->flags & CS_CFG_ONE_OK) != 0,
			     k->allowed ? k->allowed : "values", &arr, &n);
	if (rc && k->item->type == CS_CFG_STRP)
		for (int i = 0; i < n; i++)
			free(((char **)arr)[i]);
	if (rc) {
		free(arr);
		return rc;
	}
	void **slot = (void **)(base + k->off);
	if (k->item->type == CS_CFG_STRP)
		for (int i = 0; i < *(int *)(base + k->off_n); i++)
			free(((char **)*slot)[i]);
	free(*slot);
	*slot = arr;
	*(int *)(base + k->off_n) = n;
	return 0;
}

int cs_cfg_set(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *val,
	       const char *path, void *dest)
{
	int rc;
	switch (k->type) {
	case CS_CFG_IGNORED:
		return 0;
	case CS_CFG_CUSTOM:
		return k->set(c, k, kn, val, path, dest);
	case CS_CFG_TABLE:
		rc = cs_cfg_walk(c, k->sub, val, path, dest, NULL);
		break;
	case CS_CFG_LIST:
		rc = set_list(c, k, val, path, dest);
		break;
	default:
		rc = set_scalar(c, k, val, path, dest);
		break;
	}
	if (!rc && k->set)
		rc = k->set(c, k, kn, val, path, dest);
	return rc;
}

/* ---- the walk ------------------------------------------------------------------------- */

/* Key paths for messages ("sparsity.update.freq"); truncation is harmless here. */
static void join(char *dst, size_t n, const char *a, const char *b)
{
	snprintf(dst, n, "%s%s%s", a, *a ? "." : "", b);
}

/* Nearest valid key for an unknown one: t's keys first, then (t a section of c->root) the
 * same name in another section ("lr" under model -> "train.lr"). */
static void suggest(cs_cfg *c, const cs_cfg_table *t, const char *key, char *buf, size_t len)
{
	int best = 99;
	const char *bs = NULL, *bk = NULL;
	int in_root = 0;
	for (int i = 0; c->root && c->root != t && i < c->root->n; i++)
		in_root |= c->root->keys[i].sub == t;
	for (int s = -1; s < (in_root ? c->root->n : 0); s++) {
		const cs_cfg_table *u = s < 0 ? t : c->root->keys[s].sub;
		if (!u || (s >= 0 && u == t))
			continue;
		for (int i = 0; i < u->n; i++) {
			const char *cand = u->keys[i].key;
			int d = cs_cfg_edit_distance(key, cand);
			/* "warmup" for "warmup_steps": a prefix or part counts as one edit */
			if (strlen(key) >= 3 && (strstr(cand, key) || strstr(key, cand)) &&
			    strlen(cand) >= 3)
				d = d < 1 ? d : 1;
			if (s >= 0)
				d += d == 0 ? 1 : 3; /* prefer the section the key was written in */
			if (d < best) {
				best = d;
				bs = s < 0 ? NULL : c->root->keys[s].key;
				bk = cand;
			}
		}
	}
	size_t kl = strlen(key);
	int limit = kl <= 3 ? 2 : kl <= 6 ? 3 : 4;
	buf[0] = 0;
	if (!bk || best > limit)
		return;
	if (!bs)
		snprintf(buf, len, " (did you mean '%s'?)", bk);
	else
		snprintf(buf, len, " (did you mean '%s.%s'?)", bs, bk);
}

static int unknown_key(cs_cfg *c, const cs_cfg_table *t, yaml_node_t *kn, const char *path)
{
	const char *key = cs_cfg_scalar(kn) ? cs_cfg_scalar(kn) : "?";
	char sug[160], keys[640] = "";
	suggest(c, t, key, sug, sizeof sug);
	if (!t->no_allowed_list) {
		size_t l = (size_t)snprintf(keys, sizeof keys, "; allowed: ");
		for (int i = 0; i < t->n && l < sizeof keys; i++)
			l += (size_t)snprintf(keys + l, sizeof keys - l, "%s%s", i ? ", " : "",
					      t->keys[i].key);
	}
	return cs_cfg_error(c, kn, path, "unknown %s%s%s", t->what ? t->what : "key", sug, keys);
}

int cs_cfg_walk(cs_cfg *c, const cs_cfg_table *t, yaml_node_t *map, const char *path,
		void *dest, yaml_node_t **seen)
{
	if (map && map->type == YAML_SCALAR_NODE && !*cs_cfg_scalar(map))
		return 0; /* "train:" with nothing under it */
	if (!map || map->type != YAML_MAPPING_NODE)
		return cs_cfg_error(c, map, path, "expected a mapping of keys");
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *kn = yaml_document_get_node(c->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(c->doc, p->value);
		const char *key = cs_cfg_scalar(kn);
		char sub[256];
		join(sub, sizeof sub, path, key ? key : "?");
		const cs_cfg_key *k = key ? cs_cfg_find(t, key) : NULL;
		if (!k)
			return unknown_key(c, t, kn, sub);
		if (seen)
			seen[k - t->keys] = kn;
		int rc = cs_cfg_set(c, k, kn, vn, sub, dest);
		if (rc)
			return rc;
		if (c->given)
			c->given(c, k, kn, vn);
	}
	return 0;
}

/* ---- defaults, values, docs ------------------------------------------------------------ */

void cs_cfg_defaults(const cs_cfg_table *t, void *dest)
{
	for (int i = 0; i < t->n; i++) {
		const cs_cfg_key *k = &t->keys[i];
		char *base = (char *)dest + k->off;
		const char *d = k->def;
		if (k->type == CS_CFG_TABLE) {
			cs_cfg_defaults(k->sub, dest);
			continue;
		}
		if (!d)
			continue;
		switch (k->type) {
		case CS_CFG_STR:
		case CS_CFG_ENUM:
			snprintf(base, k->size, "%s", strcmp(d, "\"\"") ? d : "");
			break;
		case CS_CFG_CHOICE: {
			int j = name_index(k->allowed, d, 0);
			*(int *)base = j < 0 ? 0 : k->values ? k->values[j] : j;
			break;
		}
		case CS_CFG_INT:
			if (k->size == sizeof(int))
				*(int *)base = atoi(d);
			else
				*(int64_t *)base = strtoll(d, NULL, 10);
			break;
		case CS_CFG_INTD:
		case CS_CFG_DOUBLE:
			*(double *)base = strtod(d, NULL);
			break;
		case CS_CFG_U64:
			*(uint64_t *)base = strtoull(d, NULL, 10);
			break;
		case CS_CFG_BOOL:
			*(int *)base = parse_bool(d, 1) == 1;
			break;
		case CS_CFG_AUTOBOOL:
			*(int *)base = !strcmp(d, "auto") ? -1 : parse_bool(d, 1) == 1;
			break;
		default:
			break;
		}
	}
}

void cs_cfg_write_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = 1;
		long cp = cs_cfg_utf8_next(p, &n);
		if (cp < 0) { /* not reachable through a loaded config; keep the writer total */
			fprintf(f, "\\x%02x", *p);
			p++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", (int)cp);
		else if (cp == '\n' || !cs_cfg_yaml_printable(cp))
			fprintf(f, cp > 0xffff ? "\\U%08lx" : "\\u%04lx", cp);
		else
			fwrite(p, 1, (size_t)n, f);
		p += n;
	}
	fputc('"', f);
}

void cs_cfg_write_double(FILE *f, double x)
{
	char buf[40];
	for (int prec = 6; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			break;
	}
	/* YAML 1.1 readers want a dot or exponent to see a float; ours does not care */
	fputs(buf, f);
}

void cs_cfg_write_value(FILE *f, const cs_cfg_key *k, const void *src)
{
	const char *base = (const char *)src + k->off;
	switch (k->type) {
	case CS_CFG_STR:
	case CS_CFG_ENUM:
		cs_cfg_write_string(f, base);
		break;
	case CS_CFG_CHOICE: {
		int v = *(const int *)base, j = 0;
		if (k->values)
			while (k->values[j] != v && j < 64)
				j++;
		else
			j = v;
		char name[64];
		name_at(k->allowed, j, name, sizeof name);
		fputs(name, f);
		break;
	}
	case CS_CFG_INT:
		if (k->size == sizeof(int))
			fprintf(f, "%d", *(const int *)base);
		else
			fprintf(f, "%lld", (long long)*(const int64_t *)base);
		break;
	case CS_CFG_U64:
		fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)base);
		break;
	case CS_CFG_INTD:
	case CS_CFG_DOUBLE:
		cs_cfg_write_double(f, *(const double *)base);
		break;
	case CS_CFG_BOOL:
		fputs(*(const int *)base ? "true" : "false", f);
		break;
	case CS_CFG_AUTOBOOL: {
		int v = *(const int *)base;
		fputs(v < 0 ? "auto" : v ? "true" : "false", f);
		break;
	}
	default:
		break;
	}
}

/* a number of the range: integers without a fraction */
static void range_num(char *buf, size_t n, const cs_cfg_key *k, double x)
{
	snprintf(buf, n, is_int_type(k) ? "%.0f" : "%g", x);
}

void cs_cfg_doc_allowed(const cs_cfg_key *k, char *buf, size_t n)
{
	if (k->doc_allowed) {
		snprintf(buf, n, "%s", k->doc_allowed);
		return;
	}
	unsigned f = k->flags;
	char lo[32], hi[32];
	range_num(lo, sizeof lo, k, k->min);
	range_num(hi, sizeof hi, k, k->max);
	const char *what = is_int_type(k) ? "integer" : "number";
	switch (k->type) {
	case CS_CFG_ENUM:
	case CS_CFG_CHOICE: {
		size_t o = 0;
		buf[0] = 0;
		for (const char *p = k->allowed; p && *p && o < n;) {
			size_t l = strcspn(p, "|");
			o += (size_t)snprintf(buf + o, n - o, "%s`%.*s`", o ? ", " : "", (int)l, p);
			p += l + (p[l] == '|');
		}
		if ((f & CS_CFG_NOCASE) && o < n)
			snprintf(buf + o, n - o, " (any case)");
		return;
	}
	case CS_CFG_INT:
	case CS_CFG_INTD:
	case CS_CFG_DOUBLE:
		if ((f & CS_CFG_NO_MIN) && (f & CS_CFG_NO_MAX))
			snprintf(buf, n, "any %s", what);
		else if (f & CS_CFG_NO_MAX)
			snprintf(buf, n, "%s %s %s", what, f & CS_CFG_MIN_OPEN ? ">" : ">=", lo);
		else if (f & CS_CFG_NO_MIN)
			snprintf(buf, n, "%s %s %s", what, f & CS_CFG_MAX_OPEN ? "<" : "<=", hi);
		else if (is_int_type(k) && !(f & (CS_CFG_MIN_OPEN | CS_CFG_MAX_OPEN)))
			snprintf(buf, n, "%s..%s", lo, hi);
		else
			snprintf(buf, n, "%s in %c%s, %s%c", what, f & CS_CFG_MIN_OPEN ? '(' : '[',
				 lo, hi, f & CS_CFG_MAX_OPEN ? ')' : ']');
		return;
	case CS_CFG_U64:
		snprintf(buf, n, "integer >= 0");
		return;
	case CS_CFG_BOOL:
		snprintf(buf, n, "`true`, `false`");
		return;
	case CS_CFG_AUTOBOOL:
		snprintf(buf, n, "`auto`, `true`, `false`");
		return;
	case CS_CFG_IGNORED:
		snprintf(buf, n, "anything (ignored)");
		return;
	case CS_CFG_STR:
	case CS_CFG_STRP:
		snprintf(buf, n, "string");
		return;
	case CS_CFG_LIST: {
		char item[256];
		cs_cfg_doc_allowed(k->item, item, sizeof item);
		snprintf(buf, n, "%sa non-empty list of: %s",
			 (f & CS_CFG_ONE_OK) ? "one value or " : "", item);
		return;
	}
	default:
		buf[0] = 0;
		return;
	}
}

void cs_cfg_write_doc_head(FILE *f)
{
	fputs("| key | default | allowed | meaning |\n|---|---|---|---|\n", f);
}

void cs_cfg_write_doc_row(FILE *f, const char *name, const cs_cfg_key *k)
{
	char allowed[512];
	cs_cfg_doc_allowed(k, allowed, sizeof allowed);
	fprintf(f, "| %s | ", name);
	if (k->def)
		fprintf(f, "`%s`%s%s", k->def, k->doc_def ? " " : "", k->doc_def ? k->doc_def : "");
	else
		fputs(k->doc_def ? k->doc_def : "", f);
	fprintf(f, " | %s | %s |\n", allowed, k->doc ? k->doc : "");
}

static int doc_incomplete(const cs_cfg_key *k)
{
	return !k->doc || (!k->def && !k->doc_def);
}

int cs_cfg_write_doc(FILE *f, const cs_cfg_table *root)
{
	int missing = 0;
	cs_cfg_write_doc_head(f);
	for (int s = 0; s < root->n; s++) {
		const cs_cfg_key *sec = &root->keys[s];
		char name[168];
		if (sec->type != CS_CFG_TABLE) {
			snprintf(name, sizeof name, "`%s`", sec->key);
			cs_cfg_write_doc_row(f, name, sec);
			missing += doc_incomplete(sec);
			continue;
		}
		for (int i = 0; i < sec->sub->n; i++) {
			char full[160];
			join(full, sizeof full, sec->key, sec->sub->keys[i].key);
			snprintf(name, sizeof name, "`%s`", full);
			cs_cfg_write_doc_row(f, name, &sec->sub->keys[i]);
			missing += doc_incomplete(&sec->sub->keys[i]);
		}
	}
	return missing;
}
