/* cs_pool.c - fixed-partition thread pool (see cs_pool.h). */
#include "common/cs_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "common/cs_error.h"

/*
 * A job is published by bumping `gen` under the mutex; workers wait for a new generation,
 * run their part and count down `pending`. Both sides spin briefly before sleeping: a
 * training step issues a few hundred jobs of 10 us to 10 ms, and a futex wake per job
 * would cost as much as a small job.
 */
#define SPIN_ITERS 4000

struct cs_pool {
	int n;
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t start_cv, done_cv;
	atomic_uint gen;     /* job generation; workers run each new one once */
	atomic_int pending;  /* workers still running the current job */
	int quit;
	cs_pool_fn fn;
	void *arg;
};

struct worker_arg {
	cs_pool *p;
	int tid;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void *worker(void *va)
{
	struct worker_arg wa = *(struct worker_arg *)va;
	free(va);
	cs_pool *p = wa.p;
	unsigned seen = 0;
	for (;;) {
		unsigned g;
		int spins = 0;
		while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
		       spins < SPIN_ITERS) {
			cpu_relax();
			spins++;
		}
		if (g == seen) {
			pthread_mutex_lock(&p->mu);
			while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen &&
			       !p->quit)
				pthread_cond_wait(&p->start_cv, &p->mu);
			pthread_mutex_unlock(&p->mu);
		}
		if (p->quit)
			return NULL;
		seen = g;
		p->fn(p->arg, wa.tid, p->n);
		if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done_cv);
			pthread_mutex_unlock(&p->mu);
		}
	}
}

int cs_pool_create(cs_pool **out, int nthreads)
{
	*out = NULL;
	if (nthreads < 1)
		return CS_ERR_INVALID;
	cs_pool *p = calloc(1, sizeof *p);
	if (!p)
		return CS_ERR_NO_MEM;
	p->n = nthreads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->start_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	if (nthreads > 1) {
		p->threads = calloc((size_t)nthreads - 1, sizeof *p->threads);
		if (!p->threads)
			goto out_free;
		for (int i = 1; i < nthreads; i++) {
			struct worker_arg *wa = malloc(sizeof *wa);
			if (wa) {
				wa->p = p;
				wa->tid = i;
			}
			if (!wa || pthread_create(&p->threads[i - 1], NULL, worker, wa)) {
				free(wa);
				p->n = i; /* the workers started so far are joined */
				goto out_free;
			}
		}
	}
	*out = p;
	return CS_OK;
out_free:
	cs_pool_free(p);
	return CS_ERR_NO_MEM;
}

void cs_pool_free(cs_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
	pthread_cond_broadcast(&p->start_cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 1; i < p->n && p->threads; i++)
		pthread_join(p->threads[i - 1], NULL);
	free(p->threads);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->start_cv);
	pthread_cond_destroy(&p->done_cv);
	free(p);
}

int cs_pool_threads(const cs_pool *p)
{
	return p ? p->n : 1;
}

void cs_pool_run(cs_pool *p, cs_pool_fn fn, void *arg)
{
	if (!p || p->n == 1) {
		fn(arg, 0, 1);
		return;
	}
	p->fn = fn;
	p->arg = arg;
	atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
	pthread_cond_broadcast(&p->start_cv);
	pthread_mutex_unlock(&p->mu);
	fn(arg, 0, p->n);
	int spins = 0;
	while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0 && spins < SPIN_ITERS) {
		cpu_relax();
		spins++;
	}
	if (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
		pthread_mutex_lock(&p->mu);
		while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0)
			pthread_cond_wait(&p->done_cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
}

static int env_threads(const char *name)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	char *end;
	long v = strtol(s, &end, 10);
	return *end == '\0' && v >= 1 && v <= 1024 ? (int)v : 0;
}

int cs_default_threads(void)
{
	int n = env_threads("OMP_NUM_THREADS");
	if (!n)
		n = env_threads("OPENBLAS_NUM_THREADS");
	if (!n) {
		cpu_set_t set;
		n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
	}
	return n < 1 ? 1 : n;
}
