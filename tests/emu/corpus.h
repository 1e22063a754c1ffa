/*
 * corpus.h - the kernel corpus: CUDA kernels (tests/emu/kernels/NAME.cu, run
 * as PTX) with C references, shared by the emulator runner
 * (tests/emu/test_corpus_emu.c) and the GPU runner (tests/gpu/corpus_gpu.c).
 *
 * A case is a PTX file, a kernel in it and a setup function. Setup builds
 * one instance (gl_corpus_inst): the launch shape (cooperative or with a
 * cluster shape where the case says so), the device buffers with
 * their initial contents (deterministic pseudo-random data from a fixed
 * seed, edge values included), the parameter list, and for each output
 * buffer the expected contents computed on the host by a plain C17
 * reference, with the way to compare them.
 *
 * A runner is a gl_corpus_dev: five operations on one device (allocate,
 * write, read, load a module, launch) plus reset, so the same case code
 * runs on the emulator and through the CUDA driver.
 *
 * Comparison modes (per output):
 *   EXACT      the same bits; for float elements two NaNs of any payload
 *              also match (the reference cannot know the device's NaN).
 *   ULP        approximate ops: at most `ulp` units in the last place apart,
 *              or at most `abs_tol` apart; infinities and NaNs must match.
 *   UNORDERED  the same multiset of values (results in atomic order).
 *   REL        |got - want| <= rel_tol * max(|got|, |want|) (float sums
 *              whose order depends on atomic scheduling).
 */
#ifndef GL_TESTS_EMU_CORPUS_H
#define GL_TESTS_EMU_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GL_CORPUS_MAX_BUFS 8
#define GL_CORPUS_MAX_PARAMS 16
#define GL_CORPUS_MAX_OUTS 8
#define GL_CORPUS_MAX_PARAM_BYTES 64

typedef enum gl_corpus_elem {
  GL_CORPUS_U8,
  GL_CORPUS_U16,
  GL_CORPUS_U32,
  GL_CORPUS_U64,
  GL_CORPUS_F16,
  GL_CORPUS_F32,
  GL_CORPUS_F64
} gl_corpus_elem;

typedef enum gl_corpus_cmp {
  GL_CORPUS_EXACT,
  GL_CORPUS_ULP,
  GL_CORPUS_UNORDERED,
  GL_CORPUS_REL
} gl_corpus_cmp;

typedef struct gl_corpus_out {
  unsigned buf;        /* index of the device buffer read back */
  gl_corpus_elem elem;
  gl_corpus_cmp cmp;
  uint32_t ulp;        /* ULP: largest accepted distance in ulps */
  double abs_tol;      /* ULP: or largest accepted absolute difference */
  double rel_tol;      /* REL */
  const char *what;    /* name in messages: "y", "partial sums" */
  uint8_t *expect;     /* expected contents, the buffer's size (owned) */
} gl_corpus_out;

typedef struct gl_corpus_param {
  int buf;             /* >= 0: the device address of that buffer */
  size_t size;         /* bytes of the parameter */
  uint8_t bytes[GL_CORPUS_MAX_PARAM_BYTES]; /* scalar or struct value */
} gl_corpus_param;

typedef struct gl_corpus_case gl_corpus_case;

/* One built instance of a case: everything a runner needs. */
typedef struct gl_corpus_inst {
  const gl_corpus_case *c;
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;                   /* dynamic shared memory */
  bool cooperative;                        /* a cooperative launch (grid.sync) */
  uint32_t cluster[3];                     /* cluster shape given at launch; 0,0,0 none */
  unsigned min_sm;                         /* run only PTX for this target and up
                                              (90: clusters); 0 = every target */
  unsigned nbufs;
  size_t buf_bytes[GL_CORPUS_MAX_BUFS];
  uint8_t *init[GL_CORPUS_MAX_BUFS];       /* initial contents (owned) */
  unsigned nparams;
  gl_corpus_param params[GL_CORPUS_MAX_PARAMS];
  unsigned nouts;
  gl_corpus_out outs[GL_CORPUS_MAX_OUTS];
} gl_corpus_inst;

struct gl_corpus_case {
  const char *name;    /* case name, also the PTX file's (NAME.ptx) */
  const char *kernel;  /* .entry name */
  bool deterministic;  /* outputs bit-identical whatever the block order */
  void (*setup)(gl_corpus_inst *inst);
};

extern const gl_corpus_case gl_corpus_cases[];
extern const size_t gl_corpus_ncases;

/* Triton's tutorial kernels (corpus_triton.c): PTX in tests/emu/triton/
 * for sm_80 and sm_90a. */
extern const gl_corpus_case gl_corpus_triton_cases[];
extern const size_t gl_corpus_triton_ncases;

/* ---- Runners ------------------------------------------------------------ */

/* A device the corpus runs on. Every operation returns 0, or -1 with a
 * message in err. Addresses are device addresses. Buffers and modules live
 * until reset. */
typedef struct gl_corpus_dev {
  void *self;
  const char *name; /* "emulator", "gpu" */
  int (*alloc)(void *self, size_t bytes, uint64_t *addr, char *err, size_t errlen);
  int (*write)(void *self, uint64_t addr, const void *src, size_t bytes, char *err,
               size_t errlen);
  int (*read)(void *self, void *dst, uint64_t addr, size_t bytes, char *err, size_t errlen);
  int (*load)(void *self, const char *ptx, size_t len, void **mod, char *err, size_t errlen);
  /* args[i] points at parameter i's bytes (cuLaunchKernel style);
   * sizes[i] is its size, for the runner to check against the kernel.
   * cooperative and cluster (0,0,0: none) as in gl_corpus_inst. */
  int (*launch)(void *self, void *mod, const char *kernel, const uint32_t grid[3],
                const uint32_t block[3], uint32_t shared_bytes, bool cooperative,
                const uint32_t cluster[3], void **args, const size_t *sizes, size_t nparams,
                char *err, size_t errlen);
  void (*reset)(void *self); /* frees every buffer and module */
} gl_corpus_dev;

/* Builds the instance of case c (deterministic: same bytes every time). */
void gl_corpus_inst_build(const gl_corpus_case *c, gl_corpus_inst *inst);
void gl_corpus_inst_free(gl_corpus_inst *inst);

/* Whether inst runs on PTX for arch ("sm_75", "sm_90"): its min_sm. */
bool gl_corpus_runs_on(const gl_corpus_inst *inst, const char *arch);

/* Reads DIR/ARCH/NAME.ptx into a malloc'd NUL-terminated buffer. 0 or -1. */
int gl_corpus_read_ptx(const char *dir, const char *arch, const char *name, char **text,
                       size_t *len);

/* Runs inst on dev: allocates and fills the buffers, loads ptx, launches,
 * reads every output back into outs[k] (malloc'd, the buffer's size; free
 * with gl_corpus_outs_free), then resets dev. 0 or -1 with err. */
int gl_corpus_exec(const gl_corpus_inst *inst, const gl_corpus_dev *dev, const char *ptx,
                   size_t ptx_len, uint8_t *outs[GL_CORPUS_MAX_OUTS], char *err,
                   size_t errlen);
void gl_corpus_outs_free(const gl_corpus_inst *inst, uint8_t *outs[GL_CORPUS_MAX_OUTS]);

/* Checks outs against the expected contents. 0 when every output passes;
 * msg then summarises ("65536 values exact"), else names the first
 * mismatch of the first failing output. */
int gl_corpus_check(const gl_corpus_inst *inst, uint8_t *const outs[GL_CORPUS_MAX_OUTS],
                    char *msg, size_t msglen);

/* Compares two runs' outputs with each other (GPU against emulator):
 * EXACT outputs bit for bit, UNORDERED ones as multisets, ULP and REL ones
 * by their largest ulp distance. Counts exact outputs (*n_exact) and those
 * bit-identical (*n_same); writes a line to msg. Returns the number of
 * EXACT/UNORDERED outputs that differ. */
int gl_corpus_diff(const gl_corpus_inst *inst, uint8_t *const a[GL_CORPUS_MAX_OUTS],
                   uint8_t *const b[GL_CORPUS_MAX_OUTS], unsigned *n_exact, unsigned *n_same,
                   char *msg, size_t msglen);

/* Size in bytes of one element. */
size_t gl_corpus_elem_size(gl_corpus_elem e);

#endif /* GL_TESTS_EMU_CORPUS_H */
