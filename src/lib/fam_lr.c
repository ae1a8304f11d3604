/* fam_lr.c - linear least squares with GSL (family "lr").
 *
 * Fits y = b + x.c.  The columns of x and y are centred first (b is then
 * mean(y) - mean(x).c and is never penalised), and the centred system is
 * solved through GSL's singular value decomposition:
 *
 *   ridge=0   gsl_multifit_linear_tsvd: ordinary least squares by
 *             truncated SVD; singular values below tol (default 1e-10)
 *             times the largest are dropped, so collinear features (a
 *             one-hot group, a constant column, cm_total = cm_in + cm_out,
 *             spec-sheet columns of a few GPUs) give the minimum-norm
 *             solution instead of huge cancelling coefficients;
 *   ridge=L   gsl_multifit_linear_svd + gsl_multifit_linear_solve with
 *             GSL's lambda = sqrt(L): minimises |y - Xc|^2 + L |c|^2 (the
 *             penalty of scikit-learn's Ridge(alpha=L)).
 *
 * Inputs arrive standardised (wants_scaling = 1), so the penalty treats all
 * numeric features alike.  Body: "intercept B" and "coef C1 ... Cp".
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "model.h"

typedef struct {
	size_t p;
	double b;
	double *c;
} linear;

static void lr_free(void *m)
{
	linear *l = m;
	if (l) {
		free(l->c);
		free(l);
	}
}

static void *lr_fit(const pn_data *d, const pn_data *val, pn_params *par,
		    uint64_t seed, void (*progress)(double, double), char *err)
{
	(void)val;
	(void)seed;
	double ridge = pn_params_num(par, "ridge", 0);
	double tol = pn_params_num(par, "tol", 1e-10);
	if (!(tol >= 0 && tol < 1))
		pn_usage_error("invalid --param tol=%g: want 0 to below 1",
			       tol);
	if (!(ridge >= 0 && isfinite(ridge)))
		pn_usage_error("invalid --param ridge=%g: want at least 0",
			       ridge);
	size_t n = d->n, p = d->p;
	if (n < 2 || p < 1) {
		snprintf(err, 256, "lr: need at least two rows and a feature");
		return NULL;
	}
	gsl_set_error_handler_off();
	double *xm = pn_xcalloc(p, sizeof *xm);
	long double ys = 0;
	for (size_t i = 0; i < n; i++) {
		ys += d->y[i];
		for (size_t j = 0; j < p; j++)
			xm[j] += d->x[i * p + j];
	}
	for (size_t j = 0; j < p; j++)
		xm[j] /= (double)n;
	double ym = (double)(ys / (long double)n);
	/* GSL's SVD wants at least as many rows as columns: fewer rows are
	 * padded with rows of zeros (x and y), which add nothing to the sum
	 * of squares, so the least-squares (minimum-norm) solution stays */
	size_t m = n < p ? p : n;
	gsl_matrix *X = gsl_matrix_calloc(m, p);
	gsl_vector *y = gsl_vector_calloc(m), *c = gsl_vector_alloc(p);
	gsl_matrix *cov = gsl_matrix_alloc(p, p);
	gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc(m, p);
	if (!X || !y || !c || !cov || !w)
		pn_die(PN_EXIT_DATA, "out of memory");
	for (size_t i = 0; i < n; i++) {
		gsl_vector_set(y, i, d->y[i] - ym);
		for (size_t j = 0; j < p; j++)
			gsl_matrix_set(X, i, j, d->x[i * p + j] - xm[j]);
	}
	int rc;
	if (ridge == 0) {
		double chisq;
		size_t rank;
		rc = gsl_multifit_linear_tsvd(X, y, tol, c, cov, &chisq, &rank,
					      w);
	} else {
		double rnorm, snorm;
		rc = gsl_multifit_linear_svd(X, w);
		if (!rc)
			rc = gsl_multifit_linear_solve(sqrt(ridge), X, y, c,
						       &rnorm, &snorm, w);
	}
	linear *l = NULL;
	if (rc) {
		snprintf(err, 256, "lr: least squares failed: %s",
			 gsl_strerror(rc));
	} else {
		l = pn_xcalloc(1, sizeof *l);
		l->p = p;
		l->c = pn_xmalloc(p * sizeof *l->c);
		long double b = ym;
		for (size_t j = 0; j < p; j++) {
			l->c[j] = gsl_vector_get(c, j);
			b -= (long double)l->c[j] * xm[j];
		}
		l->b = (double)b;
		int ok = isfinite(l->b);
		for (size_t j = 0; j < p; j++)
			ok &= isfinite(l->c[j]) != 0;
		if (!ok) {
			snprintf(err, 256, "lr: the fit is not finite");
			lr_free(l);
			l = NULL;
		}
	}
	gsl_multifit_linear_free(w);
	gsl_matrix_free(cov);
	gsl_vector_free(c);
	gsl_vector_free(y);
	gsl_matrix_free(X);
	free(xm);
	if (progress && l)
		progress(1, 1);
	return l;
}

static void lr_predict(const void *m, const double *x, size_t n, size_t p,
		       double *out)
{
	const linear *l = m;
	for (size_t i = 0; i < n; i++) {
		double s = l->b;
		const double *r = x + i * p;
		for (size_t j = 0; j < p; j++)
			s += l->c[j] * r[j];
		out[i] = s;
	}
}

static void lr_save(const void *m, FILE *f)
{
	const linear *l = m;
	pn_mwrite_nums(f, "intercept", &l->b, 1);
	pn_mwrite_nums(f, "coef", l->c, l->p);
}

static void *lr_load(pn_mreader *r, size_t p)
{
	linear *l = pn_xcalloc(1, sizeof *l);
	l->p = p;
	l->c = pn_xmalloc(p * sizeof *l->c);
	pn_mread_nums(r, "intercept", &l->b, 1);
	pn_mread_nums(r, "coef", l->c, p);
	return l;
}

const pn_family pn_family_lr = {
	.name = "lr",
	.about = "linear least squares (GSL), optional ridge penalty",
	.wants_scaling = 1,
	.fit = lr_fit,
	.predict = lr_predict,
	.save = lr_save,
	.load = lr_load,
	.free = lr_free,
};
