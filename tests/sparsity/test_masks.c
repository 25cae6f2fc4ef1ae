/*
 * test_masks.c - host/sparsity/masks.c against a brute-force reference (repeated argmax,
 * lower flat index first on ties) on small tensors full of ties: RigL drop/grow, GraNet
 * regeneration counts, GMP magnitude pruning, top-k init, balanced input-column groups.
 */
#include "sp_test.h"

#define N 96

/* pick k of the candidates (cand[i] != 0) with the largest score, lowest index first */
static void ref_pick(const double *score, const uint8_t *cand, size_t n, size_t k, uint8_t *out)
{
	uint8_t *used = calloc(n, 1);
	for (size_t r = 0; r < k; r++) {
		long best = -1;
		for (size_t i = 0; i < n; i++)
			if (cand[i] && !used[i] && (best < 0 || score[i] > score[best]))
				best = (long)i;
		if (best < 0)
			break;
		used[best] = 1;
		out[best] = 1;
	}
	free(used);
}

static sp_tensor mk_tensor(float *w, float *g, uint8_t *mask, uint8_t *scratch, int rows, int in)
{
	sp_tensor t;
	memset(&t, 0, sizeof t);
	t.name = "h.0.mlp.fc.weight";
	t.ndim = 2;
	t.shape[0] = N / 12;
	t.shape[1] = 12;
	t.numel = N;
	t.w = w;
	t.dense_grad = g;
	t.have_dense_grad = 1;
	t.mask = mask;
	t.scratch = scratch;
	t.rows = rows;
	t.rows_in = in;
	t.name_hash = sp_fnv1a(t.name);
	t.group = 0;
	return t;
}

static void fill(float *w, float *g, uint8_t *mask, uint64_t seed)
{
	uint64_t s = seed;
	for (int i = 0; i < N; i++) {
		/* 5 magnitude levels, both signs: many ties */
		w[i] = (float)((int)(t_rand(&s) % 11) - 5) * 0.25f;
		g[i] = (float)((int)(t_rand(&s) % 7) - 3);
		mask[i] = (t_rand(&s) % 3) != 0;
	}
}

static void test_rigl_matches_reference(void **state)
{
	(void)state;
	sp_group gr;
	memset(&gr, 0, sizeof gr);
	gr.algo = SP_RIGL;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		float w[N], g[N];
		uint8_t mask[N], scratch[N], ref[N] = { 0 }, cand[N];
		double sw[N], sg[N];
		fill(w, g, mask, seed);
		double s = 0.3 + 0.01 * (double)seed, f = 0.05 * (double)(seed % 7);
		sp_tensor t = mk_tensor(w, g, mask, scratch, 1, 0);
		assert_int_equal(sp_mask_drop_grow(&gr, &t, 9, 5, s, f, 1, 0), 0);
		size_t n = count_mask(mask, N);
		size_t nd = (size_t)floor(f * (double)n + 0.5);
		size_t K = N - (size_t)floor(s * N + 0.5);
		size_t keep = n - nd < K ? n - nd : K;
		for (int i = 0; i < N; i++) {
			sw[i] = fabs(w[i]);
			sg[i] = fabs(g[i]);
		}
		ref_pick(sw, mask, N, keep, ref);
		for (int i = 0; i < N; i++)
			cand[i] = !ref[i];
		ref_pick(sg, cand, N, K - keep, ref);
		assert_memory_equal(scratch, ref, N);
		assert_int_equal(count_mask(scratch, N), K);
	}
}

static void test_granet_regen_counts(void **state)
{
	(void)state;
	sp_group gr;
	memset(&gr, 0, sizeof gr);
	gr.algo = SP_GRANET;
	float w[N], g[N];
	uint8_t mask[N], scratch[N], ref[N] = { 0 }, cand[N];
	double sw[N], sg[N];
	fill(w, g, mask, 77);
	sp_tensor t = mk_tensor(w, g, mask, scratch, 1, 0);
	double r = 0.3;
	assert_int_equal(sp_mask_drop_grow(&gr, &t, 9, 5, 0, r, 1, 1), 0);
	size_t n = count_mask(mask, N), nd = (size_t)ceil(r * (double)n);
	for (int i = 0; i < N; i++) {
		sw[i] = fabs(w[i]);
		sg[i] = fabs(g[i]);
	}
	ref_pick(sw, mask, N, n - nd, ref);
	for (int i = 0; i < N; i++)
		cand[i] = !ref[i];
	ref_pick(sg, cand, N, nd, ref);
	assert_memory_equal(scratch, ref, N);
	assert_int_equal(count_mask(scratch, N), n);
}

static void test_gmp_and_topk_match_reference(void **state)
{
	(void)state;
	sp_group gr;
	memset(&gr, 0, sizeof gr);
	gr.algo = SP_GMP;
	gr.init_method = SP_INIT_TOPK;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		float w[N], g[N];
		uint8_t mask[N], scratch[N], ref[N] = { 0 }, all[N];
		double sw[N];
		fill(w, g, mask, seed);
		sp_tensor t = mk_tensor(w, g, mask, scratch, 1, 0);
		double s = 0.05 * (double)seed;
		assert_int_equal(sp_mask_magnitude(&gr, &t, 1, 3, s), 0);
		size_t K = N - (size_t)floor(s * N + 0.5), n = count_mask(mask, N);
		for (int i = 0; i < N; i++)
			sw[i] = fabs(w[i]);
		ref_pick(sw, mask, N, K, ref);
		for (int i = 0, extra = (int)(K > n ? K - n : 0); i < N && extra > 0; i++)
			if (!mask[i]) {
				ref[i] = 1;
				extra--;
			}
		assert_memory_equal(scratch, ref, N);
		/* init topk ranks every entry */
		memset(ref, 0, N);
		memset(all, 1, N);
		assert_int_equal(sp_mask_init(&gr, &t, 1, s), 0);
		ref_pick(sw, all, N, K, ref);
		assert_memory_equal(scratch, ref, N);
	}
}

static void test_balanced_in_groups(void **state)
{
	(void)state;
	sp_group gr;
	memset(&gr, 0, sizeof gr);
	gr.algo = SP_RIGL;
	gr.init_method = SP_INIT_TOPK;
	float w[N], g[N];
	uint8_t mask[N], scratch[N], ref[N] = { 0 };
	double sw[N];
	fill(w, g, mask, 5);
	sp_tensor t = mk_tensor(w, g, mask, scratch, 3, 1); /* W [8, 12]: 3 groups of 4 columns */
	assert_int_equal(sp_mask_init(&gr, &t, 1, 0.5), 0);
	for (int r = 0; r < 3; r++) {
		uint8_t cand[N] = { 0 };
		for (int i = 0; i < N; i++) {
			sw[i] = fabs(w[i]);
			cand[i] = (i % 12) / 4 == r;
		}
		ref_pick(sw, cand, N, 16, ref);
		size_t in_row = 0;
		for (int i = 0; i < N; i++)
			in_row += cand[i] && scratch[i];
		assert_int_equal(in_row, 16);
	}
	assert_memory_equal(scratch, ref, N);
}

static void test_keep_count_rounding(void **state)
{
	(void)state;
	assert_int_equal(sp_keep_count(0.1, 10), 9);
	assert_int_equal(sp_keep_count(0.25, 10), 7); /* 2.5 rounds half up: 3 zeros */
	assert_int_equal(sp_keep_count(0.35, 10), 6); /* 3.5 -> 4 zeros (float 3.4999.. aside) */
	assert_int_equal(sp_keep_count(0.9, 111000), 11100);
	assert_int_equal(sp_keep_count(0.0, 5), 5);
	assert_int_equal(sp_keep_count(0.99999, 5), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rigl_matches_reference),
		cmocka_unit_test(test_granet_regen_counts),
		cmocka_unit_test(test_gmp_and_topk_match_reference),
		cmocka_unit_test(test_balanced_in_groups),
		cmocka_unit_test(test_keep_count_rounding),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
