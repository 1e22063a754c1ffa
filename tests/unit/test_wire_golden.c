/*
 * test_wire_golden.c - this release's codec against the golden vectors of
 * the releases it must stay compatible with (docs/protocol.md section 2,
 * "Compatibility"): tests/data/wire/<release>/, written once by
 * tests/tools/gen_wire_golden.c with that release's codec and never
 * regenerated.
 *
 * For every message of a release's MANIFEST:
 *   - this release's decoder gives the status recorded there (requests with
 *     gl_request_decode, responses with gl_response_decode, a GPU_SUBMIT
 *     reply to a request with the kout flag with gl_response_decode_for),
 *     or the one a deliberate change of this release gives it (CHANGED
 *     below, each with the rule that made it);
 *   - what decodes re-encodes (gl_request_encode, gl_response_encode) to
 *     exactly the same bytes.
 * So this release's daemon reads the previous release's clients' requests
 * as that release did, and this release's library reads its daemons'
 * answers. Also checked: the folder and its MANIFEST list the same files,
 * and every op of the previous release has OK requests and responses there.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/wire.h"

#ifndef GL_SOURCE_DIR
#define GL_SOURCE_DIR "."
#endif

#define MAX_BODY (1u << 30)

/* The releases whose vectors this release must read: the previous one (and
 * its own, once written). Add each release's folder here when it is
 * written; never remove one within the compatibility window. */
static const char *const RELEASES[] = {"0.1"};
#define N_RELEASES (sizeof RELEASES / sizeof RELEASES[0])

/* A status this release gives a vector deliberately otherwise than the
 * vector's release, and the rule that changed it. */
typedef struct changed {
  const char *release, *name;
  gpulease_status status;
  const char *needle; /* in the decoder's message */
} changed;

/* 0.2 (docs/protocol.md section 2, rule (b)): a request body longer than
 * the daemon knows is UNSUPPORTED, naming the bytes past its last known
 * field, no longer MALFORMED. Responses stay strict. */
static const changed CHANGED[] = {
    {"0.1", "corpus-bad-trailing-byte", GPULEASE_UNSUPPORTED,
     "LEASE_FREE: 1 bytes after the last field this daemon knows (secret)"},
    {"0.1", "bad-lease-alloc-4-more-bytes", GPULEASE_UNSUPPORTED,
     "LEASE_ALLOC: 4 bytes after the last field this daemon knows (malloc_heap_bytes): a field "
     "of a newer release? this daemon speaks gpulease"},
    /* 0.2 gave GET_INVENTORY a request field (flags, a u32): one byte is
     * a truncated field now, not a field of a newer release. */
    {"0.1", "bad-get-inventory-1-more-byte", GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in flags"},
    {"0.1", "bad-lease-query-8-more-bytes", GPULEASE_UNSUPPORTED,
     "LEASE_QUERY: 8 bytes after the last field this daemon knows (secret)"},
    {"0.1", "bad-session-close-1-more-byte", GPULEASE_UNSUPPORTED,
     "SESSION_CLOSE: 1 bytes after the last field this daemon knows (seq)"},
    /* 0.2 gave MEM_ALLOC a request field (flags, a u32, after size_bytes):
     * the 4 bytes 00 00 00 04 are flags now, with bit 2, which is not
     * defined. */
    {"0.1", "bad-mem-alloc-4-more-bytes", GPULEASE_INVALID_ARGUMENT,
     "MEM_ALLOC: flags 0x00000004: only bit 0 (the device address) is defined"},
};
#define N_CHANGED (sizeof CHANGED / sizeof CHANGED[0])

typedef struct vec {
  char name[128];
  bool response;
  unsigned op;
  int status;
  bool kout;
  uint8_t *bytes;
  size_t len;
} vec;

typedef struct set {
  const char *release;
  vec *v;
  size_t n;
} set;

static set g_sets[N_RELEASES];

static char *path_of(const char *release, const char *name) {
  static char p[4096];
  snprintf(p, sizeof p, "%s/tests/data/wire/%s/%s", GL_SOURCE_DIR, release, name);
  return p;
}

static uint8_t *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0, k;
  uint8_t *p = malloc(cap);
  while ((k = fread(p + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) p = realloc(p, cap *= 2);
  }
  fclose(f);
  *len = n;
  return p;
}

static int load(void **state) {
  (void)state;
  for (size_t s = 0; s < N_RELEASES; s++) {
    set *st = &g_sets[s];
    st->release = RELEASES[s];
    FILE *m = fopen(path_of(st->release, "MANIFEST"), "r");
    if (!m) {
      fprintf(stderr, "no %s\n", path_of(st->release, "MANIFEST"));
      return -1;
    }
    size_t cap = 512;
    st->v = calloc(cap, sizeof *st->v);
    char line[1024];
    while (fgets(line, sizeof line, m)) {
      if (line[0] == '#' || line[0] == '\n') continue;
      if (st->n == cap) st->v = realloc(st->v, (cap *= 2) * sizeof *st->v);
      vec *v = &st->v[st->n];
      memset(v, 0, sizeof *v);
      char kind[16], mode[16];
      if (sscanf(line, "%127s %15s %x %d %15s", v->name, kind, &v->op, &v->status, mode) != 5) {
        fprintf(stderr, "%s MANIFEST: bad line '%s'\n", st->release, line);
        fclose(m);
        return -1;
      }
      v->response = strcmp(kind, "response") == 0;
      v->kout = strcmp(mode, "kout") == 0;
      v->bytes = read_all(path_of(st->release, v->name), &v->len);
      if (!v->bytes) {
        fprintf(stderr, "%s: listed in MANIFEST, missing\n", path_of(st->release, v->name));
        fclose(m);
        return -1;
      }
      st->n++;
    }
    fclose(m);
  }
  return 0;
}

static int unload(void **state) {
  (void)state;
  for (size_t s = 0; s < N_RELEASES; s++) {
    for (size_t i = 0; i < g_sets[s].n; i++) free(g_sets[s].v[i].bytes);
    free(g_sets[s].v);
  }
  return 0;
}

static const changed *changed_of(const char *release, const char *name) {
  for (size_t i = 0; i < N_CHANGED; i++)
    if (!strcmp(CHANGED[i].release, release) && !strcmp(CHANGED[i].name, name))
      return &CHANGED[i];
  return NULL;
}

/* Decodes v as the MANIFEST says; re-encodes what decodes into *re. */
static gpulease_status decode(const vec *v, gl_buf *re, char *err, size_t errlen) {
  static gl_request q;
  static gl_response r;
  gpulease_status st;
  if (v->response) {
    gl_request asked = {.op = GL_OP_GPU_SUBMIT};
    asked.u.submit.flags = GL_SUBMIT_F_KOUT;
    st = v->kout ? gl_response_decode_for(&asked, v->bytes, v->len, MAX_BODY, &r, err, errlen)
                 : gl_response_decode(v->bytes, v->len, MAX_BODY, &r, err, errlen);
    if (st == GPULEASE_OK) assert_int_equal(gl_response_encode(&r, re), GPULEASE_OK);
  } else {
    uint16_t op = 0;
    st = gl_request_decode(v->bytes, v->len, MAX_BODY, &q, &op, err, errlen);
    if (st == GPULEASE_OK) assert_int_equal(gl_request_encode(&q, re), GPULEASE_OK);
  }
  return st;
}

static void check_set(bool responses) {
  size_t checked = 0;
  for (size_t s = 0; s < N_RELEASES; s++) {
    const set *st = &g_sets[s];
    for (size_t i = 0; i < st->n; i++) {
      const vec *v = &st->v[i];
      if (v->response != responses) continue;
      char err[1024] = "";
      gl_buf re;
      gl_buf_init(&re);
      gpulease_status got = decode(v, &re, err, sizeof err);
      const changed *c = changed_of(st->release, v->name);
      int want = c ? (int)c->status : v->status;
      if ((int)got != want || (c && !strstr(err, c->needle))) {
        fprintf(stderr, "%s/%s: %s '%s', want %s%s%s\n", st->release, v->name,
                gpulease_status_name(got), err, gpulease_status_name(want),
                c ? " with " : "", c ? c->needle : "");
        fail();
      }
      if (got == GPULEASE_OK && (re.len != v->len || memcmp(re.data, v->bytes, v->len) != 0)) {
        fprintf(stderr, "%s/%s: re-encoding gives %zu other bytes (of %zu)\n", st->release,
                v->name, re.len, v->len);
        fail();
      }
      gl_buf_free(&re);
      checked++;
    }
  }
  assert_true(checked > 100);
}

static void test_requests(void **state) {
  (void)state;
  check_set(false);
}

static void test_responses(void **state) {
  (void)state;
  check_set(true);
}

/* The folder holds exactly the files its MANIFEST lists (and README.md). */
static void test_manifest_lists_the_folder(void **state) {
  (void)state;
  for (size_t s = 0; s < N_RELEASES; s++) {
    const set *st = &g_sets[s];
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/data/wire/%s", GL_SOURCE_DIR, st->release);
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.' || !strcmp(e->d_name, "MANIFEST") ||
          !strcmp(e->d_name, "README.md"))
        continue;
      bool listed = false;
      for (size_t i = 0; i < st->n && !listed; i++) listed = !strcmp(st->v[i].name, e->d_name);
      if (!listed) fprintf(stderr, "%s/%s: not in MANIFEST\n", st->release, e->d_name);
      assert_true(listed);
      files++;
    }
    closedir(d);
    assert_int_equal(files, st->n);
  }
  /* each deliberate change names a vector that exists */
  for (size_t c = 0; c < N_CHANGED; c++) {
    bool found = false;
    for (size_t s = 0; s < N_RELEASES; s++)
      if (!strcmp(g_sets[s].release, CHANGED[c].release))
        for (size_t i = 0; i < g_sets[s].n && !found; i++)
          found = !strcmp(g_sets[s].v[i].name, CHANGED[c].name);
    if (!found) fprintf(stderr, "CHANGED names %s, not a vector\n", CHANGED[c].name);
    assert_true(found);
  }
}

/* The ops of 0.1 (0.1's gl_op_name): each has an OK request and an OK
 * response among 0.1's vectors (WORKER_LOST: a response only). */
static void test_every_op_covered(void **state) {
  (void)state;
  static const uint16_t ops_0_1[] = {
      0x0001, 0x0002, 0x0003, 0x0004, 0x0005, 0x0101, 0x0102, 0x0103, 0x0104, 0x0105,
      0x0106, 0x0107, 0x0108, 0x0109, 0x0201, 0x0301, 0x0302, 0x0303, 0x0304, 0x0305,
      0x0311, 0x0312, 0x0313, 0x0314, 0x0315, 0x0316, 0x0317, 0x0318, 0x0321, 0x0322,
      0x0323, 0x0331, 0x0332, 0x0333, 0x0340, 0x0351, 0x0352, 0x0361, 0x0362, 0x0363,
      0x0364, 0x0365, 0x7F01, 0x7F02, 0x7F03, 0x7F04, 0x7F05, 0x7F06, 0x7F07};
  const set *st = NULL;
  for (size_t s = 0; s < N_RELEASES; s++)
    if (!strcmp(g_sets[s].release, "0.1")) st = &g_sets[s];
  assert_non_null(st);
  for (size_t k = 0; k < sizeof ops_0_1 / sizeof ops_0_1[0]; k++) {
    unsigned oks[2] = {0, 0};
    for (size_t i = 0; i < st->n; i++) {
      const vec *v = &st->v[i];
      /* that decodes; a response also with status OK in its header */
      bool ok_header = !v->response || (v->bytes[6] == 0 && v->bytes[7] == 0);
      if (v->op == ops_0_1[k] && v->status == 0 && ok_header) oks[v->response]++;
    }
    if ((!oks[0] && ops_0_1[k] != GL_OP_WORKER_LOST) || !oks[1])
      fprintf(stderr, "op 0x%04x (%s): %u OK requests, %u OK responses\n", ops_0_1[k],
              gl_op_name(ops_0_1[k]), oks[0], oks[1]);
    assert_true(oks[0] > 0 || ops_0_1[k] == GL_OP_WORKER_LOST);
    assert_true(oks[1] > 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_manifest_lists_the_folder),
      cmocka_unit_test(test_requests),
      cmocka_unit_test(test_responses),
      cmocka_unit_test(test_every_op_covered),
  };
  return cmocka_run_group_tests(tests, load, unload);
}
