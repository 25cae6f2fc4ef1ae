/*
 * fw.h - a PE program image: IMEM words plus the named entry points the driver puts in
 * the task tables. Built by the assembler (host/fwasm) from the fw/ sources; stored on disk as a
 * .bin file (format below); the library also carries the fw/ sources built in, so a
 * device opens without files on disk (CSD_FW_DIR=dir loads dir/NAME.bin instead).
 *
 * .bin format (little endian): magic "CSFW", u16 version (1), u16 n_instr, u16 n_syms,
 * u16 reserved, then n_syms x {char name[24] (NUL padded), u16 pc, u16 reserved}, then
 * n_instr x u16 instruction, then u32 CRC-32 (IEEE) of everything before it.
 */
#ifndef CS_FW_H
#define CS_FW_H

#include <stddef.h>
#include <stdint.h>

#define CSD_FW_IMEM 256
#define CSD_FW_MAXSYMS 64
#define CSD_FW_SYMLEN 24
#define CSD_FW_VERSION 1

struct csd_fw_sym {
	char name[CSD_FW_SYMLEN];
	uint16_t pc;
};

struct csd_fw {
	char name[32];
	int n_instr;
	uint16_t imem[CSD_FW_IMEM];
	int n_syms;
	struct csd_fw_sym syms[CSD_FW_MAXSYMS];
};

/* pc of an entry point, or -1. */
int csd_fw_find(const struct csd_fw *fw, const char *sym);
/* Serialize to buf (cap bytes); returns the size, or a negative cs_error. */
long csd_fw_serialize(const struct csd_fw *fw, uint8_t *buf, size_t cap);
/* Parse a .bin image; checks magic, version, sizes and CRC. */
int csd_fw_parse(struct csd_fw *fw, const uint8_t *buf, size_t len, char *err, size_t errlen);
size_t csd_fw_bin_size(const struct csd_fw *fw);
/* The image NAME ("kernels", "selftest"): from $CSD_FW_DIR/NAME.bin when set, else built
 * from the sources compiled into the library. */
int csd_fw_get(struct csd_fw *fw, const char *name, char *err, size_t errlen);
uint32_t csd_crc32(const uint8_t *p, size_t n);

#endif /* CS_FW_H */
