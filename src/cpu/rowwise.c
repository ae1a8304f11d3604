/* rowwise.c - the cpu backend's row-wise vector kernels in fp32 as
 * PyTorch runs them on a CPU tensor: ATen 1.13's layer norm
 * (layer_norm_kernel.cpp, moments_utils.h), softmax and log-softmax over
 * the last axis and their backwards (SoftMaxKernel.cpp), not oneDNN's
 * primitives, which ran 1.9-3.7x faster forward than Debian's PyTorch
 * 1.13 (bench/kernels-vs-torch, Xeon, 2026-11-30: pn / PyTorch per
 * element, layer norm 0.27-0.53, softmax 0.51-0.58, cross-entropy
 * 0.46-0.52; with these loops 0.60-0.82, 1.00-1.07, 0.88-0.95), so a step
 * predicted from them ran too fast.
 *
 * ATen's kernels are written on Vectorized<float>, whose width is the
 * CPU capability ATen dispatches: Debian's torch 1.13 picks AVX2 (8
 * lanes) on AVX-512 machines too ("CPU capability usage: AVX2",
 * torch.__config__.show()), the framework of samples/frameworks.  So the
 * loops here work in 8 lanes, built for x86-64-v3 and run on every CPU
 * that has it, the portable build below it.  Their reductions keep one
 * vector accumulator, as vec::reduce_all does, a chain the CPU cannot
 * overlap; e^x is vexp (Cephes' polynomial, as Sleef's expf8_u10).  bf16
 * runs keep oneDNN's primitives (vector.c; softmax's, here). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dnn.h"
#include "isa.h"

#pragma GCC diagnostic ignored "-Wpsabi"   /* vectors never cross a call */
#define AI inline __attribute__((always_inline))
enum { W = 8,        /* Vectorized<float>'s lanes under AVX2 */
       CHUNK = 16 }; /* vectors a Welford chunk of RowwiseMoments takes */

/* ---- vectors of W lanes (GCC's vector extension) ---------------------- */

typedef float vf __attribute__((vector_size(W * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(W * sizeof(int32_t))));

static AI vf ld(const float *p)
{
	vf v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* the first k < W lanes of a vector (the rest 0), as Vectorized's
 * loadu(p, k) and store(p, k) take a row's tail */
static AI vf ldn(const float *p, long k)
{
	vf v = {0};
	memcpy(&v, p, (size_t)k * sizeof *p);
	return v;
}

static AI void st(float *p, vf v, long k)
{
	memcpy(p, &v, (size_t)k * sizeof *p);
}

static AI vf splat(float x) { return (vf){0} + x; }

static AI vf vmax(vf a, vf b)
{
	vi m = a > b;
	return (vf)((m & (vi)a) | (~m & (vi)b));
}

static AI float hsum(vf v)
{
	float s = 0;
	for (int l = 0; l < W; l++)
		s += v[l];
	return s;
}

/* e^x in every lane (no library call, no branch): x = n ln2 + t with
 * |t| <= ln2/2 (ln2 in two parts, Cody and Waite), e^t by Cephes expf's
 * polynomial, 2^n into the exponent bits; within 1 ulp of e^x on [-87,
 * 88] (every float there checked against double exp), clamped outside.
 * A log-softmax's outputs are <= 0. */
static AI vf vexp(vf x)
{
	x = vmax(x, splat(-87.0f));
	x = -vmax(-x, splat(-88.0f));
	vf n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	vf t = x - n * 0.693359375f + n * 2.12194440e-4f;
	vf p = splat(1.9875691500e-4f);
	p = p * t + 1.3981999507e-3f;
	p = p * t + 8.3334519073e-3f;
	p = p * t + 4.1665795894e-2f;
	p = p * t + 1.6666665459e-1f;
	p = p * t + 5.0000001201e-1f;
	p = p * t * t + t + 1;
	vi e = (__builtin_convertvector(n, vi) + 127) << 23;
	return p * (vf)e;
}

/* ---- reductions over a row, one vector accumulator ------------------- */

/* sum of a (b NULL), a b (c NULL) or a b c over n */
static AI float row_sum(const float *restrict a, const float *restrict b,
			const float *restrict c, long n)
{
	long nb = n - n % W;
	vf acc = {0};
	float s = 0;
	for (long j = 0; j < nb; j += W)
		acc += c ? ld(a + j) * ld(b + j) * ld(c + j) :
		       b ? ld(a + j) * ld(b + j) : ld(a + j);
	for (long j = nb; j < n; j++)
		s += c ? a[j] * b[j] * c[j] : b ? a[j] * b[j] : a[j];
	return s + hsum(acc);
}

static AI float row_max(const float *restrict a, long n)
{
	long nb = n - n % W;
	vf acc = splat(a[0]);
	float m = a[0];
	for (long j = 0; j < nb; j += W)
		acc = vmax(ld(a + j), acc);
	for (long j = nb; j < n; j++)
		m = a[j] > m ? a[j] : m;
	for (int l = 0; l < W; l++)
		m = acc[l] > m ? acc[l] : m;
	return m;
}

/* sum of e^(a - m) over n (vec::map_reduce_all) */
static AI float row_expsum(const float *restrict a, float m, long n)
{
	long nb = n - n % W;
	vf acc = {0};
	float s = 0;
	for (long j = 0; j < nb; j += W)
		acc += vexp(ld(a + j) - m);
	vf e = vexp(ldn(a + nb, n - nb) - m);
	for (long l = 0; l < n - nb; l++)
		s += e[l];
	return s + hsum(acc);
}

/* ---- layer norm ------------------------------------------------------- */

/* Chan's merge of a group of nb values (mean mb, squared deviations qb)
 * into one of *na (*ma, *qa). */
static AI void merge(float *na, float *ma, float *qa, float nb, float mb,
		     float qb)
{
	float n = *na + nb, d = mb - *ma, c = n > 0 ? nb / n : 0;
	*ma += d * c;
	*qa += qb + d * d * c * *na;
	*na = n;
}

/* A row's mean and 1 / std, as RowwiseMoments: per lane, Welford over
 * chunks of CHUNK vectors (x - m1, m1 += d / (j + 1), m2 += d (x - m1): a
 * chain of two dependent operations a vector), each chunk merged into
 * the lanes' totals, then the lanes and the tail into one. */
static AI void moments(const float *restrict x, long n, float *mean,
		       float *rstd)
{
	static const float inv[CHUNK] = {1.f, 1.f / 2, 1.f / 3, 1.f / 4,
		1.f / 5, 1.f / 6, 1.f / 7, 1.f / 8, 1.f / 9, 1.f / 10, 1.f / 11,
		1.f / 12, 1.f / 13, 1.f / 14, 1.f / 15, 1.f / 16};
	long nv = n / W;
	float cnt = 0;
	vf m1 = {0}, m2 = {0};
	for (long i = 0; i < nv; i += CHUNK) {
		long k = nv - i < CHUNK ? nv - i : CHUNK;
		vf a1 = {0}, a2 = {0};
		for (long j = 0; j < k; j++) {
			vf v = ld(x + (i + j) * W), d = v - a1;
			a1 += d * inv[j];
			a2 += d * (v - a1);
		}
		float tot = cnt + (float)k, cb = (float)k / tot;
		vf d = a1 - m1;
		m1 += d * cb;
		m2 += a2 + d * d * (cb * cnt);
		cnt = tot;
	}
	float c = 0, m = 0, q = 0;
	for (long j = nv * W; j < n; j++)
		merge(&c, &m, &q, 1, x[j], 0);
	for (int l = 0; l < W && cnt > 0; l++)
		merge(&c, &m, &q, cnt, m1[l], m2[l]);
	float var = q / (float)n;
	*mean = m;
	*rstd = 1 / sqrtf((var > 0 ? var : 0) + (float)PN_LN_EPS);
}

/* Built for the baseline ISA, whatever the caller's: Debian's torch 1.13
 * runs RowwiseMoments, an inline template that every capability's
 * translation unit instantiates, as the copy of its default build the
 * linker kept: its loop is SSE, two 4-lane halves of a vector, a
 * multiply and an add where AVX2 has one FMA (perf annotate, 2026-11-30),
 * while the output pass beside it runs at AVX2.  The chain
 * sub-mul-add of each half takes most of a forward's time. */
static __attribute__((noinline)) void moments_base(const float *restrict x,
						   long n, float *mean,
						   float *rstd)
{
	moments(x, n, mean, rstd);
}

typedef struct {
	long M, N;                    /* rows, and the normalized size */
	normio io;                    /* fp32 */
	float *mean, *rstd;           /* per row */
	float *buf;                   /* 2 N: dg and db, summed over rows */
} lnctx;

#define LN_ARGS const lnctx *restrict c

/* y = (x rstd - mean rstd) g + b, per row (vec::map3) */
static AI void ln_fwd_rows(LN_ARGS)
{
	long N = c->N;
	const float *g = c->io.g, *b = c->io.b;
	for (long i = 0; i < c->M; i++) {
		const float *x = (const float *)c->io.x + i * N;
		float *y = (float *)c->io.y + i * N, mean, rstd;
		moments_base(x, N, &mean, &rstd);
		float s = rstd, t = -rstd * mean;
		for (long j = 0; j < N; j++)
			y[j] = (x[j] * s + t) * g[j] + b[j];
		c->mean[i] = mean;
		c->rstd[i] = rstd;
	}
}

/* ATen's backward, one thread: a zeroed buffer for the gradients of g
 * and b, then per row dg += dy (x rstd - mean rstd) and db += dy (two
 * passes), ds = sum dy x g and db' = sum dy g (two reductions), dx = a dy
 * g + b' x + c' (one pass); last, the buffer into dg and db. */
static AI void ln_bwd_rows(LN_ARGS)
{
	long N = c->N;
	const float *g = c->io.g;
	float *bg = c->buf, *bb = c->buf + N, scale = 1 / (float)N;
	memset(c->buf, 0, 2 * (size_t)N * sizeof *c->buf);
	for (long i = 0; i < c->M; i++) {
		const float *x = (const float *)c->io.x + i * N,
			    *dy = (const float *)c->io.dy + i * N;
		float *dx = (float *)c->io.dx + i * N;
		float a = c->rstd[i], m = c->mean[i], t = -a * m;
		for (long j = 0; j < N; j++)
			bg[j] += dy[j] * (a * x[j] + t);
		for (long j = 0; j < N; j++)
			bb[j] += dy[j];
		float ds = row_sum(dy, x, g, N), db = row_sum(dy, g, NULL, N);
		float b = (db * m - ds) * a * a * a * scale;
		float k = -b * m - db * a * scale;
		for (long j = 0; j < N; j++)
			dx[j] = a * dy[j] * g[j] + b * x[j] + k;
	}
	memcpy(c->io.dg, bg, (size_t)N * sizeof *bg);
	memcpy(c->io.db, bb, (size_t)N * sizeof *bb);
}

/* ---- softmax and log-softmax ----------------------------------------- */

#define SM_ARGS const float *restrict x, float *restrict y, size_t rows, \
	size_t m, int log

/* Per row: the max; softmax: y = e^(x - max), its sum, y /= sum (four
 * passes); log-softmax: the sum of e^(x - max), y = x - max - ln sum
 * (three). */
static AI void sm_rows(SM_ARGS)
{
	for (size_t i = 0; i < rows; i++) {
		const float *a = x + i * m;
		float *b = y + i * m, mx = row_max(a, (long)m);
		if (log) {
			float o = mx + logf(row_expsum(a, mx, (long)m));
			for (size_t j = 0; j < m; j++)
				b[j] = a[j] - o;
			continue;
		}
		size_t mb = m - m % W;
		for (size_t j = 0; j < mb; j += W)
			st(b + j, vexp(ld(a + j) - mx), W);
		st(b + mb, vexp(ldn(a + mb, (long)(m - mb)) - mx), (long)(m - mb));
		float s = 1 / row_sum(b, NULL, NULL, (long)m);
		for (size_t j = 0; j < m; j++)
			b[j] *= s;
	}
}

#define SMB_ARGS const float *restrict y, const float *restrict dy, \
	float *restrict dx, size_t rows, size_t m, int log

/* Per row: s = sum dy (log) or sum dy y; dx = dy - e^y s (log) or
 * y (dy - s). */
static AI void smb_rows(SMB_ARGS)
{
	for (size_t i = 0; i < rows; i++) {
		const float *a = y + i * m, *g = dy + i * m;
		float *d = dx + i * m;
		if (log) {
			float s = row_sum(g, NULL, NULL, (long)m);
			size_t mb = m - m % W;
			for (size_t j = 0; j < mb; j += W)
				st(d + j, ld(g + j) - vexp(ld(a + j)) * s, W);
			long k = (long)(m - mb);
			st(d + mb, ldn(g + mb, k) - vexp(ldn(a + mb, k)) * s, k);
		} else {
			float s = row_sum(g, a, NULL, (long)m);
			for (size_t j = 0; j < m; j++)
				d[j] = a[j] * (g[j] - s);
		}
	}
}

/* ---- one version per ISA level ---------------------------------------- */

static void ln_fwd_base(LN_ARGS) { ln_fwd_rows(c); }
static void ln_bwd_base(LN_ARGS) { ln_bwd_rows(c); }
static void sm_base(SM_ARGS) { sm_rows(x, y, rows, m, log); }
static void smb_base(SMB_ARGS) { smb_rows(y, dy, dx, rows, m, log); }
#if PN_ISA_LEVELS
PN_ISA_V3 static void ln_fwd_v3(LN_ARGS) { ln_fwd_rows(c); }
PN_ISA_V3 static void ln_bwd_v3(LN_ARGS) { ln_bwd_rows(c); }
PN_ISA_V3 static void sm_v3(SM_ARGS) { sm_rows(x, y, rows, m, log); }
PN_ISA_V3 static void smb_v3(SMB_ARGS) { smb_rows(y, dy, dx, rows, m, log); }
#define V3 (pn_isa_level() >= 3)
#else
#define V3 0
#define ln_fwd_v3 ln_fwd_base
#define ln_bwd_v3 ln_bwd_base
#define sm_v3 sm_base
#define smb_v3 smb_base
#endif

static void c_ln_fwd(const op *o)
{
	(V3 ? ln_fwd_v3 : ln_fwd_base)(o->ctx);
}

static void c_ln_bwd(const op *o)
{
	(V3 ? ln_bwd_v3 : ln_bwd_base)(o->ctx);
}

/* a = x, c = y; n rows of m; k: log-softmax */
static void c_softmax(const op *o)
{
	(V3 ? sm_v3 : sm_base)(o->a, o->c, o->n, o->m, o->k);
}

/* a = y, b = dy, c = dx */
static void c_softmax_bwd(const op *o)
{
	(V3 ? smb_v3 : smb_base)(o->a, o->b, o->c, o->n, o->m, o->k);
}

/* ---- the layers' ops -------------------------------------------------- */

void dn_layernorm_c(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t N = (dnnl_dim_t)(l->batch * l->seq_len), D = (dnnl_dim_t)l->dim;
	dnnl_memory_desc_t md = MD(2, N, D), mg = MDF(1, D);
	lnctx *c = dn_ctx(r, sizeof *c);
	float *stats = dn_fbuf(r, 2 * (size_t)N);
	float *buf = l->train ? dn_fbuf(r, 2 * (size_t)D) : NULL;
	if (r->st)
		return;
	*c = (lnctx){(long)N, (long)D, {0}, stats, stats + N, buf};
	dn_norm_loops(r, &md, &mg, &c->io, c, c_ln_fwd, c_ln_bwd, "c:layernorm");
}

/* fn over rows of m: a, b, c its buffers (op's fields), k log */
static void rows_op(pn_run *r, int ph, void (*fn)(const op *), void *a,
		    void *b, void *c, size_t rows, size_t m, int log,
		    const char *note)
{
	op *o = dn_cop(r, ph, fn);
	if (!o)
		return;
	*o = (op){.fn = o->fn, .a = a, .b = b, .c = c, .n = rows, .m = m,
		  .k = log};
	dn_note(r, note);
}

void dn_softmax_fwd(pn_run *r, int ph, dnnl_primitive_desc_t fpd, int log,
		    dnnl_memory_t x, dnnl_memory_t y, size_t rows, size_t m)
{
	if (r->st)
		return;
	if (dn_dt == dnnl_f32)
		rows_op(r, ph, c_softmax, dn_ptr(x), NULL, dn_ptr(y), rows, m,
			log, "c:softmax");
	else
		dn_prim(r, ph, fpd, DNNL_ARG_SRC, x, DNNL_ARG_DST, y, -1);
}

void dn_softmax_bwd(pn_run *r, int ph, dnnl_primitive_desc_t bpd, int log,
		    dnnl_memory_t y, dnnl_memory_t dy, dnnl_memory_t dx,
		    size_t rows, size_t m)
{
	if (r->st)
		return;
	if (dn_dt == dnnl_f32)
		rows_op(r, ph, c_softmax_bwd, dn_ptr(y), dn_ptr(dy), dn_ptr(dx),
			rows, m, log, "c:softmax_bwd");
	else
		dn_prim(r, ph, bpd, DNNL_ARG_DST, y, DNNL_ARG_DIFF_DST, dy,
			DNNL_ARG_DIFF_SRC, dx, -1);
}
