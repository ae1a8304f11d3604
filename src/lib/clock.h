/* clock.h - the one clock pn's tools read when they say how long
 * something took (pn-time's budget and ETA, pn-fit --timings): monotonic
 * wall time in seconds, never the time of day (it does not jump when the
 * system clock is set). */
#ifndef PN_CLOCK_H
#define PN_CLOCK_H

#include <time.h>

static inline double pn_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
