/*
 * lat.c - see lat.h. One shared mapping per process; a slot is 16 bytes
 * (u64 ns, u32 point, u32 thread); the first 8 bytes of the file count the
 * slots used. Recording stops when the file is full.
 */
#include "common/lat.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLOTS (1u << 20)

int gl_lat_on = -1;

typedef struct slot {
  uint64_t ns;
  uint32_t point;
  uint32_t tid;
} slot;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t *used;
static slot *slots;

static void open_trace(void) {
  const char *prefix = getenv("GL_LAT_TRACE");
  if (!prefix || !*prefix) return;
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", prefix, (int)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  size_t bytes = (size_t)(SLOTS + 1) * sizeof(slot);
  void *p = ftruncate(fd, (off_t)bytes) == 0
                ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                : MAP_FAILED;
  close(fd);
  if (p == MAP_FAILED) return;
  used = p;
  slots = (slot *)p + 1;
}

void gl_lat_record(enum gl_lat_point p) {
  if (gl_lat_on < 0) {
    pthread_once(&once, open_trace);
    gl_lat_on = slots != NULL;
    if (!gl_lat_on) return;
  }
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t i = atomic_fetch_add_explicit(used, 1, memory_order_relaxed);
  if (i >= SLOTS) return;
  slots[i] = (slot){(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, (uint32_t)p,
                    (uint32_t)syscall(SYS_gettid)};
}
