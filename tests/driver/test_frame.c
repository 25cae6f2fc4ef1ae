/*
 * test_frame.c - the host link framing library (host/driver/frame.c): encoder and decoder
 * round trips, corruption of every bit of a frame, truncation at every length, resync, and
 * the go-back-N sender against a C model of the device receiver (board_frame_rx.v's rules)
 * over a channel that corrupts, truncates, drops, duplicates and reorders frames. The
 * sender must deliver every word exactly once and in order.
 * TEST_SEED replays a seed; REGRESS=1 runs many more channel seeds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/frame.h"

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rng_below(uint32_t n)
{
	return (uint32_t)(rng_next() % n);
}

static uint64_t base_seed(void)
{
	const char *s = getenv("TEST_SEED");
	return s ? strtoull(s, NULL, 0) : 1;
}

static int regress_mode(void)
{
	const char *r = getenv("REGRESS");
	return r && *r && strcmp(r, "0") != 0;
}

/* feed bytes; return the number of complete frames and the last result */
static int feed(frm_dec *d, const uint8_t *b, size_t n, uint64_t *now, int *frames)
{
	int last = 0;
	for (size_t i = 0; i < n; i++) {
		last = frm_dec_byte(d, b[i], (*now)++);
		if (last == FRM_GOT_FRAME)
			(*frames)++;
	}
	return last;
}

static void test_crc_check_value(void **state)
{
	(void)state;
	/* the catalogue check value of CRC-16/CCITT-FALSE */
	assert_int_equal(frm_crc16(0xffff, (const uint8_t *)"123456789", 9), 0x29b1);
}

static void test_encode_layout(void **state)
{
	(void)state;
	uint8_t buf[64];
	uint32_t w[2] = { 0x11223344, 0xa5a5a5a5 };
	int len = frm_encode(buf, sizeof buf, FRM_DATA, 0x42, w, 2);
	assert_int_equal(len, FRM_OVERHEAD + 8);
	const uint8_t head[] = { 0x7e, 0x01, 0x42, 0x02, 0x00, 0x44, 0x33, 0x22, 0x11 };
	assert_memory_equal(buf, head, sizeof head);
	uint16_t crc = frm_crc16(0xffff, buf + 1, (size_t)len - 3);
	assert_int_equal(buf[len - 2], crc & 0xff);
	assert_int_equal(buf[len - 1], crc >> 8);
	assert_int_equal(frm_encode(buf, sizeof buf, FRM_DATA, 0, w, 256), CS_ERR_RANGE);
	assert_int_equal(frm_encode(buf, 10, FRM_DATA, 0, w, 2), CS_ERR_RANGE);
	assert_int_equal(frm_encode(buf, sizeof buf, FRM_DATA, 0, NULL, 1), CS_ERR_INVALID);
	assert_int_equal(frm_encode(buf, sizeof buf, FRM_ACK, 7, NULL, 0), FRM_OVERHEAD);
}

static void test_round_trip(void **state)
{
	(void)state;
	static uint8_t buf[FRM_MAX_BYTES];
	static uint32_t w[FRM_MAX_WORDS];
	frm_dec d;
	uint64_t now = 0;
	rng_state = base_seed();
	frm_dec_init(&d, 100, 0);
	int sizes[] = { 0, 1, 2, 3, 254, 255 };
	for (int r = 0; r < 200; r++) {
		int n = r < 6 ? sizes[r] : (int)rng_below(FRM_MAX_WORDS + 1);
		for (int i = 0; i < n; i++)
			w[i] = (uint32_t)rng_next();
		/* payloads full of SOF bytes must not confuse the decoder */
		if (r % 7 == 1)
			for (int i = 0; i < n; i++)
				w[i] = 0x7e7e7e7e;
		uint8_t type = n == 0 ? FRM_ACK : FRM_DATA;
		uint8_t seq = type == FRM_DATA ? d.data_expect : (uint8_t)r;
		int len = frm_encode(buf, sizeof buf, type, seq, w, n);
		assert_true(len > 0);
		int frames = 0;
		int last = feed(&d, buf, (size_t)len, &now, &frames);
		assert_int_equal(last, FRM_GOT_FRAME);
		assert_int_equal(frames, 1);
		assert_int_equal(d.frame.type, type);
		assert_int_equal(d.frame.seq, seq);
		assert_int_equal(d.frame.n, n);
		if (n)
			assert_memory_equal(d.frame.words, w, 4 * (size_t)n);
	}
	assert_int_equal(d.err_crc + d.err_hdr + d.err_trunc + d.err_seq, 0);
}

/* Flip every bit of a frame in turn: never a frame, and the decoder recovers (after a byte
 * timeout when the corrupted LEN made it wait for more bytes). */
static void test_corruption_every_bit(void **state)
{
	(void)state;
	uint8_t good[FRM_OVERHEAD + 12], bad[sizeof good];
	uint32_t w[3] = { 0x7e000001, 0xdeadbeef, 0x0000007e };
	int len = frm_encode(good, sizeof good, FRM_DATA, 0, w, 3);
	assert_int_equal(len, (int)sizeof good);
	for (int pos = 0; pos < len; pos++) {
		for (int bit = 0; bit < 8; bit++) {
			frm_dec d;
			uint64_t now = 0;
			int frames = 0;
			frm_dec_init(&d, 10, 0);
			memcpy(bad, good, sizeof bad);
			bad[pos] ^= (uint8_t)(1u << bit);
			feed(&d, bad, sizeof bad, &now, &frames);
			assert_int_equal(frames, 0);
			now += 20;
			frm_dec_poll(&d, now);
			/* a good frame afterwards decodes */
			feed(&d, good, sizeof good, &now, &frames);
			assert_int_equal(frames, 1);
			assert_memory_equal(d.frame.words, w, sizeof w);
			if (pos > 0) /* a lost SOF is silence, not an error */
				assert_true(d.err_crc + d.err_hdr + d.err_trunc >= 1);
		}
	}
}

static void test_truncation_every_length(void **state)
{
	(void)state;
	uint8_t good[FRM_OVERHEAD + 16];
	uint32_t w[4] = { 1, 2, 3, 4 };
	int len = frm_encode(good, sizeof good, FRM_DATA, 0, w, 4);
	for (int cut = 1; cut < len; cut++) {
		frm_dec d;
		uint64_t now = 0;
		int frames = 0;
		frm_dec_init(&d, 10, 0);
		feed(&d, good, (size_t)cut, &now, &frames);
		assert_int_equal(frm_dec_poll(&d, now + 5), 0); /* not yet */
		now += 11;
		feed(&d, good, (size_t)len, &now, &frames); /* the timeout is noticed on this byte */
		assert_int_equal(frames, 1);
		assert_int_equal(d.err_trunc, 1);
		assert_int_equal(d.err_crc, 0);
	}
}

static void test_resync_and_seq(void **state)
{
	(void)state;
	uint8_t buf[64];
	uint32_t w = 0x12345678;
	frm_dec d;
	uint64_t now = 0;
	int frames = 0;
	frm_dec_init(&d, 0, 5);
	const uint8_t junk[] = { 0x00, 0x7e, 0x7e, 0x09, 0xff, 0x7e };
	feed(&d, junk, sizeof junk, &now, &frames);
	int len = frm_encode(buf, sizeof buf, FRM_DATA, 5, &w, 1);
	feed(&d, buf, (size_t)len, &now, &frames);
	/* the junk ends in a SOF, so the real SOF is a bad TYPE; the one after it resyncs */
	assert_int_equal(frames, 1);
	assert_int_equal(d.data_expect, 6);
	/* a skipped device SEQ is reported, the frame still delivered */
	len = frm_encode(buf, sizeof buf, FRM_DATA, 8, &w, 1);
	int r = 0;
	for (int i = 0; i < len; i++)
		r = frm_dec_byte(&d, buf[i], now++);
	assert_int_equal(r, CS_ERR_PROTOCOL);
	assert_int_equal(d.err_seq, 1);
	assert_int_equal(d.data_expect, 9);
	/* STAT parsing */
	uint32_t sw[2] = { 0x00020001, 0x09070003 };
	len = frm_encode(buf, sizeof buf, FRM_STAT, 7, sw, 2);
	frames = 0;
	feed(&d, buf, (size_t)len, &now, &frames);
	assert_int_equal(frames, 1);
	frm_stat st;
	assert_int_equal(frm_stat_parse(&st, &d.frame), CS_OK);
	assert_int_equal(st.err_crc, 1);
	assert_int_equal(st.err_trunc, 2);
	assert_int_equal(st.err_seq, 3);
	assert_int_equal(st.rx_expect, 7);
	assert_int_equal(st.tx_seq, 9);
}

static frm_frame mkframe(uint8_t type, uint8_t seq)
{
	frm_frame f;
	memset(&f, 0, sizeof f);
	f.type = type;
	f.seq = seq;
	return f;
}

static void test_window_ack_nak_timeout(void **state)
{
	(void)state;
	static frm_tx t;
	const uint8_t *b;
	uint32_t w[1] = { 0 };
	frm_tx_init(&t, 100, 2, 254); /* start near the wrap */
	for (int i = 0; i < FRM_WINDOW; i++)
		assert_int_equal(frm_tx_push(&t, w, 1), (uint8_t)(254 + i));
	assert_int_equal(frm_tx_push(&t, w, 1), CS_ERR_RANGE);
	assert_int_equal(frm_tx_space(&t), 0);
	for (int i = 0; i < FRM_WINDOW; i++) {
		assert_int_equal(frm_tx_next(&t, &b, 0), FRM_OVERHEAD + 4);
		assert_int_equal(b[2], (uint8_t)(254 + i));
	}
	assert_int_equal(frm_tx_next(&t, &b, 1), 0);
	frm_frame f = mkframe(FRM_ACK, 255); /* cumulative: 254 and 255 */
	assert_int_equal(frm_tx_on_frame(&t, &f, 2), 2);
	assert_int_equal(frm_tx_pending(&t), 2);
	f = mkframe(FRM_ACK, 255); /* duplicate ACK: ignored */
	assert_int_equal(frm_tx_on_frame(&t, &f, 2), 0);
	/* NAK 1: frame 0 arrived, resend from 1 */
	f = mkframe(FRM_NAK, 1);
	assert_int_equal(frm_tx_on_frame(&t, &f, 3), 1);
	assert_int_equal(frm_tx_next(&t, &b, 4), FRM_OVERHEAD + 4);
	assert_int_equal(b[2], 1);
	assert_int_equal(t.retransmits, 1);
	assert_int_equal(frm_tx_next(&t, &b, 4), 0);
	/* timeouts without progress: resend twice, then give up */
	assert_int_equal(frm_tx_next(&t, &b, 104), FRM_OVERHEAD + 4);
	assert_int_equal(b[2], 1);
	assert_int_equal(frm_tx_next(&t, &b, 204), FRM_OVERHEAD + 4);
	assert_int_equal(frm_tx_next(&t, &b, 304), CS_ERR_TIMEOUT);
	assert_int_equal(t.timeouts, 3);
	/* a NAK naming the next new frame acknowledges everything */
	f = mkframe(FRM_NAK, 2);
	assert_int_equal(frm_tx_on_frame(&t, &f, 305), 1);
	assert_int_equal(frm_tx_pending(&t), 0);
	assert_int_equal(frm_tx_next(&t, &b, 1000), 0); /* no timeout on an empty window */
	f = mkframe(FRM_NAK, 9); /* outside the window */
	assert_int_equal(frm_tx_on_frame(&t, &f, 1001), 0);
	assert_int_equal(frm_tx_push(&t, w, 0), CS_ERR_RANGE);
}

/* ---- go-back-N over an impaired channel, against a model of the device receiver ------- */

struct devmodel {
	frm_dec dec;
	uint8_t expect;
	uint32_t *got;
	size_t ngot, cap;
	uint64_t err_crc, err_seq;
};

struct chan {
	uint8_t *buf;
	size_t len, cap;
};

static void chan_put(struct chan *c, const uint8_t *b, size_t n)
{
	if (n == 0)
		return;
	if (c->len + n > c->cap) {
		c->cap = (c->len + n) * 2;
		c->buf = realloc(c->buf, c->cap);
		assert_non_null(c->buf);
	}
	memcpy(c->buf + c->len, b, n);
	c->len += n;
}

static void chan_drop_front(struct chan *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* Device side (board_frame_rx.v rules, without its buffer-full flow control, which the board
 * bench exercises): DATA SEQ == expected: deliver, ACK; SEQ within the
 * window behind expected: duplicate, ACK expected - 1; else NAK expected. Bad CRC: NAK. */
static void dev_byte(struct devmodel *m, uint8_t b, uint64_t now, struct chan *reply,
		     uint32_t d2h_corrupt_per_mille)
{
	uint64_t crc_before = m->dec.err_crc;
	uint64_t seq_before = m->dec.err_seq;
	int r = frm_dec_byte(&m->dec, b, now);
	uint8_t out[FRM_OVERHEAD];
	int send = 0;
	uint8_t type = 0, seq = 0;
	if (m->dec.err_crc != crc_before) {
		m->err_crc++;
		send = 1, type = FRM_NAK, seq = m->expect;
	} else if (r == FRM_GOT_FRAME || m->dec.err_seq != seq_before) {
		const frm_frame *f = &m->dec.frame;
		uint8_t behind = (uint8_t)(m->expect - f->seq);
		if (f->type != FRM_DATA) {
			return;
		} else if (f->seq == m->expect) {
			for (int i = 0; i < f->n; i++) {
				assert_true(m->ngot < m->cap);
				m->got[m->ngot++] = f->words[i];
			}
			send = 1, type = FRM_ACK, seq = m->expect++;
		} else if (behind >= 1 && behind <= FRM_WINDOW) {
			send = 1, type = FRM_ACK, seq = (uint8_t)(m->expect - 1);
		} else {
			m->err_seq++;
			send = 1, type = FRM_NAK, seq = m->expect;
		}
	}
	if (send) {
		int len = frm_encode(out, sizeof out, type, seq, NULL, 0);
		if (rng_below(1000) < d2h_corrupt_per_mille)
			out[rng_below((uint32_t)len)] ^= (uint8_t)(1u << rng_below(8));
		chan_put(reply, out, (size_t)len);
	}
}

struct impair {
	uint32_t corrupt, truncate, drop, dup, reorder, d2h_corrupt; /* per mille of frames */
};

static void run_channel(uint64_t seed, const struct impair *imp, size_t nwords)
{
	static frm_tx t;
	struct devmodel m;
	frm_dec hd;
	struct chan h2d = { 0 }, d2h = { 0 }, held = { 0 };
	uint32_t *src = malloc(nwords * sizeof *src);
	assert_non_null(src);
	memset(&m, 0, sizeof m);
	m.cap = nwords;
	m.got = malloc(nwords * sizeof *m.got);
	assert_non_null(m.got);
	rng_state = seed;
	for (size_t i = 0; i < nwords; i++)
		src[i] = (uint32_t)rng_next();
	/* times in byte slots; timeouts sized like the board's (byte timeout ~ 100 bytes) */
	frm_tx_init(&t, 4 * FRM_MAX_BYTES, 50, 0);
	frm_dec_init(&m.dec, 100, 0);
	frm_dec_init(&hd, 100, 0);
	uint64_t now = 0;
	size_t pushed = 0;
	int pending_gap = 0;
	int impaired = 0; /* frames corrupted, truncated, dropped or held back */

	for (uint64_t iter = 0; m.ngot < nwords; iter++) {
		assert_true(iter < 50000000);
		while (pushed < nwords && frm_tx_space(&t) > 0) {
			int n = 1 + (int)rng_below(FRM_MAX_WORDS);
			if ((size_t)n > nwords - pushed)
				n = (int)(nwords - pushed);
			assert_true(frm_tx_push(&t, src + pushed, n) >= 0);
			pushed += (size_t)n;
		}
		const uint8_t *b;
		int len = 0;
		while (h2d.len == 0 && (len = frm_tx_next(&t, &b, now)) > 0) {
			static uint8_t tmp[FRM_MAX_BYTES];
			memcpy(tmp, b, (size_t)len);
			uint32_t x = rng_below(1000);
			if (x < imp->corrupt + imp->truncate + imp->drop)
				impaired++;
			if (x < imp->corrupt) {
				tmp[rng_below((uint32_t)len)] ^= (uint8_t)(1u << rng_below(8));
			} else if ((x -= imp->corrupt) < imp->truncate) {
				len = 1 + (int)rng_below((uint32_t)len - 1);
				pending_gap = 1;
			} else if ((x -= imp->truncate) < imp->drop) {
				len = 0;
			} else if ((x -= imp->drop) < imp->dup) {
				chan_put(&h2d, tmp, (size_t)len);
			} else if ((x -= imp->dup) < imp->reorder && held.len == 0) {
				chan_put(&held, tmp, (size_t)len); /* goes out after the next frame */
				impaired++;
				len = 0;
			}
			chan_put(&h2d, tmp, (size_t)len);
			if (held.len && len) {
				chan_put(&h2d, held.buf, held.len);
				held.len = 0;
			}
			if (pending_gap)
				break;
		}
		assert_true(len >= 0 || h2d.len > 0); /* never CS_ERR_TIMEOUT */
		if (h2d.len == 0 && held.len) {
			chan_put(&h2d, held.buf, held.len);
			held.len = 0;
		}
		/* move one byte each way per slot (full duplex, equal rates) */
		if (h2d.len) {
			dev_byte(&m, h2d.buf[0], now, &d2h, imp->d2h_corrupt);
			chan_drop_front(&h2d, 1);
			if (h2d.len == 0 && pending_gap) {
				now += 150; /* the wire went quiet mid-frame */
				pending_gap = 0;
			}
		}
		if (d2h.len) {
			int r = frm_dec_byte(&hd, d2h.buf[0], now);
			chan_drop_front(&d2h, 1);
			if (r == FRM_GOT_FRAME)
				frm_tx_on_frame(&t, &hd.frame, now);
		}
		now++;
		frm_dec_poll(&m.dec, now);
		frm_dec_poll(&hd, now);
	}
	assert_int_equal(m.ngot, nwords);
	assert_memory_equal(m.got, src, nwords * sizeof *src);
	if (impaired)
		assert_true(t.retransmits > 0);
	free(src);
	free(m.got);
	free(h2d.buf);
	free(d2h.buf);
	free(held.buf);
}

static void test_gbn_clean(void **state)
{
	(void)state;
	struct impair imp = { 0 };
	run_channel(base_seed(), &imp, 5000);
}

static void test_gbn_nak(void **state)
{
	(void)state;
	struct impair imp = { .corrupt = 150 };
	run_channel(base_seed() + 1, &imp, 5000);
}

static void test_gbn_timeout(void **state)
{
	(void)state;
	struct impair imp = { .drop = 100, .truncate = 100, .d2h_corrupt = 100 };
	run_channel(base_seed() + 2, &imp, 5000);
}

static void test_gbn_dup_reorder(void **state)
{
	(void)state;
	struct impair imp = { .dup = 150, .reorder = 150 };
	run_channel(base_seed() + 3, &imp, 5000);
}

static void test_gbn_everything(void **state)
{
	(void)state;
	struct impair imp = { 60, 30, 30, 30, 30, 50 };
	int seeds = regress_mode() ? 200 : 8;
	uint64_t s0 = base_seed();
	printf("seed %llu (set TEST_SEED to replay)\n", (unsigned long long)s0);
	for (int i = 0; i < seeds; i++)
		run_channel(s0 * 1000 + (uint64_t)i, &imp, 3000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc_check_value),
		cmocka_unit_test(test_encode_layout),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_corruption_every_bit),
		cmocka_unit_test(test_truncation_every_length),
		cmocka_unit_test(test_resync_and_seq),
		cmocka_unit_test(test_window_ack_nak_timeout),
		cmocka_unit_test(test_gbn_clean),
		cmocka_unit_test(test_gbn_nak),
		cmocka_unit_test(test_gbn_timeout),
		cmocka_unit_test(test_gbn_dup_reorder),
		cmocka_unit_test(test_gbn_everything),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
