# Kernel output: device-side printf and assert on the emulated device
# (src/emu/kprintf.c), with nvcc-compiled kernels in tests/emu/kprint/.
gl_add_test(test_emu_kprintf SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_emu_kprintf.c LIBS gl_emu
            LABELS emu)
target_compile_definitions(test_emu_kprintf PRIVATE GL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# End to end: daemon on the emulated device and the CLI.
add_test(NAME test_kprint_cli
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_kprint.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(test_kprint_cli PROPERTIES TIMEOUT 120 LABELS daemon)

# The client library's callback (GPU_SUBMIT and sessions), end to end.
gl_add_test(test_e2e_kprint SOURCES e2e/test_e2e_kprint.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 120 LABELS emu)
add_dependencies(test_e2e_kprint gpuleased gpulease_cli)

# The worker's capture of fd 1 and 2 (src/worker/kout.c), in a child process.
gl_add_test(test_worker_kout SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_worker_kout.c
            LIBS gl_worker LABELS gpu)
