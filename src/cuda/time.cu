/* time.cu - the cuda backend of pn-time: cuBLAS for the matrix products,
 * cuDNN for convolution, recurrent layers and softmax, the kernels of
 * kernels.cuh for the rest.  Times are CUDA events on one stream.
 *
 * Every CUDA, cuBLAS and cuDNN call goes through CU, CB or CD, which throw
 * a pn_fail naming the file and line; prepare, step and compute catch it
 * and turn it into the row's status: out of memory is PN_OOM, what the
 * library does not support is PN_INVALID, anything else PN_ERROR (after
 * which pn-time calls recover: cudaDeviceReset and a fresh start). */
#include <cstdarg>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "../time/backend.h"
#include "kernels.cuh"
extern "C" {
#include "rng.h"
}

struct pn_fail {
	int st;
	char msg[384];
};

static void failf(int st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void failf(int st, const char *fmt, ...)
{
	pn_fail f;
	f.st = st;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f.msg, sizeof f.msg, fmt, ap);
	va_end(ap);
	throw f;
}

#define CU(x) cu_check((x), #x, __FILE__, __LINE__)
#define CB(x) cb_check((x), #x, __FILE__, __LINE__)
#define CD(x) cd_check((x), #x, __FILE__, __LINE__)
#define LAUNCHED() CU(cudaGetLastError())

static void cu_check(cudaError_t e, const char *what, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	if (e == cudaErrorMemoryAllocation) {
		cudaGetLastError();        /* not sticky: clear it */
		failf(PN_OOM, "%s:%d: out of device memory (%s)", file, line, what);
	}
	failf(PN_ERROR, "%s:%d: %s: %s", file, line, what, cudaGetErrorString(e));
}

static void cb_check(cublasStatus_t s, const char *what, const char *file, int line)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return;
	int st = s == CUBLAS_STATUS_ALLOC_FAILED ? PN_OOM :
		 s == CUBLAS_STATUS_NOT_SUPPORTED ? PN_INVALID : PN_ERROR;
	failf(st, "%s:%d: %s: %s", file, line, what, cublasGetStatusString(s));
}

static void cd_check(cudnnStatus_t s, const char *what, const char *file, int line)
{
	if (s == CUDNN_STATUS_SUCCESS)
		return;
	int st = s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
		 s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ? PN_OOM :
		 s == CUDNN_STATUS_NOT_SUPPORTED ||
		 (s >= 3000 && s < 4000) ? PN_INVALID : PN_ERROR;
	failf(st, "%s:%d: %s: %s", file, line, what, cudnnGetErrorString(s));
}

/* ---- the device ---------------------------------------------------------- */

static struct {
	pn_bk_opts o;
	int dev;
	cudaStream_t s;
	cublasHandle_t blas;
	cudnnHandle_t dnn;
	cudaEvent_t ev[4];
	void *flush;              /* a buffer larger than L2 */
	size_t flush_bytes;
	int sms;
	bool up;
} g;

static void start(void)
{
	CU(cudaSetDevice(g.dev));
	cudaDeviceProp p;
	CU(cudaGetDeviceProperties(&p, g.dev));
	g.sms = p.multiProcessorCount;
	CU(cudaStreamCreateWithFlags(&g.s, cudaStreamNonBlocking));
	CB(cublasCreate(&g.blas));
	CB(cublasSetStream(g.blas, g.s));
	CD(cudnnCreate(&g.dnn));
	CD(cudnnSetStream(g.dnn, g.s));
	for (int i = 0; i < 4; i++)
		CU(cudaEventCreate(&g.ev[i]));
	g.flush_bytes = 2 * (size_t)(p.l2CacheSize > 0 ? p.l2CacheSize : 1 << 22);
	CU(cudaMalloc(&g.flush, g.flush_bytes));
	g.up = true;
}

static void stop(void)
{
	if (!g.up)
		return;
	cudaFree(g.flush);
	for (int i = 0; i < 4; i++)
		cudaEventDestroy(g.ev[i]);
	cudnnDestroy(g.dnn);
	cublasDestroy(g.blas);
	cudaStreamDestroy(g.s);
	g.up = false;
}

/* host to device on the stream, complete on return (the stream does not
 * synchronize with the default stream, so plain cudaMemcpy would race
 * with its kernels) */
static void h2d(void *dst, const void *src, size_t bytes)
{
	CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g.s));
	CU(cudaStreamSynchronize(g.s));
}

static void d2h(void *dst, const void *src, size_t bytes)
{
	CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g.s));
	CU(cudaStreamSynchronize(g.s));
}

static int grid(size_t n)
{
	size_t b = (n + 255) / 256;
	size_t max = (size_t)g.sms * 32;
	return (int)(b < 1 ? 1 : b > max ? max : b);
}

/* ---- one prepared layer ----------------------------------------------------- */

enum { FWD, BWD, NPHASE };

struct param {
	void *w, *g;
	float *s1, *s2;
	size_t n;
};

/* a canonical tensor of pn_io on the device */
struct slot {
	void *p = nullptr;
	size_t n = 0;
};

struct pn_run {
	pn_config cfg;
	int type;                         /* pn_prec */
	size_t esz;                       /* bytes an element */
	cudaDataType_t dt;
	cudnnDataType_t ddt;
	double bytes = 0;
	std::vector<void *> bufs;
	std::vector<std::function<void()>> ops[NPHASE];
	std::vector<std::function<void()>> cleanup;
	std::vector<param> par;
	long t = 0;
	std::string impl;
	pn_rng rng;
	slot x, x2, y, dx, dx2, dy, w;    /* canonical data for compute */
	int32_t *idx = nullptr;
	size_t nidx = 0;
	/* recurrent layers: cuDNN's weight space */
	cudnnRNNDescriptor_t rnn = nullptr;
	void *wspace = nullptr, *dwspace = nullptr;
	size_t wsize = 0;

	~pn_run()
	{
		for (auto &f : cleanup)
			f();
		for (void *p : bufs)
			cudaFree(p);
	}
};

/* n bytes of device memory owned by r, counted against --mem-limit */
static void *dalloc(pn_run *r, size_t n)
{
	r->bytes += (double)n;
	if (g.o.mem_limit > 0 && r->bytes > g.o.mem_limit)
		failf(PN_OOM, "needs more than --mem-limit %.0f bytes",
		      g.o.mem_limit);
	void *p = nullptr;
	CU(cudaMalloc(&p, n ? n : 1));
	r->bufs.push_back(p);
	return p;
}

/* n elements of the layer's type, filled uniform in [lo, hi) (zeroed when
 * lo == hi) */
static void *tensor(pn_run *r, size_t n, float lo = -1, float hi = 1)
{
	void *p = dalloc(r, n * r->esz);
	if (lo == hi) {
		CU(cudaMemsetAsync(p, 0, n * r->esz, g.s));
		return p;
	}
	/* random data made on the host in chunks, converted, copied */
	const size_t chunk = 1 << 20;
	std::vector<float> f(chunk);
	std::vector<char> h(chunk * r->esz);
	for (size_t i = 0; i < n; i += chunk) {
		size_t k = n - i < chunk ? n - i : chunk;
		pn_rng_fill(&r->rng, f.data(), k, lo, hi);
		for (size_t j = 0; j < k; j++) {
			if (r->type == PN_FP16)
				((__half *)h.data())[j] = __float2half(f[j]);
			else if (r->type == PN_BF16)
				((__nv_bfloat16 *)h.data())[j] = __float2bfloat16(f[j]);
			else
				((float *)h.data())[j] = f[j];
		}
		h2d((char *)p + i * r->esz, h.data(), k * r->esz);
	}
	return p;
}

static float *fzeros(pn_run *r, size_t n)
{
	float *p = (float *)dalloc(r, n * sizeof(float));
	CU(cudaMemsetAsync(p, 0, n * sizeof(float), g.s));
	return p;
}

#define AT(p, i) ((void *)((char *)(p) + (size_t)(i) * r->esz))

static void add_param(pn_run *r, void *w, void *grad, size_t n)
{
	param p;
	p.w = w;
	p.g = grad;
	p.n = n;
	int ns = r->cfg.l.train ? pn_opt_states(r->cfg.l.optimizer) : 0;
	p.s1 = ns > 0 ? fzeros(r, n) : nullptr;
	p.s2 = ns > 1 ? fzeros(r, n) : nullptr;
	r->par.push_back(p);
}

/* ---- cuBLAS ------------------------------------------------------------------ */

/* Row-major C[M][N] = alpha op(A) op(B) + beta C, batch times: with
 * pointer arrays (Ap, Bp, Cp on the device) or with strides.  cuBLAS is
 * column-major, so it computes C^T = op(B)^T op(A)^T. */
struct gemm_args {
	bool ta = false, tb = false;
	int M, N, K;
	const void *A, *B;
	void *C;
	long long lda, ldb, ldc;
	float alpha = 1, beta = 0;
	int batch = 1;
	long long sa = 0, sb = 0, sc = 0;
	const void *const *Ap = nullptr, *const *Bp = nullptr;
	void *const *Cp = nullptr;
};

static void gemm(pn_run *r, const gemm_args &a)
{
	cublasOperation_t ob = a.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t oa = a.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (r->type == PN_FP32) {
		if (a.Ap)
			CB(cublasSgemmBatched(g.blas, ob, oa, a.N, a.M, a.K, &a.alpha,
				(const float *const *)a.Bp, (int)a.ldb,
				(const float *const *)a.Ap, (int)a.lda, &a.beta,
				(float *const *)a.Cp, (int)a.ldc, a.batch));
		else if (a.batch > 1)
			CB(cublasSgemmStridedBatched(g.blas, ob, oa, a.N, a.M, a.K,
				&a.alpha, (const float *)a.B, (int)a.ldb, a.sb,
				(const float *)a.A, (int)a.lda, a.sa, &a.beta,
				(float *)a.C, (int)a.ldc, a.sc, a.batch));
		else
			CB(cublasSgemm(g.blas, ob, oa, a.N, a.M, a.K, &a.alpha,
				(const float *)a.B, (int)a.ldb, (const float *)a.A,
				(int)a.lda, &a.beta, (float *)a.C, (int)a.ldc));
		return;
	}
	cublasComputeType_t ct = r->type == PN_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 :
						      CUBLAS_COMPUTE_32F;
	if (a.Ap)
		CB(cublasGemmBatchedEx(g.blas, ob, oa, a.N, a.M, a.K, &a.alpha,
			a.Bp, r->dt, (int)a.ldb, a.Ap, r->dt, (int)a.lda, &a.beta,
			a.Cp, r->dt, (int)a.ldc, a.batch, ct, CUBLAS_GEMM_DEFAULT));
	else if (a.batch > 1)
		CB(cublasGemmStridedBatchedEx(g.blas, ob, oa, a.N, a.M, a.K,
			&a.alpha, a.B, r->dt, (int)a.ldb, a.sb, a.A, r->dt,
			(int)a.lda, a.sa, &a.beta, a.C, r->dt, (int)a.ldc, a.sc,
			a.batch, ct, CUBLAS_GEMM_DEFAULT));
	else
		CB(cublasGemmEx(g.blas, ob, oa, a.N, a.M, a.K, &a.alpha, a.B,
			r->dt, (int)a.ldb, a.A, r->dt, (int)a.lda, &a.beta, a.C,
			r->dt, (int)a.ldc, ct, CUBLAS_GEMM_DEFAULT));
}

static void op(pn_run *r, int ph, std::function<void()> f)
{
	r->ops[ph].push_back(std::move(f));
}

/* out[cols] = column sums of a[rows][cols] (xhat-weighted with mean) */
static void colsum(pn_run *r, int ph, size_t rows, size_t cols, void *a,
		   void *out, void *x = nullptr, float *mean = nullptr,
		   float *rstd = nullptr)
{
	size_t chunks = (rows + COLSUM_CHUNK - 1) / COLSUM_CHUNK;
	float *part = (float *)dalloc(r, chunks * cols * sizeof(float));
	op(r, ph, [=] {
		dim3 gr((unsigned)((cols + 255) / 256), (unsigned)chunks);
		if (r->type == PN_FP16)
			k_colsum_part<__half><<<gr, 256, 0, g.s>>>(rows, cols,
				(const __half *)a, (const __half *)x, mean, rstd, part);
		else if (r->type == PN_BF16)
			k_colsum_part<__nv_bfloat16><<<gr, 256, 0, g.s>>>(rows, cols,
				(const __nv_bfloat16 *)a, (const __nv_bfloat16 *)x,
				mean, rstd, part);
		else
			k_colsum_part<float><<<gr, 256, 0, g.s>>>(rows, cols,
				(const float *)a, (const float *)x, mean, rstd, part);
		LAUNCHED();
		if (r->type == PN_FP16)
			k_colsum_final<__half><<<grid(cols), 256, 0, g.s>>>(chunks,
				cols, part, (__half *)out);
		else if (r->type == PN_BF16)
			k_colsum_final<__nv_bfloat16><<<grid(cols), 256, 0, g.s>>>(
				chunks, cols, part, (__nv_bfloat16 *)out);
		else
			k_colsum_final<float><<<grid(cols), 256, 0, g.s>>>(chunks,
				cols, part, (float *)out);
		LAUNCHED();
	});
}

/* run body with T the element type of r (body launches a kernel) */
#define DISPATCH(r, body)                                                     \
	do {                                                                  \
		if ((r)->type == PN_FP16) { typedef __half T; body; }         \
		else if ((r)->type == PN_BF16) { typedef __nv_bfloat16 T; body; } \
		else { typedef float T; body; }                               \
		LAUNCHED();                                                   \
	} while (0)

static void dropout(pn_run *r, int ph, size_t n, void *a, void *b, float p,
		    uint64_t salt)
{
	op(r, ph, [=] {
		DISPATCH(r, (k_dropout<T><<<grid(n), 256, 0, g.s>>>(n,
			(const T *)a, (T *)b, p, salt)));
	});
}

static void act_bwd(pn_run *r, size_t n, void *y, void *dy, void *dz, int act)
{
	op(r, BWD, [=] {
		DISPATCH(r, (k_act_bwd<T><<<grid(n), 256, 0, g.s>>>(n,
			(const T *)y, (const T *)dy, (T *)dz, act)));
	});
}

/* ---- layers ------------------------------------------------------------------ */

static void dense(pn_run *r)
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

static void bmm(pn_run *r)
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

static cudnnMathType_t math(const pn_run *r)
{
	return r->type == PN_FP32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

static cudnnTensorDescriptor_t tdesc(pn_run *r, int n, int c, int h, int w)
{
	cudnnTensorDescriptor_t d;
	CD(cudnnCreateTensorDescriptor(&d));
	r->cleanup.push_back([d] { cudnnDestroyTensorDescriptor(d); });
	CD(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, r->ddt, n, c, h, w));
	return d;
}

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

static void conv2d(pn_run *r)
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
	cudnnConvolutionDescriptor_t cd;
	CD(cudnnCreateConvolutionDescriptor(&cd));
	r->cleanup.push_back([cd] { cudnnDestroyConvolutionDescriptor(cd); });
	CD(cudnnSetConvolution2dDescriptor(cd, p, p, s, s, 1, 1,
		CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	CD(cudnnSetConvolutionMathType(cd, math(r)));
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
		CD(cudnnConvolutionForward(g.dnn, &one, xd, x, wd, w, cd, fa, work,
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
		CD(cudnnConvolutionBackwardData(g.dnn, &one, wd, w, yd, dz, cd, da,
						work, need, &zero, xd, dx));
		CD(cudnnConvolutionBackwardFilter(g.dnn, &one, xd, x, yd, dz, cd,
						  wa, work, need, &zero, wd, dw));
		if (db)
			CD(cudnnConvolutionBackwardBias(g.dnn, &one, yd, dz, &zero,
							bd, db));
	});
	add_param(r, w, dw, nw);
	if (b)
		add_param(r, b, db, (size_t)O);
	r->dy = {dy, ny};
	r->dx = {dx, nx};
}

/* softmax over the last axis of rows x cols, cuDNN's accurate algorithm */
static void softmax_ops(pn_run *r, size_t rows, int cols, void *x, void *y,
			void *dy, void *dx)
{
	cudnnTensorDescriptor_t d = tdesc(r, (int)rows, cols, 1, 1);
	op(r, FWD, [=] {
		float one = 1, zero = 0;
		CD(cudnnSoftmaxForward(g.dnn, CUDNN_SOFTMAX_ACCURATE,
			CUDNN_SOFTMAX_MODE_CHANNEL, &one, d, x, &zero, d, y));
	});
	if (dy)
		op(r, BWD, [=] {
			float one = 1, zero = 0;
			CD(cudnnSoftmaxBackward(g.dnn, CUDNN_SOFTMAX_ACCURATE,
				CUDNN_SOFTMAX_MODE_CHANNEL, &one, d, y, d, dy,
				&zero, d, dx));
		});
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

static void attention(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	int B = (int)l->batch, S = (int)l->seq_len, E = (int)l->embed_dim,
	    h = (int)l->heads, d = E / h, N = B * S, E3 = 3 * E;
	float scale = 1 / sqrtf((float)d), p = (float)r->cfg.dropout;
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
	op(r, FWD, [=] {
		size_t n = (size_t)N * E3;
		DISPATCH(r, (k_bias_act<T><<<grid(n), 256, 0, g.s>>>(n,
			(size_t)E3, (T *)qkv, (const T *)bin, 0)));
	});
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
	cudnnTensorDescriptor_t smd = tdesc(r, B * h * S, S, 1, 1);
	op(r, FWD, [=] {
		float one = 1, zero = 0;
		CD(cudnnSoftmaxForward(g.dnn, CUDNN_SOFTMAX_ACCURATE,
			CUDNN_SOFTMAX_MODE_CHANNEL, &one, smd, sc, &zero, smd, pr));
	});
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
	op(r, FWD, [=] {
		size_t n = (size_t)N * E;
		DISPATCH(r, (k_bias_act<T><<<grid(n), 256, 0, g.s>>>(n, (size_t)E,
			(T *)y, (const T *)bout, 0)));
	});
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
	op(r, BWD, [=] {
		float one = 1, zero = 0;
		CD(cudnnSoftmaxBackward(g.dnn, CUDNN_SOFTMAX_ACCURATE,
			CUDNN_SOFTMAX_MODE_CHANNEL, &one, smd, pr, smd, dp, &zero,
			smd, dsc));
	});
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
	r->impl = "cublas, cudnn softmax";
}

static void embedding(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t N = (size_t)(l->batch * l->seq_len), V = (size_t)l->vocab,
	       E = (size_t)l->embed_dim;
	void *t = tensor(r, V * E), *y = tensor(r, N * E, 0, 0);
	int32_t *idx = (int32_t *)dalloc(r, N * sizeof(int32_t));
	std::vector<int32_t> h(N);
	for (size_t i = 0; i < N; i++)
		h[i] = (int32_t)pn_rng_int(&r->rng, 0, (long long)V - 1);
	h2d(idx, h.data(), N * sizeof(int32_t));
	r->idx = idx;
	r->nidx = N;
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

static void rnn(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	int B = (int)l->batch, S = (int)l->seq_len, I = (int)l->input_size,
	    H = (int)l->hidden, L = (int)l->layers, D = l->bidirectional ? 2 : 1;
	int act = l->activation;
	cudnnRNNMode_t mode = l->type == PN_LSTM ? CUDNN_LSTM :
			      l->type == PN_GRU ? CUDNN_GRU : CUDNN_RNN_TANH;
	cudnnDropoutDescriptor_t drop;
	CD(cudnnCreateDropoutDescriptor(&drop));
	r->cleanup.push_back([drop] { cudnnDestroyDropoutDescriptor(drop); });
	size_t dsz = 0;
	CD(cudnnDropoutGetStatesSize(g.dnn, &dsz));
	void *dstates = dalloc(r, dsz);
	CD(cudnnSetDropoutDescriptor(drop, g.dnn, (float)r->cfg.dropout, dstates,
				     dsz, g.o.seed));
	CD(cudnnCreateRNNDescriptor(&r->rnn));
	cudnnRNNDescriptor_t rd = r->rnn;
	r->cleanup.push_back([rd] { cudnnDestroyRNNDescriptor(rd); });
	CD(cudnnSetRNNDescriptor_v8(rd, CUDNN_RNN_ALGO_STANDARD, mode,
		CUDNN_RNN_DOUBLE_BIAS, D == 2 ? CUDNN_BIDIRECTIONAL :
		CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, r->ddt,
		CUDNN_DATA_FLOAT, math(r), I, H, H, L, drop,
		CUDNN_RNN_PADDED_IO_DISABLED));
	std::vector<int32_t> lens((size_t)B, S);
	int32_t *dlens = (int32_t *)dalloc(r, (size_t)B * sizeof(int32_t));
	h2d(dlens, lens.data(), (size_t)B * sizeof(int32_t));
	cudnnRNNDataDescriptor_t xd, yd;
	CD(cudnnCreateRNNDataDescriptor(&xd));
	r->cleanup.push_back([xd] { cudnnDestroyRNNDataDescriptor(xd); });
	CD(cudnnCreateRNNDataDescriptor(&yd));
	r->cleanup.push_back([yd] { cudnnDestroyRNNDataDescriptor(yd); });
	CD(cudnnSetRNNDataDescriptor(xd, r->ddt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
				     S, B, I, lens.data(), nullptr));
	CD(cudnnSetRNNDataDescriptor(yd, r->ddt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
				     S, B, D * H, lens.data(), nullptr));
	cudnnTensorDescriptor_t hd;
	CD(cudnnCreateTensorDescriptor(&hd));
	r->cleanup.push_back([hd] { cudnnDestroyTensorDescriptor(hd); });
	int hdims[3] = {L * D, B, H}, hstr[3] = {B * H, H, 1};
	CD(cudnnSetTensorNdDescriptor(hd, r->ddt, 3, hdims, hstr));
	cudnnForwardMode_t fm = l->train ? CUDNN_FWD_MODE_TRAINING :
					   CUDNN_FWD_MODE_INFERENCE;
	size_t wsz = 0, work = 0, reserve = 0;
	CD(cudnnGetRNNWeightSpaceSize(g.dnn, rd, &wsz));
	CD(cudnnGetRNNTempSpaceSizes(g.dnn, rd, fm, xd, &work, &reserve));
	float a = 1 / sqrtf((float)H);
	size_t nw = wsz / r->esz, nx = (size_t)S * B * I, ny = (size_t)S * B * D * H;
	void *w = tensor(r, nw, -a, a), *x = tensor(r, nx), *y = tensor(r, ny, 0, 0);
	void *ws = dalloc(r, work), *rs = dalloc(r, reserve);
	r->wspace = w;
	r->wsize = wsz;
	op(r, FWD, [=] {
		CD(cudnnRNNForward(g.dnn, rd, fm, dlens, xd, x, yd, y, hd, nullptr,
				   nullptr, hd, nullptr, nullptr, wsz, w, work, ws,
				   reserve, rs));
	});
	size_t last = (size_t)(S - 1) * B * D * H, nlast = (size_t)B * D * H;
	void *outv = act ? tensor(r, nlast, 0, 0) : nullptr;
	if (act)
		op(r, FWD, [=] {
			DISPATCH(r, (k_elem_fwd<T><<<grid(nlast), 256, 0, g.s>>>(
				act == PN_ACT_RELU ? E_RELU : act == PN_ACT_TANH ?
				E_TANH : E_SIGMOID, nlast, (const T *)AT(y, last),
				nullptr, (T *)outv, 0.f, 0.f, 0)));
		});
	r->x = {x, nx};
	r->y = {y, ny};
	r->impl = "cudnn rnn";
	if (!l->train) {
		add_param(r, w, nullptr, nw);
		return;
	}
	void *dy = tensor(r, ny), *dx = tensor(r, nx, 0, 0), *dw = tensor(r, nw, 0, 0);
	r->dwspace = dw;
	if (act) {
		void *dout = tensor(r, nlast);
		op(r, BWD, [=] {
			DISPATCH(r, (k_act_bwd<T><<<grid(nlast), 256, 0, g.s>>>(
				nlast, (const T *)outv, (const T *)dout,
				(T *)AT(dy, last), act)));
		});
	}
	op(r, BWD, [=] {
		CD(cudnnRNNBackwardData_v8(g.dnn, rd, dlens, yd, y, dy, xd, dx, hd,
			nullptr, nullptr, nullptr, hd, nullptr, nullptr, nullptr,
			wsz, w, work, ws, reserve, rs));
		/* cuDNN adds the weight gradients to what is there */
		CU(cudaMemsetAsync(dw, 0, wsz, g.s));
		CD(cudnnRNNBackwardWeights_v8(g.dnn, rd, CUDNN_WGRAD_MODE_ADD, dlens,
			xd, x, hd, nullptr, yd, y, wsz, dw, work, ws, reserve, rs));
	});
	add_param(r, w, dw, nw);
	r->dy = {dy, ny};
	r->dx = {dx, nx};
}

static void layernorm(pn_run *r)
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

static void softmax(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t N = (size_t)(l->batch * l->seq_len);
	int D = (int)l->dim;
	void *x = tensor(r, N * D), *y = tensor(r, N * D, 0, 0);
	void *dy = l->train ? tensor(r, N * D) : nullptr;
	void *dx = l->train ? tensor(r, N * D, 0, 0) : nullptr;
	softmax_ops(r, N, D, x, y, dy, dx);
	r->x = {x, N * D};
	r->y = {y, N * D};
	r->dy = {dy, dy ? N * D : 0};
	r->dx = {dx, dx ? N * D : 0};
	r->impl = "cudnn softmax";
}

static int elem_op(const char *name)
{
	const char *const *ops = pn_elem_ops();
	for (int i = 0; ops[i]; i++)
		if (strcmp(ops[i], name) == 0)
			return i;
	return -1;
}

static void elementwise(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	size_t n = (size_t)(l->batch * l->seq_len * l->dim);
	int e = elem_op(l->op), two = pn_elem_binary(l->op);
	float c = PN_ELEM_SCALAR, p = (float)r->cfg.dropout;
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

static void posenc(pn_run *r)
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

/* ---- the backend ---------------------------------------------------------- */

static int cuda_open(const pn_bk_opts *o, char *device, size_t nd,
		     char *versions, size_t nv, char *msg, size_t n)
{
	g.o = *o;
	g.dev = o->device;
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0) {
		snprintf(msg, n, "no CUDA device%s%s", e != cudaSuccess ? ": " : "",
			 e != cudaSuccess ? cudaGetErrorString(e) : "");
		return -1;
	}
	try {
		start();
	} catch (pn_fail &f) {
		snprintf(msg, n, "%s", f.msg);
		return -1;
	}
	cudaDeviceProp p;
	cudaGetDeviceProperties(&p, g.dev);
	snprintf(device, nd, "%s", p.name);
	int rt = 0, drv = 0, bl = 0;
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	cublasGetVersion(g.blas, &bl);
	size_t dnn = cudnnGetVersion();
	snprintf(versions, nv, "CUDA %d.%d; driver %d.%d; cuBLAS %d.%d.%d; "
		 "cuDNN %zu.%zu.%zu", rt / 1000, rt % 1000 / 10, drv / 1000,
		 drv % 1000 / 10, bl / 10000, bl % 10000 / 100, bl % 100,
		 dnn / 10000, dnn % 10000 / 100, dnn % 100);
	return 0;
}

/* A row too big for the device, or with a size over the int that cuBLAS,
 * cuDNN and the layers here take, fails before any size is computed:
 * casting such a size to int would make another layer of it. */
static void fits(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	double need = pn_io_bytes(&r->cfg);
	size_t avail = 0, total = 0;
	CU(cudaMemGetInfo(&avail, &total));
	if (need > (double)total) {
		r->bytes = need;
		failf(PN_OOM, "needs %.3g bytes, more than the device's %zu",
		      need, total);
	}
	const double dims[] = {l->batch, l->seq_len, l->dim, l->in_features,
		l->out_features, l->m, l->n, l->k, l->in_channels,
		l->out_channels, l->kernel, l->image, l->stride, l->padding,
		l->embed_dim, 3 * l->embed_dim, l->heads, l->vocab,
		l->input_size, l->hidden, l->layers, l->batch * l->seq_len};
	for (double d : dims) {
		if (d <= INT_MAX)
			continue;
		r->bytes = need;
		if (g.o.mem_limit > 0 && need > g.o.mem_limit)
			failf(PN_OOM, "needs more than --mem-limit %.0f bytes",
			      g.o.mem_limit);
		failf(PN_INVALID, "a size of %.0f is over the cuda backend's "
		      "limit %d", d, INT_MAX);
	}
}

static int cuda_prepare(const pn_config *cfg, pn_run **run, double *mem,
			char *msg, size_t n)
{
	pn_run *r = new pn_run;
	r->cfg = *cfg;
	r->type = cfg->prec;
	r->esz = cfg->prec == PN_FP16 || cfg->prec == PN_BF16 ? 2 : 4;
	r->dt = cfg->prec == PN_FP16 ? CUDA_R_16F : cfg->prec == PN_BF16 ?
		CUDA_R_16BF : CUDA_R_32F;
	r->ddt = cfg->prec == PN_FP16 ? CUDNN_DATA_HALF : cfg->prec == PN_BF16 ?
		 CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
	pn_rng_seed(&r->rng, g.o.seed);
	try {
		fits(r);
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
		default: failf(PN_INVALID, "layer type not supported");
		}
		CU(cudaStreamSynchronize(g.s));
	} catch (pn_fail &f) {
		*mem = r->bytes;
		snprintf(msg, n, "%s", f.msg);
		delete r;
		return f.st;
	} catch (std::exception &e) {
		*mem = r->bytes;
		snprintf(msg, n, "%s", e.what());
		delete r;
		return PN_ERROR;
	}
	*mem = r->bytes;
	snprintf(msg, n, "%s", r->impl.empty() ? "cublas" : r->impl.c_str());
	*run = r;
	return PN_OK;
}

static void cuda_release(pn_run *r)
{
	if (r)
		cudaStreamSynchronize(g.s);
	delete r;
}

static void optimize(pn_run *r)
{
	r->t++;
	int opt = r->cfg.l.optimizer;
	float lr = (float)r->cfg.lr;
	float c1 = 1 - powf(PN_ADAM_B1, (float)r->t), c2 = 1 - powf(PN_ADAM_B2, (float)r->t);
	for (const param &p : r->par)
		DISPATCH(r, (k_opt<T><<<grid(p.n), 256, 0, g.s>>>(opt, p.n,
			(T *)p.w, (const T *)p.g, p.s1, p.s2, lr, c1, c2)));
}

static int cuda_step(pn_run *r, pn_phases *t, char *msg, size_t n)
{
	bool train = r->cfg.l.train, opt = train && r->cfg.l.optimizer != PN_OPT_NONE;
	try {
		CU(cudaEventRecord(g.ev[0], g.s));
		for (auto &f : r->ops[FWD])
			f();
		CU(cudaEventRecord(g.ev[1], g.s));
		if (train)
			for (auto &f : r->ops[BWD])
				f();
		CU(cudaEventRecord(g.ev[2], g.s));
		if (opt)
			optimize(r);
		CU(cudaEventRecord(g.ev[3], g.s));
		CU(cudaEventSynchronize(g.ev[3]));
		float a, b, c;
		CU(cudaEventElapsedTime(&a, g.ev[0], g.ev[1]));
		CU(cudaEventElapsedTime(&b, g.ev[1], g.ev[2]));
		CU(cudaEventElapsedTime(&c, g.ev[2], g.ev[3]));
		t->fwd = a;
		t->bwd = train ? b : NAN;
		t->opt = opt ? c : NAN;
	} catch (pn_fail &f) {
		snprintf(msg, n, "%s", f.msg);
		return f.st;
	}
	return PN_OK;
}

static void cuda_flush(void)
{
	/* write a buffer twice the size of L2, so that no repetition finds the
	 * last one's data there */
	cudaMemsetAsync(g.flush, 0, g.flush_bytes, g.s);
	cudaStreamSynchronize(g.s);
}

static int cuda_recover(char *msg, size_t n)
{
	stop();
	cudaDeviceReset();
	try {
		start();
	} catch (pn_fail &f) {
		snprintf(msg, n, "%s", f.msg);
		return -1;
	}
	return 0;
}

/* ---- canonical data for --check ---------------------------------------------- */

static void up(pn_run *r, void *d, const float *h, size_t n)
{
	if (!d || !h || !n)
		return;
	std::vector<char> b(n * r->esz);
	for (size_t i = 0; i < n; i++) {
		if (r->type == PN_FP16)
			((__half *)b.data())[i] = __float2half(h[i]);
		else if (r->type == PN_BF16)
			((__nv_bfloat16 *)b.data())[i] = __float2bfloat16(h[i]);
		else
			((float *)b.data())[i] = h[i];
	}
	h2d(d, b.data(), n * r->esz);
}

static void down(pn_run *r, float *h, const void *d, size_t n)
{
	if (!d || !h || !n)
		return;
	std::vector<char> b(n * r->esz);
	d2h(b.data(), d, n * r->esz);
	for (size_t i = 0; i < n; i++)
		h[i] = r->type == PN_FP16 ? __half2float(((__half *)b.data())[i]) :
		       r->type == PN_BF16 ?
		       __bfloat162float(((__nv_bfloat16 *)b.data())[i]) :
		       ((float *)b.data())[i];
}

/* canonical (PyTorch) recurrent weights <-> cuDNN's weight space: the
 * matrices and biases of every layer, direction and gate */
static void rnn_weights(pn_run *r, float *w, void *space, bool in)
{
	const pn_layer *l = &r->cfg.l;
	int H = (int)l->hidden, I = (int)l->input_size, D = l->bidirectional ? 2 : 1;
	int G = pn_rnn_gates(l->type);
	cudnnTensorDescriptor_t md, bd;
	CD(cudnnCreateTensorDescriptor(&md));
	CD(cudnnCreateTensorDescriptor(&bd));
	for (int k = 0; k < (int)l->layers; k++) {
		int inl = k == 0 ? I : D * H;
		for (int d = 0; d < D; d++) {
			/* W_ih[gH][in], W_hh[gH][H], b_ih[gH], b_hh[gH] */
			float *wih = w, *whh = wih + (size_t)G * H * inl;
			float *bih = whh + (size_t)G * H * H, *bhh = bih + (size_t)G * H;
			w = bhh + (size_t)G * H;
			for (int lin = 0; lin < 2 * G; lin++) {
				void *m = nullptr, *b = nullptr;
				CD(cudnnGetRNNWeightParams(g.dnn, r->rnn, k * D + d,
					r->wsize, space, lin, md, &m, bd, &b));
				int gate = lin % G, rec = lin >= G;
				float *cm = rec ? whh + (size_t)gate * H * H :
						  wih + (size_t)gate * H * inl;
				float *cb = (rec ? bhh : bih) + (size_t)gate * H;
				size_t nm = (size_t)H * (rec ? H : inl);
				if (in) {
					up(r, m, cm, nm);
					up(r, b, cb, (size_t)H);
				} else {
					down(r, cm, m, nm);
					down(r, cb, b, (size_t)H);
				}
			}
		}
	}
	cudnnDestroyTensorDescriptor(md);
	cudnnDestroyTensorDescriptor(bd);
}

static int cuda_compute(pn_run *r, pn_io *io, char *msg, size_t n)
{
	try {
		up(r, r->x.p, io->x, r->x.n);
		up(r, r->x2.p, io->x2, r->x2.n);
		up(r, r->dy.p, io->dy, r->dy.n);
		if (r->idx)
			h2d(r->idx, io->idx, r->nidx * sizeof(int32_t));
		if (r->rnn) {
			rnn_weights(r, io->w, r->wspace, true);
		} else {
			const float *w = io->w;
			for (const param &p : r->par) {
				up(r, p.w, w, p.n);
				w += p.n;
			}
		}
		for (auto &f : r->ops[FWD])
			f();
		if (r->cfg.l.train)
			for (auto &f : r->ops[BWD])
				f();
		CU(cudaStreamSynchronize(g.s));
		down(r, io->y, r->y.p, r->y.n);
		down(r, io->dx, r->dx.p, r->dx.n);
		down(r, io->dx2, r->dx2.p, r->dx2.n);
		if (r->cfg.l.train) {
			if (r->rnn) {
				rnn_weights(r, io->dw, r->dwspace, false);
			} else {
				float *dw = io->dw;
				for (const param &p : r->par) {
					down(r, dw, p.g, p.n);
					dw += p.n;
				}
			}
		}
	} catch (pn_fail &f) {
		snprintf(msg, n, "%s", f.msg);
		return f.st;
	}
	return PN_OK;
}

static int cuda_optimize(int opt, float lr, size_t n, float *w, const float *gr,
			 int steps, char *msg, size_t nmsg)
{
	float *dw = nullptr, *dg = nullptr, *s = nullptr;
	int st = PN_OK;
	try {
		CU(cudaMalloc(&dw, n * sizeof(float)));
		CU(cudaMalloc(&dg, n * sizeof(float)));
		CU(cudaMalloc(&s, 2 * n * sizeof(float)));
		h2d(dw, w, n * sizeof(float));
		h2d(dg, gr, n * sizeof(float));
		CU(cudaMemsetAsync(s, 0, 2 * n * sizeof(float), g.s));
		for (int t = 1; t <= steps; t++) {
			float c1 = 1 - powf(PN_ADAM_B1, (float)t);
			float c2 = 1 - powf(PN_ADAM_B2, (float)t);
			k_opt<float><<<grid(n), 256, 0, g.s>>>(opt, n, dw, dg, s,
				s + n, lr, c1, c2);
			LAUNCHED();
		}
		d2h(w, dw, n * sizeof(float));
	} catch (pn_fail &f) {
		snprintf(msg, nmsg, "%s", f.msg);
		st = f.st;
	}
	cudaFree(dw);
	cudaFree(dg);
	cudaFree(s);
	return st;
}

static void cuda_close(void)
{
	stop();
}

static const pn_backend cuda = {
	"cuda", cuda_open, cuda_prepare, cuda_step, cuda_flush, cuda_release,
	cuda_recover, cuda_compute, cuda_optimize, cuda_close,
};

extern "C" const pn_backend *pn_cuda_backend(void)
{
	return &cuda;
}
