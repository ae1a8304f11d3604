/* cpu.h - the CPU as a device: its name and its spec row.
 *
 * The device of a CPU row is the CPU model from /proc/cpuinfo, normalised
 * to the spec table's name rules ([A-Za-z0-9._-], no "(R)", "CPU",
 * "Processor", clock or core-count words), followed by the number of
 * threads the backend used: "AMD-EPYC-1t", "Intel-Xeon-Platinum-8375C-2t".
 * Peak FLOP/s and bandwidth depend on the thread count, so one machine has
 * one spec row per thread count.
 */
#ifndef PN_CPU_H
#define PN_CPU_H

#include <stddef.h>
#include <stdio.h>

/* Write the device name for threads into buf (size n). */
void pn_cpu_name(char *buf, size_t n, int threads);

/* The header and the spec row of this CPU with threads threads, in the
 * column layout of gpuspecs/gpus.tsv (see pn-time(1), --cpu-spec).  The
 * row is measured once (sgemm with oneDNN and OpenBLAS, a bf16 matmul
 * where the CPU has native bf16, a STREAM-like triad; a few seconds) and cached in cache_dir/cpu-spec-<threads>t.tsv;
 * remeasure ignores the cache.  cache_dir NULL: $XDG_CACHE_HOME/pn, else
 * $HOME/.cache/pn; a cache that cannot be written only warns. */
void pn_cpu_spec(FILE *out, int threads, int remeasure, const char *cache_dir);

/* Whether this CPU runs bf16 natively (AVX512_BF16 or AMX-BF16, from
 * CPUID) and oneDNN may use it (ONEDNN_MAX_CPU_ISA can forbid it); else 0
 * and the reason in why (size n). */
int pn_cpu_native_bf16(char *why, size_t n);

/* The kernels OpenBLAS chose for this CPU (openblas_get_corename, such as
 * "Haswell", "SkylakeX", "Zen", or "Prescott", its SSE3 fallback for CPUs
 * it does not know), blanks as '_'; "unknown" when it does not say. */
const char *pn_cpu_blas_core(void);

/* Measured single-precision GEMM rates in GFLOP/s with threads threads,
 * the best of 4 timed calls on n x n matrices: oneDNN's sgemm in *onednn,
 * OpenBLAS's (the BLAS a framework's dense layers call) in *blas. */
void pn_cpu_sgemm_gflops(int threads, int n, double *onednn, double *blas);

#endif
