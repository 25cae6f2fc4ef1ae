/*
 * test_config.c - host/train/config.c: defaults, every documented key accepted, overrides,
 * and the errors: unknown section/key with the nearest valid key, bad values with the
 * allowed range or values, file:line:column, cross-key checks, YAML syntax errors, and the
 * resolved config reading back to the same values.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "sparsity/sparsity.h"
#include "train/config.h"
#include "train/gpt.h"
#include "train/train_sparsity.h"
#include "../support/repo_file.h"

static char err[1024];

static int load(train_config *c, const char *text, char *const *ov, int nov)
{
	err[0] = 0;
	int rc = tc_load(c, "cfg.yaml", text, ov, nov, err, sizeof err);
	if (rc)
		printf("error: %s\n", err);
	return rc;
}

/* Expect a config error whose message contains every given fragment. */
static void expect_error(const char *text, char *const *ov, int nov, const char *a,
			 const char *b)
{
	train_config c;
	assert_int_equal(load(&c, text, ov, nov), CS_ERR_CONFIG);
	if (!strstr(err, a) || (b && !strstr(err, b))) {
		fprintf(stderr, "message '%s' lacks '%s' / '%s'\n", err, a, b ? b : "");
		fail();
	}
	assert_null(strchr(err, '\n'));
}

static void test_defaults_and_issue_example(void **state)
{
	(void)state;
	train_config c;
	assert_int_equal(load(&c, "", NULL, 0), CS_OK);
	assert_string_equal(c.name, "tiny");
	assert_string_equal(c.device_kind, "sim");
	assert_int_equal(c.mesh_rows, 4);
	assert_int_equal(c.model.n_embd, 64);
	assert_int_equal(c.steps, 200);
	assert_true(c.lr == 3.0e-3 && c.beta2 == 0.95);
	assert_int_equal(c.sparsity_node, 0);
	assert_non_null(c.sparsity); /* no block: a dense sparsity config */
	assert_true(sp_config_is_dense(c.sparsity));
	tc_free(&c);
	const char *issue =
		"run:      {name: tiny, out_dir: runs, seed: 1234}\n"
		"device:   {kind: sim, mesh: 4x4}\n"
		"model:    {n_layer: 2, n_head: 4, n_embd: 64, block_size: 64, vocab_size: 256}\n"
		"data:     {path: /usr/share/games/fortunes, val_fraction: 0.05}\n"
		"train:    {steps: 200, batch_size: 8, grad_accum: 1, lr: 3.0e-3, min_lr: 3.0e-4,\n"
		"           warmup_steps: 20, weight_decay: 0.1, beta1: 0.9, beta2: 0.95, eps: "
		"1.0e-8,\n"
		"           grad_clip: 1.0, eval_every: 50, eval_batches: 8, ckpt_every: 100}\n"
		"sparsity: {type: static, sparsity: 0.8}\n";
	assert_int_equal(load(&c, issue, NULL, 0), CS_OK);
	assert_int_equal(c.seed, 1234);
	assert_true(c.eps == 1e-8);
	assert_int_not_equal(c.sparsity_node, 0);
	assert_int_equal(tc_dense_on_host(&c, 1), 0);
	tc_free(&c);
}

static void test_overrides(void **state)
{
	(void)state;
	train_config c;
	char *ov[] = { "train.steps=50", "device.kind=cpu", "model.n_layer=3",
		       "sparsity.sparsity=0.5", "device.dense_on_host=true" };
	assert_int_equal(load(&c, "train: {steps: 10}\n", ov, 5), CS_OK);
	assert_int_equal(c.steps, 50);
	assert_string_equal(c.device_kind, "cpu");
	assert_int_equal(c.model.n_layer, 3);
	assert_int_not_equal(c.sparsity_node, 0); /* created by the override */
	assert_int_equal(tc_dense_on_host(&c, 0), 1);
	char uri[32];
	tc_device_uri(&c, uri, sizeof uri);
	assert_string_equal(uri, "cpu:4x4");
	tc_free(&c);
	/* the board's SRAM sizes reach the device URI (usb: the shape is the bitstream's) */
	char *geom[] = { "device.mesh=1x1", "device.awords=32768", "device.bwords=512" };
	char uri2[96];
	assert_int_equal(load(&c, "device: {kind: cpu}\n", geom, 3), CS_OK);
	tc_device_uri(&c, uri2, sizeof uri2);
	assert_string_equal(uri2, "cpu:1x1,awords=32768,bwords=512");
	tc_free(&c);
	/* device.pe: the implementation (its bitstream's sizes unless awords/bwords say) */
	char *impl[] = { "device.kind=sim", "device.mesh=2x2", "device.pe=micro_mt" };
	assert_int_equal(load(&c, "", impl, 3), CS_OK);
	tc_device_uri(&c, uri2, sizeof uri2);
	assert_string_equal(uri2, "sim:2x2,pe=micro_mt");
	tc_free(&c);
	char *impl2[] = { "device.pe=lite", "device.mesh=1x1", "device.awords=32768",
			  "device.bwords=512" };
	assert_int_equal(load(&c, "device: {kind: cpu}\n", impl2, 4), CS_OK);
	tc_device_uri(&c, uri2, sizeof uri2);
	assert_string_equal(uri2, "cpu:1x1,pe=lite,awords=32768,bwords=512");
	tc_free(&c);
	char *badpe[] = { "device.pe=pe_lite" };
	expect_error("", badpe, 1, "device.pe: 'pe_lite' is not one of full, lite, micro_mt", NULL);
	/* usb: the PE is the bitstream's */
	assert_int_equal(load(&c, "device: {kind: usb, pe: lite}\n", NULL, 0), CS_OK);
	tc_device_uri(&c, uri2, sizeof uri2);
	assert_string_equal(uri2, "usb");
	tc_free(&c);
	assert_int_equal(load(&c, "device: {kind: usb, bwords: 512}\n", NULL, 0), CS_OK);
	tc_device_uri(&c, uri2, sizeof uri2);
	assert_string_equal(uri2, "usb:bwords=512");
	tc_free(&c);
	char *bad[] = { "train.steps=abc" };
	expect_error("", bad, 1, "override 'train.steps=abc': train.steps: 'abc' is not an integer",
		     NULL);
	char *unk[] = { "train.stepz=3" };
	expect_error("", unk, 1, "train.stepz: unknown key (did you mean 'steps'?)", "override");
	char *noeq[] = { "train.steps" };
	expect_error("", noeq, 1, "expected section.key=value", NULL);
}

static void test_unknown_keys_suggest(void **state)
{
	(void)state;
	expect_error("model:\n  n_layer: 2\n  n_embed: 64\n", NULL, 0,
		     "cfg.yaml:3:3: model.n_embed: unknown key (did you mean 'n_embd'?)",
		     "allowed: n_layer, n_head, n_embd, block_size, vocab_size");
	expect_error("train: {learning_rate: 0.1}\n", NULL, 0, "train.learning_rate: unknown key",
		     NULL);
	expect_error("trian: {steps: 3}\n", NULL, 0,
		     "cfg.yaml:1:1: trian: unknown section (did you mean 'train'?)", NULL);
	/* a key of another section */
	expect_error("model: {lr: 0.1}\n", NULL, 0, "model.lr: unknown key (did you mean 'train.lr'?)",
		     NULL);
	expect_error("train: {warmup: 3}\n", NULL, 0, "did you mean 'warmup_steps'?", NULL);
	assert_int_equal(tc_edit_distance("n_embed", "n_embd"), 1);
	assert_int_equal(tc_edit_distance("setps", "steps"), 1);
	assert_int_equal(tc_edit_distance("", "abc"), 3);
}

static void test_bad_values(void **state)
{
	(void)state;
	expect_error("train:\n  lr: -1\n", NULL, 0, "cfg.yaml:2:7: train.lr: -1 is not in [0, 10]",
		     NULL);
	expect_error("device: {kind: gpu}\n", NULL, 0,
		     "cfg.yaml:1:16: device.kind: 'gpu' is not one of native, model, cpu, sim, usb", NULL);
	expect_error("device: {mesh: 4by4}\n", NULL, 0, "device.mesh: '4by4' is not ROWSxCOLS",
		     NULL);
	expect_error("device: {awords: 1001}\n", NULL, 0,
		     "cfg.yaml:1:18: device.awords: 1001 is odd", NULL);
	expect_error("device: {bwords: 384}\n", NULL, 0,
		     "cfg.yaml:1:18: device.bwords: 384 is not a power of two", NULL);
	expect_error("device: {bwords: 65536}\n", NULL, 0, "device.bwords: 65536 is not in [0, 32768]",
		     NULL);
	expect_error("device: {dense_on_host: maybe}\n", NULL, 0,
		     "device.dense_on_host: 'maybe' is not one of auto, true, false", NULL);
	expect_error("model: {n_layer: 2.5}\n", NULL, 0, "model.n_layer: '2.5' is not an integer",
		     NULL);
	expect_error("model: {vocab_size: 100}\n", NULL, 0, "model.vocab_size: 100 is not in [256",
		     NULL);
	expect_error("model: {n_head: 3}\n", NULL, 0,
		     "cfg.yaml:1:17: model.n_head: n_embd 64 is not divisible by n_head 3", NULL);
	expect_error("train: {lr: 1.0e-3, min_lr: 1.0e-2}\n", NULL, 0,
		     "train.min_lr: 0.01 is above train.lr 0.001", NULL);
	expect_error("train: {steps: [1, 2]}\n", NULL, 0, "train.steps: expected a single value",
		     NULL);
	expect_error("data: {val_fraction: 0.9}\n", NULL, 0, "data.val_fraction: 0.9 is not in",
		     NULL);
	expect_error("run: {name: a/b}\n", NULL, 0, "run.name: 'a/b' is not a plain directory name",
		     NULL);
	expect_error("train: nope\n", NULL, 0, "cfg.yaml:1:8: train: expected a mapping", NULL);
	expect_error("- a\n- b\n", NULL, 0, "expected a mapping of sections", NULL);
	expect_error("train: {steps: 3\n", NULL, 0, "cfg.yaml:2:1: invalid YAML", NULL);
	train_config c;
	assert_int_equal(tc_load(&c, "/nonexistent/cfg.yaml", NULL, NULL, 0, err, sizeof err),
			 CS_ERR_NOT_FOUND);
	assert_non_null(strstr(err, "/nonexistent/cfg.yaml: cannot open"));
}

static void test_resolved_round_trip(void **state)
{
	(void)state;
	train_config a, b;
	const char *text = "run: {name: x, seed: 7}\ntrain: {lr: 0.0003, eps: 1.5e-9}\n"
			   "data: {path: \"/tmp/with: colon\"}\n"
			   "sparsity:\n  type: rigl\n  sparsity: 0.8\n  param_name_patterns:\n"
			   "    'mlp': {sparsity: 0.5, drop_fraction: {type: cosine, init: 0.3, "
			   "half_period: 100}}\n    'attn': null\n";
	char *ov[] = { "device.kind=cpu" };
	assert_int_equal(load(&a, text, ov, 1), CS_OK);
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(tc_write_resolved(&a, f), CS_OK);
	fclose(f);
	printf("%s", buf);
	assert_int_equal(load(&b, buf, NULL, 0), CS_OK);
	assert_string_equal(a.name, b.name);
	assert_string_equal(b.device_kind, "cpu");
	assert_string_equal(a.data_path, b.data_path);
	assert_true(a.lr == b.lr && a.eps == b.eps && a.seed == b.seed);
	assert_int_not_equal(b.sparsity_node, 0);
	assert_false(sp_config_is_dense(b.sparsity));
	assert_non_null(strstr(buf, "\"type\": rigl"));
	char *diff = NULL;
	assert_int_equal(tc_diff_training(&a, &b, &diff), 0);
	tc_free(&a);
	tc_free(&b);
	free(buf);
}

/* Aliases and anchors are refused where they are written (a self-referencing alias used to
 * make the resolved-config writer recurse without end, nested ones grow exponentially). */
static void test_aliases_refused(void **state)
{
	(void)state;
	expect_error("train: {steps: 5}\nsparsity: &a [*a]\n", NULL, 0, "cfg.yaml:2:11",
		     "anchor '&a'");
	expect_error("train: {steps: 5}\nsparsity: {a: 1, b: *x}\n", NULL, 0, "cfg.yaml:2",
		     "alias '*x'");
	expect_error("a: &a [\"lol\",\"lol\"]\nb: [*a,*a]\n", NULL, 0, "cfg.yaml:1:4",
		     "aliases and anchors are not allowed");
	/* and in `sparsity show` */
	sp_config *sp = NULL;
	char e[512];
	assert_int_equal(sp_config_load_string(&sp, "s.yaml", "sparsity: &s {a: *s}\n", e,
					       sizeof e), CS_ERR_CONFIG);
	assert_non_null(strstr(e, "s.yaml:1:11: anchor '&s'"));
}

static void test_limits(void **state)
{
	(void)state;
	/* nesting depth */
	char *deep = malloc(400000);
	size_t n = 0;
	n += (size_t)sprintf(deep, "sparsity: ");
	for (int i = 0; i < 40; i++)
		deep[n++] = '[';
	deep[n] = 0;
	expect_error(deep, NULL, 0, "cfg.yaml:1:", "nested deeper than 32 levels");
	/* many deep flow sequences: refused fast, not quadratic */
	n = (size_t)sprintf(deep, "sparsity: ");
	for (int i = 0; i < 150000; i++)
		deep[n++] = '[';
	deep[n] = 0;
	expect_error(deep, NULL, 0, "nested deeper than", NULL);
	/* node count */
	n = (size_t)sprintf(deep, "sparsity: [");
	for (int i = 0; i < 100001; i++)
		n += (size_t)sprintf(deep + n, "0,");
	deep[n - 1] = ']';
	deep[n] = 0;
	expect_error(deep, NULL, 0, "more than 100000 values", NULL);
	free(deep);
	/* size, and a directory or device given as the config */
	char *big = malloc((1u << 20) + 100);
	memset(big, '#', (1u << 20) + 99);
	big[(1u << 20) + 99] = 0;
	expect_error(big, NULL, 0, "cfg.yaml: 1048675 bytes is over the config size limit", NULL);
	free(big);
	train_config c;
	assert_int_equal(tc_load(&c, "/tmp", NULL, NULL, 0, err, sizeof err), CS_ERR_CONFIG);
	assert_non_null(strstr(err, "/tmp: not a regular file (a directory)"));
	assert_int_equal(tc_load(&c, "/dev/zero", NULL, NULL, 0, err, sizeof err), CS_ERR_CONFIG);
	assert_non_null(strstr(err, "/dev/zero: not a regular file"));
	sp_config *sp = NULL;
	assert_int_equal(sp_config_load_file(&sp, "/tmp", err, sizeof err), CS_ERR_CONFIG);
	assert_non_null(strstr(err, "/tmp: not a regular file"));
}

static void test_duplicates(void **state)
{
	(void)state;
	expect_error("train: {steps: 5}\nmodel: {n_layer: 1}\ntrain: {lr: 0.1}\n", NULL, 0,
		     "cfg.yaml:3:1: duplicate key 'train' (first at line 1, column 1)", NULL);
	expect_error("train:\n  steps: 5\n  lr: 0.1\n  steps: 6\n", NULL, 0,
		     "cfg.yaml:4:3: duplicate key 'steps' (first at line 2, column 3)", NULL);
	expect_error("sparsity:\n  sparsity: 0.5\n  sparsity: 0.9\n", NULL, 0,
		     "cfg.yaml:3:3: duplicate key 'sparsity'", NULL);
	expect_error("sparsity:\n  ? [a, b]\n  : 1\n", NULL, 0,
		     "cfg.yaml:2:5: a list as a key; keys are names", NULL);
	expect_error("sparsity: {\"a\\nb\": 1}\n", NULL, 0,
		     "cfg.yaml:1:12: a key of over 256 characters or with a line break", NULL);
	/* a second document would be ignored */
	expect_error("train: {steps: 5}\n---\ntrain: {steps: 6}\n", NULL, 0,
		     "cfg.yaml:2:1: a second YAML document", NULL);
	train_config c;
	assert_int_equal(load(&c, "---\ntrain: {steps: 5}\n...\n", NULL, 0), CS_OK);
	tc_free(&c);
	sp_config *sp = NULL;
	char e[512];
	assert_int_equal(sp_config_load_string(&sp, "s.yaml", "sparsity: {type: gmp, type: set}\n",
					       e, sizeof e), CS_ERR_CONFIG);
	printf("%s\n", e);
	assert_non_null(strstr(e, "s.yaml:1:23: duplicate key 'type' (first at line 1, column 12)"));
}

/* Keys an override creates are reported as the override, not as cfg.yaml:1:1. */
static void test_override_where(void **state)
{
	(void)state;
	char *ov1[] = { "trian.steps=5" };
	expect_error("", ov1, 1, "override 'trian.steps=5': trian: unknown section", NULL);
	char *ov2[] = { "train.stepz=5" };
	expect_error("train: {lr: 0.1}\n", ov2, 1, "override 'train.stepz=5': train.stepz", NULL);
	/* the depth is counted in the override's key path (it was counted in a buffer not yet
	 * filled: a stack's leftovers refused 'device.kind=sim' under ASan) */
	char *deep[] = { "sparsity.a.b.c.d.e.f.g.h=1" };
	expect_error("", deep, 1, "override 'sparsity.a.b.c.d.e.f.g.h=1': more than 8 levels of keys",
		     NULL);
	char *ov3[] = { "model.n_layer=x" };
	expect_error("", ov3, 1, "override 'model.n_layer=x'", NULL);
	/* in the sparsity block too: the block is validated by the same walk, and an override
	 * that made it is named */
	char *ov4[] = { "sparsity.sparsity=1.5" };
	expect_error("", ov4, 1,
		     "override 'sparsity.sparsity=1.5': sparsity.sparsity: 1.5 is not in [0, 1)",
		     NULL);
	char *ov5[] = { "train.steps=3", "sparsity.sparsity=0.5" };
	train_config c;
	assert_int_equal(load(&c, "train: {lr: 0.1}\n", ov5, 2), CS_OK);
	char w[256];
	tc_where(&c, c.sparsity_node, w, sizeof w);
	assert_string_equal(w, "override 'sparsity.sparsity=0.5'");
	assert_non_null(c.sparsity);
	assert_false(sp_config_is_dense(c.sparsity));
	tc_free(&c);
	/* an override of a key inside a block of the file */
	char *ov6[] = { "sparsity.algorithm=rigl", "sparsity.drop_fraction=2" };
	expect_error("sparsity: {algorithm: set, sparsity: 0.9}\n", ov6, 2,
		     "override 'sparsity.drop_fraction=2': sparsity.drop_fraction: 2 is not in "
		     "[0, 1]", NULL);
}

/* One walk validates the whole file: an error in the sparsity block is a load error with
 * its position, key and value, before any model or data is built; training reads the
 * typed result. */
static void test_sparsity_block_in_walk(void **state)
{
	(void)state;
	expect_error("train: {steps: 5}\nsparsity: {algorithm: rigl, sparsity: 0.9, "
		     "drop_fracton: 0.3}\n", NULL, 0,
		     "cfg.yaml:2:44: sparsity.drop_fracton: unknown key (did you mean "
		     "'drop_fraction'?)", NULL);
	expect_error("sparsity:\n  algorithm: gmp\n  sparsity: 0.5\n", NULL, 0,
		     "cfg.yaml:3:3: sparsity.sparsity: 0.5 is a constant; gmp needs a schedule",
		     NULL);
	expect_error("sparsity:\n  - {sparsity: 0.5, param_name_patterns: 'mlp++'}\n", NULL,
		     0, "cfg.yaml:2:42: sparsity[0].param_name_patterns: 'mlp++' stacks "
		     "repetition operators", NULL);
	expect_error("sparsity:\n  sparsity: {type: cosine, init: 0.1}\n", NULL, 0,
		     "cfg.yaml:2:13: sparsity.sparsity: cosine schedule needs 'half_period'",
		     NULL);
	/* a valid block: groups by pattern dict, each with its overrides */
	train_config c;
	assert_int_equal(load(&c, "train: {steps: 3}\nsparsity:\n  algorithm: static\n"
				  "  sparsity: 0.5\n  param_name_patterns:\n    'mlp': "
				  "{sparsity: 0.9}\n    'attn': null\n", NULL, 0), CS_OK);
	assert_non_null(c.sparsity);
	assert_false(sp_config_is_dense(c.sparsity));
	gpt_config g = c.model;
	gpt m;
	assert_int_equal(gpt_create(&m, &g, 1, g.block_size), CS_OK);
	train_sparsity *ts = NULL;
	assert_int_equal(ts_create(&ts, &c, &m, NULL, NULL, 3, err, sizeof err), CS_OK);
	assert_true(ts_enabled(ts));
	ts_free(ts);
	gpt_free(&m);
	tc_free(&c);
	/* a null block is dense training */
	assert_int_equal(load(&c, "sparsity: null\n", NULL, 0), CS_OK);
	assert_true(sp_config_is_dense(c.sparsity));
	tc_free(&c);
}

/* Integers are the whole value: no blanks or sign tricks that strtoll would take. */
static void test_strict_integers(void **state)
{
	(void)state;
	char *ov1[] = { "run.seed= -1" };
	expect_error("", ov1, 1, "run.seed: ' -1' is not a non-negative integer", NULL);
	char *ov2[] = { "train.steps=+5" };
	expect_error("", ov2, 1, "train.steps: '+5' is not an integer", NULL);
	char *ov3[] = { "train.steps=4294967297" };
	expect_error("", ov3, 1, "train.steps: 4294967297 is not in", NULL);
	/* overrides are printable UTF-8 (they go into the resolved config as they are) */
	char *ov5[] = { "train.lr=0.1\x02" }, *ov6[] = { "run.name=\xff" };
	expect_error("", ov5, 1, "override 'train.lr=0.1\\x02': a control character at byte 12",
		     NULL);
	expect_error("", ov6, 1, "override 'run.name=", "': not UTF-8 at byte 9");
	char *ov4[] = { "run.seed=18446744073709551616" };
	expect_error("", ov4, 1, "run.seed", NULL);
}

/* A mesh or PE the backend cannot open is a config error, not a failure at csd_open. */
static void test_device_limits(void **state)
{
	(void)state;
	expect_error("device: {kind: cpu, mesh: 32x32}\n", NULL, 0,
		     "cfg.yaml:1:27: device.mesh: 32x32 is larger than the cpu backend drives "
		     "(at most 16x16 PEs)", NULL);
	char *ov1[] = { "device.mesh=16x16" };
	expect_error("device: {kind: sim}\n", ov1, 1,
		     "override 'device.mesh=16x16': device.mesh: 16x16 is 256 PEs", NULL);
	char *ov2[] = { "device.pe=micro_mt", "device.mesh=1x1" };
	expect_error("device: {kind: sim}\n", ov2, 2,
		     "override 'device.pe=micro_mt': device.pe: micro_mt needs at least 3 PEs", NULL);
	char *ov3[] = { "device.pe=micro_mt", "device.mesh=2x2", "device.awords=8000" };
	expect_error("device: {kind: sim}\n", ov3, 3,
		     "device.awords: pe=micro_mt keeps A and B in one memory", NULL);
	char *ov4[] = { "device.awords=12000" };
	expect_error("device: {kind: sim}\n", ov4, 1,
		     "device.awords: 12000 is not a power of two", NULL);
	/* usb: the bitstream's shape; cpu: 16x16 is fine */
	train_config c;
	assert_int_equal(load(&c, "device: {kind: usb, mesh: 32x32}\n", NULL, 0), CS_OK);
	tc_free(&c);
	assert_int_equal(load(&c, "device: {kind: cpu, mesh: 16x16}\n", NULL, 0), CS_OK);
	tc_free(&c);
}

/* docs/config.md's key table is the one the schema generates (make config-doc writes it):
 * every key is documented, with its default and range, and nothing else is. */
static void test_docs_match_schema(void **state)
{
	(void)state;
	char *doc = repo_file_read("docs/config.md");
	assert_non_null(doc);
	/* the table between the markers is what the schema generates (make config-doc) */
	const char *b = strstr(doc, "\n<!-- BEGIN generated"), *e = strstr(doc, "\n<!-- END generated");
	assert_non_null(b);
	assert_non_null(e);
	b = strchr(b + 1, '\n') + 1;
	char *gen = NULL;
	size_t glen = 0;
	FILE *g = open_memstream(&gen, &glen);
	assert_non_null(g);
	int missing = tc_write_doc(g);
	fclose(g);
	if (missing) {
		fprintf(stderr, "%d keys of the schema lack a doc line or a default\n", missing);
		fail();
	}
	if (glen != (size_t)(e + 1 - b) || memcmp(gen, b, glen)) {
		fprintf(stderr, "docs/config.md's key table differs from the schema's; run make "
				"config-doc\n");
		free(gen);
		free(doc);
		fail();
	}
	free(gen);
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_issue_example),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_unknown_keys_suggest),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_resolved_round_trip),
		cmocka_unit_test(test_aliases_refused),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_override_where),
		cmocka_unit_test(test_sparsity_block_in_walk),
		cmocka_unit_test(test_strict_integers),
		cmocka_unit_test(test_device_limits),
		cmocka_unit_test(test_docs_match_schema),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
