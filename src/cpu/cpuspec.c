/* cpuspec.c - the CPU's name and spec row (peak sgemm, triad bandwidth
 * and the last-level cache one thread gets, measured once, cached). */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "cpu.h"
#include "drift.h"
#include "err.h"
#include "gpuspec.h"
#include "rng.h"
#include "tsv.h"

/* First value of field key in /proc/cpuinfo, or "" */
static void cpuinfo(const char *key, char *buf, size_t n)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[4096];
	size_t k = strlen(key);
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, k) != 0 || !strchr(line, ':'))
			continue;
		char *v = strchr(line, ':') + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = 0;
		snprintf(buf, n, "%s", v);
		break;
	}
	fclose(f);
}

static int noise(const char *w)
{
	static const char *const words[] = {"(R)", "(TM)", "(tm)", "CPU",
		"Processor", "processor", "with", "Radeon", "Graphics", 0};
	for (int i = 0; words[i]; i++)
		if (strcmp(w, words[i]) == 0)
			return 1;
	size_t n = strlen(w);
	if (w[0] == '@' || (n > 3 && strcmp(w + n - 3, "GHz") == 0))
		return 1;
	if (n > 5 && (strcmp(w + n - 5, "-Core") == 0 ||
		      strcmp(w + n - 5, "-core") == 0))
		return 1;
	return 0;
}

void pn_cpu_name(char *buf, size_t n, int threads)
{
	char model[512], out[512] = "";
	size_t m = 0;
	cpuinfo("model name", model, sizeof model);
	/* "Intel(R) Xeon(R)" -> "Intel Xeon" */
	for (char *p; (p = strstr(model, "(R)")) || (p = strstr(model, "(TM)")) ||
		      (p = strstr(model, "(tm)"));)
		memmove(p, p + (p[1] == 'R' ? 3 : 4), strlen(p + (p[1] == 'R' ? 3 : 4)) + 1);
	char *save = NULL;
	for (char *w = strtok_r(model, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		if (noise(w))
			continue;
		if (m && m + 1 < sizeof out)
			out[m++] = '-';
		for (; *w && m + 1 < sizeof out; w++)
			if (isalnum((unsigned char)*w) || *w == '.' || *w == '_' ||
			    *w == '-')
				out[m++] = *w;
		out[m] = 0;
	}
	snprintf(buf, n, "%s-%dt", m ? out : "cpu", threads);
}

/* Whether this CPU runs bf16 natively (AVX512_BF16 or AMX-BF16, from
 * CPUID) and oneDNN may use it (ONEDNN_MAX_CPU_ISA can forbid it); else
 * the reason in why. */
int pn_cpu_native_bf16(char *why, size_t n)
{
	int cpu = 0;
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (__get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & 1u << 5))
		cpu = 1;                        /* AVX512_BF16 */
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & 1u << 22))
		cpu = 1;                        /* AMX-BF16 */
#endif
	if (!cpu) {
		snprintf(why, n, "this CPU has no native bf16 (AVX512_BF16 or "
			 "AMX-BF16)");
		return 0;
	}
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
	if ((isa & dnnl_cpu_isa_avx512_core_bf16) !=
	    dnnl_cpu_isa_avx512_core_bf16) {
		snprintf(why, n, "oneDNN may not use this CPU's bf16 "
			 "instructions (ONEDNN_MAX_CPU_ISA?)");
		return 0;
	}
	return 1;
}

/* ---- micro-benchmarks ------------------------------------------------------ */

/* one thread: its CPU time, so that other processes on the machine do not
 * lower the figures; more: the wall clock */
static clockid_t clk = CLOCK_MONOTONIC;

static double now(void)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void pn_cpu_sgemm_gflops(int threads, int n, double *onednn, double *blas)
{
	size_t nn = (size_t)n * (size_t)n;
	float *a = pn_xmalloc(nn * sizeof(float)), *b = pn_xmalloc(nn * sizeof(float));
	float *c = pn_xcalloc(nn, sizeof(float));
	pn_rng r;
	pn_rng_seed(&r, 1);
	pn_rng_fill(&r, a, nn, -1, 1);
	pn_rng_fill(&r, b, nn, -1, 1);
	double flop = 2.0 * n * n * n, best[2] = {0, 0};
	openblas_set_num_threads(threads);
	for (int lib_i = 0; lib_i < 2; lib_i++)
		for (int rep = 0; rep < 5; rep++) {
			double t0 = now();
			if (lib_i == 0)
				dnnl_sgemm('N', 'N', n, n, n, 1, a, n, b, n, 0, c, n);
			else
				cblas_sgemm(CblasRowMajor, CblasNoTrans,
					    CblasNoTrans, n, n, n, 1, a, n, b,
					    n, 0, c, n);
			double g = flop / (now() - t0) / 1e9;
			if (rep > 0 && g > best[lib_i])
				best[lib_i] = g;
		}
	free(a);
	free(b);
	free(c);
	*onednn = best[0];
	*blas = best[1];
}

const char *pn_cpu_blas_core(void)
{
	static char core[64];
	if (!core[0]) {
		const char *c = openblas_get_corename();
		snprintf(core, sizeof core, "%s", c && *c ? c : "unknown");
		for (char *p = core; *p; p++)
			if (isspace((unsigned char)*p))
				*p = '_';
	}
	return core;
}

/* Whether OpenBLAS's kernels leave out the CPU's AVX2: OpenBLAS 0.3.21
 * (Debian 12) does not know newer CPUs (Sapphire and Emerald Rapids among
 * them) and falls back to its SSE3 "Prescott" kernels, at a quarter of the
 * rate; every fp32 dense layer, pn-time's and PyTorch's (which calls the
 * same OpenBLAS, for bmm and its recurrent cells too), then runs at that
 * rate. */
static int blas_behind(void)
{
	static const char *const avx2[] = {"haswell", "zen", "skylakex",
		"cooperlake", "sapphirerapids", "excavator", NULL};
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2"))
		return 0;
	for (int i = 0; avx2[i]; i++)
		if (strcasecmp(pn_cpu_blas_core(), avx2[i]) == 0)
			return 0;
	return 1;
}

/* bf16 x bf16 -> fp32 matmul of n x n through oneDNN: the rate of the
 * unit a bf16 GEMM runs on (AVX512_BF16's dot products, or AMX) */
static double bf16_gflops(int n)
{
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success)
		return NAN;
	dnnl_stream_create(&strm, eng, dnnl_stream_default_flags);
	dnnl_memory_desc_t ma, mc;
	dnnl_dims_t d = {n, n};
	dnnl_memory_desc_init_by_tag(&ma, 2, d, dnnl_bf16, dnnl_ab);
	dnnl_memory_desc_init_by_tag(&mc, 2, d, dnnl_f32, dnnl_ab);
	dnnl_matmul_desc_t md;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_t p = NULL;
	size_t nn = (size_t)n * (size_t)n;
	uint16_t *a = pn_xcalloc(nn, 2), *b = pn_xcalloc(nn, 2);
	float *c = pn_xcalloc(nn, sizeof(float));
	for (size_t i = 0; i < nn; i++)
		a[i] = b[i] = (uint16_t)(0x3f80 + (i % 64));   /* 1 to 1.5 */
	double best = NAN;
	dnnl_memory_t A = NULL, B = NULL, C = NULL;
	if (dnnl_matmul_desc_init(&md, &ma, &ma, NULL, &mc) == dnnl_success &&
	    dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL) == dnnl_success &&
	    dnnl_primitive_create(&p, pd) == dnnl_success &&
	    dnnl_memory_create(&A, &ma, eng, a) == dnnl_success &&
	    dnnl_memory_create(&B, &ma, eng, b) == dnnl_success &&
	    dnnl_memory_create(&C, &mc, eng, c) == dnnl_success) {
		dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, A},
					   {DNNL_ARG_WEIGHTS, B},
					   {DNNL_ARG_DST, C}};
		best = 0;
		for (int rep = 0; rep < 6; rep++) {
			double t0 = now();
			dnnl_primitive_execute(p, strm, 3, args);
			dnnl_stream_wait(strm);
			double g = 2.0 * n * n * (double)n / (now() - t0) / 1e9;
			if (rep > 0 && g > best)
				best = g;
		}
	}
	dnnl_memory_destroy(A);
	dnnl_memory_destroy(B);
	dnnl_memory_destroy(C);
	if (p)
		dnnl_primitive_destroy(p);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	dnnl_stream_destroy(strm);
	dnnl_engine_destroy(eng);
	free(a);
	free(b);
	free(c);
	return best;
}

typedef struct {
	float *a, *b, *c;
	size_t lo, hi;
} triad_part;

static void *triad(void *arg)
{
	triad_part *p = arg;
	for (size_t i = p->lo; i < p->hi; i++)
		p->a[i] = p->b[i] + 3.0f * p->c[i];
	return NULL;
}

/* Best bandwidth in GB/s of a = b + s c over 3 x 96 MB, counting 12 bytes
 * an element as STREAM does. */
static double triad_gbs(int threads)
{
	size_t n = (size_t)24 << 20;
	float *a = pn_xmalloc(n * sizeof(float)), *b = pn_xmalloc(n * sizeof(float));
	float *c = pn_xmalloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++) {
		a[i] = 0;
		b[i] = 1;
		c[i] = 2;
	}
	double best = 0;
	pthread_t th[256];
	triad_part part[256];
	if (threads > 256)
		threads = 256;
	for (int rep = 0; rep < 6; rep++) {
		double t0 = now();
		for (int t = 0; t < threads; t++) {
			part[t] = (triad_part){a, b, c, n * (size_t)t / (size_t)threads,
				n * (size_t)(t + 1) / (size_t)threads};
			if (t > 0)
				pthread_create(&th[t], NULL, triad, &part[t]);
		}
		triad(&part[0]);
		for (int t = 1; t < threads; t++)
			pthread_join(th[t], NULL);
		double g = 12.0 * (double)n / (now() - t0) / 1e9;
		if (rep > 0 && g > best)
			best = g;
	}
	free(a);
	free(b);
	free(c);
	return best;
}

static double sysnum(const char *path)
{
	FILE *f = fopen(path, "r");
	double v = NAN;
	if (f) {
		char s[64];
		if (fgets(s, sizeof s, f)) {
			char *end;
			v = strtod(s, &end);
			if (*end == 'K')
				v *= 1024;
			else if (*end == 'M')
				v *= 1024 * 1024;
		}
		fclose(f);
	}
	return v;
}

/* The size in MB of cpu0's cache of level (0: the last level), as the
 * system lists it; NAN if unknown. */
static double cache_mb(int level)
{
	double best = NAN;
	int top = 0;
	for (int i = 0; i < 8; i++) {
		char p[128];
		snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		double lv = sysnum(p);
		if (isnan(lv) || (level && (int)lv != level))
			continue;
		snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		double s = sysnum(p);
		if (!isnan(s) && lv >= top) {
			top = (int)lv;
			best = s / (1024 * 1024);
		}
	}
	return best;
}

typedef float v4f __attribute__((vector_size(16)));

/* Best read rate in GB/s of one thread over the first mb MB of a (four
 * running vector sums, the loads of a vectorised reduction on any x86-64:
 * scalar loads would cap the rate below the cache's), over at least 3
 * passes and 256 MB. */
static double read_gbs(const float *a, double mb)
{
	size_t n = (size_t)(mb * 1048576 / sizeof *a) / 16 * 16;
	int reps = (int)(256 / mb) + 3;
	double best = 0;
	volatile float sink;
	for (int r = 0; r < reps; r++) {
		v4f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, x0, x1, x2, x3;
		double t0 = now();
		for (size_t i = 0; i < n; i += 16) {
			memcpy(&x0, a + i, sizeof x0);
			memcpy(&x1, a + i + 4, sizeof x1);
			memcpy(&x2, a + i + 8, sizeof x2);
			memcpy(&x3, a + i + 12, sizeof x3);
			s0 += x0;
			s1 += x1;
			s2 += x2;
			s3 += x3;
		}
		double t = now() - t0;
		v4f x = s0 + s1 + s2 + s3;
		sink = x[0] + x[1] + x[2] + x[3];
		(void)sink;
		double g = (double)(n * sizeof *a) / t / 1e9;
		if (t > 0 && g > best)
			best = g;
	}
	return best;
}

/* The bytes of memory this process may use, in MB: the machine's, or its
 * cgroup's limit where that is less (a container's memory.max). */
static double usable_mb(void)
{
	double mem = (double)sysconf(_SC_PHYS_PAGES) *
		     (double)sysconf(_SC_PAGESIZE) / 1048576;
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
	if (f) {
		double v;
		if (fscanf(f, "%lf", &v) == 1 && v > 0 && v / 1048576 < mem)
			mem = v / 1048576;
		fclose(f);
	}
	return mem;
}

/* One sweep over the working sets mb[0..k) of a: the size at which one
 * thread's read rate falls below the harmonic mean of its best rate (the
 * cache's) and its rate from the largest set (memory's), interpolated in
 * log size; NAN when the rates show no cache (the best within 20% of
 * memory's). */
static double llc_sweep(const float *a, const double *mb, int k)
{
	double gbs[16];
	int top = 0;
	for (int i = 0; i < k; i++) {
		gbs[i] = read_gbs(a, mb[i]);
		if (gbs[i] > gbs[top])
			top = i;
	}
	double hi = gbs[top], lo = gbs[k - 1];
	if (!(hi >= 1.2 * lo))
		return NAN;
	double cut = 2 / (1 / hi + 1 / lo);
	for (int i = top + 1; i < k; i++)
		if (gbs[i] < cut) {
			double f = log(gbs[i - 1] / cut) /
				   log(gbs[i - 1] / gbs[i]);
			return mb[i - 1] * pow(mb[i] / mb[i - 1], f);
		}
	return NAN;
}

/* qsort's order of doubles, NAN last */
static int by_value(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	if (isnan(a) || isnan(b))
		return isnan(a) - isnan(b);
	return (a > b) - (a < b);
}

/* The last-level cache one thread gets, in MB: the working set at which
 * its read rate falls to the harmonic mean of its rates from the cache
 * and from memory, the size at which featurize.c's model of a row's
 * traffic (the share 1 / (1 + r^2) from the cache at its rate, the rest
 * at memory's) reads half from each.  A VM's share of a shared cache is
 * less than the cache the system lists (a 2-core VM of a Xeon listing
 * 300 MB reads 29 GB/s to 64 MB, 10-11 from 256 MB on).  Working sets
 * from 4 x the L2 to 4 x the listed cache (256 MB at least, 1 GB at most,
 * an eighth of the memory this process may use), doubling; the median of
 * three sweeps; at most the listed size.  The listed size, and *how says
 * why (else NULL), where the sweep cannot reach 2 x the listed size, the
 * L2 is the last level, or the rates show no cache. */
static double llc_eff_mb(double listed, const char **how)
{
	double l2 = cache_mb(2), lo = l2 > 0 ? 4 * l2 : 4;
	double hi = fmin(fmax(listed > 0 ? 4 * listed : 256, 256), 1024);
	hi = fmin(hi, usable_mb() / 8);
	size_t n = (size_t)(hi * 1048576 / sizeof(float));
	float *a = NULL;
	*how = "its L2 is its last level";
	if (listed > 0 && lo >= listed)
		return listed;
	*how = "too little memory to measure it";
	if (hi < 2 * lo || (listed > 0 && hi < 2 * listed) ||
	    !(a = malloc(n * sizeof *a)))
		return listed;
	for (size_t i = 0; i < n; i++)
		a[i] = 1;
	double mb[16], eff[3];
	int k = 0;
	for (double s = lo; s <= hi * 1.0001 && k < 16; s *= 2)
		mb[k++] = s;
	for (int r = 0; r < 3; r++)
		eff[r] = llc_sweep(a, mb, k);
	free(a);
	/* the median of three; of two where one sweep saw no cache */
	qsort(eff, 3, sizeof *eff, by_value);
	int nok = !isnan(eff[0]) + !isnan(eff[1]) + !isnan(eff[2]);
	*how = "its read rates show no cache";
	if (nok < 2)
		return listed;
	*how = NULL;
	double m = nok == 3 ? eff[1] : eff[0] * 0.5 + eff[1] * 0.5;
	return listed > 0 && m > listed ? listed : m;
}

/* The spec table's header line (gpuspec.h's columns) into buf. */
static void header_line(char *buf, size_t n)
{
	size_t k = 0;
	for (const pn_gpu_col *c = pn_gpu_cols; c->name; c++)
		k += (size_t)snprintf(buf + k, n > k ? n - k : 0, "%s%s",
				      c->name, c[1].name ? "\t" : "\n");
}

static void measure(char *row, size_t n, int threads)
{
	char name[256], model[256], vendor[64], flags[8192], mhz[64];
	pn_cpu_name(name, sizeof name, threads);
	cpuinfo("model name", model, sizeof model);
	cpuinfo("vendor_id", vendor, sizeof vendor);
	cpuinfo("flags", flags, sizeof flags);
	cpuinfo("cpu MHz", mhz, sizeof mhz);
	const char *v = strcmp(vendor, "AuthenticAMD") == 0 ? "AMD" :
			strcmp(vendor, "GenuineIntel") == 0 ? "Intel" :
			vendor[0] ? vendor : "NA";
	const char *isa = strstr(flags, "avx512f") ? "CPU-AVX512" :
			  strstr(flags, "avx2") ? "CPU-AVX2" : "CPU";
	double clock = sysnum("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
	clock = isnan(clock) ? atof(mhz) : clock / 1000;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	double mem = (double)sysconf(_SC_PHYS_PAGES) *
		     (double)sysconf(_SC_PAGESIZE) / 1e9;
	omp_set_num_threads(threads);
	clk = threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
	double dnn, blas;
	pn_cpu_sgemm_gflops(threads, 1536, &dnn, &blas);
	int behind = blas_behind();
	const char *core = pn_cpu_blas_core();
	char ver[32] = "";
	const char *conf = openblas_get_config();      /* "OpenBLAS 0.3.21 ..." */
	if (conf && sscanf(conf, "OpenBLAS %31s", ver) != 1)
		ver[0] = '\0';
	if (behind)
		pn_warn("OpenBLAS runs its %s kernels on this CPU, which has "
			"AVX2 (OpenBLAS%s%s does not know it): its sgemm "
			"reaches %.1f GFLOP/s, oneDNN's %.1f; fp32 dense layers "
			"run at that rate, pn-time's as PyTorch's, which calls "
			"the same OpenBLAS for its Linear, bmm and recurrent "
			"cells (blas_fp32_gflops); "
			"OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2) "
			"in the environment of both selects faster kernels",
			core, ver[0] ? " " : "", ver, blas, dnn);
	char why[128], bf[64] = "NA", bfsrc[192];
	double bg = pn_cpu_native_bf16(why, sizeof why) ? bf16_gflops(1536) : NAN;
	if (bg > 0) {
		snprintf(bf, sizeof bf, "%.1f", bg);
		snprintf(bfsrc, sizeof bfsrc, "bf16 matmul n=1536 (oneDNN, "
			 "fp32 accumulation) %.1f GFLOP/s", bg);
	} else {
		snprintf(bfsrc, sizeof bfsrc, "bf16 matmul: none (%s)", why);
	}
	double bw = triad_gbs(threads);
	double listed = cache_mb(0);
	const char *how;
	double l3 = llc_eff_mb(listed, &how);
	char llc[256], sys[32] = "no size";
	if (!isnan(listed))
		snprintf(sys, sizeof sys, "%.3g MB", listed);
	if (!how)
		snprintf(llc, sizeof llc, "l2_mb the last-level cache one thread "
			 "reads from (the working set at the harmonic mean of "
			 "its cache and memory read rates, the median of three "
			 "sweeps, where the system lists %s)", sys);
	else
		snprintf(llc, sizeof llc, "l2_mb the last-level cache as the "
			 "system lists it (%s: %s)", sys, how);
	char date[32];
	time_t t = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
	snprintf(row, n, "%s\t%s x%d\t%s\t%s\tNA\t%d\t%ld\tNA\t%.0f\t%.1f\tNA\t"
		 "NA\t%.1f\t%.3g\t%.1f\tNA\tNA\t%s\tNA\tNA\tNA\tmeasured by "
		 "pn-time --cpu-spec on %s with %d thread%s: sgemm n=1536 "
		 "GFLOP/s oneDNN %.1f, OpenBLAS %.1f (its %s kernels%s; in "
		 "blas_fp32_gflops); %s in bf16_gflops; triad bandwidth; %s; "
		 "no other per-unit peak measured"
		 "\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\t%.1f\n",
		 name, model[0] ? model : "cpu",
		 threads, v, isa, threads, cores, clock > 0 ? clock : 1, mem, bw,
		 isnan(l3) ? 1 : l3, fmax(dnn, blas), bf, date, threads,
		 threads > 1 ? "s" : "", dnn, blas, core,
		 behind ? ", without the CPU's AVX2" : "", bfsrc, llc, blas);
}

/* Whether a cached row's measured columns hold what a measurement can:
 * positive, finite numbers (bf16_gflops NA or one; a hand-edited or
 * damaged cache is measured again). */
static int plausible(const char *header, const char *row)
{
	pn_gpu g;
	char name[256];
	if (pn_drift_parse_row(header, row, &g, name, sizeof name) != 0)
		return 0;
	const double must[] = {g.sms, g.cores, g.boost_mhz, g.mem_gb,
			       g.mem_bw_gbs, g.l2_mb, g.fp32_gflops,
			       g.blas_fp32_gflops};
	for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
		if (!(must[i] > 0 && isfinite(must[i])))
			return 0;
	return isnan(g.bf16_gflops) || (g.bf16_gflops > 0 &&
					isfinite(g.bf16_gflops));
}

void pn_cpu_spec(FILE *out, int threads, int remeasure, const char *cache_dir)
{
	char dir[1024], path[1100], row[2048] = "", name[256], header[1024];
	header_line(header, sizeof header);
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (cache_dir)
		snprintf(dir, sizeof dir, "%s", cache_dir);
	else if (xdg && *xdg)
		snprintf(dir, sizeof dir, "%s/pn", xdg);
	else
		snprintf(dir, sizeof dir, "%s/.cache/pn", home ? home : ".");
	snprintf(path, sizeof path, "%s/cpu-spec-%dt.tsv", dir, threads);
	pn_cpu_name(name, sizeof name, threads);
	FILE *f = remeasure ? NULL : fopen(path, "r");
	if (f) {
		char line[2048];
		/* the cached row, if it is this CPU's under today's header,
		 * from a pn that measures the cache (its source says), and
		 * its measurements numbers that can be */
		if (fgets(line, sizeof line, f) && strcmp(line, header) == 0 &&
		    fgets(line, sizeof line, f) &&
		    strncmp(line, name, strlen(name)) == 0 &&
		    line[strlen(name)] == '\t' &&
		    strstr(line, "l2_mb the last-level cache ") &&
		    plausible(header, line))
			snprintf(row, sizeof row, "%s", line);
		fclose(f);
	}
	if (!row[0]) {
		measure(row, sizeof row, threads);
		char tmp[1200];
		snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
		/* mkdir -p of the cache directory */
		for (char *p = dir + 1; *p; p++)
			if (*p == '/') {
				*p = 0;
				mkdir(dir, 0777);
				*p = '/';
			}
		mkdir(dir, 0777);
		/* as every output: a link is written through, and a device
		 * or FIFO is never replaced (it is no cache: left alone) */
		char *target = pn_output_target(path);
		struct stat st;
		snprintf(tmp, sizeof tmp, "%s.%ld", target, (long)getpid());
		FILE *w = NULL;
		if (stat(target, &st) == 0 && !S_ISREG(st.st_mode))
			pn_warn("cannot cache the CPU spec in %s: not a "
				"regular file", path);
		else if (!(w = fopen(tmp, "w")) || fputs(header, w) < 0 ||
			 fputs(row, w) < 0 || fclose(w) != 0 ||
			 rename(tmp, target) != 0) {
			pn_warn("cannot cache the CPU spec in %s: %s", path,
				strerror(errno));
			unlink(tmp);
		}
		free(target);
	}
	fputs(header, out);
	fputs(row, out);
}
