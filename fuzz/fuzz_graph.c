/* fuzz_graph - the NeuSight graph CSV as pn-graph converts it: pn-graph.c
 * compiled in, its main renamed, run in-process on the input, as
 * `pn-graph FILE` or `pn-graph -l 2 FILE` (chosen by the sum of the input's
 * bytes).  Its output goes to standard output, /dev/null here. */
#define main pn_graph_main
#define pn_stdout_init pn_fuzz_stdout_init
#include "../src/pn-graph.c"
#undef main
#undef pn_stdout_init

#include "fuzz.h"

/* setvbuf once, not on every run */
void pn_fuzz_stdout_init(void)
{
}

static void body(const char *path, const uint8_t *d, size_t n)
{
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += d[i];
	char *argv[5] = {"pn-graph", (char *)path, NULL, NULL, NULL};
	int argc = 2;
	if (sum % 2) {
		argv[1] = "-l";
		argv[2] = "2";
		argv[3] = (char *)path;
		argc = 4;
	}
	optind = 0;
	if (pn_graph_main(argc, argv) != 0)
		abort();
}

PN_FUZZ_MAIN("pn-graph", pn_fuzz_run, body)
