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
 *
 * lat_ms (feature set lat) is the time of a latency-bound kernel:
 * max(compute_ms, m) + 5000 cycles at the boost clock, m the memory time of
 * the bytes the kernel touches (traffic; a forward embedding's gathered
 * rows, not its table): bytes / bandwidth, plus bytes / (SMs x clock x 8)
 * for a latency-bound kernel (layernorm, softmax, xent, batchnorm, posenc, a
 * gated elementwise op, an embedding of pass train), at least bytes / (SMs
 * x clock x 2) for a gather (an embedding of pass fwd); a streaming
 * elementwise op (every other op), pool and mem: bytes / bandwidth, as a
 * GEMM.
 *
 * l2_ms (feature set l2) is lat_ms with the L2 for a streaming kernel (a
 * streaming elementwise op, pool, mem): its b bytes (traffic, the working
 * set: inputs and output) come from the L2 in the share h = 1 / (1 + r^2)
 * of them, r = b / (gpu_l2_mb x 10^6), and from DRAM in the rest:
 * m = b x (h / (SMs x clock x 5120 / 108) + (1 - h) / bandwidth), the L2's
 * bandwidth the A100's 5120 bytes a clock over its 108 SMs, for each SM;
 * l2_ms = max(compute_ms, m) + the floor.  Every other kind: l2_ms = lat_ms.
 * lane_compute_ms and lane_roofline_ms (feature set lane) are compute_ms and
 * roofline_ms at the peak of the FP32 lanes per SM that share no datapath
 * with INT32 (the spec column fp32_lanes): fp32_gflops x min(1, fp32_lanes
 * x sms / cores) for a GEMM-like row (pn_unit_matrix) whose unit peak is
 * fp32_gflops (pn_unit_peak), half the listed peak on GA10x and Ada, the
 * listed peak on every other NVIDIA GPU the table has; a vector op, a row
 * on another unit, or a GPU whose fp32_lanes or cores is NA, has the
 * listed peak (the columns equal compute_ms and roofline_ms).
 *
 * pad_co and cpu_ms (feature set cpu) describe a oneDNN kernel on one
 * AVX-512 CPU core (a device row of pn-time --cpu-spec; on a GPU's row
 * they are computed by the same formulas and mean nothing).  The padding
 * p of a conv2d is c' / c for each channel count c (in and out) rounded
 * up to c', a multiple of oneDNN's 16-channel blocks (nChw16c); 1 for the
 * other types.  pad_co = co x p.  cpu_ms = calls x 2000 cycles at the
 * boost clock (calls: 1 fwd, 3 train) + max(flops x p / peak, m) + c:
 * peak the unit peak (pn_unit_peak), m the memory time of the traffic b
 * with the share h = 1 / (1 + r^2) of it, r = b / (gpu_l2_mb x 10^6) (the
 * last-level cache on a CPU), from that cache at 16 bytes a cycle and the
 * rest at mem_bw_gbs; c, for a vector type (not pn_unit_matrix) at 2
 * bytes a element, the conversion of its b / 2 elements to fp32 and back,
 * 2 lane ops each at fp32_gflops / 2, else 0; + d, the dropout mask's
 * branches: its elements (an attention's batch x heads x seq_len^2
 * scores, an elementwise dropout's elements, a stacked rnn's batch x
 * seq_len x hidden x directions x (layers - 1); twice in a train row) x
 * min(p, 1 - p) x 40 cycles, p = mask_p; + o, a train row's optimizer
 * step with an optimizer: 1500 cycles + its weight elements x (0.25 sgd,
 * 1.3 adadelta, 0.8 the others; 2 more in bf16); + a, a dense or conv2d
 * with an activation: its output elements x (1.2 cycles for sigmoid or
 * tanh, + 0.6 for any in a train row).  A conv2d's max(flops x p / peak, m)
 * is instead the sum of its passes' padded flops at the peak (forward:
 * the output channels only when in_channels < 16, oneDNN then reading a
 * plain source; backward: both) and one cycle for each element of its
 * input, output (twice) and weights forward, and again for input,
 * output and weights twice in training (pn-time's layout reorders).
 * mask_p (set cpu) is the rate of the dropout mask the row draws (layer.h's
 * dropout): an attention's, an elementwise dropout's, a stacked rnn lstm
 * or gru's (layers > 1) between its layers; 0 for every other row.
 * pn-time draws each mask element with a branch, so the time grows with
 * the rate (mispredicted branches; cpu_ms's d).  vec_tail (set cpu) is, on a CPU row
 * (arch CPU...), the innermost dimension (dim) of a vector op (layernorm,
 * softmax, elementwise) modulo the fp32 lanes of the CPU's vectors (16 for
 * arch CPU-AVX512, 8 for CPU-AVX2, 4 otherwise): the elements a row leaves
 * to the masked tail of each vector loop; 0 for every other row and on a
 * GPU.
 * pn-featurize(1) gives the reasons.
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
	/* per-SM and per-wave quantities (set nsw, pn_feature_waves) */
	PN_F_WAVE_ROOFLINE_MS, PN_F_SM_COMPUTE_MS, PN_F_SM_MEMORY_MS,
	PN_F_L2_RATIO, PN_F_WAVE_L2_RATIO,
	PN_F_LAT_MS,            /* set lat: a latency-bound kernel's time */
	PN_F_L2_MS,             /* set l2: lat_ms with the L2 */
	/* set lane: the roofline at the FP32 lanes that own their datapath */
	PN_F_LANE_COMPUTE_MS, PN_F_LANE_ROOFLINE_MS,
	/* set cpu: a oneDNN kernel on a CPU core */
	PN_F_PAD_CO, PN_F_CPU_MS, PN_F_MASK_P, PN_F_VEC_TAIL,
	/* set power: the roofline at the clock a GPU's power limit holds */
	PN_F_POWER_COMPUTE_MS, PN_F_POWER_ROOFLINE_MS,
	PN_F_N
};

/* Column names, indexed by PN_F_*: "flops" ... "lat_ms", "l2_ms",
 * "lane_compute_ms", "lane_roofline_ms", "pad_co", "cpu_ms", ...,
 * "power_compute_ms", "power_roofline_ms". */
extern const char *const pn_feature_names[PN_F_N];

/* The feature columns f[PN_F_N] of layer l on GPU g: its work
 * (pn_layer_work), with traffic bytes instead of the estimate when traffic
 * > 0 (a network's traffic_bytes).  Never fails; a GPU without a core count
 * gives gpu_cores 0. */
void pn_feature_row(const pn_layer *l, double traffic, const pn_gpu *g,
		    double *f);


/* ---- feature sets -------------------------------------------------------
 *
 * The named sets of model inputs that pn-fit(1) --features takes (its --help
 * text is written from this table).  A set's columns, in order: the
 * dimension columns of every layer type among the rows (layer.h) and the
 * categorical configuration columns of pn_feature_config that hold a value;
 * then the feature columns of the set it extends (base), or, with no base
 * and spec set, the spec-sheet columns gpu_sms ... gpu_fp32_gflops; then its
 * own feature columns.
 */
#include <stdio.h>

typedef struct {
	const char *name;
	int base;               /* index of the set it extends, or -1 */
	int spec;               /* no base: the spec-sheet columns */
	int nown;
	const int *own;         /* PN_F_* columns added, nown of them */
	const char *about;      /* for --help: what the set is for, or NULL */
} pn_feature_set;

/* The sets, a NULL name last: baseline co cocm cocmct phys rel nsw lat l2
 * lane cpu. */
extern const pn_feature_set pn_feature_sets[];
/* The configuration columns that are always categorical, NULL last: op
 * optimizer activation precision pass. */
extern const char *const pn_feature_config[];

/* The set named name, or NULL. */
const pn_feature_set *pn_feature_set_find(const char *name);
/* Call add(arg, k) for each feature column k (a PN_F_* index) of set s
 * after the dimension and configuration columns, in order. */
void pn_feature_set_each(const pn_feature_set *s,
			 void (*add)(void *arg, int k), void *arg);
/* Describe every set on f, wrapped to 79 columns: "Feature sets: baseline
 * = ...; co = baseline + co; ...". */
void pn_feature_sets_help(FILE *f);

#endif
