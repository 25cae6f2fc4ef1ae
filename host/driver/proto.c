/*
 * proto.c - host port word packing, and the checks of what the port answers
 * (docs/architecture.md section 6). Every backend that reads responses (plan.c's streams
 * for sim and usb, cshost board) decodes them here, and tests/fuzz/fuzz_resp.c feeds this
 * any words.
 */
#include <stdio.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/proto.h"

size_t proto_pack_runs(uint32_t *out, unsigned color, unsigned major, const int32_t *idx,
		       const uint16_t *val, size_t n, int32_t base)
{
	uint32_t *o = out;
	while (n) {
		size_t m = n < PROTO_RUN_MAX ? n : PROTO_RUN_MAX;
		*o++ = proto_hdr_run(color, (unsigned)m, major);
		for (size_t k = 0; k < m; k++)
			o[k] = (uint32_t)(idx[k] - base) << 16 | val[k];
		o += m;
		idx += m;
		val += m;
		n -= m;
	}
	return (size_t)(o - out);
}

const char *proto_op_name(unsigned op)
{
	static const char *const names[] = { "NOP",  "ECHO",    "WRITE", "READ",     "RUN",
					     "INJECT", "COLLECT", "SYNC", "COUNTERS", "CLEAR" };
	return op < sizeof names / sizeof names[0] ? names[op] : "UNKNOWN";
}

const char *proto_status_name(unsigned st)
{
	static const char *const names[] = { "OK", "BAD_OP", "BAD_ADDR", "BAD_PE", "TIMEOUT",
					     "BAD_ARG" };
	return st < sizeof names / sizeof names[0] ? names[st] : "UNKNOWN";
}

int proto_resp_parse(struct proto_resp *r, uint32_t h, unsigned op, unsigned max_words,
		     char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	if (proto_resp_magic(h) != PROTO_RESP_MAGIC || proto_resp_op(h) != op) {
		snprintf(err, errlen, "%s: unexpected response header 0x%08x", proto_op_name(op),
			 h);
		return CS_ERR_PROTOCOL;
	}
	r->op = op;
	r->status = proto_resp_status(h);
	r->n = proto_resp_n(h);
	r->words = op == PROTO_SYNC ? 0 : r->n;
	if (r->words > max_words) {
		snprintf(err, errlen, "%s: response of %u words, expected %u", proto_op_name(op),
			 r->words, max_words);
		return CS_ERR_PROTOCOL;
	}
	return CS_OK;
}

int proto_resp_rc(const struct proto_resp *r, unsigned want_words, char *err, size_t errlen)
{
	if (r->status == PROTO_ST_OK && r->words == want_words)
		return CS_OK;
	if (r->op == PROTO_SYNC)
		snprintf(err, errlen, "SYNC: device status %s (%u errors)",
			 proto_status_name(r->status), r->n);
	else
		snprintf(err, errlen, "%s: device status %s (%u of %u words)",
			 proto_op_name(r->op), proto_status_name(r->status), r->words, want_words);
	return r->status == PROTO_ST_TIMEOUT ? CS_ERR_TIMEOUT : CS_ERR_DEVICE;
}

int proto_resp_decode(struct proto_resp *r, const uint32_t *w, size_t avail, unsigned op,
		      unsigned max_words, char *err, size_t errlen)
{
	if (!avail) {
		memset(r, 0, sizeof *r);
		snprintf(err, errlen, "%s: no response header", proto_op_name(op));
		return CS_ERR_PROTOCOL;
	}
	int rc = proto_resp_parse(r, w[0], op, max_words, err, errlen);
	if (rc)
		return rc;
	if (avail - 1 < r->words) {
		snprintf(err, errlen, "%s: response truncated (%zu of %u words)",
			 proto_op_name(op), avail - 1, r->words);
		return CS_ERR_PROTOCOL;
	}
	return (int)(1 + r->words);
}

int proto_counters_decode(struct proto_counters *c, const uint32_t *w, size_t avail, char *err,
			  size_t errlen)
{
	struct proto_resp r;
	memset(c, 0, sizeof *c);
	int rc = proto_resp_decode(&r, w, avail, PROTO_COUNTERS, PROTO_COUNTERS_WORDS, err,
				   errlen);
	if (rc < 0)
		return rc;
	if (r.status == PROTO_ST_OK && r.words != PROTO_COUNTERS_WORDS) {
		snprintf(err, errlen, "COUNTERS: response of %u words, expected %u", r.words,
			 PROTO_COUNTERS_WORDS);
		return CS_ERR_PROTOCOL;
	}
	if ((rc = proto_resp_rc(&r, PROTO_COUNTERS_WORDS, err, errlen)))
		return rc;
	c->cycles = (uint64_t)w[2] << 32 | w[1];
	memcpy(c->pe, w + 3, sizeof c->pe);
	memcpy(c->router, w + 8, sizeof c->router);
	c->errors = w[14];
	return CS_OK;
}
