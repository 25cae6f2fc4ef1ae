/*
 * gpt64.h - an independent float64 implementation of the GPT forward pass, for tests only.
 *
 * Written from the model description (issue 5 / docs/config.md), not from gpt.c: plain
 * loops, libm tanh/exp/log in double, and each parameter fetched by its contract name
 * ("h.0.attn.qkv.weight"). Gradients are taken by central finite differences on it, so the
 * float trainer's backward pass is checked against something that shares no code with it.
 */
#ifndef TESTS_TRAIN_GPT64_H
#define TESTS_TRAIN_GPT64_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/gpt.h"

/* Parameters in double, addressed by name through the float model's tensor table. */
typedef struct g64 {
	const gpt *m; /* for sizes and the name -> offset table */
	double *p;    /* [num_params] */
} g64;

static inline const double *g64_param(const g64 *g, const char *fmt, int l)
{
	char name[64];
	snprintf(name, sizeof name, fmt, l);
	int i = gpt_find_tensor(g->m, name);
	if (i < 0) {
		fprintf(stderr, "gpt64: no tensor %s\n", name);
		abort();
	}
	return g->p + g->m->tensors[i].offset;
}

static inline void g64_layernorm(double *out, const double *x, const double *w,
				 const double *b, int N, int C)
{
	for (int n = 0; n < N; n++) {
		double mean = 0, var = 0;
		for (int i = 0; i < C; i++)
			mean += x[n * C + i];
		mean /= C;
		for (int i = 0; i < C; i++)
			var += (x[n * C + i] - mean) * (x[n * C + i] - mean);
		var /= C;
		double r = 1.0 / sqrt(var + 1e-5);
		for (int i = 0; i < C; i++)
			out[n * C + i] = (x[n * C + i] - mean) * r * w[i] + b[i];
	}
}

/* out [N, OC] = x [N, IC] W^T [IC, OC] + b */
static inline void g64_linear(double *out, const double *x, const double *W, const double *b,
			      int N, int IC, int OC)
{
	for (int n = 0; n < N; n++)
		for (int o = 0; o < OC; o++) {
			double s = b ? b[o] : 0.0;
			for (int i = 0; i < IC; i++)
				s += x[n * IC + i] * W[o * IC + i];
			out[n * OC + o] = s;
		}
}

static inline double g64_gelu(double x)
{
	return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* causal self-attention: qkv [B, T, 3C] -> out [B, T, C] */
static inline void g64_attention(double *out, const double *qkv, int B, int T, int C, int NH)
{
	int hs = C / NH;
	double *a = malloc(sizeof(double) * T);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int t = 0; t < T; t++) {
				const double *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
				double mx = -INFINITY, sum = 0;
				for (int j = 0; j <= t; j++) {
					const double *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
					double s = 0;
					for (int i = 0; i < hs; i++)
						s += q[i] * k[i];
					a[j] = s / sqrt((double)hs);
					if (a[j] > mx)
						mx = a[j];
				}
				for (int j = 0; j <= t; j++)
					sum += a[j] = exp(a[j] - mx);
				double *o = out + ((size_t)b * T + t) * C + h * hs;
				for (int i = 0; i < hs; i++) {
					double s = 0;
					for (int j = 0; j <= t; j++)
						s += a[j] / sum *
						     qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + i];
					o[i] = s;
				}
			}
	free(a);
}

/* Mean cross-entropy of the model on inputs/targets [B, T]. */
static inline double g64_loss(const g64 *g, const int *inp, const int *tgt, int B, int T)
{
	const gpt_config *c = &g->m->cfg;
	int C = c->n_embd, V = c->vocab_size, N = B * T;
	double *x = calloc((size_t)N * C, sizeof(double));
	double *h = calloc((size_t)N * C, sizeof(double));
	double *qkv = calloc((size_t)N * 3 * C, sizeof(double));
	double *att = calloc((size_t)N * C, sizeof(double));
	double *y = calloc((size_t)N * 4 * C, sizeof(double));
	double *z = calloc((size_t)N * C, sizeof(double));
	double *logits = calloc((size_t)V, sizeof(double));
	const double *wte = g64_param(g, "wte.weight", 0), *wpe = g64_param(g, "wpe.weight", 0);
	for (int n = 0; n < N; n++)
		for (int i = 0; i < C; i++)
			x[n * C + i] = wte[inp[n] * C + i] + wpe[(n % T) * C + i];
	for (int l = 0; l < c->n_layer; l++) {
		g64_layernorm(h, x, g64_param(g, "h.%d.ln_1.weight", l),
			      g64_param(g, "h.%d.ln_1.bias", l), N, C);
		g64_linear(qkv, h, g64_param(g, "h.%d.attn.qkv.weight", l),
			   g64_param(g, "h.%d.attn.qkv.bias", l), N, C, 3 * C);
		g64_attention(att, qkv, B, T, C, c->n_head);
		g64_linear(z, att, g64_param(g, "h.%d.attn.proj.weight", l),
			   g64_param(g, "h.%d.attn.proj.bias", l), N, C, C);
		for (int i = 0; i < N * C; i++)
			x[i] += z[i];
		g64_layernorm(h, x, g64_param(g, "h.%d.ln_2.weight", l),
			      g64_param(g, "h.%d.ln_2.bias", l), N, C);
		g64_linear(y, h, g64_param(g, "h.%d.mlp.fc.weight", l),
			   g64_param(g, "h.%d.mlp.fc.bias", l), N, C, 4 * C);
		for (int i = 0; i < N * 4 * C; i++)
			y[i] = g64_gelu(y[i]);
		g64_linear(z, y, g64_param(g, "h.%d.mlp.proj.weight", l),
			   g64_param(g, "h.%d.mlp.proj.bias", l), N, 4 * C, C);
		for (int i = 0; i < N * C; i++)
			x[i] += z[i];
	}
	g64_layernorm(h, x, g64_param(g, "ln_f.weight", 0), g64_param(g, "ln_f.bias", 0), N, C);
	double loss = 0;
	for (int n = 0; n < N; n++) {
		g64_linear(logits, h + (size_t)n * C, wte, NULL, 1, C, V);
		double mx = -INFINITY, sum = 0;
		for (int v = 0; v < V; v++)
			if (logits[v] > mx)
				mx = logits[v];
		for (int v = 0; v < V; v++)
			sum += exp(logits[v] - mx);
		loss += -(logits[tgt[n]] - mx - log(sum));
	}
	free(x), free(h), free(qkv), free(att), free(y), free(z), free(logits);
	return loss / N;
}

/*
 * The float64 reference of one optimizer step of the trainer t (its config, its batches):
 * mean loss over grad_accum micro-batches, gradient by central differences over every
 * parameter, global-norm clipping, warm-up + cosine schedule and AdamW, all in double and
 * written here independently of host/train. p, m, v [num_params] are the reference's state;
 * returns the step's loss, *norm the gradient norm before clipping, *lr the rate used.
 */
#include "train/train.h"

static inline double g64_lr(long s, long steps, long warmup, double lr, double min_lr)
{
	if (s < warmup)
		return lr * (s + 1) / warmup;
	if (steps - warmup <= 1)
		return lr;
	double frac = (double)(s - warmup) / (double)(steps - warmup - 1);
	if (frac > 1)
		frac = 1;
	return min_lr + (lr - min_lr) * 0.5 * (1 + cos(M_PI * frac));
}

static inline double g64_batch_loss(const g64 *g, int **inp, int **tgt, int A, int B, int T)
{
	double s = 0;
	for (int k = 0; k < A; k++)
		s += g64_loss(g, inp[k], tgt[k], B, T);
	return s / A;
}

static inline double g64_train_step(g64 *g, double *m, double *v, const trainer *t, long s,
				    double *norm, double *lr_out)
{
	const train_config *c = &t->cfg;
	int A = c->grad_accum, B = c->batch_size, T = c->model.block_size;
	size_t P = t->model.num_params;
	int *inp[16], *tgt[16];
	for (int k = 0; k < A && k < 16; k++) {
		inp[k] = malloc(sizeof(int) * B * T);
		tgt[k] = malloc(sizeof(int) * B * T);
		td_train_batch(&t->data, c->seed, s, k, B, T, inp[k], tgt[k]);
	}
	double loss = g64_batch_loss(g, inp, tgt, A, B, T);
	double *grad = malloc(sizeof(double) * P);
	for (size_t i = 0; i < P; i++) {
		double x0 = g->p[i], h = 1e-6;
		g->p[i] = x0 + h;
		double lp = g64_batch_loss(g, inp, tgt, A, B, T);
		g->p[i] = x0 - h;
		double lm = g64_batch_loss(g, inp, tgt, A, B, T);
		g->p[i] = x0;
		grad[i] = (lp - lm) / (2 * h);
	}
	double nn = 0;
	for (size_t i = 0; i < P; i++)
		nn += grad[i] * grad[i];
	nn = sqrt(nn);
	double scale = c->grad_clip > 0 && nn > c->grad_clip ? c->grad_clip / nn : 1.0;
	double lr = g64_lr(s, c->steps, c->warmup_steps, c->lr, c->min_lr);
	for (int k = 0; k < t->model.num_tensors; k++) {
		const gpt_tensor *tt = &t->model.tensors[k];
		double wd = tt->ndim == 2 ? c->weight_decay : 0.0;
		for (size_t i = tt->offset; i < tt->offset + tt->numel; i++) {
			double gi = grad[i] * scale;
			m[i] = c->beta1 * m[i] + (1 - c->beta1) * gi;
			v[i] = c->beta2 * v[i] + (1 - c->beta2) * gi * gi;
			double mh = m[i] / (1 - pow(c->beta1, s + 1));
			double vh = v[i] / (1 - pow(c->beta2, s + 1));
			g->p[i] -= lr * (mh / (sqrt(vh) + c->eps) + wd * g->p[i]);
		}
	}
	for (int k = 0; k < A && k < 16; k++) {
		free(inp[k]);
		free(tgt[k]);
	}
	free(grad);
	*norm = nn;
	*lr_out = lr;
	return loss;
}

/* Largest |w32 - w64| over the parameters. */
static inline double g64_max_diff(const float *w, const double *p, size_t n)
{
	double worst = 0;
	for (size_t i = 0; i < n; i++)
		worst = fmax(worst, fabs(w[i] - p[i]));
	return worst;
}

#endif /* TESTS_TRAIN_GPT64_H */
