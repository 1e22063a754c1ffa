/*
 * jit_cache.c - the on-disk cache of JIT-compiled PTX: see jit_cache.h.
 *
 * File layout (integers little-endian):
 *
 *     0   8  magic "GLJITBIN"
 *     8   4  format version (1)
 *    12   4  tag length in bytes
 *    16  32  SHA-256 of the PTX (the key)
 *    48  64  tag, NUL-padded (the key)
 *   112   8  payload length in bytes
 *   120  32  SHA-256 of the payload
 *   152      payload
 *
 * The key is repeated inside so that a file renamed or copied under
 * another name is refused, and the payload's own hash catches any damage.
 * Temporary files are ".tmp-*" in the same directory (so rename stays
 * within one file system); ones left behind by a crash are removed by a
 * later eviction scan once an hour old.
 */
#include "worker/jit_cache.h"
#include "worker/counters.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "common/log.h"
#include "common/util.h"

#define MAGIC "GLJITBIN"
#define FORMAT_VERSION 1u
#define HDR_TAG_LEN_AT 12
#define HDR_KEY_AT 16
#define HDR_TAG_AT 48
#define HDR_PAYLOAD_LEN_AT 112
#define HDR_PAYLOAD_SHA_AT 120
#define HDR_BYTES 152
#define HEX_KEY 64                  /* hex digits of a SHA-256 */
#define STALE_TMP_SECONDS (60 * 60) /* a temporary file this old is a crash's leftover */
/* "<64 hex>-<tag>.bin" and a NUL. */
#define NAME_MAX_BYTES (HEX_KEY + 1 + GL_JIT_CACHE_MAX_TAG + 4 + 1)

struct gl_jit_cache {
  char *dir; /* NULL: disabled */
  uint64_t max_bytes;
  pthread_mutex_t mu; /* guards the counters */
  uint64_t hits, misses, stores;
};

/* ---- small helpers ------------------------------------------------------ */

static bool tag_ok(const char *tag) {
  if (!tag) return false;
  size_t n = 0;
  for (; tag[n]; n++) {
    char ch = tag[n];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-';
    if (!ok || n >= GL_JIT_CACHE_MAX_TAG) return false;
  }
  return n > 0;
}

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static uint64_t get_le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static bool sha256(const void *data, size_t len, uint8_t out[32]) {
  return gnutls_hash_fast(GNUTLS_DIG_SHA256, data, len, out) >= 0;
}

/* The file name of a key (tag already checked): NAME_MAX_BYTES bytes. */
static void key_name(const uint8_t sha[32], const char *tag, char out[NAME_MAX_BYTES]) {
  char hex[HEX_KEY + 1];
  gl_hex_encode(sha, 32, hex);
  snprintf(out, NAME_MAX_BYTES, "%s-%s.bin", hex, tag);
}

/* True for a name the cache writes: <64 lower-case hex>-<valid tag>.bin. */
static bool is_entry_name(const char *name) {
  size_t n = strlen(name);
  if (n < HEX_KEY + 1 + 1 + 4 || n > NAME_MAX_BYTES - 1) return false;
  for (int i = 0; i < HEX_KEY; i++) {
    char ch = name[i];
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
  }
  if (name[HEX_KEY] != '-' || strcmp(name + n - 4, ".bin") != 0) return false;
  char tag[GL_JIT_CACHE_MAX_TAG + 1];
  size_t tl = n - 4 - (HEX_KEY + 1);
  memcpy(tag, name + HEX_KEY + 1, tl);
  tag[tl] = 0;
  return tag_ok(tag);
}

/* dir + "/" + name, malloc'd; NULL when out of memory. */
static char *join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *p = malloc(a + 1 + b + 1);
  if (!p) return NULL;
  memcpy(p, dir, a);
  p[a] = '/';
  memcpy(p + a + 1, name, b + 1);
  return p;
}

static bool read_all(int fd, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

static bool write_all(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= (size_t)r;
  }
  return true;
}

static void count(gl_jit_cache *c, uint64_t *counter) {
  pthread_mutex_lock(&c->mu);
  (*counter)++;
  pthread_mutex_unlock(&c->mu);
  gl_worker_count(counter == &c->hits     ? GL_WC_JIT_HIT
                  : counter == &c->misses ? GL_WC_JIT_MISS
                                          : GL_WC_JIT_STORE);
}

/* mkdir -p with mode 0700 for every directory created. 0 or -1 (errno). */
static int mkdir_p(const char *dir) {
  char *p = strdup(dir);
  if (!p) return -1;
  int rc = 0;
  for (char *s = p + 1; *s && rc == 0; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0700) != 0 && errno != EEXIST) rc = -1;
    *s = '/';
  }
  if (rc == 0 && mkdir(p, 0700) != 0 && errno != EEXIST) rc = -1;
  int saved = errno;
  free(p);
  errno = saved;
  return rc;
}

/* ---- open / close ------------------------------------------------------- */

gl_jit_cache *gl_jit_cache_open(const char *dir, uint64_t max_bytes) {
  gl_jit_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    free(c);
    return NULL;
  }
  c->max_bytes = max_bytes;
  if (!dir || !*dir) return c;

  struct stat st;
  if (mkdir_p(dir) != 0) {
    GL_WARN("JIT cache disabled: cannot create directory %s: %s", dir, strerror(errno));
    return c;
  }
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    GL_WARN("JIT cache disabled: %s is not a directory", dir);
    return c;
  }
  if (access(dir, R_OK | W_OK | X_OK) != 0) {
    GL_WARN("JIT cache disabled: directory %s is not usable: %s", dir, strerror(errno));
    return c;
  }
  c->dir = strdup(dir);
  if (!c->dir) {
    pthread_mutex_destroy(&c->mu);
    free(c);
    return NULL;
  }
  return c;
}

void gl_jit_cache_close(gl_jit_cache *c) {
  if (!c) return;
  pthread_mutex_destroy(&c->mu);
  free(c->dir);
  free(c);
}

/* ---- get ---------------------------------------------------------------- */

/* Removes path if it is still the file open as fd (described by *st): a
 * writer may have renamed a good file over it meanwhile. */
static void remove_bad(const char *path, const struct stat *st, const char *why) {
  struct stat now;
  if (lstat(path, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino) {
    if (unlink(path) == 0)
      GL_WARN("JIT cache: removed %s: %s", path, why);
    else if (errno != ENOENT)
      GL_WARN("JIT cache: cannot remove bad entry %s (%s): %s", path, why, strerror(errno));
  }
}

/* Checks header h against the key; returns the reason it is bad, or NULL
 * with *payload_len the payload's length from the header. */
static const char *check_header(const uint8_t *h, const uint8_t sha[32], const char *tag,
                                uint64_t *payload_len) {
  if (memcmp(h, MAGIC, 8) != 0) return "bad magic";
  if (get_le32(h + 8) != FORMAT_VERSION) return "unknown format version";
  size_t tl = strlen(tag);
  if (get_le32(h + HDR_TAG_LEN_AT) != tl) return "tag mismatch";
  if (memcmp(h + HDR_KEY_AT, sha, 32) != 0) return "key mismatch";
  if (memcmp(h + HDR_TAG_AT, tag, tl) != 0) return "tag mismatch";
  for (size_t i = tl; i < GL_JIT_CACHE_MAX_TAG; i++)
    if (h[HDR_TAG_AT + i] != 0) return "tag mismatch";
  *payload_len = get_le64(h + HDR_PAYLOAD_LEN_AT);
  return NULL;
}

/* Reads and verifies the open entry fd of size bytes. Returns the reason
 * the file is bad (it should go), or NULL with *payload the verified
 * payload (malloc'd) and *plen its length, or *payload NULL when it is
 * merely unusable here (out of memory, a size this cache would not
 * store). */
static const char *read_entry(int fd, uint64_t size, const uint8_t sha[32], const char *tag,
                              uint64_t max_bytes, uint8_t **payload, uint64_t *plen) {
  *payload = NULL;
  uint8_t hdr[HDR_BYTES];
  if (size < HDR_BYTES || !read_all(fd, hdr, HDR_BYTES)) return "truncated header";
  const char *why = check_header(hdr, sha, tag, plen);
  if (why) return why;
  if (*plen != size - HDR_BYTES) return "payload length does not match the file size";
  if (*plen == 0 || *plen > max_bytes || *plen > SIZE_MAX) {
    GL_DEBUG("JIT cache: %llu-byte payload out of bounds", (unsigned long long)*plen);
    return NULL;
  }
  uint8_t *p = malloc((size_t)*plen);
  if (!p) return NULL;
  if (!read_all(fd, p, (size_t)*plen)) {
    free(p);
    return "truncated payload";
  }
  uint8_t sum[32];
  if (!sha256(p, (size_t)*plen, sum)) {
    free(p);
    return NULL;
  }
  if (memcmp(sum, hdr + HDR_PAYLOAD_SHA_AT, 32) != 0) {
    free(p);
    return "payload checksum mismatch";
  }
  *payload = p;
  return NULL;
}

bool gl_jit_cache_get(gl_jit_cache *c, const uint8_t ptx_sha256[32], const char *tag, uint8_t **bin,
                      size_t *len) {
  if (!c) return false;
  if (!c->dir || !tag_ok(tag)) {
    count(c, &c->misses);
    return false;
  }
  char name[NAME_MAX_BYTES];
  key_name(ptx_sha256, tag, name);
  char *path = join(c->dir, name);
  if (!path) {
    count(c, &c->misses);
    return false;
  }
  uint8_t *payload = NULL;
  bool hit = false;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno != ENOENT) GL_WARN("JIT cache: cannot open %s: %s", path, strerror(errno));
    goto out;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    GL_WARN("JIT cache: %s is not a regular file", path);
    goto out;
  }
  uint64_t plen = 0;
  const char *why =
      read_entry(fd, (uint64_t)st.st_size, ptx_sha256, tag, c->max_bytes, &payload, &plen);
  if (why) {
    remove_bad(path, &st, why);
    goto out;
  }
  if (!payload) goto out;
  /* Refresh the mtime: eviction removes the least recently used. */
  (void)futimens(fd, NULL);
  *bin = payload;
  *len = (size_t)plen;
  payload = NULL;
  hit = true;
out:
  if (fd >= 0) close(fd);
  free(payload);
  free(path);
  count(c, hit ? &c->hits : &c->misses);
  return hit;
}

/* ---- eviction ----------------------------------------------------------- */

typedef struct entry {
  char name[NAME_MAX_BYTES];
  uint64_t size;
  struct timespec mtime;
} entry;

static int by_age(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  if (a->mtime.tv_sec != b->mtime.tv_sec) return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
  if (a->mtime.tv_nsec != b->mtime.tv_nsec) return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* Removes the oldest entries (never `keep`) while the entries' total size
 * exceeds max_bytes, and temporary files left by crashed writers. */
static void evict(gl_jit_cache *c, const char *keep) {
  DIR *d = opendir(c->dir);
  if (!d) {
    GL_WARN("JIT cache: cannot scan %s: %s", c->dir, strerror(errno));
    return;
  }
  int dfd = dirfd(d);
  entry *v = NULL;
  size_t n = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    struct stat st;
    bool tmp = strncmp(de->d_name, ".tmp-", 5) == 0;
    if (!tmp && !is_entry_name(de->d_name)) continue;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (tmp) {
      if (now - st.st_mtime > STALE_TMP_SECONDS) (void)unlinkat(dfd, de->d_name, 0);
      continue;
    }
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      entry *nv = realloc(v, ncap * sizeof *nv);
      if (!nv) break; /* evict among those seen so far */
      v = nv;
      cap = ncap;
    }
    snprintf(v[n].name, sizeof v[n].name, "%s", de->d_name);
    v[n].size = (uint64_t)st.st_size;
    v[n].mtime = st.st_mtim;
    total += v[n].size;
    n++;
  }
  if (total > c->max_bytes) {
    qsort(v, n, sizeof *v, by_age);
    for (size_t i = 0; i < n && total > c->max_bytes; i++) {
      if (strcmp(v[i].name, keep) == 0) continue;
      if (unlinkat(dfd, v[i].name, 0) != 0 && errno != ENOENT) {
        GL_WARN("JIT cache: cannot evict %s/%s: %s", c->dir, v[i].name, strerror(errno));
        continue;
      }
      GL_DEBUG("JIT cache: evicted %s (%llu bytes)", v[i].name, (unsigned long long)v[i].size);
      total -= v[i].size;
    }
  }
  free(v);
  closedir(d);
}

/* ---- put ---------------------------------------------------------------- */

void gl_jit_cache_put(gl_jit_cache *c, const uint8_t ptx_sha256[32], const char *tag,
                      const uint8_t *bin, size_t len) {
  if (!c || !c->dir || len == 0 || (uint64_t)len > c->max_bytes) return;
  if (!tag_ok(tag)) {
    GL_WARN("JIT cache: refusing tag '%.80s' (want 1..%d of [A-Za-z0-9._-])", tag ? tag : "",
            GL_JIT_CACHE_MAX_TAG);
    return;
  }
  uint8_t hdr[HDR_BYTES];
  memset(hdr, 0, sizeof hdr);
  memcpy(hdr, MAGIC, 8);
  put_le32(hdr + 8, FORMAT_VERSION);
  size_t tl = strlen(tag);
  put_le32(hdr + HDR_TAG_LEN_AT, (uint32_t)tl);
  memcpy(hdr + HDR_KEY_AT, ptx_sha256, 32);
  memcpy(hdr + HDR_TAG_AT, tag, tl);
  put_le64(hdr + HDR_PAYLOAD_LEN_AT, (uint64_t)len);
  if (!sha256(bin, len, hdr + HDR_PAYLOAD_SHA_AT)) {
    GL_WARN("JIT cache: SHA-256 failed; not storing");
    return;
  }

  char name[NAME_MAX_BYTES], tmp_name[NAME_MAX_BYTES + 16];
  key_name(ptx_sha256, tag, name);
  snprintf(tmp_name, sizeof tmp_name, ".tmp-%.16s-XXXXXX", name);
  char *path = join(c->dir, name), *tmp = join(c->dir, tmp_name);
  if (!path || !tmp) goto out;
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    GL_WARN("JIT cache: cannot create a temporary file in %s: %s", c->dir, strerror(errno));
    goto out;
  }
  bool ok = write_all(fd, hdr, sizeof hdr) && write_all(fd, bin, len) && fsync(fd) == 0;
  int saved = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (ok && rename(tmp, path) != 0) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    GL_WARN("JIT cache: cannot store %s: %s", path, strerror(saved));
    (void)unlink(tmp);
    goto out;
  }
  /* Make the rename itself durable (best effort). */
  int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
  count(c, &c->stores);
  evict(c, name);
out:
  free(path);
  free(tmp);
}

void gl_jit_cache_stats(gl_jit_cache *c, uint64_t *hits, uint64_t *misses, uint64_t *stores) {
  uint64_t h = 0, m = 0, s = 0;
  if (c) {
    pthread_mutex_lock(&c->mu);
    h = c->hits;
    m = c->misses;
    s = c->stores;
    pthread_mutex_unlock(&c->mu);
  }
  if (hits) *hits = h;
  if (misses) *misses = m;
  if (stores) *stores = s;
}
