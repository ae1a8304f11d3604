/* vector.c - the cpu backend's elementwise family: embedding,
 * layernorm, softmax, xent, elementwise and posenc. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "dnn.h"
#include "err.h"

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

void dn_embedding(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t N = (dnnl_dim_t)(l->batch * l->seq_len),
		   V = (dnnl_dim_t)l->vocab, E = (dnnl_dim_t)l->embed_dim;
	dnnl_memory_desc_t mt = MD(2, V, E), my = MD(2, N, E);
	dnnl_memory_t t = dn_tensor(r, &mt, RAND, 1);
	dnnl_memory_t y = dn_tensor(r, &my, ZERO, 1);
	r->idx = dn_balloc(r, (size_t)N * sizeof(int32_t));
	if (r->st)
		return;
	for (dnnl_dim_t i = 0; i < N; i++)
		r->idx[i] = (int32_t)pn_rng_int(&r->rng, 0, V - 1);
	op *o = dn_cop(r, FWD, c_gather);
	o->a = dn_ptr(t);
	o->b = dn_ptr(y);
	o->idx = r->idx;
	o->n = (size_t)N;
	o->m = (size_t)E;
	dn_canon(r, CY, y, NULL);
	if (!l->train) {
		dn_addparam(r, t, NULL, &mt);
		return;
	}
	dnnl_memory_t dy = dn_tensor(r, &my, RAND, 1);
	dnnl_memory_t dt = dn_tensor(r, &mt, ZERO, 1);
	o = dn_cop(r, BWD, c_scatter);
	if (!o)
		return;
	o->a = dn_ptr(dy);
	o->b = dn_ptr(dt);
	o->idx = r->idx;
	o->n = (size_t)N;
	o->m = (size_t)E;
	o->k = (int)V;
	dn_addparam(r, t, dt, &mt);
	dn_canon(r, CDY, dy, NULL);
}

void dn_norm(pn_run *r, dnnl_primitive_desc_t fpd, dnnl_primitive_desc_t bpd,
	     const dnnl_memory_desc_t *md, const dnnl_memory_desc_t *ms,
	     const dnnl_memory_desc_t *mc)
{
	int train = r->cfg.l.train;
	dnnl_memory_t x = dn_tensor(r, md, RAND, 1), y = dn_tensor(r, md, ZERO, 1);
	dnnl_memory_t g = dn_tensor(r, mc, RAND, 1), b = dn_tensor(r, mc, RAND, 1);
	dnnl_memory_t mean = train ? dn_tensor(r, ms, ZERO, 1) : NULL;
	dnnl_memory_t var = train ? dn_tensor(r, ms, ZERO, 1) : NULL;
	if (r->st)
		return;
	dn_prim(r, FWD, fpd, DNNL_ARG_SRC, x, DNNL_ARG_DST, y, DNNL_ARG_MEAN, mean,
	     DNNL_ARG_VARIANCE, var, DNNL_ARG_SCALE, g, DNNL_ARG_SHIFT, b, -1);
	dn_canon(r, CX, x, NULL);
	dn_canon(r, CY, y, NULL);
	if (!train) {
		dn_norm_params(r, g, b, NULL, NULL, mc, NULL, NULL);
		return;
	}
	dnnl_memory_t dy = dn_tensor(r, md, RAND, 1), dx = dn_tensor(r, md, ZERO, 1);
	dnnl_memory_t dg = dn_tensor(r, mc, ZERO, 1), db = dn_tensor(r, mc, ZERO, 1);
	dn_prim(r, BWD, bpd, DNNL_ARG_SRC, x, DNNL_ARG_DIFF_DST, dy,
	     DNNL_ARG_MEAN, mean, DNNL_ARG_VARIANCE, var, DNNL_ARG_SCALE, g,
	     DNNL_ARG_SHIFT, b, DNNL_ARG_DIFF_SRC, dx, DNNL_ARG_DIFF_SCALE, dg,
	     DNNL_ARG_DIFF_SHIFT, db, -1);
	dn_norm_params(r, g, b, dg, db, mc, dy, dx);
}

void dn_layernorm(pn_run *r)
{
	if (dn_dt == dnnl_f32) {          /* as PyTorch: rowwise.c */
		dn_layernorm_c(r);
		return;
	}
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t N = (dnnl_dim_t)(l->batch * l->seq_len), D = (dnnl_dim_t)l->dim;
	int train = l->train;
	unsigned flags = dnnl_use_scale | dnnl_use_shift;
	/* statistics, scale and shift in fp32 whatever the data */
	dnnl_memory_desc_t md = MD(2, N, D), ms = MDF(1, N), mg = MDF(1, D);
	dnnl_layer_normalization_desc_t fd, bd;
	DN(dnnl_layer_normalization_forward_desc_init(&fd, train ?
		dnnl_forward_training : dnnl_forward_inference, &md, NULL,
		PN_LN_EPS, flags), "layer normalization");
	dnnl_primitive_desc_t fpd = dn_pdesc(r, &fd, 0, 1, NULL,
					  "layer normalization"), bpd = NULL;
	if (train) {
		DN(dnnl_layer_normalization_backward_desc_init(&bd, dnnl_backward,
			&md, &md, NULL, PN_LN_EPS, flags),
		   "layer normalization backward");
		bpd = dn_pdesc(r, &bd, 0, 1, fpd, "layer normalization backward");
	}
	dn_norm(r, fpd, bpd, &md, &ms, &mg);
}

/* A softmax of alg (dnnl_softmax_accurate, or dnnl_softmax_log: the
 * log-softmax) over the last axis of md, rows of m, from x into y, added
 * to FWD; returns the backward pd in training (else NULL). */
static dnnl_primitive_desc_t softmax_fwd(pn_run *r, dnnl_alg_kind_t alg,
					 const dnnl_memory_desc_t *md,
					 dnnl_memory_t x, dnnl_memory_t y,
					 size_t rows, size_t m)
{
	int train = r->cfg.l.train;
	dnnl_softmax_v2_desc_t fd, bd;
	DN(dnnl_softmax_v2_forward_desc_init(&fd, train ? dnnl_forward_training
		: dnnl_forward_inference, alg, md, md, 1), "softmax");
	dnnl_primitive_desc_t fpd = dn_pdesc(r, &fd, 0, 1, NULL, "softmax");
	dn_softmax_fwd(r, FWD, fpd, alg == dnnl_softmax_log, x, y, rows, m);
	dn_canon(r, CX, x, NULL);
	dn_canon(r, CY, y, NULL);
	if (!train || r->st)
		return NULL;
	DN(dnnl_softmax_v2_backward_desc_init(&bd, alg, md, md, md, 1),
	   "softmax backward");
	return dn_pdesc(r, &bd, 0, 1, fpd, "softmax backward");
}

void dn_softmax(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t N = (dnnl_dim_t)(l->batch * l->seq_len), D = (dnnl_dim_t)l->dim;
	dnnl_memory_desc_t md = MD(2, N, D);
	dnnl_memory_t x = dn_tensor(r, &md, RAND, 1), y = dn_tensor(r, &md, ZERO, 1);
	dnnl_primitive_desc_t bpd = softmax_fwd(r, dnnl_softmax_accurate, &md,
						x, y, (size_t)N, (size_t)D);
	if (!bpd)
		return;
	dnnl_memory_t dy = dn_tensor(r, &md, RAND, 1), dx = dn_tensor(r, &md, ZERO, 1);
	dn_softmax_bwd(r, BWD, bpd, 0, y, dy, dx, (size_t)N, (size_t)D);
	dn_canon(r, CDY, dy, NULL);
	dn_canon(r, CDX, dx, NULL);
}

/* The negative log-likelihood of the n rows of m log-probabilities a (bf16
 * when half) at the targets idx, their mean into *c: PyTorch's nll_loss. */
static void c_nll(const op *o)
{
	double s = 0;
	for (size_t i = 0; i < o->n; i++) {
		size_t j = i * o->m + (size_t)o->idx[i];
		s += o->half ? pn_bf16_f32(((const uint16_t *)o->a)[j]) : o->a[j];
	}
	*o->c = (float)(-s / (double)o->n);
}

/* Its backward, as PyTorch's nll_loss_backward writes it: b = 0 over n
 * rows of m, then -1/n at each row's target. */
static void c_nll_bwd(const op *o)
{
	size_t e = o->half ? sizeof(uint16_t) : sizeof(float);
	memset(o->b, 0, o->n * o->m * e);
	float g = -1.0f / (float)o->n;
	for (size_t i = 0; i < o->n; i++) {
		size_t j = i * o->m + (size_t)o->idx[i];
		if (o->half)
			((uint16_t *)o->b)[j] = pn_bf16(g);
		else
			o->b[j] = g;
	}
}

void dn_xent(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t N = (dnnl_dim_t)(l->batch * l->seq_len), D = (dnnl_dim_t)l->dim;
	dnnl_memory_desc_t md = MD(2, N, D);
	dnnl_memory_t x = dn_tensor(r, &md, RAND, 1), y = dn_tensor(r, &md, ZERO, 1);
	float *loss = dn_fbuf(r, 1);
	r->idx = dn_balloc(r, (size_t)N * sizeof(int32_t));
	if (r->st)
		return;
	for (dnnl_dim_t i = 0; i < N; i++)
		r->idx[i] = (int32_t)pn_rng_int(&r->rng, 0, D - 1);
	dnnl_primitive_desc_t bpd = softmax_fwd(r, dnnl_softmax_log, &md, x, y,
						(size_t)N, (size_t)D);
	op *o = dn_cop(r, FWD, c_nll);
	if (!o)
		return;
	o->a = dn_ptr(y);
	o->c = loss;
	o->idx = r->idx;
	o->n = (size_t)N;
	o->m = (size_t)D;
	o->half = dn_dt == dnnl_bf16;
	if (!bpd)
		return;
	dnnl_memory_t g = dn_tensor(r, &md, ZERO, 1), dx = dn_tensor(r, &md, ZERO, 1);
	o = dn_cop(r, BWD, c_nll_bwd);
	if (!o)
		return;
	o->b = dn_ptr(g);
	o->idx = r->idx;
	o->n = (size_t)N;
	o->m = (size_t)D;
	o->half = dn_dt == dnnl_bf16;
	dn_softmax_bwd(r, BWD, bpd, 1, y, g, dx, (size_t)N, (size_t)D);
	dn_canon(r, CDX, dx, NULL);
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
					  dn_mdof(src), alpha, beta), "eltwise");
	dnnl_primitive_desc_t pd = dn_pdesc(r, &d, 0, 1, NULL, "eltwise");
	dn_prim(r, ph, pd, DNNL_ARG_SRC, src, DNNL_ARG_DST, dst, -1);
	return pd;
}

static void binary(pn_run *r, int ph, dnnl_alg_kind_t alg, dnnl_memory_t a,
		   dnnl_memory_t b, dnnl_memory_t dst, int neg)
{
	if (r->st)
		return;
	dnnl_binary_desc_t d;
	DN(dnnl_binary_desc_init(&d, alg, dn_mdof(a), dn_mdof(b), dn_mdof(dst)),
	   "binary");
	dnnl_primitive_desc_t pd = NULL;
	if (!r->st) {
		/* neg: -(a op b), a linear post-op */
		dnnl_primitive_attr_t at = dn_attr_new(PN_ACT_NONE, 1);
		if (neg) {
			dnnl_post_ops_t po;
			dnnl_post_ops_create(&po);
			dnnl_post_ops_append_eltwise(po, 1, dnnl_eltwise_linear,
						     -1, 0);
			dnnl_primitive_attr_set_post_ops(at, po);
			dnnl_post_ops_destroy(po);
		}
		dnnl_status_t s = dnnl_primitive_desc_create(&pd, &d, at, dn_eng,
							     NULL);
		dnnl_primitive_attr_destroy(at);
		if (DN(s, "binary"))
			return;
		r->pd[r->npd++] = pd;
	}
	dn_prim(r, ph, pd, DNNL_ARG_SRC_0, a, DNNL_ARG_SRC_1, b, DNNL_ARG_DST, dst,
	     -1);
}

/* The tensors of one elementwise op: inputs, output, gradients. */
typedef struct {
	dnnl_memory_desc_t md;
	dnnl_memory_t x, x2, y, dy, dx, dx2;
	size_t n;
	int train;
} elem;

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

/* the two-tensor op bin[i] */
static void elem_binary(pn_run *r, elem *e, size_t i)
{
	binary(r, FWD, bin[i].alg, e->x, e->x2, e->y, 0);
	if (!e->train)
		return;
	if (i <= 1) {           /* add, sub: the gradient passes */
		e->dx = e->dy;
		if (i == 0) {
			e->dx2 = e->dy;
		} else {
			e->dx2 = dn_tensor(r, &e->md, ZERO, 1);
			eltwise(r, BWD, dnnl_eltwise_linear, -1, 0, e->dy, e->dx2);
		}
	} else if (i == 2) {    /* mul */
		e->dx = dn_tensor(r, &e->md, ZERO, 1);
		e->dx2 = dn_tensor(r, &e->md, ZERO, 1);
		binary(r, BWD, dnnl_binary_mul, e->dy, e->x2, e->dx, 0);
		binary(r, BWD, dnnl_binary_mul, e->dy, e->x, e->dx2, 0);
	} else {                /* div: dx = dy / x2, dx2 = -dx y */
		e->dx = dn_tensor(r, &e->md, ZERO, 1);
		e->dx2 = dn_tensor(r, &e->md, ZERO, 1);
		binary(r, BWD, dnnl_binary_div, e->dy, e->x2, e->dx, 0);
		binary(r, BWD, dnnl_binary_mul, e->dx, e->y, e->dx2, 1);
	}
}

/* the one-tensor op un[i], its scalar c */
static void elem_unary(pn_run *r, elem *e, size_t i, float c)
{
	float a = un[i].alpha, b = un[i].beta;
	if (un[i].alg == dnnl_eltwise_linear && i < 2)
		b *= c;                          /* x + c, x - c */
	else if (i == 4)
		b = c;                           /* x ^ c */
	else if (i == 2)
		a = c;
	else if (i == 3)
		a = 1 / c;
	dnnl_primitive_desc_t fpd = eltwise(r, FWD, un[i].alg, a, b, e->x, e->y);
	if (!e->train)
		return;
	if (i < 2) {                             /* addu, subu */
		e->dx = e->dy;
		return;
	}
	dnnl_alg_kind_t balg = un[i].balg;
	int use_dst = balg != un[i].alg;
	dnnl_eltwise_desc_t bd;
	dnnl_primitive_desc_t hint = fpd;
	if (use_dst && !r->st) {
		dnnl_eltwise_desc_t hd;
		DN(dnnl_eltwise_forward_desc_init(&hd, dnnl_forward_training,
						  balg, &e->md, a, b), "eltwise");
		hint = dn_pdesc(r, &hd, 0, 1, NULL, "eltwise");
	}
	DN(dnnl_eltwise_backward_desc_init(&bd, balg, &e->md, &e->md, a, b),
	   "eltwise backward");
	dnnl_primitive_desc_t bpd = dn_pdesc(r, &bd, 0, 1, hint,
					     "eltwise backward");
	e->dx = dn_tensor(r, &e->md, ZERO, 1);
	dn_prim(r, BWD, bpd, use_dst ? DNNL_ARG_DST : DNNL_ARG_SRC,
		use_dst ? e->y : e->x, DNNL_ARG_DIFF_DST, e->dy,
		DNNL_ARG_DIFF_SRC, e->dx, -1);
}

/* dropout with probability p: plain-C, as PyTorch's CPU dropout
 * (dn_dropout_fwd), its noise kept for the backward pass */
static void elem_dropout(pn_run *r, elem *e, float p)
{
	if (r->st)
		return;
	const void *m = dn_dropout_fwd(r, FWD, dn_ptr(e->x), dn_ptr(e->y),
				       e->n, p, 200, e->train);
	if (!e->train || r->st)
		return;
	e->dx = dn_tensor(r, &e->md, ZERO, 1);
	if (!r->st)
		dn_dropout_bwd(r, BWD, dn_ptr(e->dy), dn_ptr(e->dx), e->n, m);
}

/* a gated op, y = act(x) * x2 (layer.h), as a framework runs it on the
 * CPU: PyTorch's act_fn(gate) * up is two kernels, oneDNN's eltwise act(x)
 * into t and a binary mul; the backward as autograd runs it, dt = dy x2,
 * dx2 = dy t, dx = act'(x) dt.  (A fused pass would need oneDNN's eltwise
 * with a binary post-op of a whole tensor, which falls back to its
 * reference code, 100 times slower; GPU kernels such as vLLM's SiluAndMul
 * fuse it, src/cuda/kernels.cuh.) */
static void elem_gated(pn_run *r, elem *e, const char *name)
{
	dnnl_alg_kind_t alg = strcmp(name, "silu_mul") == 0 ?
			      dnnl_eltwise_swish : dnnl_eltwise_gelu_erf;
	dnnl_memory_t t = dn_tensor(r, &e->md, ZERO, 1);
	dnnl_primitive_desc_t fpd = eltwise(r, FWD, alg, 1, 0, e->x, t);
	binary(r, FWD, dnnl_binary_mul, t, e->x2, e->y, 0);
	if (!e->train || r->st)
		return;
	dnnl_memory_t dt = dn_tensor(r, &e->md, ZERO, 1);
	e->dx = dn_tensor(r, &e->md, ZERO, 1);
	e->dx2 = dn_tensor(r, &e->md, ZERO, 1);
	binary(r, BWD, dnnl_binary_mul, e->dy, e->x2, dt, 0);
	binary(r, BWD, dnnl_binary_mul, e->dy, t, e->dx2, 0);
	if (r->st)
		return;
	dnnl_eltwise_desc_t bd;
	DN(dnnl_eltwise_backward_desc_init(&bd, alg, &e->md, &e->md, 1, 0),
	   "eltwise backward");
	dnnl_primitive_desc_t bpd = dn_pdesc(r, &bd, 0, 1, fpd,
					     "eltwise backward");
	dn_prim(r, BWD, bpd, DNNL_ARG_SRC, e->x, DNNL_ARG_DIFF_DST, dt,
		DNNL_ARG_DIFF_SRC, e->dx, -1);
}

/* tensor pow: plain-C */
static void elem_pow(pn_run *r, elem *e)
{
	op *o = dn_cop(r, FWD, c_pow);
	o->a = dn_ptr(e->x);
	o->b = dn_ptr(e->x2);
	o->c = dn_ptr(e->y);
	o->n = e->n;
	if (!e->train)
		return;
	e->dx = dn_tensor(r, &e->md, ZERO, 1);
	e->dx2 = dn_tensor(r, &e->md, ZERO, 1);
	powbwd *pb = dn_ctx(r, sizeof *pb);
	if (!pb)
		return;
	*pb = (powbwd){dn_ptr(e->x), dn_ptr(e->x2), dn_ptr(e->y), dn_ptr(e->dy),
		       dn_ptr(e->dx), dn_ptr(e->dx2)};
	o = dn_cop(r, BWD, c_pow_bwd);
	o->ctx = pb;
	o->n = e->n;
}

void dn_elementwise(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t R = (dnnl_dim_t)(l->batch * l->seq_len), D = (dnnl_dim_t)l->dim;
	const char *name = l->op;
	int two = pn_elem_binary(name);
	elem e = {MD(2, R, D), NULL, NULL, NULL, NULL, NULL, NULL, 0, l->train};
	int pos = strcmp(name, "pow") == 0;
	e.x = dn_tensor(r, &e.md, RAND, 1);
	e.y = dn_tensor(r, &e.md, ZERO, 1);
	if (r->st)
		return;
	e.n = dn_nelems(e.x);
	if (pos)
		dn_fill(r, e.x, 0.5f, 1.5f);
	if (two) {
		e.x2 = dn_tensor(r, &e.md, RAND, 1);
		if (r->st)
			return;
		dn_fill(r, e.x2, 0.5f, 1.5f);
	}
	dn_canon(r, CX, e.x, NULL);
	if (e.x2)
		dn_canon(r, CX2, e.x2, NULL);
	dn_canon(r, CY, e.y, NULL);
	e.dy = e.train ? dn_tensor(r, &e.md, RAND, 1) : NULL;
	size_t nb = sizeof bin / sizeof bin[0], nu = sizeof un / sizeof un[0];
	size_t i = 0;
	while (i < nb && strcmp(name, bin[i].name) != 0)
		i++;
	size_t j = 0;
	while (j < nu && strcmp(name, un[j].name) != 0)
		j++;
	if (i < nb)
		elem_binary(r, &e, i);
	else if (j < nu)
		elem_unary(r, &e, j, PN_ELEM_SCALAR);
	else if (strcmp(name, "copy") == 0) {
		dn_reorder(r, FWD, e.x, e.y);
		e.dx = e.dy;
	} else if (strcmp(name, "dropout") == 0)
		elem_dropout(r, &e, (float)r->cfg.l.dropout);
	else if (pos)
		elem_pow(r, &e);
	else if (pn_elem_gated(name))
		elem_gated(r, &e, name);
	else
		dn_fail(r, PN_INVALID, "unknown elementwise op '%s'", name);
	if (e.train) {
		dn_canon(r, CDY, e.dy, NULL);
		dn_canon(r, CDX, e.dx, NULL);
		if (e.dx2)
			dn_canon(r, CDX2, e.dx2, NULL);
	}
}

void dn_posenc(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, S = (dnnl_dim_t)l->seq_len,
		   E = (dnnl_dim_t)l->embed_dim;
	dnnl_memory_desc_t md = MD(3, B, S, E), mp = MD(3, 1, S, E);
	dnnl_memory_t x = dn_tensor(r, &md, RAND, 1), y = dn_tensor(r, &md, ZERO, 1);
	dnnl_memory_t pe = dn_tensor(r, &mp, ZERO, 1);
	if (r->st)
		return;
	if (dn_dt == dnnl_f32) {
		pn_posenc_table(dn_ptr(pe), (long)S, (long)E);
	} else {        /* made in fp32, narrowed; not the layer's memory */
		float *t = pn_xmalloc((size_t)(S * E) * sizeof(float));
		pn_posenc_table(t, (long)S, (long)E);
		dn_set(pe, t, (size_t)(S * E));
		free(t);
	}
	binary(r, FWD, dnnl_binary_add, x, pe, y, 0);
	dn_canon(r, CX, x, NULL);
	dn_canon(r, CY, y, NULL);
	if (l->train) {    /* the table is no parameter: the gradient passes */
		dnnl_memory_t dy = dn_tensor(r, &md, RAND, 1);
		dn_canon(r, CDY, dy, NULL);
		dn_canon(r, CDX, dy, NULL);
	}
}

