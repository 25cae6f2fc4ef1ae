/*
 * cli_num.c - strict parsing of numeric command-line arguments (see cli_num.h).
 */
#include "cli/cli_num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/cs_error.h"

/* strtoll and friends skip leading blanks and take a sign; we want the bare number */
static int starts_like_number(const char *s, int sign_ok)
{
	if (sign_ok && (*s == '-' || *s == '+'))
		s++;
	return isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]));
}

int cli_parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	if (!s || !starts_like_number(s, 1))
		return CS_ERR_INVALID;
	errno = 0;
	long long x = strtoll(s, &end, 0);
	if (*end)
		return CS_ERR_INVALID;
	if (errno == ERANGE || x < min || x > max)
		return CS_ERR_RANGE;
	*out = x;
	return CS_OK;
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !starts_like_number(s, 0))
		return CS_ERR_INVALID;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (*end)
		return CS_ERR_INVALID;
	if (errno == ERANGE)
		return CS_ERR_RANGE;
	*out = x;
	return CS_OK;
}

int cli_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	if (!s || !starts_like_number(s, 1))
		return CS_ERR_INVALID;
	errno = 0;
	double x = strtod(s, &end);
	if (*end || !isfinite(x))
		return CS_ERR_INVALID;
	if (errno == ERANGE || x < min || x > max)
		return CS_ERR_RANGE;
	*out = x;
	return CS_OK;
}

int cli_int(const char *cmd, const char *opt, const char *s, long long min, long long max,
	    long long *out)
{
	if (!cli_parse_int(s, min, max, out))
		return 0;
	fprintf(stderr, "cshost %s: %s '%s': not an integer in [%lld, %lld]\n", cmd, opt,
		s ? s : "", min, max);
	return -1;
}

int cli_u64(const char *cmd, const char *opt, const char *s, uint64_t *out)
{
	if (!cli_parse_u64(s, out))
		return 0;
	fprintf(stderr, "cshost %s: %s '%s': not an integer in [0, 2^64-1]\n", cmd, opt,
		s ? s : "");
	return -1;
}

int cli_double(const char *cmd, const char *opt, const char *s, double min, double max,
	       double *out)
{
	if (!cli_parse_double(s, min, max, out))
		return 0;
	fprintf(stderr, "cshost %s: %s '%s': not a number in [%g, %g]\n", cmd, opt, s ? s : "",
		min, max);
	return -1;
}
