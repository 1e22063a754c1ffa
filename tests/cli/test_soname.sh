#!/usr/bin/env bash
# libgpulease's soname follows its ABI (DEVELOPERS.md, "Releases and the
# ABI"): the built library's soname is the last row of that history, and
# every place that names it agrees: CMake's GL_SOVERSION (passed in), the
# Debian runtime package's name (cmake/package.cmake), the Python loader
# (python/src/gpulease/_lib.py), README's packages table.
#   tests/cli/test_soname.sh BUILD_DIR SOURCE_DIR GL_SOVERSION
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR SOURCE_DIR GL_SOVERSION}
src=${2:?SOURCE_DIR}
n=${3:?GL_SOVERSION}
fail() { echo "test_soname: FAIL: $*" >&2; exit 1; }

lib=$build/src/lib/libgpulease.so
[ -e "$lib" ] || fail "no $lib"
got=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
echo "== $lib: SONAME $got"
[ "$got" = "libgpulease.so.$n" ] || fail "soname $got, but GL_SOVERSION is $n"

# The history's last row names the current soname.
last=$(grep -E '^ *\| `libgpulease\.so\.[0-9]+` \|' "$src/DEVELOPERS.md" | tail -n 1 |
       sed -E 's/^ *\| `(libgpulease\.so\.[0-9]+)`.*/\1/')
[ "$last" = "$got" ] || fail "DEVELOPERS.md's soname history ends with '$last', the library is $got"

grep -q 'set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libgpulease${GL_SOVERSION})' "$src/cmake/package.cmake" ||
  fail "cmake/package.cmake: the runtime package is not named libgpulease\${GL_SOVERSION}"
grep -qx "SONAME = \"$got\"" "$src/python/src/gpulease/_lib.py" ||
  fail "python/src/gpulease/_lib.py: SONAME is not \"$got\""
grep -q "^| \`libgpulease$n\` | \`$got\`" "$src/README.md" ||
  fail "README.md's packages table lacks libgpulease$n with $got"

# No other soname named where the current one is meant.
stale=$(grep -n 'libgpulease\.so\.[0-9]' "$src/python/src/gpulease/"*.py "$src/scripts/"*.sh \
          "$src/tests/pkg/test_deb.sh" | grep -v "libgpulease\.so\.$n\b" || true)
[ -z "$stale" ] || fail "another soname named: $stale"
echo "test_soname: OK ($got)"
