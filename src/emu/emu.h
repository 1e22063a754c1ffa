/*
 * emu.h - the emulated device: PTX run on the CPU.
 *
 * One gl_emu_device is one device context: a region of host memory that
 * plays the lease's VRAM (at a fixed device address), the modules loaded
 * into it, and launches. The worker's "emu" backend (src/worker/
 * backend_emu.c) wraps it; tests and the benchmark use it directly.
 *
 * Execution model (the contract tests check):
 *   - A block's threads are grouped in warps of 32 lanes (by linear thread
 *     id, x fastest). A warp runs in lockstep: it executes the instruction
 *     at the lowest program counter among its runnable lanes, for all lanes
 *     at that counter. Lanes parked at a barrier or exited do not run.
 *   - bar.sync parks a lane until every non-exited thread of the block has
 *     arrived (or the count given); shfl/vote/match see the full member mask.
 *   - Blocks run one after another in linear block order with threads = 1,
 *     so results are deterministic. threads > 1 runs blocks concurrently on
 *     that many host threads (global atomics stay atomic).
 *   - Launch limits are a real GPU's: at most 1024 threads a block, block
 *     dims (1024, 1024, 64), grid dims (2^31-1, 65535, 65535), 48 KiB static
 *     shared memory, GL_EMU_MAX_SHARED_BYTES static plus dynamic (static:
 *     the kernel's own, not other kernels' of the same module).
 *   - Every global, shared, local and parameter access is checked: outside
 *     the device region, a module's data or the space's size, the launch
 *     fails with CUDA_ERROR_ILLEGAL_ADDRESS in the message (misaligned:
 *     CUDA_ERROR_MISALIGNED_ADDRESS) and nothing outside is touched.
 */
#ifndef GL_EMU_EMU_H
#define GL_EMU_EMU_H

#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

typedef struct gl_emu_device gl_emu_device;
typedef struct gl_emu_module gl_emu_module;
typedef struct gl_emu_function gl_emu_function;

#define GL_EMU_REGION_BASE 0x0000000200000000ull /* device address of VRAM */
#define GL_EMU_MODULE_DATA_BASE 0x0000000100000000ull /* modules' .global data */
#define GL_EMU_MAX_SHARED_BYTES (227u * 1024u) /* per block, as on sm_90 */
#define GL_EMU_MAX_LOCAL_BYTES (512u * 1024u) /* per thread, as CUDA */
#define GL_EMU_MAX_MODULE_SHARED_BYTES (4u << 20) /* static .shared, all kernels */
#define GL_EMU_CC_MAJOR 9  /* the compute capability the device reports */
#define GL_EMU_CC_MINOR 0
#define GL_EMU_NAME "gpulease emulated device (PTX on CPU)"

/* Creates a device whose region is region_bytes of zeroed host memory at
 * device address GL_EMU_REGION_BASE. NULL when out of memory. */
gl_emu_device *gl_emu_device_new(uint64_t region_bytes);

/* Frees the device, its region and every module still loaded. */
void gl_emu_device_free(gl_emu_device *dev);

/* Host pointer to device bytes [addr, addr+len) of the region, or NULL if
 * that range is not entirely inside it. Valid until gl_emu_device_free. */
uint8_t *gl_emu_device_ptr(gl_emu_device *dev, uint64_t addr, uint64_t len);

/* Parses and loads PTX text (len bytes; a NUL inside ends it). The module
 * belongs to the device; unload it or free the device. Errors: as
 * gl_ptx_parse (UNSUPPORTED naming the instruction and line, LOAD_FAILED),
 * LOAD_FAILED for a kernel with more than GL_EMU_MAX_LOCAL_BYTES of local
 * memory a thread or a module with more than GL_EMU_MAX_MODULE_SHARED_BYTES
 * of static shared memory, CAPACITY_EXCEEDED when the modules' data space
 * is full. */
gpulease_status gl_emu_module_load(gl_emu_device *dev, const char *ptx, size_t len,
                                   gl_emu_module **out, char *err, size_t errlen);

void gl_emu_module_unload(gl_emu_device *dev, gl_emu_module *mod);

/* The kernel (.entry) `name` in mod, or NULL (a .func is not a kernel). */
const gl_emu_function *gl_emu_module_function(const gl_emu_module *mod, const char *name);

/* Number of kernel parameters; writes up to max of their sizes in bytes. */
size_t gl_emu_function_params(const gl_emu_function *fn, size_t *sizes, size_t max);

/* Static shared bytes the kernel uses (the .shared variables it and the
 * functions it calls reach, as ptxas counts them: what the launch limits
 * check) and its per-thread local bytes. */
void gl_emu_function_info(const gl_emu_function *fn, uint32_t *shared_bytes,
                          uint32_t *local_bytes, uint32_t *nregs);

/* What cuFuncGetAttribute reports besides the sizes above (any pointer may
 * be NULL): max_threads, the most threads a block may have (1024, or the
 * kernel's .maxntid / .reqntid product when smaller); target_sm, the
 * module's .target sm_XX as XX (CUDA's PTX_VERSION: the virtual
 * architecture); isa_version, the module's .version as major * 10 + minor. */
void gl_emu_function_limits(const gl_emu_function *fn, uint32_t *max_threads,
                            uint32_t *target_sm, uint32_t *isa_version);

typedef struct gl_emu_launch_cfg {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;   /* dynamic shared memory, bytes */
  void **args;             /* cuLaunchKernel style: args[i] -> param i */
  uint64_t deadline_ns;    /* gl_mono_ns() time to stop at; 0 = none */
  unsigned threads;        /* host threads; 0 or 1 = one, deterministic */
} gl_emu_launch_cfg;

typedef struct gl_emu_stats {
  uint64_t thread_insns;   /* instructions executed, summed over threads */
  uint64_t warp_insns;     /* instructions issued, summed over warps */
} gl_emu_stats;

/* Runs fn to completion. stats may be NULL. Errors (err names the CUDA
 * error it stands for, and the PTX line):
 *   GPULEASE_INVALID_ARGUMENT  launch dimensions or shared memory over the
 *                              limits (CUDA_ERROR_INVALID_VALUE), too many
 *                              threads for .reqntid/.maxntid
 *   GPULEASE_LAUNCH_FAILED     CUDA_ERROR_ILLEGAL_ADDRESS,
 *                              CUDA_ERROR_MISALIGNED_ADDRESS,
 *                              CUDA_ERROR_ILLEGAL_INSTRUCTION (trap),
 *                              CUDA_ERROR_LAUNCH_TIMEOUT (deadline passed),
 *                              a barrier that can never complete
 *   GPULEASE_NO_MEMORY         host memory for shared/local/registers */
gpulease_status gl_emu_launch(gl_emu_device *dev, const gl_emu_function *fn,
                              const gl_emu_launch_cfg *cfg, gl_emu_stats *stats, char *err,
                              size_t errlen);

#endif /* GL_EMU_EMU_H */
