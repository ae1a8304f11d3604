/* map.c - ONNX ops to pn rows: the one table (ops[] below; onnx.h says
 * what each becomes and why). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "network.h"
#include "ox.h"

/* Dim i of t (negative: from the end), 0 when t has none. */
static double D(const ox_tensor *t, int i)
{
	if (i < 0)
		i += t->rank;
	return i >= 0 && i < t->rank ? t->dims[i] : 0;
}

static int axis_of(const ox *x, const ox_tensor *t, long long def)
{
	long long a = ox_attr_int(x, "axis", def);
	if (a < 0)
		a += t->rank;
	return a < 0 ? 0 : a > t->rank ? t->rank : (int)a;
}

/* A vector row over t: dims before axis are batch (the first) and seq_len
 * (the others), from axis on dim. */
static pn_layer *vecrow(ox *x, pn_layer_type type, const char *op,
			const ox_tensor *t, int axis)
{
	pn_layer *l = ox_row(x, type, NULL);
	if (op)
		snprintf(l->op, sizeof l->op, "%s", op);
	l->batch = axis >= 1 ? D(t, 0) : 1;
	l->seq_len = axis >= 1 ? ox_prod(t, 1, axis) : 1;
	l->dim = ox_prod(t, axis, t->rank);
	return l;
}

static void params(ox *x, double p)
{
	x->a->r[x->a->n - 1].params += p;
}

/* ---- layers with weights ------------------------------------------------- */

static int dense(ox *x, const ox_tensor *y, double in, double out)
{
	pn_layer *l = ox_row(x, PN_DENSE, NULL);
	l->batch = out ? ox_prod(y, 0, y->rank) / out : 0;
	l->in_features = in;
	l->out_features = out;
	l->bias = 0;
	return 1;
}

static int bmm(ox *x, const ox_tensor *y, double m, double n, double k)
{
	pn_layer *l = ox_row(x, PN_BMM, NULL);
	l->batch = m > 0 && k > 0 ? ox_prod(y, 0, y->rank) / (m * k) : 0;
	l->m = m;
	l->n = n;
	l->k = k;
	return 1;
}

/* A 2-D float initializer, or a transposition of one. */
static int weight(ox_tensor *t)
{
	const ox_tensor *p = t->alias ? t->alias : t;
	return p->init && ox_float(p->elem) && t->rank == 2;
}

static int h_matmul(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *a = ox_in(x, 0), *b = a ? ox_in(x, 1) : NULL,
		  *y = b ? ox_out(x, 0) : NULL;
	if (!y)
		return -1;
	if (weight(b)) {
		dense(x, y, D(b, 0), D(b, 1));
		params(x, ox_weights(b));
	} else if (weight(a)) {
		dense(x, y, D(a, 1), D(a, 0));
		params(x, ox_weights(a));
	} else {
		bmm(x, y, a->rank >= 2 ? D(a, -2) : 1, D(a, -1),
		    b->rank >= 2 ? D(b, -1) : 1);
	}
	return 1;
}

static int h_gemm(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *a = ox_in(x, 0), *b = a ? ox_in(x, 1) : NULL,
		  *y = b ? ox_out(x, 0) : NULL;
	if (!y)
		return -1;
	double k = D(a, ox_attr_int(x, "transA", 0) ? 0 : 1);
	if (!weight(b)) {
		bmm(x, y, D(y, 0), k, D(y, 1));
		return 1;
	}
	dense(x, y, k, D(y, 1));
	params(x, ox_weights(b));
	if (ox_has_in(x, 2)) {
		ox_tensor *c = ox_in(x, 2);
		if (!c)
			return -1;
		x->a->r[x->a->n - 1].l.bias = 1;
		params(x, ox_weights(c));
	}
	return 1;
}

/* A 2-D conv; group g: g convs of in/g to out/g channels (batch x g). */
static int h_conv(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *in = ox_in(x, 0), *w = in ? ox_in(x, 1) : NULL,
		  *y = w ? ox_out(x, 0) : NULL;
	if (!y)
		return -1;
	if (in->rank != 4 || w->rank != 4)
		return 0;
	double g = (double)ox_attr_int(x, "group", 1);
	size_t ns, np, na;
	const int64_t *s = ox_attr_ints(x, "strides", &ns),
		      *p = ox_attr_ints(x, "pads", &np);
	const char *ap = ox_attr_str(x, "auto_pad", &na);
	pn_layer *l = ox_row(x, PN_CONV2D, NULL);
	l->batch = D(in, 0) * g;
	l->in_channels = g >= 1 ? D(in, 1) / g : 0;
	l->out_channels = g >= 1 ? D(w, 0) / g : 0;
	l->kernel = D(w, 2);
	l->image = D(in, 2);
	l->stride = s ? (double)s[0] : 1;
	l->padding = p ? (double)p[0] : 0;
	if (ap && na >= 4 && strncmp(ap, "SAME", 4) == 0)
		l->padding = fmax(0, floor(((D(y, 2) - 1) * l->stride +
					    l->kernel - l->image) / 2));
	l->bias = ox_has_in(x, 2);
	params(x, ox_weights(w));
	if (l->bias) {
		ox_tensor *b = ox_in(x, 2);
		if (!b)
			return -1;
		params(x, ox_weights(b));
	}
	return 1;
}

/* BatchNormalization: a batchnorm row over the channels (dimension 1) of
 * an N x C x H x W input, square as pn's images are (the height's image,
 * as for Conv); scale and bias are its parameters. */
static int h_bn(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *in = ox_in(x, 0);
	if (!in)
		return -1;
	pn_layer *l = ox_row(x, PN_BATCHNORM, NULL);
	l->batch = D(in, 0);
	l->in_channels = D(in, 1);
	l->image = in->rank > 2 ? D(in, 2) : 1;
	for (size_t i = 1; i <= 2; i++)
		if (ox_has_in(x, i))
			params(x, ox_weights(ox_find(x, x->node->input[i])));
	return 1;
}

/* MaxPool, AveragePool (kernel_shape, strides, pads), GlobalAveragePool,
 * GlobalMaxPool (one window over the image): a pool row, op max or avg
 * (arg). */
static int h_pool(ox *x, const char *arg)
{
	ox_tensor *in = ox_in(x, 0), *y = in ? ox_out(x, 0) : NULL;
	if (!y)
		return -1;
	if (in->rank != 4)
		return 0;
	pn_layer *l = ox_row(x, PN_POOL, NULL);
	snprintf(l->op, sizeof l->op, "%s", arg[0] == 'g' ? arg + 1 : arg);
	l->batch = D(in, 0);
	l->in_channels = D(in, 1);
	l->image = D(in, 2);
	if (arg[0] == 'g') {             /* global: one window */
		l->kernel = l->stride = l->image;
		l->padding = 0;
		return 1;
	}
	size_t nk, ns, np;
	const int64_t *k = ox_attr_ints(x, "kernel_shape", &nk),
		      *s = ox_attr_ints(x, "strides", &ns),
		      *p = ox_attr_ints(x, "pads", &np);
	l->kernel = k && nk ? (double)k[0] : 1;
	l->stride = s && ns ? (double)s[0] : 1;
	l->padding = p && np ? (double)p[0] : 0;
	return 1;
}

static int h_ln(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *in = ox_in(x, 0);
	if (!in)
		return -1;
	vecrow(x, PN_LAYERNORM, NULL, in, axis_of(x, in, -1));
	for (size_t i = 1; i <= 2; i++)
		if (ox_has_in(x, i))
			params(x, ox_weights(ox_find(x, x->node->input[i])));
	return 1;
}

static int h_gather(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *d = ox_in(x, 0), *i = d ? ox_in(x, 1) : NULL,
		  *y = i ? ox_out(x, 0) : NULL;
	if (!y)
		return -1;
	if (!weight(d) || ox_attr_int(x, "axis", 0) != 0) {
		pn_layer *l = ox_row(x, PN_MEM, NULL);
		l->elements = 2 * ox_prod(y, 0, y->rank);
		return 1;
	}
	pn_layer *l = ox_row(x, PN_EMBEDDING, NULL);
	l->batch = i->rank >= 2 ? D(i, 0) : 1;
	l->seq_len = ox_prod(i, i->rank >= 2, i->rank);
	l->vocab = D(d, 0);
	l->embed_dim = D(d, 1);
	params(x, ox_weights(d));
	return 1;
}

/* LSTM GRU RNN: one layer; X is [seq, batch, input] (layout 1: [batch,
 * seq, input]), W [directions, gates x hidden, input]. */
static int h_rnn(ox *x, const char *arg)
{
	ox_tensor *in = ox_in(x, 0), *w = in ? ox_in(x, 1) : NULL,
		  *r = w ? ox_in(x, 2) : NULL;
	if (!r)
		return -1;
	int lay = ox_attr_int(x, "layout", 0) == 1;
	pn_layer *l = ox_row(x, pn_layer_type_of(arg), NULL);
	l->batch = D(in, lay ? 0 : 1);
	l->seq_len = D(in, lay ? 1 : 0);
	l->input_size = D(in, 2);
	l->hidden = (double)ox_attr_int(x, "hidden_size", (long long)D(r, 2));
	l->layers = 1;
	l->bidirectional = D(w, 0) == 2;
	l->bias = ox_has_in(x, 3);
	params(x, ox_weights(w) + ox_weights(r));
	if (l->bias) {
		ox_tensor *b = ox_in(x, 3);
		if (!b)
			return -1;
		params(x, ox_weights(b));
	}
	return 1;
}

/* ---- vector ops ---------------------------------------------------------- */

static int h_softmax(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *y = ox_out(x, 0);
	if (!y)
		return -1;
	vecrow(x, PN_SOFTMAX, NULL, y, axis_of(x, y, -1));
	return 1;
}

/* Add Sub Mul Div Pow: with a one-element operand the op's "u" form; a
 * float initializer of more than one element is a parameter. */
static int h_binary(ox *x, const char *arg)
{
	ox_tensor *a = ox_in(x, 0), *b = a ? ox_in(x, 1) : NULL,
		  *y = b ? ox_out(x, 0) : NULL;
	if (!y)
		return -1;
	char op[16];
	int scalar = ox_prod(a, 0, a->rank) == 1 || ox_prod(b, 0, b->rank) == 1;
	snprintf(op, sizeof op, "%s%s", arg, scalar ? "u" : "");
	vecrow(x, PN_ELEMENTWISE, op, y, y->rank - 1);
	params(x, scalar ? 0 : ox_weights(a) + ox_weights(b));
	return 1;
}

static int h_unary(ox *x, const char *arg)
{
	if (strcmp(arg, "dropout") == 0 && x->a->o.phase != PN_PH_TRAIN)
		return 1;
	ox_tensor *y = ox_out(x, 0);
	if (!y)
		return -1;
	vecrow(x, PN_ELEMENTWISE, arg, y, y->rank - 1);
	return 1;
}

/* ReduceMean ReduceSum: an addu over the input. */
static int h_reduce(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *in = ox_in(x, 0);
	if (!in)
		return -1;
	vecrow(x, PN_ELEMENTWISE, "addu", in, in->rank - 1);
	return 1;
}

/* ---- memory passes and views ------------------------------------------- */

/* A mem row: the float inputs' elements plus the outputs'; a float
 * initializer of more than one element read (a position table sliced) is
 * a parameter. */
static int h_mem(ox *x, const char *arg)
{
	(void)arg;
	double n = 0, p = 0;
	for (size_t i = 0; i < x->node->n_input; i++) {
		ox_tensor *t = ox_find(x, x->node->input[i]);
		if (!t || t->rank < 0 || t->bad || t->sym || !ox_float(t->elem))
			continue;
		n += ox_prod(t, 0, t->rank);
		if (ox_prod(t, 0, t->rank) > 1)
			p += ox_weights(t);
	}
	for (size_t i = 0; i < x->node->n_output; i++) {
		if (!x->node->output[i][0])
			continue;
		ox_tensor *y = ox_out(x, i);
		if (!y)
			return -1;
		n += ox_prod(y, 0, y->rank);
	}
	pn_layer *l = ox_row(x, PN_MEM, NULL);
	l->elements = n;
	params(x, p);
	return 1;
}

/* A transposed weight (torch's tied head without constant folding) is the
 * weight itself to the MatMul that reads it: no row, no parameters. */
static int h_transpose(ox *x, const char *arg)
{
	ox_tensor *in = ox_in(x, 0), *y = in ? ox_out(x, 0) : NULL;
	if (!y)
		return -1;
	if (!weight(in) || y->rank != 2)
		return h_mem(x, arg);
	y->alias = in->alias ? in->alias : in;
	return 1;
}

/* torch's export keeps one initializer for parameters of equal values and
 * an Identity for each other: the output is a parameter of its own. */
static int h_identity(ox *x, const char *arg)
{
	(void)arg;
	ox_tensor *in = x->node->n_input ? ox_find(x, x->node->input[0]) :
						NULL, *y;
	if (!in || !in->init || in->alias || !x->node->n_output ||
	    !(y = ox_find(x, x->node->output[0])) || y->init)
		return 1;
	memcpy(y, in, sizeof *y);
	y->name = x->node->output[0];
	y->counted = 0;
	return 1;
}

static int h_view(ox *x, const char *arg)
{
	(void)x;
	(void)arg;
	return 1;
}

typedef int handler(ox *x, const char *arg);

static const struct {
	const char *op;
	handler *fn;
	const char *arg;
} ops[] = {
	{"MatMul", h_matmul, 0}, {"Gemm", h_gemm, 0}, {"Conv", h_conv, 0},
	{"BatchNormalization", h_bn, 0}, {"LayerNormalization", h_ln, 0},
	{"Softmax", h_softmax, 0}, {"LogSoftmax", h_softmax, 0},
	{"MaxPool", h_pool, "max"}, {"AveragePool", h_pool, "avg"},
	{"GlobalAveragePool", h_pool, "gavg"}, {"GlobalMaxPool", h_pool, "gmax"},
	{"Add", h_binary, "add"}, {"Sub", h_binary, "sub"},
	{"Mul", h_binary, "mul"}, {"Div", h_binary, "div"},
	{"Pow", h_binary, "pow"},
	{"Relu", h_unary, "relu"}, {"LeakyRelu", h_unary, "relu"},
	{"Clip", h_unary, "relu"}, {"Gelu", h_unary, "gelu"},
	{"Tanh", h_unary, "tanh"}, {"Sigmoid", h_unary, "sigmoid"},
	{"Exp", h_unary, "exp"}, {"Neg", h_unary, "neg"},
	{"Erf", h_unary, "tanh"}, {"Sqrt", h_unary, "powu"},
	{"Reciprocal", h_unary, "divu"}, {"Dropout", h_unary, "dropout"},
	{"ReduceMean", h_reduce, 0}, {"ReduceSum", h_reduce, 0},
	{"Gather", h_gather, 0},
	{"LSTM", h_rnn, "lstm"}, {"GRU", h_rnn, "gru"}, {"RNN", h_rnn, "rnn"},
	{"Transpose", h_transpose, 0}, {"Concat", h_mem, 0}, {"Split", h_mem, 0},
	{"Slice", h_mem, 0}, {"Expand", h_mem, 0}, {"Tile", h_mem, 0},
	{"Pad", h_mem, 0}, {"Cast", h_mem, 0}, {"Where", h_mem, 0},
	{"Reshape", h_view, 0}, {"Flatten", h_view, 0},
	{"Squeeze", h_view, 0}, {"Unsqueeze", h_view, 0},
	{"Identity", h_identity, 0}, {"Shape", h_view, 0}, {"Size", h_view, 0},
	{"Constant", h_view, 0}, {"ConstantOfShape", h_view, 0},
	{"Range", h_view, 0},
};

/* A tensor of the node that is (or may be) floating point. */
static int any_float(ox *x)
{
	const Onnx__NodeProto *n = x->node;
	for (size_t k = 0; k < n->n_input + n->n_output; k++) {
		const char *s = k < n->n_input ? n->input[k] :
				n->output[k - n->n_input];
		ox_tensor *t = *s ? ox_find(x, s) : NULL;
		if (t && (!t->elem || ox_float(t->elem)))
			return 1;
	}
	return 0;
}

int ox_map(ox *x)
{
	const Onnx__NodeProto *n = x->node;
	if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") != 0)
		return 0;
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
		if (strcmp(ops[i].op, x->op) == 0)
			return any_float(x) ? ops[i].fn(x, ops[i].arg) : 1;
	return 0;
}
