/* pn-featurize - append computational and hardware features to layer rows */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "gpuspec.h"
#include "layer.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-featurize [OPTION]... [FILE]\n"
"Append computational features (CO, CM, CT), roofline and wave features and\n"
"the device's spec sheet to every layer row of FILE (default: standard input).\n"
"\n"
"  -d, --device NAME     featurize every row for GPU NAME (sets the device\n"
"                        column, adding it when absent)\n"
"  -g, --gpuspecs FILE   read GPU specs from FILE (default: gpuspecs/gpus.tsv)\n"
"  -o, --output FILE     write to FILE instead of standard output\n"
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n"
"\n"
"Appended columns: flops co cm_weights cm_in cm_out cm_total traffic ct_ms\n"
"ai compute_ms memory_ms roofline_ms tiles waves wave_eff gpu_sms gpu_cores\n"
"gpu_boost_mhz gpu_mem_gb gpu_mem_bw_gbs gpu_l2_mb gpu_fp32_gflops\n"
"gpu_peak_gflops.  A column that already exists is replaced in place.\n"
"Formulas: see pn-featurize(1).\n";

enum { C_DEVICE, C_FLOPS, C_CO, C_CMW, C_CMI, C_CMO, C_CMT, C_TRAFFIC, C_CT,
       C_AI, C_COMPUTE, C_MEMORY, C_ROOF, C_TILES, C_WAVES, C_WAVEEFF,
       C_SMS, C_CORES, C_BOOST, C_MEMGB, C_BW, C_L2, C_FP32, C_PEAK, C_N };

static const char *const outnames[C_N] = {
	"device", "flops", "co", "cm_weights", "cm_in", "cm_out", "cm_total",
	"traffic", "ct_ms", "ai", "compute_ms", "memory_ms", "roofline_ms",
	"tiles", "waves", "wave_eff", "gpu_sms", "gpu_cores", "gpu_boost_mhz",
	"gpu_mem_gb", "gpu_mem_bw_gbs", "gpu_l2_mb", "gpu_fp32_gflops",
	"gpu_peak_gflops",
};

/* Peak FLOP/s for the precision: tensor throughput where the GPU has it for
 * fp16/bf16, else the FP32 peak (pn's fp32 data run without TF32). */
static double peak_gflops(const pn_gpu *g, int bytes)
{
	if (bytes == 2 && !isnan(g->fp16_gflops))
		return g->fp16_gflops;
	return g->fp32_gflops;
}

static void featurize(pn_tsv_out *o, const pn_layer *l, const pn_gpu *g)
{
	pn_work w;
	pn_layer_work(l, &w);
	double peak = peak_gflops(g, l->bytes) * 1e9;      /* FLOP/s */
	double bw = g->mem_bw_gbs * 1e9;                     /* B/s */
	double compute = w.flops / peak * 1e3, memory = w.traffic / bw * 1e3;
	double waves = ceil(w.tiles / g->sms);
	pn_tsv_out_num(o, C_FLOPS, w.flops);
	pn_tsv_out_num(o, C_CO, w.co);
	pn_tsv_out_num(o, C_CMW, w.cm_weights);
	pn_tsv_out_num(o, C_CMI, w.cm_in);
	pn_tsv_out_num(o, C_CMO, w.cm_out);
	pn_tsv_out_num(o, C_CMT, w.cm_total);
	pn_tsv_out_num(o, C_TRAFFIC, w.traffic);
	pn_tsv_out_num(o, C_CT, w.co / peak * 1e3);
	pn_tsv_out_num(o, C_AI, w.flops / w.traffic);
	pn_tsv_out_num(o, C_COMPUTE, compute);
	pn_tsv_out_num(o, C_MEMORY, memory);
	pn_tsv_out_num(o, C_ROOF, compute > memory ? compute : memory);
	pn_tsv_out_num(o, C_TILES, w.tiles);
	pn_tsv_out_num(o, C_WAVES, waves);
	pn_tsv_out_num(o, C_WAVEEFF, w.tiles / (waves * g->sms));
	pn_tsv_out_num(o, C_SMS, g->sms);
	pn_tsv_out_num(o, C_CORES, isnan(g->cores) ? 0 : g->cores);
	pn_tsv_out_num(o, C_BOOST, g->boost_mhz);
	pn_tsv_out_num(o, C_MEMGB, g->mem_gb);
	pn_tsv_out_num(o, C_BW, g->mem_bw_gbs);
	pn_tsv_out_num(o, C_L2, g->l2_mb);
	pn_tsv_out_num(o, C_FP32, g->fp32_gflops);
	pn_tsv_out_num(o, C_PEAK, peak / 1e9);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"device", required_argument, 0, 'd'},
		{"gpuspecs", required_argument, 0, 'g'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	const char *device = NULL, *specs = NULL, *out = NULL;
	int c;
	pn_init("pn-featurize");
	pn_stdout_init();
	argv[0] = (char *)pn_prog;  /* getopt's messages start "pn-x: " */
	while ((c = getopt_long(argc, argv, "d:g:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': device = optarg; break;
		case 'g': specs = optarg; break;
		case 'o': out = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  return 0;
		case 'V': pn_version();
		default: pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	const char *path = optind < argc ? argv[optind] : "-";

	pn_gpus *gpus = pn_gpus_load(specs);
	const pn_gpu *fixed = device ? pn_gpus_need(gpus, device, NULL, 0)
				     : NULL;
	pn_tsv *in = pn_tsv_open(path);
	pn_layer_cols *cols = pn_layer_cols_new(in);
	int dcol = device ? pn_tsv_find(in, "device")
			  : pn_tsv_col(in, "device");
	pn_tsv_out *o = pn_tsv_out_new(in, outnames, C_N);
	FILE *f = pn_output_open(out);
	pn_tsv_out_header(o, f);

	char last[256] = "";
	const pn_gpu *g = fixed;
	long rows = 0;
	while (pn_tsv_read(in)) {
		pn_layer l;
		pn_layer_read(in, cols, &l);
		if (!fixed) {
			const char *d = pn_tsv_str(in, dcol);
			if (strcmp(d, last) != 0) {
				g = pn_gpus_need(gpus, d, pn_tsv_path(in),
						 pn_tsv_lineno(in));
				snprintf(last, sizeof last, "%s", d);
			}
			pn_tsv_out_str(o, C_DEVICE, d);
		} else {
			pn_tsv_out_str(o, C_DEVICE, fixed->name);
		}
		featurize(o, &l, g);
		pn_tsv_out_row(o, f);
		rows++;
	}
	if (rows == 0)
		pn_die_at(PN_EXIT_DATA, path, 0, "no data rows");
	pn_output_close(f);
	pn_tsv_out_free(o);
	pn_layer_cols_free(cols);
	pn_tsv_close(in);
	pn_gpus_free(gpus);
	return 0;
}
