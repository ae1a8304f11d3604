/* Stub of detect.h for builds without the CUDA toolkit. */
#include <stdio.h>

#include "../cuda/detect.h"

int pn_cuda_devices(pn_cuda_device *d, int max, char *why, int n)
{
	(void)d;
	(void)max;
	snprintf(why, (size_t)n, "CUDA backend not built (rebuild with the "
		 "CUDA toolkit and cuDNN installed)");
	return -1;
}

void pn_cuda_versions(char *buf, int n)
{
	snprintf(buf, (size_t)n, "CUDA backend not built");
}
