/*
 * backend_emu.h - the worker backend on the emulated device (src/emu/):
 * PTX run on the CPU, a region of host memory as the lease's VRAM.
 *
 * gpuleased offers it as an ordinary GPU marked emulated in the inventory
 * (`--device emu`, or by default on a node with no GPU), so every op works
 * on machines without one.
 */
#ifndef GL_WORKER_BACKEND_EMU_H
#define GL_WORKER_BACKEND_EMU_H

#include <stdint.h>

#include "backend/backend.h"

/* capacity_bytes: the most VRAM one lease may ask for (the daemon's
 * --emu-vram budget); threads: host threads per launch (1: blocks run in
 * order, deterministic). NULL when out of memory. */
gl_backend *gl_backend_emu_new(uint64_t capacity_bytes, unsigned threads);

#endif /* GL_WORKER_BACKEND_EMU_H */
