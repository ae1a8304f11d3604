/* gemm.c - the cpu backend's matrix products: dense, bmm and
 * attention (their products, softmax, reductions).
 *
 * fp32 products run as PyTorch 1.13 runs them on the CPU: addmm, mm and
 * bmm call the BLAS it links (OpenBLAS's sgemm on Debian), not oneDNN;
 * bmm one sgemm per matrix of the batch (a scalar loop below 400
 * multiply-adds a matrix), and a bias gradient is a loop of column sums.
 * OpenBLAS and oneDNN need not run alike: on an Intel Xeon that OpenBLAS
 * 0.3.21 does not know it takes its SSE3 kernels, at a fifth of oneDNN's
 * rate (pn-time --cpu-spec's blas_fp32_gflops against fp32_gflops), and
 * PyTorch's steps pay that.  bf16 products run on oneDNN's matmul (as
 * PyTorch's mkldnn matmul for bf16). */
#include <cblas.h>
#undef I                 /* complex.h's, through cblas.h: I names sizes here */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "dnn.h"
#include "err.h"

/* One operand of a product on BLAS: the matrix in the last two dims of
 * md, row-major (column stride 1, ld its row stride) or transposed (row
 * stride 1, ld its column stride), and the strides of the up to two batch
 * dims before it, outer s0 and inner s1 (0 where absent). */
typedef struct {
	long rows, cols, ld, s0, s1;
	int trans;
} operand;

static int as_operand(const dnnl_memory_desc_t *md, operand *o)
{
	int n = md->ndims;
	if (n < 2 || n > 4 || md->format_kind != dnnl_blocked)
		return 0;
	const dnnl_dim_t *st = md->format_desc.blocking.strides;
	long sr = st[n - 2], sc = st[n - 1];
	*o = (operand){md->dims[n - 2], md->dims[n - 1], sr, n > 2 ? st[0] : 0,
		       n > 3 ? st[1] : 0, 0};
	if (sc != 1 && o->cols != 1) {
		if (sr != 1 && o->rows != 1)
			return 0;
		o->trans = 1;
		o->ld = sc;
	}
	/* BLAS wants ld >= a stored row's length, even of one row */
	long need = o->trans ? o->rows : o->cols;
	if (o->ld < need)
		o->ld = need;
	return 1;
}

/* A batch of products c = alpha a b (+ bias, a row copied into every row
 * of c first, then beta 1, as addmm): nb0 x nb1 matrices; bmm when they
 * have batch dims (PyTorch's mm and addmm have no scalar loop). */
typedef struct {
	const float *a, *b, *bias;
	float *c;
	operand oa, ob, oc;
	long nb0, nb1;
	float alpha;
	int bmm;
} bgemm;

/* PyTorch's bmm below 400 multiply-adds a matrix: a scalar loop */
static void small_gemm(const bgemm *g, const float *a, const float *b,
		       float *c)
{
	long M = g->oa.rows, K = g->oa.cols, N = g->ob.cols;
	for (long i = 0; i < M; i++)
		for (long j = 0; j < N; j++) {
			float acc = 0;
			for (long k = 0; k < K; k++)
				acc += (g->oa.trans ? a[k * g->oa.ld + i] :
					a[i * g->oa.ld + k]) *
				       (g->ob.trans ? b[j * g->ob.ld + k] :
					b[k * g->ob.ld + j]);
			c[i * g->oc.ld + j] = g->alpha * acc;
		}
}

static void c_bgemm(const op *o)
{
	const bgemm *g = o->ctx;
	long M = g->oa.rows, K = g->oa.cols, N = g->ob.cols;
	for (long i = 0; i < g->nb0; i++)
		for (long j = 0; j < g->nb1; j++) {
			const float *a = g->a + i * g->oa.s0 + j * g->oa.s1,
				    *b = g->b + i * g->ob.s0 + j * g->ob.s1;
			float *c = g->c + i * g->oc.s0 + j * g->oc.s1;
			if (g->bmm && M * N * K < 400) {
				small_gemm(g, a, b, c);
				continue;
			}
			if (g->bias)
				for (long r = 0; r < M; r++)
					memcpy(c + r * g->oc.ld, g->bias,
					       (size_t)N * sizeof *c);
			cblas_sgemm(CblasRowMajor,
				    g->oa.trans ? CblasTrans : CblasNoTrans,
				    g->ob.trans ? CblasTrans : CblasNoTrans,
				    (int)M, (int)N, (int)K, g->alpha, a,
				    (int)g->oa.ld, b, (int)g->ob.ld,
				    g->bias ? 1 : 0, c, (int)g->oc.ld);
		}
}

/* "openblas:sgemm:CORE", CORE the kernels OpenBLAS chose for this CPU
 * (pn_cpu_blas_core; its SSE3 "Prescott" where it does not know the CPU:
 * a quarter of the rate, and pn-time --cpu-spec warns) */
static const char *blas_note(void)
{
	static char note[96];
	if (!note[0])
		snprintf(note, sizeof note, "openblas:sgemm:%s",
			 pn_cpu_blas_core());
	return note;
}

/* dst = scale src @ wei (+ bias) on plain memories (any strides; up to
 * two batch dims, the same in all three), added to phase ph: in fp32 on
 * BLAS, else oneDNN's matmul (act: its fused activation). */
static void matmul(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t wei,
		   dnnl_memory_t bias, dnnl_memory_t dst, int act, float scale)
{
	if (r->st)
		return;
	const dnnl_memory_desc_t *ms = dn_mdof(src), *mw = dn_mdof(wei),
				 *md = dn_mdof(dst);
	bgemm g = {0};
	if (dn_dt == dnnl_f32 && !act && ms->ndims == mw->ndims &&
	    ms->ndims == md->ndims && as_operand(ms, &g.oa) &&
	    as_operand(mw, &g.ob) && as_operand(md, &g.oc) && !g.oc.trans) {
		bgemm *p = dn_ctx(r, sizeof *p);
		op *o = dn_cop(r, ph, c_bgemm);
		if (!o || !p)
			return;
		int n = md->ndims;
		g.a = dn_ptr(src);
		g.b = dn_ptr(wei);
		g.c = dn_ptr(dst);
		g.bias = bias ? dn_ptr(bias) : NULL;
		g.nb0 = n > 2 ? md->dims[0] : 1;
		g.nb1 = n > 3 ? md->dims[1] : 1;
		g.alpha = scale;
		g.bmm = n > 2 && !bias;
		*p = g;
		o->ctx = p;
		dn_note(r, blas_note());
		return;
	}
	dnnl_matmul_desc_t d;
	DN(dnnl_matmul_desc_init(&d, ms, mw, bias ? dn_mdof(bias) : NULL, md),
	   "matmul");
	dnnl_primitive_desc_t pd = dn_pdesc(r, &d, act, scale, NULL, "matmul");
	dn_prim(r, ph, pd, DNNL_ARG_SRC, src, DNNL_ARG_WEIGHTS, wei,
	     DNNL_ARG_BIAS, bias, DNNL_ARG_DST, dst, -1);
}

/* b[m] = the column sums of a[n][m], as PyTorch sums a bias gradient
 * over its rows */
static void c_colsum(const op *o)
{
	memset(o->b, 0, o->m * sizeof *o->b);
	for (size_t i = 0; i < o->n; i++)
		for (size_t j = 0; j < o->m; j++)
			o->b[j] += o->a[i * o->m + j];
}

/* dst[1][n] = sum over rows of src[m][n]: in fp32 col_sums; in bf16 as
 * ones[1][m] @ src: oneDNN's reduction primitive has only its reference
 * kernel (ref:any) for this layout, twice as slow as a framework's
 * vectorized sum, while a matmul runs a jit kernel. */
static void colsum(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t dst)
{
	if (r->st)
		return;
	dnnl_dim_t m = dn_mdof(src)->dims[0];
	if (dn_dt == dnnl_f32) {
		op *o = dn_cop(r, ph, c_colsum);
		if (o)
			*o = (op){.fn = c_colsum, .a = dn_ptr(src), .b = dn_ptr(dst),
				  .n = (size_t)m, .m = (size_t)dn_mdof(src)->dims[1]};
		return;
	}
	if (m == 1) {                   /* one row: oneDNN wants a copy */
		dn_reorder(r, ph, src, dst);
		return;
	}
	dnnl_memory_desc_t mo = MD(2, 1, m);
	dnnl_memory_t ones = dn_tensor(r, &mo, NOFILL, 1);
	float *v = dn_fbuf(r, (size_t)m);
	if (r->st)
		return;
	for (dnnl_dim_t i = 0; i < m; i++)
		v[i] = 1;
	dn_set(ones, v, (size_t)m);
	matmul(r, ph, ones, src, NULL, dst, 0, 1);
}

void dn_dense(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, I = (dnnl_dim_t)l->in_features,
		   O = (dnnl_dim_t)l->out_features;
	int act = l->activation, train = l->train;
	/* W[O][I] row-major, described as pn_io's w[I][O] */
	dnnl_memory_desc_t mx = MD(2, B, I), my = MD(2, B, O),
		mw = MDS(2, DIMS(I, O), DIMS(1, I)), mb = MD(2, 1, O);
	dnnl_memory_t x = dn_tensor(r, &mx, RAND, 1);
	dnnl_memory_t w = dn_tensor(r, &mw, WEIGHT, (double)I);
	dnnl_memory_t b = l->bias ? dn_tensor(r, &mb, WEIGHT, (double)I) : NULL;
	dnnl_memory_t y = dn_tensor(r, &my, ZERO, 1);
	if (dn_dt == dnnl_f32) {  /* addmm on BLAS, then the activation's op */
		matmul(r, FWD, x, w, b, y, 0, 1);
		dn_act_fwd(r, act, y);
	} else {
		matmul(r, FWD, x, w, b, y, act, 1);
	}
	dn_canon(r, CX, x, NULL);
	dn_canon(r, CY, y, NULL);
	if (!train) {
		dn_addparam(r, w, NULL, NULL);
		dn_addparam(r, b, NULL, NULL);
		return;
	}
	dnnl_memory_t dy = dn_tensor(r, &my, RAND, 1);
	dnnl_memory_t dz = dn_act_bwd(r, act, y, dy);
	dnnl_memory_desc_t mwt = MD(2, O, I), mdzt = MDS(2, DIMS(O, B),
							DIMS(1, O));
	/* input_grad 0: the input needs no gradient, no dx product */
	dnnl_memory_t dx = l->no_input_grad ? NULL : dn_tensor(r, &mx, ZERO, 1);
	dnnl_memory_t dw = dn_tensor(r, &mwt, ZERO, 1);
	dnnl_memory_t db = b ? dn_tensor(r, &mb, ZERO, 1) : NULL;
	if (!r->st) {
		if (dx)
			matmul(r, BWD, dz, dn_view(r, &mwt, dn_ptr(w)), NULL,
			       dx, 0, 1);
		matmul(r, BWD, dn_view(r, &mdzt, dn_ptr(dz)), x, NULL, dw, 0, 1);
		if (b)
			colsum(r, BWD, dz, db);
	}
	dn_addparam(r, w, dw, NULL);
	dn_addparam(r, b, db, NULL);
	dn_canon(r, CDY, dy, NULL);
	dn_canon(r, CDX, dx, NULL);
}

void dn_bmm(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, M = (dnnl_dim_t)l->m,
		   N = (dnnl_dim_t)l->n, K = (dnnl_dim_t)l->k;
	dnnl_memory_desc_t ma = MD(3, B, M, N), mb = MD(3, B, N, K),
			   mc = MD(3, B, M, K);
	dnnl_memory_t a = dn_tensor(r, &ma, RAND, 1), b = dn_tensor(r, &mb, RAND, 1);
	dnnl_memory_t c = dn_tensor(r, &mc, ZERO, 1);
	matmul(r, FWD, a, b, NULL, c, 0, 1);
	dn_canon(r, CX, a, NULL);
	dn_canon(r, CX2, b, NULL);
	dn_canon(r, CY, c, NULL);
	if (!l->train)
		return;
	dnnl_memory_t dc = dn_tensor(r, &mc, RAND, 1);
	dnnl_memory_t da = dn_tensor(r, &ma, ZERO, 1), db = dn_tensor(r, &mb, ZERO, 1);
	dnnl_memory_desc_t bt = MDS(3, DIMS(B, K, N), DIMS(N * K, 1, K)),
			   at = MDS(3, DIMS(B, N, M), DIMS(M * N, 1, N));
	matmul(r, BWD, dc, dn_view(r, &bt, dn_ptr(b)), NULL, da, 0, 1);
	matmul(r, BWD, dn_view(r, &at, dn_ptr(a)), dc, NULL, db, 0, 1);
	dn_canon(r, CDY, dc, NULL);
	dn_canon(r, CDX, da, NULL);
	dn_canon(r, CDX2, db, NULL);
}

void dn_attention(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, S = (dnnl_dim_t)l->seq_len,
		   E = (dnnl_dim_t)l->embed_dim, h = (dnnl_dim_t)l->heads;
	dnnl_dim_t d = E / h, N = B * S, E3 = 3 * E;
	float scale = (float)(1 / sqrt((double)d)), p = (float)r->cfg.l.dropout;
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
	dnnl_memory_t x = dn_tensor(r, &mx, RAND, 1);
	dnnl_memory_t win = dn_tensor(r, &mwin, WEIGHT, (double)E);
	dnnl_memory_t bin = dn_tensor(r, &mbin, WEIGHT, (double)E);
	dnnl_memory_t qkv = dn_tensor(r, &mqkv, ZERO, 1);
	dnnl_memory_t sc = dn_tensor(r, &msc, ZERO, 1), pr = dn_tensor(r, &msc, ZERO, 1);
	dnnl_memory_t ctx = dn_tensor(r, &mx, ZERO, 1);
	dnnl_memory_t wout = dn_tensor(r, &mwout, WEIGHT, (double)E);
	dnnl_memory_t bout = dn_tensor(r, &mbout, WEIGHT, (double)E);
	dnnl_memory_t y = dn_tensor(r, &mx, ZERO, 1);
	if (r->st)
		return;
	size_t es = dn_esize(dn_dt);      /* q, k and v inside qkv's rows */
	char *Q = dn_ptr(qkv), *K = Q + E * es, *V = Q + 2 * E * es;
	matmul(r, FWD, x, win, bin, qkv, 0, 1);
	matmul(r, FWD, dn_view(r, &mh3, Q), dn_view(r, &mh3t, K), NULL, sc, 0, scale);
	dnnl_softmax_v2_desc_t smd;
	DN(dnnl_softmax_v2_forward_desc_init(&smd, train ? dnnl_forward_training
		: dnnl_forward_inference, dnnl_softmax_accurate, &msc, &msc, 3),
	   "softmax");
	dnnl_primitive_desc_t spd = dn_pdesc(r, &smd, 0, 1, NULL, "softmax");
	dn_softmax_fwd(r, FWD, spd, 0, sc, pr, dn_nelems(sc) / (size_t)S,
		       (size_t)S);
	dnnl_memory_t pd = pr;
	const void *mask = NULL;          /* the probabilities' dropout noise */
	if (p > 0) {
		pd = dn_tensor(r, &msc, ZERO, 1);
		if (!r->st)
			mask = dn_dropout_fwd(r, FWD, dn_ptr(pr), dn_ptr(pd),
					      dn_nelems(pr), p, 100, train);
	}
	matmul(r, FWD, pd, dn_view(r, &mh3, V), NULL, dn_view(r, &mh1, dn_ptr(ctx)), 0, 1);
	matmul(r, FWD, ctx, wout, bout, y, 0, 1);
	dn_canon(r, CX, x, NULL);
	dn_canon(r, CY, y, NULL);
	if (!train) {
		dn_addparam(r, win, NULL, NULL);
		dn_addparam(r, bin, NULL, NULL);
		dn_addparam(r, wout, NULL, NULL);
		dn_addparam(r, bout, NULL, NULL);
		return;
	}
	dnnl_memory_desc_t mxt = MDS(2, DIMS(E, N), DIMS(1, E)),
			   mqkvt = MDS(2, DIMS(E3, N), DIMS(1, E3)),
			   mwoutp = MD(2, E, E), mwinp = MD(2, E3, E);
	dnnl_memory_t dy = dn_tensor(r, &mx, RAND, 1);
	dnnl_memory_t dctx = dn_tensor(r, &mx, ZERO, 1);
	dnnl_memory_t dwout = dn_tensor(r, &mwoutp, ZERO, 1);
	dnnl_memory_t dbout = dn_tensor(r, &mbout, ZERO, 1);
	dnnl_memory_t dpd = dn_tensor(r, &msc, ZERO, 1);
	dnnl_memory_t dqkv = dn_tensor(r, &mqkv, ZERO, 1);
	dnnl_memory_t dsc = dn_tensor(r, &msc, ZERO, 1);
	dnnl_memory_t dx = dn_tensor(r, &mx, ZERO, 1);
	dnnl_memory_t dwin = dn_tensor(r, &mwinp, ZERO, 1);
	dnnl_memory_t dbin = dn_tensor(r, &mbin, ZERO, 1);
	if (r->st)
		return;
	char *dQ = dn_ptr(dqkv), *dK = dQ + E * es, *dV = dQ + 2 * E * es;
	matmul(r, BWD, dy, dn_view(r, &mwoutp, dn_ptr(wout)), NULL, dctx, 0, 1);
	matmul(r, BWD, dn_view(r, &mxt, dn_ptr(dy)), ctx, NULL, dwout, 0, 1);
	colsum(r, BWD, dy, dbout);
	dnnl_memory_t dctxh = dn_view(r, &mh1, dn_ptr(dctx));
	matmul(r, BWD, dctxh, dn_view(r, &mh3t, V), NULL, dpd, 0, 1);
	matmul(r, BWD, dn_view(r, &msct, dn_ptr(pd)), dctxh, NULL, dn_view(r, &mh3, dV),
	       0, 1);
	dnnl_memory_t dp = dpd;
	if (p > 0) {
		dp = dn_tensor(r, &msc, ZERO, 1);
		if (!r->st)
			dn_dropout_bwd(r, BWD, dn_ptr(dpd), dn_ptr(dp),
				       dn_nelems(dpd), mask);
	}
	dnnl_softmax_v2_desc_t sbd;
	DN(dnnl_softmax_v2_backward_desc_init(&sbd, dnnl_softmax_accurate, &msc,
					      &msc, &msc, 3), "softmax backward");
	dnnl_primitive_desc_t sbpd = dn_pdesc(r, &sbd, 0, 1, spd, "softmax backward");
	dn_softmax_bwd(r, BWD, sbpd, 0, pr, dp, dsc, dn_nelems(dsc) / (size_t)S,
		       (size_t)S);
	matmul(r, BWD, dsc, dn_view(r, &mh3, K), NULL, dn_view(r, &mh3, dQ), 0, scale);
	matmul(r, BWD, dn_view(r, &msct, dn_ptr(dsc)), dn_view(r, &mh3, Q), NULL,
	       dn_view(r, &mh3, dK), 0, scale);
	matmul(r, BWD, dqkv, dn_view(r, &mwinp, dn_ptr(win)), NULL, dx, 0, 1);
	matmul(r, BWD, dn_view(r, &mqkvt, dn_ptr(dqkv)), x, NULL, dwin, 0, 1);
	colsum(r, BWD, dqkv, dbin);
	dn_addparam(r, win, dwin, NULL);
	dn_addparam(r, bin, dbin, NULL);
	dn_addparam(r, wout, dwout, NULL);
	dn_addparam(r, bout, dbout, NULL);
	dn_canon(r, CDY, dy, NULL);
	dn_canon(r, CDX, dx, NULL);
}

