/*
 * test_cs_cpu.c - host/common/cs_cpu.c: the OpenBLAS kernel decision over a table of core
 * names x CPU features x OPENBLAS_CORETYPE, and the sgemm check of the kernels loaded here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/cs_cpu.h"

#define AVX2_FMA (CS_CPU_AVX | CS_CPU_AVX2 | CS_CPU_FMA)
#define AVX512 (AVX2_FMA | CS_CPU_AVX512F | CS_CPU_AVX512BW | CS_CPU_AVX512DQ | CS_CPU_AVX512VL)

static void test_decision_table(void **state)
{
	(void)state;
	static const struct {
		const char *picked;
		unsigned features;
		const char *user;
		cs_blas_action action;
		const char *core;
	} rows[] = {
		/* Intel Xeon with AVX-512 and BF16 that OpenBLAS 0.3.21 does not know */
		{ "Prescott", AVX512 | CS_CPU_AVX512BF16, NULL, CS_BLAS_SWITCH, "Cooperlake" },
		{ "Prescott", AVX512, NULL, CS_BLAS_SWITCH, "SkylakeX" },
		/* AMD Zen 5 picked as Haswell */
		{ "Haswell", AVX512 | CS_CPU_AVX512BF16 | CS_CPU_AMD, NULL, CS_BLAS_SWITCH,
		  "Cooperlake" },
		/* already the best (Zen 4 here picks Cooperlake) */
		{ "Cooperlake", AVX512 | CS_CPU_AVX512BF16 | CS_CPU_AMD, NULL, CS_BLAS_KEEP,
		  "Cooperlake" },
		{ "SkylakeX", AVX512, NULL, CS_BLAS_KEEP, "SkylakeX" },
		{ "SkylakeX", AVX512 | CS_CPU_AVX512BF16, NULL, CS_BLAS_KEEP, "SkylakeX" },
		{ "SapphireRapids", AVX512 | CS_CPU_AVX512BF16, NULL, CS_BLAS_KEEP,
		  "SapphireRapids" },
		/* AVX2 machines */
		{ "Prescott", AVX2_FMA, NULL, CS_BLAS_SWITCH, "Haswell" },
		{ "Sandybridge", AVX2_FMA | CS_CPU_AMD, NULL, CS_BLAS_SWITCH, "Zen" },
		{ "Zen", AVX2_FMA | CS_CPU_AMD, NULL, CS_BLAS_KEEP, "Zen" },
		{ "Haswell", AVX2_FMA, NULL, CS_BLAS_KEEP, "Haswell" },
		/* AVX-512F alone (no BW/DQ/VL, Knights Landing): no SkylakeX kernels */
		{ "Haswell", AVX2_FMA | CS_CPU_AVX512F, NULL, CS_BLAS_KEEP, "Haswell" },
		/* OS without AVX state, or no AVX2: nothing better to choose */
		{ "Prescott", 0, NULL, CS_BLAS_KEEP, "Prescott" },
		{ "Sandybridge", CS_CPU_AVX, NULL, CS_BLAS_KEEP, "Sandybridge" },
		/* a name this table does not know may be newer: left alone */
		{ "Zen5", AVX512 | CS_CPU_AMD, NULL, CS_BLAS_KEEP, "Zen5" },
		/* the user's OPENBLAS_CORETYPE is respected, even a weaker one */
		{ "Haswell", AVX512, "Haswell", CS_BLAS_USER, "Haswell" },
		{ "Prescott", AVX512 | CS_CPU_AVX512BF16, "Prescott", CS_BLAS_USER, "Prescott" },
		/* set but empty counts as unset */
		{ "Prescott", AVX512, "", CS_BLAS_SWITCH, "SkylakeX" },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *core = NULL;
		cs_blas_action a = cs_blas_decide(rows[i].picked, rows[i].features, rows[i].user,
						  &core);
		if (a != rows[i].action || strcmp(core, rows[i].core)) {
			fprintf(stderr, "row %zu (%s, features 0x%x, user %s): got %d %s, want %d "
				"%s\n", i, rows[i].picked, rows[i].features,
				rows[i].user ? rows[i].user : "unset", a, core, rows[i].action,
				rows[i].core);
			fail();
		}
	}
}

static void test_core_levels(void **state)
{
	(void)state;
	assert_int_equal(cs_blas_core_level("Prescott"), 1);
	assert_int_equal(cs_blas_core_level("haswell"), 3);
	assert_int_equal(cs_blas_core_level("Cooperlake"), 4);
	assert_int_equal(cs_blas_core_level("NoSuchCore"), 0);
	assert_int_equal(cs_blas_core_level(NULL), 0);
	/* every core this table can choose is one it ranks */
	unsigned fs[] = { AVX2_FMA, AVX2_FMA | CS_CPU_AMD, AVX512, AVX512 | CS_CPU_AVX512BF16 };
	for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
		assert_true(cs_blas_core_level(cs_blas_best_core(fs[i])) >= 3);
}

/* The kernels loaded in this process compute a small product right. */
static void test_loaded_sgemm(void **state)
{
	(void)state;
	double e = cs_blas_check_sgemm();
	char model[128], line[320];
	cs_cpu_model(model, sizeof model);
	cs_blas_describe(line, sizeof line);
	printf("%s; %s; features 0x%x; sgemm relative error %.3g\n", model, line,
	       cs_cpu_features(), e);
	assert_true(e <= 1e-5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decision_table),
		cmocka_unit_test(test_core_levels),
		cmocka_unit_test(test_loaded_sgemm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
