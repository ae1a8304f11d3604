/* kernels.cuh - the small CUDA kernels of pn-time's cuda backend: the parts
 * of a layer that cuBLAS and cuDNN do not do (bias and activation, dropout,
 * elementwise ops, layer normalization, embedding gather and scatter-add,
 * positional encoding, column sums, optimizer updates).
 *
 * Every kernel takes its tensors in the layer's type T (float, __half or
 * __nv_bfloat16), computes in float and uses a grid-stride loop, so any
 * grid size is correct.  Each has a plain-C counterpart in the cpu backend
 * (src/cpu/, src/lib/optim.c) that --check compares it with. */
#ifndef PN_KERNELS_CUH
#define PN_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "../time/backend.h"

__device__ __forceinline__ float tof(float x) { return x; }
__device__ __forceinline__ float tof(__half x) { return __half2float(x); }
__device__ __forceinline__ float tof(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T fromf(float x);
template <> __device__ __forceinline__ float fromf<float>(float x) { return x; }
template <> __device__ __forceinline__ __half fromf<__half>(float x) { return __float2half(x); }
template <> __device__ __forceinline__ __nv_bfloat16 fromf<__nv_bfloat16>(float x)
{
	return __float2bfloat16(x);
}

#define FOR_GRID(i, n)                                                        \
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;         \
	     i < (size_t)(n); i += (size_t)blockDim.x * gridDim.x)

/* activations of pn_config.h, and their derivative from the output */
__device__ __forceinline__ float act_f(int act, float x)
{
	return act == PN_ACT_RELU ? fmaxf(x, 0.f) :
	       act == PN_ACT_TANH ? tanhf(x) :
	       act == PN_ACT_SIGMOID ? 1.f / (1.f + __expf(-x)) : x;
}

__device__ __forceinline__ float act_d(int act, float y)
{
	return act == PN_ACT_RELU ? (y > 0.f ? 1.f : 0.f) :
	       act == PN_ACT_TANH ? 1.f - y * y :
	       act == PN_ACT_SIGMOID ? y * (1.f - y) : 1.f;
}

/* i / m and i % m in 32 bits where both fit (a 64-bit division is a long
 * software routine on the GPU, which would make a streaming kernel
 * compute-bound) */
__device__ __forceinline__ size_t div_idx(size_t i, size_t m)
{
	return (i | m) >> 32 ? i / m : (size_t)((uint32_t)i / (uint32_t)m);
}

__device__ __forceinline__ size_t mod_idx(size_t i, size_t m)
{
	return (i | m) >> 32 ? i % m : (size_t)((uint32_t)i % (uint32_t)m);
}

/* y[r][c] = act(y[r][c] + b[c]) (b may be NULL) */
template <typename T>
__global__ void k_bias_act(size_t n, size_t cols, T *y, const T *b, int act)
{
	FOR_GRID(i, n)
	{
		float v = tof(y[i]) + (b ? tof(b[mod_idx(i, cols)]) : 0.f);
		y[i] = fromf<T>(act_f(act, v));
	}
}

/* dz = dy * act'(y) */
template <typename T>
__global__ void k_act_bwd(size_t n, const T *y, const T *dy, T *dz, int act)
{
	FOR_GRID(i, n)
		dz[i] = fromf<T>(tof(dy[i]) * act_d(act, tof(y[i])));
}

/* b = a * keep / (1 - p), the mask of pn_keep(salt, i, p) */
template <typename T>
__global__ void k_dropout(size_t n, const T *a, T *b, float p, uint64_t salt)
{
	float s = 1.f / (1.f - p);
	FOR_GRID(i, n)
		b[i] = fromf<T>(pn_keep(salt, i, p) ? tof(a[i]) * s : 0.f);
}

/* elementwise ops, in the order of pn_elem_ops() */
enum { E_ADD, E_SUB, E_MUL, E_DIV, E_POW, E_ADDU, E_SUBU, E_MULU, E_DIVU,
       E_POWU, E_RELU, E_GELU, E_TANH, E_SIGMOID, E_EXP, E_NEG, E_COPY,
       E_DROPOUT, E_SILU_MUL, E_GELU_MUL, E_N };

__device__ __forceinline__ float gelu(float x)
{
	return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
}

__device__ __forceinline__ float gelu_d(float x)
{
	return 0.5f * (1.f + erff(x * 0.70710678118654752f)) +
	       x * 0.39894228040143268f * __expf(-0.5f * x * x);
}

template <typename T>
__global__ void k_elem_fwd(int op, size_t n, const T *a, const T *b, T *y,
			   float c, float p, uint64_t salt)
{
	FOR_GRID(i, n)
	{
		float x = tof(a[i]), v;
		switch (op) {
		case E_ADD: v = x + tof(b[i]); break;
		case E_SUB: v = x - tof(b[i]); break;
		case E_MUL: v = x * tof(b[i]); break;
		case E_DIV: v = x / tof(b[i]); break;
		case E_POW: v = powf(x, tof(b[i])); break;
		case E_ADDU: v = x + c; break;
		case E_SUBU: v = x - c; break;
		case E_MULU: v = x * c; break;
		case E_DIVU: v = x / c; break;
		case E_POWU: v = powf(x, c); break;
		case E_RELU: v = fmaxf(x, 0.f); break;
		case E_GELU: v = gelu(x); break;
		case E_TANH: v = tanhf(x); break;
		case E_SIGMOID: v = 1.f / (1.f + __expf(-x)); break;
		case E_EXP: v = __expf(x); break;
		case E_NEG: v = -x; break;
		case E_DROPOUT: v = pn_keep(salt, i, p) ? x / (1.f - p) : 0.f; break;
		case E_SILU_MUL: v = x / (1.f + __expf(-x)) * tof(b[i]); break;
		case E_GELU_MUL: v = gelu(x) * tof(b[i]); break;
		default: v = x; break;
		}
		y[i] = fromf<T>(v);
	}
}

/* The input gradients of an op: dx1 (and dx2 for two-tensor ops) from dy,
 * the inputs a, b and the output y.  add, addu, subu and copy pass the
 * gradient on and launch nothing. */
template <typename T>
__global__ void k_elem_bwd(int op, size_t n, const T *a, const T *b,
			   const T *y, const T *dy, T *dx1, T *dx2, float c,
			   float p, uint64_t salt)
{
	FOR_GRID(i, n)
	{
		float g = tof(dy[i]), x = tof(a[i]), d1 = g, d2 = 0.f;
		switch (op) {
		case E_SUB: d2 = -g; break;
		case E_MUL: d1 = g * tof(b[i]); d2 = g * x; break;
		case E_DIV: d1 = g / tof(b[i]); d2 = -d1 * tof(y[i]); break;
		case E_POW: {
			float e = tof(b[i]);
			d1 = g * e * powf(x, e - 1.f);
			d2 = g * tof(y[i]) * logf(x);
			break;
		}
		case E_MULU: d1 = g * c; break;
		case E_DIVU: d1 = g / c; break;
		case E_POWU: d1 = g * c * powf(x, c - 1.f); break;
		case E_RELU: d1 = tof(y[i]) > 0.f ? g : 0.f; break;
		case E_GELU: d1 = g * gelu_d(x); break;
		case E_TANH: { float t = tof(y[i]); d1 = g * (1.f - t * t); break; }
		case E_SIGMOID: { float s = tof(y[i]); d1 = g * s * (1.f - s); break; }
		case E_EXP: d1 = g * tof(y[i]); break;
		case E_NEG: d1 = -g; break;
		case E_DROPOUT: d1 = pn_keep(salt, i, p) ? g / (1.f - p) : 0.f; break;
		case E_SILU_MUL: {      /* y = silu(x) b: one pass for both */
			float s = 1.f / (1.f + __expf(-x));
			d1 = g * tof(b[i]) * s * (1.f + x * (1.f - s));
			d2 = g * x * s;
			break;
		}
		case E_GELU_MUL:
			d1 = g * tof(b[i]) * gelu_d(x);
			d2 = g * gelu(x);
			break;
		default: break;
		}
		if (op != E_SUB)
			dx1[i] = fromf<T>(d1);
		if (dx2)
			dx2[i] = fromf<T>(d2);
	}
}

/* the sum (or the maximum, mx) of v over a warp's lanes, in every lane */
__device__ __forceinline__ float warp_reduce(float v, bool mx)
{
	for (int o = 16; o > 0; o /= 2) {
		float u = __shfl_xor_sync(0xffffffffu, v, o);
		v = mx ? fmaxf(v, u) : v + u;
	}
	return v;
}

/* the sum (or the maximum, mx) of v over the block (blockDim.x a multiple
 * of 32, at most 1024), in every thread; sh: 32 floats of shared memory */
__device__ __forceinline__ float block_reduce(float v, float *sh, bool mx)
{
	v = warp_reduce(v, mx);
	int w = threadIdx.x / 32, lane = threadIdx.x % 32;
	__syncthreads();
	if (lane == 0)
		sh[w] = v;
	__syncthreads();
	v = threadIdx.x < blockDim.x / 32 ? sh[threadIdx.x] : mx ? -INFINITY : 0.f;
	if (w == 0)
		v = warp_reduce(v, mx);
	if (threadIdx.x == 0)
		sh[0] = v;
	__syncthreads();
	v = sh[0];
	__syncthreads();
	return v;
}

__device__ __forceinline__ float block_sum(float v, float *sh)
{
	return block_reduce(v, sh, false);
}

/* ---- softmax over the last axis, as PyTorch's own kernels (not cuDNN's,
 * whose backward ran a row of more than 512 at 8 GB/s on an H200): a warp
 * a row up to SOFTMAX_WARP_COLS columns, else a block a row; fp32 sums */
#define SOFTMAX_WARP_COLS 1024

/* A row's threads, a warp's (warp != 0) or the block's: this thread's
 * lane and the lanes' step along the row, the first row, and the rows a
 * block takes at once */
struct row_lanes {
	int lane, step;
	size_t first, per;
};

__device__ __forceinline__ row_lanes row_lanes_of(int warp)
{
	row_lanes q;
	q.lane = warp ? threadIdx.x % 32 : threadIdx.x;
	q.step = warp ? 32 : blockDim.x;
	q.per = warp ? blockDim.x / 32 : 1;
	q.first = blockIdx.x * q.per + (warp ? threadIdx.x / 32 : 0);
	return q;
}

/* v reduced over a row's threads (row_lanes) */
__device__ __forceinline__ float row_reduce(float v, int warp, float *sh,
					    bool mx)
{
	return warp ? warp_reduce(v, mx) : block_reduce(v, sh, mx);
}

/* y = softmax(x) over each row of D (lg: log-softmax); one warp (warp !=
 * 0) or one block a row */
template <typename T>
__global__ void k_softmax_fwd(size_t rows, int D, int warp, int lg,
			      const T *x, T *y)
{
	__shared__ float sh[32];
	row_lanes q = row_lanes_of(warp);
	int lane = q.lane, step = q.step;
	for (size_t r = q.first; r < rows; r += (size_t)gridDim.x * q.per) {
		const T *xr = x + r * D;
		float m = -INFINITY;
		for (int j = lane; j < D; j += step)
			m = fmaxf(m, tof(xr[j]));
		m = row_reduce(m, warp, sh, true);
		float s = 0.f;
		for (int j = lane; j < D; j += step)
			s += expf(tof(xr[j]) - m);
		s = row_reduce(s, warp, sh, false);
		float inv = 1.f / s, ls = logf(s);
		for (int j = lane; j < D; j += step)
			y[r * D + j] = fromf<T>(lg ? tof(xr[j]) - m - ls :
						expf(tof(xr[j]) - m) * inv);
	}
}

/* dx = y (dy - sum(dy y)) over each row of D (lg: dy - e^y sum(dy)), as
 * k_softmax_fwd */
template <typename T>
__global__ void k_softmax_bwd(size_t rows, int D, int warp, int lg,
			      const T *y, const T *dy, T *dx)
{
	__shared__ float sh[32];
	row_lanes q = row_lanes_of(warp);
	int lane = q.lane, step = q.step;
	for (size_t r = q.first; r < rows; r += (size_t)gridDim.x * q.per) {
		size_t o = r * D;
		float s = 0.f;
		for (int j = lane; j < D; j += step)
			s += tof(dy[o + j]) * (lg ? 1.f : tof(y[o + j]));
		s = row_reduce(s, warp, sh, false);
		for (int j = lane; j < D; j += step)
			dx[o + j] = fromf<T>(lg ? tof(dy[o + j]) -
					     expf(tof(y[o + j])) * s :
					     tof(y[o + j]) * (tof(dy[o + j]) - s));
	}
}

/* layer normalization of rows x[r][0..D): one block a row; mean and 1/sd
 * kept for the backward pass */
template <typename T>
__global__ void k_ln_fwd(size_t rows, int D, const T *x, const T *g,
			 const T *b, T *y, float *mean, float *rstd, float eps)
{
	__shared__ float sh[32];
	for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
		const T *xr = x + r * D;
		float s = 0.f;
		for (int j = threadIdx.x; j < D; j += blockDim.x)
			s += tof(xr[j]);
		float m = block_sum(s, sh) / D;
		float v = 0.f;
		for (int j = threadIdx.x; j < D; j += blockDim.x) {
			float d = tof(xr[j]) - m;
			v += d * d;
		}
		float rs = rsqrtf(block_sum(v, sh) / D + eps);
		for (int j = threadIdx.x; j < D; j += blockDim.x)
			y[r * D + j] = fromf<T>((tof(xr[j]) - m) * rs * tof(g[j]) +
						tof(b[j]));
		if (threadIdx.x == 0) {
			mean[r] = m;
			rstd[r] = rs;
		}
	}
}

/* dx of layer normalization, one block a row:
 * dx = rstd (dy g - mean(dy g) - xhat mean(dy g xhat)) */
template <typename T>
__global__ void k_ln_bwd(size_t rows, int D, const T *x, const T *g,
			 const T *dy, const float *mean, const float *rstd,
			 T *dx)
{
	__shared__ float sh[32];
	for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
		float m = mean[r], rs = rstd[r], s1 = 0.f, s2 = 0.f;
		for (int j = threadIdx.x; j < D; j += blockDim.x) {
			float dg = tof(dy[r * D + j]) * tof(g[j]);
			s1 += dg;
			s2 += dg * (tof(x[r * D + j]) - m) * rs;
		}
		s1 = block_sum(s1, sh) / D;
		s2 = block_sum(s2, sh) / D;
		for (int j = threadIdx.x; j < D; j += blockDim.x) {
			float xh = (tof(x[r * D + j]) - m) * rs;
			float dg = tof(dy[r * D + j]) * tof(g[j]);
			dx[r * D + j] = fromf<T>(rs * (dg - s1 - xh * s2));
		}
	}
}

/* p[i] uniform in [lo, hi): splitmix64 of seed and i, the top 24 bits */
template <typename T>
__global__ void k_fill(size_t n, T *p, float lo, float hi, uint64_t seed)
{
	FOR_GRID(i, n)
	{
		uint64_t z = seed + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
		z ^= z >> 31;
		p[i] = fromf<T>(lo + (hi - lo) * (float)(z >> 40) *
				   (1.0f / 16777216.0f));
	}
}

/* Column sums of a[rows][cols] in two passes, blocks of COLSUM_X columns
 * by COLSUM_Y row lanes: a warp reads 32 neighbouring columns of a row
 * (coalesced), the lanes of a block go down the rows of its chunk, and a
 * shared-memory sum ends each pass. */
#define COLSUM_X 32
#define COLSUM_Y 8

/* the sum of v over the block's threadIdx.y, for threadIdx.y == 0 */
__device__ __forceinline__ float colsum_lanes(float v)
{
	__shared__ float sh[COLSUM_Y][COLSUM_X];
	sh[threadIdx.y][threadIdx.x] = v;
	__syncthreads();
	if (threadIdx.y == 0)
		for (int k = 1; k < COLSUM_Y; k++)
			v += sh[k][threadIdx.x];
	return v;
}

/* Partial column sums of a[rows][cols] (times xhat of layer normalization
 * when mean != NULL: the gradient of gamma) over chunks of chunk rows:
 * part[blockIdx.y][col]. */
template <typename T>
__global__ void k_colsum_part(size_t rows, size_t cols, size_t chunk,
			      const T *a, const T *x, const float *mean,
			      const float *rstd, float *part)
{
	size_t c = blockIdx.x * (size_t)COLSUM_X + threadIdx.x;
	size_t r0 = blockIdx.y * chunk;
	size_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
	float s = 0.f;
	if (c < cols)
		for (size_t r = r0 + threadIdx.y; r < r1; r += COLSUM_Y) {
			float v = tof(a[r * cols + c]);
			if (mean)
				v *= (tof(x[r * cols + c]) - mean[r]) * rstd[r];
			s += v;
		}
	s = colsum_lanes(s);
	if (threadIdx.y == 0 && c < cols)
		part[blockIdx.y * cols + c] = s;
}

/* out[col] = the sum of the chunks' partial sums */
template <typename T>
__global__ void k_colsum_final(size_t chunks, size_t cols, const float *part,
			       T *out)
{
	size_t c = blockIdx.x * (size_t)COLSUM_X + threadIdx.x;
	float s = 0.f;
	if (c < cols)
		for (size_t k = threadIdx.y; k < chunks; k += COLSUM_Y)
			s += part[k * cols + c];
	s = colsum_lanes(s);
	if (threadIdx.y == 0 && c < cols)
		out[c] = fromf<T>(s);
}

/* ---- batch normalization over NCHW, per channel c of C: its n * hw
 * elements (i = (m / hw) C hw + c hw + m % hw for m < n hw) */

/* Partial sums per channel, over chunks of chunk of its elements:
 * part[blockIdx.y][c] for c = blockIdx.x, of
 *   mode 0: a; 1: (a - mean[c])^2; 2: a (x - mean[c]) rstd[c] */
template <typename T>
__global__ void k_bn_part(int mode, size_t n, size_t C, size_t hw,
			  size_t chunk, const T *a, const T *x,
			  const float *mean, const float *rstd, float *part)
{
	__shared__ float sh[32];
	size_t c = blockIdx.x, m0 = blockIdx.y * chunk, all = n * hw;
	size_t m1 = m0 + chunk < all ? m0 + chunk : all;
	float s = 0.f, mu = mode ? mean[c] : 0.f, rs = mode == 2 ? rstd[c] : 1.f;
	for (size_t m = m0 + threadIdx.x; m < m1; m += blockDim.x) {
		size_t i = (div_idx(m, hw) * C + c) * hw + mod_idx(m, hw);
		float v = tof(a[i]);
		s += mode == 0 ? v : mode == 1 ? (v - mu) * (v - mu) :
		     v * (tof(x[i]) - mu) * rs;
	}
	s = block_sum(s, sh);
	if (threadIdx.x == 0)
		part[blockIdx.y * C + c] = s;
}

/* The chunks' sum times mul, or rsqrt(that + eps) when rs, into out[c]
 * (fp32) and outt[c] (narrowed), each when not NULL */
template <typename T>
__global__ void k_bn_final(size_t chunks, size_t C, const float *part,
			   float mul, int rs, float eps, float *out, T *outt)
{
	FOR_GRID(c, C) {
		float s = 0.f;
		for (size_t k = 0; k < chunks; k++)
			s += part[k * C + c];
		s *= mul;
		if (rs)
			s = rsqrtf(s + eps);
		if (out)
			out[c] = s;
		if (outt)
			outt[c] = fromf<T>(s);
	}
}

/* y = (x - mean[c]) rstd[c] g[c] + b[c]; mean NULL: 0, rstd NULL: rs0 */
template <typename T>
__global__ void k_bn_apply(size_t N, size_t C, size_t hw, const T *x,
			   const float *mean, const float *rstd, float rs0,
			   const T *g, const T *b, T *y)
{
	FOR_GRID(i, N) {
		size_t c = mod_idx(div_idx(i, hw), C);
		float m = mean ? mean[c] : 0.f, rs = rstd ? rstd[c] : rs0;
		y[i] = fromf<T>((tof(x[i]) - m) * rs * tof(g[c]) + tof(b[c]));
	}
}

/* dx = g rstd (dy - s1 / n - xhat s2 / n), s1 = sum dy, s2 = sum dy xhat
 * per channel, n its count */
template <typename T>
__global__ void k_bn_dx(size_t N, size_t C, size_t hw, float cnt,
			const T *x, const T *dy, const float *mean,
			const float *rstd, const T *g, const float *s1,
			const float *s2, T *dx)
{
	FOR_GRID(i, N) {
		size_t c = mod_idx(div_idx(i, hw), C);
		float xh = (tof(x[i]) - mean[c]) * rstd[c];
		dx[i] = fromf<T>(tof(g[c]) * rstd[c] * (tof(dy[i]) - s1[c] / cnt -
						       xh * s2[c] / cnt));
	}
}

/* ---- pooling over NCHW planes of X x X into Y x Y, windows of k at
 * stride s from -p: max (the first largest, as ATen's loop) or average
 * (over k * k, padding counted, PyTorch's default) */

/* y, and at (when not NULL) the index in its plane of each output's
 * maximum */
template <typename T>
__global__ void k_pool_fwd(size_t planes, int X, int Y, int k, int s, int p,
			   int max, const T *x, T *y, int32_t *at)
{
	FOR_GRID(o, planes * (size_t)Y * Y) {
		size_t pl = div_idx(o, (size_t)Y * Y);
		int q = (int)mod_idx(o, (size_t)Y * Y), i = q / Y, j = q % Y;
		const T *xp = x + pl * X * X;
		float sum = 0.f, best = -INFINITY;
		int arg = -1;
		for (int u = i * s - p; u < i * s - p + k; u++)
			for (int v = j * s - p; v < j * s - p + k; v++) {
				if (u < 0 || u >= X || v < 0 || v >= X)
					continue;
				float e = tof(xp[u * X + v]);
				sum += e;
				if (e > best || arg < 0) {
					best = e;
					arg = u * X + v;
				}
			}
		y[o] = fromf<T>(max ? best : sum / (float)(k * k));
		if (at)
			at[o] = arg;
	}
}

/* dx of pooling, gathered: each input element sums the outputs whose
 * window holds it (max: whose maximum it was) */
template <typename T>
__global__ void k_pool_bwd(size_t planes, int X, int Y, int k, int s, int p,
			   int max, const T *dy, const int32_t *at, T *dx)
{
	FOR_GRID(e, planes * (size_t)X * X) {
		size_t pl = div_idx(e, (size_t)X * X);
		int q = (int)mod_idx(e, (size_t)X * X), u = q / X, v = q % X;
		/* outputs i with i s - p <= u < i s - p + k */
		int i0 = u + p - k + 1, j0 = v + p - k + 1;
		i0 = i0 > 0 ? (i0 + s - 1) / s : 0;
		j0 = j0 > 0 ? (j0 + s - 1) / s : 0;
		int i1 = (u + p) / s, j1 = (v + p) / s;
		if (i1 > Y - 1)
			i1 = Y - 1;
		if (j1 > Y - 1)
			j1 = Y - 1;
		const T *dyp = dy + pl * Y * Y;
		const int32_t *ap = max ? at + pl * Y * Y : nullptr;
		float sum = 0.f;
		for (int i = i0; i <= i1; i++)
			for (int j = j0; j <= j1; j++)
				if (!max || ap[i * Y + j] == q)
					sum += tof(dyp[i * Y + j]);
		dx[e] = fromf<T>(max ? sum : sum / (float)(k * k));
	}
}

/* ---- the loss: cross-entropy as PyTorch's unfused cross_entropy */

/* the negative log-likelihood's gradient, as nll_loss_backward writes it
 * into a zeroed tensor: -1 / rows at each row's target */
template <typename T>
__global__ void k_nll_bwd(size_t rows, int D, const int32_t *tgt, T *g)
{
	FOR_GRID(r, rows)
		g[r * D + tgt[r]] = fromf<T>(-1.f / (float)rows);
}

/* loss = -mean over rows of lp[r][tgt[r]]: one block */
template <typename T>
__global__ void k_nll_fwd(size_t rows, int D, const T *lp,
			  const int32_t *tgt, float *loss)
{
	__shared__ float sh[32];
	float s = 0.f;
	for (size_t r = threadIdx.x; r < rows; r += blockDim.x)
		s += tof(lp[r * D + tgt[r]]);
	s = block_sum(s, sh);
	if (threadIdx.x == 0)
		*loss = -s / (float)rows;
}

/* y[i][e] = table[idx[i]][e] */
template <typename T>
__global__ void k_gather(size_t n, size_t E, const int32_t *idx,
			 const T *table, T *y)
{
	FOR_GRID(i, n * E)
		y[i] = table[(size_t)idx[div_idx(i, E)] * E + mod_idx(i, E)];
}

__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(__half *p, float v)
{
	atomicAdd(p, __float2half(v));
}
__device__ __forceinline__ void atomic_add(__nv_bfloat16 *p, float v)
{
#if __CUDA_ARCH__ >= 800
	atomicAdd(p, __float2bfloat16(v));
#else
	/* compare-and-swap on the aligned 32-bit word that holds *p */
	unsigned int *w = (unsigned int *)((size_t)p & ~(size_t)3);
	int hi = (size_t)p & 2;
	unsigned int old = *w, assumed;
	do {
		assumed = old;
		unsigned short h = hi ? assumed >> 16 : assumed & 0xffff;
		__nv_bfloat16 cur = __ushort_as_bfloat16(h);
		unsigned short nw = __bfloat16_as_ushort(
			__float2bfloat16(__bfloat162float(cur) + v));
		unsigned int next = hi ? (assumed & 0xffffu) | ((unsigned int)nw << 16) :
					 (assumed & 0xffff0000u) | nw;
		old = atomicCAS(w, assumed, next);
	} while (old != assumed);
#endif
}

/* dtable[idx[i]] += dy[i] (dtable zeroed before) */
template <typename T>
__global__ void k_scatter_add(size_t n, size_t E, const int32_t *idx,
			      const T *dy, T *dtable)
{
	FOR_GRID(i, n * E)
		atomic_add(&dtable[(size_t)idx[div_idx(i, E)] * E + mod_idx(i, E)],
			   tof(dy[i]));
}

/* y = x + pe[s][e] for x[B][S][E] */
template <typename T>
__global__ void k_posenc(size_t n, size_t SE, const T *x, const float *pe,
			 T *y)
{
	FOR_GRID(i, n)
		y[i] = fromf<T>(tof(x[i]) + pe[mod_idx(i, SE)]);
}

/* m[i] = w[i], widened: a half weight's fp32 master */
template <typename T>
__global__ void k_widen(size_t n, const T *w, float *m)
{
	FOR_GRID(i, n)
		m[i] = tof(w[i]);
}

/* One optimizer update of w with g; s1, s2 the float state; c1, c2 Adam's
 * bias corrections 1 - beta^t.  The formulas of pn_opt_update.  With a
 * master m (half weights, as the cpu backend's bf16 rows): the update of
 * m, narrowed into w. */
template <typename T>
__global__ void k_opt(int opt, size_t n, T *w, const T *g, float *s1,
		      float *s2, float lr, float c1, float c2, float *m)
{
	FOR_GRID(i, n)
	{
		float wi = m ? m[i] : tof(w[i]), gi = tof(g[i]);
		switch (opt) {
		case PN_OPT_SGD:
			wi -= lr * gi;
			break;
		case PN_OPT_ADAM:
			s1[i] = PN_ADAM_B1 * s1[i] + (1.f - PN_ADAM_B1) * gi;
			s2[i] = PN_ADAM_B2 * s2[i] + (1.f - PN_ADAM_B2) * gi * gi;
			wi -= lr / c1 * s1[i] /
			      (sqrtf(s2[i]) / sqrtf(c2) + PN_ADAM_EPS);
			break;
		case PN_OPT_ADAGRAD:
			s1[i] += gi * gi;
			wi -= lr * gi / (sqrtf(s1[i]) + PN_ADAGRAD_EPS);
			break;
		case PN_OPT_ADADELTA: {
			const float rho = PN_ADADELTA_RHO, eps = PN_ADADELTA_EPS;
			s1[i] = rho * s1[i] + (1.f - rho) * gi * gi;
			float d = sqrtf(s2[i] + eps) / sqrtf(s1[i] + eps) * gi;
			s2[i] = rho * s2[i] + (1.f - rho) * d * d;
			wi -= lr * d;
			break;
		}
		case PN_OPT_RMSPROP:
			s1[i] = PN_RMSPROP_ALPHA * s1[i] +
				(1.f - PN_RMSPROP_ALPHA) * gi * gi;
			wi -= lr * gi / (sqrtf(s1[i]) + PN_RMSPROP_EPS);
			break;
		default:
			break;
		}
		if (m)
			m[i] = wi;
		w[i] = fromf<T>(wi);
	}
}

#endif
