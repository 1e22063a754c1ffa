# Tests of src/gpu and src/worker. None needs a GPU: the driver loaders are
# checked to fail cleanly, the worker runs over a socketpair (its CUDA
# backend answering NO_DEVICE, or a fake backend for the submit path).
gl_add_test(test_worker
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_worker.c
  LIBS gl_worker Threads::Threads
  LABELS gpu)
gl_add_test(test_submit_check
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_submit_check.c
  LIBS gl_worker
  LABELS gpu)

# Our copies of the CUDA types and signatures against the real cuda.h,
# where the toolkit is installed (the build itself never needs it).
find_path(GL_CUDA_INCLUDE_DIR cuda.h PATHS /usr/local/cuda/include)
if(GL_CUDA_INCLUDE_DIR)
  gl_add_test(test_cuda_abi
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_cuda_abi.c
            ${CMAKE_CURRENT_LIST_DIR}/unit/cuda_abi_ours.c
    LIBS gl_gpu
    LABELS gpu)
  target_include_directories(test_cuda_abi SYSTEM PRIVATE ${GL_CUDA_INCLUDE_DIR})
endif()

# On a GPU machine, by hand (not in ctest):
#   ./gl_worker_smoke kernels/        (or kernels/iota.ptx)
add_executable(gl_worker_smoke ${CMAKE_CURRENT_LIST_DIR}/gpu/worker_smoke.c)
target_link_libraries(gl_worker_smoke PRIVATE gl_worker)
if(TARGET gl_kernels)
  add_dependencies(gl_worker_smoke gl_kernels)
endif()

# On a GPU machine (tests/gpu/check.sh): the system calls the workers make
# under the CUDA driver, to check the worker's seccomp allow-list against.
add_executable(gl_syscall_census ${CMAKE_CURRENT_LIST_DIR}/gpu/syscall_census.c)
target_link_libraries(gl_syscall_census PRIVATE gl_worker gl_dep_seccomp)

# On a machine with several GPUs (issue 17), by hand or from
# tests/gpu/multigpu.sh: one daemon over every GPU and the client pool on
# the node, one table. `multigpu_check BUILD --emu` runs it on emulated
# GPUs (test_multigpu_check_emu below).
add_executable(multigpu_check ${CMAKE_CURRENT_LIST_DIR}/gpu/multigpu_check.c)
target_link_libraries(multigpu_check PRIVATE gpulease_static gl_common Threads::Threads m)
add_dependencies(multigpu_check gpuleased gl_kernels gpulease_cli)
add_test(NAME test_multigpu_check_emu COMMAND multigpu_check ${PROJECT_BINARY_DIR} --emu)
set_tests_properties(test_multigpu_check_emu PROPERTIES TIMEOUT 300 LABELS emu)
