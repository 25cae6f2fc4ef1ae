/*
 * test_eng.c - host/engine: each kernel (forward and backward sparse products, the sampled
 * weight gradient) against the dense masked product in double, on random shapes and the
 * edge cases (empty rows and columns, one nonzero, an all-zero mask, token counts that are
 * not a multiple of the vector width), with every ISA path this CPU has forced in turn and
 * 1, 2 and 3 threads; the layout against its definition, bf16 values, the transposes.
 *
 * The bound: a sum of n fp32 products, each rounded once or twice, differs from the exact
 * sum by at most (n + 2) * 2^-24 * sum |terms| (Higham's gamma_n); the check uses that bound
 * with the terms' magnitudes computed in double, so it fails on a wrong index or a dropped
 * term and never on rounding.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "common/numerics.h"
#include "engine/eng.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static float rnd_f(void)
{
	return (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

enum mask_kind { M_RANDOM, M_EMPTY_ROWS_COLS, M_ONE, M_NONE, M_FULL };

typedef struct problem {
	int n_out, n_in, T, ld;
	float *w;       /* [n_out, n_in], zero outside the mask */
	uint8_t *mask;  /* [n_out, n_in] */
	float *x;       /* [T, n_in] */
	float *dy;      /* [T, n_out] */
} problem;

static void make_problem(problem *p, int n_out, int n_in, int T, double density, int kind)
{
	p->n_out = n_out;
	p->n_in = n_in;
	p->T = T;
	p->ld = eng_ld(T);
	p->w = calloc((size_t)n_out * n_in, sizeof(float));
	p->mask = calloc((size_t)n_out * n_in, 1);
	p->x = malloc(sizeof(float) * (size_t)T * n_in);
	p->dy = malloc(sizeof(float) * (size_t)T * n_out);
	assert_non_null(p->w);
	assert_non_null(p->mask);
	assert_non_null(p->x);
	assert_non_null(p->dy);
	for (int i = 0; i < n_out; i++)
		for (int j = 0; j < n_in; j++) {
			int keep;
			switch (kind) {
			case M_EMPTY_ROWS_COLS:
				keep = i % 3 != 1 && j % 4 != 2 &&
				       (double)(rnd() >> 11) / 9007199254740992.0 < density;
				break;
			case M_ONE:
				keep = i == n_out / 2 && j == n_in / 3;
				break;
			case M_NONE:
				keep = 0;
				break;
			case M_FULL:
				keep = 1;
				break;
			default:
				keep = (double)(rnd() >> 11) / 9007199254740992.0 < density;
			}
			p->mask[(size_t)i * n_in + j] = (uint8_t)keep;
			/* values outside the mask are nonzero: the layout must drop them */
			p->w[(size_t)i * n_in + j] = rnd_f();
		}
	for (size_t k = 0; k < (size_t)T * n_in; k++)
		p->x[k] = rnd_f();
	for (size_t k = 0; k < (size_t)T * n_out; k++)
		p->dy[k] = rnd_f();
}

static void free_problem(problem *p)
{
	free(p->w);
	free(p->mask);
	free(p->x);
	free(p->dy);
}

static double wval(const problem *p, int i, int j, int bf16)
{
	float w = p->w[(size_t)i * p->n_in + j];
	return bf16 ? (double)nm_bf16_to_f32(nm_bf16_from_f32(w)) : (double)w;
}

static void assert_close(double got, double ref, double sum_abs, int n, const char *what,
			 int a, int b)
{
	double bound = (n + 2) * ldexp(1.0, -24) * sum_abs + 1e-30;
	if (!(fabs(got - ref) <= bound)) {
		fprintf(stderr, "%s [%d, %d]: got %.9g want %.9g (bound %.3g)\n", what, a, b, got,
			ref, bound);
		fail();
	}
}

/* src [rows][ld] (ENG_TM_ROWS) in the blocked layout [nblk][rows][ENG_TB], padding zero */
static float *to_blocked(const float *src, int rows, int T, int ld)
{
	size_t n = eng_blk_size(rows, T), nblk = ((size_t)T + ENG_TB - 1) / ENG_TB;
	float *d = malloc(sizeof(float) * n);
	assert_non_null(d);
	for (size_t b = 0; b < nblk; b++)
		for (size_t r = 0; r < (size_t)rows; r++)
			for (size_t t = 0; t < ENG_TB; t++) {
				size_t u = b * ENG_TB + t;
				d[(b * rows + r) * ENG_TB + t] =
					u < (size_t)T ? src[r * (size_t)ld + u] : 0.0f;
			}
	return d;
}

/* Run the three kernels on p with the current ISA and pool; check against double. */
static void check_problem(const problem *p, cs_pool *pool, int vtype)
{
	int bf16 = vtype == ENG_BF16, ld = p->ld, T = p->T;
	eng_spmat s = { 0 };
	assert_int_equal(eng_spmat_build(&s, p->w, p->mask, p->n_out, p->n_in, vtype), CS_OK);
	float *xt = malloc(sizeof(float) * (size_t)p->n_in * ld);
	float *dyt = malloc(sizeof(float) * (size_t)p->n_out * ld);
	float *y = malloc(sizeof(float) * (size_t)T * p->n_out);
	float *dx = malloc(sizeof(float) * (size_t)T * p->n_in);
	float *dw = malloc(sizeof(float) * ((size_t)s.nnz + 1));
	assert_true(xt && dyt && y && dx && dw);
	eng_ctx *e;
	assert_int_equal(eng_ctx_create(&e, pool), CS_OK);
	/* poison the outputs: the kernels must write every element */
	memset(y, 0x7f, sizeof(float) * (size_t)T * p->n_out);
	memset(dx, 0x7f, sizeof(float) * (size_t)T * p->n_in);
	memset(dw, 0x7f, sizeof(float) * ((size_t)s.nnz + 1));
	/* the products hand out their token-minor inputs: equal to the plain transposes */
	float *xt2 = malloc(sizeof(float) * (size_t)p->n_in * ld);
	float *dyt2 = malloc(sizeof(float) * (size_t)p->n_out * ld);
	assert_true(xt2 && dyt2);
	memset(xt2, 0x7f, sizeof(float) * (size_t)p->n_in * ld);
	memset(dyt2, 0x7f, sizeof(float) * (size_t)p->n_out * ld);
	assert_int_equal(eng_spmm(e, y, &s, 0, p->x, T, xt2), CS_OK);
	assert_int_equal(eng_spmm(e, dx, &s, 1, p->dy, T, dyt2), CS_OK);
	eng_transpose_in(pool, xt, p->x, T, p->n_in, ld);
	eng_transpose_in(pool, dyt, p->dy, T, p->n_out, ld);
	assert_memory_equal(xt, xt2, sizeof(float) * (size_t)p->n_in * ld);
	assert_memory_equal(dyt, dyt2, sizeof(float) * (size_t)p->n_out * ld);
	free(xt2);
	free(dyt2);
	eng_sddmm(pool, dw, &s, dyt, xt, T);
	/* the weight gradient with the bias gradient: the same dw, and db += each dy row's sum
	 * in 16 lane-wise sums then the lanes, in order (the bits of the model's row sums),
	 * rows with no nonzeros included */
	{
		size_t no = (size_t)p->n_out;
		float *dw2 = malloc(sizeof(float) * ((size_t)s.nnz + 1));
		float *db = malloc(sizeof(float) * no), *lanes = malloc(sizeof(float) * 16 * no);
		assert_true(dw2 && db && lanes);
		memset(dw2, 0x7f, sizeof(float) * ((size_t)s.nnz + 1));
		memset(lanes, 0x7f, sizeof(float) * 16 * no);
		for (size_t i = 0; i < no; i++)
			db[i] = rnd_f();
		float *db0 = malloc(sizeof(float) * no);
		assert_true(db0);
		memcpy(db0, db, sizeof(float) * no);
		eng_sddmm_db(pool, dw2, db, lanes, &s, dyt, xt, T);
		assert_memory_equal(dw2, dw, sizeof(float) * (size_t)s.nnz);
		for (size_t i = 0; i < no; i++) {
			float l[16] = { 0 }, tot = 0.0f;
			double ref = 0, sa = 0;
			for (int t = 0; t < T; t++) {
				l[t % 16] += dyt[i * ld + t];
				ref += dyt[i * ld + t];
				sa += fabs(dyt[i * ld + t]);
			}
			for (int v = 0; v < 16; v++)
				tot += l[v];
			float want = db0[i] + tot;
			assert_memory_equal(&db[i], &want, sizeof want);
			assert_close(db[i], db0[i] + ref, sa + fabs(db0[i]), T + 1, "bias", (int)i, 0);
		}
		/* db NULL: eng_sddmm, lanes untouched */
		memset(dw2, 0x7f, sizeof(float) * ((size_t)s.nnz + 1));
		memset(lanes, 0x7f, sizeof(float) * 16 * no);
		eng_sddmm_db(pool, dw2, NULL, lanes, &s, dyt, xt, T);
		assert_memory_equal(dw2, dw, sizeof(float) * (size_t)s.nnz);
		for (size_t q = 0; q < 16 * no; q++) {
			uint32_t u;
			memcpy(&u, &lanes[q], sizeof u);
			assert_int_equal(u, 0x7f7f7f7fu);
		}
		free(dw2);
		free(db);
		free(db0);
		free(lanes);
	}
	/* token-minor sides: the same sums, so the same bits; padding tokens of a token-minor
	 * output zero */
	{
		size_t no = (size_t)p->n_out, ni = (size_t)p->n_in;
		float *yt = malloc(sizeof(float) * no * ld), *y3 = malloc(sizeof(float) * T * no);
		float *dxt = malloc(sizeof(float) * ni * ld), *dyt3 = malloc(sizeof(float) * no * ld);
		assert_true(yt && y3 && dxt && dyt3);
		memset(yt, 0x7f, sizeof(float) * no * ld);
		memset(dxt, 0x7f, sizeof(float) * ni * ld);
		assert_int_equal(eng_spmm_ex(e, yt, 1, &s, 0, xt, 1, T, NULL), CS_OK);
		assert_int_equal(eng_spmm_ex(e, y3, 0, &s, 0, xt, 1, T, NULL), CS_OK);
		assert_int_equal(eng_spmm_ex(e, dxt, 1, &s, 1, p->dy, 0, T, dyt3), CS_OK);
		assert_memory_equal(y3, y, sizeof(float) * T * no);
		assert_memory_equal(dyt3, dyt, sizeof(float) * no * ld);
		for (size_t i = 0; i < no; i++)
			for (int t = 0; t < ld; t++)
				assert_true(t < T ? yt[i * ld + t] == y[(size_t)t * no + i]
						  : yt[i * ld + t] == 0.0f);
		for (size_t j = 0; j < ni; j++)
			for (int t = 0; t < ld; t++)
				assert_true(t < T ? dxt[j * ld + t] == dx[(size_t)t * ni + j]
						  : dxt[j * ld + t] == 0.0f);
		/* the product times a multiplier as it is stored: the bits of the product followed
		 * by the multiplication, padding tokens zero; no multiplier is an error */
		float *mt = malloc(sizeof(float) * ni * ld), *dxm = malloc(sizeof(float) * ni * ld);
		assert_true(mt && dxm);
		for (size_t q = 0; q < ni * ld; q++)
			mt[q] = (float)((q * 2654435761u) % 2001) / 1000.0f - 1.0f;
		memset(dxm, 0x7f, sizeof(float) * ni * ld);
		assert_int_equal(eng_spmm_mul(e, dxm, ENG_TM_ROWS, mt, &s, 1, p->dy, 0, T, NULL), CS_OK);
		for (size_t j = 0; j < ni; j++)
			for (int t = 0; t < ld; t++) {
				float want = t < T ? dxt[j * ld + t] * mt[j * ld + t] : 0.0f;
				assert_memory_equal(&dxm[j * ld + t], &want, sizeof want);
			}
		memset(dxm, 0x7f, sizeof(float) * ni * ld);
		assert_int_equal(eng_spmm_mul(e, dxm, ENG_TM_ROWS, mt, &s, 1, dyt, 1, T, NULL), CS_OK);
		for (size_t j = 0; j < ni; j++)
			for (int t = 0; t < T; t++) {
				float want = dxt[j * ld + t] * mt[j * ld + t];
				assert_memory_equal(&dxm[j * ld + t], &want, sizeof want);
			}
		assert_int_equal(eng_spmm_mul(e, dxm, ENG_TM_ROWS, NULL, &s, 1, dyt, 1, T, NULL),
				 CS_ERR_INVALID);
		/* the forward product with a residual add and a bias in its output pass: the bits
		 * of res + (y + bias), from a token-major and a token-minor input */
		float *res = malloc(sizeof(float) * T * no), *bias = malloc(sizeof(float) * no);
		float *yr = malloc(sizeof(float) * T * no);
		assert_true(res && bias && yr);
		for (size_t q = 0; q < T * no; q++)
			res[q] = rnd_f();
		for (size_t i = 0; i < no; i++)
			bias[i] = rnd_f();
		for (int tm = 0; tm < 2; tm++) {
			memset(yr, 0x7f, sizeof(float) * T * no);
			assert_int_equal(eng_spmm_res(e, yr, res, bias, &s, tm ? xt : p->x, tm, T,
						      NULL),
					 CS_OK);
			for (int t = 0; t < T; t++)
				for (size_t i = 0; i < no; i++) {
					size_t q = (size_t)t * no + i;
					float want = res[q] + (y[q] + bias[i]);
					assert_memory_equal(&yr[q], &want, sizeof want);
				}
		}
		/* into a blocked output with a blocked residual: the same bits, padding tokens
		 * zero, from a token-major, a rows and a blocked input */
		{
			size_t bo = eng_blk_size((int)no, T);
			float *rest = malloc(sizeof(float) * no * ld), *yb = malloc(sizeof(float) * bo);
			assert_true(rest && yb);
			for (size_t i = 0; i < no; i++)
				for (int t = 0; t < ld; t++)
					rest[i * ld + t] = t < T ? res[(size_t)t * no + i] : 0.0f;
			float *resb = to_blocked(rest, (int)no, T, ld);
			float *xb = to_blocked(xt, (int)p->n_in, T, ld);
			for (int tm = 0; tm < 3; tm++) {
				const float *xin = tm == 0 ? p->x : tm == 1 ? xt : xb;
				memset(yb, 0x7f, sizeof(float) * bo);
				assert_int_equal(eng_spmm_res_ex(e, yb, ENG_TM_BLOCKED, resb, bias, &s,
								 xin, tm, T, NULL),
						 CS_OK);
				for (size_t q = 0; q < bo; q++) {
					size_t b = q / (no * ENG_TB), i = q / ENG_TB % no;
					size_t t = b * ENG_TB + q % ENG_TB;
					float want = 0.0f;
					if (t < (size_t)T) {
						size_t r = t * no + i;
						want = res[r] + (y[r] + bias[i]);
					}
					assert_memory_equal(&yb[q], &want, sizeof want);
				}
			}
			assert_int_equal(eng_spmm_res_ex(e, yb, ENG_TM_ROWS, resb, bias, &s, xt, 1, T,
							 NULL),
					 CS_ERR_INVALID);
			/* the bias alone into a token-minor output: the bits of y + bias on the
			 * real tokens, padding zero, rows and blocked */
			float *yrow = malloc(sizeof(float) * no * ld);
			assert_true(yrow != NULL);
			memset(yrow, 0x7f, sizeof(float) * no * ld);
			assert_int_equal(eng_spmm_bias(e, yrow, ENG_TM_ROWS, bias, &s, xb,
						       ENG_TM_BLOCKED, T),
					 CS_OK);
			for (size_t i = 0; i < no; i++)
				for (int t = 0; t < ld; t++) {
					float want = t < T ? y[(size_t)t * no + i] + bias[i] : 0.0f;
					assert_memory_equal(&yrow[i * ld + t], &want, sizeof want);
				}
			memset(yb, 0x7f, sizeof(float) * bo);
			assert_int_equal(eng_spmm_bias(e, yb, ENG_TM_BLOCKED, bias, &s, xt,
						       ENG_TM_ROWS, T),
					 CS_OK);
			for (size_t q = 0; q < bo; q++) {
				size_t b = q / (no * ENG_TB), i = q / ENG_TB % no;
				size_t t = b * ENG_TB + q % ENG_TB;
				float want = t < (size_t)T ? y[t * no + i] + bias[i] : 0.0f;
				assert_memory_equal(&yb[q], &want, sizeof want);
			}
			assert_int_equal(eng_spmm_bias(e, yrow, 0, bias, &s, xt, 1, T),
					 CS_ERR_INVALID);
			assert_int_equal(eng_spmm_bias(e, yrow, 1, NULL, &s, xt, 1, T),
					 CS_ERR_INVALID);
			free(yrow);
			free(rest), free(yb), free(resb), free(xb);
		}
		assert_int_equal(eng_spmm_res(e, yr, NULL, bias, &s, xt, 1, T, NULL),
				 CS_ERR_INVALID);
		assert_int_equal(eng_spmm_res(e, yr, res, NULL, &s, xt, 1, T, NULL),
				 CS_ERR_INVALID);
		assert_int_equal(eng_spmm_res(e, res, res, bias, &s, xt, 1, T, NULL),
				 CS_ERR_INVALID);
		free(res);
		free(bias);
		free(yr);
		/* the blocked layout: the same bits as the rows, whichever side is blocked,
		 * padding tokens zero; eng_tm_unblock gives the rows back */
		{
			size_t bo = eng_blk_size((int)no, T), bi = eng_blk_size((int)ni, T);
			float *xb = to_blocked(xt, (int)ni, T, ld), *dyb = to_blocked(dyt, (int)no, T, ld);
			float *ytb = to_blocked(yt, (int)no, T, ld), *dxtb = to_blocked(dxt, (int)ni, T, ld);
			float *mb = to_blocked(mt, (int)ni, T, ld);
			float *ob = malloc(sizeof(float) * (bo > bi ? bo : bi));
			float *orow = malloc(sizeof(float) * (no > ni ? no : ni) * ld);
			float *ot = malloc(sizeof(float) * T * (no > ni ? no : ni));
			assert_true(ob && orow && ot);
			memset(ob, 0x7f, sizeof(float) * bo);
			assert_int_equal(eng_spmm_ex(e, ob, ENG_TM_BLOCKED, &s, 0, xb, ENG_TM_BLOCKED,
						     T, NULL),
					 CS_OK);
			assert_memory_equal(ob, ytb, sizeof(float) * bo);
			memset(ob, 0x7f, sizeof(float) * bo);
			assert_int_equal(eng_spmm_ex(e, ob, ENG_TM_BLOCKED, &s, 0, p->x, 0, T, NULL),
					 CS_OK);
			assert_memory_equal(ob, ytb, sizeof(float) * bo);
			assert_int_equal(eng_spmm_ex(e, ot, 0, &s, 0, xb, ENG_TM_BLOCKED, T, NULL),
					 CS_OK);
			assert_memory_equal(ot, y, sizeof(float) * T * no);
			memset(ob, 0x7f, sizeof(float) * bi);
			assert_int_equal(eng_spmm_ex(e, ob, ENG_TM_BLOCKED, &s, 1, dyb, ENG_TM_BLOCKED,
						     T, NULL),
					 CS_OK);
			assert_memory_equal(ob, dxtb, sizeof(float) * bi);
			memset(ob, 0x7f, sizeof(float) * bi);
			assert_int_equal(eng_spmm_mul(e, ob, ENG_TM_BLOCKED, mb, &s, 1, p->dy, 0, T,
						      NULL),
					 CS_OK);
			for (size_t q = 0; q < bi; q++) {
				float want = dxtb[q] * mb[q];
				assert_memory_equal(&ob[q], &want, sizeof want);
			}
			eng_tm_unblock(orow, dxtb, (int)ni, T);
			assert_memory_equal(orow, dxt, sizeof(float) * ni * ld);
			/* the weight gradient and the bias from either layout of either side */
			float *dwb = malloc(sizeof(float) * ((size_t)s.nnz + 1));
			float *db1 = calloc(no, sizeof(float)), *db2 = calloc(no, sizeof(float));
			float *lanes = malloc(sizeof(float) * 16 * no);
			assert_true(dwb && db1 && db2 && lanes);
			eng_sddmm_db(pool, dwb, db1, lanes, &s, dyt, xt, T);
			for (int c = 1; c < 4; c++) {
				int dyl = c & 1 ? ENG_TM_BLOCKED : ENG_TM_ROWS;
				int xl = c & 2 ? ENG_TM_BLOCKED : ENG_TM_ROWS;
				memset(dwb, 0x7f, sizeof(float) * ((size_t)s.nnz + 1));
				memset(db2, 0, sizeof(float) * no);
				eng_sddmm_ex(pool, dwb, db2, lanes, &s, c & 1 ? dyb : dyt, dyl,
					     c & 2 ? xb : xt, xl, T);
				assert_memory_equal(dwb, dw, sizeof(float) * (size_t)s.nnz);
				assert_memory_equal(db2, db1, sizeof(float) * no);
			}
			/* the same in the CSC order, from either layout of either side: the same
			 * bits, every entry written (dwb poisoned), db += the same row sums */
			float *scr = malloc(sizeof(float) * ((size_t)s.nnz + 1));
			assert_true(scr != NULL);
			for (int c = 0; c < 4; c++) {
				int dyl = c & 1 ? ENG_TM_BLOCKED : ENG_TM_ROWS;
				int xl = c & 2 ? ENG_TM_BLOCKED : ENG_TM_ROWS;
				memset(dwb, 0x7f, sizeof(float) * ((size_t)s.nnz + 1));
				memset(db2, 0, sizeof(float) * no);
				eng_sddmm_csc_ex(pool, dwb, db2, scr, &s, c & 1 ? dyb : dyt, dyl,
						 c & 2 ? xb : xt, xl, T);
				assert_memory_equal(dwb, dw, sizeof(float) * (size_t)s.nnz);
				assert_memory_equal(db2, db1, sizeof(float) * no);
				memset(dwb, 0x7f, sizeof(float) * ((size_t)s.nnz + 1));
				eng_sddmm_csc_ex(pool, dwb, NULL, scr, &s, c & 1 ? dyb : dyt, dyl,
						 c & 2 ? xb : xt, xl, T);
				assert_memory_equal(dwb, dw, sizeof(float) * (size_t)s.nnz);
			}
			free(scr);
			assert_int_equal(eng_spmm_ex(e, ob, 3, &s, 0, xb, ENG_TM_BLOCKED, T, NULL),
					 CS_ERR_INVALID);
			free(dwb);
			free(db1);
			free(db2);
			free(lanes);
			free(xb);
			free(dyb);
			free(ytb);
			free(dxtb);
			free(mb);
			free(ob);
			free(orow);
			free(ot);
		}
		free(mt);
		free(dxm);
		free(yt);
		free(y3);
		free(dxt);
		free(dyt3);
	}
	eng_ctx_free(e);

	for (int t = 0; t < T; t++)
		for (int i = 0; i < p->n_out; i++) {
			double ref = 0, sa = 0;
			int n = 0;
			for (int j = 0; j < p->n_in; j++)
				if (p->mask[(size_t)i * p->n_in + j]) {
					double term = wval(p, i, j, bf16) * p->x[(size_t)t * p->n_in + j];
					ref += term;
					sa += fabs(term);
					n++;
				}
			assert_close(y[(size_t)t * p->n_out + i], ref, sa, n, "forward", t, i);
		}
	for (int t = 0; t < T; t++)
		for (int j = 0; j < p->n_in; j++) {
			double ref = 0, sa = 0;
			int n = 0;
			for (int i = 0; i < p->n_out; i++)
				if (p->mask[(size_t)i * p->n_in + j]) {
					double term = wval(p, i, j, bf16) * p->dy[(size_t)t * p->n_out + i];
					ref += term;
					sa += fabs(term);
					n++;
				}
			assert_close(dx[(size_t)t * p->n_in + j], ref, sa, n, "backward", t, j);
		}
	int64_t k = 0;
	for (int i = 0; i < p->n_out; i++)
		for (int j = 0; j < p->n_in; j++) {
			if (!p->mask[(size_t)i * p->n_in + j])
				continue;
			double ref = 0, sa = 0;
			for (int t = 0; t < T; t++) {
				double term = (double)p->dy[(size_t)t * p->n_out + i] *
					      p->x[(size_t)t * p->n_in + j];
				ref += term;
				sa += fabs(term);
			}
			assert_int_equal(s.col[k], j);
			assert_close(dw[k], ref, sa, T, "wgrad", i, j);
			k++;
		}
	assert_int_equal(k, s.nnz);
	free(xt);
	free(dyt);
	free(y);
	free(dx);
	free(dw);
	eng_spmat_free(&s);
}

static const struct shape {
	int n_out, n_in, T;
	double density;
	int kind;
} shapes[] = {
	{ 64, 48, 32, 0.3, M_RANDOM },
	{ 37, 53, 19, 0.2, M_RANDOM },    /* nothing a multiple of a vector */
	{ 96, 40, 1, 0.5, M_RANDOM },     /* one token */
	{ 40, 96, 300, 0.1, M_RANDOM },   /* several token blocks and a remainder */
	{ 33, 29, 45, 0.6, M_EMPTY_ROWS_COLS },
	{ 17, 23, 21, 0.0, M_ONE },
	{ 16, 16, 16, 0.0, M_NONE },
	{ 12, 20, 130, 1.0, M_FULL },
	{ 256, 64, 517, 0.05, M_RANDOM }, /* a 256-token block, 95% sparse; two panels back */
	{ 50, 300, 70, 0.2, M_RANDOM },   /* three panels, the last partial */
	{ 70, 260, 64, 0.0, M_EMPTY_ROWS_COLS }, /* empty panels */
	/* wide inputs in column chunks of 256; a token-minor input packed (>= 16 entries per
	 * column) or read in place */
	{ 600, 40, 70, 0.5, M_RANDOM },   /* backward: three chunks, the last partial; packed */
	{ 300, 700, 33, 0.08, M_EMPTY_ROWS_COLS }, /* chunks with empty rows and columns */
	{ 17, 900, 21, 0.0, M_ONE },      /* one entry, in the second chunk */
	{ 40, 530, 90, 0.04, M_RANDOM },  /* token-minor input read in place, rows of 0-5 */
};

static void test_kernels_all_isas(void **state)
{
	(void)state;
	int best = eng_isa_best();
	printf("best ISA on this CPU: %s\n", eng_isa_name(best));
	for (int isa = 0; isa <= best; isa++) {
		assert_int_equal(eng_isa_set(isa), CS_OK);
		for (int nth = 1; nth <= 3; nth++) {
			cs_pool *pool;
			assert_int_equal(cs_pool_create(&pool, nth), CS_OK);
			for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
				problem p;
				rng_state = 1000 + c;
				make_problem(&p, shapes[c].n_out, shapes[c].n_in, shapes[c].T,
					     shapes[c].density, shapes[c].kind);
				check_problem(&p, pool, ENG_F32);
				/* bf16 values: the first shapes and those whose rows run in
				 * column chunks (more than 256 columns either way) */
				if (c < 3 || shapes[c].n_in > 256 || shapes[c].n_out > 256)
					check_problem(&p, pool, ENG_BF16);
				free_problem(&p);
			}
			cs_pool_free(pool);
		}
		printf("isa %s: kernels match the double reference\n", eng_isa_name(isa));
	}
	assert_int_equal(eng_isa_set(best), CS_OK);
}

/* The same kernel on 1 and 3 threads gives the same bits (each output has one owner). */
static void test_thread_count_invariant(void **state)
{
	(void)state;
	problem p;
	rng_state = 77;
	make_problem(&p, 200, 150, 170, 0.15, M_RANDOM);
	eng_spmat s = { 0 };
	assert_int_equal(eng_spmat_build(&s, p.w, p.mask, p.n_out, p.n_in, ENG_F32), CS_OK);
	int ld = p.ld;
	float *xt = malloc(sizeof(float) * (size_t)p.n_in * ld);
	float *dyt = malloc(sizeof(float) * (size_t)p.n_out * ld);
	float *out[2], *dw[2];
	cs_pool *pools[2];
	eng_transpose_in(NULL, xt, p.x, p.T, p.n_in, ld);
	eng_transpose_in(NULL, dyt, p.dy, p.T, p.n_out, ld);
	size_t no = (size_t)(p.n_out + p.n_in) * p.T;
	for (int r = 0; r < 2; r++) {
		eng_ctx *e;
		assert_int_equal(cs_pool_create(&pools[r], r ? 3 : 1), CS_OK);
		assert_int_equal(eng_ctx_create(&e, pools[r]), CS_OK);
		out[r] = malloc(sizeof(float) * no);
		dw[r] = malloc(sizeof(float) * (size_t)s.nnz);
		assert_int_equal(eng_spmm(e, out[r], &s, 0, p.x, p.T, NULL), CS_OK);
		assert_int_equal(eng_spmm(e, out[r] + (size_t)p.n_out * p.T, &s, 1, p.dy, p.T, NULL),
				 CS_OK);
		eng_sddmm(pools[r], dw[r], &s, dyt, xt, p.T);
		eng_ctx_free(e);
	}
	assert_memory_equal(out[0], out[1], sizeof(float) * no);
	assert_memory_equal(dw[0], dw[1], sizeof(float) * (size_t)s.nnz);
	for (int r = 0; r < 2; r++) {
		free(out[r]);
		free(dw[r]);
		cs_pool_free(pools[r]);
	}
	free(xt);
	free(dyt);
	eng_spmat_free(&s);
	free_problem(&p);
}

/* A token-minor input's padding tokens (T..ld-1) are read into no output: NaN there changes
 * no bit of the products, token-major or token-minor, and a token-minor output's padding
 * stays zero. T = 70: a whole 64-token block and a partial one whose vectors reach into the
 * padding; every ISA, 1 and 2 threads. */
static void test_padding_not_read(void **state)
{
	(void)state;
	problem p;
	rng_state = 31;
	make_problem(&p, 40, 90, 70, 0.3, M_RANDOM);
	int ld = p.ld, T = p.T;
	eng_spmat s = { 0 };
	assert_int_equal(eng_spmat_build(&s, p.w, p.mask, p.n_out, p.n_in, ENG_F32), CS_OK);
	size_t ni = (size_t)p.n_in, no = (size_t)p.n_out;
	float *xt = malloc(sizeof(float) * ni * ld), *xn = malloc(sizeof(float) * ni * ld);
	float *y0 = malloc(sizeof(float) * T * no), *y1 = malloc(sizeof(float) * T * no);
	float *yt = malloc(sizeof(float) * no * ld);
	assert_true(xt && xn && y0 && y1 && yt);
	eng_transpose_in(NULL, xt, p.x, T, p.n_in, ld);
	memcpy(xn, xt, sizeof(float) * ni * ld);
	for (size_t j = 0; j < ni; j++)
		for (int t = T; t < ld; t++)
			xn[j * ld + t] = NAN;
	for (int isa = 0; isa <= eng_isa_best(); isa++) {
		assert_int_equal(eng_isa_set(isa), CS_OK);
		for (int nth = 1; nth <= 2; nth++) {
			cs_pool *pool;
			eng_ctx *e;
			assert_int_equal(cs_pool_create(&pool, nth), CS_OK);
			assert_int_equal(eng_ctx_create(&e, pool), CS_OK);
			assert_int_equal(eng_spmm_ex(e, y0, 0, &s, 0, xt, 1, T, NULL), CS_OK);
			assert_int_equal(eng_spmm_ex(e, y1, 0, &s, 0, xn, 1, T, NULL), CS_OK);
			assert_memory_equal(y0, y1, sizeof(float) * T * no);
			memset(yt, 0x7f, sizeof(float) * no * ld);
			assert_int_equal(eng_spmm_ex(e, yt, 1, &s, 0, xn, 1, T, NULL), CS_OK);
			for (size_t i = 0; i < no; i++)
				for (int t = 0; t < ld; t++)
					assert_true(t < T ? yt[i * ld + t] == y0[(size_t)t * no + i]
							  : yt[i * ld + t] == 0.0f);
			eng_ctx_free(e);
			cs_pool_free(pool);
		}
	}
	assert_int_equal(eng_isa_set(eng_isa_best()), CS_OK);
	free(xt);
	free(xn);
	free(y0);
	free(y1);
	free(yt);
	eng_spmat_free(&s);
	free_problem(&p);
}

/* The layout against its definition; a rebuild in place and a value refresh equal a build
 * from scratch. */
static void test_layout(void **state)
{
	(void)state;
	problem p;
	rng_state = 5;
	make_problem(&p, 30, 41, 1, 0.3, M_RANDOM);
	for (int vt = 0; vt < 2; vt++) {
		eng_spmat s = { 0 };
		assert_int_equal(eng_spmat_build(&s, p.w, p.mask, p.n_out, p.n_in, vt), CS_OK);
		int64_t k = 0;
		for (int i = 0; i < p.n_out; i++) {
			assert_int_equal(s.row_ptr[i], k);
			for (int j = 0; j < p.n_in; j++)
				if (p.mask[(size_t)i * p.n_in + j]) {
					assert_int_equal(s.col[k], j);
					k++;
				}
		}
		assert_int_equal(k, s.nnz);
		for (int j = 0; j < p.n_in; j++)
			for (int64_t c = s.col_ptr[j]; c < s.col_ptr[j + 1]; c++) {
				assert_true(p.mask[(size_t)s.row[c] * p.n_in + j]);
				if (c > s.col_ptr[j])
					assert_true(s.row[c] > s.row[c - 1]);
				/* csr_pos: the same entry's CSR place */
				int64_t q = s.csr_pos[c];
				assert_true(q >= s.row_ptr[s.row[c]] && q < s.row_ptr[s.row[c] + 1]);
				assert_int_equal(s.col[q], j);
			}
		/* new values: refresh == fresh build; new mask: rebuild in place == fresh */
		for (size_t q = 0; q < (size_t)p.n_out * p.n_in; q++)
			p.w[q] = rnd_f();
		cs_pool *pool;
		assert_int_equal(cs_pool_create(&pool, 2), CS_OK);
		eng_spmat_update_values(&s, p.w, pool);
		eng_spmat fresh = { 0 };
		assert_int_equal(eng_spmat_build(&fresh, p.w, p.mask, p.n_out, p.n_in, vt), CS_OK);
		assert_true(eng_spmat_equal(&s, &fresh));
		/* CSR values written by the caller: the CSC copy follows them alone */
		size_t vs = vt == ENG_BF16 ? 2 : 4;
		memset(s.cval, 0x5a, vs * (size_t)s.nnz);
		eng_spmat_update_csc(&s, pool);
		assert_true(eng_spmat_equal(&s, &fresh));
		/* several matrices' CSC copies in one job: each as refreshed alone */
		eng_spmat twin = { 0 };
		assert_int_equal(eng_spmat_build(&twin, p.w, p.mask, p.n_out, p.n_in, vt), CS_OK);
		memset(s.cval, 0x5a, vs * (size_t)s.nnz);
		memset(twin.cval, 0xa5, vs * (size_t)twin.nnz);
		eng_spmat *const many[2] = { &s, &twin };
		eng_spmat_update_csc_many(many, 2, pool);
		assert_true(eng_spmat_equal(&s, &fresh));
		assert_true(eng_spmat_equal(&twin, &fresh));
		eng_spmat_free(&twin);
		for (size_t q = 0; q < (size_t)p.n_out * p.n_in; q++)
			p.mask[q] = (rnd() & 3) == 0;
		assert_int_equal(eng_spmat_build(&s, p.w, p.mask, p.n_out, p.n_in, vt), CS_OK);
		assert_int_equal(eng_spmat_build(&fresh, p.w, p.mask, p.n_out, p.n_in, vt), CS_OK);
		assert_true(eng_spmat_equal(&s, &fresh));
		p.mask[0] ^= 1;
		assert_int_equal(eng_spmat_build(&fresh, p.w, p.mask, p.n_out, p.n_in, vt), CS_OK);
		assert_false(eng_spmat_equal(&s, &fresh));
		cs_pool_free(pool);
		eng_spmat_free(&s);
		eng_spmat_free(&fresh);
	}
	free_problem(&p);
}

static void test_transpose(void **state)
{
	(void)state;
	static const int shapes_rc[][2] = { { 37, 21 }, { 70, 50 }, { 16, 16 }, { 5, 3 } };
	for (int isa = 0; isa <= eng_isa_best(); isa++) {
		assert_int_equal(eng_isa_set(isa), CS_OK);
		for (int sh = 0; sh < 4; sh++) {
			const int R = shapes_rc[sh][0], C = shapes_rc[sh][1], ld = eng_ld(R);
			float *src = malloc(sizeof(float) * R * C), *back = malloc(sizeof(float) * R * C);
			float *t = malloc(sizeof(float) * C * ld);
			for (int i = 0; i < R * C; i++)
				src[i] = (float)i;
			memset(t, 0x7f, sizeof(float) * C * ld);
			for (int nth = 1; nth <= 3; nth += 2) {
				cs_pool *pool;
				assert_int_equal(cs_pool_create(&pool, nth), CS_OK);
				eng_transpose_in(pool, t, src, R, C, ld);
				for (int c = 0; c < C; c++)
					for (int r = 0; r < ld; r++)
						assert_true(t[c * ld + r] == (r < R ? src[r * C + c] : 0.0f));
				eng_transpose_out(pool, back, t, R, C, ld);
				assert_memory_equal(back, src, sizeof(float) * R * C);
				cs_pool_free(pool);
			}
			free(src);
			free(back);
			free(t);
		}
	}
	assert_int_equal(eng_isa_set(eng_isa_best()), CS_OK);
}

static void test_isa_names(void **state)
{
	(void)state;
	for (int i = 0; i < ENG_ISA_N; i++)
		assert_int_equal(eng_isa_parse(eng_isa_name(i)), i);
	assert_int_equal(eng_isa_parse("sse9"), -1);
	assert_int_equal(eng_isa_set(ENG_ISA_N), CS_ERR_INVALID);
	assert_int_equal(eng_isa_set(ENG_ISA_PORTABLE), CS_OK);
	assert_int_equal(eng_isa(), ENG_ISA_PORTABLE);
	assert_int_equal(eng_isa_set(eng_isa_best()), CS_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_transpose),
		cmocka_unit_test(test_isa_names),
		cmocka_unit_test(test_thread_count_invariant),
		cmocka_unit_test(test_padding_not_read),
		cmocka_unit_test(test_kernels_all_isas),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
