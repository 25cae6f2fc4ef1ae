/* data.c - corpus to tokens, token cache, split and batches (see data.h). */
#include "train/data.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cs_error.h"
#include "interop/bpe.h"
#include "train/atomic_file.h"

#define TD_MAGIC "CSTOKENS"
#define TD_VERSION 3u

uint64_t td_fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

int td_is_utf8(const uint8_t *s, size_t n, size_t *bad)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = s[i];
		int len;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			len = 2, cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			len = 3, cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			len = 4, cp = c & 0x07;
		} else {
			goto fail;
		}
		if (i + (size_t)len > n)
			goto fail;
		for (int k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				goto fail;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			goto fail;
		i += (size_t)len;
	}
	return 1;
fail:
	if (bad)
		*bad = i;
	return 0;
}

static int read_file(const char *path, uint8_t **buf, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO;
	struct stat st;
	if (fstat(fileno(f), &st) != 0) {
		fclose(f);
		return CS_ERR_IO;
	}
	*buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	if (!*buf) {
		fclose(f);
		return CS_ERR_NO_MEM;
	}
	*n = fread(*buf, 1, (size_t)st.st_size, f);
	int rc = (*n == (size_t)st.st_size && !ferror(f)) ? CS_OK : CS_ERR_IO;
	fclose(f);
	if (rc) {
		free(*buf);
		*buf = NULL;
	}
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The source files of a corpus path, sorted; and a key of their names, sizes, times. */
static int list_sources(const char *path, char ***files, int *nfiles, uint64_t *key,
			char *err, size_t errlen)
{
	struct stat st;
	*files = NULL;
	*nfiles = 0;
	if (stat(path, &st) != 0) {
		snprintf(err, errlen, "data.path: %s: %s", path, strerror(errno));
		return CS_ERR_NOT_FOUND;
	}
	uint64_t h = 0xcbf29ce484222325ull;
	if (!S_ISDIR(st.st_mode)) {
		*files = malloc(sizeof(char *));
		if (!*files || !((*files)[0] = strdup(path)))
			return CS_ERR_NO_MEM;
		*nfiles = 1;
		h = td_fnv1a(path, strlen(path), h);
		h = td_fnv1a(&st.st_size, sizeof st.st_size, h);
		h = td_fnv1a(&st.st_mtime, sizeof st.st_mtime, h);
		*key = h;
		return CS_OK;
	}
	DIR *d = opendir(path);
	if (!d) {
		snprintf(err, errlen, "data.path: %s: %s", path, strerror(errno));
		return CS_ERR_IO;
	}
	int cap = 64, n = 0;
	char **list = malloc(cap * sizeof *list);
	struct dirent *e;
	while (list && (e = readdir(d))) {
		const char *nm = e->d_name;
		size_t l = strlen(nm);
		if (nm[0] == '.' || (l > 4 && !strcmp(nm + l - 4, ".dat")))
			continue;
		char full[2048];
		snprintf(full, sizeof full, "%s/%s", path, nm);
		struct stat fs;
		if (lstat(full, &fs) != 0 || !S_ISREG(fs.st_mode))
			continue; /* symlinks (fortune's *.u8), directories, devices */
		if (n == cap) {
			cap *= 2;
			char **nl = realloc(list, cap * sizeof *list);
			if (!nl)
				break;
			list = nl;
		}
		list[n++] = strdup(full);
	}
	closedir(d);
	if (!list)
		return CS_ERR_NO_MEM;
	qsort(list, n, sizeof *list, cmp_str);
	for (int i = 0; i < n; i++) {
		struct stat fs;
		stat(list[i], &fs);
		h = td_fnv1a(list[i], strlen(list[i]) + 1, h);
		h = td_fnv1a(&fs.st_size, sizeof fs.st_size, h);
		h = td_fnv1a(&fs.st_mtime, sizeof fs.st_mtime, h);
	}
	*files = list;
	*nfiles = n;
	*key = h;
	return CS_OK;
}

int td_cache_write(const char *path, const uint16_t *tokens, size_t n, uint64_t source_key,
		   int n_files, char *err, size_t errlen)
{
	af_file a;
	if (af_open(&a, path)) {
		snprintf(err, errlen, "%s: cannot write token cache: %s", path, strerror(errno));
		return CS_ERR_IO;
	}
	uint32_t version = TD_VERSION, tok_bytes = sizeof *tokens;
	uint64_t count = n, sum = td_fnv1a(tokens, n * sizeof *tokens, 0xcbf29ce484222325ull);
	fwrite(TD_MAGIC, 1, 8, a.f);
	fwrite(&version, 4, 1, a.f);
	fwrite(&tok_bytes, 4, 1, a.f);
	fwrite(&count, 8, 1, a.f);
	fwrite(&sum, 8, 1, a.f);
	fwrite(&source_key, 8, 1, a.f);
	uint32_t nf = (uint32_t)n_files, pad = 0;
	fwrite(&nf, 4, 1, a.f);
	fwrite(&pad, 4, 1, a.f);
	fwrite(tokens, sizeof *tokens, n, a.f);
	if (af_commit(&a)) {
		snprintf(err, errlen, "%s: cannot write token cache", path);
		return CS_ERR_IO;
	}
	return CS_OK;
}

int td_cache_read(const char *path, uint64_t source_key, uint16_t **tokens, size_t *n,
		  int *n_files, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int rc = read_file(path, &buf, &len);
	if (rc == CS_ERR_NOT_FOUND)
		return rc;
	if (rc) {
		snprintf(err, errlen, "%s: cannot read token cache", path);
		return rc;
	}
	const size_t hdr = 48;
	uint32_t version, tok_bytes;
	uint64_t count, sum, key;
	if (len < hdr || memcmp(buf, TD_MAGIC, 8)) {
		snprintf(err, errlen, "%s: not a token cache (bad magic); delete it to rebuild",
			 path);
		free(buf);
		return CS_ERR_FORMAT;
	}
	memcpy(&version, buf + 8, 4);
	memcpy(&tok_bytes, buf + 12, 4);
	memcpy(&count, buf + 16, 8);
	memcpy(&sum, buf + 24, 8);
	memcpy(&key, buf + 32, 8);
	uint32_t nf;
	memcpy(&nf, buf + 40, 4);
	if (version != TD_VERSION || tok_bytes != sizeof **tokens) {
		free(buf);
		return 1; /* another version's cache: stale, rebuilt */
	}
	if (count != (len - hdr) / sizeof **tokens || (len - hdr) % sizeof **tokens ||
	    td_fnv1a(buf + hdr, len - hdr, 0xcbf29ce484222325ull) != sum) {
		snprintf(err, errlen, "%s: token cache is corrupt (%s mismatch); delete it to "
			 "rebuild", path,
			 count != (len - hdr) / sizeof **tokens ? "size" : "checksum");
		free(buf);
		return CS_ERR_FORMAT;
	}
	if (key != source_key) {
		free(buf);
		return 1;
	}
	memmove(buf, buf + hdr, len - hdr);
	*n_files = (int)nf;
	*tokens = (uint16_t *)buf;
	*n = count;
	return CS_OK;
}

static void free_list(char **files, int n)
{
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

/* Append n tokens to d->tokens (capacity *cap). */
static int append_tokens(td_data *d, size_t *cap, const uint16_t *t, size_t n)
{
	if (!n)
		return CS_OK; /* an empty file: d->tokens may still be NULL */
	if (d->n_tokens + n > *cap) {
		size_t c = *cap ? *cap : 1 << 20;
		while (c < d->n_tokens + n)
			c *= 2;
		uint16_t *nt = realloc(d->tokens, c * sizeof *nt);
		if (!nt)
			return CS_ERR_NO_MEM;
		d->tokens = nt;
		*cap = c;
	}
	memcpy(d->tokens + d->n_tokens, t, n * sizeof *t);
	d->n_tokens += n;
	return CS_OK;
}

/* Tokenize and concatenate the sources (skipping non-UTF-8 files of a directory): one
 * token per byte, or GPT-2 BPE with <|endoftext|> before each file, as GPT-2's data. */
static int read_sources(td_data *d, const char *path, char **files, int nfiles, bpe *tok,
			char *err, size_t errlen)
{
	size_t cap = 0, idcap = 0;
	int32_t *ids = NULL;
	uint16_t *t16 = NULL;
	int rc = CS_OK;
	d->n_files = 0;
	for (int i = 0; i < nfiles && !rc; i++) {
		uint8_t *buf;
		size_t len, bad, n_ids = 0;
		rc = read_file(files[i], &buf, &len);
		if (rc) {
			snprintf(err, errlen, "data.path: %s: cannot read", files[i]);
			break;
		}
		if (!td_is_utf8(buf, len, &bad)) {
			free(buf);
			if (nfiles == 1) {
				snprintf(err, errlen,
					 "data.path: %s: not UTF-8 text (bad byte at offset %zu)",
					 path, bad);
				rc = CS_ERR_FORMAT;
			}
			continue;
		}
		if (tok) {
			char e2[256];
			if (bpe_eot(tok) >= 0) {
				if (!idcap && (ids = malloc(1024 * sizeof *ids)))
					idcap = 1024;
				if (!idcap)
					rc = CS_ERR_NO_MEM;
				else
					ids[n_ids++] = bpe_eot(tok);
			}
			if (!rc && (rc = bpe_encode(tok, buf, len, &ids, &n_ids, &idcap, e2,
						    sizeof e2)))
				snprintf(err, errlen, "data.path: %s: %s", files[i], e2);
		} else {
			if (len > idcap) {
				int32_t *ni = realloc(ids, len * sizeof *ni);
				if (!ni)
					rc = CS_ERR_NO_MEM;
				else
					ids = ni, idcap = len;
			}
			for (size_t k = 0; !rc && k < len; k++)
				ids[k] = buf[k];
			n_ids = rc ? 0 : len;
		}
		free(buf);
		if (!rc) {
			uint16_t *nt = realloc(t16, (n_ids ? n_ids : 1) * sizeof *nt);
			if (!nt) {
				rc = CS_ERR_NO_MEM;
				break;
			}
			t16 = nt;
			for (size_t k = 0; k < n_ids; k++)
				t16[k] = (uint16_t)ids[k];
			rc = append_tokens(d, &cap, t16, n_ids);
			d->n_files++;
		}
	}
	free(ids);
	free(t16);
	if (rc) {
		free(d->tokens);
		d->tokens = NULL;
		d->n_tokens = 0;
	}
	return rc;
}

/* d->unigram_entropy of d->tokens [n_tokens], or of train and val when tokens is NULL */
static int unigram_entropy(td_data *d)
{
	size_t *count = calloc(65536, sizeof *count);
	if (!count)
		return CS_ERR_NO_MEM;
	size_t n = 0;
	const uint16_t *parts[3] = { d->tokens, d->tokens ? NULL : d->train, d->tokens ? NULL : d->val };
	size_t lens[3] = { d->n_tokens, d->n_train, d->n_val };
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; parts[k] && i < lens[k]; i++, n++)
			count[parts[k][i]]++;
	double H = 0.0;
	for (int i = 0; i < 65536; i++)
		if (count[i]) {
			double p = (double)count[i] / (double)n;
			H -= p * log(p);
		}
	free(count);
	d->unigram_entropy = H;
	return CS_OK;
}

int td_load(td_data *d, const char *path, const char *cache_dir, double val_fraction,
	    int block_size, bpe *tok, char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	char **files;
	int nfiles;
	uint64_t key;
	if (tok && bpe_vocab_size(tok) > 65536) {
		snprintf(err, errlen, "data.tokenizer: %d tokens do not fit the 16-bit token ids",
			 bpe_vocab_size(tok));
		return CS_ERR_INVALID;
	}
	int rc = list_sources(path, &files, &nfiles, &key, err, errlen);
	if (rc)
		return rc;
	if (tok) { /* the tokenizer is part of the cache's identity */
		uint64_t id = bpe_identity(tok);
		key = td_fnv1a(&id, sizeof id, key);
	}
	if (cache_dir && *cache_dir) {
		snprintf(d->cache_path, sizeof d->cache_path, "%s/tokens-%016llx.bin", cache_dir,
			 (unsigned long long)key);
		rc = td_cache_read(d->cache_path, key, &d->tokens, &d->n_tokens, &d->n_files, err,
				   errlen);
		if (rc < 0 && rc != CS_ERR_NOT_FOUND) {
			free_list(files, nfiles);
			return rc;
		}
		d->cache_hit = rc == CS_OK;
	}
	if (!d->cache_hit) {
		rc = read_sources(d, path, files, nfiles, tok, err, errlen);
		if (rc) {
			free_list(files, nfiles);
			return rc;
		}
		if (d->cache_path[0] && d->n_tokens) {
			if (af_mkdirs(cache_dir) ||
			    td_cache_write(d->cache_path, d->tokens, d->n_tokens, key, d->n_files, err,
					   errlen))
				d->cache_path[0] = 0; /* a cache we cannot write is not an error */
		}
	}
	free_list(files, nfiles);
	if (d->n_tokens == 0) {
		snprintf(err, errlen, "data.path: %s: empty corpus (no UTF-8 text found)", path);
		td_free(d);
		return CS_ERR_INVALID;
	}
	if (unigram_entropy(d)) {
		td_free(d);
		return CS_ERR_NO_MEM;
	}
	/* split: chunk i goes to validation when floor((i+1) f) > floor(i f) */
	d->train = malloc(d->n_tokens * sizeof *d->train);
	d->val = malloc(d->n_tokens * sizeof *d->val);
	if (!d->train || !d->val) {
		td_free(d);
		return CS_ERR_NO_MEM;
	}
	/* small corpora get smaller chunks, so that validation gets at least two */
	size_t chunk = TD_CHUNK, min_chunks = (size_t)ceil(2.0 / val_fraction);
	if (d->n_tokens / chunk < min_chunks)
		chunk = d->n_tokens / min_chunks > 0 ? d->n_tokens / min_chunks : 1;
	size_t nchunks = (d->n_tokens + chunk - 1) / chunk;
	for (size_t i = 0; i < nchunks; i++) {
		size_t off = i * chunk;
		size_t len = d->n_tokens - off < chunk ? d->n_tokens - off : chunk;
		int to_val = floor((double)(i + 1) * val_fraction) > floor((double)i * val_fraction);
		if (to_val) {
			memcpy(d->val + d->n_val, d->tokens + off, len * sizeof *d->val);
			d->n_val += len;
		} else {
			memcpy(d->train + d->n_train, d->tokens + off, len * sizeof *d->train);
			d->n_train += len;
		}
	}
	size_t need = (size_t)block_size + 2;
	if (d->n_train < need || d->n_val < need) {
		snprintf(err, errlen,
			 "data.path: %s: corpus too small: %zu training and %zu validation tokens, "
			 "each split needs block_size + 2 = %zu (val_fraction %g)",
			 path, d->n_train, d->n_val, need, val_fraction);
		td_free(d);
		return CS_ERR_INVALID;
	}
	return CS_OK;
}

/* ---- llm.c token shards ------------------------------------------------------------ */

/* The shards a pattern names (a file or a glob), sorted; an error when none. */
static int shard_list(const char *key, const char *pattern, glob_t *g, char *err, size_t errlen)
{
	int rc = glob(pattern, GLOB_ERR, NULL, g);
	if (rc == GLOB_NOMATCH) {
		snprintf(err, errlen, "%s: %s: no such file", key, pattern);
		return CS_ERR_NOT_FOUND;
	}
	if (rc) {
		snprintf(err, errlen, "%s: %s: cannot list: %s", key, pattern, strerror(errno));
		return CS_ERR_IO;
	}
	return CS_OK;
}

int td_is_llmc(const char *pattern)
{
	glob_t g;
	if (glob(pattern, 0, NULL, &g) || g.gl_pathc == 0)
		return 0;
	int32_t magic = 0;
	FILE *f = fopen(g.gl_pathv[0], "rb");
	int yes = f && fread(&magic, 4, 1, f) == 1 && magic == TD_LLMC_MAGIC;
	if (f)
		fclose(f);
	globfree(&g);
	return yes;
}

/* Append the tokens of the shards pattern names to *t (*n, *cap). */
static int read_shards(const char *key, const char *pattern, int vocab_size, uint16_t **t,
		       size_t *n, int *files, char *err, size_t errlen)
{
	glob_t g;
	int rc = shard_list(key, pattern, &g, err, errlen);
	if (rc)
		return rc;
	for (size_t k = 0; k < g.gl_pathc && !rc; k++) {
		const char *path = g.gl_pathv[k];
		uint8_t *buf;
		size_t len;
		rc = read_file(path, &buf, &len);
		if (rc) {
			snprintf(err, errlen, "%s: %s: cannot read", key, path);
			break;
		}
		int32_t hdr[256];
		if (len < sizeof hdr) {
			snprintf(err, errlen, "%s: %s: %zu bytes, shorter than the 1024-byte llm.c "
				 "header", key, path, len);
			rc = CS_ERR_FORMAT;
		} else {
			memcpy(hdr, buf, sizeof hdr);
			size_t ntok = (size_t)(uint32_t)hdr[2], body = len - sizeof hdr;
			if (hdr[0] != TD_LLMC_MAGIC) {
				snprintf(err, errlen, "%s: %s: not an llm.c token file (magic %d, "
					 "expected %d)", key, path, hdr[0], TD_LLMC_MAGIC);
				rc = CS_ERR_FORMAT;
			} else if (hdr[1] != 1) {
				snprintf(err, errlen, "%s: %s: llm.c token file version %d; only "
					 "version 1 (16-bit GPT-2 tokens) is read", key, path, hdr[1]);
				rc = CS_ERR_FORMAT;
			} else if (hdr[2] < 0 || body != ntok * 2) {
				snprintf(err, errlen, "%s: %s: the header says %d tokens (%zu bytes) "
					 "but %zu bytes follow it", key, path, hdr[2], ntok * 2, body);
				rc = CS_ERR_FORMAT;
			} else {
				const uint16_t *src = (const uint16_t *)(buf + sizeof hdr);
				for (size_t i = 0; i < ntok && !rc; i++)
					if (src[i] >= vocab_size) {
						snprintf(err, errlen, "%s: %s: token %zu is %u, outside "
							 "model.vocab_size %d", key, path, i, src[i],
							 vocab_size);
						rc = CS_ERR_RANGE;
					}
				uint16_t *nt = rc ? NULL : realloc(*t, (*n + ntok + 1) * sizeof *nt);
				if (!rc && !nt)
					rc = CS_ERR_NO_MEM;
				if (!rc) {
					memcpy(nt + *n, src, ntok * sizeof *nt);
					*t = nt;
					*n += ntok;
					(*files)++;
				}
			}
		}
		free(buf);
	}
	globfree(&g);
	return rc;
}

int td_load_llmc(td_data *d, const char *train, const char *val, int vocab_size,
		 int block_size, char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	int rc = read_shards("data.path", train, vocab_size, &d->train, &d->n_train, &d->n_files,
			     err, errlen);
	if (!rc)
		rc = read_shards("data.val_path", val, vocab_size, &d->val, &d->n_val,
				 &d->n_files, err, errlen);
	if (!rc)
		rc = unigram_entropy(d);
	size_t need = (size_t)block_size + 2;
	if (!rc && (d->n_train < need || d->n_val < need)) {
		snprintf(err, errlen,
			 "data.path: %s: %zu training and %zu validation tokens (data.val_path %s); "
			 "each needs block_size + 2 = %zu",
			 train, d->n_train, d->n_val, val, need);
		rc = CS_ERR_INVALID;
	}
	if (rc)
		td_free(d);
	return rc;
}

void td_free(td_data *d)
{
	free(d->tokens);
	free(d->train);
	free(d->val);
	d->tokens = d->train = d->val = NULL;
	d->n_tokens = d->n_train = d->n_val = 0;
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void td_train_batch(const td_data *d, uint64_t seed, int64_t step, int micro, int B, int T,
		    int *inputs, int *targets)
{
	size_t span = d->n_train - (size_t)T - 1;
	for (int b = 0; b < B; b++) {
		uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
		h = mix64(h ^ (uint64_t)step);
		h = mix64(h ^ ((uint64_t)micro << 32) ^ (uint64_t)b);
		size_t off = (size_t)(h % (span + 1));
		for (int t = 0; t < T; t++) {
			inputs[b * T + t] = d->train[off + t];
			targets[b * T + t] = d->train[off + t + 1];
		}
	}
}

void td_val_batch(const td_data *d, int i, int n_batches, int B, int T, int *inputs,
		  int *targets)
{
	size_t span = d->n_val - (size_t)T - 1;
	size_t rows = (size_t)n_batches * B;
	for (int b = 0; b < B; b++) {
		size_t r = (size_t)i * B + b;
		size_t off = rows > 1 ? (size_t)((double)r * span / (double)(rows - 1)) : 0;
		if (off > span)
			off = span;
		for (int t = 0; t < T; t++) {
			inputs[b * T + t] = d->val[off + t];
			targets[b * T + t] = d->val[off + t + 1];
		}
	}
}
