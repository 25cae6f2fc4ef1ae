/* cs_cpu.c - OpenBLAS kernel choice against the CPU's features (see cs_cpu.h). */
#include "common/cs_cpu.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* OpenBLAS extensions (declared in its cblas.h on some builds only). */
extern char *openblas_get_corename(void);
extern void openblas_set_num_threads(int);
extern int openblas_get_num_threads(void);

/* Carried across the re-exec: what OpenBLAS picked first, and what happened. */
#define ENV_PICKED "CSHOST_OPENBLAS_PICKED"
#define ENV_STATE "CSHOST_OPENBLAS_STATE"

unsigned cs_cpu_features(void)
{
	unsigned f = 0;
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0, &a, &b, &c, &d))
		return 0;
	unsigned maxleaf = a;
	if (b == 0x68747541) /* "Auth"enticAMD */
		f |= CS_CPU_AMD;
	__get_cpuid(1, &a, &b, &c, &d);
	int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
	if (!osxsave || !avx)
		return f;
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	(void)hi;
	if ((lo & 0x6) != 0x6) /* XMM and YMM state */
		return f;
	f |= CS_CPU_AVX;
	if (fma)
		f |= CS_CPU_FMA;
	if (maxleaf < 7)
		return f;
	__cpuid_count(7, 0, a, b, c, d);
	if ((b >> 5) & 1)
		f |= CS_CPU_AVX2;
	if ((lo & 0xe0) == 0xe0) { /* opmask, ZMM0-15 upper halves, ZMM16-31 */
		if ((b >> 16) & 1)
			f |= CS_CPU_AVX512F;
		if ((b >> 17) & 1)
			f |= CS_CPU_AVX512DQ;
		if ((b >> 30) & 1)
			f |= CS_CPU_AVX512BW;
		if ((b >> 31) & 1)
			f |= CS_CPU_AVX512VL;
		__cpuid_count(7, 1, a, b, c, d);
		if ((a >> 5) & 1)
			f |= CS_CPU_AVX512BF16;
	}
#endif
	return f;
}

void cs_cpu_model(char *buf, size_t len)
{
	snprintf(buf, len, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "model name", 10))
			continue;
		char *v = strchr(line, ':');
		if (!v)
			break;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = 0;
		snprintf(buf, len, "%s", v);
		break;
	}
	fclose(f);
}

/* OpenBLAS 0.3.21's x86-64 core names by the widest vectors their sgemm kernels use. */
static const struct {
	const char *name;
	int level;
} cores[] = {
	{ "Katmai", 1 }, { "Coppermine", 1 }, { "Northwood", 1 }, { "Prescott", 1 },
	{ "Banias", 1 }, { "Core2", 1 }, { "Penryn", 1 }, { "Dunnington", 1 },
	{ "Nehalem", 1 }, { "Atom", 1 }, { "Athlon", 1 }, { "Opteron", 1 },
	{ "Opteron_SSE3", 1 }, { "Barcelona", 1 }, { "Nano", 1 }, { "Bobcat", 1 },
	{ "Sandybridge", 2 }, { "Bulldozer", 2 }, { "Piledriver", 2 }, { "Steamroller", 2 },
	{ "Excavator", 2 }, { "Haswell", 3 }, { "Zen", 3 }, { "SkylakeX", 4 },
	{ "Cooperlake", 4 }, { "SapphireRapids", 4 },
};

int cs_blas_core_level(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
		if (!strcasecmp(name, cores[i].name))
			return cores[i].level;
	return 0;
}

const char *cs_blas_best_core(unsigned f)
{
	const unsigned avx512 = CS_CPU_AVX512F | CS_CPU_AVX512BW | CS_CPU_AVX512DQ |
				CS_CPU_AVX512VL;
	if ((f & avx512) == avx512)
		return f & CS_CPU_AVX512BF16 ? "Cooperlake" : "SkylakeX";
	if ((f & (CS_CPU_AVX2 | CS_CPU_FMA)) == (CS_CPU_AVX2 | CS_CPU_FMA))
		return f & CS_CPU_AMD ? "Zen" : "Haswell";
	return NULL;
}

cs_blas_action cs_blas_decide(const char *picked, unsigned features,
			      const char *user_coretype, const char **core)
{
	*core = picked;
	if (user_coretype && *user_coretype)
		return CS_BLAS_USER;
	const char *best = cs_blas_best_core(features);
	int have = cs_blas_core_level(picked);
	/* an unknown name may be newer than this table: leave it alone */
	if (!best || have == 0 || have >= cs_blas_core_level(best))
		return CS_BLAS_KEEP;
	*core = best;
	return CS_BLAS_SWITCH;
}

const char *cs_blas_corename(void)
{
	const char *s = openblas_get_corename();
	return s ? s : "unknown";
}

void cs_blas_set_threads(int n)
{
	openblas_set_num_threads(n < 1 ? 1 : n);
}

int cs_blas_threads(void)
{
	return openblas_get_num_threads();
}

double cs_blas_check_sgemm(void)
{
	enum { M = 64, N = 48, K = 96 };
	static float a[M * K], b[N * K], c[M * N];
	uint32_t s = 12345;
	for (int i = 0; i < M * K; i++)
		a[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
	for (int i = 0; i < N * K; i++)
		b[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, c,
		    N);
	double maxref = 0.0, maxerr = 0.0;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double r = 0.0;
			for (int k = 0; k < K; k++)
				r += (double)a[i * K + k] * b[j * K + k];
			maxref = fmax(maxref, fabs(r));
			double e = fabs(c[i * N + j] - r);
			maxerr = isnan(e) ? INFINITY : fmax(maxerr, e);
		}
	return maxref > 0.0 ? maxerr / maxref : INFINITY;
}

/* fp32 sums of 96 terms of size <= 0.25 against a double reference: 1e-5 is loose for a
 * correct kernel and far below what a wrong one gives. */
#define SGEMM_TOL 1e-5

static void reexec(char **argv)
{
	fflush(NULL);
	execv("/proc/self/exe", argv);
	/* exec failed: carry on with what is loaded */
}

void cs_blas_startup(char **argv)
{
	const char *state = getenv(ENV_STATE);
	const char *core;
	if (state && !strcmp(state, "forced")) {
		/* second life: trust the forced kernels only if they compute right */
		if (cs_blas_check_sgemm() <= SGEMM_TOL)
			return;
		const char *picked = getenv(ENV_PICKED);
		setenv(ENV_STATE, "fallback", 1);
		if (picked && *picked)
			setenv("OPENBLAS_CORETYPE", picked, 1);
		else
			unsetenv("OPENBLAS_CORETYPE");
		reexec(argv);
		return;
	}
	if (state) /* "fallback": nothing more to try */
		return;
	const char *picked = cs_blas_corename();
	if (cs_blas_decide(picked, cs_cpu_features(), getenv("OPENBLAS_CORETYPE"), &core) !=
	    CS_BLAS_SWITCH)
		return;
	setenv(ENV_PICKED, picked, 1);
	setenv(ENV_STATE, "forced", 1);
	setenv("OPENBLAS_CORETYPE", core, 1);
	reexec(argv);
	unsetenv(ENV_STATE); /* exec failed */
	unsetenv("OPENBLAS_CORETYPE");
}

void cs_blas_describe(char *buf, size_t len)
{
	const char *name = cs_blas_corename();
	const char *state = getenv(ENV_STATE), *picked = getenv(ENV_PICKED);
	const char *user = getenv("OPENBLAS_CORETYPE");
	const char *best = cs_blas_best_core(cs_cpu_features());
	char how[200];
	if (state && !strcmp(state, "forced"))
		snprintf(how, sizeof how, "chosen for this CPU; OpenBLAS picked %s",
			 picked ? picked : "?");
	else if (state && !strcmp(state, "fallback"))
		snprintf(how, sizeof how, "OpenBLAS's pick: %s kernels gave wrong sgemm results "
			 "here", best ? best : "better");
	else if (user && *user)
		snprintf(how, sizeof how, "OPENBLAS_CORETYPE=%s%s%s", user,
			 best && cs_blas_core_level(name) < cs_blas_core_level(best) ? "; this CPU has "
											: "",
			 best && cs_blas_core_level(name) < cs_blas_core_level(best) ? best : "");
	else
		snprintf(how, sizeof how, "OpenBLAS's pick");
	snprintf(buf, len, "OpenBLAS %s kernels (%s), %d thread%s per call", name, how,
		 cs_blas_threads(), cs_blas_threads() == 1 ? "" : "s");
}
