/*
 * audit.h - the audit log (`gpuleased --audit-log FILE`): one JSON object
 * per line, for every authenticated or refused op, e.g.
 *
 *   {"time":"2026-11-25T19:08:17.123456Z","tenant":"alice","peer":"192.0.2.7:40123",
 *    "op":"LEASE_ALLOC","lease":7,"status":"OK","message":"..."}
 *
 * (one line in the file). Keys always in that order; "lease" is left out
 * when 0 and "message" when NULL or empty. The strings come from the
 * network, so each is made valid UTF-8 (a byte that is not part of a valid
 * sequence becomes U+FFFD) and escaped by json-c; every field is cut at
 * GL_AUDIT_FIELD_MAX bytes, on a character boundary, ending in "..." when
 * cut. Each line goes out in one write(2) on a descriptor opened with
 * O_APPEND, so lines from several threads or processes never interleave;
 * nothing is buffered. Calls on one gl_audit may come from several threads.
 */
#ifndef GL_AUTH_AUDIT_H
#define GL_AUTH_AUDIT_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes of one string field in a record (before JSON escaping). */
#define GL_AUDIT_FIELD_MAX 1024

typedef struct gl_audit gl_audit;

typedef struct gl_audit_rec {
  int64_t unix_ns;     /* wall clock (CLOCK_REALTIME), nanoseconds since 1970 (UTC) */
  const char *tenant;  /* "" or NULL: anonymous */
  const char *peer;    /* "192.0.2.7:40123", "unix:pid=..,uid=.."; NULL: "" */
  const char *op;      /* "LEASE_ALLOC"; NULL: "" */
  uint64_t lease_id;   /* 0: none */
  const char *status;  /* "OK", "UNAUTHORIZED", ...; NULL: "" */
  const char *message; /* NULL or "": none */
} gl_audit_rec;

/* Opens the log: path "-" is stderr (never closed by this module), any
 * other path a file opened for appending (created with mode 0600 when
 * missing; O_CLOEXEC). NULL with "PATH: strerror" in err (errlen bytes)
 * when it cannot be opened, or "out of memory". Close with
 * gl_audit_close(). */
gl_audit *gl_audit_open(const char *path, char *err, size_t errlen);

/* Appends the record as one line. Returns 0, or -1 with errno set when the
 * write failed or fell short (ENOSPC, EIO...; the caller may count or log
 * it) or a JSON object could not be built (ENOMEM). a may be NULL (then
 * -1, EINVAL). Thread-safe. */
int gl_audit_write(gl_audit *a, const gl_audit_rec *rec);

/* Opens the log's path again (after logrotate moved it; on SIGHUP) and
 * writes to the new file from now on. 0; for stderr a no-op. -1 with
 * "PATH: strerror" in err when it cannot be opened: the old file stays in
 * use. Thread-safe with gl_audit_write(). */
int gl_audit_reopen(gl_audit *a, char *err, size_t errlen);

/* Closes the file (not stderr) and frees a (NULL is fine). */
void gl_audit_close(gl_audit *a);

/* Formats unix_ns as RFC 3339 UTC with microseconds,
 * "2026-11-25T19:08:17.123456Z", into out (at least 32 bytes). Returns
 * out. */
const char *gl_audit_time(int64_t unix_ns, char *out, size_t outlen);

#endif /* GL_AUTH_AUDIT_H */
