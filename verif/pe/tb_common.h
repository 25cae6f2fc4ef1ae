// tb_common.h - shared pieces of the PE/SRAM Verilator benches: seeded RNG, argument parsing,
// tick/reset helpers, the verdict line. Header-only, C++17.
//
// Every bench takes --seed=N (default: time-based, always printed), --n=N (work amount),
// +trace (FST waveform to <bench>.fst when the model was built with --trace-fst).
#ifndef TB_COMMON_H
#define TB_COMMON_H

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

struct TbRng {
	uint64_t s;
	explicit TbRng(uint64_t seed) : s(seed ? seed : 0x9e3779b97f4a7c15ull) {}
	uint64_t next()
	{ // splitmix64
		uint64_t z = (s += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		return z ^ (z >> 31);
	}
	uint32_t u32() { return (uint32_t)next(); }
	uint32_t below(uint32_t n) { return n ? (uint32_t)(next() % n) : 0; }
	bool chance(uint32_t pct) { return below(100) < pct; }
};

struct TbArgs {
	uint64_t seed = 0;
	uint64_t n = 0;
	bool trace = false;
	bool quiet = false;
	TbArgs(int argc, char **argv, uint64_t default_n)
	{
		n = default_n;
		seed = (uint64_t)time(nullptr) ^ ((uint64_t)clock() << 20);
		for (int i = 1; i < argc; i++) {
			if (!strncmp(argv[i], "--seed=", 7))
				seed = strtoull(argv[i] + 7, nullptr, 0);
			else if (!strncmp(argv[i], "--n=", 4))
				n = strtoull(argv[i] + 4, nullptr, 0);
			else if (!strcmp(argv[i], "+trace"))
				trace = true;
			else if (!strcmp(argv[i], "--quiet"))
				quiet = true;
		}
		printf("seed %" PRIu64 " (replay with --seed=%" PRIu64 "), n %" PRIu64 "\n", seed, seed,
		       n);
	}
};

// Verdict: print the line run-tests.sh counts, return the exit status.
static inline int tb_result(unsigned passed, unsigned failed)
{
	printf("RESULT: %u passed, %u failed\n", passed, failed);
	fflush(stdout);
	return failed ? 1 : 0;
}

#endif
