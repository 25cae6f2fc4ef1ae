/*
 * sp_test.h - shared helpers of the host/sparsity tests (header-only so that each test
 * binary stays self-contained): a tiny GPT parameter set with deterministic values, a fake
 * AdamW step that would move every entry (so masking bugs show), and the invariant checks.
 */
#ifndef SP_TEST_H
#define SP_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparsity/sp_internal.h"
#include "sparsity/sparsity.h"

typedef struct tmodel {
	int n;
	sp_gpt_tensor *tab;
	sp_param *p;
	uint64_t rng;
} tmodel;

static inline uint64_t t_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline float t_randf(uint64_t *s)
{
	return (float)((double)(t_rand(s) >> 11) * 0x1p-53 * 2.0 - 1.0);
}

/* A GPT of the given dims with weights U(-1,1) from `seed`; all buffers allocated. */
static inline tmodel *tmodel_new(int n_layer, int C, int V, int T, uint64_t seed)
{
	sp_gpt_dims d = { n_layer, 2, C, T, V };
	tmodel *m = calloc(1, sizeof *m);
	m->n = sp_gpt_tensors(&d, NULL, 0);
	m->tab = calloc((size_t)m->n, sizeof *m->tab);
	sp_gpt_tensors(&d, m->tab, m->n);
	m->p = calloc((size_t)m->n, sizeof *m->p);
	m->rng = seed;
	for (int i = 0; i < m->n; i++) {
		sp_param *p = &m->p[i];
		p->name = m->tab[i].name;
		p->ndim = m->tab[i].ndim;
		p->shape[0] = m->tab[i].shape[0];
		p->shape[1] = m->tab[i].shape[1];
		p->numel = m->tab[i].numel;
		p->w = malloc(p->numel * sizeof(float));
		p->grad = calloc(p->numel, sizeof(float));
		p->adam_m = calloc(p->numel, sizeof(float));
		p->adam_v = calloc(p->numel, sizeof(float));
		for (size_t k = 0; k < p->numel; k++)
			p->w[k] = t_randf(&m->rng);
	}
	return m;
}

static inline void tmodel_free(tmodel *m)
{
	for (int i = 0; i < m->n; i++) {
		free(m->p[i].w);
		free(m->p[i].grad);
		free(m->p[i].adam_m);
		free(m->p[i].adam_v);
	}
	free(m->p);
	free(m->tab);
	free(m);
}

/* Fake backward: dense gradient everywhere (pseudo-random, a function of rng state). */
static inline void tmodel_backward(tmodel *m)
{
	for (int i = 0; i < m->n; i++)
		for (size_t k = 0; k < m->p[i].numel; k++)
			m->p[i].grad[k] = t_randf(&m->rng);
}

/* Fake AdamW: moments move everywhere the gradient is, weight decay moves every weight. */
static inline void tmodel_adamw(tmodel *m)
{
	for (int i = 0; i < m->n; i++) {
		sp_param *p = &m->p[i];
		for (size_t k = 0; k < p->numel; k++) {
			float g = p->grad[k];
			p->adam_m[k] = 0.9f * p->adam_m[k] + 0.1f * g;
			p->adam_v[k] = 0.999f * p->adam_v[k] + 0.001f * g * g;
			p->w[k] -= 0.01f * p->adam_m[k] / (sqrtf(p->adam_v[k]) + 1e-3f) +
				   0.001f * (p->w[k] + 0.05f);
		}
	}
}

static inline int tmodel_find(const tmodel *m, const char *name)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->p[i].name, name))
			return i;
	return -1;
}

static inline size_t count_mask(const uint8_t *mk, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += mk[i] != 0;
	return c;
}

/* No weight, gradient or moment nonzero outside the mask. */
static inline void check_masked(const tmodel *m, const sp_state *st)
{
	for (int i = 0; i < m->n; i++) {
		const uint8_t *mk = sp_mask(st, i);
		if (!mk)
			continue;
		const sp_param *p = &m->p[i];
		for (size_t k = 0; k < p->numel; k++) {
			if (mk[k])
				continue;
			if (p->w[k] != 0 || p->grad[k] != 0 || p->adam_m[k] != 0 || p->adam_v[k] != 0) {
				fail_msg("%s[%zu] outside the mask: w %g g %g m %g v %g", p->name, k,
					 p->w[k], p->grad[k], p->adam_m[k], p->adam_v[k]);
			}
		}
	}
}

/* Run a config through `steps` iterations. hook(step, ...) is called after each update. */
static inline sp_config *load_cfg(const char *yaml)
{
	char err[512] = "";
	sp_config *cfg = NULL;
	int rc = sp_config_load_string(&cfg, "t.yaml", yaml, err, sizeof err);
	if (rc)
		fail_msg("config did not parse: %s", err);
	return cfg;
}

static inline sp_state *make_state(const sp_config *cfg, tmodel *m, long total)
{
	char err[512] = "";
	sp_state *st = NULL;
	int rc = sp_create(&st, cfg, m->p, m->n, 1234, total, err, sizeof err);
	if (rc)
		fail_msg("sp_create: %d %s", rc, err);
	return st;
}

/* One training iteration in the documented order. Returns sp_after_optimizer's value. */
static inline int train_step(tmodel *m, sp_state *st, long step)
{
	tmodel_backward(m);
	assert_int_equal(sp_mask_grads(st, step), 0);
	if (!sp_skip_optimizer(st, step))
		tmodel_adamw(m);
	int rc = sp_after_optimizer(st, step);
	assert_true(rc >= 0);
	return rc;
}

#endif
