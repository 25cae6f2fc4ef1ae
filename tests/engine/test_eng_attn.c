/*
 * test_eng_attn.c - host/engine/eng_attn.c: causal self-attention forward and backward
 * against a double-precision reference, with every ISA path this CPU has forced in turn,
 * 1 and 3 threads, token-major and token-minor q, k, v; the edge cases: one token, one head,
 * token counts and head sizes that are not a multiple of the vector width, more tokens
 * than one block of scores. Token-minor and token-major give the same bits, and so do
 * 1 and 3 threads; the padding tokens of a token-minor qkv (NaN here) are never read and
 * those of dqkv never written.
 *
 * The bound: every output is a sum of fp32 products plus an exp that is a few ulp off, so
 * |got - ref| <= 1e-5 (|ref| + the largest |ref| of the tensor) passes rounding and fails
 * a dropped or misplaced term.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "common/cs_pool.h"
#include "engine/eng.h"

static uint64_t rng_state;

static float rnd_f(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (float)((double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* out, att, dqkv of token-major qkv [BT][3C] and dout [BT][C], in double */
static void ref_attention(double *out, double *att, double *dqkv, const float *qkv,
			  const float *dout, int B, int T, int C, int NH)
{
	int hs = C / NH, C3 = 3 * C;
	double scale = 1.0 / sqrt((double)hs);
	memset(dqkv, 0, sizeof(double) * (size_t)B * T * C3);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++) {
			double *p = att + ((size_t)b * NH + h) * T * T;
#define Q(t, i) qkv[((size_t)b * T + (t)) * C3 + h * hs + (i)]
#define K(t, i) qkv[((size_t)b * T + (t)) * C3 + C + h * hs + (i)]
#define V(t, i) qkv[((size_t)b * T + (t)) * C3 + 2 * C + h * hs + (i)]
#define D(t, i) dout[((size_t)b * T + (t)) * C + h * hs + (i)]
#define DQ(t, i) dqkv[((size_t)b * T + (t)) * C3 + h * hs + (i)]
#define DK(t, i) dqkv[((size_t)b * T + (t)) * C3 + C + h * hs + (i)]
#define DV(t, i) dqkv[((size_t)b * T + (t)) * C3 + 2 * C + h * hs + (i)]
			for (int t = 0; t < T; t++) {
				double mx = -INFINITY, sum = 0;
				for (int j = 0; j < T; j++) {
					double s = 0;
					for (int i = 0; i < hs; i++)
						s += (double)Q(t, i) * K(j, i);
					p[t * T + j] = j <= t ? s * scale : 0;
					if (j <= t && p[t * T + j] > mx)
						mx = p[t * T + j];
				}
				for (int j = 0; j <= t; j++)
					sum += p[t * T + j] = exp(p[t * T + j] - mx);
				for (int j = 0; j <= t; j++)
					p[t * T + j] /= sum;
				for (int i = 0; i < hs; i++) {
					double o = 0;
					for (int j = 0; j <= t; j++)
						o += p[t * T + j] * V(j, i);
					out[((size_t)b * T + t) * C + h * hs + i] = o;
				}
				double dp[T], dot = 0;
				for (int j = 0; j <= t; j++) {
					dp[j] = 0;
					for (int i = 0; i < hs; i++) {
						dp[j] += (double)D(t, i) * V(j, i);
						DV(j, i) += p[t * T + j] * D(t, i);
					}
					dot += dp[j] * p[t * T + j];
				}
				for (int j = 0; j <= t; j++) {
					double ds = p[t * T + j] * (dp[j] - dot) * scale;
					for (int i = 0; i < hs; i++) {
						DQ(t, i) += ds * K(j, i);
						DK(j, i) += ds * Q(t, i);
					}
				}
			}
#undef Q
#undef K
#undef V
#undef D
#undef DQ
#undef DK
#undef DV
		}
}

static void assert_close(const float *got, const double *ref, size_t n, const char *what)
{
	double mx = 0;
	for (size_t i = 0; i < n; i++)
		mx = fmax(mx, fabs(ref[i]));
	for (size_t i = 0; i < n; i++)
		if (!(fabs(got[i] - ref[i]) <= 1e-5 * (fabs(ref[i]) + mx))) {
			fail_msg("%s [%zu]: %.9g, reference %.9g", what, i, got[i], ref[i]);
		}
}

typedef struct shape {
	int B, T, C, NH;
} shape;

static const shape shapes[] = {
	{ 1, 1, 16, 1 },    /* one token, one head */
	{ 2, 7, 12, 3 },    /* fewer tokens than a vector, hs = 4 */
	{ 1, 37, 64, 1 },   /* one head of 64, T not a multiple of the vector */
	{ 3, 40, 32, 2 },
	{ 1, 17, 40, 2 },   /* hs = 20: a partial vector of features */
	{ 2, 130, 128, 2 }, /* more than 128 tokens: two chunks of scores */
};

static void check_shape(const shape *s, cs_pool *pool, int nth)
{
	int B = s->B, T = s->T, C = s->C, NH = s->NH, BT = B * T, C3 = 3 * C;
	int ld = eng_ld(BT) + 16;
	size_t NQ = (size_t)BT * C3, NO = (size_t)BT * C, NA = (size_t)B * NH * T * T;
	float *qkv = malloc(NQ * 4), *qkvt = malloc((size_t)C3 * ld * 4), *dout = malloc(NO * 4);
	float *out = malloc(NO * 4), *out2 = malloc(NO * 4), *att = malloc(NA * 4);
	float *att2 = malloc(NA * 4), *dq = malloc(NQ * 4), *dqt = malloc((size_t)C3 * ld * 4);
	float *doutt = malloc((size_t)C * ld * 4);
	float *sc = malloc(sizeof(float) * (size_t)nth * eng_attention_scratch(T, C / NH));
	double *rout = malloc(NO * 8), *ratt = malloc(NA * 8), *rdq = malloc(NQ * 8);
	assert_true(qkv && qkvt && dout && out && out2 && att && att2 && dq && dqt && sc && doutt);
	assert_true(rout && ratt && rdq);
	for (size_t i = 0; i < NQ; i++)
		qkv[i] = 1.5f * rnd_f();
	for (size_t i = 0; i < NO; i++)
		dout[i] = rnd_f();
	for (int i = 0; i < C3; i++)
		for (int t = 0; t < ld; t++)
			qkvt[(size_t)i * ld + t] = t < BT ? qkv[(size_t)t * C3 + i] : NAN;
	ref_attention(rout, ratt, rdq, qkv, dout, B, T, C, NH);

	/* token-major; outputs poisoned: every element is written */
	memset(out, 0x7f, NO * 4);
	memset(att, 0x7f, NA * 4);
	memset(dq, 0x7f, NQ * 4);
	eng_attention_forward(pool, out, att, qkv, 0, sc, B, T, C, NH);
	eng_attention_backward(pool, dq, dout, qkv, 0, att, sc, B, T, C, NH);
	assert_close(out, rout, NO, "forward out");
	assert_close(att, ratt, NA, "forward att");
	assert_close(dq, rdq, NQ, "backward dqkv");
	for (size_t i = 0; i < NA; i++) /* above the diagonal: exactly zero */
		if ((i % T) > (i / T) % T)
			assert_true(att[i] == 0.0f);

	/* token-minor: the same bits, padding neither read nor written */
	for (size_t i = 0; i < (size_t)C3 * ld; i++)
		dqt[i] = 7.0f;
	eng_attention_forward(pool, out2, att2, qkvt, ld, sc, B, T, C, NH);
	assert_memory_equal(out2, out, NO * 4);
	assert_memory_equal(att2, att, NA * 4);
	/* the scratch poisoned: the kernel reads none of it before writing it */
	for (size_t i = 0; i < (size_t)nth * eng_attention_scratch(T, C / NH); i++)
		sc[i] = NAN;
	eng_attention_backward(pool, dqt, dout, qkvt, ld, att, sc, B, T, C, NH);
	for (int i = 0; i < C3; i++)
		for (int t = 0; t < ld; t++) {
			float want = t < BT ? dq[(size_t)t * C3 + i] : 7.0f;
			assert_true(memcmp(&dqt[(size_t)i * ld + t], &want, 4) == 0);
		}

	/* dout token-minor too (its padding NaN: not read): the same bits */
	for (int i = 0; i < C; i++)
		for (int t = 0; t < ld; t++)
			doutt[(size_t)i * ld + t] = t < BT ? dout[(size_t)t * C + i] : NAN;
	for (size_t i = 0; i < (size_t)C3 * ld; i++)
		dqt[i] = 7.0f;
	for (size_t i = 0; i < (size_t)nth * eng_attention_scratch(T, C / NH); i++)
		sc[i] = NAN;
	eng_attention_backward_tmd(pool, dqt, doutt, qkvt, ld, att, sc, B, T, C, NH);
	for (int i = 0; i < C3; i++)
		for (int t = 0; t < ld; t++) {
			float want = t < BT ? dq[(size_t)t * C3 + i] : 7.0f;
			assert_true(memcmp(&dqt[(size_t)i * ld + t], &want, 4) == 0);
		}
	free(qkv), free(qkvt), free(dout), free(out), free(out2), free(att), free(att2);
	free(dq), free(dqt), free(sc), free(rout), free(ratt), free(rdq), free(doutt);
}

static void test_attention_all_isas(void **state)
{
	(void)state;
	int best = eng_isa_best();
	for (int isa = 0; isa <= best; isa++) {
		assert_int_equal(eng_isa_set(isa), CS_OK);
		for (int nth = 1; nth <= 3; nth += 2) {
			cs_pool *pool;
			assert_int_equal(cs_pool_create(&pool, nth), CS_OK);
			for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
				rng_state = 500 + c;
				check_shape(&shapes[c], pool, nth);
			}
			cs_pool_free(pool);
		}
		printf("isa %s: attention matches the double reference\n", eng_isa_name(isa));
	}
	assert_int_equal(eng_isa_set(best), CS_OK);
}

/* 1 and 3 threads, and a rerun: the same bits */
static void test_attention_threads(void **state)
{
	(void)state;
	int B = 3, T = 50, C = 48, NH = 3, C3 = 3 * C;
	size_t NQ = (size_t)B * T * C3, NO = (size_t)B * T * C, NA = (size_t)B * NH * T * T;
	float *qkv = malloc(NQ * 4), *dout = malloc(NO * 4);
	float *out[3], *att[3], *dq[3];
	rng_state = 9;
	for (size_t i = 0; i < NQ; i++)
		qkv[i] = rnd_f();
	for (size_t i = 0; i < NO; i++)
		dout[i] = rnd_f();
	for (int r = 0; r < 3; r++) {
		int nth = r == 1 ? 3 : 1;
		cs_pool *pool;
		assert_int_equal(cs_pool_create(&pool, nth), CS_OK);
		float *sc = malloc(sizeof(float) * (size_t)nth * eng_attention_scratch(T, C / NH));
		out[r] = malloc(NO * 4), att[r] = malloc(NA * 4), dq[r] = malloc(NQ * 4);
		eng_attention_forward(pool, out[r], att[r], qkv, 0, sc, B, T, C, NH);
		eng_attention_backward(pool, dq[r], dout, qkv, 0, att[r], sc, B, T, C, NH);
		free(sc);
		cs_pool_free(pool);
	}
	for (int r = 1; r < 3; r++) {
		assert_memory_equal(out[r], out[0], NO * 4);
		assert_memory_equal(att[r], att[0], NA * 4);
		assert_memory_equal(dq[r], dq[0], NQ * 4);
	}
	for (int r = 0; r < 3; r++)
		free(out[r]), free(att[r]), free(dq[r]);
	free(qkv), free(dout);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attention_all_isas),
		cmocka_unit_test(test_attention_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
