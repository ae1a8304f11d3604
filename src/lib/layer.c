#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "layer.h"
#include "opt.h"

/* ---- the tables -------------------------------------------------------- */

static const char *const d_dense[] = {"batch", "in_features", "out_features", 0};
static const char *const d_bmm[] = {"batch", "m", "n", "k", 0};
static const char *const d_conv[] = {"batch", "in_channels", "out_channels",
	"kernel", "image", "stride", "padding", 0};
static const char *const d_attn[] = {"batch", "seq_len", "embed_dim", "heads", 0};
static const char *const d_emb[] = {"batch", "seq_len", "vocab", "embed_dim", 0};
static const char *const d_rnn[] = {"batch", "seq_len", "input_size", "hidden",
	"layers", "bidirectional", 0};
static const char *const d_vec[] = {"batch", "seq_len", "dim", 0};
static const char *const d_elem[] = {"op", "batch", "seq_len", "dim", 0};
static const char *const d_pos[] = {"batch", "seq_len", "embed_dim", 0};
static const char *const d_mem[] = {"elements", 0};
static const char *const d_bn[] = {"batch", "in_channels", "image", 0};
static const char *const d_pool[] = {"op", "batch", "in_channels", "image",
	"kernel", "stride", "padding", 0};

/* Elementwise ops; the first five read two tensors, and so do the gated
 * ones from NGATED on (the two halves of their input). */
static const char *const elemops[] = {
	"add", "sub", "mul", "div", "pow", "addu", "subu", "mulu", "divu",
	"powu", "relu", "gelu", "tanh", "sigmoid", "exp", "neg", "copy",
	"dropout", "silu_mul", "gelu_mul", 0
};
enum { NBINARY = 5, NGATED = 18 };
/* Pooling ops (pn_layer_defs' ops of pool). */
static const char *const poolops[] = {"max", "avg", 0};

/* name, dims, bias, activation, weights, dropout, vector, ops, input_grad */
const pn_layer_def pn_layer_defs[PN_NLAYERS] = {
	[PN_DENSE] = {"dense", d_dense, 1, 1, 1, 0, 0, NULL, 1},
	[PN_BMM] = {"bmm", d_bmm, 0, 0, 0, 0, 0},
	[PN_CONV2D] = {"conv2d", d_conv, 1, 1, 1, 0, 0, NULL, 1},
	[PN_ATTENTION] = {"attention", d_attn, 0, 0, 1, 1, 0},
	[PN_EMBEDDING] = {"embedding", d_emb, 0, 0, 1, 0, 0},
	[PN_RNN] = {"rnn", d_rnn, 0, 1, 1, 1, 0},
	[PN_LSTM] = {"lstm", d_rnn, 0, 1, 1, 1, 0},
	[PN_GRU] = {"gru", d_rnn, 0, 1, 1, 1, 0},
	[PN_LAYERNORM] = {"layernorm", d_vec, 0, 0, 1, 0, 1},
	[PN_SOFTMAX] = {"softmax", d_vec, 0, 0, 0, 0, 1},
	[PN_ELEMENTWISE] = {"elementwise", d_elem, 0, 0, 0, 1, 1, elemops},
	[PN_POSENC] = {"posenc", d_pos, 0, 0, 0, 0, 0},
	[PN_MEM] = {"mem", d_mem, 0, 0, 0, 0, 0},
	[PN_BATCHNORM] = {"batchnorm", d_bn, 0, 0, 1, 0, 0},
	[PN_POOL] = {"pool", d_pool, 0, 0, 0, 0, 0, poolops},
	[PN_XENT] = {"xent", d_vec, 0, 0, 0, 0, 1},
};

const char *const pn_layer_names[PN_NLAYERS + 1] = {
	"dense", "bmm", "conv2d", "attention", "embedding", "rnn", "lstm",
	"gru", "layernorm", "softmax", "elementwise", "posenc", "mem",
	"batchnorm", "pool", "xent", 0
};

const char *const pn_prec_names[PN_NPREC + 1] = {"fp32", "tf32", "fp16", "bf16", 0};
static const int prec_bytes[PN_NPREC] = {4, 4, 2, 2};
const char *const pn_pass_names[PN_NPASS + 1] = {"fwd", "train", 0};
const char *const pn_opt_names[PN_NOPT + 1] = {
	"none", "sgd", "adam", "adagrad", "adadelta", "rmsprop", 0
};
const char *const pn_act_names[PN_NACT + 1] = {"none", "relu", "tanh", "sigmoid", 0};


const char *const pn_layer_attrs[] = {
	"op", "bias", "activation", "precision", "pass", "optimizer", 0
};

/* Every numeric column of pn_layer, with its place and smallest value. */
static const struct {
	const char *name;
	size_t off;
	double min;
} numdims[] = {
#define D(f, lo) {#f, offsetof(pn_layer, f), lo}
	D(batch, 1), D(seq_len, 1), D(dim, 1), D(in_features, 1),
	D(out_features, 1), D(m, 1), D(n, 1), D(k, 1), D(in_channels, 1),
	D(out_channels, 1), D(kernel, 1), D(image, 1), D(stride, 1),
	D(padding, 0), D(embed_dim, 1), D(heads, 1), D(vocab, 1),
	D(input_size, 1), D(hidden, 1), D(layers, 1), D(bidirectional, 0),
	D(elements, 1), D(bias, 0),
#undef D
};
#define NNUM (sizeof numdims / sizeof numdims[0])
#define NDIMS (NNUM - 1)     /* every numeric column but bias */

/* NeuSight's operators: OPName of per-op data, kind of graphs. */
static const pn_ns_op ns_ops[] = {
	{"linear", "Linear", PN_DENSE, NULL},
	{"bmm", "BMM", PN_BMM, NULL},
	{"conv", NULL, PN_CONV2D, NULL},
	{NULL, "MEM", PN_MEM, NULL},
	{"ln", "VECln", PN_LAYERNORM, NULL},
	{"softmax", "VECsoftmax", PN_SOFTMAX, NULL},
#define E(data, op) {data, "VEC" op, PN_ELEMENTWISE, op}
	E("add", "add"), E("addu", "addu"), E(NULL, "sub"), E(NULL, "subu"),
	E("mul", "mul"), E("mulu", "mulu"), E("div", "div"), E("divu", "divu"),
	E("pow", "pow"), E("powu", "powu"), E("relu", "relu"),
	E("gelu", "gelu"), E("tanh", "tanh"), E(NULL, "sigmoid"),
#undef E
};
#define NS_NOPS (sizeof ns_ops / sizeof ns_ops[0])

/* ---- names ------------------------------------------------------------- */

int pn_name_index(const char *const *list, const char *s)
{
	for (int i = 0; list[i]; i++)
		if (strcmp(list[i], s) == 0)
			return i;
	return -1;
}

char *pn_name_list(const char *const *list, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; list[i] && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s",
					i ? ", " : "", list[i]);
	return buf;
}

const char *pn_layer_name(pn_layer_type t)
{
	return (unsigned)t < PN_NLAYERS ? pn_layer_names[t] : "?";
}

int pn_layer_type_of(const char *name)
{
	return pn_name_index(pn_layer_names, name);
}

const char *const *pn_layer_dims(pn_layer_type t)
{
	return pn_layer_defs[t].dims;
}

int pn_layer_rowwise(int t)
{
	return t >= 0 && t < PN_NLAYERS && pn_layer_defs[t].vector;
}

const char *pn_prec_name(pn_prec p)
{
	return (unsigned)p < PN_NPREC ? pn_prec_names[p] : "?";
}

int pn_prec_of(const char *name) { return pn_name_index(pn_prec_names, name); }

int pn_prec_bytes(pn_prec p)
{
	return (unsigned)p < PN_NPREC ? prec_bytes[p] : 0;
}

const char *pn_opt_name(int o)
{
	return (unsigned)o < PN_NOPT ? pn_opt_names[o] : "?";
}

int pn_opt_of(const char *name) { return pn_name_index(pn_opt_names, name); }

const char *pn_act_name(int a)
{
	return (unsigned)a < PN_NACT ? pn_act_names[a] : "?";
}

int pn_act_of(const char *name) { return pn_name_index(pn_act_names, name); }

const char *const *pn_elem_ops(void) { return elemops; }

int pn_elem_binary(const char *op)
{
	int i = pn_name_index(elemops, op);
	return (i >= 0 && i < NBINARY) || i >= NGATED;
}

const char *pn_elem_with_scalar(const char *op)
{
	int i = pn_name_index(elemops, op);
	return i >= 0 && i < NBINARY ? elemops[i + NBINARY] : NULL;
}

int pn_elem_gated(const char *op)
{
	return pn_name_index(elemops, op) >= NGATED;
}

double pn_elem_count(const pn_layer *l)
{
	return l->batch * l->seq_len * l->dim;
}

int pn_rnn_gates(pn_layer_type t)
{
	return t == PN_LSTM ? 4 : t == PN_GRU ? 3 : 1;
}

double pn_rnn_weights(const pn_layer *l)
{
	double g = pn_rnn_gates(l->type), H = l->hidden, I = l->input_size;
	double d = l->bidirectional ? 2 : 1;
	return d * g * ((I * H + H * H + 2 * H) +
			(l->layers - 1) * (d * H * H + H * H + 2 * H));
}

int pn_elem_passes_grad(const char *op)
{
	static const char *const pass[] = {"add", "addu", "subu", "copy", 0};
	return pn_name_index(pass, op) >= 0;
}

static int needs(pn_layer_type t, const char *name)
{
	return pn_name_index(pn_layer_defs[t].dims, name) >= 0;
}

int pn_layer_is_config_col(const char *name)
{
	if (strcmp(name, "layer") == 0 || strcmp(name, "input_grad") == 0 ||
	    pn_name_index(pn_layer_attrs, name) >= 0)
		return 1;
	for (int t = 0; t < PN_NLAYERS; t++)
		if (needs((pn_layer_type)t, name))
			return 1;
	return 0;
}

const pn_ns_op *pn_ns_opname(const char *opname)
{
	for (size_t i = 0; i < NS_NOPS; i++)
		if (ns_ops[i].opname && strcmp(ns_ops[i].opname, opname) == 0)
			return &ns_ops[i];
	return NULL;
}

const pn_ns_op *pn_ns_kind(const char *kind, size_t len)
{
	for (size_t i = 0; i < NS_NOPS; i++)
		if (ns_ops[i].kind && strlen(ns_ops[i].kind) == len &&
		    memcmp(ns_ops[i].kind, kind, len) == 0)
			return &ns_ops[i];
	return NULL;
}

char *pn_ns_list(int graph, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < NS_NOPS && len < n; i++) {
		const char *s = graph ? ns_ops[i].kind : ns_ops[i].opname;
		if (s)
			len += (size_t)snprintf(buf + len, n - len, "%s%s",
						len ? ", " : "", s);
	}
	return buf;
}

/* ---- fields ------------------------------------------------------------ */

static int numdim(const char *name)
{
	for (size_t i = 0; i < NNUM; i++)
		if (strcmp(numdims[i].name, name) == 0)
			return (int)i;
	return -1;
}

int pn_layer_set(pn_layer *l, const char *name, double v)
{
	int i = numdim(name);
	if (i < 0)
		return -1;
	*(double *)((char *)l + numdims[i].off) = v;
	return 0;
}

double pn_layer_get(const pn_layer *l, const char *name)
{
	int i = numdim(name);
	return i < 0 ? NAN : *(const double *)((const char *)l +
					       numdims[i].off);
}

double pn_conv_out(const pn_layer *l)
{
	return floor((l->image + 2 * l->padding - l->kernel) / l->stride) + 1;
}

const char *pn_layer_check(const pn_layer *l, char *buf, size_t n)
{
	switch (l->type) {
	case PN_CONV2D: case PN_POOL:
		if (l->kernel > l->image + 2 * l->padding) {
			snprintf(buf, n, "kernel %g is larger than the padded "
				 "image %g", l->kernel,
				 l->image + 2 * l->padding);
			return buf;
		}
		if (l->type == PN_POOL && 2 * l->padding > l->kernel) {
			/* as PyTorch refuses it */
			snprintf(buf, n, "padding %g is more than half the "
				 "kernel %g", l->padding, l->kernel);
			return buf;
		}
		if (2 * l->padding >= l->kernel + l->image) {
			snprintf(buf, n, "padding %g leaves no input pixel",
				 l->padding);
			return buf;
		}
		break;
	case PN_ATTENTION:
		if (fmod(l->embed_dim, l->heads) != 0) {
			snprintf(buf, n, "embed_dim %g is not divisible by "
				 "heads %g", l->embed_dim, l->heads);
			return buf;
		}
		break;
	case PN_RNN: case PN_LSTM: case PN_GRU:
		if (l->bidirectional > 1) {
			snprintf(buf, n, "bidirectional must be 0 or 1, not %g",
				 l->bidirectional);
			return buf;
		}
		break;
	default:
		break;
	}
	if (l->bias != 0 && l->bias != 1) {
		snprintf(buf, n, "bias must be 0 or 1, not %g", l->bias);
		return buf;
	}
	if (l->no_input_grad && !pn_layer_defs[l->type].input_grad) {
		snprintf(buf, n, "input_grad 0 is for dense and conv2d only");
		return buf;
	}
	return NULL;
}

/* ---- reading ----------------------------------------------------------- */

struct pn_layer_cols {
	int layer, op, precision, pass, optimizer, activation, input_grad;
	int dropout;
	int num[NNUM];
};

pn_layer_cols *pn_layer_cols_new(const pn_tsv *in)
{
	pn_layer_cols *c = pn_xcalloc(1, sizeof *c);
	c->layer = pn_tsv_col(in, "layer");
	c->op = pn_tsv_find(in, "op");
	c->precision = pn_tsv_find(in, "precision");
	c->pass = pn_tsv_find(in, "pass");
	c->optimizer = pn_tsv_find(in, "optimizer");
	c->activation = pn_tsv_find(in, "activation");
	c->input_grad = pn_tsv_find(in, "input_grad");
	c->dropout = pn_tsv_find(in, "dropout");
	for (size_t i = 0; i < NNUM; i++)
		c->num[i] = pn_tsv_find(in, numdims[i].name);
	return c;
}

void pn_layer_cols_free(pn_layer_cols *c)
{
	free(c);
}

int pn_layer_cols_layer(const pn_layer_cols *c)
{
	return c->layer;
}

static __attribute__((format(printf, 4, 5)))
int fail(pn_layer_err *e, int col, const char *const *names,
	 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	e->col = col;
	e->names = names;
	return -1;
}

/* A whole number (|v| < 2^53) into *v, by opt.h's one rule; a message in
 * its words (pn_whole_msg), as pn_tsv_int would die with. */
static int whole(const pn_tsv *in, int col, double *v, pn_layer_err *e)
{
	const char *s = pn_tsv_str(in, col);
	size_t n = pn_tsv_len(in, col);
	long long w;
	int rc = pn_parse_whole(s, n, -PN_WHOLE_MAX, PN_WHOLE_MAX, &w);
	if (rc == PN_NUM_OK) {
		*v = (double)w;
		return 0;
	}
	char msg[128];
	e->notwhole = 1;
	return fail(e, col, NULL, "%s", pn_whole_msg(msg, sizeof msg, rc, s, n,
		    -PN_WHOLE_MAX, PN_WHOLE_MAX));
}

/* Optional enumerated column: dflt when absent or NA. */
static int read_enum(const pn_tsv *in, int col, const char *const *list,
		     int dflt, int *v, pn_layer_err *e)
{
	*v = dflt;
	if (col < 0 || pn_tsv_na(in, col))
		return 0;
	if ((*v = pn_name_index(list, pn_tsv_str(in, col))) >= 0)
		return 0;
	return fail(e, col, list, "unknown value '%s'", pn_tsv_str(in, col));
}

/* The optional input_grad column (0 or 1, default 1) into
 * l->no_input_grad. */
static int read_input_grad(const pn_tsv *in, int col, pn_layer *l,
			   pn_layer_err *e)
{
	double v = 1;
	if (col < 0 || pn_tsv_na(in, col))
		return 0;
	if (whole(in, col, &v, e) != 0)
		return -1;
	if (v != 0 && v != 1)
		return fail(e, col, NULL, "input_grad must be 0 or 1, not %g",
			    v);
	l->no_input_grad = v == 0;
	return 0;
}

/* The optional dropout column into l->dropout (layer.h). */
static int read_dropout(const pn_tsv *in, int col, pn_layer *l,
			pn_layer_err *e)
{
	l->dropout = l->type == PN_ELEMENTWISE ? 0.5 : 0;
	if (col < 0 || pn_tsv_na(in, col))
		return 0;
	const char *s = pn_tsv_str(in, col);
	double v;
	if (pn_parse_num(s, pn_tsv_len(in, col), &v) != 0)
		return fail(e, col, NULL, "'%s' is not a number", s);
	if (!(v >= 0 && v < 1))
		return fail(e, col, NULL, "%g is not in [0, 1)", v);
	l->dropout = v;
	return 0;
}

/* The type, op and dimensions of the row. */
static int read_dims(const pn_tsv *in, const pn_layer_cols *c, pn_layer *l,
		     pn_layer_err *e)
{
	const char *name = pn_tsv_str(in, c->layer);
	int t = pn_layer_type_of(name);
	if (t < 0)
		return fail(e, c->layer, pn_layer_names,
			    "unknown layer type '%s'", name);
	l->type = (pn_layer_type)t;
	snprintf(l->op, sizeof l->op, "%s", name);
	const char *const *ops = pn_layer_defs[t].ops;
	if (ops) {
		if (c->op < 0)
			return fail(e, -1, NULL, "missing column 'op' (needed "
				    "by layer '%s')", name);
		if (pn_tsv_na(in, c->op))
			return fail(e, c->op, NULL, "no value for layer '%s'",
				    name);
		if (pn_name_index(ops, pn_tsv_str(in, c->op)) < 0)
			return fail(e, c->op, NULL, "unknown %s op '%s'", name,
				    pn_tsv_str(in, c->op));
		snprintf(l->op, sizeof l->op, "%s", pn_tsv_str(in, c->op));
	}
	for (size_t i = 0; i < NDIMS; i++) {
		if (!needs(l->type, numdims[i].name))
			continue;
		int col = c->num[i];
		double v;
		if (col < 0)
			return fail(e, -1, NULL, "missing column '%s' (needed "
				    "by layer '%s')", numdims[i].name, name);
		if (pn_tsv_na(in, col))
			return fail(e, col, NULL, "no value for layer '%s'",
				    name);
		if (whole(in, col, &v, e) != 0)
			return -1;
		if (v < numdims[i].min)
			return fail(e, col, NULL, "%s must be at least %g, "
				    "not %g", numdims[i].name,
				    numdims[i].min, v);
		*(double *)((char *)l + numdims[i].off) = v;
	}
	return 0;
}

int pn_layer_parse(const pn_tsv *in, const pn_layer_cols *c, pn_layer *l,
		   pn_prec *prec, pn_layer_err *e)
{
	memset(l, 0, sizeof *l);
	e->col = -1;
	e->msg[0] = 0;
	e->names = NULL;
	e->notwhole = 0;
	if (read_dims(in, c, l, e) != 0)
		return -1;
	int bcol = c->num[NNUM - 1];
	l->bias = pn_layer_defs[l->type].bias;
	if (bcol >= 0 && !pn_tsv_na(in, bcol) &&
	    whole(in, bcol, &l->bias, e) != 0)
		return -1;
	int act, p, pass, opt;
	if (read_enum(in, c->activation, pn_act_names, PN_ACT_NONE, &act,
		      e) != 0 ||
	    read_enum(in, c->precision, pn_prec_names, PN_FP32, &p, e) != 0 ||
	    read_enum(in, c->pass, pn_pass_names, PN_PASS_FWD, &pass, e) != 0 ||
	    read_enum(in, c->optimizer, pn_opt_names, PN_OPT_NONE, &opt,
		      e) != 0)
		return -1;
	l->activation = act;
	l->prec = (pn_prec)p;
	l->bytes = pn_prec_bytes((pn_prec)p);
	l->train = pass == PN_PASS_TRAIN;
	l->optimizer = opt;
	/* a row with a pass column (a network's phase says it otherwise)
	 * steps an optimizer only in training */
	if (c->pass >= 0 && !l->train && opt != PN_OPT_NONE)
		return fail(e, c->optimizer, NULL, "optimizer %s on a forward "
			    "pass: an optimizer steps a row of pass train "
			    "only", pn_opt_name(opt));
	if (read_input_grad(in, c->input_grad, l, e) != 0)
		return -1;
	if (prec)
		*prec = (pn_prec)p;
	char why[160];
	if (pn_layer_check(l, why, sizeof why))
		return fail(e, -1, NULL, "impossible %s: %s",
			    pn_layer_name(l->type), why);
	return read_dropout(in, c->dropout, l, e);
}

void pn_layer_read(const pn_tsv *in, const pn_layer_cols *c, pn_layer *l)
{
	pn_layer_err e;
	if (pn_layer_parse(in, c, l, NULL, &e) == 0)
		return;
	char list[256] = "";
	if (e.names)
		pn_name_list(e.names, list, sizeof list);
	const char *open = e.names ? " (one of: " : "", *close = e.names ? ")"
								      : "";
	if (e.col < 0)
		pn_tsv_die_row(in, "%s%s%s%s", e.msg, open, list, close);
	pn_tsv_die(in, e.col, "%s%s%s%s", e.msg, open, list, close);
}

/* ---- writing ----------------------------------------------------------- */

int pn_layer_columns(pn_layer_type t, int flags, const char **cols)
{
	const pn_layer_def *d = &pn_layer_defs[t];
	int n = 0;
	cols[n++] = "layer";
	if (d->ops || (flags & PN_LC_VECOP && d->vector))
		cols[n++] = "op";
	for (const char *const *s = d->dims; *s; s++)
		if (strcmp(*s, "op") != 0)
			cols[n++] = *s;
	if (d->bias)
		cols[n++] = "bias";
	if (d->activation)
		cols[n++] = "activation";
	if (flags & PN_LC_INPUT_GRAD && d->input_grad)
		cols[n++] = "input_grad";
	if (flags & PN_LC_TRAINING && d->dropout)
		cols[n++] = "dropout";
	cols[n++] = "precision";
	cols[n++] = "pass";
	cols[n++] = "optimizer";
	if (flags & PN_LC_TRAINING)
		cols[n++] = "learning_rate";
	return n;
}

int pn_layer_masks(const pn_layer *l)
{
	switch (l->type) {
	case PN_ATTENTION:
		return 1;
	case PN_ELEMENTWISE:
		return strcmp(l->op, "dropout") == 0;
	case PN_RNN: case PN_LSTM: case PN_GRU:
		return l->layers > 1;
	default:
		return 0;
	}
}

const char *pn_layer_field(const pn_layer *l, pn_prec prec, const char *name,
			   char *buf)
{
	int i = numdim(name);
	if (i >= 0) {
		/* a dimension of another type: none, as a row writes it */
		if (!needs(l->type, name) && !(strcmp(name, "bias") == 0 &&
					       pn_layer_defs[l->type].bias))
			return "NA";
		pn_fmt_num(buf, pn_layer_get(l, name));
		return buf;
	}
	switch (pn_name_index(pn_layer_attrs, name)) {
	case 0: return l->op;
	case 1: pn_fmt_num(buf, l->bias); return buf;
	case 2: return pn_act_name((int)l->activation);
	case 3: return pn_prec_name(prec);
	case 4: return pn_pass_names[l->train ? PN_PASS_TRAIN : PN_PASS_FWD];
	case 5: return pn_opt_name(l->optimizer);
	default:
		if (strcmp(name, "input_grad") == 0)
			return l->no_input_grad ? "0" : "1";
		return strcmp(name, "layer") == 0 ? pn_layer_name(l->type)
						  : NULL;
	}
}

/* ---- work -------------------------------------------------------------- */

#define TILE 128.0

static double tiles2(double rows, double cols)
{
	return ceil(rows / TILE) * ceil(cols / TILE);
}

void pn_layer_work(const pn_layer *l, pn_work *w)
{
	memset(w, 0, sizeof *w);
	double B = l->batch, S = l->seq_len, e = l->bytes;
	double win = 0, wout = 0, ww = 0;   /* elements */
	double extra = 0;                   /* intermediate elements moved */
	switch (l->type) {
	case PN_DENSE: {
		double I = l->in_features, O = l->out_features;
		w->flops = 2 * B * I * O + l->bias * B * O +
			   (l->activation ? B * O : 0);
		w->co = 2 * B * I * O;
		ww = I * O + l->bias * O;
		win = B * I;
		wout = B * O;
		w->tiles = tiles2(B, O);
		break;
	}
	case PN_BMM:
		w->flops = w->co = 2 * B * l->m * l->n * l->k;
		win = B * (l->m * l->n + l->n * l->k);
		wout = B * l->m * l->k;
		w->tiles = B * tiles2(l->m, l->k);
		break;
	case PN_CONV2D: {
		double oh = pn_conv_out(l), kk = l->kernel * l->kernel;
		double outpix = B * oh * oh;
		w->flops = 2 * outpix * l->out_channels * l->in_channels * kk +
			   l->bias * outpix * l->out_channels +
			   (l->activation ? outpix * l->out_channels : 0);
		/* PreNeT counts multiply-adds once, on the valid/same output */
		w->co = outpix * kk * l->in_channels * l->out_channels;
		ww = l->out_channels * l->in_channels * kk +
		     l->bias * l->out_channels;
		win = B * l->in_channels * l->image * l->image;
		wout = outpix * l->out_channels;
		w->tiles = tiles2(outpix, l->out_channels);
		break;
	}
	case PN_ATTENTION: {
		double E = l->embed_dim, h = l->heads;
		w->flops = 8 * B * S * E * E + 4 * B * S * S * E +
			   5 * B * h * S * S;
		/* PreNeT: heads x (projection + 2 qk + softmax + weighted sum
		 * + output projection), with its unit conventions */
		w->co = h * (B * S * E * E + 2 * B * S * S * E + B * S * S +
			     B * S * S * E + B * S * E * E);
		ww = 4 * E * E + 4 * E;
		win = B * S * E;
		wout = B * S * E;
		extra = 2 * 3 * B * S * E + 4 * B * h * S * S + 2 * B * S * E;
		w->tiles = tiles2(B * S, 3 * E);
		break;
	}
	case PN_EMBEDDING:
		w->flops = 0;
		w->co = B * S * l->embed_dim;
		ww = l->vocab * l->embed_dim;
		win = B * S * 8.0 / e;          /* int64 indices */
		wout = B * S * l->embed_dim;
		extra = B * S * l->embed_dim;   /* rows gathered */
		w->tiles = ceil(B * S * l->embed_dim / 1024);
		w->vector = 1;
		break;
	case PN_RNN: case PN_LSTM: case PN_GRU: {
		double g = pn_rnn_gates(l->type);
		double H = l->hidden, I = l->input_size;
		double dirs = l->bidirectional ? 2 : 1;
		double ew = l->type == PN_RNN ? 1 : 8;  /* gate arithmetic */
		/* a layer of input width in; the first's is I, the others'
		 * H x dirs (closed form: any count of layers in constant time) */
#define RNN_FLOPS(in) (dirs * B * S * (2 * g * H * ((in) + H) + 2 * g * H + ew * H))
		w->flops = RNN_FLOPS(I) + (l->layers - 1) * RNN_FLOPS(H * dirs);
#undef RNN_FLOPS
		ww = pn_rnn_weights(l);
		/* PreNeT: first layer only, x2 bidirectional, x3 training */
		w->co = B * S * (g * (2 * (I * H + H * H) + H) +
				 (g > 1 ? 2 * H : 0)) * dirs *
			(l->optimizer != PN_OPT_NONE ? 3 : 1);
		win = B * S * I;
		wout = B * S * H * dirs;
		extra = (l->layers - 1) * 2 * B * S * H * dirs +
			l->layers * dirs * B * S * g * H * 2;
		w->tiles = dirs * tiles2(B, g * H);
		break;
	}
	case PN_LAYERNORM:
		w->flops = w->co = 8 * B * S * l->dim;
		ww = 2 * l->dim;
		win = wout = B * S * l->dim;
		w->tiles = B * S;
		w->vector = 1;
		break;
	case PN_SOFTMAX:
		w->flops = w->co = 5 * B * S * l->dim;
		win = wout = B * S * l->dim;
		w->tiles = B * S;
		w->vector = 1;
		break;
	case PN_XENT:
		/* log-softmax (softmax's five flops an element and a log a
		 * row) and the likelihood's gather; the int64 targets */
		w->flops = w->co = 5 * B * S * l->dim + 2 * B * S;
		win = B * S * l->dim + B * S * 8.0 / e;
		wout = B * S * l->dim;          /* the log-probabilities */
		w->tiles = B * S;
		w->vector = 1;
		break;
	case PN_ELEMENTWISE: {
		double n = pn_elem_count(l);
		/* one flop an element; a gated op two (its activation and
		 * its product) */
		w->flops = w->co = (pn_elem_gated(l->op) ? 2 : 1) * n;
		win = (pn_elem_binary(l->op) ? 2 : 1) * n;
		wout = n;
		w->tiles = ceil(n / 1024);
		w->vector = 1;
		break;
	}
	case PN_POSENC:
		w->flops = w->co = B * S * l->embed_dim;
		ww = S * l->embed_dim;
		win = wout = B * S * l->embed_dim;
		w->tiles = ceil(B * S * l->embed_dim / 1024);
		w->vector = 1;
		break;
	case PN_BATCHNORM: {
		double n = B * l->in_channels * l->image * l->image;
		w->flops = w->co = 8 * n;           /* as layernorm */
		ww = 2 * l->in_channels;
		win = wout = n;
		w->tiles = l->in_channels;          /* a reduction a channel */
		w->vector = 1;
		break;
	}
	case PN_POOL: {
		double oh = pn_conv_out(l);
		double out = B * l->in_channels * oh * oh;
		w->flops = w->co = out * l->kernel * l->kernel;
		win = B * l->in_channels * l->image * l->image;
		wout = out;
		if (l->train && strcmp(l->op, "max") == 0)
			extra = out * 8.0 / e;      /* int64 indices */
		w->tiles = ceil(out / 1024);
		w->vector = 1;
		break;
	}
	case PN_MEM:
		/* NeuSight's MEM: every element listed is read or written once */
		win = l->elements;
		w->tiles = ceil(l->elements / 1024);
		w->vector = 1;
		break;
	default:
		PN_BUG("layer type without work");
	}
	w->cm_weights = ww * e;
	w->cm_in = win * e;
	w->cm_out = wout * e;
	w->cm_total = w->cm_weights + w->cm_in + w->cm_out;
	w->traffic = w->cm_total + extra * e;
	if (l->optimizer != PN_OPT_NONE)
		w->cm_total *= 2;    /* PreNeT: gradients double the memory */
	if (l->train) {
		/* backward ~ twice the forward (input and weight gradients);
		 * once (the weights') when the row skips its input's
		 * gradient (input_grad 0) */
		static const double optrw[PN_NOPT] = {0, 3, 7, 5, 7, 5};
		double passes = l->no_input_grad &&
				pn_layer_defs[l->type].input_grad ? 2 : 3;
		w->flops *= passes;
		w->traffic = passes * w->traffic +
			     optrw[l->optimizer] * w->cm_weights;
		if (l->type != PN_RNN && l->type != PN_LSTM && l->type != PN_GRU)
			w->co *= passes;
	}
}
