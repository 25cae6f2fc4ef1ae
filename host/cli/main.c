/*
 * main.c - cshost, the command-line front end. Each subcommand lives in its own
 * cmd_<name>.c; a subcommand whose area has not been built into this binary says so.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cs_cpu.h"

/* Subcommands are weak so that the binary links while an area is still missing. */
__attribute__((weak)) int cmd_train(int argc, char **argv);
__attribute__((weak)) int cmd_sample(int argc, char **argv);
__attribute__((weak)) int cmd_eval(int argc, char **argv);
__attribute__((weak)) int cmd_spmm(int argc, char **argv);
__attribute__((weak)) int cmd_trainstep(int argc, char **argv);
__attribute__((weak)) int cmd_board(int argc, char **argv);
__attribute__((weak)) int cmd_sparsity(int argc, char **argv);
__attribute__((weak)) int cmd_config(int argc, char **argv);
__attribute__((weak)) int cmd_asm(int argc, char **argv);
__attribute__((weak)) int cmd_tokenize(int argc, char **argv);
__attribute__((weak)) int cmd_export(int argc, char **argv);
__attribute__((weak)) int cmd_plot(int argc, char **argv);

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "train", cmd_train, "train a sparse GPT from a YAML config" },
	{ "sample", cmd_sample, "generate text from a checkpoint" },
	{ "eval", cmd_eval, "validation loss and perplexity of a checkpoint" },
	{ "spmm", cmd_spmm, "run one sparse kernel on a device and check it" },
	{ "trainstep", cmd_trainstep, "one training step on a device: cycles, link bytes, digest" },
	{ "board", cmd_board, "list, flash and test FPGA boards" },
	{ "sparsity", cmd_sparsity, "show what a sparsity config does" },
	{ "config", cmd_config, "the resolved config of a run; the key reference" },
	{ "asm", cmd_asm, "assemble or disassemble PE task programs" },
	{ "tokenize", cmd_tokenize, "text to GPT-2 or byte tokens and back" },
	{ "export", cmd_export, "a checkpoint as Hugging Face GPT-2 safetensors" },
	{ "plot", cmd_plot, "loss, learning rate, sparsity and mask churn of runs (gnuplot)" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: cshost <command> [args]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-9s %s%s\n", commands[i].name, commands[i].help,
			commands[i].fn ? "" : " (not built yet)");
	fprintf(f, "\n'cshost <command> --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("cshost %s\n", CSHOST_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		/* OpenBLAS's kernels are fixed when it loads: a better choice for this CPU
		 * means running again with OPENBLAS_CORETYPE set (at most once) */
		if (commands[i].fn && (!strcmp(argv[1], "train") || !strcmp(argv[1], "sample") ||
				       !strcmp(argv[1], "eval")))
			cs_blas_startup(argv);
		if (!commands[i].fn) {
			fprintf(stderr, "cshost %s: not built yet in this version\n", argv[1]);
			return 2;
		}
		return commands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "cshost: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
