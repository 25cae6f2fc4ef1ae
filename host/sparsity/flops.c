/*
 * flops.c - training and inference FLOPs of the GPT, counted as in Chinchilla (Hoffmann et
 * al. 2022, appendix F) per sequence of S tokens, with each weight matrix's matmul scaled
 * by its mask density: embeddings 2SVC, per layer qkv 2*3*S*C*C, attention logits 2*S*S*C,
 * softmax 3*H*S*S, attention reduction 2*S*S*C, output projection 2*S*C*C, MLP 2*S*C*4C
 * twice, final logits 2*S*C*V; backward = 2x forward. On a dense-gradient step (RigL/GraNet
 * update) the weight-gradient half of each sparsified matmul's backward is counted dense.
 */
#include <stdio.h>
#include <string.h>

#include "sparsity/sp_internal.h"

static double density(const sp_state *st, const char *name)
{
	if (!st)
		return 1.0;
	for (int i = 0; i < st->n; i++)
		if (!strcmp(st->t[i].name, name))
			return 1.0 - sp_tensor_sparsity(st, i);
	/* a fused q/k/v projection sparsified as three equal parts (sp_split_qkv) */
	static const char suf[] = "qkv.weight";
	size_t n = strlen(name), k = sizeof suf - 1;
	if (n < k || strcmp(name + n - k, suf) || n - k > 100)
		return 1.0;
	double sum = 0;
	for (int p = 0; p < 3; p++) {
		char part[128];
		snprintf(part, sizeof part, "%.*s%c.weight", (int)(n - k), name, "qkv"[p]);
		sum += density(st, part);
	}
	return sum / 3;
}

int sp_flops_gpt(const sp_state *st, const sp_gpt_dims *d, int seq_len, int dense_grad,
		 sp_flops *out)
{
	memset(out, 0, sizeof *out);
	if (!d || seq_len <= 0 || d->n_embd <= 0 || d->n_layer < 0 || d->vocab_size <= 0 ||
	    d->n_head <= 0)
		return CS_ERR_INVALID;
	double S = seq_len, C = d->n_embd, V = d->vocab_size, H = d->n_head;
	double dwte = density(st, "wte.weight");
	/* dense and sparse forward; lin_sparse_gap = sum over matmuls of (1-d)*F */
	double fd = 0, fs = 0, gap = 0;
#define MATMUL(F, dens)                        \
	do {                                   \
		double f_ = (F), d_ = (dens);  \
		fd += f_;                      \
		fs += f_ * d_;                 \
		gap += f_ * (1.0 - d_);        \
	} while (0)
	MATMUL(2 * S * V * C, dwte);
	for (int l = 0; l < d->n_layer; l++) {
		char nm[64];
		snprintf(nm, sizeof nm, "h.%d.attn.qkv.weight", l);
		MATMUL(2 * 3 * S * C * C, density(st, nm));
		double att = 2 * S * S * C + 3 * H * S * S + 2 * S * S * C;
		fd += att;
		fs += att;
		snprintf(nm, sizeof nm, "h.%d.attn.proj.weight", l);
		MATMUL(2 * S * C * C, density(st, nm));
		snprintf(nm, sizeof nm, "h.%d.mlp.fc.weight", l);
		MATMUL(2 * S * C * 4 * C, density(st, nm));
		snprintf(nm, sizeof nm, "h.%d.mlp.proj.weight", l);
		MATMUL(2 * S * 4 * C * C, density(st, nm));
	}
	MATMUL(2 * S * C * V, dwte);
#undef MATMUL
	out->fwd_dense = fd;
	out->fwd_sparse = fs;
	out->train_dense = 3 * fd;
	/* backward = input gradient (sparse) + weight gradient (sparse, or dense this step) */
	out->train_sparse = 3 * fs + (dense_grad ? gap : 0);
	return 0;
}

int sp_flops_step(sp_state *st, long step, const sp_gpt_dims *d, int seq_len, int n_seqs,
		  sp_flops *out)
{
	sp_flops f;
	int rc = sp_flops_gpt(st, d, seq_len, st ? sp_wants_dense_grad(st, step) : 0, &f);
	if (rc < 0 || n_seqs < 0)
		return rc < 0 ? rc : CS_ERR_INVALID;
	f.fwd_dense *= n_seqs;
	f.fwd_sparse *= n_seqs;
	f.train_dense *= n_seqs;
	f.train_sparse *= n_seqs;
	if (st)
		sp_flops_account(st, &f);
	if (out)
		*out = f;
	return 0;
}

void sp_flops_account(sp_state *st, const sp_flops *f)
{
	st->flops_train_dense += f->train_dense;
	st->flops_train_sparse += f->train_sparse;
}

int sp_flops_summarize(const sp_state *st, const sp_gpt_dims *d, int seq_len,
		       sp_flops_summary *out)
{
	memset(out, 0, sizeof *out);
	sp_flops f;
	int rc = sp_flops_gpt(st, d, seq_len, 0, &f);
	if (rc < 0)
		return rc;
	out->train_dense = st ? st->flops_train_dense : 0;
	out->train_sparse = st ? st->flops_train_sparse : 0;
	out->infer_dense = f.fwd_dense;
	out->infer_sparse = f.fwd_sparse;
	out->infer_reduction = f.fwd_sparse > 0 ? f.fwd_dense / f.fwd_sparse : 0;
	out->train_reduction = out->train_sparse > 0 ? out->train_dense / out->train_sparse : 0;
	return 0;
}

int sp_flops_write_json(const sp_state *st, const sp_gpt_dims *d, int seq_len, FILE *f)
{
	sp_flops_summary s;
	int rc = sp_flops_summarize(st, d, seq_len, &s);
	if (rc < 0)
		return rc;
	sp_stats ss;
	sp_get_stats(st, &ss);
	if (fprintf(f,
		    "{\n  \"counting\": \"chinchilla appendix F, per-layer density\",\n"
		    "  \"seq_len\": %d,\n  \"train_flops_dense\": %.6e,\n"
		    "  \"train_flops_sparse\": %.6e,\n  \"train_reduction\": %.6f,\n"
		    "  \"inference_flops_per_seq_dense\": %.6e,\n"
		    "  \"inference_flops_per_seq_sparse\": %.6e,\n"
		    "  \"inference_reduction\": %.6f,\n  \"sparsity\": %.6f,\n"
		    "  \"nonzeros\": %zu,\n  \"params\": %zu\n}\n",
		    seq_len, s.train_dense, s.train_sparse, s.train_reduction, s.infer_dense,
		    s.infer_sparse, s.infer_reduction, ss.sparsity, ss.total_nnz,
		    ss.total_numel) < 0)
		return CS_ERR_IO;
	return 0;
}
