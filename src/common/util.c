/* util.c - see util.h. */
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gl_set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

uint64_t gl_unix_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec;
}

uint64_t gl_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gl_hex_encode(const uint8_t *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = 0;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int gl_hex_decode(const char *in, uint8_t *out, size_t n) {
  if (!in || strlen(in) != 2 * n) return -1;
  for (size_t i = 0; i < n; i++) {
    int hi = hexval((unsigned char)in[2 * i]), lo = hexval((unsigned char)in[2 * i + 1]);
    if (hi < 0 || lo < 0) return -1;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

bool gl_ct_equal(const uint8_t *a, const uint8_t *b, size_t n) {
  volatile uint8_t acc = 0;
  for (size_t i = 0; i < n; i++) acc |= (uint8_t)(a[i] ^ b[i]);
  return acc == 0;
}

int gl_parse_u64(const char *s, uint64_t max, uint64_t *out) {
  if (!s || !*s) return -1;
  uint64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return -1;
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (v > max) return -1;
  *out = v;
  return 0;
}

int gl_parse_hostport(const char *in, uint16_t default_port, char *host, size_t hostlen,
                      uint16_t *port) {
  if (!in || !*in) return -1;
  const char *h = in, *p = NULL;
  size_t hl;
  if (in[0] == '[') {
    const char *end = strchr(in, ']');
    if (!end) return -1;
    h = in + 1;
    hl = (size_t)(end - h);
    if (end[1] == ':') p = end + 2;
    else if (end[1] != 0) return -1;
  } else {
    const char *colon = strrchr(in, ':');
    if (colon && strchr(in, ':') == colon) { /* exactly one colon: host:port */
      hl = (size_t)(colon - in);
      p = colon + 1;
    } else {
      hl = strlen(in); /* no colon, or a bare IPv6 literal */
    }
  }
  if (hl == 0 || hl >= hostlen) return -1;
  memcpy(host, h, hl);
  host[hl] = 0;
  if (p) {
    uint64_t v;
    if (gl_parse_u64(p, 65535, &v) != 0) return -1;
    *port = (uint16_t)v;
  } else {
    *port = default_port;
  }
  return 0;
}

int gl_parse_size(const char *s, uint64_t *out) {
  if (!s || !isdigit((unsigned char)*s)) return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return -1;
  uint64_t mul = 1;
  if (*end) {
    static const struct { const char *suffix; uint64_t mul; } units[] = {
        {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1000ull},
        {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1000000ull},
        {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1000000000ull},
        {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1000000000000ull},
    };
    mul = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
      if (strcmp(end, units[i].suffix) == 0) mul = units[i].mul;
    if (mul == 0) return -1;
  }
  if (v > UINT64_MAX / mul) return -1;
  *out = (uint64_t)v * mul;
  return 0;
}

int gl_read_file(const char *path, size_t max, uint8_t **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 65536, n = 0;
  uint8_t *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    errno = ENOMEM;
    return -1;
  }
  for (;;) {
    if (n == cap) {
      if (cap > max) break;
      uint8_t *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        fclose(f);
        errno = ENOMEM;
        return -1;
      }
      buf = nb;
      cap *= 2;
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    errno = EIO;
    return -1;
  }
  if (n > max) {
    free(buf);
    errno = EFBIG;
    return -1;
  }
  *data = buf;
  *len = n;
  return 0;
}

void gl_boot_id(uint8_t out[16]) {
  memset(out, 0, 16);
  char s[64] = "", hex[33];
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (!f) return;
  if (!fgets(s, sizeof s, f)) s[0] = 0;
  fclose(f);
  size_t k = 0;
  for (const char *p = s; *p && k < 32; p++)
    if (isxdigit((unsigned char)*p)) hex[k++] = *p;
  hex[k] = 0;
  if (k != 32 || gl_hex_decode(hex, out, 16) != 0) memset(out, 0, 16);
}
