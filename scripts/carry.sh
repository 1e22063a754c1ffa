#!/usr/bin/env bash
# Copies what the GPU check needs from a build folder into .carry/ (ignored
# by git), in the build folder's layout, for the device tool's `carry`:
#   scripts/carry.sh [BUILD_DIR]      then, on the GPU machine:
#   LD_LIBRARY_PATH=.carry/lib tests/gpu/check.sh .carry
# Programs link ngtcp2, libev and json-c statically; GnuTLS is the
# machine's; libcmocka (tests only) and ngtcp2's shared libraries (for the
# Python wheel's libgpulease and the shared one) travel in .carry/lib, the
# wheels in .carry/wheels (tests/gpu/python_check.sh .carry .carry/wheels).
# The CUDA driver shim (src/cuda/libcuda.so.1) and the shared libgpulease
# it links (src/lib/, links kept) travel too: tests/gpu/cuda_bench.sh .carry
# runs bench/gl_bench_cuda on the node's driver and on the shim. The NVML
# shim (src/cuda/libnvidia-ml.so.1, built beside it) travels with its test.
set -euo pipefail
B=${1:-build}
C=.carry
rm -rf "$C"
mkdir -p "$C/src/daemon" "$C/src/cli" "$C/src/cuda" "$C/src/lib" "$C/tests" "$C/bench" "$C/lib"
cp "$B/src/daemon/gpuleased" "$C/src/daemon/"
cp "$B/src/cli/gpulease" "$C/src/cli/"
[ -e "$B/src/cuda/libcuda.so.1" ] && cp -L "$B/src/cuda/libcuda.so.1" "$C/src/cuda/"
[ -e "$B/src/cuda/libnvidia-ml.so.1" ] && cp -L "$B/src/cuda/libnvidia-ml.so.1" "$C/src/cuda/"
for so in "$B"/src/lib/libgpulease.so*; do [ -e "$so" ] && cp -P "$so" "$C/src/lib/"; done
for t in "$B"/tests/test_e2e_* "$B"/tests/multigpu_check "$B"/tests/gl_backend_stream_smoke "$B"/tests/gl_corpus_gpu "$B"/tests/gl_syscall_census \
         "$B"/tests/test_backend_* "$B"/tests/test_cuda_shim "$B"/tests/test_nvml_shim; do
  [ -x "$t" ] && cp "$t" "$C/tests/"
done
for t in "$B"/tests/test_cuda_runtime "$B"/tests/cuda/rt_*; do
  [ -x "$t" ] && mkdir -p "$C/tests/cuda" && cp "$t" "$C/tests/cuda/"
done
for b in "$B"/bench/gl_bench_*; do [ -x "$b" ] && cp "$b" "$C/bench/"; done
cp -r "$B/kernels" "$C/"
[ -d "$B/emu-kernels" ] && cp -r "$B/emu-kernels" "$C/"
for e in "$B"/examples/example_*; do [ -x "$e" ] && mkdir -p "$C/examples" && cp "$e" "$C/examples/"; done
cp -L "$(ldconfig -p | awk '/libcmocka.so.0 /{print $NF; exit}')" "$C/lib/"
# The shared libgpulease (the Python wheel bundles it) links ngtcp2's shared
# libraries, which the GPU node lacks.
for so in libngtcp2.so.16 libngtcp2_crypto_gnutls.so.8; do
  cp -L "$(ldconfig -p | awk -v n="$so" '$1 == n {print $NF; exit}')" "$C/lib/"
done
# The Python wheel (make check-wheel) and cffi for the node's Python.
if ls build-py/dist/gpulease-*.whl >/dev/null 2>&1; then
  mkdir -p "$C/wheels"
  cp build-py/dist/gpulease-*.whl "$C/wheels/"
  [ -d .whl ] && cp .whl/*.whl "$C/wheels/"
fi
strip --strip-debug "$C"/src/*/* "$C"/tests/* "$C"/bench/* 2>/dev/null || true
du -sh "$C"
