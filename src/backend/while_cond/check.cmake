# check.cmake - the ctest backend_while_cond_fresh: fails when the cubins
# checked in under CHECKED are not what scripts/gen_while_cond.sh makes of
# SOURCE (src/backend/while_cond.cu) today.
#  1. Always: CHECKED/source.sha256 (written by the script with the cubins)
#     must be SOURCE's SHA-256, so an edit of the kernel without a rerun of
#     the script fails on every machine, with or without nvcc.
#  2. For the architectures in ARCHS (those this machine's nvcc compiled;
#     src/backend/CMakeLists.txt): the cubin the build made under FRESH must
#     equal the checked-in one, compared by SAME (tests/unit/cubin_same)
#     section by section without the toolkit note, which names the
#     toolkit's install path (the same nvcc under another path writes the
#     same code and another note). Where this nvcc is another release than
#     the one that made the checked-in cubins, code may differ and only 1.
#     is checked, with a note saying so.
#   cmake -DSOURCE=src/backend/while_cond.cu -DCHECKED=src/backend/while_cond
#         [-DFRESH=build/src/backend/while_cond -DARCHS="75 80 ..."
#          -DSAME=build/tests/unit/cubin_same] -P check.cmake
set(run "scripts/gen_while_cond.sh")
file(SHA256 ${SOURCE} hs)
if(NOT EXISTS ${CHECKED}/source.sha256)
  message(FATAL_ERROR "${CHECKED}/source.sha256 missing; run ${run}")
endif()
file(STRINGS ${CHECKED}/source.sha256 recorded LIMIT_COUNT 1)
string(REGEX MATCH "^[0-9a-f]+" recorded "${recorded}")
if(NOT recorded STREQUAL hs)
  message(FATAL_ERROR "the checked-in WHILE condition cubins were made from another "
                      "while_cond.cu (source.sha256 ${recorded}, the file is ${hs}); run ${run}")
endif()
string(REPLACE " " ";" ARCHS "${ARCHS}")
set(stale "")
set(same "")
set(other "")
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
  execute_process(COMMAND ${SAME} ${f} ${k} RESULT_VARIABLE rc ERROR_VARIABLE why)
  string(STRIP "${why}" why)
  if(rc EQUAL 0)
    list(APPEND same sm_${a})
  elseif(rc EQUAL 1)
    list(APPEND stale "sm_${a}.cubin (${why})")
  elseif(rc EQUAL 3)
    list(APPEND other "sm_${a} (${why})")
  else()
    message(FATAL_ERROR "${SAME} ${f} ${k}: exit ${rc}: ${why}")
  endif()
endforeach()
if(stale)
  string(REPLACE ";" "\n  " list "${stale}")
  message(FATAL_ERROR "checked-in WHILE condition cubins are stale; run ${run}:\n  ${list}")
endif()
message(STATUS "checked-in WHILE condition cubins: made from this while_cond.cu")
if(same)
  list(JOIN same " " names)
  message(STATUS "  and the same code as this nvcc makes: ${names}")
endif()
if(other)
  string(REPLACE ";" "\n    " list "${other}")
  message(STATUS "  not compared, another toolkit release:\n    ${list}")
endif()
