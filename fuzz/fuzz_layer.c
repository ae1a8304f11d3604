/* fuzz_layer - the layer-row readers under every network and sample file:
 * config.c pn_config_read (which reports) and layer.c pn_layer_read (which
 * dies), each row's work (pn_layer_work) when it is accepted. */
#include "config.h"
#include "fuzz.h"
#include "layer.h"
#include "tsv.h"

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)d; (void)n;
	pn_tsv *t = pn_tsv_open(path);
	pn_config_cols *cc = pn_config_cols_new(t);
	pn_layer_cols *lc = pn_layer_cols_new(t);
	char msg[256];
	pn_work w;
	while (pn_tsv_read(t)) {
		pn_config cfg;
		if (pn_config_read(t, cc, &cfg, msg, sizeof msg) == 0) {
			pn_layer_work(&cfg.l, &w);
			pn_layer_check(&cfg.l, msg, sizeof msg);
		}
		pn_layer l;
		pn_layer_read(t, lc, &l);
		pn_layer_work(&l, &w);
	}
	pn_layer_cols_free(lc);
	pn_config_cols_free(cc);
	pn_tsv_close(t);
}

PN_FUZZ_MAIN("pn-fuzz-layer", pn_fuzz_run, body)
