/*
 * fwasm.h - assembler and disassembler of the PE instruction set (docs/architecture.md
 * 4.3). Syntax is the ISA table's: one instruction per line, `label:` prefixes, `;` or `#`
 * comments, registers r0..r7, numbers in decimal or 0x hex, and the directives
 *   .equ NAME, VALUE    a constant (colors, task ids, immediates)
 *   .entry LABEL        export LABEL into the image's symbol table (task entry points)
 *   .word VALUE         a raw 16-bit word
 * Branch operands are labels; B half-word accesses are ldb/stb (low) and ldb.h/stb.h (high).
 * Errors are "file:line: what is wrong"; nothing is printed.
 */
#ifndef CS_FWASM_H
#define CS_FWASM_H

#include <stddef.h>

#include "driver/fw.h"

int fwasm_assemble(struct csd_fw *fw, const char *src, const char *fname, char *err,
		   size_t errlen);
int fwasm_assemble_file(struct csd_fw *fw, const char *path, char *err, size_t errlen);
/* Source text that reassembles to the same image (malloc'd, caller frees). */
int fwasm_disassemble(const struct csd_fw *fw, char **text);

#endif /* CS_FWASM_H */
