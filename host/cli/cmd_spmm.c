/*
 * cmd_spmm.c - cshost spmm: run one sparse kernel on a random layer on a device, check it
 * bit for bit against the C model (the cpu backend of the same mesh shape), print JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_num.h"
#include "common/numerics.h"
#include "driver/csd.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cshost spmm --device DEV --tokens T --k K --n N --sparsity S\n"
		   "                   [--kernel fwd|bwd|wgrad|bwg] [--mesh RxC] [--seed X] [--json]\n"
		   "Run one kernel of a random sparse layer W [N, K] on DEV (cpu, sim, usb), check\n"
		   "it against the C model and report nnz, cycles, utilization and link bytes.\n");
}

static uint64_t rs;
static uint64_t rnd(void)
{
	uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int run(csd_dev *dev, int kernel, float *out, const uint16_t *x, const uint16_t *dy,
	       const csd_sparse *sp, int T)
{
	/* bwg: csd_backward_wgrad, dx [T, K] then dw [nnz] */
	return kernel == 0   ? csd_forward(dev, out, x, sp, T)
	       : kernel == 1 ? csd_backward(dev, out, dy, sp, T)
	       : kernel == 2 ? csd_wgrad(dev, out, dy, x, sp, T)
			     : csd_backward_wgrad(dev, out, out + (size_t)T * sp->n_in, dy, x, sp, T);
}

int cmd_spmm(int argc, char **argv)
{
	const char *device = NULL, *mesh = NULL;
	int T = 0, K = 0, N = 0, kernel = 0, json = 0;
	double sparsity = -1;
	unsigned long long seed = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "cshost spmm: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--device"))
			device = v;
		else if (!strcmp(a, "--tokens") || !strcmp(a, "--k") || !strcmp(a, "--n")) {
			long long x;
			/* sizes of one layer; the product of two is allocated on the host */
			if (cli_int("spmm", a, v, 1, 1 << 20, &x))
				return 2;
			*(!strcmp(a, "--tokens") ? &T : !strcmp(a, "--k") ? &K : &N) = (int)x;
		} else if (!strcmp(a, "--sparsity")) {
			if (cli_double("spmm", a, v, 0, 1, &sparsity))
				return 2;
		} else if (!strcmp(a, "--mesh"))
			mesh = v;
		else if (!strcmp(a, "--seed")) {
			uint64_t x;
			if (cli_u64("spmm", a, v, &x))
				return 2;
			seed = x;
		}
		else if (!strcmp(a, "--kernel")) {
			if (!strcmp(v, "fwd"))
				kernel = 0;
			else if (!strcmp(v, "bwd"))
				kernel = 1;
			else if (!strcmp(v, "wgrad"))
				kernel = 2;
			else if (!strcmp(v, "bwg"))
				kernel = 3;
			else {
				fprintf(stderr, "cshost spmm: --kernel %s: want fwd, bwd, wgrad or bwg\n", v);
				return 2;
			}
		} else {
			fprintf(stderr, "cshost spmm: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!device || T <= 0 || K <= 0 || N <= 0 || !(sparsity >= 0 && sparsity <= 1)) {
		fprintf(stderr, "cshost spmm: need --device, --tokens, --k, --n > 0 and --sparsity "
				"in [0, 1]\n");
		usage(stderr);
		return 2;
	}
	static const char *const kn[] = { "fwd", "bwd", "wgrad", "bwg" };
	char uri[128], ref_uri[64];
	snprintf(uri, sizeof uri, "%s%s%s", device, mesh && !strchr(device, ':') ? ":" : "",
		 mesh && !strchr(device, ':') ? mesh : "");
	csd_dev *dev = NULL, *ref = NULL;
	if (csd_open(&dev, uri)) {
		fprintf(stderr, "cshost spmm: %s\n", csd_last_error(NULL));
		return 1;
	}
	csd_info info;
	csd_get_info(dev, &info);
	snprintf(ref_uri, sizeof ref_uri, "cpu:%dx%d,awords=%u,bwords=%u", info.rows, info.cols,
		 info.a_words, info.b_words);
	if (csd_open(&ref, ref_uri)) {
		fprintf(stderr, "cshost spmm: %s: %s\n", ref_uri, csd_last_error(NULL));
		csd_close(dev);
		return 1;
	}
	rs = seed * 0x2545f4914f6cdd1dull + 1;
	size_t nx = (size_t)T * K, ny = (size_t)T * N, nw = (size_t)N * K;
	uint16_t *x = malloc(nx * 2), *dy = malloc(ny * 2);
	float *w = malloc(nw * 4);
	uint8_t *mask = malloc(nw);
	int rc = 1;
	csd_sparse sp = { 0 };
	float *out = NULL, *want = NULL;
	if (!x || !dy || !w || !mask) {
		fprintf(stderr, "cshost spmm: out of memory\n");
		goto out;
	}
	for (size_t e = 0; e < nx; e++)
		x[e] = nm_bf16_from_f32((float)(unif() * 2 - 1));
	for (size_t e = 0; e < ny; e++)
		dy[e] = nm_bf16_from_f32((float)(unif() * 2 - 1));
	for (size_t e = 0; e < nw; e++) {
		w[e] = (float)(unif() * 2 - 1);
		mask[e] = unif() >= sparsity;
	}
	if (csd_sparse_from_dense(&sp, w, mask, N, K)) {
		fprintf(stderr, "cshost spmm: out of memory\n");
		goto out;
	}
	size_t no = kernel == 0 ? ny : kernel == 1 ? nx : kernel == 2 ? (size_t)sp.nnz
							     : nx + (size_t)sp.nnz;
	out = malloc(no * 4 + 4);
	want = malloc(no * 4 + 4);
	csd_reset_counters(dev);
	double t = now();
	int e = run(dev, kernel, out, x, dy, &sp, T);
	t = now() - t;
	if (e) {
		fprintf(stderr, "cshost spmm: %s: %s\n", uri, csd_last_error(dev));
		goto out;
	}
	if (run(ref, kernel, want, x, dy, &sp, T)) {
		fprintf(stderr, "cshost spmm: model: %s\n", csd_last_error(ref));
		goto out;
	}
	int exact = memcmp(out, want, no * 4) == 0;
	csd_counters c;
	csd_get_counters(dev, &c);
	/* utilization over the streaming phases (pe_cycles = stream_cycles * PEs) and end to
	 * end (every cycle of the call, uploads and read-back included) */
	double util = c.pe_cycles ? (double)c.mac_busy / (double)c.pe_cycles : 0.0;
	double util_e2e = c.cycles ? (double)c.mac_busy / ((double)c.cycles * info.pes) : 0.0;
	if (json)
		printf("{\"device\": \"%s\", \"kernel\": \"%s\", \"tokens\": %d, \"k\": %d, \"n\": %d, "
		       "\"sparsity\": %.4f, \"mesh\": \"%dx%d\", \"seed\": %llu, \"nnz\": %lld, "
		       "\"cycles\": %llu, \"stream_cycles\": %llu, \"mac_busy\": %llu, "
		       "\"compute_utilization\": %.4f, \"end_to_end_utilization\": %.4f, "
		       "\"link_bytes\": %llu, \"link_bytes_out\": %llu, \"link_bytes_in\": %llu, "
		       "\"weight_bytes\": %llu, \"nnz_streamed\": %llu, \"bit_exact\": %s, "
		       "\"seconds\": %.6f}\n",
		       uri, kn[kernel], T, K, N, sparsity, info.rows, info.cols, seed,
		       (long long)sp.nnz, (unsigned long long)c.cycles,
		       (unsigned long long)c.stream_cycles, (unsigned long long)c.mac_busy, util,
		       util_e2e, (unsigned long long)(c.link_bytes_out + c.link_bytes_in),
		       (unsigned long long)c.link_bytes_out, (unsigned long long)c.link_bytes_in,
		       (unsigned long long)c.weight_bytes, (unsigned long long)c.nnz_streamed,
		       exact ? "true" : "false", t);
	else
		printf("%s %s T=%d K=%d N=%d nnz=%lld: %llu cycles (%llu streaming), utilization "
		       "%.1f%% streaming / %.1f%% end to end, %llu link bytes (%llu of weights), "
		       "%s, %.3f s\n",
		       uri, kn[kernel], T, K, N, (long long)sp.nnz, (unsigned long long)c.cycles,
		       (unsigned long long)c.stream_cycles, 100 * util, 100 * util_e2e,
		       (unsigned long long)(c.link_bytes_out + c.link_bytes_in),
		       (unsigned long long)c.weight_bytes,
		       exact ? "bit-exact" : "MISMATCH against the C model", t);
	rc = exact ? 0 : 1;
out:
	free(out);
	free(want);
	csd_sparse_free(&sp);
	free(x);
	free(dy);
	free(w);
	free(mask);
	csd_close(ref);
	csd_close(dev);
	return rc;
}
