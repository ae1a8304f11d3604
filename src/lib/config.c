#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "err.h"

struct pn_config_cols {
	pn_layer_cols *layer;
	int lr;
};

pn_config_cols *pn_config_cols_new(const pn_tsv *in)
{
	pn_config_cols *c = pn_xcalloc(1, sizeof *c);
	c->layer = pn_layer_cols_new(in);
	c->lr = pn_tsv_find(in, "learning_rate");
	return c;
}

void pn_config_cols_free(pn_config_cols *c)
{
	if (c)
		pn_layer_cols_free(c->layer);
	free(c);
}

/* Optional number column: dflt when absent or NA; -1 on a bad value. */
static int opt_num(const pn_tsv *in, int col, double dflt, double *v,
		   char *msg, size_t n)
{
	*v = dflt;
	if (col < 0 || pn_tsv_na(in, col))
		return 0;
	if (pn_parse_num(pn_tsv_str(in, col), pn_tsv_len(in, col), v) != 0) {
		snprintf(msg, n, "column '%s': '%s' is not a number",
			 pn_tsv_colname(in, col), pn_tsv_str(in, col));
		return -1;
	}
	return 0;
}

int pn_config_read(const pn_tsv *in, const pn_config_cols *c, pn_config *cfg,
		   char *msg, size_t n)
{
	memset(cfg, 0, sizeof *cfg);
	pn_layer_err e;
	if (pn_layer_parse(in, c->layer, &cfg->l, &cfg->prec, &e) != 0) {
		if (e.notwhole)    /* pn-time's words for any such field */
			snprintf(msg, n, "column '%s': '%s' is not a whole "
				 "number", pn_tsv_colname(in, e.col),
				 pn_tsv_str(in, e.col));
		else if (e.col < 0 || e.col == pn_layer_cols_layer(c->layer))
			snprintf(msg, n, "%s", e.msg);
		else
			snprintf(msg, n, "column '%s': %s",
				 pn_tsv_colname(in, e.col), e.msg);
		return -1;
	}
	if (opt_num(in, c->lr, 0, &cfg->lr, msg, n) != 0)
		return -1;
	if (cfg->lr < 0) {
		snprintf(msg, n, "column 'learning_rate': %g is negative",
			 cfg->lr);
		return -1;
	}
	return 0;
}
