/*
 * backend_usb.c - the "usb" device: the FPGA board (iCE40 UP5K behind an FT2232H) over
 * libusb-1.0. The FT2232H channel that carries the FPGA's UART is driven with the FTDI
 * vendor requests directly (ftdi.h; libftdi would add a dependency for about 60 lines of
 * control transfers); the words travel in the framing of docs/link.md,
 * implemented once in frame.c and shared with the Verilator benches. What the board
 * sends is decoded by usb_rx.c (packets -> frames -> response words), the responses by
 * plan.c and proto.c, all of which tests/fuzz/fuzz_resp.c feeds arbitrary bytes.
 *
 * What this file is not: a general FTDI driver (UART mode only, no MPSSE: flashing goes
 * through iceprog on channel A), or a mesh model (kernels run on the board; plan.c makes
 * the command stream, exactly as for the sim backend).
 *
 * Every wait is bounded: bulk transfers carry a libusb timeout, the go-back-N sender gives
 * up after a bounded number of ACK timeouts, and every loop that waits for the board fails
 * with CS_ERR_TIMEOUT after `timeout` ms without progress. A board that goes away returns
 * CS_ERR_NO_DEVICE from then on.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libusb.h>

#include "driver/csd_impl.h"
#include "driver/ftdi.h"
#include "driver/proto.h"
#include "driver/usb.h"
#include "driver/usb_rx.h"

#define USB_CTRL_TIMEOUT_MS 500
#define USB_IN_BUF 4096                 /* 8 high-speed packets per IN transfer */
#define USB_ACK_TIMEOUT_NS 30000000ull  /* > 3 full frames at 3 Mbaud plus USB latency */
#define USB_MAX_ACK_TIMEOUTS 8
#define USB_BYTE_TIMEOUT_NS 100000000ull /* USB delivers bytes in bursts: be generous */

struct usb_opts {
	char serial[64];
	uint16_t vid, pid;
	int iface;
	int baud;
	int timeout_ms;
	int noload;
	char geom[96]; /* RxC,awords=,bwords= for csd_parse_geom */
};

struct usb_priv {
	struct usb_opts o;
	libusb_context *ctx;
	libusb_device_handle *h;
	int claimed;
	uint8_t ep_in, ep_out;
	int maxpkt;
	int gone; /* the board was unplugged */
	int actual_baud;
	uint16_t baud_value, baud_index;
	frm_tx tx;
	struct usb_rx rx;    /* frames in: decoder, response words, STAT (usb_rx.c) */
	int resync;          /* an exchange failed: resynchronize before the next one */
	uint64_t bytes_out;
	uint8_t inbuf[USB_IN_BUF];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- options ------------------------------------------------------------------------ */

static int parse_num(const char *s, long lo, long hi, long *v)
{
	char *e;
	errno = 0;
	long x = strtol(s, &e, 0);
	if (errno || e == s || *e || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

static int env_num(const char *name, long lo, long hi, long *v, char *err, size_t errlen)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	if (parse_num(s, lo, hi, v)) {
		snprintf(err, errlen, "usb: %s='%s' is not a number in [%ld, %ld]", name, s, lo, hi);
		return CS_ERR_INVALID;
	}
	return 1;
}

static int parse_opts(struct usb_opts *o, const char *arg, char *err, size_t errlen)
{
	long v;
	int rc;
	memset(o, 0, sizeof *o);
	o->vid = FTDI_VID;
	o->pid = FTDI_PID_2232;
	o->iface = 1;
	o->baud = 3000000;
	o->timeout_ms = 1000;
	if ((rc = env_num("CSD_USB_VID", 0, 0xffff, &v, err, errlen)) < 0)
		return rc;
	if (rc)
		o->vid = (uint16_t)v;
	if ((rc = env_num("CSD_USB_PID", 0, 0xffff, &v, err, errlen)) < 0)
		return rc;
	if (rc)
		o->pid = (uint16_t)v;
	if ((rc = env_num("CSD_USB_IFACE", 0, 3, &v, err, errlen)) < 0)
		return rc;
	if (rc)
		o->iface = (int)v;
	if ((rc = env_num("CSD_USB_BAUD", 183, 12000000, &v, err, errlen)) < 0)
		return rc;
	if (rc)
		o->baud = (int)v;
	if ((rc = env_num("CSD_USB_TIMEOUT_MS", 1, 3600000, &v, err, errlen)) < 0)
		return rc;
	if (rc)
		o->timeout_ms = (int)v;

	char buf[256];
	if (!arg)
		arg = "";
	if (strlen(arg) >= sizeof buf) {
		snprintf(err, errlen, "usb: device options too long");
		return CS_ERR_INVALID;
	}
	strcpy(buf, arg);
	int first = 1;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		const char *val = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - t) : strlen(t);
#define KEY(k) (klen == strlen(k) && !strncmp(t, k, klen))
		if (eq && KEY("vid") && !parse_num(val, 0, 0xffff, &v)) {
			o->vid = (uint16_t)v;
		} else if (eq && KEY("pid") && !parse_num(val, 0, 0xffff, &v)) {
			o->pid = (uint16_t)v;
		} else if (eq && KEY("iface")) {
			if (!strcmp(val, "A") || !strcmp(val, "a"))
				o->iface = 0;
			else if (!strcmp(val, "B") || !strcmp(val, "b"))
				o->iface = 1;
			else if (!parse_num(val, 0, 3, &v))
				o->iface = (int)v;
			else
				goto bad;
		} else if (eq && KEY("baud") && !parse_num(val, 183, 12000000, &v)) {
			o->baud = (int)v;
		} else if (eq && KEY("timeout") && !parse_num(val, 1, 3600000, &v)) {
			o->timeout_ms = (int)v;
		} else if (!eq && KEY("noload")) {
			o->noload = 1;
		} else if ((eq && (KEY("awords") || KEY("bwords"))) ||
			   (!eq && strchr(t, 'x') && isdigit((unsigned char)t[0]))) {
			size_t l = strlen(o->geom);
			if (l + strlen(t) + 2 > sizeof o->geom)
				goto bad;
			snprintf(o->geom + l, sizeof o->geom - l, "%s%s", l ? "," : "", t);
		} else if (!eq && first) {
			if (strlen(t) >= sizeof o->serial)
				goto bad;
			strcpy(o->serial, t);
		} else {
			goto bad;
		}
#undef KEY
		first = 0;
		continue;
bad:
		snprintf(err, errlen,
			 "usb: bad device option '%s' (want usb:[SERIAL][,vid=N][,pid=N][,iface=0..3]"
			 "[,baud=N][,timeout=MS][,RxC][,awords=N][,bwords=N][,noload])",
			 t);
		return CS_ERR_INVALID;
	}
	return CS_OK;
}

static int usb_err(int lrc)
{
	switch (lrc) {
	case LIBUSB_ERROR_NO_DEVICE:
		return CS_ERR_NO_DEVICE;
	case LIBUSB_ERROR_TIMEOUT:
		return CS_ERR_TIMEOUT;
	case LIBUSB_ERROR_NOT_FOUND:
		return CS_ERR_NOT_FOUND;
	case LIBUSB_ERROR_NO_MEM:
		return CS_ERR_NO_MEM;
	case LIBUSB_ERROR_NOT_SUPPORTED:
		return CS_ERR_NOT_SUPPORTED;
	default:
		return CS_ERR_IO;
	}
}

/* ---- discovery ---------------------------------------------------------------------- */

static void get_string(libusb_device_handle *h, uint8_t idx, char *out, size_t cap)
{
	out[0] = 0;
	if (!idx)
		return;
	unsigned char s[128];
	int n = libusb_get_string_descriptor_ascii(h, idx, s, sizeof s);
	if (n > 0)
		snprintf(out, cap, "%.*s", n, (const char *)s);
}

int csd_usb_list(struct csd_usb_board *boards, int max, const char *opts, char *err,
		 size_t errlen)
{
	struct usb_opts o;
	libusb_context *ctx = NULL;
	libusb_device **list = NULL;
	int rc, found = 0;

	if ((rc = parse_opts(&o, opts, err, errlen)))
		return rc;
	if ((rc = libusb_init(&ctx)) < 0) {
		snprintf(err, errlen, "usb: libusb_init: %s", libusb_strerror(rc));
		return CS_ERR_IO;
	}
	ssize_t n = libusb_get_device_list(ctx, &list);
	if (n < 0) {
		snprintf(err, errlen, "usb: cannot list USB devices: %s", libusb_strerror((int)n));
		rc = CS_ERR_IO;
		goto out_exit;
	}
	for (ssize_t i = 0; i < n; i++) {
		struct libusb_device_descriptor d;
		if (libusb_get_device_descriptor(list[i], &d) < 0 || d.idVendor != o.vid ||
		    d.idProduct != o.pid)
			continue;
		if (found < max && boards) {
			struct csd_usb_board *b = &boards[found];
			memset(b, 0, sizeof *b);
			b->bus = libusb_get_bus_number(list[i]);
			b->addr = libusb_get_device_address(list[i]);
			b->vid = d.idVendor;
			b->pid = d.idProduct;
			b->bcd_device = d.bcdDevice;
			libusb_device_handle *h;
			int orc = libusb_open(list[i], &h);
			if (orc == 0) {
				get_string(h, d.iSerialNumber, b->serial, sizeof b->serial);
				get_string(h, d.iProduct, b->product, sizeof b->product);
				get_string(h, d.iManufacturer, b->manufacturer, sizeof b->manufacturer);
				libusb_close(h);
			} else if (orc == LIBUSB_ERROR_ACCESS) {
				snprintf(b->note, sizeof b->note,
					 "no permission to open: install the udev rule (docs/board.md)");
			} else {
				snprintf(b->note, sizeof b->note, "cannot open: %s",
					 libusb_strerror(orc));
			}
		}
		found++;
	}
	rc = found;
	libusb_free_device_list(list, 1);
out_exit:
	libusb_exit(ctx);
	return rc;
}

/* ---- the byte link ------------------------------------------------------------------ */

static int link_fail(csd_dev *dev, int rc, const char *what)
{
	struct usb_priv *p = dev->priv;
	if (rc == CS_ERR_NO_DEVICE) {
		p->gone = 1;
		return csd_fail(dev, rc, "usb: board %s went away during %s (unplugged?)",
				p->o.serial[0] ? p->o.serial : "", what);
	}
	return csd_fail(dev, rc, "usb: %s: %s", what, cs_strerror(rc));
}

static int write_bytes(csd_dev *dev, const uint8_t *b, size_t len)
{
	struct usb_priv *p = dev->priv;
	while (len) {
		int done = 0;
		/* a 3 Mbaud UART drains ~300 bytes/ms: allow the chip's 4 KB buffer plus margin */
		int lrc = libusb_bulk_transfer(p->h, p->ep_out, (unsigned char *)b, (int)len, &done,
					       (unsigned)p->o.timeout_ms);
		if (done > 0) {
			b += done;
			len -= (size_t)done;
			p->bytes_out += (uint64_t)done;
		}
		if (lrc == LIBUSB_ERROR_TIMEOUT && done > 0)
			continue;
		if (lrc < 0)
			return link_fail(dev, usb_err(lrc), "bulk write");
	}
	return CS_OK;
}

/*
 * One round of the link: write every frame the sender has due, then read what the chip
 * has (one bulk IN, at most wait_ms) and feed it to the decoder. *progress is set when a
 * frame was acknowledged or a response word arrived.
 */
static int pump(csd_dev *dev, int wait_ms, int *progress)
{
	struct usb_priv *p = dev->priv;
	const uint8_t *bytes;
	int len, rc, got = 0;

	if (p->gone)
		return csd_fail(dev, CS_ERR_NO_DEVICE, "usb: the board was unplugged");
	while ((len = frm_tx_next(&p->tx, &bytes, now_ns())) > 0)
		if ((rc = write_bytes(dev, bytes, (size_t)len)))
			return rc;
	if (len < 0 && p->tx.acks)
		return csd_fail(dev, len,
				"usb: the board stopped acknowledging frames (%d ACK timeouts in a "
				"row): it may have hung or lost power; reset it (re-plug) and reopen",
				USB_MAX_ACK_TIMEOUTS);
	if (len < 0)
		return csd_fail(dev, len,
				"usb: the board acknowledges nothing (%d ACK timeouts in a row): is "
				"the bitstream loaded (cshost board flash)?",
				USB_MAX_ACK_TIMEOUTS);

	int lrc = libusb_bulk_transfer(p->h, p->ep_in, p->inbuf, sizeof p->inbuf, &got,
				       (unsigned)wait_ms);
	if (lrc < 0 && lrc != LIBUSB_ERROR_TIMEOUT)
		return link_fail(dev, usb_err(lrc), "bulk read");
	if ((rc = usb_rx_feed(&p->rx, &p->tx, p->inbuf, (size_t)got, (size_t)p->maxpkt, now_ns(),
			      progress)))
		return csd_fail(dev, rc, "usb: more than %u unread response words, or out of memory",
				USB_RX_MAX_WORDS);
	usb_rx_poll(&p->rx, now_ns());
	return CS_OK;
}
static int link_send(void *ctx, const uint32_t *w, size_t n)
{
	csd_dev *dev = ctx;
	struct usb_priv *p = dev->priv;
	uint64_t deadline = now_ns() + (uint64_t)p->o.timeout_ms * 1000000ull;
	int rc;

	while (n || frm_tx_pending(&p->tx)) {
		while (n && frm_tx_space(&p->tx)) {
			size_t m = n < FRM_MAX_WORDS ? n : FRM_MAX_WORDS;
			if ((rc = frm_tx_push(&p->tx, w, (int)m)) < 0)
				return csd_fail(dev, rc, "usb: queue frame: %s", cs_strerror(rc));
			w += m;
			n -= m;
		}
		int progress = 0;
		if ((rc = pump(dev, 2, &progress)))
			return rc;
		if (progress)
			deadline = now_ns() + (uint64_t)p->o.timeout_ms * 1000000ull;
		else if (now_ns() > deadline)
			return csd_fail(dev, CS_ERR_TIMEOUT,
					"usb: no progress for %d ms sending commands (%d frames "
					"unacknowledged)",
					p->o.timeout_ms, frm_tx_pending(&p->tx));
	}
	return CS_OK;
}

static int link_recv(void *ctx, uint32_t *w, size_t n)
{
	csd_dev *dev = ctx;
	struct usb_priv *p = dev->priv;
	uint64_t deadline = now_ns() + (uint64_t)p->o.timeout_ms * 1000000ull;
	int rc;

	while (usb_rx_avail(&p->rx) < n) {
		if (p->rx.bad) {
			p->rx.bad = 0;
			return csd_fail(dev, CS_ERR_PROTOCOL,
					"usb: a response frame from the board was corrupted or lost "
					"(crc errors %llu, sequence gaps %llu)",
					(unsigned long long)p->rx.dec.err_crc,
					(unsigned long long)p->rx.dec.err_seq);
		}
		int progress = 0;
		if ((rc = pump(dev, 2, &progress)))
			return rc;
		if (progress)
			deadline = now_ns() + (uint64_t)p->o.timeout_ms * 1000000ull;
		else if (now_ns() > deadline)
			return csd_fail(dev, CS_ERR_TIMEOUT,
					"usb: timeout after %d ms waiting for %zu response words (have "
					"%zu)",
					p->o.timeout_ms, n, usb_rx_avail(&p->rx));
	}
	usb_rx_take(&p->rx, w, n);
	return CS_OK;
}

/* Ask the device for its link state (STAT frame); p->rx.stat holds the answer. */
static int link_stat(csd_dev *dev, int tries)
{
	struct usb_priv *p = dev->priv;
	uint8_t fr[FRM_OVERHEAD];
	int len = frm_encode(fr, sizeof fr, FRM_STAT, 0, NULL, 0), rc;

	for (int k = 0; k < tries; k++) {
		p->rx.have_stat = 0;
		if ((rc = write_bytes(dev, fr, (size_t)len)))
			return rc;
		uint64_t deadline = now_ns() + 100000000ull; /* a STAT answer takes < 1 ms */
		while (!p->rx.have_stat && now_ns() < deadline) {
			int progress = 0;
			if ((rc = pump(dev, 5, &progress)))
				return rc;
		}
		if (p->rx.have_stat)
			return CS_OK;
	}
	return csd_fail(dev, CS_ERR_TIMEOUT,
			"usb: board %s does not answer on its UART (interface %d, %d baud): is the "
			"bitstream loaded (cshost board flash), and is this the right interface?",
			p->o.serial, p->o.iface, p->o.baud);
}

/*
 * Counters of one planned run on the byte link: the link bytes are what went over the
 * UART, measured here (framing, ACK/NAK, STAT and resent frames included: docs/link.md),
 * not 4 per word as on the word-level devices; the rest is the plan's.
 */
static void usb_count(csd_dev *dev, const struct plan_stats *st, uint64_t out0, uint64_t in0)
{
	struct usb_priv *p = dev->priv;
	struct plan_stats s = *st;
	s.words_out = s.words_in = 0;
	csd_count(dev, &s);
	dev->ctr.link_bytes_out += p->bytes_out - out0;
	dev->ctr.link_bytes_in += p->rx.bytes_in - in0;
}

/*
 * After a failed exchange the host and the board disagree on what is in flight (a response
 * lost, unread words queued). The board answers in order, so everything it sent before its
 * answer to a STAT query is stale: drain up to that answer, drop the unread responses and
 * restart both sequence numbers from the board's state. The link's statistics carry over.
 * What this cannot undo: a command the host port has only partly received (a send that timed
 * out in the middle of a command); only a board reset clears that.
 */
static int link_resync(csd_dev *dev)
{
	struct usb_priv *p = dev->priv;
	int rc = link_stat(dev, 3);
	if (rc)
		return rc;
	frm_stat st;
	if (frm_stat_parse(&st, &p->rx.stat))
		return csd_fail(dev, CS_ERR_PROTOCOL, "usb: malformed STAT answer from the board");
	frm_tx tx = p->tx;
	frm_dec dec = p->rx.dec;
	frm_tx_init(&p->tx, USB_ACK_TIMEOUT_NS, USB_MAX_ACK_TIMEOUTS, st.rx_expect);
	usb_rx_init(&p->rx, USB_BYTE_TIMEOUT_NS, st.tx_seq); /* unread responses dropped */
	p->tx.frames_sent = tx.frames_sent;
	p->tx.retransmits = tx.retransmits;
	p->tx.naks = tx.naks;
	p->tx.timeouts = tx.timeouts;
	p->tx.acks = tx.acks;
	p->rx.dec.frames = dec.frames;
	p->rx.dec.err_crc = dec.err_crc;
	p->rx.dec.err_hdr = dec.err_hdr;
	p->rx.dec.err_trunc = dec.err_trunc;
	p->rx.dec.err_seq = dec.err_seq;
	p->resync = 0;
	return CS_OK;
}

/* Before an exchange: resynchronize if the last one failed (not after an unplug). */
static int link_ready(csd_dev *dev)
{
	struct usb_priv *p = dev->priv;
	if (p->gone)
		return csd_fail(dev, CS_ERR_NO_DEVICE, "usb: the board was unplugged");
	return p->resync ? link_resync(dev) : CS_OK;
}

/* ---- open / close ------------------------------------------------------------------- */

static int ftdi_ctrl(csd_dev *dev, uint8_t req, uint16_t value, uint16_t index,
		     const char *what)
{
	struct usb_priv *p = dev->priv;
	int lrc = libusb_control_transfer(p->h, FTDI_REQTYPE_OUT, req, value, index, NULL, 0,
					  USB_CTRL_TIMEOUT_MS);
	if (lrc < 0)
		return csd_fail(dev, usb_err(lrc), "usb: FTDI %s (request 0x%02x) failed: %s",
				what, req, libusb_strerror(lrc));
	return CS_OK;
}

/* UART setup of the channel, in the order the chip's drivers use. */
static int ftdi_setup(csd_dev *dev)
{
	struct usb_priv *p = dev->priv;
	uint16_t port = ftdi_port(p->o.iface);
	int rc, actual = ftdi_h_baud(p->o.baud, port, &p->baud_value, &p->baud_index);
	if (actual < 0)
		return csd_fail(dev, CS_ERR_RANGE, "usb: baud rate %d out of range", p->o.baud);
	if (ftdi_baud_error_ppm(p->o.baud, actual) > 30000)
		return csd_fail(dev, CS_ERR_RANGE,
				"usb: the FT2232H cannot make %d baud (nearest %d)", p->o.baud,
				actual);
	p->actual_baud = actual;
	if ((rc = ftdi_ctrl(dev, FTDI_SIO_RESET, FTDI_RESET_SIO, port, "reset")) ||
	    (rc = ftdi_ctrl(dev, FTDI_SIO_SET_BITMODE, 0x0000, port, "set UART mode")) ||
	    (rc = ftdi_ctrl(dev, FTDI_SIO_SET_BAUDRATE, p->baud_value, p->baud_index,
			    "set baud rate")) ||
	    (rc = ftdi_ctrl(dev, FTDI_SIO_SET_DATA, FTDI_DATA_8N1, port, "set 8N1")) ||
	    (rc = ftdi_ctrl(dev, FTDI_SIO_SET_FLOW_CTRL, 0, (uint16_t)(0 << 8 | port),
			    "disable flow control")) ||
	    (rc = ftdi_ctrl(dev, FTDI_SIO_SET_LATENCY, 1, port, "set latency timer")) ||
	    (rc = ftdi_ctrl(dev, FTDI_SIO_RESET, FTDI_PURGE_RX, port, "purge RX")) ||
	    (rc = ftdi_ctrl(dev, FTDI_SIO_RESET, FTDI_PURGE_TX, port, "purge TX")))
		return rc;
	return CS_OK;
}

static int find_endpoints(csd_dev *dev, libusb_device *ud)
{
	struct usb_priv *p = dev->priv;
	struct libusb_config_descriptor *cfg;
	int lrc = libusb_get_active_config_descriptor(ud, &cfg);
	if (lrc < 0)
		return csd_fail(dev, usb_err(lrc), "usb: cannot read the configuration: %s",
				libusb_strerror(lrc));
	int rc = CS_ERR_NOT_FOUND;
	if (p->o.iface < cfg->bNumInterfaces && cfg->interface[p->o.iface].num_altsetting > 0) {
		const struct libusb_interface_descriptor *id = &cfg->interface[p->o.iface].altsetting[0];
		for (int e = 0; e < id->bNumEndpoints; e++) {
			const struct libusb_endpoint_descriptor *ep = &id->endpoint[e];
			if ((ep->bmAttributes & 3) != LIBUSB_TRANSFER_TYPE_BULK)
				continue;
			if (ep->bEndpointAddress & LIBUSB_ENDPOINT_IN) {
				p->ep_in = ep->bEndpointAddress;
				p->maxpkt = ep->wMaxPacketSize;
			} else {
				p->ep_out = ep->bEndpointAddress;
			}
		}
		if (p->ep_in && p->ep_out && p->maxpkt > FTDI_STATUS_BYTES)
			rc = CS_OK;
	}
	libusb_free_config_descriptor(cfg);
	if (rc)
		return csd_fail(dev, rc, "usb: interface %d has no bulk IN/OUT endpoint pair",
				p->o.iface);
	return CS_OK;
}

/* Open the first board matching vid:pid (and serial when given). */
static int open_board(csd_dev *dev)
{
	struct usb_priv *p = dev->priv;
	libusb_device **list = NULL;
	int rc = CS_ERR_NOT_FOUND, matching = 0, denied = 0;
	libusb_device *ud = NULL;

	ssize_t n = libusb_get_device_list(p->ctx, &list);
	if (n < 0)
		return csd_fail(dev, CS_ERR_IO, "usb: cannot list USB devices: %s",
				libusb_strerror((int)n));
	for (ssize_t i = 0; i < n && !ud; i++) {
		struct libusb_device_descriptor d;
		if (libusb_get_device_descriptor(list[i], &d) < 0 || d.idVendor != p->o.vid ||
		    d.idProduct != p->o.pid)
			continue;
		matching++;
		libusb_device_handle *h;
		int lrc = libusb_open(list[i], &h);
		if (lrc == LIBUSB_ERROR_ACCESS) {
			denied++;
			continue;
		}
		if (lrc < 0)
			continue;
		char serial[64];
		get_string(h, d.iSerialNumber, serial, sizeof serial);
		if (p->o.serial[0] && strcmp(serial, p->o.serial)) {
			libusb_close(h);
			continue;
		}
		snprintf(p->o.serial, sizeof p->o.serial, "%s", serial);
		p->h = h;
		ud = list[i];
	}
	if (!ud) {
		libusb_free_device_list(list, 1);
		if (denied)
			return csd_fail(dev, CS_ERR_IO,
					"usb: %04x:%04x found but not permitted to open it: install the "
					"udev rule in docs/board.md (or run as root)",
					p->o.vid, p->o.pid);
		if (matching && p->o.serial[0])
			return csd_fail(dev, CS_ERR_NOT_FOUND,
					"usb: no board with serial '%s' (%d other %04x:%04x device%s; "
					"cshost board list)",
					p->o.serial, matching, p->o.vid, p->o.pid, matching > 1 ? "s" : "");
		return csd_fail(dev, CS_ERR_NOT_FOUND,
				"usb: no board found (no USB device %04x:%04x%s%s): check the cable, "
				"or set vid=/pid= for another board",
				p->o.vid, p->o.pid, p->o.serial[0] ? " with serial " : "", p->o.serial);
	}
	rc = find_endpoints(dev, ud);
	libusb_free_device_list(list, 1);
	if (rc)
		return rc;
	libusb_set_auto_detach_kernel_driver(p->h, 1); /* ftdi_sio binds channel B */
	int lrc = libusb_claim_interface(p->h, p->o.iface);
	if (lrc < 0)
		return csd_fail(dev, usb_err(lrc),
				"usb: cannot claim interface %d of board %s: %s%s", p->o.iface,
				p->o.serial, libusb_strerror(lrc),
				lrc == LIBUSB_ERROR_BUSY ? " (another program uses it)" : "");
	p->claimed = 1;
	return CS_OK;
}

static void usb_close(csd_dev *dev)
{
	struct usb_priv *p = dev->priv;
	if (!p)
		return;
	if (p->h) {
		if (p->claimed && !p->gone)
			libusb_release_interface(p->h, p->o.iface);
		libusb_close(p->h);
	}
	if (p->ctx)
		libusb_exit(p->ctx);
	usb_rx_free(&p->rx);
	free(p);
	dev->priv = NULL;
}

static int usb_open(csd_dev *dev, const char *arg)
{
	char err[256] = "";
	struct usb_priv *p = calloc(1, sizeof *p);
	int rc;
	if (!p)
		return csd_fail(dev, CS_ERR_NO_MEM, "usb: out of memory");
	dev->priv = p;
	if ((rc = parse_opts(&p->o, arg, err, sizeof err))) {
		csd_fail(dev, rc, "%s", err);
		goto out_close;
	}
	/* the mesh `make bitstream` builds, unless the URI names another */
	dev->geom.rows = USB_BOARD_ROWS;
	dev->geom.cols = USB_BOARD_COLS;
	dev->geom.a_words = USB_BOARD_AWORDS;
	dev->geom.b_words = USB_BOARD_BWORDS;
	dev->clock_hz = 21e6; /* rtl/board/board_top.v ClkHz */
	if ((rc = csd_parse_geom(dev, p->o.geom)))
		goto out_close;
	dev->pe = -1; /* the bitstream's: the host cannot tell */
	dev->geom.dot_by_major = 1; /* pe_lite or pe_micro_mt: wgrad's stream by majors */
	dev->geom.a_wport = 0;      /* and A's one port: a WRITE of A waits for the engine */
	dev->geom.first_touch = 0;  /* and no first-touch axpy: START fills */
	dev->geom.major_cycles = dev->geom.ctl_cycles; /* and the SET_MAJOR task */
	if ((rc = libusb_init(&p->ctx)) < 0) {
		p->ctx = NULL;
		rc = csd_fail(dev, CS_ERR_IO, "usb: libusb_init: %s", libusb_strerror(rc));
		goto out_close;
	}
	if ((rc = open_board(dev)) || (rc = ftdi_setup(dev)))
		goto out_close;
	usb_rx_init(&p->rx, USB_BYTE_TIMEOUT_NS, 0);
	if ((rc = link_stat(dev, 3)))
		goto out_close;
	frm_stat st;
	if (frm_stat_parse(&st, &p->rx.stat)) {
		rc = csd_fail(dev, CS_ERR_PROTOCOL, "usb: malformed STAT answer from the board");
		goto out_close;
	}
	/* start both directions where the device is (it may have run before); words of an
	 * earlier session that arrived before the STAT are dropped */
	frm_tx_init(&p->tx, USB_ACK_TIMEOUT_NS, USB_MAX_ACK_TIMEOUTS, st.rx_expect);
	usb_rx_init(&p->rx, USB_BYTE_TIMEOUT_NS, st.tx_seq);
	if (!p->o.noload) {
		struct plan_link link = { .ctx = dev, .send = link_send, .recv = link_recv };
		struct plan_stats pst = { 0 };
		uint64_t out0 = p->bytes_out, in0 = p->rx.bytes_in;
		dev->have_fw = csd_fw_get(&dev->fw, "kernels", err, sizeof err) == CS_OK;
		if ((rc = plan_load(&dev->geom, dev->have_fw ? &dev->fw : NULL, &link, &pst, err,
				    sizeof err))) {
			if (!dev->err[0])
				csd_fail(dev, rc, "usb: %s", err);
			goto out_close;
		}
		usb_count(dev, &pst, out0, in0);
	}
	return CS_OK;
out_close:
	usb_close(dev);
	return rc;
}

/* ---- kernels: the shared planner over the link -------------------------------------- */

/* The link a planned stream runs over. */
static struct plan_link usb_link(csd_dev *dev)
{
	struct usb_priv *p = dev->priv;
	return (struct plan_link){ .ctx = dev, .send = link_send, .recv = link_recv,
				   .timeout_cycles = (uint32_t)(dev->clock_hz / 1000.0 *
								p->o.timeout_ms) };
}

/* After a planned stream: count it, or mark the link for resynchronization. */
static int usb_done(csd_dev *dev, int rc, const struct plan_stats *st, uint64_t out0,
		    uint64_t in0, const char *err)
{
	struct usb_priv *p = dev->priv;
	if (rc) {
		p->resync = rc != CS_ERR_NO_DEVICE;
		if (!dev->err[0])
			csd_fail(dev, rc, "usb: %s", err);
		return rc;
	}
	usb_count(dev, st, out0, in0);
	return CS_OK;
}

static int usb_run(csd_dev *dev, enum plan_kernel k, float *out, float *out2,
		   const uint16_t *act, const uint16_t *bact, const csd_sparse *w, int T)
{
	char err[256] = "";
	struct plan pl;
	struct plan_stats st = { 0 };
	struct usb_priv *p = dev->priv;
	int rc = plan_make(&pl, &dev->geom, k, T, w->n_out, w->n_in, err, sizeof err);
	if (rc)
		return csd_fail(dev, rc, "usb: %s", err);
	plan_tune(&pl, w);
	if (!dev->have_fw)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED,
				"usb: no kernels image loaded (opened with noload?)");
	struct plan_link link = usb_link(dev);
	struct plan_io io = { .w = w, .act = act, .bact = bact, .out = out, .out2 = out2 };
	if ((rc = link_ready(dev)))
		return rc;
	uint64_t out0 = p->bytes_out, in0 = p->rx.bytes_in;
	rc = plan_exec(&pl, &dev->fw, &io, &link, &st, err, sizeof err);
	return usb_done(dev, rc, &st, out0, in0, err);
}

static int usb_forward(csd_dev *dev, float *y, const uint16_t *x, const csd_sparse *w, int T)
{
	int rc = csd_check_args(dev, "usb: forward", y, x, w, T);
	return rc ? rc : usb_run(dev, PLAN_FWD, y, NULL, x, NULL, w, T);
}

static int usb_backward(csd_dev *dev, float *dx, const uint16_t *dy, const csd_sparse *w,
			int T)
{
	int rc = csd_check_args(dev, "usb: backward", dx, dy, w, T);
	return rc ? rc : usb_run(dev, PLAN_BWD, dx, NULL, dy, NULL, w, T);
}

static int usb_wgrad(csd_dev *dev, float *dw, const uint16_t *dy, const uint16_t *x,
		     const csd_sparse *w, int T)
{
	int rc = csd_check_args(dev, "usb: wgrad", dw, dy, w, T);
	if (!rc && !x)
		rc = csd_fail(dev, CS_ERR_INVALID, "usb: wgrad: NULL argument");
	return rc ? rc : usb_run(dev, PLAN_WGRAD, dw, NULL, x, dy, w, T);
}

static int usb_backward_wgrad(csd_dev *dev, float *dx, float *dw, const uint16_t *dy,
			      const uint16_t *x, const csd_sparse *w, int T)
{
	int rc = csd_check_args(dev, "usb: backward_wgrad", dx, dy, w, T);
	if (!rc && (!dw || !x))
		rc = csd_fail(dev, CS_ERR_INVALID, "usb: backward_wgrad: NULL argument");
	return rc ? rc : usb_run(dev, PLAN_BWG, dx, dw, dy, x, w, T);
}

/* ---- resident tensors (resident.h) ---------------------------------------------------- */

static int usb_resident(csd_dev *dev, const struct res_op *op)
{
	char err[256] = "";
	struct usb_priv *p = dev->priv;
	struct plan_stats st = { 0 };
	/* the 1x1 board's pe_lite decodes the 0xF vector group, the 2x2 board's pe_micro_mt
	 * does not (docs/architecture.md 4.6); this backend sends no vector programs */
	if (op->kind == RES_PROGRAM)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED,
				"usb: %s: the usb backend does not run vector programs (cpu and "
				"sim do)",
				op->prog->entry);
	struct plan_link link = usb_link(dev);
	int rc = link_ready(dev);
	if (rc)
		return rc;
	uint64_t out0 = p->bytes_out, in0 = p->rx.bytes_in;
	rc = res_exec(&dev->geom, op, &link, &st, NULL, err, sizeof err);
	return usb_done(dev, rc, &st, out0, in0, err);
}

const struct csd_backend csd_backend_usb = {
	.name = "usb",
	.open = usb_open,
	.close = usb_close,
	.forward = usb_forward,
	.backward = usb_backward,
	.wgrad = usb_wgrad,
	.backward_wgrad = usb_backward_wgrad,
	.resident = usb_resident,
};

/* ---- usb.h extras ------------------------------------------------------------------- */

int csd_usb_xfer(csd_dev *dev, const uint32_t *cmd, size_t ncmd, uint32_t *rsp, size_t nrsp)
{
	if (!dev || (ncmd && !cmd) || (nrsp && !rsp))
		return CS_ERR_INVALID;
	if (dev->be != &csd_backend_usb)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED, "%s: not a usb device", dev->be->name);
	dev->err[0] = 0;
	struct usb_priv *p = dev->priv;
	int rc = link_ready(dev);
	if (rc)
		return rc;
	uint64_t out0 = p->bytes_out, in0 = p->rx.bytes_in;
	rc = ncmd ? link_send(dev, cmd, ncmd) : CS_OK;
	if (!rc && nrsp)
		rc = link_recv(dev, rsp, nrsp);
	if (rc)
		p->resync = rc != CS_ERR_NO_DEVICE;
	dev->ctr.link_bytes_out += p->bytes_out - out0; /* on the wire, framing included */
	dev->ctr.link_bytes_in += p->rx.bytes_in - in0;
	return rc;
}

int csd_usb_link_info(csd_dev *dev, struct csd_usb_link *li)
{
	if (!dev || !li)
		return CS_ERR_INVALID;
	if (dev->be != &csd_backend_usb)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED, "%s: not a usb device", dev->be->name);
	struct usb_priv *p = dev->priv;
	memset(li, 0, sizeof *li);
	snprintf(li->serial, sizeof li->serial, "%s", p->o.serial);
	li->iface = p->o.iface;
	li->baud = p->o.baud;
	li->actual_baud = p->actual_baud;
	li->baud_value = p->baud_value;
	li->baud_index = p->baud_index;
	li->maxpkt = p->maxpkt;
	li->frames_sent = p->tx.frames_sent;
	li->retransmits = p->tx.retransmits;
	li->naks = p->tx.naks;
	li->ack_timeouts = p->tx.timeouts;
	li->rx_frames = p->rx.dec.frames;
	li->rx_crc_errors = p->rx.dec.err_crc + p->rx.dec.err_hdr;
	li->rx_seq_errors = p->rx.dec.err_seq;
	li->rx_trunc = p->rx.dec.err_trunc;
	li->line_errors = p->rx.line_errors;
	li->bytes_out = p->bytes_out;
	li->bytes_in = p->rx.bytes_in;
	dev->err[0] = 0;
	int rc = link_stat(dev, 2);
	if (rc)
		return rc;
	return frm_stat_parse(&li->dev, &p->rx.stat);
}
