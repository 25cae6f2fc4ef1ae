/*
 * test_ckpt.c - host/train/ckpt.c: round trip, and every kind of damage refused with a
 * message naming the file: bad magic, other version, header or record checksum, truncation
 * anywhere; a failed save leaves the previous file intact.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "train/ckpt.h"
#include "train_test_util.h"

static char path[256], err[512];
static float wa[1000];
static uint8_t blob[77];

static void save_sample(void)
{
	for (int i = 0; i < 1000; i++)
		wa[i] = (float)i * 0.25f - 7.0f;
	for (int i = 0; i < 77; i++)
		blob[i] = (uint8_t)(i * 13);
	ck_record r[2] = { { .name = "param/w", .kind = CK_F32, .nbytes = sizeof wa, .data = wa },
			   { .name = "sparsity/state", .kind = CK_BYTES, .nbytes = 77,
			     .data = blob } };
	ck_header h = { .model = { 2, 4, 64, 64, 256 }, .step = 42, .seed = 7, .rng_state = 99 };
	assert_int_equal(ck_save(path, &h, r, 2, err, sizeof err), CS_OK);
}

static long file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : (long)st.st_size;
}

static void test_round_trip(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp();
	snprintf(path, sizeof path, "%s/c.bin", dir);
	save_sample();
	ck_file f;
	assert_int_equal(ck_load(path, &f, err, sizeof err), CS_OK);
	assert_int_equal(f.hdr.step, 42);
	assert_true(f.hdr.seed == 7 && f.hdr.rng_state == 99);
	assert_int_equal(f.hdr.model.n_embd, 64);
	const ck_record *r = ck_find(&f, "param/w");
	assert_non_null(r);
	assert_memory_equal(r->data, wa, sizeof wa);
	assert_non_null(ck_find(&f, "sparsity/state"));
	assert_null(ck_find(&f, "param/x"));
	gpt_config other = { 2, 4, 128, 64, 256 };
	assert_int_equal(ck_check_model(&f, &other, path, err, sizeof err), CS_ERR_INVALID);
	assert_non_null(strstr(err, "model.n_embd is 64 in the checkpoint, 128 in the config"));
	ck_free(&f);
	/* no temporary file left behind */
	char tmp[300];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	assert_int_equal(access(tmp, F_OK), -1);
	tt_rmdir(dir);
}

static void corrupt_at(long off, uint8_t x)
{
	FILE *f = fopen(path, "r+b");
	fseek(f, off, SEEK_SET);
	int c = fgetc(f);
	fseek(f, off, SEEK_SET);
	fputc(c ^ x, f);
	fclose(f);
}

static void expect_bad(const char *what)
{
	ck_file f;
	int rc = ck_load(path, &f, err, sizeof err);
	printf("%s\n", err);
	assert_int_equal(rc, CS_ERR_FORMAT);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, what));
}

static void test_damage_is_detected(void **state)
{
	(void)state;
	char *dir = tt_mkdtemp();
	snprintf(path, sizeof path, "%s/c.bin", dir);
	save_sample();
	long n = file_size(path);
	/* every single-byte flip anywhere in the file is caught */
	for (long off = 0; off < n; off += 1 + off / 40) {
		corrupt_at(off, 0x10);
		ck_file f;
		int rc = ck_load(path, &f, err, sizeof err);
		if (rc == CS_OK) {
			fprintf(stderr, "flip at %ld of %ld not detected\n", off, n);
			fail();
		}
		corrupt_at(off, 0x10);
	}
	corrupt_at(0, 1);
	expect_bad("bad magic");
	corrupt_at(0, 1);
	corrupt_at(8, 2);
	expect_bad("version");
	corrupt_at(8, 2);
	corrupt_at(45, 1); /* the step: header checksum */
	expect_bad("header checksum");
	corrupt_at(45, 1);
	corrupt_at(200, 4);
	expect_bad("checksum mismatch in param/w");
	corrupt_at(200, 4);
	for (long cut = n - 1; cut > 0; cut -= 333) {
		assert_int_equal(truncate(path, cut), 0);
		expect_bad("");
		save_sample();
	}
	/* a save that cannot happen leaves the old file as it was */
	char bad[300];
	snprintf(bad, sizeof bad, "%s/nodir/c.bin", dir);
	ck_header h = { 0 };
	assert_int_equal(ck_save(bad, &h, NULL, 0, err, sizeof err), CS_ERR_IO);
	assert_int_equal(file_size(path), n);
	ck_file f;
	assert_int_equal(ck_load(path, &f, err, sizeof err), CS_OK);
	ck_free(&f);
	assert_int_equal(ck_load("/nonexistent.bin", &f, err, sizeof err), CS_ERR_NOT_FOUND);
	tt_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_damage_is_detected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
