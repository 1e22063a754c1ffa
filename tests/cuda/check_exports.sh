#!/bin/sh
# check_exports.sh LIB SRCDIR [DOC]: LIB's exported functions are exactly
# the names of SRCDIR/implemented.def and SRCDIR/unsupported.def; with
# DOC (docs/cuda-driver.md), every implemented one is in its support table,
# by its name without the _ptds/_ptsz ending, as `name` or, for a versioned
# one, as its unversioned `name`.
set -eu
lib=$1 src=$2 doc=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort > "$tmp/exported"
sed -n 's/^GL_CU_\(IMPL\|STUB\)(\(.*\))$/\2/p' "$src/implemented.def" "$src/unsupported.def" |
  sort > "$tmp/listed"
if ! cmp -s "$tmp/exported" "$tmp/listed"; then
  echo "exported (<) and listed (>) differ:"
  diff "$tmp/exported" "$tmp/listed" || true
  exit 1
fi
n=$(wc -l < "$tmp/exported")
[ "$n" -gt 600 ] || { echo "only $n exports"; exit 1; }
if [ -n "$doc" ]; then
  missing=0
  for name in $(sed -n 's/^GL_CU_IMPL(\(.*\))$/\1/p' "$src/implemented.def"); do
    base=${name%_ptds}
    base=${base%_ptsz}
    unv=$(printf '%s' "$base" | sed -E 's/_v[0-9]$//')
    if ! grep -qF -e "\`$base\`" -e "\`$unv\`" "$doc"; then
      echo "implemented but not in $doc's support table: $name"
      missing=1
    fi
  done
  [ "$missing" = 0 ] || exit 1
  echo "ok: every implemented entry point is in $doc"
fi
echo "ok: $n entry points, each listed once"
