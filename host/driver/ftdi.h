/*
 * ftdi.h - the parts of the FTDI USB serial protocol the usb backend needs, as pure
 * functions (no I/O) so that they are unit tested without a chip: the vendor control
 * requests that set up a UART channel, the baud rate divisor encoding, and the 2-byte
 * modem status header that starts every bulk IN packet.
 *
 * Sources (the protocol is not in a public FTDI datasheet in full):
 *   - FTDI application note AN_120 "Aliasing VCP Baud Rates" (divisor = 3 MHz or, on H
 *     chips, 12 MHz base clock / baud, 3 fractional bits with the sub-integer code
 *     {0, 0.5, 0.25, 0.125, 0.375, 0.625, 0.75, 0.875} -> {0, 1, 2, 3, 4, 5, 6, 7} order
 *     given by frac_code below);
 *   - Linux drivers/usb/serial/ftdi_sio.h (request numbers, SET_DATA bit layout, modem
 *     status bytes at the start of each IN packet) and libftdi's ftdi.c (ftdi_to_clkbits,
 *     ftdi_convert_baudrate: H chips set index bit 9 for the 12 MHz base clock, the high
 *     encoded bits go to index[15:8], the port number to index[7:0]);
 *   - jonas-schievink/ftdi-protocol README (derived from pyftdi): PID 0x6010 = FT2232*,
 *     bcdDevice 0x0700 = FT2232H, modem status bit meanings.
 * This file was written from those descriptions; no code is copied.
 */
#ifndef CS_FTDI_H
#define CS_FTDI_H

#include <stddef.h>
#include <stdint.h>

#define FTDI_VID 0x0403
#define FTDI_PID_2232 0x6010

/* bmRequestType of every setup request: vendor, device, host -> device */
#define FTDI_REQTYPE_OUT 0x40
/* bRequest */
#define FTDI_SIO_RESET 0x00         /* wValue: 0 reset, 1 purge RX, 2 purge TX */
#define FTDI_SIO_MODEM_CTRL 0x01
#define FTDI_SIO_SET_FLOW_CTRL 0x02 /* wIndex[15:8]: 0 none, 1 RTS/CTS, 2 DTR/DSR, 4 XON/XOFF */
#define FTDI_SIO_SET_BAUDRATE 0x03
#define FTDI_SIO_SET_DATA 0x04      /* wValue: [7:0] bits, [10:8] parity, [13:11] stop */
#define FTDI_SIO_SET_LATENCY 0x09   /* wValue: 1..255 ms */
#define FTDI_SIO_SET_BITMODE 0x0b   /* wValue: [15:8] mode (0 = reset to UART), [7:0] mask */
#define FTDI_RESET_SIO 0
#define FTDI_PURGE_RX 1
#define FTDI_PURGE_TX 2
#define FTDI_DATA_8N1 0x0008

/* Modem status: first byte of every IN packet (bits 4-7 CTS, DSR, RI, DCD), second byte
 * the line status (bit 0 data ready, 1 overrun, 2 parity, 3 framing, 4 break, 5 THRE,
 * 6 TEMT, 7 FIFO error). */
#define FTDI_STATUS_BYTES 2
#define FTDI_LS_OVERRUN 0x02
#define FTDI_LS_PARITY 0x04
#define FTDI_LS_FRAMING 0x08
#define FTDI_LS_BREAK 0x10
#define FTDI_LS_ERRORS (FTDI_LS_OVERRUN | FTDI_LS_PARITY | FTDI_LS_FRAMING | FTDI_LS_BREAK)

/* The port number FTDI's requests take in wIndex[7:0]: USB interface + 1 (A = 1, B = 2). */
static inline uint16_t ftdi_port(int interface)
{
	return (uint16_t)(interface + 1);
}

/*
 * Baud rate divisor of an H chip (FT2232H, FT4232H, FT232H: 120 MHz clock, divided by 10
 * or by 16 after a 48 MHz clock) for the SET_BAUDRATE request of port `port`. Fills
 * *value and *index and returns the baud rate the chip will actually run at (> 0), or
 * CS_ERR_RANGE when baud is outside 183 .. 12,000,000.
 */
int ftdi_h_baud(int baud, uint16_t port, uint16_t *value, uint16_t *index);

/* Baud error of the chip's rate against the wanted rate, parts per million (absolute). */
long ftdi_baud_error_ppm(int wanted, int actual);

/*
 * Strip the modem status header from a bulk IN transfer. The chip sends packets of at
 * most maxpkt bytes (512 at high speed), each starting with the 2 status bytes; a transfer
 * of several packets is their concatenation, and only its last packet may be short.
 * Copies the payload bytes to out (may equal in) and returns their count; ORs each
 * packet's line status byte into *line_status when not NULL. A trailing fragment of 1 byte
 * (a truncated packet, which a chip never sends) is dropped. maxpkt must be > 2.
 */
size_t ftdi_strip_status(uint8_t *out, const uint8_t *in, size_t len, size_t maxpkt,
			 uint8_t *line_status);

#endif /* CS_FTDI_H */
