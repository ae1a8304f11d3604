#include <math.h>

#include "rng.h"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void pn_rng_seed(pn_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t pn_rng_next(pn_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double pn_rng_unif(pn_rng *r)
{
	return (double)(pn_rng_next(r) >> 11) * 0x1.0p-53;
}

long long pn_rng_int(pn_rng *r, long long lo, long long hi)
{
	uint64_t span = (uint64_t)(hi - lo) + 1, x;
	if (span == 0)
		return lo;
	/* reject the top partial block so every value is equally likely */
	uint64_t limit = UINT64_MAX - UINT64_MAX % span;
	do
		x = pn_rng_next(r);
	while (x >= limit);
	return lo + (long long)(x % span);
}

long long pn_rng_logint(pn_rng *r, long long lo, long long hi)
{
	double a = pn_log((double)lo), b = pn_log((double)hi + 1);
	long long v = (long long)floor(pn_exp(a + (b - a) * pn_rng_unif(r)));
	return v < lo ? lo : v > hi ? hi : v;
}

double pn_rng_logunif(pn_rng *r, double lo, double hi)
{
	double a = pn_log(lo), b = pn_log(hi);
	double v = pn_exp(a + (b - a) * pn_rng_unif(r));
	return v < lo ? lo : v >= hi ? nextafter(hi, lo) : v;
}

void pn_rng_fill(pn_rng *r, float *x, size_t n, float lo, float hi)
{
	float w = hi - lo;
	for (size_t i = 0; i < n; i++)
		x[i] = lo + w * (float)(pn_rng_next(r) >> 40) * 0x1.0p-24f;
}

/* ln 2 split so that k * LN2_HI is exact for |k| < 2^20 */
#define LN2_HI 6.93147180369123816490e-01
#define LN2_LO 1.90821492927058770002e-10

double pn_exp(double x)
{
	if (x > 709)
		return HUGE_VAL;
	if (x < -745)
		return 0;
	double k = floor(x / (LN2_HI + LN2_LO) + 0.5);
	double t = (x - k * LN2_HI) - k * LN2_LO;    /* |t| <= 0.35 */
	double sum = 1, term = 1;
	for (int i = 1; i < 20; i++) {
		term = term * t / i;
		sum += term;
	}
	return ldexp(sum, (int)k);
}

double pn_log(double x)
{
	if (!(x > 0))
		return x == 0 ? -HUGE_VAL : NAN;
	int e;
	double m = frexp(x, &e);                   /* x = m 2^e, m in [0.5, 1) */
	if (m < 0.70710678118654752440) {
		m *= 2;
		e--;
	}
	/* log m = 2 atanh(s), s = (m - 1)/(m + 1), |s| < 0.172 */
	double s = (m - 1) / (m + 1), s2 = s * s, p = s, sum = 0;
	for (int i = 1; i < 40; i += 2) {
		sum += p / i;
		p *= s2;
	}
	return e * LN2_HI + (e * LN2_LO + 2 * sum);
}

void pn_mt_seed(pn_mt *m, uint32_t seed)
{
	m->s[0] = seed;
	for (uint32_t i = 1; i < 624; i++)
		m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + i;
	m->i = 624;
}

void pn_mt_twist(pn_mt *m)
{
	uint32_t *s = m->s;
#define PN_MT_MIX(a, b, c) ((c) ^ ((((a) & 0x80000000u) | ((b) & 0x7fffffffu)) >> 1) ^ \
			    (((b) & 1) ? 0x9908b0dfu : 0))
	int i = 0;
	for (; i < 624 - 397; i++)
		s[i] = PN_MT_MIX(s[i], s[i + 1], s[i + 397]);
	for (; i < 623; i++)
		s[i] = PN_MT_MIX(s[i], s[i + 1], s[i + 397 - 624]);
	s[623] = PN_MT_MIX(s[623], s[0], s[396]);
#undef PN_MT_MIX
	m->i = 0;
}
