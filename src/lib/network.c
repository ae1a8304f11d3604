#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "network.h"
#include "tsv.h"

const char *const pn_phase_names[PN_NPHASES + 1] = {
	"fwd", "bwd", "acc", "train", 0
};

static __attribute__((format(printf, 4, 5)))
int fail(pn_network_err *e, const pn_tsv *in, int col, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	e->line = pn_tsv_lineno(in);
	if (col >= 0)
		snprintf(e->msg, sizeof e->msg, "column '%s': %s",
			 pn_tsv_colname(in, col), msg);
	else
		snprintf(e->msg, sizeof e->msg, "%s", msg);
	return -1;
}

/* A number, as pn_tsv_num reads it (the field cut to 40 bytes in a
 * message); whole: also as pn_tsv_int. */
static int number(const pn_tsv *in, int col, int whole, double *v,
		  pn_network_err *e)
{
	const char *s = pn_tsv_str(in, col);
	size_t n = pn_tsv_len(in, col);
	int cut = n >= 44;
	if (pn_parse_num(s, n, v) != 0)
		return fail(e, in, col, "'%.*s%s' is not a number",
			    cut ? 40 : (int)n, s, cut ? "..." : "");
	if (whole && (*v != floor(*v) || fabs(*v) >= 0x1p53))
		return fail(e, in, col, "'%.*s%s' is not a whole number",
			    cut ? 40 : (int)n, s, cut ? "..." : "");
	return 0;
}

/* The layer as pn_layer_read would word its error. */
static int layer(const pn_tsv *in, const pn_layer_cols *lc, pn_netrow *r,
		 pn_network_err *e)
{
	pn_layer_err le;
	if (pn_layer_parse(in, lc, &r->l, &r->prec, &le) == 0)
		return 0;
	char list[200] = "";
	if (le.names)
		pn_name_list(le.names, list, sizeof list);
	return fail(e, in, le.col, "%s%s%s%s", le.msg, le.names ?
		    " (one of: " : "", list, le.names ? ")" : "");
}

typedef struct {
	int name, phase, repeat, traced;
} netcols;

/* Phase, repeat, traffic_bytes and traced_batch of the current row. */
static int read_row(const pn_tsv *in, pn_network *net, const netcols *c,
		    pn_netrow *r, pn_network_err *e)
{
	if (pn_tsv_len(in, c->name) == 0)
		return fail(e, in, c->name, "empty name");
	const char *ph = pn_tsv_str(in, c->phase);
	if ((r->phase = pn_name_index(pn_phase_names, ph)) < 0)
		return fail(e, in, c->phase, "unknown phase '%s' (one of: fwd, "
			    "bwd, acc, train)", ph);
	r->l.train = r->phase == PN_PH_TRAIN;
	r->repeat = 1;
	if (c->repeat >= 0 && !pn_tsv_na(in, c->repeat)) {
		if (number(in, c->repeat, 1, &r->repeat, e) != 0)
			return -1;
		if (r->repeat < 1)
			return fail(e, in, c->repeat, "repeat must be at "
				    "least 1, not %g", r->repeat);
	}
	if (net->ctraffic >= 0 && !pn_tsv_na(in, net->ctraffic)) {
		if (number(in, net->ctraffic, 0, &r->traffic, e) != 0)
			return -1;
		if (!(r->traffic > 0))
			return fail(e, in, net->ctraffic, "traffic_bytes must "
				    "be positive, not %g", r->traffic);
	}
	if (c->traced >= 0) {
		double t = 0;
		if (!pn_tsv_na(in, c->traced) &&
		    number(in, c->traced, 1, &t, e) != 0)
			return -1;
		if (t < 1)
			return fail(e, in, c->traced, "traced_batch must be a "
				    "whole number of at least 1");
		if (net->traced && t != net->traced)
			return fail(e, in, c->traced, "traced_batch %lld "
				    "differs from the %ld of the rows above",
				    (long long)t, net->traced);
		net->traced = (long)t;
	}
	return 0;
}

/* Keep the row's fields, in one allocation. */
static void keep_fields(const pn_tsv *in, const pn_network *net,
			pn_netrow *r)
{
	size_t len = 0;
	for (int i = 0; i < net->ncols; i++)
		len += pn_tsv_len(in, i) + 1;
	char *buf = pn_xmalloc(len);
	r->field = pn_xmalloc((size_t)net->ncols * sizeof *r->field);
	for (int i = 0; i < net->ncols; i++) {
		size_t n = pn_tsv_len(in, i);
		memcpy(buf, pn_tsv_str(in, i), n + 1);
		r->field[i] = buf;
		buf += n + 1;
	}
}

static int header(const pn_tsv *in, pn_network *net, netcols *c,
		  pn_network_err *e)
{
	static const char *const need[] = {"layer", "name", "phase"};
	e->line = 1;
	if (pn_tsv_find(in, "pass") >= 0) {
		snprintf(e->msg, sizeof e->msg, "column 'pass' has no place "
			 "in a network: its rows give phase");
		return -1;
	}
	for (int i = 0; i < 3; i++)
		if (pn_tsv_find(in, need[i]) < 0) {
			snprintf(e->msg, sizeof e->msg, "missing column '%s'",
				 need[i]);
			return -1;
		}
	net->ncols = pn_tsv_ncols(in);
	net->col = pn_xmalloc((size_t)net->ncols * sizeof *net->col);
	for (int i = 0; i < net->ncols; i++)
		net->col[i] = pn_xstrdup(pn_tsv_colname(in, i));
	c->name = pn_tsv_find(in, "name");
	c->phase = pn_tsv_find(in, "phase");
	c->repeat = pn_tsv_find(in, "repeat");
	c->traced = pn_tsv_find(in, "traced_batch");
	net->cbatch = pn_tsv_find(in, "batch");
	net->celements = pn_tsv_find(in, "elements");
	net->ctraffic = pn_tsv_find(in, "traffic_bytes");
	return 0;
}

int pn_network_read(pn_network *net, const char *path, pn_network_err *e)
{
	memset(net, 0, sizeof *net);
	pn_tsv *in = pn_tsv_open(path);
	net->path = pn_xstrdup(pn_tsv_path(in));
	netcols c;
	pn_layer_cols *lc = NULL;
	int rc = header(in, net, &c, e);
	if (rc == 0)
		lc = pn_layer_cols_new(in);
	long cap = 0;
	while (rc == 0 && pn_tsv_read(in)) {
		if (net->n == cap)
			net->r = pn_xrealloc(net->r, (size_t)(cap = cap ? 2 * cap
					     : 256) * sizeof *net->r);
		pn_netrow *r = &net->r[net->n];
		memset(r, 0, sizeof *r);
		r->line = pn_tsv_lineno(in);
		rc = layer(in, lc, r, e);
		if (rc == 0)
			rc = read_row(in, net, &c, r, e);
		if (rc == 0) {
			keep_fields(in, net, r);
			net->n++;
		}
	}
	if (rc == 0 && net->n == 0) {
		e->line = 0;
		snprintf(e->msg, sizeof e->msg, "no layer rows");
		rc = -1;
	}
	pn_layer_cols_free(lc);
	pn_tsv_close(in);
	if (rc != 0)
		pn_network_free(net);
	return rc;
}

void pn_network_load(pn_network *net, const char *path)
{
	pn_network_err e;
	if (pn_network_read(net, path, &e) != 0)
		pn_die_at(PN_EXIT_DATA, path ? path : "-", e.line, "%s",
			  e.msg);
}

void pn_network_free(pn_network *net)
{
	for (long i = 0; i < net->n; i++) {
		free(net->r[i].field[0]);     /* every field of the row */
		free(net->r[i].field);
	}
	for (int i = 0; i < net->ncols; i++)
		free(net->col[i]);
	free(net->col);
	free(net->r);
	free(net->path);
	memset(net, 0, sizeof *net);
}

void pn_network_scaled(const pn_network *net, const pn_netrow *r,
		       double batch, pn_layer *l, double *traffic)
{
	*l = r->l;
	*traffic = r->traffic;
	if (net->traced || r->cast == PN_CAST_WEIGHT)
		return;
	if (l->type == PN_MEM)
		l->elements *= batch;
	else
		l->batch *= batch;
	*traffic *= batch;
}

/* ---- writing ----------------------------------------------------------- */

int pn_network_columns(const pn_network *net, const char *const *extra,
		       int nextra, const char **cols, int *xcol)
{
	int n = net->ncols;
	for (int i = 0; i < n; i++)
		cols[i] = net->col[i];
	for (int x = 0; x < nextra; x++) {
		xcol[x] = -1;
		for (int i = 0; i < net->ncols && xcol[x] < 0; i++)
			if (strcmp(net->col[i], extra[x]) == 0)
				xcol[x] = i;
		if (xcol[x] < 0)
			xcol[x] = n++;
		cols[xcol[x]] = extra[x];
	}
	return n;
}

const char *pn_network_field(const pn_network *net, long i, double batch,
			     int c, char *buf)
{
	const pn_netrow *r = &net->r[i];
	if (net->traced)
		return r->field[c];
	pn_layer l;
	double traffic;
	pn_network_scaled(net, r, batch, &l, &traffic);
	if (c == net->cbatch && l.type != PN_MEM)
		pn_fmt_num(buf, l.batch);
	else if (c == net->celements && l.type == PN_MEM)
		pn_fmt_num(buf, l.elements);
	else if (c == net->ctraffic && traffic > 0)
		pn_fmt_num(buf, traffic);
	else
		return r->field[c];
	return buf;
}

/* ---- writing a network from layers -------------------------------------- */

const char *const pn_network_out_cols[] = {
	"name", "layer", "op", "phase", "repeat", "batch", "seq_len", "dim",
	"in_features", "out_features", "bias", "activation", "m", "n", "k",
	"in_channels", "out_channels", "kernel", "image", "stride",
	"padding", "embed_dim", "heads", "vocab", "input_size", "hidden",
	"layers", "bidirectional", "elements", "precision", "optimizer", 0
};

void pn_network_put_header(FILE *f, int flags)
{
	for (int i = 0; pn_network_out_cols[i]; i++)
		fprintf(f, "%s%s", i ? "\t" : "", pn_network_out_cols[i]);
	if (flags & PN_LC_INPUT_GRAD)
		fputs("\tinput_grad", f);
	if (flags & PN_LC_DROPOUT)
		fputs("\tdropout", f);
	putc('\n', f);
}

void pn_network_put_row(FILE *f, const char *name, const pn_layer *l,
			pn_prec prec, int phase, double repeat, int flags)
{
	const char *cols[32];
	int n = pn_layer_columns(l->type, 0, cols);
	char buf[32];
	pn_fmt_num(buf, repeat);
	fprintf(f, "%s\t%s\t%s\t%s\t%s", name, pn_layer_name(l->type),
		pn_layer_defs[l->type].ops ? l->op : pn_layer_name(l->type),
		pn_phase_names[phase], buf);
	for (int i = 5; pn_network_out_cols[i]; i++) {
		const char *c = pn_network_out_cols[i], *v = "NA";
		int applies = strcmp(c, "precision") == 0 ||
			      strcmp(c, "optimizer") == 0;
		for (int k = 0; k < n && !applies; k++)
			applies = strcmp(cols[k], c) == 0;
		if (applies)
			v = pn_layer_field(l, prec, c, buf);
		fprintf(f, "\t%s", v);
	}
	if (flags & PN_LC_INPUT_GRAD)
		fprintf(f, "\t%s", pn_layer_defs[l->type].input_grad ?
			pn_layer_field(l, prec, "input_grad", buf) : "NA");
	if (flags & PN_LC_DROPOUT) {
		const char *v = "NA";
		if (pn_layer_masks(l)) {
			pn_fmt_num(buf, l->dropout);
			v = buf;
		}
		fprintf(f, "\t%s", v);
	}
	putc('\n', f);
}
