/*
 * train_device.h - the projections of the GPT on the accelerator (host/driver/csd.h):
 * a gpt_linear_ops whose forward is csd_forward and whose backward is csd_backward_wgrad:
 * the input gradient and the weight gradient at the nonzero positions (scattered into the
 * dense grad buffer) in one call, the output gradient uploaded once for both (csd_backward
 * and csd_wgrad where that would take more token tiles than the wgrad alone).
 * Inputs and output gradients are rounded to bf16 (nm_bf16_from_f32), weights go as bf16
 * nonzeros built from the fp32 master weights and the masks; biases stay on the host.
 * On steps where sparsity wants the dense gradient, dW is computed on the host (sgemm).
 */
#ifndef CS_TRAIN_TRAIN_DEVICE_H
#define CS_TRAIN_TRAIN_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "train/gpt.h"
#include "train/train_sparsity.h"

typedef struct train_device train_device;

extern const gpt_linear_ops train_device_linear_ops;

/* Open the device at uri and build the nonzero lists of every projection of m. */
int td_dev_open(train_device **out, const char *uri, gpt *m, const train_sparsity *ts,
		char *err, size_t errlen);
void td_dev_close(train_device *d);
/* Refresh the bf16 values from the fp32 weights (every step, after the optimizer);
 * rebuild the nonzero lists of tensors whose mask changed when masks_changed > 0, of
 * every tensor when masks_changed < 0 (after loading a checkpoint). */
int td_dev_sync(train_device *d, int masks_changed, char *err, size_t errlen);
/* Device cycles, MAC utilization and link bytes (out: host -> device, in: device -> host)
 * since the last call (0 when unknown). */
void td_dev_counters(train_device *d, uint64_t *cycles, double *utilization, uint64_t *bytes_out,
		     uint64_t *bytes_in);
const char *td_dev_last_error(train_device *d);
/* The device counters td_dev_counters read last (the step's, split by kind of traffic). */
struct csd_counters;
void td_dev_last_counters(const train_device *d, struct csd_counters *c);

/*
 * What one training step of this model costs under the resident-activation design
 * (docs/resident-step.md), projected from the cpu backend's schedule model: the
 * sparse kernels' cycles without activation uploads and read-back (plan.c counting mode
 * on the design's SRAM sizes), plus the PE vector work (layernorm, GELU) at the costs the
 * design states, plus the link transfers no computation hides, with a host port of
 * link_words words per cycle each way. Bytes per step by kind. Not a measurement: the
 * step itself runs with device.resident (host/train/train_resident.c).
 */
struct td_projection {
	uint64_t cycles;        /* kernel_cycles + vector_cycles + link_cycles */
	uint64_t kernel_cycles; /* sparse kernels, weights streaming, wgrad reductions */
	uint64_t vector_cycles; /* layernorm, GELU, conversions on the PEs */
	uint64_t link_cycles;   /* exposed transfers: attention, embeddings, LN gradients */
	uint64_t weight_bytes, grad_bytes, act_bytes, other_bytes; /* link bytes per step */
};
int td_dev_project_resident(train_device *d, int link_words, struct td_projection *p);
/* Nonzeros sent for projection proj of block layer (tests, reports). */
int64_t td_dev_nnz(const train_device *d, int layer, int proj);
/* The open device and the nonzero list of a projection (the resident step,
 * train_resident.h, runs its own command stream on them). */
struct csd_dev;
struct csd_sparse;
struct csd_dev *td_dev_csd(train_device *d);
/* Rebuild projection proj of block layer from the weights under mask [n_out * n_in] (a
 * static mask without a train_sparsity: tests, measurements); the next td_dev_sync with
 * masks_changed < 0 returns to the sparsity's masks. */
int td_dev_use_mask(train_device *d, int layer, int proj, const uint8_t *mask);
const struct csd_sparse *td_dev_sparse(const train_device *d, int layer, int proj);

#endif /* CS_TRAIN_TRAIN_DEVICE_H */
