/*
 * bench_driver.c - `make bench` for the driver: host-side packing of nonzeros into RUN
 * words (target >= 100 M nonzeros/s/core), and the cpu backend's three kernels against the
 * dense OpenBLAS product of the same shape on one thread, at 50/80/90/95% sparsity
 * (target: every kernel faster than dense at 90%). The machine is shared, so every row
 * times its dense products again right before its sparse kernels (best of several runs
 * each) and takes the ratio from those. Prints a table and writes build/bench/driver.json
 * (path from argv[1]). Never a pass/fail: numbers only.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_bench.h"
#include "common/numerics.h"
#include "driver/csd.h"
#include "driver/proto.h"

extern void openblas_set_num_threads(int);

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void) { return cs_xorshift(&rs); }
static float frnd(void) { return cs_xorshift_f(&rs); }
#define BEST CS_BEST

int main(int argc, char **argv)
{
	const char *out_path = argc > 1 ? argv[1] : "build/bench/driver.json";
	openblas_set_num_threads(1);
	FILE *js = fopen(out_path, "w");
	if (!js) {
		perror(out_path);
		return 1;
	}

	/* 1. packing */
	size_t n = 8u << 20;
	int32_t *idx = malloc(n * sizeof *idx);
	uint16_t *val = malloc(n * sizeof *val);
	uint32_t *words = malloc((n + n / 16 + 16) * sizeof *words);
	for (size_t k = 0; k < n; k++) {
		idx[k] = (int32_t)(rnd() & 4095);
		val[k] = (uint16_t)rnd();
	}
	double tpack;
	volatile size_t sink = 0;
	/* runs of 16 nonzeros per major (a 1024-wide layer at ~98% sparsity); longer runs pack
	 * faster */
	BEST(tpack, 3, {
		size_t o = 0;
		for (size_t k = 0; k < n; k += 16)
			o += proto_pack_runs(words + o, 0, (unsigned)(k >> 4) & 0xffff, idx + k,
					     val + k, 16, 0);
		sink += o;
	});
	double pack_rate = (double)n / tpack / 1e6;
	printf("pack: %.0f M nonzeros/s (runs of 16; target >= 100)\n", pack_rate);
	free(idx);
	free(val);
	free(words);

	/* 2. cpu backend vs OpenBLAS sgemm, one thread */
	int T = 256, K = 1024, N = 1024;
	const char *dev_uri = "cpu";
	csd_dev *dev;
	if (csd_open(&dev, dev_uri)) {
		fprintf(stderr, "bench: %s\n", csd_last_error(NULL));
		return 1;
	}
	float *xf = malloc((size_t)T * K * 4), *dyf = malloc((size_t)T * N * 4);
	float *wf = malloc((size_t)N * K * 4), *yf = malloc((size_t)T * N * 4);
	float *dxf = malloc((size_t)T * K * 4), *dwf = malloc((size_t)N * K * 4);
	uint16_t *x = malloc((size_t)T * K * 2), *dy = malloc((size_t)T * N * 2);
	uint8_t *mask = malloc((size_t)N * K);
	for (size_t e = 0; e < (size_t)T * K; e++)
		x[e] = nm_bf16_from_f32(xf[e] = frnd());
	for (size_t e = 0; e < (size_t)T * N; e++)
		dy[e] = nm_bf16_from_f32(dyf[e] = frnd());
	for (size_t e = 0; e < (size_t)N * K; e++)
		wf[e] = frnd();
	double tf, tb, tw;
#define DENSE()                                                                              \
	do {                                                                                 \
		BEST(tf, 5, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, N, K, 1.0f, xf, \
					K, wf, K, 0.0f, yf, N));                             \
		BEST(tb, 5, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, K, N, 1.0f,  \
					dyf, N, wf, K, 0.0f, dxf, K));                       \
		BEST(tw, 5, cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K, T, 1.0f, dyf, \
					N, xf, K, 0.0f, dwf, K));                            \
	} while (0)
	DENSE();
	printf("dense sgemm T=%d K=%d N=%d, 1 thread: fwd %.2f ms, bwd %.2f ms, wgrad %.2f ms "
	       "(%.1f GFLOP/s)\n",
	       T, K, N, tf * 1e3, tb * 1e3, tw * 1e3, 2.0 * T * K * N / tf / 1e9);
	fprintf(js, "{\n  \"pack_mnnz_per_s\": %.1f,\n  \"shape\": {\"T\": %d, \"K\": %d, \"N\": %d},\n",
		pack_rate, T, K, N);
	fprintf(js, "  \"dense_ms\": {\"fwd\": %.3f, \"bwd\": %.3f, \"wgrad\": %.3f},\n  \"cpu\": [",
		tf * 1e3, tb * 1e3, tw * 1e3);
	static const double sps[] = { 0.5, 0.8, 0.9, 0.95 };
	printf("%-9s %10s %10s %10s %8s %8s %8s %s\n", "sparsity", "fwd ms", "bwd ms", "wgrad ms",
	       "fwd x", "bwd x", "wgrad x", "(x: dense time / sparse time; dense fwd/bwd/wgrad ms)");
	double r90[3] = { 0, 0, 0 };
	for (size_t s = 0; s < 4; s++) {
		for (size_t e = 0; e < (size_t)N * K; e++)
			mask[e] = (double)(rnd() >> 11) / 9007199254740992.0 >= sps[s];
		csd_sparse sp;
		if (csd_sparse_from_dense(&sp, wf, mask, N, K))
			return 1;
		float *dw = malloc((size_t)sp.nnz * 4 + 4);
		double sf, sb, sw;
		int rc = 0;
		DENSE();
		BEST(sf, 5, rc |= csd_forward(dev, yf, x, &sp, T));
		BEST(sb, 5, rc |= csd_backward(dev, dxf, dy, &sp, T));
		BEST(sw, 5, rc |= csd_wgrad(dev, dw, dy, x, &sp, T));
		if (rc) {
			fprintf(stderr, "bench: %s\n", csd_last_error(dev));
			return 1;
		}
		printf("%-9.2f %10.2f %10.2f %10.2f %8.2f %8.2f %8.2f (%.2f %.2f %.2f)\n", sps[s],
		       sf * 1e3, sb * 1e3, sw * 1e3, tf / sf, tb / sb, tw / sw, tf * 1e3, tb * 1e3,
		       tw * 1e3);
		if (sps[s] == 0.9) {
			r90[0] = tf / sf;
			r90[1] = tb / sb;
			r90[2] = tw / sw;
		}
		fprintf(js,
			"%s\n    {\"sparsity\": %.2f, \"nnz\": %lld, \"fwd_ms\": %.3f, \"bwd_ms\": %.3f, "
			"\"wgrad_ms\": %.3f, \"dense_ms\": {\"fwd\": %.3f, \"bwd\": %.3f, "
			"\"wgrad\": %.3f}, \"speedup_vs_dense\": {\"fwd\": %.3f, \"bwd\": %.3f, "
			"\"wgrad\": %.3f}}",
			s ? "," : "", sps[s], (long long)sp.nnz, sf * 1e3, sb * 1e3, sw * 1e3, tf * 1e3,
			tb * 1e3, tw * 1e3, tf / sf, tb / sb, tw / sw);
		free(dw);
		csd_sparse_free(&sp);
	}
	int met = r90[0] > 1 && r90[1] > 1 && r90[2] > 1;
	printf("at 90%%: fwd %.2fx, bwd %.2fx, wgrad %.2fx dense sgemm (target: each > 1: %s)\n",
	       r90[0], r90[1], r90[2], met ? "met" : "NOT met");
	fprintf(js, "\n  ],\n  \"target_90_met\": %s\n}\n", met ? "true" : "false");
	fclose(js);
	printf("wrote %s\n", out_path);
	csd_close(dev);
	return (int)(sink & 0);
}
