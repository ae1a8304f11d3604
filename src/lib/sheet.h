/* sheet.h - a table of results written as TSV or as a markdown table.
 *
 * pn-sum(1), pn-eval(1) and pn-md(1) write their result tables through
 * this one writer, so a number looks the same in every tool:
 *
 *   TSV       cells separated by tabs; numbers in the shortest form that
 *             reads back to the same double (pn_fmt_num); NaN as NA
 *   markdown  "| a | b |" rows, the header followed by a separator row
 *             ("|---" for a text column, "|---:" for a right-aligned one);
 *             '|' in a cell escaped as "\|"; numbers to 4 significant
 *             digits (pn_fmt_sig4); NaN as NA
 *
 * Cells are written as they come: pn_sheet_head() for each header cell,
 * pn_sheet_end() after the header row and after each data row.  Write
 * errors are the stream's (pn_output_close reports them).
 */
#ifndef PN_SHEET_H
#define PN_SHEET_H

#include <stddef.h>
#include <stdio.h>

enum { PN_SHEET_TSV, PN_SHEET_MD };

/* The formats' names, in the order of the enum, NULL-terminated (for
 * opt.h's pn_opt_choice). */
extern const char *const pn_sheet_names[];

typedef struct pn_sheet pn_sheet;

pn_sheet *pn_sheet_new(FILE *f, int format);
void pn_sheet_free(pn_sheet *s);

/* A header cell; right: 1 to right-align the column in markdown. */
void pn_sheet_head(pn_sheet *s, const char *name, int right);
/* A data cell: text (n bytes, or all of a string), a number (NaN: NA),
 * or a whole number written without a fraction (NaN: NA). */
void pn_sheet_textn(pn_sheet *s, const char *text, size_t n);
void pn_sheet_text(pn_sheet *s, const char *text);
void pn_sheet_num(pn_sheet *s, double v);
void pn_sheet_int(pn_sheet *s, double v);
/* End the current row (the header row: markdown adds the separator). */
void pn_sheet_end(pn_sheet *s);

/* v to 4 significant digits into buf (n >= 32): without an exponent for
 * 1e-4 <= |v| < 1e6 ("0.1235", "12.35", "12350"), else as "1.235e+07";
 * 0 as "0", infinities as "inf" and "-inf", NaN as "NA". */
void pn_fmt_sig4(char *buf, size_t n, double v);

#endif
