/*
 * backend_sim.c - the "sim" device: the mesh in process, fed by plan_exec() through the
 * host port's 32-bit word interface, exactly as the usb backend feeds the board.
 *
 * URI: "sim[:RxC][,awords=N][,bwords=N][,pe=full|lite|micro_mt][,model][,timeout=CYCLES]"
 * (csd.h: pe= selects the PE implementation and, without awords=/bwords=, its bitstream's
 * SRAM sizes: "sim:1x1,pe=lite" is the default bitstream's mesh, "sim:2x2,pe=micro_mt" the
 * 2x2 board's).
 * CSD_SIM_FST=FILE (rtl engine): load the --trace-fst build instead (libmesh_..._fst.so)
 * and write an FST waveform of the run to FILE (the first CSD_SIM_FST_CYCLES cycles when
 * that is set and nonzero).
 * Two engines behind the same word interface:
 *   - rtl (default): the Verilated rtl/mesh/mesh_top. The mesh shape, SRAM sizes and PE
 *     implementation are Verilog parameters, so each (shape, sizes, pe) is its own shared
 *     object in $CSD_SIM_DIR (default build/sim): libmesh_RxC.so (pe=full, default sizes),
 *     else libmesh_RxC_aA_bB[_lite|_micro_mt].so, with the mesh_top parameters of that
 *     implementation's bitstream (host/driver/sim.mk), loaded with dlopen. This library
 *     never builds one: make does (`make sim-model MESH=RxC PE=.. AWORDS=N BWORDS=N`, and
 *     make train, make sim and make test build what they use), and a missing object, or
 *     one older than any .v file under rtl/mesh, rtl/pe, rtl/sram or the harness, is an
 *     error naming that command (CSD_SIM_STALE_OK=1 loads a stale one anyway). Counters
 *     come from the model: cycles, MAC-busy PE-cycles (mac_busy_o of every PE) and the
 *     words the host port actually took/gave. Every wait is bounded in cycles (timeout=,
 *     default 2M cycles without progress).
 *   - model: the word-level C model verif/models/mesh_model.c (one pe_model per tile):
 *     no cycles, same results (for every pe=); for machines without Verilator and for the
 *     SAN build.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/csd_impl.h"
#include "driver/proto.h"
#include "driver/sim_harness.h"
#include "../../verif/models/mesh_model.h"

#ifndef CSD_SIM_ROOT
#define CSD_SIM_ROOT "."
#endif
#ifndef CSD_SIM_BUILD
#define CSD_SIM_BUILD "build/sim"
#endif

struct simh_api {
	int (*abi)(void);
	void (*params)(int *, int *, uint32_t *, uint32_t *);
	simh *(*create)(void);
	void (*destroy)(simh *);
	int (*send)(simh *, const uint32_t *, size_t, uint64_t);
	int (*recv)(simh *, uint32_t *, size_t, uint64_t);
	void (*stats)(const simh *, struct simh_stats *);
	const char *(*impl)(void);
};

struct sim {
	int use_model;
	uint64_t timeout; /* cycles */
	struct mesh_model mm;
	void *so;
	struct simh_api api;
	simh *h;
	int failed; /* a link error happened: the device state is unknown */
	char path[1024];
};

/* ---- the link plan_exec drives -------------------------------------------------------- */

static int link_send(void *ctx, const uint32_t *w, size_t n)
{
	struct sim *s = ctx;
	if (s->failed)
		return CS_ERR_DEVICE;
	if (s->use_model) {
		if (mesh_model_send(&s->mm, w, n)) {
			s->failed = 1;
			return CS_ERR_DEVICE;
		}
		return CS_OK;
	}
	if (s->api.send(s->h, w, n, s->timeout)) {
		s->failed = 1;
		return CS_ERR_TIMEOUT;
	}
	return CS_OK;
}

static int link_recv(void *ctx, uint32_t *w, size_t n)
{
	struct sim *s = ctx;
	if (s->failed)
		return CS_ERR_DEVICE;
	if (s->use_model)
		return mesh_model_recv(&s->mm, w, n) ? CS_ERR_TIMEOUT : CS_OK;
	/* a response can legitimately take the device-side timeout of a SYNC/COLLECT */
	if (s->api.recv(s->h, w, n, 2 * s->timeout + 100000)) {
		s->failed = 1;
		return CS_ERR_TIMEOUT;
	}
	return CS_OK;
}

struct sim_snap {
	uint64_t cycles, mac, wout, win, scycles;
};

static void snap(struct sim *s, struct sim_snap *p)
{
	if (s->use_model) {
		p->cycles = 0;
		p->scycles = 0;
		p->mac = 0;
		for (int q = 0; q < s->mm.P; q++)
			p->mac += s->mm.pe[q].cnt[0];
		p->wout = s->mm.words_in;
		p->win = s->mm.words_out;
	} else {
		struct simh_stats st;
		s->api.stats(s->h, &st);
		p->cycles = st.cycles;
		p->scycles = st.stream_cycles;
		p->mac = st.mac_busy;
		p->wout = st.cmd_words;
		p->win = st.rsp_words;
	}
}

/* Counters of one call: measured by the device, not estimated (weight words and nonzeros
 * are what the host streamed). cycles are end to end; stream_cycles and pe_cycles cover
 * the streaming phases only (the host port's stream_o: from the first wavelet injected
 * until the SYNC/COLLECT that closes the stream sees the mesh idle), mac_busy counts every
 * MAC (all of them fall in those phases). */
static void count(csd_dev *dev, const struct sim_snap *a, const struct sim_snap *b,
		  const struct plan_stats *st)
{
	uint64_t cyc = b->cycles - a->cycles, scyc = b->scycles - a->scycles;
	dev->ctr.cycles += cyc;
	dev->ctr.stream_cycles += scyc;
	dev->ctr.pe_cycles += scyc * (uint64_t)(dev->geom.rows * dev->geom.cols);
	dev->ctr.mac_busy += b->mac - a->mac;
	dev->ctr.link_bytes_out += 4 * (b->wout - a->wout);
	dev->ctr.link_bytes_in += 4 * (b->win - a->win);
	dev->ctr.weight_bytes += 4 * st->weight_words;
	dev->ctr.act_bytes_out += 4 * st->act_words_out;
	dev->ctr.act_bytes_in += 4 * st->act_words_in;
	dev->ctr.grad_bytes_in += 4 * st->grad_words_in;
	dev->ctr.prog_bytes_out += 4 * st->prog_words_out;
	dev->ctr.nnz_streamed += st->nnz;
	dev->ctr.act_cycles += st->act_cycles;
}

/* ---- loading a Verilated build ------------------------------------------------------- */

/* The newest mtime of the files in dir ending in suffix; its path goes to newest. */
static void newest_mtime(const char *dir, const char *suffix, long *best, char *newest,
			 size_t n)
{
	char p[2048];
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	size_t sl = strlen(suffix);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < sl || strcmp(e->d_name + l - sl, suffix))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		struct stat st;
		if (!stat(p, &st) && st.st_mtime > *best) {
			*best = st.st_mtime;
			snprintf(newest, n, "%s", p);
		}
	}
	closedir(d);
}

/* 1 when path is older than a source make builds it from (a subset of sim.mk's
 * SIM_SO_DEPS, so make always rebuilds what this calls stale); newest names that source. */
static int so_stale(const char *path, char *newest, size_t n)
{
	struct stat st;
	if (stat(path, &st))
		return 0;
	static const char *const src[][2] = {
		{ "rtl/mesh", ".v" },
		{ "rtl/pe", ".v" },
		{ "rtl/sram", ".v" },
		{ "host/driver", "sim_harness.cpp" },
		{ "host/driver", "sim_harness.h" },
		{ "host/driver", "sim_build.sh" },
	};
	char d[1024];
	long best = 0;
	for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
		snprintf(d, sizeof d, "%s/%s", CSD_SIM_ROOT, src[i][0]);
		newest_mtime(d, src[i][1], &best, newest, n);
	}
	return st.st_mtime < best;
}

static const char *sim_dir(void)
{
	const char *dir = getenv("CSD_SIM_DIR");
	return dir && *dir ? dir : CSD_SIM_BUILD;
}

/* The shared object a geometry and implementation need (see the top of this file). */
static void model_path(const csd_dev *dev, int fst, char *path, size_t n)
{
	const struct plan_geom *g = &dev->geom;
	const char *tr = fst ? "_fst" : "";
	if (dev->pe == CSD_PE_FULL && g->a_words == 16384 && g->b_words == 8192)
		snprintf(path, n, "%s/libmesh_%dx%d%s.so", sim_dir(), g->rows, g->cols, tr);
	else
		snprintf(path, n, "%s/libmesh_%dx%d_a%u_b%u%s%s%s.so", sim_dir(), g->rows, g->cols,
			 g->a_words, g->b_words, dev->pe == CSD_PE_FULL ? "" : "_",
			 dev->pe == CSD_PE_FULL ? "" : csd_pe_impls[dev->pe].name, tr);
}

/* The arguments of `make sim-model` that build it (SIM_DIR= when CSD_SIM_DIR moved it). */
static void model_args(const csd_dev *dev, int fst, char *args, size_t n)
{
	const struct plan_geom *g = &dev->geom;
	int moved = strcmp(sim_dir(), CSD_SIM_BUILD) != 0;
	snprintf(args, n, "MESH=%dx%d PE=%s AWORDS=%u BWORDS=%u%s%s%s", g->rows, g->cols,
		 csd_pe_impls[dev->pe].name, g->a_words, g->b_words, fst ? " TRACE=1" : "",
		 moved ? " SIM_DIR=" : "", moved ? sim_dir() : "");
}

/* The make command that builds it, run from anywhere. */
static void model_cmd(const csd_dev *dev, int fst, char *cmd, size_t n)
{
	char args[256], cwd[1024];
	model_args(dev, fst, args, sizeof args);
	int here = getcwd(cwd, sizeof cwd) && !strcmp(cwd, CSD_SIM_ROOT);
	snprintf(cmd, n, "make %s%s%ssim-model %s", here ? "" : "-C '", here ? "" : CSD_SIM_ROOT,
		 here ? "" : "' ", args);
}

static int sim_load(csd_dev *dev, struct sim *s)
{
	/* a waveform is asked for: the separate --trace-fst build (..._fst.so) */
	const char *fst = getenv("CSD_SIM_FST");
	int trace = fst && *fst;
	char cmd[1400], newest[2048] = "";
	model_path(dev, trace, s->path, sizeof s->path);
	struct stat st;
	if (stat(s->path, &st)) {
		model_cmd(dev, trace, cmd, sizeof cmd);
		return csd_fail(dev, CS_ERR_NOT_FOUND,
				"sim: %s is not built (the Verilated %dx%d pe=%s mesh); build it with: %s",
				s->path, dev->geom.rows, dev->geom.cols, csd_pe_impls[dev->pe].name,
				cmd);
	}
	const char *ok = getenv("CSD_SIM_STALE_OK");
	if (!(ok && *ok && strcmp(ok, "0")) && so_stale(s->path, newest, sizeof newest)) {
		model_cmd(dev, trace, cmd, sizeof cmd);
		return csd_fail(dev, CS_ERR_NOT_FOUND,
				"sim: %s is older than %s; rebuild it with: %s "
				"(CSD_SIM_STALE_OK=1 loads it anyway)",
				s->path, newest, cmd);
	}
	s->so = dlopen(s->path, RTLD_NOW | RTLD_LOCAL);
	if (!s->so)
		return csd_fail(dev, CS_ERR_IO, "sim: cannot load %s: %s", s->path, dlerror());
#define SYM(field, nm)                                                                      \
	do {                                                                                \
		*(void **)&s->api.field = dlsym(s->so, nm);                                 \
		if (!s->api.field)                                                          \
			return csd_fail(dev, CS_ERR_IO, "sim: %s lacks %s", s->path, nm);   \
	} while (0)
	SYM(abi, "simh_abi");
	SYM(params, "simh_params");
	SYM(create, "simh_new");
	SYM(destroy, "simh_free");
	SYM(send, "simh_send");
	SYM(recv, "simh_recv");
	SYM(stats, "simh_get_stats");
	SYM(impl, "simh_pe");
#undef SYM
	int r, c;
	uint32_t aw, bw;
	s->api.params(&r, &c, &aw, &bw);
	const char *pe = s->api.impl();
	if (s->api.abi() != SIMH_ABI || r != dev->geom.rows || c != dev->geom.cols ||
	    aw != dev->geom.a_words || bw != dev->geom.b_words ||
	    strcmp(pe, csd_pe_impls[dev->pe].name))
		return csd_fail(dev, CS_ERR_IO, "sim: %s is a %dx%d a%u b%u pe=%s build (ABI %d)",
				s->path, r, c, aw, bw, pe, s->api.abi());
	s->h = s->api.create();
	if (!s->h)
		return csd_fail(dev, CS_ERR_NO_MEM, "sim: out of memory creating the model");
	return CS_OK;
}

/* ---- open / close --------------------------------------------------------------------- */

static void sim_close(csd_dev *dev)
{
	struct sim *s = dev->priv;
	if (!s)
		return;
	if (s->h)
		s->api.destroy(s->h);
	/* the shared object stays loaded: Verilator's runtime has thread-local and static
	 * state (Verilated::t_s) that is not safe to unmap, and a process uses few shapes */
	if (s->use_model)
		mesh_model_free(&s->mm);
	free(s);
	dev->priv = NULL;
}

/* Our options out (model, timeout=), the geometry and pe= to csd_parse_geom. */
static int sim_parse(csd_dev *dev, const char *arg, int *use_model, uint64_t *timeout)
{
	char geom[256] = "";
	const char *p = arg;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t l = end ? (size_t)(end - p) : strlen(p);
		if (l == 5 && !strncmp(p, "model", 5)) {
			*use_model = 1;
		} else if (l > 8 && !strncmp(p, "timeout=", 8)) {
			char *e;
			unsigned long long v = strtoull(p + 8, &e, 10);
			if (e != p + l || !v)
				return csd_fail(dev, CS_ERR_INVALID, "sim: bad timeout in '%s'", arg);
			*timeout = v;
		} else if (strlen(geom) + l + 2 < sizeof geom) {
			if (geom[0])
				strcat(geom, ",");
			strncat(geom, p, l);
		}
		p += l;
		if (*p == ',')
			p++;
	}
	int rc = csd_parse_geom(dev, geom);
	if (rc)
		return rc;
	const struct plan_geom *g = &dev->geom;
	if ((g->a_words & (g->a_words - 1)) || g->rows * g->cols > 255)
		return csd_fail(dev, CS_ERR_INVALID,
				"sim: awords must be a power of two and the mesh at most 255 PEs");
	return CS_OK;
}

int csd_sim_model(const char *uri, int fst, char *path, size_t path_len, char *args,
		  size_t args_len, char *err, size_t err_len)
{
	if (!uri || strncmp(uri, "sim", 3) || (uri[3] && uri[3] != ':')) {
		snprintf(err, err_len, "csd_sim_model: '%s' is not a sim device", uri ? uri : "");
		return CS_ERR_INVALID;
	}
	csd_dev *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, err_len, "csd_sim_model: out of memory");
		return CS_ERR_NO_MEM;
	}
	d->be = &csd_backend_sim;
	csd_dev_defaults(d);
	int use_model = 0;
	uint64_t timeout = 0;
	int rc = sim_parse(d, uri[3] ? uri + 4 : "", &use_model, &timeout);
	if (rc) {
		snprintf(err, err_len, "%s", d->err);
	} else if (use_model) {
		snprintf(path, path_len, "%s", "");
		snprintf(args, args_len, "%s", "");
	} else {
		model_path(d, fst, path, path_len);
		model_args(d, fst, args, args_len);
	}
	free(d);
	return rc;
}

static int sim_open(csd_dev *dev, const char *arg)
{
	char err[256] = "";
	struct sim *s = calloc(1, sizeof *s);
	if (!s)
		return csd_fail(dev, CS_ERR_NO_MEM, "sim: out of memory");
	dev->priv = s;
	s->timeout = 2000000ull; /* ~25 s of the 4x4 model; no legitimate wait comes near it */
	int rc = sim_parse(dev, arg, &s->use_model, &s->timeout);
	if (rc) {
		sim_close(dev);
		return rc;
	}
	const struct plan_geom *g = &dev->geom;
	if (s->use_model) {
		if (mesh_model_init(&s->mm, g->rows, g->cols, g->a_words, g->b_words,
				    g->dot_by_major)) {
			sim_close(dev);
			return csd_fail(dev, CS_ERR_NO_MEM, "sim: cannot build the mesh model");
		}
		for (int q = 0; q < g->rows * g->cols; q++)
			s->mm.pe[q].first_touch = g->first_touch;
	} else if ((rc = sim_load(dev, s))) {
		sim_close(dev);
		return rc;
	}
	if ((rc = csd_fw_get(&dev->fw, "kernels", err, sizeof err))) {
		sim_close(dev);
		return csd_fail(dev, rc, "sim: firmware: %s", err);
	}
	dev->have_fw = 1;
	struct plan_link link = { s, link_send, link_recv, (uint32_t)s->timeout };
	struct plan_stats st = { 0 };
	if ((rc = plan_load(g, &dev->fw, &link, &st, err, sizeof err))) {
		sim_close(dev);
		return csd_fail(dev, rc, "sim: %s", err);
	}
	return CS_OK;
}

/* ---- kernels -------------------------------------------------------------------------- */

static int sim_run(csd_dev *dev, enum plan_kernel k, const struct plan_io *io, int T,
		   const char *what)
{
	struct sim *s = dev->priv;
	char err[400] = "";
	struct plan pl;
	if (s->failed)
		return csd_fail(dev, CS_ERR_DEVICE,
				"%s: sim: an earlier link error left the device in an unknown state; "
				"reopen it",
				what);
	int rc = plan_make(&pl, &dev->geom, k, T, io->w->n_out, io->w->n_in, err, sizeof err);
	if (rc)
		return csd_fail(dev, rc, "%s", err);
	plan_tune(&pl, io->w);
	struct plan_link link = { s, link_send, link_recv, (uint32_t)s->timeout };
	struct plan_stats st = { 0 };
	struct sim_snap a, b;
	snap(s, &a);
	rc = plan_exec(&pl, &dev->fw, io, &link, &st, err, sizeof err);
	snap(s, &b);
	if (rc) {
		s->failed = s->failed || rc == CS_ERR_TIMEOUT || rc == CS_ERR_PROTOCOL;
		return csd_fail(dev, rc, "%s: sim: %s", what, err);
	}
	count(dev, &a, &b, &st);
	return CS_OK;
}

static int sim_forward(csd_dev *dev, float *y, const uint16_t *x, const csd_sparse *w, int T)
{
	int rc = csd_check_args(dev, "forward", y, x, w, T);
	if (rc)
		return rc;
	struct plan_io io = { .w = w, .act = x, .out = y };
	return sim_run(dev, PLAN_FWD, &io, T, "forward");
}

static int sim_backward(csd_dev *dev, float *dx, const uint16_t *dy, const csd_sparse *w, int T)
{
	int rc = csd_check_args(dev, "backward", dx, dy, w, T);
	if (rc)
		return rc;
	struct plan_io io = { .w = w, .act = dy, .out = dx };
	return sim_run(dev, PLAN_BWD, &io, T, "backward");
}

static int sim_wgrad(csd_dev *dev, float *dw, const uint16_t *dy, const uint16_t *x,
		     const csd_sparse *w, int T)
{
	int rc = csd_check_args(dev, "wgrad", dw, x, w, T);
	if (rc)
		return rc;
	if (!dy)
		return csd_fail(dev, CS_ERR_INVALID, "wgrad: NULL dy");
	struct plan_io io = { .w = w, .act = x, .bact = dy, .out = dw };
	return sim_run(dev, PLAN_WGRAD, &io, T, "wgrad");
}

static int sim_backward_wgrad(csd_dev *dev, float *dx, float *dw, const uint16_t *dy,
			      const uint16_t *x, const csd_sparse *w, int T)
{
	int rc = csd_check_args(dev, "backward_wgrad", dx, dy, w, T);
	if (rc)
		return rc;
	if (!dw || !x)
		return csd_fail(dev, CS_ERR_INVALID, "backward_wgrad: NULL argument");
	struct plan_io io = { .w = w, .act = dy, .bact = x, .out = dx, .out2 = dw };
	return sim_run(dev, PLAN_BWG, &io, T, "backward_wgrad");
}

/* ---- resident tensors and vector programs (resident.h) ------------------------------- */

static int sim_resident(csd_dev *dev, const struct res_op *op)
{
	struct sim *s = dev->priv;
	char err[400] = "";
	if (s->failed)
		return csd_fail(dev, CS_ERR_DEVICE,
				"sim: an earlier link error left the device in an unknown state; "
				"reopen it");
	/* pe_micro_mt does not decode the 0xF vector group (docs/architecture.md 4.6) */
	if (op->kind == RES_PROGRAM && !s->use_model && dev->pe == CSD_PE_MICRO_MT)
		return csd_fail(dev, CS_ERR_NOT_SUPPORTED,
				"%s: pe=micro_mt does not decode the vector group; run vector "
				"programs on pe=full or pe=lite, or the model engine (sim:...,model)",
				op->prog->entry);
	struct plan_link link = { s, link_send, link_recv, (uint32_t)s->timeout };
	struct plan_stats st = { 0 };
	struct sim_snap a, b;
	snap(s, &a);
	int rc = res_exec(&dev->geom, op, &link, &st, NULL, err, sizeof err);
	snap(s, &b);
	if (rc) {
		s->failed = s->failed || rc == CS_ERR_TIMEOUT || rc == CS_ERR_PROTOCOL;
		return csd_fail(dev, rc, "sim: %s", err);
	}
	count(dev, &a, &b, &st);
	return CS_OK;
}

const struct csd_backend csd_backend_sim = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.forward = sim_forward,
	.backward = sim_backward,
	.wgrad = sim_wgrad,
	.backward_wgrad = sim_backward_wgrad,
	.resident = sim_resident,
};
