/* pn-fit - fit a latency model per layer type from featurized rows */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "layer.h"
#include "model.h"
#include "modelset.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-fit [OPTION]... [FILE]\n"
"Fit a model that predicts a column (default time_ms) of the featurized rows\n"
"of FILE (default: standard input), one model per layer type, and write the\n"
"model file.\n"
"\n"
"  -f, --family NAME     lr, rf, gbdt, xgb or mlp (default rf)\n"
"      --auto            fit every family, keep the one with the lowest\n"
"                        validation RMSE per layer type (needs --val)\n"
"  -F, --features SET    a named set (baseline, co, cocm, cocmct, phys, rel)\n"
"                        or a comma list of columns (default cocmct)\n"
"  -t, --target COL      the column to predict (default time_ms)\n"
"  -l, --log-target      fit ln(target); predictions are exponentiated\n"
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
"                        (needs --log-target or --relative)\n"
"  -p, --param NAME=VALUE  a family hyper-parameter (repeatable)\n"
"  -s, --seed N          seed of every random choice (default 1)\n"
"      --by-layer        one model per value of the layer column (default)\n"
"      --no-by-layer     one model for all rows (layer '*')\n"
"  -o, --output FILE     write the model to FILE instead of standard output\n"
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n"
"\n"
"Feature sets: baseline = the layer's dimension columns, the categorical\n"
"configuration columns present (op optimizer activation precision pass) and\n"
"gpu_sms gpu_cores gpu_boost_mhz gpu_mem_gb gpu_mem_bw_gbs gpu_l2_mb\n"
"gpu_fp32_gflops; co = baseline + co; cocm = co + cm_weights cm_in cm_out\n"
"cm_total; cocmct = cocm + ct_ms; phys = cocmct + flops traffic ai compute_ms\n"
"memory_ms roofline_ms tiles waves wave_eff; rel = the dimension and\n"
"configuration columns + flops traffic ai compute_ms memory_ms roofline_ms\n"
"tiles waves wave_eff, and no spec-sheet column: the device enters only\n"
"through its roofline and waves (meant for --relative, on unseen GPUs).\n"
"A column with a value that is not a number is categorical: one 0/1\n"
"feature per value seen.\n"
"Families and their parameters: see pn-fit(1).\n";

enum { OPT_AUTO = 256, OPT_BY_LAYER, OPT_NO_BY_LAYER, OPT_LOGO, OPT_VERSION };

static const struct option longopts[] = {
	{"family", required_argument, NULL, 'f'},
	{"auto", no_argument, NULL, OPT_AUTO},
	{"features", required_argument, NULL, 'F'},
	{"target", required_argument, NULL, 't'},
	{"log-target", no_argument, NULL, 'l'},
	{"relative", optional_argument, NULL, 'r'},
	{"log-features", no_argument, NULL, 'L'},
	{"val", required_argument, NULL, 'v'},
	{"logo", no_argument, NULL, OPT_LOGO},
	{"param", required_argument, NULL, 'p'},
	{"seed", required_argument, NULL, 's'},
	{"by-layer", no_argument, NULL, OPT_BY_LAYER},
	{"no-by-layer", no_argument, NULL, OPT_NO_BY_LAYER},
	{"output", required_argument, NULL, 'o'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0}
};

/* ---- a whole TSV in memory ---------------------------------------------- */

typedef struct {
	char *path;
	int ncols;
	char **names;
	size_t nrows;
	const char **cell;      /* nrows * ncols */
	uint32_t *len;
	long *line;
	char **blocks;          /* text storage */
	size_t nblocks;
} table;

static char *arena_copy(table *t, const char *s, size_t n, char **cur,
			size_t *left)
{
	if (n + 1 > *left) {
		size_t sz = n + 1 > (1 << 20) ? n + 1 : (1 << 20);
		t->blocks = pn_xrealloc(t->blocks, (t->nblocks + 1) *
					sizeof *t->blocks);
		*cur = t->blocks[t->nblocks++] = pn_xmalloc(sz);
		*left = sz;
	}
	char *d = *cur;
	memcpy(d, s, n);
	d[n] = '\0';
	*cur += n + 1;
	*left -= n + 1;
	return d;
}

static table *table_read(const char *path)
{
	table *t = pn_xcalloc(1, sizeof *t);
	pn_tsv *in = pn_tsv_open(path);
	t->path = pn_xstrdup(pn_tsv_path(in));
	t->ncols = pn_tsv_ncols(in);
	t->names = pn_xmalloc((size_t)t->ncols * sizeof *t->names);
	for (int c = 0; c < t->ncols; c++)
		t->names[c] = pn_xstrdup(pn_tsv_colname(in, c));
	size_t cap = 0;
	char *cur = NULL;
	size_t left = 0;
	while (pn_tsv_read(in)) {
		if (t->nrows == cap) {
			cap = cap ? 2 * cap : 1024;
			t->cell = pn_xrealloc(t->cell, cap * (size_t)t->ncols *
					      sizeof *t->cell);
			t->len = pn_xrealloc(t->len, cap * (size_t)t->ncols *
					     sizeof *t->len);
			t->line = pn_xrealloc(t->line, cap * sizeof *t->line);
		}
		size_t at = t->nrows * (size_t)t->ncols;
		for (int c = 0; c < t->ncols; c++) {
			size_t n = pn_tsv_len(in, c);
			t->cell[at + (size_t)c] = arena_copy(t, pn_tsv_str(in, c),
							     n, &cur, &left);
			t->len[at + (size_t)c] = (uint32_t)n;
		}
		t->line[t->nrows++] = pn_tsv_lineno(in);
	}
	if (t->nrows == 0)
		pn_die_at(PN_EXIT_DATA, t->path, 0, "no data rows");
	pn_tsv_close(in);
	return t;
}

static int table_find(const table *t, const char *name)
{
	for (int c = 0; c < t->ncols; c++)
		if (strcmp(t->names[c], name) == 0)
			return c;
	return -1;
}

static int table_col(const table *t, const char *name)
{
	int c = table_find(t, name);
	if (c < 0)
		pn_die_at(PN_EXIT_DATA, t->path, 1, "missing column '%s'", name);
	return c;
}

static const char *cell(const table *t, size_t r, int c)
{
	return t->cell[r * (size_t)t->ncols + (size_t)c];
}

static size_t cell_len(const table *t, size_t r, int c)
{
	return t->len[r * (size_t)t->ncols + (size_t)c];
}

static int cell_na(const table *t, size_t r, int c)
{
	size_t n = cell_len(t, r, c);
	return n == 0 || (n == 2 && memcmp(cell(t, r, c), "NA", 2) == 0);
}

/* The value of a numeric cell; dies like pn_tsv_num. */
static double cell_num(const table *t, size_t r, int c)
{
	double v;
	if (cell_na(t, r, c))
		pn_die_at(PN_EXIT_DATA, t->path, t->line[r],
			  "column '%s': value is %s", t->names[c],
			  cell_len(t, r, c) ? "NA" : "empty");
	if (pn_parse_num(cell(t, r, c), cell_len(t, r, c), &v) < 0)
		pn_die_at(PN_EXIT_DATA, t->path, t->line[r],
			  "column '%s': '%.40s' is not a number", t->names[c],
			  cell(t, r, c));
	return v;
}

static void table_free(table *t)
{
	for (size_t i = 0; i < t->nblocks; i++)
		free(t->blocks[i]);
	for (int c = 0; c < t->ncols; c++)
		free(t->names[c]);
	free(t->blocks);
	free(t->names);
	free(t->cell);
	free(t->len);
	free(t->line);
	free(t->path);
	free(t);
}

/* ---- sorted string sets --------------------------------------------------- */

typedef struct {
	int n, cap;
	const char **s;
} strset;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void strset_add(strset *ss, const char *s)
{
	for (int i = 0; i < ss->n; i++)   /* sets here are small */
		if (strcmp(ss->s[i], s) == 0)
			return;
	if (ss->n == ss->cap) {
		ss->cap = ss->cap ? 2 * ss->cap : 8;
		ss->s = pn_xrealloc(ss->s, (size_t)ss->cap * sizeof *ss->s);
	}
	ss->s[ss->n++] = s;
}

static void strset_sort(strset *ss)
{
	if (ss->n)
		qsort(ss->s, (size_t)ss->n, sizeof *ss->s, cmp_str);
}

/* s joined by commas, into a new string. */
static char *strset_join(const strset *ss)
{
	size_t n = 1;
	for (int i = 0; i < ss->n; i++)
		n += strlen(ss->s[i]) + 1;
	char *j = pn_xmalloc(n);
	j[0] = '\0';
	for (int i = 0; i < ss->n; i++) {
		if (i)
			strcat(j, ",");
		strcat(j, ss->s[i]);
	}
	return j;
}

/* ---- rows per layer ------------------------------------------------------- */

typedef struct {
	const char *layer;      /* value of the layer column, or "*" */
	size_t n;
	size_t *row;
} group;

/* Rows of t in the group: those whose layer column equals g's layer, or all
 * for "*". */
static size_t *group_rows(const table *t, int lcol, const char *layer,
			  size_t *n)
{
	size_t *r = pn_xmalloc(t->nrows * sizeof *r), k = 0;
	for (size_t i = 0; i < t->nrows; i++)
		if (strcmp(layer, "*") == 0 || lcol < 0 ||
		    strcmp(cell(t, i, lcol), layer) == 0)
			r[k++] = i;
	*n = k;
	return r;
}

/* ---- features -------------------------------------------------------------- */

/* One input column and how it becomes features. */
typedef struct {
	char *name;
	int cat;
	int fixed;              /* kind known (named sets); else told from the
				   values */
	strset val;             /* categories, sorted */
} fcol;

typedef struct {
	int n;
	fcol *c;
} fspec;

static const char *const cat_config[] = {
	"op", "optimizer", "activation", "precision", "pass", NULL
};
static const char *const hw_cols[] = {
	"gpu_sms", "gpu_cores", "gpu_boost_mhz", "gpu_mem_gb",
	"gpu_mem_bw_gbs", "gpu_l2_mb", "gpu_fp32_gflops", NULL
};
static const char *const set_co[] = {"co", NULL};
static const char *const set_cm[] = {
	"cm_weights", "cm_in", "cm_out", "cm_total", NULL
};
static const char *const set_ct[] = {"ct_ms", NULL};
static const char *const set_phys[] = {
	"flops", "traffic", "ai", "compute_ms", "memory_ms", "roofline_ms",
	"tiles", "waves", "wave_eff", NULL
};

static const char *const set_rel[] = {
	"flops", "traffic", "ai", "compute_ms", "memory_ms", "roofline_ms",
	"tiles", "waves", "wave_eff", NULL
};

static const char *const set_names[] = {
	"baseline", "co", "cocm", "cocmct", "phys", "rel", NULL
};
enum { SET_REL = 5 };

static int named_set(const char *s)
{
	for (int i = 0; set_names[i]; i++)
		if (strcmp(set_names[i], s) == 0)
			return i;
	return -1;
}

static void fspec_add(fspec *fs, const char *name, int cat, int fixed)
{
	for (int i = 0; i < fs->n; i++)
		if (strcmp(fs->c[i].name, name) == 0)
			return;
	fs->c = pn_xrealloc(fs->c, (size_t)(fs->n + 1) * sizeof *fs->c);
	fcol *c = &fs->c[fs->n++];
	memset(c, 0, sizeof *c);
	c->name = pn_xstrdup(name);
	c->cat = cat;
	c->fixed = fixed;
}

static void fspec_free(fspec *fs)
{
	for (int i = 0; i < fs->n; i++) {
		free(fs->c[i].name);
		free(fs->c[i].val.s);
	}
	free(fs->c);
}

static int is_cat_config(const char *name)
{
	for (int i = 0; cat_config[i]; i++)
		if (strcmp(cat_config[i], name) == 0)
			return 1;
	return 0;
}

/* Every value of column c in rows is NA or empty. */
static int all_na(const table *t, const size_t *rows, size_t n, int c)
{
	for (size_t i = 0; i < n; i++)
		if (!cell_na(t, rows[i], c))
			return 0;
	return 1;
}

/* The columns of a named set for the rows of one group. */
static void named_columns(const table *t, const size_t *rows, size_t n,
			  int set, fspec *fs)
{
	int lcol = table_col(t, "layer");
	/* dimension columns of every layer type present, in type order */
	int seen[PN_NLAYERS] = {0};
	for (size_t i = 0; i < n; i++) {
		const char *l = cell(t, rows[i], lcol);
		int ty = pn_layer_type_of(l);
		if (ty < 0)
			pn_die_at(PN_EXIT_DATA, t->path, t->line[rows[i]],
				  "unknown layer type '%.40s' (feature set "
				  "'%s' needs its dimension columns; name the "
				  "features with --features)", l,
				  set_names[set]);
		seen[ty] = 1;
	}
	for (int ty = 0; ty < PN_NLAYERS; ty++)
		if (seen[ty])
			for (const char *const *d = pn_layer_dims(ty); *d; d++) {
				table_col(t, *d);
				fspec_add(fs, *d, is_cat_config(*d), 1);
			}
	for (int i = 0; cat_config[i]; i++) {
		int c = table_find(t, cat_config[i]);
		if (c >= 0 && !all_na(t, rows, n, c))
			fspec_add(fs, cat_config[i], 1, 1);
	}
	if (set == SET_REL) {
		for (const char *const *c = set_rel; *c; c++)
			fspec_add(fs, *c, 0, 1);
	} else {
		for (int i = 0; hw_cols[i]; i++)
			fspec_add(fs, hw_cols[i], 0, 1);
		const char *const *more[] = {set_co, set_cm, set_ct, set_phys};
		for (int k = 0; k < set; k++)
			for (const char *const *c = more[k]; *c; c++)
				fspec_add(fs, *c, 0, 1);
	}
	for (int i = 0; i < fs->n; i++)
		table_col(t, fs->c[i].name);
}

static void list_columns(const table *t, const char *list, fspec *fs)
{
	char *copy = pn_xstrdup(list), *save = NULL;
	for (char *c = strtok_r(copy, ",", &save); c;
	     c = strtok_r(NULL, ",", &save)) {
		for (int i = 0; i < fs->n; i++)
			if (strcmp(fs->c[i].name, c) == 0)
				pn_usage_error("column '%s' named twice in "
					       "--features", c);
		table_col(t, c);
		fspec_add(fs, c, 0, 0);
	}
	free(copy);
}

/* Decide which listed columns are categorical (those holding a value that is
 * not a number; a named set says itself) and collect the categories of
 * every categorical column, in this group's rows. */
static void classify(const table *t, const size_t *rows, size_t n, fspec *fs)
{
	for (int k = 0; k < fs->n; k++) {
		fcol *f = &fs->c[k];
		int c = table_col(t, f->name);
		if (!f->fixed)
			for (size_t i = 0; i < n && !f->cat; i++) {
				double v;
				if (!cell_na(t, rows[i], c) &&
				    pn_parse_num(cell(t, rows[i], c),
						 cell_len(t, rows[i], c),
						 &v) < 0)
					f->cat = 1;
			}
		if (!f->cat)
			continue;
		if (strchr(f->name, '=') || strpbrk(f->name, " \t"))
			pn_die_at(PN_EXIT_DATA, t->path, 1, "categorical "
				  "column '%s': a name with '=' or white "
				  "space cannot name a feature", f->name);
		for (size_t i = 0; i < n; i++) {
			size_t r = rows[i];
			if (cell_na(t, r, c))
				continue;
			if (strpbrk(cell(t, r, c), " \t"))
				pn_die_at(PN_EXIT_DATA, t->path, t->line[r],
					  "column '%s': value '%.40s' has "
					  "white space and cannot name a "
					  "feature", f->name, cell(t, r, c));
			strset_add(&f->val, cell(t, r, c));
		}
		strset_sort(&f->val);
	}
}

static size_t fspec_width(const fspec *fs)
{
	size_t p = 0;
	for (int k = 0; k < fs->n; k++)
		p += fs->c[k].cat ? (size_t)fs->c[k].val.n : 1;
	return p;
}

/* Encode the rows of t (columns found by name) into x, n x p raw
 * features. */
static void encode(const table *t, const size_t *rows, size_t n,
		   const fspec *fs, size_t p, double *x)
{
	int *col = pn_xmalloc((size_t)fs->n * sizeof *col);
	for (int k = 0; k < fs->n; k++)
		col[k] = table_col(t, fs->c[k].name);
	for (size_t i = 0; i < n; i++) {
		size_t r = rows[i], j = 0;
		double *xr = x + i * p;
		for (int k = 0; k < fs->n; k++) {
			const fcol *f = &fs->c[k];
			if (!f->cat) {
				xr[j++] = cell_num(t, r, col[k]);
				continue;
			}
			const char *v = cell(t, r, col[k]);
			for (int q = 0; q < f->val.n; q++)
				xr[j++] = strcmp(v, f->val.s[q]) == 0;
		}
	}
	free(col);
}

/* ---- the target ------------------------------------------------------------ */

/* y = the target column col, or its log (log_target), or the log of its
 * ratio to column base (base >= 0, --relative). */
static void target(const table *t, const size_t *rows, size_t n, int col,
		   int log_target, int base, double *y)
{
	for (size_t i = 0; i < n; i++) {
		double v = cell_num(t, rows[i], col);
		if (log_target || base >= 0) {
			if (!(v > 0))
				pn_die_at(PN_EXIT_DATA, t->path,
					  t->line[rows[i]], "column '%s': "
					  "'%s' is not positive (%s)",
					  t->names[col], cell(t, rows[i], col),
					  base >= 0 ? "--relative" :
					  "--log-target");
			v = log(v);
		}
		if (base >= 0) {
			double b = cell_num(t, rows[i], base);
			if (!(b > 0))
				pn_die_at(PN_EXIT_DATA, t->path,
					  t->line[rows[i]], "column '%s': "
					  "'%s' is not positive (the base of "
					  "--relative)", t->names[base],
					  cell(t, rows[i], base));
			v -= log(b);
		}
		y[i] = v;
	}
}

/* --log-features: for each numeric feature whose training values are all
 * >= 0, the floor of ln(max(x, floor)) (the smallest positive value, or 1
 * when none is), else 0 (kept linear).  x is n x p; cat marks 0/1
 * indicators. */
static void log_floors(const double *x, size_t n, size_t p, const int *cat,
		       double *floor)
{
	for (size_t j = 0; j < p; j++) {
		double lo = INFINITY, pos = INFINITY;
		for (size_t i = 0; i < n; i++) {
			double v = x[i * p + j];
			if (v < lo)
				lo = v;
			if (v > 0 && v < pos)
				pos = v;
		}
		floor[j] = cat[j] || !(lo >= 0) ? 0 : isfinite(pos) ? pos : 1;
	}
}

/* x[:, j] = ln(max(x, floor[j])) where floor[j] > 0. */
static void log_apply(double *x, size_t n, size_t p, const double *floor)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < p; j++)
			if (floor[j] > 0) {
				double v = x[i * p + j];
				x[i * p + j] = log(v > floor[j] ? v : floor[j]);
			}
}

/* ---- progress on a terminal -------------------------------------------------- */

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

static uint64_t parse_seed(const char *s)
{
	char *end;
	errno = 0;
	if (*s < '0' || *s > '9')
		pn_usage_error("invalid --seed '%s': want a whole number "
			       "from 0", s);
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || errno)
		pn_usage_error("invalid --seed '%s': want a whole number "
			       "from 0", s);
	return (uint64_t)v;
}

/* ---- fitting one group ------------------------------------------------------ */

typedef struct {
	const table *t, *val;
	const char *features;   /* as given */
	int set;                /* named set, or -1 for a list */
	const char *target;
	int log;
	const char *base;       /* --relative: the base column, or NULL */
	int logfeat;            /* --log-features */
	uint64_t seed;
	int autofit;
	const pn_family *family;
	pn_params *par;
	int *ever_used;         /* per param, over every fit */
	int by_layer;
	int logo;               /* --logo */
} fitctx;

/* Standardise x in place with per-feature mean and sd (numeric features of
 * families that want scaling; cat and other features keep 0 and 1). */
static void scaling(const double *x, size_t n, size_t p, const fspec *fs,
		    int want, pn_feature *feat)
{
	size_t j = 0;
	for (int k = 0; k < fs->n; k++) {
		const fcol *f = &fs->c[k];
		size_t w = f->cat ? (size_t)f->val.n : 1;
		for (size_t q = 0; q < w; q++, j++) {
			feat[j].mean = 0;
			feat[j].sd = 1;
			if (!want || f->cat)
				continue;
			long double s = 0;
			for (size_t i = 0; i < n; i++)
				s += x[i * p + j];
			double mean = (double)(s / (long double)n);
			long double ss = 0;
			for (size_t i = 0; i < n; i++) {
				double d = x[i * p + j] - mean;
				ss += (long double)d * d;
			}
			double sd = sqrt((double)(ss / (long double)n));
			feat[j].mean = mean;
			feat[j].sd = sd > 0 && isfinite(sd) ? sd : 1;
		}
	}
}

static double *apply_scaling(const double *x, size_t n, size_t p,
			     const pn_feature *feat)
{
	double *s = pn_xmalloc(n * p * sizeof *s);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < p; j++)
			s[i * p + j] = (x[i * p + j] - feat[j].mean) /
				       feat[j].sd;
	return s;
}

static double rmse(const double *a, const double *b, size_t n)
{
	long double s = 0;
	for (size_t i = 0; i < n; i++) {
		double e = a[i] - b[i];
		s += (long double)e * e;
	}
	return sqrt((double)(s / (long double)n));
}

/* The model being fitted, reachable when a bad --param ends the program
 * inside the family (LeakSanitizer). */
static struct {
	pn_model *m;
	double *x, *vx;
} fitting;

/* Fit one family on the group's data; returns the model (state set), or
 * NULL with err set. */
static pn_model *fit_family(fitctx *cx, const pn_family *fam,
			    const char *layer, const fspec *fs, size_t p,
			    const double *xraw, const double *y, size_t n,
			    const double *vraw, const double *vy, size_t nv,
			    const double *floor, double *val_rmse, char *err)
{
	pn_model *m = fitting.m = pn_xcalloc(1, sizeof *m);
	m->family = fam;
	m->layer = pn_xstrdup(layer);
	m->target = pn_xstrdup(cx->target);
	m->log = cx->log || cx->base;
	m->base = cx->base ? pn_xstrdup(cx->base) : NULL;
	m->p = p;
	m->feat = pn_xcalloc(p, sizeof *m->feat);
	size_t j = 0;
	for (int k = 0; k < fs->n; k++) {
		const fcol *f = &fs->c[k];
		if (!f->cat) {
			m->feat[j].name = pn_xstrdup(f->name);
			m->feat[j++].cat = 0;
			continue;
		}
		for (int q = 0; q < f->val.n; q++) {
			size_t len = strlen(f->name) + strlen(f->val.s[q]) + 2;
			m->feat[j].name = pn_xmalloc(len);
			snprintf(m->feat[j].name, len, "%s=%s", f->name,
				 f->val.s[q]);
			m->feat[j++].cat = 1;
		}
	}
	for (j = 0; j < p; j++)
		if (floor && floor[j] > 0) {
			m->feat[j].log = 1;
			m->feat[j].floor = floor[j];
		}
	scaling(xraw, n, p, fs, fam->wants_scaling, m->feat);
	double *x = fitting.x = apply_scaling(xraw, n, p, m->feat);
	double *vx = fitting.vx = nv ? apply_scaling(vraw, nv, p, m->feat)
				     : NULL;
	pn_data d = {n, p, x, (double *)y};
	pn_data v = {nv, p, vx, (double *)vy};
	for (int i = 0; i < cx->par->n; i++)
		cx->par->used[i] = 0;
	prog_layer = layer;
	prog_family = fam->name;
	prog_last = -1;
	err[0] = '\0';
	m->state = fam->fit(&d, nv ? &v : NULL, cx->par, cx->seed,
			    show_progress ? progress : NULL, err);
	for (int i = 0; i < cx->par->n; i++)
		if (cx->par->used[i]) {
			cx->ever_used[i] = 1;
			pn_model_add_param(m, cx->par->name[i],
					   cx->par->value[i]);
		}
	if (!m->state) {
		if (!err[0])
			snprintf(err, 256, "%s: fit failed", fam->name);
		free(x);
		free(vx);
		m->state = NULL;
		pn_model_free(m);
		memset(&fitting, 0, sizeof fitting);
		return NULL;
	}
	*val_rmse = NAN;
	if (nv) {
		double *pred = pn_xmalloc(nv * sizeof *pred);
		fam->predict(m->state, vx, nv, p, pred);
		*val_rmse = rmse(pred, vy, nv);
		free(pred);
	}
	free(x);
	free(vx);
	memset(&fitting, 0, sizeof fitting);
	return m;
}

static void check_params(const fitctx *cx)
{
	for (int i = 0; i < cx->par->n; i++)
		if (!cx->ever_used[i]) {
			if (cx->autofit)
				pn_usage_error("--param '%s' is not read by "
					       "any family", cx->par->name[i]);
			pn_usage_error("--param '%s' is not read by family "
				       "'%s'", cx->par->name[i],
				       cx->family->name);
		}
}

static void distinct(const table *t, const size_t *rows, size_t n,
		     const char *col, char **out)
{
	int c = table_find(t, col);
	*out = NULL;
	if (c < 0)
		return;
	strset ss = {0};
	for (size_t i = 0; i < n; i++)
		if (!cell_na(t, rows[i], c))
			strset_add(&ss, cell(t, rows[i], c));
	strset_sort(&ss);
	*out = strset_join(&ss);
	free(ss.s);
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

/* The group being fitted.  Static so that everything stays reachable when
 * a data error ends the program half-way (LeakSanitizer). */
static struct {
	size_t *rows, *vrows;
	fspec fs;
	double *x, *y, *vx, *vy, *floor;
	pn_model *best;
	char **autoline;
	int nauto;
} cur;

/* --logo's folds.  Static so that everything stays reachable when a data
 * error ends the program half-way (LeakSanitizer). */
static struct {
	strset dev;
	double *x, *y, *vx, *vy, *xs, *pred;
} lo;

/* Rows of group rows[0..n) (encoded x, target y) whose device is (keep 0)
 * or is not (keep 1) dev, into *xo, *yo; returns their count. */
static size_t rows_of(const table *t, int dc, const size_t *rows, size_t n,
		      const double *x, const double *y, size_t p,
		      const char *dev, int keep, double *xo, double *yo)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if ((strcmp(cell(t, rows[i], dc), dev) != 0) != keep)
			continue;
		memcpy(xo + k * p, x + i * p, p * sizeof *x);
		yo[k++] = y[i];
	}
	return k;
}

/* Refit best's family without each device of the group in turn, predict
 * that device's rows and record the error, ln(predicted / measured): the
 * target is fitted on a log scale, so it is the difference. */
static void leave_devices_out(fitctx *cx, pn_model *best, const char *layer,
			      size_t p, size_t n, size_t nv)
{
	const table *t = cx->t;
	int dc = table_col(t, "device");
	int vdc = nv ? table_col(cx->val, "device") : -1;
	for (size_t i = 0; i < n; i++) {
		if (cell_na(t, cur.rows[i], dc))
			pn_die_at(PN_EXIT_DATA, t->path, t->line[cur.rows[i]],
				  "column 'device': value is %s (--logo)",
				  cell_len(t, cur.rows[i], dc) ? "NA" :
				  "empty");
		if (strpbrk(cell(t, cur.rows[i], dc), " "))
			pn_die_at(PN_EXIT_DATA, t->path, t->line[cur.rows[i]],
				  "column 'device': '%.40s' has a space and "
				  "cannot be recorded in a model (--logo)",
				  cell(t, cur.rows[i], dc));
		strset_add(&lo.dev, cell(t, cur.rows[i], dc));
	}
	strset_sort(&lo.dev);
	if (lo.dev.n < 3)
		pn_die_at(PN_EXIT_DATA, t->path, 0, "--logo needs rows of at "
			  "least 3 devices; layer '%s' has %d", layer,
			  lo.dev.n);
	lo.x = pn_xmalloc(n * p * sizeof *lo.x);
	lo.y = pn_xmalloc(n * sizeof *lo.y);
	lo.pred = pn_xmalloc(n * sizeof *lo.pred);
	if (nv) {
		lo.vx = pn_xmalloc(nv * p * sizeof *lo.vx);
		lo.vy = pn_xmalloc(nv * sizeof *lo.vy);
	}
	for (int d = 0; d < lo.dev.n; d++) {
		const char *dev = lo.dev.s[d];
		size_t nin = rows_of(t, dc, cur.rows, n, cur.x, cur.y, p, dev,
				     1, lo.x, lo.y);
		/* validation rows of the device left out would tell the
		 * early stopping about it */
		size_t nvin = nv ? rows_of(cx->val, vdc, cur.vrows, nv, cur.vx,
					   cur.vy, p, dev, 1, lo.vx, lo.vy)
				 : 0;
		char err[256];
		double vr;
		pn_model *m = fit_family(cx, best->family, layer, &cur.fs, p,
					 lo.x, lo.y, nin, lo.vx, lo.vy, nvin,
					 cur.floor, &vr, err);
		if (!m) {
			progress_done();
			pn_die(PN_EXIT_DATA, "layer '%s': --logo fit without "
			       "device '%s': %s", layer, dev, err);
		}
		size_t nout = rows_of(t, dc, cur.rows, n, cur.x, cur.y, p, dev,
				      0, lo.x, lo.y);
		lo.xs = apply_scaling(lo.x, nout, p, m->feat);
		m->family->predict(m->state, lo.xs, nout, p, lo.pred);
		free(lo.xs);
		lo.xs = NULL;
		long double s = 0, ss = 0;
		for (size_t i = 0; i < nout; i++)
			s += lo.pred[i] - lo.y[i];
		double mean = (double)(s / (long double)nout);
		for (size_t i = 0; i < nout; i++) {
			double e = lo.pred[i] - lo.y[i] - mean;
			ss += (long double)e * e;
		}
		double sd = sqrt((double)(ss / (long double)nout));
		pn_model_free(m);
		if (!isfinite(mean) || !isfinite(sd))
			pn_die(PN_EXIT_DATA, "layer '%s': --logo: the fit "
			       "without device '%s' predicts its rows out of "
			       "range", layer, dev);
		pn_model_add_logo(best, dev, nout, mean, sd);
	}
	free(lo.x);
	free(lo.y);
	free(lo.pred);
	free(lo.vx);
	free(lo.vy);
	free(lo.dev.s);
	memset(&lo, 0, sizeof lo);
}

static pn_model *fit_group(fitctx *cx, const char *layer, int first)
{
	const table *t = cx->t;
	int lcol = cx->by_layer ? table_find(t, "layer") : -1;
	size_t n;
	cur.rows = group_rows(t, lcol, layer, &n);
	if (n < 10) {
		if (strcmp(layer, "*") == 0)
			pn_die_at(PN_EXIT_DATA, t->path, 0, "only %zu rows "
				  "(at least 10 needed)", n);
		pn_die_at(PN_EXIT_DATA, t->path, 0, "layer '%s' has only %zu "
			  "row%s (at least 10 needed)", layer, n,
			  n == 1 ? "" : "s");
	}
	fspec *fs = &cur.fs;
	if (cx->set >= 0)
		named_columns(t, cur.rows, n, cx->set, fs);
	else
		list_columns(t, cx->features, fs);
	for (int k = 0; k < fs->n; k++)
		if (strcmp(fs->c[k].name, cx->target) == 0)
			pn_usage_error("the target '%s' is also a feature",
				       cx->target);
	classify(t, cur.rows, n, fs);
	size_t p = fspec_width(fs);
	if (p == 0)
		pn_die_at(PN_EXIT_DATA, t->path, 0, "no features for layer "
			  "'%s'", layer);
	cur.x = pn_xmalloc(n * p * sizeof *cur.x);
	cur.y = pn_xmalloc(n * sizeof *cur.y);
	encode(t, cur.rows, n, fs, p, cur.x);
	int base = cx->base ? table_col(t, cx->base) : -1;
	target(t, cur.rows, n, table_col(t, cx->target), cx->log, base,
	       cur.y);
	if (cx->logfeat) {
		int *cat = pn_xcalloc(p, sizeof *cat);
		size_t j = 0;
		for (int k = 0; k < fs->n; k++)
			for (int q = 0; q < (fs->c[k].cat ? fs->c[k].val.n : 1);
			     q++)
				cat[j++] = fs->c[k].cat;
		cur.floor = pn_xmalloc(p * sizeof *cur.floor);
		log_floors(cur.x, n, p, cat, cur.floor);
		log_apply(cur.x, n, p, cur.floor);
		free(cat);
	}

	size_t nv = 0;
	if (cx->val) {
		int vl = cx->by_layer ? table_find(cx->val, "layer") : -1;
		if (cx->by_layer && lcol >= 0 && vl < 0)
			table_col(cx->val, "layer");
		cur.vrows = group_rows(cx->val, vl, layer, &nv);
		if (nv) {
			cur.vx = pn_xmalloc(nv * p * sizeof *cur.vx);
			cur.vy = pn_xmalloc(nv * sizeof *cur.vy);
			encode(cx->val, cur.vrows, nv, fs, p, cur.vx);
			target(cx->val, cur.vrows, nv,
			       table_col(cx->val, cx->target), cx->log,
			       cx->base ? table_col(cx->val, cx->base) : -1,
			       cur.vy);
			if (cur.floor)
				log_apply(cur.vx, nv, p, cur.floor);
		} else if (cx->autofit) {
			pn_die_at(PN_EXIT_DATA, cx->val->path, 0, "no "
				  "validation rows of layer '%s'", layer);
		}
	}

	const pn_family *const *fams = pn_family_all();
	const pn_family *one[2] = {cx->family, NULL};
	if (!cx->autofit)
		fams = one;
	double best_rmse = INFINITY, chosen = NAN;
	for (int k = 0; fams[k]; k++) {
		char err[256];
		double vr;
		pn_model *m = fit_family(cx, fams[k], layer, fs, p, cur.x,
					 cur.y, n, cur.vx, cur.vy, nv,
					 cur.floor, &vr, err);
		cur.autoline = pn_xrealloc(cur.autoline, (size_t)(cur.nauto +
					   1) * sizeof *cur.autoline);
		if (!m) {
			if (!cx->autofit) {
				progress_done();
				pn_die(PN_EXIT_DATA, "%s", err);
			}
			size_t len = strlen(err) + 64;
			cur.autoline[cur.nauto] = pn_xmalloc(len);
			snprintf(cur.autoline[cur.nauto++], len,
				 "auto %s failed %s", fams[k]->name, err);
			continue;
		}
		char *v = fmt_num(vr);
		size_t len = strlen(v) + 64;
		cur.autoline[cur.nauto] = pn_xmalloc(len);
		snprintf(cur.autoline[cur.nauto++], len, "auto %s rmse %s",
			 fams[k]->name, v);
		free(v);
		if (!cur.best || (isfinite(vr) && vr < best_rmse) ||
		    (!isfinite(best_rmse) && isfinite(vr))) {
			pn_model_free(cur.best);
			cur.best = m;
			best_rmse = isfinite(vr) ? vr : INFINITY;
			chosen = vr;
		} else {
			pn_model_free(m);
		}
	}
	if (first)
		check_params(cx);
	pn_model *best = cur.best;
	if (!best) {
		progress_done();
		pn_die(PN_EXIT_DATA, "layer '%s': every family failed", layer);
	}

	if (cx->logo)
		leave_devices_out(cx, best, layer, p, n, nv);
	pn_model_add_info(best, "rows %zu", n);
	char *s;
	distinct(t, cur.rows, n, "device", &s);
	if (s) {
		pn_model_add_info(best, "devices %s", *s ? s : "NA");
		free(s);
	}
	distinct(t, cur.rows, n, "layer", &s);
	if (s) {
		pn_model_add_info(best, "layers %s", *s ? s : "NA");
		free(s);
	}
	pn_model_add_info(best, "features %s", cx->features);
	pn_model_add_info(best, "seed %llu", (unsigned long long)cx->seed);
	if (nv) {
		char *v = fmt_num(chosen);
		pn_model_add_info(best, "val rows %zu rmse %s%s", nv, v,
				  cx->base ? " (log ratio scale)" :
				  cx->log ? " (log scale)" : "");
		free(v);
	}
	for (int k = 0; k < cur.nauto; k++) {
		if (cx->autofit)
			pn_model_add_info(best, "%s", cur.autoline[k]);
		free(cur.autoline[k]);
	}
	free(cur.autoline);
	pn_model_add_info(best, "created-by pn-fit %s", PN_VERSION);
	free(cur.x);
	free(cur.y);
	free(cur.vx);
	free(cur.vy);
	free(cur.floor);
	free(cur.vrows);
	free(cur.rows);
	fspec_free(fs);
	memset(&cur, 0, sizeof cur);
	return best;
}

int main(int argc, char **argv)
{
	pn_init("pn-fit");
	pn_stdout_init();
	const char *family = "rf", *features = "cocmct", *tgt = "time_ms";
	const char *valpath = NULL, *output = NULL;
	const char *base = NULL;
	int log_target = 0, logfeat = 0, autofit = 0, by_layer = 1, logo = 0;
	int c;
	uint64_t seed = 1;
	static pn_params par;
	argv[0] = (char *)pn_prog;   /* getopt's messages start "pn-fit: " */
	while ((c = getopt_long(argc, argv, "f:F:t:lr::Lv:p:s:o:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'f': family = optarg; break;
		case OPT_AUTO: autofit = 1; break;
		case OPT_LOGO: logo = 1; break;
		case 'F': features = optarg; break;
		case 't': tgt = optarg; break;
		case 'l': log_target = 1; break;
		case 'r': base = optarg ? optarg : "roofline_ms"; break;
		case 'L': logfeat = 1; break;
		case 'v': valpath = optarg; break;
		case 'p': add_param(&par, optarg); break;
		case 's': seed = parse_seed(optarg); break;
		case OPT_BY_LAYER: by_layer = 1; break;
		case OPT_NO_BY_LAYER: by_layer = 0; break;
		case 'o': output = optarg; break;
		case 'h':
			fputs(usage, stdout);
			pn_output_close(stdout);
			return PN_EXIT_OK;
		case OPT_VERSION:
			pn_version();
		default:
			pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	const pn_family *fam = pn_family_find(family);
	if (!fam)
		pn_usage_error("unknown family '%s': want lr, rf, gbdt, xgb or "
			       "mlp", family);
	if (autofit && !valpath)
		pn_usage_error("--auto needs --val FILE");
	if (!*features)
		pn_usage_error("--features needs a set or columns");
	if (!*tgt || strpbrk(tgt, " \t"))
		pn_usage_error("invalid --target '%s'", tgt);
	if (base && (!*base || strpbrk(base, " \t")))
		pn_usage_error("invalid --relative '%s'", base);
	if (base && log_target)
		pn_usage_error("--relative and --log-target exclude each other "
			       "(--relative fits a log already)");
	if (logo && !log_target && !base)
		pn_usage_error("--logo needs --log-target or --relative (it "
			       "records errors on a log scale)");
	if (base && strcmp(base, tgt) == 0)
		pn_usage_error("--relative '%s' is the target itself", base);
	int set = named_set(features);
	if (set < 0 && (strpbrk(features, " \t") || strstr(features, ",,") ||
			features[0] == ',' ||
			features[strlen(features) - 1] == ','))
		pn_usage_error("invalid --features '%s'", features);

	table *t = table_read(optind < argc ? argv[optind] : "-");
	table *v = valpath ? table_read(valpath) : NULL;
	table_col(t, tgt);
	if (base)
		table_col(t, base);
	show_progress = isatty(2);

	/* the groups: layer values in sorted order, or one for all rows */
	strset layers = {0};
	int lcol = by_layer ? table_find(t, "layer") : -1;
	if (lcol >= 0) {
		for (size_t i = 0; i < t->nrows; i++) {
			if (cell_na(t, i, lcol))
				pn_die_at(PN_EXIT_DATA, t->path, t->line[i],
					  "column 'layer': value is %s",
					  cell_len(t, i, lcol) ? "NA" :
					  "empty");
			if (strpbrk(cell(t, i, lcol), " \t") ||
			    strcmp(cell(t, i, lcol), "*") == 0)
				pn_die_at(PN_EXIT_DATA, t->path, t->line[i],
					  "column 'layer': '%.40s' cannot "
					  "name a model", cell(t, i, lcol));
			strset_add(&layers, cell(t, i, lcol));
		}
		strset_sort(&layers);
	} else {
		strset_add(&layers, "*");
	}
	int ever[64] = {0};
	fitctx cx = {
		.t = t, .val = v, .features = features, .set = set,
		.target = tgt, .log = log_target, .base = base,
		.logfeat = logfeat, .seed = seed,
		.autofit = autofit, .family = fam, .par = &par,
		.ever_used = ever, .by_layer = lcol >= 0, .logo = logo,
	};
	pn_model **models = pn_xmalloc((size_t)layers.n * sizeof *models);
	for (int i = 0; i < layers.n; i++)
		models[i] = fit_group(&cx, layers.s[i], i == 0);
	progress_done();

	FILE *f = pn_output_open(output);
	for (int i = 0; i < layers.n; i++)
		pn_model_write(f, models[i]);
	pn_output_close(f);
	if (f != stdout)
		pn_output_close(stdout);
	for (int i = 0; i < layers.n; i++)
		pn_model_free(models[i]);
	free(models);
	free(layers.s);
	for (int i = 0; i < par.n; i++) {
		free(par.name[i]);
		free(par.value[i]);
	}
	table_free(t);
	if (v)
		table_free(v);
	return PN_EXIT_OK;
}
