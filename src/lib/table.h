/* table.h - a whole TSV in memory, its cells addressed by row and column.
 *
 * pn_table_read() reads every row of a pn TSV (tsv.h: a header of unique
 * names, plain or gzip, file or standard input) and keeps each cell's text,
 * its length and the line of its row, so that a tool can pass over the rows
 * many times (pn-fit encodes, fits and refits them) and report any cell by
 * file, line and column.  Reading dies like tsv.h's reader, and with
 *
 *   pn-x: FILE: no data rows
 *
 * on a file with a header only.  After that, nothing here stops the
 * program: lookups that fail return -1 and describe the failure in a
 * pn_fault, which the caller reports (pn_fault_die) once it has released
 * what it holds.
 */
#ifndef PN_TABLE_H
#define PN_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* A failure to report: exit code (PN_EXIT_DATA or PN_EXIT_USAGE), place
 * (line 0: the file as a whole; path NULL: no place) and message. */
typedef struct {
	int code;
	const char *path;
	long line;
	char msg[512];
} pn_fault;

/* Set f and return -1. */
int pn_fault_set(pn_fault *f, int code, const char *path, long line,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Report f as pn_die_at does (a usage fault as pn_usage_error) and exit. */
_Noreturn void pn_fault_die(const pn_fault *f);

typedef struct {
	char *path;             /* as given; "-" for standard input */
	int ncols;
	char **names;
	size_t nrows;
	const char **cell;      /* nrows * ncols, NUL-terminated */
	uint32_t *len;          /* each cell's length */
	long *line;             /* each row's line in the file */
	char **blocks;          /* the text */
	size_t nblocks;
} pn_table;

/* Read path ("-": standard input).  Dies as above. */
pn_table *pn_table_read(const char *path);
void pn_table_free(pn_table *t);

/* Index of the named column, or -1. */
int pn_table_find(const pn_table *t, const char *name);
/* Index of the named column; -1 and "FILE:1: missing column 'x'" in f. */
int pn_table_col(const pn_table *t, const char *name, pn_fault *f);

/* Cell (r, c): its text and length. */
static inline const char *pn_cell(const pn_table *t, size_t r, int c)
{
	return t->cell[r * (size_t)t->ncols + (size_t)c];
}

static inline size_t pn_cell_len(const pn_table *t, size_t r, int c)
{
	return t->len[r * (size_t)t->ncols + (size_t)c];
}

/* True when cell (r, c) is empty or "NA". */
int pn_cell_na(const pn_table *t, size_t r, int c);

/* Cell (r, c) as a finite number into *v (tsv.h's strict rule); -1 with
 * "FILE:LINE: column 'x': value is NA" (or empty, or "'v' is not a
 * number") in f. */
int pn_cell_num(const pn_table *t, size_t r, int c, double *v, pn_fault *f);

/* Keep the rows r of t with keep[r] set, in order, and drop the others;
 * returns the count kept. */
size_t pn_table_keep(pn_table *t, const unsigned char *keep);

/* ---- sets of strings --------------------------------------------------- */

/* A set of strings (not copied: they must outlive the set), small enough
 * for linear search; sorted on demand. */
typedef struct {
	int n, cap;
	const char **s;
} pn_strset;

void pn_strset_add(pn_strset *ss, const char *s);
void pn_strset_sort(pn_strset *ss);
/* The strings joined by commas, in a new string. */
char *pn_strset_join(const pn_strset *ss);
void pn_strset_free(pn_strset *ss);

#endif
