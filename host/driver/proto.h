/*
 * proto.h - the host port's 32-bit command and response words (docs/architecture.md
 * section 6), and the wavelet payloads the host injects (section 1). Pure encoders and
 * decoders: no I/O here. Every backend that talks to a mesh (sim, usb) and the cpu backend
 * (which only counts words) build their streams from these.
 */
#ifndef CS_PROTO_H
#define CS_PROTO_H

#include <stddef.h>
#include <stdint.h>

enum proto_op {
	PROTO_NOP = 0x0,
	PROTO_ECHO = 0x1,
	PROTO_WRITE = 0x2,
	PROTO_READ = 0x3,
	PROTO_RUN = 0x4,
	PROTO_INJECT = 0x5,
	PROTO_COLLECT = 0x6,
	PROTO_SYNC = 0x7,
	PROTO_COUNTERS = 0x8,
	PROTO_CLEAR = 0x9,
};

enum proto_target {
	PROTO_T_A = 0,
	PROTO_T_B = 1,
	PROTO_T_BCLR = 2, /* B read-and-clear (READ only) */
	PROTO_T_IMEM = 3,
	PROTO_T_TASK = 4,
	PROTO_T_ROUTE = 5,
	PROTO_T_QMAP = 6,
	PROTO_T_REG = 7,
	PROTO_T_PECTR = 8,
	PROTO_T_RTRCTR = 9,
};

enum proto_status {
	PROTO_ST_OK = 0,
	PROTO_ST_BAD_OP = 1,
	PROTO_ST_BAD_ADDR = 2,
	PROTO_ST_BAD_PE = 3,
	PROTO_ST_TIMEOUT = 4,
	PROTO_ST_BAD_ARG = 5,
};

/* Colors (section 2) and control ops (section 1). */
enum { PROTO_C_BCAST = 0, PROTO_C_RR0 = 1, PROTO_C_RR1 = 2, PROTO_C_CR0 = 3, PROTO_C_CR1 = 4,
       PROTO_C_OUT = 5 };
enum { PROTO_CTL_SET_MAJOR = 0, PROTO_CTL_START = 1, PROTO_CTL_END = 2, PROTO_CTL_SELFTEST = 3,
       PROTO_CTL_SET_BBASE = 4, PROTO_CTL_SET_BSTRIDE = 5 };

#define PROTO_PE_ALL 0xffu
#define PROTO_RUN_MAX 255u
/* In a RUN's nonzero word: this nonzero belongs to the next major (the host port emits
 * SET_MAJOR major+1 before it and clears the bit); minor indices stay below 2^15. */
#define PROTO_RUN_STEP 0x80000000u
/* In an axpy nonzero on pe (index below 2^14): the output's first touch, B = fmac(val, A, +0)
 * without reading B; with val +0 the result is +0 whatever A (docs/architecture.md 4.4). */
#define PROTO_NZ_FIRST 0x40000000u
#define PROTO_COLLECT_MAX 256u /* the host port's COLLECT buffer (mesh_top CollectDepth) */
#define PROTO_RESP_MAGIC 0xau

static inline uint32_t proto_hdr_echo(unsigned n)
{
	return (uint32_t)PROTO_ECHO << 28 | (n & 0xffffu);
}
static inline uint32_t proto_hdr_write(unsigned target, unsigned pe, unsigned n)
{
	return (uint32_t)PROTO_WRITE << 28 | (target & 0xfu) << 24 | (pe & 0xffu) << 16 | (n & 0xffffu);
}
static inline uint32_t proto_hdr_read(unsigned target, unsigned pe, unsigned n)
{
	return (uint32_t)PROTO_READ << 28 | (target & 0xfu) << 24 | (pe & 0xffu) << 16 | (n & 0xffffu);
}
static inline uint32_t proto_hdr_run(unsigned color, unsigned n, unsigned major)
{
	return (uint32_t)PROTO_RUN << 28 | (color & 0xfu) << 24 | (n & 0xffu) << 16 | (major & 0xffffu);
}
static inline uint32_t proto_hdr_inject(unsigned color, int ctrl, unsigned n)
{
	return (uint32_t)PROTO_INJECT << 28 | (color & 0xfu) << 24 | (uint32_t)(ctrl ? 1 : 0) << 23 |
	       (n & 0xffffu);
}
static inline uint32_t proto_hdr_collect(unsigned n)
{
	return (uint32_t)PROTO_COLLECT << 28 | (n & 0xffffu);
}
static inline uint32_t proto_hdr_sync(void)
{
	return (uint32_t)PROTO_SYNC << 28;
}
static inline uint32_t proto_hdr_counters(unsigned pe)
{
	return (uint32_t)PROTO_COUNTERS << 28 | (pe & 0xffu) << 16;
}
static inline uint32_t proto_hdr_clear(void)
{
	return (uint32_t)PROTO_CLEAR << 28;
}

/* Control wavelet payload {op[3:0], 12'b0, arg[15:0]}. */
static inline uint32_t proto_ctl(unsigned op, unsigned arg)
{
	return (uint32_t)(op & 0xfu) << 28 | (arg & 0xffffu);
}
/* Data wavelet payload of a sparse stream {idx[15:0], val[15:0]}. */
static inline uint32_t proto_nz(unsigned idx, uint16_t val)
{
	return (uint32_t)(idx & 0xffffu) << 16 | val;
}

/* Response header fields. */
static inline unsigned proto_resp_magic(uint32_t h) { return h >> 28; }
static inline unsigned proto_resp_op(uint32_t h) { return (h >> 24) & 0xfu; }
static inline unsigned proto_resp_status(uint32_t h) { return (h >> 16) & 0xffu; }
static inline unsigned proto_resp_n(uint32_t h) { return h & 0xffffu; }
static inline uint32_t proto_resp_hdr(unsigned op, unsigned status, unsigned n)
{
	return (uint32_t)PROTO_RESP_MAGIC << 28 | (op & 0xfu) << 24 | (status & 0xffu) << 16 |
	       (n & 0xffffu);
}

/*
 * Decoding what the host port answers (everything here is pure: the words come from a
 * link the caller reads, and may be anything a faulty or hostile device sends).
 * A response is a header and the payload words it announces: ECHO n, READ n per PE,
 * COLLECT k (also with status TIMEOUT), COUNTERS 14; SYNC's n is the host port's error
 * count and no words follow. A failing command answers {status, n = 0}.
 */
struct proto_resp {
	unsigned op, status, n; /* the header's fields */
	unsigned words;         /* payload words that follow the header */
};

#define PROTO_COUNTERS_WORDS 14u

/* Check header h as the answer to a command `op` whose answer carries at most max_words
 * payload words (the n of a READ, ECHO or COLLECT; COUNTERS: 14; SYNC: any, it has none).
 * 0 with *r filled, or CS_ERR_PROTOCOL with err saying why: not a response header, the
 * answer of another op, or more words than the command can produce (the caller must not
 * read them into a buffer sized for the command). The status is not judged here. */
int proto_resp_parse(struct proto_resp *r, uint32_t h, unsigned op, unsigned max_words,
		     char *err, size_t errlen);

/* The status of a parsed response as a cs_error, for a command that expected want_words
 * payload words: 0 when OK with exactly those, CS_ERR_TIMEOUT for TIMEOUT, else
 * CS_ERR_DEVICE (err names the status and the words received). */
int proto_resp_rc(const struct proto_resp *r, unsigned want_words, char *err, size_t errlen);

/* One whole response to op from the words w[0..avail): proto_resp_parse on w[0], and the
 * payload must be there. Returns the words it takes (1 + r->words) or CS_ERR_PROTOCOL. */
int proto_resp_decode(struct proto_resp *r, const uint32_t *w, size_t avail, unsigned op,
		      unsigned max_words, char *err, size_t errlen);

/* COUNTERS' answer (docs/architecture.md section 6): the cycle counter, the PE's 5
 * counters, its router's 6, the host port's error count. */
struct proto_counters {
	uint64_t cycles;
	uint32_t pe[5];
	uint32_t router[6];
	uint32_t errors;
};
/* Decode a COUNTERS answer w[0..avail) (header + 14 words): 0, CS_ERR_PROTOCOL (malformed,
 * short or another length) or the status's error (proto_resp_rc). */
int proto_counters_decode(struct proto_counters *c, const uint32_t *w, size_t avail, char *err,
			  size_t errlen);

/* Words a RUN stream of n nonzeros of one major takes (headers included). */
static inline uint64_t proto_run_words(uint64_t n)
{
	return n + (n + PROTO_RUN_MAX - 1) / PROTO_RUN_MAX;
}

/*
 * Pack the nonzeros of one major index into RUN commands (no steps: each RUN one major;
 * plan.c builds major-spanning RUNs itself) on color `color`: for each chunk
 * of at most 255 nonzeros a header, then {idx[k] - base, val[k]}. out must hold
 * proto_run_words(n) words; returns the number written. This is the host's hot loop
 * (bench target: >= 100 M nonzeros/s/core).
 */
size_t proto_pack_runs(uint32_t *out, unsigned color, unsigned major, const int32_t *idx,
		       const uint16_t *val, size_t n, int32_t base);

/* Name of an op / status for messages ("WRITE", "BAD_ADDR"). */
const char *proto_op_name(unsigned op);
const char *proto_status_name(unsigned st);

#endif /* CS_PROTO_H */
