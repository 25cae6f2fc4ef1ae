// fmac_ops.h - the operand generators and the reference of the FMAC benches (tb_pe_fmac,
// tb_pe_lite_fmac): uniform random bits mixed with the cases that break floating-point
// datapaths, and the expected result from host/common/numerics.c. Include after
// tb_common.h and numerics.h.
#ifndef CS_VERIF_PE_FMAC_OPS_H
#define CS_VERIF_PE_FMAC_OPS_H

struct Op {
	bool add;
	uint32_t a;
	uint16_t b;
	uint32_t c;
};

static uint16_t rand_bf16(TbRng &r)
{
	uint32_t sign = r.below(2) << 15;
	switch (r.below(12)) {
	case 0: return (uint16_t)sign; // zero
	case 1: return (uint16_t)(sign | (1 + r.below(127))); // subnormal
	case 2: return (uint16_t)(sign | 0x7f80); // inf
	case 3: return (uint16_t)(sign | 0x7f80 | (1 + r.below(127))); // NaN
	case 4: return (uint16_t)(sign | ((1 + r.below(20)) << 7) | r.below(128)); // tiny
	case 5: return (uint16_t)(sign | ((234 + r.below(21)) << 7) | r.below(128)); // huge
	case 6: // few mantissa bits: exact products with trailing zeros (ties)
		return (uint16_t)(sign | ((100 + r.below(56)) << 7) | (r.below(8) << 4));
	case 7: return (uint16_t)(sign | ((100 + r.below(56)) << 7) | 0x7f); // all ones
	default: return (uint16_t)r.u32();
	}
}

static uint32_t rand_f32_special(TbRng &r, uint32_t sign)
{
	switch (r.below(5)) {
	case 0: return sign;
	case 1: return sign | (1 + r.below(0x7fffff));
	case 2: return sign | 0x7f800000u;
	case 3: return sign | 0x7f800000u | (1 + r.below(0x7fffff));
	default: return sign | 0x00800000u | r.below(4); // smallest normals
	}
}

// An fp32 near value v (bits): exponent moved by k, mantissa random or derived from v.
static uint32_t near_f32(TbRng &r, uint32_t v, int k, bool negate)
{
	int e = (int)((v >> 23) & 0xff) + k;
	if (e < 1) e = 1;
	if (e > 254) e = 254;
	uint32_t m;
	switch (r.below(4)) {
	case 0: m = v & 0x7fffff; break; // same mantissa: cancellation when k == 0
	case 1: m = (v & 0x7fffff) ^ (1u << r.below(23)); break;
	case 2: m = r.below(2) ? 0 : 0x7fffff; break;
	default: m = r.u32() & 0x7fffff; break;
	}
	uint32_t s = (v & 0x80000000u) ^ (negate ? 0x80000000u : 0);
	return s | ((uint32_t)e << 23) | m;
}

static uint32_t bf16_prod_bits(uint16_t a, uint16_t b)
{
	// the exact product rounded to fp32 is enough to aim the accumulator near it
	float p = nm_bf16_to_f32(a) * nm_bf16_to_f32(b);
	return nm_f32_bits(p);
}

static Op rand_op(TbRng &r)
{
	Op op;
	op.add = r.chance(25);
	if (!op.add) {
		op.a = rand_bf16(r);
		op.b = rand_bf16(r);
		uint32_t p = bf16_prod_bits((uint16_t)op.a, op.b);
		switch (r.below(8)) {
		case 0: op.c = rand_f32_special(r, r.below(2) << 31); break;
		case 1: op.c = p ^ 0x80000000u; break; // exact cancellation when p is exact
		case 2: case 3: case 4:
			op.c = near_f32(r, p, (int)r.below(61) - 30, r.below(2)); break;
		case 5: op.c = near_f32(r, p, (int)r.below(5) - 2, true); break;
		default: op.c = r.u32(); break;
		}
		if (((op.c >> 23) & 0xff) == 0xff && r.chance(50))
			op.c = r.u32() & 0xbf7fffffu; // keep specials from dominating
	} else {
		op.b = (uint16_t)r.u32(); // ignored in add mode
		switch (r.below(6)) {
		case 0: op.a = rand_f32_special(r, r.below(2) << 31); op.c = r.u32(); break;
		case 1: op.a = r.u32(); op.c = rand_f32_special(r, r.below(2) << 31); break;
		case 2: op.a = r.u32(); op.c = op.a ^ 0x80000000u; break;
		case 3: case 4:
			op.a = r.u32();
			op.c = near_f32(r, op.a, (int)r.below(61) - 30, r.below(2));
			break;
		default: op.a = r.u32(); op.c = r.u32(); break;
		}
	}
	return op;
}

static uint32_t expect(const Op &op)
{
	return op.add ? nm_add_bits(op.a, op.c) : nm_fmac_bits((uint16_t)op.a, op.b, op.c);
}

#endif /* CS_VERIF_PE_FMAC_OPS_H */
