/* rng.h - pn's random numbers: xoshiro256** seeded by splitmix64.
 *
 * The same seed gives the same sequence on every platform: the generator is
 * integer arithmetic, and the derived draws below use only the basic IEEE
 * operations (+ - * /, which are correctly rounded everywhere) with no
 * library exp/log/pow, whose last bit may differ between C libraries.
 *
 * Usage:
 *   pn_rng r;
 *   pn_rng_seed(&r, 42);
 *   long long k = pn_rng_int(&r, 1, 64);
 */
#ifndef PN_RNG_H
#define PN_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	uint64_t s[4];
} pn_rng;

/* Seed the state from one 64-bit value through splitmix64 (any value,
 * including 0, gives a good state). */
void pn_rng_seed(pn_rng *r, uint64_t seed);

/* The next 64 random bits (xoshiro256**). */
uint64_t pn_rng_next(pn_rng *r);

/* Uniform double in [0, 1), 53 random bits. */
double pn_rng_unif(pn_rng *r);

/* Uniform whole number in [lo, hi] (lo <= hi, both below 2^62 in
 * magnitude), without modulo bias. */
long long pn_rng_int(pn_rng *r, long long lo, long long hi);

/* Whole number in [lo, hi] (1 <= lo <= hi) whose logarithm is uniform:
 * floor(exp(u)) for u uniform in [log lo, log(hi + 1)).  Each octave is as
 * likely as any other, so small sizes are as well covered as large ones. */
long long pn_rng_logint(pn_rng *r, long long lo, long long hi);

/* Real number in [lo, hi) (0 < lo < hi) whose logarithm is uniform. */
double pn_rng_logunif(pn_rng *r, double lo, double hi);

/* Fill x[0..n) with floats uniform in [lo, hi). */
void pn_rng_fill(pn_rng *r, float *x, size_t n, float lo, float hi);

/* MT19937, the generator of PyTorch's CPU random numbers (ATen's
 * mt19937), for a timed loop that draws as the framework does: 624 words
 * of state, the standard seeding and tempering (Matsumoto and Nishimura,
 * 1998); pn_mt_next is inline, as the framework's is in its kernels. */
typedef struct {
	uint32_t s[624];
	int i;
} pn_mt;

void pn_mt_seed(pn_mt *m, uint32_t seed);
/* Refill the state (i reaches 624): pn_mt_next's slow path. */
void pn_mt_twist(pn_mt *m);

static inline uint32_t pn_mt_next(pn_mt *m)
{
	if (m->i >= 624)
		pn_mt_twist(m);
	uint32_t y = m->s[m->i++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	return y ^ (y >> 18);
}

/* Uniform double in [0, 1) from the low 53 bits of two draws, the first
 * the high word, as ATen's uniform_real_distribution<double> takes them
 * (CPUGeneratorImpl::random64); its Bernoulli draw of a CPU tensor, a
 * dropout's mask, is one of these below the keep rate, so that with the
 * same seed pn's mask is PyTorch's. */
static inline double pn_mt_unif(pn_mt *m)
{
	uint64_t hi = pn_mt_next(m);
	uint64_t x = hi << 32 | pn_mt_next(m);
	return (double)(x & ((1ULL << 53) - 1)) * 0x1.0p-53;
}

/* Platform-independent natural logarithm (x > 0) and exponential, accurate
 * to a few ulp; used by the draws above. */
double pn_log(double x);
double pn_exp(double x);

#endif
