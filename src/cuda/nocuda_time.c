/* Stub of the CUDA timing backend for builds without the CUDA toolkit. */
#include "../time/backend.h"

const pn_backend *pn_cuda_backend(void)
{
	return NULL;
}
