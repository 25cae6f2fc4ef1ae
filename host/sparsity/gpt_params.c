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

/* "<prefix>attn.qkv.weight" with shape [3C, C]: the fused q/k/v projection */
static int is_fused_qkv(const sp_param *p)
{
	static const char suf[] = "attn.qkv.weight";
	size_t n = strlen(p->name), k = sizeof suf - 1;
	return n >= k && !strcmp(p->name + n - k, suf) && p->ndim == 2 && p->shape[0] > 0 &&
	       p->shape[0] % 3 == 0;
}

int sp_split_qkv_count(const sp_param *in, int n)
{
	int c = 0;
	for (int i = 0; i < n; i++)
		c += is_fused_qkv(&in[i]) ? 3 : 1;
	return c;
}

int sp_split_qkv(const sp_param *in, int n, sp_param *out, int *src, size_t *off,
		 sp_part_name *names)
{
	static const char part[3] = { 'q', 'k', 'v' };
	int j = 0;
	for (int i = 0; i < n; i++) {
		const sp_param *p = &in[i];
		if (!is_fused_qkv(p)) {
			out[j] = *p;
			src[j] = i;
			off[j] = 0;
			snprintf(names[j], sizeof names[j], "%s", p->name);
			j++;
			continue;
		}
		size_t plen = strlen(p->name) - strlen("qkv.weight");
		size_t rows = (size_t)p->shape[0] / 3, numel = rows * (size_t)p->shape[1];
		for (int k = 0; k < 3; k++, j++) {
			snprintf(names[j], sizeof names[j], "%.*s%c.weight", (int)plen, p->name,
				 part[k]);
			sp_param *o = &out[j];
			*o = *p;
			o->name = names[j];
			o->alias = p->name;
			o->shape[0] = (int)rows;
			o->numel = numel;
			size_t d = (size_t)k * numel;
#define PART(f) o->f = p->f ? p->f + d : NULL
			PART(w);
			PART(grad);
			PART(adam_m);
			PART(adam_v);
#undef PART
			src[j] = i;
			off[j] = d;
		}
	}
	return j;
}
