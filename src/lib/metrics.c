#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "metrics.h"

void pn_metrics_init(pn_metrics *m)
{
	memset(m, 0, sizeof *m);
}

void pn_metrics_free(pn_metrics *m)
{
	free(m->ape);
	memset(m, 0, sizeof *m);
}

double pn_ape(double meas, double pred)
{
	if (meas == 0)
		return NAN;
	long double ae = fabsl((long double)pred - (long double)meas);
	return (double)(100.0L * ae / fabsl((long double)meas));
}

int pn_metrics_add(pn_metrics *m, double meas, double pred)
{
	if (!isfinite(meas) || !isfinite(pred))
		return PN_METRICS_NONFINITE;
	if (meas == 0)
		return PN_METRICS_ZERO;
	long double e = (long double)pred - (long double)meas;
	long double ae = fabsl(e);
	double ape = pn_ape(meas, pred);

	if ((size_t)m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->ape = pn_xrealloc(m->ape, m->cap * sizeof *m->ape);
	}
	m->ape[m->n++] = ape;
	m->sse += e * e;
	m->sae += ae;
	m->sape += ape;
	if (m->n == 1 || ape > m->max_ape)
		m->max_ape = ape;

	long double d = (long double)meas - m->mean_m;
	m->mean_m += d / m->n;
	m->sst += d * ((long double)meas - m->mean_m);
	return PN_METRICS_OK;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void pn_metrics_cover(pn_metrics *m, double meas, double lo, double hi)
{
	m->ncover++;
	m->ninside += lo <= meas && meas <= hi;
}

void pn_metrics_result(pn_metrics *m, pn_metrics_res *r)
{
	long n = m->n;
	r->n = n;
	r->cover = m->ncover ? 100.0 * (double)m->ninside / (double)m->ncover
			     : NAN;
	if (n == 0) {
		r->rmse = r->mae = r->mape = r->mdape = r->maxape = r->r2 = NAN;
		return;
	}
	r->rmse = (double)sqrtl(m->sse / n);
	r->mae = (double)(m->sae / n);
	r->mape = (double)(m->sape / n);
	r->maxape = m->max_ape;
	qsort(m->ape, (size_t)n, sizeof *m->ape, cmp_double);
	if (n % 2)
		r->mdape = m->ape[n / 2];
	else
		r->mdape = (double)(((long double)m->ape[n / 2 - 1] +
				     m->ape[n / 2]) / 2);
	r->r2 = n < 2 || m->sst == 0 ? NAN : (double)(1 - m->sse / m->sst);
}

double pn_rmse(const double *a, const double *b, size_t n)
{
	long double s = 0;
	for (size_t i = 0; i < n; i++) {
		double e = a[i] - b[i];
		s += (long double)e * e;
	}
	return sqrt((double)(s / (long double)n));
}
