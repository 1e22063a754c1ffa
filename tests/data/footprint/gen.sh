#!/usr/bin/env bash
# Regenerates the images of tests/data/footprint/ from globals.cu with the
# CUDA toolkit's nvcc (the device memory they declare is read by
# src/backend/footprint.c; tests/unit/test_footprint.c):
#   globals.ptx          PTX for compute_90
#   globals_sm90.cubin   a cubin for sm_90
#   globals.fatbin       a cubin for sm_90 and PTX for compute_90 (zstd,
#                        nvcc's default compression)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
$NVCC --ptx -arch=compute_90 -o globals.ptx globals.cu
$NVCC --cubin -arch=sm_90 -o globals_sm90.cubin globals.cu
$NVCC -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -o globals.fatbin globals.cu
ls -l globals.ptx globals_sm90.cubin globals.fatbin
