#include <cstdio>
#include <cuda_runtime.h>

#include "detect.h"

extern "C" int pn_cuda_devices(pn_cuda_device *d, int max, char *why, int n)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess) {
		snprintf(why, (size_t)n, "no CUDA device: %s",
			 cudaGetErrorString(e));
		return -1;
	}
	for (int i = 0; i < count && i < max; i++) {
		cudaDeviceProp p;
		e = cudaGetDeviceProperties(&p, i);
		if (e != cudaSuccess) {
			snprintf(why, (size_t)n, "device %d: %s", i,
				 cudaGetErrorString(e));
			return -1;
		}
		snprintf(d[i].name, sizeof d[i].name, "%s", p.name);
		d[i].cc_major = p.major;
		d[i].cc_minor = p.minor;
		d[i].sms = p.multiProcessorCount;
		d[i].mem_gb = (double)p.totalGlobalMem / 1e9;
		d[i].l2_mb = (double)p.l2CacheSize / (1024.0 * 1024.0);
	}
	return count < max ? count : max;
}

extern "C" void pn_cuda_versions(char *buf, int n)
{
	int rt = 0, drv = 0;
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	snprintf(buf, (size_t)n, "CUDA runtime %d.%d, driver %d.%d",
		 rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10);
}
