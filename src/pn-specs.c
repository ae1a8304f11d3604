/* pn-specs - look up accelerators in the GPU spec table, or detect them */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/detect.h"
#include "err.h"
#include "gpuspec.h"
#include "layer.h"
#include "roofline.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-specs [OPTION]... [NAME]...\n"
"Print the spec-table rows of the named GPUs (all rows when no NAME is given)\n"
"as TSV.  Names match the canonical name or any alias, ignoring case and\n"
"punctuation.\n"
"\n"
"  -d, --detect          print the rows of the CUDA devices of this machine\n"
"  -g, --gpuspecs FILE   read GPU specs from FILE (default: gpuspecs/gpus.tsv)\n"
"  -o, --output FILE     write to FILE instead of standard output\n"
"  -u, --units           instead of the rows, the peak each layer type and\n"
"                        precision runs at on each GPU: columns device layer\n"
"                        precision column peak_gflops (column: the spec\n"
"                        column of the unit it runs on)\n"
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n";

/* --units: one row per layer type and precision of g. */
static void units(FILE *f, const pn_gpu *g)
{
	for (int t = 0; t < PN_NLAYERS; t++)
		for (int p = 0; p < PN_NPREC; p++) {
			pn_peak k = pn_unit_peak(g, (pn_layer_type)t,
						 (pn_prec)p);
			fprintf(f, "%s\t%s\t%s\t%s\t", g->name,
				pn_layer_name((pn_layer_type)t),
				pn_prec_name((pn_prec)p), k.col);
			pn_put_num(f, k.gflops);
			putc('\n', f);
		}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"detect", no_argument, 0, 'd'},
		{"gpuspecs", required_argument, 0, 'g'},
		{"output", required_argument, 0, 'o'},
		{"units", no_argument, 0, 'u'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	const char *specs = NULL, *out = NULL;
	int detect = 0, unit = 0, c;
	pn_init("pn-specs");
	pn_stdout_init();
	argv[0] = (char *)pn_prog;  /* getopt's messages start "pn-x: " */
	while ((c = getopt_long(argc, argv, "dg:o:uh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': detect = 1; break;
		case 'g': specs = optarg; break;
		case 'o': out = optarg; break;
		case 'u': unit = 1; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  return 0;
		case 'V': pn_version();
		default: pn_try_help();
		}
	}
	if (detect && optind < argc)
		pn_usage_error("--detect takes no NAME");
	pn_gpus *t = pn_gpus_load(specs);
	/* every NAME, up to 16 devices, or every row */
	const pn_gpu **sel = pn_xcalloc((size_t)argc + 16 + (size_t)t->n,
					sizeof *sel);
	int n = 0;
	if (detect) {
		pn_cuda_device d[16];
		char why[256];
		int k = pn_cuda_devices(d, 16, why, sizeof why);
		if (k < 0)
			pn_die(PN_EXIT_BACKEND, "%s", why);
		if (k == 0)
			pn_die(PN_EXIT_BACKEND, "no CUDA device");
		for (int i = 0; i < k; i++)
			sel[n++] = pn_gpus_need(t, d[i].name, NULL, 0);
	} else {
		for (int i = optind; i < argc; i++)
			sel[n++] = pn_gpus_need(t, argv[i], NULL, 0);
	}
	FILE *f = pn_output_open(out);
	if (n == 0 && !detect)
		for (int i = 0; i < t->n; i++)
			sel[n++] = &t->g[i];
	if (unit)
		fputs("device\tlayer\tprecision\tcolumn\tpeak_gflops\n", f);
	else
		pn_gpus_write_header(f);
	for (int i = 0; i < n; i++)
		if (unit)
			units(f, sel[i]);
		else
			pn_gpus_write_row(f, sel[i]);
	pn_output_close(f);
	free(sel);
	pn_gpus_free(t);
	return 0;
}
