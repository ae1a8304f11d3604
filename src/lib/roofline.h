/* roofline.h - every roofline pn computes, by name, with its units.
 *
 * A roofline bounds a kernel's time by its arithmetic at the peak rate and
 * its memory traffic at the peak bandwidth.  Two unit conventions are in
 * use, and both are kept because outputs depend on them:
 *
 *   pn's         FLOP/s = gflops * 1e9, bytes/s = mem_bw_gbs * 1e9 (the
 *                spec table's GB/s are 10^9 bytes a second).  Used by the
 *                features (pn-featurize, pn-sum's model path) and by the
 *                fallback for every row NeuSight has no roofline for.
 *   NeuSight's   its Model/other/roofline_*.py, reproduced exactly so that
 *                its published roofline predictions come out to 1e-6: GEMM
 *                FLOPs in 10^9 but bytes in 2^30 (GiB), vector ops' bytes
 *                in 10^9, memory passes' bytes in 2^30.
 *
 * The variants (every time in ms; peak in GFLOP/s, bw in the spec table's
 * mem_bw_gbs):
 *   pn_roofline_time_ms   pn's: max(flops / peak, traffic / bw), 10^9 both
 *   pn_roofline_gemm_ms   NeuSight's GEMM (roofline_mm.py): 10^9 FLOP,
 *                         2^30 bytes
 *   pn_roofline_vec_ms    NeuSight's VEC: traffic / 10^9 / bw
 *   pn_roofline_mem_ms    NeuSight's MEM: traffic / (bw * 2^30)
 *   pn_roofline_ms        pn-sum's --fallback roofline: NeuSight's variant
 *                         of the row's type (dense bmm: GEMM; layernorm
 *                         softmax elementwise: VEC; mem: MEM) for fwd, bwd
 *                         and acc rows, pn's for every other row
 *                         (pn-sum(1) gives the formulas)
 */
#ifndef PN_ROOFLINE_H
#define PN_ROOFLINE_H

#include "gpuspec.h"
#include "layer.h"

/* Peak GFLOP/s for a precision of `bytes` bytes per element: the FP16
 * tensor peak for 2-byte precisions on GPUs that list one, else the FP32
 * peak (pn's fp32 data run without TF32). */
double pn_peak_gflops(const pn_gpu *g, int bytes);

/* pn's roofline: compute and memory time (ms) of flops and traffic bytes
 * at peak GFLOP/s and bw GB/s (10^9); returns their maximum. */
double pn_roofline_time_ms(double flops, double traffic, double peak,
			   double bw, double *compute_ms, double *memory_ms);

/* NeuSight's GEMM roofline of (B x M x N) @ (B x N x K) at e bytes per
 * element: F = 2BMNK / 10^9 GFLOP, Q = e B (MN + NK + MK) / 2^30 GiB,
 * F / min(peak, bw F / Q) s. */
double pn_roofline_gemm_ms(double B, double M, double N, double K, double e,
			   double peak, double bw);

/* NeuSight's VEC roofline: traffic bytes / 10^9 / bw s. */
double pn_roofline_vec_ms(double traffic, double bw);

/* NeuSight's MEM roofline: traffic bytes / (bw 2^30) s. */
double pn_roofline_mem_ms(double traffic, double bw);

/* pn-sum's roofline prediction of layer l (l->train: a train row) on g,
 * with traffic_bytes traffic (0: pn_layer_work's estimate; mem: e x
 * elements). */
double pn_roofline_ms(const pn_layer *l, double traffic, const pn_gpu *g);

#endif
