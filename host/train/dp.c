/* dp.c - data parallelism over MPI (see dp.h). The only file that includes mpi.h. */
#include "train/dp.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cs_error.h"

struct dp_bucket {
	float *buf;
	size_t n;
	int phase; /* 0: reduce-scatter in flight, 1: allgather in flight, 2: done */
	int gather; /* 1: the allgather follows the reduce-scatter */
	size_t *cut; /* [N + 1] rank p's chunk is [cut[p], cut[p+1]) */
	int tag;
	int nreq;
	MPI_Request *req; /* [2 (N-1)] */
	float *recv;      /* [(N-1) x this rank's chunk]: the other ranks' copies of it */
};

struct dp_comm {
	int rank, size, lrank, lsize, joined, mode;
	struct dp_bucket *b;
	int nb, capb;
	uint64_t bytes;
	double secs, wait_secs;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int dp_launched(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
					    "PMI_SIZE", NULL };
	for (int i = 0; vars[i]; i++)
		if (getenv(vars[i]))
			return 1;
	return 0;
}

/* An MPI error (a peer gone, a broken link) ends the job with one line saying so. */
static void on_mpi_error(MPI_Comm *comm, int *code, ...)
{
	char s[MPI_MAX_ERROR_STRING];
	int len = 0, rank = -1;
	MPI_Error_string(*code, s, &len);
	MPI_Comm_rank(*comm, &rank);
	fprintf(stderr, "cshost train: rank %d: MPI error: %s; ending the job\n", rank, s);
	fflush(stderr);
	MPI_Abort(*comm, 1);
}

int dp_open(dp_comm **out, char *err, size_t errlen)
{
	*out = NULL;
	dp_comm *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return CS_ERR_NO_MEM;
	}
	d->size = d->lsize = 1;
	if (dp_launched()) {
		int provided = 0;
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
			snprintf(err, errlen, "MPI_Init_thread failed (launched by mpirun, but the "
				 "MPI library cannot start)");
			free(d);
			return CS_ERR_IO;
		}
		d->joined = 1;
		MPI_Errhandler eh;
		MPI_Comm_create_errhandler(on_mpi_error, &eh);
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
		MPI_Errhandler_free(&eh);
		MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
		MPI_Comm_size(MPI_COMM_WORLD, &d->size);
		MPI_Comm local;
		MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL,
				    &local);
		MPI_Comm_rank(local, &d->lrank);
		MPI_Comm_size(local, &d->lsize);
		MPI_Comm_free(&local);
	}
	*out = d;
	return CS_OK;
}

static void buckets_free(dp_comm *d)
{
	for (int i = 0; i < d->nb; i++) {
		free(d->b[i].req);
		free(d->b[i].recv);
		free(d->b[i].cut);
	}
	d->nb = 0;
}

void dp_close(dp_comm *d)
{
	if (!d)
		return;
	buckets_free(d);
	free(d->b);
	if (d->joined)
		MPI_Finalize();
	free(d);
}

int dp_rank(const dp_comm *d) { return d ? d->rank : 0; }
int dp_size(const dp_comm *d) { return d ? d->size : 1; }
int dp_local_rank(const dp_comm *d) { return d ? d->lrank : 0; }
int dp_local_size(const dp_comm *d) { return d ? d->lsize : 1; }

void dp_abort(dp_comm *d, int code)
{
	fflush(stdout);
	fflush(stderr);
	if (d && d->joined)
		MPI_Abort(MPI_COMM_WORLD, code);
	exit(code);
}

static int multi(const dp_comm *d)
{
	return d && d->joined && d->size > 1;
}

int dp_barrier(dp_comm *d)
{
	return multi(d) && MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS ? CS_ERR_IO : CS_OK;
}

int dp_all_ok(dp_comm *d, int ok)
{
	int r = ok;
	if (multi(d))
		MPI_Allreduce(&ok, &r, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	return r;
}

int dp_any(dp_comm *d, int flag)
{
	int r = flag;
	if (multi(d))
		MPI_Allreduce(&flag, &r, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return r;
}

int dp_bcast(dp_comm *d, void *buf, size_t n)
{
	if (!multi(d))
		return CS_OK;
	if (n > (size_t)INT32_MAX)
		return CS_ERR_RANGE;
	return MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? CS_OK
										 : CS_ERR_IO;
}

/* ---- bucketed sums ---- */

/* Chunk p of n elements over N ranks: [lo, hi). */
static void chunk(size_t n, int N, int p, size_t *lo, size_t *hi)
{
	size_t q = n / (size_t)N, r = n % (size_t)N;
	*lo = q * (size_t)p + ((size_t)p < r ? (size_t)p : r);
	*hi = *lo + q + ((size_t)p < r ? 1 : 0);
}

static void bchunk(const struct dp_bucket *b, int p, size_t *lo, size_t *hi)
{
	*lo = b->cut[p];
	*hi = b->cut[p + 1];
}

void dp_begin(dp_comm *d, int mode)
{
	if (!d)
		return;
	buckets_free(d);
	d->mode = mode;
}

/* Post the allgather of this rank's summed chunk (phase 1). */
static void post_gather(dp_comm *d, struct dp_bucket *b)
{
	int N = d->size, me = d->rank;
	size_t lo, hi;
	bchunk(b, me, &lo, &hi);
	b->nreq = 0;
	for (int q = 0; q < N; q++) {
		if (q == me)
			continue;
		size_t qlo, qhi;
		bchunk(b, q, &qlo, &qhi);
		if (qhi > qlo)
			MPI_Irecv(b->buf + qlo, (int)(qhi - qlo), MPI_FLOAT, q, b->tag + 1,
				  MPI_COMM_WORLD, &b->req[b->nreq++]);
		if (hi > lo)
			MPI_Isend(b->buf + lo, (int)(hi - lo), MPI_FLOAT, q, b->tag + 1,
				  MPI_COMM_WORLD, &b->req[b->nreq++]);
		d->bytes += (hi - lo) * sizeof(float);
	}
	b->phase = 1;
}

/* Every rank's copy of this rank's chunk has arrived: add them in rank order. */
static void sum_chunk(dp_comm *d, struct dp_bucket *b)
{
	int N = d->size, me = d->rank;
	size_t lo, hi;
	bchunk(b, me, &lo, &hi);
	size_t len = hi - lo;
	float *mine = b->buf + lo;
	const float *src[N];
	for (int q = 0, s = 0; q < N; q++)
		src[q] = q == me ? mine : b->recv + (size_t)s++ * len;
	for (size_t j = 0; j < len; j++) {
		float acc = src[0][j];
		for (int q = 1; q < N; q++)
			acc += src[q][j];
		mine[j] = acc;
	}
}

/* Advance one bucket as far as it goes without waiting (wait: block instead). */
static void advance(dp_comm *d, struct dp_bucket *b, int wait)
{
	while (b->phase < 2) {
		int done = 0;
		MPI_Testall(b->nreq, b->req, &done, MPI_STATUSES_IGNORE);
		if (!done && !wait)
			return;
		if (!done) {
			/* MPI_Waitall would spin on a core that the other ranks of a small or
			 * shared machine need: test, and sleep a little between tests */
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
			continue;
		}
		if (b->phase == 0 && d->mode == DP_ORDERED) {
			sum_chunk(d, b);
			if (b->gather)
				post_gather(d, b);
			else
				b->phase = 2;
		} else {
			b->phase = 2;
		}
	}
}

/* A new bucket of buf[0..n) with chunks cut (NULL: n/N each); NULL when out of memory. */
static struct dp_bucket *new_bucket(dp_comm *d, float *buf, size_t n, const size_t *cut)
{
	int N = d->size;
	if (d->nb == d->capb) {
		int cap = d->capb ? 2 * d->capb : 16;
		struct dp_bucket *nb = realloc(d->b, (size_t)cap * sizeof *nb);
		if (!nb)
			return NULL;
		d->b = nb;
		d->capb = cap;
	}
	struct dp_bucket *b = &d->b[d->nb];
	memset(b, 0, sizeof *b);
	b->buf = buf;
	b->n = n;
	b->tag = 2 * (d->nb % 16000);
	b->req = malloc(2 * (size_t)N * sizeof *b->req);
	b->cut = malloc(((size_t)N + 1) * sizeof *b->cut);
	if (!b->req || !b->cut) {
		free(b->req);
		free(b->cut);
		return NULL;
	}
	for (int p = 0; p <= N; p++) {
		size_t lo, hi;
		chunk(n, N, p < N ? p : N - 1, &lo, &hi);
		b->cut[p] = cut ? cut[p] : p < N ? lo : n;
	}
	d->nb++;
	return b;
}

/* Every chunk in int range, the cuts in order. */
static int cuts_ok(const size_t *cut, size_t n, int N)
{
	if (!cut)
		return n / (size_t)N + 1 <= (size_t)INT32_MAX;
	if (cut[0] != 0 || cut[N] != n)
		return 0;
	for (int p = 0; p < N; p++)
		if (cut[p + 1] < cut[p] || cut[p + 1] - cut[p] > (size_t)INT32_MAX)
			return 0;
	return 1;
}

static int post(dp_comm *d, float *buf, size_t n, const size_t *cut, int gather)
{
	double t0 = now_s();
	int N = d->size, me = d->rank;
	if (!cuts_ok(cut, n, N) || (d->mode == DP_FAST && (n > INT32_MAX || cut || !gather)))
		return cut && d->mode == DP_FAST ? CS_ERR_INVALID : CS_ERR_RANGE;
	struct dp_bucket *b = new_bucket(d, buf, n, cut);
	if (!b)
		return CS_ERR_NO_MEM;
	b->gather = gather;
	size_t lo, hi;
	bchunk(b, me, &lo, &hi);
	if (d->mode == DP_ORDERED &&
	    !(b->recv = malloc(((size_t)(N - 1) * (hi - lo) + 1) * sizeof *b->recv))) {
		d->nb--;
		free(b->req);
		free(b->cut);
		return CS_ERR_NO_MEM;
	}
	if (d->mode == DP_FAST) {
		MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
			       &b->req[0]);
		b->nreq = 1;
		/* what a ring all-reduce sends; the library's own choice is not visible */
		d->bytes += (uint64_t)(2.0 * (N - 1) / N * (double)n * sizeof(float));
	} else {
		for (int q = 0, s = 0; q < N; q++) {
			if (q == me)
				continue;
			size_t qlo, qhi;
			bchunk(b, q, &qlo, &qhi);
			if (hi > lo)
				MPI_Irecv(b->recv + (size_t)s * (hi - lo), (int)(hi - lo), MPI_FLOAT,
					  q, b->tag, MPI_COMM_WORLD, &b->req[b->nreq++]);
			s++;
			if (qhi > qlo)
				MPI_Isend(buf + qlo, (int)(qhi - qlo), MPI_FLOAT, q, b->tag,
					  MPI_COMM_WORLD, &b->req[b->nreq++]);
			d->bytes += (qhi - qlo) * sizeof(float);
		}
	}
	advance(d, b, 0);
	d->secs += now_s() - t0;
	return CS_OK;
}

int dp_post(dp_comm *d, float *buf, size_t n)
{
	if (!multi(d) || n == 0)
		return CS_OK;
	return post(d, buf, n, NULL, 1);
}

int dp_post_scatter(dp_comm *d, float *buf, size_t n, const size_t *cut)
{
	if (!multi(d) || n == 0)
		return CS_OK;
	if (d->mode != DP_ORDERED)
		return CS_ERR_INVALID;
	return post(d, buf, n, cut, 0);
}

int dp_post_reduce(dp_comm *d, float *buf, size_t n, const size_t *cut)
{
	if (!multi(d) || n == 0)
		return CS_OK;
	if (d->mode != DP_ORDERED)
		return CS_ERR_INVALID;
	return post(d, buf, n, cut, 1);
}

int dp_post_gather(dp_comm *d, float *buf, size_t n, const size_t *cut)
{
	if (!multi(d) || n == 0)
		return CS_OK;
	double t0 = now_s();
	if (!cuts_ok(cut, n, d->size))
		return CS_ERR_RANGE;
	struct dp_bucket *b = new_bucket(d, buf, n, cut);
	if (!b)
		return CS_ERR_NO_MEM;
	b->gather = 1;
	post_gather(d, b);
	advance(d, b, 0);
	d->secs += now_s() - t0;
	return CS_OK;
}

int dp_allgather(dp_comm *d, const void *mine, size_t nbytes, void *all, const size_t *counts)
{
	if (!multi(d)) {
		if (all != mine && nbytes)
			memmove(all, mine, nbytes);
		return CS_OK;
	}
	int N = d->size;
	int *cnt = malloc(2 * (size_t)N * sizeof *cnt), *dis = cnt ? cnt + N : NULL;
	if (!cnt)
		return CS_ERR_NO_MEM;
	size_t off = 0;
	for (int p = 0; p < N; p++) {
		if (counts[p] > (size_t)INT32_MAX || off > (size_t)INT32_MAX) {
			free(cnt);
			return CS_ERR_RANGE;
		}
		cnt[p] = (int)counts[p];
		dis[p] = (int)off;
		off += counts[p];
	}
	if (nbytes != counts[d->rank]) {
		free(cnt);
		return CS_ERR_INVALID;
	}
	MPI_Request req;
	int rc = MPI_Iallgatherv(mine, (int)nbytes, MPI_BYTE, all, cnt, dis, MPI_BYTE,
				 MPI_COMM_WORLD, &req);
	/* test and sleep, as advance does: a blocking call would spin on a core that the
	 * other ranks of a small or shared machine need */
	for (int done = 0; rc == MPI_SUCCESS;) {
		rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
		if (done)
			break;
		struct timespec ts = { 0, 20000 };
		nanosleep(&ts, NULL);
	}
	free(cnt);
	return rc == MPI_SUCCESS ? CS_OK : CS_ERR_IO;
}

int dp_progress(dp_comm *d)
{
	if (!multi(d))
		return CS_OK;
	double t0 = now_s();
	for (int i = 0; i < d->nb; i++)
		advance(d, &d->b[i], 0);
	d->secs += now_s() - t0;
	return CS_OK;
}

int dp_finish(dp_comm *d)
{
	if (!multi(d))
		return CS_OK;
	double t0 = now_s();
	/* in posting order, as every rank posted them: no rank waits on a bucket whose
	 * partner is blocked on a later one */
	for (int i = 0; i < d->nb; i++)
		advance(d, &d->b[i], 1);
	double dt = now_s() - t0;
	d->secs += dt;
	d->wait_secs += dt;
	buckets_free(d);
	return CS_OK;
}

int dp_sum(dp_comm *d, float *buf, size_t n)
{
	if (!multi(d))
		return CS_OK;
	int mode = d->mode, nb = d->nb;
	uint64_t bytes = d->bytes;
	double secs = d->secs, wait = d->wait_secs;
	if (nb) /* only between steps' reductions */
		return CS_ERR_INVALID;
	d->mode = DP_ORDERED;
	int rc = dp_post(d, buf, n);
	if (!rc)
		rc = dp_finish(d);
	/* not part of the gradient statistics */
	d->mode = mode;
	d->bytes = bytes;
	d->secs = secs;
	d->wait_secs = wait;
	return rc;
}

void dp_stats(const dp_comm *d, uint64_t *bytes_sent, double *seconds, double *wait_seconds)
{
	*bytes_sent = d ? d->bytes : 0;
	*seconds = d ? d->secs : 0.0;
	*wait_seconds = d ? d->wait_secs : 0.0;
}

void dp_stats_reset(dp_comm *d)
{
	if (!d)
		return;
	d->bytes = 0;
	d->secs = d->wait_secs = 0.0;
}
