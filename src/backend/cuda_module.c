/*
 * cuda_module.c - the CUDA backend's modules and functions: load_module
 * (PTX, cubin, fatbin; nvJitLink's cubin for PTX newer than the driver),
 * unload_module (it bumps the BURST graphs' generation), get_function, the
 * parameter sizes and attributes of a function, compile_ptx (cuLink),
 * tensor maps (cuTensorMapEncodeTiled), host memory registration and the
 * tag of the worker's JIT cache.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "backend/cuda_compat.h"
#include "backend/fatbin.h"
#include "backend/cuda_internal.h"

#define JIT_LOG_BYTES 16384

/* A compiler's logs, per call (several threads may load modules at once). */
typedef struct jit_logs {
  char error[JIT_LOG_BYTES];
  char info[JIT_LOG_BYTES];
} jit_logs;

/* ---- modules and functions ----------------------------------------------- */

/* Trims trailing whitespace of a NUL-terminated log in place. */
static void trim(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = 0;
}

static const char *format_name(gpulease_image_format format) {
  return format == GPULEASE_IMAGE_PTX     ? "PTX"
         : format == GPULEASE_IMAGE_CUBIN ? "cubin"
                                          : "fatbin";
}

/* Formats "<what>: CUDA_ERROR_X: <log>" (or the error's description when
 * the log is empty) into err. */
static void jit_msg(cuda_backend *c, CUresult r, const char *what, jit_logs *logs, char *err,
                    size_t errlen) {
  char name[64];
  gl_cuda_error_name(&c->cu, r, name, sizeof name);
  const char *log = logs->error[0] ? logs->error : logs->info;
  snprintf(err, errlen, "%s: %s: %s", what, name, log[0] ? log : gl_cuda_error_string(&c->cu, r));
}

/* Terminates and trims logs the driver wrote into. */
static void jit_finish(jit_logs *logs) {
  logs->error[sizeof logs->error - 1] = 0;
  logs->info[sizeof logs->info - 1] = 0;
  trim(logs->error);
  trim(logs->info);
}

gpulease_status gl_cuda__load_module(gl_backend *b, const uint8_t *image, size_t len,
                                     gpulease_image_format format, void **module, char *err,
                                     size_t errlen) {
  cuda_backend *c = as_cuda(b);
  /* PTX is NUL-terminated; cubin and fatbin carry their size (len is
   * used to read a fatbin's images when the driver refuses them all) */
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuModuleLoadDataEx: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LOAD_FAILED;
  }
  jit_logs *logs = calloc(1, sizeof *logs);
  if (!logs) {
    snprintf(err, errlen, "cuModuleLoadDataEx: out of memory for the JIT logs");
    return GPULEASE_LOAD_FAILED;
  }
  /* The driver writes the sizes it used back into vals: per call. */
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {logs->error, (void *)(uintptr_t)(sizeof logs->error - 1), logs->info,
                  (void *)(uintptr_t)(sizeof logs->info - 1)};
  CUmodule mod = NULL;
  r = c->cu.cuModuleLoadDataEx(&mod, image, (unsigned)(sizeof opts / sizeof opts[0]), opts, vals);
  jit_finish(logs);
  bool fatbin_refused = format == GPULEASE_IMAGE_FATBIN &&
                        (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_NO_BINARY_FOR_GPU);
  if ((r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION && format == GPULEASE_IMAGE_PTX) || fatbin_refused) {
    /* PTX newer than the driver (a fatbin's newest PTX for this GPU when
     * no image in it loads): nvJitLink's cubin, or advice */
    char *fptx = NULL;
    size_t fptx_len = 0;
    unsigned farch = 0;
    const uint8_t *ptx = image;
    size_t ptx_len = format == GPULEASE_IMAGE_PTX ? strlen((const char *)image) : 0;
    if (fatbin_refused) {
      char why[768];
      if (gl_fatbin_pick_ptx(image, len, (unsigned)(c->cc_major * 10 + c->cc_minor), &fptx,
                             &fptx_len, &farch, why, sizeof why) != 0) {
        char name[64];
        gl_cuda_error_name(&c->cu, r, name, sizeof name);
        snprintf(err, errlen, "cuModuleLoadDataEx (fatbin image): %s: no image in it runs on this "
                 "GPU (sm_%d%d): %s", name, c->cc_major, c->cc_minor, why);
        free(logs);
        return GPULEASE_LOAD_FAILED;
      }
      ptx = (const uint8_t *)fptx;
      ptx_len = fptx_len;
    }
    uint8_t *cubin = NULL;
    size_t cubin_len = 0;
    gpulease_status st = gl_cuda_compat_compile(ptx, ptx_len, c->cc_major, c->cc_minor,
                                                c->cu.driver_version, logs->error, &cubin,
                                                &cubin_len, err, errlen);
    free(fptx);
    free(logs);
    if (st != GPULEASE_OK) return st;
    r = c->cu.cuModuleLoadDataEx(&mod, cubin, 0, NULL, NULL);
    free(cubin);
    if (r != CUDA_SUCCESS) {
      gl_cuda__cu_msg(c, r, "cuModuleLoadDataEx (the cubin nvJitLink made of a PTX)", err, errlen);
      gl_cuda__note_failure(c, r);
      return GPULEASE_LOAD_FAILED;
    }
    if (fatbin_refused) GL_INFO("fatbin: its PTX for sm_%u compiled by nvJitLink", farch);
    *module = mod;
    return GPULEASE_OK;
  }
  if (r != CUDA_SUCCESS) {
    char what[64];
    snprintf(what, sizeof what, "cuModuleLoadDataEx (%s image)", format_name(format));
    jit_msg(c, r, what, logs, err, errlen);
    free(logs);
    gl_cuda__note_failure(c, r);
    return GPULEASE_LOAD_FAILED;
  }
  if (logs->info[0]) GL_DEBUG("JIT: %s", logs->info);
  free(logs);
  *module = mod;
  return GPULEASE_OK;
}

void gl_cuda__unload_module(gl_backend *b, void *module) {
  cuda_backend *c = as_cuda(b);
  if (!module || is_lost(c)) return;
  /* Before the unload: a module loaded after it cannot meet a BURST graph
   * of the old generation (its function handles may be the old ones). */
  atomic_fetch_add(&c->unload_gen, 1);
  if (gl_cuda__make_current(c) == CUDA_SUCCESS) c->cu.cuModuleUnload((CUmodule)module);
}

gpulease_status gl_cuda__get_function(gl_backend *b, void *module, const char *name,
                                      void **fn, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUfunction f = NULL;
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuModuleGetFunction(&f, (CUmodule)module, name);
  if (r == CUDA_ERROR_NOT_FOUND) {
    snprintf(err, errlen,
             "function '%s' not found in module (CUDA_ERROR_NOT_FOUND); C++ kernels need "
             "extern \"C\" or their mangled name",
             name);
    return GPULEASE_LAUNCH_FAILED;
  }
  if (r != CUDA_SUCCESS) {
    char what[GL_WIRE_MAX_KERNEL_NAME + 32];
    snprintf(what, sizeof what, "cuModuleGetFunction('%s')", name);
    gl_cuda__cu_msg(c, r, what, err, errlen);
    gl_cuda__note_failure(c, r);
    return GPULEASE_LAUNCH_FAILED;
  }
  *fn = f;
  return GPULEASE_OK;
}

gpulease_status gl_cuda__param_sizes(gl_backend *b, void *fn, size_t *sizes, size_t max,
                                     size_t *count, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  if (!c->cu.cuFuncGetParamInfo) {
    snprintf(err, errlen, "cuFuncGetParamInfo needs a CUDA 12.4 driver");
    return GPULEASE_UNSUPPORTED;
  }
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuFuncGetParamInfo: cuCtxSetCurrent", err, errlen);
    return GPULEASE_UNSUPPORTED;
  }
  size_t n = 0;
  for (;; n++) {
    size_t off = 0, size = 0;
    r = c->cu.cuFuncGetParamInfo((CUfunction)fn, n, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break; /* past the last parameter */
    if (r != CUDA_SUCCESS) {
      gl_cuda__cu_msg(c, r, "cuFuncGetParamInfo", err, errlen);
      return GPULEASE_UNSUPPORTED;
    }
    if (n < max) sizes[n] = size;
    if (n >= GL_BACKEND_ARG_SLOTS) break; /* cannot be: the parameter space is smaller */
  }
  *count = n;
  return GPULEASE_OK;
}

/* TENSORMAP_ENCODE: cuTensorMapEncodeTiled at the region's address +
 * offset, into a CUtensorMap of our own (64-byte aligned) copied to out.
 * The encoder's CUDA_ERROR_INVALID_VALUE is INVALID_ARGUMENT. */
gpulease_status gl_cuda__tensormap_encode(gl_backend *b, uint64_t offset, const gl_tmap_req *t,
                                          uint8_t out[GL_TMAP_BYTES], char *err,
                                          size_t errlen) {
  cuda_backend *c = as_cuda(b);
  _Static_assert(sizeof(CUtensorMap) == GL_TMAP_BYTES, "a CUtensorMap is 128 bytes");
  if (!c->cu.cuTensorMapEncodeTiled) {
    snprintf(err, errlen, "the CUDA driver (version %d) has no cuTensorMapEncodeTiled (CUDA "
             "12.0+)", c->cu.driver_version);
    return GPULEASE_UNSUPPORTED;
  }
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuTensorMapEncodeTiled: cuCtxSetCurrent", err, errlen);
    return GPULEASE_INTERNAL;
  }
  CUtensorMap map;
  memset(&map, 0, sizeof map);
  cuuint64_t dims[GL_TMAP_MAX_RANK], strides[GL_TMAP_MAX_RANK - 1];
  cuuint32_t box[GL_TMAP_MAX_RANK], es[GL_TMAP_MAX_RANK];
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK; i++) {
    dims[i] = t->global_dim[i];
    box[i] = t->box_dim[i];
    es[i] = t->element_strides[i];
    if (i < GL_TMAP_MAX_RANK - 1) strides[i] = t->global_strides[i];
  }
  r = c->cu.cuTensorMapEncodeTiled(
      &map, (CUtensorMapDataType)t->data_type, t->rank, (void *)(uintptr_t)(c->region + offset),
      dims, strides, box, es, (CUtensorMapInterleave)t->interleave,
      (CUtensorMapSwizzle)t->swizzle, (CUtensorMapL2promotion)t->l2_promotion,
      (CUtensorMapFloatOOBfill)t->oob_fill);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuTensorMapEncodeTiled", err, errlen);
    return r == CUDA_ERROR_INVALID_VALUE   ? GPULEASE_INVALID_ARGUMENT
           : r == CUDA_ERROR_NOT_SUPPORTED ? GPULEASE_UNSUPPORTED
                                           : GPULEASE_INTERNAL;
  }
  memcpy(out, &map, GL_TMAP_BYTES);
  return GPULEASE_OK;
}

gpulease_status gl_cuda__func_info(gl_backend *b, void *fn, gl_func_info_resp *out,
                                   char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  static const struct {
    CUfunction_attribute attr;
    const char *name;
    size_t offset;
  } k_attrs[] = {
      {CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS", offsetof(gl_func_info_resp, num_regs)},
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK",
       offsetof(gl_func_info_resp, max_threads_per_block)},
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES",
       offsetof(gl_func_info_resp, static_shared_bytes)},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES",
       offsetof(gl_func_info_resp, local_bytes)},
      {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "CONST_SIZE_BYTES",
       offsetof(gl_func_info_resp, const_bytes)},
      {CU_FUNC_ATTRIBUTE_PTX_VERSION, "PTX_VERSION", offsetof(gl_func_info_resp, ptx_version)},
      {CU_FUNC_ATTRIBUTE_BINARY_VERSION, "BINARY_VERSION",
       offsetof(gl_func_info_resp, binary_version)},
  };
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuFuncGetAttribute: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  for (size_t i = 0; i < sizeof k_attrs / sizeof k_attrs[0]; i++) {
    int v = 0;
    r = c->cu.cuFuncGetAttribute(&v, k_attrs[i].attr, (CUfunction)fn);
    if (r != CUDA_SUCCESS) {
      char what[96];
      snprintf(what, sizeof what, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_%s)", k_attrs[i].name);
      gl_cuda__cu_msg(c, r, what, err, errlen);
      gl_cuda__note_sticky(c, r);
      return GPULEASE_LAUNCH_FAILED;
    }
    uint32_t u = v > 0 ? (uint32_t)v : 0;
    memcpy((char *)out + k_attrs[i].offset, &u, sizeof u);
  }
  return GPULEASE_OK;
}

gpulease_status gl_cuda__compile_ptx(gl_backend *b, const uint8_t *ptx, size_t len,
                                     uint8_t **bin, size_t *bin_len, char *err,
                                     size_t errlen) {
  cuda_backend *c = as_cuda(b);
  *bin = NULL;
  *bin_len = 0;
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuLinkCreate: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LOAD_FAILED;
  }
  jit_logs *logs = calloc(1, sizeof *logs);
  if (!logs) {
    snprintf(err, errlen, "cuLinkCreate: out of memory for the JIT logs");
    return GPULEASE_LOAD_FAILED;
  }
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_TARGET_FROM_CUCONTEXT};
  void *vals[] = {logs->error, (void *)(uintptr_t)(sizeof logs->error - 1), logs->info,
                  (void *)(uintptr_t)(sizeof logs->info - 1), NULL};
  CUlinkState link = NULL;
  void *cubin = NULL;
  size_t cubin_len = 0;
  const char *what = "cuLinkCreate";
  gpulease_status st = GPULEASE_LOAD_FAILED;
  r = c->cu.cuLinkCreate((unsigned)(sizeof opts / sizeof opts[0]), opts, vals, &link);
  if (r != CUDA_SUCCESS) {
    link = NULL;
    goto fail;
  }
  /* PTX must be NUL-terminated: ptx[len] is, and the size counts it. */
  what = "cuLinkAddData (PTX)";
  r = c->cu.cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)(uintptr_t)ptx, len + 1, "module.ptx",
                          0, NULL, NULL);
  if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
    /* PTX newer than the driver: nvJitLink's cubin (the caller caches it),
     * or advice */
    jit_finish(logs);
    st = gl_cuda_compat_compile(ptx, len, c->cc_major, c->cc_minor, c->cu.driver_version,
                                logs->error, bin, bin_len, err, errlen);
    goto out;
  }
  if (r != CUDA_SUCCESS) goto fail;
  what = "cuLinkComplete";
  r = c->cu.cuLinkComplete(link, &cubin, &cubin_len);
  if (r != CUDA_SUCCESS) goto fail;
  if (!cubin || cubin_len == 0) {
    snprintf(err, errlen, "cuLinkComplete returned an empty image");
    goto out;
  }
  /* The image belongs to the link state: copy it out before destroying. */
  *bin = malloc(cubin_len);
  if (!*bin) {
    snprintf(err, errlen, "out of memory for a %zu-byte cubin", cubin_len);
    st = GPULEASE_INTERNAL;
    goto out;
  }
  memcpy(*bin, cubin, cubin_len);
  *bin_len = cubin_len;
  jit_finish(logs);
  if (logs->info[0]) GL_DEBUG("JIT (link): %s", logs->info);
  st = GPULEASE_OK;
  goto out;

fail:
  jit_finish(logs);
  jit_msg(c, r, what, logs, err, errlen);
  gl_cuda__note_failure(c, r);
out:
  if (link) c->cu.cuLinkDestroy(link);
  free(logs);
  return st;
}

gpulease_status gl_cuda__host_register(gl_backend *b, void *p, size_t len, char *err,
                                       size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuMemHostRegister(p, len, 0);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[96];
  snprintf(what, sizeof what, "cuMemHostRegister(%zu bytes)", len);
  gl_cuda__cu_msg(c, r, what, err, errlen);
  return GPULEASE_INTERNAL;
}

void gl_cuda__host_unregister(gl_backend *b, void *p) {
  cuda_backend *c = as_cuda(b);
  if (gl_cuda__make_current(c) == CUDA_SUCCESS) c->cu.cuMemHostUnregister(p);
}

void gl_cuda__cache_tag(gl_backend *b, char *buf, size_t len) {
  cuda_backend *c = as_cuda(b);
  if (!len) return;
  if (!c->have_device) {
    snprintf(buf, len, "cuda-unknown-drv%d", c->cu.driver_version);
    return;
  }
  snprintf(buf, len, "cuda-sm%d%d-drv%d", c->cc_major, c->cc_minor, c->cu.driver_version);
}
