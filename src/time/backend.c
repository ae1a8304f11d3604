#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bf16.h"
#include "err.h"
#include "rng.h"

const char *pn_status_name(int status)
{
	static const char *const names[] = {"ok", "oom", "invalid", "error"};
	return (unsigned)status < 4 ? names[status] : "?";
}

static float *alloc(size_t n)
{
	return n ? pn_xcalloc(n, sizeof(float)) : NULL;
}

/* Elements of each array of pn_io for l, in double so that no size
 * overflows; the fan-in of the weights, for their scale. */
static void io_sizes(const pn_layer *l, double *nx, double *nx2,
		     double *nidx, double *nw, double *ny, double *fan)
{
	double B = l->batch, S = l->seq_len;
	*nx = *nx2 = *nidx = *nw = *ny = 0;
	*fan = 1;
	switch (l->type) {
	case PN_DENSE: {
		double I = l->in_features, O = l->out_features;
		*nx = B * I;
		*nw = O * I + (l->bias ? O : 0);
		*ny = B * O;
		*fan = I;
		break;
	}
	case PN_BMM:
		*nx = B * (l->m * l->n);
		*nx2 = B * (l->n * l->k);
		*ny = B * (l->m * l->k);
		break;
	case PN_CONV2D: {
		double C = l->in_channels, O = l->out_channels;
		double X = l->image, k = l->kernel, Y = pn_conv_out(l);
		*nx = B * C * X * X;
		*nw = O * C * k * k + (l->bias ? O : 0);
		*ny = B * O * Y * Y;
		*fan = C * k * k;
		break;
	}
	case PN_ATTENTION: {
		double E = l->embed_dim;
		*nx = *ny = B * S * E;
		*nw = 4 * E * E + 4 * E;
		*fan = E;
		break;
	}
	case PN_EMBEDDING:
		*nidx = B * S;
		*nw = l->vocab * l->embed_dim;
		*ny = B * S * l->embed_dim;
		break;
	case PN_RNN: case PN_LSTM: case PN_GRU: {
		double H = l->hidden, d = l->bidirectional ? 2 : 1;
		*nx = S * B * l->input_size;
		*ny = S * B * d * H;
		*nw = pn_rnn_weights(l);
		*fan = H;
		break;
	}
	case PN_LAYERNORM:
		*nx = *ny = B * S * l->dim;
		*nw = 2 * l->dim;
		break;
	case PN_SOFTMAX:
		*nx = *ny = B * S * l->dim;
		break;
	case PN_XENT:
		*nx = *ny = B * S * l->dim;
		*nidx = B * S;
		break;
	case PN_ELEMENTWISE:
		*nx = *ny = B * S * l->dim;
		if (pn_elem_binary(l->op))
			*nx2 = *nx;
		break;
	case PN_POSENC:
		*nx = *ny = B * S * l->embed_dim;
		break;
	case PN_BATCHNORM:
		*nx = *ny = B * l->in_channels * l->image * l->image;
		*nw = 2 * l->in_channels;
		break;
	case PN_POOL: {
		double Y = pn_conv_out(l);
		*nx = B * l->in_channels * l->image * l->image;
		*ny = B * l->in_channels * Y * Y;
		break;
	}
	default:
		PN_BUG("pn_io_init: layer type");
	}
}

double pn_io_bytes(const pn_config *cfg)
{
	double nx, nx2, nidx, nw, ny, fan;
	io_sizes(&cfg->l, &nx, &nx2, &nidx, &nw, &ny, &fan);
	return (nx + nx2 + nw + ny) * (cfg->l.bytes > 0 ? cfg->l.bytes : 4) +
	       nidx * 4;
}

void pn_io_init(pn_io *io, const pn_config *cfg, uint64_t seed)
{
	const pn_layer *l = &cfg->l;
	double nx, nx2, nidx, nw, ny, fan;
	io_sizes(l, &nx, &nx2, &nidx, &nw, &ny, &fan);
	memset(io, 0, sizeof *io);
	io->nx = (size_t)nx;
	io->nx2 = (size_t)nx2;
	io->nidx = (size_t)nidx;
	io->nw = (size_t)nw;
	io->ny = (size_t)ny;
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
	if (l->type == PN_LAYERNORM || l->type == PN_BATCHNORM) {
		/* a scale about 1 and a shift about 0, as trained */
		size_t D = io->nw / 2;
		pn_rng_fill(&r, io->w, D, 0.5f, 1.5f);
		pn_rng_fill(&r, io->w + D, D, -0.5f, 0.5f);
	}
	pn_rng_fill(&r, io->dy, io->ny, -1, 1);
	/* embedding: rows of the table; xent: classes */
	double nidx_max = l->type == PN_XENT ? l->dim : l->vocab;
	for (size_t i = 0; i < io->nidx; i++)
		io->idx[i] = (int32_t)pn_rng_int(&r, 0, (long long)nidx_max - 1);
	if (cfg->prec == PN_BF16 || cfg->prec == PN_FP16) {
		float *in[] = {io->x, io->x2, io->w, io->dy};
		size_t len[] = {io->nx, io->nx2, io->nw, io->ny};
		int bf = cfg->prec == PN_BF16;
		for (int k = 0; k < 4; k++)
			for (size_t i = 0; i < len[k]; i++)
				in[k][i] = bf ? pn_bf16_round(in[k][i]) :
					   pn_fp16_round(in[k][i]);
	}
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
