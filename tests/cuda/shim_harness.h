/*
 * shim_harness.h - what the tests of the CUDA and NVML shims share: the
 * library found where a carried build has it, opened and its names looked
 * up by dlsym (failing the test when one is missing), a function run in a
 * child with its stderr caught, and a lease handed to the shim through the
 * environment as `gpulease exec` hands it.
 */
#ifndef GL_TESTS_CUDA_SHIM_HARNESS_H
#define GL_TESTS_CUDA_SHIM_HARNESS_H

#include <stddef.h>

#include "e2e/daemon_harness.h"
#include "gpulease/gpulease.h"

/* $GL_TEST_BIN_DIR/src/cuda/FILE where it is there (a build carried to a
 * GPU machine), else built (the build's own path). Static storage. */
const char *gl_shim_path(const char *file, const char *built);

/* dlopen()s gl_shim_path(file, built); fails the test when it does not
 * load. */
void *gl_shim_open(const char *file, const char *built);

/* The exported name, or the test fails. */
void *gl_shim_sym(void *so, const char *name);

/* Fills field `name` of struct *d (whose `so` is open) from the export. */
#define GL_SHIM_LOAD(d, name) *(void **)&(d)->name = gl_shim_sym((d)->so, #name)

/* Runs fn in a child with its stderr into a file (fn should _exit);
 * returns the child's exit status (128 + N when signal N ended it) and in
 * buf (len bytes, NUL-terminated) what it wrote on stderr. Call it before
 * this process loads a shim, so that the child's is its own. */
int gl_shim_in_child(void (*fn)(void), char *buf, size_t len);

/* Sets GPULEASE_ADDR, GPULEASE_PIN_SHA256, GPULEASE_LEASE and
 * GPULEASE_SECRET for the daemon dm and the lease l. */
void gl_shim_lease_env(const gl_test_daemon *dm, const gpulease_lease *l);

#endif /* GL_TESTS_CUDA_SHIM_HARNESS_H */
