/* xgbwrap.c - libxgboost's calls for the harnesses that load models:
 * run untracked, boosters remembered (see fuzz.h).  Only the calls that
 * loading and predicting make are wrapped (-Wl,--wrap=XGB...). */
#include <stdint.h>
#include <stdio.h>

#include "fuzz.h"

#define MAXRES 64
static void *boosters[MAXRES];

/* libxgboost: untracked, boosters remembered (see fuzz.h).  Only the calls
 * that loading and predicting make are wrapped. */
typedef void *BoosterHandle;
typedef uint64_t bst_ulong;
typedef void *DMatrixHandle;
int __real_XGBoosterCreate(const DMatrixHandle d[], bst_ulong n,
			   BoosterHandle *out);
int __real_XGBoosterFree(BoosterHandle h);
int __real_XGBoosterLoadModelFromBuffer(BoosterHandle h, const void *buf,
					bst_ulong len);
int __real_XGBoosterGetNumFeature(BoosterHandle h, bst_ulong *out);
int __real_XGBoosterPredictFromDense(BoosterHandle h, const char *values,
				     const char *config, DMatrixHandle m,
				     const bst_ulong **shape, bst_ulong *dim,
				     const float **result);
const char *__real_XGBGetLastError(void);

#define UNTRACKED(call) ({ int t_ = pn_fuzz_tracking; pn_fuzz_tracking = 0; \
	__typeof__(call) r_ = call; pn_fuzz_tracking = t_; r_; })

int __wrap_XGBoosterCreate(const DMatrixHandle d[], bst_ulong n,
			   BoosterHandle *out)
{
	int r = UNTRACKED(__real_XGBoosterCreate(d, n, out));
	if (r == 0)
		pn_fuzz_res_add(boosters, *out);
	return r;
}

int __wrap_XGBoosterFree(BoosterHandle h)
{
	pn_fuzz_res_del(boosters, h);
	return UNTRACKED(__real_XGBoosterFree(h));
}

int __wrap_XGBoosterLoadModelFromBuffer(BoosterHandle h, const void *buf,
					bst_ulong len)
{
	return UNTRACKED(__real_XGBoosterLoadModelFromBuffer(h, buf, len));
}

int __wrap_XGBoosterGetNumFeature(BoosterHandle h, bst_ulong *out)
{
	return UNTRACKED(__real_XGBoosterGetNumFeature(h, out));
}

int __wrap_XGBoosterPredictFromDense(BoosterHandle h, const char *values,
				     const char *config, DMatrixHandle m,
				     const bst_ulong **shape, bst_ulong *dim,
				     const float **result)
{
	return UNTRACKED(__real_XGBoosterPredictFromDense(h, values, config,
				m, shape, dim, result));
}

const char *__wrap_XGBGetLastError(void)
{
	return UNTRACKED(__real_XGBGetLastError());
}

void pn_fuzz_xgb_release(void)
{
	for (int i = 0; i < MAXRES; i++)
		if (boosters[i]) {
			__real_XGBoosterFree(boosters[i]);
			boosters[i] = NULL;
		}
}
