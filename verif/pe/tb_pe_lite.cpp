// tb_pe_lite - tb_pe (rtl/pe/pe_lite.v against verif/models/pe_model.c) with pe_lite as the
// DUT: the same scenarios and comparisons; only the fast PE's zero-dead-cycle assertion is
// left out (pe_lite is multi-cycle by design).
#define TB_PE_LITE 1
#include "tb_pe.cpp"
