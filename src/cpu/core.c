/* core.c - the cpu backend of pn-time: oneDNN primitives (C API), plain-C
 * loops where oneDNN has no primitive (embedding, dropout, tensor pow);
 * the helpers every layer family uses (dnn.h) and the backend's table.
 * The optimizer updates are optim.h's. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "bf16.h"
#include "cpu.h"
#include "dnn.h"
#include "err.h"

dnnl_engine_t dn_eng;
dnnl_stream_t dn_strm;
pn_bk_opts dn_opts;
dnnl_data_type_t dn_dt = dnnl_f32;

/* ---- errors and memory ---------------------------------------------------- */

void dn_fail(pn_run *r, int st, const char *fmt, ...)
{
	if (r->st != PN_OK)
		return;
	r->st = st;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof r->msg, fmt, ap);
	va_end(ap);
}

int dn_status(pn_run *r, dnnl_status_t s, const char *what, const char *file,
	      int line)
{
	if (s == dnnl_success)
		return 0;
	if (s == dnnl_unimplemented)
		dn_fail(r, PN_INVALID, "oneDNN has no %s for this configuration",
		     what);
	else if (s == dnnl_out_of_memory)
		dn_fail(r, PN_OOM, "oneDNN: out of memory (%s)", what);
	else
		dn_fail(r, PN_ERROR, "%s:%d: oneDNN %s: %s", file, line, what,
		     dnnl_status2str(s));
	return -1;
}

/* n bytes for the run, counted as its memory when count */
static void *alloc(pn_run *r, size_t bytes, int count)
{
	if (r->st)
		return NULL;
	r->bytes += count ? (double)bytes : 0;
	if (r->limit > 0 && r->bytes > r->limit) {
		dn_fail(r, PN_OOM, "needs more than --mem-limit %.0f bytes",
		     r->limit);
		return NULL;
	}
	if (r->nbuf == MAXBUF)
		PN_BUG("too many buffers");
	void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
	if (!p) {
		dn_fail(r, PN_OOM, "out of memory allocating %zu bytes", bytes);
		return NULL;
	}
	r->buf[r->nbuf++] = p;
	return p;
}

void *dn_balloc(pn_run *r, size_t bytes) { return alloc(r, bytes, 1); }

void *dn_ctx(pn_run *r, size_t bytes) { return alloc(r, bytes, 0); }

float *dn_fbuf(pn_run *r, size_t n)
{
	float *p = dn_balloc(r, n * sizeof(float));
	if (p)
		memset(p, 0, n * sizeof(float));
	return p;
}

size_t dn_esize(dnnl_data_type_t t)
{
	return t == dnnl_bf16 || t == dnnl_f16 ? 2 : 4;
}

/* float v[0..n) into bf16 h */
static void narrow(uint16_t *h, const float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h[i] = pn_bf16(v[i]);
}

void dn_set(dnnl_memory_t m, const float *v, size_t n)
{
	void *p = dn_ptr(m);
	if (dn_mdof(m)->data_type == dnnl_bf16)
		narrow(p, v, n);
	else
		memcpy(p, v, n * sizeof(float));
}

void dn_fill(pn_run *r, dnnl_memory_t m, float lo, float hi)
{
	if (!m)
		return;
	size_t n = dn_nelems(m);
	if (dn_mdof(m)->data_type != dnnl_bf16) {
		pn_rng_fill(&r->rng, dn_ptr(m), n, lo, hi);
		return;
	}
	uint16_t *h = dn_ptr(m);
	float tmp[1024];
	for (size_t i = 0; i < n; i += 1024) {
		size_t k = n - i < 1024 ? n - i : 1024;
		pn_rng_fill(&r->rng, tmp, k, lo, hi);
		narrow(h + i, tmp, k);
	}
}

/* A memory object of md on a new buffer; fill ZERO, RAND in [-1, 1),
 * WEIGHT in [-1/sqrt(fan), 1/sqrt(fan)). */
dnnl_memory_t dn_tensor(pn_run *r, const dnnl_memory_desc_t *md, fill f,
			    double fan)
{
	if (r->st)
		return NULL;
	size_t bytes = dnnl_memory_desc_get_size(md);
	void *p = dn_balloc(r, bytes);
	if (!p)
		return NULL;
	memset(p, 0, bytes);
	dnnl_memory_t m;
	if (DN(dnnl_memory_create(&m, md, dn_eng, p), "memory"))
		return NULL;
	r->mem[r->nmem++] = m;
	float a = (float)(1 / sqrt(fan > 0 ? fan : 1));
	if (f == RAND)
		dn_fill(r, m, -1, 1);
	else if (f == WEIGHT)
		dn_fill(r, m, -a, a);
	return m;
}

void dn_fresh(pn_run *r, dnnl_memory_t m)
{
	r->fresh = m;
}

/* A memory object of md on an existing buffer. */
dnnl_memory_t dn_view(pn_run *r, const dnnl_memory_desc_t *md, void *p)
{
	if (r->st)
		return NULL;
	dnnl_memory_t m;
	if (DN(dnnl_memory_create(&m, md, dn_eng, p), "memory"))
		return NULL;
	if (r->nmem == MAXBUF)
		PN_BUG("too many memories");
	r->mem[r->nmem++] = m;
	return m;
}

void *dn_ptr(dnnl_memory_t m)
{
	void *p = NULL;
	if (m)
		dnnl_memory_get_data_handle(m, &p);
	return p;
}

const dnnl_memory_desc_t *dn_mdof(dnnl_memory_t m)
{
	const dnnl_memory_desc_t *md = NULL;
	dnnl_memory_get_memory_desc(m, &md);
	return md;
}

size_t dn_nelems(dnnl_memory_t m)
{
	const dnnl_memory_desc_t *md = dn_mdof(m);
	return dnnl_memory_desc_get_size(md) / dn_esize(md->data_type);
}

/* memory descriptors */
dnnl_memory_desc_t dn_md_tag(int nd, const dnnl_dim_t *dims,
				 dnnl_format_tag_t tag)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t d = {0};
	memcpy(d, dims, (size_t)nd * sizeof *dims);
	if (dnnl_memory_desc_init_by_tag(&md, nd, d, dn_dt, tag) !=
	    dnnl_success)
		PN_BUG("memory descriptor");
	return md;
}

dnnl_memory_desc_t dn_md_f32(int nd, const dnnl_dim_t *dims)
{
	dnnl_data_type_t t = dn_dt;
	dn_dt = dnnl_f32;
	dnnl_memory_desc_t md = dn_md_tag(nd, dims, dn_plain[nd]);
	dn_dt = t;
	return md;
}

dnnl_memory_desc_t dn_md_str(int nd, const dnnl_dim_t *dims,
				 const dnnl_dim_t *strides)
{
	dnnl_memory_desc_t md;
	dnnl_dims_t d = {0}, s = {0};
	memcpy(d, dims, (size_t)nd * sizeof *dims);
	memcpy(s, strides, (size_t)nd * sizeof *strides);
	if (dnnl_memory_desc_init_by_strides(&md, nd, d, dn_dt, s) != dnnl_success)
		PN_BUG("memory descriptor");
	return md;
}

const dnnl_format_tag_t dn_plain[] = {
	dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde
};

/* ---- primitives ----------------------------------------------------------- */

dnnl_primitive_attr_t dn_attr_new(int act, float scale)
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
dnnl_primitive_desc_t dn_pdesc(pn_run *r, const void *desc, int act,
				   float scale, const_dnnl_primitive_desc_t hint,
				   const char *what)
{
	if (r->st)
		return NULL;
	dnnl_primitive_attr_t a = dn_attr_new(act, scale);
	dnnl_primitive_desc_t pd = NULL;
	dnnl_status_t s = dnnl_primitive_desc_create(&pd, desc, a, dn_eng, hint);
	dnnl_primitive_attr_destroy(a);
	if (DN(s, what))
		return NULL;
	if (r->npd == MAXPD)
		PN_BUG("too many primitive descriptors");
	r->pd[r->npd++] = pd;
	return pd;
}

const dnnl_memory_desc_t *dn_q(const_dnnl_primitive_desc_t pd,
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

void dn_note(pn_run *r, const char *s)
{
	if (!s || strstr(r->impl, s))
		return;
	size_t n = strlen(r->impl);
	snprintf(r->impl + n, sizeof r->impl - n, "%s%s", n ? "," : "", s);
}

static void note_impl(pn_run *r, const_dnnl_primitive_desc_t pd)
{
	const char *s = NULL;
	dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
	dn_note(r, s);
}

/* Add the primitive of pd to phase ph with (arg, memory) pairs ending in
 * -1; allocates its scratchpad.  A NULL memory drops its argument. */
void dn_prim(pn_run *r, int ph, dnnl_primitive_desc_t pd, ...)
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
	const dnnl_memory_desc_t *sp = dn_q(pd, dnnl_query_scratchpad_md, 0);
	if (sp && dnnl_memory_desc_get_size(sp) > 0) {
		dnnl_memory_t m = dn_tensor(r, sp, NOFILL, 1);
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
void dn_reorder(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t dst)
{
	if (r->st)
		return;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_attr_t a = dn_attr_new(PN_ACT_NONE, 1);
	dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, dn_mdof(src),
		dn_eng, dn_mdof(dst), dn_eng, a);
	dnnl_primitive_attr_destroy(a);
	if (DN(s, "reorder"))
		return;
	r->pd[r->npd++] = pd;
	dn_prim(r, ph, pd, DNNL_ARG_FROM, src, DNNL_ARG_TO, dst, -1);
}

/* m in layout want: m itself, or a new tensor filled by a reorder added
 * to phase ph now. */
dnnl_memory_t dn_as(pn_run *r, int ph, dnnl_memory_t m,
			const dnnl_memory_desc_t *want)
{
	if (r->st)
		return NULL;
	if (dnnl_memory_desc_equal(dn_mdof(m), want))
		return m;
	dnnl_memory_t t = dn_tensor(r, want, ZERO, 1);
	dn_reorder(r, ph, m, t);
	return t;
}

op *dn_cop(pn_run *r, int ph, void (*fn)(const op *))
{
	if (r->st)
		return NULL;
	op *o = newop(r, ph);
	o->fn = fn;
	return o;
}

void dn_addparam(pn_run *r, dnnl_memory_t w, dnnl_memory_t g,
		     const dnnl_memory_desc_t *canon)
{
	if (r->st || !w)
		return;
	if (r->npar == MAXPAR)
		PN_BUG("too many parameters");
	param *p = &r->par[r->npar++];
	p->w = w;
	p->g = g;
	p->n = dn_nelems(w);
	p->canon = canon ? *canon : *dn_mdof(w);
	p->gcanon = canon ? *canon : g ? *dn_mdof(g) : *dn_mdof(w);
	int ns = r->cfg.l.train ? pn_opt_states(r->cfg.l.optimizer) : 0;
	p->s1 = ns > 0 ? dn_fbuf(r, p->n) : NULL;
	p->s2 = ns > 1 ? dn_fbuf(r, p->n) : NULL;
	if (!g || r->cfg.l.optimizer == PN_OPT_NONE ||
	    dn_mdof(w)->data_type != dnnl_bf16)
		return;
	p->master = dn_fbuf(r, p->n);
	p->g32 = dn_fbuf(r, p->n);
	const uint16_t *h = dn_ptr(w);
	for (size_t i = 0; p->master && i < p->n; i++)
		p->master[i] = pn_bf16_f32(h[i]);
}

void dn_norm_params(pn_run *r, dnnl_memory_t g, dnnl_memory_t b,
		    dnnl_memory_t dg, dnnl_memory_t db,
		    const dnnl_memory_desc_t *mc, dnnl_memory_t dy,
		    dnnl_memory_t dx)
{
	dn_addparam(r, g, dg, mc);
	dn_addparam(r, b, db, mc);
	if (dy) {
		dn_canon(r, CDY, dy, NULL);
		dn_canon(r, CDX, dx, NULL);
	}
}

void dn_norm_loops(pn_run *r, const dnnl_memory_desc_t *md,
		   const dnnl_memory_desc_t *mc, normio *io, void *ctx,
		   void (*fwd)(const op *), void (*bwd)(const op *),
		   const char *note)
{
	dnnl_memory_t x = dn_tensor(r, md, RAND, 1), y = dn_tensor(r, md, ZERO, 1);
	dnnl_memory_t g = dn_tensor(r, mc, RAND, 1), b = dn_tensor(r, mc, RAND, 1);
	if (r->st)
		return;
	*io = (normio){dn_ptr(x), dn_ptr(y), NULL, NULL, dn_ptr(g), dn_ptr(b),
		       NULL, NULL};
	op *o = dn_cop(r, FWD, fwd);
	if (!o)
		return;
	o->ctx = ctx;
	dn_note(r, note);
	dn_canon(r, CX, x, NULL);
	dn_canon(r, CY, y, NULL);
	if (!r->cfg.l.train) {
		dn_norm_params(r, g, b, NULL, NULL, mc, NULL, NULL);
		return;
	}
	dnnl_memory_t dy = dn_tensor(r, md, RAND, 1), dx = dn_tensor(r, md, ZERO, 1);
	dnnl_memory_t dg = dn_tensor(r, mc, ZERO, 1), db = dn_tensor(r, mc, ZERO, 1);
	if (r->st)
		return;
	io->dy = dn_ptr(dy);
	io->dx = dn_ptr(dx);
	io->dg = dn_ptr(dg);
	io->db = dn_ptr(db);
	o = dn_cop(r, BWD, bwd);
	if (!o)
		return;
	o->ctx = ctx;
	dn_norm_params(r, g, b, dg, db, mc, dy, dx);
}

void dn_canon(pn_run *r, int slot, dnnl_memory_t m,
		  const dnnl_memory_desc_t *md)
{
	if (r->st || !m)         /* a failed prepare: nothing to compare */
		return;
	r->canon[slot] = m;
	r->cmd[slot] = md ? *md : *dn_mdof(m);
}

/* ---- plain-C ops ---------------------------------------------------------- */

/* Dropout as PyTorch runs it on a CPU tensor (ATen's _dropout: noise =
 * empty_like(input).bernoulli_(1 - p); noise.div_(1 - p); input * noise,
 * autograd keeping noise for the backward, dy * noise): three passes over
 * a noise tensor of the input's type.  Timed (the run's draw > 0), the
 * Bernoulli draws come from MT19937, as PyTorch's CPU generator makes
 * them (a double of 53 bits of two words, kept below 1 - p: pn_mt_unif),
 * a new mask every step; --check (draw 0) takes the mask every backend
 * shares, pn_keep's. */
static inline __attribute__((always_inline)) void
dropout_fwd(const op *o, pn_run *r, int half)
{
	float q = 1 - o->f;
	size_t n = o->n;
	void *nz = o->mask;
	if (r->draw)
		for (size_t i = 0; i < n; i++)
			pn_bf16_st(nz, (long)i, pn_mt_unif(&r->mt) < q ? 1.f : 0.f,
				   half);
	else
		for (size_t i = 0; i < n; i++)
			pn_bf16_st(nz, (long)i, pn_keep((uint64_t)o->k, i, o->f) ?
				   1.f : 0.f, half);
	for (size_t i = 0; i < n; i++)
		pn_bf16_st(nz, (long)i, pn_bf16_ld(nz, (long)i, half) / q, half);
	for (size_t i = 0; i < n; i++)
		pn_bf16_st(o->b, (long)i, pn_bf16_ld(o->a, (long)i, half) *
			   pn_bf16_ld(nz, (long)i, half), half);
}

static void c_dropout_fwd(const op *o)
{
	if (o->half)
		dropout_fwd(o, o->ctx, 1);
	else
		dropout_fwd(o, o->ctx, 0);
}

/* dx = dy * noise, the kept noise already scaled */
static inline __attribute__((always_inline)) void
dropout_bwd(const op *o, int half)
{
	for (size_t i = 0; i < o->n; i++)
		pn_bf16_st(o->b, (long)i, pn_bf16_ld(o->a, (long)i, half) *
			   pn_bf16_ld(o->mask, (long)i, half), half);
}

static void c_dropout_bwd(const op *o)
{
	if (o->half)
		dropout_bwd(o, 1);
	else
		dropout_bwd(o, 0);
}

void *dn_dropout_fwd(pn_run *r, int ph, void *a, void *b, size_t n, float p,
		     int k, int keep)
{
	if (r->st)
		return NULL;
	void *noise = dn_balloc(r, n * dn_esize(dn_dt));
	op *o = dn_cop(r, ph, c_dropout_fwd);
	if (!o || !noise)
		return NULL;
	o->a = a;
	o->b = b;
	o->n = n;
	o->f = p;
	o->k = k;
	o->half = dn_dt == dnnl_bf16;
	o->mask = noise;
	o->ctx = r;
	return keep ? noise : NULL;
}

void dn_dropout_bwd(pn_run *r, int ph, void *dy, void *dx, size_t n,
		    const void *noise)
{
	op *o = dn_cop(r, ph, c_dropout_bwd);
	if (!o)
		return;
	if (!noise)
		PN_BUG("a dropout backward without its noise");
	o->a = dy;
	o->b = dx;
	o->n = n;
	o->half = dn_dt == dnnl_bf16;
	o->mask = (void *)noise;
}

/* ---- layers --------------------------------------------------------------- */

static dnnl_alg_kind_t act_bwd_alg(int act)
{
	return act == PN_ACT_RELU ? dnnl_eltwise_relu_use_dst_for_bwd :
	       act == PN_ACT_TANH ? dnnl_eltwise_tanh_use_dst_for_bwd :
				    dnnl_eltwise_logistic_use_dst_for_bwd;
}

void dn_act_fwd(pn_run *r, int act, dnnl_memory_t y)
{
	if (act == PN_ACT_NONE || r->st)
		return;
	dnnl_eltwise_desc_t fd;
	DN(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training,
		act_bwd_alg(act), dn_mdof(y), 0, 0), "eltwise");
	dnnl_primitive_desc_t pd = dn_pdesc(r, &fd, 0, 1, NULL, "eltwise");
	dn_prim(r, FWD, pd, DNNL_ARG_SRC, y, DNNL_ARG_DST, y, -1);
}

/* dz = dy * act'(y) as an eltwise backward primitive on y's layout. */
dnnl_memory_t dn_act_bwd(pn_run *r, int act, dnnl_memory_t y,
			     dnnl_memory_t dy)
{
	if (act == PN_ACT_NONE || r->st)
		return dy;
	dnnl_eltwise_desc_t fd, bd;
	dnnl_alg_kind_t alg = act_bwd_alg(act);
	const dnnl_memory_desc_t *md = dn_mdof(y);
	DN(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, alg, md,
					  0, 0), "eltwise");
	dnnl_primitive_desc_t hint = dn_pdesc(r, &fd, 0, 1, NULL, "eltwise");
	DN(dnnl_eltwise_backward_desc_init(&bd, alg, md, md, 0, 0), "eltwise");
	dnnl_primitive_desc_t pd = dn_pdesc(r, &bd, 0, 1, hint, "eltwise backward");
	dnnl_memory_t dz = dn_tensor(r, md, ZERO, 1);
	dn_prim(r, BWD, pd, DNNL_ARG_DST, y, DNNL_ARG_DIFF_DST, dy,
	     DNNL_ARG_DIFF_SRC, dz, -1);
	return dz;
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
	dn_opts = *o;
	omp_set_num_threads(o->threads);
	openblas_set_num_threads(o->threads);
	clock_id = o->cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
	if (dnnl_engine_create(&dn_eng, dnnl_cpu, 0) != dnnl_success ||
	    dnnl_stream_create(&dn_strm, dn_eng, dnnl_stream_default_flags) !=
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

/* The data type of r's row (dn_dt), or r failed (invalid) with why:
 * fp32 everywhere; bf16 where the CPU has it natively, for the layers
 * whose kernels all take bf16. */
static int precision(pn_run *r)
{
	const pn_config *c = &r->cfg;
	char why[128];
	dn_dt = dnnl_f32;
	if (c->prec == PN_FP32)
		return 0;
	if (c->prec != PN_BF16) {
		dn_fail(r, PN_INVALID, "precision %s is not supported by the cpu "
			"backend (fp32 and bf16)", pn_prec_name(c->prec));
	} else if (!pn_cpu_native_bf16(why, sizeof why)) {
		dn_fail(r, PN_INVALID, "bf16: %s", why);
	} else if (c->l.type == PN_EMBEDDING || c->l.type == PN_RNN ||
		   c->l.type == PN_LSTM || c->l.type == PN_GRU) {
		dn_fail(r, PN_INVALID, "the cpu backend times %s in fp32 only",
			pn_layer_name(c->l.type));
	} else if (c->l.type == PN_ELEMENTWISE && strcmp(c->l.op, "pow") == 0) {
		dn_fail(r, PN_INVALID, "the cpu backend times elementwise pow "
			"in fp32 only");
	} else {
		dn_dt = dnnl_bf16;
	}
	return r->st;
}

static int cpu_prepare(const pn_config *cfg, pn_run **run, double *mem,
		       char *msg, size_t n)
{
	pn_run *r = pn_xcalloc(1, sizeof *r);
	r->cfg = *cfg;
	r->limit = dn_opts.mem_limit;
	pn_rng_seed(&r->rng, dn_opts.seed);
	pn_mt_seed(&r->mt, (uint32_t)dn_opts.seed);
	double need = pn_io_bytes(cfg);
	if (precision(r)) {
		/* r failed: invalid, with the reason */
	} else if (need > PN_BYTES_MAX) {
		/* before oneDNN's sizes, which would overflow */
		r->bytes = need;
		if (r->limit > 0)
			dn_fail(r, PN_OOM, "needs more than --mem-limit %.0f bytes",
			     r->limit);
		else
			dn_fail(r, PN_OOM, "needs %.3g bytes", need);
	} else
		switch (cfg->l.type) {
		case PN_DENSE: dn_dense(r); break;
		case PN_BMM: dn_bmm(r); break;
		case PN_CONV2D: dn_conv2d(r); break;
		case PN_ATTENTION: dn_attention(r); break;
		case PN_EMBEDDING: dn_embedding(r); break;
		case PN_RNN: case PN_LSTM: case PN_GRU: dn_rnn(r); break;
		case PN_LAYERNORM: dn_layernorm(r); break;
		case PN_SOFTMAX: dn_softmax(r); break;
		case PN_XENT: dn_xent(r); break;
		case PN_ELEMENTWISE: dn_elementwise(r); break;
		case PN_POSENC: dn_posenc(r); break;
		case PN_BATCHNORM: dn_batchnorm(r); break;
		case PN_POOL: dn_pool(r); break;
		default: dn_fail(r, PN_INVALID, "layer type not timed"); break;
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
		if (DN(dnnl_primitive_execute(o->prim, dn_strm, o->nargs, o->args),
		       "execute"))
			return -1;
	}
	return DN(dnnl_stream_wait(dn_strm), "stream");
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
		if (!p->master) {
			pn_opt_update(r->cfg.l.optimizer, (float)r->cfg.lr, r->t,
				      p->n, dn_ptr(p->w), dn_ptr(p->g), p->s1,
				      p->s2);
			continue;
		}
		/* mixed precision: widen the gradient, update the fp32
		 * master, narrow it into the weight the kernels read */
		const float *g = dn_ptr(p->g);
		if (dn_mdof(p->g)->data_type == dnnl_bf16) {
			const uint16_t *h = dn_ptr(p->g);
			for (size_t j = 0; j < p->n; j++)
				p->g32[j] = pn_bf16_f32(h[j]);
			g = p->g32;
		}
		pn_opt_update(r->cfg.l.optimizer, (float)r->cfg.lr, r->t, p->n,
			      p->master, g, p->s1, p->s2);
		narrow(dn_ptr(p->w), p->master, p->n);
	}
}

static int cpu_step(pn_run *r, pn_phases *t, char *msg, size_t n)
{
	dn_fill(r, r->fresh, -1, 1);
	r->draw++;
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
static int xfer(pn_run *r, dnnl_memory_t m, const dnnl_memory_desc_t *cmd0,
		float *a, int in)
{
	if (!m || !a)
		return 0;
	/* the canonical array holds floats whatever m holds: a reorder
	 * converts (a plain layout's strides count elements, not bytes) */
	dnnl_memory_desc_t f = *cmd0;
	f.data_type = dnnl_f32;
	const dnnl_memory_desc_t *cmd = &f;
	if (dnnl_memory_desc_equal(dn_mdof(m), cmd)) {
		size_t bytes = dnnl_memory_desc_get_size(cmd);
		if (in)
			memcpy(dn_ptr(m), a, bytes);
		else
			memcpy(a, dn_ptr(m), bytes);
		return 0;
	}
	dnnl_memory_t u;
	if (DN(dnnl_memory_create(&u, cmd, dn_eng, a), "memory"))
		return -1;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	int bad = DN(dnnl_reorder_primitive_desc_create(&pd, in ? cmd : dn_mdof(m),
		dn_eng, in ? dn_mdof(m) : cmd, dn_eng, NULL), "reorder");
	if (!bad) {
		bad = DN(dnnl_primitive_create(&p, pd), "reorder");
		if (!bad) {
			dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, in ? u : m},
						   {DNNL_ARG_TO, in ? m : u}};
			bad = DN(dnnl_primitive_execute(p, dn_strm, 2, args),
				 "reorder") || DN(dnnl_stream_wait(dn_strm), "stream");
			dnnl_primitive_destroy(p);
		}
		dnnl_primitive_desc_destroy(pd);
	}
	dnnl_memory_destroy(u);
	return bad ? -1 : 0;
}

static size_t canon_elems(const dnnl_memory_desc_t *md)
{
	return dnnl_memory_desc_get_size(md) / dn_esize(md->data_type);
}

static int cpu_compute(pn_run *r, pn_io *io, char *msg, size_t n)
{
	r->draw = 0;                      /* the masks every backend draws */
	if (xfer(r, r->canon[CX], &r->cmd[CX], io->x, 1) ||
	    xfer(r, r->canon[CX2], &r->cmd[CX2], io->x2, 1) ||
	    xfer(r, r->canon[CDY], &r->cmd[CDY], io->dy, 1))
		goto err;
	if (r->idx)
		memcpy(r->idx, io->idx, io->nidx * sizeof(int32_t));
	if (r->rnn) {
		dn_rnn_xfer(r, io->w, 1, 0);
	} else {
		float *w = io->w;
		for (int i = 0; i < r->npar; i++) {
			if (xfer(r, r->par[i].w, &r->par[i].canon, w, 1))
				goto err;
			w += canon_elems(&r->par[i].canon);
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
		dn_rnn_xfer(r, io->dw, 0, 1);
	} else {
		float *w = io->dw;
		for (int i = 0; i < r->npar; i++) {
			if (xfer(r, r->par[i].g, &r->par[i].gcanon, w, 0))
				goto err;
			w += canon_elems(&r->par[i].canon);
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
	dnnl_stream_destroy(dn_strm);
	dnnl_engine_destroy(dn_eng);
}

static const pn_backend cpu = {
	"cpu", cpu_open, cpu_prepare, cpu_step, cpu_flush, cpu_release,
	cpu_recover, cpu_compute, cpu_optimize, cpu_close,
};

const pn_backend *pn_cpu_backend(void)
{
	return &cpu;
}
