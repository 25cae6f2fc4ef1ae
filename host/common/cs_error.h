/*
 * cs_error.h - the one error enum of the host library (driver, train, sparsity, tools).
 * 0 is success, errors are negative; functions that count return >= 0 on success.
 * Library code returns these and never exits; only main()s turn them into exit codes.
 */
#ifndef CS_ERROR_H
#define CS_ERROR_H

enum cs_error {
	CS_OK = 0,
	CS_ERR_INVALID = -1,       /* bad argument or input value */
	CS_ERR_NO_MEM = -2,        /* allocation failed */
	CS_ERR_IO = -3,            /* file or link I/O failed */
	CS_ERR_TIMEOUT = -4,       /* a wait ran out of time */
	CS_ERR_NOT_FOUND = -5,     /* no such file, device or entry */
	CS_ERR_NOT_SUPPORTED = -6, /* the backend or build cannot do this */
	CS_ERR_DEVICE = -7,        /* the device reported an error */
	CS_ERR_NO_DEVICE = -8,     /* the device went away (unplugged) */
	CS_ERR_PROTOCOL = -9,      /* malformed or unexpected packet on the link */
	CS_ERR_FORMAT = -10,       /* malformed file: bad magic, version, size or checksum */
	CS_ERR_CONFIG = -11,       /* configuration error (message names file:line) */
	CS_ERR_RANGE = -12,        /* value or shape outside what the device supports */
	CS_ERR_INTERRUPTED = -13,  /* stopped by a signal */
	CS_ERR_EXISTS = -14,       /* would overwrite something that exists */
};

/* "CS_ERR_TIMEOUT" */
const char *cs_error_name(int err);
/* "operation timed out" (lowercase, no period) */
const char *cs_strerror(int err);

#endif /* CS_ERROR_H */
