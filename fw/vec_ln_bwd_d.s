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

.equ P_C, 0		; features a token
.equ P_G, 1		; A: gamma (bf16)
.equ P_ONES, 2		; A: C elements of 1.0
.equ P_S, 3		; B: scratch, C words
.equ P_T, 4		; B: scratch, 2 words
.equ P_AM, 5		; A: scratch, 2 elements
.equ P_INVC, 6		; bf16(1/C)
.equ P_ZERO, 7		; B: C words the task zeroes
.equ P_DY, 8		; B: token 0's dy; token t at DY + t*C
.equ P_Z, 9		; A: token 0's z
.equ P_R, 10		; A: token 0's r; token t at R + t
.equ P_DX, 11		; B: token 0's dx (accumulated)
.equ P_DG, 12		; B: dgamma (accumulated)
.equ P_DB, 13		; B: dbeta (accumulated)
.equ P_N, 14		; tokens
.equ NEG, 0x8000

.entry ln_bwd
ln_bwd:	wlo r5
	addi r4, r5, P_ZERO
	ldb r6, [r4]
	addi r4, r5, P_C
	ldb r7, [r4]
	fill
	add r1, r0, r0
	addi r4, r5, P_N
	ldb r3, [r4]
	bne r3, r0, lb_tok
	ret
lb_tok:	wlo r5
	addi r4, r5, P_C
	ldb r7, [r4]
	addi r4, r5, P_DG
	ldb r6, [r4]
	addi r4, r5, P_Z
	ldb r4, [r4]
	add r4, r4, r1		; r4 = z_t
	addi r5, r5, P_DY
	ldb r5, [r5]
	add r5, r5, r1		; r5 = dy_t
	vmac r6, r4, r5		; dgamma += z * dy
	wlo r4
	addi r4, r4, P_DB
	ldb r6, [r4]
	wlo r4
	addi r4, r4, P_ONES
	ldb r4, [r4]
	vmac r6, r4, r5		; dbeta += dy
	wlo r4
	addi r2, r4, P_ZERO
	ldb r2, [r2]
	addi r6, r4, P_S
	ldb r6, [r6]
	addi r4, r4, P_G
	ldb r4, [r4]
	vmac r2, r4, r5		; B[S+j] = g_j = fmac(gamma_j, bf16(dy_j), 0)
	wlo r4
	addi r5, r4, P_Z
	ldb r5, [r5]
	add r5, r5, r1
	addi r4, r4, P_T
	ldb r4, [r4]
	vdot2 r4, r5		; B[T] = s1, B[T+1] = s2 (over B[S..], r6 = S)
	add r6, r4, r0		; r6 = T
	addi r7, r0, 2
	wlo r4
	addi r4, r4, P_INVC
	ldb r4, [r4]
	vfma r4, r0		; B[T], B[T+1] = s1/C, s2/C
	wlo r5
	addi r4, r5, P_N
	ldb r4, [r4]
	sub r4, r4, r3		; t
	addi r5, r5, P_R
	ldb r5, [r5]
	add r4, r4, r5
	lda r4, [r4]		; r4 = r
	vfma r4, r0		; B[T], B[T+1] = r s1/C, r s2/C
	wlo r5
	addi r5, r5, P_AM
	ldb r5, [r5]
	cvt.bf r5
	lda r2, [r5]
	li r7, NEG
	xor r2, r2, r7		; r2 = a
	addi r5, r5, 1
	lda r5, [r5]
	xor r5, r5, r7		; r5 = b
	wlo r6
	addi r7, r6, P_C
	ldb r7, [r7]
	addi r6, r6, P_S
	ldb r6, [r6]		; r6 = S, r7 = C
	vfma r4, r2		; B[S+j] = fmac(r, bf16(g_j), a)
	wlo r4
	addi r4, r4, P_Z
	ldb r4, [r4]
	add r4, r4, r1
	vaxpy r5, r4		; B[S+j] = u_j = fmac(b, z_j, B[S+j])
	add r5, r6, r0		; r5 = S
	wlo r4
	addi r6, r4, P_DX
	ldb r6, [r6]
	add r6, r6, r1		; r6 = dx_t
	addi r4, r4, P_ONES
	ldb r4, [r4]
	vmac r6, r4, r5		; dx_j = fmac(1, bf16(u_j), dx_j)
	add r1, r1, r7
	djnz r3, lb_tok
	ret
