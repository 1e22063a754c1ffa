#!/usr/bin/env bash
# Copies what the GPU check needs from a build folder into .carry/ (ignored
# by git), in the build folder's layout, for the device tool's `carry`:
#   scripts/carry.sh [BUILD_DIR]      then, on the GPU machine:
#   LD_LIBRARY_PATH=.carry/lib tests/gpu/check.sh .carry
# Programs link ngtcp2, libev and json-c statically; GnuTLS is the
# machine's; libcmocka (tests only) travels in .carry/lib.
set -euo pipefail
B=${1:-build}
C=.carry
rm -rf "$C"
mkdir -p "$C/src/daemon" "$C/src/cli" "$C/tests" "$C/bench" "$C/lib"
cp "$B/src/daemon/gpuleased" "$C/src/daemon/"
cp "$B/src/cli/gpulease" "$C/src/cli/"
for t in "$B"/tests/test_e2e_* "$B"/tests/gl_backend_stream_smoke "$B"/tests/gl_corpus_gpu "$B"/tests/gl_syscall_census \
         "$B"/tests/test_backend_*; do
  [ -x "$t" ] && cp "$t" "$C/tests/"
done
for b in "$B"/bench/gl_bench_*; do [ -x "$b" ] && cp "$b" "$C/bench/"; done
cp -r "$B/kernels" "$C/"
[ -d "$B/emu-kernels" ] && cp -r "$B/emu-kernels" "$C/"
for e in "$B"/examples/example_*; do [ -x "$e" ] && mkdir -p "$C/examples" && cp "$e" "$C/examples/"; done
cp -L "$(ldconfig -p | awk '/libcmocka.so.0 /{print $NF; exit}')" "$C/lib/"
strip --strip-debug "$C"/src/*/* "$C"/tests/* "$C"/bench/* 2>/dev/null || true
du -sh "$C"
