/*
 * lib_check.h - CHECK(call) for tests of the client library: asserts that a
 * gpulease_* call returns GPULEASE_OK and, when it does not, prints the call,
 * the status and the library's message. The call passes E as its
 * gpulease_error argument:
 *
 *   CHECK(gpulease_mem_alloc(s, 4096, &buf, E));
 */
#ifndef GL_TESTS_E2E_LIB_CHECK_H
#define GL_TESTS_E2E_LIB_CHECK_H

#include <stdio.h>

#include "gpulease/gpulease.h"

#define MiB (1ull << 20)

#define CHECK(call)                                                                  \
  do {                                                                               \
    gpulease_error e_;                                                               \
    gpulease_status st_ = (call);                                                    \
    if (st_ != GPULEASE_OK)                                                          \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,            \
              gpulease_status_name(st_), e_.message);                                \
    assert_int_equal(st_, GPULEASE_OK);                                              \
  } while (0)
#define E &e_

#endif
