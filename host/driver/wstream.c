/* wstream.c - the host-port word stream (wstream.h): buffering, counting, answers. */
#include "driver/wstream.h"

#include <stdio.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/proto.h"

int ws_flush(struct wstream *ws)
{
	if (ws->rc || !ws->buf || !ws->n)
		return ws->rc;
	ws->rc = ws->link->send(ws->link->ctx, ws->buf, ws->n);
	ws->n = 0;
	return ws->rc;
}

void ws_put(struct wstream *ws, uint32_t w)
{
	ws->st->words_out++;
	if (!ws->buf)
		return;
	if (ws->n == ws->cap && ws_flush(ws))
		return;
	ws->buf[ws->n++] = w;
}

uint32_t *ws_reserve(struct wstream *ws, size_t n)
{
	ws->st->words_out += n;
	if (!ws->buf)
		return NULL;
	if (ws->n + n > ws->cap && ws_flush(ws))
		return NULL;
	uint32_t *p = ws->buf + ws->n;
	ws->n += n;
	return p;
}

int ws_recv(struct wstream *ws, uint32_t *w, size_t n, unsigned op, unsigned want_n,
		   char *err, size_t errlen)
{
	ws->st->words_in += 1 + n;
	if (!ws->buf)
		return CS_OK;
	if (ws_flush(ws))
		return ws->rc;
	uint32_t h;
	struct proto_resp r;
	int rc = ws->link->recv(ws->link->ctx, &h, 1);
	if (rc) {
		snprintf(err, errlen, "%s: no response header (%s)", proto_op_name(op),
			 cs_strerror(rc));
		return rc;
	}
	/* at most the n words w holds, whatever the header says */
	if ((rc = proto_resp_parse(&r, h, op, (unsigned)n, err, errlen)))
		return rc;
	if (r.words && (rc = ws->link->recv(ws->link->ctx, w, r.words))) {
		snprintf(err, errlen, "%s: response truncated (%s)", proto_op_name(op),
			 cs_strerror(rc));
		return rc;
	}
	return proto_resp_rc(&r, want_n, err, errlen);
}

/* SYNC's answer is one header word whose n field is the host port's error count since
 * CLEAR (rtl/mesh/mesh_hostport.v; no data words follow). */
int ws_recv_sync(struct wstream *ws, unsigned *nerr, char *err, size_t errlen)
{
	*nerr = 0;
	ws->st->words_in += 1;
	if (!ws->buf)
		return CS_OK;
	if (ws_flush(ws))
		return ws->rc;
	uint32_t h;
	struct proto_resp r;
	int rc = ws->link->recv(ws->link->ctx, &h, 1);
	if (rc) {
		snprintf(err, errlen, "SYNC: no response (%s)", cs_strerror(rc));
		return rc;
	}
	if ((rc = proto_resp_parse(&r, h, PROTO_SYNC, 0, err, errlen)) ||
	    (rc = proto_resp_rc(&r, 0, err, errlen)))
		return rc;
	*nerr = r.n;
	return CS_OK;
}

/* A WRITE of n words holds the host port for its n + 2 words; the config chain is a
 * pipeline, so consecutive WRITEs overlap and only the last one's trip through the P
 * stages shows, in the SYNC that follows it (sync_point). A READ of every PE reads the
 * PEs one after the other, each answer behind a trip round the chain (measured). */
uint64_t ws_write_cycles(uint64_t n)
{
	return n + 2;
}

uint64_t ws_read_cycles(int P, uint64_t n)
{
	return (uint64_t)P * (n + 2 + (uint64_t)P);
}

void ws_write(struct wstream *ws, unsigned target, unsigned pe, unsigned addr,
	      const uint32_t *data, size_t n)
{
	int act = target == PROTO_T_A || target == PROTO_T_B;
	ws_write_to(ws, act ? &ws->st->act_words_out : NULL, target, pe, addr, data, n);
}

void ws_write_to(struct wstream *ws, uint64_t *words, unsigned target, unsigned pe,
		 unsigned addr, const uint32_t *data, size_t n)
{
	ws_put(ws, proto_hdr_write(target, pe, (unsigned)n));
	ws_put(ws, addr);
	if (words)
		*words += n + 2;
	if (words == &ws->st->act_words_out)
		ws->st->act_cycles += ws_write_cycles(n);
	if (ws->buf)
		for (size_t k = 0; k < n; k++)
			ws_put(ws, data[k]);
	else
		ws->st->words_out += n;
	ws->st->cycles += ws_write_cycles(n);
}

size_t ws_pack_bf16_rows(uint32_t *dst, const uint16_t *src, int T, int ld, int off, int width,
			 int first, int tp_k)
{
	size_t ne = (size_t)tp_k * width, nw = (ne + 1) / 2;
	memset(dst, 0, nw * sizeof *dst);
	uint16_t *h = (uint16_t *)dst; /* little-endian host: element e at half e */
	for (int u = 0; u < tp_k; u++) {
		int t = first + u;
		if (t >= T)
			break;
		memcpy(h + (size_t)u * width, src + (size_t)t * ld + off, (size_t)width * 2);
	}
	return nw;
}

static int sync_cost(struct wstream *ws, uint64_t cycles, const char *what, char *err,
		     size_t errlen)
{
	unsigned nerr;
	ws_put(ws, proto_hdr_sync());
	ws_put(ws, ws->link->timeout_cycles);
	ws->st->cycles += cycles;
	int rc = ws_recv_sync(ws, &nerr, err, errlen);
	if (!rc && nerr) {
		snprintf(err, errlen, "%s: device reports %u errors", what, nerr);
		rc = CS_ERR_DEVICE;
	}
	return rc;
}

int ws_sync(struct wstream *ws, int P, const char *what, char *err, size_t errlen)
{
	return sync_cost(ws, (uint64_t)P + 4, what, err, errlen);
}

/* Behind WRITEs alone (measured on pe, 1x1 .. 4x4): the SYNC answers P + 2 cycles after
 * the last data word entered the chain when a unicast WRITE to PE P - 1 took it, a cycle
 * later when it was broadcast (passed on past the last stage) or the mesh is 1x1. */
int ws_sync_writes(struct wstream *ws, int P, int bcast, const char *what, char *err,
		   size_t errlen)
{
	return sync_cost(ws, (uint64_t)P + 2 + (bcast || P == 1), what, err, errlen);
}
