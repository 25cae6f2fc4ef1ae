// tb_pe - rtl/pe/pe.v against the instruction-level model (verif/models/pe_model.c).
//
// Scenarios, each on a freshly reset PE (SRAM contents carry over, in the model too):
//   fwd     forward-kernel axpy streams: SET_MAJOR control wavelets + nonzeros, random Tp
//           (including Tp < the B pipeline depth, where the read/write interlock works);
//           on pe half of them first-touch streams (flagged first nonzeros, zero wavelets);
//           other control wavelets (ops 1-15, op 0 with arg bits above 15) between majors
//           and between nonzeros end the chain (pe's axpy takes SET_MAJORs in it)
//   wgrad   dot groups over positions (a SET_MAJOR before each major, or positions of many
//           majors behind one SET_MAJOR with their A offsets in val, wrapping; TB_PE_LITE,
//           whose dot reads no offset: a SET_MAJOR before each major, val random), then END
//           unblocks a reduction task whose redv (send or store) consumes partial sums from
//           another queue; one (dotutil, Tp = 16) is fed without gaps and measured
//   rand    random programs (ALU, forward branches, loops closed by djnz or by a backward
//           branch, W access, loads/stores, send, sendv, fill, block/unblock, axpy/dot with
//           chaining) on random streams, including wavelets with no task (err_notask)
//   util    a long forward stream (Tp = 16) fed without gaps: measures MAC-busy / cycles and
//           asserts zero dead cycles between consecutive nonzeros of a major (pe: of the
//           whole stream, SET_MAJORs included)
//   vec     (TB_VEC) the 0xF vector group: tasks of random vfma / vsum2 / vdot2 / cvt.bf / vlut /
//           rsqrt / vmac / vdot / vaxpy / vmul / cvt.bh sequences interleaved with chaining axpy and
//           dot tasks; B sources (rt, vmac's rd) the destination's register, another register
//           equal to r6, overlapping it by a few words either way, or disjoint (other bank
//           too); A operands wrapping past AWords and 0xffff; cvt.bh's halves over the source
//           range (overlapping it), odd and even starts; counts 0,
//           small, large and past the memory size; specials (NaN, inf, zeros, subnormals,
//           ties, near overflow); vlut tables in the range's bank and in the other, indices
//           at the extremes; vlut.bf into A, vlut.a from A to A (in place, a few elements
//           either side, anywhere), vdot2, vmul, cpa (pe; pe_lite: none); odd and even cvt.bf
//           targets; 16-bit and memory address wrap.
//           The rand programs get vector instructions too.
//   pairs   (TB_VEC) the instructions pe issues two elements a cycle (vfma, vaxpy, vmac, vmul,
//           cvt.bf, cvt.bh; and cpa after them) on short ranges: sources 0-3 words either side of the
//           destination, odd and even A and Bh elements, counts 0-9 (and longer), vmac's x
//           and c in one bank and in two, ranges across the bank boundary and the 16-bit
//           wrap, each often right after one that writes its sources (the interlock).
// TB_VEC (default 1) is 0 for a DUT without the vector group (tb_pe_micro_mt): it then sees
// exactly the scenarios it saw before the group existed.
// Every scenario runs with random rx gaps (except util), random tx back-pressure, and
// random config-port reads of the other B bank while the engine runs. fwd, wgrad and the fw
// runs also take random config writes into A words nothing else touches while the engine
// runs (on pe, A's write port: in fwd, whose engine never writes A, each is granted in the
// cycle it is asked, util included; in the fw runs the programs' A writes win); the
// final compare of A sees a lost engine write or a lost config write. At the end every
// sent wavelet (in order), all of A and B, the registers, the task table and the counters
// are compared with the model (TB_BACKDOOR: A and B from the DUT's memory, a window of each
// and, in the last scenario, all of them through the config port too). Each scenario has a
// cycle timeout. --util-once: the util scenario only first (make test's tb_pe_micro_mt;
// make regress runs its repeats).
#if defined(TB_PE_MICRO_MT)
#include "Vpe_micro_mt_solo.h"
typedef Vpe_micro_mt_solo Vdut;
#elif defined(TB_PE_LITE)
#include "Vpe_lite.h"
typedef Vpe_lite Vdut;
#else
#include "Vpe.h"
typedef Vpe Vdut;
#endif
#include "verilated.h"

#include <deque>
#include <string>
#include <vector>

#include "tb_common.h"

extern "C" {
#include "common/numerics.h"
#include "pe_model.h"
}

static const unsigned kAWords = 16384, kBWords = 8192, kNumQueues = 4;
// liveness bounds (cycle timeouts) scale with the DUT's speed: pe_micro_mt serves config and
// runs every instruction in micro-code
#ifndef TB_SLOW
#define TB_SLOW 1
#endif
#ifndef TB_VEC
#define TB_VEC 1
#endif

// ----------------------------------------------------------------------------- assembler
namespace as {
static uint16_t ret() { return 0x0000; }
static uint16_t nop() { return 0x0001; }
static uint16_t addi(unsigned rd, unsigned rs, int imm)
{
	return (uint16_t)(0x2000 | rd << 9 | rs << 6 | (imm & 0x3f));
}
static uint16_t alu(unsigned fn, unsigned rd, unsigned rs, unsigned rt)
{
	return (uint16_t)(0x3000 | rd << 9 | rs << 6 | rt << 3 | fn);
}
static uint16_t wsel(unsigned rd, unsigned sel) { return (uint16_t)(0x4000 | rd << 9 | sel); }
static uint16_t br(bool bne, unsigned rs, unsigned rt, int off)
{
	return (uint16_t)(0x5000 | (bne ? 0x800 : 0) | rs << 8 | rt << 5 | (off & 0x1f));
}
static uint16_t djnz(unsigned rd, int off) { return (uint16_t)(0x6000 | rd << 9 | (off & 0x1ff)); }
static uint16_t send(unsigned c, unsigned rs, unsigned rt, bool ctrl)
{
	return (uint16_t)(0x8000 | c << 8 | (ctrl ? 0x80 : 0) | rs << 4 | rt << 1);
}
static uint16_t block(unsigned tid, bool unblock)
{
	return (uint16_t)(0x9000 | (unblock ? 0x800 : 0) | tid);
}
static uint16_t axpy() { return 0xA000; }
static uint16_t dot() { return 0xB000; }
static uint16_t redv(unsigned c, bool st) { return (uint16_t)(0xC000 | c << 8 | (st ? 0x80 : 0)); }
static uint16_t sendv(unsigned c) { return (uint16_t)(0xD000 | c << 8); }
static uint16_t fill() { return 0xE000; }
static uint16_t mem(unsigned sel, unsigned rd, unsigned rs, bool hi)
{
	return (uint16_t)(0xF000 | rd << 9 | rs << 6 | (hi ? 4 : 0) | sel);
}
#ifdef TB_PE_LITE
static const bool kVlutBf = false; // pe_lite decodes vlut with rs = 0 only
static const bool kVdot2 = false;  // and vsum2 with rs = 0 only
static const bool kVsum4 = false;  // and vsum2 with rt = 0 only
static const bool kVmul = false;   // and cvt.bh with rs = 0 only
static const bool kVlutA = false;  // and cvt.bf with rs = 0 only
static const bool kCpa = false;
#else
static const bool kVlutBf = true; // vlut with rs != 0: vlut.bf, bf16 into A[r[rs] + n]
static const bool kVdot2 = true;  // vsum2 with rs != 0: vdot2 against A[r[rs] + n]
static const bool kVsum4 = true;  // vsum2 / vdot2 with rt != 0: vsum4 / vdot4, four chains
static const bool kVmul = true;   // cvt.bh with rs != 0: vmul, B[r6 + n] = A[r[rs] + n] r[rd]
static const bool kVlutA = true;  // cvt.bf with rs != 0, rd != 0: vlut.a, vlut.bf with x from A
static const bool kCpa = true;    // cvt.bf with rs != 0, rd = 0: cpa, B[r6 + n] = A word r[rs] / 2 + n
#endif
// the vector group: xop 1 vfma rd, rs, rt; 2 vsum2 rd; 3 cvt.bf rd; 4 vlut rd, rt;
// 5 rsqrt rd, [rs]; 6 vmac rd, rs, rt; 7 vdot rd, rs, rt (rt = [2:0])
static uint16_t vop(unsigned xop, unsigned rd, unsigned rs, unsigned rt = 0)
{
	return (uint16_t)(0xF000 | rd << 9 | rs << 6 | xop << 3 | rt);
}
// xop 0: [2:0] = 4 vaxpy rd, rs; 5 cvt.bh rd
static uint16_t vaxpy(unsigned rd, unsigned rs) { return (uint16_t)(0xF004 | rd << 9 | rs << 6); }
static uint16_t cvtbh(unsigned rd) { return (uint16_t)(0xF005 | rd << 9); }
// cvt.bh's code with rs != 0 (pe): vmul rd, rs
static uint16_t vmul(unsigned rd, unsigned rs) { return (uint16_t)(0xF005 | rd << 9 | rs << 6); }
static void li(std::vector<uint16_t> &w, unsigned rd, uint16_t v)
{
	w.push_back((uint16_t)(0x1000 | rd << 9));
	w.push_back(v);
}
} // namespace as

// A control wavelet for a random control task: on pe never a SET_MAJOR (payload[31:16] =
// 0), which pe's axpy may take in its chain instead of the task (gen_fwd tests that).
static uint32_t not_major(uint32_t payload)
{
#ifndef TB_PE_LITE
	if (!(payload >> 16)) payload |= 1u << 16;
#endif
	return payload;
}

static uint64_t wv(unsigned ctrl, unsigned color, uint32_t payload)
{
	return ((uint64_t)ctrl << 36) | ((uint64_t)color << 32) | payload;
}

// ----------------------------------------------------------------------------- scenario
struct Scenario {
	const char *kind = "";
	std::vector<uint16_t> imem;                 // loaded at address 0
	std::vector<std::pair<unsigned, uint16_t>> tasks; // tid, entry
	std::vector<std::pair<unsigned, unsigned>> qmap;  // color, queue
	uint16_t regs[8] = { 0 };
	std::vector<std::pair<uint32_t, uint32_t>> a_words, b_words; // address, data
	std::vector<std::deque<uint64_t>> streams;
	unsigned rx_gap_pct = 20, tx_stall_pct = 30;
	bool measure = false; // util: no gaps, count dead cycles (asserted when run_macs is set)
	std::vector<uint64_t> run_macs; // util: MACs per run, in order
	uint64_t budget = 0; // extra cycles of the timeout (long vector instructions)
	// A words [acfg_word, acfg_word + acfg_n) take config writes while the engine runs
	// (nothing else touches them); acfg_free: the engine never writes A (fwd)
	unsigned acfg_word = 0, acfg_n = 0;
	bool acfg_free = false;
};

// pe: A has a write port of its own (config writes of A proceed while the engine reads it).
// pe_micro_mt takes a config request only after holding it (its grant comes a cycle behind
// the request, from the shared micro-machine), so the one-cycle asks are not made there.
#if defined(TB_PE_LITE) || defined(TB_PE_MICRO_MT)
static const bool kAWritePort = false;
#else
static const bool kAWritePort = true;
#endif
#if defined(TB_PE_MICRO_MT)
static const bool kACfgWrites = false;
#else
static const bool kACfgWrites = true;
#endif

struct Bench {
	VerilatedContext *ctx;
	Vdut *dut;
	TbRng rng;
	pe_model model;
	uint64_t cycle = 0;
	unsigned failed = 0;
	uint32_t busy = 0; // counter 1 (task-busy cycles) at the last compare
#ifdef TB_BACKDOOR
	TbRng port_rng; // read_mem's port windows
	bool full_port = false;
#endif
	std::vector<uint64_t> sent;
	// utilization measurement
	uint64_t mac_cycles = 0, util_cycles = 0, dot_mac_cycles = 0, dot_util_cycles = 0;
	// coverage-ish totals from the model
	uint64_t tot_macs = 0, tot_sent = 0, tot_drop = 0, tot_rx = 0;
	// config writes of A while the engine runs: asked, granted, granted while not idle
	uint64_t acfg_asked = 0, acfg_done = 0, acfg_busy = 0;

	Bench(VerilatedContext *c, uint64_t seed) : ctx(c), rng(seed)
#ifdef TB_BACKDOOR
		, port_rng(seed ^ 0x5bd1e995u)
#endif
	{
		dut = new Vdut(ctx);
		if (pe_model_init(&model, kAWords, kBWords, kNumQueues)) {
			printf("FAIL: model init\n");
			exit(1);
		}
#ifdef TB_PE_LITE
		model.dot_by_major = 1; // pe_lite, pe_micro_mt: dot reads A at r1, val ignored
		model.first_touch = 0;  // and axpy's index has no first-touch flag
		model.axpy_major = 0;   // and a SET_MAJOR ends axpy's chain (the control task)
#endif
	}
	~Bench()
	{
		dut->final();
		delete dut;
		pe_model_free(&model);
	}

	void clear_inputs()
	{
		dut->rx_valid_i = 0;
		dut->rx_data_i = 0;
		dut->tx_ready_i = 0;
		dut->cfg_req_i = 0;
		dut->cfg_we_i = 0;
		dut->cfg_target_i = 0;
		dut->cfg_addr_i = 0;
		dut->cfg_wdata_i = 0;
		dut->ctr_clear_i = 0;
	}
	void tick()
	{
		dut->clk_i = 1;
		dut->eval();
		dut->clk_i = 0;
		dut->eval();
		cycle++;
	}
	void reset()
	{
		clear_inputs();
		dut->rst_ni = 0;
		dut->clk_i = 0;
		dut->eval();
		tick();
		tick();
		dut->rst_ni = 1;
		dut->eval();
		// the model: same reset (A, B and IMEM keep their contents, as SRAMs do)
		for (unsigned i = 0; i < PE_MODEL_MAX_QUEUES; i++)
			model.q[i].head = model.q[i].tail = 0;
		memset(model.task, 0, sizeof model.task);
		memset(model.r, 0, sizeof model.r);
		memset(model.cnt, 0, sizeof model.cnt);
		for (unsigned c = 0; c < 16; c++)
			model.qmap[c] = (uint8_t)((c == 0 ? 0 : c <= 2 ? 1 : c <= 4 ? 2 : 3) % kNumQueues);
		model.w = 0;
		model.tid = model.tq = model.pc = 0;
		model.running = 0;
		model.last_q = kNumQueues - 1;
		model.redv_n = 0;
		model.nsent = 0;
		sent.clear();
	}
	// blocking config write / read (PE idle or not)
	void cfg_write(unsigned target, unsigned addr, uint32_t data)
	{
		for (unsigned n = 0;; n++) {
			dut->cfg_req_i = 1;
			dut->cfg_we_i = 1;
			dut->cfg_target_i = target;
			dut->cfg_addr_i = addr;
			dut->cfg_wdata_i = data;
			dut->eval();
			bool g = dut->cfg_gnt_o;
			tick();
			if (g) break;
			if (n > 100000) {
				printf("FAIL: cfg write never granted\n");
				failed++;
				break;
			}
		}
		dut->cfg_req_i = 0;
		dut->eval();
	}
	// pipelined reads of n consecutive addresses of a target (PE idle)
	std::vector<uint32_t> cfg_read_block(unsigned target, unsigned addr, unsigned n)
	{
		std::vector<uint32_t> out;
		unsigned issued = 0;
		uint64_t start = cycle;
		while (out.size() < n) {
			bool req = issued < n;
			dut->cfg_req_i = req;
			dut->cfg_we_i = 0;
			dut->cfg_target_i = target;
			dut->cfg_addr_i = addr + issued;
			dut->eval();
			if (dut->cfg_rvalid_o) out.push_back(dut->cfg_rdata_o);
			if (req && dut->cfg_gnt_o) issued++;
			tick();
			if (cycle - start > (4ull * n + 1000) * TB_SLOW) {
				printf("FAIL: cfg read of target %u timed out\n", target);
				failed++;
				break;
			}
		}
		dut->cfg_req_i = 0;
		dut->eval();
		return out;
	}

	void setup(const Scenario &s)
	{
		for (size_t i = 0; i < s.imem.size(); i++) {
			cfg_write(3, (unsigned)i, s.imem[i]);
			model.imem[i] = s.imem[i];
		}
		for (auto &t : s.tasks) {
			cfg_write(4, t.first, t.second);
			model.task[t.first] = t.second;
		}
		for (auto &q : s.qmap) {
			cfg_write(6, q.first, q.second);
			model.qmap[q.first] = (uint8_t)q.second;
		}
		for (unsigned r = 0; r < 8; r++) {
			cfg_write(7, r, s.regs[r]);
			model.r[r] = s.regs[r];
		}
		for (auto &a : s.a_words) {
			cfg_write(0, a.first, a.second);
			model.a[(a.first * 2) % kAWords] = (uint16_t)a.second;
			model.a[(a.first * 2 + 1) % kAWords] = (uint16_t)(a.second >> 16);
		}
		for (auto &b : s.b_words) {
			cfg_write(1, b.first, b.second);
			model.b[b.first % kBWords] = b.second;
		}
	}

	// Run the streams to completion. Returns false on timeout.
	bool run(Scenario &s, uint64_t max_cycles)
	{
		uint64_t start = cycle, idle_run = 0;
		uint64_t macs_seen = 0, first_rx = 0, last_mac = 0, dead = 0;
		size_t run_idx = 0;
		uint64_t run_end = s.run_macs.empty() ? 0 : s.run_macs[0];
		bool started = false, in_gap = false;
		unsigned bank_probe = 0;
		for (;;) {
			if (cycle - start > max_cycles) {
				printf("FAIL %s: timeout after %" PRIu64 " cycles (sent %zu)\n", s.kind,
				       max_cycles, sent.size());
				failed++;
				return false;
			}
			// rx: pick a stream whose head color is ready
			dut->rx_valid_i = 0;
			int chosen = -1;
			if (!rng.chance(s.rx_gap_pct)) {
				unsigned ns = (unsigned)s.streams.size(), k0 = rng.below(ns);
				for (unsigned k = 0; k < ns; k++) {
					unsigned si = (k0 + k) % ns;
					if (s.streams[si].empty()) continue;
					unsigned color = (unsigned)(s.streams[si].front() >> 32) & 15;
					if ((dut->color_ready_o >> color) & 1) {
						chosen = (int)si;
						break;
					}
				}
			}
			if (chosen >= 0) {
				dut->rx_valid_i = 1;
				dut->rx_data_i = s.streams[chosen].front();
			}
			dut->tx_ready_i = !rng.chance(s.tx_stall_pct);
			// config reads of B and writes of A while the engine runs (they must not
			// disturb it); util: A writes only where A has its own write port
			bool awr = kACfgWrites && s.acfg_n && (!s.measure || kAWritePort) && rng.chance(10);
			bool probe = !awr && !s.measure && rng.chance(10);
			uint32_t aw = awr ? s.acfg_word + rng.below(s.acfg_n) : 0, ad = rng.u32();
			dut->cfg_req_i = probe || awr;
			dut->cfg_we_i = awr;
			dut->cfg_target_i = awr ? 0 : 1;
			dut->cfg_addr_i = awr ? (uint16_t)aw : (uint16_t)(4096 + (bank_probe++ % 64));
			dut->cfg_wdata_i = ad;
			dut->eval();
			if (awr) {
				acfg_asked++;
				if (dut->cfg_gnt_o) {
					acfg_done++;
					acfg_busy += !dut->idle_o;
					model.a[(aw * 2) % kAWords] = (uint16_t)ad;
					model.a[(aw * 2 + 1) % kAWords] = (uint16_t)(ad >> 16);
				} else if (kAWritePort && s.acfg_free) {
					printf("FAIL %s: cycle %" PRIu64 ": a config write of A word %u waits "
					       "although the engine never writes A\n", s.kind, cycle, aw);
					failed++;
				}
			}
			if (dut->rx_valid_i && dut->rx_ready_o) {
				pe_model_rx(&model, s.streams[chosen].front());
				s.streams[chosen].pop_front();
				if (!started) {
					started = true;
					first_rx = cycle;
				}
			}
			if (dut->tx_valid_o && dut->tx_ready_i) sent.push_back(dut->tx_data_o);
			if (s.measure && started) {
				if (dut->mac_busy_o) {
					if (in_gap) in_gap = false;
					macs_seen++;
					last_mac = cycle;
					while (run_idx < s.run_macs.size() && macs_seen > run_end) {
						run_idx++;
						run_end += run_idx < s.run_macs.size() ? s.run_macs[run_idx] : 0;
					}
					if (macs_seen == run_end) in_gap = true; // a run boundary follows
				} else if (macs_seen > 0 && !in_gap && macs_seen < run_end) {
					dead++; // idle inside a run
				}
			}
			bool all_in = true;
			for (auto &q : s.streams) all_in = all_in && q.empty();
			idle_run = (all_in && dut->idle_o) ? idle_run + 1 : 0;
			tick();
			if (idle_run > 8) break;
		}
		dut->cfg_req_i = 0;
		dut->eval();
		tick(); // let the response of a last probe read go by
		if (s.measure) {
			uint64_t span = last_mac - first_rx + 1;
			if (!strcmp(s.kind, "util")) {
				mac_cycles += macs_seen;
				util_cycles += span;
			} else {
				dot_mac_cycles += macs_seen;
				dot_util_cycles += span;
			}
			printf("util: %" PRIu64 " MACs in %" PRIu64 " cycles (first wavelet in to last MAC): "
			       "%.2f%% MAC-busy, %" PRIu64 " dead cycles inside runs\n",
			       macs_seen, span, 100.0 * (double)macs_seen / (double)span, dead);
#ifndef TB_PE_LITE
			if (dead && !s.run_macs.empty()) {
				printf("FAIL util: %" PRIu64 " dead cycles between nonzeros of a run\n", dead);
				failed++;
			}
#endif
		}
		return true;
	}

	// All n words of A (target 0) or B (1) for the compare: through the config port, or
	// (TB_BACKDOOR: pe_micro_mt, whose port reads cost ~40 cycles a word) from the DUT's
	// memory array, with a window of 64 words at a random address (port_rng, so that the
	// scenarios' random stream stays the same) read through the port as well, which must
	// match it; full_port: all n words through the port too (the last scenario's compare).
	std::vector<uint32_t> read_mem(unsigned target, unsigned n)
	{
#ifdef TB_BACKDOOR
		std::vector<uint32_t> v = tb_backdoor(dut, target, n);
		unsigned w0 = full_port ? 0 : port_rng.below(n);
		unsigned wn = full_port ? n : n - w0 < 64 ? n - w0 : 64;
		std::vector<uint32_t> p = cfg_read_block(target, w0, wn);
		for (unsigned i = 0; i < wn; i++) {
			if (i >= p.size() || p[i] != v[w0 + i]) {
				printf("FAIL: config read of %s word %u gave %08x, the memory holds %08x\n",
				       target ? "B" : "A", w0 + i, i < p.size() ? p[i] : 0, v[w0 + i]);
				failed++;
				break;
			}
		}
		return v;
#else
		return cfg_read_block(target, 0, n);
#endif
	}

	void compare(const char *kind)
	{
		int mr = pe_model_run(&model, 50000000);
		if (mr != 0) {
			printf("FAIL %s: model did not finish (%d)\n", kind, mr);
			failed++;
			return;
		}
		unsigned before = failed;
		if (sent.size() != model.nsent) {
			printf("FAIL %s: %zu wavelets sent, model sent %zu\n", kind, sent.size(),
			       model.nsent);
			failed++;
		}
		for (size_t i = 0; i < sent.size() && i < model.nsent; i++) {
			if (sent[i] != model.sent[i]) {
				printf("FAIL %s: sent wavelet %zu: expected %010" PRIx64 " got %010" PRIx64
				       "\n", kind, i, model.sent[i], sent[i]);
				failed++;
				break;
			}
		}
		std::vector<uint32_t> a = read_mem(0, kAWords / 2);
		for (unsigned i = 0; i < a.size(); i++) {
			uint32_t e = model.a[2 * i] | (uint32_t)model.a[2 * i + 1] << 16;
			if (a[i] != e) {
				printf("FAIL %s: A word %u: expected %08x got %08x\n", kind, i, e, a[i]);
				failed++;
				break;
			}
		}
		std::vector<uint32_t> b = read_mem(1, kBWords);
		for (unsigned i = 0; i < b.size(); i++) {
			if (b[i] != model.b[i]) {
				printf("FAIL %s: B word %u: expected %08x got %08x\n", kind, i, model.b[i],
				       b[i]);
				failed++;
				break;
			}
		}
		std::vector<uint32_t> r = cfg_read_block(7, 0, 8);
		for (unsigned i = 0; i < r.size(); i++) {
			if (r[i] != model.r[i]) {
				printf("FAIL %s: r%u: expected %04x got %04x\n", kind, i, model.r[i], r[i]);
				failed++;
			}
		}
		std::vector<uint32_t> t = cfg_read_block(4, 0, 32);
		for (unsigned i = 0; i < t.size(); i++) {
			if (t[i] != model.task[i]) {
				printf("FAIL %s: task %u: expected %03x got %03x\n", kind, i, model.task[i],
				       t[i]);
				failed++;
			}
		}
		std::vector<uint32_t> c = cfg_read_block(8, 0, 5);
		busy = c.size() > 1 ? c[1] : 0;
		if (getenv("TB_DEBUG"))
			printf("counters %u %u %u %u %u model %u %u %u %u %u\n", c[0], c[1], c[2], c[3],
			       c[4], model.cnt[0], model.cnt[1], model.cnt[2], model.cnt[3],
			       model.cnt[4]);
		for (unsigned i = 0; i < c.size(); i++) {
			if (i == 1) continue; // task-busy cycles: timing, not modelled
			if (c[i] != model.cnt[i]) {
				printf("FAIL %s: counter %u: expected %u got %u\n", kind, i, model.cnt[i],
				       c[i]);
				failed++;
			}
		}
		std::vector<uint32_t> im = cfg_read_block(3, 0, 256);
		for (unsigned i = 0; i < im.size(); i++) {
			if (im[i] != model.imem[i]) {
				printf("FAIL %s: IMEM %u: expected %04x got %04x\n", kind, i, model.imem[i],
				       im[i]);
				failed++;
				break;
			}
		}
		std::vector<uint32_t> qm = cfg_read_block(6, 0, 16);
		for (unsigned i = 0; i < qm.size(); i++) {
			if (qm[i] != model.qmap[i]) {
				printf("FAIL %s: qmap %u: expected %u got %u\n", kind, i, model.qmap[i], qm[i]);
				failed++;
			}
		}
		// a write to a counter clears it
		unsigned cc = rng.below(5);
		cfg_write(8, cc, 0);
		std::vector<uint32_t> c2 = cfg_read_block(8, cc, 1);
		if (c2.size() != 1 || c2[0] != 0) {
			printf("FAIL %s: counter %u not cleared\n", kind, cc);
			failed++;
		}
		// CLEAR (ctr_clear_i) zeroes all five counters
		dut->ctr_clear_i = 1;
		tick();
		dut->ctr_clear_i = 0;
		dut->eval();
		std::vector<uint32_t> c3 = cfg_read_block(8, 0, 5);
		for (unsigned i = 0; i < c3.size(); i++)
			if (c3[i] != 0) {
				printf("FAIL %s: counter %u is %u after ctr_clear_i\n", kind, i, c3[i]);
				failed++;
			}
		// target 2, B read-and-clear: returns the words, then they read as zeros
		unsigned rc0 = rng.below(kBWords);
		unsigned rcn = 1 + rng.below(kBWords - rc0 < 64 ? kBWords - rc0 : 64);
		std::vector<uint32_t> rc = cfg_read_block(2, rc0, rcn);
		std::vector<uint32_t> rz = cfg_read_block(1, rc0, rcn);
		for (unsigned i = 0; i < rcn; i++) {
			uint32_t e = i < rc.size() ? model.b[rc0 + i] : 0;
			if (rc.size() != rcn || rc[i] != e || rz.size() != rcn || rz[i] != 0) {
				printf("FAIL %s: read-and-clear of B word %u: expected %08x then 0, got "
				       "%08x then %08x\n", kind, rc0 + i, e, i < rc.size() ? rc[i] : 0,
				       i < rz.size() ? rz[i] : 0);
				failed++;
				break;
			}
		}
		for (unsigned i = 0; i < rcn; i++)
			model.b[rc0 + i] = 0; // B persists into the next scenario
		tot_macs += model.cnt[0];
		tot_drop += model.cnt[2];
		tot_rx += model.cnt[3];
		tot_sent += model.cnt[4];
		if (failed > before) printf("  (scenario %s failed at cycle %" PRIu64 ")\n", kind, cycle);
	}
};

// ----------------------------------------------------------------------------- generators
static uint16_t rand_bf16(TbRng &r, bool nonzero)
{
	for (;;) {
		uint16_t v;
		switch (r.below(16)) {
		case 0: v = (uint16_t)(r.below(2) << 15 | 0x7f80); break; // inf
		case 1: v = (uint16_t)(r.u32() & 0x807f); break;           // zero / subnormal
		default: v = (uint16_t)(r.below(2) << 15 | (110 + r.below(36)) << 7 | r.below(128));
		}
		if (r.chance(2)) v = (uint16_t)(0x7f80 | (1 + r.below(127))); // NaN
		if (!nonzero || (v & 0x7fff)) return v;
	}
}

static uint32_t rand_f32(TbRng &r)
{
	if (r.chance(5)) return r.u32(); // anything, specials included
	return (uint32_t)(r.below(2) << 31 | (100 + r.below(56)) << 23 | (r.u32() & 0x7fffff));
}

static void fill_a_random(Bench &b, Scenario &s, unsigned word0, unsigned nwords)
{
	for (unsigned i = 0; i < nwords; i++)
		s.a_words.push_back({ (word0 + i) % (kAWords / 2),
				      (uint32_t)rand_bf16(b.rng, false) | (uint32_t)rand_bf16(b.rng, false) << 16 });
}

// forward kernel: X[t][j] at xa + t*K + j, Y[t][i] at yb + t*N + i. SET_MAJOR j carries
// r1 = xa + j. The control task: op 0 (payload[31:16] = 0) r1 = arg, exactly what pe's axpy
// does when it takes a SET_MAJOR in its chain; any other control wavelet (some between
// majors or nonzeros: ops 1-15, and op 0 with nonzero bits [27:16], which is no SET_MAJOR)
// ends the chain and sends {W[31:16], r1} on color 8 (the order of the dispatch against
// the stream), leaving r6 at 0 as the op-0 path does.
static Scenario gen_fwd(Bench &b, bool util)
{
	TbRng &r = b.rng;
	Scenario s;
	s.kind = util ? "util" : "fwd";
	unsigned tp = util ? 16 : 1 + r.below(24);
	unsigned K = util ? 64 : 1 + r.below(24), N = util ? 96 : 1 + r.below(40);
	unsigned xa = r.below(64), yb = r.below(2) ? r.below(64) : 4096 + r.below(64);
	using namespace as;
	s.imem = { axpy(), ret(), wsel(6, 0), br(true, 6, 0, 2), wsel(1, 1), ret(),
		   send(8, 6, 1, false), alu(0, 6, 0, 0), ret() };
	s.tasks = { { 0, 0x200 | 0 }, { 16, 0x200 | 2 } };
	s.regs[0] = 0;
	s.regs[2] = (uint16_t)yb;
	s.regs[3] = (uint16_t)K;
	s.regs[4] = (uint16_t)N;
	s.regs[5] = (uint16_t)tp;
	fill_a_random(b, s, xa / 2, (tp * K + 3) / 2 + 1);
	s.acfg_word = 6144; // elements 12288 .. 16383: far above X
	s.acfg_n = 2048;
	s.acfg_free = true;
	if (r.chance(50))
		for (unsigned i = 0; i < tp * N; i++)
			s.b_words.push_back({ yb + i, r.chance(50) ? 0u : rand_f32(r) });
	s.streams.resize(1);
	unsigned density = util ? 40 : 10 + r.below(90);
	unsigned other = util ? 0 : r.below(3) * 10; // % of majors with another control wavelet
	auto other_ctl = [&]() {
		uint32_t hi = r.chance(25) ? 1 + r.below(0xfff) : (1 + r.below(15)) << 12;
		s.streams[0].push_back(wv(1, 0, hi << 16 | r.below(65536)));
	};
#ifndef TB_PE_LITE
	// first touch (pe, index bit 14), as an overwriting resident kernel streams: each
	// output's first nonzero flagged, then chains on it; zero wavelets (flag, val +0, their
	// A often inf/NaN) for outputs no nonzero touches and before some unflagged chains.
	// B holds garbage the flagged nonzeros must not read.
	bool ft = !util && r.chance(50);
	std::vector<bool> seen(N, false);
	bool zeros_sent = false;
	if (ft) {
		s.streams[0].push_back(wv(1, 0, xa & 0xffff)); // SET_MAJOR 0: zero wavelets
		unsigned nz = 0;
		for (unsigned i = 0; i < N; i++)
			if (r.chance(density < 40 ? 30 : 10)) {
				s.streams[0].push_back(wv(0, 0, 1u << 30 | i << 16 | 0u));
				seen[i] = true;
				nz++;
			}
		if (nz) s.run_macs.push_back((uint64_t)nz * tp);
		else s.streams[0].pop_back();
		zeros_sent = nz > 0;
		for (unsigned i = 0; i < tp * K; i += 1 + r.below(3))
			s.a_words.push_back({ (xa + i) / 2 % (kAWords / 2),
					      r.below(2) ? 0x7f807f80u : 0xffc17fc1u }); // inf, NaN
	}
#else
	const bool ft = false, zeros_sent = false;
	std::vector<bool> seen;
#endif
	for (unsigned j = 0; j < K; j++) {
		std::vector<unsigned> rows;
		for (unsigned i = 0; i < N; i++)
			if (r.chance(density)) rows.push_back(i);
		if (rows.empty()) continue;
		if (r.chance(other)) other_ctl(); // before the SET_MAJOR
		if (!(zeros_sent && j == 0))
			s.streams[0].push_back(wv(1, 0, (xa + j) & 0xffff)); // SET_MAJOR j
		unsigned mid = r.chance(other) ? r.below((unsigned)rows.size()) : ~0u;
		for (unsigned k = 0; k < rows.size(); k++) {
			if (k == mid) other_ctl(); // between two nonzeros of a major
			unsigned i = rows[k];
			uint32_t f = 0;
			if (ft && !seen[i]) {
				f = 1u << 30;
				seen[i] = true;
			}
			// a flagged val of -0 adds onto +0 like any other
			uint16_t v = f && r.chance(5) ? 0x8000 : rand_bf16(r, true);
			s.streams[0].push_back(wv(0, 0, f | i << 16 | v));
		}
		if (zeros_sent && j == 0) s.run_macs.back() += (uint64_t)rows.size() * tp;
		else s.run_macs.push_back((uint64_t)rows.size() * tp);
	}
#ifndef TB_PE_LITE
	// pe's axpy takes the SET_MAJORs in its chain: one run of every MAC, no dead cycle
	if (util) {
		uint64_t all = 0;
		for (uint64_t m : s.run_macs) all += m;
		s.run_macs.assign(1, all);
	}
#endif
	if (util) {
		s.rx_gap_pct = 0;
		s.tx_stall_pct = 0;
		s.measure = true;
	}
	return s;
}

// wgrad: dot over positions, END unblocks the reduction task
static Scenario gen_wgrad(Bench &b, bool util)
{
	TbRng &r = b.rng;
	Scenario s;
	s.kind = util ? "dotutil" : "wgrad";
	unsigned tp = util ? 16 : r.below(12) == 0 ? 0 : 1 + r.below(20);
	unsigned K = util ? 32 : 1 + r.below(16), N = util ? 64 : 1 + r.below(32);
	unsigned xa = r.below(64), db = r.below(256); // Bh elements: words db/2 .. < 1024
	unsigned pb = 4096 + r.below(256);
	bool store = r.chance(40);
	using namespace as;
	// 0: dot; ret   2: SET_MAJOR   5: END (color 6 ctrl)   RR task
	s.imem = { dot(), ret(), wsel(1, 1), alu(0, 1, 1, 0), ret(),
		   wsel(7, 1), 0x1000 | 6 << 9, (uint16_t)pb, block(1, true), ret(),
		   redv(2, store), block(1, false), ret() };
	s.tasks = { { 0, 0x200 | 0 }, { 16, 0x200 | 2 }, { 22, 0x200 | 5 }, { 1, 0x300 | 10 } };
	s.qmap = { { 6, 0 } };
	s.regs[0] = (uint16_t)xa;
	s.regs[2] = (uint16_t)db;
	s.regs[3] = (uint16_t)K;
	s.regs[4] = (uint16_t)N;
	s.regs[5] = (uint16_t)tp;
	s.regs[6] = (uint16_t)pb;
	fill_a_random(b, s, xa / 2, (tp * K + 3) / 2 + 1);
	for (unsigned i = 0; i < (tp * N + db + 3) / 2 + 1; i++)
		s.b_words.push_back({ db / 2 + i, (uint32_t)rand_bf16(r, false) |
							(uint32_t)rand_bf16(r, false) << 16 });
	s.streams.resize(2);
	unsigned count = 0;
#ifdef TB_PE_LITE
	// pe_lite, pe_micro_mt: a SET_MAJOR j before each major; dot ignores val (random here)
	for (unsigned j = 0; j < K; j++) {
		std::vector<unsigned> rows;
		for (unsigned i = 0; i < N; i++)
			if (r.chance(30)) rows.push_back(i);
		if (rows.empty()) continue;
		s.streams[0].push_back(wv(1, 0, j));
		for (unsigned i : rows) s.streams[0].push_back(wv(0, 0, i << 16 | r.below(65536)));
		count += (unsigned)rows.size();
	}
#else
	// majors: 0 a SET_MAJOR j before each major, positions with A offset 0; 1 one SET_MAJOR
	// base, each position's val its major's offset from it (wrapping below 0), so groups
	// take lanes of different majors; 2 as 1 with a new base before some majors
	unsigned mode = util ? 1 : r.below(3), base = 0;
	bool first = true;
	for (unsigned j = 0; j < K; j++) {
		std::vector<unsigned> rows;
		for (unsigned i = 0; i < N; i++)
			if (r.chance(util ? 6 : 30)) rows.push_back(i);
		if (rows.empty()) continue;
		if (mode == 0 || first || (mode == 2 && r.chance(25))) {
			base = mode == 0 ? j : r.below(K + 1);
			s.streams[0].push_back(wv(1, 0, base));
		}
		first = false;
		for (unsigned i : rows)
			s.streams[0].push_back(wv(0, 0, i << 16 | ((j - base) & 0xffffu)));
		count += (unsigned)rows.size();
	}
#endif
	s.streams[0].push_back(wv(1, 6, 2u << 28 | count)); // END
	for (unsigned n = 0; n < count; n++) s.streams[1].push_back(wv(0, 1, rand_f32(r)));
	if (count == 0) s.streams[1].clear();
	if (util) {
		s.rx_gap_pct = 0;
		s.tx_stall_pct = 0;
		s.measure = true;
	}
	return s;
}

// random programs on one queue
struct Prog {
	std::vector<uint16_t> w;
	unsigned vec_ops = 0; // vector-group instructions (each adds to a run's timeout)
};

static void gen_scalar(TbRng &r, Prog &p, unsigned n, bool allow_engine, int loop_reg)
{
	using namespace as;
	auto rdst = [&]() {
		for (;;) {
			unsigned d = r.below(8);
			if (d != 6 && (int)d != loop_reg) return d;
		}
	};
	for (unsigned k = 0; k < n; k++) {
		unsigned c = r.below(allow_engine ? 16 : 9);
		switch (c) {
		case 0: p.w.push_back(0x1000 | rdst() << 9); p.w.push_back((uint16_t)r.u32()); break;
		case 1: p.w.push_back(addi(rdst(), r.below(8), (int)r.below(64) - 32)); break;
		case 2: case 3: p.w.push_back(alu(r.below(8), rdst(), r.below(8), r.below(8))); break;
		case 4: p.w.push_back(wsel(rdst(), r.below(4))); break;
		case 5: { // forward branch over k single-word instructions
			unsigned skip = r.below(4);
			p.w.push_back(br(r.below(2), r.below(8), r.below(8), (int)skip));
			for (unsigned i = 0; i < skip; i++)
				p.w.push_back(r.below(2) ? alu(r.below(8), rdst(), r.below(8), r.below(8))
							 : addi(rdst(), r.below(8), (int)r.below(64) - 32));
			break;
		}
		case 6: p.w.push_back(send(8 + r.below(8), r.below(8), r.below(8), r.below(2))); break;
		case 7: p.w.push_back(nop()); break;
		case 8: p.w.push_back(block(24 + r.below(8), r.below(2))); break;
		case 9: case 10: { // loads and stores anywhere ([2] = 1 with sel 0/1 is vaxpy /
			unsigned sel = r.below(4); // cvt.bh: case 15 makes those, with a short r7)
			p.w.push_back(mem(sel, rdst(), r.below(8), sel >= 2 && r.below(2)));
			break;
		}
		case 11: case 12: { // sendv / fill in the P region
			p.w.push_back(0x1000 | 6 << 9);
			p.w.push_back((uint16_t)(4096 + r.below(200)));
			if (loop_reg != 7) {
				p.w.push_back(0x1000 | 7 << 9);
				p.w.push_back((uint16_t)r.below(12));
			}
			p.w.push_back(c == 11 ? sendv(8 + r.below(8)) : fill());
			break;
		}
		case 13: case 14: // redv of W alone (r7 = 1), sending or storing in the P region
			if (loop_reg == 7) break;
			p.w.push_back(0x1000 | 6 << 9);
			p.w.push_back((uint16_t)(4096 + r.below(200)));
			p.w.push_back(0x1000 | 7 << 9);
			p.w.push_back(1);
			p.w.push_back(redv(8 + r.below(8), r.chance(30)));
			break;
		case 15: { // (TB_VEC) a vector-group instruction over the P region
			if (!TB_VEC || loop_reg == 7) break;
			// x 8: vaxpy, 9: cvt.bh; rt of vfma, vlut, vmac, vdot: any register (the
			// source anywhere in B) or r6
			unsigned x = 1 + r.below(9), d = rdst(), t = r.below(8), rt = r.below(8);
			uint16_t v6 = (uint16_t)(4096 + r.below(200)), v7 = (uint16_t)r.below(12);
			if (x == 2) li(p.w, d, (uint16_t)(4096 + r.below(300)));      // vsum2 output
			else if (x == 4) li(p.w, d, (uint16_t)r.below(64));           // vlut table, bank 0
			else if (x == 3 || x == 5) li(p.w, d, (uint16_t)r.u32());     // cvt.bf A, rsqrt
			if (x == 5) {
				do t = r.below(8); while ((int)t == loop_reg);
				li(p.w, t, (uint16_t)r.below(320));
			}
			if (x == 4 && (!kVlutBf || r.chance(50))) t = 0; // vlut; else vlut.bf into A
			if (x == 3) t = 0;                                // cvt.bf (rs != 0: vlut.a)
			if (x == 2 && (!kVdot2 || r.chance(50))) t = 0;  // vsum2; else vdot2
			if (x == 2) rt = kVsum4 && r.chance(50) ? 1 + r.below(7) : 0; // vsum4, vdot4
			if (x == 3) t = kCpa && r.chance(30) ? 1 + r.below(7) : 0;  // cpa; else cvt.bf
			const bool vm = x == 9 && kVmul && r.chance(30); // vmul: a scale, A at t
			if (vm) {
				li(p.w, d, rand_bf16(r, false));
				t = 1 + r.below(7);
			} else if (x == 9) {
				li(p.w, d, (uint16_t)(8192 + 2 * v6 - 8 + r.below(16))); // Bh near
			}
			li(p.w, 6, v6); // after rd: rd = 7 must not make the count an address
			li(p.w, 7, v7);
			p.w.push_back(x == 8 ? vaxpy(d, t) : vm ? vmul(d, t) : x == 9 ? cvtbh(d)
								    : vop(x, d, t, rt));
			p.vec_ops++;
			break;
		}
		default: break;
		}
	}
}

static void gen_vec_prefix(TbRng &r, Prog &p)
{
	// r1 A base (anywhere), r2 B base in X, r3 A stride, r4 B stride, r5 tokens
	uint16_t v[6] = { 0, (uint16_t)r.u32(), (uint16_t)r.below(256), (uint16_t)r.below(40),
			  (uint16_t)(r.chance(10) ? 0 : 1 + r.below(16)), (uint16_t)r.below(9) };
	for (unsigned k = 1; k <= 5; k++) {
		p.w.push_back((uint16_t)(0x1000 | k << 9));
		p.w.push_back(v[k]);
	}
}

static Scenario gen_rand(Bench &b)
{
	TbRng &r = b.rng;
	using namespace as;
	Scenario s;
	s.kind = "rand";
	Prog p;
	// tid 0 (data color 0): prefix; axpy; ret     tid 1 (data color 1): prefix; dot; ret
	unsigned pc_axpy = 0;
	gen_vec_prefix(r, p);
	p.w.push_back(axpy());
	p.w.push_back(ret());
	unsigned pc_dot = (unsigned)p.w.size();
	gen_vec_prefix(r, p);
	p.w.push_back(dot());
	p.w.push_back(ret());
	// tid 2 (data color 2), tid 16/17 (ctrl colors 0/1): random scalar programs with a loop
	unsigned pcs[3];
	for (unsigned t = 0; t < 3; t++) {
		pcs[t] = (unsigned)p.w.size();
		gen_scalar(r, p, 3 + r.below(10), true, -1);
		if (t > 0 && r.chance(60)) { // an axpy or dot on the control wavelet: no chaining
			gen_vec_prefix(r, p);
			p.w.push_back(r.below(2) ? axpy() : dot());
		}
		if (r.chance(50)) { // a loop
			unsigned lr = r.below(8);
			if (lr == 6) lr = 0;
			p.w.push_back((uint16_t)(0x1000 | lr << 9));
			p.w.push_back((uint16_t)(1 + r.below(4)));
			size_t body0 = p.w.size();
			Prog body;
			for (unsigned i = 0; i < 1 + r.below(4); i++) {
				unsigned d;
				do d = r.below(8); while (d == 6 || d == lr);
				body.w.push_back(r.below(3) ? alu(r.below(8), d, r.below(8), r.below(8))
							  : send(8 + r.below(8), r.below(8), r.below(8), false));
			}
			p.w.insert(p.w.end(), body.w.begin(), body.w.end());
			p.w.push_back(djnz(lr, -(int)(p.w.size() - body0 + 1)));
		}
		if (r.chance(50)) { // a loop closed by a backward branch: count down to a zero register
			unsigned lr = r.below(8), lz;
			if (lr == 6) lr = 0;
			do lz = r.below(8); while (lz == 6 || lz == lr);
			p.w.push_back((uint16_t)(0x1000 | lz << 9));
			p.w.push_back(0);
			p.w.push_back((uint16_t)(0x1000 | lr << 9));
			p.w.push_back((uint16_t)(1 + r.below(4)));
			size_t body0 = p.w.size();
			for (unsigned i = 0; i < 1 + r.below(4); i++) {
				unsigned d;
				do d = r.below(8); while (d == 6 || d == lr || d == lz);
				p.w.push_back(r.below(3) ? alu(r.below(8), d, r.below(8), r.below(8))
							 : send(8 + r.below(8), r.below(8), r.below(8), false));
			}
			p.w.push_back(addi(lr, lr, -1));
			p.w.push_back(br(true, lr, lz, -(int)(p.w.size() - body0 + 1)));
		}
		gen_scalar(r, p, r.below(6), true, -1);
		p.w.push_back(ret());
	}
	if (p.w.size() > 256) p.w.resize(256); // never happens with these sizes
	s.imem = p.w;
	s.tasks = { { 0, (uint16_t)(0x200 | pc_axpy) }, { 1, (uint16_t)(0x200 | pc_dot) },
		    { 2, (uint16_t)(0x200 | pcs[0]) }, { 16, (uint16_t)(0x200 | pcs[1]) },
		    { 17, (uint16_t)(0x200 | pcs[2]) } };
	for (unsigned c = 0; c < 16; c++) s.qmap.push_back({ c, 0 });
	for (unsigned i = 0; i < 8; i++) s.regs[i] = (uint16_t)r.u32();
	s.regs[6] = (uint16_t)(4096 + r.below(64));
	fill_a_random(b, s, 0, 64);
	fill_a_random(b, s, r.below(kAWords / 2), 64);
	for (unsigned i = 0; i < 320; i++)
		s.b_words.push_back({ i, r.chance(50) ? rand_f32(r)
					   : ((uint32_t)rand_bf16(r, false) | (uint32_t)rand_bf16(r, false) << 16) });
	s.streams.resize(1);
	unsigned n = 20 + r.below(80);
	for (unsigned k = 0; k < n; k++) {
		unsigned kind = r.below(10);
		uint32_t payload = r.below(256) << 16 | rand_bf16(r, false);
		if (kind < 4) s.streams[0].push_back(wv(0, 0, payload));
		else if (kind < 6) s.streams[0].push_back(wv(0, 1, payload));
		else if (kind < 7) s.streams[0].push_back(wv(0, 2, payload));
		else if (kind < 8) s.streams[0].push_back(wv(1, r.below(2), not_major(payload)));
		else if (kind < 9) s.streams[0].push_back(wv(0, 5 + r.below(3), payload)); // no task
		else { // bursts for chaining
			unsigned c = r.below(2);
			for (unsigned i = 0; i < 2 + r.below(6); i++)
				s.streams[0].push_back(wv(0, c, r.below(256) << 16 | rand_bf16(r, false)));
		}
	}
	s.tx_stall_pct = r.chance(30) ? 80 : 20;
	s.budget = (uint64_t)p.vec_ops * 2000 * n; // pe_lite: a vsum2 of 11 is ~700 cycles
	return s;
}

#if TB_VEC
// fp32 operands of the vector group: specials and the vlut index extremes
static uint32_t vec_f32(TbRng &r)
{
	uint32_t sg = r.below(2) << 31, m = r.u32() & 0x7fffff;
	switch (r.below(14)) {
	case 0: return sg;                                    // +-0
	case 1: return sg | (1 + r.below(0x7fffff));           // subnormal
	case 2: return sg | 0x7f800000;                        // +-inf
	case 3: return sg | 0x7f800000 | (1 + r.below(0x7fffff)); // NaN
	case 4: return sg | (100 + r.below(15)) << 23 | m;     // below 2^-12: binade 0
	case 5: return sg | (129 + r.below(20)) << 23 | m;     // >= 4: binade 15
	case 6: return sg | (110 + r.below(30)) << 23 | (m & 0x7f0000) | 0x8000; // RNE tie
	case 7: return sg | 0x7f7f8000 | (r.u32() & 0x7fff);   // rounds up to inf (or not)
	case 8: return sg | 0x00800000 | (m & 0x7f0000) | 0x7fff; // smallest normals
	default: return sg | (112 + r.below(20)) << 23 | m;    // the table's range
	}
}

static uint32_t vec_entry(TbRng &r) // a table entry {slope, intercept}
{
	return (uint32_t)rand_bf16(r, false) << 16 | rand_bf16(r, false);
}

// B words [lo, lo + n) (modulo BWords) overlap [t, t + 256)?
static bool b_overlap(unsigned lo, unsigned n, unsigned t)
{
	if (n >= kBWords) return true;
	for (unsigned k = 0; k < n; k++) {
		unsigned a = (lo + k) % kBWords, d = (a + kBWords - t % kBWords) % kBWords;
		if (d < 256) return true;
	}
	return false;
}

static Scenario gen_vec(Bench &b)
{
	TbRng &r = b.rng;
	using namespace as;
	Scenario s;
	s.kind = "vec";
	Prog p;
	// tid 0 (color 0): prefix; axpy; ret    tid 1 (color 1): prefix; dot; ret
	// tid 2 (color 2), 16 (ctrl 0): vector-group sequences ending with r6 back in P
	unsigned pc_axpy = 0;
	gen_vec_prefix(r, p);
	p.w.push_back(axpy());
	p.w.push_back(ret());
	unsigned pc_dot = (unsigned)p.w.size();
	gen_vec_prefix(r, p);
	p.w.push_back(dot());
	p.w.push_back(ret());
	// B: data zones Z0 [256, 760) (bank 0), Z1 [4096, 4600), Z2 [7700, 8192) (bank 1);
	// tables at 1024 (bank 0), 5120 (bank 1), 0xff80 (words 8064-8191 and 0-127)
	static const unsigned zlo[3] = { 256, 4096, 7700 }, zn[3] = { 504, 504, 492 };
	static const unsigned tabs[3] = { 1024, 5120, 0xff80 };
	unsigned pcs[2];
	for (unsigned tk = 0; tk < 2; tk++) {
		pcs[tk] = (unsigned)p.w.size();
		unsigned nops = 1 + r.below(tk ? 3 : 5);
		for (unsigned k = 0; k < nops && p.w.size() < 200; k++) {
			unsigned x = 1 + r.below(9); // 8: vaxpy, 9: cvt.bh
			unsigned z = r.below(3), n, lo;
			unsigned c = r.below(20);
			n = c == 0 ? 0 : c < 12 ? 1 + r.below(8) : c < 18 ? 9 + r.below(200)
			  : c == 18 ? 300 + r.below(700) : 1 + r.below(zn[z]);
			lo = zlo[z] + r.below(zn[z] - (n < zn[z] ? n : zn[z] - 1));
			uint16_t r6 = (uint16_t)lo;
			if (r.chance(15)) { // 16-bit wrap: from 0xffxx into word 0
				r6 = (uint16_t)(0x10000 - 1 - r.below(32));
				if (n > 200) n = 200;
			}
			if ((x == 1 || x == 2 || x == 3) && r.chance(3)) n = 8192 + 1 + r.below(300);
			unsigned rd = r.below(6), rs = r.below(6), rt = 6;
			// a B source range for r6's destination of n words: in place (r6 itself or
			// another register holding it), overlapping by a few words, or disjoint
			auto src = [&]() -> uint16_t {
				unsigned c2 = r.below(8);
				if (c2 < 2) return r6;
				if (c2 < 5) return (uint16_t)(r6 + (int)r.below(9) - 4);
				unsigned z2 = r.below(3);
				return (uint16_t)(zlo[z2] + r.below(zn[z2] - (n < zn[z2] ? n : zn[z2] - 1)));
			};
			// an A element address: anywhere, or wrapping past AWords or 0xffff
			auto aadr = [&]() -> uint16_t {
				unsigned c2 = r.below(4);
				if (c2 == 0) return (uint16_t)(kAWords - 1 - r.below(16));
				if (c2 == 1) return (uint16_t)(0x10000 - 1 - r.below(16));
				return (uint16_t)r.u32();
			};
			// rt (and vmac's rd): r6, or a register in 0..5 other than the taken ones
			auto pick_src_reg = [&](unsigned a, unsigned b2) -> unsigned {
				if (r.chance(25)) return 6;
				unsigned g;
				do g = r.below(6); while (g == a || g == b2);
				return g;
			};
			switch (x) {
			case 1: // vfma: scale, shift
				li(p.w, rd, rand_bf16(r, false));
				if (rs != rd) li(p.w, rs, rand_bf16(r, false));
				rt = pick_src_reg(rd, rs);
				if (rt != 6) li(p.w, rt, src());
				break;
			case 6: // vmac: c (rd) and x (rt) sources, the same register sometimes
				rs = r.below(6);
				li(p.w, rs, aadr());
				rd = pick_src_reg(rs, 7);
				if (rd != 6) li(p.w, rd, src());
				rt = r.chance(15) ? rd : pick_src_reg(rs, rd);
				if (rt != 6 && rt != rd) li(p.w, rt, src());
				break;
			case 7: // vdot: the sum anywhere (in the source range too)
				rs = r.below(6);
				li(p.w, rs, aadr());
				rt = pick_src_reg(rs, 7);
				if (rt != 6) li(p.w, rt, src());
				do rd = r.below(6); while (rd == rs || rd == rt);
				li(p.w, rd, r.chance(30) ? (uint16_t)(r6 + r.below(n + 1)) :
					    (uint16_t)(zlo[r.below(3)] + r.below(400)));
				break;
			case 8: // vaxpy: bf16 scale, A source
				do rs = r.below(6); while (rs == rd);
				li(p.w, rd, rand_bf16(r, false));
				li(p.w, rs, aadr());
				break;
			case 9: { // cvt.bh: Bh elements over the source range (2 r6 + k), or elsewhere;
				  // vmul (pe): a bf16 scale, the A operand anywhere
				rs = 0;
				if (kVmul && r.chance(40)) {
					li(p.w, rd, rand_bf16(r, false));
					do rs = 1 + r.below(5); while (rs == rd);
					li(p.w, rs, aadr());
					break;
				}
				unsigned c2 = r.below(4);
				uint16_t e = c2 == 0 ? (uint16_t)(2 * r6 + r.below(8)) :
					     c2 == 1 ? (uint16_t)(2 * r6 - 1 - r.below(2 * n + 8)) :
					     (uint16_t)(2 * (zlo[r.below(3)] + r.below(400)) + r.below(2));
				li(p.w, rd, e);
				break;
			}
			case 2: // vsum2: results anywhere (also 0xffff: the second wraps to 0);
				// vdot2 (pe): the A operand at rs, anywhere
				li(p.w, rd, r.chance(10) ? 0xffff : (uint16_t)(zlo[r.below(3)] +
									 r.below(400)));
				rs = 0;
				if (kVdot2 && r.chance(50)) {
					do rs = 1 + r.below(5); while (rs == rd);
					li(p.w, rs, aadr());
				}
				// vsum4 / vdot4 (pe): rt != 0, four chains a sum
				rt = as::kVsum4 && r.chance(50) ? 1 + r.below(7) : 0;
				break;
			case 3: // cvt.bf: A element, odd or even, near the 16-bit end too; with rs != 0
				// (pe): vlut.a (rd != 0) or cpa (rd = 0: A words from rs's, anywhere)
				if (kVlutA && r.chance(50)) {
					if (rd == 0) rd = 1 + r.below(5); // vlut.a: rd is the table's
					// vlut.a (pe): a table anywhere in B (B is not written), bf16
					// into A at rs from A at rt: in place, a few elements either side
					// (the interlock on A words in flight), or anywhere
					li(p.w, rd, (uint16_t)tabs[r.below(3)]);
					do rs = 1 + r.below(5); while (rs == rd);
					uint16_t av = aadr();
					li(p.w, rs, av);
					unsigned c2 = r.below(4);
					if (c2 == 0) {
						rt = rs;
					} else {
						do rt = r.below(6); while (rt == rd || rt == rs);
						li(p.w, rt, c2 == 1 ? (uint16_t)(av + (int)r.below(9) - 4)
								    : aadr());
					}
					if (n > 8192) n += 8192;
					break;
				}
				if (kCpa && r.chance(30)) {
					rd = 0;
					rt = 0;
					rs = 1 + r.below(5);
					li(p.w, rs, aadr());
					if (n > 8192) n += 8192;
					break;
				}
				rs = 0;
				li(p.w, rd, r.chance(15) ? (uint16_t)(0x10000 - 1 - r.below(16))
							 : (uint16_t)r.u32());
				if (n > 8192) n += 8192; // past AWords: A wraps
				break;
			case 4: { // vlut: a table not in the range
				unsigned t = tabs[r.below(3)];
				if (b_overlap(r6, n, t)) {
					r6 = (uint16_t)(zlo[1] + r.below(100));
					n = n > 300 ? 300 : n;
					t = b_overlap(r6, n, 1024) ? 5120 : 1024;
					if (b_overlap(r6, n, t)) n = 0;
				}
				li(p.w, rd, (uint16_t)t);
				rt = pick_src_reg(rd, 7);
				if (rt != 6) { // a source range clear of the table too
					uint16_t sv = src();
					if (b_overlap(sv, n, t)) sv = r6;
					li(p.w, rt, sv);
				}
				// vlut.bf (pe): bf16 into A at rs (a register of its own, or rd's,
				// rt's, r6's or r7's value); pe_lite has only vlut (rs = 0)
				rs = 0;
				if (kVlutBf && r.chance(50)) {
					rs = 1 + r.below(7);
					if (rs != rd && rs != rt && rs < 6) li(p.w, rs, aadr());
				}
				break;
			}
			case 5: // rsqrt: rd may be r6 or r7 (the model writes it too)
				rd = r.below(8);
				li(p.w, rs, (uint16_t)(zlo[r.below(3)] + r.below(400)));
				break;
			default: break;
			}
			li(p.w, 6, r6);
			if (!(x == 5 && rd == 7)) li(p.w, 7, (uint16_t)n);
			p.w.push_back(x == 8 ? vaxpy(rd, rs) : x == 9 ? (rs ? vmul(rd, rs) : cvtbh(rd))
							       : vop(x, rd, rs, rt));
			s.budget += 150ull * n + 500; // pe_lite: vsum2 passes 4 times
		}
		li(p.w, 6, (uint16_t)(4096 + r.below(64))); // dot's outputs, clear of its inputs
		p.w.push_back(ret());
	}
	if (p.w.size() > 256) p.w.resize(256); // never: at most ~215 words
	s.imem = p.w;
	s.tasks = { { 0, (uint16_t)(0x200 | pc_axpy) }, { 1, (uint16_t)(0x200 | pc_dot) },
		    { 2, (uint16_t)(0x200 | pcs[0]) }, { 16, (uint16_t)(0x200 | pcs[1]) } };
	for (unsigned c = 0; c < 16; c++) s.qmap.push_back({ c, 0 });
	for (unsigned i = 0; i < 8; i++) s.regs[i] = (uint16_t)r.u32();
	s.regs[6] = (uint16_t)(4096 + r.below(64));
	fill_a_random(b, s, 0, 64);
	for (unsigned z = 0; z < 3; z++)
		for (unsigned i = 0; i < zn[z]; i++) s.b_words.push_back({ zlo[z] + i, vec_f32(r) });
	for (unsigned i = 0; i < 256; i++) s.b_words.push_back({ i, r.chance(50) ? vec_entry(r)
		: ((uint32_t)rand_bf16(r, false) | (uint32_t)rand_bf16(r, false) << 16) });
	for (unsigned t = 0; t < 3; t++)
		for (unsigned i = 0; i < 256; i++)
			s.b_words.push_back({ (tabs[t] + i) % kBWords, vec_entry(r) });
	s.streams.resize(1);
	unsigned nev = 4 + r.below(12);
	for (unsigned k = 0; k < nev; k++) {
		unsigned kind = r.below(6);
		if (kind < 2) { // an axpy or dot burst (chaining)
			unsigned c = kind;
			for (unsigned i = 0; i < 1 + r.below(5); i++)
				s.streams[0].push_back(wv(0, c, r.below(256) << 16 | rand_bf16(r, false)));
		} else if (kind < 5) {
			s.streams[0].push_back(wv(0, 2, r.u32()));
		} else {
			s.streams[0].push_back(wv(1, 0, not_major(r.u32())));
		}
	}
	s.tx_stall_pct = 20;
	s.budget *= nev; // a task runs once per wavelet
	return s;
}
#endif

#if TB_VEC
static Scenario gen_pairs(Bench &b)
{
	TbRng &r = b.rng;
	using namespace as;
	Scenario s;
	s.kind = "pairs";
	Prog p;
	// B zones of 64 words: bank 0, across the bank boundary (4096), bank 1, the 16-bit wrap
	// (0xffe0: words 8160.. and 0..)
	static const unsigned zb[4] = { 200, 4064, 6000, 0xffe0 };
	uint16_t prev = (uint16_t)(zb[0] + 20);
	unsigned nops = 3 + r.below(10);
	for (unsigned k = 0; k < nops && p.w.size() < 200; k++) {
		unsigned x = r.below(kVmul ? 7 : 5); // 0 vfma, 1 vaxpy, 2 vmac, 3 cvt.bf, 4 cvt.bh,
						       // 5 vmul, 6 cpa (pe)
		unsigned n = r.chance(25) ? r.below(3) : r.chance(80) ? r.below(10) : 10 + r.below(30);
		// the destination: near the last one's (its writes may be in flight), or a zone's
		uint16_t r6 = r.chance(50) ? (uint16_t)(prev + (int)r.below(9) - 4)
				       : (uint16_t)(zb[r.below(4)] + 4 + r.below(16));
		auto near = [&]() { return (uint16_t)(r6 + (int)r.below(7) - 3); };
		// a source in the other bank (vmac's x and c apart) or anywhere in a zone
		auto far = [&]() {
			return r.chance(50) ? (uint16_t)(r6 ^ 4096) : (uint16_t)(zb[r.below(4)] + r.below(24));
		};
		auto aadr = [&]() -> uint16_t {
			uint16_t a = r.chance(20) ? (uint16_t)(0x10000 - 1 - r.below(8)) : (uint16_t)r.below(120);
			return r.chance(50) ? (uint16_t)(a | 1) : (uint16_t)(a & ~1u);
		};
		switch (x) {
		case 0: // vfma rd, rs, rt: source in place (rt = r6), near or far
			li(p.w, 1, rand_bf16(r, false));
			li(p.w, 2, rand_bf16(r, false));
			li(p.w, 3, r.chance(70) ? near() : far());
			p.w.push_back(vop(1, 1, 2, r.chance(20) ? 6 : 3));
			break;
		case 1: // vaxpy rd, rs
			li(p.w, 1, rand_bf16(r, false));
			li(p.w, 2, aadr());
			p.w.push_back(vaxpy(1, 2));
			break;
		case 2: { // vmac rd, rs, rt: c (rd) and x (rt) near, far or in place
			li(p.w, 2, aadr());
			li(p.w, 1, r.chance(50) ? near() : far());
			unsigned rt = r.chance(15) ? 1 : r.chance(15) ? 6 : 3;
			if (rt == 3) li(p.w, 3, r.chance(50) ? near() : far());
			p.w.push_back(vop(6, 1, 2, rt));
			break;
		}
		case 3: // cvt.bf rd: an A element, odd or even
			li(p.w, 1, aadr());
			break;
		case 5: // vmul rd, rs: odd and even A elements, the writes of the last one in flight
			li(p.w, 1, rand_bf16(r, false));
			li(p.w, 2, aadr());
			p.w.push_back(vmul(1, 2));
			break;
		case 6: // cpa rs: A words after the MAC writes in flight drain
			li(p.w, 2, aadr());
			p.w.push_back(vop(3, 0, 2));
			break;
		default: // cvt.bh rd: Bh elements over the source (2 r6 + k) or elsewhere
			li(p.w, 1, r.chance(60) ? (uint16_t)(2 * r6 + (int)r.below(13) - 6)
						: (uint16_t)(2 * (zb[r.below(4)] + r.below(24)) + r.below(2)));
			break;
		}
		if (x == 3 || x == 4) p.w.push_back(x == 3 ? vop(3, 1, 0) : cvtbh(1));
		// r6 and r7 are set before the instruction: move it behind them
		uint16_t ins = p.w.back();
		p.w.pop_back();
		li(p.w, 6, r6);
		li(p.w, 7, (uint16_t)n);
		p.w.push_back(ins);
		prev = r6;
		s.budget += 150ull * n + 500;
	}
	p.w.push_back(ret());
	s.imem = p.w;
	s.tasks = { { 2, (uint16_t)(0x200 | 0) } };
	for (unsigned c = 0; c < 16; c++) s.qmap.push_back({ c, 0 });
	for (unsigned i = 0; i < 8; i++) s.regs[i] = (uint16_t)r.u32();
	fill_a_random(b, s, 0, 64);
	for (unsigned z = 0; z < 4; z++)
		for (unsigned i = 0; i < 64; i++)
			s.b_words.push_back({ (zb[z] + i) % kBWords, vec_f32(r) });
	s.streams.resize(1);
	unsigned nev = 1 + r.below(3);
	for (unsigned k = 0; k < nev; k++) s.streams[0].push_back(wv(0, 2, r.u32()));
	s.tx_stall_pct = 20;
	s.budget *= nev;
	return s;
}

// ----------------------------------------------------------------------------- fw programs
// --fw=DIR: fw/vec_ln_fwd.s, vec_ln_bwd.s, vec_gelu.s, vec_fc.s and, on pe, vec_fc_bf.s
// (DIR/NAME.bin, the assembler's images) on the DUT against the model, with tests/models/test_pe_model.c's
// parameter blocks and layouts, the layernorms and vec_fc's entries with the resident
// step's banks (the rows in bank 0; sums, tables, bias, ones, zeros and scratch in bank 1;
// vec_gelu all in bank 0); prints each program's task-busy cycles per token.
struct FwImage {
	std::vector<uint16_t> imem;
	std::vector<std::pair<std::string, uint16_t>> syms;
};

static bool fw_load(FwImage &f, const std::string &path)
{
	FILE *fp = fopen(path.c_str(), "rb");
	if (!fp) {
		printf("FAIL fw: cannot open %s (make fw builds it)\n", path.c_str());
		return false;
	}
	std::vector<uint8_t> buf(65536);
	size_t len = fread(buf.data(), 1, buf.size(), fp);
	fclose(fp);
	auto u16 = [&](size_t o) { return (uint16_t)(buf[o] | buf[o + 1] << 8); };
	if (len < 16 || memcmp(buf.data(), "CSFW", 4) || u16(4) != 1) {
		printf("FAIL fw: %s: not a version 1 image\n", path.c_str());
		return false;
	}
	unsigned ni = u16(6), ns = u16(8);
	size_t o = 12;
	if (len < o + ns * 28 + ni * 2 + 4) {
		printf("FAIL fw: %s: truncated\n", path.c_str());
		return false;
	}
	for (unsigned k = 0; k < ns; k++, o += 28)
		f.syms.push_back({ std::string((const char *)&buf[o], strnlen((const char *)&buf[o], 24)),
				   u16(o + 24) });
	for (unsigned k = 0; k < ni; k++, o += 2) f.imem.push_back(u16(o));
	return true;
}

static int fw_entry(const FwImage &f, const char *name)
{
	for (auto &sy : f.syms)
		if (sy.first == name) return sy.second;
	printf("FAIL fw: no entry %s\n", name);
	return -1;
}

// test_pe_model.c's rand_act: |x| in [0, 8), either sign, plus an offset
static uint32_t fw_act(TbRng &r, float offset)
{
	uint64_t v = r.next();
	float f = (float)((double)(v >> 40) / (double)(1ull << 24)) * 8.0f;
	return nm_f32_bits((v & 1 ? -f : f) + offset);
}

// a scenario running entry `pc` of image f once on the block at B[p]; a and b hold the
// initial contents of A (elements) and B (words) over their length
static Scenario fw_scenario(const FwImage &f, int pc, const std::vector<uint16_t> &a,
			    const std::vector<uint32_t> &bw, uint16_t p)
{
	Scenario s;
	s.kind = "fw";
	s.imem = f.imem;
	s.tasks = { { 3, (uint16_t)(0x200 | pc) } };
	for (unsigned c = 0; c < 16; c++) s.qmap.push_back({ c, 0 });
	for (size_t w = 0; w < a.size() / 2; w++)
		s.a_words.push_back({ (uint32_t)w, (uint32_t)a[2 * w] | (uint32_t)a[2 * w + 1] << 16 });
	for (size_t w = 0; w < bw.size(); w++) s.b_words.push_back({ (uint32_t)w, bw[w] });
	s.streams.resize(1);
	s.streams[0].push_back(wv(0, 3, p));
	s.budget = 20000000;
	s.acfg_word = 6144; // elements 12288 .. 16383: the programs' A lies below 2048
	s.acfg_n = 2048;
	return s;
}

static int fw_main(Bench &b, const std::string &dir, uint64_t n, uint64_t seed)
{
	FwImage lf, lb, ge, fc, fcb, lbd, lfd;
	if (!fw_load(lf, dir + "/vec_ln_fwd.bin") || !fw_load(lb, dir + "/vec_ln_bwd.bin") ||
	    !fw_load(ge, dir + "/vec_gelu.bin") || !fw_load(fc, dir + "/vec_fc.bin") ||
	    (as::kVlutBf && !fw_load(fcb, dir + "/vec_fc_bf.bin")) ||
	    (as::kVdot2 && !fw_load(lbd, dir + "/vec_ln_bwd_d.bin")) ||
	    (as::kVsum4 && !fw_load(lfd, dir + "/vec_ln_fwd_d.bin")))
		return tb_result(0, 1);
	int pc_lf = fw_entry(lf, "ln_fwd"), pc_lb = fw_entry(lb, "ln_bwd");
	int pc_gf = fw_entry(ge, "gelu_fwd"), pc_gb = fw_entry(ge, "gelu_bwd");
	int pc_fs = fw_entry(fc, "fc_gelu_sh"), pc_fw = fw_entry(fc, "fc_gelu_wd");
	int pc_fb = fw_entry(fc, "fc_gelu_bwd");
	int pc_bs = as::kVlutBf ? fw_entry(fcb, "fc_gelu_sh") : 0;
	int pc_bw = as::kVlutBf ? fw_entry(fcb, "fc_gelu_wd") : 0;
	int pc_ld = as::kVdot2 ? fw_entry(lbd, "ln_bwd") : 0;
	int pc_lfd = as::kVsum4 ? fw_entry(lfd, "ln_fwd") : 0;
	if (pc_lf < 0 || pc_lb < 0 || pc_gf < 0 || pc_gb < 0 || pc_fs < 0 || pc_fw < 0 ||
	    pc_fb < 0 || pc_bs < 0 || pc_bw < 0 || pc_ld < 0 || pc_lfd < 0)
		return tb_result(0, 1);
	TbRng &r = b.rng;
	unsigned passed = 0, scen = 0;
	// per program: busy cycles and tokens of the runs at C (w) = 64 (7, 8: vec_fc_bf, 9:
	// vec_ln_bwd_d, 10: vec_ln_fwd_d; pe)
	const unsigned NPROG = as::kVlutBf ? 11 : 7;
	uint64_t cyc[11] = { 0 }, tok[11] = { 0 };
	static const char *const names[11] = { "vec_ln_fwd", "vec_ln_bwd", "vec_gelu fwd",
					       "vec_gelu bwd", "vec_fc fc_gelu_sh",
					       "vec_fc fc_gelu_wd", "vec_fc fc_gelu_bwd",
					       "vec_fc_bf fc_gelu_sh", "vec_fc_bf fc_gelu_wd",
					       "vec_ln_bwd_d", "vec_ln_fwd_d" };
	for (uint64_t i = 0; i < n; i++) {
		unsigned prog = (unsigned)(i % NPROG);
		const bool ld = prog == 9; // vec_ln_bwd_d: vec_ln_bwd's runs
		if (ld) prog = 1;
		const bool lfd4 = prog == 10; // vec_ln_fwd_d: vec_ln_fwd's runs
		if (lfd4) prog = 0;
		unsigned fk = prog >= 7 ? prog - 3 : prog; // vec_fc's entry (4 sh, 5 wd, 6 bwd)
		std::vector<uint16_t> a(2048);
		std::vector<uint32_t> bw(prog == 0 || prog == 1 || prog >= 4 ? 6144 : 2048);
		for (auto &v : a) v = (uint16_t)r.u32();
		for (auto &v : bw) v = rand_f32(r);
		Scenario s;
		unsigned c = 64, ntok = 1 + r.below(4);
		if (i < NPROG) ntok = 4; // the measured runs: C = 64, 4 tokens
		if (prog == 0) { // ln_fwd: test_ln_fwd's layout
			static const unsigned cs[] = { 64, 48, 128 };
			if (i >= NPROG) c = cs[r.below(3)]; // the measured runs (0, 10) at C = 64
			// S in the other bank than BE (4096..): the affine's vmac reads both at once
			const uint16_t X = 0, BE = 1000, S = 5296, T = 1400, P = 1900;
			const uint16_t G = 0, Y = 128, Z = 512, R = 900, AM = 1000;
			float offset = r.chance(50) ? 3.0f : 0.0f;
			for (unsigned k = 0; k < ntok * c; k++) bw[X + k] = fw_act(r, offset);
			for (unsigned j = 0; j < c; j++) {
				a[G + j] = nm_bf16_from_f32(0.5f + (float)r.below(1000) / 1000.0f);
				bw[BE + j] = nm_f32_bits((float)((int)r.below(200) - 100) / 400.0f);
			}
			uint16_t inv_c = nm_bf16_from_f32(1.0f / (float)c), eps = nm_bf16_from_f32(1e-5f);
			const uint16_t par[13] = { (uint16_t)c, G, BE, S, T, AM, inv_c, eps, X, Y, Z, R,
						   (uint16_t)ntok };
			for (int k = 0; k < 13; k++) bw[P + k] = par[k];
			s = fw_scenario(lfd4 ? lfd : lf, lfd4 ? pc_lfd : pc_lf, a, bw, P);
			if (lfd4) prog = 10;
		} else if (prog == 1) { // ln_bwd: test_ln_bwd's layout, z and r from nm_ln_fwd_bits
			static const unsigned cs[] = { 64, 32, 96 };
			if (i >= NPROG) c = cs[r.below(3)]; // the measured runs (1, 9) at C = 64
			// dy and dx in bank 0, the sums, zeros and scratch in bank 1 (4096..): every
			// vmac reads its two B operands in one cycle, as in the resident step
			const uint16_t DY = 0, DX = 500, DG = 5096, DB = 5196, S = 5296, T = 1400,
				       ZERO = 5596, P = 1900;
			const uint16_t G = 0, ONES = 100, Z = 200, R = 700, AM = 800;
			std::vector<uint32_t> x(ntok * c), zero(c, 0);
			float offset = r.chance(50) ? -2.0f : 0.0f;
			for (unsigned k = 0; k < ntok * c; k++) {
				x[k] = fw_act(r, offset);
				bw[DY + k] = fw_act(r, 0.0f);
				bw[DX + k] = fw_act(r, 0.0f);
			}
			for (unsigned j = 0; j < c; j++) {
				a[G + j] = nm_bf16_from_f32(0.5f + (float)r.below(1000) / 1000.0f);
				a[ONES + j] = 0x3f80;
				bw[DG + j] = fw_act(r, 0.0f);
				bw[DB + j] = fw_act(r, 0.0f);
			}
			uint16_t inv_c = nm_bf16_from_f32(1.0f / (float)c), eps = nm_bf16_from_f32(1e-5f);
			for (unsigned t = 0; t < ntok; t++) {
				std::vector<uint16_t> y(c);
				nm_ln_fwd_bits(y.data(), &a[Z + t * c], &a[R + t], &x[t * c], &a[G],
					       zero.data(), c, inv_c, eps);
			}
			const uint16_t par[15] = { (uint16_t)c, G, ONES, S, T, AM, inv_c, ZERO, DY, Z, R,
						   DX, DG, DB, (uint16_t)ntok };
			for (int k = 0; k < 15; k++) bw[P + k] = par[k];
			s = fw_scenario(ld ? lbd : lb, ld ? pc_ld : pc_lb, a, bw, P);
			if (ld) prog = 9;
		} else if (prog >= 4) { // vec_fc: the rows in bank 0, the rest in bank 1 (4096..)
			prog = fk;
			if (i >= NPROG) c = 32 + 32 * r.below(2);
			const uint16_t IN = 0, TG = 4096, TD = 4352, S = 4608, BV = 4800, ZERO = 4900,
				       P = 5000;
			const uint16_t OUT = 0, D = 256, ST = 512, ONES = 768;
			for (unsigned k = 0; k < ntok * c; k++)
				bw[IN + k] = k % 17 ? fw_act(r, -1.0f) : rand_f32(r);
			nm_gelu_table(&bw[TG], 0);
			nm_gelu_table(&bw[TD], 1);
			for (unsigned j = 0; j < c; j++) {
				a[ONES + j] = 0x3f80;
				if (prog == 5) {
					bw[BV + j] = 0x3f800000u;
					bw[ZERO + j] = 0;
				}
			}
			int pc = fk != (unsigned)(i % NPROG) ? (fk == 4 ? pc_bs : pc_bw)
				 : prog == 4 ? pc_fs : prog == 5 ? pc_fw : pc_fb;
			uint16_t par[13] = { (uint16_t)c, (uint16_t)ntok, TG, TD, S, IN, OUT, 0xffff, 0,
					     ONES, BV, ZERO, ST };
			if (prog == 5) {
				par[7] = ST;
				par[8] = 1;
				for (unsigned k = 0; k < ntok * c; k++)
					a[ST + k] = nm_bf16_from_bits(fw_act(r, -1.0f));
			} else if (prog == 6) {
				par[6] = ST;
				par[7] = D;
				par[12] = 2 * IN;
				for (unsigned k = 0; k < ntok * c; k++) bw[IN + k] = fw_act(r, 0.0f);
			}
			for (int k = 0; k < 13; k++) bw[P + k] = par[k];
			prog = (unsigned)(i % NPROG);
			s = fw_scenario(prog >= 7 ? fcb : fc, pc, a, bw, P);
		} else { // gelu_fwd / gelu_bwd: test_gelu's layout
			if (i >= 4) c = 64 + 32 * r.below(2);
			const uint16_t IN = 0, TG = 1024, TD = 1280, S = 1600, P = 1900, D = 400;
			for (unsigned k = 0; k < ntok * c; k++)
				bw[IN + k] = k % 17 ? fw_act(r, -1.0f) : rand_f32(r);
			if (prog == 2) {
				nm_gelu_table(&bw[TG], 0);
				nm_gelu_table(&bw[TD], 1);
				const uint16_t par[8] = { (uint16_t)c, (uint16_t)ntok, TG, TD, S, IN, 0, D };
				for (int k = 0; k < 8; k++) bw[P + k] = par[k];
				s = fw_scenario(ge, pc_gf, a, bw, P);
			} else { // the stash d as gelu_fwd leaves it
				std::vector<uint32_t> pre(ntok * c);
				for (auto &v : pre) v = fw_act(r, -1.0f);
				std::vector<uint32_t> tg(256), td(256);
				nm_gelu_table(tg.data(), 0);
				nm_gelu_table(td.data(), 1);
				std::vector<uint16_t> h(ntok * c);
				nm_gelu_fwd_bits(h.data(), &a[D], pre.data(), ntok * c, tg.data(), td.data());
				const uint16_t par[8] = { (uint16_t)c, (uint16_t)ntok, 0, 0, S, IN, 200, D };
				for (int k = 0; k < 8; k++) bw[P + k] = par[k];
				s = fw_scenario(ge, pc_gb, a, bw, P);
			}
		}
		unsigned before = b.failed;
		b.reset();
		b.setup(s);
		if (b.run(s, (200000 + s.budget) * TB_SLOW)) b.compare(s.kind);
		scen++;
		if (b.failed != before) {
			printf("fw run %" PRIu64 " (%s, C %u, %u tokens) failed; replay with --seed=%" PRIu64
			       "\n", i, names[prog], c, ntok, seed);
			break;
		}
		passed++;
		if (i < NPROG) {
			cyc[prog] += b.busy;
			tok[prog] += ntok;
		}
	}
	for (unsigned k = 0; k < NPROG; k++)
		if (tok[k])
			printf("%s: %.0f task-busy cycles per token (C = 64, %" PRIu64 " tokens, one task)\n",
			       names[k], (double)cyc[k] / (double)tok[k], tok[k]);
	printf("config writes of A during the runs: %" PRIu64 " asked, %" PRIu64 " granted, %" PRIu64
	       " of them while the PE was busy\n", b.acfg_asked, b.acfg_done, b.acfg_busy);
	printf("tb_pe fw: %u runs, %u passed\n", scen, passed);
	return tb_result(passed, scen - passed);
}
#endif

int main(int argc, char **argv)
{
	TbArgs args(argc, argv, 40);
	VerilatedContext ctx;
	ctx.commandArgs(argc, argv);
	Bench b(&ctx, args.seed);
	b.reset();
#if TB_VEC
	for (int k = 1; k < argc; k++)
		if (!strncmp(argv[k], "--fw=", 5)) return fw_main(b, argv[k] + 5, args.n, args.seed);
#endif
	// --util-once: the util scenario (a long gap-free forward stream, measured) at 0 only;
	// without it also at every 16th, where it otherwise takes kind 0's other scenarios
	bool util_once = false;
	for (int k = 1; k < argc; k++)
		if (!strcmp(argv[k], "--util-once")) util_once = true;
	unsigned passed = 0, scen = 0;
	uint64_t n = args.n;
	for (uint64_t i = 0; i < n; i++) {
		Scenario s;
		unsigned kind = (unsigned)(i % 4);
		bool util = i % 16 == 0 && !util_once;
		if (i == 0) s = gen_fwd(b, true);
		else if (kind == 1) s = gen_fwd(b, false);
		else if (kind == 2) s = i == 2 ? gen_wgrad(b, true) : gen_wgrad(b, false);
		else if (kind == 3) s = gen_rand(b);
#if TB_VEC
		else s = util ? gen_fwd(b, true) : i % 8 == 4 ? gen_pairs(b) : gen_vec(b);
#else
		else s = util ? gen_fwd(b, true) : gen_rand(b);
#endif
		unsigned before = b.failed;
		b.reset();
		b.setup(s);
#ifdef TB_BACKDOOR
		b.full_port = i + 1 == n;
#endif
		size_t nw = 0;
		for (auto &q : s.streams) nw += q.size();
		if (b.run(s, (200000 + nw * 2000 + s.budget) * TB_SLOW)) b.compare(s.kind);
		scen++;
		if (b.failed == before) passed++;
		else {
			printf("scenario %" PRIu64 " (%s) failed; replay with --seed=%" PRIu64 "\n", i,
			       s.kind, args.seed);
			if (getenv("TB_DEBUG")) { // the program, for a disassembly by hand
				for (size_t k = 0; k < s.imem.size(); k++)
					printf("imem %zu %04x\n", k, s.imem[k]);
				for (auto &q : s.streams)
					for (uint64_t w : q) printf("wavelet %09" PRIx64 "\n", w);
			}
			break;
		}
	}
	if (b.util_cycles)
		printf("axpy utilization (Tp=16): %.2f%% MAC-busy over %" PRIu64 " cycles\n",
		       100.0 * (double)b.mac_cycles / (double)b.util_cycles, b.util_cycles);
	if (b.dot_util_cycles)
#ifdef TB_PE_LITE
		printf("dot utilization (Tp=16, groups cut by runs): %.2f%% MAC-busy over %" PRIu64
#else
		printf("dot utilization (Tp=16, ~4 positions a major, groups across majors): "
		       "%.2f%% MAC-busy over %" PRIu64
#endif
		       " cycles\n", 100.0 * (double)b.dot_mac_cycles / (double)b.dot_util_cycles,
		       b.dot_util_cycles);
	printf("config writes of A during the runs: %" PRIu64 " asked, %" PRIu64 " granted, %" PRIu64
	       " of them while the PE was busy\n", b.acfg_asked, b.acfg_done, b.acfg_busy);
	printf("tb_pe: %u scenarios, %u passed, %" PRIu64 " cycles; %" PRIu64 " wavelets in, %" PRIu64
	       " sent, %" PRIu64 " MACs, %" PRIu64 " dropped (no task)\n",
	       scen, passed, b.cycle, b.tot_rx, b.tot_sent, b.tot_macs, b.tot_drop);
	return tb_result(passed, scen - passed);
}
