/*
 * device.c - the leased GPU as NVML shows it: one device (index 0), its
 * name, UUID and compute capability from the daemon's inventory, its
 * memory the lease's VRAM (the lease's view, as cuMemGetInfo gives it
 * under the CUDA shim), no processes of its own; what the inventory does
 * not report (PCI location, utilisation) is NVML_ERROR_NOT_SUPPORTED.
 */
#include <stdio.h>
#include <string.h>

#include "nvml/nv.h"

/* Locks, checks init and the handle; unlocks and returns on failure. */
#define GL_NV_ENTER(dev)                          \
  pthread_mutex_lock(&gl_nv.mu);                  \
  do {                                            \
    nvmlReturn_t enter_st_ = gl_nv_check(dev);    \
    if (enter_st_ != NVML_SUCCESS) {              \
      pthread_mutex_unlock(&gl_nv.mu);            \
      return enter_st_;                           \
    }                                             \
  } while (0)

static nvmlReturn_t leave(nvmlReturn_t st) {
  pthread_mutex_unlock(&gl_nv.mu);
  return st;
}

GL_NV_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
  if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&gl_nv.mu);
  if (!gl_nv.refs) return leave(NVML_ERROR_UNINITIALIZED);
  *deviceCount = 1;
  return leave(NVML_SUCCESS);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) {
  return nvmlDeviceGetCount_v2(deviceCount);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  pthread_mutex_lock(&gl_nv.mu);
  if (!gl_nv.refs) return leave(NVML_ERROR_UNINITIALIZED);
  if (index != 0 || !device) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *device = &gl_nv.device;
  return leave(NVML_SUCCESS);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
  pthread_mutex_lock(&gl_nv.mu);
  if (!gl_nv.refs) return leave(NVML_ERROR_UNINITIALIZED);
  if (!uuid || !device) return leave(NVML_ERROR_INVALID_ARGUMENT);
  if (strcmp(uuid, gl_nv.gpu.uuid) != 0) return leave(NVML_ERROR_NOT_FOUND);
  *device = &gl_nv.device;
  return leave(NVML_SUCCESS);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
  GL_NV_ENTER(device);
  if (!index) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *index = 0;
  return leave(NVML_SUCCESS);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  GL_NV_ENTER(device);
  return leave(gl_nv_copy_string(name, length, gl_nv.gpu.name));
}

/* The inventory's, as NVML writes it ("GPU-xxxxxxxx-...", or the emulated
 * device's "EMU-0"). */
GL_NV_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  GL_NV_ENTER(device);
  return leave(gl_nv_copy_string(uuid, length, gl_nv.gpu.uuid));
}

/* The lease's view: its VRAM is the total; the daemon reports no use of
 * it per lease, so none is used and all of it free. Asked of the daemon
 * each time: a lease that ended reads as a lost GPU. */
static nvmlReturn_t lease_memory(unsigned long long *total, unsigned long long *used) {
  gpulease_lease l = gl_nv.lease;
  gpulease_error err;
  if (gpulease_lease_query(gl_nv.client, &l, &err) != GPULEASE_OK) {
    switch (err.status) {
    case GPULEASE_NOT_FOUND: case GPULEASE_LEASE_EXPIRED: return NVML_ERROR_GPU_IS_LOST;
    case GPULEASE_UNAUTHORIZED: return NVML_ERROR_NO_PERMISSION;
    case GPULEASE_TIMEOUT: return NVML_ERROR_TIMEOUT;
    default: return NVML_ERROR_UNKNOWN;
    }
  }
  gl_nv.lease.vram_bytes = l.vram_bytes;
  *total = l.vram_bytes;
  *used = 0;
  return NVML_SUCCESS;
}

GL_NV_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  GL_NV_ENTER(device);
  if (!memory) return leave(NVML_ERROR_INVALID_ARGUMENT);
  unsigned long long total = 0, used = 0;
  nvmlReturn_t st = lease_memory(&total, &used);
  if (st != NVML_SUCCESS) return leave(st);
  memory->total = total;
  memory->used = used;
  memory->free = total - used;
  return leave(NVML_SUCCESS);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
  GL_NV_ENTER(device);
  if (!memory) return leave(NVML_ERROR_INVALID_ARGUMENT);
  if (memory->version != nvmlMemory_v2) return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  unsigned long long total = 0, used = 0;
  nvmlReturn_t st = lease_memory(&total, &used);
  if (st != NVML_SUCCESS) return leave(st);
  memory->total = total;
  memory->reserved = 0;
  memory->used = used;
  memory->free = total - used;
  return leave(NVML_SUCCESS);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major,
                                                          int *minor);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
  GL_NV_ENTER(device);
  if (!major || !minor) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *major = (int)gl_nv.gpu.cc_major;
  *minor = (int)gl_nv.gpu.cc_minor;
  return leave(NVML_SUCCESS);
}

/* The device node's number (/dev/nvidiaN): the program sees one, 0. */
GL_NV_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
  GL_NV_ENTER(device);
  if (!minorNumber) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *minorNumber = 0;
  return leave(NVML_SUCCESS);
}

/* The daemon's inventory carries no PCI location: not supported, as NVML
 * answers for a device that cannot tell. */
static nvmlReturn_t pci_info(const char *name, atomic_bool *said, nvmlDevice_t device,
                             nvmlPciInfo_t *pci) {
  GL_NV_ENTER(device);
  if (!pci) return leave(NVML_ERROR_INVALID_ARGUMENT);
  return leave(gl_nv_unsupported(name, said, "the daemon reports no PCI bus id"));
}

GL_NV_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  static atomic_bool said;
  return pci_info("nvmlDeviceGetPciInfo_v3", &said, device, pci);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  static atomic_bool said;
  return pci_info("nvmlDeviceGetPciInfo_v2", &said, device, pci);
}

GL_NV_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) {
  static atomic_bool said;
  return pci_info("nvmlDeviceGetPciInfo", &said, device, pci);
}

/* The inventory reports no utilisation of the GPU. */
GL_NV_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                     nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
  static atomic_bool said;
  GL_NV_ENTER(device);
  if (!utilization) return leave(NVML_ERROR_INVALID_ARGUMENT);
  return leave(gl_nv_unsupported("nvmlDeviceGetUtilizationRates", &said,
                                 "the daemon reports no utilisation"));
}

/* The program's work runs in the daemon's worker, not in a process of
 * this machine: no processes, in every form. */
static nvmlReturn_t no_processes(nvmlDevice_t device, unsigned int *infoCount) {
  GL_NV_ENTER(device);
  if (!infoCount) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *infoCount = 0;
  return leave(NVML_SUCCESS);
}

#define GL_NV_PROCESSES(name, info_t)                                                 \
  GL_NV_API nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount, info_t *infos); \
  nvmlReturn_t name(nvmlDevice_t device, unsigned int *infoCount, info_t *infos) {   \
    (void)infos;                                                                      \
    return no_processes(device, infoCount);                                           \
  }
GL_NV_PROCESSES(nvmlDeviceGetComputeRunningProcesses_v3, nvmlProcessInfo_t)
GL_NV_PROCESSES(nvmlDeviceGetComputeRunningProcesses_v2, nvmlProcessInfo_v2_t)
GL_NV_PROCESSES(nvmlDeviceGetComputeRunningProcesses, nvmlProcessInfo_v1_t)
GL_NV_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t)
GL_NV_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_v2_t)
GL_NV_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t)
GL_NV_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlProcessInfo_t)
GL_NV_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v2, nvmlProcessInfo_v2_t)
GL_NV_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses, nvmlProcessInfo_v1_t)

GL_NV_API nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int *multiGpuBool);
nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int *multiGpuBool) {
  GL_NV_ENTER(device);
  if (!multiGpuBool) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *multiGpuBool = 0;
  return leave(NVML_SUCCESS);
}

/* The brand as the product name says it; the emulated device's is none. */
static nvmlBrandType_t brand_of(const char *name) {
  if (strstr(name, "GeForce")) return NVML_BRAND_GEFORCE;
  if (strstr(name, "TITAN")) return NVML_BRAND_TITAN;
  if (strstr(name, "Quadro RTX")) return NVML_BRAND_QUADRO_RTX;
  if (strstr(name, "Quadro")) return NVML_BRAND_QUADRO;
  if (strstr(name, "Tesla")) return NVML_BRAND_TESLA;
  if (strstr(name, "RTX")) return NVML_BRAND_NVIDIA_RTX;
  if (strncmp(name, "NVIDIA", 6) == 0) return NVML_BRAND_NVIDIA;
  return NVML_BRAND_UNKNOWN;
}

GL_NV_API nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type) {
  GL_NV_ENTER(device);
  if (!type) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *type = brand_of(gl_nv.gpu.name);
  return leave(NVML_SUCCESS);
}

/* The daemon keeps the GPU initialised for its workers whether or not a
 * program runs, which is what persistence mode gives a program. */
GL_NV_API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode) {
  GL_NV_ENTER(device);
  if (!mode) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *mode = NVML_FEATURE_ENABLED;
  return leave(NVML_SUCCESS);
}

/* Default: several contexts per device (the CUDA shim's
 * CU_DEVICE_ATTRIBUTE_COMPUTE_MODE is 0 too). */
GL_NV_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode);
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode) {
  GL_NV_ENTER(device);
  if (!mode) return leave(NVML_ERROR_INVALID_ARGUMENT);
  *mode = NVML_COMPUTEMODE_DEFAULT;
  return leave(NVML_SUCCESS);
}
