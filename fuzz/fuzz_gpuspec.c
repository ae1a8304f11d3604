/* fuzz_gpuspec - the accelerator spec table (gpuspec.c pn_gpus_load), and
 * lookups in what it loaded. */
#include "fuzz.h"
#include "gpuspec.h"

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)d; (void)n;
	pn_gpus *t = pn_gpus_load(path);
	char buf[256];
	for (int i = 0; i < t->n; i++) {
		pn_gpus_find(t, t->g[i].name);
		pn_gpus_closest(t, t->g[i].name, buf, sizeof buf);
	}
	pn_gpus_find(t, "T4");
	pn_gpus_closest(t, "tesla-t4", buf, sizeof buf);
	pn_gpus_free(t);
}

PN_FUZZ_MAIN("pn-fuzz-gpuspec", pn_fuzz_run, body)
