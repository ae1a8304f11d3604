/* metrics.h - accuracy of predicted against measured values.
 *
 * An accumulator takes (measured, predicted) pairs one at a time and gives
 * seven numbers at the end.  With e = pred - meas over the n pairs added:
 *
 *   APE    = 100 * |pred - meas| / |meas|   (absolute percentage error)
 *   rmse   = sqrt(mean(e^2))
 *   mae    = mean(|e|)
 *   mape   = mean(APE)
 *   mdape  = median(APE)  (mean of the two middle values when n is even)
 *   maxape = max(APE)
 *   r2     = 1 - SS_res / SS_tot, SS_res = sum(e^2),
 *            SS_tot = sum((meas - mean(meas))^2)
 *
 * With intervals (pn_metrics_cover), an eighth:
 *
 *   cover  = 100 * (pairs with lo <= meas <= hi) / (pairs given an interval)
 *
 * Sums are kept in long double and SS_tot by Welford's update, so the
 * results agree with an exact computation to about 1e-12 relative for any
 * input that fits in a double.  Memory is one double per pair (the APE
 * values that the median needs); everything else is constant.
 *
 * Usage:
 *   pn_metrics m;
 *   pn_metrics_init(&m);
 *   while (...)
 *       if (pn_metrics_add(&m, meas, pred) != PN_METRICS_OK) ...error...
 *   pn_metrics_res r;
 *   pn_metrics_result(&m, &r);
 *   pn_metrics_free(&m);
 */
#ifndef PN_METRICS_H
#define PN_METRICS_H

#include <stddef.h>

typedef struct {
	long n;                  /* pairs added */
	long double sse;         /* sum of e^2 */
	long double sae;         /* sum of |e| */
	long double sape;        /* sum of APE */
	long double mean_m;      /* running mean of meas (Welford) */
	long double sst;         /* running sum of squared deviations of meas */
	double max_ape;
	double *ape;             /* the APE of every pair, for the median */
	size_t cap;
	long ncover, ninside;    /* pairs given an interval, and inside it */
} pn_metrics;

/* The results.  A value that is undefined is NAN: every field but n when
 * n == 0, and r2 when n < 2 or SS_tot == 0 (all measured values equal). */
typedef struct {
	long n;
	double rmse, mae, mape, mdape, maxape, r2;
	double cover;            /* NAN when no pair was given an interval */
} pn_metrics_res;

/* Return codes of pn_metrics_add(). */
enum {
	PN_METRICS_OK = 0,
	PN_METRICS_ZERO = -1,       /* meas is 0: APE undefined */
	PN_METRICS_NONFINITE = -2   /* meas or pred is inf or nan */
};

/* Start an empty accumulator. */
void pn_metrics_init(pn_metrics *m);

/* Release the memory of m; it may then be initialised again. */
void pn_metrics_free(pn_metrics *m);

/* Add one pair.  Returns PN_METRICS_OK, or an error code above, in which
 * case nothing is added and the caller reports the error (with its file
 * and line).  Dies only when out of memory. */
int pn_metrics_add(pn_metrics *m, double meas, double pred);

/* The APE of one pair (above), computed as pn_metrics_add does; NAN when
 * meas is 0. */
double pn_ape(double meas, double pred);

/* Count whether meas lies in the interval [lo, hi] of a pair (added with
 * pn_metrics_add as well). */
void pn_metrics_cover(pn_metrics *m, double meas, double lo, double hi);

/* Compute the results of the pairs added so far.  Reorders the stored APE
 * values (to find the median) but otherwise leaves m as it was: more pairs
 * may be added and the results asked for again. */
void pn_metrics_result(pn_metrics *m, pn_metrics_res *r);

/* The root mean squared difference of a[0..n) and b[0..n) (n > 0), summed
 * in long double: rmse above, for two whole arrays at once (pn-fit's
 * validation score). */
double pn_rmse(const double *a, const double *b, size_t n);

#endif
