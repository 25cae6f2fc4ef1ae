/*
 * fuzz_ckpt.c - libFuzzer target: the checkpoint loader (host/train/ckpt.c) and the config
 * record it carries (trainer_config_from_ckpt), fed through a memfd so that the loader
 * reads a real file. Any input must load or be refused with a message.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_ckpt", 0);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
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
	return 0;
}
