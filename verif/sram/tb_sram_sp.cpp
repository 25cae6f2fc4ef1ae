// tb_sram_sp - rtl/sram/sram_sp.v (the SPRAM-shaped build, 16Kx32 as two 16Kx16 slices)
// against a C array: random reads and writes, read data held across writes and idle cycles.
#include "Vsram_sp.h"
#include "verilated.h"

#include <vector>

#include "tb_common.h"

int main(int argc, char **argv)
{
	TbArgs args(argc, argv, 200000);
	TbRng rng(args.seed);
	VerilatedContext ctx;
	ctx.commandArgs(argc, argv);
	Vsram_sp dut(&ctx);
	const unsigned depth = 8192; // the bench's build sets Depth=8192 Width=32
	std::vector<uint32_t> mem(depth, 0);
	std::vector<bool> known(depth, false);
	uint32_t exp_rd = 0;
	bool exp_known = false;
	uint64_t checks = 0, failed = 0;

	dut.clk_i = 0;
	dut.en_i = 0;
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
		bool en = rng.chance(80), we = rng.chance(50);
		uint32_t a = rng.chance(50) ? rng.below(64) : rng.below(depth), d = rng.u32();
		dut.en_i = en;
		dut.we_i = we;
		dut.addr_i = a;
		dut.wdata_i = d;
		dut.eval();
		dut.clk_i = 1;
		dut.eval();
		dut.clk_i = 0;
		dut.eval();
		if (en && we) {
			mem[a] = d;
			known[a] = true;
		} else if (en) {
			exp_rd = mem[a];
			exp_known = known[a];
		}
	}
	dut.final();
	printf("sram_sp: %" PRIu64 " reads checked\n", checks);
	return tb_result(failed ? 0 : 1, failed ? 1 : 0);
}
