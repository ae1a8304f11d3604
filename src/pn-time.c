/* pn-time - time layer configurations on a backend (oneDNN on the CPU,
 * cuBLAS and cuDNN on a GPU) */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../cpu/cpu.h"
#include "../cuda/detect.h"
#include "../time/backend.h"
#include "../time/fault.h"
#include "../time/partial.h"
#include "clock.h"
#include "config.h"
#include "drift.h"
#include "err.h"
#include "gpuspec.h"
#include "opt.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-time [OPTION]... [FILE]\n"
"Time every layer configuration of FILE (default: standard input), as\n"
"pn-sample writes them, on a backend, and append the times: the forward\n"
"pass, the backward pass and the optimizer step of a training row.\n"
"\n"
"  -b, --backend NAME     cpu (oneDNN; the default) or cuda (cuBLAS, cuDNN)\n"
"  -r, --reps N           timed repetitions (default 10)\n"
"  -w, --warmup N         untimed steps before them (default 3)\n"
"  -j, --threads N        cpu: threads (default 1)\n"
"  -m, --mem-limit SIZE   give a row that needs more than SIZE bytes status\n"
"                         oom (suffix K, M, G; cpu default: 80% of the\n"
"                         memory available at start)\n"
"  -s, --seed S           seed of the random data (default 1)\n"
"      --cold             evict caches between repetitions (cuda default)\n"
"      --warm             keep them (cpu default)\n"
"      --rep-ms MS        warm: repeat a step within one repetition until\n"
"                         it lasts MS milliseconds (default 1)\n"
"      --clock NAME       cpu: auto (the default: cpu with one thread, else\n"
"                         wall), wall, or cpu, the CPU time of\n"
"                         the timing thread, which does not count the time\n"
"                         other processes take the core (--threads 1 only)\n"
"  -c, --check            compare every layer with a reference before\n"
"                         timing it (cuda: the cpu backend; cpu: plain C)\n"
"                         and report per layer type\n"
"  -d, --device NAME      write NAME to the device column\n"
"  -g, --gpuspecs FILE    match the GPU in FILE (default: gpuspecs/gpus.tsv);\n"
"                         with --cpu-spec, compare with FILE's row of this\n"
"                         CPU; either way warn when the machine differs from\n"
"                         its stored row beyond the tolerance (pn-time(1))\n"
"      --cpu-spec         print this CPU's spec row (gpuspecs layout) for\n"
"                         --threads and exit; measured once, then cached\n"
"      --remeasure        with --cpu-spec: measure again\n"
"      --strict           a machine that differs from its stored spec row\n"
"                         is an error (exit 1), not a warning\n"
"  -q, --quiet            no progress on standard error\n"
"  -o, --output FILE      write to FILE instead of standard output; until\n"
"                         the run ends the rows go to FILE.part, which\n"
"                         a killed run leaves behind\n"
"      --resume FILE      continue the run that left FILE.part: measure\n"
"                         only the rows not yet there (same input and\n"
"                         options)\n"
"  -h, --help             display this help and exit\n"
"      --version          output version information and exit\n"
"\n"
"Appended columns: device backend lib_versions time_fwd_ms time_bwd_ms\n"
"time_opt_ms time_ms time_min_ms time_median_ms time_max_ms time_std_ms\n"
"mem_bytes status message (and check_rel_err with --check).  status is ok,\n"
"oom, invalid or error; a failing row never stops the run.\n";

enum { C_DEVICE, C_BACKEND, C_LIBS, C_FWD, C_BWD, C_OPT, C_TIME, C_MIN,
       C_MEDIAN, C_MAX, C_STD, C_MEM, C_STATUS, C_MSG, C_CHECK, C_N };

static const char *const outnames[C_N] = {
	"device", "backend", "lib_versions", "time_fwd_ms", "time_bwd_ms",
	"time_opt_ms", "time_ms", "time_min_ms", "time_median_ms",
	"time_max_ms", "time_std_ms", "mem_bytes", "status", "message",
	"check_rel_err",
};

static struct {
	int reps, warmup, cold, check, quiet;
	double rep_ms;
} o = {10, 3, -1, 0, 0, 1};

/* ---- check mode --------------------------------------------------------- */

/* The host memory the kernel says is available now, bytes (0 unknown). */
static double avail_bytes(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	double kb = NAN;
	char line[256];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return isnan(kb) ? 0 : kb * 1024;
}


static struct {
	long rows, fails;
	double maxerr;
} checked[PN_NLAYERS];
static int opt_checked[PN_NOPT];

/* max |a - b| / max |b| */
static double relerr(const float *a, const float *b, size_t n)
{
	double d = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);
		if (e > d || isnan(e))
			d = isnan(e) ? INFINITY : e;
		if (fabs(b[i]) > m)
			m = fabs(b[i]);
	}
	return n == 0 ? 0 : d / (m > 0 ? m : 1);
}

static double tolerance(pn_prec p)
{
	return p == PN_FP32 ? 2e-3 : p == PN_BF16 ? 6e-2 : 2e-2;
}

/* Compare backend b with the reference ref on cfg: 0 when they agree,
 * 1 when either cannot hold or run the row (PN_OOM, PN_INVALID), or the
 * two fp32 copies of its arrays that the comparison keeps on the host
 * would take more than half of the memory available (nothing compared),
 * else -1 with msg; *err the largest relative error of y and, when grads,
 * of the gradients. */
static int compare(const pn_backend *b, const pn_backend *ref,
		   const pn_config *cfg0, uint64_t seed, int grads, double *err,
		   char *msg, size_t n)
{
	pn_config cfg = *cfg0, rcfg = cfg;
	rcfg.prec = PN_FP32;
	rcfg.l.bytes = 4;
	pn_run *run = NULL, *rrun = NULL;
	double mem;
	char m2[256];
	/* inputs, weights, outputs and their gradients, twice, in fp32 */
	double avail = avail_bytes();
	if (avail > 0 && 6 * pn_io_bytes(&rcfg) > 0.5 * avail)
		return 1;
	/* prepared before the data is made: a row too big for b is no
	 * failed check, and its data may not fit in memory either */
	int st = b->prepare(&cfg, &run, &mem, msg, n);
	if (st == PN_OOM || st == PN_INVALID)
		return 1;
	pn_io io, rio;
	pn_io_init(&io, &cfg, seed);
	pn_io_init(&rio, &cfg, seed);
	if (st == PN_OK) {
		st = b->compute(run, &io, msg, n);
		b->release(run);
	}
	if (st == PN_OK) {
		st = ref->prepare(&rcfg, &rrun, &mem, m2, sizeof m2);
		if (st == PN_OK) {
			st = ref->compute(rrun, &rio, m2, sizeof m2);
			ref->release(rrun);
		}
		if (st != PN_OK && st != PN_OOM && st != PN_INVALID)
			snprintf(msg, n, "check: %s reference: %s", ref->name, m2);
	}
	if (st == PN_OOM || st == PN_INVALID) {     /* either: unchecked */
		pn_io_free(&io);
		pn_io_free(&rio);
		return 1;
	}
	*err = 0;
	int bad = st != PN_OK;
	if (!bad) {
		static const char *const what[] = {"y", "dx", "dx2", "dw"};
		const float *got[] = {io.y, io.dx, io.dx2, io.dw};
		const float *want[] = {rio.y, rio.dx, rio.dx2, rio.dw};
		size_t len[] = {io.ny, io.nx, io.nx2, io.nw};
		for (int i = 0; i < 4; i++) {
			if (i > 0 && (!cfg.l.train || !grads))
				break;
			if (i == 1 && (cfg.l.type == PN_EMBEDDING ||
				       cfg.l.no_input_grad))
				continue;
			double e = relerr(got[i], want[i], len[i]);
			if (e > *err) {
				*err = e;
				if (e > tolerance(cfg.prec)) {
					snprintf(msg, n, "check failed: relative "
						 "error %.3g in %s (tolerance "
						 "%.3g)", e, what[i],
						 tolerance(cfg.prec));
					bad = 1;
				}
			}
		}
	}
	pn_io_free(&io);
	pn_io_free(&rio);
	return bad ? -1 : 0;
}

/* The optimizer kernels of b against ref's, once per optimizer: 0 or -1
 * with msg. */
static int check_opt(const pn_backend *b, const pn_backend *ref,
		     const pn_config *cfg, uint64_t seed, char *msg, size_t n)
{
	int opt = cfg->l.optimizer, bad = 0;
	if (!cfg->l.train || opt == PN_OPT_NONE || opt_checked[opt])
		return 0;
	opt_checked[opt] = 1;
	size_t k = 4096;
	pn_io t;
	pn_config c = *cfg;
	char m2[256];
	c.l.type = PN_SOFTMAX;
	c.l.batch = 1;
	c.l.seq_len = 1;
	c.l.dim = (double)k;
	pn_io_init(&t, &c, seed + 1);   /* x: w, dy: g */
	memcpy(t.y, t.x, k * sizeof(float));
	float lr = cfg->lr > 0 ? (float)cfg->lr : 1e-3f;
	if (b->optimize(opt, lr, k, t.x, t.dy, 3, msg, n) != PN_OK ||
	    ref->optimize(opt, lr, k, t.y, t.dy, 3, m2, sizeof m2) != PN_OK) {
		bad = 1;
	} else {
		double e = relerr(t.x, t.y, k);
		if (e > 1e-5) {
			snprintf(msg, n, "check failed: optimizer %s: "
				 "relative error %.3g", pn_opt_name(opt), e);
			bad = 1;
		}
	}
	pn_io_free(&t);
	return bad ? -1 : 0;
}

/* Check row cfg0 of backend b against the reference ref (compare's
 * result and *err).  Recurrent layers run without their last-step
 * activation (it rewrites the gradient the caller gives), and without
 * dropout against cuDNN, whose masks are its own.  A relu row in tf32,
 * fp16 or bf16 has its outputs compared as it is and its gradients on the
 * same row without the relu: the backend rounds the pre-activation (or
 * the products that make it) to 8 to 11 bits, the fp32 reference does
 * not, so a pre-activation within that rounding of 0 takes the other
 * side of the kink and moves a whole term of a gradient's sum (seen on an
 * H200: cuBLAS bf16 dense, batch 2, dw off by 36%; cuDNN fp16 conv2d, dx
 * off by 21%), a difference of the precision, not of the kernels; relu's
 * gradient is checked in fp32. */
static int check_row(const pn_backend *b, const pn_backend *ref,
		     const pn_config *cfg0, uint64_t seed, double *err,
		     char *msg, size_t n)
{
	pn_config cfg = *cfg0;
	if (cfg.l.type == PN_RNN || cfg.l.type == PN_LSTM || cfg.l.type == PN_GRU) {
		cfg.l.activation = PN_ACT_NONE;
		if (b == pn_cuda_backend())
			cfg.l.dropout = 0;
	}
	int kink = cfg.l.activation == PN_ACT_RELU && cfg.l.train &&
		   cfg.prec != PN_FP32;
	int st = compare(b, ref, &cfg, seed, !kink, err, msg, n);
	if (st == 0 && kink) {
		double e2 = 0;
		cfg.l.activation = PN_ACT_NONE;
		st = compare(b, ref, &cfg, seed, 1, &e2, msg, n);
		if (e2 > *err)
			*err = e2;
	}
	if (st == 0)
		st = check_opt(b, ref, &cfg, seed, msg, n);
	return st;
}

static void check_report(void)
{
	for (int t = 0; t < PN_NLAYERS; t++) {
		if (!checked[t].rows)
			continue;
		fprintf(stderr, "%s: check %s: %s (%ld row%s, max relative "
			"error %.3g)\n", pn_prog, pn_layer_name((pn_layer_type)t),
			checked[t].fails ? "FAIL" : "PASS", checked[t].rows,
			checked[t].rows == 1 ? "" : "s", checked[t].maxerr);
	}
}

/* ---- timing ------------------------------------------------------------- */

typedef struct {
	double fwd, bwd, opt, total, min, max, sd;
} result;

/* measure's repetition times: one buffer for the run (--reps is fixed),
 * so that a fault (fault.h) that leaves measure midway loses nothing. */
static double *timing;

static int measure(const pn_backend *b, pn_run *run, result *res, char *msg,
		   size_t n)
{
	pn_phases t = {0, 0, 0};
	int st;
	for (int i = 0; i < o.warmup; i++)
		if ((st = b->step(run, &t, msg, n)) != PN_OK)
			return st;
	double est = o.warmup > 0 ? t.fwd + (isnan(t.bwd) ? 0 : t.bwd) +
		     (isnan(t.opt) ? 0 : t.opt) : 0;
	int inner = 1;
	if (!o.cold && est > 0 && est < o.rep_ms)
		inner = (int)fmin(1000, ceil(o.rep_ms / est));
	if (!timing)
		timing = pn_xmalloc((size_t)o.reps * 4 * sizeof(double));
	double *fwd = timing;
	double *bwd = fwd + o.reps, *opt = bwd + o.reps, *tot = opt + o.reps;
	for (int r = 0; r < o.reps; r++) {
		if (o.cold && b->flush)
			b->flush();
		double f = 0, bw = 0, op = 0;
		for (int i = 0; i < inner; i++) {
			if ((st = b->step(run, &t, msg, n)) != PN_OK)
				return st;
			f += t.fwd;
			bw += t.bwd;      /* NAN when the phase did not run */
			op += t.opt;
		}
		fwd[r] = f / inner;
		bwd[r] = bw / inner;
		opt[r] = op / inner;
		tot[r] = fwd[r] + (isnan(bwd[r]) ? 0 : bwd[r]) +
			 (isnan(opt[r]) ? 0 : opt[r]);
	}
	double x;
	pn_stats(tot, o.reps, &res->total, &res->min, &res->max, &res->sd);
	pn_stats(fwd, o.reps, &res->fwd, &x, &x, &x);
	if (isnan(bwd[0]))
		res->bwd = NAN;
	else
		pn_stats(bwd, o.reps, &res->bwd, &x, &x, &x);
	if (isnan(opt[0]))
		res->opt = NAN;
	else
		pn_stats(opt, o.reps, &res->opt, &x, &x, &x);
	return PN_OK;
}

static void put_ms(pn_tsv_out *out, int k, double v)
{
	if (isnan(v))
		pn_tsv_out_str(out, k, "NA");
	else
		pn_tsv_out_num(out, k, round(v * 1e6) / 1e6);
}

/* Rows of a regular file (for the ETA), or -1. */
static long count_rows(const char *path)
{
	struct stat st;
	if (strcmp(path, "-") == 0 || stat(path, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return -1;
	pn_tsv *t = pn_tsv_open(path);
	long n = 0;
	while (pn_tsv_read(t))
		n++;
	pn_tsv_close(t);
	return n;
}

/* done rows of total (-1: unknown), fresh of them measured since t0 */
static void progress(long done, long total, long fresh, double t0, int last)
{
	double dt = pn_now_s() - t0, rate = dt > 0 ? fresh / dt : 0;
	fprintf(stderr, "\r%s: %ld", pn_prog, done);
	if (total > 0)
		fprintf(stderr, "/%ld", total);
	fprintf(stderr, " rows, %.2f rows/s", rate);
	if (total > 0 && rate > 0 && !last) {
		double eta = (double)(total - done) / rate;
		fprintf(stderr, ", ETA %02d:%02d:%02d", (int)(eta / 3600),
			(int)fmod(eta / 60, 60), (int)fmod(eta, 60));
	}
	fputs(last ? "\n" : "   ", stderr);
}

/* ---- options ------------------------------------------------------------ */

static struct {
	const char *backend, *device, *specs, *out, *resume;
	pn_bk_opts bo;
	int cpuspec, remeasure, strict;
} a = {"cpu", NULL, NULL, NULL, NULL, {1, -1, 1, 0, -1}, 0, 0, 0};

static void parse_args(int argc, char **argv)
{
	enum { O_COLD = 256, O_WARM, O_REPMS, O_CPUSPEC, O_REMEASURE, O_VERSION,
	       O_CLOCK, O_RESUME, O_STRICT };
	static const struct option lopts[] = {
		{"backend", required_argument, 0, 'b'},
		{"reps", required_argument, 0, 'r'},
		{"warmup", required_argument, 0, 'w'},
		{"threads", required_argument, 0, 'j'},
		{"mem-limit", required_argument, 0, 'm'},
		{"seed", required_argument, 0, 's'},
		{"cold", no_argument, 0, O_COLD},
		{"warm", no_argument, 0, O_WARM},
		{"rep-ms", required_argument, 0, O_REPMS},
		{"clock", required_argument, 0, O_CLOCK},
		{"check", no_argument, 0, 'c'},
		{"device", required_argument, 0, 'd'},
		{"gpuspecs", required_argument, 0, 'g'},
		{"cpu-spec", no_argument, 0, O_CPUSPEC},
		{"remeasure", no_argument, 0, O_REMEASURE},
		{"strict", no_argument, 0, O_STRICT},
		{"quiet", no_argument, 0, 'q'},
		{"output", required_argument, 0, 'o'},
		{"resume", required_argument, 0, O_RESUME},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, O_VERSION},
		{0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "b:r:w:j:m:s:cd:g:qo:h", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'b': a.backend = optarg; break;
		case 'r': o.reps = (int)pn_opt_whole("--reps", optarg, 1, 1000000); break;
		case 'w': o.warmup = (int)pn_opt_whole("--warmup", optarg, 0, 1000000); break;
		case 'j': a.bo.threads = (int)pn_opt_whole("--threads", optarg, 1, 1000000); break;
		case 'm': a.bo.mem_limit = pn_opt_size("--mem-limit", optarg); break;
		case 's': a.bo.seed = pn_opt_seed("--seed", optarg); break;
		case O_COLD: o.cold = 1; break;
		case O_WARM: o.cold = 0; break;
		case O_REPMS: {
			double v;
			if (pn_parse_num(optarg, strlen(optarg), &v) != 0 || v < 0)
				pn_usage_error("--rep-ms: '%s' is not a number "
					       ">= 0", optarg);
			o.rep_ms = v;
			break;
		}
		case O_CLOCK:
			if (strcmp(optarg, "auto") == 0)
				a.bo.cpu_clock = -1;
			else if (strcmp(optarg, "wall") == 0)
				a.bo.cpu_clock = 0;
			else if (strcmp(optarg, "cpu") == 0)
				a.bo.cpu_clock = 1;
			else
				pn_usage_error("--clock: unknown clock '%s' (one of: "
					       "auto, wall, cpu)", optarg);
			break;
		case 'c': o.check = 1; break;
		case 'd':
			/* a cell of every row: a tab or a newline would
			 * break them */
			if (!*optarg || strpbrk(optarg, "\t\r\n"))
				pn_usage_error("--device needs a non-empty "
					       "name without tabs or newlines");
			a.device = optarg;
			break;
		case 'g': a.specs = optarg; break;
		case O_CPUSPEC: a.cpuspec = 1; break;
		case O_REMEASURE: a.remeasure = 1; break;
		case O_STRICT: a.strict = 1; break;
		case 'q': o.quiet = 1; break;
		case 'o': a.out = optarg; break;
		case O_RESUME: a.resume = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  exit(0);
		case O_VERSION: pn_version();
		default: pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	if (a.resume && a.out && strcmp(a.resume, a.out) != 0)
		pn_usage_error("-o %s: --resume %s writes to %s itself", a.out,
			       a.resume, a.resume);
	if (a.resume && a.cpuspec)
		pn_usage_error("--resume and --cpu-spec exclude each other");
	if (a.resume)
		a.out = a.resume;
}

static const pn_backend *pick_backend(void)
{
	const pn_backend *b = NULL;
	if (strcmp(a.backend, "cpu") == 0) {
		b = pn_cpu_backend();
	} else if (strcmp(a.backend, "cuda") == 0) {
		b = pn_cuda_backend();
		if (!b)
			pn_die(PN_EXIT_BACKEND, "CUDA backend not built (rebuild "
			       "with the CUDA toolkit and cuDNN installed)");
	} else {
		pn_usage_error("--backend: unknown backend '%s' (one of: cpu, "
			       "cuda)", a.backend);
	}
	if (a.bo.cpu_clock == 1 && (a.bo.threads > 1 || b != pn_cpu_backend()))
		pn_usage_error("--clock cpu needs --backend cpu and --threads 1");
	/* by default the steadier clock wherever it applies */
	if (a.bo.cpu_clock < 0)
		a.bo.cpu_clock = a.bo.threads == 1 && b == pn_cpu_backend();
	return b;
}

/* The settings a resumed run must repeat (the rows themselves show the
 * device, the backend and the libraries). */
static void settings(char *buf, size_t n, const pn_backend *b, double mem_limit)
{
	char mem[40] = "auto";
	if (mem_limit >= 0)
		snprintf(mem, sizeof mem, "%.17g", mem_limit);
	snprintf(buf, n, "pn-time %s: backend %s, threads %d, reps %d, "
		 "warmup %d, seed %llu, %s, rep-ms %.17g, clock %s, mem-limit "
		 "%s%s", PN_VERSION, b->name, a.bo.threads, o.reps, o.warmup,
		 (unsigned long long)a.bo.seed, o.cold ? "cold" : "warm",
		 o.rep_ms, a.bo.cpu_clock ? "cpu" : "wall", mem,
		 o.check ? ", check" : "");
}

/* ---- output ------------------------------------------------------------- */

/* Where the rows go: standard output, a device (written directly), or
 * a partial file (see partial.h). */
typedef struct {
	FILE *f;
	pn_partial *part;
} output;

static int is_outname(const char *name)
{
	for (int k = 0; k < C_N; k++)
		if (strcmp(name, outnames[k]) == 0)
			return 1;
	return 0;
}

static char *header_of(const pn_tsv_out *tout, const pn_tsv *t)
{
	char *s = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&s, &n);
	if (!m)
		pn_die(PN_EXIT_DATA, "out of memory");
	if (tout) {
		pn_tsv_out_header((pn_tsv_out *)tout, m);
	} else {
		pn_tsv_put_header(m, t);
		putc('\n', m);
	}
	fclose(m);
	return s;
}

/* A resumed row of --check, counted as the run that measured it counted
 * it: checked when it has a relative error, failed when its status is
 * error. */
static void count_check(const pn_tsv *in, const pn_config_cols *cols,
			const pn_tsv *prev, long *failed)
{
	pn_config cfg;
	char msg[512];
	double err;
	int ce = pn_tsv_col(prev, outnames[C_CHECK]);
	int cs = pn_tsv_col(prev, outnames[C_STATUS]);
	if (pn_config_read(in, cols, &cfg, msg, sizeof msg) != 0 ||
	    pn_tsv_na(prev, ce) ||
	    pn_parse_num(pn_tsv_str(prev, ce), pn_tsv_len(prev, ce), &err) != 0)
		return;
	int t = cfg.l.type;
	checked[t].rows++;
	if (err > checked[t].maxerr)
		checked[t].maxerr = err;
	if (strcmp(pn_tsv_str(prev, cs), "error") == 0) {
		checked[t].fails++;
		(*failed)++;
	}
}

/* The rows of the partial file: the first rows of in, in order, with
 * this run's header, device, backend and libraries.  Returns their
 * number; in is left at the last of them. */
static long kept_rows(pn_partial *p, pn_tsv *in, const pn_config_cols *cols,
		      const pn_tsv_out *tout, const char *const mine[3],
		      long *failed)
{
	const char *path = pn_partial_path(p);
	pn_tsv *prev = pn_tsv_open(path);
	char *want = header_of(tout, NULL), *got = header_of(NULL, prev);
	if (strcmp(want, got) != 0)
		pn_die_at(PN_EXIT_DATA, path, 1, "not the columns this run "
			  "writes for %s (another input, or --check added or "
			  "left out)", pn_tsv_path(in));
	free(want);
	free(got);
	const int mcol[3] = {C_DEVICE, C_BACKEND, C_LIBS};
	long n = 0;
	while (pn_tsv_read(prev)) {
		if (!pn_tsv_read(in))
			pn_die_at(PN_EXIT_DATA, path, pn_tsv_lineno(prev),
				  "more rows than the input %s", pn_tsv_path(in));
		n++;
		for (int i = 0; i < pn_tsv_ncols(in); i++)
			if (!is_outname(pn_tsv_colname(in, i)) &&
			    strcmp(pn_tsv_str(in, i), pn_tsv_str(prev, i)) != 0)
				pn_die_at(PN_EXIT_DATA, path, pn_tsv_lineno(prev),
					  "column '%s': '%s', but '%s' in %s:%ld: "
					  "not the rows of this input",
					  pn_tsv_colname(in, i),
					  pn_tsv_str(prev, i), pn_tsv_str(in, i),
					  pn_tsv_path(in), pn_tsv_lineno(in));
		for (int k = 0; k < 3; k++) {
			int c = pn_tsv_col(prev, outnames[mcol[k]]);
			if (strcmp(pn_tsv_str(prev, c), mine[k]) != 0)
				pn_die_at(PN_EXIT_DATA, path, pn_tsv_lineno(prev),
					  "column '%s': '%s', but this run's is "
					  "'%s'", outnames[mcol[k]],
					  pn_tsv_str(prev, c), mine[k]);
		}
		if (o.check)
			count_check(in, cols, prev, failed);
	}
	pn_tsv_close(prev);
	return n;
}

/* Open the output: a fresh one with its header, or (--resume) the partial
 * one after the rows it keeps, *kept of them. */
static output open_output(const char *set, pn_tsv *in,
			  const pn_config_cols *cols, pn_tsv_out *tout,
			  const char *const mine[3], long *kept, long *failed)
{
	output out = {NULL, NULL};
	struct stat st;
	*kept = 0;
	if (!a.out || strcmp(a.out, "-") == 0 ||
	    (stat(a.out, &st) == 0 && !S_ISREG(st.st_mode))) {
		if (a.resume)
			pn_usage_error("--resume %s: not a regular file", a.resume);
		out.f = pn_output_open(a.out);
		pn_tsv_out_header(tout, out.f);
		return out;
	}
	if (!a.resume) {
		out.part = pn_partial_create(a.out, set);
		out.f = pn_partial_file(out.part);
		pn_tsv_out_header(tout, out.f);
		fflush(out.f);
		return out;
	}
	out.part = pn_partial_resume(a.out, set);
	int empty = pn_partial_empty(out.part);
	if (!empty)
		*kept = kept_rows(out.part, in, cols, tout, mine, failed);
	out.f = pn_partial_append(out.part);
	if (empty)
		pn_tsv_out_header(tout, out.f);
	fprintf(stderr, "%s: %s: resuming after %ld row%s%s\n", pn_prog,
		pn_partial_path(out.part), *kept, *kept == 1 ? "" : "s",
		pn_partial_cut(out.part) ? " (a last line cut short dropped)" :
		"");
	return out;
}

static void row_written(output *out)
{
	if (out->part)
		pn_partial_row(out->part);
	else
		fflush(out->f);
}

static void close_output(output *out)
{
	if (out->part)
		pn_partial_finish(out->part);
	else
		pn_output_close(out->f);
}

/* ---- rows --------------------------------------------------------------- */

/* Check (--check) and time the row read into cfg, under the guard of
 * fault.h: a SIGILL in the library's code makes the row an error (and,
 * with --check, a failed check), its run released (what --check, or the
 * library in the call that faulted, had allocated for it is lost). */
static int run_row(const pn_backend *b, const pn_backend *ref,
		   const pn_config *cfg, long row, result *res, double *mem,
		   double *err, long *failed, char *msg, size_t n)
{
	pn_run *volatile held = NULL;
	if (sigsetjmp(*pn_fault_arm(), 1) != 0) {
		if (held)
			b->release(held);
		snprintf(msg, n, "%s", pn_fault_message());
		if (o.check) {          /* a kernel that faults fails its check */
			checked[cfg->l.type].fails++;
			(*failed)++;
		}
		return PN_ERROR;
	}
	int st = PN_OK;
	if (o.check) {
		int t = cfg->l.type;
		uint64_t seed = a.bo.seed + (uint64_t)row;
		int bad = check_row(b, ref, cfg, seed, err, msg, n);
		if (bad == 1)           /* oom or invalid: not checked */
			*err = NAN;
		else
			checked[t].rows++;
		if (*err > checked[t].maxerr)
			checked[t].maxerr = *err;
		if (bad == -1) {
			checked[t].fails++;
			(*failed)++;
			st = PN_ERROR;
		}
	}
	pn_run *run = NULL;
	if (st == PN_OK)
		st = b->prepare(cfg, &run, mem, msg, n);
	if (st == PN_OK) {
		char m2[512];
		held = run;
		pn_fault_inject(row);
		st = measure(b, run, res, m2, sizeof m2);
		if (st != PN_OK)
			snprintf(msg, n, "%s", m2);
		held = NULL;
		b->release(run);
	}
	pn_fault_disarm();
	return st;
}

/* Check (--check) and time the row just read: its status, message (msg),
 * times, memory and relative error. */
static int time_row(const pn_backend *b, const pn_backend *ref,
		    const pn_tsv *in, const pn_config_cols *cols, long row,
		    result *res, double *mem, double *err, long *failed,
		    char *msg, size_t n)
{
	pn_config cfg;
	*res = (result){NAN, NAN, NAN, NAN, NAN, NAN, NAN};
	*mem = *err = NAN;
	msg[0] = 0;
	int st;
	if (pn_config_read(in, cols, &cfg, msg, n) != 0)
		return PN_INVALID;
	if (cfg.l.type == PN_MEM) {
		snprintf(msg, n, "pn-time does not time layer type '%s'",
			 pn_layer_name(cfg.l.type));
		return PN_INVALID;
	}
	st = run_row(b, ref, &cfg, row, res, mem, err, failed, msg, n);
	if (st == PN_ERROR) {
		char why[512];
		if (b->recover(why, sizeof why) != 0)
			pn_die_at(PN_EXIT_DATA, pn_tsv_path(in),
				  pn_tsv_lineno(in), "%s; cannot recover "
				  "the %s backend: %s", msg, b->name, why);
	}
	if (st != PN_OK)
		*res = (result){NAN, NAN, NAN, NAN, NAN, NAN, NAN};
	if (st == PN_INVALID)
		*mem = NAN;
	return st;
}

static void put_row(pn_tsv_out *tout, FILE *f, const char *const mine[3],
		    int st, const result *res, double mem, double err, char *msg)
{
	pn_tsv_out_str(tout, C_DEVICE, mine[0]);
	pn_tsv_out_str(tout, C_BACKEND, mine[1]);
	pn_tsv_out_str(tout, C_LIBS, mine[2]);
	put_ms(tout, C_FWD, res->fwd);
	put_ms(tout, C_BWD, res->bwd);
	put_ms(tout, C_OPT, res->opt);
	put_ms(tout, C_TIME, res->total);
	put_ms(tout, C_MIN, res->min);
	put_ms(tout, C_MEDIAN, res->total);
	put_ms(tout, C_MAX, res->max);
	put_ms(tout, C_STD, res->sd);
	if (isnan(mem))
		pn_tsv_out_str(tout, C_MEM, "NA");
	else
		pn_tsv_out_num(tout, C_MEM, mem);
	pn_tsv_out_str(tout, C_STATUS, pn_status_name(st));
	for (char *p = msg; *p; p++)      /* keep the TSV intact */
		if (*p == '\t' || *p == '\n' || *p == '\r')
			*p = ' ';
	pn_tsv_out_str(tout, C_MSG, msg[0] ? msg : "NA");
	if (o.check) {
		if (isnan(err))
			pn_tsv_out_str(tout, C_CHECK, "NA");
		else
			pn_tsv_out_num(tout, C_CHECK, err);
	}
	pn_tsv_out_row(tout, f);
}

/* ---- main --------------------------------------------------------------- */

/* The GPU being timed against its spec row g (drift.h): the properties
 * CUDA reports, where it reports them. */
static void gpu_drift(const pn_gpu *g, const char *file)
{
	pn_cuda_device cd[64];
	char why[256];
	int nd = pn_cuda_devices(cd, 64, why, sizeof why);
	if (a.bo.device < 0 || a.bo.device >= nd)
		return;
	pn_gpu now;
	char name[8];
	pn_drift_parse_row("name", "-", &now, name, sizeof name);
	now.sms = cd[a.bo.device].sms;
	now.mem_gb = cd[a.bo.device].mem_gb;
	now.l2_mb = cd[a.bo.device].l2_mb;
	pn_drift_report(&now, g, pn_drift_gpu, g->name, file, "check which "
			"GPU this is (a MIG slice? another model under the "
			"name?) and give it a row of its own (pn-specs "
			"--detect)", a.strict);
}

/* The device column: --device, the CPU's name, or the GPU's name in the
 * spec table. */
static void device_name(const pn_backend *b, char *dev, size_t n)
{
	if (a.device) {
		snprintf(dev, n, "%s", a.device);
	} else if (b != pn_cpu_backend()) {
		pn_gpus *gpus = pn_gpus_load(a.specs);
		const pn_gpu *g = pn_gpus_find(gpus, dev);
		if (g) {
			gpu_drift(g, gpus->path);
			snprintf(dev, n, "%s", g->name);
		} else {
			pn_warn("unknown GPU '%s' (not in %s); the device "
				"column gets its CUDA name", dev, gpus->path);
		}
		pn_gpus_free(gpus);
	}
}

/* --cpu-spec: the CPU's spec row (measured or cached), compared with the
 * stored row of its name in -g FILE or $PN_GPUSPECS when given (drift.h),
 * then written. */
static void cpu_spec(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m)
		pn_die(PN_EXIT_DATA, "cannot hold the CPU spec row: %s",
		       strerror(errno));
	pn_cpu_spec(m, a.bo.threads, a.remeasure, NULL);
	if (fclose(m) != 0)
		pn_die(PN_EXIT_DATA, "cannot hold the CPU spec row: %s",
		       strerror(errno));
	const char *env = getenv("PN_GPUSPECS");
	const char *stored = a.specs ? a.specs : env && *env ? env : NULL;
	char *row = strchr(text, '\n');
	pn_gpu now;
	char name[256];
	if (stored && row && pn_drift_parse_row(text, row + 1, &now, name,
						sizeof name) == 0) {
		pn_gpus *gpus = pn_gpus_load(stored);
		const pn_gpu *g = pn_gpus_find(gpus, name);
		if (g)
			pn_drift_report(&now, g, pn_drift_cpu, name, gpus->path,
					"re-measure with pn-time --cpu-spec "
					"--remeasure, store the row (-o FILE) "
					"and re-time what was timed on the old "
					"machine", a.strict);
		else
			pn_warn("%s has no row '%s': the spec row is not "
				"compared", gpus->path, name);
		pn_gpus_free(gpus);
	}
	FILE *f = pn_output_open(a.out);
	fputs(text, f);
	pn_output_close(f);
	free(text);
}

int main(int argc, char **argv)
{
	pn_init("pn-time");
	pn_stdout_init();
	static char **argv0;  /* static: reachable at every exit */
	argv0 = pn_xmalloc(((size_t)argc + 1) * sizeof *argv0);
	memcpy(argv0, argv, ((size_t)argc + 1) * sizeof *argv0);
	argv[0] = (char *)pn_prog;  /* getopt's messages start "pn-x: " */
	parse_args(argc, argv);
	const pn_backend *b = pick_backend();
	/* OpenMP threads that spin while they wait slow everything down when
	 * another process has a core: make them sleep (read at start-up) */
	if (a.bo.threads > 1 && !getenv("OMP_WAIT_POLICY")) {
		setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
		execv("/proc/self/exe", argv0);
		pn_warn("cannot restart with OMP_WAIT_POLICY=PASSIVE; set it "
			"yourself");
	}
	free(argv0);
	if (a.cpuspec) {
		if (optind < argc)
			pn_usage_error("--cpu-spec takes no FILE");
		cpu_spec();
		return 0;
	}
	if (o.cold < 0)
		o.cold = b != pn_cpu_backend();
	char set[512];
	settings(set, sizeof set, b, a.bo.mem_limit);
	if (a.bo.mem_limit < 0)
		a.bo.mem_limit = b == pn_cpu_backend() ? 0.8 * avail_bytes() : 0;
	const char *path = optind < argc ? argv[optind] : "-";

	char dev[256], versions[256], msg[512];
	if (b->open(&a.bo, dev, sizeof dev, versions, sizeof versions, msg,
		    sizeof msg) != 0)
		pn_die(PN_EXIT_BACKEND, "%s", msg);
	const pn_backend *ref = NULL;
	char rdev[256], rver[256];
	if (o.check) {
		ref = b == pn_cpu_backend() ? pn_ref_backend() : pn_cpu_backend();
		pn_bk_opts ro = a.bo;
		ro.mem_limit = 0.8 * avail_bytes();
		if (ref->open(&ro, rdev, sizeof rdev, rver, sizeof rver, msg,
			      sizeof msg) != 0)
			pn_die(PN_EXIT_BACKEND, "%s", msg);
	}
	device_name(b, dev, sizeof dev);
	const char *const mine[3] = {dev, b->name, versions};

	long total = !o.quiet && isatty(2) ? count_rows(path) : -1;
	pn_tsv *in = pn_tsv_open(path);
	pn_config_cols *cols = pn_config_cols_new(in);
	pn_tsv_out *tout = pn_tsv_out_new(in, outnames, o.check ? C_N : C_N - 1);
	long rows = 0, kept = 0, failed_checks = 0;
	output out = open_output(set, in, cols, tout, mine, &kept,
				 &failed_checks);
	rows = kept;
	double t0 = pn_now_s();
	while (pn_tsv_read(in)) {
		result res;
		double mem, err;
		rows++;
		int st = time_row(b, ref, in, cols, rows, &res, &mem, &err,
				  &failed_checks, msg, sizeof msg);
		put_row(tout, out.f, mine, st, &res, mem, err, msg);
		row_written(&out);
		if (!o.quiet && isatty(2))
			progress(rows, total, rows - kept, t0, 0);
	}
	if (!o.quiet && isatty(2) && rows > kept)
		progress(rows, total, rows - kept, t0, 1);
	if (rows == 0)
		pn_die_at(PN_EXIT_DATA, path, 0, "no data rows");
	close_output(&out);
	if (o.check)
		check_report();
	free(timing);
	pn_tsv_out_free(tout);
	pn_config_cols_free(cols);
	pn_tsv_close(in);
	b->close();
	if (ref)
		ref->close();
	if (failed_checks)
		pn_die(PN_EXIT_DATA, "%ld row%s failed the check", failed_checks,
		       failed_checks == 1 ? "" : "s");
	return 0;
}
