/* cs_crc32.h - CRC-32 (IEEE 802.3, reflected, as zlib's crc32) of the host's file formats:
 * firmware images (driver/fw.h) and sparsity checkpoints (sparsity/checkpoint.c). */
#ifndef CS_CRC32_H
#define CS_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t cs_crc32(const uint8_t *p, size_t n);

#endif
