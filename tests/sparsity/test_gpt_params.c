/*
 * test_gpt_params.c - host/sparsity/gpt_params.c: q, k and v of the fused qkv weight as
 * three separately sparsified tensors (sp_split_qkv): names, views, exact per-part budgets,
 * pattern selection by part and by the fused alias, and checkpoints of the fused era.
 */
#include "sp_test.h"

typedef struct split {
	int n;
	sp_param *p;
	int *src;
	size_t *off;
	sp_part_name *names;
} split;

static split split_of(const tmodel *m)
{
	split s;
	s.n = sp_split_qkv_count(m->p, m->n);
	s.p = calloc((size_t)s.n, sizeof *s.p);
	s.src = calloc((size_t)s.n, sizeof *s.src);
	s.off = calloc((size_t)s.n, sizeof *s.off);
	s.names = calloc((size_t)s.n, sizeof *s.names);
	assert_int_equal(sp_split_qkv(m->p, m->n, s.p, s.src, s.off, s.names), s.n);
	return s;
}

static void split_free(split *s)
{
	free(s->p);
	free(s->src);
	free(s->off);
	free(s->names);
}

static int find(const split *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->p[i].name, name))
			return i;
	fail_msg("no tensor %s", name);
	return -1;
}

static sp_state *state_of(const char *yaml, split *s, sp_config **cfg)
{
	char err[512] = "";
	*cfg = load_cfg(yaml);
	sp_state *st = NULL;
	int rc = sp_create(&st, *cfg, s->p, s->n, 1234, 100, err, sizeof err);
	if (rc)
		fail_msg("sp_create: %s", err);
	return st;
}

static void test_split_views(void **state)
{
	(void)state;
	tmodel *m = tmodel_new(2, 16, 256, 8, 1);
	split s = split_of(m);
	assert_int_equal(s.n, m->n + 4);
	int fused = tmodel_find(m, "h.1.attn.qkv.weight");
	const char *part[3] = { "h.1.attn.q.weight", "h.1.attn.k.weight", "h.1.attn.v.weight" };
	for (int k = 0; k < 3; k++) {
		int j = find(&s, part[k]);
		assert_int_equal(s.src[j], fused);
		assert_int_equal(s.off[j], (size_t)k * 16 * 16);
		assert_int_equal(s.p[j].shape[0], 16);
		assert_int_equal(s.p[j].shape[1], 16);
		assert_int_equal(s.p[j].numel, 256);
		assert_ptr_equal(s.p[j].w, m->p[fused].w + k * 256);
		assert_ptr_equal(s.p[j].adam_v, m->p[fused].adam_v + k * 256);
		assert_string_equal(s.p[j].alias, "h.1.attn.qkv.weight");
	}
	/* the bias stays one tensor */
	assert_null(s.p[find(&s, "h.1.attn.qkv.bias")].alias);
	split_free(&s);
	tmodel_free(m);
}

/* Each part gets exactly its own budget, at init and after RigL updates (ERK gives the
 * three equal [C, C] parts equal densities). */
static void test_budgets_per_part(void **state)
{
	(void)state;
	tmodel *m = tmodel_new(2, 32, 256, 8, 2);
	split s = split_of(m);
	sp_config *cfg;
	sp_state *st = state_of("sparsity: {algorithm: static, init_method: random, sparsity: 0.8}\n",
				&s, &cfg);
	for (int l = 0; l < 2; l++)
		for (int k = 0; k < 3; k++) {
			char nm[64];
			snprintf(nm, sizeof nm, "h.%d.attn.%c.weight", l, "qkv"[k]);
			int j = find(&s, nm);
			assert_int_equal(sp_tensor_nnz(st, j), sp_keep_count(0.8, 32 * 32));
			assert_int_equal(count_mask(sp_mask(st, j), 1024), 1024 - 819);
		}
	sp_free(st);
	sp_config_free(cfg);
	st = state_of("sparsity: {algorithm: rigl, sparsity: 0.9, sparsity_distribution: erk, "
		      "update: {freq: 1}, drop_fraction: 0.3}\n", &s, &cfg);
	int q = find(&s, "h.0.attn.q.weight"), k = find(&s, "h.0.attn.k.weight");
	int v = find(&s, "h.0.attn.v.weight");
	size_t want = sp_tensor_nnz(st, q);
	assert_int_equal(want, sp_keep_count(sp_tensor_target(st, q), 1024));
	for (long step = 0; step < 4; step++) {
		/* the dense gradient of v is large everywhere: fused, growth would pile into v */
		tmodel_backward(m);
		for (int i = 0; i < 1024; i++)
			s.p[v].grad[i] *= 100.0f;
		assert_int_equal(sp_mask_grads(st, step), 0);
		tmodel_adamw(m);
		assert_true(sp_after_optimizer(st, step) > 0);
		assert_int_equal(sp_tensor_nnz(st, q), want);
		assert_int_equal(sp_tensor_nnz(st, k), want);
		assert_int_equal(sp_tensor_nnz(st, v), want);
		assert_int_equal(count_mask(sp_mask(st, v), 1024), want);
	}
	sp_free(st);
	sp_config_free(cfg);
	split_free(&s);
	tmodel_free(m);
}

static void test_pattern_selection(void **state)
{
	(void)state;
	tmodel *m = tmodel_new(2, 16, 256, 8, 3);
	split s = split_of(m);
	struct {
		const char *yaml;
		int q, k, v;
	} cases[] = {
		/* Cerebras-style regex selecting q and k only: v stays dense */
		{ "sparsity: {algorithm: static, sparsity: 0.5, param_name_patterns: "
		  "['attn\\.[qk]\\.weight']}\n", 1, 1, 0 },
		/* glob (full match) of one part */
		{ "sparsity: {algorithm: static, sparsity: 0.5, param_filter: ['*.attn.v.weight']}\n",
		  0, 0, 1 },
		/* a substring regex of a part name selects that part, not the fused alias */
		{ "sparsity: {algorithm: static, sparsity: 0.5, param_name_patterns: ['attn.q']}\n",
		  1, 0, 0 },
		/* the fused name (configs written before the split) selects all three */
		{ "sparsity: {algorithm: static, sparsity: 0.5, param_filter: ['*attn.qkv.weight']}\n",
		  1, 1, 1 },
		/* dense_layers by part */
		{ "sparsity: {algorithm: static, sparsity: 0.5, param_filter: ['*attn.qkv.weight'], "
		  "dense_layers: ['*.k.weight']}\n", 1, 0, 1 },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		sp_config *cfg;
		sp_state *st = state_of(cases[c].yaml, &s, &cfg);
		for (int l = 0; l < 2; l++) {
			char nm[64];
			int want[3] = { cases[c].q, cases[c].k, cases[c].v };
			for (int k = 0; k < 3; k++) {
				snprintf(nm, sizeof nm, "h.%d.attn.%c.weight", l, "qkv"[k]);
				int j = find(&s, nm);
				if ((sp_mask(st, j) != NULL) != want[k])
					fail_msg("case %zu: %s %s", c, nm,
						 want[k] ? "not sparsified" : "sparsified");
				if (!want[k])
					assert_int_equal(sp_tensor_nnz(st, j), 256);
				else
					assert_int_equal(sp_tensor_nnz(st, j), 128);
			}
		}
		sp_free(st);
		sp_config_free(cfg);
	}
	split_free(&s);
	tmodel_free(m);
}

/* A mask state saved with the fused tensor loads into the split one: the thirds. */
static void test_fused_checkpoint_loads(void **state)
{
	(void)state;
	tmodel *m = tmodel_new(1, 16, 256, 8, 4);
	const char *yaml = "sparsity: {algorithm: static, init_method: random, sparsity: 0.7}\n";
	sp_config *cfg = load_cfg(yaml);
	sp_state *old = make_state(cfg, m, 10);
	int fused = tmodel_find(m, "h.0.attn.qkv.weight");
	uint8_t *fmask = malloc(768);
	memcpy(fmask, sp_mask(old, fused), 768);
	uint8_t *buf;
	size_t len;
	assert_int_equal(sp_state_save_buf(old, &buf, &len), 0);
	sp_free(old);
	split s = split_of(m);
	sp_config *cfg2;
	sp_state *st = state_of(yaml, &s, &cfg2);
	char err[512] = "";
	assert_int_equal(sp_state_load_buf(st, buf, len, err, sizeof err), 0);
	for (int k = 0; k < 3; k++) {
		char nm[64];
		snprintf(nm, sizeof nm, "h.0.attn.%c.weight", "qkv"[k]);
		int j = find(&s, nm);
		assert_memory_equal(sp_mask(st, j), fmask + k * 256, 256);
	}
	sp_free(st);
	sp_config_free(cfg2);
	/* a config that does not sparsify all three parts cannot take it: said clearly */
	st = state_of("sparsity: {algorithm: static, sparsity: 0.7, param_name_patterns: "
		      "['attn\\.[qk]\\.weight', 'mlp', 'attn.proj']}\n", &s, &cfg2);
	assert_int_equal(sp_state_load_buf(st, buf, len, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "q, k and v were sparsified separately"));
	sp_free(st);
	sp_config_free(cfg2);
	sp_config_free(cfg);
	free(buf);
	free(fmask);
	split_free(&s);
	tmodel_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_views),
		cmocka_unit_test(test_budgets_per_part),
		cmocka_unit_test(test_pattern_selection),
		cmocka_unit_test(test_fused_checkpoint_loads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
