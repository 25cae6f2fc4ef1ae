/*
 * fuzz_resp.c - libFuzzer target: what the host port answers (docs/architecture.md section
 * 6), decoded by the code the sim and usb backends run. Byte 0 of the input picks the path:
 *   - 0 mod 6: a stream of responses to one op (byte 1: ECHO, READ, COLLECT, SYNC or
 *     COUNTERS; bytes 2-3: the words the command asked for) into proto_resp_decode,
 *     proto_resp_rc and proto_counters_decode (host/driver/proto.c);
 *   - 1..5 mod 6: plan_load (1), or a kernel call of plan_exec (2-5: fwd, bwd, wgrad, bwg)
 *     (host/driver/plan.c) on a small mesh (bytes 1-5: shape, tokens, layer size, weights),
 *     over a fake link: send takes every command word; recv hands out what the input holds
 *     from byte 8 on and, when it runs out, fails with CS_ERR_TIMEOUT as the usb link does
 *     after its timeout. Byte 6 bit 0 clear: the input is the response words
 *     (little-endian); set: it is the bytes of the board's bulk IN transfers (FTDI packets
 *     of 64 bytes with their status bytes, carrying link frames), decoded by the usb
 *     backend's receive path (host/driver/usb_rx.c) as backend_usb.c's link_recv does. The
 *     READ, COLLECT and SYNC answers a kernel expects all come from the input.
 * The result must be CS_OK or a cs_error with a message, and (ASan) nothing may be read or
 * written outside the buffers sized for the command: outputs are allocated to their exact
 * size.
 *
 * The seed corpus (tests/fuzz/corpus/resp) holds valid answers of each kind, recorded from
 * the word-level mesh model (verif/models/mesh_model.c): built with -DFUZZ_RESP_SEEDS this
 * file is the program that writes them (make fuzz-resp-seeds).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/csd.h"
#include "driver/fw.h"
#include "driver/plan.h"
#include "driver/proto.h"
#include "driver/usb_rx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RESP_HDR 8         /* bytes before the words of a kernel input */
#define RESP_MAXPKT 64     /* FTDI packet size of the byte path (full speed; 512 at high) */
#define RESP_XFER 256      /* bytes per bulk IN transfer of the byte path */

static void resp_fail(const char *what, int rc, const char *err)
{
	fprintf(stderr, "fuzz_resp: %s: rc %d (%s) '%s'\n", what, rc, cs_strerror(rc), err);
	abort();
}

static int is_cs_error(int rc)
{
	return rc < 0 && rc >= CS_ERR_EXISTS;
}

/* ---- path 0: responses into the pure decoders --------------------------------------- */

static const unsigned resp_ops[] = { PROTO_ECHO, PROTO_READ, PROTO_COLLECT, PROTO_SYNC,
				     PROTO_COUNTERS };

static void decode_stream(const uint8_t *data, size_t size)
{
	if (size < 4)
		return;
	unsigned op = resp_ops[data[1] % 5];
	unsigned want = (unsigned)data[2] | (unsigned)data[3] << 8;
	if (op == PROTO_COLLECT && want > PROTO_COLLECT_MAX)
		want = PROTO_COLLECT_MAX;
	if (op == PROTO_COUNTERS)
		want = PROTO_COUNTERS_WORDS;
	if (op == PROTO_SYNC)
		want = 0;
	size_t nw = (size - 4) / 4;
	uint32_t *w = malloc(nw ? nw * sizeof *w : 1); /* exactly the words: ASan sees overreads */
	if (!w)
		return;
	memcpy(w, data + 4, nw * 4);
	size_t at = 0;
	while (at < nw) {
		char err[256] = "";
		struct proto_resp r;
		int used = proto_resp_decode(&r, w + at, nw - at, op, want, err, sizeof err);
		if (used < 0) {
			if (used != CS_ERR_PROTOCOL || !err[0])
				resp_fail("proto_resp_decode", used, err);
			break;
		}
		if (used < 1 || (size_t)used > nw - at || r.words > want ||
		    (op == PROTO_SYNC && r.words) || r.op != op)
			resp_fail("proto_resp_decode: a response it should have refused", used,
				  err);
		int rc = proto_resp_rc(&r, want, err, sizeof err);
		if (rc && (!is_cs_error(rc) || !err[0]))
			resp_fail("proto_resp_rc", rc, err);
		if (!rc && (r.status != PROTO_ST_OK || r.words != want))
			resp_fail("proto_resp_rc: a failed command passed", rc, err);
		if (op == PROTO_COUNTERS) {
			struct proto_counters c;
			rc = proto_counters_decode(&c, w + at, nw - at, err, sizeof err);
			if (rc && (!is_cs_error(rc) || !err[0]))
				resp_fail("proto_counters_decode", rc, err);
		}
		at += (size_t)used;
	}
	free(w);
}

/* ---- paths 1-5: a kernel over a link that answers with the input -------------------- */

struct fake_link {
	const uint8_t *bytes; /* the words (little-endian) or the link bytes */
	size_t nwords, at;    /* words path: in words */
	int link_bytes;       /* the bytes path: usb_rx decodes them */
	size_t nbytes;
	struct usb_rx rx;
	frm_tx tx;
	uint64_t now, sent;
	FILE *record; /* seed writer: what the model answered */
	void *model;
};

static int fake_send(void *ctx, const uint32_t *w, size_t n)
{
	struct fake_link *l = ctx;
	(void)w;
	l->sent += n;
	return CS_OK;
}

/* backend_usb.c's link_recv without libusb: a transfer at a time until n words wait */
static int fake_recv_bytes(struct fake_link *l, uint32_t *w, size_t n)
{
	while (usb_rx_avail(&l->rx) < n) {
		if (l->rx.bad) {
			l->rx.bad = 0;
			return CS_ERR_PROTOCOL;
		}
		if (l->at >= l->nbytes)
			return CS_ERR_TIMEOUT;
		size_t m = l->nbytes - l->at < RESP_XFER ? l->nbytes - l->at : RESP_XFER;
		uint8_t *buf = malloc(m); /* exactly the transfer: ASan sees overreads */
		if (!buf)
			return CS_ERR_NO_MEM;
		memcpy(buf, l->bytes + l->at, m);
		l->at += m;
		l->now += 1000;
		int progress = 0;
		int rc = usb_rx_feed(&l->rx, &l->tx, buf, m, RESP_MAXPKT, l->now, &progress);
		free(buf);
		if (rc)
			return rc;
		usb_rx_poll(&l->rx, l->now);
	}
	usb_rx_take(&l->rx, w, n);
	return CS_OK;
}

static int fake_recv(void *ctx, uint32_t *w, size_t n)
{
	struct fake_link *l = ctx;
	if (l->link_bytes)
		return fake_recv_bytes(l, w, n);
	if (n > l->nwords - l->at) {
		l->at = l->nwords;
		return CS_ERR_TIMEOUT;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *b = l->bytes + 4 * (l->at + i);
		w[i] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
		       (uint32_t)b[3] << 24;
	}
	l->at += n;
	return CS_OK;
}

static const struct csd_fw *kernels_fw(void)
{
	static struct csd_fw fw;
	static int state; /* 0 not tried, 1 loaded, -1 failed */
	if (!state) {
		char err[256];
		state = csd_fw_get(&fw, "kernels", err, sizeof err) ? -1 : 1;
		if (state < 0)
			fprintf(stderr, "fuzz_resp: firmware: %s\n", err);
	}
	return state > 0 ? &fw : NULL;
}

/* What bytes 1-5 of an input choose: a mesh of 1x1 to 2x2 PEs with small SRAMs (tiling
 * and batches come early), a layer of at most 24 x 24, at most 16 tokens. */
struct kcase {
	int kind; /* -1 plan_load, else the plan_kernel */
	struct plan_geom g;
	int T, n_out, n_in;
	unsigned wseed;
};

static void kcase_of(struct kcase *k, const uint8_t *d)
{
	memset(k, 0, sizeof *k);
	k->kind = d[0] % 6 - 2;
	k->g.rows = 1 + (d[1] & 1);
	k->g.cols = 1 + (d[1] >> 1 & 1);
	k->g.a_words = 512;
	k->g.b_words = 256;
	k->g.hazard_cycles = 4;
	k->g.ctl_cycles = 6;
	k->g.major_cycles = 6;
	k->g.no_tune = d[1] >> 2 & 1;
	k->T = 1 + d[2] % 16;
	k->n_out = 1 + d[3] % 24;
	k->n_in = 1 + d[4] % 24;
	k->wseed = d[5];
}

/* Deterministic sparse weights (about half kept, some rows and columns empty). */
static int make_weights(csd_sparse *sp, const struct kcase *k)
{
	size_t n = (size_t)k->n_out * (size_t)k->n_in;
	float *w = calloc(n, sizeof *w);
	if (!w)
		return CS_ERR_NO_MEM;
	uint32_t s = 0x9e3779b9u ^ k->wseed * 2654435761u;
	for (size_t i = 0; i < n; i++) {
		s = s * 1664525u + 1013904223u;
		if (s >> 31)
			w[i] = (float)((int)(s >> 20 & 0xff) - 128) / 64.0f;
	}
	int rc = csd_sparse_from_dense(sp, w, NULL, k->n_out, k->n_in);
	free(w);
	return rc;
}

/* One kernel case over link; outputs sized exactly. */
static int run_case(const struct kcase *k, struct plan_link *link, char *err, size_t errlen)
{
	const struct csd_fw *fw = kernels_fw();
	struct plan_stats st = { 0 };
	if (!fw)
		return CS_ERR_NOT_FOUND;
	if (k->kind < 0)
		return plan_load(&k->g, fw, link, &st, err, errlen);
	enum plan_kernel kern = (enum plan_kernel)k->kind;
	struct plan pl;
	int rc = plan_make(&pl, &k->g, kern, k->T, k->n_out, k->n_in, err, errlen);
	if (rc)
		return rc;
	csd_sparse sp;
	if ((rc = make_weights(&sp, k)))
		return rc;
	plan_tune(&pl, &sp);
	/* plan.h's plan_io: every buffer exactly its size */
	size_t T = (size_t)k->T, nnz = (size_t)sp.nnz;
	size_t na = T * (size_t)(kern == PLAN_FWD || kern == PLAN_WGRAD ? k->n_in : k->n_out);
	size_t nb = kern == PLAN_WGRAD ? T * (size_t)k->n_out : kern == PLAN_BWG ? T * (size_t)k->n_in : 0;
	size_t nout = kern == PLAN_WGRAD ? nnz : T * (size_t)(kern == PLAN_FWD ? k->n_out : k->n_in);
	uint16_t *act = malloc((na ? na : 1) * sizeof *act), *bact = malloc((nb ? nb : 1) * sizeof *bact);
	float *out = malloc((nout ? nout : 1) * sizeof *out);
	float *out2 = malloc((nnz ? nnz : 1) * sizeof *out2);
	if (!act || !bact || !out || !out2) {
		rc = CS_ERR_NO_MEM;
		goto out_free;
	}
	for (size_t i = 0; i < na; i++)
		act[i] = (uint16_t)(0x3f80 + (i & 0x3f));
	for (size_t i = 0; i < nb; i++)
		bact[i] = (uint16_t)(0xbf00 + (i & 0x7f));
	struct plan_io io = { .w = &sp, .act = act, .bact = bact, .out = out,
			      .out2 = kern == PLAN_BWG ? out2 : NULL };
	rc = plan_exec(&pl, fw, &io, link, &st, err, errlen);
out_free:
	free(act);
	free(bact);
	free(out);
	free(out2);
	csd_sparse_free(&sp);
	return rc;
}

static void kernel_case(const uint8_t *data, size_t size)
{
	if (size < RESP_HDR)
		return;
	struct kcase k;
	kcase_of(&k, data);
	struct fake_link fl = { .bytes = data + RESP_HDR, .nwords = (size - RESP_HDR) / 4,
				.link_bytes = data[6] & 1, .nbytes = size - RESP_HDR };
	usb_rx_init(&fl.rx, 0, 0);
	frm_tx_init(&fl.tx, 1000, 8, 0);
	struct plan_link link = { .ctx = &fl, .send = fake_send, .recv = fake_recv,
				  .timeout_cycles = 1000 };
	char err[512] = "";
	int rc = run_case(&k, &link, err, sizeof err);
	usb_rx_free(&fl.rx);
	if (rc == CS_ERR_NOT_FOUND && !kernels_fw())
		abort(); /* the target cannot run without its firmware */
	if (rc && (!is_cs_error(rc) || !err[0]))
		resp_fail("plan_exec/plan_load", rc, err);
	if (!memchr(err, 0, sizeof err))
		resp_fail("unterminated message", rc, "");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 6 == 0)
		decode_stream(data, size);
	else
		kernel_case(data, size);
	return 0;
}

#ifdef FUZZ_RESP_SEEDS
/* The seed writer: each command kind's answer as the word-level mesh model gives it. */
#include "../../verif/models/mesh_model.h"

static int model_send(void *ctx, const uint32_t *w, size_t n)
{
	struct fake_link *l = ctx;
	return mesh_model_send(l->model, w, n) ? CS_ERR_DEVICE : CS_OK;
}

static int model_recv(void *ctx, uint32_t *w, size_t n)
{
	struct fake_link *l = ctx;
	if (mesh_model_recv(l->model, w, n))
		return CS_ERR_TIMEOUT;
	if (l->record)
		fwrite(w, 4, n, l->record); /* little-endian hosts only, as the target reads */
	return CS_OK;
}

/* The words of a seed as the board would send them: DATA frames of up to 64 words (SEQ
 * from 0) in FTDI packets of RESP_MAXPKT bytes, each starting with its two status bytes. */
static void write_link_bytes(FILE *f, const uint32_t *w, size_t n)
{
	static uint8_t stream[1 << 20];
	size_t len = 0;
	for (size_t at = 0, seq = 0; at < n; seq++) {
		int m = n - at < 64 ? (int)(n - at) : 64;
		int l = frm_encode(stream + len, sizeof stream - len, FRM_DATA, (uint8_t)seq, w + at,
				   m);
		if (l < 0)
			exit(1);
		len += (size_t)l;
		at += (size_t)m;
	}
	for (size_t at = 0; at < len; at += RESP_MAXPKT - 2) {
		size_t m = len - at < RESP_MAXPKT - 2 ? len - at : RESP_MAXPKT - 2;
		fputc(0x31, f); /* modem status: CTS, DSR */
		fputc(0x60, f); /* line status: THRE, TEMT (no errors) */
		fwrite(stream + at, 1, m, f);
	}
}

static FILE *seed_file(const char *dir, const char *name, const uint8_t *hdr, size_t n)
{
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "wb");
	if (!f) {
		perror(p);
		exit(1);
	}
	fwrite(hdr, 1, n, f);
	return f;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1];
	static const char *const kname[] = { "load", "fwd", "bwd", "wgrad", "bwg" };
	/* kernels: 2x2 and 1x2 meshes, a layer that tiles, every kind */
	for (int kind = 0; kind < 5; kind++)
		for (int shape = 1; shape <= 3; shape += 2) {
			uint8_t hdr[RESP_HDR] = { (uint8_t)(kind + 1), (uint8_t)shape, 11, 21, 19,
						  (uint8_t)(7 + kind) };
			struct kcase k;
			kcase_of(&k, hdr);
			struct mesh_model mm;
			if (mesh_model_init(&mm, k.g.rows, k.g.cols, k.g.a_words, k.g.b_words,
					    k.g.dot_by_major))
				return 1;
			struct fake_link fl = { .model = &mm };
			struct plan_link link = { .ctx = &fl, .send = model_send, .recv = model_recv,
						  .timeout_cycles = 100000 };
			char err[512] = "", name[64];
			struct kcase load = k;
			load.kind = -1;
			int rc = run_case(&load, &link, err, sizeof err);
			snprintf(name, sizeof name, "%s-%dx%d.bin", kname[kind], k.g.rows, k.g.cols);
			fl.record = seed_file(dir, name, hdr, sizeof hdr);
			if (!rc)
				rc = run_case(&k, &link, err, sizeof err);
			fclose(fl.record);
			mesh_model_free(&mm);
			if (rc) {
				fprintf(stderr, "%s: %s\n", name, err);
				return 1;
			}
			if (!kind)
				continue; /* plan_load reads no answer */
			/* the same answers as link bytes */
			char p[1024];
			snprintf(p, sizeof p, "%s/%s", dir, name);
			FILE *f = fopen(p, "rb");
			static uint32_t words[1 << 18];
			size_t nw = 0;
			if (!f || fseek(f, RESP_HDR, SEEK_SET))
				return 1;
			nw = fread(words, 4, sizeof words / 4, f);
			fclose(f);
			hdr[6] = 1;
			snprintf(name, sizeof name, "%s-%dx%d-link.bin", kname[kind], k.g.rows,
				 k.g.cols);
			f = seed_file(dir, name, hdr, sizeof hdr);
			write_link_bytes(f, words, nw);
			fclose(f);
		}
	/* each op's answer alone, as the pure decoders take it */
	struct mesh_model mm;
	if (mesh_model_init(&mm, 2, 2, 512, 256, 0))
		return 1;
	static const struct {
		const char *name;
		unsigned op_index, want;
		uint32_t cmd[8];
		size_t ncmd, nrsp;
	} one[] = {
		{ "echo.bin", 0, 3, { 0x10000003u, 1, 0xdeadbeef, 0x5e1f0000 }, 4, 4 },
		{ "read.bin", 1, 4, { 0x32ff0004u, 0 }, 2, 20 },
		{ "collect.bin", 2, 0, { 0x60000000u, 100 }, 2, 1 },
		{ "sync.bin", 3, 0, { 0x70000000u, 1000 }, 2, 1 },
		{ "counters.bin", 4, 14, { 0x80010000u }, 1, 15 },
	};
	for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
		uint32_t rsp[32];
		if (mesh_model_send(&mm, one[i].cmd, one[i].ncmd) ||
		    mesh_model_recv(&mm, rsp, one[i].nrsp)) {
			fprintf(stderr, "%s: the model did not answer\n", one[i].name);
			return 1;
		}
		uint8_t hdr[4] = { 0, (uint8_t)one[i].op_index, (uint8_t)(one[i].want & 0xff),
				   (uint8_t)(one[i].want >> 8) };
		FILE *f = seed_file(dir, one[i].name, hdr, sizeof hdr);
		fwrite(rsp, 4, one[i].nrsp, f);
		fclose(f);
	}
	mesh_model_free(&mm);
	return 0;
}
#endif
