/* pn-specs - look up accelerators in the GPU spec table, or detect them */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/detect.h"
#include "err.h"
#include "gpuspec.h"
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
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n";

static void put(FILE *f, const char *s, int last)
{
	fputs(s, f);
	putc(last ? '\n' : '\t', f);
}

static void putv(FILE *f, double v)
{
	if (isnan(v))
		fputs("NA", f);
	else
		pn_put_num(f, v);
	putc('\t', f);
}

static void row(FILE *f, const pn_gpu *g)
{
	put(f, g->name, 0);
	put(f, g->aliases, 0);
	put(f, g->vendor, 0);
	put(f, g->arch, 0);
	put(f, g->cc, 0);
	putv(f, g->sms);
	putv(f, g->cores);
	putv(f, g->base_mhz);
	putv(f, g->boost_mhz);
	putv(f, g->mem_gb);
	put(f, g->mem_type, 0);
	putv(f, g->mem_bus_bits);
	putv(f, g->mem_bw_gbs);
	putv(f, g->l2_mb);
	putv(f, g->fp32_gflops);
	putv(f, g->tf32_gflops);
	putv(f, g->fp16_gflops);
	putv(f, g->bf16_gflops);
	put(f, g->bus, 0);
	putv(f, g->tdp_w);
	putv(f, g->price_usd_h);
	put(f, g->source, 1);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"detect", no_argument, 0, 'd'},
		{"gpuspecs", required_argument, 0, 'g'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	const char *specs = NULL, *out = NULL;
	int detect = 0, c;
	pn_init("pn-specs");
	pn_stdout_init();
	argv[0] = (char *)pn_prog;  /* getopt's messages start "pn-x: " */
	while ((c = getopt_long(argc, argv, "dg:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': detect = 1; break;
		case 'g': specs = optarg; break;
		case 'o': out = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  return 0;
		case 'V': pn_version();
		default: pn_try_help();
		}
	}
	if (detect && optind < argc)
		pn_usage_error("--detect takes no NAME");
	pn_gpus *t = pn_gpus_load(specs);
	/* every NAME, or up to 16 devices */
	const pn_gpu **sel = pn_xcalloc((size_t)argc + 16, sizeof *sel);
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
	fputs("name\taliases\tvendor\tarch\tcc\tsms\tcores\tbase_mhz\t"
	      "boost_mhz\tmem_gb\tmem_type\tmem_bus_bits\tmem_bw_gbs\tl2_mb\t"
	      "fp32_gflops\ttf32_gflops\tfp16_gflops\tbf16_gflops\tbus\ttdp_w\t"
	      "price_usd_h\tsource\n", f);
	if (n == 0 && !detect)
		for (int i = 0; i < t->n; i++)
			row(f, &t->g[i]);
	for (int i = 0; i < n; i++)
		row(f, sel[i]);
	pn_output_close(f);
	free(sel);
	pn_gpus_free(t);
	return 0;
}
