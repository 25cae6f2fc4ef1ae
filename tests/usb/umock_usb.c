/*
 * umock_usb.c - the usb backend end to end against an emulated FT2232H board, with no
 * hardware: umockdev (run under umockdev-wrapper) provides the sysfs entries and device
 * nodes libusb enumerates, and an ioctl handler in this process answers the usbfs requests
 * (USBDEVFS_SUBMITURB / REAPURB / ...) an unmodified libusb sends. Behind the handler sits a
 * C model of the board: the FTDI chip (vendor requests recorded, 2 modem status bytes at
 * the start of every 512-byte IN packet) and the board's link layer and host port (the
 * framing rules of docs/architecture.md section 6: go-back-N receiver with ACK/NAK and
 * STAT, device DATA frames of at most 64 words; ECHO, WRITE, READ, SYNC, CLEAR, INJECT).
 *
 * What the model is not: the RTL. The host port's memories are plain arrays and the
 * per-PE self-test program is not executed; the model applies the effect fw/selftest.s
 * documents (B[0] = 0x5e1f << 16 | mismatches after writing and reading back B[0..15]),
 * with an optional stuck bit in one PE's B so that the selftest's failure path is tested.
 * The Verilated board top is tested against frame.c in verif/board.
 *
 * Cases: enumeration of two boards with serials, open by serial and FTDI setup (baud
 * divisor, 8N1, latency, flow control), echo round trips, the kernels image load,
 * a corrupted host frame NAKed and resent, `board` CLI (list, info, selftest pass and
 * fail), unplug in the middle of a transfer -> CS_ERR_NO_DEVICE without a hang, a board
 * that does not answer -> timeout, no board -> "no board found" and exit 2.
 * Exit 77 (skip) when not run under umockdev-wrapper.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/usbdevice_fs.h>
#include <sys/ioctl.h>
#include <umockdev.h>

#include "driver/csd.h"
#include "driver/frame.h"
#include "driver/ftdi.h"
#include "driver/fw.h"
#include "driver/proto.h"
#include "driver/usb.h"

int cmd_board(int argc, char **argv);

static int n_pass, n_fail;
#define CHECK(cond, ...)                                                                     \
	do {                                                                                 \
		if (cond) {                                                                  \
			n_pass++;                                                            \
		} else {                                                                     \
			n_fail++;                                                            \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);               \
			printf(__VA_ARGS__);                                                 \
			printf("\n");                                                        \
		}                                                                            \
	} while (0)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the board model ---------------------------------------------------------------- */

#define NPE 4
#define MEMW 1024
#define OUTQ (1u << 22)

struct board {
	const char *serial;
	const char *devnode, *syspath;
	/* test controls (main thread writes, handler thread reads) */
	atomic_int corrupt_next;    /* flip a bit in the next host DATA frame */
	atomic_long unplug_after;   /* unplug once this many bytes arrived (0: never) */
	atomic_int unplugged;
	atomic_int silent;          /* no bitstream: the UART never answers */
	int faulty_pe;              /* PE whose B has bit 3 stuck at 0 (-1: none) */
	/* FTDI state */
	uint16_t baud_value, baud_index, data_cfg, latency, flow_index, bitmode;
	int resets, purges;
	atomic_long rx_bytes;
	/* link layer */
	frm_dec dec;
	uint8_t expect, tx_seq;
	uint16_t err_crc, err_trunc, err_seq;
	uint8_t *out;               /* device -> host bytes */
	size_t out_head, out_len;
	uint32_t rsp[4096];         /* responses of the frame being handled */
	int nrsp;
	/* host port */
	uint32_t cmd[2];            /* header, address */
	int need, have, op;
	uint32_t addr;
	uint32_t errors;
	uint32_t mem[NPE][16][MEMW];
	/* URBs in flight, in submission order */
	GList *flying;
};

static struct board boards[2] = {
	{ .serial = "CSB00001", .devnode = "/dev/bus/usb/001/002",
	  .syspath = "/devices/usb1/1-1", .faulty_pe = -1 },
	{ .serial = "CSB00002", .devnode = "/dev/bus/usb/001/003",
	  .syspath = "/devices/usb1/1-2", .faulty_pe = -1 },
};

static void out_bytes(struct board *b, const uint8_t *p, size_t n)
{
	if (b->out_head + b->out_len + n > OUTQ) {
		memmove(b->out, b->out + b->out_head, b->out_len);
		b->out_head = 0;
	}
	if (b->out_len + n > OUTQ)
		abort(); /* the test reads what it asks for: never happens */
	memcpy(b->out + b->out_head + b->out_len, p, n);
	b->out_len += n;
}

static void send_frame(struct board *b, uint8_t type, uint8_t seq, const uint32_t *w, int n)
{
	uint8_t fr[FRM_MAX_BYTES];
	int len = frm_encode(fr, sizeof fr, type, seq, w, n);
	out_bytes(b, fr, (size_t)len);
}

static uint32_t target_size(unsigned t)
{
	static const uint32_t sz[16] = { 512, 256, 0, 256, 32, 16, 16, 8, 5, 6 };
	return t < 16 ? sz[t] : 0;
}

static void rsp(struct board *b, uint32_t w)
{
	if (b->nrsp < (int)(sizeof b->rsp / sizeof b->rsp[0]))
		b->rsp[b->nrsp++] = w;
}

static void selftest(struct board *b, unsigned seed)
{
	for (int pe = 0; pe < NPE; pe++) {
		if (!(b->mem[pe][PROTO_T_TASK][16 | PROTO_C_BCAST] & 0x200))
			continue; /* no control task for BCAST: the wavelet is dropped */
		uint32_t *B = b->mem[pe][PROTO_T_B];
		unsigned mism = 0;
		for (unsigned a = 0; a < 16; a++) {
			uint32_t v = (seed + a) & 0xffff;
			if (pe == b->faulty_pe)
				v &= ~8u;
			B[a] = (B[a] & 0xffff0000u) | v;
		}
		for (unsigned a = 0; a < 16; a++)
			mism += (B[a] & 0xffff) != ((seed + a) & 0xffff);
		B[0] = 0x5e1fu << 16 | mism;
	}
}

/* One host port word. */
static void port_word(struct board *b, uint32_t w)
{
	if (b->need == 0) { /* a header */
		b->cmd[0] = w;
		b->op = (int)(w >> 28);
		b->have = 0;
		unsigned n = w & 0xffff;
		switch (b->op) {
		case PROTO_NOP: case PROTO_CLEAR: case PROTO_COUNTERS:
			if (b->op == PROTO_CLEAR)
				b->errors = 0;
			if (b->op == PROTO_COUNTERS)
				rsp(b, proto_resp_hdr(PROTO_COUNTERS, PROTO_ST_OK, 0));
			return;
		case PROTO_ECHO:
			rsp(b, proto_resp_hdr(PROTO_ECHO, PROTO_ST_OK, n));
			b->need = (int)n;
			return;
		case PROTO_WRITE: b->need = (int)n + 1; return;
		case PROTO_READ: case PROTO_COLLECT: case PROTO_SYNC: b->need = 1; return;
		case PROTO_RUN: b->need = (int)((w >> 16) & 0xff); return;
		case PROTO_INJECT: b->need = (int)n; return;
		default:
			b->errors++;
			rsp(b, proto_resp_hdr((unsigned)b->op, PROTO_ST_BAD_OP, 0));
			return;
		}
	}
	unsigned t = (b->cmd[0] >> 24) & 0xf, pe = (b->cmd[0] >> 16) & 0xff;
	b->need--;
	switch (b->op) {
	case PROTO_ECHO:
		rsp(b, w);
		break;
	case PROTO_WRITE:
		if (b->have == 0) {
			b->addr = w;
		} else {
			uint32_t a = b->addr + (uint32_t)b->have - 1;
			if (a < target_size(t) && (pe == 0xff || pe < NPE))
				for (int q = 0; q < NPE; q++)
					if (pe == 0xff || (unsigned)q == pe)
						b->mem[q][t][a] = w;
		}
		break;
	case PROTO_READ: {
		unsigned n = b->cmd[0] & 0xffff;
		if (pe >= NPE || w + n > target_size(t)) {
			b->errors++;
			rsp(b, proto_resp_hdr(PROTO_READ, pe >= NPE ? PROTO_ST_BAD_PE : PROTO_ST_BAD_ADDR, 0));
			break;
		}
		rsp(b, proto_resp_hdr(PROTO_READ, PROTO_ST_OK, n));
		for (unsigned k = 0; k < n; k++)
			rsp(b, b->mem[pe][t][w + k]);
		break;
	}
	case PROTO_SYNC:
		rsp(b, proto_resp_hdr(PROTO_SYNC, PROTO_ST_OK, 1));
		rsp(b, b->errors);
		break;
	case PROTO_COLLECT:
		rsp(b, proto_resp_hdr(PROTO_COLLECT, PROTO_ST_TIMEOUT, 0));
		break;
	case PROTO_INJECT:
		if ((b->cmd[0] >> 23 & 1) && t == PROTO_C_BCAST && w >> 28 == PROTO_CTL_SELFTEST)
			selftest(b, w & 0xffff);
		break;
	default:
		break;
	}
	b->have++;
}

static void link_byte(struct board *b, uint8_t c)
{
	uint64_t seq_errors = b->dec.err_seq;
	int r = frm_dec_byte(&b->dec, c, 0);
	if (r == 0)
		return;
	if (r < 0 && b->dec.err_seq == seq_errors) { /* bad header or CRC: dropped */
		if (b->err_crc < 0xffff)
			b->err_crc++;
		send_frame(b, FRM_NAK, b->expect, NULL, 0);
		return;
	}
	const frm_frame *f = &b->dec.frame;
	if (f->type == FRM_STAT) {
		uint32_t w[2] = { (uint32_t)b->err_trunc << 16 | b->err_crc,
				  (uint32_t)b->tx_seq << 24 | (uint32_t)b->expect << 16 | b->err_seq };
		send_frame(b, FRM_STAT, b->expect, w, 2);
		return;
	}
	if (f->type != FRM_DATA)
		return;
	uint8_t behind = (uint8_t)(b->expect - f->seq);
	if (f->seq == b->expect) {
		b->expect++;
		send_frame(b, FRM_ACK, f->seq, NULL, 0);
		b->nrsp = 0;
		for (int i = 0; i < f->n; i++)
			port_word(b, f->words[i]);
		for (int i = 0; i < b->nrsp; i += 64) {
			int m = b->nrsp - i < 64 ? b->nrsp - i : 64;
			send_frame(b, FRM_DATA, b->tx_seq++, b->rsp + i, m);
		}
	} else if (behind >= 1 && behind <= 4) {
		send_frame(b, FRM_ACK, (uint8_t)(b->expect - 1), NULL, 0);
	} else {
		if (b->err_seq < 0xffff)
			b->err_seq++;
		send_frame(b, FRM_NAK, b->expect, NULL, 0);
	}
}

/* ---- USB device: descriptors and the usbfs ioctls ----------------------------------- */

static const uint8_t dev_desc[18] = { 0x12, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x40, 0x03,
				      0x04, 0x10, 0x60, 0x00, 0x07, 0x01, 0x02, 0x03, 0x01 };
static const uint8_t cfg_desc[55] = {
	0x09, 0x02, 0x37, 0x00, 0x02, 0x01, 0x00, 0x80, 0xfa,
	0x09, 0x04, 0x00, 0x00, 0x02, 0xff, 0xff, 0xff, 0x02, /* interface 0: channel A */
	0x07, 0x05, 0x81, 0x02, 0x00, 0x02, 0x00,
	0x07, 0x05, 0x02, 0x02, 0x00, 0x02, 0x00,
	0x09, 0x04, 0x01, 0x00, 0x02, 0xff, 0xff, 0xff, 0x02, /* interface 1: channel B */
	0x07, 0x05, 0x83, 0x02, 0x00, 0x02, 0x00,
	0x07, 0x05, 0x04, 0x02, 0x00, 0x02, 0x00,
};

static int string_desc(const struct board *b, unsigned idx, uint8_t *out)
{
	const char *s;
	if (idx == 0) {
		out[0] = 4, out[1] = 3, out[2] = 0x09, out[3] = 0x04;
		return 4;
	}
	s = idx == 1 ? "FTDI" : idx == 2 ? "Dual RS232-HS" : idx == 3 ? b->serial : NULL;
	if (!s)
		return -1;
	int n = (int)strlen(s);
	out[0] = (uint8_t)(2 + 2 * n);
	out[1] = 3;
	for (int i = 0; i < n; i++)
		out[2 + 2 * i] = (uint8_t)s[i], out[3 + 2 * i] = 0;
	return 2 + 2 * n;
}

/* Handle a control URB: returns the data length for IN, 0 for OUT, < 0 to stall. */
static int control(struct board *b, uint8_t *buf, int buflen)
{
	uint8_t rt = buf[0], req = buf[1];
	uint16_t value = (uint16_t)(buf[2] | buf[3] << 8), index = (uint16_t)(buf[4] | buf[5] << 8);
	uint16_t wlen = (uint16_t)(buf[6] | buf[7] << 8);
	uint8_t *data = buf + 8;
	int max = buflen - 8 < wlen ? buflen - 8 : wlen;
	if (rt == 0x80 && req == 6) { /* GET_DESCRIPTOR */
		uint8_t d[256];
		int n;
		if (value >> 8 == 1)
			n = (int)sizeof dev_desc, memcpy(d, dev_desc, (size_t)n);
		else if (value >> 8 == 2)
			n = (int)sizeof cfg_desc, memcpy(d, cfg_desc, (size_t)n);
		else if (value >> 8 == 3)
			n = string_desc(b, value & 0xff, d);
		else
			return -1;
		if (n < 0)
			return -1;
		n = n < max ? n : max;
		memcpy(data, d, (size_t)n);
		return n;
	}
	if (rt == FTDI_REQTYPE_OUT) {
		switch (req) {
		case FTDI_SIO_RESET:
			if (value == FTDI_RESET_SIO)
				b->resets++;
			else
				b->purges++;
			break;
		case FTDI_SIO_SET_BAUDRATE: b->baud_value = value, b->baud_index = index; break;
		case FTDI_SIO_SET_DATA: b->data_cfg = value; break;
		case FTDI_SIO_SET_LATENCY: b->latency = value; break;
		case FTDI_SIO_SET_FLOW_CTRL: b->flow_index = index; break;
		case FTDI_SIO_SET_BITMODE: b->bitmode = value; break;
		default: break;
		}
		return 0;
	}
	return -1;
}

/* Complete an IN URB like the chip: 2 status bytes at the start of every 512-byte packet. */
static int bulk_in(struct board *b, uint8_t *buf, int buflen)
{
	int n = 0;
	while (buflen - n >= FTDI_STATUS_BYTES) {
		int room = buflen - n < 512 ? buflen - n : 512;
		buf[n] = 0x01 | 0x30; /* modem status (CTS, DSR) as a real FT2232H sends it */
		buf[n + 1] = 0x60;    /* line status: THRE, TEMT */
		int m = room - FTDI_STATUS_BYTES;
		if ((size_t)m > b->out_len)
			m = (int)b->out_len;
		memcpy(buf + n + 2, b->out + b->out_head, (size_t)m);
		b->out_head += (size_t)m;
		b->out_len -= (size_t)m;
		n += 2 + m;
		if (m < room - FTDI_STATUS_BYTES || !b->out_len)
			break; /* short packet ends the transfer */
	}
	return n;
}

static gboolean on_ioctl(UMockdevIoctlBase *handler, UMockdevIoctlClient *client, gpointer ud)
{
	struct board *b = ud;
	(void)handler;
	gulong req = umockdev_ioctl_client_get_request(client);
	UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(client);

	switch (req) {
	case USBDEVFS_GET_CAPABILITIES: {
		UMockdevIoctlData *d = umockdev_ioctl_data_resolve(arg, 0, sizeof(guint32), NULL);
		*(guint32 *)d->data = USBDEVFS_CAP_BULK_CONTINUATION | USBDEVFS_CAP_NO_PACKET_SIZE_LIM |
				      USBDEVFS_CAP_REAP_AFTER_DISCONNECT;
		umockdev_ioctl_data_unref(d);
		umockdev_ioctl_client_complete(client, 0, 0);
		return TRUE;
	}
	case USBDEVFS_CLAIMINTERFACE: case USBDEVFS_RELEASEINTERFACE: case USBDEVFS_CLEAR_HALT:
	case USBDEVFS_RESET: case USBDEVFS_RESETEP: case USBDEVFS_DISCONNECT_CLAIM:
		if (atomic_load(&b->unplugged))
			umockdev_ioctl_client_complete(client, -1, ENODEV);
		else
			umockdev_ioctl_client_complete(client, 0, 0);
		return TRUE;
	case USBDEVFS_IOCTL: /* (re)attach the kernel driver on release: nothing to attach */
		umockdev_ioctl_client_complete(client, 0, 0);
		return TRUE;
	case USBDEVFS_GETDRIVER:
		umockdev_ioctl_client_complete(client, -1, ENODATA); /* no kernel driver bound */
		return TRUE;
	case USBDEVFS_SUBMITURB: {
		if (atomic_load(&b->unplugged)) {
			umockdev_ioctl_client_complete(client, -1, ENODEV);
			return TRUE;
		}
		UMockdevIoctlData *ud_urb = umockdev_ioctl_data_resolve(arg, 0, sizeof(struct usbdevfs_urb), NULL);
		struct usbdevfs_urb *urb = (struct usbdevfs_urb *)ud_urb->data;
		UMockdevIoctlData *ud_buf = umockdev_ioctl_data_resolve(
			ud_urb, G_STRUCT_OFFSET(struct usbdevfs_urb, buffer), (gsize)urb->buffer_length, NULL);
		uint8_t *buf = ud_buf->data;
		urb->status = 0;
		urb->actual_length = 0;
		if (urb->type == USBDEVFS_URB_TYPE_CONTROL) {
			int n = control(b, buf, urb->buffer_length);
			if (n < 0)
				urb->status = -EPIPE;
			else
				urb->actual_length = n;
		} else if (urb->type == USBDEVFS_URB_TYPE_BULK && !(urb->endpoint & 0x80)) {
			if (urb->endpoint == 0x04) {
				/* the buffer is written back to the client on completion: corrupt
				 * what the board sees, not the host's copy */
				int flip = -1;
				if (atomic_load(&b->corrupt_next) && urb->buffer_length > 10 && buf[1] == FRM_DATA) {
					atomic_store(&b->corrupt_next, 0);
					flip = 10; /* one payload bit on the wire */
				}
				if (!atomic_load(&b->silent))
					for (int i = 0; i < urb->buffer_length; i++)
						link_byte(b, (uint8_t)(buf[i] ^ (i == flip ? 0x10 : 0)));
				b->rx_bytes += urb->buffer_length;
				long ua = atomic_load(&b->unplug_after);
				if (ua && b->rx_bytes >= ua)
					atomic_store(&b->unplugged, 1);
			}
			urb->actual_length = urb->buffer_length;
		}
		/* IN URBs are filled when reaped: the data the board has by then */
		b->flying = g_list_append(b->flying, ud_urb);
		umockdev_ioctl_data_unref(ud_buf);
		umockdev_ioctl_client_complete(client, 0, 0);
		return TRUE;
	}
	case USBDEVFS_REAPURB:
	case USBDEVFS_REAPURBNDELAY: {
		if (!b->flying) {
			umockdev_ioctl_client_complete(client, -1,
							atomic_load(&b->unplugged) ? ENODEV : EAGAIN);
			return TRUE;
		}
		UMockdevIoctlData *ud_urb = b->flying->data;
		b->flying = g_list_delete_link(b->flying, b->flying);
		struct usbdevfs_urb *urb = (struct usbdevfs_urb *)ud_urb->data;
		if (atomic_load(&b->unplugged)) {
			urb->status = -ESHUTDOWN; /* what usbfs gives URBs killed by a disconnect */
			urb->actual_length = 0;
		} else if (urb->type == USBDEVFS_URB_TYPE_BULK && (urb->endpoint & 0x80)) {
			/* same process: the client's buffer is addressable; keep the copy in sync */
			UMockdevIoctlData *ud_buf = umockdev_ioctl_data_resolve(
				ud_urb, G_STRUCT_OFFSET(struct usbdevfs_urb, buffer), (gsize)urb->buffer_length, NULL);
			urb->actual_length = bulk_in(b, ud_buf->data, urb->buffer_length);
			umockdev_ioctl_data_unref(ud_buf);
		}
		UMockdevIoctlData *ptr = umockdev_ioctl_data_resolve(arg, 0, sizeof(gpointer), NULL);
		umockdev_ioctl_data_set_ptr(ptr, 0, ud_urb);
		umockdev_ioctl_data_unref(ptr);
		umockdev_ioctl_data_unref(ud_urb);
		umockdev_ioctl_client_complete(client, 0, 0);
		return TRUE;
	}
	case USBDEVFS_DISCARDURB:
		/* everything completes at reap: nothing is left to discard */
		umockdev_ioctl_client_complete(client, -1, EINVAL);
		return TRUE;
	default:
		fprintf(stderr, "umock: unhandled ioctl 0x%lx on %s\n", req, b->devnode);
		return FALSE;
	}
}

static UMockdevTestbed *tb;

static void add_board(struct board *b, UMockdevIoctlBase *h)
{
	char desc[2048], hex[256];
	size_t k = 0;
	for (size_t i = 0; i < sizeof dev_desc; i++)
		k += (size_t)sprintf(hex + k, "%02x", dev_desc[i]);
	for (size_t i = 0; i < sizeof cfg_desc; i++)
		k += (size_t)sprintf(hex + k, "%02x", cfg_desc[i]);
	const char *num = b->devnode + strlen("/dev/bus/usb/001/");
	snprintf(desc, sizeof desc,
		 "P: %s\nN: bus/usb/001/%s\nE: SUBSYSTEM=usb\nE: DEVTYPE=usb_device\n"
		 "E: BUSNUM=001\nE: DEVNUM=%s\nE: DEVNAME=%s\nE: ID_SERIAL_SHORT=%s\n"
		 "A: busnum=1\\n\nA: devnum=%d\\n\nA: bConfigurationValue=1\\n\nA: speed=480\\n\n"
		 "A: serial=%s\\n\nA: idVendor=0403\\n\nA: idProduct=6010\\n\nH: descriptors=%s\n",
		 b->syspath, num, num, b->devnode, b->serial, atoi(num), b->serial, hex);
	b->dec.byte_timeout = 0;
	frm_dec_init(&b->dec, 0, 0);
	b->out = malloc(OUTQ);
	GError *ge = NULL;
	if (!umockdev_testbed_attach_ioctl(tb, b->devnode, h, &ge) ||
	    !umockdev_testbed_add_from_string(tb, desc, &ge)) {
		fprintf(stderr, "umock: cannot add %s: %s\n", b->devnode, ge ? ge->message : "?");
		exit(1);
	}
}

static void remove_board(struct board *b)
{
	char sys[128];
	snprintf(sys, sizeof sys, "/sys%s", b->syspath);
	umockdev_testbed_uevent(tb, sys, "remove");
	umockdev_testbed_remove_device(tb, sys);
}

/* ---- the cases ---------------------------------------------------------------------- */

static uint64_t rng = 0x1234;
static uint32_t rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 32);
}

/* ECHO n words; 0 when they all come back in order */
static int echo(csd_dev *dev, size_t n)
{
	uint32_t *cmd = malloc((n + 1) * 4), *r = malloc((n + 1) * 4);
	cmd[0] = proto_hdr_echo((unsigned)n);
	for (size_t i = 0; i < n; i++)
		cmd[1 + i] = rnd();
	int rc = csd_usb_xfer(dev, cmd, n + 1, r, n + 1);
	if (!rc && (r[0] != proto_resp_hdr(PROTO_ECHO, 0, (unsigned)n) ||
		    memcmp(cmd + 1, r + 1, n * 4)))
		rc = 1;
	free(cmd);
	free(r);
	return rc;
}

static int run_cli(const char *a0, const char *a1, const char *a2)
{
	char *argv[4] = { (char *)a0, (char *)a1, (char *)a2, NULL };
	int argc = a2 ? 3 : a1 ? 2 : 1;
	fflush(stdout);
	int rc = cmd_board(argc, argv);
	fflush(stdout);
	return rc;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	tb = umockdev_testbed_new();
	if (!umockdev_in_mock_environment()) {
		printf("umock_usb: SKIP: not running under umockdev-wrapper "
		       "(run: umockdev-wrapper %s)\n", "build/tests/usb/umock_usb");
		return 77;
	}
	UMockdevIoctlBase *h[2];
	for (int i = 0; i < 2; i++) {
		h[i] = umockdev_ioctl_base_new();
		g_signal_connect(h[i], "handle-ioctl", G_CALLBACK(on_ioctl), &boards[i]);
		add_board(&boards[i], h[i]);
	}
	char err[256] = "";
	csd_dev *dev = NULL;
	int rc;
	double t0;

	/* 1. enumeration: both boards, with their serials */
	struct csd_usb_board list[4];
	int n = csd_usb_list(list, 4, NULL, err, sizeof err);
	CHECK(n == 2, "csd_usb_list -> %d (%s)", n, err);
	if (n == 2) {
		CHECK(!strcmp(list[0].serial, "CSB00001") || !strcmp(list[1].serial, "CSB00001"),
		      "serials %s %s", list[0].serial, list[1].serial);
		CHECK(!strcmp(list[0].product, "Dual RS232-HS") && list[0].bcd_device == 0x0700,
		      "product '%s' bcd %04x", list[0].product, list[0].bcd_device);
	}
	printf("-- cshost board list\n");
	CHECK(run_cli("board", "list", NULL) == 0, "board list exit code");

	/* 2. open by serial: the second board, FTDI set up for 3 Mbaud 8N1 on channel B */
	rc = csd_open(&dev, "usb:CSB00002,noload");
	CHECK(rc == 0, "open usb:CSB00002 -> %s (%s)", cs_error_name(rc), csd_last_error(NULL));
	if (rc) {
		printf("RESULT: %d passed, %d failed\n", n_pass, n_fail);
		return 1;
	}
	struct board *b = &boards[1];
	CHECK(b->baud_value == 0x0004 && b->baud_index == 0x0202,
	      "baud value %04x index %04x (want 0004 0202: 12 MHz / 4, port B)", b->baud_value,
	      b->baud_index);
	CHECK(b->data_cfg == FTDI_DATA_8N1 && b->latency == 1 && b->flow_index == 0x0002 &&
		      b->bitmode == 0 && b->resets == 1 && b->purges == 2,
	      "data %04x latency %u flow %04x bitmode %04x resets %d purges %d", b->data_cfg,
	      b->latency, b->flow_index, b->bitmode, b->resets, b->purges);
	CHECK(boards[0].baud_value == 0, "the other board was configured");

	/* 3. echo round trips: one word, one frame, many frames */
	CHECK(echo(dev, 1) == 0, "echo 1: %s", csd_last_error(dev));
	CHECK(echo(dev, 255) == 0, "echo 255: %s", csd_last_error(dev));
	t0 = now_s();
	rc = echo(dev, 50000);
	CHECK(rc == 0, "echo 50000: %d %s", rc, csd_last_error(dev));
	printf("echo of 50000 words through the emulated board: %.1f ms (emulated USB, no UART "
	       "timing)\n", (now_s() - t0) * 1e3);

	/* 4. a host frame corrupted on the wire: NAKed by the board and resent */
	struct csd_usb_link li0, li;
	CHECK(csd_usb_link_info(dev, &li0) == 0, "link info: %s", csd_last_error(dev));
	atomic_store(&b->corrupt_next, 1);
	rc = echo(dev, 600);
	CHECK(rc == 0, "echo after corruption: %d %s", rc, csd_last_error(dev));
	CHECK(atomic_load(&b->corrupt_next) == 0, "no frame was corrupted");
	CHECK(csd_usb_link_info(dev, &li) == 0, "link info: %s", csd_last_error(dev));
	CHECK(li.dev.err_crc == li0.dev.err_crc + 1, "device err_crc %u -> %u", li0.dev.err_crc,
	      li.dev.err_crc);
	CHECK(li.naks > li0.naks && li.retransmits > li0.retransmits,
	      "host naks %llu -> %llu retransmits %llu -> %llu", (unsigned long long)li0.naks,
	      (unsigned long long)li.naks, (unsigned long long)li0.retransmits,
	      (unsigned long long)li.retransmits);
	CHECK(li.rx_crc_errors == 0 && li.rx_seq_errors == 0, "device -> host errors");
	csd_close(dev);
	dev = NULL;

	/* 5. a normal open loads the kernels image: IMEM of every PE holds it */
	rc = csd_open(&dev, "usb:CSB00001");
	CHECK(rc == 0, "open with load: %s", csd_last_error(NULL));
	if (!rc) {
		struct csd_fw fw;
		CHECK(csd_fw_get(&fw, "kernels", err, sizeof err) == 0, "%s", err);
		int same = 1;
		for (int pe = 0; pe < NPE; pe++)
			for (int i = 0; i < fw.n_instr; i++)
				same &= boards[0].mem[pe][PROTO_T_IMEM][i] == fw.imem[i];
		CHECK(same && fw.n_instr > 0, "IMEM differs from the kernels image");
		csd_counters c;
		csd_get_counters(dev, &c);
		CHECK(c.link_bytes_out > 4u * (uint64_t)fw.n_instr, "load counted %llu bytes",
		      (unsigned long long)c.link_bytes_out);
		csd_close(dev);
		dev = NULL;
	}

	/* 6. the board CLI: info, selftest passing, selftest catching a bad PE */
	setenv("CSD_USB_TIMEOUT_MS", "500", 1);
	printf("-- cshost board info\n");
	CHECK(run_cli("board", "info", NULL) == 0, "board info");
	printf("-- cshost board selftest (good board)\n");
	CHECK(run_cli("board", "selftest", NULL) == 0, "board selftest on a good board");
	boards[0].faulty_pe = 2;
	boards[1].faulty_pe = 2;
	printf("-- cshost board selftest (PE 2 has a stuck bit in B)\n");
	CHECK(run_cli("board", "selftest", NULL) == 1, "board selftest must fail on a bad PE");
	boards[0].faulty_pe = boards[1].faulty_pe = -1;

	/* 7. unknown serial: fails at once with a clear message */
	t0 = now_s();
	rc = csd_open(&dev, "usb:NOSUCH");
	CHECK(rc == CS_ERR_NOT_FOUND && now_s() - t0 < 1.0, "open unknown serial -> %s in %.2f s",
	      cs_error_name(rc), now_s() - t0);
	printf("open usb:NOSUCH: %s\n", csd_last_error(NULL));

	/* 8. unplug in the middle of a long transfer: CS_ERR_NO_DEVICE, no hang */
	rc = csd_open(&dev, "usb:CSB00001,noload");
	CHECK(rc == 0, "reopen: %s", csd_last_error(NULL));
	if (!rc) {
		atomic_store(&boards[0].unplug_after, boards[0].rx_bytes + 20000);
		t0 = now_s();
		rc = echo(dev, 60000);
		double dt = now_s() - t0;
		CHECK(rc == CS_ERR_NO_DEVICE && dt < 2.0, "unplug mid-transfer -> %s after %.2f s",
		      cs_error_name(rc), dt);
		printf("unplugged after %ld bytes: %s\n", boards[0].rx_bytes, csd_last_error(dev));
		t0 = now_s();
		rc = echo(dev, 1);
		CHECK(rc == CS_ERR_NO_DEVICE && now_s() - t0 < 0.1, "after unplug -> %s",
		      cs_error_name(rc));
		csd_close(dev); /* must not hang */
		dev = NULL;
		remove_board(&boards[0]);
	}

	/* 9. a board without a bitstream (the UART never answers): timeout, clear message */
	atomic_store(&boards[1].silent, 1);
	t0 = now_s();
	rc = csd_open(&dev, "usb:CSB00002,noload");
	CHECK(rc == CS_ERR_TIMEOUT && now_s() - t0 < 2.0, "silent board -> %s in %.2f s",
	      cs_error_name(rc), now_s() - t0);
	printf("silent board: %s\n", csd_last_error(NULL));
	if (!rc)
		csd_close(dev);
	remove_board(&boards[1]);

	/* 10. no board at all */
	n = csd_usb_list(list, 4, NULL, err, sizeof err);
	CHECK(n == 0, "list after removal -> %d", n);
	printf("-- cshost board list (no board)\n");
	CHECK(run_cli("board", "list", NULL) == 2, "board list with no board must exit 2");
	t0 = now_s();
	rc = csd_open(&dev, "usb");
	CHECK(rc == CS_ERR_NOT_FOUND && now_s() - t0 < 1.0, "open with no board -> %s",
	      cs_error_name(rc));
	printf("open usb: %s\n", csd_last_error(NULL));

	printf("RESULT: %d passed, %d failed\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
