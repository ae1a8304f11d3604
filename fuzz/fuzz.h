/* fuzz.h - what every pn fuzz harness shares (see fuzz/README).
 *
 * pn's readers end the process on bad input: pn_die() calls exit(1).  The
 * harnesses are linked with -Wl,--wrap=exit, so that an exit with pn's
 * codes 1 to 3 during pn_fuzz_run() jumps back into it instead.  It then
 * releases what the dead reader held: the files it opened (open, fopen and
 * fdopen are wrapped) and every heap block the harness's thread allocated
 * during the run and did not free (the sanitizer's malloc hooks keep the
 * list).  So a dying input leaks nothing, and LeakSanitizer still checks
 * every input that returns normally.  Calls into libxgboost run untracked
 * (its thread-local buffers outlive a run); boosters left by a dead reader
 * are freed with XGBoosterFree.
 */
#ifndef PN_FUZZ_H
#define PN_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The body of one run: path names a file that holds data[0..n). */
typedef void pn_fuzz_fn(const char *path, const uint8_t *data, size_t n);

/* Run fn on data; 1 when pn died (the reader rejected the input), else 0. */
int pn_fuzz_run(pn_fuzz_fn *fn, const uint8_t *data, size_t n);

/* Set up once, from LLVMFuzzerInitialize: the malloc hooks, the file,
 * pn_prog, and standard output on /dev/null. */
void pn_fuzz_init(const char *prog);

/* A stream open on /dev/null, for output a harness does not need. */
#include <stdio.h>
FILE *pn_fuzz_null(void);

/* pn_fuzz_run on data as given, or gzipped in one member or in two cut in
 * the middle: chosen by the sum of its bytes, so that one input always
 * takes one path. */
int pn_fuzz_run_gz(pn_fuzz_fn *fn, const uint8_t *data, size_t n);

/* libFuzzer's entry points: pn_fuzz_init(prog), and (PN_FUZZ_MAIN) a run
 * that is run(body, data, n), run being pn_fuzz_run or pn_fuzz_run_gz. */
#define PN_FUZZ_INIT(prog) \
	int LLVMFuzzerInitialize(int *argc, char ***argv) \
	{ (void)argc; (void)argv; pn_fuzz_init(prog); return 0; }
#define PN_FUZZ_MAIN(prog, run, body) \
	PN_FUZZ_INIT(prog) \
	int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) \
	{ run(body, d, n); return 0; }

/* ---- between common.c and xgbwrap.c ---------------------------------- */
extern __thread int pn_fuzz_tracking;   /* heap blocks are being listed */
extern int pn_fuzz_in_run;
void pn_fuzz_res_add(void **set, void *p);     /* set: 64 slots */
void pn_fuzz_res_del(void **set, void *p);

#endif
