/* hf_gpt2.c - Hugging Face GPT-2 safetensors export and import (see hf_gpt2.h). */
#include "interop/hf_gpt2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "interop/bpe.h"
#include "interop/safetensors.h"
#include "train/train.h"

/* The Hugging Face name of a model tensor and whether it is stored transposed. */
static void hf_name(const char *ours, char *out, size_t len, int *transpose)
{
	static const struct {
		const char *from, *to;
		int tr;
	} map[] = {
		{ ".attn.qkv.", ".attn.c_attn.", 1 }, { ".attn.proj.", ".attn.c_proj.", 1 },
		{ ".mlp.fc.", ".mlp.c_fc.", 1 },      { ".mlp.proj.", ".mlp.c_proj.", 1 },
	};
	*transpose = 0;
	for (size_t k = 0; k < sizeof map / sizeof map[0]; k++) {
		const char *p = strstr(ours, map[k].from);
		if (p) {
			*transpose = map[k].tr && strstr(ours, ".weight") != NULL;
			snprintf(out, len, "transformer.%.*s%s%s", (int)(p - ours), ours, map[k].to,
				 p + strlen(map[k].from));
			return;
		}
	}
	snprintf(out, len, "transformer.%s", ours);
}

/* rows x cols -> cols x rows */
static void transpose(float *dst, const float *src, int rows, int cols)
{
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++)
			dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

int hf_gpt2_export(trainer *t, const char *path, int flags, char *err, size_t errlen)
{
	gpt *m = &t->model;
	int nt = m->num_tensors;
	st_out *out = calloc((size_t)nt * 2, sizeof *out);
	void **bufs = calloc((size_t)nt * 2, sizeof *bufs);
	if (!out || !bufs) {
		free(out);
		free(bufs);
		return CS_ERR_NO_MEM;
	}
	int vocab_rows = m->cfg.vocab_size;
	if (t->tok && bpe_vocab_size(t->tok) < vocab_rows)
		vocab_rows = bpe_vocab_size(t->tok);
	int n = 0, rc = CS_OK;
	for (int i = 0; i < nt && !rc; i++) {
		const gpt_tensor *g = &m->tensors[i];
		const float *w = m->params_memory + g->offset;
		const uint8_t *mask = t->ts ? ts_mask(t->ts, i) : NULL;
		int tr, rows = g->shape[0], cols = g->ndim > 1 ? g->shape[1] : 1;
		st_out *o = &out[n];
		hf_name(g->name, o->name, sizeof o->name, &tr);
		if (!strcmp(g->name, "wte.weight"))
			rows = vocab_rows;
		size_t cnt = (size_t)rows * cols;
		float *b = malloc(cnt * sizeof *b);
		uint8_t *mb = mask && (flags & HF_MASKS) ? malloc(cnt) : NULL;
		bufs[n] = b;
		if (!b || (mask && (flags & HF_MASKS) && !mb)) {
			free(mb);
			rc = CS_ERR_NO_MEM;
			break;
		}
		for (size_t k = 0; k < cnt; k++) /* our layout, pruned entries exactly zero */
			b[k] = mask && !mask[k] ? ((flags & HF_NAN) ? NAN : 0.0f) : w[k];
		if (tr) {
			float *tb = malloc(cnt * sizeof *tb);
			if (!tb) {
				free(mb);
				rc = CS_ERR_NO_MEM;
				break;
			}
			transpose(tb, b, rows, cols);
			free(b);
			bufs[n] = b = tb;
		}
		o->dtype = "F32";
		o->ndim = g->ndim;
		o->shape[0] = tr ? cols : rows;
		o->shape[1] = tr ? rows : cols;
		o->data = b;
		o->nbytes = cnt * sizeof *b;
		n++;
		if (mb) {
			st_out *q = &out[n];
			size_t ln = strlen(o->name);
			if (ln > sizeof q->name - 6)
				ln = sizeof q->name - 6;
			memcpy(q->name, o->name, ln);
			memcpy(q->name + ln, "_mask", 6);
			for (int r = 0; r < rows; r++)
				for (int c = 0; c < cols; c++)
					mb[tr ? (size_t)c * rows + r : (size_t)r * cols + c] =
						mask[(size_t)r * cols + c] != 0;
			q->dtype = "U8";
			q->ndim = o->ndim;
			q->shape[0] = o->shape[0];
			q->shape[1] = o->shape[1];
			q->data = mb;
			q->nbytes = cnt;
			bufs[n++] = mb;
		}
	}
	if (!rc) {
		char v[8][64];
		snprintf(v[0], 64, "%d", m->cfg.n_layer);
		snprintf(v[1], 64, "%d", m->cfg.n_head);
		snprintf(v[2], 64, "%d", m->cfg.n_embd);
		snprintf(v[3], 64, "%d", m->cfg.block_size);
		snprintf(v[4], 64, "%d", vocab_rows);
		snprintf(v[5], 64, "%ld", t->step);
		snprintf(v[6], 64, "%.6f", t->ts && ts_enabled(t->ts) ? ts_sparsity(t->ts) : 0.0);
		snprintf(v[7], 64, "%s", t->tok ? "gpt2" : "bytes");
		char *cfg = NULL;
		size_t cfglen = 0;
		FILE *cf = open_memstream(&cfg, &cfglen);
		if (cf) {
			tc_write_resolved(&t->cfg, cf);
			fclose(cf);
		}
		const char *meta[][2] = {
			{ "format", "pt" },     { "n_layer", v[0] },    { "n_head", v[1] },
			{ "n_embd", v[2] },     { "n_positions", v[3] }, { "vocab_size", v[4] },
			{ "step", v[5] },       { "sparsity", v[6] },   { "tokenizer", v[7] },
			{ "cshost.config", cfg ? cfg : "" },
		};
		rc = st_write(path, out, n, meta, (int)(sizeof meta / sizeof meta[0]), err, errlen);
		free(cfg);
	} else {
		snprintf(err, errlen, "%s: out of memory", path);
	}
	for (int k = 0; k < nt * 2; k++)
		free(bufs[k]);
	free(bufs);
	free(out);
	return rc;
}

int hf_gpt2_layers(const st_file *f)
{
	int layers = 0;
	for (int k = 0; k < f->n; k++) {
		const char *s = strstr(f->e[k].name, "h.");
		int l;
		if (s && (s == f->e[k].name || s[-1] == '.') && sscanf(s, "h.%d.", &l) == 1 &&
		    l + 1 > layers)
			layers = l + 1;
	}
	return layers;
}

const st_entry *hf_gpt2_find(const st_file *f, const char *hf)
{
	const st_entry *e = st_find(f, hf);
	if (!e && !strncmp(hf, "transformer.", 12))
		e = st_find(f, hf + 12);
	return e;
}

int hf_gpt2_import(trainer *t, const char *path, char *err, size_t errlen)
{
	return hf_gpt2_import_flags(t, path, 0, err, errlen);
}

int hf_gpt2_import_flags(trainer *t, const char *path, int flags, char *err, size_t errlen)
{
	st_file f;
	int rc = st_open(&f, path, err, errlen);
	if (rc)
		return rc;
	gpt *m = &t->model;
	int layers = hf_gpt2_layers(&f);
	if (layers != m->cfg.n_layer) {
		snprintf(err, errlen, "%s: %d layers; model.n_layer is %d", path, layers,
			 m->cfg.n_layer);
		st_close(&f);
		return CS_ERR_CONFIG;
	}
	float *tmp = NULL;
	for (int i = 0; i < m->num_tensors && !rc; i++) {
		const gpt_tensor *g = &m->tensors[i];
		char hf[256];
		int tr;
		hf_name(g->name, hf, sizeof hf, &tr);
		const st_entry *e = hf_gpt2_find(&f, hf);
		if (!e) {
			snprintf(err, errlen, "%s: no tensor %s (the model's %s)", path, hf, g->name);
			rc = CS_ERR_FORMAT;
			break;
		}
		int rows = g->shape[0], cols = g->ndim > 1 ? g->shape[1] : 1;
		int wte = !strcmp(g->name, "wte.weight"), wpe = !strcmp(g->name, "wpe.weight");
		int64_t want0 = tr ? cols : rows, want1 = tr ? rows : cols;
		int frows = e->ndim >= 1 ? (int)e->shape[0] : 0;
		int ok = e->ndim == g->ndim && (g->ndim == 1 || e->shape[1] == want1);
		if (ok && (wte || wpe))
			ok = wte ? frows <= rows && frows > 0 : frows >= rows;
		else if (ok)
			ok = e->shape[0] == want0;
		if (!ok) {
			snprintf(err, errlen, "%s: tensor %s has shape [%lld%s%lld]; the model's %s "
				 "needs [%lld, %lld]%s", path, e->name, (long long)e->shape[0],
				 e->ndim > 1 ? ", " : "", e->ndim > 1 ? (long long)e->shape[1] : 0LL,
				 g->name, (long long)want0, (long long)want1,
				 wte ? " (model.vocab_size may be larger: padding)" :
				 wpe ? " (model.block_size may be smaller)" : "");
			rc = CS_ERR_CONFIG;
			break;
		}
		size_t fcnt = 1;
		for (int d = 0; d < e->ndim; d++)
			fcnt *= (size_t)e->shape[d];
		float *nt = realloc(tmp, fcnt * sizeof *nt);
		if (!nt) {
			rc = CS_ERR_NO_MEM;
			snprintf(err, errlen, "%s: out of memory", path);
			break;
		}
		tmp = nt;
		if ((rc = st_read_f32(&f, e, tmp, err, errlen)))
			break;
		for (size_t k = 0; k < fcnt; k++)
			if (isnan(tmp[k]) && (flags & HF_NAN)) {
				tmp[k] = 0.0f;
			} else if (isnan(tmp[k])) {
				snprintf(err, errlen, "%s: tensor %s holds NaN at element %zu (a "
					 "NaN-marked sparse export; export without --nan to start from "
					 "it)", path, e->name, k);
				rc = CS_ERR_FORMAT;
				break;
			}
		if (rc)
			break;
		float *w = m->params_memory + g->offset;
		if (tr) {
			transpose(w, tmp, cols, rows);
		} else if (wte) {
			memcpy(w, tmp, (size_t)frows * cols * sizeof *w);
			memset(w + (size_t)frows * cols, 0, (size_t)(rows - frows) * cols * sizeof *w);
		} else {
			memcpy(w, tmp, (size_t)rows * cols * sizeof *w);
		}
	}
	/* a stored lm_head must be the tied embedding */
	const st_entry *lm = rc ? NULL : st_find(&f, "lm_head.weight");
	if (lm) {
		const gpt_tensor *g = &m->tensors[0];
		if (lm->ndim != 2 || lm->shape[1] != g->shape[1] || lm->shape[0] > g->shape[0]) {
			snprintf(err, errlen, "%s: lm_head.weight does not have wte's shape", path);
			rc = CS_ERR_FORMAT;
		} else {
			size_t cnt = (size_t)lm->shape[0] * (size_t)lm->shape[1];
			float *nt = realloc(tmp, (cnt ? cnt : 1) * sizeof *nt);
			if (!nt)
				rc = CS_ERR_NO_MEM;
			else
				tmp = nt;
			if (!rc)
				rc = st_read_f32(&f, lm, tmp, err, errlen);
			if (!rc && memcmp(tmp, m->params_memory + g->offset, cnt * sizeof *tmp)) {
				snprintf(err, errlen, "%s: lm_head.weight differs from wte: an untied "
					 "LM head is not supported", path);
				rc = CS_ERR_FORMAT;
			}
		}
	}
	free(tmp);
	st_close(&f);
	return rc;
}
