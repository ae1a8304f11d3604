/* table.c - a whole TSV in memory (see table.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "table.h"
#include "tree.h"
#include "tsv.h"

int pn_fault_set(pn_fault *f, int code, const char *path, long line,
		 const char *fmt, ...)
{
	va_list ap;
	f->code = code;
	f->path = path;
	f->line = line;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof f->msg, fmt, ap);
	va_end(ap);
	return -1;
}

void pn_fault_die(const pn_fault *f)
{
	if (f->code == PN_EXIT_USAGE)
		pn_usage_error("%s", f->msg);
	if (f->path)
		pn_die_at(f->code, f->path, f->line, "%s", f->msg);
	pn_die(f->code, "%s", f->msg);
}

pn_table *pn_table_read(const char *path)
{
	pn_table *t = pn_xcalloc(1, sizeof *t);
	pn_tsv *in = pn_tsv_open(path);
	t->path = pn_xstrdup(pn_tsv_path(in));
	t->ncols = pn_tsv_ncols(in);
	t->names = pn_xmalloc((size_t)t->ncols * sizeof *t->names);
	for (int c = 0; c < t->ncols; c++)
		t->names[c] = pn_xstrdup(pn_tsv_colname(in, c));
	pn_tsv_rows rows;
	pn_tsv_read_all(in, &rows, (int)pn_default_threads());
	t->nrows = rows.nrows;
	t->cell = rows.cell;
	t->len = rows.len;
	t->line = rows.line;
	t->blocks = pn_xmalloc(sizeof *t->blocks);
	t->blocks[t->nblocks++] = rows.text;
	pn_tsv_close(in);
	if (t->nrows == 0) {
		pn_fault f;
		pn_fault_set(&f, PN_EXIT_DATA, NULL, 0, "%s: no data rows",
			     t->path);
		pn_table_free(t);
		pn_fault_die(&f);
	}
	return t;
}

void pn_table_free(pn_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nblocks; i++)
		free(t->blocks[i]);
	for (int c = 0; c < t->ncols; c++)
		free(t->names[c]);
	free(t->blocks);
	free(t->names);
	free(t->cell);
	free(t->len);
	free(t->line);
	free(t->path);
	free(t);
}

int pn_table_find(const pn_table *t, const char *name)
{
	for (int c = 0; c < t->ncols; c++)
		if (strcmp(t->names[c], name) == 0)
			return c;
	return -1;
}

int pn_table_col(const pn_table *t, const char *name, pn_fault *f)
{
	int c = pn_table_find(t, name);
	if (c < 0)
		pn_fault_set(f, PN_EXIT_DATA, t->path, 1, "missing column "
			     "'%s'", name);
	return c;
}

int pn_cell_na(const pn_table *t, size_t r, int c)
{
	size_t n = pn_cell_len(t, r, c);
	return n == 0 || (n == 2 && memcmp(pn_cell(t, r, c), "NA", 2) == 0);
}

int pn_cell_num(const pn_table *t, size_t r, int c, double *v, pn_fault *f)
{
	if (pn_cell_na(t, r, c))
		return pn_fault_set(f, PN_EXIT_DATA, t->path, t->line[r],
				    "column '%s': value is %s", t->names[c],
				    pn_cell_len(t, r, c) ? "NA" : "empty");
	if (pn_parse_num(pn_cell(t, r, c), pn_cell_len(t, r, c), v) < 0)
		return pn_fault_set(f, PN_EXIT_DATA, t->path, t->line[r],
				    "column '%s': '%.40s' is not a number",
				    t->names[c], pn_cell(t, r, c));
	return 0;
}

size_t pn_table_keep(pn_table *t, const unsigned char *keep)
{
	size_t k = 0, nc = (size_t)t->ncols;
	for (size_t r = 0; r < t->nrows; r++) {
		if (!keep[r])
			continue;
		memmove(t->cell + k * nc, t->cell + r * nc,
			nc * sizeof *t->cell);
		memmove(t->len + k * nc, t->len + r * nc, nc * sizeof *t->len);
		t->line[k++] = t->line[r];
	}
	return t->nrows = k;
}

/* ---- sets of strings --------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void pn_strset_add(pn_strset *ss, const char *s)
{
	for (int i = 0; i < ss->n; i++)
		if (strcmp(ss->s[i], s) == 0)
			return;
	if (ss->n == ss->cap) {
		ss->cap = ss->cap ? 2 * ss->cap : 8;
		ss->s = pn_xrealloc(ss->s, (size_t)ss->cap * sizeof *ss->s);
	}
	ss->s[ss->n++] = s;
}

void pn_strset_sort(pn_strset *ss)
{
	if (ss->n)
		qsort(ss->s, (size_t)ss->n, sizeof *ss->s, cmp_str);
}

char *pn_strset_join(const pn_strset *ss)
{
	size_t n = 1;
	for (int i = 0; i < ss->n; i++)
		n += strlen(ss->s[i]) + 1;
	char *j = pn_xmalloc(n), *at = j;
	*at = '\0';
	for (int i = 0; i < ss->n; i++)
		at += sprintf(at, "%s%s", i ? "," : "", ss->s[i]);
	return j;
}

void pn_strset_free(pn_strset *ss)
{
	free(ss->s);
	memset(ss, 0, sizeof *ss);
}
