/* partial.h - pn-time's output file that outlives a kill.
 *
 * A collection runs for hours; a killed run (SIGKILL included) or a
 * machine that goes away must keep the rows it measured.  So pn-time -o
 * FILE writes to two visible files beside FILE:
 *
 *   FILE.part           the output so far: the header, then every row as
 *                       it is measured (flushed at once; synced to the
 *                       disk at least every PN_PARTIAL_SYNC_S seconds); a
 *                       plain pn TSV that every pn tool reads
 *   FILE.part.settings  one line: the settings of the run, which a resumed
 *                       run must repeat
 *
 * and only a run that reads all its input renames FILE.part to FILE (and
 * removes FILE.part.settings): FILE never exists half-written.  A kill
 * leaves FILE.part, whose last line may be cut short, and the settings;
 * pn-time --resume FILE reads them back (pn_partial_resume), drops a cut
 * line and appends the rows still to measure.
 *
 * A run that dies before it has written its first row removes both files,
 * as pn_output_open's temporary files are removed.  FILE.part of another
 * run is never overwritten: a new run refuses to start beside one.
 */
#ifndef PN_PARTIAL_H
#define PN_PARTIAL_H

#include <stdio.h>

#define PN_PARTIAL_SYNC_S 10.0

typedef struct pn_partial pn_partial;

/* Start a new partial output for path with the one-line settings.  Dies
 * (exit 1) when path.part exists ("...: a killed run's rows: continue them
 * with --resume, or remove ...") or cannot be created. */
pn_partial *pn_partial_create(const char *path, const char *settings);

/* Take up the partial output of path for more rows.  Dies (exit 1) when
 * path.part or its settings are missing (and says when path itself is
 * complete), or when the settings differ from settings ("made with other
 * settings: '...'; resume with the same options").  Drops a last line cut
 * short.  Then the caller reads the rows already there from
 * pn_partial_path() and calls pn_partial_append(). */
pn_partial *pn_partial_resume(const char *path, const char *settings);

/* The partial file's name: path.part. */
const char *pn_partial_path(const pn_partial *p);

/* After pn_partial_resume: 1 when a last line cut short was dropped; 1
 * when the file is empty (killed before its header: write it again). */
int pn_partial_cut(const pn_partial *p);
int pn_partial_empty(const pn_partial *p);

/* The stream to write rows to (and the header, after pn_partial_create). */
FILE *pn_partial_file(pn_partial *p);

/* After the caller has read the rows already there: the stream that appends
 * to them. */
FILE *pn_partial_append(pn_partial *p);

/* After each row: flush it to the file, sync at most every
 * PN_PARTIAL_SYNC_S seconds; dies "write error: ..." on failure. */
void pn_partial_row(pn_partial *p);

/* The run is complete: sync, rename path.part to path, remove the
 * settings, free p. */
void pn_partial_finish(pn_partial *p);

#endif
