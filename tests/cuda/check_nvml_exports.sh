#!/bin/sh
# check_nvml_exports.sh LIB SRCDIR: the NVML shim's exported functions are
# exactly the names of SRCDIR/implemented.def and SRCDIR/unsupported.def,
# nvml* all, and the names programs look up first are among them.
set -eu
lib=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | LC_ALL=C sort > "$tmp/exported"
sed -n 's/^GL_NV_\(IMPL\|STUB\)(\(.*\))$/\2/p' "$src/implemented.def" "$src/unsupported.def" |
  LC_ALL=C sort > "$tmp/listed"
if ! cmp -s "$tmp/exported" "$tmp/listed"; then
  echo "exported (<) and listed (>) differ:"
  diff "$tmp/exported" "$tmp/listed" || true
  exit 1
fi
if grep -v '^nvml' "$tmp/exported"; then echo "names above are not NVML's"; exit 1; fi
for name in nvmlInit_v2 nvmlInitWithFlags nvmlShutdown nvmlErrorString nvmlDeviceGetCount_v2 \
    nvmlDeviceGetHandleByIndex_v2 nvmlDeviceGetName nvmlDeviceGetUUID nvmlDeviceGetMemoryInfo \
    nvmlDeviceGetComputeRunningProcesses nvmlSystemGetCudaDriverVersion_v2; do
  grep -qx "$name" "$tmp/exported" || { echo "$name is not exported"; exit 1; }
done
n=$(wc -l < "$tmp/exported")
[ "$n" -gt 350 ] || { echo "only $n exports"; exit 1; }
echo "ok: $n entry points, each listed once"
