#include <math.h>

#include "featurize.h"

const char *const pn_feature_names[PN_F_N] = {
	"flops", "co", "cm_weights", "cm_in", "cm_out", "cm_total",
	"traffic", "ct_ms", "ai", "compute_ms", "memory_ms", "roofline_ms",
	"tiles", "waves", "wave_eff", "ridge_ratio", "gpu_sms", "gpu_cores", "gpu_boost_mhz",
	"gpu_mem_gb", "gpu_mem_bw_gbs", "gpu_l2_mb", "gpu_fp32_gflops",
	"gpu_peak_gflops",
};

void pn_feature_row(const pn_layer *l, double traffic, const pn_gpu *g,
		    double *f)
{
	pn_work work, *w = &work;
	pn_layer_work(l, w);
	if (traffic > 0)
		w->traffic = traffic;
	double gflops = pn_peak_gflops(g, l->bytes);
	double peak = gflops * 1e9;                          /* FLOP/s */
	double compute, memory;
	double roof = pn_roofline_time_ms(w->flops, w->traffic, gflops,
					  g->mem_bw_gbs, &compute, &memory);
	double waves = ceil(w->tiles / g->sms);
	f[PN_F_FLOPS] = w->flops;
	f[PN_F_CO] = w->co;
	f[PN_F_CM_WEIGHTS] = w->cm_weights;
	f[PN_F_CM_IN] = w->cm_in;
	f[PN_F_CM_OUT] = w->cm_out;
	f[PN_F_CM_TOTAL] = w->cm_total;
	f[PN_F_TRAFFIC] = w->traffic;
	f[PN_F_CT_MS] = w->co / peak * 1e3;
	f[PN_F_AI] = w->flops / w->traffic;
	f[PN_F_COMPUTE_MS] = compute;
	f[PN_F_MEMORY_MS] = memory;
	f[PN_F_ROOFLINE_MS] = roof;
	f[PN_F_TILES] = w->tiles;
	f[PN_F_WAVES] = waves;
	f[PN_F_WAVE_EFF] = w->tiles / (waves * g->sms);
	/* ai over the ridge point peak / bandwidth; 0 for an op without
	 * traffic (no such op is memory-bound) */
	f[PN_F_RIDGE_RATIO] = memory > 0 ? compute / memory : 0;
	f[PN_F_GPU_SMS] = g->sms;
	f[PN_F_GPU_CORES] = isnan(g->cores) ? 0 : g->cores;
	f[PN_F_GPU_BOOST_MHZ] = g->boost_mhz;
	f[PN_F_GPU_MEM_GB] = g->mem_gb;
	f[PN_F_GPU_MEM_BW_GBS] = g->mem_bw_gbs;
	f[PN_F_GPU_L2_MB] = g->l2_mb;
	f[PN_F_GPU_FP32_GFLOPS] = g->fp32_gflops;
	f[PN_F_GPU_PEAK_GFLOPS] = peak / 1e9;
}
