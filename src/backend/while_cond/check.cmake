# check.cmake - fails when a checked-in cubin under CHECKED differs from the
# one the build made with nvcc under FRESH, for the architectures in ARCHS
# (those this machine's nvcc compiled; src/backend/CMakeLists.txt).
#   cmake -DFRESH=build/src/backend/while_cond -DCHECKED=src/backend/while_cond
#         -DARCHS="75 80 ..." -P check.cmake
string(REPLACE " " ";" ARCHS "${ARCHS}")
set(stale "")
foreach(a ${ARCHS})
  set(f ${FRESH}/sm_${a}.cubin)
  set(k ${CHECKED}/sm_${a}.cubin)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "${f} missing: build the gl_backend target first")
  endif()
  if(NOT EXISTS ${k})
    list(APPEND stale "sm_${a}.cubin (not checked in)")
    continue()
  endif()
  file(SHA256 ${f} hf)
  file(SHA256 ${k} hk)
  if(NOT hf STREQUAL hk)
    list(APPEND stale "sm_${a}.cubin")
  endif()
endforeach()
if(stale)
  string(REPLACE ";" "\n  " list "${stale}")
  message(FATAL_ERROR "checked-in WHILE condition cubins are stale; run "
                      "scripts/gen_while_cond.sh:\n  ${list}")
endif()
list(JOIN ARCHS " sm_" names)
message(STATUS "checked-in WHILE condition cubins match nvcc (sm_${names})")
