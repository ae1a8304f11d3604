/* modelset.h - whole model files, model sets, and prediction from TSV fields.
 *
 * A model file holds one model or several concatenated (a model set), in the
 * format of model.h.  Every model covers one layer type, or every type
 * ("layer *", a catch-all); a set holds at most one model per layer value.
 * Because a set is a plain concatenation, `cat a.model b.model` is a set.
 *
 * Reading is strict: any line out of place, a number that does not parse
 * (strict decimal, finite; see pn_parse_num), a version other than 1, or a
 * file cut anywhere inside a model (including a last line without its
 * newline) dies with exit 1 and
 *
 *   pn-x: FILE:LINE: corrupt model: <why>
 *   pn-x: FILE:LINE: unsupported model version 2 (this pn reads 1)
 *
 * A fold model (model.h) is attached to the model before it, which must be
 * of its layer ("fold model of layer 'x' does not follow that layer's
 * model"), one per device; ms->m holds only the others.
 *
 * A file cut exactly between two models of a set reads as the shorter set;
 * rows of the lost layer type then have no model (pn_predictor_push returns
 * -1), which pn-eval(1) reports as an error.
 */
#ifndef PN_MODELSET_H
#define PN_MODELSET_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"

/* (pn_model and its writer are declared in model.h.) */

typedef struct {
	int n;
	pn_model **m;
} pn_modelset;

/* Read every model of path ("-": standard input), plain or gzip (input.h:
 * told by its first bytes, never by its name; "FILE: truncated gzip
 * input", "FILE: corrupt gzip input: <why>").  Dies as above, and with
 * "FILE: no model" on an empty file; a missing file dies "FILE: <reason>". */
pn_modelset *pn_modelset_load(const char *path);
void pn_modelset_free(pn_modelset *ms);

/* The model for a layer value: the one named so, else the "*" model, else
 * NULL.  Never a fold model: those hang under their model (model.h). */
const pn_model *pn_modelset_find(const pn_modelset *ms, const char *layer);

/* The layers of the models of ms that record no range for some numeric
 * feature (domain.h: a file of an older pn-fit), "*" for a catch-all,
 * joined by ", " into buf (n bytes, truncated); returns their count. */
int pn_modelset_unranged(const pn_modelset *ms, char *buf, size_t n);
/* Say so on standard error, once: "FILE: the models of layers a, b record
 * no feature ranges (an older pn-fit): their rows are not checked for
 * range (refit them)"; nothing when every model has its ranges. */
void pn_modelset_warn_unranged(const pn_modelset *ms, const char *file);

/* Every family, NULL-terminated, in the order lr rf gbdt xgb mlp. */
const pn_family *const *pn_family_all(void);

/* ---- prediction ------------------------------------------------------- */

/* Predicts rows given as TSV fields.  Rows are queued with
 * pn_predictor_push() and predicted together by pn_predictor_flush(), one
 * family->predict call per model, so that fast families stay fast; queue a
 * few thousand rows at a time. */
typedef struct pn_predictor pn_predictor;

/* A predictor for rows whose columns are colnames[0..ncols).  Columns are
 * matched to each model's features here; a model whose columns are absent
 * can still be built, and fails only when a row of its layer is pushed
 * (so a set covering many layer types applies to a file of one type). */
pn_predictor *pn_predictor_new(const pn_modelset *ms, int ncols,
			       const char *const *colnames);
void pn_predictor_free(pn_predictor *p);

/* Queue one row: fields are its values in colnames order (lens their
 * lengths, or NULL to use strlen), layer its layer value (NULL when the
 * input has no layer column: only a "*" model applies).  The fields are
 * read now and need not outlive the call.  Returns
 *    0  queued;
 *   -1  no model covers this layer (nothing queued);
 *   -2  the row cannot be predicted (nothing queued); pn_predictor_error()
 *       says why: "missing column 'k' needed by the conv2d model",
 *       "column 'k': value is NA", "column 'k': 'x' is not a number".
 * A row of a row-wise layer (layer.h's pn_layer_rowwise) whose model saw
 * seq_len 1 alone (its batch and seq_len features; the seq_len range 1 1)
 * is read as batch x seq_len rows and seq_len 1, its domain too. */
int pn_predictor_push(pn_predictor *p, const char *layer,
		      const char *const *fields, const size_t *lens);
/* pn_predictor_push, the row predicted by the fold model (model.h) of its
 * layer's model that left out device (NULL: by the model itself, as
 * pn_predictor_push), which never saw the row's device (pn-fit --logo
 * --keep-folds).  Returns -1 and -2 as pn_predictor_push, and -3 when the
 * model has no such fold: "the dense model has no fold model without device
 * 'T4' (fit it with pn-fit --logo --keep-folds)". */
int pn_predictor_push_fold(pn_predictor *p, const char *layer,
			   const char *device, const char *const *fields,
			   const size_t *lens);
/* pn_predictor_push with some columns given as numbers: where num[c] is
 * not NaN it is column c's value, and fields[c] is not read (a caller that
 * computed its values need not format them, for them to be parsed back);
 * a NaN reads fields[c] as pn_predictor_push does.  num NULL: all fields. */
int pn_predictor_push_num(pn_predictor *p, const char *layer,
			  const char *const *fields, const size_t *lens,
			  const double *num);
/* Rows queued and not yet flushed. */
size_t pn_predictor_pending(const pn_predictor *p);
/* Predict every queued row into out[0..pending), in the order pushed, in the
 * target's units (the log transform undone; logratio: times the row's base
 * column, or the smallest base of the model's training rows where the row's
 * is smaller, pn_domain_base_floor: a ratio learned down to that base says
 * nothing of a smaller op's, which would otherwise be predicted as fast as
 * its base shrinks, to nanoseconds for an op of two elements, where every
 * measured op has a launch and dispatch floor; the row's domain verdict
 * names the base below its range), and empty the queue. */
void pn_predictor_flush(pn_predictor *p, double *out);
/* pn_predictor_flush, and also the model that predicted each row into
 * which[0..pending). */
void pn_predictor_flush_models(pn_predictor *p, double *out,
			       const pn_model **which);
/* The domain verdict (domain.h) of the r-th row of the last flush: "" when
 * the row lies inside what its model (a fold model: its main model) was
 * fitted on, else the dimensions outside, "pass=train,batch>64".  The
 * row's layer is the one pushed, its pass, precision and optimizer the
 * columns of those names (absent: their defaults), its ranges the values
 * of the model's numeric features.  Valid until the next push. */
const char *pn_predictor_domain(const pn_predictor *p, size_t r);
/* The reason for the last -2 (or -1: "no model for layer 'x'"). */
const char *pn_predictor_error(const pn_predictor *p);

/* One row at once: push and flush (slow for many rows; the queue must be
 * empty).  Returns 0 and sets *out, or -1 / -2 as pn_predictor_push. */
int pn_predictor_predict(pn_predictor *p, const char *layer,
			 const char *const *fields, double *out);

/* ---- the reader behind pn_mreader, for model files --------------------- */

/* Open path ("-" or NULL: standard input, named "-") through input.h, so
 * gzip is inflated; dies as pn_input_open.  Free closes it. */
pn_mreader *pn_mreader_open(const char *path);
void pn_mreader_free(pn_mreader *r);
/* The next line without its newline (modifiable, valid until the next
 * read), or NULL at end of file; dies on a line without newline. */
char *pn_mread_raw(pn_mreader *r);
/* Whether pn_mread_line has returned the "end" of the current body, and
 * clearing that flag before the next body. */
int pn_mread_at_end(const pn_mreader *r);
void pn_mread_begin(pn_mreader *r);
/* The line last read. */
long pn_mread_lineno(const pn_mreader *r);

#endif
