/*
 * backend_emu.c - the worker backend on the emulated device; see
 * backend_emu.h and src/emu/emu.h.
 *
 * The emulator reports faults with the name of the CUDA error they stand
 * for, and this backend then behaves as the CUDA one does after a sticky
 * error: the context is lost, the worker exits after replying, and the
 * lease's next request gets a fresh worker with a zeroed region. Code that
 * handles faults is therefore tested the same way on both.
 *
 * Sessions. The emulator runs everything on the calling thread, so a
 * "stream" is only a token: launch_async runs the kernel before it returns
 * (launch_runs_inline) and the copies happen at once, which is a valid
 * schedule of an in-order stream. A kernel fault is remembered (the first
 * one's message) and reported by every later stream op, as CUDA reports a
 * sticky error on every call after it.
 *
 * Threads. Several sessions may load modules, launch kernels and copy
 * memory at once. Launches only read the device's state (its module list
 * and each module's code; the kernels' own stores into global memory are
 * the user's business, as on a GPU), so they run concurrently under the
 * read side of mod_lock. Loading or unloading a module changes the module
 * list that a launch walks and frees data that a running launch may map,
 * so those take the write side. An unload that finds launches running is
 * deferred instead of waiting (the module stays mapped, unreachable, until
 * the next holder of the lock frees it), so closing a session never waits
 * for another session's kernel; a load does wait for the running launches.
 * Copies touch only the region, which never moves, and need no lock.
 *
 * Shared leases (open_shared): the region is the whole capacity, and
 * region_add places the leases' ranges in it first fit (a list sorted by
 * offset, sizes rounded up to 256 bytes). The region is calloc'd, which
 * maps large sizes lazily, so host memory is spent only where leases
 * write. A range is zeroed when handed out: its whole pages are dropped
 * (madvise MADV_DONTNEED: they read as zero and cost nothing until written
 * again) and the partial pages at its ends cleared; region_remove drops
 * the whole pages too, giving the host memory back.
 */
#include "backend/backend_emu.h"
#include "backend/fatbin.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"
#include "emu/emu.h"

#define FAULT_BYTES 1024

/* A session's stream: ops run synchronously, so there is nothing to queue. */
typedef struct emu_stream {
  uint32_t magic;
} emu_stream;

#define EMU_STREAM_MAGIC 0x53454d55u /* "UMES" */

/* A shared lease's range of the region. */
typedef struct emu_range {
  uint64_t offset, bytes; /* bytes rounded up to RANGE_ALIGN */
} emu_range;

#define RANGE_ALIGN 256u

typedef struct emu_backend {
  gl_backend base;
  uint64_t capacity;
  unsigned threads;
  gl_emu_device *dev;
  uint64_t region_bytes;
  bool shared;               /* open_shared: ranges hold the leases */
  pthread_mutex_t ranges_mu; /* ranges */
  emu_range *ranges;         /* sorted by offset, disjoint */
  size_t nranges, cap_ranges;
  atomic_bool lost;
  pthread_mutex_t fault_mu; /* fault */
  char fault[FAULT_BYTES];  /* the first fault's message, once lost */
  pthread_rwlock_t mod_lock; /* launches read; module load/unload write */
  pthread_mutex_t pending_mu; /* pending */
  gl_emu_module **pending;    /* unloads deferred while launches ran */
  size_t npending, cap_pending;
  size_t out_limit;           /* kernel output a launch may leave (set_limits' printf FIFO) */
} emu_backend;

static emu_backend *as_emu(gl_backend *b) { return (emu_backend *)b; }

static bool is_lost(emu_backend *e) { return atomic_load(&e->lost); }

static const char k_lost_note[] = "; the lease's emulated context is lost: its next request "
                                  "gets a fresh one, with the region zeroed";

/* Marks the context lost by a kernel fault; the first message is kept. */
static void set_lost(emu_backend *e, const char *msg) {
  pthread_mutex_lock(&e->fault_mu);
  if (!is_lost(e)) {
    snprintf(e->fault, sizeof e->fault, "%s", msg);
    atomic_store(&e->lost, true);
  }
  pthread_mutex_unlock(&e->fault_mu);
}

/* The reply of any stream op after a fault: the fault, as CUDA reports a
 * sticky error on every later call. */
static gpulease_status fault_status(emu_backend *e, char *err, size_t errlen) {
  pthread_mutex_lock(&e->fault_mu);
  snprintf(err, errlen, "%s%s", e->fault, k_lost_note);
  pthread_mutex_unlock(&e->fault_mu);
  return GPULEASE_LAUNCH_FAILED;
}

/* ---- modules: the lock and deferred unloads -------------------------------- */

/* Frees the deferred unloads. Call with mod_lock held for writing. */
static void drain_pending_locked(emu_backend *e) {
  pthread_mutex_lock(&e->pending_mu);
  for (size_t i = 0; i < e->npending; i++) gl_emu_module_unload(e->dev, e->pending[i]);
  e->npending = 0;
  pthread_mutex_unlock(&e->pending_mu);
}

/* Frees the deferred unloads if nobody holds mod_lock now. */
static void try_drain(emu_backend *e) {
  pthread_mutex_lock(&e->pending_mu);
  size_t n = e->npending;
  pthread_mutex_unlock(&e->pending_mu);
  if (n == 0 || pthread_rwlock_trywrlock(&e->mod_lock) != 0) return;
  drain_pending_locked(e);
  pthread_rwlock_unlock(&e->mod_lock);
}

/* ---- probe and init ---------------------------------------------------------- */

static void fill_info(const emu_backend *e, gl_probe_gpu *g) {
  snprintf(g->uuid, sizeof g->uuid, "EMU-0");
  snprintf(g->name, sizeof g->name, "%s", GL_EMU_NAME);
  g->cc_major = GL_EMU_CC_MAJOR;
  g->cc_minor = GL_EMU_CC_MINOR;
  g->sm_count = e->threads;
  g->total_vram_bytes = e->capacity;
}

static gpulease_status emu_probe(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen) {
  (void)err, (void)errlen;
  memset(out, 0, sizeof *out);
  out->count = 1;
  fill_info(as_emu(b), &out->gpus[0]);
  return GPULEASE_OK;
}

/* ---- a driver's limit of contexts (tests) -------------------------------------- */

/* GL_EMU_CONTEXT_SLOTS=DIR:N: the emulated device refuses a context as a
 * driver that holds N contexts on a GPU does (cuDevicePrimaryCtxRetain's
 * CUDA_ERROR_OUT_OF_MEMORY) while N other workers hold one. A worker
 * holds a lock (flock) on one of DIR/slot-0 .. DIR/slot-(N-1) from its
 * context's start until the process ends, however it ends. Unset: no
 * limit. For the tests of the daemon's admission (lease_admit.h); the
 * worker sandbox must allow DIR (tests run --no-worker-sandbox). */
static int g_slot_fd = -1;

static gpulease_status take_context(char *err, size_t errlen) {
  const char *spec = getenv("GL_EMU_CONTEXT_SLOTS");
  if (!spec || !*spec || g_slot_fd >= 0) return GPULEASE_OK;
  const char *colon = strrchr(spec, ':');
  unsigned long n = colon ? strtoul(colon + 1, NULL, 10) : 0;
  char path[4200];
  for (unsigned long k = 0; colon && k < n && k < 4096; k++) {
    snprintf(path, sizeof path, "%.*s/slot-%lu", (int)(colon - spec), spec, k);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      g_slot_fd = fd; /* held until the process ends */
      return GPULEASE_OK;
    }
    close(fd);
  }
  snprintf(err, errlen,
           "cuDevicePrimaryCtxRetain(device 0): CUDA_ERROR_OUT_OF_MEMORY (the emulated driver "
           "holds %lu contexts, GL_EMU_CONTEXT_SLOTS)",
           n);
  return GPULEASE_CAPACITY_EXCEEDED;
}

/* WORKER_WARM: the context, no region yet. */
static gpulease_status emu_warm(gl_backend *b, uint32_t ordinal, char *err, size_t errlen) {
  (void)b, (void)ordinal;
  return take_context(err, errlen);
}

/* Opens the device with a region of `bytes` (init: the lease's;
 * open_shared: the whole capacity, for the leases' ranges). */
static gpulease_status open_region(emu_backend *e, uint32_t ordinal, uint64_t bytes,
                                   uint64_t *region_base, char *device_name, size_t name_len,
                                   char *err, size_t errlen) {
  if (e->dev) {
    snprintf(err, errlen, "the emulated device is open already");
    return GPULEASE_INTERNAL;
  }
  if (ordinal != 0) {
    snprintf(err, errlen, "the emulated device has ordinal 0 only, not %" PRIu32, ordinal);
    return GPULEASE_NO_DEVICE;
  }
  gpulease_status st = take_context(err, errlen);
  if (st != GPULEASE_OK) return st;
  e->dev = gl_emu_device_new(bytes);
  if (!e->dev) {
    snprintf(err, errlen, "cannot reserve %" PRIu64 " bytes of host memory for the emulated "
                          "device", bytes);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  if (e->out_limit) gl_emu_device_set_output_limit(e->dev, e->out_limit);
  e->region_bytes = bytes;
  *region_base = GL_EMU_REGION_BASE;
  snprintf(device_name, name_len, "%s", GL_EMU_NAME);
  return GPULEASE_OK;
}

static gpulease_status emu_init(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                                uint64_t *region_base, char *device_name, size_t name_len,
                                char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  if (!e->dev && ordinal == 0 && vram_bytes > e->capacity) {
    snprintf(err, errlen, "%" PRIu64 " bytes is more than the emulated device's %" PRIu64,
             vram_bytes, e->capacity);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  return open_region(e, ordinal, vram_bytes, region_base, device_name, name_len, err, errlen);
}

/* ---- shared leases ------------------------------------------------------------ */

static gpulease_status emu_open_shared(gl_backend *b, uint32_t ordinal, uint64_t *region_base,
                                       char *device_name, size_t name_len, char *err,
                                       size_t errlen) {
  emu_backend *e = as_emu(b);
  gpulease_status st =
      open_region(e, ordinal, e->capacity, region_base, device_name, name_len, err, errlen);
  if (st == GPULEASE_OK) e->shared = true;
  return st;
}

/* Zeroes len bytes of the region at offset: its whole pages by giving them
 * back to the host (they read as zero), the rest by memset. */
static void zero_range(emu_backend *e, uint64_t offset, uint64_t len) {
  uint8_t *p = gl_emu_device_ptr(e->dev, GL_EMU_REGION_BASE + offset, len);
  if (!p || !len) return;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + len) & ~(page - 1);
  if (lo < hi && madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) {
    memset(p, 0, lo - (uintptr_t)p);
    memset((void *)hi, 0, (uintptr_t)p + len - hi);
  } else {
    memset(p, 0, len);
  }
}

static gpulease_status emu_region_add(gl_backend *b, uint64_t bytes, uint64_t *offset,
                                      char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  if (!e->shared) {
    snprintf(err, errlen, "region_add needs a device opened for shared leases");
    return GPULEASE_INTERNAL;
  }
  if (bytes == 0) {
    snprintf(err, errlen, "a range of 0 bytes");
    return GPULEASE_INVALID_ARGUMENT;
  }
  uint64_t want = bytes <= UINT64_MAX - (RANGE_ALIGN - 1)
                      ? (bytes + RANGE_ALIGN - 1) & ~(uint64_t)(RANGE_ALIGN - 1)
                      : UINT64_MAX; /* fits nowhere */
  pthread_mutex_lock(&e->ranges_mu);
  /* First fit: the lowest gap between ranges (or after the last) that holds it. */
  uint64_t at = 0, used = 0;
  size_t i = 0;
  for (; i < e->nranges && e->ranges[i].offset - at < want; i++) {
    at = e->ranges[i].offset + e->ranges[i].bytes;
    used += e->ranges[i].bytes;
  }
  bool fits = i < e->nranges || (at <= e->capacity && e->capacity - at >= want);
  if (fits && e->nranges == e->cap_ranges) {
    size_t cap = e->cap_ranges ? 2 * e->cap_ranges : 16;
    emu_range *more = realloc(e->ranges, cap * sizeof *more);
    if (more) e->ranges = more, e->cap_ranges = cap;
  }
  gpulease_status st = GPULEASE_OK;
  if (!fits) {
    snprintf(err, errlen, "the emulated device has %" PRIu64 " bytes free, %" PRIu64 " requested",
             e->capacity - used, bytes);
    st = GPULEASE_CAPACITY_EXCEEDED;
  } else if (e->nranges == e->cap_ranges) {
    snprintf(err, errlen, "out of memory for the list of ranges");
    st = GPULEASE_INTERNAL;
  } else {
    memmove(&e->ranges[i + 1], &e->ranges[i], (e->nranges - i) * sizeof *e->ranges);
    e->ranges[i] = (emu_range){at, want};
    e->nranges++;
  }
  pthread_mutex_unlock(&e->ranges_mu);
  if (st != GPULEASE_OK) return st;
  /* No earlier lease's data may be visible, nor a stray store into the
   * free space. Outside the lock: the range is this lease's alone. */
  zero_range(e, at, want);
  *offset = at;
  return GPULEASE_OK;
}

static void emu_region_remove(gl_backend *b, uint64_t offset) {
  emu_backend *e = as_emu(b);
  pthread_mutex_lock(&e->ranges_mu);
  for (size_t i = 0; i < e->nranges; i++)
    if (e->ranges[i].offset == offset) {
      /* Gives the host memory back; under the lock, before the space can
       * be handed out again. */
      zero_range(e, offset, e->ranges[i].bytes);
      memmove(&e->ranges[i], &e->ranges[i + 1], (e->nranges - i - 1) * sizeof *e->ranges);
      e->nranges--;
      break;
    }
  pthread_mutex_unlock(&e->ranges_mu);
}

/* ---- modules and functions ------------------------------------------------- */

static gpulease_status emu_load(gl_backend *b, const uint8_t *image, size_t len,
                                gpulease_image_format format, void **module, char *err,
                                size_t errlen) {
  emu_backend *e = as_emu(b);
  if (format == GPULEASE_IMAGE_CUBIN) {
    snprintf(err, errlen, "the emulated device runs PTX only: a cubin image needs a real GPU "
                          "(send PTX, or a fatbin that holds PTX)");
    return GPULEASE_UNSUPPORTED;
  }
  char *ptx = NULL; /* a fatbin's PTX for the device's SM */
  if (format == GPULEASE_IMAGE_FATBIN) {
    size_t ptx_len = 0;
    unsigned arch = 0;
    char why[768];
    if (gl_fatbin_pick_ptx(image, len, GL_EMU_CC_MAJOR * 10 + GL_EMU_CC_MINOR, &ptx, &ptx_len,
                           &arch, why, sizeof why) != 0) {
      snprintf(err, errlen, "the emulated device runs PTX only, and %s", why);
      return GPULEASE_UNSUPPORTED;
    }
    image = (const uint8_t *)ptx;
    len = ptx_len;
  }
  gl_emu_module *m = NULL;
  pthread_rwlock_wrlock(&e->mod_lock);
  drain_pending_locked(e); /* their data space may be needed */
  gpulease_status st = gl_emu_module_load(e->dev, (const char *)image, len, &m, err, errlen);
  pthread_rwlock_unlock(&e->mod_lock);
  free(ptx);
  if (st == GPULEASE_OK) *module = m;
  return st;
}

static void emu_unload(gl_backend *b, void *module) {
  emu_backend *e = as_emu(b);
  if (!module) return;
  if (pthread_rwlock_trywrlock(&e->mod_lock) == 0) {
    gl_emu_module_unload(e->dev, module);
    drain_pending_locked(e);
    pthread_rwlock_unlock(&e->mod_lock);
    return;
  }
  /* Launches (or a load) are running: a launch may map this module's
   * data, so it is freed later, by the next holder of the lock. */
  pthread_mutex_lock(&e->pending_mu);
  bool queued = false;
  if (e->npending == e->cap_pending) {
    size_t cap = e->cap_pending ? e->cap_pending * 2 : 8;
    gl_emu_module **p = realloc(e->pending, cap * sizeof *p);
    if (p) {
      e->pending = p;
      e->cap_pending = cap;
    }
  }
  if (e->npending < e->cap_pending) {
    e->pending[e->npending++] = module;
    queued = true;
  }
  pthread_mutex_unlock(&e->pending_mu);
  if (!queued) { /* out of memory for the list: wait instead */
    pthread_rwlock_wrlock(&e->mod_lock);
    gl_emu_module_unload(e->dev, module);
    drain_pending_locked(e);
    pthread_rwlock_unlock(&e->mod_lock);
    return;
  }
  try_drain(e); /* the lock may have been released meanwhile */
}

static gpulease_status emu_get_function(gl_backend *b, void *module, const char *name,
                                        void **fn, char *err, size_t errlen) {
  (void)b;
  const gl_emu_function *f = gl_emu_module_function(module, name);
  if (!f) {
    snprintf(err, errlen, "no kernel named '%s' in the module (CUDA_ERROR_NOT_FOUND)", name);
    return GPULEASE_LAUNCH_FAILED;
  }
  *fn = (void *)f;
  return GPULEASE_OK;
}

static gpulease_status emu_param_sizes(gl_backend *b, void *fn, size_t *sizes, size_t max,
                                       size_t *count, char *err, size_t errlen) {
  (void)b, (void)err, (void)errlen;
  *count = gl_emu_function_params(fn, sizes, max);
  return GPULEASE_OK;
}

static gpulease_status emu_func_info(gl_backend *b, void *fn, gl_func_info_resp *out,
                                     char *err, size_t errlen) {
  (void)b, (void)err, (void)errlen;
  uint32_t shared = 0, local = 0, nregs = 0, max_threads = 0, target_sm = 0;
  gl_emu_function_info(fn, &shared, &local, &nregs);
  gl_emu_function_limits(fn, &max_threads, &target_sm, NULL);
  out->num_regs = nregs;
  out->max_threads_per_block = max_threads;
  out->static_shared_bytes = shared;
  out->local_bytes = local;
  out->const_bytes = 0; /* the IR keeps .const with .global: not told apart */
  /* As CUDA reports a JIT-compiled PTX kernel: PTX_VERSION is the PTX's
   * virtual architecture (.target sm_75 -> 75), BINARY_VERSION the device
   * it was compiled for. */
  out->ptx_version = target_sm;
  out->binary_version = GL_EMU_CC_MAJOR * 10 + GL_EMU_CC_MINOR;
  return GPULEASE_OK;
}

/* The launch sets aside host memory for the local memory of every block
 * its host threads run at once (launch.c: one block each, of at most 1024
 * threads), nothing before: the same accounting as a CUDA context's. */
static gpulease_status emu_local_memory(gl_backend *b, uint64_t *threads,
                                        uint32_t *free_per_thread, char *err, size_t errlen) {
  (void)err, (void)errlen;
  emu_backend *e = (emu_backend *)b;
  *threads = (uint64_t)e->threads * 1024u;
  *free_per_thread = 0;
  return GPULEASE_OK;
}

static gpulease_status emu_compile_ptx(gl_backend *b, const uint8_t *ptx, size_t len,
                                       uint8_t **bin, size_t *bin_len, char *err,
                                       size_t errlen) {
  (void)b;
  *bin = NULL;
  *bin_len = 0;
  /* The emulator runs PTX: the "binary" is the text, once it has passed
   * every check a load makes. A scratch device of its own does the load,
   * so nothing is shared with the lease's device. */
  size_t n = strnlen((const char *)ptx, len); /* a NUL inside ends the text */
  gl_emu_device *scratch = gl_emu_device_new(0);
  if (!scratch) {
    snprintf(err, errlen, "out of host memory to check the PTX");
    return GPULEASE_INTERNAL;
  }
  gl_emu_module *m = NULL;
  gpulease_status st = gl_emu_module_load(scratch, (const char *)ptx, n, &m, err, errlen);
  gl_emu_device_free(scratch);
  if (st != GPULEASE_OK) return st == GPULEASE_NO_MEMORY ? GPULEASE_LOAD_FAILED : st;
  uint8_t *copy = malloc(n + 1);
  if (!copy) {
    snprintf(err, errlen, "out of memory for a %zu-byte module", n);
    return GPULEASE_INTERNAL;
  }
  memcpy(copy, ptx, n);
  copy[n] = 0; /* not counted; load_module wants it there */
  *bin = copy;
  *bin_len = n;
  return GPULEASE_OK;
}

/* Host memory needs no locking for the emulated device. */
static gpulease_status emu_host_register(gl_backend *b, void *p, size_t len, char *err,
                                         size_t errlen) {
  (void)b, (void)p, (void)len, (void)err, (void)errlen;
  return GPULEASE_OK;
}

static void emu_host_unregister(gl_backend *b, void *p) { (void)b, (void)p; }

static void emu_cache_tag(gl_backend *b, char *buf, size_t len) {
  (void)b;
  if (len) snprintf(buf, len, "emu-sm%d%d-v1", GL_EMU_CC_MAJOR, GL_EMU_CC_MINOR);
}

/* ---- memory ------------------------------------------------------------------ */

/* Host pointer to [offset, offset+len) of the region, or NULL when that is
 * not entirely inside it. */
static uint8_t *region_ptr(emu_backend *e, uint64_t offset, uint64_t len) {
  if (!e->dev || offset > e->region_bytes || len > e->region_bytes - offset) return NULL;
  return gl_emu_device_ptr(e->dev, GL_EMU_REGION_BASE + offset, len);
}

static gpulease_status emu_write(gl_backend *b, uint64_t offset, const void *src, size_t len,
                                 char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  uint8_t *p = region_ptr(e, offset, len);
  if (!p) {
    snprintf(err, errlen, "write of %zu bytes at offset %" PRIu64 " is outside the region",
             len, offset);
    return GPULEASE_WRITE_FAILED;
  }
  if (len) memcpy(p, src, len);
  return GPULEASE_OK;
}

/* TENSORMAP_ENCODE: the emulated device's own encoding (emu.h), of the
 * tensor at the region's device address + offset, which its
 * cp.async.bulk.tensor decodes. */
static gpulease_status emu_tensormap_encode(gl_backend *b, uint64_t offset, const gl_tmap_req *t,
                                            uint8_t out[GL_TMAP_BYTES], char *err,
                                            size_t errlen) {
  (void)b;
  _Static_assert(GL_EMU_TMAP_BYTES == GL_TMAP_BYTES, "one tensor map size");
  return gl_emu_tensormap_encode_tiled(out, t->data_type, t->rank, GL_EMU_REGION_BASE + offset,
                                       t->global_dim, t->global_strides, t->box_dim,
                                       t->element_strides, t->interleave, t->swizzle,
                                       t->l2_promotion, t->oob_fill, err, errlen);
}

static gpulease_status emu_read(gl_backend *b, uint64_t offset, void *dst, size_t len,
                                char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  const uint8_t *p = region_ptr(e, offset, len);
  if (!p) {
    snprintf(err, errlen, "read of %zu bytes at offset %" PRIu64 " is outside the region", len,
             offset);
    return GPULEASE_READ_FAILED;
  }
  if (len) memcpy(dst, p, len);
  return GPULEASE_OK;
}

/* ---- launches ------------------------------------------------------------------ */

/* Kernel output: what the launch printed goes to the process's stdout once
 * it has finished, as the CUDA driver prints a kernel's printf text when
 * the host synchronizes (the worker captures it: worker/kout.h). Text over
 * the device's limit (the printf FIFO's size) is dropped, as a full FIFO
 * drops it on a GPU. */
static void emit_output(emu_backend *e) {
  size_t len;
  char *text = gl_emu_device_take_output(e->dev, &len, NULL);
  if (!text) return;
  flockfile(stdout);
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  funlockfile(stdout);
  free(text);
}

/* The printf FIFO's size bounds the output a launch leaves; the emulated
 * device has no malloc heap to size. */
static gpulease_status emu_set_limits(gl_backend *b, uint64_t printf_fifo_bytes,
                                      uint64_t malloc_heap_bytes, char *err, size_t errlen) {
  (void)malloc_heap_bytes;
  (void)err;
  (void)errlen;
  emu_backend *e = as_emu(b);
  if (printf_fifo_bytes) {
    e->out_limit = (size_t)printf_fifo_bytes;
    if (e->dev) gl_emu_device_set_output_limit(e->dev, e->out_limit);
  }
  return GPULEASE_OK;
}

/* Runs l to completion under the read side of mod_lock. A fault (LAUNCH_FAILED)
 * loses the context; bad launch settings (INVALID_ARGUMENT) do not. */
static gpulease_status run_kernel(emu_backend *e, void *fn, const gl_launch *l, char *err,
                                  size_t errlen) {
  gl_emu_launch_cfg cfg = {.shared_bytes = l->shared_mem_bytes, .args = l->args,
                           .threads = e->threads, .sm_count = e->threads,
                           .cooperative = (l->flags & GL_LAUNCH_F_COOPERATIVE) != 0};
  memcpy(cfg.grid, l->grid, sizeof cfg.grid);
  memcpy(cfg.block, l->block, sizeof cfg.block);
  memcpy(cfg.cluster, l->cluster, sizeof cfg.cluster);
  char why[900];
  pthread_rwlock_rdlock(&e->mod_lock);
  gpulease_status st = gl_emu_launch(e->dev, fn, &cfg, NULL, why, sizeof why);
  pthread_rwlock_unlock(&e->mod_lock);
  emit_output(e);
  try_drain(e);
  if (st == GPULEASE_OK) return GPULEASE_OK;
  char msg[FAULT_BYTES];
  snprintf(msg, sizeof msg, "kernel '%s' failed: %s", l->kernel_name, why);
  /* Faults in the kernel are sticky, as on a GPU. */
  if (st == GPULEASE_LAUNCH_FAILED) set_lost(e, msg);
  snprintf(err, errlen, "%s%s", msg, is_lost(e) ? k_lost_note : "");
  return st == GPULEASE_NO_MEMORY ? GPULEASE_LAUNCH_FAILED : st;
}

static gpulease_status emu_launch(gl_backend *b, void *fn, const gl_launch *l,
                                  uint64_t *gpu_time_ns, char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  uint64_t t0 = gl_mono_ns();
  gpulease_status st = run_kernel(e, fn, l, err, errlen);
  *gpu_time_ns = gl_mono_ns() - t0;
  return st;
}

static bool emu_context_lost(gl_backend *b) { return is_lost(as_emu(b)); }

/* ---- sessions: streams --------------------------------------------------------- */

static gpulease_status emu_stream_create(gl_backend *b, void **stream, char *err,
                                         size_t errlen) {
  (void)b;
  emu_stream *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory for a stream");
    return GPULEASE_INTERNAL;
  }
  s->magic = EMU_STREAM_MAGIC;
  *stream = s;
  return GPULEASE_OK;
}

static void emu_stream_destroy(gl_backend *b, void *stream) {
  (void)b;
  emu_stream *s = stream;
  if (!s) return;
  s->magic = 0;
  free(s);
}

static gpulease_status emu_launch_async(gl_backend *b, void *stream, void *fn,
                                        const gl_launch *l, char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  (void)stream;
  if (is_lost(e)) return fault_status(e, err, errlen);
  return run_kernel(e, fn, l, err, errlen);
}

/* Events: the device runs each op when it is queued, so an event is the
 * host's monotonic clock when it is recorded. */
static gpulease_status emu_event_record(gl_backend *b, void *stream, void **event, char *err,
                                        size_t errlen) {
  emu_backend *e = as_emu(b);
  (void)stream;
  if (is_lost(e)) return fault_status(e, err, errlen);
  uint64_t *t = *event;
  if (!t && !(t = malloc(sizeof *t))) {
    snprintf(err, errlen, "out of memory for an event");
    return GPULEASE_INTERNAL;
  }
  *t = gl_mono_ns();
  *event = t;
  return GPULEASE_OK;
}

static gpulease_status emu_event_elapsed(gl_backend *b, void *start, void *end, uint64_t *ns,
                                         char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  if (is_lost(e)) return fault_status(e, err, errlen);
  uint64_t t0 = *(const uint64_t *)start, t1 = *(const uint64_t *)end;
  *ns = t1 > t0 ? t1 - t0 : 0;
  return GPULEASE_OK;
}

static void emu_event_destroy(gl_backend *b, void *event) {
  (void)b;
  free(event);
}

static gpulease_status emu_write_async(gl_backend *b, void *stream, uint64_t offset,
                                       const void *src, size_t len, char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  (void)stream;
  if (is_lost(e)) return fault_status(e, err, errlen);
  return emu_write(b, offset, src, len, err, errlen);
}

static gpulease_status emu_read_sync(gl_backend *b, void *stream, uint64_t offset, void *dst,
                                     size_t len, char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  (void)stream;
  if (is_lost(e)) return fault_status(e, err, errlen);
  return emu_read(b, offset, dst, len, err, errlen);
}

static gpulease_status emu_copy_async(gl_backend *b, void *stream, uint64_t dst_offset,
                                      uint64_t src_offset, size_t len, char *err,
                                      size_t errlen) {
  emu_backend *e = as_emu(b);
  (void)stream;
  if (is_lost(e)) return fault_status(e, err, errlen);
  uint8_t *d = region_ptr(e, dst_offset, len);
  const uint8_t *s = region_ptr(e, src_offset, len);
  if (!d || !s) {
    snprintf(err, errlen,
             "copy of %zu bytes from offset %" PRIu64 " to offset %" PRIu64
             " is outside the region",
             len, src_offset, dst_offset);
    return GPULEASE_WRITE_FAILED;
  }
  if (len) memmove(d, s, len);
  return GPULEASE_OK;
}

static gpulease_status emu_memset_async(gl_backend *b, void *stream, uint64_t offset,
                                        unsigned element_size, uint32_t value, size_t count,
                                        char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  (void)stream;
  if (is_lost(e)) return fault_status(e, err, errlen);
  if (element_size != 1 && element_size != 2 && element_size != 4) {
    snprintf(err, errlen, "memset element size %u: must be 1, 2 or 4", element_size);
    return GPULEASE_WRITE_FAILED;
  }
  if (offset % element_size) {
    snprintf(err, errlen,
             "memset of %u-byte elements at offset %" PRIu64
             " is misaligned (CUDA_ERROR_INVALID_VALUE)",
             element_size, offset);
    return GPULEASE_WRITE_FAILED;
  }
  uint8_t *p = count <= UINT64_MAX / element_size
                   ? region_ptr(e, offset, (uint64_t)count * element_size)
                   : NULL;
  if (!p) {
    snprintf(err, errlen,
             "memset of %zu %u-byte elements at offset %" PRIu64 " is outside the region",
             count, element_size, offset);
    return GPULEASE_WRITE_FAILED;
  }
  if (element_size == 1) {
    memset(p, (int)(value & 0xffu), count);
    return GPULEASE_OK;
  }
  /* The device is little-endian: element bytes low first. */
  uint8_t elem[4];
  for (unsigned i = 0; i < element_size; i++) elem[i] = (uint8_t)(value >> (8 * i));
  for (size_t i = 0; i < count; i++) memcpy(p + i * element_size, elem, element_size);
  return GPULEASE_OK;
}

static gpulease_status emu_stream_sync(gl_backend *b, void *stream, char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  (void)stream;
  if (is_lost(e)) return fault_status(e, err, errlen);
  return GPULEASE_OK;
}

/* ---- the rest -------------------------------------------------------------------- */

/* The lease's region goes (its host memory with it); init may run again. */
static gpulease_status emu_reset(gl_backend *b, char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  if (!e->dev || e->shared || is_lost(e)) {
    snprintf(err, errlen, "nothing to reset (no lease region, a shared context, or lost)");
    return GPULEASE_INTERNAL;
  }
  pthread_rwlock_wrlock(&e->mod_lock);
  drain_pending_locked(e);
  gl_emu_device_free(e->dev);
  e->dev = NULL;
  pthread_rwlock_unlock(&e->mod_lock);
  e->region_bytes = 0;
  return GPULEASE_OK;
}

static void emu_destroy(gl_backend *b) {
  emu_backend *e = as_emu(b);
  gl_emu_device_free(e->dev); /* deferred unloads included */
  free(e->pending);
  free(e->ranges);
  pthread_mutex_destroy(&e->ranges_mu);
  pthread_rwlock_destroy(&e->mod_lock);
  pthread_mutex_destroy(&e->pending_mu);
  pthread_mutex_destroy(&e->fault_mu);
  free(e);
}

static const gl_backend_ops k_emu_ops = {
    .name = "emulated",
    .probe = emu_probe,
    .warm = emu_warm,
    .init = emu_init,
    .reset = emu_reset,
    .set_limits = emu_set_limits,
    .open_shared = emu_open_shared,
    .region_add = emu_region_add,
    .region_remove = emu_region_remove,
    .load_module = emu_load,
    .unload_module = emu_unload,
    .get_function = emu_get_function,
    .param_sizes = emu_param_sizes,
    .write = emu_write,
    .launch = emu_launch,
    .read = emu_read,
    .context_lost = emu_context_lost,
    .destroy = emu_destroy,
    .stream_create = emu_stream_create,
    .stream_destroy = emu_stream_destroy,
    .launch_runs_inline = true,
    .launch_async = emu_launch_async,
    .event_record = emu_event_record,
    .event_elapsed = emu_event_elapsed,
    .event_destroy = emu_event_destroy,
    .write_async = emu_write_async,
    .read_sync = emu_read_sync,
    .copy_async = emu_copy_async,
    .memset_async = emu_memset_async,
    .stream_sync = emu_stream_sync,
    .func_info = emu_func_info,
    .local_memory = emu_local_memory,
    .compile_ptx = emu_compile_ptx,
    .cache_tag = emu_cache_tag,
    .host_register = emu_host_register,
    .host_unregister = emu_host_unregister,
    .tensormap_encode = emu_tensormap_encode,
};

gl_backend *gl_backend_emu_new(uint64_t capacity_bytes, unsigned threads) {
  emu_backend *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  pthread_rwlockattr_t attr;
  if (pthread_rwlockattr_init(&attr) != 0) {
    free(e);
    return NULL;
  }
#ifdef __GLIBC__
  /* A waiting load must not starve behind a stream of launches. */
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
  int rc = pthread_rwlock_init(&e->mod_lock, &attr);
  pthread_rwlockattr_destroy(&attr);
  if (rc != 0) {
    free(e);
    return NULL;
  }
  if (pthread_mutex_init(&e->pending_mu, NULL) != 0) {
    pthread_rwlock_destroy(&e->mod_lock);
    free(e);
    return NULL;
  }
  if (pthread_mutex_init(&e->fault_mu, NULL) != 0) {
    pthread_mutex_destroy(&e->pending_mu);
    pthread_rwlock_destroy(&e->mod_lock);
    free(e);
    return NULL;
  }
  if (pthread_mutex_init(&e->ranges_mu, NULL) != 0) {
    pthread_mutex_destroy(&e->fault_mu);
    pthread_mutex_destroy(&e->pending_mu);
    pthread_rwlock_destroy(&e->mod_lock);
    free(e);
    return NULL;
  }
  atomic_init(&e->lost, false);
  e->base.ops = &k_emu_ops;
  e->capacity = capacity_bytes;
  e->threads = threads ? threads : 1;
  return &e->base;
}
