#include <string.h>

#include "layer.h"

static const char *const names[PN_NLAYERS] = {
	"dense", "bmm", "conv2d", "attention", "embedding", "rnn", "lstm",
	"gru", "layernorm", "softmax", "elementwise", "posenc", "mem",
};

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

static const char *const *const dims[PN_NLAYERS] = {
	d_dense, d_bmm, d_conv, d_attn, d_emb, d_rnn, d_rnn, d_rnn, d_vec,
	d_vec, d_elem, d_pos, d_mem,
};

static const char *const extra_config[] = {
	"layer", "precision", "pass", "optimizer", "activation", "bias", 0
};

const char *pn_layer_name(pn_layer_type t)
{
	return (unsigned)t < PN_NLAYERS ? names[t] : "?";
}

int pn_layer_type_of(const char *name)
{
	for (int i = 0; i < PN_NLAYERS; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

const char *const *pn_layer_dims(pn_layer_type t)
{
	return dims[t];
}

int pn_layer_is_config_col(const char *name)
{
	for (const char *const *c = extra_config; *c; c++)
		if (strcmp(*c, name) == 0)
			return 1;
	for (int t = 0; t < PN_NLAYERS; t++)
		for (const char *const *c = dims[t]; *c; c++)
			if (strcmp(*c, name) == 0)
				return 1;
	return 0;
}

/* ---- reading ----------------------------------------------------------- */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "err.h"

/* Every numeric dimension column, with its place in pn_layer. */
static const struct {
	const char *name;
	size_t off;
	double min;      /* smallest allowed value */
} numdims[] = {
#define D(f, lo) {#f, offsetof(pn_layer, f), lo}
	D(batch, 1), D(seq_len, 1), D(dim, 1), D(in_features, 1),
	D(out_features, 1), D(m, 1), D(n, 1), D(k, 1), D(in_channels, 1),
	D(out_channels, 1), D(kernel, 1), D(image, 1), D(stride, 1),
	D(padding, 0), D(embed_dim, 1), D(heads, 1), D(vocab, 1),
	D(input_size, 1), D(hidden, 1), D(layers, 1), D(bidirectional, 0),
	D(elements, 1),
#undef D
};
#define NNUM (sizeof numdims / sizeof numdims[0])

struct pn_layer_cols {
	int layer, op, precision, pass, optimizer, activation, bias;
	int num[NNUM];
};

static const char *const optnames[PN_NOPT] = {
	"none", "sgd", "adam", "adagrad", "adadelta", "rmsprop"
};
static const char *const actnames[] = {"none", "relu", "tanh", "sigmoid", 0};
static const char *const elemops[] = {
	"add", "sub", "mul", "div", "pow", "addu", "subu", "mulu", "divu",
	"powu", "relu", "gelu", "tanh", "sigmoid", "exp", "neg", "copy",
	"dropout", 0
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
	c->bias = pn_tsv_find(in, "bias");
	for (size_t i = 0; i < NNUM; i++)
		c->num[i] = pn_tsv_find(in, numdims[i].name);
	return c;
}

void pn_layer_cols_free(pn_layer_cols *c)
{
	free(c);
}

static int lookup(const char *const *list, const char *s)
{
	for (int i = 0; list[i]; i++)
		if (strcmp(list[i], s) == 0)
			return i;
	return -1;
}

/* Optional enumerated column: default when absent or NA. */
static int read_enum(const pn_tsv *in, int col, const char *const *list,
		     int dflt)
{
	if (col < 0 || pn_tsv_na(in, col))
		return dflt;
	int v = lookup(list, pn_tsv_str(in, col));
	if (v < 0) {
		char allowed[256] = "";
		size_t n = 0;
		for (int i = 0; list[i]; i++)
			n += (size_t)snprintf(allowed + n, sizeof allowed - n,
					      "%s%s", i ? ", " : "", list[i]);
		pn_tsv_die(in, col, "unknown value '%s' (one of: %s)",
			   pn_tsv_str(in, col), allowed);
	}
	return v;
}

static int needs(pn_layer_type t, const char *name)
{
	for (const char *const *d = dims[t]; *d; d++)
		if (strcmp(*d, name) == 0)
			return 1;
	return 0;
}

void pn_layer_read(const pn_tsv *in, const pn_layer_cols *c, pn_layer *l)
{
	memset(l, 0, sizeof *l);
	const char *name = pn_tsv_str(in, c->layer);
	int t = pn_layer_type_of(name);
	if (t < 0) {
		char list[256] = "";
		size_t n = 0;
		for (int i = 0; i < PN_NLAYERS; i++)
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
					      i ? ", " : "", names[i]);
		pn_tsv_die(in, c->layer, "unknown layer type '%s' (one of: %s)",
			   name, list);
	}
	l->type = (pn_layer_type)t;
	snprintf(l->op, sizeof l->op, "%s", names[t]);
	if (t == PN_ELEMENTWISE) {
		if (c->op < 0)
			pn_tsv_die_row(in, "missing column 'op' (needed by "
				       "layer 'elementwise')");
		if (lookup(elemops, pn_tsv_str(in, c->op)) < 0)
			pn_tsv_die(in, c->op, "unknown elementwise op '%s'",
				   pn_tsv_str(in, c->op));
		snprintf(l->op, sizeof l->op, "%s", pn_tsv_str(in, c->op));
	}
	for (size_t i = 0; i < NNUM; i++) {
		if (!needs(l->type, numdims[i].name))
			continue;
		int col = c->num[i];
		if (col < 0)
			pn_tsv_die_row(in, "missing column '%s' (needed by "
				       "layer '%s')", numdims[i].name, name);
		if (pn_tsv_na(in, col))
			pn_tsv_die(in, col, "no value for layer '%s'", name);
		double v = (double)pn_tsv_int(in, col);
		if (v < numdims[i].min)
			pn_tsv_die(in, col, "%s must be at least %g, not %g",
				   numdims[i].name, numdims[i].min, v);
		*(double *)((char *)l + numdims[i].off) = v;
	}
	if (t == PN_LAYERNORM || t == PN_SOFTMAX || t == PN_ELEMENTWISE ||
	    t == PN_POSENC || t == PN_ATTENTION || t == PN_EMBEDDING ||
	    t == PN_RNN || t == PN_LSTM || t == PN_GRU)
		if (l->seq_len == 0)
			l->seq_len = 1;
	if (c->bias >= 0 && !pn_tsv_na(in, c->bias))
		l->bias = (double)pn_tsv_int(in, c->bias);
	else
		l->bias = t == PN_DENSE || t == PN_CONV2D;
	l->activation = read_enum(in, c->activation, actnames, 0);
	static const char *const precs[] = {"fp32", "tf32", "fp16", "bf16", 0};
	static const int pbytes[] = {4, 4, 2, 2};
	l->bytes = pbytes[read_enum(in, c->precision, precs, 0)];
	static const char *const passes[] = {"fwd", "train", 0};
	l->train = read_enum(in, c->pass, passes, 0);
	l->optimizer = read_enum(in, c->optimizer, optnames, PN_OPT_NONE);
	char msg[160];
	if (pn_layer_check(l, msg, sizeof msg))
		pn_tsv_die_row(in, "impossible %s: %s", name, msg);
}

static double conv_out(const pn_layer *l)
{
	return floor((l->image + 2 * l->padding - l->kernel) / l->stride) + 1;
}

const char *pn_layer_check(const pn_layer *l, char *buf, size_t n)
{
	switch (l->type) {
	case PN_CONV2D:
		if (l->kernel > l->image + 2 * l->padding) {
			snprintf(buf, n, "kernel %g is larger than the padded "
				 "image %g", l->kernel,
				 l->image + 2 * l->padding);
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
	return NULL;
}

/* ---- work -------------------------------------------------------------- */

#define TILE 128.0

static double tiles2(double rows, double cols)
{
	return ceil(rows / TILE) * ceil(cols / TILE);
}

/* Per-element flops of an elementwise op, and whether it reads two
 * tensors. */
static void elem_cost(const char *op, double *flops, int *binary)
{
	static const char *const bin[] = {"add", "sub", "mul", "div", "pow", 0};
	*binary = lookup(bin, op) >= 0;
	*flops = 1;
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
		double oh = conv_out(l), kk = l->kernel * l->kernel;
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
		double g = l->type == PN_LSTM ? 4 : l->type == PN_GRU ? 3 : 1;
		double H = l->hidden, I = l->input_size;
		double dirs = l->bidirectional ? 2 : 1;
		double ew = l->type == PN_RNN ? 1 : 8;  /* gate arithmetic */
		for (double layer = 0; layer < l->layers; layer++) {
			double in = layer == 0 ? I : H * dirs;
			w->flops += dirs * B * S *
				    (2 * g * H * (in + H) + 2 * g * H + ew * H);
			ww += dirs * g * (in * H + H * H + 2 * H);
		}
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
	case PN_ELEMENTWISE: {
		double f;
		int binary;
		elem_cost(l->op, &f, &binary);
		double n = B * S * l->dim;
		w->flops = w->co = f * n;
		win = (binary ? 2 : 1) * n;
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
		/* backward ~ twice the forward (input and weight gradients) */
		static const double optrw[PN_NOPT] = {0, 3, 7, 5, 7, 5};
		w->flops *= 3;
		w->traffic = 3 * w->traffic + optrw[l->optimizer] * w->cm_weights;
		if (l->type != PN_RNN && l->type != PN_LSTM && l->type != PN_GRU)
			w->co *= 3;
	}
}
