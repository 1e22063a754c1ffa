#!/usr/bin/env bash
# Checks the deployment files (deploy/):
#   - every Kubernetes manifest in deploy/kubernetes against the schemas of
#     Kubernetes $K8S_VERSION, strictly (unknown fields are errors), with
#     kubernetes-validate from PyPI, pinned (tests/deploy/requirements.txt)
#     and installed into a virtual environment BUILD_DIR/deploy-venv, made
#     on the first run and reused;
#   - the manifests' consistency (tests/deploy/check_manifests.py): the
#     Service headless with a UDP port named gpulease, the selectors
#     matching the pods, probes on /healthz, the ConfigMap's
#     gpuleased.conf agreeing with the pod's ports and mounts, the
#     Dockerfile's ENTRYPOINT reading the mounted file;
#   - that gpuleased.conf passes `gpuleased --check-config`, when
#     BUILD_DIR/src/daemon/gpuleased exists;
#   - the kustomization's output, when kubectl or kustomize is installed;
#   - the Slurm script: bash -n, and shellcheck when installed.
# Needs python3 with venv (Debian: python3-venv) and PyPI on the first run.
#
# usage: tests/deploy/test_manifests.sh BUILD_DIR
set -euo pipefail

K8S_VERSION=1.31.0

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
kdir="$root/deploy/kubernetes"
sbatch="$root/deploy/slurm/gpulease-pool.sbatch"
requirements="$here/requirements.txt"
python=${PYTHON:-python3}

fail() {
  echo "test_manifests: FAIL: $*" >&2
  exit 1
}

# The virtual environment, (re)made when it is missing or holds other
# versions than requirements.txt pins.
mkdir -p "$build_dir"
venv="$(cd "$build_dir" && pwd)/deploy-venv"
want=$(grep -E '^[A-Za-z0-9_.-]+==' "$requirements" | tr 'A-Z_' 'a-z-' | sort)
have=""
if [ -x "$venv/bin/python" ]; then
  have=$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null |
         grep -E '^[A-Za-z0-9_.-]+==' | tr 'A-Z_' 'a-z-' | sort || true)
fi
if [ "$have" != "$want" ]; then
  echo "test_manifests: installing $(grep -E '^kubernetes-validate==' "$requirements") into $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv" || fail "cannot make a virtual environment with $python -m venv (Debian: apt-get install python3-venv)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input \
    -r "$requirements" || fail "pip install -r $requirements"
fi
kv="$venv/bin/kubernetes-validate"
echo "test_manifests: kubernetes-validate $("$kv" --version), Kubernetes $K8S_VERSION (strict)"

# 1. The schemas. kustomization.yaml is kustomize's, not a Kubernetes
# object: check_manifests.py checks it instead.
manifests=()
for f in "$kdir"/*.yaml "$kdir"/*.yml; do
  [ -e "$f" ] || continue
  [ "$(basename "$f")" = kustomization.yaml ] && continue
  manifests+=("$f")
done
[ ${#manifests[@]} -gt 0 ] || fail "no manifests in $kdir"
"$kv" --strict --kubernetes-version "$K8S_VERSION" "${manifests[@]}" ||
  fail "a manifest in deploy/kubernetes does not validate against Kubernetes $K8S_VERSION"

# 2. The pieces agree.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" "$here/check_manifests.py" "$root" "$tmp/gpuleased.conf" ||
  fail "deploy/kubernetes is not consistent"

# 3. The daemon accepts the ConfigMap's configuration (it only reads it).
daemon="$build_dir/src/daemon/gpuleased"
if [ -x "$daemon" ]; then
  "$daemon" --config "$tmp/gpuleased.conf" --check-config >/dev/null ||
    fail "gpuleased --check-config refuses the ConfigMap's gpuleased.conf"
  echo "test_manifests: gpuleased --check-config accepts the ConfigMap's gpuleased.conf"
else
  echo "test_manifests: no $daemon: gpuleased --check-config skipped"
fi

# 4. What `kubectl apply -k` would send: the kustomization builds, and its
# output validates too.
if command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then
  kubectl kustomize "$kdir" > "$tmp/kustomized.yaml" || fail "kubectl kustomize $kdir"
elif command -v kustomize >/dev/null 2>&1; then
  kustomize build "$kdir" > "$tmp/kustomized.yaml" || fail "kustomize build $kdir"
fi
if [ -s "$tmp/kustomized.yaml" ]; then
  "$kv" --strict --quiet --kubernetes-version "$K8S_VERSION" "$tmp/kustomized.yaml" ||
    fail "the kustomization's output does not validate"
  echo "test_manifests: the kustomization's output validates"
else
  echo "test_manifests: no kubectl or kustomize: kustomization build skipped"
fi

# 5. The Slurm script.
bash -n "$sbatch" || fail "bash -n $sbatch"
if command -v shellcheck >/dev/null 2>&1; then
  shellcheck "$sbatch" "$0" || fail "shellcheck"
  echo "test_manifests: shellcheck passes"
else
  echo "test_manifests: no shellcheck: skipped"
fi

echo "test_manifests: OK"
