/*
 * hf_gpt2.h - the model's weights as Hugging Face GPT-2 safetensors, both ways.
 *
 * Names and layouts are those of transformers' GPT2LMHeadModel: transformer.wte.weight
 * [V, C], transformer.wpe.weight [T, C], transformer.h.N.{ln_1, ln_2}.{weight, bias},
 * transformer.h.N.attn.c_attn.{weight [C, 3C], bias}, attn.c_proj.{weight [C, C], bias},
 * mlp.c_fc.{weight [C, 4C], bias}, mlp.c_proj.{weight [4C, C], bias},
 * transformer.ln_f.{weight, bias}. Projection weights are Conv1D-oriented ([in, out], the
 * transpose of the model's [out, in]); the LM head is tied to wte and not stored.
 */
#ifndef CS_INTEROP_HF_GPT2_H
#define CS_INTEROP_HF_GPT2_H

#include <stddef.h>

struct trainer;
struct st_file;

enum { HF_MASKS = 1, HF_NAN = 2 };

/* Write the trainer's weights to path. Sparse tensors keep explicit zeros; HF_MASKS adds
 * each one's mask as "<name>_mask" (U8, same layout), HF_NAN writes pruned entries as NaN.
 * wte keeps the tokenizer's rows (50257 with GPT-2 tokens), not the vocabulary's padding.
 * Metadata: format pt, the model's shape, step, sparsity, the run's config. */
int hf_gpt2_export(struct trainer *t, const char *path, int flags, char *err, size_t errlen);

/* Load the weights of a GPT-2 safetensors file (names with or without "transformer.")
 * into the trainer's model. The file's n_layer and n_embd must match; it may have fewer
 * token rows (the rest, padding, are zero) and more positions (the first block_size are
 * taken). NaN weights, an untied lm_head or a missing tensor are errors naming it. */
int hf_gpt2_import(struct trainer *t, const char *path, char *err, size_t errlen);
/* Same; flags HF_NAN reads NaN weights (a NaN-marked sparse export) as zeros. */
int hf_gpt2_import_flags(struct trainer *t, const char *path, int flags, char *err,
			 size_t errlen);

/* The number of transformer blocks in a file: 1 + the largest N of its h.N tensors. */
int hf_gpt2_layers(const struct st_file *f);
/* A tensor by its Hugging Face name, with or without the "transformer." prefix. */
const struct st_entry *hf_gpt2_find(const struct st_file *f, const char *hf_name);

#endif /* CS_INTEROP_HF_GPT2_H */
