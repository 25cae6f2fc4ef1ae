/*
 * usb.h - what the usb backend offers beyond csd.h: board discovery and the raw word link,
 * for `cshost board` and for tests. The backend itself is opened with csd_open(&dev, "usb")
 * or "usb:SERIAL"; options follow, comma separated (URI options win over the environment):
 *
 *   usb:[SERIAL][,vid=0x0403][,pid=0x6010][,iface=1][,baud=3000000][,timeout=1000]
 *       [,RxC][,awords=N][,bwords=N][,noload]
 *
 *   SERIAL     the FT2232H's USB serial number (cshost board list); default: the first board
 *   vid, pid   USB ids (env CSD_USB_VID, CSD_USB_PID; default 0403:6010, the FT2232H)
 *   iface      USB interface of the UART channel (env CSD_USB_IFACE; default 1 = channel B,
 *              the FPGA's UART on iCEBreaker-class boards; channel A is the flash SPI)
 *   baud       UART rate (env CSD_USB_BAUD; default 3000000, rtl/board/board_top.v Baud)
 *   timeout    ms without progress before a wait fails (env CSD_USB_TIMEOUT_MS; default 1000)
 *   RxC, awords, bwords   the mesh the bitstream was built with (default: what `make
 *              bitstream` builds, USB_BOARD_* below)
 *   noload     do not load the kernels image on open (board bring-up: link tests only)
 */
#ifndef CS_USB_H
#define CS_USB_H

#include <stddef.h>
#include <stdint.h>

#include "driver/csd.h"
#include "driver/frame.h"

/* The mesh `make bitstream` builds (verif/board.mk FPGA_ROWS, FPGA_COLS, FPGA_AWORDS,
 * FPGA_BWORDS): the usb backend assumes it unless the URI says otherwise. */
#define USB_BOARD_ROWS 1
#define USB_BOARD_COLS 1
#define USB_BOARD_AWORDS 32768
#define USB_BOARD_BWORDS 512

struct csd_usb_board {
	int bus, addr;
	uint16_t vid, pid, bcd_device;
	char serial[64];       /* "" when the device has none or could not be opened */
	char product[64];
	char manufacturer[64];
	char note[96];         /* why strings are missing ("no permission: see docs/board.md") */
};

/* Boards matching the VID:PID of opts (same syntax as the URI after "usb:", serial
 * ignored; NULL = defaults and environment). Fills up to max entries and returns how many
 * boards were found (>= 0), or a negative cs_error with a message in err. */
int csd_usb_list(struct csd_usb_board *boards, int max, const char *opts, char *err,
		 size_t errlen);

/* Send ncmd host port command words and read exactly nrsp response words (the link's
 * timeout applies). CS_ERR_NOT_SUPPORTED on a device that is not "usb". */
int csd_usb_xfer(csd_dev *dev, const uint32_t *cmd, size_t ncmd, uint32_t *rsp, size_t nrsp);

struct csd_usb_link {
	char serial[64];
	int iface;
	int baud, actual_baud;  /* asked for; what the FT2232H's divisor gives */
	uint16_t baud_value, baud_index;
	int maxpkt;             /* bulk packet size */
	/* host side */
	uint64_t frames_sent, retransmits, naks, ack_timeouts;
	uint64_t rx_frames, rx_crc_errors, rx_seq_errors, rx_trunc, line_errors;
	uint64_t bytes_out, bytes_in; /* on the UART, framing included */
	/* device side (a STAT query made by this call) */
	frm_stat dev;
};

/* Link state and counters; queries the device's STAT. */
int csd_usb_link_info(csd_dev *dev, struct csd_usb_link *li);

#endif /* CS_USB_H */
