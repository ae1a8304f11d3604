/* tree.h - regression trees on binned features, shared by the rf and gbdt
 * families: a random number generator, feature binning, a histogram tree
 * builder, fast batch prediction and the text form of a tree.
 *
 * Binning (as LightGBM and XGBoost's hist method): each feature's values are
 * mapped once to at most 256 bins.  A feature with at most maxbins distinct
 * values gets one bin per value; otherwise bins hold about equal numbers of
 * rows, a value never straddling two bins.  Bin b of feature f holds the
 * values x with edge[b-1] < x <= edge[b], the edges lying halfway between
 * the neighbouring distinct training values; so a split "bin <= b" is
 * exactly the split "x <= edge[b]" on the raw values, in training and in
 * prediction alike.
 *
 * Growing (CART, squared error): a node's best split maximises
 * S_L^2 / (C_L + lambda) + S_R^2 / (C_R + lambda) over the candidate
 * features and the bin boundaries that leave at least min_leaf rows on each
 * side (S: sum of targets, C: row count; a row drawn twice counts twice,
 * through its weight).
 * Large nodes are scanned from per-bin histograms (sums and counts), the
 * larger child's histogram being the parent's minus the smaller child's;
 * small nodes sort their rows by bin instead.  A node becomes a leaf when it
 * has fewer than 2 min_leaf rows, reaches max_depth, holds one target value,
 * or has no valid split; its value is shrink * S / (C + lambda).
 *
 * Layout for prediction: nodes in breadth-first order, 16 bytes each, the
 * right child right after the left one; a leaf points to itself with an
 * infinite threshold, so a batch of rows descends in lock step without
 * branches.
 */
#ifndef PN_TREE_H
#define PN_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "rng.h"

/* ---- random numbers (rng.h) ------------------------------------------- */

/* Seed r for (seed, stream): distinct streams are independent, so tree t of
 * a forest can draw from stream t whatever thread grows it. */
void pn_tree_seed(pn_rng *r, uint64_t seed, uint64_t stream);
/* Uniform in [0, n), n > 0 (multiply-shift; bias below 2^-32 for n < 2^32). */
static inline uint64_t pn_tree_below(pn_rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)pn_rng_next(r) * n) >> 64);
}

/* The default thread count: the online CPUs, 1 to 64. */
long pn_default_threads(void);

/* ---- binned features ---------------------------------------------------- */

typedef struct {
	size_t n, p;
	uint8_t *bin;      /* n * p, row-major: bin of row i, feature f */
	uint8_t *col;      /* p * n, the same bins column-major: a node's
			      partition reads one feature of its rows, in
			      row order */
	int *nb;           /* bins of each feature, 1 to 256 */
	size_t *off;       /* where feature f's bins start in a histogram */
	size_t tot;        /* sum of nb */
	double *edge;      /* edge[off[f] + b], b < nb[f] - 1: upper edge of
			      bin b of feature f */
} pn_bins;

/* Bin d (maxbins 2 to 256) using up to threads threads. */
pn_bins *pn_bins_new(const pn_data *d, int maxbins, int threads);
void pn_bins_free(pn_bins *b);

/* ---- trees ------------------------------------------------------------ */

typedef struct {
	double v;          /* split: go right when x[feat] > v; leaf: +inf */
	int32_t feat;      /* leaf: 0 */
	int32_t left;      /* the right child is left + 1; leaf: itself */
} pn_tnode;

typedef struct {
	int32_t n;         /* nodes, >= 1 */
	pn_tnode *node;
	double *leaf;      /* value of node i when it is a leaf */
} pn_tree;

typedef struct {
	int max_depth;     /* 0: unlimited */
	int min_leaf;      /* >= 1 */
	double mtry;       /* fraction of the features tried at each split */
	double lambda;     /* L2 penalty on leaf values, >= 0 */
	double shrink;     /* leaf values are multiplied by this */
} pn_tree_opts;

/* Working memory for growing trees on b; one per thread. */
typedef struct pn_tree_ws pn_tree_ws;
pn_tree_ws *pn_tree_ws_new(const pn_bins *b);
void pn_tree_ws_free(pn_tree_ws *w);
/* Let w build a large node's histogram on threads threads (at most one per
 * feature), each summing a contiguous range of the features; the sums, and
 * so the trees, are the same for any count.  The default is 1: the caller
 * alone (rf grows one tree per thread instead). */
void pn_tree_ws_threads(pn_tree_ws *w, int threads);

/* Grow a tree on rows idx[0..m) of b (m >= 1, distinct, reordered here;
 * sorted indices are fastest) with targets y and weights wt (both indexed
 * by row; wt NULL: every row weighs 1).  A row of weight k counts as k
 * copies of it (a bootstrap sample), in sums, counts and min_leaf.  r draws
 * the features tried at each split when mtry < 1. */
void pn_tree_grow(pn_tree_ws *w, const double *y, const double *wt,
		  uint32_t *idx, size_t m, const pn_tree_opts *o, pn_rng *r,
		  pn_tree *out);
void pn_tree_free(pn_tree *t);
/* After pn_tree_grow on w: out[i] += the tree's value for each row i of
 * idx[0..m) as the grow left it, from the leaf each row was sorted into;
 * the same sums, bit for bit, as pn_trees_add of the tree on those rows
 * (a split "bin <= b" is the split "x <= edge[b]"), without walking it. */
void pn_tree_ws_add(const pn_tree_ws *w, const uint32_t *idx, double *out);

/* out[i] += the sum over trees t[0..nt) of t(x row i); x is n rows of p.
 * The reference traversal, on doubles; fine for one tree at a time. */
void pn_trees_add(const pn_tree *t, size_t nt, const double *x, size_t n,
		  size_t p, double *out);

/* A forest compiled for fast prediction (forest.c), with the same results,
 * bit for bit, as pn_trees_add.  Each feature's distinct thresholds over the
 * whole forest are sorted once; a row is encoded as the rank of each value
 * among them (x > threshold r exactly when rank(x) > r), and nodes shrink to
 * 8 bytes (feature, threshold rank, left child), so twice as many stay in
 * cache.  Rows go through one tree at a time in lock-step groups of 16.
 * PN_FOREST_KERNEL=ref in the environment makes it use pn_trees_add (for
 * tests).  Forests with more than 65534 distinct thresholds on a feature,
 * or more than 4095 features, fall back to pn_trees_add. */
typedef struct pn_forest pn_forest;
pn_forest *pn_forest_new(const pn_tree *t, size_t nt, size_t p);
void pn_forest_add(const pn_forest *f, const double *x, size_t n, size_t p,
		   double *out);
void pn_forest_free(pn_forest *f);

/* Text form: "tree N", then N lines "split FEAT THRESHOLD LEFT" or
 * "leaf VALUE".  pn_tree_load checks every index and number (feat < p,
 * node < LEFT < N - 1) and dies through pn_mread_die.  A count is never
 * trusted: memory grows with the lines actually read, so a count larger
 * than the file holds dies "corrupt model" where the file runs out of
 * nodes (or trees), never in the allocator. */
void pn_tree_save(const pn_tree *t, FILE *f);
void pn_tree_load(pn_mreader *r, size_t p, pn_tree *t);
/* nt trees, one after another; an array of nt (at least one element). */
pn_tree *pn_trees_load(pn_mreader *r, size_t p, size_t nt);

#endif
