# The kernel corpus (tests/emu/): CUDA kernels run as PTX on the emulated
# device and checked against C references; the same cases run on a real
# GPU through gl_corpus_gpu (by hand, on a GPU machine).
#
# PTX for two targets, ${CMAKE_BINARY_DIR}/emu-kernels/sm_75/NAME.ptx and
# sm_90/NAME.ptx: compiled with nvcc where GL_NVCC is found, else copied
# from the checked-in tests/emu/kernels/ptx/sm_XX/ (regenerate those with
# tests/emu/kernels/regen.sh after editing a .cu; the ctest
# emu_corpus_ptx_fresh fails when they are stale).

set(GL_EMU_CORPUS_DIR ${CMAKE_CURRENT_LIST_DIR}/emu)
set(GL_EMU_KERNEL_SRC ${GL_EMU_CORPUS_DIR}/kernels)
set(GL_EMU_KERNEL_DIR ${CMAKE_BINARY_DIR}/emu-kernels)
set(GL_EMU_KERNEL_ARCHS 75 90)

file(GLOB gl_emu_kernel_cus CONFIGURE_DEPENDS ${GL_EMU_KERNEL_SRC}/*.cu)
set(gl_emu_kernel_outputs "")
foreach(cu ${gl_emu_kernel_cus})
  get_filename_component(name ${cu} NAME_WE)
  foreach(arch ${GL_EMU_KERNEL_ARCHS})
    set(out ${GL_EMU_KERNEL_DIR}/sm_${arch}/${name}.ptx)
    if(GL_NVCC)
      add_custom_command(OUTPUT ${out}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${GL_EMU_KERNEL_DIR}/sm_${arch}
        COMMAND ${GL_NVCC} --ptx -arch=sm_${arch} -o ${out} ${cu}
        DEPENDS ${cu}
        COMMENT "nvcc --ptx -arch=sm_${arch} ${name}.cu"
        VERBATIM)
    else()
      add_custom_command(OUTPUT ${out}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${GL_EMU_KERNEL_DIR}/sm_${arch}
        COMMAND ${CMAKE_COMMAND} -E copy ${GL_EMU_KERNEL_SRC}/ptx/sm_${arch}/${name}.ptx ${out}
        DEPENDS ${GL_EMU_KERNEL_SRC}/ptx/sm_${arch}/${name}.ptx
        COMMENT "copy pre-generated sm_${arch}/${name}.ptx"
        VERBATIM)
    endif()
    list(APPEND gl_emu_kernel_outputs ${out})
  endforeach()
endforeach()
add_custom_target(gl_emu_kernels ALL DEPENDS ${gl_emu_kernel_outputs})

# The case table, its references and the emulator runner. The references
# must round exactly like IEEE: no contraction into fma, and directed
# roundings through fesetround.
add_library(gl_corpus STATIC
  ${GL_EMU_CORPUS_DIR}/corpus.c
  ${GL_EMU_CORPUS_DIR}/corpus_cases.c
  ${GL_EMU_CORPUS_DIR}/corpus_triton.c
  ${GL_EMU_CORPUS_DIR}/corpus_emu.c)
target_include_directories(gl_corpus PUBLIC ${GL_EMU_CORPUS_DIR})
target_link_libraries(gl_corpus PUBLIC gl_emu gl_common m)
set_source_files_properties(${GL_EMU_CORPUS_DIR}/corpus_cases.c ${GL_EMU_CORPUS_DIR}/corpus_triton.c
  PROPERTIES
  COMPILE_OPTIONS "-ffp-contract=off;-frounding-math;-fno-fast-math")

gl_add_test(test_corpus_emu
  SOURCES ${GL_EMU_CORPUS_DIR}/test_corpus_emu.c
  LIBS gl_corpus gl_emu gl_common
  TIMEOUT 300
  LABELS emu)
target_compile_definitions(test_corpus_emu PRIVATE GL_EMU_KERNEL_DIR="${GL_EMU_KERNEL_DIR}"
  GL_TRITON_PTX_DIR="${GL_EMU_CORPUS_DIR}/triton")
# Triton's tutorial kernels (tests/emu/triton/, compiled by Triton 3.9 for
# sm_80 and sm_90a with gen.py; checked in, so CI needs no Triton).
add_test(NAME test_triton_emu COMMAND test_corpus_emu --triton)
set_tests_properties(test_triton_emu PROPERTIES TIMEOUT 300 LABELS emu)
add_dependencies(test_corpus_emu gl_emu_kernels)

# The same cases on a real GPU and on the emulator, compared bit for bit.
# Not a ctest (CI has no GPU); by hand: ./gl_corpus_gpu emu-kernels
add_executable(gl_corpus_gpu ${CMAKE_CURRENT_LIST_DIR}/gpu/corpus_gpu.c)
target_link_libraries(gl_corpus_gpu PRIVATE gl_corpus gl_emu gl_gpu gl_common)
target_compile_definitions(gl_corpus_gpu PRIVATE GL_EMU_KERNEL_DIR="${GL_EMU_KERNEL_DIR}"
  GL_TRITON_PTX_DIR="${GL_EMU_CORPUS_DIR}/triton")
add_dependencies(gl_corpus_gpu gl_emu_kernels)

# With nvcc: the checked-in PTX must be what nvcc makes of the .cu today
# (compiler banner lines aside).
if(GL_NVCC)
  add_test(NAME emu_corpus_ptx_fresh
    COMMAND ${CMAKE_COMMAND} -DFRESH=${GL_EMU_KERNEL_DIR} -DCHECKED=${GL_EMU_KERNEL_SRC}/ptx
            -DSRC=${GL_EMU_KERNEL_SRC} -P ${GL_EMU_KERNEL_SRC}/check_ptx.cmake)
  set_tests_properties(emu_corpus_ptx_fresh PROPERTIES LABELS emu TIMEOUT 60)
endif()
