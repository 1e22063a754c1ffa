/*
 * help.c - the help texts of the gpulease command-line tool: the global
 * options, and one section for each command.
 *
 *   gpulease --help, gpulease help         everything
 *   gpulease COMMAND --help                that command's section
 *   gpulease help COMMAND                  the same
 *
 * tests/cli/test_man_cli.sh checks these texts against the man page
 * (docs/man/gpulease.1.scd): every option written here is documented
 * there, in the part of the command that lists it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char head_text[] =
    "usage: gpulease [global options] COMMAND [options]\n"
    "       gpulease help [COMMAND]    (or: gpulease COMMAND --help)\n"
    "\n"
    "Commands: inventory, lease, admin, submit, session, mem, module, func, launch, top, pool,\n"
    "          exec\n";

static const char global_text[] =
    "Global options (they may stand before or after the command's words):\n"
    "  --addr HOST:PORT      daemon address (default 127.0.0.1:5701)\n"
    "  --ca-file FILE        verify the daemon against these CA certificates\n"
    "  --pin-sha256 HEX      or: accept only this certificate fingerprint\n"
    "  --insecure            or: do not verify the daemon (encryption only)\n"
    "  --cert FILE --key FILE  a client certificate (for a daemon that authenticates\n"
    "                        clients by mTLS)\n"
    "  --token TOKEN         a bearer token (for a daemon that authenticates clients\n"
    "                        by token); also $GPULEASE_TOKEN\n"
    "  --json                machine-readable output\n"
    "  --timeout SECONDS     per-request timeout (default 30)\n"
    "  --quiet               no transfer progress on stderr\n"
    "  --help                this text; with a COMMAND, only that command's part\n";

static const char pointer_text[] =
    "Global options (daemon address, verification, JSON output): gpulease help\n";

static const char inventory_text[] =
    "  inventory                         list the node's GPUs (name, compute\n"
    "         capability, SMs, VRAM total, free and leased in MiB, live leases,\n"
    "         warm workers) and the caller's tenant with its quota and use\n";

static const char lease_text[] =
    "  lease alloc --vram BYTES --ttl SECONDS [--gpu N|UUID]\n"
    "         [--class isolated|shared|device|partition] (default isolated: a CUDA\n"
    "         context of its own; shared: one context for all shared leases, a few\n"
    "         MiB each, no isolation between them; device: the whole GPU;\n"
    "         partition: a whole MIG instance of a GPU in MIG mode)\n"
    "         [--printf-fifo BYTES] [--malloc-heap BYTES] (kernel printf FIFO and\n"
    "         device malloc heap of the lease's context; default 64 KiB, 1 MiB)\n"
    "         prints the lease's id and its secret\n"
    "  lease renew ID --secret HEX --ttl SECONDS [--rotate] (--rotate: a new secret;\n"
    "         every older one, delegated ones too, stops working)\n"
    "  lease show ID --secret HEX\n"
    "  lease free ID --secret HEX\n"
    "  lease delegate ID --secret HEX --rights LIST [--ttl SECONDS] [--to TENANT]\n"
    "         prints a weaker secret to hand on: LIST of query, renew, free, submit,\n"
    "         session, read, write, delegate (or all); --ttl: it expires sooner;\n"
    "         --to: another tenant may use it\n"
    "  lease revoke ID [--reason TEXT]   end one of your tenant's leases (an admin:\n"
    "         anyone's) without its secret; its secrets then fail naming it\n";

static const char admin_text[] =
    "  admin unfence GPU                 let a fenced GPU (a worker's teardown failed)\n"
    "         take leases again; for the daemon's admins\n";

static const char submit_text[] =
    "  submit --binary FILE --kernel NAME [--grid X,Y,Z] [--block X,Y,Z]\n"
    "         [--shared-mem BYTES] [--cooperative] [--cluster X,Y,Z]\n"
    "         [--input FILE] [--input-offset BYTES]\n"
    "         [--output-size BYTES] [--output-offset BYTES] [--output FILE]\n"
    "         [--format f32|i32|u32|hex|raw] [--arg TYPE:VALUE]...\n"
    "         [--image-format auto|ptx|cubin|fatbin]\n"
    "         [--lease ID --secret HEX | [--vram BYTES] [--ttl SECONDS] [--gpu N|UUID]]\n"
    "         runs one kernel and prints its output (default --format hex; raw:\n"
    "         the bytes as they are; --output FILE: the bytes to FILE)\n"
    "  Without --lease, submit leases just enough VRAM for the call (or --vram),\n"
    "  for --ttl (default 60 s), on --gpu (default any), and frees it afterwards.\n"
    "  --arg types: ptr:OFFSET (a pointer into the lease's VRAM), i8 i16 i32 i64\n"
    "  u8 u16 u32 u64 f32 f64, bytes:HEX. Without --arg the lease's VRAM pointer\n"
    "  is the kernel's only parameter. --cooperative makes the grid co-resident so\n"
    "  that grid-wide synchronisation (cooperative groups' this_grid().sync())\n"
    "  works; a grid too large is refused with the most blocks that fit.\n"
    "  --cluster X,Y,Z groups blocks into thread-block clusters (compute\n"
    "  capability 9.0+; each grid dimension a multiple of the cluster's), sharing\n"
    "  distributed shared memory.\n";

static const char session_text[] =
    "  Sessions keep data and modules on the GPU between commands; each command\n"
    "  is one connection, and its ops run after the ones the daemon already has.\n"
    "  session open --lease ID --secret HEX           prints the new session's id\n"
    "  session close SID --lease ID --secret HEX\n"
    "  session sync SID --lease ID --secret HEX [--ack SEQ|any]\n"
    "         waits for the session's ops and reports its failure; --ack\n"
    "         acknowledges it ('any': whatever failed, e.g. an op of this tool)\n"
    "  (SID may also be given as --session SID.)\n";

static const char mem_text[] =
    "  mem alloc --session SID --size BYTES --lease ID --secret HEX\n"
    "         prints the buffer's HANDLE\n"
    "  mem free HANDLE --session SID --lease ID --secret HEX\n"
    "  mem write HANDLE --session SID --input FILE [--offset BYTES]\n"
    "         --lease ID --secret HEX       (--input -: standard input)\n"
    "  mem read HANDLE --session SID --size BYTES [--offset BYTES] [--output FILE]\n"
    "         [--format f32|i32|u32|hex|raw] --lease ID --secret HEX\n"
    "         (default --format hex; more than 1 GiB needs --output FILE)\n"
    "  Transfers running over a second show progress on stderr (not with --quiet).\n";

static const char module_text[] =
    "  module load --session SID --binary FILE [--image-format auto|ptx|cubin|fatbin]\n"
    "         --lease ID --secret HEX\n"
    "         prints the module's HANDLE and the cache that had it (loaded: none,\n"
    "         context: already loaded in the lease's context, disk: the daemon's\n"
    "         JIT cache)\n"
    "  module unload HANDLE --session SID --lease ID --secret HEX\n";

static const char func_text[] =
    "  func info --session SID --module HANDLE --kernel NAME --lease ID --secret HEX\n"
    "         prints the kernel's registers, shared, local and const memory, PTX\n"
    "         and binary versions and parameter sizes\n";

static const char launch_text[] =
    "  launch --session SID --module HANDLE --kernel NAME [--grid X,Y,Z]\n"
    "         [--block X,Y,Z] [--shared-mem BYTES] [--arg buf:HANDLE[+OFFSET]]\n"
    "         [--arg TYPE:VALUE]... [--cooperative] [--cluster X,Y,Z]\n"
    "         --lease ID --secret HEX\n"
    "         launches, waits, reports a failure\n"
    "  --arg buf:HANDLE[+OFFSET] is a pointer into a buffer of the session; the\n"
    "  scalar types are submit's (i8 ... f64, bytes:HEX). --cooperative and\n"
    "  --cluster as for submit.\n";

static const char top_text[] =
    "  top [--metrics URL|none] [--interval SECONDS] [--once]\n"
    "         a live view of the node, redrawn every --interval (default 1,\n"
    "         fractions allowed) until Ctrl-C: a header (address, GPUs,\n"
    "         connections, time), a row for each GPU (VRAM total, allocated and\n"
    "         free, live leases and sessions, utilisation, temperature, fenced)\n"
    "         and rates over the last interval (requests/s by op with their mean\n"
    "         latency, submits and submit errors/s, leases acquired and dropped/s,\n"
    "         bytes/s in and out). --metrics: the daemon's Prometheus endpoint\n"
    "         (default http://HOST:9701/metrics, HOST that of --addr); none: the\n"
    "         inventory only. --once: scrape, wait --interval, scrape, print one\n"
    "         frame and exit; with --json one JSON object (a live view with --json:\n"
    "         one object a line). The daemon renders its metrics once a second, so\n"
    "         rates over intervals shorter than that come in bursts.\n";

static const char pool_text[] =
    "  pool map (--nodes HOST:PORT,... | --nodes-file FILE | --srv NAME [--dns-server IP:PORT])\n"
    "         --binary FILE --kernel NAME --input FILE --chunk-bytes BYTES\n"
    "         [--output-bytes-per-chunk BYTES --output FILE] [--grid X,Y,Z]\n"
    "         [--block X,Y,Z] [--shared-mem BYTES] [--arg TYPE:VALUE]...\n"
    "         [--class isolated|shared] [--ttl SECONDS] [--max-leases-per-node N]\n"
    "         [--max-leases N] [--attempts N] [--deadline SECONDS] [--image-format F]\n"
    "         runs the kernel over every chunk of the input on many daemons: cuts\n"
    "         --input into --chunk-bytes chunks (the last may be short), leases on\n"
    "         the nodes with the most room (a lease serves many chunks), submits\n"
    "         each chunk, retries a chunk whose node, connection, lease or worker\n"
    "         fails on another node (--attempts tries, default 3), and writes the\n"
    "         outputs in chunk order to --output. A kernel error ends the job. An\n"
    "         --arg may name the chunk: ptr:@in (its input slice), ptr:@out (its\n"
    "         output slice), u32:@bytes (its input bytes), u32:@index; other\n"
    "         values are submit's scalars. The kernel must be idempotent. Shows a\n"
    "         progress bar on a terminal and ends with a summary: chunks, chunks/s,\n"
    "         chunk latency p50 and p99, retries, and per node chunks, retries,\n"
    "         failures, leases, bytes and seconds. --nodes-file: a node a line,\n"
    "         'HOST:PORT [PIN-SHA256]'; --srv: the DNS SRV records of NAME\n"
    "         (--dns-server: ask that server). Leases: --class (default isolated),\n"
    "         --ttl (default 60, renewed), at most --max-leases-per-node (4) and\n"
    "         --max-leases (64). --deadline bounds the whole job (default 600).\n"
    "  pool inventory (--nodes ... | --nodes-file FILE | --srv NAME)\n"
    "         every node's GPUs in one table (a node that cannot be reached is\n"
    "         listed down, with why); exit 1 when none is up\n";

static const char exec_text[] =
    "  exec --vram BYTES [--ttl SECONDS] [--gpu N|UUID]\n"
    "         [--class isolated|shared|device|partition] [--printf-fifo BYTES]\n"
    "         [--malloc-heap BYTES] [--quiet] -- COMMAND [ARGS...]\n"
    "         leases a GPU (as lease alloc; --ttl default 300, renewed while COMMAND\n"
    "         runs) and runs COMMAND with gpulease's CUDA driver shim as its\n"
    "         libcuda.so.1 (LD_LIBRARY_PATH) and the lease in its environment\n"
    "         (GPULEASE_ADDR, GPULEASE_LEASE, GPULEASE_SECRET, and the connection's\n"
    "         options; docs/cuda-driver.md), so an unmodified CUDA program runs on\n"
    "         the lease. Everything after '--' is COMMAND's. SIGINT, SIGTERM, SIGHUP\n"
    "         and SIGQUIT go to COMMAND; when it ends the lease is freed. Exit\n"
    "         status: COMMAND's (128+N: killed by signal N; 127: not found; 126: not\n"
    "         runnable). --quiet: no line on stderr naming the lease. The shim's\n"
    "         directory: $GPULEASE_CUDA_LIBDIR, else the installed one.\n";

/* Notes that hold for every command: after all sections, and after one
 * section that needs them. */
static const char bytes_note[] =
    "BYTES take K, M, G, T (KiB...) or KB, MB, GB, TB (decimal) suffixes.\n";
static const char secret_note[] = "The secret may also come from $GPULEASE_SECRET.\n";

static const struct {
  const char *name, *usage, *text;
} sections[] = {
    {"inventory", "inventory", inventory_text},
    {"lease", "lease alloc|renew|show|free|delegate|revoke ...", lease_text},
    {"admin", "admin unfence GPU", admin_text},
    {"submit", "submit --binary FILE --kernel NAME [options]", submit_text},
    {"session", "session open|close|sync ...", session_text},
    {"mem", "mem alloc|free|write|read ...", mem_text},
    {"module", "module load|unload ...", module_text},
    {"func", "func info ...", func_text},
    {"launch", "launch --session SID --module HANDLE --kernel NAME [options]", launch_text},
    {"top", "top [--metrics URL|none] [--interval SECONDS] [--once]", top_text},
    {"pool", "pool map|inventory (--nodes LIST | --nodes-file FILE | --srv NAME) ...", pool_text},
    {"exec", "exec --vram BYTES [options] -- COMMAND [ARGS...]", exec_text},
};

#define NSECTIONS (sizeof sections / sizeof sections[0])

void cli_help_all(FILE *f) {
  fputs(head_text, f);
  fputc('\n', f);
  fputs(global_text, f);
  for (size_t i = 0; i < NSECTIONS; i++) {
    fprintf(f, "\n%s:\n", sections[i].name);
    fputs(sections[i].text, f);
  }
  fputc('\n', f);
  fputs(bytes_note, f);
  fputs(secret_note, f);
  fputs("Exit status: 0 success, 1 the operation failed, 2 bad usage.\n", f);
}

int cli_help_command(FILE *f, const char *name) {
  for (size_t i = 0; i < NSECTIONS; i++)
    if (strcmp(sections[i].name, name) == 0) {
      fprintf(f, "usage: gpulease [global options] %s\n", sections[i].usage);
      fputs(pointer_text, f);
      fputc('\n', f);
      fputs(sections[i].text, f);
      bool bytes = strstr(sections[i].text, "BYTES") != NULL;
      bool secret = strstr(sections[i].text, "--secret") != NULL;
      if (bytes || secret) fputc('\n', f);
      if (bytes) fputs(bytes_note, f);
      if (secret) fputs(secret_note, f);
      return 0;
    }
  return -1;
}
