/* fam_rf.c - random forest of CART regression trees (family "rf").
 *
 * Breiman's forest as scikit-learn's RandomForestRegressor builds it: each
 * tree grows on a bootstrap sample of the rows (n draws with replacement)
 * to full depth (down to min_leaf rows), trying a fraction of the features
 * at each split, and the forest predicts the mean of its trees.  Splits are
 * found on binned features (tree.h: at most `bins` bins per feature, exact
 * for features with fewer distinct values).  Trees grow in parallel; tree t draws only from
 * the random stream (seed, t), so a seed gives the same forest whatever the
 * number of threads.
 *
 * Parameters (--param name=value):
 *   trees=20       trees in the forest
 *   depth=0        maximum depth (0: unlimited)
 *   min_leaf=3     minimum rows in a leaf (a row drawn twice counts twice)
 * The defaults keep a model a user can keep: scikit-learn's (100 trees,
 * min_leaf 1) wrote 200 MB for 70,000 NeuSight bmm rows; 20 trees of
 * min_leaf 3 write 17 MB, with a validation MAPE 1-7% (relative) higher on
 * NeuSight's op types, the best of the settings measured under 20 MB
 * (fewer trees lose less than larger leaves, far less than a depth limit
 * or smaller bootstrap samples; measured 2026-11-23).
 *   mtry=1         fraction of the features tried at each split (scikit-
 *                  learn's max_features; 1: all of them)
 *   bootstrap=1    0: every tree sees every row once
 *   bins=256       bins per feature, 2 to 256
 *   threads=N      threads (default: the number of online CPUs)
 *
 * Body: "trees N", then N trees in the text form of tree.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "model.h"
#include "tree.h"

typedef struct {
	size_t nt, p;
	pn_tree *t;
	pn_forest *fast;
} forest;

static void forest_free(void *m)
{
	forest *f = m;
	if (!f)
		return;
	pn_forest_free(f->fast);
	for (size_t i = 0; i < f->nt; i++)
		pn_tree_free(&f->t[i]);
	free(f->t);
	free(f);
}

typedef struct {
	const pn_data *d;
	const pn_bins *b;
	pn_tree_opts o;
	int bootstrap;
	uint64_t seed;
	forest *f;
	size_t next, done;
	pthread_mutex_t mu;
	void (*progress)(double, double);
} job;

static void *worker(void *arg)
{
	job *j = arg;
	size_t n = j->d->n;
	pn_tree_ws *w = pn_tree_ws_new(j->b);
	uint32_t *idx = pn_xmalloc(n * sizeof *idx);
	double *cnt = j->bootstrap ? pn_xmalloc(n * sizeof *cnt) : NULL;
	for (;;) {
		pthread_mutex_lock(&j->mu);
		size_t t = j->next++;
		pthread_mutex_unlock(&j->mu);
		if (t >= j->f->nt)
			break;
		pn_rng r;
		pn_tree_seed(&r, j->seed, t);
		size_t m = 0;
		if (j->bootstrap) {
			/* n draws with replacement: each row drawn k times
			 * weighs k */
			memset(cnt, 0, n * sizeof *cnt);
			for (size_t k = 0; k < n; k++)
				cnt[pn_tree_below(&r, n)]++;
			for (size_t i = 0; i < n; i++)
				if (cnt[i] > 0)
					idx[m++] = (uint32_t)i;
		} else {
			for (size_t i = 0; i < n; i++)
				idx[m++] = (uint32_t)i;
		}
		pn_tree_grow(w, j->d->y, cnt, idx, m, &j->o, &r, &j->f->t[t]);
		pthread_mutex_lock(&j->mu);
		j->done++;
		if (j->progress)
			j->progress((double)j->done, (double)j->f->nt);
		pthread_mutex_unlock(&j->mu);
	}
	free(cnt);
	free(idx);
	pn_tree_ws_free(w);
	return NULL;
}

static void *rf_fit(const pn_data *d, const pn_data *val, pn_params *par,
		    uint64_t seed, void (*progress)(double, double), char *err)
{
	(void)val;
	long trees = pn_params_int(par, "trees", 20);
	long depth = pn_params_int(par, "depth", 0);
	long min_leaf = pn_params_int(par, "min_leaf", 3);
	double mtry = pn_params_num(par, "mtry", 1.0);
	long bootstrap = pn_params_int(par, "bootstrap", 1);
	long bins = pn_params_int(par, "bins", 256);
	long threads = pn_params_int(par, "threads", pn_default_threads());
	if (trees < 1 || trees > 100000)
		pn_usage_error("invalid --param trees=%ld: want 1 to 100000",
			       trees);
	if (depth < 0 || depth > 10000)
		pn_usage_error("invalid --param depth=%ld: want 0 (unlimited) "
			       "to 10000", depth);
	if (min_leaf < 1 || min_leaf > 1000000000)
		pn_usage_error("invalid --param min_leaf=%ld: want at least 1",
			       min_leaf);
	if (!(mtry > 0 && mtry <= 1))
		pn_usage_error("invalid --param mtry=%g: want more than 0 and "
			       "at most 1", mtry);
	if (bootstrap != 0 && bootstrap != 1)
		pn_usage_error("invalid --param bootstrap=%ld: want 0 or 1",
			       bootstrap);
	if (bins < 2 || bins > 256)
		pn_usage_error("invalid --param bins=%ld: want 2 to 256", bins);
	if (threads < 1 || threads > 256)
		pn_usage_error("invalid --param threads=%ld: want 1 to 256",
			       threads);
	if (d->n < 1 || d->p < 1 || d->n > UINT32_MAX) {
		snprintf(err, 256, "rf: need at least one row and feature");
		return NULL;
	}
	if ((size_t)threads > (size_t)trees)
		threads = trees;
	pn_bins *b = pn_bins_new(d, (int)bins, (int)threads);
	forest *f = pn_xcalloc(1, sizeof *f);
	f->nt = (size_t)trees;
	f->t = pn_xcalloc(f->nt, sizeof *f->t);
	job j = {
		.d = d, .b = b, .bootstrap = (int)bootstrap, .seed = seed,
		.f = f, .progress = progress,
		.o = {(int)depth, (int)min_leaf, mtry, 0.0, 1.0},
	};
	pthread_mutex_init(&j.mu, NULL);
	pthread_t *th = pn_xmalloc((size_t)threads * sizeof *th);
	for (long t = 1; t < threads; t++)
		if (pthread_create(&th[t], NULL, worker, &j))
			pn_die(PN_EXIT_DATA, "cannot start a thread");
	worker(&j);
	for (long t = 1; t < threads; t++)
		pthread_join(th[t], NULL);
	free(th);
	pthread_mutex_destroy(&j.mu);
	pn_bins_free(b);
	f->p = d->p;
	f->fast = pn_forest_new(f->t, f->nt, f->p);
	return f;
}

static void rf_predict(const void *m, const double *x, size_t n, size_t p,
		       double *out)
{
	const forest *f = m;
	memset(out, 0, n * sizeof *out);
	pn_forest_add(f->fast, x, n, p, out);
	double k = 1.0 / (double)f->nt;
	for (size_t i = 0; i < n; i++)
		out[i] *= k;
}

/* Saving: text formatting (%.17g) costs more than growing shallow trees, so
 * threads format trees into memory while the caller's thread writes them out
 * in order. */
typedef struct {
	const forest *f;
	char **buf;
	size_t *len;
	size_t next;
	pthread_mutex_t mu;
	pthread_cond_t ready;
} saver;

static void *save_worker(void *arg)
{
	saver *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		size_t t = s->next++;
		pthread_mutex_unlock(&s->mu);
		if (t >= s->f->nt)
			return NULL;
		char *b = NULL;
		size_t n = 0;
		FILE *m = open_memstream(&b, &n);
		if (!m)
			pn_die(PN_EXIT_DATA, "out of memory");
		pn_tree_save(&s->f->t[t], m);
		if (fclose(m))
			pn_die(PN_EXIT_DATA, "out of memory");
		pthread_mutex_lock(&s->mu);
		s->buf[t] = b;
		s->len[t] = n;
		pthread_cond_broadcast(&s->ready);
		pthread_mutex_unlock(&s->mu);
	}
}

static void rf_save(const void *m, FILE *out)
{
	const forest *f = m;
	fprintf(out, "trees %zu\n", f->nt);
	long threads = pn_default_threads();
	if (threads < 2 || f->nt < 2) {
		for (size_t i = 0; i < f->nt; i++)
			pn_tree_save(&f->t[i], out);
		return;
	}
	saver s = {.f = f};
	s.buf = pn_xcalloc(f->nt, sizeof *s.buf);
	s.len = pn_xcalloc(f->nt, sizeof *s.len);
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.ready, NULL);
	pthread_t *th = pn_xmalloc((size_t)threads * sizeof *th);
	for (long t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, save_worker, &s))
			pn_die(PN_EXIT_DATA, "cannot start a thread");
	for (size_t i = 0; i < f->nt; i++) {
		pthread_mutex_lock(&s.mu);
		while (!s.buf[i])
			pthread_cond_wait(&s.ready, &s.mu);
		char *b = s.buf[i];
		pthread_mutex_unlock(&s.mu);
		fwrite(b, 1, s.len[i], out);
		free(b);
	}
	for (long t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	free(th);
	pthread_cond_destroy(&s.ready);
	pthread_mutex_destroy(&s.mu);
	free(s.buf);
	free(s.len);
}

static void *rf_load(pn_mreader *r, size_t p)
{
	double v;
	pn_mread_nums(r, "trees", &v, 1);
	if (v < 1 || v > 100000 || v != (double)(long)v)
		pn_mread_die(r, "rf: tree count must be 1 to 100000");
	forest *f = pn_xcalloc(1, sizeof *f);
	f->t = pn_trees_load(r, p, (size_t)v);
	f->nt = (size_t)v;
	f->p = p;
	f->fast = pn_forest_new(f->t, f->nt, p);
	return f;
}

const pn_family pn_family_rf = {
	.name = "rf",
	.about = "random forest of CART regression trees (histogram splits)",
	.wants_scaling = 0,
	.fit = rf_fit,
	.predict = rf_predict,
	.save = rf_save,
	.load = rf_load,
	.free = forest_free,
};
