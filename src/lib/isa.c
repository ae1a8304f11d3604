#include "isa.h"

int pn_isa_level(void)
{
	/* every thread finds the same value: a race writes it twice */
	static int level = -1;
	if (level < 0) {
#if PN_ISA_LEVELS
		__builtin_cpu_init();
		level = __builtin_cpu_supports("x86-64-v4") ? 4 :
			__builtin_cpu_supports("x86-64-v3") ? 3 : 0;
#else
		level = 0;
#endif
	}
	return level;
}
