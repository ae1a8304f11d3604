/* gemm.c - the cpu backend's matrix products: dense, bmm and
 * attention (oneDNN matmul, softmax, reductions).
 *
 * An fp32 dense layer runs as a framework's Linear does on the CPU:
 * PyTorch's addmm and mm call the BLAS it links (OpenBLAS's sgemm on
 * Debian), not oneDNN, and sum the bias gradient in a loop of their own,
 * so those are what pn-time times (pn-time --cpu-spec measures OpenBLAS
 * at about half of oneDNN's sgemm rate on one core). */
#include <cblas.h>
#undef I                 /* complex.h's, through cblas.h: I names sizes here */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "dnn.h"
#include "err.h"

/* dst = src @ wei (+ bias) on plain memories (any strides). */
static void matmul(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t wei,
		   dnnl_memory_t bias, dnnl_memory_t dst, int act, float scale)
{
	if (r->st)
		return;
	dnnl_matmul_desc_t d;
	DN(dnnl_matmul_desc_init(&d, dn_mdof(src), dn_mdof(wei),
				 bias ? dn_mdof(bias) : NULL, dn_mdof(dst)), "matmul");
	dnnl_primitive_desc_t pd = dn_pdesc(r, &d, act, scale, NULL, "matmul");
	dn_prim(r, ph, pd, DNNL_ARG_SRC, src, DNNL_ARG_WEIGHTS, wei,
	     DNNL_ARG_BIAS, bias, DNNL_ARG_DST, dst, -1);
}

/* dst[1][n] = sum over rows of src[m][n], as ones[1][m] @ src: oneDNN's
 * reduction primitive has only its reference kernel (ref:any) for this
 * layout, twice as slow as a framework's vectorized sum (PyTorch's bias
 * gradient), while a matmul runs a jit kernel. */
static void colsum(pn_run *r, int ph, dnnl_memory_t src, dnnl_memory_t dst)
{
	if (r->st)
		return;
	dnnl_dim_t m = dn_mdof(src)->dims[0];
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

/* y[B][O] = x[B][I] W[O][I]^T + b: PyTorch's addmm (the bias copied into
 * every row, then sgemm with beta 1) */
static void c_linear(const op *o)
{
	size_t B = o->n, O = o->m, I = (size_t)o->k;
	if (o->c)
		for (size_t i = 0; i < B; i++)
			memcpy(o->b + i * O, o->c, O * sizeof(float));
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)B, (int)O,
		    (int)I, 1, o->a, (int)I, o->d, (int)I, o->c ? 1 : 0, o->b,
		    (int)O);
}

/* dx[B][I] = dz[B][O] W[O][I] (a, unless the input needs no gradient:
 * dx NULL); dW[O][I] = dz^T x (b); db[O] = the column sums of dz (c, when
 * there is a bias) */
typedef struct {
	const float *dz, *w, *x;
	float *dx, *dw, *db;
} linbwd;

static void c_linear_bwd(const op *o)
{
	const linbwd *p = o->ctx;
	size_t B = o->n, O = o->m, I = (size_t)o->k;
	if (p->dx)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)B,
			    (int)I, (int)O, 1, p->dz, (int)O, p->w, (int)I, 0,
			    p->dx, (int)I);
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)O, (int)I,
		    (int)B, 1, p->dz, (int)O, p->x, (int)I, 0, p->dw, (int)I);
	if (!p->db)
		return;
	memset(p->db, 0, O * sizeof(float));
	for (size_t i = 0; i < B; i++)
		for (size_t j = 0; j < O; j++)
			p->db[j] += p->dz[i * O + j];
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

/* The products of an fp32 dense layer on OpenBLAS (see the top of the
 * file): y = x W^T + b into FWD, or dx, dW, db from dz into BWD. */
static void blas_fwd(pn_run *r, dnnl_memory_t x, dnnl_memory_t w,
		     dnnl_memory_t b, dnnl_memory_t y, size_t B, size_t O,
		     size_t I)
{
	op *o = dn_cop(r, FWD, c_linear);
	if (!o)
		return;
	dn_note(r, blas_note());
	*o = (op){.fn = c_linear, .a = dn_ptr(x), .b = dn_ptr(y),
		  .c = b ? dn_ptr(b) : NULL, .d = dn_ptr(w), .n = B, .m = O,
		  .k = (int)I};
}

static void blas_bwd(pn_run *r, dnnl_memory_t dz, dnnl_memory_t w,
		     dnnl_memory_t x, dnnl_memory_t dx, dnnl_memory_t dw,
		     dnnl_memory_t db, size_t B, size_t O, size_t I)
{
	linbwd *p = dn_balloc(r, sizeof *p);
	op *o = dn_cop(r, BWD, c_linear_bwd);
	if (!o || !p)
		return;
	*p = (linbwd){dn_ptr(dz), dn_ptr(w), dn_ptr(x), dx ? dn_ptr(dx) : NULL,
		      dn_ptr(dw), db ? dn_ptr(db) : NULL};
	*o = (op){.fn = c_linear_bwd, .ctx = p, .n = B, .m = O, .k = (int)I};
}

void dn_dense(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, I = (dnnl_dim_t)l->in_features,
		   O = (dnnl_dim_t)l->out_features;
	int act = l->activation, train = l->train, blas = dn_dt == dnnl_f32;
	/* W[O][I] row-major, described as pn_io's w[I][O] */
	dnnl_memory_desc_t mx = MD(2, B, I), my = MD(2, B, O),
		mw = MDS(2, DIMS(I, O), DIMS(1, I)), mb = MD(2, 1, O);
	dnnl_memory_t x = dn_tensor(r, &mx, RAND, 1);
	dnnl_memory_t w = dn_tensor(r, &mw, WEIGHT, (double)I);
	dnnl_memory_t b = l->bias ? dn_tensor(r, &mb, WEIGHT, (double)I) : NULL;
	dnnl_memory_t y = dn_tensor(r, &my, ZERO, 1);
	if (blas) {
		blas_fwd(r, x, w, b, y, (size_t)B, (size_t)O, (size_t)I);
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
	if (blas) {
		blas_bwd(r, dz, w, x, dx, dw, db, (size_t)B, (size_t)O, (size_t)I);
	} else if (!r->st) {
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

