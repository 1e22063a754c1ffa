/*
 * audit.c - see audit.h.
 */
#include "auth/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

struct gl_audit {
  pthread_mutex_t lock; /* guards fd */
  int fd;
  bool is_stderr;
  char *path;
};

const char *gl_audit_time(int64_t unix_ns, char *out, size_t outlen) {
  int64_t s = unix_ns / 1000000000, ns = unix_ns % 1000000000;
  if (ns < 0) { /* floor, for times before 1970 */
    ns += 1000000000;
    s -= 1;
  }
  time_t t = (time_t)s;
  struct tm tm;
  char date[40];
  if (!gmtime_r(&t, &tm) || !strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm))
    snprintf(date, sizeof date, "%" PRId64, s); /* unreachable for sane clocks */
  snprintf(out, outlen, "%s.%06" PRId64 "Z", date, ns / 1000);
  return out;
}

/* The length of the valid UTF-8 sequence at s (NUL-terminated), 0 when the
 * bytes there are not one (RFC 3629: no overlongs, no surrogates, nothing
 * above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF; /* bounds of the second byte */
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0; /* a NUL stops here too */
  return n;
}

/* Copies s as valid UTF-8 into out (GL_AUDIT_FIELD_MAX + 1 bytes), cut on a
 * character boundary with "..." when longer than GL_AUDIT_FIELD_MAX.
 * Returns the length. */
static size_t clean(const char *s, char *out) {
  static const char repl[] = "\xEF\xBF\xBD"; /* U+FFFD */
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  size_t n = 0, cut = 0;
  while (*p) {
    size_t len = utf8_seq(p);
    const char *src = len ? (const char *)p : repl;
    size_t outn = len ? len : 3;
    if (n <= GL_AUDIT_FIELD_MAX - 3) cut = n;
    if (n + outn > GL_AUDIT_FIELD_MAX) {
      memcpy(out + cut, "...", 3);
      n = cut + 3;
      break;
    }
    memcpy(out + n, src, outn);
    n += outn;
    p += len ? len : 1;
  }
  out[n] = 0;
  return n;
}

static int add_str(json_object *o, const char *key, const char *val) {
  char buf[GL_AUDIT_FIELD_MAX + 1];
  size_t n = clean(val, buf);
  json_object *v = json_object_new_string_len(buf, (int)n);
  if (!v) return -1;
  if (json_object_object_add(o, key, v) != 0) {
    json_object_put(v);
    return -1;
  }
  return 0;
}

static int open_path(const char *path) {
  return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
}

gl_audit *gl_audit_open(const char *path, char *err, size_t errlen) {
  if (errlen) err[0] = 0;
  if (!path || !*path) {
    if (errlen) snprintf(err, errlen, "audit log: empty path");
    return NULL;
  }
  gl_audit *a = calloc(1, sizeof *a);
  if (!a || !(a->path = strdup(path))) {
    free(a);
    if (errlen) snprintf(err, errlen, "out of memory");
    return NULL;
  }
  if (strcmp(path, "-") == 0) {
    a->fd = STDERR_FILENO;
    a->is_stderr = true;
  } else {
    a->fd = open_path(path);
    if (a->fd < 0) {
      if (errlen) snprintf(err, errlen, "%s: %s", path, strerror(errno));
      free(a->path);
      free(a);
      return NULL;
    }
  }
  pthread_mutex_init(&a->lock, NULL);
  return a;
}

/* Writes all of iov (two parts) to fd. 0 or -1 with errno. */
static int write_all(int fd, struct iovec *iov, int cnt) {
  while (cnt > 0) {
    ssize_t w = writev(fd, iov, cnt);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    if (w == 0) {
      errno = EIO;
      return -1;
    }
    size_t left = (size_t)w;
    while (cnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      iov++;
      cnt--;
    }
    if (cnt > 0) {
      iov->iov_base = (char *)iov->iov_base + left;
      iov->iov_len -= left;
    }
  }
  return 0;
}

int gl_audit_write(gl_audit *a, const gl_audit_rec *rec) {
  if (!a || !rec) {
    errno = EINVAL;
    return -1;
  }
  json_object *o = json_object_new_object();
  if (!o) {
    errno = ENOMEM;
    return -1;
  }
  char when[48];
  gl_audit_time(rec->unix_ns, when, sizeof when);
  int bad = add_str(o, "time", when);
  bad |= add_str(o, "tenant", rec->tenant);
  bad |= add_str(o, "peer", rec->peer);
  bad |= add_str(o, "op", rec->op);
  if (rec->lease_id) {
    json_object *v = json_object_new_uint64(rec->lease_id);
    if (!v || json_object_object_add(o, "lease", v) != 0) {
      json_object_put(v);
      bad = -1;
    }
  }
  bad |= add_str(o, "status", rec->status);
  if (rec->message && *rec->message) bad |= add_str(o, "message", rec->message);
  size_t len = 0;
  const char *line =
      bad ? NULL
          : json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                              &len);
  if (!line) {
    json_object_put(o);
    errno = ENOMEM;
    return -1;
  }
  struct iovec iov[2] = {{.iov_base = (void *)line, .iov_len = len},
                         {.iov_base = (void *)"\n", .iov_len = 1}};
  pthread_mutex_lock(&a->lock);
  int r = write_all(a->fd, iov, 2);
  int e = errno;
  pthread_mutex_unlock(&a->lock);
  json_object_put(o);
  errno = e;
  return r;
}

int gl_audit_reopen(gl_audit *a, char *err, size_t errlen) {
  if (errlen) err[0] = 0;
  if (!a) return -1;
  if (a->is_stderr) return 0;
  int fd = open_path(a->path);
  if (fd < 0) {
    if (errlen) snprintf(err, errlen, "%s: %s", a->path, strerror(errno));
    return -1;
  }
  pthread_mutex_lock(&a->lock);
  int old = a->fd;
  a->fd = fd;
  pthread_mutex_unlock(&a->lock);
  close(old);
  return 0;
}

void gl_audit_close(gl_audit *a) {
  if (!a) return;
  if (!a->is_stderr) close(a->fd);
  pthread_mutex_destroy(&a->lock);
  free(a->path);
  free(a);
}
