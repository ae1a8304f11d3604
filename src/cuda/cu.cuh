/* cu.cuh - inside the cuda backend of pn-time: the prepared layer
 * (pn_run), the device, and the helpers that build a layer from cuBLAS,
 * cuDNN and the kernels of kernels.cuh.  One file per layer family builds
 * its layers (gemm.cu: dense, bmm, attention; conv.cu: conv2d, batchnorm,
 * pool; rnn.cu: rnn, lstm, gru; vector.cu: embedding, layernorm, softmax,
 * elementwise, posenc, xent), as src/cpu does; core.cu holds the helpers
 * and the backend's table.  Everything is in namespace pncu.
 *
 * A layer builder allocates with dalloc/tensor (which throw PN_OOM past
 * --mem-limit), adds closures to the phases FWD and BWD with op, and sets
 * the canonical tensors of --check (r->x, r->y, ...). */
#ifndef PN_CUDA_CU_CUH
#define PN_CUDA_CU_CUH

#include <cstdint>
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

namespace pncu {

/* Throw a pn_fail with status st and a message. */
[[noreturn]] void failf(int st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Throw for a failed CUDA, cuBLAS or cuDNN call (see the file comment of
 * core.cu for the status each failure gets). */
#define CU(x) cu_check((x), #x, __FILE__, __LINE__)
#define CB(x) cb_check((x), #x, __FILE__, __LINE__)
#define CD(x) cd_check((x), #x, __FILE__, __LINE__)
#define LAUNCHED() CU(cudaGetLastError())
void cu_check(cudaError_t e, const char *what, const char *file, int line);
void cb_check(cublasStatus_t s, const char *what, const char *file, int line);
void cd_check(cudnnStatus_t s, const char *what, const char *file, int line);

}  // namespace pncu

/* ---- the device ---------------------------------------------------------- */

/* the device and its handles, shared by every layer */
struct cu_device {
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
};

namespace pncu {
extern cu_device g;

/* host to device and back on the stream, complete on return */
void h2d(void *dst, const void *src, size_t bytes);
void d2h(void *dst, const void *src, size_t bytes);
/* blocks of 256 threads for n elements, capped */
int grid(size_t n);
}  // namespace pncu

/* ---- one prepared layer ----------------------------------------------------- */

enum { FWD, BWD, NPHASE };

struct param {
	void *w, *g;
	float *s1, *s2;
	float *m;               /* half weights' fp32 master, or nullptr */
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


namespace pncu {

/* n bytes of device memory owned by r, counted against --mem-limit */
void *dalloc(pn_run *r, size_t n);
/* n elements of the layer's type, filled uniform in [lo, hi) (zeroed when
 * lo == hi) */
void *tensor(pn_run *r, size_t n, float lo = -1, float hi = 1);
float *fzeros(pn_run *r, size_t n);
/* a parameter and its gradient (NULL: not trained), with optimizer state */
void add_param(pn_run *r, void *w, void *grad, size_t n);

}  // namespace pncu

#define AT(p, i) ((void *)((char *)(p) + (size_t)(i) * r->esz))
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
/* run body with T the element type of r (body launches a kernel) */
#define DISPATCH(r, body)                                                     \
	do {                                                                  \
		if ((r)->type == PN_FP16) { typedef __half T; body; }         \
		else if ((r)->type == PN_BF16) { typedef __nv_bfloat16 T; body; } \
		else { typedef float T; body; }                               \
		LAUNCHED();                                                   \
	} while (0)


namespace pncu {

void gemm(pn_run *r, const gemm_args &a);
/* f added to phase ph */
void op(pn_run *r, int ph, std::function<void()> f);
/* out[cols] = column sums of a[rows][cols] (xhat-weighted with mean) */
void colsum(pn_run *r, int ph, size_t rows, size_t cols, void *a, void *out,
	    void *x = nullptr, float *mean = nullptr, float *rstd = nullptr);
/* out[c] = the sum of a[n][c][0..hw) over n and the image (NCHW) */
void chansum(pn_run *r, int ph, size_t n, size_t C, size_t hw, void *a,
	     void *out);
/* a statistic of each channel (k_bn_part's mode), times mul, or
 * rsqrt(that + PN_LN_EPS) when rs, into out (fp32) and outt (the row's
 * type), each when not NULL */
void chanstat(pn_run *r, int ph, int mode, size_t n, size_t C, size_t hw,
	      void *a, void *x, float *mean, float *rstd, float mul, int rs,
	      float *out, void *outt);
void dropout(pn_run *r, int ph, size_t n, void *a, void *b, float p,
	     uint64_t salt);
/* dz = dy * act'(y) */
void act_bwd(pn_run *r, size_t n, void *y, void *dy, void *dz, int act);
/* cuDNN: the math of the row's precision; a 4-d tensor descriptor */
cudnnMathType_t math(const pn_run *r);
cudnnTensorDescriptor_t tdesc(pn_run *r, int n, int c, int h, int w);
/* y = softmax(x) (lg: log-softmax) over the last axis of rows x cols,
 * and its backward dx from y and dy; pn's kernels, as PyTorch's (not
 * cuDNN's) */
void softmax_fwd(pn_run *r, size_t rows, int cols, void *x, void *y,
		 int lg = 0);
void softmax_bwd(pn_run *r, size_t rows, int cols, void *y, void *dy,
		 void *dx, int lg = 0);

/* ---- the layers, by family ------------------------------------------------ */

void dense(pn_run *r);          /* gemm.cu */
void bmm(pn_run *r);
void attention(pn_run *r);
void conv2d(pn_run *r);         /* conv.cu: conv2d, batchnorm, pool */
void batchnorm(pn_run *r);
void pool(pn_run *r);
void rnn(pn_run *r);            /* rnn.cu: rnn, lstm, gru */
/* --check: n canonical floats h to the device tensor d of the layer's
 * type, and back */
void up(pn_run *r, void *d, const float *h, size_t n);
void down(pn_run *r, float *h, const void *d, size_t n);
/* --check: canonical (PyTorch) recurrent weights w <-> cuDNN's weight
 * space (in: into it) */
void rnn_weights(pn_run *r, float *w, void *space, bool in);
void embedding(pn_run *r);      /* vector.cu */
void layernorm(pn_run *r);
void softmax(pn_run *r);
void elementwise(pn_run *r);
void posenc(pn_run *r);
void xent(pn_run *r);

}  // namespace pncu
#endif
