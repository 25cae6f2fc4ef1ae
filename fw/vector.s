; vector.s - the PE task programs of the resident step's vector phases
; (docs/resident-step.md). Each runs over the tokens of its PE; the host starts it like a
; kernel's control task and waits with SYNC.
;
; ln_fwd: layernorm of every token of the residual stream into the next kernel's input.
; In: r1 = B address of token 0's x (fp32, C words a token), r2 = A address of token 0's
; output (bf16, C elements a token), r3 = tokens. Fixed layout (.equ below): gamma at A[G]
; (bf16), beta at B[BE] (fp32), B[S .. S+C) and B[T .. T+3) scratch, A[AM] scratch.
; Per token, with s, q = vsum2(x):
;   m = fmac(1/C, bf16(s), 0), e2 = fmac(1/C, bf16(q), 0), mb = bf16(m)
;   v = fmac(1, bf16(fmac(-mb, mb, e2)), eps), r = rsqrt(v), sh = -bf16(fmac(r, mb, 0))
;   y_j = bf16(fmac(gamma_j, bf16(fmac(r, bf16(x_j), sh)), beta_j))
; (nm_ln_fwd_bits). r1 and r2 advance by C a token; r3 ends at 0.
;
; The host writes the parameter block (low halves of B words from P) and starts the task
; with P in the payload's low half; the task reads it again with wlo whenever it needs a
; register back.
.equ P_C, 0		; features a token
.equ P_G, 1		; A address of gamma
.equ P_BE, 2		; B address of beta
.equ P_S, 3		; B scratch, C words
.equ P_T, 4		; B scratch, 3 words
.equ P_AM, 5		; A scratch, 1 element
.equ P_INVC, 6		; bf16(1/C)
.equ P_EPS, 7		; bf16 epsilon
.equ P_X, 8		; B address of token 0's x
.equ P_Y, 9		; A address of token 0's output
.equ P_N, 10		; tokens
.equ NEG, 0x8000
.equ ONE, 0x3f80

.entry ln_fwd
ln_fwd:	wlo r5
	addi r4, r5, P_X
	ldb r1, [r4]
	addi r4, r5, P_Y
	ldb r2, [r4]
	addi r4, r5, P_N
	ldb r3, [r4]
	bne r3, r0, ln_tok
	ret
ln_tok:	wlo r5
	addi r4, r5, P_T
	ldb r4, [r4]		; r4 = T
	addi r6, r5, P_C
	ldb r7, [r6]
	add r6, r1, r0
	vsum2 r4		; B[T] = s, B[T+1] = q
	add r6, r4, r0		; r6 = T
	li r7, 1
	addi r4, r5, P_INVC
	ldb r4, [r4]
	vfma r4, r0		; B[T] = m
	addi r6, r6, 1
	vfma r4, r0		; B[T+1] = e2
	addi r6, r6, -1
	addi r4, r5, P_AM
	ldb r4, [r4]
	cvt.bf r4		; A[AM] = mb
	lda r5, [r4]
	li r7, NEG
	xor r5, r5, r7
	sta r5, [r4]		; A[AM] = -mb
	li r7, 1
	add r5, r6, r0		; r5 = T
	addi r6, r6, 1
	vmac r6, r4, r5		; B[T+1] = fmac(-mb, mb, e2): the variance
	wlo r5
	addi r5, r5, P_EPS
	ldb r5, [r5]
	li r4, ONE
	vfma r4, r5		; B[T+1] = fmac(1, bf16(var), eps)
	rsqrt r4, [r6]		; r4 = r
	addi r5, r6, -1		; r5 = T
	addi r6, r6, 1		; r6 = T+2
	vfma r4, r0, r5		; B[T+2] = fmac(r, mb, 0)
	wlo r5
	addi r5, r5, P_AM
	ldb r5, [r5]
	cvt.bf r5
	lda r5, [r5]
	li r7, NEG
	xor r5, r5, r7		; sh = -bf16(m r)
	wlo r6
	addi r7, r6, P_C
	ldb r7, [r7]
	addi r6, r6, P_S
	ldb r6, [r6]
	vfma r4, r5, r1		; B[S+j] = fmac(r, bf16(x_j), sh)
	wlo r5
	addi r4, r5, P_BE
	ldb r4, [r4]
	addi r5, r5, P_G
	ldb r5, [r5]
	vmac r4, r5, r6		; B[S+j] = fmac(gamma_j, bf16(z_j), beta_j)
	cvt.bf r2		; A[y+j] = bf16
	add r1, r1, r7
	add r2, r2, r7
	djnz r3, ln_tok
	ret
