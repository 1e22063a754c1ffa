/*
 * options.h - gpuleased's options: the command line and the configuration
 * file, read by the same code.
 *
 *   gpuleased [--listen HOST:PORT] [--cert FILE --key FILE] [--state-dir DIR]
 *             [--max-ttl SECONDS] [--max-leases N] [--max-message BYTES]
 *             [--log-level error|warn|info|debug] [--ready-file FILE]
 *             [--device auto|cuda|emu] [--emu-vram BYTES] [--emu-threads N]
 *             [--emu-gpus N] [--placement spread|pack]
 *             [--seq-timeout-ms MS] [--max-streams N]
 *             [--local-socket PATH|none] [--local-socket-mode MODE] [--max-pinned BYTES]
 *             [--net-threads N] [--control-threads N] [--stripe-port PORT] [--warm-workers N]
 *             [--context-overhead BYTES]
 *             [--auth none|mtls|token] [--client-ca FILE] [--client-crl FILE]
 *             [--tenants FILE]
 *             [--allow-anonymous] [--audit-log FILE|-]
 *             [--worker-user USER] [--no-worker-sandbox] [--metrics-listen HOST:PORT]
 *             [--config FILE|none] [--check-config]
 *
 * Every flag but the worker's is also a key of the configuration file
 * (--config, default /etc/gpulease/gpuleased.conf when it exists; see
 * config_file.h), read first: the command line wins over it. A reload
 * (SIGHUP, reload.h) reads both again through gl_options_parse.
 */
#ifndef GL_DAEMON_OPTIONS_H
#define GL_DAEMON_OPTIONS_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "daemon/daemon.h"

/* What the options set: the daemon's configuration, and what main() and a
 * worker use beyond it. */
typedef struct gl_options {
  gl_daemon_config cfg;
  int worker_fd;                /* --worker; -1: the daemon */
  char visible[256];            /* --cuda-visible-devices: a worker's MIG instance */
  char jit_cache_dir[PATH_MAX]; /* --jit-cache; "" none */
  bool device_given;
  int local_socket_given;       /* 1: a path, 2: none */
  char worker_user[256];        /* --worker-user */
  char nvjitlink[512];          /* --nvjitlink: its workers get it as $GL_NVJITLINK */
  bool worker_user_given;
  bool worker_sandbox;          /* false: --no-worker-sandbox */
  bool check_config;            /* --check-config */
  char config_file[PATH_MAX];   /* the file read; "" none */
} gl_options;

/* gl_options_parse's results besides 0. */
enum {
  GL_OPTIONS_HELP = 1,  /* --help: usage printed on stdout */
  GL_OPTIONS_USAGE = 2, /* a bad command line: err says why, usage follows */
  GL_OPTIONS_BAD = 3,   /* a bad value or configuration file: err says why (FILE:LINE) */
};

/* Reads the configuration file (--config FILE, else the default path when
 * it exists, never for a worker) and then the command line (argc, argv as
 * main got them; getopt's state is reset, so it may run again) over the
 * defaults into o. Settles what follows from them: the state directory
 * ($STATE_DIRECTORY, /var/lib/gpuleased as root, else
 * ~/.local/state/gpuleased) and the local socket's path in it. 0, or one
 * of GL_OPTIONS_* with err (errlen bytes) filled for USAGE and BAD. */
int gl_options_parse(int argc, char **argv, gl_options *o, char *err, size_t errlen);

/* Prints the daemon's usage (its options, one paragraph each) to f. */
void gl_options_usage(FILE *f);

#endif /* GL_DAEMON_OPTIONS_H */
