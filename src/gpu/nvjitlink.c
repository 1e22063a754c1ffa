/*
 * nvjitlink.c - nvJitLink loaded at run time (nvjitlink.h).
 */
#include "gpu/nvjitlink.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* nvJitLink's own types, as nvJitLink.h declares them. */
typedef struct nvJitLink *nvJitLinkHandle;
typedef int nvJitLinkResult;       /* NVJITLINK_SUCCESS = 0 */
enum { NVJITLINK_INPUT_PTX = 2 };  /* nvJitLinkInputType */

struct gl_nvjitlink {
  void *dl;
  char path[512];
  unsigned major, minor;
  nvJitLinkResult (*create)(nvJitLinkHandle *, uint32_t, const char **);
  nvJitLinkResult (*destroy)(nvJitLinkHandle *);
  nvJitLinkResult (*add_data)(nvJitLinkHandle, int, const void *, size_t, const char *);
  nvJitLinkResult (*complete)(nvJitLinkHandle);
  nvJitLinkResult (*cubin_size)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*cubin)(nvJitLinkHandle, void *);
  nvJitLinkResult (*log_size)(nvJitLinkHandle, size_t *);
  nvJitLinkResult (*log)(nvJitLinkHandle, char *);
  nvJitLinkResult (*version)(unsigned *, unsigned *);
};

/* Opens one candidate file; NULL (and a note in tried) when it fails. */
static gl_nvjitlink *try_open(const char *file, char *tried, size_t tlen) {
  void *dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    size_t n = strlen(tried);
    if (n + 4 < tlen) snprintf(tried + n, tlen - n, "%s%s", n ? "; " : "", file);
    return NULL;
  }
  gl_nvjitlink *nj = calloc(1, sizeof *nj);
  if (!nj) {
    dlclose(dl);
    return NULL;
  }
  nj->dl = dl;
  snprintf(nj->path, sizeof nj->path, "%s", file);
  /* dlsym returns void *: copied into the typed pointers (no cast from
   * an object pointer to a function pointer) */
#define SYM(field, name)                                                                        \
  do {                                                                                          \
    void *p_ = dlsym(dl, name);                                                                 \
    memcpy(&nj->field, &p_, sizeof p_);                                                         \
  } while (0)
  SYM(create, "nvJitLinkCreate");
  SYM(destroy, "nvJitLinkDestroy");
  SYM(add_data, "nvJitLinkAddData");
  SYM(complete, "nvJitLinkComplete");
  SYM(cubin_size, "nvJitLinkGetLinkedCubinSize");
  SYM(cubin, "nvJitLinkGetLinkedCubin");
  SYM(log_size, "nvJitLinkGetErrorLogSize");
  SYM(log, "nvJitLinkGetErrorLog");
  SYM(version, "nvJitLinkVersion");
#undef SYM
  if (!nj->create || !nj->destroy || !nj->add_data || !nj->complete || !nj->cubin_size ||
      !nj->cubin || !nj->log_size || !nj->log) {
    size_t n = strlen(tried);
    if (n + 4 < tlen)
      snprintf(tried + n, tlen - n, "%s%s (not nvJitLink: an entry point is missing)",
               n ? "; " : "", file);
    dlclose(dl);
    free(nj);
    return NULL;
  }
  if (!nj->version || nj->version(&nj->major, &nj->minor) != 0) nj->major = nj->minor = 0;
  return nj;
}

/* The first libnvJitLink.so* a glob pattern names (newest name last in
 * glob's order: try from the end). */
static gl_nvjitlink *try_glob(const char *pattern, char *tried, size_t tlen) {
  glob_t g;
  if (glob(pattern, 0, NULL, &g) != 0) return NULL;
  gl_nvjitlink *nj = NULL;
  for (size_t i = g.gl_pathc; i > 0 && !nj; i--) nj = try_open(g.gl_pathv[i - 1], tried, tlen);
  globfree(&g);
  return nj;
}

gl_nvjitlink *gl_nvjitlink_load(const char *path, char *err, size_t errlen) {
  char tried[1536] = "";
  gl_nvjitlink *nj = NULL;
  char pat[600];
  if (path && path[0]) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
      snprintf(pat, sizeof pat, "%s/libnvJitLink.so*", path);
      nj = try_glob(pat, tried, sizeof tried);
      if (!nj) {
        size_t n = strlen(tried);
        snprintf(tried + n, sizeof tried - n, "%sno libnvJitLink.so* in %s", n ? "; " : "", path);
      }
    } else {
      nj = try_open(path, tried, sizeof tried);
    }
    if (!nj) {
      snprintf(err, errlen, "nvJitLink: cannot load %s (%s)", path, tried);
      return NULL;
    }
    return nj;
  }
  const char *home = getenv("CUDA_HOME");
  if (home && home[0]) {
    snprintf(pat, sizeof pat, "%s/lib64/libnvJitLink.so*", home);
    if ((nj = try_glob(pat, tried, sizeof tried))) return nj;
  }
  static const char *const patterns[] = {
      "/usr/local/cuda/lib64/libnvJitLink.so*",
      "/usr/lib/python3*/*-packages/nvidia/cu1[0-9]/lib/libnvJitLink.so*",
      "/usr/local/lib/python3*/*-packages/nvidia/cu1[0-9]/lib/libnvJitLink.so*",
      "/usr/lib/python3*/*-packages/nvidia/nvjitlink/lib/libnvJitLink.so*",
      "/usr/local/lib/python3*/*-packages/nvidia/nvjitlink/lib/libnvJitLink.so*",
      "/opt/*/lib/python3*/*-packages/nvidia/cu1[0-9]/lib/libnvJitLink.so*",
      "/opt/*/lib/python3*/*-packages/nvidia/nvjitlink/lib/libnvJitLink.so*",
  };
  for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++)
    if ((nj = try_glob(patterns[i], tried, sizeof tried))) return nj;
  if ((nj = try_open("libnvJitLink.so.13", tried, sizeof tried))) return nj;
  if ((nj = try_open("libnvJitLink.so.12", tried, sizeof tried))) return nj;
  snprintf(err, errlen,
           "nvJitLink not found (tried the CUDA toolkit's lib64, pip's nvidia-nvjitlink folders "
           "and libnvJitLink.so.13/.12 by name)");
  return NULL;
}

void gl_nvjitlink_free(gl_nvjitlink *nj) {
  if (!nj) return;
  dlclose(nj->dl);
  free(nj);
}

void gl_nvjitlink_version(const gl_nvjitlink *nj, unsigned *major, unsigned *minor) {
  *major = nj ? nj->major : 0;
  *minor = nj ? nj->minor : 0;
}

const char *gl_nvjitlink_path(const gl_nvjitlink *nj) { return nj ? nj->path : ""; }

int gl_nvjitlink_compile(gl_nvjitlink *nj, const uint8_t *ptx, size_t len, const char *arch,
                         uint8_t **cubin, size_t *cubin_len, char *err, size_t errlen) {
  *cubin = NULL;
  *cubin_len = 0;
  char opt_arch[64];
  snprintf(opt_arch, sizeof opt_arch, "-arch=%s", arch);
  const char *opts[] = {opt_arch};
  nvJitLinkHandle h = NULL;
  const char *what = "nvJitLinkCreate";
  nvJitLinkResult r = nj->create(&h, 1, opts);
  if (r == 0) {
    what = "nvJitLinkAddData (PTX)";
    /* PTX text with a NUL after it: copy, so the caller's need not have one */
    char *text = malloc(len + 1);
    if (!text) {
      nj->destroy(&h);
      snprintf(err, errlen, "nvJitLink: out of memory");
      return -1;
    }
    memcpy(text, ptx, len);
    text[len] = 0;
    r = nj->add_data(h, NVJITLINK_INPUT_PTX, text, len + 1, "module.ptx");
    free(text);
  }
  if (r == 0) {
    what = "nvJitLinkComplete";
    r = nj->complete(h);
  }
  size_t n = 0;
  if (r == 0) {
    what = "nvJitLinkGetLinkedCubinSize";
    r = nj->cubin_size(h, &n);
  }
  if (r == 0 && n > 0) {
    *cubin = malloc(n);
    if (!*cubin) {
      nj->destroy(&h);
      snprintf(err, errlen, "nvJitLink: out of memory for a %zu-byte cubin", n);
      return -1;
    }
    what = "nvJitLinkGetLinkedCubin";
    r = nj->cubin(h, *cubin);
  }
  if (r == 0 && n > 0) {
    *cubin_len = n;
    nj->destroy(&h);
    return 0;
  }
  free(*cubin);
  *cubin = NULL;
  char log[1024] = "";
  size_t ls = 0;
  if (h && nj->log_size(h, &ls) == 0 && ls > 1) {
    char *full = malloc(ls + 1);
    if (full && nj->log(h, full) == 0) {
      full[ls] = 0;
      snprintf(log, sizeof log, "%s", full);
      for (char *p = log + strlen(log); p > log && isspace((unsigned char)p[-1]);) *--p = 0;
    }
    free(full);
  }
  if (h) nj->destroy(&h);
  snprintf(err, errlen, "nvJitLink %u.%u (%s): %s failed (error %d)%s%s", nj->major, nj->minor,
           arch, what, r, log[0] ? ": " : "", log);
  return -1;
}
