/* layer.h - the layer contract: which layer types pn knows, the columns that
 * describe each one, the names of every enumerated column, the one reader
 * and the one writer of layer rows, and the work a layer does.
 *
 * Everything here is read from the tables in layer.c (one table per
 * concept, in the way GNU datamash's op-defs.c keeps its operations): no
 * tool or pipeline spells a layer type, an optimizer or a precision again.
 *
 * A layer TSV row has a `layer` column naming its type and the dimension
 * columns of that type (names below).  Columns that do not apply to a row's
 * type may be absent, empty or NA; their fields in pn_layer stay 0.
 * Configuration columns (dimensions plus op, bias, activation, precision,
 * pass, optimizer) identify a configuration independently of the device it
 * was measured on.
 *
 *   type         dimension columns                          bias act. weights
 *   dense        batch in_features out_features             yes  yes  yes
 *   bmm          batch m n k  ((batch x m x n) @ (n x k))
 *   conv2d       batch in_channels out_channels             yes  yes  yes
 *                kernel image stride padding
 *   attention    batch seq_len embed_dim heads                        yes
 *   embedding    batch seq_len vocab embed_dim                        yes
 *   rnn lstm gru batch seq_len input_size hidden                 yes  yes
 *                layers bidirectional
 *   layernorm    batch seq_len dim                                    yes
 *   softmax      batch seq_len dim
 *   elementwise  op batch seq_len dim   (op: add sub mul div pow; addu subu
 *                mulu divu powu with a scalar; relu gelu tanh sigmoid exp
 *                neg copy dropout; gated silu_mul gelu_mul)
 *                A gated op is a gated MLP's activation, one fused kernel
 *                (Vidur's SiluAndMul, GeGLU's gelu and mul): y = act(x1)
 *                * x2 where x1 and x2 are the two halves of its input
 *                [B S 2 dim]; it reads 2 dim and writes dim a token, as a
 *                two-tensor op does, and dim is its output's width.
 *   posenc       batch seq_len embed_dim
 *   mem          elements   (a pure memory pass, such as a copy, view
 *                materialisation or dropout mask: elements read plus
 *                elements written; no arithmetic)
 *   batchnorm    batch in_channels image                              yes
 *                (2-d batch norm in training: statistics over batch and
 *                the image x image pixels of each of the in_channels
 *                channels; weights: a scale and a shift a channel)
 *   pool         op batch in_channels image kernel stride padding
 *                (op: max avg; 2-d pooling of each channel, conv2d's
 *                columns and output side, pn_conv_out; a global pooling
 *                has kernel = image; padding at most kernel / 2)
 *   xent         batch seq_len dim
 *                (the cross-entropy loss of batch x seq_len tokens over
 *                dim classes, class-index targets, mean: log-softmax then
 *                the negative log-likelihood, as PyTorch's cross_entropy
 *                runs it; its backward writes the likelihood's gradient,
 *                dim a token, then the log-softmax's)
 *
 * Every dimension is a whole number of at least 1 (padding and
 * bidirectional: at least 0; bidirectional and bias: 0 or 1).  seq_len has
 * no default: the ten types that have it require it, and the others
 * (dense bmm conv2d mem batchnorm pool) leave it 0.  The types that take
 * an op (elementwise, pool) require the op column.
 *
 * Common columns, all optional:
 *   bias        0 or 1; default 1 for types with a bias (dense, conv2d),
 *               else 0
 *   activation  none relu tanh sigmoid (default none)
 *   precision   fp32 tf32 fp16 bf16 (default fp32; 4 4 2 2 bytes)
 *   pass        fwd or train (default fwd)
 *   optimizer   none sgd adam adagrad adadelta rmsprop (default none;
 *               any other only on a row of pass train)
 *   input_grad  0 or 1 (default 1): whether a train row computes the
 *               gradient of its input.  0 on the layer that reads a
 *               network's data, whose input needs no gradient (PyTorch
 *               computes none: the data does not require grad): the row's
 *               backward is its weights' gradient only, no input-gradient
 *               product (dense: dX = dY W; conv2d: its backward-data).
 *               Only types whose def has input_grad (dense, conv2d) take
 *               0; a fwd row ignores it.  No writer puts the column
 *               unless asked (PN_LC_INPUT_GRAD), so files without it read
 *               and write as before.
 *   dropout     the rate of the dropout mask the layer draws, in [0, 1)
 *               (attention: on its probabilities; rnn lstm gru: between
 *               stacked layers; elementwise op dropout: its rate): 0
 *               when absent or NA, 0.5 on an elementwise row.  Read on
 *               every type (a type without a mask keeps the number and
 *               ignores it); written only with PN_LC_TRAINING, or in a
 *               network with PN_LC_DROPOUT on the rows that draw a
 *               mask (pn_layer_masks).
 * config.h adds the training column learning_rate.
 */
#ifndef PN_LAYER_H
#define PN_LAYER_H

#include <stddef.h>
#include <stdio.h>

#include "tsv.h"

typedef enum {
	PN_DENSE, PN_BMM, PN_CONV2D, PN_ATTENTION, PN_EMBEDDING, PN_RNN,
	PN_LSTM, PN_GRU, PN_LAYERNORM, PN_SOFTMAX, PN_ELEMENTWISE, PN_POSENC,
	PN_MEM, PN_BATCHNORM, PN_POOL, PN_XENT, PN_NLAYERS
} pn_layer_type;

/* One layer type of the table above. */
typedef struct {
	const char *name;              /* "dense" ... */
	const char *const *dims;       /* its dimension columns, NULL-ended */
	unsigned char bias;            /* has a bias (default 1) */
	unsigned char activation;      /* has an activation column */
	unsigned char weights;         /* has trainable weights: rows of a
					  network take its optimizer */
	unsigned char dropout;         /* takes a dropout column (config.h) */
	unsigned char vector;          /* a vector op over the last
					  dimension dim (layernorm softmax
					  elementwise xent): pn-featurize's
					  vec_tail */
	const char *const *ops;        /* the values of its required op
					  column, NULL-ended; NULL: the type
					  takes no op (its op is its name) */
	unsigned char input_grad;      /* its train rows may skip the input's
					  gradient (column input_grad 0) */
} pn_layer_def;

extern const pn_layer_def pn_layer_defs[PN_NLAYERS];

/* Name of a type ("dense"...), and the type of a name (-1 if unknown). */
const char *pn_layer_name(pn_layer_type t);
int pn_layer_type_of(const char *name);
/* Every type name, NULL-terminated. */
extern const char *const pn_layer_names[PN_NLAYERS + 1];

/* NULL-terminated list of the dimension columns type t requires. */
const char *const *pn_layer_dims(pn_layer_type t);

/* 1 when type t works on batch x seq_len rows of dim elements alike,
 * whatever their split: the vector types (elementwise, layernorm,
 * softmax, xent: their work and kernels see the rows, pn_layer_work's
 * formulas the product), so that a row of batch B and seq_len S is the
 * row of batch B x S and seq_len 1; else 0.  -1 (no type) gives 0. */
int pn_layer_rowwise(int t);

/* True when name is a configuration column (see above): the columns that
 * identify a configuration whatever device measured it. */
int pn_layer_is_config_col(const char *name);

/* ---- enumerated columns ----------------------------------------------- */

typedef enum { PN_FP32, PN_TF32, PN_FP16, PN_BF16, PN_NPREC } pn_prec;
enum { PN_PASS_FWD, PN_PASS_TRAIN, PN_NPASS };
enum { PN_OPT_NONE, PN_OPT_SGD, PN_OPT_ADAM, PN_OPT_ADAGRAD, PN_OPT_ADADELTA,
       PN_OPT_RMSPROP, PN_NOPT };
enum { PN_ACT_NONE, PN_ACT_RELU, PN_ACT_TANH, PN_ACT_SIGMOID, PN_NACT };

/* The names of each enumeration, indexed by its values, NULL-terminated. */
extern const char *const pn_prec_names[PN_NPREC + 1];
extern const char *const pn_pass_names[PN_NPASS + 1];
extern const char *const pn_opt_names[PN_NOPT + 1];
extern const char *const pn_act_names[PN_NACT + 1];

/* Index of s in a NULL-terminated list, or -1. */
int pn_name_index(const char *const *list, const char *s);
/* Write the list as "a, b, c" into buf (size n, truncated); returns buf. */
char *pn_name_list(const char *const *list, char *buf, size_t n);

/* Name of a value ("?" when out of range), and value of a name (-1 when
 * unknown). */
const char *pn_prec_name(pn_prec p);
int pn_prec_of(const char *name);
const char *pn_opt_name(int opt);
int pn_opt_of(const char *name);
const char *pn_act_name(int act);
int pn_act_of(const char *name);
/* Bytes per element of a precision: 4 for fp32 and tf32, 2 for fp16, bf16. */
int pn_prec_bytes(pn_prec p);

/* NULL-terminated list of the elementwise ops (pn_layer_defs' ops of
 * elementwise), and whether an op reads two
 * tensors (add sub mul div pow, and the gated ops' two halves) rather
 * than one (with a scalar: the ...u ops; or none); whether it is a gated
 * op (silu_mul gelu_mul: act(x1) * x2 in one kernel). */
const char *const *pn_elem_ops(void);
int pn_elem_binary(const char *op);
/* The op of a two-tensor op op (add sub mul div pow) whose second tensor
 * is one number: addu subu mulu divu powu; NULL for any other op. */
const char *pn_elem_with_scalar(const char *op);
int pn_elem_gated(const char *op);
/* Whether op's backward passes the output's gradient on as its inputs'
 * (add addu subu copy): a train row runs no backward kernel for it, as
 * autograd does not (pn-time's CPU backend neither). */
int pn_elem_passes_grad(const char *op);

/* ---- NeuSight's operators --------------------------------------------- */

/* NeuSight names its operators in two places: per-op measurements (CSV
 * column OPName: linear bmm conv ln softmax add ...; pn-import) and op
 * graphs (kinds Linear BMM MEM VECln VECsoftmax VECadd ...; pn-graph).
 * One row per operator: its name in each (NULL where it has none), the
 * layer type and, for elementwise, pn's op. */
typedef struct {
	const char *opname;     /* in per-op data */
	const char *kind;       /* in graphs */
	pn_layer_type type;
	const char *op;         /* elementwise op, else NULL */
} pn_ns_op;

/* The operator of an OPName or a graph kind (len bytes, need not be
 * terminated); NULL when unknown. */
const pn_ns_op *pn_ns_opname(const char *opname);
const pn_ns_op *pn_ns_kind(const char *kind, size_t len);
/* "linear, bmm, ..." (graph 0) or "Linear, BMM, ..." (graph 1) into buf. */
char *pn_ns_list(int graph, char *buf, size_t n);

/* ---- one layer configuration ------------------------------------------ */

/* One layer configuration.  Dimensions that do not apply stay 0. */
typedef struct {
	pn_layer_type type;
	char op[16];            /* elementwise op; else the type name */
	double batch, seq_len, dim, in_features, out_features, m, n, k,
		in_channels, out_channels, kernel, image, stride, padding,
		embed_dim, heads, vocab, input_size, hidden, layers,
		bidirectional, bias, activation, elements;
	pn_prec prec;           /* its precision (0: fp32), which picks
				   the unit it runs on (roofline.h) */
	int bytes;              /* bytes per element of the precision:
				   pn_prec_bytes(prec) */
	int train;              /* pass: 0 fwd, 1 train (fwd + bwd + opt) */
	int optimizer;          /* PN_OPT_* */
	int no_input_grad;      /* column input_grad 0: a train row skips
				   its input's gradient (0, the default:
				   computes it) */
	double dropout;         /* column dropout (above) */
} pn_layer;

/* The elements of an elementwise row l: batch x seq_len x dim. */
double pn_elem_count(const pn_layer *l);

/* Gates of a recurrent cell: 1 rnn, 4 lstm, 3 gru. */
int pn_rnn_gates(pn_layer_type t);

/* The weights of a recurrent row l (rnn lstm gru), elements: for each
 * layer and direction, each gate's input x hidden and hidden x hidden
 * matrices and its two biases, the first layer's input input_size, the
 * others' hidden x directions.  In closed form: constant time whatever
 * its layers column says. */
double pn_rnn_weights(const pn_layer *l);

/* Set the dimension column name of l to v (also "bias"): 0, or -1 when
 * name is no dimension column.  pn_layer_get returns NAN for an unknown
 * name. */
int pn_layer_set(pn_layer *l, const char *name, double v);
double pn_layer_get(const pn_layer *l, const char *name);

/* NULL if l is possible, else a message such as "kernel 7 is larger than
 * the padded image 5". */
const char *pn_layer_check(const pn_layer *l, char *buf, size_t n);

/* Output side of a conv2d: floor((image + 2 padding - kernel) / stride) + 1. */
double pn_conv_out(const pn_layer *l);

/* ---- reading a layer row ---------------------------------------------- */

/* Column indices of the layer contract in one input; build once per file.
 * Dies (exit 1) when the input has no 'layer' column. */
typedef struct pn_layer_cols pn_layer_cols;
pn_layer_cols *pn_layer_cols_new(const pn_tsv *in);
void pn_layer_cols_free(pn_layer_cols *c);
/* Index of the 'layer' column. */
int pn_layer_cols_layer(const pn_layer_cols *c);

/* Why a row is not a layer. */
typedef struct {
	int col;                   /* the column at fault, -1: the row */
	char msg[200];             /* without file, line or column */
	const char *const *names;  /* an unknown name: the names allowed */
	int notwhole;              /* the field at col is no whole number
				      (msg: not a number, or not whole) */
} pn_layer_err;

/* Read the current row of in into l (and its precision into *prec when
 * prec is not NULL).  Returns 0, or -1 with e filled in; the messages:
 *   unknown layer type 'conv3d'                  (col: layer; names)
 *   missing column 'k' (needed by layer 'bmm')   (col -1)
 *   no value for layer 'bmm'                     (col: the dimension)
 *   'x' is not a number                          (col; notwhole)
 *   '1.5' is not a whole number                  (col; notwhole)
 *   batch must be at least 1, not 0              (col: the dimension)
 *   unknown elementwise op 'foo'                 (col: op; also pool)
 *   unknown value 'fp8'                          (col: precision; names)
 *   impossible conv2d: kernel 7 is larger than the padded image 6  (-1)
 *   impossible pool: padding 2 is more than half the kernel 3      (-1)
 *   input_grad must be 0 or 1, not 2                (col: input_grad)
 *   impossible softmax: input_grad 0 is for dense and conv2d only  (-1)
 *   'x' is not a number                             (col: dropout)
 *   1.5 is not in [0, 1)                            (col: dropout) */
int pn_layer_parse(const pn_tsv *in, const pn_layer_cols *c, pn_layer *l,
		   pn_prec *prec, pn_layer_err *e);

/* pn_layer_parse, dying on an error: "file:line: column 'x': message (one
 * of: names)". */
void pn_layer_read(const pn_tsv *in, const pn_layer_cols *c, pn_layer *l);

/* ---- writing a layer row ---------------------------------------------- */

/* The configuration columns other than the dimensions, in the order they
 * are written: op bias activation precision pass optimizer. */
extern const char *const pn_layer_attrs[];

enum {
	PN_LC_VECOP = 1,    /* op on every vector type, not only elementwise
			       (one header for layernorm softmax elementwise) */
	PN_LC_TRAINING = 2, /* the training columns of config.h: dropout
			       where it applies, learning_rate */
	PN_LC_INPUT_GRAD = 4, /* input_grad, after activation, on the types
				that take it */
	PN_LC_DROPOUT = 8   /* a network's dropout column (pn_network_put_row):
			       the rate of a dropout op or an attention's
			       probabilities, NA on the other rows */
};

/* The columns of a row of type t, in the contract's order: layer, op,
 * the dimensions, bias, activation, input_grad, dropout, precision, pass,
 * optimizer, learning_rate (each where it applies; flags PN_LC_*).
 * Returns how many were written to cols (at most 24). */
int pn_layer_columns(pn_layer_type t, int flags, const char **cols);

/* Whether l draws a dropout mask at its rate l->dropout: an elementwise
 * op dropout, an attention (on its probabilities), a recurrence of more
 * than one layer (between them). */
int pn_layer_masks(const pn_layer *l);

/* The value of column name of l, at precision prec, as written in a layer
 * row: type and enumerated names, numbers in their shortest form, NA for
 * a dimension (or bias) that its type does not have (pass:
 * train or fwd from l->train; input_grad: 0 or 1 from l->no_input_grad).  Returns buf (32 bytes) or a constant
 * string; NULL when name is no column of the contract. */
const char *pn_layer_field(const pn_layer *l, pn_prec prec, const char *name,
			   char *buf);

/* ---- work ------------------------------------------------------------- */

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
