/* model.h - regressors (families) and the model file.
 *
 * A family fits y ~ f(x) on a dense dataset and writes/reads its fitted
 * state as text.  pn-fit(1) builds the dataset from a featurized TSV (named
 * feature columns, categorical columns one-hot encoded as "col=value"),
 * applies the input scaling and target transform that the model file
 * records, and calls the family; pn-eval(1) reads the model file and
 * predicts.  Families never see column names or TSV.
 *
 * Model file (text, versioned, one model per layer type; a model set is
 * several models concatenated):
 *
 *   pn-model 1
 *   family rf
 *   layer dense                      (or "*" for any)
 *   fold T4                          (only in a fold model, see below)
 *   target time_ms
 *   transform log                    (none | log: y' = ln y |
 *                                     logratio COL: y' = ln(y / COL), COL
 *                                     a column of the row, e.g. the
 *                                     roofline time)
 *   features 3
 *   feature batch num 0 1            (name, num|cat|log, mean, sd; cat:
 *   feature in_features log 4 1 1     0/1 indicator of "col=value"; log:
 *   feature op=add cat 0 1            ln(max(x, floor)), floor the 5th)
 *   param trees 100                  (hyper-parameters, family-defined)
 *   info rows 5120                   (provenance: rows, devices, layers,
 *                                     precisions,
 *   info devices T4,V100              seed, features set, created by, and
 *   info seed 1                       the --auto comparison)
 *   info passes fwd                  (the domain, domain.h: the values of
 *   info optimizers none              layer, pass, precision, optimizer
 *   info range batch 1 64             and device of the training rows;
 *                                     per numeric feature, its smallest
 *                                     and largest training value; with
 *   info base-floor 4.9e-06           logratio, the smallest COL: a row
 *                                     below it is predicted at it)
 *   cv 5 5120 -0.002 0.21            (pn-fit --cv K: K-fold cross-validation
 *                                     on the training rows, N rows, mean and
 *                                     sd of ln(predicted / measured))
 *   body                             (family state, family-defined text)
 *   ...
 *   end
 *
 * Inputs are standardised (x - mean) / sd before the family sees them
 * (sd = 1, mean = 0 for families that do not want scaling); a log feature
 * is ln(max(x, floor)) before that.
 *
 * Fold models (pn-fit --logo --keep-folds): right after the "end" of a
 * layer's model may follow, one per training device, the models of the
 * same family refitted without that device's rows, each a whole model as
 * above with a line "fold DEVICE" (the device left out) after its "layer"
 * line, the layer the same as its main model's, each device at most once.
 * A fold model belongs to the model before it; no tool predicts with it
 * unless asked to (pn-eval --logo: each row by the fold that never saw its
 * device).  A model file without fold lines is read as before.
 */
#ifndef PN_MODEL_H
#define PN_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A dense dataset: n rows by p features, row-major, and targets y. */
typedef struct {
	size_t n, p;
	double *x;      /* n * p */
	double *y;      /* n */
} pn_data;

/* Hyper-parameters as name=value strings; families read what they know
 * and ignore none silently: pn_params_get_* mark a name used, and pn-fit
 * rejects a --param that no family read. */
typedef struct {
	int n;
	char *name[64];
	char *value[64];
	int used[64];
} pn_params;

double pn_params_num(pn_params *p, const char *name, double dflt);
long pn_params_int(pn_params *p, const char *name, long dflt);

/* Reading the body of a model file: lines of whitespace-separated tokens.
 * Every reader error dies "pn-x: FILE:LINE: corrupt model: <why>". */
typedef struct pn_mreader pn_mreader;
/* Next line's tokens (the first max of them stored in tok); returns the
 * count of tokens on the line, which may exceed max, or 0 at "end". */
int pn_mread_line(pn_mreader *r, char **tok, int max);
/* Split s in place at runs of spaces and tabs into at most max tokens
 * (the first max stored in tok); returns the full count. */
int pn_mread_split(char *s, char **tok, int max);
/* Next line must be "key v1 v2 ..." with exactly n numbers. */
void pn_mread_nums(pn_mreader *r, const char *key, double *v, size_t n);
/* The same for a line of key or of alt: returns 1 for alt's, 0 for key's
 * (an error names key). */
int pn_mread_nums_or(pn_mreader *r, const char *key, const char *alt,
		     double *v, size_t n);
_Noreturn void pn_mread_die(pn_mreader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Writing: numbers with full precision (%.17g). */
void pn_mwrite_nums(FILE *f, const char *key, const double *v, size_t n);

typedef struct {
	const char *name;        /* "lr", "rf", "gbdt", "xgb", "mlp" */
	const char *about;       /* one line for --help */
	int wants_scaling;       /* 1: pn-fit standardises inputs */
	/* Fit on d (and, when val is not NULL, use it for early stopping).
	 * seed drives every random choice; progress(done, total) may be
	 * called (it draws a bar on a TTY).  Returns the fitted state, or NULL
	 * with a message in err (size 256). */
	void *(*fit)(const pn_data *d, const pn_data *val, pn_params *par,
		     uint64_t seed, void (*progress)(double done, double total),
		     char *err);
	/* Predict n rows of x (row-major, p columns) into out. */
	void (*predict)(const void *m, const double *x, size_t n, size_t p,
			double *out);
	void (*save)(const void *m, FILE *f);           /* the body */
	void *(*load)(pn_mreader *r, size_t p);         /* reads up to "end" */
	void (*free)(void *m);
} pn_family;

extern const pn_family pn_family_lr, pn_family_rf, pn_family_gbdt,
	pn_family_xgb, pn_family_mlp;

/* Family by name, or NULL. */
const pn_family *pn_family_find(const char *name);

/* ---- one fitted model -------------------------------------------------
 *
 * A model as the file above holds it; modelset.c writes and reads it (and
 * whole sets of models, modelset.h), design.h makes its features from a
 * TSV and applies them.
 */

/* One input of a model: a numeric column, or the 0/1 indicator of a
 * categorical column having one value ("col=value").  The family sees
 * (x - mean) / sd. */
typedef struct {
	char *name;         /* column name, or "col=value" when cat */
	int cat;
	int log;            /* numeric, taken as ln(max(x, floor)) */
	double floor;       /* log: > 0 */
	double mean, sd;    /* sd > 0 */
} pn_feature;

/* How the model's family, refitted without one training device, missed that
 * device's rows (pn-fit --logo): the mean (bias) and standard deviation of
 * ln(predicted / measured) over its n rows. */
typedef struct {
	char *device;
	size_t n;
	double bias, sd;    /* finite; sd >= 0 */
} pn_logo;

typedef struct pn_model {
	const pn_family *family;
	char *layer;        /* a layer value, or "*" for any */
	char *target;       /* the column the model predicts */
	int log;            /* transform: 1 log (fit on ln y), 0 none */
	char *base;         /* transform logratio: fit on ln(y / base), the
			       base a column of the row (log is 1 too) */
	size_t p;
	pn_feature *feat;   /* p of them */
	int nparam;
	char **pname, **pvalue;   /* hyper-parameters, as given */
	int ninfo;
	char **info;        /* "key value...", provenance */
	int nlogo;
	pn_logo *logo;      /* leave-one-device-out errors, nlogo of them */
	int cv_k;           /* cross-validation folds (pn-fit --cv), 0: none */
	size_t cv_n;        /* its rows, and its ln(predicted / measured): */
	double cv_bias, cv_sd;  /* mean and sd (finite, sd >= 0) */
	void *state;        /* the family's fitted state */
	char *fold;         /* a fold model: the device left out; else NULL */
	int nfold;
	struct pn_model **folds;  /* a main model's fold models, in file
				     order, nfold of them */
	struct pn_domain *domain; /* what it was fitted on, parsed from its
				     info lines (domain.h); NULL until
				     pn_domain_parse */
} pn_model;

/* Write one whole model, "pn-model 1" to "end", then its fold models.
 * Feature, layer, target and fold device names and parameter names and
 * values must be non-empty with no whitespace (BUG otherwise: pn-fit checks
 * them first). */
void pn_model_write(FILE *f, const pn_model *m);
/* Record a hyper-parameter or an info line ("key value..."). */
void pn_model_add_param(pn_model *m, const char *name, const char *value);
void pn_model_add_info(pn_model *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Record the leave-one-device-out error on one device (pn_logo). */
void pn_model_add_logo(pn_model *m, const char *device, size_t n,
		       double bias, double sd);
/* Record the cross-validation error over n training rows in k folds. */
void pn_model_set_cv(pn_model *m, int k, size_t n, double bias, double sd);
/* Whether device is among the devices of m's training rows (its "info
 * devices" line). */
int pn_model_saw_device(const pn_model *m, const char *device);
/* The spread, in ln(predicted / measured), of the model's error on a GPU
 * that was not in its training rows, from its leave-one-device-out
 * records: with whole = 0, of one row's prediction, sqrt(mean over devices
 * of bias^2 + sd^2); with whole = 1, of a sum over many rows of one GPU,
 * where the rows' own scatter averages out and the device's bias stays,
 * sqrt(mean of bias^2).  NAN when the model has no such record. */
double pn_model_spread(const pn_model *m, int whole);
/* Make fold (its fold set to device) the next fold model of m. */
void pn_model_add_fold(pn_model *m, pn_model *fold, const char *device);
/* m's fold model that left out device, or NULL. */
const pn_model *pn_model_fold(const pn_model *m, const char *device);
/* Free m, its family state and fold models included (m may be NULL). */
void pn_model_free(pn_model *m);


#endif
