/*
 * plan.c - tiling, memory map and host-port command stream of the three kernels
 * (docs/architecture.md 4.5, 5, 6). See plan.h for who uses it how.
 *
 * Stream of one kernel call (every backend sends exactly this):
 *   CLEAR
 *   task tables (fwd/bwd: one broadcast WRITE; wgrad: one WRITE per PE, roles differ)
 *   for each token tile:
 *     WRITE A to each PE (its tp_k tokens, zero padded)
 *     fwd/bwd: WRITE r0..r7 (broadcast), SYNC (the writes land before any wavelet)
 *       for each output tile d (B bank d&1):
 *         INJECT [SET_BBASE bank (d > 0)] [SET_BSTRIDE width (when it changes)]
 *                [START (d < 2: the bank's first use in this token tile)]
 *         RUNs
 *         SYNC (answers when tile d is computed and tile d-1's READ, which streamed
 *               meanwhile, is done; d > 0: that READ's answer comes first)
 *         READ-and-clear B of every PE (pe 0xff, target 2): streams while tile d+1
 *         computes in the other bank, and leaves the bank zeroed for tile d+2
 *       take the last READ's answer
 *     wgrad: for each output tile:
 *       WRITE B (dY tile, packed bf16) to each PE, WRITE r0..r7, SYNC
 *       per batch of <= batch_cap positions: RUNs, INJECT END(count), COLLECT count
 */
#include "driver/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/numerics.h"
#include "driver/proto.h"
#include "driver/wstream.h"

static int ceil_div(long a, long b)
{
	return (int)((a + b - 1) / b);
}

int plan_make(struct plan *pl, const struct plan_geom *g, enum plan_kernel kernel, int T,
	      int n_out, int n_in, char *err, size_t errlen)
{
	static const char *const kname[] = { "forward", "backward", "wgrad", "backward+wgrad" };
	memset(pl, 0, sizeof *pl);
	if (T <= 0 || n_out <= 0 || n_in <= 0 || n_out > 65536 || n_in > 65536) {
		snprintf(err, errlen, "%s: bad shape T=%d n_out=%d n_in=%d (1..65536 features)",
			 kname[kernel], T, n_out, n_in);
		return CS_ERR_INVALID;
	}
	pl->kernel = kernel;
	pl->T = T;
	pl->n_out = n_out;
	pl->n_in = n_in;
	pl->g = *g;
	pl->P = g->rows * g->cols;
	int bwd = kernel == PLAN_BWD || kernel == PLAN_BWG;
	pl->din = bwd ? n_out : n_in;
	pl->dout = bwd ? n_in : n_out;
	if ((uint32_t)pl->din > g->a_words) {
		snprintf(err, errlen,
			 "%s: %d stationary features do not fit one token in SRAM A (%u elements)",
			 kname[kernel], pl->din, g->a_words);
		return CS_ERR_RANGE;
	}
	/* B capacity for one token's outputs: fwd/bwd one bank of fp32 words, wgrad the
	 * dY elements (packed bf16) of bank 0; partial sums live in bank 1. */
	long bcap = kernel == PLAN_WGRAD ? (long)g->b_words : (long)g->b_words / 2;
	long tp = ceil_div(T, pl->P);
	if (tp > (long)(g->a_words / (uint32_t)pl->din))
		tp = g->a_words / (uint32_t)pl->din;
	if (tp > bcap)
		tp = bcap;
	if (tp > 65535)
		tp = 65535;
	pl->tp = (int)tp;
	long dt = bcap / tp;
	pl->dt = dt < pl->dout ? (int)dt : pl->dout;
	pl->n_ttiles = ceil_div(T, (long)pl->P * pl->tp);
	pl->n_otiles = ceil_div(pl->dout, pl->dt);
	if (kernel == PLAN_BWG) {
		/* the wgrad phase: X tiles of the backward's tp tokens, packed bf16 in bank 0 */
		long dw = (long)g->b_words / tp;
		pl->dt_w = dw < n_in ? (int)dw : n_in;
		pl->n_otiles_w = ceil_div(n_in, pl->dt_w);
	}
	if (kernel == PLAN_WGRAD || kernel == PLAN_BWG) {
		pl->pb = g->b_words / 2;
		/* a batch's results come back in one COLLECT: at most the host port's
		 * COLLECT buffer (256 words) */
		pl->batch_cap = g->b_words / 2 < PROTO_COLLECT_MAX ? g->b_words / 2
								   : PROTO_COLLECT_MAX;
	}
	return CS_OK;
}

void plan_ttile(const struct plan *pl, int k, int *t0, int *tp_k, int *ntok)
{
	int s = k * pl->P * pl->tp;
	int n = pl->T - s < pl->P * pl->tp ? pl->T - s : pl->P * pl->tp;
	*t0 = s;
	*ntok = n;
	*tp_k = ceil_div(n, pl->P);
}

/* ---- routes and task tables ----------------------------------------------------------- */

enum { M_N = 1, M_E = 2, M_S = 4, M_W = 8, M_L = 16 };

void plan_routes(const struct plan_geom *g, int r, int c, uint32_t mask[16])
{
	memset(mask, 0, 16 * sizeof mask[0]);
	/* BCAST: E along row 0, S down every column, and local everywhere */
	mask[PROTO_C_BCAST] = M_L | (r == 0 && c < g->cols - 1 ? M_E : 0) |
			      (r < g->rows - 1 ? M_S : 0);
	/* row reduction: a PE in column c sends on RR(c&1) to the west and hears its east
	 * neighbour on RR((c+1)&1) */
	if (c > 0)
		mask[PROTO_C_RR0 + (c & 1)] |= M_W;
	if (c < g->cols - 1)
		mask[PROTO_C_RR0 + ((c + 1) & 1)] |= M_L;
	/* column reduction in column 0 */
	if (c == 0) {
		if (r > 0)
			mask[PROTO_C_CR0 + (r & 1)] |= M_N;
		if (r < g->rows - 1)
			mask[PROTO_C_CR0 + ((r + 1) & 1)] |= M_L;
	}
	if (r == 0 && c == 0)
		mask[PROTO_C_OUT] = M_W; /* to the host port */
}

static uint32_t task_word(int valid, int blocked, int pc)
{
	return (uint32_t)(valid ? 1 : 0) << 9 | (uint32_t)(blocked ? 1 : 0) << 8 |
	       (uint32_t)(pc & 0xff);
}

static int fw_pc(const struct csd_fw *fw, const char *name, int *pc)
{
	if (!fw) { /* counting without an image: the words are the same */
		*pc = 0;
		return CS_OK;
	}
	*pc = csd_fw_find(fw, name);
	return *pc < 0 ? CS_ERR_NOT_FOUND : CS_OK;
}

#define TID_DATA(color) (color)
#define TID_CTRL(color) (16 + (color))

/*
 * wgrad roles (docs/architecture.md 5): the column role of PE(r,0) is "out" (Rows = 1:
 * send s_0 on OUT), "cs<p>" (bottom row: send s on CR p), or "cin<p>" (unblock the column
 * task that hears CR p from the south). Row roles: east edge "e<p>" (send p on RR p), else
 * "in<p>" (unblock the row task that hears RR p from the east).
 */
int plan_tasks(const struct plan_geom *g, const struct csd_fw *fw, enum plan_kernel kernel,
	       int r, int c, uint32_t table[32])
{
	char name[CSD_FW_SYMLEN], colrole[8];
	int pc, rc;
	memset(table, 0, 32 * sizeof table[0]);
	if (kernel != PLAN_WGRAD) {
		if ((rc = fw_pc(fw, "axpy", &pc)))
			return rc;
		table[TID_DATA(PROTO_C_BCAST)] = task_word(1, 0, pc);
		if ((rc = fw_pc(fw, "ctl", &pc)))
			return rc;
		table[TID_CTRL(PROTO_C_BCAST)] = task_word(1, 0, pc);
		return CS_OK;
	}
	if ((rc = fw_pc(fw, "dot", &pc)))
		return rc;
	table[TID_DATA(PROTO_C_BCAST)] = task_word(1, 0, pc);
	if (g->rows == 1)
		snprintf(colrole, sizeof colrole, "out");
	else if (r == g->rows - 1)
		snprintf(colrole, sizeof colrole, "cs%d", r & 1);
	else
		snprintf(colrole, sizeof colrole, "cin%d", (r + 1) & 1);

	if (g->cols == 1)
		snprintf(name, sizeof name, "wg_ctl_%s", colrole);
	else if (c == g->cols - 1)
		snprintf(name, sizeof name, "wg_ctl_e%d", c & 1);
	else
		snprintf(name, sizeof name, "wg_ctl_in%d", (c + 1) & 1);
	if ((rc = fw_pc(fw, name, &pc)))
		return rc;
	table[TID_CTRL(PROTO_C_BCAST)] = task_word(1, 0, pc);

	if (g->cols > 1 && c < g->cols - 1) { /* row task, hears RR((c+1)&1) */
		if (c > 0)
			snprintf(name, sizeof name, "wg_rr_o%d", c & 1);
		else
			snprintf(name, sizeof name, "wg_rr_w_%s", colrole);
		if ((rc = fw_pc(fw, name, &pc)))
			return rc;
		table[TID_DATA(PROTO_C_RR0 + ((c + 1) & 1))] = task_word(1, 1, pc);
	}
	if (c == 0 && g->rows > 1 && r < g->rows - 1) { /* column task, hears CR((r+1)&1) */
		if (r == 0)
			snprintf(name, sizeof name, "wg_cr_top");
		else
			snprintf(name, sizeof name, "wg_cr_o%d", r & 1);
		if ((rc = fw_pc(fw, name, &pc)))
			return rc;
		table[TID_DATA(PROTO_C_CR0 + ((r + 1) & 1))] = task_word(1, 1, pc);
	}
	return CS_OK;
}

/* ---- the word stream (driver/wstream.h) ----------------------------------------------- */

#define WBUF_WORDS 16384

struct runbuf {
	unsigned major;  /* the header's major */
	int last;        /* major of the last nonzero in the RUN */
	uint32_t n;      /* nonzeros in it (0: no RUN open) */
	uint32_t segs;   /* SET_MAJORs it makes: the header's and one per step */
	int cold;        /* its header's SET_MAJOR follows another control wavelet (a tile's
			  * start): the control task runs it whatever the PE */
	uint64_t cost;   /* cycle estimate of its nonzeros (run_add, per major) */
	uint32_t w[PROTO_RUN_MAX];
};

#define PLAN_AXHIST 8 /* nonzeros axpy_cycles looks back: more than hazard + 2 cycles */

/*
 * The tile stream state: what the stream so far leaves for the next nonzero run_add takes.
 * First touch (plan_exec_resident on pe): ft, per output, 1 once a nonzero (or a zero
 * wavelet) wrote it, over the call's one tile; zflag, the nonzeros run_add takes are zero
 * wavelets (all flagged). Per output tile (tile_stream_start): cold, no RUN yet (the tile's
 * control wavelets came last); axpy's chain (axpy_cycles), its clock and the last
 * nonzeros' minors and first MACs' cycles.
 */
struct tile_stream {
	uint8_t *ft;
	int zflag;
	int cold;
	uint64_t ax_clk, ax_t[PLAN_AXHIST];
	int32_t ax_min[PLAN_AXHIST];
	int ax_i;
};

/* A new output tile: cold, axpy's chain empty (ft and zflag are the call's). */
static void tile_stream_start(struct tile_stream *ts)
{
	ts->cold = 1;
	ts->ax_clk = 0;
	for (int h = 0; h < PLAN_AXHIST; h++)
		ts->ax_min[h] = -1;
}

struct kstate {
	const struct plan *pl;
	const struct plan_io *io;
	struct wstream *ws;
	uint32_t *tmp; /* a PE's worth of words */
	char *err;
	size_t errlen;
	enum plan_kernel k; /* the phase running: PLAN_FWD, PLAN_BWD or PLAN_WGRAD */
	int tk;         /* token tile */
	int t0, tp_k, ntok;
	int o0, o1;     /* output tile */
	uint32_t mbase; /* A address of major 0's token 0 (resident regions; else 0) */
	/* wgrad batch */
	uint32_t bcount;
	int64_t *bpos;  /* CSR positions of the batch (real mode) */
	struct runbuf rb; /* the open RUN */
	struct tile_stream ts;
	/* a carried READ (plan_exec_resident): words issued so far, the open chunk */
	const struct plan_side *side;
	uint64_t s_done, s_lo, s_cyc, s_sc;
	int s_open, s_batch;
	/* a carried WRITE (fwd/bwd): words issued so far, nonzeros streamed since the last
	 * chunk */
	const struct plan_wside *wside;
	uint64_t w_done, w_nz;
};

/* Issue the carried READ's next chunk: up to word hi. */
static void side_open(struct kstate *ks, uint64_t hi)
{
	if (!ks->side || ks->s_open || hi <= ks->s_done)
		return;
	ks->s_lo = ks->s_done;
	ks->s_cyc = ks->side->issue(ks->side->ctx, ks->ws, ks->s_lo, hi);
	ks->s_sc = ks->ws->st->stream_cycles;
	ks->s_done = hi;
	ks->s_open = 1;
}

/* The open chunk's answers; the estimate adds what the READ took beyond the stream that
 * ran since it was issued. tail: the cycles of that stream that wait for the command
 * after the READ (a wgrad batch's COLLECT: the host port takes the reduction's n results
 * only while a COLLECT runs, so they stream after the READ). */
static int side_close(struct kstate *ks, uint64_t tail)
{
	if (!ks->s_open)
		return CS_OK;
	struct plan_stats *st = ks->ws->st;
	uint64_t sc = st->stream_cycles - ks->s_sc;
	if (ks->s_cyc + tail > sc) {
		st->cycles += ks->s_cyc + tail - sc;
		st->act_cycles += ks->s_cyc + tail - sc;
	}
	ks->s_open = 0;
	return ks->side->recv(ks->side->ctx, ks->ws, ks->s_lo, ks->s_done, ks->err, ks->errlen);
}

/*
 * A carried WRITE of A (plan_wside) holds the host port: the RUNs behind a chunk wait for
 * it, while every PE computes what its input queue holds. So a chunk goes where that work
 * covers it: after the START (its fill) and between majors (the RUN closed there; the next
 * major's SET_MAJOR comes with the new RUN's header instead of a step, so the PEs run the
 * same tasks), at most the queued work less the trip of the next wavelet. Queued between
 * majors: the last min(k, PLAN_WQUEUE) of the k nonzeros since the last chunk, tp_k cycles
 * each, less the cycles their words took. What is left goes after the last RUN; the
 * estimate adds of it what the queued work does not cover.
 */
#define PLAN_WQUEUE 8 /* pe's input queue depth (mesh_tile's QueueDepth) */
static void run_close(struct kstate *ks);

static uint64_t wside_queued(const struct kstate *ks)
{
	const struct plan_geom *g = &ks->pl->g;
	uint64_t q = ks->w_nz < PLAN_WQUEUE ? ks->w_nz : PLAN_WQUEUE;
	uint64_t work = q * (uint64_t)ks->tp_k, lat = q + 2 + (uint64_t)(g->rows + g->cols) + 8;
	return work > lat ? work - lat : 0;
}

static void wside_put(struct kstate *ks, uint64_t budget, int last)
{
	const struct plan_wside *s = ks->wside;
	if (!s || ks->w_done >= s->n_words)
		return;
	uint64_t hi = ks->w_done;
	uint64_t c = s->issue(s->ctx, ks->ws, ks->w_done, last ? UINT64_MAX : budget, &hi);
	ks->w_done = hi;
	ks->w_nz = 0;
	if (last && c > budget) {
		ks->ws->st->cycles += c - budget;
		ks->ws->st->act_cycles += c - budget;
	}
}

/* Before major m's first nonzero: a chunk of the carried WRITE, if any fits (wgrad: within
 * a batch, whose positions the PEs work off as dot groups, about tp_k cycles each; after
 * its COLLECT nothing is queued). */
static void wside_between(struct kstate *ks)
{
	if (!ks->wside || ks->w_done >= ks->wside->n_words || !ks->w_nz ||
	    (ks->k == PLAN_WGRAD && !ks->bcount))
		return;
	uint64_t budget = wside_queued(ks);
	if (budget < 3) /* a WRITE of one word takes 3 cycles */
		return;
	run_close(ks);
	wside_put(ks, budget, 0);
}

/* wgrad: the chunk of batch j ends at the words in proportion to the nonzeros up to the
 * batch's end. */
static void side_open_batch(struct kstate *ks)
{
	if (!ks->side)
		return;
	uint64_t nnz = (uint64_t)ks->io->w->nnz, cap = ks->pl->batch_cap;
	uint64_t e = (uint64_t)(ks->s_batch + 1) * cap;
	if (e > nnz)
		e = nnz;
	side_open(ks, nnz ? ks->side->n_words * e / nnz : ks->side->n_words);
	ks->s_batch++;
}

/*
 * Runs (docs/architecture.md 1, 6): a RUN header carries the major of its first nonzero;
 * a nonzero word with PROTO_RUN_STEP set belongs to the next major (the host port emits
 * SET_MAJOR major+1 before it). So one RUN spans consecutive nonempty majors, and a new
 * RUN starts only at the first nonzero of a tile (and of a wgrad batch), after 255
 * nonzeros, and where the major skips one or more empty majors. On pe (g.dot_by_major 0)
 * wgrad positions carry their major in the value field instead (dot's A offset, section
 * 4.4): the header's major is the A base (mbase), no word steps, and a RUN spans any
 * majors of its batch. pe_lite and pe_micro_mt (g.dot_by_major 1) read no offset: their
 * wgrad RUNs follow the rule above, each position's val 0 (so pe runs that stream too,
 * dotspan=0). The open RUN's words wait in ks->rb until it is closed (its header carries
 * the count).
 */
static void run_close(struct kstate *ks)
{
	struct wstream *ws = ks->ws;
	const struct plan *pl = ks->pl;
	struct runbuf *rb = &ks->rb;
	if (!rb->n)
		return;
	uint32_t *p = ws_reserve(ws, (size_t)rb->n + 1);
	if (p) {
		p[0] = proto_hdr_run(PROTO_C_BCAST, rb->n, rb->major);
		memcpy(p + 1, rb->w, (size_t)rb->n * sizeof *p);
	}
	ws->st->weight_words += (uint64_t)rb->n + 1;
	ws->st->nnz += rb->n;
	ws->st->runs++;
	/* per SET_MAJOR (the header's and each step's) the control task, or on pe one that
	 * axpy's chain takes (major_cycles: every one but a tile's first, with Tp_k >= 2);
	 * then the nonzeros' cost (run_add); the link brings at most one word per cycle */
	uint64_t ctl = rb->segs;
	if (ks->k != PLAN_WGRAD && ks->tp_k >= 2)
		ctl = (uint64_t)rb->cold;
	uint64_t c = ctl * (uint64_t)pl->g.ctl_cycles +
		     (rb->segs - ctl) * (uint64_t)pl->g.major_cycles + rb->cost;
	if (c < (uint64_t)rb->n + 1)
		c = (uint64_t)rb->n + 1;
	ws->st->cycles += c;
	ws->st->stream_cycles += c;
	ws->st->mac_busy += (uint64_t)rb->n * ks->tp_k * pl->P;
	rb->n = 0;
}

/*
 * Estimated cycles of m consecutive positions of one SET_MAJOR segment of a wgrad (a
 * control wavelet ends every dot group; axpy: axpy_cycles). dot (pe_vec.v): a segment is a
 * whole RUN of positions of any majors (pe; with g.dot_by_major one major); they form
 * groups of up to DotLanes = hazard
 * lanes; every token step of a group takes DotLanes cycles, whatever its lanes, except
 * the last, which takes one cycle per lane: hazard * (tp_k - 1) + lanes, so about tp_k
 * cycles a position across majors, while a short group of one major (a 90%-sparse layer's
 * majors hold few positions) costs nearly as much as a full one. The dot instruction then
 * needs PLAN_DOT_END cycles beyond axpy's to close (its end check and the r6 write)
 * before the control task of the next segment runs.
 */
#define PLAN_DOT_END 2
static uint64_t seg_cycles(const struct plan *pl, int tp_k, size_t m)
{
	uint64_t hz = (uint64_t)pl->g.hazard_cycles;
	uint64_t groups = (m + hz - 1) / hz;
	return groups * hz * (uint64_t)(tp_k - 1) + m + PLAN_DOT_END;
}

/*
 * axpy's cycles for m nonzeros (pe_vec.v): tp_k a nonzero, except that a nonzero's first MAC
 * waits while a write of its B words is in flight: from the R stage through the out stage
 * of a MAC of the same minor (the same words) issued less than hazard + 2 cycles before.
 * Within a major the minors differ; across a SET_MAJOR that axpy's chain takes (gap:
 * major_cycles, 0 on pe) a major's first nonzeros can wait for the last ones of the major
 * before when tp_k is short; a control task (ctl_cycles) covers that depth. The clock runs
 * through a tile's RUNs; gap is the SET_MAJOR's cycles (counted by run_close, not here).
 */
static uint64_t axpy_cycles(struct tile_stream *ts, const struct plan_geom *g, int tp_k,
			    const int32_t *minor, size_t m, uint64_t gap)
{
	uint64_t d = (uint64_t)g->hazard_cycles + 2, t = ts->ax_clk + gap, t0 = t;
	for (size_t k = 0; k < m; k++) {
		for (int h = 0; h < PLAN_AXHIST; h++)
			if (ts->ax_min[h] == minor[k] && ts->ax_t[h] + d > t)
				t = ts->ax_t[h] + d;
		ts->ax_min[ts->ax_i] = minor[k];
		ts->ax_t[ts->ax_i] = t;
		ts->ax_i = (ts->ax_i + 1) % PLAN_AXHIST;
		t += (uint64_t)tp_k;
	}
	ts->ax_clk = t;
	return t - t0;
}

/* First touch: flag each of the m nonzero words w (of minors minor) that writes its output
 * first (all of them for zero wavelets), marking the outputs written. */
static void tile_stream_flag(struct tile_stream *ts, uint32_t *w, const int32_t *minor, size_t m)
{
	for (size_t k = 0; k < m && ts->ft; k++) {
		if (ts->zflag || !ts->ft[minor[k]])
			w[k] |= PROTO_NZ_FIRST;
		ts->ft[minor[k]] = 1;
	}
}

/* Append nonzeros [lo, lo + m) of major `major` (m <= room in the RUN) to the open RUN,
 * opening one or closing the current one as the run rule says. Returns how many it took. */
static size_t run_add(struct kstate *ks, int major, const int32_t *minor, const uint16_t *val,
		      size_t m)
{
	struct runbuf *rb = &ks->rb;
	int dot = ks->k == PLAN_WGRAD, span = dot && !ks->pl->g.dot_by_major;
	if (rb->n && (rb->n == PROTO_RUN_MAX ||
		      (!span && major != rb->last && major != rb->last + 1)))
		run_close(ks);
	int step = 0, open = !rb->n;
	if (open) {
		rb->major = span ? ks->mbase : (unsigned)major + ks->mbase;
		rb->segs = 1;
		rb->cost = 0;
		rb->cold = ks->ts.cold;
		ks->ts.cold = 0;
	} else if (!span && major == rb->last + 1) {
		step = 1;
		rb->segs++;
	}
	rb->last = major;
	if (m > PROTO_RUN_MAX - rb->n)
		m = PROTO_RUN_MAX - rb->n;
	if (ks->ws->buf) {
		uint32_t *w = rb->w + rb->n;
		/* a position's val: dot's A offset from r1 (its major, or 0 by majors) */
		for (size_t k = 0; k < m; k++)
			w[k] = proto_nz((unsigned)(minor[k] - ks->o0),
					span ? (uint16_t)major : dot ? 0 : val[k]);
		tile_stream_flag(&ks->ts, w, minor, m);
		if (step)
			w[0] |= PROTO_RUN_STEP;
	}
	rb->n += (uint32_t)m;
	if (!dot) { /* the SET_MAJOR opened here: axpy's chain takes it, or the control task */
		int task = (open && rb->cold) || ks->tp_k < 2;
		uint64_t gap = !open && !step ? 0 :
			       (uint64_t)(task ? ks->pl->g.ctl_cycles : ks->pl->g.major_cycles);
		rb->cost += axpy_cycles(&ks->ts, &ks->pl->g, ks->tp_k, minor, m, gap);
	} else if (!span) {
		rb->cost += seg_cycles(ks->pl, ks->tp_k, m);
	} else /* one segment: the RUN's positions so far */
		rb->cost = seg_cycles(ks->pl, ks->tp_k, rb->n);
	return m;
}

/* Finish a wgrad batch: END, COLLECT, fold the results into dw. */
static int wgrad_end_batch(struct kstate *ks)
{
	struct wstream *ws = ks->ws;
	const struct plan *pl = ks->pl;
	uint32_t n = ks->bcount;
	if (!n)
		return CS_OK;
	ws_put(ws, proto_hdr_inject(PROTO_C_BCAST, 1, 1));
	ws_put(ws, proto_ctl(PROTO_CTL_END, n));
	ws_put(ws, proto_hdr_collect(n));
	ws_put(ws, ws->link->timeout_cycles);
	/* The reduction (section 5) is part of the streaming phase: with more than one
	 * column, column 0 first stores its row sums (redv.st, n words), then the column
	 * streams them to OUT (n words, pipelined down the column); one column only streams.
	 * Then the host port answers the COLLECT from its buffer: n more words. */
	uint64_t red = (uint64_t)(pl->g.cols > 1 ? 2 : 1) * n +
		       (uint64_t)(pl->g.rows + pl->g.cols) * (uint64_t)(pl->g.hazard_cycles + 2) + 4;
	ws->st->cycles += red + n;
	ws->st->stream_cycles += red;
	ws->st->grad_words_in += 1 + (uint64_t)n;
	/* a carried READ's chunk answers first (the COLLECT waits for it) */
	int rc = side_close(ks, n);
	if (rc)
		return rc;
	if ((rc = ws_recv(ws, ks->tmp, n, PROTO_COLLECT, n, ks->err, ks->errlen)))
		return rc;
	if (ws->buf) {
		float *dw = pl->kernel == PLAN_BWG ? ks->io->out2 : ks->io->out;
		for (uint32_t k = 0; k < n; k++) {
			float d = nm_bits_f32(ks->tmp[k]);
			int64_t p = ks->bpos[k];
			dw[p] = ks->tk == 0 ? d : nm_add(dw[p], d);
		}
	}
	ks->bcount = 0;
	ks->w_nz = 0; /* the batch's work is done: nothing queued covers a WRITE */
	return ws->rc;
}

/* The weight stream of the current output tile (and, for wgrad, its batches). */
static int stream_tile(struct kstate *ks)
{
	const struct plan *pl = ks->pl;
	const csd_sparse *w = ks->io->w;
	/* forward and wgrad stream CSC; backward and PLAN_BWG's wgrad phase CSR */
	int csc = ks->k == PLAN_FWD || (ks->k == PLAN_WGRAD && pl->kernel == PLAN_WGRAD);
	const int64_t *ptr = csc ? w->col_ptr : w->row_ptr;
	const int32_t *minor = csc ? w->row : w->col;
	const uint16_t *val = csc ? w->cval : w->val;
	int whole = ks->o0 == 0 && ks->o1 == pl->dout;
	int rc;
	tile_stream_start(&ks->ts);
	for (int m = 0; m < pl->din; m++) {
		int64_t lo = ptr[m], hi = ptr[m + 1];
		if (!whole) {
			/* minors ascend within a major: bisect the tile's range */
			int64_t a = lo, b = hi;
			while (a < b) {
				int64_t mid = a + (b - a) / 2;
				if (minor[mid] < ks->o0)
					a = mid + 1;
				else
					b = mid;
			}
			lo = a;
			b = hi;
			while (a < b) {
				int64_t mid = a + (b - a) / 2;
				if (minor[mid] < ks->o1)
					a = mid + 1;
				else
					b = mid;
			}
			hi = a;
		}
		if (lo < hi)
			wside_between(ks);
		while (lo < hi) {
			size_t m_n = (size_t)(hi - lo);
			if (ks->k == PLAN_WGRAD && m_n > pl->batch_cap - ks->bcount)
				m_n = pl->batch_cap - ks->bcount;
			if (ks->k == PLAN_WGRAD && ks->bcount == 0)
				side_open_batch(ks); /* before the batch's first RUN */
			m_n = run_add(ks, m, minor + lo, val + lo, m_n);
			if (ks->ws->rc)
				return ks->ws->rc;
			ks->w_nz += m_n;
			if (ks->k == PLAN_WGRAD) {
				if (ks->bpos)
					for (size_t k = 0; k < m_n; k++)
						ks->bpos[ks->bcount + k] =
							csc ? w->csr_pos[lo + (int64_t)k] : lo + (int64_t)k;
				ks->bcount += (uint32_t)m_n;
				if (ks->bcount == pl->batch_cap) {
					run_close(ks); /* a batch ends with a complete RUN */
					if ((rc = wgrad_end_batch(ks)))
						return rc;
				}
			}
			lo += (int64_t)m_n;
		}
	}
	run_close(ks);
	if (ks->ws->rc)
		return ks->ws->rc;
	if (ks->k == PLAN_WGRAD)
		return wgrad_end_batch(ks);
	return CS_OK;
}

/* SYNC with an error check; every kernel's fwd/bwd tile ends with one, and one follows the
 * configuration writes of each output tile: the config chain and the wavelet fabric are not
 * ordered with each other (a broadcast register write reaches PE q after about q chain
 * stages, a wavelet after r + c hops), so the first wavelet must wait until every write has
 * landed (SYNC waits for the chain to drain). */
static int sync_point(struct kstate *ks, const char *what)
{
	return ws_sync(ks->ws, ks->pl->P, what, ks->err, ks->errlen);
}

/* The answer of a forward or backward tile's SYNC (sent earlier: a READ's answer may come
 * between): the pipeline's drain and the answer's trip estimated, the error count checked. */
static int tile_sync_answer(struct kstate *ks, const char *what)
{
	const struct plan_geom *g = &ks->pl->g;
	unsigned nerr;
	ks->ws->st->cycles += (uint64_t)g->hazard_cycles + g->rows + g->cols + 4;
	int rc = ws_recv_sync(ks->ws, &nerr, ks->err, ks->errlen);
	if (!rc && nerr) {
		snprintf(ks->err, ks->errlen, "%s: device reports %u errors", what, nerr);
		rc = CS_ERR_DEVICE;
	}
	return rc;
}

static void put_regs(struct kstate *ks, int dt_d)
{
	const struct plan *pl = ks->pl;
	/* r0 = 0 (zero register; A base xa = 0), r1 set by SET_MAJOR (wgrad on pe: 0, the
	 * majors in the positions' vals), r2 B base (yb / db = 0),
	 * r3 A stride, r4 B stride, r5 tokens, r6 B pointer (wgrad: pb), r7 count */
	uint32_t regs[8] = { 0, 0, 0, (uint32_t)pl->din, (uint32_t)dt_d, (uint32_t)ks->tp_k,
			     ks->k == PLAN_WGRAD ? pl->pb : 0, 0 };
	ws_write(ks->ws, PROTO_T_REG, PROTO_PE_ALL, 0, regs, 8);
}

/* The answer of output tile d's READ (pe 0xff: one READ answer per PE, tp_k * width words
 * each, padding rows included): copy each PE's real rows out. */
static int read_tile(struct kstate *ks, int d)
{
	const struct plan *pl = ks->pl;
	struct wstream *ws = ks->ws;
	int o0 = d * pl->dt, o1 = o0 + pl->dt < pl->dout ? o0 + pl->dt : pl->dout, dt_d = o1 - o0;
	unsigned n = (unsigned)ks->tp_k * (unsigned)dt_d;
	int rc;
	ws->st->act_words_in += (uint64_t)pl->P * (1 + (uint64_t)n);
	for (int q = 0; q < pl->P; q++) {
		if ((rc = ws_recv(ws, ks->tmp, n, PROTO_READ, n, ks->err, ks->errlen)))
			return rc;
		if (!ws->buf)
			continue;
		int first = ks->t0 + q * ks->tp_k;
		int nq = pl->T - first < ks->tp_k ? pl->T - first : ks->tp_k;
		for (int u = 0; u < nq; u++) {
			float *o = ks->io->out + (size_t)(first + u) * pl->dout + o0;
			memcpy(o, ks->tmp + (size_t)u * dt_d, (size_t)dt_d * 4);
		}
	}
	return CS_OK;
}

/* The task tables of phase k: fwd/bwd one broadcast WRITE, wgrad one WRITE per PE (the
 * reduction roles differ). */
static int write_tables(struct wstream *ws, const struct plan *pl, const struct csd_fw *fw,
			enum plan_kernel k)
{
	uint32_t table[32];
	const struct plan_geom *g = &pl->g;
	int rc;
	if (k != PLAN_WGRAD) {
		if ((rc = plan_tasks(g, fw, k, 0, 0, table)))
			return rc;
		ws_write(ws, PROTO_T_TASK, PROTO_PE_ALL, 0, table, 32);
		return CS_OK;
	}
	for (int r = 0; r < g->rows; r++)
		for (int c = 0; c < g->cols; c++) {
			if ((rc = plan_tasks(g, fw, k, r, c, table)))
				return rc;
			ws_write(ws, PROTO_T_TASK, (unsigned)(r * g->cols + c), 0, table, 32);
		}
	return CS_OK;
}

/* One wgrad output tile [o0, o1) of the current token tile: its B operand (wgrad: dY,
 * PLAN_BWG: X, packed bf16) to every PE, the registers, SYNC, then its batches. */
static int wgrad_tile(struct kstate *ks)
{
	const struct plan *pl = ks->pl;
	int dt_d = ks->o1 - ks->o0, ld = pl->kernel == PLAN_BWG ? pl->n_in : pl->n_out;
	size_t bw = ((size_t)ks->tp_k * dt_d + 1) / 2;
	int rc;
	for (int q = 0; q < pl->P; q++) {
		if (ks->ws->buf)
			ws_pack_bf16_rows(ks->tmp, ks->io->bact, pl->T, ld, ks->o0, dt_d,
				       ks->t0 + q * ks->tp_k, ks->tp_k);
		ws_write(ks->ws, PROTO_T_B, (unsigned)q, 0, ks->tmp, bw);
	}
	put_regs(ks, dt_d);
	if ((rc = sync_point(ks, "wgrad")))
		return rc;
	return stream_tile(ks);
}

/*
 * An output tile switch's control wavelets (d > 0): the control task (fw/kernels.s ctl)
 * runs each one in turn, after the previous tile's SYNC left the mesh idle, before the
 * tile's first SET_MAJOR, on pe's sequencer (a scalar instruction one cycle, li two):
 * SET_BBASE whi, bne, li, bne, li, bne, wlo, ret: 10 cycles; SET_BSTRIDE one li and bne
 * more: 13 (measured on the Verilated 2x2: 10 and 13 a wavelet more per tile).
 */
#define PLAN_SETB_CYCLES 10
#define PLAN_SETW_CYCLES 13

int plan_exec(const struct plan *pl, const struct csd_fw *fw, const struct plan_io *io,
	      struct plan_link *link, struct plan_stats *st, char *err, size_t errlen)
{
	int counting = link->send == NULL;
	struct wstream ws = { link, st, NULL, 0, WBUF_WORDS, 0 };
	struct kstate ks = { .pl = pl, .io = io, .ws = &ws, .err = err, .errlen = errlen };
	int rc = CS_OK;
	const struct plan_geom *g = &pl->g;
	const char *what = pl->kernel == PLAN_FWD ? "forward" : "backward";
	int has_wgrad = pl->kernel == PLAN_WGRAD || pl->kernel == PLAN_BWG;
	uint64_t rd_cycles = 0; /* estimate: the outstanding READ's chain cycles */
	int dt_prev = 0;

	if (!counting) {
		ws.buf = malloc(WBUF_WORDS * sizeof *ws.buf);
		/* a PE's A or B image, or a batch of results */
		size_t tw = g->a_words / 2 + 1;
		if (tw < g->b_words)
			tw = g->b_words;
		ks.tmp = malloc(tw * sizeof *ks.tmp);
		if (has_wgrad)
			ks.bpos = malloc((pl->batch_cap ? pl->batch_cap : 1) * sizeof *ks.bpos);
		if (!ws.buf || !ks.tmp || (has_wgrad && !ks.bpos)) {
			snprintf(err, errlen, "plan: out of memory");
			rc = CS_ERR_NO_MEM;
			goto out_free;
		}
	}

	/* the first phase: the kernel itself, PLAN_BWG's backward */
	ks.k = pl->kernel == PLAN_BWG ? PLAN_BWD : pl->kernel;
	ws_put(&ws, proto_hdr_clear());
	if (pl->kernel != PLAN_BWG && (rc = write_tables(&ws, pl, fw, ks.k)))
		goto out_nofw;

	for (ks.tk = 0; ks.tk < pl->n_ttiles && !ws.rc; ks.tk++) {
		plan_ttile(pl, ks.tk, &ks.t0, &ks.tp_k, &ks.ntok);
		if (pl->kernel == PLAN_BWG) {
			ks.k = PLAN_BWD;
			if ((rc = write_tables(&ws, pl, fw, ks.k)))
				goto out_nofw;
		}
		size_t aw = ((size_t)ks.tp_k * pl->din + 1) / 2;
		for (int q = 0; q < pl->P; q++) {
			if (!counting)
				ws_pack_bf16_rows(ks.tmp, io->act, pl->T, pl->din, 0, pl->din,
					       ks.t0 + q * ks.tp_k, ks.tp_k);
			ws_write(&ws, PROTO_T_A, (unsigned)q, 0, ks.tmp, aw);
		}
		for (int d = 0; d < pl->n_otiles && !ws.rc; d++) {
			ks.o0 = d * pl->dt;
			ks.o1 = ks.o0 + pl->dt < pl->dout ? ks.o0 + pl->dt : pl->dout;
			int dt_d = ks.o1 - ks.o0;
			if (ks.k == PLAN_WGRAD) {
				if ((rc = wgrad_tile(&ks)))
					goto out_free;
				continue;
			}
			/* forward / backward: output tiles alternate between the B banks */
			uint32_t half = g->b_words / 2, bank = (d & 1) ? half : 0;
			if (d == 0) {
				put_regs(&ks, dt_d);
				if ((rc = sync_point(&ks, what)))
					goto out_free;
			}
			/* the previous tile's READ streams while this one fills and computes */
			uint64_t sc = st->stream_cycles;
			uint32_t ctl[3];
			unsigned nctl = 0;
			/* the tile switch: the control task runs each op before the tile's first
			 * SET_MAJOR (the fill covers START's path) */
			if (d > 0) {
				ctl[nctl++] = proto_ctl(PROTO_CTL_SET_BBASE, bank);
				st->cycles += PLAN_SETB_CYCLES;
				st->stream_cycles += PLAN_SETB_CYCLES;
			}
			if (d > 0 && dt_d != dt_prev) {
				ctl[nctl++] = proto_ctl(PROTO_CTL_SET_BSTRIDE, (unsigned)dt_d);
				st->cycles += PLAN_SETW_CYCLES;
				st->stream_cycles += PLAN_SETW_CYCLES;
			}
			if (d < 2) {
				ctl[nctl++] = proto_ctl(PROTO_CTL_START, 0);
				/* the fill is part of the streaming phase (it follows the INJECT) */
				/* (two words a cycle) */
				st->cycles += ((uint64_t)ks.tp_k * dt_d + 1) / 2 + 8;
				st->stream_cycles += ((uint64_t)ks.tp_k * dt_d + 1) / 2 + 8;
			}
			if (nctl) {
				ws_put(&ws, proto_hdr_inject(PROTO_C_BCAST, 1, nctl));
				for (unsigned i = 0; i < nctl; i++)
					ws_put(&ws, ctl[i]);
			}
			if ((rc = stream_tile(&ks)))
				goto out_free;
			/* SYNC: answers once this tile is computed and the previous tile's READ,
			 * which streamed meanwhile, is done; the READ's answer comes first */
			ws_put(&ws, proto_hdr_sync());
			ws_put(&ws, link->timeout_cycles);
			sc = st->stream_cycles - sc;
			if (d > 0) {
				if (rd_cycles > sc) {
					st->cycles += rd_cycles - sc;
					st->act_cycles += rd_cycles - sc;
				}
				if ((rc = read_tile(&ks, d - 1)))
					goto out_free;
			}
			if ((rc = tile_sync_answer(&ks, what)))
				goto out_free;
			ws_put(&ws, proto_hdr_read(PROTO_T_BCLR, PROTO_PE_ALL,
						   (unsigned)ks.tp_k * (unsigned)dt_d));
			ws_put(&ws, bank);
			rd_cycles = ws_read_cycles(pl->P, (uint64_t)ks.tp_k * dt_d);
			dt_prev = dt_d;
		}
		if (ks.k == PLAN_WGRAD)
			continue;
		/* the token tile's last READ (before anything that waits for it) */
		st->cycles += rd_cycles;
		st->act_cycles += rd_cycles;
		if ((rc = read_tile(&ks, pl->n_otiles - 1)))
			goto out_free;
		if (pl->kernel != PLAN_BWG)
			continue;
		/* PLAN_BWG: the weight gradient of this token tile against the dY still in A;
		 * the backward's READs left both B banks zeroed, X tiles go to bank 0 */
		ks.k = PLAN_WGRAD;
		if ((rc = write_tables(&ws, pl, fw, ks.k)))
			goto out_nofw;
		dt_prev = 0;
		for (int d = 0; d < pl->n_otiles_w && !ws.rc; d++) {
			ks.o0 = d * pl->dt_w;
			ks.o1 = ks.o0 + pl->dt_w < pl->n_in ? ks.o0 + pl->dt_w : pl->n_in;
			if ((rc = wgrad_tile(&ks)))
				goto out_free;
		}
	}
	if (!rc)
		rc = ws_flush(&ws);
	if (rc && !err[0])
		snprintf(err, errlen, "link: %s", cs_strerror(rc));
	goto out_free;
out_nofw:
	snprintf(err, errlen, "firmware image %s lacks an entry point the %s kernel needs",
		 fw ? fw->name : "?", ks.k == PLAN_WGRAD ? "wgrad" : "axpy");
out_free:
	free(ks.bpos);
	free(ks.tmp);
	free(ws.buf);
	return rc;
}

/* ---- kernels on resident regions ------------------------------------------------------ */

int plan_make_resident(struct plan *pl, const struct plan_geom *g, enum plan_kernel kernel,
		       int T, int n_out, int n_in, const struct plan_regions *rg, char *err,
		       size_t errlen)
{
	static const char *const kname[] = { "forward", "backward", "wgrad" };
	if (kernel == PLAN_BWG) {
		snprintf(err, errlen, "backward+wgrad has no resident form: call both");
		return CS_ERR_INVALID;
	}
	int rc = plan_make(pl, g, kernel, T, n_out, n_in, err, errlen);
	if (rc)
		return rc;
	if (rg->tp < 1 || rg->tp > 65535 || (long)rg->tp * pl->P < T) {
		snprintf(err, errlen, "%s: %d tokens a PE do not hold T=%d", kname[kernel], rg->tp, T);
		return CS_ERR_INVALID;
	}
	/* all T tokens in one tile, the output tile the whole row: a minor travels in the
	 * wavelet's 15 index bits */
	if (pl->dout > 32768) {
		snprintf(err, errlen, "%s: %d output features: one output tile carries at most 32768",
			 kname[kernel], pl->dout);
		return CS_ERR_RANGE;
	}
	if (g->first_touch && kernel != PLAN_WGRAD && pl->dout > 16384) {
		snprintf(err, errlen,
			 "%s: %d output features: pe's axpy index carries at most 16384 (bit 14 is "
			 "the first-touch flag)",
			 kname[kernel], pl->dout);
		return CS_ERR_RANGE;
	}
	pl->tp = rg->tp;
	pl->n_ttiles = 1;
	pl->dt = pl->dout;
	pl->n_otiles = 1;
	if (kernel == PLAN_WGRAD)
		pl->pb = rg->pb;
	return CS_OK;
}

/* The outputs a first-touch stream zeroes with a wavelet of their own (mark[i] = 1): those
 * no nonzero touches, and those whose first nonzero in stream order (fwd CSC, bwd CSR) has
 * val +0 (flagged, it would give +0 where the fill's chain gives NaN for an inf/NaN A: it
 * goes unflagged after the zero wavelet). Returns their count. */
static uint32_t ft_scan(const struct plan *pl, const csd_sparse *w, uint8_t *mark)
{
	int csc = pl->kernel == PLAN_FWD;
	const int64_t *ptr = csc ? w->col_ptr : w->row_ptr;
	const int32_t *minor = csc ? w->row : w->col;
	const uint16_t *val = csc ? w->cval : w->val;
	uint32_t n = 0;
	memset(mark, 2, (size_t)pl->dout); /* 2: not touched yet */
	for (int64_t k = 0; k < ptr[pl->din]; k++)
		if (mark[minor[k]] == 2)
			mark[minor[k]] = val[k] == 0;
	for (int i = 0; i < pl->dout; i++) {
		if (mark[i] == 2)
			mark[i] = 1;
		n += mark[i];
	}
	return n;
}

/* START's fill: tp * stride words from the base (4.5's fill, two words a cycle, part of
 * the stream), its wavelet's injection and trip included */
static uint64_t fill_cycles(const struct plan *pl, const struct plan_regions *rg)
{
	return ((uint64_t)pl->tp * rg->bstride + 1) / 2 + 9;
}

/* flags if the zero wavelets (tp cycles each) cost less than the fill */
static int ft_pick(const struct plan *pl, const struct plan_regions *rg, uint32_t nzero)
{
	return (uint64_t)nzero * (uint64_t)pl->tp < fill_cycles(pl, rg);
}

int plan_first_touch(const struct plan *pl, const struct plan_regions *rg, const csd_sparse *w,
		     uint32_t *nzero)
{
	*nzero = 0;
	if (pl->kernel == PLAN_WGRAD || rg->accumulate || !pl->g.first_touch)
		return 0;
	uint8_t *mark = malloc((size_t)pl->dout);
	if (!mark)
		return 0;
	uint32_t n = ft_scan(pl, w, mark);
	free(mark);
	if (!ft_pick(pl, rg, n))
		return 0;
	*nzero = n;
	return 1;
}

int plan_exec_resident(const struct plan *pl, const struct csd_fw *fw,
		       const struct plan_regions *rg, const struct plan_io *io,
		       const struct plan_side *side, const struct plan_wside *wside,
		       struct plan_link *link, struct plan_stats *st, char *err,
		       size_t errlen)
{
	static const char *const kname[] = { "forward", "backward", "wgrad" };
	struct wstream ws = { link, st, NULL, 0, WBUF_WORDS, 0 };
	struct kstate ks = { .pl = pl, .io = io, .ws = &ws, .err = err, .errlen = errlen,
			     .k = pl->kernel, .tp_k = pl->tp, .ntok = pl->T, .o0 = 0,
			     .o1 = pl->dout, .mbase = rg->abase, .side = side, .wside = wside };
	const char *what = kname[pl->kernel];
	int rc;
	if (link->send) {
		ws.buf = malloc(WBUF_WORDS * sizeof *ws.buf);
		ks.tmp = malloc((pl->batch_cap ? pl->batch_cap : 1) * sizeof *ks.tmp);
		if (pl->kernel == PLAN_WGRAD)
			ks.bpos = malloc((pl->batch_cap ? pl->batch_cap : 1) * sizeof *ks.bpos);
		if (!ws.buf || !ks.tmp || (pl->kernel == PLAN_WGRAD && !ks.bpos)) {
			snprintf(err, errlen, "%s: out of memory", what);
			rc = CS_ERR_NO_MEM;
			goto out_free;
		}
	}
	if ((rc = write_tables(&ws, pl, fw, pl->kernel))) {
		snprintf(err, errlen, "firmware image %s lacks an entry point the %s kernel needs",
			 fw ? fw->name : "?", what);
		goto out_free;
	}
	/* r1 comes with each SET_MAJOR (abase + j; wgrad on pe: abase, the major in each
	 * val), r2/r4 the B operand, r3 the A stride */
	uint32_t regs[8] = { 0, 0, rg->bbase, rg->astride, rg->bstride, (uint32_t)pl->tp,
			     pl->kernel == PLAN_WGRAD ? rg->pb : 0, 0 };
	ws_write(&ws, PROTO_T_REG, PROTO_PE_ALL, 0, regs, 8);
	/* sync_point's SYNC, right behind broadcast writes (ws_sync_writes) */
	if ((rc = ws_sync_writes(&ws, pl->P, 1, what, err, errlen)))
		goto out_free;
	/* fwd/bwd: a carried READ streams while the fill and the RUNs run */
	if (pl->kernel != PLAN_WGRAD && side)
		side_open(&ks, side->n_words);
	/* pe: each output's first nonzero flagged, a zero wavelet for each output ft_scan
	 * marks, ahead of the first nonempty major's nonzeros; else START */
	uint32_t nzero = 0;
	int ftm = pl->kernel != PLAN_WGRAD && !rg->accumulate && pl->g.first_touch;
	if (ftm) {
		ks.ts.ft = malloc((size_t)pl->dout);
		if (!ks.ts.ft) {
			snprintf(err, errlen, "%s: out of memory", what);
			rc = CS_ERR_NO_MEM;
			goto out_free;
		}
		nzero = ft_scan(pl, io->w, ks.ts.ft);
		ftm = ft_pick(pl, rg, nzero);
	}
	if (ftm && nzero) {
		int csc = pl->kernel == PLAN_FWD, m0 = 0;
		const int64_t *ptr = csc ? io->w->col_ptr : io->w->row_ptr;
		while (m0 < pl->din - 1 && ptr[m0 + 1] == ptr[m0])
			m0++;
		int32_t zi[64];
		uint16_t zv[64] = { 0 };
		int i = 0;
		ks.ts.zflag = 1;
		while (i < pl->dout) {
			size_t n = 0;
			for (; i < pl->dout && n < 64; i++)
				if (ks.ts.ft[i])
					zi[n++] = i;
			for (size_t k = 0; k < n;)
				k += run_add(&ks, m0, zi + k, zv + k, n - k);
		}
		ks.ts.zflag = 0;
	} else if (!ftm && ks.ts.ft) {
		free(ks.ts.ft);
		ks.ts.ft = NULL;
	}
	if (pl->kernel != PLAN_WGRAD && !rg->accumulate && !ftm) {
		ws_put(&ws, proto_hdr_inject(PROTO_C_BCAST, 1, 1));
		ws_put(&ws, proto_ctl(PROTO_CTL_START, 0));
		uint64_t f = fill_cycles(pl, rg);
		st->cycles += f;
		st->stream_cycles += f;
		/* the fill reads no A: a chunk of a carried WRITE while it runs */
		uint64_t lat = (uint64_t)(pl->g.rows + pl->g.cols) + 8;
		if (f > lat + 3)
			wside_put(&ks, f - lat, 0);
	}
	if ((rc = stream_tile(&ks)))
		goto out_free;
	/* the carried WRITE's rest, behind the last RUN */
	wside_put(&ks, wside_queued(&ks), 1);
	if (pl->kernel != PLAN_WGRAD) {
		/* as a kernel tile's SYNC: the pipeline drains, the answer comes back */
		ws_put(&ws, proto_hdr_sync());
		ws_put(&ws, link->timeout_cycles);
		if ((rc = side_close(&ks, 0)) || (rc = tile_sync_answer(&ks, what)))
			goto out_free;
	}
	/* wgrad without batches (or words left by the rounding): the rest on its own */
	if (side && ks.s_done < side->n_words) {
		side_open(&ks, side->n_words);
		if ((rc = side_close(&ks, 0)))
			goto out_free;
	}
	rc = ws_flush(&ws);
out_free:
	if (rc && !err[0])
		snprintf(err, errlen, "%s: link: %s", what, cs_strerror(rc));
	free(ks.ts.ft);
	free(ks.bpos);
	free(ks.tmp);
	free(ws.buf);
	return rc;
}

int plan_exec_reduce(const struct plan_geom *g, const struct csd_fw *fw, uint32_t base,
		     uint32_t n, float *out, struct plan_link *link, struct plan_stats *st,
		     char *err, size_t errlen)
{
	struct wstream ws = { link, st, NULL, 0, WBUF_WORDS, 0 };
	struct plan pl;
	uint32_t *tmp = NULL;
	int P = g->rows * g->cols, rc;
	memset(&pl, 0, sizeof pl);
	pl.g = *g;
	pl.P = P;
	pl.kernel = PLAN_WGRAD;
	if (link->send) {
		ws.buf = malloc(WBUF_WORDS * sizeof *ws.buf);
		tmp = malloc(((size_t)n + 1) * sizeof *tmp);
		if (!ws.buf || !tmp) {
			snprintf(err, errlen, "reduce: out of memory");
			rc = CS_ERR_NO_MEM;
			goto out_free;
		}
	}
	if ((rc = write_tables(&ws, &pl, fw, PLAN_WGRAD))) {
		snprintf(err, errlen, "firmware image %s lacks an entry point the reduction needs",
			 fw ? fw->name : "?");
		goto out_free;
	}
	/* END n takes r6 back by n to the words' base, as after a batch's dots */
	uint32_t regs[8] = { 0, 0, 0, 0, 0, 1, base + n, 0 };
	ws_write(&ws, PROTO_T_REG, PROTO_PE_ALL, 0, regs, 8);
	if ((rc = ws_sync_writes(&ws, P, 1, "reduce", err, errlen)))
		goto out_free;
	ws_put(&ws, proto_hdr_inject(PROTO_C_BCAST, 1, 1));
	ws_put(&ws, proto_ctl(PROTO_CTL_END, n));
	ws_put(&ws, proto_hdr_collect(n));
	ws_put(&ws, link->timeout_cycles);
	/* a wgrad batch's reduction and COLLECT (wgrad_end_batch), and its start with nothing
	 * before it: the END's way to every PE and the row and column tasks' first picks, which
	 * a batch's dots otherwise cover (measured on the Verilated pe meshes 1x1, 2x2, 2x3 and
	 * 4x4: P + Rows + 3 Cols - 6 cycles, whatever n) */
	uint64_t red = (uint64_t)(g->cols > 1 ? 2 : 1) * n +
		       (uint64_t)(g->rows + g->cols) * (uint64_t)(g->hazard_cycles + 2) + 4 +
		       (uint64_t)(P + g->rows + 3 * g->cols) - 6;
	st->cycles += red + n;
	st->stream_cycles += red;
	st->grad_words_in += 1 + (uint64_t)n;
	if ((rc = ws_recv(&ws, tmp, n, PROTO_COLLECT, n, err, errlen)))
		goto out_free;
	if (tmp)
		for (uint32_t k = 0; k < n; k++)
			out[k] = nm_bits_f32(tmp[k]);
	rc = ws_flush(&ws);
	if (rc && !err[0])
		snprintf(err, errlen, "reduce: link: %s", cs_strerror(rc));
out_free:
	free(tmp);
	free(ws.buf);
	return rc;
}

void plan_tune(struct plan *pl, const csd_sparse *w)
{
	if (pl->kernel == PLAN_WGRAD || pl->g.no_tune)
		return;
	struct plan best = *pl;
	uint64_t best_c = UINT64_MAX;
	int k0 = pl->n_otiles;
	for (int k = k0; k <= k0 + 8 && k <= pl->dout; k++) {
		struct plan t = *pl;
		t.dt = (pl->dout + k - 1) / k;
		if (t.dt > pl->dt)
			continue;
		t.n_otiles = (pl->dout + t.dt - 1) / t.dt;
		struct plan_stats st = { 0 };
		struct plan_link count = { 0 };
		struct plan_io io = { .w = w };
		char err[64];
		if (plan_exec(&t, NULL, &io, &count, &st, err, sizeof err))
			return;
		if (st.cycles < best_c) {
			best_c = st.cycles;
			best = t;
		}
	}
	*pl = best;
}

int plan_load(const struct plan_geom *g, const struct csd_fw *fw, struct plan_link *link,
	      struct plan_stats *st, char *err, size_t errlen)
{
	uint32_t buf[CSD_FW_IMEM + 2 * 16 + 2 * 32 + 8];
	struct wstream ws = { link, st, link->send ? buf : NULL, 0, sizeof buf / sizeof buf[0], 0 };
	uint32_t w[CSD_FW_IMEM];
	uint32_t mask[16];
	int rc = CS_OK;

	/* one buffer per command so WBUF_WORDS never matters */
	ws_put(&ws, proto_hdr_clear());
	if (fw) {
		for (int i = 0; i < fw->n_instr; i++)
			w[i] = fw->imem[i];
		ws_write(&ws, PROTO_T_IMEM, PROTO_PE_ALL, 0, w, (size_t)fw->n_instr);
	}
	/* queues: BCAST 0, RR 1, CR 2, others 3 */
	for (int col = 0; col < 16; col++)
		w[col] = col == PROTO_C_BCAST ? 0
			 : (col == PROTO_C_RR0 || col == PROTO_C_RR1) ? 1
			 : (col == PROTO_C_CR0 || col == PROTO_C_CR1) ? 2
								      : 3;
	ws_write(&ws, PROTO_T_QMAP, PROTO_PE_ALL, 0, w, 16);
	if ((rc = ws_flush(&ws)))
		goto out;
	for (int r = 0; r < g->rows; r++)
		for (int c = 0; c < g->cols; c++) {
			plan_routes(g, r, c, mask);
			ws_write(&ws, PROTO_T_ROUTE, (unsigned)(r * g->cols + c), 0, mask, 16);
			if ((rc = ws_flush(&ws)))
				goto out;
		}
out:
	if (rc)
		snprintf(err, errlen, "load: %s", cs_strerror(rc));
	return rc;
}
