/* drift.c - a machine measured now against its stored spec row (drift.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drift.h"
#include "err.h"
#include "tsv.h"

const pn_drift_rule pn_drift_cpu[] = {
	{"fp32_gflops", 0.15, 0}, {"blas_fp32_gflops", 0.15, 0},
	{"bf16_gflops", 0.15, 0}, {"mem_bw_gbs", 0.15, 0},
	{"cores", 0, 0}, {"l2_mb", 1, 1}, {NULL, 0, 0}
};

const pn_drift_rule pn_drift_gpu[] = {
	{"sms", 0, 0}, {"mem_gb", 0.15, 0}, {"l2_mb", 0, 0}, {NULL, 0, 0}
};

static const pn_gpu_col *column(const char *name, size_t len)
{
	for (const pn_gpu_col *c = pn_gpu_cols; c->name; c++)
		if (strlen(c->name) == len && memcmp(c->name, name, len) == 0)
			return c;
	return NULL;
}

static double *num(const pn_gpu *g, const pn_gpu_col *c)
{
	return (double *)((char *)g + c->off);
}

int pn_drift_parse_row(const char *header, const char *row, pn_gpu *g,
		       char *name, size_t n)
{
	memset(g, 0, sizeof *g);
	for (const pn_gpu_col *c = pn_gpu_cols; c->name; c++)
		if (c->kind != PN_GPU_TEXT)
			*num(g, c) = NAN;
	name[0] = '\0';
	const char *h = header, *r = row;
	for (;;) {
		size_t hl = strcspn(h, "\t\r\n"), rl = strcspn(r, "\t\r\n");
		const pn_gpu_col *c = column(h, hl);
		if (c && strcmp(c->name, "name") == 0)
			snprintf(name, n, "%.*s", (int)rl, r);
		else if (c && c->kind != PN_GPU_TEXT && !(rl == 2 &&
			 memcmp(r, "NA", 2) == 0) &&
			 pn_parse_num(r, rl, num(g, c)) < 0)
			return -1;
		if (h[hl] != '\t')
			return 0;
		if (r[rl] != '\t')
			return -1;
		h += hl + 1;
		r += rl + 1;
	}
}

int pn_drift_compare(const pn_gpu *now, const pn_gpu *stored,
		     const pn_drift_rule *rules, char *buf, size_t n)
{
	int k = 0;
	size_t len = 0;
	buf[0] = '\0';
	for (const pn_drift_rule *d = rules; d->col; d++) {
		const pn_gpu_col *c = column(d->col, strlen(d->col));
		if (!c)
			PN_BUG("a drift rule of no spec column");
		double a = *num(now, c), b = *num(stored, c);
		if (isnan(a) || isnan(b) || (d->factor ? a > 0 && b > 0 &&
		    fabs(log(a / b)) <= log1p(d->tol) + 1e-12 : fabs(a - b) <=
		    d->tol * fabs(b)))
			continue;
		char va[32], vb[32];
		pn_fmt_num(va, a);
		pn_fmt_num(vb, b);
		if (len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s %s now, "
						"%s stored (%+.0f%%)", k ? "; " :
						"", d->col, va, vb,
						100 * (a / b - 1));
		k++;
	}
	return k;
}

int pn_drift_report(const pn_gpu *now, const pn_gpu *stored,
		    const pn_drift_rule *rules, const char *device,
		    const char *file, const char *hint, int strict)
{
	char what[1024];
	int k = pn_drift_compare(now, stored, rules, what, sizeof what);
	if (k == 0)
		return 0;
	if (strict)
		pn_die(PN_EXIT_DATA, "%s: this machine differs from the row "
		       "'%s' beyond the tolerance (pn-time(1), DRIFT): %s; %s",
		       file, device, what, hint);
	pn_warn("%s: this machine differs from the row '%s' beyond the "
		"tolerance (pn-time(1), DRIFT): %s; %s", file, device, what,
		hint);
	return k;
}
