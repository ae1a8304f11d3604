/* fam_gbdt.c - gradient-boosted regression trees (family "gbdt").
 *
 * Friedman's gradient boosting with squared loss: start from the mean
 * target, then each round fits a tree (tree.h, histogram splits) to the
 * residuals of the rows of a subsample and adds lr times its leaf means.
 * With a validation set, the error on it is tracked after every round and
 * the model keeps the rounds up to the best one; training stops after
 * `patience` rounds without improvement.
 *
 * Parameters (--param name=value):
 *   rounds=200     boosting rounds (trees)
 *   depth=6        maximum tree depth (0: unlimited)
 *   lr=0.1         learning rate (shrinkage)
 *   subsample=1    fraction of rows drawn (without replacement) per round
 *   min_leaf=1     minimum rows in a leaf
 *   lambda=0       L2 penalty on leaf values (XGBoost's lambda)
 *   mtry=1         fraction of the features tried at each split
 *   bins=256       bins per feature, 2 to 256
 *   patience=20    with --val: stop after this many rounds without a
 *                  better validation error (0: run every round; the best
 *                  round is kept either way)
 *   threads=N      threads for binning and, at each node, its
 *                  histogram (a range of features each), its split
 *                  search (the same) and the partition of its rows (a
 *                  range of rows each) (default: the online CPUs); the
 *                  model is the same for any count
 *
 * Body: "base MEAN", "trees N", then N trees in the text form of tree.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "metrics.h"
#include "model.h"
#include "tree.h"

typedef struct {
	double base;
	size_t nt;
	pn_tree *t;
	pn_forest *fast;
} boost;

static void boost_free(void *m)
{
	boost *g = m;
	if (!g)
		return;
	pn_forest_free(g->fast);
	for (size_t i = 0; i < g->nt; i++)
		pn_tree_free(&g->t[i]);
	free(g->t);
	free(g);
}

static void *gbdt_fit(const pn_data *d, const pn_data *val, pn_params *par,
		      uint64_t seed, void (*progress)(double, double),
		      char *err)
{
	long rounds = pn_params_int(par, "rounds", 200);
	long depth = pn_params_int(par, "depth", 6);
	double lr = pn_params_num(par, "lr", 0.1);
	double subsample = pn_params_num(par, "subsample", 1.0);
	long min_leaf = pn_params_int(par, "min_leaf", 1);
	double lambda = pn_params_num(par, "lambda", 0);
	double mtry = pn_params_num(par, "mtry", 1.0);
	long bins = pn_params_int(par, "bins", 256);
	long patience = pn_params_int(par, "patience", 20);
	long threads = pn_params_int(par, "threads", pn_default_threads());
	if (rounds < 1 || rounds > 1000000)
		pn_usage_error("invalid --param rounds=%ld: want 1 to 1000000",
			       rounds);
	if (depth < 0 || depth > 10000)
		pn_usage_error("invalid --param depth=%ld: want 0 (unlimited) "
			       "to 10000", depth);
	if (!(lr > 0 && lr <= 1))
		pn_usage_error("invalid --param lr=%g: want more than 0 and at "
			       "most 1", lr);
	if (!(subsample > 0 && subsample <= 1))
		pn_usage_error("invalid --param subsample=%g: want more than 0 "
			       "and at most 1", subsample);
	if (min_leaf < 1 || min_leaf > 1000000000)
		pn_usage_error("invalid --param min_leaf=%ld: want at least 1",
			       min_leaf);
	if (!(lambda >= 0))
		pn_usage_error("invalid --param lambda=%g: want at least 0",
			       lambda);
	if (!(mtry > 0 && mtry <= 1))
		pn_usage_error("invalid --param mtry=%g: want more than 0 and "
			       "at most 1", mtry);
	if (bins < 2 || bins > 256)
		pn_usage_error("invalid --param bins=%ld: want 2 to 256", bins);
	if (patience < 0)
		pn_usage_error("invalid --param patience=%ld: want at least 0",
			       patience);
	if (threads < 1 || threads > 256)
		pn_usage_error("invalid --param threads=%ld: want 1 to 256",
			       threads);
	size_t n = d->n;
	if (n < 1 || d->p < 1 || n > UINT32_MAX) {
		snprintf(err, 256, "gbdt: need at least one row and feature");
		return NULL;
	}
	pn_bins *b = pn_bins_new(d, (int)bins, (int)threads);
	pn_tree_ws *w = pn_tree_ws_new(b);
	pn_tree_ws_threads(w, (int)threads);
	pn_tree_opts o = {(int)depth, (int)min_leaf, mtry, lambda, lr};
	boost *g = pn_xcalloc(1, sizeof *g);
	g->t = pn_xcalloc((size_t)rounds, sizeof *g->t);
	long double s = 0;
	for (size_t i = 0; i < n; i++)
		s += d->y[i];
	g->base = (double)(s / (long double)n);

	double *f = pn_xmalloc(n * sizeof *f), *res = pn_xmalloc(n * sizeof *res);
	uint32_t *idx = pn_xmalloc(n * sizeof *idx);
	for (size_t i = 0; i < n; i++)
		f[i] = g->base;
	size_t nv = val ? val->n : 0;
	double *fv = nv ? pn_xmalloc(nv * sizeof *fv) : NULL;
	for (size_t i = 0; i < nv; i++)
		fv[i] = g->base;
	double best = nv ? pn_rmse(fv, val->y, nv) : 0;
	size_t best_round = 0;
	size_t take = (size_t)llround(subsample * (double)n);
	if (take < 1)
		take = 1;
	pn_rng r;
	pn_tree_seed(&r, seed, 0);
	for (long k = 0; k < rounds; k++) {
		for (size_t i = 0; i < n; i++)
			res[i] = d->y[i] - f[i];
		size_t m = 0;
		if (take == n) {
			for (size_t i = 0; i < n; i++)
				idx[i] = (uint32_t)i;
			m = n;
		} else {
			/* Knuth's selection sampling: take rows, in order */
			for (size_t i = 0; i < n && m < take; i++)
				if (pn_tree_below(&r, n - i) < take - m)
					idx[m++] = (uint32_t)i;
		}
		pn_tree_grow(w, res, NULL, idx, m, &o, &r, &g->t[k]);
		g->nt = (size_t)k + 1;
		if (m == n)     /* every row is in a leaf of the grow */
			pn_tree_ws_add(w, idx, f);
		else
			pn_trees_add(&g->t[k], 1, d->x, n, d->p, f);
		if (nv) {
			pn_trees_add(&g->t[k], 1, val->x, nv, val->p, fv);
			double e = pn_rmse(fv, val->y, nv);
			if (e < best) {
				best = e;
				best_round = g->nt;
			} else if (patience > 0 &&
				   g->nt - best_round >= (size_t)patience) {
				break;
			}
		}
		if (progress)
			progress((double)(k + 1), (double)rounds);
	}
	if (nv) {
		/* keep the rounds up to the best (the base alone when no
		 * round helped: a model of zero trees) */
		for (size_t i = best_round; i < g->nt; i++)
			pn_tree_free(&g->t[i]);
		g->nt = best_round;
	}
	if (progress)
		progress((double)rounds, (double)rounds);
	g->fast = pn_forest_new(g->t, g->nt, d->p);
	free(fv);
	free(idx);
	free(res);
	free(f);
	pn_tree_ws_free(w);
	pn_bins_free(b);
	return g;
}

static void gbdt_predict(const void *m, const double *x, size_t n, size_t p,
			 double *out)
{
	const boost *g = m;
	for (size_t i = 0; i < n; i++)
		out[i] = g->base;
	pn_forest_add(g->fast, x, n, p, out);
}

static void gbdt_save(const void *m, FILE *out)
{
	const boost *g = m;
	pn_mwrite_nums(out, "base", &g->base, 1);
	fprintf(out, "trees %zu\n", g->nt);
	for (size_t i = 0; i < g->nt; i++)
		pn_tree_save(&g->t[i], out);
}

static void *gbdt_load(pn_mreader *r, size_t p)
{
	boost *g = pn_xcalloc(1, sizeof *g);
	pn_mread_nums(r, "base", &g->base, 1);
	double v;
	pn_mread_nums(r, "trees", &v, 1);
	if (v < 0 || v > 1000000 || v != (double)(long)v)
		pn_mread_die(r, "gbdt: tree count must be 0 to 1000000");
	g->t = pn_trees_load(r, p, (size_t)v);
	g->nt = (size_t)v;
	g->fast = pn_forest_new(g->t, g->nt, p);
	return g;
}

const pn_family pn_family_gbdt = {
	.name = "gbdt",
	.about = "gradient-boosted regression trees, squared loss",
	.wants_scaling = 0,
	.fit = gbdt_fit,
	.predict = gbdt_predict,
	.save = gbdt_save,
	.load = gbdt_load,
	.free = boost_free,
};
