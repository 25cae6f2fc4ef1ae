// tb_pe_micro_mt - tb_pe (against verif/models/pe_model.c) with PE 0 of a pe_micro_mt (in
// pe_micro_mt_solo: three PEs on one micro-machine, the other two idle) as the DUT: the same
// scenarios and comparisons as tb_pe_lite (no zero-dead-cycle assertion), with config read
// timeouts and liveness bounds for a PE that runs in micro-code and issues every third cycle.
#define TB_PE_LITE 1
#define TB_PE_MICRO_MT 1
#define TB_SLOW 24
#define TB_VEC 0 // pe_micro_mt has no vector group
#include "tb_pe.cpp"
