// tb_pe_tasktab - rtl/pe/pe_tasktab.v against a C model of the task table and the
// round-robin picker: random queue heads, config writes, block/unblock, pick enables; every
// cycle compares the pick/drop decision, the chosen queue and pc, and a config read.
// Full range: a directed pass first writes every one of the 32 entries (tid = {ctrl, color})
// with a value of its own and reads all back, then looks each up as a queue head; the random
// phase writes, blocks and looks up all 32 tids, so an entry aliased onto another (a table
// that drops the control bit of a tid on any of its paths) shows as a wrong pc, pick or read.
#include "Vpe_tasktab.h"
#include "verilated.h"

#include "tb_common.h"

int main(int argc, char **argv)
{
	TbArgs args(argc, argv, 500000);
	TbRng rng(args.seed);
	VerilatedContext ctx;
	ctx.commandArgs(argc, argv);
	Vpe_tasktab dut(&ctx);
	const unsigned nq = 4;
	uint16_t ent[32] = { 0 };
	unsigned last = nq - 1;
	uint64_t failed = 0, picks = 0, drops = 0;

	dut.clk_i = 0;
	dut.rst_ni = 0;
	dut.cfg_we_i = 0;
	dut.blk_we_i = 0;
	dut.pick_en_i = 0;
	dut.head_valid_i = 0;
	dut.eval();
	dut.clk_i = 1; dut.eval(); dut.clk_i = 0; dut.eval();
	dut.rst_ni = 1;
	dut.eval();
	auto tick = [&]() { dut.clk_i = 1; dut.eval(); dut.clk_i = 0; dut.eval(); };
	// directed: every entry written with a distinct value (valid, unblocked, pc = tid ^ 0xa5),
	// all read back, then each looked up alone on queue 0 (the picker's pointer starts after
	// the last queue, so queue 0 is first)
	for (unsigned t = 0; t < 32; t++) {
		dut.cfg_we_i = 1; dut.cfg_addr_i = t; dut.cfg_wdata_i = 0x200 | ((t ^ 0xa5) & 0xff);
		dut.eval(); tick();
		ent[t] = (uint16_t)(0x200 | ((t ^ 0xa5) & 0xff));
	}
	dut.cfg_we_i = 0;
	for (unsigned t = 0; t < 32; t++) {
		dut.cfg_addr_i = t; dut.eval();
		if (dut.cfg_rdata_o != ent[t]) {
			printf("FAIL directed: entry %u expected %03x got %03x\n", t, ent[t], dut.cfg_rdata_o);
			failed++;
		}
	}
	for (unsigned t = 0; t < 32; t++) {
		dut.head_valid_i = 1; dut.head_tid_i = t; dut.pick_en_i = 1; dut.eval();
		if (!dut.pick_o || dut.drop_o || dut.pick_q_o != 0 || dut.pick_pc_o != (ent[t] & 0xff)) {
			printf("FAIL directed: tid %u expected pick q 0 pc %02x, got pick %d drop %d q %u "
			       "pc %02x\n", t, ent[t] & 0xff, dut.pick_o, dut.drop_o, dut.pick_q_o,
			       dut.pick_pc_o);
			failed++;
		}
		dut.pick_en_i = 0; dut.head_valid_i = 0; dut.eval();
	}
	// block each entry in turn: only that tid stops being runnable
	for (unsigned t = 0; t < 32; t++) {
		dut.blk_we_i = 1; dut.blk_set_i = 1; dut.blk_tid_i = t; dut.eval(); tick();
		dut.blk_we_i = 0;
		for (unsigned u = 0; u < 32; u++) {
			dut.head_valid_i = 1; dut.head_tid_i = u; dut.pick_en_i = 1; dut.cfg_addr_i = u;
			dut.eval();
			unsigned exp = ent[u] | (u == t ? 0x100u : 0);
			if (dut.cfg_rdata_o != exp || (bool)dut.pick_o == (u == t)) {
				printf("FAIL directed: tid %u blocked, entry %u expected %03x pick %d, got %03x "
				       "pick %d\n", t, u, exp, u != t, dut.cfg_rdata_o, dut.pick_o);
				failed++;
			}
		}
		dut.head_valid_i = 0; dut.pick_en_i = 0;
		dut.blk_we_i = 1; dut.blk_set_i = 0; dut.blk_tid_i = t; dut.eval(); tick();
		dut.blk_we_i = 0; dut.eval();
	}
	dut.pick_en_i = 0;
	dut.eval();
	for (uint64_t cyc = 0; cyc < args.n && failed < 5; cyc++) {
		unsigned hv = rng.below(16), tids[nq], htid = 0;
		for (unsigned i = 0; i < nq; i++) {
			// mostly a few colors of either control value (so they hit written entries),
			// else any tid
			tids[i] = rng.chance(70) ? (rng.below(4) | (rng.below(2) << 4)) : rng.below(32);
			htid |= tids[i] << (5 * i);
		}
		bool cw = rng.chance(10), bw = rng.chance(10), en = rng.chance(60), bset = rng.below(2);
		unsigned ca = rng.chance(70) ? (rng.below(4) | (rng.below(2) << 4)) : rng.below(32);
		unsigned cd = rng.below(1024), ra = rng.below(32);
		unsigned bt = rng.chance(70) ? (rng.below(4) | (rng.below(2) << 4)) : rng.below(32);
		if (rng.chance(50)) cd |= 0x200;
		dut.head_valid_i = hv;
		dut.head_tid_i = htid;
		dut.cfg_we_i = cw;
		dut.cfg_addr_i = cw ? ca : ra;
		dut.cfg_wdata_i = cd;
		dut.blk_we_i = bw;
		dut.blk_set_i = bset;
		dut.blk_tid_i = bt;
		dut.pick_en_i = en;
		dut.eval();
		// model decision
		int eq = -1;
		bool epick = false, edrop = false;
		for (unsigned k = 1; k <= nq; k++) {
			unsigned qi = (last + k) % nq;
			if (!((hv >> qi) & 1)) continue;
			uint16_t e = ent[tids[qi]];
			if (!(e & 0x200)) { eq = (int)qi; edrop = en; break; }
			if (!(e & 0x100)) { eq = (int)qi; epick = en; break; }
		}
		if (dut.pick_o != epick || dut.drop_o != edrop ||
		    ((epick || edrop) && (int)dut.pick_q_o != eq) ||
		    (epick && dut.pick_pc_o != (ent[tids[eq]] & 0xff))) {
			printf("FAIL cycle %" PRIu64 ": expected pick %d drop %d q %d pc %02x, got pick %d "
			       "drop %d q %u pc %02x\n", cyc, epick, edrop, eq,
			       eq >= 0 ? ent[tids[eq]] & 0xff : 0, dut.pick_o, dut.drop_o, dut.pick_q_o,
			       dut.pick_pc_o);
			failed++;
		}
		if (!cw && dut.cfg_rdata_o != ent[ra]) {
			printf("FAIL cycle %" PRIu64 ": entry %u expected %03x got %03x\n", cyc, ra, ent[ra],
			       dut.cfg_rdata_o);
			failed++;
		}
		if (epick) picks++;
		if (edrop) drops++;
		if (epick || edrop) last = (unsigned)eq;
		if (cw) ent[ca] = (uint16_t)cd;
		if (bw) ent[bt] = (uint16_t)((ent[bt] & ~0x100u) | (bset ? 0x100u : 0));
		dut.clk_i = 1; dut.eval(); dut.clk_i = 0; dut.eval();
	}
	dut.final();
	printf("pe_tasktab: %" PRIu64 " picks, %" PRIu64 " drops\n", picks, drops);
	return tb_result(failed ? 0 : 1, failed ? 1 : 0);
}
