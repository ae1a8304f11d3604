#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "precision.h"
#include "roofline.h"
#include "tsv.h"

const char *const pn_pmode_names[PN_NPMODES + 1] = {
	"fp32", "tf32", "fp16", "bf16", "amp-fp16", "amp-bf16", 0
};

int pn_pmode_amp(int mode)
{
	return mode == PN_PM_AMP_FP16 ? PN_FP16 :
	       mode == PN_PM_AMP_BF16 ? PN_BF16 : -1;
}

pn_prec pn_pmode_gemm(int mode)
{
	static const pn_prec gemm[PN_NPMODES] = {
		PN_FP32, PN_TF32, PN_FP16, PN_BF16, PN_FP16, PN_BF16
	};
	return gemm[mode];
}

/* The rules of precision.h's table, and the casts'. */
enum { R_HALF, R_FP32, R_WEIGHTS, R_PROMOTE, R_FOLLOW, R_BACKWARD, R_GRADS,
       R_CAST_W, R_CAST_WG, R_CAST_IN, R_CAST_ING, R_TF32, R_TF32_NOT, NR };
static const char *const rule_names[NR] = {
	"autocast-half", "autocast-fp32", "fp32-weights", "promote", "follow",
	"backward", "fp32-grads", "cast-weight", "cast-weight-grad",
	"cast-input", "cast-input-grad", "tf32", "tf32-not-gemm"
};

/* The AMP rule of a forward row. */
static int amp_rule(const pn_layer *l)
{
	static const char *const fp32_ops[] = {"exp", "pow", "powu", 0};
	if (pn_unit_matrix(l->type))
		return R_HALF;
	switch (l->type) {
	case PN_LAYERNORM: case PN_SOFTMAX: case PN_XENT:
		return R_FP32;
	case PN_EMBEDDING: case PN_POSENC:
		return R_WEIGHTS;
	case PN_ELEMENTWISE:
		if (pn_name_index(fp32_ops, l->op) >= 0)
			return R_FP32;
		return pn_elem_binary(l->op) ? R_PROMOTE : R_FOLLOW;
	default:
		return R_FOLLOW;
	}
}

/* What each row of the network becomes. */
typedef struct {
	pn_prec prec;
	int rule;
	int cast_in;       /* its input needs a cast */
	double n_in, n_w;  /* elements of its input, of its weights */
} plan;

static double input_elems(const pn_layer *l)
{
	pn_work w;
	switch (l->type) {
	case PN_BMM:
		return l->batch * l->m * l->n;
	case PN_ELEMENTWISE:
		return l->batch * l->seq_len * l->dim;
	default:
		pn_layer_work(l, &w);
		return w.cm_in / l->bytes;
	}
}

/* The forward row of bwd row i: the last fwd row above of its name. */
static long forward_of(const pn_network *net, int cname, long i)
{
	for (long j = i - 1; j >= 0; j--)
		if (net->r[j].phase == PN_PH_FWD &&
		    strcmp(net->r[j].field[cname], net->r[i].field[cname]) == 0)
			return j;
	return -1;
}

static void plan_amp(const pn_network *net, int cname, pn_prec h, plan *p)
{
	pn_prec in = PN_FP32;      /* the output of the forward row before */
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		long j;
		if (r->phase == PN_PH_ACC) {
			p[i].prec = PN_FP32;
			p[i].rule = R_GRADS;
			continue;
		}
		if (r->phase == PN_PH_BWD && (j = forward_of(net, cname, i)) >= 0) {
			p[i].prec = p[j].prec;
			p[i].rule = R_BACKWARD;
			continue;
		}
		int rule = amp_rule(&r->l);
		pn_prec q = rule == R_HALF ? h : rule == R_FOLLOW ? in : PN_FP32;
		p[i].prec = q;
		p[i].rule = r->phase == PN_PH_BWD ? R_BACKWARD : rule;
		if (r->phase == PN_PH_BWD)
			continue;
		p[i].cast_in = (rule == R_HALF && in == PN_FP32) ||
			       (rule == R_FP32 && in == h);
		p[i].n_in = p[i].cast_in ? input_elems(&r->l) : 0;
		if (rule == R_HALF && pn_layer_defs[r->l.type].weights) {
			pn_work w;
			pn_layer_work(&r->l, &w);
			p[i].n_w = w.cm_weights / r->l.bytes;
		}
		in = q;
	}
}

static void plan_plain(const pn_network *net, int mode, plan *p)
{
	for (long i = 0; i < net->n; i++) {
		int m = pn_unit_matrix(net->r[i].l.type);
		p[i].prec = mode != PN_PM_TF32 || m ? pn_pmode_gemm(mode) :
			    PN_FP32;
		p[i].rule = mode != PN_PM_TF32 ? -1 : m ? R_TF32 : R_TF32_NOT;
	}
}

/* ---- the rewritten network ------------------------------------------- */

enum { C_PREC, C_ELEM, C_TRAFFIC, C_RULE, NC };

typedef struct {
	int c[NC];                 /* the columns above */
	int name, layer, op, phase, repeat, traced;
} cols;

/* The column of that name, appended when the network lacks it. */
static int column(pn_network *net, const char *name)
{
	for (int c = 0; c < net->ncols; c++)
		if (strcmp(net->col[c], name) == 0)
			return c;
	net->col = pn_xrealloc(net->col, (size_t)(net->ncols + 1) *
			       sizeof *net->col);
	net->col[net->ncols] = pn_xstrdup(name);
	return net->ncols++;
}

static int find(const pn_network *net, const char *name)
{
	for (int c = 0; c < net->ncols; c++)
		if (strcmp(net->col[c], name) == 0)
			return c;
	return -1;
}

/* Give r the fields v[0..ncols) in one allocation, as network.c keeps
 * them (the old ones freed). */
static void put_fields(pn_netrow *r, int ncols, const char *const *v)
{
	size_t len = 0;
	for (int c = 0; c < ncols; c++)
		len += strlen(v[c]) + 1;
	char *buf = pn_xmalloc(len);
	char **field = pn_xmalloc((size_t)ncols * sizeof *field);
	for (int c = 0; c < ncols; c++) {
		size_t n = strlen(v[c]);
		memcpy(buf, v[c], n + 1);
		field[c] = buf;
		buf += n + 1;
	}
	if (r->field) {
		free(r->field[0]);
		free(r->field);
	}
	r->field = field;
}

/* Row r (of the network's old ncols fields) in precision p by rule. */
static void rewrite(pn_netrow *r, int oldn, int ncols, const cols *k,
		    pn_prec p, const char *rule)
{
	const char **v = pn_xmalloc((size_t)ncols * sizeof *v);
	char traffic[32];
	for (int c = 0; c < ncols; c++)
		v[c] = c < oldn ? r->field[c] : "NA";
	if (r->l.bytes != pn_prec_bytes(p) && r->traffic > 0) {
		r->traffic *= (double)pn_prec_bytes(p) / r->l.bytes;
		pn_fmt_num(traffic, r->traffic);
		v[k->c[C_TRAFFIC]] = traffic;
	}
	r->prec = r->l.prec = p;
	r->l.bytes = pn_prec_bytes(p);
	v[k->c[C_PREC]] = pn_prec_name(p);
	v[k->c[C_RULE]] = rule;
	put_fields(r, ncols, (const char *const *)v);
	free(v);
}

/* A cast of n elements for row `of` between fp32 and h (precision h). */
static pn_netrow cast_row(const pn_netrow *of, int ncols, const cols *k,
			  int kind, int phase, double n, pn_prec h, int rule)
{
	pn_netrow r;
	memset(&r, 0, sizeof r);
	r.l.type = PN_MEM;
	snprintf(r.l.op, sizeof r.l.op, "mem");
	r.l.elements = 2 * n;
	r.l.prec = r.prec = h;
	r.l.bytes = pn_prec_bytes(h);
	r.phase = phase;
	r.repeat = of->repeat;
	r.traffic = (pn_prec_bytes(PN_FP32) + r.l.bytes) * n;
	r.line = of->line;
	r.cast = kind;
	const char **v = pn_xmalloc((size_t)ncols * sizeof *v);
	char name[256], el[32], tr[32], rep[32];
	for (int c = 0; c < ncols; c++)
		v[c] = "NA";
	if (k->traced >= 0)
		v[k->traced] = of->field[k->traced];
	snprintf(name, sizeof name, "amp.cast:%s", of->field[k->name]);
	v[k->name] = name;
	v[k->layer] = "mem";
	if (k->op >= 0)
		v[k->op] = "mem";
	v[k->phase] = pn_phase_names[phase];
	pn_fmt_num(rep, r.repeat);
	pn_fmt_num(el, r.l.elements);
	pn_fmt_num(tr, r.traffic);
	if (k->repeat >= 0)
		v[k->repeat] = rep;
	v[k->c[C_ELEM]] = el;
	v[k->c[C_TRAFFIC]] = tr;
	v[k->c[C_PREC]] = pn_prec_name(h);
	v[k->c[C_RULE]] = rule_names[rule];
	put_fields(&r, ncols, (const char *const *)v);
	free(v);
	return r;
}

/* Whether the network trains: a row of a phase other than fwd. */
static int trains(const pn_network *net)
{
	for (long i = 0; i < net->n; i++)
		if (net->r[i].phase != PN_PH_FWD)
			return 1;
	return 0;
}

void pn_precision_apply(pn_network *net, int mode)
{
	if (mode < 0 || mode >= PN_NPMODES)
		PN_BUG("pn_precision_apply: no such mode");
	int h = pn_pmode_amp(mode), oldn = net->ncols, tr = trains(net);
	cols k = {
		.name = find(net, "name"), .layer = find(net, "layer"),
		.op = find(net, "op"), .phase = find(net, "phase"),
		.repeat = find(net, "repeat"), .traced = find(net, "traced_batch"),
	};
	static const char *const need[NC] = {
		"precision", "elements", "traffic_bytes", "precision_rule"
	};
	for (int c = 0; c < NC; c++)
		k.c[c] = column(net, need[c]);
	net->celements = k.c[C_ELEM];
	net->ctraffic = k.c[C_TRAFFIC];
	plan *p = pn_xcalloc((size_t)net->n, sizeof *p);
	if (h < 0)
		plan_plain(net, mode, p);
	else
		plan_amp(net, k.name, (pn_prec)h, p);

	long n = net->n;
	for (long i = 0; i < net->n; i++)
		n += (p[i].n_in > 0) * (1 + tr) + (p[i].n_w > 0) * (1 + tr);
	pn_netrow *r = pn_xmalloc((size_t)n * sizeof *r);
	long at = 0;
	for (long i = 0; i < net->n; i++) {
		pn_netrow *o = &net->r[i];
		for (int b = 0; p[i].n_in > 0 && b <= tr; b++)
			r[at++] = cast_row(o, net->ncols, &k, PN_CAST_INPUT,
					   b ? PN_PH_BWD : PN_PH_FWD, p[i].n_in,
					   (pn_prec)h, b ? R_CAST_ING : R_CAST_IN);
		if (p[i].n_w > 0)
			r[at++] = cast_row(o, net->ncols, &k, PN_CAST_WEIGHT,
					   PN_PH_FWD, p[i].n_w, (pn_prec)h,
					   R_CAST_W);
		rewrite(o, oldn, net->ncols, &k, p[i].prec,
			p[i].rule < 0 ? pn_pmode_names[mode] :
			rule_names[p[i].rule]);
		r[at++] = *o;
		if (p[i].n_w > 0 && tr)
			r[at++] = cast_row(o, net->ncols, &k, PN_CAST_WEIGHT,
					   PN_PH_BWD, p[i].n_w, (pn_prec)h,
					   R_CAST_WG);
	}
	free(net->r);
	free(p);
	net->r = r;
	net->n = at;
}
