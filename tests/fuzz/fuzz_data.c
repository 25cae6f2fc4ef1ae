/*
 * fuzz_data.c - libFuzzer target: the token cache, llm.c token shards and the text corpus
 * reader (host/train/data.c), each fed a file (a memfd) built from the input; whatever
 * loads must give batches whose tokens are in range. The first byte picks the reader:
 * 0 token cache (source key FUZZ_DATA_KEY), 1 llm.c shard, 2 text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "train/data.h"

#define FUZZ_DATA_KEY 0x5eed5eed5eed5eedull
#define FUZZ_VOCAB 50257

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_batches(const td_data *d, int vocab)
{
	enum { B = 2, T = 4 };
	int in[B * T], tg[B * T];
	td_train_batch(d, 7, 3, 0, B, T, in, tg);
	for (int i = 0; i < B * T; i++)
		if (in[i] < 0 || in[i] >= vocab || tg[i] < 0 || tg[i] >= vocab)
			abort();
	td_val_batch(d, 0, 2, B, T, in, tg);
	for (int i = 0; i < B * T; i++)
		if (in[i] < 0 || in[i] >= vocab || tg[i] < 0 || tg[i] >= vocab)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	int fd = memfd_create("fuzz_data", 0);
	if (fd < 0)
		return 0;
	if (write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) {
		close(fd);
		return 0;
	}
	char path[64], err[1024] = "";
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int rc;
	switch (data[0] % 3) {
	case 0: {
		uint16_t *tok = NULL;
		size_t n = 0;
		int files = 0;
		rc = td_cache_read(path, FUZZ_DATA_KEY, &tok, &n, &files, err, sizeof err);
		if (rc < 0 && rc != CS_ERR_NOT_FOUND && !err[0])
			abort();
		free(tok);
		break;
	}
	case 1: {
		td_data d;
		memset(&d, 0, sizeof d);
		rc = td_load_llmc(&d, path, path, FUZZ_VOCAB, 4, err, sizeof err);
		if (rc == CS_OK)
			check_batches(&d, FUZZ_VOCAB);
		else if (!err[0])
			abort();
		td_free(&d);
		break;
	}
	default: {
		td_data d;
		memset(&d, 0, sizeof d);
		rc = td_load(&d, path, NULL, 0.1, 4, NULL, err, sizeof err);
		if (rc == CS_OK)
			check_batches(&d, 256);
		else if (!err[0])
			abort();
		td_free(&d);
		break;
	}
	}
	close(fd);
	return 0;
}
