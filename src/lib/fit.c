/* fit.c - fitting one group of rows: design, family, --auto, --logo,
 * provenance (fit.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "design.h"
#include "domain.h"
#include "err.h"
#include "fit.h"
#include "metrics.h"
#include "rng.h"
#include "modelset.h"
#include "tsv.h"

/* The rows of one group (a layer type, or "*" for all), as the families see
 * them. */
typedef struct {
	const char *layer;
	size_t n, nv, *rows, *vrows;
	pn_design d;
	double *x, *y, *vx, *vy, *floor;
	double *lo, *hi;        /* each feature's range, before the log */
	double base_lo;         /* --relative: the base column's smallest */
	double *basev;          /* --relative: each row's base, n of them */
	pn_model *best;
	double chosen;          /* best's validation RMSE */
	char **autoline;
	int nauto;
} group;

struct pn_fit {
	pn_fit_spec s;
	const pn_table *t, *val;
	int ever_used[64];      /* per param, over every fit */
	int fitted;             /* groups fitted so far */
	group g;
	pn_model *fitting;      /* the model a family is fitting */
	double *scaled[2];      /* its scaled inputs */
	struct {                /* --logo's folds */
		pn_strset dev;
		double *x, *y, *vx, *vy, *xs, *pred;
	} lo;
	pn_fault *fault;
	pn_fit_times times;     /* the last group's */
};

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
	free(g->lo);
	free(g->hi);
	free(g->basev);
	pn_model_free(g->best);
	for (int k = 0; k < g->nauto; k++)
		free(g->autoline[k]);
	free(g->autoline);
	memset(g, 0, sizeof *g);
}

static void logo_free(pn_fit *r)
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

/* --skip-failed: drop the rows of t whose status is not "ok" and count them
 * by status on stderr ("skipped 3 rows with status oom (2), error (1)"). */
int pn_fit_skip_failed(pn_table *t, const char *what, pn_fault *f)
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
		return pn_fault_set(f, PN_EXIT_DATA, t->path, 0, "no "
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
static pn_model *fit_family(pn_fit *r, const pn_family *fam, const double *x,
			    const double *y, size_t n, const double *vx,
			    const double *vy, size_t nv, double *val_rmse,
			    char *err)
{
	group *g = &r->g;
	size_t p = g->d.p;
	pn_model *m = r->fitting = pn_xcalloc(1, sizeof *m);
	m->family = fam;
	m->layer = pn_xstrdup(g->layer);
	m->target = pn_xstrdup(r->s.target);
	m->log = r->s.log || r->s.base;
	m->base = r->s.base ? pn_xstrdup(r->s.base) : NULL;
	m->p = p;
	m->feat = pn_xcalloc(p, sizeof *m->feat);
	pn_design_features(&g->d, g->floor, m->feat);
	pn_design_scaling(x, n, p, fam->wants_scaling, m->feat);
	/* a family without scaling sees x itself: (x - 0) / 1 is x, bit for
	 * bit, and a copy of 100,000 x 20 rows costs its page faults */
	int copy = fam->wants_scaling;
	double *xs = !copy ? (double *)x :
		     (r->scaled[0] = pn_design_scale(x, n, p, m->feat));
	double *vxs = !nv ? NULL : !copy ? (double *)vx :
		      (r->scaled[1] = pn_design_scale(vx, nv, p, m->feat));
	pn_data d = {n, p, xs, (double *)y};
	pn_data v = {nv, p, vxs, (double *)vy};
	for (int i = 0; i < r->s.par->n; i++)
		r->s.par->used[i] = 0;
	if (r->s.start)
		r->s.start(g->layer, fam->name);
	err[0] = '\0';
	double t0 = pn_now_s();
	m->state = fam->fit(&d, nv ? &v : NULL, r->s.par, r->s.seed,
			    r->s.progress, err);
	r->times.fit += pn_now_s() - t0;
	pn_params *par = r->s.par;
	for (int i = 0; i < par->n; i++)
		if (par->used[i]) {
			r->ever_used[i] = 1;
			pn_model_add_param(m, par->name[i], par->value[i]);
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
	free(r->scaled[0]);
	free(r->scaled[1]);
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
static int logo_devices(pn_fit *r, int dc)
{
	const pn_table *t = r->t;
	group *g = &r->g;
	for (size_t i = 0; i < g->n; i++) {
		size_t row = g->rows[i];
		if (pn_cell_na(t, row, dc))
			return pn_fault_set(r->fault, PN_EXIT_DATA, t->path,
					    t->line[row], "column 'device': "
					    "value is %s (--logo)",
					    pn_cell_len(t, row, dc) ? "NA" :
					    "empty");
		if (strpbrk(pn_cell(t, row, dc), " "))
			return pn_fault_set(r->fault, PN_EXIT_DATA, t->path,
					    t->line[row], "column 'device': "
					    "'%.40s' has a space and cannot be "
					    "recorded in a model (--logo)",
					    pn_cell(t, row, dc));
		pn_strset_add(&r->lo.dev, pn_cell(t, row, dc));
	}
	pn_strset_sort(&r->lo.dev);
	if (r->lo.dev.n < 3)
		return pn_fault_set(r->fault, PN_EXIT_DATA, t->path, 0,
				    "--logo needs rows of at least 3 devices; "
				    "layer '%s' has %d", g->layer,
				    r->lo.dev.n);
	return 0;
}

/* The refit without dev predicts dev's rows (pred, ln(time / base) in the
 * order of rows_of) as pn-eval will: a row whose base is below the
 * smallest of the refit's own rows at that floor (domain.h), which it
 * returns. */
static double floor_refit(pn_fit *r, int dc, const char *dev, double *pred)
{
	const group *g = &r->g;
	double lo = INFINITY;
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(pn_cell(r->t, g->rows[i], dc), dev) != 0 &&
		    g->basev[i] < lo)
			lo = g->basev[i];
	for (size_t i = 0, k = 0; i < g->n; i++) {
		if (strcmp(pn_cell(r->t, g->rows[i], dc), dev) != 0)
			continue;
		if (g->basev[i] < lo)
			pred[k] += log(lo / g->basev[i]);
		k++;
	}
	return lo;
}

/* The mean and population sd of the errors e[0..n), ln(predicted /
 * measured); 0 when either is not finite. */
static int error_stats(const double *e, size_t n, double *mean, double *sd)
{
	long double s = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		s += e[i];
	*mean = (double)(s / (long double)n);
	for (size_t i = 0; i < n; i++) {
		double d = e[i] - *mean;
		ss += (long double)d * d;
	}
	*sd = sqrt((double)(ss / (long double)n));
	return isfinite(*mean) && isfinite(*sd);
}

/* Refit the best family without each device of the group in turn, predict
 * that device's rows and record the error, ln(predicted / measured): the
 * target is fitted on a log scale, so it is the difference. */
static int leave_devices_out(pn_fit *r)
{
	group *g = &r->g;
	size_t p = g->d.p, n = g->n, nv = g->nv;
	int dc = pn_table_col(r->t, "device", r->fault), vdc = -1;
	if (dc < 0 || (nv && (vdc = pn_table_col(r->val, "device",
						 r->fault)) < 0) ||
	    logo_devices(r, dc) < 0)
		return -1;
	r->lo.x = pn_xmalloc_bulk(n * p * sizeof *r->lo.x);
	r->lo.y = pn_xmalloc(n * sizeof *r->lo.y);
	r->lo.pred = pn_xmalloc(n * sizeof *r->lo.pred);
	if (nv) {
		r->lo.vx = pn_xmalloc_bulk(nv * p * sizeof *r->lo.vx);
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
			return pn_fault_set(r->fault, PN_EXIT_DATA, NULL, 0,
					    "layer '%s': --logo fit without "
					    "device '%s': %s", g->layer, dev,
					    err);
		size_t nout = rows_of(r->t, dc, g->rows, n, g->x, g->y, p, dev,
				      0, r->lo.x, r->lo.y);
		r->lo.xs = pn_design_scale(r->lo.x, nout, p, m->feat);
		m->family->predict(m->state, r->lo.xs, nout, p, r->lo.pred);
		free(r->lo.xs);
		r->lo.xs = NULL;
		if (r->s.base && !r->s.no_base_floor) {
			char lo[40];
			pn_fmt_num(lo, floor_refit(r, dc, dev, r->lo.pred));
			pn_model_add_info(m, "base-floor %s", lo);
			pn_domain_parse(m);
		}
		for (size_t i = 0; i < nout; i++)
			r->lo.pred[i] -= r->lo.y[i];
		double mean, sd;
		if (!error_stats(r->lo.pred, nout, &mean, &sd)) {
			pn_model_free(m);
			return pn_fault_set(r->fault, PN_EXIT_DATA, NULL, 0,
					    "layer '%s': --logo: the fit "
					    "without device '%s' predicts its "
					    "rows out of range", g->layer,
					    dev);
		}
		pn_model_add_logo(g->best, dev, nout, mean, sd);
		if (r->s.keep_folds)
			pn_model_add_fold(g->best, m, dev);
		else
			pn_model_free(m);
	}
	logo_free(r);
	return 0;
}

/* K-fold cross-validation of the chosen family on the group's training
 * rows (fit.h, 3b): ln(predicted / measured) of every row by the refit
 * that never saw it, its mean and sd recorded in the chosen model. */
static int cross_validate(pn_fit *r)
{
	group *g = &r->g;
	size_t p = g->d.p, n = g->n, k = (size_t)r->s.cv;
	if (n < 2 * k)
		return pn_fault_set(r->fault, PN_EXIT_DATA, NULL, 0, "layer "
				    "'%s': --cv %zu needs at least %zu rows; "
				    "it has %zu", g->layer, k, 2 * k, n);
	/* fold of each row: a seeded shuffle dealt round-robin, so that the
	 * folds differ in size by one at most */
	size_t *perm = pn_xmalloc(n * sizeof *perm);
	unsigned char *fold = pn_xmalloc(n);
	pn_rng rng;
	pn_rng_seed(&rng, r->s.seed ^ 0x63765f666f6c6473ULL);
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)pn_rng_int(&rng, 0, (long long)i), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		fold[perm[i]] = (unsigned char)(i % k);
	free(perm);
	double *xin = pn_xmalloc_bulk(n * p * sizeof *xin);
	double *yin = pn_xmalloc(n * sizeof *yin);
	double *xout = pn_xmalloc(n * p * sizeof *xout);
	double *yout = pn_xmalloc(n * sizeof *yout);
	double *bout = pn_xmalloc(n * sizeof *bout);
	double *pred = pn_xmalloc(n * sizeof *pred);
	double *err = pn_xmalloc(n * sizeof *err);   /* every row's error */
	size_t nerr = 0;
	int rc = -1;
	for (size_t f = 0; f < k; f++) {
		size_t nin = 0, nout = 0;
		double lo = INFINITY;   /* the refit's base-floor */
		for (size_t i = 0; i < n; i++) {
			int out = fold[i] == f;
			double *xd = out ? xout + nout * p : xin + nin * p;
			memcpy(xd, g->x + i * p, p * sizeof *xd);
			if (out) {
				bout[nout] = g->basev ? g->basev[i] : 0;
				yout[nout++] = g->y[i];
			} else {
				if (g->basev && g->basev[i] < lo)
					lo = g->basev[i];
				yin[nin++] = g->y[i];
			}
		}
		char why[256];
		double vr;
		pn_model *m = fit_family(r, g->best->family, xin, yin, nin,
					 g->vx, g->vy, g->nv, &vr, why);
		if (!m) {
			pn_fault_set(r->fault, PN_EXIT_DATA, NULL, 0, "layer "
				     "'%s': --cv fit without fold %zu of %zu: "
				     "%s", g->layer, f + 1, k, why);
			goto done;
		}
		double *xs = pn_design_scale(xout, nout, p, m->feat);
		m->family->predict(m->state, xs, nout, p, pred);
		free(xs);
		pn_model_free(m);
		for (size_t i = 0; i < nout; i++) {
			if (g->basev && !r->s.no_base_floor && bout[i] < lo)
				pred[i] += log(lo / bout[i]);
			err[nerr++] = pred[i] - yout[i];
		}
	}
	double mean, sd;
	if (!error_stats(err, nerr, &mean, &sd)) {
		pn_fault_set(r->fault, PN_EXIT_DATA, NULL, 0, "layer '%s': "
			     "--cv: the fits predict their folds out of range",
			     g->layer);
		goto done;
	}
	pn_model_set_cv(g->best, (int)k, n, mean, sd);
	rc = 0;
done:
	free(fold);
	free(xin);
	free(yin);
	free(xout);
	free(yout);
	free(bout);
	free(pred);
	free(err);
	return rc;
}

/* The smallest and largest value of each feature of the training rows,
 * as encoded (before the log): the model's domain (domain.h). */
static void ranges(group *g)
{
	size_t p = g->d.p;
	g->lo = pn_xmalloc(p * sizeof *g->lo);
	g->hi = pn_xmalloc(p * sizeof *g->hi);
	for (size_t j = 0; j < p; j++) {
		g->lo[j] = INFINITY;
		g->hi[j] = -INFINITY;
	}
	/* row by row, as x is stored; the values are finite */
	for (size_t i = 0; i < g->n; i++) {
		const double *xr = g->x + i * p;
		for (size_t j = 0; j < p; j++) {
			if (xr[j] < g->lo[j])
				g->lo[j] = xr[j];
			if (xr[j] > g->hi[j])
				g->hi[j] = xr[j];
		}
	}
}

/* The smallest --relative base over the group's rows (checked positive by
 * pn_design_target): the model's base-floor (domain.h). */
static int base_range(const pn_table *t, group *g, int col, pn_fault *f)
{
	g->base_lo = INFINITY;
	g->basev = pn_xmalloc(g->n * sizeof *g->basev);
	for (size_t i = 0; i < g->n; i++) {
		double b;
		if (pn_cell_num(t, g->rows[i], col, &b, f) < 0)
			return -1;
		if (b < g->base_lo)
			g->base_lo = b;
		g->basev[i] = b;
	}
	return 0;
}

/* The group's design, inputs and targets, training and validation. */
static int prepare(pn_fit *r, const char *layer)
{
	const pn_table *t = r->t;
	group *g = &r->g;
	pn_fault *f = r->fault;
	int by_layer = strcmp(layer, "*") != 0;
	int lcol = by_layer ? pn_table_find(t, "layer") : -1;
	g->layer = layer;
	g->rows = group_rows(t, lcol, layer, &g->n);
	if (g->n < 10)
		return strcmp(layer, "*") == 0 ?
		       pn_fault_set(f, PN_EXIT_DATA, t->path, 0, "only %zu "
				    "rows (at least 10 needed)", g->n) :
		       pn_fault_set(f, PN_EXIT_DATA, t->path, 0, "layer '%s' "
				    "has only %zu row%s (at least 10 needed)",
				    layer, g->n, g->n == 1 ? "" : "s");
	if ((r->s.set ? pn_design_set(&g->d, t, g->rows, g->n, r->s.set, f)
		    : pn_design_list(&g->d, t, r->s.features, f)) < 0 ||
	    (r->s.extra && pn_design_list(&g->d, t, r->s.extra, f) < 0))
		return -1;
	for (int k = 0; k < g->d.n; k++)
		if (strcmp(g->d.c[k].name, r->s.target) == 0)
			return pn_fault_set(f, PN_EXIT_USAGE, NULL, 0, "the "
					    "target '%s' is also a feature",
					    r->s.target);
	if (pn_design_classify(&g->d, t, g->rows, g->n, f) < 0)
		return -1;
	size_t p = g->d.p;
	if (p == 0)
		return pn_fault_set(f, PN_EXIT_DATA, t->path, 0, "no features "
				    "for layer '%s'", layer);
	g->y = pn_xmalloc(g->n * sizeof *g->y);
	int tc = pn_table_col(t, r->s.target, f);
	int base = r->s.base ? pn_table_col(t, r->s.base, f) : -1;
	if (!(g->x = pn_design_take(&g->d, t, g->rows, g->n)) &&
	    pn_design_encode(&g->d, t, g->rows, g->n,
			     g->x = pn_xmalloc_bulk(g->n * p * sizeof *g->x), f) < 0)
		return -1;
	if (pn_design_target(t, g->rows, g->n, tc, r->s.log, base, g->y, f) < 0)
		return -1;
	ranges(g);
	if (base >= 0 && base_range(t, g, base, f) < 0)
		return -1;
	if (r->s.logfeat) {
		g->floor = pn_xmalloc(p * sizeof *g->floor);
		pn_design_log_floors(&g->d, g->x, g->n, g->floor);
		pn_design_log_apply(g->x, g->n, p, g->floor);
	}
	if (!r->val)
		return 0;
	const pn_table *v = r->val;
	int vl = by_layer ? pn_table_find(v, "layer") : -1;
	if (by_layer && lcol >= 0 && vl < 0)
		return pn_table_col(v, "layer", f);
	g->vrows = group_rows(v, vl, layer, &g->nv);
	if (!g->nv)
		return r->s.autofit ? pn_fault_set(f, PN_EXIT_DATA, v->path, 0,
						 "no validation rows of layer "
						 "'%s'", layer) : 0;
	g->vx = pn_xmalloc_bulk(g->nv * p * sizeof *g->vx);
	g->vy = pn_xmalloc(g->nv * sizeof *g->vy);
	int vt = -1, vb = -1;
	if (pn_design_encode(&g->d, v, g->vrows, g->nv, g->vx, f) < 0 ||
	    (vt = pn_table_col(v, r->s.target, f)) < 0 ||
	    (r->s.base && (vb = pn_table_col(v, r->s.base, f)) < 0) ||
	    pn_design_target(v, g->vrows, g->nv, vt, r->s.log, vb, g->vy,
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
static int choose(pn_fit *r, int first)
{
	group *g = &r->g;
	const pn_family *const *fams = pn_family_all();
	const pn_family *one[2] = {r->s.family, NULL};
	if (!r->s.autofit)
		fams = one;
	double best_rmse = INFINITY;
	g->chosen = NAN;
	for (int k = 0; fams[k]; k++) {
		char err[256];
		double vr;
		pn_model *m = fit_family(r, fams[k], g->x, g->y, g->n, g->vx,
					 g->vy, g->nv, &vr, err);
		if (!m) {
			if (!r->s.autofit)
				return pn_fault_set(r->fault, PN_EXIT_DATA,
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
	for (int i = 0; first && i < r->s.par->n; i++)
		if (!r->ever_used[i] && r->s.autofit)
			return pn_fault_set(r->fault, PN_EXIT_USAGE, NULL, 0,
					    "--param '%s' is not read by any "
					    "family", r->s.par->name[i]);
		else if (!r->ever_used[i])
			return pn_fault_set(r->fault, PN_EXIT_USAGE, NULL, 0,
					    "--param '%s' is not read by "
					    "family '%s'", r->s.par->name[i],
					    r->s.family->name);
	if (!g->best)
		return pn_fault_set(r->fault, PN_EXIT_DATA, NULL, 0, "layer "
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
static void describe(pn_fit *r)
{
	group *g = &r->g;
	pn_model *m = g->best;
	pn_model_add_info(m, "rows %zu", g->n);
	static const char *const cols[] = {"device", "layer", "precision",
					   "pass", "optimizer", "input_grad"};
	static const char *const keys[] = {"devices", "layers", "precisions",
					   "passes", "optimizers",
					   "input_grads"};
	for (int i = 0; i < 6; i++) {
		char *s = distinct(r->t, g->rows, g->n, cols[i]);
		if (s)
			pn_model_add_info(m, "%s %s", keys[i], *s ? s : "NA");
		free(s);
	}
	for (size_t j = 0; j < m->p; j++) {
		char lo[40], hi[40];
		if (m->feat[j].cat)
			continue;
		pn_fmt_num(lo, g->lo[j]);
		pn_fmt_num(hi, g->hi[j]);
		pn_model_add_info(m, "range %s %s %s", m->feat[j].name, lo, hi);
	}
	if (m->base && !r->s.no_base_floor) {
		char lo[40];
		pn_fmt_num(lo, g->base_lo);
		pn_model_add_info(m, "base-floor %s", lo);
	}
	pn_model_add_info(m, "features %s", r->s.features);
	pn_model_add_info(m, "seed %llu", (unsigned long long)r->s.seed);
	if (g->nv) {
		char *v = fmt_num(g->chosen);
		pn_model_add_info(m, "val rows %zu rmse %s%s", g->nv, v,
				  r->s.base ? " (log ratio scale)" :
				  r->s.log ? " (log scale)" : "");
		free(v);
	}
	for (int k = 0; r->s.autofit && k < g->nauto; k++)
		pn_model_add_info(m, "%s", g->autoline[k]);
	pn_model_add_info(m, "created-by pn-fit %s", PN_VERSION);
}

pn_fit *pn_fit_new(const pn_fit_spec *s, const pn_table *t,
		   const pn_table *val)
{
	pn_fit *r = pn_xcalloc(1, sizeof *r);
	r->s = *s;
	r->t = t;
	r->val = val;
	return r;
}

void pn_fit_free(pn_fit *r)
{
	if (!r)
		return;
	group_free(&r->g);
	pn_model_free(r->fitting);
	free(r->scaled[0]);
	free(r->scaled[1]);
	logo_free(r);
	free(r);
}

pn_model *pn_fit_group(pn_fit *r, const char *layer, pn_fault *f)
{
	pn_fit_times *t = &r->times;
	double t0 = pn_now_s();
	*t = (pn_fit_times){0};
	r->fault = f;
	if (prepare(r, layer) < 0)
		return NULL;
	t->prepare = pn_now_s() - t0;
	t->rows = r->g.n;
	t->features = r->g.d.p;
	if (choose(r, r->fitted++ == 0) < 0 ||
	    (r->s.cv && cross_validate(r) < 0) ||
	    (r->s.logo && leave_devices_out(r) < 0))
		return NULL;
	describe(r);
	pn_domain_parse(r->g.best);
	pn_model *m = r->g.best;
	r->g.best = NULL;
	group_free(&r->g);
	t->other = pn_now_s() - t0 - t->prepare - t->fit;
	return m;
}

void pn_fit_group_times(const pn_fit *r, pn_fit_times *t)
{
	*t = r->times;
}

int pn_fit_layers(const pn_table *t, const pn_table *val, int by_layer,
		  pn_strset *layers, pn_fault *f)
{
	int lcol = by_layer ? pn_table_find(t, "layer") : -1;
	if (lcol < 0) {
		pn_strset_add(layers, "*");
		return 0;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		const char *l = pn_cell(t, i, lcol);
		if (pn_cell_na(t, i, lcol))
			return pn_fault_set(f, PN_EXIT_DATA, t->path,
					    t->line[i], "column 'layer': value "
					    "is %s", *l ? "NA" : "empty");
		if (strpbrk(l, " \t") || strcmp(l, "*") == 0)
			return pn_fault_set(f, PN_EXIT_DATA, t->path,
					    t->line[i], "column 'layer': "
					    "'%.40s' cannot name a model", l);
		pn_strset_add(layers, l);
	}
	pn_strset_sort(layers);
	int vl = val ? pn_table_find(val, "layer") : -1;
	for (size_t i = 0; vl >= 0 && i < val->nrows; i++) {
		const char *l = pn_cell(val, i, vl);
		int k = 0;
		while (k < layers->n && strcmp(layers->s[k], l) != 0)
			k++;
		if (k == layers->n)
			return pn_fault_set(f, PN_EXIT_DATA, val->path,
					    val->line[i], "column 'layer': no "
					    "training rows of layer type "
					    "'%.40s' (validation rows are of "
					    "the types fitted)", l);
	}
	return 0;
}
