/*
 * cuda_compat.c - PTX newer than the driver, through nvJitLink
 * (cuda_compat.h).
 */
#include "backend/cuda_compat.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gpu/nvjitlink.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static gl_nvjitlink *g_nj; /* loaded once a worker, kept */
static bool g_tried;
static char g_why[640]; /* why there is none */

void gl_cuda_compat_preload(const char *path) {
  if (!path || !path[0]) return;
  pthread_mutex_lock(&g_mu);
  if (!g_tried) {
    g_nj = gl_nvjitlink_load(path, g_why, sizeof g_why);
    g_tried = true;
    if (g_nj) {
      unsigned a, b;
      gl_nvjitlink_version(g_nj, &a, &b);
      GL_DEBUG("nvJitLink %u.%u loaded from %s", a, b, gl_nvjitlink_path(g_nj));
    } else {
      GL_WARN("%s", g_why);
    }
  }
  pthread_mutex_unlock(&g_mu);
}

static gl_nvjitlink *nvjitlink(void) {
  pthread_mutex_lock(&g_mu);
  if (!g_tried) {
    g_nj = gl_nvjitlink_load(NULL, g_why, sizeof g_why);
    g_tried = true;
  }
  gl_nvjitlink *nj = g_nj;
  pthread_mutex_unlock(&g_mu);
  return nj;
}

void gl_cuda_driver_max_ptx(int v, unsigned *major, unsigned *minor) {
  /* CUDA 12.0 took ISA 8.0, each 12.x minor one more up to 12.5 (8.5);
   * 12.6 kept 8.5; 12.8: 8.7; 12.9: 8.8; 13.0: 9.0; 13.x: 9.x. */
  static const struct {
    int driver;
    unsigned major, minor;
  } table[] = {
      {13000, 9, 0}, {12090, 8, 8}, {12080, 8, 7}, {12060, 8, 5}, {12050, 8, 5},
      {12040, 8, 4}, {12030, 8, 3}, {12020, 8, 2}, {12010, 8, 1}, {12000, 8, 0},
  };
  *major = *minor = 0;
  if (v >= 13010) { /* 13.1 and later: 9.<minor>, as 13.0 took 9.0 */
    *major = 9;
    *minor = (unsigned)((v % 1000) / 10);
    return;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (v >= table[i].driver) {
      *major = table[i].major;
      *minor = table[i].minor;
      return;
    }
}

void gl_cuda_compat_nvjitlink_max_ptx(unsigned *major, unsigned *minor) {
  *major = *minor = 0;
  gl_nvjitlink *nj = nvjitlink();
  if (!nj) return;
  unsigned a, b;
  gl_nvjitlink_version(nj, &a, &b);
  /* A CUDA release's ISA is the driver's of the same version. */
  gl_cuda_driver_max_ptx((int)(a * 1000 + b * 10), major, minor);
}

/* The newest ISA the driver's log names ("current version is '9.0'"), else
 * the release-notes table. */
static void driver_max(int driver_version, const char *log, char *out, size_t len) {
  const char *p = log ? strstr(log, "current version is '") : NULL;
  unsigned a = 0, b = 0;
  if (p && sscanf(p + 20, "%u.%u", &a, &b) == 2) {
    snprintf(out, len, "%u.%u", a, b);
    return;
  }
  gl_cuda_driver_max_ptx(driver_version, &a, &b);
  if (a) snprintf(out, len, "%u.%u", a, b);
  else snprintf(out, len, "(unknown)");
}

gpulease_status gl_cuda_compat_compile(const uint8_t *ptx, size_t len, int cc_major, int cc_minor,
                                       int driver_version, const char *driver_log,
                                       uint8_t **cubin, size_t *cubin_len, char *err,
                                       size_t errlen) {
  *cubin = NULL;
  *cubin_len = 0;
  unsigned va = 0, vb = 0;
  char target[32] = "";
  if (gl_ptx_header(ptx, len, &va, &vb, target, sizeof target) != 0) {
    snprintf(err, errlen, "the PTX has no .version line");
    return GPULEASE_LOAD_FAILED;
  }
  /* The device's SM, with "a" when the PTX targets its arch-specific set. */
  char arch[32];
  snprintf(arch, sizeof arch, "sm_%d%d", cc_major, cc_minor);
  size_t al = strlen(arch);
  if (strncmp(target, arch, al) == 0 && target[al] == 'a' && target[al + 1] == 0)
    snprintf(arch + al, sizeof arch - al, "a");
  char dmax[32];
  driver_max(driver_version, driver_log, dmax, sizeof dmax);
  char advice[512];
  snprintf(advice, sizeof advice,
           "send a cubin for %s (nvcc -cubin -arch=%s, or the compiler's cubin), PTX of ISA %s "
           "or older, or a fatbin holding either",
           arch, arch, dmax);
  gl_nvjitlink *nj = nvjitlink();
  if (!nj) {
    pthread_mutex_lock(&g_mu);
    char why[sizeof g_why];
    snprintf(why, sizeof why, "%s", g_why);
    pthread_mutex_unlock(&g_mu);
    snprintf(err, errlen,
             "PTX ISA %u.%u (.target %s) is newer than this node's driver takes (ISA %s, CUDA "
             "driver %d.%d), and nvJitLink, which would compile it, is not installed (%s; "
             "gpuleased --nvjitlink PATH, the CUDA toolkit, or pip install nvidia-nvjitlink): %s",
             va, vb, target[0] ? target : "?", dmax, driver_version / 1000,
             (driver_version % 1000) / 10, why, advice);
    return GPULEASE_LOAD_FAILED;
  }
  char why[2048];
  if (gl_nvjitlink_compile(nj, ptx, len, arch, cubin, cubin_len, why, sizeof why) != 0) {
    snprintf(err, errlen,
             "PTX ISA %u.%u (.target %s) is newer than this node's driver takes (ISA %s), and %s; "
             "%s",
             va, vb, target[0] ? target : "?", dmax, why, advice);
    return GPULEASE_LOAD_FAILED;
  }
  unsigned na, nb;
  gl_nvjitlink_version(nj, &na, &nb);
  GL_INFO("PTX ISA %u.%u (.target %s) compiled by nvJitLink %u.%u for %s: the driver takes up "
          "to ISA %s",
          va, vb, target, na, nb, arch, dmax);
  return GPULEASE_OK;
}
