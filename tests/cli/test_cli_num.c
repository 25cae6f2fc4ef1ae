/*
 * test_cli_num.c - host/cli/cli_num.c: whole-string, range-checked numbers, and every
 * numeric option of cshost refusing a value it used to wrap or truncate (through the built
 * binary, next to this test's directory).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_num.c"

static char cshost[1024];
static char out[8192];

static void test_parse(void **state)
{
	(void)state;
	long long x;
	uint64_t u;
	double d;
	assert_int_equal(cli_parse_int("42", 0, 100, &x), CS_OK);
	assert_int_equal(x, 42);
	assert_int_equal(cli_parse_int("0x10", 0, 100, &x), CS_OK);
	assert_int_equal(x, 16);
	assert_int_equal(cli_parse_int("-3", -5, 5, &x), CS_OK);
	assert_int_equal(cli_parse_int("4294967297", 1, 1 << 20, &x), CS_ERR_RANGE);
	assert_int_equal(cli_parse_int("99999999999999999999", 1, 1 << 20, &x), CS_ERR_RANGE);
	assert_int_equal(cli_parse_int("1.5", 1, 10, &x), CS_ERR_INVALID);
	assert_int_equal(cli_parse_int("", 0, 10, &x), CS_ERR_INVALID);
	assert_int_equal(cli_parse_int(" 5", 0, 10, &x), CS_ERR_INVALID);
	assert_int_equal(cli_parse_int("5 ", 0, 10, &x), CS_ERR_INVALID);
	assert_int_equal(cli_parse_int("5k", 0, 10, &x), CS_ERR_INVALID);
	assert_int_equal(cli_parse_int(NULL, 0, 10, &x), CS_ERR_INVALID);
	assert_int_equal(cli_parse_u64("18446744073709551615", &u), CS_OK);
	assert_true(u == UINT64_MAX);
	assert_int_equal(cli_parse_u64("18446744073709551616", &u), CS_ERR_RANGE);
	assert_int_equal(cli_parse_u64("-1", &u), CS_ERR_INVALID);
	assert_int_equal(cli_parse_double("0.25", 0, 1, &d), CS_OK);
	assert_true(d == 0.25);
	assert_int_equal(cli_parse_double("1.5", 0, 1, &d), CS_ERR_RANGE);
	assert_int_equal(cli_parse_double("nan", 0, 1, &d), CS_ERR_INVALID);
	assert_int_equal(cli_parse_double("inf", 0, 1e9, &d), CS_ERR_INVALID);
	assert_int_equal(cli_parse_double("1e999", 0, 1e9, &d), CS_ERR_INVALID);
	assert_int_equal(cli_parse_double("0.5x", 0, 1, &d), CS_ERR_INVALID);
}

static int run(const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "%s %s 2>&1", cshost, args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void expect_usage_error(const char *args, const char *msg)
{
	int rc = run(args);
	if (rc != 2 || !strstr(out, msg)) {
		fprintf(stderr, "cshost %s: status %d, output '%s', wanted '%s'\n", args, rc, out,
			msg);
		fail();
	}
}

static void test_commands(void **state)
{
	(void)state;
	expect_usage_error("spmm --device cpu --tokens 4 --k 4294967297 --n 4 --sparsity 0.5",
			   "cshost spmm: --k '4294967297': not an integer in [1, 1048576]");
	expect_usage_error("spmm --device cpu --tokens 1.5 --k 4 --n 4 --sparsity 0.5",
			   "cshost spmm: --tokens '1.5': not an integer");
	expect_usage_error("spmm --device cpu --tokens 4 --k 4 --n 4x --sparsity 0.5",
			   "--n '4x'");
	expect_usage_error("spmm --device cpu --tokens 4 --k 4 --n 4 --sparsity 0.5q",
			   "--sparsity '0.5q': not a number in [0, 1]");
	expect_usage_error("spmm --device cpu --tokens 4 --k 4 --n 4 --sparsity 0.5 --seed -1",
			   "--seed '-1'");
	expect_usage_error("sample x.bin --tokens 1.5", "cshost sample: --tokens '1.5'");
	expect_usage_error("sample x.bin --seed 1e3", "cshost sample: --seed '1e3'");
	expect_usage_error("sample x.bin --temperature abc", "--temperature 'abc'");
	expect_usage_error("board selftest --kb 4294967552", "cshost board: --kb '4294967552'");
	expect_usage_error("board selftest --seed 4294967296", "cshost board: --seed");
	expect_usage_error("plot --smooth ''", "cshost plot: --smooth ''");
	expect_usage_error("sparsity show x.yaml --steps 1.5", "cshost sparsity: --steps '1.5'");
	/* a valid run still works */
	assert_int_equal(run("spmm --device cpu:2x2 --tokens 8 --k 16 --n 16 --sparsity 0.5"), 0);
}

static int setup(void **state)
{
	(void)state;
	char self[1024];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	snprintf(cshost, sizeof cshost, "%s/../../bin/cshost", dirname(self));
	if (access(cshost, X_OK) != 0) {
		fprintf(stderr, "%s not built\n", cshost);
		return -1;
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_commands),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
