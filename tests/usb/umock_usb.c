/*
 * umock_usb.c - the usb backend end to end against an emulated FT2232H board, with no
 * hardware: umockdev (run under umockdev-wrapper) provides the sysfs entries and device
 * nodes libusb enumerates, and an ioctl handler in this process answers the usbfs requests
 * (USBDEVFS_SUBMITURB / REAPURB / ...) an unmodified libusb sends. Behind the handler sits
 * the board: the FTDI chip (vendor requests recorded, 2 modem status bytes at the start of
 * every 512-byte IN packet, purge), the board's link layer (the framing rules of
 * docs/architecture.md section 6: go-back-N receiver with ACK/NAK and STAT, device DATA
 * frames of at most 64 words), and behind it the word-level device model
 * verif/models/mesh_model.c (host port decoding, routes, one pe_model per tile running the
 * real fw/kernels.s and fw/selftest.s). So the kernels, the self-test and cshost spmm run
 * their real command streams through libusb, the framing and the host port.
 *
 * What the emulation is not: USB or UART timing (bytes move as fast as the ioctls), the
 * FT2232H's own behaviour beyond what is listed above, the RTL (the Verilated board top is
 * tested against frame.c in verif/board, the device model against the RTL in test_sim), or a
 * real board.
 *
 * Cases: enumeration of two boards with serials, open by serial and FTDI setup (baud
 * divisor, 8N1, latency, flow control), echo round trips, the kernels image load, a
 * corrupted host frame NAKed and resent, `board` CLI (list, info, selftest pass, and fail on
 * a PE whose task table loses its writes); forward, backward and wgrad on random layers
 * (four mesh shapes / SRAM sizes, tiling, empty rows and columns, special values) bit for
 * bit against the cpu backend with the link bytes checked against the board's count and
 * the protocol's words plus framing; cshost spmm --device usb; a corrupted and a dropped
 * host frame during each kernel (still bit-exact: retransmission); a corrupted response
 * (CS_ERR_PROTOCOL at once, the next call resynchronizes); cshost train with
 * device.kind=usb unplugged in the middle of a step (stops at once, names the last
 * checkpoint, which loads; --resume finishes the run once the board is back); unplug during
 * each kernel and in the middle of a transfer -> CS_ERR_NO_DEVICE without a hang; a board
 * that does not answer (at open, or from the middle of a kernel on) -> timeout; no board ->
 * "no board found" and exit 2.
 * TEST_SEED replays the random layers; REGRESS=1 runs more. Exit 77 (skip) when not run
 * under umockdev-wrapper.
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
#include "train/ckpt.h"
#include "../../verif/models/mesh_model.h"
#include "../support/kernel_ref.h"

int cmd_board(int argc, char **argv);
int cmd_spmm(int argc, char **argv);
int cmd_train(int argc, char **argv);

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

#define OUTQ (1u << 22)

/* What the board saw and sent, counted on its side of the UART. */
struct board_ctr {
	uint64_t rx_bytes;       /* bytes that reached the board (dropped frames included) */
	uint64_t tx_bytes;       /* bytes the board sent */
	uint64_t data_new;       /* host DATA frames accepted in order */
	uint64_t data_other;     /* host DATA frames dropped (duplicate, out of order, bad) */
	uint64_t words_in;       /* command words delivered to the host port */
	uint64_t rsp_words;      /* response words sent */
	uint64_t rsp_frames;     /* device DATA frames */
	uint64_t ctl_frames;     /* ACK, NAK and STAT frames sent */
};

struct board {
	const char *serial;
	const char *devnode, *syspath;
	/* test controls (main thread writes, handler thread reads) */
	atomic_int corrupt_next;    /* flip a bit in the next host DATA frame */
	atomic_long corrupt_at;     /* ... in the first host DATA frame at or after this many
				       received bytes (0: never) */
	atomic_long drop_at;        /* drop the first host DATA frame at or after this many
				       received bytes, as if lost on the wire (0: never) */
	atomic_long corrupt_rsp_at; /* flip a bit of the device -> host byte with this index
				       in the board's output (0: never) */
	atomic_long unplug_after;   /* unplug once this many bytes arrived (0: never) */
	atomic_int unplugged;
	atomic_int silent;          /* no bitstream: the UART never answers */
	atomic_long silent_at;      /* go silent once this many bytes arrived (0: never) */
	int dead_pe;                /* PE whose task table loses every write (-1: none) */
	int model_fault;            /* the device model faulted (a bug: the test fails) */
	/* FTDI state */
	uint16_t baud_value, baud_index, data_cfg, latency, flow_index, bitmode;
	int resets, purges;
	struct board_ctr ctr;
	/* link layer (rtl/board's rules, docs/architecture.md section 6) */
	frm_dec dec;
	uint8_t expect, tx_seq;
	uint16_t err_crc, err_trunc, err_seq;
	uint8_t *out;               /* device -> host bytes */
	size_t out_head, out_len;
	/* the mesh behind the host port: the word-level device model */
	int rows, cols;
	unsigned awords, bwords;
	struct mesh_model mm;
	/* URBs in flight, in submission order */
	GList *flying;
};

static struct board boards[2] = {
	{ .serial = "CSB00001", .devnode = "/dev/bus/usb/001/002",
	  .syspath = "/devices/usb1/1-1", .dead_pe = -1 },
	{ .serial = "CSB00002", .devnode = "/dev/bus/usb/001/003",
	  .syspath = "/devices/usb1/1-2", .dead_pe = -1 },
};

/* Load a "bitstream": a fresh mesh of this shape and these SRAM sizes, link state from
 * reset (what a power cycle or reflash does to the FPGA). Only while no device is open. */
static int board_flash(struct board *b, int rows, int cols, unsigned awords, unsigned bwords)
{
	mesh_model_free(&b->mm);
	if (mesh_model_init(&b->mm, rows, cols, awords, bwords, 1)) /* the boards' PEs */
		return -1;
	for (int q = 0; q < rows * cols; q++)
		b->mm.pe[q].first_touch = 0; /* START fills */
	b->rows = rows;
	b->cols = cols;
	b->awords = awords;
	b->bwords = bwords;
	frm_dec_init(&b->dec, 0, 0);
	b->expect = b->tx_seq = 0;
	b->err_crc = b->err_trunc = b->err_seq = 0;
	b->out_head = b->out_len = 0;
	return 0;
}

/* the bitstream `make bitstream` builds (the usb backend's default mesh) */
static int board_flash_default(struct board *b)
{
	return board_flash(b, USB_BOARD_ROWS, USB_BOARD_COLS, USB_BOARD_AWORDS, USB_BOARD_BWORDS);
}

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
	b->ctr.tx_bytes += n;
}

static void send_frame(struct board *b, uint8_t type, uint8_t seq, const uint32_t *w, int n)
{
	uint8_t fr[FRM_MAX_BYTES];
	int len = frm_encode(fr, sizeof fr, type, seq, w, n);
	out_bytes(b, fr, (size_t)len);
	if (type == FRM_DATA) {
		b->ctr.rsp_frames++;
		b->ctr.rsp_words += (uint64_t)n;
	} else {
		b->ctr.ctl_frames++;
	}
}

/* The payload of an accepted frame to the host port. A dead PE's task table is wiped at
 * every command boundary, so no task is ever valid there: its programs never run. */
static void port_words(struct board *b, const uint32_t *w, int n)
{
	struct mesh_model *m = &b->mm;
	b->ctr.words_in += (uint64_t)n;
	for (int i = 0; i < n; i++) {
		int r = b->dead_pe >= 0 ? mesh_model_send(m, w + i, 1)
					: mesh_model_send(m, w + i, (size_t)(n - i));
		if (r && !b->model_fault) {
			b->model_fault = 1;
			fprintf(stderr, "umock: board %s: the device model faulted\n", b->serial);
		}
		if (b->dead_pe < 0)
			break;
		if (m->ncmd == 0)
			memset(m->pe[b->dead_pe].task, 0, sizeof m->pe[b->dead_pe].task);
	}
	/* responses go out in DATA frames of at most 64 words, after the ACK */
	uint32_t rsp[64];
	size_t have;
	while ((have = mesh_model_avail(m)) > 0) {
		int k = have < 64 ? (int)have : 64;
		mesh_model_recv(m, rsp, (size_t)k);
		send_frame(b, FRM_DATA, b->tx_seq++, rsp, k);
	}
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
		b->ctr.data_other++;
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
		b->ctr.data_new++;
		send_frame(b, FRM_ACK, f->seq, NULL, 0);
		port_words(b, f->words, f->n);
	} else if (behind >= 1 && behind <= 4) {
		b->ctr.data_other++;
		send_frame(b, FRM_ACK, (uint8_t)(b->expect - 1), NULL, 0);
	} else {
		if (b->err_seq < 0xffff)
			b->err_seq++;
		b->ctr.data_other++;
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
			if (value == FTDI_RESET_SIO) {
				b->resets++;
			} else {
				b->purges++;
				if (value == FTDI_PURGE_RX) /* the chip's buffer towards the host */
					b->out_head = b->out_len = 0;
			}
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
		/* a bit error on the device -> host wire */
		long cr = atomic_load(&b->corrupt_rsp_at), base = (long)(b->ctr.tx_bytes - b->out_len);
		if (cr && cr >= base && cr < base + m) {
			buf[n + 2 + (cr - base)] ^= 0x04;
			atomic_store(&b->corrupt_rsp_at, 0);
		}
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
				int flip = -1, drop = 0;
				int data = urb->buffer_length > 10 && buf[0] == FRM_SOF && buf[1] == FRM_DATA;
				long ca = atomic_load(&b->corrupt_at), da = atomic_load(&b->drop_at);
				long rx = (long)b->ctr.rx_bytes;
				if (data && atomic_load(&b->corrupt_next)) {
					atomic_store(&b->corrupt_next, 0);
					flip = 10; /* one payload bit on the wire */
				} else if (data && ca && rx >= ca) {
					atomic_store(&b->corrupt_at, 0);
					flip = 5 + (int)((unsigned long)rx % (unsigned long)(urb->buffer_length - 5));
				} else if (data && da && rx >= da) {
					atomic_store(&b->drop_at, 0);
					drop = 1;
				}
				long sa = atomic_load(&b->silent_at);
				if (sa && rx >= sa) {
					atomic_store(&b->silent_at, 0);
					atomic_store(&b->silent, 1);
				}
				if (!atomic_load(&b->silent) && !drop)
					for (int i = 0; i < urb->buffer_length; i++)
						link_byte(b, (uint8_t)(buf[i] ^ (i == flip ? 0x10 : 0)));
				b->ctr.rx_bytes += (uint64_t)urb->buffer_length;
				long ua = atomic_load(&b->unplug_after);
				if (ua && (long)b->ctr.rx_bytes >= ua)
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
	b->out = malloc(OUTQ);
	if (!b->out || board_flash_default(b)) {
		fprintf(stderr, "umock: out of memory\n");
		exit(1);
	}
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

/* ---- kernels on the emulated board -------------------------------------------------- */

struct geo {
	int R, C;
	unsigned aw, bw;
};

static void geo_uris(const struct geo *g, const char *serial, char *uri, char *ref, size_t cap)
{
	snprintf(uri, cap, "usb:%s,%dx%d,awords=%u,bwords=%u", serial, g->R, g->C, g->aw, g->bw);
	/* the boards' PE as the usb backend models it (its wgrad stream a SET_MAJOR per major,
	 * the START fill, the SET_MAJOR task: the tuner's tiles follow its timing) */
	snprintf(ref, cap, "cpu:%dx%d,pe=lite,awords=%u,bwords=%u", g->R, g->C, g->aw, g->bw);
}

static uint64_t kernel_frames_resent;

/*
 * One kernel call on the board and on the cpu model of the same mesh: the outputs bit for
 * bit, and the link bytes. The driver's byte counters must equal what the board counted on
 * its side of the UART; the command words the board's host port took and the response words
 * it sent must equal the protocol words the cpu model counts (tests/driver/test_cpu.c checks
 * those against section 6); and with nothing resent, the bytes must be 4 per word plus 7 per
 * frame (DATA both ways, one ACK per host frame). Returns mismatches or a cs_error.
 */
static long kernel_case(csd_dev *dev, csd_dev *ref, struct board *b, int k,
			const struct kref_layer *L, const char *what)
{
	csd_reset_counters(dev);
	csd_reset_counters(ref);
	struct board_ctr c0 = b->ctr;
	long bad = kref_compare(dev, ref, k, L, what);
	if (bad)
		return bad;
	struct board_ctr c1 = b->ctr;
	csd_counters cu, cc;
	csd_get_counters(dev, &cu);
	csd_get_counters(ref, &cc);
	uint64_t rx = c1.rx_bytes - c0.rx_bytes, tx = c1.tx_bytes - c0.tx_bytes;
	uint64_t frames = c1.data_new - c0.data_new, other = c1.data_other - c0.data_other;
	uint64_t rframes = c1.rsp_frames - c0.rsp_frames, ctl = c1.ctl_frames - c0.ctl_frames;
	CHECK(cu.link_bytes_out == rx && cu.link_bytes_in == tx,
	      "%s: driver counted %llu/%llu bytes out/in, the board %llu/%llu", what,
	      (unsigned long long)cu.link_bytes_out, (unsigned long long)cu.link_bytes_in,
	      (unsigned long long)rx, (unsigned long long)tx);
	CHECK(4 * (c1.words_in - c0.words_in) == cc.link_bytes_out &&
		      4 * (c1.rsp_words - c0.rsp_words) == cc.link_bytes_in,
	      "%s: board took %llu words and sent %llu, the protocol needs %llu and %llu", what,
	      (unsigned long long)(c1.words_in - c0.words_in),
	      (unsigned long long)(c1.rsp_words - c0.rsp_words),
	      (unsigned long long)cc.link_bytes_out / 4, (unsigned long long)cc.link_bytes_in / 4);
	CHECK(cu.weight_bytes == cc.weight_bytes && cu.nnz_streamed == cc.nnz_streamed,
	      "%s: weight bytes %llu vs %llu", what, (unsigned long long)cu.weight_bytes,
	      (unsigned long long)cc.weight_bytes);
	if (other == 0) {
		CHECK(cu.link_bytes_out == cc.link_bytes_out + FRM_OVERHEAD * frames,
		      "%s: %llu bytes out for %llu protocol bytes in %llu frames", what,
		      (unsigned long long)cu.link_bytes_out, (unsigned long long)cc.link_bytes_out,
		      (unsigned long long)frames);
		CHECK(ctl == frames && cu.link_bytes_in == cc.link_bytes_in +
							      FRM_OVERHEAD * (rframes + ctl),
		      "%s: %llu bytes in for %llu protocol bytes in %llu DATA + %llu ACK frames "
		      "(%llu host frames)",
		      what, (unsigned long long)cu.link_bytes_in, (unsigned long long)cc.link_bytes_in,
		      (unsigned long long)rframes, (unsigned long long)ctl,
		      (unsigned long long)frames);
	} else {
		/* an ACK timeout fired on a loaded machine and frames went twice: the bytes
		 * are still the board's (checked above), not the clean-link formula */
		kernel_frames_resent += other;
	}
	return 0;
}

/* Drop everything in flight and put the board back to its state after power-up. */
static void board_replug(struct board *b)
{
	g_list_free_full(b->flying, (GDestroyNotify)umockdev_ioctl_data_unref);
	b->flying = NULL;
	atomic_store(&b->unplug_after, 0);
	atomic_store(&b->unplugged, 0);
	if (board_flash(b, b->rows, b->cols, b->awords, b->bwords)) {
		fprintf(stderr, "umock: out of memory\n");
		exit(1);
	}
}

static void kernel_tests(void)
{
	struct board *b = &boards[0];
	char uri[160], ref_uri[160];
	csd_dev *dev = NULL, *ref = NULL;
	int rc;

	/* A. random layers on four bitstreams: the board's default mesh and small SRAMs that
	 * force token and output tiling */
	static const struct geo geos[] = {
		{ USB_BOARD_ROWS, USB_BOARD_COLS, USB_BOARD_AWORDS, USB_BOARD_BWORDS },
		{ 2, 2, 128, 64 }, { 1, 3, 256, 32 }, { 3, 2, 512, 128 },
	};
	static const double sps[] = { 0, 0.3, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0 };
	const char *s = getenv("TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 1;
	printf("kernels on the emulated board: seed %llu (TEST_SEED replays)\n",
	       (unsigned long long)seed);
	int per = getenv("REGRESS") && strcmp(getenv("REGRESS"), "0") ? 150 : 18;
	long mism = 0;
	int cases = 0;
	uint64_t nnz_total = 0, bytes_total = 0;
	double t_total = 0;
	for (size_t gi = 0; gi < sizeof geos / sizeof geos[0]; gi++) {
		const struct geo *g = &geos[gi];
		CHECK(board_flash(b, g->R, g->C, g->aw, g->bw) == 0, "flash");
		geo_uris(g, b->serial, uri, ref_uri, sizeof uri);
		rc = csd_open(&dev, uri);
		CHECK(rc == 0, "open %s: %s", uri, csd_last_error(NULL));
		if (rc)
			continue;
		CHECK(csd_open(&ref, ref_uri) == 0, "open %s", ref_uri);
		int P = g->R * g->C, maxf = g->aw < 80 ? (int)g->aw : 80;
		for (int c = 0; c < per; c++) {
			kref_rng_state = seed * 1000003u + gi * 7919u + (uint64_t)c;
			int T = kref_rng_int(1, 3 * P + 40), K = kref_rng_int(1, maxf);
			int N = kref_rng_int(1, maxf), k = c % 4, empty = (c / 4) % 2;
			double sp = sps[kref_rng_int(0, 7)];
			struct kref_layer L;
			if (kref_layer_make(&L, T, N, K, sp, c % 5 == 4 ? KREF_SPECIALS : KREF_PLAIN,
					    empty)) {
				CHECK(0, "out of memory");
				break;
			}
			char what[256];
			snprintf(what, sizeof what, "%s kernel %d T=%d N=%d K=%d sparsity %.2f nnz %lld",
				 uri, k, T, N, K, sp, (long long)L.sp.nnz);
			double t0 = now_s();
			long bad = kernel_case(dev, ref, b, k, &L, what);
			t_total += now_s() - t0;
			CHECK(bad == 0, "%s: %ld", what, bad);
			mism += bad > 0 ? bad : 0;
			cases++;
			csd_counters cu;
			csd_get_counters(dev, &cu);
			nnz_total += cu.nnz_streamed;
			bytes_total += cu.link_bytes_out + cu.link_bytes_in;
			kref_layer_free(&L);
		}
		csd_close(ref);
		csd_close(dev);
		dev = ref = NULL;
	}
	CHECK(!b->model_fault, "the device model faulted");
	printf("%d random kernel calls, usb (emulated board) vs cpu: %ld mismatching outputs; "
	       "%.2f s, %.0f nonzeros/s, %.0f link bytes/s through the emulation (no UART timing); "
	       "%llu frames resent after spurious ACK timeouts\n",
	       cases, mism, t_total, t_total > 0 ? (double)nnz_total / t_total : 0.0,
	       t_total > 0 ? (double)bytes_total / t_total : 0.0,
	       (unsigned long long)kernel_frames_resent);

	/* B. the CLI against the board: spmm checks every kernel bit for bit itself */
	CHECK(board_flash_default(b) == 0, "flash");
	static const char *const kn[] = { "fwd", "bwd", "wgrad", "bwg" };
	for (int k = 0; k < 4; k++) {
		char *argv[] = { "spmm", "--device", "usb:CSB00001", "--tokens", "70", "--k", "90",
				 "--n", "50", "--sparsity", "0.8", "--kernel", (char *)kn[k], "--json",
				 NULL };
		printf("-- cshost spmm --device usb:CSB00001 --kernel %s\n", kn[k]);
		fflush(stdout);
		rc = cmd_spmm(14, argv);
		fflush(stdout);
		CHECK(rc == 0, "cshost spmm --device usb --kernel %s exit %d", kn[k], rc);
	}
	printf("-- cshost board selftest (real fw/selftest.s on the device model)\n");
	CHECK(run_cli("board", "selftest", NULL) == 0, "board selftest on the kernel board");

	/* C. faults on the wire during kernels: a flipped bit in a host frame (NAK, resend)
	 * and a host frame lost (NAK of the next one, or the ACK timeout): still bit-exact */
	geo_uris(&geos[0], b->serial, uri, ref_uri, sizeof uri);
	rc = csd_open(&dev, uri);
	CHECK(rc == 0, "open %s: %s", uri, csd_last_error(NULL));
	if (rc)
		return;
	CHECK(csd_open(&ref, ref_uri) == 0, "open %s", ref_uri);
	kref_rng_state = seed + 99;
	struct kref_layer L;
	if (kref_layer_make(&L, 64, 80, 60, 0.8, KREF_PLAIN, 0)) {
		CHECK(0, "out of memory");
		return;
	}
	for (int fault = 0; fault < 2; fault++)
		for (int k = 0; k < 3; k++) {
			struct csd_usb_link l0, l1;
			CHECK(csd_usb_link_info(dev, &l0) == 0, "link info: %s", csd_last_error(dev));
			long at = (long)b->ctr.rx_bytes + 1500 + 1000 * k;
			atomic_store(fault ? &b->drop_at : &b->corrupt_at, at);
			char what[128];
			snprintf(what, sizeof what, "%s during kernel %d",
				 fault ? "a dropped host frame" : "a corrupted host frame", k);
			long bad = kref_compare(dev, ref, k, &L, what);
			CHECK(bad == 0, "%s: %ld (%s)", what, bad, csd_last_error(dev));
			CHECK(atomic_load(fault ? &b->drop_at : &b->corrupt_at) == 0,
			      "%s: the fault was not injected (kernel too short)", what);
			CHECK(csd_usb_link_info(dev, &l1) == 0, "link info: %s", csd_last_error(dev));
			CHECK(l1.retransmits > l0.retransmits, "%s: nothing was resent", what);
			if (!fault)
				CHECK(l1.dev.err_crc == l0.dev.err_crc + 1 && l1.naks > l0.naks,
				      "%s: device err_crc %u -> %u, host NAKs %llu -> %llu", what,
				      l0.dev.err_crc, l1.dev.err_crc, (unsigned long long)l0.naks,
				      (unsigned long long)l1.naks);
			printf("%s: bit-exact; %llu frames resent, %llu NAKs, %llu ACK timeouts\n", what,
			       (unsigned long long)(l1.retransmits - l0.retransmits),
			       (unsigned long long)(l1.naks - l0.naks),
			       (unsigned long long)(l1.ack_timeouts - l0.ack_timeouts));
		}

	/* D. a response corrupted on its way to the host: no retransmission that way, so the
	 * call fails with CS_ERR_PROTOCOL at once; the next call resynchronizes the link and is
	 * bit-exact again */
	atomic_store(&b->corrupt_rsp_at, (long)b->ctr.tx_bytes + 2000);
	float *out = malloc(kref_out_len(&L, 0) * sizeof *out);
	double t0 = now_s();
	rc = kref_run(dev, 0, out, &L);
	double dt = now_s() - t0;
	CHECK(rc == CS_ERR_PROTOCOL && dt < 2.0, "corrupted response -> %s after %.2f s",
	      cs_error_name(rc), dt);
	printf("corrupted response: %s\n", csd_last_error(dev));
	for (int k = 0; k < 3; k++)
		CHECK(kref_compare(dev, ref, k, &L, "after a protocol error") == 0,
		      "kernel %d after a protocol error", k);

	/* E. unplug in the middle of each kernel: CS_ERR_NO_DEVICE promptly, never a hang */
	for (int k = 0; k < 3; k++) {
		if (!dev) {
			board_replug(b);
			rc = csd_open(&dev, uri);
			CHECK(rc == 0, "reopen after replug: %s", csd_last_error(NULL));
			if (rc)
				break;
		}
		atomic_store(&b->unplug_after, (long)b->ctr.rx_bytes + 3000);
		float *o = malloc((kref_out_len(&L, k) + 1) * sizeof *o);
		t0 = now_s();
		rc = kref_run(dev, k, o, &L);
		dt = now_s() - t0;
		CHECK(rc == CS_ERR_NO_DEVICE && dt < 2.0, "unplug during kernel %d -> %s after %.2f s",
		      k, cs_error_name(rc), dt);
		printf("unplug during kernel %d: %s after %.3f s: %s\n", k, cs_error_name(rc), dt,
		       csd_last_error(dev));
		t0 = now_s();
		rc = kref_run(dev, k, o, &L);
		CHECK(rc == CS_ERR_NO_DEVICE && now_s() - t0 < 0.1, "the next call -> %s",
		      cs_error_name(rc));
		free(o);
		csd_close(dev); /* must not hang */
		dev = NULL;
	}
	board_replug(b);

	/* F. the board stops answering in the middle of a kernel (the FPGA hangs): the call
	 * fails with CS_ERR_TIMEOUT within the link timeout, no hang */
	char turi[200];
	snprintf(turi, sizeof turi, "%s,timeout=300", uri);
	rc = csd_open(&dev, turi);
	CHECK(rc == 0, "open %s: %s", turi, csd_last_error(NULL));
	if (!rc) {
		atomic_store(&b->silent_at, (long)b->ctr.rx_bytes + 3000);
		t0 = now_s();
		rc = kref_run(dev, 0, out, &L);
		dt = now_s() - t0;
		CHECK(rc == CS_ERR_TIMEOUT && dt < 3.0, "silent board during a kernel -> %s after %.2f s",
		      cs_error_name(rc), dt);
		/* two limits race here, both right for a silent board: ACK timeouts in a row
		 * ("stopped acknowledging") and the link timeout ("no progress"); which one fires
		 * first depends on how fast this machine runs the emulated board */
		CHECK(strstr(csd_last_error(dev), "stopped") || strstr(csd_last_error(dev), "no progress"),
		      "message: %s", csd_last_error(dev));
		printf("board silent during a kernel: %s after %.3f s: %s\n", cs_error_name(rc), dt,
		       csd_last_error(dev));
		csd_close(dev);
		dev = NULL;
	}
	atomic_store(&b->silent, 0);
	board_replug(b);
	free(out);
	kref_layer_free(&L);
	csd_close(ref);
	CHECK(!b->model_fault, "the device model faulted");
}

/* ---- training on the emulated board ------------------------------------------------- */

/* cshost train with its stderr captured into buf; returns its exit code */
static int run_train(char *const *args, int n, char *buf, size_t cap)
{
	char path[] = "/tmp/umock_train_err.XXXXXX";
	int fd = mkstemp(path);
	buf[0] = 0;
	if (fd < 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	int saved = dup(2);
	dup2(fd, 2);
	char *argv[24];
	for (int i = 0; i < n && i < 23; i++)
		argv[i] = args[i];
	argv[n < 23 ? n : 23] = NULL;
	int rc = cmd_train(n, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t got = pread(fd, buf, cap - 1, 0);
	buf[got > 0 ? got : 0] = 0;
	close(fd);
	unlink(path);
	printf("%s", buf);
	return rc;
}

/*
 * `cshost train` with device.kind=usb on the emulated board: two steps and a checkpoint;
 * then --resume, unplugged in the middle of step 5 (after the step-4 checkpoint): the run
 * must stop at once with a message naming the error and the last checkpoint, and that
 * checkpoint must load; then, plugged in again, --resume finishes the run.
 */
static void train_test(void)
{
	struct board *b = &boards[0];
	char dir[] = "/tmp/umock_train.XXXXXX";
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	char cfg[96], outd[128], log[16384];
	snprintf(cfg, sizeof cfg, "%s/usb.yaml", dir);
	FILE *f = fopen(cfg, "w");
	if (!f) {
		CHECK(0, "%s: %s", cfg, strerror(errno));
		return;
	}
	fprintf(f, "run:      {name: usb, seed: 1234}\n"
		   "device:   {kind: usb, dense_on_host: auto}\n"
		   "model:    {n_layer: 2, n_head: 4, n_embd: 32, block_size: 32, vocab_size: 256}\n"
		   "data:     {path: /usr/share/games/fortunes, val_fraction: 0.05}\n"
		   "train:    {steps: 6, batch_size: 4, lr: 3.0e-3, warmup_steps: 2, ckpt_every: 2,\n"
		   "           keep_ckpts: 3, eval_every: 0, eval_batches: 1, log_every: 1,\n"
		   "           sample_tokens: 0}\n"
		   "sparsity: {algorithm: static, init_method: random, sparsity: 0.8}\n");
	fclose(f);
	snprintf(outd, sizeof outd, "run.out_dir=%s", dir);
	CHECK(board_flash_default(b) == 0, "flash");

	printf("-- cshost train (device.kind=usb): 2 steps\n");
	uint64_t rx0 = b->ctr.rx_bytes;
	double t0 = now_s();
	char *a1[] = { "train", cfg, outd, "train.steps=2", "--no-progress" };
	int rc = run_train(a1, 5, log, sizeof log);
	double t_two = now_s() - t0;
	uint64_t two = b->ctr.rx_bytes - rx0;
	CHECK(rc == 0, "train 2 steps on usb: exit %d", rc);
	printf("2 steps over the emulated board: %.2f s, %llu bytes to the board\n", t_two,
	       (unsigned long long)two);

	/* about 2.3 steps of traffic went into that run (2 steps, the final evaluation):
	 * 2.5 steps after the resume is the middle of step 5 */
	printf("-- cshost train --resume, unplugged during step 5\n");
	atomic_store(&b->unplug_after, (long)(b->ctr.rx_bytes + two * 107 / 100));
	t0 = now_s();
	char *a2[] = { "train", cfg, outd, "--resume", "--no-progress" };
	rc = run_train(a2, 5, log, sizeof log);
	double dt = now_s() - t0;
	CHECK(atomic_load(&b->unplugged), "the board was not unplugged (run too short?)");
	CHECK(rc == 1, "train with the board unplugged: exit %d", rc);
	CHECK(dt < 2.0 * t_two + 5.0, "train took %.1f s to stop", dt);
	char ck[160];
	snprintf(ck, sizeof ck, "%s/usb/ckpt-00000004.bin", dir);
	CHECK(strstr(log, "went away") && strstr(log, "stopped by an error in step 5") &&
		      strstr(log, ck) && strstr(log, "--resume"),
	      "the message must name the unplug, the step and the last checkpoint %s", ck);
	ck_file cf;
	char err[256];
	rc = ck_load(ck, &cf, err, sizeof err);
	CHECK(rc == 0, "the last checkpoint does not load: %s", err);
	if (!rc) {
		CHECK(cf.hdr.step == 4, "checkpoint step %lld", (long long)cf.hdr.step);
		ck_free(&cf);
	}

	printf("-- plugged in again: cshost train --resume\n");
	board_replug(b);
	rc = run_train(a2, 5, log, sizeof log);
	CHECK(rc == 0 && strstr(log, "resuming from") && strstr(log, "done, 6 steps"),
	      "resume after replug: exit %d", rc);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("could not remove %s\n", dir);
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
		for (int pe = 0; pe < boards[0].mm.P; pe++)
			for (int i = 0; i < fw.n_instr; i++)
				same &= boards[0].mm.pe[pe].imem[i] == fw.imem[i];
		CHECK(same && fw.n_instr > 0, "IMEM differs from the kernels image");
		csd_counters c;
		csd_get_counters(dev, &c);
		CHECK(c.link_bytes_out > 4u * (uint64_t)fw.n_instr, "load counted %llu bytes",
		      (unsigned long long)c.link_bytes_out);
		/* resident transfers round-trip over the link; vector programs are refused (the
		 * usb backend sends none) */
		float tin[5 * 3], tout[5 * 3];
		for (int i = 0; i < 15; i++)
			tin[i] = (float)i - 7.5f;
		csd_region rg = { CSD_MEM_B, 8, 4, 3 };
		CHECK(csd_write_tokens(dev, &rg, tin, 5) == 0 && csd_read_tokens(dev, tout, &rg, 5) == 0 &&
			      !memcmp(tin, tout, sizeof tin),
		      "resident transfer round trip: %s", csd_last_error(dev));
		const uint16_t pg[8] = { 8, 1, 0, 0, 200, 100, 0, 64 };
		CHECK(csd_run_program(dev, "vec_gelu", "gelu_bwd", 240, pg, 8) == CS_ERR_NOT_SUPPORTED,
		      "usb must refuse vector programs");
		csd_close(dev);
		dev = NULL;
	}

	/* 6. the board CLI: info, selftest passing, selftest catching a bad PE */
	setenv("CSD_USB_TIMEOUT_MS", "500", 1);
	printf("-- cshost board info\n");
	CHECK(run_cli("board", "info", NULL) == 0, "board info");
	printf("-- cshost board selftest (good board)\n");
	CHECK(run_cli("board", "selftest", NULL) == 0, "board selftest on a good board");
	boards[0].dead_pe = USB_BOARD_ROWS * USB_BOARD_COLS - 1; /* the last PE */
	boards[1].dead_pe = boards[0].dead_pe;
	printf("-- cshost board selftest (PE %d's task table loses its writes)\n", boards[0].dead_pe);
	CHECK(run_cli("board", "selftest", NULL) == 1, "board selftest must fail on a bad PE");
	boards[0].dead_pe = boards[1].dead_pe = -1;

	/* kernels end to end on the device model behind the emulated link */
	kernel_tests();

	/* 7. unknown serial: fails at once with a clear message */
	t0 = now_s();
	rc = csd_open(&dev, "usb:NOSUCH");
	CHECK(rc == CS_ERR_NOT_FOUND && now_s() - t0 < 1.0, "open unknown serial -> %s in %.2f s",
	      cs_error_name(rc), now_s() - t0);
	printf("open usb:NOSUCH: %s\n", csd_last_error(NULL));

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

	/* training on the one board left (cshost train opens "usb": the first board) */
	train_test();

	/* 8. unplug in the middle of a long transfer: CS_ERR_NO_DEVICE, no hang */
	rc = csd_open(&dev, "usb:CSB00001,noload");
	CHECK(rc == 0, "reopen: %s", csd_last_error(NULL));
	if (!rc) {
		atomic_store(&boards[0].unplug_after, (long)boards[0].ctr.rx_bytes + 20000);
		t0 = now_s();
		rc = echo(dev, 60000);
		double dt = now_s() - t0;
		CHECK(rc == CS_ERR_NO_DEVICE && dt < 2.0, "unplug mid-transfer -> %s after %.2f s",
		      cs_error_name(rc), dt);
		printf("unplugged after %llu bytes: %s\n", (unsigned long long)boards[0].ctr.rx_bytes,
		       csd_last_error(dev));
		t0 = now_s();
		rc = echo(dev, 1);
		CHECK(rc == CS_ERR_NO_DEVICE && now_s() - t0 < 0.1, "after unplug -> %s",
		      cs_error_name(rc));
		csd_close(dev); /* must not hang */
		dev = NULL;
		remove_board(&boards[0]);
	}

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
