/*
 * uasm - microassembler for pe_micro_mt's micro-machine (rtl/pe/pe_micro_mt.v; the
 * micro-program is rtl/pe/pe_micro.us).
 *
 *   uasm SRC.us -o ROM.v        assemble; write the ROM and S-RAM init modules (atomically)
 *   uasm SRC.us --check ROM.v   assemble; fail if ROM.v differs (the committed file is stale)
 *   uasm SRC.us --list          print the assembled program with addresses
 *
 * The micro-machine (docs/architecture.md 4.7 is the prose; this comment is the reference):
 * a 16-bit accumulator machine, two stages. Stage 1 (the cycle a micro-instruction is the
 * ROM's output) computes the S-RAM read address and the next micro-pc (branches, calls,
 * dispatches); stage 2 (the next cycle) runs the ALU on the operand Y and does the side
 * effects. Stage 1 of instruction k+1 runs in the same cycle as stage 2 of instruction k,
 * so it sees state from before k's effects: the assembler inserts a NOP where it would read
 * what k writes (hazard() below). A J-format instruction does nothing in stage 2.
 *
 * State: X (accumulator), flags Z and C, H (high half of the tx payload and of config read
 * data), AR (8-bit S address register), MA (M halfword address), the PE's current instruction
 * ird (IMEM output register), RA (return address, one level), upc; busy (cycles a task ran,
 * not yet counted), clr (CLEAR seen).
 *
 * Formats (16 bits):
 *   S  0 op[14:11] am[10:8] a[7:0]     ALU op with Y = S[ea] (ea read in stage 1)
 *   J  10 cond[13:10] t[9:0]           if cond: upc = t
 *   X  11 op[13:10] src[9:7] fx[6:0]   ALU op (12: none) with Y = src, and side effect fx
 * ops: 0 ld 1 add 2 adc 3 sub 4 sbc 5 and 6 or 7 xor 8 cmp 9 tst 10 st
 *   ld: X = Y; add/adc/sub/sbc/cmp set C (carry out; subtraction: C = no borrow); all ALU ops
 *   set Z from their result; cmp/tst only set flags (X - Y, X & Y); st: S[ea] = X
 * am (ea = a | the mode's offset): 0 imm: none; 1 ar: AR; 2 fld: field a[2:0] of ird (rd
 *   [11:9], rs [8:6], rt [5:3], beq rs [10:8], beq rt [7:5], send rs [6:4], send rt [3:1]),
 *   a = 0 in the address; 3 cfgr: cfg_addr[2:0]; 4 cfgt: cfg_addr[4:0] (a = 32); 5 hp:
 *   2*hs; 6 hh: hs, with hs the head slot of queue qs (qs * QueueDepth + its read pointer);
 *   7 cfgc: 2 * cfg_addr[2:0] (the counters)
 * src: 0 m (M read data) 1 i (ird) 2 busy 3 map (the queue of color cfg_addr[3:0]) 4 cwl
 *   5 cwh (cfg_wdata halves) 6 fl 7 fh (the shared FPU's result halves)
 * cond: 0 j always 1 jz 2 jnz 3 jc 4 jnc 5 jhv (head of queue qs valid) 6 jclr 7 jtx (drives
 *   tx_valid; taken while !tx_ready) 8 jcfg (a config request the micro-program serves)
 *   9 jcfga (one for A or B) 10 jfg (taken while the FPU is not granted) 11 jfd (while it is
 *   not done) 12 dop (t | ird[15:12]) 13 dfn (t | ird[2:0]) 14 dcfg (t | {cfg_we,
 *   cfg_target}) 15 ret. Syntax: j/jz/.. LABEL, call LABEL, call.z .. call.cfga LABEL
 * fx (stage 2; they see X before this instruction's own ALU result; names here, codes in
 * fx_code[]):
 *   1 setar AR = X   2 seth H = X   3 maa MA = A element X   4 mab MA = B word X (low half)
 *   5 mabh MA = packed-bf16 B element X   6 mrd / 7 mrdh read M[MA] / M[MA | 1]
 *   8 mwr / 9 mwrh write X to M[MA] / M[MA | 1]   10 mcrd / 11 mcrdh / 12 mcwr / 13 mcwrh the
 *   same at the config address (target 0: A word, else B word)   14 fetch ird = IMEM[X]
 *   15 icrd ird = IMEM[cfg_addr]   16 iwr IMEM[cfg_addr] = cfg_wdata   17 gnt (config grant)
 *   18 pop (queue qs)   19 nextq   20 run1 / 21 run0 (a task runs)   22 macev   23 dropev
 *   (counter events)   24 freq / 25 frel (acquire, release the FPU)   26 fwa 27 fwah 28 fwb
 *   29 fwcl 30 fwch (write X to an FPU operand part)   31 fgo (start c + a * b)   32 fgoa
 *   (start a + c)   33 link (RA = this instruction's address + 2, in stage 1: `call` is
 *   link + a jump)   34 bclr (busy = 0)   35 cclr (clr = 0)   36 mapw (queue map[cfg_addr]
 *   = cfg_wdata)
 * Data read in stage 2 of k (m after mrd, i after fetch) is the source of
 * k + 1's stage 2. S: a word written by st is readable by the instruction two later.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#ifndef ROMSIZE
#define ROMSIZE 768
#endif
#define SSIZE 256
#define MAXSYM 1024
#define MAXSRC 4096

enum { OP_LD, OP_ADD, OP_ADC, OP_SUB, OP_SBC, OP_AND, OP_OR, OP_XOR, OP_CMP, OP_TST, OP_ST };
#define NOPS 11
static const char *op_names[] = { "ld", "add", "adc", "sub", "sbc", "and", "or", "xor", "cmp",
				  "tst", "st" };
enum { AM_IMM, AM_AR, AM_FLD, AM_CFGR, AM_CFGT, AM_HP, AM_HH, AM_CFGC };
#define OP_NONE 12
static const char *src_names[] = { "m", "i", "busy", "map", "cwl", "cwh", "fl", "fh" };
static const char *cond_names[] = { "j", "jz", "jnz", "jc", "jnc", "jhv", "jclr", "jtx",
				    "jcfg", "jcfga", "jfg", "jfd", "dop", "dfn", "dcfg", "ret" };
enum { C_AL, C_Z, C_NZ, C_C, C_NC, C_HV, C_CLR, C_TXNR, C_CFG, C_CFGA, C_FWG, C_FWD, C_DOP,
       C_DFN, C_DCFG, C_RET };
/* side effects: codes grouped so the RTL decodes them from a few bits (fx_code[]) */
static const char *fx_names[] = { "", "setar", "seth", "maa", "mab", "mabh", "mrd", "mrdh",
				  "mwr", "mwrh", "mcrd", "mcrdh", "mcwr", "mcwrh", "fetch",
				  "icrd", "iwr", "gnt", "pop", "nextq", "run1", "run0", "macev",
				  "dropev", "freq", "frel", "fwa", "fwah", "fwb", "fwcl", "fwch",
				  "fgo", "fgoa", "link", "bclr", "cclr", "mapw" };
#define NFX ((int)(sizeof fx_names / sizeof fx_names[0]))
enum { FX_NONE, FX_SETAR, FX_SETH, FX_MAA, FX_MAB, FX_MABH, FX_MRD, FX_MRDH, FX_MWR, FX_MWRH,
       FX_MCRD, FX_MCRDH, FX_MCWR, FX_MCWRH, FX_FETCH, FX_ICRD, FX_IWR, FX_GNT, FX_POP,
       FX_NEXTQ, FX_RUN1, FX_RUN0, FX_MACEV, FX_DROPEV, FX_FREQ, FX_FREL, FX_FWA, FX_FWAH,
       FX_FWB, FX_FWCL, FX_FWCH, FX_FGO, FX_FGOA, FX_LINK, FX_BCLR, FX_CCLR, FX_MAPW };
/* the 7-bit field: 1_00 cfg we hi: M access; 0100 sel: FPU operand part; 0110 0 add: FPU
 * start; 0x10-0x1f and 0x38-0x3f: the rest (pe_micro_mt.v decodes exactly these) */
static const int fx_code[] = { 0, 0x10, 0x11, 0x12, 0x13, 0x14, 0x40, 0x41, 0x42, 0x43, 0x44,
			       0x45, 0x46, 0x47, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c,
			       0x1d, 0x1e, 0x38, 0x39, 0x20, 0x21, 0x22, 0x23, 0x24, 0x30, 0x31,
			       0x1f, 0x3a, 0x3b, 0x3c };
static const char *fld_names[] = { "rd", "rs", "rt", "brs", "brt", "srs", "srt" };

struct uins {
	int fmt; /* 0 S, 1 J, 2 X */
	int op, am, a, call, cond, src, fx;
	char target[64]; /* J: label */
	int line;
	int nop; /* inserted by the assembler */
};

struct sym {
	char name[64];
	int val;
	int kind; /* 0 equ, 1 label, 2 var/const (S address) */
};

static struct uins prog[MAXSRC];
static int nprog;
static struct sym syms[MAXSYM];
static int nsyms;
static uint16_t sinit[SSIZE];
static int snext = -1, slimit = -1; /* .vars allocate upward from snext below slimit */
static const char *srcname;
static int curline;
static uint16_t rom[ROMSIZE];
static int romlen;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s:%d: ", srcname, curline);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static struct sym *find(const char *n)
{
	for (int i = 0; i < nsyms; i++)
		if (!strcmp(syms[i].name, n)) return &syms[i];
	return NULL;
}

static void define(const char *n, int v, int kind)
{
	if (find(n)) die("'%s' defined twice", n);
	if (nsyms == MAXSYM) die("too many symbols");
	if (strlen(n) >= sizeof syms[0].name) die("name too long: %s", n);
	strcpy(syms[nsyms].name, n);
	syms[nsyms].val = v;
	syms[nsyms].kind = kind;
	nsyms++;
}

/* a number, a symbol, or sym+num / sym|num */
static int value(const char *s)
{
	char buf[128];
	if (strlen(s) >= sizeof buf) die("operand too long");
	strcpy(buf, s);
	char *plus = strpbrk(buf, "+|");
	if (plus) {
		char opch = *plus;
		*plus = 0;
		int l = value(buf), r = value(plus + 1);
		return opch == '+' ? l + r : (l | r);
	}
	if (isdigit((unsigned char)buf[0]) || buf[0] == '-') {
		char *end;
		long v = strtol(buf, &end, 0);
		if (*end) die("bad number '%s'", buf);
		return (int)v;
	}
	struct sym *y = find(buf);
	if (!y || y->kind == 1) die("unknown value '%s'", buf);
	return y->val;
}

static int lookup(const char *s, const char **tab, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, tab[i])) return i;
	return -1;
}

static void emit(struct uins u)
{
	if (nprog == MAXSRC) die("program too long");
	u.line = curline;
	prog[nprog++] = u;
}

/* S-format operand: NAME|NUM, [ar], [ar+X], rd.., cfgr, cfgt, hp+X, hh+X */
static void s_operand(struct uins *u, const char *s)
{
	int f;
	if (!strncmp(s, "[ar", 3)) {
		u->am = AM_AR;
		const char *e = strchr(s, ']');
		if (!e) die("missing ]");
		if (s[3] == '+') {
			char buf[64];
			size_t n = (size_t)(e - (s + 4));
			if (n >= sizeof buf) die("operand too long");
			memcpy(buf, s + 4, n);
			buf[n] = 0;
			u->a = value(buf);
		} else u->a = 0;
	} else if ((f = lookup(s, fld_names, 7)) >= 0) {
		u->am = AM_FLD;
		u->a = f;
	} else if (!strcmp(s, "cfgr")) {
		u->am = AM_CFGR;
	} else if (!strcmp(s, "cfgt")) {
		u->am = AM_CFGT;
		u->a = 32;
	} else if (!strncmp(s, "hp+", 3)) {
		u->am = AM_HP;
		u->a = value(s + 3);
	} else if (!strncmp(s, "cfgc+", 5)) {
		u->am = AM_CFGC;
		u->a = value(s + 5);
	} else if (!strncmp(s, "hh+", 3)) {
		u->am = AM_HH;
		u->a = value(s + 3);
	} else {
		u->am = AM_IMM;
		u->a = value(s);
	}
	if (u->a < 0 || u->a > 255) die("S address out of range: %d", u->a);
}

static void parse_line(char *ln)
{
	char *c = strchr(ln, ';');
	if (c) *c = 0;
	char *tok[24];
	int nt = 0;
	for (char *p = strtok(ln, " \t\r\n,"); p; p = strtok(NULL, " \t\r\n,")) {
		if (nt == 24) die("too many operands");
		tok[nt++] = p;
	}
	if (!nt) return;
	int t0 = 0;
	size_t l0 = strlen(tok[0]);
	if (tok[0][l0 - 1] == ':') {
		tok[0][l0 - 1] = 0;
		struct uins u = { 0 };
		u.fmt = -1; /* label marker */
		snprintf(u.target, sizeof u.target, "%s", tok[0]);
		emit(u);
		t0 = 1;
		if (nt == 1) return;
	}
	char *m = tok[t0];
	int na = nt - t0 - 1;
	char **arg = &tok[t0 + 1];
	if (!strcmp(m, ".equ")) {
		if (na != 2) die(".equ NAME VALUE");
		define(arg[0], value(arg[1]), 0);
		return;
	}
	if (!strcmp(m, ".vars")) { /* .vars FIRST LIMIT: where .var/.const allocate */
		if (na != 2) die(".vars FIRST LIMIT");
		snext = value(arg[0]);
		slimit = value(arg[1]);
		return;
	}
	if (!strcmp(m, ".var") || !strcmp(m, ".const")) {
		if (snext < 0) die(".var before .vars");
		if (snext >= slimit) die("out of S words for variables");
		if (!strcmp(m, ".const")) {
			if (na != 2) die(".const NAME VALUE");
			int v = value(arg[1]);
			if (v < -32768 || v > 65535) die("constant out of range");
			sinit[snext] = (uint16_t)v;
		} else if (na != 1) die(".var NAME");
		define(arg[0], snext++, 2);
		return;
	}
	if (!strcmp(m, ".table")) { /* .table NAME v0 v1 ...: consecutive constants */
		if (snext < 0) die(".table before .vars");
		if (na < 2) die(".table NAME V...");
		define(arg[0], snext, 2);
		for (int i = 1; i < na; i++) {
			if (snext >= slimit) die("out of S words");
			sinit[snext++] = (uint16_t)value(arg[i]);
		}
		return;
	}
	if (!strcmp(m, ".align")) {
		if (na != 1) die(".align N");
		struct uins u = { 0 };
		u.fmt = -2;
		u.a = value(arg[0]);
		emit(u);
		return;
	}
	struct uins u = { 0 };
	int k;
	/* J format */
	if ((k = lookup(m, cond_names, 16)) >= 0 || !strncmp(m, "call", 4)) {
		u.fmt = 1;
		if (k < 0) {
			u.call = 1;
			const char *cn = m + 4; /* call, call.z, ... */
			if (!*cn) k = C_AL;
			else {
				char jn[32];
				snprintf(jn, sizeof jn, "j%s", cn + 1);
				k = lookup(jn, cond_names, 16);
				if (*cn != '.' || k < 0) die("bad call '%s'", m);
			}
		}
		u.cond = k;
		if (u.call) { /* call = link (RA = the address after the jump) + the jump */
			struct uins l = { 0 };
			l.fmt = 2;
			l.op = OP_NONE;
			l.fx = FX_LINK;
			emit(l);
			u.call = 0;
		}
		if (k == C_RET) {
			if (na) die("ret takes no operand");
		} else {
			if (na != 1) die("%s LABEL", m);
			snprintf(u.target, sizeof u.target, "%s", arg[0]);
		}
		emit(u);
		return;
	}
	/* bare side effect */
	if ((k = lookup(m, fx_names, NFX)) > 0) {
		if (na) die("%s takes no operand", m);
		u.fmt = 2;
		u.op = OP_NONE;
		u.fx = k;
		emit(u);
		return;
	}
	if (!strcmp(m, "nop")) {
		u.fmt = 2;
		u.op = OP_NONE;
		emit(u);
		return;
	}
	/* op.src [fx] (X format) or op operand (S format) */
	char mn[32];
	snprintf(mn, sizeof mn, "%s", m);
	char *dot = strchr(mn, '.');
	if (dot) {
		*dot = 0;
		u.fmt = 2;
		u.op = lookup(mn, op_names, NOPS);
		u.src = lookup(dot + 1, src_names, 8);
		if (u.op < 0 || u.op >= OP_ST || u.src < 0) die("bad X-format op '%s'", m);
		if (na > 1) die("%s [FX]", m);
		if (na == 1) {
			u.fx = lookup(arg[0], fx_names, NFX);
			if (u.fx <= 0) die("bad side effect '%s'", arg[0]);
		}
		emit(u);
		return;
	}
	u.fmt = 0;
	u.op = lookup(mn, op_names, NOPS);
	if (u.op < 0) die("unknown mnemonic '%s'", m);
	if (na != 1) die("%s OPERAND", m);
	s_operand(&u, arg[0]);
	emit(u);
}

/* ----------------------------------------------------------------------------- hazards */
/* state bits a stage reads or writes */
enum { R_X = 1, R_H = 2, R_AR = 4, R_FL = 8, R_IRD = 16, R_HS = 32, R_S = 64 };

static unsigned s2_writes(const struct uins *u)
{
	unsigned w = 0;
	if (u->fmt == 0) {
		if (u->op == OP_ST) w |= R_S;
		else w |= R_FL | ((u->op == OP_CMP || u->op == OP_TST) ? 0 : R_X);
	} else if (u->fmt == 2) {
		if (u->op != OP_NONE) w |= R_FL | ((u->op == OP_CMP || u->op == OP_TST) ? 0 : R_X);
		if (u->fx == FX_SETAR) w |= R_AR;
		if (u->fx == FX_SETH) w |= R_H;
		if (u->fx == FX_FETCH || u->fx == FX_ICRD) w |= R_IRD;
		if (u->fx == FX_POP || u->fx == FX_NEXTQ) w |= R_HS;
	}
	return w;
}

static unsigned s1_reads(const struct uins *u)
{
	unsigned r = 0;
	if (u->fmt == 0) {
		if (u->am == AM_AR) r |= R_AR;
		if (u->am == AM_FLD) r |= R_IRD;
		if (u->am == AM_HP || u->am == AM_HH) r |= R_HS;
		r |= R_S;
	} else if (u->fmt == 1) {
		if (u->cond >= C_Z && u->cond <= C_NC) r |= R_FL;
		if (u->cond == C_HV) r |= R_HS;
		if (u->cond == C_TXNR) r |= R_X | R_H;
		if (u->cond == C_DOP || u->cond == C_DFN) r |= R_IRD;
	}
	return r;
}

/* the S words an S-format access may touch: [lo, hi] */
static void s_range(const struct uins *u, int *lo, int *hi)
{
	switch (u->am) {
	case AM_IMM: *lo = *hi = u->a; break;
	case AM_AR: *lo = u->a; *hi = 255; break;       /* a | AR >= a */
	case AM_FLD: case AM_CFGR: *lo = 0; *hi = 7; break;
	case AM_CFGT: *lo = 32; *hi = 63; break;
	case AM_HP: *lo = u->a; *hi = u->a | 63; break;  /* 2 * slot < 64 */
	case AM_CFGC: *lo = u->a; *hi = u->a | 15; break;
	default: *lo = u->a; *hi = u->a | 31; break;     /* hh: slot < 32 */
	}
}

/* would b's stage 1 read what a's stage 2 writes? (S: a word both may touch) */
static int hazard(const struct uins *a, const struct uins *b)
{
	unsigned w = s2_writes(a), r = s1_reads(b);
	if (!(w & r)) return 0;
	if ((w & r) == R_S) {
		int alo, ahi, blo, bhi;
		if (b->op == OP_ST) return 0; /* a store reads nothing */
		s_range(a, &alo, &ahi);
		s_range(b, &blo, &bhi);
		if (ahi < blo || bhi < alo) return 0;
	}
	return 1;
}

static void assemble(void)
{
	/* pass 1: insert NOPs, place labels and alignment */
	static struct uins out[MAXSRC];
	int n = 0;
	const struct uins *prev = NULL;
	for (int i = 0; i < nprog; i++) {
		struct uins *u = &prog[i];
		curline = u->line;
		if (u->fmt == -1) {
			if (find(u->target)) die("label '%s' defined twice", u->target);
			define(u->target, n, 1);
			continue;
		}
		if (u->fmt == -2) {
			while (n % u->a) {
				struct uins z = { 0 };
				z.fmt = 2;
				z.op = OP_NONE;
				z.nop = 1;
				out[n++] = z;
			}
			prev = NULL;
			continue;
		}
		if (prev && hazard(prev, u)) {
			struct uins z = { 0 };
			z.fmt = 2;
			z.op = OP_NONE;
			z.nop = 1;
			z.line = u->line;
			out[n++] = z;
		}
		out[n++] = *u;
		prev = u->fmt == 1 ? NULL : &out[n - 1];
		if (n >= ROMSIZE) die("ROM full (%d words)", ROMSIZE);
	}
	/* pass 2: encode */
	for (int i = 0; i < n; i++) {
		struct uins *u = &out[i];
		curline = u->line;
		uint16_t w;
		if (u->fmt == 0) {
			w = (uint16_t)(u->op << 11 | u->am << 8 | u->a);
		} else if (u->fmt == 1) {
			int t = 0;
			if (u->cond != C_RET) {
				struct sym *y = find(u->target);
				if (!y || y->kind != 1) die("unknown label '%s'", u->target);
				t = y->val;
				int al = u->cond == C_DFN ? 8 : u->cond == C_DOP ? 16 : u->cond == C_DCFG ? 32 : 1;
				if (t % al) die("dispatch table '%s' not aligned to %d", u->target, al);
			}
			w = (uint16_t)(0x8000 | u->cond << 10 | t);
		} else {
			w = (uint16_t)(0xc000 | u->op << 10 | u->src << 7 | fx_code[u->fx]);
		}
		rom[i] = w;
	}
	romlen = n;
	memcpy(prog, out, sizeof(struct uins) * (size_t)n);
	nprog = n;
}

/* ----------------------------------------------------------------------------- output */
static void write_rom(FILE *f)
{
	/* a 512-word part (two 512 x 8 EBRs, no output mux) and, past it, a 256-word part (one
	 * 256 x 16 EBR): one 16-bit 2:1 mux instead of a 3-way one */
	int hi = romlen > 512;
	fprintf(f, "// pe_micro_rom - GENERATED by verif/ucode/uasm from rtl/pe/pe_micro.us: do not "
		   "edit.\n// `make ucode` rewrites it; `make test` checks that it is current.\n"
		   "// the micro-machine's two initialized memories: the micro-program ROM (%d words: %s)\n"
		   "// and the S RAM (256 x 16, one read and one write port, read data registered, old\n"
		   "// data when a word is read and written in one cycle), whose initial contents are\n"
		   "// the micro-program's constants (the rest is 0). Rom = 0 leaves the ROM unread (udata_o\n"
		   "// 0; synthesis removes it): pe_micro_mt's PEs have an S RAM each and share one ROM.\n"
		   "// OldOnCollide = 0: an S read of the word written in the same cycle returns X, and\n"
		   "// synthesis needs no bypass for the old word (pe_micro_mt, whose PE p never reads its\n"
		   "// S in a cycle it is used and written: see there).\n"
		   "`default_nettype none\n\n",
		romlen, hi ? "words 0-511 in one part, 512-767 in another" : "one 512-word part");
	if (romlen > 768) die("ROM longer than 768 words (%d)", romlen);
	fprintf(f, "module pe_micro_rom #(\n  parameter bit Rom = 1'b1,\n"
		   "  parameter bit OldOnCollide = 1'b1\n) (\n"
		   "  input  wire        clk_i,\n"
		   "  input  wire [9:0]  uaddr_i,   // ROM: read every cycle\n"
		   "  output wire [15:0] udata_o,\n"
		   "  input  wire        swe_i,     // S RAM\n  input  wire [7:0]  swaddr_i,\n"
		   "  input  wire [15:0] swdata_i,\n  input  wire [7:0]  sraddr_i,\n"
		   "  output wire [15:0] srdata_o\n);\n"
		   "  logic [15:0] rom0 [0:511];\n  logic [15:0] rom1 [0:255];\n"
		   "  logic [15:0] sm_q [0:255];\n"
		   "  logic [15:0] d0_q, d1_q, srdata_q;\n  logic        sel_q;\n"
		   "  // the contents (the ROM's, the S RAM's constants) and the read registers' power-up\n"
		   "  // values: initial values, which synthesis keeps in the block RAMs and flip-flops\n"
		   "  initial begin\n"
		   "    for (int i = 0; i < 512; i++) rom0[i] = 16'h0000;\n"
		   "    for (int i = 0; i < 256; i++) rom1[i] = 16'h0000;\n");
	for (int i = 0; i < romlen; i++)
		if (rom[i]) fprintf(f, "    rom%d[%d] = 16'h%04x;\n", i >= 512, i % 512, rom[i]);
	fprintf(f, "    for (int i = 0; i < 256; i++) sm_q[i] = 16'h0000;\n");
	for (int i = 0; i < SSIZE; i++)
		if (sinit[i]) fprintf(f, "    sm_q[%d] = 16'h%04x;\n", i, sinit[i]);
	fprintf(f, "    d0_q = 16'h0000;\n    d1_q = 16'h0000;\n    sel_q = 1'b0;\n"
		   "  end\n\n"
		   "  // one block, no reset: the templates Yosys maps to block RAMs\n"
		   "  always_ff @(posedge clk_i) begin\n    d0_q <= rom0[uaddr_i[8:0]];\n"
		   "    d1_q <= rom1[uaddr_i[7:0]];\n    sel_q <= uaddr_i[9];\n"
		   "    if (swe_i) sm_q[swaddr_i] <= swdata_i;\n"
		   "    srdata_q <= (!OldOnCollide && swe_i && swaddr_i == sraddr_i) ? {16{1'bx}}\n"
		   "                                                                  : sm_q[sraddr_i];\n"
		   "  end\n\n"
		   "  assign udata_o = Rom ? %s : 16'h0000;\n"
		   "  assign srdata_o = srdata_q;\nendmodule\n\n`default_nettype wire\n",
		hi ? "(sel_q ? d1_q : d0_q)" : "d0_q");
}

static void list(void)
{
	for (int i = 0; i < romlen; i++) {
		const char *lab = "";
		for (int k = 0; k < nsyms; k++)
			if (syms[k].kind == 1 && syms[k].val == i) lab = syms[k].name;
		const struct uins *u = &prog[i];
		printf("%3d %04x %-12s ", i, rom[i], lab);
		if (u->fmt == 0) printf("%s am%d %d", op_names[u->op], u->am, u->a);
		else if (u->fmt == 1) printf("%s%s %s", u->call ? "call " : "", cond_names[u->cond], u->target);
		else if (u->nop) printf("nop (inserted)");
		else if (u->op == OP_NONE) printf("%s", fx_names[u->fx]);
		else printf("%s.%s %s", op_names[u->op], src_names[u->src], fx_names[u->fx]);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	const char *out = NULL, *check = NULL;
	int do_list = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
		else if (!strcmp(argv[i], "--check") && i + 1 < argc) check = argv[++i];
		else if (!strcmp(argv[i], "--list")) do_list = 1;
		else if (argv[i][0] != '-' && !srcname) srcname = argv[i];
		else {
			fprintf(stderr, "usage: uasm SRC.us [-o ROM.v] [--check ROM.v] [--list]\n");
			return 2;
		}
	}
	if (!srcname) {
		fprintf(stderr, "uasm: no source file\n");
		return 2;
	}
	FILE *f = fopen(srcname, "r");
	if (!f) {
		perror(srcname);
		return 1;
	}
	char ln[512];
	while (fgets(ln, sizeof ln, f)) {
		curline++;
		parse_line(ln);
	}
	fclose(f);
	curline = 0;
	assemble();
	if (do_list) list();
	if (out) {
		char tmp[1024];
		snprintf(tmp, sizeof tmp, "%s.tmp", out);
		FILE *o = fopen(tmp, "w");
		if (!o) { perror(tmp); return 1; }
		write_rom(o);
		if (fclose(o) || rename(tmp, out)) { perror(out); return 1; }
	}
	if (check) {
		char *buf = NULL;
		size_t len = 0;
		FILE *o = open_memstream(&buf, &len);
		write_rom(o);
		fclose(o);
		FILE *c = fopen(check, "r");
		if (!c) { perror(check); return 1; }
		char *cur = malloc(len + 2);
		size_t got = fread(cur, 1, len + 1, c);
		fclose(c);
		int same = got == len && !memcmp(cur, buf, len);
		free(cur);
		free(buf);
		if (!same) {
			fprintf(stderr, "uasm: %s is not the assembly of %s: run `make ucode`\n", check, srcname);
			return 1;
		}
		printf("uasm: %s is current (%d words)\n", check, romlen);
	}
	return 0;
}
