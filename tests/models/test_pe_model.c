/*
 * test_pe_model.c - the PE model's extended 0xF group (verif/models/pe_model.c,
 * docs/architecture.md 4.4): vfma, vsum2, cvt.bf, vlut and rsqrt, each run by a task the
 * way firmware runs it (assembled by host/fwasm, started by a wavelet) and compared bit for
 * bit with a plain loop over the host/common/numerics.h primitives. Also: the words around
 * each range are untouched, r6 and r7 are unchanged, r7 = 0 does nothing, the MAC counter
 * counts fmac and add issues, the reserved encodings do nothing. The RTL benches
 * (verif/pe/) compare the RTL with this model for the rest of the ISA.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../verif/models/pe_model.h"
#include "common/cs_error.h"
#include "common/numerics.h"
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

static void test_vfma(void **state)
{
	(void)state;
	for (int k = 0; k < 50; k++) {
		struct pe_model m;
		setup(&m, "vfma r3, r4\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(rng_next() % 1500);
		uint16_t s = nm_bf16_from_bits(rand_f32()), c = nm_bf16_from_bits(rand_f32());
		m.r[3] = s;
		m.r[4] = c;
		m.r[6] = p;
		m.r[7] = n;
		uint32_t want[BWORDS];
		memcpy(want, m.b, sizeof want);
		for (uint16_t i = 0; i < n; i++)
			want[p + i] = nm_fmac_bits(s, nm_bf16_from_bits(want[p + i]), (uint32_t)c << 16);
		run(&m);
		assert_memory_equal(m.b, want, sizeof want);
		assert_int_equal(m.r[6], p);
		assert_int_equal(m.r[7], n);
		assert_int_equal(m.cnt[0], n);
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
		struct pe_model m;
		setup(&m, "cvt.bf r1\nret");
		uint16_t n = (uint16_t)(rng_next() % 300), p = (uint16_t)(rng_next() % 1500);
		uint16_t a = (uint16_t)(rng_next() % 2048); /* wraps modulo AWORDS */
		m.r[1] = a;
		m.r[6] = p;
		m.r[7] = n;
		uint16_t want[AWORDS];
		uint32_t bwant[BWORDS];
		memcpy(want, m.a, sizeof want);
		memcpy(bwant, m.b, sizeof bwant);
		for (uint16_t i = 0; i < n; i++)
			want[(a + i) % AWORDS] = nm_bf16_from_bits(m.b[p + i]);
		run(&m);
		assert_memory_equal(m.a, want, sizeof want);
		assert_memory_equal(m.b, bwant, sizeof bwant);
		assert_int_equal(m.cnt[0], 0);
		pe_model_free(&m);
	}
}

/* GELU on a B range through the table in B, then to A: the forward's fc epilogue. */
static void test_vlut(void **state)
{
	(void)state;
	for (int k = 0; k < 20; k++) {
		struct pe_model m;
		setup(&m, "vlut r2\ncvt.bf r1\nret");
		int deriv = k & 1;
		uint16_t tab = (uint16_t)(1024 + rng_next() % 700), n = (uint16_t)(rng_next() % 400);
		uint16_t p = (uint16_t)(rng_next() % 600);
		nm_gelu_table(m.b + tab, deriv);
		m.r[1] = 0;
		m.r[2] = tab;
		m.r[6] = p;
		m.r[7] = n;
		uint32_t want[BWORDS];
		uint16_t awant[AWORDS];
		memcpy(want, m.b, sizeof want);
		memcpy(awant, m.a, sizeof awant);
		for (uint16_t i = 0; i < n; i++) {
			want[p + i] = deriv ? nm_gelu_grad_lut_bits(want[p + i])
					    : nm_gelu_lut_bits(want[p + i]);
			awant[i] = nm_bf16_from_bits(want[p + i]);
		}
		run(&m);
		assert_memory_equal(m.b, want, sizeof want);
		assert_memory_equal(m.a, awant, sizeof awant);
		assert_int_equal(m.cnt[0], n);
		pe_model_free(&m);
	}
	/* A random table: the entry's halves are slope and intercept. */
	struct pe_model m;
	setup(&m, "vlut r5\nret");
	m.r[5] = 1500;
	m.r[6] = 0;
	m.r[7] = 1000;
	uint32_t want[BWORDS];
	memcpy(want, m.b, sizeof want);
	for (unsigned i = 0; i < 1000; i++)
		want[i] = nm_lut_bits(m.b + 1500, want[i]);
	run(&m);
	assert_memory_equal(m.b, want, sizeof want);
	pe_model_free(&m);
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

/* r7 = 0, and the reserved encodings (xop 6, 7): nothing but vsum2's two +0 words. */
static void test_empty_and_reserved(void **state)
{
	(void)state;
	struct pe_model m;
	setup(&m, "vfma r3, r4\nvlut r2\ncvt.bf r1\n.word 0xf030\n.word 0xf038\n"
		  "vsum2 r5\nret");
	m.r[5] = 9;
	uint32_t b[BWORDS];
	uint16_t a[AWORDS], r[8];
	memcpy(b, m.b, sizeof b);
	memcpy(a, m.a, sizeof a);
	b[9] = 0;
	b[10] = 0;
	memcpy(r, m.r, sizeof r);
	run(&m);
	assert_memory_equal(m.b, b, sizeof b);
	assert_memory_equal(m.a, a, sizeof a);
	assert_memory_equal(m.r, r, sizeof r);
	pe_model_free(&m);
}

int main(void)
{
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 1;
	printf("seed %llu (set TEST_SEED to replay)\n", (unsigned long long)seed);
	rng_state = seed * 0x9e3779b97f4a7c15ull;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vfma),
		cmocka_unit_test(test_vsum2),
		cmocka_unit_test(test_cvt_bf),
		cmocka_unit_test(test_vlut),
		cmocka_unit_test(test_rsqrt),
		cmocka_unit_test(test_empty_and_reserved),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
