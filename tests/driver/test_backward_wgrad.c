/*
 * test_backward_wgrad.c - csd_backward_wgrad (host/driver/plan.c PLAN_BWG): a layer's
 * backward and weight-gradient kernels in one call with dY uploaded once and resident in
 * A for both. On the Verilated mesh of every shipping PE implementation and on the cpu
 * backend, dx must equal the backward reference and dw the wgrad reference taken over the
 * backward's token partition, bit for bit (random layers, special values, empty rows and
 * columns; small SRAMs force token and output tiling); and the fused call moves fewer link
 * bytes than the two calls it replaces (no second upload of dY). Seed fixed (TEST_SEED
 * overrides it). Skips a mesh whose Verilated model is missing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/csd.h"
#include "../support/kernel_ref.h"

struct geom {
	const char *uri; /* after "sim:" / "cpu:" */
	int R, C, awords, bwords;
	int cases, max_t, max_f;
};

static const struct geom geoms[] = {
	{ "2x2", 2, 2, 16384, 8192, 4, 60, 90 },
	{ "2x3,awords=512,bwords=256", 2, 3, 512, 256, 6, 60, 90 }, /* token + output tiles */
	{ "1x1,awords=512,bwords=256", 1, 1, 512, 256, 3, 20, 60 },
	{ "4x4", 4, 4, 16384, 8192, 2, 70, 60 },
	{ "1x1,pe=lite", 1, 1, 32768, 512, 2, 12, 40 },       /* the default bitstream */
	{ "2x2,pe=micro_mt", 2, 2, 8192, 4096, 1, 8, 12 },    /* the 2x2 board (slow) */
};

static long compare(const float *got, const uint32_t *want, size_t n, const char *what)
{
	long bad = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t g;
		memcpy(&g, &got[i], 4);
		if (g != want[i] && bad++ < 3)
			print_message("%s[%zu]: got 0x%08x want 0x%08x\n", what, i, g, want[i]);
	}
	return bad;
}

static void test_backward_wgrad(void **state)
{
	(void)state;
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 1;
	static const double sps[] = { 0.0, 0.5, 0.9, 0.97 };
	print_message("seed %llu\n", (unsigned long long)seed);
	for (size_t gi = 0; gi < sizeof geoms / sizeof geoms[0]; gi++) {
		const struct geom *g = &geoms[gi];
		char uri[96], ref_uri[96];
		snprintf(uri, sizeof uri, "sim:%s", g->uri);
		snprintf(ref_uri, sizeof ref_uri, "cpu:%s", g->uri);
		csd_dev *dev = NULL, *ref = NULL;
		if (csd_open(&dev, uri)) {
			print_message("%s: %s (skipped)\n", uri, csd_last_error(NULL));
			continue;
		}
		assert_int_equal(csd_open(&ref, ref_uri), CS_OK);
		for (int c = 0; c < g->cases; c++) {
			kref_rng_state = seed * 1000003u + gi * 7919u + (uint64_t)c;
			int T = kref_rng_int(1, g->max_t), K = kref_rng_int(1, g->max_f),
			    N = kref_rng_int(1, g->max_f);
			double sp = sps[kref_rng_int(0, 3)];
			struct kref_layer L;
			assert_int_equal(kref_layer_make(&L, T, N, K, sp, c % 3 == 2 ? KREF_SPECIALS
									 : KREF_PLAIN,
							 c % 2),
					 0);
			size_t nnz = (size_t)L.sp.nnz;
			uint32_t *dx_ref = malloc((size_t)T * K * 4 + 4);
			uint32_t *dw_ref = malloc(nnz * 4 + 4);
			float *dx = malloc((size_t)T * K * 4 + 4), *dw = malloc(nnz * 4 + 4);
			assert_non_null(dx_ref);
			assert_non_null(dw_ref);
			assert_non_null(dx);
			assert_non_null(dw);
			kref_backward(dx_ref, &L);
			/* the backward's partition: din = N, one bank of B */
			int tp = kref_tp(T, g->R * g->C, N, g->awords, g->bwords / 2);
			assert_int_equal(kref_wgrad_tp(dw_ref, &L, g->R, g->C, tp), 0);
			csd_dev *devs[2] = { dev, ref };
			csd_counters fused[2];
			for (int d = 0; d < 2; d++) {
				memset(dx, 0xa5, (size_t)T * K * 4);
				memset(dw, 0x5a, nnz * 4);
				csd_reset_counters(devs[d]);
				int rc = csd_backward_wgrad(devs[d], dx, dw, L.dy, L.x, &L.sp, T);
				if (rc)
					print_message("%s: %s\n", d ? ref_uri : uri,
						      csd_last_error(devs[d]));
				assert_int_equal(rc, CS_OK);
				csd_get_counters(devs[d], &fused[d]);
				char what[160];
				snprintf(what, sizeof what, "%s T=%d K=%d N=%d s=%.2f dx",
					 d ? ref_uri : uri, T, K, N, sp);
				long bad = compare(dx, dx_ref, (size_t)T * K, what);
				what[strlen(what) - 2] = 0;
				strcat(what, "dw");
				bad += compare(dw, dw_ref, nnz, what);
				assert_int_equal(bad, 0);
			}
			/* the link bytes of the fused call equal on both backends (one stream) and
			 * are fewer than those of the two separate calls by dY's upload */
			assert_true(fused[0].link_bytes_out == fused[1].link_bytes_out);
			csd_counters two;
			csd_reset_counters(ref);
			assert_int_equal(csd_backward(ref, dx, L.dy, &L.sp, T), CS_OK);
			assert_int_equal(csd_wgrad(ref, dw, L.dy, L.x, &L.sp, T), CS_OK);
			csd_get_counters(ref, &two);
			assert_true(fused[1].act_bytes_out < two.act_bytes_out);
			free(dx_ref);
			free(dw_ref);
			free(dx);
			free(dw);
			kref_layer_free(&L);
		}
		print_message("%s: %d layers bit-exact (dx, dw) with the references\n", uri,
			      g->cases);
		csd_close(dev);
		csd_close(ref);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backward_wgrad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
