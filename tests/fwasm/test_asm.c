/*
 * test_asm.c - the PE assembler/disassembler (host/fwasm) and the fw/ programs:
 *   - encodings of every instruction form against words worked out by hand from the field
 *     layouts of docs/architecture.md 4.3;
 *   - round trip for every fw program: assemble, disassemble, reassemble = same image;
 *   - every word of the 0xF group (loads, stores, the vector group of 4.4) round trips;
 *   - the kernels image has every entry point the driver's task tables name, for many
 *     mesh shapes;
 *   - .bin serialization: round trip, and rejection of bad magic, version, size, CRC;
 *   - malformed source is rejected with "file:line: what";
 *   - .include: files beside the including one, nested, their errors with both positions,
 *     missing files, cycles and the depth limit refused; the fw/ programs built into the
 *     library assemble to the images `cshost asm` makes from the files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cs_error.h"
#include "driver/fw.h"
#include "driver/plan.h"
#include "fwasm/fwasm.h"
#include "../support/repo_file.h"

static void asm_ok(struct csd_fw *fw, const char *src)
{
	char err[512] = "";
	int rc = fwasm_assemble(fw, src, "t.s", err, sizeof err);
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, CS_OK);
}

static void test_encodings(void **state)
{
	(void)state;
	static const struct {
		const char *src;
		uint16_t w[2];
		int n;
	} cases[] = {
		{ "ret", { 0x0000 }, 1 },
		{ "nop", { 0x0001 }, 1 },
		{ "li r3, 0xbeef", { 0x1600, 0xbeef }, 2 },
		{ "li r1, -1", { 0x1200, 0xffff }, 2 },
		{ "addi r2, r5, -3", { 0x2000 | 2 << 9 | 5 << 6 | 0x3d }, 1 },
		{ "add r1, r2, r3", { 0x3000 | 1 << 9 | 2 << 6 | 3 << 3 | 0 }, 1 },
		{ "sub r7, r6, r5", { 0x3000 | 7 << 9 | 6 << 6 | 5 << 3 | 1 }, 1 },
		{ "mul r7, r5, r4", { 0x3000 | 7 << 9 | 5 << 6 | 4 << 3 | 7 }, 1 },
		{ "shr r0, r1, r2", { 0x3000 | 0 << 9 | 1 << 6 | 2 << 3 | 6 }, 1 },
		{ "whi r7", { 0x4000 | 7 << 9 | 0 }, 1 },
		{ "wlo r1", { 0x4000 | 1 << 9 | 1 }, 1 },
		{ "wcol r2", { 0x4000 | 2 << 9 | 2 }, 1 },
		{ "x: beq r1, r2, x", { 0x5000 | 0 << 11 | 1 << 8 | 2 << 5 | 0x1f }, 1 },
		{ "bne r7, r0, y\ny: ret", { 0x5000 | 1 << 11 | 7 << 8 | 0 << 5 | 0, 0 }, 2 },
		{ "z: djnz r7, z", { 0x6000 | 7 << 9 | 0x1ff }, 1 },
		{ "jmp w\nw: ret", { 0x7000, 0x0000 }, 2 },
		{ "v: nop\njmp v", { 0x0001, 0x7ffe }, 2 },
		{ "send 5, r1, r2", { 0x8000 | 5 << 8 | 0 << 7 | 1 << 4 | 2 << 1 }, 1 },
		{ "send 15, r7, r6, ctrl", { 0x8000 | 15 << 8 | 1 << 7 | 7 << 4 | 6 << 1 }, 1 },
		{ "block 2", { 0x9002 }, 1 },
		{ "unblock 20", { 0x9800 | 20 }, 1 },
		{ "axpy", { 0xa000 }, 1 },
		{ "dot", { 0xb000 }, 1 },
		{ "redv 3", { 0xc300 }, 1 },
		{ "redv.st", { 0xc080 }, 1 },
		{ "sendv 5", { 0xd500 }, 1 },
		{ "fill", { 0xe000 }, 1 },
		{ "lda r1, [r2]", { 0xf000 | 1 << 9 | 2 << 6 | 0 }, 1 },
		{ "sta r1, [r2]", { 0xf000 | 1 << 9 | 2 << 6 | 1 }, 1 },
		{ "ldb r3, [r4]", { 0xf000 | 3 << 9 | 4 << 6 | 2 }, 1 },
		{ "stb.h r3, [r4]", { 0xf000 | 3 << 9 | 4 << 6 | 4 | 3 }, 1 },
		{ "vfma r3, r4", { 0xf000 | 3 << 9 | 4 << 6 | 1 << 3 | 6 }, 1 },
		{ "vfma r3, r4, r2", { 0xf000 | 3 << 9 | 4 << 6 | 1 << 3 | 2 }, 1 },
		{ "vsum2 r5", { 0xf000 | 5 << 9 | 2 << 3 }, 1 },
		{ "cvt.bf r1", { 0xf000 | 1 << 9 | 3 << 3 }, 1 },
		{ "vlut r2", { 0xf000 | 2 << 9 | 4 << 3 | 6 }, 1 },
		{ "vlut r2, r0", { 0xf000 | 2 << 9 | 4 << 3 }, 1 },
		{ "vlut.bf r2, r1", { 0xf000 | 2 << 9 | 1 << 6 | 4 << 3 | 6 }, 1 },
		{ "vlut.bf r4, r7, r3", { 0xf000 | 4 << 9 | 7 << 6 | 4 << 3 | 3 }, 1 },
		{ "vdot2 r4, r5", { 0xf000 | 4 << 9 | 5 << 6 | 2 << 3 }, 1 },
		{ "vsum4 r5", { 0xf000 | 5 << 9 | 2 << 3 | 1 }, 1 },
		{ "vdot4 r4, r5", { 0xf000 | 4 << 9 | 5 << 6 | 2 << 3 | 1 }, 1 },
		{ "vmul r2, r3", { 0xf000 | 2 << 9 | 3 << 6 | 5 }, 1 },
		{ "cpa r4", { 0xf000 | 4 << 6 | 3 << 3 }, 1 },
		{ "vlut.a r4, r2, r1", { 0xf000 | 4 << 9 | 2 << 6 | 3 << 3 | 1 }, 1 },
		{ "rsqrt r7, [r6]", { 0xf000 | 7 << 9 | 6 << 6 | 5 << 3 }, 1 },
		{ "vmac r1, r2, r3", { 0xf000 | 1 << 9 | 2 << 6 | 6 << 3 | 3 }, 1 },
		{ "vdot r7, r0, r5", { 0xf000 | 7 << 9 | 0 << 6 | 7 << 3 | 5 }, 1 },
		{ "vaxpy r2, r3", { 0xf000 | 2 << 9 | 3 << 6 | 4 }, 1 },
		{ "cvt.bh r5", { 0xf000 | 5 << 9 | 5 }, 1 },
		{ ".equ C, 7\nsendv C", { 0xd700 }, 1 },
		{ ".word 0x1234", { 0x1234 }, 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct csd_fw fw;
		asm_ok(&fw, cases[i].src);
		if (fw.n_instr != cases[i].n || memcmp(fw.imem, cases[i].w, 2 * (size_t)cases[i].n)) {
			print_error("'%s': got %d words %04x %04x, want %04x %04x\n", cases[i].src,
				    fw.n_instr, fw.imem[0], fw.imem[1], cases[i].w[0], cases[i].w[1]);
			fail();
		}
	}
}

static void round_trip(const struct csd_fw *fw)
{
	char *text, err[512] = "";
	assert_int_equal(fwasm_disassemble(fw, &text), CS_OK);
	struct csd_fw again;
	int rc = fwasm_assemble(&again, text, "disassembly", err, sizeof err);
	if (rc)
		print_error("%s\n%s\n", err, text);
	assert_int_equal(rc, CS_OK);
	assert_int_equal(again.n_instr, fw->n_instr);
	assert_memory_equal(again.imem, fw->imem, (size_t)fw->n_instr * 2);
	assert_int_equal(again.n_syms, fw->n_syms);
	for (int i = 0; i < fw->n_syms; i++) {
		assert_string_equal(again.syms[i].name, fw->syms[i].name);
		assert_int_equal(again.syms[i].pc, fw->syms[i].pc);
	}
	free(text);
}

static void test_fw_round_trip(void **state)
{
	(void)state;
	int n = 0;
	for (const struct csd_fw_source *s = csd_fw_sources; s->name; s++, n++) {
		struct csd_fw fw;
		char err[512] = "";
		int rc = csd_fw_get(&fw, s->name, err, sizeof err);
		if (rc)
			print_error("%s\n", err);
		assert_int_equal(rc, CS_OK);
		assert_true(fw.n_instr > 0);
		round_trip(&fw);
	}
	assert_true(n >= 2); /* kernels and selftest */
	/* every raw word too: a disassembly must survive words that are not instructions */
	struct csd_fw raw = { .n_instr = 256 };
	for (int i = 0; i < 256; i++)
		raw.imem[i] = (uint16_t)(i * 0x9e37u + 0x1234u);
	round_trip(&raw);
}

/* Every word of the 0xF group: disassembled text reassembles to the same word, and the
 * extended group prints its mnemonics (the rest, reserved encodings, stay .word). */
static void test_ext_group(void **state)
{
	(void)state;
	struct csd_fw fw = { .n_instr = 256 };
	for (unsigned hi = 0; hi < 16; hi++) {
		for (int i = 0; i < 256; i++)
			fw.imem[i] = (uint16_t)(0xf000 | hi << 8 | i);
		round_trip(&fw);
	}
	static const struct {
		uint16_t w;
		const char *text;
	} cases[] = {
		{ 0xf000 | 3 << 9 | 4 << 6 | 1 << 3 | 6, "vfma r3, r4, r6" },
		{ 0xf000 | 5 << 9 | 2 << 3, "vsum2 r5" },
		{ 0xf000 | 1 << 9 | 3 << 3, "cvt.bf r1" },
		{ 0xf000 | 2 << 9 | 4 << 3 | 1, "vlut r2, r1" },
		{ 0xf000 | 7 << 9 | 6 << 6 | 5 << 3, "rsqrt r7, [r6]" },
		{ 0xf000 | 1 << 9 | 2 << 6 | 6 << 3 | 3, "vmac r1, r2, r3" },
		{ 0xf000 | 4 << 9 | 5 << 6 | 7 << 3 | 6, "vdot r4, r5, r6" },
		{ 0xf000 | 2 << 9 | 3 << 6 | 4, "vaxpy r2, r3" },
		{ 0xf000 | 2 << 9 | 5, "cvt.bh r2" },
		{ 0xf000 | 2 << 9 | 3 << 6 | 5, "vmul r2, r3" }, /* cvt.bh with rs != 0 */
		{ 0xf000 | 4 << 6 | 3 << 3, "cpa r4" },          /* cvt.bf, rs != 0, rd = 0 */
		{ 0xf000 | 4 << 6 | 3 << 3 | 2, ".word" },      /* cvt.bf, rs != 0, rd = 0, rt */
		{ 0xf000 | 4 << 9 | 2 << 6 | 3 << 3 | 1, "vlut.a r4, r2, r1" }, /* cvt.bf, rs, rd */
		{ 0xf000 | 2 << 9 | 1 << 6 | 4 << 3, "vlut.bf r2, r1, r0" }, /* vlut, rs != 0 */
		{ 0xf000 | 4 << 9 | 5 << 6 | 2 << 3, "vdot2 r4, r5" },       /* vsum2, rs != 0 */
		{ 0xf000 | 2 << 3 | 1, "vsum4 r0" },            /* vsum2, rt = 1 */
		{ 0xf000 | 4 << 9 | 5 << 6 | 2 << 3 | 1, "vdot4 r4, r5" }, /* vdot2, rt = 1 */
		{ 0xf000 | 2 << 3 | 2, ".word" },               /* vsum2 with rt = 2 */
		{ 0xf000 | 5 << 3 | 1, ".word" },               /* rsqrt with low bits set */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct csd_fw one = { .n_instr = 1 };
		char *text;
		one.imem[0] = cases[i].w;
		assert_int_equal(fwasm_disassemble(&one, &text), CS_OK);
		if (!strstr(text, cases[i].text)) {
			print_error("0x%04x: '%s', want '%s'\n", cases[i].w, text, cases[i].text);
			fail();
		}
		free(text);
	}
}

static void test_kernel_entries(void **state)
{
	(void)state;
	struct csd_fw fw;
	char err[256];
	assert_int_equal(csd_fw_get(&fw, "kernels", err, sizeof err), CS_OK);
	for (int R = 1; R <= 5; R++)
		for (int C = 1; C <= 5; C++) {
			struct plan_geom g = { .rows = R, .cols = C };
			uint32_t t[32];
			for (int r = 0; r < R; r++)
				for (int c = 0; c < C; c++)
					for (int k = 0; k < 3; k++)
						assert_int_equal(
							plan_tasks(&g, &fw, (enum plan_kernel)k, r, c, t),
							CS_OK);
		}
	assert_int_equal(csd_fw_get(&fw, "selftest", err, sizeof err), CS_OK);
	assert_true(csd_fw_find(&fw, "st_ctl") >= 0);
	assert_int_equal(csd_fw_get(&fw, "nosuch", err, sizeof err), CS_ERR_NOT_FOUND);
}

static void test_bin_format(void **state)
{
	(void)state;
	struct csd_fw fw, back;
	char err[256];
	assert_int_equal(csd_fw_get(&fw, "kernels", err, sizeof err), CS_OK);
	uint8_t buf[16384];
	long n = csd_fw_serialize(&fw, buf, sizeof buf);
	assert_true(n > 0);
	assert_int_equal(csd_fw_parse(&back, buf, (size_t)n, err, sizeof err), CS_OK);
	assert_int_equal(back.n_instr, fw.n_instr);
	assert_memory_equal(back.imem, fw.imem, (size_t)fw.n_instr * 2);
	assert_int_equal(csd_fw_find(&back, "wg_cr_top"), csd_fw_find(&fw, "wg_cr_top"));
	buf[20] ^= 1; /* corrupt a symbol byte */
	assert_int_equal(csd_fw_parse(&back, buf, (size_t)n, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "checksum"));
	buf[20] ^= 1;
	assert_int_equal(csd_fw_parse(&back, buf, (size_t)n - 2, err, sizeof err), CS_ERR_FORMAT);
	buf[4] = 9;
	assert_int_equal(csd_fw_parse(&back, buf, (size_t)n, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "version"));
	buf[0] = 'X';
	assert_int_equal(csd_fw_parse(&back, buf, (size_t)n, err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "magic"));
}

static void test_malformed(void **state)
{
	(void)state;
	static const struct {
		const char *src;
		const char *where; /* "t.s:LINE:" */
		const char *what;
	} cases[] = {
		{ "ret\nfrob r1\n", "t.s:2:", "unknown instruction 'frob'" },
		{ "; c\n\nadd r1, r2, r8\n", "t.s:3:", "'r8' is not a register" },
		{ "addi r1, r2, 32\n", "t.s:1:", "imm6 32 out of range" },
		{ "li r1, 70000\n", "t.s:1:", "out of range" },
		{ "beq r1, r2, nowhere\n", "t.s:1:", "unknown name 'nowhere'" },
		{ "a: ret\na: ret\n", "t.s:2:", "'a' defined twice" },
		{ "add r1, r2\n", "t.s:1:", "add takes 3 operands, not 2" },
		{ "x: nop\n.word 0\n.word 0\n.word 0\n.word 0\n.word 0\n.word 0\n.word 0\n.word 0\n"
		  ".word 0\n.word 0\n.word 0\n.word 0\n.word 0\n.word 0\n.word 0\n.word 0\n"
		  "bne r1, r2, x\n",
		  "t.s:18:", "too far" },
		{ ".entry missing\nret\n", "t.s:1:", "no label 'missing'" },
		{ "send 16, r1, r2\n", "t.s:1:", "color 16 out of range" },
		{ "send 1, r1, r2, data\n", "t.s:1:", "'ctrl'" },
		{ "block 32\n", "t.s:1:", "task id 32" },
		{ "lda r1, r2\n", "t.s:1:", "want [rN]" },
		{ "li r1, 0x\n", "t.s:1:", "bad number" },
		{ "1abel: ret\n", "t.s:1:", "bad label" },
		{ "ret r1\n", "t.s:1:", "ret takes 0 operands" },
		{ "vlut.bf r1, r0\n", "t.s:1:", "cannot be r0" },
		{ "vdot2 r1, r0\n", "t.s:1:", "cannot be r0" },
		{ "vdot4 r1, r0\n", "t.s:1:", "cannot be r0" },
		{ "vmul r1, r0\n", "t.s:1:", "cannot be r0" },
		{ "cpa r0\n", "t.s:1:", "cannot be r0" },
		{ "vlut.a r1, r0, r2\n", "t.s:1:", "cannot be r0" },
		{ "vlut.a r0, r1, r2\n", "t.s:1:", "cannot be r0" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct csd_fw fw;
		char err[512] = "";
		int rc = fwasm_assemble(&fw, cases[i].src, "t.s", err, sizeof err);
		if (rc != CS_ERR_FORMAT || strncmp(err, cases[i].where, strlen(cases[i].where)) ||
		    !strstr(err, cases[i].what)) {
			print_error("case %zu: rc %d, message '%s', want '%s ... %s'\n", i, rc, err,
				    cases[i].where, cases[i].what);
			fail();
		}
	}
	/* a program longer than IMEM */
	char *big = malloc(300 * 5 + 1);
	big[0] = 0;
	for (int i = 0; i < 300; i++)
		strcat(big, "nop\n");
	struct csd_fw fw;
	char err[512];
	assert_int_equal(fwasm_assemble(&fw, big, "big.s", err, sizeof err), CS_ERR_FORMAT);
	assert_non_null(strstr(err, "big.s:257:"));
	free(big);
	assert_int_equal(fwasm_assemble_file(&fw, "/nonexistent/x.s", err, sizeof err),
			 CS_ERR_NOT_FOUND);
	assert_non_null(strstr(err, "/nonexistent/x.s"));
}

/* fwasm_files over an in-memory table {path, text}; "d/deepN.inc" includes deep(N+1) up
 * to *(int *)arg levels; fan.inc includes fan2.inc 16 times, which includes empty.inc 16
 * times: 273 includes, more than one program may follow. */
#define X4(s) s s s s
#define X16(s) X4(X4(s))
static const char *const inc_files[][2] = {
	{ "d/fan.inc", X16(".include \"fan2.inc\"\n") },
	{ "d/fan2.inc", X16(".include \"empty.inc\"\n") },
	{ "d/empty.inc", "; nothing\n" },
	{ "d/blk.inc", "; the constants\n.equ K, 5\n" },
	{ "d/body.inc", "x:\taddi r1, r1, K\n.include \"leaf.inc\"\n.entry x\n" },
	{ "d/leaf.inc", "\tnop\n" },
	{ "d/bad.inc", "ret\nfrob r1\n" },
	{ "d/mid.inc", "nop\n.include \"bad.inc\"\n" },
	{ "d/c1.inc", ".include \"c2.inc\"\n" },
	{ "d/c2.inc", ".include \"c1.inc\"\n" },
	{ "d/ent.inc", "nop\n.entry nolabel\n" },
	{ "d/twice.inc", "x: nop\n" },
};

static int read_table(void *arg, const char *path, char **text, char *err, size_t errlen)
{
	int n;
	if (sscanf(path, "d/deep%d.inc", &n) == 1) {
		char buf[64];
		if (n < *(int *)arg)
			snprintf(buf, sizeof buf, ".include \"deep%d.inc\"\n", n + 1);
		else
			snprintf(buf, sizeof buf, "nop\n");
		*text = strdup(buf);
		return CS_OK;
	}
	for (size_t i = 0; i < sizeof inc_files / sizeof inc_files[0]; i++)
		if (!strcmp(inc_files[i][0], path)) {
			*text = strdup(inc_files[i][1]);
			return CS_OK;
		}
	snprintf(err, errlen, "%s: not in the table", path);
	return CS_ERR_NOT_FOUND;
}

static void test_include(void **state)
{
	(void)state;
	int levels = 8;
	const struct fwasm_files files = { .read = read_table, .arg = &levels };
	struct csd_fw fw;
	char err[512] = "";
	/* found beside the including file, nested, constants and entries shared */
	const char *top = ".include \"blk.inc\"\nnop\n.include \"body.inc\"\nret\n";
	int rc = fwasm_assemble_files(&fw, top, "d/top.s", &files, err, sizeof err);
	if (rc)
		print_error("%s\n", err);
	assert_int_equal(rc, CS_OK);
	static const uint16_t want[] = { 0x0001, 0x2000 | 1 << 9 | 1 << 6 | 5, 0x0001, 0x0000 };
	assert_int_equal(fw.n_instr, 4);
	assert_memory_equal(fw.imem, want, sizeof want);
	assert_int_equal(csd_fw_find(&fw, "x"), 1);
	assert_string_equal(fw.name, "top");
	/* 8 levels below the file are allowed, a 9th is not */
	assert_int_equal(fwasm_assemble_files(&fw, ".include \"deep1.inc\"\n", "d/top.s", &files,
					      err, sizeof err),
			 CS_OK);
	assert_int_equal(fw.n_instr, 1);
	levels = 9;
	static const struct {
		const char *src;
		int rc;
		const char *where;
		const char *what;
	} cases[] = {
		{ "nop\n\n.include \"nosuch.inc\"\n", CS_ERR_NOT_FOUND, "d/top.s:3:",
		  ".include \"nosuch.inc\": d/nosuch.inc: not in the table" },
		{ "nop\n.include \"mid.inc\"\n", CS_ERR_FORMAT, "d/bad.inc:2:",
		  "unknown instruction 'frob' (included from d/mid.inc:2, d/top.s:2)" },
		{ ".include \"c1.inc\"\n", CS_ERR_FORMAT, "d/c2.inc:1:",
		  "a cycle (d/top.s -> d/c1.inc -> d/c2.inc -> d/c1.inc)" },
		{ "nop\n.include \"top.s\"\n", CS_ERR_FORMAT, "d/top.s:2:",
		  "a cycle (d/top.s -> d/top.s)" },
		{ ".include \"deep1.inc\"\n", CS_ERR_FORMAT, "d/deep8.inc:1:",
		  ".include \"deep9.inc\": includes nested deeper than 8 "
		  "(included from d/deep7.inc:1" },
		{ ".include \"ent.inc\"\n", CS_ERR_FORMAT, "d/ent.inc:2:", "no label 'nolabel'" },
		{ "x: ret\n.include \"twice.inc\"\n", CS_ERR_FORMAT, "d/twice.inc:1:",
		  "'x' defined twice (included from d/top.s:2)" },
		{ ".include blk.inc\n", CS_ERR_FORMAT, "d/top.s:1:", "want \"NAME\"" },
		{ ".include \"../blk.inc\"\n", CS_ERR_FORMAT, "d/top.s:1:",
		  "a file beside this one" },
		{ ".include \"blk.inc\", \"leaf.inc\"\n", CS_ERR_FORMAT, "d/top.s:1:",
		  ".include takes 1 operand" },
		{ ".include \"fan.inc\"\n", CS_ERR_FORMAT, "d/fan.inc:16:",
		  "more than 256 includes in one program" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		err[0] = 0;
		rc = fwasm_assemble_files(&fw, cases[i].src, "d/top.s", &files, err, sizeof err);
		if (rc != cases[i].rc || strncmp(err, cases[i].where, strlen(cases[i].where)) ||
		    !strstr(err, cases[i].what)) {
			print_error("case %zu: rc %d, message '%s', want %d '%s ... %s'\n", i, rc,
				    err, cases[i].rc, cases[i].where, cases[i].what);
			fail();
		}
	}
	/* without files (fwasm_assemble) there is nothing to include */
	assert_int_equal(fwasm_assemble(&fw, "nop\n.include \"blk.inc\"\n", "t.s", err, sizeof err),
			 CS_ERR_FORMAT);
	assert_non_null(strstr(err, "t.s:2: .include \"blk.inc\": this source has no files"));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* fwasm_files.read over the source tree, wherever the test runs */
static int read_tree(void *arg, const char *path, char **text, char *err, size_t errlen)
{
	(void)arg;
	*text = repo_file_read(path);
	if (*text)
		return CS_OK;
	snprintf(err, errlen, "%s: not in the source tree", path);
	return CS_ERR_NOT_FOUND;
}

/* From files: includes read beside the file; the library's fw/ table gives the same images. */
static void test_include_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_asm.XXXXXX", top[64], inc[64];
	assert_non_null(mkdtemp(dir));
	snprintf(top, sizeof top, "%s/top.s", dir);
	snprintf(inc, sizeof inc, "%s/part.inc", dir);
	write_file(top, "nop\n.include \"part.inc\"\n");
	struct csd_fw fw, lib;
	char err[512] = "";
	assert_int_equal(fwasm_assemble_file(&fw, top, err, sizeof err), CS_ERR_NOT_FOUND);
	char where[256];
	snprintf(where, sizeof where, "%s:2: .include \"part.inc\": %s: ", top, inc);
	if (strncmp(err, where, strlen(where))) {
		print_error("'%s', want '%s...'\n", err, where);
		fail();
	}
	write_file(inc, "e: ret\n.entry e\n");
	assert_int_equal(fwasm_assemble_file(&fw, top, err, sizeof err), CS_OK);
	assert_int_equal(fw.n_instr, 2);
	assert_int_equal(csd_fw_find(&fw, "e"), 1);
	unlink(inc);
	unlink(top);
	rmdir(dir);
	/* the fw/ programs, from the tree's files and from the library's table */
	static const struct fwasm_files tree = { .read = read_tree };
	int n = 0;
	for (const struct csd_fw_source *s = csd_fw_sources; s->name; s++) {
		char path[128], *text;
		snprintf(path, sizeof path, "fw/%s.s", s->name);
		assert_int_equal(read_tree(NULL, path, &text, err, sizeof err), CS_OK);
		int rc = fwasm_assemble_files(&fw, text, path, &tree, err, sizeof err);
		free(text);
		if (rc)
			print_error("%s\n", err);
		assert_int_equal(rc, CS_OK);
		assert_int_equal(csd_fw_get(&lib, s->name, err, sizeof err), CS_OK);
		assert_int_equal(lib.n_instr, fw.n_instr);
		assert_memory_equal(lib.imem, fw.imem, (size_t)fw.n_instr * 2);
		assert_int_equal(lib.n_syms, fw.n_syms);
		assert_memory_equal(lib.syms, fw.syms, (size_t)fw.n_syms * sizeof fw.syms[0]);
		n++;
	}
	assert_true(n >= 2);
	/* and vec_fc_bf does include (its fc_cvt, the last entry, is vec_fc's words) */
	struct csd_fw bf;
	assert_int_equal(csd_fw_get(&fw, "vec_fc", err, sizeof err), CS_OK);
	assert_int_equal(csd_fw_get(&bf, "vec_fc_bf", err, sizeof err), CS_OK);
	int a = csd_fw_find(&fw, "fc_cvt"), b = csd_fw_find(&bf, "fc_cvt");
	assert_true(a > 0 && b > 0);
	assert_int_equal(fw.n_instr - a, bf.n_instr - b);
	assert_memory_equal(fw.imem + a, bf.imem + b, (size_t)(fw.n_instr - a) * 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encodings),      cmocka_unit_test(test_fw_round_trip),
		cmocka_unit_test(test_kernel_entries), cmocka_unit_test(test_bin_format),
		cmocka_unit_test(test_malformed),      cmocka_unit_test(test_ext_group),
		cmocka_unit_test(test_include),        cmocka_unit_test(test_include_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
