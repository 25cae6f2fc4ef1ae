/*
 * frame.c - host side of the byte-link framing (frame.h; docs/link.md).
 * Pure state machines: the caller moves the bytes and supplies the time.
 */
#include "driver/frame.h"

#include <string.h>

enum { D_HUNT, D_TYPE, D_SEQ, D_LEN0, D_LEN1, D_PAY, D_CRC0, D_CRC1 };

uint16_t frm_crc16(uint16_t crc, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		crc ^= (uint16_t)p[i] << 8;
		for (int k = 0; k < 8; k++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

static uint16_t crc_byte(uint16_t crc, uint8_t b)
{
	return frm_crc16(crc, &b, 1);
}

int frm_encode(uint8_t *out, size_t cap, uint8_t type, uint8_t seq, const uint32_t *words,
	       int n)
{
	if (n < 0 || n > FRM_MAX_WORDS)
		return CS_ERR_RANGE;
	if (n > 0 && !words)
		return CS_ERR_INVALID;
	size_t len = FRM_OVERHEAD + 4 * (size_t)n;
	if (!out || cap < len)
		return CS_ERR_RANGE;
	out[0] = FRM_SOF;
	out[1] = type;
	out[2] = seq;
	out[3] = (uint8_t)n;
	out[4] = (uint8_t)(n >> 8);
	for (int i = 0; i < n; i++) {
		out[5 + 4 * i] = (uint8_t)words[i];
		out[6 + 4 * i] = (uint8_t)(words[i] >> 8);
		out[7 + 4 * i] = (uint8_t)(words[i] >> 16);
		out[8 + 4 * i] = (uint8_t)(words[i] >> 24);
	}
	uint16_t crc = frm_crc16(0xffff, out + 1, len - 3);
	out[len - 2] = (uint8_t)crc;
	out[len - 1] = (uint8_t)(crc >> 8);
	return (int)len;
}

int frm_stat_parse(frm_stat *st, const frm_frame *f)
{
	if (f->type != FRM_STAT || f->n != 2)
		return CS_ERR_PROTOCOL;
	st->err_crc = (uint16_t)f->words[0];
	st->err_trunc = (uint16_t)(f->words[0] >> 16);
	st->err_seq = (uint16_t)f->words[1];
	st->rx_expect = (uint8_t)(f->words[1] >> 16);
	st->tx_seq = (uint8_t)(f->words[1] >> 24);
	return CS_OK;
}

/* ---- decoder ------------------------------------------------------------------------ */

void frm_dec_init(frm_dec *d, uint64_t byte_timeout, uint8_t data_expect)
{
	memset(d, 0, sizeof *d);
	d->state = D_HUNT;
	d->byte_timeout = byte_timeout;
	d->data_expect = data_expect;
}

int frm_dec_poll(frm_dec *d, uint64_t now)
{
	if (d->state != D_HUNT && d->byte_timeout && now - d->last > d->byte_timeout) {
		d->state = D_HUNT;
		d->err_trunc++;
		return CS_ERR_PROTOCOL;
	}
	return 0;
}

static int valid_type(uint8_t t)
{
	return t >= FRM_DATA && t <= FRM_STAT;
}

int frm_dec_byte(frm_dec *d, uint8_t b, uint64_t now)
{
	int ret = frm_dec_poll(d, now);
	d->last = now;
	frm_frame *f = &d->frame;

	switch (d->state) {
	case D_HUNT:
		if (b == FRM_SOF)
			d->state = D_TYPE;
		break;
	case D_TYPE:
		if (!valid_type(b)) {
			d->err_hdr++;
			/* a 0x7e here may be the start of the real frame */
			d->state = b == FRM_SOF ? D_TYPE : D_HUNT;
			return CS_ERR_PROTOCOL;
		}
		f->type = b;
		d->crc = crc_byte(0xffff, b);
		d->state = D_SEQ;
		break;
	case D_SEQ:
		f->seq = b;
		d->crc = crc_byte(d->crc, b);
		d->state = D_LEN0;
		break;
	case D_LEN0:
		f->n = b;
		d->crc = crc_byte(d->crc, b);
		d->state = D_LEN1;
		break;
	case D_LEN1:
		f->n |= (uint16_t)(b << 8);
		d->crc = crc_byte(d->crc, b);
		if (f->n > FRM_MAX_WORDS || ((f->type == FRM_ACK || f->type == FRM_NAK) && f->n)) {
			d->err_hdr++;
			d->state = b == FRM_SOF ? D_TYPE : D_HUNT;
			return CS_ERR_PROTOCOL;
		}
		d->nbytes = 0;
		d->state = f->n ? D_PAY : D_CRC0;
		break;
	case D_PAY: {
		int w = d->nbytes >> 2, k = d->nbytes & 3;
		if (k == 0)
			f->words[w] = 0;
		f->words[w] |= (uint32_t)b << (8 * k);
		d->crc = crc_byte(d->crc, b);
		if (++d->nbytes == 4 * f->n)
			d->state = D_CRC0;
		break;
	}
	case D_CRC0:
		d->rx_crc = b;
		d->state = D_CRC1;
		break;
	case D_CRC1:
		d->rx_crc |= (uint16_t)(b << 8);
		d->state = D_HUNT;
		if (d->rx_crc != d->crc) {
			d->err_crc++;
			return CS_ERR_PROTOCOL;
		}
		d->frames++;
		if (f->type == FRM_DATA) {
			uint8_t want = d->data_expect;
			d->data_expect = (uint8_t)(f->seq + 1);
			if (f->seq != want) {
				d->err_seq++;
				return CS_ERR_PROTOCOL;
			}
		}
		return FRM_GOT_FRAME;
	default:
		d->state = D_HUNT;
		break;
	}
	return ret;
}

/* ---- go-back-N sender --------------------------------------------------------------- */

/* The window holds at most FRM_WINDOW consecutive SEQs and 256 % FRM_WINDOW == 0, so
 * SEQ % FRM_WINDOW names a slot uniquely. */
#define SLOT(t, seq) (&(t)->slot[(seq) % FRM_WINDOW])

_Static_assert(256 % FRM_WINDOW == 0, "SEQ % FRM_WINDOW must name a slot uniquely");

void frm_tx_init(frm_tx *t, uint64_t ack_timeout, int max_timeouts, uint8_t first_seq)
{
	memset(t, 0, sizeof *t);
	t->base = first_seq;
	t->next_seq = first_seq;
	t->ack_timeout = ack_timeout;
	t->max_timeouts = max_timeouts;
}

int frm_tx_space(const frm_tx *t)
{
	return FRM_WINDOW - t->count;
}

int frm_tx_pending(const frm_tx *t)
{
	return t->count;
}

int frm_tx_push(frm_tx *t, const uint32_t *words, int n)
{
	if (t->count >= FRM_WINDOW || n < 1 || n > FRM_MAX_WORDS)
		return CS_ERR_RANGE;
	uint8_t seq = t->next_seq;
	frm_slot *s = SLOT(t, seq);
	int len = frm_encode(s->bytes, sizeof s->bytes, FRM_DATA, seq, words, n);
	if (len < 0)
		return len;
	s->len = (size_t)len;
	t->next_seq++;
	t->count++;
	return seq;
}

int frm_tx_next(frm_tx *t, const uint8_t **bytes, uint64_t now)
{
	if (t->count > 0 && t->hwm > 0 && now >= t->deadline) {
		t->timeouts++;
		t->timeouts_in_row++;
		if (t->max_timeouts && t->timeouts_in_row > t->max_timeouts)
			return CS_ERR_TIMEOUT;
		t->cursor = 0; /* go back to the oldest unacknowledged frame */
		t->stale = 0;
		t->deadline = now + t->ack_timeout;
	}
	if (t->cursor >= t->count)
		return 0;
	uint8_t seq = (uint8_t)(t->base + t->cursor);
	frm_slot *s = SLOT(t, seq);
	if (t->cursor < t->hwm) {
		t->retransmits++;
	} else {
		t->frames_sent++;
		t->hwm = t->cursor + 1;
	}
	if (t->cursor == 0)
		t->deadline = now + t->ack_timeout;
	t->cursor++;
	*bytes = s->bytes;
	return (int)s->len;
}

int frm_tx_on_frame(frm_tx *t, const frm_frame *f, uint64_t now)
{
	int d = (uint8_t)(f->seq - t->base), acked;

	if (f->type == FRM_ACK) {
		if (d >= t->count)
			return 0; /* old or foreign ACK */
		acked = d + 1;
		t->stale = 0; /* answers come in order: the stale NAKs are behind us */
	} else if (f->type == FRM_NAK) {
		if (d > t->count)
			return 0;
		t->naks++;
		acked = d;
		if (d == 0 && t->stale > 0) {
			/* the device NAKs every frame after a lost one: the frames that were on the
			 * wire when we rewound are answered by NAKs we have already acted on */
			t->stale--;
			return 0;
		}
		/* frames after the NAKed one already sent will draw the same NAK */
		t->stale = t->hwm > d + 1 ? t->hwm - d - 1 : 0;
		t->cursor = d; /* resend from the NAKed frame (index 0 after the shift below) */
	} else {
		return 0;
	}
	t->base = (uint8_t)(t->base + acked);
	t->count -= acked;
	t->cursor = t->cursor > acked ? t->cursor - acked : 0;
	t->hwm = t->hwm > acked ? t->hwm - acked : 0;
	if (acked > 0) {
		t->acks += (uint64_t)acked;
		t->timeouts_in_row = 0;
		t->deadline = now + t->ack_timeout;
	}
	return acked;
}
