/*
 * plan.h - how a kernel call maps onto a mesh: the tiling over tokens and outputs, the
 * per-PE memory map (docs/architecture.md 4.5), and the host-port command stream that runs
 * it (section 6). One planner for every backend:
 *   - sim/usb run plan_exec() with a link that carries the words to the device's host port
 *     and returns its responses;
 *   - cpu runs plan_exec() with a counting link (send == NULL): nothing is packed, the
 *     words and bytes the real protocol would move are counted, and the cycles are
 *     estimated from the same schedule;
 *   - the cpu model takes the token partition (Tp per token tile) from plan_ttile(), which
 *     fixes the wgrad reduction order.
 */
#ifndef CS_PLAN_H
#define CS_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "driver/csd.h"
#include "driver/fw.h"

/* PLAN_BWG: backward then wgrad of one layer in one call, dY uploaded once and resident in
 * A for both (docs/architecture.md 4.5): the wgrad phase streams CSR positions against
 * dY in A and packed X tiles in B. */
enum plan_kernel { PLAN_FWD = 0, PLAN_BWD = 1, PLAN_WGRAD = 2, PLAN_BWG = 3 };

/* Mesh shape and sizes (the RTL's parameters). */
struct plan_geom {
	int rows, cols;
	uint32_t a_words;  /* bf16 elements of SRAM A per PE */
	uint32_t b_words;  /* 32-bit words of SRAM B per PE (two banks) */
	int hazard_cycles; /* B pipeline read-to-write depth (min cycles per AXPY) */
	int no_tune;       /* 1: keep the widest output tiles (plan_tune does nothing) */
	int ctl_cycles;    /* cycles from a chain's last MAC through the SET_MAJOR task to the
			    * next major's first (measured on pe: 6) */
	int major_cycles;  /* a SET_MAJOR inside an axpy chain (no other control wavelet since
			    * the previous major's nonzeros, Tp_k >= 2): 0 on pe, whose axpy takes
			    * it while the last nonzero's MACs issue (docs/architecture.md 4.4);
			    * ctl_cycles on pe_lite, pe_micro_mt (the control task) */
	int dot_by_major;  /* wgrad's stream: 0 (pe): a position's val is its major's A offset
			    * for dot, so a RUN and a dot group span majors; 1 (pe_lite,
			    * pe_micro_mt: the boards): a SET_MAJOR per major, val 0 (which
			    * those ignore and pe reads as offset 0) */
	int a_wport;       /* 1 (pe): A has a write port of its own, so a config WRITE of A
			    * proceeds while a kernel reads A (a kernel may carry it); 0 (pe_lite,
			    * pe_micro_mt): a WRITE of A waits for the engine */
	int first_touch;   /* 1 (pe): an axpy nonzero's index is 14 bits, its bit 14 the
			    * first-touch flag (docs/architecture.md 4.4): an overwriting
			    * resident kernel flags each output's first nonzero instead of a
			    * START fill; 0 (pe_lite, pe_micro_mt): START */
};

/*
 * The tiling of one kernel call.
 * din: features held stationary in A (fwd: n_in, bwd: n_out, wgrad: n_in).
 * dout: features indexed by the stream's minor index (fwd: n_out, bwd: n_in, wgrad: n_out).
 * Token tile k covers tokens [k * P * tp, min(T, (k+1) * P * tp)); within it PE q holds
 * tokens [t0 + q*tp_k, t0 + (q+1)*tp_k) with tp_k = ceil(tokens_in_tile / P) (<= tp); tokens
 * past T are zero padding. Output tile d covers minors [d*dt, min(dout, (d+1)*dt)).
 */
struct plan {
	enum plan_kernel kernel;
	int T, n_out, n_in;
	int din, dout;
	int P;
	int tp;        /* tokens per PE of a full token tile */
	int n_ttiles;  /* token tiles */
	int dt;        /* output tile width */
	int n_otiles;  /* output tiles */
	uint32_t batch_cap; /* wgrad: nonzeros per reduction batch */
	uint32_t pb;        /* wgrad: B word address of the partial sums */
	int dt_w, n_otiles_w; /* PLAN_BWG's wgrad phase: X tile width (over n_in), tiles */
	struct plan_geom g;
};

int plan_make(struct plan *pl, const struct plan_geom *g, enum plan_kernel kernel, int T,
	      int n_out, int n_in, char *err, size_t errlen);
/*
 * Narrow the output tiles of a forward or backward (or PLAN_BWG's backward phase) when
 * that is estimated faster: a tile's READ streams while the next tile computes (4.5), so
 * more, narrower tiles hide more of the read-back behind the nonzero stream, at the cost
 * of a SET_MAJOR per major and tile. Tries widths ceil(dout / k) for k from the widest
 * tiling's count up to 8 more and keeps the fastest by the schedule model (plan_exec in
 * counting mode with w). Results do not depend on the output tiling (section 5). Every
 * backend calls it after plan_make, so all send the same stream.
 */
void plan_tune(struct plan *pl, const csd_sparse *w);
/* Token tile k: first token, tokens per PE, real tokens in the tile. */
void plan_ttile(const struct plan *pl, int k, int *t0, int *tp_k, int *ntok);

/* What a kernel run moved and cost. */
struct plan_stats {
	uint64_t words_out, words_in; /* host port words each way */
	uint64_t weight_words;        /* of words_out: RUN headers and nonzeros */
	uint64_t act_words_out;       /* of words_out: WRITEs of A and B images (with headers) */
	uint64_t act_words_in;        /* of words_in: READ answers (with headers) */
	uint64_t grad_words_in;       /* of words_in: COLLECT answers (with headers) */
	uint64_t prog_words_out;      /* of words_out: vector program overlays, task entries,
				       * parameter and broadcast blocks (resident.c) */
	uint64_t act_cycles;          /* of cycles: activation uploads and the READ cycles
				       * no computation hides (what resident activations save) */
	uint64_t nnz;                 /* nonzeros streamed (each token tile streams all) */
	uint64_t runs;                /* RUN commands */
	uint64_t cycles;              /* estimated device cycles */
	uint64_t stream_cycles;       /* of cycles: the streaming phases */
	uint64_t mac_busy;            /* PE-cycles with a MAC issued */
};

/*
 * The device link plan_exec() drives. send == NULL: count only (no words built, no
 * responses read, outputs untouched). recv reads exactly n response words or fails; it
 * owns the timeout. Both return 0 or a negative cs_error.
 */
struct plan_link {
	void *ctx;
	int (*send)(void *ctx, const uint32_t *w, size_t n);
	int (*recv)(void *ctx, uint32_t *w, size_t n);
	uint32_t timeout_cycles; /* for SYNC / COLLECT */
};

/*
 * The kernel's data. fwd: act = x [T, n_in], out = y [T, n_out]; bwd: act = dy [T, n_out],
 * out = dx [T, n_in]; wgrad: act = x [T, n_in], bact = dy [T, n_out], out = dw [nnz] (CSR
 * order). w gives the positions (and values for fwd/bwd). PLAN_BWG: act = dy, bact = x,
 * out = dx, out2 = dw.
 */
struct plan_io {
	const csd_sparse *w;
	const uint16_t *act;
	const uint16_t *bact;
	float *out;
	float *out2;
};

/* Program setup words of a kernel (task tables), the same for every call. */
int plan_exec(const struct plan *pl, const struct csd_fw *fw, const struct plan_io *io,
	      struct plan_link *link, struct plan_stats *st, char *err, size_t errlen);

/*
 * A kernel on resident regions (docs/architecture.md 7.5): the stationary input already in
 * A, the output (fwd/bwd) or wgrad's packed dY already in B; one token tile of tp tokens a
 * PE and one output tile, nothing uploaded, nothing read back but wgrad's COLLECTs.
 */
struct plan_regions {
	uint32_t abase, astride; /* stationary input: A element of token 0, A stride (r3) */
	uint32_t bbase, bstride; /* fwd/bwd output: B words; wgrad's dY: Bh elements (r2, r4) */
	int tp;                  /* tokens a PE (r5) */
	int accumulate;          /* fwd/bwd: 1 adds onto B (no START fill) */
	uint32_t pb;             /* wgrad: B word of the partial sums (r6), batch_cap words */
};
/*
 * A READ carried by a kernel on regions (docs/architecture.md 7.5): it streams up while the
 * kernel computes. The carried words are n_words a PE in the order they are read; issue
 * puts the READ commands of words [lo, hi) into the stream and returns their estimated
 * cycles, recv reads their answers. fwd/bwd: all of them after the setup SYNC, before the
 * START and the RUNs, answered before the closing SYNC; wgrad: chunk j (the words in
 * proportion to batch j's nonzeros) before batch j's RUNs, answered before its COLLECT.
 */
struct wstream;
struct plan_side {
	void *ctx;
	uint64_t n_words;
	uint64_t (*issue)(void *ctx, struct wstream *ws, uint64_t lo, uint64_t hi);
	int (*recv)(void *ctx, struct wstream *ws, uint64_t lo, uint64_t hi, char *err,
		    size_t errlen);
};

/*
 * A WRITE of A carried by a forward or backward kernel on regions (plan_geom.a_wport): its
 * n_words data words in order; issue puts WRITEs of words from lo on into the stream, as
 * many as their host-port cycles (a WRITE of m words: m + 2) fit in budget, and returns
 * those cycles with *hi the next word. The kernel puts them after its START and between
 * its majors, each chunk at most what the PEs have queued to compute then (plan.c); what is
 * left goes after the last RUN.
 */
struct plan_wside {
	void *ctx;
	uint64_t n_words;
	uint64_t (*issue)(void *ctx, struct wstream *ws, uint64_t lo, uint64_t budget,
			  uint64_t *hi);
};

/* The plan of such a call (kernel PLAN_FWD, PLAN_BWD or PLAN_WGRAD): tp, one token tile,
 * one output tile of all dout minors, the wgrad batch at rg->pb. Checks only the shape;
 * the regions are resident.c's to check. */
int plan_make_resident(struct plan *pl, const struct plan_geom *g, enum plan_kernel kernel,
		       int T, int n_out, int n_in, const struct plan_regions *rg, char *err,
		       size_t errlen);
/* Its stream: task tables, registers, SYNC, [START], the RUNs (majors offset by abase),
 * SYNC (fwd/bwd) or per batch END and COLLECT into io->out (wgrad); side (NULL: none) a
 * READ it carries, wside (NULL: none; fwd/bwd only) a WRITE it carries. The estimate adds
 * of a carried READ only what outlasts the stream it overlaps (fwd/bwd: the fill and the
 * RUNs; wgrad chunk j: batch j's RUNs and reduction), of a carried WRITE only what is left
 * after the last RUN beyond the work queued then. */
/* csd_reduce_region's stream: the wgrad task tables, r6 = base + n, SYNC, END n, COLLECT n
 * (a wgrad batch's reduction of B[base .. base + n) with no dots before it); the sums to
 * out (a device; counting: the cycles only). */
/* An overwriting fwd/bwd kernel on regions with g.first_touch: 1 if its stream flags each
 * output's first nonzero and sends a zero wavelet for each output that has none (or whose
 * first nonzero's val is +0) instead of START, because those cost fewer cycles than the
 * fill; 0: START. *nzero: the zero wavelets (flags only). */
int plan_first_touch(const struct plan *pl, const struct plan_regions *rg, const csd_sparse *w,
		     uint32_t *nzero);
int plan_exec_reduce(const struct plan_geom *g, const struct csd_fw *fw, uint32_t base,
		     uint32_t n, float *out, struct plan_link *link, struct plan_stats *st,
		     char *err, size_t errlen);
int plan_exec_resident(const struct plan *pl, const struct csd_fw *fw,
		       const struct plan_regions *rg, const struct plan_io *io,
		       const struct plan_side *side, const struct plan_wside *wside,
		       struct plan_link *link, struct plan_stats *st, char *err,
		       size_t errlen);

/* The words that load a firmware image and the routes (csd_open). */
int plan_load(const struct plan_geom *g, const struct csd_fw *fw, struct plan_link *link,
	      struct plan_stats *st, char *err, size_t errlen);

/* Route table (16 masks {local, W, S, E, N} = bits 4..0) of router (r, c). */
void plan_routes(const struct plan_geom *g, int r, int c, uint32_t mask[16]);
/* Task table (32 entries {valid[9], blocked[8], pc[7:0]}) of PE (r, c) for a kernel. */
int plan_tasks(const struct plan_geom *g, const struct csd_fw *fw, enum plan_kernel kernel,
	       int r, int c, uint32_t table[32]);

#endif /* CS_PLAN_H */
