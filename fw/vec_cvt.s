; vec_cvt.s - the conversions between the resident step's kernels (docs/resident-step.md,
; docs/architecture.md 7.5): an fp32 kernel output in B becomes the next kernel's bf16
; input, a bias is added onto an output, a bias gradient gathers a token's gradient. Each
; task is started like vec_ln_fwd.s's (payload low half = P, the parameter block) and works
; token by token over a row of W elements, rows `stride` apart:
;   cvt_a:    A[DST + t*DS + j] = bf16(B[SRC + t*SS + j])           (cvt.bf: a kernel input)
;   cvt_bh:   Bh[DST + t*DS + j] = bf16(B[SRC + t*SS + j])          (cvt.bh: the wgrad's dY)
;   bias_fwd: B[SRC + t*SS + j] = fmac(1, bf16(B[DST + j]), B[SRC + t*SS + j])   (y += b)
;   bias_bwd: B[DST + j] = fmac(1, bf16(B[SRC + t*SS + j]), B[DST + j]), t ascending (db += dy)
;   cvt_f:    B[DST + t*SS + j] = fmac(A[SRC + t*SS + j], bf16(B[ONES + j]), B[ZERO + j])
;             (a bf16 row back to fp32: exact, the ones 1.0 and the zeros +0; with gamma
;             and beta for ONES and ZERO, a layernorm's y before rounding from z,
;             nm_fmac_row_bits; rows SS apart in both memories, DS unused)
;   cvt_fbh:  cvt_f with SS = W (rows contiguous), then Bh[OUT + i] = bf16(B[DST + i]) for
;             i < N*W (below 65536): a gradient down in A becomes the wgrad's packed dY
;   dy_abh, dy_bh: rows contiguous (SS, DS unused): per token the bias gradient
;             B[DB + j] = fmac(1, bf16(B[SRC + t*W + j]), B[DB + j]) (bias_bwd), then for
;             i < N*W (below 65536) A[DST + i] = bf16(B[SRC + i]) (dy_abh; dy_bh: DST =
;             0xffff, no A) and Bh[OUT + i] = bf16(B[SRC + i]): a resident gradient becomes
;             a backward kernel's input, its wgrad's dY and its bias gradient in one call
; The bias programs multiply by an A row of W ones (vmac), which must hold 1.0
; (nm_bias_add_bits). Registers: r1 destination / bias / dy row, r2 SS, r3 tokens left,
; r4 DS or the ones, r6 source / output / bias-gradient row, r7 = W.

.equ P_W, 0		; elements a token
.equ P_N, 1		; tokens
.equ P_SRC, 2		; B: token 0's fp32 row (bias_fwd: the row the bias is added onto;
			; cvt_f: token 0's bf16 row in A)
.equ P_SS, 3		; B words from one token's row to the next
.equ P_DST, 4		; cvt_a: A element, cvt_bh: Bh element of token 0's row; bias, cvt_f: B word
.equ P_DS, 5		; cvt_a, cvt_bh: elements from one token's row to the next
.equ P_ONES, 6		; A: W elements of 1.0 (bias_fwd, bias_bwd); cvt_f: B, W words of 1.0
.equ P_ZERO, 7		; B: W words of +0 (cvt_f)
.equ P_OUT, 8		; cvt_fbh, dy_*: Bh element of the packed rows
.equ P_DB, 9		; dy_*: B, the bias gradient (accumulated)

; Every entry sets its kind in r4 and joins one loader: r3 = N (0: return), r7 = W,
; r6 = SRC, r2 = SS, r1 = DST, r5 = the block's P_DS word (P_ONES is the next); then the
; kind picks the loop (kind - 1 until zero).
.entry cvt_a
cvt_a:	addi r4, r0, 0
	jmp cv_load
.entry cvt_bh
cvt_bh:	addi r4, r0, 1
	jmp cv_load
.entry bias_fwd
bias_fwd:
	addi r4, r0, 2
	jmp cv_load
.entry bias_bwd
bias_bwd:
	addi r4, r0, 3
	jmp cv_load
.entry cvt_fbh
cvt_fbh:
	addi r4, r0, 5
	jmp cv_load
.entry cvt_f
cvt_f:	addi r4, r0, 4
cv_load:
	wlo r5
	addi r1, r5, P_N
	ldb r3, [r1]
	bne r3, r0, cv_go
	ret
cv_go:	addi r1, r5, P_W
	ldb r7, [r1]
	addi r1, r5, P_SRC
	ldb r6, [r1]
	addi r1, r5, P_SS
	ldb r2, [r1]
	addi r1, r5, P_DST
	ldb r1, [r1]
	addi r5, r5, P_DS
	bne r4, r0, cv_1
	ldb r4, [r5]		; cvt_a: r4 = DS
ca_tok:	cvt.bf r1		; A[r1 + j] = bf16(B[r6 + j])
	add r6, r6, r2
	add r1, r1, r4
	djnz r3, ca_tok
	ret
cv_1:	addi r4, r4, -1
	bne r4, r0, cv_2
	ldb r4, [r5]		; cvt_bh: r4 = DS
cb_tok:	cvt.bh r1		; Bh[r1 + j] = bf16(B[r6 + j])
	add r6, r6, r2
	add r1, r1, r4
	djnz r3, cb_tok
	ret
cv_2:	addi r5, r5, 1		; P_ONES
	addi r4, r4, -1
	bne r4, r0, cv_3
	ldb r4, [r5]		; bias_fwd: r4 = the ones, r1 the bias
bf_tok:	vmac r6, r4, r1		; y_j = fmac(1, bf16(b_j), y_j)
	add r6, r6, r2
	djnz r3, bf_tok
	ret
cv_3:	addi r4, r4, -1
	bne r4, r0, cv_4
	ldb r4, [r5]		; bias_bwd: r6 = the bias gradient, r1 the dy rows
	add r5, r6, r0
	add r6, r1, r0
	add r1, r5, r0
bb_tok:	vmac r6, r4, r1		; db_j = fmac(1, bf16(dy_j), db_j)
	add r1, r1, r2
	djnz r3, bb_tok
	ret
cv_4:	add r2, r4, r0		; cvt_f: 1, cvt_fbh: 2 (rows W apart)
	add r4, r6, r0		; r6 = the B rows, r1 the A rows
	add r6, r1, r0
	add r1, r4, r0
	ldb r4, [r5]		; r4 = the ones, r5 = the zeros
	addi r5, r5, 1
	ldb r5, [r5]
	addi r2, r2, -1
	bne r2, r0, fb_tok
	wlo r2
	addi r2, r2, P_SS
	ldb r2, [r2]		; cvt_f: r2 = SS
cf_tok:	vmac r5, r1, r4		; B[r6 + j] = fmac(A[r1 + j], bf16(1.0), +0)
	add r6, r6, r2
	add r1, r1, r2
	djnz r3, cf_tok
	ret
fb_tok:	vmac r5, r1, r4		; cvt_fbh: the rows W apart
	add r6, r6, r7
	add r1, r1, r7
	djnz r3, fb_tok
	wlo r5
	addi r6, r5, P_DST
	ldb r6, [r6]
	jmp cv_all

.entry dy_abh
.entry dy_bh
dy_abh:
dy_bh:	wlo r5
	addi r4, r5, P_N
	ldb r3, [r4]
	bne r3, r0, dy_go
	ret
dy_go:	addi r4, r5, P_W
	ldb r7, [r4]
	addi r4, r5, P_ONES
	ldb r4, [r4]
	addi r1, r5, P_SRC
	ldb r1, [r1]
	addi r6, r5, P_DB
	ldb r6, [r6]
dy_tok:	vmac r6, r4, r1		; db_j = fmac(1, bf16(dy_j), db_j)
	add r1, r1, r7
	djnz r3, dy_tok
	addi r6, r5, P_SRC
	ldb r6, [r6]
	addi r4, r5, P_DST
	ldb r4, [r4]
	addi r2, r4, 1
	beq r2, r0, cv_all	; dy_bh: no A
	addi r2, r5, P_N
	ldb r2, [r2]
	mul r7, r7, r2
	cvt.bf r4		; A[DST + i] = bf16(B[SRC + i]), i < N*W
	addi r4, r5, P_W
	ldb r7, [r4]
; r6 = the B rows, r7 = W, r5 = the block: Bh[OUT + i] = bf16(B[r6 + i]), i < N*W
cv_all:	addi r4, r5, P_N
	ldb r4, [r4]
	mul r7, r7, r4
	addi r4, r5, P_OUT
	ldb r4, [r4]
	cvt.bh r4
	ret
