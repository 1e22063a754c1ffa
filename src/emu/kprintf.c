/*
 * kprintf.c - the .extern .funcs the emulated device provides to kernels:
 * vprintf (what CUDA's device-side printf compiles to) and __assertfail
 * (device-side assert), and the device's kernel output buffer.
 *
 *   vprintf(.param .b64 fmt, .param .b64 args) -> .b32
 *     fmt is the generic address of a NUL-terminated format string, args
 *     that of a packed buffer of the arguments, each at an offset aligned
 *     to its size: int, unsigned, char (promoted) 4 bytes; long, long
 *     long, pointers, strings and doubles (floats are promoted) 8 bytes.
 *     Conversions: d i u o x X c s p e E f F g G a A and %%, with the flags
 *     - + space # 0, a width and a precision (numbers or `*`, which take a
 *     4-byte int argument each), and the length modifiers hh h l ll; at
 *     most 32 arguments, as CUDA. A conversion this does not know, or one
 *     past the 32nd argument (or with no argument buffer), is written as it
 *     stands. Each conversion is formatted by the host's snprintf, so the
 *     text is C's. Widths and precisions are capped at 4096, %s strings at
 *     65536 bytes. Returns the number of arguments read, -1 for a NULL
 *     format (nothing written).
 *   __assertfail(.param .b64 message, .param .b64 file, .param .b32 line,
 *                .param .b64 function, .param .b64 charSize)
 *     fails the launch with LAUNCH_FAILED, message
 *     "CUDA_ERROR_ASSERT: line N: FILE:LINE: FUNCTION: block: [x,y,z],
 *     thread: [x,y,z] Assertion `MESSAGE` failed." (N the PTX line), the
 *     text CUDA prints; with several lanes at once, the lowest lane's.
 *
 * Output: each vprintf call's text is appended whole, under the device's
 * lock, to the device's buffer (gl_emu_device_take_output); what does not
 * fit its limit is dropped and counted.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/exec_internal.h"

#define KP_MAX_ARGS 32
#define KP_MAX_FIELD 4096       /* widths and precisions */
#define KP_MAX_STRING 65536     /* bytes of a %s string or a format */
#define KP_MAX_ASSERT_STRING 1024

struct gl_emu_kout {
  pthread_mutex_t mu;
  char *buf;
  size_t len, cap, limit;
  uint64_t dropped;
};

struct gl_emu_kout *gl_emu__kout_new(void) {
  struct gl_emu_kout *k = calloc(1, sizeof *k);
  if (!k)
    return NULL;
  if (pthread_mutex_init(&k->mu, NULL) != 0) {
    free(k);
    return NULL;
  }
  k->limit = GL_EMU_KOUT_DEFAULT_LIMIT;
  return k;
}

void gl_emu__kout_free(struct gl_emu_kout *k) {
  if (!k)
    return;
  pthread_mutex_destroy(&k->mu);
  free(k->buf);
  free(k);
}

void gl_emu_device_set_output_limit(gl_emu_device *dev, size_t bytes) {
  if (dev && dev->kout)
    dev->kout->limit = bytes;
}

char *gl_emu_device_take_output(gl_emu_device *dev, size_t *len, uint64_t *dropped) {
  *len = 0;
  if (dropped)
    *dropped = 0;
  if (!dev || !dev->kout)
    return NULL;
  struct gl_emu_kout *k = dev->kout;
  pthread_mutex_lock(&k->mu);
  char *out = k->buf;
  *len = k->len;
  if (dropped)
    *dropped = k->dropped;
  k->buf = NULL;
  k->len = k->cap = 0;
  k->dropped = 0;
  pthread_mutex_unlock(&k->mu);
  if (*len == 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* Appends n bytes (as much as the limit leaves room for). */
static void kout_append(struct gl_emu_kout *k, const char *s, size_t n) {
  pthread_mutex_lock(&k->mu);
  size_t room = k->limit > k->len ? k->limit - k->len : 0;
  size_t take = n < room ? n : room;
  if (take > k->cap - k->len) {
    size_t want = k->cap ? k->cap : 256;
    while (want - k->len < take)
      want *= 2;
    char *nb = realloc(k->buf, want);
    if (nb) {
      k->buf = nb;
      k->cap = want;
    } else {
      take = 0;
    }
  }
  if (take)
    memcpy(k->buf + k->len, s, take);
  k->len += take;
  k->dropped += n - take;
  pthread_mutex_unlock(&k->mu);
}

/* ---- a growing string --------------------------------------------------- */

typedef struct kstr {
  char *p;
  size_t n, cap;
  int oom;
} kstr;

static void ks_put(kstr *s, const char *t, size_t n) {
  if (s->oom || n == 0)
    return;
  if (n > s->cap - s->n) {
    size_t want = s->cap ? s->cap : 128;
    while (want - s->n < n)
      want *= 2;
    char *np = realloc(s->p, want);
    if (!np) {
      s->oom = 1;
      return;
    }
    s->p = np;
    s->cap = want;
  }
  memcpy(s->p + s->n, t, n);
  s->n += n;
}

/* Appends snprintf(spec, ...) of one value. spec is built by format()
 * below from a checked conversion and the matching argument type. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void ks_fmt(kstr *s, const char *spec, ...) {
  char small[512];
  va_list ap;
  va_start(ap, spec);
  int n = vsnprintf(small, sizeof small, spec, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof small) {
    ks_put(s, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    s->oom = 1;
    return;
  }
  va_start(ap, spec);
  vsnprintf(big, (size_t)n + 1, spec, ap);
  va_end(ap);
  ks_put(s, big, (size_t)n);
  free(big);
}
#pragma GCC diagnostic pop

/* ---- device memory ------------------------------------------------------ */

typedef struct kctx {
  gl_emu_block *b;
  gl_emu_warp *w;
  unsigned lane;
  const gl_ptx_insn *in;
} kctx;

/* The little-endian value of the size bytes at p. */
static uint64_t le_bytes(const uint8_t *p, unsigned size) {
  uint64_t x = 0;
  for (unsigned i = 0; i < size; i++) x |= (uint64_t)p[i] << (8 * i);
  return x;
}

static int rd(const kctx *k, uint64_t addr, unsigned size, uint64_t *v) {
  uint8_t *p = gl_emu__mem_ptr(k->b, k->w, k->lane, k->in, GL_PTX_SPACE_GENERIC, addr, size, 0);
  if (!p) return -1;
  *v = le_bytes(p, size);
  return 0;
}

/* Reads the string at addr, at most max bytes, into s (NUL-terminated,
 * s->n bytes before the NUL). -1 after failing the launch. */
static int rd_string(const kctx *k, uint64_t addr, size_t max, kstr *s) {
  s->n = 0;
  for (size_t i = 0; i < max; i++) {
    uint64_t c;
    if (rd(k, addr + i, 1, &c))
      return -1;
    if (c == 0)
      break;
    char ch = (char)c;
    ks_put(s, &ch, 1);
  }
  ks_put(s, "", 1);
  if (s->oom)
    return 0;
  s->n--;
  return 0;
}

/* The call's argument i (size bytes, from the caller's .param space). */
static int call_arg(const kctx *k, const gl_ptx_call *c, uint32_t i, unsigned size,
                    uint64_t *v) {
  uint8_t *p = gl_emu__local_ptr(k->b, k->w, k->lane, c->arg_off[i], size, k->in->line);
  if (!p) return -1;
  *v = le_bytes(p, size);
  return 0;
}

/* ---- vprintf ------------------------------------------------------------ */

/* The argument buffer, read in order. */
typedef struct kargs {
  uint64_t base, off;
  int used;
} kargs;

/* Next argument of size bytes; 1 when there is none to read (no buffer,
 * or past the 32nd), -1 after failing the launch. */
static int next_arg(const kctx *k, kargs *a, unsigned size, uint64_t *v) {
  if (a->base == 0 || a->used >= KP_MAX_ARGS)
    return 1;
  a->off = (a->off + size - 1) & ~(uint64_t)(size - 1);
  if (rd(k, a->base + a->off, size, v))
    return -1;
  a->off += size;
  a->used++;
  return 0;
}

static int clamp_field(int64_t v) { return v > KP_MAX_FIELD ? KP_MAX_FIELD : (int)v; }

/* Formats fmt (already read) with the arguments at args into out. Returns
 * the number of arguments read, or -2 after failing the launch. */
static int format(const kctx *k, const char *fmt, size_t flen, uint64_t args, kstr *out) {
  kargs a = {.base = args};
  kstr str = {0};
  size_t i = 0;
  int rc = 0;
  while (i < flen) {
    if (fmt[i] != '%') {
      size_t j = i;
      while (j < flen && fmt[j] != '%')
        j++;
      ks_put(out, fmt + i, j - i);
      i = j;
      continue;
    }
    size_t start = i++;
    char flags[8];
    size_t nf = 0;
    while (i < flen && strchr("-+ #0", fmt[i])) {
      if (nf < sizeof flags - 1 && !memchr(flags, fmt[i], nf))
        flags[nf++] = fmt[i];
      i++;
    }
    flags[nf] = 0;
    int64_t width = -1, prec = -1;
    int missing = 0;
    uint64_t v = 0;
    if (i < flen && fmt[i] == '*') {
      i++;
      int r = next_arg(k, &a, 4, &v);
      if (r < 0)
        goto fail;
      missing |= r;
      width = (int32_t)(uint32_t)v;
      if (width < 0) { /* C: a negative width is the - flag */
        width = -width;
        if (!memchr(flags, '-', nf) && nf < sizeof flags - 1)
          flags[nf++] = '-', flags[nf] = 0;
      }
    } else {
      while (i < flen && fmt[i] >= '0' && fmt[i] <= '9')
        width = (width < 0 ? 0 : width) * 10 + (fmt[i++] - '0'), width = width > 1 << 20 ? 1 << 20 : width;
    }
    if (i < flen && fmt[i] == '.') {
      i++;
      prec = 0;
      if (i < flen && fmt[i] == '*') {
        i++;
        int r = next_arg(k, &a, 4, &v);
        if (r < 0)
          goto fail;
        missing |= r;
        prec = (int32_t)(uint32_t)v;
        if (prec < 0)
          prec = -1; /* C: as if none was given */
      } else {
        while (i < flen && fmt[i] >= '0' && fmt[i] <= '9')
          prec = prec * 10 + (fmt[i++] - '0'), prec = prec > 1 << 20 ? 1 << 20 : prec;
      }
    }
    int lng = 0; /* -2 hh, -1 h, 0, 1 l, 2 ll */
    if (i < flen && fmt[i] == 'h') {
      lng = -1, i++;
      if (i < flen && fmt[i] == 'h')
        lng = -2, i++;
    } else if (i < flen && fmt[i] == 'l') {
      lng = 1, i++;
      if (i < flen && fmt[i] == 'l')
        lng = 2, i++;
    }
    if (i >= flen) { /* a spec cut off by the end: as it stands */
      ks_put(out, fmt + start, flen - start);
      break;
    }
    char conv = fmt[i++];
    char ws[24] = "", ps[24] = "";
    if (width >= 0)
      snprintf(ws, sizeof ws, "%d", clamp_field(width));
    if (prec >= 0)
      snprintf(ps, sizeof ps, ".%d", clamp_field(prec));
    char spec[80];
    int r = 0;
    switch (conv) {
    case '%':
      ks_put(out, "%", 1);
      continue;
    case 'd':
    case 'i':
    case 'u':
    case 'o':
    case 'x':
    case 'X': {
      int sgn = conv == 'd' || conv == 'i';
      r = missing ? 1 : next_arg(k, &a, lng > 0 ? 8 : 4, &v);
      if (r)
        break;
      const char *lm = lng == -2 ? "hh" : lng == -1 ? "h" : lng > 0 ? "ll" : "";
      snprintf(spec, sizeof spec, "%%%s%s%s%s%c", flags, ws, ps, lm, conv);
      if (lng > 0)
        sgn ? ks_fmt(out, spec, (long long)v) : ks_fmt(out, spec, (unsigned long long)v);
      else
        sgn ? ks_fmt(out, spec, (int)(int32_t)(uint32_t)v) : ks_fmt(out, spec, (unsigned)v);
      continue;
    }
    case 'c':
      r = missing ? 1 : next_arg(k, &a, 4, &v);
      if (r)
        break;
      snprintf(spec, sizeof spec, "%%%s%sc", flags, ws);
      ks_fmt(out, spec, (int)(int32_t)(uint32_t)v);
      continue;
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G':
    case 'a':
    case 'A': {
      r = missing ? 1 : next_arg(k, &a, 8, &v);
      if (r)
        break;
      double d;
      memcpy(&d, &v, sizeof d);
      snprintf(spec, sizeof spec, "%%%s%s%s%c", flags, ws, ps, conv);
      ks_fmt(out, spec, d);
      continue;
    }
    case 'p':
      r = missing ? 1 : next_arg(k, &a, 8, &v);
      if (r)
        break;
      snprintf(spec, sizeof spec, "%%%s%sp", flags, ws);
      ks_fmt(out, spec, (void *)(uintptr_t)v);
      continue;
    case 's':
      r = missing ? 1 : next_arg(k, &a, 8, &v);
      if (r)
        break;
      snprintf(spec, sizeof spec, "%%%s%ss", flags, ws);
      if (v == 0) {
        ks_fmt(out, spec, "(null)");
        continue;
      }
      if (rd_string(k, v, prec >= 0 && prec < KP_MAX_STRING ? (size_t)prec : KP_MAX_STRING,
                    &str))
        goto fail;
      if (!str.oom)
        ks_fmt(out, spec, str.p);
      continue;
    default: /* not a conversion CUDA knows: as it stands */
      break;
    }
    if (r < 0)
      goto fail;
    ks_put(out, fmt + start, i - start);
  }
  rc = a.used;
  free(str.p);
  return rc;
fail:
  free(str.p);
  return -2;
}

static int do_vprintf(const kctx *k, const gl_ptx_call *c, struct gl_emu_kout *ko) {
  uint64_t fmt_addr, args;
  if (call_arg(k, c, 0, 8, &fmt_addr) || call_arg(k, c, 1, 8, &args))
    return -1;
  int ret = -1;
  if (fmt_addr) {
    kstr fmt = {0}, out = {0};
    if (rd_string(k, fmt_addr, KP_MAX_STRING, &fmt)) {
      free(fmt.p);
      return -1;
    }
    ret = fmt.oom ? -2 : format(k, fmt.p, fmt.n, args, &out);
    free(fmt.p);
    if (ret == -2 && !fmt.oom) {
      free(out.p);
      return -1; /* the launch failed reading memory */
    }
    if (out.oom)
      ret = -2; /* CUDA's "internal error" */
    else if (out.n)
      kout_append(ko, out.p, out.n);
    free(out.p);
  }
  if (c->ret_off >= 0) {
    uint8_t *p = gl_emu__local_ptr(k->b, k->w, k->lane, (uint64_t)c->ret_off, 4, k->in->line);
    if (!p)
      return -1;
    uint32_t u = (uint32_t)ret;
    for (unsigned j = 0; j < 4; j++)
      p[j] = (uint8_t)(u >> (8 * j));
  }
  return 0;
}

/* ---- __assertfail -------------------------------------------------------- */

static int do_assertfail(const kctx *k, const gl_ptx_call *c) {
  uint64_t msg, file, line, func;
  if (call_arg(k, c, 0, 8, &msg) || call_arg(k, c, 1, 8, &file) ||
      call_arg(k, c, 2, 4, &line) || call_arg(k, c, 3, 8, &func))
    return -1;
  kstr s[3] = {{0}};
  uint64_t addr[3] = {msg, file, func};
  int rc = 0;
  for (int i = 0; i < 3 && rc == 0; i++) {
    if (addr[i] == 0)
      ks_put(&s[i], "", 1), s[i].n = 0;
    else
      rc = rd_string(k, addr[i], KP_MAX_ASSERT_STRING, &s[i]);
    if (s[i].oom)
      rc = 1;
  }
  if (rc == 0) {
    uint32_t t[3];
    gl_emu__thread_of(k->b, k->w, k->lane, t);
    const uint32_t *bl = k->b->ctaid;
    gl_emu__fail(k->b, GPULEASE_LAUNCH_FAILED,
                 "CUDA_ERROR_ASSERT: line %u: %s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] "
                 "Assertion `%s` failed.",
                 k->in->line, s[1].p, (unsigned)line, s[2].p, bl[0], bl[1], bl[2], t[0], t[1],
                 t[2], s[0].p);
  } else if (rc == 1) {
    gl_emu__fail(k->b, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ASSERT: line %u: assertion failed",
                 k->in->line);
  }
  for (int i = 0; i < 3; i++)
    free(s[i].p);
  return -1;
}

/* ---- entry points ------------------------------------------------------- */

int gl_emu__builtin_call(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in,
                         const gl_ptx_call *c, int kind, uint32_t m) {
  uint32_t need = kind == GL_PTX_BUILTIN_VPRINTF ? 2 : 5;
  if (c->nargs < need)
    return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                        "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: call with %u arguments, "
                        "%u expected", in->line, c->nargs, need);
  struct gl_emu_kout *ko = b->L->mod->dev->kout;
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    kctx k = {.b = b, .w = w, .lane = (unsigned)__builtin_ctz(mm), .in = in};
    int rc = kind == GL_PTX_BUILTIN_VPRINTF ? do_vprintf(&k, c, ko) : do_assertfail(&k, c);
    if (rc)
      return -1;
  }
  return 0;
}
