#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "err.h"

#ifndef PN_VERSION
#define PN_VERSION "0.1.0"
#endif

const char *pn_prog = "pn";

#define MAX_CLEANUP 16
static char *cleanup[MAX_CLEANUP];

/* OpenBLAS's pthread build starts its worker threads when it is loaded,
 * and they spin (sched_yield) for a while waiting for work: about 0.12 s of
 * another core's time for every run of a tool, BLAS used or not.  Stopped
 * here; OpenBLAS starts them again on its first threaded call.  Weak, so
 * that tools without OpenBLAS, or a BLAS without the function, link. */
extern void blas_thread_shutdown_(void) __attribute__((weak));

void pn_init(const char *prog)
{
	pn_prog = prog;
	if (blas_thread_shutdown_)
		blas_thread_shutdown_();
}

void pn_cleanup_push(const char *path)
{
	for (int i = 0; i < MAX_CLEANUP; i++)
		if (!cleanup[i]) {
			cleanup[i] = pn_xstrdup(path);
			return;
		}
	PN_BUG("too many temporary files");
}

void pn_cleanup_pop(const char *path)
{
	for (int i = 0; i < MAX_CLEANUP; i++)
		if (cleanup[i] && strcmp(cleanup[i], path) == 0) {
			free(cleanup[i]);
			cleanup[i] = NULL;
			return;
		}
}

static void run_cleanup(void)
{
	for (int i = 0; i < MAX_CLEANUP; i++)
		if (cleanup[i]) {
			unlink(cleanup[i]);
			free(cleanup[i]);
			cleanup[i] = NULL;
		}
}

static void vmsg(const char *file, long line, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s: ", pn_prog);
	if (file) {
		if (line > 0)
			fprintf(stderr, "%s:%ld: ", file, line);
		else
			fprintf(stderr, "%s: ", file);
	}
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void pn_die(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(NULL, 0, fmt, ap);
	va_end(ap);
	run_cleanup();
	exit(code);
}

void pn_die_at(int code, const char *file, long line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(file, line, fmt, ap);
	va_end(ap);
	run_cleanup();
	exit(code);
}

void pn_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vmsg(NULL, 0, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help' for more information.\n", pn_prog);
	run_cleanup();
	exit(PN_EXIT_USAGE);
}

void pn_try_help(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", pn_prog);
	run_cleanup();
	exit(PN_EXIT_USAGE);
}

void pn_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: warning: ", pn_prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void pn_bug(const char *file, int line, const char *msg)
{
	fprintf(stderr, "%s: BUG: %s:%d: %s\n", pn_prog, file, line, msg);
	abort();
}

void *pn_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		pn_die(PN_EXIT_DATA, "out of memory");
	return p;
}

void *pn_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		pn_die(PN_EXIT_DATA, "out of memory");
	return p;
}

void *pn_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		pn_die(PN_EXIT_DATA, "out of memory");
	return p;
}

/* From this size up, a bulk buffer asks for huge pages. */
#define BULK_BYTES ((size_t)4 << 20)

/* Advise the 4 KiB pages that [p, p + n) touches; the kernel backs the
 * 2 MiB aligned stretches of them with huge pages as they are first
 * touched.  Outward, not inward: a large block is a mapping of its own
 * (glibc's mmap chunk, its header in the first page), and advising part
 * of it would split it in two, where realloc's mremap needs one (it would
 * copy the block instead).  Failure (no THP in this kernel) changes
 * nothing but the fault count. */
static void *advise_bulk(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	if (n >= BULK_BYTES) {
		uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
		uintptr_t e = ((uintptr_t)p + n + 4095) & ~(uintptr_t)4095;
		if (e > a)
			(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
	}
#else
	(void)n;
#endif
	return p;
}

void *pn_xmalloc_bulk(size_t n)
{
	return advise_bulk(pn_xmalloc(n), n);
}

void *pn_xrealloc_bulk(void *p, size_t n)
{
	return advise_bulk(pn_xrealloc(p, n), n);
}

char *pn_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(pn_xmalloc(n), s, n);
}

void pn_version(void)
{
	printf("%s %s\n", pn_prog, PN_VERSION);
	if (fflush(stdout) || ferror(stdout))
		exit(PN_EXIT_DATA);
	exit(PN_EXIT_OK);
}
