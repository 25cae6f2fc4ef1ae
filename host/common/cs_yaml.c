/*
 * cs_yaml.c - bounded YAML loading: a streaming pass over the parser's events enforces
 * the limits before any document is built, then the document is loaded and its mappings
 * are checked for duplicate keys (see cs_yaml.h for why each limit exists).
 */
#include "common/cs_yaml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cs_error.h"

int cs_yaml_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
	*buf = NULL;
	*len = 0;
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO;
	}
	struct stat st;
	if (fstat(fileno(f), &st)) {
		snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
		fclose(f);
		return CS_ERR_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file (%s); give a YAML config file", path,
			 S_ISDIR(st.st_mode) ? "a directory" : "a device, pipe or socket");
		fclose(f);
		return CS_ERR_CONFIG;
	}
	if ((unsigned long long)st.st_size > CS_YAML_MAX_BYTES) {
		snprintf(err, errlen, "%s: %lld bytes is over the config size limit of %u bytes",
			 path, (long long)st.st_size, CS_YAML_MAX_BYTES);
		fclose(f);
		return CS_ERR_CONFIG;
	}
	char *b = malloc((size_t)st.st_size + 1);
	if (!b) {
		fclose(f);
		return CS_ERR_NO_MEM;
	}
	size_t n = fread(b, 1, (size_t)st.st_size, f);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		snprintf(err, errlen, "%s: read error", path);
		free(b);
		return CS_ERR_IO;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return CS_OK;
}

static int syntax_error(yaml_parser_t *p, const char *name, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s:%zu:%zu: invalid YAML: %s", name, p->problem_mark.line + 1,
		 p->problem_mark.column + 1, p->problem ? p->problem : "parse error");
	return CS_ERR_CONFIG;
}

/* The event pass: aliases, anchors, depth and node count, before anything is built. */
static int check_events(const char *name, const char *text, size_t len, char *err,
			size_t errlen)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		return CS_ERR_NO_MEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	int rc = CS_OK, depth = 0, docs = 0;
	long nodes = 0;
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			rc = syntax_error(&p, name, err, errlen);
			break;
		}
		const yaml_mark_t *m = &ev.start_mark;
		const char *anchor = NULL;
		int open = 0, node = 0;
		switch (ev.type) {
		case YAML_ALIAS_EVENT:
			snprintf(err, errlen, "%s:%zu:%zu: alias '*%s': aliases and anchors are "
				 "not allowed in a config; write the value out", name,
				 m->line + 1, m->column + 1, (const char *)ev.data.alias.anchor);
			rc = CS_ERR_CONFIG;
			break;
		case YAML_SCALAR_EVENT:
			anchor = (const char *)ev.data.scalar.anchor;
			node = 1;
			break;
		case YAML_SEQUENCE_START_EVENT:
			anchor = (const char *)ev.data.sequence_start.anchor;
			node = open = 1;
			break;
		case YAML_MAPPING_START_EVENT:
			anchor = (const char *)ev.data.mapping_start.anchor;
			node = open = 1;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_DOCUMENT_START_EVENT:
			/* only the first would be read: the rest would be ignored in silence */
			if (++docs > 1) {
				snprintf(err, errlen, "%s:%zu:%zu: a second YAML document; a config is "
					 "one document (remove the '---')", name, m->line + 1,
					 m->column + 1);
				rc = CS_ERR_CONFIG;
			}
			break;
		default:
			break;
		}
		if (!rc && anchor) {
			snprintf(err, errlen, "%s:%zu:%zu: anchor '&%s': aliases and anchors are "
				 "not allowed in a config; write the value out", name,
				 m->line + 1, m->column + 1, anchor);
			rc = CS_ERR_CONFIG;
		}
		if (!rc && open && ++depth > CS_YAML_MAX_DEPTH) {
			snprintf(err, errlen, "%s:%zu:%zu: nested deeper than %d levels", name,
				 m->line + 1, m->column + 1, CS_YAML_MAX_DEPTH);
			rc = CS_ERR_CONFIG;
		}
		if (!rc && node && ++nodes > CS_YAML_MAX_NODES) {
			snprintf(err, errlen, "%s:%zu:%zu: more than %d values in one config", name,
				 m->line + 1, m->column + 1, CS_YAML_MAX_NODES);
			rc = CS_ERR_CONFIG;
		}
		int end = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
		if (rc || end)
			break;
	}
	yaml_parser_delete(&p);
	return rc;
}

typedef struct key_ref {
	const char *key;
	const yaml_node_t *node;
} key_ref;

static int key_cmp(const void *a, const void *b)
{
	const key_ref *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (c)
		return c;
	/* equal keys: in file order, so the message names the first one first */
	return x->node->start_mark.index < y->node->start_mark.index ? -1 :
	       x->node->start_mark.index > y->node->start_mark.index;
}

/* A key is a name: short (the resolved config writes keys as implicit YAML keys, which
 * may not exceed 1024 characters) and on one line. */
static int key_ok(const char *k)
{
	size_t n = 0;
	for (; k[n]; n++)
		if ((unsigned char)k[n] < 0x20 || k[n] == 0x7f)
			return 0;
	return n <= CS_YAML_MAX_KEY;
}

/* Keys that are not names, and duplicate keys in any mapping (sorted, so a large mapping
 * costs n log n). */
static int check_duplicates(yaml_document_t *doc, const char *name, char *err, size_t errlen)
{
	key_ref *refs = NULL;
	size_t cap = 0;
	int rc = CS_OK;
	for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top && !rc; n++) {
		if (n->type != YAML_MAPPING_NODE)
			continue;
		size_t np = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top && !rc; p++) {
			yaml_node_t *kn = yaml_document_get_node(doc, p->key);
			if (kn && kn->type != YAML_SCALAR_NODE) {
				snprintf(err, errlen, "%s:%zu:%zu: a %s as a key; keys are names",
					 name, kn->start_mark.line + 1, kn->start_mark.column + 1,
					 kn->type == YAML_MAPPING_NODE ? "mapping" : "list");
				rc = CS_ERR_CONFIG;
			} else if (kn && !key_ok((const char *)kn->data.scalar.value)) {
				snprintf(err, errlen, "%s:%zu:%zu: a key of over %d characters or with a "
					 "line break; keys are names", name, kn->start_mark.line + 1,
					 kn->start_mark.column + 1, CS_YAML_MAX_KEY);
				rc = CS_ERR_CONFIG;
			}
		}
		if (rc)
			break;
		if (np < 2)
			continue;
		if (np > cap) {
			key_ref *r = realloc(refs, np * sizeof *r);
			if (!r) {
				rc = CS_ERR_NO_MEM;
				break;
			}
			refs = r;
			cap = np;
		}
		size_t k = 0;
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
		     p++) {
			yaml_node_t *kn = yaml_document_get_node(doc, p->key);
			if (kn && kn->type == YAML_SCALAR_NODE)
				refs[k++] = (key_ref){ (const char *)kn->data.scalar.value, kn };
		}
		if (k > 1)
			qsort(refs, k, sizeof *refs, key_cmp);
		for (size_t i = 1; i < k; i++)
			if (!strcmp(refs[i - 1].key, refs[i].key)) {
				const yaml_mark_t *a = &refs[i - 1].node->start_mark,
						  *b = &refs[i].node->start_mark;
				snprintf(err, errlen, "%s:%zu:%zu: duplicate key '%s' (first at "
					 "line %zu, column %zu); keep one", name, b->line + 1,
					 b->column + 1, refs[i].key, a->line + 1, a->column + 1);
				rc = CS_ERR_CONFIG;
				break;
			}
	}
	free(refs);
	return rc;
}

int cs_yaml_load(yaml_document_t *doc, const char *name, const char *text, size_t len,
		 char *err, size_t errlen)
{
	if (len > CS_YAML_MAX_BYTES) {
		snprintf(err, errlen, "%s: %zu bytes is over the config size limit of %u bytes",
			 name, len, CS_YAML_MAX_BYTES);
		return CS_ERR_CONFIG;
	}
	int rc = check_events(name, text, len, err, errlen);
	if (rc)
		return rc;
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		return CS_ERR_NO_MEM;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, doc)) {
		rc = syntax_error(&p, name, err, errlen);
		yaml_parser_delete(&p);
		return rc;
	}
	yaml_parser_delete(&p);
	rc = check_duplicates(doc, name, err, errlen);
	if (rc)
		yaml_document_delete(doc);
	return rc;
}

void cs_yaml_one_line(char *msg, size_t cap)
{
	if (!cap)
		return;
	size_t n = strlen(msg), o = 0;
	char *src = malloc(n + 1);
	if (!src)
		return;
	memcpy(src, msg, n + 1);
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		unsigned char ch = (unsigned char)src[i];
		char esc[8];
		if (ch >= 0x20 && ch != 0x7f) {
			msg[o++] = (char)ch;
			continue;
		}
		int l = snprintf(esc, sizeof esc, ch == '\n' ? "\\n" : ch == '\t' ? "\\t" : "\\x%02x",
				 ch);
		if (o + (size_t)l + 1 > cap)
			break;
		memcpy(msg + o, esc, (size_t)l);
		o += (size_t)l;
	}
	msg[o] = 0;
	free(src);
}
