/*
 * test_pe_model.c - the PE model's extended 0xF group (verif/models/pe_model.c,
 * docs/architecture.md 4.4): vfma, vsum2, cvt.bf, vlut, vlut.bf, rsqrt, vmac and vdot, each
 * run by a task the way firmware runs it (assembled by host/fwasm, started by a wavelet)
 * and compared bit for bit with a plain loop over the host/common/numerics.h primitives. Also: the words around
 * each range are untouched, r6 and r7 are unchanged, r7 = 0 does nothing, the MAC counter
 * counts fmac and add issues; sources that overlap the destination read in index order. The RTL benches
 * (verif/pe/) compare the RTL with this model for the rest of the ISA.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../verif/models/pe_model.h"
#include "common/cs_error.h"
#include "common/numerics.h"
#include "driver/fw.h"
#include "fwasm/fwasm.h"

#define AWORDS 1024
#define BWORDS 2048
#define COLOR 3

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* An fp32 word: mostly ordinary values, sometimes a special or a subnormal. */
static uint32_t rand_f32(void)
{
	static const uint32_t special[] = { 0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu,
					    0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f7fffffu };
	uint64_t r = rng_next();
	if ((r & 31) == 0)
		return special[(r >> 5) & 7];
	return nm_f32_bits((float)((double)(int32_t)(r >> 16) / (double)(1u << (r >> 8 & 15))));
}

/* A model with the program loaded at pc 0 as the task of COLOR, B and A random. */
static void setup(struct pe_model *m, const char *src)
{
	struct csd_fw fw;
	char err[512] = "";
	int rc = fwasm_assemble(&fw, src, "t.s", err, sizeof err);
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, CS_OK);
	assert_int_equal(pe_model_init(m, AWORDS, BWORDS, 4), 0);
	memcpy(m->imem, fw.imem, sizeof fw.imem);
	m->task[COLOR] = 0x200;
	for (unsigned i = 0; i < BWORDS; i++)
		m->b[i] = rand_f32();
	for (unsigned i = 0; i < AWORDS; i++)
		m->a[i] = (uint16_t)rng_next();
}

static void run(struct pe_model *m)
{
	assert_int_equal(pe_model_rx(m, (uint64_t)COLOR << 32), 0);
	assert_int_equal(pe_model_run(m, 1000), 0);
	assert_false(m->running);
}

/*
 * One case of a vector instruction: the program assembled over random A and B (setup);
 * the caller sets the registers (and any operands), then vcase_expect copies A, B and the
 * registers as the expected state, the caller writes the instruction's effect into that
 * copy, and vcase_check runs the task and holds the whole of A and B, the registers (every
 * vector instruction leaves them) and the MAC counter to it.
 */
struct vcase {
	struct pe_model m;
	uint32_t b[BWORDS];
	uint16_t a[AWORDS];
	uint16_t r[8];
};

static void vcase_expect(struct vcase *c)
{
	memcpy(c->b, c->m.b, sizeof c->b);
	memcpy(c->a, c->m.a, sizeof c->a);
	memcpy(c->r, c->m.r, sizeof c->r);
}

static void vcase_check(struct vcase *c, uint32_t macs)
{
	run(&c->m);
	assert_memory_equal(c->m.b, c->b, sizeof c->b);
	assert_memory_equal(c->m.a, c->a, sizeof c->a);
	assert_memory_equal(c->m.r, c->r, sizeof c->r);
	assert_int_equal(c->m.cnt[0], macs);
	pe_model_free(&c->m);
}

/* A source pointer: in place (the destination), disjoint, or overlapping either way. */
static uint16_t rand_src(uint16_t dst)
{
	switch (rng_next() % 4) {
	case 0:
		return dst;
	case 1:
		return (uint16_t)(dst + rng_next() % 5);
	case 2:
		return (uint16_t)(dst - rng_next() % 5);
	default:
		return (uint16_t)(rng_next() % 1500);
	}
}

static void test_vfma(void **state)
{
	(void)state;
	for (int k = 0; k < 80; k++) {
		struct vcase v;
		setup(&v.m, k & 1 ? "vfma r3, r4, r2\nret" : "vfma r3, r4\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(8 + rng_next() % 1500);
		uint16_t src = k & 1 ? rand_src(p) : p;
		uint16_t s = nm_bf16_from_bits(rand_f32()), c = nm_bf16_from_bits(rand_f32());
		v.m.r[2] = src;
		v.m.r[3] = s;
		v.m.r[4] = c;
		v.m.r[6] = p;
		v.m.r[7] = n;
		vcase_expect(&v);
		for (uint16_t i = 0; i < n; i++)
			v.b[p + i] = nm_fmac_bits(s, nm_bf16_from_bits(v.b[src + i]), (uint32_t)c << 16);
		vcase_check(&v, n);
	}
}

/* vmac: A times B plus B, the addend and the multiplicand ranges anywhere, A wrapping. */
static void test_vmac(void **state)
{
	(void)state;
	for (int k = 0; k < 80; k++) {
		struct vcase v;
		setup(&v.m, "vmac r3, r1, r2\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(8 + rng_next() % 1500);
		uint16_t src = rand_src(p), add = rand_src(p);
		uint16_t a = (uint16_t)(rng_next() % (2 * AWORDS));
		v.m.r[1] = a;
		v.m.r[2] = src;
		v.m.r[3] = add;
		v.m.r[6] = p;
		v.m.r[7] = n;
		vcase_expect(&v);
		for (uint16_t i = 0; i < n; i++)
			v.b[p + i] = nm_fmac_bits(v.a[(a + i) % AWORDS], nm_bf16_from_bits(v.b[src + i]),
						  v.b[add + i]);
		vcase_check(&v, n);
	}
}

/* vaxpy: a register times an A range plus the destination. */
static void test_vaxpy(void **state)
{
	(void)state;
	for (int k = 0; k < 80; k++) {
		struct vcase v;
		setup(&v.m, "vaxpy r3, r1\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(rng_next() % 1700);
		uint16_t a = (uint16_t)(rng_next() % (2 * AWORDS)), s = nm_bf16_from_bits(rand_f32());
		v.m.r[1] = a;
		v.m.r[3] = s;
		v.m.r[6] = p;
		v.m.r[7] = n;
		vcase_expect(&v);
		for (uint16_t i = 0; i < n; i++)
			v.b[p + i] = nm_fmac_bits(s, v.a[(a + i) % AWORDS], v.b[p + i]);
		vcase_check(&v, n);
	}
}

/* vmul r3, r1 (cvt.bh's code with rs != 0): B[r6 + n] = fmac(A[r1 + n], r3, +0), what vmac
 * gives against B rows of r3 and +0; with r3 = 1.0 the stash widened as nm_fmac_row_bits. */
static void test_vmul(void **state)
{
	(void)state;
	for (int k = 0; k < 80; k++) {
		struct pe_model m, m2;
		setup(&m, "vmul r3, r1\nret");
		setup(&m2, "vmac r4, r1, r2\nret");
		/* the range clear of vmac's rows (each element read before its write) */
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(rng_next() % 900);
		uint16_t a = (uint16_t)(rng_next() % (2 * AWORDS));
		uint16_t s = k & 1 ? 0x3f80 : nm_bf16_from_bits(rand_f32());
		memcpy(m2.a, m.a, sizeof m.a[0] * AWORDS);
		memcpy(m2.b, m.b, sizeof m.b[0] * BWORDS);
		for (int i = 0; i < 300; i++) { /* vmac's rows of s and +0 */
			m2.b[1200 + i] = (uint32_t)s << 16;
			m2.b[1600 + i] = 0;
		}
		m.r[1] = m2.r[1] = a;
		m.r[3] = s;
		m2.r[2] = 1200;
		m2.r[4] = 1600;
		m.r[6] = m2.r[6] = p;
		m.r[7] = m2.r[7] = n;
		uint32_t want[BWORDS];
		memcpy(want, m.b, sizeof want);
		for (uint16_t i = 0; i < n; i++)
			want[p + i] = nm_fmac_bits(m.a[(a + i) % AWORDS], s, 0);
		run(&m);
		run(&m2);
		assert_memory_equal(m.b, want, sizeof want);
		assert_memory_equal(m2.b + p, want + p, n * sizeof want[0]);
		if (s == 0x3f80) {
			uint32_t w[300], ones[300], zeros[300] = { 0 };
			for (int i = 0; i < 300; i++)
				ones[i] = 0x3f800000u;
			uint16_t x[300];
			for (uint16_t i = 0; i < n; i++)
				x[i] = m.a[(a + i) % AWORDS];
			nm_fmac_row_bits(w, x, ones, zeros, n);
			assert_memory_equal(m.b + p, w, n * sizeof w[0]);
		}
		assert_int_equal(m.cnt[0], n);
		pe_model_free(&m);
		pe_model_free(&m2);
	}
}

/* cpa r1 (cvt.bf's code with rs != 0): B[r6 + n] = A word r1/2 + n (elements 2w low, 2w + 1
 * high), wrapping in A; what vmul by 1.0 then cvt.bh give for an even r1 and normal A. */
static void test_cpa(void **state)
{
	(void)state;
	for (int k = 0; k < 80; k++) {
		struct vcase v;
		setup(&v.m, "cpa r1\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(rng_next() % 900);
		uint16_t a = (uint16_t)(k & 3 ? rng_next() % (2 * AWORDS) : (uint64_t)(0xffff - k % 16));
		v.m.r[1] = a;
		v.m.r[6] = p;
		v.m.r[7] = n;
		vcase_expect(&v);
		uint32_t *want = v.b;
		for (uint16_t i = 0; i < n; i++) {
			unsigned e = (2u * ((a >> 1) + i)) % AWORDS;
			want[p + i] = v.a[e] | (uint32_t)v.a[e + 1] << 16;
			uint16_t lo = v.a[e], hi = v.a[e + 1];
			/* the same bits but for NaN payloads and subnormals, which every reader
			 * takes as the same values (0x7fc0, +-0: docs/architecture.md 8) */
			int ex_lo = lo & 0x7f80, ex_hi = hi & 0x7f80;
			if (ex_lo && ex_lo != 0x7f80 && ex_hi && ex_hi != 0x7f80)
				assert_int_equal(want[p + i],
						 (uint32_t)nm_bf16_from_bits(nm_fmac_bits(hi, 0x3f80, 0)) << 16 |
						 nm_bf16_from_bits(nm_fmac_bits(lo, 0x3f80, 0)));
		}
		vcase_check(&v, 0);
	}
}

/* cvt.bh: fp32 words to packed bf16 halves of B, from an odd or even element, in place. */
static void test_cvt_bh(void **state)
{
	(void)state;
	for (int k = 0; k < 80; k++) {
		struct vcase c;
		setup(&c.m, "cvt.bh r2\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(rng_next() % 1700);
		uint16_t e = k & 1 ? (uint16_t)(2 * p + rng_next() % 3) : (uint16_t)(rng_next() % 3400);
		c.m.r[2] = e;
		c.m.r[6] = p;
		c.m.r[7] = n;
		vcase_expect(&c);
		for (uint16_t i = 0; i < n; i++) {
			uint16_t v = nm_bf16_from_bits(c.b[p + i]), x = (uint16_t)(e + i);
			uint32_t *w = &c.b[x >> 1];
			*w = (x & 1) ? (*w & 0xffffu) | (uint32_t)v << 16 : (*w & 0xffff0000u) | v;
		}
		vcase_check(&c, 0);
	}
}

/* vdot: two chains by parity from +0, then their sum into one word. */
static void test_vdot(void **state)
{
	(void)state;
	for (int k = 0; k < 80; k++) {
		struct pe_model m;
		setup(&m, "vdot r3, r1, r2\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), src = (uint16_t)(rng_next() % 1500);
		uint16_t dst = (uint16_t)(1600 + rng_next() % 400), a = (uint16_t)(rng_next() % AWORDS);
		m.r[1] = a;
		m.r[2] = src;
		m.r[3] = dst;
		m.r[6] = (uint16_t)rng_next();
		m.r[7] = n;
		uint32_t want[BWORDS], acc[2] = { 0, 0 };
		memcpy(want, m.b, sizeof want);
		for (uint16_t i = 0; i < n; i++)
			acc[i & 1] = nm_fmac_bits(m.a[(a + i) % AWORDS], nm_bf16_from_bits(want[src + i]),
						  acc[i & 1]);
		want[dst] = nm_add_bits(acc[0], acc[1]);
		run(&m);
		assert_memory_equal(m.b, want, sizeof want);
		assert_int_equal(m.cnt[0], n + 1u);
		pe_model_free(&m);
	}
}

/* vdot2 r3, r1 (vsum2 with rs != 0): B[r3] and B[r3 + 1] are the bits of vdot against
 * ones (1.0) and of vdot against A[r1 ..], both over B[r6 ..), run as two vdots. */
static void test_vdot2(void **state)
{
	(void)state;
	for (int k = 0; k < 80; k++) {
		struct pe_model m, m2;
		setup(&m, "vdot2 r3, r1\nret");
		setup(&m2, "vdot r3, r4, r6\naddi r3, r3, 1\nvdot r3, r1, r6\nret");
		/* the sums after the range: the two vdots read it after the first one's write */
		uint16_t n = (uint16_t)(k == 0 ? 0 : rng_next() % 300), p = (uint16_t)(rng_next() % 1300);
		uint16_t dst = (uint16_t)(1600 + rng_next() % 400), a = (uint16_t)(rng_next() % AWORDS);
		uint16_t ones = (uint16_t)(rng_next() % (AWORDS - 300));
		for (int i = 0; i < 300; i++)
			m.a[ones + i] = 0x3f80;
		memcpy(m2.a, m.a, sizeof m.a[0] * AWORDS);
		memcpy(m2.b, m.b, sizeof m.b[0] * BWORDS);
		m.r[1] = m2.r[1] = a;
		m.r[3] = m2.r[3] = dst;
		m2.r[4] = ones;
		m.r[6] = m2.r[6] = p;
		m.r[7] = m2.r[7] = n;
		uint32_t want[BWORDS], s[2] = { 0, 0 }, q[2] = { 0, 0 };
		memcpy(want, m.b, sizeof want);
		for (uint16_t i = 0; i < n; i++) {
			uint16_t xb = nm_bf16_from_bits(want[p + i]);
			s[i & 1] = nm_fmac_bits(0x3f80, xb, s[i & 1]);
			q[i & 1] = nm_fmac_bits(m.a[(a + i) % AWORDS], xb, q[i & 1]);
		}
		want[dst] = nm_add_bits(s[0], s[1]);
		want[dst + 1] = nm_add_bits(q[0], q[1]);
		run(&m);
		run(&m2);
		assert_memory_equal(m.b, want, sizeof want);
		assert_memory_equal(m2.b, want, sizeof want);
		assert_int_equal(m.cnt[0], 2u * n + 2u);
		pe_model_free(&m);
		pe_model_free(&m2);
	}
}

/* vsum4 r2 / vdot4 r2, r1 (vsum2 / vdot2 with rt != 0): four chains a sum, j = n & 3, from
 * +0, then add(add(c0, c1), add(c2, c3)); x = {1, -1, 2^-24, 2^-24} tells the orders apart
 * (vsum2's chains lose the 2^-24 against 1: 2^-24; vsum4's keep them: 2^-23). */
static void test_vsum4(void **state)
{
	(void)state;
	for (int k = 0; k < 100; k++) {
		int dot = k & 1;
		struct pe_model m;
		setup(&m, dot ? "vdot4 r2, r1\nret" : "vsum4 r2\nret");
		uint16_t n = (uint16_t)(k < 2 ? 0 : rng_next() % 300), p = (uint16_t)(rng_next() % 700);
		uint16_t a = (uint16_t)(rng_next() % AWORDS);
		if (k == 2 || k == 3) {
			static const float x4[4] = { 1.0f, -1.0f, 0x1p-24f, 0x1p-24f };
			n = 4;
			for (int i = 0; i < 4; i++) {
				m.b[p + i] = nm_f32_bits(x4[i]);
				m.a[(a + i) % AWORDS] = 0x3f80;
			}
		}
		m.r[1] = a;
		m.r[2] = (uint16_t)(1024 + rng_next() % 1000);
		m.r[6] = p;
		m.r[7] = n;
		uint32_t want[BWORDS];
		memcpy(want, m.b, sizeof want);
		uint32_t s[4] = { 0, 0, 0, 0 }, q[4] = { 0, 0, 0, 0 };
		for (uint16_t i = 0; i < n; i++) {
			uint16_t xb = nm_bf16_from_bits(want[p + i]);
			if (dot) {
				s[i % 4] = nm_fmac_bits(0x3f80, xb, s[i % 4]);
				q[i % 4] = nm_fmac_bits(m.a[(a + i) % AWORDS], xb, q[i % 4]);
			} else {
				s[i % 4] = nm_add_bits(s[i % 4], want[p + i]);
				q[i % 4] = nm_fmac_bits(xb, xb, q[i % 4]);
			}
		}
		want[m.r[2]] = nm_add_bits(nm_add_bits(s[0], s[1]), nm_add_bits(s[2], s[3]));
		want[m.r[2] + 1] = nm_add_bits(nm_add_bits(q[0], q[1]), nm_add_bits(q[2], q[3]));
		if (!dot) {
			uint32_t ref[2], two[2];
			nm_vsum4_bits(ref, m.b + p, n);
			assert_int_equal(ref[0], want[m.r[2]]);
			assert_int_equal(ref[1], want[m.r[2] + 1]);
			nm_vsum2_bits(two, m.b + p, n);
			if (k == 2) {
				assert_int_equal(ref[0], nm_f32_bits(0x1p-23f));
				assert_int_equal(two[0], nm_f32_bits(0x1p-24f));
			}
		}
		run(&m);
		assert_memory_equal(m.b, want, sizeof want);
		assert_int_equal(m.cnt[0], 2 * (unsigned)n + 6);
		pe_model_free(&m);
	}
}

static void test_vsum2(void **state)
{
	(void)state;
	for (int k = 0; k < 50; k++) {
		struct pe_model m;
		setup(&m, "vsum2 r2\nret");
		uint16_t n = (uint16_t)(k == 0 ? 0 : rng_next() % 300), p = (uint16_t)(rng_next() % 700);
		m.r[2] = (uint16_t)(1024 + rng_next() % 1000);
		m.r[6] = p;
		m.r[7] = n;
		uint32_t want[BWORDS];
		memcpy(want, m.b, sizeof want);
		uint32_t s[2] = { 0, 0 }, q[2] = { 0, 0 };
		for (uint16_t i = 0; i < n; i++) {
			uint16_t xb = nm_bf16_from_bits(want[p + i]);
			s[i % 2] = nm_add_bits(s[i % 2], want[p + i]);
			q[i % 2] = nm_fmac_bits(xb, xb, q[i % 2]);
		}
		want[m.r[2]] = nm_add_bits(s[0], s[1]);
		want[m.r[2] + 1] = nm_add_bits(q[0], q[1]);
		uint32_t ref[2];
		nm_vsum2_bits(ref, m.b + p, n);
		assert_int_equal(ref[0], want[m.r[2]]);
		assert_int_equal(ref[1], want[m.r[2] + 1]);
		run(&m);
		assert_memory_equal(m.b, want, sizeof want);
		assert_int_equal(m.cnt[0], 2 * (unsigned)n + 2);
		pe_model_free(&m);
	}
}

static void test_cvt_bf(void **state)
{
	(void)state;
	for (int k = 0; k < 50; k++) {
		struct vcase v;
		setup(&v.m, "cvt.bf r1\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(rng_next() % 1500);
		uint16_t a = (uint16_t)(rng_next() % 2048); /* wraps modulo AWORDS */
		v.m.r[1] = a;
		v.m.r[6] = p;
		v.m.r[7] = n;
		vcase_expect(&v);
		for (uint16_t i = 0; i < n; i++)
			v.a[(a + i) % AWORDS] = nm_bf16_from_bits(v.b[p + i]);
		vcase_check(&v, 0);
	}
}

/* GELU on a B range through the table in B, then to A: the forward's fc epilogue. */
static void test_vlut(void **state)
{
	(void)state;
	for (int k = 0; k < 20; k++) {
		struct vcase v;
		setup(&v.m, "vlut r2\ncvt.bf r1\nret");
		int deriv = k & 1;
		uint16_t tab = (uint16_t)(1024 + rng_next() % 700), n = (uint16_t)(rng_next() % 400);
		uint16_t p = (uint16_t)(rng_next() % 600);
		nm_gelu_table(v.m.b + tab, deriv);
		v.m.r[1] = 0;
		v.m.r[2] = tab;
		v.m.r[6] = p;
		v.m.r[7] = n;
		vcase_expect(&v);
		for (uint16_t i = 0; i < n; i++) {
			v.b[p + i] = deriv ? nm_gelu_grad_lut_bits(v.b[p + i])
					   : nm_gelu_lut_bits(v.b[p + i]);
			v.a[i] = nm_bf16_from_bits(v.b[p + i]);
		}
		vcase_check(&v, n);
	}
	/* A random table: the entry's halves are slope and intercept; a source range beside
	 * the destination. */
	struct vcase v;
	setup(&v.m, "vlut r5, r4\nret");
	v.m.r[4] = 300;
	v.m.r[5] = 1500;
	v.m.r[6] = 0;
	v.m.r[7] = 1000;
	vcase_expect(&v);
	for (unsigned i = 0; i < 1000; i++)
		v.b[i] = nm_lut_bits(v.m.b + 1500, v.b[300 + i]);
	vcase_check(&v, 1000);

	/* vlut.bf (pe): the same lines as bf16 into A from an odd element, B untouched */
	setup(&v.m, "vlut.bf r5, r3, r4\nret");
	v.m.r[3] = 77;
	v.m.r[4] = 300;
	v.m.r[5] = 1500;
	v.m.r[7] = 600;
	vcase_expect(&v);
	for (unsigned i = 0; i < 600; i++)
		v.a[77 + i] = nm_bf16_from_bits(nm_lut_bits(v.b + 1500, v.b[300 + i]));
	vcase_check(&v, 600);

	/* vlut.a (pe): x from A as fmac(x, 1.0, +0) (zeros and subnormals +0, NaN 0x7fc0), in
	 * place from an odd element: each element read before it is written */
	static const uint16_t sp[6] = { 0x8000, 0x0000, 0x8001, 0x0040, 0xffc1, 0x7f81 };
	setup(&v.m, "vlut.a r5, r3, r3\nret");
	for (unsigned i = 0; i < 6; i++)
		v.m.a[101 + 7 * i] = sp[i];
	v.m.r[3] = 77;
	v.m.r[5] = 1500;
	v.m.r[7] = 600;
	vcase_expect(&v);
	for (unsigned i = 0; i < 600; i++) {
		uint32_t x = nm_fmac_bits(v.a[77 + i], 0x3f80, 0);
		if (i >= 24 && i < 66 && (i - 24) % 7 == 0) /* the specials: +0, +0, +0, +0, NaN, NaN */
			assert_int_equal(x, (i - 24) / 7 < 4 ? 0 : NM_F32_QNAN);
		v.a[77 + i] = nm_bf16_from_bits(nm_lut_bits(v.b + 1500, x));
	}
	vcase_check(&v, 600);
}

static void test_rsqrt(void **state)
{
	(void)state;
	struct pe_model m;
	setup(&m, "rsqrt r5, [r4]\nrsqrt r4, [r4]\nret");
	m.b[77] = nm_f32_bits(0.0625f);
	m.r[4] = 77 + BWORDS; /* addresses wrap modulo BWORDS */
	run(&m);
	assert_int_equal(m.r[5], 0x4080); /* 4 */
	assert_int_equal(m.r[4], 0x4080); /* rd = rs: the address is read first */
	assert_int_equal(m.cnt[0], 0);
	pe_model_free(&m);
	for (int k = 0; k < 200; k++) {
		setup(&m, "rsqrt r0, [r7]\nret");
		uint16_t a = (uint16_t)(rng_next() % BWORDS);
		m.r[7] = a;
		uint32_t b[BWORDS];
		memcpy(b, m.b, sizeof b);
		run(&m);
		assert_int_equal(m.r[0], nm_rsqrt_bits(b[a]));
		assert_memory_equal(m.b, b, sizeof b);
		pe_model_free(&m);
	}
}

/* r7 = 0: nothing but the +0 words of vsum2 and vdot. */
static void test_empty(void **state)
{
	(void)state;
	struct pe_model m;
	setup(&m, "vfma r3, r4\nvlut r2\ncvt.bf r1\nvmac r1, r2, r3\nvsum2 r5\nvdot r4, r1, r2\nret");
	m.r[4] = 40;
	m.r[5] = 9;
	uint32_t b[BWORDS];
	uint16_t a[AWORDS], r[8];
	memcpy(b, m.b, sizeof b);
	memcpy(a, m.a, sizeof a);
	b[9] = 0;
	b[10] = 0;
	b[40] = 0;
	memcpy(r, m.r, sizeof r);
	run(&m);
	assert_memory_equal(m.b, b, sizeof b);
	assert_memory_equal(m.a, a, sizeof a);
	assert_memory_equal(m.r, r, sizeof r);
	assert_int_equal(m.cnt[0], 3);
	pe_model_free(&m);
}

/* A normal-ish fp32 activation: |x| in [0, 8), either sign, plus an offset. */
static uint32_t rand_act(float offset)
{
	uint64_t r = rng_next();
	float v = (float)((double)(r >> 40) / (double)(1ull << 24)) * 8.0f;
	return nm_f32_bits((r & 1 ? -v : v) + offset);
}

/* A model running firmware image `image`, its task `entry` bound to COLOR; A, B random. */
static void setup_image(struct pe_model *m, const char *image, const char *entry)
{
	struct csd_fw fw;
	char err[256] = "";
	int rc = csd_fw_get(&fw, image, err, sizeof err);
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, CS_OK);
	int pc = csd_fw_find(&fw, entry);
	assert_true(pc >= 0);
	assert_int_equal(pe_model_init(m, AWORDS, BWORDS, 4), 0);
	memcpy(m->imem, fw.imem, sizeof fw.imem);
	m->task[COLOR] = (uint16_t)(0x200 | pc);
	for (unsigned i = 0; i < BWORDS; i++)
		m->b[i] = rand_f32();
	for (unsigned i = 0; i < AWORDS; i++)
		m->a[i] = (uint16_t)rng_next();
}

/* Write the parameter block at B[p], start the task with p as payload, run it to the end. */
static void run_block(struct pe_model *m, uint16_t p, const uint16_t *par, int n)
{
	for (int i = 0; i < n; i++)
		m->b[p + i] = par[i];
	assert_int_equal(pe_model_rx(m, (uint64_t)COLOR << 32 | p), 0);
	assert_int_equal(pe_model_run(m, 1000000), 0);
	assert_false(m->running);
}

/* Layernorm of token x[0..c) in double precision, times gamma plus beta. */
static double ln_ref(const uint32_t *x, unsigned c, unsigned j, double gamma, double beta)
{
	double mu = 0, var = 0;
	for (unsigned i = 0; i < c; i++)
		mu += nm_bits_f32(x[i]);
	mu /= c;
	for (unsigned i = 0; i < c; i++)
		var += (nm_bits_f32(x[i]) - mu) * (nm_bits_f32(x[i]) - mu);
	var /= c;
	return (nm_bits_f32(x[j]) - mu) / sqrt(var + 1e-5) * gamma + beta;
}

/* fw/vec_ln_fwd.s: bit for bit nm_ln_fwd_bits (y, z, r per token); x, gamma, beta and the
 * block untouched; y within 3 bf16 ulps plus 2^-7 of a layernorm in double precision; the
 * same of fw/vec_ln_fwd_d.s (k >= 6, pe's vsum4) against nm_ln_fwd_chains_bits' 4 chains. */
static void test_ln_fwd(void **state)
{
	(void)state;
	static const unsigned cs[] = { 64, 48, 128 };
	for (int k = 0; k < 12; k++) {
		unsigned c = cs[k % 3], ntok = 1 + (unsigned)(rng_next() % 3);
		struct pe_model m;
		setup_image(&m, k >= 6 ? "vec_ln_fwd_d" : "vec_ln_fwd", "ln_fwd");
		/* B: x from 0, beta 1000, S 1200, T 1400, block 1900; A: gamma 0, y 128, z 512,
		 * r 900, scratch 1000 */
		const uint16_t X = 0, BE = 1000, S = 1200, T = 1400, P = 1900;
		const uint16_t G = 0, Y = 128, Z = 512, R = 900, AM = 1000;
		float offset = (k & 1) ? 3.0f : 0.0f;
		for (unsigned i = 0; i < ntok * c; i++)
			m.b[X + i] = rand_act(offset);
		for (unsigned j = 0; j < c; j++) {
			m.a[G + j] = nm_bf16_from_f32(0.5f + (float)(rng_next() % 1000) / 1000.0f);
			m.b[BE + j] = nm_f32_bits((float)((int)(rng_next() % 200) - 100) / 400.0f);
		}
		uint16_t inv_c = nm_bf16_from_f32(1.0f / (float)c), eps = nm_bf16_from_f32(1e-5f);
		const uint16_t par[13] = { (uint16_t)c, G, BE, S, T, AM, inv_c, eps, X, Y, Z, R,
					   (uint16_t)ntok };
		uint32_t b0[BWORDS];
		uint16_t a0[AWORDS];
		memcpy(b0, m.b, sizeof b0);
		memcpy(a0, m.a, sizeof a0);
		run_block(&m, P, par, 13);
		for (unsigned t = 0; t < ntok; t++) {
			uint16_t y[128], z[128], r;
			nm_ln_fwd_chains_bits(y, z, &r, NULL, b0 + X + t * c, a0 + G, b0 + BE, c, inv_c,
					      eps, k >= 6 ? 4 : 2);
			assert_memory_equal(m.a + Y + t * c, y, c * sizeof y[0]);
			assert_memory_equal(m.a + Z + t * c, z, c * sizeof z[0]);
			assert_int_equal(m.a[R + t], r);
			for (unsigned j = 0; j < c; j++) {
				double ref = ln_ref(b0 + X + t * c, c, j, nm_bf16_to_f32(a0[G + j]),
						    nm_bits_f32(b0[BE + j]));
				double got = nm_bf16_to_f32(m.a[Y + t * c + j]);
				if (fabs(got - ref) > 3.0 * fabs(ref) / 256.0 + 1.0 / 128.0) {
					print_error("C %u token %u j %u: %g, layernorm %g\n", c, t, j, got, ref);
					fail();
				}
			}
		}
		assert_memory_equal(m.b + X, b0 + X, ntok * c * sizeof b0[0]);
		assert_memory_equal(m.b + BE, b0 + BE, c * sizeof b0[0]);
		for (int i = 0; i < 13; i++)
			assert_int_equal(m.b[P + i], par[i]);
		assert_memory_equal(m.a + G, a0 + G, c * sizeof a0[0]);
		pe_model_free(&m);
	}
}

/* fw/vec_ln_bwd.s after vec_ln_fwd.s's stash: bit for bit nm_ln_bwd_bits, and the
 * gradients close to layernorm's in double precision (dx within 2% of the largest); the
 * same of fw/vec_ln_bwd_d.s (k >= 6, pe's vdot4) against nm_ln_bwd_chains_bits' 4 chains. */
static void test_ln_bwd(void **state)
{
	(void)state;
	static const unsigned cs[] = { 64, 32, 96 };
	for (int k = 0; k < 12; k++) {
		unsigned c = cs[k % 3], ntok = 1 + (unsigned)(rng_next() % 4);
		struct pe_model m;
		setup_image(&m, k >= 6 ? "vec_ln_bwd_d" : "vec_ln_bwd", "ln_bwd");
		/* B: dy 0, dx 500, dgamma 1000, dbeta 1100, S 1200, T 1400, zeros 1500, block
		 * 1900; A: gamma 0, ones 100, z 200, r 700, scratch 800 */
		const uint16_t DY = 0, DX = 500, DG = 1000, DB = 1100, S = 1200, T = 1400, ZERO = 1500,
			       P = 1900;
		const uint16_t G = 0, ONES = 100, Z = 200, R = 700, AM = 800;
		uint32_t x[4 * 96];
		for (unsigned i = 0; i < ntok * c; i++) {
			x[i] = rand_act((k & 1) ? -2.0f : 0.0f);
			m.b[DY + i] = rand_act(0.0f);
			m.b[DX + i] = rand_act(0.0f);
		}
		for (unsigned j = 0; j < c; j++) {
			m.a[G + j] = nm_bf16_from_f32(0.5f + (float)(rng_next() % 1000) / 1000.0f);
			m.a[ONES + j] = 0x3f80;
			m.b[DG + j] = rand_act(0.0f);
			m.b[DB + j] = rand_act(0.0f);
		}
		uint16_t inv_c = nm_bf16_from_f32(1.0f / (float)c), eps = nm_bf16_from_f32(1e-5f);
		uint32_t zero[96] = { 0 };
		for (unsigned t = 0; t < ntok; t++) {
			uint16_t y[96];
			nm_ln_fwd_bits(y, m.a + Z + t * c, m.a + R + t, x + t * c, m.a + G, zero, c, inv_c,
				       eps);
		}
		const uint16_t par[15] = { (uint16_t)c, G, ONES, S, T, AM, inv_c, ZERO, DY, Z, R, DX,
					   DG, DB, (uint16_t)ntok };
		uint32_t b0[BWORDS];
		uint16_t a0[AWORDS];
		memcpy(b0, m.b, sizeof b0);
		memcpy(a0, m.a, sizeof a0);
		run_block(&m, P, par, 15);
		uint32_t dx[4 * 96], dg[96], db[96];
		memcpy(dx, b0 + DX, sizeof dx);
		memcpy(dg, b0 + DG, sizeof dg);
		memcpy(db, b0 + DB, sizeof db);
		for (unsigned t = 0; t < ntok; t++)
			nm_ln_bwd_chains_bits(dx + t * c, dg, db, NULL, b0 + DY + t * c, a0 + Z + t * c,
					      a0[R + t], a0 + G, c, inv_c, k >= 6 ? 4 : 2);
		assert_memory_equal(m.b + DX, dx, ntok * c * sizeof dx[0]);
		assert_memory_equal(m.b + DG, dg, c * sizeof dg[0]);
		assert_memory_equal(m.b + DB, db, c * sizeof db[0]);
		assert_memory_equal(m.b + DY, b0 + DY, ntok * c * sizeof b0[0]);
		for (unsigned j = 0; j < c; j++)
			assert_int_equal(m.b[ZERO + j], 0);
		/* dx against layernorm's gradient in double precision, by central differences of
		 * sum_j dy_j * ln(x)_j */
		for (unsigned t = 0; t < ntok; t++) {
			double want[96], big = 0;
			for (unsigned i = 0; i < c; i++) {
				uint32_t xp[96];
				memcpy(xp, x + t * c, c * sizeof xp[0]);
				double h = 1e-3 * (1.0 + fabs(nm_bits_f32(xp[i]))), lp = 0, lm = 0;
				float xi = nm_bits_f32(xp[i]);
				xp[i] = nm_f32_bits(xi + (float)h);
				double hp = nm_bits_f32(xp[i]) - xi;
				for (unsigned j = 0; j < c; j++)
					lp += nm_bits_f32(b0[DY + t * c + j]) *
					      ln_ref(xp, c, j, nm_bf16_to_f32(a0[G + j]), 0.0);
				xp[i] = nm_f32_bits(xi - (float)h);
				double hm = xi - nm_bits_f32(xp[i]);
				for (unsigned j = 0; j < c; j++)
					lm += nm_bits_f32(b0[DY + t * c + j]) *
					      ln_ref(xp, c, j, nm_bf16_to_f32(a0[G + j]), 0.0);
				want[i] = (lp - lm) / (hp + hm);
				big = fmax(big, fabs(want[i]));
			}
			for (unsigned i = 0; i < c; i++) {
				double got = nm_bits_f32(m.b[DX + t * c + i]) - nm_bits_f32(b0[DX + t * c + i]);
				if (fabs(got - want[i]) > 0.02 * big + 1e-3) {
					print_error("C %u token %u i %u: dx %g, want %g (largest %g)\n", c, t,
						    i, got, want[i], big);
					fail();
				}
			}
		}
		pe_model_free(&m);
	}
}

/* fw/vec_gelu.s: gelu_fwd then gelu_bwd, bit for bit nm_gelu_fwd_bits / nm_gelu_bwd_bits;
 * h within 2% + 2^-8 of GELU; gelu_h the same h, nothing else in A written. */
static void test_gelu(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++) {
		unsigned w = 64 + 32 * (unsigned)(k & 1), ntok = 1 + (unsigned)(rng_next() % 4);
		struct pe_model m;
		setup_image(&m, "vec_gelu", "gelu_fwd");
		/* B: pre 0, tables 1024 and 1280, S 1600, block 1900; A: h 0, d 400 */
		const uint16_t IN = 0, TG = 1024, TD = 1280, S = 1600, P = 1900, OUT = 0, D = 400;
		for (unsigned i = 0; i < ntok * w; i++)
			m.b[IN + i] = i % 17 ? rand_act(-1.0f) : rand_f32();
		nm_gelu_table(m.b + TG, 0);
		nm_gelu_table(m.b + TD, 1);
		const uint16_t par[8] = { (uint16_t)w, (uint16_t)ntok, TG, TD, S, IN, OUT, D };
		uint32_t b0[BWORDS];
		memcpy(b0, m.b, sizeof b0);
		run_block(&m, P, par, 8);
		uint16_t h[4 * 96], d[4 * 96];
		nm_gelu_fwd_bits(h, d, b0 + IN, ntok * w, b0 + TG, b0 + TD);
		assert_memory_equal(m.a + OUT, h, ntok * w * sizeof h[0]);
		assert_memory_equal(m.a + D, d, ntok * w * sizeof d[0]);
		for (unsigned i = 0; i < ntok * w; i++) {
			double x = nm_bf16_to_f32(nm_bf16_from_bits(b0[IN + i]));
			if (!isfinite(x))
				continue;
			double g = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
			assert_true(fabs(nm_bf16_to_f32(h[i]) - g) <= 0.02 * fabs(g) + 1.0 / 256.0);
		}
		/* backward: dh in B where pre was, the stash d in A */
		struct pe_model mb;
		setup_image(&mb, "vec_gelu", "gelu_bwd");
		memcpy(mb.a + D, d, ntok * w * sizeof d[0]);
		for (unsigned i = 0; i < ntok * w; i++)
			mb.b[IN + i] = rand_act(0.0f);
		const uint16_t parb[8] = { (uint16_t)w, (uint16_t)ntok, 0, 0, S, IN, 200, D };
		uint32_t bb[BWORDS];
		memcpy(bb, mb.b, sizeof bb);
		run_block(&mb, P, parb, 8);
		uint16_t dp[4 * 96];
		nm_gelu_bwd_bits(dp, bb + IN, d, ntok * w);
		assert_memory_equal(mb.a + 200, dp, ntok * w * sizeof dp[0]);
		for (unsigned j = 0; j < w; j++)
			assert_int_equal(mb.b[S + j], 0);
		/* gelu_h: h alone, the same bits; A past h untouched */
		struct pe_model mh;
		setup_image(&mh, "vec_gelu", "gelu_h");
		memcpy(mh.b, b0, sizeof b0);
		uint16_t d0[4 * 96];
		memcpy(d0, mh.a + D, ntok * w * sizeof d0[0]);
		run_block(&mh, P, par, 8);
		assert_memory_equal(mh.a + OUT, h, ntok * w * sizeof h[0]);
		assert_memory_equal(mh.a + D, d0, ntok * w * sizeof d0[0]);
		for (unsigned i = 0; i < ntok * w; i++) {
			assert_int_equal(mh.b[IN + i], nm_lut_bits(b0 + TG, b0[IN + i]));
		}
		pe_model_free(&m);
		pe_model_free(&mb);
		pe_model_free(&mh);
	}
}

/* fw/vec_cvt.s: cvt_a and cvt_bh bit for bit nm_bf16_from_bits over strided rows (cvt_bh
 * also in place, the packed row over its own source); bias_fwd and bias_bwd bit for bit
 * nm_bias_add_bits; cvt_f bit for bit nm_widen_bits and equal to its input's value;
 * everything around the rows untouched. */
static void test_cvt(void **state)
{
	(void)state;
	const uint16_t P = 1900;
	for (int k = 0; k < 6; k++) {
		unsigned w = 8 + (unsigned)(rng_next() % 40), ntok = 1 + (unsigned)(rng_next() % 5);
		unsigned ss = w + (unsigned)(rng_next() % 3), ds = w + (unsigned)(rng_next() % 3);
		/* cvt_a: B rows from 100 to A rows from 30 */
		struct pe_model m;
		setup_image(&m, "vec_cvt", "cvt_a");
		uint16_t a0[AWORDS], want[AWORDS];
		memcpy(a0, m.a, sizeof a0);
		memcpy(want, m.a, sizeof want);
		for (unsigned t = 0; t < ntok; t++)
			for (unsigned j = 0; j < w; j++)
				want[30 + t * ds + j] = nm_bf16_from_bits(m.b[100 + t * ss + j]);
		const uint16_t pa[7] = { (uint16_t)w, (uint16_t)ntok, 100, (uint16_t)ss, 30,
					 (uint16_t)ds, 0 };
		uint32_t b0[BWORDS];
		memcpy(b0, m.b, sizeof b0);
		run_block(&m, P, pa, 7);
		assert_memory_equal(m.a, want, sizeof want);
		for (int i = 0; i < 7; i++)
			b0[P + i] = pa[i];
		assert_memory_equal(m.b, b0, sizeof b0);
		pe_model_free(&m);

		/* cvt_bh: B rows from 300 to Bh rows from 600, words 300 on: each packed row over
		 * its own source (ds <= 2 ss, so every word is read before it is written) */
		setup_image(&m, "vec_cvt", "cvt_bh");
		memcpy(b0, m.b, sizeof b0);
		uint16_t *h = (uint16_t *)(void *)b0;
		for (unsigned t = 0; t < ntok; t++)
			for (unsigned j = 0; j < w; j++)
				h[600 + t * ds + j] = nm_bf16_from_bits(m.b[300 + t * ss + j]);
		const uint16_t pb[7] = { (uint16_t)w, (uint16_t)ntok, 300, (uint16_t)ss, 600,
					 (uint16_t)ds, 0 };
		for (int i = 0; i < 7; i++)
			b0[P + i] = pb[i];
		run_block(&m, P, pb, 7);
		assert_memory_equal(m.b, b0, sizeof b0);
		pe_model_free(&m);

		/* bias_fwd: rows from 200 += bf16(bias at 1000); bias_bwd: db at 1000 += rows */
		for (int bwd = 0; bwd < 2; bwd++) {
			setup_image(&m, "vec_cvt", bwd ? "bias_bwd" : "bias_fwd");
			for (unsigned j = 0; j < w; j++)
				m.a[500 + j] = 0x3f80;
			memcpy(b0, m.b, sizeof b0);
			for (unsigned t = 0; t < ntok; t++) {
				if (bwd)
					nm_bias_add_bits(b0 + 1000, b0 + 200 + t * ss, w);
				else
					nm_bias_add_bits(b0 + 200 + t * ss, b0 + 1000, w);
			}
			const uint16_t pf[7] = { (uint16_t)w, (uint16_t)ntok, 200, (uint16_t)ss, 1000,
						 0, 500 };
			for (int i = 0; i < 7; i++)
				b0[P + i] = pf[i];
			run_block(&m, P, pf, 7);
			assert_memory_equal(m.b, b0, sizeof b0);
			pe_model_free(&m);
		}

		/* cvt_f: A rows from 40 (with -0, NaN, infinities) to B rows from 300, ones at
		 * 1000, zeros at 1100 */
		setup_image(&m, "vec_cvt", "cvt_f");
		static const uint16_t odd[] = { 0x8000, 0x7fc0, 0xff80, 0x0001, 0x7f7f };
		for (unsigned i = 0; i < ntok * ss; i++)
			m.a[40 + i] = i < 5 ? odd[i] : (uint16_t)(rng_next() & 0xffff);
		for (unsigned j = 0; j < w; j++) {
			m.b[1000 + j] = j & 1 ? 0x3f800000u : 0x3f807fffu; /* bf16 of each is 1.0 */
			m.b[1100 + j] = 0;
		}
		memcpy(b0, m.b, sizeof b0);
		for (unsigned t = 0; t < ntok; t++)
			nm_widen_bits(b0 + 300 + t * ss, m.a + 40 + t * ss, w);
		const uint16_t pc[8] = { (uint16_t)w, (uint16_t)ntok, 40, (uint16_t)ss, 300, 0, 1000,
					 1100 };
		for (int i = 0; i < 8; i++)
			b0[P + i] = pc[i];
		memcpy(a0, m.a, sizeof a0);
		run_block(&m, P, pc, 8);
		assert_memory_equal(m.b, b0, sizeof b0);
		assert_memory_equal(m.a, a0, sizeof a0);
		for (unsigned j = 5; j < w; j++) {
			float v = nm_bits_f32(m.b[300 + j]);
			if (isfinite(v))
				assert_true(v == nm_bf16_to_f32(m.a[40 + j]));
		}
		pe_model_free(&m);
	}
}

/* fw/vec_cvt.s cvt_fbh: cvt_f over contiguous rows, then the rows packed into Bh (pe's
 * vec_cvt_bf with SRC, OUT and N*W even: the A rows copied into Bh by cpa, B's rows not
 * written); dy_abh and dy_bh: the bias gradient (nm_bias_add_bits, tokens in order), the rows
 * as bf16 into A (dy_abh) and packed into Bh; bit for bit, everything else in A and B
 * untouched. */
static void test_cvt_fused(void **state)
{
	(void)state;
	const uint16_t P = 1900;
	for (int k = 0; k < 12; k++) {
		unsigned w = 8 + (unsigned)(rng_next() % 40), ntok = 1 + (unsigned)(rng_next() % 5);
		struct pe_model m;
		uint32_t b0[BWORDS];
		uint16_t a0[AWORDS];
		uint16_t *bh = (uint16_t *)(void *)b0;
		/* vec_cvt, then (k >= 6) pe's vec_cvt_bf, whose cvt_fbh copies by cpa (an even
		 * SRC and N*W) or widens by vmul */
		const char *img = k >= 6 ? "vec_cvt_bf" : "vec_cvt";
		unsigned src = 40 + (unsigned)(k & 1);
		int cp = k >= 6 && !(src & 1) && !(ntok * w & 1);
		/* cvt_fbh: A rows from src widened to B from 300 (ones 1000, zeros 1100), packed
		 * to Bh from 1400 (B words 700..) */
		setup_image(&m, img, "cvt_fbh");
		for (unsigned j = 0; j < w; j++) {
			m.b[1000 + j] = j & 1 ? 0x3f800000u : 0x3f807fffu;
			m.b[1100 + j] = 0;
		}
		const uint16_t pf[9] = { (uint16_t)w, (uint16_t)ntok, (uint16_t)src, (uint16_t)w,
					 300, 0, 1000, 1100, 1400 };
		memcpy(b0, m.b, sizeof b0);
		memcpy(a0, m.a, sizeof a0);
		for (int i = 0; i < 9; i++)
			b0[P + i] = pf[i];
		for (unsigned t = 0; t < ntok && !cp; t++)
			nm_fmac_row_bits(b0 + 300 + t * w, a0 + src + t * w, b0 + 1000, b0 + 1100, w);
		for (unsigned i = 0; i < ntok * w; i++)
			bh[1400 + i] = cp ? a0[src + i] : nm_bf16_from_bits(b0[300 + i]);
		run_block(&m, P, pf, 9);
		assert_memory_equal(m.b, b0, sizeof b0);
		assert_memory_equal(m.a, a0, sizeof a0);
		pe_model_free(&m);
		/* dy_abh / dy_bh: rows from 200, db at 1000, ones at A 500, A rows to 30, Bh to 1400 */
		for (int ta = 0; ta < 2; ta++) {
			setup_image(&m, img, ta ? "dy_abh" : "dy_bh");
			for (unsigned j = 0; j < w; j++)
				m.a[500 + j] = 0x3f80;
			const uint16_t pd[10] = { (uint16_t)w, (uint16_t)ntok, 200, 7,
						  ta ? 30 : 0xffff, 9, 500, 0, 1400, 1000 };
			memcpy(b0, m.b, sizeof b0);
			memcpy(a0, m.a, sizeof a0);
			for (int i = 0; i < 10; i++)
				b0[P + i] = pd[i];
			for (unsigned t = 0; t < ntok; t++)
				nm_bias_add_bits(b0 + 1000, b0 + 200 + t * w, w);
			for (unsigned i = 0; i < ntok * w; i++) {
				if (ta)
					a0[30 + i] = nm_bf16_from_bits(b0[200 + i]);
				bh[1400 + i] = nm_bf16_from_bits(b0[200 + i]);
			}
			run_block(&m, P, pd, 10);
			assert_memory_equal(m.b, b0, sizeof b0);
			assert_memory_equal(m.a, a0, sizeof a0);
			pe_model_free(&m);
		}
	}
}

/* fw/vec_fc.s: each fc_gelu entry bit for bit its composition of nm_bias_add_bits (or
 * nm_fmac_row_bits), the stash, nm_gelu_fwd_bits and the LUT; fc_gelu_bwd bit for bit
 * nm_gelu_bwd_bits, nm_bias_add_bits and the in-place packing; fc_cvt nm_bf16_from_bits;
 * everything else in A and B untouched. fw/vec_fc_bf.s (k >= 8, pe's vlut.bf and vlut.a): the
 * same A, pre left as the bias leaves it (MODE 1: untouched), S untouched. B: pre 0, tables 1024 and 1280, S 1600, bias /
 * ones 1700, zeros 1800, block 1900; A: h 0, d 256, stash 512 (fc_gelu_bwd: dp), ones 768. */
static void test_fc(void **state)
{
	(void)state;
	static const char *const entry[4] = { "fc_gelu_sh", "fc_gelu_hd", "fc_gelu_h",
					       "fc_gelu_wd" };
	const uint16_t IN = 0, TG = 1024, TD = 1280, S = 1600, BV = 1700, ZERO = 1800, P = 1900;
	const uint16_t OUT = 0, D = 256, ST = 512, ONES = 768, NONE = 0xffff;
	for (int k = 0; k < 16; k++) {
		unsigned w = 16 + 16 * (unsigned)(rng_next() % 4), ntok = 1 + (unsigned)(rng_next() % 4);
		int e = k % 4, mode = e == 3, st = e == 0 || e == 3, d = e == 1 || e == 3, bf = k >= 8;
		const char *img = bf ? "vec_fc_bf" : "vec_fc";
		struct pe_model m;
		setup_image(&m, img, entry[e]);
		for (unsigned i = 0; i < ntok * w; i++)
			m.b[IN + i] = i % 17 ? rand_act(-1.0f) : rand_f32();
		nm_gelu_table(m.b + TG, 0);
		nm_gelu_table(m.b + TD, 1);
		for (unsigned j = 0; j < w; j++) {
			m.a[ONES + j] = 0x3f80;
			if (mode) {
				m.b[BV + j] = j & 1 ? 0x3f800000u : 0x3f807fffu; /* bf16: 1.0 */
				m.b[ZERO + j] = 0;
			}
		}
		if (mode) /* the stash: bf16 pre-activations */
			for (unsigned i = 0; i < ntok * w; i++)
				m.a[ST + i] = nm_bf16_from_bits(rand_act(-1.0f));
		const uint16_t par[13] = { (uint16_t)w, (uint16_t)ntok, TG, TD, S, IN, OUT,
					   d ? (uint16_t)(mode ? ST : D) : NONE, (uint16_t)mode, ONES,
					   BV, ZERO, st ? ST : NONE };
		uint32_t bw[BWORDS];
		uint16_t aw[AWORDS];
		memcpy(bw, m.b, sizeof bw);
		memcpy(aw, m.a, sizeof aw);
		for (int i = 0; i < 13; i++)
			bw[P + i] = par[i];
		uint16_t *dd = mode ? aw + ST : aw + D;
		for (unsigned t = 0; t < ntok; t++) {
			uint32_t *pre = bw + IN + t * w;
			if (!mode) {
				nm_bias_add_bits(pre, bw + BV, w);
				if (st)
					for (unsigned j = 0; j < w; j++)
						aw[ST + t * w + j] = nm_bf16_from_bits(pre[j]);
			} else if (bf) { /* vlut.a from the stash: the rows stay */
				for (unsigned j = 0; j < w; j++) {
					uint32_t x;
					unsigned i = t * w + j;
					nm_fmac_row_bits(&x, aw + ST + i, bw + BV + j, bw + ZERO + j, 1);
					nm_gelu_fwd_bits(aw + OUT + i, dd + i, &x, 1, bw + TG, bw + TD);
				}
				continue;
			} else {
				nm_fmac_row_bits(pre, aw + ST + t * w, bw + BV, bw + ZERO, w);
			}
			nm_gelu_fwd_bits(aw + OUT + t * w, d ? dd + t * w : NULL, pre, w, bw + TG,
					 d ? bw + TD : NULL);
			for (unsigned j = 0; j < w && !bf; j++) {
				if (d)
					bw[S + j] = nm_lut_bits(bw + TD, pre[j]);
				pre[j] = nm_lut_bits(bw + TG, pre[j]);
			}
		}
		run_block(&m, P, par, 13);
		assert_memory_equal(m.a, aw, sizeof aw);
		assert_memory_equal(m.b, bw, sizeof bw);
		pe_model_free(&m);

		/* fc_gelu_bwd: dh at IN, d in A at D, dp to A at ST, the bias gradient at BV,
		 * packed in place (block ST = 2 IN) */
		setup_image(&m, img, "fc_gelu_bwd");
		for (unsigned i = 0; i < ntok * w; i++)
			m.b[IN + i] = rand_act(0.0f);
		for (unsigned j = 0; j < w; j++)
			m.a[ONES + j] = 0x3f80;
		const uint16_t pb[13] = { (uint16_t)w, (uint16_t)ntok, 0, 0, S, IN, ST, D, 0, ONES, BV, 0, (uint16_t)(2 * IN) };
		memcpy(bw, m.b, sizeof bw);
		memcpy(aw, m.a, sizeof aw);
		for (int i = 0; i < 13; i++)
			bw[P + i] = pb[i];
		uint16_t *bh = (uint16_t *)(void *)bw;
		memset(bw + S, 0, w * sizeof bw[0]);
		for (unsigned t = 0; t < ntok; t++) {
			uint32_t *dh = bw + IN + t * w;
			nm_gelu_bwd_bits(aw + pb[6] + t * w, dh, aw + D + t * w, w);
			for (unsigned j = 0; j < w; j++)
				dh[j] = nm_fmac_bits(aw[D + t * w + j], nm_bf16_from_bits(dh[j]), 0);
			nm_bias_add_bits(bw + BV, dh, w);
			for (unsigned j = 0; j < w; j++)
				bh[2 * IN + t * w + j] = nm_bf16_from_bits(dh[j]);
		}
		run_block(&m, P, pb, 13);
		assert_memory_equal(m.a, aw, sizeof aw);
		assert_memory_equal(m.b, bw, sizeof bw);
		pe_model_free(&m);

		/* fc_cvt: the N*W words at 300 to A at 31 */
		setup_image(&m, img, "fc_cvt");
		const uint16_t pc[13] = { (uint16_t)w, (uint16_t)ntok, 0, 0, 0, 300, 31 };
		memcpy(bw, m.b, sizeof bw);
		memcpy(aw, m.a, sizeof aw);
		for (int i = 0; i < 13; i++)
			bw[P + i] = pc[i];
		for (unsigned i = 0; i < ntok * w; i++)
			aw[31 + i] = nm_bf16_from_bits(bw[300 + i]);
		run_block(&m, P, pc, 13);
		assert_memory_equal(m.a, aw, sizeof aw);
		assert_memory_equal(m.b, bw, sizeof bw);
		pe_model_free(&m);
	}
}

int main(void)
{
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 1;
	printf("seed %llu (set TEST_SEED to replay)\n", (unsigned long long)seed);
	rng_state = seed * 0x9e3779b97f4a7c15ull;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ln_fwd),
		cmocka_unit_test(test_ln_bwd),
		cmocka_unit_test(test_gelu),
		cmocka_unit_test(test_cvt),
		cmocka_unit_test(test_fc),
		cmocka_unit_test(test_cvt_fused),
		cmocka_unit_test(test_vfma),
		cmocka_unit_test(test_vmac),
		cmocka_unit_test(test_vdot),
		cmocka_unit_test(test_vaxpy),
		cmocka_unit_test(test_cvt_bh),
		cmocka_unit_test(test_vsum2),
		cmocka_unit_test(test_vdot2),
		cmocka_unit_test(test_vsum4),
		cmocka_unit_test(test_vmul),
		cmocka_unit_test(test_cpa),
		cmocka_unit_test(test_cvt_bf),
		cmocka_unit_test(test_vlut),
		cmocka_unit_test(test_rsqrt),
		cmocka_unit_test(test_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
