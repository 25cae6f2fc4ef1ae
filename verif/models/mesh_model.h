/*
 * mesh_model.h - word-level C model of the whole device (docs/architecture.md 3, 6): the
 * host port's command decoding, a route table per router, one pe_model per tile, and the
 * wavelets moving between them.
 *
 * Not a timing model. Wavelets move through the routers by their route masks; every link
 * is FIFO, so the order per color and source that the fabric guarantees holds (each color
 * has one input direction per router, section 2). The PEs run to quiescence after every
 * RUN/INJECT command and before every command that reads or writes state, which is what
 * the driver's streams allow (it SYNCs or COLLECTs before touching state); queues are
 * unbounded, so there is no back-pressure.
 *
 * The host port follows docs/architecture.md section 6 (the model is the RTL's reference):
 * SYNC answers one header word whose n field is the host port error count; WRITE of
 * targets 2/8/9 is BAD_ARG; READ of target 2 returns B words and zeroes them; READ with
 * pe 0xff answers as one READ per PE in PE order; RUN nonzero words with bit 31 set step
 * the major; CLEAR clears the cycle count, the error count, the router counters and the
 * PE counters; COLLECT takes at most 256 words. "Cycles" are not modelled (COUNTERS
 * reports 0), so the READ that the RTL streams while later RUNs compute is performed here
 * when it is decoded, after the mesh settled: the same words as long as the host does not
 * write what is being read (the driver never does).
 *
 * Used by the sim backend as its "model" engine (host/driver/backend_sim.c) and by the
 * tests that run plan_exec() in real mode against the cpu backend.
 */
#ifndef MESH_MODEL_H
#define MESH_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "pe_model.h"

#define MESH_MODEL_COLLECT_DEPTH 256u

struct mesh_model_wq {
	uint64_t *w;
	size_t head, tail, cap;
};

struct mesh_model {
	int rows, cols, P;
	unsigned awords, bwords;
	struct pe_model *pe;  /* [P] */
	uint8_t (*route)[16]; /* [P][16] masks {local, W, S, E, N} = bits 4..0 */
	uint32_t (*rctr)[6];  /* [P]: wavelets out N, E, S, W, local; err_unrouted */
	struct mesh_model_wq host_out; /* wavelets leaving router (0,0) westwards */
	/* command decoding */
	uint32_t *cmd;
	size_t ncmd, capcmd;
	/* response words */
	uint32_t *rsp;
	size_t rsp_head, rsp_tail, rsp_cap;
	uint32_t err; /* host port error count */
	uint64_t words_in, words_out;
	uint64_t max_steps; /* per PE run; a runaway program is an error */
	int fault; /* a PE program did not terminate / out of memory */
};

/* dot_by_major: the PEs' pe_model.dot_by_major (0: pe, 1: pe_lite and pe_micro_mt, the
 * boards), which wgrad stream they run (plan_geom.dot_by_major) */
int mesh_model_init(struct mesh_model *m, int rows, int cols, unsigned awords, unsigned bwords,
		    int dot_by_major);
void mesh_model_free(struct mesh_model *m);
/* Feed command words (a command may span calls). Returns 0, or -1 on a model fault. */
int mesh_model_send(struct mesh_model *m, const uint32_t *w, size_t n);
/* Response words available. */
size_t mesh_model_avail(const struct mesh_model *m);
/* Take n response words; returns -1 (and takes none) when fewer are available. */
int mesh_model_recv(struct mesh_model *m, uint32_t *w, size_t n);
/* Run every PE to quiescence. Returns 1 if the mesh is idle afterwards, 0 if a PE is still
 * busy (a redv waiting for input), -1 on a fault. */
int mesh_model_settle(struct mesh_model *m);

#endif
