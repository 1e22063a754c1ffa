# The emulated device's executor (src/emu/exec*.c, launch.c, device.c):
# machine semantics on small nvcc-compiled kernels in tests/emu/exec-samples/.
# 80 s alone under ASan on 2 cores; more beside other tests: TIMEOUT 300.
gl_add_test(test_emu_exec SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_emu_exec.c LIBS gl_emu TIMEOUT 300
            LABELS emu)
target_compile_definitions(test_emu_exec PRIVATE GL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
