/* Stub of the CUDA timing backend for builds without the CUDA toolkit, and
 * of detect.h (pn-time asks it for the GPU's properties: nocuda.c's). */
#include "../time/backend.h"
#include "nocuda.c"

const pn_backend *pn_cuda_backend(void)
{
	return NULL;
}
