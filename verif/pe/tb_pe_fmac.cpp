// tb_pe_fmac - rtl/pe/pe_fmac.v against nm_fmac_bits / nm_add_bits, every result compared.
//
// One operation enters per cycle (random idle cycles too); results are checked FmacLatency
// cycles later against a queue of expected values. Operands mix uniform random bits with
// the cases that break floating-point datapaths: signed zeros, subnormals, infinities, NaNs,
// extreme exponents (overflow and flush), accumulators aligned close to the product (ties,
// sticky bits, cancellation), exact negation (zero sums).
#include "Vpe_fmac.h"
#include "verilated.h"

#include <deque>
#include <vector>

#include "tb_common.h"

extern "C" {
#include "common/numerics.h"
}

static const unsigned kLatency = 4;

#include "fmac_ops.h"

int main(int argc, char **argv)
{
	TbArgs args(argc, argv, 2000000);
	TbRng rng(args.seed);
	VerilatedContext ctx;
	ctx.commandArgs(argc, argv);
	Vpe_fmac dut(&ctx);

	struct Exp {
		uint64_t cycle;
		Op op;
		uint32_t y;
	};
	std::deque<Exp> pending;
	uint64_t sent = 0, checked = 0, failed = 0, cycle = 0;
	const uint64_t timeout = args.n * 2 + 1000;

	dut.clk_i = 0;
	dut.rst_ni = 0;
	dut.valid_i = 0;
	dut.eval();
	for (int i = 0; i < 3; i++) {
		dut.clk_i = 1; dut.eval(); dut.clk_i = 0; dut.eval();
	}
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
	while (checked < total) {
		if (cycle > timeout + directed.size()) {
			printf("FAIL: timeout at cycle %" PRIu64 "\n", cycle);
			failed++;
			break;
		}
		// drive inputs for this cycle
		bool issue = sent < total && !rng.chance(3);
		Op op{};
		if (issue)
			op = sent < directed.size() ? directed[sent] : rand_op(rng);
		dut.valid_i = issue;
		dut.add_i = op.add;
		dut.a_i = op.a;
		dut.b_i = op.b;
		dut.c_i = op.c;
		dut.eval();
		// check outputs visible in this cycle
		if (dut.valid_o) {
			if (pending.empty()) {
				printf("FAIL cycle %" PRIu64 ": valid_o with nothing outstanding\n", cycle);
				failed++;
				break;
			}
			Exp e = pending.front();
			pending.pop_front();
			if (cycle - e.cycle != kLatency) {
				printf("FAIL cycle %" PRIu64 ": latency %" PRIu64 " != %u\n", cycle,
				       cycle - e.cycle, kLatency);
				failed++;
			} else if (dut.y_o != e.y) {
				if (failed < 10)
					printf("FAIL cycle %" PRIu64 ": %s a=%08x b=%04x c=%08x: "
					       "expected %08x got %08x\n",
					       cycle, e.op.add ? "add" : "fmac", e.op.a, e.op.b, e.op.c, e.y,
					       dut.y_o);
				failed++;
			}
			checked++;
		} else if (!pending.empty() && cycle - pending.front().cycle >= kLatency) {
			printf("FAIL cycle %" PRIu64 ": missing valid_o\n", cycle);
			failed++;
			break;
		}
		if (issue) {
			pending.push_back({ cycle, op, expect(op) });
			sent++;
		}
		dut.clk_i = 1;
		dut.eval();
		dut.clk_i = 0;
		dut.eval();
		cycle++;
		if (failed >= 10) break;
	}
	dut.final();
	printf("pe_fmac: %" PRIu64 " operations checked, %" PRIu64 " mismatches, %" PRIu64
	       " cycles\n", checked, failed, cycle);
	return tb_result(failed ? 0 : 1, failed ? 1 : 0);
}
