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
 *   - Co-resident blocks: a cooperative launch runs all of the grid's
 *     blocks interleaved, and a cluster launch the blocks of each cluster:
 *     every block of the group has its state allocated, and the blocks take
 *     turns in a fixed order (linear slot order: clusters in linear order,
 *     ranks within), each running every warp of its own for a bounded slice
 *     (1024 warp instructions; nanosleep ends a slice), so a block spinning
 *     on a grid barrier yields to the others. One group runs on one host
 *     thread, so such launches are deterministic too; a cooperative grid is
 *     one group (threads is ignored), clusters are spread over `threads`
 *     host threads like blocks. Blocks of a group that are all parked at
 *     barriers fail the launch ("can never complete"); a group that issues
 *     2^30 warp instructions without a store, atomic, barrier or exit
 *     anywhere (blocks spinning on a barrier that cannot complete) fails
 *     too, and the deadline holds as always.
 *   - Cooperative launches (cfg->cooperative): at most gl_emu_occupancy *
 *     sm_count blocks (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE otherwise);
 *     %envreg1/%envreg2 hold the high/low half of the device address of a
 *     zeroed per-launch workspace of GL_EMU_GRID_WORKSPACE_BYTES at
 *     GL_EMU_GRID_WORKSPACE_BASE (global memory outside the region, atomics
 *     allowed), which cooperative_groups' grid.sync() uses. In other
 *     launches they read 0, so grid.sync() traps (as on a GPU); the other
 *     %envregN always read 0.
 *   - Clusters (sm_90): cfg->cluster, else the kernel's .reqnctapercluster,
 *     groups blocks (x fastest) into clusters of at most 8; the grid must be
 *     a multiple of it (CUDA_ERROR_INVALID_CLUSTER_SIZE otherwise, also for
 *     a cluster that differs from .reqnctapercluster, exceeds
 *     .maxclusterrank, or is missing for an .explicitcluster kernel). The
 *     %cluster_* registers, barrier.cluster.arrive/wait, mapa, getctarank
 *     and .shared::cluster accesses (ptx_ir.h: rank r's shared memory at
 *     (r+1) * 16 MiB in the shared window) work; a launch without clusters
 *     is clusters of one block, run on the plain path.
 *   - Launch limits are a real GPU's: at most 1024 threads a block, block
 *     dims (1024, 1024, 64), grid dims (2^31-1, 65535, 65535), 48 KiB static
 *     shared memory, GL_EMU_MAX_SHARED_BYTES static plus dynamic (static:
 *     the kernel's own, not other kernels' of the same module).
 *   - Asynchronous copies (cp.async, cp.async.bulk{.tensor}) complete when
 *     they issue; their groups and waits have nothing left to wait for. An
 *     mbarrier test_wait/try_wait that finds its phase incomplete parks
 *     the lane until a phase of an mbarrier of its block (or cluster)
 *     completes. When nothing else can run, parked waits return false (a
 *     try_wait's time limit); 1024 such stalls in a row with nothing
 *     stored, arrived or exited in between fail the launch ("can never
 *     complete"), naming the mbarrier and its state.
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
#define GL_EMU_GRID_WORKSPACE_BASE 0x00000000f0000000ull /* %envreg1/2's workspace */
#define GL_EMU_GRID_WORKSPACE_BYTES 16u
#define GL_EMU_MAX_CLUSTER_BLOCKS 8u /* portable cluster size limit */
#define GL_EMU_CC_MAJOR 9  /* the compute capability the device reports */
#define GL_EMU_CC_MINOR 0
/* The newest PTX ISA version its parser takes: every 9.x (reported as 9.9). */
#define GL_EMU_PTX_ISA_MAJOR 9
#define GL_EMU_PTX_ISA_MINOR 9
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

/* Blocks of fn with block_threads threads and dyn_shared_bytes of dynamic
 * shared memory that one emulated SM holds at once, as
 * cuOccupancyMaxActiveBlocksPerMultiprocessor answers on an H100 (sm_90):
 * the least of
 *   - 2048 threads an SM, counted in whole warps (64 warps);
 *   - 32 blocks an SM;
 *   - 228 KiB of shared memory an SM, a block taking its static and
 *     dynamic bytes plus 1 KiB reserved;
 *   - 65536 registers an SM, a thread taking the kernel's nregs
 *     (gl_emu_function_info: the PTX registers it uses, which ptxas would
 *     usually pack into fewer) capped at 255 and at 65536 / the most
 *     threads a block of it may have (1024, or its .maxntid/.reqntid) as
 *     ptxas caps them, so any block the emulator accepts fits an SM once;
 *     rounded up to 8 a thread (256 a warp).
 * 0 when such a block cannot run at all (0 threads, over the kernel's
 * thread limit or the shared memory limits). */
uint32_t gl_emu_occupancy(const gl_emu_function *fn, uint32_t block_threads,
                          uint32_t dyn_shared_bytes);

/* The largest cluster fn can be launched with, as
 * cuOccupancyMaxPotentialClusterSize answers: 0 when gl_emu_occupancy is 0,
 * else the kernel's .reqnctapercluster size when it has one, else
 * GL_EMU_MAX_CLUSTER_BLOCKS (8, the portable limit; non-portable sizes are
 * not offered), at most its .maxclusterrank. */
uint32_t gl_emu_max_cluster_size(const gl_emu_function *fn, uint32_t block_threads,
                                 uint32_t dyn_shared_bytes);

/* ---- Kernel output (printf) -------------------------------------------- */

/* Bytes of kernel output a device keeps until taken, by default. */
#define GL_EMU_KOUT_DEFAULT_LIMIT ((size_t)64 << 10)

/* Sets how many bytes of kernel output (vprintf text) the device keeps
 * until gl_emu_device_take_output takes them; text beyond is dropped and
 * counted. bytes 0 keeps none. Not while a launch runs. */
void gl_emu_device_set_output_limit(gl_emu_device *dev, size_t bytes);

/* Takes the kernel output the device's launches wrote since the last
 * call: the text of every vprintf (each call's text whole, in the order
 * the emulator ran the calls: with threads = 1, blocks in linear order and
 * within a warp lanes in ascending order). Returns a malloc'd buffer the
 * caller frees, *len bytes (not NUL-terminated; NULL with *len 0 when there
 * is none), and in *dropped (may be NULL) the bytes dropped over the limit
 * since the last call. NULL with *len 0 too when out of memory (the text
 * is then counted as dropped). Not while a launch runs. */
char *gl_emu_device_take_output(gl_emu_device *dev, size_t *len, uint64_t *dropped);

typedef struct gl_emu_launch_cfg {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;   /* dynamic shared memory, bytes */
  void **args;             /* cuLaunchKernel style: args[i] -> param i */
  uint64_t deadline_ns;    /* gl_mono_ns() time to stop at; 0 = none */
  unsigned threads;        /* host threads; 0 or 1 = one, deterministic */
  int cooperative;         /* cuLaunchCooperativeKernel: all blocks co-resident */
  uint32_t cluster[3];     /* cluster dimensions in blocks; 0,0,0 = none given
                              (the kernel's .reqnctapercluster, if any) */
  uint32_t sm_count;       /* SMs the device reports, for the cooperative
                              co-residency limit; 0 = 1 */
} gl_emu_launch_cfg;

typedef struct gl_emu_stats {
  uint64_t thread_insns;   /* instructions executed, summed over threads */
  uint64_t warp_insns;     /* instructions issued, summed over warps */
} gl_emu_stats;

/* Runs fn to completion. stats may be NULL. Errors (err names the CUDA
 * error it stands for, and the PTX line):
 *   GPULEASE_INVALID_ARGUMENT  launch dimensions or shared memory over the
 *                              limits (CUDA_ERROR_INVALID_VALUE), too many
 *                              threads for .reqntid/.maxntid,
 *                              CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
 *                              CUDA_ERROR_INVALID_CLUSTER_SIZE
 *   GPULEASE_LAUNCH_FAILED     CUDA_ERROR_ILLEGAL_ADDRESS,
 *                              CUDA_ERROR_MISALIGNED_ADDRESS,
 *                              CUDA_ERROR_ILLEGAL_INSTRUCTION (trap),
 *                              CUDA_ERROR_LAUNCH_TIMEOUT (deadline passed),
 *                              a barrier that can never complete, a group
 *                              of co-resident blocks without progress
 *   GPULEASE_NO_MEMORY         host memory for shared/local/registers */
gpulease_status gl_emu_launch(gl_emu_device *dev, const gl_emu_function *fn,
                              const gl_emu_launch_cfg *cfg, gl_emu_stats *stats, char *err,
                              size_t errlen);

/* ---- Tensor maps (cp.async.bulk.tensor) --------------------------------
 * A kernel's tensor map (CUtensorMap: 128 bytes, 64-byte aligned, passed
 * as a __grid_constant__ parameter or in global memory) is opaque in CUDA;
 * on the emulated device it holds, little-endian:
 *   0   u32 magic GL_EMU_TMAP_MAGIC
 *   4   u8  data type (CUtensorMapDataType's numbering, 0-12)
 *   5   u8  rank (1-5)
 *   6   u8  swizzle (CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B)
 *   7   u8  element size in bytes
 *   8   u64 global address
 *   16  u32 global_dim[5] (elements; unused dimensions 1)
 *   40  u64 global_strides[4] (bytes, of dimensions 1-4)
 *   72  u16 box_dim[5] (elements; unused 1)
 *   82  u8  oob_fill (0 zeros, 1 NaN for float types)
 *   83-127 zero
 * The tile copies need the box's first coordinate (dimension 0) to be a
 * multiple of 16 bytes, inside the tensor or not (CUDA_ERROR_ILLEGAL_-
 * INSTRUCTION otherwise, as an H200); they read elements outside the
 * tensor as the fill value. Stores and reductions trap at a negative
 * coordinate and write dimension 0 in whole 16-byte pieces (elements past
 * its end inside its last 16 bytes are written; none beyond), as an H200; with a swizzle the 16-byte chunk c of the shared
 * memory row r (rows of 128 bytes, counted from the address's own bits)
 * moves to c XOR (r mod 8, 4, 2) for 128B, 64B, 32B, as the hardware. */
#define GL_EMU_TMAP_BYTES 128u
#define GL_EMU_TMAP_MAGIC 0x50414d54u /* "TMAP" */

/* Writes the tensor map of a tiled tensor into tmap (GL_EMU_TMAP_BYTES),
 * with cuTensorMapEncodeTiled's arguments and rules: data_type 0-12 (its
 * CUtensorMapDataType), rank 1-5, global_address 16-byte aligned,
 * global_dim[rank] each 1..2^32, global_strides[rank - 1] (bytes, of
 * dimensions 1.. : multiples of 16 below 2^40), box_dim[rank] each 1..256
 * with box_dim[0] * element size a multiple of 16 bytes (at most the
 * swizzle's span with a swizzle), element_strides[rank] (only 1 here),
 * interleave 0 (none), swizzle 0-3, l2_promotion (ignored), oob_fill 0-1
 * (1 only for float types). GPULEASE_INVALID_ARGUMENT when an argument
 * breaks those rules, GPULEASE_UNSUPPORTED for interleaved layouts and
 * element strides other than 1; err (may be NULL) says which. */
gpulease_status gl_emu_tensormap_encode_tiled(void *tmap, uint32_t data_type, uint32_t rank,
                                              uint64_t global_address,
                                              const uint64_t *global_dim,
                                              const uint64_t *global_strides,
                                              const uint32_t *box_dim,
                                              const uint32_t *element_strides,
                                              uint32_t interleave, uint32_t swizzle,
                                              uint32_t l2_promotion, uint32_t oob_fill,
                                              char *err, size_t errlen);

#endif /* GL_EMU_EMU_H */
