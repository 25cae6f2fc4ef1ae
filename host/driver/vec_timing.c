/*
 * vec_timing.c - the cycles of a vector program task on `pe` (vec_timing.h). Each engine
 * instruction is scheduled element by element with pe_vec.v's issue conditions, including
 * its second lane (vfma, vaxpy, vmac, cvt.bf, cvt.bh and vlut.bf issue elements n and n + 1
 * in one cycle under the conditions of pe_vec.v's *_pair wires); the cycle numbers below are
 * the sequencer's and the engine's (one clock).
 */
#include "driver/vec_timing.h"

#include <stdio.h>

#include "driver/csd.h"

#define VT_LIMIT (64ull << 20) /* instructions before a task is taken to loop for ever */
#define RING 32                /* ops whose R or FMAC stages may still be in flight */
#define LAT 4                  /* FmacLatency */
#define VT_BLOCK 32            /* block words a task's ldb / stb see */

/* An issued op: its R stage at start, a MAC's FMAC stages up to last (start + LAT); wen:
 * it writes B word addr at last (the read-after-write interlock covers [start, last]). */
struct vt_op {
	uint64_t start, last;
	uint32_t addr;
	int wen;
};

struct vt {
	struct vt_op ring[RING];
	int head;
	uint32_t bmask, bank;   /* B address mask, the bank bit */
	uint64_t macs, wb_last; /* MAC-busy cycles; the cycle of the last B write of a MAC */
	uint64_t mac_c;         /* the last cycle counted in macs, + 1 */
	uint32_t blk[VT_BLOCK]; /* the parameter block's words as the task leaves them */
	struct vt_lut lut;      /* the lookup RAM */
};

static void push(struct vt *v, uint64_t c, uint64_t last, uint32_t addr, int wen)
{
	v->ring[v->head] = (struct vt_op){ c + 1, last, addr & v->bmask, wen };
	v->head = (v->head + 1) % RING;
	if (wen && last > v->wb_last)
		v->wb_last = last;
}

/* A MAC issued in cycle c (writing B[addr] when wen); the second lane's MAC of a pair
 * issues in the same cycle, which mac_busy counts once. */
static void mac(struct vt *v, uint64_t c, uint32_t addr, int wen)
{
	push(v, c, c + 1 + LAT, addr, wen);
	if (v->mac_c != c + 1)
		v->macs++;
	v->mac_c = c + 1;
}

/* A read without a MAC issued in cycle c (its R stage keeps the pipeline busy). */
static void rd(struct vt *v, uint64_t c)
{
	push(v, c, c + 1, 0, 0);
}

/* what: 0 pipeline busy, 1 a B write in flight, 2 a write of B[addr] in flight (hz) */
static int busy(const struct vt *v, uint64_t c, int what, uint32_t addr)
{
	addr &= v->bmask;
	for (int i = 0; i < RING; i++) {
		const struct vt_op *o = &v->ring[i];
		if (o->start && o->start <= c && c <= o->last &&
		    (what == 0 || (o->wen && (what == 1 || o->addr == addr))))
			return 1;
	}
	return 0;
}

static uint64_t wait(const struct vt *v, uint64_t c, int what, uint32_t addr)
{
	while (busy(v, c, what, addr))
		c++;
	return c;
}

#define HZ(c, a) busy(v, (c), 2, (a))
#define WAIT_HZ(c, a) wait(v, (c), 2, (a))

static int bank(const struct vt *v, uint32_t a)
{
	return (int)((a & v->bmask) >> v->bank);
}

static int same(const struct vt *v, uint32_t a, uint32_t b)
{
	return ((a ^ b) & v->bmask) == 0;
}

void vt_lut_write(struct vt_lut *lut, uint32_t b_words, uint64_t lo, uint64_t n)
{
	uint64_t m = b_words - 1;
	/* two arcs of the ring of B words meet when either starts inside the other */
	for (int k = 0; k < 2; k++)
		if (lut->valid[k] && n && (n >= b_words || ((lut->tag[k] - lo) & m) < n ||
					   ((lo - lut->tag[k]) & m) < 256))
			lut->valid[k] = 0;
}

/* vlut.bf (x from B[src ..]) and vlut.a (from_a: x from A[src ..]) from cycle c, after the
 * two A reads: the table copy of B[tab ..] (128 rows, once no B write is in flight; none
 * when the lookup RAM holds that table, valid since its copy started), then an issue a
 * cycle (a pair at an even A destination, and for vlut.a an even source), its MACs the next
 * cycle, its A write 1 + LAT later; a vlut.a read of a word an element in flight (issued,
 * its A write not yet past) will write waits. Returns the cycle of the last A write. */
static uint64_t lut_ram(struct vt *v, uint64_t c, uint32_t cnt, uint32_t tab, uint32_t dst,
			uint32_t src, int from_a, uint32_t a_words)
{
	enum { NI = 16 };
	uint64_t iw[NI]; /* an issue's A write cycle and first element, oldest first */
	uint32_t i0[NI], aw = a_words / 2 - 1, alo = 0, ni = 0;
	uint64_t alast = c;
	if (!cnt)
		return alast;
	c = wait(v, c, 1, 0);
	int s = v->lut.valid[1] && !((tab ^ v->lut.tag[1]) & v->bmask) ? 1
		: v->lut.valid[0] && !((tab ^ v->lut.tag[0]) & v->bmask) ? 0 : -1;
	if (s < 0) { /* a miss: the slot used less recently takes the table */
		s = v->lut.lru;
		v->lut.valid[s] = 1;
		v->lut.tag[s] = tab & v->bmask;
		for (int k = 0; k < 128; k++, c++)
			rd(v, c);
	}
	v->lut.lru = !s;
	for (uint32_t n = 0; n < cnt; c++) {
		while (alo < ni && iw[alo % NI] < c)
			alo++;
		uint32_t e = alo < ni ? i0[alo % NI] : n; /* the first element not written */
		if (from_a && e != n) {
			uint32_t lw = ((dst + e) & 0xffff) >> 1;
			uint32_t hw = ((dst + n - 1) & 0xffff) >> 1, sw = ((src + n) & 0xffff) >> 1;
			if (((sw - lw) & aw) <= ((hw - lw) & aw))
				continue;
		}
		int pair = cnt - n >= 2 && !((dst + n) & 1) && (!from_a || !((src + n) & 1));
		rd(v, c);
		mac(v, c + 1, 0, 0);
		if (pair)
			mac(v, c + 1, 0, 0);
		alast = c + 2 + LAT;
		iw[ni % NI] = alast;
		i0[ni % NI] = n;
		ni++;
		n += pair ? 2 : 1;
	}
	return alast;
}

/* The engine instruction w starting in cycle e0 (the sequencer's hand-over was e0 - 1) on
 * registers r; returns its done cycle, or 0 when it is not a vector program's. */
static uint64_t engine(struct vt *v, const struct vt_task *t, uint16_t w, uint16_t *r,
		       uint64_t e0)
{
	int op = w >> 12, rdn = (w >> 9) & 7, rsn = (w >> 6) & 7, rtn = w & 7; /* 4.3: rt [2:0] */
	int xop = (w >> 3) & 7, lo3 = w & 7;
	uint32_t cnt = r[7], ptr = r[6];
	uint64_t c = e0, d = e0;
	/* the B words it writes (4.4), against the lookup RAM's table */
	uint64_t wlo = ptr, wn = 0;
	if (op == 0xE || (op == 0xF && (xop == 1 || xop == 6 || (xop == 0 && (lo3 == 4 ||
	    (lo3 == 5 && rsn))) || (xop == 3 && rsn && !rdn) || (xop == 4 && !rsn))))
		wn = cnt; /* fill, vfma, vmac, vaxpy, vmul, cpa, vlut: B[r6 .. r6+r7) */
	else if (op == 0xF && xop == 0 && lo3 == 5 && cnt) /* cvt.bh: Bh[r[rd] ..]'s words */
		wlo = r[rdn] >> 1, wn = ((r[rdn] & 1u) + cnt + 1) / 2;
	else if (op == 0xF && xop == 0 && (lo3 & 3) == 3) /* stb */
		wlo = r[rsn], wn = 1;
	else if (op == 0xF && (xop == 2 || xop == 7)) /* vsum2 (...): B[r[rd]], + 1; vdot */
		wlo = r[rdn], wn = xop == 2 ? 2 : 1;
	vt_lut_write(&v->lut, v->bmask + 1, wlo, wn);
	if (op == 0xE) { /* fill: two words a cycle once no B write is in flight */
		for (uint32_t i = 0; i < cnt; i += 2, c++)
			d = c = wait(v, c, 1, 0);
		return d;
	}
	if (op != 0xF)
		return 0;
	switch (xop) {
	case 0:
		if (lo3 == 4) { /* vaxpy: B[r6+n] += r[rd] A[r[rs]+n]; a pair at an even A element */
			for (uint32_t i = 0; i < cnt; c++) {
				d = c = WAIT_HZ(c, ptr + i);
				mac(v, c, ptr + i, 1);
				if (cnt - i >= 2 && !((r[rsn] + i) & 1) && !HZ(c, ptr + i + 1)) {
					mac(v, c, ptr + i + 1, 1);
					i += 2;
				} else {
					i++;
				}
			}
		} else if (lo3 == 5 && rsn) { /* vmul: vaxpy's flow with no B read: no waits */
			for (uint32_t i = 0; i < cnt; c++) {
				d = c;
				mac(v, c, ptr + i, 1);
				if (cnt - i >= 2 && !((r[rsn] + i) & 1)) {
					mac(v, c, ptr + i + 1, 1);
					i += 2;
				} else {
					i++;
				}
			}
		} else if (lo3 == 5) { /* cvt.bh */
			uint32_t dst = r[rdn];
			uint64_t pc = 0;      /* the previous element's issue + 1 (its R) */
			uint32_t pwa = 0;     /* ... and the word it writes there */
			int pw = 0, ph = 0;
			for (uint32_t i = 0; i < cnt; c++) {
				uint32_t e = (dst + i) & 0xffff, src = (ptr + i) & 0xffff;
				uint32_t bw = e >> 1;
				int last = i == cnt - 1, cvrd = (e & 1) ? i == 0 : last;
				int bhwr = pw && pc == c;
				int bhhz = bhwr && ((pwa & v->bmask) == (src & v->bmask) ||
						    (cvrd && (pwa & v->bmask) == (bw & v->bmask)));
				if (busy(v, c, 1, 0) || bhhz)
					continue;
				rd(v, c);
				if (!cvrd || bank(v, src) != bank(v, bw) || ph) {
					/* a pair: an even element, the next source word not the word
					 * written (now by the pair, or in R) */
					int pair = cnt - i >= 2 && !(e & 1) && !same(v, src + 1, bw) &&
						   !(bhwr && same(v, pwa, src + 1));
					pc = c + 1;
					pwa = bw;
					pw = (e & 1) || last || pair;
					ph = 0;
					i += pair ? 2 : 1;
					d = c + 1;
				} else {
					ph = 1; /* the destination word first, in the source's bank */
				}
			}
		} else if (lo3 & 2) { /* ldb / stb: once no B write is in flight, done in R; a
				       * store into the block is seen by the loads after it */
			c = wait(v, c, 1, 0);
			rd(v, c);
			d = c + 1;
			uint32_t a = r[rsn] & v->bmask, blk = t->block & v->bmask, word = 0, *bw = NULL;
			if (a >= blk && a - blk < (uint32_t)t->n_params && a - blk < VT_BLOCK)
				bw = &v->blk[a - blk];
			if (bw)
				word = *bw;
			if (!(lo3 & 1))
				r[rdn] = (uint16_t)((lo3 & 4) ? word >> 16 : word);
			else if (bw)
				*bw = (lo3 & 4) ? (word & 0xffffu) | (uint32_t)r[rdn] << 16
						: (word & 0xffff0000u) | r[rdn];
		} else { /* lda / sta: done in R; the data are not modelled */
			rd(v, c);
			d = c + 1;
			if (!(lo3 & 1))
				r[rdn] = 0;
		}
		return d;
	case 1: /* vfma: B[r6+n] from B[r[rt]+n]; a pair unless n + 1 reads n's destination */
		for (uint32_t i = 0; i < cnt; c++) {
			d = c = WAIT_HZ(c, r[rtn] + i);
			mac(v, c, ptr + i, 1);
			if (cnt - i >= 2 && !HZ(c, r[rtn] + i + 1u) && !same(v, r[rtn] + i + 1u, ptr + i)) {
				mac(v, c, ptr + i + 1, 1);
				i += 2;
			} else {
				i++;
			}
		}
		return d;
	case 2: /* vsum2: two MACs an element, then (drained) the two adds */
		if (rtn) { /* vsum4, vdot4: an even element and the next on the two FMACs (vdot4:
			    * at an even A element), else one; drained, the four adds of the
			    * chains' pairs; drained, the two adds */
			for (uint32_t i = 0; i < cnt;) {
				int pair = cnt - i >= 2 && !(i & 1) && (!rsn || !((r[rsn] + i) & 1));
				for (int ph = 0; ph < 2; ph++, c++) {
					while (HZ(c, ptr + i) || (pair && HZ(c, ptr + i + 1)))
						c++;
					mac(v, c, 0, 0);
					if (pair)
						mac(v, c, 0, 0);
				}
				i += pair ? 2 : 1;
			}
			c = wait(v, c, 0, 0);
			for (int k = 0; k < 4; k++, c++)
				mac(v, c, 0, 0);
			c = wait(v, c, 0, 0);
			mac(v, c, r[rdn], 1);
			mac(v, c + 1, r[rdn] + 1u, 1);
			return c + 1;
		}
		for (uint32_t j = 0; j < 2 * cnt; j++, c++) {
			c = WAIT_HZ(c, ptr + j / 2);
			mac(v, c, 0, 0);
		}
		c = wait(v, c, 0, 0);
		mac(v, c, r[rdn], 1);
		mac(v, c + 1, r[rdn] + 1u, 1);
		return c + 1;
	case 3: { /* cvt.bf: done in the last element's R; rs != 0: cpa (rd = 0) or vlut.a */
		if (rsn && !rdn) { /* cpa: a word a cycle once no B write is in flight, done in its R */
			for (uint32_t i = 0; i < cnt; i++, c++) {
				if (i == 0)
					c = wait(v, c, 1, 0);
				rd(v, c);
				d = c + 1;
			}
			return d;
		}
		if (rsn) /* vlut.a: as vlut.bf */
			return lut_ram(v, c + 2, cnt, r[rdn], r[rsn], r[rtn], 1, t->a_words);
		uint32_t dst = r[rdn];
		uint64_t pc = 0;
		int pw = 0;
		for (uint32_t i = 0; i < cnt; c++) {
			uint32_t e = (dst + i) & 0xffff;
			int last = i == cnt - 1, cvrd = (e & 1) ? i == 0 : last;
			/* an A read waits out the R stage's A write (odd element, pair or last) */
			while (HZ(c, ptr + i) || (cvrd && pw && pc == c))
				c++;
			rd(v, c);
			int pair = cnt - i >= 2 && !(e & 1) && !HZ(c, ptr + i + 1);
			pc = c + 1;
			pw = (e & 1) || last || pair;
			d = c + 1;
			i += pair ? 2 : 1;
		}
		return d;
	}
	case 4: { /* vlut: x read, X stage, table read (the MAC) on the second port; vlut.bf
		   (rs != 0): two A reads, then lut_ram */
		uint32_t tab = r[rdn], src = r[rtn], xwa = 0;
		int tb = bank(v, tab), xv = 0;
		if (rsn)
			return lut_ram(v, c + 2, cnt, tab, r[rsn], src, 0, t->a_words);
		for (uint32_t n = 0;; c++) {
			int all = n == cnt, go = xv && !HZ(c, tab);
			uint32_t s = (src + n) & 0xffff;
			int rdok = !all &&
				   (!xv || (go && tb != bank(v, s) &&
					    (xwa & v->bmask) != (s & v->bmask))) &&
				   !HZ(c, s);
			int done = all && (!xv || go);
			if (go)
				mac(v, c, xwa, 1);
			if (rdok) {
				xv = 1;
				xwa = ptr + n;
				n++;
			} else if (go) {
				xv = 0;
			}
			if (done)
				return c;
		}
	}
	case 5: /* rsqrt: B read, ROM, register */
		c = WAIT_HZ(c, r[rsn]);
		rd(v, c);
		r[rdn] = 0x3f80;
		return c + 2;
	case 6: /* vmac: x = B[r[rt]+n], c = B[r[rd]+n]; one bank: c a cycle ahead; a pair at an
		 * even A element (banks apart: when both pairs stay in their banks) */
		for (uint32_t i = 0; i < cnt; c++) {
			uint32_t x = r[rtn] + i, cc = r[rdn] + i;
			int pair = 0;
			if (bank(v, x) != bank(v, cc)) {
				while (HZ(c, x) || HZ(c, cc))
					c++;
				pair = cnt - i >= 2 && !((r[rsn] + i) & 1) && !HZ(c, x + 1) &&
				       !HZ(c, cc + 1) && bank(v, x + 1) == bank(v, x) &&
				       bank(v, cc + 1) == bank(v, cc) && !same(v, x + 1, ptr + i) &&
				       !same(v, cc + 1, ptr + i);
			} else { /* c (a pair when it may be) read ahead, then x's pair */
				c = WAIT_HZ(c, cc);
				rd(v, c);
				pair = cnt - i >= 2 && !((r[rsn] + i) & 1) && !HZ(c, cc + 1) &&
				       !same(v, cc + 1, ptr + i) && !same(v, x + 1, ptr + i);
				c = WAIT_HZ(c + 1, x);
				pair = pair && !HZ(c, x + 1);
			}
			mac(v, c, ptr + i, 1);
			if (pair)
				mac(v, c, ptr + i + 1, 1);
			i += pair ? 2 : 1;
			d = c;
		}
		return d;
	default: /* 7, vdot: a MAC every other cycle, then (drained) the combining add */
		for (uint32_t i = 0; i < cnt; i++, c += 2) {
			c = WAIT_HZ(c, r[rtn] + i);
			mac(v, c, 0, 0);
		}
		if (cnt)
			c--;
		c = wait(v, c, 0, 0);
		mac(v, c, r[rdn], 1);
		return c;
	}
}

int vt_run(const struct vt_task *t, struct vt_result *res, char *err, size_t errlen)
{
	struct vt v = { .bmask = t->b_words - 1, .lut = t->lut };
	for (int i = 0; i < t->n_params && i < VT_BLOCK; i++)
		v.blk[i] = t->params[i];
	while ((2u << v.bank) < t->b_words)
		v.bank++;
	uint16_t r[8] = { 0 };
	uint64_t s = 0, n = 0;
	unsigned pc = (unsigned)t->pc & 0xff;
	*res = (struct vt_result){ 0 };
	for (;; n++) {
		int k = (int)pc - t->base;
		if (n >= VT_LIMIT || k < 0 || k >= t->n_instr) {
			if (n >= VT_LIMIT)
				snprintf(err, errlen, "no ret after %llu instructions",
					 (unsigned long long)n);
			else
				snprintf(err, errlen, "pc %u is outside the overlay", pc);
			return CS_ERR_INVALID;
		}
		uint16_t w = t->imem[k];
		int op = w >> 12, rdn = (w >> 9) & 7, rsn = (w >> 6) & 7, rtn = (w >> 3) & 7;
		unsigned pc1 = (pc + 1) & 0xff;
		switch (op) {
		case 0x0:
			if (!(w & 1)) {
				res->cycles = s + 1;
				res->drain = v.wb_last > s ? v.wb_last - s : 0;
				res->macs = v.macs;
				res->instrs = n + 1;
				res->lut = v.lut;
				return CS_OK;
			}
			break;
		case 0x1:
			if (k + 1 >= t->n_instr) {
				snprintf(err, errlen, "li at pc %u has no immediate", pc);
				return CS_ERR_INVALID;
			}
			r[rdn] = t->imem[k + 1];
			s++;
			pc1 = (pc + 2) & 0xff;
			break;
		case 0x2:
			r[rdn] = (uint16_t)(r[rsn] + ((w & 0x20) ? (w & 0x3f) | 0xffc0 : w & 0x3f));
			break;
		case 0x3: {
			uint16_t a = r[rsn], b = r[rtn];
			switch (w & 7) {
			case 0: r[rdn] = (uint16_t)(a + b); break;
			case 1: r[rdn] = (uint16_t)(a - b); break;
			case 2: r[rdn] = a & b; break;
			case 3: r[rdn] = a | b; break;
			case 4: r[rdn] = a ^ b; break;
			case 5: r[rdn] = (uint16_t)(a << (b & 15)); break;
			case 6: r[rdn] = (uint16_t)(a >> (b & 15)); break;
			default: r[rdn] = (uint16_t)((uint32_t)a * b); break;
			}
			break;
		}
		case 0x4:
			r[rdn] = (w & 3) == 0 ? (uint16_t)(t->w >> 16) : (w & 3) == 1 ? (uint16_t)t->w : 0;
			break;
		case 0x5: {
			int rs = (w >> 8) & 7, rt = (w >> 5) & 7, off = (w & 0x10) ? (w & 0x1f) - 32 : w & 0x1f;
			if ((r[rs] == r[rt]) != ((w >> 11) & 1))
				pc1 = (pc1 + (unsigned)off) & 0xff;
			break;
		}
		case 0x6:
			r[rdn]--;
			if (r[rdn])
				pc1 = (pc1 + (w & 0xff)) & 0xff;
			break;
		case 0x7:
			pc1 = (pc1 + (w & 0xff)) & 0xff;
			break;
		case 0x9:
			break;
		default: {
			uint64_t d = engine(&v, t, w, r, s + 1);
			if (!d) {
				snprintf(err, errlen, "instruction 0x%04x at pc %u (send, axpy, dot, redv, "
					 "sendv) is not a vector program's", w, pc);
				return CS_ERR_NOT_SUPPORTED;
			}
			s = d; /* the sequencer takes done in cycle d */
			break;
		}
		}
		s++;
		pc = pc1;
	}
}
