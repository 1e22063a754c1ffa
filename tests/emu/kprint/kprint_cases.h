// The printf cases of kprint.cu, shared with tests/unit/test_emu_kprintf.c,
// which formats each with the host's snprintf and compares the kernel's
// text. Variables: i (int), u (unsigned), ll (long long), ull (unsigned
// long long), d (double), f (float), c (char), h (short), s (a string),
// p (a pointer), w (a width), pr (a precision), n (a NaN of the caller's
// bits: a NaN's sign is the compiler's choice in 0.0 / 0.0).
#define KP_CASES(X)                                                                   \
  X("ints: %d %i %u %o %x %X\n", i, i, u, u, u, u)                                    \
  X("flags: [%5d] [%-5d] [%05d] [%+d] [% d] [%#o] [%#x] [%#X]\n", i, i, i, i, i, u, u, u) \
  X("prec: [%.3d] [%8.3d] [%-8.3x] [%.0d]\n", i, i, u, 0)                             \
  X("long: %ld %lld %lu %llu %llx %llX %llo\n", (long)ll, ll, (unsigned long)ull, ull, ull, ull, ull)\
  X("short: %hd %hu %hx %hhd %hhu %hhx\n", i, u, u, i, u, u)                           \
  X("char: [%c] [%3c] [%-3c] %c%c\n", c, c, c, 'o', 'k')                              \
  X("neg: %d %i %ld %hd %hhd\n", -i, -i, (long)-ll, h, -i)                                  \
  X("fixed: %f %.2f %10.3f %-10.1f| %+f %F\n", d, d, d, d, d, d)                      \
  X("exp: %e %.3e %E %12.4E %-12.2e|\n", d, d, d, d, d)                               \
  X("general: %g %G %.3g %10g %#g %g %g\n", d, d, d, d, d, 1e-10, 1e20)              \
  X("hex float: %a %A %.2a\n", d, d, d)                                               \
  X("float promoted: %f %e %g\n", f, f, f)                                            \
  X("special: %f %e %g %F %E %G\n", 1.0 / 0.0, -1.0 / 0.0, n, 1.0 / 0.0, -1.0 / 0.0, n) \
  X("strings: [%s] [%10s] [%-10s] [%.3s] [%s]\n", s, s, s, s, "literal")              \
  X("pointer: %p\n", p)                                                               \
  X("star: [%*d] [%-*d] [%.*f] [%*.*e] [%*d]\n", w, i, w, i, pr, d, w, pr, d, -w, i)  \
  X("percent: 100%% %d%%\n", i)                                                       \
  X("mixed: %d %f %s %lld %c %x %g %u\n", i, d, s, ll, c, u, f, u)                    \
  X("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\n", \
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,  \
    24, 25, 26, 27, 28, 29, 30, 31, 32)
