/*
 * entry.h - the opening and closing of every entry point: the lock, then
 * cuInit's and the sticky error's checks (GL_CU_ENTER), or also the
 * session, the primary context (GL_CU_ENTER_CTX). Both first send the
 * launch the shim holds back (launch.c), so that every op keeps its order;
 * the synchronising calls (GL_CU_ENTER_SYNC) leave it to gl_cu_sync(),
 * which sends it with the SYNC in one round trip. Internal to src/cuda.
 */
#ifndef GL_CUDA_ENTRY_H
#define GL_CUDA_ENTRY_H

#include "cuda/cu.h"

/* What an entry point needs before it runs (under the lock): cuInit done
 * and no sticky error; with need_session, the primary context too; with
 * flush, the held-back launch sent. */
static inline CUresult gl_cu_enter(bool need_session, bool flush) {
  CUresult r = need_session ? gl_cu_need_session() : gl_cu_ready();
  return r == CUDA_SUCCESS && flush ? gl_cu_flush_launch() : r;
}

/* Takes the lock and checks; on failure unlocks and returns the error
 * from the entry point. */
#define GL_CU_ENTER_WITH(need_session, flush)                  \
  gl_cu_lock();                                                \
  do {                                                         \
    CUresult enter_st_ = gl_cu_enter(need_session, flush);     \
    if (enter_st_ != CUDA_SUCCESS) {                           \
      gl_cu_unlock();                                          \
      return enter_st_;                                        \
    }                                                          \
  } while (0)

#define GL_CU_ENTER() GL_CU_ENTER_WITH(false, true)
#define GL_CU_ENTER_CTX() GL_CU_ENTER_WITH(true, true)
#define GL_CU_ENTER_SYNC() GL_CU_ENTER_WITH(true, false)

/* Unlocks and returns r. */
static inline CUresult gl_cu_leave(CUresult r) {
  gl_cu_unlock();
  return r;
}

/* A stream handle the shim knows: 0 (the legacy default), CU_STREAM_LEGACY
 * (0x1), CU_STREAM_PER_THREAD (0x2), or one of cuStreamCreate's. */
static inline bool gl_cu_stream_ok(CUstream s) {
  return (uintptr_t)s <= 2 || s->magic == GL_CU_STREAM_MAGIC;
}

#endif /* GL_CUDA_ENTRY_H */
