/* pool.c - the cpu backend's pool: PyTorch's scalar NCHW pooling loops
 * (below).  It runs on plain NCHW, PyTorch's default layout on a CPU: a
 * network's tensor between layers is NCHW in PyTorch, so a blocked layout
 * would time a layout PyTorch does not run.  batchnorm: bnorm.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "dnn.h"
#include "err.h"

/* Pooling as PyTorch runs it on a CPU tensor in NCHW, its default layout:
 * ATen's scalar kernels (cpu_max_pool, cpu_avg_pool and their backward
 * passes), a window at a time, not oneDNN's vector pooling.  Their cost
 * is the framework's: a max pool compares element by element with a
 * data-dependent branch (and NaN check) and writes an int64 index of each
 * maximum, forward only too; on random data the branch mispredicts about
 * every other time.  The same loops compiled here took 4.4 ms for a 2 x
 * 2 / 2 max pool of 32 x 32 x 32 x 32 where PyTorch 1.13's took 4.8 and
 * oneDNN's 0.22 (2026-11-25, AMD Zen 4); on an Intel Xeon (2026-11-30)
 * the forward of LeNet's pools (6 x 28 x 28 and 16 x 10 x 10, 2 x 2 / 2,
 * batch 1 to 256, new data each call) 5.0-6.0 ns an input element where
 * PyTorch's takes 5.6-6.5.  The backward passes
 * zero the input's gradient, then add each output's gradient back: to
 * its maximum's index (max), or over its window divided by k x k (avg,
 * count_include_pad as nn.AvgPool2d's default). */
typedef struct {
	long nc, X, Y, k, s, p;
	void *x, *y, *dy, *dx;    /* bf16 when half */
	int64_t *ind;             /* max: the index of each maximum */
	int half;
} poolctx;

/* The window of output position o along a side of X elements (kernel k,
 * stride s, padding p), clamped to the image: [*lo, *hi). */
static inline void span(long o, long X, long k, long s, long p, long *lo,
			long *hi)
{
	*lo = o * s - p;
	*hi = *lo + k < X ? *lo + k : X;
	if (*lo < 0)
		*lo = 0;
}

/* The max pool's forward, the element type a constant of each call
 * (half: bf16), the window's loop on locals: an int64 index store may
 * alias the context's long fields, which the compiler would otherwise
 * load again after every one (1.3x the time of ATen's templated kernel
 * on a Xeon, now within 5% of it). */
static inline __attribute__((always_inline)) void
maxpool(const poolctx *c, int half)
{
	void *y = c->y;
	const void *x = c->x;
	int64_t *ind = c->ind;
	long X = c->X, Y = c->Y, k = c->k, s = c->s, p = c->p, nc = c->nc;
	for (long ch = 0; ch < nc; ch++) {
		long in = ch * X * X, out = ch * Y * Y;
		for (long oh = 0; oh < Y; oh++) {
			long h0, h1;
			span(oh, X, k, s, p, &h0, &h1);
			for (long ow = 0; ow < Y; ow++) {
				long w0, w1;
				span(ow, X, k, s, p, &w0, &w1);
				long best = h0 * X + w0;
				float m = -INFINITY;
				for (long ih = h0; ih < h1; ih++)
					for (long iw = w0; iw < w1; iw++) {
						long i = ih * X + iw;
						float v = pn_bf16_ld(x, in + i, half);
						if (v > m || isnan(v)) {
							m = v;
							best = i;
						}
					}
				pn_bf16_st(y, out + oh * Y + ow, m, half);
				ind[out + oh * Y + ow] = best;
			}
		}
	}
}

static void c_maxpool(const op *o)
{
	const poolctx *c = o->ctx;
	if (c->half)
		maxpool(c, 1);
	else
		maxpool(c, 0);
}

static void c_maxpool_bwd(const op *o)
{
	const poolctx *c = o->ctx;
	long X = c->X, Y = c->Y;
	int h = c->half;
	memset(c->dx, 0, (size_t)(c->nc * X * X) * (h ? 2 : 4));
	for (long ch = 0; ch < c->nc; ch++) {
		long in = ch * X * X, out = ch * Y * Y;
		for (long i = 0; i < Y * Y; i++) {
			long at = in + c->ind[out + i];
			pn_bf16_st(c->dx, at, pn_bf16_ld(c->dx, at, h) +
				   pn_bf16_ld(c->dy, out + i, h), h);
		}
	}
}

static void c_avgpool(const op *o)
{
	const poolctx *c = o->ctx;
	long X = c->X, Y = c->Y;
	int h = c->half;
	float div = (float)(c->k * c->k);
	for (long ch = 0; ch < c->nc; ch++) {
		long in = ch * X * X, out = ch * Y * Y;
		for (long oh = 0; oh < Y; oh++)
			for (long ow = 0; ow < Y; ow++) {
				long h0, h1, w0, w1;
				span(oh, X, c->k, c->s, c->p, &h0, &h1);
				span(ow, X, c->k, c->s, c->p, &w0, &w1);
				float sum = 0;
				for (long ih = h0; ih < h1; ih++)
					for (long iw = w0; iw < w1; iw++)
						sum += pn_bf16_ld(c->x, in + ih * X + iw, h);
				pn_bf16_st(c->y, out + oh * Y + ow, sum / div, h);
			}
	}
}

static void c_avgpool_bwd(const op *o)
{
	const poolctx *c = o->ctx;
	long X = c->X, Y = c->Y;
	int h = c->half;
	float div = (float)(c->k * c->k);
	memset(c->dx, 0, (size_t)(c->nc * X * X) * (h ? 2 : 4));
	for (long ch = 0; ch < c->nc; ch++) {
		long in = ch * X * X, out = ch * Y * Y;
		for (long oh = 0; oh < Y; oh++)
			for (long ow = 0; ow < Y; ow++) {
				long h0, h1, w0, w1;
				span(oh, X, c->k, c->s, c->p, &h0, &h1);
				span(ow, X, c->k, c->s, c->p, &w0, &w1);
				float g = pn_bf16_ld(c->dy, out + oh * Y + ow, h) / div;
				for (long ih = h0; ih < h1; ih++)
					for (long iw = w0; iw < w1; iw++) {
						long i = in + ih * X + iw;
						pn_bf16_st(c->dx, i,
							   pn_bf16_ld(c->dx, i, h) + g, h);
					}
			}
	}
}

void dn_pool(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, C = (dnnl_dim_t)l->in_channels,
		   X = (dnnl_dim_t)l->image, k = (dnnl_dim_t)l->kernel,
		   s = (dnnl_dim_t)l->stride, p = (dnnl_dim_t)l->padding;
	dnnl_dim_t Y = (X + 2 * p - k) / s + 1;
	int train = l->train, max = strcmp(l->op, "max") == 0;
	dnnl_memory_desc_t mx = MD(4, B, C, X, X), my = MD(4, B, C, Y, Y);
	dnnl_memory_t x = dn_tensor(r, &mx, RAND, 1), y = dn_tensor(r, &my, ZERO, 1);
	poolctx *c = dn_ctx(r, sizeof *c);
	int64_t *ind = max ? dn_balloc(r, (size_t)(B * C * Y * Y) *
				       sizeof(int64_t)) : NULL;
	if (r->st)
		return;
	*c = (poolctx){(long)(B * C), (long)X, (long)Y, (long)k, (long)s,
		       (long)p, dn_ptr(x), dn_ptr(y), NULL, NULL, ind,
		       dn_dt == dnnl_bf16};
	if (max)
		dn_fresh(r, x);
	op *o = dn_cop(r, FWD, max ? c_maxpool : c_avgpool);
	o->ctx = c;
	dn_note(r, "c:nchw");
	dn_canon(r, CX, x, NULL);
	dn_canon(r, CY, y, NULL);
	if (!train)
		return;
	dnnl_memory_t dy = dn_tensor(r, &my, RAND, 1), dx = dn_tensor(r, &mx, ZERO, 1);
	if (r->st)
		return;
	c->dy = dn_ptr(dy);
	c->dx = dn_ptr(dx);
	o = dn_cop(r, BWD, max ? c_maxpool_bwd : c_avgpool_bwd);
	if (!o)
		return;
	o->ctx = c;
	dn_canon(r, CDY, dy, NULL);
	dn_canon(r, CDX, dx, NULL);
}
