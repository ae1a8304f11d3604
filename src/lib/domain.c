/* domain.c - a model's domain from its info lines, and the check of a row
 * against it (domain.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "err.h"
#include "tsv.h"

const char *const pn_domain_cols[PN_DOM_NCAT + 1] = {
	"layer", "pass", "precision", "optimizer", "input_grad", 0
};
const char *const pn_domain_keys[PN_DOM_NCAT + 1] = {
	"layers", "passes", "precisions", "optimizers", "input_grads", 0
};

struct pn_domain {
	int known[PN_DOM_NCAT];         /* the dimension has a line */
	char *seen[PN_DOM_NCAT];        /* its values, ",a,b," */
	unsigned char *ranged;          /* per feature: has a range */
	double *lo, *hi;
	int all_ranged;
	double base_lo;                 /* its base-floor line, or 0 */
};

/* The value a row without the column has ("" for the layer: none). */
static const char *default_of(int k)
{
	switch (k) {
	case PN_DOM_PASS: return pn_pass_names[PN_PASS_FWD];
	case PN_DOM_PRECISION: return pn_prec_names[PN_FP32];
	case PN_DOM_OPTIMIZER: return pn_opt_names[PN_OPT_NONE];
	case PN_DOM_INPUT_GRAD: return "1";
	default: return "";
	}
}

static const char *value_of(int k, const char *v)
{
	return !v || !*v || strcmp(v, "NA") == 0 ? default_of(k) : v;
}

/* ",a,b," from "a,b", NA read as the default. */
static char *seen_list(int k, const char *s)
{
	size_t items = 1;       /* an empty or NA item becomes the default */
	for (const char *c = strchr(s, ','); c; c = strchr(c + 1, ','))
		items++;
	size_t n = strlen(s) + items * (strlen(default_of(k)) + 1) + 2;
	char *out = pn_xmalloc(n), *o = out;
	*o++ = ',';
	while (*s) {
		size_t len = strcspn(s, ",");
		char item[64];
		snprintf(item, sizeof item, "%.*s", (int)len, s);
		o += sprintf(o, "%s,", value_of(k, item));
		s += len + (s[len] == ',');
	}
	*o = '\0';
	return out;
}

/* Whether v is an item of the ",a,b," list: an empty v (a row without
 * the column, a dimension with no default) never is. */
static int seen(const struct pn_domain *d, int k, const char *v)
{
	const char *s = d->seen[k];
	size_t n = strlen(v);
	if (n == 0)
		return 0;
	for (const char *p = strstr(s, v); p; p = strstr(p + 1, v))
		if (p > s && p[-1] == ',' && p[n] == ',')
			return 1;
	return 0;
}

/* "range NAME LO HI" into the feature's range. */
static void parse_range(struct pn_domain *d, const pn_model *m,
			const char *s)
{
	char name[256], lo[64], hi[64], extra[2];
	if (sscanf(s, "range %255s %63s %63s %1s", name, lo, hi, extra) != 3)
		return;
	double a, b;
	if (pn_parse_num(lo, strlen(lo), &a) < 0 ||
	    pn_parse_num(hi, strlen(hi), &b) < 0 || a > b)
		return;
	for (size_t j = 0; j < m->p; j++)
		if (!m->feat[j].cat && strcmp(m->feat[j].name, name) == 0) {
			d->ranged[j] = 1;
			d->lo[j] = a;
			d->hi[j] = b;
		}
}

void pn_domain_free(struct pn_domain *d)
{
	if (!d)
		return;
	for (int k = 0; k < PN_DOM_NCAT; k++)
		free(d->seen[k]);
	free(d->ranged);
	free(d->lo);
	free(d->hi);
	free(d);
}

void pn_domain_parse(pn_model *m)
{
	pn_domain_free(m->domain);
	struct pn_domain *d = pn_xcalloc(1, sizeof *d);
	d->ranged = pn_xcalloc(m->p ? m->p : 1, 1);
	d->lo = pn_xcalloc(m->p ? m->p : 1, sizeof *d->lo);
	d->hi = pn_xcalloc(m->p ? m->p : 1, sizeof *d->hi);
	for (int i = 0; i < m->ninfo; i++) {
		const char *s = m->info[i];
		if (strncmp(s, "range ", 6) == 0) {
			parse_range(d, m, s);
			continue;
		}
		if (strncmp(s, "base-floor ", 11) == 0) {
			double a;
			if (m->base && pn_parse_num(s + 11, strlen(s + 11),
						    &a) == 0 && a > 0)
				d->base_lo = a;
			continue;
		}
		for (int k = 0; k < PN_DOM_NCAT; k++) {
			size_t n = strlen(pn_domain_keys[k]);
			if (strncmp(s, pn_domain_keys[k], n) != 0 || s[n] != ' ')
				continue;
			free(d->seen[k]);
			d->seen[k] = seen_list(k, s + n + 1);
			d->known[k] = 1;
		}
	}
	for (int k = 0; k < PN_DOM_NCAT; k++)
		if (!d->known[k])
			d->seen[k] = seen_list(k, default_of(k));
	d->all_ranged = 1;
	for (size_t j = 0; j < m->p; j++)
		if (!m->feat[j].cat && !d->ranged[j])
			d->all_ranged = 0;
	m->domain = d;
}

double pn_domain_base_floor(const pn_model *m)
{
	if (!m->domain)
		PN_BUG("pn_domain_base_floor before pn_domain_parse");
	return m->domain->base_lo;
}

int pn_domain_range(const pn_model *m, size_t j, double *lo, double *hi)
{
	if (!m->domain)
		PN_BUG("pn_domain_range before pn_domain_parse");
	if (j >= m->p || !m->domain->ranged[j])
		return 0;
	*lo = m->domain->lo[j];
	*hi = m->domain->hi[j];
	return 1;
}

int pn_domain_has_ranges(const pn_model *m)
{
	if (!m->domain)
		PN_BUG("pn_domain_has_ranges before pn_domain_parse");
	return m->domain->all_ranged;
}

int pn_domain_saw(const pn_model *m, int k, const char *value)
{
	if (!m->domain)
		PN_BUG("pn_domain_saw before pn_domain_parse");
	if (k < 0 || k >= PN_DOM_NCAT)
		PN_BUG("pn_domain_saw of no dimension");
	if (k == PN_DOM_LAYER && !m->domain->known[k])
		return 1;
	return seen(m->domain, k, value_of(k, value));
}

/* Append "item" to why (n bytes), a comma before all but the first; a
 * verdict that does not fit ends in "...". */
static void say(char *why, size_t n, int count, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void say(char *why, size_t n, int count, const char *fmt, ...)
{
	char item[PN_DOMAIN_WHY];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(item, sizeof item, fmt, ap);
	va_end(ap);
	if (n > PN_DOMAIN_WHY)
		n = PN_DOMAIN_WHY;
	size_t len = strlen(why);
	if (len + 4 > n || (len >= 3 && strcmp(why + len - 3, "...") == 0))
		return;
	if ((size_t)snprintf(why + len, n - len, "%s%s", count ? "," : "",
			     item) >= n - len)
		snprintf(why + n - 4, 4, "...");
}

int pn_domain_check_fields(const pn_model *m, const char *const *val,
			   const double *feat, char *why, size_t n)
{
	const struct pn_domain *d = m->domain;
	if (!d)
		PN_BUG("pn_domain_check before pn_domain_parse");
	if (n == 0)
		PN_BUG("pn_domain_check without room for its verdict");
	int out = 0;
	why[0] = '\0';
	for (int k = 0; k < PN_DOM_NCAT; k++) {
		if (k == PN_DOM_LAYER && (strcmp(m->layer, "*") != 0 ||
					  !d->known[k]))
			continue;
		const char *v = value_of(k, val[k]);
		/* a fwd row ignores its input_grad (layer.h) */
		if (k == PN_DOM_INPUT_GRAD &&
		    strcmp(value_of(PN_DOM_PASS, val[PN_DOM_PASS]),
			   pn_pass_names[PN_PASS_TRAIN]) != 0)
			v = default_of(k);
		if (!seen(d, k, v))
			say(why, n, out++, "%s=%s", pn_domain_cols[k], v);
	}
	for (size_t j = 0; feat && j < m->p; j++) {
		if (!d->ranged[j])
			continue;
		double lo = d->lo[j] - PN_DOMAIN_RTOL * fabs(d->lo[j]);
		double hi = d->hi[j] + PN_DOMAIN_RTOL * fabs(d->hi[j]);
		if (feat[j] > hi)
			say(why, n, out++, "%s>%g", m->feat[j].name, d->hi[j]);
		else if (feat[j] < lo || isnan(feat[j]))
			say(why, n, out++, "%s<%g", m->feat[j].name, d->lo[j]);
	}
	return out;
}

int pn_domain_check_base(const pn_model *m, double floor, double base,
			 char *why, size_t n)
{
	if (!(base < floor * (1 - PN_DOMAIN_RTOL)))
		return 0;
	/* named already by the range of the base as a feature */
	size_t k = strlen(m->base);
	for (const char *p = strstr(why, m->base); p; p = strstr(p + 1, m->base))
		if ((p == why || p[-1] == ',') && p[k] == '<')
			return 0;
	say(why, n, *why != '\0', "%s<%g", m->base, floor);
	return 1;
}

int pn_domain_check(const pn_model *m, const pn_layer *l, const double *feat,
		    char *why, size_t n)
{
	const char *val[PN_DOM_NCAT];
	val[PN_DOM_LAYER] = pn_layer_name(l->type);
	val[PN_DOM_PASS] = pn_pass_names[l->train ? PN_PASS_TRAIN :
					 PN_PASS_FWD];
	val[PN_DOM_PRECISION] = pn_prec_name(l->prec);
	val[PN_DOM_OPTIMIZER] = pn_opt_name(l->optimizer);
	val[PN_DOM_INPUT_GRAD] = l->train && l->no_input_grad ? "0" : "1";
	return pn_domain_check_fields(m, val, feat, why, n);
}
