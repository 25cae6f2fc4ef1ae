/* cs_error.c - names and messages for enum cs_error. */
#include "cs_error.h"

#include <stddef.h>

static const struct {
	int code;
	const char *name;
	const char *msg;
} cs_errors[] = {
	{ CS_OK, "CS_OK", "success" },
	{ CS_ERR_INVALID, "CS_ERR_INVALID", "invalid argument" },
	{ CS_ERR_NO_MEM, "CS_ERR_NO_MEM", "out of memory" },
	{ CS_ERR_IO, "CS_ERR_IO", "input/output error" },
	{ CS_ERR_TIMEOUT, "CS_ERR_TIMEOUT", "operation timed out" },
	{ CS_ERR_NOT_FOUND, "CS_ERR_NOT_FOUND", "not found" },
	{ CS_ERR_NOT_SUPPORTED, "CS_ERR_NOT_SUPPORTED", "not supported by this backend" },
	{ CS_ERR_DEVICE, "CS_ERR_DEVICE", "device reported an error" },
	{ CS_ERR_NO_DEVICE, "CS_ERR_NO_DEVICE", "device disconnected" },
	{ CS_ERR_PROTOCOL, "CS_ERR_PROTOCOL", "protocol error on the link" },
	{ CS_ERR_FORMAT, "CS_ERR_FORMAT", "malformed file" },
	{ CS_ERR_CONFIG, "CS_ERR_CONFIG", "configuration error" },
	{ CS_ERR_RANGE, "CS_ERR_RANGE", "value out of range" },
	{ CS_ERR_INTERRUPTED, "CS_ERR_INTERRUPTED", "interrupted" },
	{ CS_ERR_EXISTS, "CS_ERR_EXISTS", "already exists" },
};

const char *cs_error_name(int err)
{
	for (size_t i = 0; i < sizeof cs_errors / sizeof cs_errors[0]; i++)
		if (cs_errors[i].code == err)
			return cs_errors[i].name;
	return "CS_ERR_UNKNOWN";
}

const char *cs_strerror(int err)
{
	for (size_t i = 0; i < sizeof cs_errors / sizeof cs_errors[0]; i++)
		if (cs_errors[i].code == err)
			return cs_errors[i].msg;
	return "unknown error";
}
