/* featurize.h - the features pn-featurize(1) appends to a layer row, as a
 * function of the layer's work (layer.h) and the device's spec sheet.
 *
 * The formulas are pn-featurize(1)'s: compute time flops / peak, memory time
 * traffic / bandwidth, the roofline time their maximum (roofline.h: pn's
 * roofline, 10^9 units), waves of tiles over the SMs, and the device's own
 * columns.  pn-featurize(1) writes them in the order of pn_feature_names;
 * pn-sum(1) builds the same columns for a network row on each device it
 * predicts, both through pn_feature_row, so a model fitted on featurized
 * rows sees the same inputs at prediction time.
 */
#ifndef PN_FEATURIZE_H
#define PN_FEATURIZE_H

#include <stddef.h>

#include "gpuspec.h"
#include "layer.h"
#include "roofline.h"

enum {
	PN_F_FLOPS, PN_F_CO, PN_F_CM_WEIGHTS, PN_F_CM_IN, PN_F_CM_OUT,
	PN_F_CM_TOTAL, PN_F_TRAFFIC, PN_F_CT_MS, PN_F_AI, PN_F_COMPUTE_MS,
	PN_F_MEMORY_MS, PN_F_ROOFLINE_MS, PN_F_TILES, PN_F_WAVES,
	PN_F_WAVE_EFF, PN_F_RIDGE_RATIO, PN_F_GPU_SMS, PN_F_GPU_CORES, PN_F_GPU_BOOST_MHZ,
	PN_F_GPU_MEM_GB, PN_F_GPU_MEM_BW_GBS, PN_F_GPU_L2_MB,
	PN_F_GPU_FP32_GFLOPS, PN_F_GPU_PEAK_GFLOPS,
	PN_F_N
};

/* Column names, indexed by PN_F_*: "flops" ... "gpu_peak_gflops". */
extern const char *const pn_feature_names[PN_F_N];

/* The feature columns f[PN_F_N] of layer l on GPU g: its work
 * (pn_layer_work), with traffic bytes instead of the estimate when traffic
 * > 0 (a network's traffic_bytes).  Never fails; a GPU without a core count
 * gives gpu_cores 0. */
void pn_feature_row(const pn_layer *l, double traffic, const pn_gpu *g,
		    double *f);

#endif
