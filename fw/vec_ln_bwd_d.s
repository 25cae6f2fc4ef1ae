; vec_ln_bwd_d.s - fw/vec_ln_bwd.s for `pe`: the two sums s1 = vdot(1, g) and s2 =
; vdot(z, g) as one `vdot4` (docs/architecture.md 4.4), four chains a sum on pe's two FMACs,
; one element a cycle where two vdots take 4. The same entry, block and scratch (B[T], B[T+1]
; as vec_ln_bwd.s leaves them, the ones holding 1.0); s1 and s2 are summed in vdot4's order
; (nm_ln_bwd_chains_bits with 4 chains). The driver loads it in place of vec_ln_bwd on `pe`
; (pe_lite does not decode vdot4). Started like vec_ln_bwd.s (payload low half = P, the
; parameter block). The algorithm and registers: fw/vec_ln_bwd.s's header.

.include "vec_ln_bwd_head.inc"
	ldb r4, [r4]
	vdot4 r4, r1		; B[T] = s1, B[T+1] = s2 (over B[S..], r6 = S)
	add r6, r4, r0		; r6 = T
.include "vec_ln_bwd_tail.inc"
