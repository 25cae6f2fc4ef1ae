/*
 * test_sparsity.c - host/sparsity/sparsity.c end to end on a tiny GPT parameter set, for
 * every algorithm and distribution: after every iteration, the invariants of the spec
 * (6.3): exact nonzeros per tensor (per row when balanced, per group for global scope),
 * dropped and grown sets disjoint from the kept set with kept values untouched and grown
 * entries starting at zero with zero moments, nothing nonzero outside a mask, GMP nonzeros
 * never increasing, identical masks across reruns and across a save/load at every step.
 */
#include "sp_test.h"

typedef struct tcase {
	const char *name;
	const char *yaml;
	int global;     /* scope global: check the group total instead */
	int monotone;   /* nnz never increases */
	int fixed_mask; /* static: the mask never changes after init */
	double f_max;   /* drop fraction bound for SET/RigL (0: not checked) */
} tcase;

#define STEPS 12

static const tcase cases[] = {
	{ "static random", "sparsity: {algorithm: static, sparsity: 0.8, init_method: random}",
	  0, 1, 1, 0 },
	{ "static topk erk",
	  "sparsity: {algorithm: static, sparsity: 0.7, init_method: topk, distribution: erk}", 0,
	  1, 1, 0 },
	{ "sideband", "sparsity: {type: sideband, sparsity: 0.6, seed: 7}", 0, 1, 1, 0 },
	{ "gmp cubic uniform",
	  "sparsity: {algorithm: gmp, sparsity: {type: cubic, initial: 0.0, final: 0.8, begin: 0,"
	  " end: 8}, update: {freq: 2}}",
	  0, 1, 0, 0 },
	{ "gmp cycling er tiebreak",
	  "sparsity: {type: gmp, sparsity: [0.3, 0.5, 0.7, 0.8], schedule: [0, 3, 6, 9],"
	  " distribution: er, tiebreak: {type: first, eps: 1.0e-6}}",
	  0, 1, 0, 0 },
	{ "gmp global", "sparsity: {algorithm: gmp, scope: global, sparsity: {type: cubic, initial: 0.2,"
			" final: 0.9, begin: 0, end: 10}, update: {freq: 3}}",
	  1, 1, 0, 0 },
	{ "set uniform", "sparsity: {algorithm: set, sparsity: 0.8, update: {freq: 2, stop: 10}}", 0,
	  0, 0, 0.3 },
	{ "set erk drop 0.5", "sparsity: {algorithm: set, sparsity: 0.75, distribution: erk, "
			      "drop_fraction: 0.5, update: {freq: 3}}",
	  0, 0, 0, 0.5 },
	{ "rigl uniform skip", "sparsity: {algorithm: rigl, sparsity: 0.8, update: {freq: 2, stop: 11},"
			       " skip_optimizer_on_update: true}",
	  0, 0, 0, 0.3 },
	{ "rigl erk cosine", "sparsity: {algorithm: rigl, sparsity: 0.9, distribution: erk,"
			     " drop_fraction: {type: cosine, init: 0.4, half_period: 12}, update: {freq: 1}}",
	  0, 0, 0, 0.4 },
	{ "rigl balanced out", "sparsity: {algorithm: rigl, sparsity: 0.75, balance_out_groups: 4,"
			       " update: {freq: 2}}",
	  0, 0, 0, 0.3 },
	{ "rigl balanced in", "sparsity: {algorithm: rigl, sparsity: 0.5, balance_in_groups: 2,"
			      " update: {freq: 2}, param_filter: '*mlp*.weight'}",
	  0, 0, 0, 0.3 },
	{ "granet global", "sparsity: {algorithm: granet, init_density: 0.5, final_density: 0.2,"
			   " prune_start: 0, prune_end: 8, update: {freq: 2}}",
	  1, 1, 0, 0 },
	{ "granet per tensor erk", "sparsity: {algorithm: granet, scope: per_tensor, distribution: erk,"
				   " init_density: 1.0, final_density: 0.3, prune_start: 2, prune_end: 10,"
				   " update: {freq: 2}, death_rate: 0.3}",
	  0, 1, 0, 0 },
	{ "two groups", "sparsity:\n  - {algorithm: rigl, sparsity: 0.9, update: {freq: 2},"
			" param_filter: ['*attn.*.weight']}\n  - {algorithm: gmp, sparsity: {type: exp,"
			" init: 0.0, gamma: -0.3, final: 0.8}, update: {freq: 3}, param_filter: '*mlp*weight'}",
	  0, 0, 0, 0 },
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* expected nonzeros of a per-tensor-scope tensor at its current target */
static size_t expected_nnz(const sp_state *st, int i)
{
	const sp_tensor *t = &st->t[i];
	size_t R = t->numel / (size_t)t->rows, k = 0;
	for (int r = 0; r < t->rows; r++)
		k += sp_keep_count(t->target, R);
	return k;
}

static uint64_t mask_hash(const sp_state *st, int n)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < n; i++) {
		const uint8_t *mk = sp_mask(st, i);
		size_t numel = st->t[i].numel;
		for (size_t k = 0; mk && k < numel; k++)
			h = (h ^ mk[k]) * 1099511628211ull;
		h = (h ^ (uint64_t)i) * 1099511628211ull;
	}
	return h;
}

/* One checked iteration. */
static void checked_step(tmodel *m, sp_state *st, const tcase *tc, long step)
{
	int n = m->n;
	uint8_t **old = calloc((size_t)n, sizeof *old);
	float **snap = calloc((size_t)n, sizeof *snap);
	for (int i = 0; i < n; i++) {
		const uint8_t *mk = sp_mask(st, i);
		if (mk) {
			old[i] = malloc(m->p[i].numel);
			memcpy(old[i], mk, m->p[i].numel);
		}
	}
	tmodel_backward(m);
	int dense = sp_wants_dense_grad(st, step);
	assert_int_equal(sp_mask_grads(st, step), 0);
	/* gradients are masked by select */
	check_masked(m, st);
	int skip = sp_skip_optimizer(st, step);
	if (!skip)
		tmodel_adamw(m);
	for (int i = 0; i < n; i++) {
		if (!old[i])
			continue;
		snap[i] = malloc(3 * m->p[i].numel * sizeof(float));
		for (size_t k = 0; k < m->p[i].numel; k++) {
			snap[i][3 * k] = old[i][k] ? m->p[i].w[k] : 0;
			snap[i][3 * k + 1] = old[i][k] ? m->p[i].adam_m[k] : 0;
			snap[i][3 * k + 2] = old[i][k] ? m->p[i].adam_v[k] : 0;
		}
	}
	int changed = sp_after_optimizer(st, step);
	assert_true(changed >= 0);
	int is_upd = sp_is_update_step(st, step + 1);
	if (!is_upd)
		assert_int_equal(changed, 0);
	if (dense)
		assert_true(is_upd);
	check_masked(m, st);
	int nchanged = 0;
	size_t tot_nnz = 0, tot_old = 0, tot_flips = 0, tot_numel = 0;
	for (int i = 0; i < n; i++) {
		const uint8_t *mk = sp_mask(st, i);
		if (!old[i]) {
			assert_null(mk);
			continue;
		}
		assert_non_null(mk);
		size_t numel = m->p[i].numel, nnz = 0, kept = 0, grown = 0, dropped = 0;
		int diff = 0;
		for (size_t k = 0; k < numel; k++) {
			nnz += mk[k];
			diff |= mk[k] != old[i][k];
			if (mk[k] && old[i][k]) {
				kept++;
				/* kept entries keep value and moments exactly */
				assert_true(m->p[i].w[k] == snap[i][3 * k]);
				assert_true(m->p[i].adam_m[k] == snap[i][3 * k + 1]);
				assert_true(m->p[i].adam_v[k] == snap[i][3 * k + 2]);
			} else if (mk[k]) {
				grown++;
				assert_true(m->p[i].w[k] == 0 && m->p[i].adam_m[k] == 0 &&
					    m->p[i].adam_v[k] == 0);
			} else if (old[i][k]) {
				dropped++;
			}
		}
		assert_int_equal(kept + grown, nnz);
		assert_int_equal(kept + dropped, count_mask(old[i], numel));
		tot_flips += grown + dropped;
		tot_numel += numel;
		assert_int_equal(diff, sp_mask_changed(st, i));
		nchanged += diff;
		if (tc->fixed_mask)
			assert_int_equal(diff, 0);
		if (!tc->global)
			assert_int_equal(nnz, expected_nnz(st, i));
		assert_int_equal(nnz, sp_tensor_nnz(st, i));
		if (tc->f_max > 0 && is_upd) {
			size_t n_old = count_mask(old[i], numel);
			size_t bound = (size_t)floor(tc->f_max * (double)n_old + 0.5);
			if (nnz >= n_old) /* constant or falling sparsity */
				assert_true(dropped <= bound);
		}
		if (tc->monotone && !tc->global)
			assert_true(nnz <= count_mask(old[i], numel));
		tot_nnz += nnz;
		tot_old += count_mask(old[i], numel);
	}
	if (tc->monotone)
		assert_true(tot_nnz <= tot_old);
	assert_int_equal(nchanged, changed);
	/* the churn the metrics report: entries dropped or grown over masked entries */
	assert_true(sp_mask_churn(st) == (tot_numel ? (double)tot_flips / (double)tot_numel : 0.0));
	for (int i = 0; i < n; i++) {
		free(old[i]);
		free(snap[i]);
	}
	free(old);
	free(snap);
}

static void test_invariants(void **state)
{
	(void)state;
	for (int c = 0; c < NCASES; c++) {
		const tcase *tc = &cases[c];
		printf("case %s\n", tc->name);
		sp_config *cfg = load_cfg(tc->yaml);
		tmodel *m = tmodel_new(2, 16, 32, 8, 99);
		sp_state *st = make_state(cfg, m, STEPS);
		check_masked(m, st);
		sp_stats s0;
		sp_get_stats(st, &s0);
		assert_true(s0.sparse_numel > 0);
		for (long step = 0; step < STEPS; step++)
			checked_step(m, st, tc, step);
		assert_int_equal(sp_step(st), STEPS);
		sp_free(st);
		tmodel_free(m);
		sp_config_free(cfg);
	}
}

/* hashes of the masks after every step of a run */
static void run_hashes(const tcase *tc, uint64_t *h, long save_at, uint8_t **buf, size_t *len)
{
	sp_config *cfg = load_cfg(tc->yaml);
	tmodel *m = tmodel_new(2, 16, 32, 8, 5);
	sp_state *st = make_state(cfg, m, STEPS);
	h[0] = mask_hash(st, m->n);
	for (long step = 0; step < STEPS; step++) {
		if (step == save_at)
			assert_int_equal(sp_state_save_buf(st, buf, len), 0);
		train_step(m, st, step);
		h[step + 1] = mask_hash(st, m->n);
	}
	sp_free(st);
	tmodel_free(m);
	sp_config_free(cfg);
}

static void test_rerun_and_resume(void **state)
{
	(void)state;
	for (int c = 0; c < NCASES; c++) {
		const tcase *tc = &cases[c];
		uint64_t a[STEPS + 1], b[STEPS + 1];
		run_hashes(tc, a, -1, NULL, NULL);
		run_hashes(tc, b, -1, NULL, NULL);
		assert_memory_equal(a, b, sizeof a);
		/* dynamic runs must actually change masks, or the comparison proves little */
		if (!tc->fixed_mask) {
			int moved = 0;
			for (int i = 1; i <= STEPS; i++)
				moved |= a[i] != a[i - 1];
			assert_true(moved);
		}
		for (long k = 1; k < STEPS; k++) {
			/* run to k, snapshot everything, resume in a fresh state */
			sp_config *cfg = load_cfg(tc->yaml);
			tmodel *m = tmodel_new(2, 16, 32, 8, 5);
			sp_state *st = make_state(cfg, m, STEPS);
			for (long step = 0; step < k; step++)
				train_step(m, st, step);
			uint8_t *buf;
			size_t len;
			assert_int_equal(sp_state_save_buf(st, &buf, &len), 0);
			tmodel *m2 = tmodel_new(2, 16, 32, 8, 5);
			sp_state *st2 = make_state(cfg, m2, STEPS);
			/* the trainer restores its buffers, then the sparsity state */
			for (int i = 0; i < m->n; i++) {
				size_t nb = m->p[i].numel * sizeof(float);
				memcpy(m2->p[i].w, m->p[i].w, nb);
				memcpy(m2->p[i].adam_m, m->p[i].adam_m, nb);
				memcpy(m2->p[i].adam_v, m->p[i].adam_v, nb);
			}
			m2->rng = m->rng;
			char err[256] = "";
			int rc = sp_state_load_buf(st2, buf, len, err, sizeof err);
			if (rc)
				fail_msg("%s: load at %ld: %s", tc->name, k, err);
			assert_int_equal(sp_step(st2), k);
			assert_true(mask_hash(st2, m2->n) == a[k]);
			for (long step = k; step < STEPS; step++) {
				train_step(m2, st2, step);
				if (mask_hash(st2, m2->n) != a[step + 1])
					fail_msg("%s: resumed at %ld differs at step %ld", tc->name, k,
						 step + 1);
			}
			free(buf);
			sp_free(st);
			sp_free(st2);
			tmodel_free(m);
			tmodel_free(m2);
			sp_config_free(cfg);
		}
	}
}

static void test_selection_default_and_patterns(void **state)
{
	(void)state;
	tmodel *m = tmodel_new(2, 16, 32, 8, 1);
	sp_config *cfg = load_cfg("sparsity: 0.5\n");
	sp_state *st = make_state(cfg, m, 10);
	for (int i = 0; i < m->n; i++) {
		const char *nm = m->p[i].name;
		int want = strstr(nm, ".weight") && (strstr(nm, "attn") || strstr(nm, "mlp"));
		assert_int_equal(sp_mask(st, i) != NULL, want);
		assert_string_equal(sp_tensor_algorithm(st, i), want ? "static" : "dense");
	}
	sp_free(st);
	sp_config_free(cfg);
	/* regex dict: first match wins, overrides apply, a 1-D tensor can be selected */
	cfg = load_cfg("sparsity:\n  type: sideband\n  sparsity: 0.9\n  param_name_patterns:\n"
		       "    'attn\\.qkv': {sparsity: 0.5}\n    'h\\.1\\..*weight': {}\n");
	st = make_state(cfg, m, 10);
	int qkv0 = tmodel_find(m, "h.0.attn.qkv.weight"), ln = tmodel_find(m, "h.1.ln_1.weight");
	int proj0 = tmodel_find(m, "h.0.attn.proj.weight"), fc1 = tmodel_find(m, "h.1.mlp.fc.weight");
	assert_float_equal(sp_tensor_target(st, qkv0), 0.5, 0);
	assert_null(sp_mask(st, proj0));
	assert_non_null(sp_mask(st, ln));
	assert_float_equal(sp_tensor_target(st, fc1), 0.9, 0);
	assert_int_equal(sp_tensor_nnz(st, fc1), 1024 - 922);
	sp_free(st);
	sp_config_free(cfg);
	/* a pattern that matches nothing is an error naming its place */
	cfg = load_cfg("sparsity:\n  algorithm: static\n  sparsity: 0.5\n  param_filter: ['*qkv.weight', '*nope*']\n");
	sp_state *bad = NULL;
	char err[256] = "";
	assert_int_equal(sp_create(&bad, cfg, m->p, m->n, 1, 10, err, sizeof err), CS_ERR_CONFIG);
	assert_string_equal(err, "t.yaml:4:33: sparsity.param_filter: '*nope*' matches no parameter");
	sp_config_free(cfg);
	/* a balance group count that does not divide is an error */
	cfg = load_cfg("sparsity: {algorithm: rigl, sparsity: 0.5, balance_out_groups: 5}\n");
	assert_int_equal(sp_create(&bad, cfg, m->p, m->n, 1, 10, err, sizeof err), CS_ERR_CONFIG);
	assert_non_null(strstr(err, "balance_out_groups: 5 does not divide dimension 0 of"));
	sp_config_free(cfg);
	tmodel_free(m);
}

static void test_order_independence(void **state)
{
	(void)state;
	/* random masks depend on (seed, name), not on parameter order */
	sp_config *cfg = load_cfg("sparsity: {algorithm: set, sparsity: 0.8, update: {freq: 1}}");
	tmodel *m = tmodel_new(1, 16, 32, 8, 3);
	sp_state *a = make_state(cfg, m, 4);
	int n = m->n;
	sp_param *rev = calloc((size_t)n, sizeof *rev);
	float **w = calloc((size_t)n, sizeof *w);
	for (int i = 0; i < n; i++) {
		rev[i] = m->p[n - 1 - i];
		w[i] = malloc(rev[i].numel * sizeof(float));
		memcpy(w[i], rev[i].w, rev[i].numel * sizeof(float));
		rev[i].w = w[i];
		rev[i].grad = rev[i].adam_m = rev[i].adam_v = NULL;
	}
	char err[256];
	sp_state *b = NULL;
	assert_int_equal(sp_create(&b, cfg, rev, n, 1234, 4, err, sizeof err), 0);
	for (int i = 0; i < n; i++) {
		const uint8_t *ma = sp_mask(a, i), *mb = sp_mask(b, n - 1 - i);
		assert_int_equal(ma != NULL, mb != NULL);
		if (ma)
			assert_memory_equal(ma, mb, m->p[i].numel);
	}
	sp_free(a);
	sp_free(b);
	for (int i = 0; i < n; i++)
		free(w[i]);
	free(w);
	free(rev);
	tmodel_free(m);
	sp_config_free(cfg);
}

static void test_gmp_dense_until_start(void **state)
{
	(void)state;
	sp_config *cfg = load_cfg("sparsity: {algorithm: gmp, sparsity: {type: cubic, initial: 0.5,"
				  " final: 0.8, begin: 4, end: 8}, update: {freq: 2, start: 4}}");
	tmodel *m = tmodel_new(1, 16, 32, 8, 3);
	sp_state *st = make_state(cfg, m, 10);
	int fc = tmodel_find(m, "h.0.mlp.fc.weight");
	assert_int_equal(sp_tensor_nnz(st, fc), 1024); /* all ones until t = 4 */
	for (long s = 0; s < 3; s++)
		assert_int_equal(train_step(m, st, s), 0);
	assert_int_equal(sp_tensor_nnz(st, fc), 1024);
	assert_true(train_step(m, st, 3) > 0); /* t = 4 */
	assert_int_equal(sp_tensor_nnz(st, fc), 512);
	train_step(m, st, 4);
	train_step(m, st, 5); /* t = 6: progress 0.5 -> 0.8 - 0.3/8 = 0.7625 */
	assert_int_equal(sp_tensor_nnz(st, fc), 1024 - 781);
	sp_free(st);
	tmodel_free(m);
	sp_config_free(cfg);
}

static void test_granet_schedule_and_death_rate(void **state)
{
	(void)state;
	/* global prune: group total follows the cubic ramp exactly at prune steps */
	sp_config *cfg = load_cfg("sparsity: {algorithm: granet, init_density: 0.5, final_density: 0.1,"
				  " prune_start: 0, prune_end: 8, update: {freq: 2}}");
	tmodel *m = tmodel_new(2, 16, 32, 8, 11);
	sp_state *st = make_state(cfg, m, 20);
	sp_stats s;
	sp_get_stats(st, &s);
	assert_int_equal(s.sparse_nnz, 6144 / 2);
	for (long step = 0; step < 12; step++) {
		assert_int_equal(sp_wants_dense_grad(st, step), (step + 1) % 2 == 0);
		train_step(m, st, step);
		long t = step + 1;
		double p = t > 8 ? 1.0 : (double)(t - t % 2) / 8.0;
		double sp = 0.9 + (0.5 - 0.9) * pow(1 - p, 3);
		sp_get_stats(st, &s);
		assert_int_equal(s.sparse_nnz, sp_keep_count(sp, 6144));
	}
	sp_free(st);
	tmodel_free(m);
	sp_config_free(cfg);
}

static void test_prune_remaining_and_remove(void **state)
{
	(void)state;
	sp_config *cfg = load_cfg("sparsity: {algorithm: static, sparsity: 0.5, init_method: topk}");
	tmodel *m = tmodel_new(1, 16, 32, 8, 3);
	sp_state *st = make_state(cfg, m, 10);
	int fc = tmodel_find(m, "h.0.mlp.fc.weight");
	train_step(m, st, 0);
	/* the 20% smallest remaining |w| go */
	float before[1024];
	uint8_t was[1024];
	const uint8_t *mk = sp_mask(st, fc);
	for (size_t k = 0; k < 1024; k++) {
		before[k] = fabsf(m->p[fc].w[k]);
		was[k] = mk[k];
	}
	assert_int_equal(count_mask(was, 1024), 512);
	int changed = sp_prune_remaining(st, 0.2);
	assert_int_equal(changed, 4);
	assert_int_equal(sp_tensor_nnz(st, fc), 512 - 102);
	/* every survivor is at least as large as every pruned former survivor */
	float minkept = 1e9f, maxgone = 0;
	size_t gone = 0;
	for (size_t k = 0; k < 1024; k++) {
		assert_true(!mk[k] || was[k]);
		if (mk[k])
			minkept = fminf(minkept, before[k]);
		else if (was[k]) {
			maxgone = fmaxf(maxgone, before[k]);
			gone++;
			assert_true(m->p[fc].w[k] == 0);
		}
	}
	assert_int_equal(gone, 102);
	assert_true(maxgone <= minkept);
	check_masked(m, st);
	train_step(m, st, 1);
	assert_int_equal(sp_tensor_nnz(st, fc), 410);
	assert_int_equal(sp_remove_masks(st), 4);
	assert_null(sp_mask(st, fc));
	assert_string_equal(sp_tensor_algorithm(st, fc), "dense");
	train_step(m, st, 2);
	sp_stats s;
	sp_get_stats(st, &s);
	assert_int_equal(s.total_nnz, s.total_numel);
	sp_free(st);
	tmodel_free(m);
	sp_config_free(cfg);
}

static void test_nan_sideband(void **state)
{
	(void)state;
	float w[6] = { 1, 2, 3, 4, 5, 6 };
	uint8_t mk[6] = { 1, 0, 1, 0, 0, 1 }, back[6];
	assert_int_equal(sp_nan_export(w, mk, 6), 3);
	assert_true(isnan(w[1]) && isnan(w[3]) && w[2] == 3);
	assert_int_equal(sp_nan_import(w, back, 6), 3);
	assert_memory_equal(mk, back, 6);
	assert_true(w[1] == 0 && w[5] == 6);
}

/* AdamW with decoupled weight decay: a zero weight with zero gradient and moments stays 0 */
static void adamw_zero_preserving(tmodel *m)
{
	for (int i = 0; i < m->n; i++) {
		sp_param *p = &m->p[i];
		for (size_t k = 0; k < p->numel; k++) {
			float g = p->grad[k];
			p->adam_m[k] = 0.9f * p->adam_m[k] + 0.1f * g;
			p->adam_v[k] = 0.999f * p->adam_v[k] + 0.001f * g * g;
			p->w[k] -= 0.01f * p->adam_m[k] / (sqrtf(p->adam_v[k]) + 1e-3f) +
				   0.001f * p->w[k];
		}
	}
}

/* With a zero-preserving optimizer, skipping the re-mask after it (and the gradient mask of
 * tensors declared clean) gives bit for bit the run that re-masks everything. */
static void test_zero_preserving_optimizer(void **state)
{
	(void)state;
	for (int c = 0; c < NCASES; c++) {
		const tcase *tc = &cases[c];
		sp_config *cfg = load_cfg(tc->yaml);
		tmodel *m[2];
		sp_state *st[2];
		for (int r = 0; r < 2; r++) {
			m[r] = tmodel_new(2, 16, 32, 8, 99);
			st[r] = make_state(cfg, m[r], STEPS);
		}
		sp_set_zero_preserving_optimizer(st[1], 1);
		for (long step = 0; step < STEPS; step++) {
			for (int r = 0; r < 2; r++) {
				tmodel_backward(m[r]);
				int dense = sp_wants_dense_grad(st[r], step);
				if (r == 1 && !dense)
					/* what a sparse weight gradient gives: zeros outside */
					for (int i = 0; i < m[r]->n; i++) {
						const uint8_t *mk = sp_mask(st[r], i);
						if (!mk)
							continue;
						for (size_t k = 0; k < m[r]->p[i].numel; k++)
							if (!mk[k])
								m[r]->p[i].grad[k] = 0;
						sp_set_grad_clean(st[r], i);
					}
				assert_int_equal(sp_mask_grads(st[r], step), 0);
				if (!sp_skip_optimizer(st[r], step))
					adamw_zero_preserving(m[r]);
				assert_true(sp_after_optimizer(st[r], step) >= 0);
			}
			for (int i = 0; i < m[0]->n; i++) {
				size_t nb = m[0]->p[i].numel * sizeof(float);
				assert_memory_equal(m[0]->p[i].w, m[1]->p[i].w, nb);
				assert_memory_equal(m[0]->p[i].adam_m, m[1]->p[i].adam_m, nb);
				assert_memory_equal(m[0]->p[i].adam_v, m[1]->p[i].adam_v, nb);
			}
			check_masked(m[1], st[1]);
		}
		for (int r = 0; r < 2; r++) {
			sp_free(st[r]);
			tmodel_free(m[r]);
		}
		sp_config_free(cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invariants),
		cmocka_unit_test(test_rerun_and_resume),
		cmocka_unit_test(test_selection_default_and_patterns),
		cmocka_unit_test(test_order_independence),
		cmocka_unit_test(test_gmp_dense_until_start),
		cmocka_unit_test(test_granet_schedule_and_death_rate),
		cmocka_unit_test(test_prune_remaining_and_remove),
		cmocka_unit_test(test_nan_sideband),
		cmocka_unit_test(test_zero_preserving_optimizer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
