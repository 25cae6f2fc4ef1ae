/*
 * test_cpu.c - the cpu backend against a naive reference written here from
 * docs/architecture.md section 5 alone: per-element nm_fmac_bits / nm_add_bits loops over a
 * dense weight and mask, in the documented order, with the token partition re-derived from
 * section 4.5. Random shapes (tiled and not, not dividing the mesh), sparsities 0..0.99 and
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

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static double rng_unif(void) { return (double)(rng_next() >> 11) / 9007199254740992.0; }
static int rng_int(int lo, int hi) { return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1)); }

static int regress_mode(void)
{
	const char *r = getenv("REGRESS");
	return r && *r && strcmp(r, "0") != 0;
}

/* a random bf16: mostly moderate normals, sometimes wide exponents or specials */
static uint16_t rand_bf16(int specials)
{
	uint64_t r = rng_next();
	if (specials && (r & 63) == 0) {
		static const uint16_t sp[] = { 0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x0001,
					       0x8040, 0x0080, 0x7f7f, 0x00ff };
		return sp[(r >> 8) % (sizeof sp / sizeof sp[0])];
	}
	if (specials && (r & 63) == 1) /* near underflow or overflow */
		return (uint16_t)((r >> 8 & 0x8000) | (((r >> 16) & 1) ? 0x0080 + (r >> 20 & 0x3ff)
								       : 0x7e00 + (r >> 20 & 0x17f)));
	float f = (float)((rng_unif() * 2 - 1) * ldexp(1.0, (int)(r >> 40 & 7) - 3));
	return nm_bf16_from_f32(f);
}

struct layer {
	int T, N, K; /* W [N, K] */
	uint8_t *mask;
	float *wf;     /* dense fp32 weights given to csd_sparse_from_dense */
	uint16_t *wb;  /* their bf16 */
	uint16_t *x;   /* [T, K] */
	uint16_t *dy;  /* [T, N] */
	csd_sparse sp;
};

static void layer_make(struct layer *L, int T, int N, int K, double sparsity, int specials,
		       int empty_lines)
{
	L->T = T;
	L->N = N;
	L->K = K;
	L->mask = malloc((size_t)N * K);
	L->wf = malloc((size_t)N * K * sizeof *L->wf);
	L->wb = malloc((size_t)N * K * sizeof *L->wb);
	L->x = malloc((size_t)T * K * 2);
	L->dy = malloc((size_t)T * N * 2);
	assert_non_null(L->mask);
	for (size_t e = 0; e < (size_t)N * K; e++) {
		L->mask[e] = rng_unif() >= sparsity;
		uint16_t b = rand_bf16(specials);
		if ((rng_next() & 31) == 0)
			b = (rng_next() & 1) ? 0x8000 : 0; /* kept zeros still stream */
		L->wb[e] = b;
		L->wf[e] = nm_bf16_to_f32(b);
		if ((b & 0x7f80) == 0 && (b & 0x7f)) /* a bf16 subnormal: give its exact fp32 */
			L->wf[e] = ldexpf((float)(b & 0x7f), -133) * ((b & 0x8000) ? -1.0f : 1.0f);
		if ((b & 0x7f80) == 0x7f80 && (b & 0x7f))
			L->wf[e] = NAN;
	}
	if (empty_lines) {
		for (int i = 0; i < N; i += 3)
			memset(L->mask + (size_t)i * K, 0, (size_t)K);
		for (int j = 1; j < K; j += 4)
			for (int i = 0; i < N; i++)
				L->mask[(size_t)i * K + j] = 0;
	}
	for (size_t e = 0; e < (size_t)T * K; e++)
		L->x[e] = rand_bf16(specials);
	for (size_t e = 0; e < (size_t)T * N; e++)
		L->dy[e] = rand_bf16(specials);
	assert_int_equal(csd_sparse_from_dense(&L->sp, L->wf, L->mask, N, K), CS_OK);
}

static void layer_free(struct layer *L)
{
	csd_sparse_free(&L->sp);
	free(L->mask);
	free(L->wf);
	free(L->wb);
	free(L->x);
	free(L->dy);
}

/* the weight the device sees: bf16 rounding of wf (subnormals flushed by the numerics) */
static uint16_t wval(const struct layer *L, size_t e)
{
	return nm_bf16_from_f32(L->wf[e]);
}

static void ref_forward(uint32_t *y, const struct layer *L)
{
	for (int t = 0; t < L->T; t++)
		for (int i = 0; i < L->N; i++) {
			uint32_t acc = 0;
			for (int j = 0; j < L->K; j++)
				if (L->mask[(size_t)i * L->K + j])
					acc = nm_fmac_bits(wval(L, (size_t)i * L->K + j),
							   L->x[(size_t)t * L->K + j], acc);
			y[(size_t)t * L->N + i] = acc;
		}
}

static void ref_backward(uint32_t *dx, const struct layer *L)
{
	for (int t = 0; t < L->T; t++)
		for (int j = 0; j < L->K; j++) {
			uint32_t acc = 0;
			for (int i = 0; i < L->N; i++)
				if (L->mask[(size_t)i * L->K + j])
					acc = nm_fmac_bits(wval(L, (size_t)i * L->K + j),
							   L->dy[(size_t)t * L->N + i], acc);
			dx[(size_t)t * L->K + j] = acc;
		}
}

/* section 4.5: tokens per PE of a full tile, from the SRAM sizes */
static int ref_tp(int T, int P, int din, int awords, int bcap)
{
	int tp = (T + P - 1) / P;
	if (tp > awords / din)
		tp = awords / din;
	if (tp > bcap)
		tp = bcap;
	return tp;
}

/* dw in CSR order (row-major over the mask) */
static void ref_wgrad(uint32_t *dw, const struct layer *L, int R, int C, int awords, int bwords)
{
	int P = R * C, tp = ref_tp(L->T, P, L->K, awords, bwords);
	uint32_t *p = malloc((size_t)P * sizeof *p), *s = malloc((size_t)R * sizeof *s);
	size_t k = 0;
	for (int i = 0; i < L->N; i++)
		for (int j = 0; j < L->K; j++) {
			if (!L->mask[(size_t)i * L->K + j])
				continue;
			uint32_t total = 0;
			for (int t0 = 0, tile = 0; t0 < L->T; t0 += P * tp, tile++) {
				int n = L->T - t0 < P * tp ? L->T - t0 : P * tp;
				int tpk = (n + P - 1) / P;
				for (int q = 0; q < P; q++) {
					uint32_t acc = 0;
					for (int u = 0; u < tpk; u++) {
						int t = t0 + q * tpk + u;
						uint16_t a = t < L->T ? L->x[(size_t)t * L->K + j] : 0;
						uint16_t b = t < L->T ? L->dy[(size_t)t * L->N + i] : 0;
						acc = nm_fmac_bits(a, b, acc);
					}
					p[q] = acc;
				}
				for (int r = 0; r < R; r++) {
					uint32_t v = p[r * C + C - 1];
					for (int c = C - 2; c >= 0; c--)
						v = nm_add_bits(v, p[r * C + c]);
					s[r] = v;
				}
				uint32_t v = s[R - 1];
				for (int r = R - 2; r >= 0; r--)
					v = nm_add_bits(v, s[r]);
				total = tile == 0 ? v : nm_add_bits(total, v);
			}
			dw[k++] = total;
		}
	free(p);
	free(s);
}

static int cmp_bits(const char *what, const float *got, const uint32_t *want, size_t n,
		    const char *uri, const struct layer *L, double sp)
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
	struct layer L;
	layer_make(&L, T, N, K, sp, specials, empty);
	size_t ny = (size_t)T * N, nx = (size_t)T * K, nz = (size_t)L.sp.nnz;
	float *y = malloc(ny * 4 + 4), *dx = malloc(nx * 4 + 4), *dw = malloc(nz * 4 + 4);
	uint32_t *ry = malloc(ny * 4 + 4), *rdx = malloc(nx * 4 + 4), *rdw = malloc(nz * 4 + 4);
	int bad = 0;

	rc = csd_forward(dev, y, L.x, &L.sp, T);
	if (rc)
		print_error("%s\n", csd_last_error(dev));
	assert_int_equal(rc, CS_OK);
	ref_forward(ry, &L);
	bad |= cmp_bits("forward", y, ry, ny, uri, &L, sp);

	rc = csd_backward(dev, dx, L.dy, &L.sp, T);
	if (rc)
		print_error("%s\n", csd_last_error(dev));
	assert_int_equal(rc, CS_OK);
	ref_backward(rdx, &L);
	bad |= cmp_bits("backward", dx, rdx, nx, uri, &L, sp);

	rc = csd_wgrad(dev, dw, L.dy, L.x, &L.sp, T);
	if (rc)
		print_error("%s\n", csd_last_error(dev));
	assert_int_equal(rc, CS_OK);
	ref_wgrad(rdw, &L, dc->R, dc->C, dc->awords, dc->bwords);
	bad |= cmp_bits("wgrad", dw, rdw, nz, uri, &L, sp);

	free(y);
	free(dx);
	free(dw);
	free(ry);
	free(rdx);
	free(rdw);
	layer_free(&L);
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
			double sp = sparsities[rng_next() % 8];
			run_case(&meshes[m], rng_int(1, 70), rng_int(1, 40), rng_int(1, 40), sp,
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
			int K = rng_int(1, meshes[m].awords < 60 ? meshes[m].awords : 60);
			double sp = sparsities[rng_next() % 8];
			int N = rng_int(1, meshes[m].awords < 70 ? meshes[m].awords : 70);
			run_case(&meshes[m], rng_int(1, 90), N, K, sp, r & 1, r % 3 == 1);
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

/* host -> device words of one kernel call on a RxC mesh (see plan.c's stream comment) */
static uint64_t words_out_expected(int kernel, const struct layer *L, int R, int C, int aw,
				   int bw, uint64_t *runs_out, uint64_t *nnz_out, uint64_t *batches_out)
{
	int P = R * C;
	int din = kernel == 1 ? L->N : L->K, dout = kernel == 1 ? L->K : L->N;
	int bcap = kernel == 2 ? bw : bw / 2;
	int tp = ref_tp(L->T, P, din, aw, bcap);
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
			 * the first nonzero of the next major); a new one at the tile's (and a
			 * wgrad batch's) first nonzero, after 255 nonzeros, and where a major
			 * is skipped. rn: nonzeros in the open RUN (0: none) */
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
						if (rn && (rn == 255 || (m != last && m != last + 1)))
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
	for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
		const struct dev_cfg *dc = &cfgs[c];
		char uri[96];
		snprintf(uri, sizeof uri, "cpu:%dx%d,awords=%d,bwords=%d", dc->R, dc->C, dc->awords,
			 dc->bwords);
		csd_dev *dev;
		assert_int_equal(csd_open(&dev, uri), CS_OK);
		int64_t overhead[3] = { -1, -1, -1 };
		for (size_t s = 0; s < 8; s++) {
			struct layer L;
			/* a shape where the 255-nonzero run cut happens at the default size */
			int big = c == 0;
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
								dc->bwords, &runs, &nnz, &batches);
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
			layer_free(&L);
		}
		csd_close(dev);
	}
}

static void test_sparse_build(void **state)
{
	(void)state;
	struct layer L;
	layer_make(&L, 3, 17, 23, 0.6, 1, 1);
	csd_sparse *sp = &L.sp;
	int64_t k = 0;
	for (int i = 0; i < L.N; i++) {
		assert_int_equal(sp->row_ptr[i], k);
		for (int j = 0; j < L.K; j++)
			if (L.mask[(size_t)i * L.K + j]) {
				assert_int_equal(sp->col[k], j);
				assert_int_equal(sp->val[k], wval(&L, (size_t)i * L.K + j));
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
				assert_int_equal(sp->val[k++], wval(&L, (size_t)i * L.K + j));
	/* without a mask: keep the nonzero bf16 values */
	csd_sparse s2;
	float w2[6] = { 0.0f, -0.0f, 1e-45f, 3.0f, 0.0f, -1.0f };
	assert_int_equal(csd_sparse_from_dense(&s2, w2, NULL, 2, 3), CS_OK);
	assert_int_equal(s2.nnz, 2);
	assert_int_equal(s2.col[0], 0);
	assert_int_equal(s2.row_ptr[1], 0);
	assert_int_equal(s2.col[1], 2);
	csd_sparse_free(&s2);
	layer_free(&L);
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
	struct layer L;
	layer_make(&L, 4, 3, 65, 0.5, 0, 0);
	float y[12];
	assert_int_equal(csd_forward(dev, y, L.x, &L.sp, 4), CS_ERR_RANGE);
	assert_non_null(strstr(csd_last_error(dev), "SRAM A"));
	assert_int_equal(csd_forward(dev, y, L.x, &L.sp, 0), CS_ERR_INVALID);
	assert_int_equal(csd_forward(dev, NULL, L.x, &L.sp, 4), CS_ERR_INVALID);
	layer_free(&L);
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
	rng_state = seed * 0x9e3779b97f4a7c15ull + 7;
	printf("seed %llu (set TEST_SEED to replay)\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sparse_build),  cmocka_unit_test(test_errors),
		cmocka_unit_test(test_default_sram),  cmocka_unit_test(test_tiled),
		cmocka_unit_test(test_sparsity_sweep), cmocka_unit_test(test_link_bytes),
		cmocka_unit_test(test_scalar_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
