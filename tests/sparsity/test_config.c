/*
 * test_config.c - host/sparsity/config.c: every documented form is accepted with the
 * meaning docs/sparsity.md gives it, and every invalid form is rejected with the exact
 * message (file:line:col: key path: value and reason); docs/sparsity.md's key table is the
 * one the schema generates, and the defaults it states are the parser's.
 */
#include <unistd.h>

#include "sp_test.h"
#include "../support/repo_file.h"

static sp_config *ok(const char *yaml)
{
	return load_cfg(yaml);
}

static void rejects(const char *yaml, const char *msg)
{
	char err[512] = "";
	sp_config *cfg = NULL;
	int rc = sp_config_load_string(&cfg, "cfg.yaml", yaml, err, sizeof err);
	if (rc != CS_ERR_CONFIG) {
		sp_config_free(cfg);
		fail_msg("accepted (rc %d): %s", rc, yaml);
	}
	assert_null(cfg);
	assert_string_equal(err, msg);
}

static void test_dense_forms(void **state)
{
	(void)state;
	sp_config *c = ok("model: {n_layer: 1}\n");
	assert_true(sp_config_is_dense(c));
	sp_config_free(c);
	c = ok("sparsity: null\n");
	assert_true(sp_config_is_dense(c));
	sp_config_free(c);
	c = ok("sparsity: 0.3\n");
	assert_false(sp_config_is_dense(c));
	assert_int_equal(c->n_groups, 1);
	assert_int_equal(c->groups[0].algo, SP_STATIC);
	assert_float_equal(c->groups[0].sparsity.value, 0.3, 0);
	assert_int_equal(c->groups[0].n_patterns, 0);
	sp_config_free(c);
}

static void test_sideband_18(void **state)
{
	(void)state;
	sp_config *c = ok("sparsity:\n  type: sideband\n  sparsity: 0.9\n  init_method: topk\n"
			  "  seed: 1234\n  param_name_patterns:\n"
			  "    \"proj_[qkv]_dense_layer.weight\":\n      sparsity: 0.75\n"
			  "      init_method: random\n    \"linear_layer.weight\": {}\n"
			  "    \"other\": null\n");
	assert_int_equal(c->n_groups, 3);
	assert_float_equal(c->groups[0].sparsity.value, 0.75, 0);
	assert_int_equal(c->groups[0].init_method, SP_INIT_RANDOM);
	assert_float_equal(c->groups[1].sparsity.value, 0.9, 0);
	assert_int_equal(c->groups[1].init_method, SP_INIT_TOPK);
	assert_true(c->groups[1].has_seed && c->groups[1].seed == 1234);
	assert_string_equal(c->groups[0].patterns[0].text, "proj_[qkv]_dense_layer.weight");
	assert_false(c->groups[0].patterns[0].is_glob);
	sp_config_free(c);
}

static void test_rigl_20(void **state)
{
	(void)state;
	sp_config *c = ok("sparsity:\n  type: rigl\n  sparsity: 0.75\n  init_method: random\n"
			  "  drop_fraction: {type: cosine, init: 0.3, half_period: 3584}\n"
			  "  schedule: {freq: 100, stop: 3584}\n  param_name_patterns:\n"
			  "    - \".*proj_[qkv]_dense_layer.weight\"\n    - \".*linear_layer.weight\"\n");
	sp_group *g = &c->groups[0];
	assert_int_equal(g->algo, SP_RIGL);
	assert_int_equal(g->update.freq, 100);
	assert_int_equal(g->update.stop, 3584);
	assert_int_equal(g->drop.type, SP_SCHED_COSINE);
	assert_int_equal(g->n_patterns, 2);
	sp_config_free(c);
	/* default drop fraction: 0.3 cosine-decayed to 0 at stop */
	c = ok("sparsity: {type: set, sparsity: 0.8, schedule: {freq: 10, stop: 500}}");
	assert_int_equal(c->groups[0].drop.type, SP_SCHED_COSINE);
	assert_float_equal(c->groups[0].drop.init, 0.3, 0);
	assert_float_equal(c->groups[0].drop.half_period, 500, 0);
	sp_config_free(c);
	c = ok("sparsity: {type: set, sparsity: 0.8, schedule: 50}");
	assert_int_equal(c->groups[0].drop.type, SP_SCHED_CONSTANT);
	assert_int_equal(c->groups[0].update.freq, 50);
	sp_config_free(c);
}

static void test_gmp_20_and_18(void **state)
{
	(void)state;
	sp_config *c = ok("sparsity:\n  type: gmp\n  init_method: topk\n"
			  "  schedule: [0, 2000, 4000, 6000]\n  sparsity: [0.3, 0.6, 0.75, 0.8]\n"
			  "  tiebreak: {type: first, eps: 1.0e-6}\n"
			  "  param_name_patterns: [\"fc_layers.*weight\", \"final_layer.*weight\"]\n");
	sp_group *g = &c->groups[0];
	assert_int_equal(g->update.n_steps, 4);
	assert_int_equal(g->update.steps[3], 6000);
	assert_int_equal(g->sparsity.type, SP_SCHED_CYCLING);
	assert_int_equal(g->sparsity.n_values, 4);
	assert_int_equal(g->tiebreak, SP_TB_FIRST);
	assert_float_equal(g->tiebreak_eps, 1e-6, 0);
	sp_config_free(c);
	c = ok("sparsity: {type: gmp, sparsity_schedule: [[0, 0.3], [2000, 0.6]]}");
	assert_int_equal(c->groups[0].update.n_steps, 2);
	assert_float_equal(c->groups[0].sparsity.values[1], 0.6, 0);
	sp_config_free(c);
}

static void test_groups_22(void **state)
{
	(void)state;
	sp_config *c = ok("sparsity:\n  - algorithm: rigl\n    sparsity: 0.9\n    init_method: random\n"
			  "    drop_fraction: {type: cosine, init: 0.3, half_period: 10000}\n"
			  "    update: {freq: 100, start: 0, stop: 10000}\n    balance_out_groups: 12\n"
			  "    param_filter: [\"*proj_[qkv]_dense_layer.weight\"]\n"
			  "  - algorithm: gmp\n"
			  "    sparsity: {type: exp, init: 0.0, gamma: -0.0005, final: 0.9}\n"
			  "    update: {freq: 1000, start: 1000}\n"
			  "    param_filter: [\"*linear_layer.weight\", \"*proj_output_dense_layer.weight\"]\n");
	assert_int_equal(c->n_groups, 2);
	assert_int_equal(c->groups[0].balance_out, 12);
	assert_true(c->groups[0].patterns[0].is_glob);
	assert_int_equal(c->groups[1].algo, SP_GMP);
	assert_int_equal(c->groups[1].sparsity.type, SP_SCHED_EXP);
	assert_int_equal(c->groups[1].update.start, 1000);
	assert_int_equal(c->groups[1].update.stop, -1);
	assert_string_equal(c->groups[1].path, "sparsity[1]");
	sp_config_free(c);
	/* 2.2: schedule is an alias of sparsity */
	c = ok("sparsity: {algorithm: gmp, schedule: {type: cubic, initial: 0, final: 0.8, begin: 0,"
	       " end: 100}, update: {freq: 10, end: 100}}");
	assert_int_equal(c->groups[0].sparsity.type, SP_SCHED_POLY);
	assert_int_equal(c->groups[0].update.stop, 101);
	sp_config_free(c);
}

static void test_ours(void **state)
{
	(void)state;
	sp_config *c = ok("sparsity:\n  algorithm: granet\n  init_density: 0.5\n  final_density: 0.2\n"
			  "  prune_start: 0\n  prune_end: 3000\n  death_rate: 0.5\n"
			  "  death_rate_min: 0.005\n  update: {freq: 100}\n  distribution: erk\n"
			  "  erk_power_scale: 0.5\n  dense_layers: ['h.0.*']\n"
			  "  skip_optimizer_on_update: true\n  grow_init: zeros\n  seed: 3\n");
	sp_group *g = &c->groups[0];
	assert_int_equal(g->algo, SP_GRANET);
	assert_int_equal(g->scope, SP_SCOPE_GLOBAL);
	assert_int_equal(g->sparsity.type, SP_SCHED_POLY);
	assert_float_equal(g->sparsity.initial, 0.5, 0);
	assert_float_equal(g->sparsity.final, 0.8, 1e-15);
	assert_float_equal(g->sparsity.end, 3000, 0);
	assert_int_equal(g->distribution, SP_DIST_ERK);
	assert_float_equal(g->erk_power, 0.5, 0);
	assert_int_equal(g->n_dense, 1);
	assert_true(g->skip_opt);
	sp_config_free(c);
	c = ok("sparsity: {algorithm: gmp, scope: global, sparsity: {type: linear, init: 0.1,"
	       " slope: 0.0001}, update: {steps: [10, 20]}}");
	assert_int_equal(c->groups[0].scope, SP_SCOPE_GLOBAL);
	assert_int_equal(c->groups[0].update.n_steps, 2);
	sp_config_free(c);
	c = ok("sparsity: {algorithm: gmp, sparsity: {type: power, init: 0.9, beta: 0.99}}");
	assert_int_equal(c->groups[0].sparsity.type, SP_SCHED_POWER);
	sp_config_free(c);
}

/* GraNet ranks globally unless the group says otherwise, in the dict form too (its scope
 * was once looked up on the dict's key, where it never is) */
static void test_granet_scope(void **state)
{
	(void)state;
	const char *base = "sparsity:\n  algorithm: granet\n  final_density: 0.2\n"
			   "  prune_end: 100\n";
	char y[512];
	snprintf(y, sizeof y, "%s  scope: per_tensor\n  param_name_patterns:\n    'mlp': null\n"
		 "    'attn': {scope: global}\n", base);
	sp_config *c = ok(y);
	assert_int_equal(c->n_groups, 2);
	assert_int_equal(c->groups[0].scope, SP_SCOPE_PER_TENSOR);
	assert_int_equal(c->groups[1].scope, SP_SCOPE_GLOBAL);
	sp_config_free(c);
	snprintf(y, sizeof y, "%s  param_name_patterns:\n    'mlp': null\n", base);
	c = ok(y);
	assert_int_equal(c->groups[0].scope, SP_SCOPE_GLOBAL);
	sp_config_free(c);
}

static void test_rejects(void **state)
{
	(void)state;
	rejects("sparsity:\n  algorithm: static\n  sparsity: 1.5\n",
		"cfg.yaml:3:13: sparsity.sparsity: 1.5 is not in [0, 1)");
	rejects("sparsity: -0.1\n", "cfg.yaml:1:11: sparsity: -0.1 is not in [0, 1)");
	rejects("sparsity:\n  algorithm: gmp\n  sparsity: {type: exp, init: 1.2, gamma: -1}\n",
		"cfg.yaml:3:31: sparsity.sparsity.init: 1.2 is not in [0, 1)");
	rejects("sparsity:\n  algorithm: gmp\n  sparsity: [0.5, 1.0]\n",
		"cfg.yaml:3:19: sparsity.sparsity[1]: 1.0 is not in [0, 1)");
	rejects("sparsity:\n  algorithm: static\n  sparsity: 0.5\n  param_filter: '*.weight'\n"
		"  param_name_patterns: 'x'\n",
		"cfg.yaml:4:17: sparsity: both param_name_patterns and param_filter given");
	rejects("sparsity:\n  type: sideband\n  sparsity: 0.5\n  param_name_patterns: 'fc[('\n",
		"cfg.yaml:4:24: sparsity.param_name_patterns: 'fc[(' does not compile: "
		"Unmatched [, [^, [:, [., or [=");
	/* regcomp's cost is bounded: nested counts used to take gigabytes */
	rejects("sparsity:\n  type: static\n  sparsity: 0.5\n"
		"  param_name_patterns: '((((a{1,99}){1,99}){1,99}){1,99})'\n",
		"cfg.yaml:4:24: sparsity.param_name_patterns: '((((a{1,99}){1,99}){1,99}){1,99})' "
		"has repetition counts that multiply to 100000000 copies; at most 1000 (write "
		"the names out, or use * and +)");
	{
		char y[600];
		int n = snprintf(y, sizeof y, "sparsity:\n  type: static\n  sparsity: 0.5\n"
					      "  param_name_patterns: [");
		for (int i = 0; i < 300; i++)
			y[n++] = 'a';
		snprintf(y + n, sizeof y - (size_t)n, "]\n");
		rejects(y, "cfg.yaml:4:25: sparsity.param_name_patterns[0]: "
			   "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is 300 characters; at most 256");
	}
	sp_config_free(ok("sparsity:\n  type: static\n  sparsity: 0.5\n"
			  "  param_name_patterns: 'h\\.[0-9]{1,2}\\.mlp'\n"));
	/* regexec has no step limit: a short pattern with back-references took over a second
	 * per parameter name; operators and nesting are bounded too */
	rejects("sparsity:\n  type: static\n  sparsity: 0.5\n"
		"  param_name_patterns: '(.*)(.*)(.*)(.*)\\4\\3\\2\\1x'\n",
		"cfg.yaml:4:24: sparsity.param_name_patterns: '(.*)(.*)(.*)(.*)\\4\\3\\2\\1x' has a "
		"back-reference (\\4), whose matching time has no bound; select the names without "
		"one");
	rejects("sparsity:\n  type: static\n  sparsity: 0.5\n"
		"  param_name_patterns: '(((((((((a)))))))))'\n",
		"cfg.yaml:4:24: sparsity.param_name_patterns: '(((((((((a)))))))))' nests groups "
		"deeper than 8");
	rejects("sparsity:\n  type: static\n  sparsity: 0.5\n"
		"  param_name_patterns: 'a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*'\n",
		"cfg.yaml:4:24: sparsity.param_name_patterns: 'a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*...' "
		"has more than 32 operators (* + ? {} |); split it into several patterns");
	/* stacked repetition operators: regcomp doubles the operand's tree for each one */
	rejects("sparsity:\n  type: static\n  sparsity: 0.5\n"
		"  param_name_patterns: 'mlp +++++++++++++++++++++++++++++++x'\n",
		"cfg.yaml:4:24: sparsity.param_name_patterns: 'mlp +++++++++++++++++++++++++++++++x' "
		"stacks repetition operators ('+' after '+'), whose compile cost doubles with each; "
		"write one");
	rejects("sparsity:\n  type: static\n  sparsity: 0.5\n"
		"  param_name_patterns: 'h{1,2}*'\n",
		"cfg.yaml:4:24: sparsity.param_name_patterns: 'h{1,2}*' stacks repetition operators "
		"('*' after '}'), whose compile cost doubles with each; write one");
	sp_config_free(ok("sparsity:\n  type: static\n  sparsity: 0.5\n"
			  "  param_name_patterns: '(h+)+x*\\+?'\n"));
	/* a count past long's range once overflowed computing {n,}'s bound */
	rejects("sparsity:\n  type: static\n  sparsity: 0.5\n"
		"  param_name_patterns: 'h{99999999999999999999999,}'\n",
		"cfg.yaml:4:24: sparsity.param_name_patterns: 'h{99999999999999999999999,}' has a "
		"repetition count above 1000 (write the names out, or use * and +)");
	/* a bracket expression is one character, whatever it holds */
	sp_config_free(ok("sparsity:\n  type: static\n  sparsity: 0.5\n"
			  "  param_name_patterns: '[]*+?|{(\\1][[:alpha:]*(]x[^]((]'\n"));
	rejects("sparsity:\n  algorithm: gmp\n  sparsity: 0.5\n  schedule: [0.2, 0.5]\n",
		"cfg.yaml:4:3: sparsity.schedule: both sparsity and schedule given (since 2.2 "
		"schedule is an alias of sparsity)");
	rejects("sparsity:\n  algorithm: magic\n  sparsity: 0.5\n",
		"cfg.yaml:2:14: sparsity.algorithm: 'magic' is not one of static, gmp, set, rigl, "
		"granet");
	rejects("sparsity:\n  type: magic\n",
		"cfg.yaml:2:9: sparsity.type: 'magic' is not one of static, gmp, set, rigl, "
		"granet, sideband");
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  drop_fracton: 0.2\n",
		"cfg.yaml:4:3: sparsity.drop_fracton: unknown key (did you mean "
		"'drop_fraction'?)");
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  update: {freq: 10, sotp: 100}\n",
		"cfg.yaml:4:22: sparsity.update.sotp: unknown key (did you mean 'stop'?)");
	rejects("sparsity:\n  algorithm: gmp\n  sparsity: {type: cosine, init: 0.5, half_perod: 3}\n",
		"cfg.yaml:3:39: sparsity.sparsity.half_perod: unknown key (did you "
		"mean 'half_period'?)");
	rejects("sparsity:\n  algorithm: gmp\n  sparsity: {type: cubic, initial: 0.1, final: 0.5}\n",
		"cfg.yaml:3:13: sparsity.sparsity: cubic schedule needs 'begin'");
	rejects("sparsity:\n  algorithm: gmp\n  sparsity: 0.5\n",
		"cfg.yaml:3:3: sparsity.sparsity: 0.5 is a constant; gmp needs a schedule (use "
		"static for a constant)");
	rejects("sparsity:\n  algorithm: static\n  sparsity: [0.5]\n",
		"cfg.yaml:3:3: sparsity.sparsity: static needs a constant sparsity (use gmp for a "
		"schedule)");
	rejects("sparsity:\n  algorithm: rigl\n",
		"cfg.yaml:2:3: sparsity: missing key 'sparsity'");
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  balance_in_groups: 2\n"
		"  balance_out_groups: 2\n",
		"cfg.yaml:5:3: sparsity.balance_out_groups: balance_in_groups and "
		"balance_out_groups are mutually exclusive");
	rejects("sparsity:\n  algorithm: set\n  sparsity: 0.5\n  scope: global\n",
		"cfg.yaml:2:3: sparsity: scope: global is only for gmp and granet");
	rejects("sparsity:\n  algorithm: static\n  sparsity: 0.5\n  drop_fraction: 0.2\n",
		"cfg.yaml:2:3: sparsity: drop_fraction is only for set and rigl");
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  drop_fraction: 1.5\n",
		"cfg.yaml:4:18: sparsity.drop_fraction: 1.5 is not in [0, 1]");
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  update: {freq: 0}\n",
		"cfg.yaml:4:18: sparsity.update.freq: 0 is less than 1");
	rejects("sparsity:\n  algorithm: granet\n  final_density: 0.2\n",
		"cfg.yaml:2:3: sparsity: granet needs final_density and prune_end (or a sparsity "
		"schedule)");
	rejects("sparsity:\n  algorithm: static\n  sparsity: 0.5\n  final_density: 0.2\n",
		"cfg.yaml:2:3: sparsity: init_density, final_density, prune_start, prune_end, "
		"death_rate are granet keys (algorithm is static)");
	rejects("sparsity:\n  - algorithm: static\n    sparsity: 0.5\n  - 0.3\n",
		"cfg.yaml:4:5: sparsity[1]: 0.3 is not a mapping (a group)");
	rejects("sparsity:\n  type: sideband\n  sparsity: 0.5\n  param_name_patterns:\n"
		"    'fc': {sparsity: 2}\n",
		"cfg.yaml:5:22: sparsity.param_name_patterns['fc'].sparsity: 2 is not in [0, 1)");
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  distribution: erdos\n",
		"cfg.yaml:4:17: sparsity.distribution: 'erdos' is not one of uniform, er, erk");
	rejects("sparsity:\n  algorithm: static\n  sparsity: 0.5\n  update: {freq: 10}\n",
		"cfg.yaml:2:3: sparsity: static masks are never updated; remove the update "
		"schedule");
	rejects("sparsity: {algorithm: rigl, sparsity: 0.5, grow_init: random}\n",
		"cfg.yaml:1:55: sparsity.grow_init: 'random' is not supported (only zeros)");
	rejects("sparsity: [\n", "cfg.yaml:2:1: invalid YAML: did not find expected node content");
	/* lists: the front end's list walk, each element checked at its position */
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  update: {steps: []}\n",
		"cfg.yaml:4:19: sparsity.update.steps: empty list of update steps");
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  update: {steps: 5}\n",
		"cfg.yaml:4:19: sparsity.update.steps: 5 is not a list of update steps");
	rejects("sparsity:\n  algorithm: rigl\n  sparsity: 0.5\n  update: [10, -1]\n",
		"cfg.yaml:4:16: sparsity.update[1]: -1 is less than 0");
	rejects("sparsity:\n  algorithm: gmp\n  sparsity: {type: cycling, values: []}\n",
		"cfg.yaml:3:37: sparsity.sparsity.values: empty list of numbers");
	rejects("sparsity:\n  algorithm: static\n  sparsity: 0.5\n  dense_layers: {a: 1}\n",
		"cfg.yaml:4:17: sparsity.dense_layers: {...} is not one value or a list of globs");
	rejects("sparsity:\n  algorithm: static\n  sparsity: 0.5\n  dense_layers: ['h.*', '']\n",
		"cfg.yaml:4:25: sparsity.dense_layers[1]: an empty string");
	rejects("sparsity:\n  algorithm: static\n  sparsity: 0.5\n"
		"  param_name_patterns: ['mlp', [a]]\n",
		"cfg.yaml:4:32: sparsity.param_name_patterns[1]: [...] is not a string");
	rejects("sparsity:\n  type: sideband\n  sparsity_schedule: [[0, 0.5], [10, 1.5]]\n",
		"cfg.yaml:3:38: sparsity.sparsity_schedule[1]: 1.5 is not in [0, 1)");
	rejects("sparsity:\n  type: sideband\n  sparsity_schedule: [[0, 0.5], 7]\n",
		"cfg.yaml:3:33: sparsity.sparsity_schedule[1]: 7 is not a [step, sparsity] pair");
	rejects("sparsity:\n  type: sideband\n  sparsity_schedule: 3\n",
		"cfg.yaml:3:22: sparsity.sparsity_schedule: 3 is not a list of [step, sparsity] "
		"pairs");
	rejects("sparsity:\n  algorithm: static\n  sparsity: 0.5\n"
		"  param_name_patterns: ['mlp', 'a{1,9}{1,9}']\n",
		"cfg.yaml:4:32: sparsity.param_name_patterns[1]: 'a{1,9}{1,9}' stacks repetition "
		"operators ('{' after '}'), whose compile cost doubles with each; write one");
}

static void has_row(const char *gen, const char *row)
{
	if (!strstr(gen, row))
		fail_msg("the generated key table lacks '%s'", row);
}

static void test_doc_table(void **state)
{
	(void)state;
	char *gen = NULL;
	size_t glen = 0;
	FILE *g = open_memstream(&gen, &glen);
	assert_non_null(g);
	int missing = sp_config_write_doc(g);
	fclose(g);
	assert_int_equal(missing, 0); /* every key has its doc line */
	/* the table between the markers is what the schema generates (make config-doc) */
	char *doc = repo_file_read("docs/sparsity.md");
	assert_non_null(doc);
	const char *b = strstr(doc, "\n<!-- BEGIN generated"), *e = strstr(doc, "\n<!-- END generated");
	assert_non_null(b);
	assert_non_null(e);
	b = strchr(b + 1, '\n') + 1;
	if (glen != (size_t)(e + 1 - b) || memcmp(gen, b, glen)) {
		free(gen);
		free(doc);
		fail_msg("docs/sparsity.md's key table differs from the schema's; run make "
			 "config-doc");
	}
	free(doc);
	/* the defaults the table states are the parser's */
	has_row(gen, "\n| `algorithm` | `static` |");
	has_row(gen, "\n| `init_method` | `topk` for gmp and sideband, else `random` |");
	has_row(gen, "\n| `update.freq` | `1` |");
	has_row(gen, "\n| `update.start` | `0` |");
	has_row(gen, "\n| `tiebreak` | `none` |");
	has_row(gen, "\n| `tiebreak.eps` | `1e-8` |");
	has_row(gen, "\n| `distribution` | `uniform` |");
	has_row(gen, "\n| `erk_power_scale` | `1` |");
	has_row(gen, "\n| `scope` | `per_tensor`; `global` for granet |");
	has_row(gen, "\n| `skip_optimizer_on_update` | `false` |");
	has_row(gen, "\n| `death_rate` | `0.5` |");
	has_row(gen, "\n| `death_rate_min` | `0.005` |");
	has_row(gen, "\n| `exp.final` | `1` |");
	has_row(gen, "\n| `cosine.minimum` | `0` |");
	has_row(gen, "\n| `cubic.power` | `3` |");
	free(gen);
	sp_config *cfg = ok("sparsity: [{sparsity: 0.5}, {algorithm: gmp, sparsity: [0.5]},\n"
			    "  {algorithm: granet, final_density: 0.5, prune_end: 10},\n"
			    "  {algorithm: rigl, sparsity: 0.5},\n"
			    "  {algorithm: rigl, sparsity: 0.5, update: {stop: 100}},\n"
			    "  {algorithm: gmp, sparsity: {type: exp, init: 0, gamma: -1}},\n"
			    "  {algorithm: gmp, sparsity: {type: cosine, init: 0, half_period: 9}},\n"
			    "  {algorithm: gmp, sparsity: {type: cubic, initial: 0, final: 0.5,\n"
			    "                              begin: 0, end: 9}}]\n");
	assert_int_equal(cfg->n_groups, 8);
	const sp_group *st = &cfg->groups[0], *gmp = &cfg->groups[1], *gr = &cfg->groups[2];
	assert_int_equal(st->algo, SP_STATIC);
	assert_int_equal(st->init_method, SP_INIT_RANDOM);
	assert_int_equal(gmp->init_method, SP_INIT_TOPK);
	assert_int_equal(st->update.freq, 1);
	assert_int_equal(st->update.start, 0);
	assert_true(st->update.stop < 0);
	assert_int_equal(st->tiebreak, 0); /* none */
	assert_true(st->tiebreak_eps == 1e-8);
	assert_int_equal(st->distribution, SP_DIST_UNIFORM);
	assert_true(st->erk_power == 1.0);
	assert_int_equal(st->scope, SP_SCOPE_PER_TENSOR);
	assert_int_equal(gr->scope, SP_SCOPE_GLOBAL);
	assert_int_equal(st->skip_opt, 0);
	assert_true(gr->death_rate == 0.5 && gr->death_rate_min == 0.005);
	/* granet's densities: init_density 1 (sparsity 0 up to prune_start 0) */
	assert_int_equal(gr->sparsity.type, SP_SCHED_POLY);
	assert_true(gr->sparsity.initial == 0.0 && gr->sparsity.begin == 0.0);
	/* drop_fraction: 0.3, cosine to 0 at update.stop when there is one */
	assert_int_equal(cfg->groups[3].drop.type, SP_SCHED_CONSTANT);
	assert_true(cfg->groups[3].drop.value == 0.3);
	assert_int_equal(cfg->groups[4].drop.type, SP_SCHED_COSINE);
	assert_true(cfg->groups[4].drop.init == 0.3 && cfg->groups[4].drop.half_period == 100);
	assert_true(cfg->groups[5].sparsity.final == 1.0);
	assert_true(cfg->groups[6].sparsity.minimum == 0.0);
	assert_true(cfg->groups[7].sparsity.power == 3.0);
	sp_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dense_forms),
		cmocka_unit_test(test_sideband_18),
		cmocka_unit_test(test_rigl_20),
		cmocka_unit_test(test_gmp_20_and_18),
		cmocka_unit_test(test_groups_22),
		cmocka_unit_test(test_ours),
		cmocka_unit_test(test_rejects),
		cmocka_unit_test(test_granet_scope),
		cmocka_unit_test(test_doc_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
