/*
 * kout.c - the kernels' printf output on the CLI's stderr
 * (gpulease_client_set_kernel_output): each line prefixed "kernel: ", so
 * it is told apart from the tool's own messages and from the output bytes
 * on stdout.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli/cli.h"

static void print_kout(void *user, uint64_t lease_id, const char *text, size_t len,
                       uint64_t dropped, uint32_t flags) {
  (void)user;
  (void)lease_id;
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && text[j] != '\n') j++;
    fprintf(stderr, "kernel: %.*s\n", (int)(j - i), text + i);
    i = j + 1;
  }
  if (flags & GPULEASE_KOUT_TRUNCATED)
    fprintf(stderr, "kernel: [%" PRIu64 " bytes of kernel output dropped: a lease keeps at "
                    "most 64 KiB until it is delivered]\n",
            dropped);
  if (flags & GPULEASE_KOUT_DISCARDED)
    fprintf(stderr, "kernel: [kernel output is not captured on a lease of class shared]\n");
  fflush(stderr);
}

void cli_kernel_output_on(gpulease_client *c) {
  gpulease_client_set_kernel_output(c, print_kout, NULL);
}
