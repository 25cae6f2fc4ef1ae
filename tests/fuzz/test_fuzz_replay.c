/*
 * test_fuzz_replay.c - the fuzz targets (tests/fuzz/fuzz_*.c) over their seed
 * corpus (tests/fuzz/corpus/<target>/) and every input that once made them fail
 * (tests/fuzz/regress/<target>/), without libFuzzer: part of `make test`, so that a fixed
 * crash stays fixed. A failing input aborts, naming the file first.
 */
#include <dirent.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LLVMFuzzerTestOneInput fuzz_config_input
#include "fuzz_config.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_ckpt_input
#include "fuzz_ckpt.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_spstate_input
#include "fuzz_spstate.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_fwasm_input
#include "fuzz_fwasm.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_frame_input
#include "fuzz_frame.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_data_input
#include "fuzz_data.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_resp_input
#include "fuzz_resp.c"
#undef LLVMFuzzerTestOneInput

static int replay_dir(const char *dir, int (*fn)(const uint8_t *, size_t))
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[2048];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		FILE *f = fopen(p, "rb");
		if (!f)
			continue;
		static uint8_t buf[1 << 21];
		size_t len = fread(buf, 1, sizeof buf, f);
		fclose(f);
		fprintf(stderr, "%s\n", p);
		fn(buf, len);
		n++;
	}
	closedir(d);
	return n;
}

int main(void)
{
	char self[1024], root[1200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 1;
	self[n] = 0;
	/* build/tests/fuzz/test_fuzz_replay (build/san/... with SAN=1): up to the tree */
	char *dir = dirname(self);
	for (int up = 0;; up++) {
		char probe[1400];
		snprintf(root, sizeof root, "%s", dir);
		for (int k = 0; k < up; k++)
			strncat(root, "/..", sizeof root - strlen(root) - 1);
		snprintf(probe, sizeof probe, "%s/tests/fuzz/corpus", root);
		if (access(probe, F_OK) == 0) {
			strncat(root, "/tests/fuzz", sizeof root - strlen(root) - 1);
			break;
		}
		if (up > 6) {
			fprintf(stderr, "test_fuzz_replay: tests/fuzz/corpus not found above %s\n", dir);
			return 1;
		}
	}
	static const struct {
		const char *name;
		int (*fn)(const uint8_t *, size_t);
	} targets[] = { { "config", fuzz_config_input },   { "ckpt", fuzz_ckpt_input },
			{ "spstate", fuzz_spstate_input }, { "fwasm", fuzz_fwasm_input },
			{ "frame", fuzz_frame_input },     { "data", fuzz_data_input },
			{ "resp", fuzz_resp_input } };
	int total = 0;
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		char dir[1400];
		snprintf(dir, sizeof dir, "%s/corpus/%s", root, targets[i].name);
		int seeds = replay_dir(dir, targets[i].fn);
		snprintf(dir, sizeof dir, "%s/regress/%s", root, targets[i].name);
		int regress = replay_dir(dir, targets[i].fn);
		if (!seeds) {
			fprintf(stderr, "test_fuzz_replay: no seed corpus for %s\n", targets[i].name);
			return 1;
		}
		printf("%s: %d seeds, %d regression inputs replayed\n", targets[i].name, seeds,
		       regress);
		total += seeds + regress;
	}
	printf("RESULT: %d passed, 0 failed\n", total);
	return 0;
}
