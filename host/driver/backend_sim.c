/*
 * backend_sim.c - the "sim" device: the mesh in process, fed by plan_exec() through the
 * host port's 32-bit word interface, exactly as the usb backend feeds the board.
 *
 * URI: "sim[:RxC][,awords=N][,bwords=N][,model][,timeout=CYCLES]".
 * CSD_SIM_FST=FILE (rtl engine): load the --trace-fst build instead (libmesh_..._fst.so,
 * built on demand) and write an FST waveform of the run to FILE (the first
 * CSD_SIM_FST_CYCLES cycles when that is set and nonzero).
 * Two engines behind the same word interface:
 *   - rtl (default): the Verilated rtl/mesh/mesh_top with the real PE. The Verilog mesh
 *     shape and SRAM sizes are compile-time parameters, so each (shape, sizes) is its own
 *     shared object $CSD_SIM_DIR/libmesh_RxC.so (default sizes) or libmesh_RxC_aA_bB.so,
 *     built by host/driver/sim.mk (make builds a default set) or on demand here (make is
 *     run for the missing or stale object: older than any .v file under rtl/mesh, rtl/pe, rtl/sram or the
 *     harness), loaded with dlopen. Counters come from the model: cycles, MAC-busy
 *     PE-cycles (mac_busy_o of every PE) and the words the host port actually took/gave.
 *     Every wait is bounded in cycles (timeout=, default 2M cycles without progress).
 *   - model: the word-level C model verif/models/mesh_model.c (one pe_model per tile):
 *     no cycles, same results; for machines without Verilator and for the SAN build.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	dev->ctr.nnz_streamed += st->nnz;
}

/* ---- loading a Verilated build ------------------------------------------------------- */

static long newest_mtime(const char *dir, const char *suffix)
{
	char p[2048];
	long best = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	size_t sl = strlen(suffix);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < sl || strcmp(e->d_name + l - sl, suffix))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		struct stat st;
		if (!stat(p, &st) && st.st_mtime > best)
			best = st.st_mtime;
	}
	closedir(d);
	return best;
}

static int so_stale(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return 1;
	if (getenv("CSD_SIM_NOBUILD"))
		return 0;
	static const char *const dirs[] = { "rtl/mesh", "rtl/pe", "rtl/sram" };
	char d[1024];
	long newest = 0, t;
	for (size_t i = 0; i < 3; i++) {
		snprintf(d, sizeof d, "%s/%s", CSD_SIM_ROOT, dirs[i]);
		if ((t = newest_mtime(d, ".v")) > newest)
			newest = t;
	}
	snprintf(d, sizeof d, "%s/host/driver", CSD_SIM_ROOT);
	if ((t = newest_mtime(d, "sim_harness.cpp")) > newest)
		newest = t;
	return st.st_mtime < newest;
}

static int sim_load(csd_dev *dev, struct sim *s)
{
	const struct plan_geom *g = &dev->geom;
	const char *dir = getenv("CSD_SIM_DIR") ? getenv("CSD_SIM_DIR") : CSD_SIM_BUILD;
	/* a waveform is asked for: the separate --trace-fst build (..._fst.so) */
	const char *fst = getenv("CSD_SIM_FST");
	int trace = fst && *fst;
	char name[96];
	if (g->a_words == 16384 && g->b_words == 8192)
		snprintf(name, sizeof name, "libmesh_%dx%d%s.so", g->rows, g->cols,
			 trace ? "_fst" : "");
	else
		snprintf(name, sizeof name, "libmesh_%dx%d_a%u_b%u%s.so", g->rows, g->cols,
			 g->a_words, g->b_words, trace ? "_fst" : "");
	snprintf(s->path, sizeof s->path, "%s/%s", dir, name);
	if (so_stale(s->path)) {
		if (getenv("CSD_SIM_NOBUILD"))
			return csd_fail(dev, CS_ERR_NOT_FOUND,
					"sim: %s not built (CSD_SIM_NOBUILD is set)", s->path);
		char cmd[2600];
		/* build on demand (one Verilator build at a time: sim_build.sh takes a lock) */
		snprintf(cmd, sizeof cmd,
			 "cd '%s' && ./host/driver/sim_build.sh '%s' %d %d %u %u %s >&2",
			 CSD_SIM_ROOT, s->path, g->rows, g->cols, g->a_words, g->b_words,
			 trace ? "fst" : "");
		fprintf(stderr, "sim: building %s (Verilator, about a minute)\n", s->path);
		if (system(cmd) != 0)
			return csd_fail(dev, CS_ERR_IO, "sim: building %s failed (see %.*s.build.log)",
					s->path, (int)(strlen(s->path) - 3), s->path);
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
#undef SYM
	int r, c;
	uint32_t aw, bw;
	s->api.params(&r, &c, &aw, &bw);
	if (s->api.abi() != SIMH_ABI || r != g->rows || c != g->cols || aw != g->a_words ||
	    bw != g->b_words)
		return csd_fail(dev, CS_ERR_IO, "sim: %s is a %dx%d a%u b%u build (ABI %d)",
				s->path, r, c, aw, bw, s->api.abi());
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

static int sim_open(csd_dev *dev, const char *arg)
{
	char geom[256] = "", err[256] = "";
	struct sim *s = calloc(1, sizeof *s);
	if (!s)
		return csd_fail(dev, CS_ERR_NO_MEM, "sim: out of memory");
	dev->priv = s;
	s->timeout = 2000000ull; /* ~25 s of the 4x4 model; no legitimate wait comes near it */
	/* our options out, the geometry to csd_parse_geom */
	const char *p = arg;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t l = end ? (size_t)(end - p) : strlen(p);
		if (l == 5 && !strncmp(p, "model", 5)) {
			s->use_model = 1;
		} else if (l > 8 && !strncmp(p, "timeout=", 8)) {
			char *e;
			unsigned long long v = strtoull(p + 8, &e, 10);
			if (e != p + l || !v) {
				sim_close(dev);
				return csd_fail(dev, CS_ERR_INVALID, "sim: bad timeout in '%s'", arg);
			}
			s->timeout = v;
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
	if (rc) {
		sim_close(dev);
		return rc;
	}
	const struct plan_geom *g = &dev->geom;
	if ((g->a_words & (g->a_words - 1)) || g->rows * g->cols > 255) {
		sim_close(dev);
		return csd_fail(dev, CS_ERR_INVALID,
				"sim: awords must be a power of two and the mesh at most 255 PEs");
	}
	if (s->use_model) {
		if (mesh_model_init(&s->mm, g->rows, g->cols, g->a_words, g->b_words)) {
			sim_close(dev);
			return csd_fail(dev, CS_ERR_NO_MEM, "sim: cannot build the mesh model");
		}
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

const struct csd_backend csd_backend_sim = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.forward = sim_forward,
	.backward = sim_backward,
	.wgrad = sim_wgrad,
};
