/* pn-import - convert archived per-operator GPU measurements (NeuSight,
 * PreNeT or Vidur CSV) to pn's layer TSV.  See pn-import(1). */
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "csv.h"
#include "err.h"
#include "gpuspec.h"
#include "layer.h"
#include "opt.h"
#include "tsv.h"
#include "vidur.h"

enum { FMT_AUTO, FMT_NEUSIGHT, FMT_PRENET, FMT_VIDUR, FMT_N };
static const char *const fmtname[] = {"auto", "neusight", "prenet", "vidur",
				       NULL};

static struct {
	int format;
	int layer;              /* forced layer type, or -1 */
	const char *device;     /* canonical name once resolved */
	const char *source;
	const char *gpuspecs;
	const char *output;
	int skip_bad;
} opt = {FMT_AUTO, -1, NULL, NULL, NULL, NULL, 0};

static pn_gpus *gpus;
static FILE *out;
static long nrows, nskipped;

/* ---- output rows ------------------------------------------------------- */

/* Columns after the layer contract's: the times' spread where the format
 * has it (PreNeT, Vidur); Vidur's operator and tensor-parallel degree. */
enum { C_DEVICE, C_TIME, C_TMIN, C_TMAX, C_TSTD, C_SOURCE, C_VOP, C_TP,
       C_END };
static const char *const colname[C_END] = {
	"device", "time_ms", "time_min_ms", "time_max_ms", "time_std_ms",
	"source", "vidur_op", "tp",
};

typedef struct {
	pn_layer l;             /* type, op, dimensions, bias, activation,
				   train, optimizer */
	pn_prec prec;
	const char *device;
	double time, tmin, tmax, tstd;
	const char *vop;        /* Vidur: its operator */
	double tp;              /* Vidur: num_tensor_parallel_workers */
} row;

typedef struct {
	int n, nlayer;          /* columns; of them, the layer contract's */
	const char *col[48];
} schema;

/* The output columns of layer type t read from format fmt: the contract's
 * (layer.h's writer; layernorm, softmax and elementwise share one list,
 * with op), then device, the times, source and Vidur's own. */
static const schema *schema_of(pn_layer_type t, int fmt)
{
	static schema cache[PN_NLAYERS][FMT_N];
	schema *s = &cache[t][fmt];
	if (s->n)
		return s;
	s->n = s->nlayer = pn_layer_columns(t, PN_LC_VECOP, s->col);
	for (int k = 0; k < C_END; k++) {
		int spread = k == C_TMIN || k == C_TMAX || k == C_TSTD;
		int vidur = k == C_VOP || k == C_TP;
		if ((!spread || fmt != FMT_NEUSIGHT) &&
		    (!vidur || fmt == FMT_VIDUR))
			s->col[s->n++] = colname[k];
	}
	return s;
}

static int same_schema(const schema *a, const schema *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (strcmp(a->col[i], b->col[i]) != 0)
			return 0;
	return 1;
}

static void put_header(const schema *s)
{
	for (int i = 0; i < s->n; i++) {
		if (i)
			putc('\t', out);
		fputs(s->col[i], out);
	}
	putc('\n', out);
}

static void put_row(const schema *s, const row *r, const char *source)
{
	for (int i = 0; i < s->n; i++) {
		char buf[32];
		if (i)
			putc('\t', out);
		if (i < s->nlayer) {
			fputs(pn_layer_field(&r->l, r->prec, s->col[i], buf),
			      out);
			continue;
		}
		switch (pn_name_index(colname, s->col[i])) {
		case C_DEVICE: fputs(r->device, out); break;
		case C_TIME: pn_put_num(out, r->time); break;
		case C_TMIN: pn_put_num(out, r->tmin); break;
		case C_TMAX: pn_put_num(out, r->tmax); break;
		case C_TSTD: pn_put_num(out, r->tstd); break;
		case C_SOURCE: fputs(source, out); break;
		case C_VOP: fputs(r->vop, out); break;
		case C_TP: pn_put_num(out, r->tp); break;
		default: PN_BUG("unknown output column");
		}
	}
	putc('\n', out);
}

/* Check the row against the contract and the first row's columns, then
 * write it (before the first row, the header). */
static void emit(const pn_csv *c, int fmt, const row *r)
{
	static const schema *first;
	static pn_layer_type first_type;
	char msg[160];
	if (pn_layer_check(&r->l, msg, sizeof msg))
		pn_csv_die_row(c, "impossible %s: %s",
			       pn_layer_name(r->l.type), msg);
	const schema *s = schema_of(r->l.type, fmt);
	if (!first) {
		first = s;
		first_type = r->l.type;
		put_header(s);
	} else if (s != first && !same_schema(s, first)) {
		pn_csv_die_row(c, "layer '%s' needs other columns than layer "
			       "'%s' of the first row (import each layer type "
			       "separately)", pn_layer_name(r->l.type),
			       pn_layer_name(first_type));
	}
	put_row(s, r, opt.source ? opt.source : fmtname[fmt]);
	nrows++;
}

/* ---- reading fields ---------------------------------------------------- */

/* A bad field, cut to at most 40 bytes for a message. */
static const char *shown(const pn_csv *c, int col)
{
	static char b[48];
	snprintf(b, sizeof b, "%s", pn_csv_str(c, col));
	if (pn_csv_len(c, col) > 40)
		strcpy(b + 37, "...");
	return b;
}

static double whole(const pn_csv *c, int col, double min)
{
	double v;
	if (pn_parse_num(pn_csv_str(c, col), pn_csv_len(c, col), &v) < 0 ||
	    v != floor(v) || fabs(v) >= 9007199254740992.0)
		pn_csv_die(c, col, "'%s' is not a whole number", shown(c, col));
	if (v < min)
		pn_csv_die(c, col, "'%s' is %s", shown(c, col),
			   min > 0 ? "not positive" : "negative");
	return v;
}

/* A code 0..n-1. */
static int code(const pn_csv *c, int col, int n)
{
	double v;
	if (pn_parse_num(pn_csv_str(c, col), pn_csv_len(c, col), &v) < 0 ||
	    v != floor(v) || v < 0 || v >= n)
		pn_csv_die(c, col, "unknown code '%s' (0 to %d)", shown(c, col),
			   n - 1);
	return (int)v;
}

static int boolean(const pn_csv *c, int col)
{
	const char *s = pn_csv_str(c, col);
	if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0)
		return 1;
	if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0)
		return 0;
	pn_csv_die(c, col, "'%s' is not a boolean (True, False, 1 or 0)",
		   shown(c, col));
}

/* A measured time in ms: 1 when it is a positive number; 0 when it is
 * missing or not positive and --skip-bad is on; dies otherwise. */
static int time_ms(const pn_csv *c, int col, double *v)
{
	const char *s = pn_csv_str(c, col);
	size_t n = pn_csv_len(c, col);
	int missing = n == 0 || strcmp(s, "NA") == 0 ||
		      strcasecmp(s, "nan") == 0;
	if (!missing && pn_parse_num(s, n, v) < 0)
		pn_csv_die(c, col, "'%s' is not a number", shown(c, col));
	if (!missing && *v > 0)
		return 1;
	if (opt.skip_bad)
		return 0;
	if (n == 0)
		pn_csv_die(c, col, "no value");
	if (missing)
		pn_csv_die(c, col, "'%s' is not a number", shown(c, col));
	pn_csv_die(c, col, "'%s' is not positive", shown(c, col));
}

static double nonneg(const pn_csv *c, int col)
{
	double v;
	if (pn_parse_num(pn_csv_str(c, col), pn_csv_len(c, col), &v) < 0)
		pn_csv_die(c, col, "'%s' is not a number", shown(c, col));
	if (v < 0)
		pn_csv_die(c, col, "'%s' is negative", shown(c, col));
	return v;
}

/* Canonical gpuspecs name of a device string; the last few are cached. */
static const char *device(const pn_csv *c, int col)
{
	static struct {
		char *raw;
		const char *name;
	} cache[8];
	static int next;
	if (opt.device)
		return opt.device;
	const char *raw = pn_csv_str(c, col);
	for (int i = 0; i < 8; i++)
		if (cache[i].raw && strcmp(cache[i].raw, raw) == 0)
			return cache[i].name;
	const pn_gpu *g = pn_gpus_need(gpus, raw, pn_csv_path(c),
				       pn_csv_lineno(c));
	int k = next++ % 8;
	free(cache[k].raw);
	cache[k].raw = pn_xstrdup(raw);
	cache[k].name = g->name;
	return g->name;
}

static int need_col(const pn_csv *c, const char *name)
{
	int col = pn_csv_find(c, name);
	if (col < 0)
		pn_die_at(PN_EXIT_DATA, pn_csv_path(c), 1,
			  "missing column '%s'", name);
	return col;
}

/* ---- NeuSight ---------------------------------------------------------- */

enum { NS_B, NS_M, NS_N, NS_K, NS_H, NS_CIN, NS_COUT, NS_KERNEL, NS_IMAGE,
       NS_STRIDE, NS_PADDING, NS_NDIM };
static const char *const ns_dim[NS_NDIM] = {
	"B", "M", "N", "K", "H", "Input_Channel", "Output_Channel",
	"Kernel_Szie", "Input_Size", "Stride", "Padding"
};

static double ns_get(const pn_csv *c, const int *dim, int which,
		     const char *op, double min)
{
	if (dim[which] < 0)
		pn_csv_die_row(c, "missing column '%s' (needed by OPName '%s')",
			       ns_dim[which], op);
	return whole(c, dim[which], min);
}

static _Noreturn void ns_unknown_op(const pn_csv *c, int col)
{
	char list[256];
	pn_csv_die(c, col, "unknown OPName '%s' (one of: %s)", shown(c, col),
		   pn_ns_list(0, list, sizeof list));
}

static long import_neusight(pn_csv *c)
{
	int cop = need_col(c, "OPName"), clat = need_col(c, "Latency");
	int cdev = opt.device ? -1 : need_col(c, "Device");
	int dim[NS_NDIM];
	for (int i = 0; i < NS_NDIM; i++)
		dim[i] = pn_csv_find(c, ns_dim[i]);
	long n = 0;
	while (pn_csv_read(c)) {
		n++;
		const char *op = pn_csv_str(c, cop);
		const pn_ns_op *k = pn_ns_opname(op);
		if (!k)
			ns_unknown_op(c, cop);
		row r;
		memset(&r, 0, sizeof r);
		pn_layer *l = &r.l;
		l->type = k->type;
		if (opt.layer >= 0 && (int)l->type != opt.layer)
			pn_csv_die(c, cop, "OPName '%s' is layer '%s', not "
				   "'%s' as --layer says", op,
				   pn_layer_name(l->type),
				   pn_layer_name((pn_layer_type)opt.layer));
		if (!time_ms(c, clat, &r.time)) {
			nskipped++;
			continue;
		}
		double B = ns_get(c, dim, NS_B, op, 1);
		switch (l->type) {
		case PN_DENSE:
			l->batch = B * ns_get(c, dim, NS_M, op, 1);
			l->in_features = ns_get(c, dim, NS_N, op, 1);
			l->out_features = ns_get(c, dim, NS_K, op, 1);
			l->bias = 1;
			break;
		case PN_BMM:
			l->batch = B;
			l->m = ns_get(c, dim, NS_M, op, 1);
			l->n = ns_get(c, dim, NS_N, op, 1);
			l->k = ns_get(c, dim, NS_K, op, 1);
			break;
		case PN_CONV2D:
			l->batch = B;
			l->in_channels = ns_get(c, dim, NS_CIN, op, 1);
			l->out_channels = ns_get(c, dim, NS_COUT, op, 1);
			l->kernel = ns_get(c, dim, NS_KERNEL, op, 1);
			l->image = ns_get(c, dim, NS_IMAGE, op, 1);
			l->stride = ns_get(c, dim, NS_STRIDE, op, 1);
			l->padding = ns_get(c, dim, NS_PADDING, op, 0);
			break;
		default:
			l->batch = B;
			l->seq_len = 1;
			l->dim = ns_get(c, dim, NS_H, op, 1);
			break;
		}
		snprintf(l->op, sizeof l->op, "%s", k->op ? k->op :
			 pn_layer_name(l->type));
		l->optimizer = PN_OPT_NONE;
		r.prec = PN_FP32;
		r.device = device(c, cdev);
		emit(c, FMT_NEUSIGHT, &r);
	}
	return n;
}

/* ---- PreNeT ------------------------------------------------------------ */

enum { P_BATCH, P_PRECISION, P_OPTIMIZER, P_ACT, P_BIAS, P_DIN, P_DOUT,
       P_DHIDDEN, P_MATSIZE, P_KERNEL, P_CIN, P_COUT, P_STRIDES, P_PADDING,
       P_SEQ, P_EMBED, P_HEADS, P_VOCAB, P_BIDIR, P_LAYERS, P_RNNTYPE,
       P_MEDIAN, P_MIN, P_MAX, P_STD, P_GPU, P_N };
static const char *const p_name[P_N] = {
	"batchsize", "precision", "optimizer", "activation_fct", "use_bias",
	"dim_input", "dim_output", "dim_hidden", "matsize", "kernelsize",
	"channels_in", "channels_out", "strides", "padding", "seq_len",
	"embed_dim", "num_heads", "vocab_size", "is_bidirectional",
	"num_layers", "rnn_type", "timeUsed_median", "timeUsed_min",
	"timeUsed_max", "timeUsed_std", "GPU",
};

/* Columns each layer type needs beyond P_BATCH, P_PRECISION and times. */
static const signed char p_req_dense[] = {P_DIN, P_DOUT, P_ACT, -1};
static const signed char p_req_conv[] = {P_MATSIZE, P_KERNEL, P_CIN, P_COUT,
	P_STRIDES, P_PADDING, P_ACT, P_BIAS, -1};
static const signed char p_req_rnn[] = {P_SEQ, P_DIN, P_DHIDDEN, P_BIDIR,
	P_LAYERS, P_ACT, -1};
static const signed char p_req_attn[] = {P_SEQ, P_EMBED, P_HEADS, -1};
static const signed char p_req_emb[] = {P_SEQ, P_VOCAB, P_EMBED, -1};
static const signed char p_req_seq[] = {P_SEQ, P_EMBED, -1};
static const signed char p_req_common[] = {P_BATCH, P_PRECISION, P_MEDIAN,
	P_MIN, P_MAX, P_STD, -1};

static const signed char *p_required(int t)
{
	switch (t) {
	case PN_DENSE: return p_req_dense;
	case PN_CONV2D: return p_req_conv;
	case PN_RNN: case PN_LSTM: case PN_GRU: return p_req_rnn;
	case PN_ATTENTION: return p_req_attn;
	case PN_EMBEDDING: return p_req_emb;
	case PN_LAYERNORM: case PN_POSENC: return p_req_seq;
	default: return NULL;
	}
}

/* The layer type from the columns; -2 for "rnn, lstm or gru by rnn_type",
 * -1 when it cannot be told. */
static int p_guess(const int *col)
{
	if (col[P_RNNTYPE] >= 0)
		return -2;
	if (col[P_MATSIZE] >= 0)
		return PN_CONV2D;
	if (col[P_DIN] >= 0 && col[P_DOUT] >= 0)
		return PN_DENSE;
	if (col[P_HEADS] >= 0)
		return PN_ATTENTION;
	if (col[P_VOCAB] >= 0)
		return PN_EMBEDDING;
	if (col[P_SEQ] >= 0 && col[P_EMBED] >= 0)
		return col[P_OPTIMIZER] >= 0 ? PN_LAYERNORM : PN_POSENC;
	return -1;
}

static void p_need(const pn_csv *c, const int *col, int which)
{
	if (col[which] < 0)
		pn_die_at(PN_EXIT_DATA, pn_csv_path(c), 1,
			  "missing column '%s'", p_name[which]);
}

static long import_prenet(pn_csv *c)
{
	int col[P_N];
	for (int i = 0; i < P_N; i++)
		col[i] = pn_csv_find(c, p_name[i]);
	int type = opt.layer >= 0 ? opt.layer : p_guess(col);
	if (type == -1)
		pn_die_at(PN_EXIT_DATA, pn_csv_path(c), 1, "cannot tell the "
			  "layer type from the columns (use --layer)");
	if (type == -2)
		p_need(c, col, P_RNNTYPE);
	const signed char *req = p_required(type < 0 ? PN_RNN : type);
	if (!req)
		pn_usage_error("--layer %s does not apply to PreNeT files",
			       pn_layer_name((pn_layer_type)type));
	for (int i = 0; p_req_common[i] >= 0; i++)
		p_need(c, col, p_req_common[i]);
	for (int i = 0; req[i] >= 0; i++)
		p_need(c, col, req[i]);
	if (!opt.device && col[P_GPU] < 0)
		pn_usage_error("%s: no GPU column; give --device NAME",
			       pn_csv_path(c));

	/* PreNeT's optimizer codes, as pn's optimizers */
	static const int p_opt[] = {PN_OPT_NONE, PN_OPT_SGD, PN_OPT_ADADELTA,
				    PN_OPT_ADAGRAD, PN_OPT_ADAM,
				    PN_OPT_RMSPROP};
	long n = 0;
	while (pn_csv_read(c)) {
		n++;
		row r;
		memset(&r, 0, sizeof r);
		pn_layer *l = &r.l;
		if (type == -2) {
			const char *s = pn_csv_str(c, col[P_RNNTYPE]);
			if (strcasecmp(s, "rnn") == 0)
				l->type = PN_RNN;
			else if (strcasecmp(s, "lstm") == 0)
				l->type = PN_LSTM;
			else if (strcasecmp(s, "gru") == 0)
				l->type = PN_GRU;
			else
				pn_csv_die(c, col[P_RNNTYPE], "unknown value "
					   "'%s' (one of: RNN, LSTM, GRU)",
					   shown(c, col[P_RNNTYPE]));
		} else {
			l->type = (pn_layer_type)type;
		}
		if (!time_ms(c, col[P_MEDIAN], &r.time)) {
			nskipped++;
			continue;
		}
		r.tmin = nonneg(c, col[P_MIN]);
		r.tmax = nonneg(c, col[P_MAX]);
		r.tstd = nonneg(c, col[P_STD]);
		l->batch = whole(c, col[P_BATCH], 1);
		switch (l->type) {
		case PN_DENSE:
			l->in_features = whole(c, col[P_DIN], 1);
			l->out_features = whole(c, col[P_DOUT], 1);
			/* torch.nn.Linear has a bias unless told otherwise */
			l->bias = col[P_BIAS] < 0 || boolean(c, col[P_BIAS]);
			break;
		case PN_CONV2D: {
			l->image = whole(c, col[P_MATSIZE], 1);
			l->kernel = whole(c, col[P_KERNEL], 1);
			l->in_channels = whole(c, col[P_CIN], 1);
			l->out_channels = whole(c, col[P_COUT], 1);
			l->stride = whole(c, col[P_STRIDES], 1);
			const char *p = pn_csv_str(c, col[P_PADDING]);
			if (strcmp(p, "valid") == 0)
				l->padding = 0;
			else if (strcmp(p, "same") == 0)
				l->padding = floor((l->kernel - 1) / 2);
			else
				pn_csv_die(c, col[P_PADDING], "unknown value "
					   "'%s' (one of: valid, same)",
					   shown(c, col[P_PADDING]));
			l->bias = boolean(c, col[P_BIAS]);
			break;
		}
		case PN_RNN: case PN_LSTM: case PN_GRU:
			l->seq_len = whole(c, col[P_SEQ], 1);
			l->input_size = whole(c, col[P_DIN], 1);
			l->hidden = whole(c, col[P_DHIDDEN], 1);
			l->layers = whole(c, col[P_LAYERS], 1);
			l->bidirectional = boolean(c, col[P_BIDIR]);
			break;
		case PN_ATTENTION:
			l->seq_len = whole(c, col[P_SEQ], 1);
			l->embed_dim = whole(c, col[P_EMBED], 1);
			l->heads = whole(c, col[P_HEADS], 1);
			break;
		case PN_EMBEDDING:
			l->seq_len = whole(c, col[P_SEQ], 1);
			l->vocab = whole(c, col[P_VOCAB], 1);
			l->embed_dim = whole(c, col[P_EMBED], 1);
			break;
		case PN_LAYERNORM:
			l->seq_len = whole(c, col[P_SEQ], 1);
			l->dim = whole(c, col[P_EMBED], 1);
			break;
		case PN_POSENC:
			l->seq_len = whole(c, col[P_SEQ], 1);
			l->embed_dim = whole(c, col[P_EMBED], 1);
			break;
		default:
			PN_BUG("PreNeT layer type without columns");
		}
		if (col[P_ACT] >= 0 && pn_layer_defs[l->type].activation)
			l->activation = code(c, col[P_ACT], PN_NACT);
		snprintf(l->op, sizeof l->op, "%s", pn_layer_name(l->type));
		l->optimizer = col[P_OPTIMIZER] >= 0
			? p_opt[code(c, col[P_OPTIMIZER], 6)] : PN_OPT_NONE;
		l->train = l->optimizer != PN_OPT_NONE;
		const char *prec = pn_csv_str(c, col[P_PRECISION]);
		if (strcmp(prec, "32") == 0)
			r.prec = PN_FP32;
		else if (strcmp(prec, "16") == 0)
			r.prec = PN_FP16;
		else
			pn_csv_die(c, col[P_PRECISION], "unknown value "
				   "'%s' (one of: 32, 16)",
				   shown(c, col[P_PRECISION]));
		r.device = device(c, col[P_GPU]);
		emit(c, FMT_PRENET, &r);
	}
	return n;
}

/* ---- Vidur ------------------------------------------------------------- */

enum { V_HEAD, V_KVHEAD, V_EMBD, V_EXPANDED, V_VOCAB, V_GATED, V_TOKENS,
       V_TP, V_N };
static const char *const v_name[V_N] = {
	"n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size",
	"use_gated_mlp", "num_tokens", "num_tensor_parallel_workers",
};
/* The statistics of time_stats.<op>.<stat>, as row's times. */
enum { VS_MEDIAN, VS_MIN, VS_MAX, VS_STD, VS_N };
static const char *const v_stat[VS_N] = {"median", "min", "max", "std"};

/* Columns of the operators of layer type t: time[i][stat], -1 for an
 * optional operator whose columns are absent or an operator of another
 * type. */
static int v_columns(const pn_csv *c, int t, int time[][VS_N])
{
	int found = 0;
	for (int i = 0; pn_vidur_ops[i].name; i++) {
		const pn_vidur_op *o = &pn_vidur_ops[i];
		char name[96];
		for (int k = 0; k < VS_N; k++) {
			snprintf(name, sizeof name, "time_stats.%s.%s", o->name,
				 v_stat[k]);
			time[i][k] = (int)o->type != t ? -1 :
				     o->optional ? pn_csv_find(c, name) :
				     need_col(c, name);
		}
		found += time[i][VS_MEDIAN] >= 0;
	}
	return found;
}

/* The configuration of the current row, checked. */
static void v_config(const pn_csv *c, const int *col, pn_vidur_cfg *v)
{
	v->n_head = whole(c, col[V_HEAD], 1);
	v->n_kv_head = whole(c, col[V_KVHEAD], 1);
	v->n_embd = whole(c, col[V_EMBD], 1);
	v->n_expanded_embd = whole(c, col[V_EXPANDED], 1);
	v->vocab = whole(c, col[V_VOCAB], 1);
	v->gated = boolean(c, col[V_GATED]);
	v->tokens = whole(c, col[V_TOKENS], 1);
	v->tp = whole(c, col[V_TP], 1);
	char msg[160];
	if (pn_vidur_check(v, msg, sizeof msg))
		pn_csv_die_row(c, "impossible model: %s", msg);
}

static long import_vidur(pn_csv *c)
{
	if (opt.layer < 0)
		pn_usage_error("%s: a Vidur file holds several layer types; "
			       "give --layer (dense, embedding, layernorm, "
			       "elementwise or posenc)", pn_csv_path(c));
	if (!opt.device)
		pn_usage_error("%s: no GPU column; give --device NAME",
			       pn_csv_path(c));
	int col[V_N], time[16][VS_N];
	for (int i = 0; i < V_N; i++)
		col[i] = need_col(c, v_name[i]);
	if (v_columns(c, opt.layer, time) == 0)
		pn_usage_error("--layer %s: no Vidur operator is one",
			       pn_layer_name((pn_layer_type)opt.layer));
	long n = 0;
	while (pn_csv_read(c)) {
		n++;
		pn_vidur_cfg v;
		v_config(c, col, &v);
		for (int i = 0; pn_vidur_ops[i].name; i++) {
			row r;
			memset(&r, 0, sizeof r);
			if (time[i][VS_MEDIAN] < 0 ||
			    pn_vidur_layer(&pn_vidur_ops[i], &v, &r.l) != 0)
				continue;
			if (!time_ms(c, time[i][VS_MEDIAN], &r.time)) {
				nskipped++;
				continue;
			}
			r.tmin = nonneg(c, time[i][VS_MIN]);
			r.tmax = nonneg(c, time[i][VS_MAX]);
			r.tstd = nonneg(c, time[i][VS_STD]);
			r.prec = r.l.prec;
			r.device = opt.device;
			r.vop = pn_vidur_ops[i].name;
			r.tp = v.tp;
			emit(c, FMT_VIDUR, &r);
		}
	}
	return n;
}

/* ---- main -------------------------------------------------------------- */

static int detect(const pn_csv *c)
{
	if (pn_csv_ncols(c) >= 3 &&
	    strcmp(pn_csv_colname(c, 0), "OPName") == 0 &&
	    strcmp(pn_csv_colname(c, 1), "Latency") == 0 &&
	    strcmp(pn_csv_colname(c, 2), "Device") == 0)
		return FMT_NEUSIGHT;
	if (pn_csv_find(c, "batchsize") >= 0 &&
	    pn_csv_find(c, "timeUsed_median") >= 0)
		return FMT_PRENET;
	if (pn_csv_find(c, "num_tokens") >= 0 &&
	    pn_csv_find(c, "num_tensor_parallel_workers") >= 0)
		return FMT_VIDUR;
	pn_die_at(PN_EXIT_DATA, pn_csv_path(c), 1, "unknown CSV layout: "
		  "neither NeuSight (OPName,Latency,Device,...), PreNeT "
		  "(batchsize,...,timeUsed_median,...) nor Vidur (time_stats."
		  "<op>.<stat>,...,num_tokens,num_tensor_parallel_workers); "
		  "see --format");
}

static void import(const char *path)
{
	/* static: still reachable when a later error exits (LeakSanitizer) */
	static pn_csv *c;
	c = pn_csv_open(path);
	int fmt = opt.format != FMT_AUTO ? opt.format : detect(c);
	long n = fmt == FMT_NEUSIGHT ? import_neusight(c) :
		 fmt == FMT_PRENET ? import_prenet(c) : import_vidur(c);
	if (n == 0)
		pn_die_at(PN_EXIT_DATA, pn_csv_path(c), 0, "no data rows");
	pn_csv_close(c);
	c = NULL;
}

static void usage(void)
{
	printf("\
Usage: pn-import [OPTION]... [FILE]...\n\
Convert per-operator GPU measurements archived as CSV (NeuSight, PreNeT or\n\
Vidur layout) to pn layer TSV on standard output.\n\
\n\
With no FILE, or when FILE is -, read standard input.  Input may be gzip'd.\n\
Several FILEs are concatenated under one header; their rows must all need\n\
the same columns (layernorm, softmax and elementwise share theirs).\n\
\n\
  -f, --format=FORMAT  input layout, neusight, prenet or vidur (default:\n\
                         told from the header of each FILE)\n\
      --layer=TYPE     PreNeT: the layer type of every row instead of the\n\
                         one told from the columns; NeuSight: fail on a row\n\
                         of another type; Vidur (required): the operators\n\
                         of that type, each row of FILE giving one row per\n\
                         operator\n\
      --device=NAME    GPU of every row (a name or alias in the GPU table),\n\
                         instead of the Device or GPU column (required for\n\
                         Vidur, which has none)\n\
      --source=TEXT    value of the source column (default: neusight,\n\
                         prenet or vidur)\n\
      --gpuspecs=FILE  GPU table that resolves device names (default:\n\
                         $PN_GPUSPECS, else the installed gpus.tsv)\n\
      --skip-bad       skip rows whose time is missing or not positive\n\
                         (failed measurements) and count them on stderr\n\
  -o, --output=FILE    write to FILE (replaced only on success)\n\
  -h, --help           display this help and exit\n\
      --version        output version information and exit\n\
\n\
Exit status: 0 success, 1 bad data or runtime error, 2 bad command line.\n\
See pn-import(1) for the column mapping.\n");
}

int main(int argc, char **argv)
{
	pn_init("pn-import");
	pn_stdout_init();
	enum { O_LAYER = 256, O_DEVICE, O_SOURCE, O_GPUSPECS, O_SKIP,
	       O_VERSION };
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"layer", required_argument, NULL, O_LAYER},
		{"device", required_argument, NULL, O_DEVICE},
		{"source", required_argument, NULL, O_SOURCE},
		{"gpuspecs", required_argument, NULL, O_GPUSPECS},
		{"skip-bad", no_argument, NULL, O_SKIP},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, O_VERSION},
		{NULL, 0, NULL, 0}
	};
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			opt.format = FMT_NEUSIGHT + pn_opt_choice("--format",
				optarg, fmtname + 1);
			break;
		case O_LAYER:
			opt.layer = pn_layer_type_of(optarg);
			if (opt.layer < 0)
				pn_usage_error("unknown layer type '%s'",
					       optarg);
			break;
		case O_DEVICE: opt.device = optarg; break;
		case O_SOURCE:
			if (!*optarg || strpbrk(optarg, "\t\r\n"))
				pn_usage_error("--source needs a non-empty "
					       "text without tabs or newlines");
			opt.source = optarg;
			break;
		case O_GPUSPECS: opt.gpuspecs = optarg; break;
		case O_SKIP: opt.skip_bad = 1; break;
		case 'o': opt.output = optarg; break;
		case 'h':
			usage();
			pn_output_close(stdout);
			return PN_EXIT_OK;
		case O_VERSION: pn_version();
		case ':':
			pn_usage_error("option '%s' requires an argument",
				       argv[optind - 1]);
		default:
			/* optopt: a short option, or the value of a long one
			 * given an argument it does not take */
			if (optopt > 0 && optopt < 256 &&
			    !strchr("foh", optopt))
				pn_usage_error("invalid option -- '%c'",
					       optopt);
			pn_usage_error("unrecognized option '%s'",
				       argv[optind - 1]);
		}
	}

	gpus = pn_gpus_load(opt.gpuspecs);
	if (opt.device)
		opt.device = pn_gpus_need(gpus, opt.device, NULL, 0)->name;
	out = pn_output_open(opt.output);
	if (optind == argc)
		import("-");
	for (int i = optind; i < argc; i++)
		import(argv[i]);
	if (nskipped)
		pn_warn("skipped %ld row%s without a positive time", nskipped,
			nskipped == 1 ? "" : "s");
	if (nrows == 0)
		pn_die(PN_EXIT_DATA, "no data rows left after --skip-bad");
	pn_output_close(out);
	pn_gpus_free(gpus);
	return PN_EXIT_OK;
}
