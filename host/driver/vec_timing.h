/*
 * vec_timing.h - the cycles of a vector program task on `pe` (rtl/pe/pe_seq.v, pe_vec.v),
 * for the cpu backend's estimate of csd_run_program (docs/driver.md; cycles of `pe`:
 * docs/implementations.md).
 *
 * The program's own instructions are run on one PE's registers with the timing of `pe`:
 * scalar instructions one cycle (li two), an engine instruction one cycle to hand over and
 * its engine cycles, each element issued by pe_vec's rules (the read-after-write interlock
 * against the B writes in flight, vmac's and vlut's bank rules, vdot's, vsum2's and vsum4's
 * chains, cvt.bf's and cvt.bh's read-modify-writes, scalar B accesses waiting for no B write
 * in flight). Only addresses and loop counts decide the timing, so the SRAM is not modelled:
 * ldb of the parameter block gives the block's words (as the task's stb left them), every
 * other load 0 (and wcol 0).
 * One exception: vlut's table word is taken in the bank of the table's first word (a table
 * across the bank boundary would make the timing depend on the data). vlut.bf and vlut.a
 * skip the table copy when the lookup RAM holds their table (t->lut, then each B write
 * the program's instructions make, by address). Every PE runs the
 * same task on the same addresses, so one PE's cycles are the mesh's.
 * Not public.
 */
#ifndef CS_VEC_TIMING_H
#define CS_VEC_TIMING_H

#include <stddef.h>
#include <stdint.h>

/* pe_vec.v's lookup RAM: slot k holds the table copied from B word tag[k] (modulo BWords)
 * when valid[k]; a B write into [tag[k], tag[k] + 256) clears valid[k]; a copy goes to
 * slot lru (the one used less recently). */
struct vt_lut {
	int valid[2];
	uint32_t tag[2];
	int lru;
};

struct vt_task {
	const uint16_t *imem; /* the overlay's instructions, at IMEM words [base, base + n) */
	int base, n_instr;
	int pc;               /* the entry (absolute) */
	uint32_t w;           /* the starting wavelet's payload (the programs: {0, block}) */
	uint32_t block;       /* B word of the parameter block */
	const uint16_t *params;
	int n_params;
	uint32_t a_words, b_words; /* powers of two */
	struct vt_lut lut;         /* the lookup RAM as the task starts */
};

struct vt_result {
	uint64_t cycles; /* from the task's first instruction to its ret, both included */
	uint64_t drain;  /* cycles after the ret until the last B write of the engine lands */
	uint64_t macs;   /* MAC-busy cycles (mac_busy: a cycle issuing two MACs counts once) */
	uint64_t instrs; /* instructions executed */
	struct vt_lut lut; /* the lookup RAM after the task's writes */
};

/* A B write of words [lo, lo + n) (modulo b_words) clears lut when it hits its table. */
void vt_lut_write(struct vt_lut *lut, uint32_t b_words, uint64_t lo, uint64_t n);

/* 0, or CS_ERR_NOT_SUPPORTED (an instruction the vector programs do not use: send, axpy,
 * dot, redv, sendv) / CS_ERR_INVALID (no ret within the limit, or a pc outside the
 * overlay), with err. */
int vt_run(const struct vt_task *t, struct vt_result *r, char *err, size_t errlen);

#endif /* CS_VEC_TIMING_H */
