/* interval.h - prediction intervals: on GPUs that were never measured,
 * and on the devices a model was fitted on.
 *
 * A model fitted with pn-fit --logo records, per training device, how the
 * same family refitted without that device missed its rows (pn_logo in
 * modelset.h).  Those errors stand for the error on a new GPU: ln(measured
 * / predicted) is taken to be spread * T, T a Student t variable with as
 * many degrees of freedom as devices (the spread is estimated from that
 * few), spread as pn_model_spread gives it.  So the interval of probability
 * level is
 *
 *   [pred / k, pred * k],  k = exp(spread * t_{(1 + level) / 2, D}),
 *
 * for one row (whole = 0) or for a sum over many rows of one GPU (whole =
 * 1: only the devices' biases, which do not average out).  Rows of
 * different models are summed bound by bound: a GPU's errors on different
 * layer types are taken as fully correlated, which makes a sum's interval
 * as wide as it can be and no wider.
 *
 * On a device among the model's training rows ("info devices"), a model
 * fitted with pn-fit --cv K says more: ln(measured / predicted) of rows it
 * did not see, over all its rows (cv_n, many), has mean b and sd s, and
 * the interval is [pred / k, pred * k], k = exp(sqrt(b^2 + s^2) z), z the
 * standard normal quantile of (1 + level) / 2, for a row and for a sum
 * alike (pn-sum adds such rows by layer type, and the types in root sum
 * of squares: pn_interval_own).  A model without that record gives such a row its
 * leave-one-device-out interval, which is wider than it needs to be there.
 */
#ifndef PN_INTERVAL_H
#define PN_INTERVAL_H

#include "gpuspec.h"
#include "layer.h"
#include "modelset.h"

/* What a tool says of a model without the record (a printf format taking
 * the model's layer). */
#define PN_INTERVAL_NO_RECORD "the %s model has no record for --interval " \
	"on %s (fit it with pn-fit --logo, or --cv for the devices it is " \
	"fitted on)"

/* Whether m's cross-validation record gives its interval on device (a
 * device of its training rows, and the record there): a row's error then
 * is its own, independent of other layer types' (pn-sum sums them so). */
int pn_interval_own(const pn_model *m, const char *device);

/* The factor k >= 1 above of a prediction of m on device (NULL: a device
 * it never saw), for 0 < level < 1; NAN when the model has no record that
 * applies. */
double pn_interval_factor(const pn_model *m, const char *device, int whole,
			  double level);

/* The factor k of a row that the roofline predicts on g, at level: for a
 * recurrent row (rnn, lstm, gru) on a GPU, whose time is mostly
 * pn_recurrence_ms (roofline.h), exp(PN_RECURRENCE_SPREAD z), z the
 * standard normal quantile of (1 + level) / 2, whole or not (the rule's
 * error on one GPU is taken as one bias); 1 for any other row: what the
 * roofline misses is not known, and its interval has no width. */
double pn_interval_roofline(const pn_layer *l, const pn_gpu *g, double level);

/* Parse a --interval LEVEL in percent ("90", "95.5": more than 0, less
 * than 100) into a probability; dies with opt.h's usage error naming opt
 * otherwise ("--interval: '100' is too large (must be below 100)"). */
double pn_interval_level(const char *opt, const char *s);

#endif
