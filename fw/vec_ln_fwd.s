; vec_ln_fwd.s - layernorm forward on the PE (docs/resident-step.md): every token of the
; PE's residual stream x (B, fp32) to the next kernel's input y (A, bf16), stashing the
; normalized z (A, bf16) and 1/sigma r (A, bf16) for the backward. One task, `ln_fwd`,
; started by a wavelet whose payload's low half is P, the B address of the parameter
; block (the low halves of B[P + k], k the P_ names below). Per token, with s, q =
; vsum2(x):
;   m = fmac(1/C, bf16(s), 0), e2 = fmac(1/C, bf16(q), 0), mb = bf16(m)
;   r = rsqrt(fmac(1, bf16(fmac(-mb, mb, e2)), eps)), sh = -bf16(fmac(r, mb, 0))
;   z_j = bf16(fmac(r, bf16(x_j), sh)), y_j = bf16(fmac(gamma_j, z_j, beta_j))
; (nm_ln_fwd_bits). Registers: r1 = x_t (X + t*C), r3 = tokens left; the others are
; scratch.

.include "vec_ln_fwd_head.inc"
	vsum2 r4		; B[T] = s, B[T+1] = q
.include "vec_ln_fwd_tail.inc"
