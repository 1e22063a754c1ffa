#!/bin/sh
# check_exports.sh LIB SRCDIR: LIB's exported functions are exactly the
# names of SRCDIR/implemented.def and SRCDIR/unsupported.def.
set -eu
lib=$1 src=$2
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
echo "ok: $n entry points, each listed once"
