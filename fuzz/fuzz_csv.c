/* fuzz_csv - pn's CSV reader (csv.c over input.c), as pn-import uses it,
 * plain and gzip.  The input goes in as given, or (chosen by the sum of its
 * bytes, so that one input always takes one path) gzipped in one member or
 * in two members cut in the middle. */
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "fuzz.h"

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)d; (void)n;
	pn_csv *c = pn_csv_open(path);
	int nc = pn_csv_ncols(c);
	for (int k = 0; k < nc; k++) {
		const char *name = pn_csv_colname(c, k);
		if (*name && pn_csv_find(c, name) != k)
			abort();
	}
	while (pn_csv_read(c)) {
		if (pn_csv_lineno(c) < 2)
			abort();
		for (int k = 0; k < nc; k++) {
			const char *s = pn_csv_str(c, k);
			if (strlen(s) > pn_csv_len(c, k))
				abort();
		}
	}
	pn_csv_close(c);
}

PN_FUZZ_MAIN("pn-fuzz-csv", pn_fuzz_run_gz, body)
