/*
 * safetensors.h - the safetensors format: an 8-byte little-endian header length, a JSON
 * header ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__":
 * {"key": "value"}}), then the raw little-endian tensor bytes.
 *
 * Reading checks everything a hostile file could get wrong (header length, JSON syntax,
 * dtypes, shapes against byte ranges, ranges inside the file and not overlapping) and
 * names the file, the byte offset or tensor, and the fault. Writing is atomic.
 */
#ifndef CS_INTEROP_SAFETENSORS_H
#define CS_INTEROP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

typedef struct st_entry {
	char name[256];
	char dtype[8];           /* F32, F16, BF16, U8, ... */
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	size_t begin, end;       /* byte range, relative to the data */
} st_entry;

typedef struct st_file {
	char path[1024];
	uint8_t *buf;            /* the whole file */
	size_t size, data_off;
	st_entry *e;
	int n;
	char *(*meta)[2];        /* __metadata__ key (< 1024 bytes), value (any length) */
	int n_meta;
} st_file;

int st_open(st_file *f, const char *path, char *err, size_t errlen);
void st_close(st_file *f);
const st_entry *st_find(const st_file *f, const char *name);
const char *st_meta(const st_file *f, const char *key);
/* Whether path starts like a safetensors file (a plausible length, then '{'). */
int st_is_safetensors(const char *path);
/* Elements of e converted to fp32 (F32, F16 or BF16); CS_ERR_FORMAT for other dtypes. */
int st_read_f32(const st_file *f, const st_entry *e, float *dst, char *err, size_t errlen);

/* A tensor to write: nbytes of data (dtype "F32" or "U8"). */
typedef struct st_out {
	char name[256];
	const char *dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	const void *data;
	size_t nbytes;
} st_out;

/* Write tensors and metadata (meta[i][0] key, meta[i][1] value) atomically. */
int st_write(const char *path, const st_out *t, int n, const char *const (*meta)[2],
	     int n_meta, char *err, size_t errlen);

#endif /* CS_INTEROP_SAFETENSORS_H */
