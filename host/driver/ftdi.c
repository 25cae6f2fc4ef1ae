/* ftdi.c - FTDI UART protocol helpers (ftdi.h): baud divisor encoding, status stripping. */
#include "driver/ftdi.h"

#include <string.h>

#include "common/cs_error.h"

int ftdi_h_baud(int baud, uint16_t port, uint16_t *value, uint16_t *index)
{
	/* Sub-integer divisor codes, indexed by eighths: 0, 1/8, 2/8 .. 7/8 (AN_120). */
	static const uint8_t frac_code[8] = { 0, 3, 2, 4, 1, 5, 6, 7 };
	uint32_t enc, clk, actual;
	int clk12; /* 1: 12 MHz base (120 MHz / 10), 0: 3 MHz base (48 MHz / 16) */

	if (baud < 183 || baud > 12000000)
		return CS_ERR_RANGE;
	/* The 12 MHz base reaches down to 12e6 / 0x3fff = 733 baud; below that the 3 MHz one. */
	clk12 = baud >= 12000000 / 0x3fff + 1;
	clk = clk12 ? 12000000u : 3000000u;
	if ((uint32_t)baud >= clk) {
		enc = 0; /* divide by 1 */
		actual = clk;
	} else if ((uint32_t)baud >= clk * 2 / 3) {
		enc = 1; /* the special code for divide by 1.5 */
		actual = clk * 2 / 3;
	} else if ((uint32_t)baud >= clk / 2) {
		enc = 2; /* divide by 2 */
		actual = clk / 2;
	} else {
		/* divisor in eighths, rounded to nearest: 8 * clk / baud */
		uint32_t d16 = (uint32_t)(16ull * clk / (uint32_t)baud);
		uint32_t d8 = d16 / 2 + (d16 & 1);
		if (d8 > 0x1ffff)
			d8 = 0x1ffff;
		actual = (uint32_t)((8ull * clk + d8 / 2) / d8);
		enc = (d8 >> 3) | (uint32_t)frac_code[d8 & 7] << 14;
	}
	if (clk12)
		enc |= 1u << 17; /* lands in index bit 9: select the 12 MHz base */
	*value = (uint16_t)enc;
	*index = (uint16_t)(((enc >> 8) & 0xff00u) | port);
	return (int)actual;
}

long ftdi_baud_error_ppm(int wanted, int actual)
{
	long long d = (long long)actual - wanted;
	if (d < 0)
		d = -d;
	return wanted > 0 ? (long)(d * 1000000 / wanted) : -1;
}

size_t ftdi_strip_status(uint8_t *out, const uint8_t *in, size_t len, size_t maxpkt,
			 uint8_t *line_status)
{
	size_t n = 0;
	for (size_t off = 0; off < len; off += maxpkt) {
		size_t pkt = len - off < maxpkt ? len - off : maxpkt;
		if (pkt < FTDI_STATUS_BYTES)
			break;
		if (line_status)
			*line_status |= in[off + 1];
		size_t pay = pkt - FTDI_STATUS_BYTES;
		memmove(out + n, in + off + FTDI_STATUS_BYTES, pay);
		n += pay;
	}
	return n;
}
