/* pn-fit - fit a latency model per layer type from featurized rows */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "design.h"
#include "err.h"
#include "opt.h"
#include "featurize.h"
#include "metrics.h"
#include "modelset.h"
#include "table.h"
#include "tsv.h"

static const char usage_head[] =
"Usage: pn-fit [OPTION]... [FILE]\n"
"Fit a model that predicts a column (default time_ms) of the featurized rows\n"
"of FILE (default: standard input), one model per layer type, and write the\n"
"model file.\n"
"\n"
"  -f, --family NAME     lr, rf, gbdt, xgb or mlp (default xgb)\n"
"      --auto            fit every family, keep the one with the lowest\n"
"                        validation RMSE per layer type (needs --val)\n"
"  -F, --features SET    a named set (";
static const char usage_tail[] =
")\n"
"                        or a comma list of columns (default cocmct)\n"
"  -t, --target COL      the column to predict (default time_ms)\n"
"  -l, --log-target      fit ln(target); predictions are exponentiated\n"
"                        (the default)\n"
"      --no-log-target   fit the target itself\n"
"  -r, --relative[=COL]  fit ln(target / COL), COL a column of the row\n"
"                        (default roofline_ms): the model learns how far\n"
"                        from its roofline an op runs, and predictions are\n"
"                        COL times exp(model)\n"
"  -L, --log-features    take every non-negative numeric feature as ln(x)\n"
"  -v, --val FILE        validation rows: early stopping (gbdt, xgb, mlp) and\n"
"                        the --auto comparison\n"
"      --logo            leave one device out: refit the chosen family once\n"
"                        without each device of the rows (at least 3), and\n"
"                        record in the model how it missed that device: the\n"
"                        error to expect on a GPU never measured, which\n"
"                        pn-eval and pn-sum --interval turn into intervals\n"
"                        (not with --no-log-target)\n"
"      --skip-failed     skip rows whose status column is not ok (rows of\n"
"                        pn-time that ran out of memory or failed), and\n"
"                        count them on standard error\n"
"  -p, --param NAME=VALUE  a family hyper-parameter (repeatable)\n"
"  -s, --seed N          seed of every random choice (default 1)\n"
"      --by-layer        one model per value of the layer column (default)\n"
"      --no-by-layer     one model for all rows (layer '*')\n"
"  -o, --output FILE     write the model to FILE instead of standard output\n"
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n"
"\n";
static const char usage_end[] =
"In a list, a column whose values are not numbers is categorical: one 0/1\n"
"feature per value seen; a column that mixes numbers and other values is an\n"
"error.\n"
"Families and their parameters: see pn-fit(1).\n";

enum { OPT_AUTO = 256, OPT_BY_LAYER, OPT_NO_BY_LAYER, OPT_LOGO, OPT_SKIP,
       OPT_NO_LOG, OPT_VERSION };

static const struct option longopts[] = {
	{"family", required_argument, NULL, 'f'},
	{"auto", no_argument, NULL, OPT_AUTO},
	{"features", required_argument, NULL, 'F'},
	{"target", required_argument, NULL, 't'},
	{"log-target", no_argument, NULL, 'l'},
	{"no-log-target", no_argument, NULL, OPT_NO_LOG},
	{"relative", optional_argument, NULL, 'r'},
	{"log-features", no_argument, NULL, 'L'},
	{"val", required_argument, NULL, 'v'},
	{"logo", no_argument, NULL, OPT_LOGO},
	{"skip-failed", no_argument, NULL, OPT_SKIP},
	{"param", required_argument, NULL, 'p'},
	{"seed", required_argument, NULL, 's'},
	{"by-layer", no_argument, NULL, OPT_BY_LAYER},
	{"no-by-layer", no_argument, NULL, OPT_NO_BY_LAYER},
	{"output", required_argument, NULL, 'o'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0}
};

static void usage(void)
{
	fputs(usage_head, stdout);
	for (const pn_feature_set *s = pn_feature_sets; s->name; s++)
		printf("%s%s", s > pn_feature_sets ? ", " : "", s->name);
	fputs(usage_tail, stdout);
	pn_feature_sets_help(stdout);
	fputs(usage_end, stdout);
	pn_output_close(stdout);
}

/* ---- progress on a terminal ----------------------------------------------- */

static int show_progress;
static const char *prog_layer, *prog_family;
static int prog_last = -1;

static void progress(double done, double total)
{
	int pct = total > 0 ? (int)(100 * done / total) : 100;
	if (pct > 100)
		pct = 100;
	if (pct == prog_last)
		return;
	prog_last = pct;
	fprintf(stderr, "\r%s: %s %s %3d%%\033[K", pn_prog, prog_layer,
		prog_family, pct);
	fflush(stderr);
}

static void progress_done(void)
{
	if (show_progress) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

/* ---- options -------------------------------------------------------------- */

static void add_param(pn_params *par, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		pn_usage_error("invalid --param '%s': want NAME=VALUE", arg);
	if (strpbrk(arg, " \t\n"))
		pn_usage_error("invalid --param '%s': white space", arg);
	size_t n = (size_t)(eq - arg);
	for (int i = 0; i < par->n; i++)
		if (strlen(par->name[i]) == n &&
		    memcmp(par->name[i], arg, n) == 0)
			pn_usage_error("--param '%.*s' given twice", (int)n,
				       arg);
	if (par->n == 64)
		pn_usage_error("too many --param (at most 64)");
	par->name[par->n] = pn_xmalloc(n + 1);
	memcpy(par->name[par->n], arg, n);
	par->name[par->n][n] = '\0';
	par->value[par->n] = pn_xstrdup(eq + 1);
	par->used[par->n++] = 0;
}

/* ---- the run ----------------------------------------------------------------- */

/* The rows of one group (a layer type, or "*" for all), as the families see
 * them. */
typedef struct {
	const char *layer;
	size_t n, nv, *rows, *vrows;
	pn_design d;
	double *x, *y, *vx, *vy, *floor;
	pn_model *best;
	double chosen;          /* best's validation RMSE */
	char **autoline;
	int nauto;
} group;

/* Everything pn-fit holds, kept in main's frame so that it stays reachable
 * when a family stops the program on a bad --param (LeakSanitizer). */
typedef struct {
	const char *features;   /* as given */
	const pn_feature_set *set;      /* or NULL for a list */
	const char *target, *base;      /* base: --relative's column */
	int log;        /* 1 ln(target), 0 the target; -1 until chosen */
	int logfeat, autofit, by_layer, logo;
	uint64_t seed;
	const pn_family *family;
	pn_params par;
	int ever_used[64];      /* per param, over every fit */
	pn_table *t, *val;
	pn_strset layers;
	pn_model **models;
	group g;
	pn_model *fitting;      /* the model a family is fitting */
	double *scaled[2];      /* its scaled inputs */
	struct {                /* --logo's folds */
		pn_strset dev;
		double *x, *y, *vx, *vy, *xs, *pred;
	} lo;
	pn_fault fault;
} run;

static void group_free(group *g)
{
	free(g->rows);
	free(g->vrows);
	pn_design_free(&g->d);
	free(g->x);
	free(g->y);
	free(g->vx);
	free(g->vy);
	free(g->floor);
	pn_model_free(g->best);
	for (int k = 0; k < g->nauto; k++)
		free(g->autoline[k]);
	free(g->autoline);
	memset(g, 0, sizeof *g);
}

static void logo_free(run *r)
{
	pn_strset_free(&r->lo.dev);
	free(r->lo.x);
	free(r->lo.y);
	free(r->lo.vx);
	free(r->lo.vy);
	free(r->lo.xs);
	free(r->lo.pred);
	memset(&r->lo, 0, sizeof r->lo);
}

static void run_free(run *r)
{
	group_free(&r->g);
	pn_model_free(r->fitting);
	free(r->scaled[0]);
	free(r->scaled[1]);
	logo_free(r);
	for (int i = 0; r->models && i < r->layers.n; i++)
		pn_model_free(r->models[i]);
	free(r->models);
	pn_strset_free(&r->layers);
	for (int i = 0; i < r->par.n; i++) {
		free(r->par.name[i]);
		free(r->par.value[i]);
	}
	pn_table_free(r->t);
	pn_table_free(r->val);
}

/* Release everything and report r's fault (its path copied first). */
static _Noreturn void fail(run *r)
{
	char path[4096];
	pn_fault f = r->fault;
	progress_done();
	if (f.path) {
		snprintf(path, sizeof path, "%s", f.path);
		f.path = path;
	}
	run_free(r);
	pn_fault_die(&f);
}

/* --skip-failed: drop the rows of t whose status is not "ok" and count them
 * by status on stderr ("skipped 3 rows with status oom (2), error (1)"). */
static int skip_failed(run *r, pn_table *t, const char *what)
{
	int sc = pn_table_find(t, "status");
	if (sc < 0)
		return 0;
	unsigned char *keep = pn_xmalloc(t->nrows);
	pn_strset st = {0};
	size_t *cnt = pn_xcalloc(t->nrows, sizeof *cnt), skipped = 0;
	for (size_t i = 0; i < t->nrows; i++) {
		const char *s = pn_cell(t, i, sc);
		keep[i] = strcmp(s, "ok") == 0;
		if (keep[i])
			continue;
		int k = 0;
		while (k < st.n && strcmp(st.s[k], s) != 0)
			k++;
		pn_strset_add(&st, s);
		cnt[k]++;
		skipped++;
	}
	size_t kept = skipped ? pn_table_keep(t, keep) : t->nrows;
	if (skipped) {
		fprintf(stderr, "%s: skipped %zu %srow%s with status", pn_prog,
			skipped, what, skipped == 1 ? "" : "s");
		/* most frequent first; ties in order of appearance */
		for (int done = 0; done < st.n; done++) {
			int m = -1;
			for (int k = 0; k < st.n; k++)
				if (cnt[k] && (m < 0 || cnt[k] > cnt[m]))
					m = k;
			fprintf(stderr, "%s %s (%zu)", done ? "," : "",
				st.s[m], cnt[m]);
			cnt[m] = 0;
		}
		fputc('\n', stderr);
	}
	free(keep);
	free(cnt);
	pn_strset_free(&st);
	if (kept == 0)
		return pn_fault_set(&r->fault, PN_EXIT_DATA, t->path, 0, "no "
				    "rows left after skipping %zu failed "
				    "row%s", skipped, skipped == 1 ? "" : "s");
	return 0;
}

/* Rows of t in the group: those whose layer column lcol equals layer, or
 * all for "*" or lcol < 0. */
static size_t *group_rows(const pn_table *t, int lcol, const char *layer,
			  size_t *n)
{
	size_t *rows = pn_xmalloc(t->nrows * sizeof *rows), k = 0;
	for (size_t i = 0; i < t->nrows; i++)
		if (strcmp(layer, "*") == 0 || lcol < 0 ||
		    strcmp(pn_cell(t, i, lcol), layer) == 0)
			rows[k++] = i;
	*n = k;
	return rows;
}

/* Fit one family on the group's data x, y (n rows; validation rows vx,
 * vy, nv of them); returns the model, or NULL with err set (256 bytes).
 * *val_rmse: the RMSE on the validation rows, NAN without. */
static pn_model *fit_family(run *r, const pn_family *fam, const double *x,
			    const double *y, size_t n, const double *vx,
			    const double *vy, size_t nv, double *val_rmse,
			    char *err)
{
	group *g = &r->g;
	size_t p = g->d.p;
	pn_model *m = r->fitting = pn_xcalloc(1, sizeof *m);
	m->family = fam;
	m->layer = pn_xstrdup(g->layer);
	m->target = pn_xstrdup(r->target);
	m->log = r->log || r->base;
	m->base = r->base ? pn_xstrdup(r->base) : NULL;
	m->p = p;
	m->feat = pn_xcalloc(p, sizeof *m->feat);
	pn_design_features(&g->d, g->floor, m->feat);
	pn_design_scaling(x, n, p, fam->wants_scaling, m->feat);
	double *xs = r->scaled[0] = pn_design_scale(x, n, p, m->feat);
	double *vxs = r->scaled[1] = nv ? pn_design_scale(vx, nv, p, m->feat)
				       : NULL;
	pn_data d = {n, p, xs, (double *)y};
	pn_data v = {nv, p, vxs, (double *)vy};
	for (int i = 0; i < r->par.n; i++)
		r->par.used[i] = 0;
	prog_layer = g->layer;
	prog_family = fam->name;
	prog_last = -1;
	err[0] = '\0';
	m->state = fam->fit(&d, nv ? &v : NULL, &r->par, r->seed,
			    show_progress ? progress : NULL, err);
	for (int i = 0; i < r->par.n; i++)
		if (r->par.used[i]) {
			r->ever_used[i] = 1;
			pn_model_add_param(m, r->par.name[i], r->par.value[i]);
		}
	*val_rmse = NAN;
	if (m->state && nv) {
		double *pred = pn_xmalloc(nv * sizeof *pred);
		fam->predict(m->state, vxs, nv, p, pred);
		*val_rmse = pn_rmse(pred, vy, nv);
		free(pred);
	}
	if (!m->state) {
		if (!err[0])
			snprintf(err, 256, "%s: fit failed", fam->name);
		pn_model_free(m);
		m = NULL;
	}
	free(xs);
	free(vxs);
	r->fitting = NULL;
	r->scaled[0] = r->scaled[1] = NULL;
	return m;
}

/* Rows of the group (encoded x, target y, table rows rows[0..n)) whose
 * device is (keep 0) or is not (keep 1) dev, into xo, yo; returns their
 * count. */
static size_t rows_of(const pn_table *t, int dc, const size_t *rows,
		      size_t n, const double *x, const double *y, size_t p,
		      const char *dev, int keep, double *xo, double *yo)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if ((strcmp(pn_cell(t, rows[i], dc), dev) != 0) != keep)
			continue;
		memcpy(xo + k * p, x + i * p, p * sizeof *x);
		yo[k++] = y[i];
	}
	return k;
}

/* The devices of the group's rows, sorted, into r->lo.dev. */
static int logo_devices(run *r, int dc)
{
	const pn_table *t = r->t;
	group *g = &r->g;
	for (size_t i = 0; i < g->n; i++) {
		size_t row = g->rows[i];
		if (pn_cell_na(t, row, dc))
			return pn_fault_set(&r->fault, PN_EXIT_DATA, t->path,
					    t->line[row], "column 'device': "
					    "value is %s (--logo)",
					    pn_cell_len(t, row, dc) ? "NA" :
					    "empty");
		if (strpbrk(pn_cell(t, row, dc), " "))
			return pn_fault_set(&r->fault, PN_EXIT_DATA, t->path,
					    t->line[row], "column 'device': "
					    "'%.40s' has a space and cannot be "
					    "recorded in a model (--logo)",
					    pn_cell(t, row, dc));
		pn_strset_add(&r->lo.dev, pn_cell(t, row, dc));
	}
	pn_strset_sort(&r->lo.dev);
	if (r->lo.dev.n < 3)
		return pn_fault_set(&r->fault, PN_EXIT_DATA, t->path, 0,
				    "--logo needs rows of at least 3 devices; "
				    "layer '%s' has %d", g->layer,
				    r->lo.dev.n);
	return 0;
}

/* Refit the best family without each device of the group in turn, predict
 * that device's rows and record the error, ln(predicted / measured): the
 * target is fitted on a log scale, so it is the difference. */
static int leave_devices_out(run *r)
{
	group *g = &r->g;
	size_t p = g->d.p, n = g->n, nv = g->nv;
	int dc = pn_table_col(r->t, "device", &r->fault), vdc = -1;
	if (dc < 0 || (nv && (vdc = pn_table_col(r->val, "device",
						 &r->fault)) < 0) ||
	    logo_devices(r, dc) < 0)
		return -1;
	r->lo.x = pn_xmalloc(n * p * sizeof *r->lo.x);
	r->lo.y = pn_xmalloc(n * sizeof *r->lo.y);
	r->lo.pred = pn_xmalloc(n * sizeof *r->lo.pred);
	if (nv) {
		r->lo.vx = pn_xmalloc(nv * p * sizeof *r->lo.vx);
		r->lo.vy = pn_xmalloc(nv * sizeof *r->lo.vy);
	}
	for (int d = 0; d < r->lo.dev.n; d++) {
		const char *dev = r->lo.dev.s[d];
		size_t nin = rows_of(r->t, dc, g->rows, n, g->x, g->y, p, dev,
				     1, r->lo.x, r->lo.y);
		/* validation rows of the device left out would tell the
		 * early stopping about it */
		size_t nvin = nv ? rows_of(r->val, vdc, g->vrows, nv, g->vx,
					   g->vy, p, dev, 1, r->lo.vx,
					   r->lo.vy) : 0;
		char err[256];
		double vr;
		pn_model *m = fit_family(r, g->best->family, r->lo.x, r->lo.y,
					 nin, r->lo.vx, r->lo.vy, nvin, &vr,
					 err);
		if (!m)
			return pn_fault_set(&r->fault, PN_EXIT_DATA, NULL, 0,
					    "layer '%s': --logo fit without "
					    "device '%s': %s", g->layer, dev,
					    err);
		size_t nout = rows_of(r->t, dc, g->rows, n, g->x, g->y, p, dev,
				      0, r->lo.x, r->lo.y);
		r->lo.xs = pn_design_scale(r->lo.x, nout, p, m->feat);
		m->family->predict(m->state, r->lo.xs, nout, p, r->lo.pred);
		free(r->lo.xs);
		r->lo.xs = NULL;
		long double s = 0, ss = 0;
		for (size_t i = 0; i < nout; i++)
			s += r->lo.pred[i] - r->lo.y[i];
		double mean = (double)(s / (long double)nout);
		for (size_t i = 0; i < nout; i++) {
			double e = r->lo.pred[i] - r->lo.y[i] - mean;
			ss += (long double)e * e;
		}
		double sd = sqrt((double)(ss / (long double)nout));
		pn_model_free(m);
		if (!isfinite(mean) || !isfinite(sd))
			return pn_fault_set(&r->fault, PN_EXIT_DATA, NULL, 0,
					    "layer '%s': --logo: the fit "
					    "without device '%s' predicts its "
					    "rows out of range", g->layer,
					    dev);
		pn_model_add_logo(g->best, dev, nout, mean, sd);
	}
	logo_free(r);
	return 0;
}

/* The group's design, inputs and targets, training and validation. */
static int prepare(run *r, const char *layer)
{
	const pn_table *t = r->t;
	group *g = &r->g;
	pn_fault *f = &r->fault;
	int lcol = r->by_layer ? pn_table_find(t, "layer") : -1;
	g->layer = layer;
	g->rows = group_rows(t, lcol, layer, &g->n);
	if (g->n < 10)
		return strcmp(layer, "*") == 0 ?
		       pn_fault_set(f, PN_EXIT_DATA, t->path, 0, "only %zu "
				    "rows (at least 10 needed)", g->n) :
		       pn_fault_set(f, PN_EXIT_DATA, t->path, 0, "layer '%s' "
				    "has only %zu row%s (at least 10 needed)",
				    layer, g->n, g->n == 1 ? "" : "s");
	if ((r->set ? pn_design_set(&g->d, t, g->rows, g->n, r->set, f)
		    : pn_design_list(&g->d, t, r->features, f)) < 0)
		return -1;
	for (int k = 0; k < g->d.n; k++)
		if (strcmp(g->d.c[k].name, r->target) == 0)
			return pn_fault_set(f, PN_EXIT_USAGE, NULL, 0, "the "
					    "target '%s' is also a feature",
					    r->target);
	if (pn_design_classify(&g->d, t, g->rows, g->n, f) < 0)
		return -1;
	size_t p = g->d.p;
	if (p == 0)
		return pn_fault_set(f, PN_EXIT_DATA, t->path, 0, "no features "
				    "for layer '%s'", layer);
	g->x = pn_xmalloc(g->n * p * sizeof *g->x);
	g->y = pn_xmalloc(g->n * sizeof *g->y);
	int tc = pn_table_col(t, r->target, f);
	int base = r->base ? pn_table_col(t, r->base, f) : -1;
	if (pn_design_encode(&g->d, t, g->rows, g->n, g->x, f) < 0 ||
	    pn_design_target(t, g->rows, g->n, tc, r->log, base, g->y, f) < 0)
		return -1;
	if (r->logfeat) {
		g->floor = pn_xmalloc(p * sizeof *g->floor);
		pn_design_log_floors(&g->d, g->x, g->n, g->floor);
		pn_design_log_apply(g->x, g->n, p, g->floor);
	}
	if (!r->val)
		return 0;
	const pn_table *v = r->val;
	int vl = r->by_layer ? pn_table_find(v, "layer") : -1;
	if (r->by_layer && lcol >= 0 && vl < 0)
		return pn_table_col(v, "layer", f);
	g->vrows = group_rows(v, vl, layer, &g->nv);
	if (!g->nv)
		return r->autofit ? pn_fault_set(f, PN_EXIT_DATA, v->path, 0,
						 "no validation rows of layer "
						 "'%s'", layer) : 0;
	g->vx = pn_xmalloc(g->nv * p * sizeof *g->vx);
	g->vy = pn_xmalloc(g->nv * sizeof *g->vy);
	int vt = -1, vb = -1;
	if (pn_design_encode(&g->d, v, g->vrows, g->nv, g->vx, f) < 0 ||
	    (vt = pn_table_col(v, r->target, f)) < 0 ||
	    (r->base && (vb = pn_table_col(v, r->base, f)) < 0) ||
	    pn_design_target(v, g->vrows, g->nv, vt, r->log, vb, g->vy,
			     f) < 0)
		return -1;
	if (g->floor)
		pn_design_log_apply(g->vx, g->nv, p, g->floor);
	return 0;
}

static char *fmt_num(double v)
{
	char *b = pn_xmalloc(40);
	if (isfinite(v))
		pn_fmt_num(b, v);
	else
		strcpy(b, "NA");
	return b;
}

/* An --auto line, kept for the info of the model chosen. */
static void auto_line(group *g, const char *fam, const char *what,
		      const char *s)
{
	size_t len = strlen(s) + 64;
	g->autoline = pn_xrealloc(g->autoline, (size_t)(g->nauto + 1) *
				  sizeof *g->autoline);
	g->autoline[g->nauto] = pn_xmalloc(len);
	snprintf(g->autoline[g->nauto++], len, "auto %s %s %s", fam, what, s);
}

/* Fit the family, or with --auto every family, and keep the best in
 * g->best. */
static int choose(run *r, int first)
{
	group *g = &r->g;
	const pn_family *const *fams = pn_family_all();
	const pn_family *one[2] = {r->family, NULL};
	if (!r->autofit)
		fams = one;
	double best_rmse = INFINITY;
	g->chosen = NAN;
	for (int k = 0; fams[k]; k++) {
		char err[256];
		double vr;
		pn_model *m = fit_family(r, fams[k], g->x, g->y, g->n, g->vx,
					 g->vy, g->nv, &vr, err);
		if (!m) {
			if (!r->autofit)
				return pn_fault_set(&r->fault, PN_EXIT_DATA,
						    NULL, 0, "%s", err);
			auto_line(g, fams[k]->name, "failed", err);
			continue;
		}
		char *v = fmt_num(vr);
		auto_line(g, fams[k]->name, "rmse", v);
		free(v);
		if (!g->best || (isfinite(vr) && vr < best_rmse) ||
		    (!isfinite(best_rmse) && isfinite(vr))) {
			pn_model_free(g->best);
			g->best = m;
			best_rmse = isfinite(vr) ? vr : INFINITY;
			g->chosen = vr;
		} else {
			pn_model_free(m);
		}
	}
	for (int i = 0; first && i < r->par.n; i++)
		if (!r->ever_used[i] && r->autofit)
			return pn_fault_set(&r->fault, PN_EXIT_USAGE, NULL, 0,
					    "--param '%s' is not read by any "
					    "family", r->par.name[i]);
		else if (!r->ever_used[i])
			return pn_fault_set(&r->fault, PN_EXIT_USAGE, NULL, 0,
					    "--param '%s' is not read by "
					    "family '%s'", r->par.name[i],
					    r->family->name);
	if (!g->best)
		return pn_fault_set(&r->fault, PN_EXIT_DATA, NULL, 0, "layer "
				    "'%s': every family failed", g->layer);
	return 0;
}

/* The values of column col in the group's rows, sorted, joined by commas;
 * NULL when t has no such column. */
static char *distinct(const pn_table *t, const size_t *rows, size_t n,
		      const char *col)
{
	int c = pn_table_find(t, col);
	if (c < 0)
		return NULL;
	pn_strset ss = {0};
	for (size_t i = 0; i < n; i++)
		if (!pn_cell_na(t, rows[i], c))
			pn_strset_add(&ss, pn_cell(t, rows[i], c));
	pn_strset_sort(&ss);
	char *s = pn_strset_join(&ss);
	pn_strset_free(&ss);
	return s;
}

/* The provenance lines of the model chosen. */
static void describe(run *r)
{
	group *g = &r->g;
	pn_model *m = g->best;
	pn_model_add_info(m, "rows %zu", g->n);
	static const char *const cols[] = {"device", "layer"};
	static const char *const keys[] = {"devices", "layers"};
	for (int i = 0; i < 2; i++) {
		char *s = distinct(r->t, g->rows, g->n, cols[i]);
		if (s)
			pn_model_add_info(m, "%s %s", keys[i], *s ? s : "NA");
		free(s);
	}
	pn_model_add_info(m, "features %s", r->features);
	pn_model_add_info(m, "seed %llu", (unsigned long long)r->seed);
	if (g->nv) {
		char *v = fmt_num(g->chosen);
		pn_model_add_info(m, "val rows %zu rmse %s%s", g->nv, v,
				  r->base ? " (log ratio scale)" :
				  r->log ? " (log scale)" : "");
		free(v);
	}
	for (int k = 0; r->autofit && k < g->nauto; k++)
		pn_model_add_info(m, "%s", g->autoline[k]);
	pn_model_add_info(m, "created-by pn-fit %s", PN_VERSION);
}

/* The model of one group, into *out. */
static int fit_group(run *r, const char *layer, int first, pn_model **out)
{
	if (prepare(r, layer) < 0 || choose(r, first) < 0 ||
	    (r->logo && leave_devices_out(r) < 0))
		return -1;
	describe(r);
	*out = r->g.best;
	r->g.best = NULL;
	group_free(&r->g);
	return 0;
}

/* The groups: layer values of t in sorted order, or "*" for all rows; with
 * validation rows, each of their layer values must be among them. */
static int groups(run *r)
{
	const pn_table *t = r->t;
	int lcol = r->by_layer ? pn_table_find(t, "layer") : -1;
	r->by_layer = lcol >= 0;
	if (lcol < 0) {
		pn_strset_add(&r->layers, "*");
		return 0;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		const char *l = pn_cell(t, i, lcol);
		if (pn_cell_na(t, i, lcol))
			return pn_fault_set(&r->fault, PN_EXIT_DATA, t->path,
					    t->line[i], "column 'layer': value "
					    "is %s", *l ? "NA" : "empty");
		if (strpbrk(l, " \t") || strcmp(l, "*") == 0)
			return pn_fault_set(&r->fault, PN_EXIT_DATA, t->path,
					    t->line[i], "column 'layer': "
					    "'%.40s' cannot name a model", l);
		pn_strset_add(&r->layers, l);
	}
	pn_strset_sort(&r->layers);
	int vl = r->val ? pn_table_find(r->val, "layer") : -1;
	for (size_t i = 0; vl >= 0 && i < r->val->nrows; i++) {
		const char *l = pn_cell(r->val, i, vl);
		int k = 0;
		while (k < r->layers.n && strcmp(r->layers.s[k], l) != 0)
			k++;
		if (k == r->layers.n)
			return pn_fault_set(&r->fault, PN_EXIT_DATA,
					    r->val->path, r->val->line[i],
					    "column 'layer': no training rows "
					    "of layer type '%.40s' (validation "
					    "rows are of the types fitted)", l);
	}
	return 0;
}

/* Check the options that go together; set r->set. */
static void check_options(run *r, const char *valpath)
{
	const char *features = r->features, *tgt = r->target, *base = r->base;
	if (r->autofit && !valpath)
		pn_usage_error("--auto needs --val FILE");
	if (!*features)
		pn_usage_error("--features needs a set or columns");
	if (!*tgt || strpbrk(tgt, " \t"))
		pn_usage_error("invalid --target '%s'", tgt);
	if (base && (!*base || strpbrk(base, " \t")))
		pn_usage_error("invalid --relative '%s'", base);
	if (base && r->log == 1)
		pn_usage_error("--relative and --log-target exclude each other "
			       "(--relative fits a log already)");
	if (base && r->log == 0)
		pn_usage_error("--relative and --no-log-target exclude each "
			       "other (--relative fits a log)");
	if (r->logo && r->log == 0)
		pn_usage_error("--logo and --no-log-target exclude each other "
			       "(--logo records errors on a log scale)");
	if (r->log < 0)         /* the default: ln(target), or --relative's */
		r->log = !base;
	if (base && strcmp(base, tgt) == 0)
		pn_usage_error("--relative '%s' is the target itself", base);
	r->set = pn_feature_set_find(features);
	if (!r->set && (strpbrk(features, " \t") || strstr(features, ",,") ||
			features[0] == ',' ||
			features[strlen(features) - 1] == ','))
		pn_usage_error("invalid --features '%s'", features);
}

int main(int argc, char **argv)
{
	pn_init("pn-fit");
	pn_stdout_init();
	run r = {.features = "cocmct", .target = "time_ms", .by_layer = 1,
		 .seed = 1, .log = -1};
	const char *family = "xgb", *valpath = NULL, *output = NULL;
	int skip = 0, c;
	argv[0] = (char *)pn_prog;   /* getopt's messages start "pn-fit: " */
	while ((c = getopt_long(argc, argv, "f:F:t:lr::Lv:p:s:o:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'f': family = optarg; break;
		case OPT_AUTO: r.autofit = 1; break;
		case OPT_LOGO: r.logo = 1; break;
		case OPT_SKIP: skip = 1; break;
		case 'F': r.features = optarg; break;
		case 't': r.target = optarg; break;
		case 'l': r.log = 1; break;
		case OPT_NO_LOG: r.log = 0; break;
		case 'r': r.base = optarg ? optarg : "roofline_ms"; break;
		case 'L': r.logfeat = 1; break;
		case 'v': valpath = optarg; break;
		case 'p': add_param(&r.par, optarg); break;
		case 's': r.seed = pn_opt_seed("--seed", optarg); break;
		case OPT_BY_LAYER: r.by_layer = 1; break;
		case OPT_NO_BY_LAYER: r.by_layer = 0; break;
		case 'o': output = optarg; break;
		case 'h': usage(); return PN_EXIT_OK;
		case OPT_VERSION: pn_version();
		default: pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	if (!(r.family = pn_family_find(family)))
		pn_usage_error("unknown family '%s': want lr, rf, gbdt, xgb or "
			       "mlp", family);
	check_options(&r, valpath);

	r.t = pn_table_read(optind < argc ? argv[optind] : "-");
	r.val = valpath ? pn_table_read(valpath) : NULL;
	if ((skip && (skip_failed(&r, r.t, "") < 0 ||
		      (r.val && skip_failed(&r, r.val, "validation ") < 0))) ||
	    pn_table_col(r.t, r.target, &r.fault) < 0 ||
	    (r.base && pn_table_col(r.t, r.base, &r.fault) < 0) ||
	    groups(&r) < 0)
		fail(&r);
	show_progress = isatty(2);
	r.models = pn_xcalloc((size_t)r.layers.n, sizeof *r.models);
	for (int i = 0; i < r.layers.n; i++)
		if (fit_group(&r, r.layers.s[i], i == 0, &r.models[i]) < 0)
			fail(&r);
	progress_done();

	FILE *f = pn_output_open(output);
	for (int i = 0; i < r.layers.n; i++)
		pn_model_write(f, r.models[i]);
	pn_output_close(f);
	if (f != stdout)
		pn_output_close(stdout);
	run_free(&r);
	return PN_EXIT_OK;
}
