; vec_cvt_bf.s - fw/vec_cvt.s for `pe`: the same entries, blocks and results, but for
; cvt_fbh, two elements a cycle in one pass where vec_cvt.s takes two passes (4.4):
;   cvt_fbh: with SRC, OUT and N*W even, Bh[OUT + i] = A[SRC + i] by one `cpa` (A's words
;            into B's: bf16(fmac(x, 1.0, +0)) is x for every x but a NaN), B[DST ..] is not
;            written; otherwise widened by one `vmul` over the N*W elements, then packed.
; cvt_fbh's rows at ONES and ZERO must hold 1.0 and +0 (not read). The driver loads it in
; place of vec_cvt on `pe` (pe_lite decodes neither vmul nor cpa). Started like vec_cvt.s
; (payload low half = P, the block).

.equ ONE, 0x3f80
.include "vec_cvt_head.inc"
cv_4:	xor r6, r6, r1		; cvt_f: r4 = 1, cvt_fbh: 2 (rows W apart);
	xor r1, r1, r6		; r6 = the B rows, r1 the A rows
	xor r6, r6, r1
	addi r4, r4, -1
	bne r4, r0, fb_all
	ldb r4, [r5]		; cvt_f: r4 = the ones, r5 = the zeros, r2 = SS
	addi r5, r5, 1
	ldb r5, [r5]
cf_tok:	vmac r5, r1, r4		; B[r6 + j] = fmac(A[r1 + j], bf16(B[ONES + j]), B[ZERO + j])
	add r6, r6, r2
	add r1, r1, r2
	djnz r3, cf_tok
	ret
fb_all:	mul r7, r7, r3		; cvt_fbh: the N*W elements at once
	addi r4, r5, 2		; P_OUT (r5 = the P_ONES word)
	ldb r4, [r4]		; r4 = OUT
	addi r3, r0, 1
	or r2, r4, r1
	or r2, r2, r7
	and r2, r2, r3
	bne r2, r0, fb_w	; an odd SRC, OUT or N*W: widened, then packed
	shr r7, r7, r3
	shr r6, r4, r3
	cpa r1			; B[OUT/2 + m] = A word SRC/2 + m: Bh[OUT + i] = A[SRC + i]
	ret
fb_w:	li r2, ONE
	vmul r2, r1		; B[r6 + i] = fmac(A[r1 + i], 1.0, +0)
	jmp cv_bh		; Bh[OUT + i] = bf16(B[r6 + i])

.include "vec_cvt_tail.inc"
