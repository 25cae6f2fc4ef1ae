/*
 * test_resident_kernels.c - the kernels on resident regions (csd_forward_region,
 * csd_backward_region, csd_wgrad_region; host/driver/resident.c, plan.c's
 * plan_exec_resident, the cpu backend's SRAM model) and the conversion programs of
 * fw/vec_cvt.s between them. On 1x1, 2x2 and 4x4 meshes, token counts that do not divide
 * them, two sparsities:
 *   - results read back equal the old calls' (csd_forward, csd_backward, csd_wgrad) for the
 *     same data, and an accumulate equals the fmac chain from the old region's values;
 *   - the cpu backend equals the mesh model (sim:...,model) and the Verilated pe mesh
 *     (when its build exists) bit for bit over every PE's whole SRAM, and in link bytes;
 *   - a chain ln_fwd -> forward -> cvt_a -> forward accumulate onto x, and the other
 *     conversions (cvt_bh, bias_fwd, bias_bwd), cpu against the model;
 *   - bad regions give clear errors;
 *   - reads and writes carried by a kernel (csd_read_tokens_next, csd_write_tokens_next)
 *     equal the plain ones, the estimate within 2% of the Verilated pe mesh, overlapping
 *     writes refused, pe=lite writing first.
 * Also prints (not a check) the resident chain's cycles and link bytes against the old
 * calls on a 4x4 cpu device. TEST_SEED replays. REGRESS=1 (make regress) adds the larger
 * shapes of the same kernels and paths: the 4x4 kernels at sparsity 0.5 and the carried
 * reads on the step's 128 x 128 layers (docs/verification.md).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numerics.h"
#include "driver/csd.h"
#include "../support/kernel_ref.h"

#define NI 24 /* the test layer: W [NO, NI] */
#define NO 20
#define MAXDEV 3

static int regress_mode(void)
{
	const char *r = getenv("REGRESS");
	return r && *r && strcmp(r, "0") != 0;
}

static void ok(csd_dev *d, int rc)
{
	if (rc)
		print_error("%s\n", csd_last_error(d));
	assert_int_equal(rc, CS_OK);
}

static void expect(csd_dev *dev, int rc, int want, const char *needle)
{
	if (rc != want || !strstr(csd_last_error(dev), needle))
		print_error("got %d '%s', want %d '...%s...'\n", rc, csd_last_error(dev), want, needle);
	assert_int_equal(rc, want);
	assert_non_null(strstr(csd_last_error(dev), needle));
}

/* A mesh under test: dev[0] the cpu backend, dev[1] the mesh model, dev[2] the Verilated
 * pe mesh (n = 2 when that build is missing). */
struct rig {
	csd_dev *dev[MAXDEV];
	int n, P;
	uint32_t aw, bw;
	char when[96];
};

static void rig_open(struct rig *g, int rows, int cols, uint32_t aw, uint32_t bw, int rtl)
{
	static const char *const kind[] = { "cpu", "sim", "sim" };
	static const char *const tail[] = { "", ",model", "" };
	char uri[128];
	memset(g, 0, sizeof *g);
	g->P = rows * cols;
	g->aw = aw;
	g->bw = bw;
	for (int k = 0; k < (rtl ? 3 : 2); k++) {
		snprintf(uri, sizeof uri, "%s:%dx%d,awords=%u,bwords=%u%s", kind[k], rows, cols, aw,
			 bw, tail[k]);
		int rc = csd_open(&g->dev[k], uri);
		if (k == 2 && rc == CS_ERR_NOT_FOUND) {
			print_message("%s: %s (the Verilated mesh skipped)\n", uri, csd_last_error(NULL));
			break;
		}
		ok(NULL, rc);
		csd_reset_counters(g->dev[k]);
		g->n = k + 1;
	}
	/* every PE's SRAM starts zeroed on every device */
	size_t na = (size_t)g->P * aw, nb = (size_t)g->P * bw;
	void *z = calloc(na > nb ? na : nb, 4);
	csd_region ra = { CSD_MEM_A, 0, aw, aw }, rb = { CSD_MEM_B, 0, bw, bw };
	for (int k = 0; k < g->n; k++) {
		ok(g->dev[k], csd_write_tokens(g->dev[k], &ra, z, g->P));
		ok(g->dev[k], csd_write_tokens(g->dev[k], &rb, z, g->P));
	}
	free(z);
}

static void rig_close(struct rig *g)
{
	for (int k = 0; k < g->n; k++)
		csd_close(g->dev[k]);
}

/* Every device: dev[0]'s result of f is every other's. */
#define ALL(g, call)                                              \
	do {                                                      \
		for (int k_ = 0; k_ < (g)->n; k_++) {             \
			csd_dev *D = (g)->dev[k_];                \
			ok(D, call);                              \
		}                                                 \
	} while (0)

/* Read region r of Tall tokens on every device: all equal; dev[0]'s copy to out. */
static void read_all(struct rig *g, void *out, const csd_region *r, int Tall)
{
	size_t n = (size_t)Tall * r->width * (r->mem == CSD_MEM_B ? 4 : 2);
	void *o2 = malloc(n);
	ok(g->dev[0], csd_read_tokens(g->dev[0], out, r, Tall));
	for (int k = 1; k < g->n; k++) {
		ok(g->dev[k], csd_read_tokens(g->dev[k], o2, r, Tall));
		assert_memory_equal(out, o2, n);
	}
	free(o2);
}

/* Every PE's whole A and B, and the link bytes so far, the same on every device. */
static void same_sram(struct rig *g, const char *what)
{
	size_t na = (size_t)g->P * g->aw, nb = (size_t)g->P * g->bw;
	uint16_t *a[MAXDEV];
	uint32_t *b[MAXDEV];
	csd_region ra = { CSD_MEM_A, 0, g->aw, g->aw }, rb = { CSD_MEM_B, 0, g->bw, g->bw };
	csd_counters c[MAXDEV];
	for (int k = 0; k < g->n; k++) {
		a[k] = malloc(na * 2);
		b[k] = malloc(nb * 4);
		ok(g->dev[k], csd_read_tokens(g->dev[k], a[k], &ra, g->P));
		ok(g->dev[k], csd_read_tokens(g->dev[k], b[k], &rb, g->P));
		ok(g->dev[k], csd_get_counters(g->dev[k], &c[k]));
	}
	for (int k = 1; k < g->n; k++) {
		if (c[0].link_bytes_out != c[k].link_bytes_out ||
		    c[0].link_bytes_in != c[k].link_bytes_in) {
			print_error("%s %s: link bytes: cpu %llu out %llu in, device %d %llu out %llu in\n",
				    g->when, what, (unsigned long long)c[0].link_bytes_out,
				    (unsigned long long)c[0].link_bytes_in, k,
				    (unsigned long long)c[k].link_bytes_out,
				    (unsigned long long)c[k].link_bytes_in);
			fail();
		}
		for (size_t i = 0; i < na; i++)
			if (a[0][i] != a[k][i]) {
				print_error("%s %s: PE %zu A[%zu]: cpu %04x device %d %04x\n", g->when, what,
					    i / g->aw, i % g->aw, a[0][i], k, a[k][i]);
				fail();
			}
		for (size_t i = 0; i < nb; i++)
			if (b[0][i] != b[k][i]) {
				print_error("%s %s: PE %zu B[%zu]: cpu %08x device %d %08x\n", g->when, what,
					    i / g->bw, i % g->bw, b[0][i], k, b[k][i]);
				fail();
			}
	}
	for (int k = 0; k < g->n; k++) {
		free(a[k]);
		free(b[k]);
	}
}

static float rand_f(void)
{
	return (float)(kref_rng_unif() * 8.0 - 4.0);
}

/* y[t, i] chains from y0 over the nonzeros of row i (forward: CSR row i's columns ascend,
 * the CSC order's majors) or, with bwd, dx[t, j] over column j's rows ascending. */
static void ref_accum(float *out, const float *init, const uint16_t *in, const csd_sparse *w,
		      int T, int bwd)
{
	int din = bwd ? w->n_out : w->n_in, dout = bwd ? w->n_in : w->n_out;
	const int64_t *ptr = bwd ? w->col_ptr : w->row_ptr;
	const int32_t *idx = bwd ? w->row : w->col;
	const uint16_t *val = bwd ? w->cval : w->val;
	for (int t = 0; t < T; t++)
		for (int o = 0; o < dout; o++) {
			uint32_t acc = nm_f32_bits(init[(size_t)t * dout + o]);
			for (int64_t k = ptr[o]; k < ptr[o + 1]; k++)
				acc = nm_fmac_bits(val[k], in[(size_t)t * din + idx[k]], acc);
			out[(size_t)t * dout + o] = nm_bits_f32(acc);
		}
}

/* The B and A addresses of one mesh's layout: all regions fit both SRAM sizes used here
 * (1x1: awords 512, bwords 256, T 9; else 16384 / 8192). */
enum { XA = 8, XS = NI + 2, DYA = 260, YB = 4, YS = NO + 1, DXB = 32, DYH = 0, SCR = 128 };

/* A forward (bwd 0) or backward on regions: overwrite equals the old call on ref, an
 * accumulate onto random values their fmac chains; the SRAM equal on every device. */
static void stream_case(struct rig *g, csd_dev *ref, int bwd, const csd_region *rout,
			const csd_region *rin, const uint16_t *in, const csd_sparse *w, int T)
{
	size_t n = (size_t)T * rout->width;
	float *o = malloc(n * 4), *r = malloc(n * 4), *o0 = malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		o0[i] = rand_f();
	ALL(g, csd_write_tokens(D, rin, in, T));
	ALL(g, csd_write_tokens(D, rout, o0, T)); /* overwritten */
	ALL(g, (bwd ? csd_backward_region : csd_forward_region)(D, rout, rin, w, T,
								 CSD_OVERWRITE));
	read_all(g, o, rout, T);
	ok(ref, (bwd ? csd_backward : csd_forward)(ref, r, in, w, T));
	assert_memory_equal(o, r, n * 4);
	ALL(g, csd_write_tokens(D, rout, o0, T));
	ALL(g, (bwd ? csd_backward_region : csd_forward_region)(D, rout, rin, w, T,
								 CSD_ACCUMULATE));
	read_all(g, o, rout, T);
	ref_accum(r, o0, in, w, T, bwd);
	assert_memory_equal(o, r, n * 4);
	same_sram(g, bwd ? "backward" : "forward");
	free(o);
	free(r);
	free(o0);
}

static void kernels_case_k(int rows, int cols, int T, double sparsity, uint32_t aw, uint32_t bw,
			   int specials, int empty_lines)
{
	struct rig g;
	rig_open(&g, rows, cols, aw, bw, 1);
	snprintf(g.when, sizeof g.when, "%dx%d T=%d sparsity %.2f", rows, cols, T, sparsity);
	struct kref_layer L;
	assert_int_equal(kref_layer_make(&L, T, NO, NI, sparsity, specials, empty_lines), 0);
	/* specials: infinities and NaN in the first majors, which the zero wavelets read */
	static const uint16_t inf_nan[] = { 0x7f80, 0xff80, 0x7fc1, 0xffa0 };
	for (int t = 0; specials && t < T; t++)
		for (int j = 0; j < 3; j++) {
			L.x[(size_t)t * NI + j] = inf_nan[(t + j) & 3];
			L.dy[(size_t)t * NO + j] = inf_nan[(t + 2 * j) & 3];
		}
	const csd_sparse *w = &L.sp;
	/* the old calls on a device of their own (they overwrite SRAM the model ignores) */
	csd_dev *ref;
	char uri[96];
	snprintf(uri, sizeof uri, "cpu:%dx%d,awords=%u,bwords=%u", rows, cols, aw, bw);
	ok(NULL, csd_open(&ref, uri));
	float *dw = malloc((size_t)(w->nnz + 1) * 4), *dwr = malloc((size_t)(w->nnz + 1) * 4);
	csd_region rx = { CSD_MEM_A, XA, XS, NI }, ry = { CSD_MEM_B, YB, YS, NO };
	csd_region rdy = { CSD_MEM_A, DYA, NO, NO }, rdx = { CSD_MEM_B, DXB, NI, NI };
	/* forward: x in A (rows apart), y in B; backward: dy in A (contiguous), dx in B */
	stream_case(&g, ref, 0, &ry, &rx, L.x, w, T);
	stream_case(&g, ref, 1, &rdx, &rdy, L.dy, w, T);

	/* wgrad: x in A, dy packed in B (written as bf16 halves), partial sums at SCR */
	csd_region rdh = { CSD_MEM_BH, DYH, NO, NO };
	ALL(&g, csd_write_tokens(D, &rdh, L.dy, T));
	ok(ref, csd_wgrad(ref, dwr, L.dy, L.x, w, T));
	for (int k = 0; k < g.n; k++) {
		memset(dw, 0xff, (size_t)(w->nnz + 1) * 4);
		ok(g.dev[k], csd_wgrad_region(g.dev[k], dw, &rdh, &rx, w, T, SCR));
		assert_memory_equal(dw, dwr, (size_t)w->nnz * 4);
	}
	same_sram(&g, "wgrad");

	free(dw);
	free(dwr);
	kref_layer_free(&L);
	csd_close(ref);
	rig_close(&g);
}

static void kernels_case(int rows, int cols, int T, double sparsity, uint32_t aw, uint32_t bw)
{
	kernels_case_k(rows, cols, T, sparsity, aw, bw, KREF_PLAIN, 1);
}

/* pe's first-touch stream (plan_first_touch): a dense weight (no zero wavelets), an empty
 * one (START: the zero wavelets would cost more than the fill), one whose inputs hold
 * infinities and NaN (a zero wavelet gives +0 whatever A; an output whose first nonzero is
 * +0 still gets the fill's NaN); kernels_case's layers have empty lines and kept zeros. An
 * output index past 14 bits is refused on pe. */
static void test_first_touch(void **state)
{
	(void)state;
	kernels_case_k(2, 2, 13, 0.0, 16384, 8192, KREF_PLAIN, 0);
	kernels_case_k(2, 2, 13, 1.0, 16384, 8192, KREF_PLAIN, 0);
	kernels_case_k(2, 2, 13, 0.5, 16384, 8192, KREF_SPECIALS, 1);
	csd_dev *d;
	ok(NULL, csd_open(&d, "cpu:1x1,awords=512,bwords=32768"));
	enum { WIDE = 16385 };
	float *wf = calloc(2 * WIDE, sizeof *wf);
	uint8_t *m = calloc(2 * WIDE, 1);
	m[0] = 1;
	wf[0] = 1.0f;
	csd_sparse sp;
	ok(d, csd_sparse_from_dense(&sp, wf, m, WIDE, 2));
	csd_region rin = { CSD_MEM_A, 0, 2, 2 }, rout = { CSD_MEM_B, 0, WIDE, WIDE };
	expect(d, csd_forward_region(d, &rout, &rin, &sp, 1, CSD_OVERWRITE), CS_ERR_RANGE,
	       "first-touch");
	csd_sparse_free(&sp);
	free(wf);
	free(m);
	csd_close(d);
}

static void test_kernels_1x1(void **state)
{
	(void)state;
	kernels_case(1, 1, 9, 0.5, 512, 256);
	kernels_case(1, 1, 9, 0.9, 512, 256);
}

static void test_kernels_2x2(void **state)
{
	(void)state;
	kernels_case(2, 2, 13, 0.5, 16384, 8192);
	kernels_case(2, 2, 13, 0.9, 16384, 8192);
}

static void test_kernels_4x4(void **state)
{
	(void)state;
	/* 0.5 on 1x1 and 2x2 above, and here under REGRESS=1 */
	if (regress_mode())
		kernels_case(4, 4, 37, 0.5, 16384, 8192);
	kernels_case(4, 4, 37, 0.9, 16384, 8192);
}

/* The chain of a layer's forward half with its conversions, on cpu and the mesh model:
 * ln_fwd (x -> y in A) -> forward (qkv-like, 32 -> 48, onto B) -> cvt_a (to A) -> forward
 * accumulate onto x (48 -> 32) -> bias_fwd onto x; then cvt_bh of x, a wgrad against it
 * and bias_bwd. Every PE's SRAM equal after each step; results against the host. */
#define CC 32 /* features */
#define CQ 48 /* the qkv-like width */
/* A elements */
enum { G = 0, LY = 64, LZ = 320, LR = 560, LAM = 570, ONES = 576, QA = 640 };
/* B words (XH: Bh elements) */
enum { X = 0, BE = 256, LS = 320, LT = 400, BLK = 500, QB = 600, BIAS = 1000, XH = 2200,
       DBI = 1300, SCR2 = 1400 };

static void run_all(struct rig *g, const char *prog, const char *entry, const uint16_t *par)
{
	for (int k = 0; k < g->n; k++)
		ok(g->dev[k], csd_run_program(g->dev[k], prog, entry, BLK, par, 7));
}

static void chain_case(int rows, int cols, int T)
{
	struct rig g;
	rig_open(&g, rows, cols, 4096, 8192, 0);
	int P = g.P, tp = (T + P - 1) / P, Tall = P * tp;
	snprintf(g.when, sizeof g.when, "chain %dx%d T=%d", rows, cols, T);
	struct kref_layer L1, L2;
	assert_int_equal(kref_layer_make(&L1, T, CQ, CC, 0.7, KREF_PLAIN, 0), 0);
	assert_int_equal(kref_layer_make(&L2, T, CC, CQ, 0.8, KREF_PLAIN, 1), 0);
	float *x = calloc((size_t)Tall * CC, 4), *xr = malloc((size_t)Tall * CC * 4);
	float *x1 = malloc((size_t)Tall * CC * 4), *q = malloc((size_t)Tall * CQ * 4);
	uint16_t *qa = malloc((size_t)Tall * CQ * 2), *xh = malloc((size_t)Tall * CC * 2);
	float *dw = malloc((size_t)L2.sp.nnz * 4 + 4), *dwr = malloc((size_t)L2.sp.nnz * 4 + 4);
	uint16_t gamma[CC], ones[64];
	float beta[CC], bias[CC], db[CC], dbr[CC] = { 0 };
	for (int i = 0; i < T * CC; i++)
		x[i] = rand_f() + (i % 3 ? 0.0f : 2.0f);
	for (int j = 0; j < CC; j++) {
		gamma[j] = nm_bf16_from_f32(0.5f + (float)kref_rng_unif());
		beta[j] = rand_f() / 16.0f;
		bias[j] = rand_f() / 4.0f;
	}
	for (int j = 0; j < 64; j++)
		ones[j] = 0x3f80;
	static const float zeros[CC];
	csd_region rx = { CSD_MEM_B, X, CC, CC }, ry = { CSD_MEM_A, LY, CC, CC };
	csd_region rq = { CSD_MEM_B, QB, CQ, CQ }, rqa = { CSD_MEM_A, QA, CQ, CQ };
	csd_region rxh = { CSD_MEM_BH, XH, CC, CC };
	ALL(&g, csd_write_tokens(D, &rx, x, T));
	ALL(&g, csd_write_all(D, CSD_MEM_A, G, gamma, CC));
	ALL(&g, csd_write_all(D, CSD_MEM_B, BE, beta, CC));
	ALL(&g, csd_write_all(D, CSD_MEM_A, ONES, ones, 64));
	ALL(&g, csd_write_all(D, CSD_MEM_B, BIAS, bias, CC));
	ALL(&g, csd_write_all(D, CSD_MEM_B, DBI, zeros, CC));

	uint16_t inv_c = nm_bf16_from_f32(1.0f / CC), eps = nm_bf16_from_f32(1e-5f);
	const uint16_t pf[13] = { CC, G, BE, LS, LT, LAM, inv_c, eps, X, LY, LZ, LR, (uint16_t)tp };
	for (int k = 0; k < g.n; k++)
		ok(g.dev[k], csd_run_program(g.dev[k], "vec_ln_fwd", "ln_fwd", BLK, pf, 13));
	ALL(&g, csd_forward_region(D, &rq, &ry, &L1.sp, T, CSD_OVERWRITE));
	same_sram(&g, "ln_fwd, forward");
	const uint16_t pa[7] = { CQ, (uint16_t)tp, QB, CQ, QA, CQ, 0 };
	run_all(&g, "vec_cvt", "cvt_a", pa);
	read_all(&g, q, &rq, Tall);
	read_all(&g, qa, &rqa, Tall);
	for (int i = 0; i < Tall * CQ; i++)
		assert_int_equal(qa[i], nm_bf16_from_bits(nm_f32_bits(q[i])));
	read_all(&g, x1, &rx, Tall);
	ALL(&g, csd_forward_region(D, &rx, &rqa, &L2.sp, T, CSD_ACCUMULATE));
	read_all(&g, x, &rx, Tall);
	ref_accum(xr, x1, qa, &L2.sp, Tall, 0);
	assert_memory_equal(x, xr, (size_t)Tall * CC * 4);
	same_sram(&g, "cvt_a, forward accumulate");

	const uint16_t pbf[7] = { CC, (uint16_t)tp, X, CC, BIAS, 0, ONES };
	run_all(&g, "vec_cvt", "bias_fwd", pbf);
	read_all(&g, x1, &rx, Tall);
	for (int t = 0; t < Tall; t++)
		nm_bias_add_bits((uint32_t *)(void *)(x + (size_t)t * CC), (const uint32_t *)(const void *)bias, CC);
	assert_memory_equal(x1, x, (size_t)Tall * CC * 4);
	const uint16_t pbh[7] = { CC, (uint16_t)tp, X, CC, XH, CC, 0 };
	run_all(&g, "vec_cvt", "cvt_bh", pbh);
	read_all(&g, xh, &rxh, Tall);
	for (int i = 0; i < Tall * CC; i++)
		assert_int_equal(xh[i], nm_bf16_from_bits(nm_f32_bits(x[i])));
	const uint16_t pbb[7] = { CC, (uint16_t)tp, X, CC, DBI, 0, ONES };
	run_all(&g, "vec_cvt", "bias_bwd", pbb);
	csd_region rdb = { CSD_MEM_B, DBI, CC, CC };
	read_all(&g, db, &rdb, 1); /* PE 0's */
	for (int t = 0; t < tp; t++)
		nm_bias_add_bits((uint32_t *)(void *)dbr, (const uint32_t *)(const void *)(x + (size_t)t * CC), CC);
	assert_memory_equal(db, dbr, sizeof db);
	same_sram(&g, "bias_fwd, cvt_bh, bias_bwd");

	/* a wgrad of the second layer against the packed x, all Tall rows (the padding rows
	 * went through layernorm too): csd_wgrad's bits for the same partition */
	csd_dev *ref;
	char uri[96];
	snprintf(uri, sizeof uri, "cpu:%dx%d,awords=4096,bwords=8192", rows, cols);
	ok(NULL, csd_open(&ref, uri));
	ok(ref, csd_wgrad(ref, dwr, xh, qa, &L2.sp, Tall));
	for (int k = 0; k < g.n; k++) {
		ok(g.dev[k], csd_wgrad_region(g.dev[k], dw, &rxh, &rqa, &L2.sp, T, SCR2));
		assert_memory_equal(dw, dwr, (size_t)L2.sp.nnz * 4);
	}
	same_sram(&g, "wgrad");
	csd_close(ref);
	free(x);
	free(xr);
	free(x1);
	free(q);
	free(qa);
	free(xh);
	free(dw);
	free(dwr);
	kref_layer_free(&L1);
	kref_layer_free(&L2);
	rig_close(&g);
}

static void test_chain(void **state)
{
	(void)state;
	chain_case(1, 1, 7);
	chain_case(2, 2, 13);
	chain_case(4, 4, 37);
}

/*
 * The comparison docs/measurements.md reports (cpu backend, 4x4, awords 65536, bwords
 * 16384): one small layer's MLP, T = 512, C = 128, fc W1 [512, 128] and fc2 W2 [128, 512] at
 * 90% sparsity. Old calls: csd_forward of both, csd_backward_wgrad of both (activations up
 * and results back each time). Resident: forward fc in four 128-output tiles (each cvt_a'd
 * into h in A), fc2 accumulating onto x; backward: dx -> dY (cvt_a) and packed (cvt_bh),
 * fc2's wgrad, fc2's backward in four tiles (each cvt_a'd and cvt_bh'd), fc's backward
 * accumulating onto dx and its wgrad. Only the chain is counted (x, its layernorm and dx
 * already resident). Printed; the checks are only that it moves fewer bytes.
 */
static void sub_block(csd_sparse *sp, const float *w, const uint8_t *m, int n_out, int n_in,
		      int r0, int c0, int nr, int nc)
{
	float *bw = malloc((size_t)nr * nc * 4);
	uint8_t *bm = malloc((size_t)nr * nc);
	for (int i = 0; i < nr; i++)
		for (int j = 0; j < nc; j++) {
			bw[i * nc + j] = w[(size_t)(r0 + i) * n_in + c0 + j];
			bm[i * nc + j] = m[(size_t)(r0 + i) * n_in + c0 + j];
		}
	(void)n_out;
	assert_int_equal(csd_sparse_from_dense(sp, bw, bm, nr, nc), CS_OK);
	free(bw);
	free(bm);
}

static void test_measure(void **state)
{
	(void)state;
	enum { T = 512, C4 = 512, C1 = 128, TPM = 32 };
	const char *uri = "cpu:4x4,awords=65536,bwords=16384";
	float *w1 = malloc((size_t)C4 * C1 * 4), *w2 = malloc((size_t)C1 * C4 * 4);
	uint8_t *m1 = malloc((size_t)C4 * C1), *m2 = malloc((size_t)C1 * C4);
	for (int i = 0; i < C4 * C1; i++) {
		w1[i] = rand_f() / 16.0f;
		w2[i] = rand_f() / 16.0f;
		m1[i] = kref_rng_unif() < 0.1;
		m2[i] = kref_rng_unif() < 0.1;
	}
	csd_sparse W1, W2, W1k[4], W2k[4];
	assert_int_equal(csd_sparse_from_dense(&W1, w1, m1, C4, C1), CS_OK);
	assert_int_equal(csd_sparse_from_dense(&W2, w2, m2, C1, C4), CS_OK);
	for (int k = 0; k < 4; k++) {
		sub_block(&W1k[k], w1, m1, C4, C1, k * C1, 0, C1, C1); /* fc rows k */
		sub_block(&W2k[k], w2, m2, C1, C4, 0, k * C1, C1, C1); /* fc2 columns k */
	}
	uint16_t *xl = malloc((size_t)T * C1 * 2), *h = malloc((size_t)T * C4 * 2);
	uint16_t *dy = malloc((size_t)T * C1 * 2), *dh16 = malloc((size_t)T * C4 * 2);
	float *y1 = malloc((size_t)T * C4 * 4), *y2 = malloc((size_t)T * C1 * 4);
	float *dh = malloc((size_t)T * C4 * 4), *dx = malloc((size_t)T * C1 * 4);
	float *dw1 = malloc((size_t)W1.nnz * 4), *dw2 = malloc((size_t)W2.nnz * 4);
	float *x = malloc((size_t)T * C1 * 4);
	for (int i = 0; i < T * C1; i++) {
		xl[i] = nm_bf16_from_f32(rand_f());
		dy[i] = nm_bf16_from_f32(rand_f());
		x[i] = rand_f();
	}
	csd_dev *dev;
	csd_counters c[2];

	/* the old calls */
	ok(NULL, csd_open(&dev, uri));
	csd_reset_counters(dev);
	ok(dev, csd_forward(dev, y1, xl, &W1, T));
	nm_bf16_from_f32_array(h, y1, (size_t)T * C4);
	ok(dev, csd_forward(dev, y2, h, &W2, T));
	ok(dev, csd_backward_wgrad(dev, dh, dw2, dy, h, &W2, T));
	nm_bf16_from_f32_array(dh16, dh, (size_t)T * C4);
	ok(dev, csd_backward_wgrad(dev, dx, dw1, dh16, xl, &W1, T));
	ok(dev, csd_get_counters(dev, &c[0]));
	csd_close(dev);

	/* resident: A xl 0, h 4096, dY 20480, dh 24576; B x / dx 0, dh packed words 4096
	 * (Bh 8192, also dx packed before it), tiles 12288, partial sums 12288 */
	ok(NULL, csd_open(&dev, uri));
	csd_region rxl = { CSD_MEM_A, 0, C1, C1 }, rx = { CSD_MEM_B, 0, C1, C1 };
	ok(dev, csd_write_tokens(dev, &rxl, xl, T));
	ok(dev, csd_write_tokens(dev, &rx, x, T));
	csd_reset_counters(dev);
	csd_region rt = { CSD_MEM_B, 12288, C1, C1 }, rh = { CSD_MEM_A, 4096, C4, C4 };
	csd_region rdy = { CSD_MEM_A, 20480, C1, C1 }, rdh = { CSD_MEM_A, 24576, C4, C4 };
	csd_region rdyh = { CSD_MEM_BH, 8192, C1, C1 }, rdhh = { CSD_MEM_BH, 8192, C4, C4 };
	for (int k = 0; k < 4; k++) {
		ok(dev, csd_forward_region(dev, &rt, &rxl, &W1k[k], T, CSD_OVERWRITE));
		const uint16_t pa[7] = { C1, TPM, 12288, C1, (uint16_t)(4096 + k * C1), C4, 0 };
		ok(dev, csd_run_program(dev, "vec_cvt", "cvt_a", 16000, pa, 7));
	}
	ok(dev, csd_forward_region(dev, &rx, &rh, &W2, T, CSD_ACCUMULATE));
	const uint16_t pdy[7] = { C1, TPM, 0, C1, 20480, C1, 0 };
	ok(dev, csd_run_program(dev, "vec_cvt", "cvt_a", 16000, pdy, 7));
	const uint16_t pdyh[7] = { C1, TPM, 0, C1, 8192, C1, 0 };
	ok(dev, csd_run_program(dev, "vec_cvt", "cvt_bh", 16000, pdyh, 7));
	ok(dev, csd_wgrad_region(dev, dw2, &rdyh, &rh, &W2, T, 12288));
	for (int k = 0; k < 4; k++) {
		ok(dev, csd_backward_region(dev, &rt, &rdy, &W2k[k], T, CSD_OVERWRITE));
		const uint16_t pa[7] = { C1, TPM, 12288, C1, (uint16_t)(24576 + k * C1), C4, 0 };
		ok(dev, csd_run_program(dev, "vec_cvt", "cvt_a", 16000, pa, 7));
		const uint16_t pb[7] = { C1, TPM, 12288, C1, (uint16_t)(8192 + k * C1), C4, 0 };
		ok(dev, csd_run_program(dev, "vec_cvt", "cvt_bh", 16000, pb, 7));
	}
	ok(dev, csd_backward_region(dev, &rx, &rdh, &W1, T, CSD_ACCUMULATE));
	ok(dev, csd_wgrad_region(dev, dw1, &rdhh, &rxl, &W1, T, 12288));
	ok(dev, csd_get_counters(dev, &c[1]));
	csd_close(dev);

	static const char *const name[] = { "old calls", "resident" };
	print_message("MLP T=%d C=%d fc %d->%d->%d, 90%% sparse (nnz %lld + %lld), cpu 4x4, awords "
		      "65536, bwords 16384:\n", T, C1, C1, C4, C1, (long long)W1.nnz,
		      (long long)W2.nnz);
	for (int k = 0; k < 2; k++)
		print_message("  %-9s %9llu cycles, %9llu bytes out (weights %llu, act %llu, prog "
			      "%llu), %9llu in (act %llu, grad %llu)\n",
			      name[k], (unsigned long long)c[k].cycles,
			      (unsigned long long)c[k].link_bytes_out,
			      (unsigned long long)c[k].weight_bytes,
			      (unsigned long long)c[k].act_bytes_out,
			      (unsigned long long)c[k].prog_bytes_out,
			      (unsigned long long)c[k].link_bytes_in,
			      (unsigned long long)c[k].act_bytes_in,
			      (unsigned long long)c[k].grad_bytes_in);
	assert_true(c[1].link_bytes_out + c[1].link_bytes_in <
		    c[0].link_bytes_out + c[0].link_bytes_in);
	for (int k = 0; k < 4; k++) {
		csd_sparse_free(&W1k[k]);
		csd_sparse_free(&W2k[k]);
	}
	csd_sparse_free(&W1);
	csd_sparse_free(&W2);
	free(w1);
	free(w2);
	free(m1);
	free(m2);
	free(xl);
	free(h);
	free(dy);
	free(dh16);
	free(y1);
	free(y2);
	free(dh);
	free(dx);
	free(dw1);
	free(dw2);
	free(x);
}

static void test_bad_regions(void **state)
{
	(void)state;
	csd_dev *dev;
	ok(NULL, csd_open(&dev, "cpu:2x2,awords=512,bwords=256"));
	struct kref_layer L;
	assert_int_equal(kref_layer_make(&L, 8, NO, NI, 0.5, KREF_PLAIN, 0), 0);
	const csd_sparse *w = &L.sp;
	float dw[NO * NI];
	csd_region rx = { CSD_MEM_A, 0, NI, NI }, ry = { CSD_MEM_B, 0, NO, NO };
	csd_region rdh = { CSD_MEM_BH, 0, NO, NO };
	ok(dev, csd_forward_region(dev, &ry, &rx, w, 8, CSD_OVERWRITE));
	/* all T tokens must fit at once: 100 tokens are 25 a PE, 600 elements of A */
	expect(dev, csd_forward_region(dev, &ry, &rx, w, 100, CSD_OVERWRITE), CS_ERR_RANGE,
	       "past the end of SRAM A");
	csd_region ry_far = { CSD_MEM_B, 240, NO, NO };
	expect(dev, csd_forward_region(dev, &ry_far, &rx, w, 8, CSD_ACCUMULATE), CS_ERR_RANGE,
	       "past the end of SRAM B");
	expect(dev, csd_forward_region(dev, &ry, &ry, w, 8, CSD_OVERWRITE), CS_ERR_INVALID,
	       "must be an A region");
	expect(dev, csd_forward_region(dev, &ry, &rx, w, 8, 7), CS_ERR_INVALID, "mode 7");
	csd_region rx_narrow = { CSD_MEM_A, 0, NI, NI - 1 };
	expect(dev, csd_forward_region(dev, &ry, &rx_narrow, w, 8, CSD_OVERWRITE), CS_ERR_INVALID,
	       "do not match the layer");
	expect(dev, csd_backward_region(dev, &ry, &rx, w, 8, CSD_OVERWRITE), CS_ERR_INVALID,
	       "do not match the layer");
	/* the START fill covers tp * stride words: the gap of the last row too */
	csd_region ry_gap = { CSD_MEM_B, 256 - 40 - NO, 40, NO };
	ok(dev, csd_forward_region(dev, &ry_gap, &rx, w, 8, CSD_ACCUMULATE));
	expect(dev, csd_forward_region(dev, &ry_gap, &rx, w, 8, CSD_OVERWRITE), CS_ERR_RANGE,
	       "START fill");
	expect(dev, csd_wgrad_region(dev, dw, &ry, &rx, w, 8, 128), CS_ERR_INVALID,
	       "Bh region");
	expect(dev, csd_wgrad_region(dev, dw, &rdh, &rx, w, 8, 200), CS_ERR_RANGE,
	       "partial sums");
	expect(dev, csd_wgrad_region(dev, dw, &rdh, &rx, w, 8, 10), CS_ERR_INVALID, "overlap");
	ok(dev, csd_wgrad_region(dev, dw, &rdh, &rx, w, 8, 128));
	expect(dev, csd_wgrad_region(dev, NULL, &rdh, &rx, w, 8, 128), CS_ERR_INVALID, "NULL");
	kref_layer_free(&L);
	csd_close(dev);
}

/*
 * A READ carried by a kernel (csd_read_tokens_next, docs/architecture.md 7.5): the tokens
 * equal a plain read's on every device, the SRAM stays equal, and the cpu backend's cycle
 * estimate of the overlapped stream is within 2% of the Verilated pe mesh's (when built):
 * a forward with a Bh read (packed bf16, as the step reads q, k, v) and an fp32 read of
 * the other bank, long and short kernels against the read; a wgrad carrying a chunked
 * read of B bank 0; a read in the kernel's own bank goes first, on its own.
 */
#define OV_TOL 0.02

static void ov_check(struct rig *g, const char *what, const uint64_t *cyc, int *bad)
{
	if (g->n < 3)
		return;
	double err = ((double)cyc[0] - (double)cyc[2]) / (double)cyc[2];
	int good = err <= OV_TOL && err >= -OV_TOL;
	print_message("  %-34s cpu %8llu  pe %8llu  %+6.2f%%%s\n", what,
		      (unsigned long long)cyc[0], (unsigned long long)cyc[2], err * 100,
		      good ? "" : "  <- beyond tolerance");
	*bad += !good;
}

/* Run one call sequence on every device: the carried (next = 1) or plain read of rd into
 * out[k], then kernel kind (0 forward into ry, 2 wgrad of dy rdh, partial sums at ps);
 * cycles to cyc[k]. */
static void ov_run(struct rig *g, int next, const csd_region *rd, void **out, int kind,
		   const csd_region *ry, const csd_region *rx, const csd_region *rdh,
		   uint32_t ps, const csd_sparse *w, int T, float *dw, uint64_t *cyc)
{
	for (int k = 0; k < g->n; k++) {
		csd_dev *D = g->dev[k];
		csd_counters c;
		csd_reset_counters(D);
		ok(D, (next ? csd_read_tokens_next : csd_read_tokens)(D, out[k], rd, T));
		if (kind == 0)
			ok(D, csd_forward_region(D, ry, rx, w, T, CSD_OVERWRITE));
		else
			ok(D, csd_wgrad_region(D, dw, rdh, rx, w, T, ps));
		ok(D, csd_get_counters(D, &c));
		cyc[k] = c.cycles;
	}
}

/* A W x W layer at tp tokens a PE (tp * W <= 4096) on the pe mesh's default sizes. */
static void overlap_case(int rows, int cols, double sparsity, int W, int tp, int *bad)
{
	struct rig g;
	rig_open(&g, rows, cols, 16384, 8192, 1);
	int P = g.P, T = P * tp - 3;
	snprintf(g.when, sizeof g.when, "overlap %dx%d sparsity %.2f", rows, cols, sparsity);
	print_message(" %dx%d, %dx%d layer, %.0f%% sparse, %d tokens a PE:\n", rows, cols, W, W,
		      sparsity * 100, tp);
	struct kref_layer L;
	assert_int_equal(kref_layer_make(&L, T, W, W, sparsity, KREF_PLAIN, 0), 0);
	const csd_sparse *w = &L.sp;
	/* A: x at 0; B bank 0: y at 0 (tp W words); bank 1 (words h = 4096 ..): a packed bf16
	 * [T, W] at h and an fp32 [T, W/2] after it; then for the wgrad, dy packed where the
	 * bf16 one was and the partial sums where the fp32 one was */
	uint32_t h = 4096, hw = (uint32_t)(tp * W / 2), uw = (uint32_t)W;
	csd_region rx = { CSD_MEM_A, 0, uw, uw }, ry = { CSD_MEM_B, 0, uw, uw };
	csd_region rq = { CSD_MEM_BH, 2 * h, uw, uw }, rf = { CSD_MEM_B, h + hw, uw / 2, uw / 2 };
	csd_region rdh = rq;
	size_t nq = (size_t)T * W;
	float *f = malloc(nq * 4), *dw = malloc(((size_t)w->nnz + 1) * 4);
	void *o[MAXDEV], *o2[MAXDEV];
	for (size_t i = 0; i < nq; i++)
		f[i] = (float)((int)(i % 97) - 48) / 16.0f;
	ALL(&g, csd_write_tokens(D, &rx, L.x, T));
	ALL(&g, csd_write_tokens(D, &rq, L.dy, T)); /* [T, W] bf16 */
	ALL(&g, csd_write_tokens(D, &rf, f, T));
	for (int k = 0; k < g.n; k++) {
		o[k] = malloc(nq * 4);
		o2[k] = malloc(nq * 4);
	}
	uint64_t c1[MAXDEV], c2[MAXDEV];
	char what[64];
	/* forward carrying the Bh read, then the fp32 read; plain reads for reference */
	const csd_region *rds[2] = { &rq, &rf };
	for (int i = 0; i < 2; i++) {
		size_t bytes = nq * 2; /* [T, W] bf16 or [T, W/2] fp32 */
		ov_run(&g, 0, rds[i], o2, 0, &ry, &rx, NULL, 0, w, T, NULL, c1);
		ov_run(&g, 1, rds[i], o, 0, &ry, &rx, NULL, 0, w, T, NULL, c2);
		for (int k = 0; k < g.n; k++) {
			assert_memory_equal(o[k], o2[0], bytes);
			assert_memory_equal(o2[k], o2[0], bytes);
		}
		snprintf(what, sizeof what, "fwd + %s read, alone", i ? "fp32" : "Bh");
		ov_check(&g, what, c1, bad);
		snprintf(what, sizeof what, "fwd + %s read, carried", i ? "fp32" : "Bh");
		ov_check(&g, what, c2, bad);
		assert_true(c2[0] < c1[0]);
	}
	same_sram(&g, "forward carrying a read");
	/* wgrad (dy and partial sums in bank 1) carrying the read of y in bank 0 */
	ALL(&g, csd_write_tokens(D, &rdh, L.dy, T));
	ov_run(&g, 0, &ry, o2, 2, NULL, &rx, &rdh, h + hw, w, T, dw, c1);
	ov_run(&g, 1, &ry, o, 2, NULL, &rx, &rdh, h + hw, w, T, dw, c2);
	for (int k = 0; k < g.n; k++) {
		assert_memory_equal(o[k], o2[0], nq * 4);
		assert_memory_equal(o2[k], o2[0], nq * 4);
	}
	ov_check(&g, "wgrad + fp32 read, alone", c1, bad);
	ov_check(&g, "wgrad + fp32 read, carried", c2, bad);
	assert_true(c2[0] < c1[0]);
	same_sram(&g, "wgrad carrying a read");
	/* a read in the kernel's own bank: performed first, the same as alone */
	ov_run(&g, 0, &ry, o2, 0, &ry, &rx, NULL, 0, w, T, NULL, c1);
	ov_run(&g, 1, &ry, o, 0, &ry, &rx, NULL, 0, w, T, NULL, c2);
	for (int k = 0; k < g.n; k++)
		assert_memory_equal(o[k], o2[k], nq * 4);
	assert_int_equal(c1[0], c2[0]);
	/* csd_flush performs a waiting read; any other call performs it first */
	ALL(&g, csd_write_tokens(D, &rf, f, T));
	ALL(&g, csd_read_tokens_next(D, o[k_], &rf, T));
	ALL(&g, csd_flush(D));
	for (int k = 0; k < g.n; k++)
		assert_memory_equal(o[k], f, nq * 2);
	ALL(&g, csd_read_tokens_next(D, o[k_], &rq, T));
	ALL(&g, csd_write_tokens(D, &rq, L.x, T));
	for (int k = 0; k < g.n; k++)
		assert_memory_equal(o[k], L.dy, nq * 2);
	same_sram(&g, "flush");
	for (int k = 0; k < g.n; k++) {
		free(o[k]);
		free(o2[k]);
	}
	free(f);
	free(dw);
	kref_layer_free(&L);
	rig_close(&g);
}

static void test_overlap(void **state)
{
	(void)state;
	int bad = 0;
	print_message("carried reads: cpu estimate against the Verilated pe mesh (%.0f%%)\n",
		      OV_TOL * 100);
	overlap_case(2, 2, 0.9, 64, 24, &bad);
	overlap_case(2, 2, 0.99, 64, 24, &bad);
	overlap_case(4, 4, 0.9, 64, 24, &bad);
	overlap_case(4, 4, 0.97, 64, 24, &bad);
	/* the step's shapes: C = 128, 32 tokens a PE (a q tile, proj's dW): the 4x4 cases
	 * above, larger (REGRESS=1) */
	if (regress_mode()) {
		overlap_case(4, 4, 0.9, 128, 32, &bad);
		overlap_case(4, 4, 0.95, 128, 32, &bad);
	}
	assert_int_equal(bad, 0);
}

/*
 * A WRITE of A carried by a kernel (csd_write_tokens_next, docs/architecture.md 7.5): on pe
 * its WRITEs go between the kernel's majors, A's write port taking them while the kernel
 * reads A. Forward and backward, overwrite and accumulate, and wgrad (between a batch's
 * majors): the region and the kernel's output equal a plain write's before the kernel on
 * every device, the SRAM stays equal, the cpu backend's estimate is within 2% of the
 * Verilated pe mesh's (when built) and below the plain sequence's. A write of other columns
 * of the rows the kernel reads is carried too (the step's head groups). A write over what
 * the next kernel reads or writes is refused (and dropped); on pe=lite the write goes
 * first, on its own: the plain sequence's cycles.
 */
static void wr_run(struct rig *g, int next, const csd_region *wr, const void *src, int bwd,
		   const csd_region *ry, const csd_region *rx, const csd_sparse *w, int T,
		   int mode, uint64_t *cyc)
{
	for (int k = 0; k < g->n; k++) {
		csd_dev *D = g->dev[k];
		csd_counters c;
		csd_reset_counters(D);
		ok(D, (next ? csd_write_tokens_next : csd_write_tokens)(D, wr, src, T));
		ok(D, (bwd ? csd_backward_region : csd_forward_region)(D, ry, rx, w, T, mode));
		ok(D, csd_get_counters(D, &c));
		cyc[k] = c.cycles;
	}
}

/* A W x W layer at tp tokens a PE (tp * W <= 8192). */
static void wcarry_case(int rows, int cols, double sparsity, int W, int tp, int *bad)
{
	struct rig g;
	rig_open(&g, rows, cols, 16384, 8192, 1);
	int P = g.P, T = P * tp - 3;
	snprintf(g.when, sizeof g.when, "carried write %dx%d sparsity %.2f", rows, cols,
		 sparsity);
	print_message(" %dx%d, %dx%d layer, %.0f%% sparse, %d tokens a PE:\n", rows, cols, W, W,
		      sparsity * 100, tp);
	struct kref_layer L;
	assert_int_equal(kref_layer_make(&L, T, W, W, sparsity, KREF_PLAIN, 0), 0);
	const csd_sparse *w = &L.sp;
	uint32_t uw = (uint32_t)W;
	/* A: the kernel's input at 0, the written region at 8192; B: the output at 0 */
	csd_region rx = { CSD_MEM_A, 0, uw, uw }, rw = { CSD_MEM_A, 8192, uw, uw };
	csd_region ry = { CSD_MEM_B, 0, uw, uw };
	size_t nq = (size_t)T * W;
	uint16_t *got = malloc(nq * 2);
	float *y1 = malloc(nq * 4), *y2 = malloc(nq * 4);
	ALL(&g, csd_write_tokens(D, &rx, L.x, T));
	uint64_t c1[MAXDEV], c2[MAXDEV];
	char what[64];
	for (int i = 0; i < 4; i++) {
		int bwd = i & 1, mode = i & 2 ? CSD_ACCUMULATE : CSD_OVERWRITE;
		/* plain: x's data written; carried: dy's, so the carried one must land */
		wr_run(&g, 0, &rw, L.x, bwd, &ry, &rx, w, T, mode, c1);
		read_all(&g, y1, &ry, T);
		wr_run(&g, 1, &rw, L.dy, bwd, &ry, &rx, w, T, mode, c2);
		read_all(&g, y2, &ry, T);
		read_all(&g, got, &rw, T);
		assert_memory_equal(got, L.dy, nq * 2);
		if (mode == CSD_OVERWRITE)
			assert_memory_equal(y1, y2, nq * 4);
		snprintf(what, sizeof what, "%s%s + A write, alone", bwd ? "bwd" : "fwd",
			 mode == CSD_ACCUMULATE ? " acc" : "");
		ov_check(&g, what, c1, bad);
		snprintf(what, sizeof what, "%s%s + A write, carried", bwd ? "bwd" : "fwd",
			 mode == CSD_ACCUMULATE ? " acc" : "");
		ov_check(&g, what, c2, bad);
		assert_true(c2[0] < c1[0]);
	}
	same_sram(&g, "kernels carrying a write");
	/* wgrad (dy packed and the partial sums in B's second bank) carrying the write */
	{
		uint32_t h = 4096, ps = h + (uint32_t)(tp * W / 2) + 2;
		csd_region rdh = { CSD_MEM_BH, 2 * h, uw, uw };
		float *dw1 = malloc(((size_t)w->nnz + 1) * 4), *dw2 = malloc(((size_t)w->nnz + 1) * 4);
		ALL(&g, csd_write_tokens(D, &rdh, L.dy, T));
		for (int next = 0; next < 2; next++)
			for (int k = 0; k < g.n; k++) {
				csd_dev *D = g.dev[k];
				csd_counters c;
				csd_reset_counters(D);
				ok(D, (next ? csd_write_tokens_next : csd_write_tokens)(D, &rw,
										next ? L.dy : L.x, T));
				ok(D, csd_wgrad_region(D, next ? dw2 : dw1, &rdh, &rx, w, T, ps));
				ok(D, csd_get_counters(D, &c));
				(next ? c2 : c1)[k] = c.cycles;
				if (next) {
					assert_memory_equal(dw1, dw2, (size_t)w->nnz * 4);
					ok(D, csd_read_tokens(D, got, &rw, T));
					assert_memory_equal(got, L.dy, nq * 2);
				}
			}
		ov_check(&g, "wgrad + A write, alone", c1, bad);
		ov_check(&g, "wgrad + A write, carried", c2, bad);
		assert_true(c2[0] < c1[0]);
		same_sram(&g, "wgrad carrying a write");
		free(dw1);
		free(dw2);
	}
	/* the layer reading its input from the first half of the columns of rows 2W apart
	 * while the write goes into the second half; a write that shares one word with its
	 * input is refused */
	{
		uint32_t s2 = 2 * uw;
		csd_region xh = { CSD_MEM_A, 8192, s2, uw }, wh = { CSD_MEM_A, 8192 + uw, s2, uw };
		csd_region bad1 = { CSD_MEM_A, 8192 + uw - 2, s2, 4 };
		const uint16_t *src = L.dy;
		ALL(&g, csd_write_tokens(D, &xh, L.x, T));
		for (int next = 0; next < 2; next++) {
			for (int k = 0; k < g.n; k++) {
				csd_dev *D = g.dev[k];
				csd_counters c;
				csd_reset_counters(D);
				ok(D, (next ? csd_write_tokens_next : csd_write_tokens)(D, &wh, src, T));
				ok(D, csd_forward_region(D, &ry, &xh, w, T, CSD_OVERWRITE));
				ok(D, csd_get_counters(D, &c));
				(next ? c2 : c1)[k] = c.cycles;
			}
			read_all(&g, next ? y2 : y1, &ry, T);
		}
		assert_memory_equal(y1, y2, nq * 4);
		read_all(&g, got, &wh, T);
		assert_memory_equal(got, src, nq * 2);
		ov_check(&g, "fwd + other columns, alone", c1, bad);
		ov_check(&g, "fwd + other columns, carried", c2, bad);
		assert_true(c2[0] < c1[0]);
		for (int k = 0; k < g.n; k++) {
			csd_dev *D = g.dev[k];
			ok(D, csd_write_tokens_next(D, &bad1, src, T));
			expect(D, csd_forward_region(D, &ry, &xh, w, T, CSD_OVERWRITE),
			       CS_ERR_INVALID, "overlaps what the forward kernel reads or writes");
		}
		same_sram(&g, "a write of other columns");
	}
	read_all(&g, y1, &ry, T);
	/* refused, on every device: a write over the kernel's input, over its output (B) */
	csd_region rin = { CSD_MEM_A, 2 * uw, uw, uw };
	for (int k = 0; k < g.n; k++) {
		csd_dev *D = g.dev[k];
		ok(D, csd_write_tokens_next(D, &rin, L.dy, T));
		expect(D, csd_forward_region(D, &ry, &rx, w, T, CSD_OVERWRITE), CS_ERR_INVALID,
		       "overlaps what the forward kernel reads or writes (its input");
		ok(D, csd_write_tokens_next(D, &ry, L.x, T));
		expect(D, csd_backward_region(D, &ry, &rx, w, T, CSD_ACCUMULATE), CS_ERR_INVALID,
		       "overlaps what the backward kernel reads or writes (its output");
		/* dropped: nothing was written, and the next call runs */
		ok(D, csd_flush(D));
	}
	read_all(&g, y2, &ry, T);
	assert_memory_equal(y1, y2, nq * 4);
	same_sram(&g, "refused writes");
	free(got);
	free(y1);
	free(y2);
	kref_layer_free(&L);
	rig_close(&g);
}

/* pe=lite (A's one port): the write goes first, on its own; the same cycles and SRAM. */
static void wcarry_lite(void)
{
	csd_dev *d[2];
	ok(NULL, csd_open(&d[0], "cpu:2x2,awords=16384,bwords=8192,pe=lite"));
	ok(NULL, csd_open(&d[1], "cpu:2x2,awords=16384,bwords=8192"));
	int T = 4 * 24 - 3, W = 64;
	struct kref_layer L;
	assert_int_equal(kref_layer_make(&L, T, W, W, 0.9, KREF_PLAIN, 0), 0);
	csd_region rx = { CSD_MEM_A, 0, 64, 64 }, rw = { CSD_MEM_A, 8192, 64, 64 };
	csd_region ry = { CSD_MEM_B, 0, 64, 64 };
	uint64_t cyc[2][2];
	for (int k = 0; k < 2; k++)
		for (int next = 0; next < 2; next++) {
			csd_counters c;
			ok(d[k], csd_write_tokens(d[k], &rx, L.x, T));
			csd_reset_counters(d[k]);
			ok(d[k], (next ? csd_write_tokens_next : csd_write_tokens)(d[k], &rw, L.dy, T));
			ok(d[k], csd_backward_region(d[k], &ry, &rx, &L.sp, T, CSD_OVERWRITE));
			ok(d[k], csd_get_counters(d[k], &c));
			cyc[k][next] = c.cycles;
		}
	print_message(" pe=lite: %llu cycles plain, %llu carried; pe: %llu, %llu\n",
		      (unsigned long long)cyc[0][0], (unsigned long long)cyc[0][1],
		      (unsigned long long)cyc[1][0], (unsigned long long)cyc[1][1]);
	assert_int_equal(cyc[0][0], cyc[0][1]);
	assert_true(cyc[1][1] < cyc[1][0]);
	kref_layer_free(&L);
	csd_close(d[0]);
	csd_close(d[1]);
}

static void test_carried_write(void **state)
{
	(void)state;
	int bad = 0;
	print_message("carried writes: cpu estimate against the Verilated pe mesh (%.0f%%)\n",
		      OV_TOL * 100);
	wcarry_case(2, 2, 0.9, 64, 24, &bad);
	wcarry_case(2, 2, 0.5, 64, 24, &bad);
	/* the 4x4, whose writes cross more routers (the step's shape, C 128 at 32 tokens a PE,
	 * takes minutes on the Verilated mesh: C 64 at 16) */
	wcarry_case(4, 4, 0.95, 64, 16, &bad);
	wcarry_lite();
	assert_int_equal(bad, 0);
}

/*
 * csd_reduce_region (docs/architecture.md 7.5): the per-PE words summed on the mesh in the
 * order of a wgrad batch's reduction, each row's PEs from the east edge to column 0 and the
 * rows' sums from the south edge to row 0, the row sums left in column 0's words: the sums
 * and every PE's SRAM equal on every device and to that order computed here, the cpu
 * backend's cycle estimate within 2% of the Verilated pe mesh's (when built), a batch of
 * words at most.
 */
static void reduce_case(int rows, int cols, uint32_t aw, uint32_t bw, uint32_t base, uint32_t n,
			int *bad)
{
	struct rig g;
	rig_open(&g, rows, cols, aw, bw, 1);
	int P = g.P;
	snprintf(g.when, sizeof g.when, "reduce %dx%d", rows, cols);
	uint32_t *w = malloc((size_t)P * n * 4), want[256];
	for (size_t i = 0; i < (size_t)P * n; i++) /* mixed signs and exponents, some zeros */
		w[i] = i % 29 == 0 ? 0x80000000u
				   : nm_f32_bits((float)((int)((i * 2654435761u) % 2001) - 1000) /
						 (float)(1u << (i % 9)));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = 0;
		for (int r = rows - 1; r >= 0; r--) {
			uint32_t v = w[(size_t)(r * cols + cols - 1) * n + i];
			for (int c = cols - 2; c >= 0; c--)
				v = nm_add_bits(v, w[(size_t)(r * cols + c) * n + i]);
			s = r == rows - 1 ? v : nm_add_bits(s, v);
		}
		want[i] = s;
	}
	csd_region rw = { CSD_MEM_B, base, n, n };
	float got[MAXDEV][256];
	uint64_t cyc[MAXDEV];
	ALL(&g, csd_write_tokens(D, &rw, w, P));
	for (int k = 0; k < g.n; k++) {
		csd_counters c;
		csd_reset_counters(g.dev[k]);
		ok(g.dev[k], csd_reduce_region(g.dev[k], got[k], &rw));
		ok(g.dev[k], csd_get_counters(g.dev[k], &c));
		cyc[k] = c.cycles;
		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(nm_f32_bits(got[k][i]), want[i]);
	}
	char what[64];
	snprintf(what, sizeof what, "reduce %dx%d, %u words", rows, cols, n);
	ov_check(&g, what, cyc, bad);
	same_sram(&g, "reduce");
	/* column 0 keeps its row's sums (more than one column), the others their words */
	uint32_t *back = malloc((size_t)P * n * 4);
	read_all(&g, back, &rw, P);
	for (int q = 0; q < P; q++)
		for (uint32_t i = 0; i < n; i++) {
			uint32_t e = w[(size_t)q * n + i];
			if (cols > 1 && q % cols == 0) {
				e = w[(size_t)(q + cols - 1) * n + i];
				for (int c = cols - 2; c >= 0; c--)
					e = nm_add_bits(e, w[(size_t)(q + c) * n + i]);
			}
			assert_int_equal(back[(size_t)q * n + i], e);
		}
	free(back);
	free(w);
	rig_close(&g);
}

static void test_reduce(void **state)
{
	(void)state;
	int bad = 0;
	print_message("reduce: cpu estimate against the Verilated pe mesh (%.0f%%)\n", OV_TOL * 100);
	/* the Verilated meshes the other tests build: 1x1 and 2x3 of 256 words of B */
	reduce_case(1, 1, 512, 256, 100, 77, &bad);
	reduce_case(2, 3, 512, 256, 128, 128, &bad);
	reduce_case(2, 2, 16384, 8192, 4096, 256, &bad);
	reduce_case(2, 2, 16384, 8192, 8192 - 77, 77, &bad);
	reduce_case(4, 4, 16384, 8192, 5000, 128, &bad);
	assert_int_equal(bad, 0);
	csd_dev *dev;
	ok(NULL, csd_open(&dev, "cpu:2x2,awords=512,bwords=256"));
	float out[256];
	csd_region r0 = { CSD_MEM_B, 0, 0, 0 }, big = { CSD_MEM_B, 0, 129, 129 };
	csd_region ra = { CSD_MEM_A, 0, 8, 8 }, far = { CSD_MEM_B, 250, 8, 8 };
	expect(dev, csd_reduce_region(dev, out, &r0), CS_ERR_INVALID, "1 to 128 words");
	expect(dev, csd_reduce_region(dev, out, &big), CS_ERR_INVALID, "1 to 128 words");
	expect(dev, csd_reduce_region(dev, out, &ra), CS_ERR_INVALID, "not a B region");
	expect(dev, csd_reduce_region(dev, out, &far), CS_ERR_RANGE, "past the end of SRAM B");
	expect(dev, csd_reduce_region(dev, NULL, &far), CS_ERR_INVALID, "NULL");
	csd_close(dev);
}

int main(void)
{
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 1;
	printf("seed %llu (set TEST_SEED to replay)\n", (unsigned long long)seed);
	kref_rng_state = seed * 0x9e3779b97f4a7c15ull;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernels_1x1),
		cmocka_unit_test(test_kernels_2x2),
		cmocka_unit_test(test_kernels_4x4),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_measure),
		cmocka_unit_test(test_bad_regions),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_carried_write),
		cmocka_unit_test(test_reduce),
		cmocka_unit_test(test_first_touch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
