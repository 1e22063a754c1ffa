/* submit_check.c - see submit_check.h. */
#include "worker/submit_check.h"

#include <stdio.h>
#include <string.h>

/* ---- image formats ------------------------------------------------------ */

static int is_space(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Skips whitespace, // line comments and block comments; returns the index
 * of the first other byte (len when none). An unterminated block comment
 * runs to the end. */
static size_t skip_blank(const uint8_t *p, size_t len) {
  size_t i = 0;
  while (i < len) {
    if (is_space(p[i])) {
      i++;
    } else if (p[i] == '/' && i + 1 < len && p[i + 1] == '/') {
      while (i < len && p[i] != '\n') i++;
    } else if (p[i] == '/' && i + 1 < len && p[i + 1] == '*') {
      i += 2;
      while (i < len && !(p[i] == '*' && i + 1 < len && p[i + 1] == '/')) i++;
      i = i < len ? i + 2 : len;
    } else {
      break;
    }
  }
  return i;
}

gpulease_image_format gl_image_detect(const uint8_t *image, size_t len) {
  if (!image) return GPULEASE_IMAGE_AUTO;
  if (len >= 4) {
    uint32_t magic = (uint32_t)image[0] | (uint32_t)image[1] << 8 | (uint32_t)image[2] << 16 |
                     (uint32_t)image[3] << 24;
    if (magic == GL_FATBIN_MAGIC) return GPULEASE_IMAGE_FATBIN;
    if (image[0] == 0x7f && image[1] == 'E' && image[2] == 'L' && image[3] == 'F')
      return GPULEASE_IMAGE_CUBIN;
  }
  static const char directive[] = ".version";
  size_t dlen = sizeof directive - 1;
  size_t i = skip_blank(image, len);
  if (len - i > dlen && memcmp(image + i, directive, dlen) == 0 && is_space(image[i + dlen]))
    return GPULEASE_IMAGE_PTX;
  return GPULEASE_IMAGE_AUTO;
}

const char *gl_image_format_name(gpulease_image_format f) {
  switch (f) {
  case GPULEASE_IMAGE_PTX:
    return "PTX";
  case GPULEASE_IMAGE_CUBIN:
    return "cubin";
  case GPULEASE_IMAGE_FATBIN:
    return "fatbin";
  case GPULEASE_IMAGE_AUTO:
    break;
  }
  return "auto";
}

gpulease_status gl_image_resolve(uint8_t declared, const uint8_t *image, size_t len,
                                 gpulease_image_format *format, size_t *text_len, char *err,
                                 size_t errlen) {
  gpulease_image_format f;
  switch (declared) {
  case GPULEASE_IMAGE_AUTO:
    f = gl_image_detect(image, len);
    if (f == GPULEASE_IMAGE_AUTO) {
      snprintf(err, errlen,
               "image format not recognised: %zu bytes that are neither PTX (text starting with "
               "'.version'), a cubin (ELF) nor a fatbin (magic 0x%08X)",
               len, GL_FATBIN_MAGIC);
      return GPULEASE_LOAD_FAILED;
    }
    break;
  case GPULEASE_IMAGE_PTX:
  case GPULEASE_IMAGE_CUBIN:
  case GPULEASE_IMAGE_FATBIN:
    f = (gpulease_image_format)declared;
    break;
  default:
    snprintf(err, errlen, "unknown image format %u (expected 0..3)", declared);
    return GPULEASE_UNSUPPORTED;
  }

  size_t n = len;
  if (f == GPULEASE_IMAGE_PTX) {
    const uint8_t *nul = image ? memchr(image, 0, len) : NULL;
    if (nul) {
      n = (size_t)(nul - image);
      for (size_t i = n; i < len; i++) {
        if (image[i] != 0) {
          snprintf(err, errlen,
                   "PTX image has a NUL byte at offset %zu followed by more text; the driver "
                   "would ignore everything after it",
                   n);
          return GPULEASE_INVALID_ARGUMENT;
        }
      }
    }
    if (n == 0) {
      snprintf(err, errlen, "PTX image is empty");
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  *format = f;
  *text_len = n;
  return GPULEASE_OK;
}

/* ---- ranges and dimensions ---------------------------------------------- */

gpulease_status gl_submit_check(const gl_submit_req *req, uint64_t vram_bytes,
                                uint64_t max_output, char *err, size_t errlen) {
  const uint32_t *g = req->grid, *b = req->block;
  if (g[0] == 0 || g[1] == 0 || g[2] == 0) {
    snprintf(err, errlen, "grid dimensions %ux%ux%u: every dimension must be at least 1", g[0],
             g[1], g[2]);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (b[0] == 0 || b[1] == 0 || b[2] == 0) {
    snprintf(err, errlen, "block dimensions %ux%ux%u: every dimension must be at least 1", b[0],
             b[1], b[2]);
    return GPULEASE_INVALID_ARGUMENT;
  }
  /* Each factor is below 2^32, so the first product fits in 64 bits; stop
   * before the second could overflow. */
  uint64_t threads = (uint64_t)b[0] * b[1];
  if (threads > GL_MAX_THREADS_PER_BLOCK ||
      (threads *= b[2]) > GL_MAX_THREADS_PER_BLOCK) {
    snprintf(err, errlen,
             "block dimensions %ux%ux%u exceed %d threads per block", b[0], b[1], b[2],
             GL_MAX_THREADS_PER_BLOCK);
    return GPULEASE_INVALID_ARGUMENT;
  }

  if (!req->kernel_name || req->kernel_name_len == 0 ||
      req->kernel_name_len > GL_WIRE_MAX_KERNEL_NAME) {
    snprintf(err, errlen, "kernel name must be 1..%d bytes", GL_WIRE_MAX_KERNEL_NAME);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (memchr(req->kernel_name, 0, req->kernel_name_len)) {
    snprintf(err, errlen, "kernel name contains a NUL byte");
    return GPULEASE_INVALID_ARGUMENT;
  }

  if (!gl_range_ok(req->input_offset, req->input_len, vram_bytes)) {
    snprintf(err, errlen,
             "input range is outside the lease: input_offset %llu + input_len %u > %llu bytes "
             "of VRAM",
             (unsigned long long)req->input_offset, req->input_len,
             (unsigned long long)vram_bytes);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (!gl_range_ok(req->output_offset, req->output_size, vram_bytes)) {
    snprintf(err, errlen,
             "output range is outside the lease: output_offset %llu + output_size %llu > %llu "
             "bytes of VRAM",
             (unsigned long long)req->output_offset, (unsigned long long)req->output_size,
             (unsigned long long)vram_bytes);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (req->output_size > max_output) {
    snprintf(err, errlen, "output_size %llu exceeds the largest reply of %llu bytes",
             (unsigned long long)req->output_size, (unsigned long long)max_output);
    return GPULEASE_TOO_LARGE;
  }

  if (req->flags & GL_SUBMIT_F_PARAMS) {
    if (req->param_count > GPULEASE_MAX_PARAMS) {
      snprintf(err, errlen, "%u kernel parameters exceed the limit of %d", req->param_count,
               GPULEASE_MAX_PARAMS);
      return GPULEASE_INVALID_ARGUMENT;
    }
    size_t pos = 0;
    gl_param p;
    unsigned i = 0;
    while (gl_param_next(req, &pos, &p)) {
      if (p.kind == GPULEASE_PARAM_POINTER) {
        if (p.offset >= vram_bytes) {
          snprintf(err, errlen,
                   "parameter %u: pointer offset %llu is outside the lease's %llu bytes of VRAM",
                   i, (unsigned long long)p.offset, (unsigned long long)vram_bytes);
          return GPULEASE_INVALID_ARGUMENT;
        }
      } else if (p.kind == GPULEASE_PARAM_SCALAR) {
        if (p.size == 0 || p.size > GPULEASE_MAX_SCALAR_BYTES || !p.value) {
          snprintf(err, errlen, "parameter %u: scalar size %u is not 1..%d bytes", i, p.size,
                   GPULEASE_MAX_SCALAR_BYTES);
          return GPULEASE_INVALID_ARGUMENT;
        }
      } else {
        snprintf(err, errlen, "parameter %u: unknown kind %u", i, p.kind);
        return GPULEASE_INVALID_ARGUMENT;
      }
      i++;
    }
    if (i != req->param_count) {
      snprintf(err, errlen, "param list holds %u parameters, param_count says %u", i,
               req->param_count);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  return GPULEASE_OK;
}
