/*
 * module.c - modules and functions: cuModuleLoadData and its kin load a
 * PTX, cubin or fatbin image into the session (MODULE_LOAD, which the
 * daemon caches by content); cuModuleGetFunction looks a kernel up once
 * (FUNC_INFO) and keeps its attributes and parameter sizes, which
 * cuLaunchKernel needs to carry kernelParams.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/entry.h"
#include "cuda/image.h"

static bool mod_ok(CUmodule m) {
  if (!m) return false;
  for (size_t i = 0; i < gl_cu.nmods; i++)
    if (gl_cu.mods[i] == m) return m->magic == GL_CU_MODULE_MAGIC;
  return false;
}

/* Loads size bytes of image (under the lock, session open). */
static CUresult load(const char *call, CUmodule *out, const void *image, size_t size,
                     char *log, size_t loglen) {
  if (gl_cu.nmods == gl_cu.cap_mods) {
    size_t n = gl_cu.cap_mods ? gl_cu.cap_mods * 2 : 16;
    void *q = realloc(gl_cu.mods, n * sizeof *gl_cu.mods);
    if (!q) return CUDA_ERROR_OUT_OF_MEMORY;
    gl_cu.mods = q;
    gl_cu.cap_mods = n;
  }
  struct CUmod_st *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  gpulease_error err;
  if (gpulease_module_load(gl_cu.session, image, size, GPULEASE_IMAGE_AUTO, &m->module, NULL,
                           &err) != GPULEASE_OK) {
    free(m);
    if (log && loglen) snprintf(log, loglen, "%s", err.message);
    return gl_cu_fail(call, &err);
  }
  m->magic = GL_CU_MODULE_MAGIC;
  gl_cu.mods[gl_cu.nmods++] = m;
  if (gl_cu_image_may_print(image, size)) gl_cu_kernel_output_on();
  *out = m;
  return CUDA_SUCCESS;
}

static CUresult load_image(const char *call, CUmodule *module, const void *image, char *log,
                           size_t loglen) {
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  size_t size = 0;
  const void *bytes = gl_cu_image_span(image, &size);
  if (!bytes) return CUDA_ERROR_INVALID_IMAGE;
  GL_CU_ENTER_CTX();
  return gl_cu_leave(load(call, module, bytes, size, log, loglen));
}

GL_CU_API CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  return load_image("cuModuleLoadData", module, image, NULL, 0);
}

GL_CU_API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin);
CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) {
  return load_image("cuModuleLoadFatBinary", module, fatCubin, NULL, 0);
}

/* The JIT options a caller passes are the node's business, but for the
 * logs: the error log gets the daemon's message (with the JIT's log). */
GL_CU_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                                      unsigned int numOptions, CUjit_option *options,
                                      void **optionValues);
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            CUjit_option *options, void **optionValues) {
  char *log = NULL;
  size_t loglen = 0;
  for (unsigned i = 0; options && optionValues && i < numOptions; i++) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) log = optionValues[i];
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      loglen = (size_t)(uintptr_t)optionValues[i];
  }
  if (log && loglen) log[0] = 0;
  CUresult r = load_image("cuModuleLoadDataEx", module, image, log, loglen);
  for (unsigned i = 0; options && optionValues && i < numOptions; i++)
    if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES) optionValues[i] = (void *)(uintptr_t)0;
  return r;
}

GL_CU_API CUresult cuModuleLoad(CUmodule *module, const char *fname);
CUresult cuModuleLoad(CUmodule *module, const char *fname) {
  if (!module || !fname) return CUDA_ERROR_INVALID_VALUE;
  FILE *f = fopen(fname, "rb");
  if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 65536 + 1 > cap) {
      cap = cap ? cap * 2 : 1 << 20;
      char *q = realloc(buf, cap);
      if (!q) {
        free(buf);
        fclose(f);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      buf = q;
    }
    size_t n = fread(buf + len, 1, 65536, f);
    len += n;
    if (n == 0) break;
  }
  fclose(f);
  buf[len] = 0; /* a PTX file is text: NUL-terminated here */
  bool text = memcmp(buf, "\177ELF", 4) != 0 && len >= 4 &&
              !(buf[0] == 0x50 && (unsigned char)buf[3] == 0xBA);
  CUresult r;
  gl_cu_lock();
  r = gl_cu_need_session();
  if (r == CUDA_SUCCESS) r = load("cuModuleLoad", module, buf, text ? len + 1 : len, NULL, 0);
  gl_cu_unlock();
  free(buf);
  return r;
}

GL_CU_API CUresult cuModuleUnload(CUmodule hmod);
CUresult cuModuleUnload(CUmodule hmod) {
  GL_CU_ENTER();
  if (!mod_ok(hmod)) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  for (size_t i = 0; i < gl_cu.nmods; i++)
    if (gl_cu.mods[i] == hmod) gl_cu.mods[i] = gl_cu.mods[--gl_cu.nmods];
  gpulease_error err;
  gpulease_status st = gpulease_module_unload(gl_cu.session, hmod->module, &err);
  for (struct CUfunc_st *f = hmod->funcs, *next; f; f = next) {
    next = f->next;
    f->magic = 0;
    free(f);
  }
  hmod->magic = 0;
  free(hmod);
  return gl_cu_leave(st == GPULEASE_OK ? CUDA_SUCCESS : gl_cu_fail("cuModuleUnload", &err));
}

GL_CU_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
  if (strlen(name) >= sizeof(((struct CUfunc_st *)0)->name)) return CUDA_ERROR_NOT_FOUND;
  GL_CU_ENTER();
  if (!mod_ok(hmod)) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  for (struct CUfunc_st *f = hmod->funcs; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *hfunc = f;
      return gl_cu_leave(CUDA_SUCCESS);
    }
  struct CUfunc_st *f = calloc(1, sizeof *f);
  if (!f) return gl_cu_leave(CUDA_ERROR_OUT_OF_MEMORY);
  gpulease_func_info_init(&f->info);
  gpulease_error err;
  if (gpulease_function_get(gl_cu.session, hmod->module, name, &f->function, &f->info, &err) !=
      GPULEASE_OK) {
    free(f);
    return gl_cu_leave(gl_cu_fail("cuModuleGetFunction", &err));
  }
  f->magic = GL_CU_FUNC_MAGIC;
  f->mod = hmod;
  snprintf(f->name, sizeof f->name, "%s", name);
  f->next = hmod->funcs;
  hmod->funcs = f;
  *hfunc = f;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (!hfunc || hfunc->magic != GL_CU_FUNC_MAGIC) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  const gpulease_func_info *i = &hfunc->info;
  switch ((int)attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = (int)i->max_threads_per_block; break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = (int)i->static_shared_bytes; break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = (int)i->const_bytes; break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = (int)i->local_bytes; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = (int)i->num_regs; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = (int)i->ptx_version; break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = (int)i->binary_version; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *pi = 49152 - (int)i->static_shared_bytes; /* the default opt-in, which the shim keeps */
    break;
  default:
    gl_cu_unlock();
    return gl_cu_unsupported("cuFuncGetAttribute", "that attribute");
  }
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  GL_CU_ENTER();
  if (!hfunc || hfunc->magic != GL_CU_FUNC_MAGIC) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  int dflt = 49152 - (int)hfunc->info.static_shared_bytes;
  gl_cu_unlock();
  /* Asking for no more than the default changes nothing. */
  if ((int)attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES && value >= 0 &&
      value <= dflt)
    return CUDA_SUCCESS;
  return gl_cu_unsupported("cuFuncSetAttribute",
                           "only CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES up to the 48 KiB "
                           "default");
}

GL_CU_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config);
CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  (void)config; /* a preference the driver may ignore */
  if (!hfunc || hfunc->magic != GL_CU_FUNC_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc);
CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc) {
  if (!hmod) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (!hfunc || hfunc->magic != GL_CU_FUNC_MAGIC) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  *hmod = hfunc->mod;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuFuncGetName(const char **name, CUfunction hfunc);
CUresult cuFuncGetName(const char **name, CUfunction hfunc) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (!hfunc || hfunc->magic != GL_CU_FUNC_MAGIC) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  *name = hfunc->name;
  return gl_cu_leave(CUDA_SUCCESS);
}

/* Modules load whole (MODULE_LOAD compiles every kernel): eager loading. */
GL_CU_API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode);
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

/* Libraries: a library is a module, loaded at once (the shim's context
 * is the lease's only one), and its kernels are the module's functions. */
static bool lib_ok(CUlibrary l) { return l && l->magic == GL_CU_LIB_MAGIC && mod_ok(l->mod); }

/* Library options the shim takes: the host table of functions and data
 * (it keeps none) and whether the caller keeps its image (the daemon has
 * the module's own copy). */
static CUresult lib_options(const char *call, const CUlibraryOption *opts, unsigned n) {
  for (unsigned i = 0; opts && i < n; i++)
    if ((int)opts[i] != 0 /* HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE */ &&
        (int)opts[i] != 1 /* BINARY_IS_PRESERVED */) {
      char why[64];
      snprintf(why, sizeof why, "library option %d", (int)opts[i]);
      return gl_cu_unsupported(call, why);
    }
  return CUDA_SUCCESS;
}

static CUresult lib_new(CUlibrary *library, CUmodule mod) {
  struct CUlib_st *l = calloc(1, sizeof *l);
  if (!l) {
    cuModuleUnload(mod);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  l->magic = GL_CU_LIB_MAGIC;
  l->mod = mod;
  *library = l;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                     CUjit_option *jitOptions, void **jitOptionsValues,
                                     unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                     void **libraryOptionValues, unsigned int numLibraryOptions);
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                           void **jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions) {
  (void)libraryOptionValues;
  if (!library || !code) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = lib_options("cuLibraryLoadData", libraryOptions, numLibraryOptions);
  if (r != CUDA_SUCCESS) return r;
  CUmodule mod = NULL;
  r = cuModuleLoadDataEx(&mod, code, numJitOptions, jitOptions, jitOptionsValues);
  return r == CUDA_SUCCESS ? lib_new(library, mod) : r;
}

GL_CU_API CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                         CUjit_option *jitOptions, void **jitOptionsValues,
                                         unsigned int numJitOptions,
                                         CUlibraryOption *libraryOptions,
                                         void **libraryOptionValues,
                                         unsigned int numLibraryOptions);
CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                               void **jitOptionsValues, unsigned int numJitOptions,
                               CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions) {
  (void)jitOptions;
  (void)jitOptionsValues;
  (void)numJitOptions;
  (void)libraryOptionValues;
  if (!library || !fileName) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = lib_options("cuLibraryLoadFromFile", libraryOptions, numLibraryOptions);
  if (r != CUDA_SUCCESS) return r;
  CUmodule mod = NULL;
  r = cuModuleLoad(&mod, fileName);
  return r == CUDA_SUCCESS ? lib_new(library, mod) : r;
}

GL_CU_API CUresult cuLibraryUnload(CUlibrary library);
CUresult cuLibraryUnload(CUlibrary library) {
  if (!library || library->magic != GL_CU_LIB_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  gl_cu_lock();
  bool live = mod_ok(library->mod);
  gl_cu_unlock();
  /* Its module went with a context that ended: nothing left to unload. */
  CUresult r = live ? cuModuleUnload(library->mod) : CUDA_SUCCESS;
  library->magic = 0;
  free(library);
  return r;
}

GL_CU_API CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library);
CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library) {
  if (!pMod) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (!lib_ok(library)) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  *pMod = library->mod;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  if (!pKernel || !name) return CUDA_ERROR_INVALID_VALUE;
  gl_cu_lock();
  bool ok = lib_ok(library);
  gl_cu_unlock();
  if (!ok) return CUDA_ERROR_INVALID_HANDLE;
  CUfunction f = NULL;
  CUresult r = cuModuleGetFunction(&f, library->mod, name);
  if (r == CUDA_SUCCESS) *pKernel = (CUkernel)f;
  return r;
}

static bool kernel_ok(CUkernel k) {
  return k && ((struct CUfunc_st *)k)->magic == GL_CU_FUNC_MAGIC;
}

GL_CU_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  if (!pFunc) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER_CTX();
  if (!kernel_ok(kernel)) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  *pFunc = (CUfunction)kernel;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel);
CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel) {
  (void)pLib;
  (void)kernel;
  return gl_cu_unsupported("cuKernelGetLibrary", "the shim keeps no kernel's library");
}

GL_CU_API CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                        CUdevice dev);
CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                              CUdevice dev) {
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

GL_CU_API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                        CUdevice dev);
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                              CUdevice dev) {
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  return cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

GL_CU_API CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev);
CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  return cuFuncSetCacheConfig((CUfunction)kernel, config);
}

GL_CU_API CUresult cuKernelGetName(const char **name, CUkernel hfunc);
CUresult cuKernelGetName(const char **name, CUkernel hfunc) {
  return cuFuncGetName(name, (CUfunction)hfunc);
}

/* A module's globals (__device__, __constant__ variables): the protocol
 * has no op that gives a global's device address, so the runtime's
 * cudaMemcpyToSymbol, cudaGetSymbolAddress and their kin fail cleanly;
 * the module's kernels run. */
#define GL_CU_NO_GLOBALS                                                                  \
  "no protocol op gives a module global's device address (cudaMemcpyToSymbol, "          \
  "cudaGetSymbolAddress); the module's kernels run"
GL_CU_API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                        const char *name);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                              const char *name) {
  (void)dptr;
  (void)bytes;
  (void)hmod;
  (void)name;
  return gl_cu_unsupported("cuModuleGetGlobal", GL_CU_NO_GLOBALS);
}

GL_CU_API CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                      const char *name);
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                            const char *name) {
  (void)dptr;
  (void)bytes;
  (void)library;
  (void)name;
  return gl_cu_unsupported("cuLibraryGetGlobal", GL_CU_NO_GLOBALS);
}
