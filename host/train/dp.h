/*
 * dp.h - data parallelism over MPI for `cshost train`: which rank this process is, and the
 * sum of the ranks' gradients.
 *
 * A process started by mpirun (Open MPI, or any launcher that sets PMIx/PMI variables)
 * joins the job; any other process is a world of one rank and makes no MPI call at all,
 * so a plain `cshost train` runs exactly as without MPI.
 *
 * Two ways to sum a buffer over the ranks:
 *  - ordered (the default): a reduce-scatter and an allgather written over point-to-point
 *    messages. Rank p owns chunk p of the buffer and adds the ranks' chunks in rank order,
 *    x0 + x1 + ... + x(N-1), one float add at a time: the same bits as a single process
 *    that accumulates N micro-batch gradients in that order, for every N. Each rank sends
 *    and receives 2 (N-1)/N of the buffer, as a ring all-reduce does, but in N-1 messages
 *    per phase (latency grows with N; a ring's is 2 (N-1) hops either way).
 *  - fast: MPI_Iallreduce. Open MPI picks its algorithm by size and rank count: the sum is
 *    reproducible for a fixed N and buffer, not equal to the ordered one.
 * Several buffers (buckets) may be in flight; dp_progress advances them between pieces of
 * work (the backward pass calls it after each layer) so that communication overlaps
 * compute, and dp_finish waits for the rest.
 *
 * The sharded optimizer (ZeRO-1) uses the two phases apart, with the caller's cut of each
 * buffer: a reduce-scatter of the gradient, then an allgather of the updated weights.
 *
 * Not here: the choice of what to reduce (host/train/train.c packs sparse tensors'
 * gradients to their kept entries first, and cuts the shards) and process start-up
 * (mpirun).
 */
#ifndef CS_TRAIN_DP_H
#define CS_TRAIN_DP_H

#include <stddef.h>
#include <stdint.h>

typedef struct dp_comm dp_comm;

enum dp_mode { DP_ORDERED = 0, DP_FAST = 1 };

/* Join the MPI job when launched by mpirun (MPI_Init_thread, funneled), else a world of
 * one. *out is NULL-safe to pass to every function below (NULL = a world of one). */
int dp_open(dp_comm **out, char *err, size_t errlen);
/* MPI_Finalize (when joined) and free. */
void dp_close(dp_comm *d);
/* 1 when launched by an MPI launcher (environment variables), without initializing MPI. */
int dp_launched(void);

int dp_rank(const dp_comm *d);
int dp_size(const dp_comm *d);
/* Rank among the ranks of this node (picks a device per rank). */
int dp_local_rank(const dp_comm *d);
int dp_local_size(const dp_comm *d);

/* End the whole job now with exit code code (MPI_Abort); a world of one exits. Only mains
 * call this, after printing what failed. */
void dp_abort(dp_comm *d, int code) __attribute__((noreturn));

/* ---- collectives (every rank calls them in the same order) ---- */
int dp_barrier(dp_comm *d);
/* min (all_ok) / max (any) of an int over the ranks. */
int dp_all_ok(dp_comm *d, int ok);
int dp_any(dp_comm *d, int flag);
/* Broadcast n bytes from rank 0. */
int dp_bcast(dp_comm *d, void *buf, size_t n);

/* ---- bucketed sums ---- */
/* Start a step's reduction: forget finished buckets, set the mode. */
void dp_begin(dp_comm *d, int mode);
/* Start summing buf[0..n) over the ranks, in place. buf must stay untouched until
 * dp_finish. Returns CS_OK or a negative error. */
int dp_post(dp_comm *d, float *buf, size_t n);
/* The sharded optimizer's two halves (ordered mode only, CS_ERR_INVALID in fast mode):
 * rank p owns buf[cut[p], cut[p+1]) (cut[0] = 0, cut[N] = n, in order, chunks may be
 * empty). dp_post_scatter sums only the owner's chunk (the reduce-scatter: the other
 * chunks keep this rank's own values); dp_post_reduce is dp_post with these chunks;
 * dp_post_gather sends the owner's chunk to every rank (the allgather, no sum). */
int dp_post_scatter(dp_comm *d, float *buf, size_t n, const size_t *cut);
int dp_post_reduce(dp_comm *d, float *buf, size_t n, const size_t *cut);
int dp_post_gather(dp_comm *d, float *buf, size_t n, const size_t *cut);
/* Blocking: rank p's counts[p] bytes, mine, land at sum(counts[0..p)) of all on every
 * rank (MPI_Allgatherv). mine must not overlap all. */
int dp_allgather(dp_comm *d, const void *mine, size_t nbytes, void *all, const size_t *counts);
/* Advance what is in flight without blocking. */
int dp_progress(dp_comm *d);
/* Wait until every posted buffer holds the sum. */
int dp_finish(dp_comm *d);
/* Blocking ordered sum of one buffer (losses, small things). */
int dp_sum(dp_comm *d, float *buf, size_t n);

/* Bytes this rank sent and seconds it spent inside the reduction calls (posting,
 * progressing, waiting) since the last dp_stats_reset. */
void dp_stats(const dp_comm *d, uint64_t *bytes_sent, double *seconds, double *wait_seconds);
void dp_stats_reset(dp_comm *d);

#endif /* CS_TRAIN_DP_H */
