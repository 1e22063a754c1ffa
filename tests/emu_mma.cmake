# The emulated device's matrix instructions (ldmatrix, stmatrix, movmatrix,
# mma.sync, wgmma): Triton's matmul kernels and nvcc-compiled kernels in
# tests/emu/mma/ (PTX checked in; gen.sh makes it), against C references.
gl_add_test(test_emu_mma SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_emu_mma.c LIBS gl_emu TIMEOUT 300
            LABELS emu)
target_compile_definitions(test_emu_mma PRIVATE GL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
