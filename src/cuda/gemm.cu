/* gemm.cu - the cuda backend's matrix products: dense, bmm and attention
 * (cuBLAS and the kernels of kernels.cuh, softmax included). */
#include <cmath>
#include <cstring>

#include "cu.cuh"

namespace pncu {

void dense(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	int B = (int)l->batch, I = (int)l->in_features, O = (int)l->out_features;
	int act = l->activation;
	float a = 1 / sqrtf((float)I);
	void *x = tensor(r, (size_t)B * I);
	void *w = tensor(r, (size_t)O * I, -a, a);
	void *b = l->bias ? tensor(r, (size_t)O, -a, a) : nullptr;
	void *y = tensor(r, (size_t)B * O, 0, 0);
	gemm_args f;
	f.tb = true;
	f.M = B; f.N = O; f.K = I;
	f.A = x; f.lda = I; f.B = w; f.ldb = I; f.C = y; f.ldc = O;
	op(r, FWD, [=] { gemm(r, f); });
	if (b || act) {
		size_t n = (size_t)B * O;
		op(r, FWD, [=] {
			DISPATCH(r, (k_bias_act<T><<<grid(n), 256, 0, g.s>>>(n,
				(size_t)O, (T *)y, (const T *)b, act)));
		});
	}
	r->x = {x, (size_t)B * I};
	r->y = {y, (size_t)B * O};
	r->w = {w, (size_t)O * I + (b ? O : 0)};
	if (!l->train) {
		add_param(r, w, nullptr, (size_t)O * I);
		if (b)
			add_param(r, b, nullptr, (size_t)O);
		return;
	}
	void *dy = tensor(r, (size_t)B * O), *dz = dy;
	if (act) {
		dz = tensor(r, (size_t)B * O, 0, 0);
		act_bwd(r, (size_t)B * O, y, dy, dz, act);
	}
	void *dx = tensor(r, (size_t)B * I, 0, 0);
	void *dw = tensor(r, (size_t)O * I, 0, 0);
	void *db = b ? tensor(r, (size_t)O, 0, 0) : nullptr;
	gemm_args d;                       /* dx[B][I] = dz[B][O] W[O][I] */
	d.M = B; d.N = I; d.K = O;
	d.A = dz; d.lda = O; d.B = w; d.ldb = I; d.C = dx; d.ldc = I;
	op(r, BWD, [=] { gemm(r, d); });
	gemm_args e;                       /* dW[O][I] = dz^T x */
	e.ta = true;
	e.M = O; e.N = I; e.K = B;
	e.A = dz; e.lda = O; e.B = x; e.ldb = I; e.C = dw; e.ldc = I;
	op(r, BWD, [=] { gemm(r, e); });
	if (b)
		colsum(r, BWD, (size_t)B, (size_t)O, dz, db);
	add_param(r, w, dw, (size_t)O * I);
	if (b)
		add_param(r, b, db, (size_t)O);
	r->dy = {dy, (size_t)B * O};
	r->dx = {dx, (size_t)B * I};
}

void bmm(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	int B = (int)l->batch, M = (int)l->m, N = (int)l->n, K = (int)l->k;
	size_t na = (size_t)B * M * N, nb = (size_t)B * N * K, nc = (size_t)B * M * K;
	void *a = tensor(r, na), *b = tensor(r, nb), *c = tensor(r, nc, 0, 0);
	gemm_args f;
	f.M = M; f.N = K; f.K = N;
	f.A = a; f.lda = N; f.sa = (long long)M * N;
	f.B = b; f.ldb = K; f.sb = (long long)N * K;
	f.C = c; f.ldc = K; f.sc = (long long)M * K;
	f.batch = B;
	op(r, FWD, [=] { gemm(r, f); });
	r->x = {a, na};
	r->x2 = {b, nb};
	r->y = {c, nc};
	if (!l->train)
		return;
	void *dc = tensor(r, nc), *da = tensor(r, na, 0, 0), *db = tensor(r, nb, 0, 0);
	gemm_args d = f;                   /* dA[M][N] = dC[M][K] B^T */
	d.tb = true;
	d.M = M; d.N = N; d.K = K;
	d.A = dc; d.lda = K; d.sa = (long long)M * K;
	d.B = b; d.ldb = K; d.sb = (long long)N * K;
	d.C = da; d.ldc = N; d.sc = (long long)M * N;
	op(r, BWD, [=] { gemm(r, d); });
	gemm_args e = f;                   /* dB[N][K] = A^T dC */
	e.ta = true;
	e.M = N; e.N = K; e.K = M;
	e.A = a; e.lda = N; e.sa = (long long)M * N;
	e.B = dc; e.ldb = K; e.sb = (long long)M * K;
	e.C = db; e.ldc = K; e.sc = (long long)N * K;
	op(r, BWD, [=] { gemm(r, e); });
	r->dy = {dc, nc};
	r->dx = {da, na};
	r->dx2 = {db, nb};
}

/* device array of batch pointers base + (b*h_n + h) offsets */
static void **ptrs(pn_run *r, void *base, int B, int H, long long sb,
		   long long sh)
{
	std::vector<void *> h((size_t)B * H);
	for (int b = 0; b < B; b++)
		for (int k = 0; k < H; k++)
			h[(size_t)b * H + k] = (char *)base +
				(size_t)(b * sb + k * sh) * r->esz;
	void **d = (void **)dalloc(r, h.size() * sizeof(void *));
	h2d(d, h.data(), h.size() * sizeof(void *));
	return d;
}

/* y[n / cols][cols] += b, forward */
static void add_bias(pn_run *r, void *y, const void *b, size_t n, size_t cols)
{
	op(r, FWD, [=] {
		DISPATCH(r, (k_bias_act<T><<<grid(n), 256, 0, g.s>>>(n, cols,
			(T *)y, (const T *)b, 0)));
	});
}

void attention(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	int B = (int)l->batch, S = (int)l->seq_len, E = (int)l->embed_dim,
	    h = (int)l->heads, d = E / h, N = B * S, E3 = 3 * E;
	float scale = 1 / sqrtf((float)d), p = (float)r->cfg.l.dropout;
	float a = 1 / sqrtf((float)E);
	size_t nsc = (size_t)B * h * S * S;
	void *x = tensor(r, (size_t)N * E);
	void *win = tensor(r, (size_t)E3 * E, -a, a), *bin = tensor(r, (size_t)E3, -a, a);
	void *wout = tensor(r, (size_t)E * E, -a, a), *bout = tensor(r, (size_t)E, -a, a);
	void *qkv = tensor(r, (size_t)N * E3, 0, 0);
	void *sc = tensor(r, nsc, 0, 0), *pr = tensor(r, nsc, 0, 0);
	void *pd = p > 0 ? tensor(r, nsc, 0, 0) : pr;
	void *ctx = tensor(r, (size_t)N * E, 0, 0), *y = tensor(r, (size_t)N * E, 0, 0);
	long long s3 = (long long)S * E3, s1 = (long long)S * E, ss = (long long)S * S;
	void **Q = ptrs(r, qkv, B, h, s3, d), **K = ptrs(r, AT(qkv, E), B, h, s3, d);
	void **V = ptrs(r, AT(qkv, 2 * E), B, h, s3, d);
	void **SC = ptrs(r, sc, B, h, (long long)h * ss, ss);
	void **PD = ptrs(r, pd, B, h, (long long)h * ss, ss);
	void **CTX = ptrs(r, ctx, B, h, s1, d);
	gemm_args in;                      /* qkv = x Win^T */
	in.tb = true;
	in.M = N; in.N = E3; in.K = E;
	in.A = x; in.lda = E; in.B = win; in.ldb = E; in.C = qkv; in.ldc = E3;
	op(r, FWD, [=] { gemm(r, in); });
	add_bias(r, qkv, bin, (size_t)N * E3, (size_t)E3);
	gemm_args qk;                      /* scores = Q K^T / sqrt(d) */
	qk.tb = true;
	qk.M = S; qk.N = S; qk.K = d;
	qk.Ap = (const void *const *)Q; qk.lda = E3;
	qk.Bp = (const void *const *)K; qk.ldb = E3;
	qk.Cp = SC; qk.ldc = S;
	qk.alpha = scale;
	qk.batch = B * h;
	op(r, FWD, [=] { gemm(r, qk); });
	void *dprob = l->train ? tensor(r, nsc, 0, 0) : nullptr;
	void *dp = l->train ? (p > 0 ? tensor(r, nsc, 0, 0) : dprob) : nullptr;
	void *dsc = l->train ? tensor(r, nsc, 0, 0) : nullptr;
	/* softmax forward now; its backward is added further down, in order */
	softmax_fwd(r, (size_t)B * h * S, S, sc, pr);
	if (p > 0)
		dropout(r, FWD, nsc, pr, pd, p, 100);
	gemm_args pv;                      /* ctx = P V */
	pv.M = S; pv.N = d; pv.K = S;
	pv.Ap = (const void *const *)PD; pv.lda = S;
	pv.Bp = (const void *const *)V; pv.ldb = E3;
	pv.Cp = CTX; pv.ldc = E;
	pv.batch = B * h;
	op(r, FWD, [=] { gemm(r, pv); });
	gemm_args out;                     /* y = ctx Wout^T + bout */
	out.tb = true;
	out.M = N; out.N = E; out.K = E;
	out.A = ctx; out.lda = E; out.B = wout; out.ldb = E; out.C = y; out.ldc = E;
	op(r, FWD, [=] { gemm(r, out); });
	add_bias(r, y, bout, (size_t)N * E, (size_t)E);
	r->x = {x, (size_t)N * E};
	r->y = {y, (size_t)N * E};
	r->w = {win, (size_t)4 * E * E + 4 * E};
	if (!l->train) {
		add_param(r, win, nullptr, (size_t)E3 * E);
		add_param(r, bin, nullptr, (size_t)E3);
		add_param(r, wout, nullptr, (size_t)E * E);
		add_param(r, bout, nullptr, (size_t)E);
		return;
	}
	void *dy = tensor(r, (size_t)N * E), *dctx = tensor(r, (size_t)N * E, 0, 0);
	void *dwout = tensor(r, (size_t)E * E, 0, 0), *dbout = tensor(r, (size_t)E, 0, 0);
	void *dqkv = tensor(r, (size_t)N * E3, 0, 0), *dx = tensor(r, (size_t)N * E, 0, 0);
	void *dwin = tensor(r, (size_t)E3 * E, 0, 0), *dbin = tensor(r, (size_t)E3, 0, 0);
	void **DQ = ptrs(r, dqkv, B, h, s3, d), **DK = ptrs(r, AT(dqkv, E), B, h, s3, d);
	void **DV = ptrs(r, AT(dqkv, 2 * E), B, h, s3, d);
	void **DCTX = ptrs(r, dctx, B, h, s1, d);
	void **DPROB = ptrs(r, dprob, B, h, (long long)h * ss, ss);
	void **DSC = ptrs(r, dsc, B, h, (long long)h * ss, ss);
	gemm_args g1;                      /* dctx = dy Wout */
	g1.M = N; g1.N = E; g1.K = E;
	g1.A = dy; g1.lda = E; g1.B = wout; g1.ldb = E; g1.C = dctx; g1.ldc = E;
	op(r, BWD, [=] { gemm(r, g1); });
	gemm_args g2;                      /* dWout = dy^T ctx */
	g2.ta = true;
	g2.M = E; g2.N = E; g2.K = N;
	g2.A = dy; g2.lda = E; g2.B = ctx; g2.ldb = E; g2.C = dwout; g2.ldc = E;
	op(r, BWD, [=] { gemm(r, g2); });
	colsum(r, BWD, (size_t)N, (size_t)E, dy, dbout);
	gemm_args g3;                      /* dP = dctx V^T */
	g3.tb = true;
	g3.M = S; g3.N = S; g3.K = d;
	g3.Ap = (const void *const *)DCTX; g3.lda = E;
	g3.Bp = (const void *const *)V; g3.ldb = E3;
	g3.Cp = DPROB; g3.ldc = S;
	g3.batch = B * h;
	op(r, BWD, [=] { gemm(r, g3); });
	gemm_args g4;                      /* dV = P^T dctx */
	g4.ta = true;
	g4.M = S; g4.N = d; g4.K = S;
	g4.Ap = (const void *const *)PD; g4.lda = S;
	g4.Bp = (const void *const *)DCTX; g4.ldb = E;
	g4.Cp = DV; g4.ldc = E3;
	g4.batch = B * h;
	op(r, BWD, [=] { gemm(r, g4); });
	if (p > 0)
		dropout(r, BWD, nsc, dprob, dp, p, 100);
	softmax_bwd(r, (size_t)B * h * S, S, pr, dp, dsc);
	gemm_args g5;                      /* dQ = dS K / sqrt(d) */
	g5.M = S; g5.N = d; g5.K = S;
	g5.Ap = (const void *const *)DSC; g5.lda = S;
	g5.Bp = (const void *const *)K; g5.ldb = E3;
	g5.Cp = DQ; g5.ldc = E3;
	g5.alpha = scale;
	g5.batch = B * h;
	op(r, BWD, [=] { gemm(r, g5); });
	gemm_args g6 = g5;                 /* dK = dS^T Q / sqrt(d) */
	g6.ta = true;
	g6.Bp = (const void *const *)Q;
	g6.Cp = DK;
	op(r, BWD, [=] { gemm(r, g6); });
	gemm_args g7;                      /* dx = dqkv Win */
	g7.M = N; g7.N = E; g7.K = E3;
	g7.A = dqkv; g7.lda = E3; g7.B = win; g7.ldb = E; g7.C = dx; g7.ldc = E;
	op(r, BWD, [=] { gemm(r, g7); });
	gemm_args g8;                      /* dWin = dqkv^T x */
	g8.ta = true;
	g8.M = E3; g8.N = E; g8.K = N;
	g8.A = dqkv; g8.lda = E3; g8.B = x; g8.ldb = E; g8.C = dwin; g8.ldc = E;
	op(r, BWD, [=] { gemm(r, g8); });
	colsum(r, BWD, (size_t)N, (size_t)E3, dqkv, dbin);
	add_param(r, win, dwin, (size_t)E3 * E);
	add_param(r, bin, dbin, (size_t)E3);
	add_param(r, wout, dwout, (size_t)E * E);
	add_param(r, bout, dbout, (size_t)E);
	r->dy = {dy, (size_t)N * E};
	r->dx = {dx, (size_t)N * E};
	r->impl = "cublas, kernels";
}

}  // namespace pncu
