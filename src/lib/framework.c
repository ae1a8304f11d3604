/* framework.c - a framework's fixed costs (framework.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "framework.h"
#include "network.h"
#include "step.h"
#include "tsv.h"

typedef struct {
	char *name;
	double us;
} cost;

struct pn_framework {
	char *path;
	cost *c;
	size_t n;
};

/* The place of name among fw's costs, kept sorted: its index, or
 * -(where it would go) - 1. */
static long find(const pn_framework *fw, const char *name)
{
	size_t lo = 0, hi = fw->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(fw->c[mid].name, name);
		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(long)lo - 1;
}

pn_framework *pn_framework_load(const char *path)
{
	pn_tsv *in = pn_tsv_open(path);
	int cname = pn_tsv_col(in, "cost"), cus = pn_tsv_col(in, "us");
	pn_framework *fw = pn_xcalloc(1, sizeof *fw);
	fw->path = pn_xstrdup(pn_tsv_path(in));
	size_t cap = 0;
	while (pn_tsv_read(in)) {
		const char *s = pn_tsv_str(in, cname);
		if (!*s)
			pn_tsv_die(in, cname, "empty name");
		long at = find(fw, s);
		if (at >= 0)
			pn_tsv_die(in, cname, "'%s' is repeated", s);
		double us = pn_tsv_real(in, cus, PN_NONNEG);
		if (fw->n == cap) {
			cap = cap ? 2 * cap : 32;
			fw->c = pn_xrealloc(fw->c, cap * sizeof *fw->c);
		}
		at = -at - 1;           /* inserted in order */
		memmove(fw->c + at + 1, fw->c + at,
			(fw->n - (size_t)at) * sizeof *fw->c);
		fw->c[at] = (cost){pn_xstrdup(s), us};
		fw->n++;
	}
	if (fw->n == 0)
		pn_die_at(PN_EXIT_DATA, fw->path, 0, "no costs");
	pn_tsv_close(in);
	return fw;
}

void pn_framework_free(pn_framework *fw)
{
	if (!fw)
		return;
	for (size_t i = 0; i < fw->n; i++)
		free(fw->c[i].name);
	free(fw->c);
	free(fw->path);
	free(fw);
}

const char *pn_framework_path(const pn_framework *fw)
{
	return fw->path;
}

double pn_framework_cost(const pn_framework *fw, const char *name)
{
	long at = find(fw, name);
	return at >= 0 ? fw->c[at].us : -1;
}

/* The missing cost's name, for pn_framework_row's caller. */
static char missing[64];

/* Cost a.b.c (b or c NULL: left out) into *us; 0, or -1 with its name in
 * missing. */
static int need(const pn_framework *fw, const char *a, const char *b,
		const char *c, double *us)
{
	char name[64];
	snprintf(name, sizeof name, "%s%s%s%s%s", a, b ? "." : "", b ? b : "",
		 c ? "." : "", c ? c : "");
	*us = pn_framework_cost(fw, name);
	if (*us >= 0)
		return 0;
	snprintf(missing, sizeof missing, "%s", name);
	return -1;
}

/* The parameter tensors of a row (framework.h's table). */
static double tensors(const pn_layer *l)
{
	double dirs = 1 + (l->bidirectional > 0);
	switch (l->type) {
	case PN_DENSE: case PN_CONV2D: return 1 + l->bias;
	case PN_ATTENTION: return 2 + 2 * l->bias;
	case PN_EMBEDDING: case PN_POSENC: return 1;
	case PN_LAYERNORM: case PN_BATCHNORM: return 2;
	case PN_RNN: case PN_LSTM: case PN_GRU:
		return l->layers * dirs * (2 + 2 * l->bias);
	default: return 0;
	}
}

/* The overhead of one pass ("fwd", "bwd") of l, us, or -1. */
static double pass_us(const pn_framework *fw, const pn_layer *l,
		      const char *pass)
{
	const char *type = pn_layer_name(l->type);
	double us, step, act = 0;
	/* a memory pass (a copy, AMP's casts) is one elementwise kernel to
	 * a framework: a profile that names no mem cost gives it the
	 * elementwise one */
	if (l->type == PN_MEM && pn_framework_cost(fw, "mem.fwd") < 0 &&
	    pn_framework_cost(fw, "mem.bwd") < 0)
		type = "elementwise";
	int opped = strcmp(l->op, type) != 0 && l->op[0];
	if (!(opped && need(fw, type, l->op, pass, &us) == 0) &&
	    need(fw, type, pass, NULL, &us) != 0)
		return -1;
	if (l->type == PN_RNN || l->type == PN_LSTM || l->type == PN_GRU) {
		if (need(fw, type, pass, "step", &step) != 0)
			return -1;
		us += l->layers * (1 + (l->bidirectional > 0)) * l->seq_len *
		      step;
	}
	if ((l->type == PN_DENSE || l->type == PN_CONV2D) &&
	    l->activation != PN_ACT_NONE &&
	    need(fw, "elementwise", pn_act_name((int)l->activation), pass,
		 &act) != 0)
		return -1;
	return us + act;
}

const char *pn_framework_row(const pn_framework *fw, const pn_layer *l,
			     int phase, int momentum, double ms[3])
{
	double v[3] = {0, 0, 0};
	int fwd = phase == PN_PH_FWD || phase == PN_PH_TRAIN;
	int bwd = phase == PN_PH_BWD || phase == PN_PH_TRAIN;
	if ((fwd && (v[0] = pass_us(fw, l, "fwd")) < 0) ||
	    (bwd && (v[1] = pass_us(fw, l, "bwd")) < 0))
		return missing;
	double n = tensors(l);
	if (phase == PN_PH_TRAIN && l->optimizer != PN_OPT_NONE && n > 0) {
		char opt[32];
		double tensor, element;
		int mom = momentum && (l->optimizer == PN_OPT_SGD ||
				       l->optimizer == PN_OPT_RMSPROP);
		snprintf(opt, sizeof opt, "%s%s", pn_opt_name(l->optimizer),
			 mom ? ".momentum" : "");
		if (need(fw, "opt", opt, NULL, &tensor) != 0 ||
		    need(fw, "opt", opt, "element", &element) != 0)
			return missing;
		v[2] = n * tensor + pn_step_weights(l) * element;
	}
	for (int p = 0; p < 3; p++)
		ms[p] = v[p] / 1e3;
	return NULL;
}
