#!/bin/sh
# Regenerates the checked-in PTX of async.cu (nvcc 13.0 was used).
set -e
cd "$(dirname "$0")"
nvcc --ptx -arch=sm_80 -diag-suppress 20054 -o async_sm80.ptx async.cu
nvcc --ptx -arch=sm_90a -diag-suppress 20054 -o async_sm90a.ptx async.cu
