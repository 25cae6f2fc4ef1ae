/*
 * train_native.h - the projections of the GPT on the native sparse engine (host/engine):
 * a gpt_linear_ops whose sparse projections run as fp32 sparse products on the host's
 * cores (forward Y = X W^T, backward data dX = dY W, and the weight gradient at the
 * nonzero positions only, kept packed for the optimizer or scattered into the dense grad
 * buffer), and a block's MLP hidden activations token-minor when both of its projections
 * run here (gpt_linear_ops.mlp_ld). Projections without a
 * mask, or kept at more than 40% density (GMP before it prunes, GraNet early), run as
 * dense OpenBLAS sgemm. On steps where sparsity wants the dense gradient
 * (RigL, GraNet growth), dW is the dense sgemm too.
 *
 * The compressed weights are rebuilt only for tensors whose mask changed, and refreshed
 * (values only) after every optimizer step. Unlike the device path nothing is rounded to
 * bf16 unless device.weights is bf16, which stores the nonzeros as bf16 (the mesh's weight
 * numerics) and keeps the products and sums in fp32.
 */
#ifndef CS_TRAIN_TRAIN_NATIVE_H
#define CS_TRAIN_TRAIN_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#include "train/gpt.h"
#include "train/train_sparsity.h"

typedef struct train_native train_native;

extern const gpt_linear_ops train_native_linear_ops;

/* Build the compressed weights of every masked projection of m (vtype: enum eng_value);
 * kernels run on pool's threads. */
int tn_open(train_native **out, gpt *m, const train_sparsity *ts, cs_pool *pool, int vtype,
	    char *err, size_t errlen);
void tn_close(train_native *n);
/* As td_dev_sync: refresh values; rebuild the tensors whose mask changed (masks_changed > 0)
 * or every tensor (< 0, after loading a checkpoint). */
int tn_sync(train_native *n, int masks_changed, char *err, size_t errlen);
/* After a backward without the dense gradient: the sparse projections' gradients are zero
 * outside their masks (only nonzero positions were written), so masking them again is
 * skipped (ts_set_grad_clean). */
void tn_mark_grads_clean(const train_native *n, train_sparsity *ts);
/* Packed gradients (off at open): a backward without the dense gradient writes each sparse
 * projection's dW at its nonzeros into the engine's own array (CSR order, which is the
 * order of the mask's kept entries), accumulated over the backwards since tn_zero_grads,
 * and leaves the dense grad buffer untouched; the optimizer reads them with
 * tn_packed_grad. Dense-gradient backwards (want_dense_dw) still accumulate into the dense
 * buffer. */
void tn_set_packed_grads(train_native *n, int on);
int tn_packed_grads(const train_native *n);
/* Start a new gradient: the next backward of each projection overwrites its packed dW. */
void tn_zero_grads(train_native *n);
/* The packed dW of model tensor `tensor` and its length, NULL when that tensor's gradient is
 * dense (not a sparse projection, or packed gradients off). */
float *tn_packed_grad(const train_native *n, int tensor, size_t *nnz);
/* The fp32 values of model tensor `tensor` in CSR order (the order of its kept entries),
 * for the caller to write the tensor's new kept weights into before the next tn_sync,
 * which then refreshes only the column-order copy from them; NULL (and nothing changes)
 * when the tensor is not on the engine, holds bf16 values or has not nkept nonzeros. */
float *tn_take_values(train_native *n, int tensor, size_t nkept);
/* Bytes of the compressed weights (reports). */
size_t tn_weight_bytes(const train_native *n);
/* The compressed weight of projection proj of block layer, NULL when it runs dense
 * (tests compare it with a fresh build). TN_SPARSE_MAX_DENSITY: the density above which
 * a masked projection runs dense. */
#define TN_SPARSE_MAX_DENSITY 0.4
const struct eng_spmat *tn_spmat(const train_native *n, int layer, int proj);

#endif /* CS_TRAIN_TRAIN_NATIVE_H */
