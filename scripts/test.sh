#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with CTest.
#   scripts/test.sh                       # Release build in ./build
#   scripts/test.sh --sanitize address    # ASan+UBSan build in ./build-asan
#   scripts/test.sh --sanitize thread     # TSan build in ./build-tsan
# Extra arguments after -- go to ctest (e.g. -- -R wal).
set -euo pipefail
cd "$(dirname "$0")/.."

build_args=()
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) build_args+=(--sanitize "$2"); shift 2 ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) build_args+=("$1"); shift ;;
  esac
done

scripts/install-deps.sh
# Tests and benchmarks on explicitly: scripts/quickstart.sh turns them off in
# the same build directory, and CMake would keep that setting. A sanitizer
# build runs no benchmark, so it builds none.
bench=ON
case " ${build_args[*]-} " in *" --sanitize "*) bench=OFF ;; esac
build_dir=$(scripts/build.sh -DSTRATA_BUILD_TESTS=ON -DSTRATA_BUILD_BENCH=$bench \
  ${build_args[@]+"${build_args[@]}"} )
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1 second_deadlock_stack=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
cd "$build_dir"
ctest --output-on-failure --no-tests=error --timeout 900 -j "$(nproc)" ${ctest_args[@]+"${ctest_args[@]}"}
