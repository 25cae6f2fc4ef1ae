; kernels.s - the PE task programs of the three training kernels (docs/architecture.md 4-5).
;
; Registers (written by the host before each output tile): r0 = 0 (zero register),
; r1 A address of the current major (SET_MAJOR), r2 B base, r3 A stride, r4 B stride,
; r5 tokens in this PE, r6 B pointer (wgrad: partial sums, pb), r7 count / scratch.
;
; forward / backward: the BCAST data task is `axpy`, the control task `ctl`.
; wgrad: the data task is `dot` (on pe each position's val is its major's A offset from r1,
; so a group takes positions of several majors; pe_lite and pe_micro_mt read A at r1, val
; ignored, and take a SET_MAJOR per major: one kernel for both streams); the control task
; is one of wg_ctl_* chosen per PE by its reduction role (the host writes each PE's task
; table); the row (RR) and column (CR) tasks start blocked and are unblocked by END, then
; re-block themselves after their count.

.equ BCAST, 0
.equ RR0, 1
.equ RR1, 2
.equ CR0, 3
.equ CR1, 4
.equ OUT, 5
; data task ids {ctrl = 0, color}
.equ T_RR0, 1
.equ T_RR1, 2
.equ T_CR0, 3
.equ T_CR1, 4
; control ops in W[31:16]: START, SET_BBASE, SET_BSTRIDE
.equ OP_START, 0x1000
.equ OP_SETB, 0x4000
.equ OP_SETW, 0x5000

; ---- forward / backward --------------------------------------------------------------
.entry axpy
axpy:	axpy			; B[r2 + idx + t*r4] += val * A[r1 + t*r3], t < r5
	ret

; SET_MAJOR first (the frequent one). SET_BBASE / SET_BSTRIDE switch the output tile in
; band (r2 = the B bank of the tile, r4 = its width) behind the previous tile's
; nonzeros, so the host needs no register WRITE (and no SYNC) between output tiles.
; r6 is scratch here (axpy does not use it).
.entry ctl
ctl:	whi r7			; {op, 0}
	bne r7, r0, ctl_op
	wlo r1			; SET_MAJOR j: r1 = xa + j (xa = 0)
	ret
ctl_op:	li r6, OP_START
	bne r7, r6, ctl_b
	mul r7, r5, r4		; START: clear Tp_k * Dt accumulators from r2
	add r6, r2, r0
	fill
	ret
ctl_b:	li r6, OP_SETB
	bne r7, r6, ctl_w
	wlo r2			; SET_BBASE b: r2 = b
	ret
ctl_w:	li r6, OP_SETW
	bne r7, r6, ctl_ret
	wlo r4			; SET_BSTRIDE w: r4 = w
ctl_ret:
	ret

; ---- wgrad ----------------------------------------------------------------------------
.entry dot
dot:	dot			; B[r6 + n] = sum_t A[r1 + val_n + t*r3] * Bh[r2 + idx_n + t*r4]
				; (pe_lite, pe_micro_mt: A[r1 + t*r3]); r6 += lanes
	ret

; Control tasks: SET_MAJOR as above; END(count): r7 = count, r6 back to pb, then the role.
; east edge of a row: send the partials west
.entry wg_ctl_e0
wg_ctl_e0:
	whi r7
	bne r7, r0, e0_end
	wlo r1
	ret
e0_end:	wlo r7
	sub r6, r6, r7
	sendv RR0
	ret

.entry wg_ctl_e1
wg_ctl_e1:
	whi r7
	bne r7, r0, e1_end
	wlo r1
	ret
e1_end:	wlo r7
	sub r6, r6, r7
	sendv RR1
	ret

; inner and west PEs of a row: start the row task that hears the east neighbour
.entry wg_ctl_in0
wg_ctl_in0:
	whi r7
	bne r7, r0, in0_end
	wlo r1
	ret
in0_end:
	wlo r7
	sub r6, r6, r7
	unblock T_RR0
	ret

.entry wg_ctl_in1
wg_ctl_in1:
	whi r7
	bne r7, r0, in1_end
	wlo r1
	ret
in1_end:
	wlo r7
	sub r6, r6, r7
	unblock T_RR1
	ret

; one-column meshes: END goes straight to the column role
.entry wg_ctl_out
wg_ctl_out:
	whi r7
	bne r7, r0, out_end
	wlo r1
	ret
out_end:
	wlo r7
	sub r6, r6, r7
	sendv OUT
	ret

.entry wg_ctl_cs0
wg_ctl_cs0:
	whi r7
	bne r7, r0, cs0_end
	wlo r1
	ret
cs0_end:
	wlo r7
	sub r6, r6, r7
	sendv CR0
	ret

.entry wg_ctl_cs1
wg_ctl_cs1:
	whi r7
	bne r7, r0, cs1_end
	wlo r1
	ret
cs1_end:
	wlo r7
	sub r6, r6, r7
	sendv CR1
	ret

.entry wg_ctl_cin0
wg_ctl_cin0:
	whi r7
	bne r7, r0, cin0_end
	wlo r1
	ret
cin0_end:
	wlo r7
	sub r6, r6, r7
	unblock T_CR0
	ret

.entry wg_ctl_cin1
wg_ctl_cin1:
	whi r7
	bne r7, r0, cin1_end
	wlo r1
	ret
cin1_end:
	wlo r7
	sub r6, r6, r7
	unblock T_CR1
	ret

; Row tasks. Inner PE in an even column: hears RR1, adds its partials, sends on RR0.
.entry wg_rr_o0
wg_rr_o0:
	redv RR0
	block T_RR1
	ret

.entry wg_rr_o1
wg_rr_o1:
	redv RR1
	block T_RR0
	ret

; West PE (column 0, hears RR1): store s_r, then its column role.
.entry wg_rr_w_out
wg_rr_w_out:
	redv.st
	sendv OUT
	block T_RR1
	ret

.entry wg_rr_w_cs0
wg_rr_w_cs0:
	redv.st
	sendv CR0
	block T_RR1
	ret

.entry wg_rr_w_cs1
wg_rr_w_cs1:
	redv.st
	sendv CR1
	block T_RR1
	ret

.entry wg_rr_w_cin0
wg_rr_w_cin0:
	redv.st
	unblock T_CR0
	block T_RR1
	ret

.entry wg_rr_w_cin1
wg_rr_w_cin1:
	redv.st
	unblock T_CR1
	block T_RR1
	ret

; Column tasks (column 0). Row r even hears CR1 and sends on CR0; row 0 sends to the host.
.entry wg_cr_o0
wg_cr_o0:
	redv CR0
	block T_CR1
	ret

.entry wg_cr_o1
wg_cr_o1:
	redv CR1
	block T_CR0
	ret

.entry wg_cr_top
wg_cr_top:
	redv OUT
	block T_CR1
	ret
