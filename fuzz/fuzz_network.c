/* fuzz_network - the network file, as pn-sum reads it.
 *
 * FOR THE LEAD, AFTER THE MERGE OF src/lib/network.{c,h}: today the reader
 * is read_network(), a static function of src/pn-sum.c, so this harness
 * compiles pn-sum.c in (its main renamed) to call it.  Switch it to
 * network.h: drop the #include of pn-sum.c and the #define of main, include
 * "network.h", and call its loader and free function in body(); the corpus
 * (fuzz/corpus/network) stays as it is. */
#define main pn_sum_main
#include "../src/pn-sum.c"
#undef main

#include "fuzz.h"

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)d; (void)n;
	network net;
	memset(&net, 0, sizeof net);
	read_network(&net, path);
	for (long i = 0; i < net.n; i++) {
		free(net.r[i].field[0]);
		free(net.r[i].field);
	}
	for (int i = 0; i < net.ncols; i++)
		free(net.col[i]);
	free(net.col);
	free(net.r);
}

PN_FUZZ_MAIN("pn-fuzz-network", pn_fuzz_run, body)
