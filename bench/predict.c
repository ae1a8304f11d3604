/* predict - benchmark harness: prediction throughput of a model file on the
 * rows of a featurized TSV, on one core.
 *
 *   predict MODEL FILE [SECONDS]
 *
 * Reads every row of FILE into memory, then times two things for at least
 * SECONDS (default 2) each, best of the passes:
 *   model    the family's predict on the encoded rows, 4096 at a time (the
 *            work of pn_predictor_flush);
 *   fields   pn_predictor_push of the rows' text fields (parsing, scaling)
 *            plus pn_predictor_flush, 4096 at a time (what pn-eval -m does
 *            besides reading and writing the TSV).
 * Times are the thread's CPU time, so other load on the machine matters
 * less.  Prints rows per second for both, and a checksum so that the work cannot
 * be optimised away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "modelset.h"
#include "tsv.h"

#define BATCH 4096

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	pn_init("predict");
	if (argc < 3 || argc > 4)
		pn_usage_error("usage: predict MODEL FILE [SECONDS]");
	double secs = argc == 4 ? atof(argv[3]) : 2.0;
	pn_modelset *ms = pn_modelset_load(argv[1]);
	pn_tsv *in = pn_tsv_open(argv[2]);
	int nc = pn_tsv_ncols(in), lcol = pn_tsv_find(in, "layer");
	const char **names = pn_xmalloc((size_t)nc * sizeof *names);
	for (int c = 0; c < nc; c++)
		names[c] = pn_tsv_colname(in, c);

	/* the rows as text, kept */
	size_t n = 0, cap = 0;
	char ***rows = NULL;
	size_t **lens = NULL;
	while (pn_tsv_read(in)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			rows = pn_xrealloc(rows, cap * sizeof *rows);
			lens = pn_xrealloc(lens, cap * sizeof *lens);
		}
		rows[n] = pn_xmalloc((size_t)nc * sizeof **rows);
		lens[n] = pn_xmalloc((size_t)nc * sizeof **lens);
		for (int c = 0; c < nc; c++) {
			rows[n][c] = pn_xstrdup(pn_tsv_str(in, c));
			lens[n][c] = pn_tsv_len(in, c);
		}
		n++;
	}
	if (n == 0)
		pn_die(PN_EXIT_DATA, "%s: no rows", argv[2]);
	if (ms->n != 1)
		pn_die(PN_EXIT_DATA, "%s: want a file of one model", argv[1]);
	const pn_model *m = ms->m[0];
	pn_predictor *pr = pn_predictor_new(ms, nc, names);
	double *out = pn_xmalloc(BATCH * sizeof *out), check = 0;

	/* encode once for the model-only pass: push and read the queue back
	 * through flush is not possible, so encode like the predictor does */
	double *x = pn_xmalloc(n * m->p * sizeof *x);
	for (size_t j = 0; j < m->p; j++) {
		const pn_feature *f = &m->feat[j];
		size_t len = strcspn(f->name, f->cat ? "=" : "");
		int col = -1;
		for (int c = 0; c < nc; c++)
			if (strlen(names[c]) == len &&
			    memcmp(names[c], f->name, len) == 0)
				col = c;
		if (col < 0)
			pn_die(PN_EXIT_DATA, "missing column for '%s'",
			       f->name);
		for (size_t i = 0; i < n; i++) {
			double v;
			if (f->cat)
				v = strcmp(rows[i][col], f->name + len + 1) == 0;
			else if (pn_parse_num(rows[i][col], lens[i][col], &v))
				pn_die(PN_EXIT_DATA, "row %zu: bad '%s'", i,
				       f->name);
			x[i * m->p + j] = (v - f->mean) / f->sd;
		}
	}

	double best_model = 1e300, best_fields = 1e300;
	for (int pass = 0; pass < 2; pass++) {
		double t0 = now(), t;
		size_t done = 0;
		do {
			double a = now();
			for (size_t i = 0; i < n; i += BATCH) {
				size_t k = n - i < BATCH ? n - i : BATCH;
				if (pass == 0) {
					m->family->predict(m->state,
							   x + i * m->p, k,
							   m->p, out);
				} else {
					for (size_t r = 0; r < k; r++)
						if (pn_predictor_push(pr,
						    lcol >= 0 ? rows[i + r][lcol]
							      : NULL,
						    (const char *const *)
						    rows[i + r], lens[i + r]))
							pn_die(PN_EXIT_DATA,
							       "%s",
							       pn_predictor_error(pr));
					pn_predictor_flush(pr, out);
				}
				check += out[0];
			}
			double b = now() - a;
			double *best = pass ? &best_fields : &best_model;
			if (b < *best)
				*best = b;
			done += n;
			t = now() - t0;
		} while (t < secs);
	}
	printf("model: %s %s, %zu features; %zu rows\n", m->family->name,
	       m->layer, m->p, n);
	printf("%-40s %12.0f rows/s\n", "model predict (encoded rows)",
	       (double)n / best_model);
	printf("%-40s %12.0f rows/s\n", "push fields + predict", (double)n /
	       best_fields);
	printf("checksum %g\n", check);
	return 0;
}
