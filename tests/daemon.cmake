# Tests of src/daemon, src/lib and src/cli.
gl_add_test(test_lease_table SOURCES unit/test_lease_table.c LIBS gl_daemon)
gl_add_test(test_e2e SOURCES e2e/test_e2e.c e2e/daemon_harness.c
  LIBS gpulease_static gl_proto gl_common Threads::Threads TIMEOUT 300)
add_dependencies(test_e2e gpuleased)
add_test(NAME test_cli COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_cli.sh ${PROJECT_BINARY_DIR})
set_tests_properties(test_cli PROPERTIES TIMEOUT 120)
gl_add_test(test_e2e_emu SOURCES e2e/test_e2e_emu.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 300 LABELS emu)
add_dependencies(test_e2e_emu gpuleased gl_kernels)

# `gpulease top` (src/cli/cmd_top.c) against a daemon on the emulated
# device, its Prometheus text parser, and the CLI's man page against its
# --help texts.
add_test(NAME test_top COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_top.sh ${PROJECT_BINARY_DIR})
set_tests_properties(test_top PROPERTIES TIMEOUT 120)
gl_add_test(test_prom_text SOURCES unit/test_prom_text.c LIBS gl_prom_text)
add_test(NAME test_man_cli
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_man_cli.sh ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(test_man_cli PROPERTIES TIMEOUT 120)
# Log lines (src/common/log.c): plain, and for the journal.
gl_add_test(test_log SOURCES unit/test_log.c LIBS gl_common TIMEOUT 30 LABELS unit)
# The client pool (src/lib/pool*.c, `gpulease pool`): six daemons on the
# emulated device, failures while a job runs, DNS SRV through dnsmasq.
add_test(NAME test_pool COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_pool.sh ${PROJECT_BINARY_DIR})
set_tests_properties(test_pool PROPERTIES TIMEOUT 240 LABELS emu)
# What PTX a node loads (issue 18): the inventory's targets and ISA
# versions, the library's check of a PTX before it is sent.
add_test(NAME test_ptx_targets
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_ptx_targets.sh ${PROJECT_BINARY_DIR})
set_tests_properties(test_ptx_targets PROPERTIES TIMEOUT 120 LABELS emu)
gl_add_test(test_ptx_header SOURCES unit/test_ptx_header.c LIBS gl_common LABELS unit)
