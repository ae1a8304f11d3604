/* fault.h - a row whose library code executes an instruction the CPU
 * refuses (SIGILL) fails alone, as any other library failure does; the run
 * goes on with the next row.
 *
 * A library that generates its kernels at run time can emit one the CPU
 * will not run: oneDNN 2.6.3 (Debian 12's) emits AMX tile loads of an
 * unconfigured tile for some bf16 matmul shapes (M 555, K 1023, N 341 on a
 * Xeon with AMX-BF16), and without this guard the first such row killed a
 * two-hour collection.  Only SIGILL is caught: a segmentation fault is more
 * likely pn's own bug, and the sanitizers must see it.
 *
 * Usage, in the function whose frame stays alive while the row runs:
 *
 *   pn_run *volatile held = NULL;   (what the fault handling reads)
 *   if (sigsetjmp(*pn_fault_arm(), 1) != 0) {
 *           (a fault: the guard is disarmed; free what is held)
 *           return PN_ERROR;
 *   }
 *   ... prepare, step ...
 *   pn_fault_disarm();
 *
 * A SIGILL while no guard is armed (outside a row) ends the process as it
 * would without the handler.  One thread arms at a time: pn-time's rows
 * run one after another.
 *
 * For the tests, PN_TIME_SIGILL_ROW=N makes pn_fault_inject raise SIGILL in
 * the N-th row of the input (from 1), as such a kernel would.
 */
#ifndef PN_FAULT_H
#define PN_FAULT_H

#include <setjmp.h>

/* Install the SIGILL handler (once) and arm the guard; returns the jump
 * buffer for sigsetjmp. */
sigjmp_buf *pn_fault_arm(void);

/* Disarm: a SIGILL from now on ends the process. */
void pn_fault_disarm(void);

/* What a caught fault means, for the row's message. */
const char *pn_fault_message(void);

/* Raise SIGILL when row (from 1) is PN_TIME_SIGILL_ROW's. */
void pn_fault_inject(long row);

#endif
