/* pn-eval - accuracy metrics of predicted against measured times. */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "interval.h"
#include "metrics.h"
#include "modelset.h"
#include "opt.h"
#include "sheet.h"
#include "tsv.h"

static const char usage_text[] =
"Usage: pn-eval [OPTION]... [FILE]\n"
"Compare predicted with measured values in a TSV and print accuracy metrics;\n"
"with --model, first predict every row with a model file from pn-fit.\n"
"\n"
"  -m, --model=FILE       append the model's prediction (column --predicted)\n"
"                           and its domain (the dimensions outside what the\n"
"                           model was fitted on, or -) to every row and\n"
"                           write the rows; the metrics go\n"
"                           to --metrics FILE, or to standard error as a\n"
"                           markdown table, when the measured column exists\n"
"  -I, --interval[=LEVEL]  with --model, also append the LEVEL% interval\n"
"                           (default 90) of every prediction on a GPU the\n"
"                           model never saw, as columns PREDICTED_lo and\n"
"                           PREDICTED_hi (needs a model fitted with pn-fit\n"
"                           --logo); without --model, read those columns;\n"
"                           either way add the metric cover\n"
"      --logo             with --model, predict each row by the fold model\n"
"                           that left out the row's device (a model of\n"
"                           pn-fit --logo --keep-folds): the error of\n"
"                           leaving one device out\n"
"      --strict           with --model, refuse (exit 1) a row outside what its\n"
"                           model was fitted on (see the column domain)\n"
"      --metrics=FILE     with --model, write the metrics to FILE (format\n"
"                           --format, default tsv)\n"
"  -b, --by=COL[,COL]...  one row per group of rows with equal values in these\n"
"                           columns, groups in order of first appearance\n"
"      --total            with --by, append an overall row whose by columns\n"
"                           are 'ALL'\n"
"      --measured=COL     column of measured values (default time_ms)\n"
"      --predicted=COL    column of predicted values (default pred_ms);\n"
"                           with --ape, repeatable\n"
"      --ape              write the rows instead of metrics, with the APE of\n"
"                           each --predicted column in a column right after\n"
"                           it: pred_ms's is pred_ape (a suffix _ms replaced),\n"
"                           x's is x_ape; 6 significant digits, NA where a\n"
"                           value is missing\n"
"      --skip-na          skip rows whose measured or predicted value is NA or\n"
"                           empty, and report their count on stderr\n"
"      --format=FMT       tsv (the default) or md: a markdown table with\n"
"                           numbers to 4 significant digits\n"
"  -o, --output=FILE      write to FILE instead of standard output\n"
"                           (the rows with --model or --ape, else the\n"
"                           metrics)\n"
"  -h, --help             display this help and exit\n"
"      --version          output version information and exit\n"
"\n"
"With no FILE, or when FILE is -, read standard input (plain or gzip).\n"
"Output columns: [by columns] n rmse mae mape mdape maxape r2 [cover], with\n"
"APE the absolute percentage error and cover the percentage of measured\n"
"values inside their interval; see pn-eval(1) for the definitions.\n";

enum { OPT_TOTAL = 256, OPT_MEASURED, OPT_PREDICTED, OPT_SKIP_NA,
       OPT_FORMAT, OPT_METRICS, OPT_APE, OPT_LOGO, OPT_STRICT,
       OPT_VERSION };

static const struct option longopts[] = {
	{"by", required_argument, NULL, 'b'},
	{"total", no_argument, NULL, OPT_TOTAL},
	{"measured", required_argument, NULL, OPT_MEASURED},
	{"predicted", required_argument, NULL, OPT_PREDICTED},
	{"skip-na", no_argument, NULL, OPT_SKIP_NA},
	{"ape", no_argument, NULL, OPT_APE},
	{"logo", no_argument, NULL, OPT_LOGO},
	{"strict", no_argument, NULL, OPT_STRICT},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"output", required_argument, NULL, 'o'},
	{"model", required_argument, NULL, 'm'},
	{"metrics", required_argument, NULL, OPT_METRICS},
	{"interval", optional_argument, NULL, 'I'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0}
};

static const char *const metric_names[] = {
	"n", "rmse", "mae", "mape", "mdape", "maxape", "r2", "cover"
};
#define NMETRICS 7      /* and cover, with --interval */

static int with_cover;  /* --interval: the metric cover too */
static int by_fold;     /* --logo: rows by the fold without their device */
static int strict;      /* --strict: no row outside its model's domain */

/* ---- groups: by-column values -> accumulator, in order of appearance ---- */

typedef struct {
	char *key;              /* by values joined by tabs */
	pn_metrics m;
} group;

typedef struct {
	group *g;               /* in order of first appearance */
	int n, cap;
	int *slot;              /* open addressing: index into g, or -1 */
	size_t nslot;
} groups;

static uint64_t hash_str(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

static void groups_rehash(groups *gs)
{
	free(gs->slot);
	gs->nslot = gs->nslot ? 2 * gs->nslot : 64;
	gs->slot = pn_xmalloc(gs->nslot * sizeof *gs->slot);
	for (size_t i = 0; i < gs->nslot; i++)
		gs->slot[i] = -1;
	for (int k = 0; k < gs->n; k++) {
		size_t i = hash_str(gs->g[k].key) & (gs->nslot - 1);
		while (gs->slot[i] >= 0)
			i = (i + 1) & (gs->nslot - 1);
		gs->slot[i] = k;
	}
}

static pn_metrics *groups_get(groups *gs, const char *key)
{
	if ((size_t)(gs->n + 1) * 2 > gs->nslot)
		groups_rehash(gs);
	size_t i = hash_str(key) & (gs->nslot - 1);
	for (; gs->slot[i] >= 0; i = (i + 1) & (gs->nslot - 1))
		if (strcmp(gs->g[gs->slot[i]].key, key) == 0)
			return &gs->g[gs->slot[i]].m;
	if (gs->n == gs->cap) {
		gs->cap = gs->cap ? 2 * gs->cap : 16;
		gs->g = pn_xrealloc(gs->g, (size_t)gs->cap * sizeof *gs->g);
	}
	group *g = &gs->g[gs->n];
	g->key = pn_xstrdup(key);
	pn_metrics_init(&g->m);
	gs->slot[i] = gs->n++;
	return &g->m;
}

static void groups_free(groups *gs)
{
	for (int k = 0; k < gs->n; k++) {
		free(gs->g[k].key);
		pn_metrics_free(&gs->g[k].m);
	}
	free(gs->g);
	free(gs->slot);
}

/* ---- where the two values of a row come from ---------------------------- */

/* A source of predictions: a column of the input, and with --interval the
 * columns of its bounds (lo, hi; -1 without). */
typedef struct {
	int col, lo, hi;
} predictor;

/* The measured and predicted value of the current row, and its interval
 * iv[0..2) when p has one.  Returns 0 when one of them is NA or empty and
 * skip_na is set (the row is to be skipped); dies on such a value
 * otherwise, and on anything that is not a number. */
static int row_values(const pn_tsv *in, int cm, const predictor *p,
		      int skip_na, double *meas, double *pred, double *iv)
{
	int cols[4] = {cm, p->col, p->lo, p->hi};
	for (int i = 0; i < (p->lo >= 0 ? 4 : 2); i++)
		if (pn_tsv_na(in, cols[i])) {
			if (skip_na)
				return 0;
			pn_tsv_die(in, cols[i], "value is %s",
				   pn_tsv_len(in, cols[i]) ? "NA" : "empty");
		}
	*meas = pn_tsv_num(in, cm);
	*pred = pn_tsv_num(in, p->col);
	if (p->lo >= 0) {
		iv[0] = pn_tsv_num(in, p->lo);
		iv[1] = pn_tsv_num(in, p->hi);
		if (iv[0] > iv[1])
			pn_tsv_die(in, p->hi, "the interval's upper bound is "
				   "below its lower bound");
	}
	return 1;
}

/* ---- output ------------------------------------------------------------- */

static void put_header(pn_sheet *sh, const pn_tsv *in, const int *by,
		       int nby)
{
	for (int i = 0; i < nby; i++)
		pn_sheet_head(sh, pn_tsv_colname(in, by[i]), 0);
	for (int i = 0; i < NMETRICS + with_cover; i++)
		pn_sheet_head(sh, metric_names[i], 1);
	pn_sheet_end(sh);
}

/* One output row; key holds the nby by-values joined by tabs. */
static void put_row(pn_sheet *sh, const char *key, int nby, pn_metrics *m)
{
	pn_metrics_res r;
	pn_metrics_result(m, &r);
	const char *s = key;
	for (int i = 0; i < nby; i++) {
		const char *tab = strchr(s, '\t');
		size_t n = tab ? (size_t)(tab - s) : strlen(s);
		pn_sheet_textn(sh, s, n);
		s += n + (tab != NULL);
	}
	pn_sheet_int(sh, (double)r.n);
	double v[] = {r.rmse, r.mae, r.mape, r.mdape, r.maxape, r.r2, r.cover};
	for (size_t i = 0; i < NMETRICS - 1 + (size_t)with_cover; i++)
		pn_sheet_num(sh, v[i]);
	pn_sheet_end(sh);
}

/* ---- main --------------------------------------------------------------- */

/* Split a comma list of column names and find each in the input. */
static int *find_cols(const pn_tsv *in, const char *list, const char *opt,
		      int *n)
{
	char *copy = pn_xstrdup(list), *save = NULL;
	int *cols = pn_xmalloc((strlen(list) + 1) * sizeof *cols);
	*n = 0;
	for (char *c = strtok_r(copy, ",", &save); c;
	     c = strtok_r(NULL, ",", &save)) {
		int k = pn_tsv_col(in, c);
		for (int i = 0; i < *n; i++)
			if (cols[i] == k)
				pn_usage_error("column '%s' named twice in %s",
					       c, opt);
		for (int i = 0; i < NMETRICS + with_cover; i++)
			if (strcmp(c, metric_names[i]) == 0)
				pn_usage_error("column '%s' cannot be used in "
					       "%s: the output has a column "
					       "of that name", c, opt);
		cols[(*n)++] = k;
	}
	free(copy);
	return cols;
}

/* The by values of the current row joined by tabs, into *key. */
static const char *row_key(const pn_tsv *in, const int *bycol, int nby,
			   char **key, size_t *keycap)
{
	size_t len = 0;
	for (int i = 0; i < nby; i++)
		len += pn_tsv_len(in, bycol[i]) + 1;
	if (len > *keycap) {
		*keycap = 2 * len;
		*key = pn_xrealloc(*key, *keycap);
	}
	len = 0;
	for (int i = 0; i < nby; i++) {
		size_t n = pn_tsv_len(in, bycol[i]);
		memcpy(*key + len, pn_tsv_str(in, bycol[i]), n);
		len += n;
		(*key)[len++] = '\t';
	}
	(*key)[len - 1] = '\0';
	return *key;
}

/* Everything the metrics need: groups, the overall accumulator, counts. */
typedef struct {
	const char *by;
	int nby, *bycol, want_all;
	groups gs;
	pn_metrics all;
	long rows, skipped;
} tally;

/* Add one pair, and its interval iv[0..2) unless NULL; key is the row's by
 * values (NULL without --by). */
static void tally_add(tally *t, const char *key, double m, double p,
		      const double *iv, const char *path, long line)
{
	pn_metrics *acc[2];
	int nacc = 0;
	if (t->by)
		acc[nacc++] = groups_get(&t->gs, key);
	if (t->want_all)
		acc[nacc++] = &t->all;
	for (int i = 0; i < nacc; i++) {
		int rc = pn_metrics_add(acc[i], m, p);
		if (rc == PN_METRICS_ZERO)
			pn_die_at(PN_EXIT_DATA, path, line, "measured value "
				  "is 0: APE undefined");
		if (rc != PN_METRICS_OK)
			PN_BUG("non-finite value from the reader");
		if (iv)
			pn_metrics_cover(acc[i], m, iv[0], iv[1]);
	}
}

/* --skip-na: the count of rows skipped, on stderr. */
static void say_skipped(const tally *t)
{
	if (t->skipped)
		fprintf(stderr, "%s: skipped %ld row%s with a missing value\n",
			pn_prog, t->skipped, t->skipped == 1 ? "" : "s");
}

static void tally_write(tally *t, FILE *out, int format, const pn_tsv *in)
{
	pn_sheet *sh = pn_sheet_new(out, format);
	put_header(sh, in, t->bycol, t->nby);
	for (int k = 0; k < t->gs.n; k++)
		put_row(sh, t->gs.g[k].key, t->nby, &t->gs.g[k].m);
	if (t->want_all) {
		/* the by columns of the overall row all read ALL */
		char *allkey = pn_xmalloc((size_t)t->nby * 4 + 1);
		allkey[0] = '\0';
		for (int i = 0; i < t->nby; i++)
			strcat(allkey, i ? "\tALL" : "ALL");
		put_row(sh, allkey, t->nby, &t->all);
		free(allkey);
	}
	pn_sheet_free(sh);
}

/* ---- predicting with a model ----------------------------------------------- */

#define BATCH 4096

/* The columns written into each row: the prediction, and with --interval
 * its bounds (columns 0, 1 and 2 of the pn_tsv_out). */
typedef struct {
	int n;
	double level;           /* --interval: the probability */
	int devc;               /* with it, the column device, or -1 */
} inserts;

/* Rows read and not yet written: their fields (offsets into text), line,
 * measured value and by key. */
typedef struct {
	int nc;
	char *text;
	size_t len, cap;
	size_t *off, *flen;     /* nc a row */
	size_t *key;
	long *line;
	double *meas;
	signed char *use;       /* 1: measured value to tally */
	size_t n;
} batch;

static void batch_put(batch *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = 2 * (b->len + n + 1);
		b->text = pn_xrealloc(b->text, b->cap);
	}
	memcpy(b->text + b->len, s, n);
	b->len += n;
}

static void batch_init(batch *b, int nc)
{
	memset(b, 0, sizeof *b);
	b->nc = nc;
	b->off = pn_xmalloc(BATCH * (size_t)nc * sizeof *b->off);
	b->flen = pn_xmalloc(BATCH * (size_t)nc * sizeof *b->flen);
	b->key = pn_xmalloc(BATCH * sizeof *b->key);
	b->line = pn_xmalloc(BATCH * sizeof *b->line);
	b->meas = pn_xmalloc(BATCH * sizeof *b->meas);
	b->use = pn_xmalloc(BATCH);
}

static void batch_free(batch *b)
{
	free(b->text);
	free(b->off);
	free(b->flen);
	free(b->key);
	free(b->line);
	free(b->meas);
	free(b->use);
}

/* Column k of the inserted ones: the row's domain verdict why (domain.h),
 * "-" inside; --strict dies on a row outside. */
static void put_domain(pn_tsv_out *o, int k, const char *why,
		       const pn_model *m, const char *path, long line)
{
	if (*why && strict)
		pn_die_at(PN_EXIT_DATA, path, line, "the row lies outside the "
			  "domain of the %s model: %s (--strict)",
			  strcmp(m->layer, "*") == 0 ? "catch-all" : m->layer,
			  why);
	pn_tsv_out_str(o, k, *why ? why : "-");
}

/* Write the rows of b with their predictions (and intervals), and tally
 * them; fields: room for a row's fields. */
static void batch_flush(batch *b, pn_predictor *pr, double *pred,
			const pn_model **which, const inserts *ins,
			pn_tsv_out *o, FILE *out, tally *t, const char *path,
			const char **fields)
{
	pn_predictor_flush_models(pr, pred, which);
	for (size_t r = 0; r < b->n; r++) {
		if (!isfinite(pred[r]))
			pn_die_at(PN_EXIT_DATA, path, b->line[r], "the "
				  "prediction is not finite");
		double v[3] = {pred[r], NAN, NAN};
		if (ins->n > 1) {
			/* the row's device: a model's --cv record holds on
			 * the devices it was fitted on */
			char dev[256] = "";
			if (ins->devc >= 0) {
				size_t at = r * (size_t)b->nc + (size_t)ins->devc;
				size_t dl = b->flen[at] < sizeof dev - 1 ?
					    b->flen[at] : sizeof dev - 1;
				memcpy(dev, b->text + b->off[at], dl);
				dev[dl] = '\0';
			}
			double k = pn_interval_factor(which[r], *dev ? dev :
						      NULL, 0, ins->level);
			if (isnan(k))
				pn_die_at(PN_EXIT_DATA, path, b->line[r],
					  PN_INTERVAL_NO_RECORD,
					  which[r]->layer, *dev ? dev :
					  "a device it never saw");
			v[1] = pred[r] / k;
			v[2] = pred[r] * k;
		}
		/* a bound may be 0 or inf: a model whose record is wide */
		for (int k = 0; k < ins->n; k++) {
			char num[40];
			pn_fmt_num(num, v[k]);
			pn_tsv_out_str(o, k, num);
		}
		put_domain(o, ins->n, pn_predictor_domain(pr, r), which[r],
			   path, b->line[r]);
		for (int c = 0; c < b->nc; c++)
			fields[c] = b->text + b->off[r * (size_t)b->nc + (size_t)c];
		pn_tsv_out_fields(o, out, fields, b->flen + r * (size_t)b->nc);
		if (b->use[r])
			tally_add(t, t->by ? b->text + b->key[r] : NULL,
				  b->meas[r], pred[r], ins->n > 1 ? v + 1
				  : NULL, path, b->line[r]);
	}
	b->n = 0;
	b->len = 0;
}

/* The column names of the bounds of predicted: COL_lo and COL_hi. */
static char *bound_name(const char *predicted, const char *end)
{
	size_t n = strlen(predicted) + strlen(end) + 1;
	char *s = pn_xmalloc(n);
	snprintf(s, n, "%s%s", predicted, end);
	return s;
}

static int run_model(const char *model, const char *path, const char *output,
		     const char *metrics, int format, int format_given,
		     const char *measured, int measured_given,
		     const char *predicted, tally *t, int skip_na,
		     double level)
{
	pn_modelset *ms = pn_modelset_load(model);
	pn_modelset_warn_unranged(ms, model);
	pn_tsv *in = pn_tsv_open(path);
	int nc = pn_tsv_ncols(in);
	const char **names = pn_xmalloc((size_t)nc * sizeof *names);
	for (int c = 0; c < nc; c++)
		names[c] = pn_tsv_colname(in, c);
	pn_predictor *pr = pn_predictor_new(ms, nc, names);
	int lcol = pn_tsv_find(in, "layer");
	int dcol = by_fold ? pn_tsv_col(in, "device") : -1;
	int cm = measured_given || metrics ? pn_tsv_col(in, measured)
					   : pn_tsv_find(in, measured);
	if (t->by)
		t->bycol = find_cols(in, t->by, "--by", &t->nby);

	/* the inserted columns: replaced where they stand, else appended in
	 * the order prediction, lower, upper bound, domain */
	inserts ins = {.n = level > 0 ? 3 : 1, .level = level,
		       .devc = level > 0 ? pn_tsv_find(in, "device") : -1};
	char *iname[4] = {pn_xstrdup(predicted), NULL, NULL, NULL};
	if (ins.n > 1) {
		iname[1] = bound_name(predicted, "_lo");
		iname[2] = bound_name(predicted, "_hi");
	}
	iname[ins.n] = pn_xstrdup("domain");
	pn_tsv_out *o = pn_tsv_out_new(in, (const char *const *)iname,
				       ins.n + 1);

	FILE *out = pn_output_open(output);
	FILE *mout = cm >= 0 && metrics ? pn_output_open(metrics) : NULL;
	pn_tsv_out_header(o, out);

	batch b;
	batch_init(&b, nc);
	double *pred = pn_xmalloc(BATCH * sizeof *pred);
	const pn_model **which = pn_xmalloc(BATCH * sizeof *which);
	const char **fields = pn_xmalloc((size_t)nc * sizeof *fields);
	size_t *lens = pn_xmalloc((size_t)nc * sizeof *lens);
	char *key = NULL;
	size_t keycap = 0;
	while (pn_tsv_read(in)) {
		t->rows++;
		for (int c = 0; c < nc; c++) {
			fields[c] = pn_tsv_str(in, c);
			lens[c] = pn_tsv_len(in, c);
		}
		int rc = pn_predictor_push_fold(pr, lcol >= 0 ? fields[lcol]
						: NULL, dcol >= 0 ? fields[dcol]
						: NULL, fields, lens);
		if (rc < 0)
			pn_tsv_die_row(in, "%s", pn_predictor_error(pr));
		size_t r = b.n++;
		b.line[r] = pn_tsv_lineno(in);
		b.use[r] = 0;
		if (cm >= 0) {
			if (pn_tsv_na(in, cm)) {
				if (!skip_na)
					pn_tsv_die(in, cm, "value is %s",
						   lens[cm] ? "NA" : "empty");
				t->skipped++;
			} else {
				b.meas[r] = pn_tsv_num(in, cm);
				b.use[r] = 1;
			}
		}
		for (int c = 0; c < nc; c++) {
			b.off[r * (size_t)nc + (size_t)c] = b.len;
			b.flen[r * (size_t)nc + (size_t)c] = lens[c];
			batch_put(&b, fields[c], lens[c]);
		}
		if (t->by) {
			const char *k = row_key(in, t->bycol, t->nby, &key,
						&keycap);
			b.key[r] = b.len;
			batch_put(&b, k, strlen(k) + 1);
		}
		if (b.n == BATCH)
			batch_flush(&b, pr, pred, which, &ins, o, out, t,
				    pn_tsv_path(in), fields);
	}
	batch_flush(&b, pr, pred, which, &ins, o, out, t, pn_tsv_path(in),
		    fields);
	if (t->rows == 0)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), 0, "no data rows");
	if (cm >= 0 && t->skipped == t->rows)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), 0,
			  "no rows left after skipping %ld with a missing "
			  "value", t->skipped);
	pn_output_close(out);
	if (cm >= 0) {
		if (mout) {
			tally_write(t, mout, format, in);
			pn_output_close(mout);
		} else {
			fflush(stdout);
			tally_write(t, stderr, format_given ? format : PN_SHEET_MD,
				    in);
		}
	}
	if (out != stdout)
		pn_output_close(stdout);
	say_skipped(t);
	free(key);
	free(fields);
	free(lens);
	free(pred);
	free(which);
	for (int k = 0; k < 4; k++)
		free(iname[k]);
	pn_tsv_out_free(o);
	batch_free(&b);
	free(names);
	pn_predictor_free(pr);
	pn_modelset_free(ms);
	pn_tsv_close(in);
	return PN_EXIT_OK;
}

/* ---- --ape: the rows with a per-row APE ---------------------------------- */

#define MAXPRED 64

/* The APE of predicted column pc against measured column cm in the current
 * row, as text into buf (32 bytes): %.6g, or NA when either is missing. */
static const char *row_ape(const pn_tsv *in, int cm, int pc, char *buf)
{
	if (pn_tsv_na(in, cm) || pn_tsv_na(in, pc))
		return "NA";
	double m = pn_tsv_num(in, cm), p = pn_tsv_num(in, pc);
	if (m == 0)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), pn_tsv_lineno(in),
			  "measured value is 0: APE undefined");
	snprintf(buf, 32, "%.6g", pn_ape(m, p));
	return buf;
}

/* The APE column of predicted column col: col with its unit suffix "_ms"
 * replaced by "_ape" (an APE is a percentage, not a time), else col_ape. */
static char *ape_name(const char *col)
{
	size_t n = strlen(col);
	char *s = pn_xmalloc(n + 5);
	if (n > 3 && strcmp(col + n - 3, "_ms") == 0)
		n -= 3;
	snprintf(s, n + 5, "%.*s_ape", (int)n, col);
	return s;
}

/* Write the header or the current row of in: every column but the old
 * APE columns (ape[c] == -2), and after each predicted column (ape[c] = k
 * >= 0) its APE, text[k] (in the header its name).  Nothing is written
 * before every APE of the row is known. */
static void ape_line(FILE *out, const pn_tsv *in, const int *ape,
		     const int *pc, int npred, int cm, char *const *names,
		     int header)
{
	int nc = pn_tsv_ncols(in), first = 1;
	char buf[MAXPRED][32];
	const char *text[MAXPRED];
	for (int k = 0; k < npred; k++)
		text[k] = header ? names[k] : row_ape(in, cm, pc[k], buf[k]);
	for (int c = 0; c < nc; c++) {
		if (ape[c] == -2)
			continue;
		if (!first)
			putc('\t', out);
		first = 0;
		if (header)
			fputs(pn_tsv_colname(in, c), out);
		else
			fwrite(pn_tsv_str(in, c), 1, pn_tsv_len(in, c), out);
		if (ape[c] >= 0) {
			putc('\t', out);
			fputs(text[ape[c]], out);
		}
	}
	putc('\n', out);
}

/* The options that --ape has no use for. */
static void ape_excludes(const char *model, const char *by, int total,
			 double level, int format_given, int skip_na)
{
	const char *o = model ? "--model" : by ? "--by" : total ? "--total" :
			level > 0 ? "--interval" : format_given ? "--format" :
			skip_na ? "--skip-na" : NULL;
	const char *why = model ? "pipe the rows of pn-eval --model into "
				  "pn-eval --ape" : skip_na ? "a row with a "
				  "missing value has APE NA" : "--ape writes "
				  "rows, not metrics";
	if (o)
		pn_usage_error("--ape and %s exclude each other (%s)", o, why);
}

static int run_ape(const char *path, const char *output, const char *measured,
		   const char *const *preds, int npred)
{
	pn_tsv *in = pn_tsv_open(path);
	int nc = pn_tsv_ncols(in), cm = pn_tsv_col(in, measured);
	int *ape = pn_xmalloc((size_t)nc * sizeof *ape), pc[MAXPRED];
	char *names[MAXPRED];
	for (int c = 0; c < nc; c++)
		ape[c] = -1;
	for (int k = 0; k < npred; k++) {
		pc[k] = pn_tsv_col(in, preds[k]);
		if (ape[pc[k]] >= 0)
			pn_usage_error("column '%s' named twice in --predicted",
				       preds[k]);
		ape[pc[k]] = k;
		names[k] = ape_name(preds[k]);
	}
	/* an APE column already there is replaced: written after its
	 * column, as if new */
	for (int k = 0; k < npred; k++) {
		int old = pn_tsv_find(in, names[k]);
		if (old >= 0 && ape[old] >= 0)
			pn_usage_error("--predicted '%s' is the APE column of "
				       "'%s'", names[k], preds[k]);
		if (old >= 0)
			ape[old] = -2;
	}
	FILE *out = pn_output_open(output);
	ape_line(out, in, ape, pc, npred, cm, names, 1);
	long rows = 0;
	while (pn_tsv_read(in)) {
		ape_line(out, in, ape, pc, npred, cm, names, 0);
		rows++;
	}
	if (rows == 0)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), 0, "no data rows");
	pn_output_close(out);
	if (out != stdout)
		pn_output_close(stdout);
	for (int k = 0; k < npred; k++)
		free(names[k]);
	free(ape);
	pn_tsv_close(in);
	return PN_EXIT_OK;
}

/* Without --model or --ape: the metrics of the predicted column of path,
 * tallied in t, written to output. */
static int run_metrics(const char *path, const char *output,
		       const char *measured, const char *predicted, tally *t,
		       int skip_na, double level, int format)
{
	pn_tsv *in = pn_tsv_open(path);
	int cm = pn_tsv_col(in, measured);
	predictor pred = {pn_tsv_col(in, predicted), -1, -1};
	if (level > 0) {
		char *lo = bound_name(predicted, "_lo");
		char *hi = bound_name(predicted, "_hi");
		pred.lo = pn_tsv_col(in, lo);
		pred.hi = pn_tsv_col(in, hi);
		free(lo);
		free(hi);
	}
	if (t->by)
		t->bycol = find_cols(in, t->by, "--by", &t->nby);

	char *key = NULL;
	size_t keycap = 0;
	while (pn_tsv_read(in)) {
		t->rows++;
		double m, p, iv[2];
		if (!row_values(in, cm, &pred, skip_na, &m, &p, iv)) {
			t->skipped++;
			continue;
		}
		tally_add(t, t->by ? row_key(in, t->bycol, t->nby, &key, &keycap)
				 : NULL, m, p, level > 0 ? iv : NULL,
			  pn_tsv_path(in), pn_tsv_lineno(in));
	}
	if (t->rows == 0)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), 0, "no data rows");
	if (t->skipped == t->rows)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), 0,
			  "no rows left after skipping %ld with a missing "
			  "value", t->skipped);

	FILE *out = pn_output_open(output);
	tally_write(t, out, format, in);
	pn_output_close(out);
	if (out != stdout)
		pn_output_close(stdout);
	say_skipped(t);

	free(key);
	free(t->bycol);
	groups_free(&t->gs);
	pn_metrics_free(&t->all);
	pn_tsv_close(in);
	return PN_EXIT_OK;
}

int main(int argc, char **argv)
{
	pn_init("pn-eval");
	pn_stdout_init();

	const char *by = NULL, *measured = "time_ms", *predicted = "pred_ms";
	const char *output = NULL, *model = NULL, *metrics = NULL;
	int total = 0, skip_na = 0, format = PN_SHEET_TSV, format_given = 0;
	int measured_given = 0, with_ape = 0, npred = 0, c;
	const char *preds[MAXPRED];
	double level = 0;       /* --interval: its probability */
	argv[0] = (char *)pn_prog;   /* getopt's messages start "pn-eval: " */
	while ((c = getopt_long(argc, argv, "b:m:o:I::h", longopts, NULL)) != -1) {
		switch (c) {
		case 'I':
			level = optarg ? pn_interval_level("--interval", optarg)
				       : 0.9;
			break;
		case 'b':
			by = optarg;
			break;
		case OPT_TOTAL:
			total = 1;
			break;
		case OPT_MEASURED:
			measured = optarg;
			measured_given = 1;
			break;
		case OPT_PREDICTED:
			if (npred == MAXPRED)
				pn_usage_error("too many --predicted (at most "
					       "%d)", MAXPRED);
			predicted = preds[npred++] = optarg;
			break;
		case OPT_APE:
			with_ape = 1;
			break;
		case OPT_LOGO:
			by_fold = 1;
			break;
		case OPT_STRICT:
			strict = 1;
			break;
		case OPT_SKIP_NA:
			skip_na = 1;
			break;
		case OPT_FORMAT:
			format = pn_opt_choice("--format", optarg,
					       pn_sheet_names);
			format_given = 1;
			break;
		case 'm':
			model = optarg;
			break;
		case OPT_METRICS:
			metrics = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'h':
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
	if (by && !*by)
		pn_usage_error("--by needs at least one column");
	if (npred == 0)
		preds[npred++] = predicted;
	if (npred > 1 && !with_ape)
		pn_usage_error("--predicted given twice (several need --ape)");
	for (int k = 0; k < npred; k++) {
		if (strcmp(measured, preds[k]) == 0)
			pn_usage_error("--measured and --predicted name the "
				       "same column '%s'", measured);
		if (!*preds[k] || strchr(preds[k], '\t') ||
		    strchr(preds[k], '\n'))
			pn_usage_error("invalid --predicted '%s'", preds[k]);
	}
	if (metrics && !model)
		pn_usage_error("--metrics needs --model");
	if (by_fold && !model)
		pn_usage_error("--logo needs --model");
	if (strict && !model)
		pn_usage_error("--strict needs --model");
	if (by_fold && level > 0)
		pn_usage_error("--logo and --interval exclude each other (a "
			       "fold model has no record of its own)");
	if (with_ape)
		ape_excludes(model, by, total, level, format_given, skip_na);
	const char *path = optind < argc ? argv[optind] : NULL;
	if (model && (!path || strcmp(path, "-") == 0) &&
	    strcmp(model, "-") == 0)
		pn_usage_error("the model and the rows cannot both come from "
			       "standard input");

	if (with_ape)
		return run_ape(path, output, measured, preds, npred);
	with_cover = level > 0;
	tally t = {0};
	t.by = by;
	t.want_all = !by || total;
	pn_metrics_init(&t.all);
	if (model) {
		int rc = run_model(model, path, output, metrics, format,
				   format_given, measured, measured_given,
				   predicted, &t, skip_na, level);
		free(t.bycol);
		groups_free(&t.gs);
		pn_metrics_free(&t.all);
		return rc;
	}

	return run_metrics(path, output, measured, predicted, &t, skip_na,
			   level, format);
}
