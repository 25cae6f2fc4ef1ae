/*
 * cs_cpu.h - which OpenBLAS kernels run, and whether they are the best this CPU allows.
 *
 * Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its kernels from a CPU table that predates
 * recent CPUs: on an AVX-512 Xeon it can pick `Prescott` (SSE3, 4x slower than its
 * `SkylakeX` kernels), on a Zen 5 `Haswell`. OpenBLAS reads OPENBLAS_CORETYPE once, when it
 * is loaded, so the fix is to set it and re-exec the process before any work is done.
 * cs_blas_startup() does that once (never when the user set OPENBLAS_CORETYPE), then checks
 * a small sgemm against a plain loop, going back to OpenBLAS's own pick if it disagrees.
 *
 * The decision (cs_blas_decide) is a pure function of the core name, the CPU features and
 * the environment, so that tests can go through the table. Not here: thread pools
 * (cs_pool.h).
 */
#ifndef CS_CPU_H
#define CS_CPU_H

#include <stddef.h>

/* CPU features that decide the OpenBLAS kernels (all with OS support, xgetbv). */
enum {
	CS_CPU_AVX = 1 << 0,
	CS_CPU_AVX2 = 1 << 1,
	CS_CPU_FMA = 1 << 2,
	CS_CPU_AVX512F = 1 << 3,
	CS_CPU_AVX512BW = 1 << 4,
	CS_CPU_AVX512DQ = 1 << 5,
	CS_CPU_AVX512VL = 1 << 6,
	CS_CPU_AVX512BF16 = 1 << 7,
	CS_CPU_AMD = 1 << 8,
};

/* The features of this CPU (0 off x86-64). */
unsigned cs_cpu_features(void);
/* "AMD EPYC 9R14" (/proc/cpuinfo's model name), or "unknown". */
void cs_cpu_model(char *buf, size_t len);

/* Kernel level of an OpenBLAS core name: 1 SSE, 2 AVX, 3 AVX2, 4 AVX-512; 0 unknown. */
int cs_blas_core_level(const char *corename);
/* The best OpenBLAS core for these features ("Cooperlake", "SkylakeX", "Zen",
 * "Haswell"), or NULL when OpenBLAS's generic pick is as good as any. */
const char *cs_blas_best_core(unsigned features);

typedef enum cs_blas_action {
	CS_BLAS_KEEP,         /* the picked kernels are as good as the CPU allows (or unknown) */
	CS_BLAS_USER,         /* OPENBLAS_CORETYPE set by the user: respected */
	CS_BLAS_SWITCH,       /* set OPENBLAS_CORETYPE=*core and re-exec */
} cs_blas_action;

/* picked: openblas_get_corename(); user_coretype: OPENBLAS_CORETYPE as the user set it
 * (NULL or "" when unset). */
cs_blas_action cs_blas_decide(const char *picked, unsigned features,
			      const char *user_coretype, const char **core);

/* At the start of main (before threads): decide, maybe re-exec argv with
 * OPENBLAS_CORETYPE set (at most once; returns only if it does not), verify, fall back. */
void cs_blas_startup(char **argv);
/* One line for the run log: kernels, how they were chosen, OpenBLAS threads. */
void cs_blas_describe(char *buf, size_t len);
/* The OpenBLAS core name in use. */
const char *cs_blas_corename(void);
/* OpenBLAS's own threads (per sgemm call); the host pool splits work above it. */
void cs_blas_set_threads(int n);
int cs_blas_threads(void);
/* max |sgemm - plain loop| / max |plain loop| over a small product (64 x 48 x 96). */
double cs_blas_check_sgemm(void);

#endif /* CS_CPU_H */
