/*
 * select.c - the deterministic building blocks of every mask algorithm: a stable 64-bit
 * name hash (FNV-1a), a counter-based random stream keyed by (seed, name hash, purpose,
 * step) so masks do not depend on parameter order or on how many numbers were drawn
 * before, the kept-count rounding, and the total order used for every top-k.
 */
#include <math.h>
#include <stdlib.h>

#include "sparsity/sp_internal.h"

uint64_t sp_fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* splitmix64 finalizer: a bijection with good avalanche */
uint64_t sp_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t sp_stream_key(uint64_t seed, uint64_t name_hash, uint32_t tag, uint64_t t)
{
	uint64_t k = sp_mix64(seed + 0x9e3779b97f4a7c15ull);
	k = sp_mix64(k ^ name_hash);
	k = sp_mix64(k ^ ((uint64_t)tag << 56 | 0x5bd1e995ull));
	return sp_mix64(k ^ (t * 0xd6e8feb86659fd93ull));
}

/* Number i of the SplitMix64 sequence started at key: a pure function of (key, i). */
double sp_uniform(uint64_t key, uint64_t i)
{
	uint64_t z = sp_mix64(key + (i + 1) * 0x9e3779b97f4a7c15ull);
	return (double)(z >> 11) * 0x1p-53;
}

size_t sp_keep_count(double s, size_t n)
{
	if (s <= 0)
		return n;
	double z = floor(s * (double)n + 0.5);
	if (z >= (double)n)
		return 0;
	return n - (size_t)z;
}

static int cand_cmp(const void *a, const void *b)
{
	const sp_cand *x = a, *y = b;
	if (x->score > y->score)
		return -1;
	if (x->score < y->score)
		return 1;
	if (x->tensor != y->tensor)
		return x->tensor < y->tensor ? -1 : 1;
	if (x->flat != y->flat)
		return x->flat < y->flat ? -1 : 1;
	return 0;
}

void sp_cand_sort(sp_cand *c, size_t n)
{
	qsort(c, n, sizeof *c, cand_cmp);
}
