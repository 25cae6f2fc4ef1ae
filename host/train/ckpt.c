/* ckpt.c - checkpoint file format (see ckpt.h). Layout, little-endian:
 *   "CSCKPT\0\0" u32 version u32 flags i32 n_layer n_head n_embd block_size vocab_size
 *   i32 pad i64 step u64 seed u64 rng_state u32 n_records u32 pad u64 header_checksum
 *   n x { u32 name_len, name, u32 kind, u64 nbytes, u64 checksum, data }
 *   "CSCKEND\0" u64 n_records
 */
#include "train/ckpt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cs_error.h"
#include "train/atomic_file.h"

#define CK_MAGIC "CSCKPT\0\0"
#define CK_END "CSCKEND\0"
#define CK_HDR_BYTES 80

uint64_t ck_checksum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* A record's checksum covers its name, kind and size as well as its data. */
uint64_t ck_record_checksum(const char *name, uint32_t kind, uint64_t nbytes, const void *data)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const uint8_t *parts[3] = { (const uint8_t *)name, (const uint8_t *)&kind,
				    (const uint8_t *)&nbytes };
	size_t lens[3] = { strlen(name), 4, 8 };
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < lens[k]; i++)
			h = (h ^ parts[k][i]) * 0x100000001b3ull;
	const uint8_t *b = data;
	for (uint64_t i = 0; i < nbytes; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void put(uint8_t **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

static void encode_header(uint8_t *buf, const ck_header *h, uint32_t n)
{
	uint8_t *p = buf;
	int32_t dims[6] = { h->model.n_layer, h->model.n_head, h->model.n_embd,
			    h->model.block_size, h->model.vocab_size, 0 };
	uint32_t version = CK_VERSION, pad = 0;
	put(&p, CK_MAGIC, 8);
	put(&p, &version, 4);
	put(&p, &h->flags, 4);
	put(&p, dims, sizeof dims);
	put(&p, &h->step, 8);
	put(&p, &h->seed, 8);
	put(&p, &h->rng_state, 8);
	put(&p, &n, 4);
	put(&p, &pad, 4);
	uint64_t sum = ck_checksum(buf, (size_t)(p - buf));
	put(&p, &sum, 8);
}

int ck_save(const char *path, const ck_header *h, const ck_record *recs, int n, char *err,
	    size_t errlen)
{
	af_file a;
	if (af_open(&a, path)) {
		snprintf(err, errlen, "%s: cannot write checkpoint: %s", path, strerror(errno));
		return CS_ERR_IO;
	}
	uint8_t hdr[CK_HDR_BYTES];
	encode_header(hdr, h, (uint32_t)n);
	fwrite(hdr, 1, sizeof hdr, a.f);
	for (int i = 0; i < n; i++) {
		uint32_t nl = (uint32_t)strlen(recs[i].name);
		uint64_t nb = recs[i].nbytes;
		const void *data = recs[i].data;
		void *made = NULL;
		if (!data && recs[i].fill && nb) {
			if (!(made = malloc(nb))) {
				af_abort(&a);
				snprintf(err, errlen, "%s: cannot write checkpoint: out of memory", path);
				return CS_ERR_NO_MEM;
			}
			recs[i].fill(recs[i].fill_ctx, made);
			data = made;
		}
		uint64_t sum = ck_record_checksum(recs[i].name, recs[i].kind, nb, data);
		fwrite(&nl, 4, 1, a.f);
		fwrite(recs[i].name, 1, nl, a.f);
		fwrite(&recs[i].kind, 4, 1, a.f);
		fwrite(&nb, 8, 1, a.f);
		fwrite(&sum, 8, 1, a.f);
		if (nb)
			fwrite(data, 1, nb, a.f);
		free(made);
	}
	uint64_t nn = (uint64_t)n;
	fwrite(CK_END, 1, 8, a.f);
	fwrite(&nn, 8, 1, a.f);
	if (af_commit(&a)) {
		snprintf(err, errlen, "%s: cannot write checkpoint (disk full?)", path);
		return CS_ERR_IO;
	}
	return CS_OK;
}

void ck_free(ck_file *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->rec[i].data);
	free(f->rec);
	memset(f, 0, sizeof *f);
}

#define BAD(...)                                              \
	do {                                                  \
		snprintf(err, errlen, __VA_ARGS__);           \
		rc = CS_ERR_FORMAT;                           \
		goto out_free;                                \
	} while (0)

int ck_load(const char *path, ck_file *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open checkpoint: %s", path, strerror(errno));
		return errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO;
	}
	struct stat st;
	fstat(fileno(f), &st);
	uint64_t left = (uint64_t)st.st_size;
	int rc = CS_OK;
	uint8_t hdr[CK_HDR_BYTES];
	if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr || memcmp(hdr, CK_MAGIC, 8))
		BAD("%s: not a cshost checkpoint (bad magic)", path);
	left -= sizeof hdr;
	uint32_t version, n, flags;
	int32_t dims[6];
	uint64_t sum;
	memcpy(&version, hdr + 8, 4);
	if (version != CK_VERSION)
		BAD("%s: checkpoint version %u, this cshost reads version %u", path, version,
		    CK_VERSION);
	memcpy(&sum, hdr + 72, 8);
	if (sum != ck_checksum(hdr, 72))
		BAD("%s: corrupt checkpoint (header checksum mismatch)", path);
	memcpy(&flags, hdr + 12, 4);
	memcpy(dims, hdr + 16, sizeof dims);
	memcpy(&out->hdr.step, hdr + 40, 8);
	memcpy(&out->hdr.seed, hdr + 48, 8);
	memcpy(&out->hdr.rng_state, hdr + 56, 8);
	memcpy(&n, hdr + 64, 4);
	out->hdr.version = version;
	out->hdr.flags = flags;
	out->hdr.model = (gpt_config){ dims[0], dims[1], dims[2], dims[3], dims[4] };
	if (n > 100000)
		BAD("%s: corrupt checkpoint (%u records)", path, n);
	out->rec = calloc(n ? n : 1, sizeof *out->rec);
	if (!out->rec) {
		rc = CS_ERR_NO_MEM;
		goto out_free;
	}
	for (uint32_t i = 0; i < n; i++) {
		ck_record *r = &out->rec[i];
		uint32_t nl;
		if (fread(&nl, 4, 1, f) != 1 || nl >= sizeof r->name || nl + 24ull > left)
			BAD("%s: truncated or corrupt checkpoint (record %u)", path, i);
		if (fread(r->name, 1, nl, f) != nl || fread(&r->kind, 4, 1, f) != 1 ||
		    fread(&r->nbytes, 8, 1, f) != 1 || fread(&r->checksum, 8, 1, f) != 1)
			BAD("%s: truncated checkpoint (record %u)", path, i);
		r->name[nl] = 0;
		left -= nl + 24ull;
		if (r->nbytes > left)
			BAD("%s: truncated checkpoint (%s: %llu bytes, %llu left)", path, r->name,
			    (unsigned long long)r->nbytes, (unsigned long long)left);
		r->data = malloc(r->nbytes ? r->nbytes : 1);
		out->n = (int)i + 1;
		if (!r->data) {
			rc = CS_ERR_NO_MEM;
			goto out_free;
		}
		if (fread(r->data, 1, r->nbytes, f) != r->nbytes)
			BAD("%s: truncated checkpoint (%s)", path, r->name);
		left -= r->nbytes;
		if (ck_record_checksum(r->name, r->kind, r->nbytes, r->data) != r->checksum)
			BAD("%s: corrupt checkpoint: checksum mismatch in %s", path, r->name);
	}
	char end[8];
	uint64_t nn;
	if (fread(end, 1, 8, f) != 8 || memcmp(end, CK_END, 8) || fread(&nn, 8, 1, f) != 1 ||
	    nn != n)
		BAD("%s: truncated checkpoint (no end marker)", path);
	fclose(f);
	return CS_OK;
out_free:
	fclose(f);
	ck_free(out);
	return rc;
}

const ck_record *ck_find(const ck_file *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->rec[i].name, name))
			return &f->rec[i];
	return NULL;
}

int ck_check_model(const ck_file *f, const gpt_config *c, const char *path, char *err,
		   size_t errlen)
{
	const gpt_config *k = &f->hdr.model;
	const char *names[] = { "n_layer", "n_head", "n_embd", "block_size", "vocab_size" };
	int a[] = { k->n_layer, k->n_head, k->n_embd, k->block_size, k->vocab_size };
	int b[] = { c->n_layer, c->n_head, c->n_embd, c->block_size, c->vocab_size };
	for (int i = 0; i < 5; i++)
		if (a[i] != b[i]) {
			snprintf(err, errlen,
				 "%s: checkpoint of another model shape: model.%s is %d in the "
				 "checkpoint, %d in the config",
				 path, names[i], a[i], b[i]);
			return CS_ERR_INVALID;
		}
	return CS_OK;
}
