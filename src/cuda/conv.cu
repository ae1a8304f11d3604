/* conv.cu - the cuda backend's image layers: conv2d (cuDNN, algorithms
 * chosen by cudnnFind*AlgorithmEx), batchnorm and pool (kernels of pn's
 * own, kernels.cuh). */
#include <climits>
#include <cmath>
#include <cstring>

#include "cu.cuh"

namespace pncu {

/* the workspace for cuDNN's algorithm search: as much as it may want, up to
 * a quarter of the free memory */
static size_t search_ws(void)
{
	size_t fr = 0, tot = 0;
	cudaMemGetInfo(&fr, &tot);
	size_t cap = fr / 4;
	return cap < ((size_t)1 << 30) ? cap : (size_t)1 << 30;
}

static const char *fwd_algo_name(int a)
{
	static const char *const n[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM",
		"GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD",
		"WINOGRAD_NONFUSED"};
	return a >= 0 && a < 8 ? n[a] : "?";
}

static const char *bwd_algo_name(int a)
{
	static const char *const n[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING",
		"WINOGRAD", "WINOGRAD_NONFUSED", "ALGO_3"};
	return a >= 0 && a < 7 ? n[a] : "?";
}

void conv2d(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	int B = (int)l->batch, C = (int)l->in_channels, O = (int)l->out_channels;
	int X = (int)l->image, k = (int)l->kernel, s = (int)l->stride,
	    p = (int)l->padding, act = l->activation;
	int Y = (X + 2 * p - k) / s + 1;
	size_t nx = (size_t)B * C * X * X, nw = (size_t)O * C * k * k,
	       ny = (size_t)B * O * Y * Y;
	float a = 1 / sqrtf((float)C * k * k);
	cudnnTensorDescriptor_t xd = tdesc(r, B, C, X, X), yd = tdesc(r, B, O, Y, Y),
		bd = tdesc(r, 1, O, 1, 1);
	cudnnFilterDescriptor_t wd;
	CD(cudnnCreateFilterDescriptor(&wd));
	r->cleanup.push_back([wd] { cudnnDestroyFilterDescriptor(wd); });
	CD(cudnnSetFilter4dDescriptor(wd, r->ddt, CUDNN_TENSOR_NCHW, O, C, k, k));
	/* the search's descriptor, then one a direction with the math type of
	 * the algorithm the search chose (as PyTorch sets it) */
	auto conv_desc = [&](cudnnMathType_t mt) {
		cudnnConvolutionDescriptor_t d;
		CD(cudnnCreateConvolutionDescriptor(&d));
		r->cleanup.push_back([d] { cudnnDestroyConvolutionDescriptor(d); });
		CD(cudnnSetConvolution2dDescriptor(d, p, p, s, s, 1, 1,
			CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
		CD(cudnnSetConvolutionMathType(d, mt));
		return d;
	};
	cudnnConvolutionDescriptor_t cd = conv_desc(math(r));
	void *x = tensor(r, nx), *w = tensor(r, nw, -a, a);
	void *b = l->bias ? tensor(r, (size_t)O, -a, a) : nullptr;
	void *y = tensor(r, ny, 0, 0);
	void *dy = l->train ? tensor(r, ny) : nullptr;
	void *dx = l->train ? tensor(r, nx, 0, 0) : nullptr;
	void *dw = l->train ? tensor(r, nw, 0, 0) : nullptr;
	void *db = l->train && b ? tensor(r, (size_t)O, 0, 0) : nullptr;

	/* benchmark mode, as frameworks do: time every algorithm, keep the
	 * fastest; the search workspace is freed after */
	size_t wsz = search_ws();
	void *ws = nullptr;
	while (wsz > 0 && cudaMalloc(&ws, wsz) != cudaSuccess) {
		cudaGetLastError();
		wsz /= 2;
	}
	cudnnConvolutionFwdAlgoPerf_t fp[16];
	cudnnConvolutionBwdDataAlgoPerf_t dp[16];
	cudnnConvolutionBwdFilterAlgoPerf_t wp[16];
	int nf = 0, nd = 0, nwp = 0;
	cudnnStatus_t e1 = cudnnFindConvolutionForwardAlgorithmEx(g.dnn, xd, x,
		wd, w, cd, yd, y, 16, &nf, fp, ws, wsz);
	cudnnStatus_t e2 = CUDNN_STATUS_SUCCESS, e3 = CUDNN_STATUS_SUCCESS;
	if (l->train && e1 == CUDNN_STATUS_SUCCESS) {
		e2 = cudnnFindConvolutionBackwardDataAlgorithmEx(g.dnn, wd, w, yd,
			dy, cd, xd, dx, 16, &nd, dp, ws, wsz);
		e3 = cudnnFindConvolutionBackwardFilterAlgorithmEx(g.dnn, xd, x,
			yd, dy, cd, wd, dw, 16, &nwp, wp, ws, wsz);
	}
	cudaFree(ws);
	CD(e1);
	CD(e2);
	CD(e3);
	int fi = -1, di = -1, wi = -1;
	for (int i = 0; i < nf && fi < 0; i++)
		if (fp[i].status == CUDNN_STATUS_SUCCESS)
			fi = i;
	for (int i = 0; i < nd && di < 0; i++)
		if (dp[i].status == CUDNN_STATUS_SUCCESS)
			di = i;
	for (int i = 0; i < nwp && wi < 0; i++)
		if (wp[i].status == CUDNN_STATUS_SUCCESS)
			wi = i;
	if (fi < 0 || (l->train && (di < 0 || wi < 0)))
		failf(PN_INVALID, "cuDNN found no convolution algorithm");
	cudnnConvolutionFwdAlgo_t fa = fp[fi].algo;
	cudnnConvolutionDescriptor_t cf = conv_desc(fp[fi].mathType),
		cdd = l->train ? conv_desc(dp[di].mathType) : cd,
		cw = l->train ? conv_desc(wp[wi].mathType) : cd;
	size_t need = fp[fi].memory;
	char m[160];
	snprintf(m, sizeof m, "cudnn fwd %s", fwd_algo_name(fa));
	r->impl = m;
	cudnnConvolutionBwdDataAlgo_t da = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
	cudnnConvolutionBwdFilterAlgo_t wa = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
	if (l->train) {
		da = dp[di].algo;
		wa = wp[wi].algo;
		need = need > dp[di].memory ? need : dp[di].memory;
		need = need > wp[wi].memory ? need : wp[wi].memory;
		snprintf(m, sizeof m, ", bwd-data %s, bwd-filter %s",
			 bwd_algo_name(da), bwd_algo_name(wa));
		r->impl += m;
	}
	void *work = dalloc(r, need);
	op(r, FWD, [=] {
		float one = 1, zero = 0;
		CD(cudnnConvolutionForward(g.dnn, &one, xd, x, wd, w, cf, fa, work,
					   need, &zero, yd, y));
		if (b)
			CD(cudnnAddTensor(g.dnn, &one, bd, b, &one, yd, y));
	});
	if (act)
		op(r, FWD, [=] {
			DISPATCH(r, (k_bias_act<T><<<grid(ny), 256, 0, g.s>>>(ny, 1,
				(T *)y, nullptr, act)));
		});
	r->x = {x, nx};
	r->y = {y, ny};
	r->w = {w, nw + (b ? O : 0)};
	if (!l->train) {
		add_param(r, w, nullptr, nw);
		if (b)
			add_param(r, b, nullptr, (size_t)O);
		return;
	}
	void *dz = dy;
	if (act) {
		dz = tensor(r, ny, 0, 0);
		act_bwd(r, ny, y, dy, dz, act);
	}
	op(r, BWD, [=] {
		float one = 1, zero = 0;
		CD(cudnnConvolutionBackwardData(g.dnn, &one, wd, w, yd, dz, cdd,
						da, work, need, &zero, xd, dx));
		CD(cudnnConvolutionBackwardFilter(g.dnn, &one, xd, x, yd, dz, cw,
						  wa, work, need, &zero, wd, dw));
	});
	/* the bias's gradient by a reduction of pn's own, as PyTorch's
	 * (cudnnConvolutionBackwardBias refuses bf16: CUDNN_STATUS_NOT_
	 * SUPPORTED on an H200 with cuDNN 9.14, half of the conv2d rows) */
	if (db)
		chansum(r, BWD, (size_t)B, (size_t)O, (size_t)Y * Y, dz, db);
	add_param(r, w, dw, nw);
	if (b)
		add_param(r, b, db, (size_t)O);
	r->dy = {dy, ny};
	r->dx = {dx, nx};
}

/* batch normalization of each channel over batch and pixels, NCHW: a
 * train row with the batch's statistics (two channel reductions, then
 * the normalization; backward two more and the data's gradient), a fwd
 * row with the running ones (mean 0, variance 1); scale and shift in the
 * row's type, statistics in fp32 */
void batchnorm(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t B = (size_t)l->batch, C = (size_t)l->in_channels,
	       hw = (size_t)(l->image * l->image), N = B * C * hw;
	void *x = tensor(r, N), *y = tensor(r, N, 0, 0);
	void *gam = tensor(r, C, 0.5f, 1.5f), *bet = tensor(r, C, -0.5f, 0.5f);
	r->x = {x, N};
	r->y = {y, N};
	r->w = {gam, 2 * C};
	r->impl = "kernels";
	if (!l->train) {
		float rs0 = 1 / sqrtf(1 + PN_LN_EPS);
		op(r, FWD, [=] {
			DISPATCH(r, (k_bn_apply<T><<<grid(N), 256, 0, g.s>>>(N, C,
				hw, (const T *)x, nullptr, nullptr, rs0,
				(const T *)gam, (const T *)bet, (T *)y)));
		});
		add_param(r, gam, nullptr, C);
		add_param(r, bet, nullptr, C);
		return;
	}
	float cnt = (float)(B * hw);
	float *mean = fzeros(r, C), *rstd = fzeros(r, C);
	chanstat(r, FWD, 0, B, C, hw, x, nullptr, nullptr, nullptr, 1 / cnt, 0,
		 mean, nullptr);
	chanstat(r, FWD, 1, B, C, hw, x, nullptr, mean, nullptr, 1 / cnt, 1,
		 rstd, nullptr);
	op(r, FWD, [=] {
		DISPATCH(r, (k_bn_apply<T><<<grid(N), 256, 0, g.s>>>(N, C, hw,
			(const T *)x, mean, rstd, 0.f, (const T *)gam,
			(const T *)bet, (T *)y)));
	});
	void *dy = tensor(r, N), *dx = tensor(r, N, 0, 0);
	void *dg = tensor(r, C, 0, 0), *db = tensor(r, C, 0, 0);
	float *s1 = fzeros(r, C), *s2 = fzeros(r, C);
	chanstat(r, BWD, 0, B, C, hw, dy, nullptr, nullptr, nullptr, 1, 0, s1,
		 db);
	chanstat(r, BWD, 2, B, C, hw, dy, x, mean, rstd, 1, 0, s2, dg);
	op(r, BWD, [=] {
		DISPATCH(r, (k_bn_dx<T><<<grid(N), 256, 0, g.s>>>(N, C, hw, cnt,
			(const T *)x, (const T *)dy, mean, rstd,
			(const T *)gam, s1, s2, (T *)dx)));
	});
	add_param(r, gam, dg, C);
	add_param(r, bet, db, C);
	r->dy = {dy, N};
	r->dx = {dx, N};
}

/* max or average pooling of each NCHW plane, an output a thread; the
 * backward gathers each input's share (a max pool's through the index of
 * each window's maximum, kept by a train row's forward) */
void pool(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	int X = (int)l->image, k = (int)l->kernel, s = (int)l->stride,
	    p = (int)l->padding, max = strcmp(l->op, "max") == 0;
	int Y = (X + 2 * p - k) / s + 1;
	/* the kernels index a plane, and keep a maximum's index, in 32 bits */
	if ((double)X * X > INT_MAX)
		failf(PN_INVALID, "a pooled plane of %d x %d elements, over the "
		      "kernels' 32-bit index", X, X);
	size_t planes = (size_t)(l->batch * l->in_channels);
	size_t nx = planes * X * X, ny = planes * Y * Y;
	void *x = tensor(r, nx), *y = tensor(r, ny, 0, 0);
	int32_t *at = max && l->train ?
		(int32_t *)dalloc(r, ny * sizeof(int32_t)) : nullptr;
	op(r, FWD, [=] {
		DISPATCH(r, (k_pool_fwd<T><<<grid(ny), 256, 0, g.s>>>(planes, X,
			Y, k, s, p, max, (const T *)x, (T *)y, at)));
	});
	r->x = {x, nx};
	r->y = {y, ny};
	r->impl = "kernels";
	if (!l->train)
		return;
	void *dy = tensor(r, ny), *dx = tensor(r, nx, 0, 0);
	op(r, BWD, [=] {
		DISPATCH(r, (k_pool_bwd<T><<<grid(nx), 256, 0, g.s>>>(planes, X,
			Y, k, s, p, max, (const T *)dy, at, (T *)dx)));
	});
	r->dy = {dy, ny};
	r->dx = {dx, nx};
}

}  // namespace pncu
