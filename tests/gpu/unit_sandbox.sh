#!/usr/bin/env bash
# gpuleased inside the confinement its systemd unit
# (packaging/systemd/gpuleased.service) asks for, as far as a machine
# without systemd as init can build it, then kernels on the device:
#   tests/gpu/unit_sandbox.sh [BUILD_DIR] [--device cuda|emu]
# - CapabilityBoundingSet= and NoNewPrivileges= (setpriv, the caps read
#   from the unit file itself);
# - ProtectSystem=strict, ProtectHome=, PrivateTmp= (a mount namespace: the
#   root read-only, the state directory writable, /home and /root empty,
#   /tmp private);
# then iota through the CLI, vector_add and a session through the library
# examples, and a worker that is the unprivileged user. Not built here:
# DevicePolicy=/DeviceAllow= (a device cgroup) and the unit's other
# Protect*= settings. Needs root.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
B=$(cd "${1:-build}" && pwd)
device=${3:-cuda}
[ "${2:-}" = --device ] || device=cuda
unit=$src/packaging/systemd/gpuleased.service
K=$B/kernels

if [ "${GL_UNIT_INSIDE:-}" != 1 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "unit_sandbox: needs root" >&2; exit 1; }
  state=$(mktemp -d /var/tmp/gl-unit-state.XXXXXX)
  chmod 0750 "$state"
  # The unit's bounding set, as setpriv spells it.
  caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")
  bounding=-all
  for c in $caps; do bounding+=",+$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"; done
  echo "== the unit's confinement: bounding set $bounding, no_new_privs, read-only root"
  GL_UNIT_INSIDE=1 GL_UNIT_STATE=$state GL_UNIT_BOUNDING=$bounding \
    unshare --mount --propagation private "$0" "$B" --device "$device"
  rc=$?
  rm -rf "$state"
  exit $rc
fi

# Inside the new mount namespace (root, every capability still).
state=$GL_UNIT_STATE
mount --bind "$state" "$state" || exit 1             # StateDirectory=: writable
mount -t tmpfs -o mode=1777 tmpfs /tmp || exit 1      # PrivateTmp=
for h in /home /root; do                              # ProtectHome=yes
  [ -d "$h" ] && mount -t tmpfs -o ro,mode=0755 tmpfs "$h"
done
mount -o remount,bind,ro / || exit 1                  # ProtectSystem=strict
PASS=0 FAIL=0
result() { if [ "$2" = 0 ]; then PASS=$((PASS+1)); echo "PASS $1"; else FAIL=$((FAIL+1)); echo "FAIL $1"; fi; }
touch /usr/gl-unit-probe 2>/dev/null; [ $? != 0 ]
result "the root is read-only (a write to /usr fails)" $?

args=(--listen 127.0.0.1:0 --state-dir "$state" --ready-file "$state/ready" --warm-workers 1
      --config none --device "$device")
[ "$device" = emu ] && args+=(--emu-vram 256M)
setpriv --no-new-privs --bounding-set "$GL_UNIT_BOUNDING" --inh-caps=-all \
  "$B/src/daemon/gpuleased" "${args[@]}" 2> "$state/daemon.log" &
daemon=$!
for _ in $(seq 1 300); do [ -s "$state/ready" ] && break; sleep 0.1; done
if ! read -r port fp < "$state/ready"; then
  echo "gpuleased did not start:"; cat "$state/daemon.log"; exit 1
fi
echo "daemon: $(grep -o 'NoNewPrivs:.*' /proc/$daemon/status), $(grep -o 'CapBnd:.*' /proc/$daemon/status)"
grep -q "NoNewPrivs:.*1" /proc/$daemon/status
result "the daemon runs with no_new_privs" $?
cli=("$B/src/cli/gpulease" --addr "127.0.0.1:$port" --pin-sha256 "$fp")
"${cli[@]}" inventory | head -4
"${cli[@]}" submit --binary "$K/iota.ptx" --kernel iota --block 256 --output-size 1024 \
  --format f32 > "$state/iota.txt"
rc=$?
head -2 "$state/iota.txt"
[ $rc = 0 ] && grep -q " 256$" "$state/iota.txt"
result "iota through the CLI (out[255] == 256)" $?
"$B/examples/example_vector_add" "127.0.0.1:$port" "$fp" "$K/vector_add.ptx" 1000000
result "vector_add through the library, 1,000,000 elements checked" $?
if [ -x "$B/examples/example_session_pipeline" ]; then
  "$B/examples/example_session_pipeline" "127.0.0.1:$port" "$fp" "$K/vector_add.ptx" "$K/scale.ptx" \
    > "$state/pipe.txt" 2>&1
  rc=$?
  tail -2 "$state/pipe.txt"
  result "a session: buffers, module, launches, reads (example_session_pipeline)" $rc
fi
worker=$(pgrep -P "$daemon" | head -1)
if [ -n "$worker" ]; then
  echo "worker $worker: $(grep -E '^Uid:' /proc/$worker/status | tr -s '\t ' ' ')"
  grep -qE '^Uid:\s+65534' /proc/"$worker"/status
  result "its worker runs as nobody" $?
fi
grep -E "WARN|ERROR" "$state/daemon.log" | head -5
kill "$daemon"; wait "$daemon"
result "the daemon stops cleanly (exit 0)" $?
echo "unit sandbox: $PASS passed, $FAIL failed"
[ $FAIL = 0 ]
