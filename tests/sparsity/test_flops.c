/*
 * test_flops.c - host/sparsity/flops.c and gpt_params.c: the Chinchilla appendix F count
 * written out by hand for a small GPT, the scaling of each matmul by its density, the dense
 * weight gradient on RigL update steps, and the parameter table of the GPT.
 */
#include "sp_test.h"

static void test_gpt_table(void **state)
{
	(void)state;
	sp_gpt_dims d = { 2, 4, 32, 16, 100 };
	int n = sp_gpt_tensors(&d, NULL, 0);
	assert_int_equal(n, 2 + 2 * 12 + 2);
	sp_gpt_tensor t[28];
	assert_int_equal(sp_gpt_tensors(&d, t, 28), 28);
	assert_string_equal(t[0].name, "wte.weight");
	assert_int_equal(t[0].shape[0], 100);
	assert_string_equal(t[4].name, "h.0.attn.qkv.weight");
	assert_int_equal(t[4].shape[0], 96);
	assert_string_equal(t[12].name, "h.0.mlp.proj.weight");
	assert_int_equal(t[12].shape[1], 128);
	assert_string_equal(t[27].name, "ln_f.bias");
	size_t tot = 0;
	for (int i = 0; i < n; i++)
		tot += t[i].numel;
	/* V*C + T*C + L*(12 C^2 + 13 C) + 2C */
	assert_int_equal(tot, 100 * 32 + 16 * 32 + 2 * (12 * 32 * 32 + 13 * 32) + 64);
	sp_gpt_dims bad = { 2, 5, 32, 16, 100 };
	assert_int_equal(sp_gpt_tensors(&bad, NULL, 0), CS_ERR_INVALID);
}

static void test_dense_count(void **state)
{
	(void)state;
	sp_gpt_dims d = { 2, 4, 32, 16, 100 };
	sp_flops f;
	assert_int_equal(sp_flops_gpt(NULL, &d, 16, 0, &f), 0);
	double S = 16, C = 32, V = 100, H = 4, L = 2;
	double layer = 6 * S * C * C + 4 * S * S * C + 3 * H * S * S + 2 * S * C * C + 16 * S * C * C;
	double fwd = 2 * S * V * C + L * layer + 2 * S * C * V;
	assert_float_equal(f.fwd_dense, fwd, 0);
	assert_float_equal(f.fwd_sparse, fwd, 0);
	assert_float_equal(f.train_dense, 3 * fwd, 0);
}

static void test_sparse_count(void **state)
{
	(void)state;
	sp_config *cfg = load_cfg("sparsity: {algorithm: rigl, sparsity: 0.75, update: {freq: 2}}");
	tmodel *m = tmodel_new(2, 16, 32, 8, 4);
	sp_state *st = make_state(cfg, m, 10);
	sp_gpt_dims d = { 2, 2, 16, 8, 32 };
	sp_flops f, g;
	assert_int_equal(sp_flops_gpt(st, &d, 8, 0, &f), 0);
	double S = 8, C = 16;
	double lin = 2 * (6 * S * C * C + 2 * S * C * C + 16 * S * C * C); /* both layers */
	assert_float_equal(f.fwd_dense - f.fwd_sparse, 0.75 * lin, 1e-6);
	assert_float_equal(f.train_sparse, 3 * f.fwd_sparse, 1e-6);
	assert_int_equal(sp_flops_gpt(st, &d, 8, 1, &g), 0);
	assert_float_equal(g.train_sparse - f.train_sparse, 0.75 * lin, 1e-6);
	/* accumulation: step 1 is an update step (t = 2) */
	sp_flops s0, s1;
	sp_flops_step(st, 0, &d, 8, 4, &s0);
	sp_flops_step(st, 1, &d, 8, 4, &s1);
	assert_float_equal(s0.train_sparse, 4 * f.train_sparse, 1e-6);
	assert_float_equal(s1.train_sparse, 4 * g.train_sparse, 1e-6);
	sp_flops_summary sum;
	assert_int_equal(sp_flops_summarize(st, &d, 8, &sum), 0);
	assert_float_equal(sum.train_sparse, s0.train_sparse + s1.train_sparse, 1e-6);
	assert_float_equal(sum.infer_reduction, f.fwd_dense / f.fwd_sparse, 1e-12);
	assert_true(sum.infer_reduction > 1.5);
	/* repeating step 0's totals: the same sums as counting step 2 (t = 3, no update) */
	sp_flops_summary a, b;
	sp_flops_account(st, &s0);
	assert_int_equal(sp_flops_summarize(st, &d, 8, &a), 0);
	sp_flops s2;
	sp_flops_step(st, 2, &d, 8, 4, &s2);
	assert_memory_equal(&s2, &s0, sizeof s2);
	assert_int_equal(sp_flops_summarize(st, &d, 8, &b), 0);
	assert_true(b.train_sparse == a.train_sparse + s0.train_sparse);
	assert_true(a.train_dense == sum.train_dense + s0.train_dense);
	sp_free(st);
	tmodel_free(m);
	sp_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpt_table),
		cmocka_unit_test(test_dense_count),
		cmocka_unit_test(test_sparse_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
