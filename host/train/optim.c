/* optim.c - AdamW, clipping, schedule (see optim.h). */
#include "train/optim.h"

#include <math.h>

double lr_schedule(long s, long steps, long warmup, double lr, double min_lr)
{
	if (s < warmup)
		return lr * (double)(s + 1) / (double)warmup;
	long decay = steps - warmup;
	if (decay <= 1)
		return lr;
	double frac = (double)(s - warmup) / (double)(decay - 1);
	if (frac > 1.0)
		frac = 1.0;
	double coeff = 0.5 * (1.0 + cos(M_PI * frac));
	return min_lr + coeff * (lr - min_lr);
}

double grad_global_norm(const float *g, size_t n)
{
	double s = 0.0;
	for (size_t i = 0; i < n; i++)
		s += (double)g[i] * g[i];
	return sqrt(s);
}

void grad_scale(float *g, size_t n, float scale)
{
	for (size_t i = 0; i < n; i++)
		g[i] *= scale;
}

void adamw_update(float *w, float *m, float *v, const float *g, size_t n, float lr,
		  float beta1, float beta2, float eps, float wd, long t)
{
	float c1 = 1.0f / (1.0f - powf(beta1, (float)t));
	float c2 = 1.0f / (1.0f - powf(beta2, (float)t));
	for (size_t i = 0; i < n; i++) {
		float mi = beta1 * m[i] + (1.0f - beta1) * g[i];
		float vi = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
		m[i] = mi;
		v[i] = vi;
		float mhat = mi * c1, vhat = vi * c2;
		w[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * w[i]);
	}
}
