/*
 * cmd_sparsity.c - `cshost sparsity show cfg.yaml [--steps N] [section.key=value ...]`:
 * what a training config's `sparsity:` block does to the GPT of its `model:` block,
 * without training: per tensor whether it is sparsified, by which algorithm, its initial
 * and final target sparsity and the nonzeros they imply. The config is loaded as
 * `cshost train` loads it (tc_load: the whole file and the overrides validated, defaults
 * applied).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_num.h"
#include "sparsity/sparsity.h"
#include "train/config.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cshost sparsity show CONFIG.yaml [--steps N] [section.key=value ...]\n"
		   "  prints, per parameter of the config's model, whether it is sparsified,\n"
		   "  the algorithm, the target sparsity (at start and end) and the nonzeros.\n"
		   "  --steps N  length of training, for schedules without a stop (default: none)\n"
		   "  section.key=value  overrides, as for cshost train\n");
}

static int show(const char *path, char *const *overrides, int n_overrides, long steps)
{
	static train_config c;
	char err[2048] = "";
	if (tc_load(&c, path, NULL, overrides, n_overrides, err, sizeof err)) {
		fprintf(stderr, "cshost sparsity: %s\n", err);
		return 1;
	}
	const sp_config *cfg = c.sparsity;
	sp_gpt_dims d = { c.model.n_layer, c.model.n_head, c.model.n_embd, c.model.block_size,
			  c.model.vocab_size };
	int n = sp_gpt_tensors(&d, NULL, 0); /* n_embd % n_head: checked by tc_load */
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
		fprintf(stderr, "cshost sparsity: %s\n", err);
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
	tc_free(&c);
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
	char *ov[64];
	int nov = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
			long long x;
			if (cli_int("sparsity", "--steps", argv[++i], 0, 1000000000, &x))
				return 2;
			steps = (long)x;
		} else if (argv[i][0] != '-' && strchr(argv[i], '=') &&
			   nov < (int)(sizeof ov / sizeof ov[0])) {
			ov[nov++] = argv[i];
		} else {
			usage(stderr);
			return 2;
		}
	}
	return show(argv[2], ov, nov, steps);
}
