/*
 * train_bench.c - `make bench` part of host/train: training speed of the benchmark model
 * (configs/bench-dense.yaml: 4 layers, 256 channels, 4 heads, context 128, batch 4) dense on
 * the host and with its projections on the native sparse engine at 80/90/95% static-random
 * sparsity, on 1 and 2 host threads (train.threads), side by side in one run; the ratio to
 * the dense step of the same thread count and of 2 threads to 1. With "large", the larger
 * shape (configs/bench-large.yaml) dense and at 90%. Forward + backward is timed alone
 * beside each step, and each step's process CPU time (its minimum is the steadier figure on
 * a shared machine). Each configuration runs in its own child process so that its peak RSS
 * (taken after the training steps) is its own. Prints the CPU and the OpenBLAS kernels, a table, and writes a JSON file.
 * Measures, never asserts.
 *
 * usage: train_bench CONFIG OUT.json [WARMUP_STEPS TIMED_STEPS [main|large]]
 * TRAIN_BENCH_CASES="a;b" runs only the cases whose names contain one of a, b (quick
 * side-by-side comparisons of a change).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/cs_cpu.h"
#include "common/cs_error.h"
#include "train/train.h"

typedef struct bench_case {
	const char *name;
	const char *ov[8];
	int n;
} bench_case;

#define STATIC_SPARSE(sp)                                                                    \
	"sparsity.algorithm=static", "sparsity.init_method=random", "sparsity.sparsity=" sp

/* The benchmark model: dense on the host against the native engine at 80/90/95% on the
 * same thread count, the native engine with bf16 weights, and the bit-exact mesh model
 * (the cpu backend) for reference. */
static const bench_case cases_main[] = {
	{ "dense, host, 1 thread", { "device.kind=native", "train.threads=1" }, 2 },
	{ "native 80%, 1 thread", { "device.kind=native", "train.threads=1", STATIC_SPARSE("0.8") }, 5 },
	{ "native 90%, 1 thread", { "device.kind=native", "train.threads=1", STATIC_SPARSE("0.9") }, 5 },
	{ "native 95%, 1 thread", { "device.kind=native", "train.threads=1", STATIC_SPARSE("0.95") }, 5 },
	{ "dense, host, 2 threads", { "device.kind=native", "train.threads=2" }, 2 },
	{ "native 80%, 2 threads", { "device.kind=native", "train.threads=2", STATIC_SPARSE("0.8") }, 5 },
	{ "native 90%, 2 threads", { "device.kind=native", "train.threads=2", STATIC_SPARSE("0.9") }, 5 },
	{ "native 95%, 2 threads", { "device.kind=native", "train.threads=2", STATIC_SPARSE("0.95") }, 5 },
	{ "native 90% bf16, 1 thread",
	  { "device.kind=native", "train.threads=1", "device.weights=bf16", STATIC_SPARSE("0.9") },
	  6 },
	{ "mesh model 90%, 1 thread",
	  { "device.kind=model", "train.threads=1", STATIC_SPARSE("0.9") }, 5 },
};

/* The larger shape (configs/bench-large.yaml): dense and 90% on 1 and 2 threads. */
static const bench_case cases_large[] = {
	{ "dense, host, 1 thread", { "device.kind=native", "train.threads=1" }, 2 },
	{ "native 90%, 1 thread", { "device.kind=native", "train.threads=1", STATIC_SPARSE("0.9") }, 5 },
	{ "dense, host, 2 threads", { "device.kind=native", "train.threads=2" }, 2 },
	{ "native 90%, 2 threads", { "device.kind=native", "train.threads=2", STATIC_SPARSE("0.9") }, 5 },
};

typedef struct result {
	int ok;
	double ms_min, ms_median, tokens_per_s;
	double fwdbwd_ms;       /* median of forward + backward alone (timed separately) */
	double cpu_ms_min;      /* least process CPU time of a step: on a shared machine the
				   steadier figure of one thread's cost */
	double vs_dense;        /* the dense case's ms/step on the same threads over this one's */
	long peak_rss_kb;
	char msg[240];
} result;

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* In the child: build, warm up, time. */
static void run_case(const char *cfgpath, const bench_case *bc, int warm, int timed, int fd)
{
	result r = { 0 };
	char err[1024];
	train_config cfg;
	trainer t;
	int rc = tc_load(&cfg, cfgpath, NULL, (char *const *)bc->ov, bc->n, err, sizeof err);
	if (!rc)
		rc = trainer_init(&t, &cfg, 1, err, sizeof err);
	if (rc) {
		snprintf(r.msg, sizeof r.msg, "%.230s", err);
		if (write(fd, &r, sizeof r) < 0)
			_exit(1);
		_exit(0);
	}
	double *ms = calloc(timed, sizeof(double));
	r.cpu_ms_min = 1e30;
	for (int i = 0; i < warm + timed && !rc; i++) {
		train_step_stats s;
		struct timespec c0, c1;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		rc = trainer_step(&t, &s, err, sizeof err);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		double cms = (c1.tv_sec - c0.tv_sec) * 1e3 + (c1.tv_nsec - c0.tv_nsec) * 1e-6;
		if (i >= warm) {
			ms[i - warm] = s.ms;
			if (cms < r.cpu_ms_min)
				r.cpu_ms_min = cms;
		}
	}
	/* the training's own peak (the forward + backward timing below zeroes the whole
	 * gradient buffer, which training with packed gradients never maps) */
	struct rusage ru;
	if (!getrusage(RUSAGE_SELF, &ru))
		r.peak_rss_kb = ru.ru_maxrss;
	if (!rc) {
		/* forward + backward alone on the same batch: the rest of a step is the
		 * optimizer, clipping and masks */
		gpt *m = &t.model;
		double *fb = calloc(timed, sizeof(double));
		for (int i = 0; i < timed && !rc; i++) {
			struct timespec a, b;
			float loss;
			clock_gettime(CLOCK_MONOTONIC, &a);
			gpt_zero_grad(m);
			rc = gpt_forward(m, t.inputs, t.targets, t.cfg.batch_size,
					 t.cfg.model.block_size, &loss);
			if (!rc)
				rc = gpt_backward(m, 1.0f);
			clock_gettime(CLOCK_MONOTONIC, &b);
			fb[i] = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) * 1e-6;
		}
		qsort(fb, timed, sizeof *fb, cmp_d);
		r.fwdbwd_ms = fb[timed / 2];
		free(fb);
		if (rc)
			snprintf(err, sizeof err, "forward/backward failed");
	}
	if (rc) {
		snprintf(r.msg, sizeof r.msg, "%.230s", err);
	} else {
		qsort(ms, timed, sizeof *ms, cmp_d);
		r.ok = 1;
		r.ms_min = ms[0];
		r.ms_median = ms[timed / 2];
		r.tokens_per_s = (double)t.cfg.batch_size * t.cfg.model.block_size *
				 t.cfg.grad_accum / (r.ms_median * 1e-3);
	}
	if (write(fd, &r, sizeof r) < 0)
		_exit(1);
	_exit(0);
}

/* 1 when name contains one of the ;-separated parts of list */
static int case_selected(const char *list, const char *name)
{
	while (*list) {
		size_t n = strcspn(list, ";");
		char part[64];
		if (n > 0 && n < sizeof part) {
			memcpy(part, list, n);
			part[n] = 0;
			if (strstr(name, part))
				return 1;
		}
		list += n + (list[n] == ';');
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: train_bench CONFIG OUT.json [WARMUP TIMED]\n");
		return 2;
	}
	cs_blas_startup(argv); /* the kernels cshost would run with */
	int warm = argc > 3 ? atoi(argv[3]) : 2, timed = argc > 4 ? atoi(argv[4]) : 10;
	int large = argc > 5 && !strcmp(argv[5], "large");
	const bench_case *cases = large ? cases_large : cases_main;
	const int NCASES = large ? (int)(sizeof cases_large / sizeof cases_large[0])
				 : (int)(sizeof cases_main / sizeof cases_main[0]);
	if (timed < 1 || warm < 0) {
		fprintf(stderr, "train_bench: WARMUP >= 0 and TIMED >= 1\n");
		return 2;
	}
	result res[16];
	const char *only = getenv("TRAIN_BENCH_CASES");
	for (int i = 0; i < NCASES; i++) {
		if (only && *only && !case_selected(only, cases[i].name)) {
			memset(&res[i], 0, sizeof res[i]);
			snprintf(res[i].msg, sizeof res[i].msg, "not selected (TRAIN_BENCH_CASES)");
			continue;
		}
		int p[2];
		if (pipe(p))
			return 1;
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			close(p[0]);
			run_case(argv[1], &cases[i], warm, timed, p[1]);
		}
		close(p[1]);
		memset(&res[i], 0, sizeof res[i]);
		if (read(p[0], &res[i], sizeof res[i]) != (ssize_t)sizeof res[i])
			snprintf(res[i].msg, sizeof res[i].msg, "benchmark process failed");
		close(p[0]);
		int status;
		struct rusage ru;
		wait4(pid, &status, 0, &ru);
		if (!res[i].peak_rss_kb)
			res[i].peak_rss_kb = ru.ru_maxrss;
	}
	const char *threads = getenv("OPENBLAS_NUM_THREADS");
	char cpu[160], blas[320];
	cs_cpu_model(cpu, sizeof cpu);
	cs_blas_set_threads(1); /* as the trainer runs it */
	cs_blas_describe(blas, sizeof blas);
	printf("\ntraining speed, %s, median of %d steps after %d\nCPU: %s\n%s\n", argv[1],
	       timed, warm, cpu, blas);
	printf("%-27s %9s %9s %9s %10s %9s %11s %9s %8s\n", "configuration", "ms/step", "min ms",
	       "cpu ms", "fwd+bwd ms", "tokens/s", "peak RSS MB", "vs dense", "2 thr x");
	for (int i = 0; i < NCASES; i++) {
		if (!res[i].ok) {
			printf("%-27s  not measured: %s\n", cases[i].name, res[i].msg);
			continue;
		}
		/* the dense case of the same thread count, and this case on 1 thread */
		int two = strstr(cases[i].name, "2 threads") != NULL, dense = -1, one = -1;
		for (int j = 0; j < NCASES; j++) {
			if (!strncmp(cases[j].name, "dense", 5) &&
			    (strstr(cases[j].name, "2 threads") != NULL) == two)
				dense = j;
			if (two && !strncmp(cases[j].name, cases[i].name,
					    strcspn(cases[i].name, ",")) &&
			    strstr(cases[j].name, "1 thread"))
				one = j;
		}
		char vs[16] = "", sc[16] = "";
		if (dense >= 0 && res[dense].ok)
			snprintf(vs, sizeof vs, "%.2fx", res[dense].ms_median / res[i].ms_median);
		if (one >= 0 && res[one].ok)
			snprintf(sc, sizeof sc, "%.2fx", res[one].ms_median / res[i].ms_median);
		res[i].vs_dense = dense >= 0 && res[dense].ok ? res[dense].ms_median / res[i].ms_median : 0;
		printf("%-27s %9.1f %9.1f %9.1f %10.1f %9.0f %11.1f %9s %8s\n", cases[i].name,
		       res[i].ms_median, res[i].ms_min, res[i].cpu_ms_min, res[i].fwdbwd_ms,
		       res[i].tokens_per_s,
		       res[i].peak_rss_kb / 1024.0, vs, sc);
	}
	FILE *f = fopen(argv[2], "w");
	if (!f) {
		fprintf(stderr, "train_bench: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	fprintf(f, "{\"config\": \"%s\", \"cpu\": \"%s\", \"openblas_core\": \"%s\", "
		   "\"openblas_threads\": \"%s\", \"timed_steps\": %d, \"cases\": [\n",
		argv[1], cpu, cs_blas_corename(), threads ? threads : "", timed);
	for (int i = 0; i < NCASES; i++) {
		fprintf(f, "  {\"name\": \"%s\", \"ok\": %s, \"ms_per_step\": %.3f, \"ms_min\": %.3f, "
			   "\"cpu_ms_min\": %.3f, \"fwdbwd_ms\": %.3f, \"tokens_per_s\": %.1f, "
			   "\"peak_rss_kb\": %ld, \"speedup_vs_dense\": %.3f, \"note\": \"",
			cases[i].name, res[i].ok ? "true" : "false", res[i].ms_median,
			res[i].ms_min, res[i].cpu_ms_min, res[i].fwdbwd_ms, res[i].tokens_per_s, res[i].peak_rss_kb,
			res[i].vs_dense);
		for (const char *s = res[i].msg; *s; s++)
			if (*s != '"' && *s != '\\')
				fputc(*s, f);
		fprintf(f, "\"}%s\n", i + 1 < NCASES ? "," : "");
	}
	fprintf(f, "]}\n");
	fclose(f);
	printf("wrote %s\n", argv[2]);
	return 0;
}
