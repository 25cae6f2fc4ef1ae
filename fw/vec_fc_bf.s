; vec_fc_bf.s - fw/vec_fc.s for `pe`: the vector work of one fc tile of the resident step
; (docs/resident-step.md) with GELU and GELU' written by `vlut.bf` (docs/architecture.md
; 4.4), a table line's bf16 straight into A, so each is one pass over all N*W elements where
; vec_fc.s takes a vlut into B and a cvt.bf, and MODE 1's lookups by `vlut.a`, x read
; straight from the stash in A (as fmac(x, 1.0, +0)) where vec_fc.s widens it by a vmac a row
; against B's rows of 1.0 and +0. The same entries, blocks and results in A; the driver
; loads it in place of vec_fc on `pe` (pe_lite decodes neither). What it leaves in B
; differs: MODE 0's rows keep pre (the bias added), MODE 1's are not written, and the
; scratch S is not written. Started like vec_fc.s (payload low half = P, the block).
;   fc_gelu_*:   MODE 0: pre_j = fmac(1, bf16(b_j), pre_j) row by row, and, unless ST =
;                0xffff, A[ST + i] = bf16(pre_i); then, unless D = 0xffff, A[D + i] =
;                bf16(lut_gelu'(pre_i)), and A[OUT + i] = h_i = bf16(lut_gelu(pre_i));
;                MODE 1: with pre_i = fmac(A[ST + i], 1.0, +0) (the rows of 1.0 at B and +0
;                at ZERO, not read, must hold them: vec_fc.s's bits), first A[OUT + i] = h_i,
;                then, unless D = 0xffff, A[D + i] = bf16(lut_gelu'(pre_i)) (D may be the
;                stash, in place; OUT must not overlap it) (nm_gelu_fwd_bits), i < N*W.
;   fc_gelu_bwd, fc_cvt: fw/vec_fc_bwd_bf.inc; MODE 0's row step: fw/vec_fc_rows.inc.
; The ones in A (MODE 0) must hold 1.0 (nm_bias_add_bits); fc_gelu_bwd here reads none.
; Registers: r3 = tokens left, r7 = W (then N*W), r5 = the block; the others are scratch.

.include "vec_fc_rows.inc"
fg_wid:	mul r7, r7, r3		; MODE 1 over all N*W elements at once, x from the stash
	addi r4, r5, P_TG
	ldb r4, [r4]
	addi r2, r5, P_OUT
	ldb r2, [r2]
	vlut.a r4, r2, r1	; A[OUT + i] = h_i = bf16(lut_gelu(pre_i))
	addi r4, r5, P_D
	ldb r2, [r4]
	addi r4, r2, 1
	beq r4, r0, fg_end	; no GELU'
	addi r4, r5, P_TD
	ldb r4, [r4]
	vlut.a r4, r2, r1	; A[D + i] = bf16(lut_gelu'(pre_i)) (in place on the stash)
fg_end:	ret
fg_d:	addi r4, r5, P_N	; MODE 0's rest over all N*W elements at once
	ldb r3, [r4]
	mul r7, r7, r3
	addi r6, r5, P_IN
	ldb r6, [r6]		; r6 = the rows
	addi r4, r5, P_D
	ldb r1, [r4]
	addi r2, r1, 1
	beq r2, r0, fg_st	; no GELU'
	addi r4, r5, P_TD
	ldb r4, [r4]
	vlut.bf r4, r1		; A[D + i] = bf16(lut_gelu'(pre_i))
fg_st:	addi r4, r5, P_ST
	ldb r4, [r4]
	addi r2, r4, 1
	beq r2, r0, fg_h	; no stash
	cvt.bf r4		; A[ST + i] = bf16(pre_i)
fg_h:	addi r4, r5, P_TG
	ldb r4, [r4]
	addi r1, r5, P_OUT
	ldb r1, [r1]
	vlut.bf r4, r1		; A[OUT + i] = h_i = bf16(lut_gelu(pre_i))
	ret

.include "vec_fc_bwd_bf.inc"
