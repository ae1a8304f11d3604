/* modelset.c - model files, model sets and prediction (see modelset.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "design.h"
#include "domain.h"
#include "err.h"
#include "modelset.h"
#include "tsv.h"

#define MODEL_VERSION 1

/* ---- writing ---------------------------------------------------------- */

static void check_word(const char *what, const char *s)
{
	if (!*s || strpbrk(s, " \t\n\r"))
		PN_BUG(what);
}

void pn_model_write(FILE *f, const pn_model *m)
{
	check_word("layer", m->layer);
	check_word("target", m->target);
	fprintf(f, "pn-model %d\nfamily %s\nlayer %s\n", MODEL_VERSION,
		m->family->name, m->layer);
	if (m->fold) {
		check_word("fold", m->fold);
		fprintf(f, "fold %s\n", m->fold);
	}
	fprintf(f, "target %s\n", m->target);
	if (m->base) {
		check_word("base", m->base);
		fprintf(f, "transform logratio %s\n", m->base);
	} else {
		fprintf(f, "transform %s\n", m->log ? "log" : "none");
	}
	fprintf(f, "features %zu\n", m->p);
	for (size_t j = 0; j < m->p; j++) {
		const pn_feature *ft = &m->feat[j];
		char mean[40], sd[40], fl[40];
		check_word("feature", ft->name);
		pn_fmt_num(mean, ft->mean);
		pn_fmt_num(sd, ft->sd);
		if (ft->log) {
			pn_fmt_num(fl, ft->floor);
			fprintf(f, "feature %s log %s %s %s\n", ft->name, mean,
				sd, fl);
		} else {
			fprintf(f, "feature %s %s %s %s\n", ft->name,
				ft->cat ? "cat" : "num", mean, sd);
		}
	}
	for (int i = 0; i < m->nparam; i++) {
		check_word("param", m->pname[i]);
		check_word("param", m->pvalue[i]);
		fprintf(f, "param %s %s\n", m->pname[i], m->pvalue[i]);
	}
	for (int i = 0; i < m->ninfo; i++)
		fprintf(f, "info %s\n", m->info[i]);
	for (int i = 0; i < m->nlogo; i++) {
		const pn_logo *l = &m->logo[i];
		char bias[40], sd[40];
		check_word("logo device", l->device);
		pn_fmt_num(bias, l->bias);
		pn_fmt_num(sd, l->sd);
		fprintf(f, "logo %s %zu %s %s\n", l->device, l->n, bias, sd);
	}
	if (m->cv_k) {
		char bias[40], sd[40];
		pn_fmt_num(bias, m->cv_bias);
		pn_fmt_num(sd, m->cv_sd);
		fprintf(f, "cv %d %zu %s %s\n", m->cv_k, m->cv_n, bias, sd);
	}
	fputs("body\n", f);
	m->family->save(m->state, f);
	fputs("end\n", f);
	for (int i = 0; i < m->nfold; i++)
		pn_model_write(f, m->folds[i]);
}

void pn_model_add_fold(pn_model *m, pn_model *fold, const char *device)
{
	if (fold->fold || fold->nfold || strcmp(fold->layer, m->layer) != 0)
		PN_BUG("a fold model of another layer, or with folds");
	fold->fold = pn_xstrdup(device);
	m->folds = pn_xrealloc(m->folds, (size_t)(m->nfold + 1) *
			       sizeof *m->folds);
	m->folds[m->nfold++] = fold;
}

const pn_model *pn_model_fold(const pn_model *m, const char *device)
{
	for (int i = 0; i < m->nfold; i++)
		if (strcmp(m->folds[i]->fold, device) == 0)
			return m->folds[i];
	return NULL;
}

void pn_model_add_param(pn_model *m, const char *name, const char *value)
{
	m->pname = pn_xrealloc(m->pname, (size_t)(m->nparam + 1) *
			       sizeof *m->pname);
	m->pvalue = pn_xrealloc(m->pvalue, (size_t)(m->nparam + 1) *
				sizeof *m->pvalue);
	m->pname[m->nparam] = pn_xstrdup(name);
	m->pvalue[m->nparam++] = pn_xstrdup(value);
}

void pn_model_add_info(pn_model *m, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	for (char *s = buf; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
	m->info = pn_xrealloc(m->info, (size_t)(m->ninfo + 1) *
			      sizeof *m->info);
	m->info[m->ninfo++] = pn_xstrdup(buf);
}

void pn_model_add_logo(pn_model *m, const char *device, size_t n,
		       double bias, double sd)
{
	if (!isfinite(bias) || !isfinite(sd) || sd < 0 || n == 0)
		PN_BUG("bad leave-one-device-out record");
	m->logo = pn_xrealloc(m->logo, (size_t)(m->nlogo + 1) *
			      sizeof *m->logo);
	m->logo[m->nlogo++] = (pn_logo){pn_xstrdup(device), n, bias, sd};
}

void pn_model_set_cv(pn_model *m, int k, size_t n, double bias, double sd)
{
	if (!isfinite(bias) || !isfinite(sd) || sd < 0 || k < 2 ||
	    n < (size_t)k)
		PN_BUG("bad cross-validation record");
	m->cv_k = k;
	m->cv_n = n;
	m->cv_bias = bias;
	m->cv_sd = sd;
}

int pn_model_saw_device(const pn_model *m, const char *device)
{
	size_t len = strlen(device);
	for (int i = 0; m && len && i < m->ninfo; i++) {
		const char *v = m->info[i];
		if (strncmp(v, "devices ", 8) != 0)
			continue;
		for (const char *s = v + 8; *s;) {
			size_t w = strcspn(s, ",");
			if (w == len && strncmp(s, device, len) == 0)
				return 1;
			s += w + (s[w] == ',');
		}
	}
	return 0;
}

double pn_model_spread(const pn_model *m, int whole)
{
	if (!m || m->nlogo == 0)
		return NAN;
	double s = 0;
	for (int i = 0; i < m->nlogo; i++)
		s += m->logo[i].bias * m->logo[i].bias +
		     (whole ? 0 : m->logo[i].sd * m->logo[i].sd);
	return sqrt(s / m->nlogo);
}

void pn_model_free(pn_model *m)
{
	if (!m)
		return;
	if (m->state)
		m->family->free(m->state);
	for (size_t j = 0; j < m->p; j++)
		free(m->feat[j].name);
	free(m->feat);
	for (int i = 0; i < m->nparam; i++) {
		free(m->pname[i]);
		free(m->pvalue[i]);
	}
	free(m->pname);
	free(m->pvalue);
	for (int i = 0; i < m->ninfo; i++)
		free(m->info[i]);
	free(m->info);
	for (int i = 0; i < m->nlogo; i++)
		free(m->logo[i].device);
	free(m->logo);
	for (int i = 0; i < m->nfold; i++)
		pn_model_free(m->folds[i]);
	free(m->folds);
	pn_domain_free(m->domain);
	free(m->fold);
	free(m->layer);
	free(m->target);
	free(m->base);
	free(m);
}

/* ---- reading ---------------------------------------------------------- */

/* The next header line, which must start with key; returns its tokens
 * (count in *n, at most max). */
static char **header_line(pn_mreader *r, const char *key, char **tok,
			  int max, int *n)
{
	char *s = pn_mread_raw(r);
	if (!s)
		pn_mread_die(r, "unexpected end of file, want '%s'", key);
	*n = pn_mread_split(s, tok, max);
	if (*n == 0)
		pn_mread_die(r, "empty line, want '%s'", key);
	if (strcmp(tok[0], key) != 0)
		pn_mread_die(r, "'%.40s', want '%s'", tok[0], key);
	return tok;
}

/* "key value": the value */
static char *header_word(pn_mreader *r, const char *key)
{
	char *tok[3];
	int n;
	header_line(r, key, tok, 3, &n);
	if (n != 2)
		pn_mread_die(r, "'%s' needs one value", key);
	return pn_xstrdup(tok[1]);
}

static double header_num(pn_mreader *r, const char *what, const char *s)
{
	double v;
	if (pn_parse_num(s, strlen(s), &v) < 0)
		pn_mread_die(r, "%s: '%.40s' is not a number", what, s);
	return v;
}

/* The error of a "logo" or "cv" line (what): tok[2..4], its rows (a whole
 * number of at least least, said as least_words), bias and sd (>= 0). */
static void read_error(pn_mreader *r, const char *what, char **tok,
		       double least, const char *least_words, double *rows,
		       double *bias, double *sd)
{
	char name[16];
	snprintf(name, sizeof name, "%s rows", what);
	*rows = header_num(r, name, tok[2]);
	if (*rows < least || *rows > 1e15 || *rows != floor(*rows))
		pn_mread_die(r, "%s rows: '%.40s' is not a count of at least "
			     "%s", what, tok[2], least_words);
	snprintf(name, sizeof name, "%s bias", what);
	*bias = header_num(r, name, tok[3]);
	snprintf(name, sizeof name, "%s sd", what);
	*sd = header_num(r, name, tok[4]);
	if (*sd < 0)
		pn_mread_die(r, "%s sd: '%.40s' is negative", what, tok[4]);
}

/* "logo DEVICE N BIAS SD" */
static void read_logo(pn_mreader *r, pn_model *m, char **tok, int n)
{
	if (n != 5)
		pn_mread_die(r, "'logo' needs a device, a row count, a bias "
			     "and an sd");
	double rows, bias, sd;
	read_error(r, "logo", tok, 1, "1", &rows, &bias, &sd);
	for (int i = 0; i < m->nlogo; i++)
		if (strcmp(m->logo[i].device, tok[1]) == 0)
			pn_mread_die(r, "logo: device '%.40s' listed twice",
				     tok[1]);
	pn_model_add_logo(m, tok[1], (size_t)rows, bias, sd);
}

/* "cv K N BIAS SD" */
static void read_cv(pn_mreader *r, pn_model *m, char **tok, int n)
{
	if (n != 5)
		pn_mread_die(r, "'cv' needs a fold count, a row count, a bias "
			     "and an sd");
	if (m->cv_k)
		pn_mread_die(r, "'cv' listed twice");
	double k = header_num(r, "cv folds", tok[1]);
	if (k < 2 || k > 1e6 || k != floor(k))
		pn_mread_die(r, "cv folds: '%.40s' is not a count of at "
			     "least 2", tok[1]);
	double rows, bias, sd;
	read_error(r, "cv", tok, k, "the folds", &rows, &bias, &sd);
	pn_model_set_cv(m, (int)k, (size_t)rows, bias, sd);
}

/* An "info base-floor X" line (domain.h): one positive number, in a
 * logratio model: it moves predictions, so a bad one is a corrupt model,
 * not a line to leave unchecked. */
static void check_base_floor(pn_mreader *r, const pn_model *m, const char *v)
{
	char *tok[2];
	char buf[128];
	double x;
	snprintf(buf, sizeof buf, "%s", v);
	int n = pn_mread_split(buf, tok, 2);
	if (!m->base)
		pn_mread_die(r, "'base-floor' in a model without a logratio "
			     "transform");
	if (n != 1 || pn_parse_num(tok[0], strlen(tok[0]), &x) < 0 ||
	    !(x > 0) || !isfinite(x))
		pn_mread_die(r, "'base-floor' needs one positive number");
}

/* A fold model's "fold DEVICE" line (tok, n of them) for m: it must follow
 * a model of its layer, prev (NULL at the start), with no fold of device
 * yet. */
static void read_fold(pn_mreader *r, pn_model *m, const pn_model *prev,
		      char **tok, int n)
{
	if (n != 2)
		pn_mread_die(r, "'fold' needs one value");
	if (!prev || strcmp(prev->layer, m->layer) != 0)
		pn_mread_die(r, "fold model of layer '%.40s' does not follow "
			     "that layer's model", m->layer);
	if (pn_model_fold(prev, tok[1]))
		pn_mread_die(r, "a second fold model without device '%.40s' "
			     "of layer '%.40s'", tok[1], m->layer);
	m->fold = pn_xstrdup(tok[1]);
}

/* A model whose "pn-model" line has been read; reads through "end".  prev:
 * the model (not fold) read before, or NULL. */
static pn_model *read_model(pn_mreader *r, const pn_model *prev)
{
	pn_model *m = pn_xcalloc(1, sizeof *m);
	char *s = header_word(r, "family");
	m->family = pn_family_find(s);
	if (!m->family)
		pn_mread_die(r, "unknown family '%.40s'", s);
	free(s);
	m->layer = header_word(r, "layer");
	{
		char *tok[3];
		int n;
		char *line = pn_mread_raw(r);
		if (!line)
			pn_mread_die(r, "unexpected end of file, want "
				     "'target'");
		n = pn_mread_split(line, tok, 3);
		if (n >= 1 && strcmp(tok[0], "fold") == 0) {
			read_fold(r, m, prev, tok, n);
			m->target = header_word(r, "target");
		} else if (n == 0) {
			pn_mread_die(r, "empty line, want 'target'");
		} else if (strcmp(tok[0], "target") != 0) {
			pn_mread_die(r, "'%.40s', want 'target'", tok[0]);
		} else if (n != 2) {
			pn_mread_die(r, "'target' needs one value");
		} else {
			m->target = pn_xstrdup(tok[1]);
		}
	}
	{
		char *tok[4];
		int n;
		header_line(r, "transform", tok, 4, &n);
		if (n == 3 && strcmp(tok[1], "logratio") == 0) {
			m->log = 1;
			m->base = pn_xstrdup(tok[2]);
		} else if (n == 2 && strcmp(tok[1], "log") == 0) {
			m->log = 1;
		} else if (n != 2 || strcmp(tok[1], "none") != 0) {
			pn_mread_die(r, "unknown transform '%.40s', want none, "
				     "log or logratio COLUMN",
				     n > 1 ? tok[1] : "");
		}
	}
	s = header_word(r, "features");
	double np = header_num(r, "features", s);
	if (np < 1 || np > 1e6 || np != floor(np))
		pn_mread_die(r, "features: '%.40s' is not a count from 1 to "
			     "1000000", s);
	free(s);
	m->p = (size_t)np;
	m->feat = pn_xcalloc(m->p, sizeof *m->feat);
	for (size_t j = 0; j < m->p; j++) {
		char *tok[7];
		int n;
		header_line(r, "feature", tok, 7, &n);
		if (n < 3)
			pn_mread_die(r, "'feature' needs name, kind, mean "
				     "and sd");
		pn_feature *f = &m->feat[j];
		f->name = pn_xstrdup(tok[1]);
		if (strcmp(tok[2], "cat") == 0)
			f->cat = 1;
		else if (strcmp(tok[2], "log") == 0)
			f->log = 1;
		else if (strcmp(tok[2], "num") != 0)
			pn_mread_die(r, "feature kind '%.40s', want num, cat "
				     "or log", tok[2]);
		if (n != (f->log ? 6 : 5))
			pn_mread_die(r, f->log ? "'feature ... log' needs "
				     "name, kind, mean, sd and floor" :
				     "'feature' needs name, kind, mean and sd");
		if (f->log) {
			f->floor = header_num(r, "floor", tok[5]);
			if (!(f->floor > 0))
				pn_mread_die(r, "floor must be positive");
		}
		if (f->cat && (!strchr(f->name, '=') || f->name[0] == '='))
			pn_mread_die(r, "categorical feature '%.40s' is not "
				     "column=value", f->name);
		f->mean = header_num(r, "mean", tok[3]);
		f->sd = header_num(r, "sd", tok[4]);
		if (!(f->sd > 0))
			pn_mread_die(r, "sd must be positive");
		for (size_t i = 0; i < j; i++)
			if (strcmp(m->feat[i].name, f->name) == 0)
				pn_mread_die(r, "feature '%.40s' listed twice",
					     f->name);
	}
	for (;;) {
		s = pn_mread_raw(r);
		if (!s)
			pn_mread_die(r, "unexpected end of file, want 'body'");
		char *tok[6];
		if (strncmp(s, "info ", 5) == 0) {
			char *v = s + 5;
			while (*v == ' ')
				v++;
			if (!*v)
				pn_mread_die(r, "empty 'info'");
			if (strncmp(v, "base-floor", 10) == 0 &&
			    (v[10] == ' ' || !v[10]))
				check_base_floor(r, m, v + 10);
			pn_model_add_info(m, "%s", v);
			continue;
		}
		int n = pn_mread_split(s, tok, 6);
		if (n == 1 && strcmp(tok[0], "body") == 0)
			break;
		if (n >= 1 && strcmp(tok[0], "logo") == 0) {
			read_logo(r, m, tok, n);
			continue;
		}
		if (n >= 1 && strcmp(tok[0], "cv") == 0) {
			read_cv(r, m, tok, n);
			continue;
		}
		if (n >= 1 && strcmp(tok[0], "param") == 0) {
			if (n != 3)
				pn_mread_die(r, "'param' needs a name and a "
					     "value");
			pn_model_add_param(m, tok[1], tok[2]);
			continue;
		}
		pn_mread_die(r, "'%.40s', want param, info, logo, cv or body",
			     n ? tok[0] : "");
	}
	pn_mread_begin(r);
	m->state = m->family->load(r, m->p);
	if (!m->state)
		pn_mread_die(r, "%s body not understood", m->family->name);
	if (!pn_mread_at_end(r)) {
		/* the family stopped before "end": the next line must be it */
		char *tok[2];
		int n;
		s = pn_mread_raw(r);
		if (!s)
			pn_mread_die(r, "unexpected end of file, want 'end'");
		n = pn_mread_split(s, tok, 2);
		if (n != 1 || strcmp(tok[0], "end") != 0)
			pn_mread_die(r, "'%.40s', want 'end'",
				     n ? tok[0] : "");
	}
	pn_domain_parse(m);
	return m;
}

pn_modelset *pn_modelset_load(const char *path)
{
	const char *shown = !path || strcmp(path, "-") == 0 ? "-" : path;
	pn_mreader *r = pn_mreader_open(path);
	pn_modelset *ms = pn_xcalloc(1, sizeof *ms);
	char *s;
	while ((s = pn_mread_raw(r))) {
		char *tok[3];
		int n = pn_mread_split(s, tok, 3);
		if (n < 1 || strcmp(tok[0], "pn-model") != 0)
			pn_mread_die(r, ms->n ? "'%.40s' after 'end', want "
				     "'pn-model'" : "'%.40s', want 'pn-model' "
				     "(not a pn model file)", n ? tok[0] : "");
		if (n != 2)
			pn_mread_die(r, "'pn-model' needs a version");
		if (strcmp(tok[1], "1") != 0) {
			double v;
			if (pn_parse_num(tok[1], strlen(tok[1]), &v) < 0)
				pn_mread_die(r, "bad version '%.40s'", tok[1]);
			pn_die_at(PN_EXIT_DATA, shown, pn_mread_lineno(r),
				  "unsupported model version %.40s (this pn "
				  "reads %d)", tok[1], MODEL_VERSION);
		}
		pn_model *prev = ms->n ? ms->m[ms->n - 1] : NULL;
		pn_model *m = read_model(r, prev);
		if (m->fold) {
			/* pn_model_add_fold sets it again */
			char *dev = m->fold;
			m->fold = NULL;
			pn_model_add_fold(prev, m, dev);
			free(dev);
			continue;
		}
		for (int i = 0; i < ms->n; i++)
			if (strcmp(ms->m[i]->layer, m->layer) == 0)
				pn_mread_die(r, "a second model for layer "
					     "'%.40s'", m->layer);
		ms->m = pn_xrealloc(ms->m, (size_t)(ms->n + 1) *
				    sizeof *ms->m);
		ms->m[ms->n++] = m;
	}
	if (ms->n == 0)
		pn_die_at(PN_EXIT_DATA, shown, 0, "no model");
	pn_mreader_free(r);
	return ms;
}

void pn_modelset_free(pn_modelset *ms)
{
	if (!ms)
		return;
	for (int i = 0; i < ms->n; i++)
		pn_model_free(ms->m[i]);
	free(ms->m);
	free(ms);
}

const pn_model *pn_modelset_find(const pn_modelset *ms, const char *layer)
{
	const pn_model *any = NULL;
	for (int i = 0; i < ms->n; i++) {
		if (layer && strcmp(ms->m[i]->layer, layer) == 0)
			return ms->m[i];
		if (strcmp(ms->m[i]->layer, "*") == 0)
			any = ms->m[i];
	}
	return any;
}

int pn_modelset_unranged(const pn_modelset *ms, char *buf, size_t n)
{
	int k = 0;
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < ms->n; i++) {
		if (pn_domain_has_ranges(ms->m[i]))
			continue;
		if (len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s",
						k ? ", " : "", ms->m[i]->layer);
		k++;
	}
	return k;
}

void pn_modelset_warn_unranged(const pn_modelset *ms, const char *file)
{
	char list[256];
	int k = pn_modelset_unranged(ms, list, sizeof list);
	if (k)
		pn_warn("%s: the model%s of layer%s %s record%s no feature "
			"ranges (an older pn-fit): %s rows are not checked for "
			"range (refit %s)", file, k == 1 ? "" : "s",
			k == 1 ? "" : "s", list, k == 1 ? "s" : "",
			k == 1 ? "its" : "their", k == 1 ? "it" : "them");
}

/* ---- prediction ------------------------------------------------------- */

typedef struct {
	const pn_model *m;
	int *col;               /* input column of each feature */
	const char **catval;    /* the value a cat feature indicates */
	size_t *catlen;
	char *missing;          /* why rows of this model cannot be predicted */
	int basecol;            /* logratio: the base column */
	double *x;              /* queued rows, p each */
	double *raw;            /* one row's values before log and scaling */
	double *base;           /* logratio: each queued row's base */
	double *y;
	size_t cnt, cap;
	int owner;              /* a fold model: its model's slot; else -1 */
	int rows_b, rows_s;     /* its batch and seq_len features, or -1 */
	int merge;              /* it saw seq_len 1 alone (its owner's
				   range for a fold model): merge_rows */
} slot;

struct pn_predictor {
	int nm, nmain;          /* slots; the first nmain of the models */
	slot *s;
	int star;               /* the "*" model, or -1 */
	int *row_model;         /* per queued row */
	size_t *row_at;
	size_t nrows, cap;
	int last;               /* model of the last layer looked up */
	char *last_layer;
	int dcol[PN_DOM_NCAT];  /* the domain's columns, or -1 */
	char *why;              /* per queued row, PN_DOMAIN_WHY bytes: its
				   domain verdict (domain.h) */
	char err[512];
};

/* The base column of a logratio model: its index in *col, or the message
 * that it is missing. */
static char *find_base(const pn_model *m, int ncols,
		       const char *const *colnames, int *col)
{
	for (int c = 0; c < ncols; c++)
		if (strcmp(colnames[c], m->base) == 0) {
			*col = c;
			return NULL;
		}
	char buf[512];
	if (strcmp(m->layer, "*") == 0)
		snprintf(buf, sizeof buf, "missing column '%s' needed by the "
			 "model for any layer (the base of its logratio "
			 "target)", m->base);
	else
		snprintf(buf, sizeof buf, "missing column '%s' needed by the "
			 "%s model (the base of its logratio target)", m->base,
			 m->layer);
	return pn_xstrdup(buf);
}

/* Field v (n bytes) as a number, or -1 with the reason in err. */
static int field_num(const char *name, const char *v, size_t n, double *d,
		     char *err, size_t errsz)
{
	if (pn_parse_num(v, n, d) == 0)
		return 0;
	if (n == 0 || (n == 2 && memcmp(v, "NA", 2) == 0))
		snprintf(err, errsz, "column '%s': value is %s", name,
			 n ? "NA" : "empty");
	else
		snprintf(err, errsz, "column '%s': '%.*s%s' is not a number",
			 name, n > 40 ? 37 : (int)n, v, n > 40 ? "..." : "");
	return -1;
}

/* The slot of model m: its columns among colnames, or why it has none. */
static void slot_init(slot *s, const pn_model *m, int ncols,
		      const char *const *colnames)
{
	s->m = m;
	s->col = pn_xmalloc(m->p * sizeof *s->col);
	s->basecol = -1;
	s->catval = pn_xcalloc(m->p, sizeof *s->catval);
	s->catlen = pn_xcalloc(m->p, sizeof *s->catlen);
	s->raw = pn_xmalloc(m->p * sizeof *s->raw);
	for (size_t j = 0; j < m->p && !s->missing; j++) {
		const char *name = m->feat[j].name;
		size_t n = strlen(name);
		if (m->feat[j].cat) {
			const char *eq = strchr(name, '=');
			n = (size_t)(eq - name);
			s->catval[j] = eq + 1;
			s->catlen[j] = strlen(eq + 1);
		}
		s->col[j] = -1;
		for (int c = 0; c < ncols; c++)
			if (strlen(colnames[c]) == n &&
			    memcmp(colnames[c], name, n) == 0) {
				s->col[j] = c;
				break;
			}
		if (s->col[j] < 0) {
			char buf[512];
			if (strcmp(m->layer, "*") == 0)
				snprintf(buf, sizeof buf, "missing column "
					 "'%.*s' needed by the model for any "
					 "layer", (int)n, name);
			else
				snprintf(buf, sizeof buf, "missing column "
					 "'%.*s' needed by the %s model",
					 (int)n, name, m->layer);
			s->missing = pn_xstrdup(buf);
		}
	}
	if (m->base && !s->missing)
		s->missing = find_base(m, ncols, colnames, &s->basecol);
	s->rows_b = s->rows_s = -1;
	for (size_t j = 0; j < m->p; j++)
		if (strcmp(m->feat[j].name, "batch") == 0)
			s->rows_b = (int)j;
		else if (strcmp(m->feat[j].name, "seq_len") == 0)
			s->rows_s = (int)j;
	double lo, hi;
	s->merge = s->rows_b >= 0 && s->rows_s >= 0 &&
		   pn_domain_range(m, (size_t)s->rows_s, &lo, &hi) &&
		   lo == 1 && hi == 1;
}

/* A row-wise layer's row (pn_layer_rowwise) for a model that saw seq_len
 * 1 alone, as NeuSight's per-op rows are (every leading dimension in the
 * batch): its batch x seq_len rows as the batch, seq_len 1, so that the
 * model reads it as one of its own rows and not as a seq_len it never saw
 * (its trees would read the batch alone).  raw and x: the row's values
 * before and after the input transform. */
static void merge_rows(const slot *s, const char *layer, double *raw,
		       double *x)
{
	if (!s->merge || !layer || !pn_layer_rowwise(pn_layer_type_of(layer)))
		return;
	int b = s->rows_b, q = s->rows_s;
	raw[b] *= raw[q];
	raw[q] = 1;
	x[b] = pn_feature_input(&s->m->feat[b], raw[b]);
	x[q] = pn_feature_input(&s->m->feat[q], raw[q]);
}

pn_predictor *pn_predictor_new(const pn_modelset *ms, int ncols,
			       const char *const *colnames)
{
	pn_predictor *p = pn_xcalloc(1, sizeof *p);
	int n = ms->n;
	for (int i = 0; i < ms->n; i++)
		n += ms->m[i]->nfold;
	p->s = pn_xcalloc((size_t)n, sizeof *p->s);
	p->star = -1;
	p->last = -1;
	for (int k = 0; k < PN_DOM_NCAT; k++) {
		p->dcol[k] = -1;
		for (int c = 0; c < ncols; c++)
			if (strcmp(colnames[c], pn_domain_cols[k]) == 0)
				p->dcol[k] = c;
	}
	/* the models first, as in the set, then every fold model */
	for (int i = 0; i < ms->n; i++) {
		slot_init(&p->s[i], ms->m[i], ncols, colnames);
		p->s[i].owner = -1;
		if (strcmp(ms->m[i]->layer, "*") == 0)
			p->star = i;
	}
	p->nmain = p->nm = ms->n;
	for (int i = 0; i < ms->n; i++)
		for (int k = 0; k < ms->m[i]->nfold; k++) {
			slot *f = &p->s[p->nm++];
			slot_init(f, ms->m[i]->folds[k], ncols, colnames);
			f->owner = i;
			/* a fold model records no ranges: its model's */
			f->merge = p->s[i].merge && f->rows_b >= 0 &&
				   f->rows_s >= 0;
		}
	return p;
}

void pn_predictor_free(pn_predictor *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nm; i++) {
		free(p->s[i].col);
		free(p->s[i].catval);
		free(p->s[i].catlen);
		free(p->s[i].missing);
		free(p->s[i].x);
		free(p->s[i].raw);
		free(p->s[i].base);
		free(p->s[i].y);
	}
	free(p->s);
	free(p->row_model);
	free(p->row_at);
	free(p->why);
	free(p->last_layer);
	free(p);
}

static int model_of(pn_predictor *p, const char *layer)
{
	if (!layer)
		return p->star;
	if (p->last_layer && strcmp(p->last_layer, layer) == 0)
		return p->last;
	int k = p->star;
	for (int i = 0; i < p->nmain; i++)
		if (strcmp(p->s[i].m->layer, layer) == 0) {
			k = i;
			break;
		}
	free(p->last_layer);
	p->last_layer = pn_xstrdup(layer);
	p->last = k;
	return k;
}

/* The slot of the fold model of slot k without device, or -1. */
static int fold_of(const pn_predictor *p, int k, const char *device)
{
	for (int i = p->nmain; i < p->nm; i++)
		if (p->s[i].owner == k && strcmp(p->s[i].m->fold, device) == 0)
			return i;
	return -1;
}

/* The domain verdict of a row (fields, lens) of layer that slot s takes:
 * a fold model is checked against the domain of its model, which records
 * what the fold saw but the device. */
static void verdict(const pn_predictor *p, const slot *s, const char *layer,
		    const char *const *fields, const size_t *lens, double base,
		    char *why)
{
	/* the floor is the predicting model's own (a fold's is its refit's) */
	double floor = s->m->base ? pn_domain_base_floor(s->m) : 0;
	const pn_model *m = s->owner >= 0 ? p->s[s->owner].m : s->m;
	const char *val[PN_DOM_NCAT] = {layer};
	char buf[PN_DOM_NCAT][32];
	for (int k = 1; k < PN_DOM_NCAT; k++) {
		int c = p->dcol[k];
		if (c < 0)
			continue;
		size_t n = lens ? lens[c] : strlen(fields[c]);
		snprintf(buf[k], sizeof buf[k], "%.*s", (int)n, fields[c]);
		val[k] = buf[k];
	}
	pn_domain_check_fields(m, val, s->raw, why, PN_DOMAIN_WHY);
	if (m->base)
		pn_domain_check_base(m, floor, base, why, PN_DOMAIN_WHY);
}

static int push(pn_predictor *p, const char *layer, const char *device,
		const char *const *fields, const size_t *lens,
		const double *num);

int pn_predictor_push(pn_predictor *p, const char *layer,
		      const char *const *fields, const size_t *lens)
{
	return push(p, layer, NULL, fields, lens, NULL);
}

int pn_predictor_push_fold(pn_predictor *p, const char *layer,
			   const char *device, const char *const *fields,
			   const size_t *lens)
{
	return push(p, layer, device, fields, lens, NULL);
}

int pn_predictor_push_num(pn_predictor *p, const char *layer,
			  const char *const *fields, const size_t *lens,
			  const double *num)
{
	return push(p, layer, NULL, fields, lens, num);
}

/* Column c of a row as a number: num[c] where given, else its field. */
static int cell_num(const char *name, const char *const *fields,
		    const size_t *lens, const double *num, int c, double *d,
		    char *err, size_t errsz)
{
	if (num && !isnan(num[c])) {
		*d = num[c];
		return 0;
	}
	size_t n = lens ? lens[c] : strlen(fields[c]);
	return field_num(name, fields[c], n, d, err, errsz);
}

static int push(pn_predictor *p, const char *layer, const char *device,
		const char *const *fields, const size_t *lens,
		const double *num)
{
	int k = model_of(p, layer);
	if (k < 0) {
		snprintf(p->err, sizeof p->err, "no model for layer '%.200s'",
			 layer ? layer : "");
		return -1;
	}
	if (device) {
		int own = k;
		if ((k = fold_of(p, own, device)) < 0) {
			snprintf(p->err, sizeof p->err, "the %.200s model has "
				 "no fold model without device '%.200s' (fit "
				 "it with pn-fit --logo --keep-folds)",
				 strcmp(p->s[own].m->layer, "*") == 0 ?
				 "catch-all" : p->s[own].m->layer, device);
			return -3;
		}
	}
	slot *s = &p->s[k];
	if (s->missing) {
		snprintf(p->err, sizeof p->err, "%s", s->missing);
		return -2;
	}
	const pn_model *m = s->m;
	double base = 1;
	if (m->base) {
		int c = s->basecol;
		if (cell_num(m->base, fields, lens, num, c, &base, p->err,
			     sizeof p->err) < 0)
			return -2;
		if (!(base > 0)) {
			char v[41];
			if (num && !isnan(num[c]))
				pn_fmt_num(v, base);
			else
				snprintf(v, sizeof v, "%.*s", (int)(lens ?
					 lens[c] : strlen(fields[c])),
					 fields[c]);
			snprintf(p->err, sizeof p->err, "column '%s': '%s' "
				 "is not positive (the base of the %s model's "
				 "logratio target)", m->base, v, m->layer);
			return -2;
		}
	}
	double floor = m->base ? pn_domain_base_floor(m) : 0, raw = base;
	if (base < floor)
		base = floor;
	if (s->cnt == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->x = pn_xrealloc(s->x, s->cap * m->p * sizeof *s->x);
		if (m->base)
			s->base = pn_xrealloc(s->base, s->cap *
					      sizeof *s->base);
	}
	if (m->base)
		s->base[s->cnt] = base;
	double *x = s->x + s->cnt * m->p;
	for (size_t j = 0; j < m->p; j++) {
		int c = s->col[j];
		const pn_feature *f = &m->feat[j];
		double d;
		if (f->cat) {
			const char *v = fields[c];
			size_t n = lens ? lens[c] : strlen(v);
			d = n == s->catlen[j] && memcmp(v, s->catval[j], n) == 0;
		} else if (cell_num(f->name, fields, lens, num, c, &d, p->err,
				    sizeof p->err) < 0)
			return -2;
		s->raw[j] = d;
		x[j] = pn_feature_input(f, d);
	}
	merge_rows(s, layer, s->raw, x);
	if (p->nrows == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 256;
		p->row_model = pn_xrealloc(p->row_model,
					   p->cap * sizeof *p->row_model);
		p->row_at = pn_xrealloc(p->row_at, p->cap * sizeof *p->row_at);
		p->why = pn_xrealloc(p->why, p->cap * PN_DOMAIN_WHY);
	}
	verdict(p, s, layer, fields, lens, raw,
		p->why + p->nrows * PN_DOMAIN_WHY);
	p->row_model[p->nrows] = k;
	p->row_at[p->nrows++] = s->cnt++;
	return 0;
}

size_t pn_predictor_pending(const pn_predictor *p)
{
	return p->nrows;
}

void pn_predictor_flush(pn_predictor *p, double *out)
{
	pn_predictor_flush_models(p, out, NULL);
}

void pn_predictor_flush_models(pn_predictor *p, double *out,
			       const pn_model **which)
{
	for (int i = 0; i < p->nm; i++) {
		slot *s = &p->s[i];
		if (!s->cnt)
			continue;
		s->y = pn_xrealloc(s->y, s->cap * sizeof *s->y);
		s->m->family->predict(s->m->state, s->x, s->cnt, s->m->p,
				      s->y);
		for (size_t j = 0; j < s->cnt; j++)
			s->y[j] = pn_target_value(s->m, s->y[j],
						  s->base ? s->base[j] : 1);
	}
	for (size_t r = 0; r < p->nrows; r++) {
		out[r] = p->s[p->row_model[r]].y[p->row_at[r]];
		if (which)
			which[r] = p->s[p->row_model[r]].m;
	}
	for (int i = 0; i < p->nm; i++)
		p->s[i].cnt = 0;
	p->nrows = 0;
}

const char *pn_predictor_domain(const pn_predictor *p, size_t r)
{
	if (r >= p->cap)
		PN_BUG("pn_predictor_domain of a row never queued");
	return p->why + r * PN_DOMAIN_WHY;
}

const char *pn_predictor_error(const pn_predictor *p)
{
	return p->err;
}

int pn_predictor_predict(pn_predictor *p, const char *layer,
			 const char *const *fields, double *out)
{
	if (p->nrows)
		PN_BUG("pn_predictor_predict with rows queued");
	int rc = pn_predictor_push(p, layer, fields, NULL);
	if (rc < 0)
		return rc;
	pn_predictor_flush(p, out);
	return 0;
}
