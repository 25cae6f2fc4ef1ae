// tb_pe_micro_mt - tb_pe (against verif/models/pe_model.c) with PE 0 of a pe_micro_mt (in
// pe_micro_mt_solo: three PEs on one micro-machine, the other two idle) as the DUT: the same
// scenarios and comparisons as tb_pe_lite (no zero-dead-cycle assertion), with config read
// timeouts and liveness bounds for a PE that runs in micro-code and issues every third cycle.
// The compare reads A and B from PE 0's memory M (verif/pe/tb_pe_micro_mt.vlt keeps its
// array visible) and a 64-word window of each through the config port, which must match;
// the last scenario reads all of A and B through the port (TB_BACKDOOR in tb_pe.cpp).
#define TB_PE_LITE 1
#define TB_PE_MICRO_MT 1
#define TB_SLOW 24
#define TB_VEC 0 // pe_micro_mt has no vector group
#define TB_BACKDOOR 1
#include <cstdint>
#include <vector>
#include "Vpe_micro_mt_solo.h"
#include "Vpe_micro_mt_solo___024root.h"

// n words of A (target 0) or B (1) as the config port reads them: M holds A's elements at
// 0 .. 2 AWords / 2 - 1 and B's halves above them, a word's low half at the even address
// (pe_micro_mt's m_cfga).
static std::vector<uint32_t> tb_backdoor(Vpe_micro_mt_solo *dut, unsigned target, unsigned n)
{
	const auto &m = dut->rootp
		->pe_micro_mt_solo__DOT__u_pes__DOT__g_pe__BRA__0__KET____DOT__u_m__DOT__g_array__DOT__mem_q;
	const unsigned half = 32768 / 2, base = target ? half : 0;
	std::vector<uint32_t> v(n);
	for (unsigned i = 0; i < n; i++)
		v[i] = (uint32_t)m[base + 2 * i] | (uint32_t)m[base + 2 * i + 1] << 16;
	return v;
}
#include "tb_pe.cpp"
