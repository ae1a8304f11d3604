/* interval.c - prediction intervals (see interval.h). */
#include <math.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "err.h"
#include "interval.h"
#include "opt.h"
#include "roofline.h"
#include "tsv.h"

int pn_interval_own(const pn_model *m, const char *device)
{
	return m && m->cv_k && device && pn_model_saw_device(m, device);
}

double pn_interval_factor(const pn_model *m, const char *device, int whole,
			  double level)
{
	if (pn_interval_own(m, device))
		return exp(hypot(m->cv_bias, m->cv_sd) *
			   gsl_cdf_ugaussian_Pinv((1 + level) / 2));
	double s = pn_model_spread(m, whole);
	if (isnan(s))
		return NAN;
	double t = gsl_cdf_tdist_Pinv((1 + level) / 2, (double)m->nlogo);
	return exp(s * t);
}

double pn_interval_roofline(const pn_layer *l, const pn_gpu *g, double level)
{
	if (pn_gpu_is_cpu(g) || pn_recurrence_ms(l) <= 0 || !(level > 0))
		return 1;
	return exp(PN_RECURRENCE_SPREAD * gsl_cdf_ugaussian_Pinv((1 + level) / 2));
}

double pn_interval_level(const char *opt, const char *s)
{
	return pn_opt_real(opt, s, (pn_span){0, 100, 1, 1}) / 100;
}
