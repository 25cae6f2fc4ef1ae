/*
 * train_resident.c - the resident training step (train_resident.h, docs/resident-step.md).
 *
 * Per-PE SRAM (tp = ceil(B*T / PEs) tokens a PE, C features), fixed for the model at
 * tr_open:
 *   A (bf16): gamma [C], ones [C], ln scratch [4], staging of a tile read back [tp C],
 *     a backward kernel's dy [tp C], dpre of one fc tile [tp C], then per block the
 *     stash: ln1's y and z, the attention output, ln2's y and z [tp C each], GELU' and
 *     GELU of the four fc tiles [4 tp C each], ln1's and ln2's r [tp each]. When that
 *     does not fit (the reference model: 2 blocks, C 128, 32 tokens a PE need 106 k
 *     elements), the 7 C stash (TR_SMALL, below: 64 k for the reference model); when
 *     neither fits, GELU and GELU' are not stashed: the backward runs each fc tile's
 *     forward again from the stashed ln2 output (bit-identical) into one tile of
 *     scratch [2 tp C], an extra fc kernel a block; 5 tp C + 2 tp a block remain.
 *   B (fp32): x / dx [tp C], a kernel's output tile [tp C], the layernorm backward's dy
 *     [tp C], a packed dy for the wgrad [tp C / 2], the wgrad's partial sums, then the
 *     small vectors (beta, a bias, the gradient partials, scratch, the GELU tables, the
 *     parameter block).
 * Every kernel output is a tile of C features: qkv runs as its three row blocks (q, k, v),
 * fc as four row blocks, each through bias and GELU into its own stash tile (one vec_fc
 * call), fc2 as the four matching column blocks accumulating onto x (the same fmac chain
 * as one call). The blocks are rebuilt from the projections' nonzero lists every forward.
 * In the backward the packed dy of fc2's four wgrads is packed once a block (B: the Bh
 * region) and fc's packed dY lives in the output tile it was packed from.
 */
#include "train/train_resident.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "common/numerics.h"
#include "driver/csd.h"

/* The stash of one block, A element offsets from its base in units of n = tp * C, in the
 * whole stash (TR_FULL) and with recompute (TR_RECOMPUTE: GELU and GELU' of the fc tiles
 * are not stashed, the backward runs each fc tile's forward again from the stashed ln2
 * output, the same bits, into one tile of scratch, A: a_hd). */
enum { ST_Y1 = 0, ST_Z1 = 1, ST_ATT = 2, ST_Y2 = 3, ST_Z2 = 4, ST_D = 5, ST_H = 9 };
/* The 7 C stash (TR_SMALL): z1, the attention output, z2 and the four fc tiles' bf16
 * pre-activation. GELU reads only bf16(pre) (nm_lut_bits), so cvt_f of the stashed tile
 * gives gelu_fwd the forward's bits; y1 and y2 are rebuilt from z by cvt_f against gamma
 * and beta (nm_fmac_row_bits) and cvt_a. Where the y and the tile buffers live follows
 * liveness (block_forward, block_backward): y1 in pre tile 0, y2 in pre tile 3 in the
 * forward and in pre tile 0 in the backward (rebuilt once tile 0's GELU' is dead), h, dy
 * and dpre in the one tile of scratch S (a_stg), GELU' (backward only: the forward runs
 * gelu_h) in its own pre tile. */
enum { SM_Z1 = 0, SM_ATT = 1, SM_Z2 = 2, SM_PRE = 3 };

struct tr_layout {
	uint32_t tp, n;    /* tokens a PE, tp * C */
	int kind;          /* enum tr_stash */
	int recompute;     /* GELU's input recomputed by a second fc kernel in the backward */
	int small;         /* the 7 C stash */
	/* A elements */
	uint32_t a_g, a_ones, a_am, a_stg, a_dy, a_dp, a_hd, a_stash, a_layer, a_r, a_end;
	/* B words */
	uint32_t b_x, b_tile, b_dln, b_bh, b_scr, b_be, b_bias, b_dg, b_db, b_dbias, b_s, b_t,
		b_zero, b_one, b_tg, b_td, b_blk, b_end;
	/* ln_fwd's scratch row and ln_bwd's dgamma, dbeta and zeros: in the output tile, free
	 * during a layernorm and in the other B bank than the small vectors they meet in a
	 * vmac, so that it reads both operands in one cycle (docs/implementations.md,
	 * "Vector group cycles") */
	uint32_t b_lns, b_lndg, b_lndb, b_lnz;
};

#define MAXPARTS 6 /* emb_split, grad_split */

struct train_resident {
	train_device *td;
	csd_dev *dev;
	gpt *m;
	int P;
	struct tr_layout lo;
	/* per block: qkv's 3 row blocks, fc's 4 row blocks, fc2's 4 column blocks, v's row
	 * block's two halves (C even), q's and k's halves, proj's two column blocks (the
	 * head groups: heads_split), proj's second column block as two (proj_quarters) */
	csd_sparse *blk; /* [L][NBLK] */
	float *wbuf;     /* [4C * C] dense scratch of a block */
	uint8_t *mbuf;
	float *dw;       /* [max nnz] */
	size_t dw_cap;
	uint16_t *h16;   /* [maxBT, 3C] bf16 transfers */
	float *part;     /* [4][P, C]: the sums of per-PE partials (first), a carried gather's
			  * partials (second), partials read up (third and fourth) */
	uint32_t bcap;   /* csd_reduce_region's words at a time: min(256, bwords / 2) */
	uint32_t bwords; /* B words a PE */
	int a_wport;     /* A takes a write beside a kernel's reads (pe): a kernel carries it */
	/* the embeddings by parts (emb_split): part i is rows [emb_cut[i], emb_cut[i + 1]) of
	 * every PE, packed by PE from emb16 + P emb_cut[i] C; part 0 is down; emb_np 0: all */
	int emb_np, emb_cut[MAXPARTS + 1];
	const uint16_t *emb16;
	/* the same for the output's gradient into A at a_dy (grad_split) */
	int grad_np, grad_cut[MAXPARTS + 1];
	const uint16_t *grad16;
	/* the two head groups' attention (heads_split): a group's q, k, v [BT, 3C/2], its
	 * output [BT, C/2] and probabilities [B, NH/2, T, T]; the output as bf16 [2][BT, C/2] */
	float *gqkv, *gout, *gatt, *gdq;
	uint16_t *g16;
	char err[256];
};

#define NBLK (BOR + NOR)
#define NONE 0xffff /* a vec_fc / vec_cvt block's "no such region" */

static void prof_print(void);
#define BQKV 0
#define BFC 3
#define BFC2 7
#define BVH 11
#define BQH 13
#define BKH 15
#define BPH 17
#define BPQ 19 /* proj by column blocks of C / 4: proj_quarters */
#define BOR 23 /* fc2's last column block by rows: out_pieces */
#define NOR 4

static uint32_t even(uint64_t x)
{
	return (uint32_t)(x + (x & 1));
}

static void layout(struct tr_layout *lo, int L, int C, int P, int BT, uint32_t bwords,
		   int kind)
{
	uint32_t tp = (uint32_t)((BT + P - 1) / P), n = tp * (uint32_t)C;
	lo->tp = tp;
	lo->n = n;
	lo->kind = kind;
	lo->recompute = kind == TR_RECOMPUTE;
	lo->small = kind == TR_SMALL;
	lo->a_g = 0;
	lo->a_ones = C;
	lo->a_am = 2 * C;
	lo->a_stg = 2 * C + 4;
	if (lo->small) {
		lo->a_dy = lo->a_dp = lo->a_hd = lo->a_stg;
		lo->a_stash = lo->a_stg + n;
		lo->a_r = 7 * n;
	} else {
		lo->a_dy = lo->a_stg + n;
		lo->a_dp = lo->a_dy + n;
		lo->a_hd = lo->a_dp + n;
		lo->a_stash = lo->a_hd + (lo->recompute ? 2 * n : 0);
		lo->a_r = (lo->recompute ? 5 : 13) * n;
	}
	lo->a_layer = lo->a_r + 2 * even(tp);
	lo->a_end = lo->a_stash + (uint32_t)L * lo->a_layer;
	lo->b_x = 0;
	lo->b_tile = n;
	lo->b_dln = 2 * n;
	lo->b_bh = even(3 * (uint64_t)n);
	lo->b_scr = lo->b_bh + even(n / 2 + 1);
	uint32_t scr = bwords / 2 < 256 ? bwords / 2 : 256;
	lo->b_be = lo->b_scr + scr;
	lo->b_bias = lo->b_be + C;
	lo->b_dg = lo->b_bias + C;
	lo->b_db = lo->b_dg + C;
	lo->b_dbias = lo->b_db + C;
	lo->b_s = lo->b_dbias + C;
	lo->b_t = lo->b_s + C;
	lo->b_zero = lo->b_t + 4;
	lo->b_one = lo->b_zero + C;
	lo->b_tg = lo->b_one + C;
	lo->b_td = lo->b_tg + 256;
	lo->b_blk = lo->b_td + 256;
	lo->b_end = lo->b_blk + 16;
	lo->b_lns = lo->b_tile;
	int fits = tp >= 3; /* three rows of C in the tile */
	lo->b_lndg = fits ? lo->b_tile : lo->b_dg;
	lo->b_lndb = fits ? lo->b_tile + (uint32_t)C : lo->b_db;
	lo->b_lnz = fits ? lo->b_tile + 2 * (uint32_t)C : lo->b_zero;
}

void tr_sram_need_stash(int n_layer, int n_embd, int pes, int tokens, enum tr_stash kind,
			uint64_t *a_words, uint64_t *b_words)
{
	struct tr_layout lo;
	layout(&lo, n_layer, n_embd, pes, tokens, 1u << 16, kind);
	*a_words = lo.a_end;
	*b_words = lo.b_end;
}

void tr_sram_need(int n_layer, int n_embd, int pes, int tokens, uint64_t *a_words,
		  uint64_t *b_words)
{
	uint64_t a, b;
	*a_words = *b_words = UINT64_MAX;
	for (int k = TR_FULL; k <= TR_RECOMPUTE; k++) {
		tr_sram_need_stash(n_layer, n_embd, pes, tokens, (enum tr_stash)k, &a, &b);
		if (a < *a_words) {
			*a_words = a;
			*b_words = b;
		}
	}
}

static uint32_t stash(const struct train_resident *r, int l, int what)
{
	return r->lo.a_stash + (uint32_t)l * r->lo.a_layer + (uint32_t)what * r->lo.n;
}

/* r of ln1 (ln 0) or ln2 (ln 1) of block l */
static uint32_t stash_r(const struct train_resident *r, int l, int ln)
{
	return r->lo.a_stash + (uint32_t)l * r->lo.a_layer + r->lo.a_r +
	       (uint32_t)ln * even(r->lo.tp);
}

/* fc tile k's stashed pre-activation (small) */
static uint32_t tile_pre(const struct train_resident *r, int l, int k)
{
	return stash(r, l, SM_PRE + k);
}

/* GELU (h) and GELU' (d) of fc tile k of block l (small: d in the backward) */
static uint32_t tile_h(const struct train_resident *r, int l, int k)
{
	if (r->lo.small)
		return r->lo.a_stg;
	return r->lo.recompute ? r->lo.a_hd : stash(r, l, ST_H) + (uint32_t)k * r->lo.n;
}

static uint32_t tile_d(const struct train_resident *r, int l, int k)
{
	if (r->lo.small)
		return tile_pre(r, l, k);
	return r->lo.recompute ? r->lo.a_hd + r->lo.n : stash(r, l, ST_D) + (uint32_t)k * r->lo.n;
}

/* z1, the attention output, z2 of block l */
static uint32_t st_z1(const struct train_resident *r, int l)
{
	return stash(r, l, r->lo.small ? SM_Z1 : ST_Z1);
}

static uint32_t st_att(const struct train_resident *r, int l)
{
	return stash(r, l, r->lo.small ? SM_ATT : ST_ATT);
}

/* The attention output's columns of head group g of n (2, or 4: proj's quarters) in block
 * l's stash: with head groups (heads_split) each group's rows [tp, C / 2] one after the
 * other (a group's write one span a PE), else rows [tp, C] */
static csd_region att_group(const struct train_resident *r, int l, int g, int n)
{
	uint32_t C = (uint32_t)r->m->cfg.n_embd, H = C / 2, w = C / (uint32_t)n;
	uint32_t h = (uint32_t)g * w / H, o = (uint32_t)g * w % H;
	csd_region x = { CSD_MEM_A, st_att(r, l) + h * r->lo.tp * H + o, H, w };
	return x;
}

static uint32_t st_z2(const struct train_resident *r, int l)
{
	return stash(r, l, r->lo.small ? SM_Z2 : ST_Z2);
}

/* y1 of block l (small: pre tile 0, forward and backward) */
static uint32_t st_y1(const struct train_resident *r, int l)
{
	return r->lo.small ? tile_pre(r, l, 0) : stash(r, l, ST_Y1);
}

/* y2 of block l: small: pre tile 3 in the forward, pre tile 0 in the backward */
static uint32_t st_y2(const struct train_resident *r, int l, int bwd)
{
	return r->lo.small ? tile_pre(r, l, bwd ? 0 : 3) : stash(r, l, ST_Y2);
}

/* A block of sp: rows [r0, r0+nr), columns [c0, c0+nc), its pattern and values. */
static int sub_sparse(struct train_resident *r, csd_sparse *out, const csd_sparse *sp, int r0,
		      int nr, int c0, int nc)
{
	memset(r->wbuf, 0, sizeof(float) * (size_t)nr * nc);
	memset(r->mbuf, 0, (size_t)nr * nc);
	for (int i = 0; i < nr; i++)
		for (int64_t e = sp->row_ptr[r0 + i]; e < sp->row_ptr[r0 + i + 1]; e++) {
			int j = sp->col[e] - c0;
			if (j < 0 || j >= nc)
				continue;
			r->wbuf[(size_t)i * nc + j] = nm_bf16_to_f32(sp->val[e]);
			r->mbuf[(size_t)i * nc + j] = 1;
		}
	csd_sparse_free(out);
	return csd_sparse_from_dense(out, r->wbuf, r->mbuf, nr, nc);
}

/*
 * The forward's q, k, v in two groups of heads (an even head count, C / 2 even): the
 * first group's attention output goes down while the second group's row blocks compute,
 * the second's while proj's first column block does (csd_write_tokens_next: a write of
 * A beside the kernel's reads of other columns).
 */
static int heads_split(const struct train_resident *r)
{
	int C = r->m->cfg.n_embd, NH = r->m->cfg.n_head;
	return NH % 2 == 0 && C % 4 == 0;
}

/* Whether a kernel carries a read of the packed Bh rows (B's second bank, its output tile
 * and x in the first: csd_read_tokens_next); else the read goes on its own. */
static int bh_carried(const struct train_resident *r)
{
	return r->lo.b_bh >= r->bwords / 2;
}

/* proj by four column blocks of C / 4 (A regions of whole words), where they carry v1's read
 * and group 1's output down by halves (qkv_heads_forward) */
static int proj_quarters(const struct train_resident *r)
{
	return heads_split(r) && r->m->cfg.n_embd % 8 == 0 && bh_carried(r);
}

/* The last block's output goes up by NOR pieces of C / NOR features, each read while fc2's
 * last column block computes the next piece's rows (the same chains), the last on its own. */
static int out_pieces(const struct train_resident *r)
{
	return r->m->cfg.n_embd % (2 * NOR) == 0 && bh_carried(r);
}

static int build_blocks(struct train_resident *r)
{
	int L = r->m->cfg.n_layer, C = r->m->cfg.n_embd, rc = CS_OK;
	size_t need = 0;
	for (int l = 0; l < L && !rc; l++) {
		csd_sparse *b = r->blk + (size_t)l * NBLK;
		for (int k = 0; k < 3 && !rc; k++)
			rc = sub_sparse(r, &b[BQKV + k], td_dev_sparse(r->td, l, GPT_QKV), k * C, C, 0, C);
		for (int k = 0; k < 4 && !rc; k++)
			rc = sub_sparse(r, &b[BFC + k], td_dev_sparse(r->td, l, GPT_FC), k * C, C, 0, C);
		for (int k = 0; k < 4 && !rc; k++)
			rc = sub_sparse(r, &b[BFC2 + k], td_dev_sparse(r->td, l, GPT_FC_PROJ), 0, C, k * C,
					C);
		for (int h = 0; h < 2 && !rc && C % 2 == 0; h++) {
			const csd_sparse *qkv = td_dev_sparse(r->td, l, GPT_QKV);
			rc = sub_sparse(r, &b[BVH + h], qkv, 2 * C + h * (C / 2), C / 2, 0, C);
			if (!rc && heads_split(r))
				rc = sub_sparse(r, &b[BQH + h], qkv, h * (C / 2), C / 2, 0, C);
			if (!rc && heads_split(r))
				rc = sub_sparse(r, &b[BKH + h], qkv, C + h * (C / 2), C / 2, 0, C);
			if (!rc && heads_split(r))
				rc = sub_sparse(r, &b[BPH + h], td_dev_sparse(r->td, l, GPT_ATTN_PROJ),
						0, C, h * (C / 2), C / 2);
			for (int q = 2 * h; q < 2 * h + 2 && !rc && proj_quarters(r); q++)
				rc = sub_sparse(r, &b[BPQ + q], td_dev_sparse(r->td, l, GPT_ATTN_PROJ),
						0, C, q * (C / 4), C / 4);
		}
		for (int q = 0; q < NOR && !rc && out_pieces(r); q++)
			rc = sub_sparse(r, &b[BOR + q], td_dev_sparse(r->td, l, GPT_FC_PROJ),
					q * (C / NOR), C / NOR, 3 * C, C);
		if ((size_t)td_dev_sparse(r->td, l, GPT_ATTN_PROJ)->nnz > need)
			need = (size_t)td_dev_sparse(r->td, l, GPT_ATTN_PROJ)->nnz;
		for (int k = 0; k < NBLK && !rc; k++)
			if ((size_t)b[k].nnz > need)
				need = (size_t)b[k].nnz;
	}
	if (!rc && need + 1 > r->dw_cap) {
		float *nb = realloc(r->dw, sizeof(float) * (need + 1));
		if (!nb)
			return CS_ERR_NO_MEM;
		r->dw = nb;
		r->dw_cap = need + 1;
	}
	return rc;
}

int tr_open(train_resident **out, train_device *td, gpt *m, char *err, size_t errlen)
{
	int L = m->cfg.n_layer, C = m->cfg.n_embd, rc = CS_ERR_NO_MEM;
	csd_info info;
	train_resident *r = calloc(1, sizeof *r);
	if (!r)
		return CS_ERR_NO_MEM;
	r->td = td;
	r->m = m;
	r->dev = td_dev_csd(td);
	rc = csd_get_info(r->dev, &info);
	if (rc) {
		snprintf(err, errlen, "device: %s", csd_last_error(r->dev));
		goto out_free;
	}
	r->P = info.pes;
	r->bcap = info.b_words / 2 < 256 ? info.b_words / 2 : 256;
	r->bwords = info.b_words;
	r->a_wport = !strcmp(info.pe, "full");
	if (C % 2) {
		snprintf(err, errlen, "device.resident: model.n_embd %d must be even", C);
		rc = CS_ERR_INVALID;
		goto out_free;
	}
	/* the whole stash when it fits, else the 7 C stash, else GELU's input recomputed by
	 * a second fc kernel in the backward */
	for (int k = TR_FULL; k <= TR_RECOMPUTE; k++) {
		layout(&r->lo, L, C, r->P, m->B * m->T, info.b_words, k);
		if (r->lo.a_end <= info.a_words && r->lo.a_end <= 65536)
			break;
	}
	if (r->lo.a_end > info.a_words || r->lo.b_end > info.b_words || r->lo.a_end > 65536 ||
	    2 * (uint64_t)r->lo.b_bh >= 65536) {
		snprintf(err, errlen,
			 "device.resident: %d x %d tokens of a %d-layer model (C %d) on %d PEs need "
			 "awords >= %u and bwords >= %u a PE (this device: %u and %u; A addresses "
			 "end at 65536): fewer tokens a step or a larger mesh",
			 m->B, m->T, L, C, r->P, r->lo.a_end, r->lo.b_end, info.a_words,
			 info.b_words);
		rc = CS_ERR_RANGE;
		goto out_free;
	}
	rc = CS_ERR_NO_MEM;
	r->blk = calloc((size_t)L * NBLK, sizeof *r->blk);
	r->wbuf = malloc(sizeof(float) * 4 * (size_t)C * C);
	r->mbuf = malloc(4 * (size_t)C * C);
	r->h16 = malloc(sizeof(uint16_t) * (size_t)m->B * m->T * 3 * C);
	r->part = malloc(sizeof(float) * 4 * (size_t)r->P * C);
	if (!r->blk || !r->wbuf || !r->mbuf || !r->h16 || !r->part)
		goto out_free;
	if (heads_split(r)) {
		size_t BT = (size_t)m->B * m->T, H = (size_t)C / 2;
		r->gqkv = malloc(sizeof(float) * BT * 3 * H);
		r->gout = malloc(sizeof(float) * BT * H);
		r->gatt = malloc(sizeof(float) * (size_t)m->B * (m->cfg.n_head / 2) * m->T * m->T);
		r->g16 = malloc(sizeof(uint16_t) * BT * C);
		r->gdq = malloc(sizeof(float) * BT * 3 * H);
		if (!r->gqkv || !r->gout || !r->gatt || !r->g16 || !r->gdq)
			goto out_free;
	}
	*out = r;
	return CS_OK;
out_free:
	tr_close(r);
	return rc;
}

void tr_close(train_resident *r)
{
	if (!r)
		return;
	prof_print();
	for (int k = 0; r->blk && k < r->m->cfg.n_layer * NBLK; k++)
		csd_sparse_free(&r->blk[k]);
	free(r->blk);
	free(r->wbuf);
	free(r->mbuf);
	free(r->dw);
	free(r->h16);
	free(r->part);
	free(r->gqkv);
	free(r->gout);
	free(r->gatt);
	free(r->g16);
	free(r->gdq);
	free(r);
}

const char *tr_last_error(train_resident *r)
{
	return r->err[0] ? r->err : csd_last_error(r->dev);
}

/* ---- the device phases ------------------------------------------------------------------ */

static uint64_t link_mark(train_resident *r);
static void link_note(train_resident *r, uint64_t a0, int line);
#define TRY(call)                                     \
	do {                                          \
		uint64_t a0_ = link_mark(r);          \
		rc = (call);                          \
		link_note(r, a0_, __LINE__);          \
		if (rc)                               \
			return rc;                    \
	} while (0)

static csd_region rg(int mem, uint32_t base, uint32_t width)
{
	csd_region x = { mem, base, width, width };
	return x;
}

/* CS_TR_PROFILE=1: each program call's device cycles (its overlay, block, SYNCs and run),
 * summed per entry and call site (the caller's line), printed to stderr at tr_close. */
#define PROF_MAX 64
static struct prof_site {
	const char *entry;
	int line;
	uint64_t calls, cycles;
} prof[PROF_MAX];
static int n_prof = -1; /* -1: CS_TR_PROFILE not yet read; 0 off or empty */
static int prof_on;
static const char *prof_image; /* the last call's image: a switch loads an overlay */
static uint64_t prof_switches;

static void prof_init(void)
{
	if (n_prof < 0) {
		const char *e = getenv("CS_TR_PROFILE");
		prof_on = e && *e && strcmp(e, "0");
		n_prof = 0;
	}
}

static int run_at(train_resident *r, const char *prog, const char *entry, const uint16_t *p,
		  int n, int line)
{
	prof_init();
	csd_counters c0, c1;
	if (prof_on)
		csd_get_counters(r->dev, &c0);
	int rc = csd_run_program(r->dev, prog, entry, r->lo.b_blk, p, n);
	if (!prof_on || rc)
		return rc;
	csd_get_counters(r->dev, &c1);
	int i = 0;
	while (i < n_prof && (prof[i].line != line || strcmp(prof[i].entry, entry)))
		i++;
	if (i == n_prof) {
		if (n_prof == PROF_MAX)
			return rc;
		prof[n_prof++] = (struct prof_site){ entry, line, 0, 0 };
	}
	prof[i].calls++;
	prof[i].cycles += c1.cycles - c0.cycles;
	if (!prof_image || strcmp(prof_image, prog))
		prof_switches++;
	prof_image = prog;
	return rc;
}

#define run(r, prog, entry, p, n) run_at(r, prog, entry, p, n, __LINE__)

/* CS_TR_PROFILE: the exposed link cycles (the act_cycles counter) each TRY call site adds,
 * by line; a site inside a function that another site calls counts in both */
static struct link_site {
	int line;
	uint64_t calls, cycles;
} lprof[PROF_MAX];
static int n_lprof;

static uint64_t link_mark(train_resident *r)
{
	csd_counters c;
	prof_init();
	if (!prof_on)
		return 0;
	csd_get_counters(r->dev, &c);
	return c.act_cycles;
}

static void link_note(train_resident *r, uint64_t a0, int line)
{
	csd_counters c;
	if (!prof_on)
		return;
	csd_get_counters(r->dev, &c);
	if (c.act_cycles == a0)
		return;
	int i = 0;
	while (i < n_lprof && lprof[i].line != line)
		i++;
	if (i == n_lprof) {
		if (n_lprof == PROF_MAX)
			return;
		lprof[n_lprof++] = (struct link_site){ line, 0, 0 };
	}
	lprof[i].calls++;
	lprof[i].cycles += c.act_cycles - a0;
}

static void prof_print(void)
{
	uint64_t tot = 0, calls = 0;
	for (int i = 0; i < n_prof; i++) {
		fprintf(stderr, "profile: %-9s line %4d  calls %4llu  cycles %9llu\n", prof[i].entry,
			prof[i].line, (unsigned long long)prof[i].calls,
			(unsigned long long)prof[i].cycles);
		tot += prof[i].cycles;
		calls += prof[i].calls;
	}
	for (int i = 0; i < n_lprof; i++)
		fprintf(stderr, "profile: link      line %4d  calls %4llu  exposed %9llu\n",
			lprof[i].line, (unsigned long long)lprof[i].calls,
			(unsigned long long)lprof[i].cycles);
	n_lprof = 0;
	if (n_prof > 0)
		fprintf(stderr, "profile: all programs  calls %4llu  cycles %9llu  image switches "
			"%llu\n", (unsigned long long)calls, (unsigned long long)tot,
			(unsigned long long)prof_switches);
	n_prof = n_prof > 0 ? 0 : n_prof;
}

static int write_gamma(train_resident *r, const float *gamma)
{
	int C = r->m->cfg.n_embd;
	for (int j = 0; j < C; j++)
		r->h16[j] = nm_bf16_from_f32(gamma[j]);
	return csd_write_all(r->dev, CSD_MEM_A, r->lo.a_g, r->h16, (uint32_t)C);
}

/* x (B) -> y, z, r (A) of rows [o, o + n) of every PE: layernorm with gamma, beta (NULL:
 * already written), its scratch row at B word scr. */
static int ln_forward_rows(train_resident *r, int o, int n, const float *gamma,
			   const float *beta, uint32_t y, uint32_t z, uint32_t rr, uint32_t scr)
{
	const struct tr_layout *lo = &r->lo;
	int C = r->m->cfg.n_embd, rc;
	uint32_t oc = (uint32_t)o * (uint32_t)C;
	if (gamma) {
		TRY(write_gamma(r, gamma));
		TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_be, beta, (uint32_t)C));
	}
	const uint16_t p[13] = { (uint16_t)C, (uint16_t)lo->a_g, (uint16_t)lo->b_be,
				 (uint16_t)scr, (uint16_t)lo->b_t, (uint16_t)lo->a_am,
				 nm_bf16_from_f32(1.0f / (float)C), nm_bf16_from_f32(1e-5f),
				 (uint16_t)(lo->b_x + oc), (uint16_t)(y + oc), (uint16_t)(z + oc),
				 (uint16_t)(rr + (uint32_t)o), (uint16_t)n };
	return run(r, "vec_ln_fwd", "ln_fwd", p, 13);
}

/* x (B) -> y, z, r (A) of every token: layernorm with gamma, beta. */
static int ln_forward(train_resident *r, int tp, const float *gamma, const float *beta,
		      uint32_t y, uint32_t z, uint32_t rr)
{
	return ln_forward_rows(r, 0, tp, gamma, beta, y, z, rr, r->lo.b_lns);
}

/* rows of C words at src (B), tp of them: += bias */
static int bias_forward(train_resident *r, int tp, const float *bias, uint32_t src)
{
	int C = r->m->cfg.n_embd, rc;
	TRY(csd_write_all(r->dev, CSD_MEM_B, r->lo.b_bias, bias, (uint32_t)C));
	const uint16_t p[7] = { (uint16_t)C, (uint16_t)tp, (uint16_t)src, (uint16_t)C,
				(uint16_t)r->lo.b_bias, 0, (uint16_t)r->lo.a_ones };
	return run(r, "vec_cvt", "bias_fwd", p, 7);
}

/* cvt_a (bh 0: into A element dst) or cvt_bh (into Bh element dst) of C-word rows at src;
 * the rows are contiguous in both, so one row of tp w elements (one vector instruction,
 * not one a row) */
static int convert_w(train_resident *r, int tp, int bh, uint32_t src, uint32_t dst, int w)
{
	int n = tp;
	if (tp > 0 && (int64_t)tp * w <= 0xffff) {
		w *= tp;
		n = 1;
	}
	const uint16_t p[7] = { (uint16_t)w, (uint16_t)n, (uint16_t)src, (uint16_t)w,
				(uint16_t)dst, (uint16_t)w, 0 };
	return run(r, "vec_cvt", bh ? "cvt_bh" : "cvt_a", p, 7);
}

static int convert(train_resident *r, int tp, int bh, uint32_t src, uint32_t dst)
{
	return convert_w(r, tp, bh, src, dst, r->m->cfg.n_embd);
}

/* Sum the per-PE partials [P, w] at B word at on the mesh (csd_reduce_region: the wgrad
 * reduction's order, a batch of words at a time) into r->part [w]. */
static int reduce(train_resident *r, uint32_t at, int w)
{
	int rc;
	for (int j0 = 0; j0 < w; j0 += (int)r->bcap) {
		int n = w - j0 < (int)r->bcap ? w - j0 : (int)r->bcap;
		csd_region pr = rg(CSD_MEM_B, at + (uint32_t)j0, (uint32_t)n);
		TRY(csd_reduce_region(r->dev, r->part + j0, &pr));
	}
	return CS_OK;
}

/* Whether w words of partials are summed on the mesh or read up: a read moves P w words, the
 * reduction about 34 P (the wgrad's task tables) and 3 w cycles. */
static int on_mesh(const train_resident *r, int w)
{
	return (int64_t)w * (r->P - 3) > 34 * (int64_t)r->P;
}

/* The per-PE partials [P, w] at B word at summed into r->part [w]: on the mesh, or read up
 * and summed in PE order. */
static int partials(train_resident *r, uint32_t at, int w)
{
	int rc;
	if (on_mesh(r, w))
		return reduce(r, at, w);
	csd_region pr = rg(CSD_MEM_B, at, (uint32_t)w);
	float *up = r->part + 2 * (size_t)r->P * r->m->cfg.n_embd; /* [P, w], w <= 2 C */
	TRY(csd_read_tokens(r->dev, up, &pr, r->P));
	for (int j = 0; j < w; j++) {
		float s = up[j];
		for (int q = 1; q < r->P; q++)
			s += up[(size_t)q * w + j];
		r->part[j] = s;
	}
	return CS_OK;
}

/* The per-PE partials [P, C] at B word at summed into out [C] (+=). */
static int gather(train_resident *r, float *out, uint32_t at)
{
	int C = r->m->cfg.n_embd, rc;
	TRY(partials(r, at, C));
	for (int j = 0; j < C; j++)
		out[j] += r->part[j];
	return CS_OK;
}

/* A layernorm's dgamma and dbeta partials (side by side: b_lndb = b_lndg + C) into g, b. */
static int gather_ln(train_resident *r, float *g, float *b)
{
	int C = r->m->cfg.n_embd, rc;
	TRY(partials(r, r->lo.b_lndg, 2 * C));
	for (int j = 0; j < C; j++) {
		g[j] += r->part[j];
		b[j] += r->part[C + j];
	}
	return CS_OK;
}

/* The same read of the partials at B word at, left to the next call (a kernel whose B words
 * lie in the other bank carries it, csd_read_tokens_next); gather_sum adds them into out
 * once that call returned. */
static int gather_next(train_resident *r, uint32_t at)
{
	int C = r->m->cfg.n_embd;
	csd_region pr = rg(CSD_MEM_B, at, (uint32_t)C);
	return csd_read_tokens_next(r->dev, r->part + (size_t)r->P * C, &pr, r->P);
}

static void gather_sum(train_resident *r, float *out)
{
	int C = r->m->cfg.n_embd;
	const float *part = r->part + (size_t)r->P * C;
	for (int q = 0; q < r->P; q++)
		for (int j = 0; j < C; j++)
			out[j] += part[(size_t)q * C + j];
}

/* The resident gradient dx as a backward kernel's input: out[C] += its bias gradient (per-PE
 * partials, gathered; out NULL: left to the next call, gather_next), bf16 into A at dya
 * (NONE: not) and packed into the Bh region, one vec_cvt call (dy_abh / dy_bh). */
static int dy_prepare(train_resident *r, int tp, float *out, uint32_t dya)
{
	const struct tr_layout *lo = &r->lo;
	int C = r->m->cfg.n_embd, rc;
	memset(r->part, 0, sizeof(float) * (size_t)C);
	TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_dbias, r->part, (uint32_t)C));
	const uint16_t p[10] = { (uint16_t)C, (uint16_t)tp, (uint16_t)lo->b_x, (uint16_t)C,
				 (uint16_t)dya, (uint16_t)C, (uint16_t)lo->a_ones,
				 (uint16_t)lo->b_zero, (uint16_t)(2 * lo->b_bh),
				 (uint16_t)lo->b_dbias };
	TRY(run(r, "vec_cvt", dya == NONE ? "dy_bh" : "dy_abh", p, 10));
	return out ? gather(r, out, lo->b_dbias) : gather_next(r, lo->b_dbias);
}

/* dW of a block (rows r0.., columns c0.. of a dense [.., ic] gradient) += its wgrad:
 * dy packed in Bh from element dyh, x the A region of width C at xa. */
static int wgrad_xs(train_resident *r, float *g, int ic, int r0, int c0, const csd_sparse *sp,
		    int BT, uint32_t xa, uint32_t xs, int dyw, uint32_t dyh)
{
	int rc;
	csd_region dy = rg(CSD_MEM_BH, dyh, (uint32_t)dyw);
	csd_region x = { CSD_MEM_A, xa, xs, (uint32_t)sp->n_in };
	TRY(csd_wgrad_region(r->dev, r->dw, &dy, &x, sp, BT, r->lo.b_scr));
	for (int i = 0; i < sp->n_out; i++)
		for (int64_t e = sp->row_ptr[i]; e < sp->row_ptr[i + 1]; e++)
			g[(size_t)(r0 + i) * ic + c0 + sp->col[e]] += r->dw[e];
	return CS_OK;
}

/* the same, X's rows n_in apart */
static int wgrad_at(train_resident *r, float *g, int ic, int r0, int c0, const csd_sparse *sp,
		    int BT, uint32_t xa, int dyw, uint32_t dyh)
{
	return wgrad_xs(r, g, ic, r0, c0, sp, BT, xa, (uint32_t)sp->n_in, dyw, dyh);
}

/* the same, dy packed in the Bh region (b_bh) */
static int wgrad(train_resident *r, float *g, int ic, int r0, int c0, const csd_sparse *sp,
		 int BT, uint32_t xa, int dyw)
{
	return wgrad_at(r, g, ic, r0, c0, sp, BT, xa, dyw, 2 * r->lo.b_bh);
}

static void fail_msg(train_resident *r, const char *what, int l)
{
	snprintf(r->err, sizeof r->err, "resident step: %s of block %d: %s", what, l,
		 csd_last_error(r->dev));
}

/* y of a layernorm rebuilt from its stashed z (small): cvt_f against gamma (its bf16 values,
 * fp32 in B at g: C free words) and beta into the B tile scr, cvt_a into A at dst:
 * nm_ln_fwd_bits's y. With g in the other bank than beta, vmac reads both pairs in one
 * cycle on pe. */
static int ln_rebuild_g(train_resident *r, int tp, const float *gamma, const float *beta,
			uint32_t z, uint32_t dst, uint32_t scr, uint32_t g)
{
	const struct tr_layout *lo = &r->lo;
	int C = r->m->cfg.n_embd, rc;
	for (int j = 0; j < C; j++)
		r->part[j] = nm_bf16_to_f32(nm_bf16_from_f32(gamma[j]));
	TRY(csd_write_all(r->dev, CSD_MEM_B, g, r->part, (uint32_t)C));
	TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_be, beta, (uint32_t)C));
	const uint16_t pc[8] = { (uint16_t)C, (uint16_t)tp, (uint16_t)z, (uint16_t)C,
				 (uint16_t)scr, 0, (uint16_t)g, (uint16_t)lo->b_be };
	TRY(run(r, "vec_cvt", "cvt_f", pc, 8));
	return convert(r, tp, 0, scr, dst);
}

/* the same, gamma in scr's last row (that row's y overwrites it in place, each element read
 * first) */
static int ln_rebuild(train_resident *r, int tp, const float *gamma, const float *beta,
		      uint32_t z, uint32_t dst, uint32_t scr)
{
	uint32_t g = scr + (uint32_t)(tp - 1) * (uint32_t)r->m->cfg.n_embd;
	return ln_rebuild_g(r, tp, gamma, beta, z, dst, scr, g);
}

/* bf16 rows in A (tp of C elements from a) widened into fp32 rows of B at b: cvt_f against
 * ones and the zeros (exact: fmac(x, 1, +0)). The ones are written into b's last row (that
 * row's result overwrites them in place, each element read first): b in the other bank
 * than the zeros, vmac reads both pairs in one cycle on pe. */
static int widen(train_resident *r, int tp, uint32_t a, uint32_t b)
{
	const struct tr_layout *lo = &r->lo;
	int C = r->m->cfg.n_embd, rc;
	uint32_t g = tp > 0 ? b + (uint32_t)(tp - 1) * (uint32_t)C : lo->b_one;
	for (int j = 0; j < C && tp > 0; j++)
		r->part[j] = 1.0f;
	if (tp > 0)
		TRY(csd_write_all(r->dev, CSD_MEM_B, g, r->part, (uint32_t)C));
	const uint16_t pc[8] = { (uint16_t)C, (uint16_t)tp, (uint16_t)a, (uint16_t)C,
				 (uint16_t)b, 0, (uint16_t)g, (uint16_t)lo->b_zero };
	return run(r, "vec_cvt", "cvt_f", pc, 8);
}

/* the same, rows [o, o + n) of every PE */
static int widen_rows(train_resident *r, int o, int n, uint32_t a, uint32_t b)
{
	uint32_t oc = (uint32_t)o * (uint32_t)r->m->cfg.n_embd;
	return widen(r, n, a + oc, b + oc);
}

/* A vec_fc.s call on the tile's rows (block W N TG TD S IN OUT D MODE ONES B ZERO ST), its
 * scratch S at s (fc_gelu_bwd's zeros: in the other B bank than IN, its product pass reads
 * both pairs in one cycle on pe). */
static int run_fc_s(train_resident *r, const char *entry, int tp, uint32_t in, uint32_t out,
		    uint32_t d, int mode, uint32_t bv, uint32_t st, uint32_t s)
{
	const struct tr_layout *lo = &r->lo;
	const uint16_t p[13] = { (uint16_t)r->m->cfg.n_embd, (uint16_t)tp, (uint16_t)lo->b_tg,
				 (uint16_t)lo->b_td, (uint16_t)s, (uint16_t)in,
				 (uint16_t)out, (uint16_t)d, (uint16_t)mode,
				 (uint16_t)lo->a_ones, (uint16_t)bv, (uint16_t)lo->b_zero,
				 (uint16_t)st };
	return run(r, "vec_fc", entry, p, 13);
}

/* the same, the scratch at b_s */
static int run_fc_in(train_resident *r, const char *entry, int tp, uint32_t in, uint32_t out,
		     uint32_t d, int mode, uint32_t bv, uint32_t st)
{
	return run_fc_s(r, entry, tp, in, out, d, mode, bv, st, r->lo.b_s);
}

/* fc_gelu_bwd's zeros for the rows at in, in the other B bank (its product pass then reads
 * both pairs in one cycle on pe): the kept row of +0 (not written again on pe), else b_s,
 * else alt */
static uint32_t gelu_bwd_zeros(const train_resident *r, uint32_t in, uint32_t alt)
{
	uint32_t bank = r->bwords / 2;
	if ((r->lo.b_zero ^ in) & bank)
		return r->lo.b_zero;
	return (r->lo.b_s ^ in) & bank ? r->lo.b_s : alt;
}

/* the same on the output tile's rows (IN) */
static int run_fc(train_resident *r, const char *entry, int tp, uint32_t out, uint32_t d,
		  int mode, uint32_t bv, uint32_t st)
{
	return run_fc_in(r, entry, tp, r->lo.b_tile, out, d, mode, bv, st);
}

/* fc tile k of block l: its output (fc from the ln2 output and its bias; small, in the
 * backward: the stashed pre-activation widened), GELU into h, GELU' into d (not in the
 * forward of small and recompute), one vec_fc call after the kernel. The small forward
 * stashes the pre-activation. */
static int fc_tile(train_resident *r, int l, int k, int BT, int bwd)
{
	const struct tr_layout *lo = &r->lo;
	int C = r->m->cfg.n_embd, tp = (BT + r->P - 1) / r->P, rc;
	csd_region tile = rg(CSD_MEM_B, lo->b_tile, C), y2 = rg(CSD_MEM_A, st_y2(r, l, 0), C);
	uint32_t h = tile_h(r, l, k), d = tile_d(r, l, k);
	if (lo->small && bwd)
		return run_fc(r, "fc_gelu_wd", tp, h, d, 1, lo->b_one, tile_pre(r, l, k));
	TRY(csd_forward_region(r->dev, &tile, &y2, &r->blk[(size_t)l * NBLK + BFC + k], BT,
			       CSD_OVERWRITE));
	TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_bias,
			  r->m->params.fcb + (size_t)l * 4 * C + (size_t)k * C, (uint32_t)C));
	if (lo->small)
		return run_fc(r, "fc_gelu_sh", tp, h, NONE, 0, lo->b_bias, tile_pre(r, l, k));
	/* GELU' only where the backward reads it: not in the recomputing forward */
	if (bwd || lo->kind == TR_FULL)
		return run_fc(r, "fc_gelu_hd", tp, h, d, 0, lo->b_bias, NONE);
	return run_fc(r, "fc_gelu_h", tp, h, NONE, 0, lo->b_bias, NONE);
}

/* Row block k of qkv [BT, 3C] from the bf16 tile read into h16. */
/* Row block k of q, k, v from its bf16 read, plus its bias on the host, which reads q, k,
 * v for attention anyway (and sums their bias gradient): fp32 onto the bf16 output. */
static void unpack_qkv(train_resident *r, float *qkv, int k, int BT, const float *bias)
{
	size_t C = (size_t)r->m->cfg.n_embd;
	for (int t = 0; t < BT; t++)
		for (size_t j = 0; j < C; j++)
			qkv[(size_t)t * 3 * C + k * C + j] =
				nm_bf16_to_f32(r->h16[(size_t)t * C + j]) + bias[j];
}

/* Part (q, k, v: kind) of head group g, H = C / 2 columns, from its bf16 read (rows ld
 * elements apart), plus its bias on the host: fp32 onto the bf16 output. */
static void unpack_group(train_resident *r, float *qkv, int kind, int g, const uint16_t *src,
			 size_t ld, int BT, const float *bias)
{
	size_t C = (size_t)r->m->cfg.n_embd, H = C / 2, c0 = (size_t)kind * C + (size_t)g * H;
	for (int t = 0; t < BT; t++)
		for (size_t j = 0; j < H; j++)
			qkv[(size_t)t * 3 * C + c0 + j] =
				nm_bf16_to_f32(src[(size_t)t * ld + j]) + bias[c0 + j];
}

/* Attention of head group g (heads g NH/2 ..) on the host: its columns of q, k, v to
 * gqkv, the engine's attention over its NH/2 heads (the same bits a head as over all:
 * a head's work depends on its size only), the output into atty's columns and as bf16
 * into g16's group g [BT, H], the probabilities into att's heads. */
static void attention_group(train_resident *r, float *atty, float *att, const float *qkv,
			    float *scratch, int B, int T, int g)
{
	gpt *m = r->m;
	size_t C = (size_t)m->cfg.n_embd, H = C / 2, BT = (size_t)B * T;
	int NH = m->cfg.n_head, NG = NH / 2;
	for (size_t t = 0; t < BT; t++)
		for (int k = 0; k < 3; k++)
			memcpy(r->gqkv + t * 3 * H + (size_t)k * H, qkv + t * 3 * C + k * C + g * H,
			       sizeof(float) * H);
	attention_forward_pool(m->pool, r->gout, r->gatt, r->gqkv, scratch, B, T, (int)H, NG);
	uint16_t *o16 = r->g16 + (size_t)g * BT * H;
	nm_bf16_from_f32_array(o16, r->gout, BT * H);
	for (size_t t = 0; t < BT; t++)
		memcpy(atty + t * C + g * H, r->gout + t * H, sizeof(float) * H);
	size_t TT = (size_t)T * T;
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NG; h++)
			memcpy(att + ((size_t)b * NH + (size_t)g * NG + h) * TT,
			       r->gatt + ((size_t)b * NG + h) * TT, sizeof(float) * TT);
}

/* Attention backward of head group g on the host (as attention_group): from its columns
 * of q, k, v, of the output's gradient datty and its heads' probabilities, its columns of
 * dqkv. */
static void attention_backward_group(train_resident *r, const float *qkv, const float *att,
				     float *scratch, int B, int T, int g)
{
	gpt *m = r->m;
	size_t C = (size_t)m->cfg.n_embd, H = C / 2, BT = (size_t)B * T, TT = (size_t)T * T;
	int NH = m->cfg.n_head, NG = NH / 2;
	for (size_t t = 0; t < BT; t++) {
		for (int k = 0; k < 3; k++)
			memcpy(r->gqkv + t * 3 * H + (size_t)k * H, qkv + t * 3 * C + k * C + g * H,
			       sizeof(float) * H);
		memcpy(r->gout + t * H, m->datty + t * C + g * H, sizeof(float) * H);
	}
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NG; h++)
			memcpy(r->gatt + ((size_t)b * NG + h) * TT,
			       att + ((size_t)b * NH + (size_t)g * NG + h) * TT, sizeof(float) * TT);
	memset(r->gdq, 0, sizeof(float) * BT * 3 * H);
	attention_backward_pool(m->pool, r->gdq, r->gout, r->gqkv, r->gatt, scratch, B, T, (int)H,
				NG);
	for (size_t t = 0; t < BT; t++)
		for (int k = 0; k < 3; k++)
			memcpy(m->dqkv + t * 3 * C + k * C + g * H, r->gdq + t * 3 * H + (size_t)k * H,
			       sizeof(float) * H);
}

/* The words of a write into A that kernel w hides on t rows of every PE (a carried write goes
 * between the kernel's majors, at most the work the PEs have queued less the next wavelet's
 * trip, docs/driver.md): per major about min(8, its nonzeros) t cycles less 8 + Rows + Cols
 * + 10, no more than the kernel's nnz t cycles. fwd: w's majors are its inputs (else its
 * outputs). */
static double carry_words(const train_resident *r, const csd_sparse *w, int fwd, int t)
{
	csd_info info;
	if (csd_get_info(r->dev, &info) || w->nnz <= 0)
		return 0;
	double nmaj = fwd ? w->n_in : w->n_out, per = w->nnz / nmaj, q = per < 8 ? per : 8;
	double h = nmaj * (q * t - (18 + info.rows + info.cols)), cap = (double)w->nnz * t;
	return h < 0 ? 0 : h > cap ? cap : h;
}

static int split_rows_w(const train_resident *r, int tp, const csd_sparse *w, int fwd,
			double ovh, int width, int *cut, double *rows);

/* Token t's row in a transfer of every PE's tp rows by two parts, rows [0, a) then [a, tp),
 * each packed by PE (pack_parts' order): PE t / tp's row u = t % tp of its part. */
static size_t two_part_row(int t, int tp, int a, int P)
{
	int q = t / tp, u = t % tp, c0 = u < a ? 0 : a, n = u < a ? a : tp - a;
	return (size_t)P * c0 + (size_t)q * n + (size_t)(u - c0);
}

/* Group 1's attention output (heads_split; rows [tp, C / 2] of every PE, att_group) down by
 * parts of rows, proj's second column block on each part's rows carrying the next part
 * (split_rows_w, a part's kernel call about half a row of the write), rather than by two
 * quarters of columns, the first on its own and the second beside proj's third quarter: where
 * the estimate says that hides more (with a write a kernel carries and every row a token).
 * The parts into cut, their count (0: by quarters). */
static int att1_rows(const train_resident *r, int BT, int tp, const csd_sparse *b, int *cut)
{
	int C = r->m->cfg.n_embd, H = C / 2;
	if (!r->a_wport || BT != r->P * tp)
		return 0;
	double e, row = (double)r->P * H / 2, w = row * tp / 2 + 2.0 * r->P * tp;
	int n = split_rows_w(r, tp, &b[BPH + 1], 1, 0.5, H, cut, &e);
	double hid = carry_words(r, &b[BPQ + 2], 1, tp);
	return n > 1 && e * row < w + (w > hid ? w - hid : 0) ? n : 0;
}

/* Whether group 0's attention output goes down on its own, q1's and k1's reads riding on
 * k1 and v1 (read and write H columns of every PE's tp rows, r words; k1's and v1's row
 * blocks nnz tp cycles), not the write on k1 and both reads on v1: where the estimate says
 * w + max(k1, r) + max(v1, r) < k1 + (r - what k1 hides, carry_words) + max(v1, 2 r), the
 * reads carried in B's other bank (a carried write waits out the host port: where the kernel
 * hides little of it, the link idles). */
static int att0_alone(const train_resident *r, int tp, const csd_sparse *b)
{
	if (!bh_carried(r))
		return 0;
	double w = (double)r->P * tp * (r->m->cfg.n_embd / 2) / 2;
	double k = (double)b[BKH + 1].nnz * tp, v = (double)b[BVH + 1].nnz * tp;
	double hid = carry_words(r, &b[BKH + 1], 1, tp);
	double alone = w + (k > w ? k : w) + (v > w ? v : w);
	double carried = k + (w > hid ? w - hid : 0) + (v > 2 * w ? v : 2 * w);
	return alone < carried;
}

/* q0 (heads_split) by two parts of rows where its read outlasts k0 (P tp C / 4 words against
 * nnz tp cycles, every row a token): the first part's rows a, the most whose read q0 on the
 * other rows hides, or fewer so that the second part's read still fills k0; where that
 * hides more than about a row of the read (the part's extra calls); 0: at once. */
static int q0_rows(const train_resident *r, int BT, int tp, const csd_sparse *b)
{
	double row = (double)r->P * r->m->cfg.n_embd / 4;
	double nq = (double)b[BQH].nnz, nk = (double)b[BKH].nnz * tp;
	if (!bh_carried(r) || BT != r->P * tp || tp < 2 || row * tp <= nk + row)
		return 0;
	int a = (int)(nq * tp / (row + nq)), b1 = (int)(tp - nk / row);
	a = b1 > 0 && b1 < a ? b1 : a;
	double hid = row * tp - nk - (row * (tp - a) > nk ? row * (tp - a) - nk : 0);
	return a < 1 || a > tp - 1 || hid <= row ? 0 : a;
}

/*
 * q, k, v, attention and proj of block l by head groups (heads_split): row blocks of C / 2
 * outputs in the order q0 k0 v0 q1 k1 v1, each packed (cvt_bh) and read up while the next
 * computes, q1 and k1 side by side in Bh (one read, while v1 computes); group 0's attention
 * output goes down while k1 computes; proj by column blocks onto x: v1's read and group 1's
 * output as proj_quarters says. q0_done: q0 already ran (block 0 by the embeddings' parts).
 */
static int qkv_heads_forward(train_resident *r, int l, int B, int T, float *scratch,
			     int q0_done)
{
	gpt *m = r->m;
	const struct tr_layout *lo = &r->lo;
	gpt_params *p = &m->params;
	gpt_acts *a = &m->acts;
	int C = m->cfg.n_embd, NH = m->cfg.n_head, BT = B * T, H = C / 2, rc;
	int tp = (BT + r->P - 1) / r->P;
	size_t C1 = C, C3 = 3 * C1, bh = (size_t)BT * H;
	const csd_sparse *b = r->blk + (size_t)l * NBLK;
	const float *bias = p->qkvb + l * C3;
	float *qkv = a->qkv + (size_t)l * BT * C3, *atty = a->atty + (size_t)l * BT * C1;
	float *attp = a->att + (size_t)l * B * NH * T * T;
	csd_region x = rg(CSD_MEM_B, lo->b_x, C), th = rg(CSD_MEM_B, lo->b_tile, (uint32_t)H);
	csd_region y1 = rg(CSD_MEM_A, st_y1(r, l), C);
	csd_region gbh = rg(CSD_MEM_BH, 2 * lo->b_bh, (uint32_t)H);
	csd_region qk1 = rg(CSD_MEM_BH, 2 * lo->b_bh, C);
	/* h16: q0, k0, v0 [BT, H] each, then q1 and k1 [BT, C], then v1 [BT, H] */
	uint16_t *h0 = r->h16, *hqk1 = r->h16 + 3 * bh, *hv1 = hqk1 + (size_t)BT * C;
	/* group 0: q0, k0, v0; each read rides on the next row block */
	static const int blk0[3] = { BQH, BKH, BVH };
	int qa = q0_done ? 0 : q0_rows(r, BT, tp, b);
	if (qa) {
		/* q0 by two parts of rows: the first's read (into g16, free until group 0's
		 * attention) while the second computes, the second's while k0 does */
		csd_region t1 = rg(CSD_MEM_B, lo->b_tile + (uint32_t)(qa * H), (uint32_t)H);
		csd_region x1 = rg(CSD_MEM_A, y1.base + (uint32_t)(qa * C), C);
		csd_region p1 = rg(CSD_MEM_BH, 2 * lo->b_bh + (uint32_t)(qa * H), (uint32_t)H);
		TRY(csd_forward_region(r->dev, &th, &y1, &b[BQH], r->P * qa, CSD_OVERWRITE));
		TRY(convert_w(r, qa, 1, lo->b_tile, 2 * lo->b_bh, H));
		TRY(csd_read_tokens_next(r->dev, r->g16, &gbh, r->P * qa));
		TRY(csd_forward_region(r->dev, &t1, &x1, &b[BQH], r->P * (tp - qa), CSD_OVERWRITE));
		TRY(convert_w(r, tp - qa, 1, t1.base, p1.base, H));
		TRY(csd_read_tokens_next(r->dev, r->g16 + (size_t)r->P * qa * H, &p1,
					 r->P * (tp - qa)));
	}
	for (int k = 0; k < 3; k++) {
		if (k || (!q0_done && !qa))
			TRY(csd_forward_region(r->dev, &th, &y1, &b[blk0[k]], BT, CSD_OVERWRITE));
		if (k == 1 && qa)
			for (int t = 0; t < BT; t++) {
				memcpy(h0 + (size_t)t * H, r->g16 + two_part_row(t, tp, qa, r->P) * H,
				       sizeof(uint16_t) * H);
			}
		if (k)
			unpack_group(r, qkv, k - 1, 0, h0 + (size_t)(k - 1) * bh, (size_t)H, BT, bias);
		if (k || !qa) {
			TRY(convert_w(r, tp, 1, lo->b_tile, 2 * lo->b_bh, H));
			TRY(csd_read_tokens_next(r->dev, h0 + (size_t)k * bh, &gbh, BT));
		}
	}
	/* q1 (carrying v0's read), then group 0's attention and its output down while k1
	 * computes */
	TRY(csd_forward_region(r->dev, &th, &y1, &b[BQH + 1], BT, CSD_OVERWRITE));
	unpack_group(r, qkv, 1, 0, h0 + bh, (size_t)H, BT, bias);
	unpack_group(r, qkv, 2, 0, h0 + 2 * bh, (size_t)H, BT, bias);
	/* alone: q1 and k1 packed one after the other (reads of whole rows), else side by side */
	int alone = att0_alone(r, tp, b), ks = alone ? H : C;
	uint32_t k1h = 2 * lo->b_bh + (uint32_t)(alone ? tp * H : H);
	const uint16_t pq[7] = { (uint16_t)H, (uint16_t)tp, (uint16_t)lo->b_tile, (uint16_t)H,
				 (uint16_t)(2 * lo->b_bh), (uint16_t)ks, 0 };
	/* alone: the rows contiguous in both, one instruction */
	TRY(alone ? convert_w(r, tp, 1, lo->b_tile, 2 * lo->b_bh, H)
		  : run(r, "vec_cvt", "cvt_bh", pq, 7));
	attention_group(r, atty, attp, qkv, scratch, B, T, 0);
	csd_region att0 = att_group(r, l, 0, 2), att1 = att_group(r, l, 1, 2);
	const uint16_t pk[7] = { (uint16_t)H, (uint16_t)tp, (uint16_t)lo->b_tile, (uint16_t)H,
				 (uint16_t)k1h, (uint16_t)ks, 0 };
	if (alone) {
		/* group 0's output on its own, q1's read during k1, k1's during v1 */
		csd_region rk = rg(CSD_MEM_BH, k1h, (uint32_t)H);
		TRY(csd_write_tokens(r->dev, &att0, r->g16, BT));
		TRY(csd_read_tokens_next(r->dev, hqk1, &gbh, BT));
		TRY(csd_forward_region(r->dev, &th, &y1, &b[BKH + 1], BT, CSD_OVERWRITE));
		TRY(convert_w(r, tp, 1, lo->b_tile, k1h, H));
		TRY(csd_read_tokens_next(r->dev, hqk1 + bh, &rk, BT));
		TRY(csd_forward_region(r->dev, &th, &y1, &b[BVH + 1], BT, CSD_OVERWRITE));
		unpack_group(r, qkv, 0, 1, hqk1, (size_t)H, BT, bias);
		unpack_group(r, qkv, 1, 1, hqk1 + bh, (size_t)H, BT, bias);
	} else {
		TRY(csd_write_tokens_next(r->dev, &att0, r->g16, BT));
		TRY(csd_forward_region(r->dev, &th, &y1, &b[BKH + 1], BT, CSD_OVERWRITE));
		TRY(run(r, "vec_cvt", "cvt_bh", pk, 7));
		/* q1 and k1 up while v1 computes; v1's read on its own, group 1's output down
		 * while proj's first column block (its majors: group 0's columns, the same
		 * chains as one call, majors in order) accumulates onto x, then the second
		 * column block; or, with proj_quarters, v1's read during the first column
		 * block, group 1's output by halves */
		TRY(csd_read_tokens_next(r->dev, hqk1, &qk1, BT));
		TRY(csd_forward_region(r->dev, &th, &y1, &b[BVH + 1], BT, CSD_OVERWRITE));
		unpack_group(r, qkv, 0, 1, hqk1, C1, BT, bias);
		unpack_group(r, qkv, 1, 1, hqk1 + H, C1, BT, bias);
	}
	TRY(convert_w(r, tp, 1, lo->b_tile, 2 * lo->b_bh, H));
	if (!proj_quarters(r)) {
		TRY(csd_read_tokens(r->dev, hv1, &gbh, BT));
		unpack_group(r, qkv, 2, 1, hv1, (size_t)H, BT, bias);
		attention_group(r, atty, attp, qkv, scratch, B, T, 1);
		TRY(csd_write_tokens_next(r->dev, &att1, r->g16 + bh, BT));
		TRY(csd_forward_region(r->dev, &x, &att0, &b[BPH], BT, CSD_ACCUMULATE));
		return csd_forward_region(r->dev, &x, &att1, &b[BPH + 1], BT, CSD_ACCUMULATE);
	}
	/* proj by column blocks (the same chains, majors in order): its first half (group 0's
	 * columns) carries v1's read; group 1's attention; its output down by halves of C / 4
	 * columns, the second while proj's columns of the first accumulate. The first also
	 * during proj's second quarter where that quarter computes at least as long as the
	 * write takes (tp cycles a nonzero against P tp (C / 8 + 2)); else on its own. */
	int Q = C / 4;
	csd_region aq[4];
	for (int q = 0; q < 4; q++)
		aq[q] = att_group(r, l, q, 4);
	int q1 = (uint64_t)b[BPQ + 1].nnz >= (uint64_t)r->P * (uint64_t)(Q / 2 + 2);
	TRY(csd_read_tokens_next(r->dev, hv1, &gbh, BT));
	if (q1)
		TRY(csd_forward_region(r->dev, &x, &aq[0], &b[BPQ], BT, CSD_ACCUMULATE));
	else
		TRY(csd_forward_region(r->dev, &x, &att0, &b[BPH], BT, CSD_ACCUMULATE));
	unpack_group(r, qkv, 2, 1, hv1, (size_t)H, BT, bias);
	attention_group(r, atty, attp, qkv, scratch, B, T, 1);
	int cut[MAXPARTS + 1], np = q1 ? 0 : att1_rows(r, BT, tp, b, cut);
	if (np) {
		/* group 1's output by parts of rows (packed by PE into h16), proj's second
		 * column block on each part's rows (the same chains a token) */
		const uint16_t *o1 = r->g16 + bh;
		for (int i = 0; i < np; i++) {
			int t = cut[i + 1] - cut[i];
			for (int q = 0; q < r->P; q++)
				memcpy(r->h16 + ((size_t)r->P * cut[i] + (size_t)q * t) * H,
				       o1 + ((size_t)q * tp + cut[i]) * H, sizeof(uint16_t) * H * t);
		}
		for (int i = 0; i < np; i++) {
			int t = cut[i + 1] - cut[i];
			csd_region ai = att1, xi = rg(CSD_MEM_B, lo->b_x + (uint32_t)(cut[i] * C), C);
			ai.base += (uint32_t)(cut[i] * H);
			if (!i)
				TRY(csd_write_tokens(r->dev, &ai, r->h16, r->P * t));
			if (i + 1 < np) {
				csd_region an = att1;
				an.base += (uint32_t)(cut[i + 1] * H);
				TRY(csd_write_tokens_next(r->dev, &an,
							  r->h16 + (size_t)r->P * cut[i + 1] * H,
							  r->P * (cut[i + 2] - cut[i + 1])));
			}
			TRY(csd_forward_region(r->dev, &xi, &ai, &b[BPH + 1], r->P * t,
					       CSD_ACCUMULATE));
		}
		return CS_OK;
	}
	for (int h = 0; h < 2; h++) {
		uint16_t *dst = r->h16 + (size_t)h * BT * Q;
		const uint16_t *src = r->g16 + bh + (size_t)h * Q;
		for (int t = 0; t < BT; t++)
			memcpy(dst + (size_t)t * Q, src + (size_t)t * H, sizeof(uint16_t) * Q);
	}
	if (!q1)
		TRY(csd_write_tokens(r->dev, &aq[2], r->h16, BT));
	for (int q = 2 - q1; q < 4; q++) {
		if (q < 3)
			TRY(csd_write_tokens_next(r->dev, &aq[q + 1], r->h16 + (size_t)(q - 1) * BT * Q,
						  BT));
		TRY(csd_forward_region(r->dev, &x, &aq[q], &b[BPQ + q], BT, CSD_ACCUMULATE));
	}
	return CS_OK;
}

/*
 * A transfer of every PE's tp rows of width bf16 (P width / 2 words a row; split_rows: C)
 * into A by parts of rows,
 * the first on its own, each other one while kernel w computes on the rows of the part
 * before it (emb_split, grad_split). A carried write goes between the kernel's majors, at
 * most the work the PEs have queued less the next wavelet's trip (docs/driver.md): per
 * major about min(8, its nonzeros) t cycles on t rows less 8 + Rows + Cols + 10, and no
 * more than the kernel's nnz t cycles. The parts: the first part's rows a that minimise
 * the rows not hidden (a, and what a part leaves of the next) plus ovh rows a part, each
 * next part the rows the one before hides (the rest in the last). fwd: w's majors are its
 * inputs (else its outputs). The parts' bounds into cut [0 .. n]; n parts (1: at once);
 * the rows not hidden (and ovh a part) into rows.
 */
static int split_rows_w(const train_resident *r, int tp, const csd_sparse *w, int fwd,
			double ovh, int width, int *cut, double *rows)
{
	csd_info info;
	cut[0] = 0;
	cut[1] = tp;
	*rows = tp;
	if (csd_get_info(r->dev, &info) || tp < 2)
		return 1;
	double row = (double)r->P * width / 2;
	double best_e = tp;
	int best_n = 1;
	for (int a = 1; a < tp; a++) {
		int cu[MAXPARTS + 1] = { 0, a }, n = 1, cur = a, left = tp - a;
		double e = a;
		while (left > 0) {
			double h = carry_words(r, w, fwd, cur) / row;
			int nxt = left;
			if (h < left && h >= 1 && n < MAXPARTS - 1)
				nxt = (int)h;
			else if (h < left)
				e += left - h;
			e += ovh;
			cu[n + 1] = cu[n] + nxt;
			n++;
			left -= nxt;
			cur = nxt;
		}
		if (e < best_e) {
			best_e = e;
			best_n = n;
			memcpy(cut, cu, sizeof(int) * (size_t)(n + 1));
		}
	}
	if (best_n == 1) {
		cut[0] = 0;
		cut[1] = tp;
	}
	*rows = best_e;
	return best_n;
}

static int split_rows(const train_resident *r, int tp, const csd_sparse *w, int fwd, double ovh,
		      int *cut)
{
	double e;
	return split_rows_w(r, tp, w, fwd, ovh, r->m->cfg.n_embd, cut, &e);
}

/* Rows [cut[i], cut[i + 1]) of every PE of x [P tp, C] (fp32) as bf16, part after part, each
 * packed by PE (PE q's rows of part i from dst + P cut[i] C + q (cut[i + 1] - cut[i]) C). */
static void pack_parts(uint16_t *dst, const float *x, const int *cut, int n, int P, int tp,
		       int C)
{
	for (int i = 0; i < n; i++) {
		int t = cut[i + 1] - cut[i];
		for (int q = 0; q < P; q++)
			for (int u = 0; u < t; u++)
				nm_bf16_from_f32_array(dst + ((size_t)P * cut[i] + (size_t)q * t + u) * C,
						       x + ((size_t)q * tp + cut[i] + u) * C, (size_t)C);
	}
}

/* The embeddings by parts of rows, each part's ln1 and q0 (block 0) while the next part goes
 * down (a write A takes beside the kernel's reads, pe; split_rows, a part's widening and
 * ln1 calls about a row of the write): the parts into cut, their count (1: at once; head
 * groups only, every row a token). */
static int emb_split(const train_resident *r, int BT, int tp, int *cut)
{
	cut[0] = 0;
	cut[1] = tp;
	if (!r->a_wport || !heads_split(r) || BT != r->P * tp)
		return 1;
	return split_rows(r, tp, &r->blk[BQH], 1, 1.0, cut);
}

/* The embeddings (fp32 [BT, C]) down as bf16 into A at e16 and widened into x (B) at xb:
 * all of them, or (emb_split) the first rows of every PE, the rest left to block 0's
 * forward (r->emb_np, r->emb_cut, r->emb16). */
static int embeddings_down(train_resident *r, const float *enc, int BT, int tp, uint32_t e16,
			   uint32_t xb)
{
	int C = r->m->cfg.n_embd, P = r->P, rc;
	int n = emb_split(r, BT, tp, r->emb_cut);
	csd_region e = rg(CSD_MEM_A, e16, C);
	if (n == 1) {
		nm_bf16_from_f32_array(r->h16, enc, (size_t)BT * C);
		TRY(csd_write_tokens(r->dev, &e, r->h16, BT));
		return widen(r, tp, e16, xb);
	}
	/* h16's last third: the parts stay there until block 0's q0 carried the last */
	uint16_t *pk = r->h16 + 2 * (size_t)BT * C;
	pack_parts(pk, enc, r->emb_cut, n, P, tp, C);
	TRY(csd_write_tokens(r->dev, &e, pk, P * r->emb_cut[1]));
	TRY(widen(r, r->emb_cut[1], e16, xb));
	r->emb_np = n;
	r->emb16 = pk;
	return CS_OK;
}

/* Block l's forward; out16 non-NULL (the last block, out_pieces): its output (x, bias
 * included) up as bf16 [BT, C] by pieces while fc2's last column block computes. */
static int block_forward(train_resident *r, int l, int B, int T, float *scratch,
			 uint16_t *out16)
{
	gpt *m = r->m;
	const struct tr_layout *lo = &r->lo;
	gpt_params *p = &m->params;
	gpt_acts *a = &m->acts;
	int C = m->cfg.n_embd, NH = m->cfg.n_head, BT = B * T, rc;
	int tp = (BT + r->P - 1) / r->P;
	size_t C1 = C, C3 = 3 * C1;
	const csd_sparse *b = r->blk + (size_t)l * NBLK;
	csd_region x = rg(CSD_MEM_B, lo->b_x, C), tile = rg(CSD_MEM_B, lo->b_tile, C);
	csd_region y1 = rg(CSD_MEM_A, st_y1(r, l), C), att = rg(CSD_MEM_A, st_att(r, l), C);
	csd_region y2 = rg(CSD_MEM_A, st_y2(r, l, 0), C), qbh = rg(CSD_MEM_BH, 2 * lo->b_bh, C);
	float *qkv = a->qkv + (size_t)l * BT * C3, *atty = a->atty + (size_t)l * BT * C1;
	float *attp = a->att + (size_t)l * B * NH * T * T;

	/* ln1; q, k, v tile by tile up as bf16, packed in Bh: q's streams up while k's row
	 * block computes, k's while v's (a read of B's other bank, csd_read_tokens_next) */
	int q0_done = 0;
	if (l == 0 && r->emb_np) {
		/* the embeddings' first part is down and widened (tr_forward): per part, ln1 and
		 * q0 of its rows while the next part goes down, then its widening (the same bits
		 * a token; ln1's scratch row past q0's rows in the output tile) */
		int n = r->emb_np, *cut = r->emb_cut, H = C / 2;
		r->emb_np = 0;
		for (int i = 0; i < n; i++) {
			int t = cut[i + 1] - cut[i];
			uint32_t oa = (uint32_t)cut[i] * (uint32_t)C;
			csd_region qo = rg(CSD_MEM_B, lo->b_tile + (uint32_t)cut[i] * (uint32_t)H,
					   (uint32_t)H);
			csd_region yi = rg(CSD_MEM_A, y1.base + oa, C);
			if (i)
				TRY(widen_rows(r, cut[i], t, y1.base, lo->b_x));
			TRY(ln_forward_rows(r, cut[i], t, i ? NULL : p->ln1w, p->ln1b, y1.base,
					    st_z1(r, 0), stash_r(r, 0, 0),
					    i ? lo->b_tile + (uint32_t)tp * (uint32_t)H : lo->b_lns));
			if (i + 1 < n) {
				csd_region en = rg(CSD_MEM_A, y1.base + (uint32_t)cut[i + 1] * (uint32_t)C,
						   C);
				TRY(csd_write_tokens_next(r->dev, &en,
							  r->emb16 + (size_t)r->P * cut[i + 1] * C,
							  r->P * (cut[i + 2] - cut[i + 1])));
			}
			TRY(csd_forward_region(r->dev, &qo, &yi, &b[BQH], r->P * t, CSD_OVERWRITE));
		}
		q0_done = 1;
	} else {
		TRY(ln_forward(r, tp, p->ln1w + l * C1, p->ln1b + l * C1, y1.base,
			       st_z1(r, l), stash_r(r, l, 0)));
	}
	if (heads_split(r)) {
		TRY(qkv_heads_forward(r, l, B, T, scratch, q0_done));
		goto mlp;
	}
	/* v in two halves (below) when its row block computes at least as long as its read
	 * takes (tp cycles a nonzero against P (tp C / 2 + P + 2), the read of every PE): then
	 * k's read still hides behind the first half and the first half's behind the second;
	 * at higher sparsity the halves hide nothing more and add a kernel */
	int vsplit = C % 2 == 0 &&
		     (uint64_t)b[BQKV + 2].nnz * (uint64_t)tp >=
			     (uint64_t)r->P * ((uint64_t)tp * (uint64_t)(C / 2) + (uint64_t)r->P + 2);
	for (int k = 0; k < 3 - vsplit; k++) {
		TRY(csd_forward_region(r->dev, &tile, &y1, &b[BQKV + k], BT, CSD_OVERWRITE));
		if (k)
			unpack_qkv(r, qkv, k - 1, BT, p->qkvb + l * C3 + (k - 1) * C1);
		TRY(convert(r, tp, 1, lo->b_tile, 2 * lo->b_bh));
		TRY((k < 2 ? csd_read_tokens_next : csd_read_tokens)(r->dev, r->h16, &qbh, BT));
	}
	if (vsplit) {
		/* v's row block in two halves of C / 2 outputs (the same chains): the first
		 * half's read streams while the second computes; the halves into h16's spare
		 * rows, then merged */
		int H = C / 2;
		csd_region th = rg(CSD_MEM_B, lo->b_tile, (uint32_t)H);
		csd_region vbh = rg(CSD_MEM_BH, 2 * lo->b_bh, (uint32_t)H);
		uint16_t *vh = r->h16 + (size_t)BT * C;
		for (int h = 0; h < 2; h++) {
			TRY(csd_forward_region(r->dev, &th, &y1, &b[BVH + h], BT, CSD_OVERWRITE));
			if (!h)
				unpack_qkv(r, qkv, 1, BT, p->qkvb + l * C3 + C1);
			TRY(convert_w(r, tp, 1, lo->b_tile, 2 * lo->b_bh, H));
			TRY((h ? csd_read_tokens : csd_read_tokens_next)(r->dev,
									 vh + (size_t)h * BT * H,
									 &vbh, BT));
		}
		for (int t = 0; t < BT; t++)
			for (int h = 0; h < 2; h++)
				memcpy(r->h16 + (size_t)t * C + h * H,
				       vh + (size_t)h * BT * H + (size_t)t * H, sizeof(uint16_t) * H);
	}
	unpack_qkv(r, qkv, 2, BT, p->qkvb + l * C3 + 2 * C1);
	/* attention on the host; its output down into the stash */
	attention_forward_pool(m->pool, atty, attp, qkv, scratch, B, T, C, NH);
	nm_bf16_from_f32_array(r->h16, atty, (size_t)BT * C);
	TRY(csd_write_tokens(r->dev, &att, r->h16, BT));
	TRY(csd_forward_region(r->dev, &x, &att, td_dev_sparse(r->td, l, GPT_ATTN_PROJ), BT,
			       CSD_ACCUMULATE));
mlp:
	TRY(bias_forward(r, tp, p->attprojb + l * C1, lo->b_x));
	/* ln2; the MLP a tile of C hidden features at a time */
	TRY(ln_forward(r, tp, p->ln2w + l * C1, p->ln2b + l * C1, y2.base,
		       st_z2(r, l), stash_r(r, l, 1)));
	for (int k = 0; k < 4; k++) {
		TRY(fc_tile(r, l, k, BT, 0));
		csd_region h = rg(CSD_MEM_A, tile_h(r, l, k), C);
		if (k < 3 || !out16)
			TRY(csd_forward_region(r->dev, &x, &h, &b[BFC2 + k], BT, CSD_ACCUMULATE));
	}
	if (!out16)
		return bias_forward(r, tp, p->fcprojb + l * C1, lo->b_x);
	/* by pieces of w features: fc2's rows of the piece (its last column block), its bias,
	 * packed into its own rows of Bh (w elements each) and read while the next piece
	 * computes */
	int w = C / NOR;
	uint32_t pw = (uint32_t)(tp * w);
	csd_region h3 = rg(CSD_MEM_A, tile_h(r, l, 3), C);
	uint16_t *pc = r->h16 + (size_t)BT * C; /* the pieces [NOR][BT, w] */
	TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_bias, p->fcprojb + l * C1, (uint32_t)C));
	for (int q = 0; q < NOR; q++) {
		uint32_t off = (uint32_t)(q * w), ob = 2 * lo->b_bh + (uint32_t)q * pw;
		csd_region xq = { CSD_MEM_B, lo->b_x + off, (uint32_t)C, (uint32_t)w };
		csd_region oq = rg(CSD_MEM_BH, ob, (uint32_t)w);
		TRY(csd_forward_region(r->dev, &xq, &h3, &b[BOR + q], BT, CSD_ACCUMULATE));
		const uint16_t pb[7] = { (uint16_t)w, (uint16_t)tp, (uint16_t)xq.base, (uint16_t)C,
					 (uint16_t)(lo->b_bias + off), 0, (uint16_t)lo->a_ones };
		TRY(run(r, "vec_cvt", "bias_fwd", pb, 7));
		const uint16_t pv[7] = { (uint16_t)w, (uint16_t)tp, (uint16_t)xq.base, (uint16_t)C,
					 (uint16_t)ob, (uint16_t)w, 0 };
		TRY(run(r, "vec_cvt", "cvt_bh", pv, 7));
		TRY((q < NOR - 1 ? csd_read_tokens_next : csd_read_tokens)(
			r->dev, pc + (size_t)q * BT * w, &oq, BT));
	}
	for (int t = 0; t < BT; t++)
		for (int q = 0; q < NOR; q++)
			memcpy(out16 + (size_t)t * C + (size_t)q * w, pc + ((size_t)q * BT + t) * w,
			       sizeof(uint16_t) * w);
	return CS_OK;
}

int tr_forward(train_resident *r, const int *inputs, const int *targets, int B, int T,
	       float *loss)
{
	gpt *m = r->m;
	const gpt_config *c = &m->cfg;
	int L = c->n_layer, C = c->n_embd, V = c->vocab_size, rc;
	r->err[0] = 0;
	if ((rc = gpt_set_batch(m, inputs, targets, B, T)))
		return rc;
	size_t BT = (size_t)B * T;
	gpt_acts *a = &m->acts;
	gpt_params *p = &m->params;
	int nth = cs_pool_threads(m->pool);
	size_t per = attention_scratch_floats(m->T, C, c->n_head);
	float *scratch = malloc(sizeof(float) * per * (size_t)(nth > 0 ? nth : 1));
	uint32_t tab[512];
	if (!scratch)
		return CS_ERR_NO_MEM;
	rc = build_blocks(r);
	if (rc) {
		snprintf(r->err, sizeof r->err, "resident step: cannot build the kernel blocks: %s",
			 cs_strerror(rc));
		goto out;
	}
	/* the constants: ones (A and B), the GELU tables, zeros (B: the widening's; nothing
	 * writes them but a ln_bwd that zeroes them again); then the embeddings down into x */
	for (int j = 0; j < C; j++) {
		r->h16[j] = 0x3f80;
		r->part[j] = 1.0f;
	}
	nm_gelu_table(tab, 0);
	nm_gelu_table(tab + 256, 1);
	encoder_forward_pool(m->pool, a->encoded, inputs, p->wte, p->wpe, B, T, C);
	csd_region x = rg(CSD_MEM_B, r->lo.b_x, C), e16 = rg(CSD_MEM_A, st_y1(r, 0), C);
	int tp = (int)((BT + (size_t)r->P - 1) / (size_t)r->P);
	uint64_t a0 = link_mark(r);
	if ((rc = csd_write_all(r->dev, CSD_MEM_A, r->lo.a_ones, r->h16, (uint32_t)C)) ||
	    (rc = csd_write_all(r->dev, CSD_MEM_B, r->lo.b_tg, tab, 512)) ||
	    (rc = csd_write_all(r->dev, CSD_MEM_B, r->lo.b_one, r->part, (uint32_t)C)) ||
	    (memset(r->part, 0, sizeof(float) * (size_t)C),
	     rc = csd_write_all(r->dev, CSD_MEM_B, r->lo.b_zero, r->part, (uint32_t)C)) ||
	    (rc = embeddings_down(r, a->encoded, (int)BT, tp, e16.base, x.base))) {
		fail_msg(r, "embeddings", 0);
		goto out;
	}
	link_note(r, a0, __LINE__);
	/* the last block's output up as bf16 (packed in Bh): by pieces as it computes
	 * (out_pieces), else after it */
	int pieces = out_pieces(r);
	for (int l = 0; l < L; l++)
		if ((rc = block_forward(r, l, B, T, scratch,
					pieces && l == L - 1 ? r->h16 : NULL))) {
			fail_msg(r, "forward", l);
			goto out;
		}
	float *res = a->residual3 + (size_t)(L - 1) * BT * C;
	csd_region xo = rg(CSD_MEM_BH, 2 * r->lo.b_bh, C);
	a0 = link_mark(r);
	if (!pieces && ((rc = convert(r, tp, 1, x.base, xo.base)) ||
			(rc = csd_read_tokens(r->dev, r->h16, &xo, (int)BT)))) {
		fail_msg(r, "output", L - 1);
		goto out;
	}
	link_note(r, a0, __LINE__);
	nm_bf16_to_f32_array(res, r->h16, BT * C);
	layernorm_forward_pool(m->pool, a->lnf, a->lnf_mean, a->lnf_rstd, res, p->lnfw, p->lnfb,
			       (int)BT, C);
	matmul_forward_pool(m->pool, a->logits, a->lnf, p->wte, NULL, (int)BT, C, V);
	softmax_crossentropy_forward_pool(m->pool, a->probs, targets ? a->losses : NULL,
					  a->logits, targets, (int)BT, V);
	if (targets) {
		double sum = 0.0;
		for (size_t i = 0; i < BT; i++)
			sum += a->losses[i];
		m->mean_loss = (float)(sum / BT);
		if (loss)
			*loss = m->mean_loss;
	} else {
		m->mean_loss = -1.0f;
	}
out:
	if (rc)
		csd_flush(r->dev); /* no read left pending into h16 after a failure */
	free(scratch);
	return rc;
}

/* Columns [c0, c0 + w) of row block k (q, k, v) of dqkv [BT, 3C] as bf16 into dst [BT, w]. */
static void qkv_grad16(uint16_t *dst, const float *dqkv, int BT, int C, int k, int c0, int w)
{
	for (int t = 0; t < BT; t++)
		for (int j = 0; j < w; j++)
			dst[(size_t)t * w + j] =
				nm_bf16_from_f32(dqkv[(size_t)t * 3 * C + k * C + c0 + j]);
}

/* Columns [c0, c0 + w) of gradient k (q, k, v) down as bf16 into region d's same columns,
 * left to the next kernel (csd_write_tokens_next); none for w 0. */
static int write_cols(train_resident *r, uint16_t *buf, const csd_region *d, int k, int c0,
		      int w, int BT)
{
	if (w <= 0)
		return CS_OK;
	csd_region dc = { d->mem, d->base + (uint32_t)c0, d->stride, (uint32_t)w };
	qkv_grad16(buf, r->m->dqkv, BT, r->m->cfg.n_embd, k, c0, w);
	return csd_write_tokens_next(r->dev, &dc, buf, BT);
}

/* The columns of a write of every PE's tp rows (P tp / 2 words a column) that kernel w (fwd:
 * its majors its inputs, else its outputs) hides (carry_words; f of it), even, at most C. */
static int carry_cols_f(const train_resident *r, int tp, const csd_sparse *w, int fwd, double f)
{
	int C = r->m->cfg.n_embd;
	double n = f * carry_words(r, w, fwd, tp) / ((double)r->P * tp / 2);
	return n >= C ? C : 2 * (int)(n / 2);
}

static int carry_cols(const train_resident *r, int tp, const csd_sparse *w, int fwd)
{
	return carry_cols_f(r, tp, w, fwd, 1.0);
}

/* What a head group's input gradient (a row half of k or v) carries of a gradient's write:
 * 7/8 of what the estimate says it hides (the rest on a wgrad: measured at 80 to 95%, the
 * estimate's full share left the halves 1.5 k cycles each exposed) */
#define HALF_CARRY 0.875

/* The attention output's gradient of head group 0 (heads_split) by two parts of rows, where
 * its read outlasts proj's first dW (about nnz tp cycles against P tp C / 4 words, every
 * row a token, bh_carried): the first part's rows a, the most whose read (P a C / 4 words)
 * proj's first input gradient on the other rows hides (nnz (tp - a) cycles; the first
 * packed in dln, B's other bank), the second part's read during the dW; 0: at once. */
static int d0_rows(const train_resident *r, int BT, int tp, const csd_sparse *w)
{
	double row = (double)r->P * r->m->cfg.n_embd / 4, nz = (double)w->nnz;
	if (!bh_carried(r) || r->lo.b_dln < r->bwords / 2 || BT != r->P * tp || tp < 2 ||
	    row * tp <= nz * tp)
		return 0;
	int a = (int)(nz * tp / (row + nz));
	return a < 1 ? 0 : a > tp - 1 ? tp - 1 : a;
}

/* Block l's backward; dx_out non-NULL (the first block): dx read into it at the end. */
static int block_backward(train_resident *r, int l, int B, int T, float *scratch,
			  float *dx_out)
{
	gpt *m = r->m;
	const struct tr_layout *lo = &r->lo;
	gpt_params *p = &m->params, *g = &m->grads;
	gpt_acts *a = &m->acts;
	int C = m->cfg.n_embd, NH = m->cfg.n_head, BT = B * T, rc;
	int tp = (BT + r->P - 1) / r->P;
	size_t C1 = C, C3 = 3 * C1, C4 = 4 * C1;
	const csd_sparse *b = r->blk + (size_t)l * NBLK;
	const csd_sparse *wp = td_dev_sparse(r->td, l, GPT_ATTN_PROJ);
	csd_region tile = rg(CSD_MEM_B, lo->b_tile, C), dln = rg(CSD_MEM_B, lo->b_dln, C);
	csd_region dya = rg(CSD_MEM_A, lo->a_dy, C), dp = rg(CSD_MEM_A, lo->a_dp, C);
	csd_region datt = rg(CSD_MEM_BH, 2 * lo->b_tile, C);
	const float *qkv = a->qkv + (size_t)l * BT * C3;
	const float *attp = a->att + (size_t)l * B * NH * T * T;
	uint16_t inv_c = nm_bf16_from_f32(1.0f / (float)C);

	/* the last block with the output's gradient by parts (grad_split): its first rows are
	 * in S; fc2's first input gradient (column block 0) on them, into the layernorm
	 * backward's dy rows (free until fc's first input gradient), while the rest goes down
	 * into S, then on the rest; then the whole gradient widened into x. Tile 0 then takes
	 * its input gradient from there (the same bits: S holds bf16(dx), as fc_cvt makes it) */
	int g0 = 0;
	if (r->grad_np) {
		int n = r->grad_np, *cut = r->grad_cut;
		r->grad_np = 0;
		for (int i = 0; i < n; i++) {
			uint32_t oa = (uint32_t)cut[i] * (uint32_t)C;
			csd_region gi = rg(CSD_MEM_A, lo->a_dy + oa, C);
			csd_region di = rg(CSD_MEM_B, lo->b_dln + oa, C);
			if (i + 1 < n) {
				csd_region gn = rg(CSD_MEM_A, lo->a_dy + (uint32_t)cut[i + 1] * (uint32_t)C,
						   C);
				TRY(csd_write_tokens_next(r->dev, &gn,
							  r->grad16 + (size_t)r->P * cut[i + 1] * C,
							  r->P * (cut[i + 2] - cut[i + 1])));
			}
			TRY(csd_backward_region(r->dev, &di, &gi, &b[BFC2], r->P * (cut[i + 1] - cut[i]),
						CSD_OVERWRITE));
		}
		TRY(widen(r, tp, lo->a_dy, lo->b_x));
		g0 = 1;
	}
	/* fc2: dy = dx as bf16 in A (small: into S, where h was, at each tile) and packed in
	 * Bh once for its four wgrads; its bias */
	TRY(dy_prepare(r, tp, g->fcprojb + l * C1, lo->small ? NONE : lo->a_dy));
	/* per hidden tile: (recomputed GELU,) fc2's dW and input gradient, GELU backward with
	 * fc's bias gradient and its dY packed in place in the tile, fc's dW and input
	 * gradient (small: y2 rebuilt after tile 0's GELU backward, where its GELU' was) */
	for (int k = 0; k < 4; k++) {
		if (lo->recompute || lo->small)
			TRY(fc_tile(r, l, k, BT, 1));
		TRY(wgrad(r, g->fcprojw + l * C1 * C4, (int)C4, 0, k * C, &b[BFC2 + k], BT,
			  tile_h(r, l, k), C));
		if (k == 0 && g0) {
			/* fc2's input gradient already in dln: GELU's backward there, fc's dY
			 * packed in place (its zeros in the output tile if need be); the
			 * rebuild's scratch the output tile */
			uint32_t zs = gelu_bwd_zeros(r, lo->b_dln, lo->b_tile);
			memset(r->part, 0, sizeof(float) * (size_t)C);
			TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_dbias, r->part, (uint32_t)C));
			TRY(run_fc_s(r, "fc_gelu_bwd", tp, lo->b_dln, lo->a_dp, tile_d(r, l, 0), 0,
				     lo->b_dbias, 2 * lo->b_dln, zs));
			TRY(gather(r, g->fcb + l * C4, lo->b_dbias));
			TRY(ln_rebuild(r, tp, p->ln2w + l * C1, p->ln2b + l * C1, st_z2(r, l),
				       st_y2(r, l, 1), lo->b_tile));
			TRY(wgrad_at(r, g->fcw + l * C4 * C1, C, 0, 0, &b[BFC], BT, st_y2(r, l, 1), C,
				     2 * lo->b_dln));
			TRY(csd_backward_region(r->dev, &dln, &dp, &b[BFC], BT, CSD_OVERWRITE));
			continue;
		}
		if (lo->small) {
			const uint16_t pd[13] = { (uint16_t)C, (uint16_t)tp, 0, 0, 0, (uint16_t)lo->b_x,
						  (uint16_t)lo->a_dy };
			TRY(run(r, "vec_fc", "fc_cvt", pd, 13));
		}
		TRY(csd_backward_region(r->dev, &tile, &dya, &b[BFC2 + k], BT, CSD_OVERWRITE));
		memset(r->part, 0, sizeof(float) * (size_t)C);
		TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_dbias, r->part, (uint32_t)C));
		TRY(run_fc_s(r, "fc_gelu_bwd", tp, lo->b_tile, lo->a_dp, tile_d(r, l, k), 0,
			     lo->b_dbias, 2 * lo->b_tile, gelu_bwd_zeros(r, lo->b_tile, lo->b_s)));
		TRY(gather(r, g->fcb + l * C4 + k * C1, lo->b_dbias));
		/* the rebuild's B scratch: dln, free until fc's first input gradient; gamma in
		 * the output tile's last row (its packed dY fills the first half) */
		if (lo->small && k == 0)
			TRY(ln_rebuild_g(r, tp, p->ln2w + l * C1, p->ln2b + l * C1, st_z2(r, l),
					 st_y2(r, l, 1), lo->b_dln,
					 tp > 1 ? lo->b_tile + lo->n - (uint32_t)C
						: lo->b_dln + (uint32_t)(tp - 1) * (uint32_t)C));
		TRY(wgrad_at(r, g->fcw + l * C4 * C1, C, k * C, 0, &b[BFC + k], BT,
			     st_y2(r, l, 1), C, 2 * lo->b_tile));
		TRY(csd_backward_region(r->dev, &dln, &dp, &b[BFC + k], BT,
					k ? CSD_ACCUMULATE : CSD_OVERWRITE));
	}
	/* ln2 backward into dx; its parameter gradients */
	const float *zeros = r->part; /* C zeros, written before gather overwrites part */
	memset(r->part, 0, sizeof(float) * (size_t)C);
	TRY(write_gamma(r, p->ln2w + l * C1));
	TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_lndg, zeros, (uint32_t)C));
	TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_lndb, zeros, (uint32_t)C));
	uint16_t pl[15] = { (uint16_t)C, (uint16_t)lo->a_g, (uint16_t)lo->a_ones,
			    (uint16_t)lo->b_s, (uint16_t)lo->b_t, (uint16_t)lo->a_am, inv_c,
			    (uint16_t)lo->b_lnz, (uint16_t)lo->b_dln,
			    (uint16_t)st_z2(r, l), (uint16_t)stash_r(r, l, 1),
			    (uint16_t)lo->b_x, (uint16_t)lo->b_lndg, (uint16_t)lo->b_lndb,
			    (uint16_t)tp };
	TRY(run(r, "vec_ln_bwd", "ln_bwd", pl, 15));
	TRY(gather_ln(r, g->ln2w + l * C1, g->ln2b + l * C1));
	/* small: y1 rebuilt where y2 was (the pre tiles are dead) */
	if (lo->small)
		TRY(ln_rebuild(r, tp, p->ln1w + l * C1, p->ln1b + l * C1, st_z1(r, l), st_y1(r, l),
			       lo->b_tile));
	/* proj: dy = dx again (its bias gradient's partials stream up while proj's input
	 * gradient computes in the output tile, the other bank); the attention output's
	 * gradient up as bf16, packed in place in the output tile: it streams up while proj's
	 * dW computes (B's other bank) */
	TRY(dy_prepare(r, tp, NULL, lo->a_dy));
	int H = C / 2, split = heads_split(r);
	/* dq, dk and dv go down into A once each: dq and dv into a free A tile (one of the dead
	 * pre tiles, small, or the dpre tile), dk into S once proj's input gradient read it */
	csd_region dyq[2] = { dya, rg(CSD_MEM_A, lo->small ? tile_pre(r, l, 1) : lo->a_dp, C) };
	if (split) {
		/* by proj's column blocks (the heads' groups; the same chains), each group's
		 * input gradient then its dW: group 0's gradient into the output tile, up packed
		 * while proj's first dW computes; dq's group 0 down while group 1's gradient
		 * computes into dln (the other bank), which streams up during proj's second dW.
		 * The reads ride on wgrads, the writes on input gradients (a write a wgrad
		 * carries goes only between a batch's majors and slows it) */
		csd_region th = rg(CSD_MEM_B, lo->b_tile, (uint32_t)H);
		csd_region dh = rg(CSD_MEM_B, lo->b_dln, (uint32_t)H);
		uint32_t e1 = 2 * lo->b_tile + (uint32_t)(tp * H);
		csd_region d0 = rg(CSD_MEM_BH, 2 * lo->b_tile, (uint32_t)H);
		csd_region d1 = rg(CSD_MEM_BH, e1, (uint32_t)H);
		float *gw = g->attprojw + l * C1 * C1;
		int ra = d0_rows(r, BT, tp, &b[BPH]);
		if (ra) {
			/* group 0's gradient by two parts of rows: the first's up (packed in dln,
			 * the other bank) while the second computes, the second's during proj's
			 * first dW (h16: the parts one after the other, packed by PE) */
			csd_region t1 = rg(CSD_MEM_B, lo->b_tile + (uint32_t)(ra * H), (uint32_t)H);
			csd_region y1 = rg(CSD_MEM_A, lo->a_dy + (uint32_t)(ra * C), C);
			csd_region p0 = rg(CSD_MEM_BH, 2 * lo->b_dln, (uint32_t)H);
			TRY(csd_backward_region(r->dev, &th, &dya, &b[BPH], r->P * ra, CSD_OVERWRITE));
			gather_sum(r, g->attprojb + l * C1);
			TRY(convert_w(r, ra, 1, lo->b_tile, 2 * lo->b_dln, H));
			TRY(csd_read_tokens_next(r->dev, r->h16, &p0, r->P * ra));
			TRY(csd_backward_region(r->dev, &t1, &y1, &b[BPH], r->P * (tp - ra),
						CSD_OVERWRITE));
			TRY(convert_w(r, tp - ra, 1, t1.base, 2 * lo->b_tile, H));
			TRY(csd_read_tokens_next(r->dev, r->h16 + (size_t)r->P * ra * H, &d0,
						 r->P * (tp - ra)));
		} else {
			TRY(csd_backward_region(r->dev, &th, &dya, &b[BPH], BT, CSD_OVERWRITE));
			gather_sum(r, g->attprojb + l * C1);
			TRY(convert_w(r, tp, 1, lo->b_tile, 2 * lo->b_tile, H));
			TRY(csd_read_tokens_next(r->dev, r->h16, &d0, BT));
		}
		csd_region ag0 = att_group(r, l, 0, 2), ag1 = att_group(r, l, 1, 2);
		TRY(wgrad_xs(r, gw, C, 0, 0, &b[BPH], BT, ag0.base, ag0.stride, C, 2 * lo->b_bh));
		for (int h = 0; h < 2; h++) {
			if (h) {
				TRY(convert_w(r, tp, 1, lo->b_dln, e1, H));
				TRY(csd_read_tokens_next(r->dev, r->h16 + (size_t)BT * H, &d1, BT));
				TRY(wgrad_xs(r, gw, C, 0, H, &b[BPH + 1], BT, ag1.base, ag1.stride, C,
					     2 * lo->b_bh));
			}
			for (int t = 0; t < BT; t++) {
				size_t at = h || !ra ? (size_t)t : two_part_row(t, tp, ra, r->P);
				nm_bf16_to_f32_array(m->datty + (size_t)t * C + h * H,
						     r->h16 + (size_t)h * BT * H + at * H, (size_t)H);
			}
			attention_backward_group(r, qkv, attp, scratch, B, T, h);
			if (h)
				break;
			csd_region q0 = { CSD_MEM_A, dyq[1].base, C, (uint32_t)H };
			qkv_grad16(r->g16, m->dqkv, BT, C, 0, 0, H);
			TRY(csd_write_tokens_next(r->dev, &q0, r->g16, BT));
			TRY(csd_backward_region(r->dev, &dh, &dya, &b[BPH + 1], BT, CSD_OVERWRITE));
		}
	} else {
		TRY(csd_backward_region(r->dev, &tile, &dya, wp, BT, CSD_OVERWRITE));
		gather_sum(r, g->attprojb + l * C1);
		TRY(convert(r, tp, 1, lo->b_tile, 2 * lo->b_tile));
		TRY(csd_read_tokens_next(r->dev, r->h16, &datt, BT));
		TRY(wgrad(r, g->attprojw + l * C1 * C1, C, 0, 0, wp, BT, st_att(r, l), C));
		nm_bf16_to_f32_array(m->datty, r->h16, (size_t)BT * C);
	}
	/* attention backward and qkv's bias gradient on the host; dq, dk, dv down as bf16 */
	if (!split)
		attention_backward_pool(m->pool, m->dqkv, m->datty, qkv, attp, scratch, B, T, C,
					NH);
	float *dqb = g->qkvb + l * C3;
	for (int t = 0; t < BT; t++)
		for (size_t j = 0; j < C3; j++)
			dqb[j] += m->dqkv[(size_t)t * C3 + j];
	/* by row block (q, k, v): its gradient down into A once, widened into the free output
	 * tile (against B rows of ones and of zeros) and packed into Bh for
	 * its dW (one cvt_fbh); its input gradient accumulated (the same chains as one call
	 * over 3C). k's and v's gradients go down while the previous row block's input
	 * gradient computes (a write A takes beside the kernel's reads on pe,
	 * csd_write_tokens_next), so they alternate between S and a free A tile: one of the
	 * dead pre tiles (small) or the dpre tile */
	uint16_t pw[9] = { (uint16_t)C, (uint16_t)tp, (uint16_t)lo->a_dy, (uint16_t)C,
			   (uint16_t)lo->b_tile, 0, (uint16_t)lo->b_one, (uint16_t)lo->b_zero,
			   (uint16_t)(2 * lo->b_bh) };
	if (split) {
		/* by head groups (dq's group 0 went down during proj's second input gradient):
		 * q's input gradient by row halves (the same chains), the first carrying dq's
		 * group 1 down, the second dk's first kc columns; q widened and packed
		 * (cvt_fbh), its dW carrying dk's next columns; k's input gradient by row
		 * halves, the first (group 0's columns) carrying dk's last kh columns (group 1's),
		 * the second dv's first vk columns; k's dW dv's next ones, v's first row half
		 * its last vh (group 1's). kc: what q's half hides (carry_cols); kh, vk, vh:
		 * HALF_CARRY of what theirs hide; the rest on the wgrads (whose batches hide
		 * less and which a write slows); without a carried write (pe=lite) k's and v's
		 * input gradients whole */
		const csd_region *dq = &dyq[1], *dk = &dyq[0], *dv = &dyq[1];
		csd_region q[2], kg[2], vg[2];
		for (int h = 0; h < 2; h++) {
			q[h] = (csd_region){ CSD_MEM_A, dq->base + (uint32_t)(h * H), C, (uint32_t)H };
			kg[h] = (csd_region){ CSD_MEM_A, dk->base + (uint32_t)(h * H), C, (uint32_t)H };
			vg[h] = (csd_region){ CSD_MEM_A, dv->base + (uint32_t)(h * H), C, (uint32_t)H };
		}
		uint16_t *h0 = r->h16, *h1 = r->h16 + (size_t)BT * C;
		qkv_grad16(h0, m->dqkv, BT, C, 0, H, H);
		TRY(csd_write_tokens_next(r->dev, &q[1], h0, BT));
		TRY(csd_backward_region(r->dev, &dln, &q[0], &b[BQH], BT, CSD_OVERWRITE));
		/* hv: k's and v's input gradients by row halves where a kernel carries a write
		 * (pe); else (the writes on their own) whole */
		int hv = r->a_wport, kc = carry_cols(r, tp, &b[BQH + 1], 0);
		int kh = carry_cols_f(r, tp, &b[BKH], 0, HALF_CARRY);
		int vh = carry_cols_f(r, tp, &b[BVH], 0, HALF_CARRY);
		int vk = carry_cols_f(r, tp, &b[BKH + 1], 0, HALF_CARRY);
		kh = kh > H ? H : kh > C - kc ? C - kc : kh;
		vh = vh > H ? H : vh;
		vk = vk > C - vh ? C - vh : vk;
		if (!hv) {
			kh = vh = 0;
			vk = carry_cols(r, tp, &b[BQKV + 1], 0);
		}
		TRY(write_cols(r, h1, dk, 1, 0, kc, BT));
		TRY(csd_backward_region(r->dev, &dln, &q[1], &b[BQH + 1], BT, CSD_ACCUMULATE));
		pw[2] = (uint16_t)dq->base;
		TRY(run(r, "vec_cvt", "cvt_fbh", pw, 9));
		TRY(write_cols(r, h0, dk, 1, kc, C - kh - kc, BT));
		TRY(wgrad(r, g->qkvw + l * C3 * C1, C, 0, 0, &b[BQKV], BT, st_y1(r, l), C));
		TRY(write_cols(r, h1, dk, 1, C - kh, kh, BT));
		if (hv)
			TRY(csd_backward_region(r->dev, &dln, &kg[0], &b[BKH], BT, CSD_ACCUMULATE));
		pw[2] = (uint16_t)dk->base;
		TRY(run(r, "vec_cvt", "cvt_fbh", pw, 9));
		TRY(write_cols(r, h0, dv, 2, 0, vk, BT));
		TRY(csd_backward_region(r->dev, &dln, hv ? &kg[1] : dk, &b[hv ? BKH + 1 : BQKV + 1],
					BT, CSD_ACCUMULATE));
		TRY(write_cols(r, h1, dv, 2, vk, C - vh - vk, BT));
		TRY(wgrad(r, g->qkvw + l * C3 * C1, C, C, 0, &b[BQKV + 1], BT, st_y1(r, l), C));
		TRY(write_cols(r, h0, dv, 2, C - vh, vh, BT));
		if (hv)
			TRY(csd_backward_region(r->dev, &dln, &vg[0], &b[BVH], BT, CSD_ACCUMULATE));
		pw[2] = (uint16_t)dv->base;
		TRY(run(r, "vec_cvt", "cvt_fbh", pw, 9));
		if (!dx_out)
			TRY(wgrad(r, g->qkvw + l * C3 * C1, C, 2 * C, 0, &b[BQKV + 2], BT, st_y1(r, l),
				  C));
		TRY(csd_backward_region(r->dev, &dln, hv ? &vg[1] : dv, &b[hv ? BVH + 1 : BQKV + 2],
					BT, CSD_ACCUMULATE));
	}
	for (int k = 0; !split && k < 3; k++) {
		const csd_region *dyk = &dyq[k & 1];
		if (k == 0) {
			qkv_grad16(r->h16, m->dqkv, BT, C, 0, 0, C);
			TRY(csd_write_tokens(r->dev, dyk, r->h16, BT));
		}
		pw[2] = (uint16_t)dyk->base;
		TRY(run(r, "vec_cvt", "cvt_fbh", pw, 9));
		if (k < 2 || !dx_out)
			TRY(wgrad(r, g->qkvw + l * C3 * C1, C, k * C, 0, &b[BQKV + k], BT,
				  st_y1(r, l), C));
		if (k < 2) {
			qkv_grad16(r->h16, m->dqkv, BT, C, k + 1, 0, C);
			TRY(csd_write_tokens_next(r->dev, &dyq[(k + 1) & 1], r->h16, BT));
		}
		TRY(csd_backward_region(r->dev, &dln, dyk, &b[BQKV + k], BT,
					k ? CSD_ACCUMULATE : CSD_OVERWRITE));
	}
	/* ln1 backward into dx */
	memset(r->part, 0, sizeof(float) * (size_t)C);
	TRY(write_gamma(r, p->ln1w + l * C1));
	TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_lndg, zeros, (uint32_t)C));
	TRY(csd_write_all(r->dev, CSD_MEM_B, lo->b_lndb, zeros, (uint32_t)C));
	pl[9] = (uint16_t)st_z1(r, l);
	pl[10] = (uint16_t)stash_r(r, l, 0);
	TRY(run(r, "vec_ln_bwd", "ln_bwd", pl, 15));
	TRY(gather_ln(r, g->ln1w + l * C1, g->ln1b + l * C1));
	if (!dx_out)
		return CS_OK;
	/* the first block: dx (the embeddings' gradient) packed as bf16 into the output tile
	 * (B's first bank) streams up while v's dW, kept for last (its dy packed in Bh, y1 in
	 * A: ln1's backward leaves both), computes */
	csd_region xg = rg(CSD_MEM_BH, 2 * lo->b_tile, C);
	TRY(convert(r, tp, 1, lo->b_x, xg.base));
	TRY(csd_read_tokens_next(r->dev, r->h16, &xg, BT));
	TRY(wgrad(r, g->qkvw + l * C3 * C1, C, 2 * C, 0, &b[BQKV + 2], BT, st_y1(r, l), C));
	nm_bf16_to_f32_array(dx_out, r->h16, (size_t)BT * C);
	return CS_OK;
}

/* The output's gradient by parts of rows, the last block's first fc2 input gradient on each
 * part while the next goes down (pe, the 7 C stash: S holds the gradient until fc tile 0's
 * GELU; split_rows, a part's kernel call about a fifth of a row of the write): the parts
 * into cut, their count (1: at once). */
static int grad_split(const train_resident *r, int BT, int tp, int *cut)
{
	cut[0] = 0;
	cut[1] = tp;
	if (!r->a_wport || !r->lo.small || BT != r->P * tp)
		return 1;
	int L = r->m->cfg.n_layer;
	return split_rows(r, tp, &r->blk[(size_t)(L - 1) * NBLK + BFC2], 0, 0.2, cut);
}

/* The output's gradient (fp32 [BT, C]) down as bf16 into A at a_dy and widened into x: all
 * of it, or (grad_split) the first rows of every PE, the rest left to the last block's
 * backward (r->grad_np, r->grad_cut, r->grad16), which widens it. */
static int grad_down(train_resident *r, const float *d, int BT, int tp)
{
	int C = r->m->cfg.n_embd, P = r->P, rc;
	int n = grad_split(r, BT, tp, r->grad_cut);
	csd_region e = rg(CSD_MEM_A, r->lo.a_dy, C);
	if (n == 1) {
		nm_bf16_from_f32_array(r->h16, d, (size_t)BT * C);
		TRY(csd_write_tokens(r->dev, &e, r->h16, BT));
		return widen(r, tp, e.base, r->lo.b_x);
	}
	pack_parts(r->h16, d, r->grad_cut, n, P, tp, C);
	TRY(csd_write_tokens(r->dev, &e, r->h16, P * r->grad_cut[1]));
	r->grad_np = n;
	r->grad16 = r->h16;
	return CS_OK;
}

int tr_backward(train_resident *r, float loss_scale)
{
	gpt *m = r->m;
	const gpt_config *c = &m->cfg;
	int L = c->n_layer, C = c->n_embd, V = c->vocab_size, B = m->cur_B, T = m->cur_T, rc;
	r->err[0] = 0;
	if (m->mean_loss < 0.0f)
		return CS_ERR_INVALID;
	size_t BT = (size_t)B * T;
	gpt_params *p = &m->params, *g = &m->grads;
	gpt_acts *a = &m->acts;
	int nth = cs_pool_threads(m->pool);
	size_t per = attention_scratch_floats(m->T, C, c->n_head);
	float *scratch = malloc(sizeof(float) * per * (size_t)(nth > 0 ? nth : 1));
	if (!scratch)
		return CS_ERR_NO_MEM;
	/* the head on the host, its gradient down into x */
	softmax_crossentropy_backward_pool(m->pool, m->dlogits, a->probs, m->targets,
					   loss_scale / (float)BT, (int)BT, V);
	memset(m->dln, 0, sizeof(float) * BT * C);
	matmul_backward_pool(m->pool, m->dln, g->wte, NULL, m->dlogits, a->lnf, p->wte, (int)BT,
			     C, V);
	memset(m->dresidual, 0, sizeof(float) * BT * C);
	const float *res = a->residual3 + (size_t)(L - 1) * BT * C;
	layernorm_backward_pool(m->pool, m->dresidual, g->lnfw, g->lnfb, m->dln, res, p->lnfw,
				a->lnf_mean, a->lnf_rstd, (int)BT, C);
	/* down as bf16 into A, widened into x (or by parts: grad_down) */
	int tp = (int)((BT + (size_t)r->P - 1) / (size_t)r->P);
	uint64_t a0 = link_mark(r);
	if ((rc = grad_down(r, m->dresidual, (int)BT, tp))) {
		fail_msg(r, "output gradient", L - 1);
		goto out;
	}
	link_note(r, a0, __LINE__);
	/* block 0 leaves the embeddings' gradient in dresidual */
	for (int l = L - 1; l >= 0; l--) {
		if ((rc = block_backward(r, l, B, T, scratch, l ? NULL : m->dresidual))) {
			fail_msg(r, "backward", l);
			goto out;
		}
		if (m->grads_ready && (rc = m->grads_ready(m->grads_ready_ctx, l)))
			goto out;
	}
	encoder_backward_pool(m->pool, g->wte, g->wpe, m->dresidual, m->inputs, B, T, C);
	if (m->grads_ready)
		rc = m->grads_ready(m->grads_ready_ctx, -1);
out:
	if (rc)
		csd_flush(r->dev); /* no read left pending into h16 after a failure */
	free(scratch);
	return rc;
}
