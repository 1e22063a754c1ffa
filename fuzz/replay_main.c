/*
 * replay_main.c - runs a libFuzzer harness without libFuzzer.
 *
 * Linked with a harness (fuzz_wire.c) it becomes a plain program that calls
 * LLVMFuzzerTestOneInput() once per file, so the seed corpus and every
 * input a fuzzer once crashed on are replayed by ctest in every build, with
 * or without clang. A harness signals a bug by crashing or abort()ing,
 * which fails the test.
 *
 *   usage: fuzz_wire_replay PATH...
 *
 * A PATH that is a directory is replayed file by file in name order (hidden
 * files skipped); a file is replayed as is. Exits 1 when a path cannot be
 * read or when no input at all was found, so a missing corpus fails too.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads a whole file (malloc'd, caller frees). 0 or -1. */
static int read_all(const char *path, uint8_t **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 4096;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  int bad = ferror(f) || n == cap; /* n == cap only when realloc failed */
  fclose(f);
  if (bad) {
    free(buf);
    return -1;
  }
  *data = buf;
  *len = n;
  return 0;
}

static int replay_file(const char *path) {
  uint8_t *data;
  size_t len;
  if (read_all(path, &data, &len) != 0) {
    fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  /* A copy of exactly len bytes, so ASan sees reads past the input. */
  uint8_t *exact = malloc(len ? len : 1);
  if (!exact) {
    free(data);
    return -1;
  }
  if (len) memcpy(exact, data, len);
  free(data);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every regular file in dir; adds the count to *n. 0 or -1. */
static int replay_dir(const char *dir, size_t *n) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t count = 0, cap = 0;
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *names);
      if (!nn) {
        rc = -1;
        break;
      }
      names = nn;
    }
    size_t need = strlen(dir) + strlen(e->d_name) + 2;
    names[count] = malloc(need);
    if (!names[count]) {
      rc = -1;
      break;
    }
    snprintf(names[count], need, "%s/%s", dir, e->d_name);
    count++;
  }
  closedir(d);
  if (count) qsort(names, count, sizeof *names, name_cmp);
  for (size_t i = 0; i < count; i++) {
    struct stat st;
    if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      if (replay_file(names[i]) != 0) rc = -1;
      (*n)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  size_t n = 0;
  int rc = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s PATH...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      if (replay_dir(argv[i], &n) != 0) rc = 1;
    } else {
      if (replay_file(argv[i]) != 0) rc = 1;
      n++;
    }
  }
  printf("replayed %zu inputs\n", n);
  if (n == 0) {
    fprintf(stderr, "replay: no inputs found\n");
    rc = 1;
  }
  return rc;
}
