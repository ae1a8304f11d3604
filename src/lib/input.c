/* input.c - read(2) a file or standard input, inflating gzip; see input.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "err.h"
#include "input.h"

#define CHUNK (256 * 1024)

struct pn_input {
	char *name;             /* name used in messages */
	int fd;
	int eof;                /* no more raw input */
	int gz;                 /* input is gzip */
	int zend;               /* inflate reached end of a member */
	z_stream zs;
	unsigned char *raw;     /* CHUNK bytes: compressed input, or the plain
	                           bytes read while sniffing */
	size_t rpos, rend;      /* plain: [rpos, rend) of raw not handed out */
	int started;            /* the first decoded bytes were looked at */
	char head[3];           /* the first decoded bytes, not a BOM */
	size_t hpos, hlen;      /* [hpos, hlen) of head not handed out */
};

static ssize_t read_full(int fd, void *p, size_t n)
{
	ssize_t r;
	do
		r = read(fd, p, n);
	while (r < 0 && errno == EINTR);
	return r;
}

/* read(2) into p; 0 and eof set at end of input. */
static size_t read_raw(pn_input *in, void *p, size_t n)
{
	ssize_t r = read_full(in->fd, p, n);
	if (r < 0)
		pn_die_at(PN_EXIT_DATA, in->name, 0, "read error: %s",
			  strerror(errno));
	if (r == 0)
		in->eof = 1;
	return (size_t)r;
}

pn_input *pn_input_open(const char *path)
{
	int fd = 0;
	if (!path || strcmp(path, "-") == 0) {
		path = "-";
	} else {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			pn_die(PN_EXIT_DATA, "%s: %s", path, strerror(errno));
	}
	pn_input *in = pn_xcalloc(1, sizeof *in);
	in->name = pn_xstrdup(path);
	in->fd = fd;
	in->raw = pn_xmalloc(CHUNK);

	/* Sniff the gzip magic from the first bytes. */
	while (in->rend < 2 && !in->eof)
		in->rend += read_raw(in, in->raw + in->rend, CHUNK - in->rend);
	if (in->rend >= 2 && in->raw[0] == 0x1f && in->raw[1] == 0x8b) {
		in->gz = 1;
		if (inflateInit2(&in->zs, 15 + 32) != Z_OK)
			pn_die(PN_EXIT_DATA, "out of memory");
		in->zs.next_in = in->raw;
		in->zs.avail_in = (uInt)in->rend;
		in->rend = 0;
	}
	return in;
}

void pn_input_close(pn_input *in)
{
	if (!in)
		return;
	if (in->gz)
		inflateEnd(&in->zs);
	if (in->fd > 0)
		close(in->fd);
	free(in->raw);
	free(in->name);
	free(in);
}

/* Up to n bytes of from[*pos, end) into buf. */
static size_t take(char *buf, size_t n, const char *from, size_t *pos,
		   size_t end)
{
	size_t k = end - *pos < n ? end - *pos : n;
	memcpy(buf, from + *pos, k);
	*pos += k;
	return k;
}

static size_t read_plain(pn_input *in, char *buf, size_t n)
{
	if (in->rpos < in->rend)        /* bytes read while sniffing */
		return take(buf, n, (char *)in->raw, &in->rpos, in->rend);
	if (in->eof)
		return 0;
	return read_raw(in, buf, n);
}

static size_t read_gz(pn_input *in, char *buf, size_t n)
{
	z_stream *z = &in->zs;
	size_t got = 0;
	while (got == 0) {
		if (z->avail_in == 0) {
			if (in->eof)
				break;
			size_t r = read_raw(in, in->raw, CHUNK);
			if (r == 0)
				break;
			z->next_in = in->raw;
			z->avail_in = (uInt)r;
		}
		if (in->zend) {
			/* another gzip member follows (as after cat a.gz b.gz) */
			if (inflateReset(z) != Z_OK)
				PN_BUG("inflateReset");
			in->zend = 0;
		}
		z->next_out = (unsigned char *)buf;
		z->avail_out = (uInt)n;
		int rc = inflate(z, Z_NO_FLUSH);
		got = n - z->avail_out;
		if (rc == Z_STREAM_END)
			in->zend = 1;
		else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
			pn_die_at(PN_EXIT_DATA, in->name, 0,
				  "corrupt gzip input: %s",
				  z->msg ? z->msg : "bad data");
		else if (rc == Z_MEM_ERROR)
			pn_die(PN_EXIT_DATA, "out of memory");
		else if (rc != Z_OK && rc != Z_BUF_ERROR)
			pn_die_at(PN_EXIT_DATA, in->name, 0,
				  "gzip error %d", rc);
	}
	if (got == 0 && in->eof && !in->zend)
		pn_die_at(PN_EXIT_DATA, in->name, 0, "truncated gzip input");
	return got;
}

static size_t decoded(pn_input *in, char *buf, size_t n)
{
	return in->gz ? read_gz(in, buf, n) : read_plain(in, buf, n);
}

/* Drop a UTF-8 byte order mark before the first decoded byte (spreadsheets
 * and Windows editors write one), so that every reader sees the first
 * column's name as it is. */
static void drop_bom(pn_input *in)
{
	size_t k;
	in->started = 1;
	while (in->hlen < 3 &&
	       (k = decoded(in, in->head + in->hlen, 3 - in->hlen)) > 0)
		in->hlen += k;
	if (in->hlen == 3 && memcmp(in->head, "\xef\xbb\xbf", 3) == 0)
		in->hlen = 0;
}

size_t pn_input_read(pn_input *in, char *buf, size_t n)
{
	if (!in->started)
		drop_bom(in);
	if (in->hpos < in->hlen)
		return take(buf, n, in->head, &in->hpos, in->hlen);
	return decoded(in, buf, n);
}

size_t pn_input_left(const pn_input *in)
{
	struct stat st;
	if (in->gz || fstat(in->fd, &st) != 0 || !S_ISREG(st.st_mode))
		return 0;
	off_t at = lseek(in->fd, 0, SEEK_CUR);
	if (at < 0 || st.st_size < at)
		return 0;
	return (size_t)(st.st_size - at) + (in->rend - in->rpos) +
	       (in->hlen - in->hpos);
}
