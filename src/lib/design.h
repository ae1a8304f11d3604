/* design.h - a model's input transform, both ways: from the rows of a TSV
 * to the matrix and target a family fits (pn-fit), and from a row's fields
 * to the family's inputs and back to the target's units (prediction,
 * modelset.c).
 *
 * The steps, each recorded in the model file (model.h):
 *
 *   columns   a named feature set (featurize.h) or a comma list of columns
 *   encoding  a numeric column is one feature, its value; a categorical
 *             column one 0/1 feature per value of the training rows,
 *             "col=value", values sorted.  A set says which columns are
 *             categorical; in a list, a column is categorical when its
 *             values are not numbers (NA and empty aside), and a column
 *             that mixes numbers and other values is an error
 *   log       (--log-features) a numeric feature whose training values are
 *             all >= 0 is taken as ln(max(x, floor)), floor its smallest
 *             positive training value (1 when it has none)
 *   scaling   families that want it see (x - mean) / sd, mean and sd over
 *             the training rows (sd 1 when 0); other features mean 0, sd 1
 *   target    none: y; log: ln y; logratio: ln(y / base), base a column of
 *             the row.  A target to be logged must be positive (0 has no
 *             log); without a log it must be positive (a time) and at most
 *             PN_TARGET_MAX, beyond which the families' sums of squares and
 *             xgboost's single-precision labels overflow
 *
 * Functions that read a table return 0, or -1 with the failure, its file
 * and line, in a pn_fault (table.h); none of them stops the program.
 */
#ifndef PN_DESIGN_H
#define PN_DESIGN_H

#include <math.h>
#include <stddef.h>

#include "featurize.h"
#include "model.h"
#include "table.h"

/* The largest target fitted without a log transform. */
#define PN_TARGET_MAX 1e30

/* One input column and how it becomes features. */
typedef struct {
	char *name;
	int cat;                /* categorical: one 0/1 feature per value */
	int fixed;              /* the kind comes from the feature set */
	pn_strset val;          /* the categories, sorted (text of the
				   table) */
} pn_dcol;

/* The input columns of one model, in order, and its width p. */
typedef struct {
	int n;
	pn_dcol *c;
	size_t p;               /* features, set by pn_design_classify */
	/* The numbers pn_design_classify parsed to tell the kinds of a list's
	 * columns (n rows of num_cols, NAN where not a number), kept for
	 * pn_design_encode of the same rows: each cell is parsed once. */
	const pn_table *num_t;
	const size_t *num_rows;
	size_t num_n;
	int num_cols;
	int *num_of;            /* per column: its place in num, or -1 */
	double *num;
} pn_design;

/* The columns of feature set s for rows[0..n) of t.  Fails on a row of an
 * unknown layer type and on a column missing from t; a missing feature
 * column (featurize.h) says to run pn-featurize. */
int pn_design_set(pn_design *d, const pn_table *t, const size_t *rows,
		  size_t n, const pn_feature_set *s, pn_fault *f);
/* The columns of a comma list.  Fails on a missing column, and with
 * code PN_EXIT_USAGE on a column named twice. */
int pn_design_list(pn_design *d, const pn_table *t, const char *list,
		   pn_fault *f);
/* Tell categorical columns from numeric ones (see above), collect the
 * categories in rows[0..n) and set d->p.  Fails on a mixed column and on a
 * category that cannot name a feature (white space, '=' in the name). */
int pn_design_classify(pn_design *d, const pn_table *t, const size_t *rows,
		       size_t n, pn_fault *f);
/* Encode rows[0..n) of t into x (n x d->p, row-major).  Fails on a numeric
 * cell that is NA or not a number.  Encoding the rows just classified (the
 * same t, rows and n) takes the numbers classifying parsed. */
int pn_design_encode(const pn_design *d, const pn_table *t,
		     const size_t *rows, size_t n, double *x, pn_fault *f);
/* The encoded rows just classified (the same t, rows and n), without a
 * copy, when they are classifying's numbers as they stand: every feature
 * a number read from t, the design's columns in classifying's order, none
 * NA.  The caller owns the returned n x d->p matrix (what
 * pn_design_encode would write) and d keeps no numbers; NULL (d
 * unchanged) otherwise: encode. */
double *pn_design_take(pn_design *d, const pn_table *t, const size_t *rows,
		       size_t n);
void pn_design_free(pn_design *d);

/* The fitted target of rows[0..n): column col, its log (log), or the log
 * of its ratio to column base (base >= 0).  Fails on a value the
 * transform cannot take (see above), naming --relative where it applies,
 * and on an NA target of a failed row (a status column other than "ok")
 * with a word on --skip-failed. */
int pn_design_target(const pn_table *t, const size_t *rows, size_t n,
		     int col, int log, int base, double *y, pn_fault *f);

/* --log-features: the floor of each of the p features of x (n rows), 0
 * for a feature kept linear (a categorical one or one with a negative
 * value). */
void pn_design_log_floors(const pn_design *d, const double *x, size_t n,
			  double *floor);
/* x[:, j] = ln(max(x, floor[j])) where floor[j] > 0. */
void pn_design_log_apply(double *x, size_t n, size_t p,
			 const double *floor);

/* The model's features feat[0..d->p): names, kinds and floors (floor may
 * be NULL), mean 0 and sd 1. */
void pn_design_features(const pn_design *d, const double *floor,
			pn_feature *feat);
/* Set the mean and sd of each numeric feature from x (n x p) when want
 * (the family wants scaling). */
void pn_design_scaling(const double *x, size_t n, size_t p, int want,
		       pn_feature *feat);
/* x scaled by feat, in a new n x p matrix. */
double *pn_design_scale(const double *x, size_t n, size_t p,
			const pn_feature *feat);

/* ---- prediction ------------------------------------------------------- */

/* The family's input for one feature of a row: v is the column's number,
 * or for a categorical feature 1 when the row has its value, else 0. */
static inline double pn_feature_input(const pn_feature *f, double v)
{
	if (f->log)
		v = log(v > f->floor ? v : f->floor);
	return (v - f->mean) / f->sd;
}

/* The prediction in the target's units from the family's output y: y,
 * exp(y), or base * exp(y) (logratio). */
static inline double pn_target_value(const pn_model *m, double y,
				     double base)
{
	return m->base ? base * exp(y) : m->log ? exp(y) : y;
}

#endif
