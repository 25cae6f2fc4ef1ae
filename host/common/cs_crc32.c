/* cs_crc32.c - CRC-32 (IEEE), bitwise: the formats it guards are small. */
#include "common/cs_crc32.h"

uint32_t cs_crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return ~c;
}
