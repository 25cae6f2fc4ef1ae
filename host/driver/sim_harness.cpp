// sim_harness.cpp - the thin C ABI around one Verilated mesh_top (see sim_harness.h).
// Built per mesh shape into a shared object by host/driver/sim_build.sh; not part of
// libcshost.a. C++17, single-threaded model.
#include "sim_harness.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <new>
#include <type_traits>
#include <vector>

#include "Vmesh_top.h"
#include "verilated.h"
#ifdef SIMH_FST
#include "verilated_fst_c.h"
#endif

#if !defined(SIMH_ROWS) || !defined(SIMH_PE)
#error "SIMH_ROWS/SIMH_COLS/SIMH_AWORDS/SIMH_BWORDS/SIMH_PE come from the build"
#endif

struct simh {
	VerilatedContext ctx;
	Vmesh_top *top;
	std::deque<uint32_t> rsp;
	simh_stats st;
	bool tracing;
	std::vector<uint64_t> trace; // per cycle: bit 32 = command word offered, 31:0 the word
#ifdef SIMH_FST
	// waveform (a build with --trace-fst, used when CSD_SIM_FST names a file): the first
	// fst_cycles cycles (CSD_SIM_FST_CYCLES; unset or 0: all)
	VerilatedFstC *fst = nullptr;
	uint64_t fst_cycles = 0;
#endif
};

namespace {
simh *g_last; // the most recent instance, for simh_replay_last (benchmarks only)
}

namespace {

template <typename T> uint64_t busy_count(const T &v)
{
	if constexpr (std::is_integral_v<T>) {
		return (uint64_t)__builtin_popcountll((unsigned long long)v);
	} else {
		uint64_t n = 0;
		for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
			n += (uint64_t)__builtin_popcount(v[i]);
		return n;
	}
}

// One clock cycle. Inputs are set by the caller; returns whether the offered command word
// was taken. Response words are queued.
inline bool tick(simh *h, bool offer, uint32_t word)
{
	Vmesh_top *t = h->top;
	if (h->tracing)
		h->trace.push_back((uint64_t)offer << 32 | word);
	t->cmd_valid_i = offer;
	t->cmd_data_i = word;
	t->rsp_ready_i = 1;
	t->clk_i = 0;
	t->eval();
#ifdef SIMH_FST
	bool dump = h->fst && (!h->fst_cycles || h->st.cycles < h->fst_cycles);
	if (dump)
		h->fst->dump(2 * h->st.cycles);
#endif
	bool take = offer && t->cmd_ready_o;
	if (t->rsp_valid_o) {
		h->rsp.push_back(t->rsp_data_o);
		h->st.rsp_words++;
	}
	uint64_t busy = busy_count(t->mac_busy_o);
	h->st.mac_busy += busy;
	if (t->stream_o) {
		h->st.stream_cycles++;
		h->st.stream_mac += busy;
	}
	t->clk_i = 1;
	t->eval();
#ifdef SIMH_FST
	if (dump)
		h->fst->dump(2 * h->st.cycles + 1);
#endif
	h->st.cycles++;
	if (take)
		h->st.cmd_words++;
	return take;
}

} // namespace

extern "C" {

int simh_abi(void)
{
	return SIMH_ABI;
}

void simh_params(int *rows, int *cols, uint32_t *a_words, uint32_t *b_words)
{
	*rows = SIMH_ROWS;
	*cols = SIMH_COLS;
	*a_words = SIMH_AWORDS;
	*b_words = SIMH_BWORDS;
}

const char *simh_pe(void)
{
	return SIMH_PE;
}

simh *simh_new(void)
{
	simh *h = new (std::nothrow) simh();
	if (!h)
		return nullptr;
#ifdef SIMH_FST
	const char *fst = std::getenv("CSD_SIM_FST");
	if (fst && *fst)
		h->ctx.traceEverOn(true); // before the model is built
#endif
	h->top = new (std::nothrow) Vmesh_top(&h->ctx, "mesh");
	if (!h->top) {
		delete h;
		return nullptr;
	}
	std::memset(&h->st, 0, sizeof h->st);
	const char *tr = std::getenv("CSD_SIM_TRACE");
	h->tracing = tr && *tr && std::strcmp(tr, "0") != 0;
	g_last = h;
#ifdef SIMH_FST
	if (fst && *fst) {
		h->fst = new (std::nothrow) VerilatedFstC;
		if (h->fst) {
			h->top->trace(h->fst, 99);
			h->fst->open(fst);
			const char *n = std::getenv("CSD_SIM_FST_CYCLES");
			h->fst_cycles = n ? std::strtoull(n, nullptr, 10) : 0;
		}
	}
#endif
	Vmesh_top *t = h->top;
	t->clk_i = 0;
	t->rst_ni = 0;
	t->cmd_valid_i = 0;
	t->rsp_ready_i = 1;
	t->eval();
	for (int i = 0; i < 4; i++) {
		t->clk_i = 1;
		t->eval();
		t->clk_i = 0;
		t->eval();
	}
	t->rst_ni = 1;
	t->eval();
	return h;
}

void simh_free(simh *h)
{
	if (!h)
		return;
	if (g_last == h)
		g_last = nullptr;
	h->top->final();
#ifdef SIMH_FST
	if (h->fst) {
		h->fst->close();
		delete h->fst;
	}
#endif
	delete h->top;
	delete h;
}

int simh_send(simh *h, const uint32_t *w, size_t n, uint64_t max_stall)
{
	uint64_t stall = 0;
	size_t k = 0;
	while (k < n) {
		if (tick(h, true, w[k])) {
			k++;
			stall = 0;
		} else if (++stall > max_stall) {
			return -1;
		}
	}
	return 0;
}

int simh_recv(simh *h, uint32_t *w, size_t n, uint64_t max_cycles)
{
	uint64_t c = 0;
	while (h->rsp.size() < n) {
		if (c++ >= max_cycles)
			return -1;
		tick(h, false, 0);
	}
	for (size_t k = 0; k < n; k++) {
		w[k] = h->rsp.front();
		h->rsp.pop_front();
	}
	return 0;
}

void simh_idle(simh *h, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		tick(h, false, 0);
}

void simh_get_stats(const simh *h, simh_stats *s)
{
	*s = h->st;
}

void simh_raw(simh *h, uint64_t n)
{
	Vmesh_top *t = h->top;
	t->cmd_valid_i = 0;
	t->rsp_ready_i = 1;
	for (uint64_t i = 0; i < n; i++) {
		t->clk_i = 0;
		t->eval();
		t->clk_i = 1;
		t->eval();
	}
}

int simh_replay_last(uint64_t from_cycle, double *secs, uint64_t *cycles, uint64_t *rsp_words)
{
	simh *h = g_last;
	if (!h || !h->tracing || from_cycle > h->trace.size())
		return -1;
	VerilatedContext ctx;
	Vmesh_top *t = new (std::nothrow) Vmesh_top(&ctx, "replay");
	if (!t)
		return -1;
	t->clk_i = 0;
	t->rst_ni = 0;
	t->cmd_valid_i = 0;
	t->rsp_ready_i = 1;
	t->eval();
	for (int i = 0; i < 4; i++) {
		t->clk_i = 1;
		t->eval();
		t->clk_i = 0;
		t->eval();
	}
	t->rst_ni = 1;
	t->eval();
	uint64_t n = h->trace.size(), rsp = 0;
	const uint64_t *tr = h->trace.data();
	auto clock = [&](uint64_t i) {
		t->cmd_valid_i = (tr[i] >> 32) & 1;
		t->cmd_data_i = (uint32_t)tr[i];
		t->clk_i = 0;
		t->eval();
		rsp += t->rsp_valid_o;
		t->clk_i = 1;
		t->eval();
	};
	for (uint64_t i = 0; i < from_cycle; i++)
		clock(i);
	uint64_t rsp0 = rsp;
	auto t0 = std::chrono::steady_clock::now();
	for (uint64_t i = from_cycle; i < n; i++)
		clock(i);
	auto t1 = std::chrono::steady_clock::now();
	*secs = std::chrono::duration<double>(t1 - t0).count();
	*cycles = n - from_cycle;
	*rsp_words = rsp - rsp0;
	t->final();
	delete t;
	return 0;
}

} // extern "C"
