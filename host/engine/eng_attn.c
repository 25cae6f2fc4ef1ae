/*
 * eng_attn.c - causal self-attention on the engine's kernels (see eng.h): the front end
 * that splits (sequence, head) pairs between threads and lays each pair's q, k, v out for
 * the per-head kernel (eng_attn_body.h). Token-major operands are read and written in
 * place through their strides; what the kernel wants the other way round (k^T and v^T of
 * token-major q, k, v; k and v of token-minor ones; token-minor dq and output) goes through
 * the pair's transposes in the thread's scratch, T x hs floats each. The kernel makes
 * token-minor dk and dv in place, and reads a token-minor dout in place.
 */
#include <math.h>
#include <string.h>

#include "engine/eng.h"
#include "engine/eng_impl.h"

size_t eng_attention_scratch(int T, int hs)
{
	return (size_t)T * (T + 16) + 3 * (size_t)T * hs;
}

/* dst [rows][ldd] = src [rows][lds], cols floats a row */
static void copy_rows(float *dst, size_t ldd, const float *src, size_t lds, int rows, int cols)
{
	for (int r = 0; r < rows; r++)
		memcpy(dst + (size_t)r * ldd, src + (size_t)r * lds, sizeof(float) * (size_t)cols);
}

struct attn_job {
	const eng_kern *k;
	float *out, *att, *dqkv, *scratch;
	const float *qkv, *catt, *dout;
	int ld, B, T, C, NH, bwd;
	int out_tm; /* forward: out token-minor [C][ld] */
	int dout_tm; /* backward: dout token-minor [C][ld] */
};

static void attn_job(void *va, int tid, int nth)
{
	struct attn_job *a = va;
	const eng_kern *kr = a->k;
	int T = a->T, C = a->C, NH = a->NH, hs = C / NH, ld = a->ld;
	size_t C3 = 3 * (size_t)C;
	float *sc = a->scratch + (size_t)tid * eng_attention_scratch(T, hs);
	float *s0 = sc + (size_t)T * (T + 16), *s1 = s0 + (size_t)T * hs, *s2 = s1 + (size_t)T * hs;
	size_t lo, hi;
	cs_split((size_t)a->B * NH, tid, nth, &lo, &hi);
	for (size_t bh = lo; bh < hi; bh++) {
		size_t b = bh / NH, h = bh % NH;
		eng_attn_head e = { .T = T, .hs = hs, .scale = 1.0f / sqrtf((float)hs),
				    .ldatt = (size_t)T, .ds = sc, .ldds = (size_t)T + 16 };
		e.att = a->bwd ? (float *)a->catt : a->att;
		e.att += bh * (size_t)T * T;
		e.o = a->out + b * T * C + h * hs;
		e.ldo = (size_t)C;
		e.d = a->dout + b * T * C + h * hs;
		e.ldd = e.d_rs = (size_t)C;
		e.d_is = 1;
		if (a->dout_tm) { /* read in place: only as the products' broadcast side */
			e.d = a->dout + h * hs * (size_t)ld + b * T;
			e.d_rs = 1;
			e.d_is = (size_t)ld;
		}
		if (!ld) { /* token-major [B*T][3C] */
			const float *q = a->qkv + b * T * C3 + h * hs, *k = q + C, *v = q + 2 * C;
			e.q = q;
			e.q_rs = C3;
			e.q_is = 1;
			/* the kernel's row-streamed operands (v forward; k, q backward) copied
			 * contiguous: rows 3C floats apart fall into a few L1 sets */
			if (!a->bwd) {
				copy_rows(s1, (size_t)hs, v, C3, T, hs);
				e.v = s1;
				e.ldv = (size_t)hs;
			} else {
				copy_rows(s1, (size_t)hs, k, C3, T, hs);
				copy_rows(s2, (size_t)hs, q, C3, T, hs);
				e.k = s1;
				e.qb = s2;
				e.ldk = e.ldqb = (size_t)hs;
			}
			kr->transpose(s0, (size_t)T, a->bwd ? v : k, C3, T, hs);
			e.kt = e.vt = s0;
			e.ldkt = e.ldvt = (size_t)T;
			if (a->bwd) {
				float *dq = a->dqkv + b * T * C3 + h * hs;
				e.dq = dq;
				e.dk = dq + C;
				e.dv = dq + 2 * C;
				e.lddq = e.lddk = e.lddv = C3;
			}
		} else { /* token-minor [3C][ld] */
			const float *qt = a->qkv + h * hs * (size_t)ld + b * T;
			const float *kt = qt + (size_t)C * ld, *vt = qt + 2 * (size_t)C * ld;
			e.q = qt;
			e.q_rs = 1;
			e.q_is = (size_t)ld;
			e.kt = kt;
			e.ldkt = (size_t)ld;
			e.vt = vt;
			e.ldvt = (size_t)ld;
			if (!a->bwd) {
				kr->transpose(s0, (size_t)hs, vt, (size_t)ld, hs, T);
				e.v = s0;
				e.ldv = (size_t)hs;
				if (a->out_tm) { /* o made in the scratch, then transposed */
					e.o = s1;
					e.ldo = (size_t)hs;
				}
			} else { /* dk, dv made token-minor in place, q read in place */
				float *dqt = a->dqkv + h * hs * (size_t)ld + b * T;
				kr->transpose(s1, (size_t)hs, kt, (size_t)ld, hs, T);
				e.k = s1;
				e.ldk = (size_t)hs;
				e.dq = s2;
				e.lddq = (size_t)hs;
				e.dkt = dqt + (size_t)C * ld;
				e.dvt = dqt + 2 * (size_t)C * ld;
				e.lddkt = e.lddvt = (size_t)ld;
			}
		}
		if (!a->bwd) {
			kr->attn_fwd(&e);
			if (a->out_tm) {
				float *ot = a->out + h * hs * (size_t)ld;
				kr->transpose(ot + b * T, (size_t)ld, s1, (size_t)hs, T, hs);
				if (b == (size_t)a->B - 1) /* the padding tokens of its rows */
					for (int i = 0; i < hs; i++)
						memset(ot + i * (size_t)ld + (b + 1) * T, 0,
						       sizeof(float) * (ld - (b + 1) * T));
			}
			continue;
		}
		kr->attn_bwd(&e);
		if (ld) {
			float *dqt = a->dqkv + h * hs * (size_t)ld + b * T;
			kr->transpose(dqt, (size_t)ld, s2, (size_t)hs, T, hs);
		}
	}
}

void eng_attention_forward(cs_pool *pool, float *out, float *att, const float *qkv, int ld,
			   float *scratch, int B, int T, int C, int NH)
{
	struct attn_job a = { .k = eng_kern_cur(), .out = out, .att = att, .qkv = qkv,
			      .scratch = scratch, .ld = ld, .B = B, .T = T, .C = C, .NH = NH };
	cs_pool_run(pool, attn_job, &a);
}

void eng_attention_forward_tmo(cs_pool *pool, float *outt, float *att, const float *qkvt,
			       int ld, float *scratch, int B, int T, int C, int NH)
{
	struct attn_job a = { .k = eng_kern_cur(), .out = outt, .att = att, .qkv = qkvt,
			      .scratch = scratch, .ld = ld, .B = B, .T = T, .C = C, .NH = NH,
			      .out_tm = 1 };
	cs_pool_run(pool, attn_job, &a);
}

void eng_attention_backward(cs_pool *pool, float *dqkv, const float *dout, const float *qkv,
			    int ld, const float *att, float *scratch, int B, int T, int C,
			    int NH)
{
	struct attn_job a = { .k = eng_kern_cur(), .dqkv = dqkv, .dout = dout, .qkv = qkv,
			      .catt = att, .scratch = scratch, .ld = ld, .B = B, .T = T, .C = C,
			      .NH = NH, .bwd = 1 };
	cs_pool_run(pool, attn_job, &a);
}

void eng_attention_backward_tmd(cs_pool *pool, float *dqkvt, const float *doutt,
				const float *qkvt, int ld, const float *att, float *scratch, int B,
				int T, int C, int NH)
{
	struct attn_job a = { .k = eng_kern_cur(), .dqkv = dqkvt, .dout = doutt, .qkv = qkvt,
			      .catt = att, .scratch = scratch, .ld = ld, .B = B, .T = T, .C = C,
			      .NH = NH, .bwd = 1, .dout_tm = 1 };
	cs_pool_run(pool, attn_job, &a);
}
