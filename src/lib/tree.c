/* tree.c - histogram regression trees (see tree.h). */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "tree.h"
#include "tsv.h"

/* ---- random numbers ----------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void pn_tree_seed(pn_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed;
	pn_rng_seed(r, splitmix64(&x) ^
		       (stream * UINT64_C(0xd1b54a32d192ed03)));
}

long pn_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 64 ? 64 : n;
}

/* ---- binning ------------------------------------------------------------ */

/* A double's bits as an unsigned key of the same order (no NaN here). */
static inline uint64_t order_key(double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	return u >> 63 ? ~u : u | UINT64_C(1) << 63;
}

static inline double key_value(uint64_t k)
{
	uint64_t u = k >> 63 ? k & ~(UINT64_C(1) << 63) : ~k;
	double v;
	memcpy(&v, &u, sizeof v);
	return v;
}

/* Halfway between two neighbouring distinct values a < b, in [a, b). */
static double midpoint(double a, double b)
{
	double m = a + (b - a) / 2;
	if (!(m < b) || !isfinite(m))
		m = a;
	if (m < a)
		m = a;
	return m;
}

/* Sort the keys k[0..n) (tmp: n more), least significant 11 bits first;
 * a pass whose digit is the same in every key is skipped. */
static void radix_sort(uint64_t *k, uint64_t *tmp, size_t n)
{
	size_t cnt[2048];
	for (int shift = 0; shift < 64; shift += 11) {
		memset(cnt, 0, sizeof cnt);
		for (size_t i = 0; i < n; i++)
			cnt[(k[i] >> shift) & 2047]++;
		if (cnt[(k[0] >> shift) & 2047] == n)
			continue;
		size_t sum = 0;
		for (int b = 0; b < 2048; b++) {
			size_t c = cnt[b];
			cnt[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[cnt[(k[i] >> shift) & 2047]++] = k[i];
		memcpy(k, tmp, n * sizeof *k);
	}
}

typedef struct {
	const pn_data *d;
	pn_bins *b;
	int maxbins;
	double *edges;          /* p * 255 scratch */
	int next;
	pthread_mutex_t mu;
} bin_job;

/* The bin of x: the number of edges e[0..ne) below it (ne < 256). */
static inline uint8_t bin_of(const double *e, int ne, double x)
{
	int lo = 0, hi = ne;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (e[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint8_t)lo;
}

/* Bin feature f: its values sorted, the edges closed between runs of equal
 * values, then each row's bin found among the edges (x <= edge[b] exactly
 * when x <= the last value of bin b, as the edge lies in [it, the next)). */
static void bin_feature(bin_job *j, size_t f, uint64_t *k)
{
	const pn_data *d = j->d;
	pn_bins *b = j->b;
	size_t n = d->n, p = d->p;
	for (size_t i = 0; i < n; i++)
		k[i] = order_key(d->x[i * p + f]);
	radix_sort(k, k + n, n);
	double *s = (double *)(k + n);      /* the sorted values */
	for (size_t i = 0; i < n; i++)
		s[i] = key_value(k[i]);
	size_t nd = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || s[i] != s[i - 1])
			nd++;
	double *e = j->edges + f * 255;
	int nb = 0;               /* bins closed so far */
	size_t i = 0;
	while (i < n) {
		size_t q = i;
		while (q < n && s[q] == s[i])
			q++;
		/* rows of values s[i..q) go to bin nb */
		if (q < n && nb < j->maxbins - 1) {
			int close = nd <= (size_t)j->maxbins ||
				    (double)q >= (double)(nb + 1) * n /
						 j->maxbins;
			if (close)
				e[nb++] = midpoint(s[q - 1], s[q]);
		}
		i = q;
	}
	b->nb[f] = nb + 1;
	uint8_t *col = b->col + f * n;
	for (size_t r = 0; r < n; r++)
		b->bin[r * p + f] = col[r] = bin_of(e, nb, d->x[r * p + f]);
}

static void *bin_worker(void *arg)
{
	bin_job *j = arg;
	uint64_t *k = pn_xmalloc(2 * j->d->n * sizeof *k);
	for (;;) {
		pthread_mutex_lock(&j->mu);
		size_t f = (size_t)j->next++;
		pthread_mutex_unlock(&j->mu);
		if (f >= j->d->p)
			break;
		bin_feature(j, f, k);
	}
	free(k);
	return NULL;
}

pn_bins *pn_bins_new(const pn_data *d, int maxbins, int threads)
{
	if (maxbins < 2 || maxbins > 256 || d->n > UINT32_MAX)
		PN_BUG("bad binning request");
	pn_bins *b = pn_xcalloc(1, sizeof *b);
	b->n = d->n;
	b->p = d->p;
	b->bin = pn_xmalloc(d->n * d->p);
	b->col = pn_xmalloc(d->n * d->p);
	b->nb = pn_xcalloc(d->p, sizeof *b->nb);
	b->off = pn_xcalloc(d->p + 1, sizeof *b->off);
	bin_job j = {.d = d, .b = b, .maxbins = maxbins};
	j.edges = pn_xmalloc(d->p * 255 * sizeof *j.edges);
	pthread_mutex_init(&j.mu, NULL);
	if (threads < 1)
		threads = 1;
	if ((size_t)threads > d->p)
		threads = (int)d->p;
	pthread_t *th = pn_xmalloc((size_t)threads * sizeof *th);
	for (int t = 1; t < threads; t++)
		if (pthread_create(&th[t], NULL, bin_worker, &j))
			pn_die(PN_EXIT_DATA, "cannot start a thread");
	bin_worker(&j);
	for (int t = 1; t < threads; t++)
		pthread_join(th[t], NULL);
	free(th);
	pthread_mutex_destroy(&j.mu);
	for (size_t f = 0; f < d->p; f++)
		b->off[f + 1] = b->off[f] + (size_t)b->nb[f];
	b->tot = b->off[d->p];
	b->edge = pn_xcalloc(b->tot, sizeof *b->edge);
	for (size_t f = 0; f < d->p; f++)
		memcpy(b->edge + b->off[f], j.edges + f * 255,
		       (size_t)(b->nb[f] - 1) * sizeof *b->edge);
	free(j.edges);
	return b;
}

void pn_bins_free(pn_bins *b)
{
	if (!b)
		return;
	free(b->bin);
	free(b->col);
	free(b->nb);
	free(b->off);
	free(b->edge);
	free(b);
}

/* ---- growing ------------------------------------------------------------ */

typedef struct {
	double s, c;
} hent;

typedef struct {
	double v;               /* threshold, or leaf value */
	int32_t feat;           /* -1: leaf */
	int32_t left;
	uint32_t lo, hi;        /* leaf: its rows idx[lo..hi) */
} bnode;

typedef struct {
	int32_t node;
	uint32_t lo, hi;
	int depth;
	hent *h;                /* histogram of the rows, or NULL */
	double s, c;
} item;

typedef struct split {
	double num, den;        /* score of the split = num / den; none: den 0 */
	int32_t feat;
	int edge;               /* bins <= edge go left */
	double sl, cl;          /* left sums */
} split;

/* Nodes of at most this many rows are split by sorting, not histograms. */
#define SMALL 24

struct pn_tree_ws {
	const pn_bins *b;
	const double *wt;       /* row weights of the tree being grown, or
				   NULL for 1 */
	uint32_t *tmp;          /* partition scratch, n */
	hent **pool;            /* free histograms */
	int npool, cappool;
	hent **all;             /* every histogram allocated */
	int nall;
	item *stack;
	size_t nstack, capstack;
	bnode *nodes;
	size_t nnodes, capnodes;
	int32_t *feats;         /* permutation of 0..p-1 */
	uint32_t *keys;         /* small-node sort keys, SMALL */
	struct split *fb;       /* each feature's best split, p */
	size_t *cnt;            /* each part's left and right rows, 2 parts */
	struct hpool *pool_th;  /* helper threads, or NULL */
};

/* ---- helper threads ------------------------------------------------------ */

/* The work of one node shared by a pool: part k of n runs fn(arg, k, n),
 * the caller part 0.  A node's work takes microseconds, about what waking
 * a sleeping thread costs, so a helper polls for the next job for a while
 * (SPIN_NS) before it sleeps, as OpenMP runtimes do.  The poll is short
 * because pollers take the cores from threads with work when processes
 * share them: on 2 cores (2026-11-29), three 100-round gbdt fits of 2
 * threads at once took 47-65% longer with a 200 us poll than with the
 * pool before this one (helpers that always slept, sharing histograms
 * only), 11% longer with 20 us; one 200-round fit alone took 2% less time
 * with 200 us than with 20 us, and 16% less with 20 us than with that
 * pool. */
typedef void (*pjob)(void *arg, int part, int parts);

#define SPIN_NS 20000L

struct hpool {
	int n;                  /* parts: the caller and n - 1 helpers */
	pthread_t *th;
	pthread_mutex_t mu;
	pthread_cond_t go;
	atomic_uint gen;        /* job number */
	atomic_int pending;     /* helpers still at the job */
	atomic_int quit;
	int sleepers;           /* under mu */
	pjob fn;
	void *arg;
};

typedef struct {
	struct hpool *pool;
	int part;
} hhelper;

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long)t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The next job number after seen, polled and then waited for; seen
 * itself when the pool quits. */
static unsigned next_job(struct hpool *q, unsigned seen)
{
	unsigned g;
	long t0 = 0;
	for (int k = 0;; k++) {
		g = atomic_load_explicit(&q->gen, memory_order_acquire);
		if (g != seen || atomic_load_explicit(&q->quit,
						      memory_order_relaxed))
			return g;
		if ((k & 63) == 63) {
			long t = now_ns();
			if (!t0)
				t0 = t;
			else if (t - t0 > SPIN_NS)
				break;
		}
		relax();
	}
	pthread_mutex_lock(&q->mu);
	q->sleepers++;
	while ((g = atomic_load(&q->gen)) == seen && !atomic_load(&q->quit))
		pthread_cond_wait(&q->go, &q->mu);
	q->sleepers--;
	pthread_mutex_unlock(&q->mu);
	return g;
}

static void *helper(void *arg)
{
	hhelper *me = arg;
	struct hpool *q = me->pool;
	unsigned seen = 0;
	for (;;) {
		seen = next_job(q, seen);
		if (atomic_load(&q->quit))
			break;
		q->fn(q->arg, me->part, q->n);
		atomic_fetch_sub_explicit(&q->pending, 1, memory_order_release);
	}
	free(me);
	return NULL;
}

/* Run fn on every part of q, the caller doing part 0, and wait for the
 * helpers' parts. */
static void pool_run(struct hpool *q, pjob fn, void *arg)
{
	q->fn = fn;
	q->arg = arg;
	atomic_store_explicit(&q->pending, q->n - 1, memory_order_relaxed);
	pthread_mutex_lock(&q->mu);
	atomic_fetch_add_explicit(&q->gen, 1, memory_order_release);
	if (q->sleepers)
		pthread_cond_broadcast(&q->go);
	pthread_mutex_unlock(&q->mu);
	fn(arg, 0, q->n);
	for (int k = 0; atomic_load_explicit(&q->pending,
					     memory_order_acquire); k++)
		if (k < 4096)
			relax();
		else
			sched_yield();
}

static void pool_free(struct hpool *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	atomic_store(&q->quit, 1);
	pthread_cond_broadcast(&q->go);
	pthread_mutex_unlock(&q->mu);
	for (int k = 1; k < q->n; k++)
		pthread_join(q->th[k], NULL);
	pthread_cond_destroy(&q->go);
	pthread_mutex_destroy(&q->mu);
	free(q->th);
	free(q);
}

void pn_tree_ws_threads(pn_tree_ws *w, int threads)
{
	pool_free(w->pool_th);
	w->pool_th = NULL;
	if ((size_t)threads > w->b->p)
		threads = (int)w->b->p;
	if (threads < 2)
		return;
	struct hpool *q = pn_xcalloc(1, sizeof *q);
	q->n = threads;
	q->th = pn_xcalloc((size_t)threads, sizeof *q->th);
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->go, NULL);
	atomic_init(&q->gen, 0);
	atomic_init(&q->pending, 0);
	atomic_init(&q->quit, 0);
	for (int k = 1; k < threads; k++) {
		hhelper *me = pn_xmalloc(sizeof *me);
		me->pool = q;
		me->part = k;
		if (pthread_create(&q->th[k], NULL, helper, me))
			pn_die(PN_EXIT_DATA, "cannot start a thread");
	}
	w->pool_th = q;
}

/* [0, n) cut into parts: part k's share [*a, *b), in order. */
static void part_range(size_t n, int k, int parts, size_t *a, size_t *b)
{
	*a = n * (size_t)k / (size_t)parts;
	*b = n * (size_t)(k + 1) / (size_t)parts;
}

pn_tree_ws *pn_tree_ws_new(const pn_bins *b)
{
	pn_tree_ws *w = pn_xcalloc(1, sizeof *w);
	w->b = b;
	w->tmp = pn_xmalloc(b->n * sizeof *w->tmp);
	w->feats = pn_xmalloc(b->p * sizeof *w->feats);
	w->keys = pn_xmalloc(SMALL * sizeof *w->keys);
	w->fb = pn_xmalloc(b->p * sizeof *w->fb);
	/* parts: at most the features (pn_tree_ws_threads) */
	w->cnt = pn_xmalloc(2 * (b->p + 1) * sizeof *w->cnt);
	return w;
}

void pn_tree_ws_free(pn_tree_ws *w)
{
	if (!w)
		return;
	pool_free(w->pool_th);
	for (int i = 0; i < w->nall; i++)
		free(w->all[i]);
	free(w->all);
	free(w->pool);
	free(w->tmp);
	free(w->stack);
	free(w->nodes);
	free(w->feats);
	free(w->keys);
	free(w->fb);
	free(w->cnt);
	free(w);
}

static hent *hist_get(pn_tree_ws *w)
{
	if (w->npool)
		return w->pool[--w->npool];
	hent *h = pn_xmalloc(w->b->tot * sizeof *h);
	w->all = pn_xrealloc(w->all, (size_t)(w->nall + 1) * sizeof *w->all);
	w->all[w->nall++] = h;
	if (w->nall > w->cappool) {
		w->cappool = w->nall;
		w->pool = pn_xrealloc(w->pool,
				      (size_t)w->cappool * sizeof *w->pool);
	}
	return h;
}

static void hist_put(pn_tree_ws *w, hent *h)
{
	if (h)
		w->pool[w->npool++] = h;
}

/* A histogram job: rows idx[0..m) into h, features [f0, f1) per part. */
typedef struct {
	const pn_bins *b;
	hent *h;
	const double *y, *wt;
	const uint32_t *idx;
	size_t m;
} hjob;

/* Rows ahead whose bins and target hist_rows asks the cache for: a node's
 * rows are scattered over the bin matrix (-12% time for a 200-round gbdt
 * fit of 100,000 rows on the Zen 1 VM; 8 the same, 32 worse; the same for
 * a node's partition, which reads one byte a row, did nothing). */
#define PREFETCH 16

/* Rows idx[0..m) into histogram bins: row i adds to base[f] + its bin of
 * feature f for f < nf (bin: the bins from the part's first feature on,
 * p a row), in row order.  Inlined where wt is NULL (unit weights, every
 * boosting round without subsampling), the loop loses the weights. */
static inline __attribute__((always_inline)) void
hist_rows(hent *const *base, size_t nf, const uint8_t *bin, size_t p,
	  const double *y, const double *wt, const uint32_t *idx, size_t m)
{
	for (size_t k = 0; k < m; k++) {
		uint32_t i = idx[k];
		if (k + PREFETCH < m) {
			uint32_t a = idx[k + PREFETCH];
			__builtin_prefetch(bin + (size_t)a * p);
			__builtin_prefetch(y + a);
			if (wt)
				__builtin_prefetch(wt + a);
		}
		const uint8_t *r = bin + (size_t)i * p;
		double wi = wt ? wt[i] : 1, yi = wt ? wi * y[i] : y[i];
		for (size_t f = 0; f < nf; f++) {
			hent *e = base[f] + r[f];
			e->s += yi;
			e->c += wi;
		}
	}
}

/* Features [f0, f1) of j's histogram: each feature's bins sum its rows in
 * row order, whichever part builds it, each feature's bins addressed from
 * a pointer kept in a local table. */
static void hist_part(const hjob *j, size_t f0, size_t f1)
{
	const pn_bins *b = j->b;
	size_t nf = f1 - f0;
	const size_t *off = b->off;
	hent *h = j->h;
	memset(h + off[f0], 0, (off[f1] - off[f0]) * sizeof *h);
	hent *fixed[64], **base = nf <= 64 ? fixed :
				 pn_xmalloc(nf * sizeof *base);
	for (size_t f = 0; f < nf; f++)
		base[f] = h + off[f0 + f];
	if (j->wt)
		hist_rows(base, nf, b->bin + f0, b->p, j->y, j->wt, j->idx,
			  j->m);
	else
		hist_rows(base, nf, b->bin + f0, b->p, j->y, NULL, j->idx,
			  j->m);
	if (base != fixed)
		free(base);
}

static void hist_job(void *arg, int part, int parts)
{
	const hjob *j = arg;
	size_t f0, f1;
	part_range(j->b->p, part, parts, &f0, &f1);
	hist_part(j, f0, f1);
}

/* Below this many cells (rows x features) a histogram is built alone:
 * handing it to the helpers costs more. */
#define POOL_CELLS 8192

static void hist_build(const pn_tree_ws *w, hent *h, const double *y,
		       const double *wt, const uint32_t *idx, size_t m)
{
	const pn_bins *b = w->b;
	hjob j = {b, h, y, wt, idx, m};
	if (w->pool_th && m * b->p >= POOL_CELLS)
		pool_run(w->pool_th, hist_job, &j);
	else
		hist_part(&j, 0, b->p);
}

static void hist_sub(hent *a, const hent *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		a[i].s -= b[i].s;
		a[i].c -= b[i].c;
	}
}

static int32_t new_node(pn_tree_ws *w)
{
	if (w->nnodes == w->capnodes) {
		w->capnodes = w->capnodes ? 2 * w->capnodes : 1024;
		if (w->capnodes > INT32_MAX)
			pn_die(PN_EXIT_DATA, "tree too large");
		w->nodes = pn_xrealloc(w->nodes, w->capnodes * sizeof *w->nodes);
	}
	return (int32_t)w->nnodes++;
}

static void push(pn_tree_ws *w, item it)
{
	if (w->nstack == w->capstack) {
		w->capstack = w->capstack ? 2 * w->capstack : 256;
		w->stack = pn_xrealloc(w->stack, w->capstack * sizeof *w->stack);
	}
	w->stack[w->nstack++] = it;
}

/* score = sl^2/(cl+L) + sr^2/(cr+L) = num/den, compared by cross
 * multiplication (no division in the inner loop) */
static inline void consider(split *bs, double s, double c, double sl,
			    double cl, double lambda, int minleaf,
			    int32_t f, int edge)
{
	double cr = c - cl;
	if (cl < minleaf || cr < minleaf)
		return;
	double sr = s - sl, dl = cl + lambda, dr = cr + lambda;
	double num = sl * sl * dr + sr * sr * dl, den = dl * dr;
	if (bs->den == 0 || num * bs->den > bs->num * den) {
		bs->num = num;
		bs->den = den;
		bs->feat = f;
		bs->edge = edge;
		bs->sl = sl;
		bs->cl = cl;
	}
}

/* The best split of feature f of histogram h into bs. */
static void split_feature(const pn_bins *b, const hent *h, int32_t f,
			  double s, double c, const pn_tree_opts *o, split *bs)
{
	const hent *e = h + b->off[f];
	int nb = b->nb[f], last = -1;
	double sl = 0, cl = 0;
	for (int x = 0; x < nb; x++) {
		if (e[x].c == 0)
			continue;
		if (last >= 0)
			consider(bs, s, c, sl, cl, o->lambda, o->min_leaf, f,
				 last + (x - 1 - last) / 2);
		sl += e[x].s;
		cl += e[x].c;
		last = x;
	}
}

/* A split search: each of the k features feats[] of a node's histogram
 * into fb[], features cut among the parts. */
typedef struct {
	const pn_bins *b;
	const hent *h;
	const int32_t *feats;
	int k;
	double s, c;
	const pn_tree_opts *o;
	split *fb;
} sjob;

static void split_job(void *arg, int part, int parts)
{
	const sjob *j = arg;
	size_t q0, q1;
	part_range((size_t)j->k, part, parts, &q0, &q1);
	for (size_t q = q0; q < q1; q++) {
		j->fb[q] = (split){0, 0, -1, 0, 0, 0};
		split_feature(j->b, j->h, j->feats[q], j->s, j->c, j->o,
			      &j->fb[q]);
	}
}

/* Below this many bins a split search runs alone. */
#define POOL_BINS 1024

/* The best split among the features feats[0..k) of histogram h: each
 * feature's best, then the best of those in the order of feats, the first
 * of equals, whatever the number of threads. */
static void split_hist(pn_tree_ws *w, const hent *h, int k, double s,
		       double c, const pn_tree_opts *o, split *bs)
{
	sjob j = {w->b, h, w->feats, k, s, c, o, w->fb};
	if (w->pool_th && w->b->tot >= POOL_BINS)
		pool_run(w->pool_th, split_job, &j);
	else
		split_job(&j, 0, 1);
	for (int q = 0; q < k; q++) {
		const split *x = &w->fb[q];
		if (x->den != 0 && (bs->den == 0 ||
				    x->num * bs->den > bs->num * x->den))
			*bs = *x;
	}
}

/* A stable partition of the rows idx[0..m) by their bin of one feature
 * (col, the feature's column): each part moves its left rows to the front
 * of its share and its right rows to the same place in tmp. */
typedef struct {
	uint32_t *idx, *tmp;
	const uint8_t *col;
	int edge;
	size_t m;
	size_t *cnt;            /* part k's rows: left 2k, right 2k + 1 */
} pjob_rows;

static void partition_job(void *arg, int part, int parts)
{
	const pjob_rows *j = arg;
	size_t a, b;
	part_range(j->m, part, parts, &a, &b);
	uint32_t *idx = j->idx + a, *tmp = j->tmp + a;
	size_t nl = 0, nr = 0;
	/* each row written to both, without a branch (the side is random:
	 * a branch on it mispredicted half the time) */
	for (size_t k = 0; k < b - a; k++) {
		uint32_t i = idx[k];
		size_t right = j->col[i] > j->edge;
		idx[nl] = i;
		tmp[nr] = i;
		nl += 1 - right;
		nr += right;
	}
	j->cnt[2 * part] = nl;
	j->cnt[2 * part + 1] = nr;
}

/* Below this many rows a node is partitioned alone. */
#define POOL_ROWS 8192

/* Partition idx[0..m) stably, rows whose bin of feature f is at most edge
 * first; the number of those. */
static size_t partition(pn_tree_ws *w, uint32_t *idx, size_t m, int32_t f,
			int edge)
{
	const pn_bins *b = w->b;
	int parts = w->pool_th && m >= POOL_ROWS ? w->pool_th->n : 1;
	pjob_rows j = {idx, w->tmp, b->col + (size_t)f * b->n, edge, m,
		       w->cnt};
	if (parts > 1)
		pool_run(w->pool_th, partition_job, &j);
	else
		partition_job(&j, 0, 1);
	size_t nl = 0, nr = 0, a, e;
	for (int k = 0; k < parts; k++) {
		part_range(m, k, parts, &a, &e);
		memmove(idx + nl, idx + a, w->cnt[2 * k] * sizeof *idx);
		nl += w->cnt[2 * k];
	}
	for (int k = 0; k < parts; k++) {
		part_range(m, k, parts, &a, &e);
		memcpy(idx + nl + nr, w->tmp + a,
		       w->cnt[2 * k + 1] * sizeof *idx);
		nr += w->cnt[2 * k + 1];
	}
	return nl;
}

static void split_small(pn_tree_ws *w, const double *y, const uint32_t *idx,
			size_t m, const int32_t *feats, int k, double s,
			double c, const pn_tree_opts *o, split *bs)
{
	const pn_bins *b = w->b;
	size_t p = b->p;
	uint32_t *key = w->keys;
	for (int q = 0; q < k; q++) {
		int32_t f = feats[q];
		for (size_t j = 0; j < m; j++) {
			uint32_t v = ((uint32_t)b->bin[(size_t)idx[j] * p + f]
				      << 16) | (uint32_t)j;
			size_t t = j;
			while (t > 0 && key[t - 1] > v) {
				key[t] = key[t - 1];
				t--;
			}
			key[t] = v;
		}
		double sl = 0, cl = 0;
		int last = -1;
		for (size_t j = 0; j < m;) {
			int x = (int)(key[j] >> 16);
			if (last >= 0)
				consider(bs, s, c, sl, cl, o->lambda,
					 o->min_leaf, f,
					 last + (x - 1 - last) / 2);
			for (; j < m && (int)(key[j] >> 16) == x; j++) {
				uint32_t i = idx[key[j] & 0xffff];
				double wi = w->wt ? w->wt[i] : 1;
				sl += wi * y[i];
				cl += wi;
			}
			last = x;
		}
	}
}

/* The features to try: all, or a random subset of k. */
static int pick_features(pn_tree_ws *w, const pn_tree_opts *o, pn_rng *r)
{
	int p = (int)w->b->p;
	int k = (int)(o->mtry * p);
	if (k < 1)
		k = 1;
	if (k >= p)
		return p;
	for (int i = 0; i < k; i++) {
		int j = i + (int)pn_tree_below(r, (uint64_t)(p - i));
		int32_t t = w->feats[i];
		w->feats[i] = w->feats[j];
		w->feats[j] = t;
	}
	return k;
}

static void make_leaf(pn_tree_ws *w, int32_t node, double s, double c,
		      size_t lo, size_t hi, const pn_tree_opts *o)
{
	bnode *nd = &w->nodes[node];
	nd->feat = -1;
	nd->left = node;
	nd->lo = (uint32_t)lo;
	nd->hi = (uint32_t)hi;
	nd->v = o->shrink * s / (c + o->lambda);
}

/* Is a child with these rows (of total weight c) a leaf? */
static int child_is_leaf(const double *y, const uint32_t *idx, size_t m,
			 double c, int depth, const pn_tree_opts *o)
{
	if (c < 2.0 * o->min_leaf)
		return 1;
	if (o->max_depth > 0 && depth >= o->max_depth)
		return 1;
	double y0 = y[idx[0]];
	for (size_t j = 1; j < m; j++)
		if (y[idx[j]] != y0)
			return 0;
	return 1;
}

/* Breadth-first renumbering into the prediction layout. */
static void finish(pn_tree_ws *w, pn_tree *t)
{
	size_t n = w->nnodes;
	t->n = (int32_t)n;
	t->node = pn_xmalloc(n * sizeof *t->node);
	t->leaf = pn_xcalloc(n, sizeof *t->leaf);
	int32_t *queue = pn_xmalloc(n * sizeof *queue);
	size_t head = 0, tail = 0;
	queue[tail++] = 0;
	while (head < tail) {
		int32_t old = queue[head];
		int32_t at = (int32_t)head++;
		const bnode *b = &w->nodes[old];
		pn_tnode *nd = &t->node[at];
		if (b->feat < 0) {
			nd->v = INFINITY;
			nd->feat = 0;
			nd->left = at;
			t->leaf[at] = b->v;
		} else {
			nd->v = b->v;
			nd->feat = b->feat;
			nd->left = (int32_t)tail;
			queue[tail++] = b->left;
			queue[tail++] = b->left + 1;
		}
	}
	free(queue);
}

void pn_tree_grow(pn_tree_ws *w, const double *y, const double *wt,
		  uint32_t *idx, size_t m, const pn_tree_opts *o, pn_rng *r,
		  pn_tree *out)
{
	const pn_bins *b = w->b;
	size_t p = b->p;
	for (size_t f = 0; f < p; f++)
		w->feats[f] = (int32_t)f;
	w->nnodes = 0;
	w->nstack = 0;
	w->wt = wt;
	double s = 0, c = 0;
	for (size_t j = 0; j < m; j++) {
		double wi = wt ? wt[idx[j]] : 1;
		s += wi * y[idx[j]];
		c += wi;
	}
	int32_t root = new_node(w);
	if (child_is_leaf(y, idx, m, c, 0, o)) {
		make_leaf(w, root, s, c, 0, m, o);
		finish(w, out);
		return;
	}
	item first = {root, 0, (uint32_t)m, 0, NULL, s, c};
	if (m > SMALL) {
		first.h = hist_get(w);
		hist_build(w, first.h, y, wt, idx, m);
	}
	push(w, first);
	while (w->nstack) {
		item it = w->stack[--w->nstack];
		size_t lo = it.lo, hi = it.hi, n = hi - lo;
		int k = pick_features(w, o, r);
		split bs = {0, 0, -1, 0, 0, 0};
		if (it.h)
			split_hist(w, it.h, k, it.s, it.c, o, &bs);
		else
			split_small(w, y, idx + lo, n, w->feats, k, it.s, it.c,
				    o, &bs);
		if (bs.feat < 0) {
			make_leaf(w, it.node, it.s, it.c, lo, hi, o);
			hist_put(w, it.h);
			continue;
		}
		size_t nl = partition(w, idx + lo, n, bs.feat, bs.edge),
		       nr = n - nl;
		int32_t left = new_node(w);
		new_node(w);
		bnode *nd = &w->nodes[it.node];
		nd->feat = bs.feat;
		nd->v = b->edge[b->off[bs.feat] + (size_t)bs.edge];
		nd->left = left;
		item ch[2] = {
			{left, (uint32_t)lo, (uint32_t)(lo + nl), it.depth + 1,
			 NULL, bs.sl, bs.cl},
			{left + 1, (uint32_t)(lo + nl), (uint32_t)hi,
			 it.depth + 1, NULL, it.s - bs.sl, it.c - bs.cl},
		};
		int leaf[2], big[2];
		for (int q = 0; q < 2; q++) {
			size_t cm = ch[q].hi - ch[q].lo;
			leaf[q] = child_is_leaf(y, idx + ch[q].lo, cm,
						ch[q].c, ch[q].depth, o);
			if (leaf[q])
				make_leaf(w, ch[q].node, ch[q].s, ch[q].c,
					  ch[q].lo, ch[q].hi, o);
			big[q] = !leaf[q] && cm > SMALL;
		}
		size_t cm0 = nl, cm1 = nr;
		if (big[0] && big[1]) {
			int sm = cm0 <= cm1 ? 0 : 1;
			ch[sm].h = hist_get(w);
			hist_build(w, ch[sm].h, y, wt, idx + ch[sm].lo,
				   sm ? cm1 : cm0);
			hist_sub(it.h, ch[sm].h, b->tot);
			ch[1 - sm].h = it.h;
		} else if (big[0] || big[1]) {
			int q = big[0] ? 0 : 1;
			size_t mine = q ? cm1 : cm0, other = q ? cm0 : cm1;
			if (it.h && other * p + b->tot < mine * p) {
				hent *t = hist_get(w);
				hist_build(w, t, y, wt, idx + ch[1 - q].lo,
					   other);
				hist_sub(it.h, t, b->tot);
				hist_put(w, t);
				ch[q].h = it.h;
			} else {
				ch[q].h = it.h ? it.h : hist_get(w);
				hist_build(w, ch[q].h, y, wt, idx + ch[q].lo,
					   mine);
			}
		} else {
			hist_put(w, it.h);
		}
		/* depth first, left child next */
		if (!leaf[1])
			push(w, ch[1]);
		if (!leaf[0])
			push(w, ch[0]);
	}
	finish(w, out);
}

void pn_tree_ws_add(const pn_tree_ws *w, const uint32_t *idx, double *out)
{
	for (size_t k = 0; k < w->nnodes; k++) {
		const bnode *nd = &w->nodes[k];
		if (nd->feat >= 0)
			continue;
		for (uint32_t j = nd->lo; j < nd->hi; j++)
			out[idx[j]] += nd->v;
	}
}

void pn_tree_free(pn_tree *t)
{
	if (!t)
		return;
	free(t->node);
	free(t->leaf);
	t->node = NULL;
	t->leaf = NULL;
}

/* ---- prediction --------------------------------------------------------- */

#define LANES 16        /* rows walked through a tree in lock step */

void pn_trees_add(const pn_tree *t, size_t nt, const double *x, size_t n,
		  size_t p, double *out)
{
	for (size_t k = 0; k < nt; k++) {
		const pn_tnode *nd = t[k].node;
		const double *lv = t[k].leaf;
		size_t i = 0;
		for (; i + LANES <= n; i += LANES) {
			int32_t cur[LANES] = {0};
			const double *xr = x + i * p;
			int moved = 1;
			while (moved) {
				moved = 0;
				for (int l = 0; l < LANES; l++) {
					const pn_tnode *q = &nd[cur[l]];
					int32_t nx = q->left +
						     (xr[l * p + q->feat] > q->v);
					moved |= nx != cur[l];
					cur[l] = nx;
				}
			}
			for (int l = 0; l < LANES; l++)
				out[i + l] += lv[cur[l]];
		}
		for (; i < n; i++) {
			const double *xr = x + i * p;
			int32_t c = 0;
			for (;;) {
				const pn_tnode *q = &nd[c];
				int32_t nx = q->left + (xr[q->feat] > q->v);
				if (nx == c)
					break;
				c = nx;
			}
			out[i] += lv[c];
		}
	}
}

/* ---- text form ---------------------------------------------------------- */

void pn_tree_save(const pn_tree *t, FILE *f)
{
	fprintf(f, "tree %d\n", (int)t->n);
	for (int32_t i = 0; i < t->n; i++) {
		const pn_tnode *nd = &t->node[i];
		if (nd->left == i)
			fprintf(f, "leaf %.17g\n", t->leaf[i]);
		else
			fprintf(f, "split %d %.17g %d\n", (int)nd->feat, nd->v,
				(int)nd->left);
	}
}

static double tok_num(pn_mreader *r, const char *what, const char *s)
{
	double v;
	if (pn_parse_num(s, strlen(s), &v) < 0)
		pn_mread_die(r, "%s '%.40s' is not a number", what, s);
	return v;
}

static long tok_index(pn_mreader *r, const char *what, const char *s,
		      long lo, long hi)
{
	double v = tok_num(r, what, s);
	if (v != floor(v) || v < (double)lo || v > (double)hi)
		pn_mread_die(r, "%s '%.40s' out of range %ld to %ld", what, s,
			     lo, hi);
	return (long)v;
}

void pn_tree_load(pn_mreader *r, size_t p, pn_tree *t)
{
	double v;
	pn_mread_nums(r, "tree", &v, 1);
	if (v != floor(v) || v < 1 || v > INT32_MAX - 1)
		pn_mread_die(r, "bad node count");
	int32_t n = (int32_t)v;
	/* grown as lines arrive: a count the file does not hold dies at its
	 * end, not in the allocator */
	size_t cap = 0;
	t->n = n;
	t->node = NULL;
	t->leaf = NULL;
	for (int32_t i = 0; i < n; i++) {
		if ((size_t)i == cap) {
			cap = cap ? 2 * cap : 256;
			if (cap > (size_t)n)
				cap = (size_t)n;
			t->node = pn_xrealloc(t->node, cap * sizeof *t->node);
			t->leaf = pn_xrealloc(t->leaf, cap * sizeof *t->leaf);
		}
		char *tok[5];
		int k = pn_mread_line(r, tok, 5);
		pn_tnode *nd = &t->node[i];
		t->leaf[i] = 0;
		if (k == 2 && strcmp(tok[0], "leaf") == 0) {
			nd->v = INFINITY;
			nd->feat = 0;
			nd->left = i;
			t->leaf[i] = tok_num(r, "leaf value", tok[1]);
		} else if (k == 4 && strcmp(tok[0], "split") == 0) {
			if (i > n - 3)
				pn_mread_die(r, "node %ld of %ld is a split "
					     "with no room for children",
					     (long)i + 1, (long)n);
			nd->feat = (int32_t)tok_index(r, "feature", tok[1], 0,
						      (long)p - 1);
			nd->v = tok_num(r, "threshold", tok[2]);
			nd->left = (int32_t)tok_index(r, "child", tok[3],
						      (long)i + 1,
						      (long)n - 2);
		} else {
			pn_mread_die(r, "node %ld of %ld: want 'leaf VALUE' "
				     "or 'split FEATURE THRESHOLD LEFT'",
				     (long)i + 1, (long)n);
		}
	}
}

pn_tree *pn_trees_load(pn_mreader *r, size_t p, size_t nt)
{
	/* grown as trees arrive, like their nodes */
	pn_tree *t = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < nt; i++) {
		if (i == cap) {
			cap = cap ? 2 * cap : 64;
			if (cap > nt)
				cap = nt;
			t = pn_xrealloc(t, cap * sizeof *t);
		}
		pn_tree_load(r, p, &t[i]);
	}
	return t ? t : pn_xcalloc(1, sizeof *t);
}
