/*
 * test_distribution.c - host/sparsity/distribution.c against the worked oracles of the spec
 * (section 1.5): ERK at s = 0.9 and s = 0.5 on a=[100,100], b=[10,100], c=[1000,100], the
 * GPT block at 0.75, plus ER, uniform, power scale 0 and forced-dense layers.
 */
#include "sp_test.h"

static void solve(int dist, double p, double s, int n, const int (*shape)[4], const int *forced,
		  double *out)
{
	int nd[8];
	size_t ne[8];
	for (int i = 0; i < n; i++) {
		nd[i] = 2;
		ne[i] = (size_t)shape[i][0] * (size_t)shape[i][1];
	}
	assert_int_equal(sp_distribute(dist, p, s, n, nd, shape, ne, forced, out), 0);
}

static const int abc[3][4] = { { 100, 100 }, { 10, 100 }, { 1000, 100 } };
static const int none[8];

static size_t total_kept(const double *s, const int (*shape)[4], int n)
{
	size_t k = 0;
	for (int i = 0; i < n; i++)
		k += sp_keep_count(s[i], (size_t)shape[i][0] * (size_t)shape[i][1]);
	return k;
}

static void test_erk_s09(void **state)
{
	(void)state;
	double s[3];
	solve(SP_DIST_ERK, 1.0, 0.9, 3, abc, none, s);
	assert_float_equal(s[0], 0.84255, 5e-6);
	assert_float_equal(s[1], 0.13404, 5e-6);
	assert_float_equal(s[2], 0.91340, 5e-6);
	/* overall exactly 0.9: 11100 of 111000 kept */
	assert_int_equal(total_kept(s, abc, 3), 11100);
}

static void test_erk_s05(void **state)
{
	(void)state;
	double s[3];
	solve(SP_DIST_ERK, 1.0, 0.5, 3, abc, none, s);
	assert_float_equal(s[0], 0.16154, 5e-6);
	assert_true(s[1] == 0.0); /* b goes dense */
	assert_float_equal(s[2], 0.53885, 5e-6);
	assert_int_equal(total_kept(s, abc, 3), 55500);
}

static void test_erk_gpt_block(void **state)
{
	(void)state;
	const int blk[4][4] = { { 2304, 768 }, { 768, 768 }, { 3072, 768 }, { 768, 3072 } };
	double s[4];
	solve(SP_DIST_ERK, 1.0, 0.75, 4, blk, none, s);
	assert_float_equal(s[0], 0.75, 1e-12);
	assert_float_equal(s[1], 0.625, 1e-12);
	assert_float_equal(s[2], 0.765625, 1e-12);
	assert_float_equal(s[3], 0.765625, 1e-12);
}

static void test_er_and_uniform(void **state)
{
	(void)state;
	double s[3];
	/* ER on 2-D tensors is ERK with p = 1 */
	double e[3];
	solve(SP_DIST_ER, 1.0, 0.9, 3, abc, none, s);
	solve(SP_DIST_ERK, 1.0, 0.9, 3, abc, none, e);
	for (int i = 0; i < 3; i++)
		assert_float_equal(s[i], e[i], 1e-12);
	/* power scale 0 is uniform */
	solve(SP_DIST_ERK, 0.0, 0.9, 3, abc, none, s);
	for (int i = 0; i < 3; i++)
		assert_float_equal(s[i], 0.9, 1e-12);
	solve(SP_DIST_UNIFORM, 1.0, 0.7, 3, abc, none, s);
	for (int i = 0; i < 3; i++)
		assert_float_equal(s[i], 0.7, 1e-12);
	const int forced[3] = { 1, 0, 0 };
	solve(SP_DIST_UNIFORM, 1.0, 0.7, 3, abc, forced, s);
	assert_true(s[0] == 0.0);
	assert_float_equal(s[1], 0.7, 1e-12);
}

static void test_erk_forced_dense_budget(void **state)
{
	(void)state;
	/* a forced dense: its zeros move to b and c; overall still 0.9 */
	const int forced[3] = { 1, 0, 0 };
	double s[3];
	solve(SP_DIST_ERK, 1.0, 0.9, 3, abc, forced, s);
	assert_true(s[0] == 0.0);
	size_t kept = total_kept(s, abc, 3);
	assert_true(kept >= 11099 && kept <= 11101); /* per-layer rounding only */
	/* independent: eps*(110+1100) = 100+10000 - 9000 */
	double eps = (100.0 + 10000.0 - 9000.0) / (110.0 + 1100.0);
	assert_float_equal(s[1], 1 - eps * 0.11, 1e-12);
	assert_float_equal(s[2], 1 - eps * 0.011, 1e-12);
}

/* A distribution that cannot realise the target is refused at sp_create, saying what would
 * happen (erk_power_scale 400 at 0.99 used to train dense, 20 to zero whole tensors). */
static void expect_refused(const char *yaml, const char *what)
{
	tmodel *m = tmodel_new(2, 64, 256, 64, 1);
	sp_config *cfg = load_cfg(yaml);
	sp_state *st = NULL;
	char err[512] = "";
	assert_int_equal(sp_create(&st, cfg, m->p, m->n, 1, 100, err, sizeof err), CS_ERR_CONFIG);
	printf("%s\n", err);
	assert_non_null(strstr(err, "t.yaml:1:11: sparsity: sparsity_distribution erk"));
	assert_non_null(strstr(err, what));
	sp_config_free(cfg);
	tmodel_free(m);
}

static void test_unreachable_refused(void **state)
{
	(void)state;
	expect_refused("sparsity: {sparsity: 0.99, type: static, sparsity_distribution: erk, "
		       "erk_power_scale: 400}\n",
		       "cannot reach sparsity 0.99 over these tensors: they would train at 0.0000");
	expect_refused("sparsity: {sparsity: 0.99, type: static, sparsity_distribution: erk, "
		       "erk_power_scale: 20}\n",
		       "would prune every weight of h.");
	/* the final target of a schedule too */
	expect_refused("sparsity: {algorithm: gmp, sparsity: {type: linear, init: 0.1, slope: "
		       "0.01}, update: {freq: 10, stop: 100}, sparsity_distribution: erk, "
		       "erk_power_scale: 400}\n", "cannot reach sparsity");
	/* the same at a reachable power is fine */
	tmodel *m = tmodel_new(2, 64, 256, 64, 1);
	sp_config *cfg = load_cfg("sparsity: {sparsity: 0.99, type: static, "
				  "sparsity_distribution: erk, erk_power_scale: 3}\n");
	sp_state *st = make_state(cfg, m, 100);
	sp_free(st);
	sp_config_free(cfg);
	tmodel_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_erk_s09),
		cmocka_unit_test(test_erk_s05),
		cmocka_unit_test(test_erk_gpt_block),
		cmocka_unit_test(test_er_and_uniform),
		cmocka_unit_test(test_erk_forced_dense_budget),
		cmocka_unit_test(test_unreachable_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
