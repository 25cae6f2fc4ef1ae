/*
 * bench_engine.c - `make bench` for the native sparse engine: its three kernels (forward,
 * backward data, sampled weight gradient) at T=256 tokens, K=1024 inputs, N=1024 outputs,
 * 0-95% sparsity, on 1 and 2 threads, against dense OpenBLAS sgemm of the same shape on the
 * same thread count, timed side by side (best of several runs, the dense products again
 * right before each row, since the machine is shared). Reports each kernel alone and "as
 * used" (the weight gradient with the token-minor transposes of its inputs, which the
 * trainer pays; the two products read and write token-major data themselves),
 * the useful GFLOP/s (2 nnz T / t) and the ratio to dense. Numbers only, never a verdict.
 *
 * With "step", the products in the variants a training step of the benchmark model runs
 * (T = 512 tokens: batch 4 x context 128; attn.qkv 256->768, attn.proj 256->256, mlp.fc
 * 256->1024, mlp.proj 1024->256 at 80/90/95%), one thread, least process CPU time of 30
 * calls each; the weight gradient with its bias gradient in the CSR order (eng_sddmm_db)
 * and in the CSC order (eng_sddmm_csc_ex, "by col").
 *
 * usage: bench_engine [OUT.json [T K N | step]]   (CSHOST_ISA picks the kernels; default
 * the best)
 */
#include <cblas.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_bench.h"
#include "common/cs_cpu.h"
#include "common/cs_pool.h"
#include "engine/eng.h"

extern void openblas_set_num_threads(int);

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void) { return cs_xorshift(&rs); }
static float frnd(void) { return cs_xorshift_f(&rs); }

/* a[0..n) = uniform random values */
static void fill(float *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = frnd();
}
#define BEST CS_BEST

/* var = the least process CPU time of reps runs of stmt, in seconds */
#define LEAST_CPU(var, reps, stmt) CS_LEAST(cs_cpu_now, var, reps, stmt)

enum { P_QKV, P_ATTN_PROJ, P_FC, P_FC_PROJ, P_N };

/* The training step's products, each projection in the layout the step gives it: attn.qkv
 * and mlp.fc read a token-major input and write token-minor (forward), the reverse
 * backward; attn.proj is token-major both ways; mlp.proj reads a token-minor input
 * (forward) and writes token-minor dX times GELU' (backward). */
static int step_shapes(const char *out_path)
{
	static const char *const names[P_N] = { "attn.qkv", "attn.proj", "mlp.fc", "mlp.proj" };
	static const int shape[P_N][2] = { { 256, 768 }, { 256, 256 }, { 256, 1024 }, { 1024, 256 } };
	const double sp[] = { 0.8, 0.9, 0.95 };
	const int T = 512, ld = eng_ld(T), REPS = 30;
	FILE *js = fopen(out_path, "w");
	cs_pool *pool;
	eng_ctx *e;
	if (!js) {
		perror(out_path);
		return 1;
	}
	if (cs_pool_create(&pool, 1) || eng_ctx_create(&e, pool))
		return 1;
	char cpu[128];
	cs_cpu_model(cpu, sizeof cpu);
	printf("engine products at the training step's shapes: T=%d, 1 thread; CPU %s; engine "
	       "ISA %s; least process CPU time of %d calls\n", T, cpu, eng_isa_name(eng_isa()),
	       REPS);
	fprintf(js, "{\"cpu\": \"%s\", \"isa\": \"%s\", \"T\": %d, \"rows\": [", cpu,
		eng_isa_name(eng_isa()), T);
	int first = 1;
	for (int pi = 0; pi < P_N; pi++) {
		int K = shape[pi][0], N = shape[pi][1], M = K > N ? K : N;
		float *x = malloc(sizeof(float) * T * K), *dy = malloc(sizeof(float) * T * N);
		float *w = malloc(sizeof(float) * N * K), *dw = malloc(sizeof(float) * N * K);
		float *y = aligned_alloc(64, sizeof(float) * (size_t)M * ld);
		float *dx = aligned_alloc(64, sizeof(float) * (size_t)M * ld);
		float *xt = aligned_alloc(64, sizeof(float) * (size_t)K * ld);
		float *dyt = aligned_alloc(64, sizeof(float) * (size_t)N * ld);
		float *mul = aligned_alloc(64, sizeof(float) * (size_t)K * ld);
		uint8_t *mask = malloc((size_t)N * K);
		float *db = calloc((size_t)N, sizeof(float)), *lanes = malloc(sizeof(float) * 16 * N);
		if (!x || !dy || !w || !dw || !y || !dx || !xt || !dyt || !mul || !mask || !db ||
		    !lanes)
			return 1;
		fill(x, (size_t)T * K);
		fill(dy, (size_t)T * N);
		fill(w, (size_t)N * K);
		fill(mul, (size_t)K * ld);
		eng_transpose_in(pool, xt, x, T, K, ld);
		eng_transpose_in(pool, dyt, dy, T, N, ld);
		for (int si = 0; si < 3; si++) {
			for (int i = 0; i < N * K; i++)
				mask[i] = (double)(rnd() >> 11) / 9007199254740992.0 >= sp[si];
			eng_spmat s = { 0 };
			if (eng_spmat_build(&s, w, mask, N, K, ENG_F32))
				return 1;
			double f, b;
			if (pi == P_ATTN_PROJ) {
				LEAST_CPU(f, REPS, eng_spmm(e, y, &s, 0, x, T, xt));
				LEAST_CPU(b, REPS, eng_spmm(e, dx, &s, 1, dy, T, dyt));
			} else if (pi == P_FC_PROJ) {
				LEAST_CPU(f, REPS, eng_spmm_ex(e, y, 0, &s, 0, xt, 1, T, NULL));
				LEAST_CPU(b, REPS, eng_spmm_mul(e, dx, ENG_TM_ROWS, mul, &s, 1, dy, 0, T, dyt));
			} else {
				LEAST_CPU(f, REPS, eng_spmm_ex(e, y, 1, &s, 0, x, 0, T, xt));
				LEAST_CPU(b, REPS, eng_spmm_ex(e, dx, 0, &s, 1, dyt, 1, T, NULL));
			}
			/* the weight gradient with its bias gradient, in the CSR order and in the
			 * CSC order (eng_sddmm_csc_ex) */
			double g, gc;
			float *scr = malloc(sizeof(float) * (size_t)(s.nnz ? s.nnz : 1));
			if (!scr)
				return 1;
			LEAST_CPU(g, REPS, eng_sddmm_db(pool, dw, db, lanes, &s, dyt, xt, T));
			LEAST_CPU(gc, REPS, eng_sddmm_csc_ex(pool, dw, db, scr, &s, dyt, ENG_TM_ROWS, xt,
							    ENG_TM_ROWS, T));
			free(scr);
			double fl = 2.0 * (double)s.nnz * T * 1e-9;
			printf("%-9s %4.0f%%  fwd %7.1f us %5.1f GF/s | bwd %7.1f us %5.1f GF/s | "
			       "wgrad %7.1f us %5.1f GF/s | by col %7.1f us\n", names[pi], 100 * sp[si],
			       f * 1e6, fl / f, b * 1e6, fl / b, g * 1e6, fl / g, gc * 1e6);
			fprintf(js, "%s\n  {\"proj\": \"%s\", \"sparsity\": %.2f, \"nnz\": %lld, "
				"\"us\": {\"fwd\": %.1f, \"bwd\": %.1f, \"wgrad\": %.1f, "
				"\"wgrad_csc\": %.1f}, "
				"\"useful_gflops\": {\"fwd\": %.2f, \"bwd\": %.2f, \"wgrad\": %.2f}}",
				first ? "" : ",", names[pi], sp[si], (long long)s.nnz, f * 1e6, b * 1e6,
				g * 1e6, gc * 1e6, fl / f, fl / b, fl / g);
			first = 0;
			eng_spmat_free(&s);
		}
		free(x);
		free(dy);
		free(w);
		free(dw);
		free(y);
		free(dx);
		free(xt);
		free(dyt);
		free(mul);
		free(mask);
		free(db);
		free(lanes);
	}
	fprintf(js, "\n]}\n");
	fclose(js);
	eng_ctx_free(e);
	cs_pool_free(pool);
	printf("wrote %s\n", out_path);
	return 0;
}

int main(int argc, char **argv)
{
	const char *out_path = argc > 1 ? argv[1] : "build/bench/engine.json";
	if (argc == 3 && !strcmp(argv[2], "step"))
		return step_shapes(out_path);
	const int T = argc > 4 ? atoi(argv[2]) : 256, K = argc > 4 ? atoi(argv[3]) : 1024,
		  N = argc > 4 ? atoi(argv[4]) : 1024, ld = eng_ld(T), REPS = 7;
	if (T < 1 || K < 1 || N < 1) {
		fprintf(stderr, "usage: bench_engine [OUT.json [T K N | step]]\n");
		return 2;
	}
	const double sp[] = { 0.0, 0.5, 0.8, 0.9, 0.95 };
	const int nsp = (int)(sizeof sp / sizeof sp[0]);
	FILE *js = fopen(out_path, "w");
	if (!js) {
		perror(out_path);
		return 1;
	}
	char cpu[128];
	cs_cpu_model(cpu, sizeof cpu);
	float *x = malloc(sizeof(float) * T * K), *dy = malloc(sizeof(float) * T * N);
	float *w = malloc(sizeof(float) * N * K), *y = malloc(sizeof(float) * T * N);
	float *dx = malloc(sizeof(float) * T * K), *dwd = malloc(sizeof(float) * N * K);
	float *xt = malloc(sizeof(float) * K * ld), *dyt = malloc(sizeof(float) * N * ld);
	float *dw = malloc(sizeof(float) * N * K);
	uint8_t *mask = malloc((size_t)N * K);
	if (!x || !dy || !w || !y || !dx || !dwd || !xt || !dyt || !dw || !mask)
		return 1;
	fill(x, (size_t)T * K);
	fill(dy, (size_t)T * N);
	fill(w, (size_t)N * K);
	printf("engine kernels: T=%d K=%d N=%d; CPU %s; engine ISA %s; OpenBLAS %s\n", T, K, N,
	       cpu, eng_isa_name(eng_isa()), cs_blas_corename());
	printf("%-3s %-6s %9s %9s %9s | %9s %9s %9s | %7s %7s %7s | %7s %7s %7s\n", "thr",
	       "sparse", "dense fwd", "bwd", "wgrad", "fwd ms", "bwd ms", "wgrad ms", "fwd x",
	       "bwd x", "wgrad x", "GF fwd", "GF bwd", "GF wgr");
	fprintf(js, "{\"cpu\": \"%s\", \"isa\": \"%s\", \"openblas_core\": \"%s\", \"T\": %d, "
		"\"K\": %d, \"N\": %d, \"rows\": [",
		cpu, eng_isa_name(eng_isa()), cs_blas_corename(), T, K, N);
	int first = 1;
	for (int nth = 1; nth <= 2; nth++) {
		cs_pool *pool;
		eng_ctx *e;
		if (cs_pool_create(&pool, nth) || eng_ctx_create(&e, pool))
			return 1;
		openblas_set_num_threads(nth);
		for (int si = 0; si < nsp; si++) {
			rs = 12345 + (uint64_t)si;
			for (int i = 0; i < N * K; i++)
				mask[i] = (double)(rnd() >> 11) / 9007199254740992.0 >= sp[si];
			eng_spmat s = { 0 };
			if (eng_spmat_build(&s, w, mask, N, K, ENG_F32))
				return 1;
			double df, db, dwt, f, b, g, fa, ba, ga;
			BEST(df, REPS, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, N, K,
						   1.0f, x, K, w, K, 0.0f, y, N));
			BEST(db, REPS, cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, K,
						   N, 1.0f, dy, N, w, K, 0.0f, dx, K));
			BEST(dwt, REPS, cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, N, K,
						    T, 1.0f, dy, N, x, K, 0.0f, dwd, K));
			eng_transpose_in(pool, xt, x, T, K, ld);
			eng_transpose_in(pool, dyt, dy, T, N, ld);
			/* the products read and write token-major activations themselves; the
			 * weight gradient takes token-minor inputs: "as used" adds their
			 * transposes */
			BEST(f, REPS, eng_spmm(e, y, &s, 0, x, T, NULL));
			BEST(b, REPS, eng_spmm(e, dx, &s, 1, dy, T, NULL));
			BEST(g, REPS, eng_sddmm(pool, dw, &s, dyt, xt, T));
			fa = f;
			ba = b;
			BEST(ga, REPS, {
				eng_transpose_in(pool, xt, x, T, K, ld);
				eng_transpose_in(pool, dyt, dy, T, N, ld);
				eng_sddmm(pool, dw, &s, dyt, xt, T);
			});
			double fl = 2.0 * (double)s.nnz * T * 1e-9;
			printf("%-3d %5.0f%% %8.2fms %8.2fms %8.2fms | %9.3f %9.3f %9.3f | %6.2fx "
			       "%6.2fx %6.2fx | %7.1f %7.1f %7.1f\n",
			       nth, 100 * sp[si], df * 1e3, db * 1e3, dwt * 1e3, fa * 1e3, ba * 1e3,
			       ga * 1e3, df / fa, db / ba, dwt / ga, fl / fa, fl / ba, fl / ga);
			printf("    wgrad kernel alone (inputs already token-minor): %.3f ms (%.1f "
			       "GF/s, %.2fx); dense sgemm %.1f GF/s\n",
			       g * 1e3, fl / g, dwt / g, 2.0 * T * K * N * 1e-9 / df);
			fprintf(js,
				"%s\n  {\"threads\": %d, \"sparsity\": %.2f, \"nnz\": %lld, "
				"\"dense_ms\": {\"fwd\": %.4f, \"bwd\": %.4f, \"wgrad\": %.4f}, "
				"\"kernel_ms\": {\"fwd\": %.4f, \"bwd\": %.4f, \"wgrad\": %.4f}, "
				"\"as_used_ms\": {\"fwd\": %.4f, \"bwd\": %.4f, \"wgrad\": %.4f}, "
				"\"speedup_as_used\": {\"fwd\": %.3f, \"bwd\": %.3f, \"wgrad\": %.3f}, "
				"\"useful_gflops_as_used\": {\"fwd\": %.2f, \"bwd\": %.2f, "
				"\"wgrad\": %.2f}, \"dense_gflops\": %.2f}",
				first ? "" : ",", nth, sp[si], (long long)s.nnz, df * 1e3, db * 1e3,
				dwt * 1e3, f * 1e3, b * 1e3, g * 1e3, fa * 1e3, ba * 1e3, ga * 1e3,
				df / fa, db / ba, dwt / ga, fl / fa, fl / ba, fl / ga,
				2.0 * T * K * N * 1e-9 / df);
			first = 0;
			eng_spmat_free(&s);
		}
		eng_ctx_free(e);
		cs_pool_free(pool);
	}
	fprintf(js, "\n]}\n");
	fclose(js);
	printf("wrote %s\n", out_path);
	return 0;
}
