# Parts of the worker used by sessions, tested without a device:
# the lease region's allocator (src/worker/suballoc.c), the on-disk JIT
# cache (jit_cache.c) and the table of loaded modules shared by a lease's
# sessions (modtab.c, with a fake backend).
gl_add_test(test_suballoc SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_suballoc.c LIBS gl_worker
            LABELS worker)
gl_add_test(test_jit_cache SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_jit_cache.c LIBS gl_worker
            LABELS worker)
gl_add_test(test_modtab SOURCES ${CMAKE_CURRENT_LIST_DIR}/unit/test_modtab.c LIBS gl_worker
            LABELS worker)
