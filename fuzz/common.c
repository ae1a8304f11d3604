/* common.c - the die hook, the resource tracking and the input file that
 * every harness shares (contract in fuzz.h). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <sanitizer/allocator_interface.h>

#include "err.h"
#include "fuzz.h"

/* ---- heap blocks allocated during a run (main thread only) ------------- */

#define HCAP (1u << 20)                 /* slots, a power of two */
#define TOMB ((const void *)1)
static const void **heap;               /* open addressing, linear probing */
static uint32_t *used;                  /* slots filled this run, in order */
static size_t nused;
static int overflow;
__thread int pn_fuzz_tracking;

static size_t slot_of(const void *p)
{
	uintptr_t h = (uintptr_t)p;
	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & (HCAP - 1);
}

static void on_malloc(const volatile void *vp, size_t size)
{
	(void)size;
	if (!pn_fuzz_tracking || !vp)
		return;
	if (nused >= HCAP / 2) {
		overflow = 1;
		return;
	}
	size_t i = slot_of((const void *)vp);
	while (heap[i] && heap[i] != TOMB)
		i = (i + 1) & (HCAP - 1);
	if (!heap[i])
		used[nused++] = (uint32_t)i;
	heap[i] = (const void *)vp;
}

static void on_free(const volatile void *vp)
{
	if (!pn_fuzz_tracking || !vp)
		return;
	for (size_t i = slot_of((const void *)vp); heap[i];
	     i = (i + 1) & (HCAP - 1))
		if (heap[i] == (const void *)vp) {
			heap[i] = TOMB;
			return;
		}
}

/* Empty the table: only the slots this run filled. */
static void heap_reset(void)
{
	for (size_t k = 0; k < nused; k++)
		heap[used[k]] = NULL;
	nused = 0;
	overflow = 0;
}

/* Free every block still listed (the run died holding them). */
static void heap_release(void)
{
	for (size_t k = 0; k < nused; k++) {
		const void *p = heap[used[k]];
		if (p && p != TOMB)
			free((void *)p);
		heap[used[k]] = TOMB;
	}
}

/* ---- big buffers, kept for the next run ---------------------------------
 * The readers' line buffer (1 MB) and input chunk (256 KB) are fresh memory
 * on every run: under ASan an mmap, page faults and a new shadow mapping
 * each, two thirds of a run's time.  Blocks of BIG bytes or more from
 * pn_xmalloc go back here when freed and serve the next request of the same
 * size (-Wl,--wrap=pn_xmalloc,--wrap=pn_xrealloc,--wrap=free).  Overflows
 * of them are caught as before (they are ASan blocks of that size); a use
 * after free of one is not. */

#define BIG (64 * 1024)
#define NBIG 16
static struct {
	void *p;
	size_t n;
	int busy;
} big[NBIG];

void *__real_pn_xmalloc(size_t n);
void *__real_pn_xrealloc(void *p, size_t n);
void __real_free(void *p);

void *__wrap_pn_xmalloc(size_t n)
{
	if (n < BIG)
		return __real_pn_xmalloc(n);
	for (int i = 0; i < NBIG; i++)
		if (big[i].p && !big[i].busy && big[i].n == n) {
			big[i].busy = 1;
			return big[i].p;
		}
	for (int i = 0; i < NBIG; i++)
		if (!big[i].p) {
			int t = pn_fuzz_tracking;
			pn_fuzz_tracking = 0;
			big[i].p = __real_pn_xmalloc(n);
			pn_fuzz_tracking = t;
			big[i].n = n;
			big[i].busy = 1;
			return big[i].p;
		}
	return __real_pn_xmalloc(n);
}

void __wrap_free(void *p)
{
	if (p)
		for (int i = 0; i < NBIG; i++)
			if (big[i].p == p) {
				big[i].busy = 0;
				return;
			}
	__real_free(p);
}

void *__wrap_pn_xrealloc(void *p, size_t n)
{
	if (p)
		for (int i = 0; i < NBIG; i++)
			if (big[i].p == p) {     /* leaves the pool */
				void *q = __real_pn_xmalloc(n);
				memcpy(q, p, n < big[i].n ? n : big[i].n);
				__real_free(p);
				big[i].p = NULL;
				big[i].busy = 0;
				return q;
			}
	return __real_pn_xrealloc(p, n);
}

/* ---- files and boosters opened during a run ---------------------------- */

#define MAXRES 64
static FILE *files[MAXRES];
static void *fds[MAXRES];     /* fd + 1 */
int pn_fuzz_in_run;

void pn_fuzz_res_add(void **set, void *p)
{
	if (!pn_fuzz_in_run || !p)
		return;
	for (int i = 0; i < MAXRES; i++)
		if (!set[i]) {
			set[i] = p;
			return;
		}
	fprintf(stderr, "fuzz: more than %d open resources\n", MAXRES);
	abort();
}

void pn_fuzz_res_del(void **set, void *p)
{
	for (int i = 0; i < MAXRES; i++)
		if (set[i] == p)
			set[i] = NULL;
}

FILE *__real_fopen(const char *path, const char *mode);
FILE *__real_fdopen(int fd, const char *mode);
int __real_fclose(FILE *f);
int __real_open(const char *path, int flags, ...);
int __real_close(int fd);
_Noreturn void __real_exit(int code);

FILE *__wrap_fopen(const char *path, const char *mode)
{
	FILE *f = __real_fopen(path, mode);
	pn_fuzz_res_add((void **)files, f);
	return f;
}

FILE *__wrap_fdopen(int fd, const char *mode)
{
	FILE *f = __real_fdopen(fd, mode);
	if (f)
		pn_fuzz_res_del((void **)fds, (void *)(intptr_t)(fd + 1));
	pn_fuzz_res_add((void **)files, f);
	return f;
}

int __wrap_fclose(FILE *f)
{
	pn_fuzz_res_del((void **)files, f);
	return __real_fclose(f);
}

int __wrap_open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int mode = flags & (O_CREAT | O_TMPFILE) ? va_arg(ap, int) : 0;
	va_end(ap);
	int fd = __real_open(path, flags, mode);
	if (fd >= 0)     /* stored as fd + 1: 0 marks a free slot */
		pn_fuzz_res_add((void **)fds, (void *)(intptr_t)(fd + 1));
	return fd;
}

int __wrap_close(int fd)
{
	pn_fuzz_res_del((void **)fds, (void *)(intptr_t)(fd + 1));
	return __real_close(fd);
}

/* Frees the boosters a dead reader left (xgbwrap.c, where linked). */
void pn_fuzz_xgb_release(void) __attribute__((weak));

static void res_release(void)
{
	for (int i = 0; i < MAXRES; i++) {
		if (files[i])
			__real_fclose(files[i]);
		if (fds[i])
			__real_close((int)(intptr_t)fds[i] - 1);
		files[i] = NULL;
		fds[i] = NULL;
	}
	if (pn_fuzz_xgb_release)
		pn_fuzz_xgb_release();
	for (int i = 0; i < NBIG; i++)
		big[i].busy = 0;
}

/* ---- the run ----------------------------------------------------------- */

static jmp_buf died;
static FILE *null;
static int memfd = -1;
static char mpath[64];

void __wrap_exit(int code)
{
	if (pn_fuzz_in_run && code >= PN_EXIT_DATA && code <= PN_EXIT_BACKEND)
		longjmp(died, 1);
	__real_exit(code);
}

void pn_fuzz_init(const char *prog)
{
	pn_init(prog);
	/* pn's messages: a buffer, not four writes per rejected input */
	static char ebuf[1 << 16];
	setvbuf(stderr, ebuf, _IOFBF, sizeof ebuf);
	heap = calloc(HCAP, sizeof *heap);
	used = malloc(HCAP / 2 * sizeof *used);
	memfd = memfd_create("pn-fuzz", 0);
	null = __real_fopen("/dev/null", "w");
	if (!heap || !used || memfd < 0 || !null ||
	    !__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free)) {
		perror("pn_fuzz_init");
		abort();
	}
	snprintf(mpath, sizeof mpath, "/proc/self/fd/%d", memfd);
	if (!freopen("/dev/null", "w", stdout))
		abort();
}

FILE *pn_fuzz_null(void)
{
	return null;
}

int pn_fuzz_run(pn_fuzz_fn *fn, const uint8_t *data, size_t n)
{
	if (ftruncate(memfd, 0) != 0 ||
	    (n && pwrite(memfd, data, n, 0) != (ssize_t)n)) {
		perror("pn_fuzz_run");
		abort();
	}
	heap_reset();
	pn_fuzz_in_run = 1;
	pn_fuzz_tracking = 1;
	volatile int dead = setjmp(died);
	if (!dead)
		fn(mpath, data, n);
	pn_fuzz_tracking = 0;
	pn_fuzz_in_run = 0;
	if (dead) {
		pn_fuzz_tracking = 1;   /* fclose's free leaves the list */
		res_release();
		pn_fuzz_tracking = 0;
		if (!overflow)
			heap_release();
	}
	return dead;
}

static uint8_t *gzip(const uint8_t *data, size_t n, size_t split,
		     size_t *outlen)
{
	size_t cap = 2 * compressBound(n) + 64, len = 0;
	uint8_t *out = malloc(cap);
	size_t part[2] = {split < n ? split : n, split < n ? n - split : 0};
	for (int k = 0; k < 2 && (k == 0 || part[1]); k++) {
		z_stream z;
		memset(&z, 0, sizeof z);
		if (deflateInit2(&z, 1, Z_DEFLATED, 31, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			abort();
		z.next_in = (Bytef *)data + (k ? part[0] : 0);
		z.avail_in = (uInt)part[k];
		z.next_out = out + len;
		z.avail_out = (uInt)(cap - len);
		if (deflate(&z, Z_FINISH) != Z_STREAM_END)
			abort();
		len += z.total_out;
		deflateEnd(&z);
	}
	*outlen = len;
	return out;
}

int pn_fuzz_run_gz(pn_fuzz_fn *fn, const uint8_t *data, size_t n)
{
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	if (sum % 4 < 2)
		return pn_fuzz_run(fn, data, n);
	size_t len;
	uint8_t *gz = gzip(data, n, sum % 4 == 3 ? n / 2 : n, &len);
	int dead = pn_fuzz_run(fn, gz, len);
	free(gz);
	return dead;
}
