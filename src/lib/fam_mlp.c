/* fam_mlp.c - the PreNeT multilayer perceptron (family "mlp").
 *
 * Fully connected ReLU network trained with Adam on the mean squared error,
 * in float32 with OpenBLAS sgemm for every matrix product.  Defaults are the
 * paper's: hidden 32-64-128-128-128-128, dropout 0.2 before the output
 * layer, Adam lr 1e-3 (betas 0.9/0.999, eps 1e-8), batch 128, 300 epochs;
 * pn adds the linear annealing of lr over the last fifth of the steps.
 *
 * Parameters (--param name=value):
 *   hidden=32-64-128-128-128-128  widths of the hidden layers, dash list
 *   epochs=300                    passes over the training rows
 *   batch=128                     rows per Adam step (last batch smaller)
 *   lr=0.001                      Adam step size
 *   anneal=0.2                    fraction of the steps, at the end, over
 *                                 which the step size falls linearly from
 *                                 lr towards 0 (0: constant lr throughout)
 *   dropout=0.2                   drop probability before the output layer
 *   weight_decay=0                L2 term added to the weight gradients
 *                                 (as torch.optim.Adam; biases exempt)
 *   patience=20                   with --val: stop after this many epochs
 *                                 without a better validation error and keep
 *                                 the best weights (0: run every epoch, still
 *                                 keep the best)
 *   threads=2                     threads (at most shards are used)
 *   shards=2                      parts of each batch computed in
 *                                 parallel; the model depends on shards
 *                                 (summation order), not on threads
 *
 * Inputs arrive standardised (wants_scaling = 1); the target is
 * standardised here and its mean and sd are stored in the body.  Weights:
 * He uniform (bound sqrt(6 / fan_in)) for the ReLU layers, LeCun uniform
 * (sqrt(3 / fan_in)) for the linear output layer, biases zero.  All
 * randomness (init, epoch shuffles, dropout masks) comes from
 * pn_rng streams (rng.h) seeded from the seed, so a seed gives the
 * same model for any thread count on a given machine (OpenBLAS picks its
 * kernels by CPU, so another CPU may differ in the last bits).
 *
 * Body:
 *   layers N              number of weight layers (hidden + 1)
 *   sizes p h1 ... 1      N + 1 widths
 *   yscale mean sd        target standardisation
 *   then per layer: one "w" line per output unit (fan_in weights) and one
 *   "b" line (fan_out biases).
 */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "model.h"
#include "optim.h"
#include "rng.h"

#define MAX_LAYERS 64
#define MAX_WIDTH 65536
#define PRED_BATCH 1024
#define MAX_SHARDS 64

typedef struct {
	int nl;                 /* weight layers */
	int size[MAX_LAYERS + 1];
	size_t woff[MAX_LAYERS], boff[MAX_LAYERS];
	size_t npar;
	float *par;
	double ymean, ysd;
} mlp;

/* ---- elementwise kernels ------------------------------------------------
 * With batches of 128 the elementwise passes (ReLU, its derivative, Adam)
 * cost as much as the matrix products when compiled as scalar code, and the
 * portable build flags (-O2, no -march) do not vectorise them.  So ReLU
 * has AVX2 versions chosen at run time (the scalar ones are the reference
 * and run elsewhere); Adam is optim.h's pn_adam, built for each instruction
 * set. */

static void relu_c(float *c, size_t k)
{
	for (size_t i = 0; i < k; i++)
		c[i] = c[i] > 0 ? c[i] : 0;
}

/* d = a > 0 ? d * sc : 0 */
static void relu_back_c(float *d, const float *a, size_t k, float sc)
{
	for (size_t i = 0; i < k; i++)
		d[i] = a[i] > 0 ? d[i] * sc : 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static void relu_avx2(float *c, size_t k)
{
	__m256 z = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 8 <= k; i += 8)
		_mm256_storeu_ps(c + i, _mm256_max_ps(_mm256_loadu_ps(c + i), z));
	relu_c(c + i, k - i);
}

AVX2 static void relu_back_avx2(float *d, const float *a, size_t k, float sc)
{
	__m256 z = _mm256_setzero_ps(), s = _mm256_set1_ps(sc);
	size_t i = 0;
	for (; i + 8 <= k; i += 8) {
		__m256 on = _mm256_cmp_ps(_mm256_loadu_ps(a + i), z, _CMP_GT_OQ);
		__m256 v = _mm256_mul_ps(_mm256_loadu_ps(d + i), s);
		_mm256_storeu_ps(d + i, _mm256_and_ps(on, v));
	}
	relu_back_c(d + i, a + i, k - i, sc);
}

#endif

static void (*relu)(float *, size_t) = relu_c;
static void (*relu_back)(float *, const float *, size_t, float) = relu_back_c;

static void pick_once(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		relu = relu_avx2;
		relu_back = relu_back_avx2;
	}
#endif
}

static void pick_kernels(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, pick_once);
}

/* ---- the network ---------------------------------------------------- */

static mlp *mlp_new(int nl, const int *size)
{
	mlp *m = pn_xcalloc(1, sizeof *m);
	m->nl = nl;
	size_t off = 0;
	for (int l = 0; l <= nl; l++)
		m->size[l] = size[l];
	for (int l = 0; l < nl; l++) {
		m->woff[l] = off;
		off += (size_t)size[l] * size[l + 1];
		m->boff[l] = off;
		off += size[l + 1];
	}
	m->npar = off;
	m->par = pn_xcalloc(off, sizeof(float));
	m->ysd = 1;
	return m;
}

static void mlp_free(void *v)
{
	mlp *m = v;
	if (!m)
		return;
	free(m->par);
	free(m);
}

static int widest(const mlp *m)
{
	int w = 0;
	for (int l = 0; l <= m->nl; l++)
		if (m->size[l] > w)
			w = m->size[l];
	return w;
}

/* Activation buffers for batches of up to B rows: act[l] holds B x size[l]. */
typedef struct {
	float *act[MAX_LAYERS + 1];
	float *del[MAX_LAYERS + 1];     /* dL/d(pre-activation), training only */
	float *mem;
} work;

static void work_init(work *w, const mlp *m, size_t B, int train)
{
	size_t tot = 0;
	for (int l = 0; l <= m->nl; l++)
		tot += (size_t)m->size[l] * (train ? 2 : 1);
	w->mem = pn_xmalloc(tot * B * sizeof(float));
	float *p = w->mem;
	for (int l = 0; l <= m->nl; l++) {
		w->act[l] = p;
		p += B * m->size[l];
		w->del[l] = NULL;
		if (train) {
			w->del[l] = p;
			p += B * m->size[l];
		}
	}
}

/* Forward pass over B rows already in w->act[0].  With r != NULL, dropout
 * (probability drop, inverted scaling) is applied to the last hidden layer.
 * Output: w->act[nl], B values in standardised target units. */
static void forward(const mlp *m, work *w, int B, float drop, pn_rng *r)
{
	for (int l = 0; l < m->nl; l++) {
		int in = m->size[l], out = m->size[l + 1];
		const float *W = m->par + m->woff[l], *b = m->par + m->boff[l];
		float *A = w->act[l], *C = w->act[l + 1];
		for (int i = 0; i < B; i++)
			memcpy(C + (size_t)i * out, b, out * sizeof(float));
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, out, in,
			    1.0f, A, in, W, in, 1.0f, C, out);
		if (l == m->nl - 1)
			break;
		size_t k = (size_t)B * out;
		relu(C, k);
		if (r && l == m->nl - 2 && drop > 0) {
			/* 32-bit thresholds, two masks per draw */
			uint32_t thr = (uint32_t)(drop * 4294967296.0);
			float keep = 1.0f / (1.0f - drop);
			size_t i = 0;
			for (; i + 1 < k; i += 2) {
				uint64_t u = pn_rng_next(r);
				C[i] = (uint32_t)u < thr ? 0 : C[i] * keep;
				C[i + 1] = (uint32_t)(u >> 32) < thr ? 0 :
					C[i + 1] * keep;
			}
			if (i < k)
				C[i] = (uint32_t)pn_rng_next(r) < thr ? 0 : C[i] * keep;
		}
	}
}

/* Predict into out (standardised), rows of x (double, row-major). */
static void predict_std(const mlp *m, work *w, const double *x, size_t n,
			float *out)
{
	int p = m->size[0];
	for (size_t s = 0; s < n; s += PRED_BATCH) {
		int B = n - s < PRED_BATCH ? (int)(n - s) : PRED_BATCH;
		const double *xs = x + s * p;
		size_t k = (size_t)B * p;
		for (size_t i = 0; i < k; i++)
			w->act[0][i] = (float)xs[i];
		forward(m, w, B, 0, NULL);
		memcpy(out + s, w->act[m->nl], B * sizeof(float));
	}
}

static void mlp_predict(const void *v, const double *x, size_t n, size_t p,
			double *out)
{
	const mlp *m = v;
	if ((size_t)m->size[0] != p)
		PN_BUG("mlp: feature count differs from the model");
	pick_kernels();
	work w;
	work_init(&w, m, n < PRED_BATCH ? (n ? n : 1) : PRED_BATCH, 0);
	float *o = pn_xmalloc((n ? n : 1) * sizeof(float));
	predict_std(m, &w, x, n, o);
	for (size_t i = 0; i < n; i++)
		out[i] = o[i] * m->ysd + m->ymean;
	free(o);
	free(w.mem);
}

/* ---- fitting ---------------------------------------------------------- */

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

/* "32-64-128" -> widths; returns the count or -1. */
static int parse_hidden(const char *s, int *h, int max)
{
	int n = 0;
	while (*s) {
		char *end;
		if (*s < '0' || *s > '9')
			return -1;
		long v = strtol(s, &end, 10);
		if (v < 1 || v > MAX_WIDTH || n == max)
			return -1;
		h[n++] = (int)v;
		if (*end == '-' && end[1])
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return n ? n : -1;
}

typedef struct {
	int epochs, batch, patience, threads, shards;
	float lr, drop, wd;
	double anneal;
} hyper;

static int read_params(pn_params *par, size_t p, int *size, hyper *h, char *err)
{
	const char *hs = param_str(par, "hidden", "32-64-128-128-128-128");
	int nh = parse_hidden(hs, size + 1, MAX_LAYERS - 1);
	if (nh < 0)
		pn_usage_error("mlp: invalid --param hidden=%s: want widths "
			       "1-%d joined by '-', at most %d layers", hs,
			       MAX_WIDTH, MAX_LAYERS - 1);
	if (p < 1 || p > MAX_WIDTH) {
		snprintf(err, 256, "mlp: %zu features (want 1 to %d)", p,
			 MAX_WIDTH);
		return -1;
	}
	size[0] = (int)p;
	size[nh + 1] = 1;
	long epochs = pn_params_int(par, "epochs", 300);
	long batch = pn_params_int(par, "batch", 128);
	long patience = pn_params_int(par, "patience", 20);
	long threads = pn_params_int(par, "threads", 2);
	long shards = pn_params_int(par, "shards", 2);
	double lr = pn_params_num(par, "lr", 1e-3);
	double drop = pn_params_num(par, "dropout", 0.2);
	double wd = pn_params_num(par, "weight_decay", 0);
	double anneal = pn_params_num(par, "anneal", 0.2);
	const char *bad = NULL;
	if (epochs < 1 || epochs > 1000000)
		bad = "epochs must be 1 to 1000000";
	else if (batch < 1 || batch > 1000000)
		bad = "batch must be 1 to 1000000";
	else if (patience < 0)
		bad = "patience must be 0 or more";
	else if (threads < 1 || threads > MAX_SHARDS)
		bad = "threads must be 1 to 64";
	else if (shards < 1 || shards > MAX_SHARDS || shards > batch)
		bad = "shards must be 1 to 64 and at most batch";
	else if (!(lr > 0 && lr < 1e3))
		bad = "lr must be above 0 and below 1000";
	else if (!(drop >= 0 && drop < 1))
		bad = "dropout must be at least 0 and below 1";
	else if (!(wd >= 0 && wd < 1e6))
		bad = "weight_decay must be 0 to below 1e6";
	else if (!(anneal >= 0 && anneal <= 1))
		bad = "anneal must be 0 to 1";
	if (bad)
		pn_usage_error("mlp: invalid --param: %s", bad);
	*h = (hyper){ (int)epochs, (int)batch, (int)patience, (int)threads,
		      (int)shards, (float)lr, (float)drop, (float)wd, anneal };
	return nh + 1;
}

static void init_weights(mlp *m, pn_rng *r)
{
	for (int l = 0; l < m->nl; l++) {
		int in = m->size[l], out = m->size[l + 1];
		double bound = sqrt((l == m->nl - 1 ? 3.0 : 6.0) / in);
		float *W = m->par + m->woff[l];
		for (size_t i = 0; i < (size_t)in * out; i++)
			W[i] = (float)((2 * pn_rng_unif(r) - 1) * bound);
	}
}

/* Mean squared error on val in standardised target units. */
static double val_mse(const mlp *m, work *w, const pn_data *val, float *buf)
{
	predict_std(m, w, val->x, val->n, buf);
	double s = 0;
	for (size_t i = 0; i < val->n; i++) {
		double e = buf[i] - (val->y[i] - m->ymean) / m->ysd;
		s += e * e;
	}
	return s / val->n;
}

/* A barrier that spins before it yields: a step is ~0.1 ms of work, and
 * waking a thread sleeping in pthread_barrier_wait can take as long. */
typedef struct {
	atomic_int count, gen;
	int n;
} barrier;

static void barrier_wait(barrier *b)
{
	int g = atomic_load_explicit(&b->gen, memory_order_acquire);
	if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) ==
	    b->n - 1) {
		atomic_store_explicit(&b->count, 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->gen, 1, memory_order_release);
		return;
	}
	for (unsigned i = 0;
	     atomic_load_explicit(&b->gen, memory_order_acquire) == g; i++)
		if (i >= 2000)
			sched_yield();
}

/* Every batch is cut into `shards` fixed parts whose gradients are summed
 * in a fixed order, whatever the number of threads; so threads change the
 * speed, never the model.  Each thread takes shards tid, tid + T, ... with
 * single-threaded BLAS (OpenBLAS's own threads cost more than they bring
 * on 128-row products), then reduces and Adam-updates its slice of the
 * parameters. */

typedef struct {
	mlp *m;
	hyper h;
	const float *x, *y;
	size_t n, p, B, *perm;
	int T, S;                      /* threads, shards */
	barrier bar;
	work w[MAX_SHARDS];
	float *grad[MAX_SHARDS];       /* per-shard gradients */
	pn_rng r[MAX_SHARDS];          /* per-shard dropout streams */
	double sse[MAX_SHARDS];
	float *ones, *mo, *ve;
	/* set by thread 0 between barriers */
	pn_rng main;
	int stop;                      /* 1 done, 2 diverged */
	int epoch;
	const pn_data *val;
	work wv;
	float *best, *vbuf;
	double best_mse;
	int since_best;
	void (*progress)(double, double);
} trainer;

typedef struct {
	trainer *t;
	int tid;
	pthread_t th;
} worker;

/* Forward and backward over rows perm[s0 .. s0 + rows) of a batch of nb;
 * gradients into t->grad[k]. */
static void shard(trainer *t, int k, size_t s0, int rows, int nb)
{
	mlp *m = t->m;
	work *w = &t->w[k];
	float *grad = t->grad[k];
	int nl = m->nl;
	size_t p = t->p;
	if (rows == 0) {
		memset(grad, 0, m->npar * sizeof(float));
		return;
	}
	for (int i = 0; i < rows; i++)
		memcpy(w->act[0] + (size_t)i * p, t->x + t->perm[s0 + i] * p,
		       p * sizeof(float));
	forward(m, w, rows, t->h.drop, &t->r[k]);
	/* d(mean squared error over the whole batch)/d(output) */
	float *o = w->act[nl], *dl = w->del[nl];
	double sse = 0;
	for (int i = 0; i < rows; i++) {
		float e = o[i] - t->y[t->perm[s0 + i]];
		sse += (double)e * e;
		dl[i] = 2 * e / nb;
	}
	t->sse[k] += sse;
	float sc = t->h.drop > 0 ? 1.0f / (1.0f - t->h.drop) : 1.0f;
	for (int l = nl - 1; l >= 0; l--) {
		int in = m->size[l], out = m->size[l + 1];
		const float *W = m->par + m->woff[l];
		const float *D = w->del[l + 1], *A = w->act[l];
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in,
			    rows, 1.0f, D, out, A, in, 0.0f,
			    grad + m->woff[l], in);
		cblas_sgemv(CblasRowMajor, CblasTrans, rows, out, 1.0f, D, out,
			    t->ones, 1, 0.0f, grad + m->boff[l], 1);
		if (l == 0)
			break;
		float *Dp = w->del[l];
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, in,
			    out, 1.0f, D, out, W, in, 0.0f, Dp, in);
		/* ReLU; on the dropout layer a dropped unit is 0 and a kept
		 * one was scaled by 1 / (1 - drop) */
		relu_back(Dp, A, (size_t)rows * in, l == nl - 1 ? sc : 1.0f);
	}
}

/* Thread 0's work between epochs; sets t->stop. */
static void end_epoch(trainer *t)
{
	double sse = 0;
	for (int k = 0; k < t->S; k++)
		sse += t->sse[k];
	if (!isfinite(sse)) {
		t->stop = 2;
		return;
	}
	int ep = t->epoch + 1, epochs = t->h.epochs;
	if (t->val) {
		double mse = val_mse(t->m, &t->wv, t->val, t->vbuf);
		if (mse < t->best_mse) {
			t->best_mse = mse;
			memcpy(t->best, t->m->par, t->m->npar * sizeof(float));
			t->since_best = 0;
		} else if (t->h.patience && ++t->since_best >= t->h.patience) {
			ep = epochs;
		}
	}
	if (t->progress)
		t->progress(ep, epochs);
	t->epoch++;
	if (ep >= epochs)
		t->stop = 1;
}

static void *train(void *arg)
{
	worker *wk = arg;
	trainer *t = wk->t;
	int tid = wk->tid, T = t->T, S = t->S;
	mlp *m = t->m;
	size_t n = t->n, B = t->B, np = m->npar;
	size_t lo = np * tid / T, hi = np * (tid + 1) / T;
	const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
	double b1t = 1, b2t = 1;
	/* constant-lr Adam ends wherever its last steps threw it (the test
	 * RMSE of bench/fit-vs-python's net moves by 4% a epoch on average);
	 * the last `cool` steps take lr down linearly, to lr / cool */
	long long steps = (long long)t->h.epochs * (long long)((n + B - 1) / B);
	long long cool = llround(t->h.anneal * (double)steps), step = 0;
	for (;;) {
		if (tid == 0) {
			for (size_t i = n - 1; i > 0; i--) {
				size_t j = (size_t)pn_rng_int(&t->main, 0,
							      (long long)i);
				size_t v = t->perm[i];
				t->perm[i] = t->perm[j];
				t->perm[j] = v;
			}
			memset(t->sse, 0, sizeof t->sse);
		}
		barrier_wait(&t->bar);
		for (size_t s = 0; s < n; s += B) {
			int nb = n - s < B ? (int)(n - s) : (int)B;
			for (int k = tid; k < S; k += T) {
				int r0 = nb * k / S, r1 = nb * (k + 1) / S;
				shard(t, k, s + r0, r1 - r0, nb);
			}
			barrier_wait(&t->bar);
			float *g = t->grad[0];
			for (int k = 1; k < S; k++)
				cblas_saxpy(hi - lo, 1.0f, t->grad[k] + lo, 1,
					    g + lo, 1);
			if (t->h.wd > 0)
				for (int l = 0; l < m->nl; l++) {
					/* weights only, not biases */
					size_t a = m->woff[l], z = m->boff[l];
					a = a > lo ? a : lo;
					z = z < hi ? z : hi;
					if (a < z)
						cblas_saxpy(z - a, t->h.wd,
							    m->par + a, 1,
							    g + a, 1);
				}
			b1t *= b1;
			b2t *= b2;
			double lr = t->h.lr;
			if (steps - step <= cool)
				lr *= (double)(steps - step) / (double)cool;
			step++;
			pn_adam(m->par + lo, g + lo, t->mo + lo, t->ve + lo,
			     hi - lo, (float)(lr / (1 - b1t)),
			     (float)(1 / sqrt(1 - b2t)), b1, b2, eps);
			barrier_wait(&t->bar);
		}
		if (tid == 0)
			end_epoch(t);
		barrier_wait(&t->bar);
		if (t->stop)
			return NULL;
	}
}

static void *mlp_fit(const pn_data *d, const pn_data *val, pn_params *par,
		     uint64_t seed, void (*progress)(double, double), char *err)
{
	int size[MAX_LAYERS + 1];
	hyper h;
	int nl = read_params(par, d->p, size, &h, err);
	if (nl < 0)
		return NULL;
	if (d->n < 1) {
		snprintf(err, 256, "mlp: no training rows");
		return NULL;
	}
	if (val && val->n && val->p != d->p) {
		snprintf(err, 256, "mlp: validation has %zu features, training "
			 "has %zu", val->p, d->p);
		return NULL;
	}
	pick_kernels();
	int blas_threads = openblas_get_num_threads();
	openblas_set_num_threads(1);

	trainer t = { .h = h, .n = d->n, .p = d->p, .progress = progress,
		      .best_mse = INFINITY };
	size_t n = d->n, p = d->p;
	mlp *m = t.m = mlp_new(nl, size);
	double mean = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		mean += d->y[i];
	mean /= n;
	for (size_t i = 0; i < n; i++)
		ss += (d->y[i] - mean) * (d->y[i] - mean);
	m->ymean = mean;
	m->ysd = n > 1 && ss > 0 ? sqrt(ss / n) : 1;

	pn_rng_seed(&t.main, seed);
	init_weights(m, &t.main);
	t.S = h.shards;
	for (int k = 0; k < t.S; k++)
		pn_rng_seed(&t.r[k], pn_rng_next(&t.main));

	float *x = pn_xmalloc(n * p * sizeof(float));
	float *y = pn_xmalloc(n * sizeof(float));
	for (size_t i = 0; i < n * p; i++)
		x[i] = (float)d->x[i];
	for (size_t i = 0; i < n; i++)
		y[i] = (float)((d->y[i] - m->ymean) / m->ysd);
	t.x = x;
	t.y = y;
	t.perm = pn_xmalloc(n * sizeof *t.perm);
	for (size_t i = 0; i < n; i++)
		t.perm[i] = i;
	t.B = (size_t)h.batch < n ? (size_t)h.batch : n;
	size_t sb = (t.B + t.S - 1) / t.S;
	for (int k = 0; k < t.S; k++) {
		work_init(&t.w[k], m, sb, 1);
		t.grad[k] = pn_xcalloc(m->npar, sizeof(float));
	}
	t.ones = pn_xmalloc(sb * sizeof(float));
	for (size_t i = 0; i < sb; i++)
		t.ones[i] = 1;
	t.mo = pn_xcalloc(m->npar, sizeof(float));
	t.ve = pn_xcalloc(m->npar, sizeof(float));
	if (val && val->n > 0) {
		t.val = val;
		work_init(&t.wv, m, val->n < PRED_BATCH ? val->n : PRED_BATCH, 0);
		t.best = pn_xmalloc(m->npar * sizeof(float));
		t.vbuf = pn_xmalloc(val->n * sizeof(float));
	}

	t.T = h.threads < t.S ? h.threads : t.S;
	worker wk[MAX_SHARDS];
	t.bar.n = t.T;
	for (int i = 0; i < t.T; i++)
		wk[i] = (worker){ .t = &t, .tid = i };
	for (int i = 1; i < t.T; i++) {
		int rc = pthread_create(&wk[i].th, NULL, train, &wk[i]);
		if (rc)
			pn_die(PN_EXIT_DATA, "mlp: cannot start a thread: %s",
			       strerror(rc));
	}
	train(&wk[0]);
	for (int i = 1; i < t.T; i++)
		pthread_join(wk[i].th, NULL);
	openblas_set_num_threads(blas_threads);

	if (t.stop == 2)
		snprintf(err, 256, "mlp: training diverged in epoch %d (loss "
			 "is not finite); try a smaller lr", t.epoch + 1);
	else if (t.val && isfinite(t.best_mse))
		memcpy(m->par, t.best, m->npar * sizeof(float));
	free(x);
	free(y);
	free(t.perm);
	for (int k = 0; k < t.S; k++) {
		free(t.w[k].mem);
		free(t.grad[k]);
	}
	free(t.ones);
	free(t.mo);
	free(t.ve);
	if (t.val) {
		free(t.wv.mem);
		free(t.best);
		free(t.vbuf);
	}
	if (t.stop == 2) {
		mlp_free(m);
		return NULL;
	}
	return m;
}

/* ---- the body ----------------------------------------------------------- */

static void mlp_save(const void *v, FILE *f)
{
	const mlp *m = v;
	double t[MAX_LAYERS + 1];
	double nl = m->nl;
	pn_mwrite_nums(f, "layers", &nl, 1);
	for (int l = 0; l <= m->nl; l++)
		t[l] = m->size[l];
	pn_mwrite_nums(f, "sizes", t, m->nl + 1);
	double ys[2] = { m->ymean, m->ysd };
	pn_mwrite_nums(f, "yscale", ys, 2);
	int w = widest(m);
	double *row = pn_xmalloc(w * sizeof(double));
	for (int l = 0; l < m->nl; l++) {
		int in = m->size[l], out = m->size[l + 1];
		const float *W = m->par + m->woff[l], *b = m->par + m->boff[l];
		for (int j = 0; j < out; j++) {
			for (int k = 0; k < in; k++)
				row[k] = W[(size_t)j * in + k];
			pn_mwrite_nums(f, "w", row, in);
		}
		for (int j = 0; j < out; j++)
			row[j] = b[j];
		pn_mwrite_nums(f, "b", row, out);
	}
	free(row);
}

static void read_floats(pn_mreader *r, const char *key, double *buf, int n,
			float *dst)
{
	pn_mread_nums(r, key, buf, n);
	for (int i = 0; i < n; i++) {
		if (!isfinite(buf[i]) || fabs(buf[i]) > 3e38)
			pn_mread_die(r, "mlp: '%s' value %d is not a finite "
				     "float", key, i + 1);
		dst[i] = (float)buf[i];
	}
}

static void *mlp_load(pn_mreader *r, size_t p)
{
	double v, t[MAX_LAYERS + 1];
	pn_mread_nums(r, "layers", &v, 1);
	if (!(v >= 1 && v <= MAX_LAYERS) || v != (int)v)
		pn_mread_die(r, "mlp: layers must be an integer from 1 to %d",
			     MAX_LAYERS);
	int nl = (int)v, size[MAX_LAYERS + 1];
	pn_mread_nums(r, "sizes", t, nl + 1);
	for (int l = 0; l <= nl; l++) {
		if (!(t[l] >= 1 && t[l] <= MAX_WIDTH) || t[l] != (int)t[l])
			pn_mread_die(r, "mlp: size %d must be an integer from "
				     "1 to %d", l + 1, MAX_WIDTH);
		size[l] = (int)t[l];
	}
	if ((size_t)size[0] != p)
		pn_mread_die(r, "mlp: network has %d inputs, the model lists "
			     "%zu features", size[0], p);
	if (size[nl] != 1)
		pn_mread_die(r, "mlp: network has %d outputs, want 1",
			     size[nl]);
	double ys[2];
	pn_mread_nums(r, "yscale", ys, 2);
	if (!isfinite(ys[0]) || !(ys[1] > 0) || !isfinite(ys[1]))
		pn_mread_die(r, "mlp: bad yscale");
	/* the parameters, in mlp_new's order, into a buffer grown as lines
	 * arrive: sizes the file does not hold die at its end, not in the
	 * allocator */
	int w = 0;
	for (int l = 0; l <= nl; l++)
		w = size[l] > w ? size[l] : w;
	double *row = pn_xmalloc(w * sizeof(double));
	float *par = NULL;
	size_t got = 0, cap = 0;
	for (int l = 0; l < nl; l++)
		for (int j = 0; j <= size[l + 1]; j++) {
			int k = j < size[l + 1] ? size[l] : size[l + 1];
			if (cap - got < (size_t)k) {
				while (cap - got < (size_t)k)
					cap = cap ? 2 * cap : 65536;
				par = pn_xrealloc(par, cap * sizeof *par);
			}
			read_floats(r, j < size[l + 1] ? "w" : "b", row, k,
				    par + got);
			got += (size_t)k;
		}
	free(row);
	mlp *m = mlp_new(nl, size);
	if (got != m->npar)
		PN_BUG("mlp: parameter count");
	memcpy(m->par, par, got * sizeof *par);
	free(par);
	m->ymean = ys[0];
	m->ysd = ys[1];
	char *tok[8];
	if (pn_mread_line(r, tok, 8) != 0)
		pn_mread_die(r, "mlp: '%s' after the last layer, want 'end'",
			     tok[0]);
	return m;
}

const pn_family pn_family_mlp = {
	.name = "mlp",
	.about = "multilayer perceptron (PreNeT: 32-64-128-128-128-128, "
		 "ReLU, dropout, Adam)",
	.wants_scaling = 1,
	.fit = mlp_fit,
	.predict = mlp_predict,
	.save = mlp_save,
	.load = mlp_load,
	.free = mlp_free,
};
