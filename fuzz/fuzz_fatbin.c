/*
 * fuzz_fatbin.c - libFuzzer harness for a fatbin's container
 * (src/backend/fatbin.c): what a client sends as a fatbin image, read by
 * the worker for the emulated device and for nvJitLink.
 *
 * Input: the image. The harness abort()s when a property fails:
 *   - every entry listed lies inside the image, payload included;
 *   - the PTX picked for any SM is NUL-terminated at its stated length, of
 *     at most GL_FATBIN_MAX_EXPANDED bytes, and comes from a PTX entry of
 *     an SM not above the one asked for;
 *   - a refusal always leaves a NUL-terminated message;
 *   - the device memory the image declares (src/backend/footprint.c), read
 *     as each format and for several SMs, is either read or refused with a
 *     message, and its total is never below any of its parts.
 *
 * Built with -fsanitize=fuzzer by fuzz/CMakeLists.txt (GL_FUZZ) and with
 * fuzz/replay_main.c as fuzz_fatbin_replay (tests/fuzz-corpus/CMakeLists.txt).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fatbin.h"
#include "backend/footprint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_fatbin: property failed: %s\n", what);
    abort();
  }
}

static void check_footprint(const uint8_t *data, size_t size) {
  static const gpulease_image_format fmts[] = {GPULEASE_IMAGE_AUTO, GPULEASE_IMAGE_PTX,
                                               GPULEASE_IMAGE_CUBIN, GPULEASE_IMAGE_FATBIN};
  static const unsigned sms[] = {0, 90, 100};
  for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
    for (size_t k = 0; k < sizeof sms / sizeof sms[0]; k++) {
      gl_footprint f;
      char err[512];
      memset(err, 'x', sizeof err);
      if (gl_footprint_of(data, size, fmts[i], sms[k], &f, err, sizeof err) != 0) {
        check(memchr(err, 0, sizeof err) != NULL, "footprint: message terminated");
        check(fmts[i] != GPULEASE_IMAGE_PTX, "footprint: PTX is always read");
        continue;
      }
      uint64_t t = gl_footprint_total(&f);
      check(t >= f.global_bytes && t >= f.const_bytes && t >= f.code_bytes, "footprint: total");
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_footprint(data, size);
  gl_fatbin_entry es[GL_FATBIN_MAX_ENTRIES];
  size_t n = 0;
  char err[512];
  memset(err, 'x', sizeof err);
  if (gl_fatbin_list(data, size, es, GL_FATBIN_MAX_ENTRIES, &n, err, sizeof err) != 0) {
    check(memchr(err, 0, sizeof err) != NULL, "list: message terminated");
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    check(es[i].payload >= data && es[i].payload <= data + size, "entry inside the image");
    check(es[i].stored_len <= (size_t)(data + size - es[i].payload), "payload inside the image");
  }
  static const unsigned sms[] = {0, 75, 90, 1000, 0xFFFFFFFFu};
  for (size_t k = 0; k < sizeof sms / sizeof sms[0]; k++) {
    char *ptx = NULL;
    size_t len = 0;
    unsigned arch = 0;
    memset(err, 'x', sizeof err);
    if (gl_fatbin_pick_ptx(data, size, sms[k], &ptx, &len, &arch, err, sizeof err) == 0) {
      check(ptx != NULL && ptx[len] == 0 && strlen(ptx) == len, "PTX terminated at its length");
      check(len <= GL_FATBIN_MAX_EXPANDED, "PTX within the bound");
      check(arch <= sms[k], "PTX not for a newer SM");
      free(ptx);
    } else {
      check(ptx == NULL, "no PTX on refusal");
      check(memchr(err, 0, sizeof err) != NULL, "pick: message terminated");
    }
  }
  char what[256];
  gl_fatbin_describe(data, size, what, sizeof what);
  check(memchr(what, 0, sizeof what) != NULL, "describe terminated");
  return 0;
}
