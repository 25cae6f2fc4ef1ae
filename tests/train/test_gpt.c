/*
 * test_gpt.c - host/train/gpt.c: every layer's backward against central finite differences
 * of an independent double-precision forward (gpt64.h), the sgemm kernels against their
 * plain-loop references, GELU's tanh against libm, and the whole model's gradient against
 * finite differences of the float64 model; every threaded (*_pool) layer and the whole model
 * on pools of 1, 2 and 3 threads against the one-thread forms and the references, reruns
 * bit for bit. Random inputs are seeded (TEST_SEED replays).
 *
 * Tolerance: |analytic - fd| <= 2e-4 * max|fd| + 2e-3 * |fd| per element (fp32 sums of a few
 * hundred terms against an FD error below 1e-9).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "engine/eng.h"
#include "gpt64.h"
#include "train/gpt.h"

static uint64_t rng_state = 1;

static double urand(void) /* [-1, 1) */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

static void fill(float *f, double *d, size_t n, double scale)
{
	for (size_t i = 0; i < n; i++) {
		float v = (float)(urand() * scale);
		f[i] = v;
		if (d)
			d[i] = v;
	}
}

static int setup(void **state)
{
	(void)state;
	const char *s = getenv("TEST_SEED");
	rng_state = s ? strtoull(s, NULL, 0) : 4242;
	printf("seed %llu (set TEST_SEED to replay)\n", (unsigned long long)rng_state);
	return 0;
}

/* Compare analytic float gradients with FD gradients; prints the first mismatch. */
static void check_grad(const char *what, const float *an, const double *fd, size_t n)
{
	double maxfd = 0;
	for (size_t i = 0; i < n; i++)
		maxfd = fmax(maxfd, fabs(fd[i]));
	assert_true(maxfd > 0); /* a gradient of zeros would prove nothing */
	for (size_t i = 0; i < n; i++) {
		double tol = 2e-4 * maxfd + 2e-3 * fabs(fd[i]);
		if (fabs(an[i] - fd[i]) > tol) {
			fprintf(stderr, "%s[%zu]: analytic %.9g, finite difference %.9g (tol %.3g)\n",
				what, i, an[i], fd[i], tol);
			fail();
		}
	}
}

/* Central differences of loss() over x[0..n), step h. */
typedef double (*loss_fn)(void *ctx);
static void fd_grad(double *g, double *x, size_t n, loss_fn f, void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		double x0 = x[i], h = 1e-6 * fmax(1.0, fabs(x0));
		x[i] = x0 + h;
		double lp = f(ctx);
		x[i] = x0 - h;
		double lm = f(ctx);
		x[i] = x0;
		g[i] = (lp - lm) / (2 * h);
	}
}

static double dot(const double *a, const double *r, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += a[i] * r[i];
	return s;
}

/* ---- layernorm ---------------------------------------------------------------------- */

struct ln_ctx {
	int N, C;
	double *x, *w, *b, *r, *out;
};

static double ln_loss(void *p)
{
	struct ln_ctx *c = p;
	g64_layernorm(c->out, c->x, c->w, c->b, c->N, c->C);
	return dot(c->out, c->r, (size_t)c->N * c->C);
}

static void test_layernorm_backward(void **state)
{
	(void)state;
	int N = 6, C = 24;
	size_t NC = (size_t)N * C;
	float *x = malloc(NC * 4), *w = malloc(C * 4), *b = malloc(C * 4), *r = malloc(NC * 4);
	float *out = malloc(NC * 4), *mean = malloc(N * 4), *rstd = malloc(N * 4);
	float *dx = calloc(NC, 4), *dw = calloc(C, 4), *db = calloc(C, 4);
	struct ln_ctx c = { N, C, malloc(NC * 8), malloc(C * 8), malloc(C * 8), malloc(NC * 8),
			    malloc(NC * 8) };
	fill(x, c.x, NC, 2.0);
	fill(w, c.w, C, 1.5);
	fill(b, c.b, C, 0.5);
	fill(r, c.r, NC, 1.0);
	layernorm_forward(out, mean, rstd, x, w, b, N, C);
	ln_loss(&c);
	for (size_t i = 0; i < NC; i++)
		assert_true(fabs(out[i] - c.out[i]) < 1e-5 * (1 + fabs(c.out[i])));
	layernorm_backward(dx, dw, db, r, x, w, mean, rstd, N, C);
	double *g = malloc(NC * 8);
	fd_grad(g, c.x, NC, ln_loss, &c);
	check_grad("layernorm dinp", dx, g, NC);
	fd_grad(g, c.w, C, ln_loss, &c);
	check_grad("layernorm dweight", dw, g, C);
	fd_grad(g, c.b, C, ln_loss, &c);
	check_grad("layernorm dbias", db, g, C);
	free(g), free(x), free(w), free(b), free(r), free(out), free(mean), free(rstd);
	free(dx), free(dw), free(db), free(c.x), free(c.w), free(c.b), free(c.r), free(c.out);
}

/* ---- matmul (sgemm and the plain reference) ----------------------------------------- */

struct mm_ctx {
	int N, C, OC;
	double *x, *w, *b, *r, *out;
};

static double mm_loss(void *p)
{
	struct mm_ctx *c = p;
	g64_linear(c->out, c->x, c->w, c->b, c->N, c->C, c->OC);
	return dot(c->out, c->r, (size_t)c->N * c->OC);
}

static void test_matmul_backward(void **state)
{
	(void)state;
	int N = 10, C = 12, OC = 20;
	size_t NX = (size_t)N * C, NW = (size_t)OC * C, NO = (size_t)N * OC;
	float *x = malloc(NX * 4), *w = malloc(NW * 4), *b = malloc(OC * 4), *r = malloc(NO * 4);
	float *out = malloc(NO * 4), *out_ref = malloc(NO * 4);
	float *dx = calloc(NX, 4), *dw = calloc(NW, 4), *db = calloc(OC, 4);
	float *dx2 = calloc(NX, 4), *dw2 = calloc(NW, 4), *db2 = calloc(OC, 4);
	struct mm_ctx c = { N, C, OC, malloc(NX * 8), malloc(NW * 8), malloc(OC * 8),
			    malloc(NO * 8), malloc(NO * 8) };
	fill(x, c.x, NX, 1.0);
	fill(w, c.w, NW, 1.0);
	fill(b, c.b, OC, 1.0);
	fill(r, c.r, NO, 1.0);
	matmul_forward(out, x, w, b, N, C, OC);
	matmul_forward_ref(out_ref, x, w, b, N, C, OC);
	mm_loss(&c);
	for (size_t i = 0; i < NO; i++) {
		assert_true(fabs(out[i] - c.out[i]) < 1e-5 * (1 + fabs(c.out[i])));
		assert_true(fabs(out[i] - out_ref[i]) < 1e-5 * (1 + fabs(c.out[i])));
	}
	matmul_backward(dx, dw, db, r, x, w, N, C, OC);
	matmul_backward_ref(dx2, dw2, db2, r, x, w, N, C, OC);
	double *g = malloc(NW * 8);
	fd_grad(g, c.x, NX, mm_loss, &c);
	check_grad("matmul dinp", dx, g, NX);
	check_grad("matmul_ref dinp", dx2, g, NX);
	fd_grad(g, c.w, NW, mm_loss, &c);
	check_grad("matmul dweight", dw, g, NW);
	check_grad("matmul_ref dweight", dw2, g, NW);
	fd_grad(g, c.b, OC, mm_loss, &c);
	check_grad("matmul dbias", db, g, OC);
	check_grad("matmul_ref dbias", db2, g, OC);
	/* the host linear hook: dx is overwritten, dw accumulates */
	float *y = malloc(NO * 4), *hdx = malloc(NX * 4), *hdw = calloc(NW, 4);
	fill(hdx, NULL, NX, 9.0); /* garbage that must be overwritten */
	assert_int_equal(gpt_linear_host.forward(NULL, y, x, w, 0, 0, N, C, OC), CS_OK);
	for (size_t i = 0; i < NO; i++)
		assert_true(fabs(y[i] + b[i % OC] - out_ref[i]) < 1e-5 * (1 + fabs(out_ref[i])));
	assert_int_equal(gpt_linear_host.backward(NULL, hdx, hdw, r, x, w, 0, 0, N, C, OC, 0),
			 CS_OK);
	for (size_t i = 0; i < NX; i++)
		assert_true(fabs(hdx[i] - dx2[i]) < 1e-5 * (1 + fabs(dx2[i])));
	for (size_t i = 0; i < NW; i++)
		assert_true(fabs(hdw[i] - dw2[i]) < 1e-5 * (1 + fabs(dw2[i])));
	free(y), free(hdx), free(hdw);
	free(g), free(x), free(w), free(b), free(r), free(out), free(out_ref);
	free(dx), free(dw), free(db), free(dx2), free(dw2), free(db2);
	free(c.x), free(c.w), free(c.b), free(c.r), free(c.out);
}

/* ---- attention ---------------------------------------------------------------------- */

struct att_ctx {
	int B, T, C, NH;
	double *qkv, *r, *out;
};

static double att_loss(void *p)
{
	struct att_ctx *c = p;
	g64_attention(c->out, c->qkv, c->B, c->T, c->C, c->NH);
	return dot(c->out, c->r, (size_t)c->B * c->T * c->C);
}

static void test_attention_backward(void **state)
{
	(void)state;
	int B = 2, T = 7, C = 12, NH = 3;
	size_t NQ = (size_t)B * T * 3 * C, NO = (size_t)B * T * C, NA = (size_t)B * NH * T * T;
	float *qkv = malloc(NQ * 4), *r = malloc(NO * 4), *out = malloc(NO * 4);
	float *out2 = malloc(NO * 4), *att = malloc(NA * 4), *att2 = malloc(NA * 4);
	float *dqkv = malloc(NQ * 4), *dqkv2 = malloc(NQ * 4);
	float *scratch = malloc(attention_scratch_floats(T, C, NH) * 4);
	struct att_ctx c = { B, T, C, NH, malloc(NQ * 8), malloc(NO * 8), malloc(NO * 8) };
	fill(qkv, c.qkv, NQ, 1.5);
	fill(r, c.r, NO, 1.0);
	attention_forward(out, att, qkv, B, T, C, NH);
	attention_forward_ref(out2, att2, qkv, B, T, C, NH);
	att_loss(&c);
	for (size_t i = 0; i < NO; i++) {
		assert_true(fabs(out[i] - c.out[i]) < 1e-5 * (1 + fabs(c.out[i])));
		assert_true(fabs(out2[i] - c.out[i]) < 1e-5 * (1 + fabs(c.out[i])));
	}
	for (size_t i = 0; i < NA; i++)
		assert_true(fabs(att[i] - att2[i]) < 1e-6);
	fill(dqkv, NULL, NQ, 5.0); /* overwritten, not accumulated */
	attention_backward(dqkv, r, qkv, att, scratch, B, T, C, NH);
	attention_backward_ref(dqkv2, r, qkv, att2, B, T, C, NH);
	double *g = malloc(NQ * 8);
	fd_grad(g, c.qkv, NQ, att_loss, &c);
	check_grad("attention dqkv", dqkv, g, NQ);
	check_grad("attention_ref dqkv", dqkv2, g, NQ);
	free(g), free(qkv), free(r), free(out), free(out2), free(att), free(att2), free(dqkv);
	free(dqkv2), free(scratch), free(c.qkv), free(c.r), free(c.out);
}

/* Token-minor q, k, v against the token-major attention: the engine's kernel makes the
 * same sums from either layout, so the same bits; the padding of dqkv^T untouched;
 * T = 40 takes a partial block of query rows. */
static void check_attention_tm(int B, int T, int C, int NH)
{
	int BT = B * T, ld = BT + 5, C3 = 3 * C;
	size_t NQ = (size_t)BT * C3, NO = (size_t)BT * C, NA = (size_t)B * NH * T * T;
	float *qkv = malloc(NQ * 4), *qkvt = malloc((size_t)C3 * ld * 4), *r = malloc(NO * 4);
	float *out = malloc(NO * 4), *out2 = malloc(NO * 4), *att = malloc(NA * 4);
	float *att2 = malloc(NA * 4), *dqkv = malloc(NQ * 4), *dqkvt = malloc((size_t)C3 * ld * 4);
	float *scratch = malloc(attention_scratch_floats(T, C, NH) * 4);
	fill(qkv, NULL, NQ, 1.5);
	fill(r, NULL, NO, 1.0);
	for (int t = 0; t < BT; t++)
		for (int i = 0; i < C3; i++)
			qkvt[(size_t)i * ld + t] = qkv[(size_t)t * C3 + i];
	for (int i = 0; i < C3; i++)
		for (int t = BT; t < ld; t++)
			qkvt[(size_t)i * ld + t] = 0.0f;
	attention_forward(out, att, qkv, B, T, C, NH);
	attention_forward_tm_pool(NULL, out2, att2, qkvt, ld, scratch, B, T, C, NH);
	assert_memory_equal(out, out2, NO * 4);
	assert_memory_equal(att, att2, NA * 4);
	/* the output token-minor too: the same bits, the padding tokens zeroed */
	float *outt = malloc((size_t)C * ld * 4);
	for (size_t i = 0; i < (size_t)C * ld; i++)
		outt[i] = NAN;
	attention_forward_tmo_pool(NULL, outt, att2, qkvt, ld, scratch, B, T, C, NH);
	assert_memory_equal(att, att2, NA * 4);
	for (int i = 0; i < C; i++)
		for (int t = 0; t < ld; t++) {
			float want = t < BT ? out[(size_t)t * C + i] : 0.0f;
			assert_memory_equal(&outt[(size_t)i * ld + t], &want, 4);
		}
	free(outt);
	attention_backward(dqkv, r, qkv, att, scratch, B, T, C, NH);
	for (size_t i = 0; i < (size_t)C3 * ld; i++)
		dqkvt[i] = 7.0f;
	attention_backward_tm_pool(NULL, dqkvt, r, qkvt, ld, att, scratch, B, T, C, NH);
	for (int i = 0; i < C3; i++) {
		for (int t = 0; t < BT; t++) {
			float a = dqkv[(size_t)t * C3 + i], b = dqkvt[(size_t)i * ld + t];
			assert_true(a == b);
		}
		for (int t = BT; t < ld; t++)
			assert_true(dqkvt[(size_t)i * ld + t] == 7.0f);
	}
	free(qkv), free(qkvt), free(r), free(out), free(out2), free(att), free(att2);
	free(dqkv), free(dqkvt), free(scratch);
}

static void test_attention_token_minor(void **state)
{
	(void)state;
	check_attention_tm(2, 7, 12, 3);
	check_attention_tm(3, 40, 32, 2);
}

/* ---- gelu --------------------------------------------------------------------------- */

struct gelu_ctx {
	int N;
	double *x, *r;
};

static double gelu_loss(void *p)
{
	struct gelu_ctx *c = p;
	double s = 0;
	for (int i = 0; i < c->N; i++)
		s += g64_gelu(c->x[i]) * c->r[i];
	return s;
}

static void test_gelu_backward(void **state)
{
	(void)state;
	int N = 301;
	float *x = malloc(N * 4), *r = malloc(N * 4), *out = malloc(N * 4), *dx = malloc(N * 4);
	struct gelu_ctx c = { N, malloc(N * 8), malloc(N * 8) };
	fill(x, c.x, N, 6.0);
	fill(r, c.r, N, 1.0);
	gelu_forward(out, x, N);
	for (int i = 0; i < N; i++)
		assert_true(fabs(out[i] - g64_gelu(c.x[i])) < 1e-6 * (1 + fabs(out[i])));
	gelu_backward(dx, x, r, N);
	double *g = malloc(N * 8);
	fd_grad(g, c.x, N, gelu_loss, &c);
	check_grad("gelu dinp", dx, g, N);
	free(g), free(x), free(r), free(out), free(dx), free(c.x), free(c.r);
}

/* GELU and its derivative as the model computes them (gelu_of, gelu_grad: the sigmoid form
 * with its own exp), against the tanh form in double over the range activations meet and
 * beyond: within 2e-7 (1 + |x|) absolute; 0 and -0 map to zeros, huge and infinite inputs
 * to x or 0 and a derivative of 1 or 0. */
static double g64_gelu_grad(double x)
{
	double c = sqrt(2.0 / M_PI), u = c * (x + 0.044715 * x * x * x), th = tanh(u);
	return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

static void test_gelu_accuracy(void **state)
{
	(void)state;
	double worst_g = 0, worst_d = 0;
	for (int i = -2000000; i <= 2000000; i += 7) {
		float x = (float)i * 1e-5f;
		double sc = 1.0 + fabs((double)x);
		worst_g = fmax(worst_g, fabs(gelu_of(x) - g64_gelu((double)x)) / sc);
		worst_d = fmax(worst_d, fabs(gelu_grad(x) - g64_gelu_grad((double)x)) / sc);
	}
	printf("gelu worst absolute error / (1 + |x|): %.3g, derivative %.3g\n", worst_g, worst_d);
	assert_true(worst_g < 2e-7);
	assert_true(worst_d < 2e-7);
	float big[] = { 30.0f, 1e30f, INFINITY };
	for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
		assert_true(gelu_of(big[i]) == big[i]);
		assert_true(gelu_grad(big[i]) == 1.0f);
		assert_true(fabs(gelu_of(-big[i])) < 1e-25);
		assert_true(fabs(gelu_grad(-big[i])) < 1e-25);
	}
	assert_true(gelu_of(0.0f) == 0.0f && gelu_of(-0.0f) == 0.0f);
	assert_true(gelu_grad(0.0f) == 0.5f);
}

/* ---- softmax + cross-entropy, encoder, residual ------------------------------------- */

struct ce_ctx {
	int N, V;
	double *logits;
	const int *tgt;
	double dloss;
};

static double ce_loss(void *p)
{
	struct ce_ctx *c = p;
	double s = 0;
	for (int n = 0; n < c->N; n++) {
		const double *l = c->logits + (size_t)n * c->V;
		double mx = -INFINITY, sum = 0;
		for (int v = 0; v < c->V; v++)
			mx = fmax(mx, l[v]);
		for (int v = 0; v < c->V; v++)
			sum += exp(l[v] - mx);
		s += -(l[c->tgt[n]] - mx - log(sum));
	}
	return s * c->dloss;
}

static void test_softmax_crossentropy_backward(void **state)
{
	(void)state;
	int N = 5, V = 37, tgt[5] = { 0, 36, 5, 5, 17 };
	size_t NV = (size_t)N * V;
	float *logits = malloc(NV * 4), *probs = malloc(NV * 4), *losses = malloc(N * 4);
	float *dl = malloc(NV * 4);
	struct ce_ctx c = { N, V, malloc(NV * 8), tgt, 1.0 / N };
	fill(logits, c.logits, NV, 4.0);
	softmax_crossentropy_forward(probs, losses, logits, tgt, N, V);
	double s = 0;
	for (int n = 0; n < N; n++)
		s += losses[n];
	assert_true(fabs(s / N - ce_loss(&c)) < 1e-5);
	softmax_crossentropy_backward(dl, probs, tgt, 1.0f / N, N, V);
	double *g = malloc(NV * 8);
	fd_grad(g, c.logits, NV, ce_loss, &c);
	check_grad("crossentropy dlogits", dl, g, NV);
	free(g), free(logits), free(probs), free(losses), free(dl), free(c.logits);
}

static void test_encoder_residual_backward(void **state)
{
	(void)state;
	int B = 2, T = 3, C = 4, V = 5, inp[6] = { 1, 4, 1, 0, 1, 2 };
	float wte[20], wpe[12], out[24], r[24], dwte[20] = { 0 }, dwpe[12] = { 0 };
	fill(wte, NULL, 20, 1);
	fill(wpe, NULL, 12, 1);
	fill(r, NULL, 24, 1);
	encoder_forward(out, inp, wte, wpe, B, T, C);
	encoder_backward(dwte, dwpe, r, inp, B, T, C);
	/* loss = sum_bt,i r * (wte[inp] + wpe[t]) is linear: its gradient is exact sums */
	for (int v = 0; v < V; v++)
		for (int i = 0; i < C; i++) {
			double e = 0;
			for (int n = 0; n < B * T; n++)
				if (inp[n] == v)
					e += r[n * C + i];
			assert_true(fabs(dwte[v * C + i] - e) < 1e-6);
		}
	for (int t = 0; t < T; t++)
		for (int i = 0; i < C; i++) {
			assert_true(fabs(out[(T + t) * C + i] - wte[inp[T + t] * C + i] -
					 wpe[t * C + i]) < 1e-6);
			double e = r[t * C + i] + r[(T + t) * C + i];
			assert_true(fabs(dwpe[t * C + i] - e) < 1e-6);
		}
	float a[4] = { 1, 2, 3, 4 }, b2[4] = { 5, 6, 7, 8 }, o[4], da[4] = { 0 }, db[4] = { 1 };
	residual_forward(o, a, b2, 4);
	residual_backward(da, db, a, 4);
	for (int i = 0; i < 4; i++) {
		assert_true(o[i] == a[i] + b2[i]);
		assert_true(da[i] == a[i] && db[i] == (i == 0) + a[i]);
	}
}

/* ---- whole model -------------------------------------------------------------------- */

struct model_ctx {
	g64 g;
	const int *inp, *tgt;
	int B, T;
};

static double model_loss(void *p)
{
	struct model_ctx *c = p;
	return g64_loss(&c->g, c->inp, c->tgt, c->B, c->T);
}

static void test_model_gradient(void **state)
{
	(void)state;
	gpt_config cfg = { .n_layer = 2, .n_head = 2, .n_embd = 16, .block_size = 8,
			   .vocab_size = 256 };
	int B = 2, T = 8;
	gpt m;
	assert_int_equal(gpt_create(&m, &cfg, B, T), CS_OK);
	gpt_init_params(&m, 7);
	/* non-trivial LayerNorm parameters and biases, and weights large enough to matter */
	for (size_t i = 0; i < m.num_params; i++)
		m.params_memory[i] += (float)(0.1 * urand());
	int inp[16], tgt[16];
	for (int i = 0; i < B * T; i++) {
		inp[i] = (int)((urand() + 1) * 40) + 60;
		tgt[i] = (int)((urand() + 1) * 40) + 60;
	}
	float loss;
	assert_int_equal(gpt_forward(&m, inp, tgt, B, T, &loss), CS_OK);
	gpt_zero_grad(&m);
	assert_int_equal(gpt_backward(&m, 1.0f), CS_OK);
	struct model_ctx c = { { &m, malloc(m.num_params * 8) }, inp, tgt, B, T };
	for (size_t i = 0; i < m.num_params; i++)
		c.g.p[i] = m.params_memory[i];
	double l64 = model_loss(&c);
	printf("loss fp32 %.7f fp64 %.7f\n", loss, l64);
	assert_true(fabs(loss - l64) < 1e-5 * fabs(l64));
	/* every tensor: all entries for small ones, a sample of the big ones */
	size_t checked = 0;
	for (int k = 0; k < m.num_tensors; k++) {
		const gpt_tensor *t = &m.tensors[k];
		size_t stride = t->numel > 300 ? t->numel / 150 + 1 : 1;
		size_t n = 0;
		double *fd = malloc(sizeof(double) * t->numel);
		float *an = malloc(sizeof(float) * t->numel);
		for (size_t i = (size_t)k % stride; i < t->numel; i += stride) {
			fd_grad(&fd[n], &c.g.p[t->offset + i], 1, model_loss, &c);
			an[n++] = m.grads_memory[t->offset + i];
		}
		check_grad(t->name, an, fd, n);
		checked += n;
		free(fd);
		free(an);
	}
	printf("checked %zu of %zu parameter gradients\n", checked, m.num_params);
	free(c.g.p);
	gpt_free(&m);
}

/* Accumulation: two backward passes at scale 1/2 equal one of the mean. */
static void test_model_grad_accumulation(void **state)
{
	(void)state;
	gpt_config cfg = { 1, 2, 8, 4, 256 };
	gpt m;
	assert_int_equal(gpt_create(&m, &cfg, 2, 4), CS_OK);
	gpt_init_params(&m, 3);
	int inp[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, tgt[8] = { 2, 3, 4, 5, 6, 7, 8, 9 };
	float l;
	gpt_zero_grad(&m);
	assert_int_equal(gpt_forward(&m, inp, tgt, 1, 4, &l), CS_OK);
	assert_int_equal(gpt_backward(&m, 0.5f), CS_OK);
	assert_int_equal(gpt_forward(&m, inp + 4, tgt + 4, 1, 4, &l), CS_OK);
	assert_int_equal(gpt_backward(&m, 0.5f), CS_OK);
	float *acc = malloc(m.num_params * 4);
	memcpy(acc, m.grads_memory, m.num_params * 4);
	gpt_zero_grad(&m);
	assert_int_equal(gpt_forward(&m, inp, tgt, 2, 4, &l), CS_OK);
	assert_int_equal(gpt_backward(&m, 1.0f), CS_OK);
	double maxg = 0;
	for (size_t i = 0; i < m.num_params; i++)
		maxg = fmax(maxg, fabs(m.grads_memory[i]));
	for (size_t i = 0; i < m.num_params; i++)
		assert_true(fabs(acc[i] - m.grads_memory[i]) < 1e-5 * maxg);
	/* bad input is refused, not read out of bounds */
	int badtok[4] = { 1, 2, 300, 4 };
	assert_int_equal(gpt_forward(&m, badtok, NULL, 1, 4, NULL), CS_ERR_INVALID);
	assert_int_equal(gpt_forward(&m, inp, NULL, 1, 5, NULL), CS_ERR_INVALID);
	free(acc);
	gpt_free(&m);
}

static void test_config_check(void **state)
{
	(void)state;
	char err[128];
	gpt_config ok = { 2, 4, 64, 64, 256 }, bad = ok;
	assert_int_equal(gpt_config_check(&ok, err, sizeof err), CS_OK);
	bad.n_head = 5;
	assert_int_equal(gpt_config_check(&bad, err, sizeof err), CS_ERR_CONFIG);
	assert_non_null(strstr(err, "model.n_head"));
	bad = ok;
	bad.vocab_size = 100;
	assert_int_equal(gpt_config_check(&bad, err, sizeof err), CS_ERR_CONFIG);
	assert_non_null(strstr(err, "model.vocab_size"));
}

/* ---- threaded layers ---------------------------------------------------------------- */

/*
 * Every *_pool layer on pools of 1, 2 and 3 threads: the same bits as the one-thread form
 * where each output has one owner (all but the products), the products against their
 * plain-loop references, and every result the same on a second run. Sizes split unevenly.
 */
#define NEWF(n) ((float *)malloc((size_t)(n) * sizeof(float)))

static void assert_bits(const char *what, int nth, const float *a, const float *b, size_t n)
{
	if (memcmp(a, b, n * sizeof(float))) {
		for (size_t i = 0; i < n; i++)
			if (memcmp(&a[i], &b[i], sizeof(float))) {
				fprintf(stderr, "%s, %d threads: [%zu] %.9g vs %.9g\n", what, nth, i,
					a[i], b[i]);
				break;
			}
		fail();
	}
}

static void assert_close(const char *what, int nth, const float *a, const float *ref,
			 size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(fabs(a[i] - ref[i]) < 1e-5 * (1 + fabs(ref[i])))) {
			fprintf(stderr, "%s, %d threads: [%zu] %.9g vs reference %.9g\n", what, nth,
				i, a[i], ref[i]);
			fail();
		}
}

/* run a layer twice on the pool into two buffers: reruns must agree */
static void pooled_layers(cs_pool *p, int nth)
{
	int B = 3, T = 11, C = 40, NH = 5, V = 259, OC = 3 * C;
	size_t BT = (size_t)B * T, NX = BT * C, NQ = BT * 3 * C, NA = (size_t)B * NH * T * T;
	float *x = NEWF(NX), *w = NEWF((size_t)OC * C), *bias = NEWF(OC), *lw = NEWF(C);
	float *lb = NEWF(C), *dy = NEWF(BT * OC), *qkv = NEWF(NQ), *dout = NEWF(NX);
	float *wte = NEWF((size_t)V * C), *wpe = NEWF((size_t)T * C), *logits = NEWF(BT * V);
	int *tok = malloc(BT * sizeof(int));
	fill(x, NULL, NX, 2.0), fill(w, NULL, (size_t)OC * C, 0.5), fill(bias, NULL, OC, 0.5);
	fill(lw, NULL, C, 1.5), fill(lb, NULL, C, 0.5), fill(dy, NULL, BT * OC, 1.0);
	fill(qkv, NULL, NQ, 1.5), fill(dout, NULL, NX, 1.0), fill(wte, NULL, (size_t)V * C, 1.0);
	fill(wpe, NULL, (size_t)T * C, 1.0), fill(logits, NULL, BT * V, 4.0);
	for (size_t i = 0; i < BT; i++)
		tok[i] = (int)(i * 37 % 7); /* repeated tokens: dwte rows collide */
	for (int run = 0; run < 2; run++) {
		/* encoder */
		float *e1 = NEWF(NX), *e2 = NEWF(NX);
		encoder_forward(e1, tok, wte, wpe, B, T, C);
		encoder_forward_pool(p, e2, tok, wte, wpe, B, T, C);
		assert_bits("encoder_forward", nth, e2, e1, NX);
		float *dwte1 = calloc((size_t)V * C, 4), *dwte2 = calloc((size_t)V * C, 4);
		float *dwpe1 = calloc((size_t)T * C, 4), *dwpe2 = calloc((size_t)T * C, 4);
		encoder_backward(dwte1, dwpe1, dout, tok, B, T, C);
		encoder_backward_pool(p, dwte2, dwpe2, dout, tok, B, T, C);
		assert_bits("encoder_backward dwte", nth, dwte2, dwte1, (size_t)V * C);
		assert_bits("encoder_backward dwpe", nth, dwpe2, dwpe1, (size_t)T * C);
		free(e1), free(e2), free(dwte1), free(dwte2), free(dwpe1), free(dwpe2);

		/* layernorm */
		float *o1 = NEWF(NX), *o2 = NEWF(NX), *m1 = NEWF(BT), *m2 = NEWF(BT);
		float *r1 = NEWF(BT), *r2 = NEWF(BT);
		layernorm_forward(o1, m1, r1, x, lw, lb, (int)BT, C);
		layernorm_forward_pool(p, o2, m2, r2, x, lw, lb, (int)BT, C);
		assert_bits("layernorm_forward", nth, o2, o1, NX);
		assert_bits("layernorm_forward mean", nth, m2, m1, BT);
		assert_bits("layernorm_forward rstd", nth, r2, r1, BT);
		/* token-minor out: the same bits, transposed, the padding tokens zeroed */
		size_t ld = (BT + 15) / 16 * 16 + 16;
		float *ot = NEWF(ld * C), *mt = NEWF(BT), *rt = NEWF(BT);
		for (size_t i = 0; i < ld * C; i++)
			ot[i] = NAN;
		assert_int_equal(layernorm_forward_tm_pool(p, ot, mt, rt, x, lw, lb, (int)BT, C,
							   (int)ld), CS_OK);
		for (int i = 0; i < C; i++)
			for (size_t n = 0; n < ld; n++) {
				float want = n < BT ? o1[n * C + i] : 0.0f;
				if (memcmp(&ot[i * ld + n], &want, sizeof want)) {
					fprintf(stderr, "layernorm_forward_tm, %d threads: feature %d "
						"token %zu: %.9g vs %.9g\n", nth, i, n,
						ot[i * ld + n], want);
					fail();
				}
			}
		assert_bits("layernorm_forward_tm mean", nth, mt, m1, BT);
		assert_bits("layernorm_forward_tm rstd", nth, rt, r1, BT);
		free(ot), free(mt), free(rt);
		float *dx1 = calloc(NX, 4), *dx2 = calloc(NX, 4), *dw1 = calloc(C, 4);
		float *dw2 = calloc(C, 4), *db1 = calloc(C, 4), *db2 = calloc(C, 4);
		layernorm_backward(dx1, dw1, db1, dout, x, lw, m1, r1, (int)BT, C);
		layernorm_backward_pool(p, dx2, dw2, db2, dout, x, lw, m1, r1, (int)BT, C);
		assert_bits("layernorm_backward dinp", nth, dx2, dx1, NX);
		assert_bits("layernorm_backward dweight", nth, dw2, dw1, C);
		assert_bits("layernorm_backward dbias", nth, db2, db1, C);
		/* over the blocked residual stream: the forward and dinp the same bits,
		 * dweight and dbias (another order) close and the same on every thread count;
		 * padding tokens zero; tm_unblock_pool undoes tm_block_pool */
		{
			size_t NB = eng_blk_size(C, (int)BT);
			float *xb = NEWF(NB), *ob = NEWF(NB), *dob = NEWF(NB), *dxb = NEWF(NB);
			float *back = NEWF(NX), *mb = NEWF(BT), *rb = NEWF(BT);
			float *dwb = calloc(C, 4), *dbb = calloc(C, 4), *dwb1 = calloc(C, 4);
			float *dbb1 = calloc(C, 4), *dxb1 = NEWF(NB);
			for (size_t q = 0; q < NB; q++)
				xb[q] = ob[q] = NAN;
			tm_block_pool(p, xb, x, (int)BT, C);
			tm_block_pool(p, dob, dout, (int)BT, C);
			tm_unblock_pool(p, back, xb, (int)BT, C);
			assert_bits("tm_unblock_pool", nth, back, x, NX);
			layernorm_forward_blk_pool(p, ob, mb, rb, xb, lw, lb, (int)BT, C);
			for (size_t q = 0; q < NB; q++) {
				size_t b = q / ((size_t)C * ENG_TB), i = q / ENG_TB % C;
				size_t n = b * ENG_TB + q % ENG_TB;
				float want = n < BT ? o1[n * C + i] : 0.0f;
				float wx = n < BT ? x[n * C + i] : 0.0f;
				assert_memory_equal(&xb[q], &wx, sizeof wx);
				if (memcmp(&ob[q], &want, sizeof want)) {
					fprintf(stderr, "layernorm_forward_blk, %d threads: feature %zu "
						"token %zu: %.9g vs %.9g\n", nth, i, n, ob[q], want);
					fail();
				}
			}
			assert_bits("layernorm_forward_blk mean", nth, mb, m1, BT);
			assert_bits("layernorm_forward_blk rstd", nth, rb, r1, BT);
			memset(dxb, 0, sizeof(float) * NB);
			memset(dxb1, 0, sizeof(float) * NB);
			layernorm_backward_blk_pool(p, dxb, dwb, dbb, dob, xb, lw, m1, r1, (int)BT, C);
			layernorm_backward_blk_pool(NULL, dxb1, dwb1, dbb1, dob, xb, lw, m1, r1,
						    (int)BT, C);
			tm_unblock_pool(p, back, dxb, (int)BT, C);
			assert_bits("layernorm_backward_blk dinp", nth, back, dx1, NX);
			assert_bits("layernorm_backward_blk dinp, 1 thread", nth, dxb1, dxb, NB);
			assert_bits("layernorm_backward_blk dweight, 1 thread", nth, dwb1, dwb, C);
			assert_bits("layernorm_backward_blk dbias, 1 thread", nth, dbb1, dbb, C);
			assert_close("layernorm_backward_blk dweight", nth, dwb, dw1, C);
			assert_close("layernorm_backward_blk dbias", nth, dbb, db1, C);
			free(xb), free(ob), free(dob), free(dxb), free(back), free(mb), free(rb);
			free(dwb), free(dbb), free(dwb1), free(dbb1), free(dxb1);
		}
		free(o1), free(o2), free(m1), free(m2), free(r1), free(r2);
		free(dx1), free(dx2), free(dw1), free(dw2), free(db1), free(db2);

		/* matmul: against the plain loops, reruns identical */
		static float *keep[5];
		float *y = NEWF(BT * OC), *yr = NEWF(BT * OC);
		matmul_forward_pool(p, y, x, w, bias, (int)BT, C, OC);
		matmul_forward_ref(yr, x, w, bias, (int)BT, C, OC);
		assert_close("matmul_forward", nth, y, yr, BT * OC);
		float *mdx = calloc(NX, 4), *mdw = calloc((size_t)OC * C, 4), *mdb = calloc(OC, 4);
		float *rdx = calloc(NX, 4), *rdw = calloc((size_t)OC * C, 4), *rdb = calloc(OC, 4);
		matmul_backward_pool(p, mdx, mdw, mdb, dy, x, w, (int)BT, C, OC);
		matmul_backward_ref(rdx, rdw, rdb, dy, x, w, (int)BT, C, OC);
		assert_close("matmul_backward dinp", nth, mdx, rdx, NX);
		assert_close("matmul_backward dweight", nth, mdw, rdw, (size_t)OC * C);
		assert_close("matmul_backward dbias", nth, mdb, rdb, OC);
		float *hy = NEWF(BT * OC), *hdx = NEWF(NX), *hdw = calloc((size_t)OC * C, 4);
		fill(hdx, NULL, NX, 9.0); /* overwritten */
		assert_int_equal(gpt_linear_host.forward(p, hy, x, w, 0, 0, (int)BT, C, OC), CS_OK);
		assert_int_equal(gpt_linear_host.backward(p, hdx, hdw, dy, x, w, 0, 0, (int)BT, C,
							  OC, 0), CS_OK);
		for (size_t i = 0; i < BT * OC; i++)
			hy[i] += bias[i % OC];
		assert_close("host hook forward", nth, hy, yr, BT * OC);
		assert_close("host hook dinp", nth, hdx, rdx, NX);
		assert_close("host hook dweight", nth, hdw, rdw, (size_t)OC * C);
		float *got[5] = { y, mdx, mdw, mdb, hdw };
		size_t len[5] = { BT * OC, NX, (size_t)OC * C, OC, (size_t)OC * C };
		for (int k = 0; k < 5; k++) {
			if (run == 0) {
				keep[k] = NEWF(len[k]);
				memcpy(keep[k], got[k], len[k] * 4);
			} else {
				assert_bits("matmul rerun", nth, got[k], keep[k], len[k]);
				free(keep[k]);
			}
		}
		free(y), free(yr), free(mdx), free(mdw), free(mdb), free(rdx), free(rdw), free(rdb);
		free(hy), free(hdx), free(hdw);

		/* attention: every (b, h) pair makes the same calls whatever the split */
		float *ao1 = NEWF(NX), *ao2 = NEWF(NX), *at1 = NEWF(NA), *at2 = NEWF(NA);
		float *aref = NEWF(NX), *atref = NEWF(NA);
		float *sc = NEWF((size_t)nth * attention_scratch_floats(T, C, NH));
		attention_forward(ao1, at1, qkv, B, T, C, NH);
		attention_forward_pool(p, ao2, at2, qkv, sc, B, T, C, NH);
		attention_forward_ref(aref, atref, qkv, B, T, C, NH);
		assert_bits("attention_forward", nth, ao2, ao1, NX);
		assert_bits("attention_forward att", nth, at2, at1, NA);
		assert_close("attention_forward vs ref", nth, ao2, aref, NX);
		float *dq1 = NEWF(NQ), *dq2 = NEWF(NQ), *dqr = NEWF(NQ);
		attention_backward(dq1, dout, qkv, at1, sc, B, T, C, NH);
		fill(dq2, NULL, NQ, 5.0); /* overwritten */
		attention_backward_pool(p, dq2, dout, qkv, at1, sc, B, T, C, NH);
		attention_backward_ref(dqr, dout, qkv, atref, B, T, C, NH);
		assert_bits("attention_backward", nth, dq2, dq1, NQ);
		assert_close("attention_backward vs ref", nth, dq2, dqr, NQ);
		free(ao1), free(ao2), free(at1), free(at2), free(aref), free(atref);
		free(dq1), free(dq2), free(dqr), free(sc);

		/* gelu, residual (element counts not multiples of the split's blocks) */
		size_t NG = NQ + 13;
		float *gin = NEWF(NG), *gdo = NEWF(NG), *g1 = NEWF(NG), *g2 = NEWF(NG);
		fill(gin, NULL, NG, 4.0), fill(gdo, NULL, NG, 1.0);
		gelu_forward(g1, gin, (int)NG);
		gelu_forward_pool(p, g2, gin, (int)NG);
		assert_bits("gelu_forward", nth, g2, g1, NG);
		gelu_backward(g1, gin, gdo, (int)NG);
		gelu_backward_pool(p, g2, gin, gdo, (int)NG);
		assert_bits("gelu_backward", nth, g2, g1, NG);
		residual_forward(g1, gin, gdo, (int)NG);
		residual_forward_pool(p, g2, gin, gdo, (int)NG);
		assert_bits("residual_forward", nth, g2, g1, NG);
		float *g3 = NEWF(NG), *g4 = NEWF(NG);
		memcpy(g3, gin, NG * 4), memcpy(g4, gin, NG * 4);
		residual_backward(g1, g3, gdo, (int)NG);
		residual_backward_pool(p, g2, g4, gdo, (int)NG);
		assert_bits("residual_backward dinp1", nth, g2, g1, NG);
		assert_bits("residual_backward dinp2", nth, g4, g3, NG);
		free(gin), free(gdo), free(g1), free(g2), free(g3), free(g4);

		/* softmax + cross-entropy */
		float *p1 = NEWF(BT * V), *p2 = NEWF(BT * V), *ls1 = NEWF(BT), *ls2 = NEWF(BT);
		softmax_crossentropy_forward(p1, ls1, logits, tok, (int)BT, V);
		softmax_crossentropy_forward_pool(p, p2, ls2, logits, tok, (int)BT, V);
		assert_bits("softmax_crossentropy_forward", nth, p2, p1, BT * V);
		assert_bits("softmax_crossentropy_forward losses", nth, ls2, ls1, BT);
		float *dl1 = NEWF(BT * V), *dl2 = NEWF(BT * V);
		softmax_crossentropy_backward(dl1, p1, tok, 0.25f, (int)BT, V);
		softmax_crossentropy_backward_pool(p, dl2, p1, tok, 0.25f, (int)BT, V);
		assert_bits("softmax_crossentropy_backward", nth, dl2, dl1, BT * V);
		free(p1), free(p2), free(ls1), free(ls2), free(dl1), free(dl2);
	}
	free(x), free(w), free(bias), free(lw), free(lb), free(dy), free(qkv), free(dout);
	free(wte), free(wpe), free(logits), free(tok);
}

static void test_pooled_layers(void **state)
{
	(void)state;
	for (int nth = 1; nth <= 3; nth++) {
		cs_pool *p;
		assert_int_equal(cs_pool_create(&p, nth), CS_OK);
		pooled_layers(p, nth);
		cs_pool_free(p);
	}
}

/* The whole model's gradient on 1, 2 and 3 threads: reruns identical, close across. */
static void test_model_threads(void **state)
{
	(void)state;
	gpt_config cfg = { .n_layer = 2, .n_head = 3, .n_embd = 24, .block_size = 9,
			   .vocab_size = 256 };
	int B = 3, T = 9;
	int inp[27], tgt[27];
	for (int i = 0; i < B * T; i++)
		inp[i] = (i * 53) % 256, tgt[i] = (i * 29 + 7) % 256;
	float *g1 = NULL, loss1 = 0;
	size_t P = 0;
	for (int nth = 1; nth <= 3; nth++) {
		cs_pool *p;
		assert_int_equal(cs_pool_create(&p, nth), CS_OK);
		float *prev = NULL;
		for (int run = 0; run < 2; run++) {
			gpt m;
			assert_int_equal(gpt_create(&m, &cfg, B, T), CS_OK);
			gpt_init_params(&m, 7);
			m.pool = p;
			float loss;
			gpt_zero_grad(&m);
			assert_int_equal(gpt_forward(&m, inp, tgt, B, T, &loss), CS_OK);
			assert_int_equal(gpt_backward(&m, 1.0f), CS_OK);
			P = m.num_params;
			if (!g1) {
				g1 = NEWF(P);
				memcpy(g1, m.grads_memory, P * 4);
				loss1 = loss;
			}
			if (prev) {
				assert_bits("model gradient rerun", nth, m.grads_memory, prev, P);
				free(prev);
				prev = NULL;
			} else {
				prev = NEWF(P);
				memcpy(prev, m.grads_memory, P * 4);
			}
			double worst = 0, maxg = 0;
			for (size_t i = 0; i < P; i++) {
				worst = fmax(worst, fabs(m.grads_memory[i] - g1[i]));
				maxg = fmax(maxg, fabs(g1[i]));
			}
			assert_true(worst <= 1e-5 * maxg);
			assert_true(fabs(loss - loss1) <= 1e-6 * loss1);
			gpt_free(&m);
		}
		free(prev);
		cs_pool_free(p);
	}
	free(g1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layernorm_backward),
		cmocka_unit_test(test_matmul_backward),
		cmocka_unit_test(test_attention_backward),
		cmocka_unit_test(test_attention_token_minor),
		cmocka_unit_test(test_gelu_backward),
		cmocka_unit_test(test_gelu_accuracy),
		cmocka_unit_test(test_softmax_crossentropy_backward),
		cmocka_unit_test(test_encoder_residual_backward),
		cmocka_unit_test(test_model_gradient),
		cmocka_unit_test(test_model_grad_accumulation),
		cmocka_unit_test(test_config_check),
		cmocka_unit_test(test_pooled_layers),
		cmocka_unit_test(test_model_threads),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
