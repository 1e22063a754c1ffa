# Tests of src/auth's capability tokens (cap.c): sealing, checking, and the
# replay of the token fuzz harness's seeds.
gl_add_test(test_cap SOURCES unit/test_cap.c LIBS gl_auth_cap gl_proto TIMEOUT 60 LABELS auth)

add_executable(fuzz_cap_replay ${PROJECT_SOURCE_DIR}/fuzz/fuzz_cap.c
                               ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
target_link_libraries(fuzz_cap_replay PRIVATE gl_auth_cap gl_proto)
add_test(NAME fuzz_cap_replay COMMAND fuzz_cap_replay ${PROJECT_SOURCE_DIR}/tests/fuzz-corpus/cap)
set_tests_properties(fuzz_cap_replay PROPERTIES TIMEOUT 60 LABELS "fuzz;auth")
