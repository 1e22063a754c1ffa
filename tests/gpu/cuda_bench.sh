#!/usr/bin/env bash
# The CUDA driver API on the real driver and through our libcuda.so.1 shim
# (src/cuda/) under `gpulease exec`, same binary, same GPU, same run, against
# a build folder (or the .carry folder of scripts/carry.sh):
#   tests/gpu/cuda_bench.sh [BUILD_DIR] [gl_bench_cuda options...]
#   LD_LIBRARY_PATH=.carry/lib tests/gpu/cuda_bench.sh .carry
#   LD_LIBRARY_PATH=.carry/lib tests/gpu/cuda_bench.sh .carry --mib 64 --launches 5000
# bench/gl_bench_cuda (bench/cuda_driver_bench.c) runs with --label local on
# the system's libcuda.so.1, then with --label gpulease as
#   gpulease exec --addr ADDR --pin-sha256 HEX --vram 2GiB -- gl_bench_cuda ...
# against one gpuleased started here, local and gpulease interleaved for
# GL_CUDA_BENCH_ROUNDS rounds (2), each run under `timeout`
# GL_CUDA_BENCH_TIMEOUT seconds (300). Prints each run's lines, then a table:
# per figure the median over the rounds of each, and gpulease/local.
# The exec run gets LD_LIBRARY_PATH=BUILD_DIR/src/cuda:BUILD_DIR/src/lib:
# BUILD_DIR/lib before the caller's (the shim, its libgpulease, the carried
# ngtcp2), whatever exec adds itself; the run's "libcuda" line says which
# file the loader took, and a gpulease run that took the local run's file
# fails. GL_CUDA_BENCH_VRAM (2GiB) is the lease's size;
# GL_CUDA_BENCH_DAEMON_ARGS, more gpuleased options ("--net-threads 4":
# striped transfers).
# A benchmark: exits non-zero only when a run failed (its exit status, a
# timeout, no "check ok", the shim not loaded) or the daemon did not start.
set -uo pipefail
C=$(cd "${1:-build}" && pwd -P) || exit 2
shift || true
ROUNDS=${GL_CUDA_BENCH_ROUNDS:-2}
T=${GL_CUDA_BENCH_TIMEOUT:-300}
VRAM=${GL_CUDA_BENCH_VRAM:-2GiB}
BIN=$C/bench/gl_bench_cuda
CLI=$C/src/cli/gpulease
for f in "$BIN" "$CLI" "$C/src/daemon/gpuleased"; do
  [ -x "$f" ] || { echo "cuda bench: $f is missing (gl_bench_cuda is built only where cuda.h and the stub libcuda.so are found)"; exit 2; }
done
[ -e "$C/src/cuda/libcuda.so.1" ] || echo "cuda bench: note: no $C/src/cuda/libcuda.so.1 (the shim); exec must find one itself"
W=$(mktemp -d /tmp/gl-cudabench-XXXXXX)
DAEMON=
# shellcheck disable=SC2317 # cleanup runs from the EXIT trap
cleanup() {
  if [ -n "$DAEMON" ]; then
    kill "$DAEMON" 2>/dev/null
    wait "$DAEMON" 2>/dev/null
  fi
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086 # GL_CUDA_BENCH_DAEMON_ARGS: words, e.g. "--net-threads 4"
"$C/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$W" --ready-file "$W/ready" \
  ${GL_CUDA_BENCH_DAEMON_ARGS:-} \
  2> "$W/daemon.log" &
DAEMON=$!
for _ in $(seq 1 300); do
  [ -s "$W/ready" ] && break
  kill -0 "$DAEMON" 2>/dev/null || break
  sleep 0.1
done
PORT='' FP=''
read -r PORT FP < "$W/ready" 2>/dev/null
if [ -z "$PORT" ] || [ -z "$FP" ]; then
  echo "cuda bench: the daemon did not start; its log:"
  cat "$W/daemon.log"
  exit 1
fi
ADDR=127.0.0.1:$PORT
SHIM_PATH=$C/src/cuda:$C/src/lib:$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

FAILED=0
: > "$W/rows.tsv"
run() { # KIND (local | gpulease) ROUND [gl_bench_cuda options...]
  local kind=$1 round=$2 out=$W/$1.$2.out err=$W/$1.$2.err rc
  shift 2
  echo "== $kind, round $round"
  if [ "$kind" = local ]; then
    timeout -k 10 "$T" "$BIN" --label local "$@" > "$out" 2> "$err"
  else
    timeout -k 10 "$T" env LD_LIBRARY_PATH="$SHIM_PATH" GPULEASE_CUDA_LIBDIR="$C/src/cuda" \
      "$CLI" exec --addr "$ADDR" --pin-sha256 "$FP" --vram "$VRAM" -- \
      "$BIN" --label gpulease "$@" > "$out" 2> "$err"
  fi
  rc=$?
  cat "$out"
  if [ "$rc" != 0 ]; then
    case $rc in 124|137) echo "FAIL $kind round $round: timed out after $T s" ;;
                *) echo "FAIL $kind round $round: exit status $rc" ;; esac
    echo "-- its stderr (last 20 lines):"
    tail -20 "$err"
    FAILED=1
  elif ! grep -q "$(printf '\t')check ok\$" "$out"; then
    echo "FAIL $kind round $round: no 'check ok' line"
    tail -20 "$err"
    FAILED=1
  elif [ -s "$err" ]; then
    echo "-- its stderr (last 5 lines):"
    tail -5 "$err"
  fi
  # The figures: LABEL FIGURE VALUE UNIT with a number for VALUE.
  awk -F '\t' -v k="$kind" 'NF == 4 && $3 ~ /^-?[0-9]+(\.[0-9]+)?$/ { print k "\t" $2 "\t" $3 "\t" $4 }' \
    "$out" >> "$W/rows.tsv"
  sed -n 's/^[^\t]*\tlibcuda\t\([^\t]*\)\t.*/\1/p' "$out" | head -1 > "$W/$kind.$round.libcuda"
}

for r in $(seq 1 "$ROUNDS"); do
  run local "$r" "$@"
  run gpulease "$r" "$@"
done

# The shim must have been the gpulease runs' libcuda.so.1.
LOCAL_LIB=$(cat "$W"/local.*.libcuda 2>/dev/null | grep -v '^$' | head -1)
for f in "$W"/gpulease.*.libcuda; do
  [ -s "$f" ] || continue
  lib=$(cat "$f")
  if [ -n "$LOCAL_LIB" ] && [ "$lib" = "$LOCAL_LIB" ]; then
    echo "FAIL the gpulease run ($(basename "$f" .libcuda)) loaded the system's $lib, not the shim"
    FAILED=1
  fi
done
echo "libcuda.so.1: local $LOCAL_LIB, gpulease $(cat "$W"/gpulease.*.libcuda 2>/dev/null | grep -v '^$' | sort -u | tr '\n' ' ')"

echo "== medians over $ROUNDS rounds (gl_bench_cuda $*)"
LC_ALL=C awk -F '\t' '
  function med(key, n,   i, j, t, a) {
    for (i = 1; i <= n; i++) a[i] = val[key, i]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  {
    if (!(($2) in seen)) { seen[$2] = 1; order[++nf] = $2; unit[$2] = $4 }
    key = $2 SUBSEP $1
    val[key, ++cnt[key]] = $3 + 0
  }
  END {
    printf "%-20s %16s %16s  %-11s %14s\n", "figure", "local", "gpulease", "unit", "gpulease/local"
    for (i = 1; i <= nf; i++) {
      f = order[i]; kl = f SUBSEP "local"; kg = f SUBSEP "gpulease"
      l = cnt[kl] ? med(kl, cnt[kl]) : ""; g = cnt[kg] ? med(kg, cnt[kg]) : ""
      ratio = (l != "" && g != "" && l != 0) ? sprintf("%.3f", g / l) : "-"
      fmt = unit[f] == "bytes" ? "%.0f" : "%.3f"
      printf "%-20s %16s %16s  %-11s %14s\n", f, l == "" ? "-" : sprintf(fmt, l),
        g == "" ? "-" : sprintf(fmt, g), unit[f], ratio
    }
  }' "$W/rows.tsv"
grep -c '] ERROR ' "$W/daemon.log" | sed 's/^/daemon log ERROR lines: /'
echo "cuda bench: $([ "$FAILED" = 0 ] && echo ok || echo FAILED)"
exit "$FAILED"
