; selftest.s - per-PE self-test (cshost board selftest). The host loads this image, points
; the BCAST control task at `st_ctl`, injects SELFTEST(seed) on BCAST and, after SYNC, reads
; B[0] of every PE: low half = mismatches found (0 = pass), high half = 0x5e1f (ran).
; It writes B[0..15] low halves with seed + address, reads them back and compares, which
; exercises the scalar ALU, branches, djnz and the B port.

.entry st_ctl
st_ctl:	wlo r1			; seed
	li r7, 16
	add r6, r0, r0
st_w:	add r2, r1, r6		; value = seed + address
	stb r2, [r6]
	addi r6, r6, 1
	djnz r7, st_w
	li r7, 16
	add r6, r0, r0
	add r5, r0, r0		; mismatches
st_r:	ldb r2, [r6]
	add r3, r1, r6
	beq r2, r3, st_ok
	addi r5, r5, 1
st_ok:	addi r6, r6, 1
	djnz r7, st_r
	stb r5, [r0]
	li r2, 0x5e1f
	stb.h r2, [r0]
	ret
