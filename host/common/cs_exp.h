/*
 * cs_exp.h - exp(x) for x <= 0 in single precision, shared by the model's scalar loops
 * (host/train/gpt.c) and the engine's portable kernels (host/engine/eng_portable.c), so
 * both compute the same bits: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite, ln2 in two
 * parts), a degree-6 Taylor polynomial for exp(r), and 2^n built in the exponent field.
 */
#ifndef CS_EXP_H
#define CS_EXP_H

#include <stdint.h>
#include <string.h>

/* exp(x) for x in [-87, 0] */
static inline __attribute__((always_inline)) float cs_exp_neg(float x)
{
	const float log2e = 1.44269504088896341f;
	const float ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
	const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
	float kf = (x * log2e + shifter) - shifter;
	float r = (x - kf * ln2_hi) - kf * ln2_lo;
	float p = 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	uint32_t bits = (uint32_t)((int32_t)kf + 127) << 23;
	float scale;
	memcpy(&scale, &bits, sizeof scale);
	return p * scale;
}

/* exp(x) for x <= 0 (softmax): below -87 the result (< 2^-125) is taken at -87, which
 * no sum of terms >= 1 can tell from zero */
static inline __attribute__((always_inline)) float cs_exp_nonpos(float x)
{
	return cs_exp_neg(x > -87.0f ? x : -87.0f);
}

#endif
