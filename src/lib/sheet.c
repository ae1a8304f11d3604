#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sheet.h"
#include "tsv.h"

struct pn_sheet {
	FILE *f;
	int format;
	int col;            /* cells written in the current row */
	int header;         /* still in the header row */
	int ncols;
	char *right;        /* header: right-aligned columns */
};

const char *const pn_sheet_names[] = {"tsv", "md", NULL};

pn_sheet *pn_sheet_new(FILE *f, int format)
{
	pn_sheet *s = pn_xcalloc(1, sizeof *s);
	s->f = f;
	s->format = format;
	s->header = 1;
	return s;
}

void pn_sheet_free(pn_sheet *s)
{
	if (!s)
		return;
	free(s->right);
	free(s);
}

static void cell_start(pn_sheet *s)
{
	if (s->col++)
		fputs(s->format == PN_SHEET_MD ? " | " : "\t", s->f);
	else if (s->format == PN_SHEET_MD)
		fputs("| ", s->f);
}

void pn_sheet_textn(pn_sheet *s, const char *text, size_t n)
{
	cell_start(s);
	if (s->format != PN_SHEET_MD) {
		fwrite(text, 1, n, s->f);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (text[i] == '|')
			putc('\\', s->f);
		putc(text[i], s->f);
	}
}

void pn_sheet_text(pn_sheet *s, const char *text)
{
	pn_sheet_textn(s, text, strlen(text));
}

void pn_sheet_head(pn_sheet *s, const char *name, int right)
{
	if (!s->header)
		PN_BUG("header cell after the header row");
	s->right = pn_xrealloc(s->right, (size_t)s->col + 1);
	s->right[s->col] = (char)(right != 0);
	pn_sheet_text(s, name);
}

void pn_fmt_sig4(char *buf, size_t n, double v)
{
	if (isnan(v)) {
		snprintf(buf, n, "NA");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, n, "%s", v > 0 ? "inf" : "-inf");
		return;
	}
	if (v == 0) {
		snprintf(buf, n, "0");
		return;
	}
	char e[32];
	snprintf(e, sizeof e, "%.3e", v);
	const char *x = strchr(e, 'e');
	int exp10 = x ? atoi(x + 1) : 0;
	if (exp10 < -4 || exp10 >= 6)
		snprintf(buf, n, "%s", e);
	else if (exp10 >= 3)
		snprintf(buf, n, "%.0f", strtod(e, NULL));
	else
		snprintf(buf, n, "%.*f", 3 - exp10, v);
}

void pn_sheet_num(pn_sheet *s, double v)
{
	char b[40];
	if (isnan(v))
		snprintf(b, sizeof b, "NA");
	else if (s->format == PN_SHEET_MD)
		pn_fmt_sig4(b, sizeof b, v);
	else
		pn_fmt_num(b, v);
	pn_sheet_text(s, b);
}

void pn_sheet_int(pn_sheet *s, double v)
{
	char b[40];
	if (isnan(v))
		snprintf(b, sizeof b, "NA");
	else
		snprintf(b, sizeof b, "%.0f", v);
	pn_sheet_text(s, b);
}

void pn_sheet_end(pn_sheet *s)
{
	int md = s->format == PN_SHEET_MD;
	fputs(md ? " |\n" : "\n", s->f);
	if (s->header) {
		if (md) {
			for (int i = 0; i < s->col; i++)
				fputs(s->right && s->right[i] ? "|---:" :
				      "|---", s->f);
			fputs("|\n", s->f);
		}
		s->header = 0;
		s->ncols = s->col;
	}
	s->col = 0;
}
