/* tsv.h - pn's TSV contract: reader, strict numbers, writer.
 *
 * A pn TSV has one header row of unique column names, then rows with exactly
 * as many tab-separated fields.  Columns are found by name.  Input may be
 * plain or gzip (detected from the first two bytes, never from the file name)
 * and comes from a file or from standard input ("-").  A trailing "\r" is
 * dropped.  Every reader error names the file and line and exits 1:
 *
 *   pn-x: runs.tsv:17: expected 9 fields, found 8
 *   pn-x: runs.tsv:17: column 'time_ms': 'fast' is not a number
 *   pn-x: runs.tsv:1: missing column 'time_ms'
 *   pn-x: runs.tsv.gz: truncated gzip input
 *   pn-x: -: empty input (no header)
 *
 * Fields of the current row stay valid until the next pn_tsv_read().
 */
#ifndef PN_TSV_H
#define PN_TSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "opt.h"

typedef struct pn_tsv pn_tsv;

/* Open path ("-" or NULL for standard input) and read its header.
 * Dies (exit 1) when the file cannot be opened, the input is empty, or the
 * header repeats a column name. */
pn_tsv *pn_tsv_open(const char *path);
void pn_tsv_close(pn_tsv *t);

const char *pn_tsv_path(const pn_tsv *t); /* as given; "-" for stdin */
int pn_tsv_ncols(const pn_tsv *t);
const char *pn_tsv_colname(const pn_tsv *t, int col);
long pn_tsv_lineno(const pn_tsv *t);      /* line of the current row */

/* Index of the named column, or -1. */
int pn_tsv_find(const pn_tsv *t, const char *name);
/* Index of the named column; dies "missing column 'name'" when absent. */
int pn_tsv_col(const pn_tsv *t, const char *name);

/* Read the next row: 1 when a row was read, 0 at end of input.  Dies on a
 * wrong field count, a read error, or corrupt or truncated gzip data.
 * Blank lines are errors too (they have one field). */
int pn_tsv_read(pn_tsv *t);

/* Every row left in t at once, split in place in one buffer: the cells
 * of row r are cell[r * ncols ...], NUL-terminated, with their lengths,
 * and line[r] is the row's line in the file.  The caller owns text (which
 * holds every cell), cell, len and line, and frees them with free(). */
typedef struct {
	char *text;
	size_t nrows;
	const char **cell;
	uint32_t *len;
	long *line;
} pn_tsv_rows;

/* Read the rest of t's input into memory and split its rows on up to
 * threads threads (a share of at least a few MB each).  The same rows and
 * the same deaths as a loop of pn_tsv_read(): the first row in the file
 * with the wrong field count, a read error, bad gzip data (which, as the
 * whole input is read first, come before any row's).  t is then at its
 * end. */
void pn_tsv_read_all(pn_tsv *t, pn_tsv_rows *out, int threads);

/* Field col of the current row, NUL-terminated, and its length.  The
 * fields of a row lie in order in one buffer, each but the last ended by
 * the NUL that replaced its tab. */
const char *pn_tsv_str(const pn_tsv *t, int col);
size_t pn_tsv_len(const pn_tsv *t, int col);

/* True when the field is empty or "NA" (a value that does not apply). */
int pn_tsv_na(const pn_tsv *t, int col);

/* The field as a finite number; dies "column 'x': 'v' is not a number"
 * (or "is too large/small" beyond a double).  Accepts decimal notation
 * with optional sign, fraction and exponent; rejects empty fields, spaces,
 * hex, inf and nan.  The rule and messages are opt.h's. */
double pn_tsv_num(const pn_tsv *t, int col);
/* The field as a number within span (opt.h); dies with opt.h's message:
 * "column 'x': '0' is too small (must be above 0)". */
double pn_tsv_real(const pn_tsv *t, int col, pn_span span);
/* The field as a whole number in [min, max] (opt.h's rule: "1e3" is 1000);
 * dies "column 'x': 'v' is not a whole number", "... is too large (at most
 * N)" or "... is too small (at least N)". */
long long pn_tsv_whole(const pn_tsv *t, int col, long long min,
		       long long max);
/* pn_tsv_whole from -PN_WHOLE_MAX to PN_WHOLE_MAX (|v| < 2^53). */
long long pn_tsv_int(const pn_tsv *t, int col);

/* Die with "file:line: column 'x': <fmt>" for the current row. */
_Noreturn void pn_tsv_die(const pn_tsv *t, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Die with "file:line: <fmt>" for the current row. */
_Noreturn void pn_tsv_die_row(const pn_tsv *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Strict parse of s[0..n) as a finite double: 0 on success, -1 if it is not
 * a number.  s need not be NUL-terminated, but s[n] must be readable. */
int pn_parse_num(const char *s, size_t n, double *out);

/* ---- writing ---------------------------------------------------------- */

/* Write every field of the current row of t, tab-separated (no newline). */
void pn_tsv_put_row(FILE *f, const pn_tsv *t);
/* Write the header of t (no newline). */
void pn_tsv_put_header(FILE *f, const pn_tsv *t);

/* Write v in the shortest form that reads back to the same double. */
void pn_put_num(FILE *f, double v);
/* Format v like pn_put_num into buf (at least 32 bytes); returns length. */
int pn_fmt_num(char *buf, double v);

/* An output row that passes the input's columns through and sets the given
 * columns: a name that exists in the input replaces that column in place,
 * a new name is appended. */
typedef struct pn_tsv_out pn_tsv_out;
pn_tsv_out *pn_tsv_out_new(const pn_tsv *in, const char *const *names, int n);
void pn_tsv_out_free(pn_tsv_out *o);
void pn_tsv_out_header(pn_tsv_out *o, FILE *f);
void pn_tsv_out_num(pn_tsv_out *o, int k, double v);      /* k: index in names */
void pn_tsv_out_str(pn_tsv_out *o, int k, const char *s);
void pn_tsv_out_row(pn_tsv_out *o, FILE *f);           /* line with newline */
/* pn_tsv_out_row for a row kept from before, its fields (lens: their
 * lengths) in the input's column order (pn-eval writes a batch of rows once
 * they are predicted). */
void pn_tsv_out_fields(pn_tsv_out *o, FILE *f, const char *const *fields,
		       const size_t *lens);

/* ---- output files ----------------------------------------------------- */

/* Every file a pn tool writes goes through here.  For path:
 *   - "-" or NULL: standard output;
 *   - a symbolic link: its target (followed to the end, which may not exist
 *     yet) is written; the link stays;
 *   - a regular file, or a name that does not exist: the output goes to a
 *     temporary name beside it (mode 0666 & ~umask, like any new file) that
 *     replaces it when the output is committed; a run that dies first
 *     (pn_die) removes the temporary file, so it leaves nothing behind;
 *   - anything else (a device such as /dev/null or /dev/full, a FIFO): it is
 *     written in place and never replaced or removed.
 * Errors exit 1: "pn-x: out.tsv: Permission denied" when the file cannot be
 * made, "pn-x: write error: out.tsv: No space left on device" when writing
 * fails.  At most 8 outputs are open at once. */

/* Open path for writing. */
FILE *pn_output_open(const char *path);
/* Flush and close; on a write error dies "write error: <path>: <reason>";
 * then the output is put in place. */
void pn_output_close(FILE *f);

/* For a file that another program writes (gnuplot's PNG): a new, empty
 * temporary file for it to write, whose name stays valid until
 * pn_output_commit(name) puts its bytes in place at path as above (renamed
 * onto a regular file; copied into a device, a FIFO or standard output,
 * then removed).  A run that dies before the commit leaves nothing behind. */
const char *pn_output_reserve(const char *path);
/* path with every symbolic link followed (the last link may dangle), newly
 * allocated: the file that an output to path really writes.  A link is
 * written through, never replaced; pn-time's partial output (FILE.part
 * beside FILE) uses it too. */
char *pn_output_target(const char *path);
void pn_output_commit(const char *name);

/* Give stdout a large buffer; call once at start. */
void pn_stdout_init(void);

#endif
