/* input.h - the byte input under pn's TSV and CSV readers.
 *
 * Opens a file, or standard input for "-" (or NULL), and hands out its bytes
 * in the caller's buffer.  Gzip input is detected from the first two bytes
 * (0x1f 0x8b), never from the file name, and inflated on the fly; several
 * gzip members one after another (cat a.gz b.gz) read as one stream.  A
 * UTF-8 byte order mark (EF BB BF) at the start of the decoded bytes is
 * dropped, so every reader above (TSV, CSV) accepts it.
 * Every error exits 1 with a message naming the input:
 *
 *   pn-x: runs.tsv: No such file or directory
 *   pn-x: runs.tsv: read error: Input/output error
 *   pn-x: runs.tsv.gz: truncated gzip input
 *   pn-x: runs.tsv.gz: corrupt gzip input: invalid block type
 */
#ifndef PN_INPUT_H
#define PN_INPUT_H

#include <stddef.h>

typedef struct pn_input pn_input;

/* Open path ("-" or NULL for standard input) and sniff for gzip.  Dies
 * (exit 1) when the file cannot be opened or read.  Messages name the input
 * by path as given, "-" for standard input. */
pn_input *pn_input_open(const char *path);

/* Close the input (standard input is left open) and free it.  NULL is a
 * no-op. */
void pn_input_close(pn_input *in);

/* Put up to n (> 0) decoded bytes at buf; returns how many, at least 1, or
 * 0 at the end of input (and on every call after).  Dies (exit 1) on a read
 * error, corrupt gzip data, or gzip input that ends inside a member. */
size_t pn_input_read(pn_input *in, char *buf, size_t n);

/* How many decoded bytes are still to come, where that is known without
 * reading them: a plain (not gzip) regular file's size less what was
 * handed out; 0 where it is not known (a pipe, gzip).  A hint only: a
 * file that grows or shrinks meanwhile reads as it is. */
size_t pn_input_left(const pn_input *in);

#endif
