#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "err.h"

static const char *const precs[PN_NPREC + 1] = {"fp32", "tf32", "fp16", "bf16", 0};
static const char *const opts[PN_NOPT + 1] = {
	"none", "sgd", "adam", "adagrad", "adadelta", "rmsprop", 0
};
static const char *const acts[PN_NACT + 1] = {"none", "relu", "tanh", "sigmoid", 0};
/* must agree with layer.c, which owns the contract */
static const char *const elemops[] = {
	"add", "sub", "mul", "div", "pow", "addu", "subu", "mulu", "divu",
	"powu", "relu", "gelu", "tanh", "sigmoid", "exp", "neg", "copy",
	"dropout", 0
};

static int lookup(const char *const *list, const char *s)
{
	for (int i = 0; list[i]; i++)
		if (strcmp(list[i], s) == 0)
			return i;
	return -1;
}

const char *pn_prec_name(pn_prec p) { return (unsigned)p < PN_NPREC ? precs[p] : "?"; }
int pn_prec_of(const char *name) { return lookup(precs, name); }
const char *pn_opt_name(int o) { return (unsigned)o < PN_NOPT ? opts[o] : "?"; }
int pn_opt_of(const char *name) { return lookup(opts, name); }
const char *pn_act_name(int a) { return (unsigned)a < PN_NACT ? acts[a] : "?"; }
int pn_act_of(const char *name) { return lookup(acts, name); }
const char *const *pn_elem_ops(void) { return elemops; }

int pn_elem_binary(const char *op)
{
	static const char *const bin[] = {"add", "sub", "mul", "div", "pow", 0};
	return lookup(bin, op) >= 0;
}

static const struct {
	const char *name;
	size_t off;
	double min;
} fields[] = {
#define D(f, lo) {#f, offsetof(pn_layer, f), lo}
	D(batch, 1), D(seq_len, 1), D(dim, 1), D(in_features, 1),
	D(out_features, 1), D(m, 1), D(n, 1), D(k, 1), D(in_channels, 1),
	D(out_channels, 1), D(kernel, 1), D(image, 1), D(stride, 1),
	D(padding, 0), D(embed_dim, 1), D(heads, 1), D(vocab, 1),
	D(input_size, 1), D(hidden, 1), D(layers, 1), D(bidirectional, 0),
	D(bias, 0),
#undef D
};
#define NFIELDS (sizeof fields / sizeof fields[0])
#define NDIMS (NFIELDS - 1)      /* every field but bias is a dimension */

static int field(const char *name)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (strcmp(fields[i].name, name) == 0)
			return (int)i;
	return -1;
}

int pn_layer_set(pn_layer *l, const char *name, double v)
{
	int i = field(name);
	if (i < 0)
		return -1;
	*(double *)((char *)l + fields[i].off) = v;
	return 0;
}

double pn_layer_get(const pn_layer *l, const char *name)
{
	int i = field(name);
	return i < 0 ? NAN : *(const double *)((const char *)l + fields[i].off);
}

struct pn_config_cols {
	int layer, op, precision, pass, optimizer, activation, dropout, lr;
	int num[NFIELDS];
};

pn_config_cols *pn_config_cols_new(const pn_tsv *in)
{
	pn_config_cols *c = pn_xcalloc(1, sizeof *c);
	c->layer = pn_tsv_col(in, "layer");
	c->op = pn_tsv_find(in, "op");
	c->precision = pn_tsv_find(in, "precision");
	c->pass = pn_tsv_find(in, "pass");
	c->optimizer = pn_tsv_find(in, "optimizer");
	c->activation = pn_tsv_find(in, "activation");
	c->dropout = pn_tsv_find(in, "dropout");
	c->lr = pn_tsv_find(in, "learning_rate");
	for (size_t i = 0; i < NFIELDS; i++)
		c->num[i] = pn_tsv_find(in, fields[i].name);
	return c;
}

void pn_config_cols_free(pn_config_cols *c)
{
	free(c);
}

static int needs(pn_layer_type t, const char *name)
{
	for (const char *const *d = pn_layer_dims(t); *d; d++)
		if (strcmp(*d, name) == 0)
			return 1;
	return 0;
}

/* Optional enumerated column: dflt when absent or NA, else its index or -1
 * with a message. */
static int opt_enum(const pn_tsv *in, int col, const char *const *list,
		    int dflt, char *msg, size_t n)
{
	if (col < 0 || pn_tsv_na(in, col))
		return dflt;
	int v = lookup(list, pn_tsv_str(in, col));
	if (v < 0)
		snprintf(msg, n, "column '%s': unknown value '%s'",
			 pn_tsv_colname(in, col), pn_tsv_str(in, col));
	return v;
}

/* Optional number column: dflt when absent or NA; -1 on a bad value. */
static int opt_num(const pn_tsv *in, int col, double dflt, double *v,
		   char *msg, size_t n)
{
	*v = dflt;
	if (col < 0 || pn_tsv_na(in, col))
		return 0;
	if (pn_parse_num(pn_tsv_str(in, col), pn_tsv_len(in, col), v) != 0) {
		snprintf(msg, n, "column '%s': '%s' is not a number",
			 pn_tsv_colname(in, col), pn_tsv_str(in, col));
		return -1;
	}
	return 0;
}

static int whole(const pn_tsv *in, int col, double *v, char *msg, size_t n)
{
	if (pn_parse_num(pn_tsv_str(in, col), pn_tsv_len(in, col), v) != 0 ||
	    *v != floor(*v) || fabs(*v) >= 0x1p53) {
		snprintf(msg, n, "column '%s': '%s' is not a whole number",
			 pn_tsv_colname(in, col), pn_tsv_str(in, col));
		return -1;
	}
	return 0;
}

int pn_config_read(const pn_tsv *in, const pn_config_cols *c, pn_config *cfg,
		   char *msg, size_t n)
{
	memset(cfg, 0, sizeof *cfg);
	pn_layer *l = &cfg->l;
	const char *name = pn_tsv_str(in, c->layer);
	int t = pn_layer_type_of(name);
	if (t < 0) {
		snprintf(msg, n, "unknown layer type '%s'", name);
		return -1;
	}
	l->type = (pn_layer_type)t;
	snprintf(l->op, sizeof l->op, "%s", name);
	if (t == PN_ELEMENTWISE) {
		if (c->op < 0 || pn_tsv_na(in, c->op)) {
			snprintf(msg, n, "missing column 'op' (needed by layer "
				 "'elementwise')");
			return -1;
		}
		if (lookup(elemops, pn_tsv_str(in, c->op)) < 0) {
			snprintf(msg, n, "column 'op': unknown elementwise op "
				 "'%s'", pn_tsv_str(in, c->op));
			return -1;
		}
		snprintf(l->op, sizeof l->op, "%s", pn_tsv_str(in, c->op));
	}
	for (size_t i = 0; i < NDIMS; i++) {
		if (!needs(l->type, fields[i].name))
			continue;
		int col = c->num[i];
		if (col < 0 || pn_tsv_na(in, col)) {
			snprintf(msg, n, "missing column '%s' (needed by layer "
				 "'%s')", fields[i].name, name);
			return -1;
		}
		double v;
		if (whole(in, col, &v, msg, n) != 0)
			return -1;
		if (v < fields[i].min) {
			snprintf(msg, n, "column '%s': %s must be at least %g, "
				 "not %g", fields[i].name, fields[i].name,
				 fields[i].min, v);
			return -1;
		}
		*(double *)((char *)l + fields[i].off) = v;
	}
	if (l->seq_len == 0)
		l->seq_len = 1;
	int bcol = c->num[NFIELDS - 1];
	if (bcol >= 0 && !pn_tsv_na(in, bcol)) {
		if (whole(in, bcol, &l->bias, msg, n) != 0)
			return -1;
	} else {
		l->bias = t == PN_DENSE || t == PN_CONV2D;
	}
	msg[0] = 0;
	int act = opt_enum(in, c->activation, acts, 0, msg, n);
	int prec = opt_enum(in, c->precision, precs, 0, msg, n);
	static const char *const passes[] = {"fwd", "train", 0};
	int pass = opt_enum(in, c->pass, passes, 0, msg, n);
	int opt = opt_enum(in, c->optimizer, opts, PN_OPT_NONE, msg, n);
	if (msg[0])
		return -1;
	static const int pbytes[] = {4, 4, 2, 2};
	l->activation = act;
	l->bytes = pbytes[prec];
	l->train = pass;
	l->optimizer = opt;
	cfg->prec = (pn_prec)prec;
	if (opt_num(in, c->dropout, t == PN_ELEMENTWISE ? 0.5 : 0,
		    &cfg->dropout, msg, n) != 0 ||
	    opt_num(in, c->lr, 0, &cfg->lr, msg, n) != 0)
		return -1;
	if (!(cfg->dropout >= 0 && cfg->dropout < 1)) {
		snprintf(msg, n, "column 'dropout': %g is not in [0, 1)",
			 cfg->dropout);
		return -1;
	}
	if (cfg->lr < 0) {
		snprintf(msg, n, "column 'learning_rate': %g is negative",
			 cfg->lr);
		return -1;
	}
	char why[160];
	if (pn_layer_check(l, why, sizeof why)) {
		snprintf(msg, n, "impossible %s: %s", name, why);
		return -1;
	}
	return 0;
}
