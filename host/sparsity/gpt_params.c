/*
 * gpt_params.c - the parameter table (names and shapes) of the GPT-2 style model that
 * `cshost train` trains, so that `cshost sparsity show` and the trainer agree on what a
 * config selects. It describes shapes only; the trainer owns the buffers.
 */
#include <stdio.h>
#include <string.h>

#include "sparsity/sparsity.h"

static void put(sp_gpt_tensor *out, int cap, int *n, const char *name, int ndim, int d0, int d1)
{
	if (out && *n < cap) {
		sp_gpt_tensor *t = &out[*n];
		memset(t, 0, sizeof *t);
		snprintf(t->name, sizeof t->name, "%s", name);
		t->ndim = ndim;
		t->shape[0] = d0;
		t->shape[1] = ndim > 1 ? d1 : 0;
		t->numel = (size_t)d0 * (size_t)(ndim > 1 ? d1 : 1);
	}
	(*n)++;
}

int sp_gpt_tensors(const sp_gpt_dims *d, sp_gpt_tensor *out, int cap)
{
	if (!d || d->n_layer < 0 || d->n_layer > 9999 || d->n_embd <= 0 || d->block_size <= 0 ||
	    d->vocab_size <= 0 || d->n_head <= 0 || d->n_embd % d->n_head)
		return CS_ERR_INVALID;
	int C = d->n_embd, n = 0;
	char nm[48];
	put(out, cap, &n, "wte.weight", 2, d->vocab_size, C);
	put(out, cap, &n, "wpe.weight", 2, d->block_size, C);
	for (int l = 0; l < d->n_layer; l++) {
#define P(suffix, nd, a, b)                                             \
	do {                                                            \
		snprintf(nm, sizeof nm, "h.%d." suffix, l);             \
		put(out, cap, &n, nm, nd, a, b);                        \
	} while (0)
		P("ln_1.weight", 1, C, 0);
		P("ln_1.bias", 1, C, 0);
		P("attn.qkv.weight", 2, 3 * C, C);
		P("attn.qkv.bias", 1, 3 * C, 0);
		P("attn.proj.weight", 2, C, C);
		P("attn.proj.bias", 1, C, 0);
		P("ln_2.weight", 1, C, 0);
		P("ln_2.bias", 1, C, 0);
		P("mlp.fc.weight", 2, 4 * C, C);
		P("mlp.fc.bias", 1, 4 * C, 0);
		P("mlp.proj.weight", 2, C, 4 * C);
		P("mlp.proj.bias", 1, C, 0);
#undef P
	}
	put(out, cap, &n, "ln_f.weight", 1, C, 0);
	put(out, cap, &n, "ln_f.bias", 1, C, 0);
	return n;
}
