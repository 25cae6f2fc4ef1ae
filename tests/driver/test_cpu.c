/*
 * test_cpu.c - the cpu backend against the naive references of tests/support/kernel_ref.c
 * (written from docs/architecture.md section 5 alone: per-element nm_fmac_bits / nm_add_bits
 * loops over a dense weight and mask, in the documented order, with the token partition
 * re-derived from section 4.5). Random shapes (tiled and not, not dividing the mesh), sparsities 0..0.99 and
 * 1 (all zero), empty rows and columns, special values. Also: link bytes against the
 * protocol's word counts (section 6), re-derived here.
 * TEST_SEED replays; REGRESS=1 runs many more cases.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numerics.h"
#include "driver/csd.h"
#include "../support/kernel_ref.h"

/* a layer from the shared generator, asserting on failure; specials include values near
 * underflow and overflow */
static void layer_make(struct kref_layer *L, int T, int N, int K, double sparsity, int specials,
		       int empty_lines)
{
	assert_int_equal(kref_layer_make(L, T, N, K, sparsity,
					 specials ? KREF_EXTREMES : KREF_PLAIN, empty_lines),
			 0);
}

static int regress_mode(void)
{
	const char *r = getenv("REGRESS");
	return r && *r && strcmp(r, "0") != 0;
}

static int cmp_bits(const char *what, const float *got, const uint32_t *want, size_t n,
		    const char *uri, const struct kref_layer *L, double sp)
{
	for (size_t e = 0; e < n; e++) {
		uint32_t g = nm_f32_bits(got[e]);
		if (g != want[e]) {
			print_error("%s %s T=%d N=%d K=%d sparsity %.2f: element %zu: got 0x%08x, "
				    "want 0x%08x\n",
				    uri, what, L->T, L->N, L->K, sp, e, g, want[e]);
			return 1;
		}
	}
	return 0;
}

struct dev_cfg {
	int R, C, awords, bwords;
};

static void run_case(const struct dev_cfg *dc, int T, int N, int K, double sp, int specials,
		     int empty)
{
	char uri[96];
	snprintf(uri, sizeof uri, "cpu:%dx%d,awords=%d,bwords=%d", dc->R, dc->C, dc->awords,
		 dc->bwords);
	csd_dev *dev;
	int rc = csd_open(&dev, uri);
	if (rc)
		print_error("%s: %s\n", uri, csd_last_error(NULL));
	assert_int_equal(rc, CS_OK);
	struct kref_layer L;
	layer_make(&L, T, N, K, sp, specials, empty);
	size_t ny = (size_t)T * N, nx = (size_t)T * K, nz = (size_t)L.sp.nnz;
	float *y = malloc(ny * 4 + 4), *dx = malloc(nx * 4 + 4), *dw = malloc(nz * 4 + 4);
	uint32_t *ry = malloc(ny * 4 + 4), *rdx = malloc(nx * 4 + 4), *rdw = malloc(nz * 4 + 4);
	int bad = 0;

	rc = csd_forward(dev, y, L.x, &L.sp, T);
	if (rc)
		print_error("%s\n", csd_last_error(dev));
	assert_int_equal(rc, CS_OK);
	kref_forward(ry, &L);
	bad |= cmp_bits("forward", y, ry, ny, uri, &L, sp);

	rc = csd_backward(dev, dx, L.dy, &L.sp, T);
	if (rc)
		print_error("%s\n", csd_last_error(dev));
	assert_int_equal(rc, CS_OK);
	kref_backward(rdx, &L);
	bad |= cmp_bits("backward", dx, rdx, nx, uri, &L, sp);

	rc = csd_wgrad(dev, dw, L.dy, L.x, &L.sp, T);
	if (rc)
		print_error("%s\n", csd_last_error(dev));
	assert_int_equal(rc, CS_OK);
	assert_int_equal(kref_wgrad(rdw, &L, dc->R, dc->C, dc->awords, dc->bwords), 0);
	bad |= cmp_bits("wgrad", dw, rdw, nz, uri, &L, sp);

	free(y);
	free(dx);
	free(dw);
	free(ry);
	free(rdx);
	free(rdw);
	kref_layer_free(&L);
	csd_close(dev);
	assert_int_equal(bad, 0);
}

static const double sparsities[] = { 0.0, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0 };

/* default SRAM sizes: no tiling for these shapes; meshes that do and do not divide T */
static void test_default_sram(void **state)
{
	(void)state;
	static const struct dev_cfg meshes[] = { { 4, 4, 16384, 8192 }, { 1, 1, 16384, 8192 },
						 { 2, 3, 16384, 8192 }, { 3, 1, 16384, 8192 },
						 { 1, 5, 16384, 8192 } };
	int reps = regress_mode() ? 200 : 10;
	for (size_t m = 0; m < sizeof meshes / sizeof meshes[0]; m++)
		for (int r = 0; r < reps; r++) {
			double sp = sparsities[kref_rng_next() % 8];
			run_case(&meshes[m], kref_rng_int(1, 70), kref_rng_int(1, 40), kref_rng_int(1, 40), sp,
				 r & 1, r % 3 == 2);
		}
}

/* small SRAMs: token and output tiling, several tiles each way */
static void test_tiled(void **state)
{
	(void)state;
	static const struct dev_cfg meshes[] = { { 2, 2, 128, 64 },  { 2, 3, 96, 32 },
						 { 1, 1, 64, 16 },   { 3, 2, 200, 128 },
						 { 4, 4, 256, 64 },  { 1, 4, 64, 8 } };
	int reps = regress_mode() ? 200 : 10;
	for (size_t m = 0; m < sizeof meshes / sizeof meshes[0]; m++)
		for (int r = 0; r < reps; r++) {
			int K = kref_rng_int(1, meshes[m].awords < 60 ? meshes[m].awords : 60);
			double sp = sparsities[kref_rng_next() % 8];
			int N = kref_rng_int(1, meshes[m].awords < 70 ? meshes[m].awords : 70);
			run_case(&meshes[m], kref_rng_int(1, 90), N, K, sp, r & 1, r % 3 == 1);
		}
}

/* every sparsity on one tiled shape, with and without special values */
static void test_sparsity_sweep(void **state)
{
	(void)state;
	static const struct dev_cfg dc = { 2, 4, 512, 256 };
	for (size_t s = 0; s < 8; s++) {
		run_case(&dc, 77, 45, 33, sparsities[s], 0, 0);
		run_case(&dc, 77, 45, 33, sparsities[s], 1, 1);
	}
}

/* ---- link bytes: the words of section 6, counted here from the doc -------------------- */

/* host -> device words of one kernel call on a RxC mesh (see plan.c's stream comment);
 * span: wgrad RUNs span majors (pe), else a RUN per run of consecutive majors (the boards) */
static uint64_t words_out_expected(int kernel, const struct kref_layer *L, int R, int C, int aw,
				   int bw, int span, uint64_t *runs_out, uint64_t *nnz_out,
				   uint64_t *batches_out)
{
	int P = R * C;
	int din = kernel == 1 ? L->N : L->K, dout = kernel == 1 ? L->K : L->N;
	int bcap = kernel == 2 ? bw : bw / 2;
	int tp = kref_tp(L->T, P, din, aw, bcap);
	int dt = bcap / tp < dout ? bcap / tp : dout;
	uint64_t w = 1; /* CLEAR */
	w += kernel == 2 ? (uint64_t)P * 34 : 34; /* task tables */
	uint64_t runs = 0, nnz = 0, nbatches = 0;
	for (int t0 = 0; t0 < L->T; t0 += P * tp) {
		int n = L->T - t0 < P * tp ? L->T - t0 : P * tp;
		int tpk = (n + P - 1) / P;
		w += (uint64_t)P * (2 + ((size_t)tpk * din + 1) / 2);
		if (kernel != 2)
			w += 10 + 2; /* registers, SYNC: once per token tile */
		for (int o0 = 0, dprev = dt; o0 < dout; o0 += dt) {
			int o1 = o0 + dt < dout ? o0 + dt : dout;
			if (kernel == 2)
				w += (uint64_t)P * (2 + ((size_t)tpk * (o1 - o0) + 1) / 2) + 10 + 2;
			else {
				/* INJECT of SET_BBASE (d > 0), SET_BSTRIDE (width changes), START
				 * (d < 2: the bank's first use) */
				int d = o0 / dt;
				int nctl = (d > 0) + (d > 0 && o1 - o0 != dprev) + (d < 2);
				w += nctl ? 1 + (uint64_t)nctl : 0;
				dprev = o1 - o0;
			}
			uint64_t tile_nnz = 0, tile_runs = 0, inbatch = 0, batches = 0;
			/* RUNs (section 6): one spans consecutive nonempty majors (a step bit on
			 * the first nonzero of the next major; wgrad on pe: any majors, each
			 * position's val its major); a new one at the tile's (and a wgrad
			 * batch's) first nonzero, after 255 nonzeros, and (but wgrad on pe)
			 * where a major is skipped. rn: nonzeros in the open RUN (0: none) */
			uint64_t rn = 0;
			int last = -2;
			for (int m = 0; m < din; m++) {
				uint64_t cnt = 0;
				for (int o = o0; o < o1; o++) {
					int i = kernel == 1 ? m : o, j = kernel == 1 ? o : m;
					cnt += L->mask[(size_t)i * L->K + j] != 0;
				}
				/* wgrad batches cut runs at min(bw/2, 256) positions (a batch's
				 * results must fit the host port's 256-word COLLECT buffer) */
				uint64_t cap = (uint64_t)bw / 2 < 256 ? (uint64_t)bw / 2 : 256;
				while (cnt) {
					uint64_t part = cnt;
					if (kernel == 2 && part > cap - inbatch)
						part = cap - inbatch;
					for (uint64_t left = part; left;) {
						if (rn && (rn == 255 || ((kernel != 2 || !span) &&
									 m != last && m != last + 1)))
							rn = 0;
						if (!rn)
							tile_runs++;
						uint64_t take = left < 255 - rn ? left : 255 - rn;
						rn += take;
						left -= take;
						last = m;
					}
					tile_nnz += part;
					cnt -= part;
					if (kernel == 2 && (inbatch += part) == cap) {
						batches++;
						inbatch = 0;
						rn = 0;
					}
				}
			}
			if (kernel == 2 && inbatch)
				batches++;
			runs += tile_runs;
			nnz += tile_nnz;
			w += tile_nnz + tile_runs;
			if (kernel == 2) {
				w += batches * 4; /* INJECT END + COLLECT */
				nbatches += batches;
			} else {
				w += 2 + 2; /* SYNC, READ-and-clear of every PE (pe 0xff) */
			}
		}
	}
	*runs_out = runs;
	*nnz_out = nnz;
	*batches_out = nbatches;
	return w;
}

static void test_link_bytes(void **state)
{
	(void)state;
	static const struct dev_cfg cfgs[] = { { 4, 4, 16384, 8192 }, { 2, 3, 128, 64 },
					       { 1, 2, 64, 16 } };
	/* pe (wgrad RUNs across majors) and pe_lite (the boards' stream, a RUN per run of
	 * consecutive majors) */
	for (size_t c = 0; c < 2 * (sizeof cfgs / sizeof cfgs[0]); c++) {
		const struct dev_cfg *dc = &cfgs[c % (sizeof cfgs / sizeof cfgs[0])];
		int lite = c >= sizeof cfgs / sizeof cfgs[0];
		char uri[96];
		/* tune=0: the widest output tiles, as the count below derives them */
		snprintf(uri, sizeof uri, "cpu:%dx%d,awords=%d,bwords=%d,tune=0%s", dc->R, dc->C,
			 dc->awords, dc->bwords, lite ? ",pe=lite" : "");
		csd_dev *dev;
		assert_int_equal(csd_open(&dev, uri), CS_OK);
		int64_t overhead[3] = { -1, -1, -1 };
		for (size_t s = 0; s < 8; s++) {
			struct kref_layer L;
			/* a shape where the 255-nonzero run cut happens at the default size */
			int big = dc == &cfgs[0];
			layer_make(&L, big ? 50 : 37, big ? 600 : 41, big ? 20 : 29, sparsities[s], 0,
				   0);
			float *out = malloc(((size_t)L.T * (L.N + L.K) + (size_t)L.sp.nnz + 1) * 4);
			for (int k = 0; k < 3; k++) {
				csd_reset_counters(dev);
				int rc = k == 0   ? csd_forward(dev, out, L.x, &L.sp, L.T)
					 : k == 1 ? csd_backward(dev, out, L.dy, &L.sp, L.T)
						  : csd_wgrad(dev, out, L.dy, L.x, &L.sp, L.T);
				assert_int_equal(rc, CS_OK);
				csd_counters ct;
				assert_int_equal(csd_get_counters(dev, &ct), CS_OK);
				uint64_t runs, nnz, batches;
				uint64_t w = words_out_expected(k, &L, dc->R, dc->C, dc->awords,
								dc->bwords, !lite, &runs, &nnz,
								&batches);
				if (ct.link_bytes_out != 4 * w)
					print_error("%s kernel %d sparsity %.2f: %llu bytes, want %llu\n", uri, k, sparsities[s], (unsigned long long)ct.link_bytes_out, (unsigned long long)(4 * w));
				assert_int_equal(ct.link_bytes_out, 4 * w);
				assert_int_equal(ct.nnz_streamed, nnz);
				assert_int_equal(ct.weight_bytes, 4 * (nnz + runs));
				/* zeros never cross: what is not 4 bytes per nonzero and run (and,
				 * for wgrad, 16 bytes per batch of results) is the same at every
				 * sparsity */
				int64_t oh = (int64_t)ct.link_bytes_out -
					     4 * (int64_t)(nnz + runs + 4 * batches);
				if (overhead[k] < 0)
					overhead[k] = oh;
				assert_int_equal(oh, overhead[k]);
				/* and nonzeros are sent once per token tile and output tile, never
				 * more: nnz is a multiple of the layer's nnz */
				if (L.sp.nnz)
					assert_int_equal(nnz % (uint64_t)L.sp.nnz, 0);
				assert_true(ct.cycles > 0);
				assert_true(ct.mac_busy <= ct.pe_cycles);
			}
			free(out);
			kref_layer_free(&L);
		}
		csd_close(dev);
	}
}

static void test_sparse_build(void **state)
{
	(void)state;
	struct kref_layer L;
	layer_make(&L, 3, 17, 23, 0.6, 1, 1);
	csd_sparse *sp = &L.sp;
	int64_t k = 0;
	for (int i = 0; i < L.N; i++) {
		assert_int_equal(sp->row_ptr[i], k);
		for (int j = 0; j < L.K; j++)
			if (L.mask[(size_t)i * L.K + j]) {
				assert_int_equal(sp->col[k], j);
				assert_int_equal(sp->val[k], kref_wval(&L, (size_t)i * L.K + j));
				k++;
			}
	}
	assert_int_equal(sp->nnz, k);
	for (int j = 0; j < L.K; j++)
		for (int64_t c = sp->col_ptr[j]; c < sp->col_ptr[j + 1]; c++) {
			assert_int_equal(sp->col[sp->csr_pos[c]], j);
			assert_int_equal(sp->val[sp->csr_pos[c]], sp->cval[c]);
			if (c > sp->col_ptr[j])
				assert_true(sp->row[c] > sp->row[c - 1]);
		}
	/* update_values: new values, same pattern */
	for (size_t e = 0; e < (size_t)L.N * L.K; e++)
		L.wf[e] = -2.0f * L.wf[e] + 1.0f;
	assert_int_equal(csd_sparse_update_values(sp, L.wf), CS_OK);
	for (int64_t c = 0; c < sp->nnz; c++)
		assert_int_equal(sp->cval[c], sp->val[sp->csr_pos[c]]);
	k = 0;
	for (int i = 0; i < L.N; i++)
		for (int j = 0; j < L.K; j++)
			if (L.mask[(size_t)i * L.K + j])
				assert_int_equal(sp->val[k++], kref_wval(&L, (size_t)i * L.K + j));
	/* without a mask: keep the nonzero bf16 values */
	csd_sparse s2;
	float w2[6] = { 0.0f, -0.0f, 1e-45f, 3.0f, 0.0f, -1.0f };
	assert_int_equal(csd_sparse_from_dense(&s2, w2, NULL, 2, 3), CS_OK);
	assert_int_equal(s2.nnz, 2);
	assert_int_equal(s2.col[0], 0);
	assert_int_equal(s2.row_ptr[1], 0);
	assert_int_equal(s2.col[1], 2);
	csd_sparse_free(&s2);
	kref_layer_free(&L);
}

static void test_errors(void **state)
{
	(void)state;
	csd_dev *dev;
	assert_int_equal(csd_open(&dev, "bogus"), CS_ERR_NOT_FOUND);
	assert_null(dev);
	assert_non_null(strstr(csd_last_error(NULL), "bogus"));
	assert_int_equal(csd_open(&dev, "cpu:0x4"), CS_ERR_INVALID);
	assert_int_equal(csd_open(&dev, "cpu:4x4,bwords=1000"), CS_ERR_INVALID);
	assert_int_equal(csd_open(&dev, "sim:2x2,model,bogus"), CS_ERR_INVALID);
	assert_non_null(strstr(csd_last_error(NULL), "sim"));
	assert_int_equal(csd_open(&dev, "sim:2x2,model,timeout=x"), CS_ERR_INVALID);
	assert_int_equal(csd_open(&dev, "cpu:2x2,awords=64"), CS_OK);
	csd_info info;
	assert_int_equal(csd_get_info(dev, &info), CS_OK);
	assert_string_equal(info.kind, "cpu");
	assert_int_equal(info.rows, 2);
	assert_int_equal(info.pes, 4);
	assert_int_equal(info.a_words, 64);
	assert_int_equal(info.b_words, 8192);
	/* a layer whose one token does not fit SRAM A */
	struct kref_layer L;
	layer_make(&L, 4, 3, 65, 0.5, 0, 0);
	float y[12];
	assert_int_equal(csd_forward(dev, y, L.x, &L.sp, 4), CS_ERR_RANGE);
	assert_non_null(strstr(csd_last_error(dev), "SRAM A"));
	assert_int_equal(csd_forward(dev, y, L.x, &L.sp, 0), CS_ERR_INVALID);
	assert_int_equal(csd_forward(dev, NULL, L.x, &L.sp, 4), CS_ERR_INVALID);
	kref_layer_free(&L);
	csd_close(dev);
}

/* a bf16 of random sign and mantissa with exponent in [e, e + 3] (unbiased) */
static uint16_t bf16_exp(int e)
{
	uint64_t r = kref_rng_next();
	unsigned be = (unsigned)(e + (int)(r & 3) + 127);
	return (uint16_t)((r >> 8 & 0x8000) | be << 7 | (r >> 16 & 0x7f));
}

/*
 * The unchecked paths of the cpu backend (backend_cpu.c chain_safe: chains whose operand
 * exponents keep every partial sum normal and finite) at the edges of their conditions:
 * x, dy and the weights with exponents whose sums straddle the underflow bound (-112:
 * products down to 2^-126) and the overflow bound, so that chains just inside take the
 * fast paths and those just outside reach subnormal or infinite partial sums that the
 * checked paths must handle. All three kernels against the references.
 */
static void test_range_edges(void **state)
{
	(void)state;
	static const struct dev_cfg dc = { 4, 4, 4096, 2048 };
	char uri[96];
	snprintf(uri, sizeof uri, "cpu:%dx%d,awords=%d,bwords=%d", dc.R, dc.C, dc.awords, dc.bwords);
	csd_dev *dev;
	assert_int_equal(csd_open(&dev, uri), CS_OK);
	static const int sums[] = { -122, -116, -114, -113, -112, -111, -110, -104,
				    112,  116,  118,  119,  120,  121,  124 };
	for (size_t si = 0; si < sizeof sums / sizeof sums[0]; si++)
		for (int split = 0; split < 2; split++) {
			struct kref_layer L;
			layer_make(&L, 48, 24, 20, 0.5, 0, 0);
			/* wgrad sums ex + ed, forward ex + ed (weights take ed), backward 2 ed */
			int ex = split ? sums[si] / 2 : sums[si] < 0 ? sums[si] + 60 : sums[si] - 60;
			int ed = sums[si] - ex;
			for (size_t e = 0; e < (size_t)L.T * L.K; e++)
				L.x[e] = (kref_rng_next() & 7) ? bf16_exp(ex) : 0;
			for (size_t e = 0; e < (size_t)L.T * L.N; e++)
				L.dy[e] = (kref_rng_next() & 7) ? bf16_exp(ed) : 0x8000;
			for (size_t e = 0; e < (size_t)L.N * L.K; e++)
				L.wf[e] = nm_bf16_to_f32(bf16_exp(ed));
			assert_int_equal(csd_sparse_update_values(&L.sp, L.wf), CS_OK);
			size_t nz = (size_t)L.sp.nnz, ny = (size_t)L.T * L.N, nx = (size_t)L.T * L.K;
			float *out = malloc((nz + ny + nx) * 4 + 4);
			uint32_t *ref = malloc((nz + ny + nx) * 4 + 4);
			char what[64];
			snprintf(what, sizeof what, "exponents %d + %d", ex, ed);
			assert_int_equal(csd_wgrad(dev, out, L.dy, L.x, &L.sp, L.T), CS_OK);
			assert_int_equal(kref_wgrad(ref, &L, dc.R, dc.C, dc.awords, dc.bwords), 0);
			assert_int_equal(cmp_bits("wgrad", out, ref, nz, what, &L, 0.5), 0);
			assert_int_equal(csd_forward(dev, out, L.x, &L.sp, L.T), CS_OK);
			kref_forward(ref, &L);
			assert_int_equal(cmp_bits("forward", out, ref, ny, what, &L, 0.5), 0);
			assert_int_equal(csd_backward(dev, out, L.dy, &L.sp, L.T), CS_OK);
			kref_backward(ref, &L);
			assert_int_equal(cmp_bits("backward", out, ref, nx, what, &L, 0.5), 0);
			free(out);
			free(ref);
			kref_layer_free(&L);
		}
	csd_close(dev);
}

/* the scalar fallback (no AVX2) gives the same bits */
static void test_scalar_path(void **state)
{
	(void)state;
	setenv("CSD_CPU_SIMD", "0", 1);
	static const struct dev_cfg dc = { 2, 4, 512, 256 };
	run_case(&dc, 50, 20, 30, 0.5, 1, 0);
	static const struct dev_cfg dc2 = { 3, 3, 512, 256 };
	run_case(&dc2, 50, 20, 30, 0.5, 1, 0);
	unsetenv("CSD_CPU_SIMD");
}

int main(void)
{
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 4242;
	kref_rng_state = seed * 0x9e3779b97f4a7c15ull + 7;
	printf("seed %llu (set TEST_SEED to replay)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_build),  cmocka_unit_test(test_errors),
		cmocka_unit_test(test_default_sram),  cmocka_unit_test(test_tiled),
		cmocka_unit_test(test_sparsity_sweep), cmocka_unit_test(test_link_bytes),
		cmocka_unit_test(test_scalar_path),   cmocka_unit_test(test_range_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
