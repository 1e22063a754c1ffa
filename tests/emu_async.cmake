# Asynchronous copies, mbarriers, redux and elect on the emulated device
# (src/emu/ptx_insn_async.c, exec_async.c, exec_mbar.c, exec_redux.c): the
# kernels of tests/emu/async/async.cu from their checked-in PTX for sm_80
# and sm_90a (tests/emu/async/regen.sh), hand-written PTX, and the parser's
# answers to each new form.
gl_add_test(test_emu_async SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_emu_async.c
            LIBS gl_emu TIMEOUT 300 LABELS emu)
target_compile_definitions(test_emu_async PRIVATE GL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
