/* pn-fit - fit a latency model per layer type from featurized rows */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "featurize.h"
#include "fit.h"
#include "modelset.h"
#include "opt.h"
#include "table.h"
#include "tsv.h"

static const char usage_head[] =
"Usage: pn-fit [OPTION]... [FILE]\n"
"Fit a model that predicts a column (default time_ms) of the featurized rows\n"
"of FILE (default: standard input), one model per layer type, and write the\n"
"model file.\n"
"\n"
"  -f, --family NAME     lr, rf, gbdt, xgb or mlp (default xgb)\n"
"      --auto            fit every family, keep the one with the lowest\n"
"                        validation RMSE per layer type (needs --val)\n"
"  -F, --features SET    a named set (";
static const char usage_tail[] =
")\n"
"                        or a comma list of columns, or a set and more\n"
"                        columns, SET+COL[,COL]... (default cocmct)\n"
"  -t, --target COL      the column to predict (default time_ms)\n"
"  -l, --log-target      fit ln(target); predictions are exponentiated\n"
"                        (the default)\n"
"      --no-log-target   fit the target itself\n"
"  -r, --relative[=COL]  fit ln(target / COL), COL a column of the row\n"
"                        (default roofline_ms): the model learns how far\n"
"                        from its roofline an op runs, and predictions are\n"
"                        COL times exp(model)\n"
"      --no-base-floor   with --relative, record no base-floor in the model:\n"
"                        a row whose COL is below every training row's is\n"
"                        then predicted by its own COL, not the smallest\n"
"                        (for rows cut above the launch time on purpose)\n"
"  -L, --log-features    take every non-negative numeric feature as ln(x)\n"
"  -v, --val FILE        validation rows: early stopping (gbdt, xgb, mlp) and\n"
"                        the --auto comparison\n"
"      --logo            leave one device out: refit the chosen family once\n"
"                        without each device of the rows (at least 3), and\n"
"                        record in the model how it missed that device: the\n"
"                        error to expect on a GPU never measured, which\n"
"                        pn-eval and pn-sum --interval turn into intervals\n"
"                        (not with --no-log-target)\n"
"      --keep-folds      with --logo, also write each refitted model into\n"
"                        the model file after its layer's model, marked\n"
"                        'fold DEVICE' (pn-eval --logo predicts with them)\n"
"      --cv K            K-fold cross-validation (K 2 to 100): refit the\n"
"                        chosen family K times, each without a K-th of the\n"
"                        rows, and record in the model how it missed the\n"
"                        rows it did not see: the error to expect on the\n"
"                        devices of the rows, which pn-eval and pn-sum\n"
"                        --interval turn into intervals there (not with\n"
"                        --no-log-target)\n"
"      --skip-failed     skip rows whose status column is not ok (rows of\n"
"                        pn-time that ran out of memory or failed), and\n"
"                        count them on standard error\n"
"  -p, --param NAME=VALUE  a family hyper-parameter (repeatable)\n"
"  -s, --seed N          seed of every random choice (default 1)\n"
"      --by-layer        one model per value of the layer column (default)\n"
"      --no-by-layer     one model for all rows (layer '*')\n"
"  -o, --output FILE     write the model to FILE instead of standard output\n"
"      --timings         say on standard error where the wall time went:\n"
"                        reading, each layer's preparing and fitting,\n"
"                        writing\n"
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n"
"\n";
static const char usage_end[] =
"In a list, a column whose values are not numbers is categorical: one 0/1\n"
"feature per value seen; a column that mixes numbers and other values is an\n"
"error.\n"
"Families and their parameters: see pn-fit(1).\n";

enum { OPT_AUTO = 256, OPT_BY_LAYER, OPT_NO_BY_LAYER, OPT_LOGO, OPT_FOLDS, OPT_CV,
       OPT_SKIP, OPT_NO_LOG, OPT_NO_FLOOR, OPT_TIMINGS, OPT_VERSION };

static const struct option longopts[] = {
	{"family", required_argument, NULL, 'f'},
	{"auto", no_argument, NULL, OPT_AUTO},
	{"features", required_argument, NULL, 'F'},
	{"target", required_argument, NULL, 't'},
	{"log-target", no_argument, NULL, 'l'},
	{"no-log-target", no_argument, NULL, OPT_NO_LOG},
	{"relative", optional_argument, NULL, 'r'},
	{"no-base-floor", no_argument, NULL, OPT_NO_FLOOR},
	{"log-features", no_argument, NULL, 'L'},
	{"val", required_argument, NULL, 'v'},
	{"logo", no_argument, NULL, OPT_LOGO},
	{"keep-folds", no_argument, NULL, OPT_FOLDS},
	{"cv", required_argument, NULL, OPT_CV},
	{"skip-failed", no_argument, NULL, OPT_SKIP},
	{"param", required_argument, NULL, 'p'},
	{"seed", required_argument, NULL, 's'},
	{"by-layer", no_argument, NULL, OPT_BY_LAYER},
	{"no-by-layer", no_argument, NULL, OPT_NO_BY_LAYER},
	{"output", required_argument, NULL, 'o'},
	{"timings", no_argument, NULL, OPT_TIMINGS},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0}
};

static void usage(void)
{
	fputs(usage_head, stdout);
	for (const pn_feature_set *s = pn_feature_sets; s->name; s++)
		printf("%s%s", s > pn_feature_sets ? ", " : "", s->name);
	fputs(usage_tail, stdout);
	pn_feature_sets_help(stdout);
	fputs(usage_end, stdout);
	pn_output_close(stdout);
}

/* ---- progress on a terminal ----------------------------------------------- */

static int show_progress;
static const char *prog_layer, *prog_family;
static int prog_last = -1;

static void progress(double done, double total)
{
	int pct = total > 0 ? (int)(100 * done / total) : 100;
	if (pct > 100)
		pct = 100;
	if (pct == prog_last)
		return;
	prog_last = pct;
	fprintf(stderr, "\r%s: %s %s %3d%%\033[K", pn_prog, prog_layer,
		prog_family, pct);
	fflush(stderr);
}

static void progress_done(void)
{
	if (show_progress) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

/* ---- options -------------------------------------------------------------- */

static void add_param(pn_params *par, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		pn_usage_error("invalid --param '%s': want NAME=VALUE", arg);
	if (strpbrk(arg, " \t\n"))
		pn_usage_error("invalid --param '%s': white space", arg);
	size_t n = (size_t)(eq - arg);
	for (int i = 0; i < par->n; i++)
		if (strlen(par->name[i]) == n &&
		    memcmp(par->name[i], arg, n) == 0)
			pn_usage_error("--param '%.*s' given twice", (int)n,
				       arg);
	if (par->n == 64)
		pn_usage_error("too many --param (at most 64)");
	par->name[par->n] = pn_xmalloc(n + 1);
	memcpy(par->name[par->n], arg, n);
	par->name[par->n][n] = '\0';
	par->value[par->n] = pn_xstrdup(eq + 1);
	par->used[par->n++] = 0;
}

/* ---- the run ----------------------------------------------------------------- */

/* Everything pn-fit holds, kept in main's frame so that it stays reachable
 * when a family stops the program on a bad --param (LeakSanitizer). */
typedef struct {
	pn_fit_spec s;
	int by_layer;
	pn_params par;
	pn_table *t, *val;
	pn_strset layers;
	pn_model **models;
	pn_fit *fit;
	pn_fault fault;
} run;

static void run_free(run *r)
{
	pn_fit_free(r->fit);
	for (int i = 0; r->models && i < r->layers.n; i++)
		pn_model_free(r->models[i]);
	free(r->models);
	pn_strset_free(&r->layers);
	for (int i = 0; i < r->par.n; i++) {
		free(r->par.name[i]);
		free(r->par.value[i]);
	}
	pn_table_free(r->t);
	pn_table_free(r->val);
}

/* Release everything and report r's fault (its path copied first). */
static _Noreturn void fail(run *r)
{
	char path[4096];
	pn_fault f = r->fault;
	progress_done();
	if (f.path) {
		snprintf(path, sizeof path, "%s", f.path);
		f.path = path;
	}
	run_free(r);
	pn_fault_die(&f);
}

/* Check the options that go together; set s->set. */
static void check_options(pn_fit_spec *s, const char *valpath)
{
	const char *features = s->features, *tgt = s->target, *base = s->base;
	if (s->autofit && !valpath)
		pn_usage_error("--auto needs --val FILE");
	if (!*features)
		pn_usage_error("--features needs a set or columns");
	if (!*tgt || strpbrk(tgt, " \t"))
		pn_usage_error("invalid --target '%s'", tgt);
	if (base && (!*base || strpbrk(base, " \t")))
		pn_usage_error("invalid --relative '%s'", base);
	if (base && s->log == 1)
		pn_usage_error("--relative and --log-target exclude each other "
			       "(--relative fits a log already)");
	if (base && s->log == 0)
		pn_usage_error("--relative and --no-log-target exclude each "
			       "other (--relative fits a log)");
	if (s->logo && s->log == 0)
		pn_usage_error("--logo and --no-log-target exclude each other "
			       "(--logo records errors on a log scale)");
	if (s->cv && s->log == 0)
		pn_usage_error("--cv and --no-log-target exclude each other "
			       "(--cv records errors on a log scale)");
	if (s->log < 0)         /* the default: ln(target), or --relative's */
		s->log = !base;
	if (s->no_base_floor && !base)
		pn_usage_error("--no-base-floor needs --relative");
	if (s->keep_folds && !s->logo)
		pn_usage_error("--keep-folds needs --logo");
	if (base && strcmp(base, tgt) == 0)
		pn_usage_error("--relative '%s' is the target itself", base);
	/* SET+COL,...: a set and more columns */
	const char *plus = strchr(features, '+'), *list = features;
	if (plus) {
		char name[64];
		size_t k = (size_t)(plus - features);
		if (k >= sizeof name || !*(list = plus + 1))
			pn_usage_error("invalid --features '%s'", features);
		memcpy(name, features, k);
		name[k] = '\0';
		if (!(s->set = pn_feature_set_find(name)))
			pn_usage_error("--features '%s': no feature set '%s'",
				       features, name);
		s->extra = list;
	} else {
		s->set = pn_feature_set_find(features);
	}
	if ((!s->set || s->extra) && (strpbrk(list, " \t+") ||
				      strstr(list, ",,") || list[0] == ',' ||
				      list[strlen(list) - 1] == ','))
		pn_usage_error("invalid --features '%s'", features);
}

/* ---- --timings ---------------------------------------------------------------- */

static void timing(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void timing(const char *fmt, ...)
{
	va_list ap;
	progress_done();
	fprintf(stderr, "%s: timings: ", pn_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void group_timing(const pn_fit *fit, const char *layer)
{
	pn_fit_times t;
	pn_fit_group_times(fit, &t);
	timing("layer %s, %zu rows, %zu features: prepare %.3f s, fit %.3f s, "
	       "other %.3f s", layer, t.rows, t.features, t.prepare, t.fit,
	       t.other);
}

/* Set the progress line's subject: the layer and family being fitted. */
static void progress_start(const char *layer, const char *family)
{
	prog_layer = layer;
	prog_family = family;
	prog_last = -1;
}

int main(int argc, char **argv)
{
	pn_init("pn-fit");
	pn_stdout_init();
	run r = {.s = {.features = "cocmct", .target = "time_ms", .seed = 1,
		       .log = -1},
		 .by_layer = 1};
	pn_fit_spec *s = &r.s;
	const char *family = "xgb", *valpath = NULL, *output = NULL;
	int skip = 0, timings = 0, c;
	argv[0] = (char *)pn_prog;   /* getopt's messages start "pn-fit: " */
	while ((c = getopt_long(argc, argv, "f:F:t:lr::Lv:p:s:o:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'f': family = optarg; break;
		case OPT_AUTO: s->autofit = 1; break;
		case OPT_LOGO: s->logo = 1; break;
		case OPT_FOLDS: s->keep_folds = 1; break;
		case OPT_CV:
			s->cv = (int)pn_opt_whole("--cv", optarg, 2, 100);
			break;
		case OPT_SKIP: skip = 1; break;
		case 'F': s->features = optarg; break;
		case 't': s->target = optarg; break;
		case 'l': s->log = 1; break;
		case OPT_NO_LOG: s->log = 0; break;
		case 'r': s->base = optarg ? optarg : "roofline_ms"; break;
		case OPT_NO_FLOOR: s->no_base_floor = 1; break;
		case 'L': s->logfeat = 1; break;
		case 'v': valpath = optarg; break;
		case 'p': add_param(&r.par, optarg); break;
		case 's': s->seed = pn_opt_seed("--seed", optarg); break;
		case OPT_BY_LAYER: r.by_layer = 1; break;
		case OPT_NO_BY_LAYER: r.by_layer = 0; break;
		case 'o': output = optarg; break;
		case OPT_TIMINGS: timings = 1; break;
		case 'h': usage(); return PN_EXIT_OK;
		case OPT_VERSION: pn_version();
		default: pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	const char *path = optind < argc ? argv[optind] : "-";
	if (valpath && strcmp(valpath, "-") == 0 && strcmp(path, "-") == 0)
		pn_usage_error("the training and validation rows cannot both "
			       "come from standard input");
	if (!(s->family = pn_family_find(family)))
		pn_usage_error("unknown family '%s': want lr, rf, gbdt, xgb or "
			       "mlp", family);
	check_options(s, valpath);
	s->par = &r.par;

	double t0 = pn_now_s();
	r.t = pn_table_read(path);
	r.val = valpath ? pn_table_read(valpath) : NULL;
	if (timings)
		timing("read %.3f s, %zu rows%s", pn_now_s() - t0,
		       r.t->nrows, r.val ? " and validation" : "");
	if ((skip && (pn_fit_skip_failed(r.t, "", &r.fault) < 0 ||
		      (r.val && pn_fit_skip_failed(r.val, "validation ",
						   &r.fault) < 0))) ||
	    pn_table_col(r.t, s->target, &r.fault) < 0 ||
	    (s->base && pn_table_col(r.t, s->base, &r.fault) < 0) ||
	    pn_fit_layers(r.t, r.val, r.by_layer, &r.layers, &r.fault) < 0)
		fail(&r);
	if ((show_progress = isatty(2))) {
		s->start = progress_start;
		s->progress = progress;
	}
	r.fit = pn_fit_new(s, r.t, r.val);
	r.models = pn_xcalloc((size_t)r.layers.n, sizeof *r.models);
	for (int i = 0; i < r.layers.n; i++)
		if (!(r.models[i] = pn_fit_group(r.fit, r.layers.s[i],
						 &r.fault)))
			fail(&r);
		else if (timings)
			group_timing(r.fit, r.layers.s[i]);
	progress_done();
	double tw = pn_now_s();

	FILE *f = pn_output_open(output);
	for (int i = 0; i < r.layers.n; i++)
		pn_model_write(f, r.models[i]);
	pn_output_close(f);
	if (f != stdout)
		pn_output_close(stdout);
	if (timings) {
		double t1 = pn_now_s();
		timing("write %.3f s", t1 - tw);
		timing("total %.3f s", t1 - t0);
	}
	run_free(&r);
	return PN_EXIT_OK;
}
