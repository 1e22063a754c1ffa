/*
 * test_nvml_shim.c - the NVML shim (src/nvml, libnvidia-ml.so.1) end to
 * end: a real gpuleased (the emulated device; GL_TEST_DEVICE=cuda: a real
 * GPU), a lease handed to the shim through the environment as `gpulease
 * exec` hands it, and NVML called as a program or a binding calls it, by
 * the exported names (dlopen + dlsym). Checks: no lease (in a child),
 * an unsupported call said once (in a child), init's reference count, one
 * device whose name, UUID and compute capability are the inventory's, the
 * lease's memory, a handle out of range, the calls NVML answers with
 * NOT_SUPPORTED here, the lease ended under the program, and, where
 * python3 imports pynvml, the same through nvidia-ml-py.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuda/shim_harness.h"
#include "e2e/daemon_harness.h"
#include "gpulease/gpulease.h"
#include "nvml/nvml_types.h"

#define MiB (1024u * 1024u)

/* NVML, by exported name. */
typedef struct nv {
  void *so;
  nvmlReturn_t (*nvmlInit_v2)(void);
  nvmlReturn_t (*nvmlInitWithFlags)(unsigned);
  nvmlReturn_t (*nvmlShutdown)(void);
  const char *(*nvmlErrorString)(nvmlReturn_t);
  nvmlReturn_t (*nvmlSystemGetDriverVersion)(char *, unsigned);
  nvmlReturn_t (*nvmlSystemGetNVMLVersion)(char *, unsigned);
  nvmlReturn_t (*nvmlSystemGetCudaDriverVersion_v2)(int *);
  nvmlReturn_t (*nvmlDeviceGetCount_v2)(unsigned *);
  nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2)(unsigned, nvmlDevice_t *);
  nvmlReturn_t (*nvmlDeviceGetHandleByUUID)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*nvmlDeviceGetIndex)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetName)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*nvmlDeviceGetUUID)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*nvmlDeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
  nvmlReturn_t (*nvmlDeviceGetMemoryInfo_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
  nvmlReturn_t (*nvmlDeviceGetCudaComputeCapability)(nvmlDevice_t, int *, int *);
  nvmlReturn_t (*nvmlDeviceGetMinorNumber)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetPciInfo_v3)(nvmlDevice_t, nvmlPciInfo_t *);
  nvmlReturn_t (*nvmlDeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t *);
  nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_v3)(nvmlDevice_t, unsigned *,
                                                          nvmlProcessInfo_t *);
  nvmlReturn_t (*nvmlDeviceGetMultiGpuBoard)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetBrand)(nvmlDevice_t, nvmlBrandType_t *);
  nvmlReturn_t (*nvmlDeviceGetPersistenceMode)(nvmlDevice_t, nvmlEnableState_t *);
  nvmlReturn_t (*nvmlDeviceGetTemperature)(nvmlDevice_t, int, unsigned *);
} nv;

#define LOAD GL_SHIM_LOAD

static void load(nv *d) {
  d->so = gl_shim_open("libnvidia-ml.so.1", GL_NVML_SHIM_PATH);
  LOAD(d, nvmlInit_v2); LOAD(d, nvmlInitWithFlags); LOAD(d, nvmlShutdown);
  LOAD(d, nvmlErrorString); LOAD(d, nvmlSystemGetDriverVersion);
  LOAD(d, nvmlSystemGetNVMLVersion); LOAD(d, nvmlSystemGetCudaDriverVersion_v2);
  LOAD(d, nvmlDeviceGetCount_v2); LOAD(d, nvmlDeviceGetHandleByIndex_v2);
  LOAD(d, nvmlDeviceGetHandleByUUID); LOAD(d, nvmlDeviceGetIndex); LOAD(d, nvmlDeviceGetName);
  LOAD(d, nvmlDeviceGetUUID); LOAD(d, nvmlDeviceGetMemoryInfo);
  LOAD(d, nvmlDeviceGetMemoryInfo_v2); LOAD(d, nvmlDeviceGetCudaComputeCapability);
  LOAD(d, nvmlDeviceGetMinorNumber); LOAD(d, nvmlDeviceGetPciInfo_v3);
  LOAD(d, nvmlDeviceGetUtilizationRates); LOAD(d, nvmlDeviceGetComputeRunningProcesses_v3);
  LOAD(d, nvmlDeviceGetMultiGpuBoard); LOAD(d, nvmlDeviceGetBrand);
  LOAD(d, nvmlDeviceGetPersistenceMode); LOAD(d, nvmlDeviceGetTemperature);
}

#define OK(d, call)                                                                      \
  do {                                                                                   \
    nvmlReturn_t r_ = (call);                                                            \
    if (r_ != NVML_SUCCESS) fail_msg("%s: %d %s", #call, (int)r_, (d)->nvmlErrorString(r_)); \
  } while (0)


/* Without a lease: DRIVER_NOT_LOADED, each time; nothing else works. */
static void child_no_lease(void) {
  unsetenv("GPULEASE_LEASE");
  unsetenv("GPULEASE_SECRET");
  nv d;
  load(&d);
  unsigned n = 7;
  bool ok = d.nvmlInit_v2() == NVML_ERROR_DRIVER_NOT_LOADED &&
            d.nvmlInitWithFlags(0) == NVML_ERROR_DRIVER_NOT_LOADED &&
            d.nvmlDeviceGetCount_v2(&n) == NVML_ERROR_UNINITIALIZED && n == 7 &&
            d.nvmlShutdown() == NVML_ERROR_UNINITIALIZED;
  _exit(ok ? 0 : 1);
}

/* A stub: NOT_SUPPORTED each time, its line once. */
static void child_unsupported(void) {
  nv d;
  load(&d);
  unsigned t = 0;
  bool ok = d.nvmlDeviceGetTemperature(NULL, 0, &t) == NVML_ERROR_NOT_SUPPORTED &&
            d.nvmlDeviceGetTemperature(NULL, 0, &t) == NVML_ERROR_NOT_SUPPORTED;
  _exit(ok ? 0 : 1);
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

#if defined(__SANITIZE_ADDRESS__)
#define GL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GL_ASAN 1
#endif
#endif

/* nvidia-ml-py (`import pynvml`) over the shim, where python3 has it: the
 * binding's own lookups and structs. Not under ASan (python3 is not). */
static void check_pynvml(uint64_t vram, const char *name, const char *uuid) {
#ifdef GL_ASAN
  (void)vram;
  (void)name;
  (void)uuid;
  fprintf(stderr, "pynvml: skipped under ASan\n");
#else
  if (system("python3 -c 'import pynvml' >/dev/null 2>&1") != 0) {
    fprintf(stderr, "pynvml: not importable, skipped\n");
    return;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", gl_shim_path("libnvidia-ml.so.1", GL_NVML_SHIM_PATH));
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "LD_LIBRARY_PATH='%s'${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} python3 -c '\n"
           "import pynvml\n"
           "pynvml.nvmlInit()\n"
           "assert pynvml.nvmlDeviceGetCount() == 1\n"
           "h = pynvml.nvmlDeviceGetHandleByIndex(0)\n"
           "n = pynvml.nvmlDeviceGetName(h)\n"
           "n = n.decode() if isinstance(n, bytes) else n\n"
           "assert n == \"%s\", n\n"
           "u = pynvml.nvmlDeviceGetUUID(h)\n"
           "u = u.decode() if isinstance(u, bytes) else u\n"
           "assert u == \"%s\", u\n"
           "assert pynvml.nvmlSystemGetDriverVersion()\n"
           "m = pynvml.nvmlDeviceGetMemoryInfo(h)\n"
           "assert m.total == %llu and m.free + m.used == m.total, (m.total, m.free, m.used)\n"
           "assert pynvml.nvmlDeviceGetComputeRunningProcesses(h) == []\n"
           "try:\n"
           "    pynvml.nvmlDeviceGetPowerUsage(h)\n"
           "    raise SystemExit(\"power usage answered\")\n"
           "except pynvml.NVMLError_NotSupported:\n"
           "    pass\n"
           "pynvml.nvmlShutdown()\n"
           "print(\"pynvml ok\")\n'",
           dir, name, uuid, (unsigned long long)vram);
  assert_int_equal(system(cmd), 0);
#endif
}

static void test_nvml(void **state) {
  (void)state;
  bool gpu = gl_test_on_gpu();
  char out[8192];
  /* Without a lease: DRIVER_NOT_LOADED and one line that says how. */
  assert_int_equal(gl_shim_in_child(child_no_lease, out, sizeof out), 0);
  assert_non_null(strstr(out, "gpulease exec"));
  assert_int_equal(count_of(out, "gpulease: nvmlInit"), 1);
  /* An unsupported call: NOT_SUPPORTED, said once. */
  assert_int_equal(gl_shim_in_child(child_unsupported, out, sizeof out), 0);
  assert_int_equal(count_of(out, "gpulease: nvmlDeviceGetTemperature is not supported by the "
                                 "gpulease NVML library"),
                   1);

  gl_test_daemon dm;
  assert_int_equal(gl_test_daemon_start(&dm, gpu ? NULL : "1G", NULL), 0);
  gpulease_client *c = gl_test_connect(&dm, 30000);
  assert_non_null(c);
  gpulease_lease lease;
  gpulease_error err;
  const uint64_t vram = 64 * MiB;
  assert_int_equal(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, vram, 120, &lease, &err),
                   GPULEASE_OK);
  gpulease_inventory *inv = malloc(sizeof *inv);
  assert_non_null(inv);
  gpulease_inventory_init(inv);
  assert_int_equal(gpulease_inventory_get(c, inv, &err), GPULEASE_OK);
  const gpulease_gpu_info *g = NULL;
  for (size_t i = 0; i < inv->gpu_count; i++)
    if (inv->gpus[i].index == lease.gpu_index) g = &inv->gpus[i];
  assert_non_null(g);

  gl_shim_lease_env(&dm, &lease);

  nv d;
  load(&d);
  unsigned count = 0;
  assert_int_equal(d.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  assert_int_equal(d.nvmlInitWithFlags(0x100), NVML_ERROR_INVALID_ARGUMENT);
  OK(&d, d.nvmlInit_v2());
  OK(&d, d.nvmlInitWithFlags(0)); /* counted: two shutdowns to end it */

  /* The system. */
  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  OK(&d, d.nvmlSystemGetDriverVersion(buf, sizeof buf));
  if (inv->driver_version[0]) assert_string_equal(buf, inv->driver_version);
  else assert_true(strncmp(buf, "gpulease", 8) == 0);
  assert_int_equal(d.nvmlSystemGetDriverVersion(buf, 3), NVML_ERROR_INSUFFICIENT_SIZE);
  OK(&d, d.nvmlSystemGetNVMLVersion(buf, sizeof buf));
  assert_true(strncmp(buf, "13.", 3) == 0);
  int cudav = 0;
  OK(&d, d.nvmlSystemGetCudaDriverVersion_v2(&cudav));
  assert_int_equal(cudav, 13000);

  /* One device, the lease's GPU. */
  OK(&d, d.nvmlDeviceGetCount_v2(&count));
  assert_int_equal(count, 1);
  nvmlDevice_t h = NULL, h2 = NULL;
  OK(&d, d.nvmlDeviceGetHandleByIndex_v2(0, &h));
  assert_non_null(h);
  assert_int_equal(d.nvmlDeviceGetHandleByIndex_v2(1, &h2), NVML_ERROR_INVALID_ARGUMENT);
  assert_null(h2);
  unsigned idx = 9;
  OK(&d, d.nvmlDeviceGetIndex(h, &idx));
  assert_int_equal(idx, 0);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  OK(&d, d.nvmlDeviceGetName(h, name, sizeof name));
  assert_string_equal(name, g->name);
  OK(&d, d.nvmlDeviceGetUUID(h, uuid, NVML_DEVICE_UUID_BUFFER_SIZE));
  assert_string_equal(uuid, g->uuid);
  assert_int_equal(d.nvmlDeviceGetUUID(h, uuid, 2), NVML_ERROR_INSUFFICIENT_SIZE);
  OK(&d, d.nvmlDeviceGetHandleByUUID(g->uuid, &h2));
  assert_ptr_equal(h2, h);
  assert_int_equal(d.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &h2),
                   NVML_ERROR_NOT_FOUND);
  /* A handle that is not the shim's. */
  nvmlDevice_t bogus = (nvmlDevice_t)(uintptr_t)&count;
  assert_int_equal(d.nvmlDeviceGetName(bogus, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
  assert_int_equal(d.nvmlDeviceGetName(NULL, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
  int major = -1, minor = -1;
  OK(&d, d.nvmlDeviceGetCudaComputeCapability(h, &major, &minor));
  assert_int_equal(major, (int)g->cc_major);
  assert_int_equal(minor, (int)g->cc_minor);
  unsigned v = 9;
  OK(&d, d.nvmlDeviceGetMinorNumber(h, &v));
  assert_int_equal(v, 0);
  v = 9;
  OK(&d, d.nvmlDeviceGetMultiGpuBoard(h, &v));
  assert_int_equal(v, 0);
  nvmlBrandType_t brand;
  OK(&d, d.nvmlDeviceGetBrand(h, &brand));
  nvmlEnableState_t pm;
  OK(&d, d.nvmlDeviceGetPersistenceMode(h, &pm));

  /* Memory: the lease's view. */
  nvmlMemory_t m;
  memset(&m, 0xff, sizeof m);
  OK(&d, d.nvmlDeviceGetMemoryInfo(h, &m));
  assert_int_equal(m.total, vram);
  assert_int_equal(m.free + m.used, m.total);
  nvmlMemory_v2_t m2;
  memset(&m2, 0, sizeof m2);
  assert_int_equal(d.nvmlDeviceGetMemoryInfo_v2(h, &m2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  m2.version = nvmlMemory_v2;
  OK(&d, d.nvmlDeviceGetMemoryInfo_v2(h, &m2));
  assert_int_equal(m2.total, vram);
  assert_int_equal(m2.free + m2.used + m2.reserved, m2.total);

  /* No processes here; what the inventory does not say. */
  unsigned nproc = 5;
  OK(&d, d.nvmlDeviceGetComputeRunningProcesses_v3(h, &nproc, NULL));
  assert_int_equal(nproc, 0);
  nvmlPciInfo_t pci;
  assert_int_equal(d.nvmlDeviceGetPciInfo_v3(h, &pci), NVML_ERROR_NOT_SUPPORTED);
  nvmlUtilization_t u;
  assert_int_equal(d.nvmlDeviceGetUtilizationRates(h, &u), NVML_ERROR_NOT_SUPPORTED);
  unsigned temp = 0;
  assert_int_equal(d.nvmlDeviceGetTemperature(h, 0, &temp), NVML_ERROR_NOT_SUPPORTED);
  assert_string_equal(d.nvmlErrorString(NVML_ERROR_NOT_SUPPORTED), "Not Supported");
  assert_non_null(d.nvmlErrorString((nvmlReturn_t)12345));

  /* The reference count: the second shutdown ends it; a third is refused. */
  OK(&d, d.nvmlShutdown());
  OK(&d, d.nvmlDeviceGetCount_v2(&count));
  OK(&d, d.nvmlShutdown());
  assert_int_equal(d.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  assert_int_equal(d.nvmlDeviceGetName(h, name, sizeof name), NVML_ERROR_UNINITIALIZED);
  assert_int_equal(d.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);

  /* pynvml over the shim, while the lease lives. */
  check_pynvml(vram, g->name, g->uuid);

  /* Again after a shutdown; then the lease ended under the program. */
  OK(&d, d.nvmlInit_v2());
  OK(&d, d.nvmlDeviceGetHandleByIndex_v2(0, &h));
  OK(&d, d.nvmlDeviceGetMemoryInfo(h, &m));
  assert_int_equal(gpulease_lease_free(c, &lease, &err), GPULEASE_OK);
  assert_int_equal(d.nvmlDeviceGetMemoryInfo(h, &m), NVML_ERROR_GPU_IS_LOST);
  OK(&d, d.nvmlShutdown());
  /* A lease that is gone: init says so, and fails. */
  assert_int_not_equal(d.nvmlInit_v2(), NVML_SUCCESS);

  free(inv);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&dm), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_nvml)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
