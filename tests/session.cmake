# Sessions end to end (tests/e2e/test_e2e_session.c): a real gpuleased on
# the emulated device (GL_TEST_DEVICE=cuda: on real GPUs), libgpulease.
gl_add_test(test_e2e_session SOURCES e2e/test_e2e_session.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads m TIMEOUT 600 LABELS emu)
add_dependencies(test_e2e_session gpuleased gl_kernels)
