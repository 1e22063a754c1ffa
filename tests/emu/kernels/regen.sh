#!/usr/bin/env bash
# Regenerates the checked-in PTX of the kernel corpus, for both targets:
#   tests/emu/kernels/regen.sh [NVCC]
# writes tests/emu/kernels/ptx/sm_75/NAME.ptx and ptx/sm_90/NAME.ptx with
# the same command the build uses (nvcc --ptx -arch=sm_XX).
set -euo pipefail
NVCC=${1:-${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}}
cd "$(dirname "$0")"
for arch in 75 90; do
  mkdir -p "ptx/sm_$arch"
  for cu in *.cu; do
    "$NVCC" --ptx -arch="sm_$arch" -o "ptx/sm_$arch/${cu%.cu}.ptx" "$cu"
  done
done
# PTX of kernels that no longer exist
for f in ptx/sm_*/*.ptx; do
  name=$(basename "$f" .ptx)
  [ -e "$name.cu" ] || { echo "removing stale $f"; rm -f "$f"; }
done
echo "regenerated $(ls ptx/sm_75 | wc -l) kernels for sm_75 and sm_90"
