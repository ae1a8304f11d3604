/* forest.c - forests compiled for fast prediction (see tree.h).
 *
 * Rows are encoded once as ranks: for each feature, the number of the
 * forest's distinct thresholds on it that lie below the value, so that
 * "x > threshold" becomes "rank(x) > rank(threshold)" on 16-bit integers and
 * a node shrinks to 8 bytes (feature, threshold rank, left child).  Rows go
 * through one tree at a time, LANES of them in lock step, their ranks stored
 * feature by feature within each group of LANES rows so that every lane
 * reads at a fixed offset from its node's feature; the compiler keeps the
 * lanes' positions in registers.
 *
 * Measured on the NeuSight bmm rows (bench/predict, one core of an AMD EPYC
 * with AVX-512): complete trees walked 64 rows at a time with AVX2 or
 * AVX-512 gathers were no faster than this plain C, and lanes that take a
 * new row as soon as theirs reaches a leaf (instead of waiting for the
 * group's deepest path) were slower on full-depth trees, from mispredicted
 * branches; neither is kept.  Nor is walking the first 3-5 levels of every
 * tree as vectors (each node tested for all 16 rows at once, QuickScorer's
 * bit masks picking each row's way; 5-7% faster with AVX2, slower without).
 *
 * The environment variable PN_FOREST_KERNEL=ref makes pn_forest_add walk
 * the source trees on the doubles instead (pn_trees_add), for tests that
 * compare the two; "fast", the default, is this one.  Both add the same
 * leaf values in the same order, so their predictions are identical.
 */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "tree.h"

/* Trees at most this deep are walked a fixed number of steps, all the way
 * down; deeper ones that way to their mean leaf depth, then level by level
 * until every row of the group has reached a leaf. */
#define FIXED_DEPTH 16
#define LANES 16        /* rows walked through a tree in lock step, in C */

typedef struct {
	uint16_t off, rank;     /* off: feature * LANES, where its ranks start
				   in a group; leaf: rank 0xffff, never
				   exceeded */
	uint32_t left;          /* unsigned: no sign extension on the way to
				   an address */
} cnode;

enum kernel { K_REF, K_FAST };

struct pn_forest {
	const pn_tree *t;       /* the source, for the reference walk */
	size_t nt, p;
	enum kernel kern;       /* K_REF: the source trees, on doubles */
	double **thr;           /* per feature: sorted distinct thresholds */
	uint32_t *nthr;
	cnode **node;           /* per tree */
	int *depth;             /* per tree: levels of splits on its longest
				   path */
	int *steps;             /* per tree: steps taken without testing
				   whether every row has reached a leaf */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Index of v in the sorted distinct a[0..n). */
static uint32_t find_thr(const double *a, uint32_t n, double v)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (a[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= n || a[lo] != v)
		PN_BUG("threshold not found");
	return lo;
}

/* The kernel: PN_FOREST_KERNEL's, or fast. */
static enum kernel choose_kernel(void)
{
	const char *e = getenv("PN_FOREST_KERNEL");
	if (!e || !*e || strcmp(e, "fast") == 0)
		return K_FAST;
	if (strcmp(e, "ref") == 0)
		return K_REF;
	pn_usage_error("PN_FOREST_KERNEL=%s: want ref or fast", e);
}

pn_forest *pn_forest_new(const pn_tree *t, size_t nt, size_t p)
{
	pn_forest *f = pn_xcalloc(1, sizeof *f);
	f->t = t;
	f->nt = nt;
	f->p = p;
	f->kern = choose_kernel();
	if (p == 0 || p > 65535 / LANES || f->kern == K_REF) {
		f->kern = K_REF;
		return f;
	}
	size_t *cnt = pn_xcalloc(p, sizeof *cnt);
	for (size_t k = 0; k < nt; k++)
		for (int32_t i = 0; i < t[k].n; i++)
			if (t[k].node[i].left != i)
				cnt[t[k].node[i].feat]++;
	f->thr = pn_xcalloc(p, sizeof *f->thr);
	f->nthr = pn_xcalloc(p, sizeof *f->nthr);
	for (size_t j = 0; j < p; j++)
		f->thr[j] = pn_xmalloc((cnt[j] ? cnt[j] : 1) * sizeof **f->thr);
	for (size_t k = 0; k < nt; k++)
		for (int32_t i = 0; i < t[k].n; i++) {
			const pn_tnode *nd = &t[k].node[i];
			if (nd->left != i)
				f->thr[nd->feat][f->nthr[nd->feat]++] = nd->v;
		}
	int ok = 1;
	for (size_t j = 0; j < p; j++) {
		uint32_t n = f->nthr[j], m = 0;
		qsort(f->thr[j], n, sizeof **f->thr, cmp_double);
		for (uint32_t i = 0; i < n; i++)
			if (i == 0 || f->thr[j][i] != f->thr[j][m - 1])
				f->thr[j][m++] = f->thr[j][i];
		f->nthr[j] = m;
		if (m > 65534)
			ok = 0;
	}
	free(cnt);
	if (!ok) {
		f->kern = K_REF;
		return f;
	}
	f->node = pn_xcalloc(nt, sizeof *f->node);
	f->depth = pn_xcalloc(nt, sizeof *f->depth);
	f->steps = pn_xcalloc(nt, sizeof *f->steps);
	for (size_t k = 0; k < nt; k++) {
		cnode *c = f->node[k] = pn_xmalloc((size_t)t[k].n * sizeof *c);
		int *d = pn_xcalloc((size_t)t[k].n, sizeof *d);
		double leaves = 0, sum = 0;
		for (int32_t i = 0; i < t[k].n; i++) {
			const pn_tnode *nd = &t[k].node[i];
			if (d[i] > f->depth[k])
				f->depth[k] = d[i];
			if (nd->left == i) {
				leaves++;
				sum += d[i];
			}
			if (nd->left != i)   /* children come later */
				d[nd->left] = d[nd->left + 1] = d[i] + 1;
			c[i].left = (uint32_t)nd->left;
			if (nd->left == i) {
				c[i].off = 0;
				c[i].rank = 0xffff;
			} else {
				c[i].off = (uint16_t)(nd->feat * LANES);
				c[i].rank = (uint16_t)find_thr(f->thr[nd->feat],
							       f->nthr[nd->feat],
							       nd->v);
			}
		}
		free(d);
		/* shallow trees: all the way; deep ones: to the mean leaf */
		f->steps[k] = f->depth[k] <= FIXED_DEPTH ? f->depth[k]
				: (int)(sum / leaves);
	}
	return f;
}

void pn_forest_free(pn_forest *f)
{
	if (!f)
		return;
	for (size_t j = 0; f->thr && j < f->p; j++)
		free(f->thr[j]);
	for (size_t k = 0; f->node && k < f->nt; k++)
		free(f->node[k]);
	free(f->thr);
	free(f->nthr);
	free(f->node);
	free(f->depth);
	free(f->steps);
	free(f);
}

/* The number of a[0..n) below v (branch-free lower bound). */
static inline uint16_t rank_of(const double *a, uint32_t n, double v)
{
	if (n == 0)
		return 0;
	size_t at = 0;
	while (n > 1) {
		uint32_t half = n / 2;
		at += (size_t)(a[at + half - 1] < v) * half;   /* no branch */
		n -= half;
	}
	return (uint16_t)(at + (a[at] < v));
}

/* ---- walking ------------------------------------------------------------ */

/* Rows go through a tree LANES at a time, in lock step, their ranks stored
 * feature by feature (g[feat * LANES + lane]) so that each lane reads at a
 * fixed offset from the node's feature. */
static void walk(const pn_forest *f, size_t k, const uint16_t *g, double *out,
		 size_t lanes)
{
	const cnode *nd = f->node[k];
	const double *lv = f->t[k].leaf;
	uint32_t cur[LANES] = {0};
	/* a leaf steps onto itself: the first steps need no test of whether
	 * every row has reached one */
	for (int d = 0; d < f->steps[k]; d++) {
#pragma GCC unroll 16
		for (int l = 0; l < LANES; l++) {
			const cnode *q = &nd[cur[l]];
			cur[l] = q->left +
				 (g[q->off + l] > q->rank);
		}
	}
	int moved = f->steps[k] < f->depth[k];
	while (moved) {
		moved = 0;
#pragma GCC unroll 16
		for (int l = 0; l < LANES; l++) {
			const cnode *q = &nd[cur[l]];
			uint32_t nx = q->left +
				     (g[q->off + l] > q->rank);
			moved |= nx != cur[l];
			cur[l] = nx;
		}
	}
	for (size_t l = 0; l < lanes; l++)
		out[l] += lv[cur[l]];
}

void pn_forest_add(const pn_forest *f, const double *x, size_t n, size_t p,
		   double *out)
{
	if (f->kern == K_REF || p != f->p) {
		pn_trees_add(f->t, f->nt, x, n, p, out);
		return;
	}
	/* groups of LANES rows, the last one padded with rank 0 */
	size_t ng = (n + LANES - 1) / LANES;
	uint16_t *r = pn_xcalloc(ng * LANES * p, sizeof *r);
	for (size_t i = 0; i < n; i++) {
		uint16_t *g = r + i / LANES * LANES * p + i % LANES;
		for (size_t j = 0; j < p; j++)
			g[j * LANES] = rank_of(f->thr[j], f->nthr[j],
					       x[i * p + j]);
	}
	for (size_t k = 0; k < f->nt; k++)
		for (size_t b = 0; b < ng; b++)
			walk(f, k, r + b * LANES * p, out + b * LANES,
			     b + 1 < ng ? LANES : n - b * LANES);
	free(r);
}
