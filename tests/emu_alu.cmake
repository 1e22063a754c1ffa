# Tests of the emulated device's ALU (src/emu/alu*.c): every arithmetic and
# logic PTX instruction checked on hand-built instructions against values
# derived from the PTX ISA, lane by lane.
gl_add_test(test_emu_alu SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_emu_alu.c LIBS gl_emu LABELS emu)
