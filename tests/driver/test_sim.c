/*
 * test_sim.c - the sim backend against the cpu backend (the golden model), bit for bit:
 * plan_exec's real command stream run through
 *   - the word-level device model (sim:RxC,model: verif/models/mesh_model.c, pe_model per
 *     tile): the first execution of fw/kernels.s, many random cases, and
 *   - the Verilated mesh_top with the real PE (sim:RxC,awords=512,bwords=256: the builds
 *     host/driver/sim.mk makes for the tests; 1x1, 2x2, 2x3; wgrad's cross-major dot
 *     groups also on the default 2x2 and 4x4), and with the board PEs in their bitstreams'
 *     configurations (pe=lite 1x1, pe=micro_mt 2x2).
 * Also: which model file a sim URI needs and the make command named when it is missing or
 * stale (the backend builds nothing).
 * Random shapes (tiled and not, not dividing the mesh), sparsities 0..0.99 and 1 (all
 * zero), empty rows and columns, special values. Also: zero skipping (the link bytes the
 * device took = the protocol overhead of an all-zero layer + 4 per nonzero + 4 per run),
 * the self-test program on every PE, and a device that reports errors.
 * TEST_SEED replays; REGRESS=1 runs many more cases. SIM_RTL=0 leaves out the Verilated
 * engine. The SAN build loads the plain build's Verilated models (sim.mk); a missing one
 * fails its cases, naming the make command that builds it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/numerics.h"
#include "driver/csd.h"
#include "driver/fw.h"
#include "driver/proto.h"
#include "driver/sim_harness.h"
#include "../support/kernel_ref.h"
#include "../../verif/models/mesh_model.h"

static int env_on(const char *name, int dflt)
{
	const char *r = getenv(name);
	if (!r || !*r)
		return dflt;
	return strcmp(r, "0") != 0;
}

/* a layer from the shared generator (tests/support/kernel_ref.c), asserting on failure */
static void layer_make(struct kref_layer *L, int T, int N, int K, double sparsity, int specials,
		       int empty_lines)
{
	assert_int_equal(kref_layer_make(L, T, N, K, sparsity,
					 specials ? KREF_SPECIALS : KREF_PLAIN, empty_lines),
			 0);
}

/* Run kernel k on dev and ref; compare bit for bit. Returns the number of mismatches. */
static long run_cmp(csd_dev *dev, csd_dev *ref, int k, const struct kref_layer *L,
		    const char *what)
{
	long bad = kref_compare(dev, ref, k, L, what);
	assert_true(bad >= 0); /* both calls succeeded */
	return bad;
}

static const double sparsities[] = { 0, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0 };

struct sweep {
	const char *engine; /* "model" or "" (rtl), or "pe=IMPL" (rtl of that implementation),
			     * or "model,pe=IMPL" (the model with that implementation's dot and
			     * streams) */
	int cases;
	int max_t, max_f; /* largest T and K, N (0: 3 * PEs + 40 and min(awords, 80)) */
	const int (*shapes)[2];
	int nshapes;
	const uint32_t (*sizes)[2];
	int nsizes;
};

static void random_sweep(const struct sweep *sw)
{
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 1;
	long total_bad = 0;
	int ran = 0;
	for (int sh = 0; sh < sw->nshapes; sh++)
		for (int sz = 0; sz < sw->nsizes; sz++) {
			int R = sw->shapes[sh][0], C = sw->shapes[sh][1];
			uint32_t aw = sw->sizes[sz][0], bw = sw->sizes[sz][1];
			char uri[128], ref_uri[128];
			snprintf(uri, sizeof uri, "sim:%dx%d,awords=%u,bwords=%u%s%s", R, C, aw, bw,
				 sw->engine[0] ? "," : "", sw->engine);
			snprintf(ref_uri, sizeof ref_uri, "cpu:%dx%d,awords=%u,bwords=%u", R, C, aw,
				 bw);
			csd_dev *dev = NULL, *ref = NULL;
			if (csd_open(&dev, uri))
				print_error("%s: %s\n", uri, csd_last_error(NULL));
			assert_non_null(dev);
			assert_int_equal(csd_open(&ref, ref_uri), CS_OK);
			int per = sw->cases / (sw->nshapes * sw->nsizes);
			for (int c = 0; c < per; c++) {
				kref_rng_state = seed * 1000003u + (uint64_t)(sh * 131 + sz * 17) * 7919u +
					    (uint64_t)c;
				int T = kref_rng_int(1, sw->max_t ? sw->max_t : 3 * R * C + 40);
				int maxf = (int)aw < 80 ? (int)aw : 80;
				if (sw->max_f)
					maxf = sw->max_f;
				int K = kref_rng_int(1, maxf), N = kref_rng_int(1, maxf);
				double sp = sparsities[kref_rng_int(0, 7)];
				int specials = (c % 5) == 4, empty = (c % 3) == 2;
				int k = c % 4; /* 3: csd_backward_wgrad */
				struct kref_layer L;
				layer_make(&L, T, N, K, sp, specials, empty);
				char what[256];
				snprintf(what, sizeof what,
					 "%s kernel %d T=%d N=%d K=%d sparsity %.2f nnz %lld case %d", uri,
					 k, T, N, K, sp, (long long)L.sp.nnz, c);
				long bad = run_cmp(dev, ref, k, &L, what);
				if (bad)
					print_error("%s: %ld mismatches\n", what, bad);
				total_bad += bad;
				ran++;
				kref_layer_free(&L);
			}
			csd_close(dev);
			csd_close(ref);
		}
	print_message("%d cases on sim%s%s, %ld mismatching outputs\n", ran,
		      sw->engine[0] ? "," : "", sw->engine, total_bad);
	assert_int_equal(total_bad, 0);
}

static void test_model_random(void **state)
{
	(void)state;
	static const int shapes[][2] = { { 1, 1 }, { 1, 3 }, { 2, 1 }, { 2, 2 }, { 2, 3 }, { 3, 2 } };
	static const uint32_t sizes[][2] = { { 512, 256 }, { 128, 64 }, { 64, 32 }, { 4096, 2048 } };
	struct sweep sw = { "model", env_on("REGRESS", 0) ? 4800 : 480, 0, 0, shapes, 6, sizes, 4 };
	random_sweep(&sw);
	/* the boards' wgrad stream (a SET_MAJOR per major) on PEs whose dot reads no offset */
	struct sweep lite = { "model,pe=lite", env_on("REGRESS", 0) ? 1200 : 120, 0, 0, shapes,
			      6, sizes, 4 };
	random_sweep(&lite);
}

static void test_rtl_random(void **state)
{
	(void)state;
	if (!env_on("SIM_RTL", 1)) {
		skip();
		return;
	}
	/* make test builds 1x1 and 2x3 (plus the default 4x4); regress adds 2x2 */
	static const int shapes[][2] = { { 1, 1 }, { 2, 3 }, { 2, 2 } };
	static const uint32_t sizes[][2] = { { 512, 256 } };
	int regress = env_on("REGRESS", 0);
	struct sweep sw = { "", regress ? 3000 : 240, 0, 0, shapes, regress ? 3 : 2, sizes, 1 };
	random_sweep(&sw);
}

/* 4x4 at the default SRAM sizes (the default build): long config chain, where a wavelet
 * can overtake a configuration write (the race plan.c's SYNC after the writes closes). */
static void test_rtl_random_4x4(void **state)
{
	(void)state;
	if (!env_on("SIM_RTL", 1)) {
		skip();
		return;
	}
	static const int shapes[][2] = { { 4, 4 } };
	static const uint32_t sizes[][2] = { { 16384, 8192 } };
	struct sweep sw = { "", env_on("REGRESS", 0) ? 600 : 45, 0, 0, shapes, 1, sizes, 1 };
	random_sweep(&sw);
}

/* wgrad's dot groups across majors (docs/architecture.md 4.4: each position's val is its
 * major's A offset) on the Verilated pe meshes 2x2 and 4x4 at the default sizes: sparse
 * layers whose majors hold a few positions each (so nearly every group mixes majors),
 * batches of two RUNs (cut at 255), Tp from 1 to 32, csd_wgrad and csd_backward_wgrad;
 * and the boards' stream (dotspan=0: a SET_MAJOR per major, val 0) on the pe 2x2. */
static void test_rtl_wgrad_majors(void **state)
{
	(void)state;
	if (!env_on("SIM_RTL", 1)) {
		skip();
		return;
	}
	static const char *const uris[] = { "sim:2x2", "sim:4x4", "sim:2x2,dotspan=0" };
	static const struct { int T, K, N; double s; } cs[] = {
		{ 64, 96, 80, 0.9 }, { 128, 64, 128, 0.95 }, { 7, 40, 72, 0.8 },
		{ 100, 96, 96, 0.5 }, { 256, 128, 64, 0.99 }, { 33, 128, 128, 0.9 },
	};
	long total_bad = 0;
	int ran = 0;
	for (int u = 0; u < 3; u++) {
		char ref_uri[32];
		snprintf(ref_uri, sizeof ref_uri, "cpu:%s", uris[u] + 4);
		csd_dev *dev = NULL, *ref = NULL;
		if (csd_open(&dev, uris[u]))
			print_error("%s: %s\n", uris[u], csd_last_error(NULL));
		assert_non_null(dev);
		assert_int_equal(csd_open(&ref, ref_uri), CS_OK);
		for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
			for (int k = 2; k <= 3; k++) {
				kref_rng_state = 4242u + c;
				struct kref_layer L;
				layer_make(&L, cs[c].T, cs[c].N, cs[c].K, cs[c].s, 0, (int)c % 2);
				char what[192];
				snprintf(what, sizeof what, "%s kernel %d T=%d N=%d K=%d s %.2f",
					 uris[u], k, cs[c].T, cs[c].N, cs[c].K, cs[c].s);
				long bad = run_cmp(dev, ref, k, &L, what);
				if (bad)
					print_error("%s: %ld mismatches\n", what, bad);
				total_bad += bad;
				ran++;
				kref_layer_free(&L);
			}
		csd_close(dev);
		csd_close(ref);
	}
	print_message("%d wgrad cases on the pe meshes, %ld mismatching outputs\n", ran,
		      total_bad);
	assert_int_equal(total_bad, 0);
}

/* The shipping board implementations in their bitstreams' configurations (pe=lite: the
 * default 1x1 bitstream; pe=micro_mt: the 2x2 one): small random layers, specials and empty
 * lines included (make test builds both models). micro_mt's PEs take hundreds of cycles a
 * MAC, so its layers stay small. */
static void test_rtl_random_boards(void **state)
{
	(void)state;
	if (!env_on("SIM_RTL", 1)) {
		skip();
		return;
	}
	int regress = env_on("REGRESS", 0);
	static const int lite_shape[][2] = { { 1, 1 } }, mt_shape[][2] = { { 2, 2 } };
	static const uint32_t lite_size[][2] = { { 32768, 512 } }, mt_size[][2] = { { 8192, 4096 } };
	struct sweep lite = { "pe=lite", regress ? 300 : 30, 40, 40, lite_shape, 1, lite_size, 1 };
	struct sweep mt = { "pe=micro_mt", regress ? 120 : 12, 16, 24, mt_shape, 1, mt_size, 1 };
	random_sweep(&lite);
	random_sweep(&mt);
}

/* pe= and the model files: without sizes an implementation gets its bitstream's, and the
 * file the backend loads is the one make builds for that configuration (SIM_BOARD_LITE_SO:
 * verif/board.mk's default board configuration, through sim.mk's naming; SIM_BOARD_MT_SO:
 * the 2x2 pe_micro_mt board). A missing or stale model is an error naming the make command;
 * nothing is built. */
static void test_models_and_errors(void **state)
{
	(void)state;
	char path[1024], args[256], err[512], want[1200];
	assert_int_equal(csd_sim_model("sim:1x1,pe=lite", 0, path, sizeof path, args, sizeof args,
				       err, sizeof err),
			 CS_OK);
	assert_string_equal(path, SIM_BOARD_LITE_SO);
	assert_string_equal(args, "MESH=1x1 PE=lite AWORDS=32768 BWORDS=512");
	assert_int_equal(csd_sim_model("sim:2x2,pe=micro_mt", 0, path, sizeof path, args,
				       sizeof args, err, sizeof err),
			 CS_OK);
	assert_string_equal(path, SIM_BOARD_MT_SO);
	assert_string_equal(args, "MESH=2x2 PE=micro_mt AWORDS=8192 BWORDS=4096");
	assert_int_equal(csd_sim_model("sim:2x2,pe=micro_mt", 1, path, sizeof path, args,
				       sizeof args, err, sizeof err),
			 CS_OK);
	snprintf(want, sizeof want, "%s/libmesh_2x2_a8192_b4096_micro_mt_fst.so", SIM_TEST_DIR);
	assert_string_equal(path, want);
	assert_string_equal(args, "MESH=2x2 PE=micro_mt AWORDS=8192 BWORDS=4096 TRACE=1");
	/* full keeps the old names */
	assert_int_equal(csd_sim_model("sim", 0, path, sizeof path, args, sizeof args, err,
				       sizeof err),
			 CS_OK);
	snprintf(want, sizeof want, "%s/libmesh_4x4.so", SIM_TEST_DIR);
	assert_string_equal(path, want);
	assert_string_equal(args, "MESH=4x4 PE=full AWORDS=16384 BWORDS=8192");
	assert_int_equal(csd_sim_model("sim:2x3,awords=512,bwords=256,pe=full", 0, path,
				       sizeof path, args, sizeof args, err, sizeof err),
			 CS_OK);
	snprintf(want, sizeof want, "%s/libmesh_2x3_a512_b256.so", SIM_TEST_DIR);
	assert_string_equal(path, want);
	assert_int_equal(csd_sim_model("sim:1x1,bwords=256,pe=lite", 0, path, sizeof path, args,
				       sizeof args, err, sizeof err),
			 CS_OK);
	snprintf(want, sizeof want, "%s/libmesh_1x1_a32768_b256_lite.so", SIM_TEST_DIR);
	assert_string_equal(path, want);
	/* the model engine needs none */
	assert_int_equal(csd_sim_model("sim:2x2,model,pe=lite", 0, path, sizeof path, args,
				       sizeof args, err, sizeof err),
			 CS_OK);
	assert_string_equal(path, "");
	assert_string_equal(args, "");
	/* what the RTL cannot be */
	static const char *const bad[][2] = {
		{ "sim:1x1,pe=micro_mt", "needs at least 3 PEs" },
		{ "sim:2x2,pe=micro_mt,bwords=2048", "must be 2 * bwords" },
		{ "sim:2x2,pe=pe_lite", "unknown PE implementation 'pe_lite'" },
		{ "cpu:2x2", "not a sim device" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(csd_sim_model(bad[i][0], 0, path, sizeof path, args, sizeof args,
					       err, sizeof err),
				 CS_ERR_INVALID);
		if (!strstr(err, bad[i][1]))
			print_error("%s: '%s' lacks '%s'\n", bad[i][0], err, bad[i][1]);
		assert_non_null(strstr(err, bad[i][1]));
	}
	/* the cpu model takes pe= for the sizes and the checks */
	csd_dev *dev;
	csd_info info;
	assert_int_equal(csd_open(&dev, "cpu:1x1,pe=lite"), CS_OK);
	csd_get_info(dev, &info);
	assert_int_equal(info.a_words, 32768);
	assert_int_equal(info.b_words, 512);
	assert_string_equal(info.pe, "lite");
	csd_close(dev);
	assert_int_equal(csd_open(&dev, "cpu:3x1,pe=micro_mt"), CS_OK);
	csd_get_info(dev, &info);
	assert_int_equal(info.a_words, 8192);
	assert_int_equal(info.b_words, 4096);
	assert_string_equal(info.pe, "micro_mt");
	csd_close(dev);
	assert_int_equal(csd_open(&dev, "cpu:1x2,pe=micro_mt"), CS_ERR_INVALID);
	/* missing: an error with the command, nothing built */
	const char *old = getenv("CSD_SIM_DIR");
	char saved[1024] = "", dir[] = "/tmp/test_sim_models_XXXXXX";
	if (old)
		snprintf(saved, sizeof saved, "%s", old);
	assert_non_null(mkdtemp(dir));
	setenv("CSD_SIM_DIR", dir, 1);
	assert_int_equal(csd_open(&dev, "sim:2x2,pe=micro_mt"), CS_ERR_NOT_FOUND);
	snprintf(want, sizeof want,
		 "sim-model MESH=2x2 PE=micro_mt AWORDS=8192 BWORDS=4096 SIM_DIR=%s", dir);
	print_message("%s\n", csd_last_error(NULL));
	assert_non_null(strstr(csd_last_error(NULL), "is not built"));
	assert_non_null(strstr(csd_last_error(NULL), want));
	snprintf(path, sizeof path, "%s/libmesh_2x2_a8192_b4096_micro_mt.so", dir);
	struct stat st;
	assert_int_not_equal(stat(path, &st), 0);
	/* stale (older than the RTL): the same, and it is not loaded */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	struct timeval tv[2] = { { 1, 0 }, { 1, 0 } };
	assert_int_equal(utimes(path, tv), 0);
	assert_int_equal(csd_open(&dev, "sim:2x2,pe=micro_mt"), CS_ERR_NOT_FOUND);
	print_message("%s\n", csd_last_error(NULL));
	assert_non_null(strstr(csd_last_error(NULL), "is older than"));
	assert_non_null(strstr(csd_last_error(NULL), want));
	unlink(path);
	rmdir(dir);
	if (old)
		setenv("CSD_SIM_DIR", saved, 1);
	else
		unsetenv("CSD_SIM_DIR");
}

/* Zero skipping: the words the device took = those of the all-zero layer of the same shape
 * (pure protocol overhead) + one per nonzero + one RUN header per run (consecutive nonempty
 * majors of one output tile, cut at 255; wgrad on pe: any majors of a batch, cut at 255;
 * on pe_lite, and on pe with dotspan=0, as fwd/bwd). Counted by the device side of the
 * link. */
static void zero_skip(const char *engine)
{
	int span = !strstr(engine, "pe=lite") && !strstr(engine, "dotspan=0");
	static const int shapes[][3] = { { 37, 50, 45 }, { 64, 300, 20 }, { 9, 7, 500 } };
	for (int s = 0; s < 3; s++) {
		int T = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		char uri[96];
		/* tune=0: the widest output tiles, as re-derived below */
		snprintf(uri, sizeof uri, "sim:2x3,awords=512,bwords=256,tune=0%s%s",
			 engine[0] ? "," : "", engine);
		/* the all-zero layer first: its bytes are the overhead */
		uint64_t overhead[3] = { 0 };
		for (int si = 0; si < 8; si++) {
			kref_rng_state = 77 + (uint64_t)s;
			struct kref_layer L;
			layer_make(&L, T, N, K, sparsities[7 - si], 0, si == 3);
			csd_dev *dev;
			assert_int_equal(csd_open(&dev, uri), CS_OK);
			for (int k = 0; k < 3; k++) {
				size_t n = k == 0 ? (size_t)T * N : k == 1 ? (size_t)T * K : (size_t)L.sp.nnz + 1;
				float *o = malloc(n * sizeof *o);
				assert_non_null(o);
				csd_reset_counters(dev);
				int rc = k == 0   ? csd_forward(dev, o, L.x, &L.sp, T)
					 : k == 1 ? csd_backward(dev, o, L.dy, &L.sp, T)
						  : csd_wgrad(dev, o, L.dy, L.x, &L.sp, T);
				assert_int_equal(rc, CS_OK);
				csd_counters c;
				csd_get_counters(dev, &c);
				/* the plan of docs 4.5 for this shape, re-derived: P = 6, A 512
				 * elements, B 256 words (fwd/bwd: 128 fp32 per bank; wgrad: 256 bf16,
				 * batches of at most 128 positions) */
				int P = 6, din = k == 1 ? N : K, dout = k == 1 ? K : N;
				long bcap = k == 2 ? 256 : 128, cap = 128;
				long tp = (T + P - 1) / P;
				if (tp > 512 / din)
					tp = 512 / din;
				if (tp > bcap)
					tp = bcap;
				long dt = bcap / tp < dout ? bcap / tp : dout;
				long ntt = (T + P * tp - 1) / (P * tp);
				/* per token tile: runs (one major of one output tile, cut at 255 and,
				 * for wgrad, at batch ends) and wgrad batches (4 words out each:
				 * INJECT END, COLLECT + timeout) */
				/* a RUN spans consecutive nonempty majors (wgrad with span: any
				 * majors); a new one at the tile's and a batch's first nonzero,
				 * after 255, and (but wgrad with span) where a major is skipped
				 * (rn: nonzeros in the open RUN) */
				uint64_t runs = 0, batches = 0;
				for (long d0 = 0; d0 < dout; d0 += dt) {
					long bc = 0, rn = 0;
					int last = -2;
					for (int m = 0; m < din; m++) {
						long cnt = 0;
						for (long o2 = d0; o2 < d0 + dt && o2 < dout; o2++) {
							int i = k == 1 ? m : (int)o2, j = k == 1 ? (int)o2 : m;
							cnt += L.mask[(size_t)i * K + j];
						}
						while (cnt > 0) {
							long part = k == 2 && cnt > cap - bc ? cap - bc : cnt;
							for (long left = part; left > 0;) {
								int skip = (k != 2 || !span) && m != last &&
									   m != last + 1;
								if (rn && (rn == 255 || skip))
									rn = 0;
								if (!rn)
									runs++;
								long take = left < 255 - rn ? left : 255 - rn;
								rn += take;
								left -= take;
								last = m;
							}
							cnt -= part;
							if (k == 2 && (bc += part) == cap) {
								batches++;
								bc = 0;
								rn = 0;
							}
						}
					}
					if (k == 2 && bc)
						batches++;
				}
				uint64_t nz_words = (uint64_t)ntt * ((uint64_t)L.sp.nnz + runs);
				if (si == 0) {
					assert_int_equal(L.sp.nnz, 0);
					overhead[k] = c.link_bytes_out;
				} else {
					uint64_t want = overhead[k] + 4 * nz_words + 4 * 4 * ntt * batches;
					if (c.link_bytes_out != want)
						print_error("%s kernel %d sparsity %.2f: %llu bytes, want %llu\n",
							    uri, k, sparsities[7 - si],
							    (unsigned long long)c.link_bytes_out,
							    (unsigned long long)want);
					assert_int_equal(c.link_bytes_out, want);
				}
				assert_int_equal(c.weight_bytes, 4 * nz_words);
				assert_int_equal(c.nnz_streamed, (uint64_t)ntt * (uint64_t)L.sp.nnz);
				free(o);
			}
			csd_close(dev);
			kref_layer_free(&L);
		}
	}
}

static void test_zero_skip_model(void **state)
{
	(void)state;
	zero_skip("model");
	zero_skip("model,pe=lite");
}

static void test_zero_skip_rtl(void **state)
{
	(void)state;
	if (!env_on("SIM_RTL", 1)) {
		skip();
		return;
	}
	zero_skip("");
	zero_skip("dotspan=0");
}

/* ---- raw host-port access: the self-test and error paths ----------------------------- */

struct raw {
	struct mesh_model mm;
	int model;
	void *so;
	simh *h;
	int (*send)(simh *, const uint32_t *, size_t, uint64_t);
	int (*recv)(simh *, uint32_t *, size_t, uint64_t);
	void (*destroy)(simh *);
};

static void raw_open(struct raw *r, int model, int R, int C)
{
	memset(r, 0, sizeof *r);
	r->model = model;
	if (model) {
		assert_int_equal(mesh_model_init(&r->mm, R, C, 512, 256, 0), 0);
		return;
	}
	char path[512];
	const char *dir = getenv("CSD_SIM_DIR") ? getenv("CSD_SIM_DIR") : SIM_TEST_DIR;
	snprintf(path, sizeof path, "%s/libmesh_%dx%d_a512_b256.so", dir, R, C);
	r->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!r->so)
		print_error("%s\n", dlerror());
	assert_non_null(r->so);
	simh *(*create)(void);
	*(void **)&create = dlsym(r->so, "simh_new");
	*(void **)&r->send = dlsym(r->so, "simh_send");
	*(void **)&r->recv = dlsym(r->so, "simh_recv");
	*(void **)&r->destroy = dlsym(r->so, "simh_free");
	assert_non_null(create);
	r->h = create();
	assert_non_null(r->h);
}

static void raw_close(struct raw *r)
{
	if (r->model)
		mesh_model_free(&r->mm);
	else {
		r->destroy(r->h); /* the object stays loaded (see backend_sim.c) */
	}
}

static void raw_send(struct raw *r, const uint32_t *w, size_t n)
{
	if (r->model)
		assert_int_equal(mesh_model_send(&r->mm, w, n), 0);
	else
		assert_int_equal(r->send(r->h, w, n, 1000000), 0);
}

static void raw_recv(struct raw *r, uint32_t *w, size_t n)
{
	if (r->model)
		assert_int_equal(mesh_model_recv(&r->mm, w, n), 0);
	else
		assert_int_equal(r->recv(r->h, w, n, 1000000), 0);
}

static void selftest(int model)
{
	static const int shapes[][2] = { { 1, 1 }, { 2, 3 } };
	struct csd_fw fw;
	char err[256];
	assert_int_equal(csd_fw_get(&fw, "selftest", err, sizeof err), CS_OK);
	int pc = csd_fw_find(&fw, "st_ctl");
	assert_true(pc >= 0);
	for (int s = 0; s < 2; s++) {
		int R = shapes[s][0], C = shapes[s][1], P = R * C;
		struct raw r;
		raw_open(&r, model, R, C);
		uint32_t buf[400];
		size_t n = 0;
		buf[n++] = proto_hdr_clear();
		buf[n++] = proto_hdr_write(PROTO_T_IMEM, PROTO_PE_ALL, (unsigned)fw.n_instr);
		buf[n++] = 0;
		for (int i = 0; i < fw.n_instr; i++)
			buf[n++] = fw.imem[i];
		buf[n++] = proto_hdr_write(PROTO_T_TASK, PROTO_PE_ALL, 1);
		buf[n++] = 16 + PROTO_C_BCAST; /* control task of BCAST */
		buf[n++] = 0x200u | (uint32_t)pc;
		buf[n++] = proto_hdr_write(PROTO_T_REG, PROTO_PE_ALL, 1);
		buf[n++] = 0;
		buf[n++] = 0; /* r0 = 0 */
		for (int q = 0; q < P; q++) { /* BCAST route, as plan_routes sets it */
			int rr = q / C, cc = q % C;
			buf[n++] = proto_hdr_write(PROTO_T_ROUTE, (unsigned)q, 1);
			buf[n++] = PROTO_C_BCAST;
			buf[n++] = 16u | (rr == 0 && cc < C - 1 ? 2u : 0u) | (rr < R - 1 ? 4u : 0u);
		}
		/* the config chain and the fabric are not ordered with each other: the host
		 * port checks the route of (0,0) when it decodes INJECT, so let the writes land
		 * first (SYNC waits for the chain too) */
		buf[n++] = proto_hdr_sync();
		buf[n++] = 100000;
		buf[n++] = proto_hdr_inject(PROTO_C_BCAST, 1, 1);
		buf[n++] = proto_ctl(PROTO_CTL_SELFTEST, 0x1234);
		buf[n++] = proto_hdr_sync();
		buf[n++] = 100000;
		raw_send(&r, buf, n);
		uint32_t h[2];
		raw_recv(&r, h, 2);
		assert_int_equal(h[0], proto_resp_hdr(PROTO_SYNC, 0, 0));
		assert_int_equal(h[1], proto_resp_hdr(PROTO_SYNC, 0, 0));
		for (int q = 0; q < P; q++) {
			uint32_t cmd[2] = { proto_hdr_read(PROTO_T_B, (unsigned)q, 16), 0 }, rsp[17];
			raw_send(&r, cmd, 2);
			raw_recv(&r, rsp, 17);
			assert_int_equal(rsp[0], proto_resp_hdr(PROTO_READ, 0, 16));
			/* B[0]: {0x5e1f, mismatches}; B[1..15] low halves: seed + address */
			assert_int_equal(rsp[1], 0x5e1f0000u);
			for (int a = 1; a < 16; a++)
				assert_int_equal(rsp[1 + a] & 0xffff, (0x1234u + (unsigned)a) & 0xffff);
		}
		if (!model) { /* every wait is bounded: no response pending -> timeout */
			uint32_t none;
			assert_int_equal(r.recv(r.h, &none, 1, 1000), -1);
		}
		/* and a bad command leaves the port working: unknown opcode, then ECHO */
		uint32_t bad[3] = { 0xf0000000u, proto_hdr_echo(1), 0xcafe };
		raw_send(&r, bad, 3);
		uint32_t got[3];
		raw_recv(&r, got, 3);
		assert_int_equal(got[0], proto_resp_hdr(0xf, PROTO_ST_BAD_OP, 0));
		assert_int_equal(got[1], proto_resp_hdr(PROTO_ECHO, 0, 1));
		assert_int_equal(got[2], 0xcafe);
		raw_close(&r);
	}
}

static void test_selftest_model(void **state)
{
	(void)state;
	selftest(1);
}

static void test_selftest_rtl(void **state)
{
	(void)state;
	if (!env_on("SIM_RTL", 1)) {
		skip();
		return;
	}
	selftest(0);
}

/* Counters come from the device: cycles > 0, MAC-busy = one per MAC of the kernel. */
static void test_rtl_counters(void **state)
{
	(void)state;
	if (!env_on("SIM_RTL", 1)) {
		skip();
		return;
	}
	csd_dev *dev;
	assert_int_equal(csd_open(&dev, "sim:2x3,awords=512,bwords=256"), CS_OK);
	kref_rng_state = 5;
	struct kref_layer L;
	layer_make(&L, 16, 20, 24, 0.7, 0, 0);
	float *y = malloc((size_t)16 * 20 * sizeof *y);
	assert_int_equal(csd_forward(dev, y, L.x, &L.sp, 16), CS_OK);
	csd_counters c;
	csd_get_counters(dev, &c);
	assert_true(c.cycles > 0);
	/* 16 tokens over 6 PEs: 3 per PE (2 padding tokens), every nonzero an AXPY over
	 * them on every PE */
	assert_int_equal(c.mac_busy, (uint64_t)L.sp.nnz * 18);
	assert_true(c.link_bytes_in > 0);
	free(y);
	kref_layer_free(&L);
	csd_close(dev);
}


/* The device model against the RTL, word for word: random host-port commands, good and
 * bad (bad opcode, target, PE, address, RUN n = 0, unrouted color, COLLECT too large),
 * each followed by a SYNC (config writes and wavelets are not ordered with each other). */
static void test_hostport_diff(void **state)
{
	(void)state;
	if (!env_on("SIM_RTL", 1)) {
		skip();
		return;
	}
	struct raw rm, rr;
	raw_open(&rm, 1, 2, 3);
	raw_open(&rr, 0, 2, 3);
	kref_rng_state = 99;
	static const unsigned tsz[10] = { 256, 256, 256, 256, 32, 16, 16, 8, 5, 6 };
	int ncmd = env_on("REGRESS", 0) ? 3000 : 400;
	long words = 0;
	for (int i = 0; i < ncmd; i++) {
		uint32_t c[80];
		size_t n = 0;
		unsigned kind = (unsigned)kref_rng_int(0, 11);
		unsigned pe = kref_rng_int(0, 7) == 0 ? (unsigned)kref_rng_int(6, 255) : (unsigned)kref_rng_int(0, 5);
		unsigned t = (unsigned)kref_rng_int(0, 9);
		if (kref_rng_int(0, 9) == 0)
			t = (unsigned)kref_rng_int(10, 15);
		unsigned len = (unsigned)kref_rng_int(0, 6);
		unsigned addr = tsz[t < 10 ? t : 0] ? (unsigned)kref_rng_int(0, (int)tsz[t < 10 ? t : 0]) : 0;
		switch (kind) {
		case 0: /* ECHO */
			c[n++] = proto_hdr_echo(len);
			for (unsigned k = 0; k < len; k++)
				c[n++] = (uint32_t)kref_rng_next();
			break;
		case 1: case 2: { /* WRITE (not routes of BCAST: keep the BCAST route for INJECT) */
			if (t == 5 && addr == 0)
				addr = 1;
			unsigned wpe = kref_rng_int(0, 3) == 0 ? 0xff : pe;
			c[n++] = proto_hdr_write(t, wpe, len);
			c[n++] = addr;
			for (unsigned k = 0; k < len; k++) {
				c[n] = t == 4 ? (uint32_t)kref_rng_int(0, 0xff) /* valid = 0: no task */
					      : (uint32_t)kref_rng_next();
				/* routes the model can follow: loop-free (even colors only E/S,
				 * odd colors only W/N, as the firmware's colors are; a loop
				 * circulates forever in the RTL, the model drops it), and none
				 * from router (0,0) west into the host port (it takes wavelets only
				 * during a COLLECT and the model's host queue has no back-pressure,
				 * so an INJECT behind them would hang the RTL only) */
				if (t == 5) {
					c[n] &= ((addr + k) & 1) ? 0x19u : 0x16u;
					if (wpe == 0 || wpe == 0xff)
						c[n] &= ~8u;
				}
				n++;
			}
			break;
		}
		case 3: case 4: /* READ (not the counters: task-busy cycles are timing) */
			if (t == 8 || t == 9)
				t = 7;
			c[n++] = proto_hdr_read(t, pe, len);
			c[n++] = addr;
			break;
		case 5: /* RUN, sometimes n = 0, colors routed or not */
			c[n++] = proto_hdr_run((unsigned)kref_rng_int(0, 7), kref_rng_int(0, 4) ? len : 0, 7);
			for (unsigned k = 0; k < (kref_rng_int(0, 4) ? len : 0); k++)
				c[n++] = (uint32_t)kref_rng_next();
			if (proto_resp_n(c[0]) == 0 && ((c[0] >> 16) & 0xff) == 0)
				n = 1;
			else
				n = 1 + ((c[0] >> 16) & 0xff);
			for (size_t k = 1; k < n; k++)
				c[k] = (uint32_t)kref_rng_next();
			break;
		case 6: /* INJECT */
			c[n++] = proto_hdr_inject((unsigned)kref_rng_int(0, 7), kref_rng_int(0, 1), len);
			for (unsigned k = 0; k < len; k++)
				c[n++] = (uint32_t)kref_rng_next();
			break;
		case 7: /* COLLECT: too large, or nothing to collect (timeout) */
			c[n++] = proto_hdr_collect(kref_rng_int(0, 1) ? 300 : (unsigned)kref_rng_int(0, 2));
			c[n++] = 50;
			break;
		case 8: /* unknown opcode */
			c[n++] = (uint32_t)kref_rng_int(0xa, 0xf) << 28;
			break;
		case 9:
			c[n++] = proto_hdr_clear();
			break;
		case 10: /* COUNTERS with a bad PE only (the good ones carry cycles) */
			c[n++] = proto_hdr_counters((unsigned)kref_rng_int(6, 255));
			break;
		default:
			c[n++] = 0; /* NOP */
			break;
		}
		c[n++] = proto_hdr_sync();
		c[n++] = 100000;
		raw_send(&rm, c, n);
		raw_send(&rr, c, n);
		size_t have = mesh_model_avail(&rm.mm);
		uint32_t a[80], b[80];
		assert_true(have <= 80);
		raw_recv(&rm, a, have);
		raw_recv(&rr, b, have);
		for (size_t k = 0; k < have; k++)
			if (a[k] != b[k]) {
				print_error("command %d (0x%08x): response word %zu model 0x%08x rtl 0x%08x\n",
					    i, c[0], k, a[k], b[k]);
				assert_int_equal(a[k], b[k]);
			}
		uint32_t extra;
		assert_int_equal(rr.recv(rr.h, &extra, 1, 200), -1); /* the RTL said no more */
		words += (long)have;
	}
	print_message("%d commands, %ld response words identical\n", ncmd, words);
	raw_close(&rm);
	raw_close(&rr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selftest_model),
		cmocka_unit_test(test_zero_skip_model),
		cmocka_unit_test(test_model_random),
		cmocka_unit_test(test_selftest_rtl),
		cmocka_unit_test(test_rtl_counters),
		cmocka_unit_test(test_zero_skip_rtl),
		cmocka_unit_test(test_rtl_random),
		cmocka_unit_test(test_rtl_random_4x4),
		cmocka_unit_test(test_rtl_wgrad_majors),
		cmocka_unit_test(test_models_and_errors),
		cmocka_unit_test(test_rtl_random_boards),
		cmocka_unit_test(test_hostport_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
