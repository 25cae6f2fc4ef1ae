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
#include <stdio.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_adamw),
		cmocka_unit_test(test_norm_and_scale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
