#!/usr/bin/env bash
# Installs the Debian packages Strata needs to build, test and benchmark, but
# only those that are missing. Safe to run any number of times. Run as root.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libzstd-dev libxxhash-dev liburing-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  librocksdb-dev   # only for the side-by-side benchmarks
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: every package is already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
