/*
 * mesh_model.c - word-level model of the device; see mesh_model.h.
 */
#include "mesh_model.h"

#include <stdlib.h>
#include <string.h>

enum { D_N = 0, D_E = 1, D_S = 2, D_W = 3, D_L = 4 };
enum { OP_NOP, OP_ECHO, OP_WRITE, OP_READ, OP_RUN, OP_INJECT, OP_COLLECT, OP_SYNC,
       OP_COUNTERS, OP_CLEAR };
enum { ST_OK, ST_BAD_OP, ST_BAD_ADDR, ST_BAD_PE, ST_TIMEOUT, ST_BAD_ARG };

static int wq_push(struct mesh_model_wq *q, uint64_t w)
{
	if (q->tail == q->cap) {
		if (q->head > 0) {
			memmove(q->w, q->w + q->head, (q->tail - q->head) * sizeof *q->w);
			q->tail -= q->head;
			q->head = 0;
		}
		if (q->tail == q->cap) {
			size_t cap = q->cap ? 2 * q->cap : 64;
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

int mesh_model_init(struct mesh_model *m, int rows, int cols, unsigned awords, unsigned bwords,
		    int dot_by_major)
{
	memset(m, 0, sizeof *m);
	if (rows < 1 || cols < 1 || rows * cols > 255 || awords < 2 || bwords < 2 ||
	    (awords & (awords - 1)) || (bwords & (bwords - 1)))
		return -1;
	m->rows = rows;
	m->cols = cols;
	m->P = rows * cols;
	m->awords = awords;
	m->bwords = bwords;
	m->max_steps = 100000000ull;
	m->pe = calloc((size_t)m->P, sizeof *m->pe);
	m->route = calloc((size_t)m->P, sizeof *m->route);
	m->rctr = calloc((size_t)m->P, sizeof *m->rctr);
	if (!m->pe || !m->route || !m->rctr)
		goto fail;
	for (int q = 0; q < m->P; q++) {
		if (pe_model_init(&m->pe[q], awords, bwords, 4))
			goto fail;
		m->pe[q].dot_by_major = dot_by_major;
	}
	return 0;
fail:
	mesh_model_free(m);
	return -1;
}

void mesh_model_free(struct mesh_model *m)
{
	if (m->pe)
		for (int q = 0; q < m->P; q++)
			pe_model_free(&m->pe[q]);
	free(m->pe);
	free(m->route);
	free(m->rctr);
	free(m->host_out.w);
	free(m->cmd);
	free(m->rsp);
	memset(m, 0, sizeof *m);
}

static void rsp_put(struct mesh_model *m, uint32_t w)
{
	if (m->rsp_tail == m->rsp_cap) {
		if (m->rsp_head) {
			memmove(m->rsp, m->rsp + m->rsp_head,
				(m->rsp_tail - m->rsp_head) * sizeof *m->rsp);
			m->rsp_tail -= m->rsp_head;
			m->rsp_head = 0;
		}
		if (m->rsp_tail == m->rsp_cap) {
			size_t cap = m->rsp_cap ? 2 * m->rsp_cap : 1024;
			uint32_t *n = realloc(m->rsp, cap * sizeof *n);
			if (!n) {
				m->fault = 1;
				return;
			}
			m->rsp = n;
			m->rsp_cap = cap;
		}
	}
	m->rsp[m->rsp_tail++] = w;
	m->words_out++;
}

static uint32_t hdr(unsigned op, unsigned st, unsigned n)
{
	return 0xau << 28 | (op & 15u) << 24 | (st & 0xffu) << 16 | (n & 0xffffu);
}

/* A wavelet entering router q from direction `from`. */
static void route(struct mesh_model *m, int q, int from, uint64_t w, int hops)
{
	unsigned color = (unsigned)(w >> 32) & 15;
	unsigned mask = m->route[q][color];
	int r = q / m->cols, c = q % m->cols;
	(void)from;
	if (hops > 4 * m->P + 8) { /* a routing loop: the RTL would circulate; drop */
		m->rctr[q][5]++;
		return;
	}
	if (!mask) {
		m->rctr[q][5]++;
		return;
	}
	if (mask & 1) { /* N */
		m->rctr[q][0]++;
		if (r > 0)
			route(m, q - m->cols, D_S, w, hops + 1);
	}
	if (mask & 2) { /* E */
		m->rctr[q][1]++;
		if (c < m->cols - 1)
			route(m, q + 1, D_W, w, hops + 1);
	}
	if (mask & 4) { /* S */
		m->rctr[q][2]++;
		if (r < m->rows - 1)
			route(m, q + m->cols, D_N, w, hops + 1);
	}
	if (mask & 8) { /* W */
		m->rctr[q][3]++;
		if (c > 0)
			route(m, q - 1, D_E, w, hops + 1);
		else if (r == 0 && wq_push(&m->host_out, w))
			m->fault = 1;
	}
	if (mask & 16) { /* local */
		m->rctr[q][4]++;
		if (pe_model_rx(&m->pe[q], w))
			m->fault = 1;
	}
}

static int mesh_idle(const struct mesh_model *m)
{
	if (m->host_out.head != m->host_out.tail)
		return 0;
	for (int q = 0; q < m->P; q++) {
		const struct pe_model *p = &m->pe[q];
		if (p->running)
			return 0;
		for (unsigned i = 0; i < p->num_queues; i++)
			if (p->q[i].head != p->q[i].tail)
				return 0;
	}
	return 1;
}

int mesh_model_settle(struct mesh_model *m)
{
	for (;;) {
		int moved = 0;
		for (int q = 0; q < m->P; q++) {
			struct pe_model *p = &m->pe[q];
			if (pe_model_run(p, m->max_steps) < 0)
				m->fault = 1;
			if (p->nsent) {
				for (size_t k = 0; k < p->nsent; k++)
					route(m, q, D_L, p->sent[k], 0);
				p->nsent = 0;
				moved = 1;
			}
		}
		if (m->fault)
			return -1;
		if (!moved)
			break;
	}
	return mesh_idle(m);
}

static uint32_t tsize(const struct mesh_model *m, unsigned t)
{
	switch (t) {
	case 0: return m->awords / 2;
	case 1: return m->bwords;
	case 2: return m->bwords;
	case 3: return 256;
	case 4: return 32;
	case 5: return 16;
	case 6: return 16;
	case 7: return 8;
	case 8: return 5;
	case 9: return 6;
	default: return 0;
	}
}

static void cfg_write(struct mesh_model *m, int q, unsigned t, uint32_t a, uint32_t d)
{
	struct pe_model *p = &m->pe[q];
	switch (t) {
	case 0:
		p->a[(2 * a) & (m->awords - 1)] = (uint16_t)d;
		p->a[(2 * a + 1) & (m->awords - 1)] = (uint16_t)(d >> 16);
		break;
	case 1: p->b[a & (m->bwords - 1)] = d; break;
	case 3: p->imem[a & 255] = (uint16_t)d; break;
	case 4: p->task[a & 31] = (uint16_t)(d & 0x3ff); break;
	case 5: m->route[q][a & 15] = (uint8_t)(d & 31); break;
	case 6: p->qmap[a & 15] = (uint8_t)(d & (p->num_queues - 1)); break;
	case 7: p->r[a & 7] = (uint16_t)d; break;
	default: break;
	}
}

static uint32_t cfg_read(struct mesh_model *m, int q, unsigned t, uint32_t a)
{
	struct pe_model *p = &m->pe[q];
	switch (t) {
	case 0:
		return (uint32_t)p->a[(2 * a) & (m->awords - 1)] |
		       (uint32_t)p->a[(2 * a + 1) & (m->awords - 1)] << 16;
	case 1: return p->b[a & (m->bwords - 1)];
	case 2: { /* B read-and-clear */
		uint32_t v = p->b[a & (m->bwords - 1)];
		p->b[a & (m->bwords - 1)] = 0;
		return v;
	}
	case 3: return p->imem[a & 255];
	case 4: return p->task[a & 31];
	case 5: return m->route[q][a & 15];
	case 6: return p->qmap[a & 15];
	case 7: return p->r[a & 7];
	case 8: return a < 5 ? p->cnt[a] : 0;
	case 9: return a < 6 ? m->rctr[q][a] : 0;
	default: return 0;
	}
}

static void error(struct mesh_model *m, unsigned op, unsigned st)
{
	rsp_put(m, hdr(op, st, 0));
	m->err++;
}

/* Words a command takes, header included, from its header. */
static size_t cmd_len(uint32_t h)
{
	unsigned op = h >> 28, n = h & 0xffff;
	switch (op) {
	case OP_ECHO: return 1 + (size_t)n;
	case OP_WRITE: return 2 + (size_t)n;
	case OP_READ: return 2;
	case OP_RUN: return 1 + (size_t)((h >> 16) & 0xff);
	case OP_INJECT: return 1 + (size_t)n;
	case OP_COLLECT: return 2;
	case OP_SYNC: return 2;
	default: return 1;
	}
}

static void exec(struct mesh_model *m, const uint32_t *c)
{
	uint32_t h = c[0];
	unsigned op = h >> 28, t = (h >> 24) & 15, pe = (h >> 16) & 0xff, n = h & 0xffff;
	switch (op) {
	case OP_NOP:
		break;
	case OP_ECHO:
		rsp_put(m, hdr(OP_ECHO, ST_OK, n));
		for (unsigned k = 0; k < n; k++)
			rsp_put(m, c[1 + k]);
		break;
	case OP_WRITE: {
		uint32_t a = c[1];
		if (!tsize(m, t) || t == 2 || t == 8 || t == 9)
			{ error(m, op, ST_BAD_ARG); return; }
		if (pe != 0xff && (int)pe >= m->P)
			{ error(m, op, ST_BAD_PE); return; }
		if ((uint64_t)a + n > tsize(m, t))
			{ error(m, op, ST_BAD_ADDR); return; }
		mesh_model_settle(m);
		for (int q = 0; q < m->P; q++)
			if (pe == 0xff || (int)pe == q)
				for (unsigned k = 0; k < n; k++)
					cfg_write(m, q, t, (a + k) & 0xffff, c[2 + k]);
		break;
	}
	case OP_READ: {
		uint32_t a = c[1];
		if (!tsize(m, t))
			{ error(m, op, ST_BAD_ARG); return; }
		if ((int)pe >= m->P && pe != 0xff)
			{ error(m, op, ST_BAD_PE); return; }
		if ((uint64_t)a + n > tsize(m, t))
			{ error(m, op, ST_BAD_ADDR); return; }
		mesh_model_settle(m);
		/* pe 0xff: every PE in order, each answering as a READ of its own */
		for (int q = pe == 0xff ? 0 : (int)pe; q < (pe == 0xff ? m->P : (int)pe + 1); q++) {
			rsp_put(m, hdr(OP_READ, ST_OK, n));
			for (unsigned k = 0; k < n; k++)
				rsp_put(m, cfg_read(m, q, t, (a + k) & 0xffff));
		}
		break;
	}
	case OP_RUN:
	case OP_INJECT: {
		unsigned cnt = op == OP_RUN ? pe : n;
		int ctrl = op == OP_INJECT && ((h >> 23) & 1);
		if (op == OP_RUN && cnt == 0)
			{ error(m, op, ST_BAD_ARG); return; }
		if (!m->route[0][t])
			{ error(m, op, ST_BAD_ARG); return; }
		/* RUN: SET_MAJOR major, then the nonzeros; a nonzero with bit 31 set (the step)
		 * is preceded by SET_MAJOR major+1 and goes out with the bit cleared */
		unsigned major = n & 0xffff;
		if (op == OP_RUN)
			route(m, 0, D_W, (uint64_t)1 << 36 | (uint64_t)t << 32 | major, 0);
		for (unsigned k = 0; k < cnt; k++) {
			uint32_t w = c[1 + k];
			if (op == OP_RUN && (w >> 31)) {
				major = (major + 1) & 0xffff;
				route(m, 0, D_W, (uint64_t)1 << 36 | (uint64_t)t << 32 | major, 0);
				w &= 0x7fffffffu;
			}
			route(m, 0, D_W, (uint64_t)ctrl << 36 | (uint64_t)t << 32 | w, 0);
		}
		mesh_model_settle(m);
		break;
	}
	case OP_COLLECT: {
		if (n > MESH_MODEL_COLLECT_DEPTH)
			{ error(m, op, ST_BAD_ARG); return; }
		mesh_model_settle(m);
		struct mesh_model_wq *q = &m->host_out;
		size_t have = q->tail - q->head;
		unsigned k = have < n ? (unsigned)have : n;
		rsp_put(m, hdr(OP_COLLECT, k == n ? ST_OK : ST_TIMEOUT, k));
		if (k != n)
			m->err++;
		for (unsigned i = 0; i < k; i++)
			rsp_put(m, (uint32_t)q->w[q->head++]);
		break;
	}
	case OP_SYNC:
		if (mesh_model_settle(m) == 1) {
			rsp_put(m, hdr(OP_SYNC, ST_OK, m->err));
		} else {
			rsp_put(m, hdr(OP_SYNC, ST_TIMEOUT, m->err + 1));
			m->err++;
		}
		break;
	case OP_COUNTERS:
		if ((int)pe >= m->P)
			{ error(m, op, ST_BAD_PE); return; }
		mesh_model_settle(m);
		rsp_put(m, hdr(OP_COUNTERS, ST_OK, 14));
		rsp_put(m, 0);
		rsp_put(m, 0);
		for (unsigned k = 0; k < 5; k++)
			rsp_put(m, cfg_read(m, (int)pe, 8, k));
		for (unsigned k = 0; k < 6; k++)
			rsp_put(m, m->rctr[pe][k]);
		rsp_put(m, m->err);
		break;
	case OP_CLEAR:
		m->err = 0;
		memset(m->rctr, 0, (size_t)m->P * sizeof *m->rctr);
		for (int q = 0; q < m->P; q++)
			memset(m->pe[q].cnt, 0, sizeof m->pe[q].cnt);
		break;
	default:
		error(m, op, ST_BAD_OP);
		break;
	}
}

int mesh_model_send(struct mesh_model *m, const uint32_t *w, size_t n)
{
	m->words_in += n;
	while (n) {
		if (m->ncmd == m->capcmd) {
			size_t cap = m->capcmd ? 2 * m->capcmd : 1024;
			uint32_t *nb = realloc(m->cmd, cap * sizeof *nb);
			if (!nb)
				return -1;
			m->cmd = nb;
			m->capcmd = cap;
		}
		/* copy as much of the current command as is here */
		size_t need = m->ncmd ? cmd_len(m->cmd[0]) - m->ncmd : 1;
		if (!m->ncmd) {
			m->cmd[m->ncmd++] = *w++;
			n--;
		} else {
			size_t room = m->capcmd - m->ncmd, k = need < n ? need : n;
			if (k > room)
				k = room;
			memcpy(m->cmd + m->ncmd, w, k * sizeof *w);
			m->ncmd += k;
			w += k;
			n -= k;
		}
		if (m->ncmd == cmd_len(m->cmd[0])) {
			exec(m, m->cmd);
			m->ncmd = 0;
		}
		if (m->fault)
			return -1;
	}
	return 0;
}

size_t mesh_model_avail(const struct mesh_model *m)
{
	return m->rsp_tail - m->rsp_head;
}

int mesh_model_recv(struct mesh_model *m, uint32_t *w, size_t n)
{
	if (mesh_model_avail(m) < n)
		return -1;
	memcpy(w, m->rsp + m->rsp_head, n * sizeof *w);
	m->rsp_head += n;
	return 0;
}
