/* fuzz_json - the JSON reader (json.c pn_json_parse) and what pn-net builds
 * from a model config (arch.c pn_arch_hf): its rows, parameter count and
 * network. */
#include "arch.h"
#include "fuzz.h"
#include "network.h"

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)path;
	pn_json_err je;
	pn_json *cfg = pn_json_parse((const char *)d, n, &je);
	if (!cfg)
		return;
	pn_arch a = {.o = {.optimizer = -1, .prec = PN_FP32,
			   .phase = PN_PH_TRAIN, .image = 224,
			   .classes = 1000}};
	pn_arch_err ae;
	if (pn_arch_hf(&a, cfg, &ae) == 0) {
		(void)pn_arch_params(&a);
		pn_arch_write(&a, pn_fuzz_null());
	}
	pn_arch_free(&a);
	pn_json_free(cfg);
}

PN_FUZZ_MAIN("pn-fuzz-json", pn_fuzz_run, body)
