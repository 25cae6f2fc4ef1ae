/*
 * distribution.c - layer-wise sparsity for a group target s: uniform, Erdos-Renyi (ER) and
 * Erdos-Renyi-Kernel (ERK), spec section 1.5. ERK: raw_l = (sum dims / prod dims)^p; solve
 * eps so that eps * sum_{l not in D} raw_l N_l = sum_{l not in D} (N_l - zeros_l) -
 * sum_{l in D} zeros_l with zeros_l = floor(s N_l + 0.5); while some eps*raw_l > 1 move every
 * layer with the maximal raw into D and solve again. Layers forced dense (dense_layers) start
 * in D, so their share of zeros is carried by the others (ER/ERK); uniform just makes them 0.
 */
#include <math.h>
#include <stdlib.h>

#include "sparsity/sp_internal.h"

static double raw_density(int dist, double power, int ndim, const int *shape)
{
	if (dist == SP_DIST_ER) {
		/* (n_in + n_out) / (n_in * n_out) over the last two dims */
		if (ndim < 2)
			return 1.0;
		double a = shape[ndim - 2], b = shape[ndim - 1];
		return (a + b) / (a * b);
	}
	double sum = 0, prod = 1;
	for (int i = 0; i < ndim; i++) {
		sum += shape[i];
		prod *= shape[i];
	}
	return pow(sum / prod, power);
}

int sp_distribute(int dist, double power, double s, int n, const int *ndim, const int (*shape)[4],
		  const size_t *numel, const int *forced, double *out)
{
	if (dist == SP_DIST_UNIFORM || s <= 0) {
		for (int i = 0; i < n; i++)
			out[i] = forced[i] || s <= 0 ? 0.0 : s;
		return 0;
	}
	int *dense = calloc((size_t)n + 1, sizeof *dense);
	double *raw = calloc((size_t)n + 1, sizeof *raw);
	if (!dense || !raw) {
		free(dense);
		free(raw);
		return CS_ERR_NO_MEM;
	}
	for (int i = 0; i < n; i++) {
		dense[i] = forced[i];
		raw[i] = raw_density(dist, power, ndim[i], shape[i]);
	}
	double eps = 0;
	for (;;) {
		double lhs = 0, rhs = 0;
		int any = 0;
		for (int i = 0; i < n; i++) {
			double zeros = floor(s * (double)numel[i] + 0.5);
			if (dense[i]) {
				rhs -= zeros;
			} else {
				any = 1;
				rhs += (double)numel[i] - zeros;
				lhs += raw[i] * (double)numel[i];
			}
		}
		if (!any)
			break;
		eps = rhs / lhs;
		double maxr = -1;
		for (int i = 0; i < n; i++)
			if (!dense[i] && raw[i] > maxr)
				maxr = raw[i];
		if (eps * maxr <= 1.0)
			break;
		for (int i = 0; i < n; i++)
			if (!dense[i] && raw[i] == maxr)
				dense[i] = 1;
	}
	for (int i = 0; i < n; i++) {
		double d = dense[i] ? 1.0 : eps * raw[i];
		if (d < 0)
			d = 0;
		if (d > 1)
			d = 1;
		out[i] = 1.0 - d;
	}
	free(dense);
	free(raw);
	return 0;
}
