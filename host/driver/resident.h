/*
 * resident.h - the resident tensors' and vector programs' command streams (csd.h), the
 * same for every backend, and the registry of the vector programs the driver knows: their
 * parameter blocks, the SRAM regions those name, cycle estimates and their C definitions
 * (what the cpu backend runs instead of the firmware). Not public.
 *
 * Streams (docs/architecture.md 7.5), every one closed by a SYNC that checks the host
 * port's error count:
 *   tokens write: per PE one WRITE of its rows (stride == width) or one a row; SYNC
 *   tokens read:  one READ of every PE (pe 0xff) of the rows' words, or one a row; or
 *                 carried by the next kernel on regions (res_side_fits, plan_side)
 *   tokens write carried by a forward or backward kernel (pe: plan_wside): the same words
 *                 at the same addresses as WRITEs of parts of rows, between its majors
 *   write all:    one broadcast WRITE; SYNC
 *   program:      [WRITE IMEM of the overlay at its base, when not resident]; WRITE of the
 *                 BCAST control task's entry; WRITE r0 = 0; WRITE of the parameter block
 *                 (broadcast); SYNC; INJECT the control wavelet {0, block} on BCAST; SYNC
 */
#ifndef CS_RESIDENT_H
#define CS_RESIDENT_H

#include <stddef.h>
#include <stdint.h>

#include "driver/csd.h"
#include "driver/fw.h"
#include "driver/plan.h"
#include "driver/vec_timing.h"

/* A region a parameter block names: at the block's word `param`, in mem, of size
 * (kind): the width W, tokens * W, the tokens N, k words/elements, or N rows of W whose
 * stride is block word k ((N - 1) * stride + W). */
enum res_size { RES_W, RES_NW, RES_N, RES_K, RES_NS };
struct res_use {
	unsigned char param, mem, kind;
	unsigned short k;
};

#define RES_MAX_PARAMS 16
#define RES_MAX_USES 12

/* One entry of a vector program (fw/<image>.s). */
struct res_prog {
	const char *image, *entry;
	int n_params;
	int p_width, p_tokens;  /* block words holding W (C) and the token count */
	struct res_use use[RES_MAX_USES];
	int n_use;
	/* the C definition on one PE's SRAM, p = its parameter block; 0 or CS_ERR_INVALID
	 * when the SRAM holds what the definition cannot model (err says what) */
	int (*model)(uint16_t *a, uint32_t *b, const uint16_t *p, char *err, size_t errlen);
	/* pe's build of the image (pe_only = 1): the fw source the overlay is assembled from,
	 * whose instructions pe_lite does not decode; 0 and NULL: the image's own source */
	int pe_only;
	const char *src;
};

/* The program image:entry; with full (a pe=full device), pe's build where there is one. */
const struct res_prog *res_prog_find(const char *image, const char *entry, int full);
/* The block's regions against the geometry: CS_ERR_RANGE / CS_ERR_INVALID with err. */
int res_prog_check(const struct res_prog *pr, const struct plan_geom *g, uint32_t block,
		   const uint16_t *params, char *err, size_t errlen);

enum res_kind { RES_WRITE, RES_READ, RES_WRITE_ALL, RES_PROGRAM, RES_KERNEL, RES_REDUCE };

/* One call's operation, as csd.c checked it. */
struct res_op {
	enum res_kind kind;
	csd_region r;        /* WRITE, READ; WRITE_ALL: base = addr, width = stride = n */
	int T;               /* WRITE, READ; WRITE_ALL: 1 */
	const void *src;     /* WRITE, WRITE_ALL */
	void *dst;           /* READ; REDUCE: the sums (float [r.width]) */
	/* PROGRAM */
	const struct res_prog *prog;
	const struct csd_fw *ovl; /* the overlay image to load first; NULL: it is resident */
	const struct csd_fw *img; /* the overlay image (the cycle estimate runs its code) */
	int base, pc;             /* the overlay's IMEM base, the entry's pc */
	uint32_t block;
	const uint16_t *params;
	/* KERNEL (plan.h's plan_exec_resident): kernel PLAN_FWD, PLAN_BWD or PLAN_WGRAD; r the
	 * output (fwd/bwd, B) or the wgrad's dY (Bh); in the stationary input (A) */
	enum plan_kernel kernel;
	csd_region in;
	const csd_sparse *w;
	int accumulate;           /* fwd/bwd: CSD_ACCUMULATE */
	uint32_t scratch;         /* wgrad: the partial sums' B word */
	float *dw;                /* wgrad: the result [nnz], CSR order */
	const struct csd_fw *fw;  /* the kernels image (task entries) */
	const struct res_op *side; /* KERNEL: a READ or WRITE it carries (res_side_fits), or NULL */
};

/* Whether kernel op k may carry read or write rd (docs/architecture.md 7.5). A READ: rd is
 * in B (or Bh), within one bank, and k's B words (its output and START fill, or its dY and
 * partial sums) lie in the other bank: the READ then streams at full rate while k
 * computes, and nothing k writes is read. A WRITE (checked by res_side_conflict): rd is in
 * A, k a forward or backward kernel, and A has its own write port (g->a_wport). */
int res_side_fits(const struct plan_geom *g, const struct res_op *k, const struct res_op *rd);
/* Whether write wr overlaps what kernel k reads or writes (A: its input; B: its output and
 * START fill, or its dY and partial sums): CS_ERR_INVALID with err, else CS_OK. */
int res_side_conflict(const struct plan_geom *g, const struct res_op *k, const struct res_op *wr,
		      char *err, size_t errlen);

/* Memory mem's size in its elements (A, Bh) or words (B), and its name. */
uint64_t res_mem_size(const struct plan_geom *g, int mem);
const char *res_mem_name(int mem);
/* A kernel op's plan and registers (op->T, its regions, the partial sums), every check a
 * call needs before anything is sent: CS_ERR_INVALID / CS_ERR_RANGE with err. */
int res_kernel_plan(const struct plan_geom *g, const struct res_op *op, struct plan *pl,
		    struct plan_regions *rg, char *err, size_t errlen);
/* Tokens a PE holds for T tokens. */
int res_tp(const struct plan_geom *g, int T);
/* Check a region for T tokens (write: A's word alignment too). */
int res_check_region(const struct plan_geom *g, const char *what, const csd_region *r, int T,
		     int write, char *err, size_t errlen);
/* Run op's stream over link (counting only when link->send is NULL), adding its words and
 * estimated cycles to st. lut (counting; NULL: not tracked) is every PE's lookup RAM
 * (pe_vec.v), which op's B writes and vector programs update. */
int res_exec(const struct plan_geom *g, const struct res_op *op, struct plan_link *link,
	     struct plan_stats *st, struct vt_lut *lut, char *err, size_t errlen);

#endif /* CS_RESIDENT_H */
