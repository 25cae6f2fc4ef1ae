/* fw.c - PE program images: lookup, .bin serialization (format in fw.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/fw.h"

int csd_fw_find(const struct csd_fw *fw, const char *sym)
{
	for (int i = 0; i < fw->n_syms; i++)
		if (!strcmp(fw->syms[i].name, sym))
			return fw->syms[i].pc;
	return -1;
}

uint32_t csd_crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return ~c;
}

int csd_fw_get(struct csd_fw *fw, const char *name, char *err, size_t errlen)
{
	(void)fw;
	snprintf(err, errlen, "firmware %s: not available", name);
	return CS_ERR_NOT_FOUND;
}
