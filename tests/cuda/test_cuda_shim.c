/*
 * test_cuda_shim.c - the CUDA driver shim (src/cuda, libcuda.so.1) end to
 * end: a real gpuleased (the emulated device; GL_TEST_DEVICE=cuda: a real
 * GPU), a lease handed to the shim through the environment as `gpulease
 * exec` hands it, and the driver API called as a program calls it, by the
 * exported names (dlopen + dlsym, as numba and the CUDA runtime find
 * them). Checks: no lease, the device and the lease's memory, copies in
 * every direction with pointer arithmetic, memsets, a kernel taking raw
 * device pointers, streams and events, cuGetProcAddress, kernel printf on
 * stdout, a faulting kernel's sticky error, refused ranges, an
 * unsupported call, and the lease ended under the program.
 */
#include <dlfcn.h>
#include <fcntl.h>
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

#include "cuda/cu.h"
#include "cuda/shim_harness.h"
#include "e2e/daemon_harness.h"
#include "gpulease/gpulease.h"

#define MiB (1024u * 1024u)

static const char k_ptx[] =
    ".version 7.8\n.target sm_52\n.address_size 64\n"
    ".visible .entry fill(.param .u64 p, .param .u32 v, .param .u32 n)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<6>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [v];\n  ld.param.u32 %r2, [n];\n"
    "  mov.u32 %r3, %ctaid.x;\n  mov.u32 %r4, %ntid.x;\n  mov.u32 %r5, %tid.x;\n"
    "  mad.lo.s32 %r3, %r3, %r4, %r5;\n  setp.ge.u32 %p1, %r3, %r2;\n  @%p1 bra DONE;\n"
    "  mul.wide.u32 %rd2, %r3, 4;\n  add.s64 %rd3, %rd1, %rd2;\n  add.s32 %r5, %r1, %r3;\n"
    "  st.global.u32 [%rd3], %r5;\nDONE:\n  ret;\n}\n"
    ".visible .entry poke(.param .u64 p)\n{\n"
    "  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n"
    "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 7;\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n"
    ".extern .func (.param .b32 r) vprintf(.param .b64 f, .param .b64 a);\n"
    ".global .align 1 .b8 fmt[17] = {115,104,105,109,32,112,114,105,110,116,102,32,37,100,10,0,0};\n"
    ".visible .entry hello()\n{\n"
    "  .reg .b64 %rd<4>;\n  .reg .b32 %r<2>;\n  .local .align 8 .b8 buf[8];\n"
    "  mov.u64 %rd1, fmt;\n  cvta.global.u64 %rd1, %rd1;\n  mov.u64 %rd2, buf;\n"
    "  cvta.local.u64 %rd3, %rd2;\n  mov.u32 %r1, 42;\n  st.local.u32 [%rd2], %r1;\n"
    "  {\n  .param .b64 f;\n  st.param.b64 [f], %rd1;\n  .param .b64 a;\n"
    "  st.param.b64 [a], %rd3;\n  .param .b32 r;\n"
    "  call.uni (r), vprintf, (f, a);\n  }\n  ret;\n}\n";

/* The driver API, by exported name. */
typedef struct drv {
  void *so;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceTotalMem_v2)(size_t *, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemGetInfo_v2)(size_t *, size_t *);
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD_v2)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync_v2)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemsetD32_v2)(CUdeviceptr, unsigned, size_t);
  CUresult (*cuMemsetD8_v2)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamDestroy_v2)(CUstream);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuEventDestroy_v2)(CUevent);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuGetProcAddress_v2)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuDevicePrimaryCtxReset_v2)(CUdevice);
  CUresult (*cuMemAllocPitch_v2)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
  CUresult (*cuMemcpy2D_v2)(const CUDA_MEMCPY2D *);
  CUresult (*cuMemcpy3D_v2)(const CUDA_MEMCPY3D *);
  CUresult (*cuMemsetD2D8_v2)(CUdeviceptr, size_t, unsigned char, size_t, size_t);
  CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn, void *);
} drv;

#define LOAD GL_SHIM_LOAD

static void load(drv *d) {
  d->so = gl_shim_open("libcuda.so.1", GL_CUDA_SHIM_PATH);
  LOAD(d, cuInit); LOAD(d, cuDriverGetVersion); LOAD(d, cuDeviceGetCount); LOAD(d, cuDeviceGet);
  LOAD(d, cuDeviceGetName); LOAD(d, cuDeviceTotalMem_v2); LOAD(d, cuDeviceGetAttribute);
  LOAD(d, cuDevicePrimaryCtxRetain); LOAD(d, cuCtxSetCurrent); LOAD(d, cuCtxGetCurrent);
  LOAD(d, cuCtxSynchronize); LOAD(d, cuMemAlloc_v2); LOAD(d, cuMemFree_v2);
  LOAD(d, cuMemGetInfo_v2); LOAD(d, cuMemcpyHtoD_v2); LOAD(d, cuMemcpyDtoH_v2);
  LOAD(d, cuMemcpyDtoD_v2); LOAD(d, cuMemcpyHtoDAsync_v2); LOAD(d, cuMemcpyDtoHAsync_v2);
  LOAD(d, cuMemcpy); LOAD(d, cuMemsetD32_v2); LOAD(d, cuMemsetD8_v2); LOAD(d, cuMemHostAlloc);
  LOAD(d, cuMemFreeHost); LOAD(d, cuPointerGetAttribute); LOAD(d, cuModuleLoadData);
  LOAD(d, cuModuleGetFunction); LOAD(d, cuModuleUnload); LOAD(d, cuFuncGetAttribute);
  LOAD(d, cuLaunchKernel); LOAD(d, cuStreamCreate); LOAD(d, cuStreamSynchronize);
  LOAD(d, cuStreamDestroy_v2); LOAD(d, cuEventCreate); LOAD(d, cuEventRecord);
  LOAD(d, cuEventSynchronize); LOAD(d, cuEventElapsedTime); LOAD(d, cuEventDestroy_v2);
  LOAD(d, cuGetErrorName); LOAD(d, cuGetErrorString); LOAD(d, cuGetProcAddress_v2);
  LOAD(d, cuMemAllocManaged); LOAD(d, cuDevicePrimaryCtxReset_v2);
  LOAD(d, cuMemAllocPitch_v2); LOAD(d, cuMemcpy2D_v2); LOAD(d, cuMemcpy3D_v2);
  LOAD(d, cuMemsetD2D8_v2); LOAD(d, cuLaunchHostFunc);
}



static const char *ename(const drv *d, CUresult r) {
  const char *s = NULL;
  d->cuGetErrorName(r, &s);
  return s ? s : "?";
}

#define OK(d, call)                                                                 \
  do {                                                                              \
    CUresult r_ = (call);                                                           \
    if (r_ != CUDA_SUCCESS) fail_msg("%s: %d %s", #call, (int)r_, ename((d), r_)); \
  } while (0)


static void child_no_lease(void) {
  unsetenv("GPULEASE_LEASE");
  unsetenv("GPULEASE_SECRET");
  drv d;
  load(&d);
  _exit(d.cuInit(0) == CUDA_ERROR_NO_DEVICE && d.cuInit(0) == CUDA_ERROR_NO_DEVICE ? 0 : 1);
}

static void host_fn(void *user) { *(int *)user += 1; }

/* Pitched copies: 12 rows of 40 bytes from a host matrix of pitch 64 into
 * a pitched allocation, a memset of an inner rectangle, back into a
 * contiguous host block (2D), and two slices of it (3D). */
static void check_pitched(const drv *d) {
  enum { W = 40, H = 12, HP = 64 };
  CUdeviceptr dev = 0;
  size_t pitch = 0;
  OK(d, d->cuMemAllocPitch_v2(&dev, &pitch, W, H, 4));
  assert_true(pitch >= W);
  uint8_t src[H * HP], out[H * W];
  for (int i = 0; i < H * HP; i++) src[i] = (uint8_t)(i * 7 + 1);
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src;
  c.srcPitch = HP;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = dev;
  c.dstPitch = pitch;
  c.WidthInBytes = W;
  c.Height = H;
  OK(d, d->cuMemcpy2D_v2(&c));
  /* Rows 2..5, bytes 8..15 of each, set to 0xab. */
  OK(d, d->cuMemsetD2D8_v2(dev + 2 * pitch + 8, pitch, 0xab, 8, 4));
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = dev;
  c.srcPitch = pitch;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = out;
  c.dstPitch = W;
  c.WidthInBytes = W;
  c.Height = H;
  OK(d, d->cuMemcpy2D_v2(&c));
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      bool set = y >= 2 && y < 6 && x >= 8 && x < 16;
      assert_int_equal(out[y * W + x], set ? 0xab : src[y * HP + x]);
    }
  /* 3D: two slices of 3 rows (slice height 6) from row 1, x 4, width 20. */
  CUDA_MEMCPY3D t;
  memset(&t, 0, sizeof t);
  uint8_t vol[2 * 3 * 20];
  t.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  t.srcDevice = dev;
  t.srcPitch = pitch;
  t.srcHeight = 6;
  t.srcXInBytes = 4;
  t.srcY = 1;
  t.dstMemoryType = CU_MEMORYTYPE_HOST;
  t.dstHost = vol;
  t.dstPitch = 20;
  t.dstHeight = 3;
  t.WidthInBytes = 20;
  t.Height = 3;
  t.Depth = 2;
  OK(d, d->cuMemcpy3D_v2(&t));
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < 3; y++)
      for (int x = 0; x < 20; x++) {
        int row = 1 + y + z * 6, col = 4 + x;
        assert_int_equal(vol[(z * 3 + y) * 20 + x], out[row * W + col]);
      }
  /* A pitch smaller than the width: refused. */
  c.dstPitch = W - 1;
  assert_int_equal(d->cuMemcpy2D_v2(&c), CUDA_ERROR_INVALID_VALUE);
  OK(d, d->cuMemFree_v2(dev));
}

static void test_shim(void **state) {
  (void)state;
  bool gpu = gl_test_on_gpu();
  char out[4096];
  /* Without a lease: CUDA_ERROR_NO_DEVICE and one line that says how. */
  assert_int_equal(gl_shim_in_child(child_no_lease, out, sizeof out), 0);
  assert_non_null(strstr(out, "gpulease exec"));

  gl_test_daemon dm;
  assert_int_equal(gl_test_daemon_start(&dm, gpu ? NULL : "1G", NULL), 0);
  gpulease_client *c = gl_test_connect(&dm, 30000);
  assert_non_null(c);
  gpulease_lease lease;
  gpulease_error err;
  const uint64_t vram = 64 * MiB;
  assert_int_equal(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, vram, 120, &lease, &err),
                   GPULEASE_OK);
  gl_shim_lease_env(&dm, &lease);

  drv d;
  load(&d);
  OK(&d, d.cuInit(0));
  int ver = 0, count = 0;
  OK(&d, d.cuDriverGetVersion(&ver));
  assert_true(ver >= 12000);
  OK(&d, d.cuDeviceGetCount(&count));
  assert_int_equal(count, 1);
  CUdevice dev;
  OK(&d, d.cuDeviceGet(&dev, 0));
  assert_int_equal(d.cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  char name[128];
  OK(&d, d.cuDeviceGetName(name, sizeof name, dev));
  assert_true(strlen(name) > 0);
  size_t total = 0;
  OK(&d, d.cuDeviceTotalMem_v2(&total, dev));
  assert_int_equal(total, vram); /* the lease's memory, not the device's */
  int major = 0, warp = 0;
  OK(&d, d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  assert_true(major >= 5);
  OK(&d, d.cuDeviceGetAttribute(&warp, 10 /* WARP_SIZE */, dev));
  assert_int_equal(warp, 32);

  CUcontext ctx = NULL, cur = NULL;
  OK(&d, d.cuDevicePrimaryCtxRetain(&ctx, dev));
  OK(&d, d.cuCtxSetCurrent(ctx));
  OK(&d, d.cuCtxGetCurrent(&cur));
  assert_ptr_equal(cur, ctx);

  /* Memory: the lease's view. */
  size_t freeb = 0;
  OK(&d, d.cuMemGetInfo_v2(&freeb, &total));
  assert_int_equal(total, vram);
  const size_t n = 4096;
  CUdeviceptr a = 0, b = 0;
  OK(&d, d.cuMemAlloc_v2(&a, n * 4));
  OK(&d, d.cuMemAlloc_v2(&b, n * 4));
  assert_true(a != 0 && b != 0 && a != b);
  size_t freeb2 = 0;
  OK(&d, d.cuMemGetInfo_v2(&freeb2, &total));
  assert_int_equal(freeb - freeb2, 2 * n * 4);
  unsigned mt = 0;
  OK(&d, d.cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 100));
  assert_int_equal(mt, CU_MEMORYTYPE_DEVICE);

  /* Copies with pointer arithmetic: host -> a+64, a -> b, b -> host. */
  uint32_t *h = calloc(n, 4), *g = calloc(n, 4);
  for (size_t i = 0; i < n; i++) h[i] = (uint32_t)(i * 2654435761u);
  OK(&d, d.cuMemsetD32_v2(a, 0x5a5a5a5a, n));
  OK(&d, d.cuMemcpyHtoD_v2(a + 64, h, (n - 16) * 4));
  OK(&d, d.cuMemcpyDtoD_v2(b, a, n * 4));
  OK(&d, d.cuMemcpyDtoH_v2(g, b, n * 4));
  for (size_t i = 0; i < 16; i++) assert_int_equal(g[i], 0x5a5a5a5a);
  for (size_t i = 16; i < n; i++) assert_int_equal(g[i], h[i - 16]);
  /* Unified cuMemcpy, both ways, and a memset of bytes at an offset. */
  OK(&d, d.cuMemsetD8_v2(b + 3, 0xee, 5));
  memset(g, 0, n * 4);
  OK(&d, d.cuMemcpy((CUdeviceptr)(uintptr_t)g, b, 16));
  const uint8_t *gb = (const uint8_t *)g;
  for (int i = 3; i < 8; i++) assert_int_equal(gb[i], 0xee);
  assert_int_equal(gb[2], 0x5a);
  assert_int_equal(gb[8], 0x5a);

  /* A range past an allocation, a forged pointer: refused, nothing copied. */
  assert_int_equal(d.cuMemcpyHtoD_v2(a + n * 4 - 8, h, 16), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(d.cuMemcpyDtoH_v2(g, 0x1000, 16), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(d.cuMemFree_v2(a + 4), CUDA_ERROR_INVALID_VALUE);

  /* A freed pointer: refused, nothing copied; a second free too. */
  CUdeviceptr freed = 0;
  OK(&d, d.cuMemAlloc_v2(&freed, 4096));
  OK(&d, d.cuMemFree_v2(freed));
  assert_int_equal(d.cuMemcpyHtoD_v2(freed, h, 16), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(d.cuMemFree_v2(freed), CUDA_ERROR_INVALID_VALUE);

  /* Images that are not modules: refused, and the context goes on. */
  CUmodule bad_mod = NULL;
  static const char not_ptx[] = "this is not a module\n";
  assert_int_equal(d.cuModuleLoadData(&bad_mod, not_ptx), CUDA_ERROR_INVALID_IMAGE);
  uint8_t elf[64] = {0x7f, 'E', 'L', 'F', 2, 1};
  elf[60] = 0xff; /* 255 section headers of size 0 */
  assert_int_equal(d.cuModuleLoadData(&bad_mod, elf), CUDA_ERROR_INVALID_IMAGE);
  const uint8_t fatbin[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0,
                              0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  assert_int_equal(d.cuModuleLoadData(&bad_mod, fatbin), CUDA_ERROR_INVALID_IMAGE);
  assert_null(bad_mod);

  /* A kernel with a raw device pointer, at an offset (pointer arithmetic). */
  CUmodule mod;
  OK(&d, d.cuModuleLoadData(&mod, k_ptx));
  CUfunction fill, poke, hello;
  OK(&d, d.cuModuleGetFunction(&fill, mod, "fill"));
  OK(&d, d.cuModuleGetFunction(&poke, mod, "poke"));
  OK(&d, d.cuModuleGetFunction(&hello, mod, "hello"));
  assert_int_equal(d.cuModuleGetFunction(&hello, mod, "nope"), CUDA_ERROR_NOT_FOUND);
  int regs = -1;
  OK(&d, d.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fill));
  assert_true(regs >= 0);
  CUstream s;
  OK(&d, d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1;
  OK(&d, d.cuEventCreate(&e0, 0));
  OK(&d, d.cuEventCreate(&e1, 0));
  CUdeviceptr p = a + 256;
  uint32_t v = 1000, cnt = (uint32_t)n - 64;
  void *params[] = {&p, &v, &cnt};
  OK(&d, d.cuEventRecord(e0, s));
  OK(&d, d.cuLaunchKernel(fill, (cnt + 127) / 128, 1, 1, 128, 1, 1, 0, s, params, NULL));
  OK(&d, d.cuEventRecord(e1, s));
  OK(&d, d.cuEventSynchronize(e1));
  float ms = -1;
  OK(&d, d.cuEventElapsedTime(&ms, e0, e1));
  assert_true(ms >= 0);
  OK(&d, d.cuEventDestroy_v2(e0));
  OK(&d, d.cuEventDestroy_v2(e1));
  OK(&d, d.cuMemcpyDtoHAsync_v2(g, a, n * 4, s));
  OK(&d, d.cuStreamSynchronize(s));
  for (size_t i = 0; i < 64; i++) assert_int_equal(g[i], i < 16 ? 0x5a5a5a5a : h[i - 16]);
  for (size_t i = 64; i < n; i++) assert_int_equal(g[i], 1000 + (uint32_t)(i - 64));

  /* Pinned host memory (cuMemHostAlloc) both ways. */
  uint32_t *pin = NULL;
  OK(&d, d.cuMemHostAlloc((void **)&pin, n * 4, 0));
  for (size_t i = 0; i < n; i++) pin[i] = (uint32_t)i ^ 0xabcdu;
  OK(&d, d.cuMemcpyHtoDAsync_v2(b, pin, n * 4, s));
  memset(pin, 0, n * 4);
  OK(&d, d.cuMemcpyDtoH_v2(pin, b, n * 4));
  for (size_t i = 0; i < n; i++) assert_int_equal(pin[i], (uint32_t)i ^ 0xabcdu);
  OK(&d, d.cuMemFreeHost(pin));

  check_pitched(&d);
  /* A host function runs once the stream's earlier work is done. */
  int ran = 0;
  OK(&d, d.cuLaunchKernel(fill, (cnt + 127) / 128, 1, 1, 128, 1, 1, 0, s, params, NULL));
  OK(&d, d.cuLaunchHostFunc(s, host_fn, &ran));
  OK(&d, d.cuStreamSynchronize(s));
  assert_int_equal(ran, 1);

  /* cuGetProcAddress: the versioned symbol for the base name. */
  void *fn = NULL;
  CUdriverProcAddressQueryResult qr = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  OK(&d, d.cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &qr));
  assert_ptr_equal(fn, (void *)d.cuMemAlloc_v2);
  assert_int_equal(qr, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_int_equal(d.cuGetProcAddress_v2("cuNoSuchCall", &fn, 12000, 0, &qr),
                   CUDA_ERROR_NOT_FOUND);
  assert_int_equal(qr, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);

  /* Kernel printf reaches stdout (the emulated device; a GPU's too). */
  fflush(stdout);
  char opath[] = "/tmp/gl_shim_out_XXXXXX";
  int ofd = mkstemp(opath), saved = dup(1);
  dup2(ofd, 1);
  OK(&d, d.cuLaunchKernel(hello, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
  OK(&d, d.cuCtxSynchronize());
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  ssize_t on = pread(ofd, out, sizeof out - 1, 0);
  out[on > 0 ? on : 0] = 0;
  close(ofd);
  unlink(opath);
  assert_non_null(strstr(out, "shim printf 42"));

  /* An unsupported call: CUDA_ERROR_NOT_SUPPORTED, nothing else. */
  CUdeviceptr m = 0;
  assert_int_equal(d.cuMemAllocManaged(&m, 4096, 1), CUDA_ERROR_NOT_SUPPORTED);
  const char *es = NULL;
  OK(&d, d.cuGetErrorString(CUDA_ERROR_NOT_SUPPORTED, &es));
  assert_non_null(es);

  /* A faulting kernel: its error at the next synchronisation, sticky. */
  CUdeviceptr bad = 16;
  void *bparams[] = {&bad};
  OK(&d, d.cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, s, bparams, NULL));
  assert_int_equal(d.cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  assert_int_equal(d.cuMemcpyDtoH_v2(g, a, 16), CUDA_ERROR_ILLEGAL_ADDRESS);

  /* A reset ends the lost context; the next call gets a fresh one. */
  OK(&d, d.cuDevicePrimaryCtxReset_v2(dev));
  CUdeviceptr z = 0;
  OK(&d, d.cuMemAlloc_v2(&z, 4096));
  OK(&d, d.cuMemsetD32_v2(z, 9, 1024));
  OK(&d, d.cuMemcpyDtoH_v2(g, z, 16));
  assert_int_equal(g[3], 9);

  /* The lease ended under the program: a CUDA error, no hang; the daemon
   * unharmed (a new lease works). */
  assert_int_equal(gpulease_lease_free(c, &lease, &err), GPULEASE_OK);
  assert_int_equal(d.cuMemcpyDtoH_v2(g, z, 16), CUDA_ERROR_DEVICE_UNAVAILABLE);
  assert_int_not_equal(d.cuMemAlloc_v2(&z, 4096), CUDA_SUCCESS);
  gpulease_lease l2;
  assert_int_equal(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, MiB, 60, &l2, &err), GPULEASE_OK);
  assert_int_equal(gpulease_lease_free(c, &l2, &err), GPULEASE_OK);
  OK(&d, d.cuStreamDestroy_v2(s));
  free(h);
  free(g);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&dm), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_shim)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
