/* err.h - messages and exit codes shared by every pn tool.
 *
 * Messages go to stderr as "pn-x: message" or "pn-x: file:line: message":
 * program, place, then what is wrong, lower case, no final full stop.
 * Exit codes are by class and documented in every man page.
 */
#ifndef PN_ERR_H
#define PN_ERR_H

#include <stdarg.h>

enum {
	PN_EXIT_OK = 0,      /* success */
	PN_EXIT_DATA = 1,    /* bad data or runtime error */
	PN_EXIT_USAGE = 2,   /* bad command line */
	PN_EXIT_BACKEND = 3  /* requested backend not built or no device */
};

/* Name used as message prefix; set once by pn_init() from a literal. */
extern const char *pn_prog;

/* Record the program name and install the cleanup that pn_die() runs. */
void pn_init(const char *prog);

/* Print "pn-x: <fmt>" to stderr and exit with code.  Before exiting, every
 * output registered with pn_cleanup_push() is removed, so a failed run never
 * leaves a half-written file behind. */
_Noreturn void pn_die(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Same, with a place: "pn-x: file:line: <fmt>".  line <= 0 omits it. */
_Noreturn void pn_die_at(int code, const char *file, long line,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Print "pn-x: <fmt>" and "Try 'pn-x --help' for more information." and
 * exit 2. */
_Noreturn void pn_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* After getopt has printed its own message about a bad option (tools set
 * argv[0] = pn_prog so that it starts "pn-x: "): print the "Try" line and
 * exit 2. */
_Noreturn void pn_try_help(void);

/* A warning: "pn-x: warning: <fmt>"; does not exit. */
void pn_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Internal bug: "pn-x: BUG: file:line: msg" and abort(). */
#define PN_BUG(msg) pn_bug(__FILE__, __LINE__, msg)
_Noreturn void pn_bug(const char *file, int line, const char *msg);

/* Temporary files to unlink if the program dies (see pn_die).  At most 16. */
void pn_cleanup_push(const char *path);
void pn_cleanup_pop(const char *path);

/* Allocation that never returns NULL (dies with "out of memory"). */
void *pn_xmalloc(size_t n);
void *pn_xcalloc(size_t n, size_t size);
void *pn_xrealloc(void *p, size_t n);
char *pn_xstrdup(const char *s);

/* The same for a large buffer of data that a tool fills once and reads
 * (a TSV's text and cells, a design matrix): from 4 MiB up it asks the
 * kernel to back it with transparent huge pages (Linux's madvise
 * MADV_HUGEPAGE; a no-op where the kernel has none or was told never),
 * so that filling it takes one page fault per 2 MiB instead of one per 4
 * KiB.  On a virtual machine a fault can cost 10-14 us: 64 MiB filled in
 * 4 ms instead of 230.  Never for pn-time's tensors or anything timed:
 * their pages must be those a framework gets. */
void *pn_xmalloc_bulk(size_t n);
void *pn_xrealloc_bulk(void *p, size_t n);

/* Print "pn-x VERSION" to stdout and exit 0. */
_Noreturn void pn_version(void);

#endif
