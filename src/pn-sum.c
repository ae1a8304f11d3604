/* pn-sum - iteration and epoch time of a network on GPUs */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "domain.h"
#include "err.h"
#include "opt.h"
#include "featurize.h"
#include "framework.h"
#include "gpuspec.h"
#include "interval.h"
#include "layer.h"
#include "memory.h"
#include "modelset.h"
#include "network.h"
#include "precision.h"
#include "roofline.h"
#include "sheet.h"
#include "step.h"
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
"                          width, but a recurrent one's on a GPU)\n"
"      --format FMT        tsv (the default) or md: a markdown table with\n"
"                          numbers to 4 significant digits\n"
"      --plot FILE         draw epoch time and cost per GPU (PNG, gnuplot);\n"
"                          GPUs the job does not fit are grey\n"
"      --max-batch         on each GPU, the largest batch that fits its memory\n"
"                          (not for a traced network)\n"
"      --optimizer NAME    the optimizer of every row with weights: its state,\n"
"                          its step in decomposed train rows (default: each\n"
"                          row's); a traced graph has none: with NAME, its\n"
"                          step over the graph's weights is added (opt_ms)\n"
"      --momentum          SGD and RMSprop keep a momentum buffer\n"
"      --precision MODE    train in MODE: fp32, tf32 (GEMMs only), fp16, bf16\n"
"                          (every row), amp-fp16 or amp-bf16 (autocast's\n"
"                          rules, fp32 master weights, the casts as rows;\n"
"                          default: each row's own precision)\n"
"      --fp32-master       fp16 and bf16 rows keep an fp32 master of each\n"
"                          weight and fp32 optimizer state (as pn-time's\n"
"                          half rows; AMP does already)\n"
"      --framework FILE    add a framework's fixed costs per op (a profile,\n"
"                          samples/frameworks/) to every row and the step;\n"
"                          column overhead_ms, last, says how much (page_ms,\n"
"                          before it, how much of that is fresh pages)\n"
"  -g, --gpuspecs FILE     read GPU specs from FILE (default: gpuspecs/gpus.tsv)\n"
"      --strict            refuse (exit 1) a row that a model would predict\n"
"                          outside what it was fitted on (its domain)\n"
"  -o, --output FILE       write to FILE instead of standard output\n"
"  -h, --help              display this help and exit\n"
"      --version           output version information and exit\n"
"\n"
"Summary columns: rank device source [batch] fwd_ms bwd_ms acc_ms opt_ms\n"
"train_ms iteration_ms iterations epoch_s price_usd_h cost_usd cost_rank\n"
"peak_gb mem_gb fits, one row per GPU, the GPUs the job fits first, each part\n"
"by rising epoch time (batch: with --max-batch); with --interval also\n"
"iteration_lo_ms iteration_hi_ms epoch_lo_s epoch_hi_s; with --framework\n"
"also page_ms overhead_ms.  Per-layer columns: the network's, then device source rule\n"
"time_ms total_ms [time_lo_ms time_hi_ms] weights_bytes grads_bytes\n"
"state_bytes saved_bytes workspace_bytes domain [overhead_ms].  A train row\n"
"whose model never saw train steps with its optimizer is split into forward,\n"
"backward and optimizer parts (rule decomposed); one of input_grad 0 that\n"
"stays whole, and whose model never saw such rows, loses its input\n"
"gradient's product (rule whole-dx, source derived).  A whole train row takes\n"
"at least its weights' sweep at the memory's bandwidth when the step's\n"
"weights, gradients and state exceed the device's cache (rule sweep).  The\n"
"network format, the parts, the memory model and the domain: see pn-sum(1).\n";


/* ---- predicting ------------------------------------------------------- */

/* Columns the model path sets on every row: the configuration as parsed
 * (defaults filled in, as pn-import writes them: layer.h's pn_layer_attrs),
 * input_grad (input_grad_field), the device, the features. */
enum { NATTR = 6, X_INPUT_GRAD = NATTR, X_DEVICE, X_FEAT,
       X_N = X_FEAT + PN_F_N };

/* The domain verdicts (domain.h) of the predictions at the batch: for row
 * i on GPU d, at[(d * n + i) * PN_DOMAIN_WHY] ("" inside; roofline rows
 * ""; a row with parts: its own, else its first part's, domain_keep),
 * where at is NULL while the last batch is predicted.  --strict dies at
 * the first verdict that is not "". */
typedef struct {
	const pn_network *net;
	const pn_gpu *const *dev;       /* the GPUs being predicted */
	char *all, *at;
	int strict;
	double batch;                   /* the batch being predicted */
} domains;

/* A model's prediction v (ms) for slot j (row j % n on GPU j / n; part:
 * the part of its training step, or NULL): dies unless a time, 0 or more
 * and finite (a model without a log target can go below 0). */
static void check_time(const domains *dm, size_t j, double v,
		       const char *part)
{
	if (v >= 0 && isfinite(v))
		return;
	const pn_network *net = dm->net;
	long i = (long)(j % (size_t)net->n);
	pn_die_at(PN_EXIT_DATA, net->path, net->r[i].line, "%s%spredicted %g "
		  "ms on %s at batch %g: no time (below 0 or beyond a double; "
		  "a model fitted without a log target, pn-fit "
		  "--no-log-target, can go below 0)", part ? part : "",
		  part ? " of the training step " : "", v,
		  dm->dev[j / (size_t)net->n]->name, dm->batch);
}

/* Rows queued before a flush: one family->predict call per model and
 * flush, so queue many (xgboost's threads cost ~1 ms per call). */
enum { QUEUE = 1 << 16 };

/* ---- precisions no model saw: the unit transfer ------------------------ */

/* A matrix-unit op (roofline.h's pn_unit_matrix: dense, bmm, conv2d,
 * attention) in a precision its model never saw, where the model saw
 * fp32, is predicted as its fp32 twin, which the model knows, times the
 * ratio of the two rooflines: the row's own (the unit that runs its
 * precision: the tensor cores for tf32, fp16 and bf16) over the twin's on
 * the fp32 lanes its kernels can use (lane_roofline_ms).  The fp32
 * kernel's efficiency is carried to the unit of the precision, so that a
 * faster unit stays faster on every GPU: fed the half row itself, trees
 * that saw fp32 alone put a bf16 GEMM of BERT-large on an H100 NVL at 0.4x
 * its time on an H100 SXM.  Never below the row's own roofline
 * (twin_time).  Chosen on Vidur's fp16 GEMMs of the A40 (samples/vidur,
 * the shipped fp32 models: MAPE 47.1% fed the fp16 row, 27.2% as its
 * twin; 29.3% without the bound), the A100 80GB's held out (26.5%, 23.1%;
 * 23.2%; bench/unit-twin); both are about 20% faster than measured
 * (tensor cores reach a smaller share of their peak than fp32 kernels of
 * theirs), which no factor corrects.
 * Not on a CPU, whose bf16 kernels keep less of their peak than its
 * fp32 ones: on samples/cpu-bf16's bf16 rows, from a model of its fp32
 * rows, the twin misses by more than the row fed as it is (dense 56.0%
 * against 46.7%, bmm 35.9% against 28.1%).  The row stays extrapolated:
 * its verdict names its precision. */
typedef struct {
	double *scale;          /* each queued prediction's ratio (1: none) */
	double *roof;           /* its row's own roofline, ms (0: none) */
	signed char *from;      /* its row's precision, or -1 */
	char why[PN_DOMAIN_WHY];
} twins;

static void twins_init(twins *tw)
{
	tw->scale = pn_xmalloc(QUEUE * sizeof *tw->scale);
	tw->roof = pn_xmalloc(QUEUE * sizeof *tw->roof);
	tw->from = pn_xmalloc(QUEUE * sizeof *tw->from);
}

static void twins_free(twins *tw)
{
	free(tw->scale);
	free(tw->roof);
	free(tw->from);
}

/* The row's roofline (ms) when l, a row of model m's type on g, is
 * predicted as its fp32 twin, l (and *traffic) then the twin's; else 0,
 * l untouched. */
static double unit_twin(const pn_model *m, pn_layer *l, double *traffic,
			const pn_gpu *g)
{
	if (!m || l->prec == PN_FP32 || !pn_unit_matrix(l->type) ||
	    pn_gpu_is_cpu(g) ||
	    pn_domain_saw(m, PN_DOM_PRECISION, pn_prec_name(l->prec)) ||
	    !pn_domain_saw(m, PN_DOM_PRECISION, pn_prec_name(PN_FP32)))
		return 0;
	double f[PN_F_N];
	pn_feature_row(l, *traffic, g, f);
	if (!(f[PN_F_ROOFLINE_MS] > 0))         /* no work: nothing to carry */
		return 0;
	if (*traffic > 0)
		*traffic *= (double)pn_prec_bytes(PN_FP32) / l->bytes;
	l->prec = PN_FP32;
	l->bytes = pn_prec_bytes(PN_FP32);
	return f[PN_F_ROOFLINE_MS];
}

/* Queue slot k's transfer: roof, unit_twin's answer for the row of
 * precision from; f, the features of what was queued (the twin). */
static void twin_queue(twins *tw, size_t k, double roof, pn_prec from,
		       const double *f)
{
	tw->scale[k] = roof > 0 ? roof / f[PN_F_LANE_ROOFLINE_MS] : 1;
	tw->roof[k] = roof > 0 ? roof : 0;
	tw->from[k] = roof > 0 ? (signed char)from : -1;
}

/* The time of queued slot k from its model's prediction out: out itself,
 * or for a twin out times the ratio of the rooflines, but never below
 * the row's own roofline (its unit's peak): where the fp32 model puts
 * the twin above its lanes' roofline (a GPU whose fp32 GEMMs use both
 * datapaths, an RTX 4090), the ratio alone would run the row faster
 * than its unit can. */
static double twin_time(const twins *tw, size_t k, double out)
{
	double v = out * tw->scale[k];
	/* a time below 0 or not a number stays, for check_time to refuse */
	return v >= 0 && v < tw->roof[k] ? tw->roof[k] : v;
}

/* The verdict of queued slot k: the predictor's (why), after its row's
 * precision when its twin was predicted. */
static const char *twin_why(twins *tw, size_t k, const char *why)
{
	if (tw->from[k] < 0)
		return why;
	snprintf(tw->why, sizeof tw->why, "precision=%s via its fp32 twin%s%s",
		 pn_prec_name((pn_prec)tw->from[k]), *why ? "," : "", why);
	return tw->why;
}

typedef struct {
	pn_predictor *p;
	int ncols;
	const char **name;      /* the predictor's columns */
	const char **field;     /* one row's fields */
	double *num;            /* its computed features (NaN: the field) */
	int xcol[X_N];          /* where the extra columns go */
	char buf[X_N + 3][32];
	long *pending;          /* row of each queued prediction */
	signed char *bound;     /* 1: a lower bound of the slot before's row
				   (sgd_bound), not the row's own */
	double *out;
	const pn_model **which; /* the model of each queued prediction */
	twins tw;               /* the unit transfer of each (unit_twin) */
	const pn_modelset *ms;
	double level;           /* --interval: its probability, else 0 */
	domains dom;
} modelpath;

/* The interval factors of each predicted time (interval.h): of the row
 * alone, and of the row as part of a sum; for a roofline row
 * pn_interval_roofline's (1 but for a recurrent row on a GPU); and own:
 * 1 where every factor of the row is a model's own error on a device it
 * was fitted on (pn_interval_own), which sum_device adds up by layer type.
 * NULL without --interval. */
typedef struct {
	double *one, *sum;
	unsigned char *own;
} factors;

/* A computed feature v for the predictor: the number itself, not its text
 * parsed back (the same value); a value that is not finite as its text in
 * buf, so that the predictor says what it says of such a field. */
static void feature_cell(double v, char *buf, const char **field, double *num)
{
	if (isfinite(v)) {
		*num = v;
		*field = "";
	} else {
		pn_fmt_num(buf, v);
		*num = NAN;
		*field = buf;
	}
}

static void model_init(modelpath *mp, const pn_modelset *ms,
		       const pn_network *net)
{
	const char *extra[X_N];
	for (int k = 0; k < X_N; k++)
		extra[k] = k < NATTR ? pn_layer_attrs[k] :
			   k == X_INPUT_GRAD ? "input_grad" : k == X_DEVICE ?
			   "device" : pn_feature_names[k - X_FEAT];
	mp->name = pn_xmalloc((size_t)(net->ncols + X_N) * sizeof *mp->name);
	mp->field = pn_xmalloc((size_t)(net->ncols + X_N) * sizeof *mp->field);
	mp->ncols = pn_network_columns(net, extra, X_N, mp->name, mp->xcol);
	mp->num = pn_xmalloc((size_t)mp->ncols * sizeof *mp->num);
	for (int c = 0; c < mp->ncols; c++)
		mp->num[c] = NAN;
	mp->p = pn_predictor_new(ms, mp->ncols, mp->name);
	mp->ms = ms;
	twins_init(&mp->tw);
	mp->pending = pn_xmalloc(QUEUE * sizeof *mp->pending);
	mp->bound = pn_xmalloc(QUEUE * sizeof *mp->bound);
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
	free(mp->num);
	free(mp->pending);
	free(mp->bound);
	free(mp->out);
	free(mp->which);
	twins_free(&mp->tw);
}

/* Keep the verdict why of prediction at (d * n + i), or with --strict die
 * on one outside the domain.  part: the step's part (step.h) it is the
 * verdict of, NULL for the row's own.  A slot keeps the row's own
 * verdict when it is not "", else its first part's that is not "" (in the
 * parts' order), named by the part ("input-grad: padding>1": a part's
 * shape is not the row's), whatever order the queues are flushed in. */
static void domain_keep(domains *dm, long at, const char *why,
			const char *part)
{
	long n = dm->net->n, i = at % n;
	if (!*why)
		return;
	if (dm->strict)
		pn_die_at(PN_EXIT_DATA, dm->net->path, dm->net->r[i].line,
			  "the %s row%s%s%s on %s lies outside its model's "
			  "domain: %s (--strict)",
			  pn_layer_name(dm->net->r[i].l.type), part ? "'s " :
			  "", part ? part : "", part ? " part" : "",
			  dm->dev[at / n]->name, why);
	char *slot = dm->at ? dm->at + (size_t)at * PN_DOMAIN_WHY : NULL;
	if (slot && (!part || !*slot))
		snprintf(slot, PN_DOMAIN_WHY, "%s%s%s", part ? part : "",
			 part ? ": " : "", why);
}

static void model_flush(modelpath *mp, double *t, const factors *k)
{
	size_t n = pn_predictor_pending(mp->p);
	if (n == 0)
		return;
	pn_predictor_flush_models(mp->p, mp->out, mp->which);
	for (size_t j = 0; j < n; j++) {
		long at = mp->pending[j];
		double v = twin_time(&mp->tw, j, mp->out[j]);
		if (mp->bound[j]) {     /* after its row's own slot */
			/* a bound that is no time bounds nothing; one that
			 * sets the time brings its verdict */
			if (v >= 0 && isfinite(v) && v > t[at]) {
				t[at] = v;
				domain_keep(&mp->dom, at, twin_why(&mp->tw, j,
					    pn_predictor_domain(mp->p, j)),
					    "sgd-bound");
			}
			continue;
		}
		domain_keep(&mp->dom, at, twin_why(&mp->tw, j,
			    pn_predictor_domain(mp->p, j)), NULL);
		t[at] = v;
		check_time(&mp->dom, (size_t)at, v, NULL);
		if (k->one) {
			const char *dv = mp->dom.dev[at / mp->dom.net->n]->name;
			k->one[at] = pn_interval_factor(mp->which[j], dv, 0,
							mp->level);
			k->sum[at] = pn_interval_factor(mp->which[j], dv, 1,
							mp->level);
			k->own[at] = (unsigned char)pn_interval_own(
				mp->which[j], dv);
		}
	}
}

/* A row's input_grad as the models saw it: NA on a row that does not
 * train (pn-sample writes it so: a forward pass has no input gradient to
 * skip), else 0 or 1 (layer.h; 1 on the types without it). */
static const char *input_grad_field(const pn_layer *l, char *buf)
{
	return l->train ? pn_layer_field(l, l->prec, "input_grad", buf) :
			  "NA";
}

/* Whether the whole train step of l, predicted by model m, is bounded
 * below by the same step with SGD: every optimizer of layer.h does SGD's
 * update and more (state, more passes), so no step of it can be faster,
 * but trees that take the optimizer as a category need not know that
 * (a batchnorm step with Adam 5% faster than with SGD); where m saw SGD
 * steps, a step of another optimizer takes at least m's SGD step. */
static int sgd_bound(const pn_model *m, const pn_layer *l)
{
	return m && l->train && l->optimizer != PN_OPT_NONE &&
	       l->optimizer != PN_OPT_SGD &&
	       pn_domain_saw(m, PN_DOM_OPTIMIZER, pn_opt_name(PN_OPT_SGD));
}

/* Queue layer l (row i of net, as model_push made it) with traffic and
 * its twin's roof and precision from; bound: as a lower bound of the
 * slot queued before it (sgd_bound). */
static void model_queue(modelpath *mp, const pn_network *net, long i,
			double batch, long at, const pn_gpu *g,
			const pn_layer *l, double traffic, double roof,
			pn_prec from, int bound)
{
	const pn_netrow *r = &net->r[i];
	double f[PN_F_N];
	pn_layer q = *l;
	pn_feature_row(&q, traffic, g, f);
	for (int c = 0; c < net->ncols; c++)
		mp->field[c] = r->field[c];
	for (int k = 0; k < NATTR; k++)
		mp->field[mp->xcol[k]] = pn_layer_field(&q, q.prec,
			pn_layer_attrs[k], mp->buf[k]);
	mp->field[mp->xcol[X_INPUT_GRAD]] = input_grad_field(&q,
		mp->buf[X_INPUT_GRAD]);
	mp->field[mp->xcol[X_DEVICE]] = g->name;
	for (int k = 0; k < PN_F_N; k++)
		feature_cell(f[k], mp->buf[X_FEAT + k],
			     &mp->field[mp->xcol[X_FEAT + k]],
			     &mp->num[mp->xcol[X_FEAT + k]]);
	/* the batch-scaled columns, as the model sees them */
	const int scaled[3] = {net->cbatch, net->celements, net->ctraffic};
	for (int j = 0; j < 3; j++)
		if (scaled[j] >= 0)
			mp->field[scaled[j]] = pn_network_field(net, i, batch,
				scaled[j], mp->buf[X_N + j]);
	size_t k = pn_predictor_pending(mp->p);
	if (pn_predictor_push_num(mp->p, pn_layer_name(q.type), mp->field,
				  NULL, mp->num) != 0)
		pn_die_at(PN_EXIT_DATA, net->path, r->line, "%s",
			  pn_predictor_error(mp->p));
	mp->pending[k] = at;
	mp->bound[k] = (signed char)bound;
	twin_queue(&mp->tw, k, roof, from, f);
}

/* Queue row i at `batch` samples, its time to go to t[at]; full: as the
 * whole train step that computes its input's gradient (input_grad 1,
 * rule whole-dx), whatever its input_grad column says.  With sgd_bound,
 * its SGD step after it, in the same flush. */
static void model_push(modelpath *mp, const pn_network *net, long i,
		       double batch, long at, const pn_gpu *g, double *t,
		       const factors *kf, int full)
{
	const pn_netrow *r = &net->r[i];
	pn_layer l;
	double traffic;
	pn_network_scaled(net, r, batch, &l, &traffic);
	if (full)
		l.no_input_grad = 0;
	pn_prec from = l.prec;
	const pn_model *m = pn_modelset_find(mp->ms, pn_layer_name(l.type));
	/* the same step with SGD (sgd_bound), its own twin if any; not for
	 * a row that gives its traffic, which holds its own optimizer's */
	pn_layer s = l;
	double straffic = traffic;
	int bound = sgd_bound(m, &l) && !(traffic > 0);
	double roof = unit_twin(m, &l, &traffic, g);
	if (pn_predictor_pending(mp->p) + 1 + bound > QUEUE)
		model_flush(mp, t, kf);
	model_queue(mp, net, i, batch, at, g, &l, traffic, roof, from, 0);
	if (bound) {
		s.optimizer = PN_OPT_SGD;
		double sroof = unit_twin(m, &s, &straffic, g);
		model_queue(mp, net, i, batch, at, g, &s, straffic, sroof,
			    from, 1);
	}
}

/* Factors of n rows (none without want): 1, and own. */
static factors factors_new(size_t n, int want)
{
	factors k = {NULL, NULL, NULL};
	if (want) {
		k.one = pn_xmalloc(n * sizeof *k.one);
		k.sum = pn_xmalloc(n * sizeof *k.sum);
		k.own = pn_xmalloc(n);
		for (size_t j = 0; j < n; j++) {
			k.one[j] = k.sum[j] = 1;
			k.own[j] = 1;
		}
	}
	return k;
}

static void factors_free(factors *k)
{
	free(k->one);
	free(k->sum);
	free(k->own);
	*k = (factors){NULL, NULL, NULL};
}

/* ---- training steps (step.h) ------------------------------------------- */

/* How a row is predicted (--per-layer's rule column): whole, as the row
 * is; decomposed, a train row as the sum of its parts (step.h); acc+opt,
 * a traced graph's gradient accumulation of a weight (an acc row) as the
 * row and, with --optimizer, the optimizer's update of that weight;
 * whole-dx, a train row that skips its input's gradient (input_grad 0)
 * whose model never saw such rows, predicted whole as if it did not skip
 * it (featurized with input_grad 1), less the skipped product
 * (pn_step_input_grad; dx_less); a model that saw them predicts the row
 * whole.  --per-layer says sweep instead where sweep_floor set a whole
 * row's time on that device. */
enum { RULE_WHOLE, RULE_DECOMPOSED, RULE_ACC_OPT, RULE_WHOLE_DX };
static const char *const rule_names[] = {"whole", "decomposed", "acc+opt",
					 "whole-dx"};

/* The parts' model path: rows made from a part's layer (the layer
 * contract's columns, pn_network_out_cols but name phase repeat, and
 * pass), then device and the features, as model_push makes them. */
typedef struct {
	pn_predictor *p;
	int ncols, cdev, cfeat;
	const char **name, **field;
	double *num;            /* computed features (NaN: the field) */
	char (*buf)[32];
	long *pending;          /* row slot of each queued part */
	const char **what;      /* its name (step.h) */
	unsigned char *phase;   /* its phase (step.h) */
	double *count, *out;
	const pn_model **which;
	twins tw;               /* the unit transfer of each (unit_twin) */
} partpath;

/* What predicts the steps of a network: each row's rule, the optimizer
 * (--optimizer, or -1: each row's own), and the parts' model path. */
typedef struct {
	unsigned char *rule;
	double all[PN_NOPT][PN_NPREC];  /* weight elements of each optimizer
					   and precision, the step's */
	int opt, momentum, amp;
	int master;             /* amp or --fp32-master: the step's weights
				   are fp32 masters */
	const pn_modelset *ms;
	double level;
	partpath pp;
	domains *dom;           /* the model path's, for the parts' verdicts */
	double *overhead;       /* --framework: each row's, by fwd bwd opt
				   (framework.h), ms; else NULL */
	unsigned char *swept;   /* each slot (device x row) whose time is its
				   weights' sweep (sweep_floor), or NULL */
	unsigned char cells[PN_NLAYERS];  /* the recurrent types whose train
				   rows --framework runs op by op (its
				   TYPE.fwd.step cost): decomposed into the
				   ops (pn_step_cell_parts) */
} stepper;

/* The optimizer of row r's step: --optimizer for a row with weights or
 * a traced graph's acc row, else its own (memory.c's rule). */
static int step_opt(const stepper *st, const pn_netrow *r)
{
	return st->opt >= 0 && (pn_layer_defs[r->l.type].weights ||
				r->phase == PN_PH_ACC) ? st->opt :
	       r->l.optimizer;
}

/* The model of layer type t, or NULL: the roofline's. */
static const pn_model *type_model_of(const stepper *st, pn_layer_type t)
{
	return st->ms ? pn_modelset_find(st->ms, pn_layer_name(t)) : NULL;
}

/* 1 when the model of row r's type was fitted on whole training steps
 * with the row's optimizer (and --optimizer does not change it). */
static int step_whole(const stepper *st, const pn_netrow *r)
{
	const pn_model *m = type_model_of(st, r->l.type);
	return m && step_opt(st, r) == r->l.optimizer &&
	       pn_domain_saw(m, PN_DOM_PASS, pn_pass_names[PN_PASS_TRAIN]) &&
	       pn_domain_saw(m, PN_DOM_OPTIMIZER,
			     pn_opt_name(r->l.optimizer));
}

/* 1 when the model of row r's type was fitted on train rows that skip
 * their input's gradient (input_grad 0): it predicts such a row whole. */
static int saw_no_dx(const stepper *st, const pn_netrow *r)
{
	const pn_model *m = type_model_of(st, r->l.type);
	return m && pn_domain_saw(m, PN_DOM_INPUT_GRAD, "0");
}

/* Each row's rule: a train row whole when its model saw such steps or it
 * does not split (step.h), else decomposed; with --optimizer, an
 * elementwise acc row (a weight's gradient) acc+opt. */
static unsigned char *step_rules(const stepper *st, const pn_network *net)
{
	unsigned char *rule = pn_xcalloc((size_t)net->n, 1);
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		if (r->phase == PN_PH_TRAIN && !step_whole(st, r) &&
		    pn_step_splits(r->l.type))
			rule[i] = RULE_DECOMPOSED;
		if (r->phase == PN_PH_TRAIN && st->cells[r->l.type])
			rule[i] = RULE_DECOMPOSED;
		if (r->phase == PN_PH_ACC && st->opt >= 0 &&
		    r->l.type == PN_ELEMENTWISE)
			rule[i] = RULE_ACC_OPT;
		pn_step_part p;
		if (r->phase == PN_PH_TRAIN && rule[i] == RULE_WHOLE &&
		    pn_step_input_grad(&r->l, &p) && !saw_no_dx(st, r))
			rule[i] = RULE_WHOLE_DX;
	}
	return rule;
}

/* The weight elements of a traced graph's acc row: its output (memory.c:
 * one acc row per weight tensor's gradient). */
static double acc_weights(const pn_layer *l)
{
	pn_work w;
	pn_layer_work(l, &w);
	return w.cm_out / l->bytes;
}

/* The precision of the weights the optimizer steps for a row of
 * precision p: fp32 under masters (--fp32-master, amp-*), and for a tf32
 * row, whose weights are fp32 tensors (TF32 is a mode of fp32 GEMMs): one
 * fp32 group, as PyTorch's foreach step sees them. */
static pn_prec weight_prec(const stepper *st, pn_prec p)
{
	return st->master || p == PN_TF32 ? PN_FP32 : p;
}

/* The parts of row i at `batch` that are not the row itself: a
 * decomposed row's every part, an acc+opt row's optimizer passes. */
static int step_parts(const stepper *st, const pn_network *net, long i,
		      double batch, pn_step_part *p)
{
	const pn_netrow *r = &net->r[i];
	pn_layer l;
	double traffic;
	pn_network_scaled(net, r, batch, &l, &traffic);
	pn_prec wprec = weight_prec(st, l.prec);
	int opt = step_opt(st, r);
	double all = st->all[opt][wprec];
	if (st->rule[i] == RULE_DECOMPOSED && st->cells[l.type])
		return pn_step_cell_parts(&l, opt, st->momentum,
					  pn_step_weights(&l), all, wprec, p);
	if (st->rule[i] == RULE_DECOMPOSED)
		return pn_step_parts(&l, opt, st->momentum,
				     pn_step_weights(&l), all, wprec, p);
	if (st->rule[i] == RULE_WHOLE_DX)
		return pn_step_input_grad(&l, p);
	if (st->rule[i] != RULE_ACC_OPT)
		return 0;
	return pn_step_optimizer(opt, st->momentum, all, wprec,
				 acc_weights(&l) / all, p);
}

/* The optimizer's weight elements of each optimizer and precision: the
 * sum over the rows with a step, repeats counted. */
static void step_weights(stepper *st, const pn_network *net)
{
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		pn_layer l;
		double traffic;
		pn_network_scaled(net, r, 1, &l, &traffic);
		double w = st->rule[i] == RULE_DECOMPOSED ? pn_step_weights(&l)
			 : st->rule[i] == RULE_ACC_OPT ? acc_weights(&l) : 0;
		st->all[step_opt(st, r)][weight_prec(st, l.prec)] +=
			w * r->repeat;
	}
}

/* The model of a part's type, or NULL: the roofline's. */
static const pn_model *part_model(const stepper *st, const pn_step_part *p)
{
	return type_model_of(st, p->l.type);
}

static void part_init(partpath *pp, const pn_modelset *ms)
{
	int n = 0, max = 40 + PN_F_N;
	pp->name = pn_xmalloc((size_t)max * sizeof *pp->name);
	for (int c = 0; pn_network_out_cols[c]; c++)
		if (pn_name_index((const char *const[]){"name", "phase",
				  "repeat", 0}, pn_network_out_cols[c]) < 0)
			pp->name[n++] = pn_network_out_cols[c];
	pp->name[n++] = "pass";
	pp->name[n++] = "input_grad";
	pp->cdev = n;
	pp->name[n++] = "device";
	pp->cfeat = n;
	for (int k = 0; k < PN_F_N; k++)
		pp->name[n++] = pn_feature_names[k];
	pp->ncols = n;
	pp->field = pn_xmalloc((size_t)n * sizeof *pp->field);
	pp->num = pn_xmalloc((size_t)n * sizeof *pp->num);
	for (int c = 0; c < n; c++)
		pp->num[c] = NAN;
	pp->buf = pn_xmalloc((size_t)n * sizeof *pp->buf);
	pp->p = pn_predictor_new(ms, n, pp->name);
	pp->pending = pn_xmalloc(QUEUE * sizeof *pp->pending);
	pp->what = pn_xmalloc(QUEUE * sizeof *pp->what);
	pp->phase = pn_xmalloc(QUEUE);
	pp->count = pn_xmalloc(QUEUE * sizeof *pp->count);
	pp->out = pn_xmalloc(QUEUE * sizeof *pp->out);
	pp->which = pn_xmalloc(QUEUE * sizeof *pp->which);
	twins_init(&pp->tw);
}

static void part_free(partpath *pp)
{
	if (!pp->p)
		return;
	pn_predictor_free(pp->p);
	free(pp->name);
	free(pp->field);
	free(pp->num);
	free(pp->buf);
	free(pp->pending);
	free(pp->what);
	free(pp->phase);
	free(pp->count);
	free(pp->out);
	free(pp->which);
	twins_free(&pp->tw);
}

/* Queued parts into their row slots: sp[j * PN_STEP_NPHASES + phase] (ms),
 * their domain verdicts (domain_keep) and, with --interval, the widest
 * part's factor into pk. */
static void part_flush(stepper *st, double *sp, const factors *pk)
{
	partpath *pp = &st->pp;
	size_t n = pn_predictor_pending(pp->p);
	if (n == 0)
		return;
	pn_predictor_flush_models(pp->p, pp->out, pp->which);
	for (size_t q = 0; q < n; q++) {
		long j = pp->pending[q];
		double tq = twin_time(&pp->tw, q, pp->out[q]);
		check_time(st->dom, (size_t)j, tq, pp->what[q]);
		domain_keep(st->dom, j, twin_why(&pp->tw, q,
			    pn_predictor_domain(pp->p, q)), pp->what[q]);
		sp[j * PN_STEP_NPHASES + pp->phase[q]] += tq * pp->count[q];
		if (pk->one) {
			const char *dv = st->dom->dev[j / st->dom->net->n]->name;
			pk->one[j] = fmax(pk->one[j], pn_interval_factor(
				pp->which[q], dv, 0, st->level));
			pk->sum[j] = fmax(pk->sum[j], pn_interval_factor(
				pp->which[q], dv, 1, st->level));
			pk->own[j] &= (unsigned char)pn_interval_own(
				pp->which[q], dv);
		}
	}
}

/* Queue part p of row i (its slot j) on GPU g. */
static void part_push(stepper *st, const pn_network *net, long i,
		      const pn_step_part *p, long j, const pn_gpu *g,
		      double *sp, const factors *pk)
{
	partpath *pp = &st->pp;
	double f[PN_F_N];
	if (pn_predictor_pending(pp->p) == QUEUE)
		part_flush(st, sp, pk);
	pn_layer l = p->l;
	double traffic = p->traffic;
	double roof = unit_twin(part_model(st, p), &l, &traffic, g);
	for (int c = 0; c < pp->cdev - 1; c++)
		pp->field[c] = pn_layer_field(&l, l.prec, pp->name[c],
					      pp->buf[c]);
	pp->field[pp->cdev - 1] = input_grad_field(&l,
						   pp->buf[pp->cdev - 1]);
	pp->field[pp->cdev] = g->name;
	pn_feature_row(&l, traffic, g, f);
	for (int k = 0; k < PN_F_N; k++)
		feature_cell(f[k], pp->buf[pp->cfeat + k],
			     &pp->field[pp->cfeat + k], &pp->num[pp->cfeat + k]);
	size_t k = pn_predictor_pending(pp->p);
	if (pn_predictor_push_num(pp->p, pn_layer_name(p->l.type), pp->field,
				  NULL, pp->num) != 0)
		pn_die_at(PN_EXIT_DATA, net->path, net->r[i].line, "%s (%s "
			  "of the training step)", pn_predictor_error(pp->p),
			  p->what);
	pp->pending[k] = j;
	twin_queue(&pp->tw, k, roof, p->l.prec, f);
	pp->what[k] = p->what;
	pp->phase[k] = (unsigned char)p->phase;
	pp->count[k] = p->count;
}

/* The parts of row i (slot j) on GPU g: by their type's model, queued,
 * or by the roofline into sp now. */
static void step_push(stepper *st, const pn_network *net, long i,
		      double batch, long j, const pn_gpu *g, double *sp,
		      const factors *pk)
{
	pn_step_part p[PN_STEP_MAX];
	int n = step_parts(st, net, i, batch, p);
	for (int k = 0; k < n; k++) {
		if (part_model(st, &p[k])) {
			part_push(st, net, i, &p[k], j, g, sp, pk);
			continue;
		}
		sp[j * PN_STEP_NPHASES + p[k].phase] += p[k].count *
			pn_roofline_ms(&p[k].l, p[k].traffic, g);
	}
}

/* A whole-dx row's phases s: its whole time (a train row's, as if it
 * computed its input's gradient) less the skipped product, which its part
 * left in s's bwd; less at most half the whole, the share of the
 * product's FLOPs among the row's three GEMMs of equal FLOPs (forward,
 * weight and input gradient) with room for the rest, so that a poor
 * prediction of the part never leaves a row near or below zero. */
static void dx_less(double *s, double whole)
{
	double dx = s[PN_PH_BWD];
	s[PN_PH_BWD] = 0;
	s[PN_PH_TRAIN] += whole - fmin(dx, whole / 2);
}

/* Every slot's time by phase into sp (the whole row's time in its phase,
 * its parts' in theirs) and its total into t; with --interval the
 * widest of a row's factors into k. */
static void step_combine(const stepper *st, const pn_network *net,
			 size_t nt, double *t, double *sp, const factors *k,
			 const factors *pk)
{
	for (size_t j = 0; j < nt; j++) {
		const pn_netrow *r = &net->r[j % (size_t)net->n];
		double *s = sp + j * PN_STEP_NPHASES;
		if (st->rule[j % (size_t)net->n] == RULE_WHOLE_DX)
			dx_less(s, t[j]);
		else if (st->rule[j % (size_t)net->n] != RULE_DECOMPOSED)
			s[r->phase] += t[j];
		t[j] = 0;
		for (int p = 0; p < PN_STEP_NPHASES; p++)
			t[j] += s[p];
		if (k->one && st->rule[j % (size_t)net->n] != RULE_WHOLE) {
			k->one[j] = fmax(k->one[j], pk->one[j]);
			k->sum[j] = fmax(k->sum[j], pk->sum[j]);
			k->own[j] &= pk->own[j];
		}
	}
}

/* ---- the optimizer's sweep ----------------------------------------------- */

/* A whole train row (its step of forward, backward and optimizer timed
 * together) takes at least the time its weights' memory traffic takes
 * when the step's weights, gradients and optimizer state together exceed
 * the device's last-level cache (gpu_l2_mb: a CPU's own): its backward
 * writes the gradients G, its optimizer reads the weights W, G and the
 * state S and writes W and S, 2 (W + G + S) bytes (memory.h's, per
 * instance) at the device's memory bandwidth.  pn-time times a row
 * alone, repeatedly: its own weights stay in the cache when they fit, as
 * they do not when the rest of the step has passed through it since.
 * Rows whose optimizer is none are left alone.  The slots whose time the
 * floor sets are marked in st->swept. */
static void sweep_floor(const stepper *st, const pn_network *net,
			double batch, const pn_gpu *const *dev, int ndev,
			double *t, double *sp)
{
	pn_mem_row *rows[PN_MEM_NBACKENDS] = {NULL};
	double tot[PN_MEM_NBACKENDS] = {0};
	for (int d = 0; d < ndev; d++) {
		int b = pn_mem_backend(dev[d]);
		if (!rows[b]) {
			pn_mem_opts mo = {.backend = b, .optimizer = st->opt,
					  .momentum = st->momentum,
					  .amp = st->amp,
					  .master = st->master};
			pn_mem_step ms;
			rows[b] = pn_xmalloc((size_t)net->n * sizeof *rows[b]);
			pn_mem_step_of(net, batch, &mo, &ms, rows[b]);
			for (long i = 0; i < net->n; i++)
				tot[b] += net->r[i].repeat * (rows[b][i].weights +
					  rows[b][i].grads + rows[b][i].state);
		}
		if (!(tot[b] > dev[d]->l2_mb * 1e6))   /* as featurize.c */
			continue;
		for (long i = 0; i < net->n; i++) {
			const pn_netrow *r = &net->r[i];
			const pn_mem_row *m = &rows[b][i];
			if (r->phase != PN_PH_TRAIN ||
			    (st->rule[i] != RULE_WHOLE &&
			     st->rule[i] != RULE_WHOLE_DX) ||
			    step_opt(st, r) == PN_OPT_NONE)
				continue;
			size_t j = (size_t)d * (size_t)net->n + (size_t)i;
			double floor_ms = pn_roofline_vec_ms(2 * (m->weights +
				m->grads + m->state), dev[d]->mem_bw_gbs);
			if (!(t[j] < floor_ms))
				continue;
			sp[j * PN_STEP_NPHASES + PN_PH_TRAIN] += floor_ms - t[j];
			t[j] = floor_ms;
			if (st->swept)
				st->swept[j] = 1;
		}
	}
	for (int b = 0; b < PN_MEM_NBACKENDS; b++)
		free(rows[b]);
}

/* ---- framework overhead (framework.h) ----------------------------------- */

/* Whether some row of net is of phase ph. */
static int has_phase(const pn_network *net, int ph)
{
	for (long i = 0; i < net->n; i++)
		if (net->r[i].phase == ph)
			return 1;
	return 0;
}

/* 1 when the network trains: has a train or bwd row (framework.h's
 * `step`). */
static int overhead_trains(const pn_network *net)
{
	return has_phase(net, PN_PH_TRAIN) || has_phase(net, PN_PH_BWD);
}

/* --framework: each row's overhead (one instance; fwd bwd opt, ms) by its
 * optimizer of the step; dies at the row that needs a cost the profile
 * lacks, or when a training network's step has none. */
static double *overhead_rows(const pn_framework *fw, const stepper *st,
			     const pn_network *net)
{
	if (overhead_trains(net) && pn_framework_cost(fw, "step") < 0)
		pn_die_at(PN_EXIT_DATA, net->path, 0, "the framework profile "
			  "'%s' has no cost 'step'", pn_framework_path(fw));
	double *ov = pn_xmalloc((size_t)net->n * 3 * sizeof *ov);
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		pn_layer l;
		double traffic;
		pn_network_scaled(net, r, 1, &l, &traffic);
		l.optimizer = step_opt(st, r);
		const char *miss = pn_framework_row(fw, &l, r->phase,
						    st->momentum, ov + 3 * i);
		if (miss) {
			free(ov);
			pn_die_at(PN_EXIT_DATA, net->path, r->line, "the "
				  "framework profile '%s' has no cost '%s'",
				  pn_framework_path(fw), miss);
		}
	}
	return ov;
}

/* A row's overhead, ms: the sum of its phases'. */
static double overhead_of(const stepper *st, long i)
{
	const double *o = st->overhead + 3 * i;
	return o[0] + o[1] + o[2];
}

/* Add each row's overhead to its time t and its phases sp: a decomposed
 * row's to fwd, bwd and opt, another's to its own phase. */
static void overhead_add(const stepper *st, const pn_network *net,
			 size_t nt, double *t, double *sp)
{
	for (size_t j = 0; st->overhead && j < nt; j++) {
		long i = (long)(j % (size_t)net->n);
		const double *o = st->overhead + 3 * i;
		double *s = sp + j * PN_STEP_NPHASES;
		if (st->rule[i] == RULE_DECOMPOSED) {
			s[PN_PH_FWD] += o[0];
			s[PN_PH_BWD] += o[1];
			s[PN_STEP_OPT] += o[2];
		} else {
			s[net->r[i].phase] += overhead_of(st, i);
		}
		t[j] += overhead_of(st, i);
	}
}

/* Time of every row (one instance, ms) at `batch` samples on each of the
 * ndev GPUs into t[d * rows + i], by phase into sp (PN_STEP_NPHASES a
 * row, zeroed here), and with --interval its factors into k; a row is
 * predicted by its rule (stepper): whole rows with bymodel[i] by the
 * models, every GPU's together, the others by the roofline; parts by
 * their type's model, else the roofline. */
static void predict(const pn_network *net, const unsigned char *bymodel,
		    modelpath *mp, stepper *st, double batch,
		    const pn_gpu *const *dev, int ndev, double *t, double *sp,
		    const factors *k)
{
	size_t nt = (size_t)ndev * (size_t)net->n;
	factors pk = factors_new(nt, k->one != NULL);
	memset(sp, 0, nt * PN_STEP_NPHASES * sizeof *sp);
	mp->dom.dev = dev;
	mp->dom.net = net;
	mp->dom.batch = batch;
	if (mp->dom.at)
		memset(mp->dom.at, 0, nt * PN_DOMAIN_WHY);
	if (st->swept)
		memset(st->swept, 0, nt);
	for (int d = 0; d < ndev; d++) {
		for (long i = 0; i < net->n; i++) {
			size_t j = (size_t)d * (size_t)net->n + (size_t)i;
			if (st->rule[i] != RULE_WHOLE)
				step_push(st, net, i, batch, (long)j, dev[d],
					  sp, &pk);
			if (bymodel[i] && st->rule[i] != RULE_DECOMPOSED) {
				model_push(mp, net, i, batch, (long)j, dev[d],
					   t, k, st->rule[i] == RULE_WHOLE_DX);
				continue;
			}
			/* a whole-dx row has its model: it is whole only
			 * when step_whole found one */
			pn_layer l;
			double traffic;
			pn_network_scaled(net, &net->r[i], batch, &l, &traffic);
			t[j] = st->rule[i] == RULE_DECOMPOSED ? 0 :
			       pn_roofline_ms(&l, traffic, dev[d]);
			if (k->one) {
				k->one[j] = k->sum[j] = st->rule[i] ==
					RULE_DECOMPOSED ? 1 :
					pn_interval_roofline(&l, dev[d],
							     mp->level);
				/* a rule's error, one bias on the GPU */
				k->own[j] = k->sum[j] == 1;
			}
		}
	}
	if (mp->p)
		model_flush(mp, t, k);
	if (st->pp.p)
		part_flush(st, sp, &pk);
	step_combine(st, net, nt, t, sp, k, &pk);
	sweep_floor(st, net, batch, dev, ndev, t, sp);
	overhead_add(st, net, nt, t, sp);
	factors_free(&pk);
	/* each prediction was checked; their sums may still pass a double */
	for (size_t j = 0; j < nt; j++)
		check_time(&mp->dom, j, t[j], NULL);
}

/* ---- output ------------------------------------------------------------ */

static const char *const sumcols[] = {
	"fwd_ms", "bwd_ms", "acc_ms", "opt_ms", "train_ms", "iteration_ms",
	"iterations",
	"epoch_s", "price_usd_h", "cost_usd", "cost_rank", "peak_gb", "mem_gb",
	"fits", 0
};

typedef struct {
	const pn_gpu *g;
	double ph[PN_STEP_NPHASES];  /* per iteration at the batch, ms */
	double iter_ms, epoch_ms, cost;
	double iter_lo, iter_hi, epoch_lo, epoch_hi;   /* --interval, ms */
	double batch;           /* --max-batch: the GPU's (0: none fits) */
	double iterations;
	double peak;            /* bytes at the batch (memory.h) */
	double fresh[3];        /* the step's fresh bytes there (memory.h) */
	const char *source;     /* of its rows' times (device_sources) */
	int fits;
	int rank, cost_rank;
	double overhead;        /* --framework: per iteration, ms */
	double page;            /* of it, step.page's fresh pages, ms */
} result;

#define GIB 1073741824.0

/* The GPUs the job fits first, each part by rising epoch time (a GPU with
 * no time last). */
static int by_epoch(const void *a, const void *b)
{
	const result *x = a, *y = b;
	if (x->fits != y->fits)
		return y->fits - x->fits;
	if (isnan(x->epoch_ms) != isnan(y->epoch_ms))
		return isnan(x->epoch_ms) ? 1 : -1;
	if (x->epoch_ms != y->epoch_ms)
		return x->epoch_ms < y->epoch_ms ? -1 : 1;
	return x->g < y->g ? -1 : x->g > y->g;
}

/* Sort by by_epoch and rank; cost_rank: the GPUs with a price, those the
 * job fits first, each part cheapest first (0: no price). */
static void rank_results(result *res, int n)
{
	qsort(res, (size_t)n, sizeof *res, by_epoch);
	for (int d = 0; d < n; d++) {
		res[d].rank = d + 1;
		res[d].cost_rank = 0;
	}
	for (int d = 0; d < n; d++) {
		if (isnan(res[d].cost))
			continue;
		int k = 1;
		for (int e = 0; e < n; e++)
			if (!isnan(res[e].cost) && (res[e].fits > res[d].fits ||
			    (res[e].fits == res[d].fits &&
			     (res[e].cost < res[d].cost ||
			      (res[e].cost == res[d].cost && e < d)))))
				k++;
		res[d].cost_rank = k;
	}
}

/* gnuplot's colour of a bar: blue, grey where the job does not fit. */
static long colour(const result *r)
{
	return r->fits ? 0x4477aa : 0xbbbbbb;
}

static void plot_costs(FILE *gp, const result *res, int nres)
{
	fprintf(gp, "set title 'cost per epoch (GPUs with a price, "
		"cheapest first; grey: does not fit)'\n"
		"set ylabel 'cost (USD)'\n");
	fprintf(gp, "plot '-' using 0:2:3:xtic(1) with boxes "
		"lc rgb variable\n");
	for (int k = 1; k <= nres; k++)     /* the cost ranking */
		for (int i = 0; i < nres; i++)
			if (res[i].cost_rank == k)
				fprintf(gp, "\"%s\" %.17g %ld\n", res[i].g->name,
					isnan(res[i].cost) ? 0 : res[i].cost,
					colour(&res[i]));
	fprintf(gp, "e\nunset multiplot\n");
}

/* Draw epoch time (in hours, minutes or seconds: the unit of the longest
 * bar that keeps its number short) and, when some GPU has a price, cost
 * per epoch per GPU into path with gnuplot, through the output path's
 * reserved name; grey bars: GPUs the job does not fit. */
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
		costs += res[i].cost_rank > 0;
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
	if (batch > 0)
		fprintf(gp, "set title \"%s: epoch time per GPU (batch %g, %g "
			"samples", base, batch, dataset);
	else
		fprintf(gp, "set title \"%s: epoch time per GPU at the largest "
			"batch that fits", base);
	fprintf(gp, "; grey: does not fit in memory");
	if (level > 0)
		fprintf(gp, "; bars: %g%% interval on unmeasured GPUs",
			100 * level);
	/* the unit that keeps the axis's numbers short: an epoch of hours in
	 * hours, of minutes in minutes, else seconds */
	double top = 0;
	for (int i = 0; i < nres; i++)
		top = fmax(top, fmax(isnan(res[i].epoch_ms) ? 0 : res[i].epoch_ms,
				     level > 0 && isfinite(res[i].epoch_hi) ?
				     res[i].epoch_hi : 0) / 1e3);
	double unit = top >= 2 * 3600 ? 3600 : top >= 2 * 60 ? 60 : 1;
	fprintf(gp, ")\"\nset ylabel 'epoch (%s)'\n", unit == 3600 ? "h" :
		unit == 60 ? "min" : "s");
	if (level > 0)
		fprintf(gp, "plot '-' using 0:2:3:4:(0.8):5:xtic(1) with "
			"boxerrorbars lc rgb variable\n");
	else
		fprintf(gp, "plot '-' using 0:2:5:xtic(1) with boxes "
			"lc rgb variable\n");
	for (int i = 0; i < nres; i++)
		fprintf(gp, "\"%s\" %.17g %.17g %.17g %ld\n", res[i].g->name,
			isnan(res[i].epoch_ms) ? 0 : res[i].epoch_ms / 1e3 / unit,
			res[i].epoch_lo / 1e3 / unit, res[i].epoch_hi / 1e3 / unit,
			colour(&res[i]));
	fprintf(gp, "e\n");
	if (costs)
		plot_costs(gp, res, nres);
	int st = pclose(gp);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) == 127)
		pn_die(PN_EXIT_BACKEND, "gnuplot not found (needed by --plot)");
	if (WEXITSTATUS(st) != 0)
		pn_die(PN_EXIT_DATA, "gnuplot failed drawing %s", path);
	pn_output_commit(tmp);
}


/* ---- main -------------------------------------------------------------- */

enum { OPT_FALLBACK = 256, OPT_DEVICES, OPT_FORMAT, OPT_PLOT, OPT_MAXBATCH,
       OPT_OPTIMIZER, OPT_MOMENTUM, OPT_PRECISION, OPT_MASTER, OPT_STRICT,
       OPT_FRAMEWORK };

typedef struct {
	const char *models, *devlist, *specs, *out, *plotfile, *path;
	const char *framework;  /* --framework FILE, or NULL */
	int fallback, all, per_layer, fmt, max_batch, strict;
	int pmode;              /* --precision: PN_PM_*, or -1 */
	double level, batch, dataset;
	pn_mem_opts mem;
} options;

static const struct option long_opts[] = {
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
	{"max-batch", no_argument, 0, OPT_MAXBATCH},
	{"optimizer", required_argument, 0, OPT_OPTIMIZER},
	{"momentum", no_argument, 0, OPT_MOMENTUM},
	{"precision", required_argument, 0, OPT_PRECISION},
	{"fp32-master", no_argument, 0, OPT_MASTER},
	{"strict", no_argument, 0, OPT_STRICT},
	{"framework", required_argument, 0, OPT_FRAMEWORK},
	{"gpuspecs", required_argument, 0, 'g'},
	{"output", required_argument, 0, 'o'},
	{"help", no_argument, 0, 'h'},
	{"version", no_argument, 0, 'V'},
	{0, 0, 0, 0},
};

/* The options' combinations that cannot be. */
static void check_options(const options *o)
{
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
	if (o->max_batch && o->batch)
		pn_usage_error("--max-batch and --batch both choose the batch");
	if (o->max_batch && o->per_layer)
		pn_usage_error("--max-batch and --per-layer cannot be combined: "
			       "each GPU has its own batch");
}

static void parse_options(int argc, char **argv, options *o)
{
	int c;
	char list[200];
	memset(o, 0, sizeof *o);
	o->fmt = PN_SHEET_TSV;
	o->mem.optimizer = -1;
	o->pmode = -1;
	argv[0] = (char *)pn_prog;
	while ((c = getopt_long(argc, argv, "m:d:b:n:pI::g:o:h", long_opts,
				NULL)) != -1) {
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
			o->fmt = pn_opt_choice("--format", optarg,
					       pn_sheet_names);
			break;
		case OPT_PLOT: o->plotfile = optarg; break;
		case OPT_MAXBATCH: o->max_batch = 1; break;
		case OPT_OPTIMIZER:
			if ((o->mem.optimizer = pn_opt_of(optarg)) < 0)
				pn_usage_error("invalid --optimizer '%s': "
					       "expected one of %s", optarg,
					       pn_name_list(pn_opt_names, list,
							    sizeof list));
			break;
		case OPT_MOMENTUM: o->mem.momentum = 1; break;
		case OPT_MASTER: o->mem.master = 1; break;
		case OPT_STRICT: o->strict = 1; break;
		case OPT_PRECISION:
			o->pmode = pn_opt_choice("--precision", optarg,
						 pn_pmode_names);
			break;
		case OPT_FRAMEWORK: o->framework = optarg; break;
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
	check_options(o);
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

/* The model of type t (NULL: none), checked for what the options need;
 * a type without one and without the fallback goes to missing once. */
static const pn_model *type_model(const options *o, const pn_modelset *ms,
				  const pn_gpu *const *dev, int ndev,
				  pn_layer_type t, int *seen, char *missing,
				  size_t *mlen)
{
	const pn_model *m = ms ? pn_modelset_find(ms, pn_layer_name(t)) : NULL;
	if (m && strcmp(m->target, "time_ms") != 0)
		pn_die_at(PN_EXIT_DATA, o->models, 0, "the %s model "
			  "predicts '%s', not time_ms", pn_layer_name(t),
			  m->target);
	for (int d = 0; m && o->level > 0 && d < ndev; d++)
		if (isnan(pn_interval_factor(m, dev[d]->name, 0, o->level)))
			pn_die_at(PN_EXIT_DATA, o->models, 0,
				  PN_INTERVAL_NO_RECORD, pn_layer_name(t),
				  dev[d]->name);
	if (!m && ms && !seen[t] && !o->fallback && *mlen < 512)
		*mlen += (size_t)snprintf(missing + *mlen, 512 - *mlen,
					  "%s'%s'", *mlen ? ", " : "",
					  pn_layer_name(t));
	seen[t] = 1;
	return m;
}

/* Which rows a model predicts (bymodel): every type must have a model or
 * the fallback, a decomposed row's parts' types (step.h) in its stead.  A
 * train row that stays whole though its model never saw such steps goes
 * to the roofline when there is the fallback. */
static unsigned char *which_rows(const options *o, const pn_modelset *ms,
				 const pn_gpu *const *dev, int ndev,
				 const pn_network *net, const stepper *st)
{
	unsigned char *bymodel = pn_xcalloc((size_t)net->n, 1);
	char missing[512] = "";
	size_t mlen = 0;
	int seen[PN_NLAYERS] = {0};
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		pn_step_part p[PN_STEP_MAX];
		int np = step_parts(st, net, i, 1, p);
		for (int k = 0; k < np; k++)
			type_model(o, ms, dev, ndev, p[k].l.type, seen,
				   missing, &mlen);
		if (st->rule[i] == RULE_DECOMPOSED)
			continue;
		const pn_model *m = type_model(o, ms, dev, ndev, r->l.type,
					       seen, missing, &mlen);
		bymodel[i] = m && !(o->fallback && r->phase == PN_PH_TRAIN &&
				    !step_whole(st, r));
	}
	if (*missing)
		pn_die_at(PN_EXIT_DATA, o->models, 0, "no model for layer type%s "
			  "%s of %s (--fallback roofline predicts %s by the "
			  "roofline)", strchr(missing, ',') ? "s" : "",
			  missing, o->path, strchr(missing, ',') ? "them" :
			  "it");
	return bymodel;
}

/* The source of each row's time (--per-layer's source column). */
enum { SRC_ROOFLINE, SRC_MODEL, SRC_EXTRAPOLATED, SRC_MIXED, SRC_DERIVED,
       SRC_N };
static const char *const src_names[] = {"roofline", "model", "extrapolated",
					"mixed", "derived"};

/* Each row's source: a model row in a precision its model was not fitted
 * on is extrapolated. */
static unsigned char *sources(const pn_modelset *ms, const pn_network *net,
			      const unsigned char *bymodel)
{
	unsigned char *src = pn_xmalloc((size_t)net->n);
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		const pn_model *m = bymodel[i] ? pn_modelset_find(ms,
			pn_layer_name(r->l.type)) : NULL;
		src[i] = !m ? SRC_ROOFLINE : pn_domain_saw(m, PN_DOM_PRECISION,
			 pn_prec_name(r->prec)) ? SRC_MODEL : SRC_EXTRAPOLATED;
	}
	return src;
}

/* Say once on stderr when rows are in a precision nothing that predicts
 * them was fitted on, by their sources (src, step_sources' too): a row of
 * the roofline alone in any but fp32 (checked against fp32 measurements
 * only), a row of models, in part or whole, in a precision its type's
 * model did not see (any but fp32 for a type without one: its parts'
 * models), extrapolated in precision (the fp32 twin, unit_twin). */
static void warn_precisions(const pn_modelset *ms, const pn_network *net,
			    const unsigned char *src)
{
	long roof = 0, ext = 0;
	int unseen[PN_NPREC] = {0};
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		const pn_model *m = ms && src[i] != SRC_ROOFLINE ?
			pn_modelset_find(ms, pn_layer_name(r->l.type)) : NULL;
		if (m ? pn_domain_saw(m, PN_DOM_PRECISION,
				      pn_prec_name(r->prec)) :
			r->prec == PN_FP32)
			continue;
		unseen[r->prec] = 1;
		*(src[i] == SRC_ROOFLINE ? &roof : &ext) += 1;
	}
	char list[64] = "";
	for (int p = 0, n = 0; p < PN_NPREC; p++)
		if (unseen[p])
			n += snprintf(list + n, sizeof list - (size_t)n, "%s%s",
				      n ? "," : "", pn_prec_name((pn_prec)p));
	if (roof + ext)
		pn_warn("%s: no model was fitted on precision %s: %ld row%s "
			"predicted by the roofline alone (checked against "
			"fp32 measurements only), %ld by models, extrapolated "
			"in precision", net->path, list, roof, roof == 1 ? "" :
			"s", ext);
}

/* The sources of the rows that are not whole (sources above gave the
 * others): each part's, a model's when its type has one, else the
 * roofline's; the row's, the one of all its parts (an acc+opt row's own
 * among them), else mixed.  A train row predicted whole by a model that
 * never saw such steps is extrapolated.  A part outside its model's
 * domain makes its row extrapolated (row_source). */
static void step_sources(const stepper *st, const pn_network *net,
			 const unsigned char *bymodel, unsigned char *src)
{
	for (long i = 0; i < net->n; i++) {
		const pn_netrow *r = &net->r[i];
		if (bymodel[i] && r->phase == PN_PH_TRAIN && !step_whole(st, r))
			src[i] = SRC_EXTRAPOLATED;
		if (st->rule[i] == RULE_WHOLE_DX) {
			if (src[i] != SRC_EXTRAPOLATED)
				src[i] = SRC_DERIVED;
			continue;
		}
		pn_step_part p[PN_STEP_MAX];
		int n = step_parts(st, net, i, 1, p);
		for (int k = 0; k < n; k++) {
			int s = part_model(st, &p[k]) ? SRC_MODEL :
				SRC_ROOFLINE;
			if (k == 0 && st->rule[i] == RULE_DECOMPOSED)
				src[i] = (unsigned char)s;
			else if (src[i] != s)
				src[i] = SRC_MIXED;
		}
	}
}

/* The domain verdict of prediction j (domains), "" when none was kept. */
static const char *row_domain(const char *dom, size_t j)
{
	return dom ? dom + j * PN_DOMAIN_WHY : "";
}

/* The source of a row of source src whose verdict is why: a row predicted
 * by a model (alone, or with parts by others: mixed) outside its model's
 * domain is extrapolated. */
static int row_source(int src, const char *why)
{
	return src != SRC_ROOFLINE && *why ? SRC_EXTRAPOLATED : src;
}

/* Each GPU's source (res[d].source): the rows' sources at its batch, one
 * name when they agree, else mixed.  Say once on stderr how many rows are
 * extrapolated on the one device, or on some of several, and the first. */
static void device_sources(const pn_network *net, const unsigned char *src,
			   const char *dom, result *res, int ndev)
{
	long ext = 0, first = -1;
	const char *why = NULL;
	for (int d = 0; d < ndev; d++) {
		long nsrc[SRC_N] = {0};
		for (long i = 0; i < net->n; i++)
			nsrc[row_source(src[i], row_domain(dom, (size_t)d *
				(size_t)net->n + (size_t)i))]++;
		res[d].source = nsrc[SRC_MODEL] == net->n ? "model" :
			nsrc[SRC_EXTRAPOLATED] == net->n ? "extrapolated" :
			nsrc[SRC_ROOFLINE] == net->n ? "roofline" : "mixed";
	}
	for (long i = 0; dom && i < net->n; i++) {
		const char *w = "";
		for (int d = 0; d < ndev && !*w; d++)
			w = row_domain(dom, (size_t)d * (size_t)net->n +
				       (size_t)i);
		ext += *w != 0;
		if (*w && first < 0) {
			first = i;
			why = w;
		}
	}
	char where[96];
	if (ndev == 1)
		snprintf(where, sizeof where, "on %s", res[0].g->name);
	else
		snprintf(where, sizeof where, "on some of the devices");
	if (ext)
		pn_warn("%s: %ld of %ld rows predicted outside their model's "
			"domain %s, extrapolated (the first, line %ld, %s: "
			"%s); --per-layer names them, --strict refuses them",
			net->path, ext, net->n, where, net->r[first].line,
			pn_layer_name(net->r[first].l.type), why);
}

/* Append g's name to the comma list buf (size n) as the count-th GPU met
 * (the first 8 are named); returns count + 1. */
static int list_gpu(char *buf, size_t n, int count, const pn_gpu *g)
{
	size_t len = strlen(buf);
	if (count < 8 && len < n)
		snprintf(buf + len, n - len, "%s%s", len ? ", " : "", g->name);
	return count + 1;
}

/* --precision: say once on stderr which GPUs have no unit for the mode's
 * GEMMs faster than fp32 (roofline.h's rules fall back to its fp32
 * peak), such as bf16 on a V100. */
static void warn_units(int mode, const pn_gpu *const *dev, int ndev)
{
	pn_prec p = pn_pmode_gemm(mode);
	char list[400] = "";
	int n = 0;
	for (int d = 0; d < ndev && p != PN_FP32; d++)
		if (strcmp(pn_unit_peak(dev[d], PN_DENSE, p).col,
			   "fp32_gflops") == 0)
			n = list_gpu(list, sizeof list, n, dev[d]);
	if (n)
		pn_warn("no %s unit faster than fp32 on %d GPU%s (%s%s): %s "
			"GEMMs predicted at the fp32 peak there",
			pn_prec_name(p), n, n == 1 ? "" : "s", list,
			n > 8 ? ", ..." : "", pn_prec_name(p));
}

/* Say once on stderr which GPUs a model of ms that reads the lane columns
 * (featurize.h: its base or a feature lane_*) meets without fp32_lanes,
 * where FP32 GEMMs run on the FP32 lanes: those columns fall back to the
 * listed peak there, which the model never saw on an SM that lists more
 * lanes than a GEMM keeps busy. */
static void warn_lanes(const pn_modelset *ms, const pn_gpu *const *dev,
		       int ndev)
{
	int uses = 0;
	for (int i = 0; i < ms->n && !uses; i++) {
		const pn_model *m = ms->m[i];
		uses = m->base && strncmp(m->base, "lane_", 5) == 0;
		for (size_t k = 0; k < m->p && !uses; k++)
			uses = strncmp(m->feat[k].name, "lane_", 5) == 0;
	}
	char list[400] = "";
	int n = 0;
	for (int d = 0; d < ndev && uses; d++)
		if (isnan(dev[d]->fp32_lanes) &&
		    strcmp(pn_unit_peak(dev[d], PN_DENSE, PN_FP32).col,
			   "fp32_gflops") == 0)
			n = list_gpu(list, sizeof list, n, dev[d]);
	if (n)
		pn_warn("no fp32_lanes for %d GPU%s (%s%s): FP32 GEMMs "
			"predicted from the listed FP32 peak there, less "
			"trustworthy than the intervals say", n,
			n == 1 ? "" : "s", list, n > 8 ? ", ..." : "");
}

/* The bounds b[0], b[1] of the sum of the rows' times t on GPU d, their
 * factors k (interval.h).  A row of a leave-one-device-out record or a
 * rule adds its bounds, a GPU's errors taken as fully correlated; the
 * rows of a model's own error (k->own: its cross-validation record, on a
 * device it was fitted on) add their deviations from the time within
 * each layer type (the rows of one type in a network are of one region
 * of shapes, which one model misses alike) and in root sum of squares
 * across types (different models, independent errors): on the dev cases
 * of bench/real-steps, 23 of 24 steps inside the 90% interval, against 24
 * with all rows correlated, at two thirds of the width, and 20 with all
 * rows independent. */
static void sum_bounds(const pn_network *net, int d, const double *t,
		       const factors *k, double b[2])
{
	double dn[PN_NLAYERS] = {0}, up[PN_NLAYERS] = {0};
	const double *td = t + (size_t)d * (size_t)net->n;
	b[0] = b[1] = 0;
	for (long i = 0; i < net->n; i++) {
		size_t j = (size_t)d * (size_t)net->n + (size_t)i;
		double v = td[i] * net->r[i].repeat;
		if (!k->own[j]) {
			b[0] += v / k->sum[j];
			b[1] += v * k->sum[j];
			continue;
		}
		int ty = net->r[i].l.type;
		b[0] += v;
		b[1] += v;
		dn[ty] += v - v / k->sum[j];
		up[ty] += v * k->sum[j] - v;
	}
	double sdn = 0, sup = 0;
	for (int ty = 0; ty < PN_NLAYERS; ty++) {
		sdn += dn[ty] * dn[ty];
		sup += up[ty] * up[ty];
	}
	b[0] -= sqrt(sdn);
	b[1] += sqrt(sup);
}

/* The times of the iteration and the epoch on GPU d: t (and tl, the last
 * batch, or NULL) hold every row's time, sp its time by phase at the
 * batch, kf and kl its factors. */
static void sum_device(result *r, const pn_network *net, int d,
		       const double *t, const double *sp, const double *tl,
		       const factors *kf, const factors *kl, double full)
{
	const double *sd = sp + (size_t)d * (size_t)net->n * PN_STEP_NPHASES;
	for (long i = 0; i < net->n; i++)
		for (int p = 0; p < PN_STEP_NPHASES; p++)
			r->ph[p] += sd[i * PN_STEP_NPHASES + p] *
				    net->r[i].repeat;
	r->iter_ms = r->ph[PN_PH_FWD] + r->ph[PN_PH_BWD] + r->ph[PN_PH_ACC] +
		     r->ph[PN_PH_TRAIN] + r->ph[PN_STEP_OPT];
	double last = 0;
	if (tl)
		for (long i = 0; i < net->n; i++)
			last += tl[(size_t)d * (size_t)net->n + i] *
				net->r[i].repeat;
	r->epoch_ms = full * r->iter_ms + last;
	r->cost = r->epoch_ms / 3.6e6 * r->g->price_usd_h;
	r->iterations = full + (tl != NULL);
	r->iter_lo = r->iter_hi = r->epoch_lo = r->epoch_hi = NAN;
	if (!kf->sum)
		return;
	double b[2][2];
	sum_bounds(net, d, t, kf, b[0]);
	r->iter_lo = b[0][0];
	r->iter_hi = b[0][1];
	b[1][0] = b[1][1] = 0;
	if (tl)
		sum_bounds(net, d, tl, kl, b[1]);
	r->epoch_lo = full * b[0][0] + b[1][0];
	r->epoch_hi = full * b[0][1] + b[1][1];
}

/* Every row's time on the ndev GPUs at `batch`, and the epoch of
 * `dataset` samples summed into res[0..ndev) (res[d].g set); t and kf
 * (NULL: freed here) keep the rows' times at the batch. */
static void epoch_times(const pn_network *net, const unsigned char *bymodel,
			modelpath *mp, stepper *st, double batch,
			double dataset, const pn_gpu *const *dev, int ndev,
			result *res, double **t, factors *kf)
{
	double full = floor(dataset / batch), rest = dataset - full * batch;
	size_t nt = (size_t)net->n * (size_t)ndev;
	double *tb = pn_xmalloc(nt * sizeof *tb), *tl = NULL;
	double *sp = pn_xmalloc(nt * PN_STEP_NPHASES * sizeof *sp);
	factors kb = factors_new(nt, mp->level > 0), kl = {NULL, NULL, NULL};
	predict(net, bymodel, mp, st, batch, dev, ndev, tb, sp, &kb);
	for (int d = 0; d < ndev; d++) {
		res[d].g = dev[d];
		res[d].batch = batch;
	}
	if (rest > 0) {
		double *sl = pn_xmalloc(nt * PN_STEP_NPHASES * sizeof *sl);
		tl = pn_xmalloc(nt * sizeof *tl);
		kl = factors_new(nt, mp->level > 0);
		char *at = mp->dom.at;
		unsigned char *swept = st->swept;
		mp->dom.at = NULL;      /* the verdicts are those at the batch */
		st->swept = NULL;       /* and so are the sweeps */
		predict(net, bymodel, mp, st, rest, dev, ndev, tl, sl, &kl);
		mp->dom.at = at;
		st->swept = swept;
		free(sl);
	}
	for (int d = 0; d < ndev; d++)
		sum_device(&res[d], net, d, tb, sp, tl, &kb, &kl, full);
	free(sp);
	free(tl);
	factors_free(&kl);
	if (t) {
		*t = tb;
		*kf = kb;
		return;
	}
	free(tb);
	factors_free(&kb);
}

/* --per-layer: the network at the batch, through network.h's writer, with
 * device source rule time_ms total_ms [time_lo_ms time_hi_ms], the row's
 * memory (memory.h, one instance) and its domain verdict (dom, "-" when
 * inside), then with --framework (ov) the row's overhead_ms; mem[b]: the
 * rows' bytes on backend b. */
static void write_layers(pn_sheet *tb, const pn_network *net,
			 const unsigned char *src, const unsigned char *rule,
			 const char *dom, double batch,
			 const pn_gpu *const *dev, int ndev, const double *t,
			 const factors *kf, pn_mem_row *const *mem,
			 const unsigned char *swept, const stepper *ov)
{
	static const char *const all[] = {
		"device", "source", "rule", "time_ms", "total_ms",
		"time_lo_ms", "time_hi_ms", "weights_bytes", "grads_bytes",
		"state_bytes", "saved_bytes", "workspace_bytes", "domain",
		"overhead_ms"
	};
	enum { NX = 14 };
	const char *extra[NX];
	int nx = 0, xcol[NX], at[NX];     /* at: the column's place in all */
	for (int x = 0; x < NX; x++)
		if ((kf->one || (x != 5 && x != 6)) && (ov || x != 13)) {
			at[nx] = x;
			extra[nx++] = all[x];
		}
	const char **cols = pn_xmalloc((size_t)(net->ncols + nx) *
				       sizeof *cols);
	int ncol = pn_network_columns(net, extra, nx, cols, xcol);
	for (int i = 0; i < ncol; i++)
		pn_sheet_head(tb, cols[i], 0);
	pn_sheet_end(tb);
	for (int d = 0; d < ndev; d++) {
		const pn_mem_row *m = mem[pn_mem_backend(dev[d])];
		for (long i = 0; i < net->n; i++) {
			size_t j = (size_t)d * (size_t)net->n + (size_t)i;
			double v[NX] = {NAN, NAN, NAN, t[j],
				       t[j] * net->r[i].repeat,
				       kf->one ? t[j] / kf->one[j] : NAN,
				       kf->one ? t[j] * kf->one[j] : NAN,
				       m[i].weights, m[i].grads, m[i].state,
				       m[i].saved, fmax(m[i].fwd_work,
							m[i].bwd_work),
				       NAN, ov ? overhead_of(ov, i) : NAN};
			const char *why = row_domain(dom, j);
			const char *s[3] = {dev[d]->name, src_names[
				row_source(src[i], why)], swept && swept[j] ?
				"sweep" : rule_names[rule[i]]};
			for (int c = 0; c < ncol; c++) {
				int x = 0;
				while (x < nx && xcol[x] != c)
					x++;
				char buf[32];
				if (x == nx)
					pn_sheet_text(tb, pn_network_field(net,
						i, batch, c, buf));
				else if (at[x] < 3)
					pn_sheet_text(tb, s[at[x]]);
				else if (at[x] == 12)
					pn_sheet_text(tb, *why ? why : "-");
				else
					pn_sheet_num(tb, v[at[x]]);
			}
			pn_sheet_end(tb);
		}
	}
	free(cols);
}

/* The summary: one row per GPU in rank_results' order. */
static void write_summary(pn_sheet *tb, const result *res, int ndev,
			  int max_batch, int interval, int overhead)
{
	static const char *const head[] = {"rank", "device", "source", 0};
	static const char *const lohi[] = {"iteration_lo_ms", "iteration_hi_ms",
					   "epoch_lo_s", "epoch_hi_s", 0};
	for (int x = 0; head[x]; x++)
		pn_sheet_head(tb, head[x], 0);
	if (max_batch)
		pn_sheet_head(tb, "batch", 0);
	for (int x = 0; sumcols[x]; x++)
		pn_sheet_head(tb, sumcols[x], 0);
	for (int x = 0; interval && lohi[x]; x++)
		pn_sheet_head(tb, lohi[x], 0);
	if (overhead) {
		pn_sheet_head(tb, "page_ms", 0);
		pn_sheet_head(tb, "overhead_ms", 0);
	}
	pn_sheet_end(tb);
	for (int d = 0; d < ndev; d++) {
		const result *r = &res[d];
		pn_sheet_int(tb, r->rank);
		pn_sheet_text(tb, r->g->name);
		pn_sheet_text(tb, r->source);
		if (max_batch)
			pn_sheet_int(tb, r->batch);
		static const int order[] = {PN_PH_FWD, PN_PH_BWD, PN_PH_ACC,
					    PN_STEP_OPT, PN_PH_TRAIN};
		for (int p = 0; p < PN_STEP_NPHASES; p++)
			pn_sheet_num(tb, r->ph[order[p]]);
		pn_sheet_num(tb, r->iter_ms);
		pn_sheet_int(tb, r->iterations);
		pn_sheet_num(tb, r->epoch_ms / 1e3);
		pn_sheet_num(tb, r->g->price_usd_h);
		pn_sheet_num(tb, r->cost);
		pn_sheet_int(tb, r->cost_rank ? r->cost_rank : NAN);
		pn_sheet_num(tb, r->peak / GIB);
		pn_sheet_num(tb, r->g->mem_gb);
		pn_sheet_text(tb, r->fits ? "yes" : "no");
		if (interval) {
			pn_sheet_num(tb, r->iter_lo);
			pn_sheet_num(tb, r->iter_hi);
			pn_sheet_num(tb, r->epoch_lo / 1e3);
			pn_sheet_num(tb, r->epoch_hi / 1e3);
		}
		if (overhead) {
			pn_sheet_num(tb, r->page);
			pn_sheet_num(tb, r->overhead);
		}
		pn_sheet_end(tb);
	}
}

/* The batch and the epoch's samples; dies when a traced network cannot
 * run them. */
static void batches(options *o, const pn_network *net)
{
	if (net->traced && o->max_batch)
		pn_die_at(PN_EXIT_DATA, o->path, 0, "the network is traced at "
			  "batch %ld: --max-batch cannot rescale it (give a "
			  "network of one sample)", net->traced);
	if (net->traced) {
		if (o->batch && o->batch != net->traced)
			pn_die_at(PN_EXIT_DATA, o->path, 0, "the network is "
				  "traced at batch %ld: it cannot run at "
				  "--batch %g", net->traced, o->batch);
		o->batch = (double)net->traced;
	}
	if (o->max_batch)
		return;
	if (!o->batch)
		o->batch = 1;
	if (!o->dataset)
		o->dataset = o->batch;
	double rest = o->dataset - floor(o->dataset / o->batch) * o->batch;
	if (net->traced && rest > 0)
		pn_die_at(PN_EXIT_DATA, o->path, 0, "the network is traced at "
			  "batch %ld: it cannot run the last batch of %g "
			  "samples (give a --dataset-size that is a multiple "
			  "of %ld)", net->traced, rest, net->traced);
}

/* The step's memory at the batch on every GPU, and whether it fits; rows
 * (or NULL) get each backend's per-row bytes. */
static void memory(const options *o, const pn_network *net, result *res,
		   int ndev, pn_mem_row **rows)
{
	pn_mem_step s[PN_MEM_NBACKENDS];
	for (int b = 0; b < PN_MEM_NBACKENDS; b++) {
		pn_mem_opts mo = o->mem;
		mo.backend = b;
		pn_mem_step_of(net, o->batch, &mo, &s[b], rows ? rows[b] : NULL);
	}
	for (int d = 0; d < ndev; d++) {
		const pn_mem_step *m = &s[pn_mem_backend(res[d].g)];
		res[d].peak = m->peak;
		memcpy(res[d].fresh, m->fresh, sizeof m->fresh);
		res[d].fits = res[d].peak <= res[d].g->mem_gb * GIB;
	}
}

/* --max-batch: on each GPU, the largest batch that fits and the epoch at
 * it (a GPU none fits: no times). */
static void max_batches(const options *o, const pn_network *net,
			const unsigned char *bymodel, modelpath *mp,
			stepper *st, const pn_gpu *const *dev, int ndev,
			result *res)
{
	for (int d = 0; d < ndev; d++) {
		pn_mem_opts mo = o->mem;
		mo.backend = pn_mem_backend(dev[d]);
		double b = pn_mem_max_batch(net, &mo, dev[d]->mem_gb * GIB);
		if (mp->dom.all)
			mp->dom.at = mp->dom.all + (size_t)d * (size_t)net->n *
				     PN_DOMAIN_WHY;
		if (b > 0) {
			epoch_times(net, bymodel, mp, st, b, o->dataset ?
				    o->dataset : b, &dev[d], 1, &res[d], NULL,
				    NULL);
			pn_mem_step s;
			pn_mem_step_of(net, b, &mo, &s, NULL);
			res[d].peak = s.peak;
			memcpy(res[d].fresh, s.fresh, sizeof s.fresh);
			res[d].fits = 1;
			continue;
		}
		result *r = &res[d];
		r->g = dev[d];
		for (int p = 0; p < PN_STEP_NPHASES; p++)
			r->ph[p] = NAN;
		r->iter_ms = r->epoch_ms = r->cost = r->iterations = NAN;
		r->iter_lo = r->iter_hi = r->epoch_lo = r->epoch_hi = NAN;
		pn_mem_step s;
		pn_mem_step_of(net, 1, &mo, &s, NULL);
		r->peak = s.peak;
	}
}

/* The pages a training step touches afresh (framework.h's step.page) on
 * result r (its fresh bytes, from memory() or max_batches()), ms into
 * pg[] (PN_STEP_*; 0 without the cost): the saved activations' in fwd_ms
 * and the gradients' in bwd_ms, or in train_ms when the network has no
 * rows of that phase (whole train rows), the optimizer's temporaries in
 * opt_ms.  The fresh bytes are 0 without training rows.  On a GPU none:
 * its step's tensors are device memory, which a framework's caching
 * allocator keeps from step to step (no page of the host is touched). */
static void page_costs(const pn_framework *fw, const pn_network *net,
		       const result *r, double *pg)
{
	double ms = pn_framework_cost(fw, "step.page") / 4096 / 1e3;
	if (!(ms > 0) || !pn_gpu_is_cpu(r->g))
		return;
	pg[has_phase(net, PN_PH_FWD) ? PN_PH_FWD : PN_PH_TRAIN] +=
		r->fresh[PN_MEM_AT_FWD] * ms;
	pg[has_phase(net, PN_PH_BWD) ? PN_PH_BWD : PN_PH_TRAIN] +=
		r->fresh[PN_MEM_AT_BWD] * ms;
	pg[PN_STEP_OPT] += r->fresh[PN_MEM_AT_OPT] * ms;
}

/* --framework: each result's overhead per iteration (the rows', repeats
 * counted, the step's own cost, framework.h's `step`, in opt_ms when the
 * network trains, and its pages, step.page, in the phases that touch
 * them) and the step's costs added to its times. */
static void overhead_sum(const pn_framework *fw, const stepper *st,
			 const pn_network *net, result *res, int ndev)
{
	double rows = 0;
	double once = overhead_trains(net) ? pn_framework_cost(fw, "step") /
					     1e3 : 0;
	for (long i = 0; i < net->n; i++)
		rows += overhead_of(st, i) * net->r[i].repeat;
	for (int d = 0; d < ndev; d++) {
		result *r = &res[d];
		double pg[PN_STEP_NPHASES] = {0}, step = once;
		page_costs(fw, net, r, pg);
		r->page = 0;
		for (int p = 0; p < PN_STEP_NPHASES; p++) {
			r->ph[p] += pg[p];
			step += pg[p];
			r->page += pg[p];
		}
		r->overhead = rows + step;
		r->ph[PN_STEP_OPT] += once;
		r->iter_ms += step;
		r->epoch_ms += r->iterations * step;
		r->iter_lo += step;
		r->iter_hi += step;
		r->epoch_lo += r->iterations * step;
		r->epoch_hi += r->iterations * step;
		r->cost = r->epoch_ms / 3.6e6 * r->g->price_usd_h;
	}
}

/* Where fresh pages (step.page) are more than this share of a CPU step,
 * pn-sum says so: pn's count of them was 0.1-3.8x the faults PyTorch's
 * steps took (bench/real-steps), so such a share can move the step by
 * about as much as itself. */
#define PAGE_WARN_SHARE 0.1

/* Warn of the CPU results whose fresh pages are above PAGE_WARN_SHARE of
 * the iteration: the largest share, and how many results. */
static void warn_pages(const result *res, int ndev)
{
	int n = 0, w = -1;
	double most = 0;
	for (int d = 0; d < ndev; d++) {
		double share = res[d].page / res[d].iter_ms;
		if (!(share > PAGE_WARN_SHARE))
			continue;
		n++;
		if (share > most) {
			most = share;
			w = d;
		}
	}
	if (!n)
		return;
	char others[64] = "";
	if (n > 1)
		snprintf(others, sizeof others, ", above %.0f%% on %d more",
			 100 * PAGE_WARN_SHARE, n - 1);
	pn_warn("fresh pages (step.page) are %.0f%% of the step on %s "
		"(page_ms %.3g of %.3g ms%s): the least certain part of a "
		"CPU step, whose page count was 0.1-3.8x PyTorch's on "
		"bench/real-steps (pn-sum(1), FRAMEWORK OVERHEAD)",
		100 * most, res[w].g->name,
		res[w].page, res[w].iter_ms, others);
}

/* The stepper of the options (--optimizer, --momentum, mixed precision),
 * models and framework profile (NULL: none): each row's rule, and the
 * parts' model path when some row has parts. */
static void step_init(stepper *st, const options *o, const pn_modelset *ms,
		      const pn_network *net, const pn_framework *fw)
{
	memset(st, 0, sizeof *st);
	for (int t = 0; fw && t < PN_NLAYERS; t++) {
		char name[64];
		snprintf(name, sizeof name, "%s.fwd.step",
			 pn_layer_name((pn_layer_type)t));
		st->cells[t] = !pn_step_splits((pn_layer_type)t) &&
			       pn_framework_cost(fw, name) >= 0;
	}
	st->opt = o->mem.optimizer;
	st->momentum = o->mem.momentum;
	st->amp = o->mem.amp;
	st->master = o->mem.amp || o->mem.master;
	st->ms = ms;
	st->level = o->level;
	st->rule = step_rules(st, net);
	step_weights(st, net);
	int parts = 0;
	for (long i = 0; i < net->n; i++)
		parts |= st->rule[i] != RULE_WHOLE;
	if (ms && parts)
		part_init(&st->pp, ms);
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
	if (o.pmode >= 0) {
		warn_units(o.pmode, dev, ndev);
		pn_precision_apply(&net, o.pmode);
		o.mem.amp = pn_pmode_amp(o.pmode) >= 0;
	}
	batches(&o, &net);
	pn_modelset *ms = o.models ? pn_modelset_load(o.models) : NULL;
	if (ms) {
		pn_modelset_warn_unranged(ms, o.models);
		warn_lanes(ms, dev, ndev);
	}
	pn_framework *fw = o.framework ? pn_framework_load(o.framework) : NULL;
	stepper st;
	step_init(&st, &o, ms, &net, fw);
	if (fw)
		st.overhead = overhead_rows(fw, &st, &net);
	unsigned char *bymodel = which_rows(&o, ms, dev, ndev, &net, &st);
	unsigned char *src = sources(ms, &net, bymodel);
	step_sources(&st, &net, bymodel, src);
	warn_precisions(ms, &net, src);
	modelpath mp = {0};
	mp.level = o.level;
	if (ms) {
		model_init(&mp, ms, &net);
		mp.dom = (domains){&net, NULL, pn_xcalloc((size_t)net.n *
			(size_t)ndev, PN_DOMAIN_WHY), NULL, o.strict, 0};
		mp.dom.at = mp.dom.all;
		st.dom = &mp.dom;
	}

	/* Predict every row on every GPU, at the batch and the last batch. */
	result *res = pn_xcalloc((size_t)ndev, sizeof *res);
	double *t = NULL;
	factors kf = {NULL, NULL, NULL};
	pn_mem_row *rows[PN_MEM_NBACKENDS] = {NULL};
	if (o.max_batch) {
		max_batches(&o, &net, bymodel, &mp, &st, dev, ndev, res);
	} else {
		if (o.per_layer)
			st.swept = pn_xcalloc((size_t)net.n * (size_t)ndev, 1);
		epoch_times(&net, bymodel, &mp, &st, o.batch, o.dataset, dev,
			    ndev, res, &t, &kf);
		for (int b = 0; o.per_layer && b < PN_MEM_NBACKENDS; b++)
			rows[b] = pn_xmalloc((size_t)net.n * sizeof *rows[b]);
		memory(&o, &net, res, ndev, o.per_layer ? rows : NULL);
	}
	if (fw) {
		overhead_sum(fw, &st, &net, res, ndev);
		warn_pages(res, ndev);
	}

	device_sources(&net, src, mp.dom.all, res, ndev);
	FILE *f = pn_output_open(o.out);
	pn_sheet *tb = pn_sheet_new(f, o.fmt);
	rank_results(res, ndev);
	if (o.per_layer)
		write_layers(tb, &net, src, st.rule, mp.dom.all, o.batch, dev,
			     ndev, t, &kf, rows, st.swept,
			     st.overhead ? &st : NULL);
	else
		write_summary(tb, res, ndev, o.max_batch, o.level > 0,
			      st.overhead != NULL);
	if (o.plotfile)
		plot(o.plotfile, o.path, res, ndev, o.max_batch ? 0 : o.batch,
		     o.dataset, o.level);
	pn_sheet_free(tb);
	pn_output_close(f);

	pn_network_free(&net);
	model_free(&mp);
	part_free(&st.pp);
	free(st.rule);
	free(st.swept);
	free(mp.dom.all);
	free(st.overhead);
	pn_framework_free(fw);
	free(bymodel);
	free(src);
	factors_free(&kf);
	for (int b = 0; b < PN_MEM_NBACKENDS; b++)
		free(rows[b]);
	pn_modelset_free(ms);
	free(t);
	free(res);
	free(dev);
	pn_gpus_free(gpus);
	return 0;
}
