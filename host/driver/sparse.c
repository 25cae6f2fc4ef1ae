/*
 * sparse.c - csd_sparse: a weight pattern in both stream orders (CSR for backward, CSC for
 * forward and wgrad) with the CSC -> CSR position map that puts wgrad results in CSR order.
 */
#include <stdlib.h>
#include <string.h>

#include "common/numerics.h"
#include "driver/csd.h"

void csd_sparse_free(csd_sparse *sp)
{
	if (!sp)
		return;
	free(sp->row_ptr);
	free(sp->col);
	free(sp->val);
	free(sp->col_ptr);
	free(sp->row);
	free(sp->cval);
	free(sp->csr_pos);
	memset(sp, 0, sizeof *sp);
}

int csd_sparse_from_dense(csd_sparse *sp, const float *w, const uint8_t *mask, int n_out,
			  int n_in)
{
	if (!sp || !w || n_out <= 0 || n_in <= 0)
		return CS_ERR_INVALID;
	memset(sp, 0, sizeof *sp);
	sp->n_out = n_out;
	sp->n_in = n_in;
	size_t total = (size_t)n_out * (size_t)n_in;
	int64_t nnz = 0;
	sp->row_ptr = malloc(((size_t)n_out + 1) * sizeof *sp->row_ptr);
	sp->col_ptr = calloc((size_t)n_in + 1, sizeof *sp->col_ptr);
	if (!sp->row_ptr || !sp->col_ptr)
		goto out_nomem;
	/* pass 1: count per row and per column */
	for (int i = 0; i < n_out; i++) {
		sp->row_ptr[i] = nnz;
		const float *wr = w + (size_t)i * n_in;
		const uint8_t *mr = mask ? mask + (size_t)i * n_in : NULL;
		for (int j = 0; j < n_in; j++) {
			int keep = mr ? mr[j] != 0 : (nm_bf16_from_f32(wr[j]) & 0x7fffu) != 0;
			if (keep) {
				nnz++;
				sp->col_ptr[j + 1]++;
			}
		}
	}
	sp->row_ptr[n_out] = nnz;
	sp->nnz = nnz;
	(void)total;
	size_t n = (size_t)(nnz ? nnz : 1);
	sp->col = malloc(n * sizeof *sp->col);
	sp->val = malloc(n * sizeof *sp->val);
	sp->row = malloc(n * sizeof *sp->row);
	sp->cval = malloc(n * sizeof *sp->cval);
	sp->csr_pos = malloc(n * sizeof *sp->csr_pos);
	int64_t *next = malloc(((size_t)n_in + 1) * sizeof *next);
	if (!sp->col || !sp->val || !sp->row || !sp->cval || !sp->csr_pos || !next) {
		free(next);
		goto out_nomem;
	}
	for (int j = 0; j < n_in; j++)
		sp->col_ptr[j + 1] += sp->col_ptr[j];
	memcpy(next, sp->col_ptr, ((size_t)n_in + 1) * sizeof *next);
	/* pass 2: fill CSR, and CSC by rows ascending (scanning rows in order) */
	int64_t k = 0;
	for (int i = 0; i < n_out; i++) {
		const float *wr = w + (size_t)i * n_in;
		const uint8_t *mr = mask ? mask + (size_t)i * n_in : NULL;
		for (int j = 0; j < n_in; j++) {
			uint16_t v = nm_bf16_from_f32(wr[j]);
			int keep = mr ? mr[j] != 0 : (v & 0x7fffu) != 0;
			if (!keep)
				continue;
			sp->col[k] = j;
			sp->val[k] = v;
			int64_t c = next[j]++;
			sp->row[c] = i;
			sp->cval[c] = v;
			sp->csr_pos[c] = k;
			k++;
		}
	}
	free(next);
	return CS_OK;
out_nomem:
	csd_sparse_free(sp);
	return CS_ERR_NO_MEM;
}

int csd_sparse_update_values(csd_sparse *sp, const float *w)
{
	if (!sp || !w || !sp->row_ptr)
		return CS_ERR_INVALID;
	for (int i = 0; i < sp->n_out; i++)
		for (int64_t k = sp->row_ptr[i]; k < sp->row_ptr[i + 1]; k++)
			sp->val[k] = nm_bf16_from_f32(w[(size_t)i * sp->n_in + sp->col[k]]);
	for (int64_t c = 0; c < sp->nnz; c++)
		sp->cval[c] = sp->val[sp->csr_pos[c]];
	return CS_OK;
}
