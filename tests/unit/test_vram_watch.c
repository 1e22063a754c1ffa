/*
 * test_vram_watch.c - src/daemon/vram_watch.c: free VRAM read off the
 * main loop. A fake reader stands for NVML: it counts its calls, can be
 * made slow, and gives no figure for some GPUs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "daemon/vram_watch.h"

typedef struct fake {
  _Atomic uint64_t value[4];
  _Atomic int calls[4];
  _Atomic unsigned delay_ms; /* each reading takes this long */
  int unknown;               /* this GPU has no figure (-1: none) */
} fake;

static int fake_read(void *ctx, uint32_t index, uint64_t *out) {
  fake *f = ctx;
  atomic_fetch_add(&f->calls[index], 1);
  unsigned ms = atomic_load(&f->delay_ms);
  if (ms) usleep(ms * 1000u);
  if ((int)index == f->unknown) return -1;
  *out = atomic_load(&f->value[index]);
  return 0;
}

static void sleep_ms(unsigned ms) { usleep(ms * 1000u); }

/* Waits up to 2 s for GPU i's figure to become v. */
static uint64_t wait_for(gl_vram_watch *w, uint32_t i, uint64_t v) {
  uint64_t got = 0;
  for (int k = 0; k < 200; k++) {
    got = gl_vram_watch_free(w, i, 7, NULL);
    if (got == v) break;
    sleep_ms(10);
  }
  return got;
}

static void first_reading_and_fallbacks(void **state) {
  (void)state;
  fake f = {.unknown = 1};
  atomic_store(&f.value[0], 1000);
  atomic_store(&f.value[2], 0); /* a full GPU is a figure too */
  gl_vram_watch *w = gl_vram_watch_new(3, fake_read, &f, 50);
  assert_non_null(w);
  assert_int_equal(atomic_load(&f.calls[0]), 1); /* read at the start */
  assert_int_equal(gl_vram_watch_free(w, 0, 7, NULL), 1000);
  assert_int_equal(gl_vram_watch_free(w, 1, 7, NULL), 7); /* no figure: the fallback */
  assert_int_equal(gl_vram_watch_free(w, 2, 7, NULL), 0);
  assert_int_equal(gl_vram_watch_free(w, 3, 9, NULL), 9);  /* past the GPUs */
  assert_int_equal(gl_vram_watch_free(w, 64, 9, NULL), 9);
  assert_int_equal(gl_vram_watch_read_now(w, 1, 5), 5);
  sleep_ms(120);
  bool stale = false;
  (void)gl_vram_watch_free(w, 0, 7, &stale);
  sleep_ms(100);
  /* GPU 1 had no figure at the start: never asked again */
  assert_int_equal(atomic_load(&f.calls[1]), 1);
  gl_vram_watch_del(w);
  assert_int_equal(gl_vram_watch_free(NULL, 0, 11, NULL), 11);
  gl_vram_watch_del(NULL);
}

static void fresh_reads_do_not_ask(void **state) {
  (void)state;
  fake f = {.unknown = -1};
  atomic_store(&f.value[0], 500);
  gl_vram_watch *w = gl_vram_watch_new(1, fake_read, &f, 60000);
  assert_non_null(w);
  bool stale = true;
  for (int i = 0; i < 1000; i++) assert_int_equal(gl_vram_watch_free(w, 0, 7, &stale), 500);
  assert_false(stale);
  sleep_ms(50);
  assert_int_equal(atomic_load(&f.calls[0]), 1);
  gl_vram_watch_del(w);
}

static void stale_read_asks_the_thread(void **state) {
  (void)state;
  fake f = {.unknown = -1};
  atomic_store(&f.value[0], 100);
  atomic_store(&f.value[1], 200);
  gl_vram_watch *w = gl_vram_watch_new(2, fake_read, &f, 20);
  assert_non_null(w);
  atomic_store(&f.value[0], 111);
  atomic_store(&f.value[1], 222);
  sleep_ms(40);
  bool stale = false;
  assert_int_equal(gl_vram_watch_free(w, 0, 7, &stale), 100); /* the old one, at once */
  assert_true(stale);
  assert_int_equal(wait_for(w, 0, 111), 111); /* then the thread's */
  assert_int_equal(wait_for(w, 1, 222), 222); /* the same round reads every GPU */
  /* read_now gives a figure at once and keeps it */
  atomic_store(&f.value[1], 333);
  assert_int_equal(gl_vram_watch_read_now(w, 1, 7), 333);
  assert_int_equal(gl_vram_watch_free(w, 1, 7, NULL), 333);
  gl_vram_watch_del(w);
}

static void slow_reader_never_blocks_a_read(void **state) {
  (void)state;
  fake f = {.unknown = -1};
  atomic_store(&f.value[0], 42);
  gl_vram_watch *w = gl_vram_watch_new(1, fake_read, &f, 1);
  assert_non_null(w);
  atomic_store(&f.delay_ms, 300); /* NVML under load */
  sleep_ms(5);
  uint64_t worst = 0;
  for (int i = 0; i < 200; i++) {
    uint64_t t0 = gl_mono_ns();
    assert_int_equal(gl_vram_watch_free(w, 0, 7, NULL), 42);
    uint64_t dt = gl_mono_ns() - t0;
    if (dt > worst) worst = dt;
    sleep_ms(1);
  }
  assert_true(worst < 150ull * 1000000ull); /* below one 300 ms reading, on a loaded CI */
  assert_true(atomic_load(&f.calls[0]) >= 2); /* the thread did read meanwhile */
  atomic_store(&f.delay_ms, 0);
  gl_vram_watch_del(w); /* waits for a reading in progress */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_reading_and_fallbacks),
      cmocka_unit_test(fresh_reads_do_not_ask),
      cmocka_unit_test(stale_read_asks_the_thread),
      cmocka_unit_test(slow_reader_never_blocks_a_read),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
