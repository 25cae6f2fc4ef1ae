/*
 * kernel_ref.h - what the driver tests share: a seeded generator of random sparse layers
 * (shapes, sparsities, special values, empty rows and columns) and naive reference kernels
 * written from docs/architecture.md section 5 alone (per-element nm_fmac_bits / nm_add_bits
 * loops over the dense weight and mask, in the documented order; the wgrad token partition
 * re-derived from section 4.5).
 *
 * Used by tests/driver/test_cpu.c (cpu backend vs these references), test_sim.c and
 * tests/usb/umock_usb.c (a device vs the cpu backend, bit for bit, on these layers).
 * Not a test framework: nothing here asserts; functions return 0 / -1 and the caller
 * decides how to fail.
 */
#ifndef TESTS_KERNEL_REF_H
#define TESTS_KERNEL_REF_H

#include <stddef.h>
#include <stdint.h>

#include "driver/csd.h"

/* splitmix64; tests seed kref_rng_state (and print the seed) */
extern uint64_t kref_rng_state;
uint64_t kref_rng_next(void);
double kref_rng_unif(void);              /* [0, 1) */
int kref_rng_int(int lo, int hi);        /* [lo, hi] */

/* Special-value mix of kref_rand_bf16. */
enum {
	KREF_PLAIN = 0,    /* moderate normals only */
	KREF_SPECIALS = 1, /* 1/64: zeros, infinities, NaN, subnormals, extremes */
	KREF_EXTREMES = 2, /* KREF_SPECIALS plus 1/64 near underflow or overflow */
};
uint16_t kref_rand_bf16(int specials);

struct kref_layer {
	int T, N, K;   /* W [N, K], x [T, K], dy [T, N] */
	uint8_t *mask; /* [N, K] */
	float *wf;     /* [N, K] dense fp32 weights given to csd_sparse_from_dense */
	uint16_t *wb;  /* [N, K] their bf16 draws */
	uint16_t *x;   /* [T, K] */
	uint16_t *dy;  /* [T, N] */
	csd_sparse sp;
};

/* A random layer: each weight kept with probability 1 - sparsity (1/32 of the kept ones are
 * signed zeros, which still stream); empty_lines empties every third row and every fourth
 * column. Returns 0, or -1 when out of memory (L is then freed). */
int kref_layer_make(struct kref_layer *L, int T, int N, int K, double sparsity, int specials,
		    int empty_lines);
void kref_layer_free(struct kref_layer *L);

/* The bf16 weight the device sees at dense index e (bf16 rounding of wf). */
uint16_t kref_wval(const struct kref_layer *L, size_t e);

/* References, as fp32 bit patterns: y [T, N], dx [T, K], dw [nnz] in CSR order. */
void kref_forward(uint32_t *y, const struct kref_layer *L);
void kref_backward(uint32_t *dx, const struct kref_layer *L);
/* tokens per PE of a full tile (section 4.5) */
int kref_tp(int T, int P, int din, int awords, int bcap);
/* wgrad on a RxC mesh with the given SRAM sizes (the reduction order depends on them);
 * returns -1 when out of memory */
int kref_wgrad(uint32_t *dw, const struct kref_layer *L, int R, int C, int awords, int bwords);
/* the same for a token partition of tp tokens per PE (csd_backward_wgrad: the backward's) */
int kref_wgrad_tp(uint32_t *dw, const struct kref_layer *L, int R, int C, int tp);

/* Elements of kernel k's output (0 fwd: T*N, 1 bwd: T*K, 2 wgrad: nnz, 3 backward and
 * wgrad in one call: dx [T*K] then dw [nnz]). */
size_t kref_out_len(const struct kref_layer *L, int k);
/* Run kernel k on dev (0 fwd, 1 bwd, 2 wgrad, 3 csd_backward_wgrad). */
int kref_run(csd_dev *dev, int k, float *out, const struct kref_layer *L);

/*
 * Run kernel k on dev and on ref (the golden model, normally a cpu device of the same mesh
 * shape and SRAM sizes) and compare bit for bit; outputs start as garbage, so every element
 * must be written. Returns the number of mismatching elements (printing the first few with
 * `what`), or a negative cs_error when either call failed (message printed).
 */
long kref_compare(csd_dev *dev, csd_dev *ref, int k, const struct kref_layer *L,
		  const char *what);

#endif
