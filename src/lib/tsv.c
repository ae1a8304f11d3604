#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "input.h"
#include "opt.h"
#include "tsv.h"

struct pn_tsv {
	char *path;
	const char *shown;      /* name used in messages */
	pn_input *in;           /* bytes, gzip already inflated */

	char *buf;              /* decoded text */
	size_t cap, pos, end;   /* [pos, end) not yet consumed */

	int ncols;
	char **names;
	char **f;               /* fields of the current row */
	size_t *flen;
	long line;
};

static size_t fill(pn_tsv *t)
{
	if (t->pos > 0) {
		memmove(t->buf, t->buf + t->pos, t->end - t->pos);
		t->end -= t->pos;
		t->pos = 0;
	}
	if (t->end == t->cap) {
		t->cap *= 2;
		t->buf = pn_xrealloc_bulk(t->buf, t->cap + 1);
	}
	size_t n = pn_input_read(t->in, t->buf + t->end, t->cap - t->end);
	t->end += n;
	return n;
}

/* Next line as [*s, *s + *n), NUL-terminated in place; 0 at end of input. */
static int next_line(pn_tsv *t, char **s, size_t *n)
{
	size_t scan = t->pos;
	for (;;) {
		char *nl = memchr(t->buf + scan, '\n', t->end - scan);
		if (nl) {
			*s = t->buf + t->pos;
			*n = (size_t)(nl - *s);
			t->pos = (size_t)(nl - t->buf) + 1;
			break;
		}
		scan = t->end - t->pos;    /* offset after the move in fill() */
		if (fill(t) == 0) {
			if (t->end == t->pos)
				return 0;
			*s = t->buf + t->pos;  /* last line, no newline */
			*n = t->end - t->pos;
			t->pos = t->end;
			break;
		}
	}
	if (*n > 0 && (*s)[*n - 1] == '\r')
		(*n)--;
	(*s)[*n] = '\0';
	t->line++;
	return 1;
}

/* Split s in place at tabs into at most max fields; returns the count
 * (which may exceed max: extra fields are counted, not stored), or -1 when
 * s holds a NUL byte (binary data: a field would end there unseen). */
static int split(char *s, size_t n, char **f, size_t *len, int max)
{
	int k = 0;
	char *end = s + n, *start = s;
	/* fields are short: a byte loop beats memchr's call per field */
	for (;; s++) {
		if (s != end && *s == '\0')
			return -1;
		if (s == end || *s == '\t') {
			if (k < max) {
				f[k] = start;
				len[k] = (size_t)(s - start);
			}
			k++;
			if (s == end)
				return k;
			*s = '\0';
			start = s + 1;
		}
	}
}

pn_tsv *pn_tsv_open(const char *path)
{
	pn_tsv *t = pn_xcalloc(1, sizeof *t);
	t->in = pn_input_open(path);
	t->path = pn_xstrdup(path ? path : "-");
	t->shown = t->path;
	t->cap = 1 << 20;
	t->buf = pn_xmalloc(t->cap + 1);

	char *s;
	size_t n;
	if (!next_line(t, &s, &n))
		pn_die_at(PN_EXIT_DATA, t->shown, 0, "empty input (no header)");
	int nc = split(s, n, NULL, NULL, 0);
	if (nc < 0)
		pn_die_at(PN_EXIT_DATA, t->shown, 1, "a NUL byte in the line "
			  "(binary data, not TSV)");
	t->ncols = nc;
	t->names = pn_xcalloc((size_t)nc, sizeof *t->names);
	t->f = pn_xcalloc((size_t)nc, sizeof *t->f);
	t->flen = pn_xcalloc((size_t)nc, sizeof *t->flen);
	/* split() above replaced the tabs: walk the NUL-separated names. */
	char *p = s;
	for (int i = 0; i < nc; i++) {
		t->names[i] = pn_xstrdup(p);
		p += strlen(p) + 1;
		if (t->names[i][0] == '\0')
			pn_die_at(PN_EXIT_DATA, t->shown, 1,
				  "column %d has an empty name", i + 1);
		for (int j = 0; j < i; j++)
			if (strcmp(t->names[i], t->names[j]) == 0)
				pn_die_at(PN_EXIT_DATA, t->shown, 1,
					  "duplicate column '%s'",
					  t->names[i]);
	}
	return t;
}

void pn_tsv_close(pn_tsv *t)
{
	if (!t)
		return;
	pn_input_close(t->in);
	for (int i = 0; i < t->ncols; i++)
		free(t->names[i]);
	free(t->names);
	free(t->f);
	free(t->flen);
	free(t->buf);
	free(t->path);
	free(t);
}

const char *pn_tsv_path(const pn_tsv *t) { return t->path; }
int pn_tsv_ncols(const pn_tsv *t) { return t->ncols; }
const char *pn_tsv_colname(const pn_tsv *t, int c) { return t->names[c]; }
long pn_tsv_lineno(const pn_tsv *t) { return t->line; }

int pn_tsv_find(const pn_tsv *t, const char *name)
{
	for (int i = 0; i < t->ncols; i++)
		if (strcmp(t->names[i], name) == 0)
			return i;
	return -1;
}

int pn_tsv_col(const pn_tsv *t, const char *name)
{
	int c = pn_tsv_find(t, name);
	if (c < 0)
		pn_die_at(PN_EXIT_DATA, t->shown, 1, "missing column '%s'",
			  name);
	return c;
}

/* Die: the row at line has k fields, not the header's count. */
static _Noreturn void die_fields(const pn_tsv *t, long line, int k)
{
	if (k < 0)
		pn_die_at(PN_EXIT_DATA, t->shown, line, "a NUL byte in the "
			  "line (binary data, not TSV)");
	pn_die_at(PN_EXIT_DATA, t->shown, line, "expected %d field%s, found %d",
		  t->ncols, t->ncols == 1 ? "" : "s", k);
}

int pn_tsv_read(pn_tsv *t)
{
	char *s;
	size_t n;
	if (!next_line(t, &s, &n))
		return 0;
	int k = split(s, n, t->f, t->flen, t->ncols);
	if (k != t->ncols)
		die_fields(t, t->line, k);
	return 1;
}

/* ---- every row at once -------------------------------------------------- */

/* Whole lines [s, e) of the text, split on a thread of their own into the
 * rows from first on; bad_line: the line of its first row with the wrong
 * field count (found fields), or 0. */
typedef struct {
	char *s, *e;
	size_t first;
	long line0;             /* the line before its first row */
	pn_tsv_rows *out;
	int ncols;
	size_t *flen;           /* scratch: a row's field lengths */
	long bad_line;
	int found;
	pthread_t th;
	int started;
} share;

/* Bytes a share of pn_tsv_read_all gets at least: splitting takes some 1
 * ns a byte, starting a thread some 50 us.  The fuzzer's inputs are
 * small: it gets shares of a few rows. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define SHARE_BYTES 16
#else
#define SHARE_BYTES (1 << 20)
#endif

static void *split_share(void *arg)
{
	share *sh = arg;
	pn_tsv_rows *o = sh->out;
	int nc = sh->ncols;
	size_t *flen = sh->flen;
	size_t r = sh->first;
	long line = sh->line0;
	for (char *p = sh->s; p < sh->e; r++) {
		char *nl = memchr(p, '\n', (size_t)(sh->e - p));
		char *end = nl ? nl : sh->e;
		size_t n = (size_t)(end - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		p[n] = '\0';
		line++;
		char **f = (char **)(o->cell + r * (size_t)nc);
		int k = split(p, n, f, flen, nc);
		if (k != nc) {
			sh->bad_line = line;
			sh->found = k;
			break;
		}
		for (int c = 0; c < nc; c++)
			o->len[r * (size_t)nc + (size_t)c] = (uint32_t)flen[c];
		o->line[r] = line;
		p = end + 1;
	}
	return NULL;
}

/* The lines of [p, e), the last one with or without its newline. */
static size_t count_lines(const char *p, const char *e)
{
	size_t n = 0;
	for (; p < e; n++) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		p = nl ? nl + 1 : e;
	}
	return n;
}

/* Make room in t's buffer for the rest of its input where its size is
 * known (a regular file): one bulk buffer of that size, so that the text
 * is read without doubling and, from its first byte, into huge pages.  A
 * fresh block, not pn_xrealloc_bulk: realloc keeps the first megabyte's
 * small pages where it was, and grows the mapping where huge pages fit
 * less well (19,348 page faults against 17,110 for bench/fit-vs-python's
 * 100,000 x 20 rows). */
static void reserve_rest(pn_tsv *t)
{
	size_t have = t->end - t->pos, left = pn_input_left(t->in);
	if (left == 0 || have + left + 1 <= t->cap)
		return;
	size_t cap = have + left + 1;   /* + 1: room to see the end */
	char *buf = pn_xmalloc_bulk(cap + 1);
	memcpy(buf, t->buf + t->pos, have);
	free(t->buf);
	t->buf = buf;
	t->cap = cap;
	t->pos = 0;
	t->end = have;
}

void pn_tsv_read_all(pn_tsv *t, pn_tsv_rows *out, int threads)
{
	reserve_rest(t);
	while (fill(t) > 0)     /* the first call moves the rest to buf[0] */
		;
	char *text = t->buf + t->pos, *stop = t->buf + t->end;
	size_t size = (size_t)(stop - text);
	if ((size_t)threads > size / SHARE_BYTES)
		threads = (int)(size / SHARE_BYTES);
	if (threads < 1)
		threads = 1;
	share *sh = pn_xcalloc((size_t)threads, sizeof *sh);
	size_t nrows = 0;
	for (int j = 0; j < threads; j++) {
		char *from = j ? sh[j - 1].e : text, *to = stop;
		if (j + 1 < threads) {
			char *cut = text + size * (size_t)(j + 1) /
				    (size_t)threads;
			char *nl = cut < from ? NULL :
				   memchr(cut, '\n', (size_t)(stop - cut));
			to = cut < from ? from : nl ? nl + 1 : stop;
		}
		sh[j] = (share){ .s = from, .e = to, .first = nrows,
				 .line0 = t->line + (long)nrows, .out = out,
				 .ncols = t->ncols,
				 .flen = pn_xmalloc((size_t)t->ncols *
						    sizeof *sh[j].flen) };
		nrows += count_lines(from, to);
	}
	size_t cells = (nrows ? nrows : 1) * (size_t)t->ncols;
	*out = (pn_tsv_rows){ .text = t->buf, .nrows = nrows,
			      .cell = pn_xmalloc_bulk(cells * sizeof *out->cell),
			      .len = pn_xmalloc_bulk(cells * sizeof *out->len),
			      .line = pn_xmalloc_bulk((nrows ? nrows : 1) *
						 sizeof *out->line) };
	/* a share whose thread cannot start is split here below */
	for (int j = 1; j < threads; j++)
		sh[j].started = pthread_create(&sh[j].th, NULL, split_share,
					       &sh[j]) == 0;
	split_share(&sh[0]);
	for (int j = 1; j < threads; j++) {
		if (sh[j].started)
			pthread_join(sh[j].th, NULL);
		else
			split_share(&sh[j]);
	}
	long bad_line = 0;
	int found = 0;
	for (int j = 0; j < threads && !bad_line; j++)
		if (sh[j].bad_line) {
			bad_line = sh[j].bad_line;
			found = sh[j].found;
		}
	for (int j = 0; j < threads; j++)
		free(sh[j].flen);
	free(sh);               /* before dying: a leak checker sees no loss */
	if (bad_line)
		die_fields(t, bad_line, found);
	t->line += (long)nrows;
	/* the text is out's now; t is at its end, with a buffer of its own */
	t->cap = 1 << 10;
	t->buf = pn_xmalloc(t->cap + 1);
	t->pos = t->end = 0;
}

const char *pn_tsv_str(const pn_tsv *t, int c) { return t->f[c]; }
size_t pn_tsv_len(const pn_tsv *t, int c) { return t->flen[c]; }

int pn_tsv_na(const pn_tsv *t, int c)
{
	return t->flen[c] == 0 || strcmp(t->f[c], "NA") == 0;
}

void pn_tsv_die(const pn_tsv *t, int c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pn_die_at(PN_EXIT_DATA, t->shown, t->line, "column '%s': %s",
		  t->names[c], msg);
}

void pn_tsv_die_row(const pn_tsv *t, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pn_die_at(PN_EXIT_DATA, t->shown, t->line, "%s", msg);
}

static const double pow10tab[23] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

#if LDBL_MANT_DIG == 64 && defined(__x86_64__)
static const long double pow10l_tab[28] = {
	1e0L, 1e1L, 1e2L, 1e3L, 1e4L, 1e5L, 1e6L, 1e7L, 1e8L, 1e9L, 1e10L,
	1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L,
	1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L
};

/* m * 10^e (m < 2^64, |e| <= 27) correctly rounded to a double, in *out, or
 * -1 when this cannot tell.  Both m and 10^e are exact in the 64-bit
 * significand of an x87 long double, so one operation rounds once, to
 * within half a unit in its last place of the true value; rounding that on
 * to 53 bits is correct unless it lies within a unit of a halfway point
 * between doubles (low 11 bits 0x3ff to 0x401), or outside the doubles'
 * normal range. */
static int parse_long(uint64_t m, int e, double *out)
{
	long double v = e < 0 ? (long double)m / pow10l_tab[-e]
			      : (long double)m * pow10l_tab[e];
	if (!(v > 0x1p-1000L && v < 0x1p1000L))
		return -1;
	uint64_t bits;          /* the significand: the first 8 bytes */
	memcpy(&bits, &v, sizeof bits);
	unsigned low = (unsigned)(bits & 0x7ff);
	if (low >= 0x3ff && low <= 0x401)
		return -1;
	*out = (double)v;
	return 0;
}
#endif

/* Decimal to double, correctly rounded.  Fast when the digits fit in 2^53
 * and the power of ten is at most 22 (Clinger's fast path), or, with an x87
 * long double, when all of at most 19 digits are kept and the power of ten
 * is at most 27 (parse_long); otherwise the validated text goes to
 * strtod. */
int pn_parse_num(const char *s, size_t n, double *out)
{
	const char *p = s, *end = s + n;
	int neg = 0;
	if (p < end && (*p == '-' || *p == '+'))
		neg = *p++ == '-';
	/* the common case, a plain decimal of at most 18 digits ("-0.123456",
	 * "1024"): its digits fit m without a check, and the fast path of
	 * the loop below would take it too */
	if (end - p <= 19) {
		const char *q = p, *dot = NULL;
		uint64_t m = 0;
		for (; q < end; q++) {
			unsigned d = (unsigned)(*q - '0');
			if (d < 10)
				m = m * 10 + d;
			else if (*q == '.' && !dot)
				dot = q;
			else
				break;
		}
		size_t digits = (size_t)(q - p) - (dot != NULL);
		if (q == end && digits > 0 && m <= (UINT64_C(1) << 53)) {
			double v = (double)m;
			if (dot)
				v /= pow10tab[end - dot - 1];
			*out = neg ? -v : v;
			return 0;
		}
	}
	uint64_t m = 0;
	int digits = 0, sig = 0, exp10 = 0, any = 0, dropped = 0;
	while (p < end && (unsigned)(*p - '0') < 10) {
		if (sig < 19) {
			m = m * 10 + (uint64_t)(*p - '0');
			if (m)
				sig++;
		} else {
			exp10++;
			dropped |= *p != '0';
		}
		digits++;
		p++;
	}
	any = digits > 0;
	if (p < end && *p == '.') {
		p++;
		while (p < end && (unsigned)(*p - '0') < 10) {
			if (sig < 19) {
				m = m * 10 + (uint64_t)(*p - '0');
				if (m)
					sig++;
				exp10--;
			} else {
				dropped |= *p != '0';
			}
			any = 1;
			p++;
		}
	}
	if (!any)
		return -1;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		int eneg = 0, e = 0, edig = 0;
		if (p < end && (*p == '-' || *p == '+'))
			eneg = *p++ == '-';
		while (p < end && (unsigned)(*p - '0') < 10) {
			if (e < 100000)
				e = e * 10 + (*p - '0');
			edig++;
			p++;
		}
		if (!edig)
			return -1;
		exp10 += eneg ? -e : e;
	}
	if (p != end)
		return -1;
	double v;
	if (sig < 19 && m <= (UINT64_C(1) << 53) && exp10 >= -22 &&
	    exp10 <= 22) {
		v = (double)m;
		v = exp10 < 0 ? v / pow10tab[-exp10] : v * pow10tab[exp10];
#if LDBL_MANT_DIG == 64 && defined(__x86_64__)
	} else if (!dropped && m && exp10 >= -27 && exp10 <= 27 &&
		   parse_long(m, exp10, &v) == 0) {
		;
#endif
	} else {
		char tmp[128], *copy = n < sizeof tmp ? tmp : pn_xmalloc(n + 1);
		memcpy(copy, s, n);
		copy[n] = '\0';
		errno = 0;
		v = strtod(copy, NULL);
		if (copy != tmp)
			free(copy);
		if (!isfinite(v))
			return -1;
		*out = v;
		return 0;
	}
	*out = neg ? -v : v;
	return 0;
}

double pn_tsv_num(const pn_tsv *t, int c)
{
	double v;
	if (pn_parse_num(t->f[c], t->flen[c], &v) < 0)
		pn_tsv_real(t, c, PN_ANY);      /* dies with the reason */
	return v;
}

double pn_tsv_real(const pn_tsv *t, int c, pn_span span)
{
	double v;
	int rc = pn_parse_real(t->f[c], t->flen[c], span, &v);
	if (rc != PN_NUM_OK) {
		char m[160];
		pn_tsv_die(t, c, "%s", pn_real_msg(m, sizeof m, rc, t->f[c],
						   t->flen[c], span));
	}
	return v;
}

long long pn_tsv_whole(const pn_tsv *t, int c, long long min, long long max)
{
	long long v;
	int rc = pn_parse_whole(t->f[c], t->flen[c], min, max, &v);
	if (rc != PN_NUM_OK) {
		char m[160];
		pn_tsv_die(t, c, "%s", pn_whole_msg(m, sizeof m, rc, t->f[c],
						    t->flen[c], min,
						    (unsigned long long)max));
	}
	return v;
}

long long pn_tsv_int(const pn_tsv *t, int c)
{
	return pn_tsv_whole(t, c, -PN_WHOLE_MAX, PN_WHOLE_MAX);
}

/* ---- writing ---------------------------------------------------------- */

void pn_tsv_put_row(FILE *f, const pn_tsv *t)
{
	for (int i = 0; i < t->ncols; i++) {
		if (i)
			putc('\t', f);
		fwrite(t->f[i], 1, t->flen[i], f);
	}
}

void pn_tsv_put_header(FILE *f, const pn_tsv *t)
{
	for (int i = 0; i < t->ncols; i++) {
		if (i)
			putc('\t', f);
		fputs(t->names[i], f);
	}
}

int pn_fmt_num(char *buf, double v)
{
	if (v == 0)
		return sprintf(buf, "0");
	if (v == floor(v) && fabs(v) < 1e15)
		return sprintf(buf, "%.0f", v);
	for (int prec = 6; prec <= 17; prec += prec < 15 ? 9 : 1) {
		int n = sprintf(buf, "%.*g", prec, v);
		double back;
		if (pn_parse_num(buf, (size_t)n, &back) == 0 && back == v)
			return n;
	}
	return sprintf(buf, "%.17g", v);
}

void pn_put_num(FILE *f, double v)
{
	char b[40];
	fwrite(b, 1, (size_t)pn_fmt_num(b, v), f);
}

struct pn_tsv_out {
	const pn_tsv *in;
	int n;
	int *at;        /* input column replaced by new column k, or -1 */
	int *by;        /* for each input column: new column replacing it, -1 */
	char **names;
	char **val;
	size_t *vcap;
};

pn_tsv_out *pn_tsv_out_new(const pn_tsv *in, const char *const *names, int n)
{
	pn_tsv_out *o = pn_xcalloc(1, sizeof *o);
	o->in = in;
	o->n = n;
	o->at = pn_xcalloc((size_t)n, sizeof *o->at);
	o->by = pn_xcalloc((size_t)in->ncols, sizeof *o->by);
	o->names = pn_xcalloc((size_t)n, sizeof *o->names);
	o->val = pn_xcalloc((size_t)n, sizeof *o->val);
	o->vcap = pn_xcalloc((size_t)n, sizeof *o->vcap);
	for (int i = 0; i < in->ncols; i++)
		o->by[i] = -1;
	for (int k = 0; k < n; k++) {
		o->names[k] = pn_xstrdup(names[k]);
		o->at[k] = pn_tsv_find(in, names[k]);
		if (o->at[k] >= 0)
			o->by[o->at[k]] = k;
		o->vcap[k] = 64;
		o->val[k] = pn_xmalloc(64);
		strcpy(o->val[k], "NA");
	}
	return o;
}

void pn_tsv_out_free(pn_tsv_out *o)
{
	if (!o)
		return;
	for (int k = 0; k < o->n; k++) {
		free(o->names[k]);
		free(o->val[k]);
	}
	free(o->names);
	free(o->val);
	free(o->vcap);
	free(o->at);
	free(o->by);
	free(o);
}

void pn_tsv_out_header(pn_tsv_out *o, FILE *f)
{
	pn_tsv_put_header(f, o->in);
	for (int k = 0; k < o->n; k++)
		if (o->at[k] < 0)
			fprintf(f, "%s%s", o->in->ncols ? "\t" : "",
				o->names[k]);
	putc('\n', f);
}

void pn_tsv_out_num(pn_tsv_out *o, int k, double v)
{
	if (!isfinite(v))
		PN_BUG("non-finite value in output");
	pn_fmt_num(o->val[k], v);
}

void pn_tsv_out_str(pn_tsv_out *o, int k, const char *s)
{
	size_t n = strlen(s) + 1;
	if (n > o->vcap[k]) {
		o->vcap[k] = n;
		o->val[k] = pn_xrealloc(o->val[k], n);
	}
	memcpy(o->val[k], s, n);
}

void pn_tsv_out_row(pn_tsv_out *o, FILE *f)
{
	pn_tsv_out_fields(o, f, (const char *const *)o->in->f, o->in->flen);
}

void pn_tsv_out_fields(pn_tsv_out *o, FILE *f, const char *const *fields,
		       const size_t *lens)
{
	/* the stream is ours alone: no lock per field */
	for (int i = 0; i < o->in->ncols; i++) {
		if (i)
			putc_unlocked('\t', f);
		if (o->by[i] >= 0)
			fputs_unlocked(o->val[o->by[i]], f);
		else
			fwrite_unlocked(fields[i], 1, lens[i], f);
	}
	for (int k = 0; k < o->n; k++)
		if (o->at[k] < 0) {
			putc_unlocked('\t', f);
			fputs_unlocked(o->val[k], f);
		}
	putc_unlocked('\n', f);
}

/* ---- output files ----------------------------------------------------- */

#define MAX_OUT 8
static struct {
	FILE *f;        /* pn_output_open's stream; NULL for a reserved name */
	char *path;     /* as given, for messages */
	char *target;   /* path with symbolic links followed; NULL: stdout */
	char *tmp;      /* temporary file, or NULL when writing target itself */
	int copy;       /* reserved: copy tmp into target (a device, stdout) */
} outs[MAX_OUT];

void pn_stdout_init(void)
{
	static char buf[1 << 16];
	setvbuf(stdout, buf, _IOFBF, sizeof buf);
}

static int free_slot(void)
{
	for (int i = 0; i < MAX_OUT; i++)
		if (!outs[i].path)
			return i;
	PN_BUG("too many output files");
}

char *pn_output_target(const char *path)
{
	char *p = pn_xstrdup(path);
	for (int hops = 0; hops < 40; hops++) {
		struct stat st;
		char to[PATH_MAX];
		ssize_t n;
		if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode) ||
		    (n = readlink(p, to, sizeof to - 1)) < 0)
			return p;
		to[n] = '\0';
		char *slash = strrchr(p, '/'), *next;
		if (to[0] == '/' || !slash) {
			next = pn_xstrdup(to);
		} else {
			size_t dir = (size_t)(slash - p) + 1;
			next = pn_xmalloc(dir + (size_t)n + 1);
			memcpy(next, p, dir);
			memcpy(next + dir, to, (size_t)n + 1);
		}
		free(p);
		p = next;
	}
	pn_die(PN_EXIT_DATA, "%s: %s", path, strerror(ELOOP));
}

/* A new file named like dir/base.XXXXXX (in $TMPDIR or /tmp when dir is
 * NULL), mode 0666 & ~umask, removed if the program dies.  Returns its
 * name and its descriptor in *fd. */
static char *temp_file(const char *path, const char *near, int *fd)
{
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	size_t n = near ? strlen(near) : strlen(dir) + 7;
	char *tmp = pn_xmalloc(n + 8);
	if (near)
		memcpy(tmp, near, n);
	else
		snprintf(tmp, n + 1, "%s/pn-out", dir);
	memcpy(tmp + n, ".XXXXXX", 8);
	*fd = mkstemp(tmp);
	if (*fd < 0) {
		int e = errno;
		free(tmp);
		pn_die(PN_EXIT_DATA, "%s: %s", path, strerror(e));
	}
	pn_cleanup_push(tmp);
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(*fd, 0666 & ~mask) != 0)
		pn_die(PN_EXIT_DATA, "%s: %s", path, strerror(errno));
	return tmp;
}

/* Fill a slot for path: target, and whether target is a file that is
 * replaced (1) or something written in place (0: a device, a FIFO). */
static int claim(int slot, const char *path)
{
	struct stat st;
	outs[slot].path = pn_xstrdup(path);
	if (strcmp(path, "-") == 0)
		return 0;
	outs[slot].target = pn_output_target(path);
	return stat(outs[slot].target, &st) != 0 || S_ISREG(st.st_mode);
}

FILE *pn_output_open(const char *path)
{
	if (!path || strcmp(path, "-") == 0)
		return stdout;
	int slot = free_slot(), fd;
	FILE *f;
	if (claim(slot, path)) {
		outs[slot].tmp = temp_file(path, outs[slot].target, &fd);
		f = fdopen(fd, "w");
	} else {
		f = fopen(outs[slot].target, "w");
	}
	if (!f)
		pn_die(PN_EXIT_DATA, "%s: %s", path, strerror(errno));
	outs[slot].f = f;
	return f;
}

const char *pn_output_reserve(const char *path)
{
	int slot = free_slot(), fd;
	if (!path)
		path = "-";
	if (claim(slot, path)) {
		outs[slot].tmp = temp_file(path, outs[slot].target, &fd);
	} else {
		outs[slot].tmp = temp_file(path, NULL, &fd);
		outs[slot].copy = 1;
	}
	close(fd);
	return outs[slot].tmp;
}

static void release(int i)
{
	if (outs[i].tmp) {
		pn_cleanup_pop(outs[i].tmp);
		free(outs[i].tmp);
	}
	free(outs[i].target);
	free(outs[i].path);
	memset(&outs[i], 0, sizeof outs[i]);
}

/* Flush and close f; dies "write error: <path>: <reason>" on failure. */
static void finish(FILE *f, const char *path)
{
	int bad = fflush(f) != 0 || ferror(f);
	int e = errno;
	if (f == stdout) {
		if (bad)
			pn_die(PN_EXIT_DATA, "write error: %s",
			       strerror(e ? e : EIO));
		return;
	}
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	if (bad)
		pn_die(PN_EXIT_DATA, "write error: %s: %s", path,
		       strerror(e ? e : EIO));
}

/* Copy the reserved file of slot i into its device or standard output. */
static void copy_out(int i)
{
	FILE *from = fopen(outs[i].tmp, "r");
	FILE *to = outs[i].target ? fopen(outs[i].target, "w") : stdout;
	if (!from || !to)
		pn_die(PN_EXIT_DATA, "%s: %s", outs[i].path, strerror(errno));
	char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, from)) > 0)
		if (fwrite(buf, 1, n, to) != n)
			break;
	if (ferror(from))
		pn_die(PN_EXIT_DATA, "%s: read error: %s", outs[i].tmp,
		       strerror(errno));
	fclose(from);
	finish(to, outs[i].path);
	unlink(outs[i].tmp);
}

void pn_output_commit(const char *name)
{
	for (int i = 0; i < MAX_OUT; i++) {
		if (outs[i].f || !outs[i].tmp || strcmp(outs[i].tmp, name))
			continue;
		if (outs[i].copy)
			copy_out(i);
		else if (rename(outs[i].tmp, outs[i].target) != 0)
			pn_die(PN_EXIT_DATA, "%s: %s", outs[i].path,
			       strerror(errno));
		release(i);
		return;
	}
	PN_BUG("pn_output_commit on an unknown name");
}

void pn_output_close(FILE *f)
{
	if (f == stdout) {
		finish(f, "-");
		return;
	}
	for (int i = 0; i < MAX_OUT; i++) {
		if (outs[i].f != f)
			continue;
		finish(f, outs[i].path);
		if (outs[i].tmp && rename(outs[i].tmp, outs[i].target) != 0)
			pn_die(PN_EXIT_DATA, "%s: %s", outs[i].path,
			       strerror(errno));
		release(i);
		return;
	}
	PN_BUG("pn_output_close on unknown file");
}
