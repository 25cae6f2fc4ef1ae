// tb_pe_lite_fmac - rtl/pe/pe_lite_fmac.v (multi-cycle) against nm_fmac_bits / nm_add_bits,
// every result compared, with a latency report per kind of operation (min/mean/max, random
// operands only). tb_pe_tiny_fmac.cpp includes this harness with its own DUT and bound.
//
// One operation at a time: issued while ready_o (after a random idle gap now and then), its
// result checked on done_o; the operand generators are fmac_ops.h's (shared with
// tb_pe_fmac). Operands mix uniform random bits with the cases that break floating-point
// datapaths: signed zeros, subnormals, infinities, NaNs, extreme exponents (overflow and
// flush), accumulators aligned close to the product (ties, sticky bits, cancellation), exact
// negation (zero sums).
#ifndef TB_FMAC_DUT
#include "Vpe_lite_fmac.h"
#define TB_FMAC_DUT Vpe_lite_fmac
#define TB_FMAC_NAME "pe_lite_fmac"
#define TB_FMAC_MAX_CYCLES 80 // per operation (align + normalize <= 26 + 28)
#endif
#include "verilated.h"

#include <deque>
#include <vector>

#include "tb_common.h"

extern "C" {
#include "common/numerics.h"
}

static const unsigned kMaxCycles = TB_FMAC_MAX_CYCLES;

#include "fmac_ops.h"

int main(int argc, char **argv)
{
	TbArgs args(argc, argv, 2000000);
	TbRng rng(args.seed);
	VerilatedContext ctx;
	ctx.commandArgs(argc, argv);
	TB_FMAC_DUT dut(&ctx);
	// latency of the random operations: [0] fmac, [1] add
	uint64_t k_n[2] = { 0, 0 }, k_sum[2] = { 0, 0 }, k_min[2] = { ~0ull, ~0ull };
	uint64_t k_max[2] = { 0, 0 };
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
		if (checked >= directed.size()) {
			int k = op.add ? 1 : 0;
			k_n[k]++;
			k_sum[k] += lat;
			k_min[k] = lat < k_min[k] ? lat : k_min[k];
			k_max[k] = lat > k_max[k] ? lat : k_max[k];
		}
		checked++;
		tick();
	}
	dut.final();
	printf(TB_FMAC_NAME ": %" PRIu64 " operations checked, %" PRIu64 " mismatches, %" PRIu64
	       " cycles, latency mean %.1f max %" PRIu64 "\n", checked, failed, cycle,
	       checked ? (double)sum_lat / (double)checked : 0.0, max_lat);
	for (int k = 0; k < 2; k++)
		if (k_n[k])
			printf(TB_FMAC_NAME ": %s latency (start to done, random operands) min %" PRIu64
			       " mean %.1f max %" PRIu64 " over %" PRIu64 "\n", k ? "add" : "fmac",
			       k_min[k], (double)k_sum[k] / (double)k_n[k], k_max[k], k_n[k]);
	return tb_result(failed ? 0 : 1, failed ? 1 : 0);
}
