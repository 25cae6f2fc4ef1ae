/* eng.c - the native sparse engine's front end: dispatch, layout, threads (see eng.h). */
#include "engine/eng.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "common/numerics.h"
#include "engine/eng_impl.h"

/* ---- ISA dispatch ---------------------------------------------------------------------- */

static const char *const isa_names[ENG_ISA_N] = { "portable", "avx2", "avx512" };
static atomic_int cur_isa = -1;

int eng_isa_best(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return ENG_ISA_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return ENG_ISA_AVX2;
#endif
	return ENG_ISA_PORTABLE;
}

const char *eng_isa_name(int isa)
{
	return isa >= 0 && isa < ENG_ISA_N ? isa_names[isa] : "unknown";
}

int eng_isa_parse(const char *s)
{
	for (int i = 0; i < ENG_ISA_N; i++)
		if (!strcmp(s, isa_names[i]))
			return i;
	return -1;
}

int eng_isa_set(int isa)
{
	if (isa < 0 || isa >= ENG_ISA_N)
		return CS_ERR_INVALID;
	if (isa > eng_isa_best())
		return CS_ERR_NOT_SUPPORTED;
	atomic_store(&cur_isa, isa);
	return CS_OK;
}

int eng_isa(void)
{
	int isa = atomic_load(&cur_isa);
	if (isa >= 0)
		return isa;
	isa = eng_isa_best();
	const char *env = getenv("CSHOST_ISA");
	if (env && *env) {
		int want = eng_isa_parse(env);
		/* an unknown or unsupported request keeps the best (eng_check_env reports it) */
		if (want >= 0 && want <= isa)
			isa = want;
	}
	atomic_store(&cur_isa, isa);
	return isa;
}

const eng_kern *eng_kern_cur(void)
{
	static const eng_kern *const k[ENG_ISA_N] = { &eng_kern_portable, &eng_kern_avx2,
						      &eng_kern_avx512 };
	return k[eng_isa()];
}

static const eng_kern *kern(void)
{
	return eng_kern_cur();
}

/* ---- layout ---------------------------------------------------------------------------- */

static size_t vsize(int vtype)
{
	return vtype == ENG_BF16 ? sizeof(uint16_t) : sizeof(float);
}

static void put_val(void *val, int vtype, int64_t k, float w)
{
	if (vtype == ENG_BF16)
		((uint16_t *)val)[k] = nm_bf16_from_f32(w);
	else
		((float *)val)[k] = w;
}

static int reserve(eng_spmat *s, int64_t nnz, int vtype)
{
	if (nnz <= s->cap && s->val && vtype == s->vtype)
		return CS_OK;
	int64_t cap = nnz > 0 ? nnz : 1;
	free(s->col);
	free(s->val);
	free(s->row);
	free(s->cval);
	free(s->csr_pos);
	s->col = malloc(sizeof(int32_t) * (size_t)cap);
	s->val = malloc(vsize(vtype) * (size_t)cap);
	s->row = malloc(sizeof(int32_t) * (size_t)cap);
	s->cval = malloc(vsize(vtype) * (size_t)cap);
	s->csr_pos = malloc(sizeof(int32_t) * (size_t)cap);
	s->cap = cap;
	if (!s->col || !s->val || !s->row || !s->cval || !s->csr_pos) {
		s->cap = 0;
		return CS_ERR_NO_MEM;
	}
	return CS_OK;
}

int eng_spmat_build(eng_spmat *s, const float *w, const uint8_t *mask, int n_out, int n_in,
		    int vtype)
{
	if (n_out < 1 || n_in < 1 || (vtype != ENG_F32 && vtype != ENG_BF16))
		return CS_ERR_INVALID;
	if (s->n_out != n_out || s->n_in != n_in || !s->row_ptr) {
		free(s->row_ptr);
		free(s->col_ptr);
		s->row_ptr = malloc(sizeof(int64_t) * ((size_t)n_out + 1));
		s->col_ptr = malloc(sizeof(int64_t) * ((size_t)n_in + 1));
		if (!s->row_ptr || !s->col_ptr)
			goto out_nomem;
	}
	s->n_out = n_out;
	s->n_in = n_in;
	/* count per row and per column */
	memset(s->col_ptr, 0, sizeof(int64_t) * ((size_t)n_in + 1));
	int64_t nnz = 0;
	s->row_ptr[0] = 0;
	for (int i = 0; i < n_out; i++) {
		const uint8_t *mr = mask ? mask + (size_t)i * n_in : NULL;
		for (int j = 0; j < n_in; j++)
			if (!mr || mr[j]) {
				nnz++;
				s->col_ptr[j + 1]++;
			}
		s->row_ptr[i + 1] = nnz;
	}
	for (int j = 0; j < n_in; j++)
		s->col_ptr[j + 1] += s->col_ptr[j];
	if (nnz > INT32_MAX) { /* csr_pos is 32-bit */
		eng_spmat_free(s);
		return CS_ERR_INVALID;
	}
	if (reserve(s, nnz, vtype))
		goto out_nomem;
	s->vtype = vtype;
	s->nnz = nnz;
	/* fill CSR in row order; CSC by scattering (rows come in ascending order) */
	int64_t *next = malloc(sizeof(int64_t) * (size_t)n_in);
	if (!next)
		goto out_nomem;
	memcpy(next, s->col_ptr, sizeof(int64_t) * (size_t)n_in);
	int64_t k = 0;
	for (int i = 0; i < n_out; i++) {
		const uint8_t *mr = mask ? mask + (size_t)i * n_in : NULL;
		const float *wr = w + (size_t)i * n_in;
		for (int j = 0; j < n_in; j++) {
			if (mr && !mr[j])
				continue;
			s->col[k] = j;
			put_val(s->val, vtype, k, wr[j]);
			int64_t c = next[j]++;
			s->row[c] = i;
			s->csr_pos[c] = (int32_t)k;
			put_val(s->cval, vtype, c, wr[j]);
			k++;
		}
	}
	free(next);
	return CS_OK;
out_nomem:
	eng_spmat_free(s);
	return CS_ERR_NO_MEM;
}

struct upd_job {
	eng_spmat *s;
	const float *w;
};

/* CSR values gathered from the dense rows (rows split) */
static void upd_part(void *arg, int tid, int nth)
{
	struct upd_job *j = arg;
	eng_spmat *s = j->s;
	size_t lo, hi;
	cs_split((size_t)s->n_out, tid, nth, &lo, &hi);
	const int32_t *col = s->col;
	for (size_t i = lo; i < hi; i++) {
		const float *wr = j->w + i * (size_t)s->n_in;
		int64_t k0 = s->row_ptr[i], k1 = s->row_ptr[i + 1];
		if (s->vtype == ENG_BF16) {
			uint16_t *v = s->val;
			for (int64_t k = k0; k < k1; k++)
				v[k] = nm_bf16_from_f32(wr[col[k]]);
		} else {
			float *v = s->val;
			for (int64_t k = k0; k < k1; k++)
				v[k] = wr[col[k]];
		}
	}
}

/* CSC values from the fresh CSR values (entries split): each is gathered from its CSR
 * place (csr_pos), so the writes run in order and no entry waits on another. */
static void upd_csc_one(eng_spmat *s, int tid, int nth)
{
	size_t lo, hi;
	cs_split((size_t)s->nnz, tid, nth, &lo, &hi);
	const int32_t *pos = s->csr_pos;
	if (s->vtype == ENG_BF16) {
		const uint16_t *v = s->val;
		uint16_t *cv = s->cval;
		for (size_t q = lo; q < hi; q++)
			cv[q] = v[pos[q]];
	} else {
		const float *v = s->val;
		float *cv = s->cval;
		for (size_t q = lo; q < hi; q++)
			cv[q] = v[pos[q]];
	}
}

static void upd_csc_part(void *arg, int tid, int nth)
{
	struct upd_job *j = arg;
	upd_csc_one(j->s, tid, nth);
}

struct upd_many_job {
	eng_spmat *const *s;
	int n;
};

/* each thread its share of every matrix's entries */
static void upd_csc_many_part(void *arg, int tid, int nth)
{
	struct upd_many_job *j = arg;
	for (int i = 0; i < j->n; i++)
		upd_csc_one(j->s[i], tid, nth);
}

void eng_spmat_update_values(eng_spmat *s, const float *w, cs_pool *pool)
{
	struct upd_job j = { s, w };
	cs_pool_run(pool, upd_part, &j);
	cs_pool_run(pool, upd_csc_part, &j);
}

void eng_spmat_update_csc(eng_spmat *s, cs_pool *pool)
{
	struct upd_job j = { s, NULL };
	cs_pool_run(pool, upd_csc_part, &j);
}

void eng_spmat_update_csc_many(eng_spmat *const *s, int n, cs_pool *pool)
{
	if (n < 1)
		return;
	struct upd_many_job j = { s, n };
	cs_pool_run(pool, upd_csc_many_part, &j);
}

void eng_spmat_free(eng_spmat *s)
{
	free(s->row_ptr);
	free(s->col);
	free(s->val);
	free(s->col_ptr);
	free(s->row);
	free(s->cval);
	free(s->csr_pos);
	memset(s, 0, sizeof *s);
}

int eng_spmat_equal(const eng_spmat *a, const eng_spmat *b)
{
	if (a->n_out != b->n_out || a->n_in != b->n_in || a->nnz != b->nnz ||
	    a->vtype != b->vtype)
		return 0;
	size_t n = (size_t)a->nnz, vs = vsize(a->vtype);
	return !memcmp(a->row_ptr, b->row_ptr, sizeof(int64_t) * ((size_t)a->n_out + 1)) &&
	       !memcmp(a->col_ptr, b->col_ptr, sizeof(int64_t) * ((size_t)a->n_in + 1)) &&
	       !memcmp(a->col, b->col, sizeof(int32_t) * n) &&
	       !memcmp(a->row, b->row, sizeof(int32_t) * n) &&
	       !memcmp(a->csr_pos, b->csr_pos, sizeof(int32_t) * n) &&
	       !memcmp(a->val, b->val, vs * n) && !memcmp(a->cval, b->cval, vs * n);
}

size_t eng_spmat_bytes(const eng_spmat *s)
{
	size_t per = 3 * sizeof(int32_t) + 2 * vsize(s->vtype);
	return (size_t)s->cap * per + sizeof(int64_t) * ((size_t)s->n_out + s->n_in + 2);
}

/* ---- transposes ------------------------------------------------------------------------ */

struct tr_job {
	const eng_kern *k;
	float *dst;
	const float *src;
	int R, C, ld;
};

/* Thread tid's share of n in whole 16-element tiles: [*lo, *hi). */
static void split16(size_t n, int tid, int nth, size_t *lo, size_t *hi)
{
	size_t tiles = (n + 15) / 16;
	cs_split(tiles, tid, nth, lo, hi);
	*lo *= 16;
	*hi = *hi * 16 < n ? *hi * 16 : n;
}

/* dst [C][ld] <- src [R][C]; this thread's rows of dst */
static void tr_in_part(void *arg, int tid, int nth)
{
	struct tr_job *j = arg;
	size_t lo, hi;
	split16((size_t)j->C, tid, nth, &lo, &hi);
	if (lo >= hi)
		return;
	j->k->transpose(j->dst + lo * j->ld, (size_t)j->ld, j->src + lo, (size_t)j->C, j->R,
			(int)(hi - lo));
	for (size_t c = lo; c < hi; c++)
		memset(j->dst + c * j->ld + j->R, 0, sizeof(float) * (size_t)(j->ld - j->R));
}

/* dst [R][C] <- src [C][ld]; this thread's rows of dst */
static void tr_out_part(void *arg, int tid, int nth)
{
	struct tr_job *j = arg;
	size_t lo, hi;
	split16((size_t)j->R, tid, nth, &lo, &hi);
	if (lo >= hi)
		return;
	j->k->transpose(j->dst + lo * j->C, (size_t)j->C, j->src + lo, (size_t)j->ld, j->C,
			(int)(hi - lo));
}

void eng_transpose_block(float *dst, size_t ldd, const float *src, size_t lds, int rows,
			 int cols)
{
	kern()->transpose(dst, ldd, src, lds, rows, cols);
}

void eng_transpose_in(cs_pool *pool, float *dst, const float *src, int R, int C, int ld)
{
	struct tr_job j = { kern(), dst, src, R, C, ld };
	cs_pool_run(pool, tr_in_part, &j);
}

void eng_transpose_out(cs_pool *pool, float *dst, const float *src, int R, int C, int ld)
{
	struct tr_job j = { kern(), dst, src, R, C, ld };
	cs_pool_run(pool, tr_out_part, &j);
}

/* ---- kernels --------------------------------------------------------------------------- */

/* First row r with ptr[r] >= target (rows [0, n]). */
static int row_at(const int64_t *ptr, int n, int64_t target)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (ptr[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Rows [*r0, *r1) of thread tid: equal shares of the nonzeros, whole rows. */
static void split_rows(const int64_t *ptr, int n, int tid, int nth, int *r0, int *r1)
{
	int64_t nnz = ptr[n];
	*r0 = tid == 0 ? 0 : row_at(ptr, n, nnz * tid / nth);
	*r1 = tid == nth - 1 ? n : row_at(ptr, n, nnz * (tid + 1) / nth);
	if (nnz == 0) { /* no work but the zero rows: split them evenly */
		*r0 = (int)((int64_t)n * tid / nth);
		*r1 = (int)((int64_t)n * (tid + 1) / nth);
	}
}

struct k_job {
	const eng_kern *k;
	float *out;
	const eng_spmat *w;
	const float *x, *dy;
	int ld, tl;
};

/* A token-major output's rows are made ENG_YROWS at a time: their block (16 KB) stays in L1
 * until it is transposed into the output. */
#define ENG_YROWS 64
/* An input of more columns than this is taken in chunks of ENG_KC columns, ENG_YROWS rows
 * at a time: the rows' sums go back to their (L1-resident) block between chunks, and the
 * entries of a chunk read 64 KB of the packed input block, not all of it (256 KB at 1024
 * columns): 10-25 % faster at 80-90 % on Zen 4 (docs/measurements.md). */
#define ENG_KC 256
/* A token-minor input is packed when its columns are read this many times a block on
 * average (entries per column): below, the copy of the cold strided block (256 KB at 1024
 * columns) costs more than the loads it speeds up, and the rows read the input in place,
 * whole, with a prefetch. A token-major input is transposed just before, and always packed
 * (the block is still in L1/L2). */
#define ENG_PACK_MIN 16

struct eng_slot {
	float *yb;     /* [ENG_YROWS][ENG_TB] result block of a token-major output */
	size_t yb_cap; /* floats */
	float *xp;     /* [ncols][ENG_TB] the block of the input, packed */
	size_t xp_cap; /* floats */
	int64_t cur[ENG_YROWS]; /* each row's next entry (column chunks) */
};

struct eng_ctx {
	cs_pool *pool;
	int n;
	struct eng_slot *slot; /* [n], one per pool thread */
	float *xt;             /* [ncols][ld] token-minor input when the caller keeps none */
	size_t xt_cap;         /* floats */
};

int eng_ctx_create(eng_ctx **out, cs_pool *pool)
{
	*out = NULL;
	eng_ctx *e = calloc(1, sizeof *e);
	if (!e)
		return CS_ERR_NO_MEM;
	e->pool = pool;
	e->n = cs_pool_threads(pool);
	e->slot = calloc((size_t)e->n, sizeof *e->slot);
	if (!e->slot) {
		free(e);
		return CS_ERR_NO_MEM;
	}
	*out = e;
	return CS_OK;
}

void eng_ctx_free(eng_ctx *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->n; i++) {
		free(e->slot[i].yb);
		free(e->slot[i].xp);
	}
	free(e->slot);
	free(e->xt);
	free(e);
}

cs_pool *eng_ctx_pool(const eng_ctx *e)
{
	return e->pool;
}

struct tm_job {
	const eng_kern *k;
	eng_ctx *e;
	float *y;
	const float *x;        /* token-major input, or NULL when xt holds it already */
	float *xt;             /* token-minor input [ncols][ld] */
	const int64_t *ptr;
	const int32_t *idx;
	const void *val;
	int bf16, nrows, ncols, T;
	int y_tm;              /* output token-minor: ENG_TM_ROWS or ENG_TM_BLOCKED */
	int x_blk;             /* input in blocks (ENG_TM_BLOCKED) */
	const float *mul;      /* token-minor output times mul (in y's layout), or NULL */
	const float *res;      /* token-major output: y = res + (sum + bias), or NULL */
	const float *bias;
	atomic_int failed;
};

/* Token blocks of ENG_TB are split between the threads. For each of its blocks a thread
 * transposes the block of a token-major input into the token-minor copy (its own tokens of
 * every column, zero past the last token: no other thread reads them), packs the block into
 * its own contiguous copy (columns ENG_TB floats apart, not ld: on Zen 4 the rows over it,
 * with no prefetch, run 15-25 % faster than over the strided copy with one; a blocked input
 * is that copy already), then runs the rows over it, in column chunks when the input is
 * wide; a token-major output's block is transposed back from the thread's result block. */
static void spmm_part(void *arg, int tid, int nth)
{
	struct tm_job *j = arg;
	struct eng_slot *sl = &j->e->slot[tid];
	size_t nblk = ((size_t)j->T + ENG_TB - 1) / ENG_TB, b0, b1;
	cs_split(nblk, tid, nth, &b0, &b1);
	if (b0 >= b1)
		return;
	size_t ld = (size_t)eng_ld(j->T);
	size_t need = (size_t)ENG_YROWS * ENG_TB;
	if (!j->y_tm && sl->yb_cap < need) {
		free(sl->yb);
		sl->yb = aligned_alloc(64, sizeof(float) * need);
		sl->yb_cap = sl->yb ? need : 0;
	}
	/* a blocked input is read as its packed copy would be, in place */
	const int pack = !j->x_blk &&
			 (j->x || j->ptr[j->nrows] >= (int64_t)ENG_PACK_MIN * j->ncols);
	need = (size_t)j->ncols * ENG_TB;
	if (pack && sl->xp_cap < need) {
		free(sl->xp);
		sl->xp = aligned_alloc(64, sizeof(float) * need);
		sl->xp_cap = sl->xp ? need : 0;
	}
	if ((!j->y_tm && !sl->yb) || (pack && !sl->xp)) {
		atomic_store(&j->failed, 1);
		return;
	}
	const int nch = pack || j->x_blk ? (j->ncols + ENG_KC - 1) / ENG_KC : 1;
	const int y_blk = j->y_tm == ENG_TM_BLOCKED;
	/* a token-minor output needs no result block: all rows at once unless chunked */
	const int grp = j->y_tm && nch == 1 ? j->nrows : ENG_YROWS;
	size_t tpad = ((size_t)j->T + ENG_TPAD - 1) / ENG_TPAD * ENG_TPAD;
	for (size_t b = b0; b < b1; b++) {
		int t0 = (int)b * ENG_TB;
		int nt = j->T - t0 < ENG_TB ? j->T - t0 : ENG_TB;
		int tl = (int)(tpad - (size_t)t0) < ENG_TB ? (int)(tpad - (size_t)t0) : ENG_TB;
		if (j->x) { /* the block's tokens of the input, just before they are read */
			j->k->transpose(j->xt + t0, ld, j->x + (size_t)t0 * j->ncols,
					(size_t)j->ncols, nt, j->ncols);
			if (t0 + nt == j->T) /* the padding tokens, zero */
				for (int c = 0; c < j->ncols; c++)
					memset(j->xt + (size_t)c * ld + j->T, 0,
					       sizeof(float) * (ld - (size_t)j->T));
		}
		const float *xb = j->xt + t0;
		size_t xld = ld;
		if (j->x_blk) {
			xb = j->xt + b * (size_t)j->ncols * ENG_TB;
			xld = ENG_TB;
		} else if (pack) {
			j->k->pack(sl->xp, xb, ld, j->ncols, tl);
			xb = sl->xp;
			xld = ENG_TB;
		}
		for (int r0 = 0; r0 < j->nrows; r0 += grp) {
			int nr = j->nrows - r0 < grp ? j->nrows - r0 : grp;
			size_t yo = y_blk ? (b * (size_t)j->nrows + (size_t)r0) * ENG_TB
					  : (size_t)r0 * ld + (size_t)t0;
			float *o = j->y_tm ? j->y + yo : sl->yb;
			size_t lo = j->y_tm && !y_blk ? ld : ENG_TB;
			const float *mul = j->mul ? j->mul + yo : NULL;
			if (nch == 1) {
				j->k->spmm_rows(o, lo, mul, j->ptr + r0, NULL, 0, 0, j->idx, j->val,
						j->bf16, xb, xld, tl, nr);
			} else {
				for (int r = 0; r < nr; r++)
					sl->cur[r] = j->ptr[r0 + r];
				for (int c = 0; c < nch; c++) {
					int last = c == nch - 1;
					int32_t cend = last ? j->ncols : (c + 1) * ENG_KC;
					j->k->spmm_rows(o, lo, last ? mul : NULL, j->ptr + r0, sl->cur,
							cend, c > 0, j->idx, j->val, j->bf16, xb,
							xld, tl, nr);
				}
			}
			if (j->res && y_blk) /* the rows' bias and residual add, from L1/L2 */
				j->k->res_bias_blk(o, j->res + yo, j->bias + r0, nr, tl);
			else if (j->bias && j->y_tm) /* the bias alone, real tokens only */
				j->k->bias_tm(o, lo, j->bias + r0, nr, nt);
			if (!j->y_tm) {
				size_t at = (size_t)t0 * j->nrows + r0;
				j->k->transpose(j->y + at, (size_t)j->nrows, sl->yb, ENG_TB, nr,
						nt);
				if (j->res)
					j->k->res_bias(j->y + at, j->res + at, j->bias + r0,
						       (size_t)j->nrows, nt, nr);
			}
		}
		if (y_blk && nt < ENG_TB) /* the last block's padding tokens, zero */
			for (int r = 0; r < j->nrows; r++)
				memset(j->y + (b * (size_t)j->nrows + (size_t)r) * ENG_TB + nt, 0,
				       sizeof(float) * (size_t)(ENG_TB - nt));
		else if (j->y_tm && !y_blk && t0 + nt == j->T) /* the padding tokens, zero */
			for (int r = 0; r < j->nrows; r++)
				memset(j->y + (size_t)r * ld + j->T, 0,
				       sizeof(float) * (ld - (size_t)j->T));
	}
}

static int spmm_run(eng_ctx *e, float *y, int y_tm, const float *mul, const float *res,
		    const float *bias, const eng_spmat *w, int by_col, const float *x, int x_tm,
		    int T, float *xt)
{
	int ncols = by_col ? w->n_out : w->n_in;
	if (T < 1 || y_tm < 0 || y_tm > ENG_TM_BLOCKED || x_tm < 0 || x_tm > ENG_TM_BLOCKED)
		return CS_ERR_INVALID;
	if (!x_tm && !xt) {
		size_t need = (size_t)ncols * (size_t)eng_ld(T);
		if (e->xt_cap < need) {
			free(e->xt);
			e->xt = aligned_alloc(64, sizeof(float) * need);
			e->xt_cap = e->xt ? need : 0;
			if (!e->xt)
				return CS_ERR_NO_MEM;
		}
		xt = e->xt;
	}
	struct tm_job j = {
		.k = kern(),
		.e = e,
		.y = y,
		.x = x_tm ? NULL : x,
		.xt = x_tm ? (float *)x : xt,
		.ptr = by_col ? w->col_ptr : w->row_ptr,
		.idx = by_col ? w->row : w->col,
		.val = by_col ? w->cval : w->val,
		.bf16 = w->vtype == ENG_BF16,
		.nrows = by_col ? w->n_in : w->n_out,
		.ncols = ncols,
		.T = T,
		.y_tm = y_tm,
		.x_blk = x_tm == ENG_TM_BLOCKED,
		.mul = mul,
		.res = res,
		.bias = bias,
	};
	cs_pool_run(e->pool, spmm_part, &j);
	return atomic_load(&j.failed) ? CS_ERR_NO_MEM : CS_OK;
}

int eng_spmm_ex(eng_ctx *e, float *y, int y_tm, const eng_spmat *w, int by_col, const float *x,
		int x_tm, int T, float *xt)
{
	return spmm_run(e, y, y_tm, NULL, NULL, NULL, w, by_col, x, x_tm, T, xt);
}

int eng_spmm_mul(eng_ctx *e, float *y, int y_tm, const float *mul, const eng_spmat *w,
		 int by_col, const float *x, int x_tm, int T, float *xt)
{
	if (!mul || !y_tm)
		return CS_ERR_INVALID;
	return spmm_run(e, y, y_tm, mul, NULL, NULL, w, by_col, x, x_tm, T, xt);
}

int eng_spmm_res(eng_ctx *e, float *y, const float *res, const float *bias, const eng_spmat *w,
		 const float *x, int x_tm, int T, float *xt)
{
	return eng_spmm_res_ex(e, y, 0, res, bias, w, x, x_tm, T, xt);
}

int eng_spmm_bias(eng_ctx *e, float *y, int y_tm, const float *bias, const eng_spmat *w,
		  const float *x, int x_tm, int T)
{
	if (!bias || !y_tm)
		return CS_ERR_INVALID;
	return spmm_run(e, y, y_tm, NULL, NULL, bias, w, 0, x, x_tm, T, NULL);
}

int eng_spmm_res_ex(eng_ctx *e, float *y, int y_tm, const float *res, const float *bias,
		    const eng_spmat *w, const float *x, int x_tm, int T, float *xt)
{
	if (!res || !bias || res == y || y_tm == ENG_TM_ROWS)
		return CS_ERR_INVALID;
	return spmm_run(e, y, y_tm, NULL, res, bias, w, 0, x, x_tm, T, xt);
}

int eng_spmm(eng_ctx *e, float *y, const eng_spmat *w, int by_col, const float *x, int T,
	     float *xt)
{
	return eng_spmm_ex(e, y, 0, w, by_col, x, 0, T, xt);
}

struct sd_job {
	struct k_job k;
	float *db, *lanes;
	size_t dyr, dys, xr, xs; /* row and 64-token segment strides of dy and x */
};

static void sddmm_part(void *arg, int tid, int nth)
{
	struct sd_job *j = arg;
	const eng_spmat *w = j->k.w;
	int r0, r1;
	split_rows(w->row_ptr, w->n_out, tid, nth, &r0, &r1);
	if (r0 >= r1)
		return;
	j->k.k->sddmm(j->k.out, w->row_ptr, w->col, j->k.dy, j->dyr, j->dys, j->k.x, j->xr,
		      j->xs, j->k.tl, r0, r1, j->lanes);
	if (!j->db)
		return;
	for (int r = r0; r < r1; r++) { /* the lanes in order, as the model's row sums */
		const float *l = j->lanes + (size_t)r * 16;
		float s = 0.0f;
		for (int v = 0; v < 16; v++)
			s += l[v];
		j->db[r] += s;
	}
}

void eng_sddmm(cs_pool *pool, float *dw, const eng_spmat *w, const float *dy, const float *x,
	       int T)
{
	eng_sddmm_ex(pool, dw, NULL, NULL, w, dy, ENG_TM_ROWS, x, ENG_TM_ROWS, T);
}

void eng_sddmm_db(cs_pool *pool, float *dw, float *db, float *lanes, const eng_spmat *w,
		  const float *dy, const float *x, int T)
{
	eng_sddmm_ex(pool, dw, db, lanes, w, dy, ENG_TM_ROWS, x, ENG_TM_ROWS, T);
}

void eng_sddmm_ex(cs_pool *pool, float *dw, float *db, float *lanes, const eng_spmat *w,
		  const float *dy, int dy_tm, const float *x, int x_tm, int T)
{
	size_t ld = (size_t)eng_ld(T);
	struct sd_job j = { .k = { .k = kern(), .out = dw, .w = w, .x = x, .dy = dy,
				   .ld = (int)ld,
				   .tl = (T + ENG_TPAD - 1) / ENG_TPAD * ENG_TPAD },
			    .db = db, .lanes = db ? lanes : NULL };
	/* a row's tokens: ld floats a row, or ENG_TB a row and the row's next 64 tokens a
	 * block (all the rows' ENG_TB tokens) further */
	j.dyr = dy_tm == ENG_TM_BLOCKED ? ENG_TB : ld;
	j.dys = dy_tm == ENG_TM_BLOCKED ? (size_t)w->n_out * ENG_TB : ENG_TB;
	j.xr = x_tm == ENG_TM_BLOCKED ? ENG_TB : ld;
	j.xs = x_tm == ENG_TM_BLOCKED ? (size_t)w->n_in * ENG_TB : ENG_TB;
	cs_pool_run(pool, sddmm_part, &j);
}

/* The weight gradient column by column: the kernel over the CSC pattern (col_ptr, row) with
 * the operands' roles exchanged, x's row of an input feature in registers and the rows of dy
 * at the column's nonzeros streamed; each entry is the same sum in the same order (the
 * products commute exactly), written at its CSR place. The bias gradient is its own pass
 * over dy's rows, in eng_sddmm_db's order. */
struct sdc_job {
	struct sd_job s;
	float *scratch;
};

/* db[r] += the sum of row r of dy (a row's tokens dyr floats from the last row's, its next 64
 * tokens dys further) over tl tokens: 16 lane-wise sums in token order from +0, then the
 * lanes in order (eng_sddmm_db's order). Element-wise adds only: every clone the same bits. */
static __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void
db_rows(float *db, const float *dy, size_t dyr, size_t dys, int tl, size_t r0, size_t r1)
{
	typedef float v16 __attribute__((vector_size(64)));
	for (size_t r = r0; r < r1; r++) {
		v16 l = { 0 };
		const float *d = dy + r * dyr;
		for (int t = 0; t < tl; t += 16) {
			v16 p;
			memcpy(&p, d + (size_t)(t / ENG_TB) * dys + t % ENG_TB, sizeof p);
			l += p;
		}
		float s = 0.0f;
		for (int v = 0; v < 16; v++)
			s += l[v];
		db[r] += s;
	}
}

static void sddmm_csc_part(void *arg, int tid, int nth)
{
	struct sdc_job *j = arg;
	const eng_spmat *w = j->s.k.w;
	int c0, c1;
	split_rows(w->col_ptr, w->n_in, tid, nth, &c0, &c1);
	if (c0 < c1) {
		j->s.k.k->sddmm(j->scratch, w->col_ptr, w->row, j->s.k.x, j->s.xr, j->s.xs,
				j->s.k.dy, j->s.dyr, j->s.dys, j->s.k.tl, c0, c1, NULL);
		for (int64_t q = w->col_ptr[c0]; q < w->col_ptr[c1]; q++)
			j->s.k.out[w->csr_pos[q]] = j->scratch[q];
	}
	if (!j->s.db)
		return;
	size_t lo, hi;
	cs_split((size_t)w->n_out, tid, nth, &lo, &hi);
	db_rows(j->s.db, j->s.k.dy, j->s.dyr, j->s.dys, j->s.k.tl, lo, hi);
}

void eng_sddmm_csc_ex(cs_pool *pool, float *dw, float *db, float *scratch, const eng_spmat *w,
		      const float *dy, int dy_tm, const float *x, int x_tm, int T)
{
	size_t ld = (size_t)eng_ld(T);
	struct sdc_job j = { .s = { .k = { .k = kern(), .out = dw, .w = w, .x = x, .dy = dy,
					   .ld = (int)ld,
					   .tl = (T + ENG_TPAD - 1) / ENG_TPAD * ENG_TPAD },
				    .db = db },
			     .scratch = scratch };
	j.s.dyr = dy_tm == ENG_TM_BLOCKED ? ENG_TB : ld;
	j.s.dys = dy_tm == ENG_TM_BLOCKED ? (size_t)w->n_out * ENG_TB : ENG_TB;
	j.s.xr = x_tm == ENG_TM_BLOCKED ? ENG_TB : ld;
	j.s.xs = x_tm == ENG_TM_BLOCKED ? (size_t)w->n_in * ENG_TB : ENG_TB;
	cs_pool_run(pool, sddmm_csc_part, &j);
}

void eng_tm_unblock(float *dst, const float *src, int rows, int T)
{
	size_t ld = (size_t)eng_ld(T), nblk = ((size_t)T + ENG_TB - 1) / ENG_TB;
	for (size_t r = 0; r < (size_t)rows; r++) {
		float *d = dst + r * ld;
		for (size_t b = 0; b < nblk; b++) {
			size_t t0 = b * ENG_TB, nt = (size_t)T - t0 < ENG_TB ? (size_t)T - t0 : ENG_TB;
			memcpy(d + t0, src + (b * (size_t)rows + r) * ENG_TB, sizeof(float) * nt);
		}
		memset(d + T, 0, sizeof(float) * (ld - (size_t)T));
	}
}
