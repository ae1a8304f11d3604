/* fam_xgb.c - gradient-boosted trees through XGBoost's C API (family "xgb").
 *
 * Two modes (--param mode=...):
 *   boost  (default) squared-error boosting with the hist tree method, one
 *          round at a time; with --val, stops after `patience` rounds
 *          without a lower validation RMSE and keeps the best rounds.
 *   rf     XGBoost's random forest: one round of `trees` parallel trees on
 *          row subsamples without replacement, eta 1, no leaf penalty;
 *          for comparison with the rf family.  The trees grow in `parts`
 *          boosters (default 2), part i with trees/parts of them (the
 *          first trees % parts parts one more) and the seed + i, on
 *          threads of their own: XGBoost grows one tree at a time, its
 *          threads meeting at every node, while the trees of a forest
 *          need nothing from each other.  The prediction is the mean of
 *          the parts' weighted by their trees, which is the mean of all
 *          the trees, as one booster's would be (XGBoost divides a
 *          forest's learning rate by its tree count).
 *
 * Parameters       boost   rf     XGBoost name
 *   rounds           600    1     boosting rounds
 *   trees              1  100     num_parallel_tree
 *   depth              8   12     max_depth
 *   eta              0.1    1     eta
 *   subsample          1  0.632   subsample
 *   colsample          1    1     colsample_bytree
 *   colsample_bynode   1  0.8     colsample_bynode
 *   min_child_weight   1    1     min_child_weight
 *   lambda             1    0     lambda (L2 on leaf weights)
 *   bins             256  256     max_bin
 *   patience          20    -     early stopping with --val (0: off)
 *   threads            2    2     nthread (rf: shared by the parts)
 *   parts              1    2     boosters, each on min(parts, threads)
 *                                 threads' share (rf only; 1 to 64, at
 *                                 most trees)
 * base_score is the training mean; seed is the --seed (its low 31 bits).
 * rf mode ignores --val.  A seed gives a byte-identical model for any
 * thread count (checked with XGBoost 1.7.4; the hist histograms are summed
 * in a fixed order), and with parts=1 the predictions equal
 * xgboost-Python's with the same parameters.
 *
 * Body: the booster in XGBoost's UBJSON format, base64 in lines of 76
 * characters:
 *   format ubj
 *   bytes N            decoded length, checked on load
 *   crc32 XXXXXXXX     CRC-32 (zlib's) of the N bytes, 8 hex digits
 *   b64 <76 characters>
 *   ...
 * A model of K > 1 parts has the line "parts K" after "format ubj", then
 * for each part "trees T" (its tree count, checked against the booster)
 * and the bytes, crc32 and b64 lines of its booster.
 *
 * libxgboost trusts the lengths inside a UBJSON body and the node indices
 * of its trees (a wrong one reads or writes outside its buffers), so only a
 * body that passes every check below reaches it; each failure is "corrupt
 * model: xgb: ...":
 *   - the length, the base64 and the CRC-32 (a body without the crc32
 *     line, from an older pn, is refused: refit the model);
 *   - the UBJSON itself (ubj.h: every length within the body);
 *   - the booster: what pn-fit writes, a "gbtree" of "reg:squarederror"
 *     with one output, no categorical feature and no feature names, on p
 *     features (the model file's count); every tree well formed: its
 *     arrays as long as its node count, the nodes a binary tree rooted at
 *     node 0 (every child after its parent, every node but the root the
 *     child of exactly one node, its parent recorded), every split on a
 *     feature below p with a finite threshold.
 * Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (a fuzzer), a CRC
 * mismatch is ignored so that the checks after it are reached.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>
#include <zlib.h>

#include "err.h"
#include "metrics.h"
#include "model.h"
#include "ubj.h"

#define PRED_BATCH 65536
#define B64_LINE 76

#define MAX_PARTS 64

/* parts boosters; part i holds trees[i] trees (read only with parts > 1) */
typedef struct {
	BoosterHandle h[MAX_PARTS];
	long trees[MAX_PARTS];
	int parts;
	size_t p;
} xgb;

/* A string parameter; pn_params has only numeric getters. */
static const char *param_str(pn_params *p, const char *name, const char *dflt)
{
	const char *v = dflt;
	for (int i = 0; i < p->n; i++)
		if (strcmp(p->name[i], name) == 0) {
			p->used[i] = 1;
			v = p->value[i];
		}
	return v;
}

/* XGBoost's last error: its first line, without the "[hh:mm:ss] " stamp
 * (the rest is a stack trace). */
static const char *xgb_err(void)
{
	static char buf[200];
	const char *s = XGBGetLastError();
	const char *e = s[0] == '[' ? strstr(s, "] ") : NULL;
	if (e)
		s = e + 2;
	size_t n = strcspn(s, "\n");
	if (n >= sizeof buf)
		n = sizeof buf - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

static void xgb_free(void *v)
{
	xgb *m = v;
	if (!m)
		return;
	for (int i = 0; i < MAX_PARTS; i++)
		if (m->h[i])
			XGBoosterFree(m->h[i]);
	free(m);
}

/* In fit: on failure, the call and XGBoost's message go to err. */
#define XCHECK(call)                                                     \
	do {                                                             \
		if ((call) != 0) {                                       \
			snprintf(err, 256, "xgb: %s: %s", #call,         \
				 xgb_err());                     \
			goto fail;                                       \
		}                                                        \
	} while (0)

static int set(BoosterHandle h, const char *name, double v, char *err)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%.17g", v);
	if (XGBoosterSetParam(h, name, buf) != 0) {
		snprintf(err, 256, "xgb: cannot set %s=%s: %s", name, buf,
			 xgb_err());
		return -1;
	}
	return 0;
}

static float *to_float(const double *x, size_t k)
{
	float *f = pn_xmalloc((k ? k : 1) * sizeof(float));
	for (size_t i = 0; i < k; i++)
		f[i] = (float)x[i];
	return f;
}

/* The DMatrix of d, built on threads threads (XGDMatrixCreateFromMat uses
 * one; XGDMatrixCreateFromDense on the doubles themselves was slower). */
static int make_dmatrix(const pn_data *d, long threads, DMatrixHandle *out,
			char *err)
{
	float *x = to_float(d->x, d->n * d->p), *y = to_float(d->y, d->n);
	int rc = -1;
	*out = NULL;
	XCHECK(XGDMatrixCreateFromMat_omp(x, d->n, d->p, NAN, out,
					  (int)threads));
	XCHECK(XGDMatrixSetFloatInfo(*out, "label", y, d->n));
	rc = 0;
fail:
	free(x);
	free(y);
	return rc;
}

/* One batch, the whole of d, for XGBoost's data iterator. */
typedef struct {
	DMatrixHandle proxy;
	const double *x;
	const float *y;
	size_t n, p;
	int done;
} batch;

static void batch_reset(DataIterHandle h)
{
	((batch *)h)->done = 0;
}

static int batch_next(DataIterHandle h)
{
	batch *b = h;
	if (b->done)
		return 0;
	char iface[256];
	snprintf(iface, sizeof iface, "{\"data\": [%llu, true], \"shape\": "
		 "[%zu, %zu], \"typestr\": \"<f8\", \"version\": 3}",
		 (unsigned long long)(uintptr_t)b->x, b->n, b->p);
	if (XGProxyDMatrixSetDataDense(b->proxy, iface) != 0 ||
	    XGDMatrixSetFloatInfo(b->proxy, "label", b->y, b->n) != 0)
		return -1;
	b->done = 1;
	return 1;
}

/* The training matrix of the hist method as a quantile DMatrix: XGBoost
 * sketches and bins the floats as it reads them, without the CSR copy of
 * a plain DMatrix and without binning that copy again at the first
 * round (the same cuts, the same model). */
static int make_qdmatrix(const pn_data *d, long threads, long bins,
			 DMatrixHandle ref, DMatrixHandle *out, char *err)
{
	batch b = {NULL, d->x, to_float(d->y, d->n), d->n, d->p, 0};
	int rc = -1;
	char config[128];
	*out = NULL;
	snprintf(config, sizeof config, "{\"missing\": NaN, \"nthread\": %ld, "
		 "\"max_bin\": %ld}", threads, bins);
	XCHECK(XGProxyDMatrixCreate(&b.proxy));
	XCHECK(XGQuantileDMatrixCreateFromCallback(&b, b.proxy, ref,
		batch_reset, batch_next, config, out));
	rc = 0;
fail:
	if (b.proxy)
		XGDMatrixFree(b.proxy);
	free((void *)b.y);
	return rc;
}

/* The parameters of a fit (fam_xgb.c's table at the top). */
typedef struct {
	int rf;
	long rounds, trees, depth, bins, patience, threads, parts;
	double eta, subsample, colsample, bynode, mcw, lambda;
} cfg;

/* cfg from par (pn-fit's --param): a bad value is a usage error. */
static void read_cfg(pn_params *par, cfg *c)
{
	const char *mode = param_str(par, "mode", "boost");
	c->rf = strcmp(mode, "rf") == 0;
	if (!c->rf && strcmp(mode, "boost") != 0)
		pn_usage_error("xgb: invalid --param mode=%s: want boost or "
			       "rf", mode);
	int rf = c->rf;
	c->rounds = pn_params_int(par, "rounds", rf ? 1 : 600);
	c->trees = pn_params_int(par, "trees", rf ? 100 : 1);
	c->depth = pn_params_int(par, "depth", rf ? 12 : 8);
	c->eta = pn_params_num(par, "eta", rf ? 1 : 0.1);
	c->subsample = pn_params_num(par, "subsample", rf ? 0.632 : 1);
	c->colsample = pn_params_num(par, "colsample", 1);
	c->bynode = pn_params_num(par, "colsample_bynode", rf ? 0.8 : 1);
	c->mcw = pn_params_num(par, "min_child_weight", 1);
	c->lambda = pn_params_num(par, "lambda", rf ? 0 : 1);
	c->bins = pn_params_int(par, "bins", 256);
	c->patience = pn_params_int(par, "patience", 20);
	c->threads = pn_params_int(par, "threads", 2);
	long dparts = rf && c->rounds == 1 ? (c->trees < 2 ? c->trees : 2) : 1;
	c->parts = pn_params_int(par, "parts", dparts);
	const char *bad = NULL;
	if (c->rounds < 1 || c->rounds > 1000000)
		bad = "rounds must be 1 to 1000000";
	else if (c->trees < 1 || c->trees > 100000)
		bad = "trees must be 1 to 100000";
	else if (c->depth < 1 || c->depth > 63)
		bad = "depth must be 1 to 63";
	else if (!(c->eta > 0 && c->eta <= 1))
		bad = "eta must be above 0 and at most 1";
	else if (!(c->subsample > 0 && c->subsample <= 1))
		bad = "subsample must be above 0 and at most 1";
	else if (!(c->colsample > 0 && c->colsample <= 1))
		bad = "colsample must be above 0 and at most 1";
	else if (!(c->bynode > 0 && c->bynode <= 1))
		bad = "colsample_bynode must be above 0 and at most 1";
	else if (!(c->mcw >= 0 && c->mcw < 1e300))
		bad = "min_child_weight must be 0 or more";
	else if (!(c->lambda >= 0 && c->lambda < 1e300))
		bad = "lambda must be 0 or more";
	else if (c->bins < 2 || c->bins > 65536)
		bad = "bins must be 2 to 65536";
	else if (c->patience < 0)
		bad = "patience must be 0 or more";
	else if (c->threads < 1 || c->threads > 1024)
		bad = "threads must be 1 to 1024";
	else if (c->parts > 1 && (!rf || c->rounds != 1))
		bad = "parts above 1 want mode=rf and rounds=1";
	else if (c->parts < 1 || c->parts > MAX_PARTS ||
		 c->parts > c->trees)
		bad = "parts must be 1 to 64 and at most trees";
	if (bad)
		pn_usage_error("xgb: invalid --param: %s", bad);
}

/* A booster on the n matrices dm with c's parameters, trees parallel
 * trees, the seed's low 31 bits and nthread threads; NULL and a message
 * in err on failure. */
static BoosterHandle booster(DMatrixHandle *dm, int n, const cfg *c,
			     long trees, uint64_t seed, long nthread,
			     double mean, char *err)
{
	BoosterHandle h = NULL;
	char sseed[32];
	snprintf(sseed, sizeof sseed, "%llu",
		 (unsigned long long)(seed & 0x7fffffff));
	XCHECK(XGBoosterCreate(dm, (bst_ulong)n, &h));
	XCHECK(XGBoosterSetParam(h, "validate_parameters", "1"));
	XCHECK(XGBoosterSetParam(h, "objective", "reg:squarederror"));
	XCHECK(XGBoosterSetParam(h, "tree_method", "hist"));
	XCHECK(XGBoosterSetParam(h, "seed", sseed));
	if (set(h, "base_score", mean, err) ||
	    set(h, "num_parallel_tree", trees, err) ||
	    set(h, "max_depth", c->depth, err) ||
	    set(h, "eta", c->eta, err) ||
	    set(h, "subsample", c->subsample, err) ||
	    set(h, "colsample_bytree", c->colsample, err) ||
	    set(h, "colsample_bynode", c->bynode, err) ||
	    set(h, "min_child_weight", c->mcw, err) ||
	    set(h, "lambda", c->lambda, err) ||
	    set(h, "max_bin", c->bins, err) ||
	    set(h, "nthread", nthread, err))
		goto fail;
	return h;
fail:
	if (h)
		XGBoosterFree(h);
	return NULL;
}

/* The rounds of one booster on dm[0], cut by the validation rows dm[1]
 * (use_val) as the table at the top says; 0, or -1 and a message. */
static int boost(xgb *m, DMatrixHandle *dm, int use_val, const pn_data *val,
		 const cfg *c, void (*progress)(double, double), char *err)
{
	BoosterHandle best = NULL;
	double *vpred = use_val ? pn_xmalloc(val->n * sizeof *vpred) : NULL;
	double best_rmse = INFINITY;
	long best_round = -1;
	int rc = -1;
	for (long it = 0; it < c->rounds; it++) {
		XCHECK(XGBoosterUpdateOneIter(m->h[0], (int)it, dm[0]));
		if (use_val) {
			bst_ulong len;
			const float *pred;
			XCHECK(XGBoosterPredict(m->h[0], dm[1], 0, 0, 0, &len,
						&pred));
			if (len != val->n) {
				snprintf(err, 256, "xgb: %llu predictions for "
					 "%zu validation rows",
					 (unsigned long long)len, val->n);
				goto fail;
			}
			for (size_t i = 0; i < val->n; i++)
				vpred[i] = pred[i];
			double e = pn_rmse(vpred, val->y, val->n);
			if (e < best_rmse) {
				best_rmse = e;
				best_round = it;
			} else if (c->patience && it - best_round >= c->patience) {
				if (progress)
					progress(c->rounds, c->rounds);
				break;
			}
		}
		if (progress)
			progress(it + 1, c->rounds);
	}
	if (use_val && best_round >= 0) {
		int done;
		XCHECK(XGBoosterBoostedRounds(m->h[0], &done));
		if (best_round + 1 < done) {
			XCHECK(XGBoosterSlice(m->h[0], 0, (int)best_round + 1,
					      1, &best));
			XGBoosterFree(m->h[0]);
			m->h[0] = best;
		}
	}
	rc = 0;
fail:
	free(vpred);
	return rc;
}

/* The parts of a forest, grown by workers that take the next part until
 * none is left; a part's booster is made, trained and left in m by the
 * thread that grows it (XGBoost finds a booster's training matrix only
 * from the thread that made it). */
typedef struct {
	xgb *m;
	DMatrixHandle *dm;
	const cfg *c;
	uint64_t seed;
	long nthread;
	double mean;
	pthread_mutex_t mu;
	int next, done, failed;
	void (*progress)(double, double);
	char err[256];
} forest;

static void *forest_worker(void *arg)
{
	forest *f = arg;
	char err[256] = "";
	for (;;) {
		pthread_mutex_lock(&f->mu);
		int i = f->failed ? f->m->parts : f->next++;
		pthread_mutex_unlock(&f->mu);
		if (i >= f->m->parts)
			return NULL;
		BoosterHandle h = booster(&f->dm[i], 1, f->c, f->m->trees[i],
					  f->seed + (uint64_t)i, f->nthread,
					  f->mean, err);
		if (h && XGBoosterUpdateOneIter(h, 0, f->dm[i]) != 0)
			snprintf(err, sizeof err, "xgb: part %d of %d: %s",
				 i + 1, f->m->parts, xgb_err());
		pthread_mutex_lock(&f->mu);
		f->m->h[i] = h;
		if (err[0] && !f->failed) {
			f->failed = 1;
			memcpy(f->err, err, sizeof err);
		}
		f->done++;
		if (!f->failed && f->progress)
			f->progress(f->done, f->m->parts);
		pthread_mutex_unlock(&f->mu);
	}
}

/* Grow the parts of m on min(parts, threads) workers; 0, or -1 and a
 * message in err. */
static int grow_forest(xgb *m, DMatrixHandle *dm, const cfg *c,
		       uint64_t seed, double mean,
		       void (*progress)(double, double), char *err)
{
	long workers = c->parts < c->threads ? c->parts : c->threads;
	forest f = { .m = m, .dm = dm, .c = c, .seed = seed,
		     .nthread = c->threads / workers, .mean = mean,
		     .progress = progress };
	pthread_t t[MAX_PARTS];
	long started = 0;
	pthread_mutex_init(&f.mu, NULL);
	while (started + 1 < workers &&
	       pthread_create(&t[started], NULL, forest_worker, &f) == 0)
		started++;
	forest_worker(&f);
	for (long i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&f.mu);
	if (f.failed)
		snprintf(err, 256, "%s", f.err);
	return f.failed ? -1 : 0;
}

static void *xgb_fit(const pn_data *d, const pn_data *val, pn_params *par,
		     uint64_t seed, void (*progress)(double, double), char *err)
{
	cfg c;
	read_cfg(par, &c);
	if (d->n < 1) {
		snprintf(err, 256, "xgb: no training rows");
		return NULL;
	}
	int use_val = val && val->n > 0 && !c.rf;
	if (use_val && val->p != d->p) {
		snprintf(err, 256, "xgb: validation has %zu features, training "
			 "has %zu", val->p, d->p);
		return NULL;
	}

	xgb *m = pn_xcalloc(1, sizeof *m);
	m->p = d->p;
	m->parts = (int)c.parts;
	m->trees[0] = c.trees;
	DMatrixHandle dm[MAX_PARTS + 1] = { NULL };
	double mean = 0;
	for (size_t i = 0; i < d->n; i++)
		mean += d->y[i];
	mean /= d->n;
	if (m->parts == 1) {
		if (make_qdmatrix(d, c.threads, c.bins, NULL, &dm[0], err) ||
		    (use_val && make_dmatrix(val, c.threads, &dm[1], err)) ||
		    !(m->h[0] = booster(dm, use_val ? 2 : 1, &c, c.trees, seed,
					c.threads, mean, err)) ||
		    boost(m, dm, use_val, val, &c, progress, err) < 0)
			goto fail;
	} else {
		/* a matrix per part, each part's booster trained on its own;
		 * the others reuse the first one's cuts */
		for (int i = 0; i < m->parts; i++) {
			m->trees[i] = c.trees / c.parts + (i < c.trees % c.parts);
			if (make_qdmatrix(d, c.threads, c.bins, i ? dm[0] : NULL,
					  &dm[i], err))
				goto fail;
		}
		if (grow_forest(m, dm, &c, seed, mean, progress, err) < 0)
			goto fail;
	}
	for (int i = 0; i <= MAX_PARTS; i++)
		if (dm[i])
			XGDMatrixFree(dm[i]);
	return m;
fail:
	for (int i = 0; i <= MAX_PARTS; i++)
		if (dm[i])
			XGDMatrixFree(dm[i]);
	xgb_free(m);
	return NULL;
}

/* out[i] = w x (booster h's prediction of row i) + (add ? out[i] : 0) */
static void predict_part(BoosterHandle h, const double *x, size_t n,
			 size_t p, double w, int add, double *out)
{
	static const char config[] = "{\"type\": 0, \"training\": false, "
		"\"iteration_begin\": 0, \"iteration_end\": 0, "
		"\"strict_shape\": false, \"missing\": NaN, \"cache_id\": 0}";
	for (size_t s = 0; s < n; s += PRED_BATCH) {
		size_t k = n - s < PRED_BATCH ? n - s : PRED_BATCH;
		char arr[256];
		snprintf(arr, sizeof arr, "{\"data\": [%llu, true], "
			 "\"shape\": [%zu, %zu], \"typestr\": \"<f8\", "
			 "\"version\": 3}",
			 (unsigned long long)(uintptr_t)(x + s * p), k, p);
		const bst_ulong *shape;
		bst_ulong dim;
		const float *res;
		if (XGBoosterPredictFromDense(h, arr, config, NULL, &shape,
					      &dim, &res) != 0)
			pn_die(PN_EXIT_DATA, "xgb: prediction failed: %s",
			       xgb_err());
		bst_ulong tot = 1;
		for (bst_ulong i = 0; i < dim; i++)
			tot *= shape[i];
		if (tot != k)
			pn_die(PN_EXIT_DATA, "xgb: %llu predictions for %zu "
			       "rows", (unsigned long long)tot, k);
		for (size_t i = 0; i < k; i++)
			out[s + i] = w * res[i] + (add ? out[s + i] : 0);
	}
}

/* One booster's prediction; parts' mean weighted by their trees. */
static void xgb_predict(const void *v, const double *x, size_t n, size_t p,
			double *out)
{
	const xgb *m = v;
	if (p != m->p)
		PN_BUG("xgb: feature count differs from the model");
	if (m->parts == 1) {
		predict_part(m->h[0], x, n, p, 1, 0, out);
		return;
	}
	long all = 0;
	for (int i = 0; i < m->parts; i++)
		all += m->trees[i];
	for (int i = 0; i < m->parts; i++)
		predict_part(m->h[i], x, n, p, (double)m->trees[i] / all, i,
			     out);
}

/* ---- checking a booster before XGBoost reads it ------------------------ */

static unsigned long crc_of(const unsigned char *b, size_t n)
{
	uLong c = crc32(0L, Z_NULL, 0);
	for (size_t s = 0; s < n;) {
		uInt k = n - s > (1u << 30) ? 1u << 30 : (uInt)(n - s);
		c = crc32(c, b + s, k);
		s += k;
	}
	return (unsigned long)c;
}

/* Member key of object o, of the given UBJSON type ('\0': any); NULL with
 * a message in err when it is missing or of another type. */
static const pn_ubj *member(const pn_ubj_doc *d, const pn_ubj *o,
			    const char *key, char type, char *err)
{
	const pn_ubj *v = pn_ubj_get(d, o, key);
	if (!v || (type && v->type != type)) {
		snprintf(err, 256, "xgb: booster: '%s' %s", key,
			 v ? "of the wrong type" : "missing");
		return NULL;
	}
	return v;
}

/* A count that XGBoost keeps as a string: decimal digits, no sign, no
 * leading zero, at most INT32_MAX; -1 otherwise. */
static long str_count(const pn_ubj *v)
{
	if (!v || v->type != 'S' || v->n < 1 || v->n > 10 ||
	    (v->data[0] == '0' && v->n > 1))
		return -1;
	long x = 0;
	for (size_t i = 0; i < v->n; i++) {
		if (v->data[i] < '0' || v->data[i] > '9')
			return -1;
		x = 10 * x + (v->data[i] - '0');
	}
	return x <= INT32_MAX ? x : -1;
}

/* Member key of o is the count want (want < 0: any count); returns it. */
static long count_is(const pn_ubj_doc *d, const pn_ubj *o, const char *key,
		     long want, char *err)
{
	const pn_ubj *v = member(d, o, key, 'S', err);
	if (!v)
		return -1;
	long x = str_count(v);
	if (x < 0 || (want >= 0 && x != want)) {
		char w[24] = "a count";
		if (want >= 0)
			snprintf(w, sizeof w, "%ld", want);
		snprintf(err, 256, "xgb: booster: '%s' is '%.*s', want %s",
			 key, (int)(v->n < 20 ? v->n : 20),
			 (const char *)v->data, w);
		return -1;
	}
	return x;
}

/* base_score is a finite number (XGBoost reads "abc" as 0). */
static int base_score(const pn_ubj_doc *d, const pn_ubj *mp, char *err)
{
	const pn_ubj *v = member(d, mp, "base_score", 'S', err);
	if (!v)
		return -1;
	char s[64], *end;
	size_t n = v->n < sizeof s - 1 ? v->n : sizeof s - 1;
	memcpy(s, v->data, n);
	s[n] = '\0';
	double x = n == v->n && n ? strtod(s, &end) : 0;
	if (n != v->n || !n || *end || !isfinite(x) || strlen(s) != n) {
		snprintf(err, 256, "xgb: booster: 'base_score' is '%.20s', "
			 "want a number", s);
		return -1;
	}
	return 0;
}

/* The arrays of a tree: name, element type, length (0: none, 1: nodes). */
static const struct {
	const char *name;
	char elem;
	int per_node;
} tree_arrays[] = {
	{"loss_changes", 'd', 1}, {"sum_hessian", 'd', 1},
	{"base_weights", 'd', 1}, {"split_conditions", 'd', 1},
	{"left_children", 'l', 1}, {"right_children", 'l', 1},
	{"parents", 'l', 1}, {"split_indices", 'l', 1},
	{"default_left", 'U', 1}, {"split_type", 'U', 1},
	{"categories", 'l', 0}, {"categories_nodes", 'l', 0},
	{"categories_segments", 'L', 0}, {"categories_sizes", 'L', 0},
};
enum { A_COND = 3, A_LEFT, A_RIGHT, A_PARENT, A_FEAT, A_DLEFT, A_TYPE,
       NARRAYS = sizeof tree_arrays / sizeof tree_arrays[0] };

/* The nodes of tree k (n of them, arrays a): a binary tree rooted at 0. */
static int check_nodes(const pn_ubj *const *a, size_t n, size_t k, size_t p,
		       char *err)
{
	unsigned char *seen = pn_xcalloc(n, 1);
	int rc = -1;
	if (pn_ubj_int_at(a[A_PARENT], 0) != INT32_MAX) {
		snprintf(err, 256, "xgb: booster tree %zu: the root has a "
			 "parent", k);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t l = pn_ubj_int_at(a[A_LEFT], i),
			r = pn_ubj_int_at(a[A_RIGHT], i),
			f = pn_ubj_int_at(a[A_FEAT], i);
		const char *bad = NULL;
		if (f < 0 || (uint64_t)f >= p)
			bad = "a split feature out of range";
		else if (!isfinite(pn_ubj_num_at(a[A_COND], i)))
			bad = "a threshold that is not finite";
		else if (pn_ubj_int_at(a[A_DLEFT], i) > 1)
			bad = "a default direction other than 0 or 1";
		else if (pn_ubj_int_at(a[A_TYPE], i) != 0)
			bad = "a categorical split";
		else if ((l == -1) != (r == -1))
			bad = "one child";
		else if (l != -1 && (l <= (int64_t)i || r <= (int64_t)i ||
			 l >= (int64_t)n || r >= (int64_t)n || l == r))
			bad = "a child index out of range";
		else if (l != -1 && (seen[l] || seen[r]))
			bad = "a child that has another parent";
		else if (l != -1 && (pn_ubj_int_at(a[A_PARENT], l) != (int64_t)i ||
			 pn_ubj_int_at(a[A_PARENT], r) != (int64_t)i))
			bad = "a child that names another parent";
		if (bad) {
			snprintf(err, 256, "xgb: booster tree %zu node %zu: %s "
				 "(feature %lld, children %lld and %lld, of %zu "
				 "nodes)", k, i, bad, (long long)f,
				 (long long)l, (long long)r, n);
			goto out;
		}
		if (l != -1)
			seen[l] = seen[r] = 1;
	}
	for (size_t i = 1; i < n; i++)
		if (!seen[i]) {
			snprintf(err, 256, "xgb: booster tree %zu node %zu: no "
				 "node's child", k, i);
			goto out;
		}
	rc = 0;
out:
	free(seen);
	return rc;
}

static int check_tree(const pn_ubj_doc *d, const pn_ubj *t, size_t k,
		      size_t p, char *err)
{
	const pn_ubj *id = member(d, t, "id", 'i', err),
		*tp = member(d, t, "tree_param", '{', err);
	if (!id || !tp)
		return -1;
	if (id->i != (int64_t)k) {
		snprintf(err, 256, "xgb: booster tree %zu has id %lld", k,
			 (long long)id->i);
		return -1;
	}
	long n = count_is(d, tp, "num_nodes", -1, err);
	if (n < 1 || count_is(d, tp, "num_deleted", 0, err) < 0 ||
	    count_is(d, tp, "num_feature", (long)p, err) < 0 ||
	    count_is(d, tp, "size_leaf_vector", 0, err) < 0)
		return -1;
	const pn_ubj *a[NARRAYS];
	for (size_t j = 0; j < NARRAYS; j++) {
		a[j] = member(d, t, tree_arrays[j].name, '$', err);
		if (!a[j])
			return -1;
		size_t want = tree_arrays[j].per_node ? (size_t)n : 0;
		if (a[j]->elem != tree_arrays[j].elem || a[j]->n != want) {
			snprintf(err, 256, "xgb: booster tree %zu: '%s' has %zu "
				 "elements of type %c, want %zu of type %c", k,
				 tree_arrays[j].name, a[j]->n, a[j]->elem,
				 want, tree_arrays[j].elem);
			return -1;
		}
	}
	return check_nodes(a, (size_t)n, k, p, err);
}

/* The gbtree model: its parameters, tree_info and every tree. */
static int check_gbtree(const pn_ubj_doc *d, const pn_ubj *gb, size_t p,
			long *parallel, char *err)
{
	const pn_ubj *name = member(d, gb, "name", 'S', err),
		*model = member(d, gb, "model", '{', err);
	if (!name || !model)
		return -1;
	if (!pn_ubj_is_str(name, "gbtree")) {
		snprintf(err, 256, "xgb: booster: not a gbtree");
		return -1;
	}
	const pn_ubj *mp = member(d, model, "gbtree_model_param", '{', err),
		*trees = member(d, model, "trees", '[', err),
		*info = member(d, model, "tree_info", '[', err);
	if (!mp || !trees || !info)
		return -1;
	long nt = count_is(d, mp, "num_trees", (long)trees->n, err);
	long par = count_is(d, mp, "num_parallel_tree", -1, err);
	if (nt < 0 || par < 0 || count_is(d, mp, "size_leaf_vector", 0, err) < 0)
		return -1;
	if (par < 1 || nt % par != 0 || info->n != (size_t)nt) {
		snprintf(err, 256, "xgb: booster: %ld trees, %ld in parallel, "
			 "%zu tree_info", nt, par, info->n);
		return -1;
	}
	*parallel = par;
	for (const pn_ubj *v = pn_ubj_first(d, info); v; v = pn_ubj_next(d, v))
		if (v->type != 'i' || v->i != 0) {
			snprintf(err, 256, "xgb: booster: a tree_info that is "
				 "not 0");
			return -1;
		}
	size_t k = 0;
	for (const pn_ubj *t = pn_ubj_first(d, trees); t;
	     t = pn_ubj_next(d, t), k++)
		if (t->type != '{') {
			snprintf(err, 256, "xgb: booster tree %zu is not an "
				 "object", k);
			return -1;
		} else if (check_tree(d, t, k, p, err) < 0) {
			return -1;
		}
	return 0;
}

/* 0 when buf is a booster that pn-fit could have written for p features
 * (*parallel: its trees per round); else -1 and a message in err. */
static int check_booster(const unsigned char *buf, size_t len, size_t p,
			 long *parallel, char *err)
{
	pn_ubj_doc d = { 0 };
	char msg[200];
	int rc = -1;
	if (pn_ubj_parse(buf, len, &d, msg, sizeof msg) < 0) {
		snprintf(err, 256, "xgb: booster %s", msg);
		goto out;
	}
	const pn_ubj *root = &d.v[0], *l, *mp, *obj, *gb, *fn, *ft;
	if (root->type != '{' || !(l = member(&d, root, "learner", '{', err)) ||
	    !(mp = member(&d, l, "learner_model_param", '{', err)) ||
	    !(obj = member(&d, l, "objective", '{', err)) ||
	    !(gb = member(&d, l, "gradient_booster", '{', err)) ||
	    !(fn = member(&d, l, "feature_names", '[', err)) ||
	    !(ft = member(&d, l, "feature_types", '[', err)) ||
	    !member(&d, l, "attributes", '{', err)) {
		if (root->type != '{')
			snprintf(err, 256, "xgb: booster is not an object");
		goto out;
	}
	if (count_is(&d, mp, "num_feature", (long)p, err) < 0 ||
	    count_is(&d, mp, "num_class", 0, err) < 0 ||
	    count_is(&d, mp, "num_target", 1, err) < 0 ||
	    base_score(&d, mp, err) < 0)
		goto out;
	if (!pn_ubj_is_str(pn_ubj_get(&d, obj, "name"), "reg:squarederror") ||
	    fn->n || ft->n) {
		snprintf(err, 256, "xgb: booster: %s", fn->n || ft->n ?
			 "feature names or types" :
			 "objective other than reg:squarederror");
		goto out;
	}
	rc = check_gbtree(&d, gb, p, parallel, err);
out:
	pn_ubj_free(&d);
	return rc;
}

/* ---- the body: UBJSON in base64 ---------------------------------------- */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* the value of a base64 character, -1 for any other: a table made once
 * (a search of b64 per character took a quarter of pn-sum's model load) */
static int b64val(int c)
{
	static signed char val[256];
	static int made;
	if (!made) {
		memset(val, -1, sizeof val);
		for (int i = 0; b64[i]; i++)
			val[(unsigned char)b64[i]] = (signed char)i;
		made = 1;
	}
	return val[(unsigned char)c];
}

/* bytes, crc32 and b64 lines of booster h */
static void save_body(BoosterHandle h, FILE *f)
{
	bst_ulong len;
	const char *buf;
	if (XGBoosterSaveModelToBuffer(h, "{\"format\": \"ubj\"}", &len,
				       &buf) != 0)
		pn_die(PN_EXIT_DATA, "xgb: cannot serialise the model: %s",
		       xgb_err());
	double bytes = (double)len;
	pn_mwrite_nums(f, "bytes", &bytes, 1);
	const unsigned char *u = (const unsigned char *)buf;
	fprintf(f, "crc32 %08lx\n", crc_of(u, len));
	char line[B64_LINE + 1];
	int col = 0;
	for (bst_ulong i = 0; i < len; i += 3) {
		unsigned a = u[i], b = i + 1 < len ? u[i + 1] : 0,
			 c = i + 2 < len ? u[i + 2] : 0;
		line[col++] = b64[a >> 2];
		line[col++] = b64[((a & 3) << 4) | (b >> 4)];
		line[col++] = i + 1 < len ? b64[((b & 15) << 2) | (c >> 6)] : '=';
		line[col++] = i + 2 < len ? b64[c & 63] : '=';
		if (col == B64_LINE || i + 3 >= len) {
			line[col] = 0;
			fprintf(f, "b64 %s\n", line);
			col = 0;
		}
	}
}

static void xgb_save(const void *v, FILE *f)
{
	const xgb *m = v;
	fputs("format ubj\n", f);
	if (m->parts == 1) {
		save_body(m->h[0], f);
		return;
	}
	fprintf(f, "parts %d\n", m->parts);
	for (int i = 0; i < m->parts; i++) {
		double t = (double)m->trees[i];
		pn_mwrite_nums(f, "trees", &t, 1);
		save_body(m->h[i], f);
	}
}

/* One b64 line s into buf (got of len bytes so far); NULL, or why not
 * (in msg when it needs a number). */
static const char *b64_line(const char *s, unsigned char *buf, size_t *gotp,
			    size_t len, char *msg, size_t cap)
{
	size_t got = *gotp, k = strlen(s);
	size_t want = len - got >= B64_LINE / 4 * 3 ? B64_LINE :
		(len - got + 2) / 3 * 4;
	if (k != want) {
		snprintf(msg, cap, "base64 line of %zu characters, want %zu",
			 k, want);
		return msg;
	}
	for (size_t i = 0; i < k; i += 4) {
		/* bytes this group holds: 3, or 2 or 1 at the end ("x==" and
		 * "xx=" padding) */
		size_t need = len - got < 3 ? len - got : 3;
		int c[4];
		for (int j = 0; j < 4; j++) {
			int pad = j >= 1 + (int)need;
			c[j] = pad ? 0 : b64val(s[i + j]);
			if (pad ? s[i + j] != '=' : c[j] < 0) {
				snprintf(msg, cap, "bad base64 at character "
					 "%zu", i + j + 1);
				return msg;
			}
		}
		unsigned char o[3] = {
			(unsigned char)(c[0] << 2 | c[1] >> 4),
			(unsigned char)(c[1] << 4 | c[2] >> 2),
			(unsigned char)(c[2] << 6 | c[3]) };
		memcpy(buf + got, o, need);
		got += need;
	}
	*gotp = got;
	return NULL;
}

/* A body of bytes (read by the caller), then its crc32 and b64 lines: the
 * bytes, checked against the checksum; an error frees the bodies read
 * before (body[0..i-1]) first. */
typedef struct {
	unsigned char *buf;
	size_t len;
	long trees;             /* -1: any */
} body;

static void free_bodies(body *b, int n)
{
	for (int i = 0; i < n; i++)
		free(b[i].buf);
}

static void read_body(pn_mreader *r, double bytes, body *b, int i)
{
	char *tok[4];
	const char *bad = NULL;
	char msg[120];
	int n = 0;
	if (!(bytes >= 1 && bytes <= 1e12) || bytes != floor(bytes))
		bad = "bytes must be a positive integer";
	else if ((n = pn_mread_line(r, tok, 4)) >= 1 &&
		 strcmp(tok[0], "b64") == 0)
		bad = "no checksum (a model from an older pn): refit it with "
		      "pn-fit";
	else if (n != 2 || strcmp(tok[0], "crc32") != 0 ||
		 strlen(tok[1]) != 8 ||
		 strspn(tok[1], "0123456789abcdef") != 8)
		bad = "want 'crc32' and 8 hex digits";
	unsigned long crc = bad ? 0 : strtoul(tok[1], NULL, 16);
	/* grown as lines arrive: a corrupt count must not allocate (nor be
	 * converted: it may lie beyond size_t) */
	size_t len = bad ? 0 : (size_t)bytes, got = 0, cap = 0;
	unsigned char *buf = NULL;
	while (!bad && got < len) {
		if (cap - got < B64_LINE) {
			cap = cap ? 2 * cap : 65536;
			buf = pn_xrealloc(buf, cap);
		}
		n = pn_mread_line(r, tok, 4);
		if (n == 0) {
			snprintf(msg, sizeof msg, "model has %zu of %zu bytes",
				 got, len);
			bad = msg;
		} else if (n != 2 || strcmp(tok[0], "b64") != 0) {
			bad = "want 'b64' and one word";
		} else {
			bad = b64_line(tok[1], buf, &got, len, msg, sizeof msg);
		}
	}
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	unsigned long have = bad ? crc : crc_of(buf, len);
	if (have != crc) {
		snprintf(msg, sizeof msg, "checksum mismatch: the body's crc32 "
			 "is %08lx, the model says %08lx", have, crc);
		bad = msg;
	}
#endif
	if (bad) {
		free(buf);
		free_bodies(b, i);
		pn_mread_die(r, "xgb: %s", bad);
	}
	b[i].buf = buf;
	b[i].len = len;
}

/* Booster i of m from its body, checked first (m and the bodies from i
 * on are freed before an error). */
static void load_part(pn_mreader *r, xgb *m, body *b, int i)
{
	char err[256];
	long par = -1;
	int bad = check_booster(b[i].buf, b[i].len, m->p, &par, err) < 0;
	if (!bad && b[i].trees >= 0 && par != b[i].trees) {
		snprintf(err, sizeof err, "xgb: part %d has %ld trees, the "
			 "model says %ld", i + 1, par, b[i].trees);
		bad = 1;
	}
	bst_ulong nf = 0;
	if (!bad && (XGBoosterCreate(NULL, 0, &m->h[i]) != 0 ||
		     XGBoosterLoadModelFromBuffer(m->h[i], b[i].buf,
						  b[i].len) != 0 ||
		     XGBoosterGetNumFeature(m->h[i], &nf) != 0)) {
		snprintf(err, sizeof err, "xgb: XGBoost cannot load the "
			 "model: %s", xgb_err());
		bad = 1;
	} else if (!bad && nf != m->p) {
		snprintf(err, sizeof err, "xgb: booster has %llu features, "
			 "the model lists %zu", (unsigned long long)nf, m->p);
		bad = 1;
	}
	free(b[i].buf);
	b[i].buf = NULL;
	if (bad) {
		/* free before dying: the leak checker sees no stack then */
		free_bodies(b + i + 1, m->parts - i - 1);
		xgb_free(m);
		pn_mread_die(r, "%s", err);
	}
}

static void *xgb_load(pn_mreader *r, size_t p)
{
	char *tok[4];
	int n = pn_mread_line(r, tok, 4);
	if (n != 2 || strcmp(tok[0], "format") != 0 ||
	    strcmp(tok[1], "ubj") != 0)
		pn_mread_die(r, "xgb: want 'format ubj'");
	body b[MAX_PARTS];
	int parts = 1;
	double v;
	if (pn_mread_nums_or(r, "bytes", "parts", &v, 1)) {
		if (!(v >= 2 && v <= MAX_PARTS) || v != floor(v))
			pn_mread_die(r, "xgb: parts must be 2 to %d", MAX_PARTS);
		parts = (int)v;
		for (int i = 0; i < parts; i++) {
			double t;
			pn_mread_nums(r, "trees", &t, 1);
			if (!(t >= 1 && t <= 100000) || t != floor(t)) {
				free_bodies(b, i);
				pn_mread_die(r, "xgb: trees must be 1 to "
					     "100000");
			}
			b[i].trees = (long)t;
			pn_mread_nums(r, "bytes", &v, 1);
			read_body(r, v, b, i);
		}
	} else {
		b[0].trees = -1;
		read_body(r, v, b, 0);
	}
	n = pn_mread_line(r, tok, 4);
	if (n != 0) {
		free_bodies(b, parts);
		if (parts == 1)
			pn_mread_die(r, "xgb: '%s' after %zu bytes, want 'end'",
				     tok[0], b[0].len);
		pn_mread_die(r, "xgb: '%s' after the last part, want 'end'",
			     tok[0]);
	}
	xgb *m = pn_xcalloc(1, sizeof *m);
	m->p = p;
	m->parts = parts;
	for (int i = 0; i < parts; i++) {
		m->trees[i] = b[i].trees;
		load_part(r, m, b, i);
	}
	return m;
}

const pn_family pn_family_xgb = {
	.name = "xgb",
	.about = "XGBoost hist boosting (mode=rf: XGBoost random forest)",
	.wants_scaling = 0,
	.fit = xgb_fit,
	.predict = xgb_predict,
	.save = xgb_save,
	.load = xgb_load,
	.free = xgb_free,
};
