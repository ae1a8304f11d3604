/* pn-md - a pn TSV as a markdown table, through sheet.h: the formatting
 * stage of the pipelines, so that no tool runs twice for two formats. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sheet.h"
#include "tsv.h"

static const char usage_text[] =
"Usage: pn-md [OPTION]... [FILE]\n"
"Write a TSV as a markdown table.\n"
"\n"
"  -r, --right=COLS       right-align these columns\n"
"  -a, --auto             right-align every column whose cells are all\n"
"                           numbers or NA\n"
"  -n, --number=[COLS=]FMT  write the numbers of COLS (default: every\n"
"                           column) with FMT: %.Nf, %.Ne or %.Ng (N from 0\n"
"                           to 17), or %s for the cell as it is; the last\n"
"                           -n naming a column wins\n"
"  -h, --help             display this help and exit\n"
"      --version          output version information and exit\n"
"\n"
"With no FILE, or when FILE is -, read standard input (plain or gzip).\n"
"COLS: column names or positions from 1, and ranges of positions (5-7,\n"
"9-), separated by commas.  Without -n, numbers are written to 4\n"
"significant digits, as pn-sum and pn-eval --format md write them (give\n"
"counts and ranks -n COLS=%s).  NA stays NA; '|' in a cell is written\n"
"as \\|.\n";

enum { OPT_VERSION = 256 };

static const struct option longopts[] = {
	{"right", required_argument, NULL, 'r'},
	{"auto", no_argument, NULL, 'a'},
	{"number", required_argument, NULL, 'n'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0}
};

/* How a column's numbers are written. */
enum { NUM_SIG4, NUM_ASIS, NUM_PRINTF };

typedef struct {
	int right;
	int num;             /* NUM_* */
	const char *fmt;     /* NUM_PRINTF: a checked %.N[feg] */
	int numeric;         /* every cell a number or NA */
} column;

/* The options that name columns, kept until the header is read. */
typedef struct {
	const char *cols;    /* NULL: every column */
	const char *fmt;     /* -n's FMT; NULL for -r */
} colopt;

static int is_na(const char *s)
{
	return *s == 0 || strcmp(s, "NA") == 0;
}

/* FMT of -n: %s, or one conversion %.N with N in 0..17 and f, e or g. */
static void check_format(const char *opt, const char *fmt)
{
	if (strcmp(fmt, "%s") == 0)
		return;
	const char *p = fmt;
	if (p[0] == '%' && p[1] == '.' && p[2] >= '0' && p[2] <= '9') {
		int n = p[2] - '0';
		p += 3;
		if (*p >= '0' && *p <= '9')
			n = n * 10 + *p++ - '0';
		if (n <= 17 && (*p == 'f' || *p == 'e' || *p == 'g') && !p[1])
			return;
	}
	pn_usage_error("invalid --number '%s': expected %%.Nf, %%.Ne, %%.Ng "
		       "(N from 0 to 17) or %%s", opt);
}

/* Mark in sel the columns that one item of COLS names: a name, a position
 * from 1, or a range of positions A-B or A-.  An item that names none
 * leaves a message in why (n bytes) and returns -1. */
static int select_item(const pn_tsv *in, const char *item, char *sel,
		       char *why, size_t n)
{
	int nc = pn_tsv_ncols(in);
	int k = pn_tsv_find(in, item);
	if (k >= 0) {
		sel[k] = 1;
		return 0;
	}
	char *end;
	errno = 0;
	long lo = strtol(item, &end, 10), hi = lo;
	if (end != item && *end == '-')
		hi = end[1] ? strtol(end + 1, &end, 10) : (end++, nc);
	if (end == item || *end || item[0] < '1' || item[0] > '9' ||
	    hi < lo || lo < 1) {
		snprintf(why, n, "missing column '%s'", item);
		return -1;
	}
	if (errno == ERANGE) {          /* beyond a long: no such column */
		snprintf(why, n, "no column '%s': the header has %d", item,
			 nc);
		return -1;
	}
	if (hi > nc) {
		snprintf(why, n, "no column %ld ('%s'): the header has %d", hi,
			 item, nc);
		return -1;
	}
	for (long i = lo; i <= hi; i++)
		sel[i - 1] = 1;
	return 0;
}

/* Apply one -r or -n option to the columns it names; dies on a column
 * the input lacks. */
static void apply(const pn_tsv *in, const colopt *o, column *col)
{
	int nc = pn_tsv_ncols(in), bad = 0;
	char *sel = pn_xcalloc((size_t)nc, 1), why[400];
	if (o->cols) {
		char *copy = pn_xstrdup(o->cols), *save = NULL;
		for (char *c = strtok_r(copy, ",", &save); c && !bad;
		     c = strtok_r(NULL, ",", &save))
			bad = select_item(in, c, sel, why, sizeof why) < 0;
		free(copy);
	} else {
		memset(sel, 1, (size_t)nc);
	}
	for (int i = 0; i < nc && !bad; i++) {
		if (!sel[i])
			continue;
		if (!o->fmt) {
			col[i].right = 1;
		} else if (strcmp(o->fmt, "%s") == 0) {
			col[i].num = NUM_ASIS;
		} else {
			col[i].num = NUM_PRINTF;
			col[i].fmt = o->fmt;
		}
	}
	free(sel);
	if (bad)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), 1, "%s", why);
}

static void put_cell(pn_sheet *sh, const column *c, const char *s)
{
	double v;
	if (is_na(s) || c->num == NUM_ASIS ||
	    pn_parse_num(s, strlen(s), &v) < 0) {
		pn_sheet_text(sh, is_na(s) ? "NA" : s);
		return;
	}
	if (c->num == NUM_SIG4) {
		pn_sheet_num(sh, v);
		return;
	}
	char b[352];
	snprintf(b, sizeof b, c->fmt, v);
	pn_sheet_text(sh, b);
}

int main(int argc, char **argv)
{
	pn_init("pn-md");
	pn_stdout_init();

	colopt *opts = pn_xmalloc((size_t)argc * sizeof *opts);
	int nopt = 0, autoright = 0, c;
	argv[0] = (char *)pn_prog;   /* getopt's messages start "pn-md: " */
	while ((c = getopt_long(argc, argv, "r:an:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (optarg[strspn(optarg, ",")] == '\0')
				pn_usage_error("--right: no columns in '%s'",
					       optarg);
			opts[nopt++] = (colopt){optarg, NULL};
			break;
		case 'a':
			autoright = 1;
			break;
		case 'n': {
			char *eq = strrchr(optarg, '=');
			check_format(optarg, eq ? eq + 1 : optarg);
			if (eq) {
				*eq = 0;
				if (!*optarg)
					pn_usage_error("invalid --number: no "
						       "column before '='");
			}
			opts[nopt++] = (colopt){eq ? optarg : NULL,
						eq ? eq + 1 : optarg};
			break;
		}
		case 'h':
			free(opts);
			fputs(usage_text, stdout);
			pn_output_close(stdout);
			return PN_EXIT_OK;
		case OPT_VERSION:
			pn_version();
		default:
			pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);

	pn_tsv *in = pn_tsv_open(optind < argc ? argv[optind] : NULL);
	int nc = pn_tsv_ncols(in);
	column *col = pn_xcalloc((size_t)nc, sizeof *col);
	for (int i = 0; i < nopt; i++)
		apply(in, &opts[i], col);
	free(opts);

	/* The whole table: --auto knows a column's kind after its last cell. */
	size_t nrow = 0, cap = 0;
	char **cell = NULL;
	for (int i = 0; i < nc; i++)
		col[i].numeric = 1;
	while (pn_tsv_read(in)) {
		if ((nrow + 1) * (size_t)nc > cap) {
			cap = cap ? 2 * cap : 64 * (size_t)nc;
			cell = pn_xrealloc(cell, cap * sizeof *cell);
		}
		for (int i = 0; i < nc; i++) {
			const char *s = pn_tsv_str(in, i);
			double v;
			cell[nrow * (size_t)nc + (size_t)i] = pn_xstrdup(s);
			if (is_na(s))
				continue;
			if (pn_parse_num(s, strlen(s), &v) < 0)
				col[i].numeric = 0;
		}
		nrow++;
	}
	if (nrow == 0)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), 0, "no data rows");

	pn_sheet *sh = pn_sheet_new(stdout, PN_SHEET_MD);
	for (int i = 0; i < nc; i++)
		pn_sheet_head(sh, pn_tsv_colname(in, i),
			      col[i].right || (autoright && col[i].numeric));
	pn_sheet_end(sh);
	for (size_t r = 0; r < nrow; r++) {
		for (int i = 0; i < nc; i++) {
			char *s = cell[r * (size_t)nc + (size_t)i];
			put_cell(sh, &col[i], s);
			free(s);
		}
		pn_sheet_end(sh);
	}
	pn_sheet_free(sh);
	pn_output_close(stdout);
	free(cell);
	free(col);
	pn_tsv_close(in);
	return PN_EXIT_OK;
}
