#include <math.h>
#include <stddef.h>

#include "err.h"
#include "featurize.h"
#include "roofline.h"

#define GIB 1073741824.0    /* 2^30: NeuSight's bytes */

/* The rules of roofline.h's table: per precision and unit (0 vector, 1
 * matrix), up to two columns tried in order, then the larger of vec (when
 * not NULL) and fp32_gflops. */
typedef struct {
	const char *name;
	size_t off;
} speccol;

#define COL(c) {#c, offsetof(pn_gpu, c)}
#define NONE {NULL, 0}
static const struct {
	speccol first[2], vec;
} rules[PN_NPREC][2] = {
	[PN_FP32] = {{{NONE, NONE}, NONE},
		     {{COL(fp32_tc_gflops), NONE}, NONE}},
	[PN_TF32] = {{{NONE, NONE}, NONE},
		     {{COL(tf32_gflops), COL(fp32_tc_gflops)}, NONE}},
	[PN_FP16] = {{{NONE, NONE}, COL(fp16_vec_gflops)},
		     {{COL(fp16_gflops), NONE}, COL(fp16_vec_gflops)}},
	[PN_BF16] = {{{NONE, NONE}, COL(bf16_vec_gflops)},
		     {{COL(bf16_gflops), NONE}, COL(bf16_vec_gflops)}},
};

static double spec(const pn_gpu *g, speccol c)
{
	return c.name ? *(const double *)((const char *)g + c.off) : NAN;
}

int pn_unit_matrix(pn_layer_type t)
{
	switch (t) {
	case PN_DENSE: case PN_BMM: case PN_CONV2D: case PN_ATTENTION:
	case PN_RNN: case PN_LSTM: case PN_GRU:
		return 1;
	default:
		return 0;
	}
}

pn_peak pn_unit_peak(const pn_gpu *g, pn_layer_type t, pn_prec p)
{
	if ((unsigned)p >= PN_NPREC)
		PN_BUG("no such precision");
	int m = pn_unit_matrix(t);
	/* a CPU's fp32 products of these types run on its BLAS; TF32 is a
	 * GPU's mode of fp32 GEMMs, and on a CPU the same fp32 GEMM */
	int blas = t == PN_DENSE || t == PN_BMM || t == PN_ATTENTION;
	if (blas && (p == PN_FP32 || p == PN_TF32) &&
	    !isnan(g->blas_fp32_gflops))
		return (pn_peak){g->blas_fp32_gflops, "blas_fp32_gflops"};
	for (int i = 0; i < 2; i++)
		if (!isnan(spec(g, rules[p][m].first[i])))
			return (pn_peak){spec(g, rules[p][m].first[i]),
					 rules[p][m].first[i].name};
	double v = spec(g, rules[p][m].vec);
	if (!isnan(v) && v > g->fp32_gflops)
		return (pn_peak){v, rules[p][m].vec.name};
	return (pn_peak){g->fp32_gflops, "fp32_gflops"};
}

double pn_roofline_time_ms(double flops, double traffic, double peak,
			   double bw, double *compute_ms, double *memory_ms)
{
	*compute_ms = flops / (peak * 1e9) * 1e3;
	*memory_ms = traffic / (bw * 1e9) * 1e3;
	return *compute_ms > *memory_ms ? *compute_ms : *memory_ms;
}

double pn_roofline_gemm_ms(double B, double M, double N, double K, double e,
			   double peak, double bw)
{
	double flops = 2.0 * B * (M * N * K) / 1e9;
	double mem = e * B * (M * N + N * K + M * K) / GIB;
	double ai = flops / mem;
	double roof = peak < ai * bw ? peak : ai * bw;
	return flops / roof * 1e3;
}

double pn_roofline_vec_ms(double traffic, double bw)
{
	return traffic / 1e9 / bw * 1e3;
}

double pn_roofline_mem_ms(double traffic, double bw)
{
	return traffic / (bw * GIB) * 1e3;
}

double pn_recurrence_ms(const pn_layer *l)
{
	if (l->type != PN_RNN && l->type != PN_LSTM && l->type != PN_GRU)
		return 0;
	double step = 0.020 + (l->train ? 0.025 : 0);
	return l->layers * l->seq_len * (l->bidirectional ? 1.6 : 1) * step;
}

/* pn_roofline_ms without the recurrence */
static double roofline_ms(const pn_layer *l, double traffic, const pn_gpu *g)
{
	double bw = g->mem_bw_gbs;
	double peak = pn_unit_peak(g, l->type, l->prec).gflops;
	pn_work w;
	if (!l->train) {
		switch (l->type) {
		case PN_DENSE:
			return pn_roofline_gemm_ms(1, l->batch, l->in_features,
						   l->out_features, l->bytes,
						   peak, bw);
		case PN_BMM:
			return pn_roofline_gemm_ms(l->batch, l->m, l->n, l->k,
						   l->bytes, peak, bw);
		case PN_LAYERNORM: case PN_SOFTMAX: case PN_ELEMENTWISE:
		case PN_XENT:
			if (traffic <= 0) {
				pn_layer_work(l, &w);
				traffic = w.traffic;
			}
			return pn_roofline_vec_ms(traffic, bw);
		case PN_MEM:
			if (traffic <= 0)
				traffic = l->bytes * l->elements;
			return pn_roofline_mem_ms(traffic, bw);
		default:
			break;
		}
	}
	double f[PN_F_N];
	pn_feature_row(l, traffic, g, f);
	return f[PN_F_ROOFLINE_MS];
}

double pn_roofline_ms(const pn_layer *l, double traffic, const pn_gpu *g)
{
	double t = roofline_ms(l, traffic, g);
	return pn_gpu_is_cpu(g) ? t : t + pn_recurrence_ms(l);
}
