/* fuzz_num - the strict number parsers: pn_parse_num on the bytes, checked
 * against strtod and against pn_fmt_num's round trip, and pn_tsv_int and
 * pn_tsv_num on the bytes as the one field of a TSV row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tsv.h"

static void check_parse(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);
	memcpy(s, d, n);
	s[n] = 0;
	double v;
	if (pn_parse_num(s, n, &v) == 0) {
		char *end, buf[40];
		double w = strtod(s, &end);
		/* accepted: a finite number that strtod reads the same */
		if (!isfinite(v) || end != s + n || w != v) {
			fprintf(stderr, "pn_parse_num('%s') = %.17g, strtod "
				"%.17g\n", s, v, w);
			abort();
		}
		int k = pn_fmt_num(buf, v);
		double u = 0;
		if (k <= 0 || k >= 32 || pn_parse_num(buf, (size_t)k, &u) ||
		    u != v) {
			fprintf(stderr, "%.17g printed as '%s' reads back "
				"as %.17g\n", v, buf, u);
			abort();
		}
	}
	free(s);
}

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)d; (void)n;
	pn_tsv *t = pn_tsv_open(path);
	if (pn_tsv_read(t)) {
		double x = pn_tsv_num(t, 0), v;
		long long k = pn_tsv_int(t, 0);
		if (pn_parse_num(pn_tsv_str(t, 0), pn_tsv_len(t, 0), &v) ||
		    v != x || (double)k != v || fabs(v) >= 9007199254740992.0)
			abort();
	}
	pn_tsv_close(t);
}

PN_FUZZ_INIT("pn-fuzz-num")

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	check_parse(d, n);
	uint8_t *row = malloc(n + 3);
	memcpy(row, "x\n", 2);
	memcpy(row + 2, d, n);
	row[n + 2] = '\n';
	pn_fuzz_run(body, row, n + 3);
	free(row);
	return 0;
}
