#!/usr/bin/env bash
# The CUDA driver and NVML shims (src/cuda, src/nvml) on a GPU machine,
# against a build folder (or scripts/carry.sh's .carry):
#   tests/gpu/cuda_check.sh [BUILD_DIR]
# test_cuda_shim and test_nvml_shim with GL_TEST_DEVICE=cuda (the driver API
# on the real GPU: copies, pointer arithmetic, raw pointers in kernels,
# streams, events, printf, a fault's sticky error, the lease ended under
# the program; NVML's view of the lease); then, against a daemon started
# here, `nvidia-smi -L` and pynvml (where installed) under gpulease exec:
# they must see the lease's GPU and the lease's memory, not the machine's.
# Prints PASS/FAIL lines; exits 1 when one failed.
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
export LD_LIBRARY_PATH=$B/lib:$B/src/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PASS=0 FAIL=0
result() { if [ "$2" = 0 ]; then PASS=$((PASS+1)); echo "PASS $1"; else FAIL=$((FAIL+1)); echo "FAIL $1"; fi; }
for t in test_cuda_shim test_nvml_shim; do
  echo "== $t on the GPU"
  GL_TEST_DEVICE=cuda GL_TEST_BIN_DIR=$B timeout 180 "$B/tests/$t" 2>&1 | tail -15
  result "$t on the GPU" "${PIPESTATUS[0]}"
done
# The CUDA runtime programs (tests/cuda/rt_*.cu, built by nvcc with
# compute_90 PTX), where the build has them: in BUILD_DIR/tests/cuda/.
R=$B/tests/cuda
if [ -x "$R/test_cuda_runtime" ] || [ -x "$B/tests/test_cuda_runtime" ]; then
  t=$R/test_cuda_runtime
  [ -x "$t" ] || t=$B/tests/test_cuda_runtime
  echo "== test_cuda_runtime on the GPU (nvcc programs, static and shared cudart)"
  GL_TEST_DEVICE=cuda GL_TEST_BIN_DIR=$B GL_TEST_RT_DIR=$R timeout 180 "$t" 2>&1 | tail -15
  result "CUDA runtime programs under gpulease exec on the GPU" "${PIPESTATUS[0]}"
fi
W=$(mktemp -d /tmp/gl-cudacheck-XXXXXX)
"$B/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$W" --ready-file "$W/ready" \
  2> "$W/daemon.log" &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 1 300); do [ -s "$W/ready" ] && break; sleep 0.1; done
read -r PORT FP < "$W/ready" || { cat "$W/daemon.log"; exit 1; }
run() { GPULEASE_CUDA_LIBDIR=$B/src/cuda timeout 60 "$B/src/cli/gpulease" --addr "127.0.0.1:$PORT" \
          --pin-sha256 "$FP" exec --quiet --vram 3GiB -- "$@"; }
if command -v nvidia-smi >/dev/null; then
  echo "== nvidia-smi -L, locally and under gpulease exec"
  nvidia-smi -L
  run nvidia-smi -L > "$W/smi" 2> "$W/smi.err"
  rc=$?
  cat "$W/smi" "$W/smi.err"
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
  # Known not to work yet: nvidia-smi asks NVML for a private export table
  # (nvmlInternalGetExportTable) and refuses an NVML it does not know. The
  # shim must refuse clearly (its stderr line), never crash or name
  # another GPU; XPASS means it works now.
  if [ "$rc" = 0 ] && grep -q "GPU 0: .*(UUID: $uuid)" "$W/smi"; then
    echo "XPASS nvidia-smi -L through the NVML shim names the leased GPU"
  else
    grep -q "nvmlInternalGetExportTable is not supported by the gpulease NVML library" "$W/smi.err"
    result "nvidia-smi -L refused clearly (XFAIL: nvidia-smi needs NVML's private export table)" $?
  fi
fi
if python3 -c 'import pynvml' 2>/dev/null; then
  echo "== pynvml under gpulease exec"
  run python3 -c 'import pynvml as n; n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(0)
m = n.nvmlDeviceGetMemoryInfo(h); print(n.nvmlDeviceGetCount(), n.nvmlDeviceGetName(h), m.total)
assert n.nvmlDeviceGetCount() == 1 and m.total == 3 << 30' 2>&1
  result "pynvml sees one device with the lease's 3 GiB" $?
fi
echo "cuda check: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
