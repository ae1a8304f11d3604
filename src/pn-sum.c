/* pn-sum - iteration and epoch time of a network on GPUs */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "opt.h"
#include "featurize.h"
#include "gpuspec.h"
#include "interval.h"
#include "layer.h"
#include "modelset.h"
#include "network.h"
#include "roofline.h"
#include "sheet.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-sum [OPTION]... [NETWORK]\n"
"Predict the iteration and epoch time of a network (default: standard input)\n"
"on GPUs: every layer row predicted by its model or by the roofline, summed\n"
"over layers and batches; rank the GPUs by epoch time and cost.\n"
"\n"
"  -m, --models FILE       fitted models (pn-fit), one per layer type\n"
"      --fallback roofline  predict layer types without a model (every type\n"
"                          when no -m) by NeuSight's roofline; such rows are\n"
"                          flagged source=roofline\n"
"  -d, --device NAME[,NAME]...  predict on these GPUs\n"
"      --devices all       predict on every GPU of the spec table\n"
"  -b, --batch N           samples per iteration (default 1; a traced network:\n"
"                          its traced batch)\n"
"  -n, --dataset-size N    samples per epoch (default: one batch); the last\n"
"                          batch holds what is left\n"
"  -p, --per-layer         one row per layer and GPU instead of the summary\n"
"  -I, --interval[=LEVEL]  add the LEVEL% interval (default 90) of every\n"
"                          time, for GPUs the models never saw (models\n"
"                          fitted with pn-fit --logo; roofline rows add no\n"
"                          width)\n"
"      --format FMT        tsv (the default) or md: a markdown table with\n"
"                          numbers to 4 significant digits\n"
"      --plot FILE         draw epoch time and cost per GPU (PNG, gnuplot)\n"
"  -g, --gpuspecs FILE     read GPU specs from FILE (default: gpuspecs/gpus.tsv)\n"
"  -o, --output FILE       write to FILE instead of standard output\n"
"  -h, --help              display this help and exit\n"
"      --version           output version information and exit\n"
"\n"
"Summary columns: rank device source fwd_ms bwd_ms acc_ms train_ms\n"
"iteration_ms iterations epoch_s price_usd_h cost_usd cost_rank, one row per\n"
"GPU by rising epoch time; with --interval also iteration_lo_ms\n"
"iteration_hi_ms epoch_lo_s epoch_hi_s.  Per-layer columns: the network's,\n"
"then device source time_ms total_ms [time_lo_ms time_hi_ms].  The network\n"
"format: see pn-sum(1).\n";


/* ---- predicting ------------------------------------------------------- */

/* Columns the model path sets on every row: the configuration as parsed
 * (defaults filled in, as pn-import writes them: layer.h's pn_layer_attrs),
 * the device, the features. */
enum { NATTR = 6, X_DEVICE = NATTR, X_FEAT, X_N = X_FEAT + PN_F_N };

typedef struct {
	pn_predictor *p;
	int ncols;
	const char **name;      /* the predictor's columns */
	const char **field;     /* one row's fields */
	int xcol[X_N];          /* where the extra columns go */
	char buf[X_N + 3][32];
	long *pending;          /* row of each queued prediction */
	double *out;
	const pn_model **which; /* the model of each queued prediction */
	double level;           /* --interval: its probability, else 0 */
} modelpath;

/* The interval factors of each predicted time (interval.h): of the row
 * alone, and of the row as part of a sum; 1 for roofline rows.  NULL
 * without --interval. */
typedef struct {
	double *one, *sum;
} factors;

/* Rows queued before a flush: one family->predict call per model and
 * flush, so queue many (xgboost's threads cost ~1 ms per call). */
enum { QUEUE = 1 << 16 };

static void model_init(modelpath *mp, const pn_modelset *ms,
		       const pn_network *net)
{
	const char *extra[X_N];
	for (int k = 0; k < X_N; k++)
		extra[k] = k < NATTR ? pn_layer_attrs[k] : k == X_DEVICE ?
			   "device" : pn_feature_names[k - X_FEAT];
	mp->name = pn_xmalloc((size_t)(net->ncols + X_N) * sizeof *mp->name);
	mp->field = pn_xmalloc((size_t)(net->ncols + X_N) * sizeof *mp->field);
	mp->ncols = pn_network_columns(net, extra, X_N, mp->name, mp->xcol);
	mp->p = pn_predictor_new(ms, mp->ncols, mp->name);
	mp->pending = pn_xmalloc(QUEUE * sizeof *mp->pending);
	mp->out = pn_xmalloc(QUEUE * sizeof *mp->out);
	mp->which = pn_xmalloc(QUEUE * sizeof *mp->which);
}

static void model_free(modelpath *mp)
{
	if (!mp->p)
		return;
	pn_predictor_free(mp->p);
	free(mp->name);
	free(mp->field);
	free(mp->pending);
	free(mp->out);
	free(mp->which);
}

static void model_flush(modelpath *mp, double *t, const factors *k)
{
	size_t n = pn_predictor_pending(mp->p);
	if (n == 0)
		return;
	pn_predictor_flush_models(mp->p, mp->out, mp->which);
	for (size_t j = 0; j < n; j++) {
		t[mp->pending[j]] = mp->out[j];
		if (k->one) {
			k->one[mp->pending[j]] = pn_interval_factor(
				mp->which[j], 0, mp->level);
			k->sum[mp->pending[j]] = pn_interval_factor(
				mp->which[j], 1, mp->level);
		}
	}
}

/* Queue row i at `batch` samples, its time to go to t[at]. */
static void model_push(modelpath *mp, const pn_network *net, long i,
		       double batch, long at, const pn_gpu *g, double *t,
		       const factors *kf)
{
	const pn_netrow *r = &net->r[i];
	pn_layer l;
	double traffic, f[PN_F_N];
	pn_network_scaled(net, r, batch, &l, &traffic);
	for (int c = 0; c < net->ncols; c++)
		mp->field[c] = r->field[c];
	pn_feature_row(&l, traffic, g, f);
	for (int k = 0; k < NATTR; k++)
		mp->field[mp->xcol[k]] = pn_layer_field(&l, r->prec,
			pn_layer_attrs[k], mp->buf[k]);
	mp->field[mp->xcol[X_DEVICE]] = g->name;
	for (int k = 0; k < PN_F_N; k++) {
		pn_fmt_num(mp->buf[X_FEAT + k], f[k]);
		mp->field[mp->xcol[X_FEAT + k]] = mp->buf[X_FEAT + k];
	}
	/* the batch-scaled columns, as the model sees them */
	const int scaled[3] = {net->cbatch, net->celements, net->ctraffic};
	for (int j = 0; j < 3; j++)
		if (scaled[j] >= 0)
			mp->field[scaled[j]] = pn_network_field(net, i, batch,
				scaled[j], mp->buf[X_N + j]);
	if (pn_predictor_pending(mp->p) == QUEUE)
		model_flush(mp, t, kf);
	size_t k = pn_predictor_pending(mp->p);
	if (pn_predictor_push(mp->p, pn_layer_name(l.type), mp->field,
			      NULL) != 0)
		pn_die_at(PN_EXIT_DATA, net->path, r->line, "%s",
			  pn_predictor_error(mp->p));
	mp->pending[k] = at;
}

/* Time of every row (one instance, ms) at `batch` samples on each of the
 * ndev GPUs into t[d * rows + i], and with --interval its factors into k;
 * rows with bymodel[i] go to the models, every GPU's together, the others
 * to the roofline. */
static void predict(const pn_network *net, const unsigned char *bymodel,
		    modelpath *mp, double batch, const pn_gpu *const *dev,
		    int ndev, double *t, const factors *k)
{
	for (int d = 0; d < ndev; d++) {
		for (long i = 0; i < net->n; i++) {
			size_t j = (size_t)d * (size_t)net->n + (size_t)i;
			if (bymodel[i]) {
				model_push(mp, net, i, batch, (long)j, dev[d],
					   t, k);
				continue;
			}
			pn_layer l;
			double traffic;
			pn_network_scaled(net, &net->r[i], batch, &l, &traffic);
			t[j] = pn_roofline_ms(&l, traffic, dev[d]);
			if (k->one)
				k->one[j] = k->sum[j] = 1;
		}
	}
	if (mp->p)
		model_flush(mp, t, k);
}

static factors factors_new(size_t n, int want)
{
	factors k = {NULL, NULL};
	if (want) {
		k.one = pn_xmalloc(n * sizeof *k.one);
		k.sum = pn_xmalloc(n * sizeof *k.sum);
	}
	return k;
}

/* ---- output ------------------------------------------------------------ */

static const char *const sumcols[] = {
	"rank", "device", "source", "fwd_ms", "bwd_ms", "acc_ms", "train_ms",
	"iteration_ms", "iterations", "epoch_s", "price_usd_h", "cost_usd",
	"cost_rank", 0
};

typedef struct {
	const pn_gpu *g;
	double ph[PN_NPHASES];  /* per iteration at --batch, ms */
	double iter_ms, epoch_ms, cost;
	double iter_lo, iter_hi, epoch_lo, epoch_hi;   /* --interval, ms */
	int rank, cost_rank;
} result;

static int by_epoch(const void *a, const void *b)
{
	const result *x = a, *y = b;
	if (x->epoch_ms != y->epoch_ms)
		return x->epoch_ms < y->epoch_ms ? -1 : 1;
	return x->g < y->g ? -1 : x->g > y->g;
}

/* Draw epoch time (and, when some GPU has a price, cost per epoch) per GPU
 * into path with gnuplot, through the output path's reserved name. */
static void plot(const char *path, const char *net, const result *res,
		 int nres, double batch, double dataset, double level)
{
	const char *tmp = pn_output_reserve(path);
	FILE *gp = popen("gnuplot", "w");
	if (!gp)
		pn_die(PN_EXIT_BACKEND, "cannot run gnuplot: %s",
		       strerror(errno));
	int costs = 0;
	for (int i = 0; i < nres; i++)
		costs += !isnan(res[i].cost);
	const char *base = strrchr(net, '/') ? strrchr(net, '/') + 1 : net;
	fprintf(gp, "set terminal pngcairo size %d,%d noenhanced\n",
		nres > 20 ? 1400 : 1000, costs ? 900 : 600);
	fputs("set output '", gp);
	for (const char *c = tmp; *c; c++) {   /* '' is a quote in '...' */
		if (*c == '\'')
			putc('\'', gp);
		putc(*c, gp);
	}
	fputs("'\n", gp);
	fprintf(gp, "set style fill solid 0.8\nset boxwidth 0.8\n"
		"set grid ytics\nunset key\nset yrange [0:*]\n"
		"set xtics rotate by -60 font ',8'\n");
	if (costs)
		fprintf(gp, "set multiplot layout 2,1\n");
	fprintf(gp, "set title \"%s: epoch time per GPU (batch %g, %g "
		"samples)", base, batch, dataset);
	if (level > 0)
		fprintf(gp, "; bars: %g%% interval on unmeasured GPUs",
			100 * level);
	fprintf(gp, "\"\nset ylabel 'epoch (s)'\n");
	if (level > 0)
		fprintf(gp, "plot '-' using 0:2:3:4:(0.8):xtic(1) with boxerrorbars "
			"lc rgb '#4477aa'\n");
	else
		fprintf(gp, "plot '-' using 0:2:xtic(1) with boxes "
			"lc rgb '#4477aa'\n");
	for (int i = 0; i < nres; i++)
		fprintf(gp, "\"%s\" %.17g %.17g %.17g\n", res[i].g->name,
			res[i].epoch_ms / 1e3, res[i].epoch_lo / 1e3,
			res[i].epoch_hi / 1e3);
	fprintf(gp, "e\n");
	if (costs) {
		fprintf(gp, "set title 'cost per epoch (GPUs with a price, "
			"cheapest first)'\n"
			"set ylabel 'cost (USD)'\n");
		fprintf(gp, "plot '-' using 0:2:xtic(1) with boxes "
			"lc rgb '#cc6677'\n");
		/* cheapest first: the cost ranking */
		int *order = pn_xmalloc((size_t)nres * sizeof *order), n = 0;
		for (int i = 0; i < nres; i++)
			if (!isnan(res[i].cost))
				order[n++] = i;
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0 && res[order[j]].cost <
			     res[order[j - 1]].cost; j--) {
				int x = order[j];
				order[j] = order[j - 1];
				order[j - 1] = x;
			}
		for (int i = 0; i < n; i++)
			fprintf(gp, "\"%s\" %.17g\n", res[order[i]].g->name,
				res[order[i]].cost);
		free(order);
		fprintf(gp, "e\nunset multiplot\n");
	}
	int st = pclose(gp);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 127)
		pn_die(PN_EXIT_BACKEND, "gnuplot not found (needed by --plot)");
	if (WEXITSTATUS(st) != 0)
		pn_die(PN_EXIT_DATA, "gnuplot failed drawing %s", path);
	pn_output_commit(tmp);
}


/* ---- main -------------------------------------------------------------- */

enum { OPT_FALLBACK = 256, OPT_DEVICES, OPT_FORMAT, OPT_PLOT };

typedef struct {
	const char *models, *devlist, *specs, *out, *plotfile, *path;
	int fallback, all, per_layer, fmt;
	double level, batch, dataset;
} options;

static void parse_options(int argc, char **argv, options *o)
{
	static const struct option opts[] = {
		{"models", required_argument, 0, 'm'},
		{"fallback", required_argument, 0, OPT_FALLBACK},
		{"device", required_argument, 0, 'd'},
		{"devices", required_argument, 0, OPT_DEVICES},
		{"batch", required_argument, 0, 'b'},
		{"dataset-size", required_argument, 0, 'n'},
		{"per-layer", no_argument, 0, 'p'},
		{"interval", optional_argument, 0, 'I'},
		{"format", required_argument, 0, OPT_FORMAT},
		{"plot", required_argument, 0, OPT_PLOT},
		{"gpuspecs", required_argument, 0, 'g'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	int c;
	memset(o, 0, sizeof *o);
	o->fmt = PN_SHEET_TSV;
	argv[0] = (char *)pn_prog;
	while ((c = getopt_long(argc, argv, "m:d:b:n:pI::g:o:h", opts, NULL))
	       != -1) {
		switch (c) {
		case 'm': o->models = optarg; break;
		case OPT_FALLBACK:
			if (strcmp(optarg, "roofline") != 0)
				pn_usage_error("invalid --fallback '%s': "
					       "expected roofline", optarg);
			o->fallback = 1;
			break;
		case 'd': o->devlist = optarg; break;
		case OPT_DEVICES:
			if (strcmp(optarg, "all") != 0)
				pn_usage_error("invalid --devices '%s': "
					       "expected all (--device takes "
					       "a list)", optarg);
			o->all = 1;
			break;
		case 'b': o->batch = (double)pn_opt_whole("--batch", optarg, 1, PN_WHOLE_MAX); break;
		case 'n':
			o->dataset = (double)pn_opt_whole("--dataset-size", optarg, 1,
							   PN_WHOLE_MAX);
			break;
		case 'p': o->per_layer = 1; break;
		case 'I':
			o->level = optarg ? pn_interval_level("--interval",
							      optarg) : 0.9;
			break;
		case OPT_FORMAT:
			if ((o->fmt = pn_sheet_format(optarg)) < 0)
				pn_usage_error("invalid --format '%s': "
					       "expected tsv or md", optarg);
			break;
		case OPT_PLOT: o->plotfile = optarg; break;
		case 'g': o->specs = optarg; break;
		case 'o': o->out = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  exit(0);
		case 'V': pn_version();
		default: pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	if (!o->models && !o->fallback)
		pn_usage_error("nothing to predict with: give --models FILE, "
			       "--fallback roofline or both");
	if (o->devlist && o->all)
		pn_usage_error("--device and --devices all both choose the "
			       "GPUs");
	if (!o->devlist && !o->all)
		pn_usage_error("no GPU: give --device NAME[,NAME]... or "
			       "--devices all");
	if (o->devlist && !*o->devlist)
		pn_usage_error("--device: empty list");
	o->path = optind < argc ? argv[optind] : "-";
}

/* The GPUs of --device or --devices all; their count in *ndev. */
static const pn_gpu **devices(const options *o, const pn_gpus *gpus,
			      int *ndev)
{
	int n = 0;
	const pn_gpu **dev = pn_xmalloc((size_t)(o->all ? gpus->n :
			     (int)strlen(o->devlist) / 2 + 1) * sizeof *dev);
	if (o->all) {
		for (int i = 0; i < gpus->n; i++)
			dev[n++] = &gpus->g[i];
		*ndev = n;
		return dev;
	}
	char *list = pn_xstrdup(o->devlist), *save = NULL;
	for (char *s = strtok_r(list, ",", &save); s;
	     s = strtok_r(NULL, ",", &save)) {
		const pn_gpu *g = pn_gpus_need(gpus, s, NULL, 0);
		for (int i = 0; i < n; i++)
			if (dev[i] == g)
				pn_usage_error("--device: '%s' names %s twice",
					       o->devlist, g->name);
		dev[n++] = g;
	}
	free(list);
	if (n == 0)
		pn_usage_error("--device: empty list");
	*ndev = n;
	return dev;
}

/* Which rows a model predicts (bymodel): every type must have a model or
 * the fallback. */
static unsigned char *which_rows(const options *o, const pn_modelset *ms,
				 const pn_network *net)
{
	unsigned char *bymodel = pn_xcalloc((size_t)net->n, 1);
	char missing[512] = "";
	size_t mlen = 0;
	int seen[PN_NLAYERS] = {0};
	for (long i = 0; i < net->n; i++) {
		pn_layer_type t = net->r[i].l.type;
		const pn_model *m = ms ? pn_modelset_find(ms, pn_layer_name(t))
				       : NULL;
		if (m && strcmp(m->target, "time_ms") != 0)
			pn_die_at(PN_EXIT_DATA, o->models, 0, "the %s model "
				  "predicts '%s', not time_ms",
				  pn_layer_name(t), m->target);
		if (m && o->level > 0 && m->nlogo == 0)
			pn_die_at(PN_EXIT_DATA, o->models, 0,
				  PN_INTERVAL_NO_RECORD, pn_layer_name(t));
		bymodel[i] = m != NULL;
		if (!m && ms && !seen[t] && !o->fallback)
			mlen += (size_t)snprintf(missing + mlen,
						 sizeof missing - mlen,
						 "%s'%s'", mlen ? ", " : "",
						 pn_layer_name(t));
		seen[t] = 1;
	}
	if (*missing)
		pn_die_at(PN_EXIT_DATA, o->models, 0, "no model for layer type%s "
			  "%s of %s (--fallback roofline predicts %s by the "
			  "roofline)", strchr(missing, ',') ? "s" : "",
			  missing, o->path, strchr(missing, ',') ? "them" :
			  "it");
	return bymodel;
}

/* 1 when model m was fitted on rows of precision p: its "info precisions
 * a,b" line (pn-fit) names p; NA there, or no such line, is fp32, the
 * precision of a row without one. */
static int model_saw(const pn_model *m, pn_prec p)
{
	for (int i = 0; i < m->ninfo; i++) {
		const char *s = m->info[i];
		if (strncmp(s, "precisions ", 11) != 0)
			continue;
		for (s += 11; *s; s += *s == ',') {
			char name[16];
			size_t n = strcspn(s, ",");
			snprintf(name, sizeof name, "%.*s", (int)n, s);
			int q = strcmp(name, "NA") == 0 ? PN_FP32 :
				pn_prec_of(name);
			if (q == (int)p)
				return 1;
			s += n;
		}
		return 0;
	}
	return p == PN_FP32;
}

/* Say once on stderr when rows are in a precision that no model was
 * fitted on: predicted by the roofline (checked against fp32 measurements
 * only) or extrapolated by a model. */
static void warn_precision(const pn_modelset *ms, const pn_network *net,
			   const unsigned char *bymodel)
{
	long roof = 0, ext = 0;
	int unseen[PN_NPREC] = {0};
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		const pn_model *m = bymodel[i] ? pn_modelset_find(ms,
			pn_layer_name(r->l.type)) : NULL;
		if (m ? model_saw(m, r->prec) : r->prec == PN_FP32)
			continue;
		unseen[r->prec] = 1;
		*(m ? &ext : &roof) += 1;
	}
	char list[64] = "";
	for (int p = 0, n = 0; p < PN_NPREC; p++)
		if (unseen[p])
			n += snprintf(list + n, sizeof list - (size_t)n, "%s%s",
				      n ? "," : "", pn_prec_name((pn_prec)p));
	if (roof + ext)
		pn_warn("%s: no model was fitted on precision %s: %ld row%s "
			"predicted by the roofline (checked against fp32 "
			"measurements only), %ld extrapolated by a model",
			net->path, list, roof, roof == 1 ? "" : "s", ext);
}

/* The times of the iteration and the epoch on GPU d: t (and tl, the last
 * batch, or NULL) hold every row's time, kf and kl its factors. */
static void sum_device(result *r, const pn_network *net, int d,
		       const double *t, const double *tl, const factors *kf,
		       const factors *kl, double full)
{
	const double *td = t + (size_t)d * (size_t)net->n;
	for (long i = 0; i < net->n; i++)
		r->ph[net->r[i].phase] += td[i] * net->r[i].repeat;
	r->iter_ms = r->ph[PN_PH_FWD] + r->ph[PN_PH_BWD] + r->ph[PN_PH_ACC] +
		     r->ph[PN_PH_TRAIN];
	double last = 0;
	if (tl)
		for (long i = 0; i < net->n; i++)
			last += tl[(size_t)d * (size_t)net->n + i] *
				net->r[i].repeat;
	r->epoch_ms = full * r->iter_ms + last;
	r->cost = r->epoch_ms / 3.6e6 * r->g->price_usd_h;
	/* bound by bound: a GPU's errors taken as fully correlated */
	r->iter_lo = r->iter_hi = r->epoch_lo = r->epoch_hi = NAN;
	if (!kf->sum)
		return;
	double lo = 0, hi = 0, last_lo = 0, last_hi = 0;
	for (long i = 0; i < net->n; i++) {
		size_t j = (size_t)d * (size_t)net->n + (size_t)i;
		lo += td[i] * net->r[i].repeat / kf->sum[j];
		hi += td[i] * net->r[i].repeat * kf->sum[j];
		if (tl) {
			last_lo += tl[j] * net->r[i].repeat / kl->sum[j];
			last_hi += tl[j] * net->r[i].repeat * kl->sum[j];
		}
	}
	r->iter_lo = lo;
	r->iter_hi = hi;
	r->epoch_lo = full * lo + last_lo;
	r->epoch_hi = full * hi + last_hi;
}

/* --per-layer: the network at the batch, through network.h's writer, with
 * device source time_ms total_ms [time_lo_ms time_hi_ms]. */
static void write_layers(pn_sheet *tb, const pn_network *net,
			 const unsigned char *bymodel, double batch,
			 const pn_gpu *const *dev, int ndev, const double *t,
			 const factors *kf)
{
	static const char *const extra[] = {
		"device", "source", "time_ms", "total_ms", "time_lo_ms",
		"time_hi_ms"
	};
	int nx = kf->one ? 6 : 4, xcol[6];
	const char **cols = pn_xmalloc((size_t)(net->ncols + nx) *
				       sizeof *cols);
	int ncol = pn_network_columns(net, extra, nx, cols, xcol);
	for (int i = 0; i < ncol; i++)
		pn_sheet_head(tb, cols[i], 0);
	pn_sheet_end(tb);
	for (int d = 0; d < ndev; d++) {
		for (long i = 0; i < net->n; i++) {
			size_t j = (size_t)d * (size_t)net->n + (size_t)i;
			double v[6] = {NAN, NAN, t[j], t[j] * net->r[i].repeat,
				       kf->one ? t[j] / kf->one[j] : NAN,
				       kf->one ? t[j] * kf->one[j] : NAN};
			const char *s[6] = {dev[d]->name, bymodel[i] ? "model"
					    : "roofline"};
			for (int c = 0; c < ncol; c++) {
				int x = 0;
				while (x < nx && xcol[x] != c)
					x++;
				char buf[32];
				if (x == nx)
					pn_sheet_text(tb, pn_network_field(net,
						i, batch, c, buf));
				else if (s[x])
					pn_sheet_text(tb, s[x]);
				else
					pn_sheet_num(tb, v[x]);
			}
			pn_sheet_end(tb);
		}
	}
	free(cols);
}

/* The summary: one row per GPU by rising epoch time, with the cost rank. */
static void write_summary(pn_sheet *tb, result *res, int ndev,
			  const char *source, double iterations, int interval)
{
	qsort(res, (size_t)ndev, sizeof *res, by_epoch);
	for (int d = 0; d < ndev; d++) {
		res[d].rank = d + 1;
		res[d].cost_rank = 0;
	}
	for (int d = 0; d < ndev; d++) {
		if (isnan(res[d].cost))
			continue;
		int k = 1;
		for (int e = 0; e < ndev; e++)
			if (!isnan(res[e].cost) &&
			    (res[e].cost < res[d].cost ||
			     (res[e].cost == res[d].cost && e < d)))
				k++;
		res[d].cost_rank = k;
	}
	for (int x = 0; sumcols[x]; x++)
		pn_sheet_head(tb, sumcols[x], 0);
	if (interval) {
		pn_sheet_head(tb, "iteration_lo_ms", 0);
		pn_sheet_head(tb, "iteration_hi_ms", 0);
		pn_sheet_head(tb, "epoch_lo_s", 0);
		pn_sheet_head(tb, "epoch_hi_s", 0);
	}
	pn_sheet_end(tb);
	for (int d = 0; d < ndev; d++) {
		const result *r = &res[d];
		pn_sheet_int(tb, r->rank);
		pn_sheet_text(tb, r->g->name);
		pn_sheet_text(tb, source);
		for (int p = 0; p < PN_NPHASES; p++)
			pn_sheet_num(tb, r->ph[p]);
		pn_sheet_num(tb, r->iter_ms);
		pn_sheet_int(tb, iterations);
		pn_sheet_num(tb, r->epoch_ms / 1e3);
		pn_sheet_num(tb, r->g->price_usd_h);
		pn_sheet_num(tb, r->cost);
		pn_sheet_int(tb, r->cost_rank ? r->cost_rank : NAN);
		if (interval) {
			pn_sheet_num(tb, r->iter_lo);
			pn_sheet_num(tb, r->iter_hi);
			pn_sheet_num(tb, r->epoch_lo / 1e3);
			pn_sheet_num(tb, r->epoch_hi / 1e3);
		}
		pn_sheet_end(tb);
	}
}

/* The batch and the whole batches of the epoch; dies when a traced
 * network cannot run them. */
static double batches(options *o, const pn_network *net, double *rest)
{
	if (net->traced) {
		if (o->batch && o->batch != net->traced)
			pn_die_at(PN_EXIT_DATA, o->path, 0, "the network is "
				  "traced at batch %ld: it cannot run at "
				  "--batch %g", net->traced, o->batch);
		o->batch = (double)net->traced;
	}
	if (!o->batch)
		o->batch = 1;
	if (!o->dataset)
		o->dataset = o->batch;
	double full = floor(o->dataset / o->batch);
	*rest = o->dataset - full * o->batch;
	if (net->traced && *rest > 0)
		pn_die_at(PN_EXIT_DATA, o->path, 0, "the network is traced at "
			  "batch %ld: it cannot run the last batch of %g "
			  "samples (give a --dataset-size that is a multiple "
			  "of %ld)", net->traced, *rest, net->traced);
	return full;
}

int main(int argc, char **argv)
{
	options o;
	pn_init("pn-sum");
	pn_stdout_init();
	parse_options(argc, argv, &o);
	pn_gpus *gpus = pn_gpus_load(o.specs);
	int ndev;
	const pn_gpu **dev = devices(&o, gpus, &ndev);
	pn_network net;
	pn_network_load(&net, o.path);
	double rest, full = batches(&o, &net, &rest);
	pn_modelset *ms = o.models ? pn_modelset_load(o.models) : NULL;
	unsigned char *bymodel = which_rows(&o, ms, &net);
	warn_precision(ms, &net, bymodel);
	modelpath mp = {0};
	mp.level = o.level;
	if (ms)
		model_init(&mp, ms, &net);

	/* Predict every row on every GPU, at the batch and the last batch. */
	size_t nt = (size_t)net.n * (size_t)ndev;
	double *t = pn_xmalloc(nt * sizeof *t), *tl = NULL;
	factors kf = factors_new(nt, o.level > 0), kl = {NULL, NULL};
	result *res = pn_xcalloc((size_t)ndev, sizeof *res);
	predict(&net, bymodel, &mp, o.batch, dev, ndev, t, &kf);
	if (rest > 0) {
		tl = pn_xmalloc(nt * sizeof *tl);
		kl = factors_new(nt, o.level > 0);
		predict(&net, bymodel, &mp, rest, dev, ndev, tl, &kl);
	}
	for (int d = 0; d < ndev; d++) {
		res[d].g = dev[d];
		sum_device(&res[d], &net, d, t, tl, &kf, &kl, full);
	}

	long nmodel = 0;
	for (long i = 0; i < net.n; i++)
		nmodel += bymodel[i];
	const char *source = nmodel == net.n ? "model" : nmodel ? "mixed" :
			     "roofline";
	FILE *f = pn_output_open(o.out);
	pn_sheet *tb = pn_sheet_new(f, o.fmt);
	if (o.per_layer)
		write_layers(tb, &net, bymodel, o.batch, dev, ndev, t, &kf);
	else
		write_summary(tb, res, ndev, source, full + (rest > 0),
			      o.level > 0);
	if (o.plotfile) {
		if (o.per_layer)
			qsort(res, (size_t)ndev, sizeof *res, by_epoch);
		plot(o.plotfile, o.path, res, ndev, o.batch, o.dataset,
		     o.level);
	}
	pn_sheet_free(tb);
	pn_output_close(f);

	pn_network_free(&net);
	model_free(&mp);
	free(bymodel);
	free(kf.one);
	free(kf.sum);
	free(kl.one);
	free(kl.sum);
	pn_modelset_free(ms);
	free(t);
	free(tl);
	free(res);
	free(dev);
	pn_gpus_free(gpus);
	return 0;
}
