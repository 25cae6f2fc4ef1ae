// tb_pe_tiny_fmac - rtl/pe/pe_tiny_fmac.v (bit-serial) against nm_fmac_bits / nm_add_bits:
// tb_pe_lite_fmac's harness (the same operands, directed cases and checks, every result
// compared) with this DUT and its own latency bound.
#include "Vpe_tiny_fmac.h"
#define TB_FMAC_DUT Vpe_tiny_fmac
#define TB_FMAC_NAME "pe_tiny_fmac"
// per operation: load 2, align <= 32, add and negate 2 x 29, round <= 29, pack and done 2
#define TB_FMAC_MAX_CYCLES 140
#include "tb_pe_lite_fmac.cpp"
