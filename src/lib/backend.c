#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "err.h"
#include "rng.h"

/* hot loops of the cpu backend: compiled for AVX-512, AVX2 and plain x86-64,
 * picked at load time, as frameworks dispatch their CPU kernels */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VEC __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VEC
#endif

const char *pn_status_name(int status)
{
	static const char *const names[] = {"ok", "oom", "invalid", "error"};
	return (unsigned)status < 4 ? names[status] : "?";
}

int pn_rnn_gates(pn_layer_type t)
{
	return t == PN_LSTM ? 4 : t == PN_GRU ? 3 : 1;
}

static double conv_out(const pn_layer *l)
{
	return floor((l->image + 2 * l->padding - l->kernel) / l->stride) + 1;
}

static float *alloc(size_t n)
{
	return n ? pn_xcalloc(n, sizeof(float)) : NULL;
}

void pn_io_init(pn_io *io, const pn_config *cfg, uint64_t seed)
{
	const pn_layer *l = &cfg->l;
	size_t B = (size_t)l->batch, S = (size_t)l->seq_len;
	double fan = 1;       /* fan-in of the weights, for their scale */
	memset(io, 0, sizeof *io);
	switch (l->type) {
	case PN_DENSE: {
		size_t I = (size_t)l->in_features, O = (size_t)l->out_features;
		io->nx = B * I;
		io->nw = O * I + (l->bias ? O : 0);
		io->ny = B * O;
		fan = (double)I;
		break;
	}
	case PN_BMM:
		io->nx = B * (size_t)(l->m * l->n);
		io->nx2 = B * (size_t)(l->n * l->k);
		io->ny = B * (size_t)(l->m * l->k);
		break;
	case PN_CONV2D: {
		size_t C = (size_t)l->in_channels, O = (size_t)l->out_channels;
		size_t X = (size_t)l->image, k = (size_t)l->kernel;
		size_t Y = (size_t)conv_out(l);
		io->nx = B * C * X * X;
		io->nw = O * C * k * k + (l->bias ? O : 0);
		io->ny = B * O * Y * Y;
		fan = (double)(C * k * k);
		break;
	}
	case PN_ATTENTION: {
		size_t E = (size_t)l->embed_dim;
		io->nx = io->ny = B * S * E;
		io->nw = 4 * E * E + 4 * E;
		fan = (double)E;
		break;
	}
	case PN_EMBEDDING:
		io->nidx = B * S;
		io->nw = (size_t)(l->vocab * l->embed_dim);
		io->ny = B * S * (size_t)l->embed_dim;
		fan = 1;
		break;
	case PN_RNN: case PN_LSTM: case PN_GRU: {
		size_t g = (size_t)pn_rnn_gates(l->type), H = (size_t)l->hidden;
		size_t d = l->bidirectional ? 2 : 1, I = (size_t)l->input_size;
		io->nx = S * B * I;
		io->ny = S * B * d * H;
		for (size_t k = 0; k < (size_t)l->layers; k++) {
			size_t in = k == 0 ? I : d * H;
			io->nw += d * (g * H * in + g * H * H + 2 * g * H);
		}
		fan = (double)H;
		break;
	}
	case PN_LAYERNORM:
		io->nx = io->ny = B * S * (size_t)l->dim;
		io->nw = 2 * (size_t)l->dim;
		break;
	case PN_SOFTMAX:
		io->nx = io->ny = B * S * (size_t)l->dim;
		break;
	case PN_ELEMENTWISE:
		io->nx = io->ny = B * S * (size_t)l->dim;
		if (pn_elem_binary(l->op))
			io->nx2 = io->nx;
		break;
	case PN_POSENC:
		io->nx = io->ny = B * S * (size_t)l->embed_dim;
		break;
	default:
		PN_BUG("pn_io_init: layer type");
	}
	io->x = alloc(io->nx);
	io->dx = alloc(io->nx);
	io->x2 = alloc(io->nx2);
	io->dx2 = alloc(io->nx2);
	io->w = alloc(io->nw);
	io->dw = alloc(io->nw);
	io->y = alloc(io->ny);
	io->dy = alloc(io->ny);
	io->idx = io->nidx ? pn_xcalloc(io->nidx, sizeof(int32_t)) : NULL;

	pn_rng r;
	pn_rng_seed(&r, seed);
	int pos = l->type == PN_ELEMENTWISE && strcmp(l->op, "pow") == 0;
	pn_rng_fill(&r, io->x, io->nx, pos ? 0.5f : -1, pos ? 1.5f : 1);
	pn_rng_fill(&r, io->x2, io->nx2, 0.5f, 1.5f);
	float a = (float)(1 / sqrt(fan));
	pn_rng_fill(&r, io->w, io->nw, -a, a);
	if (l->type == PN_LAYERNORM) {
		size_t D = (size_t)l->dim;
		pn_rng_fill(&r, io->w, D, 0.5f, 1.5f);
		pn_rng_fill(&r, io->w + D, D, -0.5f, 0.5f);
	}
	pn_rng_fill(&r, io->dy, io->ny, -1, 1);
	for (size_t i = 0; i < io->nidx; i++)
		io->idx[i] = (int32_t)pn_rng_int(&r, 0, (long long)l->vocab - 1);
}

void pn_io_free(pn_io *io)
{
	free(io->x);
	free(io->x2);
	free(io->dx);
	free(io->dx2);
	free(io->w);
	free(io->dw);
	free(io->y);
	free(io->dy);
	free(io->idx);
	memset(io, 0, sizeof *io);
}

int pn_opt_states(int opt)
{
	switch (opt) {
	case PN_OPT_ADAM: case PN_OPT_ADADELTA: return 2;
	case PN_OPT_ADAGRAD: case PN_OPT_RMSPROP: return 1;
	default: return 0;
	}
}

VEC void pn_opt_update(int opt, float lr, long t, size_t n, float *w,
		   const float *g, float *s1, float *s2)
{
	switch (opt) {
	case PN_OPT_SGD:
		for (size_t i = 0; i < n; i++)
			w[i] -= lr * g[i];
		break;
	case PN_OPT_ADAM: {
		float c1 = 1 - powf(PN_ADAM_B1, (float)t);
		float c2 = 1 - powf(PN_ADAM_B2, (float)t);
		float step = lr / c1, rc2 = 1 / sqrtf(c2);
		for (size_t i = 0; i < n; i++) {
			s1[i] = PN_ADAM_B1 * s1[i] + (1 - PN_ADAM_B1) * g[i];
			s2[i] = PN_ADAM_B2 * s2[i] + (1 - PN_ADAM_B2) * g[i] * g[i];
			w[i] -= step * s1[i] / (sqrtf(s2[i]) * rc2 + PN_ADAM_EPS);
		}
		break;
	}
	case PN_OPT_ADAGRAD:
		for (size_t i = 0; i < n; i++) {
			s1[i] += g[i] * g[i];
			w[i] -= lr * g[i] / (sqrtf(s1[i]) + PN_ADAGRAD_EPS);
		}
		break;
	case PN_OPT_ADADELTA: {
		const float rho = PN_ADADELTA_RHO, eps = PN_ADADELTA_EPS;
		for (size_t i = 0; i < n; i++) {
			s1[i] = rho * s1[i] + (1 - rho) * g[i] * g[i];
			float d = sqrtf(s2[i] + eps) / sqrtf(s1[i] + eps) * g[i];
			s2[i] = rho * s2[i] + (1 - rho) * d * d;
			w[i] -= lr * d;
		}
		break;
	}
	case PN_OPT_RMSPROP: {
		const float a = PN_RMSPROP_ALPHA;
		for (size_t i = 0; i < n; i++) {
			s1[i] = a * s1[i] + (1 - a) * g[i] * g[i];
			w[i] -= lr * g[i] / (sqrtf(s1[i]) + PN_RMSPROP_EPS);
		}
		break;
	}
	default:
		break;
	}
}

void pn_posenc_table(float *pe, long S, long E)
{
	for (long i = 0; i < E; i++) {
		double f = exp(-(double)i * log(10000.0) / (double)E);
		for (long s = 0; s < S; s++)
			pe[s * E + i] = (float)(i % 2 ? cos((double)s * f) :
						 sin((double)s * f));
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void pn_stats(double *x, int n, double *median, double *min, double *max,
	      double *sd)
{
	double sum = 0, ss = 0;
	for (int i = 0; i < n; i++)
		sum += x[i];
	double mean = sum / n;
	for (int i = 0; i < n; i++)
		ss += (x[i] - mean) * (x[i] - mean);
	qsort(x, (size_t)n, sizeof *x, cmp);
	*median = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
	*min = x[0];
	*max = x[n - 1];
	*sd = sqrt(ss / n);
}
