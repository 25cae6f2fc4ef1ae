/*
 * test_numerics.c - the PE arithmetic model (host/common/numerics.c) against independent
 * formulations:
 *   - bf16 rounding against a nearest-value search in double arithmetic;
 *   - the multiply-accumulate and the add against an exact fixed-point sum (576-bit
 *     integers, LSB 2^-266) rounded by inspection, a different algorithm from the model's
 *     align-with-sticky adder;
 *   - the fast FPU paths (nm_fmac, nm_add, nm_axpy) against the reference bit for bit.
 * make test samples the input spaces; make regress (REGRESS=1) runs the exhaustive bf16
 * sweep and many more MAC operands.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numerics.h"

static int regress_mode(void)
{
	const char *r = getenv("REGRESS");
	return r && *r && strcmp(r, "0") != 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed_from_env(void)
{
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 12345;
	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	printf("seed %llu (set TEST_SEED to replay)\n", (unsigned long long)seed);
}

/* ---- bf16 rounding: independent formulation --------------------------------------- */

static double bf16_value_unbounded(uint32_t h)
{
	/* value of bf16 pattern h (finite, normal), with 0x7f80 read as 2^128 (the
	 * unbounded-exponent successor of the largest finite value) */
	int e = (int)((h >> 7) & 0xff);
	double m = 1.0 + (double)(h & 0x7f) / 128.0;
	double v = ldexp(m, e - 127);
	return (h & 0x8000) ? -v : v;
}

static uint16_t bf16_ref(uint32_t u)
{
	int e = (int)((u >> 23) & 0xff);
	if (e == 0xff)
		return (u & 0x7fffff) ? 0x7fc0 : (uint16_t)(u >> 16);
	if (e == 0)
		return (uint16_t)((u >> 16) & 0x8000);
	float f;
	memcpy(&f, &u, 4);
	double x = fabs((double)f);
	uint32_t lo = (u >> 16) & 0x7fff; /* truncation toward zero */
	uint32_t hi = lo + 1;
	double dlo = x - fabs(bf16_value_unbounded(lo));
	double dhi = fabs(bf16_value_unbounded(hi)) - x;
	uint32_t pick;
	if (dlo < dhi)
		pick = lo;
	else if (dhi < dlo)
		pick = hi;
	else
		pick = (lo & 1) ? hi : lo;
	return (uint16_t)(pick | ((u >> 16) & 0x8000));
}

static void check_bf16_range(uint64_t first, uint64_t last, uint64_t step)
{
	for (uint64_t v = first; v <= last; v += step) {
		uint32_t u = (uint32_t)v;
		uint16_t got = nm_bf16_from_bits(u), want = bf16_ref(u);
		if (got != want) {
			print_error("bf16(0x%08x): model 0x%04x, reference 0x%04x\n", u, got, want);
			fail();
		}
	}
}

static void test_bf16_rounding(void **state)
{
	(void)state;
	if (regress_mode()) {
		check_bf16_range(0, 0xffffffffull, 1); /* all 2^32 inputs */
		return;
	}
	/* a dense prime-stride sample plus every input around each bf16 boundary of
	 * interesting exponents */
	check_bf16_range(0, 0xffffffffull, 251);
	static const uint32_t exps[] = { 0, 1, 2, 126, 127, 128, 253, 254, 255 };
	for (size_t i = 0; i < sizeof exps / sizeof exps[0]; i++)
		for (uint32_t s = 0; s < 2; s++) {
			uint32_t base = (s << 31) | (exps[i] << 23);
			check_bf16_range(base, base + 0x7fffff, 1);
		}
	/* the NaN / inf / zero / subnormal corner values */
	assert_int_equal(nm_bf16_from_bits(0x7f800000u), 0x7f80);
	assert_int_equal(nm_bf16_from_bits(0xff800000u), 0xff80);
	assert_int_equal(nm_bf16_from_bits(0x7f800001u), NM_BF16_QNAN);
	assert_int_equal(nm_bf16_from_bits(0xffc00000u), NM_BF16_QNAN);
	assert_int_equal(nm_bf16_from_bits(0x00000001u), 0x0000);
	assert_int_equal(nm_bf16_from_bits(0x80400000u), 0x8000);
	assert_int_equal(nm_bf16_from_bits(0x7f7fffffu), 0x7f80); /* rounds to inf */
	assert_int_equal(nm_bf16_from_bits(0x3f808000u), 0x3f80); /* tie to even (down) */
	assert_int_equal(nm_bf16_from_bits(0x3f818000u), 0x3f82); /* tie to even (up) */
}

static void test_bf16_to_f32(void **state)
{
	(void)state;
	for (uint32_t h = 0; h < 0x10000; h++) {
		float f = nm_bf16_to_f32((uint16_t)h);
		uint32_t u = nm_f32_bits(f);
		uint32_t e = (h >> 7) & 0xff;
		if (e == 0)
			assert_int_equal(u, (uint32_t)(h & 0x8000) << 16);
		else
			assert_int_equal(u, (uint32_t)h << 16);
		/* round trip of every non-NaN normal bf16 */
		if (e != 0 && !(e == 0xff && (h & 0x7f)))
			assert_int_equal(nm_bf16_from_f32(f), h);
	}
}

/* ---- exact fixed-point reference for c + a*b and a + b ---------------------------- */

#define LIMBS 9 /* 576 bits; LSB weight 2^-266; values < 2^258 */
#define LSB_EXP (-266)

typedef struct {
	uint64_t w[LIMBS];
} big;

static void big_add_shifted(big *x, uint64_t m, int shift)
{
	/* x += m << shift */
	int limb = shift / 64, off = shift % 64;
	unsigned __int128 carry = 0;
	uint64_t parts[2] = { m << off, off ? m >> (64 - off) : 0 };
	for (int i = limb; i < LIMBS; i++) {
		unsigned __int128 s = (unsigned __int128)x->w[i] + carry;
		if (i - limb < 2)
			s += parts[i - limb];
		x->w[i] = (uint64_t)s;
		carry = s >> 64;
	}
}

static int big_cmp(const big *a, const big *b)
{
	for (int i = LIMBS - 1; i >= 0; i--)
		if (a->w[i] != b->w[i])
			return a->w[i] < b->w[i] ? -1 : 1;
	return 0;
}

static void big_sub(big *a, const big *b) /* a -= b, a >= b */
{
	uint64_t borrow = 0;
	for (int i = 0; i < LIMBS; i++) {
		unsigned __int128 d = (unsigned __int128)a->w[i] - b->w[i] - borrow;
		a->w[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 64) ? 1 : 0;
	}
}

static int big_bit(const big *a, int i)
{
	return (int)((a->w[i / 64] >> (i % 64)) & 1);
}

static int big_msb(const big *a)
{
	for (int i = LIMBS - 1; i >= 0; i--)
		if (a->w[i])
			return i * 64 + 63 - __builtin_clzll(a->w[i]);
	return -1;
}

/* Round |x| (sign s) to fp32 under the model's rules: 24 bits RNE, unbounded exponent,
 * flush below 2^-126, overflow to inf. */
static uint32_t big_round(const big *x, uint32_t s)
{
	int p = big_msb(x);
	if (p < 0)
		return s; /* caller decides the sign of zero */
	int cut = p - 23; /* bits below position cut are rounded away */
	uint64_t m = 0;
	for (int i = p; i >= cut && i >= 0; i--)
		m = (m << 1) | (uint64_t)big_bit(x, i);
	if (cut < 0)
		m <<= -cut, cut = 0;
	else if (cut > 0) {
		int half = big_bit(x, cut - 1), rest = 0;
		for (int i = cut - 2; i >= 0 && !rest; i--)
			rest = big_bit(x, i);
		if (half && (rest || (m & 1)))
			m++;
		if (m >> 24)
			m >>= 1, cut++;
	}
	int e = cut + LSB_EXP + 23; /* unbiased exponent of the leading bit */
	if (e + 127 >= 255)
		return s | 0x7f800000u;
	if (e + 127 <= 0)
		return s;
	return s | ((uint32_t)(e + 127) << 23) | (uint32_t)(m & 0x7fffff);
}


/* Exact signed terms, then the reference rounding. Terms: sign, integer magnitude in
 * units of 2^LSB_EXP given as (m, shift). */
static uint32_t ref_sum2(uint32_t s1, uint64_t m1, int sh1, uint32_t s2, uint64_t m2, int sh2)
{
	big a = { { 0 } }, b = { { 0 } };
	if (m1)
		big_add_shifted(&a, m1, sh1);
	if (m2)
		big_add_shifted(&b, m2, sh2);
	if (!m1 && !m2)
		return s1 & s2;
	if (s1 == s2) {
		big t = a; /* t = a + b */
		unsigned __int128 carry = 0;
		for (int i = 0; i < LIMBS; i++) {
			unsigned __int128 v = (unsigned __int128)t.w[i] + b.w[i] + carry;
			t.w[i] = (uint64_t)v;
			carry = v >> 64;
		}
		return big_round(&t, s1);
	}
	int c = big_cmp(&a, &b);
	if (c == 0)
		return 0;
	if (c > 0) {
		big_sub(&a, &b);
		return big_round(&a, s1);
	}
	big_sub(&b, &a);
	return big_round(&b, s2);
}

static uint32_t ref_fmac(uint16_t a, uint16_t b, uint32_t c)
{
	int ea = (a >> 7) & 0xff, eb = (b >> 7) & 0xff, ec = (c >> 23) & 0xff;
	/* specials through IEEE arithmetic on the flushed values */
	int a_sp = ea == 0xff, b_sp = eb == 0xff, c_sp = ec == 0xff;
	uint32_t sp = ((uint32_t)(a ^ b) & 0x8000u) << 16, sc = c & 0x80000000u;
	if (a_sp || b_sp || c_sp) {
		/* in double a bf16 product is exact and cannot overflow, so IEEE gives the
		 * special-value result directly */
		double fa = nm_bf16_to_f32(a), fb = nm_bf16_to_f32(b);
		double fc = nm_bits_f32(nm_f32_ftz_bits(c));
		double r = fa * fb + fc;
		uint32_t u = nm_f32_bits((float)r); /* r is inf or NaN here */
		return isnan(r) ? NM_F32_QNAN : u;
	}
	uint64_t mp = 0, mc = 0;
	int shp = 0, shc = 0;
	if (ea && eb) {
		mp = (uint64_t)((0x80 | (a & 0x7f)) * (0x80 | (b & 0x7f)));
		shp = (ea + eb - 268) - LSB_EXP;
	}
	if (ec) {
		mc = 0x800000u | (c & 0x7fffff);
		shc = (ec - 150) - LSB_EXP;
	}
	return ref_sum2(sp, mp, shp, sc, mc, shc);
}

static uint32_t ref_add(uint32_t a, uint32_t b)
{
	int ea = (a >> 23) & 0xff, eb = (b >> 23) & 0xff;
	if (ea == 0xff || eb == 0xff) {
		float r = nm_bits_f32(nm_f32_ftz_bits(a)) + nm_bits_f32(nm_f32_ftz_bits(b));
		return isnan(r) ? NM_F32_QNAN : nm_f32_bits(r);
	}
	uint64_t ma = ea ? (0x800000u | (a & 0x7fffff)) : 0;
	uint64_t mb = eb ? (0x800000u | (b & 0x7fffff)) : 0;
	return ref_sum2(a & 0x80000000u, ma, ea ? ea - 150 - LSB_EXP : 0, b & 0x80000000u, mb,
			eb ? eb - 150 - LSB_EXP : 0);
}

/* ---- operand generators -------------------------------------------------------------- */

static const uint16_t bf16_edges[] = {
	0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x8080, 0x0081, 0x3f80, 0xbf80, 0x3f81,
	0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x4000, 0x1f80, 0x6000,
};
static const uint32_t f32_edges[] = {
	0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x00800000, 0x80800000, 0x00800001,
	0x3f800000, 0xbf800000, 0x3f800001, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000,
	0x7fc00000, 0xffc00001, 0x7f800001, 0x01000000, 0x4b800000,
};

static uint16_t gen_bf16(void)
{
	uint64_t r = rng_next();
	switch (r & 7) {
	case 0:
		return bf16_edges[(r >> 8) % (sizeof bf16_edges / sizeof bf16_edges[0])];
	case 1: /* near the underflow boundary */
		return (uint16_t)(((r >> 8) & 0x8000) | ((1 + ((r >> 20) % 6)) << 7) | ((r >> 30) & 0x7f));
	default:
		return (uint16_t)(r >> 16);
	}
}

static void gen_case(uint16_t *a, uint16_t *b, uint32_t *c)
{
	uint64_t r = rng_next();
	*a = gen_bf16();
	*b = gen_bf16();
	switch (r & 7) {
	case 0:
		*c = f32_edges[(r >> 8) % (sizeof f32_edges / sizeof f32_edges[0])];
		break;
	case 1:
	case 2:
	case 3: { /* c near the product: exercise cancellation, ties and sticky bits */
		int ea = (*a >> 7) & 0xff, eb = (*b >> 7) & 0xff;
		int e = ea + eb - 127 + (int)((r >> 8) % 60) - 30;
		if (e < 1)
			e = 1 + (int)((r >> 16) % 3);
		if (e > 254)
			e = 254;
		*c = (uint32_t)(((r >> 20) & 1) << 31) | ((uint32_t)e << 23) | (uint32_t)((r >> 32) & 0x7fffff);
		if ((r >> 60) & 1) /* low bits zero: many exact ties */
			*c &= ~0xffffu;
		break;
	}
	case 4: { /* exact negation of the product when it is representable */
		float p = nm_bf16_to_f32(*a) * nm_bf16_to_f32(*b);
		*c = nm_f32_bits(-p);
		break;
	}
	default:
		*c = (uint32_t)(r >> 32);
		break;
	}
}

static long n_ops(long test, long regress)
{
	return regress_mode() ? regress : test;
}

static void test_fmac_reference(void **state)
{
	(void)state;
	long n = n_ops(2000000, 100000000);
	for (long i = 0; i < n; i++) {
		uint16_t a, b;
		uint32_t c;
		gen_case(&a, &b, &c);
		uint32_t got = nm_fmac_bits(a, b, c), want = ref_fmac(a, b, c);
		if (got != want) {
			print_error("fmac(a=0x%04x, b=0x%04x, c=0x%08x): model 0x%08x, reference 0x%08x\n",
				    a, b, c, got, want);
			fail();
		}
	}
}

static void test_fmac_fast_path(void **state)
{
	(void)state;
	long n = n_ops(2000000, 100000000);
	for (long i = 0; i < n; i++) {
		uint16_t a, b;
		uint32_t c;
		gen_case(&a, &b, &c);
		uint32_t got = nm_f32_bits(nm_fmac(a, b, nm_bits_f32(c)));
		uint32_t want = nm_fmac_bits(a, b, c);
		if (got != want) {
			print_error("nm_fmac(0x%04x, 0x%04x, 0x%08x) = 0x%08x, reference 0x%08x\n", a,
				    b, c, got, want);
			fail();
		}
	}
}

static void test_add(void **state)
{
	(void)state;
	long n = n_ops(1000000, 50000000);
	for (long i = 0; i < n; i++) {
		uint64_t r = rng_next();
		uint32_t x = (uint32_t)r, y = (uint32_t)(r >> 32);
		if ((r & 3) == 0)
			x = f32_edges[(r >> 40) % (sizeof f32_edges / sizeof f32_edges[0])];
		if ((r & 12) == 0) /* y near -x: cancellation */
			y = (x ^ 0x80000000u) + (uint32_t)((r >> 48) & 0xff) - 128;
		uint32_t want = ref_add(x, y);
		uint32_t got = nm_add_bits(x, y);
		uint32_t fast = nm_f32_bits(nm_add(nm_bits_f32(x), nm_bits_f32(y)));
		if (got != want || fast != want) {
			print_error("add(0x%08x, 0x%08x): model 0x%08x fast 0x%08x reference 0x%08x\n",
				    x, y, got, fast, want);
			fail();
		}
	}
}

static void test_fmac_known_values(void **state)
{
	(void)state;
	/* 1 + 2^-12*2^-12 = 1 + 2^-24: a tie, rounds to even (1.0) */
	assert_int_equal(nm_fmac_bits(0x39800000u >> 16, 0x39800000u >> 16, 0x3f800000u), 0x3f800000u);
	/* 1 + 1.5*2^-24: above the tie, rounds up */
	assert_int_equal(nm_fmac_bits(0x3fc0, 0x3380, 0x3f800000u), 0x3f800001u);
	/* exact cancellation is +0; (-0) + (-0) is -0; (+0) + (-0) is +0 */
	assert_int_equal(nm_fmac_bits(0x3f80, 0x3f80, 0xbf800000u), 0x00000000u);
	assert_int_equal(nm_fmac_bits(0x8000, 0x3f80, 0x80000000u), 0x80000000u);
	assert_int_equal(nm_fmac_bits(0x0000, 0x3f80, 0x80000000u), 0x00000000u);
	/* inf * 0 and inf - inf are NaN; NaN is canonical */
	assert_int_equal(nm_fmac_bits(0x7f80, 0x0000, 0x3f800000u), NM_F32_QNAN);
	assert_int_equal(nm_fmac_bits(0x7f80, 0x3f80, 0xff800000u), NM_F32_QNAN);
	assert_int_equal(nm_fmac_bits(0xffc1, 0x3f80, 0x0u), NM_F32_QNAN);
	/* product of two small normals is exact, then flushed if below 2^-126 */
	assert_int_equal(nm_fmac_bits(0x0080, 0x3f00, 0x0u), 0x00000000u);      /* 2^-127 -> 0 */
	assert_int_equal(nm_fmac_bits(0x8080, 0x3f00, 0x0u), 0x80000000u);      /* signed */
	assert_int_equal(nm_fmac_bits(0x0080, 0x3f80, 0x0u), 0x00800000u);      /* 2^-126 kept */
	/* a subnormal accumulator reads as zero */
	assert_int_equal(nm_fmac_bits(0x3f80, 0x3f80, 0x00000001u), 0x3f800000u);
	/* overflow to infinity */
	assert_int_equal(nm_fmac_bits(0x7f7f, 0x7f7f, 0x0u), 0x7f800000u);
	/* a product far below the accumulator only contributes a sticky bit */
	assert_int_equal(nm_fmac_bits(0x0080, 0x0080, 0x3f800000u), 0x3f800000u);
}

static void test_axpy_and_dot(void **state)
{
	int level = *(int *)*state;
	if ((level == 2 && !__builtin_cpu_supports("avx512f")) ||
	    (level == 1 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))))
		skip();
	nm_simd_level(level);
	enum { N = 1000 };
	uint16_t x[N], y16[N];
	float y[N], yref[N];
	for (int rep = 0; rep < 200; rep++) {
		uint16_t w = gen_bf16();
		for (int t = 0; t < N; t++) {
			uint16_t b;
			uint32_t c;
			gen_case(&x[t], &b, &c);
			y16[t] = b;
			y[t] = yref[t] = nm_bits_f32(nm_f32_ftz_bits(c));
		}
		size_t n = (size_t)(rng_next() % N) + 1;
		nm_axpy(y, w, x, n);
		for (size_t t = 0; t < n; t++) {
			uint32_t want = nm_fmac_bits(w, x[t], nm_f32_bits(yref[t]));
			if (nm_f32_bits(y[t]) != want) {
				print_error("axpy t=%zu: 0x%08x, reference 0x%08x\n", t,
					    nm_f32_bits(y[t]), want);
				fail();
			}
		}
		/* the fp32-operand vector path, on the same operands */
		float wf = nm_bf16_to_f32(w), xf[N], yv[N];
		for (size_t t = 0; t < n; t++) {
			xf[t] = nm_bf16_to_f32(x[t]);
			yv[t] = yref[t];
		}
		size_t off = (size_t)(rng_next() % 3); /* unaligned starts too */
		if (off > n)
			off = 0;
		nm_axpy_f32(yv + off, wf, xf + off, n - off);
		for (size_t t = off; t < n; t++) {
			uint32_t want = nm_fmac_bits(w, x[t], nm_f32_bits(yref[t]));
			if (nm_f32_bits(yv[t]) != want) {
				print_error("axpy_f32 t=%zu: 0x%08x, reference 0x%08x\n", t,
					    nm_f32_bits(yv[t]), want);
				fail();
			}
		}
		uint32_t acc = 0;
		for (size_t t = 0; t < n; t++)
			acc = nm_fmac_bits(x[t], y16[t], acc);
		assert_int_equal(nm_f32_bits(nm_dot_strided(0.0f, x, 1, y16, 1, n)), acc);
	}
}

/* ---- vector-engine functions ----------------------------------------------------- */

/* rsqrt: every bf16 input (as the high half of an fp32 word) against the nearest bf16 to
 * 1/sqrt in long double, plus the specials and fp32 inputs that round first. */
static void test_rsqrt(void **state)
{
	(void)state;
	for (uint32_t h = 0; h < 0x10000; h++) {
		uint16_t y = nm_rsqrt_bits(h << 16);
		uint32_t e = (h >> 7) & 0xff;
		if (e == 0) {
			assert_int_equal(y, (h & 0x8000) | 0x7f80);
		} else if (e == 0xff && (h & 0x7f)) {
			assert_int_equal(y, NM_BF16_QNAN);
		} else if (h & 0x8000) {
			assert_int_equal(y, NM_BF16_QNAN);
		} else if (e == 0xff) {
			assert_int_equal(y, 0);
		} else {
			long double r = 1.0L / sqrtl((long double)nm_bf16_to_f32((uint16_t)h));
			long double v = nm_bf16_to_f32(y), lo = nm_bf16_to_f32((uint16_t)(y - 1)),
				    hi = nm_bf16_to_f32((uint16_t)(y + 1));
			if (fabsl(v - r) > fabsl(lo - r) || fabsl(v - r) > fabsl(hi - r)) {
				print_error("rsqrt(0x%04x) = 0x%04x is not the nearest bf16\n", h, y);
				fail();
			}
		}
	}
	assert_int_equal(nm_rsqrt_bits(0x3f800000u), 0x3f80);  /* 1 */
	assert_int_equal(nm_rsqrt_bits(0x40800000u), 0x3f00);  /* 4 -> 0.5 */
	assert_int_equal(nm_rsqrt_bits(0x3e800000u), 0x4000);  /* 0.25 -> 2 */
	assert_int_equal(nm_rsqrt_bits(0x00800000u), 0x5f00);  /* 2^-126 -> 2^63 */
	assert_int_equal(nm_rsqrt_bits(0x00000001u), 0x7f80);  /* subnormal reads as +0 */
	assert_int_equal(nm_rsqrt_bits(0x80000001u), 0xff80);  /* ... and as -0 */
	assert_int_equal(nm_rsqrt_bits(0x3f80ffffu), nm_rsqrt_bits(0x3f810000u)); /* RNE first */
	assert_int_equal(nm_rsqrt_bits(0x7f7fffffu), 0);       /* rounds to +inf */
	assert_int_equal(nm_rsqrt_bits(0xbf800000u), NM_BF16_QNAN);
	assert_int_equal(nm_rsqrt_bits(0xff800000u), NM_BF16_QNAN);
	assert_int_equal(nm_rsqrt_bits(0x7f800001u), NM_BF16_QNAN);
}

/* The segment index against a formulation by magnitude comparisons. */
static void test_lut_index(void **state)
{
	(void)state;
	for (uint32_t h = 0; h < 0x10000; h++) {
		double a = fabs((double)nm_bf16_to_f32((uint16_t)h));
		unsigned b, m = 0;
		if (((h >> 7) & 0xff) == 0xff || a >= 4.0) {
			b = 15;
		} else if (a < ldexp(1.0, -12)) {
			b = 0;
		} else {
			int e = (int)floor(log2(a));
			b = (unsigned)(e + 13);
			m = (unsigned)floor((a / ldexp(1.0, e) - 1.0) * 8.0);
		}
		if (b == 0 || b == 15)
			m = (h >> 4) & 7; /* these segments ignore the mantissa: any m */
		unsigned want = (h >> 15) << 7 | b << 3 | m;
		if (nm_lut_index((uint16_t)h) != want) {
			print_error("lut index of 0x%04x: %u, want %u\n", h, nm_lut_index((uint16_t)h), want);
			fail();
		}
	}
	assert_int_equal(nm_lut_index(0x0000), 0);
	assert_int_equal(nm_lut_index(0x8000), 128);
	assert_int_equal(nm_lut_index(0x397f), 7);          /* just below 2^-12 */
	assert_int_equal(nm_lut_index(0x3980), 1 << 3);     /* 2^-12 */
	assert_int_equal(nm_lut_index(0x407f), 14 << 3 | 7); /* just below 4 */
	assert_int_equal(nm_lut_index(0x4080), 15 << 3);    /* 4 */
	assert_int_equal(nm_lut_index(0xff80), 128 | 15 << 3 | 0);
}

/* nm_lut_bits on a random table: one fmac of the entry's halves on the rounded input. */
static void test_lut_bits(void **state)
{
	(void)state;
	uint32_t t[256];
	for (unsigned i = 0; i < 256; i++)
		t[i] = (uint32_t)rng_next();
	for (int k = 0; k < 100000; k++) {
		uint32_t x = (uint32_t)rng_next();
		uint16_t xb = nm_bf16_from_bits(x);
		uint32_t ent = t[nm_lut_index(xb)];
		assert_int_equal(nm_lut_bits(t, x),
				 nm_fmac_bits((uint16_t)(ent >> 16), xb, (ent & 0xffffu) << 16));
	}
}

static double gelu_ref(double x, int deriv)
{
	double c = 0.5 * (1.0 + erf(x / sqrt(2.0)));
	return deriv ? c + x * exp(-0.5 * x * x) / sqrt(2.0 * M_PI) : x * c;
}

/* The standard tables: accuracy over every finite bf16, and the table's ends. */
static void test_gelu_lut(void **state)
{
	(void)state;
	uint32_t t0[256], t1[256];
	nm_gelu_table(t0, 0);
	nm_gelu_table(t1, 1);
	for (uint32_t h = 0; h < 0x10000; h++) {
		if (((h >> 7) & 0xff) == 0xff)
			continue;
		double x = nm_bf16_to_f32((uint16_t)h);
		assert_int_equal(nm_gelu_lut_bits(h << 16), nm_lut_bits(t0, h << 16));
		assert_int_equal(nm_gelu_grad_lut_bits(h << 16), nm_lut_bits(t1, h << 16));
		double f = gelu_ref(x, 0), g = gelu_ref(x, 1);
		double ef = fabs(nm_bits_f32(nm_gelu_lut_bits(h << 16)) - f);
		double eg = fabs(nm_bits_f32(nm_gelu_grad_lut_bits(h << 16)) - g);
		if (ef > ldexp(1.0, -9) || ef > ldexp(fmax(fabs(f), 1.0 / 16), -6) ||
		    eg > ldexp(1.0, -7)) {
			print_error("gelu lut at %g: error %g (value), %g (derivative)\n", x, ef, eg);
			fail();
		}
	}
	/* Ends: zeros, the tangent below 2^-12, the asymptotes from 4 on, specials. */
	assert_int_equal(nm_gelu_lut_bits(0x00000000u), 0);
	assert_int_equal(nm_gelu_lut_bits(0x80000000u), 0);          /* -0 * 0.5 + 0 = +0 */
	assert_int_equal(nm_gelu_lut_bits(0x00000001u), 0);          /* subnormal */
	assert_int_equal(nm_gelu_lut_bits(0x39000000u), 0x38800000u); /* 2^-13 -> 2^-14 */
	assert_int_equal(nm_gelu_lut_bits(0x40800000u), 0x40800000u); /* 4 -> 4 */
	assert_int_equal(nm_gelu_lut_bits(0x47000000u), 0x47000000u); /* 32768 */
	assert_int_equal(nm_gelu_lut_bits(0xc0800000u), 0);          /* -4 -> +0 */
	assert_int_equal(nm_gelu_lut_bits(0x7f800000u), 0x7f800000u); /* +inf */
	assert_int_equal(nm_gelu_lut_bits(0xff800000u), NM_F32_QNAN); /* 0 * -inf */
	assert_int_equal(nm_gelu_lut_bits(0x7fc00001u), NM_F32_QNAN);
	assert_int_equal(nm_gelu_grad_lut_bits(0x00000000u), 0x3f000000u); /* 0.5 */
	assert_int_equal(nm_gelu_grad_lut_bits(0x40800000u), 0x3f800000u); /* 1 */
	assert_int_equal(nm_gelu_grad_lut_bits(0xc0800000u), 0);
	assert_int_equal(nm_gelu_grad_lut_bits(0x7f800000u), NM_F32_QNAN); /* 0 * inf */
}

/* vsum2 against sums written out, and its order (two chains by index parity). */
static void test_vsum2(void **state)
{
	(void)state;
	uint32_t out[2];
	uint32_t x[5] = { 0x3f800000u, 0x40000000u, 0x40400000u, 0x40800000u, 0xc0a00000u };
	nm_vsum2_bits(out, x, 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 0);
	nm_vsum2_bits(out, x, 4); /* 1 2 3 4 */
	assert_int_equal(out[0], nm_f32_bits(10.0f));
	assert_int_equal(out[1], nm_f32_bits(30.0f));
	nm_vsum2_bits(out, x, 5); /* ... -5 */
	assert_int_equal(out[0], nm_f32_bits(5.0f));
	assert_int_equal(out[1], nm_f32_bits(55.0f));
	/* The sum takes the fp32 input, the square its bf16 rounding. */
	uint32_t y[1] = { 0x3f808001u };
	nm_vsum2_bits(out, y, 1);
	assert_int_equal(out[0], 0x3f808001u);
	assert_int_equal(out[1], nm_fmac_bits(0x3f81, 0x3f81, 0));
	/* Order: 2^24 + 1 + 1 in one chain loses both ones; the chains keep them apart. */
	uint32_t z[4] = { 0x4b800000u, 0x3f800000u, 0x3f800000u, 0x3f800000u };
	nm_vsum2_bits(out, z, 4);
	/* s0 = 2^24 + 1 = 2^24 (RNE), s1 = 1 + 1 = 2: 2^24 + 2 */
	assert_int_equal(out[0], 0x4b800001u);
	/* Specials and random sequences against the definition. */
	uint32_t w[3] = { 0x7f800000u, 0x3f800000u, 0xff800000u };
	nm_vsum2_bits(out, w, 3);
	assert_int_equal(out[0], NM_F32_QNAN);
	assert_int_equal(out[1], 0x7f800000u);
	for (int k = 0; k < 200; k++) {
		uint32_t v[37];
		size_t n = (size_t)(rng_next() % 38);
		for (size_t i = 0; i < n; i++)
			v[i] = nm_f32_bits((float)((double)(int32_t)rng_next() / 1e9));
		uint32_t s[2] = { 0, 0 }, q[2] = { 0, 0 };
		for (size_t i = 0; i < n; i++) {
			uint16_t b = nm_bf16_from_f32(nm_bits_f32(v[i]));
			s[i % 2] = nm_add_bits(s[i % 2], v[i]);
			q[i % 2] = nm_fmac_bits(b, b, q[i % 2]);
		}
		nm_vsum2_bits(out, v, n);
		assert_int_equal(out[0], nm_add_bits(s[0], s[1]));
		assert_int_equal(out[1], nm_add_bits(q[0], q[1]));
	}
}

static int simd_levels[] = { 0, 1, 2 };

int main(void)
{
	rng_seed_from_env();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16_rounding),
		cmocka_unit_test(test_bf16_to_f32),
		cmocka_unit_test(test_fmac_known_values),
		cmocka_unit_test(test_fmac_reference),
		cmocka_unit_test(test_fmac_fast_path),
		cmocka_unit_test(test_add),
		cmocka_unit_test_prestate(test_axpy_and_dot, &simd_levels[0]),
		cmocka_unit_test_prestate(test_axpy_and_dot, &simd_levels[1]),
		cmocka_unit_test_prestate(test_axpy_and_dot, &simd_levels[2]),
		cmocka_unit_test(test_rsqrt),
		cmocka_unit_test(test_lut_index),
		cmocka_unit_test(test_lut_bits),
		cmocka_unit_test(test_gelu_lut),
		cmocka_unit_test(test_vsum2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
