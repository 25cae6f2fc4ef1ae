/* bpe.c - GPT-2 byte-level BPE (see bpe.h). */
#include "interop/bpe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cs_error.h"
#include "interop/bpe_unicode.h"

#define NONE UINT32_MAX
#define CACHE_MAX (1u << 20) /* cached pieces before the cache starts over */

/* A hash map from byte strings (kept in an arena) to uint32 values; open addressing. */
typedef struct {
	uint32_t *slot;  /* entry index + 1, 0 empty */
	uint64_t *hash;  /* per entry */
	uint32_t *off, *len, *val;
	uint32_t n, cap, mask;
	uint8_t *arena;
	size_t arena_n, arena_cap;
} smap;

struct bpe {
	smap vocab;              /* token bytes -> id */
	smap merges;             /* "first,second" bytes -> rank */
	smap cache;              /* piece bytes -> offset into cache_ids (count in the key's
	                          * length? no: val indexes cache_meta) */
	uint32_t *tok_off, *tok_len; /* id -> bytes in vocab.arena */
	int n_vocab;
	int eot;
	uint64_t identity;
	int32_t *cache_ids;
	size_t cache_ids_n, cache_ids_cap;
	uint8_t cls[0x10000];    /* class of each BMP code point */
	/* scratch for one piece */
	uint32_t *nxt, *prv, *tree;
	size_t scratch_n;
	uint8_t *key;
	size_t key_cap;
};

enum { C_OTHER, C_LETTER, C_NUMBER, C_SPACE };

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* The maps' hash: 8 bytes at a time, multiplicative mixing (identity hashes use fnv). */
static uint64_t khash(const uint8_t *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 29;
		p += 8;
		n -= 8;
	}
	uint64_t w = 0;
	for (size_t i = 0; i < n; i++)
		w |= (uint64_t)p[i] << (8 * i);
	h = (h ^ w) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static int smap_init(smap *m, uint32_t cap_pow2)
{
	memset(m, 0, sizeof *m);
	m->cap = cap_pow2;
	m->mask = cap_pow2 - 1;
	m->slot = calloc(cap_pow2, sizeof *m->slot);
	return m->slot ? 0 : CS_ERR_NO_MEM;
}

static void smap_free(smap *m)
{
	free(m->slot);
	free(m->hash);
	free(m->off);
	free(m->len);
	free(m->val);
	free(m->arena);
	memset(m, 0, sizeof *m);
}

static void smap_clear(smap *m)
{
	memset(m->slot, 0, m->cap * sizeof *m->slot);
	m->n = 0;
	m->arena_n = 0;
}

/* Slot of key (its entry index + 1 in *slotv, 0 if absent). */
static uint32_t smap_find(const smap *m, const uint8_t *k, size_t n, uint64_t h)
{
	for (uint32_t i = (uint32_t)h & m->mask;; i = (i + 1) & m->mask) {
		uint32_t e = m->slot[i];
		if (!e)
			return i;
		e--;
		if (m->hash[e] == h && m->len[e] == n && !memcmp(m->arena + m->off[e], k, n))
			return i;
	}
}

static int smap_get(const smap *m, const uint8_t *k, size_t n, uint32_t *val)
{
	uint32_t e = m->slot[smap_find(m, k, n, khash(k, n))];
	if (!e)
		return 0;
	*val = m->val[e - 1];
	return 1;
}

static int smap_grow(smap *m)
{
	uint32_t ncap = m->cap * 2;
	uint32_t *ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return CS_ERR_NO_MEM;
	free(m->slot);
	m->slot = ns;
	m->cap = ncap;
	m->mask = ncap - 1;
	for (uint32_t e = 0; e < m->n; e++) {
		uint32_t i = (uint32_t)m->hash[e] & m->mask;
		while (m->slot[i])
			i = (i + 1) & m->mask;
		m->slot[i] = e + 1;
	}
	return 0;
}

/* Insert or overwrite; returns 1 if the key was present (its value overwritten). */
static int smap_put(smap *m, const uint8_t *k, size_t n, uint32_t val)
{
	uint64_t h = khash(k, n);
	uint32_t i = smap_find(m, k, n, h);
	if (m->slot[i]) {
		m->val[m->slot[i] - 1] = val;
		return 1;
	}
	if ((m->n + 1) * 2 > m->cap) {
		if (smap_grow(m))
			return CS_ERR_NO_MEM;
		i = smap_find(m, k, n, h);
	}
	if (m->n % 1024 == 0) {
		size_t c = m->n + 1024;
		uint64_t *nh = realloc(m->hash, c * sizeof *nh);
		if (nh)
			m->hash = nh;
		uint32_t *no = realloc(m->off, c * sizeof *no);
		if (no)
			m->off = no;
		uint32_t *nl = realloc(m->len, c * sizeof *nl);
		if (nl)
			m->len = nl;
		uint32_t *nv = realloc(m->val, c * sizeof *nv);
		if (nv)
			m->val = nv;
		if (!nh || !no || !nl || !nv)
			return CS_ERR_NO_MEM;
	}
	if (m->arena_n + n > m->arena_cap) {
		size_t c = m->arena_cap ? m->arena_cap : 4096;
		while (c < m->arena_n + n)
			c *= 2;
		uint8_t *na = realloc(m->arena, c);
		if (!na)
			return CS_ERR_NO_MEM;
		m->arena = na;
		m->arena_cap = c;
	}
	memcpy(m->arena + m->arena_n, k, n);
	uint32_t e = m->n++;
	m->hash[e] = h;
	m->off[e] = (uint32_t)m->arena_n;
	m->len[e] = (uint32_t)n;
	m->val[e] = val;
	m->arena_n += n;
	m->slot[i] = e + 1;
	return 0;
}

/* ---- the byte <-> character map of GPT-2 (bytes_to_unicode) ---------------------------- */

static void byte_map(uint16_t enc[256], int16_t dec[512])
{
	int n = 0;
	for (int i = 0; i < 512; i++)
		dec[i] = -1;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) ||
				(b >= 0xae && b <= 0xff);
		enc[b] = (uint16_t)(printable ? b : 256 + n++);
		dec[enc[b]] = (int16_t)b;
	}
}

static int utf8_next(const uint8_t *s, size_t n, size_t i, uint32_t *cp)
{
	uint8_t c = s[i];
	int len;
	uint32_t v;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, v = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, v = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, v = c & 0x07;
	} else {
		return 0;
	}
	if (i + (size_t)len > n)
		return 0;
	for (int k = 1; k < len; k++) {
		if ((s[i + k] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i + k] & 0x3f);
	}
	if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) ||
	    (len == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

/* ---- loading ------------------------------------------------------------------------- */

static int slurp(const char *path, uint8_t **buf, size_t *n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO;
	}
	struct stat st;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		fclose(f);
		return CS_ERR_IO;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		fclose(f);
		return CS_ERR_NO_MEM;
	}
	*n = fread(*buf, 1, (size_t)st.st_size, f);
	int bad = *n != (size_t)st.st_size || ferror(f);
	fclose(f);
	if (bad) {
		snprintf(err, errlen, "%s: read error", path);
		free(*buf);
		return CS_ERR_IO;
	}
	(*buf)[*n] = 0;
	return 0;
}

static int line_of(const uint8_t *s, size_t off)
{
	int line = 1;
	for (size_t i = 0; i < off; i++)
		line += s[i] == '\n';
	return line;
}

/* Append the bytes a GPT-2 token string's character cp stands for; -1 if none. */
static int put_char(const int16_t dec[512], uint32_t cp, uint8_t *out, size_t *n)
{
	if (cp >= 512 || dec[cp] < 0)
		return -1;
	out[(*n)++] = (uint8_t)dec[cp];
	return 0;
}

static void skip_ws(const uint8_t *s, size_t n, size_t *i)
{
	while (*i < n && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\n' || s[*i] == '\r'))
		(*i)++;
}

static int hexval(uint8_t c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Parse a JSON string at s[*i] == '"' into token bytes (through dec). */
static const char *json_token(const uint8_t *s, size_t n, size_t *i, const int16_t dec[512],
			      uint8_t *out, size_t outcap, size_t *outn)
{
	*outn = 0;
	(*i)++;
	for (;;) {
		if (*i >= n)
			return "unterminated string";
		uint32_t cp;
		if (s[*i] == '"') {
			(*i)++;
			return NULL;
		}
		if (s[*i] == '\\') {
			if (*i + 1 >= n)
				return "unterminated string";
			uint8_t e = s[*i + 1];
			*i += 2;
			switch (e) {
			case '"': cp = '"'; break;
			case '\\': cp = '\\'; break;
			case '/': cp = '/'; break;
			case 'b': cp = 8; break;
			case 'f': cp = 12; break;
			case 'n': cp = 10; break;
			case 'r': cp = 13; break;
			case 't': cp = 9; break;
			case 'u': {
				cp = 0;
				for (int k = 0; k < 4; k++) {
					int h = *i < n ? hexval(s[*i]) : -1;
					if (h < 0)
						return "bad \\u escape";
					cp = cp * 16 + (uint32_t)h;
					(*i)++;
				}
				break;
			}
			default:
				return "bad escape";
			}
		} else {
			int l = utf8_next(s, n, *i, &cp);
			if (!l)
				return "not UTF-8";
			*i += (size_t)l;
		}
		if (*outn + 1 > outcap)
			return "token too long";
		if (put_char(dec, cp, out, outn))
			return "character outside GPT-2's byte alphabet";
	}
}

static int load_encoder(bpe *b, const char *path, const int16_t dec[512], char *err,
			size_t errlen)
{
	uint8_t *s;
	size_t n, i = 0;
	int rc = slurp(path, &s, &n, err, errlen);
	if (rc)
		return rc;
	uint8_t tok[1024];
	size_t tn;
	const char *why = NULL;
	int max_id = -1;
	uint32_t *ids = NULL;
	size_t nids = 0, capids = 0;
	b->identity = fnv(s, n, b->identity);
	skip_ws(s, n, &i);
	if (i >= n || s[i] != '{') {
		why = "expected '{'";
		goto bad;
	}
	i++;
	skip_ws(s, n, &i);
	if (i < n && s[i] == '}')
		i++;
	else
		for (;;) {
			skip_ws(s, n, &i);
			if (i >= n || s[i] != '"') {
				why = "expected a string key";
				goto bad;
			}
			if ((why = json_token(s, n, &i, dec, tok, sizeof tok, &tn)))
				goto bad;
			skip_ws(s, n, &i);
			if (i >= n || s[i] != ':') {
				why = "expected ':'";
				goto bad;
			}
			i++;
			skip_ws(s, n, &i);
			long v = 0;
			size_t d0 = i;
			while (i < n && s[i] >= '0' && s[i] <= '9' && v <= 1000000)
				v = v * 10 + (s[i++] - '0');
			if (i == d0 || v > 1000000) {
				why = "expected a token id from 0 to 1000000";
				goto bad;
			}
			rc = smap_put(&b->vocab, tok, tn, (uint32_t)v);
			if (rc < 0)
				goto fail;
			if (rc == 1) {
				why = "duplicate token";
				goto bad;
			}
			if (nids == capids) {
				capids = capids ? capids * 2 : 65536;
				uint32_t *ni = realloc(ids, capids * sizeof *ni);
				if (!ni) {
					rc = CS_ERR_NO_MEM;
					goto fail;
				}
				ids = ni;
			}
			ids[nids++] = (uint32_t)v;
			if ((int)v > max_id)
				max_id = (int)v;
			skip_ws(s, n, &i);
			if (i < n && s[i] == ',') {
				i++;
				continue;
			}
			if (i < n && s[i] == '}') {
				i++;
				break;
			}
			why = "expected ',' or '}'";
			goto bad;
		}
	skip_ws(s, n, &i);
	if (i != n) {
		why = "trailing data after the object";
		goto bad;
	}
	if (max_id < 0) {
		why = "no tokens";
		goto bad;
	}
	b->n_vocab = max_id + 1;
	b->tok_off = malloc((size_t)b->n_vocab * sizeof *b->tok_off);
	b->tok_len = malloc((size_t)b->n_vocab * sizeof *b->tok_len);
	if (!b->tok_off || !b->tok_len) {
		rc = CS_ERR_NO_MEM;
		goto fail;
	}
	for (int k = 0; k < b->n_vocab; k++)
		b->tok_off[k] = NONE;
	for (size_t e = 0; e < nids; e++) {
		if (b->tok_off[ids[e]] != NONE) {
			snprintf(err, errlen, "%s: token id %u is given to two tokens", path,
				 ids[e]);
			rc = CS_ERR_FORMAT;
			goto fail;
		}
		b->tok_off[ids[e]] = b->vocab.off[e];
		b->tok_len[ids[e]] = b->vocab.len[e];
	}
	uint32_t eot;
	b->eot = smap_get(&b->vocab, (const uint8_t *)"<|endoftext|>", 13, &eot) ? (int)eot : -1;
	free(ids);
	free(s);
	return 0;
bad:
	snprintf(err, errlen, "%s:%d: %s (byte %zu)", path, line_of(s, i < n ? i : n), why, i);
	rc = CS_ERR_FORMAT;
fail:
	free(ids);
	free(s);
	return rc;
}

static int load_merges(bpe *b, const char *path, const int16_t dec[512], char *err,
		       size_t errlen)
{
	uint8_t *s;
	size_t n;
	int rc = slurp(path, &s, &n, err, errlen);
	if (rc)
		return rc;
	b->identity = fnv(s, n, b->identity);
	/* as the reference: the first line (#version) and the text after the last newline are
	 * not merges */
	size_t i = 0;
	int line = 1;
	while (i < n && s[i] != '\n')
		i++;
	uint32_t rank = 0;
	uint8_t key[2048];
	while (i < n) {
		i++; /* the '\n' ending the previous line */
		line++;
		size_t e = i;
		while (e < n && s[e] != '\n')
			e++;
		if (e >= n)
			break; /* text after the last newline */
		/* split the line on whitespace; exactly two parts */
		size_t part[2][2], np = 0, k = i;
		const char *why = NULL;
		while (k < e) {
			while (k < e && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r'))
				k++;
			if (k >= e)
				break;
			size_t st = k;
			while (k < e && s[k] != ' ' && s[k] != '\t' && s[k] != '\r')
				k++;
			if (np < 2) {
				part[np][0] = st;
				part[np][1] = k;
			}
			np++;
		}
		if (np != 2)
			why = "expected two tokens";
		size_t kn = 0;
		for (size_t p = 0; p < 2 && !why; p++) {
			if (p)
				key[kn++] = ',';
			for (size_t q = part[p][0]; q < part[p][1] && !why;) {
				uint32_t cp;
				int l = utf8_next(s, part[p][1], q, &cp);
				if (!l)
					why = "not UTF-8";
				else if (kn + 2 > sizeof key)
					why = "merge too long";
				else if (put_char(dec, cp, key, &kn))
					why = "character outside GPT-2's byte alphabet";
				q += (size_t)(l ? l : 1);
			}
		}
		if (why) {
			snprintf(err, errlen, "%s:%d: %s", path, line, why);
			free(s);
			return CS_ERR_FORMAT;
		}
		/* a repeated key keeps its last rank, as the reference's object does */
		rc = smap_put(&b->merges, key, kn, rank++);
		if (rc < 0) {
			free(s);
			return rc;
		}
		i = e;
	}
	free(s);
	return 0;
}

static uint8_t class_of(uint32_t cp)
{
	const uint32_t(*r)[2];
	size_t n;
	static const struct {
		const uint32_t (*r)[2];
		size_t n;
		uint8_t c;
	} t[] = {
		{ bpe_letter_ranges, sizeof bpe_letter_ranges / sizeof *bpe_letter_ranges, C_LETTER },
		{ bpe_number_ranges, sizeof bpe_number_ranges / sizeof *bpe_number_ranges, C_NUMBER },
		{ bpe_space_ranges, sizeof bpe_space_ranges / sizeof *bpe_space_ranges, C_SPACE },
	};
	for (size_t k = 0; k < 3; k++) {
		r = t[k].r;
		n = t[k].n;
		size_t lo = 0, hi = n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cp < r[mid][0])
				hi = mid;
			else if (cp > r[mid][1])
				lo = mid + 1;
			else
				return t[k].c;
		}
	}
	return C_OTHER;
}

int bpe_load(bpe **out, const char *encoder_json, const char *vocab_bpe, char *err,
	     size_t errlen)
{
	*out = NULL;
	bpe *b = calloc(1, sizeof *b);
	if (!b)
		return CS_ERR_NO_MEM;
	uint16_t enc[256];
	int16_t dec[512];
	byte_map(enc, dec);
	b->identity = 0xcbf29ce484222325ull;
	int rc;
	if ((rc = smap_init(&b->vocab, 1u << 17)) || (rc = smap_init(&b->merges, 1u << 17)) ||
	    (rc = smap_init(&b->cache, 1u << 16)) ||
	    (rc = load_encoder(b, encoder_json, dec, err, errlen)) ||
	    (rc = load_merges(b, vocab_bpe, dec, err, errlen))) {
		if (rc == CS_ERR_NO_MEM)
			snprintf(err, errlen, "out of memory loading %s", encoder_json);
		bpe_free(b);
		return rc;
	}
	/* every single byte must be a token, or some text could not be encoded */
	for (int c = 0; c < 256; c++) {
		uint8_t by = (uint8_t)c;
		uint32_t id;
		if (!smap_get(&b->vocab, &by, 1, &id)) {
			snprintf(err, errlen, "%s: no token for byte 0x%02x", encoder_json, c);
			bpe_free(b);
			return CS_ERR_FORMAT;
		}
	}
	for (uint32_t cp = 0; cp < 0x10000; cp++)
		b->cls[cp] = class_of(cp);
	*out = b;
	return 0;
}

int bpe_load_dir(bpe **out, const char *dir, char *err, size_t errlen)
{
	char e[4096], v[4096];
	snprintf(e, sizeof e, "%s/encoder.json", dir);
	snprintf(v, sizeof v, "%s/vocab.bpe", dir);
	return bpe_load(out, e, v, err, errlen);
}

const char *bpe_default_dir(void)
{
	const char *e = getenv("CSHOST_GPT2_DIR");
	return e && *e ? e : BPE_DEFAULT_DIR;
}

void bpe_free(bpe *b)
{
	if (!b)
		return;
	smap_free(&b->vocab);
	smap_free(&b->merges);
	smap_free(&b->cache);
	free(b->tok_off);
	free(b->tok_len);
	free(b->cache_ids);
	free(b->nxt);
	free(b->prv);
	free(b->tree);
	free(b->key);
	free(b);
}

int bpe_vocab_size(const bpe *b) { return b->n_vocab; }
int bpe_eot(const bpe *b) { return b->eot; }
uint64_t bpe_identity(const bpe *b) { return b->identity; }

const uint8_t *bpe_token_bytes(const bpe *b, int id, size_t *len)
{
	if (id < 0 || id >= b->n_vocab || b->tok_off[id] == NONE)
		return NULL;
	*len = b->tok_len[id];
	return b->vocab.arena + b->tok_off[id];
}

/* ---- merging one piece ----------------------------------------------------------------
 * The piece's bytes are split into symbols, a linked list over start offsets (nxt, prv).
 * Leaf p of a min segment tree holds the rank of the pair (symbol at p, next symbol), or
 * NONE. Each round takes the lowest rank m and the last pair holding it (the reference
 * keeps the last of equal ranks), then merges every pair with that content from left to
 * right, as the reference's scan does: a pair formed by a merge is ranked again but looked
 * at only in the next round. */

static uint32_t pair_rank(bpe *b, const uint8_t *s, size_t n, uint32_t p)
{
	uint32_t q = b->nxt[p];
	if (q >= n)
		return NONE;
	uint32_t r = b->nxt[q];
	size_t la = q - p, lb = r - q;
	memcpy(b->key, s + p, la);
	b->key[la] = ',';
	memcpy(b->key + la + 1, s + q, lb);
	uint32_t rank;
	return smap_get(&b->merges, b->key, la + 1 + lb, &rank) ? rank : NONE;
}

static void tree_set(uint32_t *t, size_t size, size_t p, uint32_t v)
{
	size_t i = size + p;
	t[i] = v;
	for (i /= 2; i; i /= 2)
		t[i] = t[2 * i] < t[2 * i + 1] ? t[2 * i] : t[2 * i + 1];
}

/* the last leaf holding the tree's minimum */
static size_t tree_last_min(const uint32_t *t, size_t size)
{
	size_t i = 1;
	while (i < size)
		i = t[2 * i + 1] == t[i] ? 2 * i + 1 : 2 * i;
	return i - size;
}

/* the first leaf >= from with a value <= v, or size */
static size_t tree_first_le(const uint32_t *t, size_t size, size_t from, uint32_t v)
{
	size_t i = size + from;
	if (from >= size)
		return size;
	if (t[i] <= v)
		return from;
	/* climb until a right sibling subtree holds a value <= v */
	for (;;) {
		if (i == 1)
			return size;
		if ((i & 1) == 0 && t[i + 1] <= v) {
			i = i + 1;
			break;
		}
		i /= 2;
	}
	while (i < size)
		i = t[2 * i] <= v ? 2 * i : 2 * i + 1;
	return i - size;
}

static int grow_scratch(bpe *b, size_t n)
{
	if (n <= b->scratch_n)
		return 0;
	size_t c = 64;
	while (c < n)
		c *= 2;
	uint32_t *nx = realloc(b->nxt, (c + 1) * sizeof *nx);
	if (nx)
		b->nxt = nx;
	uint32_t *pv = realloc(b->prv, (c + 1) * sizeof *pv);
	if (pv)
		b->prv = pv;
	uint32_t *tr = realloc(b->tree, 2 * c * sizeof *tr);
	if (tr)
		b->tree = tr;
	uint8_t *k = realloc(b->key, c + 1);
	if (k)
		b->key = k;
	if (!nx || !pv || !tr || !k)
		return CS_ERR_NO_MEM;
	b->scratch_n = c;
	return 0;
}

static int push_id(int32_t **ids, size_t *n_ids, size_t *cap, int32_t id)
{
	if (*n_ids == *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		int32_t *ni = realloc(*ids, c * sizeof *ni);
		if (!ni)
			return CS_ERR_NO_MEM;
		*ids = ni;
		*cap = c;
	}
	(*ids)[(*n_ids)++] = id;
	return 0;
}

static int encode_piece(bpe *b, const uint8_t *s, size_t n, int32_t **ids, size_t *n_ids,
			size_t *cap)
{
	uint32_t hit;
	if (smap_get(&b->cache, s, n, &hit)) {
		size_t cnt = (size_t)b->cache_ids[hit];
		if (*n_ids + cnt > *cap) {
			size_t c = *cap ? *cap : 1024;
			while (c < *n_ids + cnt)
				c *= 2;
			int32_t *ni = realloc(*ids, c * sizeof *ni);
			if (!ni)
				return CS_ERR_NO_MEM;
			*ids = ni;
			*cap = c;
		}
		memcpy(*ids + *n_ids, b->cache_ids + hit + 1, cnt * sizeof **ids);
		*n_ids += cnt;
		return 0;
	}
	if (grow_scratch(b, n))
		return CS_ERR_NO_MEM;
	size_t size = 1;
	while (size < n)
		size *= 2;
	uint32_t *t = b->tree;
	for (size_t i = 0; i < 2 * size; i++)
		t[i] = NONE;
	for (uint32_t p = 0; p < n; p++) {
		b->nxt[p] = p + 1;
		b->prv[p] = p ? p - 1 : NONE;
	}
	for (uint32_t p = 0; p + 1 < n; p++)
		t[size + p] = pair_rank(b, s, n, p);
	for (size_t i = size - 1; i >= 1; i--)
		t[i] = t[2 * i] < t[2 * i + 1] ? t[2 * i] : t[2 * i + 1];
	size_t symbols = n;
	while (symbols > 1 && t[1] != NONE) {
		uint32_t m = t[1];
		size_t p0 = tree_last_min(t, size);
		uint32_t a0 = (uint32_t)p0, b0 = b->nxt[a0], e0 = b->nxt[b0];
		size_t q = tree_first_le(t, size, 0, m);
		while (q < size) {
			uint32_t a = (uint32_t)q, bb = b->nxt[a], e = b->nxt[bb];
			int same = t[size + q] == m && bb - a == b0 - a0 && e - bb == e0 - b0 &&
				   !memcmp(s + a, s + a0, e - a) ;
			if (!same) {
				q = tree_first_le(t, size, q + 1, m);
				continue;
			}
			/* merge: the symbol at bb joins the one at a */
			b->nxt[a] = e;
			if (e < n)
				b->prv[e] = a;
			tree_set(t, size, bb, NONE);
			symbols--;
			tree_set(t, size, a, pair_rank(b, s, n, a));
			if (b->prv[a] != NONE)
				tree_set(t, size, b->prv[a], pair_rank(b, s, n, b->prv[a]));
			q = e < n ? tree_first_le(t, size, e, m) : size;
		}
	}
	/* the symbols' ids, also into the cache */
	size_t first = *n_ids;
	for (uint32_t p = 0; p < n; p = b->nxt[p]) {
		uint32_t id;
		if (!smap_get(&b->vocab, s + p, b->nxt[p] - p, &id))
			return CS_ERR_FORMAT; /* a merge whose result is not a token */
		if (push_id(ids, n_ids, cap, (int32_t)id))
			return CS_ERR_NO_MEM;
	}
	size_t cnt = *n_ids - first;
	if (b->cache.n >= CACHE_MAX) {
		smap_clear(&b->cache);
		b->cache_ids_n = 0;
	}
	if (b->cache_ids_n + cnt + 1 > b->cache_ids_cap) {
		size_t c = b->cache_ids_cap ? b->cache_ids_cap : 65536;
		while (c < b->cache_ids_n + cnt + 1)
			c *= 2;
		int32_t *nc = realloc(b->cache_ids, c * sizeof *nc);
		if (!nc)
			return 0; /* not cached */
		b->cache_ids = nc;
		b->cache_ids_cap = c;
	}
	if (smap_put(&b->cache, s, n, (uint32_t)b->cache_ids_n) < 0)
		return 0;
	b->cache_ids[b->cache_ids_n] = (int32_t)cnt;
	memcpy(b->cache_ids + b->cache_ids_n + 1, *ids + first, cnt * sizeof **ids);
	b->cache_ids_n += cnt + 1;
	return 0;
}

/* ---- pre-tokenizer ------------------------------------------------------------------- */

typedef struct {
	const uint8_t *s;
	size_t n;
	const uint8_t *cls;
} text;

/* class and length of the character at i (i < n; the text is valid UTF-8) */
static inline uint8_t char_at(const text *x, size_t i, int *len)
{
	uint32_t cp;
	if (x->s[i] < 0x80) {
		*len = 1;
		return x->cls[x->s[i]];
	}
	*len = utf8_next(x->s, x->n, i, &cp);
	return cp < 0x10000 ? x->cls[cp] : class_of(cp);
}

/* end of the run of characters of class c starting at i */
static size_t run_end(const text *x, size_t i, uint8_t c)
{
	while (i < x->n) {
		int l;
		if (char_at(x, i, &l) != c)
			break;
		i += (size_t)l;
	}
	return i;
}

/* end of the pre-tokenizer's match at i (i < n) */
static size_t piece_end(const text *x, size_t i)
{
	const uint8_t *s = x->s;
	size_t n = x->n;
	if (s[i] == '\'' && i + 1 < n) {
		uint8_t c = s[i + 1];
		if (c == 's' || c == 't' || c == 'm' || c == 'd')
			return i + 2;
		if (i + 2 < n && ((c == 'r' && s[i + 2] == 'e') || (c == 'v' && s[i + 2] == 'e') ||
				  (c == 'l' && s[i + 2] == 'l')))
			return i + 3;
	}
	int l;
	uint8_t c0 = char_at(x, i, &l);
	size_t j = i + (size_t)l;
	if (s[i] == ' ' && j < n) { /* " ?" then a letter, digit or other run */
		int l2;
		uint8_t c1 = char_at(x, j, &l2);
		if (c1 != C_SPACE)
			return run_end(x, j, c1);
	}
	if (c0 != C_SPACE)
		return run_end(x, i, c0);
	/* \s+(?!\S) | \s+ */
	size_t e = run_end(x, i, C_SPACE);
	if (e == n)
		return e;
	/* backtrack one character if the run holds more than one */
	size_t last = i, k = i;
	while (k < e) {
		last = k;
		char_at(x, k, &l);
		k += (size_t)l;
	}
	return last > i ? last : e;
}

size_t bpe_piece_end(const bpe *b, const uint8_t *s, size_t n, size_t i)
{
	text x = { s, n, b->cls };
	return piece_end(&x, i);
}

int bpe_encode(bpe *b, const uint8_t *s, size_t n, int32_t **ids, size_t *n_ids, size_t *cap,
	       char *err, size_t errlen)
{
	/* validate first: the scanners assume valid UTF-8 */
	for (size_t i = 0; i < n;) {
		uint64_t w;
		if (i + 8 <= n && (memcpy(&w, s + i, 8), !(w & 0x8080808080808080ull))) {
			i += 8; /* eight ASCII bytes */
			continue;
		}
		uint32_t cp;
		int l = utf8_next(s, n, i, &cp);
		if (!l) {
			snprintf(err, errlen, "not UTF-8 text (bad byte at offset %zu)", i);
			return CS_ERR_FORMAT;
		}
		i += (size_t)l;
	}
	text x = { s, n, b->cls };
	for (size_t i = 0; i < n;) {
		size_t e = piece_end(&x, i);
		int rc = encode_piece(b, s + i, e - i, ids, n_ids, cap);
		if (rc) {
			snprintf(err, errlen, rc == CS_ERR_NO_MEM ? "out of memory" :
				 "a merge of vocab.bpe makes a token encoder.json lacks (text offset %zu)",
				 i);
			return rc;
		}
		i = e;
	}
	return 0;
}
