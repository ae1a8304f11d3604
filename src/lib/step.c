/* step.c - a training step as the ops a framework runs (step.h) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "step.h"

/* One pass of an optimizer: its name, the elementwise op that runs it and
 * the weight-sized tensors it reads and writes. */
typedef struct {
	const char *what, *op;
	int tensors;
} pass;

static const pass sgd[] = {{"sgd.add_", "add", 3}, {0, 0, 0}};
static const pass sgd_mom[] = {
	{"sgd.mul_", "mulu", 2}, {"sgd.add_", "add", 3},
	{"sgd.add_", "add", 3}, {0, 0, 0}
};
static const pass adam[] = {
	{"adam.mul_", "mulu", 2}, {"adam.add_", "add", 3},
	{"adam.mul_", "mulu", 2}, {"adam.addcmul_", "mul", 3},
	{"adam.sqrt", "powu", 2}, {"adam.div_", "divu", 2},
	{"adam.add", "addu", 2}, {"adam.addcdiv_", "div", 4}, {0, 0, 0}
};
static const pass rmsprop[] = {
	{"rmsprop.mul_", "mulu", 2}, {"rmsprop.addcmul_", "mul", 3},
	{"rmsprop.sqrt", "powu", 2}, {"rmsprop.add_", "addu", 2},
	{"rmsprop.addcdiv_", "div", 4}, {0, 0, 0}
};
static const pass rmsprop_mom[] = {
	{"rmsprop.mul_", "mulu", 2}, {"rmsprop.addcmul_", "mul", 3},
	{"rmsprop.sqrt", "powu", 2}, {"rmsprop.add_", "addu", 2},
	{"rmsprop.mul_", "mulu", 2}, {"rmsprop.addcdiv_", "div", 4},
	{"rmsprop.add_", "add", 3}, {0, 0, 0}
};
static const pass adagrad[] = {
	{"adagrad.addcmul_", "mul", 3}, {"adagrad.sqrt", "powu", 2},
	{"adagrad.add", "addu", 2}, {"adagrad.mul", "mulu", 2},
	{"adagrad.div", "div", 3}, {"adagrad.add_", "add", 3}, {0, 0, 0}
};
static const pass adadelta[] = {
	{"adadelta.mul_", "mulu", 2}, {"adadelta.addcmul_", "mul", 3},
	{"adadelta.add", "addu", 2}, {"adadelta.sqrt_", "powu", 2},
	{"adadelta.add", "addu", 2}, {"adadelta.sqrt_", "powu", 2},
	{"adadelta.div_", "div", 3}, {"adadelta.mul_", "mul", 3},
	{"adadelta.add_", "add", 3}, {"adadelta.mul_", "mulu", 2},
	{"adadelta.addcmul_", "mul", 3}, {0, 0, 0}
};

static const pass *passes(int opt, int momentum)
{
	switch (opt) {
	case PN_OPT_SGD: return momentum ? sgd_mom : sgd;
	case PN_OPT_ADAM: return adam;
	case PN_OPT_RMSPROP: return momentum ? rmsprop_mom : rmsprop;
	case PN_OPT_ADAGRAD: return adagrad;
	case PN_OPT_ADADELTA: return adadelta;
	default: return NULL;
	}
}

int pn_step_splits(pn_layer_type t)
{
	return t != PN_RNN && t != PN_LSTM && t != PN_GRU;
}

double pn_step_weights(const pn_layer *l)
{
	if (!pn_layer_defs[l->type].weights)
		return 0;
	pn_work w;
	pn_layer_work(l, &w);
	return w.cm_weights / l->bytes;
}

/* A forward-pass layer of type t at l's precision, nothing else set. */
static pn_layer blank(const pn_layer *l, pn_layer_type t, const char *op)
{
	pn_layer b;
	memset(&b, 0, sizeof b);
	b.type = t;
	snprintf(b.op, sizeof b.op, "%s", op ? op : pn_layer_name(t));
	b.prec = l->prec;
	b.bytes = l->bytes;
	return b;
}

static pn_step_part *add(pn_step_part *p, const char *what, int phase,
			 pn_layer l, double traffic)
{
	*p = (pn_step_part){what, phase, l, traffic, 1};
	return p + 1;
}

static pn_step_part *gemm(pn_step_part *p, const char *what,
			  const pn_layer *l, double rows, double in,
			  double out)
{
	pn_layer d = blank(l, PN_DENSE, NULL);
	d.batch = rows;
	d.in_features = in;
	d.out_features = out;
	return add(p, what, PN_PH_BWD, d, 0);
}

static pn_step_part *bmm(pn_step_part *p, const char *what,
			 const pn_layer *l, double b, double m, double n,
			 double k)
{
	pn_layer d = blank(l, PN_BMM, NULL);
	d.batch = b;
	d.m = m;
	d.n = n;
	d.k = k;
	return add(p, what, PN_PH_BWD, d, 0);
}

/* An elementwise op over (b, s, d) with traffic bytes (0: its own). */
static pn_step_part *elem(pn_step_part *p, const char *what, int phase,
			  const pn_layer *l, const char *op, double b,
			  double s, double d, double traffic)
{
	pn_layer e = blank(l, PN_ELEMENTWISE, op);
	e.batch = b;
	e.seq_len = s;
	e.dim = d;
	return add(p, what, phase, e, traffic);
}

/* A flat pass of op over n elements of l's precision, t weight-sized
 * tensors read and written: rows of PN_STEP_ROW elements (step.h, the
 * optimizer's passes), a shape inside what per-op data samples whatever
 * the tensors' own; one row of n when n is less. */
static pn_step_part *flat(pn_step_part *p, const char *what, int phase,
			  const pn_layer *l, const char *op, double n,
			  double t)
{
	return elem(p, what, phase, l, op, ceil(n / PN_STEP_ROW), 1,
		    fmin(n, PN_STEP_ROW), t * n * l->bytes);
}

/* A reduction of rows x n into n (a bias's or a table's gradient). */
static pn_step_part *reduce(pn_step_part *p, const char *what,
			    const pn_layer *l, double rows, double s,
			    double n)
{
	return elem(p, what, PN_PH_BWD, l, "add", rows, s, n,
		    l->bytes * (rows * s * n + s * n));
}

static pn_step_part *act_grad(pn_step_part *p, const pn_layer *l,
			      double n)
{
	if (!l->activation)
		return p;
	return elem(p, "act-grad", PN_PH_BWD, l,
		    pn_act_name((int)l->activation), n, 1, 1,
		    3 * n * l->bytes);
}

static pn_step_part *dense_bwd(pn_step_part *p, const pn_layer *l)
{
	double B = l->batch, I = l->in_features, O = l->out_features;
	p = act_grad(p, l, B * O);
	if (!l->no_input_grad)
		p = gemm(p, "input-grad", l, B, O, I);
	p = gemm(p, "weight-grad", l, O, B, I);
	return l->bias ? reduce(p, "bias-grad", l, B, 1, O) : p;
}

static pn_step_part *conv_bwd(pn_step_part *p, const pn_layer *l)
{
	double oh = pn_conv_out(l), P = l->batch * oh * oh;
	double O = l->out_channels, K = l->in_channels * l->kernel * l->kernel;
	p = act_grad(p, l, P * O);
	if (!l->no_input_grad)
		p = gemm(p, "data-grad", l, P, O, K);
	p = gemm(p, "weight-grad", l, O, P, K);
	return l->bias ? reduce(p, "bias-grad", l, P, 1, O) : p;
}

static pn_step_part *attention_bwd(pn_step_part *p, const pn_layer *l)
{
	double B = l->batch, S = l->seq_len, E = l->embed_dim, h = l->heads;
	double d = E / h, bs = B * S, bh = B * h;
	p = gemm(p, "out-proj.input-grad", l, bs, E, E);
	p = gemm(p, "out-proj.weight-grad", l, E, bs, E);
	p = reduce(p, "out-proj.bias-grad", l, bs, 1, E);
	p = bmm(p, "context.grad-a", l, bh, S, d, S);
	p = bmm(p, "context.grad-b", l, bh, S, S, d);
	if (l->dropout > 0) {           /* the mask again, on dP */
		pn_layer m = blank(l, PN_ELEMENTWISE, "dropout");
		m.batch = bh;
		m.seq_len = S;
		m.dim = S;
		m.dropout = l->dropout;
		p = add(p, "dropout.input-grad", PN_PH_BWD, m, 0);
	}
	pn_layer s = blank(l, PN_SOFTMAX, NULL);
	s.batch = bh * S;
	s.seq_len = 1;
	s.dim = S;
	p = add(p, "softmax.input-grad", PN_PH_BWD, s, 0);
	p = bmm(p, "scores.grad-a", l, bh, S, S, d);
	p = bmm(p, "scores.grad-b", l, bh, d, S, S);
	p = gemm(p, "in-proj.input-grad", l, bs, 3 * E, E);
	p = gemm(p, "in-proj.weight-grad", l, 3 * E, bs, E);
	return reduce(p, "in-proj.bias-grad", l, bs, 1, 3 * E);
}

static pn_step_part *embedding_bwd(pn_step_part *p, const pn_layer *l)
{
	pn_layer z = blank(l, PN_MEM, NULL);
	z.elements = l->vocab * l->embed_dim;
	p = add(p, "grad-zero", PN_PH_BWD, z, 0);
	return elem(p, "scatter-add", PN_PH_BWD, l, "add", l->batch,
		    l->seq_len, l->embed_dim,
		    3 * l->batch * l->seq_len * l->embed_dim * l->bytes);
}

/* The loss's forward as its ops: the log-softmax (a softmax of its shape)
 * and the likelihood's gather (a mem pass over a value and a target a
 * token). */
static pn_step_part *xent_fwd(pn_step_part *p, const pn_layer *l)
{
	pn_layer s = blank(l, PN_SOFTMAX, NULL), g = blank(l, PN_MEM, NULL);
	s.batch = l->batch;
	s.seq_len = l->seq_len;
	s.dim = l->dim;
	p = add(p, "log-softmax", PN_PH_FWD, s, 0);
	g.elements = 2 * l->batch * l->seq_len;
	return add(p, "nll", PN_PH_FWD, g, 0);
}

static pn_step_part *xent_bwd(pn_step_part *p, const pn_layer *l)
{
	pn_layer z = blank(l, PN_MEM, NULL), s = blank(l, PN_SOFTMAX, NULL);
	z.elements = l->batch * l->seq_len * l->dim;
	p = add(p, "nll.grad", PN_PH_BWD, z, 0);
	s.batch = l->batch;
	s.seq_len = l->seq_len;
	s.dim = l->dim;
	return add(p, "log-softmax.input-grad", PN_PH_BWD, s, 0);
}

/* The row itself as a forward op. */
static pn_layer forward(const pn_layer *l)
{
	pn_layer f = *l;
	f.train = 0;
	f.optimizer = PN_OPT_NONE;
	return f;
}

int pn_step_input_grad(const pn_layer *l, pn_step_part *p)
{
	if (!l->train || !l->no_input_grad)
		return 0;
	if (l->type == PN_DENSE) {
		gemm(p, "input-grad", l, l->batch, l->out_features,
		     l->in_features);
		return 1;
	}
	if (l->type != PN_CONV2D)
		return 0;
	pn_layer c = blank(l, PN_CONV2D, NULL);
	c.batch = l->batch;
	c.in_channels = l->out_channels;
	c.out_channels = l->in_channels;
	c.kernel = l->kernel;
	c.image = pn_conv_out(l);
	c.stride = 1;
	c.padding = floor(l->kernel / 2);
	add(p, "data-grad", PN_PH_BWD, c, 0);
	return 1;
}

static pn_step_part *backward(pn_step_part *p, const pn_layer *l)
{
	pn_layer f = forward(l);
	switch (l->type) {
	case PN_DENSE: return dense_bwd(p, l);
	case PN_BMM:
		p = bmm(p, "grad-a", l, l->batch, l->m, l->k, l->n);
		return bmm(p, "grad-b", l, l->batch, l->n, l->m, l->k);
	case PN_CONV2D: return conv_bwd(p, l);
	case PN_ATTENTION: return attention_bwd(p, l);
	case PN_EMBEDDING: return embedding_bwd(p, l);
	case PN_LAYERNORM: case PN_BATCHNORM:
		p = add(p, "input-grad", PN_PH_BWD, f, 0);
		return add(p, "weight-grad", PN_PH_BWD, f, 0);
	case PN_SOFTMAX: case PN_ELEMENTWISE: case PN_POOL: case PN_MEM:
		return add(p, "input-grad", PN_PH_BWD, f, 0);
	case PN_POSENC:
		return reduce(p, "weight-grad", l, l->batch, l->seq_len,
			      l->embed_dim);
	case PN_XENT:
		return xent_bwd(p, l);
	default:
		PN_BUG("no backward for this layer type");
	}
}

int pn_step_optimizer(int opt, int momentum, double n, pn_prec prec,
		      double share, pn_step_part *p)
{
	const pass *s = passes(opt, momentum);
	if (!s || n <= 0)
		return 0;
	pn_layer w;
	memset(&w, 0, sizeof w);
	w.prec = prec;
	w.bytes = pn_prec_bytes(prec);
	int k;
	for (k = 0; s[k].what; k++) {
		flat(&p[k], s[k].what, PN_STEP_OPT, &w, s[k].op, n,
		     s[k].tensors);
		p[k].count = share;
	}
	return k;
}

/* ---- a recurrence op by op (pn_step_cell_parts) ---------------------------- */

/* The pointwise ops of one cell step on (B, H), with how many run
 * forward; backward runs one binary op (mul) per activation and two per
 * mul (add and sub pass the gradient on). */
typedef struct {
	const char *op;
	int n;
} cellop;

static const cellop lstm_cell[] = {
	{"sigmoid", 3}, {"tanh", 2}, {"mul", 3}, {"add", 1}, {0, 0}
};
static const cellop gru_cell[] = {
	{"sigmoid", 2}, {"tanh", 1}, {"mul", 2}, {"add", 2}, {"sub", 1},
	{0, 0}
};
static const cellop rnn_cell[] = {{NULL, 1}, {0, 0}};   /* its activation */

/* The gates of a recurrent layer (layer.c's work counts them the same). */
static double gates(const pn_layer *l)
{
	return l->type == PN_LSTM ? 4 : l->type == PN_GRU ? 3 : 1;
}

/* A dense part (rows, in, out) with bias b in phase ph, run count times. */
static pn_step_part *mm(pn_step_part *p, const char *what, int ph,
			const pn_layer *l, double rows, double in, double out,
			int b, double count)
{
	pn_layer d = blank(l, PN_DENSE, NULL);
	d.batch = rows;
	d.in_features = in;
	d.out_features = out;
	d.bias = b;
	p = add(p, what, ph, d, 0);
	p[-1].count = count;
	return p;
}

/* The input projections of the layers whose input is in wide, n of them
 * (layers x directions): forward (phase fwd) or their three backward
 * products (bwd). */
static pn_step_part *in_proj(pn_step_part *p, const pn_layer *l, double in,
			     double n, int bwd)
{
	double SB = l->seq_len * l->batch;
	double gH = gates(l) * l->hidden;
	if (n <= 0)
		return p;
	if (!bwd)
		return mm(p, "input-proj", PN_PH_FWD, l, SB, in, gH, 1, n);
	p = mm(p, "input-proj.input-grad", PN_PH_BWD, l, SB, gH, in, 0, n);
	p = mm(p, "input-proj.weight-grad", PN_PH_BWD, l, gH, SB, in, 0, n);
	p = reduce(p, "input-proj.bias-grad", l, SB, 1, gH);
	p[-1].count = n;
	return p;
}

/* The ops of every time step of every layer and direction (n steps in
 * all): the hidden projection, the gates' add and cell ops forward;
 * backward the cell ops' gradients, the projection's two products, the
 * accumulation of its weight gradient over the steps and its bias
 * gradient. */
static pn_step_part *cell_steps(pn_step_part *p, const pn_layer *l,
				double n)
{
	const cellop *c = l->type == PN_LSTM ? lstm_cell :
			  l->type == PN_GRU ? gru_cell : rnn_cell;
	double B = l->batch, H = l->hidden, gH = gates(l) * H;
	double grads = 0;
	p = mm(p, "hidden-proj", PN_PH_FWD, l, B, H, gH, 1, n);
	p = elem(p, "gates-add", PN_PH_FWD, l, "add", B, 1, gH, 0);
	p[-1].count = n;
	for (; c->n; c++) {
		const char *op = c->op ? c->op : l->activation ?
			pn_act_name((int)l->activation) : "tanh";
		p = elem(p, "cell", PN_PH_FWD, l, op, B, 1, H, 0);
		p[-1].count = c->n * n;
		grads += strcmp(op, "mul") == 0 ? 2 * c->n :
			 strcmp(op, "add") && strcmp(op, "sub") ? c->n : 0;
	}
	p = elem(p, "cell-grad", PN_PH_BWD, l, "mul", B, 1, H, 0);
	p[-1].count = grads * n;
	p = mm(p, "hidden-proj.input-grad", PN_PH_BWD, l, B, gH, H, 0, n);
	p = mm(p, "hidden-proj.weight-grad", PN_PH_BWD, l, gH, B, H, 0, n);
	if (l->seq_len > 1) {
		p = flat(p, "hidden-proj.weight-acc", PN_PH_BWD, l, "add",
			 gH * H, 3);
		p[-1].count = n / l->seq_len * (l->seq_len - 1);
	}
	p = reduce(p, "hidden-proj.bias-grad", l, B, 1, gH);
	p[-1].count = n;
	return p;
}

/* The parts p..q and after them the row's share of the optimizer step
 * (pn_step_parts' arguments); returns their count. */
static int with_optimizer(pn_step_part *p, pn_step_part *q, int opt,
			  int momentum, double weights, double all,
			  pn_prec wprec)
{
	if (weights > 0)
		q += pn_step_optimizer(opt, momentum, all, wprec,
				       weights / all, q);
	if (q - p > PN_STEP_MAX)
		PN_BUG("more parts than PN_STEP_MAX");
	return (int)(q - p);
}

int pn_step_cell_parts(const pn_layer *l, int opt, int momentum,
		       double weights, double all, pn_prec wprec,
		       pn_step_part *p)
{
	if (pn_step_splits(l->type))
		return 0;
	double D = l->bidirectional ? 2 : 1, L = l->layers;
	double n = l->seq_len * L * D;
	pn_step_part *q = in_proj(p, l, l->input_size, D, 0);
	q = in_proj(q, l, D * l->hidden, D * (L - 1), 0);
	q = cell_steps(q, l, n);
	q = in_proj(q, l, l->input_size, D, 1);
	q = in_proj(q, l, D * l->hidden, D * (L - 1), 1);
	return with_optimizer(p, q, opt, momentum, weights, all, wprec);
}

int pn_step_parts(const pn_layer *l, int opt, int momentum, double weights,
		  double all, pn_prec wprec, pn_step_part *p)
{
	if (!pn_step_splits(l->type))
		return 0;
	pn_step_part *q = l->type == PN_XENT ? xent_fwd(p, l) :
			  add(p, "forward", PN_PH_FWD, forward(l), 0);
	q = backward(q, l);
	return with_optimizer(p, q, opt, momentum, weights, all, wprec);
}
