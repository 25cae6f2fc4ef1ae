// tb_sram_1r1w - rtl/sram/sram_1r1w.v against a C array: random reads and writes, same-address
// collisions (read returns the old word), read data held while re_i is low.
#include "Vsram_1r1w.h"
#include "verilated.h"

#include <vector>

#include "tb_common.h"

int main(int argc, char **argv)
{
	TbArgs args(argc, argv, 200000);
	TbRng rng(args.seed);
	VerilatedContext ctx;
	ctx.commandArgs(argc, argv);
	Vsram_1r1w dut(&ctx);
	const unsigned depth = 256; // the bench's build sets Depth=256 Width=32
	std::vector<uint32_t> mem(depth, 0);
	std::vector<bool> known(depth, false);
	uint32_t exp_rd = 0;
	bool exp_known = false;
	uint64_t checks = 0, failed = 0;

	dut.clk_i = 0;
	dut.we_i = 0;
	dut.re_i = 0;
	dut.eval();
	for (uint64_t cyc = 0; cyc < args.n && failed < 10; cyc++) {
		if (exp_known) {
			checks++;
			if (dut.rdata_o != exp_rd) {
				printf("FAIL cycle %" PRIu64 ": rdata expected %08x got %08x\n", cyc, exp_rd,
				       dut.rdata_o);
				failed++;
			}
		}
		bool we = rng.chance(50), re = rng.chance(60);
		uint32_t wa = rng.below(depth), ra = rng.chance(20) ? wa : rng.below(depth);
		uint32_t wd = rng.u32();
		dut.we_i = we;
		dut.waddr_i = wa;
		dut.wdata_i = wd;
		dut.re_i = re;
		dut.raddr_i = ra;
		dut.eval();
		dut.clk_i = 1;
		dut.eval();
		dut.clk_i = 0;
		dut.eval();
		if (re) { // read before write
			exp_rd = mem[ra];
			exp_known = known[ra];
		}
		if (we) {
			mem[wa] = wd;
			known[wa] = true;
		}
	}
	dut.final();
	printf("sram_1r1w: %" PRIu64 " reads checked\n", checks);
	return tb_result(failed ? 0 : 1, failed ? 1 : 0);
}
