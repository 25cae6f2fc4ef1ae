; vec_ln_bwd_d.s - fw/vec_ln_bwd.s for `pe`: the two sums s1 = vdot(1, g) and s2 =
; vdot(z, g) as one `vdot2` (docs/architecture.md 4.4), their four chains interleaved in the
; cycles vdot takes for one (2 an element where two vdots take 4). The same entry, block,
; results and scratch (B[T], B[T+1] as vec_ln_bwd.s leaves them: vdot2's s chains are
; fmac(1.0, bf16(g), s), vdot's against the ones, which must hold 1.0); the driver loads it
; in place of vec_ln_bwd on `pe` (pe_lite does not decode vdot2). Started like vec_ln_bwd.s
; (payload low half = P, the parameter block). vec_ln_bwd.s, its two vdots one vdot2:
;
; vec_ln_bwd.s - layernorm backward on the PE (docs/resident-step.md), the inverse of
; vec_ln_fwd.s: from the gradient dy of every token's output (B, fp32) and the stashed z
; (A, bf16) and r (A, bf16), it accumulates the parameter gradients dgamma += z*dy and
; dbeta += dy (B, fp32) and the input's gradient into the residual stream's gradient dx
; (B, fp32). Started like ln_fwd (payload low half = P, the parameter block). Per token,
; with g_j = fmac(gamma_j, bf16(dy_j), 0), s1 = vdot(1, g), s2 = vdot(z, g):
;   a = -bf16(fmac(r, bf16(fmac(1/C, bf16(s1), 0)), 0)), b likewise from s2
;   u_j = fmac(b, z_j, fmac(r, bf16(g_j), a)), dx_j = fmac(1, bf16(u_j), dx_j)
; (nm_ln_bwd_bits). The task first zeroes B[ZERO .. ZERO+C). Registers: r1 = t*C,
; r3 = tokens left; the others are scratch.

.include "vec_ln_bwd_head.inc"
	addi r5, r4, P_Z
	ldb r5, [r5]
	add r5, r5, r1
	addi r4, r4, P_T
	ldb r4, [r4]
	vdot2 r4, r5		; B[T] = s1, B[T+1] = s2 (over B[S..], r6 = S)
	add r6, r4, r0		; r6 = T
.include "vec_ln_bwd_tail.inc"
