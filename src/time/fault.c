#include "fault.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static sigjmp_buf env;
static volatile sig_atomic_t armed;
static int installed;

static void on_sigill(int sig)
{
	if (!armed) {
		/* not in a row: die of it, as without a handler (the
		 * instruction runs again under the default action) */
		signal(sig, SIG_DFL);
		return;
	}
	armed = 0;
	siglongjmp(env, 1);
}

sigjmp_buf *pn_fault_arm(void)
{
	if (!installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_sigill;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGILL, &sa, NULL);
		installed = 1;
	}
	armed = 1;
	return &env;
}

void pn_fault_disarm(void)
{
	armed = 0;
}

const char *pn_fault_message(void)
{
	return "illegal instruction (SIGILL) in the library's code for this "
	       "row: a kernel this CPU refuses, a library bug for this shape "
	       "(oneDNN 2.6's AMX bf16 matmuls raise it for some; "
	       "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 keeps oneDNN off AMX)";
}

void pn_fault_inject(long row)
{
	const char *s = getenv("PN_TIME_SIGILL_ROW");
	if (s && *s && strtol(s, NULL, 10) == row)
		raise(SIGILL);
}
