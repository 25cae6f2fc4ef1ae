/* fw.c - PE program images: lookup, the .bin format (fw.h), and where images come from. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_crc32.h"
#include "common/cs_error.h"
#include "driver/fw.h"
#include "fwasm/fwasm.h"

int csd_fw_find(const struct csd_fw *fw, const char *sym)
{
	for (int i = 0; i < fw->n_syms; i++)
		if (!strcmp(fw->syms[i].name, sym))
			return fw->syms[i].pc;
	return -1;
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] | (unsigned)p[1] << 8;
}

size_t csd_fw_bin_size(const struct csd_fw *fw)
{
	return 12 + (size_t)fw->n_syms * (CSD_FW_SYMLEN + 4) + (size_t)fw->n_instr * 2 + 4;
}

long csd_fw_serialize(const struct csd_fw *fw, uint8_t *buf, size_t cap)
{
	size_t need = csd_fw_bin_size(fw);
	if (cap < need)
		return CS_ERR_RANGE;
	memset(buf, 0, need);
	memcpy(buf, "CSFW", 4);
	put16(buf + 4, CSD_FW_VERSION);
	put16(buf + 6, (unsigned)fw->n_instr);
	put16(buf + 8, (unsigned)fw->n_syms);
	uint8_t *p = buf + 12;
	for (int i = 0; i < fw->n_syms; i++) {
		memcpy(p, fw->syms[i].name, strnlen(fw->syms[i].name, CSD_FW_SYMLEN - 1));
		put16(p + CSD_FW_SYMLEN, fw->syms[i].pc);
		p += CSD_FW_SYMLEN + 4;
	}
	for (int i = 0; i < fw->n_instr; i++, p += 2)
		put16(p, fw->imem[i]);
	uint32_t crc = cs_crc32(buf, (size_t)(p - buf));
	put16(p, crc & 0xffff);
	put16(p + 2, crc >> 16);
	return (long)need;
}

int csd_fw_parse(struct csd_fw *fw, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	memset(fw, 0, sizeof *fw);
	if (len < 16 || memcmp(buf, "CSFW", 4)) {
		snprintf(err, errlen, "not a PE image (no CSFW magic); assemble it with cshost asm");
		return CS_ERR_FORMAT;
	}
	if (get16(buf + 4) != CSD_FW_VERSION) {
		snprintf(err, errlen, "image version %u, this build reads %d: reassemble it",
			 get16(buf + 4), CSD_FW_VERSION);
		return CS_ERR_FORMAT;
	}
	int ni = (int)get16(buf + 6), ns = (int)get16(buf + 8);
	if (ni > CSD_FW_IMEM || ns > CSD_FW_MAXSYMS) {
		snprintf(err, errlen, "image of %d instructions / %d entries is too large", ni, ns);
		return CS_ERR_FORMAT;
	}
	fw->n_instr = ni;
	fw->n_syms = ns;
	if (len != csd_fw_bin_size(fw)) {
		snprintf(err, errlen, "image is %zu bytes, its header says %zu (truncated?)", len,
			 csd_fw_bin_size(fw));
		return CS_ERR_FORMAT;
	}
	uint32_t crc = (uint32_t)get16(buf + len - 4) | (uint32_t)get16(buf + len - 2) << 16;
	if (crc != cs_crc32(buf, len - 4)) {
		snprintf(err, errlen, "image checksum mismatch (corrupted): reassemble it");
		return CS_ERR_FORMAT;
	}
	const uint8_t *p = buf + 12;
	for (int i = 0; i < ns; i++) {
		memcpy(fw->syms[i].name, p, CSD_FW_SYMLEN - 1);
		fw->syms[i].pc = (uint16_t)get16(p + CSD_FW_SYMLEN);
		p += CSD_FW_SYMLEN + 4;
	}
	for (int i = 0; i < ni; i++, p += 2)
		fw->imem[i] = (uint16_t)get16(p);
	return CS_OK;
}

static int fw_load_file(struct csd_fw *fw, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return CS_ERR_NOT_FOUND;
	}
	uint8_t buf[16384];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	char e2[256];
	int rc = csd_fw_parse(fw, buf, n, e2, sizeof e2);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, e2);
	return rc;
}

/* fwasm_files.read for the built-in sources: an include file by its name in fw/ */
static int read_builtin(void *arg, const char *path, char **text, char *err, size_t errlen)
{
	(void)arg;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (const struct csd_fw_source *s = csd_fw_includes; s->name; s++)
		if (!strcmp(s->name, base)) {
			*text = strdup(s->text);
			return *text ? CS_OK : CS_ERR_NO_MEM;
		}
	snprintf(err, errlen, "%s: no such include file in fw/", path);
	return CS_ERR_NOT_FOUND;
}

int csd_fw_get(struct csd_fw *fw, const char *name, char *err, size_t errlen)
{
	static const struct fwasm_files builtin = { .read = read_builtin };
	const char *dir = getenv("CSD_FW_DIR");
	if (dir && *dir) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s.bin", dir, name);
		int rc = fw_load_file(fw, path, err, errlen);
		if (!rc)
			snprintf(fw->name, sizeof fw->name, "%s", name);
		return rc;
	}
	for (const struct csd_fw_source *s = csd_fw_sources; s->name; s++)
		if (!strcmp(s->name, name)) {
			char fname[64];
			snprintf(fname, sizeof fname, "fw/%s.s", name);
			return fwasm_assemble_files(fw, s->text, fname, &builtin, err, errlen);
		}
	snprintf(err, errlen, "firmware %s: no such program in fw/", name);
	return CS_ERR_NOT_FOUND;
}
