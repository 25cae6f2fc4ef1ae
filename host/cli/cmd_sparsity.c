/*
 * cmd_sparsity.c - `cshost sparsity show cfg.yaml [--steps N]`: what a training config's
 * `sparsity:` block does to the GPT of its `model:` block, without training: per tensor
 * whether it is sparsified, by which algorithm, its initial and final target sparsity and
 * the nonzeros they imply.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "cli/cli.h"
#include "cli/cli_num.h"
#include "common/cs_yaml.h"
#include "sparsity/sparsity.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cshost sparsity show CONFIG.yaml [--steps N]\n"
		   "  prints, per parameter of the config's model, whether it is sparsified,\n"
		   "  the algorithm, the target sparsity (at start and end) and the nonzeros.\n"
		   "  --steps N  length of training, for schedules without a stop (default: none)\n");
}

/* model: {n_layer, n_head, n_embd, block_size, vocab_size} */
static int read_model(const char *path, sp_gpt_dims *d)
{
	char *text = NULL, err[1200];
	size_t len;
	yaml_document_t doc;
	int rc = -1;
	if (cs_yaml_read_file(path, &text, &len, err, sizeof err) ||
	    cs_yaml_load(&doc, path, text, len, err, sizeof err)) {
		if (text)
			free(text);
		fprintf(stderr, "cshost sparsity: %s\n", err);
		return -1;
	}
	free(text);
	yaml_node_t *root = yaml_document_get_root_node(&doc), *model = NULL;
	for (yaml_node_pair_t *q = root && root->type == YAML_MAPPING_NODE ?
					   root->data.mapping.pairs.start :
					   NULL;
	     q && q < root->data.mapping.pairs.top; q++) {
		yaml_node_t *k = yaml_document_get_node(&doc, q->key);
		if (k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, "model"))
			model = yaml_document_get_node(&doc, q->value);
	}
	if (!model || model->type != YAML_MAPPING_NODE) {
		fprintf(stderr, "%s: no model: block (n_layer, n_head, n_embd, block_size, "
				"vocab_size)\n",
			path);
		goto out_doc;
	}
	struct {
		const char *key;
		int *dst;
	} keys[] = { { "n_layer", &d->n_layer }, { "n_head", &d->n_head }, { "n_embd", &d->n_embd },
		     { "block_size", &d->block_size }, { "vocab_size", &d->vocab_size } };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		*keys[i].dst = -1;
		for (yaml_node_pair_t *q = model->data.mapping.pairs.start;
		     q < model->data.mapping.pairs.top; q++) {
			yaml_node_t *k = yaml_document_get_node(&doc, q->key);
			yaml_node_t *v = yaml_document_get_node(&doc, q->value);
			if (k->type != YAML_SCALAR_NODE || strcmp((char *)k->data.scalar.value, keys[i].key))
				continue;
			long long x = -1;
			if (v->type != YAML_SCALAR_NODE ||
			    cli_parse_int((char *)v->data.scalar.value, 1, 1 << 24, &x)) {
				fprintf(stderr, "%s:%lu:%lu: model.%s: not a positive integer\n", path,
					(unsigned long)v->start_mark.line + 1,
					(unsigned long)v->start_mark.column + 1, keys[i].key);
				goto out_doc;
			}
			*keys[i].dst = (int)x;
		}
		if (*keys[i].dst < 0) {
			fprintf(stderr, "%s: model.%s is missing\n", path, keys[i].key);
			goto out_doc;
		}
	}
	rc = 0;
out_doc:
	yaml_document_delete(&doc);
	return rc;
}

static int show(const char *path, long steps)
{
	sp_gpt_dims d;
	if (read_model(path, &d))
		return 1;
	char err[512] = "";
	sp_config *cfg = NULL;
	if (sp_config_load_file(&cfg, path, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	int n = sp_gpt_tensors(&d, NULL, 0);
	if (n < 0) {
		fprintf(stderr, "%s: model: n_embd must be divisible by n_head\n", path);
		sp_config_free(cfg);
		return 1;
	}
	sp_gpt_tensor *tab = calloc((size_t)n, sizeof *tab);
	sp_param *p = calloc((size_t)n, sizeof *p), *v = NULL;
	int nv = 0, *vsrc = NULL;
	size_t *voff = NULL;
	sp_part_name *vnames = NULL;
	sp_state *st = NULL;
	int ret = 1;
	if (!tab || !p)
		goto out;
	sp_gpt_tensors(&d, tab, n);
	for (int i = 0; i < n; i++) {
		p[i].name = tab[i].name;
		p[i].ndim = tab[i].ndim;
		p[i].shape[0] = tab[i].shape[0];
		p[i].shape[1] = tab[i].shape[1];
		p[i].numel = tab[i].numel;
	}
	/* q, k and v are sparsified as separate tensors, as in training */
	nv = sp_split_qkv_count(p, n);
	v = calloc((size_t)nv, sizeof *v);
	vsrc = calloc((size_t)nv, sizeof *vsrc);
	voff = calloc((size_t)nv, sizeof *voff);
	vnames = calloc((size_t)nv, sizeof *vnames);
	if (!v || !vsrc || !voff || !vnames)
		goto out;
	sp_split_qkv(p, n, v, vsrc, voff, vnames);
	if (sp_create(&st, cfg, v, nv, 0, steps, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	printf("%-24s %-10s %-7s %10s %10s %10s %10s\n", "tensor", "shape", "algo", "s_start",
	       "s_final", "nnz_final", "numel");
	size_t tot = 0, tot_nnz = 0, sp_tot = 0, sp_nnz = 0;
	for (int i = 0; i < nv; i++) {
		char shape[32];
		if (v[i].ndim == 2)
			snprintf(shape, sizeof shape, "%dx%d", v[i].shape[0], v[i].shape[1]);
		else
			snprintf(shape, sizeof shape, "%d", v[i].shape[0]);
		const char *algo = sp_tensor_algorithm(st, i);
		size_t nnz = sp_tensor_final_nnz(st, i);
		tot += v[i].numel;
		tot_nnz += nnz;
		if (strcmp(algo, "dense")) {
			sp_tot += v[i].numel;
			sp_nnz += nnz;
			printf("%-24s %-10s %-7s %10.4f %10.4f %10zu %10zu\n", v[i].name, shape, algo,
			       sp_tensor_target(st, i), sp_tensor_final_target(st, i), nnz,
			       v[i].numel);
		} else {
			printf("%-24s %-10s %-7s %10s %10s %10zu %10zu\n", v[i].name, shape, algo, "-",
			       "-", nnz, v[i].numel);
		}
	}
	printf("sparsified: %zu of %zu parameters; final nonzeros %zu (sparsity %.4f of the "
	       "sparsified, %.4f overall)\n",
	       sp_tot, tot, tot_nnz, sp_tot ? 1.0 - (double)sp_nnz / (double)sp_tot : 0.0,
	       tot ? 1.0 - (double)tot_nnz / (double)tot : 0.0);
	ret = 0;
out:
	sp_free(st);
	free(v);
	free(vsrc);
	free(voff);
	free(vnames);
	free(p);
	free(tab);
	sp_config_free(cfg);
	return ret;
}

int cmd_sparsity(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 3 || strcmp(argv[1], "show")) {
		usage(stderr);
		return 2;
	}
	long steps = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
			long long x;
			if (cli_int("sparsity", "--steps", argv[++i], 0, 1000000000, &x))
				return 2;
			steps = (long)x;
		} else {
			usage(stderr);
			return 2;
		}
	}
	return show(argv[2], steps);
}
