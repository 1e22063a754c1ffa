/*
 * fuzz_cap.c - libFuzzer harness for capability tokens (src/auth/cap.c):
 * the unpacking of a lease secret from the network and its checks.
 *
 * Input: u64 lease_id, a 40-byte secret, u32 rights needed, u32 the lease's
 * generation, then a caller's tenant name (the rest, cut at a NUL). The
 * harness abort()s when a property fails:
 *   - unpacking and packing give back the same 40 bytes;
 *   - a secret from the input passes gl_cap_mac_ok only if it is the very
 *     one the daemon's key seals for its fields (a fuzzer never forges a
 *     MAC, so in practice: never);
 *   - sealing the input's fields gives a secret that passes gl_cap_mac_ok,
 *     and with any one bit flipped, or for another lease id, fails it;
 *   - gl_cap_check never answers OK when a needed right is missing, the
 *     generation differs, or the expiry has passed; it always leaves a
 *     NUL-terminated message when it refuses.
 *
 * Built with -fsanitize=fuzzer by fuzz/CMakeLists.txt (GL_FUZZ) and with
 * fuzz/replay_main.c as fuzz_cap_replay (tests/fuzz-corpus/CMakeLists.txt).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/cap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_cap: property violated: %s\n", what);
    abort();
  }
}

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8 + GL_CAP_BYTES + 8) return 0;
  static gl_cap_key key; /* all zeros: a fixed key, so inputs replay */
  uint64_t lease_id = be(data, 8);
  const uint8_t *secret = data + 8;
  uint32_t need = (uint32_t)be(data + 48, 4);
  uint32_t generation = (uint32_t)be(data + 52, 4);
  char caller[256];
  size_t n = size - 56 < sizeof caller - 1 ? size - 56 : sizeof caller - 1;
  memcpy(caller, data + 56, n);
  caller[n] = 0;

  gl_cap c;
  gl_cap_unpack(secret, &c);
  uint8_t again[GL_CAP_BYTES];
  gl_cap_pack(&c, again);
  check(memcmp(again, secret, GL_CAP_BYTES) == 0, "unpack/pack round trip");

  gl_cap sealed = c;
  gl_cap_seal(&key, lease_id, &sealed);
  uint8_t good[GL_CAP_BYTES];
  gl_cap_pack(&sealed, good);
  bool genuine = memcmp(good, secret, GL_CAP_BYTES) == 0;
  check(gl_cap_mac_ok(&key, lease_id, secret) == genuine, "MAC accepted only when genuine");
  check(gl_cap_mac_ok(&key, lease_id, good), "a sealed secret passes");
  check(!gl_cap_mac_ok(&key, lease_id + 1, good), "a secret of another lease fails");
  size_t bit = (size_t)(need % (GL_CAP_BYTES * 8));
  good[bit / 8] ^= (uint8_t)(1u << (bit % 8));
  check(!gl_cap_mac_ok(&key, lease_id, good), "one flipped bit fails");

  gl_cap_lease l = {.lease_id = lease_id, .generation = generation, .tenant = "alice"};
  char err[512];
  err[0] = 'x';
  uint64_t now = be(data + 16, 8) ^ 0x5a5a; /* near not_after, often */
  gpulease_status st = gl_cap_check(&c, &l, caller, need, "OP", now, err, sizeof err);
  if (st == GPULEASE_OK) {
    check((need & ~c.rights) == 0, "OK without a needed right");
    check(c.generation == generation, "OK with another generation");
    check(!c.not_after_s || now <= c.not_after_s, "OK after the expiry");
    check(!strcmp(caller, "alice") ||
              (caller[0] && c.audience && c.audience == gl_cap_audience(caller)),
          "OK for another tenant");
  } else {
    check(st == GPULEASE_UNAUTHORIZED, "a refusal is UNAUTHORIZED");
    check(memchr(err, 0, sizeof err) != NULL && err[0], "a refusal has a message");
  }
  return 0;
}
