/*
 * config.c - parse and validate the run configuration (libyaml document API).
 *
 * The schema table below is the single list of keys, types, ranges and defaults; the
 * parser, the resolved-config writer and the nearest-key suggestions all read it.
 * Overrides are applied to the YAML document itself before validation, so that they go
 * through exactly the same checks as the file (and reach the sparsity block too).
 */
#include "train/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cs_error.h"
#include "common/cs_yaml.h"
#include "driver/csd_impl.h"

enum tc_type { T_STR, T_INT, T_U64, T_DOUBLE, T_ENUM, T_MESH, T_AUTOBOOL };

typedef struct tc_key {
	const char *section, *key;
	enum tc_type type;
	size_t off;      /* into train_config */
	size_t size;     /* for strings */
	double min, max; /* numbers: inclusive range */
	const char *allowed; /* enums: "cpu|sim|usb" */
	const char *def;     /* default, as YAML text */
} tc_key;

#define OFF(f) offsetof(train_config, f)
#define SZ(f) sizeof(((train_config *)0)->f)

static const tc_key schema[] = {
	{ "run", "name", T_STR, OFF(name), SZ(name), 0, 0, NULL, "tiny" },
	{ "run", "out_dir", T_STR, OFF(out_dir), SZ(out_dir), 0, 0, NULL, "runs" },
	{ "run", "seed", T_U64, OFF(seed), 0, 0, 1.8e19, NULL, "1234" },
	{ "device", "kind", T_ENUM, OFF(device_kind), SZ(device_kind), 0, 0,
	  "native|model|cpu|sim|usb", "sim" },
	{ "device", "mesh", T_MESH, OFF(mesh), SZ(mesh), 1, 64, NULL, "4x4" },
	{ "device", "pe", T_ENUM, OFF(pe), SZ(pe), 0, 0, "full|lite|micro_mt", "full" },
	{ "device", "awords", T_INT, OFF(awords), 0, 0, 65536, NULL, "0" },
	{ "device", "bwords", T_INT, OFF(bwords), 0, 0, 32768, NULL, "0" },
	{ "device", "serials", T_STR, OFF(serials), SZ(serials), 0, 0, NULL, "\"\"" },
	{ "device", "weights", T_ENUM, OFF(weights), SZ(weights), 0, 0, "fp32|bf16", "fp32" },
	{ "device", "dense_on_host", T_AUTOBOOL, OFF(dense_on_host), 0, 0, 0, "auto|true|false",
	  "auto" },
	{ "model", "n_layer", T_INT, OFF(model.n_layer), 0, 1, 256, NULL, "2" },
	{ "model", "n_head", T_INT, OFF(model.n_head), 0, 1, 1024, NULL, "4" },
	{ "model", "n_embd", T_INT, OFF(model.n_embd), 0, 1, 65536, NULL, "64" },
	{ "model", "block_size", T_INT, OFF(model.block_size), 0, 1, 65536, NULL, "64" },
	{ "model", "vocab_size", T_INT, OFF(model.vocab_size), 0, 256, 65536, NULL, "256" },
	{ "model", "init_from", T_STR, OFF(init_from), SZ(init_from), 0, 0, NULL, "\"\"" },
	{ "data", "path", T_STR, OFF(data_path), SZ(data_path), 0, 0, NULL,
	  "/usr/share/games/fortunes" },
	{ "data", "val_fraction", T_DOUBLE, OFF(val_fraction), 0, 0.001, 0.5, NULL, "0.05" },
	{ "data", "cache_dir", T_STR, OFF(data_cache_dir), SZ(data_cache_dir), 0, 0, NULL, "\"\"" },
	{ "data", "tokenizer", T_ENUM, OFF(data_tokenizer), SZ(data_tokenizer), 0, 0, "bytes|gpt2",
	  "bytes" },
	{ "data", "format", T_ENUM, OFF(data_format), SZ(data_format), 0, 0, "auto|text|llmc",
	  "auto" },
	{ "data", "val_path", T_STR, OFF(data_val_path), SZ(data_val_path), 0, 0, NULL, "\"\"" },
	{ "data", "bpe_dir", T_STR, OFF(data_bpe_dir), SZ(data_bpe_dir), 0, 0, NULL, "\"\"" },
	{ "train", "steps", T_INT, OFF(steps), 0, 1, 1e9, NULL, "200" },
	{ "train", "batch_size", T_INT, OFF(batch_size), 0, 1, 65536, NULL, "8" },
	{ "train", "grad_accum", T_INT, OFF(grad_accum), 0, 1, 65536, NULL, "1" },
	{ "train", "threads", T_INT, OFF(threads), 0, 0, 1024, NULL, "0" },
	{ "train", "reduce", T_ENUM, OFF(reduce), SZ(reduce), 0, 0, "ordered|fast", "ordered" },
	{ "train", "lr", T_DOUBLE, OFF(lr), 0, 0, 10, NULL, "3.0e-3" },
	{ "train", "min_lr", T_DOUBLE, OFF(min_lr), 0, 0, 10, NULL, "3.0e-4" },
	{ "train", "warmup_steps", T_INT, OFF(warmup_steps), 0, 0, 1e9, NULL, "20" },
	{ "train", "weight_decay", T_DOUBLE, OFF(weight_decay), 0, 0, 10, NULL, "0.1" },
	{ "train", "beta1", T_DOUBLE, OFF(beta1), 0, 0, 0.999999, NULL, "0.9" },
	{ "train", "beta2", T_DOUBLE, OFF(beta2), 0, 0, 0.999999, NULL, "0.95" },
	{ "train", "eps", T_DOUBLE, OFF(eps), 0, 1e-30, 1, NULL, "1.0e-8" },
	{ "train", "grad_clip", T_DOUBLE, OFF(grad_clip), 0, 0, 1e9, NULL, "1.0" },
	{ "train", "eval_every", T_INT, OFF(eval_every), 0, 0, 1e9, NULL, "50" },
	{ "train", "eval_batches", T_INT, OFF(eval_batches), 0, 1, 1e6, NULL, "8" },
	{ "train", "ckpt_every", T_INT, OFF(ckpt_every), 0, 0, 1e9, NULL, "100" },
	{ "train", "keep_ckpts", T_INT, OFF(keep_ckpts), 0, 1, 1e6, NULL, "2" },
	{ "train", "log_every", T_INT, OFF(log_every), 0, 1, 1e9, NULL, "10" },
	{ "train", "sample_tokens", T_INT, OFF(sample_tokens), 0, 0, 1e6, NULL, "200" },
	{ "train", "sample_temperature", T_DOUBLE, OFF(sample_temperature), 0, 0, 100, NULL,
	  "0.8" },
	{ "imp", "rounds", T_INT, OFF(imp_rounds), 0, 0, 1000, NULL, "0" },
	{ "imp", "fraction", T_DOUBLE, OFF(imp_fraction), 0, 0, 0.999, NULL, "0" },
	{ "imp", "sparsity", T_DOUBLE, OFF(imp_sparsity), 0, 0, 0.999, NULL, "0" },
	{ "imp", "scope", T_ENUM, OFF(imp_scope), SZ(imp_scope), 0, 0, "per_tensor|global",
	  "per_tensor" },
	{ "imp", "steps_per_round", T_INT, OFF(imp_steps_per_round), 0, 0, 1e9, NULL, "0" },
	{ "imp", "rewind", T_ENUM, OFF(imp_rewind), SZ(imp_rewind), 0, 0, "lr|weights", "lr" },
	{ "imp", "rewind_step", T_INT, OFF(imp_rewind_step), 0, 0, 1e9, NULL, "0" },
};
#define NKEYS ((int)(sizeof schema / sizeof schema[0]))

static const char *const sections[] = { "run", "device", "model", "data", "train", "imp",
					"sparsity" };
#define NSECTIONS ((int)(sizeof sections / sizeof sections[0]))

int tc_edit_distance(const char *a, const char *b)
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

int tc_schema_key(int i, const char **section, const char **key, const char **def)
{
	if (i < 0 || i >= NKEYS)
		return CS_ERR_NOT_FOUND;
	*section = schema[i].section;
	*key = schema[i].key;
	*def = schema[i].def;
	return CS_OK;
}

void tc_where(const train_config *c, int node_id, char *buf, size_t len)
{
	for (int i = 0; i < c->n_override_nodes; i++)
		if (c->override_node[i] == node_id) {
			snprintf(buf, len, "override '%s'", c->override_text[c->override_of[i]]);
			return;
		}
	yaml_node_t *n = yaml_document_get_node((yaml_document_t *)&c->doc, node_id);
	if (!n) {
		snprintf(buf, len, "%s", c->file);
		return;
	}
	snprintf(buf, len, "%s:%zu:%zu", c->file, n->start_mark.line + 1,
		 n->start_mark.column + 1);
}

#define FAIL(node, ...)                                                                   \
	do {                                                                              \
		char where_[TC_PATH_MAX + 200], msg_[1024];                               \
		tc_where(c, (node), where_, sizeof where_);                               \
		snprintf(msg_, sizeof msg_, __VA_ARGS__);                                 \
		snprintf(err, errlen, "%s: %s", where_, msg_);                            \
		cs_yaml_one_line(err, errlen);                                            \
		return CS_ERR_CONFIG;                                                     \
	} while (0)

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* One UTF-8 code point at s (valid: the loader checked files, apply_override checks
 * overrides); its length in *len, -1 when malformed. */
static long utf8_next(const unsigned char *s, int *len)
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

/* What a YAML stream may hold unescaped (YAML 1.1 c-printable, as libyaml's reader). */
static int yaml_printable(long cp)
{
	return cp == 0x0a || (cp >= 0x20 && cp <= 0x7e) || cp == 0x85 ||
	       (cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd && cp != 0xfeff) ||
	       cp >= 0x10000;
}

/* The allowed keys of a section, for messages: "steps, batch_size, ..." */
static void list_keys(const char *section, char *buf, size_t len)
{
	buf[0] = 0;
	for (int i = 0; i < NKEYS; i++)
		if (!strcmp(schema[i].section, section)) {
			size_t l = strlen(buf);
			snprintf(buf + l, len - l, "%s%s", l ? ", " : "", schema[i].key);
		}
}

/* Nearest valid key for an unknown one: same section first, then the same name in
 * another section ("lr" under model -> "train.lr"). */
static void suggest(const char *section, const char *key, char *buf, size_t len)
{
	int best = 99;
	const char *bs = NULL, *bk = NULL;
	for (int i = 0; i < NKEYS; i++) {
		int d = tc_edit_distance(key, schema[i].key);
		/* "warmup" for "warmup_steps": a prefix or part counts as one edit */
		if (strlen(key) >= 3 && (strstr(schema[i].key, key) || strstr(key, schema[i].key)) &&
		    strlen(schema[i].key) >= 3)
			d = d < 1 ? d : 1;
		if (strcmp(schema[i].section, section))
			d += d == 0 ? 1 : 3; /* prefer the section the key was written in */
		if (d < best) {
			best = d;
			bs = schema[i].section;
			bk = schema[i].key;
		}
	}
	size_t kl = strlen(key);
	int limit = kl <= 3 ? 2 : kl <= 6 ? 3 : 4;
	if (!bk || best > limit) {
		buf[0] = 0;
		return;
	}
	if (!strcmp(bs, section))
		snprintf(buf, len, " (did you mean '%s'?)", bk);
	else
		snprintf(buf, len, " (did you mean '%s.%s'?)", bs, bk);
}

static const tc_key *find_key(const char *section, const char *key)
{
	for (int i = 0; i < NKEYS; i++)
		if (!strcmp(schema[i].section, section) && !strcmp(schema[i].key, key))
			return &schema[i];
	return NULL;
}

static int enum_ok(const char *allowed, const char *v)
{
	size_t n = strlen(v);
	for (const char *p = allowed; *p;) {
		const char *e = strchr(p, '|');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && !strncmp(p, v, n))
			return 1;
		p += l + (e ? 1 : 0);
	}
	return 0;
}

static int set_value(train_config *c, const tc_key *k, int node_id, char *err, size_t errlen)
{
	yaml_node_t *n = yaml_document_get_node(&c->doc, node_id);
	const char *v = scalar(n);
	char *base = (char *)c;
	if (!v)
		FAIL(node_id, "%s.%s: expected a single value, not a %s", k->section, k->key,
		     n && n->type == YAML_MAPPING_NODE ? "mapping" : "list");
	char *end;
	switch (k->type) {
	case T_STR:
		if (strlen(v) >= k->size)
			FAIL(node_id, "%s.%s: value is longer than %zu characters", k->section,
			     k->key, k->size - 1);
		if (!strcmp(k->key, "name") && (!*v || strchr(v, '/') || !strcmp(v, ".") ||
						!strcmp(v, "..")))
			FAIL(node_id, "%s.%s: '%s' is not a plain directory name", k->section,
			     k->key, v);
		snprintf(base + k->off, k->size, "%s", v);
		return CS_OK;
	case T_INT:
	case T_U64: {
		errno = 0;
		/* strtoll would skip blanks and take '+'; a U64 must not wrap a '-' */
		if (!(isdigit((unsigned char)v[0]) ||
		      (v[0] == '-' && isdigit((unsigned char)v[1]) && k->type == T_INT)))
			FAIL(node_id, "%s.%s: '%s' is not %s", k->section, k->key, v,
			     k->type == T_U64 ? "a non-negative integer" : "an integer");
		if (*v == '-' && k->type == T_U64)
			FAIL(node_id, "%s.%s: '%s' is not a non-negative integer", k->section,
			     k->key, v);
		long long x = k->type == T_INT ? strtoll(v, &end, 10) : 0;
		unsigned long long u = k->type == T_U64 ? strtoull(v, &end, 0) : 0;
		if (!*v || *end || errno)
			FAIL(node_id, "%s.%s: '%s' is not an integer", k->section, k->key, v);
		if (k->type == T_U64) {
			*(uint64_t *)(base + k->off) = u;
			return CS_OK;
		}
		if ((double)x < k->min || (double)x > k->max)
			FAIL(node_id, "%s.%s: %s is not in [%.0f, %.0f]", k->section, k->key, v,
			     k->min, k->max);
		*(int *)(base + k->off) = (int)x;
		return CS_OK;
	}
	case T_DOUBLE: {
		errno = 0;
		double x = strtod(v, &end);
		if (!*v || *end || errno || !isfinite(x))
			FAIL(node_id, "%s.%s: '%s' is not a number", k->section, k->key, v);
		if (x < k->min || x > k->max)
			FAIL(node_id, "%s.%s: %s is not in [%g, %g]", k->section, k->key, v,
			     k->min, k->max);
		*(double *)(base + k->off) = x;
		return CS_OK;
	}
	case T_ENUM:
		if (!enum_ok(k->allowed, v)) {
			char allowed[128];
			snprintf(allowed, sizeof allowed, "%s", k->allowed);
			for (char *p = allowed; *p; p++)
				if (*p == '|')
					*p = ',';
			FAIL(node_id, "%s.%s: '%s' is not one of %s", k->section, k->key, v,
			     allowed);
		}
		snprintf(base + k->off, k->size, "%s", v);
		return CS_OK;
	case T_MESH: {
		int r, co;
		char tail;
		if (sscanf(v, "%dx%d%c", &r, &co, &tail) != 2 || r < (int)k->min ||
		    co < (int)k->min || r > (int)k->max || co > (int)k->max)
			FAIL(node_id, "%s.%s: '%s' is not ROWSxCOLS with each in [1, 64] (e.g. 4x4)",
			     k->section, k->key, v);
		snprintf(c->mesh, sizeof c->mesh, "%dx%d", r, co);
		c->mesh_rows = r;
		c->mesh_cols = co;
		return CS_OK;
	}
	case T_AUTOBOOL:
		if (!strcmp(v, "auto"))
			*(int *)(base + k->off) = -1;
		else if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on"))
			*(int *)(base + k->off) = 1;
		else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off"))
			*(int *)(base + k->off) = 0;
		else
			FAIL(node_id, "%s.%s: '%s' is not one of auto, true, false", k->section,
			     k->key, v);
		return CS_OK;
	}
	return CS_ERR_INVALID;
}

void tc_defaults(train_config *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->file, sizeof c->file, "defaults");
	for (int i = 0; i < NKEYS; i++) {
		const tc_key *k = &schema[i];
		char *base = (char *)c;
		const char *d = k->def;
		switch (k->type) {
		case T_STR:
		case T_ENUM:
			snprintf(base + k->off, k->size, "%s", strcmp(d, "\"\"") ? d : "");
			break;
		case T_INT:
			*(int *)(base + k->off) = atoi(d);
			break;
		case T_U64:
			*(uint64_t *)(base + k->off) = strtoull(d, NULL, 10);
			break;
		case T_DOUBLE:
			*(double *)(base + k->off) = strtod(d, NULL);
			break;
		case T_MESH:
			snprintf(c->mesh, sizeof c->mesh, "%s", d);
			sscanf(d, "%dx%d", &c->mesh_rows, &c->mesh_cols);
			break;
		case T_AUTOBOOL:
			*(int *)(base + k->off) = -1;
			break;
		}
	}
}

void tc_free(train_config *c)
{
	if (c->doc_loaded)
		yaml_document_delete(&c->doc);
	c->doc_loaded = 0;
	c->sparsity_node = 0;
}

/* Find the value node of `key` in mapping node `map`, or 0. */
static int map_get(yaml_document_t *doc, int map, const char *key, yaml_node_pair_t **pair)
{
	yaml_node_t *m = yaml_document_get_node(doc, map);
	if (!m || m->type != YAML_MAPPING_NODE)
		return 0;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));
		if (k && !strcmp(k, key)) {
			if (pair)
				*pair = p;
			return p->value;
		}
	}
	return 0;
}

static int new_scalar(yaml_document_t *doc, const char *v)
{
	return yaml_document_add_scalar(doc, NULL, (yaml_char_t *)v, (int)strlen(v),
					YAML_ANY_SCALAR_STYLE);
}

/* Node `node` was made by the override being applied (override_text[n_overrides]). */
static void record_override(train_config *c, int node, const char *ov)
{
	(void)ov;
	if (c->n_override_nodes >= (int)(sizeof c->override_node / sizeof c->override_node[0]))
		return;
	c->override_node[c->n_override_nodes] = node;
	c->override_of[c->n_override_nodes++] = c->n_overrides;
}

/* "a.b.c=value": set (or add) a scalar at that path of the document. */
static int apply_override(train_config *c, const char *ov, char *err, size_t errlen)
{
	const char *eq = strchr(ov, '=');
	if (!eq || eq == ov) {
		snprintf(err, errlen, "override '%s': expected section.key=value", ov);
		return CS_ERR_CONFIG;
	}
	char path[160];
	size_t pl = (size_t)(eq - ov);
	if (pl >= sizeof path || strlen(ov) >= sizeof c->override_text[0] ||
	    c->n_overrides >= (int)(sizeof c->override_text / sizeof c->override_text[0])) {
		snprintf(err, errlen, "override '%s': too long or too many overrides", ov);
		return CS_ERR_CONFIG;
	}
	for (const unsigned char *q = (const unsigned char *)ov; *q;) {
		int n = 1;
		long cp = utf8_next(q, &n);
		if (cp < 0 || cp == '\n' || !yaml_printable(cp)) {
			snprintf(err, errlen, "override '%s': %s at byte %zu", ov,
				 cp < 0 ? "not UTF-8" : "a control character",
				 (size_t)(q - (const unsigned char *)ov));
			cs_yaml_one_line(err, errlen);
			return CS_ERR_CONFIG;
		}
		q += n;
	}
	int depth = 1;
	for (const char *q = path; *q; q++)
		depth += *q == '.';
	if (depth > 8) {
		snprintf(err, errlen, "override '%s': more than 8 levels of keys", ov);
		return CS_ERR_CONFIG;
	}
	snprintf(c->override_text[c->n_overrides], sizeof c->override_text[0], "%s", ov);
	memcpy(path, ov, pl);
	path[pl] = 0;
	if (!strchr(path, '.')) {
		snprintf(err, errlen, "override '%s': expected section.key=value", ov);
		return CS_ERR_CONFIG;
	}
	yaml_document_t *doc = &c->doc;
	int node = 1; /* root */
	char *save = NULL;
	for (char *part = strtok_r(path, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
		int last = save == NULL || *save == 0;
		yaml_node_pair_t *pair = NULL;
		int child = map_get(doc, node, part, &pair);
		yaml_node_t *n = yaml_document_get_node(doc, node);
		if (!n || n->type != YAML_MAPPING_NODE) {
			snprintf(err, errlen, "override '%s': '%s' is not a mapping", ov, part);
			return CS_ERR_CONFIG;
		}
		if (last) {
			int v = new_scalar(doc, eq + 1);
			if (!v)
				return CS_ERR_NO_MEM;
			if (child) {
				pair->value = v;
			} else {
				int k = new_scalar(doc, part);
				if (!k || !yaml_document_append_mapping_pair(doc, node, k, v))
					return CS_ERR_NO_MEM;
				record_override(c, k, ov);
			}
			record_override(c, v, ov);
			c->n_overrides++;
			return CS_OK;
		}
		if (!child) {
			child = yaml_document_add_mapping(doc, NULL, YAML_ANY_MAPPING_STYLE);
			int k = new_scalar(doc, part);
			if (!child || !k || !yaml_document_append_mapping_pair(doc, node, k, child))
				return CS_ERR_NO_MEM;
			/* created here: messages about them name the override, not the file */
			record_override(c, k, ov);
			record_override(c, child, ov);
		}
		node = child;
	}
	return CS_OK;
}

static int load_document(train_config *c, const char *path, const char *text, char *err,
			 size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;
	if (text) {
		len = strlen(text);
	} else {
		rc = cs_yaml_read_file(path, &buf, &len, err, errlen);
		if (rc)
			return rc;
		text = buf;
	}
	rc = cs_yaml_load(&c->doc, path, text, len, err, errlen);
	free(buf);
	if (rc)
		return rc;
	c->doc_loaded = 1;
	yaml_node_t *root = yaml_document_get_root_node(&c->doc);
	if (!root) {
		/* empty file: a document holding an empty mapping */
		yaml_document_delete(&c->doc);
		yaml_document_initialize(&c->doc, NULL, NULL, NULL, 1, 1);
		yaml_document_add_mapping(&c->doc, NULL, YAML_BLOCK_MAPPING_STYLE);
	} else if (root->type != YAML_MAPPING_NODE) {
		snprintf(err, errlen, "%s:%zu:%zu: expected a mapping of sections (run, device, "
			 "model, data, train, sparsity)", path, root->start_mark.line + 1,
			 root->start_mark.column + 1);
		return CS_ERR_CONFIG;
	}
	return CS_OK;
}

/* What the cpu and sim backends can open (host/driver/csd.c, backend_sim.c), checked here
 * so that a mesh the device cannot be is a config error, not a failure at csd_open after
 * the data is loaded. usb: the shape and PE are the bitstream's; native: no mesh. */
static int check_device(train_config *c, char *err, size_t errlen)
{
	yaml_document_t *doc = &c->doc;
	int dev = map_get(doc, 1, "device", NULL);
	int mesh = map_get(doc, dev, "mesh", NULL), pe_node = map_get(doc, dev, "pe", NULL);
	int sim = !strcmp(c->device_kind, "sim");
	if (!strcmp(c->device_kind, "usb") || !strcmp(c->device_kind, "native"))
		return CS_OK;
	int pes = c->mesh_rows * c->mesh_cols;
	if (c->mesh_rows > 16 || c->mesh_cols > 16)
		FAIL(mesh, "device.mesh: %s is larger than the %s backend drives (at most 16x16 "
			   "PEs); opening the device would fail", c->mesh, c->device_kind);
	if (sim && pes > 255)
		FAIL(mesh, "device.mesh: %s is %d PEs; the Verilated mesh holds at most 255",
		     c->mesh, pes);
	int k = 0;
	while (k < CSD_PE_COUNT && strcmp(csd_pe_impls[k].name, c->pe))
		k++;
	if (k == CSD_PE_COUNT)
		return CS_OK;
	const struct csd_pe_impl *im = &csd_pe_impls[k];
	if (pes < im->min_pes)
		FAIL(pe_node ? pe_node : mesh, "device.pe: %s needs at least %d PEs, device.mesh %s "
					       "has %d", im->name, im->min_pes, c->mesh, pes);
	/* the sizes a URI without awords=/bwords= gets: the implementation's with pe=, the
	 * RTL defaults (full) otherwise */
	unsigned a = c->awords ? (unsigned)c->awords : im->a_words;
	unsigned b = c->bwords ? (unsigned)c->bwords : im->b_words;
	int an = map_get(doc, dev, "awords", NULL);
	if (im->a_is_2b && a != 2 * b)
		FAIL(an ? an : pe_node, "device.awords: pe=%s keeps A and B in one memory: awords "
					"(%u) must be 2 * bwords (%u)", im->name, a, b);
	if (sim && (a & (a - 1)))
		FAIL(an, "device.awords: %u is not a power of two, which the Verilated mesh needs",
		     a);
	return CS_OK;
}

static int validate(train_config *c, char *err, size_t errlen)
{
	yaml_document_t *doc = &c->doc;
	yaml_node_t *root = yaml_document_get_node(doc, 1);
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		const char *sec = scalar(yaml_document_get_node(doc, p->key));
		int known = 0;
		for (int i = 0; sec && i < NSECTIONS; i++)
			known |= !strcmp(sec, sections[i]);
		if (!known) {
			char sug[96] = "";
			int best = 99;
			for (int i = 0; sec && i < NSECTIONS; i++) {
				int d = tc_edit_distance(sec, sections[i]);
				if (d < best && d <= 3) {
					best = d;
					snprintf(sug, sizeof sug, " (did you mean '%s'?)", sections[i]);
				}
			}
			FAIL(p->key, "%s: unknown section%s; allowed: run, device, model, data, "
				     "train, sparsity", sec ? sec : "?", sug);
		}
		if (!strcmp(sec, "sparsity")) {
			c->sparsity_node = p->value;
			continue;
		}
		yaml_node_t *m = yaml_document_get_node(doc, p->value);
		if (m->type == YAML_SCALAR_NODE && !*scalar(m))
			continue; /* "train:" with nothing under it */
		if (m->type != YAML_MAPPING_NODE)
			FAIL(p->value, "%s: expected a mapping of keys", sec);
		for (yaml_node_pair_t *q = m->data.mapping.pairs.start;
		     q < m->data.mapping.pairs.top; q++) {
			const char *key = scalar(yaml_document_get_node(doc, q->key));
			const tc_key *k = key ? find_key(sec, key) : NULL;
			if (!k) {
				char sug[96], keys[512];
				suggest(sec, key ? key : "", sug, sizeof sug);
				list_keys(sec, keys, sizeof keys);
				FAIL(q->key, "%s.%s: unknown key%s; allowed: %s", sec,
				     key ? key : "?", sug, keys);
			}
			int rc = set_value(c, k, q->value, err, errlen);
			if (rc)
				return rc;
		}
	}
	/* cross-key checks, reported at the key that has to change */
	int node = map_get(doc, map_get(doc, 1, "model", NULL), "n_head", NULL);
	if (c->model.n_embd % c->model.n_head)
		FAIL(node, "model.n_head: n_embd %d is not divisible by n_head %d",
		     c->model.n_embd, c->model.n_head);
	node = map_get(doc, map_get(doc, 1, "device", NULL), "awords", NULL);
	if (c->awords % 2)
		FAIL(node, "device.awords: %d is odd (A holds pairs of bf16 elements)", c->awords);
	node = map_get(doc, map_get(doc, 1, "device", NULL), "bwords", NULL);
	if (c->bwords & (c->bwords - 1))
		FAIL(node, "device.bwords: %d is not a power of two", c->bwords);
	int rc = check_device(c, err, errlen);
	if (rc)
		return rc;
	node = map_get(doc, map_get(doc, 1, "train", NULL), "min_lr", NULL);
	if (c->min_lr > c->lr)
		FAIL(node, "train.min_lr: %g is above train.lr %g", c->min_lr, c->lr);
	int imp = map_get(doc, 1, "imp", NULL);
	if (c->imp_rounds > 0) {
		long R = c->imp_rounds, k = c->imp_rewind_step, S = tc_imp_round_steps(c);
		if ((c->imp_fraction > 0) == (c->imp_sparsity > 0))
			FAIL(map_get(doc, imp, "rounds", NULL),
			     "imp: give one of imp.fraction (pruned per round) and imp.sparsity "
			     "(final), not %s", c->imp_fraction > 0 ? "both" : "neither");
		if (!c->imp_steps_per_round && (c->steps + R * k) % (R + 1))
			FAIL(map_get(doc, imp, "rounds", NULL),
			     "imp.rounds: train.steps %d does not split into round 0 of S steps "
			     "and %ld rounds of S - %ld: S = %ld needs train.steps %ld (or set "
			     "imp.steps_per_round)",
			     c->steps, R, k, S, S + R * (S - k));
		if (k >= S)
			FAIL(map_get(doc, imp, "rewind_step", NULL),
			     "imp.rewind_step: %ld is not below the %ld steps of a round", k, S);
		if (c->imp_steps_per_round && c->steps != S + R * (S - k))
			FAIL(map_get(doc, imp, "steps_per_round", NULL),
			     "imp.steps_per_round: %ld steps in round 0 and %ld in each of %ld "
			     "rounds after (rewound to step %ld) make %ld; train.steps is %d (set "
			     "train.steps: %ld)",
			     S, S - k, R, k, S + R * (S - k), c->steps, S + R * (S - k));
		if (!c->sparsity_node)
			FAIL(map_get(doc, imp, "rounds", NULL),
			     "imp.rounds: needs a sparsity block choosing the tensors to prune "
			     "(e.g. sparsity: {algorithm: static, sparsity: 0.0} for a dense start)");
	}
	return CS_OK;
}

long tc_imp_round_steps(const train_config *c)
{
	long R = c->imp_rounds, k = c->imp_rewind_step;
	if (R <= 0)
		return c->steps;
	if (c->imp_steps_per_round)
		return c->imp_steps_per_round;
	return (c->steps + R * k) / (R + 1);
}

int tc_load(train_config *c, const char *path, const char *text, char *const *overrides,
	    int n_overrides, char *err, size_t errlen)
{
	tc_defaults(c);
	snprintf(c->file, sizeof c->file, "%s", path);
	int rc = load_document(c, path, text, err, errlen);
	if (rc)
		goto out_free;
	for (int i = 0; i < n_overrides; i++) {
		rc = apply_override(c, overrides[i], err, errlen);
		if (rc)
			goto out_free;
	}
	rc = validate(c, err, errlen);
	if (rc)
		goto out_free;
	return CS_OK;
out_free:
	tc_free(c);
	return rc;
}

int tc_dense_on_host(const train_config *c, int sparsity_on)
{
	if (c->dense_on_host >= 0)
		return c->dense_on_host;
	return !sparsity_on && strcmp(c->device_kind, "sim") && strcmp(c->device_kind, "usb");
}

int tc_native(const train_config *c)
{
	return !strcmp(c->device_kind, "native");
}

void tc_device_uri(const train_config *c, char *buf, size_t len)
{
	/* usb: the board's shape and PE are the bitstream's (device.mesh and device.pe are for
	 * cpu and sim) */
	int usb = !strcmp(c->device_kind, "usb");
	/* "model" is the bit-exact C model of the mesh, the driver's "cpu" backend */
	const char *be = !strcmp(c->device_kind, "model") ? "cpu" : c->device_kind;
	/* usb: the board of this rank, the device_index-th of device.serials */
	char serial[sizeof c->serials] = "";
	const char *sv = c->serials;
	for (int i = 0; usb && *sv; i++) {
		size_t l = strcspn(sv, ",");
		if (i == c->device_index) {
			snprintf(serial, sizeof serial, "%.*s", (int)l, sv);
			break;
		}
		sv += l + (sv[l] == ',');
	}
	size_t n = usb ? (size_t)snprintf(buf, len, "usb%s%s", serial[0] ? ":" : "", serial)
		       : (size_t)snprintf(buf, len, "%s:%s", be, c->mesh);
	const char *sep = usb && !serial[0] ? ":" : ",";
	/* pe= also gives the implementation's SRAM sizes where awords/bwords are 0 */
	if (!usb && strcmp(c->pe, "full") && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",pe=%s", c->pe);
	if (c->awords && n < len) {
		n += (size_t)snprintf(buf + n, len - n, "%sawords=%d", sep, c->awords);
		sep = ",";
	}
	if (c->bwords && n < len)
		snprintf(buf + n, len - n, "%sbwords=%d", sep, c->bwords);
}

/* ---- resolved config ---------------------------------------------------------------- */

/* A double-quoted scalar; anything not printable goes as an escape so that the file
 * reads back to the same text. */
static void write_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = 1;
		long cp = utf8_next(p, &n);
		if (cp < 0) { /* not reachable through tc_load; keep the writer total */
			fprintf(f, "\\x%02x", *p);
			p++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(f, "\\%c", (int)cp);
		else if (cp == '\n' || !yaml_printable(cp))
			fprintf(f, cp > 0xffff ? "\\U%08lx" : "\\u%04lx", cp);
		else
			fwrite(p, 1, (size_t)n, f);
		p += n;
	}
	fputc('"', f);
}

/* Plain scalars written back plain only when they cannot read as anything else. */
static int plain_safe(const char *v)
{
	if (!*v)
		return 0;
	if (v[0] == '-' ? !(isalnum((unsigned char)v[1]) || v[1] == '.')
			: !(isalnum((unsigned char)v[0]) || strchr("._/+", v[0])))
		return 0;
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._/+-*", *p))
			return 0;
	return 1;
}

static int plain_null(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*v || !strcmp(v, "~") || !strcasecmp(v, "null"));
}

/* shortest text that reads back to the same double */
static void write_double(FILE *f, double x)
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

static void write_node(FILE *f, yaml_document_t *doc, int id, int indent)
{
	yaml_node_t *n = yaml_document_get_node(doc, id);
	if (!n)
		return;
	if (n->type == YAML_SCALAR_NODE) {
		const char *v = (const char *)n->data.scalar.value;
		if (plain_null(n))
			fputs("null", f); /* stays a null, not an empty string */
		else if (n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
			 n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE || !plain_safe(v))
			write_string(f, v);
		else
			fputs(v, f);
		fputc('\n', f);
	} else if (n->type == YAML_SEQUENCE_NODE) {
		if (n->data.sequence.items.start == n->data.sequence.items.top) {
			fputs("[]\n", f); /* not a null */
			return;
		}
		fputc('\n', f);
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top; it++) {
			fprintf(f, "%*s- ", indent, "");
			yaml_node_t *c = yaml_document_get_node(doc, *it);
			if (c && c->type == YAML_MAPPING_NODE) {
				/* first pair on the dash line, the rest indented under it */
				int first = 1;
				for (yaml_node_pair_t *p = c->data.mapping.pairs.start;
				     p < c->data.mapping.pairs.top; p++) {
					if (!first)
						fprintf(f, "%*s", indent + 2, "");
					first = 0;
					write_string(f, scalar(yaml_document_get_node(doc, p->key))
								? scalar(yaml_document_get_node(doc, p->key))
								: "");
					fputs(": ", f);
					write_node(f, doc, p->value, indent + 4);
				}
				if (first)
					fputs("{}\n", f);
			} else {
				write_node(f, doc, *it, indent + 2);
			}
		}
	} else if (n->type == YAML_MAPPING_NODE) {
		if (n->data.mapping.pairs.start == n->data.mapping.pairs.top) {
			fputs("{}\n", f);
			return;
		}
		fputc('\n', f);
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top; p++) {
			fprintf(f, "%*s", indent, "");
			const char *k = scalar(yaml_document_get_node(doc, p->key));
			write_string(f, k ? k : "");
			fputs(": ", f);
			write_node(f, doc, p->value, indent + 2);
		}
	}
}

static void write_value(FILE *f, const train_config *c, const tc_key *k)
{
	const char *base = (const char *)c;
	switch (k->type) {
	case T_STR:
	case T_ENUM:
	case T_MESH:
		write_string(f, base + k->off);
		break;
	case T_INT:
		fprintf(f, "%d", *(const int *)(base + k->off));
		break;
	case T_U64:
		fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)(base + k->off));
		break;
	case T_DOUBLE:
		write_double(f, *(const double *)(base + k->off));
		break;
	case T_AUTOBOOL: {
		int v = *(const int *)(base + k->off);
		fputs(v < 0 ? "auto" : v ? "true" : "false", f);
		break;
	}
	}
}

int tc_write_resolved(const train_config *c, FILE *f)
{
	const char *cur = "";
	fprintf(f, "# resolved configuration (defaults and overrides applied)\n");
	for (int i = 0; i < NKEYS; i++) {
		const tc_key *k = &schema[i];
		if (strcmp(cur, k->section)) {
			fprintf(f, "%s:\n", k->section);
			cur = k->section;
		}
		fprintf(f, "  %s: ", k->key);
		write_value(f, c, k);
		fputc('\n', f);
	}
	if (c->sparsity_node) {
		fputs("sparsity: ", f);
		write_node(f, (yaml_document_t *)&c->doc, c->sparsity_node, 2);
	}
	return ferror(f) ? CS_ERR_IO : CS_OK;
}

/* ---- what a resume may not change silently ----------------------------------------- */

/* Keys whose change makes a resumed run train something else than the checkpoint's run:
 * the model, the data and its split, the batch, the seed (it picks the batches) and the
 * optimizer. Not here: train.steps (extending a run is what --resume is for), the device
 * and threads (same training, other hardware), logging, evaluation and checkpointing. */
static int changes_training(const tc_key *k)
{
	static const char *const train_keys[] = { "batch_size", "grad_accum", "lr", "min_lr",
						  "warmup_steps", "weight_decay", "beta1", "beta2",
						  "eps", "grad_clip", NULL };
	if (!strcmp(k->section, "model") || !strcmp(k->section, "imp"))
		return 1;
	if (!strcmp(k->section, "data"))
		return strcmp(k->key, "cache_dir") != 0;
	if (!strcmp(k->section, "run"))
		return !strcmp(k->key, "seed");
	if (!strcmp(k->section, "train"))
		for (int i = 0; train_keys[i]; i++)
			if (!strcmp(k->key, train_keys[i]))
				return 1;
	return 0;
}

typedef struct flat {
	char **lines; /* "path\tvalue", sorted */
	int n, cap;
} flat;

static int flat_add(flat *fl, const char *path, const char *value)
{
	if (fl->n == fl->cap) {
		int cap = fl->cap ? 2 * fl->cap : 32;
		char **l = realloc(fl->lines, (size_t)cap * sizeof *l);
		if (!l)
			return CS_ERR_NO_MEM;
		fl->lines = l;
		fl->cap = cap;
	}
	size_t len = strlen(path) + strlen(value) + 2;
	char *s = malloc(len);
	if (!s)
		return CS_ERR_NO_MEM;
	snprintf(s, len, "%s\t%s", path, value);
	fl->lines[fl->n++] = s;
	return CS_OK;
}

/* The sparsity block as "sparsity.update.freq\t100" lines (depth is bounded by the
 * loader's limit, so the recursion is too). */
static int flatten(flat *fl, yaml_document_t *doc, int id, const char *path)
{
	yaml_node_t *n = yaml_document_get_node(doc, id);
	if (!n)
		return CS_OK;
	char sub[512];
	int rc = CS_OK;
	if (n->type == YAML_SCALAR_NODE)
		return flat_add(fl, path, plain_null(n) ? "null" : (const char *)n->data.scalar.value);
	if (n->type == YAML_SEQUENCE_NODE && n->data.sequence.items.start == n->data.sequence.items.top)
		return flat_add(fl, path, "[]");
	if (n->type == YAML_MAPPING_NODE && n->data.mapping.pairs.start == n->data.mapping.pairs.top)
		return flat_add(fl, path, "{}");
	if (n->type == YAML_SEQUENCE_NODE) {
		int i = 0;
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top && !rc; it++, i++) {
			snprintf(sub, sizeof sub, "%s[%d]", path, i);
			rc = flatten(fl, doc, *it, sub);
		}
		return rc;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top && !rc; p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));
		snprintf(sub, sizeof sub, "%s.%s", path, k ? k : "?");
		rc = flatten(fl, doc, p->value, sub);
	}
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void flat_free(flat *fl)
{
	for (int i = 0; i < fl->n; i++)
		free(fl->lines[i]);
	free(fl->lines);
}

static void diff_line(FILE *f, int *n, const char *path, const char *a, const char *b)
{
	fprintf(f, "%s  %s: %s -> %s", *n ? "\n" : "", path, a, b);
	(*n)++;
}

int tc_diff_training(const train_config *a, const train_config *b, char **text)
{
	char *buf = NULL;
	size_t len = 0;
	*text = NULL;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return CS_ERR_NO_MEM;
	int n = 0, rc = CS_OK;
	for (int i = 0; i < NKEYS; i++) {
		const tc_key *k = &schema[i];
		if (!changes_training(k))
			continue;
		char *va = NULL, *vb = NULL;
		size_t la, lb;
		FILE *fa = open_memstream(&va, &la), *fb = open_memstream(&vb, &lb);
		if (fa)
			write_value(fa, a, k), fclose(fa);
		if (fb)
			write_value(fb, b, k), fclose(fb);
		if (va && vb && strcmp(va, vb)) {
			char path[64];
			snprintf(path, sizeof path, "%s.%s", k->section, k->key);
			diff_line(f, &n, path, va, vb);
		}
		free(va);
		free(vb);
	}
	flat fa = { 0 }, fb = { 0 };
	if (a->sparsity_node)
		rc = flatten(&fa, (yaml_document_t *)&a->doc, a->sparsity_node, "sparsity");
	if (!rc && b->sparsity_node)
		rc = flatten(&fb, (yaml_document_t *)&b->doc, b->sparsity_node, "sparsity");
	if (!rc) {
		if (fa.n > 1)
			qsort(fa.lines, (size_t)fa.n, sizeof *fa.lines, cmp_str);
		if (fb.n > 1)
			qsort(fb.lines, (size_t)fb.n, sizeof *fb.lines, cmp_str);
		/* merge the two sorted lists by path */
		int i = 0, j = 0;
		while (i < fa.n || j < fb.n) {
			char *ta = i < fa.n ? strchr(fa.lines[i], '\t') : NULL;
			char *tb = j < fb.n ? strchr(fb.lines[j], '\t') : NULL;
			int c;
			if (!ta)
				c = 1;
			else if (!tb)
				c = -1;
			else {
				*ta = *tb = 0;
				c = strcmp(fa.lines[i], fb.lines[j]);
				*ta = *tb = '\t';
			}
			if (c < 0) {
				*ta = 0;
				diff_line(f, &n, fa.lines[i], ta + 1, "(absent)");
				*ta = '\t';
				i++;
			} else if (c > 0) {
				*tb = 0;
				diff_line(f, &n, fb.lines[j], "(absent)", tb + 1);
				*tb = '\t';
				j++;
			} else {
				if (strcmp(ta + 1, tb + 1)) {
					*ta = 0;
					diff_line(f, &n, fa.lines[i], ta + 1, tb + 1);
					*ta = '\t';
				}
				i++;
				j++;
			}
		}
	}
	flat_free(&fa);
	flat_free(&fb);
	fclose(f);
	if (rc || !n) {
		free(buf);
		return rc ? rc : 0;
	}
	*text = buf;
	return n;
}
