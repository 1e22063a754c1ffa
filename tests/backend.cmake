# The worker backends' session ops (src/backend/backend_emu.c, the CUDA
# backend's cuda_*.c): streams, async copies and launches, func_info,
# compile_ptx, and their thread safety.
gl_add_test(test_backend_emu
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_backend_emu.c
  LIBS gl_worker Threads::Threads
  LABELS gpu emu)
target_compile_definitions(test_backend_emu PRIVATE GL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# On a GPU machine, by hand (not in ctest): the CUDA backend's session ops,
# two streams on two threads, compile_ptx + cubin load, a fault.
#   ./gl_backend_stream_smoke kernels/vector_add.ptx
add_executable(gl_backend_stream_smoke ${CMAKE_CURRENT_LIST_DIR}/gpu/backend_stream_smoke.c)
target_link_libraries(gl_backend_stream_smoke PRIVATE gl_worker Threads::Threads)
if(TARGET gl_kernels)
  add_dependencies(gl_backend_stream_smoke gl_kernels)
endif()

# PTX newer than the driver (src/gpu/nvjitlink.c, src/backend/cuda_compat.c):
# the header parser, the advice without nvJitLink, and a real compile where
# nvJitLink is installed (skipped elsewhere).
gl_add_test(test_nvjitlink
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_nvjitlink.c
  LIBS gl_backend
  LABELS gpu unit)

# A fatbin's images (src/backend/fatbin.c) on fatbins nvcc made
# (tests/data/fatbin/gen.sh): zstd, LZ4 and none, the PTX picked for a
# device, damaged containers. Its fuzz harness's replay, over the same
# fatbins and the crashes found so far (tests/fuzz-corpus/fatbin/).
gl_add_test(test_fatbin
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_fatbin.c
  LIBS gl_backend
  LABELS unit)
target_compile_definitions(test_fatbin PRIVATE GL_FATBIN_DIR="${PROJECT_SOURCE_DIR}/tests/data/fatbin")
add_executable(fuzz_fatbin_replay ${PROJECT_SOURCE_DIR}/fuzz/fuzz_fatbin.c
                                  ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
target_link_libraries(fuzz_fatbin_replay PRIVATE gl_backend)
add_test(NAME fuzz_fatbin_replay
         COMMAND fuzz_fatbin_replay ${PROJECT_SOURCE_DIR}/tests/fuzz-corpus/fatbin)
set_tests_properties(fuzz_fatbin_replay PROPERTIES TIMEOUT 60 LABELS "fuzz;unit")

# With nvcc: the checked-in cubins of the graph WHILE loops' condition
# kernel (src/backend/while_cond/, scripts/gen_while_cond.sh) must be what
# this machine's nvcc makes of src/backend/while_cond.cu, byte for byte.
# Without nvcc (or for an architecture it does not know) the build uses the
# checked-in ones and there is nothing to compare.
if(GL_WHILE_COND_NVCC_ARCHS)
  list(JOIN GL_WHILE_COND_NVCC_ARCHS " " gl_wc_arch_words)
  add_test(NAME backend_while_cond_fresh
    COMMAND ${CMAKE_COMMAND} -DFRESH=${GL_WHILE_COND_DIR}
            -DCHECKED=${PROJECT_SOURCE_DIR}/src/backend/while_cond "-DARCHS=${gl_wc_arch_words}"
            -P ${PROJECT_SOURCE_DIR}/src/backend/while_cond/check.cmake)
  set_tests_properties(backend_while_cond_fresh PROPERTIES LABELS unit TIMEOUT 60)
endif()
