/*
 * ptx_header.c - a PTX module's header, checked against a GPU; see
 * ptx_header.h.
 */
#include "common/ptx_header.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Skips blanks and // and block comments from i. */
static size_t skip_blank(const uint8_t *p, size_t i, size_t len) {
  for (;;) {
    while (i < len && isspace(p[i])) i++;
    if (i + 1 < len && p[i] == '/' && p[i + 1] == '/') {
      while (i < len && p[i] != '\n') i++;
    } else if (i + 1 < len && p[i] == '/' && p[i + 1] == '*') {
      i += 2;
      while (i + 1 < len && !(p[i] == '*' && p[i + 1] == '/')) i++;
      i = i + 2 <= len ? i + 2 : len;
    } else {
      return i;
    }
  }
}

int gl_ptx_header(const uint8_t *ptx, size_t len, unsigned *major, unsigned *minor, char *target,
                  size_t target_len) {
  if (target_len) target[0] = 0;
  size_t i = skip_blank(ptx, 0, len);
  bool have_version = false;
  while (i < len) {
    if (len - i > 8 && memcmp(ptx + i, ".version", 8) == 0 && isspace(ptx[i + 8])) {
      i = skip_blank(ptx, i + 8, len);
      unsigned a = 0, b = 0;
      size_t j = i;
      while (j < len && isdigit(ptx[j]) && a < 1000) a = a * 10 + (unsigned)(ptx[j++] - '0');
      if (j == i || j >= len || ptx[j] != '.') return -1;
      size_t k = ++j;
      while (j < len && isdigit(ptx[j]) && b < 1000) b = b * 10 + (unsigned)(ptx[j++] - '0');
      if (j == k) return -1;
      *major = a;
      *minor = b;
      have_version = true;
      i = j;
    } else if (len - i > 7 && memcmp(ptx + i, ".target", 7) == 0 && isspace(ptx[i + 7])) {
      i = skip_blank(ptx, i + 7, len);
      size_t n = 0;
      while (i < len && (isalnum(ptx[i]) || ptx[i] == '_') && n + 1 < target_len)
        target[n++] = (char)ptx[i++];
      if (target_len) target[n] = 0;
      return have_version ? 0 : -1;
    } else {
      /* the header ends at the first directive that is neither */
      if (ptx[i] != '.') return have_version ? 0 : -1;
      while (i < len && ptx[i] != '\n') i++;
    }
    i = skip_blank(ptx, i, len);
  }
  return have_version ? 0 : -1;
}

/* "sm_90a": 90 and 'a'; -1 for a target that is not sm_<digits>[a|f]. */
static int parse_target(const char *t, char *suffix) {
  if (strncmp(t, "sm_", 3) != 0 || !isdigit((unsigned char)t[3])) return -1;
  int n = 0;
  const char *p = t + 3;
  while (isdigit((unsigned char)*p) && n < 10000) n = n * 10 + (*p++ - '0');
  *suffix = *p;
  if (*p && ((*p != 'a' && *p != 'f') || p[1])) return -1;
  return n;
}

static int isa_cmp(unsigned a_major, unsigned a_minor, const uint8_t b[2]) {
  if (a_major != b[0]) return a_major < b[0] ? -1 : 1;
  return a_minor < b[1] ? -1 : a_minor > b[1] ? 1 : 0;
}

int gl_ptx_check(const uint8_t *ptx, size_t len, const gl_ptx_caps *caps, char *err,
                 size_t errlen) {
  unsigned va = 0, vb = 0;
  char target[32];
  if (!caps || gl_ptx_header(ptx, len, &va, &vb, target, sizeof target) != 0) return 0;
  unsigned cc = caps->cc_major * 10u + caps->cc_minor;
  char own[16], own_a[16];
  snprintf(own, sizeof own, "sm_%u", cc);
  snprintf(own_a, sizeof own_a, "sm_%ua", cc);
  char suffix = 0;
  int tn = parse_target(target, &suffix);
  const char *send = caps->arch_specific ? own_a : own;
  if (tn > 0) {
    const char *why = NULL;
    if ((unsigned)tn > cc) why = "a newer GPU";
    else if (suffix == 'a' && ((unsigned)tn != cc || !caps->arch_specific))
      why = "another GPU's arch-specific features";
    else if (suffix == 'f' && (unsigned)tn / 10 != caps->cc_major)
      why = "another GPU family";
    if (why) {
      snprintf(err, errlen,
               "PTX for .target %s needs %s: this GPU is compute capability %u.%u, which runs "
               "%s%s%s and older targets; compile for %s (or an older target) and send that "
               "PTX, a cubin for %s, or a fatbin holding either",
               target, why, caps->cc_major, caps->cc_minor, own,
               caps->arch_specific ? " and " : "", caps->arch_specific ? own_a : "", send, send);
      return -1;
    }
  }
  if (!caps->isa_driver[0]) return 0; /* unknown: the node will say */
  if (isa_cmp(va, vb, caps->isa_driver) <= 0) return 0;
  if (caps->isa_nvjitlink[0] && isa_cmp(va, vb, caps->isa_nvjitlink) <= 0) return 0;
  const uint8_t *best = caps->isa_driver;
  if (caps->isa_nvjitlink[0] && isa_cmp(caps->isa_nvjitlink[0], caps->isa_nvjitlink[1],
                                        caps->isa_driver) > 0)
    best = caps->isa_nvjitlink;
  char njl[64];
  if (caps->isa_nvjitlink[0])
    snprintf(njl, sizeof njl, "through nvJitLink up to %u.%u", caps->isa_nvjitlink[0],
             caps->isa_nvjitlink[1]);
  else
    snprintf(njl, sizeof njl, "and it has no nvJitLink for newer PTX");
  snprintf(err, errlen,
           "PTX ISA %u.%u (.target %s) is newer than the node loads: its driver takes ISA up to "
           "%u.%u, %s; send a cubin for %s (nvcc -cubin -arch=%s, or the compiler's cubin), PTX "
           "of ISA %u.%u or older, or a fatbin holding either",
           va, vb, target[0] ? target : "?", caps->isa_driver[0], caps->isa_driver[1], njl, send,
           send, best[0], best[1]);
  return -1;
}
