/* core.cu - the cuda backend of pn-time: cuBLAS for the matrix products,
 * cuDNN for convolution, recurrent layers and softmax, the kernels of
 * kernels.cuh for the rest.  Times are CUDA events on one stream.
 *
 * Every CUDA, cuBLAS and cuDNN call goes through CU, CB or CD, which throw
 * a pn_fail naming the file and line; prepare, step and compute catch it
 * and turn it into the row's status: out of memory is PN_OOM, what the
 * library does not support is PN_INVALID, anything else PN_ERROR (after
 * which pn-time calls recover: cudaDeviceReset and a fresh start). */
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "cu.cuh"

namespace pncu {

cu_device g;

void failf(int st, const char *fmt, ...)
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

void cu_check(cudaError_t e, const char *what, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	if (e == cudaErrorMemoryAllocation) {
		cudaGetLastError();        /* not sticky: clear it */
		failf(PN_OOM, "%s:%d: out of device memory (%s)", file, line, what);
	}
	failf(PN_ERROR, "%s:%d: %s: %s", file, line, what, cudaGetErrorString(e));
}

void cb_check(cublasStatus_t s, const char *what, const char *file, int line)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return;
	int st = s == CUBLAS_STATUS_ALLOC_FAILED ? PN_OOM :
		 s == CUBLAS_STATUS_NOT_SUPPORTED ? PN_INVALID : PN_ERROR;
	failf(st, "%s:%d: %s: %s", file, line, what, cublasGetStatusString(s));
}

void cd_check(cudnnStatus_t s, const char *what, const char *file, int line)
{
	if (s == CUDNN_STATUS_SUCCESS)
		return;
	int st = s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
		 s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ? PN_OOM :
		 s == CUDNN_STATUS_NOT_SUPPORTED ||
		 (s >= 3000 && s < 4000) ? PN_INVALID : PN_ERROR;
	failf(st, "%s:%d: %s: %s", file, line, what, cudnnGetErrorString(s));
}

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
void h2d(void *dst, const void *src, size_t bytes)
{
	CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g.s));
	CU(cudaStreamSynchronize(g.s));
}

void d2h(void *dst, const void *src, size_t bytes)
{
	CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g.s));
	CU(cudaStreamSynchronize(g.s));
}

int grid(size_t n)
{
	size_t b = (n + 255) / 256;
	size_t max = (size_t)g.sms * 32;
	return (int)(b < 1 ? 1 : b > max ? max : b);
}

/* n bytes of device memory owned by r, counted against --mem-limit */
void *dalloc(pn_run *r, size_t n)
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
 * lo == hi) on the device, from a seed the row's generator draws: a
 * timed row's values matter to no kernel's time, and a host fill took
 * seconds a gigabyte (--check's rows get the host's data, pn_io, by
 * cuda_compute) */
void *tensor(pn_run *r, size_t n, float lo, float hi)
{
	void *p = dalloc(r, n * r->esz);
	if (lo == hi) {
		CU(cudaMemsetAsync(p, 0, n * r->esz, g.s));
		return p;
	}
	uint64_t seed = pn_rng_next(&r->rng);
	DISPATCH(r, (k_fill<T><<<grid(n), 256, 0, g.s>>>(n, (T *)p, lo, hi,
							 seed)));
	return p;
}

float *fzeros(pn_run *r, size_t n)
{
	float *p = (float *)dalloc(r, n * sizeof(float));
	CU(cudaMemsetAsync(p, 0, n * sizeof(float), g.s));
	return p;
}

void add_param(pn_run *r, void *w, void *grad, size_t n)
{
	param p;
	p.w = w;
	p.g = grad;
	p.n = n;
	int ns = r->cfg.l.train ? pn_opt_states(r->cfg.l.optimizer) : 0;
	p.s1 = ns > 0 ? fzeros(r, n) : nullptr;
	p.s2 = ns > 1 ? fzeros(r, n) : nullptr;
	p.m = nullptr;
	/* half weights that train: updated through an fp32 master, as the
	 * cpu backend's bf16 rows and mixed-precision training are */
	if (grad && r->cfg.l.train && r->cfg.l.optimizer != PN_OPT_NONE &&
	    r->esz == 2) {
		p.m = (float *)dalloc(r, n * sizeof(float));
		DISPATCH(r, (k_widen<T><<<grid(n), 256, 0, g.s>>>(n,
			(const T *)w, p.m)));
	}
	r->par.push_back(p);
}

void gemm(pn_run *r, const gemm_args &a)
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

void op(pn_run *r, int ph, std::function<void()> f)
{
	r->ops[ph].push_back(std::move(f));
}

/* How many chunks (at most 65535: grid.y) of *chunk of len items to
 * split a reduction into, across blocks side by side already, so that
 * every SM has about eight blocks and each chunk holds at least lanes
 * items */
static size_t split(size_t across, size_t len, size_t lanes, size_t *chunk)
{
	size_t want = ((size_t)g.sms * 8 + across - 1) / across;
	size_t most = (len + lanes - 1) / lanes;
	size_t chunks = want < most ? want : most;
	if (chunks > 65535)
		chunks = 65535;
	if (chunks < 1)
		chunks = 1;
	*chunk = (len + chunks - 1) / chunks;
	return len ? (len + *chunk - 1) / *chunk : 1;
}

/* out[cols] = column sums of a[rows][cols] (xhat-weighted with mean): in
 * chunks of rows enough to give every SM about eight blocks (grid.y at
 * most 65535), then their partial sums (kernels.cuh) */
void colsum(pn_run *r, int ph, size_t rows, size_t cols, void *a,
		   void *out, void *x, float *mean,
		   float *rstd)
{
	size_t xb = (cols + COLSUM_X - 1) / COLSUM_X, chunk;
	size_t chunks = split(xb, rows, COLSUM_Y, &chunk);  /* a row per lane */
	float *part = (float *)dalloc(r, chunks * cols * sizeof(float));
	op(r, ph, [=] {
		dim3 blk(COLSUM_X, COLSUM_Y);
		dim3 gr((unsigned)xb, (unsigned)chunks);
		DISPATCH(r, (k_colsum_part<T><<<gr, blk, 0, g.s>>>(rows, cols,
			chunk, (const T *)a, (const T *)x, mean, rstd, part)));
		DISPATCH(r, (k_colsum_final<T><<<(unsigned)xb, blk, 0, g.s>>>(
			chunks, cols, part, (T *)out)));
	});
}

/* A statistic of each channel c of NCHW a[n][c][0..hw) (k_bn_part's
 * mode, with x, mean and rstd), times mul (rsqrt of that + eps when rs),
 * into out[c] (fp32) and outt[c] (narrowed), each when not NULL: in
 * chunks of a channel's elements (split), then their partial sums, as
 * colsum's */
void chanstat(pn_run *r, int ph, int mode, size_t n, size_t C, size_t hw,
	      void *a, void *x, float *mean, float *rstd, float mul, int rs,
	      float *out, void *outt)
{
	size_t chunk;                           /* an element a thread */
	size_t chunks = split(C, n * hw, 256, &chunk);
	float *part = (float *)dalloc(r, chunks * C * sizeof(float));
	op(r, ph, [=] {
		DISPATCH(r, (k_bn_part<T><<<dim3((unsigned)C, (unsigned)chunks),
			256, 0, g.s>>>(mode, n, C, hw, chunk, (const T *)a,
			(const T *)x, mean, rstd, part)));
		DISPATCH(r, (k_bn_final<T><<<grid(C), 256, 0, g.s>>>(chunks, C,
			part, mul, rs, PN_LN_EPS, out, (T *)outt)));
	});
}

void chansum(pn_run *r, int ph, size_t n, size_t C, size_t hw, void *a,
	     void *out)
{
	chanstat(r, ph, 0, n, C, hw, a, nullptr, nullptr, nullptr, 1, 0,
		 nullptr, out);
}

void dropout(pn_run *r, int ph, size_t n, void *a, void *b, float p,
		    uint64_t salt)
{
	op(r, ph, [=] {
		DISPATCH(r, (k_dropout<T><<<grid(n), 256, 0, g.s>>>(n,
			(const T *)a, (T *)b, p, salt)));
	});
}

void act_bwd(pn_run *r, size_t n, void *y, void *dy, void *dz, int act)
{
	op(r, BWD, [=] {
		DISPATCH(r, (k_act_bwd<T><<<grid(n), 256, 0, g.s>>>(n,
			(const T *)y, (const T *)dy, (T *)dz, act)));
	});
}

cudnnMathType_t math(const pn_run *r)
{
	return r->type == PN_FP32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

cudnnTensorDescriptor_t tdesc(pn_run *r, int n, int c, int h, int w)
{
	/* cudnnSetTensor4dDescriptor's limit, checked before it answers
	 * with a status that would reset the device */
	if ((double)n * c * h * w > INT_MAX)
		failf(PN_INVALID, "a tensor of %.0f elements, over cuDNN's "
		      "limit of 2^31", (double)n * c * h * w);
	cudnnTensorDescriptor_t d;
	CD(cudnnCreateTensorDescriptor(&d));
	r->cleanup.push_back([d] { cudnnDestroyTensorDescriptor(d); });
	CD(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, r->ddt, n, c, h, w));
	return d;
}

/* softmax (lg: log-softmax) over the last axis of rows x cols
 * (kernels.cuh): a warp a row up to SOFTMAX_WARP_COLS columns, eight rows
 * a block, else a block a row */
static void softmax_launch(size_t rows, int cols, int *warp, unsigned *gr)
{
	*warp = cols <= SOFTMAX_WARP_COLS;
	size_t per = *warp ? 256 / 32 : 1;
	size_t n = (rows + per - 1) / per, most = (size_t)g.sms * 32;
	*gr = (unsigned)(n < 1 ? 1 : n < most ? n : most);
}

void softmax_fwd(pn_run *r, size_t rows, int cols, void *x, void *y, int lg)
{
	int warp;
	unsigned gr;
	softmax_launch(rows, cols, &warp, &gr);
	op(r, FWD, [=] {
		DISPATCH(r, (k_softmax_fwd<T><<<gr, 256, 0, g.s>>>(rows, cols,
			warp, lg, (const T *)x, (T *)y)));
	});
}

void softmax_bwd(pn_run *r, size_t rows, int cols, void *y, void *dy,
		 void *dx, int lg)
{
	int warp;
	unsigned gr;
	softmax_launch(rows, cols, &warp, &gr);
	op(r, BWD, [=] {
		DISPATCH(r, (k_softmax_bwd<T><<<gr, 256, 0, g.s>>>(rows, cols,
			warp, lg, (const T *)y, (const T *)dy, (T *)dx)));
	});
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
		if (cfg->l.train && cfg->l.no_input_grad)
			failf(PN_INVALID, "input_grad 0 is timed by the cpu "
			      "backend only");
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
		case PN_BATCHNORM: batchnorm(r); break;
		case PN_POOL: pool(r); break;
		case PN_XENT: xent(r); break;
		default: failf(PN_INVALID, "layer type not supported");
		}
		/* once through: what cuDNN checks only when it runs (a data
		 * type one of its calls lacks) is the row's invalid status
		 * here, not a failed step */
		for (auto &f : r->ops[FWD])
			f();
		if (cfg->l.train)
			for (auto &f : r->ops[BWD])
				f();
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
			(T *)p.w, (const T *)p.g, p.s1, p.s2, lr, c1, c2, p.m)));
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
	} catch (std::exception &e) {   /* a host vector's bad_alloc */
		snprintf(msg, n, "%s", e.what());
		return PN_ERROR;
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

void up(pn_run *r, void *d, const float *h, size_t n)
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

void down(pn_run *r, float *h, const void *d, size_t n)
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
	} catch (std::exception &e) {   /* a host vector's bad_alloc */
		snprintf(msg, n, "%s", e.what());
		return PN_ERROR;
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
				s + n, lr, c1, c2, nullptr);
			LAUNCHED();
		}
		d2h(w, dw, n * sizeof(float));
	} catch (pn_fail &f) {
		snprintf(msg, nmsg, "%s", f.msg);
		st = f.st;
	} catch (std::exception &e) {
		snprintf(msg, nmsg, "%s", e.what());
		st = PN_ERROR;
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

}  // namespace pncu

using namespace pncu;

static const pn_backend cuda = {
	"cuda", cuda_open, cuda_prepare, cuda_step, cuda_flush, cuda_release,
	cuda_recover, cuda_compute, cuda_optimize, cuda_close,
};

extern "C" const pn_backend *pn_cuda_backend(void)
{
	return &cuda;
}
