/*
 * state.c - the shim's process-wide state: cuInit reads the lease from the
 * environment (docs/cuda-driver.md, "Without the wrapper"), connects to
 * its daemon and reads its GPU; the primary context is a session on the
 * lease, opened on first use and closed at exit. Also the error mapping
 * from libgpulease's statuses to CUresult.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cu.h"
#include "cuda/lease_env.h"

gl_cu_state gl_cu = {.mu = PTHREAD_MUTEX_INITIALIZER};

void gl_cu_lock(void) { pthread_mutex_lock(&gl_cu.mu); }
void gl_cu_unlock(void) { pthread_mutex_unlock(&gl_cu.mu); }

/* Kernel printf reaches the program's stdout, as with the CUDA driver. */
static void kernel_output(void *user, uint64_t lease_id, const char *text, size_t len,
                          uint64_t dropped, uint32_t flags) {
  (void)user;
  (void)lease_id;
  (void)flags;
  fwrite(text, 1, len, stdout);
  if (dropped)
    fprintf(stderr, "gpulease: %" PRIu64 " bytes of kernel printf output were dropped\n",
            dropped);
  fflush(stdout);
}

void gl_cu_kernel_output_on(void) {
  if (gl_cu.kout_on || !gl_cu.client) return;
  gpulease_client_set_kernel_output(gl_cu.client, kernel_output, NULL);
  gl_cu.kout_on = true;
}

static void at_exit(void) {
  /* Under the lock: a thread still in a call finishes it first. */
  gl_cu_lock();
  gpulease_error err;
  if (gl_cu.session) gl_cu_flush_launch();
  gl_cu_drop_launch();
  if (gl_cu.session) gpulease_session_close(gl_cu.session, &err);
  gl_cu.session = NULL;
  for (size_t i = 0; i < gl_cu.nhosts; i++) gpulease_host_free(gl_cu.client, gl_cu.hosts[i].ptr, &err);
  gl_cu.nhosts = 0;
  if (gl_cu.client) gpulease_client_close(gl_cu.client);
  gl_cu.client = NULL;
  gl_cu.init_status = CUDA_ERROR_DEINITIALIZED;
  snprintf(gl_cu.init_message, sizeof gl_cu.init_message, "the program is exiting");
  gl_cu_unlock();
}

/* Sets the init failure: status and the one line the shim prints. */
static CUresult init_fail(CUresult st, const char *msg) {
  snprintf(gl_cu.init_message, sizeof gl_cu.init_message, "%s", msg);
  gl_cu.init_status = st;
  fprintf(stderr, "gpulease: cuInit: %s\n", gl_cu.init_message);
  return st;
}

/* cuInit's work, once: the lease in the environment, its connection and
 * GPU (lease_env.c), and that the lease has a context of its own. */
static CUresult do_init(void) {
  static gl_lease_env e; /* its message is large: not on the caller's stack */
  gl_lease_env_failure f = gl_lease_env_open(&e);
  if (f != GL_LEASE_ENV_OK)
    return init_fail(f == GL_LEASE_ENV_MALFORMED ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NO_DEVICE,
                     e.message);
  if (e.lease.lease_class == GPULEASE_CLASS_SHARED ||
      e.lease.lease_class == GPULEASE_CLASS_PARTITION) {
    char msg[256];
    snprintf(msg, sizeof msg,
             "lease %llu is a %s lease; the CUDA driver needs an isolated or device lease (a "
             "context of its own)",
             (unsigned long long)e.lease.id, gpulease_lease_class_name(e.lease.lease_class));
    gpulease_client_close(e.client);
    return init_fail(CUDA_ERROR_NOT_SUPPORTED, msg);
  }
  gl_cu.client = e.client;
  gl_cu.lease = e.lease;
  gl_cu.gpu = e.gpu;
  gl_cu.ctx.magic = GL_CU_CTX_MAGIC;
  atexit(at_exit);
  gl_cu.init_status = CUDA_SUCCESS;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuInit(unsigned int flags);
CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  gl_cu_lock();
  if (!gl_cu.init_done) {
    gl_cu.init_done = true;
    do_init();
  }
  CUresult st = gl_cu.init_status;
  gl_cu_unlock();
  return st;
}

CUresult gl_cu_ready(void) {
  if (!gl_cu.init_done) return CUDA_ERROR_NOT_INITIALIZED;
  if (gl_cu.init_status != CUDA_SUCCESS) return gl_cu.init_status;
  return gl_cu.sticky;
}

CUresult gl_cu_need_session(void) {
  CUresult st = gl_cu_ready();
  if (st != CUDA_SUCCESS || gl_cu.session) return st;
  gpulease_error err;
  if (gpulease_session_open(gl_cu.client, &gl_cu.lease, &gl_cu.session, &err) != GPULEASE_OK) {
    gl_cu.session = NULL;
    return gl_cu_fail("cuDevicePrimaryCtxRetain", &err);
  }
  return CUDA_SUCCESS;
}

int gl_cu_error_in_message(const char *message) {
  static const struct { const char *name; int code; } names[] = {
      {"CUDA_ERROR_ILLEGAL_ADDRESS", CUDA_ERROR_ILLEGAL_ADDRESS},
      {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES},
      {"CUDA_ERROR_LAUNCH_TIMEOUT", CUDA_ERROR_LAUNCH_TIMEOUT},
      {"CUDA_ERROR_ASSERT", CUDA_ERROR_ASSERT},
      {"CUDA_ERROR_HARDWARE_STACK_ERROR", CUDA_ERROR_HARDWARE_STACK_ERROR},
      {"CUDA_ERROR_ILLEGAL_INSTRUCTION", CUDA_ERROR_ILLEGAL_INSTRUCTION},
      {"CUDA_ERROR_MISALIGNED_ADDRESS", CUDA_ERROR_MISALIGNED_ADDRESS},
      {"CUDA_ERROR_INVALID_ADDRESS_SPACE", CUDA_ERROR_INVALID_ADDRESS_SPACE},
      {"CUDA_ERROR_INVALID_PC", CUDA_ERROR_INVALID_PC},
      {"CUDA_ERROR_LAUNCH_FAILED", CUDA_ERROR_LAUNCH_FAILED},
      {"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE},
      {"CUDA_ERROR_INVALID_CLUSTER_SIZE", CUDA_ERROR_INVALID_CLUSTER_SIZE},
      {"CUDA_ERROR_NO_BINARY_FOR_GPU", CUDA_ERROR_NO_BINARY_FOR_GPU},
      {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", CUDA_ERROR_UNSUPPORTED_PTX_VERSION},
      {"CUDA_ERROR_INVALID_PTX", CUDA_ERROR_INVALID_PTX},
      {"CUDA_ERROR_INVALID_IMAGE", CUDA_ERROR_INVALID_IMAGE},
      {"CUDA_ERROR_INVALID_VALUE", CUDA_ERROR_INVALID_VALUE},
      {"CUDA_ERROR_OUT_OF_MEMORY", CUDA_ERROR_OUT_OF_MEMORY},
      {"CUDA_ERROR_NOT_FOUND", CUDA_ERROR_NOT_FOUND},
  };
  if (!message) return -1;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *p = strstr(message, names[i].name);
    /* The whole name: CUDA_ERROR_LAUNCH_FAILED is not ..._LAUNCH_FAILED_X. */
    size_t n = strlen(names[i].name);
    while (p) {
      char c = p[n];
      if (!(c == '_' || (c >= 'A' && c <= 'Z'))) return names[i].code;
      p = strstr(p + 1, names[i].name);
    }
  }
  return -1;
}

/* Errors that end the context: CUDA's sticky ones, and the lease gone. */
static bool lost_context(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS: case CUDA_ERROR_LAUNCH_TIMEOUT: case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR: case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS: case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC: case CUDA_ERROR_LAUNCH_FAILED: case CUDA_ERROR_DEVICE_UNAVAILABLE:
    return true;
  default:
    return false;
  }
}

CUresult gl_cu_fail(const char *call, const gpulease_error *err) {
  CUresult r;
  bool quiet = false; /* the caller's own argument errors are not printed */
  int named = gl_cu_error_in_message(err->message);
  switch (err->status) {
  case GPULEASE_OK: return CUDA_SUCCESS;
  case GPULEASE_INVALID_ARGUMENT:
    r = named >= 0 ? named : CUDA_ERROR_INVALID_VALUE;
    quiet = named < 0;
    break;
  case GPULEASE_INVALID_HANDLE: r = CUDA_ERROR_INVALID_HANDLE; break;
  case GPULEASE_LOAD_FAILED: r = named >= 0 ? named : CUDA_ERROR_INVALID_IMAGE; break;
  case GPULEASE_LAUNCH_FAILED: r = named >= 0 ? named : CUDA_ERROR_LAUNCH_FAILED; break;
  case GPULEASE_CAPACITY_EXCEEDED: case GPULEASE_QUOTA_EXCEEDED: case GPULEASE_NO_MEMORY:
    r = CUDA_ERROR_OUT_OF_MEMORY;
    break;
  case GPULEASE_UNSUPPORTED: r = CUDA_ERROR_NOT_SUPPORTED; break;
  case GPULEASE_NOT_FOUND:
    /* The lease (or its session) is gone, or a kernel name is unknown:
     * FUNC_INFO's is the caller's (cuModuleGetFunction gives NOT_FOUND). */
    if (strstr(err->message, "lease") || strstr(err->message, "session")) {
      r = CUDA_ERROR_DEVICE_UNAVAILABLE;
    } else {
      r = CUDA_ERROR_NOT_FOUND;
      quiet = true;
    }
    break;
  case GPULEASE_LEASE_EXPIRED: case GPULEASE_UNAUTHORIZED:
    r = CUDA_ERROR_DEVICE_UNAVAILABLE;
    break;
  case GPULEASE_READ_FAILED: case GPULEASE_WRITE_FAILED:
    r = named >= 0 ? named : CUDA_ERROR_UNKNOWN;
    break;
  case GPULEASE_DISCONNECTED: case GPULEASE_TLS_FAILED: case GPULEASE_PROTOCOL_ERROR:
  case GPULEASE_TIMEOUT:
    r = CUDA_ERROR_DEVICE_UNAVAILABLE;
    break;
  default: r = CUDA_ERROR_UNKNOWN; break;
  }
  if (!quiet)
    fprintf(stderr, "gpulease: %s: %s: %s\n", call, gpulease_status_name(err->status),
            err->message);
  if (lost_context(r)) {
    if (gl_cu.sticky == CUDA_SUCCESS) gl_cu.sticky = r;
  } else if (gl_cu.session && err->status < GPULEASE_DISCONNECTED &&
             r != CUDA_ERROR_DEVICE_UNAVAILABLE) {
    /* A failure the context survives (a bad argument, a kernel name not in
     * the module) is the session's until acknowledged: acknowledged here,
     * so that later calls run, as after CUDA's non-sticky errors. */
    gpulease_error e2;
    gpulease_session_acknowledge(gl_cu.session, UINT64_MAX, &e2);
  }
  return r;
}

CUresult gl_cu_sync(const char *call) {
  gpulease_op_failure f;
  gpulease_op_failure_init(&f);
  gpulease_error err;
  gpulease_status st;
  if (!gl_cu_sync_launch(&st, &f, &err)) st = gpulease_session_sync(gl_cu.session, &f, &err);
  if (st == GPULEASE_OK) return CUDA_SUCCESS;
  return gl_cu_fail(call, &err);
}

CUresult gl_cu_unsupported(const char *call, const char *why) {
  /* Said once per entry point: a small table of names already said. */
  static const char *said[256];
  static size_t nsaid;
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  bool again = false;
  for (size_t i = 0; i < nsaid; i++)
    if (said[i] == call || strcmp(said[i], call) == 0) again = true;
  if (!again) {
    if (nsaid < sizeof said / sizeof said[0]) said[nsaid++] = call;
    fprintf(stderr, "gpulease: %s is not supported by the gpulease CUDA driver (%s)\n", call,
            why ? why : "not implemented; docs/cuda-driver.md lists what is");
  }
  pthread_mutex_unlock(&mu);
  return CUDA_ERROR_NOT_SUPPORTED;
}

bool gl_cu_tracing(void) {
  static int on = -1; /* read once; a race reads the same value twice */
  if (on < 0) {
    const char *v = getenv("GPULEASE_CUDA_TRACE");
    on = v && *v && strcmp(v, "0") != 0;
  }
  return on == 1;
}

void gl_cu_trace(const char *fmt, ...) {
  if (!gl_cu_tracing()) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "gpulease trace: %s\n", line);
}
