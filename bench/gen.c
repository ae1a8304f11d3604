/* gen - write a rows x cols numeric TSV (header c1..cN) to stdout,
 * deterministic.  Usage: gen ROWS COLS */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long rows = atol(argv[1]);
	int cols = atoi(argv[2]);
	uint64_t s = 42;
	for (int c = 0; c < cols; c++)
		printf("%sc%d", c ? "\t" : "", c + 1);
	putchar('\n');
	for (long r = 0; r < rows; r++) {
		for (int c = 0; c < cols; c++) {
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			uint64_t v = s >> 33;
			if (c % 4 == 0)
				printf("%s%lu", c ? "\t" : "", (unsigned long)(v % 4096));
			else
				printf("%s%.6g", c ? "\t" : "", (double)(v % 1000000) / 997.0);
		}
		putchar('\n');
	}
	return 0;
}
