/*
 * pe_model.h - instruction-level C model of one PE (docs/architecture.md section 4).
 *
 * The same state as rtl/pe/pe.v (input queues, color -> queue map, task table, IMEM,
 * registers, W, SRAM A and B, counters) and the same ISA, executed one instruction at a
 * time with no notion of cycles, including the 0xF vector group (xop 1-7, 4.4). The benches
 * feed it the wavelets the RTL accepted, in the same order, run it, and compare what it
 * sent (per color, in order) and its final state.
 *
 * Where the RTL's choices depend on timing, the results do not, for programs that obey the
 * rules in docs/architecture.md 4.4 (a task that runs axpy/dot does not count its own
 * invocations; dot outputs do not overlap its B inputs; tasks on different queues do not
 * share state). The model takes every same-task wavelet already queued where the RTL takes
 * those that have arrived, and picks queues round-robin like the RTL.
 * Not a timing model: no cycles, no back-pressure, unbounded queues.
 */
#ifndef PE_MODEL_H
#define PE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define PE_MODEL_MAX_QUEUES 16

struct pe_model_queue {
	uint64_t *w; /* wavelets: bit 36 ctrl, 35:32 color, 31:0 payload */
	size_t head, tail, cap;
};

struct pe_model {
	unsigned awords, bwords, num_queues;
	int dot_by_major;     /* 0 (pe, pe_model_init's): a dot lane reads A at r1 + its
			       * wavelet's val, so a group spans majors; 1 (pe_lite,
			       * pe_micro_mt): at r1, val ignored (docs/architecture.md 4.4) */
	int first_touch;      /* 1 (pe, pe_model_init's): an axpy nonzero's index bit 14 is
			       * its first-touch flag (docs/architecture.md 4.4); 0 (pe_lite,
			       * pe_micro_mt): index bits */
	int axpy_major;       /* 1 (pe, pe_model_init's): axpy's chain takes a SET_MAJOR
			       * (control, payload[31:16] = 0) of its data task's color, r1 =
			       * arg; 0 (pe_lite, pe_micro_mt): it ends the chain (4.4) */
	uint16_t *a;          /* [awords] bf16 elements */
	uint32_t *b;          /* [bwords] */
	uint16_t imem[256];
	uint16_t task[32];    /* {valid[9], blocked[8], pc[7:0]} */
	uint8_t qmap[16];
	uint16_t r[8];
	uint32_t w;
	uint8_t tid, tq;      /* task id and queue of the running task */
	uint8_t pc;
	int running;
	unsigned last_q;      /* round-robin pointer */
	uint16_t redv_n;      /* progress of a redv waiting for wavelets */
	uint32_t cnt[5];      /* 0 MACs, 1 (unused: task-busy cycles), 2 err_notask, 3 rx, 4 tx */
	struct pe_model_queue q[PE_MODEL_MAX_QUEUES];
	/* sent wavelets, in order */
	uint64_t *sent;
	size_t nsent, capsent;
};

int pe_model_init(struct pe_model *m, unsigned awords, unsigned bwords, unsigned num_queues);
void pe_model_free(struct pe_model *m);
/* A wavelet accepted from the fabric. */
int pe_model_rx(struct pe_model *m, uint64_t wavelet);
/* Run until no task can start. Returns 0 when quiescent, 1 when a redv waits for
 * wavelets, -1 after max_steps instructions (a program that does not terminate). */
int pe_model_run(struct pe_model *m, uint64_t max_steps);

#endif
