/*
 * fuzz_fwasm.c - libFuzzer target: the firmware assembler and disassembler
 * (host/fwasm/fwasm.c) and the image parser (host/driver/fw.c). Source text that assembles
 * must disassemble to text that reassembles to the same image; bytes that parse as an
 * image must disassemble and reassemble likewise. Input: a first byte choosing text (even)
 * or image (odd), then the data; text up to its first NUL is the program, the rest the
 * file every .include in it reads (so includes nest, repeat and cycle).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/fw.h"
#include "fwasm/fwasm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const struct csd_fw *fw)
{
	char *text = NULL, err[512] = "";
	if (fwasm_disassemble(fw, &text) != CS_OK)
		return;
	struct csd_fw *back = calloc(1, sizeof *back);
	if (!back || fwasm_assemble(back, text, "disassembly.s", err, sizeof err) != CS_OK ||
	    back->n_instr != fw->n_instr ||
	    memcmp(back->imem, fw->imem, (size_t)fw->n_instr * sizeof fw->imem[0])) {
		fprintf(stderr, "fuzz_fwasm: disassembly does not reassemble to the image: %s\n%s",
			err, text);
		abort();
	}
	free(back);
	free(text);
}

/* fwasm_files.read: every path names the text after the program's NUL */
static int read_rest(void *arg, const char *path, char **text, char *err, size_t errlen)
{
	(void)path;
	(void)err;
	(void)errlen;
	*text = strdup(arg);
	return *text ? CS_OK : CS_ERR_NO_MEM;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	struct csd_fw *fw = calloc(1, sizeof *fw);
	if (!fw)
		return 0;
	char err[512] = "";
	int rc;
	if (data[0] & 1) {
		rc = csd_fw_parse(fw, data + 1, size - 1, err, sizeof err);
	} else {
		char *src = malloc(size);
		if (!src) {
			free(fw);
			return 0;
		}
		memcpy(src, data + 1, size - 1);
		src[size - 1] = 0;
		size_t l = strlen(src);
		const struct fwasm_files files = { .read = read_rest,
						   .arg = src + (l < size - 1 ? l + 1 : l) };
		rc = fwasm_assemble_files(fw, src, "fuzz/in.s", &files, err, sizeof err);
		free(src);
	}
	if (rc == CS_OK)
		round_trip(fw);
	else if (!err[0]) {
		fprintf(stderr, "fuzz_fwasm: refused without a message\n");
		abort();
	}
	free(fw);
	return 0;
}
