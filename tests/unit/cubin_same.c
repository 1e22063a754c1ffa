/* cubin_same - compares two cubins (64-bit ELF) section by section, leaving
 * out the toolkit note (.note.nv.tkinfo: the nvcc/nvlink/ptxas version
 * strings and command lines, which name the toolkit's install path, so the
 * same nvcc under /usr/local/cuda and /usr/local/cuda-13.0 writes different
 * bytes there and the same code everywhere else).
 *
 *   cubin_same A.cubin B.cubin
 *
 * Exit 0 when the ELF headers agree (bar the section table's offset), both
 * files hold the same sections in the same order with the same type,
 * flags, address, link, info, alignment, entry size and bytes, and the
 * program headers agree in type, flags, addresses, alignment and the
 * sections they hold; 1 with a line on stderr naming the first difference;
 * 2 when a file cannot be read or is not a 64-bit little-endian ELF; 3
 * when the notes name different toolkit releases (then the code may differ
 * and nothing is compared). Used by src/backend/while_cond/check.cmake (the ctest
 * backend_while_cond_fresh). */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *path;
  unsigned char *b;
  size_t n;
  Elf64_Ehdr eh;
} cubin;

static int load(cubin *c, const char *path) {
  c->path = path;
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return -1;
  }
  c->b = NULL;
  c->n = 0;
  size_t cap = 0;
  for (;;) {
    if (c->n == cap) {
      cap = cap ? cap * 2 : 65536;
      unsigned char *nb = realloc(c->b, cap);
      if (!nb) {
        fclose(f);
        return -1;
      }
      c->b = nb;
    }
    size_t r = fread(c->b + c->n, 1, cap - c->n, f);
    c->n += r;
    if (r == 0)
      break;
  }
  fclose(f);
  if (c->n < sizeof c->eh || memcmp(c->b, ELFMAG, SELFMAG) != 0 || c->b[EI_CLASS] != ELFCLASS64 ||
      c->b[EI_DATA] != ELFDATA2LSB) {
    fprintf(stderr, "%s: not a 64-bit little-endian ELF\n", path);
    return -1;
  }
  memcpy(&c->eh, c->b, sizeof c->eh);
  if (c->eh.e_shentsize != sizeof(Elf64_Shdr) ||
      c->eh.e_shoff > c->n || (size_t)c->eh.e_shnum * sizeof(Elf64_Shdr) > c->n - c->eh.e_shoff ||
      (c->eh.e_phnum && (c->eh.e_phentsize != sizeof(Elf64_Phdr) || c->eh.e_phoff > c->n ||
                         (size_t)c->eh.e_phnum * sizeof(Elf64_Phdr) > c->n - c->eh.e_phoff)) ||
      c->eh.e_shstrndx >= c->eh.e_shnum) {
    fprintf(stderr, "%s: section or program header table out of the file\n", path);
    return -1;
  }
  return 0;
}

static Elf64_Shdr shdr(const cubin *c, unsigned i) {
  Elf64_Shdr s;
  memcpy(&s, c->b + c->eh.e_shoff + (size_t)i * sizeof s, sizeof s);
  return s;
}

/* The section's name, or "" when the name table does not hold it. */
static const char *sname(const cubin *c, const Elf64_Shdr *s) {
  Elf64_Shdr st = shdr(c, c->eh.e_shstrndx);
  if (st.sh_offset > c->n || st.sh_size > c->n - st.sh_offset || s->sh_name >= st.sh_size)
    return "";
  const char *p = (const char *)c->b + st.sh_offset + s->sh_name;
  return memchr(p, 0, st.sh_size - s->sh_name) ? p : "";
}

static int bytes_of(const cubin *c, const Elf64_Shdr *s, const unsigned char **p) {
  if (s->sh_type == SHT_NOBITS) {
    *p = NULL;
    return 0;
  }
  if (s->sh_offset > c->n || s->sh_size > c->n - s->sh_offset) {
    fprintf(stderr, "%s: section %s out of the file\n", c->path, sname(c, s));
    return -1;
  }
  *p = c->b + s->sh_offset;
  return 0;
}

/* Whether section s lies in segment p's file bytes (the padding between a
 * segment's sections depends on where the toolkit note ended, so segments
 * are compared by what they hold, not by their sizes). */
static int in_segment(const Elf64_Phdr *p, const Elf64_Shdr *s) {
  return s->sh_type != SHT_NOBITS && s->sh_size && s->sh_offset >= p->p_offset &&
         s->sh_offset - p->p_offset < p->p_filesz;
}

static Elf64_Phdr phdr(const cubin *c, unsigned i) {
  Elf64_Phdr p;
  memcpy(&p, c->b + c->eh.e_phoff + (size_t)i * sizeof p, sizeof p);
  return p;
}

/* The toolkit release the note names ("Cuda compilation tools, release
 * 13.0, V13.0.88"), or "" when there is none. */
static const char *release_of(const cubin *c) {
  static const char key[] = "Cuda compilation tools";
  for (unsigned i = 0; i < c->eh.e_shnum; i++) {
    Elf64_Shdr s = shdr(c, i);
    const unsigned char *p;
    if (strcmp(sname(c, &s), ".note.nv.tkinfo") != 0 || s.sh_type == SHT_NOBITS ||
        bytes_of(c, &s, &p) != 0)
      continue;
    for (size_t k = 0; k + sizeof key - 1 <= s.sh_size; k++)
      if (memcmp(p + k, key, sizeof key - 1) == 0 && memchr(p + k, 0, s.sh_size - k))
        return (const char *)p + k;
  }
  return "";
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cubin_same A.cubin B.cubin\n");
    return 2;
  }
  cubin a, b;
  if (load(&a, argv[1]) != 0 || load(&b, argv[2]) != 0)
    return 2;
  const char *ra = release_of(&a), *rb = release_of(&b);
  if (strcmp(ra, rb) != 0) {
    fprintf(stderr, "%s is from \"%s\", %s from \"%s\"\n", a.path, ra, b.path, rb);
    return 3;
  }
  Elf64_Ehdr ea = a.eh, eb = b.eh;
  ea.e_shoff = eb.e_shoff = 0;
  ea.e_phoff = eb.e_phoff = 0;
  if (memcmp(&ea, &eb, sizeof ea) != 0) {
    fprintf(stderr, "%s and %s: ELF headers differ\n", a.path, b.path);
    return 1;
  }
  for (unsigned i = 0; i < a.eh.e_shnum; i++) {
    Elf64_Shdr sa = shdr(&a, i), sb = shdr(&b, i);
    const char *na = sname(&a, &sa), *nb = sname(&b, &sb);
    if (strcmp(na, nb) != 0) {
      fprintf(stderr, "section %u: %s in %s, %s in %s\n", i, na, a.path, nb, b.path);
      return 1;
    }
    if (strcmp(na, ".note.nv.tkinfo") == 0)
      continue;
    if (sa.sh_type != sb.sh_type || sa.sh_flags != sb.sh_flags || sa.sh_addr != sb.sh_addr ||
        sa.sh_size != sb.sh_size || sa.sh_link != sb.sh_link || sa.sh_info != sb.sh_info ||
        sa.sh_addralign != sb.sh_addralign || sa.sh_entsize != sb.sh_entsize) {
      fprintf(stderr, "section %s: headers differ\n", na);
      return 1;
    }
    const unsigned char *pa, *pb;
    if (bytes_of(&a, &sa, &pa) != 0 || bytes_of(&b, &sb, &pb) != 0)
      return 2;
    if (pa && memcmp(pa, pb, sa.sh_size) != 0) {
      fprintf(stderr, "section %s: bytes differ\n", na);
      return 1;
    }
  }
  if (a.eh.e_phnum != b.eh.e_phnum) {
    fprintf(stderr, "%s and %s: program header counts differ\n", a.path, b.path);
    return 1;
  }
  for (unsigned i = 0; i < a.eh.e_phnum; i++) {
    Elf64_Phdr pa = phdr(&a, i), pb = phdr(&b, i);
    if (pa.p_type != pb.p_type || pa.p_flags != pb.p_flags || pa.p_vaddr != pb.p_vaddr ||
        pa.p_paddr != pb.p_paddr || pa.p_align != pb.p_align) {
      fprintf(stderr, "program header %u differs\n", i);
      return 1;
    }
    for (unsigned k = 0; k < a.eh.e_shnum; k++) {
      Elf64_Shdr sa = shdr(&a, k), sb = shdr(&b, k);
      if (in_segment(&pa, &sa) != in_segment(&pb, &sb)) {
        fprintf(stderr, "program header %u: section %s is in one file's segment only\n", i,
                sname(&a, &sa));
        return 1;
      }
    }
  }
  free(a.b);
  free(b.b);
  return 0;
}
