; vec_cvt_bf.s - fw/vec_cvt.s for `pe`: the same entries, blocks and results, with
; cvt_fbh's widening one `vmul` over all N*W elements (two a cycle, docs/architecture.md
; 4.4) where vec_cvt.s takes a vmac a row against B's rows of 1.0 and +0 (one a cycle: both
; in one bank). cvt_fbh's rows at ONES and ZERO must hold 1.0 and +0 (vec_cvt.s's bits
; with them); they are not read. The driver loads it in place of vec_cvt on `pe` (pe_lite
; does not decode vmul). Started like vec_cvt.s (payload low half = P, the block).

.equ ONE, 0x3f80
.include "vec_cvt_head.inc"
cv_4:	add r2, r4, r0		; cvt_f: 1, cvt_fbh: 2 (rows W apart)
	add r4, r6, r0		; r6 = the B rows, r1 the A rows
	add r6, r1, r0
	add r1, r4, r0
	addi r2, r2, -1
	bne r2, r0, fb_all
	ldb r4, [r5]		; r4 = the ones, r5 = the zeros
	addi r5, r5, 1
	ldb r5, [r5]
	wlo r2
	addi r2, r2, P_SS
	ldb r2, [r2]		; cvt_f: r2 = SS
cf_tok:	vmac r5, r1, r4		; B[r6 + j] = fmac(A[r1 + j], bf16(B[ONES + j]), B[ZERO + j])
	add r6, r6, r2
	add r1, r1, r2
	djnz r3, cf_tok
	ret
fb_all:	mul r7, r7, r3		; cvt_fbh: the N*W elements at once
	li r2, ONE
	vmul r2, r1		; B[r6 + i] = fmac(A[r1 + i], 1.0, +0)
	wlo r5
	addi r4, r5, P_W
	ldb r7, [r4]		; r7 = W (cv_all multiplies by N)
	jmp cv_all

.include "vec_cvt_tail.inc"
