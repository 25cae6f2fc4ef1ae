/*
 * cs_config.h - the config front end: one walker over a loaded YAML document (cs_yaml.h),
 * driven by schema tables.
 *
 * A table lists the keys of one mapping; each key has a type, a range, a default, a doc
 * line and where its value goes (an offset into the destination struct, or a setter for
 * values of several shapes). The walker looks every key of a mapping up in its table,
 * refuses unknown keys (suggesting the nearest one) and values of the wrong type or out
 * of range, stores the rest, and descends into nested tables and lists (each element
 * checked by the list's item key, "path[i]" in messages). Every error is one line,
 * "where: key.path: what is wrong", where is file:line:col or what the caller's where
 * function says (a command-line override). The same tables give the defaults, the
 * resolved values and the key reference in docs/config.md (cs_cfg_write_doc).
 *
 * Not here: what the keys mean, and checks across keys (host/train/config.c,
 * host/sparsity/config.c run those after the walk).
 */
#ifndef CS_CONFIG_H
#define CS_CONFIG_H

#include <stddef.h>
#include <stdio.h>
#include <yaml.h>

enum cs_cfg_type {
	CS_CFG_STR,      /* char[size] */
	CS_CFG_ENUM,     /* char[size], one of `allowed` */
	CS_CFG_CHOICE,   /* int: the index of the name in `allowed` (or values[index]) */
	CS_CFG_INT,      /* integer into an int (size 4) or an int64/long (size 8) */
	CS_CFG_INTD,     /* integer into a double */
	CS_CFG_U64,      /* uint64_t, any base strtoull takes ("0x10") */
	CS_CFG_DOUBLE,   /* finite double */
	CS_CFG_BOOL,     /* int 0/1: true/yes/on, false/no/off */
	CS_CFG_AUTOBOOL, /* int -1/0/1: auto or a boolean */
	CS_CFG_TABLE,    /* a mapping of the keys of `sub` (into the same destination) */
	CS_CFG_LIST,     /* a non-empty list of values of `item`: a malloc'd array of `size`-byte
			    elements at off (the old one freed), its length (int) at off_n */
	CS_CFG_STRP,     /* char *, a malloc'd copy (free() it); not empty */
	CS_CFG_IGNORED,  /* accepted and ignored */
	CS_CFG_CUSTOM,   /* set() does it all (values of several shapes) */
};

/* flags */
#define CS_CFG_MIN_OPEN 1u   /* min is excluded: (min, ... */
#define CS_CFG_MAX_OPEN 2u   /* max is excluded: ..., max) */
#define CS_CFG_NO_MAX 4u     /* no upper bound */
#define CS_CFG_NO_MIN 8u     /* no lower bound */
#define CS_CFG_NOCASE 16u    /* names (choices, booleans) in any case */
#define CS_CFG_NULL_OK 32u   /* null leaves the value as it was */
#define CS_CFG_REQUIRED 64u  /* the key must be given */
#define CS_CFG_NAME 128u     /* a plain directory name: not empty, no '/', not . or .. */
#define CS_CFG_ONE_OK 256u   /* LIST: a single value is a list of one */

typedef struct cs_cfg cs_cfg;
typedef struct cs_cfg_key cs_cfg_key;
typedef struct cs_cfg_table cs_cfg_table;

/* A setter: store the value node val of key node kn (path "sparsity.update") into dest.
 * CUSTOM keys get the whole job; other keys call set after the walker stored the value
 * (a check of the stored value or a side effect). 0 or a cs_error. */
typedef int (*cs_cfg_set_fn)(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn,
			     yaml_node_t *val, const char *path, void *dest);

struct cs_cfg_key {
	const char *key;
	enum cs_cfg_type type;
	size_t off;             /* of the value in the destination */
	size_t size;            /* strings: the buffer; integers: 4 or 8 */
	double min, max;        /* numbers: the range (flags say which ends are open) */
	unsigned flags;
	const char *allowed;    /* ENUM, CHOICE: "a|b|c"; LIST: the elements in messages */
	const int *values;      /* CHOICE: the value of each name (NULL: its index) */
	const char *def;        /* the default as YAML text ("\"\"": empty); NULL: none */
	const cs_cfg_table *sub; /* TABLE */
	const cs_cfg_key *item; /* LIST: each element (its off is 0: the element itself) */
	size_t off_n;           /* LIST: the element count (int) */
	cs_cfg_set_fn set;
	/* the docs' row: allowed values (NULL: from the type and range, cs_cfg_doc_allowed)
	 * and meaning; doc_def follows the default */
	const char *doc_allowed, *doc, *doc_def;
};

struct cs_cfg_table {
	const char *name;    /* for messages about the table itself */
	const char *what;    /* "key" or "section" (the unknown-... message) */
	const cs_cfg_key *keys;
	int n;
	int no_allowed_list; /* unknown keys: do not list the allowed ones */
};

typedef void (*cs_cfg_where_fn)(void *ctx, const yaml_node_t *n, char *buf, size_t len);

/* One walk: the document, how to name places and where errors go. */
struct cs_cfg {
	const char *file;
	yaml_document_t *doc;
	cs_cfg_where_fn where; /* NULL: file:line:col */
	void *where_ctx;
	char *err;
	size_t errlen;
	void *user;            /* the caller's state, for setters and given */
	/* NULL, or called for every key the walk stored, with its key and value nodes: where
	 * each value came from, for the caller's checks after the walk */
	void (*given)(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *val);
	/* a table of sections: an unknown key may be suggested from another section
	 * ("model.lr" -> "train.lr") */
	const cs_cfg_table *root;
};

/* Write "where: path: message" (one line) to c->err; returns CS_ERR_CONFIG. */
int cs_cfg_error(cs_cfg *c, const yaml_node_t *n, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Walk mapping node `map` (path names it in messages; "" at the root) with table t into
 * dest. seen (NULL or t->n entries): the key node of each key given, kept across walks so
 * that the caller can merge several mappings and check what was given where.
 * An empty scalar counts as an empty mapping ("train:" with nothing under it). */
int cs_cfg_walk(cs_cfg *c, const cs_cfg_table *t, yaml_node_t *map, const char *path,
		void *dest, yaml_node_t **seen);
/* Store one value (checked against k) into dest; what the walker does per key. */
int cs_cfg_set(cs_cfg *c, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *val,
	       const char *path, void *dest);
/* A list at node val (a sequence; with one_ok also a single value) of values checked and
 * stored by item into a new array of elem_size-byte elements: *arr and *n. An empty list
 * is an error, and so is a mapping; `what` names the elements in messages ("steps"). On
 * error too, *arr (free() it) holds the *n elements stored before it, for the caller to
 * release as on success. elem_size 0: nothing is stored (item's set() does the work, with
 * dest NULL). */
int cs_cfg_list(cs_cfg *c, const cs_cfg_key *item, size_t elem_size, yaml_node_t *val,
		const char *path, int one_ok, const char *what, void **arr, int *n);
/* A list of exactly n values at val ("[step, sparsity]"), element i checked by keys[i]
 * into dests[i]; `what` names it in messages ("a [step, sparsity] pair"). */
int cs_cfg_tuple(cs_cfg *c, const cs_cfg_key *const *keys, void *const *dests, int n,
		 yaml_node_t *val, const char *path, const char *what);
/* The defaults of every key of t (and of its nested tables) into dest. */
void cs_cfg_defaults(const cs_cfg_table *t, void *dest);
/* Key `name` of t, or NULL. */
const cs_cfg_key *cs_cfg_find(const cs_cfg_table *t, const char *name);
/* The value of key k in src as YAML text (strings double-quoted). */
void cs_cfg_write_value(FILE *f, const cs_cfg_key *k, const void *src);
/* A double-quoted YAML scalar that reads back to s (escapes for what is not printable). */
void cs_cfg_write_string(FILE *f, const char *s);
/* The shortest text that reads back to the same double. */
void cs_cfg_write_double(FILE *f, double x);
/* docs/config.md's key table of root (a table of sections): one row per key. Returns how
 * many keys lack a doc line or a default (def or doc_def): 0 when every row is complete. */
int cs_cfg_write_doc(FILE *f, const cs_cfg_table *root);
/* The parts of such a table, for other layouts (docs/sparsity.md): the header, and one
 * row of key k named `name` (markdown, e.g. "`update.freq`"). */
void cs_cfg_write_doc_head(FILE *f);
void cs_cfg_write_doc_row(FILE *f, const char *name, const cs_cfg_key *k);
/* A row's "allowed" column: k->doc_allowed, else what the table says: the names of an
 * enum, the range of a number ("number in [0, 1)", "integer >= 1"), "`true`, `false`". */
void cs_cfg_doc_allowed(const cs_cfg_key *k, char *buf, size_t n);

/* Helpers for setters. */
const char *cs_cfg_scalar(const yaml_node_t *n);
int cs_cfg_is_null(const yaml_node_t *n);
yaml_node_t *cs_cfg_map_get(yaml_document_t *doc, yaml_node_t *map, const char *key);
/* A node's value for messages: the scalar, or "[...]" / "{...}" */
const char *cs_cfg_show(const yaml_node_t *n);
/* Damerau-Levenshtein distance (a transposition is one edit); 99 past 63 characters. */
int cs_cfg_edit_distance(const char *a, const char *b);
/* One UTF-8 code point at s, its length in *len; -1 when malformed. */
long cs_cfg_utf8_next(const unsigned char *s, int *len);
/* What a YAML stream may hold unescaped (YAML 1.1 c-printable, as libyaml's reader). */
int cs_cfg_yaml_printable(long cp);

#endif /* CS_CONFIG_H */
