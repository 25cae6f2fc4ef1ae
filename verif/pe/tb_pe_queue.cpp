// tb_pe_queue - rtl/pe/pe_queue.v (4 queues x 8) against a C model (one deque per queue and
// the color -> queue map): random pushes on random colors, random pops, map rewrites; every
// cycle compares per-color ready, rx_ready and every queue's head; no wavelet lost,
// duplicated or reordered.
#include "Vpe_queue.h"
#include "verilated.h"

#include <deque>

#include "tb_common.h"

int main(int argc, char **argv)
{
	TbArgs args(argc, argv, 500000);
	TbRng rng(args.seed);
	VerilatedContext ctx;
	ctx.commandArgs(argc, argv);
	Vpe_queue dut(&ctx);
	const unsigned nq = 4, depth = 8;
	std::deque<uint64_t> q[nq];
	unsigned map[16];
	for (unsigned c = 0; c < 16; c++) map[c] = (c == 0 ? 0 : c <= 2 ? 1 : c <= 4 ? 2 : 3) % nq;
	uint64_t failed = 0, pushes = 0, pops = 0, seq = 0;

	dut.clk_i = 0;
	dut.rst_ni = 0;
	dut.rx_valid_i = 0;
	dut.pop_i = 0;
	dut.map_we_i = 0;
	dut.eval();
	dut.clk_i = 1; dut.eval(); dut.clk_i = 0; dut.eval();
	dut.rst_ni = 1;
	dut.eval();
	unsigned push_pct = 50, pop_pct = 50;
	for (uint64_t cyc = 0; cyc < args.n && failed < 5; cyc++) {
		if (cyc % 5000 == 0) { // phases: filling, draining, balanced
			push_pct = 20 + rng.below(80);
			pop_pct = 20 + rng.below(80);
		}
		unsigned color = rng.below(16);
		uint64_t data = ((uint64_t)rng.below(2) << 36) | ((uint64_t)color << 32) | (uint32_t)seq;
		bool valid = rng.chance(push_pct);
		dut.rx_valid_i = valid;
		dut.rx_data_i = data;
		// pop a random non-empty queue
		int pq = -1;
		if (rng.chance(pop_pct)) {
			unsigned k0 = rng.below(nq);
			for (unsigned k = 0; k < nq; k++)
				if (!q[(k0 + k) % nq].empty()) { pq = (int)((k0 + k) % nq); break; }
		}
		dut.pop_i = pq >= 0;
		dut.pop_q_i = pq >= 0 ? pq : 0;
		bool mw = rng.chance(1);
		unsigned mc = rng.below(16), mqv = rng.below(nq);
		dut.map_we_i = mw;
		dut.map_addr_i = mc;
		dut.map_wdata_i = mqv;
		dut.eval();
		// compare
		for (unsigned c = 0; c < 16; c++) {
			bool exp = q[map[c]].size() < depth;
			if (((dut.color_ready_o >> c) & 1) != exp) {
				printf("FAIL cycle %" PRIu64 ": color_ready[%u] expected %d\n", cyc, c, exp);
				failed++;
			}
		}
		if (dut.rx_ready_o != (q[map[color]].size() < depth)) {
			printf("FAIL cycle %" PRIu64 ": rx_ready\n", cyc);
			failed++;
		}
		if (dut.map_rdata_o != map[mc]) {
			printf("FAIL cycle %" PRIu64 ": map[%u] expected %u got %u\n", cyc, mc, map[mc],
			       dut.map_rdata_o);
			failed++;
		}
		for (unsigned i = 0; i < nq; i++) {
			bool hv = (dut.head_valid_o >> i) & 1;
			if (hv != !q[i].empty()) {
				printf("FAIL cycle %" PRIu64 ": head_valid[%u]\n", cyc, i);
				failed++;
			} else if (hv) {
				uint64_t hd = 0;
				for (unsigned bit = 0; bit < 37; bit++) {
					unsigned pos = i * 37 + bit;
					hd |= (uint64_t)((dut.head_data_o[pos / 32] >> (pos % 32)) & 1) << bit;
				}
				if (hd != q[i].front()) {
					printf("FAIL cycle %" PRIu64 ": queue %u head expected %010" PRIx64
					       " got %010" PRIx64 "\n", cyc, i, q[i].front(), hd);
					failed++;
				}
			}
		}
		if (dut.empty_o != (q[0].empty() && q[1].empty() && q[2].empty() && q[3].empty())) {
			printf("FAIL cycle %" PRIu64 ": empty_o\n", cyc);
			failed++;
		}
		// model update
		if (valid && dut.rx_ready_o) {
			q[map[color]].push_back(data);
			pushes++;
			seq++;
		}
		if (pq >= 0) {
			q[pq].pop_front();
			pops++;
		}
		if (mw) map[mc] = mqv;
		dut.clk_i = 1; dut.eval(); dut.clk_i = 0; dut.eval();
	}
	dut.final();
	printf("pe_queue: %" PRIu64 " pushes, %" PRIu64 " pops\n", pushes, pops);
	return tb_result(failed ? 0 : 1, failed ? 1 : 0);
}
