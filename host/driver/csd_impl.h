/*
 * csd_impl.h - what the device front end (csd.c) and the backends share; not public.
 * A backend is a const table of operations (one file each: backend_cpu.c, backend_sim.c,
 * backend_usb.c); an entry it does not implement returns CS_ERR_NOT_SUPPORTED.
 */
#ifndef CS_CSD_IMPL_H
#define CS_CSD_IMPL_H

#include <stdarg.h>

#include "driver/csd.h"
#include "driver/fw.h"
#include "driver/plan.h"
#include "driver/resident.h"

struct csd_backend {
	const char *name;
	/* arg: the URI after "name:" ("" when absent); dev->geom holds the defaults */
	int (*open)(csd_dev *dev, const char *arg);
	void (*close)(csd_dev *dev);
	int (*forward)(csd_dev *dev, float *y, const uint16_t *x, const csd_sparse *w, int T);
	int (*backward)(csd_dev *dev, float *dx, const uint16_t *dy, const csd_sparse *w, int T);
	int (*wgrad)(csd_dev *dev, float *dw, const uint16_t *dy, const uint16_t *x,
		     const csd_sparse *w, int T);
	int (*backward_wgrad)(csd_dev *dev, float *dx, float *dw, const uint16_t *dy,
			      const uint16_t *x, const csd_sparse *w, int T);
	/* a resident transfer or vector program (resident.h), checked by csd.c */
	int (*resident)(csd_dev *dev, const struct res_op *op);
};

/* The PE implementations that ship, selected by pe= in a cpu or sim URI: the mesh_top
 * parameter set the sim backend loads (host/driver/sim.mk), the SRAM sizes a URI without
 * awords=/bwords= gets (the implementation's bitstream; full: the RTL defaults) and what
 * its RTL requires. Results are the same on all of them (one ISA, one numerics); only the
 * cycles differ. */
enum csd_pe { CSD_PE_FULL, CSD_PE_LITE, CSD_PE_MICRO_MT, CSD_PE_COUNT };
struct csd_pe_impl {
	const char *name;          /* "full", "lite", "micro_mt" */
	uint32_t a_words, b_words; /* default SRAM sizes */
	int min_pes;               /* fewest PEs the RTL supports */
	int a_is_2b;               /* A and B share one memory: awords must be 2 * bwords */
};
extern const struct csd_pe_impl csd_pe_impls[CSD_PE_COUNT];

struct csd_dev {
	const struct csd_backend *be;
	struct plan_geom geom;
	int pe; /* enum csd_pe; -1: not known to the host (usb: the bitstream's) */
	double clock_hz;
	struct csd_fw fw; /* the kernels image */
	int have_fw;
	struct csd_fw ovl; /* the vector program overlay in IMEM after fw */
	int have_ovl;      /* ovl is loaded on every PE */
	struct res_op pend; /* csd_*_tokens_next's read or write, not yet performed */
	int have_pend;
	csd_counters ctr;
	char err[512];
	void *priv; /* the backend's state */
};

extern const struct csd_backend csd_backend_cpu;
extern const struct csd_backend csd_backend_sim;
extern const struct csd_backend csd_backend_usb;

/* Record the last error message ("what: on what"); returns rc. */
int csd_fail(csd_dev *dev, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Set the defaults every backend starts from (csd_open does before the backend's open). */
void csd_dev_defaults(csd_dev *dev);

/* Parse "RxC[,awords=N][,bwords=N][,pe=IMPL]" into geom and pe; "" keeps the defaults. */
int csd_parse_geom(csd_dev *dev, const char *arg);

/* Check a kernel call's arguments against the sparse matrix. */
int csd_check_args(csd_dev *dev, const char *what, const void *out, const void *in,
		   const csd_sparse *w, int T);

/* Add a plan's statistics to the device counters (bytes = 4 per word). */
void csd_count(csd_dev *dev, const struct plan_stats *st);

#endif /* CS_CSD_IMPL_H */
