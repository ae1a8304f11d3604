/* optim.h - the optimizer updates of pn: the one home of the formulas
 * that pn-time times on the CPU (every optimizer of the layer contract)
 * and that pn-fit's mlp trains with (Adam).
 *
 * PyTorch's formulas and defaults (torch.optim: Adam betas 0.9, 0.999;
 * RMSprop alpha 0.99; Adadelta rho 0.9; eps as there).  The loops are
 * compiled for AVX-512, AVX2 and plain x86-64 and picked when the program
 * loads.  The cuda backend has its own kernel of the same formulas
 * (src/cuda/kernels.cuh).
 */
#ifndef PN_OPTIM_H
#define PN_OPTIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PN_ADAM_B1 0.9f
#define PN_ADAM_B2 0.999f
#define PN_ADAM_EPS 1e-8f
#define PN_ADAGRAD_EPS 1e-10f
#define PN_ADADELTA_RHO 0.9f
#define PN_ADADELTA_EPS 1e-6f
#define PN_RMSPROP_ALPHA 0.99f
#define PN_RMSPROP_EPS 1e-8f

/* Optimizer state arrays of n floats each that opt (PN_OPT_*) needs: 0, 1
 * or 2. */
int pn_opt_states(int opt);

/* One update of w[0..n) with gradient g at step t (1, 2, ...) by opt;
 * s1, s2 are its state arrays (zero before the first step).  Adam is
 * pn_adam with step = lr / (1 - b1^t), c2 = 1 / sqrt(1 - b2^t) in float. */
void pn_opt_update(int opt, float lr, long t, size_t n, float *w,
		   const float *g, float *s1, float *s2);

/* One Adam step of w[0..n) with gradient g, first and second moments m and
 * v (updated in place).  Where the CPU has fma (x86-64-v3 and later) the
 * first n - n % 8 elements take the fused form
 *
 *   m = fma(b1, m, (1 - b1) g)
 *   v = fma(b2, v, (1 - b2) (g g))
 *   w = w - step m / fma(sqrt(v), c2, eps)
 *
 * and the others (all of them on other CPUs) the unfused one, m = b1 m +
 * (1 - b1) g, v = b2 v + (1 - b2) g g, w -= step m / (sqrt(v) c2 + eps):
 * the bits of the AVX2 kernel with a scalar tail that pn-fit's mlp models
 * were trained with.  step = lr / (1 - b1^t) and c2 = 1 / sqrt(1 - b2^t),
 * PyTorch's bias corrections, computed by the caller. */
void pn_adam(float *w, const float *g, float *m, float *v, size_t n,
	     float step, float c2, float b1, float b2, float eps);

#ifdef __cplusplus
}
#endif
#endif
