/*
 * cs_bench.h - what the `make bench` programs share: a monotonic and a CPU-time clock, the
 * least of a few timed runs of a statement, and a seeded xorshift for their inputs.
 * Benches measure and print; they never assert a speed.
 */
#ifndef CS_BENCH_H
#define CS_BENCH_H

#include <stdint.h>
#include <time.h>

static inline double cs_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the process's CPU time in seconds: moves less than wall time on a shared machine */
static inline double cs_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* var = the least of reps runs of stmt by clock (cs_now or cs_cpu_now), in seconds */
#define CS_LEAST(clock, var, reps, stmt)                                                     \
	do {                                                                                 \
		var = 1e30;                                                                  \
		for (int r_ = 0; r_ < (reps); r_++) {                                        \
			double t_ = clock();                                                 \
			stmt;                                                                \
			t_ = clock() - t_;                                                   \
			if (t_ < var)                                                        \
				var = t_;                                                    \
		}                                                                            \
	} while (0)

/* the shortest wall time of reps runs (the machine is shared) */
#define CS_BEST(var, reps, stmt) CS_LEAST(cs_now, var, reps, stmt)

static inline uint64_t cs_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* uniform in [-1, 1) */
static inline float cs_xorshift_f(uint64_t *s)
{
	return (float)((double)(cs_xorshift(s) >> 11) / 9007199254740992.0 * 2 - 1);
}

#endif /* CS_BENCH_H */
