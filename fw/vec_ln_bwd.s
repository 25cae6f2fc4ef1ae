; vec_ln_bwd.s - layernorm backward on the PE (docs/resident-step.md), the inverse of
; vec_ln_fwd.s: from the gradient dy of every token's output (B, fp32) and the stashed z
; (A, bf16) and r (A, bf16), it accumulates the parameter gradients dgamma += z*dy and
; dbeta += dy (B, fp32) and the input's gradient into the residual stream's gradient dx
; (B, fp32). Started like ln_fwd (payload low half = P, the parameter block). Per token,
; with g_j = fmac(gamma_j, bf16(dy_j), 0), s1 = vdot(1, g), s2 = vdot(z, g):
;   a = -bf16(fmac(r, bf16(fmac(1/C, bf16(s1), 0)), 0)), b likewise from s2
;   u_j = fmac(b, z_j, fmac(r, bf16(g_j), a)), dx_j = fmac(1, bf16(u_j), dx_j)
; (nm_ln_bwd_bits). The task first zeroes B[ZERO .. ZERO+C). Registers: r1 = z_t
; (Z + t*C), r3 = tokens left; the others are scratch.

.include "vec_ln_bwd_head.inc"
	ldb r4, [r4]
	wlo r5
	addi r5, r5, P_ONES
	ldb r5, [r5]
	vdot r4, r5, r6		; B[T] = s1
	addi r4, r4, 1
	vdot r4, r1, r6		; B[T+1] = s2
	addi r6, r4, -1		; r6 = T
	wlo r5
	addi r5, r5, P_INVC
.include "vec_ln_bwd_tail.inc"
