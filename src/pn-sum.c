/* pn-sum - iteration and epoch time of a network on GPUs */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "err.h"
#include "featurize.h"
#include "gpuspec.h"
#include "interval.h"
#include "layer.h"
#include "modelset.h"
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

enum { PH_FWD, PH_BWD, PH_ACC, PH_TRAIN, PH_N };
static const char *const phases[PH_N] = {"fwd", "bwd", "acc", "train"};

typedef struct {
	pn_layer l;         /* dimensions as read: one sample, or traced */
	int phase;
	double repeat;
	double traffic;     /* traffic_bytes as read; 0 when not given */
	int model;          /* 1: a model predicts the row, 0: the roofline */
	long line;
	char **field;       /* the row's fields, in the network's columns */
} netrow;

typedef struct {
	const char *path;
	int ncols;
	char **col;
	int cbatch, celements, ctraffic;   /* scaled columns, or -1 */
	int cprecision;
	netrow *r;
	long n;
	long traced;        /* traced_batch, or 0 */
} network;

/* ---- reading the network ---------------------------------------------- */

static int find_name(char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

static void read_network(network *net, const char *path)
{
	pn_tsv *in = pn_tsv_open(path);
	net->path = path;
	net->ncols = pn_tsv_ncols(in);
	net->col = pn_xmalloc((size_t)net->ncols * sizeof *net->col);
	for (int i = 0; i < net->ncols; i++)
		net->col[i] = pn_xstrdup(pn_tsv_colname(in, i));
	if (pn_tsv_find(in, "pass") >= 0)
		pn_die_at(PN_EXIT_DATA, path, 1, "column 'pass' has no place in "
			  "a network: its rows give phase");
	pn_layer_cols *lc = pn_layer_cols_new(in);
	int cname = pn_tsv_col(in, "name"), cphase = pn_tsv_col(in, "phase");
	int crep = pn_tsv_find(in, "repeat");
	int ctraced = pn_tsv_find(in, "traced_batch");
	net->cbatch = pn_tsv_find(in, "batch");
	net->celements = pn_tsv_find(in, "elements");
	net->ctraffic = pn_tsv_find(in, "traffic_bytes");
	net->cprecision = pn_tsv_find(in, "precision");
	long cap = 0;
	while (pn_tsv_read(in)) {
		if (net->n == cap)
			net->r = pn_xrealloc(net->r, (size_t)(cap = cap ? 2 * cap
					     : 256) * sizeof *net->r);
		netrow *r = &net->r[net->n++];
		memset(r, 0, sizeof *r);
		pn_layer_read(in, lc, &r->l);
		r->line = pn_tsv_lineno(in);
		if (pn_tsv_len(in, cname) == 0)
			pn_tsv_die(in, cname, "empty name");
		const char *ph = pn_tsv_str(in, cphase);
		r->phase = 0;
		while (r->phase < PH_N && strcmp(phases[r->phase], ph))
			r->phase++;
		if (r->phase == PH_N)
			pn_tsv_die(in, cphase, "unknown phase '%s' (one of: fwd, "
				   "bwd, acc, train)", ph);
		r->l.train = r->phase == PH_TRAIN;
		r->repeat = 1;
		if (crep >= 0 && !pn_tsv_na(in, crep)) {
			r->repeat = (double)pn_tsv_int(in, crep);
			if (r->repeat < 1)
				pn_tsv_die(in, crep, "repeat must be at least 1, "
					   "not %g", r->repeat);
		}
		if (net->ctraffic >= 0 && !pn_tsv_na(in, net->ctraffic)) {
			r->traffic = pn_tsv_num(in, net->ctraffic);
			if (!(r->traffic > 0))
				pn_tsv_die(in, net->ctraffic, "traffic_bytes "
					   "must be positive, not %g",
					   r->traffic);
		}
		if (ctraced >= 0) {
			long long t = pn_tsv_na(in, ctraced) ? 0 :
				      pn_tsv_int(in, ctraced);
			if (t < 1)
				pn_tsv_die(in, ctraced, "traced_batch must be "
					   "a whole number of at least 1");
			if (net->traced && t != net->traced)
				pn_tsv_die(in, ctraced, "traced_batch %lld "
					   "differs from the %ld of the rows "
					   "above", t, net->traced);
			net->traced = (long)t;
		}
		size_t len = 0;
		for (int i = 0; i < net->ncols; i++)
			len += pn_tsv_len(in, i) + 1;
		char *buf = pn_xmalloc(len);
		r->field = pn_xmalloc((size_t)net->ncols * sizeof *r->field);
		for (int i = 0; i < net->ncols; i++) {
			size_t n = pn_tsv_len(in, i);
			memcpy(buf, pn_tsv_str(in, i), n + 1);
			r->field[i] = buf;
			buf += n + 1;
		}
	}
	if (net->n == 0)
		pn_die_at(PN_EXIT_DATA, path, 0, "no layer rows");
	pn_layer_cols_free(lc);
	pn_tsv_close(in);
}

/* The row at `batch` samples: the batch dimension (mem: elements) and
 * traffic_bytes grow with the batch; a traced network is run as traced. */
static void scaled(const network *net, const netrow *r, double batch,
		   pn_layer *l, double *traffic)
{
	*l = r->l;
	*traffic = r->traffic;
	if (net->traced)
		return;
	if (l->type == PN_MEM)
		l->elements *= batch;
	else
		l->batch *= batch;
	*traffic *= batch;
}

/* ---- the roofline ----------------------------------------------------- */

/* NeuSight's GEMM roofline (Model/other/roofline_mm.py), in ms: FLOPs in
 * GFLOP, bytes in GiB, as NeuSight mixes them. */
static double gemm_ms(double B, double M, double N, double K, double e,
		      double gflops, double bw)
{
	double flops = 2.0 * B * (M * N * K) / 1e9;
	double mem = e * B * (M * N + N * K + M * K) / 1073741824.0;
	double ai = flops / mem;
	double roof = gflops < ai * bw ? gflops : ai * bw;
	return flops / roof * 1e3;
}

static double roofline_ms(const pn_layer *l, int phase, double traffic,
			  const pn_gpu *g)
{
	double bw = g->mem_bw_gbs, peak = pn_peak_gflops(g, l->bytes);
	pn_work w;
	if (phase != PH_TRAIN) {
		switch (l->type) {
		case PN_DENSE:
			return gemm_ms(1, l->batch, l->in_features,
				       l->out_features, l->bytes, peak, bw);
		case PN_BMM:
			return gemm_ms(l->batch, l->m, l->n, l->k, l->bytes,
				       peak, bw);
		case PN_LAYERNORM: case PN_SOFTMAX: case PN_ELEMENTWISE:
			if (traffic <= 0) {
				pn_layer_work(l, &w);
				traffic = w.traffic;
			}
			return traffic / 1e9 / bw * 1e3;
		case PN_MEM:
			if (traffic <= 0)
				traffic = l->bytes * l->elements;
			return traffic / (bw * 1073741824.0) * 1e3;
		default:
			break;
		}
	}
	double f[PN_F_N];
	pn_layer_work(l, &w);
	if (traffic > 0)
		w.traffic = traffic;
	pn_features(l, &w, g, f);
	return f[PN_F_ROOFLINE_MS];
}

/* ---- predicting ------------------------------------------------------- */

/* Columns the model path sets on every row: the configuration as parsed
 * (defaults filled in, as pn-import writes them), pass, device, features. */
enum { X_OP, X_PRECISION, X_OPTIMIZER, X_ACTIVATION, X_BIAS, X_PASS,
       X_DEVICE, X_FEAT, X_N = X_FEAT + PN_F_N };
static const char *const xnames[X_FEAT] = {
	"op", "precision", "optimizer", "activation", "bias", "pass", "device"
};

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
		       const network *net)
{
	mp->ncols = net->ncols;
	mp->name = pn_xmalloc((size_t)(net->ncols + X_N) * sizeof *mp->name);
	mp->field = pn_xmalloc((size_t)(net->ncols + X_N) * sizeof *mp->field);
	for (int i = 0; i < net->ncols; i++)
		mp->name[i] = net->col[i];
	for (int k = 0; k < X_N; k++) {
		const char *s = k < X_FEAT ? xnames[k] :
				pn_feature_names[k - X_FEAT];
		int i = find_name(net->col, net->ncols, s);
		if (i < 0) {
			i = mp->ncols++;
			mp->name[i] = s;
		}
		mp->xcol[k] = i;
	}
	mp->p = pn_predictor_new(ms, mp->ncols, mp->name);
	mp->pending = pn_xmalloc(QUEUE * sizeof *mp->pending);
	mp->out = pn_xmalloc(QUEUE * sizeof *mp->out);
	mp->which = pn_xmalloc(QUEUE * sizeof *mp->which);
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

/* Queue row i, its time to go to t[at]. */
static void model_push(modelpath *mp, const network *net, long i, long at,
		       const pn_layer *l, double traffic, const pn_gpu *g,
		       double *t, const factors *kf)
{
	const netrow *r = &net->r[i];
	for (int c = 0; c < net->ncols; c++)
		mp->field[c] = r->field[c];
	pn_work w;
	double f[PN_F_N];
	pn_layer_work(l, &w);
	if (traffic > 0)
		w.traffic = traffic;
	pn_features(l, &w, g, f);
	mp->field[mp->xcol[X_OP]] = l->op;
	int cp = net->cprecision;
	mp->field[mp->xcol[X_PRECISION]] = cp >= 0 && strcmp(r->field[cp],
		"NA") && *r->field[cp] ? r->field[cp] : "fp32";
	mp->field[mp->xcol[X_OPTIMIZER]] = pn_opt_name(l->optimizer);
	mp->field[mp->xcol[X_ACTIVATION]] = pn_act_name((int)l->activation);
	mp->field[mp->xcol[X_BIAS]] = l->bias ? "1" : "0";
	mp->field[mp->xcol[X_PASS]] = r->phase == PH_TRAIN ? "train" : "fwd";
	mp->field[mp->xcol[X_DEVICE]] = g->name;
	for (int k = 0; k < PN_F_N; k++) {
		pn_fmt_num(mp->buf[X_FEAT + k], f[k]);
		mp->field[mp->xcol[X_FEAT + k]] = mp->buf[X_FEAT + k];
	}
	/* the batch-scaled columns, as the model sees them */
	if (!net->traced) {
		int c = l->type == PN_MEM ? net->celements : net->cbatch;
		pn_fmt_num(mp->buf[X_N], l->type == PN_MEM ? l->elements :
			   l->batch);
		mp->field[c] = mp->buf[X_N];
		if (traffic > 0) {
			pn_fmt_num(mp->buf[X_N + 1], traffic);
			mp->field[net->ctraffic] = mp->buf[X_N + 1];
		}
	}
	if (pn_predictor_pending(mp->p) == QUEUE)
		model_flush(mp, t, kf);
	size_t k = pn_predictor_pending(mp->p);
	if (pn_predictor_push(mp->p, pn_layer_name(l->type), mp->field,
			      NULL) != 0)
		pn_die_at(PN_EXIT_DATA, net->path, r->line, "%s",
			  pn_predictor_error(mp->p));
	mp->pending[k] = at;
}

/* Time of every row (one instance, ms) at `batch` samples on each of the
 * ndev GPUs into t[d * rows + i], and with --interval its factors into k;
 * model rows of every GPU are predicted together. */
static void predict(const network *net, modelpath *mp, double batch,
		    const pn_gpu *const *dev, int ndev, double *t,
		    const factors *k)
{
	for (int d = 0; d < ndev; d++) {
		double *td = t + (size_t)d * (size_t)net->n;
		for (long i = 0; i < net->n; i++) {
			const netrow *r = &net->r[i];
			pn_layer l;
			double traffic;
			scaled(net, r, batch, &l, &traffic);
			if (r->model) {
				model_push(mp, net, i, (long)d * net->n + i,
					   &l, traffic, dev[d], t, k);
				continue;
			}
			td[i] = roofline_ms(&l, r->phase, traffic, dev[d]);
			if (k->one)
				k->one[(size_t)d * (size_t)net->n + i] =
				k->sum[(size_t)d * (size_t)net->n + i] = 1;
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
	double ph[PH_N];        /* per iteration at --batch, ms */
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

static double whole_arg(const char *opt, const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < 1 || v > (1LL << 40))
		pn_usage_error("%s: '%s' is not a whole number of at least 1",
			       opt, s);
	return (double)v;
}

enum { OPT_FALLBACK = 256, OPT_DEVICES, OPT_FORMAT, OPT_PLOT };

int main(int argc, char **argv)
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
	const char *models = NULL, *devlist = NULL, *specs = NULL, *out = NULL,
		   *plotfile = NULL;
	int fallback = 0, all = 0, per_layer = 0, fmt = PN_SHEET_TSV, c;
	double level = 0;
	double batch = 0, dataset = 0;
	pn_init("pn-sum");
	pn_stdout_init();
	argv[0] = (char *)pn_prog;
	while ((c = getopt_long(argc, argv, "m:d:b:n:pI::g:o:h", opts, NULL))
	       != -1) {
		switch (c) {
		case 'm': models = optarg; break;
		case OPT_FALLBACK:
			if (strcmp(optarg, "roofline") != 0)
				pn_usage_error("invalid --fallback '%s': "
					       "expected roofline", optarg);
			fallback = 1;
			break;
		case 'd': devlist = optarg; break;
		case OPT_DEVICES:
			if (strcmp(optarg, "all") != 0)
				pn_usage_error("invalid --devices '%s': "
					       "expected all (--device takes "
					       "a list)", optarg);
			all = 1;
			break;
		case 'b': batch = whole_arg("--batch", optarg); break;
		case 'n': dataset = whole_arg("--dataset-size", optarg); break;
		case 'p': per_layer = 1; break;
		case 'I':
			level = optarg ? pn_interval_level("--interval", optarg)
				       : 0.9;
			break;
		case OPT_FORMAT:
			if ((fmt = pn_sheet_format(optarg)) < 0)
				pn_usage_error("invalid --format '%s': "
					       "expected tsv or md", optarg);
			break;
		case OPT_PLOT: plotfile = optarg; break;
		case 'g': specs = optarg; break;
		case 'o': out = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  return 0;
		case 'V': pn_version();
		default: pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	if (!models && !fallback)
		pn_usage_error("nothing to predict with: give --models FILE, "
			       "--fallback roofline or both");
	if (devlist && all)
		pn_usage_error("--device and --devices all both choose the "
			       "GPUs");
	if (!devlist && !all)
		pn_usage_error("no GPU: give --device NAME[,NAME]... or "
			       "--devices all");
	if (devlist && !*devlist)
		pn_usage_error("--device: empty list");
	const char *path = optind < argc ? argv[optind] : "-";

	pn_gpus *gpus = pn_gpus_load(specs);
	int ndev = 0;
	const pn_gpu **dev = pn_xmalloc((size_t)(all ? gpus->n :
			     (int)strlen(devlist) / 2 + 1) * sizeof *dev);
	if (all) {
		for (int i = 0; i < gpus->n; i++)
			dev[ndev++] = &gpus->g[i];
	} else {
		char *list = pn_xstrdup(devlist), *save = NULL;
		for (char *s = strtok_r(list, ",", &save); s;
		     s = strtok_r(NULL, ",", &save)) {
			const pn_gpu *g = pn_gpus_need(gpus, s, NULL, 0);
			for (int i = 0; i < ndev; i++)
				if (dev[i] == g)
					pn_usage_error("--device: '%s' names "
						       "%s twice", devlist,
						       g->name);
			dev[ndev++] = g;
		}
		free(list);
		if (ndev == 0)
			pn_usage_error("--device: empty list");
	}

	network net = {0};
	read_network(&net, path);
	if (net.traced) {
		if (batch && batch != net.traced)
			pn_die_at(PN_EXIT_DATA, path, 0, "the network is traced "
				  "at batch %ld: it cannot run at --batch %g",
				  net.traced, batch);
		batch = (double)net.traced;
	}
	if (!batch)
		batch = 1;
	if (!dataset)
		dataset = batch;
	double full = floor(dataset / batch), rest = dataset - full * batch;
	if (net.traced && rest > 0)
		pn_die_at(PN_EXIT_DATA, path, 0, "the network is traced at batch "
			  "%ld: it cannot run the last batch of %g samples "
			  "(give a --dataset-size that is a multiple of %ld)",
			  net.traced, rest, net.traced);

	/* Which rows have a model: every type must have one or the fallback. */
	pn_modelset *ms = models ? pn_modelset_load(models) : NULL;
	char missing[512] = "";
	size_t mlen = 0;
	int seen[PN_NLAYERS] = {0};
	for (long i = 0; i < net.n; i++) {
		pn_layer_type t = net.r[i].l.type;
		const pn_model *m = ms ? pn_modelset_find(ms, pn_layer_name(t))
				       : NULL;
		if (m && strcmp(m->target, "time_ms") != 0)
			pn_die_at(PN_EXIT_DATA, models, 0, "the %s model "
				  "predicts '%s', not time_ms",
				  pn_layer_name(t), m->target);
		if (m && level > 0 && m->nlogo == 0)
			pn_die_at(PN_EXIT_DATA, models, 0,
				  PN_INTERVAL_NO_RECORD, pn_layer_name(t));
		net.r[i].model = m != NULL;
		if (!m && ms && !seen[t] && !fallback)
			mlen += (size_t)snprintf(missing + mlen,
						 sizeof missing - mlen,
						 "%s'%s'", mlen ? ", " : "",
						 pn_layer_name(t));
		seen[t] = 1;
	}
	if (*missing)
		pn_die_at(PN_EXIT_DATA, models, 0, "no model for layer type%s "
			  "%s of %s (--fallback roofline predicts %s by the "
			  "roofline)", strchr(missing, ',') ? "s" : "",
			  missing, path, strchr(missing, ',') ? "them" : "it");
	modelpath mp = {0};
	mp.level = level;
	if (ms)
		model_init(&mp, ms, &net);

	/* Predict every row on every GPU, at the batch and the last batch. */
	size_t nt = (size_t)net.n * (size_t)ndev;
	double *t = pn_xmalloc(nt * sizeof *t);
	double *tl = NULL;
	factors kf = factors_new(nt, level > 0), kl = {NULL, NULL};
	result *res = pn_xcalloc((size_t)ndev, sizeof *res);
	predict(&net, &mp, batch, dev, ndev, t, &kf);
	if (rest > 0) {
		tl = pn_xmalloc(nt * sizeof *tl);
		kl = factors_new(nt, level > 0);
		predict(&net, &mp, rest, dev, ndev, tl, &kl);
	}
	for (int d = 0; d < ndev; d++) {
		const double *td = t + (size_t)d * (size_t)net.n;
		result *r = &res[d];
		r->g = dev[d];
		for (long i = 0; i < net.n; i++)
			r->ph[net.r[i].phase] += td[i] * net.r[i].repeat;
		r->iter_ms = r->ph[PH_FWD] + r->ph[PH_BWD] + r->ph[PH_ACC] +
			     r->ph[PH_TRAIN];
		double last = 0;
		if (tl)
			for (long i = 0; i < net.n; i++)
				last += tl[(size_t)d * (size_t)net.n + i] *
					net.r[i].repeat;
		r->epoch_ms = full * r->iter_ms + last;
		r->cost = r->epoch_ms / 3.6e6 * dev[d]->price_usd_h;
		/* bound by bound: a GPU's errors taken as fully correlated */
		r->iter_lo = r->iter_hi = r->epoch_lo = r->epoch_hi = NAN;
		if (!kf.sum)
			continue;
		double lo = 0, hi = 0, last_lo = 0, last_hi = 0;
		for (long i = 0; i < net.n; i++) {
			size_t j = (size_t)d * (size_t)net.n + (size_t)i;
			lo += td[i] * net.r[i].repeat / kf.sum[j];
			hi += td[i] * net.r[i].repeat * kf.sum[j];
			if (tl) {
				last_lo += tl[j] * net.r[i].repeat / kl.sum[j];
				last_hi += tl[j] * net.r[i].repeat * kl.sum[j];
			}
		}
		r->iter_lo = lo;
		r->iter_hi = hi;
		r->epoch_lo = full * lo + last_lo;
		r->epoch_hi = full * hi + last_hi;
	}

	int nmodel = 0;
	for (long i = 0; i < net.n; i++)
		nmodel += net.r[i].model;
	const char *source = nmodel == net.n ? "model" : nmodel ? "mixed" :
			     "roofline";
	FILE *f = pn_output_open(out);
	pn_sheet *tb = pn_sheet_new(f, fmt);
	if (per_layer) {
		static const char *const extra[] = {
			"device", "source", "time_ms", "total_ms",
			"time_lo_ms", "time_hi_ms"
		};
		int nx = level > 0 ? 6 : 4;
		int xcol[6] = {-1, -1, -1, -1, -1, -1}, ncol = net.ncols;
		for (int x = 0; x < nx; x++) {
			xcol[x] = find_name(net.col, net.ncols, extra[x]);
			if (xcol[x] < 0)
				xcol[x] = ncol++;
		}
		for (int i = 0; i < ncol; i++) {
			int x = 0;
			while (x < nx && xcol[x] != i)
				x++;
			pn_sheet_head(tb, x < nx ? extra[x] : net.col[i], 0);
		}
		pn_sheet_end(tb);
		for (int d = 0; d < ndev; d++) {
			const double *td = t + (size_t)d * (size_t)net.n;
			for (long i = 0; i < net.n; i++) {
				const netrow *r = &net.r[i];
				pn_layer l;
				double traffic;
				char b[3][32];
				scaled(&net, r, batch, &l, &traffic);
				pn_fmt_num(b[0], l.batch);
				pn_fmt_num(b[1], l.elements);
				pn_fmt_num(b[2], traffic);
				for (int c2 = 0; c2 < ncol; c2++) {
					double v = NAN;
					const char *s = c2 < net.ncols ?
							r->field[c2] : NULL;
					if (c2 == xcol[0])
						s = dev[d]->name;
					else if (c2 == xcol[1])
						s = r->model ? "model" :
						    "roofline";
					else if (c2 == xcol[2])
						v = td[i];
					else if (c2 == xcol[3])
						v = td[i] * r->repeat;
					else if (c2 == xcol[4])
						v = td[i] / kf.one[(size_t)d *
							(size_t)net.n + i];
					else if (c2 == xcol[5])
						v = td[i] * kf.one[(size_t)d *
							(size_t)net.n + i];
					else if (!net.traced &&
						 c2 == net.cbatch &&
						 l.type != PN_MEM)
						s = b[0];
					else if (!net.traced &&
						 c2 == net.celements &&
						 l.type == PN_MEM)
						s = b[1];
					else if (!net.traced &&
						 c2 == net.ctraffic &&
						 traffic > 0)
						s = b[2];
					if (s)
						pn_sheet_text(tb, s);
					else
						pn_sheet_num(tb, v);
				}
				pn_sheet_end(tb);
			}
		}
	} else {
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
		if (level > 0) {
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
			for (int p = 0; p < PH_N; p++)
				pn_sheet_num(tb, r->ph[p]);
			pn_sheet_num(tb, r->iter_ms);
			pn_sheet_int(tb, full + (rest > 0));
			pn_sheet_num(tb, r->epoch_ms / 1e3);
			pn_sheet_num(tb, r->g->price_usd_h);
			pn_sheet_num(tb, r->cost);
			pn_sheet_int(tb, r->cost_rank ? r->cost_rank : NAN);
			if (level > 0) {
				pn_sheet_num(tb, r->iter_lo);
				pn_sheet_num(tb, r->iter_hi);
				pn_sheet_num(tb, r->epoch_lo / 1e3);
				pn_sheet_num(tb, r->epoch_hi / 1e3);
			}
			pn_sheet_end(tb);
		}
	}
	if (plotfile) {
		if (per_layer)
			qsort(res, (size_t)ndev, sizeof *res, by_epoch);
		plot(plotfile, path, res, ndev, batch, dataset, level);
	}
	pn_sheet_free(tb);
	pn_output_close(f);

	for (long i = 0; i < net.n; i++) {
		free(net.r[i].field[0]);     /* every field of the row */
		free(net.r[i].field);
	}
	for (int i = 0; i < net.ncols; i++)
		free(net.col[i]);
	free(net.col);
	free(net.r);
	if (mp.p) {
		pn_predictor_free(mp.p);
		free(mp.name);
		free(mp.field);
		free(mp.pending);
		free(mp.out);
		free(mp.which);
	}
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
