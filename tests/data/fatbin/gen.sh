#!/usr/bin/env bash
# Regenerates the fatbins of tests/data/fatbin/ from ones.cu (and
# ones_isa94.ptx, the same kernel's PTX with .version 9.4, newer than
# driver 13.0 takes), with the CUDA toolkit's nvcc and fatbinary:
#   multi.fatbin      cubins for sm_75 and sm_90, PTX for compute_90 (zstd,
#                     nvcc's default compression)
#   multi_lz4.fatbin  the same, LZ4 (nvcc --compress-mode=speed)
#   plain.fatbin      the same, uncompressed (nvcc --no-compress)
#   cubins.fatbin     cubins for sm_75 and sm_80 only (no PTX)
#   ptx75.fatbin      PTX for compute_75 only (the newest PTX picked for
#                     an sm_90 device)
#   isa94.fatbin      PTX with .version 9.4 for sm_90 only
#   cubin90_ptx75.fatbin  a cubin for sm_90 and PTX for compute_75: on an
#                     sm_90 GPU the driver runs the cubin (FUNC_INFO's
#                     ptx_version says 9.0, not 7.5)
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
FATBINARY=${FATBINARY:-$(dirname "$(command -v "$NVCC")")/fatbinary}
g="-gencode arch=compute_75,code=sm_75 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
$NVCC -fatbin $g -o multi.fatbin ones.cu
$NVCC -fatbin --compress-mode=speed $g -o multi_lz4.fatbin ones.cu
$NVCC -fatbin --no-compress $g -o plain.fatbin ones.cu
$NVCC -fatbin -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 -o cubins.fatbin ones.cu
$NVCC -fatbin -gencode arch=compute_75,code=compute_75 -o ptx75.fatbin ones.cu
$NVCC -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75 -o cubin90_ptx75.fatbin ones.cu
$NVCC --ptx -arch=sm_90 -o ones_isa94.ptx ones.cu
sed -i 's/^\.version .*/.version 9.4/' ones_isa94.ptx
"$FATBINARY" --create=isa94.fatbin -64 --image3=kind=ptx,sm=90,file=ones_isa94.ptx
ls -l *.fatbin
