#!/usr/bin/env bash
# Installs the Debian packages gpulease builds and tests with, when any is
# missing (or, for ngtcp2, older than 1.0). Runs apt-get as root, or through
# sudo when available.
#
# dnsmasq-base is /usr/sbin/dnsmasq alone, which test_srv runs as a loopback
# DNS server; the dnsmasq package would add a system service that starts at
# install and takes port 53.
#
# ngtcp2 must be 1.x. Debian 13 (trixie) and later have it in the main
# suite; Debian 12 (bookworm) ships 0.12, so there the two ngtcp2 -dev
# packages come from Debian's bookworm-backports, which this script enables
# (a deb822 .sources file signed by the Debian archive keyring) when no
# APT source names it yet, and installs from, upgrading 0.12 if present.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
      libgnutls28-dev libev-dev libjson-c-dev libcmocka-dev libseccomp-dev
      libsodium-dev libzstd-dev liblz4-dev libinih-dev libmicrohttpd-dev libsystemd-dev libcurl4-gnutls-dev
      scdoc prometheus dpkg-dev file systemd
      python3-cffi python3-numpy python3-pytest python3-tqdm python3-venv python3-pip
      dnsmasq-base)
ngtcp2_pkgs=(libngtcp2-dev libngtcp2-crypto-gnutls-dev)
backports_list=/etc/apt/sources.list.d/bookworm-backports.sources
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# The installed version of package $1, or nothing.
installed_version() {
  dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null |
    sed -n 's/^install ok installed //p' || true
}

missing=()
for p in "${pkgs[@]}"; do
  [ -n "$(installed_version "$p")" ] || missing+=("$p")
done
ngtcp2_stale=0
for p in "${ngtcp2_pkgs[@]}"; do
  v=$(installed_version "$p")
  if [ -z "$v" ] || dpkg --compare-versions "$v" lt 1.0; then ngtcp2_stale=1; fi
done
[ ${#missing[@]} -eq 0 ] && [ $ngtcp2_stale -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# shellcheck source=/dev/null
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")

# ngtcp2 1.x on bookworm: from bookworm-backports (enabled here if needed).
ngtcp2_target=()
if [ $ngtcp2_stale -eq 1 ] && [ "$codename" = bookworm ]; then
  ngtcp2_target=(-t bookworm-backports)
  if ! grep -Eqs '^[^#]*bookworm-backports' /etc/apt/sources.list \
       /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; then
    echo "deps: enabling Debian bookworm-backports ($backports_list) for ngtcp2 1.x"
    if [ ! -s "$keyring" ]; then
      $SUDO apt-get update -qq
      $SUDO apt-get install -y -qq --no-install-recommends debian-archive-keyring
    fi
    printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' \
      'Suites: bookworm-backports' 'Components: main' "Signed-By: $keyring" |
      $SUDO tee "$backports_list" >/dev/null
  fi
fi

$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ $ngtcp2_stale -eq 1 ]; then
  echo "deps: installing ngtcp2 1.x: ${ngtcp2_pkgs[*]} ${ngtcp2_target[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${ngtcp2_target[@]}" "${ngtcp2_pkgs[@]}"
fi
