# Tensor maps (TENSORMAP_ENCODE) through the client library, end to end on
# the emulated device, with tests/emu/async/async.cu's TMA kernel.
gl_add_test(test_e2e_tmap SOURCES e2e/test_e2e_tmap.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 180 LABELS emu)
add_dependencies(test_e2e_tmap gpuleased gpulease_cli)

# The same copy on a real GPU (tests/gpu/tmap_check.sh BUILD_DIR), or on
# the emulated device with --emu (test_tmap_check_emu).
add_executable(tmap_check ${CMAKE_CURRENT_LIST_DIR}/gpu/tmap_check.c)
target_link_libraries(tmap_check PRIVATE gpulease_static gl_common Threads::Threads)
add_dependencies(tmap_check gpuleased)
add_test(NAME test_tmap_check_emu
         COMMAND tmap_check ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR}/tests/emu/async/async_sm90a.ptx --emu)
set_tests_properties(test_tmap_check_emu PROPERTIES TIMEOUT 180 LABELS emu)
