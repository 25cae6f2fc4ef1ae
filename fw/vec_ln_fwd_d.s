; vec_ln_fwd_d.s - fw/vec_ln_fwd.s for `pe`: the sums s, q by one `vsum4` (docs/architecture.md
; 4.4), four chains a sum on pe's two FMACs, one element a cycle where vsum2 takes two. The
; same entry, block and scratch; s and q are summed in vsum4's order (nm_ln_fwd_chains_bits
; with 4 chains), so y, z and r may differ from vec_ln_fwd.s's in the last bits. The driver
; loads it in place of vec_ln_fwd on `pe` (pe_lite does not decode vsum4). The algorithm and
; registers: fw/vec_ln_fwd.s's header.

.include "vec_ln_fwd_head.inc"
	vsum4 r4		; B[T] = s, B[T+1] = q (four chains)
.include "vec_ln_fwd_tail.inc"
