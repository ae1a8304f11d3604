/* domain.h - what a model was fitted on, and whether a row lies inside it.
 *
 * pn-fit(1) records a model's domain in its "info" lines (model.h):
 *
 *   info layers dense               the values of each categorical
 *   info passes fwd                 dimension in the training rows,
 *   info precisions fp32            sorted, comma-separated ("NA": the
 *   info optimizers none            column was there but empty)
 *   info input_grads 0,1
 *   info devices T4,V100
 *   info range batch 1 64           per numeric feature of the model: the
 *   info range flops 2048 1.2e12    smallest and largest value of its
 *                                   column over the training rows, before
 *                                   --log-features and scaling
 *   info base-floor 4.9e-06         a logratio model (model.h): the
 *                                   smallest base of its training rows
 *                                   (pn-fit --no-base-floor: no line)
 *
 * A row is inside the domain when its layer type (for a "*" model), pass,
 * precision, optimizer and input_grad (layer.h: 0, a train row that skips
 * its input's gradient) are each among those recorded, and each numeric
 * feature lies in its range.  The device is not a dimension: an unseen GPU
 * is what pn predicts for, through its spec features (roofline_ms,
 * compute_ms, waves, ...), whose ranges are checked like any feature.
 *
 * Ranges are checked without a margin: no model here is known to be good
 * beyond its data, so the edge is the data's edge.  Only rounding is
 * forgiven (PN_DOMAIN_RTOL): a derived feature that pn-sum computes for a
 * training configuration must not fall out by its last bit.
 *
 * Older model files lack some lines.  A categorical dimension that is not
 * recorded is taken as its default value only (pass fwd, precision fp32,
 * optimizer none, input_grad 1: what a row without that column is), never
 * as "every value seen", so an old model never calls a train or adam row,
 * or a first layer's train row without its input's gradient, inside.  A
 * "*" model without a layers line, and a feature without a range line,
 * are not checked (nothing says what they saw);
 * pn_domain_has_ranges() tells the tools so they can say it.
 */
#ifndef PN_DOMAIN_H
#define PN_DOMAIN_H

#include <stddef.h>

#include "layer.h"
#include "model.h"

/* Ranges are widened by this fraction of their bounds' magnitude. */
#define PN_DOMAIN_RTOL 1e-9

/* The dimensions checked on the categorical side, in the order a verdict
 * names them. */
enum { PN_DOM_LAYER, PN_DOM_PASS, PN_DOM_PRECISION, PN_DOM_OPTIMIZER,
       PN_DOM_INPUT_GRAD, PN_DOM_NCAT };
/* Their column names ("layer" "pass" "precision" "optimizer" "input_grad"),
 * and their info keys ("layers" "passes" "precisions" "optimizers"
 * "input_grads"). */
extern const char *const pn_domain_cols[PN_DOM_NCAT + 1];
extern const char *const pn_domain_keys[PN_DOM_NCAT + 1];

/* A verdict's room: a longer one ends in "...". */
#define PN_DOMAIN_WHY 160

/* Parse m's info lines into its domain (m->domain), replacing any before;
 * modelset.c calls it on every model read, pn_fit_group on every model
 * fitted.  Never fails: an info line it cannot read (a range whose bounds
 * are not numbers, or of no feature of m) is left unchecked. */
void pn_domain_parse(pn_model *m);
void pn_domain_free(struct pn_domain *d);

/* 1 when every numeric feature of m has a recorded range, else 0 (a model
 * fitted before ranges were recorded). */
int pn_domain_has_ranges(const pn_model *m);

/* The recorded range of m's j-th feature in *lo and *hi: 1, or 0 when it
 * has none (a categorical feature, a model fitted before ranges). */
int pn_domain_range(const pn_model *m, size_t j, double *lo, double *hi);

/* m's base-floor: the smallest base of its logratio target (model.h:
 * transform logratio COL) over its training rows, or 0 when m has no such
 * line or is no logratio model.  A row whose base lies below it is
 * predicted with it (modelset.h): the model learned time / base only down
 * to there. */
double pn_domain_base_floor(const pn_model *m);

/* 1 when m saw value (as written in a layer row; NULL, "" or "NA": the
 * column's default) in categorical dimension k (PN_DOM_*), by the rules
 * above (no line for k: the default only; for PN_DOM_LAYER no line:
 * every type), else 0: the one reader of these lines, for the tools that
 * choose how to predict a row by what its model saw (pn-sum: whether a
 * train row's model saw such steps, a precision no model saw). */
int pn_domain_saw(const pn_model *m, int k, const char *value);

/* Whether a row is inside m's domain.  val[PN_DOM_*]: the row's layer
 * type, pass, precision, optimizer and input_grad as written in a layer
 * row (NULL, "" or "NA": the column's default; the layer is only checked
 * for a "*" model; input_grad only on a train row); feat: the row's value
 * of each of m's m->p features, before log and scaling (cat features are
 * ignored), or NULL to check no range.
 * Returns 0 inside (why = ""), or the number of dimensions outside, with
 * why (n bytes, at most PN_DOMAIN_WHY used) naming them in the order
 * layer, pass, precision, optimizer, input_grad, then features in the
 * model's order:
 *
 *   pass=train,optimizer=adam,batch>64,flops>1.2e+12
 *
 * (NAME=VALUE: a value never seen; NAME>MAX or NAME<MIN: a feature above
 * or below its range, with the bound in %g). */
int pn_domain_check_fields(const pn_model *m, const char *const *val,
			   const double *feat, char *why, size_t n);

/* A row of logratio model m whose base lies below floor (the
 * pn_domain_base_floor of the model that predicts it: m's, or its fold
 * model's): appends "BASE<FLOOR" to why (n bytes, a verdict of
 * pn_domain_check_fields) unless why names BASE below its range already
 * (a base that is a feature), and returns 1; else 0. */
int pn_domain_check_base(const pn_model *m, double floor, double base,
			 char *why, size_t n);

/* pn_domain_check_fields for a layer configuration l (its type, pass,
 * precision, optimizer and input_grad); the call the predicting code
 * makes per (sub)row. */
int pn_domain_check(const pn_model *m, const pn_layer *l, const double *feat,
		    char *why, size_t n);

#endif
