/* fit.h - fitting the models of a model set, one group of rows at a time:
 * what pn-fit(1) does between reading its rows and writing the model file.
 *
 * A group is the rows of one layer type (the value of the column "layer"),
 * or every row ("*": no layer column, or pn-fit --no-by-layer).  For each
 * group, pn_fit_group
 *
 *   1. prepares the design (design.h): the feature columns, their encoding,
 *      --log-features' floors, the target transform, for the training rows
 *      and the validation rows of the group;
 *   2. fits the family, or with autofit every family (pn_family_all, in
 *      that order) and keeps the one of the lowest validation RMSE (a
 *      family that fails is recorded, not fatal, while one other fits; a
 *      family with no finite validation RMSE loses to any with one; ties go
 *      to the earlier family);
 *   3. with logo, refits the chosen family once without each device of the
 *      group's rows (their validation rows left out too, so that early
 *      stopping never sees the device) and records ln(predicted /
 *      measured) on that device's rows in the model (pn_model_add_logo);
 *      with keep_folds, it also keeps each of those refitted models in the
 *      chosen model's folds (model.h), in device order;
 *   3b. with cv = K, refits the chosen family K times, each without one
 *      of K folds of the group's training rows (each row in one fold,
 *      drawn with the seed; the validation rows, if any, stop every refit
 *      early), predicts the fold left out as pn-eval would (base-floor
 *      included) and records the mean and sd of ln(predicted / measured)
 *      over all the rows in the model (pn_model_set_cv): the error on
 *      rows like the training rows, of the devices they came from;
 *   4. records the provenance lines (model.h's "info"): rows; the domain
 *      (domain.h): devices, layers, precisions, passes and optimizers of
 *      the rows (a line for each of these columns the table has), and the
 *      range of each numeric feature over the training rows before the
 *      log; features, seed, the validation RMSE and, with
 *      autofit, one line per family tried ("auto rf rmse 0.12", "auto mlp
 *      failed <why>"), and "created-by pn-fit VERSION".
 *
 * Every function here returns its failure in a pn_fault (table.h), which
 * the caller reports once it has released what it holds; nothing here
 * stops the program, except a family reading a --param value that is not a
 * number (model.h's pn_params_num: a usage error, exit 2).  The failures:
 *
 *   pn_fit_skip_failed
 *     FILE: no rows left after skipping N failed rows         (data)
 *   pn_fit_layers
 *     FILE:LINE: column 'layer': value is NA (or empty)       (data)
 *     FILE:LINE: column 'layer': 'x' cannot name a model      (data)
 *     VAL:LINE: column 'layer': no training rows of layer type 'x'
 *       (validation rows are of the types fitted)             (data)
 *   pn_fit_group
 *     FILE: layer 'x' has only N rows (at least 10 needed)    (data)
 *     FILE: only N rows (at least 10 needed)                  (data, "*")
 *     the design's failures (design.h): missing or mixed columns, values
 *       that are NA, not numbers, or that the target transform cannot take
 *     the target 'x' is also a feature                        (usage)
 *     FILE: no features for layer 'x'                         (data)
 *     VAL:1: missing column 'layer' (or the target, or --relative's base)
 *     VAL: no validation rows of layer 'x'                    (data, autofit)
 *     <the family's message>, e.g. "gbdt: fit failed"         (data, one
 *                                                               family)
 *     layer 'x': every family failed                          (data, autofit)
 *     --param 'k' is not read by family 'f'                   (usage, first
 *     --param 'k' is not read by any family                     group only)
 *     with logo:
 *     FILE:1: missing column 'device' (or VAL:1:)             (data)
 *     FILE:LINE: column 'device': value is NA (--logo)        (data)
 *     FILE:LINE: column 'device': 'x' has a space and cannot be recorded
 *       in a model (--logo)                                   (data)
 *     FILE: --logo needs rows of at least 3 devices; layer 'x' has N
 *     layer 'x': --logo fit without device 'd': <the family's message>
 *     layer 'x': --logo: the fit without device 'd' predicts its rows out
 *       of range                                              (data)
 *     with cv:
 *     layer 'x': --cv K needs at least 2K rows; it has N      (data)
 *     layer 'x': --cv fit without fold F of K: <the family's message>
 *     layer 'x': --cv: the fits predict their folds out of range (data)
 */
#ifndef PN_FIT_H
#define PN_FIT_H

#include <stdint.h>

#include "featurize.h"
#include "model.h"
#include "table.h"

/* What to fit; pn-fit(1)'s options. */
typedef struct {
	const char *features;           /* a set's name or a comma list, as
					   given (recorded in "info") */
	const pn_feature_set *set;      /* the set, or NULL for a list */
	const char *extra;              /* SET+COL,...: the columns after
					   the set's, or NULL */
	const char *target;             /* the column to predict */
	const char *base;               /* logratio's column, or NULL */
	int no_base_floor;              /* with base: record no base-floor */
	int log;                        /* fit ln(target) */
	int logfeat;                    /* --log-features */
	int autofit;                    /* every family, best on validation;
					   needs validation rows */
	int logo;                       /* leave each device out (needs log or
					   base) */
	int keep_folds;                 /* with logo: keep the fold models */
	int cv;                         /* K-fold cross-validation, K >= 2
					   (needs log or base), 0: none */
	uint64_t seed;
	const pn_family *family;        /* without autofit */
	pn_params *par;                 /* --param, read by the families */
	/* Called before each fit of a family (may be NULL), and handed to the
	 * family as its progress callback (may be NULL). */
	void (*start)(const char *layer, const char *family);
	void (*progress)(double done, double total);
} pn_fit_spec;

/* A fit in progress: the spec, the tables and what every group shares. */
typedef struct pn_fit pn_fit;

/* A fit of the rows of t, with validation rows val (NULL: none), as s says
 * (copied; t, val, s->par and the strings of s must outlive the fit). */
pn_fit *pn_fit_new(const pn_fit_spec *s, const pn_table *t,
		   const pn_table *val);
/* Free fit and whatever a failed pn_fit_group left (fit may be NULL). */
void pn_fit_free(pn_fit *fit);

/* Drop the rows of t whose column "status" is not "ok" (nothing when t has
 * no such column), and say how many on standard error, by status, most
 * frequent first: "pn-x: skipped 3 WHATrows with status oom (2), error
 * (1)".  Fails when no row is left. */
int pn_fit_skip_failed(pn_table *t, const char *what, pn_fault *f);

/* The groups of t into layers: with by_layer and a column "layer", its
 * values, sorted; else the one group "*".  Every layer value of val (when
 * not NULL) must be among them. */
int pn_fit_layers(const pn_table *t, const pn_table *val, int by_layer,
		  pn_strset *layers, pn_fault *f);

/* Fit the group layer (a value of pn_fit_layers, fitted in its order:
 * the first call checks that every --param was read) and return its model
 * (the caller frees it with pn_model_free), or NULL with f set. */
pn_model *pn_fit_group(pn_fit *fit, const char *layer, pn_fault *f);

/* Where the last pn_fit_group's wall time went (clock.h), in seconds:
 * prepare, the design and its encoded rows (parsing the cells, the target
 * transform); fit, inside the families' fit functions (for xgb: XGBoost's
 * binning and rounds, with pn's float copy of the rows; with --auto or
 * --logo, every family and fold); other, the rest (scaling, validation
 * predictions, the model's info lines).  rows and features: the group's
 * training rows and design columns. */
typedef struct {
	double prepare, fit, other;
	size_t rows, features;
} pn_fit_times;
void pn_fit_group_times(const pn_fit *fit, pn_fit_times *t);

#endif
