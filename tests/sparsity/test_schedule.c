/*
 * test_schedule.c - host/sparsity/schedule.c: the Zhu-Gupta cubic oracle (s_i 0, s_f 0.9),
 * GraNet's density form (d_i 0.5, d_f 0.1 at progress 0.5 -> 0.85), the cosine drop
 * fraction oracle (init 0.3, half_period 3584), the other hyperparameter types, and which
 * steps are update steps (stop exclusive, listed steps).
 */
#include "sp_test.h"

static void test_cubic_oracle(void **state)
{
	(void)state;
	sp_sched s = { .type = SP_SCHED_POLY, .initial = 0, .final = 0.9, .begin = 1000,
		       .end = 5000, .power = 3 };
	assert_float_equal(sp_sched_value(&s, 1000, 0), 0.0, 1e-12);
	assert_float_equal(sp_sched_value(&s, 2000, 0), 0.52031, 5e-6);
	assert_float_equal(sp_sched_value(&s, 3000, 0), 0.7875, 1e-12);
	assert_float_equal(sp_sched_value(&s, 4000, 0), 0.88594, 5e-6);
	assert_float_equal(sp_sched_value(&s, 5000, 0), 0.9, 1e-12);
	assert_float_equal(sp_sched_value(&s, 9000, 0), 0.9, 1e-12); /* clamps after end */
	assert_float_equal(sp_sched_value(&s, 0, 0), 0.0, 1e-12);    /* and before begin */
	sp_sched g = { .type = SP_SCHED_POLY, .initial = 0.5, .final = 0.9, .begin = 0, .end = 100,
		       .power = 3 };
	assert_float_equal(sp_sched_value(&g, 50, 0), 0.85, 1e-12);
}

static void test_cosine_oracle(void **state)
{
	(void)state;
	sp_sched s = { .type = SP_SCHED_COSINE, .init = 0.3, .half_period = 3584 };
	assert_float_equal(sp_sched_value(&s, 0, 0), 0.3, 1e-12);
	assert_float_equal(sp_sched_value(&s, 1792, 0), 0.15, 1e-12);
	assert_float_equal(sp_sched_value(&s, 3584, 0), 0.0, 1e-12);
	sp_sched m = { .type = SP_SCHED_COSINE, .init = 0.5, .half_period = 10, .minimum = 0.1 };
	assert_float_equal(sp_sched_value(&m, 10, 0), 0.1, 1e-12);
}

static void test_other_types(void **state)
{
	(void)state;
	sp_sched c = { .type = SP_SCHED_CONSTANT, .value = 0.4 };
	assert_float_equal(sp_sched_value(&c, 77, 0), 0.4, 0);
	sp_sched l = { .type = SP_SCHED_LINEAR, .init = 0.1, .slope = 0.001 };
	assert_float_equal(sp_sched_value(&l, 100, 0), 0.2, 1e-12);
	sp_sched e = { .type = SP_SCHED_EXP, .init = 0.0, .gamma = -0.0005, .final = 0.9 };
	assert_float_equal(sp_sched_value(&e, 2000, 0), 0.9 - 0.9 * exp(-1.0), 1e-12);
	sp_sched p = { .type = SP_SCHED_POWER, .init = 0.5, .beta = 0.5 };
	assert_float_equal(sp_sched_value(&p, 3, 0), 0.0625, 1e-12);
	double v[3] = { 0.3, 0.6, 0.8 };
	sp_sched y = { .type = SP_SCHED_CYCLING, .values = v, .n_values = 3 };
	assert_float_equal(sp_sched_value(&y, 0, 0), 0.3, 0);
	assert_float_equal(sp_sched_value(&y, 0, 2), 0.8, 0);
	assert_float_equal(sp_sched_value(&y, 0, 4), 0.6, 0); /* wraps */
}

static void test_update_steps(void **state)
{
	(void)state;
	sp_update u = { .given = 1, .freq = 100, .start = 0, .stop = 3584 };
	assert_true(sp_update_at(&u, 0));
	assert_false(sp_update_at(&u, 1));
	assert_true(sp_update_at(&u, 100));
	assert_true(sp_update_at(&u, 3500));
	assert_false(sp_update_at(&u, 3600)); /* stop is exclusive */
	sp_update v = { .given = 1, .freq = 1000, .start = 1000, .stop = -1 };
	assert_false(sp_update_at(&v, 0));
	assert_true(sp_update_at(&v, 1000));
	assert_false(sp_update_at(&v, 1500));
	assert_true(sp_update_at(&v, 1000000));
	long steps[] = { 0, 2000, 4000 };
	sp_update w = { .given = 1, .n_steps = 3, .steps = steps };
	assert_true(sp_update_at(&w, 2000));
	assert_false(sp_update_at(&w, 3000));
	sp_update x = { .given = 1, .freq = 100, .start = 0, .stop = 200 };
	assert_false(sp_update_at(&x, 200));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cubic_oracle),
		cmocka_unit_test(test_cosine_oracle),
		cmocka_unit_test(test_other_types),
		cmocka_unit_test(test_update_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
