/*
 * cs_pool.h - a fixed-partition thread pool for the host's numerical code.
 *
 * cs_pool_run(p, fn, arg) calls fn(arg, tid, n) once for each tid in 0..n-1, tid 0 on the
 * calling thread, and returns when all have returned. There is no work stealing and no
 * dynamic scheduling: a kernel splits its work by tid with cs_split (or its own fixed rule),
 * so which thread computes which output, and in which order, is a function of the thread
 * count alone. Results are bit-identical from run to run for a fixed thread count; kernels
 * that give every output element to one thread and sum in a fixed order give the same bits
 * for every thread count.
 *
 * A NULL pool, or a pool of one thread, runs fn(arg, 0, 1) on the caller.
 * Not here: SIMD dispatch (host/engine/simd.h), OpenBLAS's own threads.
 */
#ifndef CS_POOL_H
#define CS_POOL_H

#include <stddef.h>

typedef struct cs_pool cs_pool;
typedef void (*cs_pool_fn)(void *arg, int tid, int nthreads);

/* nthreads >= 1; nthreads - 1 worker threads are started. */
int cs_pool_create(cs_pool **p, int nthreads);
void cs_pool_free(cs_pool *p);
int cs_pool_threads(const cs_pool *p);
void cs_pool_run(cs_pool *p, cs_pool_fn fn, void *arg);

/* The tid-th of nthreads contiguous, near-equal parts of [0, n): [*lo, *hi). */
static inline void cs_split(size_t n, int tid, int nthreads, size_t *lo, size_t *hi)
{
	*lo = n * (size_t)tid / (size_t)nthreads;
	*hi = n * (size_t)(tid + 1) / (size_t)nthreads;
}

/* The thread count a run gets when the user names none: OMP_NUM_THREADS, else
 * OPENBLAS_NUM_THREADS, else the CPUs this process may run on. */
int cs_default_threads(void);

#endif /* CS_POOL_H */
