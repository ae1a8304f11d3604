/* onednn.c - the cpu backend of pn-time: oneDNN primitives (C API), plain-C
 * loops where oneDNN has no primitive (embedding, dropout, tensor pow,
 * optimizer updates). */
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "../time/backend.h"
#include "cpu.h"
#include "err.h"
#include "rng.h"

#define MAXOPS 64
#define MAXBUF 160
#define MAXPAR 64
#define MAXPD 64
#define MAXL 16           /* recurrent layers */

enum { FWD, BWD, NPHASE };
enum { CX, CX2, CY, CDX, CDX2, CDY, NCANON };

typedef struct op {
	dnnl_primitive_t prim;
	int nargs;
	dnnl_exec_arg_t args[16];
	void (*fn)(const struct op *);   /* a plain-C op */
	float *a, *b, *c, *d;
	const int32_t *idx;
	size_t n, m;
	float f;
	int k;
	void *ctx;
} op;

typedef struct {
	dnnl_memory_t w, g;                /* weights and their gradient */
	float *s1, *s2;                    /* optimizer state */
	size_t n;                          /* floats in w (with padding) */
	dnnl_memory_desc_t canon, gcanon;  /* canonical layout of w, g */
} param;

struct pn_run {
	pn_config cfg;
	int st;
	char msg[256];
	double bytes, limit;
	void *buf[MAXBUF];
	int nbuf;
	dnnl_memory_t mem[MAXBUF];
	int nmem;
	dnnl_primitive_desc_t pd[MAXPD];
	int npd;
	op ops[NPHASE][MAXOPS];
	int nops[NPHASE];
	param par[MAXPAR];
	int npar;
	long t;                            /* optimizer steps taken */
	char impl[160];
	pn_rng rng;
	dnnl_memory_t canon[NCANON];       /* tensors of pn_io */
	dnnl_memory_desc_t cmd[NCANON];    /* ... and their canonical layout */
	int32_t *idx;                      /* embedding indices */
	int rnn;                           /* weights need the recurrent map */
	int nl;                            /* recurrent layers */
	dnnl_memory_t rw[MAXL][2], rb[MAXL], rdw[MAXL][2], rdb[MAXL];
};

static dnnl_engine_t eng;
static dnnl_stream_t strm;
static pn_bk_opts opts;

/* ---- errors and memory ---------------------------------------------------- */

static void fail(pn_run *r, int st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(pn_run *r, int st, const char *fmt, ...)
{
	if (r->st != PN_OK)
		return;
	r->st = st;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof r->msg, fmt, ap);
	va_end(ap);
}

#define DN(call, what) dn(r, (call), what, __FILE__, __LINE__)
static int dn(pn_run *r, dnnl_status_t s, const char *what, const char *file,
	      int line)
{
	if (s == dnnl_success)
		return 0;
	if (s == dnnl_unimplemented)
		fail(r, PN_INVALID, "oneDNN has no %s for this configuration",
		     what);
	else if (s == dnnl_out_of_memory)
		fail(r, PN_OOM, "oneDNN: out of memory (%s)", what);
	else
		fail(r, PN_ERROR, "%s:%d: oneDNN %s: %s", file, line, what,
		     dnnl_status2str(s));
	return -1;
}

static void *balloc(pn_run *r, size_t bytes)
{
	if (r->st)
		return NULL;
	r->bytes += (double)bytes;
	if (r->limit > 0 && r->bytes > r->limit) {
		fail(r, PN_OOM, "needs more than --mem-limit %.0f bytes",
		     r->limit);
		return NULL;
	}
	if (r->nbuf == MAXBUF)
		PN_BUG("too many buffers");
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
	if (!p) {
		fail(r, PN_OOM, "out of memory allocating %zu bytes", bytes);
		return NULL;
	}
	r->buf[r->nbuf++] = p;
	return p;
}

static float *fbuf(pn_run *r, size_t n)
{
	float *p = balloc(r, n * sizeof(float));
	if (p)
		memset(p, 0, n * sizeof(float));
	return p;
}

typedef enum { ZERO, RAND, WEIGHT, NOFILL } fill;

/* A memory object of md on a new buffer; fill ZERO, RAND in [-1, 1),
 * WEIGHT in [-1/sqrt(fan), 1/sqrt(fan)). */
static dnnl_memory_t tensor(pn_run *r, const dnnl_memory_desc_t *md, fill f,
			    double fan)
{
	if (r->st)
		return NULL;
	size_t bytes = dnnl_memory_desc_get_size(md);
	float *p = balloc(r, bytes);
	if (!p)
		return NULL;
	size_t n = bytes / sizeof(float);
	float a = (float)(1 / sqrt(fan > 0 ? fan : 1));
	if (f == RAND)
		pn_rng_fill(&r->rng, p, n, -1, 1);
	else if (f == WEIGHT)
		pn_rng_fill(&r->rng, p, n, -a, a);
	else
		memset(p, 0, bytes);
	dnnl_memory_t m;
	if (DN(dnnl_memory_create(&m, md, eng, p), "memory"))
		return NULL;
	r->mem[r->nmem++] = m;
	return m;
}

/* A memory object of md on an existing buffer. */
static dnnl_memory_t view(pn_run *r, const dnnl_memory_desc_t *md, void *p)
{
	if (r->st)
		return NULL;
	dnnl_memory_t m;
	if (DN(dnnl_memory_create(&m, md, eng, p), "memory"))
		return NULL;
	if (r->nmem == MAXBUF)
		PN_BUG("too many memories");
	r->mem[r->nmem++] = m;
	return m;
}

static float *ptr(dnnl_memory_t m)
{
	void *p = NULL;
	if (m)
		dnnl_memory_get_data_handle(m, &p);
	return p;
}

static const dnnl_memory_desc_t *mdof(dnnl_memory_t m)
{
	const dnnl_memory_desc_t *md = NULL;
	dnnl_memory_get_memory_desc(m, &md);
	return md;
}

static size_t nfloats(dnnl_memory_t m)
{
	return dnnl_memory_desc_get_size(mdof(m)) / sizeof(float);
}

/* memory descriptors */
static dnnl_memory_desc_t md_tag(int nd, const dnnl_dim_t *dims,
				 dnnl_format_tag_t tag)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t d = {0};
	memcpy(d, dims, (size_t)nd * sizeof *dims);
	if (dnnl_memory_desc_init_by_tag(&md, nd, d, dnnl_f32, tag) !=
	    dnnl_success)
		PN_BUG("memory descriptor");
	return md;
}

static dnnl_memory_desc_t md_str(int nd, const dnnl_dim_t *dims,
				 const dnnl_dim_t *strides)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t d = {0}, s = {0};
	memcpy(d, dims, (size_t)nd * sizeof *dims);
	memcpy(s, strides, (size_t)nd * sizeof *strides);
	if (dnnl_memory_desc_init_by_strides(&md, nd, d, dnnl_f32, s) != dnnl_success)
		PN_BUG("memory descriptor");
	return md;
}

#define DIMS(...) ((const dnnl_dim_t[]){__VA_ARGS__})
static const dnnl_format_tag_t plain[] = {
	dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde
};
#define MD(nd, ...) md_tag(nd, DIMS(__VA_ARGS__), plain[nd])
#define ANY(nd, ...) md_tag(nd, DIMS(__VA_ARGS__), dnnl_format_tag_any)
#define MDS(nd, d, s) md_str(nd, d, s)

/* ---- primitives ----------------------------------------------------------- */

static dnnl_primitive_attr_t attr_new(int act, float scale)
{
	dnnl_primitive_attr_t a;
	dnnl_primitive_attr_create(&a);
	dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
	if (act != PN_ACT_NONE) {
		static const dnnl_alg_kind_t alg[] = {dnnl_alg_kind_undef,
			dnnl_eltwise_relu, dnnl_eltwise_tanh,
			dnnl_eltwise_logistic};
		dnnl_post_ops_t po;
		dnnl_post_ops_create(&po);
		dnnl_post_ops_append_eltwise(po, 1, alg[act], 0, 0);
		dnnl_primitive_attr_set_post_ops(a, po);
		dnnl_post_ops_destroy(po);
	}
	if (scale != 1)
		dnnl_primitive_attr_set_output_scales(a, 1, 0, &scale);
	return a;
}

/* A primitive descriptor of desc (an op descriptor) with attributes
 * (act, scale), after the forward hint; NULL on failure. */
static dnnl_primitive_desc_t pdesc(pn_run *r, const void *desc, int act,
				   float scale, const_dnnl_primitive_desc_t hint,
				   const char *what)
{
	if (r->st)
		return NULL;
	dnnl_primitive_attr_t a = attr_new(act, scale);
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t s = dnnl_primitive_desc_create(&pd, desc, a, eng, hint);
	dnnl_primitive_attr_destroy(a);
	if (DN(s, what))
		return NULL;
	if (r->npd == MAXPD)
		PN_BUG("too many primitive descriptors");
	r->pd[r->npd++] = pd;
	return pd;
}

static const dnnl_memory_desc_t *q(const_dnnl_primitive_desc_t pd,
				   dnnl_query_t what, int i)
{
	return dnnl_primitive_desc_query_md(pd, what, i);
}

static op *newop(pn_run *r, int ph)
{
	if (r->nops[ph] == MAXOPS)
		PN_BUG("too many ops");
	op *o = &r->ops[ph][r->nops[ph]++];
	memset(o, 0, sizeof *o);
	return o;
}

static void note_impl(pn_run *r, const_dnnl_primitive_desc_t pd)
{
	const char *s = NULL;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
	if (!s || strstr(r->impl, s))
		return;
	size_t n = strlen(r->impl);
	snprintf(r->impl + n, sizeof r->impl - n, "%s%s", n ? "," : "", s);
}

/* Add the primitive of pd to phase ph with (arg, memory) pairs ending in
 * -1; allocates its scratchpad.  A NULL memory drops its argument. */
static void prim(pn_run *r, int ph, dnnl_primitive_desc_t pd, ...)
{
	if (r->st)
		return;
	op *o = newop(r, ph);
	va_list ap;
	va_start(ap, pd);
	for (int arg; (arg = va_arg(ap, int)) != -1;) {
		dnnl_memory_t m = va_arg(ap, dnnl_memory_t);
		if (!m)
			continue;
		o->args[o->nargs].arg = arg;
		o->args[o->nargs++].memory = m;
	}
	va_end(ap);
	const dnnl_memory_desc_t *sp = q(pd, dnnl_query_scratchpad_md, 0);
	if (sp && dnnl_memory_desc_get_size(sp) > 0) {
		dnnl_memory_t m = tensor(r, sp, NOFILL, 1);
		o->args[o->nargs].arg = DNNL_ARG_SCRATCHPAD;
		o->args[o->nargs++].memory = m;
	}
	if (r->st)
		return;
	if (DN(dnnl_primitive_create(&o->prim, pd), "primitive"))
		return;
	note_impl(r, pd);
}

/* A reorder of src into dst added to phase ph. */
static void reorder(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t dst)
{
	if (r->st)
		return;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_attr_t a = attr_new(PN_ACT_NONE, 1);
	dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, mdof(src),
		eng, mdof(dst), eng, a);
	dnnl_primitive_attr_destroy(a);
	if (DN(s, "reorder"))
		return;
	r->pd[r->npd++] = pd;
	prim(r, ph, pd, DNNL_ARG_FROM, src, DNNL_ARG_TO, dst, -1);
}

/* m in layout want: m itself, or a new tensor filled by a reorder added
 * to phase ph now. */
static dnnl_memory_t as(pn_run *r, int ph, dnnl_memory_t m,
			const dnnl_memory_desc_t *want)
{
	if (r->st)
		return NULL;
	if (dnnl_memory_desc_equal(mdof(m), want))
		return m;
	dnnl_memory_t t = tensor(r, want, ZERO, 1);
	reorder(r, ph, m, t);
	return t;
}

static op *cop(pn_run *r, int ph, void (*fn)(const op *))
{
	if (r->st)
		return NULL;
	op *o = newop(r, ph);
	o->fn = fn;
	return o;
}

static void addparam(pn_run *r, dnnl_memory_t w, dnnl_memory_t g,
		     const dnnl_memory_desc_t *canon)
{
	if (r->st || !w)
		return;
	if (r->npar == MAXPAR)
		PN_BUG("too many parameters");
	param *p = &r->par[r->npar++];
	p->w = w;
	p->g = g;
	p->n = nfloats(w);
	p->canon = canon ? *canon : *mdof(w);
	p->gcanon = canon ? *canon : g ? *mdof(g) : *mdof(w);
	int ns = r->cfg.l.train ? pn_opt_states(r->cfg.l.optimizer) : 0;
	p->s1 = ns > 0 ? fbuf(r, p->n) : NULL;
	p->s2 = ns > 1 ? fbuf(r, p->n) : NULL;
}

static void canon(pn_run *r, int slot, dnnl_memory_t m,
		  const dnnl_memory_desc_t *md)
{
	if (r->st || !m)         /* a failed prepare: nothing to compare */
		return;
	r->canon[slot] = m;
	r->cmd[slot] = md ? *md : *mdof(m);
}

/* ---- plain-C ops ---------------------------------------------------------- */

static void c_dropout(const op *o)          /* b = a * keep / (1 - p) */
{
	float s = 1 / (1 - o->f);
	for (size_t i = 0; i < o->n; i++)
		o->b[i] = pn_keep((uint64_t)o->k, i, o->f) ? o->a[i] * s : 0;
}

static void c_zero(const op *o)
{
	memset(o->a, 0, o->n * sizeof(float));
}

static void c_gather(const op *o)           /* b[i] = a[idx[i]] rows of m */
{
	for (size_t i = 0; i < o->n; i++)
		memcpy(o->b + i * o->m, o->a + (size_t)o->idx[i] * o->m,
		       o->m * sizeof(float));
}

static void c_scatter(const op *o)          /* b = 0 (k rows); b[idx[i]] += a[i] */
{
	memset(o->b, 0, (size_t)o->k * o->m * sizeof(float));
	for (size_t i = 0; i < o->n; i++) {
		float *dst = o->b + (size_t)o->idx[i] * o->m;
		const float *src = o->a + i * o->m;
		for (size_t j = 0; j < o->m; j++)
			dst[j] += src[j];
	}
}

static void c_pow(const op *o)              /* c = a ^ b */
{
	for (size_t i = 0; i < o->n; i++)
		o->c[i] = powf(o->a[i], o->b[i]);
}

typedef struct {
	const float *x1, *x2, *y, *dy;
	float *dx1, *dx2;
} powbwd;

static void c_pow_bwd(const op *o)
{
	const powbwd *p = o->ctx;
	for (size_t i = 0; i < o->n; i++) {
		p->dx1[i] = p->dy[i] * p->x2[i] * powf(p->x1[i], p->x2[i] - 1);
		p->dx2[i] = p->dy[i] * p->y[i] * logf(p->x1[i]);
	}
}

static float act_f(int act, float x)
{
	return act == PN_ACT_RELU ? (x > 0 ? x : 0) :
	       act == PN_ACT_TANH ? tanhf(x) : 1 / (1 + expf(-x));
}

static float act_d(int act, float y)        /* derivative from the output */
{
	return act == PN_ACT_RELU ? (y > 0) :
	       act == PN_ACT_TANH ? 1 - y * y : y * (1 - y);
}

static void c_act(const op *o)              /* b = act(a) */
{
	for (size_t i = 0; i < o->n; i++)
		o->b[i] = act_f(o->k, o->a[i]);
}

static void c_act_bwd(const op *o)          /* c = a * act'(from output b) */
{
	for (size_t i = 0; i < o->n; i++)
		o->c[i] = o->a[i] * act_d(o->k, o->b[i]);
}

/* ---- layers --------------------------------------------------------------- */

static dnnl_alg_kind_t act_bwd_alg(int act)
{
	return act == PN_ACT_RELU ? dnnl_eltwise_relu_use_dst_for_bwd :
	       act == PN_ACT_TANH ? dnnl_eltwise_tanh_use_dst_for_bwd :
				    dnnl_eltwise_logistic_use_dst_for_bwd;
}

/* dz = dy * act'(y) as an eltwise backward primitive on y's layout. */
static dnnl_memory_t act_bwd(pn_run *r, int act, dnnl_memory_t y,
			     dnnl_memory_t dy)
{
	if (act == PN_ACT_NONE || r->st)
		return dy;
	dnnl_eltwise_desc_t fd, bd;
	dnnl_alg_kind_t alg = act_bwd_alg(act);
	const dnnl_memory_desc_t *md = mdof(y);
	DN(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, alg, md,
					  0, 0), "eltwise");
	dnnl_primitive_desc_t hint = pdesc(r, &fd, 0, 1, NULL, "eltwise");
	DN(dnnl_eltwise_backward_desc_init(&bd, alg, md, md, 0, 0), "eltwise");
	dnnl_primitive_desc_t pd = pdesc(r, &bd, 0, 1, hint, "eltwise backward");
	dnnl_memory_t dz = tensor(r, md, ZERO, 1);
	prim(r, BWD, pd, DNNL_ARG_DST, y, DNNL_ARG_DIFF_DST, dy,
	     DNNL_ARG_DIFF_SRC, dz, -1);
	return dz;
}

/* dst = src @ wei (+ bias) on plain memories (any strides). */
static void matmul(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t wei,
		   dnnl_memory_t bias, dnnl_memory_t dst, int act, float scale)
{
	if (r->st)
		return;
	dnnl_matmul_desc_t d;
	DN(dnnl_matmul_desc_init(&d, mdof(src), mdof(wei),
				 bias ? mdof(bias) : NULL, mdof(dst)), "matmul");
	dnnl_primitive_desc_t pd = pdesc(r, &d, act, scale, NULL, "matmul");
	prim(r, ph, pd, DNNL_ARG_SRC, src, DNNL_ARG_WEIGHTS, wei,
	     DNNL_ARG_BIAS, bias, DNNL_ARG_DST, dst, -1);
}

/* dst[1][n] = sum over rows of src[m][n] */
static void colsum(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t dst)
{
	if (r->st)
		return;
	if (mdof(src)->dims[0] == 1) {     /* one row: oneDNN wants a copy */
		reorder(r, ph, src, dst);
		return;
	}
	dnnl_reduction_desc_t d;
	DN(dnnl_reduction_desc_init(&d, dnnl_reduction_sum, mdof(src),
				    mdof(dst), 0, 0), "reduction");
	dnnl_primitive_desc_t pd = pdesc(r, &d, 0, 1, NULL, "reduction");
	prim(r, ph, pd, DNNL_ARG_SRC, src, DNNL_ARG_DST, dst, -1);
}

static void dense(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, I = (dnnl_dim_t)l->in_features,
		   O = (dnnl_dim_t)l->out_features;
	int act = l->activation, train = l->train;
	dnnl_memory_desc_t mx = MD(2, B, I), my = MD(2, B, O),
		mw = MDS(2, DIMS(I, O), DIMS(1, I)), mb = MD(2, 1, O);
	dnnl_memory_t x = tensor(r, &mx, RAND, 1);
	dnnl_memory_t w = tensor(r, &mw, WEIGHT, (double)I);
	dnnl_memory_t b = l->bias ? tensor(r, &mb, WEIGHT, (double)I) : NULL;
	dnnl_memory_t y = tensor(r, &my, ZERO, 1);
	matmul(r, FWD, x, w, b, y, act, 1);
	canon(r, CX, x, NULL);
	canon(r, CY, y, NULL);
	if (!train) {
		addparam(r, w, NULL, NULL);
		addparam(r, b, NULL, NULL);
		return;
	}
	dnnl_memory_t dy = tensor(r, &my, RAND, 1);
	dnnl_memory_t dz = act_bwd(r, act, y, dy);
	dnnl_memory_desc_t mwt = MD(2, O, I), mdzt = MDS(2, DIMS(O, B),
							DIMS(1, O));
	dnnl_memory_t dx = tensor(r, &mx, ZERO, 1);
	matmul(r, BWD, dz, view(r, &mwt, ptr(w)), NULL, dx, 0, 1);
	dnnl_memory_t dw = tensor(r, &mwt, ZERO, 1);
	matmul(r, BWD, view(r, &mdzt, ptr(dz)), x, NULL, dw, 0, 1);
	dnnl_memory_t db = b ? tensor(r, &mb, ZERO, 1) : NULL;
	if (b)
		colsum(r, BWD, dz, db);
	addparam(r, w, dw, NULL);
	addparam(r, b, db, NULL);
	canon(r, CDY, dy, NULL);
	canon(r, CDX, dx, NULL);
}

static void bmm(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, M = (dnnl_dim_t)l->m,
		   N = (dnnl_dim_t)l->n, K = (dnnl_dim_t)l->k;
	dnnl_memory_desc_t ma = MD(3, B, M, N), mb = MD(3, B, N, K),
			   mc = MD(3, B, M, K);
	dnnl_memory_t a = tensor(r, &ma, RAND, 1), b = tensor(r, &mb, RAND, 1);
	dnnl_memory_t c = tensor(r, &mc, ZERO, 1);
	matmul(r, FWD, a, b, NULL, c, 0, 1);
	canon(r, CX, a, NULL);
	canon(r, CX2, b, NULL);
	canon(r, CY, c, NULL);
	if (!l->train)
		return;
	dnnl_memory_t dc = tensor(r, &mc, RAND, 1);
	dnnl_memory_t da = tensor(r, &ma, ZERO, 1), db = tensor(r, &mb, ZERO, 1);
	dnnl_memory_desc_t bt = MDS(3, DIMS(B, K, N), DIMS(N * K, 1, K)),
			   at = MDS(3, DIMS(B, N, M), DIMS(M * N, 1, N));
	matmul(r, BWD, dc, view(r, &bt, ptr(b)), NULL, da, 0, 1);
	matmul(r, BWD, view(r, &at, ptr(a)), dc, NULL, db, 0, 1);
	canon(r, CDY, dc, NULL);
	canon(r, CDX, da, NULL);
	canon(r, CDX2, db, NULL);
}

static void conv2d(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, C = (dnnl_dim_t)l->in_channels,
		   O = (dnnl_dim_t)l->out_channels, X = (dnnl_dim_t)l->image,
		   k = (dnnl_dim_t)l->kernel, s = (dnnl_dim_t)l->stride,
		   p = (dnnl_dim_t)l->padding;
	dnnl_dim_t Y = (X + 2 * p - k) / s + 1, pr = (Y - 1) * s + k - X - p;
	int train = l->train, act = l->activation;
	dnnl_memory_desc_t sx = ANY(4, B, C, X, X), sw = ANY(4, O, C, k, k),
		sy = ANY(4, B, O, Y, Y), mb = MD(1, O);
	dnnl_dims_t st = {s, s}, pl = {p, p}, prr = {pr, pr};
	dnnl_convolution_desc_t fd;
	DN(dnnl_convolution_forward_desc_init(&fd, train ? dnnl_forward_training
		: dnnl_forward_inference, dnnl_convolution_auto, &sx, &sw,
		l->bias ? &mb : NULL, &sy, st, pl, prr), "convolution");
	dnnl_primitive_desc_t fpd = pdesc(r, &fd, act, 1, NULL, "convolution");
	if (r->st)
		return;
	double fan = (double)(C * k * k);
	dnnl_memory_t x = tensor(r, q(fpd, dnnl_query_src_md, 0), RAND, 1);
	dnnl_memory_t w = tensor(r, q(fpd, dnnl_query_weights_md, 0), WEIGHT, fan);
	dnnl_memory_t b = l->bias ? tensor(r, &mb, WEIGHT, fan) : NULL;
	dnnl_memory_t y = tensor(r, q(fpd, dnnl_query_dst_md, 0), ZERO, 1);
	prim(r, FWD, fpd, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, DNNL_ARG_BIAS, b,
	     DNNL_ARG_DST, y, -1);
	dnnl_memory_desc_t cx = MD(4, B, C, X, X), cy = MD(4, B, O, Y, Y),
			   cw = MD(4, O, C, k, k);
	canon(r, CX, x, &cx);
	canon(r, CY, y, &cy);
	if (!train) {
		addparam(r, w, NULL, &cw);
		addparam(r, b, NULL, &mb);
		return;
	}
	dnnl_memory_desc_t dsx = ANY(4, B, C, X, X), dsw = ANY(4, O, C, k, k),
			   dsy = ANY(4, B, O, Y, Y);
	dnnl_convolution_desc_t dd, wd;
	DN(dnnl_convolution_backward_data_desc_init(&dd, dnnl_convolution_auto,
		&dsx, &dsw, &dsy, st, pl, prr), "convolution backward data");
	dnnl_primitive_desc_t dpd = pdesc(r, &dd, 0, 1, fpd,
					  "convolution backward data");
	DN(dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_auto,
		&dsx, &dsw, l->bias ? &mb : NULL, &dsy, st, pl, prr),
	   "convolution backward weights");
	dnnl_primitive_desc_t wpd = pdesc(r, &wd, 0, 1, fpd,
					  "convolution backward weights");
	if (r->st)
		return;
	dnnl_memory_t dy = tensor(r, mdof(y), RAND, 1);
	dnnl_memory_t dz = act_bwd(r, act, y, dy);
	dnnl_memory_t dzd = as(r, BWD, dz, q(dpd, dnnl_query_diff_dst_md, 0));
	dnnl_memory_t wdd = as(r, BWD, w, q(dpd, dnnl_query_weights_md, 0));
	dnnl_memory_t dx = tensor(r, q(dpd, dnnl_query_diff_src_md, 0), ZERO, 1);
	prim(r, BWD, dpd, DNNL_ARG_DIFF_DST, dzd, DNNL_ARG_WEIGHTS, wdd,
	     DNNL_ARG_DIFF_SRC, dx, -1);
	dnnl_memory_t dzw = as(r, BWD, dz, q(wpd, dnnl_query_diff_dst_md, 0));
	dnnl_memory_t xw = as(r, BWD, x, q(wpd, dnnl_query_src_md, 0));
	dnnl_memory_t dw = tensor(r, q(wpd, dnnl_query_diff_weights_md, 0),
				  ZERO, 1);
	dnnl_memory_t db = b ? tensor(r, &mb, ZERO, 1) : NULL;
	prim(r, BWD, wpd, DNNL_ARG_DIFF_DST, dzw, DNNL_ARG_SRC, xw,
	     DNNL_ARG_DIFF_WEIGHTS, dw, DNNL_ARG_DIFF_BIAS, db, -1);
	if (r->st)
		return;
	/* the optimizer updates w with a gradient in w's layout */
	dnnl_memory_t dwo = dw;
	if (!dnnl_memory_desc_equal(mdof(dw), mdof(w))) {
		dwo = tensor(r, mdof(w), ZERO, 1);
		reorder(r, BWD, dw, dwo);
	}
	addparam(r, w, dwo, &cw);
	addparam(r, b, db, &mb);
	canon(r, CDY, dy, &cy);
	canon(r, CDX, dx, &cx);
}

static void attention(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, S = (dnnl_dim_t)l->seq_len,
		   E = (dnnl_dim_t)l->embed_dim, h = (dnnl_dim_t)l->heads;
	dnnl_dim_t d = E / h, N = B * S, E3 = 3 * E;
	float scale = (float)(1 / sqrt((double)d)), p = (float)r->cfg.dropout;
	int train = l->train;
	dnnl_memory_desc_t mx = MD(2, N, E), mqkv = MD(2, N, E3),
		mwin = MDS(2, DIMS(E, E3), DIMS(1, E)), mbin = MD(2, 1, E3),
		mwout = MDS(2, DIMS(E, E), DIMS(1, E)), mbout = MD(2, 1, E),
		msc = MD(4, B, h, S, S),
		/* heads inside qkv[N][3E] and ctx[N][E] */
		mh3 = MDS(4, DIMS(B, h, S, d), DIMS(S * E3, d, E3, 1)),
		mh3t = MDS(4, DIMS(B, h, d, S), DIMS(S * E3, d, 1, E3)),
		mh1 = MDS(4, DIMS(B, h, S, d), DIMS(S * E, d, E, 1)),
		msct = MDS(4, DIMS(B, h, S, S), DIMS(h * S * S, S * S, 1, S));
	dnnl_memory_t x = tensor(r, &mx, RAND, 1);
	dnnl_memory_t win = tensor(r, &mwin, WEIGHT, (double)E);
	dnnl_memory_t bin = tensor(r, &mbin, WEIGHT, (double)E);
	dnnl_memory_t qkv = tensor(r, &mqkv, ZERO, 1);
	dnnl_memory_t sc = tensor(r, &msc, ZERO, 1), pr = tensor(r, &msc, ZERO, 1);
	dnnl_memory_t ctx = tensor(r, &mx, ZERO, 1);
	dnnl_memory_t wout = tensor(r, &mwout, WEIGHT, (double)E);
	dnnl_memory_t bout = tensor(r, &mbout, WEIGHT, (double)E);
	dnnl_memory_t y = tensor(r, &mx, ZERO, 1);
	if (r->st)
		return;
	float *Q = ptr(qkv), *K = Q + E, *V = Q + 2 * E;
	matmul(r, FWD, x, win, bin, qkv, 0, 1);
	matmul(r, FWD, view(r, &mh3, Q), view(r, &mh3t, K), NULL, sc, 0, scale);
	dnnl_softmax_v2_desc_t smd;
	DN(dnnl_softmax_v2_forward_desc_init(&smd, train ? dnnl_forward_training
		: dnnl_forward_inference, dnnl_softmax_accurate, &msc, &msc, 3),
	   "softmax");
	dnnl_primitive_desc_t spd = pdesc(r, &smd, 0, 1, NULL, "softmax");
	prim(r, FWD, spd, DNNL_ARG_SRC, sc, DNNL_ARG_DST, pr, -1);
	dnnl_memory_t pd = pr;
	if (p > 0) {
		pd = tensor(r, &msc, ZERO, 1);
		op *o = cop(r, FWD, c_dropout);
		if (o) {
			o->a = ptr(pr);
			o->b = ptr(pd);
			o->n = nfloats(pr);
			o->f = p;
			o->k = 100;
		}
	}
	matmul(r, FWD, pd, view(r, &mh3, V), NULL, view(r, &mh1, ptr(ctx)), 0, 1);
	matmul(r, FWD, ctx, wout, bout, y, 0, 1);
	canon(r, CX, x, NULL);
	canon(r, CY, y, NULL);
	if (!train) {
		addparam(r, win, NULL, NULL);
		addparam(r, bin, NULL, NULL);
		addparam(r, wout, NULL, NULL);
		addparam(r, bout, NULL, NULL);
		return;
	}
	dnnl_memory_desc_t mxt = MDS(2, DIMS(E, N), DIMS(1, E)),
			   mqkvt = MDS(2, DIMS(E3, N), DIMS(1, E3)),
			   mwoutp = MD(2, E, E), mwinp = MD(2, E3, E);
	dnnl_memory_t dy = tensor(r, &mx, RAND, 1);
	dnnl_memory_t dctx = tensor(r, &mx, ZERO, 1);
	dnnl_memory_t dwout = tensor(r, &mwoutp, ZERO, 1);
	dnnl_memory_t dbout = tensor(r, &mbout, ZERO, 1);
	dnnl_memory_t dpd = tensor(r, &msc, ZERO, 1);
	dnnl_memory_t dqkv = tensor(r, &mqkv, ZERO, 1);
	dnnl_memory_t dsc = tensor(r, &msc, ZERO, 1);
	dnnl_memory_t dx = tensor(r, &mx, ZERO, 1);
	dnnl_memory_t dwin = tensor(r, &mwinp, ZERO, 1);
	dnnl_memory_t dbin = tensor(r, &mbin, ZERO, 1);
	if (r->st)
		return;
	float *dQ = ptr(dqkv), *dK = dQ + E, *dV = dQ + 2 * E;
	matmul(r, BWD, dy, view(r, &mwoutp, ptr(wout)), NULL, dctx, 0, 1);
	matmul(r, BWD, view(r, &mxt, ptr(dy)), ctx, NULL, dwout, 0, 1);
	colsum(r, BWD, dy, dbout);
	dnnl_memory_t dctxh = view(r, &mh1, ptr(dctx));
	matmul(r, BWD, dctxh, view(r, &mh3t, V), NULL, dpd, 0, 1);
	matmul(r, BWD, view(r, &msct, ptr(pd)), dctxh, NULL, view(r, &mh3, dV),
	       0, 1);
	dnnl_memory_t dp = dpd;
	if (p > 0) {
		dp = tensor(r, &msc, ZERO, 1);
		op *o = cop(r, BWD, c_dropout);
		if (o) {
			o->a = ptr(dpd);
			o->b = ptr(dp);
			o->n = nfloats(dpd);
			o->f = p;
			o->k = 100;
		}
	}
	dnnl_softmax_v2_desc_t sbd;
	DN(dnnl_softmax_v2_backward_desc_init(&sbd, dnnl_softmax_accurate, &msc,
					      &msc, &msc, 3), "softmax backward");
	dnnl_primitive_desc_t sbpd = pdesc(r, &sbd, 0, 1, spd, "softmax backward");
	prim(r, BWD, sbpd, DNNL_ARG_DST, pr, DNNL_ARG_DIFF_DST, dp,
	     DNNL_ARG_DIFF_SRC, dsc, -1);
	matmul(r, BWD, dsc, view(r, &mh3, K), NULL, view(r, &mh3, dQ), 0, scale);
	matmul(r, BWD, view(r, &msct, ptr(dsc)), view(r, &mh3, Q), NULL,
	       view(r, &mh3, dK), 0, scale);
	matmul(r, BWD, dqkv, view(r, &mwinp, ptr(win)), NULL, dx, 0, 1);
	matmul(r, BWD, view(r, &mqkvt, ptr(dqkv)), x, NULL, dwin, 0, 1);
	colsum(r, BWD, dqkv, dbin);
	addparam(r, win, dwin, NULL);
	addparam(r, bin, dbin, NULL);
	addparam(r, wout, dwout, NULL);
	addparam(r, bout, dbout, NULL);
	canon(r, CDY, dy, NULL);
	canon(r, CDX, dx, NULL);
}

static void embedding(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t N = (dnnl_dim_t)(l->batch * l->seq_len),
		   V = (dnnl_dim_t)l->vocab, E = (dnnl_dim_t)l->embed_dim;
	dnnl_memory_desc_t mt = MD(2, V, E), my = MD(2, N, E);
	dnnl_memory_t t = tensor(r, &mt, RAND, 1);
	dnnl_memory_t y = tensor(r, &my, ZERO, 1);
	r->idx = balloc(r, (size_t)N * sizeof(int32_t));
	if (r->st)
		return;
	for (dnnl_dim_t i = 0; i < N; i++)
		r->idx[i] = (int32_t)pn_rng_int(&r->rng, 0, V - 1);
	op *o = cop(r, FWD, c_gather);
	o->a = ptr(t);
	o->b = ptr(y);
	o->idx = r->idx;
	o->n = (size_t)N;
	o->m = (size_t)E;
	canon(r, CY, y, NULL);
	if (!l->train) {
		addparam(r, t, NULL, &mt);
		return;
	}
	dnnl_memory_t dy = tensor(r, &my, RAND, 1);
	dnnl_memory_t dt = tensor(r, &mt, ZERO, 1);
	o = cop(r, BWD, c_scatter);
	if (!o)
		return;
	o->a = ptr(dy);
	o->b = ptr(dt);
	o->idx = r->idx;
	o->n = (size_t)N;
	o->m = (size_t)E;
	o->k = (int)V;
	addparam(r, t, dt, &mt);
	canon(r, CDY, dy, NULL);
}

static void rnn(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, S = (dnnl_dim_t)l->seq_len,
		   I = (dnnl_dim_t)l->input_size, H = (dnnl_dim_t)l->hidden;
	dnnl_dim_t D = l->bidirectional ? 2 : 1, G = pn_rnn_gates(l->type);
	dnnl_dim_t Gb = l->type == PN_GRU ? 4 : G;
	int L = (int)l->layers, train = l->train, act = l->activation;
	float p = (float)r->cfg.dropout;
	if (L > MAXL) {
		fail(r, PN_INVALID, "more than %d layers", MAXL);
		return;
	}
	dnnl_rnn_direction_t dir = D == 2 ? dnnl_bidirectional_concat :
					    dnnl_unidirectional_left2right;
	dnnl_prop_kind_t prop = train ? dnnl_forward_training :
					dnnl_forward_inference;
	dnnl_memory_desc_t msrc[MAXL], mwl[MAXL], mwi, mb = MD(4, 1, D, Gb, H),
			   mdst = MD(3, S, B, D * H);
	mwi = MD(5, 1, D, H, G, H);
	dnnl_memory_desc_t mwla[MAXL], mwia = ANY(5, 1, D, H, G, H);
	/* explicit zero initial states: oneDNN 2.6 gets the gradient of the
	 * recurrent weights wrong without them (unidirectional rnn and lstm) */
	dnnl_memory_desc_t msi = MD(4, 1, D, B, H);
	int lstm = l->type == PN_LSTM;
	dnnl_memory_t si = tensor(r, &msi, ZERO, 1);
	dnnl_memory_t sic = lstm ? tensor(r, &msi, ZERO, 1) : NULL;
	dnnl_memory_t dsi = train ? tensor(r, &msi, ZERO, 1) : NULL;
	dnnl_memory_t dsic = train && lstm ? tensor(r, &msi, ZERO, 1) : NULL;
	dnnl_primitive_desc_t fpd[MAXL];
	dnnl_memory_t src[MAXL], dst[MAXL], ws[MAXL];
	r->rnn = 1;
	r->nl = L;
	for (int k = 0; k < L; k++) {
		dnnl_dim_t in = k == 0 ? I : D * H;
		msrc[k] = MD(3, S, B, in);
		mwl[k] = MD(5, 1, D, in, G, H);
		mwla[k] = ANY(5, 1, D, in, G, H);
		if (k == 0)
			src[k] = tensor(r, &msrc[k], RAND, 1);
		r->rw[k][0] = tensor(r, &mwl[k], WEIGHT, (double)H);
		r->rw[k][1] = tensor(r, &mwi, WEIGHT, (double)H);
		r->rb[k] = tensor(r, &mb, WEIGHT, (double)H);
		dst[k] = tensor(r, &mdst, ZERO, 1);
		if (r->st)
			return;
		dnnl_rnn_desc_t rd;
		dnnl_status_t s;
		if (l->type == PN_RNN)
			s = dnnl_vanilla_rnn_forward_desc_init(&rd, prop,
				dnnl_eltwise_tanh, dir, &msrc[k], &msi, &mwla[k],
				&mwia, &mb, &mdst, NULL, 0, 0, 0);
		else if (l->type == PN_LSTM)
			s = dnnl_lstm_forward_desc_init(&rd, prop, dir, &msrc[k],
				&msi, &msi, &mwla[k], &mwia, &mb, &mdst, NULL,
				NULL, 0);
		else
			s = dnnl_lbr_gru_forward_desc_init(&rd, prop, dir,
				&msrc[k], &msi, &mwla[k], &mwia, &mb, &mdst, NULL,
				0);
		DN(s, "recurrent layer");
		fpd[k] = pdesc(r, &rd, 0, 1, NULL, "recurrent layer");
		if (r->st)
			return;
		const dnnl_memory_desc_t *wsmd = q(fpd[k], dnnl_query_workspace_md, 0);
		ws[k] = train && wsmd && dnnl_memory_desc_get_size(wsmd) ?
			tensor(r, wsmd, ZERO, 1) : NULL;
		/* the parameters stay plain (the optimizer updates them);
		 * oneDNN's packed copies are made every step, as a
		 * framework's are */
		dnnl_memory_t fwl = as(r, FWD, r->rw[k][0],
				       q(fpd[k], dnnl_query_weights_md, 0));
		dnnl_memory_t fwi = as(r, FWD, r->rw[k][1],
				       q(fpd[k], dnnl_query_weights_md, 1));
		prim(r, FWD, fpd[k], DNNL_ARG_SRC_LAYER, src[k],
		     DNNL_ARG_SRC_ITER, si, DNNL_ARG_SRC_ITER_C, sic,
		     DNNL_ARG_WEIGHTS_LAYER, fwl,
		     DNNL_ARG_WEIGHTS_ITER, fwi, DNNL_ARG_BIAS, r->rb[k],
		     DNNL_ARG_DST_LAYER, dst[k], DNNL_ARG_WORKSPACE, ws[k], -1);
		if (k + 1 < L) {
			if (p > 0) {
				src[k + 1] = tensor(r, &mdst, ZERO, 1);
				op *o = cop(r, FWD, c_dropout);
				if (!o)
					return;
				o->a = ptr(dst[k]);
				o->b = ptr(src[k + 1]);
				o->n = nfloats(dst[k]);
				o->f = p;
				o->k = k + 1;
			} else {
				src[k + 1] = dst[k];
			}
		}
	}
	/* the activation of PreNeT's benchmark, on the last time step */
	size_t last = (size_t)((S - 1) * B * D * H), nlast = (size_t)(B * D * H);
	float *out = act ? fbuf(r, nlast) : NULL;
	if (act) {
		op *o = cop(r, FWD, c_act);
		if (!o)
			return;
		o->a = ptr(dst[L - 1]) + last;
		o->b = out;
		o->n = nlast;
		o->k = act;
	}
	canon(r, CX, src[0], NULL);
	canon(r, CY, dst[L - 1], NULL);
	if (!train) {
		for (int k = 0; k < L; k++) {
			addparam(r, r->rw[k][0], NULL, &mwl[k]);
			addparam(r, r->rw[k][1], NULL, &mwi);
			addparam(r, r->rb[k], NULL, &mb);
		}
		return;
	}
	dnnl_memory_t dy = tensor(r, &mdst, RAND, 1);
	if (act) {
		float *dout = fbuf(r, nlast);
		op *o = cop(r, BWD, c_act_bwd);
		if (!o)
			return;
		pn_rng_fill(&r->rng, dout, nlast, -1, 1);
		o->a = dout;
		o->b = out;
		o->c = ptr(dy) + last;
		o->n = nlast;
		o->k = act;
	}
	canon(r, CDY, dy, NULL);
	dnnl_memory_t ddst = dy;
	for (int k = L - 1; k >= 0; k--) {
		r->rdw[k][0] = tensor(r, &mwl[k], ZERO, 1);
		r->rdw[k][1] = tensor(r, &mwi, ZERO, 1);
		r->rdb[k] = tensor(r, &mb, ZERO, 1);
		dnnl_memory_t dsrc = tensor(r, &msrc[k], ZERO, 1);
		if (r->st)
			return;
		dnnl_rnn_desc_t rd;
		dnnl_status_t s;
		if (l->type == PN_RNN)
			s = dnnl_vanilla_rnn_backward_desc_init(&rd, dnnl_backward,
				dnnl_eltwise_tanh, dir, &msrc[k], &msi, &mwla[k],
				&mwia, &mb, &mdst, NULL, &msrc[k], &msi, &mwla[k],
				&mwia, &mb, &mdst, NULL, 0, 0, 0);
		else if (l->type == PN_LSTM)
			s = dnnl_lstm_backward_desc_init(&rd, dnnl_backward, dir,
				&msrc[k], &msi, &msi, &mwla[k], &mwia, &mb, &mdst,
				NULL, NULL, &msrc[k], &msi, &msi, &mwla[k], &mwia,
				&mb, &mdst, NULL, NULL, 0);
		else
			s = dnnl_lbr_gru_backward_desc_init(&rd, dnnl_backward,
				dir, &msrc[k], &msi, &mwla[k], &mwia, &mb, &mdst,
				NULL, &msrc[k], &msi, &mwla[k], &mwia, &mb, &mdst,
				NULL, 0);
		DN(s, "recurrent layer backward");
		dnnl_primitive_desc_t bpd = pdesc(r, &rd, 0, 1, fpd[k],
						  "recurrent layer backward");
		if (r->st)
			return;
		/* the backward may want the weights in another layout */
		dnnl_memory_t wl = as(r, BWD, r->rw[k][0],
				      q(bpd, dnnl_query_weights_md, 0));
		dnnl_memory_t wi = as(r, BWD, r->rw[k][1],
				      q(bpd, dnnl_query_weights_md, 1));
		/* gradients in oneDNN's layout, zeroed (oneDNN adds to them),
		 * then reordered to the plain layout of the parameters */
		dnnl_memory_t g[3];
		for (int j = 0; j < 3; j++) {
			dnnl_memory_t m = j < 2 ? r->rdw[k][j] : r->rdb[k];
			const dnnl_memory_desc_t *want =
				q(bpd, dnnl_query_diff_weights_md, j);
			g[j] = dnnl_memory_desc_equal(mdof(m), want) ? m :
			       tensor(r, want, ZERO, 1);
			op *o = cop(r, BWD, c_zero);
			if (!o)
				return;
			o->a = ptr(g[j]);
			o->n = nfloats(g[j]);
		}
		prim(r, BWD, bpd, DNNL_ARG_SRC_LAYER, src[k],
		     DNNL_ARG_SRC_ITER, si, DNNL_ARG_SRC_ITER_C, sic,
		     DNNL_ARG_DIFF_SRC_ITER, dsi, DNNL_ARG_DIFF_SRC_ITER_C, dsic,
		     DNNL_ARG_WEIGHTS_LAYER, wl, DNNL_ARG_WEIGHTS_ITER, wi,
		     DNNL_ARG_BIAS, r->rb[k], DNNL_ARG_DST_LAYER, dst[k],
		     DNNL_ARG_DIFF_DST_LAYER, ddst, DNNL_ARG_DIFF_SRC_LAYER, dsrc,
		     DNNL_ARG_DIFF_WEIGHTS_LAYER, g[0],
		     DNNL_ARG_DIFF_WEIGHTS_ITER, g[1],
		     DNNL_ARG_DIFF_BIAS, g[2], DNNL_ARG_WORKSPACE, ws[k], -1);
		for (int j = 0; j < 3; j++) {
			dnnl_memory_t m = j < 2 ? r->rdw[k][j] : r->rdb[k];
			if (g[j] != m)
				reorder(r, BWD, g[j], m);
		}
		if (k == 0) {
			canon(r, CDX, dsrc, NULL);
		} else if (p > 0) {
			ddst = tensor(r, &mdst, ZERO, 1);
			op *o = cop(r, BWD, c_dropout);
			if (!o)
				return;
			o->a = ptr(dsrc);
			o->b = ptr(ddst);
			o->n = nfloats(dsrc);
			o->f = p;
			o->k = k;
		} else {
			ddst = dsrc;
		}
	}
	for (int k = 0; k < L; k++) {
		addparam(r, r->rw[k][0], r->rdw[k][0], &mwl[k]);
		addparam(r, r->rw[k][1], r->rdw[k][1], &mwi);
		addparam(r, r->rb[k], r->rdb[k], &mb);
	}
}

static void layernorm(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t N = (dnnl_dim_t)(l->batch * l->seq_len), D = (dnnl_dim_t)l->dim;
	int train = l->train;
	unsigned flags = dnnl_use_scale | dnnl_use_shift;
	dnnl_memory_desc_t md = MD(2, N, D), ms = MD(1, N), mg = MD(1, D);
	dnnl_layer_normalization_desc_t fd;
	DN(dnnl_layer_normalization_forward_desc_init(&fd, train ?
		dnnl_forward_training : dnnl_forward_inference, &md, NULL,
		PN_LN_EPS, flags), "layer normalization");
	dnnl_primitive_desc_t fpd = pdesc(r, &fd, 0, 1, NULL,
					  "layer normalization");
	dnnl_memory_t x = tensor(r, &md, RAND, 1), y = tensor(r, &md, ZERO, 1);
	dnnl_memory_t g = tensor(r, &mg, RAND, 1), b = tensor(r, &mg, RAND, 1);
	dnnl_memory_t mean = train ? tensor(r, &ms, ZERO, 1) : NULL;
	dnnl_memory_t var = train ? tensor(r, &ms, ZERO, 1) : NULL;
	prim(r, FWD, fpd, DNNL_ARG_SRC, x, DNNL_ARG_DST, y, DNNL_ARG_MEAN, mean,
	     DNNL_ARG_VARIANCE, var, DNNL_ARG_SCALE, g, DNNL_ARG_SHIFT, b, -1);
	canon(r, CX, x, NULL);
	canon(r, CY, y, NULL);
	if (!train) {
		addparam(r, g, NULL, &mg);
		addparam(r, b, NULL, &mg);
		return;
	}
	dnnl_layer_normalization_desc_t bd;
	DN(dnnl_layer_normalization_backward_desc_init(&bd, dnnl_backward, &md,
		&md, NULL, PN_LN_EPS, flags), "layer normalization backward");
	dnnl_primitive_desc_t bpd = pdesc(r, &bd, 0, 1, fpd,
					  "layer normalization backward");
	dnnl_memory_t dy = tensor(r, &md, RAND, 1), dx = tensor(r, &md, ZERO, 1);
	dnnl_memory_t dg = tensor(r, &mg, ZERO, 1), db = tensor(r, &mg, ZERO, 1);
	prim(r, BWD, bpd, DNNL_ARG_SRC, x, DNNL_ARG_DIFF_DST, dy,
	     DNNL_ARG_MEAN, mean, DNNL_ARG_VARIANCE, var, DNNL_ARG_SCALE, g,
	     DNNL_ARG_SHIFT, b, DNNL_ARG_DIFF_SRC, dx, DNNL_ARG_DIFF_SCALE, dg,
	     DNNL_ARG_DIFF_SHIFT, db, -1);
	addparam(r, g, dg, &mg);
	addparam(r, b, db, &mg);
	canon(r, CDY, dy, NULL);
	canon(r, CDX, dx, NULL);
}

static void softmax(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t N = (dnnl_dim_t)(l->batch * l->seq_len), D = (dnnl_dim_t)l->dim;
	dnnl_memory_desc_t md = MD(2, N, D);
	dnnl_softmax_v2_desc_t fd, bd;
	DN(dnnl_softmax_v2_forward_desc_init(&fd, l->train ?
		dnnl_forward_training : dnnl_forward_inference,
		dnnl_softmax_accurate, &md, &md, 1), "softmax");
	dnnl_primitive_desc_t fpd = pdesc(r, &fd, 0, 1, NULL, "softmax");
	dnnl_memory_t x = tensor(r, &md, RAND, 1), y = tensor(r, &md, ZERO, 1);
	prim(r, FWD, fpd, DNNL_ARG_SRC, x, DNNL_ARG_DST, y, -1);
	canon(r, CX, x, NULL);
	canon(r, CY, y, NULL);
	if (!l->train)
		return;
	DN(dnnl_softmax_v2_backward_desc_init(&bd, dnnl_softmax_accurate, &md,
					      &md, &md, 1), "softmax backward");
	dnnl_primitive_desc_t bpd = pdesc(r, &bd, 0, 1, fpd, "softmax backward");
	dnnl_memory_t dy = tensor(r, &md, RAND, 1), dx = tensor(r, &md, ZERO, 1);
	prim(r, BWD, bpd, DNNL_ARG_DST, y, DNNL_ARG_DIFF_DST, dy,
	     DNNL_ARG_DIFF_SRC, dx, -1);
	canon(r, CDY, dy, NULL);
	canon(r, CDX, dx, NULL);
}

/* An eltwise forward (alg, alpha, beta) from src to dst; returns its pd. */
static dnnl_primitive_desc_t eltwise(pn_run *r, int ph, dnnl_alg_kind_t alg,
				     float alpha, float beta, dnnl_memory_t src,
				     dnnl_memory_t dst)
{
	if (r->st)
		return NULL;
	dnnl_eltwise_desc_t d;
	DN(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_training, alg,
					  mdof(src), alpha, beta), "eltwise");
	dnnl_primitive_desc_t pd = pdesc(r, &d, 0, 1, NULL, "eltwise");
	prim(r, ph, pd, DNNL_ARG_SRC, src, DNNL_ARG_DST, dst, -1);
	return pd;
}

static void binary(pn_run *r, int ph, dnnl_alg_kind_t alg, dnnl_memory_t a,
		   dnnl_memory_t b, dnnl_memory_t dst, int neg)
{
	if (r->st)
		return;
	dnnl_binary_desc_t d;
	DN(dnnl_binary_desc_init(&d, alg, mdof(a), mdof(b), mdof(dst)),
	   "binary");
	dnnl_primitive_desc_t pd = NULL;
	if (!r->st) {
		/* neg: -(a op b), a linear post-op */
		dnnl_primitive_attr_t at = attr_new(PN_ACT_NONE, 1);
		if (neg) {
			dnnl_post_ops_t po;
			dnnl_post_ops_create(&po);
			dnnl_post_ops_append_eltwise(po, 1, dnnl_eltwise_linear,
						     -1, 0);
			dnnl_primitive_attr_set_post_ops(at, po);
			dnnl_post_ops_destroy(po);
		}
		dnnl_status_t s = dnnl_primitive_desc_create(&pd, &d, at, eng,
							     NULL);
		dnnl_primitive_attr_destroy(at);
		if (DN(s, "binary"))
			return;
		r->pd[r->npd++] = pd;
	}
	prim(r, ph, pd, DNNL_ARG_SRC_0, a, DNNL_ARG_SRC_1, b, DNNL_ARG_DST, dst,
	     -1);
}

static void elementwise(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t R = (dnnl_dim_t)(l->batch * l->seq_len), D = (dnnl_dim_t)l->dim;
	const char *name = l->op;
	int train = l->train, two = pn_elem_binary(name);
	float c = PN_ELEM_SCALAR, p = (float)r->cfg.dropout;
	dnnl_memory_desc_t md = MD(2, R, D);
	int pos = strcmp(name, "pow") == 0;
	dnnl_memory_t x = tensor(r, &md, RAND, 1), x2 = NULL;
	dnnl_memory_t y = tensor(r, &md, ZERO, 1);
	if (r->st)
		return;
	size_t n = nfloats(x);
	if (pos)
		pn_rng_fill(&r->rng, ptr(x), n, 0.5f, 1.5f);
	if (two) {
		x2 = tensor(r, &md, RAND, 1);
		if (r->st)
			return;
		pn_rng_fill(&r->rng, ptr(x2), n, 0.5f, 1.5f);
	}
	canon(r, CX, x, NULL);
	if (x2)
		canon(r, CX2, x2, NULL);
	canon(r, CY, y, NULL);
	dnnl_memory_t dy = train ? tensor(r, &md, RAND, 1) : NULL;
	dnnl_memory_t dx = NULL, dx2 = NULL;
	static const struct {
		const char *name;
		dnnl_alg_kind_t alg;
	} bin[] = {{"add", dnnl_binary_add}, {"sub", dnnl_binary_sub},
		   {"mul", dnnl_binary_mul}, {"div", dnnl_binary_div}};
	static const struct {
		const char *name;
		dnnl_alg_kind_t alg, balg;
		float alpha, beta;       /* in units of the scalar c: 0 1 or -1 */
	} un[] = {
		{"addu", dnnl_eltwise_linear, 0, 1, 1},
		{"subu", dnnl_eltwise_linear, 0, 1, -1},
		{"mulu", dnnl_eltwise_linear, dnnl_eltwise_linear, 2, 0},
		{"divu", dnnl_eltwise_linear, dnnl_eltwise_linear, 0.5f, 0},
		{"powu", dnnl_eltwise_pow, dnnl_eltwise_pow, 1, 2},
		{"relu", dnnl_eltwise_relu, dnnl_eltwise_relu_use_dst_for_bwd, 0, 0},
		{"gelu", dnnl_eltwise_gelu_erf, dnnl_eltwise_gelu_erf, 0, 0},
		{"tanh", dnnl_eltwise_tanh, dnnl_eltwise_tanh_use_dst_for_bwd, 0, 0},
		{"sigmoid", dnnl_eltwise_logistic,
		 dnnl_eltwise_logistic_use_dst_for_bwd, 0, 0},
		{"exp", dnnl_eltwise_exp, dnnl_eltwise_exp_use_dst_for_bwd, 0, 0},
		{"neg", dnnl_eltwise_linear, dnnl_eltwise_linear, -1, 0},
	};
	for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++) {
		if (strcmp(name, bin[i].name) != 0)
			continue;
		binary(r, FWD, bin[i].alg, x, x2, y, 0);
		if (!train)
			return;
		if (i <= 1) {           /* add, sub: the gradient passes */
			dx = dy;
			if (i == 0) {
				dx2 = dy;
			} else {
				dx2 = tensor(r, &md, ZERO, 1);
				eltwise(r, BWD, dnnl_eltwise_linear, -1, 0, dy,
					dx2);
			}
		} else if (i == 2) {    /* mul */
			dx = tensor(r, &md, ZERO, 1);
			dx2 = tensor(r, &md, ZERO, 1);
			binary(r, BWD, dnnl_binary_mul, dy, x2, dx, 0);
			binary(r, BWD, dnnl_binary_mul, dy, x, dx2, 0);
		} else {                /* div: dx = dy / x2, dx2 = -dx y */
			dx = tensor(r, &md, ZERO, 1);
			dx2 = tensor(r, &md, ZERO, 1);
			binary(r, BWD, dnnl_binary_div, dy, x2, dx, 0);
			binary(r, BWD, dnnl_binary_mul, dx, y, dx2, 1);
		}
		goto done;
	}
	for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
		if (strcmp(name, un[i].name) != 0)
			continue;
		float a = un[i].alpha, b = un[i].beta;
		if (un[i].alg == dnnl_eltwise_linear && i < 2)
			b *= c;                          /* x + c, x - c */
		else if (i == 4)
			b = c;                           /* x ^ c */
		else if (i == 2)
			a = c;
		else if (i == 3)
			a = 1 / c;
		dnnl_primitive_desc_t fpd = eltwise(r, FWD, un[i].alg, a, b, x, y);
		if (!train)
			return;
		if (i < 2) {                             /* addu, subu */
			dx = dy;
			goto done;
		}
		dnnl_alg_kind_t balg = un[i].balg;
		int use_dst = balg != un[i].alg;
		dnnl_eltwise_desc_t bd;
		dnnl_primitive_desc_t hint = fpd;
		if (use_dst && !r->st) {
			dnnl_eltwise_desc_t hd;
			DN(dnnl_eltwise_forward_desc_init(&hd,
				dnnl_forward_training, balg, &md, a, b),
			   "eltwise");
			hint = pdesc(r, &hd, 0, 1, NULL, "eltwise");
		}
		DN(dnnl_eltwise_backward_desc_init(&bd, balg, &md, &md, a, b),
		   "eltwise backward");
		dnnl_primitive_desc_t bpd = pdesc(r, &bd, 0, 1, hint,
						  "eltwise backward");
		dx = tensor(r, &md, ZERO, 1);
		prim(r, BWD, bpd, use_dst ? DNNL_ARG_DST : DNNL_ARG_SRC,
		     use_dst ? y : x, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_DIFF_SRC,
		     dx, -1);
		goto done;
	}
	if (strcmp(name, "copy") == 0) {
		reorder(r, FWD, x, y);
		dx = dy;
	} else if (strcmp(name, "dropout") == 0) {
		op *o = cop(r, FWD, c_dropout);
		if (!o)
			return;
		o->a = ptr(x);
		o->b = ptr(y);
		o->n = n;
		o->f = p;
		o->k = 200;
		if (!train)
			return;
		dx = tensor(r, &md, ZERO, 1);
		o = cop(r, BWD, c_dropout);
		if (!o)
			return;
		o->a = ptr(dy);
		o->b = ptr(dx);
		o->n = n;
		o->f = p;
		o->k = 200;
	} else if (pos) {
		op *o = cop(r, FWD, c_pow);
		o->a = ptr(x);
		o->b = ptr(x2);
		o->c = ptr(y);
		o->n = n;
		if (!train)
			return;
		dx = tensor(r, &md, ZERO, 1);
		dx2 = tensor(r, &md, ZERO, 1);
		powbwd *pb = balloc(r, sizeof *pb);
		if (!pb)
			return;
		*pb = (powbwd){ptr(x), ptr(x2), ptr(y), ptr(dy), ptr(dx), ptr(dx2)};
		o = cop(r, BWD, c_pow_bwd);
		o->ctx = pb;
		o->n = n;
	} else {
		fail(r, PN_INVALID, "unknown elementwise op '%s'", name);
	}
done:
	if (train) {
		canon(r, CDY, dy, NULL);
		canon(r, CDX, dx, NULL);
		if (dx2)
			canon(r, CDX2, dx2, NULL);
	}
}

static void posenc(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, S = (dnnl_dim_t)l->seq_len,
		   E = (dnnl_dim_t)l->embed_dim;
	dnnl_memory_desc_t md = MD(3, B, S, E), mp = MD(3, 1, S, E);
	dnnl_memory_t x = tensor(r, &md, RAND, 1), y = tensor(r, &md, ZERO, 1);
	dnnl_memory_t pe = tensor(r, &mp, ZERO, 1);
	if (r->st)
		return;
	pn_posenc_table(ptr(pe), (long)S, (long)E);
	binary(r, FWD, dnnl_binary_add, x, pe, y, 0);
	canon(r, CX, x, NULL);
	canon(r, CY, y, NULL);
	if (l->train) {    /* the table is no parameter: the gradient passes */
		dnnl_memory_t dy = tensor(r, &md, RAND, 1);
		canon(r, CDY, dy, NULL);
		canon(r, CDX, dy, NULL);
	}
}

/* ---- the backend ---------------------------------------------------------- */

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(clock_id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cpu_open(const pn_bk_opts *o, char *device, size_t nd,
		    char *versions, size_t nv, char *msg, size_t n)
{
	opts = *o;
	omp_set_num_threads(o->threads);
	clock_id = o->cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
	if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
	    dnnl_stream_create(&strm, eng, dnnl_stream_default_flags) !=
	    dnnl_success) {
		snprintf(msg, n, "cannot start oneDNN's CPU engine");
		return -1;
	}
	const dnnl_version_t *v = dnnl_version();
	snprintf(versions, nv, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
	pn_cpu_name(device, nd, o->threads);
	return 0;
}

static void cpu_release(pn_run *r)
{
	if (!r)
		return;
	for (int ph = 0; ph < NPHASE; ph++)
		for (int i = 0; i < r->nops[ph]; i++)
			if (r->ops[ph][i].prim)
				dnnl_primitive_destroy(r->ops[ph][i].prim);
	for (int i = 0; i < r->npd; i++)
		dnnl_primitive_desc_destroy(r->pd[i]);
	for (int i = 0; i < r->nmem; i++)
		dnnl_memory_destroy(r->mem[i]);
	for (int i = 0; i < r->nbuf; i++)
		free(r->buf[i]);
	free(r);
}

static int cpu_prepare(const pn_config *cfg, pn_run **run, double *mem,
		       char *msg, size_t n)
{
	pn_run *r = pn_xcalloc(1, sizeof *r);
	r->cfg = *cfg;
	r->limit = opts.mem_limit;
	pn_rng_seed(&r->rng, opts.seed);
	double need = pn_io_bytes(cfg);
	if (cfg->prec != PN_FP32) {
		fail(r, PN_INVALID, "precision %s is not supported by the cpu "
		     "backend (fp32 only)", pn_prec_name(cfg->prec));
	} else if (need > PN_BYTES_MAX) {
		/* before oneDNN's sizes, which would overflow */
		r->bytes = need;
		if (r->limit > 0)
			fail(r, PN_OOM, "needs more than --mem-limit %.0f bytes",
			     r->limit);
		else
			fail(r, PN_OOM, "needs %.3g bytes", need);
	} else
		switch (cfg->l.type) {
		case PN_DENSE: dense(r); break;
		case PN_BMM: bmm(r); break;
		case PN_CONV2D: conv2d(r); break;
		case PN_ATTENTION: attention(r); break;
		case PN_EMBEDDING: embedding(r); break;
		case PN_RNN: case PN_LSTM: case PN_GRU: rnn(r); break;
		case PN_LAYERNORM: layernorm(r); break;
		case PN_SOFTMAX: softmax(r); break;
		case PN_ELEMENTWISE: elementwise(r); break;
		case PN_POSENC: posenc(r); break;
		default: fail(r, PN_INVALID, "layer type not timed"); break;
		}
	*mem = r->bytes;
	int st = r->st;
	snprintf(msg, n, "%s", st ? r->msg : r->impl[0] ? r->impl : "c loops");
	if (st) {
		cpu_release(r);
		return st;
	}
	*run = r;
	return PN_OK;
}

static int exec(pn_run *r, int ph)
{
	for (int i = 0; i < r->nops[ph]; i++) {
		const op *o = &r->ops[ph][i];
		if (o->fn) {
			o->fn(o);
			continue;
		}
		if (DN(dnnl_primitive_execute(o->prim, strm, o->nargs, o->args),
		       "execute"))
			return -1;
	}
	return DN(dnnl_stream_wait(strm), "stream");
}

static int has_opt(const pn_run *r)
{
	return r->cfg.l.train && r->cfg.l.optimizer != PN_OPT_NONE;
}

static void optimize(pn_run *r)
{
	r->t++;
	for (int i = 0; i < r->npar; i++) {
		param *p = &r->par[i];
		pn_opt_update(r->cfg.l.optimizer, (float)r->cfg.lr, r->t, p->n,
			      ptr(p->w), ptr(p->g), p->s1, p->s2);
	}
}

static int cpu_step(pn_run *r, pn_phases *t, char *msg, size_t n)
{
	double t0 = now_ms();
	if (exec(r, FWD))
		goto err;
	double t1 = now_ms();
	t->fwd = t1 - t0;
	t->bwd = t->opt = NAN;
	if (!r->cfg.l.train)
		return PN_OK;
	if (exec(r, BWD))
		goto err;
	double t2 = now_ms();
	t->bwd = t2 - t1;
	if (!has_opt(r))
		return PN_OK;
	optimize(r);
	t->opt = now_ms() - t2;
	return PN_OK;
err:
	snprintf(msg, n, "%s", r->msg);
	return r->st;
}

/* ---- canonical data for --check --------------------------------------------- */

/* Copy between the canonical array a (layout cmd) and memory m: into m
 * (in = 1) or out of it. */
static int xfer(pn_run *r, dnnl_memory_t m, const dnnl_memory_desc_t *cmd,
		float *a, int in)
{
	if (!m || !a)
		return 0;
	if (dnnl_memory_desc_equal(mdof(m), cmd)) {
		size_t bytes = dnnl_memory_desc_get_size(cmd);
		if (in)
			memcpy(ptr(m), a, bytes);
		else
			memcpy(a, ptr(m), bytes);
		return 0;
	}
	dnnl_memory_t u;
	if (DN(dnnl_memory_create(&u, cmd, eng, a), "memory"))
		return -1;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	int bad = DN(dnnl_reorder_primitive_desc_create(&pd, in ? cmd : mdof(m),
		eng, in ? mdof(m) : cmd, eng, NULL), "reorder");
	if (!bad) {
		bad = DN(dnnl_primitive_create(&p, pd), "reorder");
		if (!bad) {
			dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, in ? u : m},
						   {DNNL_ARG_TO, in ? m : u}};
			bad = DN(dnnl_primitive_execute(p, strm, 2, args),
				 "reorder") || DN(dnnl_stream_wait(strm), "stream");
			dnnl_primitive_destroy(p);
		}
		dnnl_primitive_desc_destroy(pd);
	}
	dnnl_memory_destroy(u);
	return bad ? -1 : 0;
}

/* Recurrent weights: canonical (PyTorch) <-> oneDNN ldigo, gate order and
 * biases mapped (see backend.h). */
static void rnn_xfer(pn_run *r, float *w, int in, int grad)
{
	const pn_layer *l = &r->cfg.l;
	size_t H = (size_t)l->hidden, D = l->bidirectional ? 2 : 1;
	size_t G = (size_t)pn_rnn_gates(l->type), I = (size_t)l->input_size;
	int gru = l->type == PN_GRU;
	static const int gru_map[3] = {1, 0, 2};   /* r z n -> u r o */
	size_t Gb = gru ? 4 : G;
	for (int k = 0; k < r->nl; k++) {
		size_t inl = k == 0 ? I : D * H;
		float *wl = ptr(grad ? r->rdw[k][0] : r->rw[k][0]);
		float *wi = ptr(grad ? r->rdw[k][1] : r->rw[k][1]);
		float *b = ptr(grad ? r->rdb[k] : r->rb[k]);
		for (size_t d = 0; d < D; d++) {
			float *wih = w, *whh = wih + G * H * inl;
			float *bih = whh + G * H * H, *bhh = bih + G * H;
			w = bhh + G * H;
			for (size_t g = 0; g < G; g++) {
				size_t gd = gru ? (size_t)gru_map[g] : g;
				for (size_t h = 0; h < H; h++) {
					for (size_t i = 0; i < inl; i++) {
						float *c = &wih[(g * H + h) * inl + i];
						float *o = &wl[((d * inl + i) * G + gd) * H + h];
						if (in) *o = *c; else *c = *o;
					}
					for (size_t i = 0; i < H; i++) {
						float *c = &whh[(g * H + h) * H + i];
						float *o = &wi[((d * H + i) * G + gd) * H + h];
						if (in) *o = *c; else *c = *o;
					}
					float *ob = &b[(d * Gb + gd) * H + h];
					float *ci = &bih[g * H + h], *ch = &bhh[g * H + h];
					if (gru && g == 2) {
						float *ob2 = &b[(d * Gb + 3) * H + h];
						if (in) { *ob = *ci; *ob2 = *ch; }
						else { *ci = *ob; *ch = *ob2; }
					} else if (in) {
						*ob = *ci + *ch;
					} else {
						*ci = *ch = *ob;
					}
				}
			}
		}
	}
}

static int cpu_compute(pn_run *r, pn_io *io, char *msg, size_t n)
{
	if (xfer(r, r->canon[CX], &r->cmd[CX], io->x, 1) ||
	    xfer(r, r->canon[CX2], &r->cmd[CX2], io->x2, 1) ||
	    xfer(r, r->canon[CDY], &r->cmd[CDY], io->dy, 1))
		goto err;
	if (r->idx)
		memcpy(r->idx, io->idx, io->nidx * sizeof(int32_t));
	if (r->rnn) {
		rnn_xfer(r, io->w, 1, 0);
	} else {
		float *w = io->w;
		for (int i = 0; i < r->npar; i++) {
			if (xfer(r, r->par[i].w, &r->par[i].canon, w, 1))
				goto err;
			w += dnnl_memory_desc_get_size(&r->par[i].canon) /
			     sizeof(float);
		}
	}
	if (exec(r, FWD) || (r->cfg.l.train && exec(r, BWD)))
		goto err;
	if (xfer(r, r->canon[CY], &r->cmd[CY], io->y, 0) ||
	    xfer(r, r->canon[CDX], &r->cmd[CDX], io->dx, 0) ||
	    xfer(r, r->canon[CDX2], &r->cmd[CDX2], io->dx2, 0))
		goto err;
	if (!r->cfg.l.train)
		return PN_OK;
	if (r->rnn) {
		rnn_xfer(r, io->dw, 0, 1);
	} else {
		float *w = io->dw;
		for (int i = 0; i < r->npar; i++) {
			if (xfer(r, r->par[i].g, &r->par[i].gcanon, w, 0))
				goto err;
			w += dnnl_memory_desc_get_size(&r->par[i].canon) /
			     sizeof(float);
		}
	}
	return PN_OK;
err:
	snprintf(msg, n, "%s", r->msg);
	return r->st;
}

static int cpu_optimize(int opt, float lr, size_t n, float *w, const float *g,
			int steps, char *msg, size_t nmsg)
{
	(void)msg;
	(void)nmsg;
	float *s1 = pn_xcalloc(n ? n : 1, sizeof(float));
	float *s2 = pn_xcalloc(n ? n : 1, sizeof(float));
	for (int t = 1; t <= steps; t++)
		pn_opt_update(opt, lr, t, n, w, g, s1, s2);
	free(s1);
	free(s2);
	return PN_OK;
}

static void cpu_flush(void)
{
	/* twice a large last-level cache */
	static volatile char *junk;
	static size_t size = 256u << 20;
	if (!junk)
		junk = malloc(size);
	if (!junk)
		return;
	for (size_t i = 0; i < size; i += 64)
		junk[i] = (char)i;
}

static int cpu_recover(char *msg, size_t n)
{
	(void)msg;
	(void)n;
	return 0;
}

static void cpu_close(void)
{
	dnnl_stream_destroy(strm);
	dnnl_engine_destroy(eng);
}

static const pn_backend cpu = {
	"cpu", cpu_open, cpu_prepare, cpu_step, cpu_flush, cpu_release,
	cpu_recover, cpu_compute, cpu_optimize, cpu_close,
};

const pn_backend *pn_cpu_backend(void)
{
	return &cpu;
}
