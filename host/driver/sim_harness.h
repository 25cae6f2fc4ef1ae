/*
 * sim_harness.h - the C ABI of one Verilated mesh_top build (host/driver/sim_harness.cpp).
 * Each build is a shared object build/sim/libmesh_RxC[_aA_bB][_lite|_micro_mt].so
 * (host/driver/sim.mk) for one mesh shape, SRAM size and PE implementation (Verilog
 * parameters are compile-time); the sim backend dlopens the one it needs and looks these
 * symbols up by name. The word interface is the same for the full and the lean host port
 * (mesh_hostport_lean): a command word stays on cmd_data_i, valid high, until the port takes
 * it, as the board's receive FIFO keeps it (the lean port's cmd_ready_o depends on the word,
 * and with micro_mt it takes a WRITE's word only once the word's config beat has left).
 *
 * The harness owns the clock: it drives the host port's command words (valid/ready), keeps
 * rsp_ready high and queues every response word, and counts cycles, MAC-busy PE-cycles
 * (the mesh's mac_busy_o), the cycles of the streaming phases (stream_o) and the words that
 * crossed each way. Every wait is bounded.
 */
#ifndef CS_SIM_HARNESS_H
#define CS_SIM_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#define SIMH_ABI 3

struct simh_stats {
	uint64_t cycles;    /* since simh_new */
	uint64_t mac_busy;  /* sum over PEs of cycles with mac_busy_o high */
	uint64_t cmd_words; /* words the host port accepted */
	uint64_t rsp_words; /* words the host port answered */
	/* the streaming phases (mesh_top stream_o, set by the host port from the first
	 * wavelet a RUN/INJECT injects until a SYNC or COLLECT sees the mesh idle) */
	uint64_t stream_cycles; /* cycles with stream_o high */
	uint64_t stream_mac;    /* of mac_busy: PE-cycles with a MAC issued during them */
};

typedef struct simh simh;

#ifdef __cplusplus
extern "C" {
#endif
/* ABI version, and the Verilog parameters this object was built with. */
int simh_abi(void);
void simh_params(int *rows, int *cols, uint32_t *a_words, uint32_t *b_words);
/* The PE implementation (csd.h pe=): "full", "lite" or "micro_mt". */
const char *simh_pe(void);
simh *simh_new(void); /* reset applied; NULL when out of memory */
void simh_free(simh *h);
/* Feed n command words. Fails (-1) when the port accepts no word for max_stall cycles. */
int simh_send(simh *h, const uint32_t *w, size_t n, uint64_t max_stall);
/* Take n response words, clocking the mesh until they are there; -1 after max_cycles. */
int simh_recv(simh *h, uint32_t *w, size_t n, uint64_t max_cycles);
/* Clock n cycles with no command input (responses are still queued). */
void simh_idle(simh *h, uint64_t n);
void simh_get_stats(const simh *h, struct simh_stats *s);
/* Raw model speed: clock the bare model n cycles with idle inputs and no bookkeeping. */
void simh_raw(simh *h, uint64_t n);
/* Benchmarks only (CSD_SIM_TRACE=1 set before simh_new records every cycle's inputs):
 * replay the most recent instance's inputs on a fresh model with no bookkeeping, and time
 * the cycles from from_cycle on (the raw Verilated model's cost of the same work). */
int simh_replay_last(uint64_t from_cycle, double *secs, uint64_t *cycles, uint64_t *rsp_words);
#ifdef __cplusplus
}
#endif

#endif
