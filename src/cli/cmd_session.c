/*
 * cmd_session.c - sessions from the shell, one op per invocation:
 *   gpulease session open|close|sync, mem alloc|free|write|read,
 *   module load|unload, func info, launch.
 *
 * Every invocation is a new connection that attaches to the session by its
 * id (gl_session_attach, unordered): its ops go with seq 0, "after the ops
 * the daemon already received", which is right because each invocation
 * waits for its replies before it ends (pipelined ops such as mem free are
 * awaited by gl_session_detach). Leaving never closes the session; only
 * `session close` does.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"
#include "lib/client_internal.h"

#define PIECE_BYTES ((size_t)64 << 20) /* file I/O and library calls per piece */
#define MAX_PRINT_BYTES ((uint64_t)1 << 30)
#define MAX_FILE_BYTES ((size_t)1 << 30)

static const uint64_t BASE_OPTS = OPT_LEASE | OPT_SECRET | OPT_SESSION;

/* ======================================================================
 * Helpers
 * ==================================================================== */

static void print_json(json_object *o) {
  puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                             JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
}

static json_object *json_handle(uint64_t h) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%016" PRIx64, h);
  return json_object_new_string(buf);
}

/* A connection attached to one session. */
typedef struct sess {
  gpulease_client *c;
  gpulease_session *s;
  gpulease_lease lease;
  uint64_t sid;
} sess;

/* Checks the lease options (before connecting). 0 or EXIT_USAGE. */
static int lease_args(const gl_cli *cli, gpulease_lease *lease) {
  if (!cli->lease_id_str) return cli_usage_error("%s needs --lease ID --secret HEX", cli->words[0]);
  return cli_lease_from_args(cli, cli->lease_id_str, lease);
}

/* Parses the session id (positional word or --session) and the lease.
 * 0 or EXIT_USAGE. */
static int sess_args(const gl_cli *cli, const char *sid_str, sess *x) {
  memset(x, 0, sizeof *x);
  if (!sid_str) return cli_usage_error("%s needs --session SID", cli->words[0]);
  if (cli_parse_handle(sid_str, &x->sid) != 0)
    return cli_usage_error("session id '%s' is not a positive number", sid_str);
  return lease_args(cli, &x->lease);
}

/* Connects and attaches. 0 or EXIT_FAILED (reported). */
static int sess_attach(const gl_cli *cli, sess *x) {
  x->c = cli_connect(cli);
  if (!x->c) return EXIT_FAILED;
  gpulease_error err;
  if (gl_session_attach(x->c, &x->lease, x->sid, true, &x->s, &err) != GPULEASE_OK) {
    gpulease_client_close(x->c);
    x->c = NULL;
    return cli_fail(cli, "session", &err);
  }
  return 0;
}

/* Waits for the replies still due (pipelined ops), frees the session
 * object without closing the session and closes the connection. A failure
 * reported by those replies turns rc EXIT_OK into a failure of `what`. */
static int sess_end(const gl_cli *cli, sess *x, const char *what, int rc) {
  gpulease_error err;
  gpulease_status st = gl_session_detach(x->s, &err);
  x->s = NULL;
  if (st != GPULEASE_OK && rc == EXIT_OK) rc = cli_fail(cli, what, &err);
  gpulease_client_close(x->c);
  x->c = NULL;
  return rc;
}

/* Reports a failure that sync attributed to an op of the session. */
static int fail_op(const gl_cli *cli, const char *what, const gpulease_error *err,
                   const gpulease_op_failure *f) {
  if (!f || f->op == 0) return cli_fail(cli, what, err);
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object *e = json_object_new_object();
    json_object_object_add(e, "status", json_object_new_string(gpulease_status_name(err->status)));
    json_object_object_add(e, "code", json_object_new_int(err->status));
    json_object_object_add(e, "operation", json_object_new_string(what));
    json_object_object_add(e, "message", json_object_new_string(err->message));
    json_object_object_add(e, "failed_op", json_object_new_string(f->op_name));
    json_object_object_add(e, "failed_seq", json_object_new_uint64(f->seq));
    json_object_object_add(o, "error", e);
    print_json(o);
  }
  fprintf(stderr, "gpulease: %s failed: %s: %s (failed op %s, seq %" PRIu64 ")\n", what,
          gpulease_status_name(err->status), err->message, f->op_name, f->seq);
  return EXIT_FAILED;
}

/* ---- transfer progress on stderr ---- */

typedef struct progress {
  const gl_cli *cli;
  const char *what;
  uint64_t base;  /* bytes done before the current library call */
  uint64_t total; /* 0: unknown */
  uint64_t start_ns, last_ns;
  bool shown, tty;
} progress;

static void progress_init(progress *p, const gl_cli *cli, const char *what, uint64_t total) {
  memset(p, 0, sizeof *p);
  p->cli = cli;
  p->what = what;
  p->total = total;
  p->start_ns = gl_mono_ns();
  p->tty = isatty(STDERR_FILENO) == 1;
}

/* Prints a line once the transfer has run for 1 s, then every 0.5 s;
 * `final` ends a shown progress display with the last figures. */
static void progress_show(progress *p, uint64_t done, bool final) {
  if (p->cli->quiet) return;
  uint64_t now = gl_mono_ns(), el = now - p->start_ns;
  if (final ? !p->shown
            : (el < 1000000000u || (p->shown && now - p->last_ns < 500000000u)))
    return;
  p->shown = true;
  p->last_ns = now;
  double mb = (double)done / 1e6, rate = el ? (double)done / 1e6 / ((double)el / 1e9) : 0;
  if (p->total)
    fprintf(stderr, "%s%s: %.1f / %.1f MB (%.0f%%), %.1f MB/s%s", p->tty ? "\r" : "", p->what,
            mb, (double)p->total / 1e6, 100.0 * (double)done / (double)p->total, rate,
            p->tty ? (final ? "   \n" : "   ") : "\n");
  else
    fprintf(stderr, "%s%s: %.1f MB, %.1f MB/s%s", p->tty ? "\r" : "", p->what, mb, rate,
            p->tty ? (final ? "   \n" : "   ") : "\n");
  fflush(stderr);
}

static void progress_cb(uint64_t done, uint64_t total, void *user) {
  (void)total;
  progress *p = user;
  progress_show(p, p->base + done, false);
}

/* ======================================================================
 * session open | close | sync
 * ==================================================================== */

int cmd_session(gl_cli *cli) {
  const char *sub = cli->nwords > 1 ? cli->words[1] : NULL;
  if (!sub) return cli_usage_error("session needs open, close or sync");
  int rc;
  sess x;
  gpulease_error err;
  if (strcmp(sub, "open") == 0) {
    if ((rc = cli_only(cli, OPT_LEASE | OPT_SECRET, "session open"))) return rc;
    if (cli->nwords != 2) return cli_usage_error("session open takes no SID");
    memset(&x, 0, sizeof x);
    if ((rc = lease_args(cli, &x.lease))) return rc;
    x.c = cli_connect(cli);
    if (!x.c) return EXIT_FAILED;
    if (gpulease_session_open(x.c, &x.lease, &x.s, &err) != GPULEASE_OK) {
      gpulease_client_close(x.c);
      return cli_fail(cli, "session open", &err);
    }
    uint64_t sid = gpulease_session_id(x.s);
    rc = sess_end(cli, &x, "session open", EXIT_OK); /* leaves it open */
    if (rc != EXIT_OK) return rc;
    if (cli->json) {
      json_object *o = json_object_new_object();
      json_object_object_add(o, "session_id", json_object_new_uint64(sid));
      json_object_object_add(o, "lease_id", json_object_new_uint64(x.lease.id));
      print_json(o);
    } else {
      printf("%" PRIu64 "\n", sid);
    }
    return EXIT_OK;
  }

  bool is_close = strcmp(sub, "close") == 0, is_sync = strcmp(sub, "sync") == 0;
  if (!is_close && !is_sync)
    return cli_usage_error("unknown session command '%s' (open, close, sync)", sub);
  if ((rc = cli_only(cli, BASE_OPTS | (is_sync ? OPT_ACK : 0), is_close ? "session close" : "session sync")))
    return rc;
  if (cli->nwords > 3 || (cli->nwords == 3 && cli->session_str))
    return cli_usage_error("session %s takes one SID", sub);
  const char *sid_str = cli->nwords == 3 ? cli->words[2] : cli->session_str;
  if (!sid_str) return cli_usage_error("session %s needs a SID", sub);
  if ((rc = sess_args(cli, sid_str, &x))) return rc;
  if ((rc = sess_attach(cli, &x))) return rc;

  if (is_close) {
    gpulease_status st = gpulease_session_close(x.s, &err); /* frees x.s */
    gpulease_client_close(x.c);
    if (st != GPULEASE_OK) return cli_fail(cli, "session close", &err);
    if (cli->json)
      printf("{ \"session_id\": %" PRIu64 ", \"closed\": true }\n", x.sid);
    else
      printf("session %" PRIu64 " closed\n", x.sid);
    return EXIT_OK;
  }

  gpulease_op_failure f;
  gpulease_op_failure_init(&f);
  gpulease_status st;
  if (cli->have_ack)
    st = gpulease_session_acknowledge(x.s, cli->ack_seq, &err);
  else
    st = gpulease_session_sync(x.s, &f, &err);
  if (st != GPULEASE_OK) {
    rc = fail_op(cli, cli->have_ack ? "session acknowledge" : "session sync", &err, &f);
    return sess_end(cli, &x, "session sync", rc);
  }
  rc = sess_end(cli, &x, "session sync", EXIT_OK);
  if (rc != EXIT_OK) return rc;
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "session_id", json_object_new_uint64(x.sid));
    if (cli->have_ack) json_object_object_add(o, "acknowledged", json_object_new_uint64(cli->ack_seq));
    json_object_object_add(o, "failure", NULL);
    print_json(o);
  } else if (cli->have_ack) {
    printf("session %" PRIu64 ": failure of seq %" PRIu64 " acknowledged, no failure left\n",
           x.sid, cli->ack_seq);
  } else {
    printf("session %" PRIu64 ": all ops done, no failure\n", x.sid);
  }
  return EXIT_OK;
}

/* ======================================================================
 * mem alloc | free | write | read
 * ==================================================================== */

static int mem_write(gl_cli *cli, sess *x, uint64_t buf) {
  bool std_in = strcmp(cli->input_file, "-") == 0;
  FILE *fp = std_in ? stdin : fopen(cli->input_file, "rb");
  if (!fp) {
    fprintf(stderr, "gpulease: cannot read --input %s: %s\n", cli->input_file, strerror(errno));
    return EXIT_FAILED;
  }
  struct stat sb;
  uint64_t total = 0;
  if (fstat(fileno(fp), &sb) == 0 && S_ISREG(sb.st_mode)) total = (uint64_t)sb.st_size;
  uint8_t *piece = malloc(PIECE_BYTES);
  if (!piece) {
    if (!std_in) fclose(fp);
    fprintf(stderr, "gpulease: out of memory\n");
    return EXIT_FAILED;
  }
  int rc = sess_attach(cli, x);
  if (rc) {
    free(piece);
    if (!std_in) fclose(fp);
    return rc;
  }
  progress pr;
  progress_init(&pr, cli, "mem write", total);
  gpulease_session_set_progress(x->s, progress_cb, &pr);
  uint64_t pos = 0;
  gpulease_error err;
  for (;;) {
    size_t n = fread(piece, 1, PIECE_BYTES, fp);
    if (n == 0) break;
    pr.base = pos;
    if (gpulease_mem_write(x->s, buf, cli->offset + pos, piece, n, &err) != GPULEASE_OK) {
      rc = cli_fail(cli, "mem write", &err);
      break;
    }
    pos += n;
    if (n < PIECE_BYTES) break;
  }
  if (rc == EXIT_OK && ferror(fp)) {
    fprintf(stderr, "gpulease: cannot read --input %s: %s\n", cli->input_file, strerror(errno));
    rc = EXIT_FAILED;
  } else if (rc == EXIT_OK && pos == 0) {
    fprintf(stderr, "gpulease: --input %s is empty: nothing to write\n", cli->input_file);
    rc = EXIT_FAILED;
  }
  progress_show(&pr, pos, true);
  free(piece);
  if (!std_in) fclose(fp);
  rc = sess_end(cli, x, "mem write", rc);
  if (rc != EXIT_OK) return rc;
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "buffer", json_handle(buf));
    json_object_object_add(o, "offset", json_object_new_uint64(cli->offset));
    json_object_object_add(o, "bytes_written", json_object_new_uint64(pos));
    print_json(o);
  } else {
    printf("wrote %" PRIu64 " bytes to 0x%016" PRIx64 " at offset %" PRIu64 "\n", pos, buf,
           cli->offset);
  }
  return EXIT_OK;
}

static void print_read_json(const gl_cli *cli, uint64_t buf, const uint8_t *p, size_t n,
                            enum cli_out_format f) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "buffer", json_handle(buf));
  json_object_object_add(o, "offset", json_object_new_uint64(cli->offset));
  json_object_object_add(o, "size_bytes", json_object_new_uint64(n));
  if (cli->output_file) {
    json_object_object_add(o, "output", json_object_new_string(cli->output_file));
  } else {
    cli_json_add_output(o, p, n, f);
  }
  print_json(o);
}

static int mem_read(gl_cli *cli, sess *x, uint64_t buf, enum cli_out_format fmt) {
  uint64_t size = cli->size_bytes;
  bool to_file = cli->output_file != NULL;
  if (!to_file && size > MAX_PRINT_BYTES)
    return cli_usage_error("mem read of more than 1 GiB needs --output FILE");
  size_t hold = to_file ? (size < PIECE_BYTES ? (size_t)size : PIECE_BYTES) : (size_t)size;
  uint8_t *data = malloc(hold ? hold : 1);
  if (!data) {
    fprintf(stderr, "gpulease: out of memory for %zu bytes\n", hold);
    return EXIT_FAILED;
  }
  FILE *fp = NULL;
  if (to_file && !(fp = fopen(cli->output_file, "wb"))) {
    fprintf(stderr, "gpulease: cannot write %s: %s\n", cli->output_file, strerror(errno));
    free(data);
    return EXIT_FAILED;
  }
  int rc = sess_attach(cli, x);
  if (rc) {
    free(data);
    if (fp) fclose(fp);
    return rc;
  }
  progress pr;
  progress_init(&pr, cli, "mem read", size);
  gpulease_session_set_progress(x->s, progress_cb, &pr);
  gpulease_error err;
  uint64_t pos = 0;
  while (pos < size && rc == EXIT_OK) {
    size_t n = size - pos < hold ? (size_t)(size - pos) : hold;
    pr.base = pos;
    if (gpulease_mem_read(x->s, buf, cli->offset + pos, data, n, &err) != GPULEASE_OK) {
      rc = cli_fail(cli, "mem read", &err);
    } else if (fp && fwrite(data, 1, n, fp) != n) {
      fprintf(stderr, "gpulease: cannot write %s: %s\n", cli->output_file, strerror(errno));
      rc = EXIT_FAILED;
    }
    if (rc == EXIT_OK) pos += n;
  }
  progress_show(&pr, pos, true);
  if (fp && fclose(fp) != 0 && rc == EXIT_OK) {
    fprintf(stderr, "gpulease: cannot write %s: %s\n", cli->output_file, strerror(errno));
    rc = EXIT_FAILED;
  }
  rc = sess_end(cli, x, "mem read", rc);
  if (rc == EXIT_OK) {
    if (cli->json) {
      print_read_json(cli, buf, data, (size_t)size, fmt);
    } else if (to_file) {
      printf("read %" PRIu64 " bytes from 0x%016" PRIx64 " at offset %" PRIu64 " into %s\n", size,
             buf, cli->offset, cli->output_file);
    } else if (fmt == CLI_F_RAW) {
      fwrite(data, 1, (size_t)size, stdout);
    } else {
      printf("0x%016" PRIx64 ": %" PRIu64 " bytes at offset %" PRIu64 "\n", buf, size,
             cli->offset);
      if (fmt == CLI_F_HEX) cli_print_hex_text(data, (size_t)size);
      else cli_print_values_text(data, (size_t)size, fmt);
    }
  }
  free(data);
  return rc;
}

int cmd_mem(gl_cli *cli) {
  const char *sub = cli->nwords > 1 ? cli->words[1] : NULL;
  if (!sub) return cli_usage_error("mem needs alloc, free, write or read");
  int rc;
  sess x;
  gpulease_error err;
  if (strcmp(sub, "alloc") == 0) {
    if ((rc = cli_only(cli, BASE_OPTS | OPT_SIZE, "mem alloc"))) return rc;
    if (cli->nwords != 2) return cli_usage_error("mem alloc takes no HANDLE");
    if (!cli->have_size || cli->size_bytes == 0)
      return cli_usage_error("mem alloc needs --size BYTES (>= 1)");
    if ((rc = sess_args(cli, cli->session_str, &x))) return rc;
    if ((rc = sess_attach(cli, &x))) return rc;
    gpulease_buffer b = 0;
    uint64_t region_offset = 0;
    if (gpulease_mem_alloc_region(x.s, cli->size_bytes, &b, &region_offset, &err) != GPULEASE_OK)
      rc = cli_fail(cli, "mem alloc", &err);
    rc = sess_end(cli, &x, "mem alloc", rc);
    if (rc != EXIT_OK) return rc;
    if (cli->json) {
      json_object *o = json_object_new_object();
      json_object_object_add(o, "buffer", json_handle(b));
      json_object_object_add(o, "size_bytes", json_object_new_uint64(cli->size_bytes));
      json_object_object_add(o, "region_offset", json_object_new_uint64(region_offset));
      print_json(o);
    } else {
      printf("0x%016" PRIx64 "\n", b);
    }
    return EXIT_OK;
  }

  bool is_free = strcmp(sub, "free") == 0, is_write = strcmp(sub, "write") == 0,
       is_read = strcmp(sub, "read") == 0;
  if (!is_free && !is_write && !is_read)
    return cli_usage_error("unknown mem command '%s' (alloc, free, write, read)", sub);
  uint64_t allowed = BASE_OPTS;
  if (is_write) allowed |= OPT_INPUT | OPT_OFFSET;
  if (is_read) allowed |= OPT_SIZE | OPT_OFFSET | OPT_OUTPUT | OPT_FORMAT;
  char what[16];
  snprintf(what, sizeof what, "mem %s", sub);
  if ((rc = cli_only(cli, allowed, what))) return rc;
  if (cli->nwords != 3) return cli_usage_error("%s takes exactly one buffer HANDLE", what);
  uint64_t buf;
  if (cli_parse_handle(cli->words[2], &buf) != 0)
    return cli_usage_error("buffer handle '%s' is not a number (0x... as mem alloc printed it)",
                           cli->words[2]);
  enum cli_out_format fmt = CLI_F_HEX;
  if (is_write && !cli->input_file) return cli_usage_error("mem write needs --input FILE");
  if (is_read) {
    if (!cli->have_size || cli->size_bytes == 0)
      return cli_usage_error("mem read needs --size BYTES (>= 1)");
    if (cli->format && cli_parse_out_format(cli->format, &fmt) != 0)
      return cli_usage_error("--format: expected f32, i32, u32, hex or raw");
  }
  if ((rc = sess_args(cli, cli->session_str, &x))) return rc;
  if (is_write) return mem_write(cli, &x, buf);
  if (is_read) return mem_read(cli, &x, buf, fmt);

  if ((rc = sess_attach(cli, &x))) return rc;
  if (gpulease_mem_free(x.s, buf, &err) != GPULEASE_OK) rc = cli_fail(cli, "mem free", &err);
  rc = sess_end(cli, &x, "mem free", rc);
  if (rc != EXIT_OK) return rc;
  if (cli->json)
    printf("{ \"buffer\": \"0x%016" PRIx64 "\", \"freed\": true }\n", buf);
  else
    printf("buffer 0x%016" PRIx64 " freed\n", buf);
  return EXIT_OK;
}

/* ======================================================================
 * module load | unload
 * ==================================================================== */

int cmd_module(gl_cli *cli) {
  const char *sub = cli->nwords > 1 ? cli->words[1] : NULL;
  if (!sub) return cli_usage_error("module needs load or unload");
  int rc;
  sess x;
  gpulease_error err;
  if (strcmp(sub, "load") == 0) {
    if ((rc = cli_only(cli, BASE_OPTS | OPT_BINARY | OPT_IMAGE_FORMAT, "module load"))) return rc;
    if (cli->nwords != 2) return cli_usage_error("module load takes options only");
    if (!cli->binary) return cli_usage_error("module load needs --binary FILE");
    gpulease_image_format ifmt = GPULEASE_IMAGE_AUTO;
    if (cli->image_format && cli_parse_image_format(cli->image_format, &ifmt) != 0)
      return cli_usage_error("--image-format: expected auto, ptx, cubin or fatbin");
    if ((rc = sess_args(cli, cli->session_str, &x))) return rc;
    uint8_t *image = NULL;
    size_t image_size = 0;
    if (gl_read_file(cli->binary, MAX_FILE_BYTES, &image, &image_size) != 0) {
      fprintf(stderr, "gpulease: cannot read --binary %s: %s\n", cli->binary, strerror(errno));
      return EXIT_FAILED;
    }
    if ((rc = sess_attach(cli, &x))) {
      free(image);
      return rc;
    }
    gpulease_module m = 0;
    gpulease_module_source src = GPULEASE_MODULE_LOADED;
    if (gpulease_module_load(x.s, image, image_size, ifmt, &m, &src, &err) != GPULEASE_OK)
      rc = cli_fail(cli, "module load", &err);
    free(image);
    rc = sess_end(cli, &x, "module load", rc);
    if (rc != EXIT_OK) return rc;
    static const char *cache[] = {"loaded", "context", "disk"};
    const char *c = (unsigned)src < 3 ? cache[src] : "loaded";
    if (cli->json) {
      json_object *o = json_object_new_object();
      json_object_object_add(o, "module", json_handle(m));
      json_object_object_add(o, "cache", json_object_new_string(c));
      print_json(o);
    } else {
      printf("0x%016" PRIx64 "\ncache: %s\n", m, c);
    }
    return EXIT_OK;
  }
  if (strcmp(sub, "unload") != 0)
    return cli_usage_error("unknown module command '%s' (load, unload)", sub);
  if ((rc = cli_only(cli, BASE_OPTS, "module unload"))) return rc;
  if (cli->nwords != 3) return cli_usage_error("module unload takes exactly one module HANDLE");
  uint64_t m;
  if (cli_parse_handle(cli->words[2], &m) != 0)
    return cli_usage_error("module handle '%s' is not a number", cli->words[2]);
  if ((rc = sess_args(cli, cli->session_str, &x))) return rc;
  if ((rc = sess_attach(cli, &x))) return rc;
  if (gpulease_module_unload(x.s, m, &err) != GPULEASE_OK) rc = cli_fail(cli, "module unload", &err);
  rc = sess_end(cli, &x, "module unload", rc);
  if (rc != EXIT_OK) return rc;
  if (cli->json)
    printf("{ \"module\": \"0x%016" PRIx64 "\", \"unloaded\": true }\n", m);
  else
    printf("module 0x%016" PRIx64 " unloaded\n", m);
  return EXIT_OK;
}

/* ======================================================================
 * func info, launch
 * ==================================================================== */

/* Checks --session, --module and --kernel. 0 or EXIT_USAGE. */
static int func_args(const gl_cli *cli, const char *what, sess *x, uint64_t *module) {
  if (cli->nwords != 1 + (strcmp(what, "func info") == 0))
    return cli_usage_error("%s takes options only", what);
  if (!cli->module_str || !cli->kernel)
    return cli_usage_error("%s needs --module HANDLE and --kernel NAME", what);
  if (cli_parse_handle(cli->module_str, module) != 0)
    return cli_usage_error("--module: '%s' is not a module handle", cli->module_str);
  return sess_args(cli, cli->session_str, x);
}

static void print_func_info(const gl_cli *cli, uint64_t fn, const gpulease_func_info *fi) {
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "kernel", json_object_new_string(cli->kernel));
    json_object_object_add(o, "function", json_handle(fn));
    json_object_object_add(o, "num_regs", json_object_new_int64(fi->num_regs));
    json_object_object_add(o, "max_threads_per_block", json_object_new_int64(fi->max_threads_per_block));
    json_object_object_add(o, "static_shared_bytes", json_object_new_int64(fi->static_shared_bytes));
    json_object_object_add(o, "local_bytes", json_object_new_int64(fi->local_bytes));
    json_object_object_add(o, "const_bytes", json_object_new_int64(fi->const_bytes));
    json_object_object_add(o, "ptx_version", json_object_new_int64(fi->ptx_version));
    json_object_object_add(o, "binary_version", json_object_new_int64(fi->binary_version));
    json_object_object_add(o, "param_count", json_object_new_int(fi->param_count));
    if (fi->param_count >= 0) {
      json_object *arr = json_object_new_array();
      for (int i = 0; i < fi->param_count; i++)
        json_object_array_add(arr, json_object_new_int(fi->param_sizes[i]));
      json_object_object_add(o, "param_sizes", arr);
    }
    print_json(o);
    return;
  }
  printf("kernel         %s\n", cli->kernel);
  printf("function       0x%016" PRIx64 "\n", fn);
  printf("registers      %" PRIu32 " per thread\n", fi->num_regs);
  printf("max threads    %" PRIu32 " per block\n", fi->max_threads_per_block);
  printf("shared memory  %" PRIu32 " bytes (static)\n", fi->static_shared_bytes);
  printf("local memory   %" PRIu32 " bytes per thread\n", fi->local_bytes);
  printf("const memory   %" PRIu32 " bytes\n", fi->const_bytes);
  printf("PTX version    %" PRIu32 ".%" PRIu32 "\n", fi->ptx_version / 10, fi->ptx_version % 10);
  printf("binary version sm_%" PRIu32 "\n", fi->binary_version);
  if (fi->param_count < 0) {
    printf("params         unknown\n");
  } else {
    printf("params         %d", fi->param_count);
    if (fi->param_count) {
      printf(" (bytes:");
      for (int i = 0; i < fi->param_count; i++) printf(" %u", (unsigned)fi->param_sizes[i]);
      printf(")");
    }
    putchar('\n');
  }
}

int cmd_func(gl_cli *cli) {
  const char *sub = cli->nwords > 1 ? cli->words[1] : NULL;
  if (!sub || strcmp(sub, "info") != 0) return cli_usage_error("func needs info");
  int rc;
  if ((rc = cli_only(cli, BASE_OPTS | OPT_MODULE | OPT_KERNEL, "func info"))) return rc;
  sess x;
  uint64_t module;
  if ((rc = func_args(cli, "func info", &x, &module))) return rc;
  if ((rc = sess_attach(cli, &x))) return rc;
  gpulease_error err;
  gpulease_function fn = 0;
  gpulease_func_info *fi = malloc(sizeof *fi);
  gpulease_func_info_init(fi);
  if (!fi) {
    err.status = GPULEASE_NO_MEMORY;
    snprintf(err.message, sizeof err.message, "out of memory");
    rc = cli_fail(cli, "func info", &err);
  } else if (gpulease_function_get(x.s, module, cli->kernel, &fn, fi, &err) != GPULEASE_OK) {
    rc = cli_fail(cli, "func info", &err);
  }
  rc = sess_end(cli, &x, "func info", rc);
  if (rc == EXIT_OK) print_func_info(cli, fn, fi);
  free(fi);
  return rc;
}

int cmd_launch(gl_cli *cli) {
  int rc;
  if ((rc = cli_only(cli,
                     BASE_OPTS | OPT_MODULE | OPT_KERNEL | OPT_GRID | OPT_BLOCK | OPT_SHMEM |
                         OPT_ARG | OPT_COOP | OPT_CLUSTER,
                     "launch")))
    return rc;
  if (cli->have_ptr_arg)
    return cli_usage_error("--arg ptr:OFFSET is for submit; a launch takes buf:HANDLE[+OFFSET]");
  if (cli->have_chunk_arg)
    return cli_usage_error("--arg TYPE:@NAME names a chunk of 'pool map'; a launch takes "
                           "buf:HANDLE[+OFFSET]");
  sess x;
  uint64_t module;
  if ((rc = func_args(cli, "launch", &x, &module))) return rc;
  if ((rc = sess_attach(cli, &x))) return rc;
  gpulease_error err;
  gpulease_function fn = 0;
  gpulease_op_failure f;
  gpulease_op_failure_init(&f);
  if (gpulease_function_get(x.s, module, cli->kernel, &fn, NULL, &err) != GPULEASE_OK) {
    rc = cli_fail(cli, "launch (func info)", &err);
  } else if (gpulease_launch_ex(x.s, fn, cli->grid, cli->block, cli->shared_mem_bytes,
                                &cli->attrs, cli->launch_args, cli->param_count,
                                &err) != GPULEASE_OK) {
    rc = cli_fail(cli, "launch", &err);
  } else if (gpulease_session_sync(x.s, &f, &err) != GPULEASE_OK) {
    rc = fail_op(cli, "launch", &err, &f);
  }
  rc = sess_end(cli, &x, "launch", rc);
  if (rc != EXIT_OK) return rc;
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "session_id", json_object_new_uint64(x.sid));
    json_object_object_add(o, "kernel", json_object_new_string(cli->kernel));
    json_object_object_add(o, "function", json_handle(fn));
    json_object *g = json_object_new_array(), *b = json_object_new_array();
    for (int i = 0; i < 3; i++) {
      json_object_array_add(g, json_object_new_int64(cli->grid[i]));
      json_object_array_add(b, json_object_new_int64(cli->block[i]));
    }
    json_object_object_add(o, "grid", g);
    json_object_object_add(o, "block", b);
    json_object_object_add(o, "completed", json_object_new_boolean(1));
    print_json(o);
  } else {
    printf("%s: launched grid %" PRIu32 ",%" PRIu32 ",%" PRIu32 " block %" PRIu32 ",%" PRIu32
           ",%" PRIu32 ", completed\n",
           cli->kernel, cli->grid[0], cli->grid[1], cli->grid[2], cli->block[0], cli->block[1],
           cli->block[2]);
  }
  return EXIT_OK;
}
