/* tsvread - benchmark harness: read a TSV with pn's reader, parse every
 * field as a number, print the sum and the throughput.
 * Usage: tsvread FILE   (plain or gzip) */
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "err.h"
#include "tsv.h"

int main(int argc, char **argv)
{
	pn_init("tsvread");
	if (argc != 2)
		pn_usage_error("usage: tsvread FILE");
	struct stat st = {0};
	if (stat(argv[1], &st) != 0)
		st.st_size = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pn_tsv *t = pn_tsv_open(argv[1]);
	int n = pn_tsv_ncols(t);
	double sum = 0;
	long rows = 0;
	while (pn_tsv_read(t)) {
		for (int i = 0; i < n; i++)
			sum += pn_tsv_num(t, i);
		rows++;
	}
	pn_tsv_close(t);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("rows=%ld sum=%.17g seconds=%.3f\n", rows, sum, s);
	return 0;
}
