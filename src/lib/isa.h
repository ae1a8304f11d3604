/* isa.h - the x86-64 level of this CPU, for the timed loops that are built
 * once per level and chosen at run time, as frameworks pick their CPU
 * kernels.
 *
 *   PN_ISA_LEVELS  1 where per-level versions can be built (GCC on
 *                  x86-64), else 0
 *   PN_ISA_V4      the attribute that builds a function for x86-64-v4
 *                  (AVX-512); PN_ISA_V3 for x86-64-v3 (AVX2, FMA)
 *   pn_isa_level() 4, 3, or 0 (older, or another architecture); asked of
 *                  the CPU once
 *
 * Chosen by a call, not by an ifunc resolver: a resolver runs while the
 * program is relocated, before the sanitizers' runtime is up, and crashes
 * a SANITIZE=1 build.
 *
 * Usage:
 *   switch (pn_isa_level()) {
 *   #if PN_ISA_LEVELS
 *   case 4: f_v4(x); return;
 *   case 3: f_v3(x); return;
 *   #endif
 *   default: f_base(x);
 *   }
 */
#ifndef PN_ISA_H
#define PN_ISA_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PN_ISA_LEVELS 1
#define PN_ISA_V4 __attribute__((target("arch=x86-64-v4")))
#define PN_ISA_V3 __attribute__((target("arch=x86-64-v3")))
#else
#define PN_ISA_LEVELS 0
#endif

int pn_isa_level(void);

#endif
