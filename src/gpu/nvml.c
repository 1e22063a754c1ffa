/* nvml.c - see nvml.h. */
#include "gpu/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define GL_NVML_LIBRARY "libnvidia-ml.so.1"

/* Our copies of the few nvml.h declarations we use (same ABI). */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;
enum { NVML_SUCCESS = 0 };
#define NVML_BUFFER_SIZE 96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE, ..._NAME_V2_... */

struct gl_nvml {
  void *dl;
  nvmlReturn_t (*nvmlInit_v2)(void);
  nvmlReturn_t (*nvmlShutdown)(void);
  const char *(*nvmlErrorString)(nvmlReturn_t result);
  nvmlReturn_t (*nvmlDeviceGetCount_v2)(unsigned int *count);
  nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2)(unsigned int index, nvmlDevice_t *device);
  nvmlReturn_t (*nvmlDeviceGetHandleByUUID)(const char *uuid, nvmlDevice_t *device);
  nvmlReturn_t (*nvmlDeviceGetUUID)(nvmlDevice_t device, char *uuid, unsigned int length);
  nvmlReturn_t (*nvmlDeviceGetName)(nvmlDevice_t device, char *name, unsigned int length);
  nvmlReturn_t (*nvmlDeviceGetMemoryInfo)(nvmlDevice_t device, nvmlMemory_t *memory);
  nvmlReturn_t (*nvmlDeviceGetCudaComputeCapability)(nvmlDevice_t device, int *major,
                                                     int *minor);
  nvmlReturn_t (*nvmlSystemGetDriverVersion)(char *version, unsigned int length);
  /* MIG (optional: NULL with an older library). */
  nvmlReturn_t (*nvmlDeviceGetMigMode)(nvmlDevice_t device, unsigned int *current,
                                       unsigned int *pending);
  nvmlReturn_t (*nvmlDeviceGetMaxMigDeviceCount)(nvmlDevice_t device, unsigned int *count);
  nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex)(nvmlDevice_t device, unsigned int index,
                                                      nvmlDevice_t *mig);
  /* Compute processes (optional): the _v2 entry point takes 24-byte
   * records, the unversioned one 16-byte ones. */
  nvmlReturn_t (*procs_v2)(nvmlDevice_t device, unsigned int *count, void *infos);
  nvmlReturn_t (*util)(nvmlDevice_t device, unsigned int rates[2]); /* nvmlUtilization_t */
  nvmlReturn_t (*temp)(nvmlDevice_t device, int sensor, unsigned int *celsius);
  nvmlReturn_t (*procs_v1)(nvmlDevice_t device, unsigned int *count, void *infos);
};

/* nvmlProcessInfo_v2_t and nvmlProcessInfo_v1_t. */
typedef struct proc_v2 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} proc_v2;
typedef struct proc_v1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} proc_v1;

typedef struct sym {
  const char *name;
  size_t offset;
} sym;

#define SYM(field) {#field, offsetof(struct gl_nvml, field)}

static const sym k_syms[] = {
    SYM(nvmlInit_v2),
    SYM(nvmlShutdown),
    SYM(nvmlErrorString),
    SYM(nvmlDeviceGetCount_v2),
    SYM(nvmlDeviceGetHandleByIndex_v2),
    SYM(nvmlDeviceGetHandleByUUID),
    SYM(nvmlDeviceGetUUID),
    SYM(nvmlDeviceGetName),
    SYM(nvmlDeviceGetMemoryInfo),
    SYM(nvmlDeviceGetCudaComputeCapability),
    SYM(nvmlSystemGetDriverVersion),
};

static const char *nvml_strerror(const gl_nvml *n, nvmlReturn_t r) {
  const char *s = n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;
  return s ? s : "unknown NVML error";
}

int gl_nvml_open(gl_nvml **out, char *err, size_t errlen) {
  *out = NULL;
  void *dl = dlopen(GL_NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *why = dlerror();
    gl_set_err(err, errlen, "NVML not available: %s", why ? why : GL_NVML_LIBRARY);
    return -1;
  }
  gl_nvml *n = calloc(1, sizeof *n);
  if (!n) {
    gl_set_err(err, errlen, "NVML: out of memory");
    dlclose(dl);
    return -1;
  }
  n->dl = dl;
  for (size_t i = 0; i < sizeof k_syms / sizeof k_syms[0]; i++) {
    void *fn = dlsym(dl, k_syms[i].name);
    if (!fn) {
      gl_set_err(err, errlen, "NVML not usable: %s lacks %s", GL_NVML_LIBRARY, k_syms[i].name);
      free(n);
      dlclose(dl);
      return -1;
    }
    memcpy((char *)n + k_syms[i].offset, &fn, sizeof fn);
  }
  n->nvmlDeviceGetMigMode = (nvmlReturn_t(*)(nvmlDevice_t, unsigned int *, unsigned int *))
      dlsym(dl, "nvmlDeviceGetMigMode");
  n->nvmlDeviceGetMaxMigDeviceCount =
      (nvmlReturn_t(*)(nvmlDevice_t, unsigned int *))dlsym(dl, "nvmlDeviceGetMaxMigDeviceCount");
  n->nvmlDeviceGetMigDeviceHandleByIndex =
      (nvmlReturn_t(*)(nvmlDevice_t, unsigned int, nvmlDevice_t *))dlsym(
          dl, "nvmlDeviceGetMigDeviceHandleByIndex");
  n->procs_v2 = (nvmlReturn_t(*)(nvmlDevice_t, unsigned int *, void *))dlsym(
      dl, "nvmlDeviceGetComputeRunningProcesses_v2");
  n->procs_v1 = (nvmlReturn_t(*)(nvmlDevice_t, unsigned int *, void *))dlsym(
      dl, "nvmlDeviceGetComputeRunningProcesses");
  n->util = (nvmlReturn_t(*)(nvmlDevice_t, unsigned int *))dlsym(dl,
                                                                  "nvmlDeviceGetUtilizationRates");
  n->temp = (nvmlReturn_t(*)(nvmlDevice_t, int, unsigned int *))dlsym(dl,
                                                                       "nvmlDeviceGetTemperature");
  nvmlReturn_t r = n->nvmlInit_v2();
  if (r != NVML_SUCCESS) {
    gl_set_err(err, errlen, "nvmlInit_v2 failed: %s", nvml_strerror(n, r));
    free(n);
    dlclose(dl);
    return -1;
  }
  *out = n;
  return 0;
}

void gl_nvml_close(gl_nvml *nvml) {
  if (!nvml) return;
  nvml->nvmlShutdown();
  dlclose(nvml->dl);
  free(nvml);
}

unsigned gl_nvml_count(gl_nvml *nvml) {
  unsigned count = 0;
  if (nvml->nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS) return 0;
  return count;
}

int gl_nvml_device_info(gl_nvml *nvml, unsigned index, gl_nvml_device *out) {
  memset(out, 0, sizeof *out);
  nvmlDevice_t dev;
  if (nvml->nvmlDeviceGetHandleByIndex_v2(index, &dev) != NVML_SUCCESS) return -1;

  char uuid[NVML_BUFFER_SIZE], name[NVML_BUFFER_SIZE];
  memset(uuid, 0, sizeof uuid);
  memset(name, 0, sizeof name);
  int major = 0, minor = 0;
  nvmlMemory_t mem;
  if (nvml->nvmlDeviceGetUUID(dev, uuid, sizeof uuid - 1) != NVML_SUCCESS ||
      nvml->nvmlDeviceGetName(dev, name, sizeof name - 1) != NVML_SUCCESS ||
      nvml->nvmlDeviceGetCudaComputeCapability(dev, &major, &minor) != NVML_SUCCESS ||
      nvml->nvmlDeviceGetMemoryInfo(dev, &mem) != NVML_SUCCESS)
    return -1;
  snprintf(out->uuid, sizeof out->uuid, "%s", uuid);
  snprintf(out->name, sizeof out->name, "%s", name);
  out->cc_major = major > 0 ? (unsigned)major : 0;
  out->cc_minor = minor > 0 ? (unsigned)minor : 0;
  out->total_bytes = mem.total;
  out->free_bytes = mem.free;
  out->used_bytes = mem.used;
  return 0;
}

static int memory_of(gl_nvml *nvml, nvmlDevice_t dev, uint64_t *total, uint64_t *free_bytes,
                     uint64_t *used) {
  nvmlMemory_t mem;
  if (nvml->nvmlDeviceGetMemoryInfo(dev, &mem) != NVML_SUCCESS) return -1;
  if (total) *total = mem.total;
  if (free_bytes) *free_bytes = mem.free;
  if (used) *used = mem.used;
  return 0;
}

int gl_nvml_memory(gl_nvml *nvml, unsigned index, uint64_t *total, uint64_t *free_bytes,
                   uint64_t *used) {
  nvmlDevice_t dev;
  if (nvml->nvmlDeviceGetHandleByIndex_v2(index, &dev) != NVML_SUCCESS) return -1;
  return memory_of(nvml, dev, total, free_bytes, used);
}

int gl_nvml_memory_by_uuid(gl_nvml *nvml, const char *uuid, uint64_t *total,
                           uint64_t *free_bytes, uint64_t *used) {
  nvmlDevice_t dev;
  if (!uuid || nvml->nvmlDeviceGetHandleByUUID(uuid, &dev) != NVML_SUCCESS) return -1;
  return memory_of(nvml, dev, total, free_bytes, used);
}

int gl_nvml_driver_version(gl_nvml *nvml, char *buf, size_t buflen) {
  if (!buflen) return -1;
  char v[NVML_BUFFER_SIZE];
  memset(v, 0, sizeof v);
  if (nvml->nvmlSystemGetDriverVersion(v, sizeof v - 1) != NVML_SUCCESS) {
    buf[0] = 0;
    return -1;
  }
  snprintf(buf, buflen, "%s", v);
  return 0;
}

int gl_nvml_mig_list(gl_nvml *nvml, unsigned index, gl_nvml_mig *out, unsigned max) {
  nvmlDevice_t dev;
  unsigned current = 0, pending = 0, slots = 0;
  if (!nvml->nvmlDeviceGetMigMode || !nvml->nvmlDeviceGetMaxMigDeviceCount ||
      !nvml->nvmlDeviceGetMigDeviceHandleByIndex)
    return 0;
  if (nvml->nvmlDeviceGetHandleByIndex_v2(index, &dev) != NVML_SUCCESS) return -1;
  if (nvml->nvmlDeviceGetMigMode(dev, &current, &pending) != NVML_SUCCESS || current != 1)
    return 0; /* not supported, or MIG off: NVML_DEVICE_MIG_ENABLE is 1 */
  if (nvml->nvmlDeviceGetMaxMigDeviceCount(dev, &slots) != NVML_SUCCESS) return -1;
  int n = 0;
  for (unsigned i = 0; i < slots && (unsigned)n < max; i++) {
    nvmlDevice_t mig;
    if (nvml->nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mig) != NVML_SUCCESS) continue;
    char uuid[NVML_BUFFER_SIZE];
    memset(uuid, 0, sizeof uuid);
    nvmlMemory_t mem;
    if (nvml->nvmlDeviceGetUUID(mig, uuid, sizeof uuid - 1) != NVML_SUCCESS ||
        nvml->nvmlDeviceGetMemoryInfo(mig, &mem) != NVML_SUCCESS)
      continue;
    snprintf(out[n].uuid, sizeof out[n].uuid, "%s", uuid);
    out[n].memory_bytes = mem.total;
    n++;
  }
  return n;
}

int gl_nvml_process_memory(gl_nvml *nvml, const char *uuid, unsigned pid, uint64_t *bytes) {
  nvmlDevice_t dev;
  if (nvml->nvmlDeviceGetHandleByUUID(uuid, &dev) != NVML_SUCCESS) return -1;
  enum { MAX = 256 };
  unsigned int count = MAX;
  if (nvml->procs_v2) {
    static __thread proc_v2 p[MAX];
    if (nvml->procs_v2(dev, &count, p) != NVML_SUCCESS) return -1;
    for (unsigned i = 0; i < count && i < MAX; i++)
      if (p[i].pid == pid) {
        if (bytes) *bytes = p[i].usedGpuMemory;
        return 0;
      }
    return 1;
  }
  if (nvml->procs_v1) {
    static __thread proc_v1 p[MAX];
    if (nvml->procs_v1(dev, &count, p) != NVML_SUCCESS) return -1;
    for (unsigned i = 0; i < count && i < MAX; i++)
      if (p[i].pid == pid) {
        if (bytes) *bytes = p[i].usedGpuMemory;
        return 0;
      }
    return 1;
  }
  return -1;
}

int gl_nvml_activity(gl_nvml *nvml, const char *uuid, unsigned *gpu_pct, unsigned *mem_pct,
                     unsigned *celsius) {
  nvmlDevice_t dev;
  if (nvml->nvmlDeviceGetHandleByUUID(uuid, &dev) != NVML_SUCCESS) return -1;
  int got = 0;
  unsigned int rates[2];
  if (nvml->util && nvml->util(dev, rates) == NVML_SUCCESS) {
    *gpu_pct = rates[0];
    *mem_pct = rates[1];
    got |= 1;
  }
  unsigned int t;
  if (nvml->temp && nvml->temp(dev, 0 /* NVML_TEMPERATURE_GPU */, &t) == NVML_SUCCESS) {
    *celsius = t;
    got |= 2;
  }
  return got;
}
