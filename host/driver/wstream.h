/*
 * wstream.h - the host-port word stream every command stream of the driver is built on
 * (plan.c's kernels, resident.c's transfers and vector programs): words buffered towards
 * a plan_link, counted into plan_stats, responses checked as they are read. Not public.
 * With a counting link (send == NULL) nothing is built or read: only the words, bytes and
 * cycles the real protocol would move are counted, so the cpu backend's accounting is the
 * stream itself, not a formula kept beside it.
 */
#ifndef CS_WSTREAM_H
#define CS_WSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "driver/plan.h"

struct wstream {
	struct plan_link *link;
	struct plan_stats *st;
	uint32_t *buf; /* NULL when counting */
	size_t n, cap;
	int rc;
};

/* Send what is buffered; the stream's first error sticks in ws->rc. */
int ws_flush(struct wstream *ws);
/* Append (and count) one word. */
void ws_put(struct wstream *ws, uint32_t w);
/* Reserve n contiguous words (n <= ws->cap) in the buffer; counts them. NULL when counting
 * or on a send error. */
uint32_t *ws_reserve(struct wstream *ws, size_t n);
/* Read the answer to op: a header announcing at most n words into w (checked: magic, op,
 * length), then its words; 0 only when the status is OK with want_n words. */
int ws_recv(struct wstream *ws, uint32_t *w, size_t n, unsigned op, unsigned want_n, char *err,
	    size_t errlen);
/* Read SYNC's answer: one header whose n is the host port's error count since CLEAR. */
int ws_recv_sync(struct wstream *ws, unsigned *nerr, char *err, size_t errlen);
/* SYNC (the mesh idle, every configuration write landed) and its check: the host port's
 * error count since CLEAR must be 0 (else CS_ERR_DEVICE, "what: device reports N errors").
 * Estimated P + 4 cycles. */
int ws_sync(struct wstream *ws, int P, const char *what, char *err, size_t errlen);
/* The same right behind WRITEs whose last one went to PE P - 1 (bcast 0) or to every PE
 * (bcast 1): estimated P + 2 cycles, P + 3 broadcast or on a 1x1. */
int ws_sync_writes(struct wstream *ws, int P, int bcast, const char *what, char *err,
		   size_t errlen);
/* WRITE of n words at addr of target on pe (PROTO_PE_ALL: every PE). data may be NULL when
 * counting. Counts the words, the config chain's cycles and, for targets A and B, the
 * words and cycles as activation traffic. */
void ws_write(struct wstream *ws, unsigned target, unsigned pe, unsigned addr,
	      const uint32_t *data, size_t n);
/* The same, its words (headers included) counted into *words (NULL: no class; when it is
 * &st->act_words_out, the cycles into act_cycles too). */
void ws_write_to(struct wstream *ws, uint64_t *words, unsigned target, unsigned pe,
		 unsigned addr, const uint32_t *data, size_t n);

/* Estimated cycles of a WRITE of n words (the config chain pipelines consecutive WRITEs)
 * and of a READ of n words from each of P PEs (one after the other, each answer behind a
 * trip round the chain; measured on pe). */
uint64_t ws_write_cycles(uint64_t n);
uint64_t ws_read_cycles(int P, uint64_t n);

/* Pack tp_k rows of `width` bf16 elements (rows first..first+tp_k of src [T, ld] from
 * column off, zero beyond T) into words, the even element in the low half. Returns the
 * words. */
size_t ws_pack_bf16_rows(uint32_t *dst, const uint16_t *src, int T, int ld, int off, int width,
			 int first, int tp_k);

#endif /* CS_WSTREAM_H */
