/* bf16.h - bfloat16, the upper half of an IEEE binary32: conversions with
 * round to nearest even (NaN stays NaN), for the data a bf16 kernel reads
 * and writes and for the inputs of --check, which are made representable
 * in bf16 (or fp16: pn_fp16_round) so that the fp32 reference computes on
 * the values the kernel sees. */
#ifndef PN_BF16_H
#define PN_BF16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t pn_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static inline float pn_bf16_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* f rounded to the nearest bf16 value, as a float */
static inline float pn_bf16_round(float f)
{
	return pn_bf16_f32(pn_bf16(f));
}

/* f rounded to the nearest IEEE binary16 (fp16) value, ties to even, as a
 * float: 11 significant bits, subnormals below 2^-14 in steps of 2^-24,
 * infinity past 65504 (the --check inputs of an fp16 row, as those of a
 * bf16 row) */
static inline float pn_fp16_round(float f)
{
	if (!isfinite(f))
		return f;
	double a = fabs((double)f), r;
	if (a < 0x1p-14) {
		r = nearbyint(a * 0x1p24) * 0x1p-24;
	} else {
		int e;
		double m = frexp(a, &e);        /* a = m 2^e, m in [0.5, 1) */
		r = ldexp(nearbyint(ldexp(m, 11)), e - 11);
		if (r > 65504)
			r = INFINITY;
	}
	return (float)(f < 0 ? -r : r);
}

/* Element i of a, an array of bf16 when half, else of float, as a
 * float; and the store of v there (rounded to bf16 when half). */
static inline float pn_bf16_ld(const void *a, long i, int half)
{
	return half ? pn_bf16_f32(((const uint16_t *)a)[i]) :
		      ((const float *)a)[i];
}

static inline void pn_bf16_st(void *a, long i, float v, int half)
{
	if (half)
		((uint16_t *)a)[i] = pn_bf16(v);
	else
		((float *)a)[i] = v;
}

#endif
