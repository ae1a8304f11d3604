/* gpuspec.h - the accelerator spec table (gpuspecs/gpus.tsv).
 *
 * One row per accelerator; see gpuspecs/README.md for the columns.  Numeric
 * values that the table gives as NA are NAN here.  The nine per-unit peak
 * columns (fp64_gflops ... tc_mhz), fp32_lanes and blas_fp32_gflops are
 * optional: a table without one of them reads as NA in every row (tables
 * written before they existed, such as an old pn-time --cpu-spec row).  Lookup is by canonical
 * name or any alias, ignoring case and every character that is not a letter
 * or digit ("Tesla_T4", "tesla t4" and "T4" name one row).
 */
#ifndef PN_GPUSPEC_H
#define PN_GPUSPEC_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
	char *name, *aliases, *vendor, *arch, *cc, *mem_type, *bus, *source;
	double sms, cores, base_mhz, boost_mhz, mem_gb, mem_bus_bits,
		mem_bw_gbs, l2_mb, fp32_gflops, tf32_gflops, fp16_gflops,
		bf16_gflops, tdp_w, price_usd_h;
	/* per-unit peaks (GFLOP/s; int8: 10^9 ops/s; tc_mhz: MHz) */
	double fp64_gflops, fp16_vec_gflops, bf16_vec_gflops, fp64_tc_gflops,
		fp32_tc_gflops, fp16_tc_f16acc_gflops, fp8_tc_gflops,
		int8_tc_gops, tc_mhz;
	/* FP32 lanes per SM that share no datapath with INT32 (count) */
	double fp32_lanes;
	/* the sgemm rate of the BLAS a framework's fp32 GEMMs call
	 * (GFLOP/s; a CPU's OpenBLAS, measured by pn-time --cpu-spec) */
	double blas_fp32_gflops;
} pn_gpu;

typedef struct {
	int n;
	pn_gpu *g;
	char *path;
} pn_gpus;

/* 1 when g is a CPU's row (pn-time --cpu-spec: arch CPU-...), else 0. */
int pn_gpu_is_cpu(const pn_gpu *g);

/* The table to read: path if not NULL, else $PN_GPUSPECS, else
 * <dir of the executable>/../gpuspecs/gpus.tsv (build tree), else
 * <dir of the executable>/../share/pn/gpus.tsv (installed), else the
 * compiled-in PN_DATADIR/gpus.tsv. */
const char *pn_gpus_path(const char *path);

/* The columns of a table, in the order pn-specs(1) and pn-time --cpu-spec
 * write them (name ... source, then the per-unit peaks fp64_gflops ...
 * tc_mhz, then fp32_lanes, blas_fp32_gflops), a NULL name last: each
 * column's field of pn_gpu (a char * for text, else a double), what a value may be, and whether it
 * is required (1), may be NA (0), or may be NA or absent from the table
 * (-1: the per-unit peaks, fp32_lanes and blas_fp32_gflops). */
enum { PN_GPU_TEXT, PN_GPU_COUNT, PN_GPU_POSITIVE, PN_GPU_NONNEG };
typedef struct {
	const char *name;
	size_t off;
	int kind;               /* PN_GPU_*: text, a whole count >= 1, a
				   value > 0, a value >= 0 */
	int required;
} pn_gpu_col;
extern const pn_gpu_col pn_gpu_cols[];

/* Write the header line, and a row of g (numbers in pn_put_num's form, NA
 * for NAN), tab-separated in pn_gpu_cols' order. */
void pn_gpus_write_header(FILE *f);
void pn_gpus_write_row(FILE *f, const pn_gpu *g);

/* Load and validate the table; dies (exit 1) naming file, line and column
 * on a bad row:
 *   - a missing required value (name, sms, boost_mhz, mem_gb, mem_bw_gbs,
 *     l2_mb, fp32_gflops): "column 'sms': 'T4' needs a value";
 *   - a value that is not a number, or impossible (opt.h's messages): a
 *     count (sms, cores, mem_bus_bits, fp32_lanes) that is not a whole number of at
 *     least 1; a clock, memory size, bandwidth, L2 size or peak (fp32, and
 *     tf32/fp16/bf16 and every per-unit peak and tc_mhz when given) that is
 *     not above 0; a TDP or price below 0:
 *     "column 'mem_bw_gbs': '0' is too small (must be above 0)";
 *   - a name or alias with no letter or digit (it could never be looked
 *     up): "column 'name': '-' has no letter or digit", or with a control
 *     character: "column 'aliases': a name with a control character (byte
 *     0x01)";
 *   - a name or alias that two rows share. */
pn_gpus *pn_gpus_load(const char *path);
void pn_gpus_free(pn_gpus *t);

/* The row named name (canonical or alias), or NULL. */
const pn_gpu *pn_gpus_find(const pn_gpus *t, const char *name);

/* Like pn_gpus_find, but an unknown name dies (exit 1) with "file:line:
 * unknown device 'x' in TABLE (closest: A, B, C); pass --gpuspecs FILE with
 * a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)";
 * file may be NULL (no place). */
const pn_gpu *pn_gpus_need(const pn_gpus *t, const char *name,
			   const char *file, long line);

/* Write into buf (size n) up to three names closest to name. */
void pn_gpus_closest(const pn_gpus *t, const char *name, char *buf,
		     size_t n);

#endif
