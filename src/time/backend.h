/* backend.h - what pn-time asks of a timing backend, and the pieces every
 * backend shares: data layouts, dropout masks, the positional-encoding
 * table and repetition statistics (the optimizer updates: optim.h).
 *
 * A backend (cpu: oneDNN in src/cpu/; cuda: cuBLAS and cuDNN in src/cuda/)
 * is a table of functions.  pn-time calls, for every configuration row:
 *
 *   prepare  allocate tensors, fill them with seeded random data, create
 *            the library's primitives or plans: PN_OK, or a status
 *   step     run one training step (forward; backward when the row trains;
 *            the optimizer update when it has an optimizer) and return
 *            the milliseconds of each phase
 *   flush    evict caches between repetitions (may be NULL)
 *   release  free everything prepare made
 *
 * and, for --check, compute: run the layer once on given data in the
 * canonical layouts below and return its outputs and gradients, so that two
 * backends can be compared.
 *
 * Status of a row (pn-time's status column):
 *   PN_OK       measured
 *   PN_OOM      the layer needs more memory than the device has or than
 *               --mem-limit allows
 *   PN_INVALID  the configuration cannot run here (impossible, or not
 *               supported by the backend, e.g. fp16 on the cpu backend)
 *   PN_ERROR    the library failed; after it pn-time calls recover
 */
#ifndef PN_BACKEND_H
#define PN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define _Noreturn [[noreturn]]   /* C11 keyword of err.h and tsv.h */
extern "C" {
#endif

#include "config.h"
#include "optim.h"          /* the optimizer updates */

enum { PN_OK, PN_OOM, PN_INVALID, PN_ERROR };

/* "ok", "oom", "invalid", "error". */
const char *pn_status_name(int status);

typedef struct {
	int threads;             /* cpu: worker threads (>= 1) */
	double mem_limit;        /* bytes one row may allocate; 0: no limit */
	uint64_t seed;           /* seed of the data of every row */
	int device;              /* cuda: device ordinal */
	int cpu_clock;           /* cpu: time with the CPU time of the calling
				    thread rather than the wall clock (one
				    thread only) */
} pn_bk_opts;

/* Milliseconds of one training step, by phase; NAN for a phase not run. */
typedef struct {
	double fwd, bwd, opt;
} pn_phases;

/* Canonical data of one layer for --check: inputs set by the caller,
 * outputs written by compute.  Sizes come from pn_io_init.  Layouts are
 * row-major, PyTorch's:
 *
 *   dense        x[B][I]; w = W[O][I], b[O] (with bias); y[B][O]
 *   bmm          x[B][m][n], x2[B][n][k]; y[B][m][k]
 *   conv2d       x[B][C][X][X]; w = W[C'][C][k][k], b[C']; y[B][C'][Y][Y]
 *   attention    x[B][S][E] (query = key = value); w = in_proj W[3E][E],
 *                in_proj b[3E], out_proj W[E][E], out_proj b[E];
 *                y[B][S][E]
 *   embedding    idx[B*S] in [0, V); w = table[V][E]; y[B][S][E]; no dx
 *   rnn lstm gru x[S][B][I] (time-major); for each layer, for each
 *                direction (forward first): W_ih[gH][in], W_hh[gH][H],
 *                b_ih[gH], b_hh[gH] with PyTorch's gate order (lstm: i f g
 *                o; gru: r z n; gru's n = tanh(W_in x + b_in + r (W_hn h +
 *                b_hn))); y[S][B][dH], the output of the last layer before
 *                the activation; zero initial state
 *   layernorm    x[B*S][D]; w = gamma[D], beta[D]; eps 1e-5
 *   softmax      x[B*S][D], over the last axis
 *   elementwise  x[N], x2[N] (two-tensor ops), N = B*S*D; the scalar of
 *                the ...u ops is PN_ELEM_SCALAR; a gated op: x the half
 *                its activation reads, x2 the other, y = act(x) * x2
 *   posenc       x[B][S][E]; y = x + pn_posenc_table
 *   batchnorm    x[B][C][X][X]; w = gamma[C], beta[C]; eps 1e-5; a train
 *                row normalizes with the batch's statistics (biased
 *                variance), a fwd row with running statistics mean 0,
 *                variance 1 (PyTorch's at the start)
 *   pool         x[B][C][X][X]; y[B][C][Y][Y] (Y: pn_conv_out); max: the
 *                padding never wins, the gradient goes to the maximum;
 *                avg: PyTorch's count_include_pad, every window divides
 *                by kernel x kernel
 *   xent         x[B*S][D] logits, idx[B*S] class targets in [0, D);
 *                y[B*S][D] the log-probabilities (log-softmax); the loss,
 *                the mean of -y[i][idx[i]], is not compared; train: dx =
 *                (exp(y) - onehot(idx)) / (B*S), the gradient of the loss
 *                itself (dy is not read)
 *
 * Dropout: the same keep mask on every backend (pn_keep) under compute,
 * except inside cuDNN's RNN, which draws its own; --check runs recurrent
 * layers without dropout.  Timed, the cpu backend draws its masks as
 * PyTorch's CPU generator does (MT19937, a new mask every step) and keeps
 * the forward's noise tensor for the backward, as PyTorch does; the cuda
 * backend draws pn_keep's mask again.  dy is the gradient of y; compute writes dx (dx2) and dw, the
 * gradient of w in the layout of w. */
typedef struct {
	size_t nx, nx2, nidx, nw, ny;
	float *x, *x2, *w, *dy;
	int32_t *idx;
	float *y, *dx, *dx2, *dw;
} pn_io;

#define PN_ELEM_SCALAR 2.0f
#define PN_LN_EPS 1e-5f

/* Size the arrays for cfg, allocate them (zeroed) and fill the inputs with
 * random data from seed.  pn_io_free releases them. */
void pn_io_init(pn_io *io, const pn_config *cfg, uint64_t seed);
void pn_io_free(pn_io *io);

/* Bytes of the forward arrays of pn_io for cfg at its precision (inputs,
 * indices, weights, outputs), computed in double without allocating: a
 * lower bound of what a backend allocates (both backends keep these
 * apart), which a backend checks before its integer sizes overflow. */
double pn_io_bytes(const pn_config *cfg);

/* Bytes beyond any machine (2^53): a backend gives a row that needs more
 * status PN_OOM before it computes a single size. */
#define PN_BYTES_MAX 9007199254740992.0

typedef struct pn_run pn_run;    /* one prepared layer; backend's own */

typedef struct {
	const char *name;        /* "cpu", "cuda" */
	/* Start the backend.  Fills device (the device column) and versions
	 * (the lib_versions column); 0, or -1 with a reason in msg. */
	int (*open)(const pn_bk_opts *o, char *device, size_t nd,
		    char *versions, size_t nv, char *msg, size_t n);
	/* Prepare cfg (see above).  *mem: bytes the layer needs (also with
	 * PN_OOM when known).  msg: the implementation chosen (PN_OK) or what
	 * went wrong. */
	int (*prepare)(const pn_config *cfg, pn_run **run, double *mem,
		       char *msg, size_t n);
	int (*step)(pn_run *run, pn_phases *t, char *msg, size_t n);
	void (*flush)(void);
	void (*release)(pn_run *run);
	/* After PN_ERROR: 0 when the backend works again, else -1 with a
	 * reason (pn-time then exits). */
	int (*recover)(char *msg, size_t n);
	/* --check: one forward (and backward when cfg trains) on io. */
	int (*compute)(pn_run *run, pn_io *io, char *msg, size_t n);
	/* --check of the optimizer: steps updates of w[0..n) with the
	 * constant gradient g, in place. */
	int (*optimize)(int optimizer, float lr, size_t n, float *w,
			const float *g, int steps, char *msg, size_t nmsg);
	void (*close)(void);
} pn_backend;

/* The backends; pn_cuda_backend() is NULL when the CUDA backend is not
 * built.  pn_ref_backend() is the plain-C reference of the cpu backend:
 * compute and optimize only (its step fails). */
const pn_backend *pn_cpu_backend(void);
const pn_backend *pn_cuda_backend(void);
const pn_backend *pn_ref_backend(void);

/* ---- shared numerics -------------------------------------------------- */

#ifdef __CUDACC__
#define PN_HD __host__ __device__
#else
#define PN_HD
#endif

/* Dropout keep mask: element i of the tensor numbered salt is kept when
 * pn_keep(...) is 1, with probability 1 - p.  A hash, so that every
 * backend draws the same mask without storing it. */
PN_HD static inline int pn_keep(uint64_t salt, uint64_t i, float p)
{
	uint64_t z = salt * 0x9e3779b97f4a7c15ULL + i + 0x632be59bd9b4e019ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (float)(z >> 40) * (1.0f / 16777216.0f) >= p;
}

/* The sinusoidal table pe[S][E] of PreNeT's positional encoding:
 * pe[s][i] = sin(s / 10000^(i/E)) for even i, cos(...) for odd i. */
void pn_posenc_table(float *pe, long S, long E);

/* Statistics of x[0..n) (n >= 1; reorders x): median, min, max and the
 * population standard deviation. */
void pn_stats(double *x, int n, double *median, double *min, double *max,
	      double *sd);

#ifdef __cplusplus
}
#endif
#endif
