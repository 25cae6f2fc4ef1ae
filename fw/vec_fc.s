; vec_fc.s - the vector work of one fc tile of the resident step (docs/resident-step.md),
; in one overlay so that a tile's calls never switch images: the bias, the stash and GELU
; of the forward, GELU again from the stash in the backward, and GELU's backward with the
; bias gradient and the fc wgrad's packed dY. Each task is started like vec_ln_fwd.s's
; (payload low half = P, the parameter block); the rows of N tokens, W elements a token,
; are contiguous (token t's row at base + t*W in every memory, N*W below 65536), so what
; is elementwise runs over all N*W elements in one instruction and only the steps with a
; per-row operand (a bias, the ones, S) go row by row.
;   fc_gelu_*:   four entries of one loop, each named for the block it takes (the block's
;                MODE, ST and D select the steps; the driver checks they match the entry):
;                MODE 0: pre_j = fmac(1, bf16(b_j), pre_j)              (the bias, bias_fwd)
;                        and, unless ST = 0xffff, A[ST + t*W + j] = bf16(pre_j)  (the stash)
;                MODE 1: pre_j = fmac(A[ST + t*W + j], bf16(1.0), +0)   (the stash widened,
;                        cvt_f against B rows of ones at B and zeros at ZERO)
;                then, unless D = 0xffff, A[D + t*W + j] = bf16(lut_gelu'(pre_j)) (through
;                S), and pre_j = lut_gelu(pre_j), A[OUT + t*W + j] = h_j = bf16(pre_j)
;                (nm_gelu_fwd_bits; D may be the stash row: each row is read first).
;                fc_gelu_sh: MODE 0, stash, no D (the forward of the 7 C stash);
;                fc_gelu_hd: MODE 0, no stash, D (the whole stash's forward, recompute's
;                backward); fc_gelu_h: MODE 0, no stash, no D (recompute's forward);
;                fc_gelu_wd: MODE 1, D (the backward of the 7 C stash).
;   fc_gelu_bwd, fc_cvt: fw/vec_fc_shared.inc; MODE 0's row step: fw/vec_fc_rows.inc.
; The ones in A (MODE 0, fc_gelu_bwd) must hold 1.0 (nm_bias_add_bits).
; Registers: r3 = tokens left, r7 = W (then N*W), r5 = the block; the others are scratch.

.include "vec_fc_rows.inc"
fg_wid:	addi r2, r5, P_B
	ldb r2, [r2]		; r2 = the ones
	addi r4, r5, P_ZERO
	ldb r4, [r4]		; r4 = the zeros
fg_w:	vmac r4, r1, r2		; pre_j = fmac(A[ST + t*W + j], bf16(1.0), +0)
	add r6, r6, r7
	add r1, r1, r7
	djnz r3, fg_w
fg_d:	addi r4, r5, P_D	; GELU' a row at a time, through S
	ldb r1, [r4]
	addi r2, r1, 1
	beq r2, r0, fg_st	; no GELU'
	addi r4, r5, P_N
	ldb r3, [r4]
	addi r2, r5, P_IN
	ldb r2, [r2]
	addi r6, r5, P_S
	ldb r6, [r6]		; r6 = S
	addi r4, r5, P_TD
	ldb r4, [r4]
fg_dt:	vlut r4, r2		; B[S + j] = lut_gelu'(pre_j)
	cvt.bf r1		; A[D + t*W + j] = d_j
	add r2, r2, r7
	add r1, r1, r7
	djnz r3, fg_dt
fg_st:	addi r4, r5, P_N	; the rest over all N*W elements at once
	ldb r3, [r4]
	mul r7, r7, r3
	addi r6, r5, P_IN
	ldb r6, [r6]
	addi r2, r5, P_MODE
	ldb r2, [r2]
	bne r2, r0, fg_h	; MODE 1: the stash is the source
	addi r4, r5, P_ST
	ldb r4, [r4]
	addi r2, r4, 1
	beq r2, r0, fg_h	; no stash
	cvt.bf r4		; A[ST + i] = bf16(pre_i)
fg_h:	addi r4, r5, P_TG
	ldb r4, [r4]
	vlut r4			; pre_i = lut_gelu(pre_i)
	addi r4, r5, P_OUT
	ldb r4, [r4]
	cvt.bf r4		; A[OUT + i] = h_i
	ret

.include "vec_fc_shared.inc"
