/* onnx.c - what pn-onnx needs with or without protobuf-c: reading the
 * file, and the message about ops not mapped (onnx.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "onnx.h"

int pn_onnx_read(pn_arch *a, const char *path, pn_onnx_unmapped *u,
		 pn_onnx_err *e)
{
	memset(u, 0, sizeof *u);
	int in = strcmp(path, "-") == 0;
	FILE *f = in ? stdin : fopen(path, "rb");
	if (!f) {
		snprintf(e->msg, sizeof e->msg, "cannot open: %s",
			 strerror(errno));
		return -1;
	}
	struct stat st;
	if (!in && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size > PN_ONNX_MAX_BYTES) {
		fclose(f);
		snprintf(e->msg, sizeof e->msg, "the file is larger than "
			 "2 GiB, the most protobuf reads");
		return -1;
	}
	size_t n = 0, cap = 1 << 16;
	unsigned char *d = pn_xmalloc(cap);
	for (;;) {
		if (n == cap) {
			if (cap > (size_t)PN_ONNX_MAX_BYTES)
				break;
			cap *= 2;
			d = pn_xrealloc(d, cap);
		}
		size_t k = fread(d + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	int err = ferror(f), rc = -1;
	if (!in)
		fclose(f);
	if (err)
		snprintf(e->msg, sizeof e->msg, "cannot read: %s",
			 strerror(errno));
	else if (n > (size_t)PN_ONNX_MAX_BYTES)
		snprintf(e->msg, sizeof e->msg, "the file is larger than "
			 "2 GiB, the most protobuf reads");
	else
		rc = pn_onnx_build(a, d, n, u, e);
	free(d);
	return rc;
}

static int by_count(const void *p, const void *q)
{
	const struct pn_onnx_op *a = p, *b = q;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->name, b->name);
}

char *pn_onnx_unmapped_msg(const pn_onnx_unmapped *u, char *buf, size_t n)
{
	struct pn_onnx_op *o = pn_xmalloc((size_t)(u->n + 1) * sizeof *o);
	memcpy(o, u->op, (size_t)u->n * sizeof *o);
	qsort(o, (size_t)u->n, sizeof *o, by_count);
	size_t k = (size_t)snprintf(buf, n, "%ld node%s of %ld op type%s not "
				    "mapped:", u->nodes, u->nodes == 1 ? "" :
				    "s", u->n, u->n == 1 ? "" : "s");
	for (long i = 0; i < u->n && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s %s (%ld)",
				      i ? "," : "", o[i].name, o[i].count);
	free(o);
	return buf;
}

void pn_onnx_unmapped_free(pn_onnx_unmapped *u)
{
	free(u->op);
	u->op = NULL;
	u->n = u->nodes = 0;
}
