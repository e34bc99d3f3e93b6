#!/usr/bin/env bash
# Installs the Debian packages Strata needs to build, test and benchmark, but
# only those that are missing. Safe to run any number of times. Run as root.
#   scripts/install-deps.sh          # build, test and benchmark
#   scripts/install-deps.sh --fuzz   # also clang with libFuzzer (scripts/fuzz.sh)
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libzstd-dev libxxhash-dev liburing-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  librocksdb-dev   # only for the side-by-side benchmarks
  gnuplot-nox jq   # scripts/bench-report.sh: its plots, and reading the benchmarks' JSON
  etcd-server etcd-client  # cluster/: the tests start their own etcd (scripts/local-cluster.sh)
  # cluster/'s row store on RADOS: librados' C API to build against, and a
  # monitor and an OSD (with the ceph, rados and monmaptool tools they pull
  # in) for the one-node cluster its tests start (local-cluster.sh --with-ceph)
  librados-dev ceph-mon ceph-osd
)
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang)  # its libclang-rt holds libFuzzer
fi

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
