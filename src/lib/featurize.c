#include <math.h>
#include <string.h>

#include "featurize.h"

const char *const pn_feature_names[PN_F_N] = {
	"flops", "co", "cm_weights", "cm_in", "cm_out", "cm_total",
	"traffic", "ct_ms", "ai", "compute_ms", "memory_ms", "roofline_ms",
	"tiles", "waves", "wave_eff", "ridge_ratio", "gpu_sms", "gpu_cores", "gpu_boost_mhz",
	"gpu_mem_gb", "gpu_mem_bw_gbs", "gpu_l2_mb", "gpu_fp32_gflops",
	"gpu_peak_gflops", "wave_roofline_ms", "sm_compute_ms", "sm_memory_ms",
	"l2_ratio", "wave_l2_ratio", "lat_ms", "l2_ms", "lane_compute_ms",
	"lane_roofline_ms", "pad_co", "cpu_ms", "mask_p", "vec_tail",
	"power_compute_ms", "power_roofline_ms",
};

/* NeuSight's view of an op: whole waves of tiles over the SMs, each tile
 * run by one SM at its share of the peak and of the bandwidth, and the
 * bytes against the L2 (a working set that fits is served from it).  An op
 * without tiles counts as one. */
static void feature_waves(double tiles, double traffic, const pn_gpu *g,
			  double *f)
{
	double t = tiles >= 1 ? tiles : 1;
	double waves = ceil(t / g->sms);
	double l2 = g->l2_mb * 1e6;
	f[PN_F_WAVE_ROOFLINE_MS] = f[PN_F_ROOFLINE_MS] * waves * g->sms / t;
	f[PN_F_SM_COMPUTE_MS] = f[PN_F_COMPUTE_MS] * g->sms / t;
	f[PN_F_SM_MEMORY_MS] = f[PN_F_MEMORY_MS] * g->sms / t;
	f[PN_F_L2_RATIO] = traffic / l2;
	f[PN_F_WAVE_L2_RATIO] = traffic / t * (t < g->sms ? t : g->sms) / l2;
}

/* Latency-bound kernels (featurize.h, lat_ms): the bytes a kernel keeps in
 * flight per SM and cycle (Little's law: concurrency over latency), read off
 * the A100's fp16 rows at 4096 tokens; and the fixed cost of a kernel in
 * cycles (launch and the first wave's latency). */
#define LAT_ROW_BPC 8.0
#define LAT_GATHER_BPC 2.0
#define LAT_FLOOR_CYCLES 5000.0

/* Whether l's kernel is latency-bound (featurize.h): one block a row or
 * token that reduces or rotates it (norms, softmax, rotary, a gated op) or
 * an embedding's backward; a streaming elementwise op, a pool or a mem
 * pass streams at the bandwidth, as the roofline says. */
static int lat_bound(const pn_layer *l)
{
	switch (l->type) {
	case PN_LAYERNORM: case PN_SOFTMAX: case PN_BATCHNORM: case PN_POSENC:
	case PN_EMBEDDING: case PN_XENT:
		return 1;
	case PN_ELEMENTWISE:
		return pn_elem_gated(l->op);
	default:
		return 0;
	}
}

/* lat_ms (featurize.h); compute is compute_ms. */
static void lat_features(const pn_layer *l, const pn_work *w, double traffic,
			  const pn_gpu *g, double compute, double *f)
{
	double touch = w->traffic;
	int gather = l->type == PN_EMBEDDING && !l->train;
	if (gather && !(traffic > 0))   /* the rows it copies, not the table */
		touch -= w->cm_weights;
	double hz = g->boost_mhz * 1e6, sm_cycles = g->sms * hz;
	double dram = touch / (g->mem_bw_gbs * 1e9), mem = dram;
	if (gather)
		mem = fmax(dram, touch / (sm_cycles * LAT_GATHER_BPC));
	else if (lat_bound(l))
		mem = dram + touch / (sm_cycles * LAT_ROW_BPC);
	f[PN_F_LAT_MS] = (fmax(compute / 1e3, mem) + LAT_FLOOR_CYCLES / hz) *
			 1e3;
}

/* l2_ms (featurize.h): the L2's read bandwidth in bytes a cycle an SM, the
 * A100 whitepaper's 5120 bytes a clock over its 108 SMs (V100: 2048 over
 * 80, 25.6); and the share of a working set of r times the L2 that stays
 * in it between runs, 1 / (1 + r^2): a half at r = 1, 1% at r = 10, where
 * a cyclic stream through an LRU cache keeps none. */
#define L2_BPC_SM (5120.0 / 108)

/* Whether l's kernel streams its bytes (featurize.h): an elementwise op
 * other than a gated one, a pool or a mem pass. */
static int l2_streaming(const pn_layer *l)
{
	if (l->type == PN_ELEMENTWISE)
		return !pn_elem_gated(l->op);
	return l->type == PN_POOL || l->type == PN_MEM;
}

/* l2_ms (featurize.h): lat_ms, but a streaming kernel's bytes come from
 * the L2 in the share of its working set that fits there. */
static void l2_features(const pn_layer *l, const pn_work *w, const pn_gpu *g,
			double compute, double *f)
{
	f[PN_F_L2_MS] = f[PN_F_LAT_MS];
	if (!l2_streaming(l))
		return;
	double hz = g->boost_mhz * 1e6, b = w->traffic;
	double r = b / (g->l2_mb * 1e6), hit = 1 / (1 + r * r);
	double mem = b * (hit / (g->sms * hz * L2_BPC_SM) +
			  (1 - hit) / (g->mem_bw_gbs * 1e9));
	f[PN_F_L2_MS] = (fmax(compute / 1e3, mem) + LAT_FLOOR_CYCLES / hz) *
			1e3;
}

/* The lane columns (featurize.h): a GA10x or Ada SM lists 128 FP32 lanes,
 * but 64 of them run FP32 or INT32 in a cycle, and a GEMM's address and
 * load instructions compete for them; only the FP32 lanes with a datapath
 * of their own count.  A vector op streams at the bandwidth and keeps its
 * columns.  peak is the row's unit peak. */
static void lane_features(const pn_layer *l, const pn_work *w,
			  const pn_gpu *g, pn_peak peak, double *f)
{
	double gflops = peak.gflops, memory;
	if (pn_unit_matrix(l->type) && strcmp(peak.col, "fp32_gflops") == 0 &&
	    !isnan(g->fp32_lanes) && g->cores > 0)
		gflops *= fmin(1, g->fp32_lanes * g->sms / g->cores);
	f[PN_F_LANE_ROOFLINE_MS] = pn_roofline_time_ms(
		w->flops, w->traffic, gflops, g->mem_bw_gbs,
		&f[PN_F_LANE_COMPUTE_MS], &memory);
}

/* The power columns (featurize.h, set power): a GPU whose power limit is
 * low against its listed peak does not hold its listed clock under load.
 * Its alone GEMMs run at 0.29 of the listed FP32 peak on the L4 (2.4 W
 * per FP32 TFLOP/s), 0.48 on the T4 (8.6), 0.77-0.79 on the P4 and
 * A100-40GB (12.8-13.6), 0.87-0.94 on the A100-80GB and V100 (15.4-17.7)
 * (NeuSight's test rows; the P100, 26.8, at 0.72, is the exception).  The
 * row's unit peak is taken at g = (w / POWER_W0)^POWER_B, at most 1, w the
 * GPU's TDP over its listed FP32 TFLOP/s held at POWER_W_LO or more: the
 * lowest of the five training GPUs (the T4), below which no measured GPU
 * says how the law goes on (unbounded, it made the L4's whole models 30%
 * too slow).  POWER_W0 and POWER_B were chosen by leaving one training GPU
 * out (README, "A peak limited by power").  A device without a TDP (a
 * CPU) keeps its peak. */
#define POWER_W0 15.0
#define POWER_B 0.5
#define POWER_W_LO 8.6
static void power_features(const pn_work *w, const pn_gpu *g,
			   pn_peak peak, double *f)
{
	double gflops = peak.gflops, memory;
	if (g->tdp_w > 0 && g->fp32_gflops > 0) {
		double wpt = fmax(g->tdp_w / (g->fp32_gflops / 1e3),
				  POWER_W_LO);
		gflops *= fmin(1, pow(wpt / POWER_W0, POWER_B));
	}
	f[PN_F_POWER_ROOFLINE_MS] = pn_roofline_time_ms(
		w->flops, w->traffic, gflops, g->mem_bw_gbs,
		&f[PN_F_POWER_COMPUTE_MS], &memory);
}

/* The CPU columns (featurize.h, set cpu).  oneDNN blocks a convolution's
 * channels by 16 (nChw16c) and computes the padded lanes; a call costs a
 * fixed time, about 2000 cycles (the fastest fp32 fwd rows of
 * samples/cpu-bf16 take 0.6-1.3 us at 2.6 GHz); a working set that fits
 * the last-level cache streams from it at 16 bytes a cycle (AMD Zen 4's L3
 * gives a core 32 bytes a cycle; 16 fitted the fp32 rows of
 * samples/cpu-bf16 better); and a vector op on bf16 or fp16 converts each
 * element to fp32 and back, one vector lane op each, at half the FMA
 * peak.  Padding the innermost dimension of the other types to a 64-byte
 * vector made bench/bf16-transfer worse on its dev split (SEED=2), as did
 * L1d and L2 levels beside the last-level cache.  On AVX2 oneDNN blocks
 * by 8 (nChw8c), yet the block of 8 on an AVX2 device row made
 * bench/real-steps' dev cases on a Zen 1 VM worse (FEATURES=cpu TARGET=cpu,
 * samples/cpu's AVX-512 models: mean / max APE 12.5 / 37.8% with 16,
 * 17.5 / 54.8% with 8; LeNet's few-channel convolutions run slower there
 * than either), so the block is 16 on every device. */
#define CPU_CHAN_BLOCK 16.0
#define CPU_CALL_CYCLES 2000.0
#define CPU_LLC_BPC 16.0
/* pn-time draws a dropout mask element by element with a branch that a
 * predictor misses on min(p, 1 - p) of them: about 40 cycles each,
 * measured on one attention (4 x 4 heads x 256^2 scores, p from 0.1 to
 * 0.5: 37 cycles a miss in a forward row, 46 in a train row's forward;
 * the backward multiplies by the kept mask, without branches). */
#define CPU_MISS_CYCLES 40.0
/* pn-time's optimizer step on a CPU (src/cpu/core.c's fused loops): a
 * call, and per weight element the update's own cycles, 2 more in bf16
 * (the fp32 master weight: widen the gradient, narrow the weight); least
 * squares on samples/cpu-bf16's dense and conv2d train rows agree (2.0 to
 * 2.6 cycles a bf16 weight). */
#define CPU_OPT_CALL_CYCLES 1500.0
#define CPU_OPT_BF16_CYCLES 2.0
/* An activation after a dense or conv2d, per output element: sigmoid and
 * tanh about 1.2 cycles forward, and any activation's backward 0.6
 * (oneDNN eltwise, timed alone on 64 x 1024 rows). */
#define CPU_ACT_CYCLES 1.2
#define CPU_ACT_BWD_CYCLES 0.6

/* Elementwise ops whose CPU kernels compute more than they move: their
 * arithmetic per element, forward and backward, in fp32 FLOPs of the
 * vector units, from the median cycles an element of samples/cpu-bf16's
 * fp32 rows of 200,000 elements or more (fwd rows; a train row's
 * backward) times that CPU's fp32_gflops over its clock (108.8 GFLOP/s at
 * 2596 MHz: 41.9 a cycle).  A bf16 row computes in fp32 lanes too, so
 * its compute stays where its bytes halve: exp, sigmoid and tanh run
 * 0.86, 1.09 and 1.29 cycles an element forward in fp32 and 0.80, 1.07
 * and 1.21 in bf16, where a streaming op goes from 0.23 to 0.17.  A
 * backward whose time is its traffic (exp, sigmoid and tanh from their
 * output, about relu's 0.6 cycles) keeps the default; pow is pn-time's
 * scalar powf loop. */
static const struct {
	const char *op;
	double fwd, bwd;
} elem_flops[] = {
	{"exp", 36, 2}, {"sigmoid", 46, 2}, {"tanh", 54, 2},
	{"gelu", 67, 90}, {"silu_mul", 82, 120}, {"gelu_mul", 83, 140},
	{"pow", 470, 800},
};

/* The FLOPs of l's compute on a CPU: w's, but an elementwise op of
 * elem_flops's its own per element (the backward's in a train row). */
static double cpu_flops(const pn_layer *l, const pn_work *w)
{
	if (l->type != PN_ELEMENTWISE)
		return w->flops;
	for (size_t i = 0; i < sizeof elem_flops / sizeof *elem_flops; i++)
		if (strcmp(l->op, elem_flops[i].op) == 0)
			return pn_elem_count(l) * (elem_flops[i].fwd +
				(l->train ? elem_flops[i].bwd : 0));
	return w->flops;
}

/* d rounded up to a whole number of blocks of b, over d. */
static double pad_ratio(double d, double b)
{
	return d >= 1 ? ceil(d / b) * b / d : 1;
}

/* The padding of l's blocked dimensions (featurize.h, pad_co): a
 * convolution's channels to oneDNN's 16-channel blocks; 1 for the other
 * types. */
static double cpu_padding(const pn_layer *l)
{
	if (l->type != PN_CONV2D)
		return 1;
	return pad_ratio(l->in_channels, CPU_CHAN_BLOCK) *
	       pad_ratio(l->out_channels, CPU_CHAN_BLOCK);
}

/* The dropout rate of the mask l draws (featurize.h, mask_p). */
static double mask_rate(const pn_layer *l)
{
	return pn_layer_masks(l) ? l->dropout : 0;
}

/* The elements of the dropout mask l draws (featurize.h): an attention's
 * scores, an elementwise op's elements, the outputs of a recurrence's
 * lower layers; once in a train row too, whose backward multiplies by the
 * mask the forward kept (pn-time(1)).  The branch cost weighs them by
 * mask_rate's misses, 0 where no mask is drawn. */
static double mask_elements(const pn_layer *l)
{
	double n;
	switch (l->type) {
	case PN_ATTENTION:
		n = l->batch * l->heads * l->seq_len * l->seq_len;
		break;
	case PN_ELEMENTWISE:
		n = pn_elem_count(l);
		break;
	case PN_RNN: case PN_LSTM: case PN_GRU:
		n = l->batch * l->seq_len * l->hidden * (1 + l->bidirectional) *
		    (l->layers - 1);
		break;
	default:
		return 0;
	}
	return n;
}

/* Cycles of pn-time's optimizer step per weight element, by optimizer
 * (its passes over the weight and its state; least squares on
 * samples/cpu-bf16's fp32 dense and conv2d train rows). */
static double opt_cycles(int optimizer)
{
	switch (optimizer) {
	case PN_OPT_SGD: return 0.25;
	case PN_OPT_ADADELTA: return 1.3;
	default: return 0.8;    /* adam adagrad rmsprop */
	}
}

/* The optimizer step and the activation of l in cycles (featurize.h,
 * cpu_ms's o and a). */
static double step_cycles(const pn_layer *l, const pn_work *w)
{
	double cyc = 0;
	if (l->train && l->optimizer != PN_OPT_NONE && w->cm_weights > 0)
		cyc += CPU_OPT_CALL_CYCLES + w->cm_weights / l->bytes *
		       (opt_cycles(l->optimizer) +
			(l->bytes == 2 ? CPU_OPT_BF16_CYCLES : 0));
	if ((l->type == PN_DENSE || l->type == PN_CONV2D) &&
	    l->activation != PN_ACT_NONE) {
		double y = w->cm_out / l->bytes, sg = l->activation ==
			   PN_ACT_SIGMOID || l->activation == PN_ACT_TANH;
		cyc += y * (sg * CPU_ACT_CYCLES +
			    (l->train ? CPU_ACT_BWD_CYCLES : 0));
	}
	return cyc;
}

/* The fp32 lanes of a CPU's vectors, from its arch (pn-time --cpu-spec);
 * 0 on a GPU. */
static double cpu_lanes(const pn_gpu *g)
{
	if (!pn_gpu_is_cpu(g))
		return 0;
	return strcmp(g->arch, "CPU-AVX512") == 0 ? 16 :
	       strcmp(g->arch, "CPU-AVX2") == 0 ? 8 : 4;
}

/* A convolution's compute and layout work in seconds (featurize.h): its
 * forward reads a plain source when it has fewer than 16 input channels
 * (only the output channels padded), its backward passes blocked layouts
 * (both padded); pn-time's reorders to and from them cost about a cycle
 * an element, whatever its bytes. */
static double conv_seconds(const pn_layer *l, const pn_work *w, double hz,
			   double peak)
{
	double C = l->in_channels, O = l->out_channels, k = l->kernel;
	double Y = pn_conv_out(l), B = l->batch;
	double x = B * C * l->image * l->image, y = B * O * Y * Y, wt = O * C * k * k;
	double pc = pad_ratio(C, CPU_CHAN_BLOCK), po = pad_ratio(O, CPU_CHAN_BLOCK);
	double passes = l->train ? (l->no_input_grad ? 2 : 3) : 1;
	double fwd = w->flops / passes;
	double t = fwd * (C < CPU_CHAN_BLOCK ? 1 : pc) * po / peak +
		   (x + 2 * y + wt) / hz;
	if (l->train)
		t += (passes - 1) * fwd * pc * po / peak +
		     (2 * x + 2 * y + 2 * wt) / hz;
	return t;
}

/* pad_co, cpu_ms, mask_p and vec_tail (featurize.h); peak is the row's
 * unit peak, GFLOP/s.  A train row of an elementwise op whose gradient
 * passes (pn_elem_passes_grad) is its forward: one call, its work. */
static void cpu_features(const pn_layer *l, const pn_work *w,
			 const pn_gpu *g, double peak, double *f)
{
	pn_layer fl;
	pn_work fw;
	if (l->type == PN_ELEMENTWISE && l->train &&
	    pn_elem_passes_grad(l->op)) {
		fl = *l;
		fl.train = 0;
		fl.optimizer = PN_OPT_NONE;
		pn_layer_work(&fl, &fw);
		l = &fl;
		w = &fw;
	}
	double pad = cpu_padding(l), hz = g->boost_mhz * 1e6, b = w->traffic;
	double r = b / (g->l2_mb * 1e6), hit = 1 / (1 + r * r);
	double mem = b * (hit / (CPU_LLC_BPC * hz) +
			  (1 - hit) / (g->mem_bw_gbs * 1e9));
	double work = l->type == PN_CONV2D ?
		      conv_seconds(l, w, hz, peak * 1e9) :
		      fmax(cpu_flops(l, w) * pad / (peak * 1e9), mem);
	double cvt = 0;
	if (!pn_unit_matrix(l->type) && l->bytes == 2)
		cvt = 2 * (b / 2) / (g->fp32_gflops * 1e9 / 2);
	/* forward, backward data (not with input_grad 0), backward weights */
	double calls = l->train ? (l->no_input_grad ? 2 : 3) : 1;
	double p = mask_rate(l), miss = p < 1 - p ? p : 1 - p;
	double branch = mask_elements(l) * miss * CPU_MISS_CYCLES / hz;
	f[PN_F_PAD_CO] = w->co * pad;
	f[PN_F_CPU_MS] = (calls * CPU_CALL_CYCLES / hz + work + cvt + branch +
			  step_cycles(l, w) / hz) * 1e3;
	f[PN_F_MASK_P] = p;
	double lanes = cpu_lanes(g);
	f[PN_F_VEC_TAIL] = lanes > 0 && pn_layer_defs[l->type].vector ?
			   fmod(l->dim, lanes) : 0;
}

void pn_feature_row(const pn_layer *l, double traffic, const pn_gpu *g,
		    double *f)
{
	pn_work work, *w = &work;
	pn_layer_work(l, w);
	if (traffic > 0)
		w->traffic = traffic;
	pn_peak unit = pn_unit_peak(g, l->type, l->prec);
	double gflops = unit.gflops;
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
	feature_waves(w->tiles, w->traffic, g, f);
	lat_features(l, w, traffic, g, compute, f);
	l2_features(l, w, g, compute, f);
	lane_features(l, w, g, unit, f);
	cpu_features(l, w, g, gflops, f);
	power_features(w, g, unit, f);
}

/* ---- feature sets ------------------------------------------------------- */

static const int f_co[] = {PN_F_CO};
static const int f_cm[] = {PN_F_CM_WEIGHTS, PN_F_CM_IN, PN_F_CM_OUT,
			   PN_F_CM_TOTAL};
static const int f_ct[] = {PN_F_CT_MS};
static const int f_lat[] = {PN_F_LAT_MS};
static const int f_l2[] = {PN_F_L2_MS};
static const int f_phys[] = {
	PN_F_FLOPS, PN_F_TRAFFIC, PN_F_AI, PN_F_COMPUTE_MS, PN_F_MEMORY_MS,
	PN_F_ROOFLINE_MS, PN_F_TILES, PN_F_WAVES, PN_F_WAVE_EFF
};
static const int f_lane[] = {
	PN_F_FLOPS, PN_F_TRAFFIC, PN_F_AI, PN_F_LANE_COMPUTE_MS,
	PN_F_MEMORY_MS, PN_F_LANE_ROOFLINE_MS, PN_F_TILES, PN_F_WAVES,
	PN_F_WAVE_EFF
};
static const int f_power[] = {
	PN_F_FLOPS, PN_F_TRAFFIC, PN_F_AI, PN_F_POWER_COMPUTE_MS,
	PN_F_MEMORY_MS, PN_F_POWER_ROOFLINE_MS, PN_F_TILES, PN_F_WAVES,
	PN_F_WAVE_EFF
};
static const int f_cpu[] = {PN_F_PAD_CO, PN_F_CPU_MS, PN_F_MASK_P,
			    PN_F_VEC_TAIL};
static const int f_nsw[] = {
	PN_F_WAVE_ROOFLINE_MS, PN_F_SM_COMPUTE_MS, PN_F_SM_MEMORY_MS,
	PN_F_L2_RATIO, PN_F_WAVE_L2_RATIO
};
#define OWN(a) (int)(sizeof a / sizeof a[0]), a

const pn_feature_set pn_feature_sets[] = {
	{"baseline", -1, 1, 0, NULL, NULL},
	{"co", 0, 0, OWN(f_co), NULL},
	{"cocm", 1, 0, OWN(f_cm), NULL},
	{"cocmct", 2, 0, OWN(f_ct), NULL},
	{"phys", 3, 0, OWN(f_phys), NULL},
	{"rel", -1, 0, OWN(f_phys), "and no spec-sheet column: the device "
	 "enters only through its roofline and waves (meant for --relative, "
	 "on unseen GPUs)"},
	{"nsw", 5, 0, OWN(f_nsw), "(NeuSight's per-SM and per-wave "
	 "quantities, meant for --relative=wave_roofline_ms)"},
	{"lat", 5, 0, OWN(f_lat), "(meant for --relative=lat_ms, on "
	 "unseen GPUs and precisions)"},
	{"l2", 5, 0, OWN(f_l2), "(meant for --relative=l2_ms, on unseen "
	 "GPUs and precisions: lat_ms with the L2)"},
	{"lane", -1, 0, OWN(f_lane), "(rel at the peak of the FP32 lanes "
	 "that own their datapath, meant for --relative=lane_roofline_ms, "
	 "on unseen GPUs)"},
	{"power", -1, 0, OWN(f_power), "(rel at the clock a GPU's power "
	 "limit holds, meant for --relative=power_roofline_ms, on unseen "
	 "GPUs)"},
	{"cpu", 5, 0, OWN(f_cpu), "(a oneDNN kernel on one CPU core: "
	 "channel blocks, a cost a call, the last-level cache, the dropout "
	 "mask's rate, the vector tail, meant for --relative=cpu_ms)"},
	{NULL, 0, 0, 0, NULL, NULL}
};

const char *const pn_feature_config[] = {
	"op", "optimizer", "activation", "precision", "pass", "input_grad", NULL
};

const pn_feature_set *pn_feature_set_find(const char *name)
{
	for (const pn_feature_set *s = pn_feature_sets; s->name; s++)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

void pn_feature_set_each(const pn_feature_set *s,
			 void (*add)(void *arg, int k), void *arg)
{
	if (s->base >= 0)
		pn_feature_set_each(&pn_feature_sets[s->base], add, arg);
	else if (s->spec)
		for (int k = PN_F_GPU_SMS; k <= PN_F_GPU_FP32_GFLOPS; k++)
			add(arg, k);
	for (int i = 0; i < s->nown; i++)
		add(arg, s->own[i]);
}

/* Text written word by word, wrapped at 79 columns. */
typedef struct {
	FILE *f;
	int col;
} wrap;

static void wrap_words(wrap *w, const char *s)
{
	while (*s) {
		int n = (int)strcspn(s, " ");
		if (w->col && w->col + 1 + n > 79) {
			fputc('\n', w->f);
			w->col = 0;
		} else if (w->col) {
			fputc(' ', w->f);
			w->col++;
		}
		fwrite(s, 1, (size_t)n, w->f);
		w->col += n;
		s += n;
		s += strspn(s, " ");
	}
}

static void help_column(void *arg, int k)
{
	wrap_words(arg, pn_feature_names[k]);
}

void pn_feature_sets_help(FILE *f)
{
	wrap w = {f, 0};
	char buf[256];
	wrap_words(&w, "Feature sets:");
	for (const pn_feature_set *s = pn_feature_sets; s->name; s++) {
		if (s > pn_feature_sets) {
			fputc(';', f);
			w.col++;
		}
		snprintf(buf, sizeof buf, "%s = %s%s", s->name,
			 s->base >= 0 ? pn_feature_sets[s->base].name :
			 "the layer's dimension columns, the categorical "
			 "configuration columns present",
			 s->base >= 0 ? " +" : "");
		wrap_words(&w, buf);
		if (s->base < 0) {
			for (int i = 0; pn_feature_config[i]; i++) {
				snprintf(buf, sizeof buf, "%s%s%s",
					 i ? "" : "(", pn_feature_config[i],
					 pn_feature_config[i + 1] ? "" : ")");
				wrap_words(&w, buf);
			}
			if (s->spec) {
				static const pn_feature_set sheet = {
					"", -1, 1, 0, NULL, NULL
				};
				wrap_words(&w, "and");
				pn_feature_set_each(&sheet, help_column, &w);
			}
			if (s->nown)
				wrap_words(&w, "+");
		}
		for (int i = 0; i < s->nown; i++)
			help_column(&w, s->own[i]);
		if (s->about)
			wrap_words(&w, s->about);
	}
	fputs(".\n", f);
}
