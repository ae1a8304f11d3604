/* vector.cu - the cuda backend's elementwise family: embedding,
 * layernorm, softmax, elementwise, posenc and the loss (xent). */
#include <cmath>
#include <cstring>

#include "cu.cuh"

namespace pncu {

/* n indices in [0, hi) drawn from the run's generator, on the device: the
 * row's r->idx (--check replaces them with its own) */
static int32_t *draw_idx(pn_run *r, size_t n, long long hi)
{
	int32_t *idx = (int32_t *)dalloc(r, n * sizeof(int32_t));
	std::vector<int32_t> h(n);
	for (size_t i = 0; i < n; i++)
		h[i] = (int32_t)pn_rng_int(&r->rng, 0, hi - 1);
	h2d(idx, h.data(), n * sizeof(int32_t));
	r->idx = idx;
	r->nidx = n;
	return idx;
}

void embedding(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t N = (size_t)(l->batch * l->seq_len), V = (size_t)l->vocab,
	       E = (size_t)l->embed_dim;
	void *t = tensor(r, V * E), *y = tensor(r, N * E, 0, 0);
	int32_t *idx = draw_idx(r, N, (long long)V);
	r->impl = "kernels";
	op(r, FWD, [=] {
		DISPATCH(r, (k_gather<T><<<grid(N * E), 256, 0, g.s>>>(N, E, idx,
			(const T *)t, (T *)y)));
	});
	r->y = {y, N * E};
	r->w = {t, V * E};
	if (!l->train) {
		add_param(r, t, nullptr, V * E);
		return;
	}
	void *dy = tensor(r, N * E), *dt = tensor(r, V * E, 0, 0);
	op(r, BWD, [=] {
		CU(cudaMemsetAsync(dt, 0, V * E * r->esz, g.s));
		DISPATCH(r, (k_scatter_add<T><<<grid(N * E), 256, 0, g.s>>>(N, E,
			idx, (const T *)dy, (T *)dt)));
	});
	add_param(r, t, dt, V * E);
	r->dy = {dy, N * E};
}

void layernorm(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t N = (size_t)(l->batch * l->seq_len);
	int D = (int)l->dim;
	void *x = tensor(r, N * D), *y = tensor(r, N * D, 0, 0);
	void *gam = tensor(r, (size_t)D, 0.5f, 1.5f), *bet = tensor(r, (size_t)D, -0.5f, 0.5f);
	float *mean = fzeros(r, N), *rstd = fzeros(r, N);
	int gr = (int)(N < 65535 ? N : 65535);
	op(r, FWD, [=] {
		DISPATCH(r, (k_ln_fwd<T><<<gr, 256, 0, g.s>>>(N, D, (const T *)x,
			(const T *)gam, (const T *)bet, (T *)y, mean, rstd,
			PN_LN_EPS)));
	});
	r->x = {x, N * D};
	r->y = {y, N * D};
	r->w = {gam, 2 * (size_t)D};
	r->impl = "kernels";
	if (!l->train) {
		add_param(r, gam, nullptr, (size_t)D);
		add_param(r, bet, nullptr, (size_t)D);
		return;
	}
	void *dy = tensor(r, N * D), *dx = tensor(r, N * D, 0, 0);
	void *dg = tensor(r, (size_t)D, 0, 0), *db = tensor(r, (size_t)D, 0, 0);
	op(r, BWD, [=] {
		DISPATCH(r, (k_ln_bwd<T><<<gr, 256, 0, g.s>>>(N, D, (const T *)x,
			(const T *)gam, (const T *)dy, mean, rstd, (T *)dx)));
	});
	colsum(r, BWD, N, (size_t)D, dy, dg, x, mean, rstd);
	colsum(r, BWD, N, (size_t)D, dy, db);
	add_param(r, gam, dg, (size_t)D);
	add_param(r, bet, db, (size_t)D);
	r->dy = {dy, N * D};
	r->dx = {dx, N * D};
}

void softmax(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t N = (size_t)(l->batch * l->seq_len);
	int D = (int)l->dim;
	void *x = tensor(r, N * D), *y = tensor(r, N * D, 0, 0);
	void *dy = l->train ? tensor(r, N * D) : nullptr;
	void *dx = l->train ? tensor(r, N * D, 0, 0) : nullptr;
	softmax_fwd(r, N, D, x, y);
	if (l->train)
		softmax_bwd(r, N, D, y, dy, dx);
	r->x = {x, N * D};
	r->y = {y, N * D};
	r->dy = {dy, dy ? N * D : 0};
	r->dx = {dx, dx ? N * D : 0};
	r->impl = "kernels";
}

static int elem_op(const char *name)
{
	const char *const *ops = pn_elem_ops();
	for (int i = 0; ops[i]; i++)
		if (strcmp(ops[i], name) == 0)
			return i;
	return -1;
}

void elementwise(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t n = (size_t)(l->batch * l->seq_len * l->dim);
	int e = elem_op(l->op), two = pn_elem_binary(l->op);
	float c = PN_ELEM_SCALAR, p = (float)r->cfg.l.dropout;
	if (e < 0 || e >= E_N)
		failf(PN_INVALID, "unknown elementwise op '%s'", l->op);
	void *x = e == E_POW ? tensor(r, n, 0.5f, 1.5f) : tensor(r, n);
	void *x2 = two ? tensor(r, n, 0.5f, 1.5f) : nullptr;
	void *y = tensor(r, n, 0, 0);
	if (e == E_COPY)
		op(r, FWD, [=] {
			CU(cudaMemcpyAsync(y, x, n * r->esz, cudaMemcpyDeviceToDevice,
					   g.s));
		});
	else
		op(r, FWD, [=] {
			DISPATCH(r, (k_elem_fwd<T><<<grid(n), 256, 0, g.s>>>(e, n,
				(const T *)x, (const T *)x2, (T *)y, c, p, 200)));
		});
	r->x = {x, n};
	r->x2 = {x2, two ? n : 0};
	r->y = {y, n};
	r->impl = e == E_COPY ? "cudaMemcpyAsync" : "kernels";
	if (!l->train)
		return;
	void *dy = tensor(r, n);
	r->dy = {dy, n};
	if (e == E_ADD || e == E_ADDU || e == E_SUBU || e == E_COPY) {
		r->dx = {dy, n};          /* the gradient passes */
		if (two)
			r->dx2 = {dy, n};
		return;
	}
	void *dx = e == E_SUB ? dy : tensor(r, n, 0, 0);
	void *dx2 = two ? tensor(r, n, 0, 0) : nullptr;
	op(r, BWD, [=] {
		DISPATCH(r, (k_elem_bwd<T><<<grid(n), 256, 0, g.s>>>(e, n,
			(const T *)x, (const T *)x2, (const T *)y, (const T *)dy,
			(T *)dx, (T *)dx2, c, p, 200)));
	});
	r->dx = {dx, n};
	r->dx2 = {dx2, two ? n : 0};
}

void posenc(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	long S = (long)l->seq_len, E = (long)l->embed_dim;
	size_t n = (size_t)(l->batch * S * E), se = (size_t)(S * E);
	void *x = tensor(r, n), *y = tensor(r, n, 0, 0);
	std::vector<float> h(se);
	pn_posenc_table(h.data(), S, E);
	float *pe = (float *)dalloc(r, se * sizeof(float));
	h2d(pe, h.data(), se * sizeof(float));
	op(r, FWD, [=] {
		DISPATCH(r, (k_posenc<T><<<grid(n), 256, 0, g.s>>>(n, se,
			(const T *)x, pe, (T *)y)));
	});
	r->x = {x, n};
	r->y = {y, n};
	r->impl = "kernels";
	if (l->train) {
		void *dy = tensor(r, n);
		r->dy = {dy, n};
		r->dx = {dy, n};          /* the table is no parameter */
	}
}

/* the loss, as PyTorch's unfused cross_entropy: log-softmax of the
 * logits into the log-probabilities, the negative log-likelihood's mean
 * (one block); train: its gradient written as nll_loss_backward writes it
 * (a zeroed tensor, -1/rows at each target) and the log-softmax's
 * backward; the targets drawn once, as embedding's indices */
void xent(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t rows = (size_t)(l->batch * l->seq_len);
	int D = (int)l->dim;
	size_t n = rows * (size_t)D;
	void *x = tensor(r, n), *lp = tensor(r, n, 0, 0);
	int32_t *tgt = draw_idx(r, rows, D);
	float *loss = fzeros(r, 1);
	softmax_fwd(r, rows, D, x, lp, 1);
	op(r, FWD, [=] {
		DISPATCH(r, (k_nll_fwd<T><<<1, 256, 0, g.s>>>(rows, D,
			(const T *)lp, tgt, loss)));
	});
	r->x = {x, n};
	r->y = {lp, n};
	r->impl = "kernels";
	if (!l->train)
		return;
	void *gl = tensor(r, n, 0, 0), *dx = tensor(r, n, 0, 0);
	op(r, BWD, [=] {
		CU(cudaMemsetAsync(gl, 0, n * r->esz, g.s));
		DISPATCH(r, (k_nll_bwd<T><<<grid(rows), 256, 0, g.s>>>(rows, D,
			tgt, (T *)gl)));
	});
	softmax_bwd(r, rows, D, lp, gl, dx, 1);
	r->dx = {dx, n};
}

}  // namespace pncu
