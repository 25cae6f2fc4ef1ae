/* proto.c - host port word packing (docs/architecture.md section 6). */
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
