/*
 * corpus_gpu.c - the kernel corpus on a real GPU and on the emulator, in
 * one process, compared three ways: GPU against the C reference, emulator
 * against the reference, and GPU against emulator bit for bit.
 *
 *   gl_corpus_gpu [PTX_DIR] [CASE...]
 *   gl_corpus_gpu --triton [PTX_DIR] [CASE...]
 * PTX_DIR holds sm_75/ and sm_90/ (default: the build's emu-kernels). The
 * sm_90 PTX is skipped on GPUs below compute capability 9.0. --triton runs
 * Triton's tutorial kernels (corpus_triton.c) from PTX_DIR/sm_80 and
 * sm_90a (default: tests/emu/triton of the source tree); the sm_90a PTX
 * runs on compute capability 9.0 only.
 *
 * The CUDA driver is reached through gl_cuda (src/gpu/cuda_api.h, dlopen'd
 * at run time): the device's primary context, cuMemAlloc/cuMemcpy, PTX
 * JIT-loaded with cuModuleLoadDataEx, cuLaunchKernel (cuLaunchKernelEx with
 * the cooperative / cluster-dimension attributes for the cases that ask for
 * them; cases needing sm_90 are skipped on sm_75 PTX), cuCtxSynchronize.
 * Without a driver it prints "corpus_gpu: no CUDA driver (...)" and exits 2.
 *
 * Output: one line per case and target, then
 *   corpus_gpu: N/N cases passed; emulator bit-identical to GPU on M/M exact outputs
 * Exit status 0 only when the GPU and the emulator pass every case and
 * agree on every exact output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "corpus_emu.h"
#include "gpu/cuda_api.h"
#include "gpu/nvjitlink.h"

#ifndef GL_EMU_KERNEL_DIR
#define GL_EMU_KERNEL_DIR "emu-kernels"
#endif
#ifndef GL_TRITON_PTX_DIR
#define GL_TRITON_PTX_DIR "tests/emu/triton"
#endif

#define MAX_ALLOCS 16
#define MAX_MODS 4

typedef struct gpu {
  gl_cuda cu;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr allocs[MAX_ALLOCS];
  unsigned nallocs;
  CUmodule mods[MAX_MODS];
  unsigned nmods;
  bool njl_said; /* printed that nvJitLink compiled a PTX */
} gpu;

static int cu_fail(gpu *g, CUresult r, const char *what, char *err, size_t errlen) {
  char name[64];
  snprintf(err, errlen, "%s: %s (%s)", what, gl_cuda_error_name(&g->cu, r, name, sizeof name),
           gl_cuda_error_string(&g->cu, r));
  return -1;
}

static int gpu_alloc(void *self, size_t bytes, uint64_t *addr, char *err, size_t errlen) {
  gpu *g = self;
  if (g->nallocs == MAX_ALLOCS) {
    snprintf(err, errlen, "too many buffers");
    return -1;
  }
  CUdeviceptr p = 0;
  CUresult r = g->cu.cuMemAlloc(&p, bytes ? bytes : 1);
  if (r != CUDA_SUCCESS) return cu_fail(g, r, "cuMemAlloc", err, errlen);
  g->allocs[g->nallocs++] = p;
  *addr = p;
  return 0;
}

static int gpu_write(void *self, uint64_t addr, const void *src, size_t bytes, char *err,
                     size_t errlen) {
  gpu *g = self;
  CUresult r = bytes ? g->cu.cuMemcpyHtoD(addr, src, bytes) : CUDA_SUCCESS;
  return r == CUDA_SUCCESS ? 0 : cu_fail(g, r, "cuMemcpyHtoD", err, errlen);
}

static int gpu_read(void *self, void *dst, uint64_t addr, size_t bytes, char *err,
                    size_t errlen) {
  gpu *g = self;
  CUresult r = bytes ? g->cu.cuMemcpyDtoH(dst, addr, bytes) : CUDA_SUCCESS;
  return r == CUDA_SUCCESS ? 0 : cu_fail(g, r, "cuMemcpyDtoH", err, errlen);
}

static int gpu_load(void *self, const char *ptx, size_t len, void **mod, char *err,
                    size_t errlen) {
  gpu *g = self;
  (void)len; /* the driver reads PTX up to its NUL; gl_corpus_read_ptx adds one */
  if (g->nmods == MAX_MODS) {
    snprintf(err, errlen, "too many modules");
    return -1;
  }
  static char log[8192];
  log[0] = 0;
  CUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule m = NULL;
  CUresult r = g->cu.cuModuleLoadDataEx(&m, ptx, 2, opts, vals);
  if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
    /* PTX newer than the driver (Triton's sm_90a): compiled by nvJitLink
     * ($GL_NVJITLINK, else the usual places) for the PTX's own target, as
     * the worker does (src/backend/cuda_compat.c) */
    static gl_nvjitlink *nj;
    char why[2048];
    if (!nj) nj = gl_nvjitlink_load(getenv("GL_NVJITLINK"), why, sizeof why);
    unsigned va, vb;
    char target[32];
    uint8_t *cubin = NULL;
    size_t cubin_len = 0;
    if (!nj || gl_ptx_header((const uint8_t *)ptx, len, &va, &vb, target, sizeof target) != 0 ||
        gl_nvjitlink_compile(nj, (const uint8_t *)ptx, len, target, &cubin, &cubin_len, why,
                             sizeof why) != 0) {
      snprintf(err, errlen, "the driver refuses the PTX's ISA version, and nvJitLink %s: %s",
               nj ? "failed" : "is not found", why);
      return -1;
    }
    r = g->cu.cuModuleLoadDataEx(&m, cubin, 0, NULL, NULL);
    free(cubin);
    if (r == CUDA_SUCCESS && !g->njl_said) {
      unsigned a, b;
      gl_nvjitlink_version(nj, &a, &b);
      printf("corpus_gpu: PTX ISA %u.%u compiled by nvJitLink %u.%u for %s\n", va, vb, a, b,
             target);
      g->njl_said = true;
    }
  }
  if (r != CUDA_SUCCESS) {
    cu_fail(g, r, "cuModuleLoadDataEx", err, errlen);
    size_t w = strlen(err);
    if (log[0] && w + 3 < errlen) snprintf(err + w, errlen - w, ": %s", log);
    return -1;
  }
  g->mods[g->nmods++] = m;
  *mod = m;
  return 0;
}

static int gpu_launch(void *self, void *mod, const char *kernel, const uint32_t grid[3],
                      const uint32_t block[3], uint32_t shared_bytes, bool cooperative,
                      const uint32_t cluster[3], void **args, const size_t *sizes,
                      size_t nparams, char *err, size_t errlen) {
  gpu *g = self;
  CUfunction f = NULL;
  CUresult r = g->cu.cuModuleGetFunction(&f, (CUmodule)mod, kernel);
  if (r != CUDA_SUCCESS) return cu_fail(g, r, "cuModuleGetFunction", err, errlen);
  if (g->cu.cuFuncGetParamInfo) { /* CUDA 12.4+: check the case's parameter list */
    for (size_t i = 0; i <= nparams; i++) {
      size_t off = 0, sz = 0;
      r = g->cu.cuFuncGetParamInfo(f, i, &off, &sz);
      if (i == nparams) {
        if (r == CUDA_SUCCESS) {
          snprintf(err, errlen, "kernel %s has more than %zu parameters", kernel, nparams);
          return -1;
        }
      } else if (r != CUDA_SUCCESS || sz != sizes[i]) {
        snprintf(err, errlen, "kernel %s parameter %zu: %zu bytes, the case passes %zu", kernel,
                 i, r == CUDA_SUCCESS ? sz : 0, sizes[i]);
        return -1;
      }
    }
  }
  if (shared_bytes > 48 * 1024) { /* above the default: opt in (Triton's matmuls) */
    r = g->cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 (int)shared_bytes);
    if (r != CUDA_SUCCESS) return cu_fail(g, r, "cuFuncSetAttribute", err, errlen);
  }
  bool has_cluster = cluster[0] || cluster[1] || cluster[2];
  if (cooperative || has_cluster) {
    /* cuLaunchKernelEx with the cooperative and cluster-shape attributes */
    if (!g->cu.cuLaunchKernelEx) {
      snprintf(err, errlen, "the CUDA driver has no cuLaunchKernelEx (CUDA 12.0+), needed "
               "for %s launches", cooperative ? "cooperative" : "cluster");
      return -1;
    }
    CUlaunchAttribute attrs[2];
    memset(attrs, 0, sizeof attrs);
    unsigned nattrs = 0;
    if (cooperative) {
      attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
      attrs[nattrs].value.cooperative = 1;
      nattrs++;
    }
    if (has_cluster) {
      attrs[nattrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      attrs[nattrs].value.clusterDim.x = cluster[0];
      attrs[nattrs].value.clusterDim.y = cluster[1];
      attrs[nattrs].value.clusterDim.z = cluster[2];
      nattrs++;
    }
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = grid[0], cfg.gridDimY = grid[1], cfg.gridDimZ = grid[2];
    cfg.blockDimX = block[0], cfg.blockDimY = block[1], cfg.blockDimZ = block[2];
    cfg.sharedMemBytes = shared_bytes;
    cfg.hStream = NULL;
    cfg.attrs = attrs;
    cfg.numAttrs = nattrs;
    r = g->cu.cuLaunchKernelEx(&cfg, f, args, NULL);
    if (r != CUDA_SUCCESS) return cu_fail(g, r, "cuLaunchKernelEx", err, errlen);
  } else {
    r = g->cu.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                             shared_bytes, NULL, args, NULL);
    if (r != CUDA_SUCCESS) return cu_fail(g, r, "cuLaunchKernel", err, errlen);
  }
  r = g->cu.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) return cu_fail(g, r, "cuCtxSynchronize", err, errlen);
  return 0;
}

static void gpu_reset(void *self) {
  gpu *g = self;
  for (unsigned i = 0; i < g->nallocs; i++) g->cu.cuMemFree(g->allocs[i]);
  for (unsigned i = 0; i < g->nmods; i++) g->cu.cuModuleUnload(g->mods[i]);
  g->nallocs = g->nmods = 0;
}

static int gpu_open(gpu *g, gl_corpus_dev *dev, int *cc, char *err, size_t errlen) {
  memset(g, 0, sizeof *g);
  if (gl_cuda_load(&g->cu, err, errlen) != 0) return -1;
  CUresult r = g->cu.cuInit(0);
  if (r != CUDA_SUCCESS) return cu_fail(g, r, "cuInit", err, errlen);
  if ((r = g->cu.cuDeviceGet(&g->dev, 0)) != CUDA_SUCCESS)
    return cu_fail(g, r, "cuDeviceGet", err, errlen);
  if ((r = g->cu.cuDevicePrimaryCtxRetain(&g->ctx, g->dev)) != CUDA_SUCCESS)
    return cu_fail(g, r, "cuDevicePrimaryCtxRetain", err, errlen);
  if ((r = g->cu.cuCtxSetCurrent(g->ctx)) != CUDA_SUCCESS)
    return cu_fail(g, r, "cuCtxSetCurrent", err, errlen);
  int major = 0, minor = 0;
  g->cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev);
  g->cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev);
  *cc = major * 10 + minor;
  dev->self = g;
  dev->name = "gpu";
  dev->alloc = gpu_alloc;
  dev->write = gpu_write;
  dev->read = gpu_read;
  dev->load = gpu_load;
  dev->launch = gpu_launch;
  dev->reset = gpu_reset;
  return 0;
}

static bool selected(const char *name, int argc, char **argv) {
  bool any = false;
  for (int i = 2; i < argc; i++) {
    any = true;
    if (strcmp(argv[i], name) == 0) return true;
  }
  return !any;
}

typedef struct tally {
  unsigned cases, gpu_ok, emu_ok, n_exact, n_same;
} tally;

static void run_case(const gl_corpus_case *c, const char *dir, const char *arch,
                     const gl_corpus_dev *gdev, const gl_corpus_dev *edev, tally *t) {
  gl_corpus_inst inst;
  uint8_t *og[GL_CORPUS_MAX_OUTS] = {0}, *oe[GL_CORPUS_MAX_OUTS] = {0};
  char *ptx = NULL, err[1024], gmsg[1100], emsg[1100], dmsg[1024];
  size_t len = 0;
  bool gok = false, eok = false;
  gl_corpus_inst_build(c, &inst);
  if (!gl_corpus_runs_on(&inst, arch)) {
    printf("corpus_gpu: %s %s skipped (needs sm_%u)\n", c->name, arch, inst.min_sm);
    gl_corpus_inst_free(&inst);
    return;
  }
  t->cases++;
  if (gl_corpus_read_ptx(dir, arch, c->name, &ptx, &len) != 0) {
    printf("corpus_gpu: %s %s FAIL (cannot read %s/%s/%s.ptx)\n", c->name, arch, dir, arch,
           c->name);
    goto out;
  }
  if (gl_corpus_exec(&inst, gdev, ptx, len, og, err, sizeof err) != 0)
    snprintf(gmsg, sizeof gmsg, "FAIL: %s", err);
  else if (gl_corpus_check(&inst, og, err, sizeof err) != 0)
    snprintf(gmsg, sizeof gmsg, "FAIL: %s", err);
  else
    snprintf(gmsg, sizeof gmsg, "ok (%s)", err), gok = true;
  if (gl_corpus_exec(&inst, edev, ptx, len, oe, err, sizeof err) != 0)
    snprintf(emsg, sizeof emsg, "FAIL: %s", err);
  else if (gl_corpus_check(&inst, oe, err, sizeof err) != 0)
    snprintf(emsg, sizeof emsg, "FAIL: %s", err);
  else
    snprintf(emsg, sizeof emsg, "ok"), eok = true;
  if (og[0] && oe[0])
    gl_corpus_diff(&inst, og, oe, &t->n_exact, &t->n_same, dmsg, sizeof dmsg);
  else
    snprintf(dmsg, sizeof dmsg, "not compared");
  printf("corpus_gpu: %s %s gpu %s; emulator %s; gpu vs emulator: %s\n", c->name, arch, gmsg,
         emsg, dmsg);
  t->gpu_ok += gok;
  t->emu_ok += eok;
out:
  fflush(stdout);
  gl_corpus_outs_free(&inst, og);
  gl_corpus_outs_free(&inst, oe);
  gl_corpus_inst_free(&inst);
  free(ptx);
}

int main(int argc, char **argv) {
  bool triton = argc > 1 && strcmp(argv[1], "--triton") == 0;
  if (triton) { /* the rest as without it */
    argv++;
    argc--;
  }
  const char *dir = argc > 1 ? argv[1] : triton ? GL_TRITON_PTX_DIR : GL_EMU_KERNEL_DIR;
  if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf("usage: %s [--triton] [PTX_DIR] [CASE...]\n  PTX_DIR holds sm_75/ and sm_90/ "
           "(default %s), or with --triton sm_80/ and sm_90a/ (default %s)\n",
           argv[0], GL_EMU_KERNEL_DIR, GL_TRITON_PTX_DIR);
    return 0;
  }
  static gpu g;
  gl_corpus_dev gdev, edev;
  char err[1024];
  int cc = 0;
  if (gpu_open(&g, &gdev, &cc, err, sizeof err) != 0) {
    printf("corpus_gpu: no CUDA driver (%s)\n", err);
    return 2;
  }
  char name[256] = "";
  g.cu.cuDeviceGetName(name, sizeof name, g.dev);
  printf("corpus_gpu: %s, compute capability %d.%d, driver %d\n", name, cc / 10, cc % 10,
         g.cu.driver_version);
  gl_corpus_emu emu;
  if (gl_corpus_emu_init(&emu, &edev, 64u << 20, 1) != 0) {
    printf("corpus_gpu: cannot create the emulated device\n");
    return 1;
  }
  tally t = {0, 0, 0, 0, 0};
  const char *const *archs = triton ? (const char *const[]){"sm_80", "sm_90a"}
                                    : (const char *const[]){"sm_75", "sm_90"};
  const int *arch_cc = triton ? (const int[]){80, 90} : (const int[]){75, 90};
  const gl_corpus_case *cases = triton ? gl_corpus_triton_cases : gl_corpus_cases;
  size_t ncases = triton ? gl_corpus_triton_ncases : gl_corpus_ncases;
  for (size_t a = 0; a < 2; a++) {
    /* sm_90a: only compute capability 9.0 itself runs arch-specific PTX */
    if (cc < arch_cc[a] || (triton && a == 1 && cc != 90)) {
      printf("corpus_gpu: skipping %s PTX (the GPU is compute capability %d.%d)\n", archs[a],
             cc / 10, cc % 10);
      continue;
    }
    for (size_t i = 0; i < ncases; i++)
      if (selected(cases[i].name, argc, argv))
        run_case(&cases[i], dir, archs[a], &gdev, &edev, &t);
  }
  gl_corpus_emu_fini(&emu);
  g.cu.cuDevicePrimaryCtxRelease(g.dev);
  printf("corpus_gpu: emulator passed %u/%u cases against the references\n", t.emu_ok, t.cases);
  printf("corpus_gpu: %u/%u cases passed; emulator bit-identical to GPU on %u/%u exact outputs\n",
         t.gpu_ok, t.cases, t.n_same, t.n_exact);
  return t.gpu_ok == t.cases && t.emu_ok == t.cases && t.n_same == t.n_exact && t.cases ? 0 : 1;
}
