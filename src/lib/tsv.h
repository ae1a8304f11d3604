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
#include <stdio.h>

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

/* Field col of the current row, NUL-terminated, and its length. */
const char *pn_tsv_str(const pn_tsv *t, int col);
size_t pn_tsv_len(const pn_tsv *t, int col);

/* True when the field is empty or "NA" (a value that does not apply). */
int pn_tsv_na(const pn_tsv *t, int col);

/* The field as a finite number; dies "column 'x': 'v' is not a number".
 * Accepts decimal notation with optional sign, fraction and exponent;
 * rejects empty fields, spaces, hex, inf and nan. */
double pn_tsv_num(const pn_tsv *t, int col);
/* The field as a whole number (a finite number with no fraction, |v| < 2^53);
 * dies "column 'x': 'v' is not a whole number". */
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

/* Open path for writing ("-" or NULL: standard output).  A file is written
 * to a temporary name beside it and renamed into place by pn_output_close(),
 * so a run that fails leaves no partial file behind. */
FILE *pn_output_open(const char *path);
/* Flush and close; on a write error dies "write error: <path>: <reason>". */
void pn_output_close(FILE *f);

/* Give stdout a large buffer; call once at start. */
void pn_stdout_init(void);

#endif
