; vec_gelu.s - GELU forward and backward on the PE (docs/resident-step.md), by the
; piecewise-linear tables of nm_gelu_table in B (GELU and its derivative, 256 words each,
; uploaded by the host). Each task is started like vec_ln_fwd.s's (payload low half = P,
; the parameter block) and works token by token, W elements a token.
;   gelu_fwd: pre (B, fp32, the fc output) -> h_j = bf16(lut_gelu(pre_j)) (A, fc2's input)
;             and the stash d_j = bf16(lut_gelu'(pre_j)) (A); pre is overwritten.
;   gelu_bwd: dh (B, fp32) -> dp_j = bf16(fmac(d_j, bf16(dh_j), 0)) (A, the fc backward's
;             input); dh is overwritten. First zeroes B[ZERO .. ZERO+W).
; (nm_gelu_fwd_bits, nm_gelu_bwd_bits). Registers: r1 = t*W, r3 = tokens left.

.equ P_W, 0		; elements a token
.equ P_N, 1		; tokens
.equ P_TG, 2		; B: the GELU table (gelu_fwd)
.equ P_TD, 3		; B: the derivative's table (gelu_fwd)
.equ P_S, 4		; B: scratch, W words (gelu_fwd) / W words the task zeroes (gelu_bwd)
.equ P_IN, 5		; B: token 0's pre / dh; token t at IN + t*W
.equ P_OUT, 6		; A: token 0's h / dp
.equ P_D, 7		; A: token 0's stashed derivative

.entry gelu_fwd
gelu_fwd:
	wlo r5
	add r1, r0, r0
	addi r4, r5, P_N
	ldb r3, [r4]
	bne r3, r0, gf_tok
	ret
gf_tok:	wlo r5
	addi r4, r5, P_W
	ldb r7, [r4]
	addi r4, r5, P_S
	ldb r6, [r4]		; r6 = S
	addi r4, r5, P_TD
	ldb r4, [r4]
	addi r5, r5, P_IN
	ldb r5, [r5]
	add r5, r5, r1		; r5 = pre_t
	vlut r4, r5		; B[S+j] = lut_gelu'(pre_j)
	wlo r4
	addi r4, r4, P_D
	ldb r4, [r4]
	add r4, r4, r1
	cvt.bf r4		; A[D + t*W + j] = d_j
	add r6, r5, r0		; r6 = pre_t
	wlo r4
	addi r4, r4, P_TG
	ldb r4, [r4]
	vlut r4			; B[pre_t + j] = lut_gelu(pre_j)
	wlo r4
	addi r4, r4, P_OUT
	ldb r4, [r4]
	add r4, r4, r1
	cvt.bf r4		; A[OUT + t*W + j] = h_j
	add r1, r1, r7
	djnz r3, gf_tok
	ret

.entry gelu_bwd
gelu_bwd:
	wlo r5
	addi r4, r5, P_S
	ldb r6, [r4]
	addi r4, r5, P_W
	ldb r7, [r4]
	fill
	add r1, r0, r0
	addi r4, r5, P_N
	ldb r3, [r4]
	bne r3, r0, gb_tok
	ret
gb_tok:	wlo r5
	addi r4, r5, P_W
	ldb r7, [r4]
	addi r4, r5, P_IN
	ldb r6, [r4]
	add r6, r6, r1		; r6 = dh_t
	addi r4, r5, P_D
	ldb r4, [r4]
	add r4, r4, r1		; r4 = d_t
	addi r5, r5, P_S
	ldb r5, [r5]		; r5 = the zeros
	vmac r5, r4, r6		; B[dh_t + j] = fmac(d_j, bf16(dh_j), 0)
	wlo r4
	addi r4, r4, P_OUT
	ldb r4, [r4]
	add r4, r4, r1
	cvt.bf r4		; A[OUT + t*W + j] = dp_j
	add r1, r1, r7
	djnz r3, gb_tok
	ret
