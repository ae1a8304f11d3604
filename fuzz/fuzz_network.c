/* fuzz_network - the network file (src/lib/network.h), as pn-sum reads it:
 * pn_network_read, then, on a network it accepts, every row scaled to a
 * batch as pn-sum predicts it. */
#include <string.h>

#include "fuzz.h"
#include "network.h"

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)d; (void)n;
	pn_network net;
	pn_network_err e;
	memset(&net, 0, sizeof net);
	if (pn_network_read(&net, path, &e) == 0) {
		for (long i = 0; i < net.n; i++) {
			pn_layer l;
			double traffic;
			pn_network_scaled(&net, &net.r[i], 3, &l, &traffic);
		}
	}
	pn_network_free(&net);
}

PN_FUZZ_MAIN("pn-fuzz-network", pn_fuzz_run, body)
