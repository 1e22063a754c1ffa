# The emulated device's executor (src/emu/exec*.c, launch.c, device.c):
# machine semantics on small nvcc-compiled kernels in tests/emu/exec-samples/.
gl_add_test(test_emu_exec SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_emu_exec.c LIBS gl_emu
            LABELS emu)
target_compile_definitions(test_emu_exec PRIVATE GL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
