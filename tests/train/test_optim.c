/*
 * test_optim.c - host/train/optim.c: the schedule's end points and shape, AdamW against
 * the formula in double (with and without weight decay, bias correction over steps), and
 * the global norm.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "train/optim.h"

static void test_schedule(void **state)
{
	(void)state;
	/* warm-up: linear from lr/warmup to lr */
	assert_true(fabs(lr_schedule(0, 100, 10, 1e-3, 1e-4) - 1e-4) < 1e-15);
	assert_true(fabs(lr_schedule(9, 100, 10, 1e-3, 1e-4) - 1e-3) < 1e-15);
	/* cosine from lr (first decay step) to min_lr (last step), halfway at the middle */
	assert_true(fabs(lr_schedule(10, 100, 10, 1e-3, 1e-4) - 1e-3) < 1e-15);
	assert_true(fabs(lr_schedule(99, 100, 10, 1e-3, 1e-4) - 1e-4) < 1e-15);
	/* halfway through the decay (steps 10..100 of 101) it is halfway between the two */
	assert_true(fabs(lr_schedule(55, 101, 10, 1e-3, 1e-4) - 5.5e-4) < 1e-15);
	double prev = 1;
	for (long s = 10; s < 100; s++) {
		double lr = lr_schedule(s, 100, 10, 1e-3, 1e-4);
		assert_true(lr <= prev && lr >= 1e-4 - 1e-18);
		prev = lr;
	}
	/* beyond the end (a run extended on resume) it stays at the floor */
	assert_true(fabs(lr_schedule(150, 100, 10, 1e-3, 1e-4) - 1e-4) < 1e-15);
	/* no warm-up */
	assert_true(fabs(lr_schedule(0, 10, 0, 2e-3, 0) - 2e-3) < 1e-15);
}

static void test_adamw(void **state)
{
	(void)state;
	float w[4] = { 1.0f, -2.0f, 0.5f, 0.0f }, m[4] = { 0 }, v[4] = { 0 };
	double W[4] = { 1.0, -2.0, 0.5, 0.0 }, M[4] = { 0 }, Vv[4] = { 0 };
	const float g[3][4] = { { 0.1f, -0.2f, 0.0f, 3.0f },
				{ -0.05f, 0.4f, 1e-3f, -3.0f },
				{ 0.2f, 0.1f, -1e-3f, 0.5f } };
	double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1;
	for (int t = 1; t <= 3; t++) {
		adamw_update(w, m, v, g[t - 1], 4, (float)lr, (float)b1, (float)b2, (float)eps,
			     (float)wd, t);
		for (int i = 0; i < 4; i++) {
			M[i] = b1 * M[i] + (1 - b1) * g[t - 1][i];
			Vv[i] = b2 * Vv[i] + (1 - b2) * (double)g[t - 1][i] * g[t - 1][i];
			double mh = M[i] / (1 - pow(b1, t)), vh = Vv[i] / (1 - pow(b2, t));
			W[i] -= lr * (mh / (sqrt(vh) + eps) + wd * W[i]);
		}
		for (int i = 0; i < 4; i++) {
			printf("t %d w[%d] %.9f ref %.9f\n", t, i, w[i], W[i]);
			assert_true(fabs(w[i] - W[i]) < 2e-6);
		}
	}
	/* zero gradient, zero moments, zero weight: stays exactly zero (masked entries) */
	float z = 0, zm = 0, zv = 0, zg = 0;
	adamw_update(&z, &zm, &zv, &zg, 1, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 5);
	assert_true(z == 0.0f && zm == 0.0f && zv == 0.0f);
}

static void test_norm_and_scale(void **state)
{
	(void)state;
	float g[5] = { 3, 4, 0, 0, 0 };
	assert_true(fabs(grad_global_norm(g, 5) - 5.0) < 1e-12);
	grad_scale(g, 5, 0.2f);
	assert_true(fabs(grad_global_norm(g, 5) - 1.0) < 1e-6);
}

/* The sharded optimizer's norm: chunk partials computed in pieces (each rank its chunks)
 * and added in order give the bits of the whole norm, over pieces and over one flat
 * buffer; and the AdamW update of a range split in two gives the bits of the whole. */
static void test_norm_partials_sharded(void **state)
{
	(void)state;
	size_t len[4] = { 3 * GRAD_NORM_CHUNK + 17, 0, 5, GRAD_NORM_CHUNK };
	size_t n = len[0] + len[1] + len[2] + len[3];
	float *g = malloc(n * sizeof *g);
	assert_non_null(g);
	uint64_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		g[i] = (float)((double)(x >> 11) / 9007199254740992.0 - 0.5) * 1e-2f;
	}
	const float *seg[4] = { g, g + len[0], g + len[0], g + len[0] + len[2] };
	size_t nc = grad_norm_chunks(len, 4);
	assert_int_equal(nc, 4 + 0 + 1 + 1);
	double whole = grad_global_norm_segs_pool(NULL, seg, len, 4);
	for (size_t cut = 0; cut <= nc; cut++) {
		double part[8] = { 0 };
		assert_int_equal(grad_norm_partials_segs_pool(NULL, seg, len, 4, 0, cut, part), 0);
		assert_int_equal(grad_norm_partials_segs_pool(NULL, seg, len, 4, cut, nc, part), 0);
		double sharded = grad_norm_from_partials(part, nc);
		assert_memory_equal(&sharded, &whole, sizeof whole);
	}
	/* one flat piece, as the dense gradient's */
	double flat = grad_global_norm(g, n), part[8] = { 0 };
	size_t fc = grad_norm_chunks(&n, 1);
	const float *fseg = g;
	assert_int_equal(grad_norm_partials_segs_pool(NULL, &fseg, &n, 1, 0, 2, part), 0);
	assert_int_equal(grad_norm_partials_segs_pool(NULL, &fseg, &n, 1, 2, fc, part), 0);
	double fs = grad_norm_from_partials(part, fc);
	assert_memory_equal(&fs, &flat, sizeof flat);
	/* AdamW on [0, k) and [k, n) = AdamW on [0, n) */
	size_t m = 1000, k = 377;
	float *w = calloc(6 * m, sizeof *w);
	assert_non_null(w);
	float *mo = w + m, *v = w + 2 * m, *w2 = w + 3 * m, *m2 = w + 4 * m, *v2 = w + 5 * m;
	for (size_t i = 0; i < m; i++)
		w[i] = w2[i] = g[i] * 10.0f;
	adamw_update(w, mo, v, g, m, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
	adamw_update(w2, m2, v2, g, k, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
	adamw_update(w2 + k, m2 + k, v2 + k, g + k, m - k, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
	assert_memory_equal(w, w2, 3 * m * sizeof *w);
	free(w);
	free(g);
}

/* AdamW over kept entries with packed moments and gradient (adamw_update_nz, in chunks:
 * more entries than one chunk, and a partial last one) = adamw_update on each entry alone,
 * bit for bit; the packed copy of the new weights equals them; other weights untouched. */
static void test_adamw_nz(void **state)
{
	(void)state;
	size_t n = 4099, nk = 0;
	float *w = malloc(n * sizeof *w), *w2 = malloc(n * sizeof *w);
	float *m = calloc(n, sizeof *m), *v = calloc(n, sizeof *v), *g = malloc(n * sizeof *g);
	float *m2 = calloc(n, sizeof *m), *v2 = calloc(n, sizeof *v), *wnz = malloc(n * sizeof *w);
	uint32_t *idx = malloc(n * sizeof *idx);
	assert_true(w && w2 && m && v && g && m2 && v2 && wnz && idx);
	for (size_t i = 0; i < n; i++) {
		w[i] = w2[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
		if ((i * 40503u) % 7 < 3) { /* about 3 in 7 kept */
			idx[nk] = (uint32_t)i;
			g[nk] = (float)((i * 7919u) % 1001) / 500.0f - 1.0f;
			nk++;
		}
	}
	assert_true(nk > 600 && nk % 256);
	for (long t = 1; t <= 3; t++) {
		adamw_update_nz(w, m, v, g, idx, nk, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t, wnz);
		for (size_t k = 0; k < nk; k++)
			adamw_update(w2 + idx[k], m2 + k, v2 + k, g + k, 1, 1e-3f, 0.9f, 0.95f, 1e-8f,
				     0.1f, t);
		for (size_t k = 0; k < nk; k++)
			assert_memory_equal(&wnz[k], &w[idx[k]], sizeof *w);
	}
	assert_memory_equal(w, w2, n * sizeof *w);
	assert_memory_equal(m, m2, nk * sizeof *m);
	assert_memory_equal(v, v2, nk * sizeof *v);
	free(w);
	free(w2);
	free(m);
	free(v);
	free(g);
	free(m2);
	free(v2);
	free(wnz);
	free(idx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_adamw),
		cmocka_unit_test(test_norm_and_scale),
		cmocka_unit_test(test_norm_partials_sharded),
		cmocka_unit_test(test_adamw_nz),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
