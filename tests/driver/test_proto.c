/*
 * test_proto.c - host/driver/proto.c's response checks and host/driver/usb_rx.c's receive
 * path on answers a faulty board could give: each is refused with the error and message
 * the backends report, or decoded exactly. (tests/fuzz/fuzz_resp.c throws arbitrary ones
 * at the same code; this pins what each answer must give.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/proto.h"
#include "driver/usb_rx.h"

static void test_resp_parse(void **state)
{
	(void)state;
	char err[128];
	struct proto_resp r;
	uint32_t h = proto_resp_hdr(PROTO_READ, PROTO_ST_OK, 16);
	assert_int_equal(proto_resp_parse(&r, h, PROTO_READ, 16, err, sizeof err), CS_OK);
	assert_int_equal(r.op, PROTO_READ);
	assert_int_equal(r.words, 16);
	assert_int_equal(proto_resp_rc(&r, 16, err, sizeof err), CS_OK);
	/* another op's answer, a bad magic */
	assert_int_equal(proto_resp_parse(&r, h, PROTO_COLLECT, 16, err, sizeof err),
			 CS_ERR_PROTOCOL);
	assert_string_equal(err, "COLLECT: unexpected response header 0xa3000010");
	assert_int_equal(proto_resp_parse(&r, h & 0x7fffffffu, PROTO_READ, 16, err, sizeof err),
			 CS_ERR_PROTOCOL);
	/* more words than the command can produce: refused before anything is read */
	assert_int_equal(proto_resp_parse(&r, proto_resp_hdr(PROTO_READ, 0, 0xffff), PROTO_READ,
					  16, err, sizeof err),
			 CS_ERR_PROTOCOL);
	assert_string_equal(err, "READ: response of 65535 words, expected 16");
	/* fewer words, a failed command, a timeout */
	assert_int_equal(proto_resp_parse(&r, proto_resp_hdr(PROTO_READ, 0, 3), PROTO_READ, 16,
					  err, sizeof err),
			 CS_OK);
	assert_int_equal(proto_resp_rc(&r, 16, err, sizeof err), CS_ERR_DEVICE);
	assert_string_equal(err, "READ: device status OK (3 of 16 words)");
	proto_resp_parse(&r, proto_resp_hdr(PROTO_READ, PROTO_ST_BAD_ADDR, 0), PROTO_READ, 16,
			 err, sizeof err);
	assert_int_equal(proto_resp_rc(&r, 16, err, sizeof err), CS_ERR_DEVICE);
	assert_string_equal(err, "READ: device status BAD_ADDR (0 of 16 words)");
	proto_resp_parse(&r, proto_resp_hdr(PROTO_COLLECT, PROTO_ST_TIMEOUT, 5), PROTO_COLLECT,
			 8, err, sizeof err);
	assert_int_equal(r.words, 5); /* a COLLECT timeout still carries its k payloads */
	assert_int_equal(proto_resp_rc(&r, 8, err, sizeof err), CS_ERR_TIMEOUT);
	/* SYNC: n is the error count, no words follow whatever it says */
	assert_int_equal(proto_resp_parse(&r, proto_resp_hdr(PROTO_SYNC, 0, 0xffff), PROTO_SYNC, 0,
					  err, sizeof err),
			 CS_OK);
	assert_int_equal(r.words, 0);
	assert_int_equal(r.n, 0xffff);
	assert_int_equal(proto_resp_rc(&r, 0, err, sizeof err), CS_OK);
	proto_resp_parse(&r, proto_resp_hdr(PROTO_SYNC, PROTO_ST_TIMEOUT, 2), PROTO_SYNC, 0, err,
			 sizeof err);
	assert_int_equal(proto_resp_rc(&r, 0, err, sizeof err), CS_ERR_TIMEOUT);
	assert_string_equal(err, "SYNC: device status TIMEOUT (2 errors)");
}

static void test_resp_decode(void **state)
{
	(void)state;
	char err[128];
	struct proto_resp r;
	uint32_t w[20] = { proto_resp_hdr(PROTO_ECHO, 0, 2), 7, 8, proto_resp_hdr(PROTO_ECHO, 0, 4),
			   1 };
	assert_int_equal(proto_resp_decode(&r, w, 5, PROTO_ECHO, 4, err, sizeof err), 3);
	assert_int_equal(proto_resp_decode(&r, w + 3, 2, PROTO_ECHO, 4, err, sizeof err),
			 CS_ERR_PROTOCOL);
	assert_string_equal(err, "ECHO: response truncated (1 of 4 words)");
	assert_int_equal(proto_resp_decode(&r, w, 0, PROTO_ECHO, 4, err, sizeof err),
			 CS_ERR_PROTOCOL);
	/* COUNTERS: 14 words, cycles low then high */
	struct proto_counters c;
	w[0] = proto_resp_hdr(PROTO_COUNTERS, 0, 14);
	for (int i = 1; i <= 14; i++)
		w[i] = (uint32_t)i;
	assert_int_equal(proto_counters_decode(&c, w, 15, err, sizeof err), CS_OK);
	assert_true(c.cycles == ((uint64_t)2 << 32 | 1));
	assert_int_equal(c.pe[0], 3);
	assert_int_equal(c.router[5], 13);
	assert_int_equal(c.errors, 14);
	assert_int_equal(proto_counters_decode(&c, w, 14, err, sizeof err), CS_ERR_PROTOCOL);
	w[0] = proto_resp_hdr(PROTO_COUNTERS, 0, 13);
	assert_int_equal(proto_counters_decode(&c, w, 15, err, sizeof err), CS_ERR_PROTOCOL);
	assert_string_equal(err, "COUNTERS: response of 13 words, expected 14");
	w[0] = proto_resp_hdr(PROTO_COUNTERS, PROTO_ST_BAD_PE, 0);
	assert_int_equal(proto_counters_decode(&c, w, 15, err, sizeof err), CS_ERR_DEVICE);
}

/* FTDI packets of maxpkt bytes around a byte stream */
static size_t packetize(uint8_t *out, const uint8_t *in, size_t n, size_t maxpkt)
{
	size_t o = 0;
	for (size_t at = 0; at < n; at += maxpkt - 2) {
		size_t m = n - at < maxpkt - 2 ? n - at : maxpkt - 2;
		out[o++] = 0x31;
		out[o++] = 0x60;
		memcpy(out + o, in + at, m);
		o += m;
	}
	return o;
}

static void test_usb_rx(void **state)
{
	(void)state;
	struct usb_rx rx;
	frm_tx tx;
	memset(&rx, 0, sizeof rx);
	usb_rx_init(&rx, 1000, 0);
	frm_tx_init(&tx, 1000, 8, 0);
	uint32_t words[300];
	for (int i = 0; i < 300; i++)
		words[i] = 0x01010101u * (uint32_t)i;
	uint8_t stream[4096], pk[4096];
	size_t n = 0;
	n += (size_t)frm_encode(stream + n, sizeof stream - n, FRM_DATA, 0, words, 255);
	n += (size_t)frm_encode(stream + n, sizeof stream - n, FRM_DATA, 1, words + 255, 45);
	uint32_t st[2] = { 0, 0x0102u << 16 };
	n += (size_t)frm_encode(stream + n, sizeof stream - n, FRM_STAT, 0, st, 2);
	size_t len = packetize(pk, stream, n, 64);
	/* transfers of whole packets split frames anywhere: the first frame (1027 bytes) ends
	 * in the 17th packet, the second starts there */
	int progress = 0;
	assert_int_equal(usb_rx_feed(&rx, &tx, pk, 16 * 64, 64, 10, &progress), CS_OK);
	assert_int_equal(progress, 0);
	assert_int_equal(usb_rx_feed(&rx, &tx, pk + 16 * 64, 64, 64, 15, &progress), CS_OK);
	assert_int_equal(progress, 1);
	assert_int_equal(usb_rx_avail(&rx), 255);
	assert_int_equal(usb_rx_feed(&rx, &tx, pk + 17 * 64, len - 17 * 64, 64, 20, &progress),
			 CS_OK);
	assert_int_equal(usb_rx_avail(&rx), 300);
	assert_int_equal(rx.have_stat, 1);
	assert_int_equal(rx.bad, 0);
	uint32_t got[300];
	usb_rx_take(&rx, got, 300);
	assert_memory_equal(got, words, sizeof words);
	/* a corrupted frame: nothing delivered, the link marked bad */
	n = (size_t)frm_encode(stream, sizeof stream, FRM_DATA, 2, words, 4);
	stream[9] ^= 0x40;
	len = packetize(pk, stream, n, 64);
	assert_int_equal(usb_rx_feed(&rx, &tx, pk, len, 64, 30, &progress), CS_OK);
	assert_int_equal(usb_rx_avail(&rx), 0);
	assert_int_equal(rx.bad, 1);
	/* a SEQ gap: the words are real and delivered, but one answer went missing */
	usb_rx_init(&rx, 1000, 0);
	n = (size_t)frm_encode(stream, sizeof stream, FRM_DATA, 5, words, 4);
	len = packetize(pk, stream, n, 64);
	assert_int_equal(usb_rx_feed(&rx, &tx, pk, len, 64, 40, &progress), CS_OK);
	assert_int_equal(usb_rx_avail(&rx), 4);
	assert_int_equal(rx.bad, 1);
	usb_rx_drop(&rx);
	assert_int_equal(usb_rx_avail(&rx), 0);
	/* a frame cut short: the byte timeout drops it */
	usb_rx_init(&rx, 1000, 0);
	len = packetize(pk, stream, 10, 64);
	assert_int_equal(usb_rx_feed(&rx, &tx, pk, len, 64, 50, &progress), CS_OK);
	usb_rx_poll(&rx, 5000);
	assert_int_equal(rx.bad, 1);
	usb_rx_free(&rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resp_parse),
		cmocka_unit_test(test_resp_decode),
		cmocka_unit_test(test_usb_rx),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
