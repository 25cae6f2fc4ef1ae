/*
 * eng_attn_body.h - causal attention of one (sequence, head), written once over a small
 * vector vocabulary and included by each ISA file (eng_avx512.c, eng_avx2.c,
 * eng_portable.c), which defines before the include:
 *
 *   vf, VL           the vector type and its floats (1 in the portable file)
 *   MR, NVMAX        a register block: MR rows of NVMAX vectors (ATT_SCALAR: none)
 *   vzero() vset1(x) vloadu(p) vstoreu(p, v) vfmadd(a, b, c) vmul vadd vsub vmax
 *   vload_n(p, n, fill) vstore_n(p, v, n) vkeep_n(v, n)   the first n < VL lanes
 *   vhsum(v) vhmax(v) vexp_nonpos(v)                        exp(x) for x <= 0
 *   ATT_NAME(name)   the ISA's suffix
 *
 * Forward, per block of MR query rows r0..: the scores of keys 0..r0+MR-1 only (the
 * masked upper triangle is skipped), the causal softmax of those rows, then their output;
 * the block's score rows stay in L1. Backward, per block of query rows: the scores'
 * gradient (through the softmax) into the scratch and dq; then per block of MR key rows
 * j0..: dv and dk, summed over the query rows j0..T-1 only. Every product is one
 * register-blocked kernel (att_mm) whose MR x NVMAX accumulators sum their terms in order
 * in one chain each; every output belongs to one call, so the bits depend on the ISA only.
 * Not public: the front end is eng_attn.c.
 */
#ifndef ATT_NAME
#error "eng_attn_body.h is included by an ISA file"
#endif

#ifndef ATT_SCALAR
/* One term k of att_mk's sums: b's row bk (NV vectors, the last nt lanes when TAIL) times
 * the M entries a(r, k) at ak [r * ars], onto the accumulators. */
AI void att_mk_step(vf acc[MR][NVMAX], const float *bk, const float *ak, size_t ars, int nt,
		    const int M, const int NV, const int TAIL)
{
	vf bv[NVMAX];
#pragma GCC unroll 8
	for (int v = 0; v < NV; v++)
		bv[v] = TAIL && v == NV - 1 ? vload_n(bk + v * VL, nt, 0.0f) : vloadu(bk + v * VL);
#pragma GCC unroll 8
	for (int r = 0; r < M; r++) {
		vf ar = vset1(ak[(size_t)r * ars]);
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			acc[r][v] = vfmadd(ar, bv[v], acc[r][v]);
	}
}

/* The register-blocked kernels' dispatch on a block's m <= MR rows and nv <= NVMAX vectors:
 * each case is ATT_MK(M, NV), which the calling function defines. */
#if NVMAX == 4
#define ATT_M(M)                                                                             \
	case M:                                                                              \
		switch (nv) { ATT_MK(M, 1) ATT_MK(M, 2) ATT_MK(M, 3) ATT_MK(M, 4) }          \
		break;
#elif NVMAX == 2
#define ATT_M(M)                                                                             \
	case M:                                                                              \
		switch (nv) { ATT_MK(M, 1) ATT_MK(M, 2) }                                    \
		break;
#else
#error "NVMAX is 2 or 4"
#endif
#if MR > 4
#define ATT_DISPATCH(m) switch (m) { ATT_M(1) ATT_M(2) ATT_M(3) ATT_M(4) ATT_M(5) ATT_M(6) }
#else
#define ATT_DISPATCH(m) switch (m) { ATT_M(1) ATT_M(2) ATT_M(3) ATT_M(4) }
#endif

/* c [r][0..n) = alpha * sum_{k < K} a(r, k) b [k][0..n) for r < M, a(r, k) at
 * a [r * ars + k * aks]: the M x NV accumulators stay in registers over k; each k loads
 * b's NV vectors (the last partial when TAIL) and broadcasts M entries of a. */
AI void att_mk(float *c, size_t ldc, const float *a, size_t ars, size_t aks, const float *b,
	       size_t ldb, int n, int K, float alpha, const int M, const int NV, const int TAIL)
{
	vf acc[MR][NVMAX];
	const int nt = n - (NV - 1) * VL; /* lanes of the last vector */
#pragma GCC unroll 8
	for (int r = 0; r < M; r++)
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			acc[r][v] = vzero();
	for (int k = 0; k < K; k++)
		att_mk_step(acc, b + (size_t)k * ldb, a + (size_t)k * aks, ars, nt, M, NV, TAIL);
	vf al = vset1(alpha);
#pragma GCC unroll 8
	for (int r = 0; r < M; r++)
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++) {
			float *cp = c + (size_t)r * ldc + v * VL;
			if (TAIL && v == NV - 1)
				vstore_n(cp, vmul(acc[r][v], al), nt);
			else
				vstoreu(cp, vmul(acc[r][v], al));
		}
}

/* att_mk over n in blocks of NVMAX vectors; m <= MR rows */
static void att_mm(float *c, size_t ldc, const float *a, size_t ars, size_t aks,
		   const float *b, size_t ldb, int m, int n, int K, float alpha)
{
	for (int n0 = 0; n0 < n; n0 += NVMAX * VL) {
		int nn = n - n0 < NVMAX * VL ? n - n0 : NVMAX * VL;
		int nv = (nn + VL - 1) / VL, tail = nn % VL != 0;
		float *cc = c + n0;
		const float *bb = b + n0;
#define ATT_MK(M, NV)                                                                        \
	case NV:                                                                             \
		if (tail)                                                                    \
			att_mk(cc, ldc, a, ars, aks, bb, ldb, nn, K, alpha, M, NV, 1);       \
		else                                                                         \
			att_mk(cc, ldc, a, ars, aks, bb, ldb, nn, K, alpha, M, NV, 0);       \
		break;
		ATT_DISPATCH(m)
#undef ATT_MK
	}
}

/* att_mk with the terms k < j of column j known zero: vector v (columns v VL..) sums its
 * terms from k = v VL on, the terms before it (exact zeros) skipped, so the same bits as
 * att_mk; K >= n. */
AI void att_mk_tri(float *c, size_t ldc, const float *a, size_t ars, size_t aks,
		   const float *b, size_t ldb, int n, int K, const int M, const int NV,
		   const int TAIL)
{
	vf acc[MR][NVMAX];
	/* lanes of the last vector, n - (NV - 1) VL, written so that the compiler sees it in
	 * 1..VL */
	const int nt = (int)(((unsigned)n - 1u) % VL) + 1;
#pragma GCC unroll 8
	for (int r = 0; r < M; r++)
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			acc[r][v] = vzero();
#pragma GCC unroll 8
	for (int p = 0; p < NV; p++) {
		int ke = (p + 1) * VL < K ? (p + 1) * VL : K;
		for (int k = p * VL; k < ke; k++) {
			const float *bk = b + (size_t)k * ldb;
			const float *ak = a + (size_t)k * aks;
			vf ar[MR];
#pragma GCC unroll 8
			for (int r = 0; r < M; r++)
				ar[r] = vset1(ak[(size_t)r * ars]);
#pragma GCC unroll 8
			for (int v = 0; v <= p; v++) {
				vf bv = TAIL && v == NV - 1 ? vload_n(bk + v * VL, nt, 0.0f)
							    : vloadu(bk + v * VL);
#pragma GCC unroll 8
				for (int r = 0; r < M; r++)
					acc[r][v] = vfmadd(ar[r], bv, acc[r][v]);
			}
		}
	}
	for (int k = NV * VL; k < K; k++)
		att_mk_step(acc, b + (size_t)k * ldb, a + (size_t)k * aks, ars, nt, M, NV, TAIL);
#pragma GCC unroll 8
	for (int r = 0; r < M; r++)
#pragma GCC unroll 8
		for (int v = 0; v < NV; v++) {
			float *cp = c + (size_t)r * ldc + v * VL;
			if (TAIL && v == NV - 1)
				vstore_n(cp, acc[r][v], nt);
			else
				vstoreu(cp, acc[r][v]);
		}
}

/* c [r][j] = sum_{j <= k < n} a(r, k) b [k][j] for r < rows, j < n: the terms k < j are
 * zero and skipped (att_mk_tri), in blocks of NVMAX vectors, each block's sums starting
 * at its first column; a block's rows of b (at most n x NVMAX VL floats) stay in L1 for
 * all rows of c, MR at a time */
static void att_mm_tri(float *c, size_t ldc, const float *a, size_t ars, size_t aks,
		       const float *b, size_t ldb, int rows, int n)
{
	for (int n0 = 0; n0 < n; n0 += NVMAX * VL)
	for (int i0 = 0; i0 < rows; i0 += MR) {
		int m = rows - i0 < MR ? rows - i0 : MR;
		int nn = n - n0 < NVMAX * VL ? n - n0 : NVMAX * VL;
		int nv = (nn + VL - 1) / VL, tail = nn % VL != 0, K = n - n0;
		float *cc = c + (size_t)i0 * ldc + n0;
		const float *aa = a + (size_t)i0 * ars + (size_t)n0 * aks;
		const float *bb = b + (size_t)n0 * ldb + n0;
#define ATT_MK(M, NV)                                                                        \
	case NV:                                                                             \
		if (tail)                                                                    \
			att_mk_tri(cc, ldc, aa, ars, aks, bb, ldb, nn, K, M, NV, 1);         \
		else                                                                         \
			att_mk_tri(cc, ldc, aa, ars, aks, bb, ldb, nn, K, M, NV, 0);         \
		break;
		ATT_DISPATCH(m)
#undef ATT_MK
	}
}
#undef ATT_DISPATCH
#undef ATT_M
#else
#define MR 4
/* plain loops: each output sums its terms in order (no FMA contraction in C11 mode) */
static void att_mm(float *c, size_t ldc, const float *a, size_t ars, size_t aks,
		   const float *b, size_t ldb, int m, int n, int K, float alpha)
{
	for (int r = 0; r < m; r++) {
		float *cr = c + (size_t)r * ldc;
		for (int j = 0; j < n; j++)
			cr[j] = 0.0f;
		for (int k = 0; k < K; k++) {
			float ak = a[(size_t)r * ars + (size_t)k * aks];
			const float *bk = b + (size_t)k * ldb;
			for (int j = 0; j < n; j++)
				cr[j] += ak * bk[j];
		}
		for (int j = 0; j < n; j++)
			cr[j] *= alpha;
	}
}

/* c [r][j] = sum_{j <= k < n} a(r, k) b [k][j]: the terms k < j are zero and skipped */
static void att_mm_tri(float *c, size_t ldc, const float *a, size_t ars, size_t aks,
		       const float *b, size_t ldb, int rows, int n)
{
	for (int r = 0; r < rows; r++) {
		float *cr = c + (size_t)r * ldc;
		for (int j = 0; j < n; j++)
			cr[j] = 0.0f;
		for (int k = 0; k < n; k++) {
			float ak = a[(size_t)r * ars + (size_t)k * aks];
			const float *bk = b + (size_t)k * ldb;
			for (int j = 0; j <= k; j++)
				cr[j] += ak * bk[j];
		}
	}
}
#endif

/* row [0..t] = softmax(row [0..t]), row (t..T) = 0 */
static void att_softmax_row(float *row, int t, int T)
{
	int n = t + 1, j;
	vf mx = vset1(-INFINITY);
	for (j = 0; j + VL <= n; j += VL)
		mx = vmax(mx, vloadu(row + j));
	if (j < n)
		mx = vmax(mx, vload_n(row + j, n - j, -INFINITY));
	float m = vhmax(mx);
	vf mv = vset1(m), sum = vzero();
	for (j = 0; j + VL <= n; j += VL) {
		vf e = vexp_nonpos(vsub(vloadu(row + j), mv));
		vstoreu(row + j, e);
		sum = vadd(sum, e);
	}
	if (j < n) {
		vf e = vkeep_n(vexp_nonpos(vsub(vload_n(row + j, n - j, m), mv)), n - j);
		vstore_n(row + j, e, n - j);
		sum = vadd(sum, e);
	}
	vf inv = vset1(1.0f / vhsum(sum));
	for (j = 0; j + VL <= n; j += VL)
		vstoreu(row + j, vmul(vloadu(row + j), inv));
	if (j < n)
		vstore_n(row + j, vmul(vload_n(row + j, n - j, 0.0f), inv), n - j);
	for (j = n; j + VL <= T; j += VL)
		vstoreu(row + j, vzero());
	if (j < T)
		vstore_n(row + j, vzero(), T - j);
}

/* dr [j] = scale p [j] (dr [j] - <p, dr>) for j <= t, zero for t < j < kn */
static void att_softmax_bwd_row(float *dr, const float *p, int t, int kn, float scale)
{
	int n = t + 1, j;
	vf dot = vzero();
	for (j = 0; j + VL <= n; j += VL)
		dot = vfmadd(vloadu(p + j), vloadu(dr + j), dot);
	if (j < n)
		dot = vfmadd(vload_n(p + j, n - j, 0.0f), vload_n(dr + j, n - j, 0.0f), dot);
	vf dv = vset1(vhsum(dot)), sc = vset1(scale);
	for (j = 0; j + VL <= n; j += VL)
		vstoreu(dr + j, vmul(vmul(sc, vloadu(p + j)), vsub(vloadu(dr + j), dv)));
	if (j < n)
		vstore_n(dr + j,
			 vmul(vmul(sc, vload_n(p + j, n - j, 0.0f)),
			      vsub(vload_n(dr + j, n - j, 0.0f), dv)),
			 n - j);
	for (j = n; j + VL <= kn; j += VL)
		vstoreu(dr + j, vzero());
	if (j < kn)
		vstore_n(dr + j, vzero(), kn - j);
}

/* The rows t0..t0+m-1 of a block (rows lds apart) at once, each as att_softmax_row, when
 * m is MR: a row's maximum, sum and division are a chain of reductions; MR independent
 * chains in flight instead of one. Each row's operations are att_softmax_row's in the
 * same order (the vectors every row has whole, then the row's own), so the same bits. */
static void att_softmax_rows(float *s, size_t lds, int t0, int m, int T)
{
	if (m != MR) {
		for (int i = 0; i < m; i++)
			att_softmax_row(s + (size_t)i * lds, t0 + i, T);
		return;
	}
	const int jc = (t0 + 1) / VL * VL; /* the vectors every row has whole */
	vf mx[MR], sum[MR], mv[MR], inv[MR];
	float mf[MR];
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++)
		mx[i] = vset1(-INFINITY);
	for (int j = 0; j < jc; j += VL)
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++)
			mx[i] = vmax(mx[i], vloadu(s + (size_t)i * lds + j));
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++) {
		const float *row = s + (size_t)i * lds;
		int n = t0 + i + 1, j = jc;
		for (; j + VL <= n; j += VL)
			mx[i] = vmax(mx[i], vloadu(row + j));
		if (j < n)
			mx[i] = vmax(mx[i], vload_n(row + j, n - j, -INFINITY));
		mf[i] = vhmax(mx[i]);
		mv[i] = vset1(mf[i]);
		sum[i] = vzero();
	}
	for (int j = 0; j < jc; j += VL)
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			float *row = s + (size_t)i * lds;
			vf e = vexp_nonpos(vsub(vloadu(row + j), mv[i]));
			vstoreu(row + j, e);
			sum[i] = vadd(sum[i], e);
		}
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++) {
		float *row = s + (size_t)i * lds;
		int n = t0 + i + 1, j = jc;
		for (; j + VL <= n; j += VL) {
			vf e = vexp_nonpos(vsub(vloadu(row + j), mv[i]));
			vstoreu(row + j, e);
			sum[i] = vadd(sum[i], e);
		}
		if (j < n) {
			vf e = vkeep_n(vexp_nonpos(vsub(vload_n(row + j, n - j, mf[i]), mv[i])),
				       n - j);
			vstore_n(row + j, e, n - j);
			sum[i] = vadd(sum[i], e);
		}
		inv[i] = vset1(1.0f / vhsum(sum[i]));
	}
	for (int j = 0; j < jc; j += VL)
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			float *row = s + (size_t)i * lds;
			vstoreu(row + j, vmul(vloadu(row + j), inv[i]));
		}
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++) {
		float *row = s + (size_t)i * lds;
		int n = t0 + i + 1, j = jc;
		for (; j + VL <= n; j += VL)
			vstoreu(row + j, vmul(vloadu(row + j), inv[i]));
		if (j < n)
			vstore_n(row + j, vmul(vload_n(row + j, n - j, 0.0f), inv[i]), n - j);
		for (j = n; j + VL <= T; j += VL)
			vstoreu(row + j, vzero());
		if (j < T)
			vstore_n(row + j, vzero(), T - j);
	}
}

/* The rows t0..t0+m-1 of dS (rows ldd apart, P's ldp) at once, each as
 * att_softmax_bwd_row, when m is MR (MR dot products in flight); the same bits. */
static void att_softmax_bwd_rows(float *d, size_t ldd, const float *p, size_t ldp, int t0,
				 int m, int kn, float scale)
{
	if (m != MR) {
		for (int i = 0; i < m; i++)
			att_softmax_bwd_row(d + (size_t)i * ldd, p + (size_t)i * ldp, t0 + i, kn,
					    scale);
		return;
	}
	const int jc = (t0 + 1) / VL * VL;
	vf dot[MR], dv[MR];
	const vf sc = vset1(scale);
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++)
		dot[i] = vzero();
	for (int j = 0; j < jc; j += VL)
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++)
			dot[i] = vfmadd(vloadu(p + (size_t)i * ldp + j),
					vloadu(d + (size_t)i * ldd + j), dot[i]);
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++) {
		const float *pr = p + (size_t)i * ldp, *dr = d + (size_t)i * ldd;
		int n = t0 + i + 1, j = jc;
		for (; j + VL <= n; j += VL)
			dot[i] = vfmadd(vloadu(pr + j), vloadu(dr + j), dot[i]);
		if (j < n)
			dot[i] = vfmadd(vload_n(pr + j, n - j, 0.0f), vload_n(dr + j, n - j, 0.0f),
					dot[i]);
		dv[i] = vset1(vhsum(dot[i]));
	}
	for (int j = 0; j < jc; j += VL)
#pragma GCC unroll 8
		for (int i = 0; i < MR; i++) {
			float *dr = d + (size_t)i * ldd;
			vstoreu(dr + j, vmul(vmul(sc, vloadu(p + (size_t)i * ldp + j)),
					     vsub(vloadu(dr + j), dv[i])));
		}
#pragma GCC unroll 8
	for (int i = 0; i < MR; i++) {
		const float *pr = p + (size_t)i * ldp;
		float *dr = d + (size_t)i * ldd;
		int n = t0 + i + 1, j = jc;
		for (; j + VL <= n; j += VL)
			vstoreu(dr + j, vmul(vmul(sc, vloadu(pr + j)), vsub(vloadu(dr + j), dv[i])));
		if (j < n)
			vstore_n(dr + j,
				 vmul(vmul(sc, vload_n(pr + j, n - j, 0.0f)),
				      vsub(vload_n(dr + j, n - j, 0.0f), dv[i])),
				 n - j);
		for (j = n; j + VL <= kn; j += VL)
			vstoreu(dr + j, vzero());
		if (j < kn)
			vstore_n(dr + j, vzero(), kn - j);
	}
}

static void ATT_NAME(attn_fwd)(const eng_attn_head *h)
{
	int T = h->T, hs = h->hs;
	for (int r0 = 0; r0 < T; r0 += MR) {
		int m = T - r0 < MR ? T - r0 : MR, kn = r0 + m;
		float *s = h->att + (size_t)r0 * h->ldatt;
		/* s [r0.., 0..kn) = scale q k^T */
		att_mm(s, h->ldatt, h->q + (size_t)r0 * h->q_rs, h->q_rs, h->q_is, h->kt, h->ldkt,
		       m, kn, hs, h->scale);
		att_softmax_rows(s, h->ldatt, r0, m, T);
		/* o [r0..] = P v */
		att_mm(h->o + (size_t)r0 * h->ldo, h->ldo, s, h->ldatt, 1, h->v, h->ldv, m, hs, kn,
		       1.0f);
	}
}

static void ATT_NAME(attn_bwd)(const eng_attn_head *h)
{
	int T = h->T, hs = h->hs;
	for (int r0 = 0; r0 < T; r0 += MR) {
		int m = T - r0 < MR ? T - r0 : MR, kn = r0 + m;
		/* dS zeroed up to kz: to its vector's end when att_mm_tri reads it whole */
		int kz = h->dkt ? (kn + VL - 1) / VL * VL : kn;
		kz = kz < T ? kz : T;
		float *dr = h->ds + (size_t)r0 * h->ldds;
		/* dP = dout v^T, then through the softmax (scaled) */
		att_mm(dr, h->ldds, h->d + (size_t)r0 * h->d_rs, h->d_rs, h->d_is, h->vt, h->ldvt,
		       m, kn, hs, 1.0f);
		att_softmax_bwd_rows(dr, h->ldds, h->att + (size_t)r0 * h->ldatt, h->ldatt, r0, m,
				     kz, h->scale);
		/* dq = dS k */
		att_mm(h->dq + (size_t)r0 * h->lddq, h->lddq, dr, h->ldds, 1, h->k, h->ldk, m, hs,
		       kn, 1.0f);
	}
	if (h->dkt) {
		/* dv^T [i][j] = sum_{r >= j} dout [r][i] P [r][j], dk^T [i][j] = sum_{r >= j}
		 * q [r][i] dS [r][j]: the same terms in the same order
		 * as dv, dk below, the zero ones r < j skipped, so the same bits */
		att_mm_tri(h->dvt, h->lddvt, h->d, h->d_is, h->d_rs, h->att, h->ldatt, hs, T);
		att_mm_tri(h->dkt, h->lddkt, h->q, h->q_is, h->q_rs, h->ds, h->ldds, hs, T);
		return;
	}
	for (int j0 = 0; j0 < T; j0 += MR) {
		int m = T - j0 < MR ? T - j0 : MR, K = T - j0;
		/* dv [j] = sum_{r >= j0} P [r][j] dout [r], dk [j] = sum_{r >= j0} dS [r][j] q [r]
		 * (the terms r < j are zero: the softmax rows zeroed them) */
		att_mm(h->dv + (size_t)j0 * h->lddv, h->lddv, h->att + (size_t)j0 * h->ldatt + j0,
		       1, h->ldatt, h->d + (size_t)j0 * h->ldd, h->ldd, m, hs, K, 1.0f);
		att_mm(h->dk + (size_t)j0 * h->lddk, h->lddk, h->ds + (size_t)j0 * h->ldds + j0, 1,
		       h->ldds, h->qb + (size_t)j0 * h->ldqb, h->ldqb, m, hs, K, 1.0f);
	}
}
