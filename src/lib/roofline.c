#include <math.h>

#include "featurize.h"
#include "roofline.h"

#define GIB 1073741824.0    /* 2^30: NeuSight's bytes */

double pn_peak_gflops(const pn_gpu *g, int bytes)
{
	if (bytes == 2 && !isnan(g->fp16_gflops))
		return g->fp16_gflops;
	return g->fp32_gflops;
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

double pn_roofline_ms(const pn_layer *l, double traffic, const pn_gpu *g)
{
	double bw = g->mem_bw_gbs, peak = pn_peak_gflops(g, l->bytes);
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
