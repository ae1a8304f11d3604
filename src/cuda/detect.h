/* detect.h - the CUDA devices of this machine (compiled with nvcc when the
 * CUDA toolkit is found; a stub otherwise).
 */
#ifndef PN_DETECT_H
#define PN_DETECT_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
	char name[256];      /* cudaDeviceProp.name, e.g. "Tesla T4" */
	int cc_major, cc_minor;
	int sms;
	double mem_gb;
	double l2_mb;
} pn_cuda_device;

/* Fill up to max devices; returns the count (>= 0), or -1 with a reason in
 * why (size n): "CUDA backend not built", "no CUDA driver", ... */
int pn_cuda_devices(pn_cuda_device *d, int max, char *why, int n);

/* Versions as text, e.g. "CUDA runtime 13.0, driver 13.0". */
void pn_cuda_versions(char *buf, int n);

#ifdef __cplusplus
}
#endif
#endif
