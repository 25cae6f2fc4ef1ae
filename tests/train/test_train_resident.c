/*
 * test_train_resident.c - host/train/train_resident.c: the GPT's blocks resident on the
 * device (docs/resident-step.md). A tiny model (2 layers, 4 heads, 2 x 16 tokens, C 32
 * and 64) with static random masks at 50% and 90% on every projection, biases and
 * layernorm parameters perturbed from their init, on 1x1, 2x2 and 4x4 meshes:
 *   - forward: logits and loss of the cpu backend equal the mesh model's (sim:...,model,
 *     the firmware running the vector programs) bit for bit;
 *   - backward: every gradient (nonzero dW, biases, layernorm parameters, embeddings)
 *     equal bit for bit, and equal to the step on an SRAM so small that the backward
 *     recomputes GELU's input instead of stashing it, and to the step with the 7 C stash
 *     (y rebuilt from z, GELU from the stashed pre-activation) on cpu and (where a power-of-two SRAM holds it but not the whole stash) the mesh model;
 *   - both close to the host's fp32 dense forward and backward of the same (masked)
 *     weights: the tolerances are stated at the checks, with why;
 *   - on the Verilated meshes (the sim backend's rtl engine): the forward and backward bit
 *     for bit with the cpu backend on the 2x2 pe mesh (the whole and the 7 C stash, 0 to
 *     90% sparse) and on the 4x4 pe mesh (1 layer, C 64, 6 x 64 tokens: the packed reads
 *     ride on kernels), there the cpu backend's cycle estimate of the step within 2% of the
 *     measured count, and on a 1x1 pe_lite mesh (the default bitstream's A, B 2048 words:
 *     its 512 hold no step);
 *   - the trainer with device.resident: true: six steps of a 50%-sparse model identical
 *     (losses and parameters) on cpu and the Verilated 2x2 pe mesh, their cycles estimated
 *     by the cpu backend within 2% of the measured count, the loss falling, the
 *     first loss close to the per-projection path's; two steps identical on cpu and the
 *     Verilated pe_lite mesh; a step that does not fit SRAM, pe_micro_mt and usb are
 *     config errors.
 * Seeds are fixed (11 for the weights, 99 for the tokens).
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
#include "driver/csd.h"
#include "train/gpt.h"
#include "train/train_device.h"
#include "train/train_resident.h"
#include "train_test_util.h"

static uint64_t rs = 1;
static double unif(void)
{
	rs = rs * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rs >> 11) / 9007199254740992.0;
}

enum { NL = 2, NH = 4, BB = 2, TT = 16, VV = 256 };

struct side {
	gpt m;
	train_device *td;
	train_resident *tr;
};

/* params of a model of width C: GPT-2 init, then biases and layernorm parameters moved off
 * their 0 / 1 so that the device's handling of each shows, masks applied (masked weights
 * zero, so the host's dense product is the sparse one). */
static void make_params(gpt *m, uint8_t **mask, double sparsity, uint64_t seed)
{
	gpt_init_params(m, seed);
	rs = seed * 0x9e3779b97f4a7c15ull + 3;
	for (int i = 0; i < m->num_tensors; i++) {
		gpt_tensor *t = &m->tensors[i];
		float *p = m->params_memory + t->offset;
		if (strstr(t->name, "ln") && strstr(t->name, "weight"))
			for (size_t k = 0; k < t->numel; k++)
				p[k] = (float)(0.8 + 0.4 * unif());
		else if (strstr(t->name, "bias"))
			for (size_t k = 0; k < t->numel; k++)
				p[k] = (float)(0.1 * unif() - 0.05);
		if (t->proj >= 0) {
			uint8_t *mk = mask[t->layer * GPT_NPROJ + t->proj];
			for (size_t k = 0; k < t->numel; k++) {
				mk[k] = unif() >= sparsity;
				if (!mk[k])
					p[k] = 0.0f;
			}
		}
	}
}

/* the layers of the models side_open_shape makes (NL but in test_rtl_full_4x4) */
static int n_layer = NL;

/* A model of width C, H heads, B x T tokens a step, on uri (NULL: the host only). */
static void side_open_shape(struct side *s, const char *uri, int C, int H, int B, int T,
			    uint8_t **mask, double sparsity, uint64_t seed)
{
	gpt_config cfg = { .n_layer = n_layer, .n_head = H, .n_embd = C, .block_size = T,
			   .vocab_size = VV };
	char err[512] = "";
	memset(s, 0, sizeof *s);
	assert_int_equal(gpt_create(&s->m, &cfg, B, T), CS_OK);
	make_params(&s->m, mask, sparsity, seed);
	if (!uri)
		return;
	int rc = td_dev_open(&s->td, uri, &s->m, NULL, err, sizeof err);
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, CS_OK);
	for (int l = 0; l < n_layer; l++)
		for (int p = 0; p < GPT_NPROJ; p++)
			assert_int_equal(td_dev_use_mask(s->td, l, p, mask[l * GPT_NPROJ + p]), CS_OK);
	rc = tr_open(&s->tr, s->td, &s->m, err, sizeof err);
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, CS_OK);
}

static void side_open(struct side *s, const char *uri, int C, uint8_t **mask, double sparsity,
		      uint64_t seed)
{
	side_open_shape(s, uri, C, NH, BB, TT, mask, sparsity, seed);
}

static void side_close(struct side *s)
{
	tr_close(s->tr);
	td_dev_close(s->td);
	gpt_free(&s->m);
}

static void ok(struct side *s, int rc)
{
	if (rc)
		print_error("%s\n", s->tr ? tr_last_error(s->tr) : "host");
	assert_int_equal(rc, CS_OK);
}

/* ||a - b|| / ||b|| over n entries where (mask == NULL or mask[i]) */
static double rel_err(const float *a, const float *b, const uint8_t *mask, size_t n)
{
	double num = 0.0, den = 0.0;
	for (size_t i = 0; i < n; i++) {
		if (mask && !mask[i])
			continue;
		double d = (double)a[i] - (double)b[i];
		num += d * d;
		den += (double)b[i] * b[i];
	}
	return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/*
 * Tolerances against the host's fp32 dense step. The device rounds every kernel operand to
 * bf16 (relative 2^-9 = 0.2%), the layernorm statistics and r to bf16, and GELU is a
 * 256-segment piecewise-linear table; each is a per-element relative error of a few 2^-9,
 * mostly uncorrelated, so sums over C or 4C terms stay at that level; the embeddings and
 * the last block's output cross the link as bf16 too. Observed (every mesh and sparsity
 * here): logits within 1.6e-3 of their range (9e-4 with those two in fp32), loss within
 * 6e-6 relative, every gradient tensor within 1.1e-2 in relative norm (the worst are the
 * layernorm weights, whose gradient sums z * dy over all tokens with both rounded).
 * Bounds: 5e-3 of the range for the logits, 1e-4 for the loss, 5e-2 for a gradient tensor,
 * 3x to 5x the observed; a layout or ordering bug (a wrong tile, a missed bias, a
 * transposed block) gives order-1 errors.
 */
#define TOL_LOGITS 5e-3
#define TOL_LOSS 1e-4
#define TOL_GRAD 5e-2

/* the cpu backend's cycle estimate of a whole step against the Verilated pe mesh's count */
#define STEP_CYCLES_TOL 0.02

static void step_case(int rows, int cols, int C, double sparsity)
{
	char uri[2][128];
	snprintf(uri[0], sizeof uri[0], "cpu:%dx%d,awords=65536,bwords=16384", rows, cols);
	snprintf(uri[1], sizeof uri[1], "sim:%dx%d,awords=65536,bwords=16384,model", rows, cols);
	uint8_t *mask[NL * GPT_NPROJ];
	for (int k = 0; k < NL * GPT_NPROJ; k++)
		mask[k] = malloc((size_t)4 * C * C);
	struct side s[6];
	uint64_t seed = 11;
	side_open(&s[0], uri[0], C, mask, sparsity, seed);
	side_open(&s[1], uri[1], C, mask, sparsity, seed);
	side_open(&s[2], NULL, C, mask, sparsity, seed); /* the host's fp32 dense step */
	/* the cpu backend with just the SRAM of the recomputing layout */
	uint64_t aw, bw;
	char uri_rec[128];
	tr_sram_need(NL, C, rows * cols, BB * TT, &aw, &bw);
	snprintf(uri_rec, sizeof uri_rec, "cpu:%dx%d,awords=%llu,bwords=16384", rows, cols,
		 (unsigned long long)aw);
	side_open(&s[3], uri_rec, C, mask, sparsity, seed);
	/* and with just the SRAM of the 7 C stash (y rebuilt from z, GELU from the stashed
	 * pre-activation) */
	char uri_sm[128];
	tr_sram_need_stash(NL, C, rows * cols, BB * TT, TR_SMALL, &aw, &bw);
	snprintf(uri_sm, sizeof uri_sm, "cpu:%dx%d,awords=%llu,bwords=16384", rows, cols,
		 (unsigned long long)aw);
	side_open(&s[4], uri_sm, C, mask, sparsity, seed);
	/* and on the mesh model, whose SRAM is a power of two: where that holds the 7 C stash
	 * but not the whole one */
	uint64_t aw2 = 1, awf, bwf;
	while (aw2 < aw)
		aw2 *= 2;
	tr_sram_need_stash(NL, C, rows * cols, BB * TT, TR_FULL, &awf, &bwf);
	int sim_sm = awf > aw2;
	snprintf(uri_sm, sizeof uri_sm, "sim:%dx%d,awords=%llu,bwords=16384,model", rows, cols,
		 (unsigned long long)aw2);
	side_open(&s[5], sim_sm ? uri_sm : NULL, C, mask, sparsity, seed);
	if (sim_sm)
		print_message("%dx%d C %d: the 7 C stash on %s\n", rows, cols, C, uri_sm);
	csd_info info;
	assert_int_equal(csd_get_info(td_dev_csd(s[1].td), &info), CS_OK);
	assert_string_equal(info.kind, "sim");
	int in[BB * TT], tg[BB * TT];
	rs = 99;
	for (int i = 0; i < BB * TT; i++) {
		in[i] = (int)(unif() * VV);
		tg[i] = (int)(unif() * VV);
	}
	float loss[3];
	ok(&s[0], tr_forward(s[0].tr, in, tg, BB, TT, &loss[0]));
	ok(&s[1], tr_forward(s[1].tr, in, tg, BB, TT, &loss[1]));
	ok(&s[2], gpt_forward(&s[2].m, in, tg, BB, TT, &loss[2]));
	float loss_rec, loss_sm;
	ok(&s[3], tr_forward(s[3].tr, in, tg, BB, TT, &loss_rec));
	assert_memory_equal(&loss[0], &loss_rec, sizeof(float));
	ok(&s[4], tr_forward(s[4].tr, in, tg, BB, TT, &loss_sm));
	assert_memory_equal(&loss[0], &loss_sm, sizeof(float));
	if (sim_sm) {
		ok(&s[5], tr_forward(s[5].tr, in, tg, BB, TT, &loss_sm));
		assert_memory_equal(&loss[0], &loss_sm, sizeof(float));
	}
	size_t nl = (size_t)BB * TT * VV;
	assert_memory_equal(s[0].m.acts.logits, s[1].m.acts.logits, nl * sizeof(float));
	assert_memory_equal(&loss[0], &loss[1], sizeof(float));
	double lo = 1e30, hi = -1e30, md = 0.0;
	for (size_t i = 0; i < nl; i++) {
		double h = s[2].m.acts.logits[i], d = fabs(s[0].m.acts.logits[i] - h);
		lo = h < lo ? h : lo;
		hi = h > hi ? h : hi;
		md = d > md ? d : md;
	}
	double el = md / (hi - lo), eloss = fabs(loss[0] - loss[2]) / loss[2];
	print_message("%dx%d C %d sparsity %.2f: loss %.6f (host %.6f, %.2e), logits max diff "
		      "%.2e of range %.3f (%.2e)\n", rows, cols, C, sparsity, loss[0], loss[2], eloss,
		      md, hi - lo, el);
	assert_true(el < TOL_LOGITS);
	assert_true(eloss < TOL_LOSS);

	for (int k = 0; k < 6; k++)
		gpt_zero_grad(&s[k].m);
	ok(&s[3], tr_backward(s[3].tr, 1.0f));
	ok(&s[4], tr_backward(s[4].tr, 1.0f));
	if (sim_sm)
		ok(&s[5], tr_backward(s[5].tr, 1.0f));
	ok(&s[0], tr_backward(s[0].tr, 1.0f));
	ok(&s[1], tr_backward(s[1].tr, 1.0f));
	ok(&s[2], gpt_backward(&s[2].m, 1.0f));
	assert_memory_equal(s[0].m.grads_memory, s[1].m.grads_memory,
			    s[0].m.num_params * sizeof(float));
	/* recomputing GELU's input in the backward changes no bit */
	assert_memory_equal(s[0].m.grads_memory, s[3].m.grads_memory,
			    s[0].m.num_params * sizeof(float));
	/* nor does the 7 C stash */
	assert_memory_equal(s[0].m.grads_memory, s[4].m.grads_memory,
			    s[0].m.num_params * sizeof(float));
	if (sim_sm)
		assert_memory_equal(s[0].m.grads_memory, s[5].m.grads_memory,
				    s[0].m.num_params * sizeof(float));
	double worst = 0.0;
	const char *wname = "";
	for (int i = 0; i < s[0].m.num_tensors; i++) {
		const gpt_tensor *t = &s[0].m.tensors[i];
		const uint8_t *mk = t->proj >= 0 ? mask[t->layer * GPT_NPROJ + t->proj] : NULL;
		double e = rel_err(s[0].m.grads_memory + t->offset, s[2].m.grads_memory + t->offset,
				   mk, t->numel);
		if (e > worst) {
			worst = e;
			wname = t->name;
		}
		if (e >= TOL_GRAD)
			print_error("%s: gradient %.3e from the host's\n", t->name, e);
		assert_true(e < TOL_GRAD);
	}
	print_message("  gradients: worst tensor %s %.2e from the host's\n", wname, worst);
	csd_counters c[2];
	for (int k = 0; k < 2; k++)
		assert_int_equal(csd_get_counters(td_dev_csd(s[k].td), &c[k]), CS_OK);
	assert_int_equal(c[0].link_bytes_out, c[1].link_bytes_out);
	assert_int_equal(c[0].link_bytes_in, c[1].link_bytes_in);
	for (int k = 0; k < 6; k++)
		side_close(&s[k]);
	for (int k = 0; k < NL * GPT_NPROJ; k++)
		free(mask[k]);
}

static void test_1x1(void **state)
{
	(void)state;
	step_case(1, 1, 32, 0.5);
	step_case(1, 1, 64, 0.9);
}

static void test_2x2(void **state)
{
	(void)state;
	step_case(2, 2, 32, 0.9);
	step_case(2, 2, 64, 0.5);
}

static void test_4x4(void **state)
{
	(void)state;
	step_case(4, 4, 32, 0.5);
	step_case(4, 4, 64, 0.9);
}

/*
 * The step on the Verilated meshes (the sim backend's rtl engine) against the cpu backend
 * of the same shape and SRAM sizes: logits, loss and every gradient bit for bit, the same
 * link words. H heads, B x T tokens; the layout (whole or 7 C stash) is the one tr_open
 * picks for the sizes. Prints the measured cycles next to the cpu backend's estimate (the
 * estimate has pe's timing, 7.1 of docs/architecture.md).
 */
static void rtl_case(const char *cpu_uri, const char *sim_uri, int C, int H, int B, int T,
		     double sparsity, int check_cycles)
{
	uint8_t *mask[NL * GPT_NPROJ];
	for (int k = 0; k < NL * GPT_NPROJ; k++)
		mask[k] = malloc((size_t)4 * C * C);
	struct side s[2];
	side_open_shape(&s[0], cpu_uri, C, H, B, T, mask, sparsity, 11);
	side_open_shape(&s[1], sim_uri, C, H, B, T, mask, sparsity, 11);
	csd_info info;
	assert_int_equal(csd_get_info(td_dev_csd(s[1].td), &info), CS_OK);
	assert_string_equal(info.kind, "sim");
	int *in = malloc(sizeof(int) * (size_t)B * T), *tg = malloc(sizeof(int) * (size_t)B * T);
	rs = 99;
	for (int i = 0; i < B * T; i++) {
		in[i] = (int)(unif() * VV);
		tg[i] = (int)(unif() * VV);
	}
	float loss[2];
	for (int k = 0; k < 2; k++)
		ok(&s[k], tr_forward(s[k].tr, in, tg, B, T, &loss[k]));
	assert_memory_equal(s[0].m.acts.logits, s[1].m.acts.logits,
			    (size_t)B * T * VV * sizeof(float));
	assert_memory_equal(&loss[0], &loss[1], sizeof(float));
	for (int k = 0; k < 2; k++) {
		gpt_zero_grad(&s[k].m);
		ok(&s[k], tr_backward(s[k].tr, 1.0f));
	}
	assert_memory_equal(s[0].m.grads_memory, s[1].m.grads_memory,
			    s[0].m.num_params * sizeof(float));
	csd_counters c[2];
	for (int k = 0; k < 2; k++)
		assert_int_equal(csd_get_counters(td_dev_csd(s[k].td), &c[k]), CS_OK);
	assert_int_equal(c[0].link_bytes_out, c[1].link_bytes_out);
	assert_int_equal(c[0].link_bytes_in, c[1].link_bytes_in);
	/* the rtl engine counts the cycles it ran (the model engine none) */
	assert_true(c[1].cycles > 0);
	uint64_t aw, bw, awf, bwf;
	tr_sram_need_stash(n_layer, C, info.pes, B * T, TR_FULL, &awf, &bwf);
	tr_sram_need(n_layer, C, info.pes, B * T, &aw, &bw);
	print_message("%s C %d, %d x %d tokens, sparsity %.2f (%s stash): loss %.6f, forward + "
		      "backward %llu cycles measured, cpu estimate %llu (%+.1f%%)\n", sim_uri, C,
		      B, T, sparsity, awf <= info.a_words ? "whole" : "7 C", loss[0],
		      (unsigned long long)c[1].cycles, (unsigned long long)c[0].cycles,
		      100.0 * ((double)c[0].cycles / (double)c[1].cycles - 1.0));
	/* on pe the estimate follows the mesh call by call (transfers and vector programs
	 * exact, kernels within 2%: tests/driver/test_estimate.c), so the whole step does */
	if (check_cycles)
		assert_true(fabs((double)c[0].cycles / (double)c[1].cycles - 1.0) <= STEP_CYCLES_TOL);
	for (int k = 0; k < 2; k++)
		side_close(&s[k]);
	free(in);
	free(tg);
	for (int k = 0; k < NL * GPT_NPROJ; k++)
		free(mask[k]);
}

/* pe (full) on the 2x2 default build: the whole stash at 0, 50 and 90%, and the 7 C one
 * (4 x 16 tokens of C 64 do not fit 16384 elements of A with the whole stash) at 50 and
 * 90%; the cpu estimate of each step within STEP_CYCLES_TOL of the measured cycles */
static void test_rtl_full_2x2(void **state)
{
	(void)state;
	rtl_case("cpu:2x2", "sim:2x2", 32, NH, BB, TT, 0.5, 1);
	rtl_case("cpu:2x2", "sim:2x2", 32, NH, BB, TT, 0.0, 1);
	rtl_case("cpu:2x2", "sim:2x2", 32, NH, BB, TT, 0.9, 1);
	rtl_case("cpu:2x2", "sim:2x2", 64, NH, 4, TT, 0.9, 1);
	rtl_case("cpu:2x2", "sim:2x2", 64, NH, 4, TT, 0.5, 1);
}

/* pe on the 4x4 default build, where the packed rows a kernel reads up lie in B's second
 * bank (1 layer, C 64, 6 x 64 tokens: 24 a PE), so that the step carries those reads: v1's
 * during proj's first half, group 1's output by halves during proj's quarters, the last
 * block's output by pieces during fc2's last column block (docs/resident-step.md), besides
 * the embeddings and the output's gradient by parts */
static void test_rtl_full_4x4(void **state)
{
	(void)state;
	n_layer = 1;
	rtl_case("cpu:4x4", "sim:4x4", 64, NH, 6, 64, 0.9, 1);
	n_layer = NL;
}

/* pe_lite, 1x1. The default bitstream's B (512 words) holds no resident step: the GELU
 * tables (512 words), the scratch (260) and the parameter block (16) alone take 788.
 * 2048 words (its A, 32768 elements, unchanged) hold a 2-layer model of C 16 and 16 tokens,
 * kept that small because a pe_lite step takes about 11 times pe's cycles. */
static void test_rtl_lite_1x1(void **state)
{
	(void)state;
	uint64_t aw, bw;
	tr_sram_need(NL, 2, 1, 1, &aw, &bw);
	assert_true(bw > 512);
	rtl_case("cpu:1x1,pe=lite,bwords=2048", "sim:1x1,pe=lite,bwords=2048", 16, 2, 1, TT, 0.5,
		 0);
}

/* A step that does not fit SRAM is a clear error naming the sizes. */
static void test_too_small(void **state)
{
	(void)state;
	gpt m;
	gpt_config cfg = { .n_layer = NL, .n_head = NH, .n_embd = 64, .block_size = TT,
			   .vocab_size = VV };
	char err[512] = "";
	train_device *td;
	train_resident *tr = NULL;
	assert_int_equal(gpt_create(&m, &cfg, BB, TT), CS_OK);
	gpt_init_params(&m, 1);
	assert_int_equal(td_dev_open(&td, "cpu:1x1,awords=16384,bwords=8192", &m, NULL, err,
				     sizeof err), CS_OK);
	assert_int_equal(tr_open(&tr, td, &m, err, sizeof err), CS_ERR_RANGE);
	print_message("%s\n", err);
	assert_non_null(strstr(err, "need awords >= "));
	uint64_t aw, bw;
	tr_sram_need(NL, 64, 1, BB * TT, &aw, &bw);
	char want[64];
	snprintf(want, sizeof want, "awords >= %llu and bwords >= %llu", (unsigned long long)aw,
		 (unsigned long long)bw);
	assert_non_null(strstr(err, want));
	td_dev_close(td);
	gpt_free(&m);
}

/* ---- the trainer ------------------------------------------------------------------------ */

static char tdir[64], tcfg[256], terr[1024];

/* The reference trainer model: 2 layers, C 32, 4 heads, 2 x 16 tokens */
#define TMODEL "n_layer: 2, n_head: 4, n_embd: 32, block_size: 16"
/* the tiny one pe_lite runs: C 16, 2 heads, 1 x 16 tokens */
#define TMODEL_LITE "n_layer: 2, n_head: 2, n_embd: 16, block_size: 16"

static void write_cfg_model(const char *kind, const char *mesh, const char *pe, int awords,
			    int bwords, const char *model, int batch)
{
	char text[1024], corpus[128];
	snprintf(corpus, sizeof corpus, "%s/corpus.txt", tdir);
	snprintf(text, sizeof text,
		 "run: {name: r, out_dir: %s/runs, seed: 9}\n"
		 "device: {kind: %s, mesh: %s, pe: %s, awords: %d, bwords: %d, resident: true}\n"
		 "model: {%s, vocab_size: 256}\n"
		 "data: {path: %s, val_fraction: 0.1}\n"
		 "train: {steps: 6, batch_size: %d, lr: 1.0e-2, min_lr: 1.0e-3, warmup_steps: 1,\n"
		 "        eval_every: 0, ckpt_every: 0, sample_tokens: 0}\n"
		 "sparsity: {algorithm: static, init_method: random, sparsity: 0.5}\n",
		 tdir, kind, mesh, pe, awords, bwords, model, corpus, batch);
	tt_write(tcfg, text);
}

static void write_cfg(const char *kind, const char *mesh, int awords, int bwords)
{
	write_cfg_model(kind, mesh, "full", awords, bwords, TMODEL, 2);
}

enum { NSTEP = 6 };

/* n trainer steps: each step's loss, a digest of the parameters after the last (FNV-1a
 * over their bits), the device's measured (sim) or estimated (cpu) cycles */
static int run_steps(char *const *ov, int nov, float *loss, int n, int resident_want,
		     uint64_t *cycles, uint64_t *digest)
{
	trainer t;
	int rc = tt_make_trainer(&t, tcfg, ov, nov, terr, sizeof terr);
	if (rc)
		return rc;
	assert_int_equal(t.res != NULL, resident_want);
	uint64_t cyc = 0;
	for (int i = 0; i < n && !rc; i++) {
		train_step_stats st;
		rc = trainer_step(&t, &st, terr, sizeof terr);
		if (rc)
			print_error("%s\n", terr);
		loss[i] = st.loss;
		cyc += st.device_cycles;
	}
	if (cycles)
		*cycles = cyc;
	if (digest) {
		const unsigned char *b = (const unsigned char *)t.model.params_memory;
		uint64_t h = 0xcbf29ce484222325ull;
		for (size_t i = 0; i < t.model.num_params * sizeof(float); i++)
			h = (h ^ b[i]) * 0x100000001b3ull;
		*digest = h;
	}
	trainer_free(&t);
	return rc;
}

/* The config that must fail and the text its error must hold. */
static void expect_config_error(char *const *ov, int nov, const char *want)
{
	trainer t;
	assert_int_equal(tt_make_trainer(&t, tcfg, ov, nov, terr, sizeof terr), CS_ERR_CONFIG);
	print_message("%s\n", terr);
	if (!strstr(terr, want))
		print_error("want '%s' in the error\n", want);
	assert_non_null(strstr(terr, want));
}

static void test_trainer_steps(void **state)
{
	(void)state;
	snprintf(tdir, sizeof tdir, "%s", tt_mkdtemp());
	char p[128];
	snprintf(p, sizeof p, "%s/corpus.txt", tdir);
	tt_corpus(p, 30000);
	snprintf(tcfg, sizeof tcfg, "%s/cfg.yaml", tdir);
	/* the 2x2 pe mesh at its default SRAM sizes: sim is the Verilated libmesh_2x2 */
	write_cfg("cpu", "2x2", 16384, 8192);
	float cpu[NSTEP], sim[NSTEP], off[NSTEP];
	uint64_t cyc[2], dg[2];
	assert_int_equal(run_steps(NULL, 0, cpu, NSTEP, 1, &cyc[0], &dg[0]), CS_OK);
	char *ov_sim[] = { "device.kind=sim" };
	assert_int_equal(run_steps(ov_sim, 1, sim, NSTEP, 1, &cyc[1], &dg[1]), CS_OK);
	char *ov_off[] = { "device.resident=false" };
	assert_int_equal(run_steps(ov_off, 1, off, NSTEP, 0, NULL, NULL), CS_OK);
	/* the parameters after the six steps, bit for bit */
	assert_int_equal(dg[0], dg[1]);
	for (int i = 0; i < NSTEP; i++) {
		print_message("step %d: loss resident cpu %.9g Verilated pe %.9g, per-projection "
			      "%.9g\n", i + 1, cpu[i], sim[i], off[i]);
		assert_memory_equal(&cpu[i], &sim[i], sizeof(float));
	}
	print_message("%d steps on the 2x2 pe mesh: %llu cycles measured, cpu estimate %llu "
		      "(%+.2f%%)\n", NSTEP, (unsigned long long)cyc[1], (unsigned long long)cyc[0],
		      100.0 * ((double)cyc[0] / (double)cyc[1] - 1.0));
	assert_true(cyc[1] > 0);
	assert_true(fabs((double)cyc[0] / (double)cyc[1] - 1.0) <= STEP_CYCLES_TOL);
	/* the first step's loss is the forward of the same weights: bf16 against bf16 with
	 * the device's layernorm and GELU (the test above: 1e-4); later steps part as the
	 * weights do */
	assert_true(fabsf(cpu[0] - off[0]) < 1e-4f * off[0]);
	assert_true(cpu[NSTEP - 1] < cpu[0] - 0.05f);

	/* pe_lite, 1x1, B 2048 words (test_rtl_lite_1x1): two steps */
	enum { NLITE = 2 };
	write_cfg_model("cpu", "1x1", "lite", 32768, 2048, TMODEL_LITE, 1);
	float lcpu[NLITE], lsim[NLITE];
	assert_int_equal(run_steps(NULL, 0, lcpu, NLITE, 1, &cyc[0], &dg[0]), CS_OK);
	assert_int_equal(run_steps(ov_sim, 1, lsim, NLITE, 1, &cyc[1], &dg[1]), CS_OK);
	assert_int_equal(dg[0], dg[1]);
	for (int i = 0; i < NLITE; i++) {
		print_message("step %d: loss resident cpu %.9g Verilated pe_lite %.9g\n", i + 1,
			      lcpu[i], lsim[i]);
		assert_memory_equal(&lcpu[i], &lsim[i], sizeof(float));
	}
	print_message("%d steps on the 1x1 pe_lite mesh: %llu cycles measured, cpu estimate "
		      "(pe timing) %llu\n", NLITE, (unsigned long long)cyc[1],
		      (unsigned long long)cyc[0]);
	/* the default bitstream's B holds no step: a config error naming the sizes */
	write_cfg_model("sim", "1x1", "lite", 32768, 512, TMODEL_LITE, 1);
	uint64_t aw, bw;
	tr_sram_need(2, 16, 1, 16, &aw, &bw);
	char want[96];
	snprintf(want, sizeof want, "need awords >= %llu and bwords >= %llu",
		 (unsigned long long)aw, (unsigned long long)bw);
	expect_config_error(NULL, 0, want);

	/* too small a device for the step: a config error naming the sizes */
	write_cfg("cpu", "1x1", 8192, 8192);
	tr_sram_need(2, 32, 1, 32, &aw, &bw);
	snprintf(want, sizeof want, "need awords >= %llu and bwords >= %llu",
		 (unsigned long long)aw, (unsigned long long)bw);
	expect_config_error(NULL, 0, "device.resident");
	expect_config_error(NULL, 0, want);
	/* pe_micro_mt has no vector group: a config error at device.pe, on sim and cpu */
	write_cfg_model("sim", "2x2", "micro_mt", 8192, 4096, TMODEL, 2);
	expect_config_error(NULL, 0, "device.pe: micro_mt cannot run the resident step");
	char *ov_cpu[] = { "device.kind=cpu" };
	expect_config_error(ov_cpu, 1, "device.pe: micro_mt cannot run the resident step");
	/* usb: its driver does not run vector programs */
	write_cfg("usb", "1x1", 0, 0);
	expect_config_error(NULL, 0, "device.resident: the usb backend");
	tt_rmdir(tdir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_1x1),
		cmocka_unit_test(test_2x2),
		cmocka_unit_test(test_4x4),
		cmocka_unit_test(test_rtl_full_2x2),
		cmocka_unit_test(test_rtl_full_4x4),
		cmocka_unit_test(test_rtl_lite_1x1),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_trainer_steps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
