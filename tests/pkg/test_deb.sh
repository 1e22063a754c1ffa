#!/usr/bin/env bash
# Installs the Debian packages `make deb` built (BUILD_DIR/*.deb) on this
# machine with dpkg, then uses them as a user would: the unit file is
# checked, an example is built against the installed header through
# pkg-config and through CMake's find_package, the installed daemon is
# started from the installed configuration on the emulated device, and the
# installed CLI and the example run against it. Removes the packages at the
# end (the configuration, a conffile, stays until purge). Needs root: CI.
#   tests/pkg/test_deb.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "test_deb: needs root (dpkg -i)" >&2; exit 1; }
work=$(mktemp -d /tmp/gl-deb.XXXXXX)
daemon=
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  dpkg --purge gpulease-tools gpulease-cuda libgpulease-dev libgpulease1 gpuleased >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "test_deb: FAIL: $*" >&2; [ -f "$work/daemon.log" ] && cat "$work/daemon.log" >&2; exit 1; }

debs=("$build"/gpuleased_*.deb "$build"/libgpulease1_*.deb "$build"/libgpulease-dev_*.deb
      "$build"/gpulease-tools_*.deb "$build"/gpulease-cuda_*.deb)
for d in "${debs[@]}"; do [ -f "$d" ] || fail "no package $d (make deb)"; done
echo "== dpkg -i ${debs[*]##*/}"
dpkg -i "${debs[@]}" || fail "dpkg -i"
for p in gpuleased libgpulease1 libgpulease-dev gpulease-tools gpulease-cuda; do
  dpkg-query -W -f='${Package} ${Version} ${Status}\n' "$p" | grep -q "install ok installed" ||
    fail "$p not installed"
done
dpkg-query -W -f='${Depends}\n' libgpulease-dev | grep -q "libgpulease1 (= " ||
  fail "libgpulease-dev does not depend on its libgpulease1"
dpkg-query -W -f='${Depends}\n' gpulease-cuda | grep -q "libgpulease1" ||
  fail "gpulease-cuda does not depend on libgpulease1"
dpkg-query -W -f='${Depends}\n' gpulease-tools | grep -q "gpulease-cuda" ||
  fail "gpulease-tools does not depend on gpulease-cuda (gpulease exec runs on it)"
grep -qx /etc/gpulease/gpuleased.conf /var/lib/dpkg/info/gpuleased.conffiles ||
  fail "/etc/gpulease/gpuleased.conf is not a conffile"

echo "== installed files"
for f in /usr/bin/gpuleased /usr/bin/gpulease /usr/include/gpulease/gpulease.h \
         /usr/lib/systemd/system/gpuleased.service /etc/gpulease/gpuleased.conf \
         /usr/share/man/man8/gpuleased.8.gz /usr/share/man/man1/gpulease.1.gz \
         /usr/share/man/man3/libgpulease.3.gz; do
  [ -e "$f" ] || fail "missing $f"
done
echo "== the runtime package carries the soname libgpulease.so.1"
lib=$(dpkg -L libgpulease1 | grep '/libgpulease\.so\.1$') || fail "libgpulease1 holds no libgpulease.so.1"
objdump -p "$lib" | grep -Eq '^ +SONAME +libgpulease\.so\.1$' || fail "$lib: soname is not libgpulease.so.1"
grep -Eqx 'libgpulease 1 libgpulease1 \((=|>=) [0-9.]+\)' /var/lib/dpkg/info/libgpulease1.shlibs ||
  fail "libgpulease1's shlibs file does not map soname 1 to libgpulease1"
if command -v systemd-analyze >/dev/null; then
  echo "== systemd-analyze verify gpuleased.service"
  systemd-analyze verify /usr/lib/systemd/system/gpuleased.service || fail "unit file"
fi
/usr/bin/gpuleased --check-config | grep -qx "/etc/gpulease/gpuleased.conf: OK" ||
  fail "the default configuration does not check"

echo "== an example built against the installed library"
cc -std=c17 -Wall -Werror -o "$work/iota-pc" "$src/examples/iota.c" \
  $(pkg-config --cflags --libs gpulease) || fail "pkg-config build"
mkdir -p "$work/cm"
cat > "$work/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(uses_gpulease C)
find_package(gpulease 0.2 REQUIRED)
add_executable(iota $src/examples/iota.c)
target_link_libraries(iota PRIVATE gpulease::gpulease)
CM
cmake -S "$work/cm" -B "$work/cm/build" >/dev/null || fail "find_package(gpulease)"
cmake --build "$work/cm/build" >/dev/null || fail "CMake build against gpulease::gpulease"
for e in "$work/iota-pc" "$work/cm/build/iota"; do
  objdump -p "$e" | grep -Eq '^ +NEEDED +libgpulease\.so\.1$' || fail "$e does not need libgpulease.so.1"
done

echo "== the installed daemon, installed configuration, emulated device"
ready=$work/ready
# The installed configuration, with a free port each (CI runs tests beside it).
/usr/bin/gpuleased --device emu --emu-vram 64M --state-dir "$work/state" --listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 --warm-workers 0 --ready-file "$ready" 2> "$work/daemon.log" &
daemon=$!
for _ in $(seq 1 300); do [ -s "$ready" ] && break; sleep 0.1; done
[ -s "$ready" ] || fail "the installed gpuleased did not start"
grep -q "config" "$work/daemon.log" || true
read -r port fp < "$ready"
cli=(/usr/bin/gpulease --addr "127.0.0.1:$port" --pin-sha256 "$fp")
"${cli[@]}" inventory | tee "$work/inv" || fail "gpulease inventory"
grep -q "emulated" "$work/inv" || fail "inventory shows no emulated device"
"${cli[@]}" submit --binary "$src/examples/kernels/ptx/iota.ptx" --kernel iota --grid 1 \
  --block 256 --output-size 1024 --format f32 > "$work/out" || fail "gpulease submit"
head -c 200 "$work/out"; echo
grep -q "256" "$work/out" || fail "iota's output lacks 256"
"$work/iota-pc" "127.0.0.1:$port" "$fp" "$src/examples/kernels/ptx/iota.ptx" || fail "example (pkg-config)"
"$work/cm/build/iota" "127.0.0.1:$port" "$fp" "$src/examples/kernels/ptx/iota.ptx" || fail "example (CMake)"
man -w gpuleased >/dev/null 2>&1 || [ ! -x /usr/bin/man ] || fail "man gpuleased"
echo "== gpulease exec and the CUDA driver shim it ships"
shim=$(dpkg -L gpulease-cuda | grep '/gpulease/libcuda\.so\.1$') || fail "gpulease-cuda holds no gpulease/libcuda.so.1"
case $shim in /usr/lib/*/gpulease/libcuda.so.1) ;; *) fail "the shim is at $shim" ;; esac
[ -e "${shim%/libcuda.so.1}/libnvidia-ml.so.1" ] || fail "gpulease-cuda holds no libnvidia-ml.so.1 beside the shim"
objdump -p "$shim" | grep -Eq '^ +NEEDED +libgpulease\.so\.1$' || fail "the shim does not need libgpulease.so.1"
"${cli[@]}" exec --vram 1MiB --ttl 30 -- sh -c 'test "$(realpath "$GPULEASE_CUDA_SHIM")" = "$1" &&
    test "$(realpath "${LD_LIBRARY_PATH%%:*}")/libcuda.so.1" = "$1"' sh "$shim" ||
  fail "gpulease exec does not hand the installed shim to its command"
kill "$daemon"; wait "$daemon" || fail "the daemon's exit status"
daemon=

echo "== dpkg -r keeps the configuration, --purge removes it"
dpkg -r gpulease-tools gpulease-cuda libgpulease-dev libgpulease1 gpuleased >/dev/null || fail "dpkg -r"
[ ! -e /usr/bin/gpuleased ] || fail "/usr/bin/gpuleased left after dpkg -r"
[ -e /etc/gpulease/gpuleased.conf ] || fail "dpkg -r removed the conffile"
dpkg --purge gpuleased >/dev/null || fail "dpkg --purge"
[ ! -e /etc/gpulease/gpuleased.conf ] || fail "purge left the configuration"
echo "test_deb: OK"
