/*
 * backend_sim.c - the "sim" device: the Verilated RTL mesh in process. The mesh and its
 * C ABI wrapper have not landed yet; until they do, opening "sim" says so. When they land,
 * this backend feeds plan_exec()'s words to the mesh's host port (plan_link.send) and
 * returns its response words (plan_link.recv), exactly as the usb backend does over its
 * link.
 */
#include "driver/csd_impl.h"

static int sim_open(csd_dev *dev, const char *arg)
{
	(void)arg;
	return csd_fail(dev, CS_ERR_NOT_SUPPORTED,
			"sim: the Verilated mesh is not built into this library yet (rtl/mesh has "
			"not landed); use cpu");
}

const struct csd_backend csd_backend_sim = {
	.name = "sim",
	.open = sim_open,
};
