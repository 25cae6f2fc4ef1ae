// tb_board_link.cpp - the board top's host link, end to end, with the host's own framing
// code (host/driver/frame.c) on a bit-level UART model.
//
// The design under test is board_top with the host port replaced by the echo test double
// (BOARD_ECHO_DOUBLE): every ECHO command comes back as a header and its words, so the
// response stream shows whether each command word was delivered exactly once and in order.
// The same harness runs on the RTL and on the yosys iCE40 netlist (tb_board_link_gl), and,
// built with TB_REAL_PORT, on board_top with the real 2x2 mesh (tb_board_mesh): then phase 4
// writes PE SRAM A through the link and reads every PE back instead of the double's RUN
// checksum and READ pattern.
//
// Phases:
//   1. STAT: the link state after reset (no errors, SEQs 0).
//   2. ECHO traffic with one frame corrupted on the wire (one payload bit): the device must
//      NAK it (err_crc 1) and the host resend it; one frame truncated followed by silence: the
//      device must drop it (err_trunc 1) and the host recover by NAK/timeout.
//   3. More ECHO traffic: the link keeps working; STAT counters unchanged.
//   4. Throughput: a long ECHO stream; payload bytes per second host -> device at the baud
//      rate, printed.
// Options: --seed=N, --words=N (phase 4 payload words), --ppm=N (host UART clock error),
//          --random=P (regress: corrupt P per mille of host frames at random), +trace.
// The exit status is the verdict; RESULT line for the test runner.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "Vboard_top.h"
#include "verilated.h"
#ifdef TB_TRACE
#include "verilated_fst_c.h"
#endif

extern "C" {
#include "common/cs_error.h" // C linkage (frame.h includes it without)
}
#include "driver/frame.h"
#ifdef TB_REAL_PORT
extern "C" {
#include "common/numerics.h"
#include "driver/csd.h"
#include "driver/fw.h"
#include "driver/plan.h"
#include "driver/proto.h"
}
#endif

#ifndef TB_CLK_HZ
#define TB_CLK_HZ 21000000
#endif
#ifndef TB_BAUD
#define TB_BAUD 3000000
#endif
#ifdef TB_REAL_PORT
// the mesh the board top was built with (board_top parameters) and the kernel's layer
#ifndef TB_ROWS
#define TB_ROWS 2
#endif
#ifndef TB_COLS
#define TB_COLS 2
#endif
#ifndef TB_AWORDS
#define TB_AWORDS 1024
#endif
#ifndef TB_BWORDS
#define TB_BWORDS 256
#endif
#ifndef TB_FWD_T
#define TB_FWD_T 8
#endif
#ifndef TB_FWD_IN
#define TB_FWD_IN 24
#endif
#ifndef TB_FWD_OUT
#define TB_FWD_OUT 20
#endif
#endif

static const double kClkPs = 1e12 / TB_CLK_HZ;
static const char *gpt_json = nullptr; // --gpt-step --json=PATH: the step's numbers
static const uint64_t kClksPerBit = TB_CLK_HZ / TB_BAUD;

static uint64_t rng_state;
static uint64_t rng_next()
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int failures = 0, checks = 0;
#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		checks++;                                                                  \
		if (!(cond)) {                                                             \
			failures++;                                                        \
			std::printf("FAIL cycle %" PRIu64 ": %s: ", cycle, #cond);          \
			std::printf(__VA_ARGS__);                                          \
			std::printf("\n");                                                 \
		}                                                                          \
	} while (0)

static uint64_t cycle = 0;

// One item on the host's wire: a byte, or a stretch of idle line (bit times).
struct WireItem {
	int byte;          // -1: idle gap
	uint64_t gap_bits; // for a gap
	int kind = 0;      // a byte: 1 with its stop bit low (framing error); a gap: 1 with a
	                   // glitch (low for its first quarter bit)
};

// Host-side UART, bit level, with its own bit period (baud error in ppm).
struct HostUart {
	double bit_ps;
	// transmitter
	std::deque<WireItem> q;
	bool tx_active = false;
	double tx_start = 0;
	int tx_len_bits = 0;
	uint16_t tx_frame = 0x3ff;
	bool tx_glitch = false;
	// receiver
	bool rx_active = false;
	double rx_start = 0;
	int rx_next = 0; // next sample index: 0 start, 1..8 data, 9 stop
	uint8_t rx_byte = 0;
	int rx_prev = 1;
	uint64_t framing_errors = 0;

	explicit HostUart(double ppm) { bit_ps = 1e12 / TB_BAUD * (1.0 + ppm * 1e-6); }

	// line level driven towards the device at time t
	int tx_level(double t)
	{
		for (;;) {
			if (!tx_active) {
				if (q.empty())
					return 1;
				WireItem it = q.front();
				q.pop_front();
				tx_active = true;
				tx_start = std::max(tx_start, t);
				tx_glitch = false;
				if (it.byte < 0) {
					tx_frame = 0xffff;
					tx_len_bits = (int)it.gap_bits;
					tx_glitch = it.kind == 1;
				} else {
					tx_frame = (uint16_t)((it.kind == 1 ? 0 : 0x200) | (it.byte << 1));
					tx_len_bits = 10;
				}
			}
			if (tx_glitch && t - tx_start < 0.25 * bit_ps)
				return 0;
			int idx = (int)((t - tx_start) / bit_ps);
			if (idx < tx_len_bits)
				return idx < 16 ? (tx_frame >> idx) & 1 : 1;
			tx_start += tx_len_bits * bit_ps; // back to back
			tx_active = false;
		}
	}
	bool tx_busy() const { return tx_active || !q.empty(); }

	// sample the device's line at time t; returns a byte or -1
	int rx_sample(int level, double t)
	{
		int out = -1;
		if (!rx_active) {
			if (rx_prev == 1 && level == 0) {
				rx_active = true;
				rx_start = t;
				rx_next = 0;
				rx_byte = 0;
			}
		} else {
			double when = rx_start + (rx_next + 0.5) * bit_ps;
			if (t >= when) {
				if (rx_next == 0) {
					if (level != 0)
						rx_active = false; // glitch
				} else if (rx_next <= 8) {
					rx_byte |= (uint8_t)(level << (rx_next - 1));
				} else {
					if (level == 1)
						out = rx_byte;
					else
						framing_errors++;
					rx_active = false;
				}
				rx_next++;
			}
		}
		rx_prev = level;
		return out;
	}
};

struct Bench {
	VerilatedContext *ctx;
	Vboard_top *top;
#ifdef TB_TRACE
	VerilatedFstC *tfp = nullptr;
#endif
	HostUart uart;
	frm_tx tx;
	frm_dec dec;
	std::vector<uint32_t> responses; // device -> host DATA payloads, in order
	std::deque<uint32_t> pending;    // command words not yet in a frame
	std::vector<frm_stat> stats;
	uint64_t link_errors = 0;
	uint64_t frames_out = 0;       // frm_tx_next results written to the wire
	// impairments of the next frames handed to the wire (by frames_out index)
	uint64_t corrupt_at = UINT64_MAX, truncate_at = UINT64_MAX;
	// line impairments that a correct receiver ignores: stray bytes before a frame (no SOF
	// among them), an SOF byte with a low stop bit before one, a glitch inside one; and an
	// ACK from the device lost (by ACK index: the host resends, the device must ACK the
	// duplicate again without executing it twice)
	uint64_t stray_at = UINT64_MAX, badstop_at = UINT64_MAX, glitch_at = UINT64_MAX;
	uint64_t acks_in = 0, drop_ack_at = UINT64_MAX;
	int random_per_mille = 0;
	uint64_t injected = 0;
	// FNV-1a over (cycle, byte) of everything the device sent: equal for RTL and netlist
	// iff they behave identically cycle for cycle on the wire
	uint64_t transcript = 0xcbf29ce484222325ull;
	uint64_t uart_bytes_out = 0, uart_bytes_in = 0; // on the wire, framing included

	Bench(VerilatedContext *c, double ppm) : ctx(c), uart(ppm)
	{
		top = new Vboard_top{ctx};
		frm_tx_init(&tx, 3 * FRM_MAX_BYTES * 10 * kClksPerBit, 20, 0);
		frm_dec_init(&dec, 1024 * kClksPerBit, 0);
	}
	~Bench()
	{
#ifdef TB_TRACE
		if (tfp)
			tfp->close();
#endif
		top->final();
		delete top;
	}

	void tick()
	{
		double t = cycle * kClkPs;
		top->uart_rx_i = uart.tx_level(t);
		top->clk_12m_i = 0;
		top->eval();
#ifdef TB_TRACE
		if (tfp)
			tfp->dump(ctx->time());
#endif
		ctx->timeInc(1);
		top->clk_12m_i = 1;
		top->eval();
#ifdef TB_TRACE
		if (tfp)
			tfp->dump(ctx->time());
#endif
		ctx->timeInc(1);
		int b = uart.rx_sample(top->uart_tx_o, t);
		if (b >= 0)
			on_byte((uint8_t)b);
		else if (frm_dec_poll(&dec, cycle) < 0)
			link_errors++;
		cycle++;
	}

	void on_byte(uint8_t b)
	{
		uint8_t rec[9];
		std::memcpy(rec, &cycle, 8);
		rec[8] = b;
		for (uint8_t x : rec)
			transcript = (transcript ^ x) * 0x100000001b3ull;
		uart_bytes_in++;
		int r = frm_dec_byte(&dec, b, cycle);
		if (r < 0) {
			link_errors++;
			std::printf("host: device -> host frame error at cycle %" PRIu64 "\n", cycle);
			return;
		}
		if (r != FRM_GOT_FRAME)
			return;
		const frm_frame &f = dec.frame;
		if (f.type == FRM_ACK && acks_in++ == drop_ack_at) {
			injected++; // lost on the way
		} else if (f.type == FRM_ACK || f.type == FRM_NAK) {
			frm_tx_on_frame(&tx, &f, cycle);
		} else if (f.type == FRM_DATA) {
			responses.insert(responses.end(), f.words, f.words + f.n);
		} else if (f.type == FRM_STAT) {
			frm_stat st;
			if (frm_stat_parse(&st, &f) == CS_OK)
				stats.push_back(st);
			else
				link_errors++;
		}
	}

	void reset()
	{
		top->btn_ni = 0;
		top->uart_rx_i = 1;
		for (int i = 0; i < 40; i++)
			tick();
		top->btn_ni = 1;
		for (int i = 0; i < 40; i++)
			tick();
	}

	// Host side of the driver loop: pack pending words into frames, hand frames to the UART
	// when its queue runs low (so the ACK timer starts near the wire time).
	int pump()
	{
		while (frm_tx_space(&tx) > 0 && !pending.empty()) {
			uint32_t w[FRM_MAX_WORDS];
			int n = 0;
			while (n < FRM_MAX_WORDS && !pending.empty()) {
				w[n++] = pending.front();
				pending.pop_front();
			}
			if (frm_tx_push(&tx, w, n) < 0)
				return -1;
		}
		if (uart.q.size() < 16) {
			const uint8_t *bytes;
			int len = frm_tx_next(&tx, &bytes, cycle);
			if (len < 0)
				return len;
			if (len > 0)
				put_frame(bytes, len);
		}
		return 0;
	}

	void put_frame(const uint8_t *bytes, int len)
	{
		std::vector<uint8_t> f(bytes, bytes + len);
		uint64_t k = frames_out++;
		bool gap = false;
		if (k == corrupt_at) {
			f[FRM_OVERHEAD - 2 + 5] ^= 0x10; // a payload bit
			injected++;
		} else if (k == truncate_at) {
			f.resize(f.size() / 2);
			gap = true;
			injected++;
		} else if (random_per_mille && (int)(rng_next() % 1000) < random_per_mille) {
			f[rng_next() % f.size()] ^= (uint8_t)(1u << (rng_next() % 8));
			injected++;
		}
		if (k == stray_at) {
			for (uint8_t b : {0x01, 0x00, 0x05, 0xa5, 0x33, 0x7d})
				uart.q.push_back({b, 0});
			uart.q.push_back({-1, 2});
			injected++;
		}
		if (k == badstop_at) {
			// then idle past the byte a receiver may start on the low stop bit
			uart.q.push_back({0x7e, 0, 1});
			uart.q.push_back({-1, 14});
			injected++;
		}
		for (size_t i = 0; i < f.size(); i++) {
			if (k == glitch_at && i == FRM_OVERHEAD - 2 + 4) {
				uart.q.push_back({-1, 2, 1});
				injected++;
			}
			uart.q.push_back({f[i], 0});
		}
		uart_bytes_out += f.size();
		if (gap)
			uart.q.push_back({-1, 1100}); // silence past the byte timeout
	}

	void send_stat()
	{
		uint8_t b[FRM_OVERHEAD];
		int len = frm_encode(b, sizeof b, FRM_STAT, 0, nullptr, 0);
		for (int i = 0; i < len; i++)
			uart.q.push_back({b[i], 0});
	}

	// Run until every queued word is acknowledged and `want` response words arrived.
	bool run_until_done(size_t want, uint64_t max_cycles)
	{
		uint64_t end = cycle + max_cycles;
		while (cycle < end) {
			if (pump() < 0) {
				std::printf("host: frm_tx gave up (timeouts) at cycle %" PRIu64 "\n", cycle);
				return false;
			}
			tick();
			if (pending.empty() && frm_tx_pending(&tx) == 0 && !uart.tx_busy() &&
			    responses.size() >= want)
				return true;
		}
		std::printf("host: timeout: pending %zu, window %d, responses %zu of %zu\n",
			    pending.size(), frm_tx_pending(&tx), responses.size(), want);
		return false;
	}

	bool query_stat(frm_stat *out, uint64_t max_cycles)
	{
		size_t before = stats.size();
		send_stat();
		for (uint64_t i = 0; i < max_cycles && stats.size() == before; i++)
			tick();
		if (stats.size() == before)
			return false;
		*out = stats.back();
		return true;
	}
};

// ECHO commands of random lengths; appends the commands to `cmd` and the expected response
// to `exp`.
static void make_echo(std::deque<uint32_t> &cmd, std::vector<uint32_t> &exp, size_t words,
		      int max_len)
{
	size_t done = 0;
	while (done < words) {
		uint32_t n = 1 + (uint32_t)(rng_next() % (uint64_t)max_len);
		if (n > words - done)
			n = (uint32_t)(words - done);
		cmd.push_back(0x10000000u | n);
		exp.push_back(0xA1000000u | n);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t w = (uint32_t)rng_next();
			cmd.push_back(w);
			exp.push_back(w);
		}
		if (rng_next() % 4 == 0)
			cmd.push_back(0); // a NOP: consumed, no response
		done += n;
	}
}

static bool compare(const std::vector<uint32_t> &got, const std::vector<uint32_t> &exp,
		    const char *what)
{
	size_t n = std::min(got.size(), exp.size());
	for (size_t i = 0; i < n; i++) {
		if (got[i] != exp[i]) {
			std::printf("FAIL %s: response word %zu: expected 0x%08x, got 0x%08x\n", what,
				    i, exp[i], got[i]);
			return false;
		}
	}
	if (got.size() != exp.size()) {
		std::printf("FAIL %s: %zu response words, expected %zu\n", what, got.size(),
			    exp.size());
		return false;
	}
	return true;
}

#ifdef TB_REAL_PORT
// The driver's planner (host/driver/plan.c) drives the board through this link exactly as
// the usb backend does: command words go into frames, responses come out of frames.
struct KernelLink {
	Bench *b;
	size_t rd;           // response words already handed to the planner
	uint64_t max_cycles; // per recv
};
static int klink_send(void *ctx, const uint32_t *w, size_t n)
{
	KernelLink *k = (KernelLink *)ctx;
	k->b->pending.insert(k->b->pending.end(), w, w + n);
	return CS_OK;
}
static int klink_recv(void *ctx, uint32_t *w, size_t n)
{
	KernelLink *k = (KernelLink *)ctx;
	Bench &b = *k->b;
	uint64_t end = cycle + k->max_cycles;
	while (b.responses.size() < k->rd + n) {
		if (cycle >= end) {
			std::printf("kernel link: timeout waiting for %zu response words\n", n);
			return CS_ERR_TIMEOUT;
		}
		if (b.pump() < 0)
			return CS_ERR_IO;
		b.tick();
	}
	std::copy(b.responses.begin() + (long)k->rd, b.responses.begin() + (long)(k->rd + n), w);
	k->rd += n;
	return CS_OK;
}

// Kernels through the link, driven by the driver's planner, each compared bit for bit with
// the C model (the cpu backend, host/driver/backend_cpu.c) on the same data.
struct KernelRun {
	plan_geom g;
	csd_fw fw;
	KernelLink kl;
	plan_link link;
	plan_stats st;
	csd_dev *ref;
};

// plan_load (firmware, routes) and the cpu reference of the board's mesh
static bool kernels_open(Bench &b, KernelRun &k, uint64_t recv_cycles)
{
	char err[256] = "";
	k.g = { TB_ROWS, TB_COLS, TB_AWORDS, TB_BWORDS, 4, 4 };
	k.kl = { &b, b.responses.size(), recv_cycles };
	k.link = { &k.kl, klink_send, klink_recv, (uint32_t)recv_cycles };
	k.st = {};
	k.ref = nullptr;
	int rc = csd_fw_get(&k.fw, "kernels", err, sizeof err);
	CHECK(rc == CS_OK, "firmware: %s", err);
	if (rc)
		return false;
	rc = plan_load(&k.g, &k.fw, &k.link, &k.st, err, sizeof err);
	CHECK(rc == CS_OK, "plan_load: %s (%s)", err, cs_strerror(rc));
	if (rc)
		return false;
	char uri[96];
	std::snprintf(uri, sizeof uri, "cpu:%dx%d,awords=%d,bwords=%d", TB_ROWS, TB_COLS,
		      TB_AWORDS, TB_BWORDS);
	rc = csd_open(&k.ref, uri);
	CHECK(rc == CS_OK, "csd_open(%s): %s", uri, csd_last_error(nullptr));
	return rc == CS_OK;
}

// One kernel call on a random layer n_in -> n_out with T tokens and the given density: the
// board's result against the cpu backend's. Returns the number of differing outputs, or -1
// when a call failed. nnz_out: the layer's nonzeros.
static long run_kernel(KernelRun &k, enum plan_kernel kern, int T, int n_in, int n_out,
		       double density, size_t *nnz_out, size_t *nonzero_out)
{
	static const char *const name[] = { "forward", "backward", "wgrad" };
	char err[256] = "";
	std::vector<float> w((size_t)n_out * n_in, 0.0f);
	for (auto &v : w)
		if ((double)(rng_next() % 1000) < density * 1000.0)
			v = (float)((double)(int64_t)(rng_next() % 2001 - 1000) / 256.0);
	auto act = [](size_t n) {
		std::vector<uint16_t> a(n);
		for (auto &v : a)
			v = nm_bf16_from_f32((float)((double)(int64_t)(rng_next() % 2001 - 1000) / 128.0));
		return a;
	};
	std::vector<uint16_t> x = act((size_t)T * n_in), dy = act((size_t)T * n_out);
	csd_sparse sp = {};
	int rc = csd_sparse_from_dense(&sp, w.data(), nullptr, n_out, n_in);
	CHECK(rc == CS_OK, "csd_sparse_from_dense: %s", cs_strerror(rc));
	if (rc)
		return -1;
	size_t n_res = kern == PLAN_FWD ? (size_t)T * n_out
		       : kern == PLAN_BWD ? (size_t)T * n_in : (size_t)sp.nnz;
	std::vector<float> y(n_res, -1.0f), yref(n_res, -2.0f);

	struct plan pl;
	rc = plan_make(&pl, &k.g, kern, T, n_out, n_in, err, sizeof err);
	CHECK(rc == CS_OK, "plan_make %s: %s", name[kern], err);
	if (rc == CS_OK) {
		struct plan_io io = {};
		io.w = &sp;
		io.act = kern == PLAN_BWD ? dy.data() : x.data();
		io.bact = kern == PLAN_WGRAD ? dy.data() : nullptr;
		io.out = y.data();
		rc = plan_exec(&pl, &k.fw, &io, &k.link, &k.st, err, sizeof err);
		CHECK(rc == CS_OK, "plan_exec %s: %s (%s)", name[kern], err, cs_strerror(rc));
	}
	int rr = kern == PLAN_FWD ? csd_forward(k.ref, yref.data(), x.data(), &sp, T)
		 : kern == PLAN_BWD ? csd_backward(k.ref, yref.data(), dy.data(), &sp, T)
				    : csd_wgrad(k.ref, yref.data(), dy.data(), x.data(), &sp, T);
	CHECK(rr == CS_OK, "cpu %s: %s", name[kern], csd_last_error(k.ref));
	long bad = -1;
	if (rc == CS_OK && rr == CS_OK) {
		bad = 0;
		size_t nonzero = 0;
		for (size_t i = 0; i < y.size(); i++) {
			uint32_t a, e;
			std::memcpy(&a, &y[i], 4);
			std::memcpy(&e, &yref[i], 4);
			nonzero += yref[i] != 0.0f;
			if (a != e && bad++ == 0)
				std::printf("FAIL %s: out[%zu]: expected 0x%08x, got 0x%08x\n",
					    name[kern], i, e, a);
		}
		CHECK(bad == 0, "%s: %ld of %zu outputs differ from the C model", name[kern], bad,
		      y.size());
		if (nonzero_out)
			*nonzero_out = nonzero;
	}
	if (nnz_out)
		*nnz_out = (size_t)sp.nnz;
	csd_sparse_free(&sp);
	return bad;
}

// PE 0's counters: 0 MAC-busy cycles (one per MAC issued), 1 task-busy cycles. Their ratio
// is the PE's cycles per MAC, vector-loop and task overheads included (about 1 for the
// full-rate pe's AXPY; pe_lite's multi-cycle FMAC is slower).
static bool read_pe_counters(KernelRun &k, uint32_t *mac, uint32_t *busy)
{
	uint32_t ctr[3] = {};
	const uint32_t rd[2] = { proto_hdr_read(8, 0, 2), 0 };
	int lr = klink_send(&k.kl, rd, 2);
	if (lr == CS_OK)
		lr = klink_recv(&k.kl, ctr, 3);
	CHECK(lr == CS_OK && ctr[0] == proto_resp_hdr(PROTO_READ, 0, 2),
	      "PE counters: %s, header 0x%08x", cs_strerror(lr), ctr[0]);
	*mac = ctr[1];
	*busy = ctr[2];
	return lr == CS_OK;
}

// The forward kernel y[T, n_out] = x[T, n_in] W^T on a small sparse layer.
static void run_forward(Bench &b, int T, int n_in, int n_out, double density,
			uint64_t recv_cycles)
{
	KernelRun k;
	uint64_t c0 = cycle;
	if (!kernels_open(b, k, recv_cycles)) {
		if (k.ref)
			csd_close(k.ref);
		return;
	}
	size_t nnz = 0, nonzero = 0;
	long bad = run_kernel(k, PLAN_FWD, T, n_in, n_out, density, &nnz, &nonzero);
	uint64_t c2 = cycle;
	uint32_t mac = 0, busy = 0;
	if (bad >= 0 && read_pe_counters(k, &mac, &busy))
		CHECK(mac > 0 && busy >= mac, "PE counters: %u MAC-busy, %u task-busy", mac, busy);
	if (bad >= 0) {
		size_t outs = (size_t)T * n_out;
		CHECK(nonzero > outs / 2, "the layer's outputs are mostly zero (%zu of %zu)",
		      nonzero, outs);
		std::printf("forward: T %d, %d -> %d, %zu weights (%.0f %% dense) on %dx%d PEs: "
			    "%zu outputs (%zu nonzero) bit-exact with the C model; firmware load, "
			    "upload, stream and read back %" PRIu64 " cycles (%.4f s at %.0f MHz, "
			    "link-bound)\n",
			    T, n_in, n_out, nnz, 100.0 * density, TB_ROWS, TB_COLS, outs - bad,
			    nonzero, c2 - c0, (double)(c2 - c0) / TB_CLK_HZ, TB_CLK_HZ / 1e6);
		std::printf("forward: PE 0 issued %u MACs in %u task-busy cycles (%.2f cycles per "
			    "MAC)\n",
			    mac, busy, mac ? (double)busy / mac : 0.0);
	}
	csd_close(k.ref);
}

// --gpt-step: the device part of one training step of a GPT with the given shape (the
// sparse projections of configs/tiny.yaml by default: 2 layers, n_embd 32, 128 tokens, 80 %
// sparse): per layer qkv (E -> 3E), attn.proj (E -> E), mlp.fc (E -> 4E), mlp.proj
// (4E -> E), each forward, backward and wgrad, as the training loop calls them. Every call
// is checked bit for bit against the cpu backend; the simulated time is what the board
// (UART, framing, PEs) takes for the step's device work.
static void run_gpt_step(Bench &b, int layers, int E, int T, double density,
			 uint64_t recv_cycles)
{
	KernelRun k;
	if (!kernels_open(b, k, recv_cycles)) {
		if (k.ref)
			csd_close(k.ref);
		return;
	}
	const int shape[4][2] = { { E, 3 * E }, { E, E }, { E, 4 * E }, { 4 * E, E } };
	uint64_t c0 = cycle, bytes_out0 = b.uart_bytes_out, bytes_in0 = b.uart_bytes_in;
	plan_stats st0 = k.st;
	size_t nnz_total = 0;
	int calls = 0;
	long bad = 0;
	uint64_t mac = 0, busy = 0; // PE 0's, summed over the calls (each call CLEARs them)
	for (int l = 0; l < layers && bad == 0; l++)
		for (int p = 0; p < 4 && bad == 0; p++)
			for (int kern = 0; kern < 3 && bad == 0; kern++) {
				size_t nnz = 0;
				long r = run_kernel(k, (enum plan_kernel)kern, T, shape[p][0],
						    shape[p][1], density, &nnz, nullptr);
				bad = r < 0 ? 1 : r;
				if (getenv("TB_PERCALL")) // bytes and cycles after each call
					std::printf("call l%d p%d k%d: out %llu in %llu cycles %llu\n", l, p, kern,
						    (unsigned long long)(b.uart_bytes_out - bytes_out0),
						    (unsigned long long)(b.uart_bytes_in - bytes_in0),
						    (unsigned long long)(cycle - c0));
				nnz_total += kern == 0 ? nnz : 0;
				calls++;
				uint32_t m = 0, t = 0;
				if (bad == 0 && read_pe_counters(k, &m, &t)) {
					mac += m;
					busy += t;
				}
			}
	uint64_t cycles = cycle - c0;
	CHECK(bad == 0 && calls == 12 * layers, "gpt step: %d kernel calls", calls);
	if (bad == 0)
		std::printf("gpt step: %d layers, n_embd %d, %d tokens, %.0f %% dense: %d kernel calls "
			    "(%zu nonzeros) bit-exact with the C model in %" PRIu64 " cycles = %.3f s "
			    "at %.0f MHz; UART %" PRIu64 " bytes out, %" PRIu64 " in (payload %" PRIu64
			    " / %" PRIu64 "); PE 0: %" PRIu64 " MACs, %" PRIu64 " task-busy cycles "
			    "(%.1f %% of the step)\n",
			    layers, E, T, 100.0 * density, calls, nnz_total, cycles,
			    (double)cycles / TB_CLK_HZ, TB_CLK_HZ / 1e6,
			    b.uart_bytes_out - bytes_out0, b.uart_bytes_in - bytes_in0,
			    4 * (k.st.words_out - st0.words_out), 4 * (k.st.words_in - st0.words_in),
			    mac, busy, 100.0 * busy / (double)cycles);
	std::printf("gpt step: link: %" PRIu64 " host frames resent (%" PRIu64 " NAKs, %" PRIu64
		    " ACK timeouts)\n",
		    b.tx.retransmits, b.tx.naks, b.tx.timeouts);
	if (bad == 0 && gpt_json) {
		std::string tmp = std::string(gpt_json) + ".tmp";
		FILE *f = std::fopen(tmp.c_str(), "w");
		CHECK(f != nullptr, "cannot write %s", tmp.c_str());
		if (f) {
			std::fprintf(f,
				     "{\"mesh\": \"%dx%d\", \"awords\": %d, \"bwords\": %d, "
				     "\"clk_hz\": %d, \"baud\": %d, \"layers\": %d, \"n_embd\": %d, "
				     "\"tokens\": %d, \"density\": %.3f, \"kernel_calls\": %d, "
				     "\"nnz\": %zu, \"cycles\": %" PRIu64 ", \"step_s\": %.4f, "
				     "\"uart_bytes_out\": %" PRIu64 ", \"uart_bytes_in\": %" PRIu64
				     ", \"pe0_macs\": %" PRIu64 ", \"pe0_busy_cycles\": %" PRIu64
				     ", \"pe0_cycles_per_mac\": %.2f}\n",
				     TB_ROWS, TB_COLS, TB_AWORDS, TB_BWORDS, TB_CLK_HZ, TB_BAUD, layers, E,
				     T, density, calls, nnz_total, cycles, (double)cycles / TB_CLK_HZ,
				     b.uart_bytes_out - bytes_out0, b.uart_bytes_in - bytes_in0, mac, busy,
				     mac ? (double)busy / (double)mac : 0.0);
			bool okw = std::fclose(f) == 0 && std::rename(tmp.c_str(), gpt_json) == 0;
			CHECK(okw, "cannot write %s", gpt_json);
		}
	}
	csd_close(k.ref);
}
#endif

int main(int argc, char **argv)
{
	uint64_t seed = 1, words = 16384;
	double ppm = 0;
	int random_pm = 0;
	bool kernel_only = false; // TB_REAL_PORT: STAT, then only the forward kernel (gate level)
	// TB_REAL_PORT --gpt-step: STAT, then one training step's kernels (configs/tiny.yaml)
	bool gpt_step = false;
	int gpt_layers = 2, gpt_embd = 32, gpt_tokens = 128;
	double gpt_density = 0.2;
	for (int i = 1; i < argc; i++) {
		if (!std::strncmp(argv[i], "--seed=", 7))
			seed = std::strtoull(argv[i] + 7, nullptr, 0);
		else if (!std::strncmp(argv[i], "--words=", 8))
			words = std::strtoull(argv[i] + 8, nullptr, 0);
		else if (!std::strncmp(argv[i], "--ppm=", 6))
			ppm = std::atof(argv[i] + 6);
		else if (!std::strncmp(argv[i], "--random=", 9))
			random_pm = std::atoi(argv[i] + 9);
		else if (!std::strcmp(argv[i], "--kernel-only"))
			kernel_only = true;
		else if (!std::strcmp(argv[i], "--gpt-step"))
			gpt_step = true;
		else if (!std::strncmp(argv[i], "--layers=", 9))
			gpt_layers = std::atoi(argv[i] + 9);
		else if (!std::strncmp(argv[i], "--embd=", 7))
			gpt_embd = std::atoi(argv[i] + 7);
		else if (!std::strncmp(argv[i], "--tokens=", 9))
			gpt_tokens = std::atoi(argv[i] + 9);
		else if (!std::strncmp(argv[i], "--json=", 7))
			gpt_json = argv[i] + 7;
		else if (!std::strncmp(argv[i], "--density=", 10))
			gpt_density = std::atof(argv[i] + 10);
		else if (argv[i][0] != '+') { // +plusargs are Verilator's (+trace)
			std::fprintf(stderr, "tb_board_link: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	rng_state = seed;
#ifdef TB_GATE
	const char *what = "gate-level netlist (yosys synth_ice40 + cells_sim.v)";
#else
	const char *what = "RTL";
#endif
	std::printf("tb_board_link: %s, clk %.1f MHz, %d baud (%" PRIu64
		    " clocks/bit), host UART %+.0f ppm, seed %" PRIu64 "\n",
		    what, TB_CLK_HZ / 1e6, TB_BAUD, kClksPerBit, ppm, seed);

	auto ctx = std::make_unique<VerilatedContext>();
	ctx->commandArgs(argc, argv);
	Bench b(ctx.get(), ppm);
#ifdef TB_TRACE
	const char *flag = ctx->commandArgsPlusMatch("trace");
	if (flag && !std::strcmp(flag, "+trace")) {
		ctx->traceEverOn(true);
		b.tfp = new VerilatedFstC;
		b.top->trace(b.tfp, 99);
		b.tfp->open("tb_board_link.fst");
	}
#endif
	b.reset();
	const uint64_t frame_clks = FRM_MAX_BYTES * 10 * kClksPerBit;

	// 1. link state after reset
	frm_stat st{};
	bool ok = b.query_stat(&st, 4 * frame_clks);
	CHECK(ok, "no STAT answer after reset");
	if (ok) {
		CHECK(st.err_crc == 0 && st.err_trunc == 0 && st.err_seq == 0,
		      "errors after reset: crc %u trunc %u seq %u", st.err_crc, st.err_trunc,
		      st.err_seq);
		CHECK(st.rx_expect == 0 && st.tx_seq == 0, "SEQs after reset: %u %u", st.rx_expect,
		      st.tx_seq);
	}

	std::vector<uint32_t> exp;
	if (kernel_only || gpt_step) {
		// phases 2-4 are skipped (the gate-level run keeps to the kernel)
	} else if (random_pm == 0) {
		// 2. corrupted and truncated frames in the middle of ECHO traffic
		make_echo(b.pending, exp, 2000, 100);
		b.corrupt_at = b.frames_out + 2;
		b.truncate_at = b.frames_out + 5;
		ok = b.run_until_done(exp.size(), 400 * frame_clks);
		CHECK(ok, "phase 2 did not complete");
		CHECK(compare(b.responses, exp, "phase 2"), "phase 2 responses");
		CHECK(b.injected == 2, "injected %" PRIu64, b.injected);
		CHECK(b.tx.naks >= 1, "no NAK seen");
		CHECK(b.tx.retransmits >= 2, "retransmits %" PRIu64, b.tx.retransmits);
		ok = b.query_stat(&st, 4 * frame_clks);
		CHECK(ok, "no STAT answer after phase 2");
		CHECK(st.err_crc == 1, "err_crc %u, expected 1", st.err_crc);
		CHECK(st.err_trunc == 1, "err_trunc %u, expected 1", st.err_trunc);
		std::printf("phase 2: %zu words echoed exactly once; device err_crc %u err_trunc %u "
			    "err_seq %u; host NAKs %" PRIu64 ", retransmits %" PRIu64
			    ", timeouts %" PRIu64 "\n",
			    exp.size(), st.err_crc, st.err_trunc, st.err_seq, b.tx.naks,
			    b.tx.retransmits, b.tx.timeouts);

		// 3. the link keeps working
		frm_stat st2{};
		make_echo(b.pending, exp, 3000, 300);
		ok = b.run_until_done(exp.size(), 400 * frame_clks);
		CHECK(ok, "phase 3 did not complete");
		CHECK(compare(b.responses, exp, "phase 3"), "phase 3 responses");
		ok = b.query_stat(&st2, 4 * frame_clks);
		CHECK(ok && st2.err_crc == st.err_crc && st2.err_trunc == st.err_trunc &&
			      st2.err_seq == st.err_seq,
		      "errors changed on a clean link");
		CHECK(st2.rx_expect == b.tx.next_seq, "device expects SEQ %u, host next %u",
		      st2.rx_expect, b.tx.next_seq);
		CHECK(st2.tx_seq == b.dec.data_expect, "device tx SEQ %u, host expects %u",
		      st2.tx_seq, b.dec.data_expect);

		// a new host session on a running device (cshost restarted): start both directions
		// from the device's STAT, as the driver does on open
		frm_tx_init(&b.tx, 3 * FRM_MAX_BYTES * 10 * kClksPerBit, 20, st2.rx_expect);
		frm_dec_init(&b.dec, 1024 * kClksPerBit, st2.tx_seq);
		make_echo(b.pending, exp, 600, 50);
		ok = b.run_until_done(exp.size(), 100 * frame_clks);
		CHECK(ok, "new session did not complete");
		CHECK(compare(b.responses, exp, "new session"), "new session responses");

		// line impairments a correct receiver ignores (stray bytes between frames, an SOF with
		// a low stop bit, a glitch between two bytes of a frame) and a lost ACK: every word
		// echoed exactly once, no CRC or truncation error counted, the lost ACK's frame resent
		// after a timeout and ACKed again as a duplicate
		uint64_t inj0 = b.injected, tmo0 = b.tx.timeouts, naks0 = b.tx.naks;
		b.stray_at = b.frames_out + 1;
		b.badstop_at = b.frames_out + 2;
		b.glitch_at = b.frames_out + 3;
		make_echo(b.pending, exp, 400, 100);
		ok = b.run_until_done(exp.size(), 100 * frame_clks);
		b.drop_ack_at = b.acks_in; // the next ACK, of a one-frame ECHO: nothing covers it
		make_echo(b.pending, exp, 20, 20);
		ok = b.run_until_done(exp.size(), 100 * frame_clks) && ok;
		CHECK(ok, "impairments phase did not complete");
		CHECK(compare(b.responses, exp, "impairments"), "impairments phase responses");
		CHECK(b.injected - inj0 == 4, "impairments injected %" PRIu64, b.injected - inj0);
		CHECK(b.tx.timeouts > tmo0, "no ACK timeout after the lost ACK");
		// the resent frame is a duplicate: ACKed again (a NAK would also move this host on,
		// but is the answer to a frame lost, not to one seen twice)
		CHECK(b.tx.naks == naks0, "%" PRIu64 " NAKs in the impairments phase",
		      b.tx.naks - naks0);
		frm_stat st4{};
		ok = b.query_stat(&st4, 4 * frame_clks);
		CHECK(ok && st4.err_crc == st2.err_crc && st4.err_trunc == st2.err_trunc,
		      "impairments counted as errors: crc %u trunc %u (before %u %u)", st4.err_crc,
		      st4.err_trunc, st2.err_crc, st2.err_trunc);
		std::printf("impairments: stray bytes, a low stop bit, a glitch ignored; a lost ACK "
			    "resent after %" PRIu64 " timeout(s)\n", b.tx.timeouts - tmo0);
	} else {
		// regress: random corruption of host -> device frames
		b.random_per_mille = random_pm;
		make_echo(b.pending, exp, words, 255);
		ok = b.run_until_done(exp.size(), 100 * frame_clks + 40 * words * 40 * kClksPerBit);
		CHECK(ok, "random phase did not complete");
		CHECK(compare(b.responses, exp, "random"), "random responses");
		b.query_stat(&st, 4 * frame_clks);
		std::printf("random: %" PRIu64 " frames corrupted; device err_crc %u err_trunc %u "
			    "err_seq %u; host NAKs %" PRIu64 " retransmits %" PRIu64
			    " timeouts %" PRIu64 "\n",
			    b.injected, st.err_crc, st.err_trunc, st.err_seq, b.tx.naks,
			    b.tx.retransmits, b.tx.timeouts);
		CHECK(st.err_crc + st.err_trunc >= 1 || b.injected == 0, "corruption not seen");
	}

#ifdef TB_REAL_PORT
	// 4. real host port: WRITE A of all PEs (pe 0xff), READ it back from each PE
	if (random_pm == 0 && !kernel_only) {
		const uint32_t n = 256, pes = TB_PES;
		std::vector<uint32_t> data(n);
		for (auto &w : data)
			w = (uint32_t)rng_next();
		b.pending.push_back(0x20000000u | (0u << 24) | (0xffu << 16) | n); // WRITE A, all PEs
		b.pending.push_back(0);                                             // address
		b.pending.insert(b.pending.end(), data.begin(), data.end());
		for (uint32_t pe = 0; pe < pes; pe++) {
			b.pending.push_back(0x30000000u | (0u << 24) | (pe << 16) | n); // READ A
			b.pending.push_back(0);
			exp.push_back(0xA3000000u | n);
			exp.insert(exp.end(), data.begin(), data.end());
		}
		uint64_t c0 = cycle;
		ok = b.run_until_done(exp.size(), 100 * frame_clks);
		double secs = (double)(cycle - c0) / TB_CLK_HZ;
		CHECK(ok, "WRITE/READ did not complete");
		CHECK(compare(b.responses, exp, "WRITE/READ"), "SRAM A read back through the link");
		std::printf("mesh: wrote %u words to A of all %u PEs and read each back through the "
			    "link in %.4f s simulated\n", n, pes, secs);
	}
	// 5. the forward kernel on a small sparse layer, driven by the host driver's planner
	if (gpt_step)
		run_gpt_step(b, gpt_layers, gpt_embd, gpt_tokens, gpt_density, 4000 * frame_clks);
	else if (random_pm == 0)
		run_forward(b, TB_FWD_T, TB_FWD_IN, TB_FWD_OUT, 0.3, 400 * frame_clks);
#else
	// 4. throughput. (a) RUN stream (no responses, like weight streaming): host -> device
	// payload rate; the double's checksum proves every word arrived exactly once.
	if (random_pm == 0 && words > 0) {
		std::deque<uint32_t> cmd;
		uint32_t acc = 0;
		size_t done = 0;
		while (done < words) {
			uint32_t n = (uint32_t)std::min<uint64_t>(255, words - done);
			cmd.push_back(0x40000000u | (n << 16) | (uint32_t)(done & 0xffff));
			for (uint32_t i = 0; i < n; i++) {
				uint32_t w = (uint32_t)rng_next();
				cmd.push_back(w);
				acc = ((acc << 1) | (acc >> 31)) ^ w;
			}
			done += n;
		}
		size_t cmd_words = cmd.size();
		b.pending.insert(b.pending.end(), cmd.begin(), cmd.end());
		uint64_t c0 = cycle, retx0 = b.tx.retransmits;
		ok = b.run_until_done(exp.size(), 100 * frame_clks + 40 * words * 40 * kClksPerBit);
		double secs = (double)(cycle - c0) / TB_CLK_HZ;
		CHECK(ok, "RUN stream did not complete");
		CHECK(b.tx.retransmits == retx0,
		      "retransmits on a clean link: %" PRIu64 " (NAKs %" PRIu64 ", timeouts %" PRIu64
		      ")", b.tx.retransmits - retx0, b.tx.naks, b.tx.timeouts);
		b.pending.push_back(0x80000000u); // COUNTERS: the double returns its checksum
		exp.push_back(0xA8000001u);
		exp.push_back(acc);
		ok = b.run_until_done(exp.size(), 4 * frame_clks);
		CHECK(ok, "no checksum answer");
		CHECK(compare(b.responses, exp, "RUN stream"), "RUN stream checksum");
		double payload = 4.0 * (double)cmd_words;
		double line = TB_BAUD / 10.0;
		std::printf("throughput: %zu command words (%.0f payload bytes) in %.4f s simulated: "
			    "%.0f payload bytes/s host -> device at %d baud (line %.0f bytes/s, "
			    "%.1f %%)\n",
			    cmd_words, payload, secs, payload / secs, TB_BAUD, line,
			    100.0 * payload / secs / line);

		// (b) ECHO stream: as much comes back as goes out; the device -> host direction
		// (smaller frames) is the bottleneck and its back-pressure makes the device drop
		// frames it has no room for, which the host resends. Informational.
		size_t base = exp.size();
		cmd.clear();
		make_echo(cmd, exp, words / 4, 255);
		cmd_words = cmd.size();
		b.pending.insert(b.pending.end(), cmd.begin(), cmd.end());
		c0 = cycle;
		retx0 = b.tx.retransmits;
		ok = b.run_until_done(exp.size(), 100 * frame_clks + 40 * words * 40 * kClksPerBit);
		secs = (double)(cycle - c0) / TB_CLK_HZ;
		CHECK(ok, "ECHO stream did not complete");
		CHECK(compare(b.responses, exp, "ECHO stream"), "ECHO stream responses");
		std::printf("echo: %zu words out, %zu back in %.4f s simulated: %.0f payload bytes/s "
			    "each way, %" PRIu64 " retransmits (receive buffer full)\n",
			    cmd_words, exp.size() - base, secs, 4.0 * (double)cmd_words / secs,
			    b.tx.retransmits - retx0);
		// (c) READ stream: few command words, many response words: device -> host rate
		base = exp.size();
		size_t rd_words = 0;
		while (rd_words < words) {
			uint32_t n = (uint32_t)std::min<uint64_t>(1024, words - rd_words);
			uint32_t a = (uint32_t)rng_next();
			b.pending.push_back(0x30000000u | n);
			b.pending.push_back(a);
			exp.push_back(0xA3000000u | n);
			for (uint32_t i = 0; i < n; i++)
				exp.push_back(a + i);
			rd_words += n;
		}
		c0 = cycle;
		ok = b.run_until_done(exp.size(), 100 * frame_clks + 40 * words * 40 * kClksPerBit);
		secs = (double)(cycle - c0) / TB_CLK_HZ;
		CHECK(ok, "READ stream did not complete");
		CHECK(compare(b.responses, exp, "READ stream"), "READ stream responses");
		std::printf("read: %zu response words in %.4f s simulated: %.0f payload bytes/s "
			    "device -> host (%.1f %% of the line)\n",
			    exp.size() - base, secs, 4.0 * (double)(exp.size() - base) / secs,
			    100.0 * 4.0 * (double)(exp.size() - base) / secs / (TB_BAUD / 10.0));

		frm_stat st3{};
		ok = b.query_stat(&st3, 4 * frame_clks);
		CHECK(ok && st3.err_crc == st.err_crc && st3.err_trunc == st.err_trunc,
		      "CRC or truncation errors on a clean link");
	}
#endif
	CHECK(b.link_errors == 0, "%" PRIu64 " device -> host frame errors", b.link_errors);
	CHECK(b.uart.framing_errors == 0, "%" PRIu64 " host UART framing errors",
	      b.uart.framing_errors);

	std::printf("%" PRIu64 " cycles simulated\n", cycle);
	std::printf("device transcript %016" PRIx64 "\n", b.transcript);
	std::printf("RESULT: %d passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
