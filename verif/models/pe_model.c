/*
 * pe_model.c - instruction-level model of the PE; see pe_model.h.
 * Arithmetic is host/common/numerics.h (nm_fmac_bits, nm_add_bits), as in the RTL.
 */
#include "pe_model.h"

#include <stdlib.h>
#include <string.h>

#include "common/numerics.h"

int pe_model_init(struct pe_model *m, unsigned awords, unsigned bwords, unsigned num_queues)
{
	memset(m, 0, sizeof *m);
	if (num_queues < 1 || num_queues > PE_MODEL_MAX_QUEUES)
		return -1;
	m->awords = awords;
	m->bwords = bwords;
	m->num_queues = num_queues;
	m->axpy_major = 1;
	m->a = calloc(awords, sizeof *m->a);
	m->b = calloc(bwords, sizeof *m->b);
	if (!m->a || !m->b)
		goto out_free;
	for (unsigned c = 0; c < 16; c++)
		m->qmap[c] = (uint8_t)((c == 0 ? 0 : c <= 2 ? 1 : c <= 4 ? 2 : 3) % num_queues);
	m->last_q = num_queues - 1;
	m->first_touch = 1;
	return 0;
out_free:
	free(m->a);
	free(m->b);
	return -1;
}

void pe_model_free(struct pe_model *m)
{
	free(m->a);
	free(m->b);
	for (unsigned i = 0; i < PE_MODEL_MAX_QUEUES; i++)
		free(m->q[i].w);
	free(m->sent);
	memset(m, 0, sizeof *m);
}

static int q_push(struct pe_model_queue *q, uint64_t w)
{
	if (q->tail == q->cap) {
		if (q->head > 0) {
			memmove(q->w, q->w + q->head, (q->tail - q->head) * sizeof *q->w);
			q->tail -= q->head;
			q->head = 0;
		}
		if (q->tail == q->cap) {
			size_t cap = q->cap ? q->cap * 2 : 64;
			uint64_t *n = realloc(q->w, cap * sizeof *n);
			if (!n)
				return -1;
			q->w = n;
			q->cap = cap;
		}
	}
	q->w[q->tail++] = w;
	return 0;
}

static int q_empty(const struct pe_model_queue *q)
{
	return q->head == q->tail;
}

int pe_model_rx(struct pe_model *m, uint64_t wavelet)
{
	unsigned color = (unsigned)(wavelet >> 32) & 15;
	m->cnt[3]++;
	return q_push(&m->q[m->qmap[color] % m->num_queues], wavelet & 0x1fffffffffull);
}

static void send(struct pe_model *m, unsigned ctrl, unsigned color, uint32_t payload)
{
	if (m->nsent == m->capsent) {
		size_t cap = m->capsent ? m->capsent * 2 : 256;
		uint64_t *n = realloc(m->sent, cap * sizeof *n);
		if (!n)
			abort(); /* bench-only code: out of memory is fatal */
		m->sent = n;
		m->capsent = cap;
	}
	m->sent[m->nsent++] = ((uint64_t)(ctrl & 1) << 36) | ((uint64_t)(color & 15) << 32) | payload;
	m->cnt[4]++;
}

/* The head of the running task's queue if it is a data wavelet of the same task. */
static int same_task_head(struct pe_model *m, uint64_t *w)
{
	struct pe_model_queue *q = &m->q[m->tq];
	if (q_empty(q))
		return 0;
	uint64_t h = q->w[q->head];
	if ((h >> 36) & 1)
		return 0;
	if (((h >> 32) & 31) != m->tid)
		return 0;
	*w = h;
	return 1;
}

/* The head of the running task's queue if it is a SET_MAJOR of a data task's color:
 * control, payload[31:16] = 0 (pe's axpy chain takes it, 4.4). */
static int same_major_head(struct pe_model *m, uint64_t *w)
{
	struct pe_model_queue *q = &m->q[m->tq];
	if (!m->axpy_major || q_empty(q) || (m->tid & 16))
		return 0;
	uint64_t h = q->w[q->head];
	if (!((h >> 36) & 1) || ((h >> 32) & 15) != m->tid || ((h >> 16) & 0xffff))
		return 0;
	*w = h;
	return 1;
}

static void pop(struct pe_model *m)
{
	m->q[m->tq].head++;
}

static uint16_t a_elem(struct pe_model *m, uint16_t addr)
{
	return m->a[addr & (m->awords - 1)];
}

static uint32_t *b_word(struct pe_model *m, uint16_t addr)
{
	return &m->b[addr & (m->bwords - 1)];
}

static uint16_t bh_elem(struct pe_model *m, uint16_t e)
{
	uint32_t v = *b_word(m, (uint16_t)(e >> 1));
	return (uint16_t)((e & 1) ? v >> 16 : v);
}

static void axpy_one(struct pe_model *m)
{
	uint16_t idx = (uint16_t)(m->w >> 16), val = (uint16_t)m->w;
	/* pe: index bit 14 is the first-touch flag: fmac(val, A, +0), with val +0 also A +0 */
	int first = m->first_touch && (idx & 0x4000u);
	if (m->first_touch)
		idx &= 0x3fffu;
	for (uint16_t t = 0; t < m->r[5]; t++) {
		uint16_t aa = (uint16_t)(m->r[1] + t * m->r[3]);
		uint16_t ba = (uint16_t)(m->r[2] + idx + t * m->r[4]);
		uint32_t *y = b_word(m, ba);
		*y = nm_fmac_bits(val, first && !val ? 0 : a_elem(m, aa), first ? 0 : *y);
		m->cnt[0]++;
	}
}

/* One dot lane of the wavelet {idx, off}: A from r1 + off (the lane's major; pe_lite and
 * pe_micro_mt, dot_by_major: from r1, val ignored) */
static void dot_one(struct pe_model *m, uint32_t w, uint16_t lane_ptr)
{
	uint16_t idx = (uint16_t)(w >> 16), off = m->dot_by_major ? 0 : (uint16_t)w;
	uint32_t acc = 0;
	for (uint16_t t = 0; t < m->r[5]; t++) {
		uint16_t aa = (uint16_t)(m->r[1] + off + t * m->r[3]);
		uint16_t e = (uint16_t)(m->r[2] + idx + t * m->r[4]);
		acc = nm_fmac_bits(a_elem(m, aa), bh_elem(m, e), acc);
		m->cnt[0]++;
	}
	*b_word(m, lane_ptr) = acc;
}

/* The extended 0xF group (docs/architecture.md 4.4): xop 1 vfma, 2 vsum2, 3 cvt.bf,
 * 4 vlut, 5 rsqrt, 6 vmac, 7 vdot (vsum2 with rs != 0: vdot2; cvt.bf with rs != 0: cpa if
 * rd = 0, else vlut.a); rt = ins[2:0]. Destination B[r6 .. r6+r7) (cvt.bf, vlut.bf, vlut.a: A),
 * elements in index order, each read before its own write; r6 and r7 unchanged. */
static void vec_op(struct pe_model *m, unsigned xop, unsigned rd, unsigned rs, unsigned rt)
{
	uint16_t *r = m->r;
	switch (xop) {
	case 1: /* vfma rd, rs, rt: B = fmac(r[rd], bf16(B[r[rt] + n]), r[rs] << 16) */
		for (uint16_t n = 0; n < r[7]; n++) {
			uint32_t x = *b_word(m, (uint16_t)(r[rt] + n));
			*b_word(m, (uint16_t)(r[6] + n)) =
				nm_fmac_bits(r[rd], nm_bf16_from_bits(x), (uint32_t)r[rs] << 16);
			m->cnt[0]++;
		}
		break;
	case 2: { /* vsum2 rd: B[r[rd]], B[r[rd] + 1] = sum, sum of squares; vdot2 rd, rs
		   * (rs != 0, pe only): sum of 1.0 * bf16(x), sum of A[r[rs] + n] * bf16(x);
		   * rt != 0 (vsum4, vdot4; pe only): four chains j = n & 3, summed
		   * add(add(c0, c1), add(c2, c3)) */
		uint32_t s[4] = { 0, 0, 0, 0 }, q[4] = { 0, 0, 0, 0 };
		unsigned mask = rt ? 3 : 1;
		for (uint16_t n = 0; n < r[7]; n++) {
			uint32_t x = *b_word(m, (uint16_t)(r[6] + n));
			uint16_t xb = nm_bf16_from_bits(x);
			unsigned j = n & mask;
			if (rs) {
				uint16_t a = m->a[(uint16_t)(r[rs] + n) & (m->awords - 1)];
				s[j] = nm_fmac_bits(0x3f80, xb, s[j]);
				q[j] = nm_fmac_bits(a, xb, q[j]);
			} else {
				s[j] = nm_add_bits(s[j], x);
				q[j] = nm_fmac_bits(xb, xb, q[j]);
			}
			m->cnt[0] += 2;
		}
		if (rt) {
			s[0] = nm_add_bits(nm_add_bits(s[0], s[1]), nm_add_bits(s[2], s[3]));
			q[0] = nm_add_bits(nm_add_bits(q[0], q[1]), nm_add_bits(q[2], q[3]));
			*b_word(m, r[rd]) = s[0];
			*b_word(m, (uint16_t)(r[rd] + 1)) = q[0];
		} else {
			*b_word(m, r[rd]) = nm_add_bits(s[0], s[1]);
			*b_word(m, (uint16_t)(r[rd] + 1)) = nm_add_bits(q[0], q[1]);
		}
		m->cnt[0] += rt ? 6 : 2;
		break;
	}
	case 3: /* cvt.bf rd: A[r[rd] + n] = bf16(B[r6 + n]); with rs != 0 (pe only): cpa rs (rd
		 * = 0): B[r6 + n] = the A word (r[rs] >> 1) + n, elements 2w (low half) and 2w + 1;
		 * vlut.a rd, rs, rt (rd != 0): vlut.bf with x = bf16(fmac(A[r[rt] + n], 1.0, +0)) */
		if (rs && !rd) {
			for (uint16_t n = 0; n < r[7]; n++) {
				uint32_t w = ((uint32_t)(r[rs] >> 1) + n) & 0x7fffu;
				uint32_t e = (2 * w) & (m->awords - 1);
				*b_word(m, (uint16_t)(r[6] + n)) =
					m->a[e] | (uint32_t)m->a[e + 1] << 16;
			}
			break;
		}
		for (uint16_t n = 0; n < r[7]; n++) {
			if (!rs) {
				m->a[(uint16_t)(r[rd] + n) & (m->awords - 1)] =
					nm_bf16_from_bits(*b_word(m, (uint16_t)(r[6] + n)));
				continue;
			}
			uint16_t a = m->a[(uint16_t)(r[rt] + n) & (m->awords - 1)];
			uint16_t xb = nm_bf16_from_bits(nm_fmac_bits(a, 0x3f80, 0));
			uint32_t ent = *b_word(m, (uint16_t)(r[rd] + nm_lut_index(xb)));
			m->a[(uint16_t)(r[rs] + n) & (m->awords - 1)] =
				nm_bf16_from_bits(nm_fmac_bits((uint16_t)(ent >> 16), xb, ent << 16));
			m->cnt[0]++;
		}
		break;
	case 4: /* vlut rd, rt: B = line B[r[rd] + index](B[r[rt] + n]); no element in the table;
		 * vlut.bf rd, rs, rt (rs != 0, pe only): A[r[rs] + n] = bf16(the line) */
		for (uint16_t n = 0; n < r[7]; n++) {
			uint16_t xb = nm_bf16_from_bits(*b_word(m, (uint16_t)(r[rt] + n)));
			uint32_t ent = *b_word(m, (uint16_t)(r[rd] + nm_lut_index(xb)));
			uint32_t y = nm_fmac_bits((uint16_t)(ent >> 16), xb, ent << 16);
			if (rs)
				m->a[(uint16_t)(r[rs] + n) & (m->awords - 1)] = nm_bf16_from_bits(y);
			else
				*b_word(m, (uint16_t)(r[6] + n)) = y;
			m->cnt[0]++;
		}
		break;
	case 5: /* rsqrt rd, [rs]: r[rd] = rsqrt(B[r[rs]]), bf16 */
		r[rd] = nm_rsqrt_bits(*b_word(m, r[rs]));
		break;
	case 6: /* vmac rd, rs, rt: B = fmac(A[r[rs] + n], bf16(B[r[rt] + n]), B[r[rd] + n]) */
		for (uint16_t n = 0; n < r[7]; n++) {
			uint16_t a = m->a[(uint16_t)(r[rs] + n) & (m->awords - 1)];
			uint32_t x = *b_word(m, (uint16_t)(r[rt] + n));
			uint32_t c = *b_word(m, (uint16_t)(r[rd] + n));
			*b_word(m, (uint16_t)(r[6] + n)) = nm_fmac_bits(a, nm_bf16_from_bits(x), c);
			m->cnt[0]++;
		}
		break;
	default: { /* 7, vdot rd, rs, rt: B[r[rd]] = sum of A[r[rs] + n] * bf16(B[r[rt] + n]) */
		uint32_t acc[2] = { 0, 0 };
		for (uint16_t n = 0; n < r[7]; n++) {
			uint16_t a = m->a[(uint16_t)(r[rs] + n) & (m->awords - 1)];
			uint32_t x = *b_word(m, (uint16_t)(r[rt] + n));
			acc[n & 1] = nm_fmac_bits(a, nm_bf16_from_bits(x), acc[n & 1]);
			m->cnt[0]++;
		}
		*b_word(m, r[rd]) = nm_add_bits(acc[0], acc[1]);
		m->cnt[0]++;
		break;
	}
	}
}

/* Try to start a task: returns 1 if a task started or a wavelet was dropped. */
static int pick(struct pe_model *m)
{
	for (unsigned k = 1; k <= m->num_queues; k++) {
		unsigned qi = (m->last_q + k) % m->num_queues;
		struct pe_model_queue *q = &m->q[qi];
		if (q_empty(q))
			continue;
		uint64_t h = q->w[q->head];
		unsigned tid = (unsigned)(h >> 32) & 31;
		uint16_t ent = m->task[tid];
		if (!(ent & 0x200)) { /* no task: drop */
			q->head++;
			m->cnt[2]++;
			m->last_q = qi;
			return 1;
		}
		if (ent & 0x100)
			continue; /* blocked */
		q->head++;
		m->last_q = qi;
		m->w = (uint32_t)h;
		m->tid = (uint8_t)tid;
		m->tq = (uint8_t)qi;
		m->pc = (uint8_t)ent;
		m->running = 1;
		m->redv_n = 0;
		return 1;
	}
	return 0;
}

/* Execute one instruction. Returns 0 normally, 1 when a redv waits for wavelets. */
static int step(struct pe_model *m)
{
	uint16_t ins = m->imem[m->pc];
	unsigned op = ins >> 12, rd = (ins >> 9) & 7, rs = (ins >> 6) & 7, rt = (ins >> 3) & 7;
	uint16_t *r = m->r;
	uint8_t pc1 = (uint8_t)(m->pc + 1);
	uint8_t npc = pc1;
	switch (op) {
	case 0x0:
		if (!(ins & 1))
			m->running = 0;
		break;
	case 0x1:
		r[rd] = m->imem[pc1];
		npc = (uint8_t)(pc1 + 1);
		break;
	case 0x2: {
		int16_t imm = (int16_t)((ins & 0x3f) ^ 0x20) - 0x20;
		r[rd] = (uint16_t)(r[rs] + imm);
		break;
	}
	case 0x3: {
		uint16_t a = r[rs], b = r[rt], v;
		switch (ins & 7) {
		case 0: v = (uint16_t)(a + b); break;
		case 1: v = (uint16_t)(a - b); break;
		case 2: v = a & b; break;
		case 3: v = a | b; break;
		case 4: v = a ^ b; break;
		case 5: v = (uint16_t)(a << (b & 15)); break;
		case 6: v = (uint16_t)(a >> (b & 15)); break;
		default: v = (uint16_t)((uint32_t)a * b); break;
		}
		r[rd] = v;
		break;
	}
	case 0x4:
		switch (ins & 3) {
		case 0: r[rd] = (uint16_t)(m->w >> 16); break;
		case 1: r[rd] = (uint16_t)m->w; break;
		case 2: r[rd] = m->tid; break;
		default: r[rd] = 0; break;
		}
		break;
	case 0x5: {
		int eq = r[(ins >> 8) & 7] == r[(ins >> 5) & 7];
		int bne = (ins >> 11) & 1;
		if (eq != bne)
			npc = (uint8_t)(pc1 + (uint8_t)(((ins & 0x1f) ^ 0x10) - 0x10));
		break;
	}
	case 0x6:
		r[rd] = (uint16_t)(r[rd] - 1);
		if (r[rd])
			npc = (uint8_t)(pc1 + (ins & 0xff));
		break;
	case 0x7:
		npc = (uint8_t)(pc1 + (ins & 0xff));
		break;
	case 0x8:
		send(m, (ins >> 7) & 1, (ins >> 8) & 15,
		     ((uint32_t)r[(ins >> 4) & 7] << 16) | r[(ins >> 1) & 7]);
		break;
	case 0x9:
		if ((ins >> 11) & 1)
			m->task[ins & 31] &= (uint16_t)~0x100u;
		else
			m->task[ins & 31] |= 0x100u;
		break;
	case 0xA: {
		uint64_t h;
		if (!r[5])
			break;
		for (;;) {
			axpy_one(m);
			while (same_major_head(m, &h)) {
				pop(m);
				r[1] = (uint16_t)h;
			}
			if (!same_task_head(m, &h))
				break;
			pop(m);
			m->w = (uint32_t)h;
		}
		break;
	}
	case 0xB: {
		uint64_t h;
		uint16_t n = 0;
		dot_one(m, m->w, r[6]);
		n++;
		while (same_task_head(m, &h)) {
			pop(m);
			dot_one(m, (uint32_t)h, (uint16_t)(r[6] + n));
			n++;
		}
		r[6] = (uint16_t)(r[6] + n);
		break;
	}
	case 0xC: {
		unsigned color = (ins >> 8) & 15, store = (ins >> 7) & 1;
		while (m->redv_n < r[7]) {
			uint32_t p;
			if (m->redv_n == 0) {
				p = m->w;
			} else {
				uint64_t h;
				if (!same_task_head(m, &h))
					return 1; /* wait: pc stays here */
				pop(m);
				p = (uint32_t)h;
			}
			uint32_t *y = b_word(m, (uint16_t)(r[6] + m->redv_n));
			uint32_t v = nm_add_bits(p, *y);
			m->cnt[0]++;
			if (store)
				*y = v;
			else
				send(m, 0, color, v);
			m->redv_n++;
		}
		m->redv_n = 0;
		break;
	}
	case 0xD:
		for (uint16_t n = 0; n < r[7]; n++)
			send(m, 0, (ins >> 8) & 15, *b_word(m, (uint16_t)(r[6] + n)));
		break;
	case 0xE:
		for (uint16_t n = 0; n < r[7]; n++)
			*b_word(m, (uint16_t)(r[6] + n)) = 0;
		break;
	default: { /* 0xF */
		if (rt) { /* the extended group: xop [5:3] */
			vec_op(m, rt, rd, rs, ins & 7u);
			break;
		}
		uint16_t addr = r[rs];
		unsigned sel = ins & 3, hi = (ins >> 2) & 1;
		if (hi && sel == 0) { /* 4: vaxpy rd, rs */
			for (uint16_t n = 0; n < r[7]; n++) {
				uint32_t *y = b_word(m, (uint16_t)(r[6] + n));
				*y = nm_fmac_bits(r[rd], m->a[(uint16_t)(addr + n) & (m->awords - 1)], *y);
				m->cnt[0]++;
			}
		} else if (hi && sel == 1 && rs) { /* 5, rs != 0 (pe only): vmul rd, rs */
			for (uint16_t n = 0; n < r[7]; n++) {
				*b_word(m, (uint16_t)(r[6] + n)) = nm_fmac_bits(
					m->a[(uint16_t)(addr + n) & (m->awords - 1)], r[rd], 0);
				m->cnt[0]++;
			}
		} else if (hi && sel == 1) { /* 5: cvt.bh rd: Bh[r[rd] + n] = bf16(B[r6 + n]) */
			for (uint16_t n = 0; n < r[7]; n++) {
				uint16_t v = nm_bf16_from_bits(*b_word(m, (uint16_t)(r[6] + n)));
				uint16_t e = (uint16_t)(r[rd] + n);
				uint32_t *y = b_word(m, (uint16_t)(e >> 1));
				*y = (e & 1) ? (*y & 0xffffu) | (uint32_t)v << 16 : (*y & 0xffff0000u) | v;
			}
		} else if (sel == 0) {
			r[rd] = a_elem(m, addr);
		} else if (sel == 1) {
			m->a[addr & (m->awords - 1)] = r[rd];
		} else {
			uint32_t *y = b_word(m, addr);
			if (sel == 2)
				r[rd] = (uint16_t)(hi ? *y >> 16 : *y);
			else if (hi)
				*y = (*y & 0xffffu) | ((uint32_t)r[rd] << 16);
			else
				*y = (*y & 0xffff0000u) | r[rd];
		}
		break;
	}
	}
	m->pc = npc;
	return 0;
}

int pe_model_run(struct pe_model *m, uint64_t max_steps)
{
	for (uint64_t s = 0; s < max_steps; s++) {
		if (!m->running) {
			if (!pick(m))
				return 0;
			continue;
		}
		if (step(m))
			return 1;
	}
	return -1;
}
