/*
 * frame.h - host side of the byte-link framing (docs/link.md): the layer between 32-bit
 * host-port words and a byte link (the board's UART or FT2232H FIFO).
 *
 * A pure library: no I/O, no allocation, no clock of its own. The caller moves bytes and
 * passes the current time ("now", any monotonic unit: nanoseconds, microseconds, simulated
 * cycles) into every call that can time out; timeouts are in the same unit.
 *
 *   frm_crc16      CRC-16/CCITT-FALSE (poly 0x1021, init 0xffff, no reflection, no xor out)
 *   frm_encode     one frame into a byte buffer
 *   frm_dec        byte-at-a-time decoder: header check, CRC check, byte timeout, resync on
 *                  0x7e; checks the sequence numbers of the device's DATA frames
 *   frm_tx         host -> device go-back-N sender: window of FRM_WINDOW frames, cumulative
 *                  ACK, NAK (resend from the named frame), resend from the oldest unacknowledged
 *                  frame after the ACK timeout, bounded number of timeouts without progress
 *
 * Typical use (usb backend):
 *   frm_tx_init(&tx, ack_timeout, max_timeouts, 0);  frm_dec_init(&dec, byte_timeout, 0);
 *   loop: while (frm_tx_space(&tx) && words left) frm_tx_push(&tx, words, n);
 *         while ((len = frm_tx_next(&tx, &bytes, now)) > 0) write(bytes, len);
 *         for each byte read: r = frm_dec_byte(&dec, b, now);
 *              r == FRM_GOT_FRAME: ACK/NAK -> frm_tx_on_frame(&tx, &dec.frame, now),
 *                                   DATA -> consume dec.frame.words (responses);
 *              r < 0: CS_ERR_PROTOCOL (a device -> host frame was lost or corrupted);
 *         frm_dec_poll(&dec, now) when nothing arrives (byte timeout inside a frame).
 *
 * Sequence numbers wrap modulo 256. On open, the driver can ask the device for its state with
 * a STAT frame (frm_encode(FRM_STAT, 0, NULL, 0)) and start both directions from its answer
 * (frm_stat_parse, frm_tx_init / frm_dec_init with the reported sequence numbers).
 */
#ifndef CS_FRAME_H
#define CS_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "common/cs_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FRM_SOF 0x7e
#define FRM_DATA 0x01 /* command words (host -> device) / response words (device -> host) */
#define FRM_ACK 0x02  /* LEN 0; SEQ: every frame up to and including SEQ arrived */
#define FRM_NAK 0x03  /* LEN 0; SEQ: the frame the device expects next; resend from it */
#define FRM_STAT 0x04 /* host -> device LEN 0: query; device -> host LEN 2: link state */
#define FRM_MAX_WORDS 255
#define FRM_OVERHEAD 7 /* SOF, TYPE, SEQ, LEN (2), CRC (2) */
#define FRM_MAX_BYTES (FRM_OVERHEAD + 4 * FRM_MAX_WORDS)
#define FRM_WINDOW 4

/* frm_dec_byte: a complete, valid frame is in dec->frame */
#define FRM_GOT_FRAME 1

uint16_t frm_crc16(uint16_t crc, const uint8_t *p, size_t n);

/* Encode one frame; returns its length in bytes (FRM_OVERHEAD + 4 * n), CS_ERR_RANGE when
 * n > FRM_MAX_WORDS or cap is too small, CS_ERR_INVALID on a NULL words with n > 0. */
int frm_encode(uint8_t *out, size_t cap, uint8_t type, uint8_t seq, const uint32_t *words,
	       int n);

typedef struct frm_frame {
	uint8_t type;
	uint8_t seq;
	uint16_t n;                     /* payload words */
	uint32_t words[FRM_MAX_WORDS];
} frm_frame;

/* Device link state carried by a device -> host STAT frame. */
typedef struct frm_stat {
	uint16_t err_crc;   /* frames dropped for a bad CRC or a bad header */
	uint16_t err_trunc; /* frames dropped for the byte timeout */
	uint16_t err_seq;   /* DATA frames out of order (NAKed) */
	uint8_t rx_expect;  /* host -> device: the SEQ the device expects next */
	uint8_t tx_seq;     /* device -> host: the SEQ of its next DATA frame */
} frm_stat;

/* CS_OK, or CS_ERR_PROTOCOL when f is not a well-formed STAT frame. */
int frm_stat_parse(frm_stat *st, const frm_frame *f);

typedef struct frm_dec {
	/* private */
	int state;
	uint16_t crc, rx_crc;
	int nbytes;         /* payload bytes received */
	uint64_t last;      /* time of the last byte */
	uint64_t byte_timeout;
	/* public, read only */
	frm_frame frame;     /* valid after FRM_GOT_FRAME, until the next call */
	uint8_t data_expect; /* SEQ of the next device -> host DATA frame */
	uint64_t frames, err_crc, err_hdr, err_trunc, err_seq;
} frm_dec;

/* byte_timeout: a gap longer than this inside a frame drops it (0: no timeout);
 * data_expect: SEQ of the first DATA frame from the device (0 after a device reset). */
void frm_dec_init(frm_dec *d, uint64_t byte_timeout, uint8_t data_expect);
/* Feed one byte received at time now. Returns FRM_GOT_FRAME, 0 (need more bytes), or
 * CS_ERR_PROTOCOL when a frame was dropped (bad header, bad CRC, byte timeout) or a DATA
 * frame arrived with an unexpected SEQ (the frame is still delivered: the caller decides;
 * data_expect then follows the frame). */
int frm_dec_byte(frm_dec *d, uint8_t b, uint64_t now);
/* Check the byte timeout without a byte: CS_ERR_PROTOCOL when a partial frame was dropped. */
int frm_dec_poll(frm_dec *d, uint64_t now);

typedef struct frm_slot {
	size_t len;
	uint8_t bytes[FRM_MAX_BYTES];
} frm_slot;

typedef struct frm_tx {
	/* private */
	frm_slot slot[FRM_WINDOW]; /* slot[(base + i) % FRM_WINDOW] holds SEQ base + i */
	uint8_t base;              /* oldest unacknowledged SEQ */
	uint8_t next_seq;          /* SEQ of the next new frame */
	int count;                 /* frames in the window */
	int cursor;                /* next window index to send (rewound by NAK and timeout) */
	int hwm;                   /* window frames sent at least once */
	int stale;                 /* NAKs still due for frames sent before the last rewind */
	uint64_t deadline;         /* ACK timeout; armed while hwm > 0 */
	uint64_t ack_timeout;
	int max_timeouts, timeouts_in_row;
	/* public, read only */
	uint64_t frames_sent, retransmits, naks, timeouts, acks;
} frm_tx;

/* Sizing the timeouts: a full frame is FRM_MAX_BYTES * 10 bit times (3.4 ms at 3 Mbaud) and
 * an ACK can wait behind one device DATA frame (64 words); an ack_timeout of three full frame
 * times (~10 ms at 3 Mbaud) never fires on a clean link. The byte timeout of the device is
 * 1024 bit times; the host's decoder can use the same. The device stays silent while its
 * receive buffer is full (the host port back-pressures, e.g. during a COLLECT or SYNC wait)
 * and sends one NAK when it has room again: size max_timeouts for the longest such wait
 * (or 0: never give up, and bound the wait above this layer).
 * ack_timeout: time without an ACK before the window is resent; max_timeouts: consecutive
 * timeouts without progress before frm_tx_next gives up with CS_ERR_TIMEOUT (0: never);
 * first_seq: SEQ of the first frame (0 after a device reset). */
void frm_tx_init(frm_tx *t, uint64_t ack_timeout, int max_timeouts, uint8_t first_seq);
/* Free window slots (0 .. FRM_WINDOW). */
int frm_tx_space(const frm_tx *t);
/* Frames sent and not yet acknowledged (0: everything arrived). */
int frm_tx_pending(const frm_tx *t);
/* Queue a DATA frame of n (1 .. FRM_MAX_WORDS) words. Returns its SEQ (>= 0), CS_ERR_RANGE
 * when the window is full or n is out of range. */
int frm_tx_push(frm_tx *t, const uint32_t *words, int n);
/* The next frame to write to the link: sets *bytes and returns its length, 0 when there is
 * nothing to send now, CS_ERR_TIMEOUT after max_timeouts timeouts without progress. A timeout
 * rewinds the window: the following calls return the unacknowledged frames again. */
int frm_tx_next(frm_tx *t, const uint8_t **bytes, uint64_t now);
/* Handle a frame from the device. ACK n: frames up to n are done; NAK n: frames before n are
 * done, resend from n. Returns the number of frames newly acknowledged (>= 0); frames naming
 * a SEQ outside the window, and other types, are ignored (0). */
int frm_tx_on_frame(frm_tx *t, const frm_frame *f, uint64_t now);

#ifdef __cplusplus
}
#endif

#endif /* CS_FRAME_H */
