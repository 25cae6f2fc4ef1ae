/*
 * schedule.c - hyperparameter schedules (sparsity level, drop fraction) and update
 * schedules. t is the number of completed optimizer steps. The cycling index is state kept
 * by the caller (sp_state, checkpointed) and advanced once per update step.
 */
#include <math.h>
#include <stdlib.h>

#include "sparsity/sp_internal.h"

double sp_sched_value(const sp_sched *s, long t, int idx)
{
	double td = (double)t;
	switch (s->type) {
	case SP_SCHED_CONSTANT:
		return s->value;
	case SP_SCHED_LINEAR:
		return s->init + s->slope * td;
	case SP_SCHED_EXP:
		return s->final + (s->init - s->final) * exp(s->gamma * td);
	case SP_SCHED_POWER:
		return s->init * pow(s->beta, td);
	case SP_SCHED_COSINE: {
		double o = (s->init + s->minimum) / 2, a = s->init - o;
		return o + a * cos(M_PI * td / s->half_period);
	}
	case SP_SCHED_CYCLING:
		if (s->n_values <= 0)
			return 0;
		return s->values[((idx % s->n_values) + s->n_values) % s->n_values];
	case SP_SCHED_POLY: {
		double p = (td - s->begin) / (s->end - s->begin);
		if (s->end <= s->begin)
			p = td >= s->begin ? 1 : 0;
		if (p < 0)
			p = 0;
		if (p > 1)
			p = 1;
		return s->final + (s->initial - s->final) * pow(1 - p, s->power);
	}
	default:
		return 0;
	}
}

int sp_update_at(const sp_update *u, long t)
{
	if (u->n_steps > 0) {
		for (int i = 0; i < u->n_steps; i++)
			if (u->steps[i] == t)
				return 1;
		return 0;
	}
	if (t < u->start || (u->stop >= 0 && t >= u->stop))
		return 0;
	return u->freq > 0 && (t - u->start) % u->freq == 0;
}

void sp_sched_free(sp_sched *s)
{
	free(s->values);
	s->values = NULL;
	s->n_values = 0;
}
