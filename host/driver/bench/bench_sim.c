/*
 * bench_sim.c - make bench: the sim backend on the Verilated 4x4 mesh.
 *   - simulated PE-cycles per wall-clock second through the whole backend (plan_exec
 *     packing, the harness's handshakes and bookkeeping);
 *   - the backend's overhead over the raw Verilated model: the harness records every
 *     cycle's host-port inputs (CSD_SIM_TRACE=1), then replays them on a fresh model with no
 *     bookkeeping at all; overhead = 1 - raw / backend wall time for the same cycles.
 * Each run is also checked bit for bit against the cpu backend. Prints a table and writes
 * the JSON given as argv[1] (build/bench/sim.json).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/numerics.h"
#include "driver/csd.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rs = 12345;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "build/bench/sim.json";
	const char *sim_dir = getenv("CSD_SIM_DIR") ? getenv("CSD_SIM_DIR") : BENCH_SIM_DIR;
	static const double sps[] = { 0.5, 0.9 };
	const int T = 128, K = 64, N = 128, R = 4, C = 4, REPS = 3;
	FILE *js = fopen(out, "w");
	if (!js) {
		perror(out);
		return 1;
	}
	setenv("CSD_SIM_TRACE", "1", 1);
	fprintf(js, "[\n");
	printf("bench sim: %dx%d mesh, forward T=%d K=%d N=%d\n", R, C, T, K, N);
	printf("%8s %8s %10s %9s %9s %10s %12s %12s %6s\n", "sparsity", "nnz", "cycles", "wall_s",
	       "raw_s", "overhead", "PE-cyc/s", "raw PE-c/s", "exact");
	int fail = 0;
	for (size_t s = 0; s < sizeof sps / sizeof sps[0]; s++) {
		csd_dev *dev = NULL, *ref = NULL;
		char uri[64];
		snprintf(uri, sizeof uri, "sim:%dx%d", R, C);
		if (csd_open(&dev, uri) || csd_open(&ref, "cpu:4x4")) {
			fprintf(stderr, "bench sim: %s\n", csd_last_error(NULL));
			return 1;
		}
		uint16_t *x = malloc((size_t)T * K * 2);
		float *w = malloc((size_t)N * K * 4), *y = malloc((size_t)T * N * 4),
		      *y2 = malloc((size_t)T * N * 4);
		for (size_t e = 0; e < (size_t)T * K; e++)
			x[e] = nm_bf16_from_f32((float)((double)(rnd() % 2001) / 1000.0 - 1.0));
		for (size_t e = 0; e < (size_t)N * K; e++)
			w[e] = (double)(rnd() % 100000) / 100000.0 < sps[s]
				       ? 0.0f
				       : (float)((double)(rnd() % 2001) / 1000.0 - 1.0);
		csd_sparse sp = { 0 };
		csd_sparse_from_dense(&sp, w, NULL, N, K);
		/* warm-up call (first-touch costs), then the measured one */
		if (csd_forward(dev, y, x, &sp, T)) {
			fprintf(stderr, "bench sim: %s\n", csd_last_error(dev));
			return 1;
		}
		csd_counters c0, c1;
		csd_get_counters(dev, &c0);
		/* the harness's cycle count so far = everything before this call */
		char path[1024];
		snprintf(path, sizeof path, "%s/libmesh_%dx%d.so", sim_dir, R, C);
		void *so = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
		int (*replay)(uint64_t, double *, uint64_t *, uint64_t *) = NULL;
		if (so)
			*(void **)&replay = dlsym(so, "simh_replay_last");
		/* cycles since reset: the open's load plus the warm-up call, from the replay of
		 * the trace so far (a dry run that times nothing we use) */
		double secs;
		uint64_t before = 0, rspw;
		if (!replay || replay(0, &secs, &before, &rspw)) {
			fprintf(stderr, "bench sim: cannot replay (%s)\n", path);
			return 1;
		}
		/* best of REPS (the machine is shared): each rep times one call through the
		 * backend, then replays exactly that call's cycles on the raw model */
		double wall = 1e30, raw = 1e30;
		uint64_t cyc = 0, rcyc = 0;
		int exact = 1;
		for (int rep = 0; rep < REPS; rep++) {
			csd_get_counters(dev, &c0);
			double t0 = now();
			int rc = csd_forward(dev, y, x, &sp, T);
			double wl = now() - t0;
			csd_get_counters(dev, &c1);
			csd_forward(ref, y2, x, &sp, T);
			exact &= rc == 0 && !memcmp(y, y2, (size_t)T * N * 4);
			cyc = c1.cycles - c0.cycles;
			double rw = 0;
			if (replay(before, &rw, &rcyc, &rspw) || rcyc != cyc) {
				fprintf(stderr, "bench sim: replay covered %llu cycles, the call %llu\n",
					(unsigned long long)rcyc, (unsigned long long)cyc);
				fail = 1;
			}
			before += cyc;
			if (wl < wall)
				wall = wl;
			if (rw < raw)
				raw = rw;
		}
		double ovh = 1.0 - raw / wall;
		double pecs = (double)cyc * R * C / wall, rpecs = (double)cyc * R * C / raw;
		double util = (double)(c1.mac_busy - c0.mac_busy) / ((double)cyc * R * C);
		printf("%8.2f %8lld %10llu %9.3f %9.3f %9.1f%% %12.3g %12.3g %6s\n", sps[s],
		       (long long)sp.nnz, (unsigned long long)cyc, wall, raw, 100 * ovh, pecs, rpecs,
		       exact ? "yes" : "NO");
		fprintf(js,
			"  {\"mesh\": \"%dx%d\", \"kernel\": \"fwd\", \"tokens\": %d, \"k\": %d, "
			"\"n\": %d, \"sparsity\": %.2f, \"nnz\": %lld, \"cycles\": %llu, "
			"\"wall_seconds\": %.6f, \"raw_model_seconds\": %.6f, "
			"\"backend_overhead\": %.4f, \"pe_cycles_per_second\": %.0f, "
			"\"raw_pe_cycles_per_second\": %.0f, \"compute_utilization_end_to_end\": %.4f, "
			"\"bit_exact\": %s}%s\n",
			R, C, T, K, N, sps[s], (long long)sp.nnz, (unsigned long long)cyc, wall, raw,
			ovh, pecs, rpecs, util, exact ? "true" : "false",
			s + 1 < sizeof sps / sizeof sps[0] ? "," : "");
		fail |= !exact;
		dlclose(so);
		csd_sparse_free(&sp);
		free(x);
		free(w);
		free(y);
		free(y2);
		csd_close(dev);
		csd_close(ref);
	}
	fprintf(js, "]\n");
	fclose(js);
	printf("wrote %s\n", out);
	return fail;
}
