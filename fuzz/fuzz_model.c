/* fuzz_model - model files (modelset.c pn_modelset_load) with every
 * family's body (lr rf gbdt xgb mlp), then a prediction through
 * pn_predictor for each model that loads: rows built from the model's own
 * features (numeric ones at their mean, categorical ones at their value),
 * so that the family's predict runs on what its body holds. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "modelset.h"
#include "tsv.h"

#define MAXC 512

typedef struct {
	const char *name[MAXC];
	char *val[MAXC];
	int n;
} row;

static void add(row *r, const char *name, size_t len, const char *val)
{
	for (int i = 0; i < r->n; i++)
		if (strlen(r->name[i]) == len &&
		    memcmp(r->name[i], name, len) == 0)
			return;
	if (r->n == MAXC)
		return;
	char *s = malloc(len + 1);
	memcpy(s, name, len);
	s[len] = 0;
	r->name[r->n] = s;
	r->val[r->n++] = strdup(val);
}

static void predict_one(const pn_modelset *ms, const pn_model *m)
{
	row r = {.n = 0};
	char buf[40];
	add(&r, "layer", 5, m->layer);
	if (m->base)
		add(&r, m->base, strlen(m->base), "2");
	for (size_t j = 0; j < m->p; j++) {
		const pn_feature *f = &m->feat[j];
		const char *eq = f->cat ? strchr(f->name, '=') : NULL;
		if (eq) {
			add(&r, f->name, (size_t)(eq - f->name), eq + 1);
			continue;
		}
		pn_fmt_num(buf, f->log ? 2 * f->floor + f->mean : f->mean);
		add(&r, f->name, strlen(f->name), buf);
	}
	pn_predictor *p = pn_predictor_new(ms, r.n, r.name);
	const char *layer = strcmp(m->layer, "*") ? m->layer : NULL;
	int queued = 0;
	for (int k = 0; k < 3; k++) {
		if (pn_predictor_push(p, layer, (const char *const *)r.val,
				      NULL) == 0)
			queued++;
		free(r.val[0]);
		r.val[0] = strdup(k ? "dense" : m->layer);
	}
	double out[3];
	const pn_model *which[3];
	if (pn_predictor_pending(p) != (size_t)queued)
		abort();
	pn_predictor_flush_models(p, out, which);
	pn_predictor_free(p);
	for (int i = 0; i < r.n; i++) {
		free((char *)r.name[i]);
		free(r.val[i]);
	}
}

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)d; (void)n;
	pn_modelset *ms = pn_modelset_load(path);
	for (int i = 0; i < ms->n; i++) {
		if (!pn_modelset_find(ms, ms->m[i]->layer))
			abort();
		pn_model_spread(ms->m[i], 0);
		pn_model_write(pn_fuzz_null(), ms->m[i]);
		predict_one(ms, ms->m[i]);
	}
	pn_modelset_free(ms);
}

PN_FUZZ_MAIN("pn-fuzz-model", pn_fuzz_run, body)
