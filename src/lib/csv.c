#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "err.h"
#include "input.h"

#ifndef PN_CSV_BUF      /* first size of the text buffer, which grows to */
#define PN_CSV_BUF (1 << 20)    /* hold the longest record */
#endif

struct pn_csv {
	char *path;
	pn_input *in;           /* bytes, gzip already inflated */

	char *buf;              /* decoded text; the record being parsed */
	size_t cap, pos, end;   /* starts at pos, [pos, end) not yet consumed */

	int ncols;
	char **names;
	int fcap;               /* room in off/len/f */
	size_t *off, *len;      /* fields of the current record */
	const char **f;
	long line;              /* line where the current record starts */
	long next;              /* line where the next record starts */
};

/* Move the unconsumed text to the front, grow if full, decode more. */
static size_t fill(pn_csv *c)
{
	if (c->pos > 0) {
		memmove(c->buf, c->buf + c->pos, c->end - c->pos);
		c->end -= c->pos;
		c->pos = 0;
	}
	if (c->end == c->cap) {
		c->cap *= 2;
		c->buf = pn_xrealloc(c->buf, c->cap + 1);
	}
	size_t n = pn_input_read(c->in, c->buf + c->end, c->cap - c->end);
	c->end += n;
	return n;
}

/* Is byte pos + i of the record available?  Offsets from pos survive fill. */
static inline int have(pn_csv *c, size_t i)
{
	while (c->pos + i >= c->end)
		if (fill(c) == 0)
			return 0;
	return 1;
}

#define B(i) (c->buf[c->pos + (i)])

/* Does a record end at offset i: LF, CRLF, CR at end of input, or EOF? */
static int at_eol(pn_csv *c, size_t *i)
{
	if (!have(c, *i))
		return 1;
	if (B(*i) == '\n')
		return 1;
	if (B(*i) == '\r' && (!have(c, *i + 1) || B(*i + 1) == '\n')) {
		++*i;
		return 1;
	}
	return 0;
}

/* A malformed record: "file:line: [field n: ]msg". */
static _Noreturn void bad(const pn_csv *c, int field, const char *msg)
{
	if (field)
		pn_die_at(PN_EXIT_DATA, c->path, c->line, "field %d: %s", field,
			  msg);
	pn_die_at(PN_EXIT_DATA, c->path, c->line, "%s", msg);
}

static void grow_fields(pn_csv *c)
{
	c->fcap = c->fcap ? 2 * c->fcap : 16;
	c->off = pn_xrealloc(c->off, (size_t)c->fcap * sizeof *c->off);
	c->len = pn_xrealloc(c->len, (size_t)c->fcap * sizeof *c->len);
	c->f = pn_xrealloc(c->f, (size_t)c->fcap * sizeof *c->f);
}

/* Parse the record at pos in place (unquoting shrinks it, so the write
 * offset w never passes the read offset r).  Returns its field count, 0 at
 * end of input; at most fcap fields are stored unless grow is set. */
static int parse(pn_csv *c, int grow)
{
	size_t r = 0, w = 0;
	long nl = 0;
	int nf = 0;
	c->line = c->next;
	if (!have(c, 0))
		return 0;
	for (;;) {
		size_t start = w;
		if (have(c, r) && B(r) == '"') {
			r++;
			for (;;) {
				if (!have(c, r))
					bad(c, 0, "unterminated quoted field");
				char ch = B(r);
				if (ch == '"') {
					if (have(c, r + 1) && B(r + 1) == '"') {
						B(w++) = '"';
						r += 2;
						continue;
					}
					r++;
					break;
				}
				nl += ch == '\n';
				B(w++) = ch;
				r++;
			}
			if (!at_eol(c, &r) && B(r) != ',')
				bad(c, nf + 1, "text after the closing quote");
		} else {
			while (!at_eol(c, &r) && B(r) != ',') {
				if (B(r) == '"')
					bad(c, nf + 1,
					    "quote inside an unquoted field");
				B(w) = B(r);
				w++;
				r++;
			}
		}
		if (nf == c->fcap && grow)
			grow_fields(c);
		if (nf < c->fcap) {
			c->off[nf] = start;
			c->len[nf] = w - start;
		}
		nf++;
		int eof = !have(c, r);
		int comma = !eof && B(r) == ',';
		B(w++) = '\0';  /* over the delimiter or a consumed byte */
		if (!eof)
			r++;
		if (!comma)
			break;
	}
	c->next = c->line + nl + 1;
	for (int i = 0; i < nf && i < c->fcap; i++)
		c->f[i] = c->buf + c->pos + c->off[i];
	c->pos += r;
	return nf;
}

pn_csv *pn_csv_open(const char *path)
{
	pn_csv *c = pn_xcalloc(1, sizeof *c);
	c->in = pn_input_open(path);
	c->path = pn_xstrdup(path ? path : "-");
	c->cap = PN_CSV_BUF;
	c->buf = pn_xmalloc(c->cap + 1);
	c->next = 1;

	int nc = parse(c, 1);
	if (nc == 0)
		pn_die_at(PN_EXIT_DATA, c->path, 0, "empty input (no header)");
	c->ncols = nc;
	c->names = pn_xcalloc((size_t)nc, sizeof *c->names);
	for (int i = 0; i < nc; i++) {
		c->names[i] = pn_xstrdup(c->f[i]);
		if (!c->names[i][0])
			continue;
		for (int j = 0; j < i; j++)
			if (strcmp(c->names[i], c->names[j]) == 0)
				pn_die_at(PN_EXIT_DATA, c->path, c->line,
					  "duplicate column '%s'", c->names[i]);
	}
	return c;
}

void pn_csv_close(pn_csv *c)
{
	if (!c)
		return;
	pn_input_close(c->in);
	for (int i = 0; i < c->ncols; i++)
		free(c->names[i]);
	free(c->names);
	free(c->off);
	free(c->len);
	free(c->f);
	free(c->buf);
	free(c->path);
	free(c);
}

const char *pn_csv_path(const pn_csv *c) { return c->path; }
int pn_csv_ncols(const pn_csv *c) { return c->ncols; }
const char *pn_csv_colname(const pn_csv *c, int col) { return c->names[col]; }
long pn_csv_lineno(const pn_csv *c) { return c->line; }
const char *pn_csv_str(const pn_csv *c, int col) { return c->f[col]; }
size_t pn_csv_len(const pn_csv *c, int col) { return c->len[col]; }

int pn_csv_find(const pn_csv *c, const char *name)
{
	for (int i = 0; i < c->ncols; i++)
		if (strcmp(c->names[i], name) == 0)
			return i;
	return -1;
}

int pn_csv_read(pn_csv *c)
{
	int nf = parse(c, 0);
	if (nf == 0)
		return 0;
	if (nf != c->ncols)
		pn_die_at(PN_EXIT_DATA, c->path, c->line,
			  "expected %d field%s, found %d", c->ncols,
			  c->ncols == 1 ? "" : "s", nf);
	return 1;
}

void pn_csv_die(const pn_csv *c, int col, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pn_die_at(PN_EXIT_DATA, c->path, c->line, "column '%s': %s",
		  c->names[col], msg);
}

void pn_csv_die_row(const pn_csv *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pn_die_at(PN_EXIT_DATA, c->path, c->line, "%s", msg);
}
