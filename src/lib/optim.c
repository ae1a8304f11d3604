#include <math.h>

#include "isa.h"
#include "layer.h"
#include "optim.h"

/* The loops are timed (pn-time) and run every mlp batch (pn-fit): built
 * with -O3 -fno-math-errno (see the Makefile) in one version per
 * instruction set, picked at load time as frameworks pick their CPU
 * kernels. */
#if PN_ISA_LEVELS
#define VEC __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VEC
#endif

int pn_opt_states(int opt)
{
	switch (opt) {
	case PN_OPT_ADAM: case PN_OPT_ADADELTA: return 2;
	case PN_OPT_ADAGRAD: case PN_OPT_RMSPROP: return 1;
	default: return 0;
	}
}

/* Adam, the fused form: m, v and the denominator with fma, as mlp's AVX2
 * kernel has computed them, 8 lanes at a time, and the n % 8 elements
 * left unfused, as that kernel's scalar tail did. */
static inline __attribute__((always_inline)) void
adam_unfused(float *restrict w, const float *restrict g, float *restrict m,
	     float *restrict v, size_t from, size_t n, float step, float c2,
	     float b1, float b2, float eps)
{
	for (size_t i = from; i < n; i++) {
		m[i] = b1 * m[i] + (1 - b1) * g[i];
		v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
		w[i] -= step * m[i] / (sqrtf(v[i]) * c2 + eps);
	}
}

static inline __attribute__((always_inline)) void
adam_fused(float *restrict w, const float *restrict g, float *restrict m,
	   float *restrict v, size_t n, float step, float c2, float b1,
	   float b2, float eps)
{
	const float a1 = 1 - b1, a2 = 1 - b2;
	size_t nb = n - n % 8;
	for (size_t i = 0; i < nb; i++) {
		float gi = g[i];
		float mi = fmaf(b1, m[i], a1 * gi);
		float vi = fmaf(b2, v[i], a2 * (gi * gi));
		m[i] = mi;
		v[i] = vi;
		w[i] = w[i] - step * mi / fmaf(sqrtf(vi), c2, eps);
	}
	adam_unfused(w, g, m, v, nb, n, step, c2, b1, b2, eps);
}

#define ADAM_ARGS float *restrict w, const float *restrict g, \
	float *restrict m, float *restrict v, size_t n, float step, float c2, \
	float b1, float b2, float eps

static void adam_base(ADAM_ARGS)
{
	adam_unfused(w, g, m, v, 0, n, step, c2, b1, b2, eps);
}

#if PN_ISA_LEVELS
/* the fused form where the CPU has fma (x86-64-v3: AVX2; v4: AVX-512) */
PN_ISA_V4 static void adam_v4(ADAM_ARGS)
{
	adam_fused(w, g, m, v, n, step, c2, b1, b2, eps);
}

PN_ISA_V3 static void adam_v3(ADAM_ARGS)
{
	adam_fused(w, g, m, v, n, step, c2, b1, b2, eps);
}
#endif

void pn_adam(ADAM_ARGS)
{
	switch (pn_isa_level()) {
#if PN_ISA_LEVELS
	case 4: adam_v4(w, g, m, v, n, step, c2, b1, b2, eps); return;
	case 3: adam_v3(w, g, m, v, n, step, c2, b1, b2, eps); return;
#endif
	default: adam_base(w, g, m, v, n, step, c2, b1, b2, eps);
	}
}

VEC void pn_opt_update(int opt, float lr, long t, size_t n, float *w,
		       const float *g, float *s1, float *s2)
{
	switch (opt) {
	case PN_OPT_SGD:
		for (size_t i = 0; i < n; i++)
			w[i] -= lr * g[i];
		break;
	case PN_OPT_ADAM: {
		float c1 = 1 - powf(PN_ADAM_B1, (float)t);
		float c2 = 1 - powf(PN_ADAM_B2, (float)t);
		pn_adam(w, g, s1, s2, n, lr / c1, 1 / sqrtf(c2), PN_ADAM_B1,
			PN_ADAM_B2, PN_ADAM_EPS);
		break;
	}
	case PN_OPT_ADAGRAD:
		for (size_t i = 0; i < n; i++) {
			s1[i] += g[i] * g[i];
			w[i] -= lr * g[i] / (sqrtf(s1[i]) + PN_ADAGRAD_EPS);
		}
		break;
	case PN_OPT_ADADELTA: {
		const float rho = PN_ADADELTA_RHO, eps = PN_ADADELTA_EPS;
		for (size_t i = 0; i < n; i++) {
			s1[i] = rho * s1[i] + (1 - rho) * g[i] * g[i];
			float d = sqrtf(s2[i] + eps) / sqrtf(s1[i] + eps) * g[i];
			s2[i] = rho * s2[i] + (1 - rho) * d * d;
			w[i] -= lr * d;
		}
		break;
	}
	case PN_OPT_RMSPROP: {
		const float a = PN_RMSPROP_ALPHA;
		for (size_t i = 0; i < n; i++) {
			s1[i] = a * s1[i] + (1 - a) * g[i] * g[i];
			w[i] -= lr * g[i] / (sqrtf(s1[i]) + PN_RMSPROP_EPS);
		}
		break;
	}
	default:
		break;
	}
}
