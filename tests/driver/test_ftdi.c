/*
 * test_ftdi.c - FTDI protocol helpers (host/driver/ftdi.c): the H-chip baud divisor
 * encoding against values worked out by hand from AN_120 (and the board's 3 Mbaud), and
 * the stripping of the 2 modem status bytes from bulk IN transfers of one or many
 * packets, short last packets, status-only packets and payload bytes that look like
 * status bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/ftdi.h"

static void test_baud_board_rate(void **state)
{
	(void)state;
	uint16_t v, i;
	/* 3 Mbaud on channel B: 12 MHz / 4 -> value 4, index 0x0200 (12 MHz base) | port 2 */
	assert_int_equal(ftdi_h_baud(3000000, ftdi_port(1), &v, &i), 3000000);
	assert_int_equal(v, 0x0004);
	assert_int_equal(i, 0x0202);
	/* channel A */
	assert_int_equal(ftdi_h_baud(3000000, ftdi_port(0), &v, &i), 3000000);
	assert_int_equal(i, 0x0201);
}

static void test_baud_special_codes(void **state)
{
	(void)state;
	uint16_t v, i;
	/* 12 MHz: divide by 1 (code 0); 8 MHz: by 1.5 (code 1); 6 MHz: by 2 (code 2) */
	assert_int_equal(ftdi_h_baud(12000000, 1, &v, &i), 12000000);
	assert_int_equal(v, 0);
	assert_int_equal(i, 0x0201);
	assert_int_equal(ftdi_h_baud(8000000, 1, &v, &i), 8000000);
	assert_int_equal(v, 1);
	assert_int_equal(ftdi_h_baud(6000000, 1, &v, &i), 6000000);
	assert_int_equal(v, 2);
}

static void test_baud_fractions(void **state)
{
	(void)state;
	uint16_t v, i;
	/* 115200: 12e6 / 115200 = 104.1667 -> 104 + 1/8 (833 eighths); 1/8 has code 3 at
	 * bits 15:14 -> 0xc068, index high byte 0x02 (bit 17 -> index bit 9), 115246 baud */
	int a = ftdi_h_baud(115200, 2, &v, &i);
	assert_int_equal(v, 0xc068);
	assert_int_equal(i, 0x0202);
	assert_int_equal(a, 115246);
	assert_true(ftdi_baud_error_ppm(115200, a) < 500);
	/* 1 Mbaud: 12 exactly */
	assert_int_equal(ftdi_h_baud(1000000, 1, &v, &i), 1000000);
	assert_int_equal(v, 12);
	/* 4/8 = 0.5 has code 1 (bits 15:14 = 01): 12e6 / 2.5 = 4.8 Mbaud */
	assert_int_equal(ftdi_h_baud(4800000, 1, &v, &i), 4800000);
	assert_int_equal(v, 0x4002);
	/* 3/8 has code 4: the high bit goes to value bit 16 -> index bit 8 */
	int b = ftdi_h_baud(12000000 * 8 / 83, 1, &v, &i); /* 10 + 3/8 */
	assert_int_equal(v, 10);
	assert_int_equal(i, 0x0301);
	assert_int_equal(b, 1156627);
}

static void test_baud_low_and_range(void **state)
{
	(void)state;
	uint16_t v, i;
	/* below 733 baud the 3 MHz base: 300 baud = 10000 exactly, no index bit 9 */
	assert_int_equal(ftdi_h_baud(300, 1, &v, &i), 300);
	assert_int_equal(v, 10000);
	assert_int_equal(i, 0x0001);
	assert_int_equal(ftdi_h_baud(100, 1, &v, &i), CS_ERR_RANGE);
	assert_int_equal(ftdi_h_baud(13000000, 1, &v, &i), CS_ERR_RANGE);
	/* above 6 MHz only 12, 8 and 6 MHz exist: 10 MHz gives 8 (the driver refuses it) */
	assert_int_equal(ftdi_h_baud(10000000, 1, &v, &i), 8000000);
	assert_true(ftdi_baud_error_ppm(10000000, 8000000) > 30000);
	/* up to 3 MHz (divisor >= 4, steps of 1/8) every rate is within 1.6 % */
	for (int baud = 800; baud <= 3000000; baud += baud / 7 + 1) {
		int a = ftdi_h_baud(baud, 1, &v, &i);
		assert_true(a > 0);
		assert_true(ftdi_baud_error_ppm(baud, a) < 16000);
	}
}

static void test_strip_one_packet(void **state)
{
	(void)state;
	uint8_t in[8] = { 0x31, 0x60, 'a', 'b', 'c', 0x31, 0x60, 'd' }, out[8];
	uint8_t ls = 0;
	/* a single short packet: only the first 2 bytes are status, even if later bytes
	 * look like status bytes */
	assert_int_equal(ftdi_strip_status(out, in, 8, 512, &ls), 6);
	assert_memory_equal(out, "abc\x31\x60" "d", 6);
	assert_int_equal(ls, 0x60);
	/* status only: no payload */
	assert_int_equal(ftdi_strip_status(out, in, 2, 512, &ls), 0);
	/* nothing */
	assert_int_equal(ftdi_strip_status(out, in, 0, 512, NULL), 0);
}

static void test_strip_across_packets(void **state)
{
	(void)state;
	/* 3 packets of 64 bytes (full-speed size) and a short fourth of 10: payload bytes
	 * numbered 0.. so any misplaced status byte shows */
	enum { P = 64 };
	uint8_t in[3 * P + 10], out[sizeof in];
	uint8_t k = 0;
	size_t n = 0;
	for (size_t off = 0; off < sizeof in; off += P) {
		in[off] = 0x31;
		in[off + 1] = off == 2 * P ? 0x62 : 0x60; /* overrun in packet 3 */
		for (size_t j = off + 2; j < off + P && j < sizeof in; j++)
			in[j] = k++;
	}
	uint8_t ls = 0;
	n = ftdi_strip_status(out, in, sizeof in, P, &ls);
	assert_int_equal(n, 3 * (P - 2) + 8);
	for (size_t j = 0; j < n; j++)
		assert_int_equal(out[j], (uint8_t)j);
	assert_true(ls & FTDI_LS_OVERRUN);
	/* in place, 512-byte packets, status-only packets in between */
	uint8_t buf[512 * 3];
	memset(buf, 0xee, sizeof buf);
	buf[0] = 0x31, buf[1] = 0x60;
	for (int j = 2; j < 512; j++)
		buf[j] = (uint8_t)(j - 2);
	buf[512] = 0x31, buf[513] = 0x60; /* status only would end a transfer; here full */
	for (int j = 514; j < 1024; j++)
		buf[j] = (uint8_t)(j - 4);
	buf[1024] = 0x31, buf[1025] = 0x60;
	n = ftdi_strip_status(buf, buf, 1026, 512, NULL);
	assert_int_equal(n, 1020);
	for (size_t j = 0; j < n; j++)
		assert_int_equal(buf[j], (uint8_t)j);
	/* a 1-byte tail (never sent by a chip) is dropped, not read as payload */
	assert_int_equal(ftdi_strip_status(out, in, P + 1, P, NULL), P - 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_baud_board_rate),
		cmocka_unit_test(test_baud_special_codes),
		cmocka_unit_test(test_baud_fractions),
		cmocka_unit_test(test_baud_low_and_range),
		cmocka_unit_test(test_strip_one_packet),
		cmocka_unit_test(test_strip_across_packets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
