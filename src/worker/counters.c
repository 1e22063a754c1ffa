/* counters.c - see counters.h. */
#include "worker/counters.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/util.h"

static _Atomic uint64_t *g_page; /* GL_WC_N counters, or NULL */

int gl_worker_counters_create(void) {
  if (g_page) return 0;
  int fd = memfd_create("gpulease-worker-counters", 0); /* no CLOEXEC: workers inherit it */
  if (fd < 0) return -1;
  size_t len = (size_t)sysconf(_SC_PAGESIZE);
  void *p = MAP_FAILED;
  if (ftruncate(fd, (off_t)len) == 0)
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return -1;
  }
  char num[16];
  snprintf(num, sizeof num, "%d", fd);
  setenv(GL_WORKER_COUNTERS_ENV, num, 1);
  g_page = p;
  return 0;
}

void gl_worker_counters_attach(void) {
  const char *s = getenv(GL_WORKER_COUNTERS_ENV);
  uint64_t fd;
  if (!s || gl_parse_u64(s, 1u << 20, &fd) != 0) return;
  unsetenv(GL_WORKER_COUNTERS_ENV);
  void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED,
                 (int)fd, 0);
  close((int)fd);
  if (p != MAP_FAILED) g_page = p;
}

void gl_worker_count(gl_wcount what) {
  if (g_page && what < GL_WC_N) atomic_fetch_add_explicit(&g_page[what], 1, memory_order_relaxed);
}

uint64_t gl_worker_counter(gl_wcount what) {
  return g_page && what < GL_WC_N ? atomic_load_explicit(&g_page[what], memory_order_relaxed) : 0;
}
