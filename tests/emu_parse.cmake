# Tests of the emulated device's PTX parser (src/emu/ptx_*.c): decoded
# fields, layout, every error class, truncated and mutated input, the nvcc
# samples in tests/emu/ptx-samples/ and tests/fuzz-corpus/ptx/, and the
# libFuzzer harness replaying that corpus without libFuzzer.
gl_add_test(test_ptx_parse SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_ptx_parse.c
            LIBS gl_emu LABELS emu)
target_compile_definitions(test_ptx_parse PRIVATE GL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

add_executable(fuzz_ptx_replay ${PROJECT_SOURCE_DIR}/fuzz/fuzz_ptx.c
                               ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
target_link_libraries(fuzz_ptx_replay PRIVATE gl_emu)
add_test(NAME fuzz_ptx_replay COMMAND fuzz_ptx_replay ${PROJECT_SOURCE_DIR}/tests/fuzz-corpus/ptx)
set_tests_properties(fuzz_ptx_replay PROPERTIES TIMEOUT 120 LABELS "fuzz;emu")
