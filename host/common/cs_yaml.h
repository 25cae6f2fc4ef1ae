/*
 * cs_yaml.h - bounded loading of YAML configuration documents (libyaml).
 *
 * Configs come from users and from files copied between machines, so the loader refuses
 * what libyaml would accept but the host stack cannot handle safely: aliases and anchors
 * (a self-referencing alias makes every tree walk recurse without end; nested aliases
 * grow exponentially), documents nested deeper than CS_YAML_MAX_DEPTH, with more than
 * CS_YAML_MAX_NODES nodes, files over CS_YAML_MAX_BYTES, non-regular files, keys that are
 * not names (lists, mappings, over CS_YAML_MAX_KEY characters, line breaks) and duplicate
 * keys in a mapping (where the last one would silently win). Every error names
 * file:line:col. Not here: what the keys mean (host/train/config.c, host/sparsity/config.c).
 */
#ifndef CS_YAML_H
#define CS_YAML_H

#include <stddef.h>
#include <yaml.h>

#define CS_YAML_MAX_BYTES (1u << 20)
#define CS_YAML_MAX_DEPTH 32
#define CS_YAML_MAX_NODES 100000
#define CS_YAML_MAX_KEY 256

/* Read a config file into a NUL-terminated buffer (free() it): refuses directories and
 * other non-regular files and files over CS_YAML_MAX_BYTES. */
int cs_yaml_read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen);
/* Parse text (len bytes, called `name` in messages) into doc within the limits above.
 * On success the caller owns doc (yaml_document_delete); on error doc is not loaded. */
int cs_yaml_load(yaml_document_t *doc, const char *name, const char *text, size_t len,
		 char *err, size_t errlen);

/* Make an error message one line: control characters (a multi-line value quoted in it)
 * become escapes ("\n", "\x01"), truncated to cap bytes with the NUL. */
void cs_yaml_one_line(char *msg, size_t cap);

#endif /* CS_YAML_H */
