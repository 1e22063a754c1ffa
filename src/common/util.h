/*
 * util.h - small helpers shared by the library, the daemon and the CLI:
 * clocks, hex, host:port parsing, constant-time compare, reading files,
 * the boot id, error text.
 */
#ifndef GL_COMMON_UTIL_H
#define GL_COMMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GL_DEFAULT_PORT 5701

/* Writes an error message, printf-style, into err (errlen bytes, always
 * NUL-terminated, truncated when short). Does nothing when err is NULL or
 * errlen is 0, so callers pass their caller's err, errlen through as they
 * are. The one helper behind every "char *err, size_t errlen" parameter. */
void gl_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t gl_mono_ns(void);

/* Wall-clock time: Unix seconds (CLOCK_REALTIME). */
uint64_t gl_unix_s(void);

/* Lower-case hex of n bytes into out (2n+1 bytes with NUL). */
void gl_hex_encode(const uint8_t *in, size_t n, char *out);

/* Parses exactly 2n hex digits into n bytes. 0 or -1. */
int gl_hex_decode(const char *in, uint8_t *out, size_t n);

/* Constant-time equality of two n-byte strings. */
bool gl_ct_equal(const uint8_t *a, const uint8_t *b, size_t n);

/* Splits "host:port", "[v6]:port", "host" (default_port) into host (no
 * brackets) and port. Port 0 is accepted (a server then picks one; clients
 * must refuse it). 0 or -1 (empty host, bad port, too long). */
int gl_parse_hostport(const char *in, uint16_t default_port, char *host, size_t hostlen,
                      uint16_t *port);

/* Parses an unsigned decimal with an optional binary suffix K, M, G, T
 * (KiB...) or KB/MB/GB (decimal), e.g. "1048576", "64M", "2GiB". 0 or -1. */
int gl_parse_size(const char *s, uint64_t *out);

/* Parses a whole unsigned decimal (no sign, no suffix) in [0, max]. 0 or -1. */
int gl_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* Reads a whole file into a malloc'd buffer (caller frees), at most max
 * bytes. 0, or -1 with errno set (EFBIG when larger than max). */
int gl_read_file(const char *path, size_t max, uint8_t **data, size_t *len);

/* This boot of this machine: /proc/sys/kernel/random/boot_id
 * ("xxxxxxxx-xxxx-...") as 16 bytes; all zero when it cannot be read. The
 * daemon reports it in NODE_INFO and the library compares it with its own
 * to know whether it runs on the daemon's host. */
void gl_boot_id(uint8_t out[16]);

/* A pause inside a busy-wait loop: tells the CPU we spin (x86 PAUSE,
 * Arm YIELD), which saves power and the sibling hyper-thread's time. */
static inline void gl_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

#endif
