/* layer.h - the layer contract: which layer types pn knows, the columns that
 * describe each one, and the features derived from them.
 *
 * A layer TSV row has a `layer` column naming its type and the dimension
 * columns of that type (names below).  Columns that do not apply to a row's
 * type may be absent, empty or NA.  Configuration columns (dimensions plus
 * precision, pass, optimizer, activation, bias, op) identify a configuration
 * independently of the device it was measured on.
 *
 *   type         dimension columns
 *   dense        batch in_features out_features [bias activation]
 *   bmm          batch m n k                    (batch x m x n) @ (n x k)
 *   conv2d       batch in_channels out_channels kernel image stride padding
 *                [bias activation]
 *   attention    batch seq_len embed_dim heads
 *   embedding    batch seq_len vocab embed_dim
 *   rnn lstm gru batch seq_len input_size hidden layers bidirectional
 *   layernorm    batch seq_len dim
 *   softmax      batch seq_len dim
 *   elementwise  op batch seq_len dim           (op: add mul div pow, addu
 *                mulu divu powu with a scalar, relu gelu tanh sigmoid ...)
 *   posenc       batch seq_len embed_dim
 *   mem          elements                      (a pure memory pass, such as
 *                a copy, view materialisation or dropout mask: elements
 *                read plus elements written; no arithmetic)
 *
 * Common columns: precision (fp32 fp16 bf16 tf32; default fp32), pass (fwd or
 * train; default fwd), optimizer (none sgd adam adagrad adadelta rmsprop;
 * default none).
 */
#ifndef PN_LAYER_H
#define PN_LAYER_H

#include <stddef.h>

typedef enum {
	PN_DENSE, PN_BMM, PN_CONV2D, PN_ATTENTION, PN_EMBEDDING, PN_RNN,
	PN_LSTM, PN_GRU, PN_LAYERNORM, PN_SOFTMAX, PN_ELEMENTWISE, PN_POSENC,
	PN_MEM, PN_NLAYERS
} pn_layer_type;

/* Name of a type ("dense"...), and the type of a name (-1 if unknown). */
const char *pn_layer_name(pn_layer_type t);
int pn_layer_type_of(const char *name);

/* NULL-terminated list of the dimension columns type t requires. */
const char *const *pn_layer_dims(pn_layer_type t);

/* True when name is a configuration column (see above): the columns that
 * identify a configuration whatever device measured it. */
int pn_layer_is_config_col(const char *name);

/* ---- reading a layer row and deriving its work ------------------------ */

#include "tsv.h"

enum { PN_OPT_NONE, PN_OPT_SGD, PN_OPT_ADAM, PN_OPT_ADAGRAD, PN_OPT_ADADELTA,
       PN_OPT_RMSPROP, PN_NOPT };

/* One layer configuration.  Dimensions that do not apply stay 0. */
typedef struct {
	pn_layer_type type;
	char op[16];            /* elementwise op; else the type name */
	double batch, seq_len, dim, in_features, out_features, m, n, k,
		in_channels, out_channels, kernel, image, stride, padding,
		embed_dim, heads, vocab, input_size, hidden, layers,
		bidirectional, bias, activation, elements;
	int bytes;              /* bytes per element of the precision */
	int train;              /* pass: 0 fwd, 1 train (fwd + bwd + opt) */
	int optimizer;          /* PN_OPT_* */
} pn_layer;

/* Column indices of the layer contract in one input; build once per file. */
typedef struct pn_layer_cols pn_layer_cols;
pn_layer_cols *pn_layer_cols_new(const pn_tsv *in);
void pn_layer_cols_free(pn_layer_cols *c);

/* Read the current row of in into l.  Dies naming file, line and column on
 * an unknown layer type, a missing or non-numeric dimension, or an
 * impossible configuration (see pn_layer_check). */
void pn_layer_read(const pn_tsv *in, const pn_layer_cols *c, pn_layer *l);

/* NULL if l is possible, else a message such as "kernel 7 is larger than
 * the padded image 5". */
const char *pn_layer_check(const pn_layer *l, char *buf, size_t n);

/* The work a layer does, as pn-featurize(1) defines it (formulas there). */
typedef struct {
	double flops;      /* floating-point operations of the pass */
	double co;         /* PreNeT's CO (its eqs. 2-8; = flops where the
			      paper defines none) */
	double cm_weights, cm_in, cm_out, cm_total;   /* bytes */
	double traffic;    /* bytes moved to and from DRAM, estimated */
	double tiles;      /* independent work tiles of the largest kernel */
	int vector;        /* 1 when tiles are thread blocks of a vector op */
} pn_work;

void pn_layer_work(const pn_layer *l, pn_work *w);

#endif
