/*
 * cmd_plot.c - `cshost plot RUN... [-o FILE] [--title TEXT] [--smooth N]`: the curves of one
 * or several run directories, drawn by gnuplot into one SVG, PNG or PDF (by FILE's
 * extension; default RUN/plot.svg): training loss (moving mean) and validation loss,
 * learning rate, sparsity per layer over time (of the first run; the others' overall
 * sparsity), and the mask churn of each update of dynamic methods.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_num.h"

#define MAX_RUNS 16
#define MAX_LAYERS 256

static void usage(FILE *f)
{
	fprintf(f, "usage: cshost plot RUN... [-o FILE.svg|.png|.pdf] [--title TEXT] [--smooth N]\n"
		   "  draws the runs' metrics.jsonl with gnuplot: training loss (moving mean of N\n"
		   "  steps, default 20) and validation loss, learning rate, sparsity per layer\n"
		   "  over time, and mask churn per update. Default FILE: RUN/plot.svg.\n");
}

/* the number after "key": in a JSON line, or 0 when absent */
static int jnum(const char *line, const char *key, double *v)
{
	char pat[80];
	snprintf(pat, sizeof pat, "\"%s\": ", key);
	const char *p = strstr(line, pat);
	if (!p)
		return 0;
	char *end;
	*v = strtod(p + strlen(pat), &end);
	return end != p + strlen(pat);
}

typedef struct {
	char names[MAX_LAYERS][64];
	int n;
} layers;

/* the run's data files under tmp: k.train (step loss lr sparsity), k.val (step val_loss),
 * k.churn (step churn), k.layers (step, one column per layer) */
static int read_run(const char *run, int k, const char *tmp, long smooth, layers *ly,
		    int *has_val, int *has_churn, char *err, size_t errlen)
{
	double *ring = calloc((size_t)smooth, sizeof *ring), sum = 0;
	if (!ring) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char p[1200];
	snprintf(p, sizeof p, "%s/metrics.jsonl", run);
	FILE *in = fopen(p, "r");
	if (!in) {
		snprintf(err, errlen, "%s: %s", p, strerror(errno));
		free(ring);
		return -1;
	}
	FILE *out[4];
	const char *ext[4] = { "train", "val", "churn", "layers" };
	for (int i = 0; i < 4; i++) {
		char q[1200];
		snprintf(q, sizeof q, "%s/%d.%s", tmp, k, ext[i]);
		out[i] = fopen(q, "w");
		if (!out[i]) {
			snprintf(err, errlen, "%s: %s", q, strerror(errno));
			fclose(in);
			for (int j = 0; j < i; j++)
				fclose(out[j]);
			free(ring);
			return -1;
		}
	}
	char *line = NULL;
	size_t cap = 0;
	long ln = 0, n_train = 0;
	int rc = 0;
	*has_val = *has_churn = 0;
	while (getline(&line, &cap, in) > 0) {
		ln++;
		double step, loss, lr, sp, churn, vl, changed;
		if (line[0] != '{' || !jnum(line, "step", &step)) {
			snprintf(err, errlen, "%s:%ld: not a metrics line (a JSON object with a step)", p,
				 ln);
			rc = -1;
			break;
		}
		if (jnum(line, "val_loss", &vl)) {
			fprintf(out[1], "%g %g\n", step, vl);
			*has_val = 1;
			continue;
		}
		if (!jnum(line, "loss", &loss))
			continue; /* other records */
		if (!jnum(line, "lr", &lr))
			lr = 0;
		if (!jnum(line, "sparsity", &sp))
			sp = 0;
		/* moving mean of the last `smooth` losses */
		sum += loss - (n_train >= smooth ? ring[n_train % smooth] : 0.0);
		ring[n_train % smooth] = loss;
		n_train++;
		fprintf(out[0], "%g %g %g %g %g\n", step, loss, lr, sp,
			sum / (double)(n_train < smooth ? n_train : smooth));
		if (jnum(line, "masks_changed", &changed) && changed > 0 &&
		    jnum(line, "mask_churn", &churn)) {
			fprintf(out[2], "%g %g\n", step, churn);
			*has_churn = 1;
		}
		const char *ls = k == 0 ? strstr(line, "\"layer_sparsity\": {") : NULL;
		if (ls) {
			ls += strlen("\"layer_sparsity\": {");
			fprintf(out[3], "%g", step);
			int li = 0;
			while (*ls == '"') {
				const char *e = strchr(ls + 1, '"');
				if (!e || e[1] != ':')
					break;
				if (ly->n < MAX_LAYERS && li == ly->n) {
					snprintf(ly->names[ly->n], sizeof ly->names[0], "%.*s",
						 (int)(e - ls - 1), ls + 1);
					ly->n++;
				}
				char *end;
				double v = strtod(e + 2, &end);
				if (li < MAX_LAYERS)
					fprintf(out[3], " %g", v);
				li++;
				ls = end;
				while (*ls == ',' || *ls == ' ')
					ls++;
			}
			fputc('\n', out[3]);
		}
	}
	free(line);
	free(ring);
	fclose(in);
	for (int i = 0; i < 4; i++)
		if (fclose(out[i]))
			rc = -1;
	if (!rc && n_train == 0) {
		snprintf(err, errlen, "%s: no training steps yet", p);
		rc = -1;
	}
	return rc;
}

/* gnuplot string: single quotes, with ' doubled */
static void gq(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static const char *base_name(const char *run)
{
	size_t n = strlen(run);
	while (n > 1 && run[n - 1] == '/')
		n--;
	static char buf[256];
	size_t s = n;
	while (s > 0 && run[s - 1] != '/')
		s--;
	snprintf(buf, sizeof buf, "%.*s", (int)(n - s), run + s);
	return buf;
}

int cmd_plot(int argc, char **argv)
{
	const char *runs[MAX_RUNS], *out = NULL, *title = NULL;
	int nruns = 0;
	long smooth = 20;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--title") && i + 1 < argc) {
			title = argv[++i];
		} else if (!strcmp(argv[i], "--smooth") && i + 1 < argc) {
			long long x;
			if (cli_int("plot", "--smooth", argv[++i], 1, 100000, &x))
				return 2;
			smooth = x;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "cshost plot: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		} else if (nruns < MAX_RUNS) {
			runs[nruns++] = argv[i];
		} else {
			fprintf(stderr, "cshost plot: at most %d runs\n", MAX_RUNS);
			return 2;
		}
	}
	if (!nruns) {
		usage(stderr);
		return 2;
	}
	char defout[1200];
	if (!out) {
		snprintf(defout, sizeof defout, "%s/plot.svg", runs[0]);
		out = defout;
	}
	const char *dot = strrchr(out, '.');
	const char *term = dot && !strcmp(dot, ".png") ? "pngcairo size 1200,900 font 'sans,10'" :
			   dot && !strcmp(dot, ".pdf") ? "pdfcairo size 10in,7.5in font 'sans,9'" :
			   dot && !strcmp(dot, ".svg") ? "svg size 1200,900 dynamic font 'sans,11'" :
							 NULL;
	if (!term) {
		fprintf(stderr, "cshost plot: -o %s: the name must end in .svg, .png or .pdf\n", out);
		return 2;
	}
	char tmp[] = "/tmp/cshost-plot-XXXXXX";
	if (!mkdtemp(tmp)) {
		fprintf(stderr, "cshost plot: cannot make a temporary directory: %s\n",
			strerror(errno));
		return 1;
	}
	char err[1400];
	layers ly = { .n = 0 };
	int has_val[MAX_RUNS], has_churn[MAX_RUNS], any_churn = 0, rc = 0;
	for (int k = 0; k < nruns && !rc; k++) {
		rc = read_run(runs[k], k, tmp, smooth, &ly, &has_val[k], &has_churn[k], err,
			      sizeof err);
		any_churn |= has_churn[k];
	}
	char script[1300], outtmp[1300];
	snprintf(script, sizeof script, "%s/plot.gp", tmp);
	snprintf(outtmp, sizeof outtmp, "%s.tmp", out);
	FILE *g = rc ? NULL : fopen(script, "w");
	if (!rc && !g) {
		snprintf(err, sizeof err, "%s: %s", script, strerror(errno));
		rc = -1;
	}
	if (g) {
		fprintf(g, "set terminal %s\nset output ", term);
		gq(g, outtmp);
		fprintf(g, "\nset datafile missing NaN\nset key top right font ',9'\nset grid\n"
			   "set multiplot layout 2,2 title ");
		gq(g, title ? title : nruns == 1 ? base_name(runs[0]) : "runs");
		/* 1: loss: the moving mean of training, validation */
		fprintf(g, "\nset title 'loss (nats per token)'\nset xlabel 'step'\nplot ");
		for (int k = 0; k < nruns; k++) {
			char f[1300];
			snprintf(f, sizeof f, "%s/%d.train", tmp, k);
			fprintf(g, "%s", k ? ", " : "");
			gq(g, f);
			fprintf(g, " using 1:5 with lines lw 1.5 lc %d title ", k + 1);
			char t[300];
			snprintf(t, sizeof t, "%s train (mean of %ld)", base_name(runs[k]), smooth);
			gq(g, t);
			if (has_val[k]) {
				snprintf(f, sizeof f, "%s/%d.val", tmp, k);
				fprintf(g, ", ");
				gq(g, f);
				fprintf(g, " using 1:2 with linespoints pt 7 ps 0.6 dt 2 lc %d title ",
					k + 1);
				snprintf(t, sizeof t, "%s validation", base_name(runs[k]));
				gq(g, t);
			}
		}
		/* 2: learning rate */
		fprintf(g, "\nset title 'learning rate'\nset format y '%%.1e'\nplot ");
		for (int k = 0; k < nruns; k++) {
			char f[1300];
			snprintf(f, sizeof f, "%s/%d.train", tmp, k);
			fprintf(g, "%s", k ? ", " : "");
			gq(g, f);
			fprintf(g, " using 1:3 with lines lw 1.5 lc %d title ", k + 1);
			gq(g, base_name(runs[k]));
		}
		/* 3: sparsity per layer (first run), overall for the others */
		fprintf(g, "\nset title 'sparsity'\nset format y '%%.2f'\nset yrange [0:1]\n"
			   "set key bottom right font ',8'\nplot ");
		int first = 1;
		char f0[1300];
		snprintf(f0, sizeof f0, "%s/0.layers", tmp);
		for (int l = 0; l < ly.n && l < 24; l++) {
			fprintf(g, "%s", first ? "" : ", ");
			gq(g, f0);
			fprintf(g, " using 1:%d with lines lw 1 title ", l + 2);
			gq(g, ly.names[l]);
			first = 0;
		}
		for (int k = 0; k < nruns; k++) {
			if (k == 0 && ly.n)
				continue;
			char f[1300];
			snprintf(f, sizeof f, "%s/%d.train", tmp, k);
			fprintf(g, "%s", first ? "" : ", ");
			gq(g, f);
			fprintf(g, " using 1:4 with lines lw 2 dt 2 title ");
			char t[300];
			snprintf(t, sizeof t, "%s (all sparsified)", base_name(runs[k]));
			gq(g, t);
			first = 0;
		}
		if (ly.n > 24)
			fprintf(g, "%s1/0 title '(%d more layers)'", first ? "" : ", ", ly.n - 24);
		/* 4: mask churn */
		fprintf(g, "\nset title 'mask churn per update (entries changed / masked entries)'\n"
			   "set yrange [0:*]\nset format y '%%.3f'\nset key top right font ',9'\n");
		if (any_churn) {
			fprintf(g, "plot ");
			first = 1;
			for (int k = 0; k < nruns; k++) {
				if (!has_churn[k])
					continue;
				char f[1300];
				snprintf(f, sizeof f, "%s/%d.churn", tmp, k);
				fprintf(g, "%s", first ? "" : ", ");
				gq(g, f);
				fprintf(g, " using 1:2 with impulses lw 2 lc %d title ", k + 1);
				gq(g, base_name(runs[k]));
				first = 0;
			}
			fputc('\n', g);
		} else {
			fprintf(g, "unset key\nset xrange [0:1]\nset yrange [0:1]\nunset xtics\n"
				   "unset ytics\nset label 1 'no mask updates (static masks or dense)' "
				   "at 0.5,0.5 center\nplot 2 notitle\n");
		}
		fprintf(g, "unset multiplot\nset output\n");
		if (fclose(g)) {
			snprintf(err, sizeof err, "%s: write error", script);
			rc = -1;
		}
	}
	if (!rc) {
		char cmd[2800];
		snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>'%s/gnuplot.log'", script, tmp);
		int st = system(cmd);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 127) {
			snprintf(err, sizeof err, "gnuplot not found (Debian package gnuplot-nox; "
				 "`make deps` installs it)");
			rc = -1;
		} else if (WEXITSTATUS(st)) {
			char lp[1300];
			snprintf(lp, sizeof lp, "%s/gnuplot.log", tmp);
			FILE *lf = fopen(lp, "r");
			char msg[600] = "";
			if (lf) {
				size_t n = fread(msg, 1, sizeof msg - 1, lf);
				msg[n] = 0;
				fclose(lf);
			}
			snprintf(err, sizeof err, "gnuplot failed: %s", msg);
			rc = -1;
		} else if (rename(outtmp, out)) {
			snprintf(err, sizeof err, "%s: %s", out, strerror(errno));
			rc = -1;
		}
	}
	unlink(outtmp);
	char rm[100];
	snprintf(rm, sizeof rm, "rm -rf '%s'", tmp);
	if (system(rm) != 0)
		fprintf(stderr, "cshost plot: cannot remove %s\n", tmp);
	if (rc) {
		fprintf(stderr, "cshost plot: %s\n", err);
		return 1;
	}
	printf("wrote %s\n", out);
	return 0;
}
