/*
 * eng.h - the native sparse engine: the three kernels of a sparse linear layer in fp32 on
 * the host's cores, fast enough that a training step's time falls with sparsity
 * (docs/engine.md).
 *
 * Layout. A weight W [n_out, n_in] is kept as its nonzeros in both orders (eng_spmat): CSR
 * by output row for the forward product and the weight gradient, CSC by input column for
 * the backward product; a value refresh gathers both from the dense weights.
 * Kernels. A nonzero w_ij costs one broadcast and one fused multiply-add per vector of
 * tokens, the mesh's AXPY-per-nonzero with the roles of PE and token block exchanged:
 *   forward   Y[:, i]  = sum_{j in row i} w_ij X[:, j]        (eng_spmm over CSR)
 *   backward dX[:, j]  = sum_{i in col j} w_ij dY[:, i]       (eng_spmm over CSC)
 *   weight    dW[k]    = <dY[:, row k], X[:, col k]>          (eng_sddmm, CSR order)
 * The products take and give token-major activations (as the model holds them) and work on
 * a token-minor copy of the input inside; the weight gradient takes token-minor
 * activations ([rows][ld], a row holding one feature over the tokens, zero-padded to
 * ld = eng_ld(T)), which the products hand out.
 *
 * Threads. Work is split between the pool's threads by a fixed rule (token blocks, or rows
 * of equal nonzero count); every output element is computed by one thread, summing in a
 * fixed order, so results do not depend on the thread count or on scheduling.
 *
 * SIMD. AVX-512, AVX2+FMA and portable C implementations of every kernel; the best the CPU
 * supports is picked at first use, CSHOST_ISA=portable|avx2|avx512 (or eng_isa_set) forces
 * one. Paths differ only in fp32 rounding (fused multiply-add, lane-wise partial sums).
 *
 * Values are fp32, or bf16 (ENG_BF16: half the weight memory, the accelerator's weight
 * numerics; products and sums stay fp32).
 * Not here: which projection runs where (host/train/train_native.c), masks (host/sparsity).
 */
#ifndef CS_ENGINE_ENG_H
#define CS_ENGINE_ENG_H

#include <stddef.h>
#include <stdint.h>

#include "common/cs_pool.h"

/* Activations are padded to a multiple of this many tokens (one AVX-512 vector). */
#define ENG_TPAD 16
/* The products work on blocks of ENG_TB tokens: an output row's block (four AVX-512
 * vectors) is accumulated in registers over the row's nonzeros, reading the packed block
 * of the input (n_in * ENG_TB floats: 64 KB at n_in = 256) from L1 and L2. */
#define ENG_TB 64

enum eng_isa { ENG_ISA_PORTABLE = 0, ENG_ISA_AVX2 = 1, ENG_ISA_AVX512 = 2, ENG_ISA_N };

/* The best ISA this CPU (and OS) supports. */
int eng_isa_best(void);
/* The ISA the kernels use now: CSHOST_ISA if set, else the best. */
int eng_isa(void);
/* Force an ISA (tests, benchmarks); CS_ERR_NOT_SUPPORTED when the CPU lacks it. */
int eng_isa_set(int isa);
const char *eng_isa_name(int isa);
/* Parse "portable" / "avx2" / "avx512"; -1 when unknown. */
int eng_isa_parse(const char *s);

enum eng_value { ENG_F32 = 0, ENG_BF16 = 1 };

typedef struct eng_spmat {
	int n_out, n_in;     /* W is [n_out, n_in] */
	int64_t nnz;
	int vtype;           /* enum eng_value */
	/* CSR: row_ptr [n_out+1], col [nnz] ascending in each row, val [nnz] */
	int64_t *row_ptr;
	int32_t *col;
	void *val;           /* float or uint16_t (bf16 bits) */
	/* CSC: col_ptr [n_in+1], row [nnz] ascending in each column, cval [nnz] */
	int64_t *col_ptr;
	int32_t *row;
	void *cval;
	int32_t *csr_pos;    /* [nnz]: cval[q] is val[csr_pos[q]] (the CSC refresh's gather) */
	int64_t cap;         /* allocated entries (nnz <= cap) */
} eng_spmat;

/* Build (or rebuild in place, reusing storage when it fits) from dense w [n_out, n_in] and
 * mask (1 = kept; NULL keeps every entry). Kept entries whose value is zero stay.
 * CS_ERR_INVALID for bad sizes or more than INT32_MAX kept entries, CS_ERR_NO_MEM. */
int eng_spmat_build(eng_spmat *s, const float *w, const uint8_t *mask, int n_out, int n_in,
		    int vtype);
/* Refresh the values of the same pattern from dense w. */
void eng_spmat_update_values(eng_spmat *s, const float *w, cs_pool *pool);
/* Refresh the CSC values from the CSR values alone (the caller wrote val). */
void eng_spmat_update_csc(eng_spmat *s, cs_pool *pool);
/* eng_spmat_update_csc on each of s[0..n-1] in one pool job (a training step refreshes
 * every projection at once: one fork/join instead of one per matrix). */
void eng_spmat_update_csc_many(eng_spmat *const *s, int n, cs_pool *pool);
void eng_spmat_free(eng_spmat *s);
/* 1 when a and b hold the same pattern and values bit for bit (tests). */
int eng_spmat_equal(const eng_spmat *a, const eng_spmat *b);
/* Bytes held by s. */
size_t eng_spmat_bytes(const eng_spmat *s);

/* The row length of token-minor activations: T rounded up to ENG_TPAD, and one vector more
 * when that is a multiple of 128 floats (512 B), so that rows a power of two apart do not
 * all fall into the same few L1 sets. */
static inline int eng_ld(int T)
{
	int ld = (T + ENG_TPAD - 1) / ENG_TPAD * ENG_TPAD;
	return ld % 128 ? ld : ld + ENG_TPAD;
}

/* Token-minor layouts of an activation of `rows` features over T tokens:
 *   ENG_TM_ROWS     [rows][eng_ld(T)]: a row per feature;
 *   ENG_TM_BLOCKED  [nblk][rows][ENG_TB], nblk = ceil(T / ENG_TB): the tokens in blocks of
 *                   ENG_TB, each block's rows contiguous, as the products work on them (a
 *                   blocked input needs no packing, a blocked output is written whole).
 * Tokens past T (to ld, or to the end of the last block) are zero. */
enum eng_tm { ENG_TM_ROWS = 1, ENG_TM_BLOCKED = 2 };

/* Floats of a blocked token-minor activation of `rows` features over T tokens. */
static inline size_t eng_blk_size(int rows, int T)
{
	return ((size_t)T + ENG_TB - 1) / ENG_TB * ENG_TB * (size_t)rows;
}

/* dst [rows][eng_ld(T)] (ENG_TM_ROWS, padding zeroed) = src blocked (ENG_TM_BLOCKED), on the
 * caller's thread: for a consumer that wants rows (the dense-gradient steps' sgemm). */
void eng_tm_unblock(float *dst, const float *src, int rows, int T);

/* dst [C][ld] = src [R][C] transposed; columns R..ld-1 of dst are zeroed. */
void eng_transpose_in(cs_pool *pool, float *dst, const float *src, int R, int C, int ld);
/* dst [R][C] = src [C][ld] transposed back (the first R columns of src). */
void eng_transpose_out(cs_pool *pool, float *dst, const float *src, int R, int C, int ld);

/* dst [c][r] = src [r][c] for r < rows, c < cols (leading dimensions ldd, lds) on the
 * caller's thread: a small block for a pass that fuses its own transpose (LayerNorm's
 * token-minor output), best from and into L1 or L2. */
void eng_transpose_block(float *dst, size_t ldd, const float *src, size_t lds, int rows,
			 int cols);

/* Scratch of the kernels, per pool thread; one per pool, reused across calls. */
typedef struct eng_ctx eng_ctx;
int eng_ctx_create(eng_ctx **e, cs_pool *pool);
void eng_ctx_free(eng_ctx *e);
cs_pool *eng_ctx_pool(const eng_ctx *e);

/* Token-major products (what the model holds):
 *   by_col = 0 (forward):       y [T][n_out] = x [T][n_in] W^T
 *   by_col = 1 (backward data): y [T][n_in]  = x [T][n_out] W
 * Token blocks of ENG_TB tokens are split between the threads. Each thread transposes its
 * blocks of x into the token-minor copy of the input and packs each block contiguous, then
 * accumulates each output row's block in registers over the row's nonzeros (a broadcast
 * and ENG_TB/16 fused multiply-adds per nonzero; a wide input a column chunk at a time,
 * the same sums) and transposes the result block back into y. xt, when not NULL, is where
 * that copy goes ([ncols][eng_ld(T)], zero-padded: what eng_sddmm takes); else the context
 * keeps one. 0 or CS_ERR_NO_MEM. */
int eng_spmm(eng_ctx *e, float *y, const eng_spmat *w, int by_col, const float *x, int T,
	     float *xt);
/* The same with either side token-minor, x_tm and y_tm 0 (token-major) or an enum eng_tm
 * layout: x_tm takes the input so (its tokens past T are not read into any output; xt is
 * ignored, x is that copy already), y_tm gives the output so, its tokens past T zeroed. A
 * token-minor side needs no transpose at all, a blocked input no packing. 0,
 * CS_ERR_INVALID (a layout out of range) or CS_ERR_NO_MEM. */
int eng_spmm_ex(eng_ctx *e, float *y, int y_tm, const eng_spmat *w, int by_col, const float *x,
		int x_tm, int T, float *xt);
/* The token-minor product of eng_spmm_ex (y_tm an enum eng_tm layout) with each output
 * element multiplied by the element of mul at the same place (mul in y's layout) while the
 * output rows are in L1: y = (x W^T or x W) * mul elementwise, the same bits as the product
 * followed by a separate pass of y[i] * mul[i] (the backward of an elementwise function
 * whose derivative is kept, as GELU's). 0, CS_ERR_INVALID (mul NULL, y_tm 0) or
 * CS_ERR_NO_MEM. */
int eng_spmm_mul(eng_ctx *e, float *y, int y_tm, const float *mul, const eng_spmat *w,
		 int by_col, const float *x, int x_tm, int T, float *xt);
/* The forward product into a token-major y with a residual add and a bias in its output
 * pass: y [T][n_out] = res + (x W^T + bias), each element res + (sum + bias) in that order
 * while the output block is in L1, the bits of the product followed by a separate pass.
 * res [T][n_out] (not y), bias [n_out]; x and xt as eng_spmm_ex. 0, CS_ERR_INVALID (res or
 * bias NULL, res == y) or CS_ERR_NO_MEM. */
int eng_spmm_res(eng_ctx *e, float *y, const float *res, const float *bias, const eng_spmat *w,
		 const float *x, int x_tm, int T, float *xt);
/* The forward product into a token-minor y (y_tm an enum eng_tm layout) with its bias
 * added in the output pass: y = x W^T + bias on the T tokens (padding tokens zero), the
 * bits of the product followed by a separate pass. x and x_tm as eng_spmm_ex (a
 * token-major x copied into the context's scratch). 0, CS_ERR_INVALID (bias NULL, y_tm 0)
 * or CS_ERR_NO_MEM. */
int eng_spmm_bias(eng_ctx *e, float *y, int y_tm, const float *bias, const eng_spmat *w,
		  const float *x, int x_tm, int T);
/* The same with y and res blocked token-minor (y_tm ENG_TM_BLOCKED, both [nblk][n_out][ENG_TB])
 * or token-major (y_tm 0): each output row's block gets res + (sum + bias) while it is in
 * L1 or L2, the same bits; y's padding tokens zeroed. CS_ERR_INVALID also for
 * ENG_TM_ROWS. */
int eng_spmm_res_ex(eng_ctx *e, float *y, int y_tm, const float *res, const float *bias,
		    const eng_spmat *w, const float *x, int x_tm, int T, float *xt);
/* Token-minor weight gradient (inputs [rows][eng_ld(T)], transposed with eng_transpose_in
 * or handed out by eng_spmm): dw [nnz] in CSR order: dw[k] = sum_t dy [row k][t] *
 * x [col k][t] over the T tokens. */
void eng_sddmm(cs_pool *pool, float *dw, const eng_spmat *w, const float *dy, const float *x,
	       int T);
/* eng_sddmm, and db [n_out] += the sum of each row of dy over the tokens while the row is in
 * registers (a bias gradient with no pass of its own): 16 lane-wise sums, lane v over the
 * tokens t = v, v + 16, ... in order from +0, then the 16 lanes in order from +0, the order
 * of the model's token-minor bias gradient, so the same bits. dy's padding tokens T..ld-1
 * must be zero (they are summed); lanes [n_out][16] is scratch. db NULL: eng_sddmm. */
void eng_sddmm_db(cs_pool *pool, float *dw, float *db, float *lanes, const eng_spmat *w,
		  const float *dy, const float *x, int T);
/* eng_sddmm_db with dy and x each in an enum eng_tm layout (dy_tm, x_tm): the same sums in
 * the same order, so the same bits. */
void eng_sddmm_ex(cs_pool *pool, float *dw, float *db, float *lanes, const eng_spmat *w,
		  const float *dy, int dy_tm, const float *x, int x_tm, int T);
/* eng_sddmm_ex in the CSC order: for each input feature, its row of x in registers and the
 * rows of dy at the column's nonzeros streamed past it (the n_out rows of dy instead of the
 * n_in rows of x: less to stream when n_in > n_out, as mlp.proj's). Every dw[k] (CSR order,
 * as eng_sddmm_ex) is the same sum in the same order, so the same bits; db, when not NULL,
 * += dy's row sums in a pass of their own, in eng_sddmm_db's order (the same bits).
 * scratch [nnz]: the sums in CSC order before they go to their CSR places. */
void eng_sddmm_csc_ex(cs_pool *pool, float *dw, float *db, float *scratch, const eng_spmat *w,
		      const float *dy, int dy_tm, const float *x, int x_tm, int T);

/* ---- causal self-attention (eng_attn.c) ---------------------------------------------- */

/* Floats of scratch per pool thread that eng_attention_* take: T x T scores' gradient (rows
 * of T + 16) and three T x hs transposes. */
size_t eng_attention_scratch(int T, int hs);
/* B sequences of T tokens, NH heads of hs = C / NH features. qkv is token-major
 * [B*T][3C] (ld = 0) or token-minor [3C][ld] (token b*T + t in column b*T + t);
 * out [B*T][C] token-major; att [B][NH][T][T] the softmax probabilities, zero above the
 * diagonal; scratch [threads][eng_attention_scratch(T, C / NH)]. (b, h) pairs are split
 * between the threads and every output has one owner: the bits do not depend on the
 * thread count. */
void eng_attention_forward(cs_pool *pool, float *out, float *att, const float *qkv, int ld,
			   float *scratch, int B, int T, int C, int NH);
/* The same from token-minor qkv [3C][ld] into a token-minor out [C][ld] (columns B*T..ld-1
 * zeroed): the same bits. */
void eng_attention_forward_tmo(cs_pool *pool, float *outt, float *att, const float *qkvt,
			       int ld, float *scratch, int B, int T, int C, int NH);
/* dqkv (the layout of qkv) overwritten with the gradient of q, k and v from dout
 * [B*T][C]; a token-minor dqkv's columns past B*T are not written. */
void eng_attention_backward(cs_pool *pool, float *dqkv, const float *dout, const float *qkv,
			    int ld, const float *att, float *scratch, int B, int T, int C,
			    int NH);
/* The same from token-minor qkv [3C][ld] and a token-minor dout [C][ld] (its columns past
 * B*T not read) into token-minor dqkv: the bits of eng_attention_backward. */
void eng_attention_backward_tmd(cs_pool *pool, float *dqkvt, const float *doutt,
				const float *qkvt, int ld, const float *att, float *scratch, int B,
				int T, int C, int NH);

#endif /* CS_ENGINE_ENG_H */
