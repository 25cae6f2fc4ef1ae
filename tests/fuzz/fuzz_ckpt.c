/*
 * fuzz_ckpt.c - libFuzzer target: the checkpoint loader (host/train/ckpt.c) and the config
 * record it carries (trainer_config_from_ckpt), fed through a memfd so that the loader
 * reads a real file. Any input must load or be refused with a message. The loader checks
 * the header's and each record's checksum before using them, so each input is also loaded
 * resealed (every checksum recomputed): mutations then reach what lies behind them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "train/ckpt.h"
#include "train/train.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Recompute the header checksum and every complete record's, in place. */
static void ckpt_reseal(uint8_t *b, size_t size)
{
	if (size < 80)
		return;
	uint64_t sum = ck_checksum(b, 72);
	memcpy(b + 72, &sum, 8);
	uint32_t n;
	memcpy(&n, b + 64, 4);
	size_t off = 80;
	for (uint32_t i = 0; i < n && off + 4 <= size; i++) {
		uint32_t nl, kind;
		uint64_t nbytes;
		char name[256];
		memcpy(&nl, b + off, 4);
		if (nl >= sizeof name || size - off < 4ull + nl + 20)
			return;
		memcpy(name, b + off + 4, nl);
		name[nl] = 0;
		memcpy(&kind, b + off + 4 + nl, 4);
		memcpy(&nbytes, b + off + 8 + nl, 8);
		size_t data = off + 24 + nl;
		if (nbytes > size - data)
			return;
		sum = ck_record_checksum(name, kind, nbytes, b + data);
		memcpy(b + off + 16 + nl, &sum, 8);
		off = data + (size_t)nbytes;
	}
}

static void ckpt_load_one(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_ckpt", 0);
	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	char path[64], err[1024] = "";
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	ck_file f;
	if (ck_load(path, &f, err, sizeof err) == CS_OK) {
		ck_find(&f, "config");
		ck_free(&f);
		train_config c;
		if (trainer_config_from_ckpt(&c, path, NULL, 0, err, sizeof err) == CS_OK)
			tc_free(&c);
	} else if (!err[0]) {
		fprintf(stderr, "fuzz_ckpt: refused without a message\n");
		abort();
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ckpt_load_one(data, size);
	uint8_t *sealed = malloc(size ? size : 1);
	if (!sealed)
		return 0;
	memcpy(sealed, data, size);
	ckpt_reseal(sealed, size);
	if (memcmp(sealed, data, size))
		ckpt_load_one(sealed, size);
	free(sealed);
	return 0;
}
