/*
 * cs_bench.h - what the `make bench` programs share: a monotonic clock, the best of a few
 * timed runs of a statement, and a seeded xorshift for their inputs. Benches measure and
 * print; they never assert a speed.
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

/* var = the shortest of reps runs of stmt, in seconds (the machine is shared) */
#define CS_BEST(var, reps, stmt)                                                             \
	do {                                                                                 \
		var = 1e30;                                                                  \
		for (int r_ = 0; r_ < (reps); r_++) {                                        \
			double t_ = cs_now();                                                \
			stmt;                                                                \
			t_ = cs_now() - t_;                                                  \
			if (t_ < var)                                                        \
				var = t_;                                                    \
		}                                                                            \
	} while (0)

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
