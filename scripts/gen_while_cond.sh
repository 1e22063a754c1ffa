#!/usr/bin/env bash
# Regenerates the checked-in cubins of the graph WHILE loops' condition
# kernel, src/backend/while_cond/sm_XX.cubin, from src/backend/while_cond.cu:
# for each GPU architecture below, nvcc -rdc=true -dc, then nvcc -dlink
# -cubin with libcudadevrt (cudaGraphSetConditional). The build runs the
# same two commands where it finds nvcc (src/backend/CMakeLists.txt, the
# same architectures) and uses these files where it does not; either way
# while_cond/embed.cmake writes them into the build's while_cond_cubins.c,
# a table {major, minor, bytes, len} that cuda_graph.c picks from by the
# device's compute capability. It also writes while_cond/source.sha256,
# the digest of the while_cond.cu they were made from. The ctest
# backend_while_cond_fresh fails when that digest is not the file's, or
# when a cubin's code differs from what the build's nvcc makes (of the same
# release): run this then.
# Needs the CUDA toolkit (NVCC, default /usr/local/cuda/bin/nvcc); an
# architecture this nvcc refuses is left as it is, with a note.
#
#   scripts/gen_while_cond.sh            (from anywhere in the repository)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/src/backend/while_cond.cu"
out="$root/src/backend/while_cond"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
# keep in step with GL_WHILE_COND_ARCHS in src/backend/CMakeLists.txt
archs=(75 80 86 89 90 100 120)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')

built=()
mkdir -p "$out"
for a in "${archs[@]}"; do
  if "$nvcc" -arch="sm_$a" -rdc=true -dc "$src" -o "$tmp/sm_$a.o" 2>"$tmp/sm_$a.log" &&
     "$nvcc" -arch="sm_$a" -dlink -cubin "$tmp/sm_$a.o" -lcudadevrt -o "$tmp/sm_$a.cubin" \
       2>>"$tmp/sm_$a.log"; then
    cp "$tmp/sm_$a.cubin" "$out/sm_$a.cubin"
    built+=("$a")
  else
    echo "gen_while_cond: sm_$a left as it is (nvcc $version refuses it):" >&2
    cat "$tmp/sm_$a.log" >&2
  fi
done
[ ${#built[@]} -gt 0 ] || { echo "gen_while_cond: no architecture built" >&2; exit 1; }
(cd "$root/src/backend" && sha256sum while_cond.cu) >"$out/source.sha256"
echo "gen_while_cond: wrote $out/ (${built[*]/#/sm_}, nvcc $version)"
