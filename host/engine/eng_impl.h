/*
 * eng_impl.h - what the engine's front end (eng.c) and its per-ISA kernel files share;
 * not public. Each kernel works on a contiguous range of rows [r0, r1) of its output and
 * on every token block; the front end splits the rows between threads.
 */
#ifndef CS_ENGINE_ENG_IMPL_H
#define CS_ENGINE_ENG_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/eng.h"

typedef struct eng_kern {
	/* One token block of a product, for the rows r in [0, nrows):
	 *   y [r][0..tl) = sum_{k in ptr[r]..ptr[r+1]} val[k] * x [idx[k]][0..tl)
	 * x is the block's first token in the token-minor input (rows ld floats apart), y the
	 * block's first token of the token-minor output (rows ly apart); tl a multiple of 16,
	 * at most ENG_TB. Each output vector sums its row's entries in order, in one chain:
	 * the bits do not depend on the block's place or width. */
	void (*spmm_rows)(float *y, size_t ly, const int64_t *ptr, const int32_t *idx,
			  const void *val, int bf16, const float *x, size_t ld, int tl, int nrows);
	/* dw[k] = <dy [r][0..tl), x [idx[k]][0..tl)> for the entries k of rows [r0, r1); rows
	 * ld apart, tl a multiple of 16 (the padding past the tokens is not visited) */
	void (*sddmm)(float *dw, const int64_t *ptr, const int32_t *idx, const float *dy,
		      const float *x, int ld, int tl, int r0, int r1);
	/* dst [c][r] = src [r][c] for r < rows, c < cols (leading dimensions ldd, lds) */
	void (*transpose)(float *dst, size_t ldd, const float *src, size_t lds, int rows,
			  int cols);
} eng_kern;

extern const eng_kern eng_kern_portable;
extern const eng_kern eng_kern_avx2;
extern const eng_kern eng_kern_avx512;

static inline float eng_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

#endif /* CS_ENGINE_ENG_IMPL_H */
