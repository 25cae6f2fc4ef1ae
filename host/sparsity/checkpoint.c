/*
 * checkpoint.c - masks and algorithm state in checkpoints. Little-endian byte stream:
 *   "CSSPMASK" magic, u32 version (1), u32 n_groups, u64 seed, i64 step,
 *   f64 cumulative train FLOPs dense, f64 sparse, per group: i32 cycling index of the
 *   sparsity schedule, i32 of the drop fraction; u32 n_tensors, per sparsified tensor:
 *   u16 name length, name, u64 numel, u32 flags (1 frozen, 2 removed), u8 has_mask,
 *   f64 target sparsity, then ceil(numel/8) bytes of mask bits (element i at bit i%8 of
 *   byte i/8) if has_mask; u32 CRC-32 (IEEE) of everything before it.
 * The weights themselves are the trainer's (stored with zeros at pruned positions).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_crc32.h"
#include "sparsity/sp_internal.h"

#define SP_CKPT_MAGIC "CSSPMASK"
#define SP_CKPT_VERSION 1u

typedef struct wbuf {
	uint8_t *p;
	size_t n, cap;
	int oom;
} wbuf;

static void put(wbuf *b, const void *src, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *np = realloc(b->p, cap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
}

static void put_u(wbuf *b, uint64_t v, int bytes)
{
	uint8_t t[8];
	for (int i = 0; i < bytes; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	put(b, t, (size_t)bytes);
}

static void put_f64(wbuf *b, double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	put_u(b, u, 8);
}

int sp_state_save_buf(const sp_state *st, uint8_t **buf, size_t *len)
{
	*buf = NULL;
	*len = 0;
	if (!st || st->plan_only)
		return CS_ERR_INVALID;
	wbuf b = { 0 };
	put(&b, SP_CKPT_MAGIC, 8);
	put_u(&b, SP_CKPT_VERSION, 4);
	put_u(&b, (uint64_t)st->cfg->n_groups, 4);
	put_u(&b, st->seed, 8);
	put_u(&b, (uint64_t)st->step, 8);
	put_f64(&b, st->flops_train_dense);
	put_f64(&b, st->flops_train_sparse);
	for (int g = 0; g < st->cfg->n_groups; g++) {
		put_u(&b, (uint64_t)(uint32_t)st->gs[g].cyc_sparsity, 4);
		put_u(&b, (uint64_t)(uint32_t)st->gs[g].cyc_drop, 4);
	}
	uint32_t nt = 0;
	for (int i = 0; i < st->n; i++)
		nt += st->t[i].group >= 0;
	put_u(&b, nt, 4);
	for (int i = 0; i < st->n; i++) {
		const sp_tensor *t = &st->t[i];
		if (t->group < 0)
			continue;
		size_t nl = strlen(t->name);
		put_u(&b, nl, 2);
		put(&b, t->name, nl);
		put_u(&b, t->numel, 8);
		put_u(&b, t->flags, 4);
		put_u(&b, t->mask ? 1 : 0, 1);
		put_f64(&b, t->target);
		if (!t->mask)
			continue;
		for (size_t k = 0; k < t->numel; k += 8) {
			uint8_t byte = 0;
			for (size_t j = 0; j < 8 && k + j < t->numel; j++)
				byte |= (uint8_t)((t->mask[k + j] ? 1u : 0u) << j);
			put(&b, &byte, 1);
		}
	}
	put_u(&b, cs_crc32(b.p, b.n), 4);
	if (b.oom) {
		free(b.p);
		return CS_ERR_NO_MEM;
	}
	*buf = b.p;
	*len = b.n;
	return 0;
}

typedef struct rbuf {
	const uint8_t *p;
	size_t n, off;
	int bad;
} rbuf;

static uint64_t get_u(rbuf *r, int bytes)
{
	if (r->bad || r->n - r->off < (size_t)bytes) {
		r->bad = 1;
		return 0;
	}
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)r->p[r->off + (size_t)i] << (8 * i);
	r->off += (size_t)bytes;
	return v;
}

static double get_f64(rbuf *r)
{
	uint64_t u = get_u(r, 8);
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

static const uint8_t *get_bytes(rbuf *r, size_t n)
{
	if (r->bad || r->n - r->off < n) {
		r->bad = 1;
		return NULL;
	}
	const uint8_t *p = r->p + r->off;
	r->off += n;
	return p;
}

#define LOAD_ERR(code, ...)                                 \
	do {                                                \
		if (err && errlen)                          \
			snprintf(err, errlen, __VA_ARGS__); \
		rc = (code);                                \
		goto out;                                   \
	} while (0)

/* A fused "<prefix>attn.qkv.weight" of a checkpoint written before q, k and v were
 * sparsified as separate parts: the three part indices, if all are sparsified with masks
 * and a third of numel each. */
static int legacy_qkv(const sp_state *st, const char *nm, size_t nl, size_t numel, int *parts)
{
	static const char suf[] = "qkv.weight";
	size_t k = sizeof suf - 1;
	if (nl < k || nl - k > 200 || memcmp(nm + nl - k, suf, k) || numel % 3)
		return 0;
	for (int p = 0; p < 3; p++) {
		char name[256];
		snprintf(name, sizeof name, "%.*s%c.weight", (int)(nl - k), nm, "qkv"[p]);
		parts[p] = -1;
		for (int i = 0; i < st->n; i++)
			if (!strcmp(st->t[i].name, name))
				parts[p] = i;
		if (parts[p] < 0 || st->t[parts[p]].group < 0 || !st->t[parts[p]].mask ||
		    st->t[parts[p]].numel != numel / 3)
			return 0;
	}
	return 1;
}

int sp_state_load_buf(sp_state *st, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	if (!st || st->plan_only || !buf)
		return CS_ERR_INVALID;
	int rc = 0;
	int *seen = calloc((size_t)st->n + 1, sizeof *seen);
	uint8_t **masks = calloc((size_t)st->n + 1, sizeof *masks);
	unsigned *flags = calloc((size_t)st->n + 1, sizeof *flags);
	double *targets = calloc((size_t)st->n + 1, sizeof *targets);
	int *cyc = calloc((size_t)st->cfg->n_groups * 2 + 1, sizeof *cyc);
	if (!seen || !masks || !flags || !targets || !cyc)
		LOAD_ERR(CS_ERR_NO_MEM, "sparsity checkpoint: out of memory");
	if (len < 12 || memcmp(buf, SP_CKPT_MAGIC, 8))
		LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: bad magic (not a mask file)");
	rbuf r = { buf, len - 4, 0, 0 };
	uint32_t crc = (uint32_t)buf[len - 4] | (uint32_t)buf[len - 3] << 8 |
		       (uint32_t)buf[len - 2] << 16 | (uint32_t)buf[len - 1] << 24;
	if (cs_crc32(buf, len - 4) != crc)
		LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: checksum mismatch (file corrupt or "
					"truncated; use an older checkpoint)");
	get_bytes(&r, 8);
	uint32_t ver = (uint32_t)get_u(&r, 4);
	if (ver != SP_CKPT_VERSION)
		LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: version %u, this build reads %u",
			 ver, SP_CKPT_VERSION);
	uint32_t ng = (uint32_t)get_u(&r, 4);
	if (ng != (uint32_t)st->cfg->n_groups)
		LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: %u groups, the config has %d (load "
					"with the config the run was started with)",
			 ng, st->cfg->n_groups);
	uint64_t seed = get_u(&r, 8);
	long step = (long)get_u(&r, 8);
	double fd = get_f64(&r), fs = get_f64(&r);
	for (uint32_t g = 0; g < ng * 2; g++)
		cyc[g] = (int)(int32_t)get_u(&r, 4);
	uint32_t nt = (uint32_t)get_u(&r, 4);
	for (uint32_t k = 0; k < nt && !r.bad; k++) {
		size_t nl = (size_t)get_u(&r, 2);
		const uint8_t *nm = get_bytes(&r, nl);
		size_t numel = (size_t)get_u(&r, 8);
		unsigned fl = (unsigned)get_u(&r, 4);
		int has = (int)get_u(&r, 1);
		double tg = get_f64(&r);
		if (r.bad)
			break;
		int idx = -1;
		for (int i = 0; i < st->n; i++)
			if (strlen(st->t[i].name) == nl && !memcmp(st->t[i].name, nm, nl))
				idx = i;
		int parts[3];
		if (idx < 0 && legacy_qkv(st, (const char *)nm, nl, numel, parts)) {
			/* saved before q, k and v were sparsified separately: the fused mask's
			 * thirds are the parts' masks */
			if (!has)
				LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: fused '%.*s' has no mask "
							"to split into q, k and v",
					 (int)nl, (const char *)nm);
			const uint8_t *bits = get_bytes(&r, (numel + 7) / 8);
			if (!bits)
				break;
			size_t pn = numel / 3;
			for (int k = 0; k < 3; k++) {
				int pi = parts[k];
				if (seen[pi])
					LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: %s is stored twice",
						 st->t[pi].name);
				seen[pi] = 1;
				flags[pi] = fl;
				masks[pi] = malloc(pn);
				if (!masks[pi])
					LOAD_ERR(CS_ERR_NO_MEM, "sparsity checkpoint: out of memory");
				size_t kept = 0;
				for (size_t i = 0; i < pn; i++) {
					size_t e = (size_t)k * pn + i;
					masks[pi][i] = (bits[e / 8] >> (e % 8)) & 1u;
					kept += masks[pi][i];
				}
				targets[pi] = 1.0 - (double)kept / (double)pn;
			}
			continue;
		}
		if (idx < 0 && nl >= 10 && !memcmp(nm + nl - 10, "qkv.weight", 10))
			LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: fused '%.*s' was saved before "
						"q, k and v were sparsified separately, and this config "
						"does not sparsify all three of its parts (select "
						"attn.qkv.weight, or start a new run)",
				 (int)nl, (const char *)nm);
		if (idx < 0 || st->t[idx].group < 0)
			LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: tensor '%.*s' is not sparsified "
						"by this config",
				 (int)nl, (const char *)nm);
		sp_tensor *t = &st->t[idx];
		if (seen[idx])
			LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: %s is stored twice", t->name);
		if (numel != t->numel)
			LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: %s has %zu elements, the model %zu",
				 t->name, numel, t->numel);
		if (has && !t->mask && !(t->flags & SP_TF_REMOVED))
			LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: %s has a mask but is dense here",
				 t->name);
		seen[idx] = 1;
		flags[idx] = fl;
		targets[idx] = tg;
		if (has) {
			const uint8_t *bits = get_bytes(&r, (numel + 7) / 8);
			if (!bits)
				break;
			masks[idx] = malloc(numel);
			if (!masks[idx])
				LOAD_ERR(CS_ERR_NO_MEM, "sparsity checkpoint: out of memory");
			for (size_t i = 0; i < numel; i++)
				masks[idx][i] = (bits[i / 8] >> (i % 8)) & 1u;
		}
	}
	if (r.bad || r.off != r.n)
		LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: truncated or trailing data");
	for (int i = 0; i < st->n; i++)
		if (st->t[i].group >= 0 && !seen[i])
			LOAD_ERR(CS_ERR_FORMAT, "sparsity checkpoint: no entry for %s (saved with a "
						"different config?)",
				 st->t[i].name);
	/* all checks passed: replace the state */
	st->seed = seed;
	st->step = step;
	st->flops_train_dense = fd;
	st->flops_train_sparse = fs;
	for (int g = 0; g < st->cfg->n_groups; g++) {
		st->gs[g].cyc_sparsity = cyc[2 * g];
		st->gs[g].cyc_drop = cyc[2 * g + 1];
	}
	for (int i = 0; i < st->n; i++) {
		sp_tensor *t = &st->t[i];
		if (!seen[i])
			continue;
		t->flags = flags[i];
		t->target = targets[i];
		t->changed = 1;
		if (masks[i]) {
			if (!t->mask) {
				t->mask = masks[i];
				masks[i] = NULL;
				if (!t->scratch)
					t->scratch = malloc(t->numel);
				if (!t->scratch)
					LOAD_ERR(CS_ERR_NO_MEM, "sparsity checkpoint: out of memory");
			} else {
				memcpy(t->mask, masks[i], t->numel);
			}
		} else if (t->mask) {
			free(t->mask);
			t->mask = NULL;
		}
	}
	sp_apply(st);
out:
	for (int i = 0; masks && i < st->n; i++)
		free(masks[i]);
	free(masks);
	free(seen);
	free(flags);
	free(targets);
	free(cyc);
	return rc;
}

int sp_state_save(const sp_state *st, FILE *f)
{
	uint8_t *b;
	size_t n;
	int rc = sp_state_save_buf(st, &b, &n);
	if (rc < 0)
		return rc;
	uint64_t len = n;
	uint8_t hdr[8];
	for (int i = 0; i < 8; i++)
		hdr[i] = (uint8_t)(len >> (8 * i));
	if (fwrite(hdr, 1, 8, f) != 8 || fwrite(b, 1, n, f) != n)
		rc = CS_ERR_IO;
	free(b);
	return rc;
}

/* The FILE form is prefixed with its u64 length so it can sit inside a larger file. */
int sp_state_load(sp_state *st, FILE *f, char *err, size_t errlen)
{
	uint8_t hdr[8];
	if (fread(hdr, 1, 8, f) != 8) {
		if (err && errlen)
			snprintf(err, errlen, "sparsity checkpoint: truncated length prefix");
		return CS_ERR_FORMAT;
	}
	uint64_t len = 0;
	for (int i = 0; i < 8; i++)
		len |= (uint64_t)hdr[i] << (8 * i);
	if (len < 12 || len > ((uint64_t)1 << 40)) {
		if (err && errlen)
			snprintf(err, errlen, "sparsity checkpoint: implausible length %llu",
				 (unsigned long long)len);
		return CS_ERR_FORMAT;
	}
	uint8_t *b = malloc((size_t)len);
	if (!b)
		return CS_ERR_NO_MEM;
	int rc;
	if (fread(b, 1, (size_t)len, f) != (size_t)len) {
		if (err && errlen)
			snprintf(err, errlen, "sparsity checkpoint: truncated (%llu bytes expected)",
				 (unsigned long long)len);
		rc = CS_ERR_FORMAT;
	} else {
		rc = sp_state_load_buf(st, b, (size_t)len, err, errlen);
	}
	free(b);
	return rc;
}
