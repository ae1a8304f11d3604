/* bf16.h - bfloat16, the upper half of an IEEE binary32: conversions with
 * round to nearest even (NaN stays NaN), for the data a bf16 kernel reads
 * and writes and for the inputs of --check, which are made representable
 * in bf16 so that the fp32 reference computes on the values the kernel
 * sees. */
#ifndef PN_BF16_H
#define PN_BF16_H

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
