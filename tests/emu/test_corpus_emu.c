/*
 * test_corpus_emu.c - every corpus case on the emulated device, for the
 * PTX of both targets (sm_75 and sm_90), checked against the C
 * references. Each case runs with threads = 1 (deterministic) and again
 * with threads = 4: where the case's outputs cannot depend on block order
 * the two runs must be bit-identical, otherwise the second run is checked
 * against the reference too.
 *
 *   test_corpus_emu [-k] [--triton] [CASE...]
 * PTX comes from $GL_CORPUS_PTX_DIR, else the build's emu-kernels folder.
 * --triton runs Triton's tutorial kernels instead (corpus_triton.c), for
 * sm_80 and sm_90a, from tests/emu/triton/ (or $GL_CORPUS_PTX_DIR).
 * A case that needs a newer target (clusters: sm_90) is skipped on the
 * older one and not counted.
 * -k keeps going after a failure (the default too; exit status says).
 * One line per case and target, then
 *   "corpus: N/N cases passed on the emulator".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "corpus.h"
#include "corpus_emu.h"

#ifndef GL_EMU_KERNEL_DIR
#define GL_EMU_KERNEL_DIR "emu-kernels"
#endif
#ifndef GL_TRITON_PTX_DIR
#define GL_TRITON_PTX_DIR "tests/emu/triton"
#endif

static bool selected(const char *name, int argc, char **argv) {
  bool any = false;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-') continue;
    any = true;
    if (strcmp(argv[i], name) == 0) return true;
  }
  return !any;
}

/* Runs one case on one target; prints its line. 1 when it passed, 0 when
 * it failed, -1 when the case does not run on that target (min_sm). */
static int run_case(const gl_corpus_case *c, const char *dir, const char *arch,
                    gl_corpus_emu *emu, const gl_corpus_dev *dev) {
  gl_corpus_inst inst;
  uint8_t *outs1[GL_CORPUS_MAX_OUTS] = {0}, *outs4[GL_CORPUS_MAX_OUTS] = {0};
  char *ptx = NULL, err[1024] = "", msg[1024] = "";
  size_t len = 0;
  int ok = 0;
  uint64_t t0 = gl_mono_ns();
  gl_corpus_inst_build(c, &inst);
  if (!gl_corpus_runs_on(&inst, arch)) {
    printf("corpus: %s %s skipped (needs sm_%u)\n", c->name, arch, inst.min_sm);
    gl_corpus_inst_free(&inst);
    return -1;
  }
  if (gl_corpus_read_ptx(dir, arch, c->name, &ptx, &len) != 0) {
    printf("corpus: %s %s FAIL (cannot read %s/%s/%s.ptx)\n", c->name, arch, dir, arch, c->name);
    goto out;
  }
  emu->threads = 1;
  emu->stats.thread_insns = 0;
  if (gl_corpus_exec(&inst, dev, ptx, len, outs1, err, sizeof err) != 0) {
    printf("corpus: %s %s FAIL (%s)\n", c->name, arch, err);
    goto out;
  }
  uint64_t insns = emu->stats.thread_insns;
  if (gl_corpus_check(&inst, outs1, msg, sizeof msg) != 0) {
    printf("corpus: %s %s FAIL (%s)\n", c->name, arch, msg);
    goto out;
  }
  emu->threads = 4;
  if (gl_corpus_exec(&inst, dev, ptx, len, outs4, err, sizeof err) != 0) {
    printf("corpus: %s %s FAIL with threads=4 (%s)\n", c->name, arch, err);
    goto out;
  }
  const char *t4 = "threads=4 identical";
  if (c->deterministic) {
    for (unsigned k = 0; k < inst.nouts; k++)
      if (memcmp(outs1[k], outs4[k], inst.buf_bytes[inst.outs[k].buf]) != 0) {
        printf("corpus: %s %s FAIL (threads=4 output %s differs from threads=1)\n", c->name,
               arch, inst.outs[k].what);
        goto out;
      }
  } else {
    char msg4[1024];
    if (gl_corpus_check(&inst, outs4, msg4, sizeof msg4) != 0) {
      printf("corpus: %s %s FAIL with threads=4 (%s)\n", c->name, arch, msg4);
      goto out;
    }
    t4 = "threads=4 checked";
  }
  printf("corpus: %s %s ok (%s; %s; %llu thread-insns, %.0f ms)\n", c->name, arch, msg, t4,
         (unsigned long long)insns, (double)(gl_mono_ns() - t0) / 1e6);
  ok = 1;
out:
  fflush(stdout);
  gl_corpus_outs_free(&inst, outs1);
  gl_corpus_outs_free(&inst, outs4);
  gl_corpus_inst_free(&inst);
  free(ptx);
  return ok;
}

int main(int argc, char **argv) {
  bool triton = false;
  for (int i = 1; i < argc; i++) triton |= strcmp(argv[i], "--triton") == 0;
  const char *dir = getenv("GL_CORPUS_PTX_DIR");
  if (!dir || !*dir) dir = triton ? GL_TRITON_PTX_DIR : GL_EMU_KERNEL_DIR;
  const char *const *archs = triton ? (const char *const[]){"sm_80", "sm_90a"}
                                    : (const char *const[]){"sm_75", "sm_90"};
  const gl_corpus_case *cases = triton ? gl_corpus_triton_cases : gl_corpus_cases;
  size_t ncases = triton ? gl_corpus_triton_ncases : gl_corpus_ncases;
  gl_corpus_emu emu;
  gl_corpus_dev dev;
  if (gl_corpus_emu_init(&emu, &dev, 64u << 20, 1) != 0) {
    fprintf(stderr, "corpus: cannot create the emulated device\n");
    return 1;
  }
  unsigned total = 0, passed = 0;
  for (size_t a = 0; a < 2; a++)
    for (size_t i = 0; i < ncases; i++) {
      const gl_corpus_case *c = &cases[i];
      if (!selected(c->name, argc, argv)) continue;
      int r = run_case(c, dir, archs[a], &emu, &dev);
      if (r < 0) continue;
      total++;
      passed += (unsigned)r;
    }
  gl_corpus_emu_fini(&emu);
  printf("corpus: %u/%u cases passed on the emulator\n", passed, total);
  return passed == total && total > 0 ? 0 : 1;
}
