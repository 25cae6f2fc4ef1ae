/*
 * fuzz_spstate.c - libFuzzer target: the sparsity-state loader (host/sparsity/checkpoint.c,
 * sp_state_load_buf) against a fixed RigL state of a small GPT. Any input must load or be
 * refused with a message. The loader checks the CRC-32 trailer before the body, so each
 * input is also loaded with its trailer recomputed: mutations then reach the body's parser.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_crc32.h"
#include "common/cs_error.h"
#include "sparsity/sparsity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The state inputs are loaded into (also used to write the seed corpus). */
sp_state *fuzz_spstate_make(void);

sp_state *fuzz_spstate_make(void)
{
	static sp_state *st;
	static sp_param p[64];
	static sp_gpt_tensor tab[64];
	if (st)
		return st;
	sp_gpt_dims d = { 1, 2, 16, 8, 32 };
	int n = sp_gpt_tensors(&d, tab, 64);
	for (int i = 0; i < n; i++) {
		p[i] = (sp_param){ .name = tab[i].name, .ndim = tab[i].ndim,
				   .shape = { tab[i].shape[0], tab[i].shape[1] },
				   .numel = tab[i].numel };
		p[i].w = calloc(p[i].numel, sizeof(float));
		p[i].grad = calloc(p[i].numel, sizeof(float));
		p[i].adam_m = calloc(p[i].numel, sizeof(float));
		p[i].adam_v = calloc(p[i].numel, sizeof(float));
		for (size_t k = 0; k < p[i].numel; k++)
			p[i].w[k] = (float)((k * 2654435761u) % 1000) / 1000.0f - 0.5f;
	}
	sp_config *cfg = NULL;
	char err[512];
	if (sp_config_load_string(&cfg, "fuzz.yaml",
				  "sparsity: {algorithm: rigl, sparsity: 0.8, update: {freq: 2}}",
				  err, sizeof err) ||
	    sp_create(&st, cfg, p, n, 1234, 10, err, sizeof err)) {
		fprintf(stderr, "fuzz_spstate: %s\n", err);
		abort();
	}
	return st; /* cfg lives as long as the state */
}

static void spstate_load_one(sp_state *st, const uint8_t *buf, size_t size)
{
	char err[512] = "";
	if (sp_state_load_buf(st, buf, size, err, sizeof err) != CS_OK && !err[0]) {
		fprintf(stderr, "fuzz_spstate: refused without a message\n");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sp_state *st = fuzz_spstate_make();
	spstate_load_one(st, data, size);
	if (size < 4)
		return 0;
	uint8_t *fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	uint32_t crc = cs_crc32(fixed, size - 4);
	for (int i = 0; i < 4; i++)
		fixed[size - 4 + i] = (uint8_t)(crc >> (8 * i));
	if (memcmp(fixed + size - 4, data + size - 4, 4))
		spstate_load_one(st, fixed, size);
	free(fixed);
	return 0;
}
