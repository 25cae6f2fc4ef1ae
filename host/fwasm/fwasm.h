/*
 * fwasm.h - assembler and disassembler of the PE instruction set (docs/architecture.md
 * 4.3). Syntax is the ISA table's: one instruction per line, `label:` prefixes, `;` or `#`
 * comments, registers r0..r7, numbers in decimal or 0x hex, and the directives
 *   .equ NAME, VALUE    a constant (colors, task ids, immediates)
 *   .entry LABEL        export LABEL into the image's symbol table (task entry points)
 *   .word VALUE         a raw 16-bit word
 *   .include "NAME"     NAME's lines in place of this one: a file beside the including one
 *                       (no '/' in NAME), nested at most 8 deep, never into itself
 * Branch operands are labels; B half-word accesses are ldb/stb (low) and ldb.h/stb.h (high).
 * Errors are "file:line: what is wrong", a line of an included file followed by "(included
 * from file:line, ...)"; nothing is printed.
 */
#ifndef CS_FWASM_H
#define CS_FWASM_H

#include <stddef.h>

#include "driver/fw.h"

/* Where .include finds its files: read() gives the text of the file at path (NAME joined
 * to the including file's directory) in *text, malloc'd, or an error with a message in err
 * (CS_ERR_NOT_FOUND: no such file). */
struct fwasm_files {
	int (*read)(void *arg, const char *path, char **text, char *err, size_t errlen);
	void *arg;
};

/* Assemble src, read as the file fname; files NULL refuses .include. */
int fwasm_assemble_files(struct csd_fw *fw, const char *src, const char *fname,
			 const struct fwasm_files *files, char *err, size_t errlen);
int fwasm_assemble(struct csd_fw *fw, const char *src, const char *fname, char *err,
		   size_t errlen);
/* The file at path, its includes read from disk beside it. */
int fwasm_assemble_file(struct csd_fw *fw, const char *path, char *err, size_t errlen);
/* Source text that reassembles to the same image (malloc'd, caller frees). */
int fwasm_disassemble(const struct csd_fw *fw, char **text);

#endif /* CS_FWASM_H */
