/* pn-onnx - write the pn network of an ONNX model (src/onnx/onnx.h) */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "arch.h"
#include "err.h"
#include "network.h"
#include "onnx.h"
#include "opt.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-onnx [OPTION]... MODEL.onnx\n"
"Write the pn network of one training step of an ONNX model, for one\n"
"sample, as pn-sum(1) reads it (\"-\": the model on standard input).\n"
"\n"
"  -s, --seq N           the value of symbolic dims other than the batch\n"
"                        (the batch: 1, one sample)\n"
"      --optimizer NAME  optimizer of the rows with weights: none, sgd,\n"
"                        adam, adagrad, adadelta, rmsprop (default sgd)\n"
PN_ARCH_HELP_ROWS
"      --strict          exit 1 when a node's op is not mapped\n"
"  -p, --params          print the parameter count instead of the network\n"
"  -o, --output FILE     write to FILE instead of standard output\n"
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n";

enum { O_STRICT = 256 };

typedef struct {
	const char *out;
	int params, strict;
} args;

static const char *parse(int argc, char **argv, args *g, pn_arch_opts *o)
{
	static const struct option opts[] = {
		PN_ARCH_LONGOPTS,
		{"strict", no_argument, 0, O_STRICT},
		{"params", no_argument, 0, 'p'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "s:po:h", opts, NULL)) != -1) {
		if (pn_arch_option(o, c, optarg))
			continue;
		switch (c) {
		case O_STRICT: g->strict = 1; break;
		case 'p': g->params = 1; break;
		case 'o': g->out = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  exit(0);
		case 'V': pn_version();
		default: pn_try_help();
		}
	}
	if (optind == argc)
		pn_usage_error("no model file");
	if (optind + 1 < argc)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);
	return argv[optind];
}

int main(int argc, char **argv)
{
	pn_init("pn-onnx");
	pn_stdout_init();
	argv[0] = (char *)pn_prog;
	args g = {0};
	pn_arch a = {.o = {.optimizer = -1, .prec = PN_FP32,
			   .phase = PN_PH_TRAIN}};
	const char *path = parse(argc, argv, &g, &a.o);
	if (!pn_onnx_available)
		pn_die(PN_EXIT_BACKEND, "built without protobuf-c (ONNX "
		       "support unavailable)");
	pn_onnx_unmapped u;
	pn_onnx_err e;
	if (pn_onnx_read(&a, path, &u, &e) != 0)
		pn_die_at(PN_EXIT_DATA, path, 0, "%s", e.msg);
	if (u.n) {
		char msg[1024];
		pn_onnx_unmapped_msg(&u, msg, sizeof msg);
		if (g.strict)
			pn_die_at(PN_EXIT_DATA, path, 0, "%s", msg);
		pn_warn("%s: %s", path, msg);
	}
	pn_onnx_unmapped_free(&u);
	pn_arch_data_grad(&a);
	pn_arch_emit(&a, g.out, g.params);
	pn_arch_free(&a);
	return 0;
}
