/* fuzz_tsv - pn's TSV reader (tsv.c over input.c), plain and gzip, and the
 * writer that passes rows through.  The input goes in as given, or (chosen
 * by the sum of its bytes, so that one input always takes one path) gzipped
 * in one member or in two members cut in the middle.  Then the rows read
 * at once (pn_tsv_read_all), which must be the same. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tsv.h"

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)d; (void)n;
	FILE *null = pn_fuzz_null();
	pn_tsv *t = pn_tsv_open(path);
	int nc = pn_tsv_ncols(t);
	const char *names[2] = {"fuzz_new", pn_tsv_colname(t, nc - 1)};
	if (pn_tsv_find(t, names[1]) != nc - 1)
		abort();
	pn_tsv_out *o = pn_tsv_out_new(t, names, 2);
	pn_tsv_out_header(o, null);
	pn_tsv_put_header(null, t);
	double rows = 0;
	while (pn_tsv_read(t)) {
		for (int c = 0; c < nc; c++) {
			double v;
			if (!pn_tsv_na(t, c) &&
			    pn_parse_num(pn_tsv_str(t, c), pn_tsv_len(t, c),
					 &v) == 0)
				pn_put_num(null, v);
		}
		pn_tsv_put_row(null, t);
		pn_tsv_out_num(o, 0, rows++);
		pn_tsv_out_str(o, 1, pn_tsv_str(t, 0));
		pn_tsv_out_row(o, null);
	}
	pn_tsv_out_free(o);
	pn_tsv_close(t);
	/* the same rows read at once, split in shares of a few rows on 3
	 * threads (SHARE_BYTES in tsv.c, small in a fuzzing build) */
	pn_tsv *a = pn_tsv_open(path), *b = pn_tsv_open(path);
	pn_tsv_rows all;
	pn_tsv_read_all(a, &all, 3);
	size_t r = 0;
	for (; pn_tsv_read(b); r++) {
		if (r >= all.nrows || all.line[r] != pn_tsv_lineno(b))
			abort();
		for (int c = 0; c < nc; c++) {
			size_t k = r * (size_t)nc + (size_t)c;
			if (all.len[k] != pn_tsv_len(b, c) ||
			    memcmp(all.cell[k], pn_tsv_str(b, c),
				   all.len[k] + 1) != 0)
				abort();
		}
	}
	if (r != all.nrows || (double)r != rows || pn_tsv_read(a))
		abort();
	free(all.text);
	free(all.cell);
	free(all.len);
	free(all.line);
	pn_tsv_close(a);
	pn_tsv_close(b);
}

PN_FUZZ_MAIN("pn-fuzz-tsv", pn_fuzz_run_gz, body)
