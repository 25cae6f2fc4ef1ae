/*
 * csd.c - the device front end: URI parsing, dispatch to a backend's table, counters and
 * error messages. Everything device-specific lives in backend_*.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/csd_impl.h"

static const struct csd_backend *const backends[] = {
	&csd_backend_cpu,
	&csd_backend_sim,
	&csd_backend_usb,
};

int csd_fail(csd_dev *dev, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dev->err, sizeof dev->err, fmt, ap);
	va_end(ap);
	return rc;
}

const struct csd_pe_impl csd_pe_impls[CSD_PE_COUNT] = {
	/* pe (rtl/pe/pe.v) with mesh_router: the mesh_top defaults, never on the board */
	[CSD_PE_FULL] = { .name = "full", .a_words = 16384, .b_words = 8192, .min_pes = 1 },
	/* pe_lite with the lean router and host port: the default bitstream, 1x1 (board.mk) */
	[CSD_PE_LITE] = { .name = "lite", .a_words = 32768, .b_words = 512, .min_pes = 1 },
	/* pe_micro_mt: the 2x2 bitstream (FPGA_PE=micro_mt); its barrel needs N >= 3 PEs, and
	 * A + B fill one 16K x 16 memory per PE */
	[CSD_PE_MICRO_MT] = { .name = "micro_mt", .a_words = 8192, .b_words = 4096,
			      .min_pes = 3, .a_is_2b = 1 },
};

static int parse_u32(const char *s, const char *end, uint32_t *v)
{
	char *e;
	unsigned long x = strtoul(s, &e, 10);
	if (e != end || e == s || x == 0 || x > 0x7fffffffUL)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

int csd_parse_geom(csd_dev *dev, const char *arg)
{
	const char *p = arg;
	struct plan_geom g = dev->geom;
	int pe = dev->pe < 0 ? CSD_PE_FULL : dev->pe, have_pe = 0, have_a = 0, have_b = 0;
	int span = -1; /* dotspan=: -1 the implementation's */
	while (*p) {
		const char *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		uint32_t v;
		const char *x = memchr(p, 'x', (size_t)(end - p));
		if (!strncmp(p, "awords=", 7)) {
			if (parse_u32(p + 7, end, &v) || v < 2 || v > 65536 || (v & 1))
				goto bad;
			g.a_words = v;
			have_a = 1;
		} else if (!strncmp(p, "bwords=", 7)) {
			if (parse_u32(p + 7, end, &v) || v < 4 || v > 32768 || (v & (v - 1)))
				goto bad;
			g.b_words = v;
			have_b = 1;
		} else if (!strncmp(p, "tune=", 5) && end - p == 6 && (p[5] == '0' || p[5] == '1')) {
			g.no_tune = p[5] == '0';
		} else if (!strncmp(p, "dotspan=", 8) && end - p == 9 &&
			   (p[8] == '0' || p[8] == '1')) {
			span = p[8] == '1';
		} else if (!strncmp(p, "pe=", 3)) {
			int k = 0;
			while (k < CSD_PE_COUNT && (strlen(csd_pe_impls[k].name) != (size_t)(end - p - 3) ||
						    strncmp(csd_pe_impls[k].name, p + 3, (size_t)(end - p - 3))))
				k++;
			if (k == CSD_PE_COUNT)
				return csd_fail(dev, CS_ERR_INVALID,
						"%s: unknown PE implementation '%.*s' in '%s' (want pe=full, "
						"pe=lite or pe=micro_mt)",
						dev->be->name, (int)(end - p - 3), p + 3, arg);
			pe = k;
			have_pe = 1;
		} else if (x) {
			uint32_t r, c;
			if (parse_u32(p, x, &r) || parse_u32(x + 1, end, &c) || r > 16 || c > 16)
				goto bad;
			g.rows = (int)r;
			g.cols = (int)c;
		} else {
			goto bad;
		}
		p = *end ? end + 1 : end;
	}
	/* with pe=, the sizes not given are the implementation's (its bitstream's); without,
	 * the backend's defaults stay */
	const struct csd_pe_impl *im = &csd_pe_impls[pe];
	if (have_pe && !have_a)
		g.a_words = im->a_words;
	if (have_pe && !have_b)
		g.b_words = im->b_words;
	if (g.rows * g.cols < im->min_pes)
		return csd_fail(dev, CS_ERR_INVALID, "%s: pe=%s needs at least %d PEs, not %dx%d",
				dev->be->name, im->name, im->min_pes, g.rows, g.cols);
	if (im->a_is_2b && g.a_words != 2 * g.b_words)
		return csd_fail(dev, CS_ERR_INVALID,
				"%s: pe=%s keeps A and B in one memory: awords (%u) must be 2 * "
				"bwords (%u)",
				dev->be->name, im->name, g.a_words, g.b_words);
	/* wgrad's dot groups across majors need pe's per-lane A offset; pe_lite and
	 * pe_micro_mt read none and take a SET_MAJOR per major, which pe runs too */
	if (span == 1 && pe != CSD_PE_FULL)
		return csd_fail(dev, CS_ERR_INVALID,
				"%s: dotspan=1 needs pe=full (pe=%s's dot reads no per-lane A "
				"offset)",
				dev->be->name, im->name);
	g.dot_by_major = span < 0 ? pe != CSD_PE_FULL : !span;
	g.a_wport = pe == CSD_PE_FULL;
	g.first_touch = pe == CSD_PE_FULL;
	/* pe's axpy takes a SET_MAJOR in its chain; the others run the control task */
	g.major_cycles = pe == CSD_PE_FULL ? 0 : g.ctl_cycles;
	dev->geom = g;
	dev->pe = pe;
	return CS_OK;
bad:
	return csd_fail(dev, CS_ERR_INVALID,
			"%s: bad device options '%s' (want RxC with 1..16 each, awords=EVEN<=65536, "
			"bwords=POWER_OF_2<=32768, pe=full|lite|micro_mt, tune=0|1, dotspan=0|1)",
			dev->be->name, arg);
}

void csd_dev_defaults(csd_dev *dev)
{
	dev->geom = (struct plan_geom){ .rows = 4, .cols = 4, .a_words = 16384, .b_words = 8192,
					.hazard_cycles = 4, .ctl_cycles = 6, .major_cycles = 0,
					.a_wport = 1, .first_touch = 1 };
	dev->pe = CSD_PE_FULL;
	dev->clock_hz = 100e6;
}

/* A device whose open failed keeps its message here for csd_last_error(NULL). */
static _Thread_local char open_err[512];

int csd_open(csd_dev **devp, const char *uri)
{
	if (!devp)
		return CS_ERR_INVALID;
	*devp = NULL;
	if (!uri) {
		snprintf(open_err, sizeof open_err, "csd_open: no device URI");
		return CS_ERR_INVALID;
	}
	const char *colon = strchr(uri, ':');
	size_t nlen = colon ? (size_t)(colon - uri) : strlen(uri);
	const struct csd_backend *be = NULL;
	for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
		if (strlen(backends[i]->name) == nlen && !strncmp(backends[i]->name, uri, nlen))
			be = backends[i];
	if (!be) {
		snprintf(open_err, sizeof open_err,
			 "csd_open: unknown device '%s' (want cpu[:RxC], sim[:RxC] or usb[:SERIAL])",
			 uri);
		return CS_ERR_NOT_FOUND;
	}
	csd_dev *dev = calloc(1, sizeof *dev);
	if (!dev) {
		snprintf(open_err, sizeof open_err, "csd_open: out of memory");
		return CS_ERR_NO_MEM;
	}
	dev->be = be;
	csd_dev_defaults(dev);
	int rc = be->open(dev, colon ? colon + 1 : "");
	if (rc) {
		snprintf(open_err, sizeof open_err, "%s", dev->err[0] ? dev->err : cs_strerror(rc));
		free(dev);
		return rc;
	}
	*devp = dev;
	return CS_OK;
}

void csd_close(csd_dev *dev)
{
	if (!dev)
		return;
	if (dev->be->close)
		dev->be->close(dev);
	free(dev);
}

int csd_get_info(csd_dev *dev, csd_info *info)
{
	if (!dev || !info)
		return CS_ERR_INVALID;
	memset(info, 0, sizeof *info);
	snprintf(info->kind, sizeof info->kind, "%s", dev->be->name);
	info->rows = dev->geom.rows;
	info->cols = dev->geom.cols;
	info->pes = dev->geom.rows * dev->geom.cols;
	info->a_words = dev->geom.a_words;
	info->b_words = dev->geom.b_words;
	if (dev->pe >= 0)
		snprintf(info->pe, sizeof info->pe, "%s", csd_pe_impls[dev->pe].name);
	info->max_index = 65536;
	info->clock_hz = dev->clock_hz;
	return CS_OK;
}

int csd_get_counters(csd_dev *dev, csd_counters *c)
{
	if (!dev || !c)
		return CS_ERR_INVALID;
	*c = dev->ctr;
	return CS_OK;
}

void csd_reset_counters(csd_dev *dev)
{
	if (dev)
		memset(&dev->ctr, 0, sizeof dev->ctr);
}

const char *csd_last_error(csd_dev *dev)
{
	if (!dev)
		return open_err;
	return dev->err;
}

void csd_count(csd_dev *dev, const struct plan_stats *st)
{
	int P = dev->geom.rows * dev->geom.cols;
	dev->ctr.cycles += st->cycles;
	dev->ctr.stream_cycles += st->stream_cycles;
	dev->ctr.pe_cycles += st->stream_cycles * (uint64_t)P;
	dev->ctr.mac_busy += st->mac_busy;
	dev->ctr.link_bytes_out += 4 * st->words_out;
	dev->ctr.link_bytes_in += 4 * st->words_in;
	dev->ctr.weight_bytes += 4 * st->weight_words;
	dev->ctr.act_bytes_out += 4 * st->act_words_out;
	dev->ctr.act_bytes_in += 4 * st->act_words_in;
	dev->ctr.grad_bytes_in += 4 * st->grad_words_in;
	dev->ctr.prog_bytes_out += 4 * st->prog_words_out;
	dev->ctr.nnz_streamed += st->nnz;
	dev->ctr.act_cycles += st->act_cycles;
}

int csd_check_args(csd_dev *dev, const char *what, const void *out, const void *in,
		   const csd_sparse *w, int T)
{
	if (!out || !in || !w)
		return csd_fail(dev, CS_ERR_INVALID, "%s: NULL argument", what);
	if (T <= 0)
		return csd_fail(dev, CS_ERR_INVALID, "%s: T=%d tokens", what, T);
	if (w->n_out <= 0 || w->n_in <= 0 || w->nnz < 0 || !w->row_ptr || !w->col_ptr ||
	    (w->nnz && (!w->col || !w->val || !w->row || !w->cval || !w->csr_pos)))
		return csd_fail(dev, CS_ERR_INVALID, "%s: malformed sparse matrix", what);
	return CS_OK;
}

static int flush_pending(csd_dev *dev);

#define DISPATCH(fn, ...)                                                                    \
	do {                                                                                 \
		if (!dev)                                                                    \
			return CS_ERR_INVALID;                                               \
		dev->err[0] = 0;                                                             \
		int rc_ = flush_pending(dev);                                                \
		if (rc_)                                                                     \
			return rc_;                                                          \
		if (!dev->be->fn)                                                            \
			return csd_fail(dev, CS_ERR_NOT_SUPPORTED, "%s: " #fn                \
								   " not supported",         \
					dev->be->name);                                      \
		return dev->be->fn(dev, __VA_ARGS__);                                        \
	} while (0)

int csd_forward(csd_dev *dev, float *y, const uint16_t *x, const csd_sparse *w, int T)
{
	DISPATCH(forward, y, x, w, T);
}

int csd_backward(csd_dev *dev, float *dx, const uint16_t *dy, const csd_sparse *w, int T)
{
	DISPATCH(backward, dx, dy, w, T);
}

int csd_wgrad(csd_dev *dev, float *dw, const uint16_t *dy, const uint16_t *x,
	      const csd_sparse *w, int T)
{
	DISPATCH(wgrad, dw, dy, x, w, T);
}

int csd_backward_wgrad(csd_dev *dev, float *dx, float *dw, const uint16_t *dy,
		       const uint16_t *x, const csd_sparse *w, int T)
{
	DISPATCH(backward_wgrad, dx, dw, dy, x, w, T);
}

/* ---- resident tensors and vector programs (resident.h) ----------------------------------- */

static int resident_call(csd_dev *dev, const char *what, const struct res_op *op)
{
	if (!dev->be->resident)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED, "%s: %s: not supported", what,
				dev->be->name);
	return dev->be->resident(dev, op);
}

/* The read or write csd_read_tokens_next / csd_write_tokens_next left, on its own. */
static int flush_pending(csd_dev *dev)
{
	if (!dev->have_pend)
		return CS_OK;
	dev->have_pend = 0;
	return resident_call(dev, dev->pend.kind == RES_WRITE ? "write_tokens" : "read_tokens",
			     &dev->pend);
}

int csd_flush(csd_dev *dev)
{
	if (!dev)
		return CS_ERR_INVALID;
	if (!dev->have_pend)
		return CS_OK; /* the last error stays */
	dev->err[0] = 0;
	return flush_pending(dev);
}

static int tokens_op(csd_dev *dev, enum res_kind kind, const csd_region *r, const void *src,
		     void *dst, int T, int next)
{
	const char *what = kind == RES_WRITE ? "write_tokens" : "read_tokens";
	char err[256] = "";
	if (!dev)
		return CS_ERR_INVALID;
	dev->err[0] = 0;
	if (!r || (kind == RES_WRITE ? !src : !dst))
		return csd_fail(dev, CS_ERR_INVALID, "%s: NULL argument", what);
	int rc = res_check_region(&dev->geom, what, r, T, kind == RES_WRITE, err, sizeof err);
	if (rc)
		return csd_fail(dev, rc, "%s", err);
	if ((rc = flush_pending(dev)))
		return rc;
	struct res_op op = { .kind = kind, .r = *r, .T = T, .src = src, .dst = dst };
	if (next) {
		dev->pend = op;
		dev->have_pend = 1;
		return CS_OK;
	}
	return resident_call(dev, what, &op);
}

int csd_write_tokens(csd_dev *dev, const csd_region *r, const void *src, int T)
{
	return tokens_op(dev, RES_WRITE, r, src, NULL, T, 0);
}

int csd_read_tokens(csd_dev *dev, void *dst, const csd_region *r, int T)
{
	return tokens_op(dev, RES_READ, r, NULL, dst, T, 0);
}

int csd_read_tokens_next(csd_dev *dev, void *dst, const csd_region *r, int T)
{
	return tokens_op(dev, RES_READ, r, NULL, dst, T, 1);
}

int csd_write_tokens_next(csd_dev *dev, const csd_region *r, const void *src, int T)
{
	return tokens_op(dev, RES_WRITE, r, src, NULL, T, 1);
}

int csd_write_all(csd_dev *dev, int mem, uint32_t addr, const void *src, uint32_t n)
{
	char err[256] = "";
	if (!dev)
		return CS_ERR_INVALID;
	dev->err[0] = 0;
	if (!src)
		return csd_fail(dev, CS_ERR_INVALID, "write_all: NULL argument");
	struct res_op op = { .kind = RES_WRITE_ALL, .r = { mem, addr, n, n }, .T = 1, .src = src };
	int rc = res_check_region(&dev->geom, "write_all", &op.r, 1, 1, err, sizeof err);
	if (rc)
		return csd_fail(dev, rc, "%s", err);
	if ((rc = flush_pending(dev)))
		return rc;
	return resident_call(dev, "write_all", &op);
}

int csd_run_program(csd_dev *dev, const char *program, const char *entry, uint32_t block,
		    const uint16_t *params, int n_params)
{
	char err[256] = "";
	if (!dev)
		return CS_ERR_INVALID;
	dev->err[0] = 0;
	if (!program || !entry || !params)
		return csd_fail(dev, CS_ERR_INVALID, "run_program: NULL argument");
	/* pe runs its own build of an image where there is one (vlut.bf: vec_fc_bf) */
	const struct res_prog *pr = res_prog_find(program, entry, dev->pe == CSD_PE_FULL);
	if (!pr)
		return csd_fail(dev, CS_ERR_NOT_FOUND,
				"run_program: %s:%s is not a vector program the driver knows "
				"(vec_ln_fwd:ln_fwd, vec_ln_bwd:ln_bwd, vec_gelu:gelu_fwd, "
				"vec_gelu:gelu_bwd, vec_cvt:cvt_a, vec_cvt:cvt_bh, "
				"vec_cvt:bias_fwd, vec_cvt:bias_bwd, vec_cvt:cvt_f, vec_gelu:gelu_h, "
				"vec_fc:fc_gelu_sh, vec_fc:fc_gelu_hd, vec_fc:fc_gelu_h, "
				"vec_fc:fc_gelu_wd, vec_fc:fc_gelu_bwd, vec_fc:fc_cvt)",
				program, entry);
	if (n_params != pr->n_params)
		return csd_fail(dev, CS_ERR_INVALID,
				"run_program: %s takes a %d-word parameter block, not %d", entry,
				pr->n_params, n_params);
	int rc = res_prog_check(pr, &dev->geom, block, params, err, sizeof err);
	if (rc)
		return csd_fail(dev, rc, "run_program: %s", err);
	if ((rc = flush_pending(dev)))
		return rc;
	if (!dev->have_fw)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED,
				"run_program: no kernels image loaded, so no overlay base");
	struct res_op op = { .kind = RES_PROGRAM, .prog = pr, .block = block, .params = params,
			     .base = dev->fw.n_instr };
	/* the overlay goes right after the kernels image (its branches are pc-relative) */
	const char *src = pr->src ? pr->src : program;
	if (!dev->have_ovl || strcmp(dev->ovl.name, src)) {
		dev->have_ovl = 0;
		if ((rc = csd_fw_get(&dev->ovl, src, err, sizeof err)))
			return csd_fail(dev, rc, "run_program: %s", err);
		snprintf(dev->ovl.name, sizeof dev->ovl.name, "%s", src);
		if (op.base + dev->ovl.n_instr > CSD_FW_IMEM)
			return csd_fail(dev, CS_ERR_RANGE,
					"run_program: %s (%d instructions) does not fit IMEM after "
					"the kernels image (%d of %d words)",
					src, dev->ovl.n_instr, op.base, CSD_FW_IMEM);
		op.ovl = &dev->ovl;
	}
	int pc = csd_fw_find(&dev->ovl, entry);
	if (pc < 0)
		return csd_fail(dev, CS_ERR_NOT_FOUND, "run_program: %s has no entry %s", src,
				entry);
	op.pc = op.base + pc;
	op.img = &dev->ovl;
	rc = resident_call(dev, "run_program", &op);
	dev->have_ovl = rc == CS_OK || (dev->have_ovl && !op.ovl);
	return rc;
}

/* ---- kernels on resident regions ---------------------------------------------------------- */

static int kernel_op(csd_dev *dev, enum plan_kernel k, const char *what, const csd_region *out,
		     const csd_region *in, const csd_sparse *w, int T, int mode, float *dw,
		     uint32_t scratch)
{
	char err[400] = "";
	if (!dev)
		return CS_ERR_INVALID;
	dev->err[0] = 0;
	if (!out || !in || !w || (k == PLAN_WGRAD && !dw))
		return csd_fail(dev, CS_ERR_INVALID, "%s: NULL argument", what);
	if (mode != CSD_OVERWRITE && mode != CSD_ACCUMULATE)
		return csd_fail(dev, CS_ERR_INVALID, "%s: mode %d is neither CSD_OVERWRITE nor "
				"CSD_ACCUMULATE", what, mode);
	if (!dev->have_fw)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED, "%s: no kernels image loaded", what);
	struct res_op op = { .kind = RES_KERNEL, .r = *out, .in = *in, .T = T, .kernel = k,
			     .w = w, .accumulate = mode, .scratch = scratch, .dw = dw,
			     .fw = &dev->fw };
	struct plan pl;
	struct plan_regions rg;
	int rc = res_kernel_plan(&dev->geom, &op, &pl, &rg, err, sizeof err);
	if (rc)
		return csd_fail(dev, rc, "%s", err);
	/* a pending write must not touch what the kernel reads or writes (it is refused and
	 * dropped), wherever it goes */
	if (dev->have_pend && dev->pend.kind == RES_WRITE &&
	    (rc = res_side_conflict(&dev->geom, &op, &dev->pend, err, sizeof err))) {
		dev->have_pend = 0;
		return csd_fail(dev, rc, "%s: %s", what, err);
	}
	/* a pending read streams during the kernel when it is in the B bank the kernel
	 * leaves alone, a pending write of A between its majors when A has a write port of
	 * its own (pe); else it goes first, on its own */
	struct res_op rd;
	if (dev->have_pend && res_side_fits(&dev->geom, &op, &dev->pend)) {
		rd = dev->pend;
		dev->have_pend = 0;
		op.side = &rd;
	} else if ((rc = flush_pending(dev))) {
		return rc;
	}
	return resident_call(dev, what, &op);
}

int csd_forward_region(csd_dev *dev, const csd_region *y, const csd_region *x,
		       const csd_sparse *w, int T, int mode)
{
	return kernel_op(dev, PLAN_FWD, "forward_region", y, x, w, T, mode, NULL, 0);
}

int csd_backward_region(csd_dev *dev, const csd_region *dx, const csd_region *dy,
			const csd_sparse *w, int T, int mode)
{
	return kernel_op(dev, PLAN_BWD, "backward_region", dx, dy, w, T, mode, NULL, 0);
}

int csd_wgrad_region(csd_dev *dev, float *dw, const csd_region *dy, const csd_region *x,
		     const csd_sparse *w, int T, uint32_t scratch)
{
	return kernel_op(dev, PLAN_WGRAD, "wgrad_region", dy, x, w, T, CSD_OVERWRITE, dw, scratch);
}

int csd_reduce_region(csd_dev *dev, float *out, const csd_region *r)
{
	if (!dev)
		return CS_ERR_INVALID;
	dev->err[0] = 0;
	if (!out || !r)
		return csd_fail(dev, CS_ERR_INVALID, "reduce_region: NULL argument");
	if (!dev->have_fw)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED, "reduce_region: no kernels image loaded");
	uint32_t cap = dev->geom.b_words / 2 < 256 ? dev->geom.b_words / 2 : 256;
	if (r->mem != CSD_MEM_B || r->width < 1 || r->width > cap)
		return csd_fail(dev, CS_ERR_INVALID, "reduce_region: %s region of %u words: a region "
				"of B of 1 to %u words (one wgrad batch)",
				r->mem == CSD_MEM_B ? "a B" : "not a B", r->width, cap);
	if ((uint64_t)r->base + r->width > dev->geom.b_words ||
	    (uint64_t)r->base + r->width > 0xffff)
		return csd_fail(dev, CS_ERR_RANGE, "reduce_region: B[%u .. %llu) is past the end of "
				"SRAM B (%u) or the 16-bit registers", r->base,
				(unsigned long long)r->base + r->width, dev->geom.b_words);
	int rc = flush_pending(dev);
	if (rc)
		return rc;
	struct res_op op = { .kind = RES_REDUCE, .r = *r, .T = 1, .dst = out, .fw = &dev->fw };
	return resident_call(dev, "reduce_region", &op);
}
