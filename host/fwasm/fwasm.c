/*
 * fwasm.c - two-pass assembler (pass 1: sizes and labels, pass 2: encoding) and a
 * disassembler whose output reassembles to the same image. Field layouts are those of
 * docs/architecture.md 4.3; enc_*() below is the one place they are written down in C.
 */
#include "fwasm/fwasm.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cs_error.h"

#define MAXLAB 256
#define MAXTOK 8
#define MAXDEPTH 8  /* .include nesting below the file assembled */
#define MAXFILES 16 /* distinct files one program includes */
#define MAXINCS 256 /* .include lines one pass follows (files included many times) */
#define MAXPATH 512

struct sym {
	char name[CSD_FW_SYMLEN];
	long val;
	int is_label;
};

/* an included file, read once (pass 1) and kept for pass 2 and the messages */
struct srcfile {
	char *path;
	char *text;
};

/* where an .include was read: the includer's file and line */
struct frame {
	const char *fname;
	int line;
};

struct asmctx {
	const char *fname; /* the file being read (the top one, or an included one) */
	int line;
	char *err;
	size_t errlen;
	int pc;
	struct sym syms[MAXLAB];
	int nsyms;
	char entries[CSD_FW_MAXSYMS][CSD_FW_SYMLEN];
	int nentries;
	int entry_line[CSD_FW_MAXSYMS];
	const char *entry_file[CSD_FW_MAXSYMS];
	const struct fwasm_files *files;
	struct srcfile inc[MAXFILES];
	int ninc;
	struct frame stack[MAXDEPTH]; /* the includers of fname, outermost first */
	int depth;
	int nincs; /* .include lines followed in this pass */
};

static int fail(struct asmctx *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct asmctx *a, const char *fmt, ...)
{
	int n = snprintf(a->err, a->errlen, "%s:%d: ", a->fname, a->line);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < a->errlen)
		vsnprintf(a->err + n, a->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	for (int d = a->depth - 1; d >= 0; d--) {
		size_t k = strlen(a->err);
		if (k + 1 < a->errlen)
			snprintf(a->err + k, a->errlen - k, "%s%s:%d%s",
				 d == a->depth - 1 ? " (included from " : ", ", a->stack[d].fname,
				 a->stack[d].line, d ? "" : ")");
	}
	return CS_ERR_FORMAT;
}

static struct sym *find_sym(struct asmctx *a, const char *name)
{
	for (int i = 0; i < a->nsyms; i++)
		if (!strcmp(a->syms[i].name, name))
			return &a->syms[i];
	return NULL;
}

static int add_sym(struct asmctx *a, const char *name, long val, int is_label)
{
	if (strlen(name) >= CSD_FW_SYMLEN)
		return fail(a, "name '%s' longer than %d characters", name, CSD_FW_SYMLEN - 1);
	if (find_sym(a, name))
		return fail(a, "'%s' defined twice", name);
	if (a->nsyms == MAXLAB)
		return fail(a, "more than %d names", MAXLAB);
	snprintf(a->syms[a->nsyms].name, CSD_FW_SYMLEN, "%s", name);
	a->syms[a->nsyms].val = val;
	a->syms[a->nsyms].is_label = is_label;
	a->nsyms++;
	return 0;
}

static int is_ident(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_' || *s == '.'))
		return 0;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.'))
			return 0;
	return 1;
}

/* number or known name; pass 1 may see labels defined later (need = 0) */
static int value(struct asmctx *a, const char *s, long *v, int need)
{
	char *end;
	errno = 0;
	if (isdigit((unsigned char)s[0]) || s[0] == '-' || s[0] == '+') {
		long x = strtol(s, &end, 0);
		if (*end || errno)
			return fail(a, "bad number '%s'", s);
		*v = x;
		return 0;
	}
	struct sym *y = find_sym(a, s);
	if (y) {
		*v = y->val;
		return 0;
	}
	if (!need && is_ident(s)) {
		*v = 0;
		return 0;
	}
	return fail(a, "unknown name '%s'", s);
}

static int reg(struct asmctx *a, const char *s, int *r)
{
	if ((s[0] == 'r' || s[0] == 'R') && s[1] >= '0' && s[1] <= '7' && !s[2]) {
		*r = s[1] - '0';
		return 0;
	}
	return fail(a, "'%s' is not a register (r0..r7)", s);
}

static int ranged(struct asmctx *a, const char *s, long lo, long hi, const char *what, long *v,
		  int need)
{
	int rc = value(a, s, v, need);
	if (rc)
		return rc;
	if (*v < lo || *v > hi)
		return fail(a, "%s %ld out of range %ld..%ld", what, *v, lo, hi);
	return 0;
}

static const char *const rnames[8] = { "add", "sub", "and", "or", "xor", "shl", "shr", "mul" };

/* Split a line into label, mnemonic and operands; returns the operand count or < 0. */
static int tokenize(struct asmctx *a, char *line, char **label, char **mn, char *ops[MAXTOK])
{
	char *c = line;
	for (; *c; c++)
		if (*c == ';' || *c == '#') {
			*c = 0;
			break;
		}
	*label = NULL;
	*mn = NULL;
	char *p = line;
	while (isspace((unsigned char)*p))
		p++;
	char *colon = strchr(p, ':');
	if (colon) {
		*colon = 0;
		char *e = colon;
		while (e > p && isspace((unsigned char)e[-1]))
			*--e = 0;
		if (!is_ident(p))
			return fail(a, "bad label '%s'", p);
		*label = p;
		p = colon + 1;
		while (isspace((unsigned char)*p))
			p++;
	}
	if (!*p)
		return 0;
	*mn = p;
	while (*p && !isspace((unsigned char)*p))
		p++;
	if (*p)
		*p++ = 0;
	int n = 0;
	while (*p) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		char *start = p;
		while (*p && *p != ',')
			p++;
		char *end = p;
		if (*p == ',')
			*p++ = 0;
		while (end > start && isspace((unsigned char)end[-1]))
			end--;
		*end = 0;
		if (!*start)
			return fail(a, "empty operand");
		if (n == MAXTOK)
			return fail(a, "too many operands");
		ops[n++] = start;
	}
	return n;
}

static int want(struct asmctx *a, const char *mn, int n, int lo, int hi)
{
	if (n < lo || n > hi) {
		if (lo == hi)
			return fail(a, "%s takes %d operand%s, not %d", mn, lo, lo == 1 ? "" : "s", n);
		return fail(a, "%s takes %d to %d operands, not %d", mn, lo, hi, n);
	}
	return 0;
}

static int mem_reg(struct asmctx *a, const char *s, int *r)
{
	size_t l = strlen(s);
	if (l < 3 || s[0] != '[' || s[l - 1] != ']')
		return fail(a, "'%s': want [rN]", s);
	char b[8];
	if (l - 2 >= sizeof b)
		return fail(a, "'%s': want [rN]", s);
	memcpy(b, s + 1, l - 2);
	b[l - 2] = 0;
	return reg(a, b, r);
}

/* Encode one statement at pc; out gets 0..2 words (pass 1: need = 0, only sizes). */
static int encode(struct asmctx *a, const char *mn, char **ops, int n, int pc, uint16_t *out,
		  int *nw, int need)
{
	int rd = 0, rs = 0, rt = 0, rc;
	long v;
	*nw = 1;
	if (!strcmp(mn, "ret") || !strcmp(mn, "nop")) {
		if ((rc = want(a, mn, n, 0, 0)))
			return rc;
		out[0] = mn[0] == 'n' ? 1 : 0;
		return 0;
	}
	if (!strcmp(mn, "li")) {
		if ((rc = want(a, mn, n, 2, 2)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = ranged(a, ops[1], -32768, 65535, "immediate", &v, need)))
			return rc;
		out[0] = (uint16_t)(0x1000 | rd << 9);
		out[1] = (uint16_t)v;
		*nw = 2;
		return 0;
	}
	if (!strcmp(mn, "addi")) {
		if ((rc = want(a, mn, n, 3, 3)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = reg(a, ops[1], &rs)) || (rc = ranged(a, ops[2], -32, 31, "imm6", &v, need)))
			return rc;
		out[0] = (uint16_t)(0x2000 | rd << 9 | rs << 6 | (v & 0x3f));
		return 0;
	}
	for (int f = 0; f < 8; f++)
		if (!strcmp(mn, rnames[f])) {
			if ((rc = want(a, mn, n, 3, 3)) || (rc = reg(a, ops[0], &rd)) ||
			    (rc = reg(a, ops[1], &rs)) || (rc = reg(a, ops[2], &rt)))
				return rc;
			out[0] = (uint16_t)(0x3000 | rd << 9 | rs << 6 | rt << 3 | f);
			return 0;
		}
	if (!strcmp(mn, "whi") || !strcmp(mn, "wlo") || !strcmp(mn, "wcol")) {
		if ((rc = want(a, mn, n, 1, 1)) || (rc = reg(a, ops[0], &rd)))
			return rc;
		int sel = mn[1] == 'h' ? 0 : mn[1] == 'l' ? 1 : 2;
		out[0] = (uint16_t)(0x4000 | rd << 9 | sel);
		return 0;
	}
	if (!strcmp(mn, "beq") || !strcmp(mn, "bne")) {
		if ((rc = want(a, mn, n, 3, 3)) || (rc = reg(a, ops[0], &rs)) ||
		    (rc = reg(a, ops[1], &rt)) || (rc = value(a, ops[2], &v, need)))
			return rc;
		long off = v - (pc + 1);
		if (need && (off < -16 || off > 15))
			return fail(a, "branch to '%s' too far (%ld, range -16..15)", ops[2], off);
		out[0] = (uint16_t)(0x5000 | (mn[1] == 'n') << 11 | rs << 8 | rt << 5 | (off & 0x1f));
		return 0;
	}
	if (!strcmp(mn, "djnz")) {
		if ((rc = want(a, mn, n, 2, 2)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = value(a, ops[1], &v, need)))
			return rc;
		long off = v - (pc + 1);
		if (need && (off < -256 || off > 255))
			return fail(a, "djnz to '%s' too far (%ld)", ops[1], off);
		out[0] = (uint16_t)(0x6000 | rd << 9 | (off & 0x1ff));
		return 0;
	}
	if (!strcmp(mn, "jmp")) {
		if ((rc = want(a, mn, n, 1, 1)) || (rc = value(a, ops[0], &v, need)))
			return rc;
		long off = v - (pc + 1);
		if (need && (off < -2048 || off > 2047))
			return fail(a, "jmp to '%s' too far (%ld)", ops[0], off);
		out[0] = (uint16_t)(0x7000 | (off & 0xfff));
		return 0;
	}
	if (!strcmp(mn, "send")) {
		if ((rc = want(a, mn, n, 3, 4)) || (rc = ranged(a, ops[0], 0, 15, "color", &v, need)) ||
		    (rc = reg(a, ops[1], &rs)) || (rc = reg(a, ops[2], &rt)))
			return rc;
		int ctrl = 0;
		if (n == 4) {
			if (strcmp(ops[3], "ctrl"))
				return fail(a, "send: fourth operand must be 'ctrl', not '%s'", ops[3]);
			ctrl = 1;
		}
		out[0] = (uint16_t)(0x8000 | v << 8 | ctrl << 7 | rs << 4 | rt << 1);
		return 0;
	}
	if (!strcmp(mn, "block") || !strcmp(mn, "unblock")) {
		if ((rc = want(a, mn, n, 1, 1)) || (rc = ranged(a, ops[0], 0, 31, "task id", &v, need)))
			return rc;
		out[0] = (uint16_t)(0x9000 | (mn[0] == 'u') << 11 | v);
		return 0;
	}
	if (!strcmp(mn, "axpy") || !strcmp(mn, "dot") || !strcmp(mn, "fill") ||
	    !strcmp(mn, "redv.st")) {
		if ((rc = want(a, mn, n, 0, 0)))
			return rc;
		out[0] = mn[0] == 'a' ? 0xA000 : mn[0] == 'd' ? 0xB000 : mn[0] == 'f' ? 0xE000 : 0xC080;
		return 0;
	}
	if (!strcmp(mn, "redv") || !strcmp(mn, "sendv")) {
		if ((rc = want(a, mn, n, 1, 1)) || (rc = ranged(a, ops[0], 0, 15, "color", &v, need)))
			return rc;
		out[0] = (uint16_t)((mn[0] == 'r' ? 0xC000 : 0xD000) | v << 8);
		return 0;
	}
	static const char *const mem[] = { "lda", "sta", "ldb", "stb", "ldb.h", "stb.h" };
	for (int k = 0; k < 6; k++)
		if (!strcmp(mn, mem[k])) {
			if ((rc = want(a, mn, n, 2, 2)) || (rc = reg(a, ops[0], &rd)) ||
			    (rc = mem_reg(a, ops[1], &rs)))
				return rc;
			int sel = k < 4 ? k : k - 2, half = k >= 4;
			out[0] = (uint16_t)(0xF000 | rd << 9 | rs << 6 | half << 2 | sel);
			return 0;
		}
	/* The extended 0xF group: xop [5:3], rt [2:0] (4.4). vfma and vlut without a source
	 * register work in place (rt = r6). */
	if (!strcmp(mn, "vfma") || !strcmp(mn, "vmac") || !strcmp(mn, "vdot")) {
		int in_place = mn[1] == 'f';
		if ((rc = want(a, mn, n, in_place ? 2 : 3, 3)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = reg(a, ops[1], &rs)))
			return rc;
		rt = 6;
		if (n == 3 && (rc = reg(a, ops[2], &rt)))
			return rc;
		int xop = in_place ? 1 : mn[1] == 'm' ? 6 : 7;
		out[0] = (uint16_t)(0xF000 | rd << 9 | rs << 6 | xop << 3 | rt);
		return 0;
	}
	if (!strcmp(mn, "vaxpy")) { /* xop 0, [2:0] = 4 */
		if ((rc = want(a, mn, n, 2, 2)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = reg(a, ops[1], &rs)))
			return rc;
		out[0] = (uint16_t)(0xF000 | rd << 9 | rs << 6 | 4);
		return 0;
	}
	if (!strcmp(mn, "vlut")) {
		if ((rc = want(a, mn, n, 1, 2)) || (rc = reg(a, ops[0], &rd)))
			return rc;
		rt = 6;
		if (n == 2 && (rc = reg(a, ops[1], &rt)))
			return rc;
		out[0] = (uint16_t)(0xF000 | rd << 9 | 4 << 3 | rt);
		return 0;
	}
	if (!strcmp(mn, "vlut.bf")) { /* vlut with rs != 0: bf16 into A[r[rs]+n] (pe only) */
		if ((rc = want(a, mn, n, 2, 3)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = reg(a, ops[1], &rs)))
			return rc;
		if (!rs)
			return fail(a, "vlut.bf: the A destination cannot be r0 (rs = 0 is vlut)");
		rt = 6;
		if (n == 3 && (rc = reg(a, ops[2], &rt)))
			return rc;
		out[0] = (uint16_t)(0xF000 | rd << 9 | rs << 6 | 4 << 3 | rt);
		return 0;
	}
	if (!strcmp(mn, "vlut.a")) { /* cvt.bf's code with rs != 0: vlut.bf, x from A[r[rt]+n] */
		if ((rc = want(a, mn, n, 3, 3)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = reg(a, ops[1], &rs)) || (rc = reg(a, ops[2], &rt)))
			return rc;
		if (!rs)
			return fail(a, "vlut.a: the A destination cannot be r0 (rs = 0 is cvt.bf)");
		if (!rd)
			return fail(a, "vlut.a: the table register cannot be r0 (rd = 0 is cpa)");
		out[0] = (uint16_t)(0xF000 | rd << 9 | rs << 6 | 3 << 3 | rt);
		return 0;
	}
	if (!strcmp(mn, "cvt.bh")) { /* xop 0, [2:0] = 5 */
		if ((rc = want(a, mn, n, 1, 1)) || (rc = reg(a, ops[0], &rd)))
			return rc;
		out[0] = (uint16_t)(0xF000 | rd << 9 | 5);
		return 0;
	}
	if (!strcmp(mn, "vmul")) { /* cvt.bh's code with rs != 0: B[r6+n] = A[r[rs]+n] r[rd] */
		if ((rc = want(a, mn, n, 2, 2)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = reg(a, ops[1], &rs)))
			return rc;
		if (!rs)
			return fail(a, "vmul: the A operand cannot be r0 (rs = 0 is cvt.bh)");
		out[0] = (uint16_t)(0xF000 | rd << 9 | rs << 6 | 5);
		return 0;
	}
	if (!strcmp(mn, "vdot2") || !strcmp(mn, "vdot4")) {
		/* vsum2 with rs != 0: two dots of B[r6..]; vdot4: on four chains, rt = 1 (pe only) */
		if ((rc = want(a, mn, n, 2, 2)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = reg(a, ops[1], &rs)))
			return rc;
		if (!rs)
			return fail(a, "%s: the A operand cannot be r0 (rs = 0 is vsum%c)", mn, mn[4]);
		out[0] = (uint16_t)(0xF000 | rd << 9 | rs << 6 | 2 << 3 | (mn[4] == '4'));
		return 0;
	}
	if (!strcmp(mn, "vsum4")) { /* vsum2 on four chains, rt = 1 (pe only) */
		if ((rc = want(a, mn, n, 1, 1)) || (rc = reg(a, ops[0], &rd)))
			return rc;
		out[0] = (uint16_t)(0xF000 | rd << 9 | 2 << 3 | 1);
		return 0;
	}
	if (!strcmp(mn, "cpa")) { /* cvt.bf's code, rs != 0, rd = 0: B[r6+m] = A word r[rs]/2 + m */
		if ((rc = want(a, mn, n, 1, 1)) || (rc = reg(a, ops[0], &rs)))
			return rc;
		if (!rs)
			return fail(a, "cpa: the A operand cannot be r0 (rs = 0 is cvt.bf)");
		out[0] = (uint16_t)(0xF000 | rs << 6 | 3 << 3);
		return 0;
	}
	if (!strcmp(mn, "vsum2") || !strcmp(mn, "cvt.bf")) {
		if ((rc = want(a, mn, n, 1, 1)) || (rc = reg(a, ops[0], &rd)))
			return rc;
		out[0] = (uint16_t)(0xF000 | rd << 9 | (mn[1] == 's' ? 2 : 3) << 3);
		return 0;
	}
	if (!strcmp(mn, "rsqrt")) {
		if ((rc = want(a, mn, n, 2, 2)) || (rc = reg(a, ops[0], &rd)) ||
		    (rc = mem_reg(a, ops[1], &rs)))
			return rc;
		out[0] = (uint16_t)(0xF000 | rd << 9 | rs << 6 | 5 << 3);
		return 0;
	}
	if (!strcmp(mn, ".word")) {
		if ((rc = want(a, mn, n, 1, 1)) || (rc = ranged(a, ops[0], -32768, 65535, "word", &v, need)))
			return rc;
		out[0] = (uint16_t)v;
		return 0;
	}
	return fail(a, "unknown instruction '%s'", mn);
}

static int sym_cmp(const void *x, const void *y)
{
	const struct csd_fw_sym *a = x, *b = y;
	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int run_text(struct asmctx *a, const char *src, int pass, struct csd_fw *fw);

/* .include "NAME": NAME's text beside the including file, assembled in place. */
static int include(struct asmctx *a, const char *op, int pass, struct csd_fw *fw)
{
	size_t l = strlen(op);
	if (l < 3 || op[0] != '"' || op[l - 1] != '"' || memchr(op + 1, '"', l - 2) ||
	    memchr(op + 1, '/', l - 2))
		return fail(a, ".include: want \"NAME\", a file beside this one, not %s", op);
	if (!a->files)
		return fail(a, ".include %s: this source has no files beside it", op);
	char path[MAXPATH];
	const char *slash = strrchr(a->fname, '/');
	int dl = slash ? (int)(slash - a->fname + 1) : 0;
	if (snprintf(path, sizeof path, "%.*s%.*s", dl, a->fname, (int)(l - 2), op + 1) >=
	    (int)sizeof path)
		return fail(a, ".include %s: path longer than %d characters", op, MAXPATH - 1);
	int cycle = !strcmp(path, a->fname);
	for (int d = 0; d < a->depth; d++)
		cycle |= !strcmp(path, a->stack[d].fname);
	if (cycle) {
		char chain[1024] = "";
		size_t k = 0;
		for (int d = 0; d <= a->depth && k < sizeof chain; d++)
			k += (size_t)snprintf(chain + k, sizeof chain - k, "%s -> ",
					      d < a->depth ? a->stack[d].fname : a->fname);
		return fail(a, ".include %s: a cycle (%s%s)", op, k < sizeof chain ? chain : "...",
			    path);
	}
	if (a->depth == MAXDEPTH)
		return fail(a, ".include %s: includes nested deeper than %d", op, MAXDEPTH);
	if (++a->nincs > MAXINCS)
		return fail(a, ".include %s: more than %d includes in one program", op, MAXINCS);
	struct srcfile *f = NULL;
	for (int i = 0; i < a->ninc; i++)
		if (!strcmp(a->inc[i].path, path))
			f = &a->inc[i];
	if (!f) {
		if (a->ninc == MAXFILES)
			return fail(a, ".include %s: more than %d files included", op, MAXFILES);
		char msg[MAXPATH + 128] = "";
		char *text = NULL, *p = strdup(path);
		int rc = CS_ERR_NO_MEM;
		if (p)
			rc = a->files->read(a->files->arg, path, &text, msg, sizeof msg);
		if (rc) {
			free(p);
			fail(a, ".include %s: %s", op, msg[0] ? msg : cs_strerror(rc));
			return rc;
		}
		f = &a->inc[a->ninc++];
		f->path = p;
		f->text = text;
	}
	a->stack[a->depth++] = (struct frame){ a->fname, a->line };
	a->fname = f->path;
	int rc = run_text(a, f->text, pass, fw);
	if (!rc) {
		a->depth--;
		a->fname = a->stack[a->depth].fname;
		a->line = a->stack[a->depth].line;
	}
	return rc;
}

/* One file's lines at a->pc (the file, or one it includes). */
static int run_text(struct asmctx *a, const char *src, int pass, struct csd_fw *fw)
{
	int rc;
	const char *p = src;
	char line[512];
	a->line = 0;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		a->line++;
		if (len >= sizeof line)
			return fail(a, "line longer than %zu characters", sizeof line - 1);
		memcpy(line, p, len);
		line[len] = 0;
		p += len + (nl ? 1 : 0);
		char *label, *mn, *ops[MAXTOK];
		int n = tokenize(a, line, &label, &mn, ops);
		if (n < 0)
			return n;
		if (label && pass == 1 && (rc = add_sym(a, label, a->pc, 1)))
			return rc;
		if (!mn)
			continue;
		if (!strcmp(mn, ".include")) {
			if ((rc = want(a, mn, n, 1, 1)) || (rc = include(a, ops[0], pass, fw)))
				return rc;
			continue;
		}
		if (!strcmp(mn, ".equ")) {
			if (pass == 2)
				continue;
			long v;
			if ((rc = want(a, mn, n, 2, 2)))
				return rc;
			if (!is_ident(ops[0]))
				return fail(a, ".equ: bad name '%s'", ops[0]);
			if ((rc = value(a, ops[1], &v, 1)) || (rc = add_sym(a, ops[0], v, 0)))
				return rc;
			continue;
		}
		if (!strcmp(mn, ".entry")) {
			if ((rc = want(a, mn, n, 1, 1)))
				return rc;
			if (pass == 1) {
				if (a->nentries == CSD_FW_MAXSYMS)
					return fail(a, "more than %d entries", CSD_FW_MAXSYMS);
				snprintf(a->entries[a->nentries], CSD_FW_SYMLEN, "%.*s",
					 CSD_FW_SYMLEN - 1, ops[0]);
				a->entry_file[a->nentries] = a->fname;
				a->entry_line[a->nentries++] = a->line;
			}
			continue;
		}
		uint16_t w[2] = { 0, 0 };
		int nw = 0;
		if ((rc = encode(a, mn, ops, n, a->pc, w, &nw, pass == 2)))
			return rc;
		if (a->pc + nw > CSD_FW_IMEM)
			return fail(a, "program longer than IMEM (%d instructions)", CSD_FW_IMEM);
		if (pass == 2)
			for (int k = 0; k < nw; k++)
				fw->imem[a->pc + k] = w[k];
		a->pc += nw;
	}
	return 0;
}

static int run_pass(struct asmctx *a, const char *src, const char *fname, int pass,
		    struct csd_fw *fw)
{
	a->fname = fname;
	a->pc = 0;
	a->depth = 0;
	a->nincs = 0;
	int rc = run_text(a, src, pass, fw);
	fw->n_instr = a->pc;
	return rc;
}

int fwasm_assemble_files(struct csd_fw *fw, const char *src, const char *fname,
			 const struct fwasm_files *files, char *err, size_t errlen)
{
	struct asmctx *a = calloc(1, sizeof *a);
	if (!a)
		return CS_ERR_NO_MEM;
	fname = fname ? fname : "<input>";
	a->err = err;
	a->errlen = errlen;
	a->files = files;
	memset(fw, 0, sizeof *fw);
	int rc = run_pass(a, src, fname, 1, fw);
	if (!rc)
		rc = run_pass(a, src, fname, 2, fw);
	a->depth = 0;
	for (int i = 0; !rc && i < a->nentries; i++) {
		struct sym *s = find_sym(a, a->entries[i]);
		a->fname = a->entry_file[i];
		a->line = a->entry_line[i];
		if (!s || !s->is_label) {
			rc = fail(a, ".entry: no label '%s'", a->entries[i]);
			break;
		}
		for (int k = 0; k < fw->n_syms; k++)
			if (!strcmp(fw->syms[k].name, s->name))
				rc = fail(a, ".entry '%s' given twice", s->name);
		if (rc)
			break;
		snprintf(fw->syms[fw->n_syms].name, CSD_FW_SYMLEN, "%s", s->name);
		fw->syms[fw->n_syms++].pc = (uint16_t)s->val;
	}
	if (!rc) {
		qsort(fw->syms, (size_t)fw->n_syms, sizeof fw->syms[0], sym_cmp);
		const char *base = strrchr(fname, '/');
		base = base ? base + 1 : fname;
		snprintf(fw->name, sizeof fw->name, "%.*s", (int)strcspn(base, "."), base);
	}
	for (int i = 0; i < a->ninc; i++) {
		free(a->inc[i].path);
		free(a->inc[i].text);
	}
	free(a);
	return rc;
}

int fwasm_assemble(struct csd_fw *fw, const char *src, const char *fname, char *err,
		   size_t errlen)
{
	return fwasm_assemble_files(fw, src, fname, NULL, err, errlen);
}

/* fwasm_files.read for files on disk */
static int read_disk(void *arg, const char *path, char **text, char *err, size_t errlen)
{
	(void)arg;
	*text = NULL;
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return CS_ERR_NOT_FOUND;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = CS_OK;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 8192;
			char *nb = realloc(buf, cap);
			if (!nb) {
				rc = CS_ERR_NO_MEM;
				goto out_free;
			}
			buf = nb;
		}
		size_t got = fread(buf + len, 1, 4096, f);
		len += got;
		if (got < 4096)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		rc = CS_ERR_IO;
		goto out_free;
	}
	buf[len] = 0;
	if (strlen(buf) != len) {
		snprintf(err, errlen, "%s: not a text file (NUL byte)", path);
		rc = CS_ERR_FORMAT;
		goto out_free;
	}
	*text = buf;
	fclose(f);
	return CS_OK;
out_free:
	free(buf);
	fclose(f);
	return rc;
}

int fwasm_assemble_file(struct csd_fw *fw, const char *path, char *err, size_t errlen)
{
	static const struct fwasm_files disk = { .read = read_disk };
	char *text;
	int rc = read_disk(NULL, path, &text, err, errlen);
	if (rc)
		return rc;
	rc = fwasm_assemble_files(fw, text, path, &disk, err, errlen);
	free(text);
	return rc;
}

/* ---- disassembler --------------------------------------------------------------------- */

static long sext(long v, int bits)
{
	long m = 1L << (bits - 1);
	return (v ^ m) - m;
}

/* Text of the instruction at pc (target pcs of branches in *target); 0 if not canonical. */
static int decode(const uint16_t *im, int n, int pc, char *out, size_t len, int *target, int *nw)
{
	uint16_t w = im[pc];
	int op = w >> 12, rd = (w >> 9) & 7, rs = (w >> 6) & 7, rt = (w >> 3) & 7;
	*nw = 1;
	*target = -1;
	switch (op) {
	case 0x0:
		if (w == 0 || w == 1) {
			snprintf(out, len, w ? "nop" : "ret");
			return 1;
		}
		return 0;
	case 0x1:
		if ((w & 0x1ff) || pc + 1 >= n)
			return 0;
		snprintf(out, len, "li r%d, 0x%04x", rd, im[pc + 1]);
		*nw = 2;
		return 1;
	case 0x2:
		snprintf(out, len, "addi r%d, r%d, %ld", rd, rs, sext(w & 0x3f, 6));
		return 1;
	case 0x3:
		snprintf(out, len, "%s r%d, r%d, r%d", rnames[w & 7], rd, rs, rt);
		return 1;
	case 0x4:
		if ((w & 0x1fc) || (w & 3) == 3)
			return 0;
		snprintf(out, len, "%s r%d", (w & 3) == 0 ? "whi" : (w & 3) == 1 ? "wlo" : "wcol", rd);
		return 1;
	case 0x5:
		*target = pc + 1 + (int)sext(w & 0x1f, 5);
		snprintf(out, len, "%s r%d, r%d, ", (w >> 11) & 1 ? "bne" : "beq", (w >> 8) & 7,
			 (w >> 5) & 7);
		return 2;
	case 0x6:
		*target = pc + 1 + (int)sext(w & 0x1ff, 9);
		snprintf(out, len, "djnz r%d, ", rd);
		return 2;
	case 0x7:
		*target = pc + 1 + (int)sext(w & 0xfff, 12);
		snprintf(out, len, "jmp ");
		return 2;
	case 0x8:
		if (w & 1)
			return 0;
		snprintf(out, len, "send %d, r%d, r%d%s", (w >> 8) & 15, (w >> 4) & 7, (w >> 1) & 7,
			 (w >> 7) & 1 ? ", ctrl" : "");
		return 1;
	case 0x9:
		if (w & 0x7e0)
			return 0;
		snprintf(out, len, "%s %d", (w >> 11) & 1 ? "unblock" : "block", w & 31);
		return 1;
	case 0xA:
	case 0xB:
	case 0xE:
		if (w & 0xfff)
			return 0;
		snprintf(out, len, op == 0xA ? "axpy" : op == 0xB ? "dot" : "fill");
		return 1;
	case 0xC:
		if (w & 0x7f)
			return 0;
		if (w & 0x80) {
			if (w & 0xf00)
				return 0;
			snprintf(out, len, "redv.st");
		} else {
			snprintf(out, len, "redv %d", (w >> 8) & 15);
		}
		return 1;
	case 0xD:
		if (w & 0xff)
			return 0;
		snprintf(out, len, "sendv %d", (w >> 8) & 15);
		return 1;
	case 0xF: {
		int sel = w & 3, half = (w >> 2) & 1, xop = rt, src = w & 7;
		if (xop) {
			switch (xop) {
			case 1:
			case 6:
			case 7:
				snprintf(out, len, "%s r%d, r%d, r%d",
					 xop == 1 ? "vfma" : xop == 6 ? "vmac" : "vdot", rd, rs, src);
				return 1;
			case 4:
				if (rs)
					snprintf(out, len, "vlut.bf r%d, r%d, r%d", rd, rs, src);
				else
					snprintf(out, len, "vlut r%d, r%d", rd, src);
				return 1;
			case 5:
				if (src)
					return 0;
				snprintf(out, len, "rsqrt r%d, [r%d]", rd, rs);
				return 1;
			default:
				if (xop == 2 && src <= 1 && rs) {
					snprintf(out, len, "vdot%c r%d, r%d", src ? '4' : '2', rd, rs);
					return 1;
				}
				if (xop == 2 && src == 1) {
					snprintf(out, len, "vsum4 r%d", rd);
					return 1;
				}
				if (xop == 3 && rs && !src && !rd) {
					snprintf(out, len, "cpa r%d", rs);
					return 1;
				}
				if (xop == 3 && rs && rd) {
					snprintf(out, len, "vlut.a r%d, r%d, r%d", rd, rs, src);
					return 1;
				}
				if (rs || src)
					return 0;
				snprintf(out, len, "%s r%d", xop == 2 ? "vsum2" : "cvt.bf", rd);
				return 1;
			}
		}
		if (half && sel == 1) {
			if (rs)
				snprintf(out, len, "vmul r%d, r%d", rd, rs);
			else
				snprintf(out, len, "cvt.bh r%d", rd);
			return 1;
		}
		if (half && sel == 0) {
			snprintf(out, len, "vaxpy r%d, r%d", rd, rs);
			return 1;
		}
		static const char *const m[] = { "lda", "sta", "ldb", "stb" };
		snprintf(out, len, "%s%s r%d, [r%d]", m[sel], half ? ".h" : "", rd, rs);
		return 1;
	}
	}
	return 0;
}

struct sbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = 1;
			return;
		}
		if (b->p && b->n + (size_t)k < b->cap) {
			b->n += (size_t)k;
			return;
		}
		size_t nc = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
		char *np = realloc(b->p, nc);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
}

int fwasm_disassemble(const struct csd_fw *fw, char **text)
{
	struct sbuf b = { 0 };
	char lab[CSD_FW_IMEM + 1] = { 0 };
	char ins[64];
	int target, nw;
	*text = NULL;
	/* where instructions start: a branch into the middle of one cannot be named */
	char start[CSD_FW_IMEM + 1] = { 0 };
	for (int pc = 0; pc < fw->n_instr; pc += nw) {
		start[pc] = 1;
		if (!decode(fw->imem, fw->n_instr, pc, ins, sizeof ins, &target, &nw))
			nw = 1;
	}
	start[fw->n_instr] = 1;
	/* local labels for branch targets that are not entries */
	for (int pc = 0; pc < fw->n_instr; pc += nw) {
		int k = decode(fw->imem, fw->n_instr, pc, ins, sizeof ins, &target, &nw);
		if (k == 2 && target >= 0 && target <= fw->n_instr && start[target])
			lab[target] = 1;
		if (!k)
			nw = 1;
	}
	sb_printf(&b, "; %s: %d instructions, %d entries (disassembled)\n", fw->name, fw->n_instr,
		  fw->n_syms);
	for (int pc = 0; pc <= fw->n_instr; pc += nw) {
		nw = 1;
		for (int s = 0; s < fw->n_syms; s++)
			if (fw->syms[s].pc == pc)
				sb_printf(&b, ".entry %s\n%s:\n", fw->syms[s].name, fw->syms[s].name);
		if (lab[pc])
			sb_printf(&b, "L%d:\n", pc);
		if (pc == fw->n_instr)
			break;
		int k = decode(fw->imem, fw->n_instr, pc, ins, sizeof ins, &target, &nw);
		if (k == 2 && (target < 0 || target > fw->n_instr || !start[target])) {
			/* a branch out of the program or into an instruction cannot be named:
			 * keep its raw words (the same count, so the instruction starts hold) */
			for (int w = 0; w < nw; w++)
				sb_printf(&b, "\t.word 0x%04x\n", fw->imem[pc + w]);
		} else if (k == 2) {
			sb_printf(&b, "\t%sL%d\n", ins, target);
		} else if (k == 1) {
			sb_printf(&b, "\t%s\n", ins);
		} else {
			nw = 1;
			sb_printf(&b, "\t.word 0x%04x\n", fw->imem[pc]);
		}
	}
	if (b.oom) {
		free(b.p);
		return CS_ERR_NO_MEM;
	}
	*text = b.p;
	return CS_OK;
}
