/*
 * common.c - helpers shared by the gpulease subcommands: connecting,
 * reporting errors, parsing typed kernel arguments, handles and formats,
 * printing leases and values.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"

void cli_connect_options(const gl_cli *cli, gpulease_connect_options *o) {
  gpulease_connect_options_default(o);
  if (cli->addr) o->addr = cli->addr;
  o->ca_file = cli->ca_file;
  o->pin_sha256 = cli->pin_sha256;
  o->insecure = cli->insecure;
  o->cert_file = cli->cert_file;
  o->key_file = cli->key_file;
  o->bearer_token = cli->bearer_token;
  if (cli->timeout_ms) o->timeout_ms = cli->timeout_ms;
}

gpulease_client *cli_connect(const gl_cli *cli) {
  gpulease_connect_options o;
  cli_connect_options(cli, &o);
  if (cli->insecure)
    fprintf(stderr, "gpulease: warning: --insecure: the daemon's certificate is NOT verified\n");
  gpulease_client *c = NULL;
  gpulease_error err;
  if (gpulease_client_connect(&o, &c, &err) != GPULEASE_OK) {
    cli_fail(cli, "connect", &err);
    return NULL;
  }
  cli_kernel_output_on(c); /* submit, session sync: "kernel: " lines on stderr */
  return c;
}

int cli_fail(const gl_cli *cli, const char *what, const gpulease_error *err) {
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object *e = json_object_new_object();
    json_object_object_add(e, "status", json_object_new_string(gpulease_status_name(err->status)));
    json_object_object_add(e, "code", json_object_new_int(err->status));
    json_object_object_add(e, "operation", json_object_new_string(what));
    json_object_object_add(e, "message", json_object_new_string(err->message));
    json_object_object_add(o, "error", e);
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
  }
  fprintf(stderr, "gpulease: %s failed: %s: %s\n", what, gpulease_status_name(err->status),
          err->message);
  return EXIT_FAILED;
}

int cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("gpulease: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs(" (see gpulease --help)\n", stderr);
  va_end(ap);
  return EXIT_USAGE;
}

int cli_only(const gl_cli *cli, uint64_t allowed, const char *cmd) {
  static const char *names[] = {"--vram", "--ttl", "--gpu", "--secret", "--binary", "--kernel",
                                "--grid", "--block", "--shared-mem", "--input", "--input-offset",
                                "--output-offset", "--output-size", "--format", "--arg",
                                "--lease", "--image-format", "--output", "--session", "--size",
                                "--offset", "--module", "--ack", "--class",
                                "--printf-fifo", "--malloc-heap", "--cooperative", "--cluster",
                                "--rotate", "--rights", "--to", "--reason", "--metrics",
                                "--interval", "--once"}; /* in the order of the OPT_ bits */
  uint64_t extra = cli->given & ~allowed;
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
    if (extra & (1ull << i)) return cli_usage_error("%s does not apply to '%s'", names[i], cmd);
  return 0;
}

int cli_parse_dim3(const char *s, uint32_t out[3]) {
  out[0] = out[1] = out[2] = 1;
  char buf[96];
  if (strlen(s) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", s);
  char *save = NULL;
  int n = 0;
  for (char *tok = strtok_r(buf, ",x", &save); tok; tok = strtok_r(NULL, ",x", &save)) {
    uint64_t v;
    if (n == 3 || gl_parse_u64(tok, UINT32_MAX, &v) != 0 || v == 0) return -1;
    out[n++] = (uint32_t)v;
  }
  return n ? 0 : -1;
}

static int parse_int(const char *v, int bits, bool is_signed, gpulease_param *out) {
  char *end;
  errno = 0;
  if (is_signed) {
    long long x = strtoll(v, &end, 0);
    long long lo = bits == 64 ? INT64_MIN : -(1ll << (bits - 1));
    long long hi = bits == 64 ? INT64_MAX : (1ll << (bits - 1)) - 1;
    if (errno || *end || end == v || x < lo || x > hi) return -1;
    *out = gpulease_param_scalar(&x, (uint32_t)bits / 8); /* little-endian host */
  } else {
    if (*v == '-') return -1;
    unsigned long long x = strtoull(v, &end, 0);
    unsigned long long hi = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    if (errno || *end || end == v || x > hi) return -1;
    *out = gpulease_param_scalar(&x, (uint32_t)bits / 8);
  }
  return 0;
}

int cli_parse_arg(const char *s, gpulease_param *out, char *err, size_t errlen) {
  const char *colon = strchr(s, ':');
  if (!colon) {
    snprintf(err, errlen, "--arg '%s': expected TYPE:VALUE (ptr, i8..i64, u8..u64, f32, f64, bytes)", s);
    return -1;
  }
  size_t tl = (size_t)(colon - s);
  const char *v = colon + 1;
  static const struct { const char *name; int bits; bool is_signed; } ints[] = {
      {"i8", 8, true}, {"i16", 16, true}, {"i32", 32, true}, {"i64", 64, true},
      {"u8", 8, false}, {"u16", 16, false}, {"u32", 32, false}, {"u64", 64, false}};
  if (tl == 3 && strncmp(s, "ptr", 3) == 0) {
    uint64_t off;
    if (gl_parse_size(v, &off) != 0) goto bad;
    *out = gpulease_param_pointer(off);
    return 0;
  }
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    if (tl == strlen(ints[i].name) && strncmp(s, ints[i].name, tl) == 0) {
      if (parse_int(v, ints[i].bits, ints[i].is_signed, out) != 0) goto bad;
      return 0;
    }
  }
  if ((tl == 3 && strncmp(s, "f32", 3) == 0) || (tl == 3 && strncmp(s, "f64", 3) == 0)) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || *end || end == v) goto bad;
    if (s[1] == '3') {
      float f = (float)d;
      *out = gpulease_param_scalar(&f, sizeof f);
    } else {
      *out = gpulease_param_scalar(&d, sizeof d);
    }
    return 0;
  }
  if (tl == 5 && strncmp(s, "bytes", 5) == 0) {
    size_t n = strlen(v) / 2;
    uint8_t buf[GPULEASE_MAX_SCALAR_BYTES];
    if (n == 0 || n > sizeof buf || gl_hex_decode(v, buf, n) != 0) goto bad;
    *out = gpulease_param_scalar(buf, (uint32_t)n);
    return 0;
  }
  snprintf(err, errlen, "--arg '%s': unknown type '%.*s' (ptr, i8..i64, u8..u64, f32, f64, bytes)",
           s, (int)tl, s);
  return -1;
bad:
  snprintf(err, errlen, "--arg '%s': value out of range or not a number for its type", s);
  return -1;
}

int cli_lease_from_args(const gl_cli *cli, const char *id_str, gpulease_lease *out) {
  memset(out, 0, sizeof *out);
  if (!id_str) return cli_usage_error("a lease ID is required");
  if (gl_parse_u64(id_str, UINT64_MAX, &out->id) != 0 || out->id == 0)
    return cli_usage_error("lease ID '%s' is not a positive number", id_str);
  if (!cli->secret_hex) return cli_usage_error("--secret (or $GPULEASE_SECRET) is required");
  if (gpulease_secret_from_hex(cli->secret_hex, out->secret) != GPULEASE_OK)
    return cli_usage_error("--secret must be %d hex digits", 2 * GPULEASE_SECRET_BYTES);
  return 0;
}

void cli_print_lease(const gl_cli *cli, const gpulease_lease *l, bool with_secret) {
  char hex[2 * GPULEASE_SECRET_BYTES + 1];
  gpulease_secret_to_hex(l->secret, hex);
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "lease_id", json_object_new_uint64(l->id));
    if (with_secret) {
      json_object_object_add(o, "secret", json_object_new_string(hex));
      uint32_t gen, rights;
      gpulease_secret_describe(l->secret, &gen, &rights, NULL, NULL);
      json_object_object_add(o, "generation", json_object_new_int64(gen));
    }
    json_object_object_add(o, "gpu_index", json_object_new_int64(l->gpu_index));
    json_object_object_add(o, "vram_bytes", json_object_new_uint64(l->vram_bytes));
    json_object_object_add(o, "ttl_s", json_object_new_int64(l->ttl_s));
    json_object_object_add(o, "remaining_ms", json_object_new_uint64(l->remaining_ms));
    json_object_object_add(o, "submits", json_object_new_uint64(l->submits));
    json_object_object_add(o, "class",
                           json_object_new_string(gpulease_lease_class_name(l->lease_class)));
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
    json_object_put(o);
    return;
  }
  printf("lease      %" PRIu64 "\n", l->id);
  if (with_secret) printf("secret     %s\n", hex);
  printf("gpu        %" PRIu32 "\n", l->gpu_index);
  printf("vram       %" PRIu64 " bytes\n", l->vram_bytes);
  printf("ttl        %" PRIu32 " s (%.1f s left)\n", l->ttl_s, (double)l->remaining_ms / 1000.0);
  printf("submits    %" PRIu64 "\n", l->submits);
  printf("class      %s\n", gpulease_lease_class_name(l->lease_class));
}

int cli_parse_handle(const char *s, uint64_t *out) {
  if (!s || !*s || *s == '-' || *s == '+') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? 16 : 10);
  if (errno || *end || end == s || v == 0) return -1;
  *out = v;
  return 0;
}

int cli_parse_launch_arg(const char *s, gpulease_arg *out, char *err, size_t errlen) {
  if (strncmp(s, "buf:", 4) == 0) {
    char handle[64];
    const char *plus = strchr(s + 4, '+');
    size_t hl = plus ? (size_t)(plus - (s + 4)) : strlen(s + 4);
    uint64_t h, off = 0;
    if (hl == 0 || hl >= sizeof handle) goto bad;
    memcpy(handle, s + 4, hl);
    handle[hl] = 0;
    if (cli_parse_handle(handle, &h) != 0) goto bad;
    if (plus && gl_parse_size(plus + 1, &off) != 0) goto bad;
    *out = gpulease_arg_buffer(h, off);
    return 0;
  bad:
    snprintf(err, errlen, "--arg '%s': expected buf:HANDLE[+OFFSET] (HANDLE as mem alloc printed it)", s);
    return -1;
  }
  if (strncmp(s, "ptr:", 4) == 0) {
    snprintf(err, errlen, "--arg '%s': ptr: is for submit; a launch takes buf:HANDLE[+OFFSET]", s);
    return -1;
  }
  gpulease_param p;
  if (cli_parse_arg(s, &p, err, errlen) != 0) return -1;
  *out = gpulease_arg_scalar(p.value, p.size);
  return 0;
}

int cli_parse_out_format(const char *s, enum cli_out_format *f) {
  static const char *names[] = {"f32", "i32", "u32", "hex", "raw"};
  for (int i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) {
      *f = (enum cli_out_format)i;
      return 0;
    }
  return -1;
}

int cli_parse_image_format(const char *s, gpulease_image_format *f) {
  static const char *names[] = {"auto", "ptx", "cubin", "fatbin"};
  for (int i = 0; i < 4; i++)
    if (strcmp(s, names[i]) == 0) {
      *f = (gpulease_image_format)i;
      return 0;
    }
  return -1;
}

void cli_print_values_text(const uint8_t *p, size_t n, enum cli_out_format f) {
  size_t count = n / 4;
  for (size_t i = 0; i < count; i++) {
    uint32_t u;
    memcpy(&u, p + 4 * i, 4);
    if (i % 8 == 0) printf("%s[%5zu]", i ? "\n" : "", i);
    if (f == CLI_F_F32) {
      float x;
      memcpy(&x, &u, 4);
      printf(" %12g", (double)x);
    } else if (f == CLI_F_I32) {
      printf(" %11" PRId32, (int32_t)u);
    } else {
      printf(" %10" PRIu32, u);
    }
  }
  if (count) putchar('\n');
  if (n % 4) printf("(%zu trailing byte(s) not shown)\n", n % 4);
}

void cli_print_hex_text(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    printf("%08zx ", i);
    for (size_t j = i; j < i + 16 && j < n; j++) printf(" %02x", p[j]);
    putchar('\n');
  }
}

void cli_json_add_output(json_object *o, const uint8_t *p, size_t n, int f) {
  if (f == CLI_F_HEX || f == CLI_F_RAW) {
    char *hex = malloc(2 * n + 1);
    if (hex) {
      gl_hex_encode(p, n, hex);
      json_object_object_add(o, "output_hex", json_object_new_string(hex));
      free(hex);
    }
    return;
  }
  static const char *names[] = {"f32", "i32", "u32"};
  json_object_object_add(o, "format", json_object_new_string(names[f]));
  json_object *arr = json_object_new_array();
  for (size_t i = 0; i + 4 <= n; i += 4) {
    uint32_t u;
    memcpy(&u, p + i, 4);
    if (f == CLI_F_F32) {
      float v;
      memcpy(&v, &u, 4);
      json_object_array_add(arr, json_object_new_double((double)v));
    } else if (f == CLI_F_I32) {
      json_object_array_add(arr, json_object_new_int((int32_t)u));
    } else {
      json_object_array_add(arr, json_object_new_int64(u));
    }
  }
  json_object_object_add(o, "values", arr);
}

int cli_pick_gpu(gl_cli *cli, gpulease_client *c, uint32_t *gpu) {
  *gpu = cli->have_gpu ? cli->gpu_index : GPULEASE_ANY_GPU;
  if (!cli->gpu_uuid) return EXIT_OK;
  static gpulease_inventory inv;
  gpulease_inventory_init(&inv);
  gpulease_error err;
  if (gpulease_inventory_get(c, &inv, &err) != GPULEASE_OK) return cli_fail(cli, "inventory", &err);
  char known[512] = "";
  size_t n = 0;
  for (uint32_t i = 0; i < inv.gpu_count; i++) {
    if (strcmp(inv.gpus[i].uuid, cli->gpu_uuid) == 0) {
      *gpu = inv.gpus[i].index;
      return EXIT_OK;
    }
    if (n < sizeof known)
      n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", inv.gpus[i].uuid);
  }
  fprintf(stderr, "gpulease: --gpu: no GPU with UUID '%s' on this node (its GPUs: %s)\n",
          cli->gpu_uuid, inv.gpu_count ? known : "none");
  return EXIT_FAILED;
}
