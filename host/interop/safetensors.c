/* safetensors.c - read and write the safetensors format (see safetensors.h). */
#include "interop/safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cs_error.h"
#include "train/atomic_file.h"

#define ST_MAX_HEADER (100u << 20) /* the format's own limit */

static size_t dtype_size(const char *d)
{
	static const struct {
		const char *n;
		size_t s;
	} t[] = { { "F64", 8 }, { "F32", 4 }, { "F16", 2 }, { "BF16", 2 }, { "I64", 8 },
		  { "I32", 4 }, { "I16", 2 }, { "I8", 1 }, { "U64", 8 }, { "U32", 4 },
		  { "U16", 2 }, { "U8", 1 }, { "BOOL", 1 } };
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(d, t[i].n))
			return t[i].s;
	return 0;
}

/* ---- a small JSON reader for the header --------------------------------------------- */

typedef struct {
	const char *s;
	size_t n, i;
	const char *why;
} js;

static void ws(js *j)
{
	while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' ||
			       j->s[j->i] == '\r'))
		j->i++;
}

static int expect(js *j, char c)
{
	ws(j);
	if (j->i < j->n && j->s[j->i] == c) {
		j->i++;
		return 0;
	}
	static char msg[32];
	snprintf(msg, sizeof msg, "expected '%c'", c);
	j->why = msg;
	return -1;
}

/* a string into out (escapes decoded; \u to UTF-8) */
static int str(js *j, char *out, size_t cap)
{
	if (expect(j, '"'))
		return -1;
	size_t o = 0;
	while (j->i < j->n && j->s[j->i] != '"') {
		unsigned c = (unsigned char)j->s[j->i++];
		if (c < 0x20) {
			j->why = "control character in a string";
			return -1;
		}
		if (c == '\\') {
			if (j->i >= j->n)
				break;
			char e = j->s[j->i++];
			unsigned u = 0;
			switch (e) {
			case '"': case '\\': case '/': c = (unsigned char)e; break;
			case 'b': c = 8; break;
			case 'f': c = 12; break;
			case 'n': c = 10; break;
			case 'r': c = 13; break;
			case 't': c = 9; break;
			case 'u':
				for (int k = 0; k < 4; k++) {
					char h = j->i < j->n ? j->s[j->i++] : 0;
					int v = h >= '0' && h <= '9' ? h - '0' :
						h >= 'a' && h <= 'f' ? h - 'a' + 10 :
						h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
					if (v < 0) {
						j->why = "bad \\u escape";
						return -1;
					}
					u = u * 16 + (unsigned)v;
				}
				if (u >= 0x80) { /* two or three UTF-8 bytes (no pairs needed here) */
					if (o + 3 >= cap) {
						j->why = "string too long";
						return -1;
					}
					if (u < 0x800) {
						out[o++] = (char)(0xc0 | (u >> 6));
					} else {
						out[o++] = (char)(0xe0 | (u >> 12));
						out[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
					}
					c = 0x80 | (u & 0x3f);
				} else {
					c = u;
				}
				break;
			default:
				j->why = "bad escape";
				return -1;
			}
		}
		if (o + 1 >= cap) {
			j->why = "string too long";
			return -1;
		}
		out[o++] = (char)c;
	}
	if (expect(j, '"'))
		return -1;
	out[o] = 0;
	return 0;
}

static int num(js *j, int64_t *v)
{
	ws(j);
	size_t d0 = j->i;
	uint64_t x = 0;
	while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') {
		if (x > (UINT64_C(1) << 52)) {
			j->why = "number too large";
			return -1;
		}
		x = x * 10 + (uint64_t)(j->s[j->i++] - '0');
	}
	if (j->i == d0) {
		j->why = "expected a non-negative integer";
		return -1;
	}
	*v = (int64_t)x;
	return 0;
}

/* a tensor's {"dtype": .., "shape": [..], "data_offsets": [b, e]} */
static int entry(js *j, st_entry *e)
{
	int have = 0;
	if (expect(j, '{'))
		return -1;
	ws(j);
	if (j->i < j->n && j->s[j->i] == '}') {
		j->i++;
	} else {
		for (;;) {
			char key[64];
			if (str(j, key, sizeof key) || expect(j, ':'))
				return -1;
			if (!strcmp(key, "dtype")) {
				if (str(j, e->dtype, sizeof e->dtype))
					return -1;
				have |= 1;
			} else if (!strcmp(key, "shape") || !strcmp(key, "data_offsets")) {
				int shape = key[0] == 's';
				int64_t v[ST_MAX_DIMS];
				int k = 0;
				if (expect(j, '['))
					return -1;
				ws(j);
				if (j->i < j->n && j->s[j->i] == ']') {
					j->i++;
				} else {
					for (;;) {
						if (k == ST_MAX_DIMS) {
							j->why = "too many dimensions";
							return -1;
						}
						if (num(j, &v[k++]))
							return -1;
						ws(j);
						if (j->i < j->n && j->s[j->i] == ',') {
							j->i++;
							continue;
						}
						if (expect(j, ']'))
							return -1;
						break;
					}
				}
				if (shape) {
					e->ndim = k;
					memcpy(e->shape, v, sizeof v[0] * (size_t)k);
					have |= 2;
				} else {
					if (k != 2) {
						j->why = "data_offsets needs two numbers";
						return -1;
					}
					e->begin = (size_t)v[0];
					e->end = (size_t)v[1];
					have |= 4;
				}
			} else {
				j->why = "unknown key in a tensor entry";
				return -1;
			}
			ws(j);
			if (j->i < j->n && j->s[j->i] == ',') {
				j->i++;
				continue;
			}
			if (expect(j, '}'))
				return -1;
			break;
		}
	}
	if (have != 7) {
		j->why = "a tensor entry needs dtype, shape and data_offsets";
		return -1;
	}
	return 0;
}

static int cmp_begin(const void *a, const void *b)
{
	const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

int st_is_safetensors(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	uint8_t b[9];
	int ok = fread(b, 1, 9, f) == 9;
	fclose(f);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | b[i];
	return ok && n >= 2 && n <= ST_MAX_HEADER && b[8] == '{';
}

int st_open(st_file *f, const char *path, char *err, size_t errlen)
{
	memset(f, 0, sizeof *f);
	snprintf(f->path, sizeof f->path, "%s", path);
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO;
	}
	struct stat st;
	if (fstat(fileno(fp), &st) || !S_ISREG(st.st_mode)) {
		fclose(fp);
		snprintf(err, errlen, "%s: not a regular file", path);
		return CS_ERR_IO;
	}
	f->size = (size_t)st.st_size;
	f->buf = malloc(f->size ? f->size : 1);
	if (!f->buf) {
		fclose(fp);
		snprintf(err, errlen, "%s: out of memory (%zu bytes)", path, f->size);
		return CS_ERR_NO_MEM;
	}
	size_t got = fread(f->buf, 1, f->size, fp);
	fclose(fp);
	if (got != f->size) {
		snprintf(err, errlen, "%s: read error", path);
		st_close(f);
		return CS_ERR_IO;
	}
	uint64_t hl = 0;
	if (f->size >= 8)
		for (int i = 7; i >= 0; i--)
			hl = hl << 8 | f->buf[i];
	if (f->size < 8 || hl > ST_MAX_HEADER || hl > f->size - 8) {
		snprintf(err, errlen, "%s: not a safetensors file (header length %llu, file %zu "
			 "bytes)", path, (unsigned long long)hl, f->size);
		st_close(f);
		return CS_ERR_FORMAT;
	}
	f->data_off = 8 + (size_t)hl;
	js j = { (const char *)f->buf + 8, (size_t)hl, 0, NULL };
	int cap = 0;
	if (expect(&j, '{'))
		goto bad;
	ws(&j);
	if (j.i < j.n && j.s[j.i] == '}') {
		j.i++;
	} else {
		for (;;) {
			char key[256];
			if (str(&j, key, sizeof key) || expect(&j, ':'))
				goto bad;
			if (!strcmp(key, "__metadata__")) {
				if (expect(&j, '{'))
					goto bad;
				ws(&j);
				if (j.i < j.n && j.s[j.i] == '}') {
					j.i++;
				} else {
					for (;;) {
						void *nm = realloc(f->meta, sizeof *f->meta *
									 (size_t)(f->n_meta + 1));
						if (!nm) {
							j.why = "out of memory";
							goto bad;
						}
						f->meta = nm;
						/* a decoded string is never longer than its text */
						char **kv = f->meta[f->n_meta];
						kv[0] = malloc(1024);
						kv[1] = malloc(j.n - j.i + 1);
						f->n_meta++;
						if (!kv[0] || !kv[1]) {
							j.why = "out of memory";
							goto bad;
						}
						if (str(&j, kv[0], 1024) || expect(&j, ':') ||
						    str(&j, kv[1], j.n - j.i + 1))
							goto bad;
						ws(&j);
						if (j.i < j.n && j.s[j.i] == ',') {
							j.i++;
							continue;
						}
						if (expect(&j, '}'))
							goto bad;
						break;
					}
				}
			} else {
				if (f->n == cap) {
					cap = cap ? cap * 2 : 64;
					st_entry *ne = realloc(f->e, sizeof *ne * (size_t)cap);
					if (!ne) {
						j.why = "out of memory";
						goto bad;
					}
					f->e = ne;
				}
				st_entry *e = &f->e[f->n];
				memset(e, 0, sizeof *e);
				snprintf(e->name, sizeof e->name, "%s", key);
				if (st_find(f, key)) {
					j.why = "a tensor name appears twice";
					goto bad;
				}
				if (entry(&j, e))
					goto bad;
				f->n++;
			}
			ws(&j);
			if (j.i < j.n && j.s[j.i] == ',') {
				j.i++;
				continue;
			}
			if (expect(&j, '}'))
				goto bad;
			break;
		}
	}
	ws(&j);
	if (j.i != j.n) {
		j.why = "data after the header object";
		goto bad;
	}
	/* each tensor: known dtype, shape x dtype = its range, inside the file, no overlaps */
	size_t data = f->size - f->data_off;
	st_entry **order = malloc(sizeof *order * (size_t)(f->n ? f->n : 1));
	if (!order) {
		st_close(f);
		return CS_ERR_NO_MEM;
	}
	for (int k = 0; k < f->n; k++) {
		st_entry *e = &f->e[k];
		size_t es = dtype_size(e->dtype), cnt = 1;
		const char *why = NULL;
		for (int d = 0; d < e->ndim && !why; d++) {
			if (e->shape[d] && cnt > SIZE_MAX / 16 / (size_t)e->shape[d])
				why = "shape too large";
			cnt *= (size_t)e->shape[d];
		}
		if (!why && !es)
			why = "unknown dtype";
		else if (!why && (e->end < e->begin || e->end - e->begin != cnt * es))
			why = "data_offsets do not match shape and dtype";
		else if (!why && e->end > data)
			why = "data_offsets run past the end of the file";
		if (why) {
			snprintf(err, errlen, "%s: tensor '%s' (%s, %d dims, bytes %zu..%zu): %s", path,
				 e->name, e->dtype, e->ndim, e->begin, e->end, why);
			free(order);
			st_close(f);
			return CS_ERR_FORMAT;
		}
		order[k] = e;
	}
	qsort(order, (size_t)f->n, sizeof *order, cmp_begin);
	for (int k = 1; k < f->n; k++)
		if (order[k]->begin < order[k - 1]->end) {
			snprintf(err, errlen, "%s: tensors '%s' and '%s' overlap", path,
				 order[k - 1]->name, order[k]->name);
			free(order);
			st_close(f);
			return CS_ERR_FORMAT;
		}
	free(order);
	return CS_OK;
bad:
	snprintf(err, errlen, "%s: header byte %zu: %s", path, 8 + j.i,
		 j.why ? j.why : "malformed JSON");
	st_close(f);
	return CS_ERR_FORMAT;
}

void st_close(st_file *f)
{
	free(f->buf);
	free(f->e);
	for (int k = 0; k < f->n_meta; k++) {
		free(f->meta[k][0]);
		free(f->meta[k][1]);
	}
	free(f->meta);
	memset(f, 0, sizeof *f);
}

const st_entry *st_find(const st_file *f, const char *name)
{
	for (int k = 0; k < f->n; k++)
		if (!strcmp(f->e[k].name, name))
			return &f->e[k];
	return NULL;
}

const char *st_meta(const st_file *f, const char *key)
{
	for (int k = 0; k < f->n_meta; k++)
		if (!strcmp(f->meta[k][0], key))
			return f->meta[k][1];
	return NULL;
}

static float half_to_f32(uint16_t h)
{
	int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) :
							     ldexpf((float)(m | 1024), e - 25);
	return s ? -v : v;
}

int st_read_f32(const st_file *f, const st_entry *e, float *dst, char *err, size_t errlen)
{
	const uint8_t *p = f->buf + f->data_off + e->begin;
	size_t n = e->end - e->begin;
	if (!strcmp(e->dtype, "F32")) {
		memcpy(dst, p, n);
	} else if (!strcmp(e->dtype, "BF16") || !strcmp(e->dtype, "F16")) {
		int bf = e->dtype[0] == 'B';
		for (size_t i = 0; i < n / 2; i++) {
			uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
			if (bf) {
				uint32_t u = (uint32_t)h << 16;
				memcpy(&dst[i], &u, 4);
			} else {
				dst[i] = half_to_f32(h);
			}
		}
	} else {
		snprintf(err, errlen, "%s: tensor '%s' has dtype %s; F32, F16 or BF16 expected",
			 f->path, e->name, e->dtype);
		return CS_ERR_FORMAT;
	}
	return CS_OK;
}

/* JSON string with escapes */
static void put_json_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(o, "\\%c", c);
		else if (c < 0x20)
			fprintf(o, "\\u%04x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

int st_write(const char *path, const st_out *t, int n, const char *const (*meta)[2],
	     int n_meta, char *err, size_t errlen)
{
	char *hdr = NULL;
	size_t hlen = 0;
	FILE *h = open_memstream(&hdr, &hlen);
	if (!h)
		return CS_ERR_NO_MEM;
	fputc('{', h);
	if (n_meta) {
		fputs("\"__metadata__\":{", h);
		for (int k = 0; k < n_meta; k++) {
			if (k)
				fputc(',', h);
			put_json_str(h, meta[k][0]);
			fputc(':', h);
			put_json_str(h, meta[k][1]);
		}
		fputc('}', h);
	}
	size_t off = 0;
	for (int k = 0; k < n; k++) {
		if (n_meta || k)
			fputc(',', h);
		put_json_str(h, t[k].name);
		fprintf(h, ":{\"dtype\":\"%s\",\"shape\":[", t[k].dtype);
		for (int d = 0; d < t[k].ndim; d++)
			fprintf(h, "%s%lld", d ? "," : "", (long long)t[k].shape[d]);
		fprintf(h, "],\"data_offsets\":[%zu,%zu]}", off, off + t[k].nbytes);
		off += t[k].nbytes;
	}
	fputc('}', h);
	while ((ftell(h) % 8) != 0) /* the data starts 8-byte aligned */
		fputc(' ', h);
	if (fclose(h)) {
		free(hdr);
		return CS_ERR_NO_MEM;
	}
	af_file a;
	if (af_open(&a, path)) {
		snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
		free(hdr);
		return CS_ERR_IO;
	}
	uint8_t len8[8];
	for (int i = 0; i < 8; i++)
		len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
	fwrite(len8, 1, 8, a.f);
	fwrite(hdr, 1, hlen, a.f);
	free(hdr);
	for (int k = 0; k < n; k++)
		if (t[k].nbytes && fwrite(t[k].data, 1, t[k].nbytes, a.f) != t[k].nbytes)
			break;
	if (af_commit(&a)) {
		snprintf(err, errlen, "%s: cannot write", path);
		return CS_ERR_IO;
	}
	return CS_OK;
}
