/* opt.c - whole and real numbers, option values; see opt.h. */
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "opt.h"
#include "tsv.h"

/* The parts of a number: [ip, ip + ni) integer digits, [fp, fp + nf)
 * fraction digits, exponent e (clamped); 0, or -1 if s[0..n) is not a
 * number in pn_parse_num's syntax. */
struct parts {
	int neg;
	const char *ip, *fp;
	size_t ni, nf;
	long e;
};

static size_t digits(const char *p, const char *end)
{
	const char *q = p;
	while (q < end && (unsigned)(*q - '0') < 10)
		q++;
	return (size_t)(q - p);
}

static int split_number(const char *s, size_t n, struct parts *x)
{
	const char *p = s, *end = s + n;
	memset(x, 0, sizeof *x);
	if (p < end && (*p == '-' || *p == '+'))
		x->neg = *p++ == '-';
	x->ip = p;
	x->ni = digits(p, end);
	p += x->ni;
	x->fp = p;
	if (p < end && *p == '.') {
		x->fp = ++p;
		x->nf = digits(p, end);
		p += x->nf;
	}
	if (x->ni + x->nf == 0)
		return -1;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		int eneg = 0;
		if (p < end && (*p == '-' || *p == '+'))
			eneg = *p++ == '-';
		size_t k = digits(p, end);
		if (k == 0)
			return -1;
		for (size_t i = 0; i < k; i++)
			if (x->e < 1000000)
				x->e = x->e * 10 + (p[i] - '0');
		x->e = eneg ? -x->e : x->e;
		p += k;
	}
	return p == end ? 0 : -1;
}

static int digit_at(const struct parts *x, size_t i)
{
	return (i < x->ni ? x->ip[i] : x->fp[i - x->ni]) - '0';
}

/* The magnitude of a whole number, exactly: PN_NUM_OK, PN_NUM_NAN,
 * PN_NUM_FRAC, or PN_NUM_HIGH when it exceeds 2^64 - 1. */
static int magnitude(const struct parts *x, uint64_t *mag)
{
	size_t nd = x->ni + x->nf, a = 0, b = nd;
	while (a < nd && digit_at(x, a) == 0)
		a++;
	*mag = 0;
	if (a == nd)
		return PN_NUM_OK;               /* zero, whatever the exponent */
	while (digit_at(x, b - 1) == 0)
		b--;
	/* value = digits [a, b) times 10^p */
	long p = x->e - (long)x->nf + (long)(nd - b);
	if (p < 0)
		return PN_NUM_FRAC;
	if ((long)(b - a) + p > 20)
		return PN_NUM_HIGH;
	uint64_t m = 0;
	for (size_t i = a; i < b; i++)
		if (__builtin_mul_overflow(m, 10, &m) ||
		    __builtin_add_overflow(m, (uint64_t)digit_at(x, i), &m))
			return PN_NUM_HIGH;
	for (long i = 0; i < p; i++)
		if (__builtin_mul_overflow(m, 10, &m))
			return PN_NUM_HIGH;
	*mag = m;
	return PN_NUM_OK;
}

/* s[0..n) as a whole number: its magnitude in *m and whether it is below 0
 * in *neg ("-0" is not); PN_NUM_HIGH or PN_NUM_LOW beyond 2^64 - 1. */
static int whole(const char *s, size_t n, int *neg, uint64_t *m)
{
	struct parts x;
	if (split_number(s, n, &x) < 0)
		return PN_NUM_NAN;
	int rc = magnitude(&x, m);
	*neg = x.neg && *m > 0;
	return rc == PN_NUM_HIGH && x.neg ? PN_NUM_LOW : rc;
}

int pn_parse_whole(const char *s, size_t n, long long min, long long max,
		   long long *out)
{
	int neg, rc;
	uint64_t m;
	if ((rc = whole(s, n, &neg, &m)) != PN_NUM_OK)
		return rc;
	if (neg) {
		/* -m >= min, that is m - 1 <= -(min + 1), without overflow */
		if (min >= 0 || m - 1 > (uint64_t)(-(min + 1)))
			return PN_NUM_LOW;
		long long v = -(long long)(m - 1) - 1;
		if (v > max)
			return PN_NUM_HIGH;
		*out = v;
		return PN_NUM_OK;
	}
	if (max < 0 || m > (uint64_t)max)
		return PN_NUM_HIGH;
	if ((long long)m < min)
		return PN_NUM_LOW;
	*out = (long long)m;
	return PN_NUM_OK;
}

int pn_parse_uwhole(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	int neg, rc;
	uint64_t m;
	if ((rc = whole(s, n, &neg, &m)) != PN_NUM_OK)
		return rc;
	if (neg)
		return PN_NUM_LOW;
	if (m > max)
		return PN_NUM_HIGH;
	*out = m;
	return PN_NUM_OK;
}

int pn_parse_real(const char *s, size_t n, pn_span span, double *out)
{
	struct parts x;
	double v;
	if (split_number(s, n, &x) < 0)
		return PN_NUM_NAN;
	if (pn_parse_num(s, n, &v) < 0)     /* beyond a double */
		return x.neg ? PN_NUM_LOW : PN_NUM_HIGH;
	if (v < span.min || (span.above && v == span.min))
		return PN_NUM_LOW;
	if (v > span.max || (span.below && v == span.max))
		return PN_NUM_HIGH;
	*out = v;
	return PN_NUM_OK;
}

/* "'s'" cut to 40 bytes, then the failure. */
static const char *message(char *buf, size_t size, int rc, const char *s,
			   size_t n, const char *limit)
{
	char q[48];
	if (n >= 44)
		snprintf(q, sizeof q, "'%.40s...'", s);
	else
		snprintf(q, sizeof q, "'%.*s'", (int)n, s);
	switch (rc) {
	case PN_NUM_NAN: snprintf(buf, size, "%s is not a number", q); break;
	case PN_NUM_FRAC:
		snprintf(buf, size, "%s is not a whole number", q);
		break;
	case PN_NUM_HIGH:
		snprintf(buf, size, "%s is too large (%s)", q, limit);
		break;
	case PN_NUM_LOW:
		snprintf(buf, size, "%s is too small (%s)", q, limit);
		break;
	default: PN_BUG("no message for a parsed number");
	}
	return buf;
}

const char *pn_whole_msg(char *buf, size_t size, int rc, const char *s,
			 size_t n, long long wmin, unsigned long long wmax)
{
	char lim[48];
	if (rc == PN_NUM_HIGH)
		snprintf(lim, sizeof lim, "at most %llu", wmax);
	else
		snprintf(lim, sizeof lim, "at least %lld", wmin);
	return message(buf, size, rc, s, n, lim);
}

const char *pn_real_msg(char *buf, size_t size, int rc, const char *s,
			size_t n, pn_span span)
{
	char lim[64], v[40];
	double b = rc == PN_NUM_HIGH ? span.max : span.min;
	pn_fmt_num(v, isinf(b) ? copysign(DBL_MAX, b) : b);
	snprintf(lim, sizeof lim, "%s %s", rc == PN_NUM_HIGH ?
		 (span.below ? "must be below" : "at most") :
		 span.above ? "must be above" : "at least", v);
	return message(buf, size, rc, s, n, lim);
}

/* ---- options ------------------------------------------------------------ */

long long pn_opt_whole(const char *opt, const char *s, long long min,
		       long long max)
{
	long long v;
	int rc = pn_parse_whole(s, strlen(s), min, max, &v);
	if (rc != PN_NUM_OK) {
		char m[160];
		pn_usage_error("%s: %s", opt, pn_whole_msg(m, sizeof m, rc, s,
			       strlen(s), min, (unsigned long long)max));
	}
	return v;
}

uint64_t pn_opt_seed(const char *opt, const char *s)
{
	uint64_t v;
	int rc = pn_parse_uwhole(s, strlen(s), UINT64_MAX, &v);
	if (rc != PN_NUM_OK) {
		char m[160];
		pn_usage_error("%s: %s", opt, pn_whole_msg(m, sizeof m, rc, s,
			       strlen(s), 0, UINT64_MAX));
	}
	return v;
}

double pn_opt_real(const char *opt, const char *s, pn_span span)
{
	double v;
	int rc = pn_parse_real(s, strlen(s), span, &v);
	if (rc != PN_NUM_OK) {
		char m[160];
		pn_usage_error("%s: %s", opt, pn_real_msg(m, sizeof m, rc, s,
			       strlen(s), span));
	}
	return v;
}

double pn_opt_size(const char *opt, const char *s)
{
	static const char units[] = "KMGT";
	size_t n = strlen(s);
	double mul = 1;
	const char *u = n ? strchr(units, s[n - 1]) : NULL;
	if (u && *u) {
		mul = 1e3;
		for (const char *k = units; k < u; k++)
			mul *= 1e3;
		n--;
	}
	double v;
	struct parts x;
	if (n == 0 || split_number(s, n, &x) < 0)
		pn_usage_error("%s: '%s' is not a size", opt, s);
	int rc = pn_parse_real(s, n, PN_NONNEG, &v);
	if (rc == PN_NUM_OK && !isfinite(v * mul))
		rc = PN_NUM_HIGH;
	if (rc != PN_NUM_OK) {
		char m[160];
		pn_usage_error("%s: %s", opt, pn_real_msg(m, sizeof m, rc, s,
			       strlen(s), PN_NONNEG));
	}
	return v * mul;
}

int pn_opt_choice(const char *opt, const char *s, const char *const *names)
{
	char list[256];
	size_t len = 0;
	for (int i = 0; names[i]; i++) {
		if (strcmp(s, names[i]) == 0)
			return i;
		len += (size_t)snprintf(list + len, len < sizeof list ?
					sizeof list - len : 0, "%s%s",
					i ? ", " : "", names[i]);
	}
	pn_usage_error("%s: unknown value '%s' (one of: %s)", opt, s, list);
}
