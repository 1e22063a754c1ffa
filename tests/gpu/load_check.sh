#!/usr/bin/env bash
# Issue 34's load table on a GPU machine, against a build folder (or the
# .carry folder of scripts/carry.sh):
#   tests/gpu/load_check.sh [BUILD_DIR] [gl_bench_load options...]
#   LD_LIBRARY_PATH=.carry/lib tests/gpu/load_check.sh .carry
# bench/gl_bench_load starts one gpuleased (the default warm pool; it adds
# --max-connections-per-address and --max-leases for the largest count) and
# prints a row for each class, shared then isolated, at 32, 100, 300 and
# 1,000 clients: cycles/s, cycle p50/p90, failures by status, the daemon's
# RSS, descriptors and children before, after and 10 s after, and its log's
# ERROR and WARN lines. Then every fence the daemon logged.
# The environment sets the run's size (the defaults take 4 to 5 minutes, more
# where the isolated rows stall: a request waits up to 60 s):
#   GL_LOAD_CLIENTS (32,100,300,1000), GL_LOAD_CLASSES (shared,isolated),
#   GL_LOAD_PHASE_S (10), GL_LOAD_WARMUP_S (2), GL_LOAD_SETTLE_S (10),
#   GL_LOAD_DAEMON_ARGS (more gpuleased flags, e.g. "--warm-workers 0").
# A benchmark: exits non-zero only when gl_bench_load's own checks fail
# (an output wrong, clients that could not connect, the daemon gone).
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
shift || true
W=$(mktemp -d /tmp/gl-loadcheck-XXXXXX)
trap 'rm -rf "$W"' EXIT
echo "== the lease path under load (bench/gl_bench_load)"
# shellcheck disable=SC2086 # GL_LOAD_DAEMON_ARGS is a list of flags
"$B/bench/gl_bench_load" --gpuleased "$B/src/daemon/gpuleased" \
  --classes "${GL_LOAD_CLASSES:-shared,isolated}" --clients "${GL_LOAD_CLIENTS:-32,100,300,1000}" \
  --phase-s "${GL_LOAD_PHASE_S:-10}" --warmup-s "${GL_LOAD_WARMUP_S:-2}" \
  --settle-s "${GL_LOAD_SETTLE_S:-10}" --shared-mib 16 --isolated-mib 64 --keep-dir "$@" \
  -- ${GL_LOAD_DAEMON_ARGS:-} | tee "$W/load.txt"
rc=${PIPESTATUS[0]}
DIR=$(sed -n 's/^daemon.s state folder and log kept: //p' "$W/load.txt" | tail -1)
if [ -n "$DIR" ] && [ -f "$DIR/daemon.log" ]; then
  echo "== the daemon's log: $(grep -c '] ERROR ' "$DIR/daemon.log") ERROR, $(grep -c '] WARN ' "$DIR/daemon.log") WARN lines; fences:"
  grep -i 'fenced' "$DIR/daemon.log" | head -5
  echo "(fence lines: $(grep -ci 'fenced' "$DIR/daemon.log"))"
  rm -rf "$DIR"
fi
echo "load check: gl_bench_load exited $rc"
exit "$rc"
