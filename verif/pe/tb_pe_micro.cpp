// tb_pe_micro - tb_pe (against verif/models/pe_model.c) with pe_micro (in pe_micro_solo, with
// its own FPU) as the DUT: the same scenarios and comparisons; like tb_pe_lite without the fast
// PE's zero-dead-cycle assertion, and with config read timeouts for a PE that serves config
// in micro-code (several cycles a word).
#define TB_PE_LITE 1
#define TB_PE_MICRO 1
#define TB_SLOW 8
#include "tb_pe.cpp"
