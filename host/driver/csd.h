/*
 * csd.h - the device API: one C interface to the accelerator, whatever carries it.
 *
 * A device is opened by URI:
 *   "cpu" / "cpu:RxC"   bit-exact C model of a RxC mesh (default 4x4), in process
 *   "sim" / "sim:RxC"   the Verilated RTL mesh, in process (default 4x4)
 *   "usb" / "usb:SERIAL" the FPGA board over its FT2232H link
 * cpu and sim also take SRAM sizes after the shape: "cpu:2x2,awords=256,bwords=128"
 * (defaults 16384 and 8192, as in the RTL; small sizes exercise the tiling), and the PE
 * implementation, named after what ships:
 *   pe=full      pe with mesh_router (the default; simulation only, it fits no board)
 *   pe=lite      pe_lite with the lean router and host port: the default bitstream (1x1,
 *                awords 32768, bwords 512)
 *   pe=micro_mt  one pe_micro_mt running all PEs (3 or more): the 2x2 bitstream (awords
 *                8192 = 2 * bwords 4096)
 * tune=0 keeps the widest output tiles (the default narrows a forward's or backward's
 * tiles where the read-back then hides behind the next tile's compute: plan_tune).
 * dotspan=0 sends wgrad's stream as the boards take it (a SET_MAJOR per major) to pe too;
 * pe's default is dotspan=1, dot groups across majors (docs/architecture.md 4.4), which
 * pe_lite and pe_micro_mt cannot run.
 * Without awords=/bwords= an implementation gets its bitstream's sizes, so
 * "sim:1x1,pe=lite" is the default bitstream's mesh and "sim:2x2,pe=micro_mt" the 2x2
 * board's, with exactly their Verilog parameters. Results do not depend on pe= (one ISA,
 * one numerics; only pe's dot reads a per-lane A offset, and the driver sends each its
 * wgrad stream): the cpu model takes it for the sizes, checks and streams, sim loads that
 * RTL.
 * sim never builds RTL: each (shape, sizes, pe) is a Verilated model that make builds
 * (make sim-model MESH=RxC PE=... AWORDS=N BWORDS=N); a missing or stale one is an error
 * naming that command (csd_sim_model gives it).
 * Every backend gives bit-identical results for the same mesh shape and SRAM sizes
 * (docs/architecture.md, "Kernels" fixes the accumulation order that makes this true).
 *
 * The three training kernels of one sparse linear layer W [n_out, n_in] (bf16 nonzeros):
 *   forward      Y[t,i]  = sum_j W[i,j] * X[t,j]          (X [T, n_in] bf16 -> Y [T, n_out] f32)
 *   backward     dX[t,j] = sum_i W[i,j] * dY[t,i]         (dY [T, n_out] bf16 -> dX [T, n_in] f32)
 *   wgrad        dW[i,j] = sum_t dY[t,i] * X[t,j]  at the nonzero positions of W only
 * Only nonzeros cross the link. Layers larger than the device's SRAM are tiled over tokens
 * and outputs by the driver. All functions return enum cs_error (0 ok, < 0 error).
 */
#ifndef CS_CSD_H
#define CS_CSD_H

#include <stddef.h>
#include <stdint.h>

#include "common/cs_error.h"

typedef struct csd_dev csd_dev;

/* A sparse weight matrix in both stream orders; values are bf16 bits. */
typedef struct csd_sparse {
	int n_out, n_in; /* W is [n_out, n_in] */
	int64_t nnz;
	/* CSR (row i = output): row_ptr [n_out+1], col [nnz], val [nnz]; columns ascending */
	int64_t *row_ptr;
	int32_t *col;
	uint16_t *val;
	/* CSC (column j = input): col_ptr [n_in+1], row [nnz], cval [nnz], and for each CSC
	 * entry its position in the CSR arrays (csr_pos [nnz]); rows ascending */
	int64_t *col_ptr;
	int32_t *row;
	uint16_t *cval;
	int64_t *csr_pos;
} csd_sparse;

/* Build from a dense fp32 matrix w [n_out, n_in] and an optional mask (NULL: keep every
 * entry whose bf16 value is nonzero; else keep where mask != 0). Values are rounded to
 * bf16; kept entries whose bf16 value is zero are still kept (the mask decides). */
int csd_sparse_from_dense(csd_sparse *sp, const float *w, const uint8_t *mask, int n_out,
			  int n_in);
/* Refresh the values of an existing pattern from dense w (same mask), without realloc. */
int csd_sparse_update_values(csd_sparse *sp, const float *w);
void csd_sparse_free(csd_sparse *sp);

typedef struct csd_info {
	char kind[16];       /* "cpu", "sim", "usb" */
	int rows, cols;      /* mesh shape */
	int pes;             /* rows * cols */
	uint32_t a_words;    /* per-PE activation SRAM, 16-bit words */
	uint32_t b_words;    /* per-PE accumulator SRAM, 32-bit words */
	uint32_t max_index;  /* largest feature index a wavelet can carry + 1 (65536) */
	double clock_hz;     /* design clock (for cycle -> time conversion) */
	char pe[16];         /* PE implementation (pe=): "full", "lite", "micro_mt"; "" usb */
} csd_info;

typedef struct csd_counters {
	uint64_t cycles;          /* device cycles spent in kernels */
	uint64_t pe_cycles;       /* cycles * PEs over the streaming phases */
	uint64_t mac_busy;        /* PE-cycles with a MAC issued */
	uint64_t stream_cycles;   /* cycles of the streaming phases */
	uint64_t link_bytes_out;  /* host -> device bytes */
	uint64_t link_bytes_in;   /* device -> host bytes */
	uint64_t weight_bytes;    /* of link_bytes_out: the weight/position streams */
	uint64_t act_bytes_out;   /* of link_bytes_out: activation uploads (A, wgrad's B) */
	uint64_t act_bytes_in;    /* of link_bytes_in: forward/backward results read back */
	uint64_t grad_bytes_in;   /* of link_bytes_in: weight-gradient results (COLLECT) */
	uint64_t prog_bytes_out;  /* of link_bytes_out: vector program overlays, their task
				   * entries and parameter blocks, broadcast blocks */
	uint64_t nnz_streamed;    /* nonzeros sent */
	uint64_t act_cycles;      /* of cycles: activation transfers (WRITEs and READs of A and
				   * B) no computation hides, estimated from the stream on
				   * every backend (sim too: not measured) */
	uint64_t errors;          /* device error counter */
} csd_counters;

int csd_open(csd_dev **dev, const char *uri);
/* The Verilated model a "sim:..." URI loads: its path (path_len bytes) and the arguments of
 * the make command that builds it ("MESH=2x2 PE=micro_mt AWORDS=8192 BWORDS=4096", for
 * `make sim-model`; args_len bytes). Both are "" when the URI needs none (the model
 * engine). fst: the --trace-fst build (CSD_SIM_FST). CS_ERR_INVALID for a URI that is not
 * a valid sim URI (err, err_len bytes, says why). */
int csd_sim_model(const char *uri, int fst, char *path, size_t path_len, char *args,
		  size_t args_len, char *err, size_t err_len);
void csd_close(csd_dev *dev);
int csd_get_info(csd_dev *dev, csd_info *info);
int csd_get_counters(csd_dev *dev, csd_counters *c);
void csd_reset_counters(csd_dev *dev);
/* Message of the last error on this device ("sim: timeout after 1000000 cycles ...");
 * csd_last_error(NULL): why the last csd_open in this thread failed. */
const char *csd_last_error(csd_dev *dev);

/* y [T, n_out] = x [T, n_in] (bf16) times W^T */
int csd_forward(csd_dev *dev, float *y, const uint16_t *x, const csd_sparse *w, int T);
/* dx [T, n_in] = dy [T, n_out] (bf16) times W */
int csd_backward(csd_dev *dev, float *dx, const uint16_t *dy, const csd_sparse *w, int T);
/* dw [nnz] in CSR order: dw[k] = sum_t dy[t, row(k)] * x[t, col(k)] */
int csd_wgrad(csd_dev *dev, float *dw, const uint16_t *dy, const uint16_t *x,
	      const csd_sparse *w, int T);
/* Both of a layer's backward kernels in one call: dx as csd_backward, dw as csd_wgrad
 * but with dy uploaded once and kept in the PEs' SRAM for both (docs/architecture.md 4.5),
 * so dw's token partition is the backward's: on meshes where a layer needs more than one
 * token tile its bits can differ from csd_wgrad's (identical on every backend). */
int csd_backward_wgrad(csd_dev *dev, float *dx, float *dw, const uint16_t *dy,
		       const uint16_t *x, const csd_sparse *w, int T);

/*
 * Resident tensors and vector programs (docs/resident-step.md, docs/architecture.md 7.5):
 * data that stays in the PEs' SRAM between calls, and the vector programs (fw/vec_*.s:
 * layernorm and GELU, forward and backward) that run on it. Bit-identical on every backend
 * that runs them (cpu, sim with the model engine).
 *
 * A token-split tensor [T, width] lives at the same region of every PE: with tp =
 * ceil(T / PEs), PE q holds tokens [q*tp, (q+1)*tp), its token q*tp + u at base + u*stride;
 * rows past T are zeros when written. Memory A (and B seen as CSD_MEM_BH) holds bf16
 * elements (the host gives and gets uint16_t bits), memory B fp32 words (float). Writes of
 * bf16 elements cover whole 32-bit words: base, and with stride != width also stride and
 * width, must be even, and so must tp * width when stride == width. Nothing checks a region against the kernels' use of SRAM:
 * a kernel call (csd_forward, ...) overwrites A from 0 and both B banks.
 */
/* CSD_MEM_BH: memory B as packed bf16 elements (element e the low half of word e >> 1
 * when e is even, else its high half): the wgrad's dY operand (the dot's Bh view). */
enum csd_mem { CSD_MEM_A = 0, CSD_MEM_B = 1, CSD_MEM_BH = 2 };
typedef struct csd_region {
	int mem;         /* CSD_MEM_A or CSD_MEM_BH (bf16 elements), CSD_MEM_B (fp32 words) */
	uint32_t base;   /* element / word address of the PE's first token */
	uint32_t stride; /* elements / words from one token to the next (>= width) */
	uint32_t width;  /* elements / words a token */
} csd_region;

/* src [T, width] (uint16_t bf16 for A, float for B) into region r of every PE. */
int csd_write_tokens(csd_dev *dev, const csd_region *r, const void *src, int T);
/* dst [T, width] (uint16_t for A, float for B) from region r of every PE. */
int csd_read_tokens(csd_dev *dev, void *dst, const csd_region *r, int T);
/*
 * The same read, performed by the next call on dev (docs/architecture.md 7.5): when that
 * call is a kernel on regions (csd_*_region) whose B words lie in the other bank of B than
 * r (r in B or Bh, within one bank), the read streams up while the kernel computes; before
 * any other call it is performed on its own first. dst holds the tokens once that call
 * returns (csd_flush: now), and must stay valid until then; a failing call leaves dst
 * undefined. The result is
 * csd_read_tokens' at this point of the call sequence: nothing the kernel writes is read.
 * One read waits at a time (a second one performs the first); csd_close drops it.
 */
int csd_read_tokens_next(csd_dev *dev, void *dst, const csd_region *r, int T);
/*
 * The same write, performed by the next call on dev (docs/architecture.md 7.5): a forward
 * or backward kernel on regions carries it (its WRITEs between the kernel's majors) when r
 * is in A and the PE's A has a write port of its own (pe=full); otherwise, and before any
 * other call, it is performed on its own first. src must stay valid until then. When the
 * next call is a kernel on regions, r must not overlap what the kernel reads or writes (its
 * input in A, its output or dy, the START fill, the partial sums): that call then fails
 * with CS_ERR_INVALID and the write is dropped, on every implementation. The result is
 * csd_write_tokens' at this point of the call sequence. One read or write waits at a time.
 */
int csd_write_tokens_next(csd_dev *dev, const csd_region *r, const void *src, int T);
/* Perform the read or write csd_*_tokens_next left, if any (none: CS_OK, csd_last_error
 * kept). */
int csd_flush(csd_dev *dev);
/* The same n elements (A: uint16_t, n even, addr even) or words (B: float or uint32_t) at
 * addr of every PE: parameter blocks, GELU tables, gamma and beta. */
int csd_write_all(csd_dev *dev, int mem, uint32_t addr, const void *src, uint32_t n);
/*
 * Run entry `entry` of vector program `program` (fw/<program>.s: "vec_ln_fwd" "ln_fwd",
 * "vec_ln_bwd" "ln_bwd", "vec_gelu" "gelu_fwd" or "gelu_bwd", "vec_cvt" "cvt_a", "cvt_bh",
 * "bias_fwd", "bias_bwd" or "cvt_f": the conversions between kernels, "vec_fc"
 * "fc_gelu_sh", "fc_gelu_hd", "fc_gelu_h", "fc_gelu_wd", "fc_gelu_bwd" or "fc_cvt": a fc
 * tile's vector work in one overlay; on pe=full its pe build fw/vec_fc_bf.s, the same
 * results in A by vlut.bf) on every PE, with its parameter block params [n_params] (the .equ P_ names of its source, in order) written
 * at B word `block` (below 65536) of every PE. The program is loaded into IMEM after the
 * kernels image when it is not already there. The regions the block names must lie in
 * SRAM and not overlap; its token count is the same on every PE, normally tp =
 * ceil(T / PEs) (the rows past T are zeros and compute harmlessly). CS_ERR_NOT_FOUND for a program the driver does not know,
 * CS_ERR_RANGE for one that does not fit IMEM or a region past the end of SRAM,
 * CS_ERR_NOT_SUPPORTED where the RTL cannot run the vector group yet (sim's Verilated
 * engine, usb).
 */
int csd_run_program(csd_dev *dev, const char *program, const char *entry, uint32_t block,
		    const uint16_t *params, int n_params);

/*
 * The kernels on resident regions (docs/architecture.md 7.5): the stationary input is
 * already in A, the output stays in B; only the nonzero weights cross the link (wgrad:
 * and its dw). All T tokens are one token tile: PE q's tokens as csd_write_tokens places
 * them (tp = ceil(T / PEs)), rows past T computed like the others. The output region is
 * one output tile (width <= 32768). Regions that do not fit SRAM or the registers (16-bit
 * addresses, tp * stride below 65536 for a fill) are CS_ERR_RANGE, wrong memories or widths
 * CS_ERR_INVALID. Every backend runs them (sim: the Verilated mesh too); bit-identical.
 *
 * csd_forward_region: y (B, fp32, width n_out) of every token = chains of fmac over the
 * nonzeros of W in ascending j of x (A, bf16, width n_in), as csd_forward. mode
 * CSD_OVERWRITE starts each chain from +0 (the START fill zeroes B[y.base .. y.base + tp *
 * y.stride), gaps between rows included); CSD_ACCUMULATE starts it from y's value (the
 * residual add, for free). csd_backward_region: dx (B, width n_in) from dy (A, width n_out),
 * likewise.
 * csd_wgrad_region: dw [nnz] in CSR order = sum_t dy[t, row(k)] * x[t, col(k)] with x in A
 * (width n_in) and dy as packed bf16 in B (CSD_MEM_BH, width n_out; cvt_bh of vec_cvt
 * makes it from an fp32 row), section 5's order for one token tile of tp tokens: csd_wgrad's
 * bits whenever csd_wgrad needs one token tile, if the rows past T are zeros. The partial
 * sums go to B words [scratch, scratch + min(256, bwords / 2)) (outside dy); what the
 * reduction leaves there stays.
 */
/*
 * csd_reduce_region: out[i] = the sum over every PE of B[r->base + i], i < r->width, in the
 * order of a wgrad batch's reduction (docs/architecture.md 5: each row's PEs from the east
 * edge to column 0, then the rows' sums from the south edge to row 0); on a mesh of more
 * than one column each row's sums stay in its column-0 PE's words, the other words as they
 * were. r: CSD_MEM_B, 1 .. min(256, bwords / 2) words within SRAM B. The kernels image's
 * wgrad tasks run it (their task tables, r6 past the words, END, COLLECT): per-PE partials
 * summed on the mesh, width words over the link instead of PEs * width.
 */
enum csd_accum { CSD_OVERWRITE = 0, CSD_ACCUMULATE = 1 };
int csd_forward_region(csd_dev *dev, const csd_region *y, const csd_region *x,
		       const csd_sparse *w, int T, int mode);
int csd_backward_region(csd_dev *dev, const csd_region *dx, const csd_region *dy,
			const csd_sparse *w, int T, int mode);
int csd_wgrad_region(csd_dev *dev, float *dw, const csd_region *dy, const csd_region *x,
		     const csd_sparse *w, int T, uint32_t scratch);
int csd_reduce_region(csd_dev *dev, float *out, const csd_region *r);

#endif /* CS_CSD_H */
