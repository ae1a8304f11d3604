/* drift.h - whether the machine pn-time measures now is the one a stored
 * spec row of the same name describes.
 *
 * A spec row (gpuspec.h) says what a device can do; models and
 * featurized rows rely on it.  When the machine behind a name changes (a
 * VM moved to other hardware, a GPU partitioned, a BIOS power setting),
 * times measured now no longer match the stored row, and nothing in the
 * data shows it.  pn-time compares what it reads or measures now with the
 * stored row, column by column:
 *
 *   column            tolerance  why
 *   fp32_gflops       15%        measured (sgemm, bf16 matmul, triad):
 *   blas_fp32_gflops  15%        repeated measurements on one quiet machine
 *   bf16_gflops       15%        agree within a few percent, a busy one's
 *   mem_bw_gbs        15%        within about 10%; the drift seen in
 *                                practice is 1.3x to 2x
 *   cores, sms        exact      counted: another count is another machine
 *   l2_mb (CPU)       2x         measured: the working set where one
 *                        either way  thread's read rate leaves the cache
 *                                (the median of three sweeps); a VM's
 *                                share of a shared cache moves with its
 *                                neighbours (one sweep: 47-112 MB on a
 *                                2-core Xeon VM, some runs under load).
 *                                A row of a pn before the measurement
 *                                holds the size sysfs lists
 *   l2_mb (GPU)       exact      as CUDA reports it
 *   mem_gb            15%        the GPU's memory as CUDA reports it, in 1e9
 *                                bytes, against the spec sheet's size
 *
 * A column NA in either row is not compared.
 */
#ifndef PN_DRIFT_H
#define PN_DRIFT_H

#include <stddef.h>

#include "gpuspec.h"

/* One column compared and its tolerance: relative to the stored value,
 * or with factor set, a factor either way (1 + tol: now within stored /
 * (1 + tol) and stored x (1 + tol)). */
typedef struct {
	const char *col;
	double tol;
	int factor;
} pn_drift_rule;

/* The CPU's (pn-time --cpu-spec: fp32_gflops blas_fp32_gflops bf16_gflops
 * mem_bw_gbs cores l2_mb) and a CUDA GPU's (its properties: sms mem_gb
 * l2_mb) rules, each ended by a NULL col. */
extern const pn_drift_rule pn_drift_cpu[], pn_drift_gpu[];

/* The numbers of a spec row given as its header line and row line
 * (tab-separated, as pn_gpus_write_header and pn_gpus_write_row write
 * them, newlines allowed at the ends) into g: every numeric column of
 * pn_gpu_cols that the header has, NA as NAN, the others NAN; text fields
 * NULL, but the name, copied into name (n bytes).  Returns 0, or -1 when a
 * field is not a number or the row has fewer fields than the header. */
int pn_drift_parse_row(const char *header, const char *row, pn_gpu *g,
		       char *name, size_t n);

/* The columns of rules on which now and stored differ beyond tolerance,
 * as "fp32_gflops 108 now, 206.1 stored (-48%)" joined by "; " into buf (n
 * bytes, truncated); returns their count (0: buf ""). */
int pn_drift_compare(const pn_gpu *now, const pn_gpu *stored,
		     const pn_drift_rule *rules, char *buf, size_t n);

/* pn_drift_compare, and when they differ say so on standard error:
 *   pn-x: warning: FILE: this machine differs from the row 'DEVICE'
 *   beyond the tolerance (pn-time(1), DRIFT): <the columns>; HINT
 * or with strict die with that message (exit 1).  Returns the count. */
int pn_drift_report(const pn_gpu *now, const pn_gpu *stored,
		    const pn_drift_rule *rules, const char *device,
		    const char *file, const char *hint, int strict);

#endif
