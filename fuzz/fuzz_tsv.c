/* fuzz_tsv - pn's TSV reader (tsv.c over input.c), plain and gzip, and the
 * writer that passes rows through.  The input goes in as given, or (chosen
 * by the sum of its bytes, so that one input always takes one path) gzipped
 * in one member or in two members cut in the middle. */
#include <stdlib.h>

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
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc; (void)argv;
	pn_fuzz_init("pn-fuzz-tsv");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += d[i];
	if (sum % 4 < 2) {
		pn_fuzz_run(body, d, n);
		return 0;
	}
	size_t len;
	uint8_t *gz = pn_fuzz_gzip(d, n, sum % 4 == 3 ? n / 2 : n, &len);
	pn_fuzz_run(body, gz, len);
	free(gz);
	return 0;
}
