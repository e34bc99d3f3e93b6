#!/usr/bin/env bash
# Configures and builds Strata in a build directory.
#   scripts/build.sh [--sanitize address|thread] [--build-dir DIR] [extra cmake args...]
# Default directory: build (build-asan / build-tsan for sanitizer builds).
# Build output goes to standard error; standard output is the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
build_dir=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) extra+=("$1"); shift ;;
  esac
done
case "$sanitize" in
  "") build_dir="${build_dir:-build}"; type=Release ;;
  address) build_dir="${build_dir:-build-asan}"; type=RelWithDebInfo ;;
  thread) build_dir="${build_dir:-build-tsan}"; type=RelWithDebInfo ;;
  *) echo "--sanitize takes address or thread" >&2; exit 2 ;;
esac

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DSTRATA_SANITIZE="$sanitize" \
  ${extra[@]+"${extra[@]}"} >&2
cmake --build "$build_dir" -j "$(nproc)" >&2
# The only line on standard output: where the build is.
echo "$build_dir"
