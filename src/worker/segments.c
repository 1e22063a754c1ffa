/*
 * segments.c - see segments.h. A small table under w->seg_mu; it stands
 * on wk_types.h (the lease's state) and takes its handles from session.h.
 */
#include "worker/segments.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/session.h"

static void seg_release(gl_wk *w, gl_wseg *s) {
  if (s->registered && w->be->ops->host_unregister) w->be->ops->host_unregister(w->be, s->ptr);
  munmap(s->ptr, s->size);
  GL_DEBUG("worker: segment 0x%016" PRIx64 " unmapped", s->id);
  free(s);
}

gpulease_status gl_segments_attach(gl_wk *w, int fd, uint64_t size, uint64_t *id, char *err,
                                   size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < size) {
    snprintf(err, errlen, "the segment's file is not a regular file of at least %" PRIu64 " bytes",
             size);
    close(fd);
    return GPULEASE_INVALID_ARGUMENT;
  }
  pthread_mutex_lock(&w->seg_mu);
  size_t n = 0;
  for (size_t i = 0; i < GL_WK_MAX_SEGMENTS; i++) n += w->segs[i] != NULL;
  pthread_mutex_unlock(&w->seg_mu);
  if (n >= GL_WK_MAX_SEGMENTS) {
    snprintf(err, errlen, "the lease already has %d segments attached (the most it may have)",
             GL_WK_MAX_SEGMENTS);
    close(fd);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    snprintf(err, errlen, "cannot map the segment: %s", strerror(e));
    return GPULEASE_INVALID_ARGUMENT;
  }
  gl_wseg *s = calloc(1, sizeof *s);
  if (!s) {
    munmap(p, (size_t)size);
    snprintf(err, errlen, "worker out of memory");
    return GPULEASE_INTERNAL;
  }
  s->ptr = p;
  s->size = size;
  s->refs = 1;
  gpulease_status rs = w->be->ops->host_register
                           ? w->be->ops->host_register(w->be, p, (size_t)size, err, errlen)
                           : GPULEASE_OK;
  if (rs != GPULEASE_OK) {
    munmap(p, (size_t)size);
    free(s);
    return rs;
  }
  s->registered = true;
  pthread_mutex_lock(&w->seg_mu);
  size_t slot = 0;
  while (w->segs[slot]) slot++;
  for (;;) {
    s->id = gl_session_new_handle(GL_HANDLE_SEGMENT);
    bool taken = false;
    for (size_t i = 0; i < GL_WK_MAX_SEGMENTS; i++) taken |= w->segs[i] && w->segs[i]->id == s->id;
    if (!taken) break;
  }
  w->segs[slot] = s;
  pthread_mutex_unlock(&w->seg_mu);
  GL_DEBUG("worker: segment 0x%016" PRIx64 " attached: %" PRIu64 " bytes at %p", s->id, size, p);
  *id = s->id;
  return GPULEASE_OK;
}

gpulease_status gl_segments_detach(gl_wk *w, uint64_t id, char *err, size_t errlen) {
  gl_wseg *s = NULL;
  pthread_mutex_lock(&w->seg_mu);
  for (size_t i = 0; i < GL_WK_MAX_SEGMENTS; i++)
    if (w->segs[i] && w->segs[i]->id == id) {
      s = w->segs[i];
      w->segs[i] = NULL;
      break;
    }
  bool last = s && --s->refs == 0;
  pthread_mutex_unlock(&w->seg_mu);
  if (!s) {
    snprintf(err, errlen, "no segment 0x%016" PRIx64 " on this lease", id);
    return GPULEASE_NOT_FOUND;
  }
  if (last) seg_release(w, s);
  return GPULEASE_OK;
}

gl_wseg *gl_segments_get(gl_wk *w, uint64_t id) {
  gl_wseg *s = NULL;
  pthread_mutex_lock(&w->seg_mu);
  for (size_t i = 0; i < GL_WK_MAX_SEGMENTS; i++)
    if (w->segs[i] && w->segs[i]->id == id) {
      s = w->segs[i];
      s->refs++;
      break;
    }
  pthread_mutex_unlock(&w->seg_mu);
  return s;
}

void gl_segments_put(gl_wk *w, gl_wseg *s) {
  pthread_mutex_lock(&w->seg_mu);
  bool last = --s->refs == 0;
  pthread_mutex_unlock(&w->seg_mu);
  if (last) seg_release(w, s);
}

void gl_segments_free_all(gl_wk *w) {
  for (size_t i = 0; i < GL_WK_MAX_SEGMENTS; i++)
    if (w->segs[i]) {
      char err[160];
      gl_segments_detach(w, w->segs[i]->id, err, sizeof err);
    }
}
