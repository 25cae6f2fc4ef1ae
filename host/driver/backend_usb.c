/* backend_usb.c - the "usb" device (placeholder until the libusb backend lands). */
#include "driver/csd_impl.h"

static int usb_open(csd_dev *dev, const char *arg)
{
	(void)arg;
	return csd_fail(dev, CS_ERR_NOT_SUPPORTED, "usb: backend not built yet");
}

const struct csd_backend csd_backend_usb = {
	.name = "usb",
	.open = usb_open,
};
