# Tests of src/auth's tenancy parts: the tenants file (tenants.c), quotas
# with a fake clock (quota.c) and the audit log (audit.c).
gl_add_test(test_tenants SOURCES unit/test_tenants.c LIBS gl_tenancy TIMEOUT 60 LABELS auth)
gl_add_test(test_quota SOURCES unit/test_quota.c LIBS gl_tenancy TIMEOUT 60 LABELS auth)
gl_add_test(test_audit SOURCES unit/test_audit.c LIBS gl_tenancy TIMEOUT 60 LABELS auth)

# The tenants file's libFuzzer harness (fuzz/fuzz_tenants.c), replayed
# without libFuzzer over a few seeds written here at configure time.
add_executable(fuzz_tenants_replay ${PROJECT_SOURCE_DIR}/fuzz/fuzz_tenants.c
                                   ${PROJECT_SOURCE_DIR}/fuzz/replay_main.c)
target_link_libraries(fuzz_tenants_replay PRIVATE gl_tenancy)
set(_gl_tenants_seeds ${CMAKE_CURRENT_BINARY_DIR}/tenants-seeds)
file(WRITE ${_gl_tenants_seeds}/good.ini
  "# seed\n[tenant alice]\ntoken = 0123456789abcdef0123456789abcdef\nvram = 16GiB\nleases = 8\n"
  "sessions = 32\nmax_ttl = 1h\ngpu_seconds_per_hour = 7200\nadmin = false\n\n"
  "[tenant spiffe://example.org/ns/ml/sa/bob]  ; comment\ntoken: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n"
  "max_ttl = unlimited\n\n[defaults]\nvram = 8GiB\nleases = 2\n")
file(WRITE ${_gl_tenants_seeds}/dup-tenant.ini "[tenant a]\n[tenant b]\n[tenant a]\n")
file(WRITE ${_gl_tenants_seeds}/dup-token.ini
  "[tenant a]\ntoken = 0123456789abcdef0123456789abcdef\n[tenant b]\ntoken = 0123456789abcdef0123456789abcdef\n")
file(WRITE ${_gl_tenants_seeds}/bad-lines.ini "[defaults]\ntoken = x\nvram\n[tenant ]\n[x\n  leases = -1\n")
file(WRITE ${_gl_tenants_seeds}/empty.ini "")
add_test(NAME fuzz_tenants_replay COMMAND fuzz_tenants_replay ${_gl_tenants_seeds})
set_tests_properties(fuzz_tenants_replay PROPERTIES TIMEOUT 60 LABELS "fuzz;auth")
