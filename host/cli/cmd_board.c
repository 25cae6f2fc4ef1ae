/*
 * cmd_board.c - `cshost board`: bring-up of the FPGA board (docs/board.md).
 *   list                 every FT2232H board (VID:PID from --device/env) with its serial
 *   info                 open one board: link setup, mesh shape, link error counters
 *   flash FILE.bin       program the board's flash through iceprog (fpga-icestorm)
 *   selftest             link echo, the per-PE self-test program fw/selftest.s, link
 *                        throughput in MB/s
 * Exit codes: 0 ok, 1 failure, 2 usage error or no board found.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_num.h"
#include "driver/csd.h"
#include "driver/fw.h"
#include "driver/plan.h"
#include "driver/proto.h"
#include "driver/usb.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cshost board list [--device usb[:OPTS]]\n"
		"       cshost board info [--device usb[:SERIAL][,OPTS]]\n"
		"       cshost board flash FILE.bin [--device usb[:SERIAL]]\n"
		"       cshost board selftest [--device usb[:SERIAL][,OPTS]] [--seed N] [--kb N]\n"
		"\n"
		"OPTS (comma separated): vid=0x0403, pid=0x6010, iface=1 (channel B), baud=3000000,\n"
		"timeout=MS, RxC, awords=N, bwords=N; or env CSD_USB_VID, CSD_USB_PID, CSD_USB_IFACE,\n"
		"CSD_USB_BAUD, CSD_USB_TIMEOUT_MS. See docs/board.md.\n");
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "usb", "usb:SERIAL,opts" -> the part after "usb" without the colon */
static int usb_opts(const char *uri, const char **opts)
{
	if (strncmp(uri, "usb", 3) || (uri[3] && uri[3] != ':')) {
		fprintf(stderr, "cshost board: --device must be usb[:SERIAL][,OPTS], not '%s'\n", uri);
		return -1;
	}
	*opts = uri[3] ? uri + 4 : "";
	return 0;
}

static int open_board(csd_dev **dev, const char *uri)
{
	char u[300];
	snprintf(u, sizeof u, "%s%snoload", uri, strchr(uri, ':') ? "," : ":");
	int rc = csd_open(dev, u);
	if (rc) {
		fprintf(stderr, "cshost board: %s\n", csd_last_error(NULL));
		return rc == CS_ERR_NOT_FOUND ? 2 : 1;
	}
	return 0;
}

static int board_list(const char *uri)
{
	const char *opts;
	struct csd_usb_board b[32];
	char err[256] = "";
	if (usb_opts(uri, &opts))
		return 2;
	int n = csd_usb_list(b, 32, opts, err, sizeof err);
	if (n < 0) {
		fprintf(stderr, "cshost board list: %s\n", err);
		return 1;
	}
	if (n == 0) {
		fprintf(stderr, "no board found (no USB device with the board's VID:PID; check the "
				"cable, or pass --device usb:vid=..,pid=..)\n");
		return 2;
	}
	printf("%-16s %-9s %-9s %-24s %s\n", "SERIAL", "BUS:ADDR", "VID:PID", "PRODUCT", "NOTE");
	for (int i = 0; i < n && i < 32; i++) {
		char where[16], ids[16];
		snprintf(where, sizeof where, "%03d:%03d", b[i].bus, b[i].addr);
		snprintf(ids, sizeof ids, "%04x:%04x", b[i].vid, b[i].pid);
		printf("%-16s %-9s %-9s %-24s %s%s\n", b[i].serial[0] ? b[i].serial : "-", where,
		       ids, b[i].product[0] ? b[i].product : "-",
		       b[i].bcd_device == 0x0700 ? "FT2232H " : "", b[i].note);
	}
	if (n > 32)
		printf("(%d more)\n", n - 32);
	return 0;
}

static int board_info(const char *uri)
{
	csd_dev *dev;
	int rc = open_board(&dev, uri);
	if (rc)
		return rc;
	struct csd_usb_link li;
	csd_info info;
	csd_get_info(dev, &info);
	rc = csd_usb_link_info(dev, &li);
	if (rc) {
		fprintf(stderr, "cshost board info: %s\n", csd_last_error(dev));
		csd_close(dev);
		return 1;
	}
	printf("board %s: interface %d, %d baud (FT2232H divisor value 0x%04x index 0x%04x "
	       "gives %d), %d-byte packets\n",
	       li.serial, li.iface, li.baud, li.baud_value, li.baud_index, li.actual_baud,
	       li.maxpkt);
	printf("mesh (as configured on the host): %dx%d PEs, A %u bf16, B %u words, %.0f MHz\n",
	       info.rows, info.cols, info.a_words, info.b_words, info.clock_hz / 1e6);
	printf("device link: expects SEQ %u, next DATA SEQ %u, err_crc %u, err_trunc %u, "
	       "err_seq %u\n",
	       li.dev.rx_expect, li.dev.tx_seq, li.dev.err_crc, li.dev.err_trunc, li.dev.err_seq);
	printf("host link: %llu frames sent, %llu resent, %llu NAKs, %llu ACK timeouts, "
	       "%llu frames in, %llu bad\n",
	       (unsigned long long)li.frames_sent, (unsigned long long)li.retransmits,
	       (unsigned long long)li.naks, (unsigned long long)li.ack_timeouts,
	       (unsigned long long)li.rx_frames,
	       (unsigned long long)(li.rx_crc_errors + li.rx_seq_errors + li.rx_trunc));
	csd_close(dev);
	return 0;
}

static int board_flash(const char *file, const char *uri)
{
	const char *opts;
	struct stat st;
	if (usb_opts(uri, &opts))
		return 2;
	if (stat(file, &st)) {
		fprintf(stderr, "cshost board flash: %s: %s\n", file, strerror(errno));
		return 1;
	}
	/* an UP5K bitstream is 104,090 bytes; the flash holds 16 MB */
	if (st.st_size < 1000 || st.st_size > (16 << 20)) {
		fprintf(stderr, "cshost board flash: %s: %lld bytes is not an iCE40 bitstream "
				"(make bitstream gives build/fpga/*.bin)\n",
			file, (long long)st.st_size);
		return 1;
	}
	/* iceprog -d: i:VID:PID or s:VID:PID:SERIAL (iceprog(1)) */
	char serial[64] = "", devs[128];
	size_t k = strcspn(opts, ",");
	if (k && !strchr(opts, '=') && k < sizeof serial)
		memcpy(serial, opts, k), serial[k] = 0;
	const char *vid = getenv("CSD_USB_VID"), *pid = getenv("CSD_USB_PID");
	if (serial[0])
		snprintf(devs, sizeof devs, "s:%s:%s:%s", vid ? vid : "0x0403", pid ? pid : "0x6010",
			 serial);
	else
		snprintf(devs, sizeof devs, "i:%s:%s", vid ? vid : "0x0403", pid ? pid : "0x6010");
	printf("iceprog -d %s %s\n", devs, file);
	fflush(stdout);
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "cshost board flash: fork: %s\n", strerror(errno));
		return 1;
	}
	if (child == 0) {
		execlp("iceprog", "iceprog", "-d", devs, file, (char *)NULL);
		fprintf(stderr, "cshost board flash: cannot run iceprog: %s (install fpga-icestorm: "
				"make deps)\n",
			strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "cshost board flash: waitpid: %s\n", strerror(errno));
			return 1;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("flashed %s; the board reloads the FPGA from flash\n", file);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return 1;
	fprintf(stderr, "cshost board flash: iceprog failed (%s %d): is the board connected, "
			"and does the udev rule give you access (docs/board.md)?\n",
		WIFEXITED(status) ? "exit" : "signal",
		WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 1;
}

static int xfer(csd_dev *dev, const uint32_t *c, size_t nc, uint32_t *r, size_t nr,
		const char *what)
{
	int rc = csd_usb_xfer(dev, c, nc, r, nr);
	if (rc)
		fprintf(stderr, "cshost board selftest: %s: %s\n", what, csd_last_error(dev));
	return rc;
}

static uint64_t rng_state;
static uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 32);
}

/* ECHO n random words; 0 when they come back intact */
static int echo_check(csd_dev *dev, uint32_t *c, uint32_t *r, unsigned n)
{
	c[0] = proto_hdr_echo(n);
	for (unsigned i = 0; i < n; i++)
		c[1 + i] = rnd();
	if (xfer(dev, c, n + 1, r, n + 1, "echo"))
		return -1;
	if (r[0] != proto_resp_hdr(PROTO_ECHO, PROTO_ST_OK, n))
		return 1;
	for (unsigned i = 0; i < n; i++)
		if (r[1 + i] != c[1 + i])
			return 1;
	return 0;
}

/* Load fw/selftest.s, run it on every PE, check B[0] of each. */
static int pe_selftest(csd_dev *dev, unsigned seed, int *bad_pes)
{
	char err[256] = "";
	csd_info info;
	struct csd_fw fw;
	csd_get_info(dev, &info);
	if (csd_fw_get(&fw, "selftest", err, sizeof err)) {
		fprintf(stderr, "cshost board selftest: %s\n", err);
		return -1;
	}
	int pc = csd_fw_find(&fw, "st_ctl");
	if (pc < 0) {
		fprintf(stderr, "cshost board selftest: selftest image has no st_ctl entry\n");
		return -1;
	}
	/* image, queue map and routes as for the kernels, then the BCAST control task */
	uint32_t c[CSD_FW_IMEM + 8], r[8];
	size_t n = 0;
	c[n++] = proto_hdr_clear();
	c[n++] = proto_hdr_write(PROTO_T_IMEM, PROTO_PE_ALL, (unsigned)fw.n_instr);
	c[n++] = 0;
	for (int i = 0; i < fw.n_instr; i++)
		c[n++] = fw.imem[i];
	if (xfer(dev, c, n, NULL, 0, "load the selftest image"))
		return -1;
	struct plan_geom g = { .rows = info.rows, .cols = info.cols, .a_words = info.a_words,
			       .b_words = info.b_words, .hazard_cycles = 4, .ctl_cycles = 6,
			       .major_cycles = 6 };
	uint32_t mask[16];
	for (int rr = 0; rr < info.rows; rr++)
		for (int cc = 0; cc < info.cols; cc++) {
			plan_routes(&g, rr, cc, mask);
			n = 0;
			c[n++] = proto_hdr_write(PROTO_T_ROUTE, (unsigned)(rr * info.cols + cc), 16);
			c[n++] = 0;
			memcpy(c + n, mask, sizeof mask);
			n += 16;
			if (xfer(dev, c, n, NULL, 0, "routes"))
				return -1;
		}
	n = 0;
	/* B[0] holds the verdict: clear it, or a PE that does not run would show the pass of
	 * an earlier run */
	c[n++] = proto_hdr_write(PROTO_T_B, PROTO_PE_ALL, 1);
	c[n++] = 0;
	c[n++] = 0;
	c[n++] = proto_hdr_write(PROTO_T_TASK, PROTO_PE_ALL, 1);
	c[n++] = 16 | PROTO_C_BCAST; /* tid {ctrl, color} */
	c[n++] = 1u << 9 | (uint32_t)pc;
	/* the config chain and the fabric are not ordered with each other, and the host port
	 * checks the route of (0,0) when it decodes INJECT: let the writes land first */
	c[n++] = proto_hdr_sync();
	c[n++] = 1000000; /* cycles */
	c[n++] = proto_hdr_inject(PROTO_C_BCAST, 1, 1);
	c[n++] = proto_ctl(PROTO_CTL_SELFTEST, seed);
	c[n++] = proto_hdr_sync();
	c[n++] = 1000000;
	/* SYNC answers one header word whose n is the host port error count (section 6) */
	if (xfer(dev, c, n, r, 2, "run"))
		return -1;
	for (int k = 0; k < 2; k++)
		if (r[k] != proto_resp_hdr(PROTO_SYNC, PROTO_ST_OK, 0)) {
			fprintf(stderr,
				"cshost board selftest: SYNC answered 0x%08x (status %u, %u host port "
				"errors)\n",
				r[k], proto_resp_status(r[k]), proto_resp_n(r[k]));
			return -1;
		}
	*bad_pes = 0;
	for (int pe = 0; pe < info.pes; pe++) {
		c[0] = proto_hdr_read(PROTO_T_B, (unsigned)pe, 1);
		c[1] = 0;
		if (xfer(dev, c, 2, r, 2, "read B[0]"))
			return -1;
		int ok = r[0] == proto_resp_hdr(PROTO_READ, PROTO_ST_OK, 1) && r[1] >> 16 == 0x5e1f &&
			 (r[1] & 0xffff) == 0;
		printf("  PE %d (%d,%d): %s", pe, pe / info.cols, pe % info.cols,
		       ok ? "pass" : "FAIL");
		if (!ok) {
			if (r[1] >> 16 != 0x5e1f)
				printf(" (did not run: B[0] = 0x%08x)", r[1]);
			else
				printf(" (%u of 16 B words read back wrong)", r[1] & 0xffff);
			++*bad_pes;
		}
		printf("\n");
	}
	return 0;
}

static int board_selftest(const char *uri, unsigned seed, unsigned kb)
{
	csd_dev *dev;
	int rc = open_board(&dev, uri), fails = 0;
	if (rc)
		return rc;
	rng_state = seed;
	size_t maxw = (size_t)kb * 256 + 1;
	if (maxw < 1024)
		maxw = 1024;
	uint32_t *c = malloc(maxw * 4), *r = malloc(maxw * 4);
	if (!c || !r) {
		fprintf(stderr, "cshost board selftest: out of memory\n");
		rc = 1;
		goto out;
	}

	/* 1. link echo: short, one frame, several frames */
	static const unsigned sizes[] = { 1, 255, 1000 };
	int echo_ok = 1;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		int e = echo_check(dev, c, r, sizes[i]);
		if (e < 0) {
			rc = 1;
			goto out;
		}
		echo_ok &= e == 0;
	}
	printf("link echo: %s\n", echo_ok ? "pass" : "FAIL (words came back wrong)");
	fails += !echo_ok;

	/* 2. per-PE self-test program */
	int bad = 0;
	printf("per-PE self-test (fw/selftest.s, seed %u):\n", seed & 0xffff);
	if (pe_selftest(dev, seed & 0xffff, &bad)) {
		rc = 1;
		goto out;
	}
	fails += bad > 0;

	/* 3. throughput: ECHO blocks of up to 65535 words, payload both ways */
	uint64_t words = (uint64_t)kb * 256, done = 0;
	double t0 = now_s();
	while (done < words) {
		unsigned n = words - done > 65535 ? 65535 : (unsigned)(words - done);
		c[0] = proto_hdr_echo(n);
		for (unsigned i = 0; i < n; i++)
			c[1 + i] = (uint32_t)(done + i) * 2654435761u;
		if (xfer(dev, c, n + 1, r, n + 1, "throughput echo")) {
			rc = 1;
			goto out;
		}
		if (memcmp(c + 1, r + 1, (size_t)n * 4)) {
			printf("throughput echo: FAIL (data came back wrong)\n");
			fails++;
			break;
		}
		done += n;
	}
	double dt = now_s() - t0;
	struct csd_usb_link li;
	if (csd_usb_link_info(dev, &li) == 0) {
		double line = li.actual_baud / 10.0 / 1e6;
		printf("throughput: %.1f kB each way in %.3f s: %.3f MB/s per direction "
		       "(line rate %.3f MB/s at %d baud 8N1)\n",
		       (double)done * 4 / 1e3, dt, dt > 0 ? (double)done * 4 / dt / 1e6 : 0.0, line,
		       li.actual_baud);
		printf("link errors: device err_crc %u err_trunc %u err_seq %u; host resent %llu "
		       "frames\n",
		       li.dev.err_crc, li.dev.err_trunc, li.dev.err_seq,
		       (unsigned long long)li.retransmits);
	}
	printf("selftest: %s\n", fails ? "FAIL" : "pass");
	rc = fails ? 1 : 0;
out:
	free(c);
	free(r);
	csd_close(dev);
	return rc;
}

int cmd_board(int argc, char **argv)
{
	const char *uri = "usb", *sub = argc > 1 ? argv[1] : NULL, *file = NULL;
	unsigned seed = 1, kb = 256;
	if (!sub || !strcmp(sub, "--help") || !strcmp(sub, "-h")) {
		usage(sub ? stdout : stderr);
		return sub ? 0 : 2;
	}
	for (int i = 2; i < argc; i++) {
		if ((!strcmp(argv[i], "--device") || !strcmp(argv[i], "-d")) && i + 1 < argc) {
			uri = argv[++i];
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			long long x;
			if (cli_int("board", "--seed", argv[++i], 0, 0xffffffffLL, &x))
				return 2;
			seed = (unsigned)x;
		} else if (!strcmp(argv[i], "--kb") && i + 1 < argc) {
			long long x;
			if (cli_int("board", "--kb", argv[++i], 1, 65536, &x))
				return 2;
			kb = (unsigned)x;
		} else if (!strcmp(sub, "flash") && !file && argv[i][0] != '-') {
			file = argv[i];
		} else {
			fprintf(stderr, "cshost board: unexpected argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (!strcmp(sub, "list"))
		return board_list(uri);
	if (!strcmp(sub, "info"))
		return board_info(uri);
	if (!strcmp(sub, "selftest"))
		return board_selftest(uri, seed, kb);
	if (!strcmp(sub, "flash")) {
		if (!file) {
			fprintf(stderr, "cshost board flash: which FILE.bin?\n");
			return 2;
		}
		return board_flash(file, uri);
	}
	fprintf(stderr, "cshost board: unknown subcommand '%s'\n", sub);
	usage(stderr);
	return 2;
}
