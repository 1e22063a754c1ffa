/*
 * nvml.h - NVIDIA Management Library, loaded at run time.
 *
 * The daemon's network process reads GPU inventory and live memory figures
 * through NVML, which (unlike the CUDA driver API) creates no context and
 * is cheap to call often. libnvidia-ml.so.1 is dlopen()ed: nothing here
 * includes nvml.h, and on a machine without the NVIDIA driver
 * gl_nvml_open() fails with a message instead of the program failing to
 * start.
 *
 * Device indexes are NVML's (PCI bus order), which is also CUDA's order
 * when CUDA_DEVICE_ORDER=PCI_BUS_ID; match the two by UUID, never by index.
 *
 * Thread safety: NVML itself is thread-safe and a gl_nvml holds no mutable
 * state after gl_nvml_open(), so one handle may be used from any thread.
 */
#ifndef GL_GPU_NVML_H
#define GL_GPU_NVML_H

#include <stddef.h>
#include <stdint.h>

typedef struct gl_nvml gl_nvml;

typedef struct gl_nvml_device {
  char uuid[96]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", NUL-terminated */
  char name[96]; /* "NVIDIA H100 80GB HBM3", NUL-terminated */
  unsigned cc_major;
  unsigned cc_minor;
  uint64_t total_bytes;
  uint64_t free_bytes;
  uint64_t used_bytes;
} gl_nvml_device;

/* Loads libnvidia-ml.so.1 and calls nvmlInit_v2. On success *out receives a
 * handle to release with gl_nvml_close(). On failure *out is NULL, err
 * receives the reason (e.g. "NVML not available: libnvidia-ml.so.1: cannot
 * open shared object file: No such file or directory", or "nvmlInit_v2
 * failed: Driver Not Loaded") and -1 is returned. */
int gl_nvml_open(gl_nvml **out, char *err, size_t errlen);

/* Calls nvmlShutdown and frees the handle. NULL is ignored. */
void gl_nvml_close(gl_nvml *nvml);

/* Number of devices NVML sees (0 on error). */
unsigned gl_nvml_count(gl_nvml *nvml);

/* Static facts and current memory of device index into *out (zeroed on
 * failure). Returns 0 or -1. */
int gl_nvml_device_info(gl_nvml *nvml, unsigned index, gl_nvml_device *out);

/* Current memory figures of device index, in bytes. Any output may be NULL.
 * Returns 0 or -1. */
int gl_nvml_memory(gl_nvml *nvml, unsigned index, uint64_t *total, uint64_t *free_bytes,
                   uint64_t *used);

/* The same for the device with that UUID ("GPU-..."), which stays right when
 * device indexes shift. Returns 0 or -1 (unknown UUID, NVML error). */
int gl_nvml_memory_by_uuid(gl_nvml *nvml, const char *uuid, uint64_t *total,
                           uint64_t *free_bytes, uint64_t *used);

/* A MIG instance (a MIG device, in NVML's words) of a GPU in MIG mode. */
typedef struct gl_nvml_mig {
  char uuid[96]; /* "MIG-xxxxxxxx-...", what CUDA_VISIBLE_DEVICES takes */
  uint64_t memory_bytes;
} gl_nvml_mig;

/* The MIG instances of device index, at most max, into out: their number,
 * 0 when the GPU is not in MIG mode (or NVML cannot tell), -1 on an NVML
 * error. Reads only (nvmlDeviceGetMigMode, nvmlDeviceGetMaxMigDeviceCount,
 * nvmlDeviceGetMigDeviceHandleByIndex); never changes a mode. */
int gl_nvml_mig_list(gl_nvml *nvml, unsigned index, gl_nvml_mig *out, unsigned max);

/* Whether process pid still holds memory on the device with that UUID, as
 * NVML lists its compute processes (nvmlDeviceGetComputeRunningProcesses
 * _v2, or the unversioned one): 0 and *bytes (may be NULL) when it does, 1
 * when it does not, -1 when NVML cannot tell (unknown UUID, an error,
 * a library without the call, more than 256 processes). */
int gl_nvml_process_memory(gl_nvml *nvml, const char *uuid, unsigned pid, uint64_t *bytes);

/* The device's activity now (nvmlDeviceGetUtilizationRates: percent of
 * the last sample period the GPU ran a kernel and its memory was read or
 * written; nvmlDeviceGetTemperature: the GPU's temperature in degrees
 * Celsius). Returns a mask of what it filled (1: the rates, 2: the
 * temperature; 0 when NVML gave neither), or -1 for an unknown UUID. */
int gl_nvml_activity(gl_nvml *nvml, const char *uuid, unsigned *gpu_pct, unsigned *mem_pct,
                     unsigned *celsius);

/* The driver version ("580.65.06") into buf. Returns 0, or -1 with buf set
 * to "". */
int gl_nvml_driver_version(gl_nvml *nvml, char *buf, size_t buflen);

#endif /* GL_GPU_NVML_H */
