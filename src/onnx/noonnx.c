/* noonnx.c - pn built without protobuf-c: no ONNX reader (onnx.h). */
#include <stdio.h>
#include <string.h>

#include "onnx.h"

const int pn_onnx_available = 0;

int pn_onnx_build(pn_arch *a, const unsigned char *data, size_t n,
		  pn_onnx_unmapped *u, pn_onnx_err *e)
{
	(void)a;
	(void)data;
	(void)n;
	memset(u, 0, sizeof *u);
	snprintf(e->msg, sizeof e->msg, "built without protobuf-c (ONNX "
		 "support unavailable)");
	return -1;
}
