/* bnorm.c - the cpu backend's batchnorm, as PyTorch runs it on a CPU
 * tensor in NCHW, its default layout: ATen's batch-norm kernels (1.13,
 * batch_norm_kernel.cpp, the contiguous path), not oneDNN's batch
 * normalization, which took 1.3-3.6x PyTorch's time on this machine kind
 * for 32 x 64 x 16 x 16, 8 x 16 x 32 x 32 and 32 x 128 x 8 x 8 (and the
 * same for 32 x 32 x 32 x 32) in training (2026-11-28): its NCHW kernel
 * is slow on small images.
 *
 * Training forward: per channel, the mean (a sum over each image plane,
 * planes summed), then the variance (a second pass, of (x - mean)^2),
 * both element by element into a double as ATen 1.13 sums them, then y =
 * x alpha + beta per plane (alpha = g / std, beta = b - mean alpha): four
 * passes over x and y.  Inference: the running statistics' alpha and
 * beta, one pass.  Backward: per channel, the sums of dy and of (x -
 * mean) dy over the planes, in 16 float lanes (ATen's vector reductions)
 * and the planes' sums in double, then dx = (dy - sum dy / N - (x - mean)
 * k) g / std with k = sum (x - mean) dy / (N var): five passes; the
 * gradients of the scale and shift are those sums.  The running
 * statistics' update (a few scalars a channel) is left out. */
#include <math.h>
#include <stdint.h>

#include "bf16.h"
#include "dnn.h"

typedef struct {
	long B, C, S;             /* batch, channels, the plane's elements */
	normio io;                /* x, y, dy, dx bf16 when half */
	float *mean, *rstd;       /* per channel: the batch's, 1 / std */
	int train, half;
} bnctx;

enum { LANES = 16 };

/* The forward's statistics over the plane at `at`, as ATen 1.13's
 * batch_norm_cpu_collect_stats_contiguous_impl sums them: element by
 * element into a double, a serial chain the compiler cannot vectorize;
 * the sum of x (m 0) or of (x - m)^2 (sq). */
static double stat_sum(const bnctx *c, long at, double m, int sq)
{
	double s = 0;
	if (c->half) {
		for (long i = at; i < at + c->S; i++) {
			double v = pn_bf16_ld(c->io.x, i, 1) - m;
			s += sq ? v * v : v;
		}
		return s;
	}
	const float *x = (const float *)c->io.x + at;
	if (sq)
		for (long i = 0; i < c->S; i++)
			s += (x[i] - m) * (x[i] - m);
	else
		for (long i = 0; i < c->S; i++)
			s += x[i];
	return s;
}

/* The backward's sums over the plane at `at`, in vector lanes as ATen's
 * vec::reduce_all and map2_reduce_all: of dy (*sdy) and of (x - m) dy
 * (*dot), added to the two. */
static void grad_sums(const bnctx *c, long at, float m, double *sdy,
		      double *dot)
{
	if (c->half) {
		for (long i = at; i < at + c->S; i++) {
			float dy = pn_bf16_ld(c->io.dy, i, 1);
			*sdy += dy;
			*dot += (pn_bf16_ld(c->io.x, i, 1) - m) * dy;
		}
		return;
	}
	const float *x = (const float *)c->io.x + at, *y = (const float *)c->io.dy + at;
	float a[LANES] = {0}, d[LANES] = {0};
	long i = 0, n = c->S;
	for (; i + LANES <= n; i += LANES)
		for (int j = 0; j < LANES; j++) {
			a[j] += y[i + j];
			d[j] += (x[i + j] - m) * y[i + j];
		}
	float s = 0, t = 0;
	for (; i < n; i++) {
		s += y[i];
		t += (x[i] - m) * y[i];
	}
	for (int j = 0; j < LANES; j++) {
		s += a[j];
		t += d[j];
	}
	*sdy += s;
	*dot += t;
}

/* y = x alpha + beta over the plane at `at`. */
static void plane_affine(const bnctx *c, long at, float alpha, float beta)
{
	if (c->half) {
		for (long i = at; i < at + c->S; i++)
			pn_bf16_st(c->io.y, i, pn_bf16_ld(c->io.x, i, 1) * alpha + beta,
				   1);
		return;
	}
	const float *x = (const float *)c->io.x + at;
	float *y = (float *)c->io.y + at;
	for (long i = 0; i < c->S; i++)
		y[i] = x[i] * alpha + beta;
}

static void c_bn_fwd(const op *o)
{
	const bnctx *c = o->ctx;
	long plane = c->C * c->S;
	double n = (double)(c->B * c->S);
	for (long ch = 0; ch < c->C; ch++) {
		float mean = 0, rstd = 1 / sqrtf(1 + (float)PN_LN_EPS);
		if (c->train) {   /* inference: the running 0 and 1 */
			double s = 0, v = 0;
			for (long i = 0; i < c->B; i++)
				s += stat_sum(c, i * plane + ch * c->S, 0, 0);
			mean = (float)(s / n);
			for (long i = 0; i < c->B; i++)
				v += stat_sum(c, i * plane + ch * c->S, mean, 1);
			rstd = (float)(1 / sqrt(v / n + PN_LN_EPS));
			c->mean[ch] = mean;
			c->rstd[ch] = rstd;
		}
		float alpha = rstd * c->io.g[ch], beta = c->io.b[ch] - mean * alpha;
		for (long i = 0; i < c->B; i++)
			plane_affine(c, i * plane + ch * c->S, alpha, beta);
	}
}

static void c_bn_bwd(const op *o)
{
	const bnctx *c = o->ctx;
	long plane = c->C * c->S;
	double n = (double)(c->B * c->S);
	for (long ch = 0; ch < c->C; ch++) {
		float mean = c->mean[ch], rstd = c->rstd[ch];
		double sdy = 0, dot = 0;
		for (long i = 0; i < c->B; i++)
			grad_sums(c, i * plane + ch * c->S, mean, &sdy, &dot);
		float k = (float)(dot * rstd * rstd / n), gm = (float)(sdy / n),
		      w = rstd * c->io.g[ch];
		for (long i = 0; i < c->B; i++) {
			long at = i * plane + ch * c->S;
			if (c->half) {
				for (long j = at; j < at + c->S; j++)
					pn_bf16_st(c->io.dx, j, (pn_bf16_ld(c->io.dy, j, 1) -
						gm - (pn_bf16_ld(c->io.x, j, 1) - mean) *
						k) * w, 1);
				continue;
			}
			const float *x = (const float *)c->io.x + at,
				    *dy = (const float *)c->io.dy + at;
			float *dx = (float *)c->io.dx + at;
			for (long j = 0; j < c->S; j++)
				dx[j] = (dy[j] - gm - (x[j] - mean) * k) * w;
		}
		c->io.dg[ch] = (float)(dot * rstd);
		c->io.db[ch] = (float)sdy;
	}
}

void dn_batchnorm(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, C = (dnnl_dim_t)l->in_channels,
		   X = (dnnl_dim_t)l->image;
	/* statistics, scale and shift in fp32 whatever the data */
	dnnl_memory_desc_t md = MD(4, B, C, X, X), mc = MDF(1, C);
	bnctx *c = dn_ctx(r, sizeof *c);
	float *stats = dn_balloc(r, 2 * (size_t)C * sizeof *stats);
	if (r->st)
		return;
	*c = (bnctx){(long)B, (long)C, (long)(X * X), {0}, stats, stats + C,
		     l->train, dn_dt == dnnl_bf16};
	dn_norm_loops(r, &md, &mc, &c->io, c, c_bn_fwd, c_bn_bwd, "c:nchw");
}
