#!/usr/bin/env bash
# Starts N daemons of a build on this machine (the GPU, or with --emu the
# emulated device) and runs gl_bench_pool over them (bench/pool_bench.c):
# 1,000 small chunks over 1, 2, 4 ... daemons against serial submits to
# one and the local driver, in one run.
#   scripts/bench_pool.sh BUILD [--emu] [--daemons N] [-- gl_bench_pool options]
set -uo pipefail
build=$1; shift
device=auto daemons=6
while [ $# -gt 0 ]; do
  case $1 in
    --emu) device=emu ;;
    --daemons) daemons=$2; shift ;;
    --) shift; break ;;
    *) echo "bench_pool.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
dir=$(mktemp -d /tmp/gl-bench-pool-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
extra=()
[ "$device" = emu ] && extra=(--emu-vram 256M)
for i in $(seq 1 "$daemons"); do
  "$build/src/daemon/gpuleased" --device "$device" "${extra[@]}" --listen 127.0.0.1:0 \
    --state-dir "$dir/d$i" --ready-file "$dir/r$i" 2> "$dir/log$i" &
  pids+=($!)
done
: > "$dir/nodes"
for i in $(seq 1 "$daemons"); do
  for _ in $(seq 1 600); do [ -s "$dir/r$i" ] && break; sleep 0.05; done
  [ -s "$dir/r$i" ] || { echo "daemon $i did not start:"; cat "$dir/log$i"; exit 1; }
  read -r port fp < "$dir/r$i"
  echo "127.0.0.1:$port $fp" >> "$dir/nodes"
done
counts=1
for n in 2 4 6 8 12 16; do [ "$n" -le "$daemons" ] && counts="$counts,$n"; done
"$build/bench/gl_bench_pool" --nodes-file "$dir/nodes" --ptx "$build/kernels/chunk_mix.ptx" \
  --counts "$counts" "$@"
