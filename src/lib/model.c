/* model.c - hyper-parameters, the model-file reader and writer helpers, and
 * the family table (see model.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "input.h"
#include "model.h"
#include "modelset.h"
#include "tsv.h"

/* ---- parameters ------------------------------------------------------- */

static const char *param_find(pn_params *p, const char *name)
{
	for (int i = 0; i < p->n; i++)
		if (strcmp(p->name[i], name) == 0) {
			p->used[i] = 1;
			return p->value[i];
		}
	return NULL;
}

double pn_params_num(pn_params *p, const char *name, double dflt)
{
	const char *s = param_find(p, name);
	double v;
	if (!s)
		return dflt;
	if (pn_parse_num(s, strlen(s), &v) < 0)
		pn_usage_error("invalid --param %s=%s: not a number", name, s);
	return v;
}

long pn_params_int(pn_params *p, const char *name, long dflt)
{
	const char *s = param_find(p, name);
	double v;
	if (!s)
		return dflt;
	if (pn_parse_num(s, strlen(s), &v) < 0 || v != floor(v) ||
	    fabs(v) > 1e15)
		pn_usage_error("invalid --param %s=%s: not a whole number",
			       name, s);
	return (long)v;
}

/* ---- reading ---------------------------------------------------------- */

struct pn_mreader {
	pn_input *in;
	char *path;
	long line;
	char *buf;
	size_t cap, len;
	int at_end;             /* the last line read was "end" */
	char *raw;              /* decoded bytes not yet made lines: */
	size_t rpos, rend;      /* [rpos, rend) of raw */
};

#define MREAD_CHUNK (64 * 1024)

pn_mreader *pn_mreader_open(const char *path)
{
	pn_mreader *r = pn_xcalloc(1, sizeof *r);
	r->in = pn_input_open(path);
	r->path = pn_xstrdup(!path || strcmp(path, "-") == 0 ? "-" : path);
	r->raw = pn_xmalloc(MREAD_CHUNK);
	return r;
}

void pn_mreader_free(pn_mreader *r)
{
	if (!r)
		return;
	pn_input_close(r->in);
	free(r->path);
	free(r->buf);
	free(r->raw);
	free(r);
}

void pn_mread_die(pn_mreader *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pn_die_at(PN_EXIT_DATA, r->path, r->line, "corrupt model: %s", msg);
}

int pn_mread_at_end(const pn_mreader *r)
{
	return r->at_end;
}

long pn_mread_lineno(const pn_mreader *r)
{
	return r->line;
}

void pn_mread_begin(pn_mreader *r)
{
	r->at_end = 0;
}

/* The next line of the input, its newline kept, into r->buf; returns its
 * length, 0 at the end of the input. */
static size_t next_line(pn_mreader *r)
{
	size_t n = 0;
	for (;;) {
		if (r->rpos == r->rend) {
			r->rpos = 0;
			r->rend = pn_input_read(r->in, r->raw, MREAD_CHUNK);
			if (r->rend == 0)
				break;
		}
		char *from = r->raw + r->rpos;
		char *nl = memchr(from, '\n', r->rend - r->rpos);
		size_t k = nl ? (size_t)(nl - from) + 1 : r->rend - r->rpos;
		if (n + k + 1 > r->cap) {
			r->cap = 2 * (n + k + 1);
			r->buf = pn_xrealloc(r->buf, r->cap);
		}
		memcpy(r->buf + n, from, k);
		n += k;
		r->rpos += k;
		if (nl)
			break;
	}
	if (n)
		r->buf[n] = '\0';
	return n;
}

char *pn_mread_raw(pn_mreader *r)
{
	size_t n = next_line(r);
	if (n == 0) {
		r->len = 0;
		return NULL;
	}
	r->line++;
	if (n == 0 || r->buf[n - 1] != '\n')
		pn_mread_die(r, "truncated file (last line has no newline)");
	r->buf[--n] = '\0';
	/* pn writes printable text and tabs: any other control byte (a NUL,
	 * a carriage return) is damage, and a word holding one could not be
	 * written back (pn_model_write) */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)r->buf[i];
		if (c == 0)
			pn_mread_die(r, "NUL byte in line");
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			pn_mread_die(r, "control character 0x%02x in line", c);
	}
	r->len = (size_t)n;
	return r->buf;
}

int pn_mread_split(char *s, char **tok, int max)
{
	int n = 0;
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return n;
		if (n < max)
			tok[n] = s;
		n++;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		if (*s)
			*s++ = '\0';
	}
}

int pn_mread_line(pn_mreader *r, char **tok, int max)
{
	if (r->at_end)
		pn_mread_die(r, "read past 'end'");
	if (!pn_mread_raw(r))
		pn_mread_die(r, "unexpected end of file");
	const char *s = r->buf;
	size_t len = r->len;
	while (*s == ' ' || *s == '\t')
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len == 3 && memcmp(s, "end", 3) == 0) {
		r->at_end = 1;
		return 0;
	}
	int n = pn_mread_split(r->buf, tok, max);
	if (n == 0)
		pn_mread_die(r, "empty line");
	return n;
}

/* pn_mread_nums with a second key alt (NULL: none); 1 when the line is
 * alt's, else 0 (the messages name key) */
static int read_nums(pn_mreader *r, const char *key, const char *alt,
		     double *v, size_t n)
{
	if (r->at_end)
		pn_mread_die(r, "read past 'end'");
	if (!pn_mread_raw(r))
		pn_mread_die(r, "unexpected end of file, want '%s'", key);
	char *s = r->buf;
	while (*s == ' ' || *s == '\t')
		s++;
	char *k = s;
	while (*s && *s != ' ' && *s != '\t')
		s++;
	size_t klen = (size_t)(s - k);
	int is_alt = alt && klen == strlen(alt) && memcmp(k, alt, klen) == 0;
	if (is_alt)
		key = alt;
	if (klen != strlen(key) || memcmp(k, key, klen) != 0) {
		if (klen == 3 && memcmp(k, "end", 3) == 0 && !*s)
			pn_mread_die(r, "'end' too early, want '%s'", key);
		*s = '\0';
		pn_mread_die(r, "'%.40s', want '%s'", k, key);
	}
	for (size_t i = 0;; i++) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s) {
			if (i != n)
				pn_mread_die(r, "'%s' has %zu value%s, want %zu",
					     key, i, i == 1 ? "" : "s", n);
			return is_alt;
		}
		char *t = s;
		while (*s && *s != ' ' && *s != '\t')
			s++;
		if (i >= n)
			pn_mread_die(r, "'%s' has more than %zu value%s", key,
				     n, n == 1 ? "" : "s");
		if (pn_parse_num(t, (size_t)(s - t), &v[i]) < 0) {
			*s = '\0';
			pn_mread_die(r, "'%s' value %zu: '%.40s' is not a "
				     "number", key, i + 1, t);
		}
	}
}

void pn_mread_nums(pn_mreader *r, const char *key, double *v, size_t n)
{
	read_nums(r, key, NULL, v, n);
}

int pn_mread_nums_or(pn_mreader *r, const char *key, const char *alt,
		     double *v, size_t n)
{
	return read_nums(r, key, alt, v, n);
}

/* ---- writing ---------------------------------------------------------- */

void pn_mwrite_nums(FILE *f, const char *key, const double *v, size_t n)
{
	fputs(key, f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %.17g", v[i]);
	putc('\n', f);
}

/* ---- families --------------------------------------------------------- */

static const pn_family *const families[] = {
	&pn_family_lr, &pn_family_rf, &pn_family_gbdt, &pn_family_xgb,
	&pn_family_mlp, NULL
};

const pn_family *pn_family_find(const char *name)
{
	for (int i = 0; families[i]; i++)
		if (strcmp(families[i]->name, name) == 0)
			return families[i];
	return NULL;
}

const pn_family *const *pn_family_all(void)
{
	return families;
}
