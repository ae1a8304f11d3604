#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "partial.h"
#include "tsv.h"

struct pn_partial {
	char *path, *part, *settings;
	FILE *f;
	long rows;            /* rows written by this run */
	double synced;        /* when the file was last synced */
	int resumed, cut, empty;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *concat(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	char *s = pn_xmalloc(na + nb + 1);
	memcpy(s, a, na);
	memcpy(s + na, b, nb + 1);
	return s;
}

static pn_partial *partial_new(const char *path)
{
	pn_partial *p = pn_xcalloc(1, sizeof *p);
	p->path = pn_output_target(path);   /* a link: its target */
	p->part = concat(p->path, ".part");
	p->settings = concat(p->part, ".settings");
	p->synced = now_s();
	return p;
}

static void write_settings(const pn_partial *p, const char *settings)
{
	int fd = open(p->settings, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	/* the first file made beside FILE: a missing directory or one
	 * not writable is FILE's, and named so */
	if (fd < 0 && (errno == ENOENT || errno == EACCES ||
		       errno == ENOTDIR))
		pn_die(PN_EXIT_DATA, "%s: %s", p->path, strerror(errno));
	if (fd < 0)
		pn_die(PN_EXIT_DATA, "%s: %s", p->settings, strerror(errno));
	size_t n = strlen(settings);
	if (write(fd, settings, n) != (ssize_t)n || write(fd, "\n", 1) != 1 ||
	    fsync(fd) != 0) {
		int e = errno;
		close(fd);
		unlink(p->settings);
		pn_die(PN_EXIT_DATA, "write error: %s: %s", p->settings,
		       strerror(e ? e : EIO));
	}
	close(fd);
}

pn_partial *pn_partial_create(const char *path, const char *settings)
{
	pn_partial *p = partial_new(path);
	struct stat st;
	if (lstat(p->part, &st) == 0)
		pn_die(PN_EXIT_DATA, "%s: the rows of a run that did not "
		       "finish: continue it with --resume %s, or remove it",
		       p->part, path);
	/* the settings first: a partial file never lacks them */
	write_settings(p, settings);
	pn_cleanup_push(p->settings);
	int fd = open(p->part, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0)
		pn_die(PN_EXIT_DATA, "%s: %s", p->part, strerror(errno));
	pn_cleanup_push(p->part);
	p->f = fdopen(fd, "w");
	if (!p->f)
		pn_die(PN_EXIT_DATA, "%s: %s", p->part, strerror(errno));
	return p;
}

/* The first line of path, without its newline; NULL when unreadable. */
static char *first_line(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	fclose(f);
	if (n < 0) {
		free(line);
		return pn_xstrdup("");
	}
	if (n > 0 && line[n - 1] == '\n')
		line[n - 1] = 0;
	return line;
}

/* Cut the file after its last newline; returns the bytes cut. */
static long drop_cut_line(const pn_partial *p, int *empty)
{
	int fd = open(p->part, O_RDWR);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		pn_die(PN_EXIT_DATA, "%s: %s", p->part, strerror(errno));
	off_t end = st.st_size;
	char buf[4096];
	while (end > 0) {
		off_t from = end > (off_t)sizeof buf ? end - (off_t)sizeof buf : 0;
		ssize_t n = pread(fd, buf, (size_t)(end - from), from);
		if (n != end - from)
			pn_die(PN_EXIT_DATA, "%s: %s", p->part,
			       n < 0 ? strerror(errno) : "short read");
		while (n > 0 && buf[n - 1] != '\n')
			n--;
		if (n > 0) {
			end = from + n;
			break;
		}
		end = from;
	}
	if (end < st.st_size && ftruncate(fd, end) != 0)
		pn_die(PN_EXIT_DATA, "%s: %s", p->part, strerror(errno));
	close(fd);
	*empty = end == 0;
	return (long)(st.st_size - end);
}

pn_partial *pn_partial_resume(const char *path, const char *settings)
{
	pn_partial *p = partial_new(path);
	struct stat st;
	if (stat(p->part, &st) != 0) {
		if (stat(path, &st) == 0)
			pn_die(PN_EXIT_DATA, "%s: complete: there is nothing to "
			       "resume (no %s)", path, p->part);
		pn_die(PN_EXIT_DATA, "%s: %s", p->part, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		pn_die(PN_EXIT_DATA, "%s: not a regular file", p->part);
	char *was = first_line(p->settings);
	if (!was)
		pn_die(PN_EXIT_DATA, "%s: %s (the settings of %s)", p->settings,
		       strerror(errno), p->part);
	if (strcmp(was, settings) != 0)
		pn_die(PN_EXIT_DATA, "%s: made with other settings: '%s', not "
		       "'%s'; resume with the same options", p->part, was,
		       settings);
	free(was);
	p->resumed = 1;
	p->cut = drop_cut_line(p, &p->empty) > 0;
	return p;
}

const char *pn_partial_path(const pn_partial *p)
{
	return p->part;
}

int pn_partial_cut(const pn_partial *p)
{
	return p->cut;
}

int pn_partial_empty(const pn_partial *p)
{
	return p->empty;
}

FILE *pn_partial_file(pn_partial *p)
{
	return p->f;
}

FILE *pn_partial_append(pn_partial *p)
{
	p->f = fopen(p->part, "a");
	if (!p->f)
		pn_die(PN_EXIT_DATA, "%s: %s", p->part, strerror(errno));
	return p->f;
}

static void flush(const pn_partial *p, int sync)
{
	if (fflush(p->f) != 0 || ferror(p->f) ||
	    (sync && fdatasync(fileno(p->f)) != 0))
		pn_die(PN_EXIT_DATA, "write error: %s: %s", p->part,
		       strerror(errno ? errno : EIO));
}

void pn_partial_row(pn_partial *p)
{
	double t = now_s();
	int sync = t - p->synced >= PN_PARTIAL_SYNC_S;
	flush(p, sync);
	if (sync)
		p->synced = t;
	if (p->rows++ == 0 && !p->resumed) {
		/* from now on a death keeps the rows */
		pn_cleanup_pop(p->part);
		pn_cleanup_pop(p->settings);
	}
}

void pn_partial_finish(pn_partial *p)
{
	flush(p, 1);
	if (fclose(p->f) != 0)
		pn_die(PN_EXIT_DATA, "write error: %s: %s", p->part,
		       strerror(errno));
	if (rename(p->part, p->path) != 0)
		pn_die(PN_EXIT_DATA, "%s: %s", p->path, strerror(errno));
	unlink(p->settings);
	free(p->path);
	free(p->part);
	free(p->settings);
	free(p);
}
