/* pn-featurize - append computational and hardware features to layer rows */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "featurize.h"
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
"ai compute_ms memory_ms roofline_ms tiles waves wave_eff ridge_ratio gpu_sms\n"
"gpu_cores gpu_boost_mhz gpu_mem_gb gpu_mem_bw_gbs gpu_l2_mb gpu_fp32_gflops\n"
"gpu_peak_gflops wave_roofline_ms sm_compute_ms sm_memory_ms l2_ratio\n"
"wave_l2_ratio lat_ms l2_ms lane_compute_ms lane_roofline_ms pad_co cpu_ms\n"
"mask_p vec_tail.  A column that already exists is replaced in place; the\n"
"optimizer of a layer without weights is written as none.\n"
"Formulas: see pn-featurize(1).\n";

/* Output column k: 0 is the device, 1 + PN_F_* the features, and
 * OPTCOL the optimizer where the input has one. */
#define OPTCOL (1 + PN_F_N)
static const char *outnames[OPTCOL + 1];

static void featurize(pn_tsv_out *o, const pn_layer *l, const pn_gpu *g)
{
	double f[PN_F_N];
	pn_feature_row(l, 0, g, f);
	for (int k = 0; k < PN_F_N; k++)
		pn_tsv_out_num(o, 1 + k, f[k]);
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
	outnames[0] = "device";
	for (int k = 0; k < PN_F_N; k++)
		outnames[1 + k] = pn_feature_names[k];
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
	/* a layer without weights has nothing to optimize: its optimizer
	 * is none, as a network's row says, whatever the input drew */
	int ocol = pn_tsv_find(in, "optimizer");
	outnames[OPTCOL] = "optimizer";
	pn_tsv_out *o = pn_tsv_out_new(in, outnames, ocol >= 0 ? OPTCOL + 1 :
							       OPTCOL);
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
			pn_tsv_out_str(o, 0, d);
		} else {
			pn_tsv_out_str(o, 0, fixed->name);
		}
		featurize(o, &l, g);
		if (ocol >= 0)
			pn_tsv_out_str(o, OPTCOL, pn_layer_defs[l.type].weights ?
				       pn_tsv_str(in, ocol) : "none");
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
