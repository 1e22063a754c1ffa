/*
 * fatbin.h - the images inside a CUDA fatbin (nvcc -fatbin, or the
 * `.nv_fatbin` section of a program), read without the CUDA driver: for
 * the emulated device, which runs a fatbin's PTX, and for the CUDA
 * backend, which compiles a fatbin's PTX through nvJitLink when the
 * driver's JIT refuses every image in it (cuda_compat.h).
 *
 * The container, as nvcc 11 to 13 write it (little-endian; the fields we
 * do not use are skipped):
 *   header  u32 magic 0xBA55ED50, u16 version (1), u16 header_size (16),
 *           u64 entries_size: the entries follow, back to back
 *   entry   u16 kind (1 PTX, 2 ELF cubin), u16 (0x0101), u32 entry header
 *           size H (64 or more), u64 payload size P (padded), u32
 *           compressed size (when compressed), u32, u32 PTX ISA version
 *           (PTX entries: major << 16 | minor), u32 SM (90 for sm_90),
 *           u32, u32, u64 flags at 40 (0x2000: LZ4 block compression;
 *           0x8000: zstd), u64 at 48, u64 uncompressed size at 56 (when
 *           compressed); the payload starts H bytes after the entry, and
 *           the next entry H + P bytes after it.
 * Compressed payloads are expanded with liblz4 and libzstd.
 */
#ifndef GL_BACKEND_FATBIN_H
#define GL_BACKEND_FATBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GL_FATBIN_MAX_ENTRIES 64
#define GL_FATBIN_MAX_EXPANDED (256u << 20) /* an image expanded: at most 256 MiB */

typedef enum gl_fatbin_kind { GL_FATBIN_PTX = 1, GL_FATBIN_CUBIN = 2 } gl_fatbin_kind;

typedef struct gl_fatbin_entry {
  gl_fatbin_kind kind;
  unsigned arch;                  /* SM: 90 for sm_90 (and sm_90a) */
  unsigned isa_major, isa_minor;  /* PTX entries: the ISA version; else 0 */
  int compression;                /* 0 none, 1 LZ4, 2 zstd */
  const uint8_t *payload;         /* inside the image */
  size_t stored_len;              /* bytes of payload as stored */
  size_t expanded_len;            /* bytes once expanded (== stored_len if not compressed) */
} gl_fatbin_entry;

/* Lists the entries of a fatbin (len bytes). 0 with *n entries in out
 * (at most max, further ones ignored), or -1 with why in err (not a
 * fatbin, truncated, sizes that overflow, an unknown kind). */
int gl_fatbin_list(const uint8_t *image, size_t len, gl_fatbin_entry *out, size_t max, size_t *n,
                   char *err, size_t errlen);

/* The PTX a device of SM `sm` (90) should compile from the fatbin: the
 * entry of the highest SM not above sm (its highest ISA version at a tie),
 * expanded. 0 with *ptx (malloc'd, NUL-terminated, caller frees),
 * *ptx_len (without the NUL) and *arch; -1 with why in err (no PTX for
 * such a device: the message lists what the fatbin holds). */
int gl_fatbin_pick_ptx(const uint8_t *image, size_t len, unsigned sm, char **ptx, size_t *ptx_len,
                       unsigned *arch, char *err, size_t errlen);

/* Entry e's payload expanded (LZ4, zstd or as stored) into a malloc'd
 * buffer of e->expanded_len bytes plus a NUL (caller frees); NULL with
 * why in err (out of memory, or a payload that does not expand to the
 * size its header gives). */
char *gl_fatbin_expand(const gl_fatbin_entry *e, char *err, size_t errlen);

/* What the fatbin holds, for messages: "cubin sm_80, cubin sm_90, PTX
 * sm_90 (ISA 9.0)". Writes "" when it cannot be read. */
void gl_fatbin_describe(const uint8_t *image, size_t len, char *out, size_t outlen);

#endif /* GL_BACKEND_FATBIN_H */
