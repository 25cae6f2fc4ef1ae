/*
 * test_checkpoint.c - host/sparsity/checkpoint.c: round trip through a FILE, and every
 * corruption (magic, version, checksum, truncation, foreign config) refused with a message
 * and without touching the state. Resume-equivalence at every step is in test_sparsity.c.
 */
#include "sp_test.h"

static const char *yaml = "sparsity: {algorithm: rigl, sparsity: 0.8, update: {freq: 2}}";

static void test_file_round_trip(void **state)
{
	(void)state;
	sp_config *cfg = load_cfg(yaml);
	tmodel *m = tmodel_new(1, 16, 32, 8, 4);
	sp_state *st = make_state(cfg, m, 10);
	for (long s = 0; s < 5; s++)
		train_step(m, st, s);
	FILE *f = tmpfile();
	assert_non_null(f);
	assert_int_equal(sp_state_save(st, f), 0);
	rewind(f);
	tmodel *m2 = tmodel_new(1, 16, 32, 8, 4);
	sp_state *st2 = make_state(cfg, m2, 10);
	char err[256] = "";
	assert_int_equal(sp_state_load(st2, f, err, sizeof err), 0);
	fclose(f);
	assert_int_equal(sp_step(st2), 5);
	for (int i = 0; i < m->n; i++) {
		const uint8_t *a = sp_mask(st, i), *b = sp_mask(st2, i);
		assert_int_equal(a != NULL, b != NULL);
		if (a)
			assert_memory_equal(a, b, m->p[i].numel);
		assert_float_equal(sp_tensor_target(st, i), sp_tensor_target(st2, i), 0);
	}
	/* loading applied the masks to the new buffers */
	check_masked(m2, st2);
	sp_free(st);
	sp_free(st2);
	tmodel_free(m);
	tmodel_free(m2);
	sp_config_free(cfg);
}

static void expect_refused(sp_state *st, const uint8_t *buf, size_t len, const char *needle)
{
	char err[256] = "";
	uint64_t before = 0;
	for (int i = 0; i < sp_num_params(st); i++) {
		const uint8_t *mk = sp_mask(st, i);
		for (size_t k = 0; mk && k < st->t[i].numel; k++)
			before = before * 31 + mk[k];
	}
	assert_int_equal(sp_state_load_buf(st, buf, len, err, sizeof err), CS_ERR_FORMAT);
	if (!strstr(err, needle))
		fail_msg("message '%s' lacks '%s'", err, needle);
	uint64_t after = 0;
	for (int i = 0; i < sp_num_params(st); i++) {
		const uint8_t *mk = sp_mask(st, i);
		for (size_t k = 0; mk && k < st->t[i].numel; k++)
			after = after * 31 + mk[k];
	}
	assert_true(before == after);
}

static void test_corruption_refused(void **state)
{
	(void)state;
	sp_config *cfg = load_cfg(yaml);
	tmodel *m = tmodel_new(1, 16, 32, 8, 4);
	sp_state *st = make_state(cfg, m, 10);
	train_step(m, st, 0);
	train_step(m, st, 1);
	uint8_t *buf;
	size_t len;
	assert_int_equal(sp_state_save_buf(st, &buf, &len), 0);
	sp_state *st2 = make_state(cfg, m, 10);
	uint8_t *bad = malloc(len);
	memcpy(bad, buf, len);
	bad[0] = 'X';
	expect_refused(st2, bad, len, "bad magic");
	memcpy(bad, buf, len);
	bad[len / 2] ^= 0x10;
	expect_refused(st2, bad, len, "checksum mismatch");
	expect_refused(st2, buf, len - 7, "checksum mismatch");
	sp_free(st2);
	/* a config that sparsifies other tensors */
	sp_config *other = load_cfg("sparsity: {algorithm: rigl, sparsity: 0.8, update: {freq: 2},"
				    " param_filter: '*attn*.weight'}");
	sp_state *st3 = make_state(other, m, 10);
	expect_refused(st3, buf, len, "is not sparsified by this config");
	sp_free(st3);
	sp_config_free(other);
	free(bad);
	free(buf);
	sp_free(st);
	tmodel_free(m);
	sp_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_round_trip),
		cmocka_unit_test(test_corruption_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
