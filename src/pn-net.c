/* pn-net - write the pn network of a model: from a Hugging Face config, a
 * named architecture or a conv stack (the builders: src/lib/arch.h) */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "err.h"
#include "json.h"
#include "network.h"
#include "opt.h"
#include "tsv.h"

static const char usage[] =
"Usage: pn-net [OPTION]... (--hf FILE | --arch NAME | --conv-stack SPEC)\n"
"Write the pn network of one training step of a model, for one sample, as\n"
"pn-sum(1) reads it.\n"
"\n"
"  -f, --hf FILE         a Hugging Face config.json (model_type bert,\n"
"                        roberta, gpt2, gpt_neox, opt, llama, mistral,\n"
"                        qwen2, mixtral, gemma, gemma2, phi, phi3, falcon,\n"
"                        bloom or t5; \"-\": standard input)\n"
"  -a, --arch NAME       a named architecture: resnet18, resnet34, resnet50,\n"
"                        resnet101, resnet152, vgg11, vgg13, vgg16, vgg19,\n"
"                        mobilenet_v2, lstm-seq2seq\n"
"      --conv-stack SPEC a conv stack: comma-separated C[kK][sS] (conv to C\n"
"                        channels), M (max-pool), A (average pool), fN\n"
"                        (dense), then a dense layer to the classes\n"
"  -s, --seq N           tokens per sample (default: the config's context;\n"
"                        lstm-seq2seq: 30)\n"
"      --dec-seq N       t5: the decoder's tokens per sample (default: --seq)\n"
"      --image N         CNN input side in pixels (default 224)\n"
"      --classes N       CNN outputs (default 1000)\n"
"      --optimizer NAME  optimizer of the rows with weights: none, sgd,\n"
"                        adam, adagrad, adadelta, rmsprop (default adam for\n"
"                        --hf, sgd otherwise)\n"
PN_ARCH_HELP_ROWS
"  -p, --params          print the parameter count instead of the network\n"
"  -o, --output FILE     write to FILE instead of standard output\n"
"  -h, --help            display this help and exit\n"
"      --version         output version information and exit\n";

enum { O_IMAGE = 256, O_CLASSES, O_STACK, O_DECSEQ };

typedef struct {
	const char *hf, *arch, *stack, *out;
	int params;
} args;

static void parse(int argc, char **argv, args *g, pn_arch_opts *o)
{
	static const struct option opts[] = {
		{"hf", required_argument, 0, 'f'},
		{"arch", required_argument, 0, 'a'},
		{"conv-stack", required_argument, 0, O_STACK},
		{"dec-seq", required_argument, 0, O_DECSEQ},
		{"image", required_argument, 0, O_IMAGE},
		{"classes", required_argument, 0, O_CLASSES},
		PN_ARCH_LONGOPTS,
		{"params", no_argument, 0, 'p'},
		{"output", required_argument, 0, 'o'},
		{"help", no_argument, 0, 'h'},
		{"version", no_argument, 0, 'V'},
		{0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "f:a:s:po:h", opts, NULL)) != -1) {
		if (pn_arch_option(o, c, optarg))
			continue;
		switch (c) {
		case 'f': g->hf = optarg; break;
		case 'a': g->arch = optarg; break;
		case O_STACK: g->stack = optarg; break;
		case O_DECSEQ: o->dec_seq = (long)pn_opt_whole("--dec-seq",
						optarg, 1, 10000000); break;
		case O_IMAGE: o->image = (long)pn_opt_whole("--image", optarg,
							    1, 100000); break;
		case O_CLASSES: o->classes = (long)pn_opt_whole("--classes",
						optarg, 1, 100000000); break;
		case 'p': g->params = 1; break;
		case 'o': g->out = optarg; break;
		case 'h': fputs(usage, stdout); pn_output_close(stdout);
			  exit(0);
		case 'V': pn_version();
		default: pn_try_help();
		}
	}
	if (optind < argc)
		pn_usage_error("extra operand '%s'", argv[optind]);
	if (!!g->hf + !!g->arch + !!g->stack != 1)
		pn_usage_error("give one of --hf, --arch and --conv-stack");
	if (o->dec_seq && !g->hf)
		pn_usage_error("--dec-seq is for --hf (a t5 config)");
	if (g->hf && (o->image || o->classes))
		pn_usage_error("--%s is for CNNs, not --hf",
			       o->image ? "image" : "classes");
}

int main(int argc, char **argv)
{
	pn_init("pn-net");
	pn_stdout_init();
	argv[0] = (char *)pn_prog;
	args g = {0};
	pn_arch a = {.o = {.optimizer = -1, .prec = PN_FP32,
			  .phase = PN_PH_TRAIN}};
	parse(argc, argv, &g, &a.o);
	if (!a.o.image)
		a.o.image = 224;
	if (!a.o.classes)
		a.o.classes = 1000;
	pn_arch_err e;
	int rc;
	const char *where = g.hf ? g.hf : NULL;
	if (g.hf) {
		pn_json_err je;
		pn_json *cfg = pn_json_read(g.hf, &je);
		if (!cfg)
			pn_die_at(PN_EXIT_DATA, g.hf, je.line, "%s", je.msg);
		rc = pn_arch_hf(&a, cfg, &e);
		pn_json_free(cfg);
	} else if (g.arch) {
		rc = pn_arch_named(&a, g.arch, &e);
	} else {
		rc = pn_arch_convstack(&a, g.stack, &e);
	}
	if (rc != 0 && where)
		pn_die_at(PN_EXIT_DATA, where, e.line, "%s", e.msg);
	if (rc != 0)
		pn_usage_error("--%s: %s", g.arch ? "arch" : "conv-stack",
			       e.msg);
	pn_arch_data_grad(&a);
	pn_arch_emit(&a, g.out, g.params);
	pn_arch_free(&a);
	return 0;
}
