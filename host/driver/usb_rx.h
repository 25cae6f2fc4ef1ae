/*
 * usb_rx.h - the receive side of the usb backend's link: the bytes of the FT2232H's bulk IN
 * transfers (docs/link.md) into frames, and the frames into what the backend acts on: ACK
 * and NAK to the go-back-N sender, the response words of DATA frames queued for the
 * reader, the last STAT answer kept. No I/O and no clock here: backend_usb.c reads the
 * bytes and passes the time, tests/fuzz/fuzz_resp.c feeds it any bytes.
 */
#ifndef CS_USB_RX_H
#define CS_USB_RX_H

#include <stddef.h>
#include <stdint.h>

#include "driver/frame.h"

#define USB_RX_MAX_WORDS (64u << 20) /* response words queued at most */

struct usb_rx {
	frm_dec dec;
	int bad;            /* a device -> host frame was corrupted or lost */
	int have_stat;      /* stat holds a STAT answer */
	frm_frame stat;
	uint32_t *q;        /* response words received, not yet taken */
	size_t head, len, cap;
	uint64_t line_errors, bytes_in;
};

/* Start decoding afresh (byte_timeout, data_expect: frm_dec_init's; the decoder's counters
 * restart too), nothing queued, no STAT. Keeps the queue's memory, line_errors and
 * bytes_in; zero the struct before the first call. */
void usb_rx_init(struct usb_rx *r, uint64_t byte_timeout, uint8_t data_expect);
void usb_rx_free(struct usb_rx *r);

/* One IN transfer of got bytes (FTDI packets of at most maxpkt bytes, each starting with
 * two status bytes; buf is rewritten) received at time now. ACK/NAK frames go to tx
 * (frm_tx_on_frame). *progress is set when a frame was acknowledged, response words
 * arrived or a STAT answer came. Returns CS_OK, or CS_ERR_NO_MEM when more than
 * USB_RX_MAX_WORDS words would wait unread. A corrupted or lost frame sets r->bad. */
int usb_rx_feed(struct usb_rx *r, frm_tx *tx, uint8_t *buf, size_t got, size_t maxpkt,
		uint64_t now, int *progress);
/* Check the byte timeout when nothing arrived (sets r->bad when a partial frame drops). */
void usb_rx_poll(struct usb_rx *r, uint64_t now);

/* Response words waiting; take the oldest n (n <= usb_rx_avail). */
size_t usb_rx_avail(const struct usb_rx *r);
void usb_rx_take(struct usb_rx *r, uint32_t *w, size_t n);
/* Drop the words waiting (after a failed exchange). */
void usb_rx_drop(struct usb_rx *r);

#endif /* CS_USB_RX_H */
