/* design.c - a model's input transform (see design.h). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "design.h"
#include "err.h"
#include "layer.h"
#include "tree.h"
#include "tsv.h"

static void add_col(pn_design *d, const char *name, int cat, int fixed)
{
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->c[i].name, name) == 0)
			return;
	d->c = pn_xrealloc(d->c, (size_t)(d->n + 1) * sizeof *d->c);
	pn_dcol *c = &d->c[d->n++];
	memset(c, 0, sizeof *c);
	c->name = pn_xstrdup(name);
	c->cat = cat;
	c->fixed = fixed;
}

void pn_design_free(pn_design *d)
{
	for (int i = 0; i < d->n; i++) {
		free(d->c[i].name);
		pn_strset_free(&d->c[i].val);
	}
	free(d->c);
	free(d->num_of);
	free(d->num);
	memset(d, 0, sizeof *d);
}

static int is_config(const char *name)
{
	for (int i = 0; pn_feature_config[i]; i++)
		if (strcmp(pn_feature_config[i], name) == 0)
			return 1;
	return 0;
}

/* Column name of t, or -1 with "missing column"; a feature column of
 * rows that have none says where they come from. */
static int need_col(const pn_table *t, const char *name, pn_fault *f)
{
	int c = pn_table_col(t, name, f);
	if (c >= 0)
		return c;
	int feature = 0;
	for (int k = 0; k < PN_F_N; k++) {
		if (pn_table_find(t, pn_feature_names[k]) >= 0)
			return -1;
		feature |= strcmp(pn_feature_names[k], name) == 0;
	}
	if (feature)
		pn_fault_set(f, PN_EXIT_DATA, t->path, 1, "missing column "
			     "'%s': the rows were never featurized (run "
			     "pn-featurize on them first)", name);
	return -1;
}

/* Every value of column c in rows is NA or empty. */
static int all_na(const pn_table *t, const size_t *rows, size_t n, int c)
{
	for (size_t i = 0; i < n; i++)
		if (!pn_cell_na(t, rows[i], c))
			return 0;
	return 1;
}

static void add_feature(void *d, int k)
{
	add_col(d, pn_feature_names[k], 0, 1);
}

int pn_design_set(pn_design *d, const pn_table *t, const size_t *rows,
		  size_t n, const pn_feature_set *s, pn_fault *f)
{
	int lcol = pn_table_col(t, "layer", f);
	if (lcol < 0)
		return -1;
	/* dimension columns of every layer type present, in type order */
	int seen[PN_NLAYERS] = {0};
	for (size_t i = 0; i < n; i++) {
		const char *l = pn_cell(t, rows[i], lcol);
		int ty = pn_layer_type_of(l);
		if (ty < 0)
			return pn_fault_set(f, PN_EXIT_DATA, t->path,
					    t->line[rows[i]], "unknown layer "
					    "type '%.40s' (feature set '%s' "
					    "needs its dimension columns; name "
					    "the features with --features)", l,
					    s->name);
		seen[ty] = 1;
	}
	for (int ty = 0; ty < PN_NLAYERS; ty++)
		if (seen[ty])
			for (const char *const *c = pn_layer_dims(ty); *c;
			     c++) {
				if (pn_table_col(t, *c, f) < 0)
					return -1;
				add_col(d, *c, is_config(*c), 1);
			}
	for (int i = 0; pn_feature_config[i]; i++) {
		int c = pn_table_find(t, pn_feature_config[i]);
		if (c >= 0 && !all_na(t, rows, n, c))
			add_col(d, pn_feature_config[i], 1, 1);
	}
	pn_feature_set_each(s, add_feature, d);
	for (int i = 0; i < d->n; i++)
		if (need_col(t, d->c[i].name, f) < 0)
			return -1;
	return 0;
}

int pn_design_list(pn_design *d, const pn_table *t, const char *list,
		   pn_fault *f)
{
	char *copy = pn_xstrdup(list), *save = NULL;
	int rc = 0;
	for (char *c = strtok_r(copy, ",", &save); c && !rc;
	     c = strtok_r(NULL, ",", &save)) {
		for (int i = 0; i < d->n && !rc; i++)
			if (strcmp(d->c[i].name, c) == 0)
				rc = pn_fault_set(f, PN_EXIT_USAGE, NULL, 0,
						  "column '%s' named twice in "
						  "--features", c);
		if (!rc && need_col(t, c, f) < 0)
			rc = -1;
		if (!rc)
			add_col(d, c, 0, 0);
	}
	free(copy);
	return rc;
}

/* What the values of a list column are: kind -1 (all NA), 0 (numbers) or
 * 1 (something else), set by its first value (row first); bad is the first
 * row whose value is of the other kind, or SIZE_MAX. */
typedef struct {
	int c, kind;
	size_t first, bad;
} kind_scan;

/* The kinds of the columns ks[0..m) over rows[0..n), in one pass row by
 * row (column by column, each cell is a cache miss), their numbers into num
 * (n rows of m; NAN: NA or not a number). */
static void scan_rows(const pn_table *t, const size_t *rows, size_t n,
		      kind_scan *ks, int m, double *num)
{
	for (int k = 0; k < m; k++) {
		ks[k].kind = -1;
		ks[k].first = 0;
		ks[k].bad = SIZE_MAX;
	}
	for (size_t i = 0; i < n; i++) {
		size_t r = rows[i];
		for (int k = 0; k < m; k++) {
			kind_scan *s = &ks[k];
			double v = NAN;
			if (pn_cell_na(t, r, s->c)) {
				num[i * (size_t)m + (size_t)k] = NAN;
				continue;
			}
			int cat = pn_parse_num(pn_cell(t, r, s->c),
					       pn_cell_len(t, r, s->c), &v) < 0;
			num[i * (size_t)m + (size_t)k] = cat ? NAN : v;
			if (s->bad != SIZE_MAX)
				continue;
			if (s->kind < 0) {
				s->kind = cat;
				s->first = r;
			} else if (cat != s->kind) {
				s->bad = r;
			}
		}
	}
}

/* A share of scan_kinds' rows, scanned on a thread of its own. */
typedef struct {
	const pn_table *t;
	const size_t *rows;
	size_t n;
	kind_scan *ks;
	int m;
	double *num;
	pthread_t th;
	int started;
} scan_share;

static void *scan_share_run(void *v)
{
	scan_share *s = v;
	scan_rows(s->t, s->rows, s->n, s->ks, s->m, s->num);
	return NULL;
}

/* Cells a thread of scan_kinds gets at least: parsing a number takes
 * some 20 ns, starting a thread some 50 us. */
#define SCAN_SHARE_CELLS 100000

/* The kinds of a share's columns b merged into those of the rows before
 * it, a: the result of one pass over both. */
static void merge_kinds(kind_scan *a, const kind_scan *b, int m)
{
	for (int k = 0; k < m; k++, a++, b++) {
		if (a->bad != SIZE_MAX || b->kind < 0)
			continue;
		if (a->kind < 0)
			*a = *b;
		else if (b->kind != a->kind)
			a->bad = b->first;
		else
			a->bad = b->bad;
	}
}

/* scan_rows over all n rows, in shares on up to pn_default_threads()
 * threads for a large table. */
static void scan_kinds(const pn_table *t, const size_t *rows, size_t n,
		       kind_scan *ks, int m, double *num)
{
	size_t cells = n * (size_t)m;
	long nt = pn_default_threads();
	if ((size_t)nt > cells / SCAN_SHARE_CELLS)
		nt = (long)(cells / SCAN_SHARE_CELLS);
	if (nt < 2) {
		scan_rows(t, rows, n, ks, m, num);
		return;
	}
	scan_share *sh = pn_xcalloc((size_t)nt, sizeof *sh);
	for (long j = 0; j < nt; j++) {
		size_t lo = n * (size_t)j / (size_t)nt;
		size_t hi = n * (size_t)(j + 1) / (size_t)nt;
		kind_scan *own = ks;
		if (j) {
			own = pn_xmalloc((size_t)m * sizeof *own);
			memcpy(own, ks, (size_t)m * sizeof *own);
		}
		sh[j] = (scan_share){ t, rows + lo, hi - lo, own, m,
				      num + lo * (size_t)m, 0, 0 };
		/* a share whose thread cannot start is scanned here below */
		sh[j].started = j && pthread_create(&sh[j].th, NULL,
						    scan_share_run,
						    &sh[j]) == 0;
	}
	scan_rows(t, sh[0].rows, sh[0].n, ks, m, sh[0].num);
	for (long j = 1; j < nt; j++) {
		if (sh[j].started)
			pthread_join(sh[j].th, NULL);
		else
			scan_share_run(&sh[j]);
		merge_kinds(ks, sh[j].ks, m);
		free(sh[j].ks);
	}
	free(sh);
}

/* Whether the list column of ks is categorical (see scan_kinds); -1 with
 * the message when its values mix numbers and other values. */
static int kind_of(const pn_table *t, const kind_scan *ks, pn_fault *f)
{
	if (ks->bad == SIZE_MAX)
		return ks->kind > 0;
	int c = ks->c, cat = !ks->kind;
	size_t r = ks->bad, first = ks->first;
	return pn_fault_set(f, PN_EXIT_DATA, t->path, t->line[r], "column "
			    "'%s': '%.40s' is %sa number, but '%.40s' on line "
			    "%ld is %s (a column is either numeric or "
			    "categorical)", t->names[c], pn_cell(t, r, c),
			    cat ? "not " : "", pn_cell(t, first, c),
			    t->line[first], cat ? "one" : "not");
}

/* Collect the categories of categorical column k. */
static int categories(pn_dcol *dc, const pn_table *t, const size_t *rows,
		      size_t n, int c, pn_fault *f)
{
	if (strchr(dc->name, '=') || strpbrk(dc->name, " \t"))
		return pn_fault_set(f, PN_EXIT_DATA, t->path, 1, "categorical "
				    "column '%s': a name with '=' or white "
				    "space cannot name a feature", dc->name);
	for (size_t i = 0; i < n; i++) {
		size_t r = rows[i];
		if (pn_cell_na(t, r, c))
			continue;
		if (strpbrk(pn_cell(t, r, c), " \t"))
			return pn_fault_set(f, PN_EXIT_DATA, t->path,
					    t->line[r], "column '%s': value "
					    "'%.40s' has white space and cannot "
					    "name a feature", dc->name,
					    pn_cell(t, r, c));
		pn_strset_add(&dc->val, pn_cell(t, r, c));
	}
	pn_strset_sort(&dc->val);
	return 0;
}

int pn_design_classify(pn_design *d, const pn_table *t, const size_t *rows,
		       size_t n, pn_fault *f)
{
	kind_scan *ks = pn_xcalloc((size_t)d->n + 1, sizeof *ks);
	int m = 0, rc = 0;
	free(d->num_of);
	free(d->num);
	d->num_of = pn_xmalloc(((size_t)d->n + 1) * sizeof *d->num_of);
	for (int k = 0; k < d->n; k++) {
		int c = pn_table_find(t, d->c[k].name);
		d->num_of[k] = -1;
		if (!d->c[k].fixed && c >= 0) {
			d->num_of[k] = m;
			ks[m++].c = c;
		}
	}
	d->num = pn_xmalloc_bulk((n * (size_t)m + 1) * sizeof *d->num);
	d->num_t = t;
	d->num_rows = rows;
	d->num_n = n;
	d->num_cols = m;
	scan_kinds(t, rows, n, ks, m, d->num);
	d->p = 0;
	m = 0;
	for (int k = 0; k < d->n && !rc; k++) {
		pn_dcol *dc = &d->c[k];
		int c = pn_table_col(t, dc->name, f);
		if (c < 0)
			rc = -1;
		else if (!dc->fixed && (dc->cat = kind_of(t, &ks[m++], f)) < 0)
			rc = -1;
		else if (dc->cat && categories(dc, t, rows, n, c, f) < 0)
			rc = -1;
		else
			d->p += dc->cat ? (size_t)dc->val.n : 1;
	}
	free(ks);
	return rc;
}

int pn_design_encode(const pn_design *d, const pn_table *t,
		     const size_t *rows, size_t n, double *x, pn_fault *f)
{
	int *col = pn_xmalloc((size_t)d->n * sizeof *col);
	int rc = 0;
	for (int k = 0; k < d->n && !rc; k++)
		if ((col[k] = pn_table_col(t, d->c[k].name, f)) < 0)
			rc = -1;
	int cached = d->num && t == d->num_t && rows == d->num_rows &&
		     n == d->num_n;
	size_t m = (size_t)d->num_cols;
	for (size_t i = 0; i < n && !rc; i++) {
		size_t r = rows[i], j = 0;
		double *xr = x + i * d->p;
		for (int k = 0; k < d->n && !rc; k++) {
			const pn_dcol *dc = &d->c[k];
			if (!dc->cat && cached && d->num_of[k] >= 0 &&
			    !isnan(d->num[i * m + (size_t)d->num_of[k]])) {
				xr[j++] = d->num[i * m + (size_t)d->num_of[k]];
				continue;
			}
			if (!dc->cat) {
				rc = pn_cell_num(t, r, col[k], &xr[j++], f);
				continue;
			}
			const char *v = pn_cell(t, r, col[k]);
			for (int q = 0; q < dc->val.n; q++)
				xr[j++] = strcmp(v, dc->val.s[q]) == 0;
		}
	}
	free(col);
	return rc;
}

double *pn_design_take(pn_design *d, const pn_table *t, const size_t *rows,
		       size_t n)
{
	if (!d->num || t != d->num_t || rows != d->num_rows || n != d->num_n ||
	    (size_t)d->num_cols != d->p || (size_t)d->n != d->p)
		return NULL;
	for (int k = 0; k < d->n; k++)
		if (d->c[k].cat || d->num_of[k] != k)
			return NULL;
	size_t m = n * d->p;
	for (size_t i = 0; i < m; i++)
		if (isnan(d->num[i]))
			return NULL;
	double *x = d->num;
	d->num = NULL;
	return x;
}

/* ---- the target --------------------------------------------------------- */

/* The NA target of row r: a failed row (status other than "ok") or a
 * plain NA. */
static int target_na(const pn_table *t, size_t r, int col, pn_fault *f)
{
	int sc = pn_table_find(t, "status");
	const char *na = pn_cell_len(t, r, col) ? "NA" : "empty";
	if (sc >= 0 && strcmp(pn_cell(t, r, sc), "ok") != 0)
		return pn_fault_set(f, PN_EXIT_DATA, t->path, t->line[r],
				    "column '%s': value is %s (the row's "
				    "status is '%.40s'; --skip-failed skips "
				    "failed rows)", t->names[col], na,
				    pn_cell(t, r, sc));
	return pn_fault_set(f, PN_EXIT_DATA, t->path, t->line[r],
			    "column '%s': value is %s", t->names[col], na);
}

int pn_design_target(const pn_table *t, const size_t *rows, size_t n,
		     int col, int log_target, int base, double *y, pn_fault *f)
{
	for (size_t i = 0; i < n; i++) {
		size_t r = rows[i];
		double v;
		if (pn_cell_na(t, r, col))
			return target_na(t, r, col, f);
		if (pn_cell_num(t, r, col, &v, f) < 0)
			return -1;
		if (!(v > 0))
			return pn_fault_set(f, PN_EXIT_DATA, t->path, t->line[r],
					    "column '%s': '%.40s' is not "
					    "positive (%s)", t->names[col],
					    pn_cell(t, r, col), base >= 0 ?
					    "--relative" : "a target is a time");
		if (log_target || base >= 0)
			v = log(v);
		else if (v > PN_TARGET_MAX)
			return pn_fault_set(f, PN_EXIT_DATA, t->path, t->line[r],
					    "column '%s': '%.40s' is above "
					    "1e30, the largest target the "
					    "families fit (fit its log: "
					    "--log-target)", t->names[col],
					    pn_cell(t, r, col));
		if (base >= 0) {
			double b;
			if (pn_cell_num(t, r, base, &b, f) < 0)
				return -1;
			if (!(b > 0))
				return pn_fault_set(f, PN_EXIT_DATA, t->path,
						    t->line[r], "column '%s': "
						    "'%s' is not positive (the "
						    "base of --relative)",
						    t->names[base],
						    pn_cell(t, r, base));
			v -= log(b);
		}
		y[i] = v;
	}
	return 0;
}

/* ---- log floors and scaling ---------------------------------------------- */

void pn_design_log_floors(const pn_design *d, const double *x, size_t n,
			  double *floor)
{
	size_t p = d->p, j = 0;
	for (int k = 0; k < d->n; k++) {
		const pn_dcol *dc = &d->c[k];
		for (int q = 0; q < (dc->cat ? dc->val.n : 1); q++, j++) {
			double lo = INFINITY, pos = INFINITY;
			for (size_t i = 0; i < n; i++) {
				double v = x[i * p + j];
				if (v < lo)
					lo = v;
				if (v > 0 && v < pos)
					pos = v;
			}
			floor[j] = dc->cat || !(lo >= 0) ? 0 :
				   isfinite(pos) ? pos : 1;
		}
	}
}

void pn_design_log_apply(double *x, size_t n, size_t p, const double *floor)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < p; j++)
			if (floor[j] > 0) {
				double v = x[i * p + j];
				x[i * p + j] = log(v > floor[j] ? v : floor[j]);
			}
}

void pn_design_features(const pn_design *d, const double *floor,
			pn_feature *feat)
{
	size_t j = 0;
	for (int k = 0; k < d->n; k++) {
		const pn_dcol *dc = &d->c[k];
		if (!dc->cat) {
			feat[j].name = pn_xstrdup(dc->name);
			feat[j++].cat = 0;
			continue;
		}
		for (int q = 0; q < dc->val.n; q++) {
			size_t len = strlen(dc->name) + strlen(dc->val.s[q]) + 2;
			feat[j].name = pn_xmalloc(len);
			snprintf(feat[j].name, len, "%s=%s", dc->name,
				 dc->val.s[q]);
			feat[j++].cat = 1;
		}
	}
	for (j = 0; j < d->p; j++) {
		feat[j].mean = 0;
		feat[j].sd = 1;
		if (floor && floor[j] > 0) {
			feat[j].log = 1;
			feat[j].floor = floor[j];
		}
	}
}

void pn_design_scaling(const double *x, size_t n, size_t p, int want,
		       pn_feature *feat)
{
	for (size_t j = 0; j < p; j++) {
		feat[j].mean = 0;
		feat[j].sd = 1;
		if (!want || feat[j].cat)
			continue;
		long double s = 0;
		for (size_t i = 0; i < n; i++)
			s += x[i * p + j];
		double mean = (double)(s / (long double)n);
		long double ss = 0;
		for (size_t i = 0; i < n; i++) {
			double dv = x[i * p + j] - mean;
			ss += (long double)dv * dv;
		}
		double sd = sqrt((double)(ss / (long double)n));
		feat[j].mean = mean;
		feat[j].sd = sd > 0 && isfinite(sd) ? sd : 1;
	}
}

double *pn_design_scale(const double *x, size_t n, size_t p,
			const pn_feature *feat)
{
	double *s = pn_xmalloc_bulk(n * p * sizeof *s);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < p; j++)
			s[i * p + j] = (x[i * p + j] - feat[j].mean) /
				       feat[j].sd;
	return s;
}
