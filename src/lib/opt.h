/* opt.h - numbers and option values: one rule, one message per failure.
 *
 * A number is decimal with optional sign, fraction and exponent ("12",
 * "-0.5", "1e3", "2.5E-1"); spaces, hex, inf and nan are not numbers (the
 * syntax of pn_parse_num in tsv.h).  A whole number is a number whose value
 * is whole: "1000", "1e3", "1.5e3" and "1000.0" are all 1000, "1.5" is not
 * whole.  Whole numbers are read exactly (no rounding through a double), so
 * every 64-bit value can be given.  The same rule holds for TSV fields
 * (pn_tsv_int, pn_tsv_whole) and command-line options (pn_opt_*).
 *
 * Every failure has one message, made by pn_num_msg:
 *
 *   'x' is not a number
 *   '1.5' is not a whole number
 *   '1e30' is too large (at most 9007199254740991)
 *   '0' is too small (at least 1)
 *   '0' is too small (must be above 0)
 *   '100' is too large (must be below 100)
 *
 * An option's message starts with the option: "pn-x: --count: '0' is too
 * small (at least 1)", then "Try 'pn-x --help'", exit 2.  A TSV field's
 * message names file, line and column (tsv.h).
 *
 * Which option of which tool uses what:
 *   whole numbers in a range (counts, batch, dataset size, layers)
 *                                  pn_opt_whole
 *   seeds (0 to 2^64 - 1)         pn_opt_seed
 *   real numbers in a range       pn_opt_real (PN_POSITIVE: above 0)
 *   sizes with a K/M/G/T suffix   pn_opt_size
 *   one of a list (--format)      pn_opt_choice
 */
#ifndef PN_OPT_H
#define PN_OPT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Results of the parsers below. */
enum {
	PN_NUM_OK = 0,
	PN_NUM_NAN,     /* not a number */
	PN_NUM_FRAC,    /* a number, but not whole */
	PN_NUM_HIGH,    /* above the largest allowed value */
	PN_NUM_LOW      /* below the smallest allowed value */
};

/* The largest whole number a double holds exactly (2^53 - 1): the limit
 * of a whole number in a TSV field. */
#define PN_WHOLE_MAX 9007199254740991LL

/* Allowed values of a real number: min <= v <= max; min < v when above is
 * set, v < max when below is set (a percentage strictly between 0 and
 * 100: {0, 100, 1, 1}). */
typedef struct {
	double min, max;
	int above, below;
} pn_span;

#define PN_ANY ((pn_span){-HUGE_VAL, HUGE_VAL, 0, 0})
#define PN_POSITIVE ((pn_span){0, HUGE_VAL, 1, 0})
#define PN_NONNEG ((pn_span){0, HUGE_VAL, 0, 0})

/* s[0..n) (s[n] readable) as a whole number with min <= v <= max, in *out.
 * Returns PN_NUM_OK, or PN_NUM_NAN, PN_NUM_FRAC, PN_NUM_HIGH, PN_NUM_LOW
 * (*out untouched). */
int pn_parse_whole(const char *s, size_t n, long long min, long long max,
		   long long *out);

/* The same for an unsigned value from 0 to max ("-0" is 0). */
int pn_parse_uwhole(const char *s, size_t n, uint64_t max, uint64_t *out);

/* s[0..n) as a finite number within span, in *out.  A number too large
 * for a double ("1e400") is PN_NUM_HIGH, or PN_NUM_LOW when negative. */
int pn_parse_real(const char *s, size_t n, pn_span span, double *out);

/* The message for rc (not PN_NUM_OK) about s[0..n) (quoted, cut to 40
 * bytes), into buf (size size; 128 is always enough).  The limit named is
 * wmin/wmax for a whole number, span for a real one: pass the bounds the
 * parser was given (the others are ignored). */
const char *pn_whole_msg(char *buf, size_t size, int rc, const char *s,
			 size_t n, long long wmin, unsigned long long wmax);
const char *pn_real_msg(char *buf, size_t size, int rc, const char *s,
			size_t n, pn_span span);

/* ---- options: each dies with a usage error (exit 2) -------------------- */

/* The option's value as a whole number in [min, max]. */
long long pn_opt_whole(const char *opt, const char *s, long long min,
		       long long max);
/* A seed: a whole number from 0 to 2^64 - 1. */
uint64_t pn_opt_seed(const char *opt, const char *s);
/* A real number within span. */
double pn_opt_real(const char *opt, const char *s, pn_span span);
/* A size: a number of at least 0, optionally followed by K, M, G or T
 * (10^3, 10^6, 10^9, 10^12): "1.5G" is 1.5e9.  Fails with "'x' is not a
 * size" when the suffix is unknown. */
double pn_opt_size(const char *opt, const char *s);
/* Index of s in names (NULL-terminated); else dies with
 * "OPT: unknown value 'x' (one of: a, b)". */
int pn_opt_choice(const char *opt, const char *s, const char *const *names);

#endif
