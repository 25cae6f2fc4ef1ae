/*
 * numerics.c - reference (integer) and fast (host FPU) formulations of the PE arithmetic.
 * The rules are in numerics.h and docs/architecture.md; the RTL (rtl/pe/pe_fmac.v)
 * implements the integer formulation below step for step: unpack, exact product,
 * align with sticky, add, normalize, round to nearest even, range check.
 */
#include "numerics.h"

#include <math.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* An operand as value = man * 2^exp, man normalized with its top bit at bit 62. */
struct nm_unp {
	uint32_t sign;
	int32_t exp;
	uint64_t man; /* 0 for zero */
};

static int nm_clz64(uint64_t x)
{
	return __builtin_clzll(x);
}

static struct nm_unp nm_norm(uint32_t sign, uint64_t man, int32_t exp)
{
	struct nm_unp r = { sign, 0, 0 };
	if (man) {
		int sh = nm_clz64(man) - 1; /* bring the top bit to bit 62 */
		r.man = man << sh;
		r.exp = exp - sh;
	}
	return r;
}

/* Round the exact value sign * man * 2^exp (man != 0, any width) to fp32 bits. */
static uint32_t nm_round_pack(uint32_t sign, uint64_t man, int32_t exp)
{
	int p = 63 - nm_clz64(man); /* msb position */
	uint64_t m;
	if (p > 23) {
		int sh = p - 23;
		uint64_t rest = man & ((1ull << sh) - 1);
		uint64_t half = 1ull << (sh - 1);
		m = man >> sh;
		if (rest > half || (rest == half && (m & 1)))
			m++;
		exp += sh;
		if (m >> 24) { /* carried into a new bit */
			m >>= 1;
			exp++;
		}
	} else {
		m = man << (23 - p);
		exp -= 23 - p;
	}
	/* value = m * 2^exp, m in [2^23, 2^24): unbiased exponent of the msb is exp + 23 */
	int32_t be = exp + 23 + 127;
	if (be >= 255)
		return sign | 0x7f800000u;
	if (be <= 0)
		return sign; /* flush to signed zero */
	return sign | ((uint32_t)be << 23) | (uint32_t)(m & 0x7fffffu);
}

/* Exact sum of two unpacked finite values, then one rounding. */
static uint32_t nm_sum_round(struct nm_unp x, struct nm_unp y)
{
	if (!x.man && !y.man)
		return x.sign & y.sign; /* RNE: -0 only for (-0) + (-0) */
	if (!x.man)
		return nm_round_pack(y.sign, y.man, y.exp);
	if (!y.man)
		return nm_round_pack(x.sign, x.man, x.exp);

	/* big = larger magnitude */
	if (y.exp > x.exp || (y.exp == x.exp && y.man > x.man)) {
		struct nm_unp t = x;
		x = y;
		y = t;
	}
	int64_t d = (int64_t)x.exp - y.exp;
	uint64_t sm;
	if (d >= 63)
		sm = 1; /* only a sticky bit survives */
	else
		sm = (y.man >> d) | ((y.man & ((1ull << d) - 1)) != 0);

	uint64_t s;
	if (x.sign == y.sign)
		s = x.man + sm; /* top at most bit 63 */
	else
		s = x.man - sm;
	if (!s)
		return 0; /* exact cancellation gives +0 under RNE */
	return nm_round_pack(x.sign, s, x.exp);
}

uint32_t nm_fmac_bits(uint16_t a, uint16_t b, uint32_t c)
{
	uint32_t ea = (a >> 7) & 0xffu, eb = (b >> 7) & 0xffu, ec = (c >> 23) & 0xffu;
	uint32_t sa = (uint32_t)(a & 0x8000u) << 16, sb = (uint32_t)(b & 0x8000u) << 16;
	uint32_t sc = c & 0x80000000u;
	uint32_t sp = sa ^ sb;
	int a_nan = ea == 0xff && (a & 0x7f), b_nan = eb == 0xff && (b & 0x7f);
	int c_nan = ec == 0xff && (c & 0x7fffffu);
	int a_inf = ea == 0xff && !(a & 0x7f), b_inf = eb == 0xff && !(b & 0x7f);
	int c_inf = ec == 0xff && !(c & 0x7fffffu);
	int a_zero = ea == 0, b_zero = eb == 0, c_zero = ec == 0;

	if (a_nan || b_nan || c_nan)
		return NM_F32_QNAN;
	if (a_inf || b_inf) {
		if (a_zero || b_zero)
			return NM_F32_QNAN; /* inf * 0 */
		if (c_inf && sc != sp)
			return NM_F32_QNAN; /* inf - inf */
		return sp | 0x7f800000u;
	}
	if (c_inf)
		return sc | 0x7f800000u;

	struct nm_unp p = { sp, 0, 0 }, q = { sc, 0, 0 };
	if (!a_zero && !b_zero) {
		uint64_t pm = (uint64_t)((0x80u | (a & 0x7fu)) * (0x80u | (b & 0x7fu)));
		p = nm_norm(sp, pm, (int32_t)ea + (int32_t)eb - 268);
	}
	if (!c_zero)
		q = nm_norm(sc, 0x800000u | (c & 0x7fffffu), (int32_t)ec - 150);
	return nm_sum_round(p, q);
}

uint32_t nm_add_bits(uint32_t a, uint32_t b)
{
	uint32_t ea = (a >> 23) & 0xffu, eb = (b >> 23) & 0xffu;
	uint32_t sa = a & 0x80000000u, sb = b & 0x80000000u;
	int a_nan = ea == 0xff && (a & 0x7fffffu), b_nan = eb == 0xff && (b & 0x7fffffu);
	int a_inf = ea == 0xff && !(a & 0x7fffffu), b_inf = eb == 0xff && !(b & 0x7fffffu);

	if (a_nan || b_nan)
		return NM_F32_QNAN;
	if (a_inf || b_inf) {
		if (a_inf && b_inf && sa != sb)
			return NM_F32_QNAN;
		return a_inf ? a : b;
	}
	struct nm_unp x = { sa, 0, 0 }, y = { sb, 0, 0 };
	if (ea)
		x = nm_norm(sa, 0x800000u | (a & 0x7fffffu), (int32_t)ea - 150);
	if (eb)
		y = nm_norm(sb, 0x800000u | (b & 0x7fffffu), (int32_t)eb - 150);
	return nm_sum_round(x, y);
}

/*
 * Fast paths. The host's fused multiply-add rounds once, like the model, and agrees with it
 * whenever the result magnitude is above 2^-126 (the only difference is IEEE's gradual
 * underflow, which the model replaces by rounding with unbounded exponent then flushing).
 * Results at or below 2^-126, and NaNs, take the reference path.
 */
#define NM_TINY 1.1754943508222875e-38f /* 2^-126 */

/* Take the reference path when the result is tiny, zero, infinite or NaN, or an input
 * accumulator is subnormal (the FPU would not flush it). */
static int nm_needs_ref(float r, float c)
{
	return !(fabsf(r) > NM_TINY) || fabsf(r) == INFINITY || (c != 0.0f && fabsf(c) < NM_TINY);
}

float nm_fmac(uint16_t a, uint16_t b, float c)
{
	float fa = nm_bf16_to_f32(a), fb = nm_bf16_to_f32(b);
	float r = fmaf(fa, fb, c);
	if (nm_needs_ref(r, c))
		return nm_bits_f32(nm_fmac_bits(a, b, nm_f32_bits(c)));
	return r;
}

float nm_add(float a, float b)
{
	float r = a + b;
	if (nm_needs_ref(r, a) || nm_needs_ref(r, b))
		return nm_bits_f32(nm_add_bits(nm_f32_bits(a), nm_f32_bits(b)));
	return r;
}

/*
 * The vector loops compute the FPU result for a block, then redo the rare elements whose
 * result (or accumulator input) is tiny, infinite or NaN with the reference. The plain
 * loop shape lets the compiler vectorize the common case.
 */
#define NM_BLOCK 64

void nm_axpy(float *y, uint16_t w, const uint16_t *x, size_t n)
{
	nm_axpy_strided(y, 1, w, x, 1, n);
}

void nm_axpy_strided(float *y, size_t sy, uint16_t w, const uint16_t *x, size_t sx, size_t n)
{
	float fw = nm_bf16_to_f32(w);
	float r[NM_BLOCK];
	for (size_t t0 = 0; t0 < n; t0 += NM_BLOCK) {
		size_t m = n - t0 < NM_BLOCK ? n - t0 : NM_BLOCK;
		int bad = 0;
		for (size_t i = 0; i < m; i++) {
			float fx = nm_bf16_to_f32(x[(t0 + i) * sx]);
			float c = y[(t0 + i) * sy];
			r[i] = fmaf(fw, fx, c);
			bad |= nm_needs_ref(r[i], c);
		}
		if (bad) {
			for (size_t i = 0; i < m; i++) {
				float c = y[(t0 + i) * sy];
				if (nm_needs_ref(r[i], c))
					r[i] = nm_bits_f32(nm_fmac_bits(w, x[(t0 + i) * sx],
									nm_f32_bits(c)));
			}
		}
		for (size_t i = 0; i < m; i++)
			y[(t0 + i) * sy] = r[i];
	}
}

float nm_dot_strided(float acc, const uint16_t *a, size_t sa, const uint16_t *b, size_t sb,
		     size_t n)
{
	for (size_t t = 0; t < n; t++)
		acc = nm_fmac(a[t * sa], b[t * sb], acc);
	return acc;
}

void nm_bf16_from_f32_array(uint16_t *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = nm_bf16_from_f32(src[i]);
}

void nm_bf16_to_f32_array(float *dst, const uint16_t *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = nm_bf16_to_f32(src[i]);
}

/*
 * nm_axpy_f32: vector FMA over lanes, with a per-vector check; a vector with any lane that
 * is tiny, zero, infinite or NaN (or whose accumulator is subnormal) is redone lane by lane
 * with the reference before it is stored.
 */
static void nm_axpy_f32_fix(float *y, float w, const float *x, size_t n)
{
	uint16_t wb = nm_bf16_from_f32(w);
	for (size_t i = 0; i < n; i++) {
		float c = y[i];
		float r = fmaf(w, x[i], c);
		if (nm_needs_ref(r, c))
			r = nm_bits_f32(nm_fmac_bits(wb, nm_bf16_from_f32(x[i]), nm_f32_bits(c)));
		y[i] = r;
	}
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void nm_axpy_f32_avx512(float *y, float w,
								  const float *x, size_t n)
{
	const __m512 vw = _mm512_set1_ps(w), tiny = _mm512_set1_ps(NM_TINY);
	const __m512 inf = _mm512_set1_ps(INFINITY), zero = _mm512_setzero_ps();
	const __m512i absm = _mm512_set1_epi32(0x7fffffff);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 c = _mm512_loadu_ps(y + i);
		__m512 r = _mm512_fmadd_ps(vw, _mm512_loadu_ps(x + i), c);
		__m512 ar = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(r), absm));
		__m512 ac = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(c), absm));
		__mmask16 bad = _mm512_cmp_ps_mask(ar, tiny, _CMP_NGT_UQ) |
				_mm512_cmp_ps_mask(ar, inf, _CMP_EQ_OQ) |
				(_mm512_cmp_ps_mask(ac, tiny, _CMP_LT_OQ) &
				 _mm512_cmp_ps_mask(ac, zero, _CMP_NEQ_OQ));
		if (bad)
			nm_axpy_f32_fix(y + i, w, x + i, 16);
		else
			_mm512_storeu_ps(y + i, r);
	}
	nm_axpy_f32_fix(y + i, w, x + i, n - i);
}

__attribute__((target("avx2,fma"))) static void nm_axpy_f32_avx2(float *y, float w,
								 const float *x, size_t n)
{
	const __m256 vw = _mm256_set1_ps(w), tiny = _mm256_set1_ps(NM_TINY);
	const __m256 inf = _mm256_set1_ps(INFINITY), zero = _mm256_setzero_ps();
	const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 c = _mm256_loadu_ps(y + i);
		__m256 r = _mm256_fmadd_ps(vw, _mm256_loadu_ps(x + i), c);
		__m256 ar = _mm256_and_ps(r, absm), ac = _mm256_and_ps(c, absm);
		__m256 bad = _mm256_or_ps(
			_mm256_or_ps(_mm256_cmp_ps(ar, tiny, _CMP_NGT_UQ),
				     _mm256_cmp_ps(ar, inf, _CMP_EQ_OQ)),
			_mm256_and_ps(_mm256_cmp_ps(ac, tiny, _CMP_LT_OQ),
				      _mm256_cmp_ps(ac, zero, _CMP_NEQ_OQ)));
		if (_mm256_movemask_ps(bad))
			nm_axpy_f32_fix(y + i, w, x + i, 8);
		else
			_mm256_storeu_ps(y + i, r);
	}
	nm_axpy_f32_fix(y + i, w, x + i, n - i);
}
#endif

static int nm_simd = -1; /* 2 avx512, 1 avx2+fma, 0 scalar; racy init is benign */

int nm_simd_level(int force)
{
	if (force >= 0)
		nm_simd = force;
	return nm_simd;
}

void nm_axpy_f32(float *y, float w, const float *x, size_t n)
{
#if defined(__x86_64__)
	int level = nm_simd;
	if (level < 0) {
		__builtin_cpu_init();
		level = __builtin_cpu_supports("avx512f")                              ? 2
			: (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 1
											  : 0;
		nm_simd = level;
	}
	if (level == 2) {
		nm_axpy_f32_avx512(y, w, x, n);
		return;
	}
	if (level == 1) {
		nm_axpy_f32_avx2(y, w, x, n);
		return;
	}
#endif
	nm_axpy_f32_fix(y, w, x, n);
}

/*
 * Vector-engine functions. Each is what one engine element does, written with the
 * primitives above so that the hardware needs nothing but the FMAC, a ROM and a table read.
 */

void nm_vsum2_bits(uint32_t out[2], const uint32_t *x, size_t n)
{
	uint32_t s[2] = { 0, 0 }, q[2] = { 0, 0 };
	for (size_t i = 0; i < n; i++) {
		uint16_t xb = nm_bf16_from_bits(x[i]);
		s[i & 1] = nm_add_bits(s[i & 1], x[i]);
		q[i & 1] = nm_fmac_bits(xb, xb, q[i & 1]);
	}
	out[0] = nm_add_bits(s[0], s[1]);
	out[1] = nm_add_bits(q[0], q[1]);
}

/* Four chains c_j, j = i & 3, from +0; then add(add(c_0, c_1), add(c_2, c_3)). */
static uint32_t nm_sum4(const uint32_t c[4])
{
	return nm_add_bits(nm_add_bits(c[0], c[1]), nm_add_bits(c[2], c[3]));
}

void nm_vsum4_bits(uint32_t out[2], const uint32_t *x, size_t n)
{
	uint32_t s[4] = { 0, 0, 0, 0 }, q[4] = { 0, 0, 0, 0 };
	for (size_t i = 0; i < n; i++) {
		uint16_t xb = nm_bf16_from_bits(x[i]);
		s[i & 3] = nm_add_bits(s[i & 3], x[i]);
		q[i & 3] = nm_fmac_bits(xb, xb, q[i & 3]);
	}
	out[0] = nm_sum4(s);
	out[1] = nm_sum4(q);
}

/* bf16(1/sqrt((1 + m/128) * 2^p)) for index {p, m}, correctly rounded (computed exactly,
 * not by libm, so the ROM is the same on every host). */
const uint16_t nm_rsqrt_table[256] = {
	0x3f80, 0x3f7f, 0x3f7e, 0x3f7d, 0x3f7c, 0x3f7b, 0x3f7a, 0x3f79,
	0x3f78, 0x3f77, 0x3f77, 0x3f76, 0x3f75, 0x3f74, 0x3f73, 0x3f72,
	0x3f71, 0x3f71, 0x3f70, 0x3f6f, 0x3f6e, 0x3f6d, 0x3f6c, 0x3f6c,
	0x3f6b, 0x3f6a, 0x3f69, 0x3f69, 0x3f68, 0x3f67, 0x3f66, 0x3f66,
	0x3f65, 0x3f64, 0x3f64, 0x3f63, 0x3f62, 0x3f61, 0x3f61, 0x3f60,
	0x3f5f, 0x3f5f, 0x3f5e, 0x3f5d, 0x3f5d, 0x3f5c, 0x3f5c, 0x3f5b,
	0x3f5a, 0x3f5a, 0x3f59, 0x3f58, 0x3f58, 0x3f57, 0x3f57, 0x3f56,
	0x3f56, 0x3f55, 0x3f54, 0x3f54, 0x3f53, 0x3f53, 0x3f52, 0x3f52,
	0x3f51, 0x3f50, 0x3f50, 0x3f4f, 0x3f4f, 0x3f4e, 0x3f4e, 0x3f4d,
	0x3f4d, 0x3f4c, 0x3f4c, 0x3f4b, 0x3f4b, 0x3f4a, 0x3f4a, 0x3f49,
	0x3f49, 0x3f48, 0x3f48, 0x3f47, 0x3f47, 0x3f46, 0x3f46, 0x3f46,
	0x3f45, 0x3f45, 0x3f44, 0x3f44, 0x3f43, 0x3f43, 0x3f42, 0x3f42,
	0x3f42, 0x3f41, 0x3f41, 0x3f40, 0x3f40, 0x3f3f, 0x3f3f, 0x3f3f,
	0x3f3e, 0x3f3e, 0x3f3d, 0x3f3d, 0x3f3d, 0x3f3c, 0x3f3c, 0x3f3b,
	0x3f3b, 0x3f3b, 0x3f3a, 0x3f3a, 0x3f39, 0x3f39, 0x3f39, 0x3f38,
	0x3f38, 0x3f38, 0x3f37, 0x3f37, 0x3f36, 0x3f36, 0x3f36, 0x3f35,
	0x3f35, 0x3f34, 0x3f34, 0x3f33, 0x3f32, 0x3f32, 0x3f31, 0x3f30,
	0x3f30, 0x3f2f, 0x3f2e, 0x3f2e, 0x3f2d, 0x3f2c, 0x3f2c, 0x3f2b,
	0x3f2b, 0x3f2a, 0x3f29, 0x3f29, 0x3f28, 0x3f28, 0x3f27, 0x3f27,
	0x3f26, 0x3f26, 0x3f25, 0x3f24, 0x3f24, 0x3f23, 0x3f23, 0x3f22,
	0x3f22, 0x3f21, 0x3f21, 0x3f20, 0x3f20, 0x3f1f, 0x3f1f, 0x3f1e,
	0x3f1e, 0x3f1e, 0x3f1d, 0x3f1d, 0x3f1c, 0x3f1c, 0x3f1b, 0x3f1b,
	0x3f1a, 0x3f1a, 0x3f1a, 0x3f19, 0x3f19, 0x3f18, 0x3f18, 0x3f17,
	0x3f17, 0x3f17, 0x3f16, 0x3f16, 0x3f15, 0x3f15, 0x3f15, 0x3f14,
	0x3f14, 0x3f13, 0x3f13, 0x3f13, 0x3f12, 0x3f12, 0x3f12, 0x3f11,
	0x3f11, 0x3f10, 0x3f10, 0x3f10, 0x3f0f, 0x3f0f, 0x3f0f, 0x3f0e,
	0x3f0e, 0x3f0e, 0x3f0d, 0x3f0d, 0x3f0d, 0x3f0c, 0x3f0c, 0x3f0c,
	0x3f0b, 0x3f0b, 0x3f0b, 0x3f0a, 0x3f0a, 0x3f0a, 0x3f09, 0x3f09,
	0x3f09, 0x3f09, 0x3f08, 0x3f08, 0x3f08, 0x3f07, 0x3f07, 0x3f07,
	0x3f06, 0x3f06, 0x3f06, 0x3f06, 0x3f05, 0x3f05, 0x3f05, 0x3f04,
	0x3f04, 0x3f04, 0x3f04, 0x3f03, 0x3f03, 0x3f03, 0x3f03, 0x3f02,
	0x3f02, 0x3f02, 0x3f02, 0x3f01, 0x3f01, 0x3f01, 0x3f01, 0x3f00,
};

uint16_t nm_rsqrt_bits(uint32_t x)
{
	uint16_t xb = nm_bf16_from_bits(x);
	uint32_t e = (xb >> 7) & 0xffu;
	if (e == 0xffu)
		return (xb & 0x7f) ? NM_BF16_QNAN : (xb & 0x8000u) ? NM_BF16_QNAN : 0;
	if (e == 0)
		return (uint16_t)((xb & 0x8000u) | 0x7f80u); /* +-0 -> +-inf */
	if (xb & 0x8000u)
		return NM_BF16_QNAN;
	int32_t u = (int32_t)e - 127;
	uint32_t p = (uint32_t)u & 1u;
	int32_t k = (u - (int32_t)p) / 2; /* exact: u - p is even */
	uint16_t y = nm_rsqrt_table[p << 7 | (xb & 0x7fu)];
	int32_t ey = (int32_t)((y >> 7) & 0xffu) - k; /* in [63, 190] */
	return (uint16_t)((uint32_t)ey << 7 | (y & 0x7fu));
}

unsigned nm_lut_index(uint16_t xb)
{
	int32_t e = (int32_t)((xb >> 7) & 0xffu) - 127;
	unsigned b = e < -12 ? 0u : e > 1 ? 15u : (unsigned)(e + 13);
	return (unsigned)((xb >> 15) << 7) | b << 3 | ((xb >> 4) & 7u);
}

uint32_t nm_lut_bits(const uint32_t *t, uint32_t x)
{
	uint16_t xb = nm_bf16_from_bits(x);
	uint32_t ent = t[nm_lut_index(xb)];
	return nm_fmac_bits((uint16_t)(ent >> 16), xb, ent << 16);
}

static double nm_gelu_f(double x, int deriv)
{
	double cdf = 0.5 * (1.0 + erf(x / sqrt(2.0)));
	if (!deriv)
		return x * cdf;
	return cdf + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
}

static uint32_t nm_lut_entry(double slope, double icpt)
{
	return (uint32_t)nm_bf16_from_f32((float)slope) << 16 | nm_bf16_from_f32((float)icpt);
}

void nm_gelu_table(uint32_t t[256], int deriv)
{
	for (unsigned i = 0; i < 256; i++) {
		int neg = (int)(i >> 7);
		unsigned b = (i >> 3) & 15, m = i & 7;
		if (b == 0) { /* |x| < 2^-12: the tangent at 0 */
			t[i] = deriv ? nm_lut_entry(2.0 / sqrt(2.0 * M_PI), 0.5) : nm_lut_entry(0.5, 0.0);
			continue;
		}
		if (b == 15) { /* |x| >= 4: the asymptote */
			t[i] = deriv ? nm_lut_entry(0.0, neg ? 0.0 : 1.0) : nm_lut_entry(neg ? 0.0 : 1.0, 0.0);
			continue;
		}
		double lo = ldexp(1.0 + m / 8.0, (int)b - 13), hi = ldexp(1.0 + (m + 1) / 8.0, (int)b - 13);
		if (neg) {
			double tmp = lo;
			lo = -hi;
			hi = -tmp;
		}
		double fl = nm_gelu_f(lo, deriv), fh = nm_gelu_f(hi, deriv);
		double s = nm_bf16_to_f32(nm_bf16_from_f32((float)((fh - fl) / (hi - lo))));
		double gmin = INFINITY, gmax = -INFINITY;
		for (int j = 0; j <= 32; j++) {
			double x = lo + (hi - lo) * j / 32.0;
			double g = nm_gelu_f(x, deriv) - s * x;
			gmin = g < gmin ? g : gmin;
			gmax = g > gmax ? g : gmax;
		}
		t[i] = nm_lut_entry(s, 0.5 * (gmin + gmax));
	}
}

static uint32_t nm_gelu_tab[2][256];
static int nm_gelu_tab_ready[2];

/* Threads that race here all write the same words; the flag is published after them. */
static const uint32_t *nm_gelu_std(int deriv)
{
	if (!__atomic_load_n(&nm_gelu_tab_ready[deriv], __ATOMIC_ACQUIRE)) {
		uint32_t t[256];
		nm_gelu_table(t, deriv);
		for (unsigned i = 0; i < 256; i++)
			__atomic_store_n(&nm_gelu_tab[deriv][i], t[i], __ATOMIC_RELAXED);
		__atomic_store_n(&nm_gelu_tab_ready[deriv], 1, __ATOMIC_RELEASE);
	}
	return nm_gelu_tab[deriv];
}

uint32_t nm_gelu_lut_bits(uint32_t x)
{
	return nm_lut_bits(nm_gelu_std(0), x);
}

uint32_t nm_gelu_grad_lut_bits(uint32_t x)
{
	return nm_lut_bits(nm_gelu_std(1), x);
}

void nm_ln_fwd_bits(uint16_t *y, uint16_t *z, uint16_t *r_out, const uint32_t *x,
		    const uint16_t *gamma, const uint32_t *beta, size_t c, uint16_t inv_c,
		    uint16_t eps)
{
	nm_ln_fwd_scratch_bits(y, z, r_out, NULL, x, gamma, beta, c, inv_c, eps);
}

void nm_ln_fwd_scratch_bits(uint16_t *y, uint16_t *z, uint16_t *r_out, struct nm_ln_scratch *sc,
			    const uint32_t *x, const uint16_t *gamma, const uint32_t *beta, size_t c,
			    uint16_t inv_c, uint16_t eps)
{
	nm_ln_fwd_chains_bits(y, z, r_out, sc, x, gamma, beta, c, inv_c, eps, 2);
}

void nm_ln_fwd_chains_bits(uint16_t *y, uint16_t *z, uint16_t *r_out, struct nm_ln_scratch *sc,
			   const uint32_t *x, const uint16_t *gamma, const uint32_t *beta, size_t c,
			   uint16_t inv_c, uint16_t eps, int chains)
{
	uint32_t sq[2];
	if (chains == 4)
		nm_vsum4_bits(sq, x, c);
	else
		nm_vsum2_bits(sq, x, c);
	uint32_t m = nm_fmac_bits(inv_c, nm_bf16_from_bits(sq[0]), 0);
	uint32_t e2 = nm_fmac_bits(inv_c, nm_bf16_from_bits(sq[1]), 0);
	uint16_t mb = nm_bf16_from_bits(m);
	uint32_t var = nm_fmac_bits((uint16_t)(mb ^ 0x8000u), mb, e2);
	uint32_t ve = nm_fmac_bits(0x3f80, nm_bf16_from_bits(var), (uint32_t)eps << 16);
	uint16_t r = nm_rsqrt_bits(ve);
	uint32_t rm = nm_fmac_bits(r, mb, 0);
	uint16_t sh = (uint16_t)(nm_bf16_from_bits(rm) ^ 0x8000u);
	for (size_t j = 0; j < c; j++) {
		z[j] = nm_bf16_from_bits(nm_fmac_bits(r, nm_bf16_from_bits(x[j]), (uint32_t)sh << 16));
		uint32_t yf = nm_fmac_bits(gamma[j], z[j], beta[j]);
		y[j] = nm_bf16_from_bits(yf);
		if (sc && sc->s)
			sc->s[j] = yf;
	}
	*r_out = r;
	if (sc) {
		sc->t[0] = m;
		sc->t[1] = ve;
		sc->t[2] = rm;
		sc->am[0] = nm_bf16_from_bits(rm);
	}
}

/* fmac(r, bf16(fmac(inv_c, bf16(s), 0)), 0): a sum scaled by 1/C and r (its bf16 negated is
 * ln_bwd's a or b). */
static uint32_t nm_scaled(uint32_t s, uint16_t inv_c, uint16_t r)
{
	uint16_t mean = nm_bf16_from_bits(nm_fmac_bits(inv_c, nm_bf16_from_bits(s), 0));
	return nm_fmac_bits(r, mean, 0);
}

void nm_ln_bwd_bits(uint32_t *dx, uint32_t *dgamma, uint32_t *dbeta, const uint32_t *dy,
		    const uint16_t *z, uint16_t r, const uint16_t *gamma, size_t c, uint16_t inv_c)
{
	nm_ln_bwd_scratch_bits(dx, dgamma, dbeta, NULL, dy, z, r, gamma, c, inv_c);
}

void nm_ln_bwd_scratch_bits(uint32_t *dx, uint32_t *dgamma, uint32_t *dbeta,
			    struct nm_ln_scratch *sc, const uint32_t *dy, const uint16_t *z, uint16_t r,
			    const uint16_t *gamma, size_t c, uint16_t inv_c)
{
	nm_ln_bwd_chains_bits(dx, dgamma, dbeta, sc, dy, z, r, gamma, c, inv_c, 2);
}

void nm_ln_bwd_chains_bits(uint32_t *dx, uint32_t *dgamma, uint32_t *dbeta,
			   struct nm_ln_scratch *sc, const uint32_t *dy, const uint16_t *z, uint16_t r,
			   const uint16_t *gamma, size_t c, uint16_t inv_c, int chains)
{
	/* s1, s2: vdot's chains (j & 1, or j & 3 with four) from +0, then their sum */
	uint32_t c1[4] = { 0, 0, 0, 0 }, c2[4] = { 0, 0, 0, 0 };
	size_t mask = chains == 4 ? 3 : 1;
	for (size_t j = 0; j < c; j++) {
		uint16_t d = nm_bf16_from_bits(dy[j]);
		dgamma[j] = nm_fmac_bits(z[j], d, dgamma[j]);
		dbeta[j] = nm_fmac_bits(0x3f80, d, dbeta[j]);
		uint16_t gb = nm_bf16_from_bits(nm_fmac_bits(gamma[j], d, 0));
		c1[j & mask] = nm_fmac_bits(0x3f80, gb, c1[j & mask]);
		c2[j & mask] = nm_fmac_bits(z[j], gb, c2[j & mask]);
	}
	uint32_t s1 = chains == 4 ? nm_sum4(c1) : nm_add_bits(c1[0], c1[1]);
	uint32_t s2 = chains == 4 ? nm_sum4(c2) : nm_add_bits(c2[0], c2[1]);
	uint32_t sa = nm_scaled(s1, inv_c, r);
	uint32_t sb = nm_scaled(s2, inv_c, r);
	uint16_t a = (uint16_t)(nm_bf16_from_bits(sa) ^ 0x8000u);
	uint16_t b = (uint16_t)(nm_bf16_from_bits(sb) ^ 0x8000u);
	for (size_t j = 0; j < c; j++) {
		uint16_t gb = nm_bf16_from_bits(nm_fmac_bits(gamma[j], nm_bf16_from_bits(dy[j]), 0));
		uint32_t u = nm_fmac_bits(b, z[j], nm_fmac_bits(r, gb, (uint32_t)a << 16));
		dx[j] = nm_fmac_bits(0x3f80, nm_bf16_from_bits(u), dx[j]);
		if (sc && sc->s)
			sc->s[j] = u;
	}
	if (sc) {
		sc->t[0] = sa;
		sc->t[1] = sb;
		sc->am[0] = nm_bf16_from_bits(sa);
		sc->am[1] = nm_bf16_from_bits(sb);
	}
}

void nm_gelu_fwd_bits(uint16_t *h, uint16_t *d, const uint32_t *pre, size_t n, const uint32_t *tg,
		      const uint32_t *td)
{
	for (size_t j = 0; j < n; j++) {
		if (d)
			d[j] = nm_bf16_from_bits(nm_lut_bits(td, pre[j]));
		h[j] = nm_bf16_from_bits(nm_lut_bits(tg, pre[j]));
	}
}

void nm_gelu_bwd_bits(uint16_t *dp, const uint32_t *dh, const uint16_t *d, size_t n)
{
	for (size_t j = 0; j < n; j++)
		dp[j] = nm_bf16_from_bits(nm_fmac_bits(d[j], nm_bf16_from_bits(dh[j]), 0));
}

void nm_bias_add_bits(uint32_t *y, const uint32_t *b, size_t n)
{
	for (size_t j = 0; j < n; j++)
		y[j] = nm_fmac_bits(0x3f80, nm_bf16_from_bits(b[j]), y[j]);
}

void nm_widen_bits(uint32_t *y, const uint16_t *x, size_t n)
{
	for (size_t j = 0; j < n; j++)
		y[j] = nm_fmac_bits(x[j], 0x3f80, 0);
}

void nm_fmac_row_bits(uint32_t *y, const uint16_t *x, const uint32_t *g, const uint32_t *c,
		      size_t n)
{
	for (size_t j = 0; j < n; j++)
		y[j] = nm_fmac_bits(x[j], nm_bf16_from_bits(g[j]), c[j]);
}
