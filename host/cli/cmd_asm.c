/*
 * cmd_asm.c - cshost asm: assemble a PE program (the fw/ syntax, docs/architecture.md 4.3)
 * into a .bin image, or disassemble an image.
 *   cshost asm FILE.s [-o OUT.bin]   assemble; without -o print a listing
 *   cshost asm -d FILE.bin           disassemble to source that reassembles identically
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "driver/fw.h"
#include "fwasm/fwasm.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: cshost asm FILE.s [-o OUT.bin]\n"
		   "       cshost asm -d FILE.bin\n"
		   "Assemble a PE task program, or disassemble an image.\n");
}

int cmd_asm(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	int dis = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-d")) {
			dis = 1;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (argv[i][0] == '-' || in) {
			usage(stderr);
			return 2;
		} else {
			in = argv[i];
		}
	}
	if (!in) {
		usage(stderr);
		return 2;
	}
	struct csd_fw fw;
	char err[512];
	if (dis) {
		FILE *f = fopen(in, "rb");
		if (!f) {
			perror(in);
			return 1;
		}
		static uint8_t buf[16384];
		size_t n = fread(buf, 1, sizeof buf, f);
		fclose(f);
		if (csd_fw_parse(&fw, buf, n, err, sizeof err)) {
			fprintf(stderr, "cshost asm: %s: %s\n", in, err);
			return 1;
		}
		char *text;
		if (fwasm_disassemble(&fw, &text)) {
			fprintf(stderr, "cshost asm: out of memory\n");
			return 1;
		}
		fputs(text, stdout);
		free(text);
		return 0;
	}
	if (fwasm_assemble_file(&fw, in, err, sizeof err)) {
		fprintf(stderr, "cshost asm: %s\n", err);
		return 1;
	}
	if (!out) {
		char *text;
		printf("; %d instructions, %d entries\n", fw.n_instr, fw.n_syms);
		if (!fwasm_disassemble(&fw, &text)) {
			fputs(text, stdout);
			free(text);
		}
		return 0;
	}
	static uint8_t buf[16384];
	long n = csd_fw_serialize(&fw, buf, sizeof buf);
	FILE *f = fopen(out, "wb");
	if (n < 0 || !f || fwrite(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(out);
		if (f)
			fclose(f);
		return 1;
	}
	if (fclose(f)) {
		perror(out);
		return 1;
	}
	return 0;
}
