/* fuzz_onnx - the ONNX reader (src/onnx: protobuf-c's unpack through
 * onnx-subset.proto, the tensors and shapes of graph.c, map.c's table) as
 * pn-onnx runs it: rows, parameter count, the ops not mapped, the network;
 * with and without --seq. */
#include "fuzz.h"
#include "network.h"
#include "onnx.h"

static void body(const char *path, const uint8_t *d, size_t n)
{
	(void)path;
	pn_arch a = {.o = {.optimizer = -1, .prec = PN_FP32,
			   .phase = n % 2 ? PN_PH_FWD : PN_PH_TRAIN,
			   .seq = n % 3 ? 0 : 7}};
	pn_onnx_unmapped u;
	pn_onnx_err e;
	if (pn_onnx_build(&a, d, n, &u, &e) == 0) {
		char msg[512];
		(void)pn_arch_params(&a);
		pn_arch_write(&a, pn_fuzz_null());
		if (u.n)
			pn_onnx_unmapped_msg(&u, msg, sizeof msg);
	}
	pn_onnx_unmapped_free(&u);
	pn_arch_free(&a);
}

PN_FUZZ_MAIN("pn-fuzz-onnx", pn_fuzz_run, body)
