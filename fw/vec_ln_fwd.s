; vec_ln_fwd.s - layernorm forward on the PE (docs/resident-step.md): every token of the
; PE's residual stream x (B, fp32) to the next kernel's input y (A, bf16), stashing the
; normalized z (A, bf16) and 1/sigma r (A, bf16) for the backward. One task, `ln_fwd`,
; started by a wavelet whose payload's low half is P, the B address of the parameter
; block (the low halves of B[P + k], k the P_ names below). Per token, with s, q =
; vsum2(x):
;   m = fmac(1/C, bf16(s), 0), e2 = fmac(1/C, bf16(q), 0), mb = bf16(m)
;   r = rsqrt(fmac(1, bf16(fmac(-mb, mb, e2)), eps)), sh = -bf16(fmac(r, mb, 0))
;   z_j = bf16(fmac(r, bf16(x_j), sh)), y_j = bf16(fmac(gamma_j, z_j, beta_j))
; (nm_ln_fwd_bits). Registers: r1 = t*C, r3 = tokens left; the others are scratch.

.equ P_C, 0		; features a token
.equ P_G, 1		; A: gamma (bf16)
.equ P_BE, 2		; B: beta (fp32)
.equ P_S, 3		; B: scratch, C words
.equ P_T, 4		; B: scratch, 3 words
.equ P_AM, 5		; A: scratch, 1 element
.equ P_INVC, 6		; bf16(1/C)
.equ P_EPS, 7		; bf16 epsilon
.equ P_X, 8		; B: token 0's x; token t at X + t*C
.equ P_Y, 9		; A: token 0's y
.equ P_Z, 10		; A: token 0's z
.equ P_R, 11		; A: token 0's r; token t at R + t
.equ P_N, 12		; tokens
.equ NEG, 0x8000
.equ ONE, 0x3f80

.entry ln_fwd
ln_fwd:	wlo r5
	add r1, r0, r0
	addi r4, r5, P_N
	ldb r3, [r4]
	bne r3, r0, ln_tok
	ret
ln_tok:	wlo r5
	addi r4, r5, P_X
	ldb r6, [r4]
	add r6, r6, r1		; r6 = x_t
	addi r4, r5, P_C
	ldb r7, [r4]
	addi r4, r5, P_T
	ldb r4, [r4]
	vsum2 r4		; B[T] = s, B[T+1] = q
	add r6, r4, r0		; r6 = T
	addi r7, r0, 2
	addi r4, r5, P_INVC
	ldb r4, [r4]
	vfma r4, r0		; B[T] = m, B[T+1] = e2
	addi r7, r0, 1
	addi r4, r5, P_AM
	ldb r4, [r4]
	cvt.bf r4		; A[AM] = mb
	lda r5, [r4]
	li r7, NEG
	xor r5, r5, r7
	sta r5, [r4]		; A[AM] = -mb
	addi r7, r0, 1
	add r5, r6, r0		; r5 = T
	addi r6, r6, 1		; r6 = T+1
	vmac r6, r4, r5		; B[T+1] = fmac(-mb, mb, e2): the variance
	wlo r5
	addi r5, r5, P_EPS
	ldb r5, [r5]
	li r4, ONE
	vfma r4, r5		; B[T+1] = fmac(1, bf16(var), eps)
	rsqrt r4, [r6]		; r4 = r
	wlo r5
	addi r2, r5, P_N
	ldb r2, [r2]
	sub r2, r2, r3		; t
	addi r5, r5, P_R
	ldb r5, [r5]
	add r2, r2, r5
	sta r4, [r2]		; A[R + t] = r
	addi r5, r6, -1		; r5 = T
	addi r6, r6, 1		; r6 = T+2
	vfma r4, r0, r5		; B[T+2] = fmac(r, mb, 0)
	wlo r5
	addi r5, r5, P_AM
	ldb r5, [r5]
	cvt.bf r5
	lda r5, [r5]
	li r7, NEG
	xor r5, r5, r7		; r5 = sh
	wlo r6
	addi r2, r6, P_X
	ldb r2, [r2]
	add r2, r2, r1		; r2 = x_t
	addi r7, r6, P_C
	ldb r7, [r7]
	addi r6, r6, P_S
	ldb r6, [r6]		; r6 = S, r7 = C
	vfma r4, r5, r2		; B[S+j] = fmac(r, bf16(x_j), sh)
	wlo r5
	addi r5, r5, P_Z
	ldb r5, [r5]
	add r5, r5, r1
	cvt.bf r5		; A[Z + t*C + j] = z_j
	wlo r5
	addi r4, r5, P_BE
	ldb r4, [r4]
	addi r5, r5, P_G
	ldb r5, [r5]
	vmac r4, r5, r6		; B[S+j] = fmac(gamma_j, z_j, beta_j)
	wlo r5
	addi r5, r5, P_Y
	ldb r5, [r5]
	add r5, r5, r1
	cvt.bf r5		; A[Y + t*C + j] = y_j
	add r1, r1, r7
	djnz r3, ln_tok
	ret
