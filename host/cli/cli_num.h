/*
 * cli_num.h - numbers on the cshost command line. Every numeric option goes through these:
 * the whole argument must be the number (no trailing text, no blanks, no fraction for an
 * integer), and it must lie in the option's range, so that `--k 4294967297` or
 * `--tokens 1.5` is a usage error instead of K=1 or 1 token.
 */
#ifndef CS_CLI_NUM_H
#define CS_CLI_NUM_H

#include <stdint.h>

/* 0 on success; CS_ERR_INVALID when s is not such a number, CS_ERR_RANGE when outside
 * [min, max]. Integers are decimal or 0x hex; doubles must be finite. */
int cli_parse_int(const char *s, long long min, long long max, long long *out);
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_double(const char *s, double min, double max, double *out);

/* The same, printing "cshost CMD: OPT 'S': not an integer in [MIN, MAX]" to stderr on
 * error; return 0 or -1 (the caller exits with 2). */
int cli_int(const char *cmd, const char *opt, const char *s, long long min, long long max,
	    long long *out);
int cli_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
int cli_double(const char *cmd, const char *opt, const char *s, double min, double max,
	       double *out);

#endif /* CS_CLI_NUM_H */
