/*
 * cmd_export.c - `cshost export --format safetensors CKPT OUT [--no-masks] [--nan]`: a
 * checkpoint's weights as Hugging Face GPT-2 safetensors (interop/hf_gpt2.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "interop/hf_gpt2.h"
#include "train/train.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cshost export --format safetensors CKPT OUT [--no-masks] [--nan]\n"
		   "  writes the checkpoint's weights with Hugging Face GPT-2 names and layouts\n"
		   "  (transformer.h.N.attn.c_attn.weight, ...; tied lm_head not stored).\n"
		   "  Sparse tensors keep explicit zeros and get their masks as <name>_mask (U8);\n"
		   "  --no-masks leaves the masks out, --nan writes pruned entries as NaN.\n");
}

int cmd_export(int argc, char **argv)
{
	const char *format = NULL, *in = NULL, *out = NULL;
	int flags = HF_MASKS;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
			format = argv[++i];
		} else if (!strcmp(argv[i], "--no-masks")) {
			flags &= ~HF_MASKS;
		} else if (!strcmp(argv[i], "--nan")) {
			flags |= HF_NAN;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "cshost export: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (!in) {
			in = argv[i];
		} else if (!out) {
			out = argv[i];
		} else {
			fprintf(stderr, "cshost export: unexpected argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!format || strcmp(format, "safetensors") || !in || !out) {
		if (format && strcmp(format, "safetensors"))
			fprintf(stderr, "cshost export: --format '%s': only safetensors\n", format);
		usage(stderr);
		return 2;
	}
	char err[1024];
	train_config cfg;
	char *const ov[] = { "device.kind=cpu", "device.dense_on_host=true" };
	trainer t;
	int rc = trainer_config_from_ckpt(&cfg, in, ov, 2, err, sizeof err);
	if (!rc)
		rc = trainer_init(&t, &cfg, 0, err, sizeof err);
	if (rc) {
		fprintf(stderr, "cshost export: %s\n", err);
		return 1;
	}
	rc = trainer_load(&t, in, err, sizeof err);
	if (!rc)
		rc = hf_gpt2_export(&t, out, flags, err, sizeof err);
	trainer_free(&t);
	if (rc) {
		fprintf(stderr, "cshost export: %s\n", err);
		return 1;
	}
	printf("wrote %s\n", out);
	return 0;
}
