/* interval.h - prediction intervals for GPUs that were never measured.
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
 */
#ifndef PN_INTERVAL_H
#define PN_INTERVAL_H

#include "gpuspec.h"
#include "layer.h"
#include "modelset.h"

/* What a tool says of a model without the record (a printf format taking
 * the model's layer). */
#define PN_INTERVAL_NO_RECORD "the %s model has no leave-one-device-out " \
	"record for --interval (fit it with pn-fit --logo)"

/* The factor k >= 1 above, for 0 < level < 1; NAN when the model has no
 * leave-one-device-out record. */
double pn_interval_factor(const pn_model *m, int whole, double level);

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
