/* csv.h - a streaming reader for RFC 4180 CSV, such as pandas writes.
 *
 * The first record is the header; every later record must have as many
 * fields.  Fields are separated by commas; a field that starts with a double
 * quote runs to the matching closing quote and may hold commas, CR, LF and
 * doubled quotes ("" stands for one ").  Records end with LF or CRLF; the
 * last one may lack it.  A UTF-8 byte order mark before the header is
 * dropped (input.h).  Input may be plain or gzip (detected from the first two bytes)
 * and comes from a file or from standard input ("-").  Memory use is bounded
 * by the longest record, not by the input.  Every error names the file and
 * the line where the record starts, and exits 1:
 *
 *   pn-x: runs.csv:17: expected 9 fields, found 8
 *   pn-x: runs.csv:17: field 3: text after the closing quote
 *   pn-x: runs.csv:17: field 3: quote inside an unquoted field
 *   pn-x: runs.csv:17: unterminated quoted field
 *   pn-x: runs.csv:1: duplicate column 'B'
 *   pn-x: runs.csv.gz: truncated gzip input
 *   pn-x: -: empty input (no header)
 *
 * Unlike a pn TSV header, a CSV header may have empty names (pandas writes
 * one for its index column); non-empty names must be unique.  Fields of the
 * current record stay valid until the next pn_csv_read().
 */
#ifndef PN_CSV_H
#define PN_CSV_H

#include <stddef.h>

typedef struct pn_csv pn_csv;

/* Open path ("-" or NULL for standard input) and read its header.  Dies
 * (exit 1) when the file cannot be opened, the input is empty, or the header
 * is malformed or repeats a name. */
pn_csv *pn_csv_open(const char *path);
void pn_csv_close(pn_csv *c);

const char *pn_csv_path(const pn_csv *c);   /* as given; "-" for stdin */
int pn_csv_ncols(const pn_csv *c);
const char *pn_csv_colname(const pn_csv *c, int col);
/* Line on which the current record (or, before the first read, the header)
 * starts. */
long pn_csv_lineno(const pn_csv *c);

/* Index of the named column, or -1. */
int pn_csv_find(const pn_csv *c, const char *name);

/* Read the next record: 1 when one was read, 0 at end of input.  Dies on a
 * wrong field count, a malformed quoted field, a read error, or corrupt or
 * truncated gzip data.  A blank line is a record of one empty field. */
int pn_csv_read(pn_csv *c);

/* Field col of the current record, unquoted and NUL-terminated (it may hold
 * NUL bytes of its own; use the length), and its length. */
const char *pn_csv_str(const pn_csv *c, int col);
size_t pn_csv_len(const pn_csv *c, int col);

/* Die with "file:line: column 'x': <fmt>" for the current record. */
_Noreturn void pn_csv_die(const pn_csv *c, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Die with "file:line: <fmt>" for the current record. */
_Noreturn void pn_csv_die_row(const pn_csv *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
