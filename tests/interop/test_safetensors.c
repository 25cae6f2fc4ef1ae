/*
 * test_safetensors.c - host/interop/safetensors.c and hf_gpt2.c: a hand-built file with
 * known names and values (F32, F16, BF16, metadata), every malformed-header fault named,
 * the GPT-2 export (names, Conv1D transposes, masks, NaN, metadata) and its round trip
 * through model.init_from and trainer_load, a Hugging Face-style file without the
 * "transformer." prefix and with a tied lm_head, and the import's shape errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "interop/hf_gpt2.h"
#include "interop/safetensors.h"
#include "../train/train_test_util.h"

static char err[1024];

/* a file: 8-byte length, header text, data bytes */
static void write_raw(const char *path, const char *hdr, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	uint64_t l = strlen(hdr);
	fwrite(&l, 8, 1, f);
	fputs(hdr, f);
	fwrite(data, 1, n, f);
	fclose(f);
}

static void test_hand_built(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), p[128];
	snprintf(p, sizeof p, "%s/a.safetensors", dir);
	uint8_t data[16 + 4 + 4];
	float f32[4] = { 1.5f, -2.0f, 0.25f, 1e-3f };
	uint16_t f16[2] = { 0x3c00, 0xc000 };  /* 1.0, -2.0 */
	uint16_t bf16[2] = { 0x3fc0, 0x4049 }; /* 1.5, 3.140625 */
	memcpy(data, f32, 16);
	memcpy(data + 16, f16, 4);
	memcpy(data + 20, bf16, 4);
	write_raw(p,
		  "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"a\\u00e9\\n\"},"
		  "\"x.w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
		  " \"h\" : {\"shape\":[2],\"dtype\":\"F16\",\"data_offsets\":[16,20]},"
		  "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[20,24]}}   ",
		  data, sizeof data);
	assert_true(st_is_safetensors(p));
	st_file f;
	assert_int_equal(st_open(&f, p, err, sizeof err), CS_OK);
	assert_int_equal(f.n, 3);
	assert_string_equal(st_meta(&f, "format"), "pt");
	assert_string_equal(st_meta(&f, "note"), "a\xc3\xa9\n");
	const st_entry *e = st_find(&f, "x.w");
	assert_non_null(e);
	assert_int_equal(e->ndim, 2);
	assert_int_equal(e->shape[1], 2);
	float v[4];
	assert_int_equal(st_read_f32(&f, e, v, err, sizeof err), CS_OK);
	assert_memory_equal(v, f32, 16);
	assert_int_equal(st_read_f32(&f, st_find(&f, "h"), v, err, sizeof err), CS_OK);
	assert_true(v[0] == 1.0f && v[1] == -2.0f);
	assert_int_equal(st_read_f32(&f, st_find(&f, "b"), v, err, sizeof err), CS_OK);
	assert_true(v[0] == 1.5f && v[1] == 3.140625f);
	assert_null(st_find(&f, "nope"));
	st_close(&f);

	/* every fault is named */
	static const struct {
		const char *hdr, *want;
	} bad[] = {
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
		  "do not match shape" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[9],\"data_offsets\":[0,36]}}", "past the end" },
		{ "{\"a\":{\"dtype\":\"X9\",\"shape\":[1],\"data_offsets\":[0,4]}}", "unknown dtype" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		  "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", "overlap" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "needs dtype, shape and data_offsets" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":"
		  "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "appears twice" },
		{ "{\"a\":[1,2]}", "expected '{'" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "non-negative" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", "after the header" },
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		write_raw(p, bad[k].hdr, data, 24);
		assert_int_equal(st_open(&f, p, err, sizeof err), CS_ERR_FORMAT);
		if (!strstr(err, bad[k].want))
			printf("case %zu: %s\n", k, err);
		assert_non_null(strstr(err, bad[k].want));
		assert_non_null(strstr(err, "a.safetensors"));
	}
	/* a header length beyond the file */
	FILE *fp = fopen(p, "wb");
	uint64_t huge = 1u << 20;
	fwrite(&huge, 8, 1, fp);
	fputs("{}", fp);
	fclose(fp);
	assert_int_equal(st_open(&f, p, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "not a safetensors file"));
	assert_false(st_is_safetensors("/usr/share/games/fortunes/fortunes"));
	tt_rmdir(dir);
}

static void make_cfg(const char *dir, char *cfgp, const char *extra)
{
	char corpus[128], text[1024];
	snprintf(corpus, sizeof corpus, "%s/text", dir);
	tt_corpus(corpus, 20000);
	snprintf(cfgp, 128, "%s/cfg.yaml", dir);
	snprintf(text, sizeof text,
		 "run: {name: st, out_dir: %s/runs, seed: 3}\n"
		 "device: {kind: native}\n"
		 "model: {n_layer: 2, n_head: 2, n_embd: 16, block_size: 16, vocab_size: 256%s}\n"
		 "data: {path: %s, val_fraction: 0.1}\n"
		 "train: {steps: 4, batch_size: 2, eval_every: 0, ckpt_every: 0, sample_tokens: 0}\n"
		 "sparsity: {algorithm: static, init_method: random, sparsity: 0.75}\n",
		 dir, extra, corpus);
	tt_write(cfgp, text);
}

static void test_gpt2_round_trip(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), cfgp[128], out[128], out2[128];
	make_cfg(dir, cfgp, "");
	trainer t;
	assert_int_equal(tt_make_trainer(&t, cfgp, NULL, 0, err, sizeof err), CS_OK);
	for (int s = 0; s < 2; s++) {
		train_step_stats st;
		assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
	}
	snprintf(out, sizeof out, "%s/m.safetensors", dir);
	assert_int_equal(hf_gpt2_export(&t, out, HF_MASKS, err, sizeof err), CS_OK);
	st_file f;
	assert_int_equal(st_open(&f, out, err, sizeof err), CS_OK);
	assert_string_equal(st_meta(&f, "format"), "pt");
	assert_string_equal(st_meta(&f, "n_layer"), "2");
	assert_string_equal(st_meta(&f, "step"), "2");
	assert_non_null(st_meta(&f, "cshost.config"));
	/* c_attn is Conv1D: [C, 3C], the transpose of the model's [3C, C] */
	const st_entry *e = st_find(&f, "transformer.h.1.attn.c_attn.weight");
	assert_non_null(e);
	assert_int_equal(e->shape[0], 16);
	assert_int_equal(e->shape[1], 48);
	const gpt *m = &t.model;
	int qi = -1;
	for (int i = 0; i < m->num_tensors; i++)
		if (!strcmp(m->tensors[i].name, "h.1.attn.qkv.weight"))
			qi = i;
	assert_true(qi >= 0);
	const float *w = m->params_memory + m->tensors[qi].offset;
	float *hf = malloc(16 * 48 * sizeof *hf);
	assert_int_equal(st_read_f32(&f, e, hf, err, sizeof err), CS_OK);
	for (int r = 0; r < 48; r++)
		for (int c = 0; c < 16; c++)
			assert_true(hf[c * 48 + r] == w[r * 16 + c]);
	/* its mask: U8, same layout, 1 exactly where the weight is kept */
	const st_entry *me = st_find(&f, "transformer.h.1.attn.c_attn.weight_mask");
	assert_non_null(me);
	assert_string_equal(me->dtype, "U8");
	const uint8_t *mk = f.buf + f.data_off + me->begin;
	const uint8_t *tm = ts_mask(t.ts, qi);
	size_t kept = 0;
	for (int r = 0; r < 48; r++)
		for (int c = 0; c < 16; c++) {
			assert_int_equal(mk[c * 48 + r], tm[r * 16 + c] != 0);
			if (!tm[r * 16 + c])
				assert_true(hf[c * 48 + r] == 0.0f);
			kept += mk[c * 48 + r];
		}
	assert_true(kept > 48 * 16 / 8 && kept < 48 * 16 / 2);
	assert_null(st_find(&f, "lm_head.weight")); /* tied */
	assert_null(st_find(&f, "transformer.wte.weight_mask"));
	st_close(&f);
	/* NaN for the pruned entries, no masks */
	snprintf(out2, sizeof out2, "%s/nan.safetensors", dir);
	assert_int_equal(hf_gpt2_export(&t, out2, HF_NAN, err, sizeof err), CS_OK);
	assert_int_equal(st_open(&f, out2, err, sizeof err), CS_OK);
	assert_null(st_find(&f, "transformer.h.1.attn.c_attn.weight_mask"));
	assert_int_equal(st_read_f32(&f, st_find(&f, "transformer.h.1.attn.c_attn.weight"), hf,
				     err, sizeof err), CS_OK);
	for (int r = 0; r < 48; r++)
		for (int c = 0; c < 16; c++)
			assert_int_equal(isnan(hf[c * 48 + r]), !tm[r * 16 + c]);
	st_close(&f);
	free(hf);
	size_t P = m->num_params;
	float *params = malloc(P * sizeof *params);
	memcpy(params, m->params_memory, P * sizeof *params);
	trainer_free(&t);

	/* a run that starts from the export has the same weights */
	char ov[192];
	snprintf(ov, sizeof ov, "model.init_from=%s", out);
	char *ovs[] = { ov };
	assert_int_equal(tt_make_trainer(&t, cfgp, ovs, 1, err, sizeof err), CS_OK);
	assert_memory_equal(t.model.params_memory, params, P * sizeof *params);
	train_step_stats st;
	assert_int_equal(trainer_step(&t, &st, err, sizeof err), CS_OK);
	trainer_free(&t);
	/* and so does a trainer loading it as a checkpoint (sample / eval) */
	train_config cfg;
	assert_int_equal(trainer_config_from_ckpt(&cfg, out, NULL, 0, err, sizeof err), CS_OK);
	assert_int_equal(cfg.model.n_layer, 2);
	assert_int_equal(trainer_init(&t, &cfg, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_load(&t, out, err, sizeof err), CS_OK);
	assert_memory_equal(t.model.params_memory, params, P * sizeof *params);
	trainer_free(&t);
	/* a NaN (sideband) export is a starting point too: its NaNs read as the pruned zeros */
	snprintf(ov, sizeof ov, "model.init_from=%s", out2);
	assert_int_equal(tt_make_trainer(&t, cfgp, ovs, 1, err, sizeof err), CS_OK);
	assert_memory_equal(t.model.params_memory, params, P * sizeof *params);
	trainer_free(&t);
	/* but loading it as a checkpoint (weights as they are) still refuses the NaNs */
	assert_int_equal(trainer_config_from_ckpt(&cfg, out2, NULL, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_init(&t, &cfg, 0, err, sizeof err), CS_OK);
	assert_int_not_equal(trainer_load(&t, out2, err, sizeof err), CS_OK);
	assert_non_null(strstr(err, "NaN"));
	trainer_free(&t);
	/* the model's shape must fit the file's */
	char ov2[] = "model.n_layer=3";
	snprintf(ov, sizeof ov, "model.init_from=%s", out);
	char *ovs2[] = { ov, ov2 };
	assert_int_not_equal(tt_make_trainer(&t, cfgp, ovs2, 2, err, sizeof err), CS_OK);
	assert_non_null(strstr(err, "2 layers; model.n_layer is 3"));
	char ov3[] = "model.block_size=32";
	char *ovs3[] = { ov, ov3 };
	assert_int_not_equal(tt_make_trainer(&t, cfgp, ovs3, 2, err, sizeof err), CS_OK);
	assert_non_null(strstr(err, "wpe"));
	/* more vocabulary rows than the file: padding, zero */
	char ov4[] = "model.vocab_size=320";
	char *ovs4[] = { ov, ov4 };
	assert_int_equal(tt_make_trainer(&t, cfgp, ovs4, 2, err, sizeof err), CS_OK);
	assert_memory_equal(t.model.params_memory, params, 256 * 16 * sizeof(float));
	for (int k = 256 * 16; k < 320 * 16; k++)
		assert_true(t.model.params_memory[k] == 0.0f);
	trainer_free(&t);
	free(params);
	tt_rmdir(dir);
}

/* A file as Hugging Face writes GPT-2: no "transformer." prefix, lm_head stored tied. */
static void test_hf_style_file(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp(), cfgp[128], out[128], hfp[128];
	make_cfg(dir, cfgp, "");
	trainer t;
	assert_int_equal(tt_make_trainer(&t, cfgp, NULL, 0, err, sizeof err), CS_OK);
	snprintf(out, sizeof out, "%s/m.safetensors", dir);
	assert_int_equal(hf_gpt2_export(&t, out, 0, err, sizeof err), CS_OK);
	st_file f;
	assert_int_equal(st_open(&f, out, err, sizeof err), CS_OK);
	st_out *o = calloc((size_t)f.n + 1, sizeof *o);
	for (int k = 0; k < f.n; k++) {
		snprintf(o[k].name, sizeof o[k].name, "%s", f.e[k].name + 12); /* "transformer." */
		o[k].dtype = "F32";
		o[k].ndim = f.e[k].ndim;
		memcpy(o[k].shape, f.e[k].shape, sizeof o[k].shape);
		o[k].data = f.buf + f.data_off + f.e[k].begin;
		o[k].nbytes = f.e[k].end - f.e[k].begin;
	}
	const st_entry *wte = st_find(&f, "transformer.wte.weight");
	snprintf(o[f.n].name, sizeof o[f.n].name, "lm_head.weight");
	o[f.n].dtype = "F32";
	o[f.n].ndim = 2;
	o[f.n].shape[0] = wte->shape[0];
	o[f.n].shape[1] = wte->shape[1];
	o[f.n].data = f.buf + f.data_off + wte->begin;
	o[f.n].nbytes = wte->end - wte->begin;
	snprintf(hfp, sizeof hfp, "%s/hf.safetensors", dir);
	const char *meta[][2] = { { "format", "pt" } };
	assert_int_equal(st_write(hfp, o, f.n + 1, meta, 1, err, sizeof err), CS_OK);
	/* its config comes from the shapes: head size 64 gives one head at n_embd 16 */
	train_config cfg;
	char *ov[] = { "model.n_head=2" };
	assert_int_equal(trainer_config_from_ckpt(&cfg, hfp, ov, 1, err, sizeof err), CS_OK);
	assert_int_equal(cfg.model.n_layer, 2);
	assert_int_equal(cfg.model.n_embd, 16);
	assert_int_equal(cfg.model.block_size, 16);
	assert_int_equal(cfg.model.vocab_size, 256);
	trainer u;
	assert_int_equal(trainer_init(&u, &cfg, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_load(&u, hfp, err, sizeof err), CS_OK);
	assert_memory_equal(u.model.params_memory, t.model.params_memory,
			    t.model.num_params * sizeof(float));
	trainer_free(&u);
	/* an lm_head that is not wte is refused */
	float *bad = malloc(o[f.n].nbytes);
	memcpy(bad, o[f.n].data, o[f.n].nbytes);
	bad[5] += 1.0f;
	o[f.n].data = bad;
	assert_int_equal(st_write(hfp, o, f.n + 1, meta, 1, err, sizeof err), CS_OK);
	assert_int_equal(trainer_config_from_ckpt(&cfg, hfp, ov, 1, err, sizeof err), CS_OK);
	assert_int_equal(trainer_init(&u, &cfg, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_load(&u, hfp, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "untied"));
	trainer_free(&u);
	/* a missing tensor is named */
	o[3] = o[f.n];
	assert_int_equal(st_write(hfp, o, f.n - 1, meta, 1, err, sizeof err), CS_OK);
	free(bad);
	assert_int_equal(trainer_config_from_ckpt(&cfg, hfp, ov, 1, err, sizeof err), CS_OK);
	assert_int_equal(trainer_init(&u, &cfg, 0, err, sizeof err), CS_OK);
	assert_int_equal(trainer_load(&u, hfp, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "no tensor"));
	trainer_free(&u);
	free(o);
	st_close(&f);
	trainer_free(&t);
	tt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_built),
		cmocka_unit_test(test_gpt2_round_trip),
		cmocka_unit_test(test_hf_style_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
