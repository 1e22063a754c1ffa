# The client side of sessions, gpulease_call, the renewer and the session
# CLI commands (tests/e2e/test_e2e_session_lib.c), against a real gpuleased
# on the emulated device.
gl_add_test(test_e2e_session_lib SOURCES e2e/test_e2e_session_lib.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 300 LABELS emu)
add_dependencies(test_e2e_session_lib gpuleased gl_kernels gpulease_cli)
