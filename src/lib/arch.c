#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "err.h"
#include "network.h"
#include "opt.h"
#include "tsv.h"

/* ---- rows ---------------------------------------------------------------- */

static int afail(pn_arch_err *e, long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int afail(pn_arch_err *e, long line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	e->line = line;
	return -1;
}

/* A new row of type t, batch 1, counted repeat times; its name from fmt. */
static pn_layer *row(pn_arch *a, pn_layer_type t, double repeat,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static pn_layer *row(pn_arch *a, pn_layer_type t, double repeat,
		     const char *fmt, ...)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 64;
		a->r = pn_xrealloc(a->r, (size_t)a->cap * sizeof *a->r);
	}
	pn_arch_row *r = &a->r[a->n++];
	memset(r, 0, sizeof *r);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->name, sizeof r->name, fmt, ap);
	va_end(ap);
	r->repeat = repeat;
	r->params = -1;
	r->l.type = t;
	snprintf(r->l.op, sizeof r->l.op, "%s", pn_layer_name(t));
	r->l.bias = pn_layer_defs[t].bias;
	if (t != PN_MEM)
		r->l.batch = 1;
	return &r->l;
}

pn_layer *pn_arch_add(pn_arch *a, pn_layer_type t, double repeat,
		      double params, const char *name)
{
	pn_layer *l = row(a, t, repeat, "%s", name);
	a->r[a->n - 1].params = params;
	return l;
}

int pn_arch_option(pn_arch_opts *o, int c, const char *arg)
{
	static const char *const phases[] = {"train", "fwd", 0};
	switch (c) {
	case 's': o->seq = (long)pn_opt_whole("--seq", arg, 1, 10000000);
		  return 1;
	case PN_AO_OPT: o->optimizer = pn_opt_choice("--optimizer", arg,
						     pn_opt_names); return 1;
	case PN_AO_PREC: o->prec = (pn_prec)pn_opt_choice("--precision", arg,
							 pn_prec_names);
			 return 1;
	case PN_AO_PHASE: o->phase = pn_opt_choice("--phase", arg, phases) ?
				     PN_PH_FWD : PN_PH_TRAIN; return 1;
	}
	return 0;
}

/* The parameters of the last row, when not its layer's weights. */
static void params(pn_arch *a, double p)
{
	a->r[a->n - 1].params = p;
}

static void dense(pn_arch *a, const char *name, double rep, double tokens,
		  double in, double out, int bias, int act)
{
	pn_layer *l = row(a, PN_DENSE, rep, "%s", name);
	l->batch = tokens;
	l->in_features = in;
	l->out_features = out;
	l->bias = bias;
	l->activation = act;
}

/* A vector row (layernorm, softmax, elementwise op) of batch x seq x dim. */
static void vec(pn_arch *a, const char *name, double rep, pn_layer_type t,
		const char *op, double batch, double seq, double dim)
{
	pn_layer *l = row(a, t, rep, "%s", name);
	if (op)
		snprintf(l->op, sizeof l->op, "%s", op);
	l->batch = batch;
	l->seq_len = seq;
	l->dim = dim;
}

/* The loss head over seq tokens of classes each, named PREFIX.loss
 * (PREFIX empty: loss): the cross-entropy (xent) in training; in a
 * forward pass, where no loss runs, the softmax of the output's
 * probabilities (PREFIX.softmax). */
static void loss(pn_arch *a, const char *prefix, double seq, double classes)
{
	int train = a->o.phase == PN_PH_TRAIN;
	char nm[64];
	snprintf(nm, sizeof nm, "%s%s%s", prefix, *prefix ? "." : "",
		 train ? "loss" : "softmax");
	vec(a, nm, 1, train ? PN_XENT : PN_SOFTMAX, NULL, 1, seq, classes);
}

/* A dropout of rate p over batch x seq x dim: none at rate 0 or outside
 * training. */
static void drop(pn_arch *a, const char *name, double rep, double p,
		 double batch, double seq, double dim)
{
	if (p <= 0 || a->o.phase != PN_PH_TRAIN)
		return;
	vec(a, name, rep, PN_ELEMENTWISE, "dropout", batch, seq, dim);
	a->r[a->n - 1].l.dropout = p;
}

static void embedding(pn_arch *a, const char *name, double rep, double seq,
		      double vocab, double dim)
{
	pn_layer *l = row(a, PN_EMBEDDING, rep, "%s", name);
	l->seq_len = seq;
	l->vocab = vocab;
	l->embed_dim = dim;
}

static void bmm(pn_arch *a, const char *name, double rep, double batch,
		double m, double n, double k)
{
	pn_layer *l = row(a, PN_BMM, rep, "%s", name);
	l->batch = batch;
	l->m = m;
	l->n = n;
	l->k = k;
}

/* Every row takes the command line's precision and phase, and the
 * optimizer where its type has weights. */
void pn_arch_finish(pn_arch *a, int family_opt)
{
	int opt = a->o.optimizer >= 0 ? a->o.optimizer : family_opt;
	for (long i = 0; i < a->n; i++) {
		pn_layer *l = &a->r[i].l;
		l->bytes = pn_prec_bytes(a->o.prec);
		l->train = a->o.phase == PN_PH_TRAIN;
		l->optimizer = pn_layer_defs[l->type].weights && l->train ?
			       opt : PN_OPT_NONE;
	}
}

void pn_arch_data_grad(pn_arch *a)
{
	for (long i = 0; a->o.phase == PN_PH_TRAIN && i < a->n; i++) {
		pn_layer *l = &a->r[i].l;
		if (!pn_layer_defs[l->type].weights)
			continue;
		if (pn_layer_defs[l->type].input_grad)
			l->no_input_grad = 1;
		return;
	}
}

double pn_arch_params(const pn_arch *a)
{
	double sum = 0;
	for (long i = 0; i < a->n; i++) {
		const pn_arch_row *r = &a->r[i];
		double p = r->params;
		if (p < 0) {
			pn_work w;
			pn_layer_work(&r->l, &w);
			p = w.cm_weights / r->l.bytes;
		}
		sum += p * r->repeat;
	}
	return sum;
}

/* The input_grad column only when a row skips its input's gradient, so
 * that the networks without one are written as before. */
void pn_arch_write(const pn_arch *a, FILE *f)
{
	int flags = 0;
	for (long i = 0; i < a->n; i++) {
		const pn_layer *l = &a->r[i].l;
		if (l->no_input_grad)
			flags |= PN_LC_INPUT_GRAD;
		if (pn_layer_masks(l) && l->dropout > 0)
			flags |= PN_LC_DROPOUT;
	}
	pn_network_put_header(f, flags);
	int phase = a->o.phase == PN_PH_TRAIN ? PN_PH_TRAIN : PN_PH_FWD;
	for (long i = 0; i < a->n; i++)
		pn_network_put_row(f, a->r[i].name, &a->r[i].l, a->o.prec,
				   phase, a->r[i].repeat, flags);
}

void pn_arch_emit(const pn_arch *a, const char *out, int params)
{
	FILE *f = pn_output_open(out);
	if (params) {
		pn_put_num(f, pn_arch_params(a));
		putc('\n', f);
	} else {
		pn_arch_write(a, f);
	}
	pn_output_close(f);
}

void pn_arch_free(pn_arch *a)
{
	free(a->r);
	a->r = NULL;
	a->n = a->cap = 0;
}

/* ---- convolutional networks ------------------------------------------- */

/* The input and window of a conv2d or pool row; returns the output side. */
static double window(pn_layer *l, double c, double x, double k, double s,
		     double p)
{
	l->in_channels = c;
	l->image = x;
	l->kernel = k;
	l->stride = s;
	l->padding = p;
	return pn_conv_out(l);
}

/* A conv; returns the output side. */
static double conv(pn_arch *a, const char *name, double rep, double cin,
		   double cout, double k, double x, double s, double p,
		   int bias, int act)
{
	pn_layer *l = row(a, PN_CONV2D, rep, "%s", name);
	l->out_channels = cout;
	l->bias = bias;
	l->activation = act;
	return window(l, cin, x, k, s, p);
}

/* A depthwise conv (groups = channels): one channel per batch entry. */
static double dwconv(pn_arch *a, const char *name, double rep, double c,
		     double k, double x, double s, double p)
{
	double y = conv(a, name, rep, 1, 1, k, x, s, p, 0, PN_ACT_NONE);
	a->r[a->n - 1].l.batch = c;
	params(a, c * k * k);
	return y;
}

/* A pooling (op max or avg) of c channels of side x; returns the output
 * side. */
static double pool(pn_arch *a, const char *name, double rep, const char *op,
		   double c, double x, double k, double s, double p)
{
	pn_layer *l = row(a, PN_POOL, rep, "%s", name);
	snprintf(l->op, sizeof l->op, "%s", op);
	return window(l, c, x, k, s, p);
}

/* A global average pooling (AdaptiveAvgPool2d(1)): one window. */
static void gap(pn_arch *a, double c, double x)
{
	pool(a, "avgpool", 1, "avg", c, x, x, x, 0);
}

static void bn(pn_arch *a, const char *name, double rep, double c, double x)
{
	pn_layer *l = row(a, PN_BATCHNORM, rep, "%s", name);
	l->in_channels = c;
	l->image = x;
}

static void relu(pn_arch *a, const char *name, double rep, double c, double x)
{
	vec(a, name, rep, PN_ELEMENTWISE, "relu", 1, x * x, c);
}

static void classifier(pn_arch *a, double in)
{
	dense(a, "fc", 1, 1, in, (double)a->o.classes, 1, PN_ACT_NONE);
	loss(a, "", 1, (double)a->o.classes);
}

static int vgg(pn_arch *a, int depth, pn_arch_err *e)
{
	static const int convs[4][5] = {
		{1, 1, 2, 2, 2}, {2, 2, 2, 2, 2}, {2, 2, 3, 3, 3},
		{2, 2, 4, 4, 4}
	};
	const int *n = convs[depth == 11 ? 0 : depth == 13 ? 1 :
			     depth == 16 ? 2 : 3];
	double x = (double)a->o.image, cin = 3;
	if (a->o.image < 32)
		return afail(e, 0, "image %ld is too small: the feature map "
			     "vanishes", a->o.image);
	for (int i = 0; i < 5; i++) {
		double c = i < 4 ? 64 << i : 512;
		char nm[32];
		snprintf(nm, sizeof nm, "conv%d.1", i + 1);
		conv(a, nm, 1, cin, c, 3, x, 1, 1, 1, PN_ACT_RELU);
		if (n[i] > 1) {
			snprintf(nm, sizeof nm, "conv%d.2-%d", i + 1, n[i]);
			conv(a, nm, n[i] - 1, c, c, 3, x, 1, 1, 1,
			     PN_ACT_RELU);
		}
		snprintf(nm, sizeof nm, "pool%d", i + 1);
		x = pool(a, nm, 1, "max", c, x, 2, 2, 0);
		cin = c;
	}
	if (x > 7) {
		/* AdaptiveAvgPool2d(7), as windows of one size */
		double s = floor(x / 7);
		pool(a, "avgpool", 1, "avg", 512, x, x - 6 * s, s, 0);
	} else if (x < 7) {
		/* AdaptiveAvgPool2d(7) of a smaller map (images below 224)
		 * spreads each value over the 7 x 7 output: a pass writing
		 * that output, as a copy of its 512 x 49 elements */
		vec(a, "avgpool", 1, PN_ELEMENTWISE, "copy", 1, 49, 512);
	}
	dense(a, "fc6", 1, 1, 25088, 4096, 1, PN_ACT_RELU);
	drop(a, "drop6", 1, 0.5, 1, 1, 4096);
	dense(a, "fc7", 1, 1, 4096, 4096, 1, PN_ACT_RELU);
	drop(a, "drop7", 1, 0.5, 1, 1, 4096);
	dense(a, "fc8", 1, 1, 4096, (double)a->o.classes, 1, PN_ACT_NONE);
	loss(a, "", 1, (double)a->o.classes);
	return 0;
}

/* One residual block of ResNet (bottleneck: mid = cout / 4, else basic);
 * returns the output side. */
static double resblock(pn_arch *a, const char *n, double rep, int bneck,
		       double cin, double cout, double x, double s)
{
	char nm[128];
	double mid = bneck ? cout / 4 : cout, y;
#define NM(suffix) (snprintf(nm, sizeof nm, "%s." suffix, n), nm)
	if (bneck) {
		conv(a, NM("conv1"), rep, cin, mid, 1, x, 1, 0, 0, 0);
		bn(a, NM("bn1"), rep, mid, x);
		relu(a, NM("relu1"), rep, mid, x);
		y = conv(a, NM("conv2"), rep, mid, mid, 3, x, s, 1, 0, 0);
		bn(a, NM("bn2"), rep, mid, y);
		relu(a, NM("relu2"), rep, mid, y);
		conv(a, NM("conv3"), rep, mid, cout, 1, y, 1, 0, 0, 0);
		bn(a, NM("bn3"), rep, cout, y);
	} else {
		y = conv(a, NM("conv1"), rep, cin, cout, 3, x, s, 1, 0, 0);
		bn(a, NM("bn1"), rep, cout, y);
		relu(a, NM("relu1"), rep, cout, y);
		conv(a, NM("conv2"), rep, cout, cout, 3, y, 1, 1, 0, 0);
		bn(a, NM("bn2"), rep, cout, y);
	}
	if (s != 1 || cin != cout) {
		conv(a, NM("downsample"), rep, cin, cout, 1, x, s, 0, 0, 0);
		bn(a, NM("downsample.bn"), rep, cout, y);
	}
	vec(a, NM("add"), rep, PN_ELEMENTWISE, "add", 1, y * y, cout);
	relu(a, bneck ? NM("relu3") : NM("relu2"), rep, cout, y);
#undef NM
	return y;
}

static int resnet(pn_arch *a, int depth, pn_arch_err *e)
{
	static const int blocks[5][4] = {
		{2, 2, 2, 2}, {3, 4, 6, 3}, {3, 4, 6, 3}, {3, 4, 23, 3},
		{3, 8, 36, 3}
	};
	int k = depth == 18 ? 0 : depth == 34 ? 1 : depth == 50 ? 2 :
		depth == 101 ? 3 : 4;
	int bneck = depth >= 50;
	if (a->o.image < 32)
		return afail(e, 0, "image %ld is too small: the feature map "
			     "vanishes", a->o.image);
	double x = conv(a, "conv1", 1, 3, 64, 7, (double)a->o.image, 2, 3, 0,
			0);
	bn(a, "bn1", 1, 64, x);
	relu(a, "relu1", 1, 64, x);
	x = pool(a, "maxpool", 1, "max", 64, x, 3, 2, 1);
	double cin = 64;
	for (int l = 0; l < 4; l++) {
		double cout = (bneck ? 256 : 64) * (1 << l), s = l ? 2 : 1;
		char nm[64];
		snprintf(nm, sizeof nm, "layer%d.0", l + 1);
		x = resblock(a, nm, 1, bneck, cin, cout, x, s);
		snprintf(nm, sizeof nm, "layer%d.1-%d", l + 1,
			 blocks[k][l] - 1);
		resblock(a, nm, blocks[k][l] - 1, bneck, cout, cout, x, 1);
		cin = cout;
	}
	gap(a, cin, x);
	classifier(a, cin);
	return 0;
}

/* MobileNetV2's inverted residual: expand (t > 1), depthwise, project. */
static double invres(pn_arch *a, const char *n, double rep, double cin,
		     double cout, double t, double x, double s)
{
	char nm[128];
	double hid = cin * t;
#define NM(suffix) (snprintf(nm, sizeof nm, "%s." suffix, n), nm)
	if (t != 1) {
		conv(a, NM("expand"), rep, cin, hid, 1, x, 1, 0, 0, 0);
		bn(a, NM("expand.bn"), rep, hid, x);
		relu(a, NM("expand.relu6"), rep, hid, x);
	}
	double y = dwconv(a, NM("dw"), rep, hid, 3, x, s, 1);
	bn(a, NM("dw.bn"), rep, hid, y);
	relu(a, NM("dw.relu6"), rep, hid, y);
	conv(a, NM("project"), rep, hid, cout, 1, y, 1, 0, 0, 0);
	bn(a, NM("project.bn"), rep, cout, y);
	if (s == 1 && cin == cout)
		vec(a, NM("add"), rep, PN_ELEMENTWISE, "add", 1, y * y, cout);
#undef NM
	return y;
}

static int mobilenet_v2(pn_arch *a, pn_arch_err *e)
{
	static const int set[7][4] = {
		{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
		{6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}
	};
	if (a->o.image < 32)
		return afail(e, 0, "image %ld is too small: the feature map "
			     "vanishes", a->o.image);
	double x = conv(a, "features.0", 1, 3, 32, 3, (double)a->o.image, 2,
			1, 0, 0);
	bn(a, "features.0.bn", 1, 32, x);
	relu(a, "features.0.relu6", 1, 32, x);
	double cin = 32;
	int f = 1;
	char nm[64];
	for (int i = 0; i < 7; i++) {
		int t = set[i][0], c = set[i][1], n = set[i][2], s = set[i][3];
		snprintf(nm, sizeof nm, "features.%d", f);
		x = invres(a, nm, 1, cin, c, t, x, s);
		if (n > 1) {
			snprintf(nm, sizeof nm, "features.%d-%d", f + 1,
				 f + n - 1);
			invres(a, nm, n - 1, c, c, t, x, 1);
		}
		f += n;
		cin = c;
	}
	snprintf(nm, sizeof nm, "features.%d", f);
	conv(a, nm, 1, cin, 1280, 1, x, 1, 0, 0, 0);
	snprintf(nm, sizeof nm, "features.%d.bn", f);
	bn(a, nm, 1, 1280, x);
	snprintf(nm, sizeof nm, "features.%d.relu6", f);
	relu(a, nm, 1, 1280, x);
	gap(a, 1280, x);
	drop(a, "dropout", 1, 0.2, 1, 1, 1280);
	classifier(a, 1280);
	return 0;
}

/* Sutskever et al.'s LSTM sequence to sequence model. */
static void seq2seq(pn_arch *a)
{
	double S = a->o.seq ? (double)a->o.seq : 30;
	embedding(a, "encoder.embedding", 1, S, 160000, 1000);
	pn_layer *l = row(a, PN_LSTM, 1, "encoder.lstm");
	l->seq_len = S;
	l->input_size = l->hidden = 1000;
	l->layers = 4;
	embedding(a, "decoder.embedding", 1, S, 80000, 1000);
	pn_layer *d = row(a, PN_LSTM, 1, "decoder.lstm");
	*d = a->r[a->n - 3].l;
	dense(a, "decoder.out", 1, S, 1000, 80000, 1, PN_ACT_NONE);
	loss(a, "decoder", S, 80000);
}

const char *const pn_arch_names[] = {
	"resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
	"vgg11", "vgg13", "vgg16", "vgg19", "mobilenet_v2", "lstm-seq2seq", 0
};

int pn_arch_named(pn_arch *a, const char *name, pn_arch_err *e)
{
	int k = pn_name_index(pn_arch_names, name), rc = 0;
	if (k < 0) {
		char list[256];
		return afail(e, 0, "unknown architecture '%s' (one of: %s)",
			     name, pn_name_list(pn_arch_names, list,
						sizeof list));
	}
	if (k < 5)
		rc = resnet(a, atoi(name + 6), e);
	else if (k < 9)
		rc = vgg(a, atoi(name + 3), e);
	else if (k == 9)
		rc = mobilenet_v2(a, e);
	else
		seq2seq(a);
	if (rc != 0) {
		pn_arch_free(a);
		return rc;
	}
	pn_arch_finish(a, PN_OPT_SGD);
	return 0;
}

/* One item of a conv stack: C[kK][sS], M, A or fN. */
static int stack_item(pn_arch *a, const char *it, size_t len, int idx,
		      double *c, double *x, double *flat, pn_arch_err *e)
{
	char nm[32], *end;
	int pool_it = len == 1 && (*it == 'M' || *it == 'A');
	if (*flat && (pool_it || (*it >= '1' && *it <= '9')))
		return afail(e, 0, "item '%.*s': a %s after a dense layer (fN "
			     "flattens the map; convs and pools come before "
			     "it)", (int)len, it, pool_it ? "pool" : "conv");
	if (pool_it) {
		double y = *it == 'M' ? floor(*x / 2) : 1;
		if (y < 1)
			return afail(e, 0, "image %ld is too small: the "
				     "feature map vanishes", a->o.image);
		snprintf(nm, sizeof nm, "%s%d", *it == 'M' ? "pool" : "avgpool",
			 idx);
		if (*it == 'M')
			pool(a, nm, 1, "max", *c, *x, 2, 2, 0);
		else
			pool(a, nm, 1, "avg", *c, *x, *x, *x, 0);
		*x = y;
		return 0;
	}
	if (*it == 'f') {
		long n = strtol(it + 1, &end, 10);
		if (end != it + len || n < 1 || it[1] < '0' || it[1] > '9')
			return 1;
		double in = *flat ? *flat : *c * *x * *x;
		snprintf(nm, sizeof nm, "fc%d", idx);
		dense(a, nm, 1, 1, in, (double)n, 1, PN_ACT_RELU);
		*flat = (double)n;
		return 0;
	}
	if (*it < '1' || *it > '9')
		return 1;
	long ch = strtol(it, &end, 10), k = 3, s = 1;
	if (*end == 'k' && end[1] >= '1' && end[1] <= '9')
		k = strtol(end + 1, &end, 10);
	if (*end == 's' && end[1] >= '1' && end[1] <= '9')
		s = strtol(end + 1, &end, 10);
	if (end != it + len || ch > 1000000 || k > 1000 || s > 1000)
		return 1;
	if (k > *x + 2 * (k / 2))
		return afail(e, 0, "image %ld is too small: the feature map "
			     "vanishes", a->o.image);
	snprintf(nm, sizeof nm, "conv%d", idx);
	*x = conv(a, nm, 1, *c, (double)ch, (double)k, *x, (double)s,
		  (double)(k / 2), 1, PN_ACT_RELU);
	*c = (double)ch;
	return 0;
}

int pn_arch_convstack(pn_arch *a, const char *spec, pn_arch_err *e)
{
	double c = 3, x = (double)a->o.image, flat = 0;
	int idx = 0, convs = 0;
	for (const char *p = spec;; p++) {
		size_t len = strcspn(p, ",");
		int rc = len ? stack_item(a, p, len, ++idx, &c, &x, &flat, e)
			     : 1;
		if (rc == 1)
			afail(e, 0, "bad item '%.*s' (C[kK][sS], M, A or fN)",
			      (int)len, p);
		if (rc != 0) {
			pn_arch_free(a);
			return -1;
		}
		convs += *p != 'f' && *p != 'M' && *p != 'A';
		p += len;
		if (!*p)
			break;
	}
	if (!convs) {
		pn_arch_free(a);
		return afail(e, 0, "no conv in '%s'", spec);
	}
	classifier(a, flat ? flat : c * x * x);
	pn_arch_finish(a, PN_OPT_SGD);
	return 0;
}

/* ---- transformers --------------------------------------------------------- */

/* Reading the config: the first error wins; later reads return defaults. */
typedef struct {
	const pn_json *cfg;
	pn_arch_err *e;
	int bad;
} cfgr;

/* The value of key, NULL when absent or null. */
static const pn_json *key(cfgr *c, const char *k)
{
	const pn_json *v = pn_json_get(c->cfg, k);
	return v && v->kind != PN_JSON_NULL ? v : NULL;
}

/* A whole number of at least 1; def < 0: required. */
static long key_whole(cfgr *c, const char *k, long def)
{
	const pn_json *v = key(c, k);
	if (c->bad)
		return 1;
	if (!v && def < 0) {
		c->bad = afail(c->e, 0, "no '%s'", k);
		return 1;
	}
	if (!v)
		return def;
	if (v->kind != PN_JSON_NUM || v->num < 1 || v->num != floor(v->num) ||
	    v->num > 1e15) {
		char num[40];
		if (v->kind == PN_JSON_NUM)
			snprintf(num, sizeof num, "%g", v->num);
		c->bad = afail(c->e, v->line, "'%s' must be a whole number of "
			       "at least 1, not %s", k,
			       v->kind == PN_JSON_NUM ? num :
			       pn_json_kind_name(v->kind));
		return 1;
	}
	return (long)v->num;
}

static int key_bool(cfgr *c, const char *k, int def)
{
	const pn_json *v = key(c, k);
	if (c->bad || !v)
		return def;
	if (v->kind != PN_JSON_BOOL) {
		c->bad = afail(c->e, v->line, "'%s' must be true or false", k);
		return def;
	}
	return (int)v->num;
}

static double key_prob(cfgr *c, const char *k, double def)
{
	const pn_json *v = key(c, k);
	if (c->bad || !v)
		return def;
	if (v->kind != PN_JSON_NUM || v->num < 0 || v->num > 1) {
		c->bad = afail(c->e, v->line, "'%s' must be a probability "
			       "from 0 to 1", k);
		return def;
	}
	return v->num;
}

/* A dropout rate: a probability below 1 (a network row's dropout column
 * is in [0, 1): a rate of 1 drops every value, and trains nothing). */
static double key_drop(cfgr *c, const char *k, double def)
{
	double p = key_prob(c, k, def);
	if (!c->bad && p >= 1)
		c->bad = afail(c->e, key(c, k)->line, "'%s' must be a "
			       "dropout rate below 1, not 1", k);
	return p;
}

/* Whether a soft-capping key is on: absent (the class's default on), or
 * a positive number; off when null or 0. */
static int key_cap(cfgr *c, const char *k)
{
	const pn_json *v = pn_json_get(c->cfg, k);
	if (c->bad || !v)
		return !c->bad;
	if (v->kind == PN_JSON_NULL)
		return 0;
	if (v->kind != PN_JSON_NUM || v->num < 0) {
		c->bad = afail(c->e, v->line, "'%s' must be a number of at "
			       "least 0 or null", k);
		return 0;
	}
	return v->num > 0;
}

/* The activation named by key: 'g' gelu, 'r' relu, 's' silu. */
static int key_act(cfgr *c, const char *k, const char *def)
{
	static const char *const names[] = {
		"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast",
		"quick_gelu", "relu", "silu", "swish", "gated-gelu", 0
	};
	static const char code[] = "gggggrssG";
	const pn_json *v = key(c, k);
	if (c->bad)
		return 'g';
	const char *s = v && v->kind == PN_JSON_STR ? v->str : def;
	int i = pn_name_index(names, s);
	if (v && v->kind != PN_JSON_STR)
		i = -1;
	if (i < 0) {
		char list[200];
		c->bad = afail(c->e, v ? v->line : 0, "unknown %s '%s' (one "
			       "of: %s)", k, v && v->kind == PN_JSON_STR ? s :
			       "?", pn_name_list(names, list, sizeof list));
		return 'g';
	}
	return code[i];
}

/* A transformer, as the families' configs describe it. */
typedef struct {
	long L, Ldec, E, h, kv, hd, I, V, types, buckets, experts, topk;
	long P, Poff;       /* learned position table, and its rows beyond the
			       context (OPT: 2) */
	long proj;          /* OPT: word_embed_proj_dim when not E (the
			       embedding's and head's width), else 0 */
	int post, rms, gated, act, qkv_bias, o_bias, mlp_bias, rotary, tied,
	    mlm, t5;
	int embscale;       /* gemma: the embeddings times sqrt(E) */
	int fused;          /* phi3: one qkv_proj and one gate_up_proj */
	int sandwich;       /* gemma2: a norm after attention and after the
			       MLP too, before each residual add */
	int attcap, logitcap; /* gemma2: tanh soft-capping of the attention
				 scores and of the final logits */
	int parallel;       /* falcon: attention and MLP side by side on the
			       block's input (1: one norm, 2: one each) */
	int alibi;          /* falcon: ALiBi's bias added to the scores */
	long ctx;           /* the context when the config names none (the
			       class's default), else 0 */
	long rotdims;       /* phi: the head dimensions rotated (partial
			       rotary), else 0: all of them */
	int pardrop;        /* phi: a dropout on each parallel branch */
	int headbias;       /* phi: the LM head has a bias */
	int embnorm;        /* bloom: a layer norm on the word embeddings */
	double drop, embdrop;   /* after a sublayer, after the embeddings */
	double attdrop, actdrop; /* on attention's probabilities, after the
				    MLP's activation */
} tf;

static const char *const families[] = {
	"bert", "roberta", "gpt2", "gpt_neox", "opt", "llama", "mistral",
	"qwen2", "mixtral", "t5", "gemma", "phi3", "gemma2", "falcon", "phi",
	"bloom", 0
};

/* The sizes most families name alike: layers, width, heads, the MLP's
 * width (under the key inter; NULL: the caller's) and the vocabulary. */
static void read_sizes(cfgr *c, tf *t, const char *inter)
{
	t->L = key_whole(c, "num_hidden_layers", -1);
	t->E = key_whole(c, "hidden_size", -1);
	t->h = key_whole(c, "num_attention_heads", -1);
	if (inter)
		t->I = key_whole(c, inter, -1);
	t->V = key_whole(c, "vocab_size", -1);
}

static void read_bert(cfgr *c, tf *t)
{
	read_sizes(c, t, "intermediate_size");
	t->P = key_whole(c, "max_position_embeddings", 512);
	t->types = key_whole(c, "type_vocab_size", 2);
	t->act = key_act(c, "hidden_act", "gelu");
	t->drop = t->embdrop = key_drop(c, "hidden_dropout_prob", 0.1);
	t->attdrop = key_drop(c, "attention_probs_dropout_prob", 0.1);
	t->tied = key_bool(c, "tie_word_embeddings", 1);
	t->post = t->mlm = 1;
	t->qkv_bias = t->o_bias = t->mlp_bias = 1;
}

static void read_gpt2(cfgr *c, tf *t)
{
	t->L = key_whole(c, "n_layer", -1);
	t->E = key_whole(c, "n_embd", -1);
	t->h = key_whole(c, "n_head", -1);
	t->I = key_whole(c, "n_inner", 4 * t->E);
	t->V = key_whole(c, "vocab_size", -1);
	t->P = key_whole(c, "n_positions", -1);
	t->act = key_act(c, "activation_function", "gelu_new");
	t->drop = key_drop(c, "resid_pdrop", 0.1);
	t->embdrop = key_drop(c, "embd_pdrop", 0.1);
	t->attdrop = key_drop(c, "attn_pdrop", 0.1);
	t->tied = key_bool(c, "tie_word_embeddings", 1);
	t->qkv_bias = t->o_bias = t->mlp_bias = 1;
}

static void read_neox(cfgr *c, tf *t)
{
	read_sizes(c, t, "intermediate_size");
	t->act = key_act(c, "hidden_act", "gelu");
	t->drop = key_drop(c, "hidden_dropout", 0);
	t->attdrop = key_drop(c, "attention_dropout", 0);
	t->tied = key_bool(c, "tie_word_embeddings", 0);
	t->qkv_bias = t->o_bias = key_bool(c, "attention_bias", 1);
	t->mlp_bias = t->rotary = 1;
}

static void read_opt(cfgr *c, tf *t)
{
	read_sizes(c, t, "ffn_dim");
	t->P = key_whole(c, "max_position_embeddings", 2048) + 2;
	t->Poff = 2;
	t->act = key_act(c, "activation_function", "relu");
	t->drop = t->embdrop = key_drop(c, "dropout", 0.1);
	t->attdrop = key_drop(c, "attention_dropout", 0);
	t->actdrop = key_drop(c, "activation_dropout", 0);
	t->tied = key_bool(c, "tie_word_embeddings", 1);
	t->qkv_bias = t->o_bias = t->mlp_bias =
		key_bool(c, "enable_bias", 1);
	t->post = !key_bool(c, "do_layer_norm_before", 1);
	long proj = key_whole(c, "word_embed_proj_dim", t->E);
	t->proj = proj != t->E ? proj : 0;
}

static void read_llama(cfgr *c, tf *t, const char *type)
{
	read_sizes(c, t, "intermediate_size");
	t->kv = key_whole(c, "num_key_value_heads", t->h);
	t->hd = key_whole(c, "head_dim", 0);
	int gemma2 = strcmp(type, "gemma2") == 0;
	int gemma = gemma2 || strcmp(type, "gemma") == 0;
	/* gemma: hidden_activation where given (transformers prefers it),
	 * tied embeddings by default, the embeddings scaled */
	t->act = gemma && key(c, "hidden_activation") ?
		 key_act(c, "hidden_activation", "gelu_pytorch_tanh") :
		 key_act(c, "hidden_act", gemma ? "gelu_pytorch_tanh" : "silu");
	t->attdrop = key_drop(c, "attention_dropout", 0);
	t->tied = key_bool(c, "tie_word_embeddings", gemma);
	t->embscale = gemma;
	if (gemma2) {
		t->sandwich = 1;
		t->attcap = key_cap(c, "attn_logit_softcapping");
		t->logitcap = key_cap(c, "final_logit_softcapping");
	}
	if (strcmp(type, "phi3") == 0) {
		t->fused = 1;
		t->drop = key_drop(c, "resid_pdrop", 0);
		t->embdrop = key_drop(c, "embd_pdrop", 0);
	}
	int qwen = strcmp(type, "qwen2") == 0;
	t->o_bias = qwen ? 0 : key_bool(c, "attention_bias", 0);
	t->qkv_bias = qwen ? 1 : t->o_bias;
	t->mlp_bias = key_bool(c, "mlp_bias", 0);
	t->rms = t->gated = t->rotary = 1;
	if (strcmp(type, "mixtral") == 0 || key(c, "num_local_experts")) {
		t->experts = key_whole(c, "num_local_experts", -1);
		t->topk = key_whole(c, "num_experts_per_tok", 2);
		if (!c->bad && t->topk > t->experts)
			c->bad = afail(c->e, 0, "num_experts_per_tok %ld is "
				       "more than num_local_experts %ld",
				       t->topk, t->experts);
	}
}

static void read_falcon(cfgr *c, tf *t)
{
	int newarch = key_bool(c, "new_decoder_architecture", 0);
	read_sizes(c, t, NULL);
	t->kv = newarch ? key_whole(c, "num_kv_heads", t->h) :
		key_bool(c, "multi_query", 1) ? 1 : t->h;
	t->I = key_whole(c, "ffn_hidden_size", 4 * t->E);
	t->act = 'g';
	t->drop = key_drop(c, "hidden_dropout", 0);
	t->attdrop = key_drop(c, "attention_dropout", 0);
	t->tied = key_bool(c, "tie_word_embeddings", 1);
	t->qkv_bias = t->o_bias = t->mlp_bias = key_bool(c, "bias", 0);
	t->alibi = key_bool(c, "alibi", 0);
	t->rotary = !t->alibi;
	t->fused = 1;
	t->parallel = !key_bool(c, "parallel_attn", 1) ? 0 : newarch ? 2 : 1;
	t->ctx = 2048;      /* FalconConfig's max_position_embeddings */
}

static void read_phi(cfgr *c, tf *t)
{
	read_sizes(c, t, "intermediate_size");
	t->kv = key_whole(c, "num_key_value_heads", t->h);
	t->act = key_act(c, "hidden_act", "gelu_new");
	t->drop = key_drop(c, "resid_pdrop", 0);
	t->embdrop = key_drop(c, "embd_pdrop", 0);
	t->attdrop = key_drop(c, "attention_dropout", 0);
	t->tied = key_bool(c, "tie_word_embeddings", 0);
	t->qkv_bias = t->o_bias = t->mlp_bias = t->headbias = 1;
	t->rotary = t->parallel = t->pardrop = 1;
	double frac = key_prob(c, "partial_rotary_factor", 0.5);
	if (!c->bad && t->h > 0 && t->E % t->h == 0) {
		t->rotdims = (long)(frac * (double)(t->E / t->h));
		t->rotary = t->rotdims > 0;     /* 0: no dimension rotated */
	}
	if (!c->bad && key_bool(c, "qk_layernorm", 0))
		c->bad = afail(c->e, 0, "qk_layernorm is not modelled");
}

/* key, or its alias where key is absent (BloomConfig's attribute map) */
static long key_whole_or(cfgr *c, const char *k, const char *alias)
{
	return key_whole(c, key(c, k) || !key(c, alias) ? k : alias, -1);
}

static void read_bloom(cfgr *c, tf *t)
{
	t->L = key_whole_or(c, "n_layer", "num_hidden_layers");
	t->E = key_whole(c, "hidden_size", -1);
	t->h = key_whole_or(c, "n_head", "num_attention_heads");
	t->V = key_whole(c, "vocab_size", -1);
	t->I = 4 * t->E;
	t->act = 'g';
	t->drop = key_drop(c, "hidden_dropout", 0);
	t->attdrop = key_drop(c, "attention_dropout", 0);
	t->tied = key_bool(c, "tie_word_embeddings", 1);
	t->qkv_bias = t->o_bias = t->mlp_bias = 1;
	t->alibi = t->fused = t->embnorm = 1;
	t->ctx = key_whole(c, "seq_length", 2048);
}

static void read_t5(cfgr *c, tf *t)
{
	t->L = key_whole(c, "num_layers", -1);
	t->Ldec = key_whole(c, "num_decoder_layers", t->L);
	t->E = key_whole(c, "d_model", -1);
	t->hd = key_whole(c, "d_kv", -1);
	t->h = key_whole(c, "num_heads", -1);
	t->I = key_whole(c, "d_ff", -1);
	t->V = key_whole(c, "vocab_size", -1);
	t->buckets = key_whole(c, "relative_attention_num_buckets", 32);
	t->act = key_act(c, "feed_forward_proj", "relu");
	if (t->act == 'G')
		t->act = 'g', t->gated = 1;
	t->drop = t->embdrop = t->attdrop = t->actdrop =
		key_drop(c, "dropout_rate", 0.1);
	t->tied = key_bool(c, "tie_word_embeddings", 1);
	t->rms = t->t5 = 1;
}

/* The family's keys into t, and the checks they share. */
static int read_tf(cfgr *c, tf *t)
{
	const pn_json *mt = pn_json_get(c->cfg, "model_type");
	if (!mt || mt->kind != PN_JSON_STR)
		return afail(c->e, mt ? mt->line : 0, "no model_type");
	int k = pn_name_index(families, mt->str);
	if (k < 0) {
		char list[200];
		return afail(c->e, mt->line, "unknown model_type '%s' (one "
			     "of: %s)", mt->str,
			     pn_name_list(families, list, sizeof list));
	}
	memset(t, 0, sizeof *t);
	switch (k) {
	case 0: case 1: read_bert(c, t); break;
	case 2: read_gpt2(c, t); break;
	case 3: read_neox(c, t); break;
	case 4: read_opt(c, t); break;
	case 9: read_t5(c, t); break;
	case 13: read_falcon(c, t); break;
	case 14: read_phi(c, t); break;
	case 15: read_bloom(c, t); break;
	default: read_llama(c, t, mt->str);
	}
	if (c->bad)
		return -1;
	if (t->act == 'G')
		return afail(c->e, 0, "gated-gelu is a feed_forward_proj of t5 "
			     "only");
	if (!t->hd && t->E % t->h)
		return afail(c->e, 0, "the %ld heads do not divide the hidden "
			     "size %ld", t->h, t->E);
	if (!t->hd)
		t->hd = t->E / t->h;
	if (!t->kv)
		t->kv = t->h;
	if (t->h % t->kv)
		return afail(c->e, 0, "the %ld heads are no multiple of the "
			     "%ld key/value heads", t->h, t->kv);
	return 0;
}

/* nm = p.s (a row's name; cut at 159 bytes). */
static char *sub(char nm[160], const char *p, const char *s)
{
	if (snprintf(nm, 160, "%s.%s", p, s) >= 160)
		nm[159] = 0;
	return nm;
}

/* The norm before or after a sublayer: layer norm, or RMSNorm's weights. */
static void norm(pn_arch *a, const tf *t, const char *name, double rep,
		 double S)
{
	vec(a, name, rep, PN_LAYERNORM, NULL, 1, S, (double)t->E);
	if (t->rms)
		params(a, (double)t->E);
}

/* Attention of Sq queries over Skv keys (p: the row names' prefix). */
static void attention(pn_arch *a, const tf *t, const char *p, double rep,
		      double Sq, double Skv, int posbias)
{
	char nm[160];
	double E = (double)t->E, h = (double)t->h, hd = (double)t->hd;
	double kvd = (double)t->kv * hd;
	if (t->kv == t->h && hd * h == E && t->qkv_bias && t->o_bias &&
	    !t->rotary && !posbias && Sq == Skv) {
		pn_layer *l = row(a, PN_ATTENTION, rep, "%s.attn", p);
		l->seq_len = Sq;
		l->embed_dim = E;
		l->heads = h;
		l->dropout = a->o.phase == PN_PH_TRAIN ? t->attdrop : 0;
		return;
	}
#define NM(suffix) (snprintf(nm, sizeof nm, "%s.attn." suffix, p), nm)
	if (t->fused && Sq == Skv) {
		dense(a, NM("qkv_proj"), rep, Sq, E, h * hd + 2 * kvd,
		      t->qkv_bias, 0);
	} else {
		dense(a, NM("q_proj"), rep, Sq, E, h * hd, t->qkv_bias, 0);
		dense(a, NM("k_proj"), rep, Skv, E, kvd, t->qkv_bias, 0);
		dense(a, NM("v_proj"), rep, Skv, E, kvd, t->qkv_bias, 0);
	}
	if (t->rotary) {        /* on the rotated dimensions of q and k */
		double rot = (h + (double)t->kv) *
			     (t->rotdims ? (double)t->rotdims : hd);
		vec(a, NM("rotary.mul"), 2 * rep, PN_ELEMENTWISE, "mul", 1, Sq,
		    rot);
		vec(a, NM("rotary.add"), rep, PN_ELEMENTWISE, "add", 1, Sq,
		    rot);
	}
	bmm(a, NM("scores"), rep, h, Sq, hd, Skv);
	if (posbias)
		vec(a, NM("position_bias.add"), rep, PN_ELEMENTWISE, "add", 1,
		    h * Sq, Skv);
	if (t->attcap) {        /* cap * tanh(scores / cap) */
		vec(a, NM("softcap.mulu"), 2 * rep, PN_ELEMENTWISE, "mulu", h,
		    Sq, Skv);
		vec(a, NM("softcap.tanh"), rep, PN_ELEMENTWISE, "tanh", h, Sq,
		    Skv);
	}
	vec(a, NM("softmax"), rep, PN_SOFTMAX, NULL, h, Sq, Skv);
	drop(a, NM("attn_dropout"), rep, t->attdrop, h, Sq, Skv);
	bmm(a, NM("context"), rep, h, Sq, Skv, hd);
	dense(a, NM("o_proj"), rep, Sq, h * hd, E, t->o_bias, 0);
#undef NM
}

/* The activation of an MLP of width I over S tokens. */
static void act(pn_arch *a, const tf *t, const char *p, double rep, double S,
		double I)
{
	char nm[160];
	if (t->act == 's') {
		snprintf(nm, sizeof nm, "%s.silu.sigmoid", p);
		vec(a, nm, rep, PN_ELEMENTWISE, "sigmoid", 1, S, I);
		snprintf(nm, sizeof nm, "%s.silu.mul", p);
		vec(a, nm, rep, PN_ELEMENTWISE, "mul", 1, S, I);
		return;
	}
	const char *op = t->act == 'r' ? "relu" : "gelu";
	snprintf(nm, sizeof nm, "%s.%s", p, op);
	vec(a, nm, rep, PN_ELEMENTWISE, op, 1, S, I);
}

/* An MLP (p: "....mlp"), gated or not, over S tokens. */
static void mlp(pn_arch *a, const tf *t, const char *p, double rep, double S)
{
	char nm[160];
	double E = (double)t->E, I = (double)t->I;
	int b = t->mlp_bias;
#define NM(suffix) (snprintf(nm, sizeof nm, "%s." suffix, p), nm)
	if (t->gated && t->act != 'r') {    /* one fused gated op */
		const char *op = t->act == 's' ? "silu_mul" : "gelu_mul";
		if (t->fused) {
			dense(a, NM("gate_up"), rep, S, E, 2 * I, b, 0);
		} else {
			dense(a, NM("gate"), rep, S, E, I, b, 0);
			dense(a, NM("up"), rep, S, E, I, b, 0);
		}
		snprintf(nm, sizeof nm, "%s.%s", p, op);
		vec(a, nm, rep, PN_ELEMENTWISE, op, 1, S, I);
	} else if (t->gated) {
		dense(a, NM("gate"), rep, S, E, I, b, 0);
		dense(a, NM("up"), rep, S, E, I, b, 0);
		act(a, t, p, rep, S, I);
		vec(a, NM("gate.mul"), rep, PN_ELEMENTWISE, "mul", 1, S, I);
	} else {
		dense(a, NM("fc"), rep, S, E, I, b, 0);
		act(a, t, p, rep, S, I);
	}
	drop(a, NM("act_dropout"), rep, t->actdrop, 1, S, I);
	dense(a, NM("proj"), rep, S, I, E, b, 0);
#undef NM
}

/* A mixture of experts: the router, each expert's MLP at its share of the
 * tokens, the weighted sum of the chosen experts' outputs. */
static void moe(pn_arch *a, const tf *t, const char *p, double rep, double S)
{
	char nm[160];
	double n = (double)t->experts, k = (double)t->topk;
	dense(a, sub(nm, p, "router"), rep, S, (double)t->E, n, 0, 0);
	vec(a, sub(nm, p, "router.softmax"), rep, PN_SOFTMAX, NULL, 1, S, n);
	mlp(a, t, sub(nm, p, "experts"), rep * n, ceil(S * k / n));
	vec(a, sub(nm, p, "combine.mul"), rep, PN_ELEMENTWISE, "mul", 1,
	    S * k, (double)t->E);
	vec(a, sub(nm, p, "combine.add"), rep, PN_ELEMENTWISE, "add", 1,
	    S * (k - 1) + (k == 1), (double)t->E);
}

/* A sublayer's dropout and residual add (p: "....attn" or "....mlp"). */
static void residual(pn_arch *a, const tf *t, const char *p, double rep,
		     double S)
{
	char nm[160];
	snprintf(nm, sizeof nm, "%s.dropout", p);
	drop(a, nm, rep, t->drop, 1, S, (double)t->E);
	snprintf(nm, sizeof nm, "%s.add", p);
	vec(a, nm, rep, PN_ELEMENTWISE, "add", 1, S, (double)t->E);
}

/* The blocks of a stack (p: "h.0-11") over S tokens: pre- or post-norm;
 * a decoder of T5 adds cross-attention over the encoder's Senc tokens
 * (0: none). */
static void blocks(pn_arch *a, const tf *t, const char *p, double L,
		   double S, double Senc)
{
	char nm[160];
#define NM(suffix) (snprintf(nm, sizeof nm, "%s." suffix, p), nm)
	if (t->parallel) {      /* x + attn(norm(x)) + mlp(norm'(x)) */
		norm(a, t, NM("ln_1"), L, S);
		if (t->parallel == 2)
			norm(a, t, NM("ln_mlp"), L, S);
		attention(a, t, p, L, S, S, t->alibi);
		mlp(a, t, NM("mlp"), L, S);
		residual(a, t, NM("attn"), L, S);
		if (t->pardrop)
			drop(a, NM("mlp.dropout"), L, t->drop, 1, S,
			     (double)t->E);
		vec(a, NM("mlp.add"), L, PN_ELEMENTWISE, "add", 1, S,
		    (double)t->E);
		return;
	}
	if (!t->post)
		norm(a, t, NM("ln_1"), L, S);
	attention(a, t, p, L, S, S, t->t5 || t->alibi);
	if (t->sandwich)
		norm(a, t, NM("ln_attn_post"), L, S);
	residual(a, t, NM("attn"), L, S);
	if (Senc) {
		norm(a, t, NM("ln_cross"), L, S);
		snprintf(nm, sizeof nm, "%s.cross", p);
		attention(a, t, nm, L, S, Senc, 0);
		residual(a, t, NM("cross.attn"), L, S);
	}
	norm(a, t, NM("ln_2"), L, S);
	if (t->experts)
		moe(a, t, NM("mlp"), L, S);
	else
		mlp(a, t, NM("mlp"), L, S);
	if (t->sandwich)
		norm(a, t, NM("ln_mlp_post"), L, S);
	residual(a, t, NM("mlp"), L, S);
	if (t->post)
		norm(a, t, NM("ln_3"), L, S);
#undef NM
}

/* The token (and position, type) embeddings. */
static void embeddings(pn_arch *a, const tf *t, double S)
{
	double E = (double)t->E;
	if (t->mlm) {
		embedding(a, "embeddings.word", 1, S, (double)t->V, E);
		embedding(a, "embeddings.position", 1, S, (double)t->P, E);
		if (t->types)
			embedding(a, "embeddings.token_type", 1, S,
				  (double)t->types, E);
		vec(a, "embeddings.add", t->types ? 2 : 1, PN_ELEMENTWISE,
		    "add", 1, S, E);
		norm(a, t, "embeddings.ln", 1, S);
		drop(a, "embeddings.dropout", 1, t->embdrop, 1, S, E);
		return;
	}
	embedding(a, "wte", 1, S, (double)t->V, t->proj ? (double)t->proj : E);
	if (t->embnorm)
		norm(a, t, "embed.ln", 1, S);
	if (t->embscale)
		vec(a, "embed.scale", 1, PN_ELEMENTWISE, "mul", 1, S, E);
	if (t->proj)
		dense(a, "project_in", 1, S, (double)t->proj, E, 0, 0);
	if (t->P) {
		embedding(a, "wpe", 1, S, (double)t->P, E);
		vec(a, "embed.add", 1, PN_ELEMENTWISE, "add", 1, S, E);
	}
	drop(a, "embed.dropout", 1, t->embdrop, 1, S, E);
}

/* The loss head: BERT's masked-LM head, or an LM head; then the loss. */
static void head(pn_arch *a, const tf *t, double S)
{
	double E = (double)t->E, V = (double)t->V;
	if (t->mlm) {
		dense(a, "mlm.transform", 1, S, E, E, 1, 0);
		vec(a, "mlm.gelu", 1, PN_ELEMENTWISE, "gelu", 1, S, E);
		norm(a, t, "mlm.ln", 1, S);
		dense(a, "mlm.decoder", 1, S, E, V, 1, 0);
		if (t->tied)
			params(a, V);
		loss(a, "mlm", S, V);
		return;
	}
	if (t->proj)
		dense(a, "project_out", 1, S, E, (double)t->proj, 0, 0);
	dense(a, "lm_head", 1, S, t->proj ? (double)t->proj : E, V,
	      t->headbias, 0);
	if (t->tied)
		params(a, 0);
	if (t->logitcap) {      /* cap * tanh(logits / cap) */
		vec(a, "lm.softcap.mulu", 2, PN_ELEMENTWISE, "mulu", 1, S, V);
		vec(a, "lm.softcap.tanh", 1, PN_ELEMENTWISE, "tanh", 1, S, V);
	}
	loss(a, "lm", S, V);
}

/* T5: the encoder over Senc tokens, the decoder over Sdec, the head. */
static void t5(pn_arch *a, const tf *t, double Senc, double Sdec)
{
	char nm[64];
	embedding(a, "shared", 1, Senc, (double)t->V, (double)t->E);
	for (int dec = 0; dec < 2; dec++) {
		const char *stack = dec ? "decoder" : "encoder";
		double L = (double)(dec ? t->Ldec : t->L);
		double S = dec ? Sdec : Senc;
		if (dec) {
			/* the shared embedding again: no weights of its own */
			embedding(a, "decoder.embed", 1, S, (double)t->V,
				  (double)t->E);
			params(a, 0);
		}
		snprintf(nm, sizeof nm, "%s.dropout", stack);
		drop(a, nm, 1, t->embdrop, 1, S, (double)t->E);
		pn_layer *l = row(a, PN_EMBEDDING, 1, "%s.block.0.attn."
				  "relative_attention_bias", stack);
		l->seq_len = S * S;
		l->vocab = (double)t->buckets;
		l->embed_dim = (double)t->h;
		snprintf(nm, sizeof nm, "%s.block.0-%.0f", stack, L - 1);
		blocks(a, t, nm, L, S, dec ? Senc : 0);
		snprintf(nm, sizeof nm, "%s.ln_f", stack);
		norm(a, t, nm, 1, S);
		snprintf(nm, sizeof nm, "%s.ln_f.dropout", stack);
		drop(a, nm, 1, t->embdrop, 1, S, (double)t->E);
	}
	head(a, t, Sdec);
}

/* The sequence: --seq, else the config's context; at most the learned
 * position table. */
static long seqlen(cfgr *c, const tf *t, long seq)
{
	long ctx = t->P - t->Poff;
	static const char *const keys[] = {
		"max_position_embeddings", "n_positions", "n_ctx", 0
	};
	for (int i = 0; !ctx && keys[i]; i++)
		if (key(c, keys[i]))
			ctx = key_whole(c, keys[i], 1);
	if (c->bad)
		return -1;
	if (!ctx)
		ctx = t->ctx;
	if (!seq && !ctx) {
		afail(c->e, 0, "no sequence length in the config (no "
		      "max_position_embeddings or n_positions): give --seq");
		return -1;
	}
	if (seq && t->P && seq > ctx) {
		afail(c->e, 0, "seq %ld is longer than the position table of "
		      "%ld", seq, ctx);
		return -1;
	}
	return seq ? seq : ctx;
}

int pn_arch_hf(pn_arch *a, const pn_json *cfg, pn_arch_err *e)
{
	cfgr c = {cfg, e, 0};
	tf t;
	if (!cfg || cfg->kind != PN_JSON_OBJ)
		return afail(e, cfg ? cfg->line : 0, "the config is no JSON "
			     "object");
	if (read_tf(&c, &t) != 0)
		return -1;
	long seq = seqlen(&c, &t, a->o.seq);
	if (seq < 0)
		return -1;
	double S = (double)seq;
	if (a->o.dec_seq && !t.t5)
		return afail(e, 0, "--dec-seq is for an encoder-decoder "
			     "(model_type t5)");
	if (t.t5) {
		t5(a, &t, S, a->o.dec_seq ? (double)a->o.dec_seq : S);
	} else {
		char nm[64];
		embeddings(a, &t, S);
		snprintf(nm, sizeof nm, "%s.0-%ld", t.mlm ? "encoder.layer" :
			 "h", t.L - 1);
		blocks(a, &t, nm, (double)t.L, S, 0);
		if (!t.post)
			norm(a, &t, "ln_f", 1, S);
		head(a, &t, S);
	}
	pn_arch_finish(a, PN_OPT_ADAM);
	return 0;
}
