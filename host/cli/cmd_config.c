/*
 * cmd_config.c - `cshost config doc [sparsity]`: docs/config.md's (docs/sparsity.md's) key
 * table, generated from the schema (host/train/config.c, host/sparsity/config.c);
 * `cshost config show CFG [section.key=value ...]`: the
 * resolved configuration a training run would write (config.yaml), without training.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/cs_error.h"
#include "sparsity/sparsity.h"
#include "train/config.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cshost config doc [sparsity]\n"
		   "       cshost config show CONFIG.yaml [section.key=value ...]\n"
		   "  doc   prints the key table of docs/config.md (of docs/sparsity.md: the sparsity\n"
		   "        block's keys) from the schema (make config-doc)\n"
		   "  show  prints the resolved configuration: defaults and overrides applied\n");
}

int cmd_config(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "doc")) {
		tc_write_doc(stdout);
		return ferror(stdout) ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[1], "doc") && !strcmp(argv[2], "sparsity")) {
		sp_config_write_doc(stdout);
		return ferror(stdout) ? 1 : 0;
	}
	if (argc < 3 || strcmp(argv[1], "show")) {
		usage(stderr);
		return 2;
	}
	static train_config c;
	char err[2048];
	if (tc_load(&c, argv[2], NULL, argv + 3, argc - 3, err, sizeof err)) {
		fprintf(stderr, "cshost config: %s\n", err);
		return 1;
	}
	int rc = tc_write_resolved(&c, stdout);
	tc_free(&c);
	return rc || ferror(stdout) ? 1 : 0;
}
