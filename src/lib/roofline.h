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
 * The variants (every time in ms; peak in GFLOP/s, the peak of the unit the
 * op runs on (pn_unit_peak below); bw in the spec table's mem_bw_gbs):
 *   pn_roofline_time_ms   pn's: max(flops / peak, traffic / bw), 10^9 both
 *   pn_roofline_gemm_ms   NeuSight's GEMM (roofline_mm.py): 10^9 FLOP,
 *                         2^30 bytes
 *   pn_roofline_vec_ms    NeuSight's VEC: traffic / 10^9 / bw
 *   pn_roofline_mem_ms    NeuSight's MEM: traffic / (bw * 2^30)
 *   pn_roofline_ms        pn-sum's --fallback roofline: NeuSight's variant
 *                         of the row's type (dense bmm: GEMM; layernorm
 *                         softmax xent elementwise: VEC; mem: MEM) for fwd, bwd
 *                         and acc rows, pn's for every other row
 *                         (pn-sum(1) gives the formulas)
 */
#ifndef PN_ROOFLINE_H
#define PN_ROOFLINE_H

#include "gpuspec.h"
#include "layer.h"

/* ---- the unit an op runs on ----------------------------------------------
 *
 * A kernel's peak depends on the unit it runs on.  GEMM-like layer types,
 * whose arithmetic is matrix products (dense bmm conv2d attention rnn lstm
 * gru), run on the matrix units (NVIDIA tensor cores, AMD matrix cores)
 * where the precision has a matrix mode; the others (embedding layernorm
 * softmax xent elementwise posenc mem batchnorm pool) run on the vector units.  The peak of a
 * row of type t at precision p on GPU g is the first of these spec columns
 * that g gives (not NA), else the larger of the listed vector column (when
 * given) and fp32_gflops:
 *
 *   precision  GEMM-like                          vector types
 *   fp32       fp32_tc_gflops, else fp32_gflops   fp32_gflops
 *   tf32       tf32_gflops, fp32_tc_gflops, else fp32_gflops
 *                                                 fp32_gflops
 *   fp16       fp16_gflops, else max(fp16_vec_gflops, fp32_gflops)
 *                                                 max(fp16_vec_gflops,
 *                                                     fp32_gflops)
 *   bf16       bf16_gflops, else max(bf16_vec_gflops, fp32_gflops)
 *                                                 max(bf16_vec_gflops,
 *                                                     fp32_gflops)
 *
 * Why: fp32 GEMMs never use NVIDIA's TF32 tensor cores (pn's fp32 rows run
 * without TF32; a tf32 row asks for them) but do use AMD CDNA's FP32
 * matrix cores, the only FP32 matrix mode the table knows (fp32_tc_gflops
 * is NA on NVIDIA).  TF32 affects only GEMMs and convolutions.  A half
 * precision without a matrix rate (Pascal, BF16 before Ampere) computes in
 * FP32 where that is faster than the half vector rate (cuBLAS's FP32
 * compute type; PyTorch's elementwise kernels compute half in float), so
 * P4's 1/64-rate FP16 is never the peak.  A CPU row lists fp32_gflops (the
 * better of oneDNN's and OpenBLAS's measured sgemm), which every precision
 * falls back to, and bf16_gflops where the CPU has native bf16.  An fp32
 * (and tf32: on a CPU the same fp32 GEMM) dense, bmm or attention row has
 * the BLAS's rate, blas_fp32_gflops, where the row gives it: PyTorch runs
 * Linear and bmm (attention's products) through the BLAS it links
 * (OpenBLAS on Debian), and so do pn-time's rows of those types
 * (src/cpu/gemm.c); convolutions run on oneDNN, and so does a whole rnn,
 * lstm or gru row, which pn-time times as oneDNN's fused RNN primitive
 * (PyTorch's cells, which call the BLAS every time step, are pn-sum's
 * split of such a row into dense parts under a framework profile,
 * step.h).  pn-time --cpu-spec measures both rates; OpenBLAS 0.3.21 runs
 * a quarter as fast as oneDNN on CPUs it does not know, and torch.bmm and
 * an LSTM then take 3.1x and 2.4x as long.  FP8 and
 * INT8 (fp8_tc_gflops, int8_tc_gops) have no precision in layer.h yet. */
typedef struct {
	double gflops;          /* the peak, GFLOP/s */
	const char *col;        /* the spec column it came from */
} pn_peak;

/* 1 when layer type t is GEMM-like (runs on the matrix units), else 0. */
int pn_unit_matrix(pn_layer_type t);

/* The peak of a type-t layer at precision p on g (table above). */
pn_peak pn_unit_peak(const pn_gpu *g, pn_layer_type t, pn_prec p);

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
 * elements), at the peak pn_unit_peak(g, l->type, l->prec); a recurrent
 * row on a GPU adds pn_recurrence_ms. */
double pn_roofline_ms(const pn_layer *l, double traffic, const pn_gpu *g);

/* The time of a recurrent row's (rnn, lstm, gru) steps one after another
 * on a GPU, which no roofline counts: each of its layers runs seq_len
 * steps in turn, each a few dependent kernels (the recurrent product and
 * its gates) whose launch and latency bound it, not their work.  Per step
 * (a direction; the two of a bidirectional layer together 1.6 times
 * one): 0.020 ms forward, and 0.025 ms more backward in a train row; the
 * medians of the first run's rows of samples/H200-SXM-141GB (cuDNN 9.14:
 * 19-20 us forward, 22-27 backward a step, alike for rnn, lstm and gru in
 * fp32 and bf16), the only recurrent GPU timings pn has: another GPU is
 * assumed to launch alike.  0 for other types. */
double pn_recurrence_ms(const pn_layer *l);

/* The spread of the rule: the root mean square of ln(predicted /
 * measured) of pn_roofline_ms over the same first run's rows (2472 rows,
 * rnn lstm gru in fp32 and bf16: 0.441, 0.433, 0.435; bias -0.11 to
 * -0.13), for the interval of a recurrent row (interval.h). */
#define PN_RECURRENCE_SPREAD 0.44

#endif
