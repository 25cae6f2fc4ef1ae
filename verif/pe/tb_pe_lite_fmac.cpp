// tb_pe_lite_fmac - rtl/pe/pe_lite_fmac.v (multi-cycle) against nm_fmac_bits / nm_add_bits,
// every result compared.
//
// One operation at a time: issued while ready_o (after a random idle gap now and then), its
// result checked on done_o; the operand generators are tb_pe_fmac's. Operands mix uniform random bits with
// the cases that break floating-point datapaths: signed zeros, subnormals, infinities, NaNs,
// extreme exponents (overflow and flush), accumulators aligned close to the product (ties,
// sticky bits, cancellation), exact negation (zero sums).
#include "Vpe_lite_fmac.h"
#include "verilated.h"

#include <deque>
#include <vector>

#include "tb_common.h"

extern "C" {
#include "common/numerics.h"
}

static const unsigned kMaxCycles = 80; // per operation (align + normalize <= 26 + 28)

struct Op {
	bool add;
	uint32_t a;
	uint16_t b;
	uint32_t c;
};

static uint16_t rand_bf16(TbRng &r)
{
	uint32_t sign = r.below(2) << 15;
	switch (r.below(12)) {
	case 0: return (uint16_t)sign; // zero
	case 1: return (uint16_t)(sign | (1 + r.below(127))); // subnormal
	case 2: return (uint16_t)(sign | 0x7f80); // inf
	case 3: return (uint16_t)(sign | 0x7f80 | (1 + r.below(127))); // NaN
	case 4: return (uint16_t)(sign | ((1 + r.below(20)) << 7) | r.below(128)); // tiny
	case 5: return (uint16_t)(sign | ((234 + r.below(21)) << 7) | r.below(128)); // huge
	case 6: // few mantissa bits: exact products with trailing zeros (ties)
		return (uint16_t)(sign | ((100 + r.below(56)) << 7) | (r.below(8) << 4));
	case 7: return (uint16_t)(sign | ((100 + r.below(56)) << 7) | 0x7f); // all ones
	default: return (uint16_t)r.u32();
	}
}

static uint32_t rand_f32_special(TbRng &r, uint32_t sign)
{
	switch (r.below(5)) {
	case 0: return sign;
	case 1: return sign | (1 + r.below(0x7fffff));
	case 2: return sign | 0x7f800000u;
	case 3: return sign | 0x7f800000u | (1 + r.below(0x7fffff));
	default: return sign | 0x00800000u | r.below(4); // smallest normals
	}
}

// An fp32 near value v (bits): exponent moved by k, mantissa random or derived from v.
static uint32_t near_f32(TbRng &r, uint32_t v, int k, bool negate)
{
	int e = (int)((v >> 23) & 0xff) + k;
	if (e < 1) e = 1;
	if (e > 254) e = 254;
	uint32_t m;
	switch (r.below(4)) {
	case 0: m = v & 0x7fffff; break; // same mantissa: cancellation when k == 0
	case 1: m = (v & 0x7fffff) ^ (1u << r.below(23)); break;
	case 2: m = r.below(2) ? 0 : 0x7fffff; break;
	default: m = r.u32() & 0x7fffff; break;
	}
	uint32_t s = (v & 0x80000000u) ^ (negate ? 0x80000000u : 0);
	return s | ((uint32_t)e << 23) | m;
}

static uint32_t bf16_prod_bits(uint16_t a, uint16_t b)
{
	// the exact product rounded to fp32 is enough to aim the accumulator near it
	float p = nm_bf16_to_f32(a) * nm_bf16_to_f32(b);
	return nm_f32_bits(p);
}

static Op rand_op(TbRng &r)
{
	Op op;
	op.add = r.chance(25);
	if (!op.add) {
		op.a = rand_bf16(r);
		op.b = rand_bf16(r);
		uint32_t p = bf16_prod_bits((uint16_t)op.a, op.b);
		switch (r.below(8)) {
		case 0: op.c = rand_f32_special(r, r.below(2) << 31); break;
		case 1: op.c = p ^ 0x80000000u; break; // exact cancellation when p is exact
		case 2: case 3: case 4:
			op.c = near_f32(r, p, (int)r.below(61) - 30, r.below(2)); break;
		case 5: op.c = near_f32(r, p, (int)r.below(5) - 2, true); break;
		default: op.c = r.u32(); break;
		}
		if (((op.c >> 23) & 0xff) == 0xff && r.chance(50))
			op.c = r.u32() & 0xbf7fffffu; // keep specials from dominating
	} else {
		op.b = (uint16_t)r.u32(); // ignored in add mode
		switch (r.below(6)) {
		case 0: op.a = rand_f32_special(r, r.below(2) << 31); op.c = r.u32(); break;
		case 1: op.a = r.u32(); op.c = rand_f32_special(r, r.below(2) << 31); break;
		case 2: op.a = r.u32(); op.c = op.a ^ 0x80000000u; break;
		case 3: case 4:
			op.a = r.u32();
			op.c = near_f32(r, op.a, (int)r.below(61) - 30, r.below(2));
			break;
		default: op.a = r.u32(); op.c = r.u32(); break;
		}
	}
	return op;
}

static uint32_t expect(const Op &op)
{
	return op.add ? nm_add_bits(op.a, op.c) : nm_fmac_bits((uint16_t)op.a, op.b, op.c);
}

int main(int argc, char **argv)
{
	TbArgs args(argc, argv, 2000000);
	TbRng rng(args.seed);
	VerilatedContext ctx;
	ctx.commandArgs(argc, argv);
	Vpe_lite_fmac dut(&ctx);
	uint64_t checked = 0, failed = 0, cycle = 0, max_lat = 0, sum_lat = 0;

	auto tick = [&]() {
		dut.clk_i = 1;
		dut.eval();
		dut.clk_i = 0;
		dut.eval();
		cycle++;
	};
	dut.clk_i = 0;
	dut.rst_ni = 0;
	dut.start_i = 0;
	dut.eval();
	for (int i = 0; i < 3; i++) tick();
	dut.rst_ni = 1;
	dut.eval();

	// Directed operands first: every pair of a few bf16 classes with a few accumulators.
	static const uint16_t dir_b[] = { 0x0000, 0x8000, 0x0001, 0x3f80, 0xbf80, 0x7f80, 0xff80,
					  0x7fc0, 0x7f81, 0x0080, 0x7f7f, 0x3fff, 0x4040, 0x1f80,
					  0x5f80, 0x0100 };
	static const uint32_t dir_c[] = { 0x00000000u, 0x80000000u, 0x00000001u, 0x3f800000u,
					  0xbf800000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
					  0x00800000u, 0x7f7fffffu, 0x33800000u, 0x4b800000u,
					  0xcb800001u, 0x80800000u };
	std::vector<Op> directed;
	for (uint16_t a : dir_b)
		for (uint16_t b : dir_b)
			for (uint32_t c : dir_c) {
				directed.push_back({ false, a, b, c });
				directed.push_back({ true, nm_bf16_to_f32(a) == 0 ? (uint32_t)a << 16
									       : ((uint32_t)a << 16) | b,
						     0, c });
			}

	const uint64_t total = args.n + directed.size();
	while (checked < total && failed < 10) {
		Op op = checked < directed.size() ? directed[checked] : rand_op(rng);
		uint32_t e = expect(op);
		while (rng.chance(3)) tick(); // idle gaps
		if (!dut.ready_o) {
			printf("FAIL cycle %" PRIu64 ": not ready between operations\n", cycle);
			failed++;
			break;
		}
		dut.start_i = 1;
		dut.add_i = op.add;
		dut.a_i = op.a;
		dut.b_i = op.b;
		dut.c_i = op.c;
		dut.eval();
		tick();
		dut.start_i = 0;
		dut.a_i = rng.u32(); // operands are sampled in the start cycle only
		dut.b_i = (uint16_t)rng.u32();
		dut.c_i = rng.u32();
		dut.eval();
		uint64_t lat = 1;
		while (!dut.done_o && lat < kMaxCycles) {
			tick();
			lat++;
		}
		if (!dut.done_o) {
			printf("FAIL cycle %" PRIu64 ": no done_o within %u cycles\n", cycle, kMaxCycles);
			failed++;
			break;
		}
		if (dut.y_o != e) {
			printf("FAIL cycle %" PRIu64 ": %s a=%08x b=%04x c=%08x: expected %08x got %08x\n",
			       cycle, op.add ? "add" : "fmac", op.a, op.b, op.c, e, dut.y_o);
			failed++;
		}
		max_lat = lat > max_lat ? lat : max_lat;
		sum_lat += lat;
		checked++;
		tick();
	}
	dut.final();
	printf("pe_lite_fmac: %" PRIu64 " operations checked, %" PRIu64 " mismatches, %" PRIu64
	       " cycles, latency mean %.1f max %" PRIu64 "\n", checked, failed, cycle,
	       checked ? (double)sum_lat / (double)checked : 0.0, max_lat);
	return tb_result(failed ? 0 : 1, failed ? 1 : 0);
}
