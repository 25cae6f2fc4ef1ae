/*
 * usb_rx.c - the usb backend's receive path (usb_rx.h): FTDI packets -> link frames ->
 * ACK/NAK for the sender, queued response words, STAT answers. Shared by backend_usb.c and
 * tests/fuzz/fuzz_resp.c, which feeds it whatever a faulty board could send.
 */
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"
#include "driver/ftdi.h"
#include "driver/usb_rx.h"

void usb_rx_init(struct usb_rx *r, uint64_t byte_timeout, uint8_t data_expect)
{
	frm_dec_init(&r->dec, byte_timeout, data_expect);
	r->bad = 0;
	r->have_stat = 0;
	r->head = r->len = 0;
}

void usb_rx_free(struct usb_rx *r)
{
	free(r->q);
	r->q = NULL;
	r->head = r->len = r->cap = 0;
}

static int push(struct usb_rx *r, const uint32_t *w, size_t n)
{
	if (r->head && r->head == r->len) /* drained: restart at the front */
		r->head = r->len = 0;
	if (r->len + n > r->cap) {
		if (r->head) {
			memmove(r->q, r->q + r->head, (r->len - r->head) * sizeof *r->q);
			r->len -= r->head;
			r->head = 0;
		}
		if (r->len + n > r->cap) {
			size_t cap = r->cap ? r->cap : 4096;
			while (cap < r->len + n)
				cap *= 2;
			if (cap > USB_RX_MAX_WORDS)
				return CS_ERR_NO_MEM;
			uint32_t *q = realloc(r->q, cap * sizeof *q);
			if (!q)
				return CS_ERR_NO_MEM;
			r->q = q;
			r->cap = cap;
		}
	}
	memcpy(r->q + r->len, w, n * sizeof *w);
	r->len += n;
	return CS_OK;
}

int usb_rx_feed(struct usb_rx *r, frm_tx *tx, uint8_t *buf, size_t got, size_t maxpkt,
		uint64_t now, int *progress)
{
	uint8_t ls = 0;
	size_t n = ftdi_strip_status(buf, buf, got, maxpkt, &ls);
	if (ls & FTDI_LS_ERRORS)
		r->line_errors++;
	r->bytes_in += n;
	for (size_t i = 0; i < n; i++) {
		uint64_t seq_errors = r->dec.err_seq;
		int rc = frm_dec_byte(&r->dec, buf[i], now);
		if (rc == 0)
			continue;
		if (rc < 0) {
			r->bad = 1;
			/* a DATA frame with a SEQ gap is still delivered (its CRC checked): its
			 * words are real, but a response went missing before it */
			if (r->dec.err_seq == seq_errors)
				continue;
		}
		const frm_frame *f = &r->dec.frame;
		if (f->type == FRM_ACK || f->type == FRM_NAK) {
			if (tx && frm_tx_on_frame(tx, f, now) > 0)
				*progress = 1;
		} else if (f->type == FRM_DATA) {
			if ((rc = push(r, f->words, f->n)))
				return rc;
			*progress = 1;
		} else if (f->type == FRM_STAT) {
			r->stat = *f;
			r->have_stat = 1;
			*progress = 1;
		}
	}
	return CS_OK;
}

void usb_rx_poll(struct usb_rx *r, uint64_t now)
{
	if (frm_dec_poll(&r->dec, now) < 0)
		r->bad = 1;
}

size_t usb_rx_avail(const struct usb_rx *r)
{
	return r->len - r->head;
}

void usb_rx_take(struct usb_rx *r, uint32_t *w, size_t n)
{
	memcpy(w, r->q + r->head, n * sizeof *w);
	r->head += n;
}

void usb_rx_drop(struct usb_rx *r)
{
	r->head = r->len = 0;
}
